//! Building the model of one candidate race from the function summaries.
//!
//! Only the threads on the creation chains of the two racing threads, and
//! the few threads they create that join threads (`explain::add_joiners`),
//! are modeled. Each one's entry function is compiled with calls inlined (up to
//! [`MAX_INLINE_DEPTH`]), skipping callees that contain no event of
//! interest. Locks, condition variables and join targets are named by a
//! small points-to over parameters, thread arguments and single-assignment
//! locals; when that fails the model is marked incomplete.
//!
//! This room owns the `Builder` (model under construction, work budget,
//! call stack, open loops) and its emit/patch primitives; `control`,
//! `calls`, `inline`, `names` and `flags` add one concern each.

mod calls;
mod control;
mod flags;
mod inline;
mod names;

use super::model::*;
use crate::db::{program, FunctionId, FunctionSummary, Program, Workspace};
use crate::facts::ThreadTable;
use crate::model::{Base, LocKey};
use racelens_syntax::{AccessKind, Name, Span, Stmt};
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

/// Work units (statements) between two checks for a pending edit.
const POLL_EVERY: usize = 256;

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
        // A pending input write unwinds the build (`salsa::Cancelled`).
        if self.work_left % POLL_EVERY == 0 {
            self.db.unwind_if_revision_cancelled();
        }
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
}
