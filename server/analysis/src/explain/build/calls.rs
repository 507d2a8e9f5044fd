//! Calls in the model: thread creation and joins, locks, trylocks,
//! condition variables, barriers, `pthread_once`, and plain calls, which are
//! inlined when relevant.
//!
//! Locks that may stand for several objects are left out (that only adds
//! schedules); what the model cannot follow (indirect calls, recursion or
//! calls deeper than `MAX_INLINE_DEPTH`, stored trylock results, unresolved
//! barriers) is recorded as a gap, which makes the model incomplete.

use super::super::model::*;
use super::{local_names, Builder, Frame, MAX_INLINE_DEPTH};
use crate::config::CallModel;
use crate::db::walk_summary;
use crate::model::LocKey;
use crate::walk::same_thread_id;
use racelens_syntax::{AccessKind, Call, Callee, Expr, Name};
use rustc_hash::FxHashMap;

impl<'a> Builder<'a> {
    pub(super) fn call(&mut self, fr: &mut Frame, c: &Call) {
        let at = Some((fr.fid, c.span));
        let arg = |i: usize| c.args.get(i);
        match fr.summary.models.get(&c.id).cloned() {
            Some(CallModel::Lock { arg: i, shared }) => {
                if let Some(lock) = self.lock_id(fr, arg(i), true) {
                    self.emit(Op::Lock { lock, shared }, at);
                }
            }
            Some(CallModel::TryLock { arg: i, shared, .. }) => {
                // The result is not correlated with later tests of it.
                if let Some(lock) = self.lock_id(fr, arg(i), true) {
                    self.model.gap("a trylock whose result is stored".into());
                    let next = self.here() + 1;
                    self.emit(
                        Op::TryLock {
                            lock,
                            shared,
                            ok: next,
                            fail: next,
                        },
                        at,
                    );
                }
            }
            Some(CallModel::Unlock { arg: i }) => {
                if let Some(lock) = self.lock_id(fr, arg(i), true) {
                    self.emit(Op::Unlock { lock }, at);
                }
            }
            Some(CallModel::CondWait) => {
                let lock = self.lock_id(fr, arg(1), true);
                let timed = matches!(&c.callee, Callee::Direct(n) if n.contains("timed"));
                match (self.lock_id(fr, arg(0), false), lock) {
                    (Some(cond), Some(lock)) => {
                        self.emit(Op::Wait { cond, lock, timed }, at);
                    }
                    // An unknown condition: the wait may return at once,
                    // after letting others take the lock.
                    (None, Some(lock)) => {
                        self.emit(Op::Unlock { lock }, at);
                        self.emit(
                            Op::Lock {
                                lock,
                                shared: false,
                            },
                            at,
                        );
                    }
                    (_, None) => {}
                }
            }
            Some(CallModel::Create {
                tid: _,
                func: _,
                arg: a,
            }) => self.create(fr, c, a),
            Some(CallModel::Join { tid, all }) => self.join(fr, c, tid, all),
            Some(CallModel::Once { func }) => self.once(fr, c, func),
            Some(CallModel::Barrier) => self.barrier(fr, c),
            Some(CallModel::Exit) => {
                let thread_only = matches!(&c.callee, Callee::Direct(n) if n.contains("thread_exit") || &**n == "thrd_exit");
                self.emit(
                    if thread_only {
                        Op::End
                    } else {
                        Op::ExitProcess
                    },
                    at,
                );
            }
            Some(CallModel::Mem { write, read }) => {
                let thread = self.model.threads[self.cur].abs;
                if self.wanted.accesses.contains(&(thread, fr.fid, c.span)) {
                    for (idx, kind) in [(read, AccessKind::Read), (write, AccessKind::Write)] {
                        if idx.is_some() {
                            self.emit(Op::Access { kind }, at);
                        }
                    }
                }
            }
            Some(CallModel::Scan { .. } | CallModel::Unsafe) => {
                let thread = self.model.threads[self.cur].abs;
                if self.wanted.accesses.contains(&(thread, fr.fid, c.span)) {
                    self.emit(
                        Op::Access {
                            kind: AccessKind::Write,
                        },
                        at,
                    );
                }
            }
            Some(
                CallModel::Alloc
                | CallModel::Realloc
                | CallModel::Free
                | CallModel::Atomic
                | CallModel::Detach
                | CallModel::AtomicBegin
                | CallModel::AtomicEnd,
            ) => {}
            None => self.plain_call(fr, c),
        }
    }

