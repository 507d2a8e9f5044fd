//! The output of the thread walk: threads, spawn sites and access facts.
//!
//! Facts carry the function and a function-relative span, never absolute
//! positions, so that the per-location race checks backdate when an edit
//! only moves code around.

use crate::db::FunctionId;
use crate::model::{Base, Elem, LocKey, LockSet, SiteSet};
use racelens_syntax::{AccessKind, Name, Span};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An abstract thread: main, or the threads of one spawn site and entry
/// function created by one parent thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    pub entry: Name,
    pub parent: Option<u32>,
    pub site: Option<u32>,
    /// Created exactly once in every run.
    pub unique: bool,
    /// Creation locksets: (creator thread, lock) where the creator held the
    /// lock from this thread's creation until it was joined (or forever).
    /// Other threads holding the lock cannot run in parallel with this one.
    pub creation_locks: Vec<(u32, LocKey)>,
    /// (sibling site, lock): the creator held the lock continuously from
    /// before the sibling site spawned until this thread was joined. The
    /// sibling acquires the lock only after that, so this thread's accesses
    /// all happen before the sibling's accesses that follow its acquisition.
    pub joined_inside: Vec<(u32, LocKey)>,
    /// Sites this thread may leave running when it ends (`None`: unknown).
    pub leaks: Option<SiteSet>,
    /// Barriers this thread waits on somewhere.
    pub barriers: Vec<Name>,
    /// Each instance of this thread has a slot number of its own: its
    /// creation loop's counter, handed to it as its argument (see
    /// [`SlotArg`]); the function is its entry, where accesses marked with
    /// a [`Slot`] index by that number.
    pub slot: Option<(FunctionId, SlotArg)>,
    /// For a slot thread: the functions whose parameter at the position
    /// holds the thread's number, because every call of the function in
    /// the program passes its entry's number local or such a parameter
    /// (`do_work(id)` for `long id = (long)arg`; `walk::slots`).
    pub slot_params: Vec<(FunctionId, u8)>,
    /// The slot's numbers are unique only within one frame of the creator:
    /// the creator has several instances (a pool worker running a
    /// parallel-for), so the slot separates accesses only to a local of
    /// one frame (`races::slot_apart`), each creator instance's own array.
    pub slot_frame_only: bool,
    /// Its entry calls through a pointer to one of several functions (a
    /// launcher's trampoline, `thread->callback(thread)`): its instances may
    /// be different launches running different code, created and joined at
    /// different times, so no pair involving it is a *must* race.
    pub merged_launches: bool,
    /// Every creation handed it a fresh heap object as its argument (no
    /// other thread held it): each instance's argument is its own.
    pub owns_arg: bool,
    /// Every creation at its site handed it another heap object, though
    /// maybe one an earlier creation of the same block also got
    /// (`create(&o->rx, .., rx, o); create(&o->tx, .., tx, o)`): two of its
    /// instances never share their argument, and a member of the argument
    /// holds only the id its own creation stored. Implied by `owns_arg`.
    pub arg_per_site: bool,
    /// A callback group whose functions were only handed, in a table of
    /// functions (`struct ops`), to code without a body that is not known to
    /// run them on another thread (`vn_make_ops(.., template, ..)`): it may
    /// never run at all, so no pair involving it is a *must* race.
    pub speculative: bool,
    /// A library's load entry (see `walk::threads::is_load_entry`): the host
    /// calls it once, alone, before any other entry point, so its own
    /// accesses happen before every other root's (not before the threads it
    /// creates).
    pub load_entry: bool,
    /// One instance that runs its entry functions again and again (a
    /// single-threaded host's dispatch thread, see
    /// `walk::threads::single_threaded_host`): its accesses never race with
    /// each other, but nothing it does is ordered before or after the
    /// threads it creates, and those are never unique.
    pub repeats: bool,
    /// The locals its arguments reach (through the pointer store), sorted:
    /// frames of its creators (`int n; create(.., &n)` in a loop), which
    /// its instances share, unlike the locals of their own frames.
    pub arg_locals: Vec<Base>,
    /// The escaped locals of functions it never runs, sorted (`main`'s
    /// `int res[N]` stored where the thread's code finds it): they are
    /// others' frames, which its instances may share.
    pub outer_locals: Vec<Base>,
    /// Globals set lazily and never cleared (`walk/once.rs`) that were set
    /// at every creation of this thread or of one of its ancestors: code
    /// that runs only when a test finds one of them zero never runs here.
    pub set_globals: Vec<Name>,
    /// A signal handler, installed with `signal`/`sigaction` (its site is
    /// the installation): it may run whenever the signal arrives after
    /// that, interrupting any thread, so it is a concurrent context of its
    /// own (C11 5.1.2.4: an access in a handler and one in the code it
    /// interrupts are potentially concurrent).
    pub signal: bool,
}

