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
//! `races.rs` (`once_branch_ordered`) orders an access marked `=F@L` before one
//! marked `?F@L` on every path. Under-approximation: a flag tested under
//! several different locks is understood per lock; the flag's own accesses
//! under those locks are checked as usual.
//!
//! Globals set lazily and never cleared (`if (!g) g = make();`) are judged
//! here too (see [`Walker::lazy_global`]).
//!
//! Invariant: the verdicts read every function's text; they are kept in
//! `WalkData::once_flags` and `WalkData::lazy_globals`. An edit of a
//! function naming a judged global judges it again on the new text, and
//! walks from scratch if the verdict changed ([`edit`], `incremental.rs`).

use super::frames::Frame;
use super::state::State;
use super::Walker;
use racelens_syntax::{Expr, Name, Stmt, Test};
use rustc_hash::FxHashMap;

impl Walker<'_> {
    /// Is the global `var`, as `fr` names it, a once flag (see the module
    /// doc)?
    pub(super) fn once_flag(&mut self, fr: &Frame, var: &Name) -> bool {
        self.judged(fr, var, |d| &d.once_flags, Self::once_flag_verdict)
    }

    /// A verdict on the global scalar `var`, as `fr` names it, that some
    /// `if` tests: kept in the cache `pick` selects, or judged by `verdict`
    /// on the program's text.
    fn judged(
        &self,
        fr: &Frame,
        var: &Name,
        pick: fn(&super::WalkData) -> &std::cell::RefCell<FxHashMap<Name, bool>>,
        verdict: fn(&Self, &Name) -> bool,
    ) -> bool {
        if var.contains('.') || fr.locals.contains_key(var) {
            return false;
        }
        match self.prog.global(var) {
            Some(t) if !t.array => {}
            _ => return false,
        }
        if !self.tested(var) {
            return false;
        }
        if let Some(&known) = pick(&self.d).borrow().get(var) {
            return known;
        }
        let ok = verdict(self, var);
        pick(&self.d).borrow_mut().insert(var.clone(), ok);
        ok
    }

    /// Does some `if` of the program test `var` for zero? (The names are
    /// gathered in one pass, on first use.)
    fn tested(&self, var: &Name) -> bool {
        let known = self.d.tested_names.borrow().clone();
        let names = match known {
            Some(n) => n,
            None => {
                let mut all = rustc_hash::FxHashSet::default();
                for &f in self.prog.functions.values().flatten() {
                    all.extend(tested_names(&self.summary(f)));
                }
                let all = std::sync::Arc::new(all);
                *self.d.tested_names.borrow_mut() = Some(all.clone());
                all
            }
        };
        names.contains(var)
    }

    /// [`Walker::once_flag`]'s verdict on the program's text, for a global
    /// scalar `var`.
    pub(super) fn once_flag_verdict(&self, var: &Name) -> bool {
        let named_by_init = self.prog.named_by_global_init(var);
        let mut ok = !named_by_init;
        for &f in self.prog.functions.values().flatten() {
            if !ok {
                break;
            }
            let s = self.summary(f);
            ok = !takes_address(&s.ir.body, var) && writes_only_in_gates(&s.ir.body, var, false);
        }
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
        // The marks read and change context fields.
        self.opaque();
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

/// Does any expression of `body` take the address of the scalar `var`
/// itself (`&var`, `&var.f`; not `&var->f`, the address of what it points
/// to)?
fn takes_address(body: &[Stmt], var: &Name) -> bool {
    fn place_of(e: &Expr, var: &Name) -> bool {
        match e {
            Expr::Var(n) => n == var,
            Expr::Field {
                base, arrow: false, ..
            } => place_of(base, var),
            Expr::Cast { value, .. } => place_of(value, var),
            _ => false,
        }
    }
    fn addr(e: &Expr, var: &Name) -> bool {
        match e {
            Expr::AddrOf(x) => place_of(x, var) || addr(x, var),
            Expr::Field { base, .. }
            | Expr::Deref(base)
            | Expr::Offset(base)
            | Expr::Index { base, .. } => addr(base, var),
            Expr::Cast { value, .. } => addr(value, var),
            Expr::Choice(xs) => xs.iter().any(|x| addr(x, var)),
            Expr::Init(xs) => xs.iter().any(|(_, x)| addr(x, var)),
            _ => false,
        }
    }
    let mut hit = false;
    let mut see = |e: &Expr| hit |= addr(e, var);
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

// Globals set lazily and never cleared: `if (!g) g = make();` where every
// assignment of `g` in the program stores a value that is not zero (a
// nonzero constant, an address, a string, an allocation's result, or a
// local only ever given such values), `&g` is taken nowhere, and some
// `if` tests `g` (the marks below split calling contexts: a global no
// code tests is not worth them). Once a
// thread has seen `g` set, it stays set, for that thread and for every
// thread it creates afterwards. The walk marks the paths where a test found
// `g` zero (`^g#d`, `d` the frame depth: dropped when that frame returns)
// and the paths where `g` is known set (`!g`, after an assignment or a test
// that found it set). A thread created on paths that all had `g` set runs
// no code of the first kind: `races.rs` drops those of its accesses
// (`never_runs`). Under-approximation: allocations are taken to succeed.

impl Walker<'_> {
    /// Is the global `var`, as `fr` names it, set lazily and never cleared
    /// (see above)?
    pub(super) fn lazy_global(&mut self, fr: &Frame, var: &Name) -> bool {
        self.judged(fr, var, |d| &d.lazy_globals, Self::lazy_verdict)
    }

    /// [`Walker::lazy_global`]'s verdict on the program's text, for a
    /// global scalar `var`.
    pub(super) fn lazy_verdict(&self, var: &Name) -> bool {
        let named_by_init = self.prog.named_by_global_init(var);
        let mut ok = !named_by_init;
        let (mut assigned, mut tested) = (false, false);
        for &f in self.prog.functions.values().flatten() {
            if !ok {
                break;
            }
            let s = self.summary(f);
            if takes_address(&s.ir.body, var) {
                ok = false;
                break;
            }
            crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
                Stmt::Assign { lhs, rhs } if assigns(lhs, var) => {
                    assigned = true;
                    ok &= self.nonzero_value(&s, rhs, true);
                }
                Stmt::If {
                    test: Test::VarZero { var: v, .. },
                    ..
                } if v == var => tested = true,
                _ => {}
            });
        }
        // Only a global some code tests is worth the marks (they split
        // the calling contexts).
        ok && assigned && tested
    }

    /// Is `rhs`, assigned in function `s`, never zero: a nonzero constant,
    /// an address, a string, an allocation's result, or (`deep`) a local of
    /// `s` whose every assignment is one of those and whose address is not
    /// taken?
    fn nonzero_value(&self, s: &crate::db::FunctionSummary, rhs: &Expr, deep: bool) -> bool {
        match super::uncast(rhs) {
            Expr::Int(n) => *n != 0,
            Expr::AddrOf(_) | Expr::Str => true,
            Expr::CallResult(id) => {
                let mut alloc = false;
                crate::visit::visit_stmts(&s.ir.body, &mut |st| {
                    if let Stmt::Call(c) = st {
                        if c.id == *id {
                            alloc = self.allocates(s, c);
                        }
                    }
                });
                alloc
            }
            Expr::Var(x) if deep => {
                let mut local = false;
                crate::visit::visit_stmts(&s.ir.body, &mut |st| {
                    if let Stmt::Decl(d) = st {
                        local |= d.name == *x && !d.ty.is_static;
                    }
                });
                if !local || s.ir.address_taken.contains(x) || takes_address(&s.ir.body, x) {
                    return false;
                }
                let mut ok = true;
                let mut any = false;
                crate::visit::visit_stmts(&s.ir.body, &mut |st| {
                    if let Stmt::Assign { lhs, rhs } = st {
                        if assigns(lhs, x) {
                            any = true;
                            ok &= self.nonzero_value(s, rhs, false);
                        }
                    }
                });
                ok && any
            }
            _ => false,
        }
    }

    /// Does call `c` of `s` return new memory: an allocation the library
    /// models, or a wrapper of one?
    fn allocates(&self, s: &crate::db::FunctionSummary, c: &racelens_syntax::Call) -> bool {
        if matches!(s.models.get(&c.id), Some(crate::config::CallModel::Alloc)) {
            return true;
        }
        match &c.callee {
            racelens_syntax::Callee::Direct(n) => self
                .prog
                .functions_named(n)
                .is_some_and(|fs| fs.iter().all(|&f| self.is_alloc_wrapper(f))),
            _ => false,
        }
    }

    /// A test of a lazily set global that state `st` knows set (`!g`):
    /// whether its then-branch runs on zero (the branch that never runs).
    pub(super) fn lazy_known_set(&mut self, fr: &Frame, test: &Test, st: &State) -> Option<bool> {
        let Test::VarZero { var, zero_on_true } = test else {
            return None;
        };
        let key = format!("!{var}");
        if !st.phases.iter().any(|p| *p.0 == *key && p.1 > 0) || !self.lazy_global(fr, var) {
            return None;
        }
        // The answer read a context field.
        self.opaque();
        Some(*zero_on_true)
    }

    /// The marks of a test of a lazily set global in the branches of an
    /// `if` (`then`, `els`): where it found the global zero (`^g#d`) and
    /// where set (`!g`). Only a test that guards the global's making is
    /// marked: its zero branch assigns it, or its nonzero branch returns
    /// and the function assigns it (`if (g) return; .. g = make();`). A
    /// plain feature test (`if (monotonic) ..`) is not: the marks split
    /// calling contexts (memcached's by a fifth).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lazy_marks(
        &mut self,
        fr: &Frame,
        test: &Test,
        then: &[Stmt],
        els: &[Stmt],
        t: &mut State,
        e: &mut State,
    ) {
        let Test::VarZero { var, zero_on_true } = test else {
            return;
        };
        let (zero_stmts, set_stmts) = if *zero_on_true {
            (then, els)
        } else {
            (els, then)
        };
        let assigned_in = |stmts: &[Stmt]| {
            let mut hit = false;
            crate::visit::visit_stmts(stmts, &mut |st| {
                hit |= matches!(st, Stmt::Assign { lhs, .. } if assigns(lhs, var));
            });
            hit
        };
        let gate = assigned_in(zero_stmts)
            || (matches!(set_stmts.last(), Some(Stmt::Return { .. }))
                && assigned_in(&fr.summary.ir.body));
        if !gate || !self.lazy_global(fr, var) {
            return;
        }
        self.opaque();
        let (zero, set) = if *zero_on_true { (t, e) } else { (e, t) };
        mark(zero, &format!("^{var}#{}", self.d.stack.len()).into());
        mark(set, &format!("!{var}").into());
    }

    /// An assignment of `lhs` on this path: a lazily set global is set from
    /// here on.
    pub(super) fn lazy_assigned(&mut self, fr: &Frame, lhs: &Expr, st: &mut State) {
        if let Expr::Var(g) = lhs {
            if self.lazy_global(fr, g) {
                self.opaque();
                mark(st, &format!("!{g}").into());
            }
        }
    }
}

