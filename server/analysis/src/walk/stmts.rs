//! The statement interpreter: statement lists, `if` with trylock and
//! branch-fact splitting, loops to a bounded fixed point, `switch`, and
//! `setjmp`/`longjmp`. Abrupt exits (`break`, `continue`, `return`) travel
//! in an [`Out`].
//!
//! Owns `WalkData::loops`, `loop_depth`, `steps` and `jmps`. Invariants:
//! every statement visited counts against the
//! [`STEP_BUDGET`](super::STEP_BUDGET); before a statement runs,
//! `WalkData::cur_ptrs` is its state's flow-sensitive pointers; the state a
//! `longjmp` leaves with flows to the matching `setjmp`'s nonzero return
//! and bumps `WalkData::longjmps`, which keeps the context out of the memo.

use super::branch_facts::{flag_of, known_value, result_nonzero};
use super::frames::Frame;
use super::state::{join, join_exit, Ptrs, State, TryKey};
use super::{Walker, MAX_LOOP_ITERS, MAX_TRACKED, STEP_BUDGET};
use crate::model::*;
use racelens_syntax::{AccessKind, Call, Callee, Expr, Name, Stmt, Test};
use std::sync::Arc;

#[derive(Default)]
pub(super) struct Out {
    pub(super) next: Option<State>,
    brk: Abrupt,
    cont: Abrupt,
    ret: Abrupt,
}

/// The state where a `break`, `continue` or `return` leaves: boxed, since
/// most walks of a statement list leave none of them and an [`Out`] moves
/// on every statement.
type Abrupt = Option<Box<State>>;

/// [`join`] of boxed states.
fn join_b(a: Abrupt, b: Abrupt) -> Abrupt {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => join(Some(*a), Some(*b)).map(Box::new),
    }
}

/// [`join_exit`] of boxed states: returns meeting.
fn join_ret(a: Abrupt, b: Abrupt) -> Abrupt {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => join_exit(Some(*a), Some(*b)).map(Box::new),
    }
}

fn unbox(a: Abrupt) -> Option<State> {
    a.map(|b| *b)
}

/// Library functions that save the calling environment, and those that
/// return to it (the state at `longjmp` flows to `setjmp`'s nonzero return).
const SETJMP: &[&str] = &["setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp"];

pub(super) const LONGJMP: &[&str] = &["longjmp", "_longjmp", "siglongjmp", "__longjmp_chk"];

/// A `setjmp` whose zero-return branch is being walked.
pub(super) struct JmpFrame {
    /// The `jmp_buf` (empty when unresolved: any `longjmp` may return here).
    pub(super) env: Vec<LocKey>,
    /// The state right after `setjmp` returned 0, for the frame's own facts.
    pub(super) at: State,
    /// `node_stack` depth of the function that called `setjmp`.
    pub(super) depth: usize,
    /// The states of the `longjmp`s that returned here.
    states: Option<State>,
}

/// A call of `pthread_exit` or `thrd_exit` (the library's, modelled as an
/// exit).
fn ends_thread(fr: &Frame, c: &Call) -> bool {
    matches!(&c.callee, Callee::Direct(n) if matches!(&**n, "pthread_exit" | "thrd_exit"))
        && matches!(
            fr.summary.models.get(&c.id),
            Some(crate::config::CallModel::Exit)
        )
}

/// A test of the result of a blocking lock (`if (pthread_mutex_lock(&m))`,
/// `err = pthread_mutex_lock(&m); if (err)`): whether its failure branch is
/// the then-branch, and the locks it takes. A blocking lock (unlike a
/// trylock) is already held when its result is tested.
fn blocking_failure(fr: &Frame, test: &Test, st: &State) -> Option<(bool, Vec<Held>)> {
    // An equality flag (`mode.==1`) names no lock result: nothing matches.
    let (key, zero_on_true) = flag_of(fr, test)?;
    let held: Vec<Held> = st
        .tries
        .iter()
        .filter(|(k, h, nz)| *k == key && !*nz && st.must.0.iter().any(|m| m.lock == h.lock))
        .map(|(_, h, _)| h.clone())
        .collect();
    (!held.is_empty()).then_some((!zero_on_true, held))
}

/// Every path out of the failure branch of a blocking lock holds the lock
/// again: the accesses in the branch are unprotected, but the code after it
/// runs as the program assumes, with the lock held (a default mutex does not
/// fail; Goblint assumes the same unless told `sem.lock.fail`).
fn relock_out(o: &mut Out, held: &[Held]) {
    let relock = |st: &mut State| {
        for h in held {
            st.must.insert(h.clone());
            st.may.insert(h.clone());
        }
    };
    if let Some(st) = o.next.as_mut() {
        relock(st);
    }
    for a in [&mut o.brk, &mut o.cont, &mut o.ret] {
        if let Some(st) = a.as_mut() {
            relock(st);
        }
    }
}

fn merge_abrupt(out: &mut Out, o: &Out) {
    out.brk = join_b(out.brk.take(), o.brk.clone());
    out.cont = join_b(out.cont.take(), o.cont.clone());
    out.ret = join_ret(out.ret.take(), o.ret.clone());
}

impl<'a> Walker<'a> {
    /// The innermost loop around the current statement in the current
    /// function, with its range when it is a counting loop.
    pub(super) fn frame_loop(&self) -> Option<&Option<Name>> {
        self.d
            .loops
            .last()
            .filter(|l| l.depth == self.d.stack.len())
            .map(|l| &l.bound)
    }

