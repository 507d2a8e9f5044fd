//! Explanations of races: a bounded interleaving search for a schedule that
//! makes the two accesses of a candidate race run back to back.
//!
//! Exists to turn a candidate race into a concrete, readable schedule, and to
//! refute candidates that a join, a lock-protected flag, a condition variable
//! or a barrier orders. This is Goanna's layered approach (a model check of
//! only the candidate, over an abstract thread model) with LaDR's notion of
//! a race: one access is enabled at the end of one context and the other at
//! the start of the next, so a race is a reachable state in which two
//! different thread instances are both about to perform racing accesses.
//!
//! The model ([`model`], built by [`build`]) has only the threads on the two
//! creation chains (and a few threads they create that join threads, see
//! [`add_joiners`]), and only their creations, joins, locks, trylocks,
//! condition variables, barriers, `pthread_once`, tested flags and the racing
//! accesses. [`search`] explores its interleavings breadth-first with state
//! hashing. Bounds: loops unrolled twice (a run that wants a third iteration
//! stops), calls inlined 12 deep, 60,000 instructions per thread, 8 thread
//! instances, 200,000 states per search, 6 thread pairs per report, and up
//! to 8 relaxed searches of 50,000 states to name what orders a refuted pair.
//!
//! [`Verdict::Refuted`] is given only when the model is complete (no gotos,
//! indirect calls, unresolved barriers or signals, stored trylock results,
//! recursion) and both accesses are reachable in it; it holds within the
//! loop and thread bounds. Locks that may stand for several objects are left
//! out of the model, which only adds schedules.

mod build;
mod model;
mod search;

use crate::db::FunctionId;
use crate::facts::AccessFact;
use crate::locate::{locate, short_path, LocateIndex, Located};
use crate::races::{races_at, thread_analysis};
use crate::report::{site_of, RaceReport, SiteRef};
use crate::snapshot::Analysis;
use model::{Model, Op};
use racelens_syntax::{AccessKind, LineIndex, Span};
use rustc_hash::{FxHashMap, FxHashSet};
use search::{AccessClass, Event, Outcome, Relax, Search, State, Step as RawStep};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Thread pairs checked per report; the rest leave the verdict unknown.
const MAX_THREAD_PAIRS: usize = 6;
/// Relaxed searches tried to name what orders a refuted pair.
const MAX_REASON_SEARCHES: usize = 8;

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub message: String,
    pub site: SiteRef,
    /// The thread instance taking the step ("`main`", "`worker` #2").
    pub thread: String,
}

/// A schedule that reaches the race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    pub steps: Vec<Step>,
}

impl Explanation {
    /// One numbered line per step.
    pub fn text(&self) -> String {
        self.steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {}\n", i + 1, s.message))
            .collect()
    }
}

/// Outcome of the bounded check of one candidate race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A schedule in which both accesses are enabled at once.
    Witness(Explanation),
    /// No schedule within the bounds races.
    Refuted(Refutation),
    /// The model is incomplete or the search ran out of states or budget.
    Unknown,
}

/// Work one check may do, summed over the models it builds and the
/// searches it runs (each thread pair, then the relaxed searches naming a
/// reason). Counts, not times, so that results do not depend on the
/// machine or its load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Statements compiled or scanned while building models.
    pub build: usize,
    /// Distinct states stored by the searches.
    pub states: usize,
}

impl Budget {
    /// Every model and search up to its own bounds: the `racelens.explain`
    /// command and `racelens check --explain`.
    pub const FULL: Budget = Budget {
        build: usize::MAX,
        states: usize::MAX,
    };
}

/// What orders the accesses of a refuted candidate: the first
/// synchronisation whose removal lets the search find a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderedBy {
    Join,
    Flag,
    Once,
    CondVar,
    Barrier,
    /// Only mutual exclusion: no join, flag, condition variable or barrier
    /// alone explains it.
    Locks,
    /// No single relaxation found a schedule (or the budget ran out).
    Unnamed,
}

