//! Building the model of one candidate race from the function summaries.
//!
//! Only the threads on the creation chains of the two racing threads are
//! modeled. Each one's entry function is compiled with calls inlined (up to
//! [`MAX_INLINE_DEPTH`]), skipping callees that contain no event of
//! interest. Locks, condition variables and join targets are named by a
//! small points-to over parameters, thread arguments and single-assignment
//! locals; when that fails the model is marked incomplete.

mod flags;
mod names;

use super::model::*;
use crate::config::CallModel;
use crate::db::{function_summary, program, FunctionId, FunctionSummary, Program, Workspace};
use crate::facts::ThreadTable;
use crate::model::{Base, LocKey};
use crate::walk::same_thread_id;
use racelens_syntax::{AccessKind, Call, Callee, Expr, Name, Span, Stmt, Test};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// Loop iterations unrolled; longer runs are cut (the thread stops).
pub(super) const LOOP_UNROLL: usize = 2;
/// Nesting of inlined calls.
pub(super) const MAX_INLINE_DEPTH: usize = 12;
/// Instructions per thread.
pub(super) const MAX_CODE: usize = 60_000;

/// What the model must contain: the racing accesses of each model thread.
pub(super) struct Wanted {
    /// Abstract threads on the creation chains, sorted (parents first).
    pub threads: Vec<u32>,
    /// (abstract thread, function, span) of the accesses to model.
    pub accesses: FxHashSet<(u32, FunctionId, Span)>,
}

/// Builds the model, charging one unit per statement compiled or scanned
/// to `work` (shared by every build of one check); a build that runs out
/// returns a model marked `out_of_budget`.
pub(super) fn build(
    db: &dyn salsa::Database,
    ws: Workspace,
    table: &ThreadTable,
    wanted: &Wanted,
    work: &std::cell::Cell<usize>,
) -> Model {
    let prog = program(db, ws).clone();
    let mut flags: FxHashMap<Name, Option<i64>> = flags::flag_candidates(db, ws)
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    for _ in 0..4 {
        let mut b = Builder::new(db, ws, &prog, table, wanted, flags.clone());
        b.work_left = work.get();
        b.compile_all();
        work.set(b.work_left);
        if b.model.out_of_budget {
            return b.finish();
        }
        let bad = b.unverified_flags();
        if bad.is_empty() {
            return b.finish();
        }
        flags.retain(|n, _| !bad.contains(n));
    }
    let mut b = Builder::new(db, ws, &prog, table, wanted, FxHashMap::default());
    b.work_left = work.get();
    b.compile_all();
    work.set(b.work_left);
    b.finish()
}

/// Locals and parameters of a function, with `is_static`.
fn local_names(s: &FunctionSummary) -> FxHashMap<Name, bool> {
    let mut m: FxHashMap<Name, bool> =
        s.ir.params
            .iter()
            .map(|p| (p.name.clone(), false))
            .collect();
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        if let Stmt::Decl(d) = st {
            m.insert(d.name.clone(), d.ty.is_static);
        }
    });
    m
}

/// A function being compiled: its summary and what its pointers point to.
struct Frame {
    fid: FunctionId,
    fname: Name,
    summary: Arc<FunctionSummary>,
    locals: FxHashMap<Name, bool>,
    /// Pointer locals and parameters: their pointee, `None` when unknown.
    env: FxHashMap<Name, Option<LocKey>>,
    returns: Vec<Pc>,
    /// The ranges of the loops around the current statement, innermost last.
    loops: Vec<Option<Name>>,
}

/// A jump target to patch: instruction and which of its targets.
type Slot = (Pc, usize);

/// Jumps out of the innermost loop or switch, patched when it ends.
#[derive(Default)]
struct Breakable {
    breaks: Vec<Pc>,
    continues: Vec<Pc>,
    is_switch: bool,
}

