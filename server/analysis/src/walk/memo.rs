//! The memo node graph. Every function walked in a calling context is a
//! [`Node`]; a call whose context (see [`MemoKey`]) was walked before is
//! replayed from the memo, and a transparent node (one whose walk only
//! recorded the locksets and thread facts) is copied into contexts that
//! differ only there ([`Walker::copy_node`]). The graph is what lets an edit
//! re-walk only the edited function's nodes (`incremental.rs`).
//!
//! Owns `WalkData::nodes`, `node_stack`, `memo`, `copies`, the call and
//! site stacks, the epochs and the per-thread memos. Invariants that make a
//! replay or a copy exact: every read or change of heap freshness goes
//! through [`Walker::observe_heap`] (a node holds for any entry state that
//! agrees on the sites it observed); every change to state shared by the
//! whole walk goes through [`Walker::effect`] and every read of it through
//! [`Walker::read`] (the epochs); a walk that reads or changes the context
//! fields other than by recording them calls [`Walker::opaque`]; a context
//! that `longjmp`s is never memoized.

use super::frames::Frame;
use super::incremental;
use super::locks::const_indexed;
use super::state::{insert_sorted, must_within_may, same_context, with_context, State};
use super::stmts::Out;
use super::{Vals, Walker, CONTEXT_BUDGET, MAX_ALLOCATED, STEP_BUDGET};
use crate::db::FunctionId;
use crate::facts::*;
use crate::model::*;
use racelens_syntax::Name;
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The memo key of calling `fid` in state `st` with `bindings`.
fn memo_key(fid: FunctionId, st: &State, bindings: &[Vals]) -> MemoKey {
    let mut st = st.clone();
    st.fresh.clear();
    st.allocated.clear();
    st.refreshed.clear();
    st.newest = thin_vec::ThinVec::new();
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

/// Does node `n`'s result hold for entry state `st` as far as the heap goes?
/// It agrees with `st` on the freshness (and refreshing, and which
/// parameters hold the newest object, see `State::refreshed`) of every heap
/// site it observed and,
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
        && n.refresh_obs.iter().all(|b| {
            let newest = |s: &State| -> Vec<Name> {
                s.newest
                    .iter()
                    .filter(|x| &x.1 == b)
                    .map(|x| x.0.clone())
                    .collect()
            };
            n.state.refreshed.contains(b) == st.refreshed.contains(b)
                && (!st.refreshed.contains(b) || newest(&n.state) == newest(st))
        })
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
    // A site whose refreshing the node did not observe keeps the entry's,
    // while it stays fresh (refreshing is a fact of fresh sites only).
    if n.state.refreshed != st.refreshed {
        let seen = |b: &Base| n.refresh_obs.binary_search(b).is_ok();
        let mut v: Vec<Base> = e.refreshed.iter().filter(|b| seen(b)).cloned().collect();
        v.extend(
            st.refreshed
                .iter()
                .filter(|b| !seen(b) && e.fresh.contains(b))
                .cloned(),
        );
        v.sort();
        v.dedup();
        e.refreshed = v.into();
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

/// One memoized calling context: a function walked from one entry state in
/// one thread. Nodes form the call graph of the walk, and the facts of a
/// revision are those recorded by the nodes reachable from the thread roots.
/// That is what lets an edit re-walk only the edited function's nodes (see
/// [`incremental`]).
#[derive(Clone)]
pub(super) struct Node {
    pub(super) fid: FunctionId,
    pub(super) thread: u32,
    /// The memo key: entry state (without pending trylocks) and bindings.
    pub(super) state: State,
    pub(super) bindings: Vec<Vals>,
    pub(super) exit: Option<State>,
    /// Spawn sites visited below this node.
    pub(super) sites: Vec<u32>,
    /// Spawn sites of the callees its own statements replayed from the
    /// memo (each makes those threads non-unique: `replayed_sites` is the
    /// union of these over the reachable nodes and [`WalkData::root_replayed`](super::WalkData::root_replayed)).
    pub(super) replayed: Vec<u32>,
    /// Callee nodes, walked or replayed from the memo, in call order.
    pub(super) children: Vec<u32>,
    /// Accesses recorded by this function's own statements.
    pub(super) facts: Vec<(Base, AccessFact)>,
    /// Struct prefixes noted for those accesses.
    pub(super) prefixes: Vec<(Base, Vec<(Vec<Elem>, Name)>)>,
    /// Its own statements changed state shared by the whole walk.
    pub(super) effects: bool,
    /// Functions whose analysis its own statements cut short, and why.
    pub(super) marks: Vec<(FunctionId, &'static str)>,
    /// How many frames above its own a recursion cut below it reached back:
    /// its result depends on that part of the call stack (0: on none; a
    /// recursion entirely inside its own walk cuts the same on any stack
    /// without the functions it reaches).
    pub(super) cut_up: u32,
    /// The latest global change (epoch) its result has read.
    pub(super) dep: u64,
    /// Fresh heap sites whose refreshing (see `State::refreshed`) its walk
    /// (callees included) tested or changed, sorted: its result holds for
    /// entry states that agree with its own on them.
    pub(super) refresh_obs: Vec<Base>,
    /// Heap sites whose freshness its walk (callees included) tested or
    /// changed, sorted. Its result holds for any entry state that agrees
    /// with its own on those sites' freshness: the others pass through.
    pub(super) heap_obs: Vec<Base>,
    /// Its walk (callees included) allocated: the result also depends on
    /// the entry's whole `allocated` set (bounded, and read by merges).
    pub(super) allocates: bool,
    /// Heap sites its own statements allocated from, sorted (see
    /// `private.rs`).
    pub(super) allocs: Vec<Base>,
    /// Heap sites its own statements published: stored a pointer to
    /// outside the frame or handed to code without a body that may keep
    /// it. Sorted.
    pub(super) published: Vec<Base>,
    /// Heap sites its own statements handed, not fresh, to a new thread as
    /// its argument: a publication, but only down the creation tree (see
    /// `ThreadTable::shared_heap`).
    pub(super) handed: Vec<Base>,
    /// Its own statements' thread creations (call ids) that handed their
    /// thread an argument that was not a fresh heap object (see `own.rs`).
    pub(super) stale_spawns: Vec<u32>,
    /// Those of them that did not hand the very object an earlier
    /// creation of the same block had just handed fresh (`create(&o->a, ..,
    /// fa, o); create(&o->b, .., fb, o)`, where `fb`'s visit still hands its
    /// site another object: see `own.rs`, `Walker::per_site_threads`).
    pub(super) unshared_spawns: Vec<u32>,
    /// What its own statements stored into members (see `held.rs`).
    /// Sorted.
    pub(super) held: Vec<super::held::HeldStore>,
    /// Its own statements' writes of array elements that may hold
    /// pointers, and whether each stored a fresh object (see `inject.rs`).
    pub(super) elem_writes: Vec<(LocKey, bool)>,
    /// It is a thread's entry and calls one of several functions through a
    /// pointer: a launcher's trampoline (see `Thread::merged_launches`).
    pub(super) merges: bool,
    /// (object, container, how): its own statements stored an object of
    /// the first heap site into an object of the second (a heap site or a
    /// frame's local). Sorted.
    pub(super) nested: Vec<(Base, Base, super::private::Nest)>,
    /// The global epoch when it was first walked.
    pub(super) epoch: u64,
    /// Its walk (callees included) read or changed the state's locksets or
    /// thread facts other than by recording them with its accesses, or
    /// changed state shared by the whole walk: it cannot stand for another
    /// context that differs only there (see [`Walker::copy_hit`]).
    pub(super) opaque: bool,
    /// Statements its own walk interpreted (callees not included).
    pub(super) steps: u64,
    /// The functions on the stack when it was first walked.
    pub(super) stack: Vec<FunctionId>,
    /// Nodes `id + 1 .. end` were first walked during its walk.
    pub(super) end: u32,
    pub(super) loop_depth: u32,
}

impl Node {
    /// A node about to be walked: nothing recorded yet.
    pub(super) fn new(
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
            refresh_obs: Vec::new(),
            allocates: false,
            allocs: Vec::new(),
            published: Vec::new(),
            handed: Vec::new(),
            stale_spawns: Vec::new(),
            unshared_spawns: Vec::new(),
            held: Vec::new(),
            elem_writes: Vec::new(),
            merges: false,
            nested: Vec::new(),
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
pub(super) type MemoKey = (FunctionId, State, Vec<Vals>);

impl<'a> Walker<'a> {
    pub(super) fn walk_fn(
        &mut self,
        fid: FunctionId,
        mut st: State,
        bindings: Vec<Vals>,
    ) -> Option<State> {
        // No local of the callee holds a refreshed site's newest object.
        st.newest = thin_vec::ThinVec::new();
        // Whether the result is zero concerns only a call site that names
        // it (`calls.rs` reads it after `walk_fn_with`).
        self.walk_fn_with(fid, st, bindings).map(|mut e| {
            e.conds.retain(|c| &*c.0 != super::frames::RETURNED);
            e.guards.retain(|g| &*g.1 != super::frames::RETURNED);
            e
        })
    }

    /// [`walk_fn`](Self::walk_fn) with `st.newest` naming the callee's own
    /// parameters (a call passing such an object, or a node walked again
    /// from its recorded entry state).
    pub(super) fn walk_fn_with(
        &mut self,
        fid: FunctionId,
        st: State,
        bindings: Vec<Vals>,
    ) -> Option<State> {
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
        let seeds = self.d.seed_cells.take();
        if self.d.stack.contains(&fid) || self.d.stack.len() > 64 {
            self.cut(fid);
            return Some(st);
        }
        let caller_tries = std::mem::take(&mut st.tries);
        // Facts about the caller's local variables mean nothing in the
        // callee's frame (a local there may even share the name): keep them
        // out of the callee's context and give them back on return.
        let mut caller = self.stash_frame_facts(&mut st);
        // The member cells of what the caller handed it (`member_cells.rs`).
        if let Some((f, seeds)) = seeds {
            if f == fid {
                caller.seeded = seeds.iter().map(|(n, _)| n.clone()).collect();
                st.ptrs = std::sync::Arc::new(seeds);
            }
        }
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
            self.mark_incomplete(fid, "budget exceeded (too many calling contexts)");
            let mut st = st;
            st.tries = caller_tries;
            // Not walked: what it leaves in the cells is not known.
            caller.seeded.clear();
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
            && n.state.sym_guards.is_empty()
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
        if !(st.guards.is_empty() && st.lock_guards.is_empty() && st.sym_guards.is_empty()) {
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
        let refresh_obs = xn.refresh_obs.clone();
        let (allocs, published, merges) = (xn.allocs.clone(), xn.published.clone(), xn.merges);
        let handed = xn.handed.clone();
        let nested = xn.nested.clone();
        let stale_spawns = xn.stale_spawns.clone();
        let unshared_spawns = xn.unshared_spawns.clone();
        let held = xn.held.clone();
        let elem_writes = xn.elem_writes.clone();
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
            node.refresh_obs = refresh_obs;
            node.allocates = allocates;
            node.allocs = allocs;
            node.published = published;
            node.handed = handed;
            node.stale_spawns = stale_spawns;
            node.unshared_spawns = unshared_spawns;
            node.held = held;
            node.elem_writes = elem_writes;
            node.merges = merges;
            node.nested = nested;
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
            self.walk_fn_with(cfid, cst, cbind);
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
    pub(super) fn observe_heap(&mut self, b: &Base) {
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

    /// The walk tested or changed whether heap site `b` is refreshed, or
    /// which locals hold its newest object.
    pub(super) fn observe_refresh(&mut self, b: &Base) {
        if let Some(&n) = self.d.node_stack.last() {
            let obs = &mut self.d.nodes[n as usize].refresh_obs;
            if obs.binary_search(b).is_err() {
                insert_sorted(obs, b.clone());
            }
        }
    }

    /// Walks the body of node `id` from `st`; returns the outcome and the
    /// spawn sites visited below it.
    pub(super) fn walk_node(&mut self, id: u32, frame: &Frame, st: State) -> (Out, Vec<u32>) {
        self.enter_node(id, frame.fid);
        let body = frame.summary.clone();
        self.d.gotos.push(Default::default());
        let out = self.walk_stmts(frame, &body.ir.body, st);
        self.d.gotos.pop();
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
        let robs = c.refresh_obs.clone();
        let parent = &mut self.d.nodes[p as usize];
        parent.opaque |= opaque;
        parent.dep = parent.dep.max(dep);
        parent.cut_up = parent.cut_up.max(cut_up.saturating_sub(1));
        parent.allocates |= allocates;
        for b in obs {
            insert_sorted(&mut parent.heap_obs, b);
        }
        for b in robs {
            insert_sorted(&mut parent.refresh_obs, b);
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
    pub(super) fn opaque(&mut self) {
        if let Some(&n) = self.d.node_stack.last() {
            self.d.nodes[n as usize].opaque = true;
        }
    }

    /// A change to state shared by the whole walk.
    pub(super) fn effect(&mut self) {
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
    pub(super) fn read(&mut self, epoch: u64) {
        if let Some(&n) = self.d.node_stack.last() {
            let node = &mut self.d.nodes[n as usize];
            node.dep = node.dep.max(epoch);
        }
        if self.d.rewalk.map(|limit| epoch > limit).unwrap_or(false) {
            self.d.bailed = Some("reads shared state changed later");
        }
    }

    /// Is this allocation site known to be visited inside a loop?
    pub(super) fn heap_in_loop(&mut self, b: &Base) -> bool {
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
    pub(super) fn release_copies(&mut self) {
        for id in self.d.copies.drain().flat_map(|(_, ids)| ids) {
            if !self.d.keep {
                self.d.nodes[id as usize].facts = Vec::new();
            }
        }
    }

    /// Saves the finished thread's memo and budgets.
    pub(super) fn end_thread(&mut self) {
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
        self.d.exit_active = None;
        self.d.thread_memos.push(std::mem::take(&mut self.d.memo));
        self.d.thread_steps.push(std::mem::take(&mut self.d.steps));
        self.d
            .thread_contexts
            .push(std::mem::take(&mut self.d.contexts));
    }
}
