//! Call handling: the models of library calls (locks, trylocks, unlocks,
//! condition variables, barriers, thread creation and join, `pthread_once`,
//! allocation, memory functions, unknown code handed callbacks or wild
//! pointers) and calls into functions with bodies, which go to the memo
//! (`memo.rs`).
//!
//! Owns no state of its own: the models change the path's [`State`] (a
//! join goes to `joins.rs`, which keeps `WalkData::pending_joins`).
//! Invariants: the locks held are bounded by [`MAX_HELD`](super::MAX_HELD)
//! (more is a budget overrun); an allocation makes its site fresh and an
//! escape makes it stale, both after `observe_heap`; a change to a site
//! (a thread id handed to unknown code) is an `effect` that moves
//! `sites_epoch`, and a join `read`s it.

use super::frames::Frame;
use super::library::{does_not_retain, is_async, DEFERRED_CALLBACKS, SIGNAL_HANDLERS};
use super::locks::is_region;
use super::spawn::same_thread_id;
use super::state::{join, State, TryKey};
use super::stmts::LONGJMP;
use super::wild::{hidden_state, is_wild, wild_value, LIBRARY_POINTER_PARAMS};
use super::{add_vals, pointer_local, uncast, Val, Vals, Walker, MAX_HELD, MAX_TRACKED};
use crate::config::CallModel;
use crate::db::FunctionId;
use crate::model::*;
use racelens_syntax::{AccessKind, Call, Callee, Expr, Name};
use thin_vec::ThinVec;

fn callee_name(c: &Callee) -> Name {
    match c {
        Callee::Direct(n) => n.clone(),
        Callee::Indirect(_) => Name::from(""),
    }
}

/// The global atomic section of SV-COMP (`__VERIFIER_atomic_begin()` and
/// `__VERIFIER_atomic_*` functions), held as a lock.
fn atomic_section() -> Held {
    Held {
        lock: LocKey::new(Base::Synthetic(Name::from("__VERIFIER_atomic"))),
        shared: false,
    }
}

impl<'a> Walker<'a> {
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