/// The lazily set globals known set on every path to `st`.
pub(super) fn set_globals(st: &State) -> Vec<Name> {
    st.phases
        .iter()
        .filter(|p| p.1 > 0)
        .filter_map(|p| p.0.strip_prefix('!').map(Name::from))
        .collect()
}

/// Drops the marks of tests made in frames deeper than `depth` (their
/// functions returned).
pub(super) fn leave_frames(st: &mut State, depth: usize) {
    let deeper = |k: &str| {
        k.strip_prefix('^')
            .and_then(|k| k.rsplit_once('#'))
            .and_then(|(_, d)| d.parse::<usize>().ok())
            .is_some_and(|d| d > depth)
    };
    if st.phases.iter().any(|p| deeper(&p.0)) {
        st.phases.retain(|p| !deeper(&p.0));
    }
}

/// The names the `if`s of a function test for zero.
fn tested_names(s: &crate::db::FunctionSummary) -> Vec<Name> {
    let mut out = Vec::new();
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        if let Stmt::If {
            test: Test::VarZero { var, .. },
            ..
        } = st
        {
            out.push(var.clone());
        }
    });
    out.sort();
    out.dedup();
    out
}

/// An edit of one function (summary `old` to `new`, named `name`): judges
/// again, on the new text, every once flag and lazily set global either
/// text names. Did a verdict change?
pub(super) fn edit<'a>(
    w: &Walker<'a>,
    name: &str,
    old: &crate::db::FunctionSummary,
    new: &crate::db::FunctionSummary,
) -> Result<(), &'static str> {
    if tested_names(old) != tested_names(new) {
        *w.d.tested_names.borrow_mut() = None;
    }
    let judged = |pick: fn(&super::WalkData) -> &std::cell::RefCell<FxHashMap<Name, bool>>| {
        pick(&w.d)
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect::<Vec<(Name, bool)>>()
    };
    let kinds: [(_, fn(&Walker<'a>, &Name) -> bool, &'static str); 2] = [
        (
            judged(|d| &d.once_flags),
            Walker::once_flag_verdict,
            "a once flag's verdict changed",
        ),
        (
            judged(|d| &d.lazy_globals),
            Walker::lazy_verdict,
            "a lazily set global's verdict changed",
        ),
    ];
    // Most edits name none of the judged globals: one pass over each text.
    let all: Vec<Name> = kinds
        .iter()
        .flat_map(|k| k.0.iter().map(|x| x.0.clone()))
        .collect();
    let mentions = |names: &[Name]| {
        super::counters::summary_mentions(name, old, names)
            || super::counters::summary_mentions(name, new, names)
    };
    if all.is_empty() || !mentions(&all) {
        return Ok(());
    }
    for (verdicts, verdict, why) in kinds {
        for (g, v) in verdicts {
            if mentions(std::slice::from_ref(&g)) && verdict(w, &g) != v {
                return Err(why);
            }
        }
    }
    Ok(())
}
