//! Unpublished heap sites: objects that never reach memory another thread
//! can read.
//!
//! An object of allocation site `S` can be touched by a thread only through
//! a pointer it holds. A pointer leaves the thread instance that allocated
//! the object in one of these ways, and the walk notes each as a
//! *publication* of `S` (`Node::published`):
//! - it is stored anywhere but a plain local of the frame (a global, a
//!   field, an array element, a local whose address is taken), which the
//!   pointer store also records for code the walk did not reach;
//! - it is handed to code without a body that may keep it (an event
//!   library's registration; `memcpy`-like functions known to keep nothing
//!   do not publish), or stored by an atomic operation;
//! - it is handed to a thread or callback as its argument while it is not
//!   fresh (another thread may already hold it).
//!
//! A pointer handed, *fresh*, as a new thread's argument is not a
//! publication: that object goes to exactly one thread instance (the
//! *receiver*). So for an unpublished site, each object is touched only by
//! the instance that allocated it and by at most one receiver instance.
//! Two allocating instances, or two receiving instances, never share an
//! object, and the race check does not pair them ([`PrivateHeap::apart`]).
//! The allocator-receiver pairs stay (the creator may keep using the
//! object), and so does any thread the site reaches some other way.
//!
//! Allocation (`allocated_at`: a new object is fresh until it escapes, and
//! a site allocated again after an older object escaped is refreshed) and
//! what `realloc` and allocation wrappers carry over (`nest_copies`) live
//! here too.
//!
//! Invariant: publications are facts of nodes' own statements, like
//! accesses, so an incremental update recomputes them from the reachable
//! nodes; `incremental.rs` bails when the result would change.
//!
//! Under-approximations (each may hide a race): a pointer copied into
//! memory by `memcpy` from a pointer variable's own bytes is followed only
//! for `memcpy(dst, &p, n)`; pointers cast to integers and back are not
//! followed.

use super::frames::Frame;
use super::state::{insert_sorted, State};
use super::{Val, Walker, MAX_ALLOCATED};
use crate::db::FunctionId;
use crate::facts::PrivateHeap;
use crate::model::Base;
use racelens_syntax::{Call, Expr, Name};
use rustc_hash::FxHashSet;
use std::collections::{BTreeMap, BTreeSet};

/// How a store put an object of one heap site into a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Nest {
    /// A fresh object into a fresh heap object: it goes where the
    /// container goes.
    Fresh,
    /// Into a non-static local: it stays with the frame's thread instance
    /// unless the local's address escapes.
    Local,
    /// Any other object into a heap object (relinking a list): private only
    /// while every object involved stays with the instance that allocated it.
    Move,
}

/// What decides which heap sites are unpublished, apart from the escaped
/// locals: the sites published for sure, each site's allocating and
/// receiving threads, and which sites nest in which (object, container).
pub(super) struct PrivateInputs<'w> {
    published: BTreeSet<&'w Base>,
    /// Of `published`, the sites published otherwise than by being handed
    /// to a new thread as its argument.
    otherwise: BTreeSet<&'w Base>,
    roles: BTreeMap<&'w Base, (BTreeSet<u32>, BTreeSet<u32>)>,
    nested: BTreeSet<(&'w Base, &'w Base)>,
}

