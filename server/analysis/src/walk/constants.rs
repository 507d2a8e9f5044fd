//! Globals that stay zero: a scalar global defined with no initializer (or
//! a literal zero) that no function of the program ever writes, and whose
//! address is never taken, holds zero for the whole run. A branch taken
//! only when it is nonzero (`if (g_use_cache) process_client_cache(..)`,
//! a feature flag nobody sets) never runs, and the walk skips it.
//!
//! Conditions, all decided from the program's text:
//! - the name is a global in the scope of the test (no local hides it),
//!   scalar (not an array, not a member chain), neither `volatile` (another
//!   agent may change it) nor `_Atomic`;
//! - some unit defines it, every definition has no initializer or a literal
//!   zero one (`0`, `NULL`, `(T) 0`, `{0}`);
//! - no statement of any function writes it, and no expression takes its
//!   address (`&g` handed to `scanf` or stored), nor does any global's
//!   initializer name it;
//! - the program has a `main`: a library's clients may write its globals.
//!
//! Invariant: the answer reads every function's text. The verdicts are
//! kept in `WalkData::constants`; an edit that could change one (a new write
//! of a name judged to stay zero, or a removed write of one judged written)
//! walks again from scratch ([`verdict_changed`], `incremental.rs`).

use super::counters::mentions_addr;
use super::frames::Frame;
use super::Walker;
use crate::db::FunctionSummary;
use racelens_syntax::{AccessKind, Expr, Name, Stmt};

impl<'a> Walker<'a> {
    /// Does the global `var`, as `fr` names it, hold zero for the whole run
    /// (see the module doc)?
    pub(super) fn constant_zero(&mut self, fr: &Frame, var: &Name) -> bool {
        if var.contains('.') || fr.locals.contains_key(var) {
            return false;
        }
        let Some(t) = self.prog.global(var) else {
            return false;
        };
        if t.array || t.atomic || t.is_volatile() {
            return false;
        }
        if !self.prog.defined_globals.contains(var)
            || self.prog.nonzero_init.contains(var)
            || self.prog.functions_named("main").is_none()
        {
            return false;
        }
        if let Some(&known) = self.d.constants.borrow().get(var) {
            return known;
        }
        let named_by_init = self
            .prog
            .global_inits
            .values()
            .any(|refs| refs.contains(var));
        let unwritten = !named_by_init
            && self
                .prog
                .functions
                .values()
                .flatten()
                .all(|&f| !writes_or_takes(&self.summary(f), var));
        self.d.constants.borrow_mut().insert(var.clone(), unwritten);
        unwritten
    }
}

/// Would an edit of one function (summary `old` to `new`) change a verdict
/// of `verdicts` (name -> stays zero)? A name judged to stay zero changes
/// when the new text writes it; one judged written may change when the old
/// text wrote it and the new one does not.
pub(super) fn verdict_changed(
    verdicts: &rustc_hash::FxHashMap<Name, bool>,
    old: &FunctionSummary,
    new: &FunctionSummary,
) -> bool {
    verdicts.iter().any(|(v, &zero)| match zero {
        true => writes_or_takes(new, v),
        false => writes_or_takes(old, v) && !writes_or_takes(new, v),
    })
}

/// Does a function write `v` or take its address?
fn writes_or_takes(s: &FunctionSummary, v: &Name) -> bool {
    let mut hit = false;
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        hit = hit
            || match st {
                Stmt::Access(a) => {
                    (a.kind == AccessKind::Write && matches!(&a.place, Expr::Var(x) if x == v))
                        || mentions_addr(&a.place, v)
                }
                Stmt::Assign { lhs, rhs } => {
                    matches!(lhs, Expr::Var(x) if x == v)
                        || mentions_addr(lhs, v)
                        || mentions_addr(rhs, v)
                }
                Stmt::Call(c) => c.args.iter().any(|a| mentions_addr(a, v)),
                Stmt::Return { value: Some(e), .. } => mentions_addr(e, v),
                _ => false,
            };
    });
    hit
}