/// How a thread created in a counting loop receives the loop's counter `i`
/// (distinct in each iteration, so in each instance).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SlotArg {
    /// `(void *) i`.
    Value,
    /// `&A[i]`.
    Pointer,
    /// `&A[i * K]`, the start of a slice of `K` elements (`K` here). As an
    /// access's derivation: `p[j]` with `j` below this bound, which holds
    /// for a slice of at least as many elements; such a [`Slot`]'s
    /// `stride` is 0, and its index lies in the instance's slice.
    Slice(u32),
    /// `&A[i]` after `A[i] = i` in the same iteration: the pointee holds
    /// the number too.
    Stored,
    /// `&A[i]` after `A[i].f = i` in the same iteration: the pointee's
    /// member `f` (named by its [`member_tag`]) holds the number.
    Member(u64),
    /// Not a thread's argument: the function's parameter at this position
    /// indexes (`results[id]` in `do_work(int id)`). It holds the slot
    /// thread's number when every call of the function passes it
    /// ([`Thread::slot_params`]).
    Param(u8),
    /// Not a thread's argument: the creating loop's own access `A[i]`
    /// before the creation call `Slot::before` of the same iteration. It
    /// happens before thread `i` starts and touches no other instance's
    /// element.
    Creator,
}

/// An access of a thread's entry function whose index at `pos` of its path
/// lies in `[stride * k, stride * k + stride)` for the instance's slot
/// number `k`, derived as `from` says: two instances of one such thread
/// touch different elements there.
///
/// Or, when `via` is not zero, an access of the object that element `k` of
/// an array of pointers points to (`A[k]->f`): `via` names the array (see
/// `walk::inject`), and two instances touch two objects when every pointer
/// the program stores into the array is a fresh object's
/// ([`ThreadTable::injective`]). `pos` and `stride` are 0 then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    pub pos: u8,
    pub stride: u32,
    pub from: SlotArg,
    /// For `Creator`: the call id of the creation call that follows.
    pub before: u32,
    /// The array of pointers the object was loaded from (a hash of its
    /// element locations), or 0.
    pub via: u64,
}

impl SlotArg {
    /// The thread is handed a pointer to its own element (`&A[i]`).
    pub fn is_pointer(self) -> bool {
        matches!(
            self,
            SlotArg::Pointer | SlotArg::Stored | SlotArg::Member(_)
        )
    }
}

/// The tag of a member name in [`SlotArg::Member`] (a hash: the slot facts
/// stay `Copy`).
pub fn member_tag(field: &str) -> u64 {
    std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, field)
}

impl Slot {
    /// Does a thread that receives its number as `arg` make this derivation
    /// hold? (A stored number needs `Stored`, or `Member` of the same
    /// member; a pointer any pointer; a value `Value`.)
    pub fn holds_for(&self, arg: SlotArg) -> bool {
        match self.from {
            SlotArg::Value => arg == SlotArg::Value,
            SlotArg::Pointer => arg.is_pointer(),
            SlotArg::Stored | SlotArg::Member(_) => arg == self.from,
            SlotArg::Slice(l) => matches!(arg, SlotArg::Slice(k) if l <= k),
            SlotArg::Creator | SlotArg::Param(_) => false,
        }
    }
}

impl Thread {
    /// Each instance is handed a pointer to an array element of its own
    /// (`&A[i]`, see [`SlotArg::is_pointer`]).
    pub fn owns_slot_element(&self) -> bool {
        !self.slot_frame_only && self.slot.is_some_and(|(_, a)| a.is_pointer())
    }

