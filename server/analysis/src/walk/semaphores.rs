//! Binary semaphores used as mutexes: `sem_init(&s, 0, 1)`, then every
//! `sem_post(&s)` closes a `sem_wait(&s)` of the same function.
//!
//! A semaphore whose count starts at 1 and is only ever raised by the thread
//! that lowered it admits one thread at a time between `sem_wait` and
//! `sem_post`, and a post happens before the wait it lets through: it is a
//! mutex, and [`Walker::semaphore_model`] gives its calls the lock models.
//! [`binary_semaphore`] decides from the program's text, for a global `s`:
//! - every `sem_init` of `s` sets 1, and there is one;
//! - in every function that waits on or posts `s`, each path posts only
//!   while it holds `s` (after its own wait), never waits while holding it,
//!   and returns, loops and leaves branches with `s` in the same state on
//!   every path, released at the end (a function that returns holding it,
//!   a wrapper, is not understood); a `goto` reaches its label in the state
//!   the code falling into the label has; no `switch` arm, `sem_trywait` or
//!   `sem_timedwait` is involved;
//! - `&s` is used nowhere else (stored, handed to other code).
//!
//! A semaphore that readers pass through gates on one count of readers
//! (`if (!readers) sem_wait(&s); readers++;` .. `readers--; if (!readers)
//! sem_post(&s);`, the classic first readers-writers solution) is a
//! reader-writer lock ([`Verdict::ReadersWriter`]): a writer's `sem_wait`
//! locks it, a gate's `sem_wait` locks it shared (the walk takes the gate's
//! branch on every path: whichever reader took it, every reader between
//! the gates holds it), and every `sem_post` unlocks. Each function still
//! passes the gates in order, as for a mutex.
//!
//! A semaphore used otherwise, whose every `sem_init` sets a constant count
//! (a signal that starts at 0, a counting one), is a signal
//! ([`Verdict::Signal`]): each path counts its posts and its waits, and the
//! race check orders an access of the one thread that posts it, made after
//! at most `p` posts, before an access made after more than `p + n` waits
//! (`n` the initial count): those waits needed the post that followed the
//! first access. Anything else orders nothing (possible false alarms,
//! never a hidden race).
//!
//! Invariant: the decision reads the text of every function that names `s`;
//! `s` is kept in `WalkData::text_names`, so an edit of such a function
//! walks again from scratch (`incremental.rs`).

use super::frames::Frame;
use super::{uncast, Walker};
use crate::config::CallModel;
use crate::db::FunctionSummary;
use racelens_syntax::{Call, Callee, Expr, Name, Stmt, Test};

/// The calls that name a semaphore without publishing it.
const SEM_CALLS: &[&str] = &[
    "sem_init",
    "sem_wait",
    "sem_post",
    "sem_destroy",
    "sem_getvalue",
    "sem_trywait",
    "sem_timedwait",
];

impl<'a> Walker<'a> {
    /// The global semaphore a library `sem_wait` (`true`) or `sem_post`
    /// (`false`) call names.
    fn sem_call(&self, fr: &Frame, c: &Call) -> Option<(Name, bool)> {
        let Callee::Direct(f) = &c.callee else {
            return None;
        };
        let wait = match &**f {
            "sem_wait" => true,
            "sem_post" => false,
            _ => return None,
        };
        if self.prog.functions_named(f).is_some() {
            return None;
        }
        let s = sem_of(c)?;
        if fr.locals.contains_key(&s) || self.prog.global(&s).is_none() {
            return None;
        }
        Some((s, wait))
    }

    /// The lock model of a `sem_wait`/`sem_post` call on a binary semaphore.
    pub(super) fn semaphore_model(&mut self, fr: &Frame, c: &Call) -> Option<CallModel> {
        let (s, lock) = self.sem_call(fr, c)?;
        let verdict = self.semaphore_verdict(&s);
        match (verdict, lock) {
            (Verdict::No | Verdict::Signal(_), _) => None,
            (Verdict::ReadersWriter, true) if gate_call(&fr.summary.ir.body, c.id) => {
                Some(CallModel::Lock {
                    arg: 0,
                    shared: true,
                })
            }
            (_, true) => Some(CallModel::Lock {
                arg: 0,
                shared: false,
            }),
            (_, false) => Some(CallModel::Unlock { arg: 0 }),
        }
    }

