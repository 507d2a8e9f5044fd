//! The thread walk: a forward, context-sensitive interpretation of each
//! thread from its entry point (RacerF Sections 5-6).
//!
//! One pass computes, at every access, the must- and may-locksets, the spawn
//! sites already executed and those certainly joined (active-threads
//! analysis), and resolves the accessed memory through a small points-to
//! analysis (thread arguments, locals whose address escapes, heap sites).
//! Functions are summarised per calling context (locks held, threads created,
//! pointer arguments) and memoized. Budgets bound steps and contexts so that
//! pathological programs end with a partial, flagged result.

use crate::config::CallModel;
use crate::db::{function_summary, program, FunctionId, FunctionSummary, Program, Workspace};
use crate::facts::*;
use crate::model::*;
use crate::visit::{visit_calls, visit_stmts};
use frames::{Frame, FrameBase};
use memo::{MemoKey, Node};
use racelens_syntax::{Call, Callee, Expr, Name, Stmt};
use record::{LastCtx, Recorded};
use rustc_hash::{FxHashMap, FxHashSet};
use state::{Ptrs, State};
use std::sync::Arc;
use stmts::JmpFrame;

mod calls;
mod eval;
mod finish;
mod frames;
mod incremental;
mod locks;
mod memo;
mod record;
mod state;
mod stmts;
mod store;
mod wild;
pub use incremental::{set_incremental, set_verify, stats as incremental_stats};
pub use memo::{copies_made, set_copies};

/// Statement visits allowed per thread before the walk gives up.
const STEP_BUDGET: u64 = 3_000_000;

/// Calling contexts analysed per function and thread.
const CONTEXT_BUDGET: usize = 24;

/// Abstract threads in the whole program.
const THREAD_BUDGET: usize = 512;

const MAX_VALS: usize = 16;

/// Heap sites a path follows the freshness of; past that, allocations on
/// the path are not fresh.
const MAX_ALLOCATED: usize = 64;

/// Locks tracked as held at once; more are a budget overrun.
const MAX_HELD: usize = 64;

/// Library roots walked as threads of their own; with more, all roots run
/// in one abstract client thread (one walk instead of one per root).
const LIBRARY_ROOT_THREADS: usize = 48;

/// Entries kept in the small per-state lists (acquired locks, pending lock
/// results, symbolic locks, creation pairs).
const MAX_TRACKED: usize = 32;

const MAX_LOOP_ITERS: usize = 4;

/// Accesses kept per base object for the race check. The walk records
/// every access (up to [`HARD_MAX_FACTS`]) and the cap is applied after it,
/// in an order that does not depend on the order the walk found them
/// ([`cap_facts`]), so that an incremental update keeps the same ones.
const MAX_FACTS: usize = 4096;

/// Accesses (and struct prefixes) recorded per base object during the walk;
/// beyond this the walk drops them in walk order and is not kept for
/// incremental updates (a bound on memory, not a precision knob).
const HARD_MAX_FACTS: usize = 8 * MAX_FACTS;

/// Struct prefixes used per base object (the first in path order).
const MAX_PREFIXES: usize = 64;

/// A possible value of a pointer expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Val {
    Target(LocKey),
    Func(Name),
}

type Vals = Vec<Val>;

fn add_vals(into: &mut Vals, more: impl IntoIterator<Item = Val>) -> bool {
    let mut changed = false;
    for v in more {
        if into.len() >= MAX_VALS {
            break;
        }
        if let Err(p) = into.binary_search(&v) {
            into.insert(p, v);
            changed = true;
        }
    }
    changed
}

/// The name of a callback group's thread: its entry functions.
fn group_name(roots: &[(Name, Vals)]) -> Name {
    let mut names: Vec<&str> = roots.iter().take(3).map(|r| &*r.0).collect();
    if roots.len() > 3 {
        names.push("...");
    }
    Name::from(names.join(", "))
}

/// The value under any casts: `(T *) (U *) e` is `e`.
fn uncast(mut e: &Expr) -> &Expr {
    while let Expr::Cast { value, .. } = e {
        e = value;
    }
    e
}

/// The objects among pointer values.
fn targets(vals: Vals) -> Vec<LocKey> {
    vals.into_iter()
        .filter_map(|v| match v {
            Val::Target(k) => Some(k),
            _ => None,
        })
        .collect()
}

/// The elements of `a` that are also in `b`, in `a`'s order.
fn common<T: Clone + PartialEq>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

/// (site or thread, lock) pairs.
type SiteLocks = Vec<(u32, LocKey)>;

