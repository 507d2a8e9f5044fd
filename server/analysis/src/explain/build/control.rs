//! Control flow in the model: statement sequences, branches with their
//! tests, loops unrolled [`LOOP_UNROLL`](super::LOOP_UNROLL) times, and the
//! racing accesses themselves.
//!
//! Jumps are emitted with placeholder targets and patched once the target
//! is known; `break` and `continue` are collected per loop or switch
//! (`Breakable`) and patched when it ends.

use super::super::model::*;
use super::{Breakable, Builder, Frame, Slot, LOOP_UNROLL};
use crate::config::CallModel;
use racelens_syntax::{AccessKind, Expr, Stmt, Test};

impl<'a> Builder<'a> {
    pub(super) fn stmts(&mut self, fr: &mut Frame, stmts: &[Stmt]) {
        for (i, s) in stmts.iter().enumerate() {
            if self.full() {
                return;
            }
            self.work_left -= 1;
            match s {
                Stmt::Access(a) => self.access(fr, a, stmts.get(i + 1)),
                Stmt::Assign { .. } | Stmt::Decl(_) => {}
                Stmt::Call(c) => self.call(fr, c),
                Stmt::If {
                    cond,
                    test,
                    then,
                    els,
                } => {
                    let (to_then, to_else) = self.branch(fr, cond, test);
                    let t = self.here();
                    self.patch_all(&to_then, t);
                    self.stmts(fr, then);
                    let skip = self.emit(Op::Jump(0), None);
                    let e = self.here();
                    self.patch_all(&to_else, e);
                    self.stmts(fr, els);
                    let end = self.here();
                    self.patch(skip, 0, end);
                }
                Stmt::Loop {
                    cond,
                    test,
                    body,
                    do_while,
                    infinite,
                    bound,
                    ..
                } => {
                    fr.loops.push(bound.clone());
                    self.lp(fr, cond, test, body, *do_while, *infinite);
                    fr.loops.pop();
                }
                Stmt::Switch { cond, arms, .. } => {
                    self.stmts(fr, cond);
                    let choice = self.emit(Op::Choice(vec![0; arms.len() + 1]), None);
                    let mut ends = vec![(choice, arms.len())];
                    for (k, arm) in arms.iter().enumerate() {
                        let h = self.here();
                        self.patch(choice, k, h);
                        self.loops.push(Breakable {
                            is_switch: true,
                            ..Default::default()
                        });
                        self.stmts(fr, arm);
                        let b = self.loops.pop().unwrap_or_default();
                        ends.extend(b.breaks.into_iter().map(|p| (p, 0)));
                        self.pass_continues(b.continues);
                        let j = self.emit(Op::Jump(0), None);
                        ends.push((j, 0));
                    }
                    let end = self.here();
                    self.patch_all(&ends, end);
                }
                Stmt::Return { .. } => {
                    let j = self.emit(Op::Jump(0), None);
                    fr.returns.push(j);
                }
                Stmt::Break => {
                    if self.loops.is_empty() {
                        self.model.gap("`break` outside a loop".into());
                    } else {
                        let j = self.emit(Op::Jump(0), None);
                        self.loops.last_mut().expect("checked").breaks.push(j);
                    }
                }
                Stmt::Continue => {
                    if !self.loops.iter().any(|l| !l.is_switch) {
                        self.model.gap("`continue` outside a loop".into());
                    } else {
                        let j = self.emit(Op::Jump(0), None);
                        self.loops
                            .iter_mut()
                            .rev()
                            .find(|l| !l.is_switch)
                            .expect("checked")
                            .continues
                            .push(j);
                    }
                }
                Stmt::Goto(_) => self.model.gap(format!("`goto` in `{}`", fr.fname)),
                Stmt::Label(_) => {}
            }
        }
    }

    /// `continue` inside a switch belongs to the enclosing loop.
    pub(super) fn pass_continues(&mut self, cs: Vec<Pc>) {
        if let Some(l) = self.loops.iter_mut().rev().find(|l| !l.is_switch) {
            l.continues.extend(cs);
        }
    }

