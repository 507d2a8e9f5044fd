//! Incremental updates of the thread walk.
//!
//! The walk interprets the whole program, and running it again after every
//! keystroke costs hundreds of milliseconds on large programs. Yet an edit
//! inside one function body usually leaves the entry state of each of its
//! calling contexts, and its exit state, as they were. This module keeps the
//! previous revision's walk (its node graph: one node per function and calling
//! context, holding the facts recorded by the function's own statements) and,
//! when exactly one function summary changed, walks only that function's
//! nodes again, replaying callees from the memo. The facts of the revision are
//! then those of the nodes reachable from the thread roots.
//!
//! An update is taken only when it equals a walk from scratch:
//! - the program can start a thread (one that cannot is not walked at all,
//!   see `walk::analyse`);
//! - the program (functions, globals, types), the pointer store, the edited
//!   function's parameters, return values and thread creations are unchanged
//!   (the store is kept without building it again when the edited function's
//!   new pass over it gives what its last pass gave: it is then a fixpoint
//!   for the new text too, the same a build from scratch finds unless the
//!   old text's stores fed themselves, `x->next = y; y = x->next` kept by
//!   a `y` no longer assigned otherwise);
//! - every re-walked node ends in the same exit state, or its callers are
//!   walked again too (bottom-up, each on its own unchanged entry state,
//!   replaying the changed context from the memo; at most
//!   [`MAX_CALLER_REWALKS`], and never a thread's entry), and creates the
//!   same threads: its own statements create none, a callee that creates some is
//!   replayed only where a walk from scratch replays it or walks it afresh
//!   (first walked during the node's own first walk), and the reachable
//!   nodes replay the same creations (thread uniqueness depends on it);
//! - the re-walk changes nothing shared by the whole walk (sites, threads,
//!   heap-in-loop sites, protected locks, budgets), and reads nothing that
//!   changed after the node was first walked (epochs);
//! - the re-walk runs on the node's original call stack, replays no node
//!   with a recursion cut below it that was first walked after it, and
//!   replays no node reaching a function on the stack;
//! - no node first walked below the old node survives elsewhere, and no node
//!   with effects drops out.
//!
//! Otherwise the walk runs from scratch. With `RACELENS_VERIFY_WALK=1` (or
//! [`set_verify`]) every update is checked against a full walk.

use super::fact_counts::Counts;
use super::memo::Node;
use super::{add_vals, Vals, WalkData, Walker, CONTEXT_BUDGET};
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary, Program};
use crate::facts::AccessFact;
use crate::facts::ThreadAnalysis;
use crate::model::{Base, Elem, LocKey};
use racelens_syntax::{Callee, Expr, Name, Stmt, TypeInfo};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Programs whose walks are kept at once: the newest walk of each, for the
/// program walked last and the one whose walk costs most to redo among the
/// others (a workspace of several programs edits them in turn). Each is a
/// whole walk (about 80 MB on mt-daapd; memcached's project, with one walk
/// kept for each of its programs, took 817 MB after open against 448 MB
/// with two). Keeping the walk before an edit too, so that its undo finds
/// it, doubled the server's memory after the first edit that walked from
/// scratch (issue 26); such an undo now walks from scratch again.
///
/// Evicting the oldest instead dropped memcached's 9 s walk at open, since
/// its two small test programs were walked after it: every first edit of
/// memcached.c then walked from scratch.
const KEPT: usize = 2;

/// A finished walk and the inputs it read.
pub(super) struct Snapshot {
    prog: Arc<Program>,
    summaries: FxHashMap<FunctionId, Arc<FunctionSummary>>,
    data: WalkData,
    result: ThreadAnalysis,
}

impl Snapshot {
    pub(super) fn new(
        prog: Arc<Program>,
        summaries: FxHashMap<FunctionId, Arc<FunctionSummary>>,
        mut data: WalkData,
        result: &ThreadAnalysis,
    ) -> Self {
        // What the next update would count first (51 ms on mt-daapd after
        // a walk from scratch): counted here, off the edit's path.
        if data.counts.is_none() {
            data.counts = Some(Counts::of(&data.nodes, &reachable(&data)));
        }
        Snapshot {
            prog,
            summaries,
            data,
            result: result.clone(),
        }
    }

    /// What walking this program again costs: the steps of all its threads.
    fn cost(&self) -> u64 {
        self.data.thread_steps.iter().sum()
    }
}

/// Which of the kept walks to drop for a new one: the cheapest to redo
/// (the oldest among equals). The new walk itself is always kept: its
/// program is the one being edited.
fn evicted(costs: &[u64]) -> Option<usize> {
    (0..costs.len()).min_by_key(|&i| costs[i])
}

/// The kept walks, each with the key of its program's workspace, oldest
/// first.
fn kept() -> &'static Mutex<Vec<(salsa::Id, Snapshot)>> {
    static KEPT_WALKS: OnceLock<Mutex<Vec<(salsa::Id, Snapshot)>>> = OnceLock::new();
    KEPT_WALKS.get_or_init(Default::default)
}

