//! Access recording: every read or write the walk meets becomes an
//! [`AccessFact`] of the objects it may touch, with its calling context
//! (locksets, spawn sites, acquired locks, interned as a `FactCtx`) and the
//! struct prefixes of its path.
//!
//! Owns `WalkData::facts`, `struct_prefixes`, `paths`, `ctxs` and
//! `last_ctx`, each node's own facts, and the atomic/volatile cache
//! `Walker::untracked`. Invariants: every fact goes
//! through [`Walker::add_fact`], with its path interned in
//! `WalkData::paths` (so that [`Recorded`] hashes paths by address); at
//! most [`HARD_MAX_FACTS`](super::HARD_MAX_FACTS) per base, past which the
//! walk is marked `capped`; accesses of fresh heap objects and of
//! frame-private locals are not recorded.

use super::frames::Frame;
use super::locks::{any_indexed, array_path, const_indexed, index_lock, is_region, region_lock};
use super::state::State;
use super::{Walker, HARD_MAX_FACTS, MAX_PREFIXES};
use crate::db::Program;
use crate::facts::*;
use crate::model::*;
use racelens_syntax::{AccessKind, Expr, Name, TypeInfo};
use std::sync::Arc;

/// The last fact context built, with what its `acquired` came from.
pub(super) struct LastCtx {
    pub(super) thread: u32,
    /// The state's own acquired locks and the thread's creation-chain ones.
    pub(super) acquired: Vec<LocKey>,
    pub(super) chain: Vec<(u32, LocKey)>,
    pub(super) ctx: Arc<FactCtx>,
    pub(super) hash: u64,
}

/// An interned fact context and the hash of its value.
type Ctx = (Arc<FactCtx>, u64);

/// An access as the walk collects it: with the hash of its context, so that
/// the accesses of one expression in many contexts do not all collide (an
/// [`AccessFact`]'s own hash leaves the context out).
#[derive(PartialEq, Eq)]
pub(super) struct Recorded {
    pub(super) fact: AccessFact,
    ctx_hash: u64,
}

/// Hashes the path by address: every recorded path is interned
/// ([`WalkData::paths`](super::WalkData::paths)), so equal paths are one allocation and the many
/// accesses recorded again in an equal context cost no path comparison.
impl std::hash::Hash for Recorded {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.fact.path) as *const Elem as usize).hash(h);
        self.fact.hash_access(h);
        self.ctx_hash.hash(h);
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

