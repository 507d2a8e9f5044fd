//! The abstract state of one path through a thread: locksets, spawn sites
//! created and active, pending lock results and branch facts, heap
//! freshness, symbolic and index locks, barrier phases and the flow-sensitive
//! local pointers ([`State`]), and how two paths meet ([`join`]).
//!
//! Owns no walker state: everything here is a pure function of states.
//! Invariants: [`Sites`] and [`Ptrs`] are shared (`Arc`) and kept sorted,
//! so equal contents compare and hash equal (an empty [`Sites`] is `None`);
//! the small lists are bounded by [`MAX_TRACKED`](super::MAX_TRACKED);
//! [`with_context`] names every field of [`State`], so a new field must be
//! sorted there into context (locksets and thread facts, which a
//! transparent memo node only records) or not.

use super::locks::is_region;
use super::{add_vals, common, Vals, MAX_ALLOCATED, MAX_TRACKED};
use crate::facts::Own;
use crate::model::*;
use racelens_syntax::Name;
use std::sync::Arc;
use thin_vec::ThinVec;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum TryKey {
    Call(u32),
    Var(Name),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(super) struct State {
    pub(super) must: LockSet,
    pub(super) may: LockSet,
    pub(super) created: SiteSet,
    /// Sites that may have been created and not joined.
    pub(super) active: SiteSet,
    /// Sites joined on some path to here and not created again since. One
    /// that is also `active` runs here on some paths only: a race with it
    /// is a *may* race (`FactCtx::partly`). A context field, like `active`.
    pub(super) joined_some: SiteSet,
    /// Active sites with at most one thread running, whose id is what the
    /// site's one thread id place holds now (no other creation stored into
    /// it since): joining that place joins the site (see `spawn.rs`). A
    /// context field, like `active`.
    pub(super) tid_held: SiteSet,
    /// Lock calls whose result a later test may check: the lock taken on
    /// success, and whether success is a nonzero result.
    pub(super) tries: ThinVec<(TryKey, Held, bool)>,
    /// Branch facts on plain variables that hold on this path: (var, nonzero).
    pub(super) conds: ThinVec<(Name, bool)>,
    /// Spawns that happened only when a variable was (non)zero.
    pub(super) guards: ThinVec<(u32, Name, bool)>,
    /// (flag, site): a fresh object of the heap site was handed to a
    /// thread creation whose result the flag holds. Where the flag says
    /// the creation failed, no thread received it: the site is fresh
    /// again (`if (pthread_create(.., arg)) free(arg);`).
    pub(super) handed: ThinVec<(Name, Base)>,
    /// (site, lock): the lock has been held continuously since the site spawned.
    pub(super) clean: ThinVec<(u32, LocKey)>,
    /// Locks this thread has certainly acquired at some point.
    pub(super) acquired: ThinVec<LocKey>,
    /// Heap objects allocated by this thread that no other thread can reach yet.
    pub(super) fresh: Sites,
    /// Heap sites this thread may have allocated from (bounded).
    pub(super) allocated: Sites,
    /// Fresh sites whose older objects escaped on this path: the new object
    /// is fresh, but a pointer to an object of the site may be to an older
    /// one. Only an access through a local known to hold the new object
    /// (`newest`) is to a fresh object.
    pub(super) refreshed: Sites,
    /// (local, site): this frame's local holds the newest object of a
    /// refreshed site, assigned since that object's allocation. A call
    /// passes it to the parameter the local is given, and the caller's
    /// locals keep it only across a call that cannot reach the site's
    /// allocating function (`calls.rs`). Also (cell `p->f`, site): the
    /// member cell holds an object of the site that was unpublished when
    /// stored there, of a site no longer fresh since (`member_cells.rs`);
    /// such an entry goes with the cell, at a call of a function with a
    /// body, and when the site's objects escape or are stored elsewhere.
    /// Never part of a memo key.
    pub(super) newest: ThinVec<(Name, Base)>,
    /// Symbolic locks: (pointer variable, path, shared) for `&q->lock` held
    /// through `q` since `q` was last assigned. They guard accesses through
    /// the same `q`, whatever object `q` points to.
    /// Index locks are rooted at the index variable: `lock(&L[i])` gives
    /// `(i, [@L, [*]])`. Region tags `(p, [#A, @L, [*]])` say that `p` was
    /// derived from `A[i]` while `L[i]` was held: everything reached through
    /// `p` belongs to `A[i]`'s region and is guarded by `L[i]` (Goblint's
    /// region analysis assumes regions are disjoint, and so do we).
    pub(super) syms: ThinVec<(Name, Vec<Elem>, bool)>,
    /// Barrier phases: (barrier, fewest, most) waits passed.
    pub(super) phases: ThinVec<(Name, u8, u8)>,
    /// Index ranges `[from, to)` of a creation loop's thread ids already
    /// joined, for a loop with a constant range: (site, from, to).
    pub(super) joined_ix: ThinVec<(u32, i64, i64)>,
    /// Thread ids of a site that stores into several (`create(&id1)` and
    /// `create(&id2)` through one wrapper) already joined: (site, tid index).
    pub(super) joined_tids: ThinVec<(u32, u32)>,
    /// This thread has joined `main` (through an id `main` stored from
    /// `pthread_self()`): everything `main` did happened before.
    pub(super) main_ended: bool,
    /// This path runs in a child process made by `fork()` (a branch where
    /// the fork's result is zero), and has created no thread since: no
    /// other thread exists in that process, so its accesses are not
    /// recorded (see `fork.rs`).
    pub(super) forked: bool,
    /// What a local pointer of this frame holds since its last assignment
    /// on this path (flow-sensitive; the frame's `pts` is the fallback).
    pub(super) ptrs: Ptrs,
    /// (var, nonzero, lock): the lock is held exactly when the plain
    /// variable is (non)zero: `if (use_lock) lock(&m); ... if (use_lock) x++;`.
    /// At a function's exit the variable may be its result (`#ret`, a
    /// branch fact each `return` notes); the caller renames it to the
    /// call's flag (`#call{id}`), and an assignment of the result to the
    /// variable that takes it.
    pub(super) lock_guards: ThinVec<(Name, bool, Held)>,
    /// (var, nonzero, symbolic lock): a symbolic lock (see `syms`) held
    /// exactly when the plain variable is (non)zero. A function that
    /// returns nonzero only while holding its parameter's lock
    /// (`if (!d) return 0; lock(&d->mu); return 1;`) gives its caller
    /// `&p->mu` held exactly when the call's result is nonzero.
    pub(super) sym_guards: ThinVec<(Name, bool, (Name, Vec<Elem>, bool))>,
    /// Extra acquisitions of must-held locks (recursive mutexes): `lock(m)`
    /// twice needs two `unlock(m)`. A second lock of a normal mutex never
    /// returns, so counting is right for both.
    pub(super) rec_depth: ThinVec<(LocKey, u8)>,
    /// (cell, site): the cell holds how many threads the site's creation
    /// loop has created, all of them (see `thread_counts.rs`).
    pub(super) counts: ThinVec<(LocKey, u32)>,
    /// (cell, local, frame depth): the cell was assigned the local, which
    /// has not changed since; a creation loop over `0<local` in that frame
    /// makes the cell count its site (see `thread_counts.rs`).
    pub(super) count_vars: ThinVec<(LocKey, Name, u32)>,
    /// This frame's local pointers that hold an object of the thread
    /// instance's own, and why (see `own.rs`). Sorted by name.
    pub(super) own: ThinVec<(Name, Own)>,
    /// (local, member): this frame's local pointer `x` has not changed
    /// since `pthread_join(x->member)` on this path (see `own.rs`).
    pub(super) joined_own: ThinVec<(Name, Name)>,
}

/// Flow-sensitive values of a frame's local pointers, shared between the
/// many states that agree on them.
pub(super) type Ptrs = Arc<Vec<(Name, Vals)>>;

/// A sorted list of heap sites, shared between the states that agree on it:
/// a thread's allocation sites change at allocations only, while the state
/// holding them is cloned at every branch and call (a dozen sites on
/// average on memcached). Empty is `None`, so equal lists compare equal.
#[derive(Clone, Default, PartialEq, Eq)]
pub(super) struct Sites(pub(super) Option<Arc<[Base]>>);

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
    pub(super) fn clear(&mut self) {
        self.0 = None;
    }
}