/// Everything a walk owns. It outlives the revision so that the next edit
/// can update it instead of walking again from scratch.
#[derive(Default)]
struct WalkData {
    thread: u32,
    threads: Vec<Thread>,
    sites: Vec<Site>,
    site_index: FxHashMap<(FunctionId, u32), u32>,
    thread_index: FxHashMap<(u32, u32, Name), u32>,
    /// Callback threads by function.
    callback_index: FxHashMap<Name, u32>,
    /// Callback groups: the entry functions (with their arguments) of a
    /// thread that runs the callbacks one thread handed to unknown code.
    group_roots: FxHashMap<u32, Vec<(Name, Vals)>>,
    /// The callback group of each registering thread.
    callback_group: FxHashMap<u32, u32>,
    thread_args: Vec<Vals>,
    /// Per thread: (ancestor site, lock) acquired along the creation chain.
    thread_acquired: Vec<Vec<(u32, LocKey)>>,
    facts: FxHashMap<Base, FxHashSet<Recorded>>,
    /// For each concrete base: path prefixes that hold a struct, and its type.
    struct_prefixes: FxHashMap<Base, FxHashSet<(Vec<Elem>, Name)>>,
    /// Memoized return values of functions (context-insensitive).
    returns: std::cell::RefCell<FxHashMap<FunctionId, Vals>>,
    /// Function summaries read so far.
    summaries: std::cell::RefCell<FxHashMap<FunctionId, Arc<FunctionSummary>>>,
    /// Allocation wrappers (see [`Walker::is_alloc_wrapper`]), by function.
    wrappers: std::cell::RefCell<FxHashMap<FunctionId, bool>>,
    /// The current thread's memo: calling context (see [`MemoKey`]) -> its
    /// nodes, in walk order.
    memo: FxHashMap<MemoKey, Vec<u32>>,
    /// The transparent nodes of every thread walked so far, by calling
    /// context without its context fields (see [`copy_key`]). A copy
    /// records in the copying thread, so other threads' nodes serve too.
    copies: FxHashMap<MemoKey, Vec<u32>>,
    /// Contexts copied instead of walked, and the statements that saved.
    copied: (u64, u64),
    contexts: FxHashMap<FunctionId, usize>,
    stack: Vec<FunctionId>,
    /// Spawn sites visited by each active function walk.
    sites_stack: Vec<Vec<u32>>,
    steps: u64,
    loop_depth: u32,
    /// The current statement's flow-sensitive local pointers (`State::ptrs`),
    /// read by `eval`.
    cur_ptrs: std::cell::RefCell<Ptrs>,
    /// Where `main` stored its own thread id (`pthread_self()`).
    main_tids: Vec<LocKey>,
    /// Loops being walked, innermost last: (call-stack depth, range).
    loops: Vec<(usize, Option<Name>)>,
    /// Flow-insensitive contents of non-local pointer cells.
    store: FxHashMap<LocKey, Vals>,
    /// The paths of the recorded accesses, one allocation each (see
    /// [`Recorded`]'s hash).
    paths: FxHashSet<Arc<[Elem]>>,
    /// While the pointer store is built: the cells the function being
    /// processed read (see [`Walker::build_store`]).
    store_reads: std::cell::RefCell<Option<FxHashSet<LocKey>>>,
    incomplete: FxHashMap<FunctionId, String>,
    replayed_sites: FxHashSet<u32>,
    /// Sites of replays made outside any node (a thread root met again).
    root_replayed: FxHashSet<u32>,
    /// Allocation sites visited inside a loop (they stand for many objects),
    /// with the epoch at which each was first seen there.
    heap_in_loop: FxHashMap<Base, u64>,
    /// Does the program create threads at all? Callbacks handed to unknown
    /// code are treated as threads only then.
    has_threads: bool,
    /// Interned fact contexts.
    ctxs: FxHashMap<Arc<FactCtx>, u64>,
    last_ctx: Option<LastCtx>,
    /// Frames by function and pointer arguments.
    frames: std::cell::RefCell<FxHashMap<(FunctionId, Vec<Vals>), Arc<Frame>>>,
    /// The argument-independent part of each function's frames.
    frame_bases: std::cell::RefCell<FxHashMap<FunctionId, Arc<FrameBase>>>,
    /// Per site: locks the creator held from the spawn until the thread ended.
    protected: FxHashMap<u32, Vec<LocKey>>,
    /// Per site: (sibling site, lock) where the lock was also held since the
    /// sibling spawned, until this site's thread was joined.
    joined_inside: FxHashMap<u32, Vec<(u32, LocKey)>>,
    /// Joins of a thread id no site of the joining thread had stored yet
    /// (`main` joins the thread its child creates into a global): joiner,
    /// thread id, and the `clean` locks at the join. A descendant's site
    /// that stores that id is resolved against them when its thread starts.
    pending_joins: Vec<(u32, LocKey, SiteLocks)>,
    /// Functions whose statements recorded a pending join (by function:
    /// node numbers change when an update compacts the graph).
    pending_join_fns: FxHashSet<FunctionId>,
    /// `setjmp` points being walked, innermost last.
    jmps: Vec<JmpFrame>,
    /// `longjmp` calls walked so far: a context that jumps is not memoized,
    /// since a replay would not deliver its state to the `setjmp`.
    longjmps: u64,
    // ----- the node graph, for incremental updates ------------------------
    nodes: Vec<Node>,
    /// Nodes being walked, innermost last.
    node_stack: Vec<u32>,
    /// Per finished thread: its memo, root nodes, steps and context counts.
    thread_memos: Vec<FxHashMap<MemoKey, Vec<u32>>>,
    thread_roots: Vec<Vec<u32>>,
    thread_steps: Vec<u64>,
    thread_contexts: Vec<FxHashMap<FunctionId, usize>>,
    /// Counts changes to state shared by the whole walk (sites, threads,
    /// heap-in-loop, protected locks, budgets).
    epoch: u64,
    /// The epoch of the latest change to any spawn site.
    sites_epoch: u64,
    /// A fact or prefix set hit its cap: the result depends on walk order.
    capped: bool,
    /// A thread ran out of steps: the result depends on walk order.
    exhausted: bool,
    /// Nodes keep their facts, for incremental updates.
    keep: bool,
    /// Reachable facts with counts, kept by incremental updates.
    counts: Option<incremental::Counts>,
    /// While re-walking a node: the epoch it was first walked at.
    rewalk: Option<u64>,
    /// Nodes a re-walk must not replay (the edited function's nodes and
    /// their callers): replaying them would hide a new recursion.
    forbidden: FxHashSet<u32>,
    /// The node being re-walked.
    rewalk_node: u32,
    /// Nodes `rewalk_node + 1 .. rewalk_end` were first walked during the
    /// re-walked node's first walk.
    rewalk_end: u32,
    /// Nodes after it that the re-walk has met (a walk from scratch would
    /// create them during the node's walk).
    encountered: FxHashSet<u32>,
    /// Why the re-walk met something it cannot reproduce exactly.
    bailed: Option<&'static str>,
}