/// Why no schedule within the bounds runs both accesses back to back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refutation {
    /// "ordered by the flag `ready` (L8, L14)"
    pub reason: String,
    pub by: OrderedBy,
    /// No loop or thread-instance bound cut the search: every run of the
    /// model was explored.
    pub exhaustive: bool,
}

impl Refutation {
    /// Whether the refutation overrules the walk. Orderings the walk does
    /// not see (joins of the modeled instances, flag protocols, condition
    /// variables, `pthread_once`, barriers) do. Mutual exclusion alone does
    /// not: the walk's locksets decide locks, and the model's locks know
    /// neither failed lock calls, nor unlocks of unknown mutexes, nor
    /// recursive mutexes. An unnamed reason is not trusted either.
    pub fn overrules_walk(&self) -> bool {
        !matches!(self.by, OrderedBy::Locks | OrderedBy::Unnamed)
    }
}

impl std::fmt::Display for Refutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// A schedule reaching the race, when the bounded search finds one.
pub fn explain(analysis: &Analysis, report: &RaceReport) -> Option<Explanation> {
    let analysis = &analysis.for_report(report);
    match check(analysis, report) {
        Verdict::Witness(e) => Some(e),
        _ => None,
    }
}

/// Checks a candidate race: searches each pair of racing threads.
pub fn check(analysis: &Analysis, report: &RaceReport) -> Verdict {
    check_within(analysis, report, Budget::FULL)
}

/// [`check`] within `budget`: a check that runs out of it is
/// [`Verdict::Unknown`].
pub fn check_within(analysis: &Analysis, report: &RaceReport, budget: Budget) -> Verdict {
    let analysis = &analysis.for_report(report);
    let located = locate(analysis.db(), analysis.workspace(), report);
    check_located(analysis, report, &located, budget)
}

/// Checks many reports of one snapshot, locating them all at once (per
/// program, on the first report of that program).
pub struct Checker<'a> {
    analysis: &'a Analysis,
    indexes: Vec<std::cell::OnceCell<(Analysis, LocateIndex)>>,
}

impl<'a> Checker<'a> {
    pub fn new(analysis: &'a Analysis) -> Self {
        Checker {
            analysis,
            indexes: analysis
                .programs()
                .iter()
                .map(|_| Default::default())
                .collect(),
        }
    }

    /// [`check_within`] for a report of this snapshot.
    pub fn check(&self, report: &RaceReport, budget: Budget) -> Verdict {
        let scoped = self.analysis.for_report(report);
        let k = self
            .analysis
            .programs()
            .iter()
            .position(|p| p.ws == scoped.workspace())
            .unwrap_or(0);
        let Some(cell) = self.indexes.get(k) else {
            return check_within(self.analysis, report, budget);
        };
        let (a, index) = cell.get_or_init(|| {
            let index = LocateIndex::new(scoped.db(), scoped.workspace());
            (scoped, index)
        });
        check_located(a, report, index.get(report), budget)
    }
}

fn check_located(
    analysis: &Analysis,
    report: &RaceReport,
    located: &[Located],
    budget: Budget,
) -> Verdict {
    let groups = thread_pairs(analysis, located);
    if groups.is_empty() {
        return Verdict::Unknown;
    }
    let left = Cell::new(budget.states);
    let work = Cell::new(budget.build);
    let mut refuted: Option<Refutation> = None;
    let mut unknown = groups.len() > MAX_THREAD_PAIRS;
    for ((tx, ty), pairs) in groups.into_iter().take(MAX_THREAD_PAIRS) {
        match check_pair(analysis, report, located, (tx, ty), &pairs, (&left, &work)) {
            Verdict::Witness(e) => return Verdict::Witness(e),
            Verdict::Refuted(r) => {
                // The weakest refutation of the pairs stands for the report.
                let keep = match &refuted {
                    None => true,
                    Some(old) => {
                        (old.overrules_walk() && !r.overrules_walk())
                            || (old.exhaustive && !r.exhaustive)
                    }
                };
                if keep {
                    refuted = Some(r);
                }
            }
            Verdict::Unknown => unknown = true,
        }
    }
    match refuted {
        Some(r) if !unknown => Verdict::Refuted(r),
        _ => Verdict::Unknown,
    }
}