/// `st` with the context fields of `from`: the must and may locksets, the
/// spawn sites created and active, the clean and acquired locks, the
/// barrier phases and whether `main` ended.
pub(super) fn with_context(st: &State, from: &State) -> State {
    // Every field named (no `..st.clone()`, which would clone the context
    // fields of `st` only to drop them): a new field must be sorted here.
    State {
        must: from.must.clone(),
        may: from.may.clone(),
        created: from.created.clone(),
        active: from.active.clone(),
        joined_some: from.joined_some.clone(),
        tid_held: from.tid_held.clone(),
        clean: from.clean.clone(),
        acquired: from.acquired.clone(),
        phases: from.phases.clone(),
        main_ended: from.main_ended,
        forked: st.forked,
        tries: st.tries.clone(),
        conds: st.conds.clone(),
        guards: st.guards.clone(),
        handed: st.handed.clone(),
        fresh: st.fresh.clone(),
        allocated: st.allocated.clone(),
        refreshed: st.refreshed.clone(),
        newest: st.newest.clone(),
        syms: st.syms.clone(),
        joined_ix: st.joined_ix.clone(),
        joined_tids: st.joined_tids.clone(),
        ptrs: st.ptrs.clone(),
        lock_guards: st.lock_guards.clone(),
        sym_guards: st.sym_guards.clone(),
        rec_depth: st.rec_depth.clone(),
        counts: st.counts.clone(),
        count_vars: st.count_vars.clone(),
        own: st.own.clone(),
        joined_own: st.joined_own.clone(),
    }
}