static VERIFY: AtomicBool = AtomicBool::new(false);
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Keep walks for incremental updates (on by default; a one-shot check
/// turns it off and saves the bookkeeping).
pub fn set_incremental(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

pub(super) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}
static UPDATES: AtomicUsize = AtomicUsize::new(0);
static FULL: AtomicUsize = AtomicUsize::new(0);

/// (walks updated incrementally, walks from scratch) since the process began.
pub fn stats() -> (usize, usize) {
    (
        UPDATES.load(Ordering::Relaxed),
        FULL.load(Ordering::Relaxed),
    )
}

pub(super) fn count(updated: bool) {
    let c = if updated { &UPDATES } else { &FULL };
    c.fetch_add(1, Ordering::Relaxed);
}

/// Check every incremental update against a walk from scratch (for tests).
pub fn set_verify(on: bool) {
    VERIFY.store(on, Ordering::Relaxed);
}

pub(super) fn verifying() -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    VERIFY.load(Ordering::Relaxed)
        || *ENV.get_or_init(|| std::env::var_os("RACELENS_VERIFY_WALK").is_some())
}

/// Takes the kept walk of program `ws`, if it has the same program and
/// functions.
pub(super) fn take(
    ws: salsa::Id,
    prog: &Arc<Program>,
    summaries: &FxHashMap<FunctionId, Arc<FunctionSummary>>,
) -> Option<Snapshot> {
    let mut kept = kept().lock().unwrap_or_else(|e| e.into_inner());
    let i = kept.iter().position(|(k, s)| {
        *k == ws
            && s.summaries.len() == summaries.len()
            && summaries.keys().all(|f| s.summaries.contains_key(f))
            && (Arc::ptr_eq(&s.prog, prog) || *s.prog == **prog)
    })?;
    Some(kept.remove(i).1)
}

/// Keeps a walk of program `ws` for the next revision, in place of the
/// one kept before.
pub(super) fn keep(ws: salsa::Id, snap: Snapshot) {
    let mut kept = kept().lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(k, _)| *k != ws);
    if kept.len() >= KEPT {
        let costs: Vec<u64> = kept.iter().map(|(_, s)| s.cost()).collect();
        if let Some(i) = evicted(&costs) {
            kept.remove(i);
        }
    }
    kept.push((ws, snap));
}

/// How many walks are kept, over every program of the process.
pub fn kept_walks() -> usize {
    kept().lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// Drops the walk kept for program `ws`, before one from scratch replaces
/// it (two whole walks at once would set the server's peak memory).
pub(super) fn forget(ws: salsa::Id) {
    let mut kept = kept().lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(k, _)| *k != ws);
}