/// Runs one search with at most `cap` states and what is `left` of the
/// budget, charging the states it stored.
fn search_within(
    db: &dyn salsa::Database,
    model: &Model,
    classes: &[(AccessClass, AccessClass)],
    relax: Relax,
    cap: usize,
    left: &Cell<usize>,
) -> Outcome {
    if left.get() == 0 {
        return Outcome::Exhausted;
    }
    let (outcome, used) = Search::new(model, classes, relax, cap.min(left.get())).run(db);
    left.set(left.get().saturating_sub(used));
    outcome
}

/// Racing pairs (reported access first) grouped by their two threads.
fn thread_pairs(
    analysis: &Analysis,
    located: &[Located],
) -> BTreeMap<(u32, u32), Vec<(AccessFact, AccessFact)>> {
    let db = analysis.db();
    let mut groups: BTreeMap<(u32, u32), Vec<(AccessFact, AccessFact)>> = BTreeMap::new();
    let mut seen: FxHashSet<(&AccessFact, &AccessFact)> = FxHashSet::default();
    for l in located {
        for p in races_at(db, l.loc).iter() {
            let (a, b) = (p.a as usize, p.b as usize);
            for (x, y) in [(a, b), (b, a)] {
                if l.at_site.contains(&x) && seen.insert((&l.facts[x], &l.facts[y])) {
                    let (fx, fy) = (l.facts[x].clone(), l.facts[y].clone());
                    groups
                        .entry((fx.thread, fy.thread))
                        .or_default()
                        .push((fx, fy));
                }
            }
        }
    }
    groups
}

/// At most this many threads off the two creation chains join the model
/// (see [`add_joiners`]).
const MAX_JOINERS: usize = 4;

/// Functions scanned, from a thread's entry through direct calls, for a
/// join (see [`add_joiners`]).
const JOIN_SCAN: usize = 64;

/// Adds to the modeled `threads` the threads they create that join threads
/// themselves (up to [`MAX_JOINERS`], children of modeled threads first in
/// table order). Where `main` creates `B` and then `A`, `A` joins `B` and
/// `main` joins `A`, a model without `A` has no instance for `main`'s join
/// to wait for, and `B`'s accesses stay unordered with `main`'s later ones
/// (fixture `join_by_sibling_thread.c`). An added thread only adds
/// constraints its code really has: if it blocks for good (a wait no
/// modeled thread signals), its joiner's later accesses become unreachable
/// and the pair is not refuted.
fn add_joiners(
    db: &dyn salsa::Database,
    ws: crate::db::Workspace,
    table: &crate::facts::ThreadTable,
    threads: &mut Vec<u32>,
) {
    let prog = crate::db::program(db, ws);
    let mut added = 0;
    while added < MAX_JOINERS {
        let next = (0..table.threads.len() as u32).find(|i| {
            let t = &table.threads[*i as usize];
            !threads.contains(i)
                && t.parent.is_some_and(|p| threads.contains(&p))
                && joins_threads(db, &prog, &t.entry)
        });
        let Some(i) = next else { break };
        threads.push(i);
        threads.sort_unstable();
        added += 1;
    }
}

/// Does the function `entry`, or one it calls directly (up to
/// [`JOIN_SCAN`] functions), join a thread?
fn joins_threads(db: &dyn salsa::Database, prog: &crate::db::Program, entry: &str) -> bool {
    let mut todo: Vec<FunctionId> = prog.functions.get(entry).cloned().unwrap_or_default();
    let mut seen: FxHashSet<FunctionId> = todo.iter().copied().collect();
    while let Some(f) = todo.pop() {
        let s = crate::db::walk_summary(db, f);
        if s.models
            .values()
            .any(|m| matches!(m, crate::config::CallModel::Join { .. }))
        {
            return true;
        }
        crate::visit::visit_calls(&s.ir.body, &mut |c| {
            if let racelens_syntax::Callee::Direct(n) = &c.callee {
                for &g in prog.functions.get(n).into_iter().flatten() {
                    if seen.len() < JOIN_SCAN && seen.insert(g) {
                        todo.push(g);
                    }
                }
            }
        });
    }
    false
}

