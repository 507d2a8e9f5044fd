//! Atomic flags that publish: a thread writes data, then sets a global
//! flag with an atomic store of a nonzero constant (release or sequentially
//! consistent: `atomic_store(&ready, 1)`, `atomic_store_explicit(&ready, 1,
//! memory_order_release)`, `__atomic_store_n(&ready, 1, __ATOMIC_RELEASE)`);
//! another spins until an atomic load of the flag (acquire or sequentially
//! consistent, or a plain read of an `_Atomic` flag) reads nonzero
//! (`while (!atomic_load(&ready)) ;`). The load reads a value some store of
//! the flag wrote, and every such store follows the setter's first one, so
//! what the setter did before its first store happens before what the
//! spinner does after the loop (C11 5.1.2.4: a release store synchronizes
//! with an acquire load that reads its value).
//!
//! [`Walker::flag_post`] counts a store as a post (`+flag:F`) and
//! [`Walker::flag_wait`] a loop left through its test, or an `if` branch
//! taken on the flag set (`if (atomic_load(&ready)) ..`), as a wait
//! (`-flag:F@0`), the phases of a signalling semaphore; the race check
//! (`races.rs`, `signal_ordered`) orders, for a flag, only what the one
//! setting thread did before its first post against what follows a first
//! wait (a flag, unlike a count, lets any number of waits through one post).
//! [`is_flag`] decides from the program's text, for a global `F`: every
//! call that names `&F` is an atomic load, or an atomic store of a constant
//! (a store of zero clears it and is no post; a nonzero one is not relaxed);
//! every assignment to `F` stores the constant zero; `&F` is used nowhere
//! else; `F` starts zero. A relaxed load orders nothing.
//!
//! Invariant: the decision reads the text of every function that names `F`,
//! and `F` is kept in `WalkData::text_names`, so an edit of such a function
//! walks again from scratch (`incremental.rs`).

use super::frames::Frame;
use super::semaphores::sem_of;
use super::state::State;
use super::{uncast, Walker};
use crate::db::FunctionSummary;
use racelens_syntax::{Call, Callee, Expr, Name, Stmt, Test};

/// Atomic loads: (name, index of the memory order argument).
const LOADS: &[(&str, Option<usize>)] = &[
    ("atomic_load", None),
    ("atomic_load_explicit", Some(1)),
    ("__atomic_load_n", Some(1)),
];

/// Atomic stores of a value: (name, index of the memory order argument).
const STORES: &[(&str, Option<usize>)] = &[
    ("atomic_store", None),
    ("atomic_store_explicit", Some(2)),
    ("__atomic_store_n", Some(2)),
];

/// The phase key of flag `f`'s posts and waits (see `races.rs`).
pub(crate) const FLAG_PREFIX: &str = "flag:";

/// Does memory order argument `order` (`None`: the call has none, and is
/// sequentially consistent) order anything? A relaxed one does not.
fn orders(c: &Call, order: Option<usize>) -> bool {
    let Some(i) = order else { return true };
    match c.args.get(i).map(uncast) {
        Some(Expr::Int(v)) => *v != 0,
        Some(Expr::Var(n)) => !n.to_ascii_lowercase().contains("relaxed"),
        _ => false,
    }
}

fn named<'t>(c: &Call, table: &'t [(&str, Option<usize>)]) -> Option<&'t (&'t str, Option<usize>)> {
    let Callee::Direct(n) = &c.callee else {
        return None;
    };
    table.iter().find(|(x, _)| *x == &**n)
}

/// Is `e` the address of `f`, anywhere inside?
fn addr_of(e: &Expr, f: &Name) -> bool {
    match e {
        Expr::AddrOf(x) => matches!(&**x, Expr::Var(v) if v == f) || addr_of(x, f),
        Expr::Cast { value, .. } => addr_of(value, f),
        Expr::Field { base, .. } | Expr::Deref(base) | Expr::Offset(base) => addr_of(base, f),
        Expr::Index { base, .. } => addr_of(base, f),
        Expr::Choice(xs) => xs.iter().any(|x| addr_of(x, f)),
        Expr::Init(xs) => xs.iter().any(|(_, x)| addr_of(x, f)),
        _ => false,
    }
}

