//! Thread spawning and joining bookkeeping: a creation site becomes a
//! thread of the table (one abstract thread per site, parent and entry,
//! or a callback group for callbacks handed to unknown code), and `main`'s
//! own thread id is remembered for joins of `main`.
//!
//! Owns the creating side of `WalkData::sites`, `site_index`,
//! `thread_index`, `callback_index`, `group_roots`, `callback_group`, the
//! new threads' `thread_args` and `thread_acquired`, and `main_tids`.
//! Invariants: every change to a site or to the thread table is an
//! `effect` that moves `sites_epoch`; at most
//! [`THREAD_BUDGET`](super::THREAD_BUDGET) threads, past which the
//! creating function is marked incomplete.

use super::frames::Frame;
use super::state::State;
use super::{add_vals, SiteKey, Val, Vals, Walker, MAX_TRACKED, THREAD_BUDGET};
use crate::db::{FunctionId, FunctionSummary};
use crate::facts::*;
use crate::model::*;
use racelens_syntax::{Call, Callee, Expr, Name, TypeInfo};
use rustc_hash::FxHashMap;

/// The name of a callback group's thread: its entry functions.
/// The name of a callback group with several callbacks: the asynchronous
/// API they were handed to (`event_set callbacks`), never a list of
/// callbacks that may have nothing to do with each other.
fn group_name(api: &Callee) -> Name {
    match api {
        Callee::Direct(n) if !n.is_empty() => Name::from(format!("{n} callbacks")),
        _ => Name::from("callbacks of unknown code"),
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

impl<'a> Walker<'a> {
    /// `main` keeps its own thread id in `lhs`: joining it elsewhere waits
    /// for `main` to end.
    #[inline(never)]
    pub(super) fn main_tid_at(&mut self, fr: &Frame, lhs: &Expr) {
        for k in self.place(fr, lhs, 0) {
            if !self.d.main_tids.contains(&k) && self.d.main_tids.len() < MAX_TRACKED {
                self.effect();
                self.d.sites_epoch = self.d.epoch;
                self.d.main_tids.push(k);
            }
        }
    }

    /// Is call `id` `pthread_self()` (or C11 `thrd_current()`)?
    pub(super) fn is_self_id(&self, fr: &Frame, id: u32) -> bool {
        matches!(fr.calls.get(&id), Some(Callee::Direct(n))
            if matches!(&**n, "pthread_self" | "thrd_current") && !fr.locals.contains_key(n))
    }

    /// Is call `c` `pthread_equal(t, pthread_self())` (or C11's
    /// `thrd_equal(t, thrd_current())`, either order) in a thread that no
    /// creation made (`main`), where `t` is a place a thread creation stores
    /// a child's id into? Then it compares another thread's id with this
    /// thread's own: zero (`if (!pthread_equal(th->handle, pthread_self()))
    /// pthread_join(th->handle, 0);`, a wrapper's guard against joining
    /// itself). A place that a failed creation leaves holding this thread's
    /// own id (`th->handle = pthread_self()`) belongs to no thread, so the
    /// join the answer lets through orders nothing that runs.
    pub(super) fn tests_child_is_self(&mut self, fr: &Frame, c: &Call) -> bool {
        let Callee::Direct(n) = &c.callee else {
            return false;
        };
        if !matches!(&**n, "pthread_equal" | "thrd_equal")
            || fr.locals.contains_key(n)
            || self.prog.functions_named(n).is_some()
            || c.args.len() != 2
        {
            return false;
        }
        let is_self = |e: &Expr| {
            match super::uncast(e) {
            Expr::CallResult(id) => self.is_self_id(fr, *id),
            Expr::Var(x) => {
                fr.locals.contains_key(x)
                    && !fr.summary.ir.params.iter().any(|p| p.name == *x)
                    && !fr.address_taken.contains(x)
                    && fr.only_assigned(x, |r| {
                        matches!(super::uncast(r), Expr::CallResult(id) if self.is_self_id(fr, *id))
                    })
            }
            _ => false,
        }
        };
        let other = match (is_self(&c.args[0]), is_self(&c.args[1])) {
            (true, false) => &c.args[1],
            (false, true) => &c.args[0],
            _ => return false,
        };
        let keys = self.place(fr, other, 0);
        if keys.is_empty() {
            return false;
        }
        // Only for a thread no creation site made (`main`, a library's
        // entry): another thread's place may hold its own id (a failed
        // creation's `t->handle = pthread_self()` aside, see above) only if
        // its own site stores there, which a later visit may add; the
        // answer would then depend on sites the walk has not seen yet.
        if self.d.threads[self.d.thread as usize].site.is_some() {
            return false;
        }
        let known = keys.iter().all(|k| {
            self.d
                .sites
                .iter()
                .any(|s| s.tid.iter().any(|t| same_thread_id(k, t)))
        });
        // A place no site stores into yet may be one a later site does.
        if !known {
            self.read(self.d.sites_epoch);
        }
        known
    }

    /// Is `f` a launcher's trampoline: does it call through a pointer
    /// (`t->callback(t)`, `(*fn)(arg)`)? Read from its text alone.
    fn is_trampoline(&self, f: FunctionId) -> bool {
        calls_through_pointer(&self.summary(f))
    }

    /// The creation site of call `c` handing `argv` (see
    /// [`Site::launch`]): a launcher's creation handing objects of one
    /// base (heap site, global, local) is a site per base, so that its
    /// threads, each running the launch its object holds, are told apart;
    /// and a creation of one known entry is a site per entry.
    fn site_key(
        &self,
        fr: &Frame,
        c: &Call,
        entries: &[FunctionId],
        argv: &Vals,
        callback: bool,
    ) -> SiteKey {
        let launch = match (callback, entries) {
            (false, [f]) if self.is_trampoline(*f) => {
                let mut bases = argv.iter().map(|v| match v {
                    Val::Target(k)
                        if matches!(
                            k.base,
                            Base::Heap { .. } | Base::Global(_) | Base::Local { .. }
                        ) =>
                    {
                        Some(&k.base)
                    }
                    _ => None,
                });
                match bases.next().flatten() {
                    Some(b) if bases.all(|x| x == Some(b)) => Some(b.clone()),
                    _ => None,
                }
            }
            _ => None,
        };
        // A wrapper's creation (`my_create(&t, fn, arg)` calling
        // `pthread_create(t, 0, fn, arg)`) that callers hand different
        // entries is a site per entry: the one `gen` thread a caller starts
        // is not one of the workers a loop starts through the same wrapper,
        // and what the caller does between the two creations, or after
        // joining the workers, is ordered against each as it should be.
        let entry = match (callback, entries) {
            (false, [f]) => Some(*f),
            _ => None,
        };
        (fr.fid, c.id, launch, entry)
    }

    /// Spawns the threads of call `c`; returns its site.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spawn(
        &mut self,
        fr: &Frame,
        c: &Call,
        st: &mut State,
        tids: Vec<LocKey>,
        entries: Vec<FunctionId>,
        argv: Vals,
        callback: bool,
    ) -> u32 {
        self.effect();
        self.d.sites_epoch = self.d.epoch;
        let key = self.site_key(fr, c, &entries, &argv, callback);
        let launch = key.2.clone();
        let mut tids_again = Vec::new();
        let site = match self.d.site_index.get(&key) {
            Some(&s) => {
                tids_again = tids;
                s
            }
            None => {
                let s = self.d.sites.len() as u32;
                // A strided creation loop's range is not kept: joins of it
                // keep their old reading (the creation range is unknown).
                let loop_bound = self
                    .frame_loop()
                    .cloned()
                    .flatten()
                    .filter(|b| !b.contains("+="));
                let const_bound = loop_bound
                    .as_ref()
                    .map(|b| self.with_constant_params(fr, b))
                    .filter(|c| Some(c) != loop_bound.as_ref());
                self.d.sites.push(Site {
                    func: fr.fid,
                    call: c.id,
                    span: c.span,
                    tid: tids,
                    in_loop: false,
                    loop_bound,
                    const_bound,
                    visits: 0,
                    entry_visits: Vec::new(),
                    joined_before: None,
                    once_held: None,
                    created_before: SiteSet::default(),
                    tid_escaped: false,
                    tid_in_arg: None,
                    active_seen: SiteSet::default(),
                    unseen_spawns: false,
                    launch,
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
            info.active_seen = info.active_seen.union(&st.active);
            info.joined_before = Some(match &info.joined_before {
                None => finished,
                Some(j) => j.intersect(&finished),
            });
            // The init functions of named once controls running here.
            let once: Vec<Name> = st
                .must
                .0
                .iter()
                .filter_map(|h| match &h.lock.base {
                    Base::Synthetic(n)
                        if n.strip_prefix("once:").is_some_and(|k| {
                            !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_')
                        }) =>
                    {
                        Some(n.clone())
                    }
                    _ => None,
                })
                .collect();
            info.once_held = Some(match info.once_held.take() {
                None => once,
                Some(mut old) => {
                    old.retain(|n| once.contains(n));
                    old
                }
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
            {
                // A visit inside a loop counts as many: a wrapper's one
                // `pthread_create` that a loop calls for the workers and
                // straight-line code calls once for another entry starts
                // many workers but one of the other.
                let add = if self.d.loop_depth > 0 { 2 } else { 1 };
                let ev = &mut self.d.sites[site as usize].entry_visits;
                match ev.binary_search_by(|(n, _)| n.cmp(&name)) {
                    Ok(i) => ev[i].1 += add,
                    Err(i) => ev.insert(i, (name.clone(), add)),
                }
            }
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
            // Callbacks only ever handed over in a table of functions
            // (which unknown code may never call) form a group of their own,
            // apart from those handed to code known to run them: each group
            // starts at its own first registration, so what this thread does
            // before its first `event_set` is not taken to race with the
            // handlers it registers later, because a table went to
            // `lua_pushlightuserdata` first.
            let gkey = (
                self.d.thread,
                callback
                    && self.d.callbacks_in_tables.contains(&name)
                    && !self.d.callbacks_sure.contains(&name),
            );
            let group = match (callback, existing) {
                (true, None) => match self.d.group_roots.contains_key(&self.d.thread) {
                    true => Some(self.d.thread),
                    false => self.d.callback_group.get(&gkey).copied(),
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
                            if !callback {
                                self.add_thread_functions(t, &argv);
                            }
                        }
                    }
                    let now = self.chain_acquired(st);
                    self.d.thread_acquired[t as usize].retain(|x| now.contains(x));
                    let set = super::once::set_globals(st);
                    if let Some(old) = self.d.thread_set_globals.get_mut(&t) {
                        old.retain(|g| set.contains(g));
                    }
                    child_sites.extend(self.child_site(t));
                }
                (None, Some(g)) => {
                    // Unknown code may run two callbacks on two threads.
                    let th = &mut self.d.threads[g as usize];
                    th.unique = false;
                    let roots = self.d.group_roots.entry(g).or_default();
                    roots.push((name.clone(), argv.clone()));
                    th.entry = group_name(&c.callee);
                    self.d.callback_index.insert(name, g);
                    if g != self.d.thread {
                        let now = self.chain_acquired(st);
                        self.d.thread_acquired[g as usize].retain(|x| now.contains(x));
                    }
                    child_sites.extend(self.child_site(g));
                }
                (None, None) => {
                    if self.d.threads.len() >= THREAD_BUDGET {
                        self.mark_incomplete(fr.fid, "budget exceeded (too many threads)");
                        continue;
                    }
                    let t = self.d.threads.len() as u32;
                    let name_for_index = name.clone();
                    self.d
                        .threads
                        .push(Thread::new(name, Some(self.d.thread), Some(site), true));
                    self.d.thread_args.push(argv.clone());
                    if !callback {
                        self.add_thread_functions(t, &argv);
                    }
                    let now = self.chain_acquired(st);
                    self.d.thread_acquired.push(now);
                    if !callback {
                        let set = super::once::set_globals(st);
                        if !set.is_empty() {
                            self.d.thread_set_globals.insert(t, set);
                        }
                    }
                    self.d.thread_index.insert(tkey, t);
                    if callback {
                        self.d
                            .group_roots
                            .insert(t, vec![(name_for_index.clone(), argv.clone())]);
                        self.d.callback_group.insert(gkey, t);
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
        // The call returns a new result: what followed from its last one
        // (a thread of an earlier round) no longer does.
        let result = call_flag(c.id);
        st.forget_flags(|f| *f == *result);
        for site in child_sites {
            // The flags under which the site's threads were created: what
            // holds now, and, when the path created the site before (an
            // earlier round of a loop), only what held then too.
            let again = st.created.contains(site);
            let before: Vec<(Name, bool)> = st
                .guards
                .iter()
                .filter(|g| g.0 == site)
                .map(|g| (g.1.clone(), g.2))
                .collect();
            let mut now: Vec<(Name, bool)> = st.conds.iter().cloned().collect();
            // A lazily set global known set here (`once.rs`) never goes
            // back to zero: a later test that finds it zero is on a path
            // without this creation (a second `task_init` whose paths
            // merged one that made `workers` with one that did not).
            for g in super::once::set_globals(st) {
                if !now.iter().any(|c| c.0 == g) {
                    now.push((g, true));
                }
            }
            // `pthread_create` and `thrd_create` return zero when the thread
            // was created: a test of the result that finds it nonzero is on
            // a path without the thread (`if (err) { strerror(err); ... }`).
            if !callback && result_tested(fr, c) {
                now.push((result.clone(), false));
            }
            if again {
                now.retain(|g| before.contains(g));
            }
            st.created.insert(site);
            // A child process that creates a thread is threaded again
            // (`fork.rs`).
            st.forked = false;
            // The site's one id place now holds this thread's id: joining
            // it joins the site if no earlier thread of it may still run.
            // Other sites storing there lose theirs.
            let tids = self.d.sites[site as usize].tid.clone();
            for (j, other) in self.d.sites.iter().enumerate() {
                let j = j as u32;
                if j != site
                    && other
                        .tid
                        .iter()
                        .any(|t| tids.iter().any(|k| same_thread_id(k, t)))
                {
                    st.tid_held.remove(j);
                }
            }
            match !callback && tids.len() == 1 && !st.active.contains(site) {
                true => st.tid_held.insert(site),
                false => st.tid_held.remove(site),
            }
            st.active.insert(site);
            st.joined_some.remove(site);
            st.joined_ix.retain(|j| j.0 != site);
            st.counts.retain(|c| c.1 != site);
            if !st.count_vars.is_empty() {
                self.count_from_vars(site, st);
            }
            st.joined_tids.retain(|j| j.0 != site);
            st.guards.retain(|g| g.0 != site);
            st.guards
                .extend(now.into_iter().map(|(v, nz)| (site, v, nz)));
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
        site
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

impl<'a> Walker<'a> {
    /// Keeps the function values `lhs = rhs` stores into memory outside the
    /// frame, by calling context (see `WalkData::fn_cells`).
    pub(super) fn store_functions(&mut self, fr: &Frame, lhs: &Expr, rhs: &Expr) {
        if let Some(ty) = self.struct_type(fr, lhs) {
            self.store_member_functions(fr, lhs, rhs, &ty, 0);
            return;
        }
        let mut funcs: Vals = self
            .eval(fr, rhs, 0)
            .into_iter()
            .filter(|v| matches!(v, Val::Func(_)))
            .collect();
        // Copied from a place whose functions the walk knows
        // (`*out = h->fn` with `h` where the thread's argument leads).
        let rv = super::uncast(rhs);
        if matches!(
            rv,
            Expr::Field { .. } | Expr::Index { .. } | Expr::Deref(_) | Expr::Var(_)
        ) {
            let walked = self.walked_functions(fr, rv);
            if !walked.is_empty() {
                self.opaque();
                add_vals(&mut funcs, walked.into_iter().map(Val::Func));
            }
        }
        if funcs.is_empty() {
            return;
        }
        let mut changed = false;
        for k in self.place(fr, lhs, 0) {
            let k = k.without_indices();
            let known = self.store_get(&k);
            let new: Vals = funcs
                .iter()
                .filter(|f| known.is_none_or(|v| !v.contains(f)))
                .cloned()
                .collect();
            if !new.is_empty() {
                let from = self.d.fn_cells_from.entry(fr.fid).or_default();
                add_vals(from.entry(k.clone()).or_default(), new.iter().cloned());
                changed |= add_vals(self.d.fn_cells.entry(k).or_default(), new);
            }
        }
        if changed {
            self.effect();
        }
    }

    /// `lhs = rhs` of a whole struct of type `ty` (`struct job j = {f, a}`,
    /// `q->jobs[tail] = j`, `j = q->jobs[head]`): each function pointer
    /// member of `lhs` gets what the same member of `rhs` holds, or the
    /// element that initializes it, so that `j.fn(j.arg)` calls what a
    /// producer handed over in a struct. Nested struct members are followed
    /// a few levels; a local struct's members are cells of their own (see
    /// [`walked_functions`](Self::walked_functions)).
    pub(super) fn store_member_functions(
        &mut self,
        fr: &Frame,
        lhs: &Expr,
        rhs: &Expr,
        ty: &Name,
        depth: u8,
    ) {
        // The program outlives the walker: its members need no copy while
        // the walk stores.
        let prog = self.prog;
        let Some(fields) = prog.structs.get(ty) else {
            return;
        };
        let member = |e: &Expr, f: &Name| Expr::Field {
            base: Box::new(e.clone()),
            field: f.clone(),
            arrow: false,
        };
        // (member, its type, the expression it gets).
        let pairs: Vec<(&Name, &TypeInfo, Expr)> = match super::uncast(rhs) {
            Expr::Init(elems) => elems
                .iter()
                .enumerate()
                .filter_map(|(i, (designator, value))| {
                    let (f, t) = match designator {
                        Some(d) => fields.iter().find(|(n, _)| n == d),
                        None => fields.get(i),
                    }?;
                    Some((f, t, value.clone()))
                })
                .collect(),
            r @ (Expr::Var(_) | Expr::Field { .. } | Expr::Index { .. } | Expr::Deref(_)) => {
                fields.iter().map(|(f, t)| (f, t, member(r, f))).collect()
            }
            _ => return,
        };
        for (f, ft, value) in pairs {
            let ft = prog.resolve_type(ft);
            let l = member(lhs, f);
            if ft.pointer > 0 || ft.is_function {
                self.store_functions(fr, &l, &value);
            } else if !ft.array && depth < 3 {
                if let Some(n) = ft.name.filter(|n| prog.structs.contains_key(n)) {
                    self.store_member_functions(fr, &l, &value, &n, depth + 1);
                }
            }
        }
    }

    /// Gives thread `t` the function cells its argument `argv` reaches now.
    pub(super) fn add_thread_functions(&mut self, t: u32, argv: &Vals) {
        let cells = self.functions_reached(argv);
        if cells.is_empty() {
            return;
        }
        let into = self.d.thread_fns.entry(t).or_default();
        for (k, v) in cells {
            add_vals(into.entry(k).or_default(), v);
        }
    }

    /// The cells of `fn_cells` that a thread argument `argv` reaches:
    /// through its targets and the data pointers the store holds in them,
    /// a few levels deep (`w->pl->func`).
    pub(super) fn functions_reached(&self, argv: &Vals) -> FxHashMap<LocKey, Vals> {
        let mut out = FxHashMap::default();
        if self.d.fn_cells.is_empty() {
            return out;
        }
        let mut bases: Vec<Base> = Vec::new();
        for v in argv {
            if let Val::Target(k) = v {
                if !bases.contains(&k.base) {
                    bases.push(k.base.clone());
                }
            }
        }
        let mut i = 0;
        while i < bases.len() && bases.len() < 64 {
            let b = bases[i].clone();
            i += 1;
            for (k, vals) in self.d.store.iter() {
                if k.base != b {
                    continue;
                }
                for v in vals {
                    if let Val::Target(t) = v {
                        if !bases.contains(&t.base) {
                            bases.push(t.base.clone());
                        }
                    }
                }
            }
        }
        for (k, v) in &self.d.fn_cells {
            if bases.contains(&k.base) {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }

    /// The functions a call through memory may reach in this thread because
    /// its creator stored them where its argument leads (`capsule->probe`),
    /// or because this walk stored them through a local's address
    /// (`find(.., &fn); fn(c);`).
    pub(super) fn thread_callees(&mut self, fr: &Frame, callee: &Callee) -> Vec<FunctionId> {
        let e = match callee {
            Callee::Indirect(Expr::Deref(inner)) => (**inner).clone(),
            Callee::Indirect(e) => e.clone(),
            Callee::Direct(n) if self.names_variable(fr, n) => Expr::Var(n.clone()),
            Callee::Direct(_) => return Vec::new(),
        };
        let mut names = self.walked_functions(fr, &e);
        // A local function pointer holds what its assignments read
        // (`f = pl->step; f(x)` as `pl->step(x)`).
        if let Expr::Var(x) = &e {
            let param = fr.summary.ir.params.iter().any(|p| p.name == *x);
            if !param && super::frames::tracks_ptr(fr, x) {
                let rhs: Vec<Expr> = fr.assigned_values(x).cloned().collect();
                for r in rhs {
                    for n in self.walked_functions(fr, super::uncast(&r)) {
                        if !names.contains(&n) {
                            names.push(n);
                        }
                    }
                }
                names.sort();
            }
        }
        if names.is_empty() {
            return Vec::new();
        }
        // What this thread's context decided cannot be copied elsewhere.
        self.opaque();
        self.definitions(fr, &names)
    }

    /// The function values the walk (rather than the pointer store) knows
    /// the place `e` holds: those the creator of this thread stored where
    /// its argument leads, and those stored through the address of a local
    /// (a function's out-parameter `*out = h->fn` into the caller's `fn`).
    /// Sorted names.
    pub(super) fn walked_functions(&self, fr: &Frame, e: &Expr) -> Vec<Name> {
        let cells = self.d.thread_fns.get(&self.d.thread);
        if cells.is_none() && self.d.fn_cells.is_empty() {
            return Vec::new();
        }
        let mut names: Vec<Name> = Vec::new();
        for k in self.place(fr, e, 0) {
            let k = k.without_indices();
            let mine = cells.and_then(|c| c.get(&k));
            let local = match k.base {
                Base::Local { .. } => self.d.fn_cells.get(&k),
                _ => None,
            };
            for x in mine.into_iter().chain(local).flatten() {
                if let Val::Func(f) = x {
                    if !names.contains(f) {
                        names.push(f.clone());
                    }
                }
            }
        }
        names.sort();
        names
    }
}

/// Does the function call through a pointer (`t->callback(t)`, `(*fn)(arg)`,
/// a parameter called by name)? As a thread's entry it is then a launcher's
/// trampoline (see `Walker::site_key`).
pub(super) fn calls_through_pointer(s: &FunctionSummary) -> bool {
    let mut found = false;
    crate::visit::visit_calls(&s.ir.body, &mut |c| {
        found |= match &c.callee {
            Callee::Indirect(_) => true,
            Callee::Direct(n) => s.ir.params.iter().any(|p| p.name == *n),
        };
    });
    found
}

/// Does `c` call a creation function whose zero result means success?
/// (Creation functions configured by name may use other conventions.)
/// Is `c` a creation whose zero result means success, and does its
/// function test that result (`if (pthread_create(..))`, `err = ..; if (err)`)?
pub(super) fn result_tested(fr: &Frame, c: &Call) -> bool {
    creates_on_zero(c) && fr.tested.contains(&c.id)
}

fn creates_on_zero(c: &Call) -> bool {
    matches!(&c.callee, Callee::Direct(n) if &**n == "pthread_create" || &**n == "thrd_create")
}

/// The flag name that stands for the result of call `id` until it is
/// stored in a variable (a name no C identifier can have).
pub(super) fn call_flag(id: u32) -> Name {
    format!("#call{id}").into()
}