/// Do two states agree on the context fields?
pub(super) fn same_context(a: &State, b: &State) -> bool {
    with_context(a, b) == *a
}

/// Is every lock the state certainly holds also among those it may hold?
pub(super) fn must_within_may(st: &State) -> bool {
    st.must
        .0
        .iter()
        .all(|h| st.may.0.iter().any(|m| m.lock == h.lock))
}

impl State {
    /// This path now knows flag `name` to be nonzero (or zero), in place
    /// of whatever it knew of it before.
    pub(super) fn know(&mut self, name: Name, nonzero: bool) {
        self.conds.retain(|c| c.0 != name);
        self.conds.push((name, nonzero));
    }

    /// Entering another frame: this frame's own pointers (see `own.rs`)
    /// name its locals, which mean nothing there.
    pub(super) fn leave_own(&mut self) {
        self.own = ThinVec::new();
        self.joined_own = ThinVec::new();
    }

    /// Back in `caller`'s frame after a call: its own pointers are as they
    /// were (a callee cannot assign locals whose address is not taken).
    pub(super) fn restore_own(&mut self, caller: &State) {
        self.own = caller.own.clone();
        self.joined_own = caller.joined_own.clone();
    }

    /// Does the state hold branch facts or guards on flags?
    pub(super) fn has_flags(&self) -> bool {
        !(self.conds.is_empty()
            && self.guards.is_empty()
            && self.handed.is_empty()
            && self.lock_guards.is_empty()
            && self.sym_guards.is_empty()
            && self.tries.is_empty())
    }

    /// Forgets what the state knows about the flags `hit` selects: their
    /// value on this path, the spawns and locks that followed it, and the
    /// lock a trylock result stored in one of them stood for.
    pub(super) fn forget_flags(&mut self, hit: impl Fn(&str) -> bool) {
        self.tries
            .retain(|t| !matches!(&t.0, TryKey::Var(v) if hit(v)));
        self.conds.retain(|c| !hit(&c.0));
        self.guards.retain(|g| !hit(&g.1));
        self.handed.retain(|h| !hit(&h.0));
        self.lock_guards.retain(|g| !hit(&g.0));
        self.sym_guards.retain(|g| !hit(&g.0));
    }

