//! Bounded breadth-first search over the interleavings of a model, for a
//! state in which two racing accesses are enabled at once (Goanna's
//! `EF datarace`, LaDR's "one access ends a context, the other starts the
//! next").
//!
//! States are hashed, so each is expanded once; breadth-first order gives
//! the shortest schedule. The search stops at [`MAX_STATES`] states, and a
//! program never has more than [`MAX_INSTANCES`] thread instances.

use super::model::*;
use racelens_syntax::{AccessKind, Span};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// States stored between two checks for a pending edit (about 0.1 ms).
const POLL_EVERY: usize = 512;

/// Distinct states explored before giving up.
pub(super) const MAX_STATES: usize = 200_000;
/// Thread instances alive or finished, `main` included.
pub(super) const MAX_INSTANCES: usize = 8;

const NO_OWNER: u8 = u8::MAX;
const UNKNOWN: i64 = i64::MIN;

/// Synchronisation the search may ignore, to find out which one orders a
/// refuted pair.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Relax {
    pub joins: bool,
    /// Flags (bit per flag index; bit 63 stands for all above) whose tests
    /// may go either way.
    pub flags: u64,
    /// Condition variables (same encoding) whose waits return at once.
    pub conds: u64,
    pub locks: bool,
    pub barriers: bool,
}

impl Relax {
    pub(super) fn bit(i: u16) -> u64 {
        1 << (i as u32).min(63)
    }
    fn flag(&self, f: u16) -> bool {
        self.flags & Self::bit(f) != 0
    }
    fn cond(&self, c: u16) -> bool {
        self.conds & Self::bit(c) != 0
    }
}

