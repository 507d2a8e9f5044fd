//! Initialisation done once under a lock: a global flag `F`, tested under a
//! lock `L` held exclusively, guards the code that fills some object, and
//! that code sets `F` first of all:
//!
//! ```c
//! pthread_mutex_lock(&L);
//! if (!F) { F = 1; fill(table); }
//! pthread_mutex_unlock(&L);
//! use(table);
//! ```
//!
//! When every write of `F` in the program is such a `F = c` (`c` a nonzero
//! constant), at the top level of the branch of `if (!F)` that runs on
//! zero and before any call there (a call could release `L`), in a branch
//! no `return`, `break`, `continue` or `goto` leaves early, and `&F` is
//! taken nowhere, [`Walker::once_flag`] says `F` is a
//! once flag: the branch runs at most once in the whole run, in the first
//! critical section of `L` that tests `F` (every later one sees `F` set).
//! An access made in that branch, `L` still held, happens before anything a
//! thread does after its own test of `F` under `L`: that test came in a
//! later critical section of `L` (or the same thread ran the branch).
//!
//! The walk marks both ([`Walker::once_marks`]): phase `=F@L` inside the
//! branch (dropped at any unlock), `?F@L` on every path past the test;
//! `races.rs` (`once_ordered`) orders an access marked `=F@L` before one
//! marked `?F@L` on every path. Under-approximation: a flag tested under
//! several different locks is understood per lock; the flag's own accesses
//! under those locks are checked as usual.
//!
//! Invariant: the verdict reads every function's text. A judged flag joins
//! `WalkData::text_names`, so an edit of a function naming it walks again
//! from scratch (`incremental.rs`); verdicts are kept in
//! `WalkData::once_flags`.

use super::frames::Frame;
use super::state::State;
use super::Walker;
use racelens_syntax::{Expr, Name, Stmt, Test};

impl Walker<'_> {
    /// Is the global `var`, as `fr` names it, a once flag (see the module
    /// doc)?
    pub(super) fn once_flag(&mut self, fr: &Frame, var: &Name) -> bool {
        if var.contains('.') || fr.locals.contains_key(var) {
            return false;
        }
        match self.prog.global(var) {
            Some(t) if !t.array => {}
            _ => return false,
        }
        if let Some(&known) = self.d.once_flags.borrow().get(var) {
            return known;
        }
        if !self.d.text_names.contains(var) {
            self.d.text_names.push(var.clone());
            self.d.text_names.sort();
        }
        let named_by_init = self
            .prog
            .global_inits
            .values()
            .any(|refs| refs.contains(var));
        let mut ok = !named_by_init;
        for &f in self.prog.functions.values().flatten() {
            if !ok {
                break;
            }
            let s = self.summary(f);
            ok = !takes_address(&s.ir.body, var) && writes_only_in_gates(&s.ir.body, var, false);
        }
        self.d.once_flags.borrow_mut().insert(var.clone(), ok);
        ok
    }

    /// The marks of a test of once flag `var` in state `st`: the locks held
    /// exclusively there, as the phase keys inside the branch that runs on
    /// zero (`=F@L`) and past the test (`?F@L`). Empty when the test is not
    /// of a once flag or no lock is held.
    pub(super) fn once_marks(&mut self, fr: &Frame, test: &Test, st: &State) -> Vec<(Name, Name)> {
        let Test::VarZero { var, .. } = test else {
            return Vec::new();
        };
        let held: Vec<String> = st
            .must
            .0
            .iter()
            .filter(|h| !h.shared)
            .map(|h| h.lock.to_string())
            .collect();
        if held.is_empty() || !self.once_flag(fr, var) {
            return Vec::new();
        }
        held.iter()
            .map(|l| (format!("={var}@{l}").into(), format!("?{var}@{l}").into()))
            .collect()
    }
}

/// Marks `st` with phase `key` on this path (count 1, however it was
/// counted before).
pub(super) fn mark(st: &mut State, key: &Name) {
    match st.phases.iter_mut().find(|p| p.0 == *key) {
        Some(p) => *p = (key.clone(), 1, 1),
        None => {
            st.phases.push((key.clone(), 1, 1));
            st.phases.sort();
        }
    }
}