    pub(super) fn call(&mut self, fr: &Frame, c: &Call, mut st: State) -> Option<State> {
        if let Callee::Direct(n) = &c.callee {
            if LONGJMP.contains(&&**n) && self.prog.functions_named(n).is_none() {
                self.longjmp(fr, c, st);
                return None;
            }
        }
        // What this call returns is new: a fact from its last run (a loop
        // walks it again) no longer holds. (Most calls find no call's fact
        // at all: the flag's name is built only when one is there.)
        if st.conds.iter().any(|x| x.0.starts_with("#call")) {
            let flag = super::spawn::call_flag(c.id);
            st.conds.retain(|x| x.0 != flag);
        }
        // `pthread_equal(t, pthread_self())` of a child's id is zero.
        if self.tests_child_is_self(fr, c) {
            st.conds.push((super::spawn::call_flag(c.id), false));
        }
        let model = match fr.summary.models.get(&c.id).cloned() {
            // A compare-and-swap is a trylock only when it swaps in a
            // constant (`CAS(&l, &zero, 1)`): one that swaps in a computed
            // value (`CAS(&n, &old, old + 1)`) updates a counter, and taking
            // it for a lock would order what follows it in every thread.
            Some(CallModel::TryLock { .. }) if swaps_in_computed(c) => Some(CallModel::Atomic),
            // An atomic store into a lock word this path holds releases it
            // (`__atomic_store_n(&l, 0, __ATOMIC_RELEASE)` after a CAS loop).
            Some(CallModel::Atomic) if is_atomic_store(c) => {
                // The answer reads the held locks: a context field.
                self.opaque();
                let (keys, resolved) = self.lock_keys(fr, c.args.first());
                match resolved
                    && !keys.is_empty()
                    && keys.iter().all(|k| st.may.0.iter().any(|h| &h.lock == k))
                {
                    true => Some(CallModel::Unlock { arg: 0 }),
                    false => Some(CallModel::Atomic),
                }
            }
            m => m,
        };
        // A binary semaphore's wait and post lock and unlock it.
        let model = match model {
            None => self.semaphore_model(fr, c),
            m => m,
        };
        // A signalling semaphore's post or wait counts (`semaphores.rs`).
        if model.is_none() {
            self.semaphore_signal(fr, c, &mut st);
        }
        // A lock wrapper's call is the lock call it wraps.
        let wrapped;
        let (c, model) = match model {
            None => match self.lock_wrapper_call(fr, c) {
                Some((call, m)) => {
                    wrapped = call;
                    (&wrapped, Some(m))
                }
                None => (c, None),
            },
            m => (c, m),
        };
        // A condition wait releases its mutex for a while.
        if matches!(model, Some(CallModel::CondWait)) {
            super::once::leave_branches(&mut st);
        }
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
                    self.mark_incomplete(fr.fid, "budget exceeded (too many locks held at once)");
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
                    st.sym_guards.retain(|g| !(g.2 .0 == q && g.2 .1 == path));
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
                self.lock_succeeds(fr, c, &mut st);
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
                super::once::leave_branches(&mut st);
                if !resolved {
                    // Unlocking an unknown mutex may release any lock.
                    st.must = LockSet::default();
                    st.rec_depth.clear();
                    st.clean.clear();
                    st.syms.clear();
                    st.lock_guards.clear();
                    st.sym_guards.clear();
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
                        });
                        st.sym_guards
                            .retain(|g| !roots.iter().any(|(_, path)| g.2 .1 == *path));
                    }
                    true => {
                        let last: Vec<Elem> =
                            keys.iter().filter_map(|k| k.path.last().cloned()).collect();
                        st.syms
                            .retain(|x| !x.1.last().map(|e| last.contains(e)).unwrap_or(true));
                        st.sym_guards
                            .retain(|g| !g.2 .1.last().map(|e| last.contains(e)).unwrap_or(true));
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
                // A thread whose code is unknown runs nothing the walk sees:
                // say so rather than miss its races silently.
                if entries.is_empty() {
                    // A function named but defined in no analysed file (a
                    // file checked without the rest of its project).
                    let named = c.args.get(func).and_then(super::threads::function_name);
                    let why = match named {
                        Some(n) if !self.names_variable(fr, &n) => {
                            "creates a thread whose entry function has no body in the analysed files; the code it runs is not analysed"
                        }
                        _ => "creates a thread whose entry function is unknown; the code it runs is not analysed",
                    };
                    self.mark_incomplete(fr.fid, why);
                }
                let argv = c
                    .args
                    .get(arg)
                    .map(|e| self.eval(fr, e, 0))
                    .unwrap_or_default();
                // The fresh objects this call hands over (with those nested
                // in them): where its result says it failed, no thread
                // received them.
                // (Of a refreshed site, older objects escaped before: a
                // failed creation gives the site its freshness back only when
                // it was handed the newest object.)
                for b in st.fresh.iter() {
                    self.observe_refresh(b);
                }
                let fresh_before: Vec<Base> = st
                    .fresh
                    .iter()
                    .filter(|b| {
                        !st.refreshed.contains(b)
                            || c.args
                                .get(arg)
                                .is_some_and(|e| super::frames::holds_newest(fr, e, b, &st))
                    })
                    .cloned()
                    .collect();
                self.note_handed(fr, c, c.args.get(arg), &st);
                if let Some(e) = c.args.get(arg) {
                    self.escape_to(fr, e, &mut st, true, "a thread argument, not fresh");
                }
                let slot = self.site_slot(fr, c, c.args.get(arg));
                let active_before = st.active.clone();
                let overwritten = tids.clone();
                let site = self.spawn(fr, c, &mut st, tids, entries, argv, false);
                self.overwrite_thread_ids(&overwritten, &active_before, site);
                self.d.sites[site as usize].tid_in_arg = match (c.args.get(tid), c.args.get(arg)) {
                    (Some(t), Some(a)) => super::own::tid_in_arg(t, a),
                    _ => None,
                };
                if super::spawn::result_tested(fr, c) {
                    let flag = super::spawn::call_flag(c.id);
                    let mut handed: Vec<Base> = fresh_before
                        .iter()
                        .filter(|b| !st.fresh.contains(b))
                        .cloned()
                        .collect();
                    // And what this function stored, fresh, into a handed
                    // object (`r->buf = malloc(..)`): it went along.
                    if let Some(&n) = self.d.node_stack.last() {
                        for (x, into, kind) in &self.d.nodes[n as usize].nested {
                            if *kind == super::private::Nest::Fresh
                                && handed.contains(into)
                                && st.allocated.contains(x)
                                && !handed.contains(x)
                            {
                                handed.push(x.clone());
                            }
                        }
                    }
                    for b in handed {
                        if st.handed.len() < MAX_TRACKED
                            && !st.handed.iter().any(|h| h.0 == flag && h.1 == b)
                        {
                            st.handed.push((flag.clone(), b));
                        }
                    }
                }
                self.note_site_slot(site, slot);
                Some(st)
            }
            Some(CallModel::Join { tid, all }) => {
                self.join_call(fr, c, tid, all, &mut st);
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
                        let mut s1 = st.clone();
                        s1.leave_own();
                        if let Some(e) = self.walk_fn(f, s1, Vec::new()) {
                            once_threads(&mut st, &e);
                        }
                    }
                    return Some(st);
                }
                let key = controls[0].display();
                let once = Held {
                    lock: LocKey::new(Base::Synthetic(Name::from(format!("once:{key}")))),
                    shared: false,
                };
                let done = Held {
                    lock: LocKey::new(Base::Synthetic(Name::from(format!("once-done:{key}")))),
                    shared: true,
                };
                // A second `pthread_once` on a path that already passed one
                // on this control runs nothing.
                if st.must.0.contains(&done) {
                    return Some(st);
                }
                for f in targets {
                    let mut s2 = st.clone();
                    s2.leave_own();
                    s2.must.insert(once.clone());
                    s2.may.insert(once.clone());
                    if let Some(e) = self.walk_fn(f, s2, Vec::new()) {
                        once_threads(&mut st, &e);
                    }
                }
                // Everything after `pthread_once` returns is ordered after the
                // init function, whichever thread ran it.
                st.must.insert(done.clone());
                st.may.insert(done);
                Some(st)
            }
            Some(CallModel::Mem { write, read }) => {
                for (idx, kind) in [(write, AccessKind::Write), (read, AccessKind::Read)] {
                    if let Some(e) = idx.and_then(|i| c.args.get(i)) {
                        let place = Expr::Deref(Box::new(e.clone()));
                        // A write that copies from no source (`memset`,
                        // `free`) puts no pointer into an array (`inject.rs`).
                        self.d.store_fresh = kind == AccessKind::Write && read.is_none();
                        self.record(fr, &place, kind, c.span, &st, false);
                        self.d.store_fresh = false;
                        if kind == AccessKind::Write {
                            self.forget_written_flags(fr, &place, &mut st);
                        }
                    }
                }
                // `memcpy(dst, &p, sizeof p)` copies the pointer `p` itself.
                if let Some(Expr::AddrOf(p)) = read.and_then(|i| c.args.get(i)).map(uncast) {
                    let p = (**p).clone();
                    self.escape_to(fr, &p, &mut st, false, "copied by memcpy");
                }
                Some(st)
            }
            Some(CallModel::Atomic) => {
                // The operation accesses the object its first argument
                // points to, atomically: it races with plain accesses of it
                // (C11 5.1.2.4), not with other atomic operations.
                if let (Callee::Direct(n), Some(a)) = (&c.callee, c.args.first()) {
                    let place = Expr::Deref(Box::new(a.clone()));
                    if let Some(kind) = atomic_access(n) {
                        self.record_atomic(fr, &place, kind, c.span, &st);
                    } else if n.trim_start_matches('_') == "atomic_init" {
                        // Not atomic (C11 7.17.2.2): a plain write.
                        self.record(fr, &place, AccessKind::Write, c.span, &st, false);
                    }
                }
                // An atomic store, exchange or compare-and-swap puts its
                // value operands into memory other threads read.
                for a in c.args.iter().skip(1) {
                    self.escape_to(fr, a, &mut st, false, "stored atomically");
                }
                // A store that sets a flag publishes (`flags.rs`).
                self.flag_post(fr, c, &mut st);
                Some(st)
            }
            Some(CallModel::Scan { from }) => {
                for e in c.args.iter().skip(from) {
                    let place = Expr::Deref(Box::new(e.clone()));
                    self.record(fr, &place, AccessKind::Write, c.span, &st, false);
                    self.forget_written_flags(fr, &place, &mut st);
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
                self.pass_phase(&mut st, key, true);
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
                    // Freeing stores no pointer (the copy keeps each
                    // element's index: see `inject.rs`).
                    self.d.store_fresh = true;
                    self.record(fr, &place, AccessKind::Write, c.span, &st, false);
                    self.d.store_fresh = false;
                }
                self.reallocated_at(fr, c, &mut st);
                self.allocation_succeeds(fr, c, &mut st);
                Some(st)
            }
            Some(CallModel::Alloc) => {
                if !super::eval::is_alloca(fr, c.id) {
                    self.allocated_at(fr, c, &mut st);
                }
                self.allocation_succeeds(fr, c, &mut st);
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
                let mut callees = self.functions_of(fr, &c.callee);
                for f in self.thread_callees(fr, &c.callee) {
                    if !callees.contains(&f) {
                        callees.push(f);
                    }
                }
                // A call through a pointer (`(*f)(x)`, or `f(x)` with `f` a
                // variable rather than a function).
                let through_pointer = match &c.callee {
                    Callee::Indirect(_) => true,
                    Callee::Direct(n) => self.names_variable(fr, n),
                };
                // A pointer the walk cannot resolve may have come back from
                // an integer (see `laundered.rs`).
                if callees.is_empty() && through_pointer {
                    callees = self.laundered(c.args.len());
                }
                // A thread's entry that calls one of several functions
                // through a pointer is a launcher's trampoline: its
                // instances may run different code (see
                // `Thread::merged_launches`).
                if callees.len() > 1 && self.d.thread != 0 && self.d.node_stack.len() == 1 {
                    if let Some(&n) = self.d.node_stack.last() {
                        self.d.nodes[n as usize].merges = true;
                    }
                }
                // A thread's entry that calls through a pointer the walk
                // cannot resolve (a launcher's trampoline whose capsule came
                // from an allocator out of sight) runs code nobody walks:
                // say so rather than miss its races silently.
                if callees.is_empty()
                    && through_pointer
                    && self.d.thread != 0
                    && self.d.node_stack.len() == 1
                {
                    self.mark_incomplete(
                        fr.fid,
                        "calls through a function pointer whose target is unknown; the code it runs is not analysed",
                    );
                }
                if callees.is_empty() {
                    let keeps = match &c.callee {
                        Callee::Direct(n) => !does_not_retain(n),
                        Callee::Indirect(_) => true,
                    };
                    if keeps && super::private::debug() {
                        eprintln!("racelens: arguments kept by {:?}", c.callee);
                    }
                    for a in &c.args {
                        if keeps {
                            self.escape_to(fr, a, &mut st, false, "kept by code without a body");
                        }
                        // A thread id handed to unknown code may be overwritten.
                        for v in self.eval(fr, a, 0) {
                            if let Val::Target(k) = v {
                                let hit: Vec<usize> = (0..self.d.sites.len())
                                    .filter(|&i| {
                                        let site = &self.d.sites[i];
                                        !site.tid_escaped
                                            && site.tid.iter().any(|t| same_thread_id(t, &k))
                                    })
                                    .collect();
                                self.escape_thread_ids(&hit);
                            }
                        }
                    }
                    // An unknown function may call the functions it is given:
                    // now (most), later on other threads (the asynchronous
                    // APIs), or never while the program runs (exit handlers).
                    // Functions passed directly, or in a struct of callbacks.
                    let name = callee_name(&c.callee);
                    // libevent: handlers run on the thread that runs
                    // their base's loop (see `libevent.rs`).
                    let mut st = match self.libevent_call(fr, c, &name, st) {
                        Ok(done) => return done,
                        Err(st) => st,
                    };
                    // FUSE: the operations `fuse_new` is given run only once
                    // the program enters a FUSE loop (see `fuse.rs`).
                    let role = super::fuse::role(&name);
                    let fuse_loop = role == super::fuse::Role::Loop;
                    let (vals, table) = match role {
                        super::fuse::Role::Registers if self.runs_fuse_loop() => {
                            // The loop's callbacks are read from every
                            // registration: a re-walk that changes one is
                            // a walk from scratch.
                            self.effect();
                            return Some(st);
                        }
                        super::fuse::Role::Loop => (self.fuse_operations(), Vec::new()),
                        _ if &*name == "sigaction" => (self.sigaction_handlers(fr, c), Vec::new()),
                        _ => self.handed_functions(fr, &c.args),
                    };
                    let funcs = |vals: Vals| -> Vec<FunctionId> {
                        let mut v: Vec<FunctionId> = vals
                            .into_iter()
                            .filter_map(|v| {
                                if let Val::Func(f) = v {
                                    self.prog.functions_named(&f).map(|d| d[0])
                                } else {
                                    None
                                }
                            })
                            .collect();
                        v.dedup();
                        v
                    };
                    let direct = funcs(vals);
                    let table: Vec<FunctionId> = funcs(table)
                        .into_iter()
                        .filter(|f| !direct.contains(f))
                        .collect();
                    let mut entries = direct.clone();
                    entries.extend(table.iter().copied());
                    // A signal handler runs whenever its signal arrives,
                    // interrupting any thread: a concurrent context of its
                    // own from its installation on.
                    if SIGNAL_HANDLERS.contains(&&*name)
                        && !entries.is_empty()
                        && self.prog.functions_named(&*name).is_none()
                    {
                        let mut seen = rustc_hash::FxHashSet::default();
                        entries.retain(|f| seen.insert(*f));
                        // A child process that installs one is still
                        // without threads (`fork.rs`): handlers pair with
                        // its accesses as it is.
                        let forked = st.forked;
                        let s = self.spawn(fr, c, &mut st, Vec::new(), entries, Vec::new(), false);
                        st.forked = forked;
                        for t in self.d.threads.iter_mut().filter(|t| t.site == Some(s)) {
                            t.signal = true;
                        }
                        return Some(st);
                    }
                    if entries.is_empty()
                        || self.prog.functions_named(&*name).is_some()
                        || DEFERRED_CALLBACKS.contains(&&*name)
                        || SIGNAL_HANDLERS.contains(&&*name)
                    {
                        return Some(st);
                    }
                    // A single-threaded FUSE loop runs the operations on
                    // this thread, one at a time (see `fuse.rs`).
                    if (fuse_loop && super::fuse::single_threaded(&name))
                        || super::fuse::main_single_threaded(fr, c)
                    {
                        let mut seen = rustc_hash::FxHashSet::default();
                        entries.retain(|f| seen.insert(*f));
                        return self.call_fuse_serially(fr, c, st, &entries);
                    }
                    if !is_async(&name) && !fuse_loop {
                        // Code without a body that is handed a function runs
                        // it on this thread, now (`qsort`'s comparator,
                        // `inflateBack`'s input and output functions). A
                        // table of functions (`struct ops`) is kept by code
                        // that registers handlers: those may run later, on
                        // any thread, as before.
                        // A function shaped like a thread's start routine
                        // (`void *f(void *)`) is a thread, though: unknown
                        // code handed one is taken to start it (as Goblint
                        // does), since that is what the shape is for.
                        let (threads, now): (Vec<FunctionId>, Vec<FunctionId>) = direct
                            .into_iter()
                            .partition(|f| self.looks_like_thread_entry(*f));
                        if !now.is_empty() {
                            st = self.call_back(fr, c, st, &now)?;
                        }
                        for f in &table {
                            self.d.callbacks_in_tables.insert(f.name(self.db).clone());
                        }
                        entries = threads;
                        entries.extend(table);
                    }
                    for f in &entries {
                        let n = f.name(self.db);
                        if !self.d.callbacks_in_tables.contains(n) {
                            self.d.callbacks_sure.insert(n.clone());
                        }
                    }
                    // Without any thread creation in the program, only callbacks
                    // shaped like thread entries (`void *f(void *)`) count.
                    if !self.d.has_threads {
                        entries.retain(|f| self.looks_like_thread_entry(*f));
                    }
                    if !entries.is_empty() {
                        let names: Vec<Name> =
                            entries.iter().map(|f| f.name(self.db).clone()).collect();
                        let s = self.spawn(fr, c, &mut st, Vec::new(), entries, Vec::new(), true);
                        // It may call them any number of times.
                        let site = &mut self.d.sites[s as usize];
                        site.in_loop = true;
                        for (_, v) in &mut site.entry_visits {
                            *v = (*v).max(2);
                        }
                        // FUSE's loops return once the file system is
                        // unmounted and their workers have ended.
                        if super::fuse::ends_operations(&name) && self.group_only_of(s, &names) {
                            self.join_site(&mut st, s);
                        }
                    }
                    return Some(st);
                }
                let mut acc = None;
                for f in callees {
                    let callee = self.summary(f);
                    let params: Vec<Name> =
                        callee.ir.params.iter().map(|p| p.name.clone()).collect();
                    let mut bindings: Vec<Vals> = (0..params.len())
                        .map(|i| {
                            c.args
                                .get(i)
                                .map(|a| match uncast(a) {
                                    Expr::Int(0) => vec![Val::Zero],
                                    Expr::Var(x) if fr.zeros.contains(x) => vec![Val::Zero],
                                    e => {
                                        let mut v = self.eval(fr, a, 0);
                                        if let Some(g) = self.copied_global(fr, e) {
                                            add_vals(&mut v, [Val::Copy(g)]);
                                        }
                                        // A variable this path tested nonzero
                                        // (`if (path) open_log(path);`), for a
                                        // parameter whose zero branch does
                                        // something: the marker splits the
                                        // callee's calling contexts.
                                        if let Expr::Var(x) = e {
                                            if st.conds.iter().any(|c| &c.0 == x && c.1)
                                                && self.tested_value_kept(fr, x)
                                                && self.frame_base(f).acts_on_zero(&params[i])
                                            {
                                                add_vals(&mut v, [Val::NonZero]);
                                            }
                                        }
                                        v
                                    }
                                })
                                .unwrap_or_default()
                        })
                        .collect();
                    // A function this thread's creator stored where an
                    // argument reads (`kt_for(n, pl->step, ..)` in a worker
                    // handed `&pl`) is what the parameter holds: the pointer
                    // store, built without threads, does not know it.
                    for (i, b) in bindings.iter_mut().enumerate() {
                        let Some(a) = c.args.get(i) else { continue };
                        let walked = self.walked_functions(fr, uncast(a));
                        if !walked.is_empty() {
                            self.opaque();
                            add_vals(b, walked.into_iter().map(Val::Func));
                        }
                    }
                    // Symbolic locks follow pointer arguments into the callee and back.
                    let arg_root: Vec<Option<(Name, Vec<Elem>)>> = (0..params.len())
                        .map(|i| c.args.get(i).and_then(|a| self.lock_sym(fr, a)))
                        .collect();
                    let caller_declares = |n: &str| fr.locals.contains_key(n);
                    let callee_declares = |n: &str| super::locks::declares(&callee, n);
                    let names = super::locks::CallNames {
                        args: &c.args,
                        params: &params,
                        caller_declares: &caller_declares,
                        callee_declares: &callee_declares,
                    };
                    let mut inner = st.clone();
                    inner.syms = super::locks::syms_into_callee(&st, &arg_root, &names);
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
                    // A parameter given a local holding a refreshed site's
                    // newest object holds it too; the caller's locals keep
                    // holding it unless the callee may allocate from the
                    // site again.
                    inner.newest = ThinVec::new();
                    if !st.newest.is_empty() {
                        let mut v: Vec<(Name, Base)> = Vec::new();
                        for (i, p) in params.iter().enumerate() {
                            if let Some(y) = c.args.get(i).and_then(pointer_local) {
                                for (x, b) in st.newest.iter() {
                                    if x == y {
                                        v.push((p.clone(), b.clone()));
                                    }
                                }
                            }
                        }
                        v.sort();
                        v.dedup();
                        inner.newest = v.into();
                    }
                    let kept: ThinVec<(Name, Base)> = st
                        .newest
                        .iter()
                        .filter(|(_, b)| !self.may_allocate(f, b))
                        .cloned()
                        .collect();
                    let wrapper = self.is_alloc_wrapper(f);
                    inner.leave_own();
                    inner.own = self.own_params(fr, c, &params, &st);
                    let seeds = self.member_cell_seeds(c, &params, &st);
                    self.d.seed_cells = (!seeds.is_empty()).then_some((f, seeds));
                    let e = self.walk_fn_with(f, inner, bindings).map(|mut e| {
                        super::member_cells::keep_cells_out(&mut e, c, &params);
                        super::own::own_after_call(&mut e, &st, c.id);
                        // What it returned in this context is this call's
                        // result (see `Walker::note_return_value`).
                        super::frames::name_result(&mut e, c.id, !wrapper);
                        // Whether it returned zero, where all its returns
                        // agree, is what this call's result says.
                        let flag = super::spawn::call_flag(c.id);
                        if let Some(i) = e
                            .conds
                            .iter()
                            .position(|x| &*x.0 == super::frames::RETURNED)
                        {
                            let nz = e.conds.remove(i).1;
                            e.conds.push((flag.clone(), nz));
                        }
                        // So do the sites it created only where its result
                        // is (non)zero.
                        for g in e.guards.iter_mut() {
                            if &*g.1 == super::frames::RETURNED {
                                g.1 = flag.clone();
                            }
                        }
                        // What the callee returned, if it returned a site's
                        // newest object, is what this call's result holds.
                        let res = super::frames::returned_by(c.id);
                        let mut kept: Vec<(Name, Base)> =
                            kept.iter().filter(|(v, _)| *v != res).cloned().collect();
                        kept.extend(
                            e.newest_held_by(super::frames::RETURNED)
                                .map(|b| (res.clone(), b.clone())),
                        );
                        kept.sort();
                        e.newest = kept.into();
                        // Locks held exactly when the callee's result is
                        // (non)zero follow this call's result.
                        for g in e.lock_guards.iter_mut() {
                            if &*g.0 == super::frames::RETURNED {
                                g.0 = flag.clone();
                            }
                        }
                        e.lock_guards.sort();
                        if atomic {
                            e.must.remove(&atomic_section().lock);
                            e.may.remove(&atomic_section().lock);
                        }
                        if wrapper {
                            let filled = self.copied_into(fr, c);
                            self.allocated_at(fr, c, &mut e);
                            let new = Base::Heap {
                                func: fr.fname.clone(),
                                call: c.id,
                            };
                            self.nest_copies(filled, &new, &e);
                        }
                        super::locks::syms_after_call(&mut e, &st, &names, &arg_root, &flag);
                        e
                    });
                    acc = join(acc, e);
                }
                acc
            }
        }
    }

    /// One more pass of phase `key` on this path (a barrier wait, a
    /// semaphore's post or wait), counted up to `MAX_PHASE`; `note`: the
    /// thread joins those that pass it (`Thread::barriers`).
    pub(super) fn pass_phase(&mut self, st: &mut State, key: Name, note: bool) {
        use crate::facts::MAX_PHASE;
        match st.phases.iter_mut().find(|p| p.0 == key) {
            Some(p) => {
                p.1 = p.1.saturating_add(1).min(MAX_PHASE);
                p.2 = p.2.saturating_add(1).min(MAX_PHASE);
            }
            None => {
                st.phases.push((key.clone(), 1, 1));
                st.phases.sort();
            }
        }
        let t = self.d.thread as usize;
        if note && !self.d.threads[t].barriers.contains(&key) {
            self.effect();
            self.d.threads[t].barriers.push(key);
        }
    }

    /// The handlers `sigaction(sig, &sa, ..)` installs: the functions in
    /// its action's `sa_handler` or `sa_sigaction` member (glibc spells them
    /// `__sigaction_handler.sa_handler` once its header is expanded).
    fn sigaction_handlers(&self, fr: &Frame, c: &Call) -> Vals {
        let mut out = Vals::new();
        let Some(act) = c.args.get(1) else {
            return out;
        };
        for v in self.eval(fr, act, 0) {
            let Val::Target(k) = v else { continue };
            let k = k.without_indices();
            for m in super::library::SIGACTION_HANDLER_MEMBERS {
                for path in [&[*m][..], &["__sigaction_handler", *m]] {
                    let mut f = k.clone();
                    f.path
                        .extend(path.iter().map(|n| Elem::Field(Name::from(*n))));
                    if let Some(vals) = self.store_get(&f) {
                        add_vals(
                            &mut out,
                            vals.iter().filter(|x| matches!(x, Val::Func(_))).cloned(),
                        );
                    }
                }
            }
        }
        out
    }

    /// The functions `args` hand to code without a body: those they hold
    /// directly, and those in a struct of callbacks they point to.
    pub(super) fn handed_functions(&self, fr: &Frame, args: &[Expr]) -> (Vals, Vals) {
        let (mut vals, mut table): (Vals, Vals) = (Vec::new(), Vec::new());
        for a in args {
            for v in self.eval(fr, a, 0) {
                if let Val::Target(k) = &v {
                    if let Some(inner) = self.store_get(&k.without_indices()) {
                        add_vals(
                            &mut table,
                            inner.iter().filter(|x| matches!(x, Val::Func(_))).cloned(),
                        );
                    }
                }
                add_vals(&mut vals, [v]);
            }
        }
        (vals, table)
    }

    /// A single-threaded FUSE loop's operations, run on this thread one
    /// after another, each seeing what those before it did: `init` first
    /// (it may start threads that the other operations then run beside),
    /// then the other operations any number of times, in any order (passes
    /// that walk each and join its exit into the head, until the head no
    /// longer changes, at most `MAX_LOOP_ITERS`), then `destroy` (which may
    /// join them), which runs whenever `init` did; a mount that fails runs
    /// none. `init` and `destroy` are told by their signatures (`fuse.rs`).
    fn call_fuse_serially(
        &mut self,
        fr: &Frame,
        c: &Call,
        st: State,
        entries: &[FunctionId],
    ) -> Option<State> {
        let (inits, rest): (Vec<FunctionId>, Vec<FunctionId>) = entries
            .iter()
            .partition(|f| super::fuse::is_init(&self.summary(**f).ir));
        let (destroys, ops): (Vec<FunctionId>, Vec<FunctionId>) = rest
            .into_iter()
            .partition(|f| super::fuse::is_destroy(&self.summary(*f).ir));
        let entry = st.clone();
        let mut head = self.call_back(fr, c, st, &inits)?;
        for _ in 0..super::MAX_LOOP_ITERS {
            let next = self.call_back(fr, c, head.clone(), &ops)?;
            let new_head = join(Some(head.clone()), Some(next)).expect("both present");
            if new_head == head {
                break;
            }
            head = new_head;
        }
        // Once `init` ran, `destroy` runs before the call returns (at the
        // unmount); a mount that fails runs neither.
        match destroys.is_empty() {
            true => Some(head),
            false => join(Some(entry), self.callback_exits(fr, c, head, &destroys)),
        }
    }

    /// Code without a body runs the callbacks `entries` on this thread during
    /// call `c`, any number of times (zero included). What the library hands
    /// a callback is unknown: its pointer parameters are unresolved (binding
    /// them to every argument of the call made unrelated objects alias).
    fn call_back(
        &mut self,
        fr: &Frame,
        c: &Call,
        st: State,
        entries: &[FunctionId],
    ) -> Option<State> {
        let zero = Some(st.clone());
        let runs = self.callback_exits(fr, c, st, entries);
        join(zero, runs)
    }

    /// The join of the exits of the callbacks `entries`, each walked once
    /// from `st` (`None` when there are none, or none returns).
    fn callback_exits(
        &mut self,
        fr: &Frame,
        c: &Call,
        st: State,
        entries: &[FunctionId],
    ) -> Option<State> {
        let runs: Vec<(FunctionId, Vec<Vals>)> = entries
            .iter()
            .map(|&f| (f, vec![Vals::new(); self.summary(f).ir.params.len()]))
            .collect();
        self.callback_exits_bound(fr, c, st, &runs)
    }

    /// The join of the exits of the callbacks `runs`, each walked once from
    /// `st` with its parameters bound as given.
    pub(super) fn callback_exits_bound(
        &mut self,
        fr: &Frame,
        c: &Call,
        st: State,
        runs: &[(FunctionId, Vec<Vals>)],
    ) -> Option<State> {
        let _ = (fr, c);
        let mut acc = None;
        for (f, bindings) in runs {
            let (f, bindings) = (*f, bindings.clone());
            let mut inner = st.clone();
            inner.syms = ThinVec::new();
            inner.leave_own();
            let e = self.walk_fn(f, inner, bindings).map(|mut e| {
                // The callback cannot reassign the caller's locals.
                e.syms = st.syms.clone();
                e.restore_own(&st);
                e.sym_guards = st.sym_guards.clone();
                e
            });
            acc = join(acc, e);
        }
        acc
    }
}

