//! Branch facts: which flag a test reads and what a path knows of it.
//!
//! A flag is a call's result (`#call{id}`), a plain variable, or whether a
//! plain local equals a constant (`mode.==2`, see [`equal_flag`]). The walk
//! keeps, per path, the flags' known values (`State::conds`), the spawns
//! and locks that follow them (`guards`, `lock_guards`, `sym_guards`), and
//! what a `return` gives; `stmts.rs` splits and skips branches with them.
//!
//! Invariant: a flag names only what its own frame's writes can change (a
//! local whose address is not taken, not static, not `volatile`; or the
//! frame's own call results), and an equality flag is named as a member
//! chain below its local, so that every write of the local forgets it.

use super::frames::Frame;
use super::state::{State, TryKey};
use racelens_syntax::{Expr, Name, Test};

/// The value (nonzero or not) that `test` reads, when this path knows it:
/// a branch fact or constant on a local that no pointer reaches, or on a
/// call's result (not a `volatile` local: a signal handler or a `longjmp`
/// may bring another value). Not in a function with a backward `goto`: the
/// walk meets a label once, in the state of its first arrival, and the jump
/// may bring another value there. (A branch with a label in it is not
/// skipped either: see `walk_if`.)
pub(super) fn known_value(fr: &Frame, test: &Test, st: &State) -> Option<bool> {
    if fr.base.backward_goto || st.conds.is_empty() {
        return None;
    }
    let name = match test {
        Test::VarZero { var, .. } if plain_local(fr, var) => var.clone(),
        Test::CallZero { id, .. } => super::spawn::call_flag(*id),
        Test::Compare { .. } => match flag_of(fr, test)? {
            (TryKey::Var(v), _) => v,
            _ => return None,
        },
        _ => return None,
    };
    st.conds.iter().find(|c| c.0 == name).map(|c| c.1)
}

/// Is `var` a local (or parameter) of the frame that only its own
/// assignments change: not static, not `volatile`, its address not taken?
fn plain_local(fr: &Frame, var: &Name) -> bool {
    fr.locals
        .get(var)
        .is_some_and(|t| !t.is_static && !t.is_volatile())
        && !fr.address_taken.contains(var)
}

/// The flag a test reads, as branch facts (`State::conds`), trylock
/// results and flag-guarded locks name it, and whether the then-branch
/// runs when that flag is zero: a call's result, a variable, or whether a
/// plain local equals a constant (`mode == 1`, `mode != 1`: the flag
/// [`equal_flag`], nonzero exactly when the local holds the constant).
pub(super) fn flag_of(fr: &Frame, test: &Test) -> Option<(TryKey, bool)> {
    match test {
        Test::CallZero { id, zero_on_true } => Some((TryKey::Call(*id), *zero_on_true)),
        Test::VarZero { var, zero_on_true } => Some((TryKey::Var(var.clone()), *zero_on_true)),
        Test::Compare {
            var,
            equal: Some((k, then_on_equal)),
            ..
        } if plain_local(fr, var) => Some((TryKey::Var(equal_flag(var, *k)), !*then_on_equal)),
        _ => None,
    }
}

/// The flag of `var == k`. Its name is a member chain below `var`
/// (`mode.==1`), so that every write which forgets `var`'s flags (see
/// `Walker::forget_written_flags`) forgets it too.
fn equal_flag(var: &Name, k: i64) -> Name {
    format!("{var}.=={k}").into()
}

/// Is the value `v` a `return` gives zero (`Some(false)`) or nonzero
/// (`Some(true)`) on a path in state `st`: a constant, an address, or a
/// variable a branch on this path tested?
pub(super) fn result_nonzero(fr: &Frame, v: &Expr, st: &State) -> Option<bool> {
    match super::uncast(v) {
        Expr::Int(n) => Some(*n != 0),
        Expr::AddrOf(_) => Some(true),
        Expr::Var(x) => match st.conds.iter().find(|c| &c.0 == x) {
            Some(c) => Some(c.1),
            // A local that only ever holds an object's address (`lock =
            // &locks[i]; if (trylock(lock) == 0) return lock;`).
            None => holds_only_addresses(fr, x).then_some(true),
        },
        _ => None,
    }
}

/// Is every value a function assigns to its local `x` (not a parameter,
/// which the caller may give null) an address (`&o`), never null, with
/// `x`'s own address never taken? A path that returns `x` before any
/// assignment would return an indeterminate value.
fn holds_only_addresses(fr: &Frame, x: &Name) -> bool {
    let param = fr.summary.ir.params.iter().any(|p| &p.name == x);
    if param || !fr.locals.contains_key(x) || fr.address_taken.contains(x) {
        return false;
    }
    fr.only_addresses(x)
}
