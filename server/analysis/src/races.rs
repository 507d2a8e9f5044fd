//! The race check, one memory location at a time (RacerF Section 7).
//!
//! A pair of accesses races when one writes, the threads differ (or are the
//! same non-unique thread), the locations overlap, no lock excludes them,
//! and the threads may run in parallel at those points. The pair is a
//! *must* race when the must-variants hold and no abstraction is involved.
//! Two accesses in different arms of one preprocessor conditional of their
//! function never race (no build has both), nor does a signal handler's
//! access with another on a `volatile sig_atomic_t`.

use crate::db::{SourceFile, Workspace};
use crate::facts::{AccessFact, Own, Slot, SlotArg, ThreadAnalysis, ThreadTable};
use crate::model::{Base, Elem, LocKey};
use crate::walk;
use racelens_syntax::AccessKind;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// A memory location of the race check.
#[salsa::interned(unsafe(no_lifetime), revisions = usize::MAX, debug)]
pub struct Location {
    #[returns(copy)]
    pub ws: Workspace,
    #[returns(ref)]
    pub key: Base,
}

/// How sure racelens is of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Confidence {
    Must,
    May,
}

/// Two racing accesses (indices into the location's facts).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RacePair {
    pub a: u32,
    pub b: u32,
    pub confidence: Confidence,
    /// Both accesses may hold an element of this lock array, which element
    /// unknown (`lock(&locks[hash(k) % N])`): a striped lock, most often
    /// the same element for the same object, which the check cannot show.
    pub lock_array: Option<LocKey>,
}

/// The whole-program walk.
#[salsa::tracked(returns(ref))]
pub fn thread_analysis(db: &dyn salsa::Database, ws: Workspace) -> Arc<ThreadAnalysis> {
    Arc::new(walk::analyse(db, ws))
}

/// Threads and spawn sites; backdated when only accesses changed.
#[salsa::tracked(returns(ref))]
pub fn thread_table(db: &dyn salsa::Database, ws: Workspace) -> Arc<ThreadTable> {
    thread_analysis(db, ws).table.clone()
}

/// All memory locations that threads access.
#[salsa::tracked(returns(ref))]
pub fn locations(db: &dyn salsa::Database, ws: Workspace) -> Vec<Location> {
    thread_analysis(db, ws)
        .locations
        .keys()
        .map(|k| Location::new(db, ws, k.clone()))
        .collect()
}

/// The locations that some access in one of `files` touches (every
/// location when `files` is `None`), in [`locations`] order.
pub fn locations_in(
    db: &dyn salsa::Database,
    ws: Workspace,
    files: Option<&FxHashSet<SourceFile>>,
) -> Vec<Location> {
    let all = locations(db, ws);
    match files {
        None => all.clone(),
        Some(fs) => all
            .iter()
            .copied()
            .filter(|&loc| {
                location_accesses(db, loc)
                    .iter()
                    .any(|a| fs.contains(&a.func.file(db)))
            })
            .collect(),
    }
}

/// The accesses to one location; backdated when they did not change.
#[salsa::tracked(returns(ref))]
pub fn location_accesses(db: &dyn salsa::Database, loc: Location) -> Arc<Vec<AccessFact>> {
    thread_analysis(db, loc.ws(db))
        .locations
        .get(loc.key(db))
        .cloned()
        .unwrap_or_default()
}

/// The race check of one location.
#[salsa::tracked(returns(ref))]
pub fn races_at(db: &dyn salsa::Database, loc: Location) -> Arc<Vec<RacePair>> {
    let facts = location_accesses(db, loc);
    let table = thread_table(db, loc.ws(db));
    Arc::new(check_location(loc.key(db), facts, table))
}