/// After an init function ran by `pthread_once` (exit state `e`): the
/// threads it created were created on this path, and those still running
/// at its exit (not joined inside it) may still run. Before, only
/// `created` was kept, so a thread the init function started was taken to
/// have ended when `pthread_once` returned, and its races with the
/// caller's next accesses were missed.
fn once_threads(st: &mut State, e: &State) {
    st.created = st.created.union(&e.created);
    st.active = st.active.union(&e.active);
    st.joined_some = st.joined_some.union(&e.joined_some);
}

/// Is `c` a compare-and-swap (GCC's builtins, C11's generic functions)?
/// The value swapped in is its third argument in every form.
fn is_cas(c: &Call) -> bool {
    matches!(&c.callee, Callee::Direct(n) if n.contains("compare_exchange") || n.contains("compare_and_swap"))
}

/// Is `c` a compare-and-swap that swaps in a computed value (`CAS(&n,
/// &old, old + 1)`), or an exchange that swaps in anything but a nonzero
/// constant (`atomic_exchange(&head, NULL)`)? It updates a counter or a
/// pointer; only one that swaps in a constant (`CAS(&l, &zero, 1)`,
/// `atomic_exchange(&l, 1)`) is a trylock, at a direct call and inside a
/// lock wrapper alike.
pub(super) fn swaps_in_computed(c: &Call) -> bool {
    let exchange = matches!(&c.callee, Callee::Direct(n)
        if matches!(&**n, "atomic_exchange" | "atomic_exchange_explicit" | "__atomic_exchange_n"));
    (is_cas(c) && !matches!(c.args.get(2).map(uncast), Some(Expr::Int(_))))
        || (exchange && !matches!(c.args.get(1).map(uncast), Some(Expr::Int(k)) if *k != 0))
}