/// One access of the race: model thread, function, span and kind.
pub(super) type AccessClass = (u8, crate::db::FunctionId, Span, AccessKind);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Status {
    Run,
    Wait {
        cond: u16,
        lock: u16,
        timed: bool,
    },
    /// Woken from a wait, re-acquiring the lock.
    Relock {
        lock: u16,
    },
    AtBarrier {
        barrier: u16,
    },
    Done,
    /// Cut by a loop bound: never moves again.
    Stuck,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Inst {
    pub t: u8,
    pub pc: Pc,
    pub status: Status,
    pub joined: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct State {
    pub insts: Vec<Inst>,
    /// Exclusive owner of each lock.
    owner: Vec<u8>,
    /// Instances holding each lock in read mode, as a bit set.
    readers: Vec<u16>,
    flags: Vec<i64>,
    /// Instances waiting at each barrier, as a bit set.
    arrived: Vec<u16>,
    exited: bool,
}

impl State {
    /// Locks instance `i` holds.
    pub(super) fn held_by(&self, i: u8) -> Vec<u16> {
        (0..self.owner.len())
            .filter(|&l| self.owner[l] == i || self.readers[l] & (1 << i) != 0)
            .map(|l| l as u16)
            .collect()
    }
}

/// What happened in one step, beyond executing the instruction at `pc`.
#[derive(Clone, Debug)]
pub(super) enum Event {
    Exec,
    TryOk,
    TryFail,
    Woken,
    TimedOut,
    Signalled(Vec<u8>),
    Created(u8),
    Joined(Option<u8>),
    Tested(bool),
}

#[derive(Clone, Debug)]
pub(super) struct Step {
    pub inst: u8,
    pub pc: Pc,
    pub event: Event,
}

pub(super) enum Outcome {
    /// A schedule, the state it reaches, and the two racing instances.
    Found {
        steps: Vec<Step>,
        last: State,
        a: u8,
        b: u8,
    },
    /// Every reachable state was seen and none races.
    NotFound {
        reached: Vec<AccessClass>,
        cut: bool,
    },
    Exhausted,
}

pub(super) struct Search<'m> {
    model: &'m Model,
    relax: Relax,
    /// Access class of each pc of each thread.
    class: Vec<Vec<Option<u32>>>,
    /// Unordered pairs of classes that race.
    goal: FxHashSet<(u32, u32)>,
    classes: Vec<AccessClass>,
    closure: Vec<FxHashMap<Pc, Vec<Pc>>>,
    cut: bool,
    reached: FxHashSet<u32>,
    max_states: usize,
}

impl<'m> Search<'m> {
    pub(super) fn new(
        model: &'m Model,
        pairs: &[(AccessClass, AccessClass)],
        relax: Relax,
        max_states: usize,
    ) -> Self {
        let mut ids: FxHashMap<AccessClass, u32> = FxHashMap::default();
        let mut goal = FxHashSet::default();
        for (a, b) in pairs {
            let n = ids.len() as u32;
            let ia = *ids.entry(*a).or_insert(n);
            let n = ids.len() as u32;
            let ib = *ids.entry(*b).or_insert(n);
            goal.insert((ia, ib));
            goal.insert((ib, ia));
        }
        let class = model
            .threads
            .iter()
            .enumerate()
            .map(|(t, th)| {
                th.code
                    .iter()
                    .map(|ins| match (&ins.op, ins.at) {
                        (Op::Access { kind }, Some((f, sp))) => {
                            ids.get(&(t as u8, f, sp, *kind)).copied()
                        }
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let mut numbered: Vec<(u32, AccessClass)> = ids.iter().map(|(c, i)| (*i, *c)).collect();
        numbered.sort_by_key(|x| x.0);
        let classes = numbered.into_iter().map(|x| x.1).collect();
        Search {
            model,
            relax,
            class,
            goal,
            classes,
            closure: vec![FxHashMap::default(); model.threads.len()],
            cut: false,
            reached: FxHashSet::default(),
            max_states,
        }
    }

    /// Runs the search; also returns how many distinct states it stored,
    /// which callers charge to their budget. Every [`POLL_EVERY`] states it
    /// checks `db` for a pending input write and unwinds with
    /// `salsa::Cancelled` if there is one, so an edit never waits for a
    /// search to end.
    pub(super) fn run(mut self, db: &dyn salsa::Database) -> (Outcome, usize) {
        let init = State {
            insts: Vec::new(),
            owner: vec![NO_OWNER; self.model.locks.len()],
            readers: vec![0; self.model.locks.len()],
            flags: self
                .model
                .flags
                .iter()
                .map(|f| f.init.unwrap_or(UNKNOWN))
                .collect(),
            arrived: vec![0; self.model.barriers.len()],
            exited: false,
        };
        let mut seen: FxHashSet<State> = FxHashSet::default();
        let mut nodes: Vec<(u32, Option<Step>)> = Vec::new();
        let mut queue: VecDeque<(State, u32)> = VecDeque::new();
        // Main, or every root of a library (twice when it may run in
        // parallel with itself).
        let mut starts = vec![init];
        let model = self.model;
        for (t, th) in model.threads.iter().enumerate() {
            for _ in 0..th.start {
                let mut next = Vec::new();
                for s in &starts {
                    next.extend(self.spawn(s, t as u8));
                }
                starts = next;
            }
        }
        for s in starts {
            if seen.insert(s.clone()) {
                nodes.push((u32::MAX, None));
                queue.push_back((s, nodes.len() as u32 - 1));
            }
        }
        while let Some((s, id)) = queue.pop_front() {
            if let Some((a, b)) = self.racing(&s) {
                let found = Outcome::Found {
                    steps: trace(&nodes, id),
                    last: s,
                    a,
                    b,
                };
                return (found, seen.len());
            }
            for (next, step) in self.successors(&s) {
                if seen.contains(&next) {
                    continue;
                }
                if seen.len() >= self.max_states {
                    return (Outcome::Exhausted, seen.len());
                }
                if seen.len() % POLL_EVERY == 0 {
                    db.unwind_if_revision_cancelled();
                }
                seen.insert(next.clone());
                nodes.push((id, Some(step)));
                queue.push_back((next, nodes.len() as u32 - 1));
            }
        }
        let mut reached: Vec<AccessClass> = self
            .reached
            .iter()
            .map(|&c| self.classes[c as usize])
            .collect();
        reached.sort_by_key(|c| (c.0, c.1.key(), c.2, c.3));
        let explored = seen.len();
        let outcome = Outcome::NotFound {
            reached,
            cut: self.cut,
        };
        (outcome, explored)
    }

    /// Two different instances at racing accesses.
    fn racing(&mut self, s: &State) -> Option<(u8, u8)> {
        let at: Vec<(u8, u32)> = s
            .insts
            .iter()
            .enumerate()
            .filter(|(_, x)| x.status == Status::Run)
            .filter_map(|(i, x)| self.class[x.t as usize][x.pc as usize].map(|c| (i as u8, c)))
            .collect();
        for &(_, c) in &at {
            self.reached.insert(c);
        }
        for &(i, ci) in &at {
            for &(j, cj) in &at {
                if i != j && self.goal.contains(&(ci, cj)) {
                    return Some((i, j));
                }
            }
        }
        None
    }

    /// The visible instructions reachable from `pc` through silent ones.
    fn visible(&mut self, t: u8, pc: Pc) -> Vec<Pc> {
        if let Some(v) = self.closure[t as usize].get(&pc) {
            return v.clone();
        }
        let code = &self.model.threads[t as usize].code;
        let mut out = Vec::new();
        let mut seen = FxHashSet::default();
        let mut stack = vec![pc];
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            match code.get(p as usize).map(|i| &i.op) {
                Some(Op::Jump(t)) => stack.push(*t),
                Some(Op::Choice(ts)) => stack.extend(ts.iter().rev()),
                Some(_) => out.push(p),
                // Falling off the end of the code ends the thread.
                None => out.push(code.len() as Pc),
            }
        }
        out.sort_unstable();
        out.dedup();
        self.closure[t as usize].insert(pc, out.clone());
        out
    }

    /// Puts instance `i` at each visible successor of `pc`.
    fn land(&mut self, s: &State, i: usize, pc: Pc) -> Vec<State> {
        let t = s.insts[i].t;
        self.visible(t, pc)
            .into_iter()
            .map(|p| {
                let mut n = s.clone();
                n.insts[i].pc = p;
                n.insts[i].status = match self.model.threads[t as usize]
                    .code
                    .get(p as usize)
                    .map(|x| &x.op)
                {
                    None | Some(Op::End) => Status::Done,
                    Some(Op::Stop) => {
                        self.cut = true;
                        Status::Stuck
                    }
                    Some(Op::ExitProcess) => {
                        n.exited = true;
                        Status::Done
                    }
                    Some(_) => Status::Run,
                };
                n
            })
            .collect()
    }

    /// A new instance of model thread `t`.
    fn spawn(&mut self, s: &State, t: u8) -> Vec<State> {
        let mut n = s.clone();
        n.insts.push(Inst {
            t,
            pc: 0,
            status: Status::Run,
            joined: false,
        });
        let i = n.insts.len() - 1;
        self.land(&n, i, 0)
    }

    fn successors(&mut self, s: &State) -> Vec<(State, Step)> {
        let mut out = Vec::new();
        if s.exited {
            return out;
        }
        let model = self.model;
        for i in 0..s.insts.len() {
            let x = &s.insts[i];
            let step = |event| Step {
                inst: i as u8,
                pc: x.pc,
                event,
            };
            match x.status {
                Status::Run => {
                    let ins = &model.threads[x.t as usize].code[x.pc as usize];
                    for (n, e) in self.exec(s, i, &ins.op) {
                        out.push((n, step(e)));
                    }
                }
                Status::Wait {
                    lock, timed: true, ..
                } => {
                    let mut n = s.clone();
                    n.insts[i].status = Status::Relock { lock };
                    out.push((n, step(Event::TimedOut)));
                }
                Status::Relock { lock } => {
                    if self.relax.locks || lock_free(s, lock, false) {
                        let mut n = s.clone();
                        if !self.relax.locks {
                            n.owner[lock as usize] = i as u8;
                        }
                        let pc = x.pc;
                        for n in self.land(&n, i, pc + 1) {
                            out.push((n, step(Event::Woken)));
                        }
                    }
                }
                Status::Wait { .. } | Status::AtBarrier { .. } | Status::Done | Status::Stuck => {}
            }
        }
        out
    }

    /// The states after instance `i` executes `op`.
    fn exec(&mut self, s: &State, i: usize, op: &Op) -> Vec<(State, Event)> {
        let pc = s.insts[i].pc;
        let me = i as u8;
        let next = |this: &mut Self, n: State, e: Event| {
            this.land(&n, i, pc + 1)
                .into_iter()
                .map(|n| (n, e.clone()))
                .collect::<Vec<_>>()
        };
        match op {
            Op::Lock { lock, shared } => {
                if self.relax.locks {
                    return next(self, s.clone(), Event::Exec);
                }
                if !lock_free(s, *lock, *shared) {
                    return Vec::new();
                }
                let mut n = s.clone();
                acquire(&mut n, *lock, *shared, me);
                next(self, n, Event::Exec)
            }
            Op::TryLock {
                lock,
                shared,
                ok,
                fail,
            } => {
                let free = lock_free(s, *lock, *shared);
                let mut out = Vec::new();
                if free || self.relax.locks {
                    let mut n = s.clone();
                    if !self.relax.locks {
                        acquire(&mut n, *lock, *shared, me);
                    }
                    out.extend(self.land(&n, i, *ok).into_iter().map(|n| (n, Event::TryOk)));
                }
                if !free || self.relax.locks {
                    out.extend(
                        self.land(s, i, *fail)
                            .into_iter()
                            .map(|n| (n, Event::TryFail)),
                    );
                }
                out
            }
            Op::Unlock { lock } => {
                let mut n = s.clone();
                release(&mut n, *lock, me);
                next(self, n, Event::Exec)
            }
            Op::Wait { cond, lock, timed } => {
                if self.relax.cond(*cond) {
                    return next(self, s.clone(), Event::Exec);
                }
                let mut n = s.clone();
                release(&mut n, *lock, me);
                n.insts[i].status = Status::Wait {
                    cond: *cond,
                    lock: *lock,
                    timed: *timed,
                };
                vec![(n, Event::Exec)]
            }
            Op::Signal { cond, all } => {
                let waiters: Vec<u8> = s
                    .insts
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| matches!(x.status, Status::Wait { cond: c, .. } if c == *cond))
                    .map(|(j, _)| j as u8)
                    .collect();
                if self.relax.cond(*cond) || waiters.is_empty() {
                    return next(self, s.clone(), Event::Signalled(Vec::new()));
                }
                let groups: Vec<Vec<u8>> = if *all {
                    vec![waiters]
                } else {
                    waiters.into_iter().map(|w| vec![w]).collect()
                };
                let mut out = Vec::new();
                for g in groups {
                    let mut n = s.clone();
                    for &w in &g {
                        if let Status::Wait { lock, .. } = n.insts[w as usize].status {
                            n.insts[w as usize].status = Status::Relock { lock };
                        }
                    }
                    out.extend(next(self, n, Event::Signalled(g)));
                }
                out
            }
            Op::Create { children } => {
                if s.insts.len() >= MAX_INSTANCES {
                    self.cut = true;
                    return next(self, s.clone(), Event::Exec);
                }
                let mut out = Vec::new();
                for &c in children {
                    for n in self.spawn(s, c) {
                        let new = n.insts.len() as u8 - 1;
                        out.extend(next(self, n, Event::Created(new)));
                    }
                }
                out
            }
            Op::Join { sites } => {
                let target = s.insts.iter().position(|x| {
                    !x.joined
                        && self.model.threads[x.t as usize]
                            .site
                            .map(|st| sites.contains(&st))
                            .unwrap_or(false)
                });
                match target {
                    _ if self.relax.joins => next(self, s.clone(), Event::Joined(None)),
                    None => next(self, s.clone(), Event::Joined(None)),
                    Some(j) if s.insts[j].status == Status::Done => {
                        let mut n = s.clone();
                        n.insts[j].joined = true;
                        next(self, n, Event::Joined(Some(j as u8)))
                    }
                    Some(_) => Vec::new(),
                }
            }
            Op::Barrier { barrier } => {
                let b = *barrier as usize;
                if self.relax.barriers {
                    return next(self, s.clone(), Event::Exec);
                }
                let waiting = s.arrived[b];
                if waiting.count_ones() + 1 < self.model.barriers[b].1 {
                    let mut n = s.clone();
                    n.arrived[b] |= 1 << me;
                    n.insts[i].status = Status::AtBarrier { barrier: *barrier };
                    return vec![(n, Event::Exec)];
                }
                // The last arrival releases everyone waiting.
                let mut n = s.clone();
                n.arrived[b] = 0;
                let mut states = vec![n];
                for j in 0..s.insts.len() {
                    if waiting & (1 << j) != 0 {
                        let jpc = s.insts[j].pc;
                        states = states
                            .iter()
                            .flat_map(|st| self.land(st, j, jpc + 1))
                            .collect();
                    }
                }
                let released: Vec<u8> = (0..s.insts.len() as u8)
                    .filter(|j| waiting & (1 << j) != 0)
                    .collect();
                states
                    .into_iter()
                    .flat_map(|st| next(self, st, Event::Signalled(released.clone())))
                    .collect()
            }
            Op::Access { .. } => next(self, s.clone(), Event::Exec),
            Op::FlagWrite { flag, value } => {
                let mut n = s.clone();
                n.flags[*flag as usize] = value.unwrap_or(UNKNOWN);
                next(self, n, Event::Exec)
            }
            Op::FlagTest {
                flag,
                zero_on_true,
                then,
                els,
            } => {
                let v = s.flags[*flag as usize];
                let mut out = Vec::new();
                for zero in [true, false] {
                    let possible = self.relax.flag(*flag) || v == UNKNOWN || (v == 0) == zero;
                    if possible {
                        let target = if zero == *zero_on_true { *then } else { *els };
                        out.extend(
                            self.land(s, i, target)
                                .into_iter()
                                .map(|n| (n, Event::Tested(zero))),
                        );
                    }
                }
                out
            }
            Op::Jump(_) | Op::Choice(_) | Op::Stop | Op::End | Op::ExitProcess => Vec::new(),
        }
    }
}

fn lock_free(s: &State, lock: u16, shared: bool) -> bool {
    let l = lock as usize;
    s.owner[l] == NO_OWNER && (shared || s.readers[l] == 0)
}

fn acquire(s: &mut State, lock: u16, shared: bool, me: u8) {
    if shared {
        s.readers[lock as usize] |= 1 << me;
    } else {
        s.owner[lock as usize] = me;
    }
}

/// Releases the lock if `me` holds it (an unlock of a free lock is ignored).
fn release(s: &mut State, lock: u16, me: u8) {
    let l = lock as usize;
    if s.owner[l] == me {
        s.owner[l] = NO_OWNER;
    }
    s.readers[l] &= !(1 << me);
}

fn trace(nodes: &[(u32, Option<Step>)], mut id: u32) -> Vec<Step> {
    let mut steps = Vec::new();
    while id != u32::MAX {
        let (parent, step) = &nodes[id as usize];
        if let Some(s) = step {
            steps.push(s.clone());
        }
        id = *parent;
    }
    steps.reverse();
    steps
}