    /// `holder` now holds the newest objects of `sites` (and no other).
    pub(super) fn set_newest_held(&mut self, holder: &Name, sites: Vec<Base>) {
        if sites.is_empty() && self.newest_held_by(holder).next().is_none() {
            return;
        }
        let mut v: Vec<(Name, Base)> = self
            .newest
            .iter()
            .filter(|(x, _)| x != holder)
            .cloned()
            .collect();
        v.extend(sites.into_iter().map(|b| (holder.clone(), b)));
        v.sort();
        self.newest = v.into();
    }

    /// The refreshed sites whose newest object `holder` holds (a local, a
    /// call's result, or what a function returns: see `frames.rs`).
    pub(super) fn newest_held_by<'a>(&'a self, holder: &'a str) -> impl Iterator<Item = &'a Base> {
        self.newest
            .iter()
            .filter(move |(v, _)| &**v == holder)
            .map(|(_, b)| b)
    }

    /// Heap site `b` allocated again where an older object of it may have
    /// escaped: it is fresh, refreshed, and no local holds the new object
    /// yet (see `Walker::allocated_at`).
    pub(super) fn refresh(&mut self, b: &Base) {
        if !self.refreshed.contains(b) {
            let mut v = self.refreshed.to_vec();
            insert_sorted(&mut v, b.clone());
            self.refreshed = v.into();
        }
        self.newest.retain(|x| &x.1 != b);
        if !self.fresh.contains(b) {
            let mut v = self.fresh.to_vec();
            insert_sorted(&mut v, b.clone());
            self.fresh = v.into();
        }
    }

    /// Heap site `b` is no longer fresh on this path: another thread may
    /// reach its objects now.
    pub(super) fn unfresh(&mut self, b: &Base) {
        // Refreshing matters only while the site is fresh.
        if self.newest.iter().any(|x| &x.1 == b) {
            self.newest.retain(|x| &x.1 != b);
        }
        if self.refreshed.contains(b) {
            let rest: Vec<Base> = self.refreshed.iter().filter(|x| *x != b).cloned().collect();
            self.refreshed = rest.into();
        }
        let rest: Vec<Base> = self.fresh.iter().filter(|x| *x != b).cloned().collect();
        self.fresh = rest.into();
    }
}