    /// A `sem_post` or `sem_wait` on a signalling semaphore (see
    /// [`Verdict::Signal`]): the path's count of posts (`+s`) or of waits
    /// (`-s@n`, `n` the initial count) goes up, as barrier phases do, and
    /// a posting thread is noted among the thread's `barriers` (`+s`).
    pub(super) fn semaphore_signal(&mut self, fr: &Frame, c: &Call, st: &mut super::state::State) {
        let Some((s, wait)) = self.sem_call(fr, c) else {
            return;
        };
        let Verdict::Signal(init) = self.semaphore_verdict(&s) else {
            return;
        };
        let key: Name = match wait {
            false => format!("+{s}").into(),
            true => format!("-{s}@{init}").into(),
        };
        // A post before this thread's first wait on some path (`~s`): its
        // own post may feed that wait (`races.rs`, `signal_ordered`).
        if !wait {
            let waits = format!("-{s}@{init}");
            if !st.phases.iter().any(|p| *p.0 == *waits && p.1 > 0) {
                let poison: Name = format!("~{s}").into();
                if !st.phases.iter().any(|p| p.0 == poison) {
                    self.pass_phase(st, poison, false);
                }
            }
        }
        self.pass_phase(st, key, !wait);
    }

    /// A verdict on global `name` that reads the text of every function,
    /// judged once (kept in `cache`); `name` joins `text_names`, so that an
    /// edit of a function naming it walks again from scratch.
    pub(super) fn text_verdict<T: Copy>(
        &mut self,
        name: &Name,
        cache: impl Fn(&super::WalkData) -> &std::cell::RefCell<rustc_hash::FxHashMap<Name, T>>,
        judge: impl FnOnce(&Self, &[std::sync::Arc<FunctionSummary>]) -> T,
    ) -> T {
        if !self.d.text_names.contains(name) {
            self.d.text_names.push(name.clone());
            self.d.text_names.sort();
        }
        let known = cache(&self.d).borrow().get(name).copied();
        if let Some(v) = known {
            return v;
        }
        let sums: Vec<std::sync::Arc<FunctionSummary>> = self
            .prog
            .functions
            .values()
            .flatten()
            .map(|&g| self.summary(g))
            .collect();
        let v = judge(self, &sums);
        cache(&self.d).borrow_mut().insert(name.clone(), v);
        v
    }

    /// What the global semaphore `s` is (see the module doc), judged once
    /// from the text of every function ([`Walker::text_verdict`]).
    fn semaphore_verdict(&mut self, s: &Name) -> Verdict {
        self.text_verdict(
            s,
            |d| &d.semaphores,
            |w, sums| {
                let b = binary_semaphore(s, sums.iter().map(|x| &**x));
                // A signal's posts must all be seen by the walk: a function
                // that posts it and is used as a value may run where the
                // walk does not go (a signal handler).
                // A thread's start routine is walked as that thread.
                if !matches!(b, Verdict::Signal(_)) {
                    return b;
                }
                let mut names: Vec<Name> =
                    w.prog.global_inits.values().flatten().cloned().collect();
                for &g in w.prog.functions.values().flatten() {
                    names.extend(values_but_starts(&w.summary(g)));
                }
                let hidden = names
                    .iter()
                    .filter_map(|n| w.prog.functions_named(n))
                    .flatten()
                    .any(|&g| posts(&w.summary(g).ir.body, s));
                match hidden {
                    true => Verdict::No,
                    false => b,
                }
            },
        )
    }

    /// The semaphore of a readers' gate (see [`gate`]): an `if` with this
    /// test and these branches, on a global semaphore used as a
    /// reader-writer lock.
    pub(super) fn readers_gate(
        &mut self,
        test: &Test,
        then: &[Stmt],
        els: &[Stmt],
    ) -> Option<Name> {
        let (_, c, _) = gate_parts(test, then, els)?;
        let s = sem_of(c)?;
        self.prog.global(&s)?;
        (self.semaphore_verdict(&s) == Verdict::ReadersWriter).then_some(s)
    }
}