/// Runs the walk over every thread of the workspace, updating the previous
/// revision's walk when only one function body changed.
pub fn analyse(db: &dyn salsa::Database, ws: Workspace) -> ThreadAnalysis {
    let prog: Arc<Program> = program(db, ws).clone();
    // A program that can start no thread is not walked (see `walk_all`): an
    // update of an earlier revision's walk would still record its accesses.
    let w = Walker::new(db, &prog);
    if !incremental::enabled() || w.single_threaded(w.creates_threads(), w.is_library()) {
        return walk_all(db, &prog).0;
    }
    let summaries: FxHashMap<FunctionId, Arc<FunctionSummary>> = prog
        .functions
        .values()
        .flatten()
        .map(|f| (*f, function_summary(db, *f).clone()))
        .collect();
    if let Some(snap) = incremental::take(&prog, &summaries) {
        match incremental::update(db, &prog, &summaries, snap) {
            Ok((result, snap)) => {
                if incremental::verifying() {
                    let (full, _) = walk_all(db, &prog);
                    assert!(
                        full == result,
                        "racelens: incremental walk differs from a full walk"
                    );
                }
                incremental::keep(snap);
                incremental::count(true);
                return result;
            }
            Err(why) => {
                if std::env::var_os("RACELENS_TIMING").is_some() {
                    eprintln!("racelens: walk: full walk ({why})");
                }
            }
        }
    }
    let started = std::time::Instant::now();
    let (result, data) = walk_all(db, &prog);
    if std::env::var_os("RACELENS_TIMING").is_some() {
        eprintln!("racelens: walk from scratch in {:.1?}", started.elapsed());
    }
    incremental::count(false);
    if let Some(data) = data {
        incremental::keep(incremental::Snapshot::new(prog, summaries, data, &result));
    }
    result
}