/// Inserts `x` into the sorted `v` unless it is there.
pub(super) fn insert_sorted<T: Ord>(v: &mut Vec<T>, x: T) {
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
/// never allocated on the other. Where two paths to a function's exit meet
/// (`exit`), a site fresh on one path whose objects escaped on the other
/// (`return custom ? custom_alloc() : calloc(..)` after an earlier object
/// escaped) stays fresh, refreshed: only an access through a local holding
/// its newest object (the call's result, see `frames::note_returned`) is
/// to a fresh object (`State::refreshed`). Inside a function, where other
/// locals may hold the older objects, such a site is not fresh. Returns
/// the fresh sites and those refreshed so.
fn joined_fresh(a: &State, b: &State, exit: bool) -> (Vec<Base>, Vec<Base>) {
    let mut fresh: Vec<Base> = Vec::new();
    let mut refreshed: Vec<Base> = Vec::new();
    for (x, y) in [(a, b), (b, a)] {
        for f in x.fresh.iter() {
            if fresh.contains(f) {
                continue;
            }
            // A path past the cap of allocated sites (`MAX_ALLOCATED`) may
            // have allocated the site and let its object escape unseen.
            if !y.fresh.contains(f)
                && (y.allocated.contains(f) || y.allocated.len() >= MAX_ALLOCATED)
            {
                if !exit {
                    continue;
                }
                refreshed.push(f.clone());
            }
            fresh.push(f.clone());
        }
    }
    fresh.sort();
    refreshed.sort();
    (fresh, refreshed)
}

/// Facts about a spawn site (`site` names it) after two paths meet: those
/// both paths hold, and those of one path whose site the other did not
/// create at all. Sorted.
fn per_site<T: Clone + Ord>(
    a: &State,
    b: &State,
    xa: &[T],
    xb: &[T],
    site: impl Fn(&T) -> u32,
) -> Vec<T> {
    let mut v: Vec<T> = xa
        .iter()
        .filter(|c| xb.contains(c) || !b.created.contains(site(c)))
        .cloned()
        .collect();
    for c in xb {
        if !a.created.contains(site(c)) && !v.contains(c) {
            v.push(c.clone());
        }
    }
    v.sort();
    v
}

/// How two paths meet.
pub(super) fn join(a: Option<State>, b: Option<State>) -> Option<State> {
    join_with(a, b, false)
}

/// How two paths to a function's exit meet (see [`joined_fresh`]).
pub(super) fn join_exit(a: Option<State>, b: Option<State>) -> Option<State> {
    join_with(a, b, true)
}

fn join_with(a: Option<State>, b: Option<State>, exit: bool) -> Option<State> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => {
            let tries = merged(&a.tries, &b.tries);
            // A pair survives where the other path did not spawn the site at all.
            let clean = per_site(&a, &b, &a.clean, &b.clean, |c| c.0);
            let acquired = common(&a.acquired, &b.acquired);
            let conds = common(&a.conds, &b.conds);
            let mut guards: Vec<(u32, Name, bool)> = Vec::new();
            for s in a.created.union(&b.created).0 {
                let ga: Vec<_> = a.guards.iter().filter(|g| g.0 == s).cloned().collect();
                let gb: Vec<_> = b.guards.iter().filter(|g| g.0 == s).cloned().collect();
                let (x, y, gx) = match (a.created.contains(s), b.created.contains(s)) {
                    (true, true) => {
                        guards.extend(ga.into_iter().filter(|g| gb.contains(g)));
                        continue;
                    }
                    (true, false) => (&a, &b, ga),
                    _ => (&b, &a, gb),
                };
                // Created on one path only: where the paths disagree on a
                // flag, the site was created exactly when the flag is as
                // on that path. A fact noted after the creation counts too:
                // a function that creates its threads and `return 0`, or
                // fails and `return -1`, created them when its result is
                // zero (`#ret`, which its callers rename to the call).
                let mut gs = gx;
                for (v, nz) in x.conds.iter() {
                    if y.conds.contains(&(v.clone(), !*nz))
                        && !gs.iter().any(|g| &g.1 == v)
                        && gs.len() < MAX_TRACKED
                    {
                        gs.push((s, v.clone(), *nz));
                    }
                }
                guards.extend(gs);
            }
            let (fresh, newly_refreshed) = match a.fresh == b.fresh && a.allocated == b.allocated {
                true => (a.fresh.clone(), Vec::new()),
                false => {
                    let (f, r) = joined_fresh(&a, &b, exit);
                    (Sites::from(f), r)
                }
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
                // A count holds where the other path did not create the
                // site at all (no thread of it to join there).
                counts: per_site(&a, &b, &a.counts, &b.counts, |c| c.1).into(),
                count_vars: common(&a.count_vars, &b.count_vars).into(),
                rec_depth: rec_depth.into(),
                must: a.must.intersect(&b.must),
                may: a.may.union(&b.may),
                created: a.created.union(&b.created),
                active: a.active.union(&b.active),
                joined_some: a.joined_some.union(&b.joined_some),
                // Held where it holds on both paths (a site not running on a
                // path holds there).
                tid_held: SiteSet(
                    a.tid_held
                        .union(&b.tid_held)
                        .0
                        .into_iter()
                        .filter(|&s| {
                            (a.tid_held.contains(s) || !a.active.contains(s))
                                && (b.tid_held.contains(s) || !b.active.contains(s))
                        })
                        .collect(),
                ),
                tries: tries.into(),
                clean: clean.into(),
                acquired: acquired.into(),
                conds: conds.into(),
                guards: guards.into(),
                handed: common(&a.handed, &b.handed).into(),
                // Refreshed on either path, among the sites still fresh.
                refreshed: match a.refreshed == b.refreshed && newly_refreshed.is_empty() {
                    true => a.refreshed.clone(),
                    false => {
                        let mut v = merged(&a.refreshed, &b.refreshed);
                        v.retain(|x| fresh.contains(x));
                        for x in newly_refreshed {
                            if !v.contains(&x) {
                                v.push(x);
                            }
                        }
                        v.sort();
                        Sites::from(v)
                    }
                },
                newest: common(&a.newest, &b.newest).into(),
                own: super::own::common_own(&a.own, &b.own),
                joined_own: common(&a.joined_own, &b.joined_own).into(),
                fresh: fresh.into(),
                allocated: allocated.into(),
                syms: syms.into(),
                phases: phases.into(),
                joined_ix: joined_ix.into(),
                joined_tids: joined_tids.into(),
                main_ended: a.main_ended && b.main_ended,
                forked: a.forked && b.forked,
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
                    // A guard of one path holds on the other where that path
                    // agrees with it: the flag as the guard says and the
                    // lock held, or the flag the other way and the lock not
                    // held at all.
                    for (x, y) in [(&a, &b), (&b, &a)] {
                        for q in x.lock_guards.iter() {
                            let agrees = (y.conds.contains(&(q.0.clone(), q.1))
                                && y.must.0.contains(&q.2))
                                || (y.conds.contains(&(q.0.clone(), !q.1))
                                    && !y.may.0.iter().any(|o| o.lock == q.2.lock));
                            if agrees && !g.contains(q) && g.len() < MAX_TRACKED {
                                g.push(q.clone());
                            }
                        }
                    }
                    // A lock one path holds and the other does not, where the
                    // paths disagree on a flag, is held exactly per the flag.
                    // One the paths hold in different modes (written on one,
                    // read on the other: `if (mode == 1) wrlock(&l); else
                    // rdlock(&l);`) is held in each mode per the flag, and
                    // held either way.
                    for (x, y) in [(&a, &b), (&b, &a)] {
                        for h in &x.must.0 {
                            let read_there = match y.must.0.iter().find(|o| o.lock == h.lock) {
                                Some(o) if !h.shared && o.shared => Some(o.clone()),
                                Some(_) => continue,
                                None if y.may.0.iter().any(|o| o.lock == h.lock) => continue,
                                None => None,
                            };
                            for (v, nz) in &x.conds {
                                if y.conds.contains(&(v.clone(), !*nz))
                                    && g.len() + 1 + usize::from(read_there.is_some())
                                        <= MAX_TRACKED
                                    && !g.iter().any(|q| q.0 == *v && q.2.lock == h.lock)
                                {
                                    g.push((v.clone(), *nz, h.clone()));
                                    if let Some(o) = &read_there {
                                        g.push((v.clone(), !*nz, o.clone()));
                                    }
                                }
                            }
                        }
                    }
                    g.sort();
                    g.into()
                },
                sym_guards: {
                    let mut g = common(&a.sym_guards, &b.sym_guards);
                    let holds = |s: &State, q: &(Name, Vec<Elem>, bool)| {
                        s.syms.iter().any(|x| x.0 == q.0 && x.1 == q.1)
                    };
                    // As for `lock_guards`: a guard of one path holds on the
                    // other where that path agrees with it.
                    for (x, y) in [(&a, &b), (&b, &a)] {
                        for q in x.sym_guards.iter() {
                            let agrees = (y.conds.contains(&(q.0.clone(), q.1))
                                && y.syms.contains(&q.2))
                                || (y.conds.contains(&(q.0.clone(), !q.1)) && !holds(y, &q.2));
                            if agrees && !g.contains(q) && g.len() < MAX_TRACKED {
                                g.push(q.clone());
                            }
                        }
                    }
                    // A symbolic lock one path holds and the other does not,
                    // where the paths disagree on a flag.
                    for (x, y) in [(&a, &b), (&b, &a)] {
                        for s in x.syms.iter().filter(|s| !is_region(&s.1)) {
                            if holds(y, s) {
                                continue;
                            }
                            for (v, nz) in &x.conds {
                                if y.conds.contains(&(v.clone(), !*nz))
                                    && g.len() < MAX_TRACKED
                                    && !g
                                        .iter()
                                        .any(|q| q.0 == *v && q.2 .0 == s.0 && q.2 .1 == s.1)
                                {
                                    g.push((v.clone(), *nz, s.clone()));
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