/// Updates `snap` to the current summaries, or says why it cannot (the
/// snapshot is then dropped: the walk runs from scratch).
pub(super) fn update(
    db: &dyn salsa::Database,
    prog: &Arc<Program>,
    summaries: &FxHashMap<FunctionId, Arc<FunctionSummary>>,
    mut snap: Snapshot,
) -> Result<(ThreadAnalysis, Snapshot), &'static str> {
    let t_start = std::time::Instant::now();
    let changed: Vec<FunctionId> = summaries
        .iter()
        .filter(|(f, s)| {
            let old = &snap.summaries[*f];
            !Arc::ptr_eq(old, s) && **old != ***s
        })
        .map(|(f, _)| *f)
        .collect();
    if changed.is_empty() {
        snap.summaries = summaries.clone();
        let result = snap.result.clone();
        return Ok((result, snap));
    }
    let [f] = changed[..] else {
        if std::env::var_os("RACELENS_TIMING").is_some() {
            let names: Vec<String> = changed
                .iter()
                .take(8)
                .map(|f| f.name(db).to_string())
                .collect();
            eprintln!(
                "racelens: walk: {} functions changed: {names:?}",
                changed.len()
            );
        }
        return Err("several functions changed");
    };
    if std::env::var_os("RACELENS_TIMING").is_some() {
        eprintln!("racelens: walk: edited `{}`", f.name(db));
    }
    if verifying() && std::env::var_os("RACELENS_VERIFY_DUMP").is_some() {
        let p = crate::units::file_view(db, f.ws(db).universe(db), f.file(db));
        eprintln!(
            "racelens: verify: edited `{}`\n<<<FILE\n{}\nFILE>>>",
            f.name(db),
            p.text
        );
    }
    let (old, new) = (&snap.summaries[&f], &summaries[&f]);
    if old.ir.params != new.ir.params {
        return Err("parameters changed");
    }
    let creates = |s: &FunctionSummary| {
        s.models
            .values()
            .any(|m| matches!(m, CallModel::Create { .. }))
    };
    if creates(old) != creates(new) {
        return Err("thread creation changed");
    }
    // As a thread's entry, a function that calls through a pointer makes a
    // creation site per launch base (`Walker::site_key`).
    let entry = snap
        .result
        .table
        .threads
        .iter()
        .any(|t| t.entry == *f.name(db));
    if entry && super::spawn::calls_through_pointer(old) != super::spawn::calls_through_pointer(new)
    {
        return Err("a thread entry's call through a pointer came or went");
    }
    let mut w = Walker {
        db,
        prog,
        d: std::mem::take(&mut snap.data),
        untracked: Default::default(),
        own_vars: Default::default(),
        fork_vars: Default::default(),
        array_fields: Default::default(),
        libevent: Default::default(),
        handler_runs: Default::default(),
    };
    // Summaries read by the previous revision's walk, and the frames built
    // from them: the edited function's are stale. A frame base is a fact of
    // its function's summary and the program alone (`frames.rs`), and the
    // program is unchanged (`take`): the other functions' bases stay, which
    // saves about a quarter of a pointer store rebuild.
    w.d.summaries.borrow_mut().clear();
    w.d.frame_bases.borrow_mut().retain(|g, _| *g != f);
    // Callers apply a lock wrapper without walking it (no node of the
    // edited function holds their use of it).
    // Binary semaphores and counter joins read other functions' text
    // (`semaphores.rs`, `counters.rs`).
    let fname = f.name(w.db);
    let names = &w.d.text_names;
    if !names.is_empty()
        && (super::counters::summary_mentions(fname, old, names)
            || super::counters::summary_mentions(fname, new, names))
    {
        return Err("a semaphore's uses changed");
    }
    if super::counters::counter_inputs_changed(
        fname,
        old,
        new,
        &w.d.counter_names,
        &w.d.counter_entries,
    ) {
        return Err("a counter join's inputs changed");
    }
    // Globals judged to stay zero, or not, read every function's writes.
    super::constants::edit(
        &w.d.constants.borrow(),
        w.d.written.get_mut(),
        &w.d.zero_params.borrow(),
        fname,
        old,
        new,
    )?;
    // So do once flags and lazily set globals (`once.rs`).
    super::once::edit(&w, fname, old, new)?;
    // A hand-made lock's verdict reads every function of its shape.
    if super::gates::gate_shape(old, prog).is_some()
        || super::gates::gate_shape(new, prog).is_some()
    {
        return Err("a hand-made lock's function changed");
    }
    // Calls through unresolved pointers read every function's casts, and
    // the arguments of calls to functions that cast their parameters.
    if w.laundering_changed(old, new) {
        return Err("functions cast to integers changed");
    }
    let lock_wrap = |s: &FunctionSummary| w.lock_wrap_of(s, super::lock_wrappers::MAX_NESTING);
    if lock_wrap(old) != lock_wrap(new) {
        return Err("lock wrapper changed");
    }
    w.d.lock_wrappers.borrow_mut().clear();
    // Which functions a call may reach decided which locals kept holding a
    // refreshed site's newest object across calls (`calls.rs`).
    // Calls through pointers reach the functions used as values.
    let values_changed = super::store::value_names(old) != super::store::value_names(new);
    let starts = super::semaphores::values_but_starts;
    if values_changed || starts(old) != starts(new) {
        *w.d.value_functions.borrow_mut() = None;
        // A signalling semaphore's verdict read which functions are values
        // other than thread start routines.
        if w.d
            .semaphores
            .borrow()
            .values()
            .any(|v| matches!(v, super::semaphores::Verdict::Signal(_)))
        {
            return Err("functions used as values changed");
        }
    }
    // The edited function's calls may be others now.
    w.d.call_edges.borrow_mut().remove(&f);
    if !w.d.may_allocate.borrow().is_empty() && (callees(old) != callees(new) || values_changed) {
        let answers: Vec<((FunctionId, Name), bool)> =
            w.d.may_allocate.borrow_mut().drain().collect();
        for ((g, func), v) in answers {
            let site = Base::Heap { func, call: 0 };
            if w.may_allocate(g, &site) != v {
                return Err("the calls of a function changed what a call may allocate");
            }
        }
    }
    // Inputs shared by every frame: the pointer store and return values.
    // They read only the function's declarations, assignments, returns and
    // calls; when those are unchanged (an edit that moved code or changed
    // accesses and locks), so are they.
    let timing = std::env::var_os("RACELENS_TIMING").is_some();
    let t0 = std::time::Instant::now();
    let t_checks = t0 - t_start;
    if pointer_inputs(old, prog) != pointer_inputs(new, prog) {
        // A wrapper's verdict at any nesting level may feed its callers',
        // and reads whether the functions it calls keep their parameters:
        // every verdict given is asked again.
        // Unless the edited function's verdicts and what it puts in
        // function-pointer slots are as they were: every other verdict
        // reads the edited function only through those, and stands.
        let old_verdicts: Vec<((FunctionId, u8), bool)> =
            w.d.wrappers.borrow_mut().drain().collect();
        w.d.alloc_slots.borrow_mut().clear();
        let (old_s, new_s) = (&snap.summaries[&f], &summaries[&f]);
        let slots_same = w.slot_puts(old_s) == w.slot_puts(new_s);
        if !slots_same {
            *w.d.alloc_slot_index.borrow_mut() = None;
        }
        let (own, others): (Vec<_>, Vec<_>) =
            old_verdicts.into_iter().partition(|((g, _), _)| *g == f);
        if own.iter().any(|&((g, l), v)| w.alloc_wrapper_at(g, l) != v) {
            return Err("allocation wrapper changed");
        }
        if slots_same {
            let mut cache = w.d.wrappers.borrow_mut();
            for (k, v) in others {
                cache.entry(k).or_insert(v);
            }
        } else if others
            .iter()
            .any(|&((g, l), v)| w.alloc_wrapper_at(g, l) != v)
        {
            return Err("allocation wrapper changed");
        }
        // Which functions' stores are allocator bookkeeping decided what
        // their frames published; a free wrapper's verdict reads the
        // wrappers it calls and whether its callees keep their parameters.
        // Only the edited function's verdict and those that read other
        // functions' bodies can have changed.
        w.d.free_params.borrow_mut().clear();
        let asked: Vec<(FunctionId, super::free_wrappers::Bookkeeping)> = {
            let mut cache = w.d.allocator_internal.borrow_mut();
            let again: Vec<FunctionId> = cache
                .iter()
                .filter(|&(&g, &v)| g == f || v != super::free_wrappers::Bookkeeping::No)
                .map(|(&g, _)| g)
                .collect();
            again
                .into_iter()
                .map(|g| (g, cache.remove(&g).unwrap()))
                .collect()
        };
        for (g, v) in asked {
            let now = w.bookkeeping(g);
            let yes = super::free_wrappers::Bookkeeping::Yes;
            if (now == yes) != (v == yes) {
                return Err("allocator bookkeeping changed");
            }
            w.d.allocator_internal.borrow_mut().insert(g, now);
        }
        // What a wrapper's call copies (`copied_into`).
        let passed: Vec<(FunctionId, Arc<[usize]>)> = w.d.passed_on.borrow_mut().drain().collect();
        if passed.iter().any(|(g, v)| w.passed_on_params(*g, 0) != *v) {
            return Err("what an allocation wrapper gives back changed");
        }
        let old_ret = w.d.returns.borrow().get(&f).cloned();
        // The edited function's new pass over the built store gives what its
        // last pass gave: the store stands.
        w.d.frames.borrow_mut().retain(|(g, _), _| *g != f);
        w.d.returns.borrow_mut().remove(&f);
        if !w.same_store_pass(f) {
            // A rebuild starts from no store and no passes.
            let (store, from) = (
                std::mem::take(&mut w.d.store),
                std::mem::take(&mut w.d.store_from),
            );
            w.d.store_passes.clear();
            w.d.store_params.clear();
            w.d.store_fn_params.clear();
            w.d.store_call_args.clear();
            w.d.frames.borrow_mut().clear();
            w.d.returns.borrow_mut().clear();
            w.build_store();
            if w.d.store != store || w.d.store_from != from {
                return Err("pointer store changed");
            }
            w.d.frames.borrow_mut().clear();
            w.d.returns.borrow_mut().clear();
        }
        if let Some(old_ret) = old_ret {
            if w.return_vals(f) != old_ret {
                return Err("return values changed");
            }
        }
        // What a join hands its caller (`store.rs`, `join_result`).
        let joined = w.d.joined_returns.borrow().get(&f).cloned();
        if let Some(old) = joined {
            if w.thread_results(f) != old {
                return Err("a joined thread's return values changed");
            }
        }
    } else {
        // Frames of the edited function hold its old summary.
        w.d.frames.borrow_mut().retain(|(g, _), _| *g != f);
    }
    // Which loop runs which libevent handler read every registration and
    // the arguments its function's callers pass (`libevent.rs`).
    if let Some(old_plan) = w.d.libevent_plan.clone() {
        if *w.libevent_plan() != *old_plan {
            return Err("libevent handlers changed");
        }
    }
    let t_store = t0.elapsed();

    let old_reach = reachable(&w.d);
    let fnodes: Vec<u32> = (0..w.d.nodes.len() as u32)
        .filter(|&n| w.d.nodes[n as usize].fid == f && old_reach[n as usize])
        .collect();
    let mut counts = match w.d.counts.take() {
        Some(c) => c,
        None => Counts::of(&w.d.nodes, &old_reach),
    };
    let content = |d: &WalkData, n: u32| -> NodeContent {
        let node = &d.nodes[n as usize];
        (node.facts.clone(), node.prefixes.clone())
    };
    let mut old_content: Vec<NodeContent> = fnodes.iter().map(|&n| content(&w.d, n)).collect();
    // Nodes that reach an edited one: replaying them would hide a recursion.
    w.d.forbidden = callers(&w.d, &fnodes);
    let mut old_below: Vec<FxHashSet<u32>> = fnodes.iter().map(|&n| below(&w.d, n)).collect();
    let old_replayed = w.d.replayed_sites.clone();
    w.d.facts.clear();
    w.d.struct_prefixes.clear();
    let t1 = std::time::Instant::now();
    // Function values its old statements stored may be gone: its nodes
    // note theirs again from none (see the check below).
    let old_fn_cells = w.d.fn_cells.clone();
    let stored_before = w.d.fn_cells_from.remove(&f).is_some();
    // Every context walked again, the edited function's first, then the
    // callers of those whose exit state changed (see the module doc).
    let mut rewalked: Vec<u32> = fnodes.clone();
    let mut stale: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
    for &n in &fnodes {
        if rewalk(&mut w, n)? {
            stale.extend(parents(&w.d, n, &old_reach)?);
        }
    }
    // Bottom-up (a context's callees were first walked after it): each
    // caller replays the changed context from the memo, with its new exit.
    while let Some(p) = stale.pop_last() {
        if rewalked.len() >= fnodes.len() + MAX_CALLER_REWALKS {
            return Err("the exit state changed for too many callers");
        }
        if rewalked.contains(&p) {
            return Err("the exit state of a re-walked context changed");
        }
        // Replaying a context still to be walked again, or one that reaches
        // one, would replay a stale exit.
        let pending: Vec<u32> = stale.iter().copied().chain([p]).collect();
        w.d.forbidden = callers(&w.d, &pending);
        old_content.push(content(&w.d, p));
        old_below.push(below(&w.d, p));
        rewalked.push(p);
        if rewalk(&mut w, p)? {
            stale.extend(parents(&w.d, p, &old_reach)?);
        }
    }
    // Walk-wide facts that only grow during a walk: an update that changed
    // them would keep stale entries a walk from scratch drops.
    if w.d.fn_cells != old_fn_cells {
        return Err("function values stored into memory changed");
    }
    if stored_before {
        let mut cells: FxHashMap<LocKey, Vals> = FxHashMap::default();
        for from in w.d.fn_cells_from.values() {
            for (k, v) in from {
                add_vals(cells.entry(k.clone()).or_default(), v.iter().cloned());
            }
        }
        if cells != old_fn_cells {
            return Err("function values stored into memory changed");
        }
    }
    // Compacting below renumbers nodes but keeps which are reachable: the
    // unpublished sites stay as computed here.
    let (private, escaped, inputs) = w.private_and_escaped(&reachable(&w.d));
    if escaped != snap.result.table.escaped_locals {
        return Err("locals escaping to other threads changed");
    }
    if w.held_addresses() != w.d.held_addresses {
        return Err("addresses of locals held outside their frames changed");
    }
    if w.global_heap(&escaped) != snap.result.table.global_heap {
        return Err("heap sites reached from globals changed");
    }
    // With the store, the thread arguments and the escaped locals as they
    // were (and so the locals only thread arguments lead to), of
    // `ThreadTable::shared_heap` only the walk's publications may change.
    let arg_only = &snap.result.table.arg_only_locals;
    if w.published_otherwise(&inputs, &escaped, arg_only) != w.d.published_otherwise {
        return Err("heap sites published otherwise than down to new threads changed");
    }
    drop(inputs);
    let t_walk = t1.elapsed();
    w.d.rewalk = None;
    w.d.forbidden.clear();
    w.d.facts.clear();
    w.d.struct_prefixes.clear();

    let new_reach = reachable(&w.d);
    if rewalked.iter().any(|&n| !new_reach[n as usize]) {
        return Err("an edited context dropped out");
    }
    // Thread uniqueness (kept from the last result) depends on which
    // creations are replayed: the reachable nodes must replay the same.
    let mut replayed = w.d.root_replayed.clone();
    for (i, node) in w.d.nodes.iter().enumerate() {
        if new_reach[i] {
            replayed.extend(node.replayed.iter().copied());
        }
    }
    if replayed != old_replayed {
        return Err("the threads replayed changed");
    }
    w.d.replayed_sites = replayed;
    for (i, &n) in rewalked.iter().enumerate() {
        let now = below(&w.d, n);
        if old_below[i]
            .iter()
            .any(|&x| x > n && !now.contains(&x) && new_reach[x as usize])
        {
            return Err("a callee context moved");
        }
    }
    for (i, node) in w.d.nodes.iter().enumerate() {
        if old_reach.get(i).copied().unwrap_or(false) && !new_reach[i] && node.effects {
            return Err("a context with effects dropped out");
        }
    }
    // A function out of contexts walks the next one once a context drops out.
    let old_counts = contexts(&w.d, &old_reach);
    let new_counts = contexts(&w.d, &new_reach);
    for (k, &n) in &old_counts {
        if n >= CONTEXT_BUDGET && new_counts.get(k).copied().unwrap_or(0) < n {
            return Err("a function out of contexts lost one");
        }
    }
    // The reachable facts and prefixes change by the re-walked nodes' old
    // and new content, and by the nodes that dropped out or came in.
    for (i, &n) in rewalked.iter().enumerate() {
        counts.remove(&old_content[i].0, &old_content[i].1);
        let node = &w.d.nodes[n as usize];
        counts.add(&node.facts, &node.prefixes);
    }
    let walked_again: FxHashSet<u32> = rewalked.iter().copied().collect();
    for (i, node) in w.d.nodes.iter().enumerate() {
        let was = old_reach.get(i).copied().unwrap_or(false);
        if walked_again.contains(&(i as u32)) || was == new_reach[i] {
            continue;
        }
        match was {
            true => counts.remove(&node.facts, &node.prefixes),
            false => counts.add(&node.facts, &node.prefixes),
        }
    }
    counts.within_bounds()?;
    // Unreachable contexts go, and the rest is renumbered in the order a
    // walk from scratch would create them.
    compact(&mut w.d);
    let reach = reachable(&w.d);
    if private != snap.result.table.private_heap {
        return Err("heap sites published changed");
    }
    let merged: Vec<u32> = (0..snap.result.table.threads.len() as u32)
        .filter(|&t| snap.result.table.threads[t as usize].merged_launches)
        .collect();
    if w.merged_threads(&reach) != merged {
        return Err("a launcher's callees changed");
    }
    let owning: Vec<u32> = (0..snap.result.table.threads.len() as u32)
        .filter(|&t| snap.result.table.threads[t as usize].owns_arg)
        .collect();
    if w.owning_threads(&reach) != owning {
        return Err("a thread's argument is handed fresh or not");
    }
    let per_site: Vec<u32> = (0..snap.result.table.threads.len() as u32)
        .filter(|&t| snap.result.table.threads[t as usize].arg_per_site)
        .collect();
    if w.per_site_threads(&reach) != per_site {
        return Err("a thread's argument is handed fresh or not");
    }
    if w.held_members(&reach, &snap.result.table.threads, &escaped) != snap.result.table.held {
        return Err("members that hold only their owner's objects changed");
    }
    let speculative: Vec<u32> = (0..snap.result.table.threads.len() as u32)
        .filter(|&t| snap.result.table.threads[t as usize].speculative)
        .collect();
    if w.speculative_threads() != speculative {
        return Err("callbacks handed to unknown code changed");
    }
    let t_graph = t1.elapsed() - t_walk;

    let t2 = std::time::Instant::now();
    w.d.incomplete.clear();
    for node in &w.d.nodes {
        for (f, why) in &node.marks {
            w.d.incomplete.entry(*f).or_insert_with(|| why.to_string());
        }
    }
    let mut result = snap.result;
    // Which escaped locals a thread's instances may share depends on the
    // functions it runs, which the edit may change.
    if !result.table.escaped_locals.is_empty() {
        for i in 0..result.table.threads.len() {
            let handed = w.d.arg_reach.get(i).cloned().unwrap_or_default();
            let locals = w.frame_locals(i as u32, &reach, &result.table.escaped_locals, &handed);
            let th = &result.table.threads[i];
            if (&th.arg_locals, &th.outer_locals) != (&locals.0, &locals.1) {
                let th = &mut std::sync::Arc::make_mut(&mut result.table).threads[i];
                (th.arg_locals, th.outer_locals) = locals;
            }
        }
    }
    // Which helpers' parameters hold a slot thread's number is a fact of
    // all summaries (`slots::number_params`): the edit may add or remove a
    // call that decides it.
    for i in 0..result.table.threads.len() {
        let params = match result.table.threads[i].slot {
            Some((f, arg)) => w.number_params(f, arg),
            None => Vec::new(),
        };
        if params != result.table.threads[i].slot_params {
            std::sync::Arc::make_mut(&mut result.table).threads[i].slot_params = params;
        }
    }
    let open = |b: &Base, p: &(Vec<Elem>, Name)| {
        super::held_addresses::reachable_by_type(&w.d.held_addresses, &prog.structs, b, p)
    };
    result.locations = counts.locations(result.locations, &prog.fn_rank, &open);
    if w.injective_arrays(&reach, &result.locations) != result.table.injective {
        return Err("arrays whose elements each hold a fresh object changed");
    }
    result.incomplete = {
        let mut v: Vec<(FunctionId, String)> = w.d.incomplete.clone().into_iter().collect();
        v.sort_by_key(|(f, _)| f.key());
        v
    };
    w.d.counts = Some(counts);
    // A plan this update needed first (its edit added a libevent call) is
    // the one the next update compares with.
    if let Some(p) = w.libevent.get() {
        w.d.libevent_plan = Some(p.clone());
    }
    if timing {
        eprintln!(
            "racelens: walk: updated {} contexts of `{}` ({} callers): checks {:?}, store {:?}, re-walk {:?}, graph {:?}, facts {:?}",
            fnodes.len(),
            fname,
            rewalked.len() - fnodes.len(),
            t_checks,
            t_store,
            t_walk,
            t_graph,
            t2.elapsed(),
        );
    }
    let snap = Snapshot::new(prog.clone(), summaries.clone(), w.d, &result);
    Ok((result, snap))
}