/// Pairs of racing accesses among `facts`.
pub fn check_location(base: &Base, facts: &[AccessFact], table: &ThreadTable) -> Vec<RacePair> {
    let mut out = Vec::new();
    if !facts.iter().any(|f| f.kind == AccessKind::Write) {
        return out;
    }
    // Quick reject: a single unique thread alone cannot race.
    let first = facts[0].thread;
    if facts.iter().all(|f| f.thread == first) && table.is_unique(first) {
        return out;
    }
    // Accesses that agree on everything the check looks at behave alike:
    // decide per class, then list pairs, at most `PARTNERS` per access.
    // The check splits in two: one part reads only the paths and kinds,
    // the other only the threads and contexts. A location has hundreds of
    // classes but a few dozen paths and contexts, so each part is decided
    // once per pair of paths or contexts (see [`ctx_pair`]).
    let mut class_of: FxHashMap<
        (
            &[Elem],
            u32,
            AccessKind,
            usize,
            bool,
            bool,
            Option<Slot>,
            Option<&Own>,
            Option<Arc<[racelens_syntax::Name]>>,
            bool,
            Option<(crate::db::FunctionId, &[(u32, u8)])>,
            bool,
        ),
        usize,
    > = FxHashMap::default();
    let mut classes: Vec<Class> = Vec::new();
    let mut group_of: FxHashMap<(u32, usize, bool), u32> = FxHashMap::default();
    let mut path_of: FxHashMap<&[Elem], u32> = FxHashMap::default();
    for (i, f) in facts.iter().enumerate() {
        let ctx = Arc::as_ptr(&f.ctx) as usize;
        let key = (
            &f.path[..],
            f.thread,
            f.kind,
            ctx,
            f.direct_local,
            f.weak,
            f.slot,
            f.own.as_ref(),
            f.joined.clone(),
            f.atomic,
            f.build.as_deref().map(|b| (f.func, b)),
            f.sig_atomic,
        );
        let c = *class_of.entry(key).or_insert_with(|| {
            let n = group_of.len() as u32;
            let group = *group_of.entry((f.thread, ctx, f.direct_local)).or_insert(n);
            let n = path_of.len() as u32;
            let path = *path_of.entry(&f.path[..]).or_insert(n);
            classes.push(Class {
                members: Vec::new(),
                group,
                path,
            });
            classes.len() - 1
        });
        classes[c].members.push(i as u32);
    }
    let (groups, paths) = (group_of.len(), path_of.len());
    // Per ordered pair of contexts: unknown, excluded, or may-race (and
    // whether their may-locksets overlap). Per pair of paths: overlap.
    const UNKNOWN: u8 = u8::MAX;
    let mut by_ctx = vec![UNKNOWN; groups * groups];
    let mut by_path = vec![UNKNOWN; paths * paths];
    let weak_base = matches!(base, Base::Type(_) | Base::Heap { .. });
    // An unpublished heap site (see `walk::private`).
    let private = table.private(base);
    let mut count = vec![0usize; facts.len()];
    for ci in 0..classes.len() {
        let ka = &classes[ci];
        let ra = &facts[ka.members[0] as usize];
        for cj in ci..classes.len() {
            let kb = &classes[cj];
            let rb = &facts[kb.members[0] as usize];
            if ra.kind == AccessKind::Read && rb.kind == AccessKind::Read {
                continue;
            }
            // Two atomic operations never race (C11 5.1.2.4).
            if ra.atomic && rb.atomic {
                continue;
            }
            // A signal handler may share a `volatile sig_atomic_t` with the
            // code it interrupts (C11 7.14.1.1).
            if (ra.sig_atomic || rb.sig_atomic)
                && (table.is_signal(ra.thread) || table.is_signal(rb.thread))
            {
                continue;
            }
            // A child process of `fork()` holds only the forking thread
            // and, maybe, the signal handlers it inherited (`walk::fork`):
            // the other access of a pair with a child's must be a handler's,
            // and not one in a child itself: two paths after a fork run in
            // the two processes their forks made (a handler interrupting a
            // child records its own accesses unforked).
            if (ra.forked && (rb.forked || !table.is_signal(rb.thread)))
                || (rb.forked && !table.is_signal(ra.thread))
            {
                continue;
            }
            let overlap = &mut by_path[ka.path as usize * paths + kb.path as usize];
            if *overlap == UNKNOWN {
                *overlap = paths_may_overlap(&ra.path, &rb.path) as u8;
            }
            if *overlap == 0
                || ra.other_build(rb)
                || slot_apart(base, ra, rb, table)
                || own_apart(base, ra, rb, table)
                || joined_apart(ra, rb, table)
                || joined_apart(rb, ra, table)
                || private.is_some_and(|p| p.apart(ra.thread, rb.thread))
            {
                continue;
            }
            let decided = &mut by_ctx[ka.group as usize * groups + kb.group as usize];
            if *decided == UNKNOWN {
                *decided = match ctx_pair(base, ra, rb, table) {
                    None => 0,
                    Some(false) if shared_lock_array(ra, rb).is_some() => 3,
                    Some(false) => 1,
                    Some(true) => 2,
                };
            }
            if *decided == 0 {
                continue;
            }
            let merged = |t: u32| {
                table
                    .threads
                    .get(t as usize)
                    .is_some_and(|x| x.merged_launches || x.speculative)
            };
            let must = *decided == 2
                && !merged(ra.thread)
                && !merged(rb.thread)
                && !ra.weak
                && !rb.weak
                && !weak_base
                && ka.path == kb.path
                && !ra.path.iter().any(|e| matches!(e, Elem::Index(None)))
                && !partly_running(ra, rb, table)
                && !partly_running(rb, ra, table);
            let c = if must {
                Confidence::Must
            } else {
                Confidence::May
            };
            let lock_array = match *decided {
                3 => shared_lock_array(ra, rb),
                _ => None,
            };
            for (x, &a) in ka.members.iter().enumerate() {
                let others = if ci == cj {
                    &kb.members[x..]
                } else {
                    &kb.members[..]
                };
                for &b in others {
                    if count[a as usize] >= PARTNERS && count[b as usize] >= PARTNERS {
                        continue;
                    }
                    count[a as usize] += 1;
                    count[b as usize] += 1;
                    out.push(RacePair {
                        a,
                        b,
                        confidence: c,
                        lock_array: lock_array.clone(),
                    });
                }
            }
        }
    }
    out
}