/// Drops the marks of once branches (`=F@L`) from `st`: a lock was
/// released, and what follows is no longer in the critical section of the
/// test.
pub(super) fn leave_branches(st: &mut State) {
    if st.phases.iter().any(|p| p.0.starts_with('=')) {
        st.phases.retain(|p| !p.0.starts_with('='));
    }
}

/// Does any expression of `body` take the address of `var`?
fn takes_address(body: &[Stmt], var: &Name) -> bool {
    let mut hit = false;
    let mut see = |e: &Expr| {
        crate::visit::visit_addr_names(e, &mut |n| hit |= n == var);
    };
    crate::visit::visit_stmts(body, &mut |st| match st {
        Stmt::Access(a) => see(&a.place),
        Stmt::Assign { lhs, rhs } => {
            see(lhs);
            see(rhs);
        }
        Stmt::Call(c) => c.args.iter().for_each(&mut see),
        Stmt::Return { value: Some(e), .. } => see(e),
        _ => {}
    });
    hit
}

/// Is every assignment of `var` in `stmts` a `var = c` (`c` a nonzero
/// constant) at the top level of the zero branch of `if (!var)`, a branch
/// nothing leaves early? `gate`: `stmts` is such a branch.
fn writes_only_in_gates(stmts: &[Stmt], var: &Name, gate: bool) -> bool {
    stmts.iter().all(|st| match st {
        Stmt::Assign { lhs, rhs } if assigns(lhs, var) => {
            gate && matches!(super::uncast(rhs), Expr::Int(n) if *n != 0)
        }
        Stmt::If {
            cond,
            test,
            then,
            els,
        } => {
            let zero = match test {
                Test::VarZero {
                    var: v,
                    zero_on_true,
                } if v == var => Some(*zero_on_true),
                _ => None,
            };
            let (gate_then, gate_els) = match zero {
                Some(true) => (gate_branch(then, var), false),
                Some(false) => (false, gate_branch(els, var)),
                None => (false, false),
            };
            writes_only_in_gates(cond, var, false)
                && writes_only_in_gates(then, var, gate_then)
                && writes_only_in_gates(els, var, gate_els)
        }
        Stmt::Loop { cond, body, .. } => {
            writes_only_in_gates(cond, var, false) && writes_only_in_gates(body, var, false)
        }
        Stmt::Switch { cond, arms, .. } => {
            writes_only_in_gates(cond, var, false)
                && arms.iter().all(|a| writes_only_in_gates(a, var, false))
        }
        _ => true,
    })
}

/// Does `lhs` name `var` as a whole?
fn assigns(lhs: &Expr, var: &Name) -> bool {
    matches!(super::uncast(lhs), Expr::Var(x) if x == var)
}

/// Can `stmts`, the zero branch of a test of `var`, be a once branch:
/// nothing leaves it early, and it sets `var` at its top level before any
/// call (which could release the lock)?
fn gate_branch(stmts: &[Stmt], var: &Name) -> bool {
    let Some(at) = stmts
        .iter()
        .position(|st| matches!(st, Stmt::Assign { lhs, .. } if assigns(lhs, var)))
    else {
        return false;
    };
    let mut calls = false;
    crate::visit::visit_stmts(&stmts[..at], &mut |st| calls |= matches!(st, Stmt::Call(_)));
    !calls && leaves_nothing(stmts)
}

/// Does nothing in `stmts` leave it early (`return`, `break`, `continue`,
/// `goto`, or a label another `goto` may enter by)?
fn leaves_nothing(stmts: &[Stmt]) -> bool {
    let mut ok = true;
    crate::visit::visit_stmts(stmts, &mut |st| {
        if matches!(
            st,
            Stmt::Return { .. } | Stmt::Break | Stmt::Continue | Stmt::Goto(_) | Stmt::Label(_)
        ) {
            ok = false;
        }
    });
    ok
}
