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
//!
//! This module is the driver: [`analyse`] and `walk_all` (the walk over all
//! threads), the budgets, the pointer values ([`Val`]) and [`WalkData`],
//! everything a walk owns. [`Walker`] is one type whose methods live in the
//! room of their concern: `threads` (thread table, library mode), `frames`
//! (frames and bindings), `store` (pointer store), `eval` (expressions),
//! `memo` (the node graph: memo, replays, copies), `stmts` (statements),
//! `calls` and `locks` (call and lock models), `spawn` (thread creation),
//! `record` (accesses), `finish` (the result); `state` holds the path
//! state and its join, `incremental` the updates after an edit and `wild`
//! the wild pointers.

use crate::db::{program, walk_summary, FunctionId, FunctionSummary, Program, Workspace};
use crate::facts::*;
use crate::model::*;
use frames::{Frame, FrameBase};
use memo::{MemoKey, Node};
use racelens_syntax::{Expr, Name};
use record::{LastCtx, Recorded};
use rustc_hash::{FxHashMap, FxHashSet};
use state::{Ptrs, State};
use std::sync::Arc;
use stmts::JmpFrame;
use threads::SiteLocks;

mod addressed;
mod alloc_wrappers;
mod allocations;
mod branch_facts;
mod calls;
mod clone_copy;
mod constants;
mod counters;
mod eval;
mod fact_counts;
mod finish;
mod flags;
mod fork;
mod frames;
mod free_wrappers;
mod fuse;
mod gates;
mod held;
mod held_addresses;
mod incremental;
mod inject;
mod joins;
mod laundered;
mod libevent;
pub(crate) mod library;
mod local_cells;
mod lock_wrappers;
mod locks;
mod member_cells;
mod memo;
mod once;
mod overlap;
mod own;
mod private;
mod record;
mod semaphores;
mod slot_loops;
mod slots;
mod spawn;
mod state;
mod stmts;
mod store;
mod store_copies;
mod thread_counts;
mod threads;
mod wild;
pub(crate) use flags::FLAG_PREFIX;
pub use incremental::{kept_walks, set_incremental, set_verify, stats as incremental_stats};
pub(crate) use laundered::launders;
pub use memo::{copies_made, set_copies};
pub(crate) use spawn::same_thread_id;

/// Statement visits allowed per thread before the walk gives up.
const STEP_BUDGET: u64 = 3_000_000;

/// Calling contexts analysed per function and thread.
const CONTEXT_BUDGET: usize = 24;

/// Abstract threads in the whole program.
const THREAD_BUDGET: usize = 512;

const MAX_VALS: usize = 16;

/// Heap sites a path follows the freshness of; past that, allocations on
/// the path are not fresh.
const MAX_ALLOCATED: usize = 160;

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
/// ([`cap_facts`](finish::cap_facts)), so that an incremental update keeps the same ones.
const MAX_FACTS: usize = 8192;

/// Accesses (and struct prefixes) recorded per base object during the walk;
/// beyond this the walk drops them in walk order and is not kept for
/// incremental updates (a bound on memory, not a precision knob). At
/// 8 * MAX_FACTS memcached's slab pages (`do_slabs_newslab`'s site, where
/// every item lives: 94,246 accesses) passed it, and every edit of the
/// project walked from scratch (p50 2.1 s through a real client; 178 ms
/// kept, at 450 rather than 220 MB after open).
const HARD_MAX_FACTS: usize = 64 * MAX_FACTS;

/// Is `RACELENS_TIMING` set (read once)?
pub(super) fn timing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RACELENS_TIMING").is_some())
}

/// Struct prefixes used per base object (the first in path order).
const MAX_PREFIXES: usize = 64;

