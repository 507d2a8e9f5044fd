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
use racelens_syntax::{AccessKind, Call, Callee, Expr, Name, Stmt, Test, TypeInfo};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use thin_vec::ThinVec;
use wild::{hidden_state, is_wild, wild_locals, wild_value, LIBRARY_POINTER_PARAMS};

mod incremental;
mod wild;
pub use incremental::{set_incremental, set_verify, stats as incremental_stats};

/// Library functions that call their function arguments synchronously (or
/// not as threads): their callbacks are not new threads.
const NOT_ASYNC_CALLBACKS: &[&str] = &[
    "qsort",
    "qsort_r",
    "bsearch",
    "lfind",
    "lsearch",
    "tsearch",
    "tfind",
    "tdelete",
    "twalk",
    "scandir",
    "ftw",
    "nftw",
    "atexit",
    "on_exit",
    "signal",
    "sigaction",
    "sigset",
    "bsd_signal",
    "pthread_atfork",
    "pthread_key_create",
    "pthread_cleanup_push",
    "dl_iterate_phdr",
];

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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TryKey {
    Call(u32),
    Var(Name),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
struct State {
    must: LockSet,
    may: LockSet,
    created: SiteSet,
    /// Sites that may have been created and not joined.
    active: SiteSet,
    /// Lock calls whose result a later test may check: the lock taken on
    /// success, and whether success is a nonzero result.
    tries: ThinVec<(TryKey, Held, bool)>,
    /// Branch facts on plain variables that hold on this path: (var, nonzero).
    conds: ThinVec<(Name, bool)>,
    /// Spawns that happened only when a variable was (non)zero.
    guards: ThinVec<(u32, Name, bool)>,
    /// (site, lock): the lock has been held continuously since the site spawned.
    clean: ThinVec<(u32, LocKey)>,
    /// Locks this thread has certainly acquired at some point.
    acquired: ThinVec<LocKey>,
    /// Heap objects allocated by this thread that no other thread can reach yet.
    fresh: Sites,
    /// Heap sites this thread may have allocated from (bounded).
    allocated: Sites,
    /// Symbolic locks: (pointer variable, path, shared) for `&q->lock` held
    /// through `q` since `q` was last assigned. They guard accesses through
    /// the same `q`, whatever object `q` points to.
    /// Index locks are rooted at the index variable: `lock(&L[i])` gives
    /// `(i, [@L, [*]])`. Region tags `(p, [#A, @L, [*]])` say that `p` was
    /// derived from `A[i]` while `L[i]` was held: everything reached through
    /// `p` belongs to `A[i]`'s region and is guarded by `L[i]` (Goblint's
    /// region analysis assumes regions are disjoint, and so do we).
    syms: ThinVec<(Name, Vec<Elem>, bool)>,
    /// Barrier phases: (barrier, fewest, most) waits passed.
    phases: ThinVec<(Name, u8, u8)>,
    /// Index ranges `[from, to)` of a creation loop's thread ids already
    /// joined, for a loop with a constant range: (site, from, to).
    joined_ix: ThinVec<(u32, i64, i64)>,
    /// Thread ids of a site that stores into several (`create(&id1)` and
    /// `create(&id2)` through one wrapper) already joined: (site, tid index).
    joined_tids: ThinVec<(u32, u32)>,
    /// This thread has joined `main` (through an id `main` stored from
    /// `pthread_self()`): everything `main` did happened before.
    main_ended: bool,
    /// What a local pointer of this frame holds since its last assignment
    /// on this path (flow-sensitive; the frame's `pts` is the fallback).
    ptrs: Ptrs,
    /// (var, nonzero, lock): the lock is held exactly when the plain
    /// variable is (non)zero: `if (use_lock) lock(&m); ... if (use_lock) x++;`.
    lock_guards: ThinVec<(Name, bool, Held)>,
    /// Extra acquisitions of must-held locks (recursive mutexes): `lock(m)`
    /// twice needs two `unlock(m)`. A second lock of a normal mutex never
    /// returns, so counting is right for both.
    rec_depth: ThinVec<(LocKey, u8)>,
}

/// Flow-sensitive values of a frame's local pointers, shared between the
/// many states that agree on them.
type Ptrs = Arc<Vec<(Name, Vals)>>;

/// A sorted list of heap sites, shared between the states that agree on it:
/// a thread's allocation sites change at allocations only, while the state
/// holding them is cloned at every branch and call (a dozen sites on
/// average on memcached). Empty is `None`, so equal lists compare equal.
#[derive(Clone, Default, PartialEq, Eq)]
struct Sites(Option<Arc<[Base]>>);

impl std::ops::Deref for Sites {
    type Target = [Base];
    fn deref(&self) -> &[Base] {
        self.0.as_deref().unwrap_or(&[])
    }
}

impl From<Vec<Base>> for Sites {
    fn from(v: Vec<Base>) -> Self {
        Sites((!v.is_empty()).then(|| Arc::from(v)))
    }
}

impl std::hash::Hash for Sites {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}

impl std::fmt::Debug for Sites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Sites {
    fn clear(&mut self) {
        self.0 = None;
    }
}

/// The name of a callback group's thread: its entry functions.
fn group_name(roots: &[(Name, Vals)]) -> Name {
    let mut names: Vec<&str> = roots.iter().take(3).map(|r| &*r.0).collect();
    if roots.len() > 3 {
        names.push("...");
    }
    Name::from(names.join(", "))
}

/// Is `x` a local pointer the walk follows flow-sensitively (non-static,
/// address never taken)?
fn tracks_ptr(fr: &Frame, x: &Name) -> bool {
    !fr.address_taken.contains(x) && fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false)
}

/// `x` now holds `v` (unknown when empty: the frame's points-to applies).
/// Kept sorted by name, at most [`MAX_TRACKED`] entries.
fn set_ptr(ptrs: &mut Vec<(Name, Vals)>, x: &Name, v: Vals) {
    ptrs.retain(|(y, _)| y != x);
    if !v.is_empty() && ptrs.len() < MAX_TRACKED {
        let at = ptrs.partition_point(|(y, _)| y < x);
        ptrs.insert(at, (x.clone(), v));
    }
}