    pub(super) fn walk_stmts(&mut self, fr: &Frame, stmts: &[Stmt], st: State) -> Out {
        // Only a `goto` asks where labels are (`label_ahead`).
        if !fr.base.has_goto {
            return self.walk_list(fr, stmts, st, None);
        }
        let labels: Vec<(usize, Name)> = stmts
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Stmt::Label(l) => Some((i, l.clone())),
                _ => None,
            })
            .collect();
        let mine = (!labels.is_empty()).then(|| {
            let at = (self.d.gotos.len(), self.d.loop_depth);
            self.d.labels_ahead.push((at, labels, 0));
            self.d.labels_ahead.len() - 1
        });
        let out = self.walk_list(fr, stmts, st, mine);
        if mine.is_some() {
            self.d.labels_ahead.pop();
        }
        out
    }

    /// Is label `l` later in a statement list of the current function that
    /// the walk is in, after the statement walked there now, with no loop
    /// between? Then the walk meets it by going on, in this same pass. (Out
    /// of a loop, the label would see only the passes' states, not the
    /// threads earlier iterations started: the `goto` falls through.)
    fn label_ahead(&self, l: &Name) -> bool {
        let here = (self.d.gotos.len(), self.d.loop_depth);
        self.d
            .labels_ahead
            .iter()
            .rev()
            .take_while(|e| e.0 == here)
            .any(|(_, labels, at)| labels.iter().any(|(p, n)| p > at && n == l))
    }

    fn walk_list(&mut self, fr: &Frame, stmts: &[Stmt], st: State, mine: Option<usize>) -> Out {
        let mut out = Out::default();
        let mut cur = Some(st);
        for (i, s) in stmts.iter().enumerate() {
            if let Some(m) = mine {
                self.d.labels_ahead[m].2 = i;
            }
            // A label is reached by falling into it and by the `goto`s to
            // it walked before it (a cleanup block after a `return`).
            if let Stmt::Label(l) = s {
                if let Some(g) = self.d.gotos.last_mut().and_then(|g| g.remove(l)) {
                    cur = join(cur, Some(g));
                }
                continue;
            }
            let Some(state) = cur.take() else {
                // Past a `return`: a later label here may still be reached.
                if self.d.gotos.last().is_some_and(|g| !g.is_empty()) {
                    continue;
                }
                break;
            };
            if self.d.bailed.is_some() {
                break;
            }
            if !Arc::ptr_eq(&self.d.cur_ptrs.borrow(), &state.ptrs) {
                *self.d.cur_ptrs.borrow_mut() = state.ptrs.clone();
            }
            self.d.steps += 1;
            if let Some(&n) = self.d.node_stack.last() {
                let node = &mut self.d.nodes[n as usize];
                node.steps += 1;
                // Path-correlated locks and spawns read the locksets and
                // thread facts at branches and returns.
                if !(state.lock_guards.is_empty()
                    && state.sym_guards.is_empty()
                    && state.guards.is_empty())
                {
                    node.opaque = true;
                }
            }
            if self.d.steps > STEP_BUDGET {
                self.d.exhausted = true;
                self.mark_incomplete(fr.fid, "budget exceeded (step budget exceeded)");
                cur = Some(state);
                break;
            }
            // `A[i] = v`: the write, then the store (see `inject.rs`).
            self.d.store_fresh = false;
            if let (Stmt::Access(a), Some(Stmt::Assign { lhs, rhs })) = (s, stmts.get(i + 1)) {
                if a.kind == racelens_syntax::AccessKind::Write && *lhs == a.place {
                    self.d.store_fresh = self.stores_fresh(fr, lhs, rhs, &state);
                }
            }
            cur = match s {
                Stmt::If {
                    cond,
                    test,
                    then,
                    els,
                } => self.walk_if(fr, cond, test, then, els, state, &mut out),
                Stmt::Loop {
                    cond,
                    test,
                    body,
                    do_while,
                    infinite,
                    bound,
                    var,
                    ..
                } => {
                    let end = self.loop_end_cell(fr, cond, bound.as_ref(), var.as_ref());
                    self.d.loops.push(super::WalkedLoop {
                        depth: self.d.stack.len(),
                        bound: bound.clone(),
                        var: var.clone(),
                        end,
                        active: state.active.clone(),
                    });
                    let r = self.walk_loop(fr, cond, test, body, *do_while, *infinite, state);
                    self.d.loops.pop();
                    out.ret = join_ret(out.ret.take(), r.ret);
                    r.next
                }
                Stmt::Switch {
                    cond,
                    arms,
                    zero,
                    var,
                    default,
                } => {
                    // On a variable known zero, only the arm zero enters runs.
                    let only = match var {
                        Some(v) if self.known_zero(fr, v) => Some(zero.or(*default)),
                        _ => None,
                    };
                    self.walk_switch(fr, cond, arms, *zero, only, state, &mut out)
                }
                Stmt::Return { value, .. } => {
                    let state = self.returning(fr, value.as_ref(), state);
                    out.ret = join_ret(out.ret.take(), Some(Box::new(state)));
                    None
                }
                // `pthread_exit(v)` in a thread's start routine is its
                // `return v` (POSIX: returning from it is an implicit
                // `pthread_exit`). Deeper in its calls it ends the path, and
                // what the thread leaves running there is noted for
                // `Thread::leaks` (a change to the whole walk's state). In
                // `main` it is no return and ends the path. Either way the
                // node cannot stand for a context at another depth.
                Stmt::Call(c) if ends_thread(fr, c) => {
                    self.opaque();
                    match (self.d.thread != 0, self.d.stack.len() == 1) {
                        (true, true) => {
                            let state = self.returning(fr, c.args.first(), state);
                            out.ret = join_ret(out.ret.take(), Some(Box::new(state)));
                            None
                        }
                        (true, false) => {
                            self.effect();
                            self.d.exit_active = Some(match self.d.exit_active.take() {
                                Some(a) => a.union(&state.active),
                                None => state.active.clone(),
                            });
                            self.walk_simple(fr, s, state)
                        }
                        (false, _) => self.walk_simple(fr, s, state),
                    }
                }
                Stmt::Break => {
                    out.brk = join_b(out.brk.take(), Some(Box::new(state)));
                    None
                }
                Stmt::Continue => {
                    out.cont = join_b(out.cont.take(), Some(Box::new(state)));
                    None
                }
                // Everything else does not recurse into statements: its
                // (large) frame stays off the nesting path, so deep nesting
                // fits the stack.
                _ => self.walk_simple(fr, s, state),
            };
        }
        out.next = cur;
        out
    }

    /// The state a `return` (of `value`) leaves with.
    fn returning(&mut self, fr: &Frame, value: Option<&Expr>, mut state: State) -> State {
        if let Some(v) = value {
            self.note_held_addr(fr, v);
            self.note_returned(fr, v, &mut state);
            self.note_return_value(fr, v, &mut state);
            // Whether the result is zero on this path: where returns
            // disagree on it and on a lock, the caller's test of the result
            // says whether the lock is held (`if (!p) return NULL; lock();
            // return p;`).
            let ret: Name = super::frames::RETURNED.into();
            state.conds.retain(|c| c.0 != ret);
            if let Some(nz) = result_nonzero(fr, v, &state) {
                state.conds.push((ret, nz));
            }
        }
        state
    }

    /// A function's exit state as its callers see it (and as its node
    /// keeps it): pending trylock results, its own local pointers (and
    /// which of them held a refreshed site's newest object) and its
    /// flag-guarded locks on its locals mean nothing after the return
    /// (callers get theirs back), and keeping them would make equal exits
    /// differ.
    pub(super) fn exit_state(&self, out: Out) -> Option<State> {
        let mut exit = join_exit(out.next, unbox(out.ret));
        if let Some(e) = exit.as_mut() {
            // Tests of lazily set globals made in the returning frame.
            super::once::leave_frames(e, self.d.stack.len());
            e.tries.clear();
            // Of its local pointers, only what it returns (on every path
            // that returns) stays: the caller's result (see `calls.rs`).
            // And the member cells of what its parameters point to, which
            // go back to the caller where it handed them (`member_cells.rs`).
            if e.ptrs.iter().any(|(x, _)| &**x != super::frames::RETURNED) {
                let kept: Vec<_> = e
                    .ptrs
                    .iter()
                    .filter(|(x, _)| {
                        &**x == super::frames::RETURNED || super::member_cells::is_arrow_cell(x)
                    })
                    .cloned()
                    .collect();
                e.ptrs = match kept.is_empty() {
                    true => Ptrs::default(),
                    false => Arc::new(kept),
                };
            }
            // Which of its locals held a newest object: only what it
            // returned is the caller's concern.
            if !e.newest.is_empty() {
                e.newest.retain(|(v, _)| &**v == super::frames::RETURNED);
            }
            let prog = self.prog;
            let ret = super::frames::RETURNED;
            e.lock_guards
                .retain(|g| &*g.0 == ret || prog.global(&g.0).is_some());
            e.sym_guards.retain(|g| &*g.0 == ret);
            // Facts on its own locals and calls' results mean nothing to
            // the caller (whose locals may share their names). Whether the
            // result is zero, where every return agrees (the join keeps
            // only common facts), stays: the call site names it after its
            // call (`calls.rs`).
            e.conds.retain(|c| &*c.0 == ret || self.names_global(&c.0));
            e.guards.retain(|g| &*g.1 == ret || self.names_global(&g.1));
        }
        exit
    }

    /// `if`: each phase in its own scope, so that the frame on the nesting
    /// path holds one outcome at a time.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn walk_if(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        test: &Test,
        then: &[Stmt],
        els: &[Stmt],
        state: State,
        out: &mut Out,
    ) -> Option<State> {
        if let Test::CallZero { id, zero_on_true } = test {
            if let Some(env) = self.setjmp_env(fr, cond, Some(*id)) {
                let (zero, nonzero) = if *zero_on_true {
                    (then, els)
                } else {
                    (els, then)
                };
                return self.walk_setjmp(fr, cond, env, &[zero], &[nonzero], false, state, out);
            }
        }
        let cs = self.walk_cond(fr, cond, state, out)?;
        // A global that holds zero for the whole run (`constants.rs`), or
        // a parameter given zero that nothing changes (`Frame::zeros`):
        // only the branch taken on zero runs. A counting loop's counter from
        // zero, past the loop's first pass: only the branch taken on nonzero
        // (`if (i == 0) cfg.delay = ..;` runs before the first thread the
        // loop creates, not after it).
        if let Test::VarZero { var, zero_on_true } = test {
            let depth = self.d.stack.len();
            let zero = self.known_zero(fr, var);
            let nonzero = !zero
                && (fr.nonzeros.contains(var)
                    || self
                        .d
                        .counted_past_first
                        .iter()
                        .any(|(d, v)| *d == depth && v == var));
            if zero || nonzero {
                let taken = if *zero_on_true == zero { then } else { els };
                let o = self.walk_stmts(fr, taken, cs);
                merge_abrupt(out, &o);
                return o.next;
            }
            // The readers' gate of a semaphore used as a reader-writer lock
            // (`if (!readers) sem_wait(&s);`): every reader holds `s`
            // shared from here, whichever reader took it (`semaphores.rs`).
            if self.readers_gate(test, then, els).is_some() {
                let o = self.walk_stmts(fr, then, cs);
                merge_abrupt(out, &o);
                return o.next;
            }
        }
        // `g > 0` of a global that holds zero for the whole run (or another
        // variable known zero, as above): the then-branch never runs (`if
        // (verbose > 0) log(..)`).
        if let Test::Positive { var } = test {
            if self.known_zero(fr, var) {
                let o = self.walk_stmts(fr, els, cs);
                merge_abrupt(out, &o);
                return o.next;
            }
        }
        // Any other comparison with a constant (`n < 0`, `server == 1U`)
        // of a variable known to be zero: the branch zero takes.
        if let Test::Compare {
            var, then_on_zero, ..
        } = test
        {
            if self.known_zero(fr, var) {
                let taken = if *then_on_zero { then } else { els };
                let o = self.walk_stmts(fr, taken, cs);
                merge_abrupt(out, &o);
                return o.next;
            }
        }
        // A global set lazily and never cleared, known set on this path
        // (`once.rs`): the branch taken on zero never runs.
        if let Some(zero_on_true) = self.lazy_known_set(fr, test, &cs) {
            let taken = if zero_on_true { els } else { then };
            let o = self.walk_stmts(fr, taken, cs);
            merge_abrupt(out, &o);
            return o.next;
        }
        // A local (or a call's result) whose value is known on this path:
        // only the branch it takes runs (`r = 1; .. if (r)`, the result of
        // a function whose returns all agree, `pthread_equal(t, self)` of a
        // child's id, see `calls.rs`).
        if let Some(nonzero) = known_value(fr, test, &cs) {
            let (_, zero_on_true) = flag_of(fr, test).expect("known_value reads only flags");
            let (taken, skipped) = match nonzero != zero_on_true {
                true => (then, els),
                false => (els, then),
            };
            // A `goto` may enter the skipped branch at a label in it.
            let mut label = false;
            racelens_syntax::visit_stmts(skipped, &mut |s| label |= matches!(s, Stmt::Label(_)));
            if !label {
                let o = self.walk_stmts(fr, taken, cs);
                merge_abrupt(out, &o);
                return o.next;
            }
        }
        let relock = blocking_failure(fr, test, &cs);
        // A test of a once flag under a lock (`once.rs`).
        let marks = self.once_marks(fr, test, &cs);
        let (mut t, mut e) = self.split(fr, test, cs);
        if let Test::CallZero { .. } | Test::VarZero { .. } = test {
            let (zero, nonzero) = match zero_on_true(test) {
                true => (&mut t, &mut e),
                false => (&mut e, &mut t),
            };
            // The child of a `fork()` (`fork.rs`).
            zero.forked |= self.tests_fork(fr, test);
            // A branch taken on an atomic flag read set (`flags.rs`).
            self.flag_wait(fr, cond, test, nonzero);
        }
        self.lazy_marks(fr, test, then, els, &mut t, &mut e);
        if let Test::VarZero { zero_on_true, .. } = test {
            let zero = if *zero_on_true { &mut t } else { &mut e };
            for (inside, _) in &marks {
                super::once::mark(zero, inside);
            }
        }
        let n1 = {
            let mut o1 = self.walk_stmts(fr, then, t);
            if let Some((true, held)) = &relock {
                relock_out(&mut o1, held);
            }
            merge_abrupt(out, &o1);
            o1.next
        };
        let n2 = {
            let mut o2 = self.walk_stmts(fr, els, e);
            if let Some((false, held)) = &relock {
                relock_out(&mut o2, held);
            }
            merge_abrupt(out, &o2);
            o2.next
        };
        let mut next = join(n1, n2);
        if let (Some(st), false) = (next.as_mut(), marks.is_empty()) {
            super::once::leave_branches(st);
            for (_, past) in &marks {
                super::once::mark(st, past);
            }
        }
        next
    }

    /// The `jmp_buf` of the `setjmp` call in `cond` (the one numbered `id`,
    /// when given), if `cond` calls it.
    #[inline(never)]
    fn setjmp_env(&self, fr: &Frame, cond: &[Stmt], id: Option<u32>) -> Option<Vec<LocKey>> {
        cond.iter().find_map(|s| match s {
            Stmt::Call(c) if id.is_none_or(|i| i == c.id) => match &c.callee {
                Callee::Direct(n)
                    if SETJMP.contains(&&**n) && self.prog.functions_named(n).is_none() =>
                {
                    Some(
                        c.args
                            .first()
                            .map(|a| self.place(fr, a, 0))
                            .unwrap_or_default(),
                    )
                }
                _ => None,
            },
            _ => None,
        })
    }

    /// `if (!setjmp(env)) A else B`: `A` runs from the state after the
    /// call; `B` runs from the states of the `longjmp(env)`s `A` reaches, or,
    /// when it reaches none, from the state after the call too (a later
    /// `longjmp` may return there). `switch (setjmp(env))` is the same with
    /// the `case 0:` arm as `A` and the other arms (or none) as `B`.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn walk_setjmp(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        env: Vec<LocKey>,
        zero: &[&[Stmt]],
        nonzero: &[&[Stmt]],
        switch: bool,
        state: State,
        out: &mut Out,
    ) -> Option<State> {
        let cs = self.walk_cond(fr, cond, state, out)?;
        self.opaque();
        self.d.jmps.push(JmpFrame {
            env,
            at: cs.clone(),
            depth: self.d.node_stack.len(),
            states: None,
        });
        let mut acc = None;
        let mut arm = |w: &mut Self, stmts: &[Stmt], from: State, acc: &mut Option<State>| {
            let o = w.walk_stmts(fr, stmts, from);
            if switch {
                out.ret = join_ret(out.ret.take(), o.ret);
                out.cont = join_b(out.cont.take(), o.cont);
                *acc = join(acc.take(), join(o.next, unbox(o.brk)));
            } else {
                merge_abrupt(out, &o);
                *acc = join(acc.take(), o.next);
            }
        };
        for stmts in zero {
            arm(self, stmts, cs.clone(), &mut acc);
        }
        let jumped = self.d.jmps.pop().and_then(|j| j.states);
        let from = jumped.unwrap_or(cs);
        for stmts in nonzero {
            arm(self, stmts, from.clone(), &mut acc);
        }
        if switch {
            // No arm matches the value.
            acc = join(acc, Some(from));
        }
        acc
    }

    /// `longjmp(env, v)`: the path ends here and its state returns from the
    /// innermost `setjmp(env)` being walked. A jump from a callee keeps the
    /// thread-wide facts (locks, threads) and takes the `setjmp` caller's own
    /// frame facts back.
    #[inline(never)]
    pub(super) fn longjmp(&mut self, fr: &Frame, c: &Call, st: State) {
        self.d.longjmps += 1;
        self.opaque();
        if self.d.rewalk.is_some() {
            // The `setjmp` it returns to is outside the re-walked node.
            self.d.bailed = Some("jumps with longjmp");
            return;
        }
        // Delivering a state to a `setjmp` outside the node is an effect: a
        // re-walk that drops this jump must not be taken.
        self.effect();
        let env = c
            .args
            .first()
            .map(|a| self.place(fr, a, 0))
            .unwrap_or_default();
        let Some(k) = self.d.jmps.iter().rposition(|j| {
            env.is_empty() || j.env.is_empty() || j.env.iter().any(|e| env.contains(e))
        }) else {
            return;
        };
        let mut s = st;
        if self.d.node_stack.len() != self.d.jmps[k].depth {
            let _ = self.stash_frame_facts(&mut s);
            let mut at = self.d.jmps[k].at.clone();
            s.tries = std::mem::take(&mut at.tries);
            self.stash_frame_facts(&mut at).restore(&mut s, &[]);
        }
        let j = &mut self.d.jmps[k];
        j.states = join(j.states.take(), Some(s));
    }

    /// The condition of an `if` or `switch`: the state after it, with its
    /// abrupt exits (a `return` in a statement expression) merged into `out`.
    fn walk_cond(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        state: State,
        out: &mut Out,
    ) -> Option<State> {
        let c = self.walk_stmts(fr, cond, state);
        merge_abrupt(out, &c);
        c.next
    }

    /// `switch`: each arm may run, from the state after the condition;
    /// `break` leaves the switch. `only`, when the value switched on is
    /// known to be zero: the arm it enters (and the arms it falls into), or
    /// none (`Some(None)`).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn walk_switch(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        arms: &[Vec<Stmt>],
        zero: Option<usize>,
        only: Option<Option<usize>>,
        state: State,
        out: &mut Out,
    ) -> Option<State> {
        if let Some(z) = zero {
            if let Some(env) = self.setjmp_env(fr, cond, None) {
                let rest: Vec<&[Stmt]> = (0..arms.len())
                    .filter(|&k| k != z)
                    .map(|k| &arms[k][..])
                    .collect();
                let zero = [&arms[z][..]];
                return self.walk_setjmp(fr, cond, env, &zero, &rest, true, state, out);
            }
        }
        let cs = self.walk_cond(fr, cond, state, out)?;
        let mut acc = Some(cs.clone());
        // `case 0:` of `switch (fork())` is the child (`fork.rs`).
        let child = zero.filter(|_| self.fork_switch(fr, cond));
        let walked = |k: usize| match only {
            None => true,
            Some(None) => false,
            // The arm entered, and those it falls into.
            Some(Some(first)) => {
                k >= first
                    && arms[first..k].iter().all(|a| {
                        !matches!(
                            a.last(),
                            Some(
                                Stmt::Break | Stmt::Return { .. } | Stmt::Goto(_) | Stmt::Continue
                            )
                        )
                    })
            }
        };
        for (k, arm) in arms.iter().enumerate() {
            if !walked(k) {
                continue;
            }
            let mut st = cs.clone();
            st.forked |= child == Some(k);
            let o = self.walk_stmts(fr, arm, st);
            out.ret = join_ret(out.ret.take(), o.ret);
            out.cont = join_b(out.cont.take(), o.cont);
            acc = join(acc, join(o.next, unbox(o.brk)));
        }
        acc
    }

    /// One statement that holds no statements (access, assignment, call,
    /// declaration, goto).
    #[inline(never)]
    fn walk_simple(&mut self, fr: &Frame, s: &Stmt, state: State) -> Option<State> {
        match s {
            Stmt::Access(a) => {
                // `p[i]` reads the pointer `p` too (the lowering cannot tell
                // a pointer from an array; `p->f` records its read of `p`).
                for x in indexed_vars(&a.place) {
                    let v = Expr::Var(x.clone());
                    if self
                        .type_of(fr, &v, 0)
                        .is_some_and(|t| t.pointer > 0 && !t.array)
                    {
                        self.record(fr, &v, AccessKind::Read, a.span, &state, true);
                    }
                }
                // An array named as a value is its address (C11 6.3.2.1):
                // `p = s->name` reads no memory.
                let decays = a.kind == AccessKind::Read
                    && self.type_of(fr, &a.place, 0).is_some_and(|t| t.array);
                if !decays {
                    self.record(fr, &a.place, a.kind, a.span, &state, true);
                }
                let mut state = state;
                if a.kind == AccessKind::Write {
                    self.forget_written_flags(fr, &a.place, &mut state);
                    self.drop_member_cells(fr, &a.place, &mut state);
                }
                Some(state)
            }
            Stmt::Assign {
                lhs,
                rhs: Expr::CallResult(id),
            } if self.d.thread == 0 && self.is_self_id(fr, *id) => {
                self.main_tid_at(fr, lhs);
                Some(state)
            }
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs: rhs @ Expr::CallResult(id),
            } => {
                let mut state = state;
                if let Some((h, nz)) = state
                    .tries
                    .iter()
                    .find(|(k, _, _)| *k == TryKey::Call(*id))
                    .map(|(_, h, nz)| (h.clone(), *nz))
                {
                    state.tries.push((TryKey::Var(x.clone()), h, nz));
                }
                // What followed from the call's result now follows from `x`.
                let flag = super::spawn::call_flag(*id);
                if fr.locals.get(x).is_some_and(|t| !t.is_static) {
                    state.conds.retain(|c| &c.0 != x);
                    let known = state.conds.iter().find(|c| c.0 == flag).map(|c| c.1);
                    if let (Some(nz), false) = (known, fr.address_taken.contains(x)) {
                        state.conds.push((x.clone(), nz));
                    }
                }
                for g in state.guards.iter_mut().filter(|g| g.1 == flag) {
                    g.1 = x.clone();
                }
                for h in state.handed.iter_mut().filter(|h| h.0 == flag) {
                    h.0 = x.clone();
                }
                state.lock_guards.retain(|g| &g.0 != x);
                for g in state.lock_guards.iter_mut().filter(|g| g.0 == flag) {
                    g.0 = x.clone();
                }
                state.lock_guards.sort();
                state.sym_guards.retain(|g| &g.0 != x && &g.2 .0 != x);
                for g in state.sym_guards.iter_mut().filter(|g| g.0 == flag) {
                    g.0 = x.clone();
                }
                state.sym_guards.sort();
                if !fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false) {
                    self.escape(fr, rhs, &mut state);
                } else if fr.address_taken.contains(x) {
                    // A local whose address is taken holds what it is
                    // given: it goes where that address goes.
                    self.store_pointer(fr, &Expr::Var(x.clone()), rhs, &mut state);
                    self.note_local_cell(fr, x, rhs, &state);
                }
                self.retag(fr, x, rhs, &mut state);
                self.assign_ptr(fr, x, rhs, &mut state);
                self.lazy_assigned(fr, &Expr::Var(x.clone()), &mut state);
                Some(state)
            }
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } if fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false) => {
                let mut state = state;
                // A constant (or a local whose value this path knows)
                // assigned to a local no pointer reaches is what the local
                // holds until its next assignment.
                let known = match super::uncast(rhs) {
                    Expr::Int(n) => Some(*n != 0),
                    Expr::Var(y) => state.conds.iter().find(|c| &c.0 == y).map(|c| c.1),
                    _ => None,
                };
                state.conds.retain(|c| &c.0 != x);
                if let (Some(nz), false) = (known, fr.address_taken.contains(x)) {
                    state.conds.push((x.clone(), nz));
                }
                state.guards.retain(|g| &g.1 != x);
                state.lock_guards.retain(|g| &g.0 != x);
                state.sym_guards.retain(|g| &g.0 != x);
                self.note_count(fr, &Expr::Var(x.clone()), rhs, &mut state);
                self.retag(fr, x, rhs, &mut state);
                self.note_held_addr(fr, rhs);
                if fr.address_taken.contains(x) {
                    self.store_pointer(fr, &Expr::Var(x.clone()), rhs, &mut state);
                    self.note_local_cell(fr, x, rhs, &state);
                }
                // A local struct's function pointer members (`struct job j
                // = q->jobs[head]; j.fn(j.arg)`).
                let local = Expr::Var(x.clone());
                if let Some(ty) = self.struct_type(fr, &local) {
                    self.store_member_functions(fr, &local, rhs, &ty, 0);
                }
                self.assign_ptr(fr, x, rhs, &mut state);
                Some(state)
            }
            Stmt::Assign { lhs, rhs } => {
                // Storing a pointer anywhere but a local publishes it,
                // unless it goes into a fresh object (see `private.rs`).
                let mut state = state;
                self.note_held_store(fr, lhs, rhs, &state);
                self.note_own_cell(fr, lhs, rhs, &mut state);
                let nested = self.fresh_into_cell(fr, lhs, rhs, &state);
                self.store_pointer(fr, lhs, rhs, &mut state);
                self.assign_member_cell(fr, lhs, rhs, &mut state);
                if let Some((n, sites)) = nested {
                    state.set_newest_held(&n, sites);
                }
                self.store_functions(fr, lhs, rhs);
                self.note_count(fr, lhs, rhs, &mut state);
                self.lazy_assigned(fr, lhs, &mut state);
                super::locks::end_markers_at_store(lhs, &mut state);
                Some(state)
            }
            // A `goto` takes its state to its label when the walk meets the
            // label later in this function. Unless the label is later in a
            // list the walk is in (`label_ahead`: CIL's `goto __Cont` to
            // the end of a loop body), it also goes on as if it fell
            // through (the label may come before it, or sit inside a block
            // the walk enters only by falling into it): possible false
            // alarms on the code it skips, never a path lost.
            Stmt::Goto(l) => {
                let ahead = self.label_ahead(l);
                if let Some(g) = self.d.gotos.last_mut() {
                    let joined = match g.remove(l) {
                        Some(old) => join(Some(old), Some(state.clone())),
                        None => Some(state.clone()),
                    };
                    if let Some(j) = joined {
                        g.insert(l.clone(), j);
                    }
                    if ahead {
                        return None;
                    }
                }
                Some(state)
            }
            Stmt::Decl(_) | Stmt::Label(_) => Some(state),
            Stmt::Call(c) => {
                self.note_held_call(fr, c, &state);
                let bodies = fr
                    .calls
                    .get(&c.id)
                    .is_some_and(|callee| !self.functions_of(fr, callee).is_empty());
                let mut out = self.call(fr, c, state);
                if let Some(s) = out.as_mut() {
                    self.cells_after_call(fr, c, bodies, s);
                }
                out
            }
            _ => Some(state),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn walk_loop(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        test: &Test,
        body: &[Stmt],
        do_while: bool,
        infinite: bool,
        st: State,
    ) -> Out {
        // A loop that runs while a variable known to be zero is nonzero
        // (`for (p = parent; p; p = p->parent)` of `add(NULL, ..)`) never
        // runs its body.
        if let Test::VarZero {
            var,
            zero_on_true: false,
        } = test
        {
            if !do_while && !infinite && fr.zeros.contains(var) {
                return self.walk_stmts(fr, cond, st);
            }
        }
        self.d.loop_depth += 1;
        let mut out = Out::default();
        let mut head = st;
        let mut exits: Option<State> = None;
        // The state in which the loop's test first fails (the loop runs no
        // iteration): an exit only when the body never comes back to the
        // test, so that the loop is an `if` in all but name.
        let mut no_iteration: Option<State> = None;
        // Loops are assumed to run at least once (RacerF's unfolding): exits
        // are taken after the body, except that a trylock spin may exit at
        // once where its test says, and that a loop whose body never comes
        // back to its test (`while (!q->head) { unlock(..); return NULL; }`)
        // exits where the test first fails.
        let spin = matches!(test, Test::CallZero { .. } | Test::VarZero { .. });
        // This loop's counter, when it counts up by one from zero and the
        // body never assigns it (`Stmt::Loop::var`): after the first pass,
        // which walks the first iteration from the exact entry state, the
        // passes stand for later iterations, where it is nonzero.
        // (Not when its address is taken: a callee may set it back.)
        let counter = match self.d.loops.last() {
            Some(super::WalkedLoop {
                depth,
                bound: Some(bound),
                var: Some(var),
                ..
            }) if *depth == self.d.stack.len() => (starts_at_zero(bound)
                && !fr.address_taken.contains(var))
            .then(|| (*depth, var.clone())),
            _ => None,
        };
        let mut pushed = false;
        for iter in 0..MAX_LOOP_ITERS {
            if iter == 1 {
                if let Some(c) = &counter {
                    self.d.counted_past_first.push(c.clone());
                    pushed = true;
                }
            }
            // What a second pass over the same head state could do otherwise
            // than the first: see the end of the loop.
            let (epoch, jumps) = (self.d.epoch, self.d.longjmps);
            let sites = self.d.sites_stack.last().map(|s| s.len());
            let enter = if do_while {
                Some(head.clone())
            } else {
                let c = self.walk_stmts(fr, cond, head.clone());
                out.ret = join_ret(out.ret.take(), c.ret);
                match c.next {
                    Some(cs) => {
                        let (t, mut e) = self.split(fr, test, cs);
                        if spin && !infinite {
                            if zero_on_true(test) {
                                self.flag_wait(fr, cond, test, &mut e);
                            }
                            exits = join(exits, Some(e));
                        } else if iter == 0 && !infinite {
                            no_iteration = Some(e);
                        }
                        Some(t)
                    }
                    None => None,
                }
            };
            let Some(enter) = enter else { break };
            let b = self.walk_stmts(fr, body, enter);
            out.ret = join_ret(out.ret.take(), b.ret);
            exits = join(exits, unbox(b.brk));
            let Some(next) = join(b.next, unbox(b.cont)) else {
                if iter == 0 {
                    exits = join(exits, no_iteration.take());
                }
                break;
            };
            if !infinite {
                let c = self.walk_stmts(fr, cond, next.clone());
                out.ret = join_ret(out.ret.take(), c.ret);
                if let Some(cs) = c.next {
                    let (_, mut e) = self.split(fr, test, cs);
                    if zero_on_true(test) {
                        self.flag_wait(fr, cond, test, &mut e);
                    }
                    exits = join(exits, Some(e));
                }
            }
            let new_head = join(Some(head.clone()), Some(next)).expect("both present");
            // A pass that ends where it began is the fixpoint. After the
            // first pass, a second one from the same head would record the
            // same accesses and exits: it runs only where the first changed
            // state shared by the walk (a spawn must be met twice to count
            // as repeated, a heap site inside a loop stands for many) or
            // jumped (a context that jumps is not memoized, so it would be
            // walked, and counted, again).
            let quiet = self.d.epoch == epoch
                && self.d.longjmps == jumps
                && self.d.sites_stack.last().map(|s| s.len()) == sites;
            if new_head == head && (iter > 0 || quiet) {
                break;
            }
            head = new_head;
        }
        if pushed {
            self.d.counted_past_first.pop();
        }
        self.d.loop_depth -= 1;
        if let Some(e) = exits.as_mut() {
            if !infinite {
                self.counter_wait(fr, test, body, do_while, e);
            }
        }
        out.next = exits;
        out
    }

    /// States for the then- and else-branch of a test (trylock success).
    #[inline(never)]
    fn split(&mut self, fr: &Frame, test: &Test, st: State) -> (State, State) {
        let Some((key, zero_on_true)) = flag_of(fr, test) else {
            return (st.clone(), st);
        };
        let held: Vec<Held> = st
            .tries
            .iter()
            .filter(|(k, _, _)| *k == key)
            .map(|(_, h, _)| h.clone())
            .collect();
        // Linux trylocks return nonzero on success (one model per call).
        let ok_nonzero = st.tries.iter().any(|(k, _, nz)| *k == key && *nz);
        if held.is_empty() {
            // A creation's result tested directly (`if (pthread_create(..))`)
            // is a flag too (see `spawn::call_flag`).
            let key = match key {
                TryKey::Call(id) => TryKey::Var(super::spawn::call_flag(id)),
                k => k,
            };
            if let TryKey::Var(v) = key {
                // Path correlation on a plain flag: in each branch, spawns
                // guarded by the opposite value of the flag did not happen.
                let (mut t, mut e) = (st.clone(), st);
                let then_nonzero = !zero_on_true;
                for (branch, nonzero) in [(&mut t, then_nonzero), (&mut e, !then_nonzero)] {
                    let dead: Vec<u32> = branch
                        .guards
                        .iter()
                        .filter(|g| g.1 == v && g.2 != nonzero)
                        .map(|g| g.0)
                        .collect();
                    for s in dead {
                        branch.created.remove(s);
                        branch.active.remove(s);
                        branch.clean.retain(|c| c.0 != s);
                        branch.guards.retain(|g| g.0 != s);
                    }
                    branch.know(v.clone(), nonzero);
                    // Objects handed to a creation that failed on this
                    // branch went to no thread: fresh again.
                    let back: Vec<Base> = branch
                        .handed
                        .iter()
                        .filter(|h| h.0 == v && nonzero)
                        .map(|h| h.1.clone())
                        .collect();
                    branch.handed.retain(|h| h.0 != v);
                    for b in back {
                        self.observe_heap(&b);
                        if !branch.fresh.contains(&b) {
                            let mut f = branch.fresh.to_vec();
                            super::state::insert_sorted(&mut f, b);
                            branch.fresh = f.into();
                        }
                    }
                    let follows: Vec<(bool, Held)> = branch
                        .lock_guards
                        .iter()
                        .filter(|g| g.0 == v)
                        .map(|g| (g.1 == nonzero, g.2.clone()))
                        .collect();
                    // A lock the flag says is held in one mode or the
                    // other (see `state::join`) stays held either way.
                    let kept = |h: &Held| follows.iter().any(|f| f.0 && f.1.lock == h.lock);
                    for (held, h) in &follows {
                        if *held {
                            branch.must.insert(h.clone());
                            branch.may.insert(h.clone());
                        } else if !kept(h) {
                            branch.must.remove(&h.lock);
                            branch.may.remove(&h.lock);
                        }
                    }
                    let follows: Vec<(bool, (Name, Vec<Elem>, bool))> = branch
                        .sym_guards
                        .iter()
                        .filter(|g| g.0 == v)
                        .map(|g| (g.1 == nonzero, g.2.clone()))
                        .collect();
                    if !follows.is_empty() {
                        let mut syms = branch.syms.to_vec();
                        for (held, s) in follows {
                            syms.retain(|x| !(x.0 == s.0 && x.1 == s.1));
                            if held && syms.len() < MAX_TRACKED {
                                syms.push(s);
                            }
                        }
                        syms.sort();
                        branch.syms = syms.into();
                    }
                }
                return (t, e);
            }
            return (st.clone(), st);
        }
        let mut ok = st.clone();
        let mut fail = st;
        for h in held {
            ok.must.insert(h.clone());
            ok.may.insert(h.clone());
            fail.must.remove(&h.lock);
            fail.may.remove(&h.lock);
        }
        ok.tries.retain(|(k, _, _)| *k != key);
        fail.tries.retain(|(k, _, _)| *k != key);
        if zero_on_true != ok_nonzero {
            (ok, fail)
        } else {
            (fail, ok)
        }
    }
}