struct Builder<'a> {
    db: &'a dyn salsa::Database,
    ws: Workspace,
    prog: &'a Program,
    table: &'a ThreadTable,
    wanted: &'a Wanted,
    model: Model,
    flags: FxHashMap<Name, Option<i64>>,
    flag_index: FxHashMap<Name, u16>,
    /// Writes to flags that the model compiled, for the soundness check.
    flag_writes: FxHashSet<(FunctionId, Span)>,
    lock_index: FxHashMap<String, u16>,
    cond_index: FxHashMap<String, u16>,
    /// Pointee of each model thread's argument, set by its creator.
    thread_args: Vec<Option<LocKey>>,
    relevant: FxHashMap<FunctionId, bool>,
    /// State of the thread being compiled.
    cur: usize,
    code: Vec<Instr>,
    stack: Vec<FunctionId>,
    loops: Vec<Breakable>,
    /// Statements this build may still compile or scan.
    work_left: usize,
}

impl<'a> Builder<'a> {
    fn new(
        db: &'a dyn salsa::Database,
        ws: Workspace,
        prog: &'a Program,
        table: &'a ThreadTable,
        wanted: &'a Wanted,
        flags: FxHashMap<Name, Option<i64>>,
    ) -> Self {
        let mut model = Model {
            complete: true,
            ..Model::default()
        };
        let mut names: Vec<&Name> = flags.keys().collect();
        names.sort();
        let mut flag_index = FxHashMap::default();
        for n in names {
            flag_index.insert(n.clone(), model.flags.len() as u16);
            model.flags.push(Flag {
                name: n.clone(),
                init: flags[n],
            });
        }
        for &t in &wanted.threads {
            let th = &table.threads[t as usize];
            model.threads.push(ModelThread {
                abs: t,
                entry: th.entry.clone(),
                site: th.site,
                start: match (th.site, th.unique) {
                    (Some(_), _) => 0,
                    (None, true) => 1,
                    (None, false) => 2,
                },
                code: Vec::new(),
            });
        }
        let n = wanted.threads.len();
        Builder {
            db,
            ws,
            prog,
            table,
            wanted,
            model,
            flags,
            flag_index,
            flag_writes: FxHashSet::default(),
            lock_index: FxHashMap::default(),
            cond_index: FxHashMap::default(),
            thread_args: vec![None; n],
            relevant: FxHashMap::default(),
            cur: 0,
            code: Vec::new(),
            stack: Vec::new(),
            loops: Vec::new(),
            work_left: usize::MAX,
        }
    }

    fn finish(self) -> Model {
        self.model
    }

    fn compile_all(&mut self) {
        for i in 0..self.model.threads.len() {
            self.cur = i;
            self.code = Vec::new();
            self.loops.clear();
            let entry = self.model.threads[i].entry.clone();
            // Main ends the process; a library root ends only itself.
            let is_root = self.model.threads[i].start == 1;
            match self.function_named(&entry, None) {
                Some(f) => {
                    let arg = self.thread_args[i].clone();
                    self.inline(
                        f,
                        vec![arg],
                        Some(if is_root { Op::ExitProcess } else { Op::End }),
                    );
                }
                None => {
                    self.model.gap(format!("no definition of `{entry}`"));
                    self.emit(Op::End, None);
                }
            }
            self.model.threads[i].code = std::mem::take(&mut self.code);
        }
    }

    /// Flags whose writes the model does not all see: some thread outside
    /// the model, or an access the compiler did not recognise, writes them.
    fn unverified_flags(&self) -> Vec<Name> {
        let mut bad = Vec::new();
        for name in self.flags.keys() {
            for &loc in crate::races::locations(self.db, self.ws) {
                if *loc.key(self.db) != Base::Global(name.clone()) {
                    continue;
                }
                let ok = crate::races::location_accesses(self.db, loc)
                    .iter()
                    .filter(|f| f.kind == AccessKind::Write)
                    .all(|f| {
                        self.wanted.threads.contains(&f.thread)
                            && self.flag_writes.contains(&(f.func, f.span))
                    });
                if !ok {
                    bad.push(name.clone());
                }
            }
        }
        bad
    }

    // ----- emitting -------------------------------------------------------

    fn here(&self) -> Pc {
        self.code.len() as Pc
    }

    fn emit(&mut self, op: Op, at: At) -> Pc {
        let pc = self.here();
        self.code.push(Instr { op, at });
        pc
    }

