//! The abstract model that the bounded search runs: one flat instruction
//! list per thread, with only the events that matter for one candidate race.
//!
//! Each thread's code is its entry function with calls inlined, branches as
//! nondeterministic choices (or tests of a modeled flag) and loops unrolled;
//! silent instructions (jumps and choices) are skipped by the search.

use crate::db::FunctionId;
use racelens_syntax::{AccessKind, Name, Span};

pub(super) type Pc = u32;

/// Where an event comes from in the source.
pub(super) type At = Option<(FunctionId, Span)>;

#[derive(Clone, Debug)]
pub(super) enum Op {
    Jump(Pc),
    Choice(Vec<Pc>),
    /// A path cut by a bound: the thread never moves again.
    Stop,
    /// The thread returns.
    End,
    /// The whole process ends (`exit`, or `main` returning).
    ExitProcess,
    Lock {
        lock: u16,
        shared: bool,
    },
    /// Takes `ok` when the lock is free (acquiring it), `fail` otherwise.
    TryLock {
        lock: u16,
        shared: bool,
        ok: Pc,
        fail: Pc,
    },
    Unlock {
        lock: u16,
    },
    Wait {
        cond: u16,
        lock: u16,
        timed: bool,
    },
    Signal {
        cond: u16,
        all: bool,
    },
    /// Creates one thread running one of `children` (model thread indices).
    Create {
        children: Vec<u8>,
    },
    /// Waits for the oldest unjoined thread created at one of `sites`.
    Join {
        sites: Vec<u32>,
    },
    /// Waits until `count` instances have arrived at the barrier.
    Barrier {
        barrier: u16,
    },
    Access {
        kind: AccessKind,
    },
    FlagWrite {
        flag: u16,
        value: Option<i64>,
    },
    /// Goes to `then` when (flag == 0) == zero_on_true, else to `els`.
    FlagTest {
        flag: u16,
        zero_on_true: bool,
        then: Pc,
        els: Pc,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Instr {
    pub op: Op,
    pub at: At,
}

/// One abstract thread of the model.
#[derive(Clone, Debug)]
pub(super) struct ModelThread {
    /// Index in the walk's thread table.
    pub abs: u32,
    pub entry: Name,
    /// The walk's spawn site of this thread (`None` for main and for the
    /// roots of a library).
    pub site: Option<u32>,
    /// Instances running from the start: 1 for main, 2 for a library root
    /// (which may run in parallel with itself), 0 for created threads.
    pub start: u8,
    pub code: Vec<Instr>,
}

/// A global flag whose value the model tracks.
#[derive(Clone, Debug)]
pub(super) struct Flag {
    pub name: Name,
    /// `None` when the initial value is not a known integer.
    pub init: Option<i64>,
}

/// The model of one candidate race.
#[derive(Clone, Debug, Default)]
pub(super) struct Model {
    pub threads: Vec<ModelThread>,
    pub locks: Vec<String>,
    pub conds: Vec<String>,
    /// Barriers with their participant count.
    pub barriers: Vec<(String, u32)>,
    pub flags: Vec<Flag>,
    /// False when the model drops behaviours for reasons other than the
    /// documented bounds (unresolved locks or calls, gotos, barriers): a
    /// search that finds nothing then proves nothing.
    pub complete: bool,
    /// Why the model is incomplete, for the verdict.
    pub gaps: Vec<String>,
    /// The check's build budget ran out: the model is cut short and not
    /// searched.
    pub out_of_budget: bool,
}

impl Model {
    pub(super) fn gap(&mut self, why: String) {
        self.complete = false;
        if !self.gaps.contains(&why) && self.gaps.len() < 8 {
            self.gaps.push(why);
        }
    }
}