/// The variables a place indexes directly (`p` of `p[i]`, `p[i].f`,
/// `p[i][j]`).
fn indexed_vars(e: &Expr) -> Vec<&Name> {
    let mut out = Vec::new();
    let mut e = e;
    loop {
        match e {
            Expr::Index { base, .. } => {
                if let Expr::Var(x) = &**base {
                    out.push(x);
                }
                e = base;
            }
            Expr::Field {
                base, arrow: false, ..
            } => e = base,
            _ => return out,
        }
    }
}

/// Does a counting loop's range (`START<END`, see `Stmt::Loop::bound`)
/// start at zero (`0`, `0U`, `(uint64_t)0`)?
fn starts_at_zero(bound: &str) -> bool {
    let Some((start, _)) = bound.split_once('<') else {
        return false;
    };
    let mut s = start;
    while let Some(rest) = s.strip_prefix('(') {
        match rest.find(')') {
            Some(i) if i + 1 < rest.len() => s = &rest[i + 1..],
            _ => break,
        }
    }
    s.trim_end_matches(['u', 'U', 'l', 'L']) == "0"
}

/// Does `test` hold (its then-branch or loop body run) when the value it
/// tests is zero?
fn zero_on_true(test: &Test) -> bool {
    matches!(
        test,
        Test::CallZero {
            zero_on_true: true,
            ..
        } | Test::VarZero {
            zero_on_true: true,
            ..
        }
    )
}