/// What frames, the pointer store and return values read from a function,
/// without positions.
#[derive(PartialEq)]
enum PointerInput {
    Decl(Name, TypeInfo),
    Assign(Expr, Expr),
    Return(Option<Expr>),
    /// A call and its arguments: the store passes them to the callee's
    /// parameters (`StorePass::passed`).
    Call(u32, Callee, Vec<Expr>),
}

/// An assignment to a name that is neither a local nor a global (code being
/// typed) has no place: it reads nothing into the store or a frame.
fn pointer_inputs<'s>(
    s: &'s FunctionSummary,
    prog: &Program,
) -> (Vec<PointerInput>, &'s [Name], &'s BTreeMap<u32, CallModel>) {
    let mut locals: FxHashSet<Name> = s.ir.params.iter().map(|p| p.name.clone()).collect();
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        if let Stmt::Decl(d) = st {
            locals.insert(d.name.clone());
        }
    });
    let mut v = Vec::new();
    crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
        Stmt::Decl(d) => v.push(PointerInput::Decl(d.name.clone(), d.ty.clone())),
        Stmt::Assign {
            lhs: Expr::Var(x), ..
        } if !locals.contains(x) && prog.global(x).is_none() => {}
        Stmt::Assign { lhs, rhs } => v.push(PointerInput::Assign(lhs.clone(), rhs.clone())),
        Stmt::Return { value, .. } => v.push(PointerInput::Return(value.clone())),
        _ => {}
    });
    crate::visit::visit_calls(&s.ir.body, &mut |c| {
        v.push(PointerInput::Call(c.id, c.callee.clone(), c.args.clone()))
    });
    (v, &s.ir.address_taken, &s.models)
}