/// The walk from scratch. Also returns its data when a later revision may
/// update it incrementally.
fn walk_all(db: &dyn salsa::Database, prog: &Arc<Program>) -> (ThreadAnalysis, Option<WalkData>) {
    let prog = &**prog;
    let mut w = Walker::new(db, prog);
    w.d.has_threads = w.creates_threads();
    let library = w.is_library();
    if w.single_threaded(w.d.has_threads, library) {
        // No thread can ever start: a single-threaded program has no races.
        w.d.threads
            .push(Thread::new(Name::from("main"), None, None, true));
        return (w.finish(), None);
    }
    let t_store = std::time::Instant::now();
    w.build_store();
    if std::env::var_os("RACELENS_TIMING").is_some() {
        eprintln!("racelens: walk: pointer store in {:.1?}", t_store.elapsed());
    }
    let mut t_thread = std::time::Instant::now();
    // Frames built while the store was incomplete are stale.
    w.d.frames.borrow_mut().clear();
    w.d.returns.borrow_mut().clear();
    w.d.wrappers.borrow_mut().clear();
    // The root thread: `main`, or every function nobody calls. In library
    // mode the roots are threads of their own, below, and `main` stays
    // empty; a library with too many roots for one walk each (a whole API)
    // runs them all in one non-unique "library client" thread instead.
    let library_roots = if library {
        w.library_roots()
    } else {
        Vec::new()
    };
    let one_client = library_roots.len() > LIBRARY_ROOT_THREADS;
    let roots: Vec<FunctionId> = match prog.functions_named("main") {
        // A folder may hold several programs (tools, tests): every `main` is
        // a root of the main thread.
        Some(m) => m.clone(),
        None if one_client => library_roots.iter().map(|r| r.1).collect(),
        None if library => Vec::new(),
        None => w.uncalled_functions(),
    };
    w.d.threads.push(Thread::new(
        Name::from(if one_client { "library client" } else { "main" }),
        None,
        None,
        !one_client,
    ));
    w.d.thread_args.push(Vec::new());
    w.d.thread_acquired.push(Vec::new());
    w.d.thread_roots.push(Vec::new());
    for r in &roots {
        let exit = w.walk_fn(*r, State::default(), Vec::new());
        w.thread_ended(exit);
    }
    w.end_thread();
    if library && !one_client {
        w.library_threads(library_roots);
    }
    let mut t = 1;
    while t < w.d.threads.len() {
        w.d.thread = t as u32;
        if std::env::var_os("RACELENS_TIMING").is_some() {
            eprintln!(
                "racelens: walk: thread {} `{}` done: {} steps, {} nodes so far, {:.1?}",
                t - 1,
                w.d.threads[t - 1].entry,
                w.d.thread_steps.last().copied().unwrap_or(0),
                w.d.nodes.len(),
                t_thread.elapsed()
            );
            t_thread = std::time::Instant::now();
        }
        w.d.thread_roots.push(Vec::new());
        let entry = w.d.threads[t].entry.clone();
        let args = w.d.thread_args[t].clone();
        let mut init = State::default();
        // Creation locksets: what the creator held across this thread's life,
        // plus what its own creators held across theirs.
        let mut cl = Vec::new();
        if let (Some(site), Some(parent)) = (w.d.threads[t].site, w.d.threads[t].parent) {
            for l in w.d.protected.get(&site).cloned().unwrap_or_default() {
                cl.push((parent, l));
            }
            cl.extend(w.d.threads[parent as usize].creation_locks.iter().cloned());
        }
        let (ancestor_locks, ancestor_inside) = w.ancestor_joins(t as u32);
        cl.extend(ancestor_locks);
        for (_, l) in &cl {
            // The thread itself never holds these; it only inherits them for
            // its own children, whose creation it brackets.
            init.clean.retain(|c| &c.1 != l);
        }
        w.d.threads[t].creation_locks = cl;
        if let Some(site) = w.d.threads[t].site {
            w.d.threads[t].joined_inside =
                w.d.joined_inside.get(&site).cloned().unwrap_or_default();
            w.d.threads[t].joined_inside.extend(ancestor_inside);
        }
        if w.d.group_roots.contains_key(&(t as u32)) {
            // A callback group: its roots, including those its own walk adds.
            let mut i = 0;
            while let Some((name, args)) = w.d.group_roots[&(t as u32)].get(i).cloned() {
                if let Some(fs) = prog.functions_named(&name) {
                    let exit = w.walk_fn(fs[0], init.clone(), vec![args]);
                    w.thread_ended(exit);
                }
                i += 1;
            }
        } else if let Some(fs) = prog.functions_named(&entry) {
            let f = fs[0];
            let bindings = vec![args];
            let exit = w.walk_fn(f, init, bindings);
            w.thread_ended(exit);
        }
        w.end_thread();
        t += 1;
    }
    if std::env::var_os("RACELENS_TIMING").is_some() {
        let total: usize = w.d.facts.values().map(|f| f.len()).sum();
        let max = w.d.facts.values().map(|f| f.len()).max().unwrap_or(0);
        eprintln!("racelens: walk: {} threads, {} sites, {} steps in last thread, {} fact contexts, {} bases, {} facts (max {} per base)", w.d.threads.len(), w.d.sites.len(), w.d.thread_steps.last().copied().unwrap_or(0), w.d.ctxs.len(), w.d.facts.len(), total, max);
        eprintln!(
            "racelens: walk: {} contexts copied instead of walked ({} statements)",
            w.d.copied.0, w.d.copied.1
        );
    }
    w.release_copies();
    let result = w.finish();
    let incremental = prog.functions_named("main").is_some() && !w.d.exhausted && !w.d.capped;
    if std::env::var_os("RACELENS_TIMING").is_some() && !incremental {
        eprintln!(
            "racelens: walk: not kept for incremental updates (out of steps: {}, capped: {})",
            w.d.exhausted, w.d.capped
        );
    }
    (result, incremental.then_some(w.d))
}

struct Walker<'a> {
    db: &'a dyn salsa::Database,
    prog: &'a Program,
    d: WalkData,
    /// Per access place (the function and the address of its expression in
    /// the function's summary, which the walker holds for its whole life):
    /// is it atomic or volatile ([`Walker::type_of`], which every access
    /// would otherwise ask again in every context)?
    untracked: std::cell::RefCell<FxHashMap<(FunctionId, usize), bool>>,
}

impl<'a> Walker<'a> {
    fn new(db: &'a dyn salsa::Database, prog: &'a Program) -> Self {
        Walker {
            db,
            prog,
            d: WalkData {
                keep: incremental::enabled(),
                ..WalkData::default()
            },
            untracked: Default::default(),
        }
    }