fn check_pair(
    analysis: &Analysis,
    report: &RaceReport,
    located: &[Located],
    (tx, ty): (u32, u32),
    pairs: &[(AccessFact, AccessFact)],
    (left, work): (&Cell<usize>, &Cell<usize>),
) -> Verdict {
    let db = analysis.db();
    let ws = analysis.workspace();
    let ta = thread_analysis(db, ws);
    let table = &ta.table;
    let mut threads: Vec<u32> = table
        .chain(tx)
        .into_iter()
        .chain(table.chain(ty))
        .map(|(t, _)| t)
        .collect();
    threads.sort_unstable();
    threads.dedup();
    add_joiners(db, ws, table, &mut threads);
    let mut accesses = FxHashSet::default();
    for (x, y) in pairs {
        accesses.insert((x.thread, x.func, x.span));
        accesses.insert((y.thread, y.func, y.span));
    }
    let wanted = build::Wanted {
        threads: threads.clone(),
        accesses,
    };
    let model = build::build(db, ws, table, &wanted, work);
    if model.out_of_budget {
        return Verdict::Unknown;
    }
    let mt = |t: u32| threads.iter().position(|&x| x == t).unwrap_or(0) as u8;
    let classes: Vec<(AccessClass, AccessClass)> = pairs
        .iter()
        .map(|(x, y)| {
            (
                (mt(x.thread), x.func, x.span, x.kind),
                (mt(y.thread), y.func, y.span, y.kind),
            )
        })
        .collect();
    match search_within(
        db,
        &model,
        &classes,
        Relax::default(),
        search::MAX_STATES,
        left,
    ) {
        Outcome::Found { steps, last, a, b } => {
            let vars = access_names(analysis, report, located, pairs);
            Verdict::Witness(
                Render {
                    analysis,
                    report,
                    model: &model,
                    vars,
                    lines: Default::default(),
                    left,
                }
                .explanation(&steps, &last, a, b),
            )
        }
        Outcome::NotFound { reached, cut } => {
            let side = |f: &dyn Fn(&(AccessClass, AccessClass)) -> AccessClass| {
                classes.iter().any(|p| reached.contains(&f(p)))
            };
            if !model.complete || !side(&|p| p.0) || !side(&|p| p.1) {
                return Verdict::Unknown;
            }
            let r = Render {
                analysis,
                report,
                model: &model,
                vars: FxHashMap::default(),
                lines: Default::default(),
                left,
            };
            let (reason, by) = r.reason(&classes, cut);
            Verdict::Refuted(Refutation {
                reason,
                by,
                exhaustive: !cut,
            })
        }
        Outcome::Exhausted => Verdict::Unknown,
    }
}

/// The variable each racing access touches, by function and span.
fn access_names(
    analysis: &Analysis,
    report: &RaceReport,
    located: &[Located],
    pairs: &[(AccessFact, AccessFact)],
) -> FxHashMap<(FunctionId, Span), String> {
    let db = analysis.db();
    let mut m = FxHashMap::default();
    let bases: Vec<_> = located.iter().map(|l| l.loc.key(db).clone()).collect();
    for (x, y) in pairs {
        for f in [x, y] {
            let name = bases
                .first()
                .map(|b| f.key(b).display())
                .unwrap_or_else(|| report.var.clone());
            m.entry((f.func, f.span)).or_insert(name);
        }
    }
    m
}

/// Turns search results into text.
struct Render<'a> {
    analysis: &'a Analysis,
    report: &'a RaceReport,
    model: &'a Model,
    vars: FxHashMap<(FunctionId, Span), String>,
    lines: std::cell::RefCell<FxHashMap<PathBuf, LineIndex>>,
    /// States left in the check's budget.
    left: &'a Cell<usize>,
}