type NodeContent = (Vec<(Base, AccessFact)>, Vec<(Base, Vec<(Vec<Elem>, Name)>)>);

/// At most this many callers walked again after an exit state changed
/// (each costs a walk of its body, its callees replayed from the memo).
const MAX_CALLER_REWALKS: usize = 24;

/// The reachable contexts that call `n`, which end differently now: a
/// thread's entry (whose exit ends the thread) has none to walk again.
fn parents(d: &WalkData, n: u32, reach: &[bool]) -> Result<Vec<u32>, &'static str> {
    if d.thread_roots.iter().flatten().any(|&r| r == n) {
        return Err("the exit state of a thread's entry changed");
    }
    let out: Vec<u32> = d
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, node)| reach.get(*i).copied().unwrap_or(false) && node.children.contains(&n))
        .map(|(i, _)| i as u32)
        .collect();
    match out.is_empty() {
        true => Err("the exit state changed"),
        false => Ok(out),
    }
}

/// Walks node `n` again, in its original context: whether its exit state
/// changed (the threads it creates and the heap it observes may not).
fn rewalk(w: &mut Walker, n: u32) -> Result<bool, &'static str> {
    let node = &w.d.nodes[n as usize];
    // A re-walk that no longer records the node's pending join would leave
    // it standing; one that records it bails anyway.
    if w.d.pending_join_fns.contains(&node.fid) {
        return Err("the function joins a thread a descendant creates");
    }
    let t = node.thread as usize;
    let (fid, state, bindings) = (node.fid, node.state.clone(), node.bindings.clone());
    let old_exit = node.exit.clone();
    let old_sites = set_of(&node.sites);
    w.d.rewalk_end = node.end;
    w.d.thread = t as u32;
    w.d.memo = std::mem::take(&mut w.d.thread_memos[t]);
    w.d.contexts = std::mem::take(&mut w.d.thread_contexts[t]);
    w.d.steps = w.d.thread_steps[t];
    w.d.stack = node.stack.clone();
    w.d.loop_depth = node.loop_depth;
    w.d.node_stack.clear();
    w.d.sites_stack.clear();
    w.d.last_ctx = None;
    w.d.rewalk = Some(node.epoch);
    w.d.rewalk_node = n;
    w.d.encountered.clear();
    let node = &mut w.d.nodes[n as usize];
    node.children.clear();
    node.replayed.clear();
    node.facts.clear();
    node.prefixes.clear();
    node.marks.clear();
    node.dep = 0;
    node.cut_up = 0;
    node.effects = false;
    node.allocs.clear();
    node.published.clear();
    node.handed.clear();
    node.stale_spawns.clear();
    node.unshared_spawns.clear();
    node.held.clear();
    node.elem_writes.clear();
    node.merges = false;
    node.nested.clear();
    // Callers may have reused the node for entry states that differ from its
    // own in what it did not observe of the heap (see `Walker::memo_hit`).
    let old_heap = (std::mem::take(&mut node.heap_obs), node.allocates);
    let old_refresh = std::mem::take(&mut node.refresh_obs);
    node.allocates = false;
    let frame = w.frame_cached(fid, &bindings);
    let (out, sites) = w.walk_node(n, &frame, state);
    let exit = w.exit_state(out);
    w.d.thread_memos[t] = std::mem::take(&mut w.d.memo);
    w.d.thread_contexts[t] = std::mem::take(&mut w.d.contexts);
    w.d.thread_steps[t] = w.d.steps;
    if let Some(why) = w.d.bailed {
        return Err(why);
    }
    // Its callees create the same threads (new creations bail above).
    if set_of(&sites) != old_sites {
        return Err("the threads it creates changed");
    }
    let node = &w.d.nodes[n as usize];
    if (&node.heap_obs, node.allocates, &node.refresh_obs)
        != (&old_heap.0, old_heap.1, &old_refresh)
    {
        return Err("the heap sites the function observes changed");
    }
    if exit == old_exit {
        return Ok(false);
    }
    // Callers replay it from the memo with this exit.
    w.d.nodes[n as usize].exit = exit;
    Ok(true)
}