/// A lock array both accesses may hold an element of (`item_locks[*]`,
/// taken as `lock(&item_locks[hv % N])`), which element unknown: the
/// lock key with an unknown index below a named array or object, in write
/// mode on one side at least.
fn shared_lock_array(a: &AccessFact, b: &AccessFact) -> Option<LocKey> {
    let striped = |k: &LocKey| {
        !matches!(k.base, Base::Type(_) | Base::Unknown)
            && k.path.iter().any(|e| matches!(e, Elem::Index(None)))
    };
    a.may.0.iter().find_map(|h| {
        (striped(&h.lock)
            && b.may
                .0
                .iter()
                .any(|o| o.lock == h.lock && !(o.shared && h.shared)))
        .then(|| h.lock.clone())
    })
}

/// Accesses alike for the check: their members, and the indices of their
/// context (thread, context, direct local) and path among the location's.
struct Class {
    members: Vec<u32>,
    group: u32,
    path: u32,
}

/// Racing partners listed per access (the rest add nothing to a report).
const PARTNERS: usize = 16;

/// The part of the check that reads only the threads, the direct-local
/// flags and the contexts of two accesses to `base` (not their paths,
/// kinds or weakness): `None` when they cannot race, else whether their
/// may-locksets leave them unexcluded (a must race needs that too).
fn ctx_pair(base: &Base, a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> Option<bool> {
    if never_runs(a, table) || never_runs(b, table) {
        return None;
    }
    let unique = |t: u32| table.is_unique(t);
    // One instance, or instances that run one after another: each joined
    // before the next is created.
    if a.thread == b.thread && (unique(a.thread) || table.is_serial(a.thread)) {
        return None;
    }
    // Two instances of a thread touch two objects of a heap site that
    // neither shared memory nor the thread's arguments reach.
    if a.thread == b.thread && table.one_subtree(base, a.thread) {
        return None;
    }
    // Two accesses by name to a local are in the same frame only within
    // one thread instance.
    if a.direct_local && b.direct_local {
        return None;
    }
    // Instances of one abstract thread each have their own frames: a local
    // reached through a pointer (`snprintf(buf, ...)`) in two of them is two
    // objects. (A local one instance hands to another of the same thread
    // through global memory is missed.)
    // Likewise two roots of a library: no one created either, so neither
    // was handed a pointer into the other's frames.
    let creatorless = |t: u32| {
        table
            .threads
            .get(t as usize)
            .map(|th| th.parent.is_none())
            .unwrap_or(false)
    };
    // But a creator's local its arguments reach (`int n; for (..)
    // create(.., &n)`) is one object all its instances share.
    let handed = |t: u32| {
        table
            .threads
            .get(t as usize)
            .is_some_and(|th| th.arg_locals.binary_search(base).is_ok())
    };
    // And so is a local of a function the thread never runs (`main`'s
    // array stored in a global struct for the workers to fill).
    let outer = |t: u32| {
        table
            .threads
            .get(t as usize)
            .is_some_and(|th| th.outer_locals.binary_search(base).is_ok())
    };
    if matches!(base, Base::Local { .. })
        && ((a.thread == b.thread && !handed(a.thread) && !outer(a.thread))
            || (creatorless(a.thread) && creatorless(b.thread)))
    {
        return None;
    }
    // Two threads running one function have two frames: its local is shared
    // only when its address escaped to another thread.
    if matches!(base, Base::Local { .. }) && table.escaped_locals.binary_search(base).is_err() {
        return None;
    }
    // Concurrent calls into a library are assumed to pass it distinct
    // objects: what two roots reach only through unresolved pointers (their
    // parameters) is the callers' business. The library's own state
    // (globals, statics and what they point to) still races.
    let library_root = |t: u32| creatorless(t) && !unique(t);
    if matches!(base, Base::Type(_)) && library_root(a.thread) && library_root(b.thread) {
        return None;
    }
    // So do the objects a library allocates and links only into what its
    // callers passed (a tree's nodes from its own pool, a table's
    // buckets): no global, static or escaped local reaches them.
    if matches!(base, Base::Heap { .. })
        && library_root(a.thread)
        && library_root(b.thread)
        && table.global_heap.binary_search(base).is_err()
    {
        return None;
    }
    if a.must.excludes(&b.must)
        || once_ordered(a, b)
        || once_ordered(b, a)
        || creation_excludes(a, b, table)
        || creation_excludes(b, a, table)
        || joined_inside(a, b, table)
        || joined_inside(b, a, table)
    {
        return None;
    }
    if barrier_ordered(a, b, table)
        || signal_ordered(a, b, table)
        || signal_ordered(b, a, table)
        || once_branch_ordered(a, b)
        || once_branch_ordered(b, a)
        || !may_happen_in_parallel(a, b, table, base)
    {
        return None;
    }
    Some(!a.may.excludes(&b.may))
}

/// Does `b`'s thread (or a thread on its creation chain) run at `a` on
/// some paths only: joined on another path to `a` (`FactCtx::partly`)?
/// Then the pair races on those paths, not on every one: a *may* race.
fn partly_running(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    !a.partly.0.is_empty()
        && table
            .chain(b.thread)
            .iter()
            .any(|(_, s)| s.is_some_and(|s| a.partly.contains(s)))
}

/// Two thread instances never share an object each holds as its own (see
/// `walk::own`): one it allocated, or the fresh argument it was handed.
/// (Not an argument and an allocation: an allocator and the thread it
/// handed the object to share it.) An object loaded through members that
/// hold only their owner's allocations (`walk::held`) is one the instance
/// allocated, even where the walk lost track of which object it is.
fn own_apart(base: &Base, a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let (Some(x), Some(y)) = (&a.own, &b.own) else {
        return false;
    };
    let thread = |t: u32| table.threads.get(t as usize);
    let owns = |t: u32| thread(t).is_some_and(|t| t.owns_arg);
    // Two instances of one thread never share their argument when each
    // creation of its site handed another object.
    let per_site = |t: u32| thread(t).is_some_and(|t| t.arg_per_site);
    // Each instance of a slot thread handed `&A[i]` gets an element of its
    // own.
    let slot_ptr = |t: u32| thread(t).is_some_and(|t| t.owns_slot_element());
    let allocated = |k: &Own, t: u32| match k {
        Own::Alloc => true,
        Own::Held(c) => table.held.holds(c, owns(t), slot_ptr(t)),
        Own::Arg | Own::ArgPart | Own::ArgInner | Own::Frame => false,
    };
    let arg = |k: &Own| matches!(k, Own::Arg | Own::ArgPart | Own::ArgInner);
    // (Facts record a pointer inside the argument's member as the
    // argument, see `Walker::own_access`.)
    let whole = |k: &Own| matches!(k, Own::Arg | Own::ArgInner);
    // Two instances' accesses through a slot thread's argument itself
    // (not past its start) touch two elements.
    match base {
        Base::Heap { .. } if arg(x) && arg(y) => {
            (owns(a.thread) && owns(b.thread))
                || (a.thread == b.thread && per_site(a.thread))
                || (a.thread == b.thread && slot_ptr(a.thread) && whole(x) && whole(y))
        }
        Base::Heap { .. } => allocated(x, a.thread) && allocated(y, b.thread),
        // Two instances' own frames.
        Base::Local { .. } => *x == Own::Frame && *y == Own::Frame,
        Base::Type(_) => {
            matches!(x, Own::Held(_))
                && matches!(y, Own::Held(_))
                && allocated(x, a.thread)
                && allocated(y, b.thread)
        }
        _ => false,
    }
}

/// `a` goes through `x` after `pthread_join(x->f)` (one of the members
/// joined so), and `b` is the access of a thread to its own argument, a
/// thread each creation of whose site handed another object
/// (`Thread::arg_per_site`) and stored its id in that argument's member
/// `f` (`pthread_create(&c->th, .., c)`): if `x`'s object is `b`'s, its
/// thread was joined before `a`; if not, they touch two objects.
fn joined_apart(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let Some(joined) = &a.joined else {
        return false;
    };
    let Some(th) = table.threads.get(b.thread as usize) else {
        return false;
    };
    b.own == Some(Own::Arg)
        && th.arg_per_site
        && th
            .site
            .and_then(|s| table.sites.get(s as usize))
            .is_some_and(|s| s.tid_in_arg.as_ref().is_some_and(|f| joined.contains(f)))
}

/// Two instances of one slot thread (see `walk::slots`) accessing the
/// elements of their own numbers: different elements. A thread numbered
/// only within its creator's frame (`Thread::slot_frame_only`) is told
/// apart only on a local of one frame ([`frame_of_one`]): there each
/// creator instance's array is another object.
fn slot_apart(base: &Base, a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let (Some(sa), Some(sb)) = (a.slot, b.slot) else {
        return false;
    };
    let frame_only = |t: u32| {
        table
            .threads
            .get(t as usize)
            .is_none_or(|t| t.slot_frame_only)
    };
    if (frame_only(a.thread) || frame_only(b.thread)) && !frame_of_one(base, table) {
        return false;
    }
    if sa.pos != sb.pos || sa.stride != sb.stride {
        return false;
    }
    if sa.from == SlotArg::Creator || sb.from == SlotArg::Creator {
        return creator_apart(a, b, table) || creator_apart(b, a, table);
    }
    if a.thread != b.thread {
        return false;
    }
    let Some(th) = table.threads.get(a.thread as usize) else {
        return false;
    };
    let pos = sa.pos as usize;
    // Each index is the instance's number: in the entry function, derived
    // as the thread received it, or in a function whose parameter every
    // call fills with the number (`init_one(id)` beside `states[id]`).
    let numbered = |x: &AccessFact, sx: &Slot| match sx.from {
        SlotArg::Param(i) => th.slot_params.contains(&(x.func, i)),
        _ => th
            .slot
            .is_some_and(|(entry, arg)| x.func == entry && sx.holds_for(arg)),
    };
    // Objects loaded from the instance's own element of an array whose
    // elements never share an object (`walk::inject`).
    if sa.via != 0 || sb.via != 0 {
        return sa.via == sb.via
            && table.injective.binary_search(&sa.via).is_ok()
            && numbered(a, &sa)
            && numbered(b, &sb);
    }
    numbered(a, &sa)
        && numbered(b, &sb)
        && a.path.len() > pos
        && b.path.len() > pos
        && a.path[..pos] == b.path[..pos]
}

/// `c` is the creating loop's access of `A[i]` before it creates thread
/// `i` (the thread of `t`), and `t` that thread's access of its own
/// element: for `t`'s instance `k`, `c` happens before its creation
/// (iterations up to `k`) or touches another element (those after).
fn creator_apart(c: &AccessFact, t: &AccessFact, table: &ThreadTable) -> bool {
    let (Some(sc), Some(st)) = (c.slot, t.slot) else {
        return false;
    };
    let Some(th) = table.threads.get(t.thread as usize) else {
        return false;
    };
    let (Some((entry, arg)), Some(site)) = (th.slot, th.site) else {
        return false;
    };
    let Some(site) = table.sites.get(site as usize) else {
        return false;
    };
    let pos = sc.pos as usize;
    sc.from == SlotArg::Creator
        && st.stride == 1
        && st.holds_for(arg)
        && t.func == entry
        && th.parent == Some(c.thread)
        && site.func == c.func
        && site.call == sc.before
        && c.path.len() > pos
        && t.path.len() > pos
        && c.path[..pos] == t.path[..pos]
}

/// Is `a`'s thread bracketed by a creator holding a lock that `b` holds?
/// The creator itself is not excluded: it holds the lock while `a` runs.
fn creation_excludes(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let Some(th) = table.threads.get(a.thread as usize) else {
        return false;
    };
    let Some(tb) = table.threads.get(b.thread as usize) else {
        return false;
    };
    th.creation_locks.iter().any(|(creator, l)| {
        (*creator != b.thread && b.must.0.iter().any(|h| &h.lock == l && !h.shared))
            // Both bracketed by the same lock held by different creators.
            || tb.creation_locks.iter().any(|(c2, l2)| l2 == l && c2 != creator)
    })
}

/// Was `a`'s thread created and joined inside a critical section of its
/// creator that also covers the creation of `b`'s thread, and had `b`'s
/// thread acquired that lock before `b`? Then `a` happens before `b`.
fn joined_inside(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let Some(ta) = table.threads.get(a.thread as usize) else {
        return false;
    };
    let Some(site_b) = table.threads.get(b.thread as usize).and_then(|t| t.site) else {
        return false;
    };
    ta.joined_inside
        .iter()
        .any(|(s, l)| *s == site_b && b.acquired.iter().any(|(s2, l2)| *s2 == site_b && l2 == l))
}

/// Distinct fields or distinct constant indices do not overlap; a prefix
/// (the whole struct) overlaps its parts. Where one path indexes an element
/// and the other names a member at the same depth, the member's path went
/// through a pointer into the array that says no index (`dentp = pdents +
/// n; dentp->name` against `(pdents + k)->flags`): the element index is
/// skipped and the rest compared, so two different members of some
/// elements do not overlap, while a whole element (`[*]`, a `memset` of it)
/// still overlaps each of its members.
fn paths_may_overlap(a: &[Elem], b: &[Elem]) -> bool {
    match (a.split_first(), b.split_first()) {
        (None, _) | (_, None) => true,
        (Some((Elem::Field(p), ra)), Some((Elem::Field(q), rb))) => {
            p == q && paths_may_overlap(ra, rb)
        }
        (Some((Elem::Index(Some(i)), ra)), Some((Elem::Index(Some(j)), rb))) => {
            i == j && paths_may_overlap(ra, rb)
        }
        (Some((Elem::Index(_), ra)), Some((Elem::Index(_), rb))) => paths_may_overlap(ra, rb),
        (Some((Elem::Index(_), ra)), Some((Elem::Field(_), _))) => paths_may_overlap(ra, b),
        (Some((Elem::Field(_), _)), Some((Elem::Index(_), rb))) => paths_may_overlap(a, rb),
    }
}

/// Is `a` inside a `pthread_once` init function whose completion `b` has
/// already waited for?
fn once_ordered(a: &AccessFact, b: &AccessFact) -> bool {
    a.must.0.iter().any(|h| match &h.lock.base {
        Base::Synthetic(n) => match n.strip_prefix("once:") {
            Some(k) => b.must.0.iter().any(|o| matches!(&o.lock.base, Base::Synthetic(m) if m.strip_prefix("once-done:") == Some(k))),
            None => false,
        },
        _ => false,
    })
}

/// Is `a` made inside the one run of a `pthread_once` init function (it
/// holds `once:K` for a named control `K`) before, or without, the
/// creation of `b`'s thread or of an ancestor of it, at a site that
/// creates only inside that init function? The function runs once per
/// control, in whichever thread gets there first: the walk meets it in
/// every caller, but `a` and the creation belong to that one run, where
/// `a` comes first (the site is not among `a.created`) or the creation
/// does not happen at all (another branch). Either way `a` happens before
/// `b`'s thread starts, or that thread does not exist.
fn once_creation_ordered(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let held = |n: &racelens_syntax::Name| {
        a.must
            .0
            .iter()
            .any(|h| matches!(&h.lock.base, Base::Synthetic(m) if m == n))
    };
    if !a
        .must
        .0
        .iter()
        .any(|h| matches!(&h.lock.base, Base::Synthetic(m) if m.starts_with("once:")))
    {
        return false;
    }
    table
        .chain(b.thread)
        .iter()
        .filter_map(|(_, s)| *s)
        .any(|s| {
            !a.created.contains(s)
                && table
                    .sites
                    .get(s as usize)
                    .is_some_and(|x| x.once_held.as_ref().is_some_and(|o| o.iter().any(held)))
        })
}

/// Descendant lockset: `early` holds a lock continuously since it spawned
/// `site`, and `late`'s thread (spawned through `site`) had acquired that
/// lock before `late`: so `early` happens before `late`.
fn lock_ordered(early: &AccessFact, site: u32, late: &AccessFact) -> bool {
    early
        .clean
        .iter()
        .any(|(s, l)| *s == site && late.acquired.iter().any(|(s2, l2)| s2 == s && l2 == l))
}

/// Joining a thread ends its descendants only if each of them was joined by
/// its own creator: does some thread on `chain` (descendant first, up to the
/// joined child) leave the next one running?
fn leaks_below(table: &ThreadTable, chain: &[(u32, Option<u32>)]) -> bool {
    for w in chain.windows(2) {
        let (child_site, parent) = (w[0].1, w[1].0);
        let Some(cs) = child_site else { return true };
        match table
            .threads
            .get(parent as usize)
            .and_then(|t| t.leaks.as_ref())
        {
            Some(l) if !l.contains(cs) => {}
            _ => return true,
        }
    }
    false
}

/// Are the accesses separated by a barrier both threads wait on: one has
/// passed fewer waits on every path than the other has on any?
fn barrier_ordered(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    let waits = |t: u32, k: &str| {
        table
            .threads
            .get(t as usize)
            .map(|th| th.barriers.iter().any(|x| &**x == k))
            .unwrap_or(false)
    };
    let phase = |f: &AccessFact, k: &str| {
        f.phases
            .iter()
            .find(|p| &*p.0 == k)
            .map(|p| (p.1, p.2))
            .unwrap_or((0, 0))
    };
    // Signalling semaphores' counts are `+s`/`-s@n` (`signal_ordered`).
    let mut keys: Vec<&str> = a
        .phases
        .iter()
        .chain(b.phases.iter())
        .map(|p| &*p.0)
        .filter(|k| !k.starts_with(['+', '-', '~', '=', '?', '^', '!']))
        .collect();
    keys.dedup();
    keys.into_iter().any(|k| {
        if !waits(a.thread, k) || !waits(b.thread, k) {
            return false;
        }
        let (pa, pb) = (phase(a, k), phase(b, k));
        pa.1 < pb.0 || pb.1 < pa.0
    })
}

/// Is access `f` made only where a test found a lazily set global zero
/// (`^g#d`, `walk/once.rs`), in a thread created after that global was set
/// (`Thread::set_globals`)? Then it never runs in that thread.
fn never_runs(f: &AccessFact, table: &ThreadTable) -> bool {
    let Some(th) = table.threads.get(f.thread as usize) else {
        return false;
    };
    !th.set_globals.is_empty()
        && f.phases.iter().any(|(k, fewest, _)| {
            *fewest > 0
                && k.strip_prefix('^')
                    .and_then(|k| k.rsplit_once('#'))
                    .is_some_and(|(g, _)| th.set_globals.binary_search_by(|x| (**x).cmp(g)).is_ok())
        })
}

/// Is access `a` made in a once branch (`=F@L`) that access `b` follows
/// on every path, past its own test of `F` under `L` (`?F@L`)? The branch
/// runs at most once, in the first critical section of `L` that tests `F`
/// (`walk/once.rs`).
fn once_branch_ordered(a: &AccessFact, b: &AccessFact) -> bool {
    a.phases.iter().any(|(k, fewest, _)| {
        *fewest > 0
            && k.strip_prefix('=').is_some_and(|key| {
                b.phases
                    .iter()
                    .any(|(p, n, _)| *n > 0 && p.strip_prefix('?') == Some(key))
            })
    })
}

/// Is access `a` ordered before access `b` by a signalling semaphore `s`
/// (`walk/semaphores.rs`)? `a`'s thread is the only one that posts `s` and
/// runs once, and it had posted at most `p` times before `a`; `b` follows
/// more than `p + n` completed waits on every path (`n` the initial
/// count). Those waits consumed more than `p` posts, so `b`'s thread
/// passed a wait that read a post made after `a` (each post and wait is a
/// read-modify-write of the count, so the wait synchronizes with it).
/// `b`'s thread may post too, when it runs once: its own posts made before
/// `b` (at most `q`) can feed its waits, so then it needs more than
/// `p + n + q` of them; or, when it posted only after a first wait on
/// every path (no `~s`), that first wait took no post of its own, which
/// orders `a` if `p + n` is 0.
fn signal_ordered(a: &AccessFact, b: &AccessFact, table: &ThreadTable) -> bool {
    if a.thread == b.thread {
        return false;
    }
    b.phases.iter().any(|(k, waits, _)| {
        let Some((s, init)) = k.strip_prefix('-').and_then(|k| k.rsplit_once('@')) else {
            return false;
        };
        let Ok(init) = init.parse::<u8>() else {
            return false;
        };
        let post = format!("+{s}");
        let unique = |t: u32| table.threads[t as usize].unique;
        let posters: Vec<usize> = table
            .threads
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                t.barriers.iter().any(|x| **x == *post)
                    && !(*i == b.thread as usize && unique(b.thread))
            })
            .map(|(i, _)| i)
            .collect();
        if posters != [a.thread as usize] || !unique(a.thread) {
            return false;
        }
        let posted = |f: &AccessFact| f.phases.iter().find(|p| *p.0 == *post).map_or(0, |p| p.2);
        let (pa, pb) = (posted(a), posted(b));
        // A capped count of posts is not known.
        let poisoned = b.phases.iter().any(|p| *p.0 == *format!("~{s}") && p.2 > 0);
        let first_wait = !poisoned && pa == 0 && init == 0 && *waits > 0;
        // A flag lets every wait through one post (`walk/flags.rs`): only
        // what came before the first post is ordered.
        let flag = s.starts_with(crate::walk::FLAG_PREFIX);
        first_wait
            || (!flag
                && pa < crate::facts::MAX_PHASE
                && pb < crate::facts::MAX_PHASE
                && u16::from(pa) + u16::from(init) + u16::from(pb) < u16::from(*waits))
    })
}