/// Is this access by name to a lent local one its frame makes before it
/// lends the local (`addressed::early_accesses`)? No other thread can
/// reach that frame's object yet.
fn early(fr: &Frame, e: &Expr, span: racelens_syntax::Span, prog: &Program) -> bool {
    !fr.early.is_empty()
        && super::addressed::local_root(e, &fr.locals, prog)
            .is_some_and(|x| fr.early.contains(&(span, x.clone())))
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

impl<'a> Walker<'a> {
    /// Records access `fact` to `base`: among node `n`'s own accesses, and
    /// in the walk's set for the base (up to [`HARD_MAX_FACTS`]).
    pub(super) fn add_fact(&mut self, n: Option<u32>, base: Base, fact: AccessFact, ctx_hash: u64) {
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
        let timing = !self.d.capped && super::timing();
        let named = timing.then(|| format!("{base:?}"));
        let set = self.d.facts.entry(base).or_default();
        if set.len() < HARD_MAX_FACTS {
            set.insert(Recorded { fact, ctx_hash });
        } else {
            if let Some(b) = named {
                eprintln!("racelens: walk: more than {HARD_MAX_FACTS} accesses of {b}");
            }
            self.d.capped = true;
        }
    }

    /// Records an access of `place`. `stable`: the place is an expression of
    /// the function's summary (an access statement), not a temporary the
    /// walk built for a call, so it may be cached by address.
    pub(super) fn record(
        &mut self,
        fr: &Frame,
        place: &Expr,
        kind: AccessKind,
        span: racelens_syntax::Span,
        st: &State,
        stable: bool,
    ) {
        self.record_place(fr, place, kind, span, st, stable, false)
    }

    /// [`record`](Self::record) or [`record_atomic`](Self::record_atomic).
    #[allow(clippy::too_many_arguments)]
    fn record_place(
        &mut self,
        fr: &Frame,
        place: &Expr,
        kind: AccessKind,
        span: racelens_syntax::Span,
        st: &State,
        stable: bool,
        atomic_op: bool,
    ) {
        // A non-static local whose address is never taken (or a field of
        // one) is this frame's alone: `record_at` records nothing for it,
        // and with no symbolic lock in the state it marks nothing either.
        if st.syms.is_empty() && (frame_private(fr, place) || early(fr, place, span, &self.prog)) {
            return;
        }
        // An allocator's free or handed-out blocks (`free_wrappers.rs`).
        if self.pool_block_access(fr, place) {
            return;
        }
        let keys = self.place(fr, place, 0);
        if kind == AccessKind::Write {
            self.note_elem_writes(fr, place, &keys);
        }
        self.record_at(fr, place, keys, kind, span, st, stable, atomic_op);
    }

    /// Records the access of an atomic operation (a builtin or library
    /// call) on `place`: it races with plain accesses only.
    pub(super) fn record_atomic(
        &mut self,
        fr: &Frame,
        place: &Expr,
        kind: AccessKind,
        span: racelens_syntax::Span,
        st: &State,
    ) {
        self.record_place(fr, place, kind, span, st, false, true)
    }

    /// Records accesses of `place` to the objects `keys` it denotes;
    /// `atomic_op`: the access is an atomic operation.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_at(
        &mut self,
        fr: &Frame,
        place: &Expr,
        keys: Vec<LocKey>,
        kind: AccessKind,
        span: racelens_syntax::Span,
        st: &State,
        stable: bool,
        atomic_op: bool,
    ) {
        if keys.is_empty() {
            return;
        }
        let keys = self.shared_locations(fr, place, keys);
        // Direct accesses of a thread-local are kept (marked below): a copy
        // whose address another thread holds can still race.
        let at = (fr.fid, place as *const Expr as usize);
        let cached = match stable {
            true => self.untracked.borrow().get(&at).copied(),
            false => None,
        };
        // (atomic, volatile, volatile sig_atomic_t): an atomic access is not
        // recorded; a volatile one is, unless the configuration keeps the
        // old convention.
        let (atomic, volatile, sig_atomic) = cached.unwrap_or_else(|| {
            let u = self
                .type_of(fr, place, 0)
                .map_or((false, false, false), |t| {
                    (t.atomic, t.is_volatile(), t.is_volatile_sig_atomic())
                });
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
        let mut via: Option<Option<Slot>> = None;
        for k in keys {
            self.observe_heap(&k.base);
            if st.fresh.contains(&k.base) {
                self.observe_refresh(&k.base);
                if !st.refreshed.contains(&k.base)
                    || through_newest(place, &k.base, st, &|e| self.is_array(fr, e))
                {
                    continue;
                }
            } else if matches!(k.base, Base::Heap { .. })
                // An object stored unpublished into a member of one still
                // unpublished (`c->buf = malloc(..); c->buf[0] = ..`).
                && self.through_nested_cell(fr, place, &k.base, st)
            {
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
                            // A pointer's element guards only itself.
                            if super::locks::pointer_marker(l).is_some_and(|p| p != &**arr) {
                                continue;
                            }
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
                // Through `q->a->..`: only the part inside the object reached
                // is a path of the access's location, and a lock counts when
                // it is reached the same way (`q->a->m`).
                let (ahead, apath_eff) = super::locks::deref_split(apath_eff);
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
                        let (lhead, lpath_eff) = super::locks::deref_split(lpath_eff);
                        if lhead != ahead {
                            continue;
                        }
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
                    // An `alloca` block is only ever reached by its address.
                    let by_address =
                        fr.address_taken.contains(var) || var.starts_with(ALLOCA_BLOCK);
                    if own && !by_address {
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
            let slot = match k.base {
                Base::Heap { .. } | Base::Type(_) | Base::Global(_) => {
                    *via.get_or_insert_with(|| self.via_tag(fr, place))
                }
                _ => None,
            }
            .or_else(|| self.slot_tag(fr, place, span, &k));
            let (own, joined) = match k.base {
                Base::Heap { .. } => (
                    self.own_access(fr, place, st),
                    super::own::joined_access(place, st, &|e| self.is_array(fr, e)),
                ),
                // An object the walk lost track of may still be reached
                // through own members (`held.rs`).
                Base::Type(_) => (self.own_access(fr, place, st), None),
                Base::Local { .. } => (self.own_frame_access(fr, place, st), None),
                _ => (None, None),
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
                sig_atomic,
                atomic: atomic_op,
                slot,
                own,
                joined,
                build: if fr.in_unit && !fr.summary.ir.build_arms.is_empty() {
                    let arms = fr.summary.ir.arms_at(span.start);
                    (!arms.is_empty()).then(|| Arc::from(arms))
                } else {
                    None
                },
                ctx,
            };
            let n = self.d.node_stack.last().copied();
            self.add_fact(n, k.base, fact, ctx_hash);
        }
    }

    /// The interned fact context for a state and the locksets of an access;
    /// consecutive accesses in the same state reuse the last one without
    /// rebuilding it.
    pub(super) fn ctx_for(&mut self, st: &State, must: &LockSet, may: &LockSet) -> Ctx {
        let chain = self.d.thread_acquired.get(self.d.thread as usize);
        let partly = st.active.intersect(&st.joined_some);
        if let Some(last) = &self.d.last_ctx {
            let c = &last.ctx;
            if last.thread == self.d.thread
                && c.must == *must
                && c.may == *may
                && c.active == st.active
                && c.partly == partly
                && c.created == st.created
                && *c.clean == *st.clean
                && *c.phases == *st.phases
                && c.main_ended == st.main_ended
                && c.forked == st.forked
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
            partly,
            created: st.created.clone(),
            acquired: self.chain_acquired(st),
            clean: st.clean.to_vec(),
            phases: st.phases.to_vec(),
            main_ended: st.main_ended,
            forked: st.forked,
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
                Elem::Index(_) => {
                    if ty.rows > 0 {
                        ty.rows -= 1;
                    } else {
                        ty.array = false;
                    }
                }
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

impl Walker<'_> {
    /// A write forgets the branch facts on the flags it may change: a
    /// flag tested before (`if (g) spawn(..)`) and written since says
    /// nothing about a later test of it. Its keys decide: a global or local
    /// and the members below it, any member chain when the write goes
    /// through an unresolved struct pointer, everything through a wild one.
    pub(super) fn forget_written_flags(&self, fr: &Frame, place: &Expr, st: &mut State) {
        if !st.has_flags() {
            return;
        }
        // `f` is `p` or a member chain below it.
        let below = |f: &str, p: &str| {
            f.strip_prefix(p)
                .is_some_and(|r| r.is_empty() || r.starts_with('.'))
        };
        for k in self.place(fr, place, 0) {
            let head: &str = match &k.base {
                Base::Global(n) => n,
                Base::Local { var, .. } => var,
                Base::Type(_) => {
                    st.forget_flags(|f| f.contains('.'));
                    continue;
                }
                Base::Unknown => {
                    st.forget_flags(|_| true);
                    continue;
                }
                Base::Heap { .. } | Base::Synthetic(_) => continue,
            };
            // The member the write reaches: `head` and the fields of the
            // key's path up to its first index. Past an index (which may be
            // any) the write may reach anything below `head`.
            let mut chain = head.to_string();
            let mut whole = true;
            for e in k.path.iter() {
                match e {
                    Elem::Field(f) => {
                        chain.push('.');
                        chain.push_str(f);
                    }
                    Elem::Index(_) => {
                        whole = false;
                        break;
                    }
                }
            }
            st.forget_flags(|f| below(f, &chain) || (!whole && below(f, head)));
        }
    }
}

/// The local pointer an access goes through alone, if it does (`x->f`,
/// `*x`, `x[i]`, `x->s.f`; not `x->next->f`, which loads another pointer).
pub(super) fn access_root(e: &Expr) -> Option<&Name> {
    match pointer_read(e)? {
        Expr::Var(x) => Some(x),
        _ => None,
    }
}

/// `place` without the steps that stay inside the object it indexes or
/// dereferences: `x->mac[i]` and `*x->mac` (a library call's access of
/// `memcpy(x->mac, ..)`) are inside `x->mac` when `mac` is an array member
/// (`is_array`), not a pointer one, under any casts (`memcpy((void *)
/// x->mac, ..)`); `*&x->st` (of `memset(&x->st, ..)`) is `x->st`.
pub(super) fn within_arrays<'e>(place: &'e Expr, is_array: &dyn Fn(&Expr) -> bool) -> &'e Expr {
    let mut p = place;
    loop {
        match p {
            Expr::Index { base, .. } | Expr::Deref(base) if is_array(super::uncast(base)) => {
                p = super::uncast(base)
            }
            Expr::Deref(base) => match super::uncast(base) {
                Expr::AddrOf(inner) => p = inner,
                _ => return p,
            },
            _ => return p,
        }
    }
}

/// Is `place` an access of the object a local of `st.newest` holds as the
/// newest object of `site`, through that local alone ([`access_root`]),
/// past the steps inside its array members ([`within_arrays`])?
fn through_newest(place: &Expr, site: &Base, st: &State, is_array: &dyn Fn(&Expr) -> bool) -> bool {
    access_root(within_arrays(place, is_array))
        .is_some_and(|x| st.newest_held_by(x).any(|b| b == site))
}

/// The pointer value an access dereferences first (`p` of `p->f`, `*p`,
/// `p[i]`, `(*p).f.g`), up to casts and offsets.
pub(super) fn pointer_read(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Field {
            base, arrow: false, ..
        } => pointer_read(base),
        Expr::Field {
            base, arrow: true, ..
        }
        | Expr::Index { base, .. }
        | Expr::Deref(base) => {
            let mut b = super::uncast(base);
            while let Expr::Offset(x) = b {
                b = super::uncast(x);
            }
            Some(b)
        }
        _ => None,
    }
}