    /// Does some call of the program create a thread?
    fn creates_threads(&self) -> bool {
        self.prog.functions.values().flatten().any(|f| {
            self.summary(*f)
                .models
                .values()
                .any(|m| matches!(m, CallModel::Create { .. }))
        })
    }

    /// Library mode: a program without `main` that takes locks is a library
    /// (or a kernel module) whose functions its clients may call from any
    /// number of threads at once.
    fn is_library(&self) -> bool {
        self.prog.functions_named("main").is_none() && self.uses_locks()
    }

    /// Can no thread ever start? Then the program has no races and is not
    /// walked. `has_threads` and `library` are [`Self::creates_threads`] and
    /// [`Self::is_library`], which the walk needs too.
    fn single_threaded(&self, has_threads: bool, library: bool) -> bool {
        !has_threads && !library && !self.thread_entry_escapes()
    }

    /// At the end of a thread, the sites it created and never joined keep the
    /// locks that were never released (a lock held at exit is never released).
    fn thread_ended(&mut self, exit: Option<State>) {
        let t = self.d.thread as usize;
        self.d.threads[t].leaks = exit.as_ref().map(|e| e.active.clone());
        let Some(exit) = exit else { return };
        for &s in &exit.created.0 {
            if !exit.active.contains(s) {
                continue;
            }
            let held: Vec<LocKey> = exit
                .clean
                .iter()
                .filter(|(x, _)| *x == s)
                .map(|(_, l)| l.clone())
                .collect();
            self.protect(s, held, Vec::new());
        }
    }

    /// Locks acquired by this thread (tagged with its spawn site) and by its
    /// ancestors before they created the next thread on the chain.
    fn chain_acquired(&self, st: &State) -> Vec<(u32, LocKey)> {
        if st.acquired.is_empty()
            && self
                .d
                .thread_acquired
                .get(self.d.thread as usize)
                .map(|v| v.is_empty())
                .unwrap_or(true)
        {
            return Vec::new();
        }
        let mut v = self
            .d
            .thread_acquired
            .get(self.d.thread as usize)
            .cloned()
            .unwrap_or_default();
        if let Some(site) = self.d.threads[self.d.thread as usize].site {
            for l in &st.acquired {
                v.push((site, l.clone()));
            }
        }
        v.sort();
        v.dedup();
        v
    }

    /// Thread `t`'s protection by an ancestor that joined it: the ancestor
    /// held a lock from before it created the child on `t`'s creation chain
    /// until it joined `t` through a global thread id (`main` locks `m`,
    /// creates `t2`, which creates `t3` into `id3`; `main` joins `id3`, then
    /// unlocks). Returns `t`'s (joiner, lock) creation locks and its
    /// (sibling site, lock) joined-inside pairs, as for a joined child.
    /// Every such join counts, even one some paths of the joiner skip.
    fn ancestor_joins(&self, t: u32) -> (SiteLocks, SiteLocks) {
        let (mut locks, mut inside) = (Vec::new(), Vec::new());
        let th = &self.d.threads[t as usize];
        let (Some(site), Some(parent)) = (th.site, th.parent) else {
            return (locks, inside);
        };
        let info = &self.d.sites[site as usize];
        if info.in_loop || info.tid_escaped {
            return (locks, inside);
        }
        for (joiner, key, clean) in &self.d.pending_joins {
            if *joiner == parent || !info.tid.iter().any(|k| same_thread_id(k, key)) {
                continue;
            }
            // The site on the chain that the joiner itself created.
            let mut cur = parent;
            let anc_site = loop {
                let c = &self.d.threads[cur as usize];
                match c.parent {
                    Some(p) if p == *joiner => break c.site,
                    Some(p) => cur = p,
                    None => break None,
                }
            };
            let Some(anc_site) = anc_site else { continue };
            let held: Vec<&LocKey> = clean
                .iter()
                .filter(|(x, _)| *x == anc_site)
                .map(|(_, l)| l)
                .collect();
            locks.extend(held.iter().map(|l| (*joiner, (*l).clone())));
            inside.extend(
                clean
                    .iter()
                    .filter(|(x, l)| *x != anc_site && held.contains(&l))
                    .cloned(),
            );
        }
        (locks, inside)
    }

    fn protect(&mut self, site: u32, held: Vec<LocKey>, inside: Vec<(u32, LocKey)>) {
        self.effect();
        match self.d.protected.get_mut(&site) {
            Some(p) => p.retain(|l| held.contains(l)),
            None => {
                self.d.protected.insert(site, held);
            }
        }
        match self.d.joined_inside.get_mut(&site) {
            Some(p) => p.retain(|x| inside.contains(x)),
            None => {
                self.d.joined_inside.insert(site, inside);
            }
        }
    }

    fn summary(&self, f: FunctionId) -> Arc<FunctionSummary> {
        // The query is read once per function (that records the dependency);
        // later calls skip salsa's bookkeeping.
        if let Some(s) = self.d.summaries.borrow().get(&f) {
            return s.clone();
        }
        let s = function_summary(self.db, f).clone();
        self.d.summaries.borrow_mut().insert(f, s.clone());
        s
    }

