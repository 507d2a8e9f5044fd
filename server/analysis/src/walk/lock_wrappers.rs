//! Lock wrappers: functions of the program whose only effect is one lock,
//! trylock or unlock of a mutex their parameters name, such as
//! `possess_(lock *b, ...) { if (pthread_mutex_lock(&b->mutex)) fail(); }`,
//! `mutexLock(int n) { pthread_mutex_lock(&M[n]); }` or
//! `STATS_LOCK(void) { pthread_mutex_lock(&stats_lock); }`.
//!
//! A call of a wrapper is the lock call itself, made at the call site with
//! the call's arguments in place of the parameters (`possess_(&tl)` locks
//! `tl.mutex`, `mutexLock(2)` locks `M[2]`). The wrapper's body is not
//! walked, so it costs no calling context (a wrapper called under many
//! different locksets used to run out of them and lose its lock) and an
//! integer parameter that indexes a lock array is known at each call.
//!
//! A **join wrapper** is one too: a function whose only effect is
//! `pthread_join` (or `thrd_join`) of a thread id its parameters name
//! (`sb_thread_join(pthread_t t, void **r) { return pthread_join(t, r);
//! }`): each call joins the caller's argument, at the call, in the
//! caller's loop, so `while (i < n) sb_thread_join(threads[i].thread, 0)`
//! covers the loop that created `threads[i]` as a direct join does (fixture
//! `join_wrapper_in_loop.c`). Before, the wrapper's `pthread_join(t)` named
//! its own parameter, which no creation stored into, and joined nothing.
//!
//! A compare-and-swap counts as a trylock inside a wrapper as it does at a
//! direct call: only when it swaps in a constant (fixture
//! `cas_through_helper.c`).
//!
//! A wrapper's body may only read its own locals and parameters, keep the
//! lock call's result, test it, and return it; a branch taken when a
//! blocking lock fails (`if (ret) fail(...)`) may hold anything, and is not
//! walked: its accesses are not recorded (an under-approximation limited to
//! error paths). An assertion on the parameters may come first: `assert(..)`
//! unexpanded, or a test (through `__builtin_expect`, as `assert` expands
//! to) whose one branch only ends the program (`__assert_fail`, `abort`,
//! `exit`). A wrapper may call another wrapper instead of the library
//! (at most [`MAX_NESTING`] deep). Anything else (logging, counters, a
//! second lock) makes the function an ordinary one, walked from its body.
//!
//! Owns `WalkData::lock_wrappers` (a cache by function). The answer depends
//! only on the function's summary and on the wrappers it calls, so an edit
//! that changes it makes the incremental update refuse (`incremental.rs`).

use super::frames::Frame;
use super::Walker;
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary};
use racelens_syntax::{Call, Callee, Expr, Name, Stmt, Test};
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// How many wrappers may wrap each other.
pub(super) const MAX_NESTING: u32 = 3;

/// What a call of a lock wrapper does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LockWrap {
    /// The lock model, with the lock as argument 0.
    pub model: CallModel,
    /// The lock argument in terms of the wrapper's parameters and globals.
    pub lock: Expr,
    pub params: Vec<Name>,
    /// Globals the lock argument names: a caller's local of the same name
    /// would capture them.
    pub globals: Vec<Name>,
}

/// The wrapper's own calls and locals, while its body is checked.
struct Check<'s> {
    s: &'s FunctionSummary,
    locals: FxHashSet<Name>,
    /// The one lock call and its (already nested-resolved) wrap.
    found: Option<(u32, LockWrap)>,
    /// Locals holding the lock call's result.
    results: FxHashSet<Name>,
    /// Calls of an assertion's pieces that change nothing on success:
    /// `assert` unexpanded, `__builtin_expect` (its argument back).
    hints: FxHashSet<u32>,
    ok: bool,
}

/// Does `stmts` (a branch of a wrapper's `if`) end the program, as an
/// assertion's failure branch does (`if (tmp) __assert_rtn(..);`)? Its
/// calls all end the process or thread (the `Exit` model), reading only
/// the wrapper's locals, and there is at least one.
fn dies(ck: &Check, stmts: &[Stmt]) -> bool {
    let mut exits = false;
    for st in stmts {
        match st {
            Stmt::Decl(_) => {}
            Stmt::Access(a) if matches!(&a.place, Expr::Var(x) if ck.locals.contains(x)) => {}
            Stmt::Call(c) if matches!(ck.s.models.get(&c.id), Some(CallModel::Exit)) => {
                exits = true;
            }
            _ => return false,
        }
    }
    exits
}