/// A constant loop range `START<END` as numbers.
fn const_range(b: &str) -> Option<(i64, i64)> {
    let (a, b) = b.split_once('<')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Do the joined index ranges of `site` cover `[from, to)`?
fn covered(joined: &[(u32, i64, i64)], site: u32, from: i64, to: i64) -> bool {
    let mut at = from;
    loop {
        if at >= to {
            return true;
        }
        match joined
            .iter()
            .filter(|j| j.0 == site && j.1 <= at && at < j.2)
            .map(|j| j.2)
            .max()
        {
            Some(next) => at = next,
            None => return false,
        }
    }
}

/// Is `c` a compare-and-swap (GCC's builtins, C11's generic functions)?
/// The value swapped in is its third argument in every form.
fn is_cas(c: &Call) -> bool {
    matches!(&c.callee, Callee::Direct(n) if n.contains("compare_exchange") || n.contains("compare_and_swap"))
}

/// Is `c` an atomic store (`__atomic_store_n`, `atomic_store[_explicit]`)?
fn is_atomic_store(c: &Call) -> bool {
    matches!(&c.callee, Callee::Direct(n) if matches!(&**n,
        "__atomic_store_n" | "__atomic_store" | "atomic_store" | "atomic_store_explicit"))
}

/// SV-COMP's lock idiom inside a `__VERIFIER_atomic_*` function: a body
/// that assumes a global `m` is zero and then sets it to a nonzero constant
/// acquires `m` (`assume(m == 0); m = 1;`); one that only sets it to zero
/// releases it. Returns the global and whether the function acquires it.
fn verifier_lock(body: &[Stmt]) -> Option<(Name, bool)> {
    let mut waits: Vec<&Name> = Vec::new();
    let mut sets: Vec<(&Name, i64)> = Vec::new();
    for s in body {
        match s {
            Stmt::If {
                test:
                    Test::VarZero {
                        var,
                        zero_on_true: true,
                    },
                then,
                els,
                ..
            } if then.is_empty() && els.is_empty() => waits.push(var),
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs: Expr::Int(k),
            } => sets.push((x, *k)),
            Stmt::Access(_) | Stmt::Decl(_) => {}
            Stmt::Call(_) => {}
            _ => return None,
        }
    }
    match (&waits[..], &sets[..]) {
        ([w], [(x, k)]) if *w == *x && *k != 0 => Some(((*x).clone(), true)),
        ([], [(x, 0)]) => Some(((*x).clone(), false)),
        _ => None,
    }
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

/// The memo key of calling `fid` in state `st` with `bindings`.
fn memo_key(fid: FunctionId, st: &State, bindings: &[Vals]) -> MemoKey {
    let mut st = st.clone();
    st.fresh.clear();
    st.allocated.clear();
    (fid, st, bindings.to_vec())
}

static COPIES_OFF: AtomicBool = AtomicBool::new(false);
static COPIES_MADE: AtomicU64 = AtomicU64::new(0);

/// Turns copies of transparent contexts (see [`Walker::copy_node`]) off or
/// on, to measure what they save and to test that they change nothing.
/// `RACELENS_NO_COPY=1` turns them off too.
pub fn set_copies(on: bool) {
    COPIES_OFF.store(!on, Ordering::Relaxed);
}

/// Contexts copied instead of walked since the process started.
pub fn copies_made() -> u64 {
    COPIES_MADE.load(Ordering::Relaxed)
}

fn no_copies() -> bool {
    static ENV: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    COPIES_OFF.load(Ordering::Relaxed)
        || *ENV.get_or_init(|| std::env::var_os("RACELENS_NO_COPY").is_some())
}

/// The memo key without the context fields: the locksets and thread facts
/// that a transparent function's walk only records (see
/// [`Walker::copy_node`]).
fn copy_key(key: &MemoKey) -> MemoKey {
    let mut k = key.clone();
    k.1 = with_context(&k.1, &State::default());
    k
}

/// `st` with the context fields of `from`: the must and may locksets, the
/// spawn sites created and active, the clean and acquired locks, the
/// barrier phases and whether `main` ended.
fn with_context(st: &State, from: &State) -> State {
    // Every field named (no `..st.clone()`, which would clone the context
    // fields of `st` only to drop them): a new field must be sorted here.
    State {
        must: from.must.clone(),
        may: from.may.clone(),
        created: from.created.clone(),
        active: from.active.clone(),
        clean: from.clean.clone(),
        acquired: from.acquired.clone(),
        phases: from.phases.clone(),
        main_ended: from.main_ended,
        tries: st.tries.clone(),
        conds: st.conds.clone(),
        guards: st.guards.clone(),
        fresh: st.fresh.clone(),
        allocated: st.allocated.clone(),
        syms: st.syms.clone(),
        joined_ix: st.joined_ix.clone(),
        joined_tids: st.joined_tids.clone(),
        ptrs: st.ptrs.clone(),
        lock_guards: st.lock_guards.clone(),
        rec_depth: st.rec_depth.clone(),
    }
}

/// Does node `n`'s result hold for entry state `st` as far as the heap goes?
/// It agrees with `st` on the freshness of every heap site it observed and,
/// if it allocates, on which of those sites were already allocated (see
/// [`Walker::memo_hit`]).
fn heap_agrees(n: &Node, st: &State) -> bool {
    let room = |a: &[Base]| a.len() + n.heap_obs.len() < MAX_ALLOCATED;
    let allocated = !n.allocates
        || n.state.allocated == st.allocated
        || (room(&n.state.allocated)
            && room(&st.allocated)
            && n.heap_obs
                .iter()
                .all(|b| n.state.allocated.contains(b) == st.allocated.contains(b)));
    allocated
        && n.heap_obs
            .iter()
            .all(|b| n.state.fresh.contains(b) == st.fresh.contains(b))
}

/// State `e`, met during or at the end of node `n`'s walk, for entry state
/// `st` instead of `n`'s: the heap sites `n` did not observe keep their
/// freshness and allocation from `st` (all of `allocated` passes through
/// when it does not allocate).
fn rebase_sites(n: &Node, st: &State, e: &mut State) {
    let observed = |b: &Base| n.heap_obs.binary_search(b).is_ok();
    let rebased = |exit: &[Base], entry: &[Base]| {
        let mut v: Vec<Base> = exit.iter().filter(|b| observed(b)).cloned().collect();
        v.extend(entry.iter().filter(|b| !observed(b)).cloned());
        v.sort();
        v
    };
    if n.state.fresh != st.fresh {
        e.fresh = rebased(&e.fresh, &st.fresh).into();
    }
    if !n.allocates {
        e.allocated = st.allocated.clone();
    } else if n.state.allocated != st.allocated {
        e.allocated = rebased(&e.allocated, &st.allocated).into();
    }
}

/// Does the state hold a lock of a constant array index (`L[4]`)? Such a
/// lock guards the same index of other arrays too (see `record_at`).
fn holds_index_lock(st: &State) -> bool {
    st.must
        .0
        .iter()
        .chain(st.may.0.iter())
        .any(|h| const_indexed(&h.lock).is_some())
}

/// Do two states agree on the context fields?
fn same_context(a: &State, b: &State) -> bool {
    with_context(a, b) == *a
}

/// Is every lock the state certainly holds also among those it may hold?
fn must_within_may(st: &State) -> bool {
    st.must
        .0
        .iter()
        .all(|h| st.may.0.iter().any(|m| m.lock == h.lock))
}

/// Inserts `x` into the sorted `v` unless it is there.
fn insert_sorted<T: Ord>(v: &mut Vec<T>, x: T) {
    if let Err(i) = v.binary_search(&x) {
        v.insert(i, x);
    }
}

/// `a`, then the elements of `b` not in `a`.
fn merged<T: Clone + PartialEq>(a: &[T], b: &[T]) -> Vec<T> {
    let mut out = a.to_vec();
    for x in b {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

/// The sites fresh after a join: fresh on both paths, or fresh on one and
/// never allocated on the other.
fn joined_fresh(a: &State, b: &State) -> Vec<Base> {
    let mut fresh: Vec<Base> = a
        .fresh
        .iter()
        .filter(|f| b.fresh.contains(f) || !b.allocated.contains(f))
        .cloned()
        .collect();
    for f in b.fresh.iter() {
        if !a.allocated.contains(f) && !fresh.contains(f) {
            fresh.push(f.clone());
        }
    }
    fresh.sort();
    fresh
}

fn join(a: Option<State>, b: Option<State>) -> Option<State> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => {
            let tries = merged(&a.tries, &b.tries);
            // A pair survives where the other path did not spawn the site at all.
            let mut clean: Vec<(u32, LocKey)> = a
                .clean
                .iter()
                .filter(|c| b.clean.contains(c) || !b.created.contains(c.0))
                .cloned()
                .collect();
            for c in &b.clean {
                if !a.created.contains(c.0) && !clean.contains(c) {
                    clean.push(c.clone());
                }
            }
            clean.sort();
            let acquired = common(&a.acquired, &b.acquired);
            let conds = common(&a.conds, &b.conds);
            let mut guards: Vec<(u32, Name, bool)> = Vec::new();
            for s in a.created.union(&b.created).0 {
                let ga: Vec<_> = a.guards.iter().filter(|g| g.0 == s).cloned().collect();
                let gb: Vec<_> = b.guards.iter().filter(|g| g.0 == s).cloned().collect();
                match (a.created.contains(s), b.created.contains(s)) {
                    (true, true) => guards.extend(ga.into_iter().filter(|g| gb.contains(g))),
                    (true, false) => guards.extend(ga),
                    _ => guards.extend(gb),
                }
            }
            let fresh = match a.fresh == b.fresh && a.allocated == b.allocated {
                true => a.fresh.clone(),
                false => Sites::from(joined_fresh(&a, &b)),
            };
            let allocated = match a.allocated == b.allocated {
                true => a.allocated.clone(),
                false => {
                    let mut v = merged(&a.allocated, &b.allocated);
                    v.sort();
                    Sites::from(v)
                }
            };
            let syms = common(&a.syms, &b.syms);
            let mut phases: Vec<(Name, u8, u8)> = Vec::new();
            for (k, _, _) in a.phases.iter().chain(b.phases.iter()) {
                if phases.iter().any(|p| &p.0 == k) {
                    continue;
                }
                let pa = a
                    .phases
                    .iter()
                    .find(|p| &p.0 == k)
                    .map(|p| (p.1, p.2))
                    .unwrap_or((0, 0));
                let pb = b
                    .phases
                    .iter()
                    .find(|p| &p.0 == k)
                    .map(|p| (p.1, p.2))
                    .unwrap_or((0, 0));
                phases.push((k.clone(), pa.0.min(pb.0), pa.1.max(pb.1)));
            }
            phases.sort();
            let joined_ix = common(&a.joined_ix, &b.joined_ix);
            let joined_tids = common(&a.joined_tids, &b.joined_tids);
            let rec_depth: Vec<(LocKey, u8)> = a
                .rec_depth
                .iter()
                .filter_map(|(k, da)| {
                    let db = b.rec_depth.iter().find(|(x, _)| x == k)?.1;
                    Some((k.clone(), (*da).min(db)))
                })
                .collect();
            Some(State {
                rec_depth: rec_depth.into(),
                must: a.must.intersect(&b.must),
                may: a.may.union(&b.may),
                created: a.created.union(&b.created),
                active: a.active.union(&b.active),
                tries: tries.into(),
                clean: clean.into(),
                acquired: acquired.into(),
                conds: conds.into(),
                guards: guards.into(),
                fresh: fresh.into(),
                allocated: allocated.into(),
                syms: syms.into(),
                phases: phases.into(),
                joined_ix: joined_ix.into(),
                joined_tids: joined_tids.into(),
                main_ended: a.main_ended && b.main_ended,
                ptrs: if Arc::ptr_eq(&a.ptrs, &b.ptrs) || a.ptrs == b.ptrs {
                    a.ptrs.clone()
                } else {
                    let mut v: Vec<(Name, Vals)> = Vec::new();
                    for (x, va) in a.ptrs.iter() {
                        if let Some((_, vb)) = b.ptrs.iter().find(|(y, _)| y == x) {
                            let mut u = va.clone();
                            add_vals(&mut u, vb.iter().cloned());
                            v.push((x.clone(), u));
                        }
                    }
                    Arc::new(v)
                },
                lock_guards: {
                    let mut g = common(&a.lock_guards, &b.lock_guards);
                    // A lock one path holds and the other does not, where the
                    // paths disagree on a flag, is held exactly per the flag.
                    for (x, y) in [(&a, &b), (&b, &a)] {
                        for h in &x.must.0 {
                            if y.may.0.iter().any(|o| o.lock == h.lock) {
                                continue;
                            }
                            for (v, nz) in &x.conds {
                                if y.conds.contains(&(v.clone(), !*nz))
                                    && g.len() < MAX_TRACKED
                                    && !g.iter().any(|q| q.0 == *v && q.2.lock == h.lock)
                                {
                                    g.push((v.clone(), *nz, h.clone()));
                                }
                            }
                        }
                    }
                    g.sort();
                    g.into()
                },
            })
        }
    }
}

#[derive(Default)]
struct Out {
    next: Option<State>,
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

fn unbox(a: Abrupt) -> Option<State> {
    a.map(|b| *b)
}

/// A function's frame for some pointer arguments: the points-to of its
/// local pointers, over what the function holds whatever its arguments.
struct Frame {
    fid: FunctionId,
    base: Arc<FrameBase>,
    pts: FxHashMap<Name, Vals>,
}

impl std::ops::Deref for Frame {
    type Target = FrameBase;
    fn deref(&self) -> &FrameBase {
        &self.base
    }
}

/// What a frame holds whatever the pointer arguments: built once per
/// function and walk (it reads the function's summary and the program's
/// types only).
struct FrameBase {
    fname: Name,
    summary: Arc<FunctionSummary>,
    locals: FxHashMap<Name, TypeInfo>,
    address_taken: FxHashSet<Name>,
    calls: FxHashMap<u32, Callee>,
    /// Locals assigned exactly once, from `&place`: `d = &s->datum`.
    single_defs: FxHashMap<Name, Expr>,
    /// Locals assigned from a call result: (local, call id).
    from_calls: Vec<(Name, u32)>,
    /// Calls whose result a test or an assignment to a variable reads: only
    /// their lock results are kept in [`State::tries`] (an entry for any
    /// other call is never looked up, and would only make a loop's head
    /// differ between passes).
    tested: FxHashSet<u32>,
    /// Wild locals: never given an address or null, only left uninitialized
    /// or set to non-zero integers (see [`wild_locals`]).
    wild: FxHashSet<Name>,
    /// Assignments to non-static locals, in body order: the input of the
    /// flow-insensitive points-to.
    local_assigns: Vec<(Name, Expr)>,
    /// The body has a `goto` (local pointers are then not followed
    /// flow-sensitively by the pointer store).
    has_goto: bool,
}

/// One memoized calling context: a function walked from one entry state in
/// one thread. Nodes form the call graph of the walk, and the facts of a
/// revision are those recorded by the nodes reachable from the thread roots.
/// That is what lets an edit re-walk only the edited function's nodes (see
/// [`incremental`]).
#[derive(Clone)]
struct Node {
    fid: FunctionId,
    thread: u32,
    /// The memo key: entry state (without pending trylocks) and bindings.
    state: State,
    bindings: Vec<Vals>,
    exit: Option<State>,
    /// Spawn sites visited below this node.
    sites: Vec<u32>,
    /// Spawn sites of the callees its own statements replayed from the
    /// memo (each makes those threads non-unique: `replayed_sites` is the
    /// union of these over the reachable nodes and [`WalkData::root_replayed`]).
    replayed: Vec<u32>,
    /// Callee nodes, walked or replayed from the memo, in call order.
    children: Vec<u32>,
    /// Accesses recorded by this function's own statements.
    facts: Vec<(Base, AccessFact)>,
    /// Struct prefixes noted for those accesses.
    prefixes: Vec<(Base, Vec<(Vec<Elem>, Name)>)>,
    /// Its own statements changed state shared by the whole walk.
    effects: bool,
    /// Functions whose analysis its own statements cut short, and why.
    marks: Vec<(FunctionId, &'static str)>,
    /// How many frames above its own a recursion cut below it reached back:
    /// its result depends on that part of the call stack (0: on none; a
    /// recursion entirely inside its own walk cuts the same on any stack
    /// without the functions it reaches).
    cut_up: u32,
    /// The latest global change (epoch) its result has read.
    dep: u64,
    /// Heap sites whose freshness its walk (callees included) tested or
    /// changed, sorted. Its result holds for any entry state that agrees
    /// with its own on those sites' freshness: the others pass through.
    heap_obs: Vec<Base>,
    /// Its walk (callees included) allocated: the result also depends on
    /// the entry's whole `allocated` set (bounded, and read by merges).
    allocates: bool,
    /// The global epoch when it was first walked.
    epoch: u64,
    /// Its walk (callees included) read or changed the state's locksets or
    /// thread facts other than by recording them with its accesses, or
    /// changed state shared by the whole walk: it cannot stand for another
    /// context that differs only there (see [`Walker::copy_hit`]).
    opaque: bool,
    /// Statements its own walk interpreted (callees not included).
    steps: u64,
    /// The functions on the stack when it was first walked.
    stack: Vec<FunctionId>,
    /// Nodes `id + 1 .. end` were first walked during its walk.
    end: u32,
    loop_depth: u32,
}

impl Node {
    /// A node about to be walked: nothing recorded yet.
    fn new(
        fid: FunctionId,
        thread: u32,
        (state, bindings): (State, Vec<Vals>),
        epoch: u64,
        stack: Vec<FunctionId>,
        loop_depth: u32,
    ) -> Node {
        Node {
            fid,
            thread,
            state,
            bindings,
            exit: None,
            sites: Vec::new(),
            replayed: Vec::new(),
            children: Vec::new(),
            facts: Vec::new(),
            prefixes: Vec::new(),
            effects: false,
            marks: Vec::new(),
            cut_up: 0,
            dep: 0,
            heap_obs: Vec::new(),
            allocates: false,
            epoch,
            opaque: false,
            steps: 0,
            stack,
            end: 0,
            loop_depth,
        }
    }
}

/// The calling context without the entry's `fresh` and `allocated` sets:
/// nodes under one key differ only there (see [`Node::heap_obs`]).
type MemoKey = (FunctionId, State, Vec<Vals>);

/// Library functions that save the calling environment, and those that
/// return to it (the state at `longjmp` flows to `setjmp`'s nonzero return).
const SETJMP: &[&str] = &["setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp"];
const LONGJMP: &[&str] = &["longjmp", "_longjmp", "siglongjmp", "__longjmp_chk"];

/// (site or thread, lock) pairs.
type SiteLocks = Vec<(u32, LocKey)>;

/// Library functions that keep none of their pointer arguments once they
/// return (initializing a mutex inside a new object does not publish it).
fn does_not_retain(f: &str) -> bool {
    const EXACT: &[&str] = &[
        "pthread_mutex_init",
        "pthread_mutex_destroy",
        "pthread_cond_init",
        "pthread_cond_destroy",
        "pthread_cond_signal",
        "pthread_cond_broadcast",
        "pthread_rwlock_init",
        "pthread_rwlock_destroy",
        "pthread_spin_init",
        "pthread_spin_destroy",
        "pthread_barrier_init",
        "pthread_barrier_destroy",
        "sem_init",
        "sem_destroy",
        "sem_post",
        "sem_wait",
        "sem_trywait",
        "sem_getvalue",
        "mtx_init",
        "mtx_destroy",
        "cnd_init",
        "cnd_destroy",
        "cnd_signal",
        "cnd_broadcast",
        "printf",
        "fprintf",
        "dprintf",
        "perror",
        "fputs",
        "fwrite",
        "write",
        "send",
        "strtol",
        "strtoul",
        "strtoll",
        "strtoull",
        "strtod",
        "atoi",
        "atol",
        "gettimeofday",
        "clock_gettime",
    ];
    EXACT.contains(&f)
        || [
            "pthread_mutexattr_",
            "pthread_condattr_",
            "pthread_rwlockattr_",
            "pthread_attr_",
        ]
        .iter()
        .any(|p| f.starts_with(p))
}

/// A `setjmp` whose zero-return branch is being walked.
struct JmpFrame {
    /// The `jmp_buf` (empty when unresolved: any `longjmp` may return here).
    env: Vec<LocKey>,
    /// The state right after `setjmp` returned 0, for the frame's own facts.
    at: State,
    /// `node_stack` depth of the function that called `setjmp`.
    depth: usize,
    /// The states of the `longjmp`s that returned here.
    states: Option<State>,
}

/// The caller's frame-local facts, kept aside while a callee runs.
#[derive(Default)]
struct FrameFacts {
    conds: Vec<(Name, bool)>,
    guards: Vec<(u32, Name, bool)>,
    ptrs: Ptrs,
    lock_guards: Vec<(Name, bool, Held)>,
}

impl FrameFacts {
    /// Gives the facts back to the state after the call. A guard of a site
    /// the callee may have spawned again no longer holds.
    fn restore(self, st: &mut State, spawned: &[u32]) {
        st.ptrs = self.ptrs;
        // A lock the callee took or released no longer follows the flag.
        for g in self.lock_guards {
            let l = &g.2.lock;
            let unchanged =
                !st.must.0.iter().any(|h| &h.lock == l) && st.may.0.iter().any(|h| &h.lock == l);
            if unchanged && !st.lock_guards.contains(&g) {
                st.lock_guards.push(g);
            }
        }
        st.lock_guards.sort();
        for c in self.conds {
            if !st.conds.iter().any(|x| x.0 == c.0) {
                st.conds.push(c);
            }
        }
        st.guards.extend(
            self.guards
                .into_iter()
                .filter(|g| !spawned.contains(&g.0) && st.created.contains(g.0)),
        );
    }
}

/// The last fact context built, with what its `acquired` came from.
struct LastCtx {
    thread: u32,
    /// The state's own acquired locks and the thread's creation-chain ones.
    acquired: Vec<LocKey>,
    chain: Vec<(u32, LocKey)>,
    ctx: Arc<FactCtx>,
    hash: u64,
}

/// An interned fact context and the hash of its value.
type Ctx = (Arc<FactCtx>, u64);

/// An access as the walk collects it: with the hash of its context, so that
/// the accesses of one expression in many contexts do not all collide (an
/// [`AccessFact`]'s own hash leaves the context out).
#[derive(PartialEq, Eq)]
struct Recorded {
    fact: AccessFact,
    ctx_hash: u64,
}

/// Hashes the path by address: every recorded path is interned
/// ([`WalkData::paths`]), so equal paths are one allocation and the many
/// accesses recorded again in an equal context cost no path comparison.
impl std::hash::Hash for Recorded {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.fact.path) as *const Elem as usize).hash(h);
        self.fact.hash_access(h);
        self.ctx_hash.hash(h);
    }
}

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
    untracked: std::cell::RefCell<FxHashMap<(FunctionId, usize), (bool, bool)>>,
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

    /// The analysis result. Consumes the facts; the rest of the data stays
    /// for an incremental update.
    fn finish(&mut self) -> ThreadAnalysis {
        let facts = std::mem::take(&mut self.d.facts);
        let mut threads = self.d.threads.clone();
        let prefixes: FxHashMap<&Base, Vec<&(Vec<Elem>, Name)>> = self
            .d
            .struct_prefixes
            .iter()
            .map(|(b, p)| (b, used_prefixes(p.iter())))
            .collect();
        let mut bases: FxHashSet<&Base> = facts.keys().collect();
        bases.extend(prefixes.keys().copied());
        let bases: Vec<&Base> = bases.into_iter().collect();
        // Each base's facts are a pure function of the walk's: on a large
        // program they are sorted and capped on every core, largest first.
        let workers = |n: usize| match n {
            0..=255 => 1,
            _ => racelens_syntax::par::workers(4),
        };
        let order = racelens_syntax::par::largest_first(
            bases
                .iter()
                .map(|b| facts.get(*b).map_or(0, |f| f.len()) as u64),
        );
        let mut own: Vec<Vec<AccessFact>> = vec![Vec::new(); bases.len()];
        for (i, v) in
            racelens_syntax::par::run(&order, vec![(); workers(bases.len())], |(), next| {
                let mut out = Vec::new();
                while let Some(i) = next() {
                    let v = cap_facts(
                        facts
                            .get(bases[i])
                            .into_iter()
                            .flatten()
                            .map(|r| r.fact.clone()),
                    );
                    out.push((i, v));
                }
                out
            })
        {
            own[i] = v;
        }
        // Accesses through unresolved pointers of struct type T may touch
        // every object of type T: copy them into those bases, from T's own
        // capped facts (a fixed order, so that the cap keeps the same facts
        // whatever order the walk found them in).
        let mut typed: Vec<(Name, &[AccessFact])> = bases
            .iter()
            .zip(&own)
            .filter_map(|(b, v)| match b {
                Base::Type(t) if facts.contains_key(*b) => Some((t.clone(), &v[..])),
                _ => None,
            })
            .collect();
        typed.sort_by(|a, b| a.0.cmp(&b.0));
        let prefixes_of = |i: usize| prefixes.get(bases[i]).map(|p| &p[..]).unwrap_or(&[]);
        let copying: Vec<usize> = (0..bases.len())
            .filter(|&i| takes_copies(bases[i], own[i].len(), prefixes_of(i), &typed))
            .collect();
        let copied =
            racelens_syntax::par::run(&copying, vec![(); workers(copying.len())], |(), next| {
                let mut out = Vec::new();
                while let Some(i) = next() {
                    out.push((
                        i,
                        with_copies(bases[i], own[i].clone(), prefixes_of(i), &typed),
                    ));
                }
                out
            });
        drop(typed);
        for (i, v) in copied {
            own[i] = v;
        }
        let located: Vec<(Base, Vec<AccessFact>)> = bases
            .iter()
            .zip(own)
            .filter(|(_, v)| !v.is_empty())
            .map(|(b, v)| ((*b).clone(), v))
            .collect();
        drop(bases);
        drop(facts);
        // Uniqueness: a thread is unique when its site runs once, outside
        // loops and memo replays, in a unique parent.
        for i in 1..threads.len() {
            let th = &threads[i];
            let site = th.site.map(|s| &self.d.sites[s as usize]);
            let parent_unique = th
                .parent
                .map(|p| threads[p as usize].unique)
                .unwrap_or(true);
            let unique = th.unique
                && parent_unique
                && site.map(|s| !s.in_loop && s.visits <= 1).unwrap_or(true)
                && th
                    .site
                    .map(|s| !self.d.replayed_sites.contains(&s))
                    .unwrap_or(true);
            threads[i].unique = unique;
        }
        let mut locations = BTreeMap::new();
        for (k, v) in located {
            locations.insert(k, Arc::new(v));
        }
        ThreadAnalysis {
            table: Arc::new(ThreadTable {
                threads,
                sites: self.d.sites.clone(),
            }),
            locations,
            incomplete: {
                let mut v: Vec<(FunctionId, String)> =
                    self.d.incomplete.clone().into_iter().collect();
                v.sort_by_key(|(f, _)| f.key());
                v
            },
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

    /// The innermost loop around the current statement in the current
    /// function, with its range when it is a counting loop.
    fn frame_loop(&self) -> Option<&Option<Name>> {
        self.d
            .loops
            .last()
            .filter(|(depth, _)| *depth == self.d.stack.len())
            .map(|(_, b)| b)
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

    // ----- frames and points-to -------------------------------------------

    /// Frames depend only on the function and the pointer arguments: build
    /// each once.
    fn frame_cached(&self, fid: FunctionId, bindings: &[Vals]) -> Arc<Frame> {
        let key = (fid, bindings.to_vec());
        if let Some(f) = self.d.frames.borrow().get(&key) {
            return f.clone();
        }
        let f = Arc::new(self.frame(fid, bindings));
        self.d.frames.borrow_mut().insert(key, f.clone());
        f
    }

    /// Runs `f` without the flow-sensitive pointers of the frame being
    /// walked: frames and return values are facts of their own function,
    /// and must not depend on which caller (or re-walk) asked first.
    fn without_cur_ptrs<T>(&self, f: impl FnOnce() -> T) -> T {
        let saved = std::mem::take(&mut *self.d.cur_ptrs.borrow_mut());
        let out = f();
        *self.d.cur_ptrs.borrow_mut() = saved;
        out
    }

    fn frame(&self, fid: FunctionId, bindings: &[Vals]) -> Frame {
        self.without_cur_ptrs(|| self.frame_inner(fid, bindings))
    }

    fn frame_inner(&self, fid: FunctionId, bindings: &[Vals]) -> Frame {
        let base = self.frame_base(fid);
        let mut pts: FxHashMap<Name, Vals> = FxHashMap::default();
        for (i, p) in base.summary.ir.params.iter().enumerate() {
            if let Some(b) = bindings.get(i) {
                pts.insert(p.name.clone(), b.clone());
            }
        }
        let mut frame = Frame { fid, base, pts };
        // Flow-insensitive points-to of local pointers, to a small fixpoint.
        let base = frame.base.clone();
        for _ in 0..3 {
            let mut changed = false;
            for (x, rhs) in &base.local_assigns {
                let v = self.eval(&frame, rhs, 0);
                if !v.is_empty() {
                    changed |= add_vals(frame.pts.entry(x.clone()).or_default(), v);
                }
            }
            if !changed {
                break;
            }
        }
        frame
    }

    /// The argument-independent part of `fid`'s frames, built once.
    fn frame_base(&self, fid: FunctionId) -> Arc<FrameBase> {
        if let Some(b) = self.d.frame_bases.borrow().get(&fid) {
            return b.clone();
        }
        let summary = self.summary(fid);
        let mut locals = FxHashMap::default();
        for p in &summary.ir.params {
            locals.insert(p.name.clone(), self.prog.resolve_type(&p.ty));
        }
        visit_stmts(&summary.ir.body, &mut |s| {
            if let Stmt::Decl(d) = s {
                locals.insert(d.name.clone(), self.prog.resolve_type(&d.ty));
            }
        });
        let address_taken = summary.ir.address_taken.iter().cloned().collect();
        let fname = fid.name(self.db).clone();
        let mut calls = FxHashMap::default();
        visit_calls(&summary.ir.body, &mut |c| {
            calls.insert(c.id, c.callee.clone());
        });
        let mut counts: FxHashMap<Name, (u32, Option<Expr>)> = FxHashMap::default();
        let mut from_calls = Vec::new();
        let mut local_assigns = Vec::new();
        let mut has_goto = false;
        let mut tested = FxHashSet::default();
        visit_stmts(&summary.ir.body, &mut |s| {
            has_goto |= matches!(s, Stmt::Goto);
            match s {
                Stmt::If {
                    test: Test::CallZero { id, .. },
                    ..
                }
                | Stmt::Loop {
                    test: Test::CallZero { id, .. },
                    ..
                }
                | Stmt::Assign {
                    lhs: Expr::Var(_),
                    rhs: Expr::CallResult(id),
                } => {
                    tested.insert(*id);
                }
                _ => {}
            }
            if let Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } = s
            {
                if let Expr::CallResult(id) = uncast(rhs) {
                    from_calls.push((x.clone(), *id));
                }
                let e = counts.entry(x.clone()).or_insert((0, None));
                e.0 += 1;
                e.1 = Some(rhs.clone());
                if locals
                    .get(x)
                    .map(|t: &TypeInfo| !t.is_static)
                    .unwrap_or(false)
                {
                    local_assigns.push((x.clone(), rhs.clone()));
                }
            }
        });
        let single_defs = counts
            .into_iter()
            .filter_map(|(x, (n, e))| match e {
                Some(e @ Expr::AddrOf(_))
                    if n == 1
                        && locals.contains_key(&x)
                        && !address_taken_has(&summary.ir.address_taken, &x) =>
                {
                    Some((x, e))
                }
                _ => None,
            })
            .collect();
        let wild = wild_locals(&summary.ir, &locals, &self.prog.structs);
        let base = Arc::new(FrameBase {
            fname,
            summary,
            locals,
            address_taken,
            calls,
            single_defs,
            from_calls,
            tested,
            wild,
            local_assigns,
            has_goto,
        });
        self.d.frame_bases.borrow_mut().insert(fid, base.clone());
        base
    }

    /// Fills the store of pointer cells outside frames (globals, fields).
    fn build_store(&mut self) {
        for (g, refs) in &self.prog.global_inits {
            let ty = self
                .prog
                .global(g)
                .map(|t| self.prog.resolve_type(t))
                .unwrap_or_default();
            let is_struct = ty
                .name
                .as_ref()
                .map(|n| self.prog.structs.contains_key(n))
                .unwrap_or(false);
            if ty.pointer == 0 && !ty.array && !is_struct {
                continue;
            }
            let mut vals = Vec::new();
            for r in refs {
                if self.prog.is_function(r) {
                    vals.push(Val::Func(r.clone()));
                } else if self.prog.global(r).is_some() {
                    vals.push(Val::Target(LocKey::new(Base::Global(r.clone()))));
                }
            }
            // `struct s A = {3, &p}`: the data pointers also go to each
            // data pointer field, so `A.next->x` resolves to `p` (rather than
            // to every `struct s`). Which field took which value is not
            // recorded; with one pointer field it is exact.
            let fields = match (ty.pointer, ty.array, &ty.name) {
                (0, false, Some(n)) => self.prog.structs.get(n),
                _ => None,
            };
            let data: Vals = vals
                .iter()
                .filter(|v| matches!(v, Val::Target(_)))
                .cloned()
                .collect();
            if !data.is_empty() {
                for (f, ft) in fields.into_iter().flatten() {
                    let ft = self.prog.resolve_type(ft);
                    if ft.pointer > 0 && !ft.is_function && !ft.array {
                        let k = LocKey::new(Base::Global(g.clone())).with(Elem::Field(f.clone()));
                        add_vals(self.d.store.entry(k).or_default(), data.iter().cloned());
                    }
                }
            }
            if !vals.is_empty() {
                add_vals(
                    self.d
                        .store
                        .entry(LocKey::new(Base::Global(g.clone())))
                        .or_default(),
                    vals,
                );
            }
        }
        let funcs: Vec<FunctionId> = self.prog.functions.values().flatten().copied().collect();
        // Parameters hold what any call passes them (context-insensitively,
        // from the previous round): `insert(p, &A)` stores `p` into `A`.
        let mut params: FxHashMap<FunctionId, Vec<Vals>> = FxHashMap::default();
        // A function's pass is a function of its parameters and of the cells
        // it reads (return values and frames of callees are computed once):
        // one whose parameters and cells are as at its last pass would make
        // the same updates and pass the same arguments, which are already in
        // (adding values is idempotent), so it is skipped. `clock` orders
        // passes and cell changes.
        let mut clock: u64 = 0;
        let mut changed_at: FxHashMap<LocKey, u64> = FxHashMap::default();
        let mut last_pass: FxHashMap<FunctionId, (u64, Vec<LocKey>, Vec<Vals>)> =
            FxHashMap::default();
        for round in 0..3 {
            // A round is a function of the store and parameters it starts
            // from: after one that changed neither, the next would repeat it.
            let mut changed = false;
            let mut passed: FxHashMap<FunctionId, Vec<Vals>> = FxHashMap::default();
            for &f in &funcs {
                let own = params.get(&f).map(|p| &p[..]).unwrap_or(&[]);
                if let Some((at, reads, was)) = last_pass.get(&f) {
                    if was[..] == *own
                        && reads
                            .iter()
                            .all(|k| changed_at.get(k).is_none_or(|c| c < at))
                    {
                        continue;
                    }
                }
                clock += 1;
                let at = clock;
                *self.d.store_reads.borrow_mut() = Some(FxHashSet::default());
                let frame = self.frame(f, own);
                if round < 2 {
                    visit_calls(&frame.summary.ir.body, &mut |c| {
                        let Callee::Direct(n) = &c.callee else { return };
                        if c.args.is_empty() || frame.locals.contains_key(n) {
                            return;
                        }
                        for &g in self.prog.functions_named(n).into_iter().flatten() {
                            let into = passed.entry(g).or_default();
                            for (i, a) in c.args.iter().enumerate() {
                                // Data pointers only: function pointers
                                // passed down are resolved in the walk, by
                                // calling context.
                                let mut v = self.eval(&frame, a, 0);
                                v.retain(|x| matches!(x, Val::Target(_)));
                                if v.is_empty() {
                                    continue;
                                }
                                if into.len() <= i {
                                    into.resize(i + 1, Vals::new());
                                }
                                add_vals(&mut into[i], v);
                            }
                        }
                    });
                }
                let mut updates = Vec::new();
                let mut cur = Vec::new();
                self.store_updates(
                    &frame,
                    &frame.summary.ir.body,
                    !frame.base.has_goto,
                    &mut cur,
                    &mut updates,
                );
                *self.d.cur_ptrs.borrow_mut() = Ptrs::default();
                let reads = self.d.store_reads.borrow_mut().take().unwrap_or_default();
                last_pass.insert(f, (at, reads.into_iter().collect(), own.to_vec()));
                for (k, v) in updates {
                    if add_vals(self.d.store.entry(k.clone()).or_default(), v) {
                        changed = true;
                        clock += 1;
                        changed_at.insert(k, clock);
                    }
                }
            }
            for (g, v) in passed {
                let into = params.entry(g).or_default();
                if into.len() < v.len() {
                    into.resize(v.len(), Vals::new());
                    changed = true;
                }
                for (i, v) in v.into_iter().enumerate() {
                    changed |= add_vals(&mut into[i], v);
                }
            }
            if !changed {
                if std::env::var_os("RACELENS_TIMING").is_some() {
                    eprintln!("racelens: walk: pointer store stable after round {round}");
                }
                break;
            }
        }
    }

    /// The stores `stmts` make to pointer cells outside the frame, in order.
    /// Local pointers are followed flow-sensitively through straight-line
    /// code (`p = a; A->next = p; p = b;` stores only `a`); a local assigned
    /// inside a branch or loop falls back to all its values after it.
    fn store_updates(
        &self,
        fr: &Frame,
        stmts: &[Stmt],
        strong: bool,
        cur: &mut Vec<(Name, Vals)>,
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        let assigned_in = |ss: &[Stmt]| {
            let mut v: Vec<Name> = Vec::new();
            visit_stmts(ss, &mut |s| {
                if let Stmt::Assign {
                    lhs: Expr::Var(x), ..
                } = s
                {
                    v.push(x.clone());
                }
            });
            v
        };
        for s in stmts {
            match s {
                Stmt::Assign { lhs, rhs } => {
                    if **self.d.cur_ptrs.borrow() != *cur {
                        *self.d.cur_ptrs.borrow_mut() = Arc::new(cur.clone());
                    }
                    if let Expr::Var(x) = lhs {
                        if fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false) {
                            if strong && tracks_ptr(fr, x) {
                                set_ptr(cur, x, self.eval(fr, rhs, 0));
                            }
                            continue;
                        }
                    }
                    let v = self.eval(fr, rhs, 0);
                    if v.is_empty() {
                        continue;
                    }
                    for k in self.place(fr, lhs, 0) {
                        updates.push((k.without_indices(), v.clone()));
                    }
                }
                Stmt::If {
                    cond, then, els, ..
                } => {
                    self.store_updates(fr, cond, strong, cur, updates);
                    let mut a = cur.clone();
                    let mut b = cur.clone();
                    self.store_updates(fr, then, strong, &mut a, updates);
                    self.store_updates(fr, els, strong, &mut b, updates);
                    // Known after the branch only where both sides agree.
                    *cur = a.into_iter().filter(|x| b.contains(x)).collect();
                }
                Stmt::Loop { cond, body, .. } => {
                    if !cur.is_empty() {
                        let mut inner = assigned_in(cond);
                        inner.extend(assigned_in(body));
                        cur.retain(|(x, _)| !inner.contains(x));
                    }
                    let mut c = cur.clone();
                    self.store_updates(fr, cond, strong, &mut c, updates);
                    self.store_updates(fr, body, strong, &mut c, updates);
                }
                Stmt::Switch { cond, arms, .. } => {
                    self.store_updates(fr, cond, strong, cur, updates);
                    if !cur.is_empty() {
                        let mut inner = Vec::new();
                        for a in arms {
                            inner.extend(assigned_in(a));
                        }
                        cur.retain(|(x, _)| !inner.contains(x));
                    }
                    for a in arms {
                        let mut c = cur.clone();
                        self.store_updates(fr, a, strong, &mut c, updates);
                    }
                }
                _ => {}
            }
        }
    }

    fn type_of(&self, fr: &Frame, e: &Expr, depth: u32) -> Option<TypeInfo> {
        if depth > 32 {
            return None;
        }
        match e {
            Expr::Var(x) => fr
                .locals
                .get(x)
                .cloned()
                .or_else(|| self.prog.global(x).map(|t| self.prog.resolve_type(t))),
            Expr::Field { base, field, arrow } => {
                let bt = self.type_of(fr, base, depth + 1)?;
                let level = if *arrow {
                    bt.pointer.saturating_sub(1)
                } else {
                    bt.pointer
                };
                let obj_volatile = level < 8 && (bt.volatile >> level) & 1 == 1;
                let ft = self.prog.field_type(bt.name.as_deref()?, field)?;
                let mut ft = self.prog.resolve_type(ft);
                if obj_volatile && ft.pointer < 8 {
                    ft.volatile |= 1 << ft.pointer;
                }
                Some(ft)
            }
            Expr::CallResult(id) => match fr.calls.get(id) {
                Some(Callee::Direct(n)) => {
                    self.prog.returns.get(n).map(|t| self.prog.resolve_type(t))
                }
                _ => None,
            },
            Expr::Index { base, .. } => {
                let mut t = self.type_of(fr, base, depth + 1)?;
                if t.array {
                    t.array = false;
                } else {
                    t.pointer = t.pointer.saturating_sub(1);
                }
                Some(t)
            }
            Expr::Deref(v) => {
                let mut t = self.type_of(fr, v, depth + 1)?;
                if t.array {
                    t.array = false;
                } else {
                    t.pointer = t.pointer.saturating_sub(1);
                }
                Some(t)
            }
            Expr::AddrOf(p) => {
                let mut t = self.type_of(fr, p, depth + 1)?;
                t.pointer += 1;
                Some(t)
            }
            Expr::Cast { ty: Some(ty), .. } => Some(self.prog.resolve_type(&TypeInfo {
                name: Some(ty.clone()),
                pointer: 1,
                ..Default::default()
            })),
            Expr::Cast { value, .. } | Expr::Offset(value) => self.type_of(fr, value, depth + 1),
            _ => None,
        }
    }

    fn is_array(&self, fr: &Frame, e: &Expr) -> bool {
        match self.type_of(fr, e, 0) {
            Some(t) => t.array,
            None => self.untyped_global(fr, e),
        }
    }

    /// A global whose type is unknown: taken for an array when indexed.
    fn untyped_global(&self, fr: &Frame, e: &Expr) -> bool {
        matches!(e, Expr::Var(x) if !fr.locals.contains_key(x) && self.prog.global(x).is_some())
    }

    /// Does indexing `base` stay inside the array object (rather than
    /// dereference a pointer)? Also for `a[i]` of `int a[N][M]`: types keep
    /// one array flag, so the row looks like a scalar; but a scalar cannot
    /// be indexed, so it is an array.
    fn indexes_array(&self, fr: &Frame, base: &Expr) -> bool {
        match self.type_of(fr, base, 0) {
            Some(t) => t.array || (matches!(base, Expr::Index { .. }) && t.pointer == 0),
            None => self.untyped_global(fr, base),
        }
    }

    /// The objects an lvalue expression may designate.
    fn place(&self, fr: &Frame, e: &Expr, depth: u32) -> Vec<LocKey> {
        if depth > 32 {
            return Vec::new();
        }
        match e {
            Expr::Var(x) => {
                if let Some(t) = fr.locals.get(x) {
                    if t.is_static {
                        vec![LocKey::new(Base::Global(Name::from(format!(
                            "{}::{}",
                            fr.fname, x
                        ))))]
                    } else {
                        vec![LocKey::new(Base::Local {
                            func: fr.fname.clone(),
                            var: x.clone(),
                        })]
                    }
                } else if self.prog.global(x).is_some() {
                    vec![LocKey::new(Base::Global(x.clone()))]
                } else {
                    Vec::new()
                }
            }
            Expr::Field { base, field, arrow } => {
                let bases = if *arrow {
                    self.deref(fr, base, depth + 1)
                } else {
                    self.place(fr, base, depth + 1)
                };
                bases
                    .into_iter()
                    .map(|k| k.with(Elem::Field(field.clone())))
                    .collect()
            }
            Expr::Index { base, index, .. } => {
                if self.indexes_array(fr, base) {
                    self.place(fr, base, depth + 1)
                        .into_iter()
                        .map(|k| k.with(Elem::Index(*index)))
                        .collect()
                } else {
                    self.deref(fr, base, depth + 1)
                        .into_iter()
                        .map(|mut k| {
                            if let Some(Elem::Index(i)) = k.path.last_mut() {
                                *i = None;
                                k
                            } else {
                                k.with(Elem::Index(*index))
                            }
                        })
                        .collect()
                }
            }
            Expr::Deref(v) => self.deref(fr, v, depth + 1),
            Expr::Cast { value, .. } => self.place(fr, value, depth + 1),
            _ => Vec::new(),
        }
    }

    /// The objects a pointer value may point to; falls back to the pointee's
    /// struct type when the pointer is unresolved.
    fn deref(&self, fr: &Frame, v: &Expr, depth: u32) -> Vec<LocKey> {
        let mut out = targets(self.eval(fr, v, depth + 1));
        if out.is_empty() && is_wild(fr, v) {
            out.push(LocKey::new(Base::Unknown));
        } else if out.is_empty() {
            if let Some(t) = self.type_of(fr, v, 0) {
                if let Some(n) = &t.name {
                    // Memory behind a pointer that unknown code returned may be
                    // any object of its type, scalars included.
                    let from_unknown = self.from_unknown_call(fr, v);
                    if (t.pointer >= 1 || t.array)
                        && (self.prog.structs.contains_key(n) || from_unknown)
                    {
                        out.push(LocKey::new(Base::Type(n.clone())));
                    }
                }
            }
        }
        out
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

    /// Does this pointer value come from a call to a function without a body?
    fn from_unknown_call(&self, fr: &Frame, v: &Expr) -> bool {
        let is_unknown = |id: &u32| match fr.calls.get(id) {
            Some(Callee::Direct(n)) => {
                self.prog.functions_named(n).is_none() && fr.summary.models.get(id).is_none()
            }
            _ => false,
        };
        match v {
            Expr::CallResult(id) => is_unknown(id),
            Expr::Cast { value, .. } => self.from_unknown_call(fr, value),
            Expr::Var(x) if fr.locals.contains_key(x) => {
                fr.from_calls.iter().any(|(y, id)| y == x && is_unknown(id))
            }
            _ => false,
        }
    }

    /// The pointer values an expression may evaluate to.
    fn eval(&self, fr: &Frame, e: &Expr, depth: u32) -> Vals {
        if depth > 32 {
            return Vec::new();
        }
        let mut out = Vec::new();
        match e {
            Expr::Var(x) => {
                if let Some(t) = fr.locals.get(x) {
                    if t.array {
                        add_vals(
                            &mut out,
                            self.place(fr, e, depth + 1).into_iter().map(Val::Target),
                        );
                    } else if t.is_static {
                        let k =
                            LocKey::new(Base::Global(Name::from(format!("{}::{}", fr.fname, x))));
                        if let Some(v) = self.store_get(&k) {
                            add_vals(&mut out, v.iter().cloned());
                        }
                    } else if let Some(v) = self
                        .d
                        .cur_ptrs
                        .borrow()
                        .iter()
                        .find(|(y, _)| y == x)
                        .map(|(_, v)| v.clone())
                    {
                        add_vals(&mut out, v);
                    } else if let Some(v) = fr.pts.get(x) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                } else if let Some(t) = self.prog.global(x) {
                    if t.array {
                        add_vals(
                            &mut out,
                            [Val::Target(LocKey::new(Base::Global(x.clone())))],
                        );
                    }
                    if let Some(v) = self.store_get(&LocKey::new(Base::Global(x.clone()))) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                } else if self.prog.is_function(x) {
                    out.push(Val::Func(x.clone()));
                }
            }
            Expr::AddrOf(p) => {
                if let Expr::Var(f) = &**p {
                    if !fr.locals.contains_key(f)
                        && self.prog.global(f).is_none()
                        && self.prog.is_function(f)
                    {
                        return vec![Val::Func(f.clone())];
                    }
                }
                add_vals(
                    &mut out,
                    self.place(fr, p, depth + 1).into_iter().map(Val::Target),
                );
            }
            Expr::Cast { value, .. } => out = self.eval(fr, value, depth + 1),
            Expr::Offset(value) => {
                // Pointer arithmetic stays in the object; stepping back from a
                // member (container_of) reaches the enclosing struct.
                for v in self.eval(fr, value, depth + 1) {
                    let v = match v {
                        Val::Target(mut k) if matches!(k.path.last(), Some(Elem::Field(_))) => {
                            k.path.pop();
                            Val::Target(k)
                        }
                        v => v,
                    };
                    add_vals(&mut out, [v]);
                }
            }
            Expr::CallResult(id) => match fr.summary.models.get(id) {
                Some(CallModel::Alloc | CallModel::Realloc) => {
                    out.push(Val::Target(LocKey::new(Base::Heap {
                        func: fr.fname.clone(),
                        call: *id,
                    })))
                }
                Some(_) => {}
                None => {
                    if let Some(callee) = fr.calls.get(id) {
                        for f in self.functions_of(fr, callee) {
                            // What an allocation wrapper returns is a new
                            // object per call site, as with `malloc`.
                            let v = match self.is_alloc_wrapper(f) {
                                true => vec![Val::Target(LocKey::new(Base::Heap {
                                    func: fr.fname.clone(),
                                    call: *id,
                                }))],
                                false => self.return_vals(f),
                            };
                            add_vals(&mut out, v);
                        }
                    }
                }
            },
            Expr::Field { .. } | Expr::Index { .. } | Expr::Deref(_) => {
                if self.is_array(fr, e) {
                    add_vals(
                        &mut out,
                        self.place(fr, e, depth + 1).into_iter().map(Val::Target),
                    );
                }
                for k in self.place(fr, e, depth + 1) {
                    if let Some(v) = self.store_get(&k.without_indices()) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                }
            }
            Expr::Choice(alts) => {
                for a in alts {
                    let v = self.eval(fr, a, depth + 1);
                    add_vals(&mut out, v);
                }
            }
            _ => {}
        }
        out
    }

    /// Does `f` only ever return memory it has just allocated (or null)?
    /// Such a wrapper (`xmalloc`, `alloc(ptr, size)` around `realloc`) is
    /// an allocation site at each of its call sites; otherwise every object
    /// a program allocates through it would be one.
    fn is_alloc_wrapper(&self, f: FunctionId) -> bool {
        if let Some(&w) = self.d.wrappers.borrow().get(&f) {
            return w;
        }
        let s = self.summary(f);
        let allocates = |e: &Expr| {
            matches!(uncast(e), Expr::CallResult(id)
                if matches!(s.models.get(id), Some(CallModel::Alloc | CallModel::Realloc)))
        };
        let null = |e: &Expr| matches!(uncast(e), Expr::Int(0));
        let mut holds: FxHashMap<Name, bool> = FxHashMap::default();
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } = st
            {
                *holds.entry(x.clone()).or_insert(true) &= allocates(rhs) || null(rhs);
            }
        });
        let (mut any, mut all) = (false, true);
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Return { value: Some(e), .. } = st {
                let e = uncast(e);
                // A local that only ever holds new memory (and whose address
                // nobody else can use to change it).
                let fresh = allocates(e)
                    || matches!(e, Expr::Var(x)
                        if holds.get(x) == Some(&true) && !s.ir.address_taken.contains(x));
                if fresh {
                    any = true;
                } else if !null(e) {
                    all = false;
                }
            }
        });
        let w = any && all;
        self.d.wrappers.borrow_mut().insert(f, w);
        w
    }

    /// The pointer store's cell `k`, noted as read while the store is built.
    fn store_get(&self, k: &LocKey) -> Option<&Vals> {
        if let Some(reads) = self.d.store_reads.borrow_mut().as_mut() {
            reads.insert(k.clone());
        }
        self.d.store.get(k)
    }

    /// What a function may return, evaluated without calling context.
    fn return_vals(&self, f: FunctionId) -> Vals {
        if let Some(v) = self.d.returns.borrow().get(&f) {
            return v.clone();
        }
        self.d.returns.borrow_mut().insert(f, Vec::new());
        let frame = self.frame_cached(f, &[]);
        let mut out = Vec::new();
        self.without_cur_ptrs(|| {
            visit_stmts(&frame.summary.ir.body, &mut |s| {
                if let Stmt::Return { value: Some(e), .. } = s {
                    let v = self.eval(&frame, e, 0);
                    add_vals(&mut out, v);
                }
            })
        });
        self.d.returns.borrow_mut().insert(f, out.clone());
        out
    }

    fn functions_of(&self, fr: &Frame, callee: &Callee) -> Vec<FunctionId> {
        let names: Vec<Name> = match callee {
            Callee::Direct(n) if !fr.locals.contains_key(n) && self.prog.global(n).is_none() => {
                vec![n.clone()]
            }
            Callee::Direct(n) => self
                .eval(fr, &Expr::Var(n.clone()), 0)
                .into_iter()
                .filter_map(|v| if let Val::Func(f) = v { Some(f) } else { None })
                .collect(),
            Callee::Indirect(e) => {
                let e = match e {
                    Expr::Deref(inner) => inner,
                    e => e,
                };
                self.eval(fr, e, 0)
                    .into_iter()
                    .filter_map(|v| if let Val::Func(f) = v { Some(f) } else { None })
                    .collect()
            }
        };
        let file = fr.fid.file(self.db);
        names
            .iter()
            .filter_map(|n| {
                let defs = self.prog.functions_named(n)?;
                Some(
                    defs.iter()
                        .find(|d| d.file(self.db) == file)
                        .copied()
                        .unwrap_or(defs[0]),
                )
            })
            .collect()
    }

    // ----- the walk ---------------------------------------------------------

    fn walk_fn(&mut self, fid: FunctionId, st: State, bindings: Vec<Vals>) -> Option<State> {
        // The callee's statements see their own frame's pointers; the
        // caller's are back when it resumes.
        let saved = std::mem::take(&mut *self.d.cur_ptrs.borrow_mut());
        let exit = self.walk_fn_inner(fid, st, bindings);
        *self.d.cur_ptrs.borrow_mut() = saved;
        exit
    }

    fn walk_fn_inner(
        &mut self,
        fid: FunctionId,
        mut st: State,
        bindings: Vec<Vals>,
    ) -> Option<State> {
        if self.d.stack.contains(&fid) || self.d.stack.len() > 64 {
            self.cut(fid);
            return Some(st);
        }
        let caller_tries = std::mem::take(&mut st.tries);
        // Facts about the caller's local variables mean nothing in the
        // callee's frame (a local there may even share the name): keep them
        // out of the callee's context and give them back on return.
        let caller = self.stash_frame_facts(&mut st);
        let key = memo_key(fid, &st, &bindings);
        if let Some(id) = self.memo_hit(&key, &st) {
            // A re-walk meeting for the first time a node that the re-walked
            // node's first walk created: a walk from scratch walks it afresh
            // here, which spawns nothing again.
            let afresh = self.d.rewalk.is_some()
                && id > self.d.rewalk_node
                && id < self.d.rewalk_end
                && !self.d.encountered.contains(&id);
            self.replay(id);
            // The function runs again: whatever it spawns is spawned again.
            let m = &self.d.nodes[id as usize];
            let sites = m.sites.clone();
            let exit = m.exit.clone();
            if !afresh && !sites.is_empty() {
                for s in &sites {
                    self.d.replayed_sites.insert(*s);
                }
                if self.d.keep {
                    match self.d.node_stack.last() {
                        Some(&p) => {
                            let r = &mut self.d.nodes[p as usize].replayed;
                            r.extend(sites.iter().copied());
                            r.sort_unstable();
                            r.dedup();
                        }
                        None => self.d.root_replayed.extend(sites.iter().copied()),
                    }
                }
            }
            let exit = exit.map(|mut e| {
                self.rebase_heap(id, &st, &mut e);
                e.tries = caller_tries;
                caller.restore(&mut e, &sites);
                e
            });
            if let Some(top) = self.d.sites_stack.last_mut() {
                top.extend(sites);
            }
            return exit;
        }
        let n = self.d.contexts.entry(fid).or_insert(0);
        *n += 1;
        if *n > CONTEXT_BUDGET {
            // A walk from scratch skips this context too only if the function
            // ran out of contexts before the re-walked node.
            if self.d.rewalk.is_some() && !incremental::out_of_contexts(&self.d, fid) {
                self.d.bailed = Some("a function runs out of contexts");
            }
            self.mark_incomplete(fid, "too many calling contexts");
            let mut st = st;
            st.tries = caller_tries;
            caller.restore(&mut st, &[]);
            return Some(st);
        }
        if let Some(x) = self.copy_hit(&key, &st) {
            let exit = self.copy_node(x, key, st);
            return exit.map(|mut e| {
                e.tries = caller_tries;
                caller.restore(&mut e, &[]);
                e
            });
        }
        let frame = self.frame_cached(fid, &bindings);
        let frame = &*frame;
        let id = self.d.nodes.len() as u32;
        self.d.nodes.push(Node::new(
            fid,
            self.d.thread,
            (st.clone(), bindings),
            self.d.rewalk.unwrap_or(self.d.epoch),
            self.d.stack.clone(),
            self.d.loop_depth,
        ));
        self.link(id);
        if self.d.rewalk.is_some() {
            self.d.encountered.insert(id);
        }
        let jumps = self.d.longjmps;
        let (out, sites) = self.walk_node(id, frame, st);
        if let Some(top) = self.d.sites_stack.last_mut() {
            top.extend(sites.iter().copied());
        }
        let exit = self.exit_state(out);
        let node = &mut self.d.nodes[id as usize];
        node.exit = exit.clone();
        node.sites = sites;
        let sites = node.sites.clone();
        if self.d.longjmps == jumps {
            self.memoize(id, key);
        } else {
            self.drop_facts(id);
        }
        exit.map(|mut e| {
            e.tries = caller_tries;
            caller.restore(&mut e, &sites);
            e
        })
    }

    /// A node of the memo key whose result holds for entry state `st`: one
    /// that agrees with `st` on the freshness of every heap site it
    /// observed and, if it allocates, on which of those sites were already
    /// allocated. Every site it allocates is one it observed, and `allocated`
    /// is only read for sites whose freshness the paths disagree on, so the
    /// other sites pass through (see [`Walker::rebase_heap`]); unless either
    /// entry is near the bound where a path stops following allocations,
    /// which depends on the whole set.
    fn memo_hit(&self, key: &MemoKey, st: &State) -> Option<u32> {
        let ids = self.d.memo.get(key)?;
        ids.iter()
            .copied()
            .find(|&id| heap_agrees(&self.d.nodes[id as usize], st))
    }

    /// Can node `id` stand for contexts that differ from its own only in the
    /// context fields? Its walk (callees included) did not read them other
    /// than to record them with its accesses, changed nothing shared by the
    /// whole walk, spawned nothing and was not cut short; its entry holds no
    /// path-correlated locks or spawns, and every lock it may hold it holds.
    fn transparent(&self, id: u32) -> bool {
        let n = &self.d.nodes[id as usize];
        !n.opaque
            && n.cut_up == 0
            && n.sites.is_empty()
            && n.marks.is_empty()
            && n.state.guards.is_empty()
            && n.state.lock_guards.is_empty()
            && must_within_may(&n.state)
            && n.exit.as_ref().is_none_or(|e| same_context(e, &n.state))
    }

    /// A transparent node of this thread that stands for entry state `st`
    /// (see [`Walker::copy_node`]): same function, arguments and entry state
    /// but for the context fields, and copying it is what walking would do.
    fn copy_hit(&mut self, key: &MemoKey, st: &State) -> Option<u32> {
        // A re-walk compares against the nodes a walk from scratch made, and
        // walks (which gives the same facts and exit).
        if self.d.rewalk.is_some() || self.d.copies.is_empty() || no_copies() {
            return None;
        }
        if !must_within_may(st) {
            return None;
        }
        if !(st.guards.is_empty() && st.lock_guards.is_empty()) {
            return None;
        }
        let ids = self.d.copies.get(&copy_key(key))?.clone();
        let deep = self.d.loop_depth > 0;
        if holds_index_lock(st) {
            return None;
        }
        let thread = self.d.thread;
        let x = ids.into_iter().find(|&id| {
            let n = &self.d.nodes[id as usize];
            // `main` alone records where it stores its own thread id; it is
            // walked first, so it has nothing of other threads to copy.
            (n.thread == thread || thread != 0)
                && heap_agrees(n, st)
                && !holds_index_lock(&n.state)
                // A site first allocated inside a loop is an effect.
                && (!n.allocates || (n.loop_depth > 0) == deep)
                && self.d.steps + n.steps <= STEP_BUDGET
        })?;
        // Its own accesses were all recorded in its entry's context (in its
        // own thread, whose creation chain the context names).
        let xs = self.d.nodes[x as usize].state.clone();
        self.d.thread = self.d.nodes[x as usize].thread;
        let (entry, _) = self.ctx_for(&xs, &xs.must, &xs.may);
        self.d.thread = thread;
        let own = &self.d.nodes[x as usize].facts;
        own.iter()
            .all(|(_, f)| Arc::ptr_eq(&f.ctx, &entry))
            .then_some(x)
    }

    /// Walks a context by copying transparent node `x`: its own accesses
    /// again in the context of entry state `st` (which differs from `x`'s
    /// only in the context fields), and its calls again from their entry
    /// states with `st`'s context fields. A walk of the body would interpret
    /// the same statements in the same states but for those fields, which
    /// it would only record: same accesses, same calls, and `x`'s exit.
    fn copy_node(&mut self, x: u32, key: MemoKey, st: State) -> Option<State> {
        let xn = &self.d.nodes[x as usize];
        let (fid, x_depth, x_steps) = (xn.fid, xn.loop_depth, xn.steps);
        let own: Vec<(Base, AccessFact)> = xn.facts.clone();
        let prefixes = xn.prefixes.clone();
        let calls: Vec<(FunctionId, State, Vec<Vals>, u32)> = xn
            .children
            .iter()
            .map(|&c| {
                let cn = &self.d.nodes[c as usize];
                let mut cst = with_context(&cn.state, &st);
                rebase_sites(xn, &st, &mut cst);
                (cn.fid, cst, cn.bindings.clone(), cn.loop_depth)
            })
            .collect();
        let exit = xn.exit.as_ref().map(|e| {
            let mut e = with_context(e, &st);
            rebase_sites(xn, &st, &mut e);
            e
        });
        let (heap_obs, allocates, dep) = (xn.heap_obs.clone(), xn.allocates, xn.dep);
        let ctx = self.ctx_for(&st, &st.must, &st.may);
        let id = self.d.nodes.len() as u32;
        self.d.nodes.push(Node::new(
            fid,
            self.d.thread,
            (st, key.2.clone()),
            self.d.epoch,
            self.d.stack.clone(),
            self.d.loop_depth,
        ));
        self.link(id);
        self.d.steps += x_steps;
        self.d.copied.0 += 1;
        COPIES_MADE.fetch_add(1, Ordering::Relaxed);
        self.d.copied.1 += x_steps;
        {
            let node = &mut self.d.nodes[id as usize];
            node.steps = x_steps;
            node.heap_obs = heap_obs;
            node.allocates = allocates;
            node.dep = dep;
            node.exit = exit.clone();
            node.prefixes = prefixes;
        }
        for (b, f) in own {
            let fact = AccessFact {
                thread: self.d.thread,
                ctx: ctx.0.clone(),
                ..f
            };
            self.add_fact(Some(id), b, fact, ctx.1);
        }
        self.enter_node(id, fid);
        let depth = self.d.loop_depth;
        for (cfid, cst, cbind, cdepth) in calls {
            self.d.loop_depth = depth + cdepth.saturating_sub(x_depth);
            self.walk_fn(cfid, cst, cbind);
        }
        self.d.loop_depth = depth;
        let sites = self.leave_node(id);
        if let Some(top) = self.d.sites_stack.last_mut() {
            top.extend(sites.iter().copied());
        }
        self.d.nodes[id as usize].sites = sites;
        self.inherit(id);
        self.memoize(id, key);
        exit
    }

    /// Enters the memo (and, if transparent, the copies) with node `id`, just
    /// walked or copied for `key`.
    fn memoize(&mut self, id: u32, key: MemoKey) {
        if self.transparent(id) {
            self.d.copies.entry(copy_key(&key)).or_default().push(id);
        } else {
            self.drop_facts(id);
        }
        self.d.memo.entry(key).or_default().push(id);
    }

    /// Node `id` of function `fid` starts: what it records, spawns and calls
    /// is its own until [`Walker::leave_node`].
    fn enter_node(&mut self, id: u32, fid: FunctionId) {
        self.d.stack.push(fid);
        self.d.sites_stack.push(Vec::new());
        self.d.node_stack.push(id);
    }

    /// Node `id` ends: the nodes created since belong to its walk. Returns
    /// the spawn sites visited below it.
    fn leave_node(&mut self, id: u32) -> Vec<u32> {
        self.d.node_stack.pop();
        self.d.stack.pop();
        let sites = self.d.sites_stack.pop().unwrap_or_default();
        self.d.nodes[id as usize].end = self.d.nodes.len() as u32;
        sites
    }

    /// Records access `fact` to `base`: among node `n`'s own accesses, and
    /// in the walk's set for the base (up to [`HARD_MAX_FACTS`]).
    fn add_fact(&mut self, n: Option<u32>, base: Base, fact: AccessFact, ctx_hash: u64) {
        debug_assert!(
            self.d
                .paths
                .get(&fact.path[..])
                .is_some_and(|p| Arc::ptr_eq(p, &fact.path)),
            "a recorded path is interned"
        );
        // Nodes keep their own accesses: incremental updates and copies (see
        // `copy_node`) read them.
        if let Some(n) = n {
            self.d.nodes[n as usize]
                .facts
                .push((base.clone(), fact.clone()));
        }
        let set = self.d.facts.entry(base).or_default();
        if set.len() < HARD_MAX_FACTS {
            set.insert(Recorded { fact, ctx_hash });
        } else {
            self.d.capped = true;
        }
    }

    /// Without incremental updates, only copies read a node's own facts,
    /// and only a transparent node's while its thread is walked: the others
    /// go at once, to keep the memory of a batch run low.
    fn drop_facts(&mut self, id: u32) {
        if !self.d.keep {
            self.d.nodes[id as usize].facts = Vec::new();
        }
    }

    /// Node `id`'s exit state `e` for entry state `st`: the heap sites it did
    /// not observe keep their freshness and allocation from `st` (all of
    /// `allocated` passes through when it does not allocate).
    fn rebase_heap(&self, id: u32, st: &State, e: &mut State) {
        rebase_sites(&self.d.nodes[id as usize], st, e);
    }

    /// The walk tested or changed the freshness of heap site `b`.
    fn observe_heap(&mut self, b: &Base) {
        if !matches!(b, Base::Heap { .. }) {
            return;
        }
        if let Some(&n) = self.d.node_stack.last() {
            let obs = &mut self.d.nodes[n as usize].heap_obs;
            if obs.binary_search(b).is_err() {
                insert_sorted(obs, b.clone());
            }
        }
    }

    /// Takes the branch facts and spawn guards on variables that are not
    /// globals out of a state about to enter a callee.
    fn stash_frame_facts(&self, st: &mut State) -> FrameFacts {
        let global = |v: &Name| self.prog.global(v).is_some();
        // Symbolic locks stay: a callee that unlocks `&s->m` through its own
        // pointer must release the caller's `&s->m`.
        FrameFacts {
            conds: split_off(&mut st.conds, |c| global(&c.0)),
            guards: split_off(&mut st.guards, |g| global(&g.1)),
            ptrs: std::mem::take(&mut st.ptrs),
            lock_guards: split_off(&mut st.lock_guards, |g| global(&g.0)),
        }
    }

    /// Walks the body of node `id` from `st`; returns the outcome and the
    /// spawn sites visited below it.
    fn walk_node(&mut self, id: u32, frame: &Frame, st: State) -> (Out, Vec<u32>) {
        self.enter_node(id, frame.fid);
        let body = frame.summary.clone();
        let out = self.walk_stmts(frame, &body.ir.body, st);
        let sites = self.leave_node(id);
        // Each fact once per node.
        let node = &mut self.d.nodes[id as usize];
        if node.facts.len() > 1 {
            let mut seen = FxHashSet::default();
            let first: Vec<bool> = node.facts.iter().map(|f| seen.insert(f)).collect();
            let mut keep = first.into_iter();
            node.facts.retain(|_| keep.next().unwrap_or(false));
        }
        self.inherit(id);
        (out, sites)
    }

    /// The innermost node being walked depends on what its callee `c`
    /// (walked or replayed) depended on: the latest change read, the stack
    /// above a recursion cut, and the heap sites observed.
    fn inherit(&mut self, c: u32) {
        let Some(&p) = self.d.node_stack.last() else {
            return;
        };
        let c = &self.d.nodes[c as usize];
        let (dep, cut_up, allocates, opaque, obs) =
            (c.dep, c.cut_up, c.allocates, c.opaque, c.heap_obs.clone());
        let parent = &mut self.d.nodes[p as usize];
        parent.opaque |= opaque;
        parent.dep = parent.dep.max(dep);
        parent.cut_up = parent.cut_up.max(cut_up.saturating_sub(1));
        parent.allocates |= allocates;
        for b in obs {
            insert_sorted(&mut parent.heap_obs, b);
        }
    }

    /// Makes node `id` a callee of the innermost node, or a root of the thread.
    fn link(&mut self, id: u32) {
        match self.d.node_stack.last() {
            Some(&p) => self.d.nodes[p as usize].children.push(id),
            None => {
                let t = self.d.thread as usize;
                self.d.thread_roots[t].push(id);
            }
        }
    }

    /// A memo hit on node `id`.
    fn replay(&mut self, id: u32) {
        self.link(id);
        let m = &self.d.nodes[id as usize];
        let (dep, spawns) = (m.dep, !m.sites.is_empty());
        self.inherit(id);
        if let Some(limit) = self.d.rewalk {
            let reaches_stack = !incremental::replay_ok(&mut self.d, id);
            // A context with a recursion cut below it depends on the stack
            // it was first walked on; one that existed before the re-walked
            // node is replayed by a walk from scratch too.
            // A creation replayed where a walk from scratch replays it too,
            // or walks it afresh (see `walk_fn_inner`); one first walked
            // after the re-walked node would be walked afresh here and
            // replayed where it was first walked instead.
            let created_later = id > self.d.rewalk_node && id >= self.d.rewalk_end;
            let why = if spawns && created_later {
                Some("replays a thread creation")
            } else if dep > limit {
                Some("replays a context that read later changes")
            } else if self.d.forbidden.contains(&id) {
                Some("replays a caller of the edited function")
            } else if reaches_stack {
                Some("replays a context that depends on the call stack")
            } else {
                None
            };
            if why.is_some() {
                self.d.bailed = why;
            }
        }
    }

    /// A recursive call to `fid` cut short: the result of each node being
    /// walked deeper than `fid`'s frame depends on the call stack up to that
    /// frame (all of it for the depth limit). (A re-walk runs on the node's
    /// original stack, so it cuts the same.)
    fn cut(&mut self, fid: FunctionId) {
        let target = match self.d.stack.len() > 64 {
            true => None,
            false => self.d.stack.iter().position(|f| *f == fid),
        };
        for &n in &self.d.node_stack {
            let node = &mut self.d.nodes[n as usize];
            let depth = node.stack.len() as u32;
            let up = match target {
                Some(j) => depth.saturating_sub(j as u32),
                None => depth + 1,
            };
            node.cut_up = node.cut_up.max(up);
        }
    }

    /// The innermost node's walk reads or changes the context fields other
    /// than by recording them (see [`Node::opaque`]).
    fn opaque(&mut self) {
        if let Some(&n) = self.d.node_stack.last() {
            self.d.nodes[n as usize].opaque = true;
        }
    }

    /// A change to state shared by the whole walk.
    fn effect(&mut self) {
        self.opaque();
        self.d.epoch += 1;
        if let Some(&n) = self.d.node_stack.last() {
            self.d.nodes[n as usize].effects = true;
        }
        if self.d.rewalk.is_some() {
            self.d.bailed = Some("changes shared state");
        }
    }

    /// A read of shared state last changed at `epoch`.
    fn read(&mut self, epoch: u64) {
        if let Some(&n) = self.d.node_stack.last() {
            let node = &mut self.d.nodes[n as usize];
            node.dep = node.dep.max(epoch);
        }
        if self.d.rewalk.map(|limit| epoch > limit).unwrap_or(false) {
            self.d.bailed = Some("reads shared state changed later");
        }
    }

    /// Is this allocation site known to be visited inside a loop?
    fn heap_in_loop(&mut self, b: &Base) -> bool {
        match self.d.heap_in_loop.get(b).copied() {
            Some(e) => {
                self.read(e);
                true
            }
            None => false,
        }
    }

    /// The walk is over: no more copies. Without incremental updates the
    /// transparent nodes' own accesses go too.
    fn release_copies(&mut self) {
        for id in self.d.copies.drain().flat_map(|(_, ids)| ids) {
            if !self.d.keep {
                self.d.nodes[id as usize].facts = Vec::new();
            }
        }
    }

    /// Saves the finished thread's memo and budgets.
    fn end_thread(&mut self) {
        // Which functions use up their calling contexts (for tuning).
        if std::env::var_os("RACELENS_CONTEXTS").is_some() {
            let mut v: Vec<(usize, String)> = self
                .d
                .contexts
                .iter()
                .map(|(f, n)| (*n, f.name(self.db).to_string()))
                .collect();
            v.sort();
            v.reverse();
            v.truncate(12);
            eprintln!("contexts of thread {}: {:?}", self.d.thread, v);
        }
        self.d.thread_memos.push(std::mem::take(&mut self.d.memo));
        self.d.thread_steps.push(std::mem::take(&mut self.d.steps));
        self.d
            .thread_contexts
            .push(std::mem::take(&mut self.d.contexts));
    }

    fn walk_stmts(&mut self, fr: &Frame, stmts: &[Stmt], st: State) -> Out {
        let mut out = Out::default();
        let mut cur = Some(st);
        for s in stmts {
            let Some(state) = cur.take() else { break };
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
                if !(state.lock_guards.is_empty() && state.guards.is_empty()) {
                    node.opaque = true;
                }
            }
            if self.d.steps > STEP_BUDGET {
                self.d.exhausted = true;
                self.mark_incomplete(fr.fid, "step budget exceeded");
                cur = Some(state);
                break;
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
                } => {
                    self.d.loops.push((self.d.stack.len(), bound.clone()));
                    let r = self.walk_loop(fr, cond, test, body, *do_while, *infinite, state);
                    self.d.loops.pop();
                    out.ret = join_b(out.ret.take(), r.ret);
                    r.next
                }
                Stmt::Switch { cond, arms, zero } => {
                    self.walk_switch(fr, cond, arms, *zero, state, &mut out)
                }
                Stmt::Return { .. } => {
                    out.ret = join_b(out.ret.take(), Some(Box::new(state)));
                    None
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

    /// A function's exit state as its callers see it (and as its node
    /// keeps it): pending trylock results, its own local pointers and its
    /// flag-guarded locks on its locals mean nothing after the return
    /// (callers get theirs back), and keeping them would make equal exits
    /// differ.
    fn exit_state(&self, out: Out) -> Option<State> {
        let mut exit = join(out.next, unbox(out.ret));
        if let Some(e) = exit.as_mut() {
            e.tries.clear();
            e.ptrs = Ptrs::default();
            let prog = self.prog;
            e.lock_guards.retain(|g| prog.global(&g.0).is_some());
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
        let (t, e) = self.split(test, cs);
        let n1 = {
            let o1 = self.walk_stmts(fr, then, t);
            merge_abrupt(out, &o1);
            o1.next
        };
        let n2 = {
            let o2 = self.walk_stmts(fr, els, e);
            merge_abrupt(out, &o2);
            o2.next
        };
        join(n1, n2)
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
                out.ret = join_b(out.ret.take(), o.ret);
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
    fn longjmp(&mut self, fr: &Frame, c: &Call, st: State) {
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

    /// `switch`: each arm may run; `break` leaves the switch.
    #[inline(never)]
    fn walk_switch(
        &mut self,
        fr: &Frame,
        cond: &[Stmt],
        arms: &[Vec<Stmt>],
        zero: Option<usize>,
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
        for arm in arms {
            let o = self.walk_stmts(fr, arm, cs.clone());
            out.ret = join_b(out.ret.take(), o.ret);
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
                self.record(fr, &a.place, a.kind, a.span, &state, true);
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
                if !fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false)
                    || fr.address_taken.contains(x)
                {
                    self.escape(fr, rhs, &mut state);
                }
                self.retag(fr, x, rhs, &mut state);
                self.assign_ptr(fr, x, rhs, &mut state);
                Some(state)
            }
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } if fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false) => {
                let mut state = state;
                state.conds.retain(|c| &c.0 != x);
                state.guards.retain(|g| &g.1 != x);
                state.lock_guards.retain(|g| &g.0 != x);
                self.retag(fr, x, rhs, &mut state);
                if fr.address_taken.contains(x) {
                    self.escape(fr, rhs, &mut state);
                }
                self.assign_ptr(fr, x, rhs, &mut state);
                Some(state)
            }
            Stmt::Assign { rhs, .. } => {
                // Storing a pointer anywhere but a local publishes it.
                let mut state = state;
                self.escape(fr, rhs, &mut state);
                Some(state)
            }
            Stmt::Decl(_) | Stmt::Goto => Some(state),
            Stmt::Call(c) => self.call(fr, c, state),
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
        self.d.loop_depth += 1;
        let mut out = Out::default();
        let mut head = st;
        let mut exits: Option<State> = None;
        // Loops are assumed to run at least once (RacerF's unfolding): exits
        // are taken after the body, except that a trylock spin may exit at
        // once where its test says.
        let spin = matches!(test, Test::CallZero { .. } | Test::VarZero { .. });
        for iter in 0..MAX_LOOP_ITERS {
            // What a second pass over the same head state could do otherwise
            // than the first: see the end of the loop.
            let (epoch, jumps) = (self.d.epoch, self.d.longjmps);
            let sites = self.d.sites_stack.last().map(|s| s.len());
            let enter = if do_while {
                Some(head.clone())
            } else {
                let c = self.walk_stmts(fr, cond, head.clone());
                out.ret = join_b(out.ret.take(), c.ret);
                match c.next {
                    Some(cs) => {
                        let (t, e) = self.split(test, cs);
                        if spin && !infinite {
                            exits = join(exits, Some(e));
                        }
                        Some(t)
                    }
                    None => None,
                }
            };
            let Some(enter) = enter else { break };
            let b = self.walk_stmts(fr, body, enter);
            out.ret = join_b(out.ret.take(), b.ret);
            exits = join(exits, unbox(b.brk));
            let Some(next) = join(b.next, unbox(b.cont)) else {
                break;
            };
            if !infinite {
                let c = self.walk_stmts(fr, cond, next.clone());
                out.ret = join_b(out.ret.take(), c.ret);
                if let Some(cs) = c.next {
                    let (_, e) = self.split(test, cs);
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
        self.d.loop_depth -= 1;
        out.next = exits;
        out
    }

    /// `q->a.b` -> (q, [a, b]); `*q` -> (q, []): the pointer variable an
    /// lvalue goes through, and the path below its target.
    /// Every symbolic root of an lvalue: the pointer variable itself first,
    /// then, for `p = &a[i]`, the roots of `a[i]` (valid while `i` is unchanged).
    fn sym_roots(&self, fr: &Frame, e: &Expr, depth: u32) -> Vec<(Name, Vec<Elem>)> {
        if depth > 16 {
            return Vec::new();
        }
        let extend = |mut v: Vec<(Name, Vec<Elem>)>, el: Elem| {
            for r in &mut v {
                r.1.push(el.clone());
            }
            v
        };
        match e {
            Expr::Field {
                base,
                field,
                arrow: true,
            } => {
                let inner = match &**base {
                    Expr::Cast { value, .. } => &**value,
                    b => b,
                };
                match inner {
                    Expr::Var(q) if fr.locals.contains_key(q) => {
                        let mut v = vec![(q.clone(), vec![Elem::Field(field.clone())])];
                        if let Some(Expr::AddrOf(place)) = fr.single_defs.get(q) {
                            v.extend(extend(
                                self.sym_roots(fr, place, depth + 1),
                                Elem::Field(field.clone()),
                            ));
                        }
                        v
                    }
                    _ => Vec::new(),
                }
            }
            Expr::Field {
                base,
                field,
                arrow: false,
            } => extend(
                self.sym_roots(fr, base, depth + 1),
                Elem::Field(field.clone()),
            ),
            Expr::Index {
                base,
                index: Some(i),
                ..
            } if self.is_array(fr, base) => {
                extend(self.sym_roots(fr, base, depth + 1), Elem::Index(Some(*i)))
            }
            // `a[i]` for an array `a` and a plain index variable `i`: the same
            // element while `i` is unchanged. The root is the index variable;
            // its path starts with a marker of the array that is dropped when
            // the lock is instantiated.
            Expr::Index {
                base, var: Some(i), ..
            } if self.is_array(fr, base) && fr.locals.contains_key(i) => match array_path(base) {
                Some(a) => vec![(
                    i.clone(),
                    vec![Elem::Field(Name::from(format!("@{a}"))), Elem::Index(None)],
                )],
                None => Vec::new(),
            },
            Expr::Deref(v) => match &**v {
                Expr::Var(q) if fr.locals.contains_key(q) => {
                    let mut out = vec![(q.clone(), Vec::new())];
                    if let Some(Expr::AddrOf(place)) = fr.single_defs.get(q) {
                        out.extend(self.sym_roots(fr, place, depth + 1));
                    }
                    out
                }
                Expr::Cast { value, .. } => {
                    self.sym_roots(fr, &Expr::Deref(value.clone()), depth + 1)
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The region tags of a pointer value: `A[i]` (and anything read or
    /// computed from it) while the index lock `L[i]` is held, or a local
    /// pointer already tagged.
    fn region_tags(&self, fr: &Frame, e: &Expr, st: &State, depth: u32) -> Vec<(Vec<Elem>, bool)> {
        if depth > 16 || st.syms.is_empty() {
            return Vec::new();
        }
        match e {
            Expr::Cast { value: b, .. }
            | Expr::Offset(b)
            | Expr::AddrOf(b)
            | Expr::Deref(b)
            | Expr::Field { base: b, .. } => self.region_tags(fr, b, st, depth + 1),
            Expr::Index {
                base, var: Some(v), ..
            } if self.is_array(fr, base) => match array_path(base) {
                Some(arr) => st
                    .syms
                    .iter()
                    .filter(|x| &x.0 == v)
                    .filter(|x| matches!(x.1.first(), Some(Elem::Field(l)) if l.starts_with('@')))
                    .map(|x| {
                        let mut tag = vec![Elem::Field(Name::from(format!("#{arr}")))];
                        tag.extend(x.1.iter().cloned());
                        (tag, x.2)
                    })
                    .collect(),
                None => Vec::new(),
            },
            Expr::Index { base, .. } => self.region_tags(fr, base, st, depth + 1),
            Expr::Var(q) if fr.locals.contains_key(q) => st
                .syms
                .iter()
                .filter(|x| &x.0 == q && is_region(&x.1))
                .map(|x| (x.1.clone(), x.2))
                .collect(),
            Expr::Choice(alts) => {
                let mut all = alts.iter().map(|a| self.region_tags(fr, a, st, depth + 1));
                let first = all.next().unwrap_or_default();
                all.fold(first, |acc, t| common(&acc, &t))
            }
            _ => Vec::new(),
        }
    }

    /// `x = rhs` for a local `x`: the symbolic locks through `x` end, and
    /// `x` takes the region tags of `rhs`.
    fn retag(&self, fr: &Frame, x: &Name, rhs: &Expr, st: &mut State) {
        let tags = self.region_tags(fr, rhs, st, 0);
        st.syms.retain(|y| &y.0 != x);
        for (tag, sh) in tags {
            if st.syms.len() < MAX_TRACKED {
                st.syms.push((x.clone(), tag, sh));
            }
        }
        st.syms.sort();
        st.syms.dedup();
    }

    /// The symbolic lock named by a lock call's pointer argument.
    fn lock_sym(&self, fr: &Frame, arg: &Expr) -> Option<(Name, Vec<Elem>)> {
        self.lock_syms(fr, arg).into_iter().next()
    }

    fn lock_syms(&self, fr: &Frame, arg: &Expr) -> Vec<(Name, Vec<Elem>)> {
        match arg {
            Expr::AddrOf(place) => self.sym_roots(fr, place, 0),
            Expr::Cast { value, .. } => self.lock_syms(fr, value),
            Expr::Var(_) => self.sym_roots(fr, &Expr::Deref(Box::new(arg.clone())), 0),
            _ => Vec::new(),
        }
    }

    /// Heap objects reachable from `e` are no longer fresh.
    fn escape(&mut self, fr: &Frame, e: &Expr, st: &mut State) {
        // Evaluated even when nothing is fresh: a context where something
        // is must see which sites this would publish.
        for v in self.eval(fr, e, 0) {
            if let Val::Target(k) = v {
                self.observe_heap(&k.base);
                if st.fresh.contains(&k.base) {
                    let v: Vec<Base> = st.fresh.iter().filter(|b| **b != k.base).cloned().collect();
                    st.fresh = v.into();
                }
            }
        }
    }

    /// States for the then- and else-branch of a test (trylock success).
    #[inline(never)]
    fn split(&self, test: &Test, st: State) -> (State, State) {
        let (key, zero_on_true) = match test {
            Test::CallZero { id, zero_on_true } => (TryKey::Call(*id), *zero_on_true),
            Test::VarZero { var, zero_on_true } => (TryKey::Var(var.clone()), *zero_on_true),
            Test::Other => return (st.clone(), st),
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
                    branch.conds.retain(|c| c.0 != v);
                    branch.conds.push((v.clone(), nonzero));
                    let follows: Vec<(bool, Held)> = branch
                        .lock_guards
                        .iter()
                        .filter(|g| g.0 == v)
                        .map(|g| (g.1 == nonzero, g.2.clone()))
                        .collect();
                    for (held, h) in follows {
                        if held {
                            branch.must.insert(h.clone());
                            branch.may.insert(h);
                        } else {
                            branch.must.remove(&h.lock);
                            branch.may.remove(&h.lock);
                        }
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

    /// Code without a body (a library function, `pthread_join`'s result
    /// slot, `free`) handed a wild pointer may write through it.
    fn wild_call(&mut self, fr: &Frame, c: &Call, model: Option<&CallModel>, st: &State) {
        let writes_data = match model {
            None => self.functions_of(fr, &c.callee).is_empty(),
            Some(m) => matches!(
                m,
                CallModel::Join { .. } | CallModel::Mem { .. } | CallModel::Realloc
            ),
        };
        if !writes_data {
            return;
        }
        let name = match &c.callee {
            Callee::Direct(n) => Some(n.clone()),
            Callee::Indirect(_) => None,
        };
        let mut mask = name
            .as_ref()
            .and_then(|n| self.prog.pointer_params.get(n).copied())
            .unwrap_or(0);
        if let Some(n) = &name {
            if let Some((_, m)) = LIBRARY_POINTER_PARAMS.iter().find(|(f, _)| **f == **n) {
                mask |= m;
            }
        }
        match model {
            Some(CallModel::Mem { write, read }) => {
                for i in write.iter().chain(read.iter()) {
                    mask |= 1u64 << (*i).min(63);
                }
            }
            Some(CallModel::Join { .. }) => mask |= 0b10,
            Some(CallModel::Realloc) => mask |= 0b1,
            _ => {}
        }
        for (i, a) in c.args.iter().enumerate() {
            let pointer_expected = i < 64 && mask & (1u64 << i) != 0;
            match wild_value(fr, a) {
                Some(true) => {}
                Some(false) if pointer_expected => {}
                _ => continue,
            }
            let place = Expr::Deref(Box::new(a.clone()));
            self.record(fr, &place, AccessKind::Write, c.span, st, false);
        }
    }

    /// The locks an argument may denote; `false` when it is unresolved.
    fn lock_keys(&self, fr: &Frame, arg: Option<&Expr>) -> (Vec<LocKey>, bool) {
        let Some(arg) = arg else {
            return (Vec::new(), false);
        };
        let mut v = targets(self.eval(fr, arg, 0));
        if v.is_empty() && is_wild(fr, arg) {
            // A wild lock pointer may be any lock.
            return (v, false);
        }
        if v.is_empty() {
            // An unresolved lock pointer: name it by its expression's type or text.
            v = self.deref(fr, arg, 0);
            if v.is_empty() {
                if let Expr::Var(x) = arg {
                    v.push(
                        LocKey::new(Base::Local {
                            func: fr.fname.clone(),
                            var: x.clone(),
                        })
                        .with(Elem::Field(Name::from("*"))),
                    );
                }
                return (v, false);
            }
        }
        (v, true)
    }

    fn call(&mut self, fr: &Frame, c: &Call, mut st: State) -> Option<State> {
        if let Callee::Direct(n) = &c.callee {
            if LONGJMP.contains(&&**n) && self.prog.functions_named(n).is_none() {
                self.longjmp(fr, c, st);
                return None;
            }
        }
        let model = match fr.summary.models.get(&c.id).cloned() {
            // A compare-and-swap is a trylock only when it swaps in a
            // constant (`CAS(&l, &zero, 1)`): one that swaps in a computed
            // value (`CAS(&n, &old, old + 1)`) updates a counter, and taking
            // it for a lock would order what follows it in every thread.
            Some(CallModel::TryLock { .. })
                if is_cas(c) && !matches!(c.args.get(2).map(uncast), Some(Expr::Int(_))) =>
            {
                Some(CallModel::Atomic)
            }
            // An atomic store into a lock word this path holds releases it
            // (`__atomic_store_n(&l, 0, __ATOMIC_RELEASE)` after a CAS loop).
            Some(CallModel::Atomic) if is_atomic_store(c) => {
                let (keys, resolved) = self.lock_keys(fr, c.args.first());
                match resolved && !keys.is_empty() && keys.iter().all(|k| st.may.contains(k)) {
                    true => Some(CallModel::Unlock { arg: 0 }),
                    false => Some(CallModel::Atomic),
                }
            }
            m => m,
        };
        if c.args.iter().any(|a| is_wild(fr, a)) {
            self.wild_call(fr, c, model.as_ref(), &st);
        }
        // Locks, threads, barriers, `once`, atomic sections and exits read or
        // change the context fields; memory models, allocation and unsafe
        // library state only record accesses or change heap freshness.
        if !matches!(
            model,
            None | Some(
                CallModel::Mem { .. }
                    | CallModel::Scan { .. }
                    | CallModel::Unsafe
                    | CallModel::Alloc
                    | CallModel::Realloc
                    | CallModel::Free
                    | CallModel::Atomic
            )
        ) {
            self.opaque();
        }
        match model {
            Some(CallModel::Lock { arg, shared }) => {
                if st.may.0.len() >= MAX_HELD {
                    self.mark_incomplete(fr.fid, "too many locks held at once");
                    return Some(st);
                }
                let (keys, _) = self.lock_keys(fr, c.args.get(arg));
                st.lock_guards.retain(|g| !keys.contains(&g.2.lock));
                for (q, path) in c
                    .args
                    .get(arg)
                    .map(|a| self.lock_syms(fr, a))
                    .unwrap_or_default()
                {
                    if !st.syms.iter().any(|x| x.0 == q && x.1 == path)
                        && st.syms.len() < MAX_TRACKED
                    {
                        st.syms.push((q, path, shared));
                        st.syms.sort();
                    }
                }
                // A lock that may stand for several objects only counts
                // where it is known to be the same object (symbolically).
                let single =
                    keys.len() == 1 && !keys[0].is_weak_lock() && !self.heap_in_loop(&keys[0].base);
                for k in keys {
                    if single && st.must.0.iter().any(|h| h.lock == k) {
                        // Locked again while held: a recursive mutex.
                        match st.rec_depth.iter().position(|(x, _)| *x == k) {
                            Some(i) => st.rec_depth[i].1 = (st.rec_depth[i].1 + 1).min(8),
                            None if st.rec_depth.len() < MAX_TRACKED => {
                                st.rec_depth.push((k.clone(), 1));
                                st.rec_depth.sort();
                            }
                            None => {}
                        }
                    }
                    if single && !st.acquired.contains(&k) && st.acquired.len() < MAX_TRACKED {
                        st.acquired.push(k.clone());
                        st.acquired.sort();
                    }
                    let h = Held { lock: k, shared };
                    if single {
                        st.must.insert(h.clone());
                    }
                    st.may.insert(h.clone());
                    // A checked result means the lock may fail on one branch;
                    // results are tested right after the call, so keep a few.
                    if fr.tested.contains(&c.id) {
                        if st.tries.len() >= MAX_TRACKED {
                            st.tries.remove(0);
                        }
                        st.tries.push((TryKey::Call(c.id), h, false));
                    }
                }
                Some(st)
            }
            Some(CallModel::TryLock {
                arg,
                shared,
                ok_nonzero,
            }) => {
                for k in self.lock_keys(fr, c.args.get(arg)).0 {
                    let h = Held { lock: k, shared };
                    st.may.insert(h.clone());
                    if fr.tested.contains(&c.id) {
                        st.tries.push((TryKey::Call(c.id), h, ok_nonzero));
                    }
                }
                Some(st)
            }
            Some(CallModel::Unlock { arg }) => {
                let (keys, resolved) = self.lock_keys(fr, c.args.get(arg));
                if !resolved {
                    // Unlocking an unknown mutex may release any lock.
                    st.must = LockSet::default();
                    st.rec_depth.clear();
                    st.clean.clear();
                    st.syms.clear();
                    st.lock_guards.clear();
                    return Some(st);
                }
                if let [k] = &keys[..] {
                    if let Some(i) = st.rec_depth.iter().position(|(x, _)| x == k) {
                        // One of several acquisitions: still held. Creation
                        // locksets conservatively stop counting it (as
                        // Goblint's do for recursive mutexes).
                        st.rec_depth[i].1 -= 1;
                        st.clean.retain(|(_, l)| l != k);
                        if st.rec_depth[i].1 == 0 {
                            st.rec_depth.remove(i);
                        }
                        return Some(st);
                    }
                }
                st.lock_guards.retain(|g| !keys.contains(&g.2.lock));
                let roots = c
                    .args
                    .get(arg)
                    .map(|a| self.lock_syms(fr, a))
                    .unwrap_or_default();
                match roots.is_empty() {
                    false => {
                        // Through `q`, or through another pointer to the
                        // same object: `lock(&p1->m); unlock(&p2->m)` with
                        // `p1 == p2` releases the lock.
                        let objects: Vec<Vals> = roots
                            .iter()
                            .map(|(q, _)| self.eval(fr, &Expr::Var(q.clone()), 0))
                            .collect();
                        let aliased = |v: &Name, i: usize| -> bool {
                            let o = &objects[i];
                            !o.is_empty()
                                && self
                                    .eval(fr, &Expr::Var(v.clone()), 0)
                                    .iter()
                                    .any(|x| matches!(x, Val::Target(_)) && o.contains(x))
                        };
                        st.syms.retain(|x| {
                            !roots.iter().enumerate().any(|(i, (q, path))| {
                                (x.1 == *path && (x.0 == *q || aliased(&x.0, i)))
                                    || (is_region(&x.1) && x.1[1..] == path[..])
                            })
                        })
                    }
                    true => {
                        let last: Vec<Elem> =
                            keys.iter().filter_map(|k| k.path.last().cloned()).collect();
                        st.syms
                            .retain(|x| !x.1.last().map(|e| last.contains(e)).unwrap_or(true));
                    }
                }
                let single = keys.len() == 1;
                for k in &keys {
                    st.clean.retain(|(_, l)| l != k);
                    if k.path.iter().any(|e| matches!(e, Elem::Index(None))) {
                        // An unknown element of a lock array may be any of them.
                        st.must.remove_overlapping(k);
                        st.clean.retain(|(_, l)| !l.may_overlap(k));
                    } else {
                        st.must.remove(k);
                    }
                    if single {
                        st.may.remove(k);
                    }
                }
                Some(st)
            }
            Some(CallModel::Create { tid, func, arg }) => {
                let tids = c
                    .args
                    .get(tid)
                    .map(|e| self.deref(fr, e, 0))
                    .unwrap_or_default();
                let entries = c
                    .args
                    .get(func)
                    .map(|e| self.functions_of(fr, &Callee::Indirect(e.clone())))
                    .unwrap_or_default();
                let argv = c
                    .args
                    .get(arg)
                    .map(|e| self.eval(fr, e, 0))
                    .unwrap_or_default();
                if let Some(e) = c.args.get(arg) {
                    self.escape(fr, e, &mut st);
                }
                self.spawn(fr, c, &mut st, tids, entries, argv, false);
                Some(st)
            }
            Some(CallModel::Join { tid, all }) => {
                if let Some(e) = c.args.get(tid) {
                    let keys: Vec<LocKey> = self.place(fr, e, 0);
                    self.read(self.d.sites_epoch);
                    if self.d.thread != 0
                        && keys.len() == 1
                        && self.d.main_tids.iter().any(|m| same_thread_id(m, &keys[0]))
                    {
                        st.main_ended = true;
                    }
                    // `pthread_join(t[2])` joins one of the threads a loop
                    // created into `t[i]`, not all of them.
                    let joins_all = all
                        || !keys.is_empty()
                            && !keys
                                .iter()
                                .all(|k| k.path.iter().any(|e| matches!(e, Elem::Index(Some(_)))));
                    let index: Option<i64> = {
                        let ix: Vec<Option<i64>> = keys
                            .iter()
                            .map(|k| {
                                k.path.iter().rev().find_map(|e| match e {
                                    Elem::Index(Some(i)) => Some(*i),
                                    _ => None,
                                })
                            })
                            .collect();
                        match ix.first() {
                            Some(&Some(i)) if ix.iter().all(|x| *x == Some(i)) => Some(i),
                            _ => None,
                        }
                    };
                    // A join loop covers a creation loop when their ranges
                    // match (or are not known): `i < 9` joins some of the
                    // threads `i < 10` created. With constant ranges, the
                    // joined indices add up (`t[0]`, then `1 <= i < 4`).
                    let join_bound = self.frame_loop().cloned().flatten();
                    let mut matching: Vec<u32> = Vec::new();
                    for (i, s) in self.d.sites.iter().enumerate() {
                        let i = i as u32;
                        if s.tid_escaped
                            || !s
                                .tid
                                .iter()
                                .any(|t| keys.iter().any(|k| same_thread_id(k, t)))
                        {
                            continue;
                        }
                        if s.tid.len() > 1 {
                            // One site, several thread ids: joined once each is joined.
                            for (n, t) in s.tid.iter().enumerate() {
                                let n = n as u32;
                                if keys.iter().any(|k| same_thread_id(k, t))
                                    && !st.joined_tids.contains(&(i, n))
                                {
                                    st.joined_tids.push((i, n));
                                    st.joined_tids.sort();
                                }
                            }
                            let all =
                                (0..s.tid.len() as u32).all(|n| st.joined_tids.contains(&(i, n)));
                            if !all {
                                continue;
                            }
                        }
                        if !s.in_loop || all {
                            matching.push(i);
                            continue;
                        }
                        let created = s.loop_bound.as_deref().and_then(const_range);
                        let part = match (joins_all, &join_bound) {
                            // A join in a loop whose range is not known (a
                            // stride, an early exit, a changed counter) may
                            // skip threads: it joins none for sure.
                            (true, None) if !all && self.frame_loop().is_some() => continue,
                            (true, None) => None,
                            (true, Some(j)) if Some(j) == s.loop_bound.as_ref() => None,
                            (true, Some(j)) => match const_range(j) {
                                Some(r) => Some(r),
                                None if s.loop_bound.is_none() => None,
                                None => continue,
                            },
                            (false, _) => match index {
                                Some(k) => Some((k, k + 1)),
                                None => continue,
                            },
                        };
                        match (part, created) {
                            (None, _) if joins_all => matching.push(i),
                            // The creation loop's range is not known: a join
                            // loop is taken to join all its threads.
                            (Some(_), None) if joins_all && s.loop_bound.is_none() => {
                                matching.push(i)
                            }
                            (Some((a, b)), Some((from, to))) => {
                                if !st.joined_ix.contains(&(i, a, b)) {
                                    st.joined_ix.push((i, a, b));
                                    st.joined_ix.sort();
                                }
                                if covered(&st.joined_ix, i, from, to) {
                                    matching.push(i);
                                }
                            }
                            _ => {}
                        }
                    }
                    if matching.is_empty()
                        && keys.len() == 1
                        && matches!(keys[0].base, Base::Global(_) | Base::Heap { .. })
                    {
                        self.effect();
                        self.d.pending_join_fns.insert(fr.fid);
                        let pending = (self.d.thread, keys[0].clone(), st.clean.to_vec());
                        if !self.d.pending_joins.contains(&pending) {
                            self.d.pending_joins.push(pending);
                        }
                    }
                    for s in matching {
                        if st.active.contains(s) {
                            let held: Vec<LocKey> = st
                                .clean
                                .iter()
                                .filter(|(x, _)| *x == s)
                                .map(|(_, l)| l.clone())
                                .collect();
                            let inside: Vec<(u32, LocKey)> = st
                                .clean
                                .iter()
                                .filter(|(x, l)| *x != s && held.contains(l))
                                .cloned()
                                .collect();
                            self.protect(s, held, inside);
                        }
                        st.clean.retain(|(x, _)| *x != s);
                        st.active.remove(s);
                    }
                }
                Some(st)
            }
            Some(CallModel::Once { func }) => {
                let callee = c.args.get(func).cloned().unwrap_or(Expr::Other);
                let targets = self.functions_of(fr, &Callee::Indirect(callee));
                let (controls, resolved) = self.lock_keys(fr, c.args.first());
                if !resolved || controls.len() != 1 || controls[0].is_weak_lock() {
                    // Which `pthread_once_t` is meant is unknown: the init
                    // function may run once per control, so it guards nothing.
                    for f in targets {
                        if let Some(e) = self.walk_fn(f, st.clone(), Vec::new()) {
                            st.created = st.created.union(&e.created);
                        }
                    }
                    return Some(st);
                }
                let key = controls[0].display();
                let once = Held {
                    lock: LocKey::new(Base::Synthetic(Name::from(format!("once:{key}")))),
                    shared: false,
                };
                for f in targets {
                    let mut s2 = st.clone();
                    s2.must.insert(once.clone());
                    s2.may.insert(once.clone());
                    if let Some(e) = self.walk_fn(f, s2, Vec::new()) {
                        st.created = st.created.union(&e.created);
                    }
                }
                // Everything after `pthread_once` returns is ordered after the
                // init function, whichever thread ran it.
                let done = Held {
                    lock: LocKey::new(Base::Synthetic(Name::from(format!("once-done:{key}")))),
                    shared: true,
                };
                st.must.insert(done.clone());
                st.may.insert(done);
                Some(st)
            }
            Some(CallModel::Mem { write, read }) => {
                for (idx, kind) in [(write, AccessKind::Write), (read, AccessKind::Read)] {
                    if let Some(e) = idx.and_then(|i| c.args.get(i)) {
                        let place = Expr::Deref(Box::new(e.clone()));
                        self.record(fr, &place, kind, c.span, &st, false);
                    }
                }
                Some(st)
            }
            Some(CallModel::Scan { from }) => {
                for e in c.args.iter().skip(from) {
                    let place = Expr::Deref(Box::new(e.clone()));
                    self.record(fr, &place, AccessKind::Write, c.span, &st, false);
                }
                Some(st)
            }
            Some(CallModel::Unsafe) => {
                if let Callee::Direct(n) = &c.callee {
                    let key = LocKey::new(Base::Synthetic(Name::from(format!(
                        "(static state of {})",
                        hidden_state(n)
                    ))));
                    self.record_at(
                        fr,
                        &Expr::Other,
                        vec![key],
                        AccessKind::Write,
                        c.span,
                        &st,
                        false,
                    );
                }
                Some(st)
            }
            Some(CallModel::Exit) => None,
            Some(CallModel::Barrier) => {
                let key = c
                    .args
                    .first()
                    .map(|a| self.lock_keys(fr, Some(a)).0)
                    .unwrap_or_default()
                    .first()
                    .map(|k| Name::from(k.display()))
                    .unwrap_or_else(|| Name::from("?"));
                match st.phases.iter_mut().find(|p| p.0 == key) {
                    Some(p) => {
                        p.1 = p.1.saturating_add(1).min(4);
                        p.2 = p.2.saturating_add(1).min(4);
                    }
                    None => {
                        st.phases.push((key.clone(), 1, 1));
                        st.phases.sort();
                    }
                }
                if !self.d.threads[self.d.thread as usize]
                    .barriers
                    .contains(&key)
                {
                    self.effect();
                    self.d.threads[self.d.thread as usize].barriers.push(key);
                }
                Some(st)
            }
            Some(CallModel::AtomicBegin) => {
                st.must.insert(atomic_section());
                st.may.insert(atomic_section());
                Some(st)
            }
            Some(CallModel::AtomicEnd) => {
                st.must.remove(&atomic_section().lock);
                st.may.remove(&atomic_section().lock);
                Some(st)
            }
            Some(CallModel::Realloc) => {
                // The old object is freed (written) and a new one returned.
                if let Some(e) = c.args.first() {
                    let place = Expr::Deref(Box::new(e.clone()));
                    self.record(fr, &place, AccessKind::Write, c.span, &st, false);
                }
                Some(st)
            }
            Some(CallModel::Alloc) => {
                self.allocated_at(fr, c, &mut st);
                Some(st)
            }
            Some(_) => Some(st),
            None => {
                if let Callee::Direct(n) = &c.callee {
                    if fr.locals.contains_key(n) || self.prog.global(n).is_some() {
                        self.record(
                            fr,
                            &Expr::Var(n.clone()),
                            AccessKind::Read,
                            c.span,
                            &st,
                            false,
                        );
                    }
                }
                let callees = self.functions_of(fr, &c.callee);
                if callees.is_empty() {
                    let keeps = match &c.callee {
                        Callee::Direct(n) => !does_not_retain(n),
                        Callee::Indirect(_) => true,
                    };
                    for a in &c.args {
                        if keeps {
                            self.escape(fr, a, &mut st);
                        }
                        // A thread id handed to unknown code may be overwritten.
                        for v in self.eval(fr, a, 0) {
                            if let Val::Target(k) = v {
                                let hit = self.d.sites.iter().any(|site| {
                                    !site.tid_escaped
                                        && site.tid.iter().any(|t| same_thread_id(t, &k))
                                });
                                if hit {
                                    self.effect();
                                    self.d.sites_epoch = self.d.epoch;
                                    for site in self.d.sites.iter_mut() {
                                        if site.tid.iter().any(|t| same_thread_id(t, &k)) {
                                            site.tid_escaped = true;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    // An unknown function may call the functions it is given,
                    // at any time: treat them as new threads.
                    // Functions passed directly, or in a struct of callbacks.
                    let mut vals: Vals = Vec::new();
                    for a in &c.args {
                        for v in self.eval(fr, a, 0) {
                            if let Val::Target(k) = &v {
                                if let Some(inner) = self.store_get(&k.without_indices()) {
                                    add_vals(
                                        &mut vals,
                                        inner.iter().filter(|x| matches!(x, Val::Func(_))).cloned(),
                                    );
                                }
                            }
                            add_vals(&mut vals, [v]);
                        }
                    }
                    let mut entries: Vec<FunctionId> = vals
                        .into_iter()
                        .filter_map(|v| {
                            if let Val::Func(f) = v {
                                self.prog.functions_named(&f).map(|d| d[0])
                            } else {
                                None
                            }
                        })
                        .collect();
                    entries.dedup();
                    let name = callee_name(&c.callee);
                    // Without any thread creation in the program, only callbacks
                    // shaped like thread entries (`void *f(void *)`) count.
                    if !self.d.has_threads {
                        entries.retain(|f| self.looks_like_thread_entry(*f));
                    }
                    if !entries.is_empty()
                        && self.prog.functions_named(&*name).is_none()
                        && !NOT_ASYNC_CALLBACKS.contains(&&*name)
                    {
                        self.spawn(fr, c, &mut st, Vec::new(), entries, Vec::new(), true);
                        // It may call them any number of times.
                        if let Some(&s) = self.d.site_index.get(&(fr.fid, c.id)) {
                            self.d.sites[s as usize].in_loop = true;
                        }
                    }
                    return Some(st);
                }
                let mut acc = None;
                for f in callees {
                    let params: Vec<Name> = self
                        .summary(f)
                        .ir
                        .params
                        .iter()
                        .map(|p| p.name.clone())
                        .collect();
                    let bindings: Vec<Vals> = (0..params.len())
                        .map(|i| {
                            c.args
                                .get(i)
                                .map(|a| self.eval(fr, a, 0))
                                .unwrap_or_default()
                        })
                        .collect();
                    // Symbolic locks follow pointer arguments into the callee and back.
                    let arg_root: Vec<Option<(Name, Vec<Elem>)>> = (0..params.len())
                        .map(|i| c.args.get(i).and_then(|a| self.lock_sym(fr, a)))
                        .collect();
                    let mut inner = st.clone();
                    inner.syms = ThinVec::new();
                    for (q, path, sh) in &st.syms {
                        for (i, r) in arg_root.iter().enumerate() {
                            if let Some((x, pre)) = r {
                                if x == q && path.starts_with(pre) {
                                    inner.syms.push((
                                        params[i].clone(),
                                        path[pre.len()..].to_vec(),
                                        *sh,
                                    ));
                                }
                            }
                        }
                    }
                    // Region tags follow pointer arguments into the callee.
                    for (i, p) in params.iter().enumerate() {
                        if let Some(a) = c.args.get(i) {
                            for (tag, sh) in self.region_tags(fr, a, &st, 0) {
                                inner.syms.push((p.clone(), tag, sh));
                            }
                        }
                    }
                    inner.syms.sort();
                    inner.syms.dedup();
                    // SV-COMP's `__VERIFIER_atomic_*` functions run atomically:
                    // inside the global atomic section, unless already in it.
                    let atomic = f.name(self.db).starts_with("__VERIFIER_atomic_")
                        && !inner.must.0.iter().any(|h| h.lock == atomic_section().lock);
                    if atomic {
                        self.opaque();
                        inner.must.insert(atomic_section());
                        inner.may.insert(atomic_section());
                    }
                    let wrapper = self.is_alloc_wrapper(f);
                    let word = match atomic {
                        true => verifier_lock(&self.summary(f).ir.body)
                            .filter(|(m, _)| self.prog.global(m).is_some()),
                        false => None,
                    };
                    let e = self.walk_fn(f, inner, bindings).map(|mut e| {
                        if atomic {
                            e.must.remove(&atomic_section().lock);
                            e.may.remove(&atomic_section().lock);
                        }
                        if let Some((m, acquires)) = &word {
                            let h = Held {
                                lock: LocKey::new(Base::Global(m.clone())),
                                shared: false,
                            };
                            if *acquires {
                                e.must.insert(h.clone());
                                e.may.insert(h);
                            } else {
                                e.must.remove(&h.lock);
                                e.may.remove(&h.lock);
                            }
                        }
                        if wrapper {
                            self.allocated_at(fr, c, &mut e);
                        }
                        let mut back = Vec::new();
                        for (p, path, sh) in e.syms.iter().filter(|x| !is_region(&x.1)) {
                            if let Some(i) = params.iter().position(|x| x == p) {
                                if let Some(Some((x, pre))) = arg_root.get(i) {
                                    let mut full = pre.clone();
                                    full.extend(path.iter().cloned());
                                    back.push((x.clone(), full, *sh));
                                }
                            }
                        }
                        // Caller symbols the callee could not see survive it.
                        for x in &st.syms {
                            let passed = arg_root
                                .iter()
                                .flatten()
                                .any(|(v, pre)| *v == x.0 && x.1.starts_with(pre));
                            // The callee cannot reassign the caller's locals.
                            if !passed || is_region(&x.1) {
                                back.push(x.clone());
                            }
                        }
                        back.sort();
                        back.dedup();
                        e.syms = back.into();
                        e
                    });
                    acc = join(acc, e);
                }
                acc
            }
        }
    }

    /// `x = rhs` for a local pointer whose address is not taken: from here
    /// on this path, `x` holds what `rhs` evaluates to (when that is known).
    #[inline(never)]
    fn assign_ptr(&self, fr: &Frame, x: &Name, rhs: &Expr, st: &mut State) {
        if !tracks_ptr(fr, x) {
            return;
        }
        let v = self.eval(fr, rhs, 0);
        if v.is_empty() && !st.ptrs.iter().any(|(y, _)| y == x) {
            return;
        }
        let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
        set_ptr(&mut p, x, v);
        st.ptrs = Arc::new(p);
        *self.d.cur_ptrs.borrow_mut() = st.ptrs.clone();
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

    /// The object allocated at call `c` (by `malloc` or a wrapper) is new:
    /// fresh until it escapes.
    fn allocated_at(&mut self, fr: &Frame, c: &Call, st: &mut State) {
        let b = Base::Heap {
            func: fr.fname.clone(),
            call: c.id,
        };
        if self.d.loop_depth > 0 && !self.d.heap_in_loop.contains_key(&b) {
            self.effect();
            self.d.heap_in_loop.insert(b.clone(), self.d.epoch);
        }
        self.observe_heap(&b);
        if let Some(&n) = self.d.node_stack.last() {
            self.d.nodes[n as usize].allocates = true;
        }
        if st.allocated.len() >= MAX_ALLOCATED {
            // Too many sites to follow: no more freshness on this path.
            return;
        }
        if !st.allocated.contains(&b) {
            let mut v = st.allocated.to_vec();
            v.push(b.clone());
            v.sort();
            st.allocated = v.into();
        }
        if !st.fresh.contains(&b) {
            let mut v = st.fresh.to_vec();
            v.push(b);
            v.sort();
            st.fresh = v.into();
        }
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

    /// Records an access of `place`. `stable`: the place is an expression of
    /// the function's summary (an access statement), not a temporary the
    /// walk built for a call, so it may be cached by address.
    fn record(
        &mut self,
        fr: &Frame,
        place: &Expr,
        kind: AccessKind,
        span: racelens_syntax::Span,
        st: &State,
        stable: bool,
    ) {
        // A non-static local whose address is never taken (or a field of
        // one) is this frame's alone: `record_at` records nothing for it,
        // and with no symbolic lock in the state it marks nothing either.
        if st.syms.is_empty() && frame_private(fr, place) {
            return;
        }
        let keys = self.place(fr, place, 0);
        self.record_at(fr, place, keys, kind, span, st, stable);
    }

    /// Records accesses of `place` to the objects `keys` it denotes.
    fn record_at(
        &mut self,
        fr: &Frame,
        place: &Expr,
        keys: Vec<LocKey>,
        kind: AccessKind,
        span: racelens_syntax::Span,
        st: &State,
        stable: bool,
    ) {
        if keys.is_empty() {
            return;
        }
        // Direct accesses of a thread-local are kept (marked below): a copy
        // whose address another thread holds can still race.
        let at = (fr.fid, place as *const Expr as usize);
        let cached = match stable {
            true => self.untracked.borrow().get(&at).copied(),
            false => None,
        };
        // (atomic, volatile): an atomic access is not recorded; a volatile
        // one is, unless the configuration keeps the old convention.
        let (atomic, volatile) = cached.unwrap_or_else(|| {
            let u = self
                .type_of(fr, place, 0)
                .map_or((false, false), |t| (t.atomic, t.is_volatile()));
            if stable {
                self.untracked.borrow_mut().insert(at, u);
            }
            u
        });
        if atomic || volatile && fr.fid.ws(self.db).config(self.db).volatile_is_sync {
            return;
        }
        let weak = keys.len() > 1;
        let direct = is_direct_in(fr, place);
        let roots = if st.syms.is_empty() {
            Vec::new()
        } else {
            self.sym_roots(fr, place, 0)
        };
        let mut index_vars = Vec::new();
        if !st.syms.is_empty() {
            index_vars_in(place, &mut index_vars, 0);
        }
        for k in keys {
            self.observe_heap(&k.base);
            if st.fresh.contains(&k.base) {
                continue;
            }
            // Locks the access's own index or pointer adds to the state's
            // locksets, in order (most accesses have none: no clone then).
            let mut must: Vec<Held> = Vec::new();
            let mut may: Vec<Held> = Vec::new();
            // `lock(&L[i]); ... A[i]...`: the lock of the same index guards it.
            for (v, arr) in &index_vars {
                for (_, lpath, shared) in st.syms.iter().filter(|x| &x.0 == v) {
                    if let Some(Elem::Field(l)) = lpath.first() {
                        if let Some(lname) = l.strip_prefix('@') {
                            let h = Held {
                                lock: index_lock(lname, arr, &lpath[2..]),
                                shared: *shared,
                            };
                            must.push(h.clone());
                            may.push(h);
                        }
                    }
                }
            }
            // `lock(&L[4]); A[4]++`: the lock of the element's own index,
            // as `lock(&L[i]); A[i]++` gives.
            if let Some((arr, ix, _)) = const_indexed(&k) {
                for (set, from) in [(&mut must, &st.must), (&mut may, &st.may)] {
                    for h in &from.0 {
                        if let Some((lname, lix, rest)) = const_indexed(&h.lock) {
                            if lix == ix {
                                set.push(Held {
                                    lock: index_lock(&lname, &arr, rest),
                                    shared: h.shared,
                                });
                            }
                        }
                    }
                }
            }
            // Through a pointer into an index lock's region.
            for (q, _) in &roots {
                for (_, tag, shared) in st.syms.iter().filter(|x| &x.0 == q && is_region(&x.1)) {
                    if let Some(lock) = region_lock(tag) {
                        let h = Held {
                            lock,
                            shared: *shared,
                        };
                        must.push(h.clone());
                        may.push(h);
                    }
                }
            }
            for (q, apath) in &roots {
                let marker =
                    |p: &[Elem]| matches!(p.first(), Some(Elem::Field(f)) if f.starts_with('@'));
                let apath_eff: &[Elem] = if marker(apath) { &apath[1..] } else { apath };
                if k.path.len() >= apath_eff.len()
                    && k.path[k.path.len() - apath_eff.len()..] == apath_eff[..]
                {
                    let prefix = &k.path[..k.path.len() - apath_eff.len()];
                    for (_, lpath, shared) in st.syms.iter().filter(|x| {
                        &x.0 == q
                            && !is_region(&x.1)
                            && marker(&x.1) == marker(apath)
                            && (!marker(apath) || x.1.first() == apath.first())
                    }) {
                        let lpath_eff: &[Elem] = if marker(lpath) { &lpath[1..] } else { lpath };
                        let mut path = prefix.to_vec();
                        path.extend(lpath_eff.iter().cloned());
                        let lock = LocKey {
                            base: k.base.clone(),
                            path,
                        };
                        // Through `&a[?]`: the lock of the accessed element,
                        // `a[index of a].m`, which `a[5].m` is for `a[5]`.
                        if let Some((arr, at)) = any_indexed(&lock) {
                            if at < prefix.len() {
                                let h = Held {
                                    lock: index_lock(&arr, &arr, &lock.path[at + 1..]),
                                    shared: *shared,
                                };
                                must.push(h.clone());
                                may.push(h);
                            }
                        }
                        let h = Held {
                            lock,
                            shared: *shared,
                        };
                        must.push(h.clone());
                        may.push(h);
                    }
                }
            }
            // Locks of the access's own index or pointer depend on more than
            // the context fields (and on them in more ways than recording).
            if !(must.is_empty() && may.is_empty()) {
                self.opaque();
            }
            if self.excluded(fr, &k) {
                continue;
            }
            let direct_local = match &k.base {
                Base::Local { func, var } => {
                    let own = *func == fr.fname && direct;
                    if own && !fr.address_taken.contains(var) {
                        continue;
                    }
                    own
                }
                // Each thread has its own instance of a thread-local variable.
                Base::Global(g) => {
                    direct && self.prog.global(g).map(|t| t.thread_local).unwrap_or(false)
                }
                _ => false,
            };
            self.note_struct_prefixes(fr, &k);
            let with = |set: &LockSet, extra: Vec<Held>| {
                let mut set = set.clone();
                for h in extra {
                    set.insert(h);
                }
                set
            };
            let (ctx, ctx_hash) = match (must.is_empty(), may.is_empty()) {
                (true, true) => self.ctx_for(st, &st.must, &st.may),
                _ => {
                    let (must, may) = (with(&st.must, must), with(&st.may, may));
                    self.ctx_for(st, &must, &may)
                }
            };
            let path = match self.d.paths.get(&k.path[..]) {
                Some(p) => p.clone(),
                None => {
                    let p: Arc<[Elem]> = Arc::from(&k.path[..]);
                    self.d.paths.insert(p.clone());
                    p
                }
            };
            let fact = AccessFact {
                path,
                thread: self.d.thread,
                func: fr.fid,
                span,
                kind,
                direct_local,
                weak: weak || k.is_weak(),
                volatile,
                ctx,
            };
            let n = self.d.node_stack.last().copied();
            self.add_fact(n, k.base, fact, ctx_hash);
        }
    }

    /// The interned fact context for a state and the locksets of an access;
    /// consecutive accesses in the same state reuse the last one without
    /// rebuilding it.
    fn ctx_for(&mut self, st: &State, must: &LockSet, may: &LockSet) -> Ctx {
        let chain = self.d.thread_acquired.get(self.d.thread as usize);
        if let Some(last) = &self.d.last_ctx {
            let c = &last.ctx;
            if last.thread == self.d.thread
                && c.must == *must
                && c.may == *may
                && c.active == st.active
                && c.created == st.created
                && *c.clean == *st.clean
                && *c.phases == *st.phases
                && c.main_ended == st.main_ended
                && *last.acquired == *st.acquired
                && Some(&last.chain) == chain
            {
                return (c.clone(), last.hash);
            }
        }
        let ctx = FactCtx {
            must: must.clone(),
            may: may.clone(),
            active: st.active.clone(),
            created: st.created.clone(),
            acquired: self.chain_acquired(st),
            clean: st.clean.to_vec(),
            phases: st.phases.to_vec(),
            main_ended: st.main_ended,
        };
        let (c, hash) = match self.d.ctxs.get_key_value(&ctx) {
            Some((c, h)) => (c.clone(), *h),
            None => {
                let h = std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, &ctx);
                let c = Arc::new(ctx);
                self.d.ctxs.insert(c.clone(), h);
                (c, h)
            }
        };
        self.d.last_ctx = Some(LastCtx {
            thread: self.d.thread,
            acquired: st.acquired.to_vec(),
            chain: chain.cloned().unwrap_or_default(),
            hash,
            ctx: c.clone(),
        });
        (c, hash)
    }

    /// Records which prefixes of `k` are structs, for type-based accesses.
    fn note_struct_prefixes(&mut self, fr: &Frame, k: &LocKey) {
        let base_ty = match &k.base {
            Base::Global(g) => match g.split_once("::") {
                Some((_, v)) => fr.locals.get(v).cloned(),
                None => self.prog.global(g).map(|t| self.prog.resolve_type(t)),
            },
            Base::Local { func, var } if *func == fr.fname => fr.locals.get(var).cloned(),
            Base::Type(t) => Some(TypeInfo {
                name: Some(t.clone()),
                ..Default::default()
            }),
            _ => None,
        };
        let Some(mut ty) = base_ty else { return };
        let mut found = Vec::new();
        for i in 0..=k.path.len() {
            if ty.pointer == 0 && !ty.array {
                if let Some(n) = &ty.name {
                    if self.prog.structs.contains_key(n) {
                        found.push((k.path[..i].to_vec(), n.clone()));
                        if i == k.path.len() {
                            // A whole-struct access also touches the structs
                            // nested in it (`u->t = t1` writes `u->t.s`).
                            self.nested_struct_prefixes(n, &k.path, 0, &mut found);
                        }
                    }
                }
            }
            let Some(e) = k.path.get(i) else { break };
            match e {
                Elem::Index(_) => ty.array = false,
                Elem::Field(f) => match ty.name.as_deref().and_then(|n| self.prog.field_type(n, f))
                {
                    Some(ft) => ty = self.prog.resolve_type(ft),
                    None => break,
                },
            }
        }
        if found.is_empty() {
            return;
        }
        if let (true, Some(&n)) = (self.d.keep, self.d.node_stack.last()) {
            let node = &mut self.d.nodes[n as usize];
            if !node
                .prefixes
                .iter()
                .any(|(b, f)| *b == k.base && *f == found)
            {
                node.prefixes.push((k.base.clone(), found.clone()));
            }
        }
        let set = self.d.struct_prefixes.entry(k.base.clone()).or_default();
        if set.len() > HARD_MAX_FACTS {
            self.d.capped = true;
            return;
        }
        set.extend(found);
    }

    /// The struct-typed fields nested (by value) in struct `n` at `path`,
    /// a few levels deep.
    fn nested_struct_prefixes(
        &self,
        n: &str,
        path: &[Elem],
        depth: usize,
        found: &mut Vec<(Vec<Elem>, Name)>,
    ) {
        if depth >= 3 || found.len() >= MAX_PREFIXES {
            return;
        }
        let Some(fields) = self.prog.structs.get(n) else {
            return;
        };
        for (f, ft) in fields {
            let ft = self.prog.resolve_type(ft);
            if ft.pointer != 0 || ft.array {
                continue;
            }
            let Some(m) = &ft.name else { continue };
            if !self.prog.structs.contains_key(m) {
                continue;
            }
            let mut p = path.to_vec();
            p.push(Elem::Field(f.clone()));
            found.push((p.clone(), m.clone()));
            self.nested_struct_prefixes(m, &p, depth + 1, found);
        }
    }

    /// Atomic globals never race. (Thread-local ones race only through
    /// pointers: their direct accesses are kept, marked `direct_local`.)
    fn excluded(&self, _fr: &Frame, k: &LocKey) -> bool {
        if let Base::Global(g) = &k.base {
            if let Some(t) = self.prog.global(g) {
                return t.atomic;
            }
        }
        false
    }
}

/// Do two thread-id locations name the same id? Unknown indices match any.
/// The accesses through unresolved pointers of each struct type T (base
/// `Type(T)`), in a fixed order so that caps keep the same facts whatever
/// order the walk found them in.
fn typed_facts<'f>(
    facts: impl Iterator<Item = (&'f Base, impl Iterator<Item = &'f AccessFact>)>,
) -> Vec<(Name, Vec<AccessFact>)> {
    let mut typed: Vec<(Name, Vec<AccessFact>)> = facts
        .filter_map(|(b, f)| {
            if let Base::Type(t) = b {
                Some((t.clone(), cap_facts(f.cloned())))
            } else {
                None
            }
        })
        .collect();
    typed.sort_by(|a, b| a.0.cmp(&b.0));
    typed
}

/// The struct prefixes of a base that take copies: the first in path order.
fn used_prefixes<'p>(p: impl Iterator<Item = &'p (Vec<Elem>, Name)>) -> Vec<&'p (Vec<Elem>, Name)> {
    let mut p: Vec<&(Vec<Elem>, Name)> = p.collect();
    p.sort();
    p.truncate(MAX_PREFIXES);
    p
}

/// The facts of one base, sorted: its own, plus copies of the accesses
/// through unresolved pointers of every struct type found at its prefixes
/// (such an access may touch every object of that type).
fn base_facts(
    base: &Base,
    own: impl Iterator<Item = AccessFact>,
    prefixes: &[&(Vec<Elem>, Name)],
    typed: &[(Name, &[AccessFact])],
) -> Vec<AccessFact> {
    let own = cap_facts(own);
    if !takes_copies(base, own.len(), prefixes, typed) {
        return own;
    }
    with_copies(base, own, prefixes, typed)
}

/// Does the struct found at `prefix` take copies of type `t`'s accesses?
/// (A type's own base takes none at its root.)
fn takes(base: &Base, t: &Name, (prefix, ty): &(Vec<Elem>, Name)) -> bool {
    ty == t && !(matches!(base, Base::Type(b) if b == t) && prefix.is_empty())
}

/// Does a base with `own` capped facts take copies of typed accesses? Most
/// take none, or are full: [`cap_facts`] already sorted them.
fn takes_copies(
    base: &Base,
    own: usize,
    prefixes: &[&(Vec<Elem>, Name)],
    typed: &[(Name, &[AccessFact])],
) -> bool {
    own < MAX_FACTS
        && typed
            .iter()
            .any(|(t, _)| prefixes.iter().any(|p| takes(base, t, p)))
}

/// A base's capped facts `own` with the copies of the typed accesses its
/// prefixes take, sorted (see [`base_facts`]).
fn with_copies(
    base: &Base,
    own: Vec<AccessFact>,
    prefixes: &[&(Vec<Elem>, Name)],
    typed: &[(Name, &[AccessFact])],
) -> Vec<AccessFact> {
    let mut set: FxHashSet<AccessFact> = own.into_iter().collect();
    'copies: for (t, tfacts) in typed {
        for p in prefixes.iter().copied() {
            if !takes(base, t, p) {
                continue;
            }
            let prefix = &p.0;
            for f in tfacts.iter() {
                // Once the set is full nothing more goes in: stop copying.
                if set.len() >= MAX_FACTS {
                    break 'copies;
                }
                let mut path = Vec::with_capacity(prefix.len() + f.path.len());
                path.extend(prefix.iter().cloned());
                path.extend(f.path.iter().cloned());
                set.insert(AccessFact {
                    path: path.into(),
                    thread: f.thread,
                    func: f.func,
                    span: f.span,
                    kind: f.kind,
                    direct_local: f.direct_local,
                    weak: true,
                    volatile: f.volatile,
                    ctx: f.ctx.clone(),
                });
            }
        }
    }
    let mut v: Vec<AccessFact> = set.into_iter().collect();
    v.sort_by(fact_order);
    v
}

/// A base's own accesses, sorted, at most [`MAX_FACTS`] of them. Over the
/// cap, every access (function, span, path, kind and thread) keeps its first
/// contexts in turn, round by round, so that no racy access disappears
/// from the reports while another keeps thousands of contexts. The result
/// depends only on the set of facts, not on the order they were found in.
fn cap_facts(facts: impl Iterator<Item = AccessFact>) -> Vec<AccessFact> {
    let mut v: Vec<AccessFact> = facts.collect();
    v.sort_by(fact_order);
    v.dedup();
    if v.len() <= MAX_FACTS {
        return v;
    }
    // Facts of one access are adjacent in `fact_order`: rank each among them.
    let same = |a: &AccessFact, b: &AccessFact| {
        (&a.path, a.thread, a.func, a.span, a.kind) == (&b.path, b.thread, b.func, b.span, b.kind)
    };
    let mut ranks = Vec::with_capacity(v.len());
    for i in 0..v.len() {
        let r = match i {
            0 => 0,
            _ if same(&v[i - 1], &v[i]) => ranks[i - 1] + 1,
            _ => 0,
        };
        ranks.push(r);
    }
    // The largest round `r` with every rank below it fitting, then as many
    // of round `r` as still fit, in order.
    let mut per_round: Vec<usize> = Vec::new();
    for &r in &ranks {
        if per_round.len() <= r {
            per_round.resize(r + 1, 0);
        }
        per_round[r] += 1;
    }
    let (mut round, mut taken) = (0, 0);
    while round < per_round.len() && taken + per_round[round] <= MAX_FACTS {
        taken += per_round[round];
        round += 1;
    }
    // Round `r` only partly fits: take its facts thread by thread in turn
    // (the first of each thread, then the second, ...), so that the cap
    // does not keep one thread's accesses and drop every other's.
    let room = MAX_FACTS - taken;
    let mut last: Vec<(usize, u32, usize)> = Vec::new();
    let mut per_thread: FxHashMap<u32, usize> = FxHashMap::default();
    for (i, (f, &r)) in v.iter().zip(&ranks).enumerate() {
        if r == round {
            let n = per_thread.entry(f.thread).or_insert(0);
            last.push((*n, f.thread, i));
            *n += 1;
        }
    }
    last.sort_unstable();
    let mut chosen = vec![false; v.len()];
    for &(_, _, i) in last.iter().take(room) {
        chosen[i] = true;
    }
    v.into_iter()
        .zip(ranks)
        .enumerate()
        .filter(|(i, (_, r))| *r < round || chosen[*i])
        .map(|(_, (f, _))| f)
        .collect()
}

/// A total order of facts, for reports and for deterministic caps.
fn fact_order(a: &AccessFact, b: &AccessFact) -> std::cmp::Ordering {
    (
        &a.path,
        a.thread,
        a.func.key(),
        a.span,
        a.kind,
        &a.must,
        &a.may,
        &a.active,
        &a.created,
    )
        .cmp(&(
            &b.path,
            b.thread,
            b.func.key(),
            b.span,
            b.kind,
            &b.must,
            &b.may,
            &b.active,
            &b.created,
        ))
        .then_with(|| (&a.acquired, &a.clean).cmp(&(&b.acquired, &b.clean)))
        .then_with(|| a.phases.cmp(&b.phases))
        .then(a.weak.cmp(&b.weak))
        .then(a.direct_local.cmp(&b.direct_local))
        .then(a.main_ended.cmp(&b.main_ended))
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

fn callee_name(c: &Callee) -> Name {
    match c {
        Callee::Direct(n) => n.clone(),
        Callee::Indirect(_) => Name::from(""),
    }
}

/// Plain index variables used anywhere in an lvalue: `slot[i]->next` -> (i, slot).
fn index_vars_in(e: &Expr, out: &mut Vec<(Name, Name)>, depth: u32) {
    if depth > 16 {
        return;
    }
    match e {
        Expr::Index { base, var, .. } => {
            if let (Some(v), Some(a)) = (var, array_path(base)) {
                out.push((v.clone(), Name::from(a)));
            }
            index_vars_in(base, out, depth + 1);
        }
        Expr::Field { base, .. }
        | Expr::Deref(base)
        | Expr::Cast { value: base, .. }
        | Expr::Offset(base)
        | Expr::AddrOf(base) => index_vars_in(base, out, depth + 1),
        _ => {}
    }
}

/// Removes the elements of `v` that `keep` rejects and returns them (without
/// reallocating when there are none).
fn split_off<T>(v: &mut ThinVec<T>, keep: impl Fn(&T) -> bool) -> Vec<T> {
    if v.iter().all(&keep) {
        return Vec::new();
    }
    let (kept, out): (Vec<T>, Vec<T>) = std::mem::take(v).into_iter().partition(|x| keep(x));
    *v = kept.into();
    out
}

/// The global atomic section of SV-COMP (`__VERIFIER_atomic_begin()` and
/// `__VERIFIER_atomic_*` functions), held as a lock.
fn atomic_section() -> Held {
    Held {
        lock: LocKey::new(Base::Synthetic(Name::from("__VERIFIER_atomic"))),
        shared: false,
    }
}

/// `a[4].f` -> ("a", 0, Some(4)): the first index below a named array (a global or
/// local, through fields: `c.slots[2]` is "c.slots"), its position in the
/// path, and its constant value if it has one.
fn first_index(k: &LocKey) -> Option<(String, usize, Option<i64>)> {
    // Most locations have no index: no name to build then.
    if !k.path.iter().any(|e| matches!(e, Elem::Index(_))) {
        return None;
    }
    let mut name = match &k.base {
        Base::Global(n) => n.to_string(),
        Base::Local { var, .. } => var.to_string(),
        _ => return None,
    };
    for (i, e) in k.path.iter().enumerate() {
        match e {
            Elem::Field(f) => {
                name.push('.');
                name.push_str(f);
            }
            Elem::Index(ix) => return Some((name, i, *ix)),
        }
    }
    None
}

/// `a[4].f` -> ("a", 4, [f]): an element of a named array with a constant
/// index, and the path below it.
fn const_indexed(k: &LocKey) -> Option<(String, i64, &[Elem])> {
    match first_index(k)? {
        (name, at, Some(ix)) => Some((name, ix, &k.path[at + 1..])),
        _ => None,
    }
}

/// `a[*].f` -> ("a", 0): a named array's unknown element, and the position
/// of its index in the path.
fn any_indexed(k: &LocKey) -> Option<(String, usize)> {
    match first_index(k)? {
        (name, at, None) => Some((name, at)),
        _ => None,
    }
}

/// `a` or `c.slots`: the name of an array given as a variable or a field
/// path over one.
fn array_path(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(a) => Some(a.to_string()),
        Expr::Field {
            base,
            field,
            arrow: false,
        } => Some(format!("{}.{field}", array_path(base)?)),
        _ => None,
    }
}

/// Is a symbolic-lock path a region tag (see `State::syms`)?
fn is_region(path: &[Elem]) -> bool {
    matches!(path.first(), Some(Elem::Field(f)) if f.starts_with('#'))
}

/// The lock a region tag `[#arr, @lock, [*], rest..]` stands for: the element
/// of the lock array with the index of the data array.
fn region_lock(tag: &[Elem]) -> Option<LocKey> {
    let (Some(Elem::Field(arr)), Some(Elem::Field(lock))) = (tag.first(), tag.get(1)) else {
        return None;
    };
    Some(index_lock(
        lock.strip_prefix('@')?,
        arr.strip_prefix('#')?,
        tag.get(3..).unwrap_or_default(),
    ))
}

/// `L[index of A]` (then `rest`): the element of lock array `L` with the
/// index of the element of data array `A` being accessed. Every way of
/// holding such a lock (index variable, constant index, region tag, pointer
/// to an element) must name it alike, so they all build it here.
fn index_lock(lock_array: &str, data_array: &str, rest: &[Elem]) -> LocKey {
    LocKey {
        base: Base::Synthetic(Name::from(format!("{lock_array}[index of {data_array}]"))),
        path: rest.to_vec(),
    }
}

fn address_taken_has(v: &[Name], x: &Name) -> bool {
    v.iter().any(|y| y == x)
}

fn merge_abrupt(out: &mut Out, o: &Out) {
    out.brk = join_b(out.brk.take(), o.brk.clone());
    out.cont = join_b(out.cont.take(), o.cont.clone());
    out.ret = join_b(out.ret.take(), o.ret.clone());
}

/// Is the place a non-static local of the frame whose address is never
/// taken, or a field of one (`s.a.b`)? No other frame or thread can reach it.
fn frame_private(fr: &Frame, e: &Expr) -> bool {
    match e {
        Expr::Var(x) => {
            fr.locals.get(x).is_some_and(|t| !t.is_static) && !fr.address_taken.contains(x)
        }
        Expr::Field {
            base, arrow: false, ..
        } => frame_private(fr, base),
        _ => false,
    }
}

/// Does the place name a variable of the current frame (or a global)
/// syntactically? `*&x`, `(&s)->f` and a local array handed to a library
/// call (`snprintf(buf, ...)`, which writes `*buf`) count: they denote this
/// frame's instance whatever other frames do.
fn is_direct_in(fr: &Frame, e: &Expr) -> bool {
    match e {
        Expr::Var(_) => true,
        Expr::Field {
            base, arrow: false, ..
        } => is_direct_in(fr, base),
        Expr::Field {
            base, arrow: true, ..
        } => addresses_direct(fr, base),
        Expr::Index { base, .. } => is_direct_in(fr, base),
        Expr::Deref(v) => addresses_direct(fr, v),
        Expr::Cast { value, .. } => is_direct_in(fr, value),
        _ => false,
    }
}

/// Is this pointer value the address of a direct place (`&x`, a local array)?
fn addresses_direct(fr: &Frame, v: &Expr) -> bool {
    match v {
        Expr::Cast { value, .. } => addresses_direct(fr, value),
        Expr::AddrOf(inner) => is_direct_in(fr, inner),
        Expr::Var(a) => fr
            .locals
            .get(a)
            .map(|t| t.array && !t.is_static)
            .unwrap_or(false),
        _ => false,
    }
}

/// Visits every statement, nested ones included.
pub fn visit_stmts(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                visit_stmts(cond, f);
                visit_stmts(then, f);
                visit_stmts(els, f);
            }
            Stmt::Loop { cond, body, .. } => {
                visit_stmts(cond, f);
                visit_stmts(body, f);
            }
            Stmt::Switch { cond, arms, .. } => {
                visit_stmts(cond, f);
                for a in arms {
                    visit_stmts(a, f);
                }
            }
            _ => {}
        }
    }
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

/// Visits every call, nested ones included.
pub fn visit_calls(stmts: &[Stmt], f: &mut dyn FnMut(&Call)) {
    visit_stmts(stmts, &mut |s| {
        if let Stmt::Call(c) = s {
            f(c)
        }
    });
}

/// The function an argument names: `f`, `&f` or `(void *(*)(void *))f`.
fn function_name(e: &Expr) -> Option<Name> {
    match e {
        Expr::Var(n) => Some(n.clone()),
        Expr::AddrOf(inner) | Expr::Cast { value: inner, .. } => function_name(inner),
        _ => None,
    }
}