/// What a global semaphore is used as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Anything else: its calls order nothing.
    No,
    /// A mutex: `sem_wait` locks, `sem_post` unlocks.
    Mutex,
    /// A reader-writer lock: writers lock it as a mutex, and readers pass
    /// through gates on a count of readers (`if (!readers) sem_wait(&s);
    /// readers++;` .. `readers--; if (!readers) sem_post(&s);`, the count
    /// kept under a mutex): the first reader in takes it for all readers,
    /// the last one out gives it back. Between the gates a reader holds it
    /// shared.
    ReadersWriter,
    /// A semaphore only the `sem_*` calls name, every `sem_init` of which
    /// sets a constant count (the largest is kept), used otherwise than as
    /// a lock: a signal (`sem_init(&s, 0, 0)`; one thread posts when data
    /// is ready, others wait). Its posts order what precedes them before
    /// what follows enough waits (see `races.rs`).
    Signal(u8),
}

/// Is call `id` the wait of a readers' gate of `body` (see [`gate`])?
fn gate_call(body: &[Stmt], id: u32) -> bool {
    let mut hit = false;
    crate::visit::visit_stmts(body, &mut |st| {
        if let Some((_, c, true)) = gate(st) {
            hit |= c.id == id;
        }
    });
    hit
}

/// A readers' gate: `if (!count) sem_wait(&s);` (`true`) or `if (!count)
/// sem_post(&s);` (`false`), with its count and call.
fn gate(st: &Stmt) -> Option<(&Name, &Call, bool)> {
    match st {
        Stmt::If {
            test, then, els, ..
        } => gate_parts(test, then, els),
        _ => None,
    }
}

/// [`gate`] of an `if`'s parts.
fn gate_parts<'s>(
    test: &'s Test,
    then: &'s [Stmt],
    els: &'s [Stmt],
) -> Option<(&'s Name, &'s Call, bool)> {
    let Test::VarZero {
        var,
        zero_on_true: true,
    } = test
    else {
        return None;
    };
    let ([Stmt::Call(c)], []) = (then, els) else {
        return None;
    };
    match &c.callee {
        Callee::Direct(n) if &**n == "sem_wait" => Some((var, c, true)),
        Callee::Direct(n) if &**n == "sem_post" => Some((var, c, false)),
        _ => None,
    }
}

