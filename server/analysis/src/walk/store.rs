//! The pointer store: flow-insensitive contents of the pointer cells
//! outside frames (globals, fields, heap), built to a fixed point before
//! any thread is walked, plus the context-insensitive return values of
//! functions, the cells `realloc` and allocation wrappers (see
//! `alloc_wrappers.rs`) copy into their new object, and which functions a
//! call may reach to allocate (`may_allocate`). What copies of structs and
//! memory carry is `store_copies.rs`'s.
//!
//! Owns `WalkData::store`, `store_reads`, `returns`, `may_allocate`
//! (facts of the call graph, asked again by `incremental.rs` after an edit)
//! with `call_edges` (each function's direct callees, which those
//! questions walk; the edited function's are dropped), and `store_passes` /
//! `store_params` / `store_call_args` (each function's last pass, and the
//! parameters the build ended with, all calls' together and by call: an
//! edit whose new pass gives the same keeps the store without building it
//! again). A function that stores one
//! parameter into another's object passes once per call
//! (`cross_store_params`).
//!
//! A local whose address is taken has two cells: its own, for what stores
//! through that address put there (read by name and through the address),
//! and [`assigned_key`]'s, for what its function assigns it by name (read
//! only through the address: by name the flow-sensitive value holds).
//!
//! Invariants: the store is complete before the first thread starts, and
//! frames, return values and wrapper answers computed while it was being
//! built are dropped then (see `walk_all`); return values, like frames, do
//! not depend on the caller's flow-sensitive pointers.

use super::alloc_wrappers::root_var;
use super::frames::{set_ptr, tracks_ptr, Frame};
use super::state::Ptrs;
use super::threads::function_name;
use super::{add_vals, uncast, Val, Vals, Walker};
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary};
use crate::model::*;
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{Call, Callee, Expr, Name, Stmt, TypeInfo};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// What one pass of a function over the pointer store gave (see
/// [`Walker::store_pass`]): the last pass of each function is kept, so that
/// an edit whose new pass gives the same keeps the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct StorePass {
    strict: bool,
    pass_args: bool,
    updates: Vec<(LocKey, Vals)>,
    passed: FxHashMap<FunctionId, Vec<Vals>>,
    passed_fns: FxHashMap<FunctionId, Vec<Vals>>,
    /// What each call (its id) passed, per callee: the arguments of one
    /// call together (see [`cross_store_params`]).
    calls: FxHashMap<FunctionId, Vec<(u32, Vec<Vals>)>>,
    copies: Vec<(Base, Base)>,
    unresolved: bool,
}

/// The cell of the store that holds what local `var` of `func`, whose
/// address is taken, is assigned by name: read only through its address
/// ([`Walker::assigned_through`]), not where the local is read by name.
pub(super) fn assigned_key(func: &Name, var: &Name) -> LocKey {
    LocKey::new(Base::Local {
        func: func.clone(),
        var: Name::from(format!("{var}#assigned")),
    })
}

/// The arguments each call passed to a function, by (caller, call id):
/// the bindings of the function's per-call passes.
pub(super) type CallArgs = FxHashMap<(FunctionId, u32), Vec<Vals>>;

/// A function that stores one parameter into another's object gets one
/// store pass per call, when at most this many calls pass it pointers.
const MAX_CALL_PASSES: usize = 16;

/// At most this many rounds of the store's fixpoint per mode (strict, then
/// with the type fallback); arguments pass to parameters in all but the
/// last. A function's pass sees what the passes before it in the same round
/// passed to its parameters, so a chain of calls settles in few rounds (the
/// 61 programs and both projects settle in at most 10 and 8 rounds); the
/// cap only bounds a chain longer than that.
const STORE_ROUNDS: usize = 30;