/// A possible value of a pointer expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Val {
    Target(LocKey),
    Func(Name),
    /// The constant zero given as an argument (`f(NULL)`, `log(0, ..)`).
    /// Only ever a whole binding of its own: the callee's frame turns it
    /// into a parameter known to be zero (`Frame::zeros`), never a value.
    Zero,
    /// A copy of the struct global of this name given as an argument by
    /// value (`set_opts(package_opts)`). Only in a binding: the callee's
    /// frame turns it into a parameter known to copy it (`Frame::copies`),
    /// never a points-to value.
    Copy(Name),
    /// A variable the calling path tested nonzero, given as an argument
    /// (`if (path) open_log(path);`). Only in a binding: the callee's frame
    /// turns it into a parameter known nonzero (`Frame::nonzeros`).
    NonZero,
}

type Vals = Vec<Val>;

/// A loop being walked.
struct WalkedLoop {
    /// The call-stack depth of its function.
    depth: usize,
    /// Its counting range, when known (`Stmt::Loop::bound`).
    bound: Option<Name>,
    /// Its counter (`Stmt::Loop::var`).
    var: Option<Name>,
    /// The cell the range ends at (see `thread_counts.rs`).
    end: Option<LocKey>,
    /// The creation sites that may have threads running when the walk
    /// enters the loop (`State::active` there): a counting loop that
    /// creates threads of a site not among them starts none while an
    /// earlier visit's threads of that site still run (see `slots`).
    active: SiteSet,
}
/// A creation site's identity (`Walker::site_key`).
type SiteKey = (FunctionId, u32, Option<Base>, Option<FunctionId>);

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

/// The local a pointer expression passes on, up to casts and offsets
/// (`(char *) p + n`, `q++`).
pub(super) fn pointer_local(e: &Expr) -> Option<&Name> {
    let mut e = uncast(e);
    while let Expr::Offset(b) = e {
        e = uncast(b);
    }
    match e {
        Expr::Var(x) => Some(x),
        _ => None,
    }
}

/// `p->f` (under casts) for the local or parameter `p`: `f`.
pub(super) fn arrow_member<'e>(e: &'e Expr, p: &Name) -> Option<&'e Name> {
    match uncast(e) {
        Expr::Field {
            base,
            field,
            arrow: true,
        } if matches!(uncast(base), Expr::Var(x) if x == p) => Some(field),
        _ => None,
    }
}