/// The global semaphore `&s` a call names first, if any.
/// The global whose address is `c`'s first argument (`sem_wait(&s)`,
/// `atomic_store(&ready, 1)`).
pub(super) fn sem_of(c: &Call) -> Option<Name> {
    match uncast(c.args.first()?) {
        Expr::AddrOf(x) => match &**x {
            Expr::Var(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Is global semaphore `s` a binary semaphore used as a mutex (see the
/// module doc), judging by the bodies of all functions of the program?
pub(super) fn binary_semaphore<'s>(
    s: &Name,
    functions: impl Iterator<Item = &'s FunctionSummary>,
) -> Verdict {
    let mut inits = 0;
    // The largest count any `sem_init` sets, and whether all are constants.
    let mut init_max: Option<i64> = Some(0);
    let mut all_one = true;
    let mut flow_ok = true;
    let mut counts: Vec<Name> = Vec::new();
    for f in functions {
        let body = &f.ir.body;
        let mut names = false;
        let mut ok = true;
        crate::visit::visit_stmts(body, &mut |st| match st {
            Stmt::Call(c) => {
                let sem_call = matches!(&c.callee, Callee::Direct(n) if SEM_CALLS.contains(&&**n));
                for (i, a) in c.args.iter().enumerate() {
                    if addr_of(a, s) {
                        names = true;
                        if !(sem_call && i == 0) {
                            ok = false;
                        }
                    }
                }
                if sem_call && sem_of(c).as_ref() == Some(s) {
                    names = true;
                    match &c.callee {
                        Callee::Direct(n) if &**n == "sem_init" => {
                            inits += 1;
                            match c.args.get(2).map(uncast) {
                                Some(Expr::Int(v)) if *v >= 0 => {
                                    all_one &= *v == 1;
                                    init_max = init_max.map(|m| m.max(*v));
                                }
                                _ => {
                                    all_one = false;
                                    init_max = None;
                                }
                            }
                        }
                        Callee::Direct(n) if matches!(&**n, "sem_trywait" | "sem_timedwait") => {
                            ok = false
                        }
                        _ => {}
                    }
                }
            }
            Stmt::Assign { rhs, .. } => {
                if addr_of(rhs, s) {
                    ok = false;
                }
            }
            _ => {}
        });
        if !ok {
            return Verdict::No;
        }
        if flow_ok
            && names
            && !matches!(
                flow_with_gotos(body, s, &mut counts),
                Ok(None | Some(false))
            )
        {
            flow_ok = false;
        }
    }
    counts.sort();
    counts.dedup();
    let signal = || match init_max {
        Some(v) => Verdict::Signal(v.min(4) as u8),
        None => Verdict::No,
    };
    match (inits > 0, counts.len()) {
        (false, _) => Verdict::No,
        (true, _) if !flow_ok || !all_one => signal(),
        (true, 0) => Verdict::Mutex,
        // One count of readers for every gate.
        (true, 1) => Verdict::ReadersWriter,
        _ => signal(),
    }
}

/// The names a function uses as values ([`super::store::value_names`]),
/// leaving out the start routine it hands to `pthread_create` or
/// `thrd_create`.
pub(super) fn values_but_starts(s: &FunctionSummary) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    let mut see = |e: &Expr| crate::visit::visit_names(e, &mut |n| out.push(n.clone()));
    crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
        Stmt::Assign { rhs, .. } => see(rhs),
        Stmt::Call(c) => {
            let start = match &c.callee {
                Callee::Direct(n) if &**n == "pthread_create" => Some(2),
                Callee::Direct(n) if &**n == "thrd_create" => Some(1),
                _ => None,
            };
            for (i, a) in c.args.iter().enumerate() {
                if Some(i) != start {
                    see(a);
                }
            }
        }
        Stmt::Return { value: Some(v), .. } => see(v),
        _ => {}
    });
    out.sort();
    out.dedup();
    out
}

/// Does a body post semaphore `s`?
fn posts(body: &[Stmt], s: &Name) -> bool {
    let mut found = false;
    crate::visit::visit_calls(body, &mut |c| {
        found |= matches!(&c.callee, Callee::Direct(n) if &**n == "sem_post")
            && sem_of(c).as_ref() == Some(s);
    });
    found
}

/// Does `e` take the address of `s` (anywhere inside)?
fn addr_of(e: &Expr, s: &Name) -> bool {
    match e {
        Expr::AddrOf(x) => matches!(&**x, Expr::Var(v) if v == s) || addr_of(x, s),
        Expr::Cast { value, .. } => addr_of(value, s),
        Expr::Field { base, .. } | Expr::Deref(base) | Expr::Offset(base) => addr_of(base, s),
        Expr::Index { base, .. } => addr_of(base, s),
        Expr::Choice(xs) => xs.iter().any(|x| addr_of(x, s)),
        _ => false,
    }
}

/// The states at labels: what the `goto`s to each label left (as far as a
/// pass has found them).
type Labels = rustc_hash::FxHashMap<Name, Option<bool>>;

/// Whether `s` is held at the end of a function body that starts not
/// holding it (see [`flow`]). A `goto` carries its state to its label, where
/// it must agree with the state of the code that falls into the label;
/// passes repeat until the labels' states are stable (a backward `goto` is
/// seen on the pass after its label).
fn flow_with_gotos(body: &[Stmt], s: &Name, counts: &mut Vec<Name>) -> Result<Option<bool>, ()> {
    let mut labels = Labels::default();
    for _ in 0..4 {
        let before = labels.clone();
        let end = flow(body, Some(false), s, &mut labels, counts)?;
        if labels == before {
            return Ok(end);
        }
    }
    Err(())
}

/// Whether `s` is held after `stmts`, from `held` (`None`: no path gets
/// there); an error where a path posts without holding it, waits while
/// holding it, or paths disagree (at a label too: see [`flow_with_gotos`]).
fn flow(
    stmts: &[Stmt],
    mut held: Option<bool>,
    s: &Name,
    labels: &mut Labels,
    counts: &mut Vec<Name>,
) -> Result<Option<bool>, ()> {
    let merge = |a: Option<bool>, b: Option<bool>| match (a, b) {
        (None, x) | (x, None) => Ok(x),
        (Some(x), Some(y)) if x == y => Ok(Some(x)),
        _ => Err(()),
    };
    for st in stmts {
        match st {
            // A label is reached by falling into it and by its `goto`s.
            Stmt::Label(l) => {
                let from_gotos = labels.get(l).copied().flatten();
                held = merge(held, from_gotos)?;
            }
            Stmt::Goto(l) => {
                if let Some(h) = held {
                    let at = labels.entry(l.clone()).or_insert(None);
                    *at = merge(*at, Some(h))?;
                }
                held = None;
            }
            Stmt::Call(c) if sem_of(c).as_ref() == Some(s) => {
                let Some(h) = held else { continue };
                match &c.callee {
                    Callee::Direct(n) if &**n == "sem_wait" => {
                        if h {
                            return Err(());
                        }
                        held = Some(true);
                    }
                    Callee::Direct(n) if &**n == "sem_post" => {
                        if !h {
                            return Err(());
                        }
                        held = Some(false);
                    }
                    _ => {}
                }
            }
            // A readers' gate (see [`Verdict::ReadersWriter`]): the first
            // reader in takes `s`, the last one out gives it back.
            st if gate(st).is_some_and(|(_, c, _)| sem_of(c).as_ref() == Some(s)) => {
                let Some((count, _, wait)) = gate(st) else {
                    continue;
                };
                counts.push(count.clone());
                let Some(h) = held else { continue };
                if h == wait {
                    return Err(());
                }
                held = Some(wait);
            }
            Stmt::If {
                cond, then, els, ..
            } => {
                let c = flow(cond, held, s, labels, counts)?;
                held = merge(
                    flow(then, c, s, labels, counts)?,
                    flow(els, c, s, labels, counts)?,
                )?;
            }
            Stmt::Loop { cond, body, .. } => {
                // The body must leave the state as it found it (breaks and
                // continues included: they may not change it, checked by
                // requiring no semaphore call in a loop that holds across).
                let c = flow(cond, held, s, labels, counts)?;
                let after = flow(body, c, s, labels, counts)?;
                if after.is_some() && after != c {
                    return Err(());
                }
                if mentions_sem(body, s) && (has_jump(body) || c != held) {
                    return Err(());
                }
            }
            Stmt::Switch { cond, arms, .. } => {
                if mentions_sem(cond, s) || arms.iter().any(|a| mentions_sem(a, s)) {
                    return Err(());
                }
                // No arm changes the state; their `goto`s and labels count.
                for a in arms {
                    let end = flow(a, held, s, labels, counts)?;
                    held = merge(held, end)?;
                }
            }
            Stmt::Return { .. } => {
                if held == Some(true) {
                    return Err(());
                }
                held = None;
            }
            Stmt::Break | Stmt::Continue => {
                // Leaves the enclosing loop in this state: the loop checks
                // that nothing in it touches the semaphore across a jump.
                held = None;
            }
            _ => {}
        }
    }
    Ok(held)
}

fn mentions_sem(stmts: &[Stmt], s: &Name) -> bool {
    let mut hit = false;
    crate::visit::visit_calls(stmts, &mut |c| {
        if sem_of(c).as_ref() == Some(s) {
            hit = true;
        }
    });
    hit
}

fn has_jump(stmts: &[Stmt]) -> bool {
    let mut hit = false;
    crate::visit::visit_stmts(stmts, &mut |st| {
        if matches!(
            st,
            Stmt::Break | Stmt::Continue | Stmt::Return { .. } | Stmt::Goto(_)
        ) {
            hit = true;
        }
    });
    hit
}