    /// Compiles a condition; returns the jumps to the then- and else-branch.
    pub(super) fn branch(
        &mut self,
        fr: &mut Frame,
        cond: &[Stmt],
        test: &Test,
    ) -> (Vec<Slot>, Vec<Slot>) {
        if let Test::CallZero { id, zero_on_true } = test {
            let pos = cond
                .iter()
                .position(|s| matches!(s, Stmt::Call(c) if c.id == *id));
            if let (
                Some(pos),
                Some(CallModel::TryLock {
                    arg,
                    shared,
                    ok_nonzero,
                }),
            ) = (pos, fr.summary.models.get(id).cloned())
            {
                let Stmt::Call(c) = &cond[pos] else {
                    unreachable!()
                };
                self.stmts(fr, &cond[..pos]);
                let tl = match self.lock_id(fr, c.args.get(arg), true) {
                    Some(lock) => self.emit(
                        Op::TryLock {
                            lock,
                            shared,
                            ok: 0,
                            fail: 0,
                        },
                        Some((fr.fid, c.span)),
                    ),
                    None => self.emit(Op::Choice(vec![0, 0]), None),
                };
                let mut to = (Vec::new(), Vec::new());
                for slot in 0..2 {
                    let h = self.here();
                    self.patch(tl, slot, h);
                    self.stmts(fr, &cond[pos + 1..]);
                    let j = self.emit(Op::Jump(0), None);
                    // Success returns zero (pthreads) or nonzero (Linux):
                    // the then-branch runs on zero iff zero_on_true.
                    if (slot == 0) == (*zero_on_true != ok_nonzero) {
                        to.0.push((j, 0))
                    } else {
                        to.1.push((j, 0))
                    }
                }
                return to;
            }
        }
        self.stmts(fr, cond);
        if let Test::VarZero { var, zero_on_true } = test {
            if !fr.locals.contains_key(var) {
                if let Some(&flag) = self.flag_index.get(var) {
                    let at = cond.iter().find_map(|s| {
                        if let Stmt::Access(a) = s {
                            Some((fr.fid, a.span))
                        } else {
                            None
                        }
                    });
                    let t = self.emit(
                        Op::FlagTest {
                            flag,
                            zero_on_true: *zero_on_true,
                            then: 0,
                            els: 0,
                        },
                        at,
                    );
                    return (vec![(t, 0)], vec![(t, 1)]);
                }
            }
        }
        let c = self.emit(Op::Choice(vec![0, 0]), None);
        (vec![(c, 0)], vec![(c, 1)])
    }

    /// Unrolls a loop [`LOOP_UNROLL`] times; a run that wants more stops.
    pub(super) fn lp(
        &mut self,
        fr: &mut Frame,
        cond: &[Stmt],
        test: &Test,
        body: &[Stmt],
        do_while: bool,
        infinite: bool,
    ) {
        let mut exits: Vec<(Pc, usize)> = Vec::new();
        let mut into_next: Vec<(Pc, usize)> = Vec::new();
        for _ in 0..LOOP_UNROLL {
            let start = self.here();
            self.patch_all(&std::mem::take(&mut into_next), start);
            if !do_while && !infinite {
                let (t, e) = self.branch(fr, cond, test);
                exits.extend(e);
                let h = self.here();
                self.patch_all(&t, h);
            } else if !do_while {
                self.stmts(fr, cond);
            }
            self.loops.push(Breakable::default());
            self.stmts(fr, body);
            let b = self.loops.pop().unwrap_or_default();
            exits.extend(b.breaks.into_iter().map(|p| (p, 0)));
            if do_while {
                let c = self.here();
                for p in b.continues {
                    self.patch(p, 0, c);
                }
                if infinite {
                    self.stmts(fr, cond);
                    let j = self.emit(Op::Jump(0), None);
                    into_next.push((j, 0));
                } else {
                    let (t, e) = self.branch(fr, cond, test);
                    exits.extend(e);
                    into_next.extend(t);
                }
            } else {
                into_next.extend(b.continues.into_iter().map(|p| (p, 0)));
                let j = self.emit(Op::Jump(0), None);
                into_next.push((j, 0));
            }
            if self.full() {
                break;
            }
        }
        // After the last unrolled iteration: the loop may still want to run.
        let last = self.here();
        self.patch_all(&into_next, last);
        if !do_while && !infinite {
            let (t, e) = self.branch(fr, cond, test);
            exits.extend(e);
            let h = self.here();
            self.patch_all(&t, h);
        }
        self.emit(Op::Stop, None);
        let end = self.here();
        self.patch_all(&exits, end);
    }

    pub(super) fn access(
        &mut self,
        fr: &mut Frame,
        a: &racelens_syntax::Access,
        next: Option<&Stmt>,
    ) {
        let thread = self.model.threads[self.cur].abs;
        if self.wanted.accesses.contains(&(thread, fr.fid, a.span)) {
            self.emit(Op::Access { kind: a.kind }, Some((fr.fid, a.span)));
        }
        if a.kind != AccessKind::Write {
            return;
        }
        let Expr::Var(v) = &a.place else { return };
        if fr.locals.contains_key(v) {
            return;
        }
        let Some(&flag) = self.flag_index.get(v) else {
            return;
        };
        let value = match next {
            Some(Stmt::Assign {
                lhs,
                rhs: Expr::Int(k),
            }) if *lhs == a.place => Some(*k),
            _ => None,
        };
        self.flag_writes.insert((fr.fid, a.span));
        self.emit(Op::FlagWrite { flag, value }, Some((fr.fid, a.span)));
    }
}