impl<'a> Walker<'a> {
    /// Fills the store of pointer cells outside frames (globals, fields).
    pub(super) fn build_store(&mut self) {
        self.d.joined_returns.borrow_mut().clear();
        *self.d.stored_locals.borrow_mut() = None;
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
                (0, _, Some(n)) => self.prog.structs.get(n),
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
            // A function named in a struct's initializer goes to the member
            // it initializes (`{"port", &config.port, &config_emit_int}` puts
            // `config_emit_int` in `config_elements.emit`), when that member
            // holds a pointer.
            let (Some(fields), Some(inits)) = (fields, self.prog.global_init_fields.get(g)) else {
                continue;
            };
            for x in inits {
                if !self.prog.is_function(&x.name) || self.prog.global(&x.name).is_some() {
                    continue;
                }
                let field = match &x.field {
                    Some(f) => Some(f),
                    None if x.count as usize <= fields.len() => {
                        fields.get(x.pos as usize).map(|(f, _)| f)
                    }
                    None => None,
                };
                let Some((f, ft)) = field.and_then(|f| fields.iter().find(|(n, _)| n == f)) else {
                    continue;
                };
                let ft = self.prog.resolve_type(ft);
                if !(ft.is_function || ft.pointer > 0) || ft.array {
                    continue;
                }
                let k = LocKey::new(Base::Global(g.clone())).with(Elem::Field(f.clone()));
                add_vals(
                    self.d.store.entry(k).or_default(),
                    [Val::Func(x.name.clone())],
                );
            }
        }
        let funcs: Vec<FunctionId> = self.prog.functions.values().flatten().copied().collect();
        self.d.store_passes.clear();
        // Parameters hold what any call passes them (context-insensitively,
        // from the passes before, in this round or earlier ones):
        // `insert(p, &A)` stores `p` into `A`.
        let mut params: FxHashMap<FunctionId, Vec<Vals>> = FxHashMap::default();
        // The functions calls pass to parameters, only to name the entry of
        // a thread a wrapper creates (`spawn(worker, arg)` around
        // `pthread_create(&t, 0, fn, arg)`): other function pointers passed
        // down are resolved in the walk, by calling context.
        let mut fn_params: FxHashMap<FunctionId, Vec<Vals>> = FxHashMap::default();
        // The same by call: a function that stores one parameter into
        // another's object passes once per call (`init(&a, &x); init(&b,
        // &y)` stores `x` into `a` and `y` into `b`, not both into both).
        let mut call_args: FxHashMap<FunctionId, CallArgs> = FxHashMap::default();
        // A function's pass is a function of its parameters and of the cells
        // it reads (return values and frames of callees are computed once):
        // one whose parameters and cells are as at its last pass would make
        // the same updates and pass the same arguments, which are already in
        // (adding values is idempotent), so it is skipped. `clock` orders
        // passes and cell changes.
        let mut clock: u64 = 0;
        let mut changed_at: FxHashMap<LocKey, u64> = FxHashMap::default();
        #[allow(clippy::type_complexity)]
        let mut last_pass: FxHashMap<FunctionId, (u64, Vec<LocKey>, Vec<Vals>, CallArgs)> =
            FxHashMap::default();
        // The first (strict) rounds store nothing through an unresolved
        // pointer: a cell read before it is written (`e->tbl = malloc(..);
        // e->tbl->tail = &e->h;` in one pass, or a store of a later
        // function) would otherwise put its type (`(struct T).tail`) into
        // the store for good, merging every object of the type. Then rounds
        // with the type fallback run to a fixpoint from there.
        let mut unresolved: FxHashSet<FunctionId> = FxHashSet::default();
        // `q = realloc(p, n)`, `q = xmalloc_and_fill(..)`: the new object
        // holds what the old one held. (function, old site, new site),
        // gathered as functions pass.
        let mut copies: FxHashSet<(FunctionId, Base, Base)> = FxHashSet::default();
        for strict in [true, false] {
            self.d.store_strict.set(strict);
            if !strict {
                // Functions that met an unresolved pointer pass again, now
                // with the fallback; frames and return values read during the
                // strict rounds knew no types.
                self.d.frames.borrow_mut().clear();
                self.d.returns.borrow_mut().clear();
                for f in &unresolved {
                    last_pass.remove(f);
                }
            }
            for round in 0..STORE_ROUNDS {
                // A round is a function of the store and parameters it starts
                // from: after one that changed neither, the next would repeat it.
                let mut changed = false;
                for &f in &funcs {
                    let own: Vec<Vals> = params.get(&f).cloned().unwrap_or_default();
                    let own = &own[..];
                    let by_call = call_args.get(&f).cloned().unwrap_or_default();
                    if let Some((at, reads, was, was_calls)) = last_pass.get(&f) {
                        if was[..] == *own
                            && *was_calls == by_call
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
                    let fn_own = fn_params.get(&f).cloned().unwrap_or_default();
                    let pass = self.store_pass(
                        f,
                        own,
                        &by_call,
                        &fn_own,
                        strict,
                        round + 1 < STORE_ROUNDS,
                    );
                    if strict {
                        match pass.unresolved {
                            true => unresolved.insert(f),
                            false => unresolved.remove(&f),
                        };
                    }
                    let reads = self.d.store_reads.borrow_mut().take().unwrap_or_default();
                    last_pass.insert(f, (at, reads.into_iter().collect(), own.to_vec(), by_call));
                    for (o, n) in &pass.copies {
                        copies.insert((f, o.clone(), n.clone()));
                    }
                    let updates = pass.updates.clone();
                    let (passed, passed_fns) = (pass.passed.clone(), pass.passed_fns.clone());
                    for (g, v) in &pass.calls {
                        let into = call_args.entry(*g).or_default();
                        for (id, args) in v {
                            let one = into.entry((f, *id)).or_default();
                            for (i, a) in args.iter().enumerate() {
                                changed |= add_param(one, i, a.iter().cloned());
                            }
                        }
                    }
                    self.d.store_passes.insert(f, pass);
                    for (k, v) in updates {
                        changed |= self.store_add(f, k, v, &mut clock, &mut changed_at);
                    }
                    // What it passed is seen by the functions that pass
                    // later in this round.
                    for (g, v) in passed_fns {
                        let into = fn_params.entry(g).or_default();
                        for (i, names) in v.into_iter().enumerate() {
                            if add_param(into, i, names) {
                                changed = true;
                                // Its creations may name new entries.
                                last_pass.remove(&g);
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
                }
                for (f, k, v) in self.copied_cells(&copies) {
                    changed |= self.store_add(f, k, v, &mut clock, &mut changed_at);
                }
                if !changed {
                    if std::env::var_os("RACELENS_TIMING").is_some() {
                        eprintln!("racelens: walk: pointer store stable after round {round}");
                    }
                    break;
                }
            }
        }
        self.d.store_params = params;
        self.d.store_fn_params = fn_params;
        self.d.store_call_args = call_args;
    }

    /// One pass of function `f` over the store: what it stores, passes to
    /// parameters and copies, given its parameters `own` (data pointers,
    /// all calls' together), `by_call` (the same, by call) and `fn_own`
    /// (functions). Passes nothing to parameters unless `pass_args`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn store_pass(
        &mut self,
        f: FunctionId,
        own: &[Vals],
        by_call: &CallArgs,
        fn_own: &[Vals],
        strict: bool,
        pass_args: bool,
    ) -> StorePass {
        self.d.store_strict.set(strict);
        let mut passed: FxHashMap<FunctionId, Vec<Vals>> = FxHashMap::default();
        let mut passed_fns: FxHashMap<FunctionId, Vec<Vals>> = FxHashMap::default();
        let mut calls: FxHashMap<FunctionId, Vec<(u32, Vec<Vals>)>> = FxHashMap::default();
        let frame = self.frame(f, own);
        if pass_args {
            visit_calls(&frame.summary.ir.body, &mut |c| {
                // A thread's entry function receives the
                // argument of its creation as its parameter
                // (`c->srv = arg` in the thread stores what
                // the creator handed it).
                if let Some(&CallModel::Create { func, arg, .. }) = frame.summary.models.get(&c.id)
                {
                    let (Some(fe), Some(ae)) = (c.args.get(func), c.args.get(arg)) else {
                        return;
                    };
                    let mut v = self.eval(&frame, ae, 0);
                    v.retain(|x| matches!(x, Val::Target(_)));
                    if v.is_empty() {
                        return;
                    }
                    let mut entries = self.functions_of(&frame, &Callee::Indirect(fe.clone()));
                    if let Some(i) = param_index(&frame, fe) {
                        let names: Vec<Name> = fn_own
                            .get(i)
                            .into_iter()
                            .flatten()
                            .filter_map(|x| match x {
                                Val::Func(n) => Some(n.clone()),
                                _ => None,
                            })
                            .collect();
                        for g in self.definitions(&frame, &names) {
                            if !entries.contains(&g) {
                                entries.push(g);
                            }
                        }
                    }
                    for g in entries {
                        add_param(passed.entry(g).or_default(), 0, v.iter().cloned());
                        calls.entry(g).or_default().push((c.id, vec![v.clone()]));
                    }
                    return;
                }
                let Callee::Direct(n) = &c.callee else { return };
                if c.args.is_empty() || frame.locals.contains_key(n) {
                    return;
                }
                for &g in self.prog.functions_named(n).into_iter().flatten() {
                    let mut args: Vec<Vals> = Vec::new();
                    for (i, a) in c.args.iter().enumerate() {
                        // A function named, or one this function's
                        // parameter received (for creations).
                        let fns: Vals = match function_name(a) {
                            Some(x)
                                if self.prog.is_function(&x) && !frame.locals.contains_key(&x) =>
                            {
                                vec![Val::Func(x)]
                            }
                            _ => param_index(&frame, a)
                                .and_then(|j| fn_own.get(j).cloned())
                                .unwrap_or_default(),
                        };
                        if !fns.is_empty() {
                            add_param(passed_fns.entry(g).or_default(), i, fns);
                        }
                        // Data pointers only: function pointers
                        // passed down are resolved in the walk, by
                        // calling context.
                        let mut v = self.eval(&frame, a, 0);
                        v.retain(|x| matches!(x, Val::Target(_)));
                        if !v.is_empty() {
                            add_param(&mut args, i, v.iter().cloned());
                            add_param(passed.entry(g).or_default(), i, v);
                        }
                    }
                    if !args.is_empty() {
                        calls.entry(g).or_default().push((c.id, args));
                    }
                }
            });
        }
        let copies = self.copies_of(&frame);
        let mut updates = Vec::new();
        self.d.store_unresolved.set(false);
        // A parameter whose object the function links into itself
        // (`p->label[n] = p->domain`): one pass per object it may be, so
        // that each object's cells get its own addresses, not every
        // caller's (a helper called on a local and on a global would
        // otherwise store the local's address into the global).
        // A function that stores one parameter into another's object
        // (`t->base = base`): one pass per call, each with that call's
        // arguments only, so that what one caller hands is stored into
        // that caller's object alone.
        let per_call =
            by_call.len() > 1 && by_call.len() <= MAX_CALL_PASSES && cross_store_params(&frame);
        let frames: Vec<Frame> = if per_call {
            by_call.values().map(|a| self.frame(f, a)).collect()
        } else {
            match self_store_param(&frame, own) {
                Some(i) => own[i]
                    .iter()
                    .filter(|v| matches!(v, Val::Target(_)))
                    .map(|v| {
                        let mut one = own.to_vec();
                        one[i] = vec![v.clone()];
                        self.frame(f, &one)
                    })
                    .collect(),
                None => vec![frame],
            }
        };
        for frame in &frames {
            let mut cur = Vec::new();
            self.store_updates(
                frame,
                &frame.summary.ir.body,
                !frame.base.has_goto,
                &mut cur,
                &mut updates,
            );
            *self.d.cur_ptrs.borrow_mut() = Ptrs::default();
        }
        StorePass {
            strict,
            pass_args,
            updates,
            passed,
            passed_fns,
            calls,
            copies,
            unresolved: self.d.store_unresolved.get(),
        }
    }

    /// After an edit of `f` only: does `f`'s pass over the built store, with
    /// the parameters it was built with, give what its last pass gave? Then
    /// the store is a fixpoint for the new text too, and is kept. (It is
    /// the one a build from scratch finds unless the old text's stores fed
    /// themselves; a build from scratch is not quite order-free either, as
    /// unresolved pointers fall back to types.)
    pub(super) fn same_store_pass(&mut self, f: FunctionId) -> bool {
        let Some(last) = self.d.store_passes.get(&f).cloned() else {
            return false;
        };
        let own = self.d.store_params.get(&f).cloned().unwrap_or_default();
        let fn_own = self.d.store_fn_params.get(&f).cloned().unwrap_or_default();
        let by_call = self.d.store_call_args.get(&f).cloned().unwrap_or_default();
        let pass = self.store_pass(f, &own, &by_call, &fn_own, last.strict, last.pass_args);
        self.d.store_strict.set(false);
        pass == last
    }

    /// Adds `v` to the store's cell `k`, as stored by function `f`. Did the
    /// cell change (then noted at a new `clock` tick)?
    fn store_add(
        &mut self,
        f: FunctionId,
        k: LocKey,
        v: Vals,
        clock: &mut u64,
        changed_at: &mut FxHashMap<LocKey, u64>,
    ) -> bool {
        let from = self.d.store_from.entry(f).or_default();
        add_vals(from.entry(k.clone()).or_default(), v.iter().cloned());
        if !add_vals(self.d.store.entry(k.clone()).or_default(), v) {
            return false;
        }
        *clock += 1;
        changed_at.insert(k, *clock);
        true
    }

    /// The calls of `f`'s frame whose new object holds what other objects
    /// held: `realloc` (the heap sites its first argument may point to),
    /// and allocation wrappers (the sites the wrapper returns, whose cells
    /// the wrapper filled), each with the call's own site.
    fn copies_of(&self, fr: &Frame) -> Vec<(Base, Base)> {
        let mut out = Vec::new();
        visit_calls(&fr.summary.ir.body, &mut |c| {
            let new = Base::Heap {
                func: fr.fname.clone(),
                call: c.id,
            };
            for old in self.copied_into(fr, c) {
                if old != new {
                    out.push((old, new.clone()));
                }
            }
        });
        out
    }

    /// The heap sites whose contents call `c` copies into its new object
    /// (see [`copies_of`](Self::copies_of)).
    pub(super) fn copied_into(&self, fr: &Frame, c: &Call) -> Vec<Base> {
        let vals = match fr.summary.models.get(&c.id) {
            Some(CallModel::Realloc) if self.reallocates_param(fr.fid, c) => return Vec::new(),
            Some(CallModel::Realloc) => c
                .args
                .first()
                .map(|a| self.eval(fr, a, 0))
                .unwrap_or_default(),
            Some(_) => return Vec::new(),
            None => {
                let mut v = Vals::new();
                for g in self.functions_of(fr, &c.callee) {
                    if !self.is_alloc_wrapper(g) {
                        continue;
                    }
                    // The wrapper's own sites (this call's, once renamed),
                    // with what it filled them with; not what it returns of
                    // its callers' (their arguments, a recycled block).
                    let name = g.name(self.db);
                    let own = |x: &Val| matches!(x, Val::Target(k) if matches!(&k.base, Base::Heap { func, .. } if func == name));
                    add_vals(&mut v, self.return_vals(g).into_iter().filter(own));
                    // This call's arguments it gives back or reallocates.
                    for &i in self.passed_on_params(g, 0).iter() {
                        if let Some(a) = c.args.get(i) {
                            add_vals(&mut v, self.eval(fr, a, 0));
                        }
                    }
                }
                v
            }
        };
        let mut out: Vec<Base> = vals
            .into_iter()
            .filter_map(|v| match v {
                Val::Target(k) if matches!(k.base, Base::Heap { .. }) => Some(k.base),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The cells `realloc` and allocation wrappers copy: each cell of an
    /// old site, under the new site, with the function that made the copy.
    fn copied_cells(
        &self,
        copies: &FxHashSet<(FunctionId, Base, Base)>,
    ) -> Vec<(FunctionId, LocKey, Vals)> {
        if copies.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (k, v) in &self.d.store {
            for (f, old, new) in copies {
                if k.base == *old {
                    let mut to = k.clone();
                    to.base = new.clone();
                    out.push((*f, to, v.clone()));
                }
            }
        }
        out
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
        for (i, s) in stmts.iter().enumerate() {
            match s {
                Stmt::Assign { lhs, rhs } => {
                    self.sync_cur_ptrs(cur);
                    let n = updates.len();
                    self.struct_copy(fr, lhs, rhs, updates);
                    if updates.len() > n {
                        self.drop_overwritten(fr, lhs, &stmts[..i], &stmts[i + 1..], n, updates);
                    }
                    if let Expr::Init(elems) = rhs {
                        if let Some(t) = self.struct_type(fr, lhs) {
                            let dsts = self.cells(fr, lhs);
                            self.struct_init(fr, &dsts, &t, elems, 0, updates);
                        } else {
                            self.array_init(fr, lhs, elems, updates);
                        }
                    }
                    if let Expr::Var(x) = lhs {
                        if fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false) {
                            // A local whose address is taken too, until
                            // code that may write through that address runs
                            // (`first = decode(..); pwsc->uri = first;`
                            // between `strsep(&first, ..)` calls).
                            if strong && (tracks_ptr(fr, x) || fr.address_taken.contains(x)) {
                                set_ptr(cur, x, self.eval(fr, rhs, 0));
                            }
                            // What a local whose address is taken is given
                            // by name is read through that address too
                            // (`p = auth; next(&p)` reading `**pp`), but not
                            // by name: there the flow-sensitive value holds
                            // (see `assigned_through`).
                            if fr.address_taken.contains(x)
                                && fr.locals.get(x).is_some_and(|t| !t.array)
                            {
                                let v = self.eval(fr, rhs, 0);
                                if !v.is_empty() {
                                    updates.push((assigned_key(&fr.fname, x), v));
                                }
                            }
                            continue;
                        }
                    }
                    let v = self.eval(fr, rhs, 0);
                    if !v.is_empty() && !self.narrow_integer(fr, lhs) {
                        for k in self.cells(fr, lhs) {
                            updates.push((k, v.clone()));
                        }
                    }
                    // A store through a pointer may write a local whose
                    // address is taken (not one only lent to library calls).
                    cur.retain(|(x, _)| !fr.address_taken.contains(x) || fr.lent.contains(x));
                }
                // So may a call, or a library call it is lent to.
                Stmt::Call(c) => {
                    self.struct_args(fr, c, updates);
                    self.join_result(fr, c, updates);
                    if let Some(CallModel::Mem {
                        write: Some(w),
                        read: Some(r),
                    }) = fr.summary.models.get(&c.id)
                    {
                        if let (Some(d), Some(s)) = (c.args.get(*w), c.args.get(*r)) {
                            self.sync_cur_ptrs(cur);
                            let n = updates.len();
                            self.mem_copy(fr, d, s, updates);
                            if updates.len() > n {
                                let into = Expr::Deref(Box::new(uncast(d).clone()));
                                let (before, rest) = (&stmts[..i], &stmts[i + 1..]);
                                self.drop_overwritten(fr, &into, before, rest, n, updates);
                            }
                        }
                    }
                    // `strtol(s, &end, 10)`: `end` points into `s`.
                    if let Callee::Direct(n) = &c.callee {
                        if let Some((o, Some(i))) = super::library::derived_out(n) {
                            if let (Some(out), Some(src)) = (c.args.get(o), c.args.get(i)) {
                                if self.prog.functions_named(n).is_none() {
                                    self.sync_cur_ptrs(cur);
                                    // Somewhere in what `src` points to.
                                    let src = Expr::Offset(Box::new(src.clone()));
                                    let v = self.eval(fr, &src, 0);
                                    if !v.is_empty() {
                                        let dst = Expr::Deref(Box::new(uncast(out).clone()));
                                        for k in self.cells(fr, &dst) {
                                            updates.push((k, v.clone()));
                                        }
                                    }
                                }
                            }
                        }
                    }
                    // An atomic store puts its value where a plain store
                    // would (`__atomic_store_n(&head, n, ..)`).
                    if matches!(fr.summary.models.get(&c.id), Some(CallModel::Atomic)) {
                        if let (Some(v), Some(p)) =
                            (super::calls::atomic_stored_value(c), c.args.first())
                        {
                            self.sync_cur_ptrs(cur);
                            let v = self.eval(fr, &v, 0);
                            if !v.is_empty() {
                                for k in self.cells(fr, &Expr::Deref(Box::new(p.clone()))) {
                                    updates.push((k, v.clone()));
                                }
                            }
                        }
                    }
                    cur.retain(|(x, _)| {
                        !fr.address_taken.contains(x)
                            || (fr.lent.contains(x)
                                && !c.args.iter().any(|a| super::frames::lent_to(a) == Some(x)))
                    })
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
                        cur.retain(|(x, _)| !inner.contains(x) && !fr.address_taken.contains(x));
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

    /// Let `eval` see the local pointers `store_updates` follows on this
    /// path (`cur`), before it evaluates an expression there.
    fn sync_cur_ptrs(&self, cur: &[(Name, Vals)]) {
        if **self.d.cur_ptrs.borrow() != *cur {
            *self.d.cur_ptrs.borrow_mut() = Arc::new(cur.to_vec());
        }
    }

    /// Is `lhs` an integer narrower than a pointer (`char`, `short`, `int`,
    /// `uint8_t`, .. on an LP64 target)? Such a cell holds no address: what
    /// `(uint8_t) (dst - n->label[i])` stores is a count, not the pointer
    /// `dst` that the lowering's `Offset` names.
    pub(super) fn narrow_integer(&self, fr: &Frame, lhs: &Expr) -> bool {
        let Some(t) = self.resolved_type(fr, lhs, 0) else {
            return false;
        };
        t.pointer == 0
            && !t.array
            && !t.is_function
            && t.name.as_deref().is_some_and(narrow_integer_name)
    }

    /// The type of an lvalue with every typedef on the way resolved (a
    /// local `name_t n` of a typedef'd struct: `n.len`'s member type).
    pub(super) fn resolved_type(&self, fr: &Frame, e: &Expr, depth: u32) -> Option<TypeInfo> {
        if depth > 16 {
            return None;
        }
        let t = match e {
            Expr::Field { base, field, arrow } => {
                let bt = self.resolved_type(fr, base, depth + 1)?;
                if *arrow && bt.pointer == 0 && !bt.array {
                    return None;
                }
                self.prog.field_type(bt.name.as_deref()?, field)?.clone()
            }
            Expr::Index { base, .. } | Expr::Deref(base) => {
                let mut t = self.resolved_type(fr, base, depth + 1)?;
                t.index_once();
                t
            }
            _ => self.type_of(fr, e, depth)?,
        };
        Some(self.prog.resolve_type(&t))
    }

    /// `pthread_join(t, &r)` puts in `r` what the joined thread's entry
    /// returned: the entries of this function's creations whose thread id
    /// goes where `t` is (`pthread_create(&t, .., f, ..)`), their results
    /// without calling context ([`Walker::thread_results`]).
    fn join_result(&self, fr: &Frame, c: &Call, updates: &mut Vec<(LocKey, Vals)>) {
        let Some(&CallModel::Join { tid, all: false }) = fr.summary.models.get(&c.id) else {
            return;
        };
        let (Some(t), Some(out)) = (c.args.get(tid), c.args.get(1)) else {
            return;
        };
        // Most joins hand no result cell (`pthread_join(t, NULL)`).
        let into = self.cells(fr, &Expr::Deref(Box::new(out.clone())));
        let joined = self.cells(fr, t);
        if into.is_empty() || joined.is_empty() {
            return;
        }
        let mut vals = Vals::new();
        visit_calls(&fr.summary.ir.body, &mut |k| {
            let Some(&CallModel::Create { tid, func, .. }) = fr.summary.models.get(&k.id) else {
                return;
            };
            let (Some(te), Some(fe)) = (k.args.get(tid), k.args.get(func)) else {
                return;
            };
            let ids = self.cells(fr, &Expr::Deref(Box::new(te.clone())));
            if !ids.iter().any(|x| joined.contains(x)) {
                return;
            }
            for g in self.functions_of(fr, &Callee::Indirect(fe.clone())) {
                let v = self.thread_results(g);
                self.d.joined_returns.borrow_mut().insert(g, v.clone());
                add_vals(&mut vals, v);
            }
        });
        vals.retain(|v| matches!(v, Val::Target(_)));
        if vals.is_empty() {
            return;
        }
        for k in into {
            updates.push((k, vals.clone()));
        }
    }

    /// What thread entry `f` hands its joiner, without calling context:
    /// its return values and the values of its own `pthread_exit` calls
    /// (`return &g;`, `pthread_exit(&g)`; not what a parameter holds).
    pub(super) fn thread_results(&self, f: FunctionId) -> Vals {
        let mut out = self.return_vals(f);
        let frame = self.frame_cached(f, &[]);
        self.without_cur_ptrs(|| {
            visit_calls(&frame.summary.ir.body, &mut |c| {
                if matches!(&c.callee, Callee::Direct(n) if &**n == "pthread_exit") {
                    if let Some(a) = c.args.first() {
                        add_vals(&mut out, self.eval(&frame, a, 0));
                    }
                }
            })
        });
        out
    }

    /// The store cells an lvalue may denote (its places, indices dropped).
    pub(super) fn cells(&self, fr: &Frame, e: &Expr) -> Vec<LocKey> {
        self.place(fr, e, 0)
            .into_iter()
            .map(|k| k.without_indices())
            .collect()
    }

    /// May a call of `f` allocate from heap site `b`: is `b`'s function `f`
    /// or one `f` may call, directly or through calls it cannot resolve by
    /// name? (Cached; a question about the program's call graph only.)
    pub(super) fn may_allocate(&self, f: FunctionId, b: &Base) -> bool {
        let Base::Heap { func, .. } = b else {
            return false;
        };
        let key = (f, func.clone());
        if let Some(&v) = self.d.may_allocate.borrow().get(&key) {
            return v;
        }
        let mut seen: FxHashSet<FunctionId> = FxHashSet::default();
        let mut todo = vec![f];
        let mut found = false;
        while let Some(g) = todo.pop() {
            if found || !seen.insert(g) {
                continue;
            }
            if **g.name(self.db) == **func {
                found = true;
                break;
            }
            let edges = self.call_edges(g);
            todo.extend(edges.0.iter().copied());
            // Through a pointer: any function used as a value.
            if edges.1 {
                todo.extend(self.value_functions().iter().copied());
            }
        }
        self.d.may_allocate.borrow_mut().insert(key, found);
        found
    }

    /// The functions `f`'s direct calls name, its modelled calls left out,
    /// and whether it calls through a pointer (see `WalkData::call_edges`).
    fn call_edges(&self, f: FunctionId) -> Arc<(Vec<FunctionId>, bool)> {
        if let Some(e) = self.d.call_edges.borrow().get(&f) {
            return e.clone();
        }
        let s = self.summary(f);
        let mut direct: Vec<FunctionId> = Vec::new();
        let mut indirect = false;
        visit_calls(&s.ir.body, &mut |c| match &c.callee {
            Callee::Direct(n) => {
                if s.models.contains_key(&c.id) {
                    return;
                }
                if let Some(defs) = self.prog.functions_named(n) {
                    direct.extend(defs.iter().copied());
                }
            }
            _ => indirect = true,
        });
        direct.sort_unstable_by_key(|g| g.key());
        direct.dedup();
        let e = Arc::new((direct, indirect));
        self.d.call_edges.borrow_mut().insert(f, e.clone());
        e
    }

    /// The functions the program uses as values (see
    /// `WalkData::value_functions`).
    pub(super) fn value_functions(&self) -> Arc<Vec<FunctionId>> {
        if let Some(v) = self.d.value_functions.borrow().clone() {
            return v;
        }
        let mut names: Vec<Name> = self.prog.global_inits.values().flatten().cloned().collect();
        for f in self.prog.functions.values().flatten() {
            names.extend(value_names(&self.summary(*f)));
        }
        names.sort();
        names.dedup();
        let v: Vec<FunctionId> = names
            .iter()
            .filter_map(|n| self.prog.functions_named(n))
            .flatten()
            .copied()
            .collect();
        let v = Arc::new(v);
        *self.d.value_functions.borrow_mut() = Some(v.clone());
        v
    }

    /// What local `k` (a pointer cell of a frame, read through its
    /// address) was assigned by name, beside what stores through its
    /// address put there (see [`assigned_key`]).
    pub(super) fn assigned_through(&self, k: &LocKey) -> Option<&Vals> {
        match &k.base {
            Base::Local { func, var } if k.path.is_empty() => {
                self.store_get(&assigned_key(func, var))
            }
            _ => None,
        }
    }

    /// The pointer store's cell `k`, noted as read while the store is built.
    pub(super) fn store_get(&self, k: &LocKey) -> Option<&Vals> {
        if let Some(reads) = self.d.store_reads.borrow_mut().as_mut() {
            reads.insert(k.clone());
        }
        self.d.store.get(k)
    }

    /// What a function may return, evaluated without calling context.
    pub(super) fn return_vals(&self, f: FunctionId) -> Vals {
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
}

/// The names function `s` uses as values: assigned, passed, returned (a
/// superset of the functions among them; callees of direct calls are not).
pub(super) fn value_names(s: &FunctionSummary) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    let mut see = |e: &Expr| crate::visit::visit_names(e, &mut |n| out.push(n.clone()));
    visit_stmts(&s.ir.body, &mut |st| match st {
        Stmt::Assign { rhs, .. } => see(rhs),
        Stmt::Call(c) => c.args.iter().for_each(&mut see),
        Stmt::Return { value: Some(v), .. } => see(v),
        _ => {}
    });
    out.sort();
    out.dedup();
    out
}

/// The index of the parameter `e` names (up to casts, `*` and `&` of a
/// function pointer), if it names one of `fr`'s parameters.
fn param_index(fr: &Frame, e: &Expr) -> Option<usize> {
    let mut e = uncast(e);
    while let Expr::Deref(x) | Expr::AddrOf(x) = e {
        e = uncast(x);
    }
    let Expr::Var(x) = e else { return None };
    fr.summary.ir.params.iter().position(|p| p.name == *x)
}

/// Adds `v` to what parameter `i` holds in `into` (growing the list). Did
/// it change?
fn add_param(into: &mut Vec<Vals>, i: usize, v: impl IntoIterator<Item = Val>) -> bool {
    if into.len() <= i {
        into.resize(i + 1, Vals::new());
    }
    add_vals(&mut into[i], v)
}

/// Does the function store a pointer reached from one parameter into the
/// object of another (`t->base = base`, `c->owner = &o->head`), directly
/// or through a local assigned from a parameter?
fn cross_store_params(fr: &Frame) -> bool {
    let params = &fr.summary.ir.params;
    let from = param_locals(fr);
    // The parameters a name stands for: itself, or those its local was
    // assigned from.
    let params_of = |n: &Name| -> Vec<Name> {
        match params.iter().any(|p| &p.name == n) {
            true => vec![n.clone()],
            false => from
                .iter()
                .filter(|(x, _)| x == n)
                .map(|(_, q)| q.clone())
                .collect(),
        }
    };
    let mut found = false;
    visit_stmts(&fr.summary.ir.body, &mut |s| {
        let Stmt::Assign { lhs, rhs } = s else { return };
        if found || matches!(lhs, Expr::Var(_)) {
            return;
        }
        let (Some(l), Some(r)) = (root_var(lhs), root_var(rhs)) else {
            return;
        };
        let (ps, qs) = (params_of(l), params_of(r));
        found = ps.iter().any(|p| qs.iter().any(|q| p != q));
    });
    found
}

/// The locals assigned from an expression rooted at a parameter, with that
/// parameter (`dst = p->domain`: `(dst, p)`).
fn param_locals(fr: &Frame) -> Vec<(Name, Name)> {
    let params = &fr.summary.ir.params;
    let mut from: Vec<(Name, Name)> = Vec::new();
    visit_stmts(&fr.summary.ir.body, &mut |s| {
        if let Stmt::Assign {
            lhs: Expr::Var(x),
            rhs,
        } = s
        {
            if let Some(r) = root_var(rhs) {
                if fr.locals.contains_key(x) && params.iter().any(|p| &p.name == r) {
                    from.push((x.clone(), r.clone()));
                }
            }
        }
    });
    from
}

/// At most this many objects of a parameter get a store pass each.
const MAX_SELF_STORE_OBJECTS: usize = 8;

/// The parameter (its index) that a function stores pointers into its own
/// object with: an assignment whose target is reached from the parameter
/// `p` and whose value is too, directly (`p->cur = p->buf`) or through a
/// local assigned from it (`dst = p->domain; .. p->label[n] = dst`), when
/// the store gives `p` two to [`MAX_SELF_STORE_OBJECTS`] objects.
fn self_store_param(fr: &Frame, own: &[Vals]) -> Option<usize> {
    let params = &fr.summary.ir.params;
    let targets = |i: usize| {
        own.get(i)
            .map(|v| v.iter().filter(|x| matches!(x, Val::Target(_))).count())
            .unwrap_or(0)
    };
    let candidates: Vec<usize> = (0..params.len())
        .filter(|&i| (2..=MAX_SELF_STORE_OBJECTS).contains(&targets(i)))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    // Locals assigned from an expression rooted at each parameter.
    let from = param_locals(fr);
    let mut found = None;
    visit_stmts(&fr.summary.ir.body, &mut |s| {
        let Stmt::Assign { lhs, rhs } = s else { return };
        if found.is_some() || matches!(lhs, Expr::Var(_)) {
            return;
        }
        let Some(p) = root_var(lhs) else { return };
        let i = match candidates.iter().find(|&&i| &params[i].name == p) {
            Some(&i) => i,
            None => return,
        };
        let same = match root_var(rhs) {
            Some(r) if r == p => true,
            Some(r) => from.iter().any(|(x, q)| x == r && q == p),
            None => false,
        };
        if same {
            found = Some(i);
        }
    });
    found
}

/// Does a (resolved) base type name spell an integer narrower than a
/// pointer on an LP64 target: `char`, `short`, `int` in any signedness
/// (`unsigned char`, `short int`, plain `unsigned`), `_Bool`, or a
/// fixed-width type of 32 bits or fewer? `long`, `size_t` (resolved to
/// `unsigned long`), `intptr_t` and the like can hold an address.
fn narrow_integer_name(n: &str) -> bool {
    const FIXED: &[&str] = &[
        "_Bool",
        "bool",
        "int8_t",
        "uint8_t",
        "int16_t",
        "uint16_t",
        "int32_t",
        "uint32_t",
        "u_int8_t",
        "u_int16_t",
        "u_int32_t",
    ];
    if FIXED.contains(&n) {
        return true;
    }
    let words: Vec<&str> = n.split_whitespace().collect();
    !words.is_empty()
        && words.iter().all(|w| {
            matches!(
                *w,
                "char" | "short" | "int" | "unsigned" | "signed" | "const" | "volatile"
            )
        })
}