/// Publishes, to a fixpoint, every object nested (object, container) in a
/// published container; `note`: print each (`RACELENS_DEBUG_PUBLISH`).
fn publish_nested<'w>(
    published: &mut BTreeSet<&'w Base>,
    nested: &BTreeSet<(&'w Base, &'w Base)>,
    note: bool,
) {
    loop {
        let mut changed = false;
        for &(c, x) in nested {
            if published.contains(x) && published.insert(c) {
                if note {
                    eprintln!("racelens: publish {c:?}: nested in published {x:?}");
                }
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// `RACELENS_DEBUG_PUBLISH=1` prints each publication and its reason.
pub(super) fn debug() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RACELENS_DEBUG_PUBLISH").is_some())
}

impl<'a> Walker<'a> {
    /// Heap site `b` may now be reachable by another thread. For a local
    /// (its address handed to code that may keep it), what it holds is.
    /// `handed`: as a new thread's argument (kept apart: see
    /// `PrivateInputs::otherwise`).
    fn publish(&mut self, b: &Base, why: &'static str, handed: bool) {
        if !matches!(b, Base::Heap { .. } | Base::Local { .. }) {
            return;
        }
        if debug() {
            let f = self
                .d
                .node_stack
                .last()
                .map(|&n| self.d.nodes[n as usize].fid.name(self.db).to_string());
            eprintln!("racelens: publish {b:?} in {f:?}: {why}");
        }
        match (self.d.node_stack.last(), handed) {
            (Some(&n), false) => insert_sorted(&mut self.d.nodes[n as usize].published, b.clone()),
            (Some(&n), true) => insert_sorted(&mut self.d.nodes[n as usize].handed, b.clone()),
            (None, false) => insert_sorted(&mut self.d.root_published, b.clone()),
            (None, true) => insert_sorted(&mut self.d.root_handed, b.clone()),
        }
    }

    /// The current node's own statements allocated from heap site `b`.
    pub(super) fn note_alloc(&mut self, b: &Base) {
        if let Some(&n) = self.d.node_stack.last() {
            insert_sorted(&mut self.d.nodes[n as usize].allocs, b.clone());
        }
    }

    /// Heap objects reachable from `e` are no longer fresh, and their
    /// sites are published (see `private.rs`).
    pub(super) fn escape(&mut self, fr: &Frame, e: &Expr, st: &mut State) {
        self.escape_to(fr, e, st, false, "stored outside the frame")
    }

    /// [`escape`](Self::escape); `handed`: `e` is a new thread's argument,
    /// which does not publish an object that is fresh (it goes to that one
    /// thread instance).
    pub(super) fn escape_to(
        &mut self,
        fr: &Frame,
        e: &Expr,
        st: &mut State,
        handed: bool,
        why: &'static str,
    ) {
        // Evaluated even when nothing is fresh: a context where something
        // is must see which sites this would publish.
        for v in self.eval(fr, e, 0) {
            if let Val::Target(k) = v {
                self.observe_heap(&k.base);
                let fresh = st.fresh.contains(&k.base);
                // Of a refreshed site, only the newest object is fresh: a
                // pointer that may be to an older one publishes it.
                if handed && fresh {
                    self.observe_refresh(&k.base);
                }
                let newest = !st.refreshed.contains(&k.base)
                    || super::frames::holds_newest(fr, e, &k.base, st);
                if !(handed && fresh && newest) {
                    self.publish(&k.base, why, handed);
                }
                // (Also an object a cell holds, stored there unpublished:
                // see `member_cells.rs`.)
                if fresh || st.newest.iter().any(|x| x.1 == k.base) {
                    st.unfresh(&k.base);
                }
            }
        }
    }

    /// `lhs = rhs` stores a pointer outside the frame. Storing a fresh
    /// object into a fresh one nests it: it goes wherever its container
    /// goes. Anything else publishes what `rhs` points to.
    pub(super) fn store_pointer(&mut self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &mut State) {
        // An allocator linking blocks into its own pool (`free_wrappers.rs`),
        // or a count stored into an integer too narrow for an address
        // (`n->len = (uint8_t) (end - n->buf)`, see `store.rs`).
        if self.allocator_internal(fr.fid) || self.narrow_integer(fr, lhs) {
            return;
        }
        let into: Vec<Base> = self.place(fr, lhs, 0).into_iter().map(|k| k.base).collect();
        for b in &into {
            self.observe_heap(b);
        }
        // A non-static local is a container too: its frame belongs to one
        // thread instance, and its contents go where its address goes.
        let container = |b: &Base| matches!(b, Base::Heap { .. } | Base::Local { .. });
        if into.is_empty() || !into.iter().all(container) {
            if debug() {
                let st: Vec<String> = self
                    .d
                    .node_stack
                    .iter()
                    .map(|&n| self.d.nodes[n as usize].fid.name(self.db).to_string())
                    .collect();
                eprintln!("racelens: store {lhs:?} into {into:?} stack {st:?}");
            }
            return self.escape(fr, rhs, st);
        }
        for v in self.eval(fr, rhs, 0) {
            let Val::Target(k) = v else { continue };
            if !matches!(k.base, Base::Heap { .. }) {
                continue;
            }
            self.observe_heap(&k.base);
            let fresh = st.fresh.contains(&k.base);
            if let Some(&n) = self.d.node_stack.last() {
                for x in &into {
                    let kind = match x {
                        Base::Local { .. } => Nest::Local,
                        _ if fresh && st.fresh.contains(x) => Nest::Fresh,
                        _ => Nest::Move,
                    };
                    let edge = (k.base.clone(), x.clone(), kind);
                    insert_sorted(&mut self.d.nodes[n as usize].nested, edge);
                }
            }
            // Into an object of its own site (`h->d = (char *) h + n`, or
            // an older node into a new one): it escapes when that object
            // does, which unfreshes the site anyway.
            if fresh && !into.iter().all(|b| *b == k.base) {
                st.unfresh(&k.base);
            }
            // Stored elsewhere too, an object a cell holds unpublished may
            // go where that container goes.
            if !fresh && st.newest.iter().any(|x| x.1 == k.base) {
                st.unfresh(&k.base);
            }
        }
    }

    /// Does function `f` never run: the program has a `main`, and no
    /// function calls `f` by name or uses it as a value? `uncalled` caches
    /// the names no function calls directly, gathered on first use.
    fn never_runs(&self, f: FunctionId, uncalled: &mut Option<FxHashSet<Name>>) -> bool {
        let name = f.name(self.db);
        if &**name == "main" || self.prog.functions_named("main").is_none() {
            return false;
        }
        if self.value_functions().contains(&f) {
            return false;
        }
        uncalled
            .get_or_insert_with(|| self.uncalled_names())
            .contains(name)
    }

    /// The functions a node `reach` marks walked in full (not cut short).
    fn walked_fully(&self, reach: &[bool]) -> FxHashSet<FunctionId> {
        self.d
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| reach.get(*i).copied().unwrap_or(false))
            .map(|(_, n)| n.fid)
            .filter(|f| !self.d.incomplete.contains_key(f))
            .collect()
    }

    /// The functions no node `reach` marks walked in full, but which may
    /// run (see `never_runs`), in the program's order.
    pub(super) fn unwalked_functions(&self, reach: &[bool]) -> Vec<FunctionId> {
        let walked = self.walked_fully(reach);
        let mut uncalled: Option<FxHashSet<Name>> = None;
        self.prog
            .functions
            .values()
            .flatten()
            .copied()
            .filter(|f| !walked.contains(f) && !self.never_runs(*f, &mut uncalled))
            .collect()
    }

    /// What decides the unpublished heap sites of the walk, over the nodes
    /// `reach` marks, apart from the escaped locals ([`private_heap`](Self::private_heap)).
    pub(super) fn private_inputs(&self, reach: &[bool]) -> PrivateInputs<'_> {
        let heap = |b: &Base| matches!(b, Base::Heap { .. });
        let mut published: BTreeSet<&Base> = self.d.root_published.iter().collect();
        let mut handed: BTreeSet<&Base> = self.d.root_handed.iter().collect();
        let mut roles: BTreeMap<&Base, (BTreeSet<u32>, BTreeSet<u32>)> = BTreeMap::new();
        // (object, container): the object's site goes where the container's
        // goes. A move (see [`Nest::Move`]) is checked once roles are known.
        let mut nested: BTreeSet<(&Base, &Base)> = BTreeSet::new();
        let mut moves: Vec<(&Base, &Base, u32)> = Vec::new();
        for (i, node) in self.d.nodes.iter().enumerate() {
            if !reach.get(i).copied().unwrap_or(false) {
                continue;
            }
            published.extend(node.published.iter());
            handed.extend(node.handed.iter());
            for b in &node.allocs {
                roles.entry(b).or_default().0.insert(node.thread);
            }
            for (c, x, kind) in &node.nested {
                nested.insert((c, x));
                if *kind == Nest::Move {
                    moves.push((c, x, node.thread));
                }
            }
        }
        // The pointer store holds what any code stores outside frames. The
        // walk saw the stores of the functions it walked in full, in their
        // calling contexts; the store speaks for the others. Into a heap
        // object or a local, a store nests; anywhere else, it publishes.
        let walked = self.walked_fully(reach);
        // Code nothing calls or takes the address of never runs in a
        // program with a `main` (a library function the program does not
        // use): its stores happen nowhere.
        let mut uncalled: Option<FxHashSet<Name>> = None;
        for (f, cells) in &self.d.store_from {
            if walked.contains(f) {
                continue;
            }
            if self.never_runs(*f, &mut uncalled) {
                continue;
            }
            for (cell, vals) in cells {
                for v in vals {
                    let Val::Target(k) = v else { continue };
                    if !heap(&k.base) {
                        continue;
                    }
                    match heap(&cell.base) || matches!(cell.base, Base::Local { .. }) {
                        true => {
                            nested.insert((&k.base, &cell.base));
                        }
                        false => {
                            if debug() {
                                eprintln!("racelens: publish {:?}: stored at {cell:?} by {}, a function not walked", k.base, f.name(self.db));
                            }
                            published.insert(&k.base);
                        }
                    }
                }
            }
        }
        // Callback groups run what unknown code hands them; a thread's
        // argument goes to that thread.
        for (t, vals) in self.d.thread_args.iter().enumerate() {
            let group = self.d.group_roots.contains_key(&(t as u32));
            for v in vals {
                let Val::Target(k) = v else { continue };
                if heap(&k.base) {
                    match group {
                        true => {
                            published.insert(&k.base);
                        }
                        false => {
                            roles.entry(&k.base).or_default().1.insert(t as u32);
                        }
                    }
                }
            }
        }
        for roots in self.d.group_roots.values() {
            for (_, vals) in roots {
                for v in vals {
                    if let Val::Target(k) = v {
                        published.insert(&k.base);
                    }
                }
            }
        }
        // A nested object goes wherever its container goes: first the
        // threads that may hold it.
        let own_allocs: BTreeMap<&Base, BTreeSet<u32>> =
            roles.iter().map(|(b, r)| (*b, r.0.clone())).collect();
        loop {
            let mut changed = false;
            for &(c, x) in &nested {
                if let Some((a, r)) = roles.get(x).cloned() {
                    let own = roles.entry(c).or_default();
                    let before = (own.0.len(), own.1.len());
                    own.0.extend(a);
                    own.1.extend(r);
                    changed |= before != (own.0.len(), own.1.len());
                }
            }
            if !changed {
                break;
            }
        }
        // A move is private when nobody but the allocating instances is
        // involved: the moving thread allocates the container's site, and
        // no object of either site is handed to a thread, directly or
        // inside another object.
        for (c, x, t) in moves {
            let alone = |b: &Base| roles.get(b).is_none_or(|r| r.1.is_empty());
            let ok = own_allocs.get(x).is_some_and(|a| a.contains(&t)) && alone(x) && alone(c);
            if !ok {
                if debug() {
                    eprintln!("racelens: publish {c:?}: moved into {x:?} by thread {t}");
                }
                published.insert(c);
            }
        }
        let otherwise = published.clone();
        published.extend(handed);
        PrivateInputs {
            published,
            otherwise,
            roles,
            nested,
        }
    }

    /// The heap sites published otherwise than by being handed down to new
    /// threads (see `ThreadTable::shared_heap`): by their own statements,
    /// held by an escaped local that reaches other threads otherwise than
    /// through thread arguments (not in `arg_only`), or nested in a site
    /// published so. Sorted.
    pub(super) fn published_otherwise(
        &self,
        inputs: &PrivateInputs<'_>,
        escaped: &[Base],
        arg_only: &[Base],
    ) -> Vec<Base> {
        let mut out = inputs.otherwise.clone();
        out.extend(
            escaped
                .iter()
                .filter(|b| arg_only.binary_search(b).is_err()),
        );
        publish_nested(&mut out, &inputs.nested, false);
        out.into_iter()
            .filter(|b| matches!(b, Base::Heap { .. }))
            .cloned()
            .collect()
    }

    /// The unpublished heap sites, with their allocating and receiving
    /// threads, sorted by base, given what decides them (`inputs`) and the
    /// locals whose address may reach another thread, as far as known
    /// (`escaped`; see [`private_and_escaped`](Self::private_and_escaped),
    /// which asks again until the two agree).
    pub(super) fn private_heap(
        &self,
        inputs: &PrivateInputs<'_>,
        escaped: &[Base],
    ) -> Vec<(Base, PrivateHeap)> {
        let mut published = inputs.published.clone();
        let nested = &inputs.nested;
        // A local whose address may reach another thread publishes what it
        // holds.
        for b in escaped {
            if debug() {
                eprintln!("racelens: escaped local {b:?} publishes what it holds");
            }
            published.insert(b);
        }
        // Then publication.
        publish_nested(&mut published, nested, debug());
        let mut out = Vec::new();
        for (b, (alloc, recv)) in &inputs.roles {
            if alloc.is_empty()
                || published.contains(b)
                || alloc.intersection(&recv).next().is_some()
            {
                if debug() {
                    eprintln!(
                        "racelens: not private {b:?}: allocators {alloc:?}, receivers {recv:?}, published {}",
                        published.contains(b)
                    );
                }
                continue;
            }
            if debug() {
                eprintln!("racelens: private {b:?}: allocators {alloc:?}, receivers {recv:?}");
            }
            out.push((
                (*b).clone(),
                PrivateHeap {
                    allocators: alloc.iter().copied().collect(),
                    receivers: recv.iter().copied().collect(),
                },
            ));
        }
        out
    }
}

impl<'a> Walker<'a> {
    /// `realloc(p, n)` returns a new object (C11 7.22.3.5: the old one is
    /// deallocated) that holds the old one's contents. It is allocated
    /// like `malloc`'s, and what the old object held goes wherever the new
    /// one goes: each old site nests in the new one (see `private.rs`).
    /// Inside an allocation wrapper that reallocates its caller's object,
    /// the caller's call does the nesting (`copied_into`).
    pub(super) fn reallocated_at(&mut self, fr: &Frame, c: &Call, st: &mut State) {
        let new = Base::Heap {
            func: fr.fname.clone(),
            call: c.id,
        };
        let old = self.copied_into(fr, c);
        self.allocated_at(fr, c, st);
        self.nest_copies(old, &new, st);
    }

    /// The new object `new` holds what objects of the sites `old` held
    /// (`realloc`'s old object, the object an allocation wrapper filled):
    /// each old site goes wherever the new one goes.
    pub(super) fn nest_copies(&mut self, old: Vec<Base>, new: &Base, st: &State) {
        if let Some(&n) = self.d.node_stack.last() {
            for b in old {
                if b == *new {
                    continue;
                }
                let kind = match st.fresh.contains(&b) {
                    true => Nest::Fresh,
                    false => Nest::Move,
                };
                insert_sorted(&mut self.d.nodes[n as usize].nested, (b, new.clone(), kind));
            }
        }
    }

    /// The object allocated at call `c` (by `malloc` or a wrapper) is new:
    /// fresh until it escapes.
    pub(super) fn allocated_at(&mut self, fr: &Frame, c: &Call, st: &mut State) {
        let b = Base::Heap {
            func: fr.fname.clone(),
            call: c.id,
        };
        if self.d.loop_depth > 0 && !self.d.heap_in_loop.contains_key(&b) {
            self.effect();
            self.d.heap_in_loop.insert(b.clone(), self.d.epoch);
        }
        self.observe_heap(&b);
        self.note_alloc(&b);
        if let Some(&n) = self.d.node_stack.last() {
            self.d.nodes[n as usize].allocates = true;
        }
        if st.allocated.len() >= MAX_ALLOCATED && !st.allocated.contains(&b) {
            // Too many sites to follow: whether an older object of this
            // site escaped on this path is not known, so the site is
            // refreshed (below), and only an access through a local that
            // holds this object is to a fresh one. Past as many fresh
            // sites too, no more freshness on this path.
            if st.fresh.len() >= MAX_ALLOCATED {
                return;
            }
            self.observe_refresh(&b);
            st.refresh(&b);
            return;
        }
        // An older object of the site has escaped on this path: freshness
        // is a fact of the site, and an access through a pointer to that
        // older object (loaded from where it escaped to) would pass for an
        // access to the new one. The site is refreshed: only accesses
        // through a local that holds the new object are fresh (see
        // `State::newest`), and no local holds it yet.
        self.observe_refresh(&b);
        if st.allocated.contains(&b) && !st.fresh.contains(&b) {
            st.refresh(&b);
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
}