    /// Points slot `slot` of the jump-like instruction at `pc` to `target`.
    fn patch(&mut self, pc: Pc, slot: usize, target: Pc) {
        match &mut self.code[pc as usize].op {
            Op::Jump(t) => *t = target,
            Op::Choice(ts) => ts[slot] = target,
            Op::TryLock { ok, fail, .. } => *(if slot == 0 { ok } else { fail }) = target,
            Op::FlagTest { then, els, .. } => *(if slot == 0 { then } else { els }) = target,
            _ => {}
        }
    }

    fn patch_all(&mut self, pcs: &[(Pc, usize)], target: Pc) {
        for &(pc, slot) in pcs {
            self.patch(pc, slot, target);
        }
    }

    fn full(&mut self) -> bool {
        if self.work_left == 0 {
            if !self.model.out_of_budget {
                self.model.out_of_budget = true;
                self.model.gap("the check's build budget ran out".into());
            }
            return true;
        }
        if self.code.len() >= MAX_CODE {
            self.model.gap(format!(
                "thread `{}` is too large to model",
                self.model.threads[self.cur].entry
            ));
            return true;
        }
        false
    }

    // ----- functions ------------------------------------------------------

    fn function_named(&self, name: &Name, near: Option<FunctionId>) -> Option<FunctionId> {
        let defs = self.prog.functions.get(name)?;
        let file = near.map(|f| f.file(self.db));
        Some(
            defs.iter()
                .find(|d| Some(d.file(self.db)) == file)
                .copied()
                .unwrap_or(defs[0]),
        )
    }

    /// Compiles `f`'s body in place; `end` ends a thread entry, `None`
    /// continues after the call.
    fn inline(&mut self, f: FunctionId, args: Vec<Option<LocKey>>, end: Option<Op>) {
        let summary = function_summary(self.db, f).clone();
        if summary.ir.truncated {
            self.model
                .gap(format!("`{}` is too large to lower", f.name(self.db)));
        }
        let mut fr = Frame {
            fid: f,
            fname: f.name(self.db).clone(),
            locals: local_names(&summary),
            summary: summary.clone(),
            env: FxHashMap::default(),
            returns: Vec::new(),
            loops: Vec::new(),
        };
        for (p, a) in summary.ir.params.iter().zip(args) {
            fr.env.insert(p.name.clone(), a);
        }
        let scanned = self.bind_locals(&mut fr);
        self.work_left = self.work_left.saturating_sub(scanned);
        self.stack.push(f);
        let saved = std::mem::take(&mut self.loops);
        self.stmts(&mut fr, &summary.ir.body);
        self.loops = saved;
        self.stack.pop();
        let end_pc = self.here();
        let rets = std::mem::take(&mut fr.returns);
        for pc in rets {
            self.patch(pc, 0, end_pc);
        }
        if let Some(end) = end {
            self.emit(end, None);
        }
    }

    /// Flow-insensitive pointees of locals assigned from pointer expressions:
    /// kept only when every assignment agrees.
    /// Returns how many statements it scanned.
    fn bind_locals(&self, fr: &mut Frame) -> usize {
        let summary = fr.summary.clone();
        let mut scanned = 0usize;
        for _ in 0..2 {
            let mut seen: FxHashMap<Name, Option<LocKey>> = FxHashMap::default();
            crate::visit::visit_stmts(&summary.ir.body, &mut |s| {
                scanned += 1;
                if let Stmt::Assign {
                    lhs: Expr::Var(x),
                    rhs,
                } = s
                {
                    if fr.locals.get(x) == Some(&false)
                        && !summary.ir.params.iter().any(|p| &p.name == x)
                    {
                        let v = self.pointee(fr, rhs, 0);
                        let e = seen.entry(x.clone()).or_insert_with(|| v.clone());
                        if *e != v {
                            *e = None;
                        }
                    }
                }
            });
            for (k, v) in seen {
                fr.env.insert(k, v);
            }
        }
        scanned
    }