    /// One instance that runs its code once ([`ThreadTable::runs_once`]).
    pub fn runs_once(&self) -> bool {
        self.unique && !self.repeats
    }

    /// A thread before the walk has seen its creation locksets, joins,
    /// leaks and barriers.
    pub fn new(entry: Name, parent: Option<u32>, site: Option<u32>, unique: bool) -> Self {
        Thread {
            entry,
            parent,
            site,
            unique,
            creation_locks: Vec::new(),
            joined_inside: Vec::new(),
            leaks: None,
            barriers: Vec::new(),
            slot: None,
            slot_params: Vec::new(),
            slot_frame_only: false,
            merged_launches: false,
            owns_arg: false,
            arg_per_site: false,
            speculative: false,
            load_entry: false,
            repeats: false,
            arg_locals: Vec::new(),
            outer_locals: Vec::new(),
            set_globals: Vec::new(),
            signal: false,
        }
    }
}

/// A thread-creation call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    pub func: FunctionId,
    pub call: u32,
    pub span: Span,
    /// Where the thread id is stored, for matching joins.
    pub tid: Vec<LocKey>,
    pub in_loop: bool,
    /// The range of the counting loop around the site in its function,
    /// when known (see `Stmt::Loop::bound`).
    pub loop_bound: Option<Name>,
    /// That range with the parameters every call passes as one constant
    /// replaced by it (`0<n` in `pool_new(4)`'s loop is `0<4`), when that
    /// changes it: what join ranges are measured against.
    pub const_bound: Option<Name>,
    pub visits: u32,
    /// Visits by entry function (sorted by name): a site in a helper that
    /// each call hands another function (`create_thread(0, rx_loop);
    /// create_thread(1, timers);`) creates each of them once. A visit
    /// inside a loop counts 2 (as many), and so does every entry of a
    /// callback site.
    pub entry_visits: Vec<(Name, u32)>,
    /// Sites certainly finished (created before and joined) whenever this site spawns.
    pub joined_before: Option<SiteSet>,
    /// The `pthread_once` init functions (their `once:K` lock names, `K` a
    /// named control) running at every visit of this site: it creates only
    /// inside the one run of such a function (see
    /// `races::once_creation_ordered`). `None`: no visit yet.
    pub once_held: Option<Vec<Name>>,
    /// Sites possibly created (by the same thread) before this site spawns,
    /// over all its visits: two sites neither of which precedes the other
    /// are created on exclusive paths.
    pub created_before: SiteSet,
    /// The thread id escaped to unknown code: joins through it are not trusted.
    pub tid_escaped: bool,
    /// The creation stores the thread id in a member of the very object it
    /// hands the thread (`pthread_create(&c->th, .., c)`): that member.
    pub tid_in_arg: Option<Name>,
    /// Sites that may still run (created and not joined, by the creating
    /// thread) at some visit of this one, over all its visits. A site not
    /// in its own set is *serial*: each visit comes after the join of the
    /// thread the visit before created (`for (..) { create; ...; join; }`),
    /// so its threads never overlap.
    pub active_seen: SiteSet,
    /// Some spawn at this site was not a visit the walk saw in order (a
    /// memo replay of its function, or a callback group's registration):
    /// `active_seen` says nothing.
    pub unseen_spawns: bool,
    /// A launcher's creation (`pthread_create(&t->handle, 0, trampoline,
    /// t)`, the trampoline calling `t->callback(t)`) handing an object of
    /// this base (a heap site, a global, a local): each base the call hands
    /// is a site of its own
    /// (`walk::spawn`), so that its thread runs its own launch and joins
    /// of its handle join it.
    pub launch: Option<Base>,
}

/// A count of barrier waits or of a semaphore's posts or waits stops here:
/// a count at the cap means that many or more.
pub const MAX_PHASE: u8 = 4;