    pub(super) fn plain_call(&mut self, fr: &mut Frame, c: &Call) {
        let at = Some((fr.fid, c.span));
        let name = match &c.callee {
            Callee::Direct(n)
                if !fr.locals.contains_key(n) && !self.prog.globals.contains_key(n) =>
            {
                n.clone()
            }
            _ => {
                self.model
                    .gap(format!("an indirect call in `{}`", fr.fname));
                return;
            }
        };
        if let Some(all) = is_signal(&name) {
            match self.lock_id(fr, c.args.first(), false) {
                Some(cond) => {
                    self.emit(Op::Signal { cond, all }, at);
                }
                None => self.model.gap(format!(
                    "a signal of an unresolved condition variable in `{}`",
                    fr.fname
                )),
            }
            return;
        }
        let Some(f) = self.function_named(&name, Some(fr.fid)) else {
            return;
        };
        if !self.is_relevant(f) {
            return;
        }
        if self.stack.contains(&f) || self.stack.len() >= MAX_INLINE_DEPTH {
            self.model
                .gap(format!("recursion or deep calls at `{name}`"));
            return;
        }
        let args: Vec<Option<LocKey>> = c.args.iter().map(|a| self.pointee(fr, a, 0)).collect();
        self.inline(f, args, None);
    }