/// Is replaying node `x` during the re-walk of `n` what a walk from scratch
/// would do? Nodes first walked after `n` do not exist yet there: it would
/// walk `x` afresh, on the current stack. That gives `x`'s old result when
/// every node below `x` either existed before `n` or was first walked during
/// `x`'s own walk, and the stack makes no difference: `x` has no recursion cut
/// below it and reaches no function on the stack, or it was first walked on
/// this very stack. The nodes such a walk would create count as met.
pub(super) fn replay_ok(d: &mut WalkData, x: u32) -> bool {
    let n = d.rewalk_node;
    if x < n {
        return true;
    }
    let top = &d.nodes[x as usize];
    let (end, same_stack) = (top.end, top.stack == d.stack);
    let tainted = top.cut_up > 0;
    if tainted && !same_stack {
        return false;
    }
    let mut seen = FxHashSet::default();
    let mut todo = vec![x];
    let mut ok = true;
    while let Some(y) = todo.pop() {
        if y < n || !seen.insert(y) {
            continue;
        }
        if y > x && y >= end {
            ok = false;
        }
        let node: &Node = &d.nodes[y as usize];
        if !tainted && d.stack.contains(&node.fid) {
            ok = false;
        }
        todo.extend(node.children.iter().copied());
    }
    d.encountered.extend(seen);
    ok
}