impl<'a> Walker<'a> {
    /// The lock wrap of `f`, if `f` is a lock wrapper (see the module doc).
    pub(super) fn lock_wrapper(&self, f: FunctionId) -> Option<Arc<LockWrap>> {
        if let Some(w) = self.d.lock_wrappers.borrow().get(&f) {
            return w.clone();
        }
        let s = self.summary(f);
        let w = self
            .lock_wrap_of(&s, MAX_NESTING)
            .or_else(|| self.gate_wrap(f))
            .map(Arc::new);
        self.d.lock_wrappers.borrow_mut().insert(f, w.clone());
        w
    }

    /// The lock wrap a function with summary `s` would have.
    pub(super) fn lock_wrap_of(&self, s: &FunctionSummary, depth: u32) -> Option<LockWrap> {
        if s.ir.truncated
            || s.ir
                .params
                .iter()
                .any(|p| s.ir.address_taken.contains(&p.name))
        {
            return None;
        }
        let mut locals: FxHashSet<Name> = s.ir.params.iter().map(|p| p.name.clone()).collect();
        crate::visit::visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Decl(d) = st {
                locals.insert(d.name.clone());
            }
        });
        let mut ck = Check {
            s,
            locals,
            found: None,
            results: FxHashSet::default(),
            hints: FxHashSet::default(),
            ok: true,
        };
        self.check_stmts(&mut ck, &s.ir.body, depth);
        let (_, w) = ck.found.filter(|_| ck.ok)?;
        // Parameters are bound once: one assigned in the body is no longer
        // the argument.
        let mut assigned = false;
        crate::visit::visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign {
                lhs: Expr::Var(x), ..
            } = st
            {
                assigned |= s.ir.params.iter().any(|p| p.name == *x);
            }
        });
        (!assigned).then_some(w)
    }

    fn check_stmts(&self, ck: &mut Check, stmts: &[Stmt], depth: u32) {
        for st in stmts {
            if !ck.ok {
                return;
            }
            match st {
                Stmt::Decl(_) => {}
                Stmt::Access(a) => {
                    // Only the wrapper's own locals and parameters.
                    if !matches!(&a.place, Expr::Var(x) if ck.locals.contains(x)) {
                        ck.ok = false;
                    }
                }
                Stmt::Assign {
                    lhs: Expr::Var(x),
                    rhs,
                } if ck.locals.contains(x) => match super::uncast(rhs) {
                    Expr::CallResult(id) if ck.found.as_ref().is_some_and(|f| f.0 == *id) => {
                        ck.results.insert(x.clone());
                    }
                    Expr::CallResult(id) if ck.hints.contains(id) => {}
                    Expr::Int(_) => {}
                    _ => ck.ok = false,
                },
                // An assertion left unexpanded (`assert(n < MAX)`), or the
                // branch-prediction hint of an expanded one's test (`tmp =
                // __builtin_expect(!(n < MAX), 0)`).
                Stmt::Call(Call {
                    id,
                    callee: Callee::Direct(name),
                    ..
                }) if matches!(&**name, "__builtin_expect" | "assert")
                    && !ck.locals.contains(name) =>
                {
                    ck.hints.insert(*id);
                }
                Stmt::Call(c) => {
                    if ck.found.is_some() {
                        ck.ok = false;
                        return;
                    }
                    match self.wrapped_lock(ck, c, depth) {
                        Some(w) => ck.found = Some((c.id, w)),
                        None => ck.ok = false,
                    }
                }
                Stmt::If {
                    cond,
                    test,
                    then,
                    els,
                } => {
                    self.check_stmts(ck, cond, depth);
                    // The branch a failed lock or unlock takes is not walked.
                    let failure_then = match (test, &ck.found) {
                        (Test::CallZero { id, zero_on_true }, Some((f, w)))
                            if *id == *f && blocking(&w.model) =>
                        {
                            Some(!*zero_on_true)
                        }
                        (Test::VarZero { var, zero_on_true }, Some((_, w)))
                            if ck.results.contains(var) && blocking(&w.model) =>
                        {
                            Some(!*zero_on_true)
                        }
                        _ => None,
                    };
                    match failure_then {
                        Some(true) => self.check_stmts(ck, els, depth),
                        Some(false) => self.check_stmts(ck, then, depth),
                        // An assertion on the parameters: its failure
                        // branch ends the program.
                        None if dies(ck, then) => self.check_stmts(ck, els, depth),
                        None if dies(ck, els) => self.check_stmts(ck, then, depth),
                        None => ck.ok = false,
                    }
                }
                Stmt::Return { value, .. } => match value.as_ref().map(super::uncast) {
                    None | Some(Expr::Int(_)) => {}
                    Some(Expr::CallResult(id)) if ck.found.as_ref().is_some_and(|f| f.0 == *id) => {
                    }
                    Some(Expr::Var(x)) if ck.results.contains(x) => {}
                    _ => ck.ok = false,
                },
                _ => ck.ok = false,
            }
        }
    }

    /// The lock call `c` of a wrapper being checked, as a wrap of the
    /// wrapper's parameters: a modelled lock, trylock or unlock, or a call
    /// of another wrapper.
    fn wrapped_lock(&self, ck: &Check, c: &Call, depth: u32) -> Option<LockWrap> {
        let Callee::Direct(name) = &c.callee else {
            return None;
        };
        if ck.locals.contains(name) {
            return None;
        }
        let (model, arg) = match ck.s.models.get(&c.id) {
            // A compare-and-swap that swaps in a computed value updates a
            // counter (`cas(&q->pos, w, w + n)` through `cas(val, old,
            // new)`): no trylock, as at a direct call (`calls.rs`).
            Some(CallModel::TryLock { .. }) if super::calls::swaps_in_computed(c) => return None,
            Some(m @ CallModel::Lock { arg, .. })
            | Some(m @ CallModel::Unlock { arg })
            | Some(m @ CallModel::TryLock { arg, .. }) => (m.clone(), c.args.get(*arg)?.clone()),
            // A join of a thread id the caller passes (`sb_thread_join(t,
            // ret) { return pthread_join(t, ret); }`): the join of the
            // caller's argument, in the caller's loop.
            Some(m @ CallModel::Join { tid, all: false }) => (m.clone(), c.args.get(*tid)?.clone()),
            Some(_) => return None,
            None => {
                if depth == 0 {
                    return None;
                }
                let defs = self.prog.functions_named(name)?;
                let [g] = &defs[..] else { return None };
                let inner = self.summary(*g);
                let w = self
                    .lock_wrap_of(&inner, depth - 1)
                    .or_else(|| self.gate_wrap(*g))?;
                (w.model.clone(), subst(&w.lock, &w.params, &c.args)?)
            }
        };
        let model = match model {
            CallModel::Lock { shared, .. } => CallModel::Lock { arg: 0, shared },
            CallModel::Unlock { .. } => CallModel::Unlock { arg: 0 },
            CallModel::TryLock {
                shared, ok_nonzero, ..
            } => CallModel::TryLock {
                arg: 0,
                shared,
                ok_nonzero,
            },
            CallModel::Join { all: false, .. } => CallModel::Join { tid: 0, all: false },
            _ => return None,
        };
        let params: Vec<Name> = ck.s.ir.params.iter().map(|p| p.name.clone()).collect();
        let mut globals = Vec::new();
        let mut fine = true;
        crate::visit::visit_names(&arg, &mut |n| {
            if params.contains(n) {
            } else if ck.locals.contains(n) || self.prog.global(n).is_none() {
                fine = false;
            } else if !globals.contains(n) {
                globals.push(n.clone());
            }
        });
        if !fine || contains_call_result(&arg) {
            return None;
        }
        Some(LockWrap {
            model,
            lock: arg,
            params,
            globals,
        })
    }

    /// Call `c` as the lock call it stands for, when its callee is a lock
    /// wrapper: the model and a call whose only argument is the lock.
    pub(super) fn lock_wrapper_call(&self, fr: &Frame, c: &Call) -> Option<(Call, CallModel)> {
        let Callee::Direct(n) = &c.callee else {
            return None;
        };
        if fr.locals.contains_key(n) || self.prog.global(n).is_some() {
            return None;
        }
        let f = *self.definitions(fr, std::slice::from_ref(n)).first()?;
        let w = self.lock_wrapper(f)?;
        if w.globals.iter().any(|g| fr.locals.contains_key(g)) {
            return None;
        }
        let lock = subst(&w.lock, &w.params, &c.args)?;
        if matches!(w.model, CallModel::Join { .. }) {
            // A thread id place the caller cannot name joins nothing known.
            if self.place(fr, &lock, 0).is_empty() {
                return None;
            }
        } else {
            // A lock the caller cannot resolve (a wild pointer, or a field
            // filled through a pointer by a callback) would be any lock
            // there; the wrapper's walk names it by the parameter's type:
            // walk it.
            let (keys, resolved) = self.lock_keys(fr, Some(&lock));
            if !resolved || keys.is_empty() {
                return None;
            }
        }
        let call = Call {
            id: c.id,
            callee: c.callee.clone(),
            args: vec![lock],
            span: c.span,
            stmt_span: c.stmt_span,
        };
        Some((call, w.model.clone()))
    }
}