    pub(super) fn create(&mut self, fr: &mut Frame, c: &Call, arg: usize) {
        // A launcher's call is a site per heap site it hands (`Site::launch`):
        // the one of the object handed here.
        let pointee = c.args.get(arg).and_then(|a| self.pointee(fr, a, 0));
        let at_call = |s: &&crate::facts::Site| s.func == fr.fid && s.call == c.id;
        let launched = |s: &crate::facts::Site| match (&s.launch, &pointee) {
            (None, _) => true,
            (Some(b), Some(p)) => *b == p.base,
            (Some(_), None) => false,
        };
        let Some(site) = self
            .table
            .sites
            .iter()
            .position(|s| at_call(&s) && launched(s))
        else {
            return;
        };
        let me = self.model.threads[self.cur].abs;
        let children: Vec<u8> = self
            .model
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.site == Some(site as u32)
                    && (self.table.threads[t.abs as usize].parent == Some(me)
                        || self.table.chain(me).iter().any(|(a, _)| *a == t.abs))
            })
            .map(|(i, _)| i as u8)
            .collect();
        if children.is_empty() {
            return;
        }
        for &ch in &children {
            if self.thread_args[ch as usize].is_none() {
                self.thread_args[ch as usize] = pointee.clone();
            }
        }
        self.emit(Op::Create { children }, Some((fr.fid, c.span)));
    }

    pub(super) fn join(&mut self, fr: &mut Frame, c: &Call, tid: usize, all: bool) {
        let Some(key) = c.args.get(tid).and_then(|e| self.place(fr, e, 0)) else {
            // Not blocking on an unknown join only adds schedules.
            return;
        };
        // As in the walk: distinct constant indices name distinct threads
        // (`join(t[0])` does not join the thread created into `t[1]`), and a
        // thread id handed to unknown code may have been overwritten, so
        // joining it orders nothing.
        let sites: Vec<u32> = self
            .table
            .sites
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.tid_escaped && s.tid.iter().any(|t| same_thread_id(t, &key)))
            // As in the walk: a join loop whose range differs from the
            // creation loop's joins only some of its threads.
            .filter(|(_, s)| match (fr.loops.last(), &s.loop_bound) {
                (Some(Some(j)), Some(c)) => all || j == c,
                _ => true,
            })
            .map(|(i, _)| i as u32)
            .collect();
        if !sites.is_empty() {
            self.emit(Op::Join { sites }, Some((fr.fid, c.span)));
        }
    }

    /// `pthread_once(&ctl, f)`: under a lock per control, run `f` if its
    /// done-flag is still clear.
    pub(super) fn once(&mut self, fr: &mut Frame, c: &Call, func: usize) {
        let at = Some((fr.fid, c.span));
        let named = match c.args.get(func) {
            Some(Expr::AddrOf(p)) => p.as_ref(),
            Some(e) => e,
            None => &Expr::Other,
        };
        let target = if let Expr::Var(n) = named {
            self.function_named(n, Some(fr.fid))
        } else {
            None
        };
        let Some(f) = target else {
            self.model
                .gap("`pthread_once` with an unknown function".into());
            return;
        };
        let ctl = self.lock_id(fr, c.args.first(), true);
        let name: Name = match ctl {
            Some(l) => format!("once:{}", self.model.locks[l as usize]).into(),
            None => format!("once:{:?}", c.args.first()).into(),
        };
        let flag = match self.flag_index.get(&name) {
            Some(&k) => k,
            None => {
                let k = self.model.flags.len() as u16;
                self.model.flags.push(Flag {
                    name: name.clone(),
                    init: Some(0),
                });
                self.flag_index.insert(name, k);
                k
            }
        };
        if let Some(lock) = ctl {
            self.emit(
                Op::Lock {
                    lock,
                    shared: false,
                },
                at,
            );
        }
        let t = self.emit(
            Op::FlagTest {
                flag,
                zero_on_true: true,
                then: 0,
                els: 0,
            },
            at,
        );
        let h = self.here();
        self.patch(t, 0, h);
        self.emit(
            Op::FlagWrite {
                flag,
                value: Some(1),
            },
            at,
        );
        if self.is_relevant(f) && !self.stack.contains(&f) && self.stack.len() < MAX_INLINE_DEPTH {
            self.inline(f, Vec::new(), None);
        }
        let e = self.here();
        self.patch(t, 1, e);
        if let Some(lock) = ctl {
            self.emit(Op::Unlock { lock }, at);
        }
    }

    /// `pthread_barrier_wait(&b)`, with the count from `b`'s initialisation.
    pub(super) fn barrier(&mut self, fr: &mut Frame, c: &Call) {
        let Some(key) = c
            .args
            .first()
            .and_then(|e| self.pointee(fr, e, 0))
            .filter(|k| self.definite(k))
        else {
            self.model.gap("a barrier that is not resolved".into());
            return;
        };
        let Some(count) = self.barrier_count(&key) else {
            self.model
                .gap(format!("barrier `{}` with an unknown count", key.display()));
            return;
        };
        let name = key.display();
        let barrier = match self.model.barriers.iter().position(|(n, _)| *n == name) {
            Some(b) => b as u16,
            None => {
                self.model.barriers.push((name, count));
                (self.model.barriers.len() - 1) as u16
            }
        };
        self.emit(Op::Barrier { barrier }, Some((fr.fid, c.span)));
    }

    /// The constant count of the only `pthread_barrier_init` of `key`.
    pub(super) fn barrier_count(&self, key: &LocKey) -> Option<u32> {
        let mut counts = Vec::new();
        for &f in self.prog.functions.values().flatten() {
            let summary = walk_summary(self.db, f).clone();
            let mut fr = Frame {
                fid: f,
                fname: f.name(self.db).clone(),
                locals: local_names(&summary),
                summary: summary.clone(),
                env: FxHashMap::default(),
                returns: Vec::new(),
                loops: Vec::new(),
            };
            let _ = self.bind_locals(&mut fr);
            crate::visit::visit_calls(&summary.ir.body, &mut |c| {
                if matches!(&c.callee, Callee::Direct(n) if &**n == "pthread_barrier_init")
                    && c.args
                        .first()
                        .and_then(|e| self.pointee(&fr, e, 0))
                        .as_ref()
                        == Some(key)
                {
                    counts.push(match c.args.get(2) {
                        Some(Expr::Int(n)) if *n > 0 => Some(*n as u32),
                        _ => None,
                    });
                }
            });
        }
        match counts.as_slice() {
            [one] => *one,
            _ => None,
        }
    }
}

/// Models the search executes.
pub(super) fn synchronises(m: &CallModel) -> bool {
    matches!(
        m,
        CallModel::Lock { .. }
            | CallModel::TryLock { .. }
            | CallModel::Unlock { .. }
            | CallModel::Create { .. }
            | CallModel::Join { .. }
            | CallModel::Once { .. }
            | CallModel::CondWait
            | CallModel::Barrier
            | CallModel::Exit
    )
}

/// `pthread_cond_signal` and friends: `Some(broadcast)`.
pub(super) fn is_signal(n: &str) -> Option<bool> {
    match n {
        "pthread_cond_signal" | "cnd_signal" => Some(false),
        "pthread_cond_broadcast" | "cnd_broadcast" => Some(true),
        _ => None,
    }
}