/// One access of a thread to a location, with the analysis facts at that point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessFact {
    /// The path below the location's base (fields and indices).
    pub path: Arc<[Elem]>,
    pub thread: u32,
    pub func: FunctionId,
    pub span: Span,
    pub kind: AccessKind,
    /// A local accessed by name in its own frame.
    pub direct_local: bool,
    /// The location is one of several the access may touch.
    pub weak: bool,
    /// The accessed object is `volatile` (which orders nothing: reported
    /// like any other, and said so in the message).
    pub volatile: bool,
    /// The object is a `volatile sig_atomic_t`: a signal handler may share
    /// it with the code it interrupts (C11 7.14.1.1), so no pair of a signal
    /// handler's access and another is reported on it.
    pub sig_atomic: bool,
    /// The access is an atomic operation (`__atomic_fetch_add(&n, ..)`,
    /// `atomic_inc_32(&n)`) on an object not declared `_Atomic`: it races
    /// with plain accesses of the object, never with atomic ones.
    pub atomic: bool,
    /// The index of the instance's own slot (see [`Slot`]).
    pub slot: Option<Slot>,
    /// The access goes through a pointer that holds an object of the
    /// accessing thread instance's own (see [`Own`]).
    pub own: Option<Own>,
    /// The access goes through a pointer `x` after `pthread_join(x->f)`:
    /// the members `f` so joined, sorted (see `walk::own`).
    pub joined: Option<Arc<[Name]>>,
    /// The arms of undecided preprocessor conditionals of its function the
    /// access lies in, as (conditional, arm) (`FnIr::arms_at`); `None`
    /// outside them, and in headers (whose units may compile different
    /// arms into one program). An access in another arm of one of these
    /// conditionals, in the same function, is never compiled with it.
    pub build: Option<Arc<[(u32, u8)]>>,
    /// Locksets and thread facts at the access, shared between accesses made
    /// in the same state (most are), which keeps large programs small.
    pub ctx: Arc<FactCtx>,
}

/// The analysis state at an access.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FactCtx {
    pub must: LockSet,
    pub may: LockSet,
    /// Spawn sites whose threads may be running at the access (created on
    /// some path and not joined on it).
    pub active: SiteSet,
    /// Active sites joined on some other path to the access (`if (ok)
    /// pthread_join(t)`, a join an error return skips): their threads run
    /// at the access on some paths only, so a race with them is not *must*.
    pub partly: SiteSet,
    /// Spawn sites that may have run before the access.
    pub created: SiteSet,
    /// (site, lock): the thread spawned at `site` (this thread or an ancestor
    /// on its creation chain) had certainly acquired `lock` before this access.
    pub acquired: Vec<(u32, LocKey)>,
    /// (site, lock): locks held continuously since that site spawned.
    pub clean: Vec<(u32, LocKey)>,
    /// (barrier, fewest, most) `pthread_barrier_wait` calls passed so far,
    /// and a signalling semaphore's posts (`+s`) and waits (`-s@n`); counts
    /// stop at [`MAX_PHASE`].
    pub phases: Vec<(Name, u8, u8)>,
    /// The thread has joined `main`: `main`'s accesses happened before.
    pub main_ended: bool,
    /// The access is made in a child process made by `fork()`, before the
    /// child created any thread (`walk::fork`): only a signal handler,
    /// which the child inherits, may run beside it.
    pub forked: bool,
}

/// Hashes the access without its context: hashing a [`FactCtx`] walks all
/// its locksets and site sets, and sets of thousands of facts are rebuilt on
/// edits. Facts equal as a whole are equal here too, so this agrees with `Eq`.
impl std::hash::Hash for AccessFact {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.path.hash(h);
        self.hash_access(h);
    }
}

impl AccessFact {
    /// Hashes the fields other than the path and the context: the part of
    /// the hash that every way of hashing an access shares (the walk hashes
    /// its interned paths by address).
    pub fn hash_access<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        self.thread.hash(h);
        self.func.hash(h);
        self.span.hash(h);
        self.kind.hash(h);
        self.direct_local.hash(h);
        self.weak.hash(h);
        self.volatile.hash(h);
        self.sig_atomic.hash(h);
        self.atomic.hash(h);
        self.slot.hash(h);
        self.own.hash(h);
        self.joined.hash(h);
        self.build.hash(h);
    }
}

impl std::ops::Deref for AccessFact {
    type Target = FactCtx;
    fn deref(&self) -> &FactCtx {
        &self.ctx
    }
}