impl Render<'_> {
    fn site(&self, at: model::At) -> SiteRef {
        match at {
            Some((f, sp)) => site_of(self.analysis.db(), f, sp),
            None => self.report.site.clone(),
        }
    }

    /// "L12" in the report's file, "other.c:12" elsewhere.
    fn line(&self, site: &SiteRef) -> String {
        let Some(text) = self.analysis.file_text(&site.file) else {
            return "?".into();
        };
        let mut lines = self.lines.borrow_mut();
        let li = lines
            .entry(site.file.clone())
            .or_insert_with(|| LineIndex::new(&text));
        let n = li.line_of(site.start.min(text.len())) + 1;
        if site.file == self.report.site.file {
            format!("L{n}")
        } else {
            format!("{}:{n}", short_path(&site.file))
        }
    }

    /// "`main`", or "`worker` #2" for the second instance running `worker`.
    fn label(&self, st: &State, i: u8) -> String {
        let t = st.insts[i as usize].t as usize;
        let th = &self.model.threads[t];
        if th.start == 1 {
            return format!("`{}`", th.entry);
        }
        let k = st.insts[..=i as usize]
            .iter()
            .filter(|x| self.model.threads[x.t as usize].entry == th.entry)
            .count();
        format!("`{}` #{k}", th.entry)
    }

    fn explanation(&self, steps: &[RawStep], last: &State, a: u8, b: u8) -> Explanation {
        let mut out = Vec::new();
        for s in steps {
            if let Some(step) = self.step(s, last) {
                out.push(step);
            }
        }
        let kind = |i: u8| match self.op_of(last, i) {
            Op::Access { kind } => *kind,
            _ => AccessKind::Read,
        };
        let at_report = |i: u8| self.site(self.at_of(last, i)) == self.report.site;
        let (first, second) = match (kind(a), kind(b)) {
            (AccessKind::Write, AccessKind::Read) => (a, b),
            (AccessKind::Read, AccessKind::Write) => (b, a),
            _ if at_report(b) && !at_report(a) => (b, a),
            _ => (a, b),
        };
        for i in [first, second] {
            let at = self.at_of(last, i);
            let site = self.site(at);
            let locks: Vec<String> = last
                .held_by(i)
                .iter()
                .map(|&l| format!("`{}`", self.model.locks[l as usize]))
                .collect();
            let verb = if kind(i) == AccessKind::Read {
                "reads"
            } else {
                "writes"
            };
            let (who, var, line) = (self.label(last, i), self.var(at), self.line(&site));
            let message = format!(
                "{who} {verb} `{var}` at {line} holding {{{}}}",
                locks.join(", ")
            );
            out.push(Step {
                message,
                site,
                thread: who,
            });
        }
        Explanation { steps: out }
    }

    fn op_of(&self, st: &State, i: u8) -> &Op {
        let x = &st.insts[i as usize];
        &self.model.threads[x.t as usize].code[x.pc as usize].op
    }

    fn at_of(&self, st: &State, i: u8) -> model::At {
        let x = &st.insts[i as usize];
        self.model.threads[x.t as usize].code[x.pc as usize].at
    }

    fn var(&self, at: model::At) -> String {
        at.and_then(|k| self.vars.get(&k).cloned())
            .unwrap_or_else(|| self.report.var.clone())
    }

    /// The message of one step of the schedule, if it says something.
    fn step(&self, s: &RawStep, last: &State) -> Option<Step> {
        let t = last.insts[s.inst as usize].t as usize;
        let ins = &self.model.threads[t].code[s.pc as usize];
        let site = self.site(ins.at);
        let at = self.line(&site);
        let who = self.label(last, s.inst);
        let lock = |l: &u16| self.model.locks[*l as usize].clone();
        let cond = |c: &u16| self.model.conds[*c as usize].clone();
        let message = match (&ins.op, &s.event) {
            (Op::Create { .. }, Event::Created(n)) => {
                format!("thread {} created at {at}", self.label(last, *n))
            }
            (Op::Lock { lock: l, shared }, _) => format!(
                "{who} {} `{}` at {at}",
                if *shared { "read-locks" } else { "locks" },
                lock(l)
            ),
            (Op::TryLock { lock: l, .. }, Event::TryOk) => {
                format!("{who} acquires `{}` with a trylock at {at}", lock(l))
            }
            (Op::TryLock { lock: l, .. }, _) => {
                format!("{who} fails to acquire `{}` at {at}", lock(l))
            }
            (Op::Unlock { lock: l }, _) => format!("{who} unlocks `{}` at {at}", lock(l)),
            (
                Op::Wait {
                    cond: c, lock: l, ..
                },
                Event::Woken,
            ) => format!(
                "{who} wakes up from `{}` and re-acquires `{}` at {at}",
                cond(c),
                lock(l)
            ),
            (Op::Wait { cond: c, .. }, Event::TimedOut) => {
                format!("{who} times out waiting on `{}` at {at}", cond(c))
            }
            (
                Op::Wait {
                    cond: c, lock: l, ..
                },
                _,
            ) => format!(
                "{who} waits on `{}` at {at}, releasing `{}`",
                cond(c),
                lock(l)
            ),
            (Op::Signal { cond: c, all }, Event::Signalled(ws)) => {
                let woken: Vec<String> = ws.iter().map(|w| self.label(last, *w)).collect();
                let tail = if woken.is_empty() {
                    " (nobody waits)".to_string()
                } else {
                    format!(", waking {}", woken.join(", "))
                };
                format!(
                    "{who} {} `{}` at {at}{tail}",
                    if *all { "broadcasts" } else { "signals" },
                    cond(c)
                )
            }
            (Op::Barrier { barrier }, Event::Signalled(ws)) => {
                let woken: Vec<String> = ws.iter().map(|w| self.label(last, *w)).collect();
                format!(
                    "{who} reaches barrier `{}` at {at}, releasing {}",
                    self.model.barriers[*barrier as usize].0,
                    woken.join(", ")
                )
            }
            (Op::Barrier { barrier }, _) => format!(
                "{who} waits at barrier `{}` at {at}",
                self.model.barriers[*barrier as usize].0
            ),
            (Op::Join { .. }, Event::Joined(Some(j))) => {
                format!("{who} joins {} at {at}", self.label(last, *j))
            }
            (Op::Join { .. }, _) => return None,
            (Op::Access { kind }, _) => format!(
                "{who} {} `{}` at {at}",
                if *kind == AccessKind::Read {
                    "reads"
                } else {
                    "writes"
                },
                self.var(ins.at)
            ),
            (Op::FlagWrite { flag, value }, _) => {
                let f = &self.model.flags[*flag as usize];
                if f.name.starts_with("once:") {
                    return None;
                }
                match value {
                    Some(v) => format!("{who} sets `{}` to {v} at {at}", f.name),
                    None => format!("{who} writes `{}` at {at}", f.name),
                }
            }
            (Op::FlagTest { flag, .. }, Event::Tested(zero)) => {
                let f = &self.model.flags[*flag as usize];
                match (f.name.starts_with("once:"), zero) {
                    (true, true) => format!("{who} runs the `pthread_once` routine at {at}"),
                    (true, false) => format!("{who} finds the `pthread_once` routine done at {at}"),
                    (false, true) => format!("{who} sees `{}` == 0 at {at}", f.name),
                    (false, false) => format!("{who} sees `{}` != 0 at {at}", f.name),
                }
            }
            _ => return None,
        };
        Some(Step {
            message,
            site,
            thread: who,
        })
    }

    /// Why a refuted pair cannot race: the first synchronisation whose
    /// removal lets the search find a schedule (joins, then each flag, each
    /// condition variable, then all locks).
    fn reason(&self, classes: &[(AccessClass, AccessClass)], cut: bool) -> (String, OrderedBy) {
        let bound = if cut {
            format!(
                " (within {} loop iterations and {} threads)",
                build::LOOP_UNROLL,
                search::MAX_INSTANCES
            )
        } else {
            String::new()
        };
        let mut tries: Vec<(Relax, OrderedBy, String)> = Vec::new();
        if self.has(|op| matches!(op, Op::Join { .. })) {
            tries.push((
                Relax {
                    joins: true,
                    ..Relax::default()
                },
                OrderedBy::Join,
                format!(
                    "ordered by thread joins ({})",
                    self.lines_of(|op| matches!(op, Op::Join { .. }))
                ),
            ));
        }
        for (i, f) in self.model.flags.iter().enumerate() {
            let i = i as u16;
            let uses = |op: &Op| matches!(op, Op::FlagTest { flag, .. } | Op::FlagWrite { flag, .. } if *flag == i);
            let (what, by) = if f.name.starts_with("once:") {
                ("ordered by `pthread_once`".to_string(), OrderedBy::Once)
            } else {
                (format!("ordered by the flag `{}`", f.name), OrderedBy::Flag)
            };
            tries.push((
                Relax {
                    flags: Relax::bit(i),
                    ..Relax::default()
                },
                by,
                format!("{what} ({})", self.lines_of(uses)),
            ));
        }
        for (i, c) in self.model.conds.iter().enumerate() {
            let i = i as u16;
            let uses = |op: &Op| matches!(op, Op::Wait { cond, .. } | Op::Signal { cond, .. } if *cond == i);
            tries.push((
                Relax {
                    conds: Relax::bit(i),
                    ..Relax::default()
                },
                OrderedBy::CondVar,
                format!(
                    "ordered by the condition variable `{c}` ({})",
                    self.lines_of(uses)
                ),
            ));
        }
        if !self.model.barriers.is_empty() {
            let names: Vec<String> = self
                .model
                .barriers
                .iter()
                .map(|b| format!("`{}`", b.0))
                .collect();
            tries.push((
                Relax {
                    barriers: true,
                    ..Relax::default()
                },
                OrderedBy::Barrier,
                format!(
                    "ordered by the barrier {} ({})",
                    names.join(", "),
                    self.lines_of(|op| matches!(op, Op::Barrier { .. }))
                ),
            ));
        }
        if !self.model.locks.is_empty() {
            let names: Vec<String> = self.model.locks.iter().map(|l| format!("`{l}`")).collect();
            tries.push((
                Relax {
                    locks: true,
                    ..Relax::default()
                },
                OrderedBy::Locks,
                format!("excluded by the locking of {}", names.join(", ")),
            ));
        }
        for (relax, by, why) in tries.into_iter().take(MAX_REASON_SEARCHES) {
            if let Outcome::Found { .. } = search_within(
                self.analysis.db(),
                self.model,
                classes,
                relax,
                search::MAX_STATES / 4,
                self.left,
            ) {
                return (format!("{why}{bound}"), by);
            }
        }
        (
            format!("no schedule runs both accesses back to back{bound}"),
            OrderedBy::Unnamed,
        )
    }

    fn has(&self, is: impl Fn(&Op) -> bool) -> bool {
        self.model
            .threads
            .iter()
            .flat_map(|t| t.code.iter())
            .any(|i| is(&i.op))
    }

    /// "L10, L22": where the instructions `is` selects come from.
    fn lines_of(&self, is: impl Fn(&Op) -> bool) -> String {
        let mut lines: Vec<String> = Vec::new();
        for ins in self
            .model
            .threads
            .iter()
            .flat_map(|t| t.code.iter())
            .filter(|i| is(&i.op))
        {
            let l = self.line(&self.site(ins.at));
            if !lines.contains(&l) {
                lines.push(l);
            }
        }
        lines.sort_by_key(|l| l.trim_start_matches('L').parse::<u32>().unwrap_or(u32::MAX));
        lines.truncate(4);
        lines.join(", ")
    }
}