    /// Does some call of the program take or release a lock?
    fn uses_locks(&self) -> bool {
        self.prog.functions.values().flatten().any(|f| {
            self.summary(*f).models.values().any(|m| {
                matches!(
                    m,
                    CallModel::Lock { .. } | CallModel::TryLock { .. } | CallModel::Unlock { .. }
                )
            })
        })
    }

    /// Library mode: every root function (one no other function calls
    /// directly; its address may be taken, as handlers in an operations
    /// table are) is the entry of a non-unique abstract thread without a
    /// creator, which may run in parallel with itself and with every other
    /// root. Functions handed to `pthread_create` or `pthread_once` are left
    /// to those calls.
    fn library_threads(&mut self, roots: Vec<(Name, FunctionId)>) {
        for (name, f) in roots {
            if self.d.threads.len() >= THREAD_BUDGET {
                self.mark_incomplete(f, "too many threads");
                break;
            }
            let t = self.d.threads.len() as u32;
            self.d
                .threads
                .push(Thread::new(name.clone(), None, None, false));
            self.d.thread_args.push(Vec::new());
            self.d.thread_acquired.push(Vec::new());
            // Unknown code registering the root as a callback starts this
            // same abstract thread.
            self.d.callback_index.insert(name, t);
        }
    }

    /// The roots of a library: functions no other function calls directly
    /// and that are not handed to `pthread_create` or `pthread_once`.
    fn library_roots(&self) -> Vec<(Name, FunctionId)> {
        self.not_called(&mut |caller, c, s, called| {
            if let Callee::Direct(n) = &c.callee {
                // Recursion alone does not make a function called.
                if n != caller {
                    called.insert(n.clone());
                }
            }
            let func = match s.models.get(&c.id) {
                Some(CallModel::Create { func, .. } | CallModel::Once { func }) => *func,
                _ => return,
            };
            if let Some(n) = c.args.get(func).and_then(function_name) {
                called.insert(n);
            }
        })
    }

    /// The roots of a program without `main`: functions no function calls
    /// or passes as an argument.
    fn uncalled_functions(&self) -> Vec<FunctionId> {
        self.not_called(&mut |_, c, _, called| {
            if let Callee::Direct(n) = &c.callee {
                called.insert(n.clone());
            }
            for a in &c.args {
                if let Expr::Var(n) = a {
                    called.insert(n.clone());
                }
            }
        })
        .into_iter()
        .map(|r| r.1)
        .collect()
    }

    /// The functions (first definition of each name) that `mark`, shown
    /// every call of every function with its caller's name and summary,
    /// does not put in the called set.
    fn not_called(
        &self,
        mark: &mut dyn FnMut(&Name, &Call, &FunctionSummary, &mut FxHashSet<Name>),
    ) -> Vec<(Name, FunctionId)> {
        let mut called: FxHashSet<Name> = FxHashSet::default();
        for (name, fs) in &self.prog.functions {
            for f in fs {
                let s = self.summary(*f);
                visit_calls(&s.ir.body, &mut |c| mark(name, c, &s, &mut called));
            }
        }
        self.prog
            .functions
            .iter()
            .filter(|(name, _)| !called.contains(*name))
            .map(|(name, fs)| (name.clone(), fs[0]))
            .collect()
    }

    fn mark_incomplete(&mut self, f: FunctionId, why: &'static str) {
        self.opaque();
        if let Some(&n) = self.d.node_stack.last() {
            let node = &mut self.d.nodes[n as usize];
            if !node.marks.iter().any(|m| m.0 == f) {
                node.marks.push((f, why));
            }
        }
        self.d
            .incomplete
            .entry(f)
            .or_insert_with(|| why.to_string());
    }

    fn looks_like_thread_entry(&self, f: FunctionId) -> bool {
        let s = self.summary(f);
        let ret = self.prog.returns.get(f.name(self.db));
        s.ir.params.len() == 1
            && s.ir.params[0].ty.pointer == 1
            && ret
                .map(|t| t.pointer == 1 && t.name.as_deref() == Some("void"))
                .unwrap_or(false)
    }

    /// Without a thread creation in the program, only a function shaped like
    /// a thread entry (`void *f(void *)`) and used as a value (handed to
    /// unknown code, stored, returned) can start a thread, as a callback of
    /// code without a body. Is there one? When there is not, the program is
    /// single-threaded and its walk can be skipped.
    fn thread_entry_escapes(&self) -> bool {
        let entries: FxHashSet<&Name> = self
            .prog
            .functions
            .iter()
            .filter(|(_, fs)| fs.iter().any(|f| self.looks_like_thread_entry(*f)))
            .map(|(n, _)| n)
            .collect();
        if entries.is_empty() {
            return false;
        }
        if self
            .prog
            .global_inits
            .values()
            .flatten()
            .any(|n| entries.contains(n))
        {
            return true;
        }
        let found = std::cell::Cell::new(false);
        let mut see =
            |e: &Expr| visit_names(e, &mut |n| found.set(found.get() | entries.contains(n)));
        for f in self.prog.functions.values().flatten() {
            visit_stmts(&self.summary(*f).ir.body, &mut |s| match s {
                Stmt::Access(a) => see(&a.place),
                Stmt::Assign { lhs, rhs } => {
                    see(lhs);
                    see(rhs);
                }
                Stmt::Call(c) => {
                    if let Callee::Indirect(e) = &c.callee {
                        see(e);
                    }
                    c.args.iter().for_each(&mut see);
                }
                Stmt::Return { value: Some(v), .. } => see(v),
                _ => {}
            });
            if found.get() {
                return true;
            }
        }
        false
    }