impl AccessFact {
    /// Are the two accesses in different arms of one preprocessor
    /// conditional of their function, so that no build has both?
    pub fn other_build(&self, o: &AccessFact) -> bool {
        match (&self.build, &o.build) {
            (Some(a), Some(b)) if self.func == o.func => a
                .iter()
                .any(|(c, x)| b.iter().any(|(d, y)| c == d && x != y)),
            _ => false,
        }
    }

    /// The full location of this access below `base`.
    pub fn key(&self, base: &Base) -> LocKey {
        LocKey {
            base: base.clone(),
            path: self.path.to_vec(),
        }
    }
}

/// Why the object an access goes through belongs to the accessing thread
/// instance (`walk::own`): two instances never share such an object, so
/// two accesses of the same kind by two instances touch two objects.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Own {
    /// The instance allocated it (`c = malloc(..)`, or an allocation
    /// wrapper's result), and the pointer came from that allocation
    /// through locals, parameters and return values only.
    Alloc,
    /// It is the instance's argument, in a thread that was handed a fresh
    /// object at every creation ([`Thread::owns_arg`]).
    Arg,
    /// A pointer into the argument past its start (`w + 1`, `w[i]`): the
    /// argument is still the instance's when it owns it as a whole, but
    /// not when it owns one slot of an array.
    ArgPart,
    /// The instance allocated it too, as far as the members it was loaded
    /// through hold only what their owner stored (`walk::held`): a pointer
    /// loaded from a member of an own object (`s = w->data`, `s->reg`), or
    /// one that is that or an own allocation. Valid only where
    /// [`HeldMembers::holds`] says so.
    Held(HeldChain),
    /// A non-static local of a frame on the instance's own stack, reached
    /// by name or through a pointer that came from its address through
    /// locals and parameters only (`strm_var_set(&c, ..)`: `state->env`).
    /// Two instances never run one frame, however far the local's address
    /// was published: only an access through a pointer loaded from memory
    /// may reach another instance's local.
    Frame,
    /// A pointer inside one of the argument's members (`b = w->buf`,
    /// `&w->hdr`): stepping along it (`b[1]`, `b + 4`) stays inside that
    /// member, so what it reaches is the argument's as [`Own::Arg`] is,
    /// where a step along the argument itself may reach another slot
    /// ([`Own::ArgPart`]). Only a value held by a local or parameter:
    /// an access through it is recorded as [`Own::Arg`].
    ArgInner,
}

/// The members a [`Own::Held`] pointer was loaded through.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HeldChain {
    /// It started at the thread's argument ([`Own::Arg`]).
    pub arg: bool,
    /// ... or past its start ([`Own::ArgPart`]).
    pub part: bool,
    /// Members loaded from the argument itself.
    pub from_arg: thin_vec::ThinVec<Name>,
    /// Members loaded from objects the instance allocated.
    pub from_alloc: thin_vec::ThinVec<Name>,
    /// Members read back, holding no lock, through the same unchanged
    /// local pointer the instance stored an allocation of its own into
    /// (`this->conn = calloc(..)`, then `this->conn->sock`), whatever
    /// object the pointer points to (`walk::own`, own member cells).
    pub cells: thin_vec::ThinVec<Name>,
    /// The heap sites of the objects it loaded from (sorted), unless
    /// `unknown`.
    pub sites: thin_vec::ThinVec<Base>,
    pub unknown: bool,
}

/// What starts the name of a local cell in [`HeldChain::cells`]
/// (`walk::local_cells`: `&func:var`); no member's name does.
pub(crate) const LOCAL_CELL: char = '&';

/// Which members keep what [`Own::Held`] pointers assume (see `walk::held`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct HeldMembers {
    /// A statement may store into a member of this name something its
    /// owner did not allocate, or store it other than by name (sorted).
    pub dirty: Vec<Name>,
    /// A thread stores into a member of this name of its own argument
    /// (sorted): the argument's creator must not read it as its own.
    pub arg_stored: Vec<Name>,
    /// Some copy may write members no name tells: no member holds.
    pub all_dirty: bool,
    /// A pointer is stored into an element no member names: no element
    /// (`f[]`) holds.
    pub elements_dirty: bool,
    /// Heap sites whose objects a copy or an element store no member names
    /// may write anything into (sorted).
    pub dirty_sites: Vec<Base>,
    /// A statement may store into a member of this name something the
    /// storing instance did not allocate, into whatever object (sorted):
    /// such a member is no own cell ([`HeldChain::cells`]). A subset of
    /// `dirty`, which also holds the members given an own allocation
    /// through a pointer to an object the instance does not own.
    pub cell_dirty: Vec<Name>,
}