/// The value under any casts: `(T *) (U *) e` is `e`.
pub(super) fn uncast(mut e: &Expr) -> &Expr {
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

/// Everything a walk owns. It outlives the revision so that the next edit
/// can update it instead of walking again from scratch.
#[derive(Default)]
struct WalkData {
    thread: u32,
    threads: Vec<Thread>,
    sites: Vec<Site>,
    /// Semaphores whose judgement read other functions' text
    /// (`semaphores.rs`), sorted: an edit of a function mentioning one
    /// falls back to a full walk.
    text_names: Vec<Name>,
    /// Names a counter join read in other functions' text, sorted, and the
    /// entries it judged with their counter and mutex (`counters.rs`).
    counter_names: Vec<Name>,
    counter_entries: Vec<(Name, Name, Expr)>,
    /// Global semaphores judged binary (used as mutexes) or not.
    semaphores: std::cell::RefCell<FxHashMap<Name, semaphores::Verdict>>,
    /// Globals judged atomic flags that publish, or not (`flags.rs`).
    flags: std::cell::RefCell<FxHashMap<Name, bool>>,
    /// Globals judged once flags or not (`once.rs`).
    once_flags: std::cell::RefCell<FxHashMap<Name, bool>>,
    /// Globals judged set lazily and never cleared, or not (`once.rs`).
    lazy_globals: std::cell::RefCell<FxHashMap<Name, bool>>,
    /// The names some `if` of the program tests for zero (`once.rs`),
    /// gathered on first use: only those can be once flags or lazily set
    /// globals.
    tested_names: std::cell::RefCell<Option<Arc<FxHashSet<Name>>>>,
    /// Per created thread, the lazily set globals known set at every one of
    /// its creations (`once.rs`, `spawn.rs`).
    thread_set_globals: FxHashMap<u32, Vec<Name>>,
    /// Globals judged to hold zero for the whole run, or not
    /// (`constants.rs`); an edit that could change a verdict walks again
    /// from scratch.
    constants: std::cell::RefCell<FxHashMap<Name, bool>>,
    /// For each name, how many functions write it or take its address
    /// (`constants.rs`), counted once per walk on the first question.
    written: std::cell::RefCell<Option<FxHashMap<Name, u32>>>,
    /// Functions whose calls and parameters a verdict of `constants` read
    /// (a global assigned only a parameter): an edit naming one walks again
    /// from scratch.
    zero_params: std::cell::RefCell<FxHashSet<Name>>,
    /// Hand-made reader-writer locks (`gates.rs`): by struct type and mutex
    /// member, whether the program's functions of that shape form one.
    gates: std::cell::RefCell<FxHashMap<(Name, Name), bool>>,
    /// Sites by (creating function, call, launch base, entry): see
    /// `Walker::site_key`.
    site_index: FxHashMap<SiteKey, u32>,
    thread_index: FxHashMap<(u32, u32, Name), u32>,
    /// Callback threads by function.
    callback_index: FxHashMap<Name, u32>,
    /// Callbacks handed to code known to run them (an asynchronous API),
    /// or shaped like a thread's start routine; and those only handed in a
    /// table of functions to other code without a body (see
    /// `Thread::speculative`).
    callbacks_sure: FxHashSet<Name>,
    /// Per function being walked (innermost last): the states the `goto`s
    /// walked so far carry to their labels (see `walk_stmts`).
    gotos: Vec<FxHashMap<Name, state::State>>,
    /// The statement lists being walked that hold labels (innermost last):
    /// the function's depth in `gotos` and the loop depth, the labels'
    /// positions in the list, and the position of the statement walked
    /// now. A `goto` to a label later in one of its own function's lists,
    /// inside the same loop, is met by the walk there, so the `goto` need
    /// not fall through (see `walk_stmts`).
    labels_ahead: Vec<((usize, u32), Vec<(usize, Name)>, usize)>,
    callbacks_in_tables: FxHashSet<Name>,
    /// Callback groups: the entry functions (with their arguments) of a
    /// thread that runs the callbacks one thread handed to unknown code.
    group_roots: FxHashMap<u32, Vec<(Name, Vals)>>,
    /// The callback groups of each registering thread: of the callbacks
    /// only handed over in tables of functions (`true`), and of the others.
    callback_group: FxHashMap<(u32, bool), u32>,
    thread_args: Vec<Vals>,
    /// Function values that walked assignments stored into memory outside
    /// the frame from what the calling context bound (`capsule->probe = fn`
    /// with `fn` a parameter): the pointer store, built before the walk,
    /// holds only function names assigned directly. Weakly updated.
    fn_cells: FxHashMap<LocKey, Vals>,
    /// `fn_cells` by the function whose statements stored them: an update
    /// takes the edited function's out before its nodes walk again.
    fn_cells_from: FxHashMap<FunctionId, FxHashMap<LocKey, Vals>>,
    /// Per thread: the cells of `fn_cells` that its argument reaches at its
    /// creation (a launcher's trampoline calls `capsule->probe(...)`). Only
    /// the thread that received them sees them: other pools do not.
    thread_fns: FxHashMap<u32, FxHashMap<LocKey, Vals>>,
    /// Per thread: (ancestor site, lock) acquired along the creation chain.
    thread_acquired: Vec<Vec<(u32, LocKey)>>,
    facts: FxHashMap<Base, FxHashSet<Recorded>>,
    /// For each concrete base: path prefixes that hold a struct, and its type.
    struct_prefixes: FxHashMap<Base, FxHashSet<(Vec<Elem>, Name)>>,
    /// Memoized return values of functions (context-insensitive).
    returns: std::cell::RefCell<FxHashMap<FunctionId, Vals>>,
    /// The return values of thread entries that a join put into its result
    /// cell while the store was built (`store.rs`, `join_result`): an edit
    /// that changes them rebuilds (`incremental.rs`).
    joined_returns: std::cell::RefCell<FxHashMap<FunctionId, Vals>>,
    /// Function summaries read so far.
    summaries: std::cell::RefCell<FxHashMap<FunctionId, Arc<FunctionSummary>>>,
    /// Allocation wrappers (see [`Walker::is_alloc_wrapper`]), by function.
    /// Keyed by function and nesting level (see `store.rs`).
    wrappers: std::cell::RefCell<FxHashMap<(FunctionId, u8), bool>>,
    /// The parameters each function frees, by function and nesting level
    /// (see `free_wrappers.rs`).
    free_params: std::cell::RefCell<FxHashMap<(FunctionId, u8), u32>>,
    /// Functions whose stores are an allocator's bookkeeping (see
    /// `free_wrappers.rs`).
    allocator_internal: std::cell::RefCell<FxHashMap<FunctionId, free_wrappers::Bookkeeping>>,
    /// The parameters each allocation wrapper gives back or reallocates
    /// (see `alloc_wrappers.rs`).
    passed_on: std::cell::RefCell<FxHashMap<FunctionId, Arc<[usize]>>>,
    /// Function-pointer slots that only ever hold allocation wrappers (see
    /// `alloc_wrappers.rs`), by slot and nesting level.
    alloc_slots: std::cell::RefCell<FxHashMap<(alloc_wrappers::Slot, u8), bool>>,
    /// What the program puts in each function-pointer slot (see
    /// `alloc_wrappers.rs`), once asked.
    #[allow(clippy::type_complexity)]
    alloc_slot_index:
        std::cell::RefCell<Option<Arc<FxHashMap<alloc_wrappers::Slot, (Vec<Name>, bool)>>>>,
    /// Laundered functions and their parameter counts (see
    /// `laundered.rs`), once asked.
    laundered: std::cell::RefCell<Option<laundered::Laundered>>,
    /// The (function, parameter index) pairs that launder what callers
    /// pass, kept across updates (see `laundered.rs`).
    laundering_params: std::cell::RefCell<Option<laundered::Params>>,
    /// Lock wrappers (see `lock_wrappers.rs`), by function.
    lock_wrappers: std::cell::RefCell<FxHashMap<FunctionId, Option<Arc<lock_wrappers::LockWrap>>>>,
    /// The current thread's memo: calling context (see [`MemoKey`]) -> its
    /// nodes, in walk order.
    memo: FxHashMap<MemoKey, Vec<u32>>,
    /// The transparent nodes of every thread walked so far, by calling
    /// context without its context fields (see [`copy_key`](memo::copy_key)). A copy
    /// records in the copying thread, so other threads' nodes serve too.
    copies: FxHashMap<MemoKey, Vec<u32>>,
    /// Contexts copied instead of walked, and the statements that saved.
    copied: (u64, u64),
    /// The libevent plan the walk used (see `libevent.rs`), if it needed
    /// one: an update whose plan differs walks from scratch.
    libevent_plan: Option<Arc<libevent::Plan>>,
    contexts: FxHashMap<FunctionId, usize>,
    stack: Vec<FunctionId>,
    /// Spawn sites visited by each active function walk.
    sites_stack: Vec<Vec<u32>>,
    steps: u64,
    loop_depth: u32,
    /// The current statement's flow-sensitive local pointers (`State::ptrs`),
    /// read by `eval`.
    cur_ptrs: std::cell::RefCell<Ptrs>,
    /// The member cells the callee about to be walked starts with (set by
    /// `calls.rs` just before the walk, see `member_cells.rs`).
    seed_cells: Option<(FunctionId, Vec<(Name, Vals)>)>,
    /// The locals whose address the pointer store holds somewhere (built
    /// on demand from `store`, dropped whenever the store is built, see
    /// `member_cells.rs`).
    stored_locals: std::cell::RefCell<Option<Arc<rustc_hash::FxHashSet<Base>>>>,
    /// (function, allocating function): may a call of the first reach the
    /// second (`calls.rs`, `may_allocate`)? A fact of the call graph.
    may_allocate: std::cell::RefCell<FxHashMap<(FunctionId, Name), bool>>,
    /// Per function: the functions its direct calls name (its modelled
    /// calls left out), and whether it calls through a pointer, once
    /// `may_allocate` asked (dropped for the edited function by
    /// `incremental.rs`).
    call_edges: std::cell::RefCell<FxHashMap<FunctionId, Arc<(Vec<FunctionId>, bool)>>>,
    /// The functions used as values (stored, passed, returned): those a
    /// call through a pointer may reach (`may_allocate`), once asked.
    value_functions: std::cell::RefCell<Option<Arc<Vec<FunctionId>>>>,
    /// Where `main` stored its own thread id (`pthread_self()`).
    main_tids: Vec<LocKey>,
    /// Per creation site: how every visit so far handed its thread a slot
    /// number of its own, from which calling context, and whether every
    /// visit so far was serial (`None` once two visits disagree; see
    /// `slots`).
    slot_sites: FxHashMap<u32, Option<slots::SiteSlot>>,
    /// Loops being walked, innermost last.
    loops: Vec<WalkedLoop>,
    /// Counters of the counting loops (from zero) being walked past their
    /// first pass, with their call-stack depth: such a counter is nonzero
    /// there (see `Walker::walk_loop`).
    counted_past_first: Vec<(usize, Name)>,
    /// Flow-insensitive contents of non-local pointer cells.
    store: FxHashMap<LocKey, Vals>,
    /// The same, by the function whose statements stored them.
    store_from: FxHashMap<FunctionId, FxHashMap<LocKey, Vals>>,
    /// Each function's last pass while the store was built, and the
    /// parameters (data pointers, functions) it was built with.
    store_passes: FxHashMap<FunctionId, store::StorePass>,
    store_params: FxHashMap<FunctionId, Vec<Vals>>,
    store_fn_params: FxHashMap<FunctionId, Vec<Vals>>,
    /// The same data pointers by call (see `store.rs`).
    store_call_args: FxHashMap<FunctionId, store::CallArgs>,
    /// The paths of the recorded accesses, one allocation each (see
    /// [`Recorded`]'s hash).
    paths: FxHashSet<Arc<[Elem]>>,
    /// While the pointer store is built: the cells the function being
    /// processed read (see [`Walker::build_store`]).
    store_reads: std::cell::RefCell<Option<FxHashSet<LocKey>>>,
    /// While the store's rounds run: an unresolved pointer does not fall
    /// back to its struct type (the cell may get its values later in the
    /// round or in the next one), and `store_unresolved` says one was met.
    store_strict: std::cell::Cell<bool>,
    store_unresolved: std::cell::Cell<bool>,
    incomplete: FxHashMap<FunctionId, String>,
    replayed_sites: FxHashSet<u32>,
    /// Sites of replays made outside any node (a thread root met again).
    root_replayed: FxHashSet<u32>,
    /// Heap sites published outside any node (see `private.rs`).
    root_published: Vec<Base>,
    /// Heap sites handed, not fresh, to a thread outside any node.
    root_handed: Vec<Base>,
    /// The heap sites the walk published otherwise than down to new
    /// threads, as `finish` found them (see `ThreadTable::shared_heap`).
    published_otherwise: Vec<Base>,
    /// The addresses of locals held outside their frames, by path, as the
    /// last `finish` found them (see `held_addresses.rs`).
    held_addresses: held_addresses::HeldAddresses,
    /// Per thread, the locals its arguments reach through the pointer store
    /// (`finish`'s `arg_reach`, before `frame_locals` drops those of
    /// functions the thread runs); kept for incremental updates, which
    /// check the store and the thread arguments unchanged first.
    arg_reach: Vec<Vec<Base>>,
    /// Thread creations outside any node that handed a stale argument.
    root_stale_spawns: Vec<(FunctionId, u32)>,
    /// Those of them no earlier creation of the block shared (see
    /// `Node::unshared_spawns`).
    root_unshared_spawns: Vec<(FunctionId, u32)>,
    /// The last creation that handed a fresh object: (node, function,
    /// call id, what it handed), for the creation after it in the same
    /// block (`Node::unshared_spawns`).
    last_fresh_handing: Option<(Option<u32>, FunctionId, u32, Vals)>,
    /// Stores into members outside any node (see `held.rs`).
    root_held: Vec<held::HeldStore>,
    /// Writes of array elements outside any node (see `inject.rs`).
    root_elem_writes: Vec<(LocKey, bool)>,
    /// The arrays of pointers accesses were loaded through, by the hash a
    /// [`Slot::via`](crate::facts::Slot) names (see `inject.rs`).
    via_arrays: FxHashMap<u64, Arc<[LocKey]>>,
    /// The write being recorded stores a fresh object, or no pointer at
    /// all (`memset`, `free`; see `inject.rs`).
    store_fresh: bool,
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
    /// The spawn sites active where the thread being walked ended through a
    /// `pthread_exit` in one of its callees (`Thread::leaks` takes them in).
    exit_active: Option<SiteSet>,
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
    counts: Option<fact_counts::Counts>,
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
        .map(|f| (*f, walk_summary(db, *f).clone()))
        .collect();
    if let Some(snap) = incremental::take(ws.key(), &prog, &summaries) {
        match incremental::update(db, &prog, &summaries, snap) {
            Ok((result, snap)) => {
                if incremental::verifying() {
                    let (full, _) = walk_all(db, &prog);
                    if full != result {
                        let part = if full.table.threads != result.table.threads {
                            "threads"
                        } else if full.table.sites != result.table.sites {
                            "sites"
                        } else if full.table.escaped_locals != result.table.escaped_locals {
                            "escaped locals"
                        } else if full.table.private_heap != result.table.private_heap {
                            "private heap"
                        } else if full.table.global_heap != result.table.global_heap {
                            "global heap"
                        } else if full.table.injective != result.table.injective {
                            "injective arrays"
                        } else if full.table.held != result.table.held {
                            "held members"
                        } else if full.locations != result.locations {
                            "locations"
                        } else {
                            "incomplete"
                        };
                        if std::env::var_os("RACELENS_VERIFY_DUMP").is_some() {
                            for (b, f) in &result.locations {
                                if !full.locations.contains_key(b) {
                                    eprintln!("base {b:?}: incremental only, {} facts", f.len());
                                }
                            }
                            for (b, f) in &full.locations {
                                let r = result.locations.get(b);
                                if r != Some(f) {
                                    eprintln!(
                                        "base {b:?}: full {} facts, incremental {:?}",
                                        f.len(),
                                        r.map(|r| r.len())
                                    );
                                    for x in f.iter() {
                                        if !r.is_some_and(|r| r.contains(x)) {
                                            eprintln!(
                                                "  only full: {:?} {:?} t{} must {:?} may {:?}",
                                                x.span, x.kind, x.thread, x.must, x.may
                                            );
                                        }
                                    }
                                    for x in r.into_iter().flat_map(|r| r.iter()) {
                                        if !f.contains(x) {
                                            eprintln!(
                                                "  only incr: {:?} {:?} t{} must {:?} may {:?}",
                                                x.span, x.kind, x.thread, x.must, x.may
                                            );
                                        }
                                    }
                                }
                            }
                        }
                        panic!("racelens: incremental walk differs from a full walk ({part})");
                    }
                }
                incremental::keep(ws.key(), snap);
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
    incremental::forget(ws.key());
    let started = std::time::Instant::now();
    let (result, data) = walk_all(db, &prog);
    if std::env::var_os("RACELENS_TIMING").is_some() {
        eprintln!("racelens: walk from scratch in {:.1?}", started.elapsed());
    }
    incremental::count(false);
    if let Some(data) = data {
        incremental::keep(
            ws.key(),
            incremental::Snapshot::new(prog, summaries, data, &result),
        );
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
    w.d.free_params.borrow_mut().clear();
    w.d.allocator_internal.borrow_mut().clear();
    w.d.passed_on.borrow_mut().clear();
    w.d.alloc_slots.borrow_mut().clear();
    *w.d.alloc_slot_index.borrow_mut() = None;
    // The root thread: `main`, or every function nobody calls. In library
    // mode the roots are threads of their own, below, and `main` stays
    // empty; a library with too many roots for one walk each (a whole API)
    // runs them all in one non-unique "library client" thread instead.
    let library_roots = if library {
        w.library_roots()
    } else {
        Vec::new()
    };
    // A single-threaded host runs every root on its one thread, its load
    // entry first (see `threads::single_threaded_host`).
    let host = match prog.functions_named("main") {
        None => threads::single_threaded_host(&library_roots),
        Some(_) => None,
    };
    let one_client = host.is_some() || library_roots.len() > LIBRARY_ROOT_THREADS;
    let roots: Vec<FunctionId> = match prog.functions_named("main") {
        // A folder may hold several programs (tools, tests): every `main` is
        // a root of the main thread.
        Some(m) => m.clone(),
        None if one_client => {
            let mut r: Vec<&(Name, FunctionId)> = library_roots.iter().collect();
            r.sort_by_key(|(n, _)| !threads::is_load_entry(n));
            r.into_iter().map(|r| r.1).collect()
        }
        None if library => Vec::new(),
        None => w.uncalled_functions(),
    };
    let mut main = Thread::new(
        Name::from(match (host, one_client) {
            (Some(h), _) => h,
            (None, true) => "library client",
            (None, false) => "main",
        }),
        None,
        None,
        host.is_some() || !one_client,
    );
    main.repeats = host.is_some();
    w.d.threads.push(main);
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
        // What its creators stored where its argument leads after creating
        // it (`POOL_add(ctx, job)` after `POOL_create(..)` started the pool's
        // workers) is there too when it runs.
        if w.d.threads[t].site.is_some() && !w.d.group_roots.contains_key(&(t as u32)) {
            w.add_thread_functions(t as u32, &args);
        }
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
            // Its argument is its own if every creation handed it a fresh
            // object (the race check asks `Thread::owns_arg`, see `own.rs`).
            let heap_arg = own::heap_args(&args);
            if let Some(p) = w.summary(f).ir.params.first().filter(|_| heap_arg) {
                init.own = thin_vec::thin_vec![(p.name.clone(), crate::facts::Own::Arg)];
            }
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
    w.d.libevent_plan = w.libevent.get().cloned();
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
    untracked: std::cell::RefCell<FxHashMap<(FunctionId, usize), (bool, bool, bool)>>,
    /// Per function: the variables holding a slot thread's own number
    /// (see `slots`), from the function's text.
    own_vars: std::cell::RefCell<FxHashMap<FunctionId, Arc<slots::OwnVars>>>,
    /// Per function: its `fork()` calls and the locals holding their
    /// results (see `fork`), from the function's text.
    fork_vars: std::cell::RefCell<FxHashMap<FunctionId, Arc<fork::ForkVars>>>,
    /// Member names that are arrays in every struct that has one (see
    /// `Walker::array_member`), gathered on first use.
    array_fields: std::cell::OnceCell<rustc_hash::FxHashSet<Name>>,
    /// The program's libevent loops and registrations (see `libevent`),
    /// read on first use.
    libevent: std::cell::OnceCell<std::sync::Arc<libevent::Plan>>,
    /// What a libevent loop call's handlers left, per thread and call,
    /// for later visits of the call (see `libevent.rs`).
    handler_runs: std::cell::RefCell<FxHashMap<(u32, crate::db::FunctionId, u32), state::State>>,
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
            own_vars: Default::default(),
            fork_vars: Default::default(),
            array_fields: Default::default(),
            libevent: Default::default(),
            handler_runs: Default::default(),
        }
    }

    fn summary(&self, f: FunctionId) -> Arc<FunctionSummary> {
        // The query is read once per function (that records the dependency);
        // later calls skip salsa's bookkeeping.
        if let Some(s) = self.d.summaries.borrow().get(&f) {
            return s.clone();
        }
        let s = walk_summary(self.db, f).clone();
        self.d.summaries.borrow_mut().insert(f, s.clone());
        s
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
}