/// A lock or unlock whose failure is an error (not a trylock).
fn blocking(m: &CallModel) -> bool {
    matches!(m, CallModel::Lock { .. } | CallModel::Unlock { .. })
}

fn contains_call_result(e: &Expr) -> bool {
    match e {
        Expr::CallResult(_) => true,
        Expr::Field { base, .. } | Expr::Index { base, .. } => contains_call_result(base),
        Expr::Deref(x) | Expr::AddrOf(x) | Expr::Offset(x) => contains_call_result(x),
        Expr::Cast { value, .. } => contains_call_result(value),
        Expr::Choice(xs) => xs.iter().any(contains_call_result),
        _ => false,
    }
}

/// `template` with each parameter replaced by the call's argument:
/// `&bolt->mutex` with `bolt := &tl` is `&tl.mutex`, `&M[n]` with `n := 2`
/// is `&M[2]`. `None` when an argument is missing.
pub(super) fn subst(template: &Expr, params: &[Name], args: &[Expr]) -> Option<Expr> {
    let arg = |n: &Name| -> Option<Option<&Expr>> {
        params.iter().position(|p| p == n).map(|i| args.get(i))
    };
    Some(match template {
        Expr::Var(n) => match arg(n) {
            Some(a) => a?.clone(),
            None => template.clone(),
        },
        Expr::Field { base, field, arrow } => {
            let b = subst(base, params, args)?;
            match (arrow, super::uncast(&b)) {
                (true, Expr::AddrOf(inner)) => Expr::Field {
                    base: inner.clone(),
                    field: field.clone(),
                    arrow: false,
                },
                _ => Expr::Field {
                    base: Box::new(b),
                    field: field.clone(),
                    arrow: *arrow,
                },
            }
        }
        Expr::Index {
            base, index, var, ..
        } => {
            let b = Box::new(subst(base, params, args)?);
            match var.as_ref().map(|v| (v, arg(v))) {
                Some((_, Some(a))) => match a.map(super::uncast) {
                    Some(Expr::Int(k)) => Expr::Index {
                        base: b,
                        index: Some(*k),
                        var: None,
                        affine: None,
                    },
                    Some(Expr::Var(y)) => Expr::Index {
                        base: b,
                        index: None,
                        var: Some(y.clone()),
                        affine: None,
                    },
                    Some(_) => Expr::Index {
                        base: b,
                        index: None,
                        var: None,
                        affine: None,
                    },
                    None => return None,
                },
                // The index's own names are not substituted: a lock's
                // element needs no more than "unknown" for an affine one.
                _ => Expr::Index {
                    base: b,
                    index: *index,
                    var: var.clone(),
                    affine: None,
                },
            }
        }
        Expr::Deref(x) => {
            let b = subst(x, params, args)?;
            match super::uncast(&b) {
                Expr::AddrOf(inner) => (**inner).clone(),
                _ => Expr::Deref(Box::new(b)),
            }
        }
        Expr::AddrOf(x) => Expr::AddrOf(Box::new(subst(x, params, args)?)),
        Expr::Offset(x) => Expr::Offset(Box::new(subst(x, params, args)?)),
        Expr::Cast { ty, pointer, value } => Expr::Cast {
            ty: ty.clone(),
            pointer: *pointer,
            value: Box::new(subst(value, params, args)?),
        },
        Expr::Choice(xs) => Expr::Choice(
            xs.iter()
                .map(|x| subst(x, params, args))
                .collect::<Option<Vec<_>>>()?,
        ),
        Expr::CallResult(_) | Expr::Int(_) | Expr::Str | Expr::Init(_) | Expr::Other => {
            template.clone()
        }
    })
}