impl HeldMembers {
    /// Do the members `c` was loaded through hold only what the loading
    /// instance allocated? (`whole`: the thread owns its argument;
    /// `slot`: it owns the element of an array it was handed.)
    pub fn holds(&self, c: &HeldChain, whole: bool, slot: bool) -> bool {
        let clean = |n: &Name| {
            self.dirty.binary_search(n).is_err() && !(self.elements_dirty && n.ends_with("[]"))
        };
        let sites_clean = match c.unknown {
            true => self.dirty_sites.is_empty(),
            false => c
                .sites
                .iter()
                .all(|b| self.dirty_sites.binary_search(b).is_err()),
        };
        // A chain read only from local cells (`walk::local_cells`, named
        // `&func:var`) depends on no member and no heap site.
        let local_only = !c.arg
            && c.from_arg.is_empty()
            && c.from_alloc.is_empty()
            && !c.cells.is_empty()
            && c.cells.iter().all(|n| n.starts_with(LOCAL_CELL));
        (local_only || (!self.all_dirty && sites_clean))
            && (!c.arg || whole || (slot && !c.part))
            && c.from_arg.iter().all(clean)
            && c.from_alloc.iter().all(clean)
            && c.cells
                .iter()
                .all(|n| self.cell_dirty.binary_search(n).is_err())
            && c.from_alloc
                .iter()
                .all(|n| self.arg_stored.binary_search(n).is_err())
    }
}

/// Threads and spawn sites of the program.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ThreadTable {
    pub threads: Vec<Thread>,
    pub sites: Vec<Site>,
    /// Non-static locals whose address may reach another thread: stored
    /// into memory outside a frame (a global, a heap object, a struct another
    /// thread is handed), or passed as a thread's argument. Sorted. A local
    /// not in here is one object per frame, so two threads running its
    /// function touch two objects (`int len; parse(&len);`).
    pub escaped_locals: Vec<Base>,
    /// Of `escaped_locals`, those whose address reaches other threads only
    /// through thread arguments (and objects handed only that way): such a
    /// local is seen only by its frame's thread instance and the threads
    /// descended from it, so an access of the frame's thread and one of a
    /// descendant meet only within one instance. Sorted.
    pub arg_only_locals: Vec<Base>,
    /// Heap sites whose objects never reach memory another thread can read
    /// (see `walk::private`), sorted by base: each object is touched only by
    /// the thread instance that allocated it and by the one thread instance
    /// it was handed to, fresh, as its argument.
    pub private_heap: Vec<(Base, PrivateHeap)>,
    /// Heap sites whose objects the program's own state may reach: held by
    /// a cell of the pointer store in a global, a static, an escaped local,
    /// an unknown object, or a heap object of such a site (not in a
    /// type-based object: in a library, that is a caller's).
    /// Sorted. A library's other heap objects hang off the objects its
    /// callers pass in (see `races::race_between`).
    pub global_heap: Vec<Base>,
    /// Heap sites that memory shared other than through thread arguments
    /// may reach, or that the walk published otherwise than by handing
    /// them to new threads (see `walk::finish`, `handed_heap`). An object
    /// of another site passes from one thread instance's subtree (the
    /// instance and the threads descended from it) to another's only
    /// through the arguments of a thread on the way down. Sorted.
    pub shared_heap: Vec<Base>,
    /// Per thread with arguments (sorted by thread): the heap sites outside
    /// `shared_heap` its own arguments reach (sorted). For a site not
    /// listed, the objects an instance of the thread and its descendants
    /// touch are ones that instance's subtree made: two instances touch
    /// two objects, and an access of the thread and one of a descendant
    /// (or of two descendants) meet only within one instance
    /// ([`ThreadTable::one_subtree`]).
    pub handed_down: Vec<(u32, Vec<Base>)>,
    /// Members that hold what [`Own::Held`] pointers assume.
    pub held: HeldMembers,
    /// The arrays of pointers ([`Slot::via`]) into whose elements the
    /// program stores only fresh objects, each at most once: element `k`
    /// and element `j` never point to one object. Sorted.
    pub injective: Vec<u64>,
}