/// How an atomic operation of this name accesses the object its first
/// argument points to: a load reads it, a store, exchange, compare-and-swap
/// or read-modify-write writes it. `None` for operations on no object
/// (fences) and for `atomic_init`, which is a plain write (C11 7.17.2.2).
fn atomic_access(name: &str) -> Option<AccessKind> {
    let n = name.trim_start_matches('_');
    if n.contains("fence")
        || n.contains("synchronize")
        || n.contains("lock_free")
        || n == "atomic_init"
    {
        return None;
    }
    if n.contains("load") || n.ends_with("_read") || n.contains("_read_") {
        return Some(AccessKind::Read);
    }
    Some(AccessKind::Write)
}

/// The value an atomic store, exchange or compare-and-swap `c` may put into
/// the object its first argument points to (`v` of
/// `__atomic_store_n(p, v, o)`, `new` of `CAS(p, old, new)`, `*v` of the
/// generic `__atomic_store(p, &v, o)`).
pub(super) fn atomic_stored_value(c: &Call) -> Option<Expr> {
    let Callee::Direct(n) = &c.callee else {
        return None;
    };
    let (i, by_ref) = match &**n {
        "__atomic_store_n"
        | "atomic_store"
        | "atomic_store_explicit"
        | "__atomic_exchange_n"
        | "atomic_exchange"
        | "atomic_exchange_explicit"
        | "__sync_lock_test_and_set" => (1, false),
        "__atomic_compare_exchange_n"
        | "atomic_compare_exchange_strong"
        | "atomic_compare_exchange_weak"
        | "atomic_compare_exchange_strong_explicit"
        | "atomic_compare_exchange_weak_explicit"
        | "__sync_val_compare_and_swap"
        | "__sync_bool_compare_and_swap" => (2, false),
        "__atomic_store" | "__atomic_exchange" => (1, true),
        "__atomic_compare_exchange" => (2, true),
        _ => return None,
    };
    let v = c.args.get(i)?.clone();
    Some(match by_ref {
        true => Expr::Deref(Box::new(v)),
        false => v,
    })
}

/// Is `c` an atomic store (`__atomic_store_n`, `atomic_store[_explicit]`)?
fn is_atomic_store(c: &Call) -> bool {
    matches!(&c.callee, Callee::Direct(n) if matches!(&**n,
        "__atomic_store_n" | "__atomic_store" | "atomic_store" | "atomic_store_explicit"))
}
