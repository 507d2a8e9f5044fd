//! Members a whole-struct copy gives that are overwritten before anything
//! reads them: a deep clone's `*copy = *o; copy->id = ..; copy->net =
//! net_clone(o->net);` leaves the copy's `net` pointing only at the new
//! network, not also at the original's, which the pointer store would
//! otherwise merge into the clone (and into whatever thread the clone is
//! handed to).
//!
//! [`overwritten_members`] is a syntactic question about one statement
//! list; the pointer store (`store.rs`) asks it for a copy into `*x` and
//! drops the copied members it names.
//!
//! Invariants: a member counts as overwritten only when an assignment
//! `x->m = ..` in the *same* list follows the copy (not one in a branch or
//! loop), and every statement between the two is one that cannot read
//! `x->m`: accesses, declarations, assignments and calls that do not
//! mention `x` except as the object of a member written
//! (`x->id = ..`), and branches and loops made only of such statements;
//! the first other statement (a `return`, a label, a call given `x` or
//! calling through one of its members, a read of `x`'s members into a
//! pointer) ends the search. Before the copy, `x` (and the locals it was
//! copied from, `copy = (T *) tmp`) must not have been stored anywhere or
//! passed to a call, and no label may precede it: the copy must still be
//! the function's own, unpublished object. The store asks only for a copy
//! in the function's top-level statement list (so that `before` is all
//! that ran before it, on every path), and checks, besides, that `x` holds
//! only objects allocated by this function.

use super::{arrow_member, uncast};
use crate::visit::{mentions, visit_stmts};
use racelens_syntax::{Callee, Expr, Name, Stmt};

/// The members of `*x` that `rest` (the statements after a copy into
/// `*x`, in the same list) overwrites before anything may read them, when
/// `x` is a plain local and `before` (the statements before the copy in
/// that list) has not let the object it holds escape. Empty otherwise.
pub(super) fn overwritten_members(
    before: &[Stmt],
    rest: &[Stmt],
    x: &Name,
    plain_local: &dyn Fn(&Name) -> bool,
) -> Vec<Name> {
    if !plain_local(x) || published(before, x, plain_local) {
        return Vec::new();
    }
    let mut out: Vec<Name> = Vec::new();
    for s in rest {
        if let Some(m) = member_written(s, x) {
            if let Stmt::Assign { rhs, .. } = s {
                if !mentions(rhs, x) && !out.contains(m) {
                    out.push(m.clone());
                }
                continue;
            }
        }
        if !harmless(s, x) {
            break;
        }
    }
    out
}

/// `x->m = ..`: the member `m` of `*x` that the assignment `s` writes.
fn member_written<'a>(s: &'a Stmt, x: &Name) -> Option<&'a Name> {
    match s {
        Stmt::Assign { lhs, .. } => arrow_member(lhs, x),
        _ => None,
    }
}

/// Can `s` not read a member of `*x` (nor hand `x` to code that could)?
fn harmless(s: &Stmt, x: &Name) -> bool {
    match s {
        Stmt::Access(_) | Stmt::Decl(_) => true,
        Stmt::Assign { lhs, rhs } => {
            !mentions(rhs, x) && (!mentions(lhs, x) || member_written(s, x).is_some())
        }
        Stmt::Call(c) => {
            let callee = matches!(&c.callee, Callee::Indirect(e) if mentions(e, x));
            !callee && !c.args.iter().any(|a| mentions(a, x))
        }
        Stmt::If {
            cond, then, els, ..
        } => all_harmless(cond, x) && all_harmless(then, x) && all_harmless(els, x),
        Stmt::Loop { cond, body, .. } => all_harmless(cond, x) && all_harmless(body, x),
        Stmt::Switch { cond, arms, .. } => {
            all_harmless(cond, x) && arms.iter().all(|a| all_harmless(a, x))
        }
        Stmt::Return { .. } | Stmt::Break | Stmt::Continue | Stmt::Goto(_) | Stmt::Label(_) => {
            false
        }
    }
}

fn all_harmless(stmts: &[Stmt], x: &Name) -> bool {
    stmts.iter().all(|s| harmless(s, x))
}

/// Has `before` stored `x`, or a local `x` was copied from, anywhere but
/// another plain local (`plain_local`: one of the frame, not static, whose
/// address is not taken), or passed one to a call? A label there counts as
/// publication too: a jump back to it may run the copy again after code
/// further down published the object.
fn published(before: &[Stmt], x: &Name, plain_local: &dyn Fn(&Name) -> bool) -> bool {
    let mut names: Vec<Name> = vec![x.clone()];
    for s in before {
        if let Stmt::Assign { lhs, rhs } = s {
            if let (Expr::Var(l), Expr::Var(r)) = (uncast(lhs), uncast(rhs)) {
                if l == x && !names.contains(r) {
                    names.push(r.clone());
                }
            }
        }
    }
    let mut hit = false;
    visit_stmts(before, &mut |s| match s {
        Stmt::Assign { lhs, rhs } => {
            let to_local = matches!(uncast(lhs), Expr::Var(v) if plain_local(v));
            hit |= !to_local && names.iter().any(|n| mentions(rhs, n));
        }
        Stmt::Call(c) => hit |= c.args.iter().any(|a| names.iter().any(|n| mentions(a, n))),
        Stmt::Return { value: Some(v), .. } => hit |= names.iter().any(|n| mentions(v, n)),
        Stmt::Label(_) => hit = true,
        _ => {}
    });
    hit
}