/// Who may touch the objects of an unpublished heap site.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PrivateHeap {
    /// Threads that allocate from the site (sorted).
    pub allocators: Vec<u32>,
    /// Threads handed an object of the site, fresh, as their argument
    /// (sorted; none of them allocates from the site).
    pub receivers: Vec<u32>,
}

impl PrivateHeap {
    /// Can accesses of threads `a` and `b` (other instances, or other
    /// threads) touch one object of the site? Only an allocator and a
    /// receiver can: two allocators, or two receivers, hold different
    /// objects. A thread that is neither is not known to reach the site, and
    /// is kept.
    pub fn apart(&self, a: u32, b: u32) -> bool {
        let alloc = |t: u32| self.allocators.binary_search(&t).is_ok();
        let recv = |t: u32| self.receivers.binary_search(&t).is_ok();
        (alloc(a) && alloc(b)) || (recv(a) && recv(b))
    }
}

impl ThreadTable {
    /// Do thread `t`'s accesses to heap site `base` and its descendants'
    /// meet only within one instance of `t` (see `handed_down`)?
    pub fn one_subtree(&self, base: &Base, t: u32) -> bool {
        matches!(base, Base::Heap { .. })
            && self.shared_heap.binary_search(base).is_err()
            && match self.handed_down.binary_search_by_key(&t, |(x, _)| *x) {
                Ok(i) => self.handed_down[i].1.binary_search(base).is_err(),
                Err(_) => true,
            }
    }

    /// The private-heap facts of `base`, when its site is unpublished.
    pub fn private(&self, base: &Base) -> Option<&PrivateHeap> {
        self.private_heap
            .binary_search_by(|(b, _)| b.cmp(base))
            .ok()
            .map(|i| &self.private_heap[i].1)
    }

    /// Is abstract thread `t` created at most once (unknown threads are)?
    /// Do the instances of thread `t` run one after another? Its site is
    /// serial (see `Site::active_seen`) in a unique creator.
    pub fn is_serial(&self, t: u32) -> bool {
        let Some(th) = self.threads.get(t as usize) else {
            return false;
        };
        let (Some(s), Some(p)) = (th.site, th.parent) else {
            return false;
        };
        self.runs_once(p)
            && self
                .sites
                .get(s as usize)
                .is_some_and(|x| !x.unseen_spawns && !x.active_seen.contains(s))
    }

    /// Is thread `t` a signal handler ([`Thread::signal`])?
    pub fn is_signal(&self, t: u32) -> bool {
        self.threads.get(t as usize).is_some_and(|t| t.signal)
    }

    /// One instance of the thread exists.
    pub fn is_unique(&self, t: u32) -> bool {
        self.threads
            .get(t as usize)
            .map(|t| t.unique)
            .unwrap_or(true)
    }

    /// One instance that runs its code once: what it does before creating a
    /// thread or after joining it is ordered with that thread.
    pub fn runs_once(&self, t: u32) -> bool {
        self.threads
            .get(t as usize)
            .map(Thread::runs_once)
            .unwrap_or(true)
    }

    /// The chain of (thread, spawn site) from `t` up to the root, `t` first.
    pub fn chain(&self, mut t: u32) -> Vec<(u32, Option<u32>)> {
        let mut v = Vec::new();
        for _ in 0..self.threads.len() + 1 {
            let th = &self.threads[t as usize];
            v.push((t, th.site));
            match th.parent {
                Some(p) => t = p,
                None => break,
            }
        }
        v
    }
}

/// Everything the race checks need.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ThreadAnalysis {
    pub table: Arc<ThreadTable>,
    /// Accesses clustered by base object (RacerF: bases do not overlap).
    pub locations: BTreeMap<Base, Arc<Vec<AccessFact>>>,
    /// Functions whose analysis was cut short by a budget.
    pub incomplete: Vec<(FunctionId, String)>,
}