    /// `main` keeps its own thread id in `lhs`: joining it elsewhere waits
    /// for `main` to end.
    #[inline(never)]
    fn main_tid_at(&mut self, fr: &Frame, lhs: &Expr) {
        for k in self.place(fr, lhs, 0) {
            if !self.d.main_tids.contains(&k) && self.d.main_tids.len() < MAX_TRACKED {
                self.effect();
                self.d.sites_epoch = self.d.epoch;
                self.d.main_tids.push(k);
            }
        }
    }

    /// Is call `id` `pthread_self()` (or C11 `thrd_current()`)?
    fn is_self_id(&self, fr: &Frame, id: u32) -> bool {
        matches!(fr.calls.get(&id), Some(Callee::Direct(n))
            if matches!(&**n, "pthread_self" | "thrd_current") && !fr.locals.contains_key(n))
    }

    fn spawn(
        &mut self,
        fr: &Frame,
        c: &Call,
        st: &mut State,
        tids: Vec<LocKey>,
        entries: Vec<FunctionId>,
        argv: Vals,
        callback: bool,
    ) {
        self.effect();
        self.d.sites_epoch = self.d.epoch;
        let key = (fr.fid, c.id);
        let mut tids_again = Vec::new();
        let site = match self.d.site_index.get(&key) {
            Some(&s) => {
                tids_again = tids;
                s
            }
            None => {
                let s = self.d.sites.len() as u32;
                let loop_bound = self.frame_loop().cloned().flatten();
                self.d.sites.push(Site {
                    func: fr.fid,
                    call: c.id,
                    span: c.span,
                    tid: tids,
                    in_loop: false,
                    loop_bound,
                    visits: 0,
                    joined_before: None,
                    created_before: SiteSet::default(),
                    tid_escaped: false,
                });
                self.d.site_index.insert(key, s);
                s
            }
        };
        {
            let info = &mut self.d.sites[site as usize];
            for t in tids_again {
                if info.tid.len() < MAX_TRACKED && !info.tid.contains(&t) {
                    info.tid.push(t);
                }
            }
            info.visits += 1;
            info.in_loop |= self.d.loop_depth > 0;
            let finished = SiteSet(
                st.created
                    .0
                    .iter()
                    .copied()
                    .filter(|x| !st.active.contains(*x))
                    .collect(),
            );
            info.created_before = info.created_before.union(&st.created);
            info.joined_before = Some(match &info.joined_before {
                None => finished,
                Some(j) => j.intersect(&finished),
            });
        }
        if let Some(top) = self.d.sites_stack.last_mut() {
            top.push(site);
        }
        // The sites whose children this visit starts: the races' ordering
        // checks ask only whether a thread's own creation site was passed.
        let mut child_sites: Vec<u32> = Vec::new();
        for f in entries {
            let name = f.name(self.db).clone();
            // A thread that (transitively) creates itself again is the same abstract thread.
            let chain: Vec<u32> = {
                let mut v = vec![self.d.thread];
                let mut t = self.d.thread;
                while let Some(p) = self.d.threads[t as usize].parent {
                    v.push(p);
                    t = p;
                }
                v
            };
            if let Some(&anc) = chain.iter().find(|&&t| {
                self.d.threads[t as usize].site == Some(site)
                    && self.d.threads[t as usize].entry == name
            }) {
                self.d.threads[anc as usize].unique = false;
                continue;
            }
            let tkey = (self.d.thread, site, name.clone());
            // A callback handed to unknown code is one abstract thread per
            // function, wherever and by whichever thread it was registered:
            // otherwise every thread that registers callbacks multiplies them.
            let existing = match callback {
                true => self.d.callback_index.get(&name).copied(),
                false => self.d.thread_index.get(&tkey).copied(),
            };
            // Callbacks one thread hands to unknown code are the roots of one
            // callback group, walked as one abstract thread (they reach the
            // same code, an event loop's state machine, and are walked once).
            let group = match (callback, existing) {
                (true, None) => match self.d.group_roots.contains_key(&self.d.thread) {
                    true => Some(self.d.thread),
                    false => self.d.callback_group.get(&self.d.thread).copied(),
                },
                _ => None,
            };
            match (existing, group) {
                (Some(t), _) => {
                    if t != self.d.thread
                        && self.d.threads[t as usize].parent != Some(self.d.thread)
                    {
                        self.d.threads[t as usize].unique = false;
                    }
                    match self.d.group_roots.get_mut(&t) {
                        Some(roots) => {
                            if let Some(r) = roots.iter_mut().find(|r| r.0 == name) {
                                add_vals(&mut r.1, argv.clone());
                            }
                        }
                        None => {
                            add_vals(&mut self.d.thread_args[t as usize], argv.clone());
                        }
                    }
                    let now = self.chain_acquired(st);
                    self.d.thread_acquired[t as usize].retain(|x| now.contains(x));
                    child_sites.extend(self.child_site(t));
                }
                (None, Some(g)) => {
                    // Unknown code may run two callbacks on two threads.
                    let th = &mut self.d.threads[g as usize];
                    th.unique = false;
                    let roots = self.d.group_roots.entry(g).or_default();
                    roots.push((name.clone(), argv.clone()));
                    th.entry = group_name(roots);
                    self.d.callback_index.insert(name, g);
                    if g != self.d.thread {
                        let now = self.chain_acquired(st);
                        self.d.thread_acquired[g as usize].retain(|x| now.contains(x));
                    }
                    child_sites.extend(self.child_site(g));
                }
                (None, None) => {
                    if self.d.threads.len() >= THREAD_BUDGET {
                        self.mark_incomplete(fr.fid, "too many threads");
                        continue;
                    }
                    let t = self.d.threads.len() as u32;
                    let name_for_index = name.clone();
                    self.d
                        .threads
                        .push(Thread::new(name, Some(self.d.thread), Some(site), true));
                    self.d.thread_args.push(argv.clone());
                    let now = self.chain_acquired(st);
                    self.d.thread_acquired.push(now);
                    self.d.thread_index.insert(tkey, t);
                    if callback {
                        self.d
                            .group_roots
                            .insert(t, vec![(name_for_index.clone(), argv.clone())]);
                        self.d.callback_group.insert(self.d.thread, t);
                        self.d.callback_index.insert(name_for_index, t);
                    }
                    child_sites.push(site);
                }
            }
        }
        // A thread creation marks its own site. A callback registration
        // marks the site of the callback's thread when this thread created
        // it (a group's first registration), and nothing when the callback
        // runs in another thread's group or in this very thread: no ordering
        // check asks about that site, and keeping it out of the state stops
        // an event loop's re-registrations from multiplying its contexts.
        if !callback {
            child_sites = vec![site];
        }
        child_sites.sort_unstable();
        child_sites.dedup();
        for site in child_sites {
            st.created.insert(site);
            st.active.insert(site);
            st.joined_ix.retain(|j| j.0 != site);
            st.joined_tids.retain(|j| j.0 != site);
            st.guards.retain(|g| g.0 != site);
            for (v, nz) in &st.conds {
                st.guards.push((site, v.clone(), *nz));
            }
            st.clean.retain(|(x, _)| *x != site);
            for h in &st.must.0 {
                if !h.shared
                    && !matches!(h.lock.base, Base::Synthetic(_))
                    && st.clean.len() < MAX_TRACKED * 4
                {
                    st.clean.push((site, h.lock.clone()));
                }
            }
            st.clean.sort();
        }
    }