/// Sorted, without repeats.
fn set_of(v: &[u32]) -> Vec<u32> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// Nodes reachable from the thread roots.
pub(super) fn reachable(d: &WalkData) -> Vec<bool> {
    let mut seen = vec![false; d.nodes.len()];
    let mut todo: Vec<u32> = d.thread_roots.iter().flatten().copied().collect();
    while let Some(n) = todo.pop() {
        if std::mem::replace(&mut seen[n as usize], true) {
            continue;
        }
        todo.extend(d.nodes[n as usize].children.iter().copied());
    }
    seen
}

/// Had function `f` used up its contexts in the current thread before the
/// node being re-walked was first walked?
pub(super) fn out_of_contexts(d: &WalkData, f: FunctionId) -> bool {
    let before = d.nodes[..d.rewalk_node as usize]
        .iter()
        .filter(|n| n.thread == d.thread && n.fid == f)
        .count();
    let met = d
        .encountered
        .iter()
        .filter(|&&x| d.nodes[x as usize].fid == f)
        .count();
    before + met >= CONTEXT_BUDGET
}

/// Reachable contexts per thread and function.
fn contexts(d: &WalkData, reach: &[bool]) -> FxHashMap<(u32, FunctionId), usize> {
    let mut counts = FxHashMap::default();
    for (i, node) in d.nodes.iter().enumerate() {
        if reach.get(i).copied().unwrap_or(false) {
            *counts.entry((node.thread, node.fid)).or_insert(0) += 1;
        }
    }
    counts
}