    /// Does `f` (or a callee) contain anything the model needs?
    fn is_relevant(&mut self, f: FunctionId) -> bool {
        if let Some(&r) = self.relevant.get(&f) {
            return r;
        }
        self.relevant.insert(f, false);
        let s = function_summary(self.db, f).clone();
        let locals = local_names(&s);
        let mut callees: Vec<Name> = Vec::new();
        let mut direct = false;
        let wanted = |span: Span| {
            self.wanted
                .accesses
                .iter()
                .any(|(_, g, sp)| *g == f && *sp == span)
        };
        crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
            Stmt::Access(a) => {
                direct |= wanted(a.span);
                if let Expr::Var(v) = &a.place {
                    direct |= a.kind == AccessKind::Write
                        && !locals.contains_key(v)
                        && self.flags.contains_key(v);
                }
            }
            Stmt::If {
                test: Test::VarZero { var, .. },
                ..
            }
            | Stmt::Loop {
                test: Test::VarZero { var, .. },
                ..
            } => {
                direct |= !locals.contains_key(var) && self.flags.contains_key(var);
            }
            Stmt::Call(c) => match (s.models.get(&c.id), &c.callee) {
                (Some(CallModel::Mem { .. } | CallModel::Scan { .. } | CallModel::Unsafe), _) => {
                    direct |= wanted(c.span)
                }
                (Some(m), _) => direct |= synchronises(m),
                (None, Callee::Direct(n)) if is_signal(n).is_some() => direct = true,
                (None, Callee::Direct(n))
                    if !locals.contains_key(n) && !self.prog.globals.contains_key(n) =>
                {
                    callees.push(n.clone())
                }
                (None, _) => direct = true,
            },
            _ => {}
        });
        let mut r = direct;
        for n in callees {
            if r {
                break;
            }
            if let Some(g) = self.function_named(&n, Some(f)) {
                r |= self.is_relevant(g);
            }
        }
        self.relevant.insert(f, r);
        r
    }

    // ----- statements -----------------------------------------------------

    fn stmts(&mut self, fr: &mut Frame, stmts: &[Stmt]) {
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
                Stmt::Goto => self.model.gap(format!("`goto` in `{}`", fr.fname)),
            }
        }
    }

    /// `continue` inside a switch belongs to the enclosing loop.
    fn pass_continues(&mut self, cs: Vec<Pc>) {
        if let Some(l) = self.loops.iter_mut().rev().find(|l| !l.is_switch) {
            l.continues.extend(cs);
        }
    }

    /// Compiles a condition; returns the jumps to the then- and else-branch.
    fn branch(&mut self, fr: &mut Frame, cond: &[Stmt], test: &Test) -> (Vec<Slot>, Vec<Slot>) {
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
    fn lp(
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

    fn access(&mut self, fr: &mut Frame, a: &racelens_syntax::Access, next: Option<&Stmt>) {
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

    fn call(&mut self, fr: &mut Frame, c: &Call) {
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

    fn plain_call(&mut self, fr: &mut Frame, c: &Call) {
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

    fn create(&mut self, fr: &mut Frame, c: &Call, arg: usize) {
        let Some(site) = self
            .table
            .sites
            .iter()
            .position(|s| s.func == fr.fid && s.call == c.id)
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
        let pointee = c.args.get(arg).and_then(|a| self.pointee(fr, a, 0));
        for &ch in &children {
            if self.thread_args[ch as usize].is_none() {
                self.thread_args[ch as usize] = pointee.clone();
            }
        }
        self.emit(Op::Create { children }, Some((fr.fid, c.span)));
    }

    fn join(&mut self, fr: &mut Frame, c: &Call, tid: usize, all: bool) {
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
    fn once(&mut self, fr: &mut Frame, c: &Call, func: usize) {
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
    fn barrier(&mut self, fr: &mut Frame, c: &Call) {
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
    fn barrier_count(&self, key: &LocKey) -> Option<u32> {
        let mut counts = Vec::new();
        for &f in self.prog.functions.values().flatten() {
            let summary = function_summary(self.db, f).clone();
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
fn synchronises(m: &CallModel) -> bool {
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
fn is_signal(n: &str) -> Option<bool> {
    match n {
        "pthread_cond_signal" | "cnd_signal" => Some(false),
        "pthread_cond_broadcast" | "cnd_broadcast" => Some(true),
        _ => None,
    }
}