    /// The creation site of thread `t` when the current thread created it.
    fn child_site(&self, t: u32) -> Option<u32> {
        let th = &self.d.threads[t as usize];
        match th.parent == Some(self.d.thread) {
            true => th.site,
            false => None,
        }
    }
}

/// May `a` and `b` name the same thread id? Equal up to indices, and
/// constant indices equal.
pub(crate) fn same_thread_id(a: &LocKey, b: &LocKey) -> bool {
    a.base == b.base
        && a.path.len() == b.path.len()
        && a.path.iter().zip(&b.path).all(|(x, y)| match (x, y) {
            (Elem::Index(Some(i)), Elem::Index(Some(j))) => i == j,
            (Elem::Index(_), Elem::Index(_)) => true,
            _ => x == y,
        })
}

/// Visits every variable name an expression mentions.
fn visit_names(e: &Expr, f: &mut dyn FnMut(&Name)) {
    match e {
        Expr::Var(n) => f(n),
        Expr::Field { base, .. } | Expr::Index { base, .. } => visit_names(base, f),
        Expr::Deref(v) | Expr::AddrOf(v) | Expr::Offset(v) | Expr::Cast { value: v, .. } => {
            visit_names(v, f)
        }
        Expr::Choice(vs) => vs.iter().for_each(|v| visit_names(v, f)),
        Expr::CallResult(_) | Expr::Int(_) | Expr::Str | Expr::Other => {}
    }
}

/// The function an argument names: `f`, `&f` or `(void *(*)(void *))f`.
fn function_name(e: &Expr) -> Option<Name> {
    match e {
        Expr::Var(n) => Some(n.clone()),
        Expr::AddrOf(inner) | Expr::Cast { value: inner, .. } => function_name(inner),
        _ => None,
    }
}