/// Is global `f` an atomic flag as the module doc says, judging by the
/// bodies of all functions of the program? Also no: one nothing sets.
pub(super) fn is_flag<'s>(f: &Name, functions: impl Iterator<Item = &'s FunctionSummary>) -> bool {
    let mut posts = 0;
    for s in functions {
        let mut ok = true;
        crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
            Stmt::Call(c) => {
                let store = named(c, STORES);
                let of_f = sem_of(c).as_ref() == Some(f);
                let load_or_store = named(c, LOADS).is_some() || store.is_some();
                for (i, a) in c.args.iter().enumerate() {
                    if addr_of(a, f) && !(i == 0 && load_or_store && of_f) {
                        ok = false;
                    }
                }
                if let Some(&(_, order)) = store.filter(|_| of_f) {
                    // A relaxed store of nonzero could be read without
                    // synchronizing with it.
                    match c.args.get(1).map(uncast) {
                        Some(Expr::Int(0)) => {}
                        Some(Expr::Int(_)) if orders(c, order) => posts += 1,
                        _ => ok = false,
                    }
                }
            }
            Stmt::Assign { lhs, rhs } => {
                if addr_of(rhs, f) || addr_of(lhs, f) {
                    ok = false;
                }
                if matches!(lhs, Expr::Var(v) if v == f) && !matches!(uncast(rhs), Expr::Int(0)) {
                    ok = false;
                }
            }
            Stmt::Return { value: Some(v), .. } if addr_of(v, f) => ok = false,
            _ => {}
        });
        if !ok {
            return false;
        }
    }
    posts > 0
}

impl Walker<'_> {
    /// Is global `f` an atomic flag ([`Walker::text_verdict`])?
    fn flag_verdict(&mut self, f: &Name) -> bool {
        // A flag that starts set is read set before anyone stores it.
        if self.prog.global(f).is_none() || self.prog.nonzero_init.contains(f) {
            return false;
        }
        self.text_verdict(
            f,
            |d| &d.flags,
            |_, sums| is_flag(f, sums.iter().map(|x| &**x)),
        )
    }

    /// An atomic store call `c`: a post of the flag it sets, when it stores
    /// a nonzero constant in an ordering way. A post before this thread's
    /// first wait on some path is noted (`~`), as for a semaphore.
    pub(super) fn flag_post(&mut self, fr: &Frame, c: &Call, st: &mut State) {
        let Some(&(_, order)) = named(c, STORES) else {
            return;
        };
        let (Some(f), Some(Expr::Int(v))) = (sem_of(c), c.args.get(1).map(uncast)) else {
            return;
        };
        if fr.locals.contains_key(&f) {
            return;
        }
        if *v == 0 || !orders(c, order) || !self.flag_verdict(&f) {
            return;
        }
        let waits = format!("-{FLAG_PREFIX}{f}@0");
        if !st.phases.iter().any(|p| *p.0 == *waits && p.1 > 0) {
            let poison: Name = format!("~{FLAG_PREFIX}{f}").into();
            if !st.phases.iter().any(|p| p.0 == poison) {
                self.pass_phase(st, poison, false);
            }
        }
        self.pass_phase(st, format!("+{FLAG_PREFIX}{f}").into(), true);
    }

    /// The flag `test` (evaluated by `cond`) reads with an ordering load:
    /// a call of an acquire (or sequentially consistent) atomic load, or a
    /// plain read of an `_Atomic` global (a sequentially consistent load).
    fn flag_read(&mut self, fr: &Frame, cond: &[Stmt], test: &Test) -> Option<Name> {
        let f = match test {
            Test::CallZero { id, .. } => {
                let mut found = None;
                crate::visit::visit_calls(cond, &mut |c| {
                    if c.id == *id {
                        if let Some(&(_, order)) = named(c, LOADS) {
                            if orders(c, order) {
                                found = sem_of(c);
                            }
                        }
                    }
                });
                found.filter(|f| !fr.locals.contains_key(f))
            }
            Test::VarZero { var, .. }
                if !fr.locals.contains_key(var)
                    && self
                        .prog
                        .global(var)
                        .is_some_and(|t| self.prog.resolve_type(t).atomic) =>
            {
                Some(var.clone())
            }
            _ => None,
        }?;
        self.flag_verdict(&f).then_some(f)
    }

    /// `nonzero`, the state past `test` (evaluated by `cond`) where the
    /// value it tests is nonzero: a wait on the flag it read, when it read
    /// one (a spin loop's exit through its test, an `if`'s branch).
    pub(super) fn flag_wait(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        test: &Test,
        nonzero: &mut State,
    ) {
        if let Some(f) = self.flag_read(fr, cond, test) {
            self.pass_phase(nonzero, format!("-{FLAG_PREFIX}{f}@0").into(), false);
        }
    }
}