/// Nodes below `n` (its callees, transitively).
fn below(d: &WalkData, n: u32) -> FxHashSet<u32> {
    let mut seen = FxHashSet::default();
    let mut todo: Vec<u32> = d.nodes[n as usize].children.clone();
    while let Some(x) = todo.pop() {
        if seen.insert(x) {
            todo.extend(d.nodes[x as usize].children.iter().copied());
        }
    }
    seen
}

/// `targets` and every node that reaches one of them.
fn callers(d: &WalkData, targets: &[u32]) -> FxHashSet<u32> {
    let mut parents: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for (i, node) in d.nodes.iter().enumerate() {
        for &c in &node.children {
            parents.entry(c).or_default().push(i as u32);
        }
    }
    let mut seen = FxHashSet::default();
    let mut todo = targets.to_vec();
    while let Some(x) = todo.pop() {
        if seen.insert(x) {
            if let Some(ps) = parents.get(&x) {
                todo.extend(ps.iter().copied());
            }
        }
    }
    seen
}

/// Drops unreachable nodes and renumbers the rest in creation order: the
/// pre-order of the node graph, threads and roots in order, callees in call
/// order (a context is created where it is first called).
fn compact(d: &mut WalkData) {
    let mut new_id = vec![u32::MAX; d.nodes.len()];
    let mut order = Vec::new();
    let mut ends = Vec::new();
    for roots in &d.thread_roots {
        for &r in roots {
            if new_id[r as usize] != u32::MAX {
                continue;
            }
            // (node, next child): a node is numbered when first met and
            // ends when its last child is done.
            new_id[r as usize] = order.len() as u32;
            order.push(r);
            ends.push(0);
            let mut stack = vec![(r, 0usize)];
            while let Some((n, i)) = stack.pop() {
                let children = &d.nodes[n as usize].children;
                match children.get(i) {
                    Some(&c) => {
                        stack.push((n, i + 1));
                        if new_id[c as usize] == u32::MAX {
                            new_id[c as usize] = order.len() as u32;
                            order.push(c);
                            ends.push(0);
                            stack.push((c, 0));
                        }
                    }
                    None => ends[new_id[n as usize] as usize] = order.len() as u32,
                }
            }
        }
    }
    for (n, &end) in order.iter().zip(&ends) {
        d.nodes[*n as usize].end = end;
    }
    // An update that kept every context, in the order of a walk from
    // scratch (nearly every edit), renumbers nothing: moving the nodes
    // (some kilobytes each) cost memcached's updates tens of milliseconds.
    let same =
        order.len() == d.nodes.len() && order.iter().enumerate().all(|(i, &n)| i as u32 == n);
    if !same {
        let mut old: Vec<Option<Node>> =
            std::mem::take(&mut d.nodes).into_iter().map(Some).collect();
        d.nodes = order
            .iter()
            .map(|&n| {
                let mut node = old[n as usize].take().expect("a node is numbered once");
                for c in &mut node.children {
                    *c = new_id[*c as usize];
                }
                node
            })
            .collect();
        for roots in &mut d.thread_roots {
            for r in roots.iter_mut() {
                *r = new_id[*r as usize];
            }
        }
    }
    for (t, counts) in d.thread_contexts.iter_mut().enumerate() {
        counts.clear();
        for node in d.nodes.iter().filter(|n| n.thread as usize == t) {
            *counts.entry(node.fid).or_insert(0) += 1;
        }
    }
    for memo in &mut d.thread_memos {
        for ids in memo.values_mut() {
            ids.retain(|id| new_id[*id as usize] != u32::MAX);
            for id in ids.iter_mut() {
                *id = new_id[*id as usize];
            }
        }
        memo.retain(|_, ids| !ids.is_empty());
    }
}

/// The functions `s` calls by name (sorted), and whether it calls through
/// a pointer.
fn callees(s: &FunctionSummary) -> (Vec<Name>, bool) {
    let mut names = Vec::new();
    let mut indirect = false;
    crate::visit::visit_calls(&s.ir.body, &mut |c| match &c.callee {
        racelens_syntax::Callee::Direct(n) => names.push(n.clone()),
        _ => indirect = true,
    });
    names.sort();
    names.dedup();
    (names, indirect)
}