/// Is `base` a local whose address reaches other threads only through
/// thread arguments (`ThreadTable::arg_only_locals`)? Then an access of
/// its frame's thread and one of a thread descended from it meet only
/// within one instance of the first.
fn frame_of_one(base: &Base, table: &ThreadTable) -> bool {
    matches!(base, Base::Local { .. }) && table.arg_only_locals.binary_search(base).is_ok()
}

/// Active-threads check: can accesses `a` and `b` to `base` overlap in
/// time, given which threads each side has created and joined at that
/// point? Where one thread
/// descends from the other, the ancestor counts as one instance when it
/// runs once, when `base` is a local of one frame (see [`frame_of_one`]),
/// or when `base` is a heap site whose objects the ancestor's instances
/// cannot pass to each other's subtrees (`ThreadTable::one_subtree`); and
/// so does the common ancestor of two threads, save for a local's frame.
pub fn may_happen_in_parallel(
    a: &AccessFact,
    b: &AccessFact,
    table: &ThreadTable,
    base: &Base,
) -> bool {
    let one_frame = frame_of_one(base, table);
    if a.thread == b.thread {
        return true;
    }
    if once_creation_ordered(a, b, table) || once_creation_ordered(b, a, table) {
        return false;
    }
    // A thread that joined `main` runs after all of it.
    if (a.thread == 0 && b.main_ended) || (b.thread == 0 && a.main_ended) {
        return false;
    }
    let ca = table.chain(a.thread);
    let cb = table.chain(b.thread);
    // A library's load entry runs alone before every other root starts
    // (its own accesses; the threads it creates are its descendants).
    let root = |c: &[(u32, Option<u32>)]| c.last().map(|x| x.0);
    let first = |t: u32| table.threads.get(t as usize).is_some_and(|t| t.load_entry);
    if (first(a.thread) && root(&cb) != Some(a.thread))
        || (first(b.thread) && root(&ca) != Some(b.thread))
    {
        return false;
    }
    let unique = |t: u32| table.runs_once(t);
    // A thread that runs once, or whose instances have objects of `base`
    // of their own (the ancestor of both accesses counts as one instance).
    let as_one = |t: u32| unique(t) || table.one_subtree(base, t);
    let owner = |t: u32| one_frame || as_one(t);
    // `b`'s thread descends from `a`'s: `a` happens in parallel only after
    // creating that branch and before joining it.
    if let Some(pos) = cb.iter().position(|(t, _)| *t == a.thread) {
        if pos == 0 || !owner(a.thread) {
            return true;
        }
        let site = cb[pos - 1].1.expect("child has a site");
        if lock_ordered(a, site, b) {
            return false;
        }
        return a.active.contains(site)
            || (a.created.contains(site) && leaks_below(table, &cb[..pos]));
    }
    if let Some(pos) = ca.iter().position(|(t, _)| *t == b.thread) {
        if pos == 0 || !owner(b.thread) {
            return true;
        }
        let site = ca[pos - 1].1.expect("child has a site");
        if lock_ordered(b, site, a) {
            return false;
        }
        return b.active.contains(site)
            || (b.created.contains(site) && leaks_below(table, &ca[..pos]));
    }
    // Siblings under a common ancestor: ordered if one branch is joined
    // before the other is created.
    for (ia, (ta, _)) in ca.iter().enumerate() {
        if let Some(ib) = cb.iter().position(|(tb, _)| tb == ta) {
            if ia == 0 || ib == 0 || !as_one(*ta) {
                return true;
            }
            let (sa, sb) = (ca[ia - 1].1.expect("site"), cb[ib - 1].1.expect("site"));
            // Two threads the ancestor created itself, at sites neither of
            // which it visits while the other's thread may run (a restart
            // loop that joins one input thread before it creates the next,
            // whichever site creates it).
            let direct = ia == 1 && ib == 1;
            let seen = |s: u32, other: u32| {
                table
                    .sites
                    .get(s as usize)
                    .is_none_or(|x| x.unseen_spawns || x.active_seen.contains(other))
            };
            if direct && !seen(sa, sb) && !seen(sb, sa) {
                return false;
            }
            if sa == sb {
                return true;
            }
            let joined_before = |s: u32, other: u32| {
                table
                    .sites
                    .get(s as usize)
                    .and_then(|x| x.joined_before.as_ref())
                    .map(|j| j.contains(other))
                    .unwrap_or(false)
            };
            // Neither is ever created before the other: the common ancestor
            // creates one or the other (`if (c) create(a) else create(b)`).
            let created_before = |s: u32, other: u32| {
                table
                    .sites
                    .get(s as usize)
                    .map(|x| x.created_before.contains(other))
                    .unwrap_or(true)
            };
            if !created_before(sa, sb) && !created_before(sb, sa) {
                return false;
            }
            return !(joined_before(sb, sa) || joined_before(sa, sb));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::paths_may_overlap;
    use crate::model::Elem;

    fn f(n: &str) -> Elem {
        Elem::Field(n.into())
    }

    #[test]
    fn a_member_without_its_element_index_overlaps_only_the_same_member() {
        let any = Elem::Index(None);
        // `e->name` (index lost) against `(p + k)->blocks`: two members.
        assert!(!paths_may_overlap(
            &[f("name")],
            &[any.clone(), f("blocks")]
        ));
        assert!(!paths_may_overlap(
            &[any.clone(), f("blocks")],
            &[f("name")]
        ));
        // The same member, and a whole element, do overlap.
        assert!(paths_may_overlap(&[f("mode")], &[any.clone(), f("mode")]));
        assert!(paths_may_overlap(&[f("mode")], &[Elem::Index(Some(2))]));
        // Distinct fields and distinct constant indices, as before.
        assert!(!paths_may_overlap(&[f("a")], &[f("b")]));
        assert!(!paths_may_overlap(
            &[Elem::Index(Some(1)), f("a")],
            &[Elem::Index(Some(2)), f("a")]
        ));
        assert!(paths_may_overlap(&[f("s")], &[f("s"), f("x")]));
    }
}
