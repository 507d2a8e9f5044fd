//! Objects of a thread instance's own: which local pointers of a frame
//! hold an object that only this instance got from where it came from
//! (`State::own`), and which accesses go through one
//! ([`AccessFact::own`](crate::facts::AccessFact)).
//!
//! Two ways an object is an instance's own ([`Own`]):
//! - the instance allocated it: the pointer is an allocation's result
//!   (`malloc`, an allocation wrapper), or a local or parameter it was
//!   copied into, through locals, parameters and return values only;
//! - it is the instance's argument, in a thread whose every creation handed
//!   it a fresh object (checked by the race check, `Thread::owns_arg`): the
//!   entry's parameter, and what it is copied into.
//!
//! Two thread instances never allocate one object, and a fresh object is
//! handed to one instance only, so two accesses through own pointers of the
//! same kind, by two instances, touch two objects, however the objects
//! were later published (`races::own_apart`). An access through a pointer
//! loaded from memory (`q = list->head`) is never own: it may reach another
//! instance's object, and it still pairs with everything.
//!
//! A third way, own member cells (`x->f`, see [`Walker::note_own_cell`]):
//! the instance stored an allocation of its own into `x->f` through the
//! local pointer `x`, unchanged since, and reads it back holding no lock.
//!
//! Invariants: entries name this frame's non-static locals whose address is
//! not taken (`tracks_ptr`), own member cells `x->f` of such locals
//! (dropped when `x` is assigned), and the names `#ret` (what the function
//! returns) and `#res{id}` (what call `id` returned, until the next
//! assignment reads it). A call gives its callee the entries of the
//! parameters it passes own pointers to, and the cells of the locals it
//! passes ([`Walker::own_params`]), and, once
//! it returns, the caller's entries back with `#res{id}` for an own result
//! (`calls.rs`); callbacks and `pthread_once` functions start with none, a
//! thread's entry with its parameter (`walk_all`). Paths that meet
//! keep the entries they agree on. The state is part of the memo key.
//!
//! Joins through an own argument's member: `State::joined_own` names the
//! locals `x` unchanged since `pthread_join(x->f)` (frame-local like
//! `own`), and [`Walker::joinable_sites`] keeps `Site::tid_in_arg` only
//! where `f` can hold no other id than its creation's (`races::joined_apart`).

use super::eval::is_alloca;
use super::frames::{returned_by, tracks_ptr, Frame, RETURNED};
use super::state::State;
use super::{uncast, Val, Vals, Walker, MAX_TRACKED};
use crate::config::CallModel;
use crate::db::FunctionId;
use crate::facts::{HeldChain, Own};
use crate::model::{Base, Elem};
use racelens_syntax::{Call, Expr, Name, Stmt};
use rustc_hash::FxHashSet;
use thin_vec::ThinVec;

fn lookup(st: &State, x: &str) -> Option<Own> {
    st.own
        .iter()
        .find(|(y, _)| &**y == x)
        .map(|(_, k)| k.clone())
}

/// Is `x` a non-static local array of the frame (whose name stands for its
/// address, an [`Own::Frame`] pointer)?
fn frame_array(fr: &Frame, x: &Name) -> bool {
    fr.locals.get(x).is_some_and(|t| t.array && !t.is_static)
}

/// At most this many members in a [`HeldChain`]: a longer chain is not own.
const MAX_CHAIN: usize = 4;

/// What a pointer loaded from member `f` of an object of kind `k` holds
/// (see `held.rs`), if the chain stays short.
/// `sites`: the heap sites the object loaded from may be of (`None`: not
/// known).
fn held_from(k: Own, f: &Name, sites: Option<Vec<Base>>) -> Option<Own> {
    let mut c = match k.clone() {
        // What a frame's local holds is not known to be the instance's.
        Own::Frame => return None,
        Own::Alloc => HeldChain::default(),
        Own::Arg | Own::ArgPart | Own::ArgInner => {
            let mut c = HeldChain {
                arg: true,
                part: k == Own::ArgPart,
                ..HeldChain::default()
            };
            c.from_arg.push(f.clone());
            add_sites(&mut c, sites);
            return Some(Own::Held(c));
        }
        Own::Held(c) => c,
    };
    if chain_len(&c) >= MAX_CHAIN {
        return None;
    }
    if !c.from_alloc.contains(f) {
        c.from_alloc.push(f.clone());
        c.from_alloc.sort();
    }
    add_sites(&mut c, sites);
    Some(Own::Held(c))
}

/// At most this many container sites in a [`HeldChain`]: more are not
/// known.
const MAX_SITES: usize = 8;

fn add_sites(c: &mut HeldChain, sites: Option<Vec<Base>>) {
    let Some(sites) = sites else {
        c.unknown = true;
        c.sites.clear();
        return;
    };
    if c.unknown {
        return;
    }
    for b in sites {
        if let Err(i) = c.sites.binary_search(&b) {
            c.sites.insert(i, b);
        }
    }
    if c.sites.len() > MAX_SITES {
        c.unknown = true;
        c.sites.clear();
    }
}

/// Where two paths (or the alternatives of `c ? a : b`) meet: an object
/// the instance allocated either way is one it allocated; an argument and
/// anything else is neither.
pub(super) fn join_own(a: &Own, b: &Own) -> Option<Own> {
    if a == b {
        return Some(a.clone());
    }
    // The argument's start or a pointer inside one of its members: a step
    // along it may leave the member.
    if matches!(
        (a, b),
        (Own::Arg, Own::ArgInner) | (Own::ArgInner, Own::Arg)
    ) {
        return Some(Own::Arg);
    }
    let chain = |k: &Own| match k {
        Own::Alloc => Some(HeldChain::default()),
        Own::Held(c) => Some(c.clone()),
        Own::Arg | Own::ArgPart | Own::ArgInner | Own::Frame => None,
    };
    let (mut c, d) = (chain(a)?, chain(b)?);
    c.arg |= d.arg;
    c.part |= d.part;
    add_sites(&mut c, (!d.unknown).then(|| d.sites.to_vec()));
    for (into, from) in [
        (&mut c.from_arg, &d.from_arg),
        (&mut c.from_alloc, &d.from_alloc),
        (&mut c.cells, &d.cells),
    ] {
        for n in from {
            if !into.contains(n) {
                into.push(n.clone());
            }
        }
        into.sort();
    }
    (chain_len(&c) <= MAX_CHAIN).then_some(Own::Held(c))
}

/// The members a chain names.
fn chain_len(c: &HeldChain) -> usize {
    c.from_arg.len() + c.from_alloc.len() + c.cells.len()
}

/// The entry name of own member cell `x->f` (see [`Walker::note_own_cell`]).
fn cell_name(x: &str, f: &str) -> Name {
    Name::from(format!("{x}->{f}"))
}

/// The member `f` when entry `y` is one of `x`'s own member cells (`x->f`).
fn cell_member<'a>(y: &'a str, x: &str) -> Option<&'a str> {
    y.strip_prefix(x)?.strip_prefix("->")
}

/// The entry of own member cell `x->f`, if any.
fn lookup_cell(st: &State, x: &str, f: &str) -> Option<Own> {
    st.own
        .iter()
        .find(|(y, _)| cell_member(y, x) == Some(f))
        .map(|(_, k)| k.clone())
}

/// The entries both states agree on, joined (see [`join_own`]).
pub(super) fn common_own(a: &[(Name, Own)], b: &[(Name, Own)]) -> ThinVec<(Name, Own)> {
    if a == b {
        return a.iter().cloned().collect();
    }
    a.iter()
        .filter_map(|(x, k)| {
            let (_, l) = b.iter().find(|(y, _)| y == x)?;
            Some((x.clone(), join_own(k, l)?))
        })
        .collect()
}

/// Are creations `first` and `second` calls of one block, `first` before,
/// both handing the same local variable as their last argument, which no
/// statement between them assigns? Then every run through `second` went
/// through `first` just before, with the same object.
fn same_block_handing(body: &[Stmt], first: u32, second: u32) -> bool {
    let mut found = false;
    crate::visit::visit_blocks(body, &mut |block| {
        let at = |id: u32| {
            block
                .iter()
                .position(|s| matches!(s, Stmt::Call(c) if c.id == id))
        };
        let (Some(i), Some(j)) = (at(first), at(second)) else {
            return;
        };
        if i >= j {
            return;
        }
        let arg = |k: usize| match &block[k] {
            Stmt::Call(c) => c.args.last().map(uncast),
            _ => None,
        };
        let Some(Expr::Var(v)) = arg(i) else {
            return;
        };
        if arg(j) != Some(&Expr::Var(v.clone())) {
            return;
        }
        let mut assigned = false;
        crate::visit::visit_stmts(&block[i + 1..j], &mut |s| {
            assigned |= matches!(s, Stmt::Assign { lhs: Expr::Var(x), .. } if x == v);
        });
        found |= !assigned;
    });
    found
}

/// Is every value a thread is handed a heap object (what its entry can own)?
pub(super) fn heap_args(args: &[Val]) -> bool {
    !args.is_empty()
        && args
            .iter()
            .all(|v| matches!(v, Val::Target(k) if matches!(k.base, Base::Heap { .. })))
}

/// `e`, the state after call `id` returned, for the caller whose state at
/// the call was `caller`: the caller's own pointers, and `#res{id}` when the
/// callee returned one of its own (`#ret`).
pub(super) fn own_after_call(e: &mut State, caller: &State, id: u32) {
    let ret = lookup(e, RETURNED);
    e.restore_own(caller);
    if let Some(k) = ret {
        let mut v = e.own.to_vec();
        v.push((returned_by(id), k));
        v.sort();
        e.own = v.into();
    }
}

/// The state's entries without those `drop` names, with `add` (bounded).
fn replace_own(st: &mut State, drop: impl Fn(&str) -> bool, add: Option<(Name, Own)>) {
    let mut v: Vec<(Name, Own)> = st.own.iter().filter(|(y, _)| !drop(y)).cloned().collect();
    if let Some(e) = add {
        if v.len() < MAX_TRACKED {
            v.push(e);
        }
    }
    v.sort();
    st.own = v.into();
}

/// The members `f` (sorted) when `place` goes through a pointer `x` alone
/// after `pthread_join(x->f)` on this path (`x->f`, and `x->arr[i]` or
/// `*x->arr` of an array member: `record::within_arrays`).
pub(super) fn joined_access(
    place: &Expr,
    st: &State,
    is_array: &dyn Fn(&Expr) -> bool,
) -> Option<std::sync::Arc<[Name]>> {
    if st.joined_own.is_empty() {
        return None;
    }
    let x = super::record::access_root(super::record::within_arrays(place, is_array))?;
    let members: Vec<Name> = st
        .joined_own
        .iter()
        .filter(|(y, _)| y == x)
        .map(|(_, f)| f.clone())
        .collect();
    (!members.is_empty()).then(|| members.into())
}

/// The member that `pthread_create(tid, .., arg)` stores the thread id in
/// when that member belongs to the object it hands over (`&c->th` and
/// `c`, the same local pointer).
pub(super) fn tid_in_arg(tid: &Expr, arg: &Expr) -> Option<Name> {
    let Expr::AddrOf(m) = uncast(tid) else {
        return None;
    };
    let Expr::Field {
        base,
        field,
        arrow: true,
    } = &**m
    else {
        return None;
    };
    match (uncast(base), uncast(arg)) {
        (Expr::Var(p), Expr::Var(q)) if p == q => Some(field.clone()),
        _ => None,
    }
}

impl Walker<'_> {
    /// `pthread_join(x->f, ..)`: from here on this path, what goes through
    /// `x` comes after the end of the thread whose id `x->f` holds.
    pub(super) fn note_joined(&self, fr: &Frame, tid: &Expr, st: &mut State) {
        let Expr::Field {
            base,
            field,
            arrow: true,
        } = uncast(tid)
        else {
            return;
        };
        let Expr::Var(x) = uncast(base) else {
            return;
        };
        if tracks_ptr(fr, x)
            && st.joined_own.len() < MAX_TRACKED
            && !st.joined_own.iter().any(|(y, f)| y == x && f == field)
        {
            let mut v = st.joined_own.to_vec();
            v.push((x.clone(), field.clone()));
            v.sort();
            st.joined_own = v.into();
        }
    }

    /// Does call `id` of `fr` return new memory of its own (an allocation,
    /// or a call of allocation wrappers only)?
    pub(super) fn allocates_at(&self, fr: &Frame, id: u32) -> bool {
        match fr.summary.models.get(&id) {
            Some(CallModel::Alloc) => !is_alloca(fr, id),
            Some(_) => false,
            None => {
                let Some(callee) = fr.calls.get(&id) else {
                    return false;
                };
                let fs = self.functions_of(fr, callee);
                !fs.is_empty() && fs.iter().all(|&f| self.is_alloc_wrapper(f))
            }
        }
    }

    /// Why the pointer value `e` holds an object of the instance's own.
    pub(super) fn own_value(&self, fr: &Frame, e: &Expr, st: &State) -> Option<Own> {
        self.own_value_at(fr, e, st, 0)
    }

    fn own_value_at(&self, fr: &Frame, e: &Expr, st: &State, depth: u32) -> Option<Own> {
        let mut e = uncast(e);
        let mut moved = false;
        while let Expr::Offset(b) = e {
            e = uncast(b);
            moved = true;
        }
        // An array member (`x->buf`, `x->rows[2]`) stands for its address,
        // inside the object `x` points to, and so does a step along it.
        if matches!(e, Expr::Field { .. } | Expr::Index { .. }) && self.is_array(fr, e) {
            return self.own_object(fr, e, st, depth + 1);
        }
        // An own member cell read back holding no lock (see
        // `note_own_cell`).
        if let Expr::Field {
            base,
            field,
            arrow: true,
        } = e
        {
            if let Expr::Var(x) = uncast(base) {
                if let Some(k) =
                    lookup_cell(st, x, field).filter(|_| st.may.0.is_empty() && tracks_ptr(fr, x))
                {
                    return Some(k);
                }
            }
        }
        // A local cell read through its address (`local_cells.rs`).
        if matches!(e, Expr::Deref(_) | Expr::Index { index: Some(0), .. }) && depth < 8 {
            let base = |b: &Expr| self.own_value_at(fr, b, st, depth + 1);
            if let Some(k) = self.own_local_cell(fr, e, &base) {
                return Some(k);
            }
        }
        let k = match e {
            // A local array stands for its address.
            Expr::Var(x) => lookup(st, x)
                .or_else(|| frame_array(fr, x).then_some(Own::Frame))
                .or_else(|| self.own_local_cell(fr, e, &|_| None)),
            // `&x->buf[k]`, `&x->f`: inside the object of `x`.
            Expr::AddrOf(inner) if depth < 8 => self.own_object(fr, inner, st, depth + 1),
            // A library result pointing into what an argument points to
            // (`strchr(copy, c)`) is what that argument is.
            Expr::CallResult(id) if fr.derived_results.contains_key(id) && depth < 8 => {
                self.own_of_all(fr, &fr.derived_results[id], st, depth + 1)
            }
            Expr::CallResult(id) => lookup(st, &returned_by(*id))
                .or_else(|| self.allocates_at(fr, *id).then_some(Own::Alloc)),
            // A pointer loaded from a member of an own object (`held.rs`),
            // or from an element of an array one holds.
            Expr::Field { field, .. } if !st.own.is_empty() && depth < 8 => {
                let k = self.own_object(fr, e, st, depth + 1)?;
                held_from(k, field, self.cell_sites(fr, e))
            }
            Expr::Index { .. } | Expr::Deref(_) if !st.own.is_empty() && depth < 8 => {
                let cell = Self::element_cell(e)?;
                let k = self.own_object(fr, e, st, depth + 1)?;
                held_from(k, &cell, self.cell_sites(fr, e))
            }
            Expr::Choice(alts) if depth < 8 => {
                let alts = alts.iter().filter(|a| !matches!(uncast(a), Expr::Int(0)));
                self.own_of_all(fr, alts, st, depth + 1)
            }
            _ => None,
        };
        match k {
            Some(Own::Arg) if moved => Some(Own::ArgPart),
            k => k,
        }
    }

    /// What values `es` all are (joined, see [`join_own`]): none when one
    /// is not own, or there are none.
    fn own_of_all<'e>(
        &self,
        fr: &Frame,
        es: impl IntoIterator<Item = &'e Expr>,
        st: &State,
        depth: u32,
    ) -> Option<Own> {
        let mut out: Option<Own> = None;
        for e in es {
            let k = self.own_value_at(fr, e, st, depth)?;
            out = Some(match out {
                None => k,
                Some(o) => join_own(&o, &k)?,
            });
        }
        out
    }

    /// Why the object that `place` is a part of (`x->f`, `*x`, `x[i]`,
    /// `x->s.f`, and through pointers loaded from own objects' members,
    /// `x->next->f`, see `held.rs`) is the instance's own, if it is.
    pub(super) fn own_access(&self, fr: &Frame, place: &Expr, st: &State) -> Option<Own> {
        // (A local cell read by name needs no entry: `local_cells.rs`.)
        if st.own.is_empty() && fr.address_taken.is_empty() {
            return None;
        }
        // Inside a member of the argument is inside the argument.
        self.own_object(fr, place, st, 0).map(|k| match k {
            Own::ArgInner => Own::Arg,
            k => k,
        })
    }

    /// [`Own::Frame`] when `place` lies in a local of a frame on the
    /// instance's own stack (by name, or through a pointer from its address
    /// through locals and parameters only).
    pub(super) fn own_frame_access(&self, fr: &Frame, place: &Expr, st: &State) -> Option<Own> {
        self.own_object(fr, place, st, 0)
            .filter(|k| *k == Own::Frame)
    }

    /// The heap sites of the objects place `e` lies in, if all are known.
    pub(super) fn cell_sites(&self, fr: &Frame, e: &Expr) -> Option<Vec<Base>> {
        let places = self.place(fr, e, 0);
        if places.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for k in places {
            match k.base {
                Base::Heap { .. } => {
                    if !out.contains(&k.base) {
                        out.push(k.base)
                    }
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// The name that stands for element place `e` (`x->f[i]`, `*x->f`) in
    /// `held.rs`: `f[]`, for the elements of an array member `f` or of the
    /// array a pointer member `f` points to. `None` when no member names it.
    pub(super) fn element_cell(e: &Expr) -> Option<Name> {
        let base = match e {
            Expr::Index { base, .. } | Expr::Deref(base) => uncast(base),
            _ => return None,
        };
        let Expr::Field { field, .. } = base else {
            return None;
        };
        Some(Name::from(format!("{field}[]")))
    }

    /// The kind of own object `place` lies in. Past the start of an
    /// argument (`w[1].f`, `(w + 1)->f`) it is [`Own::ArgPart`]: another
    /// instance's slot, unless the argument is the instance's as a whole.
    /// A member of the argument (`w->buf`, `w[0].hdr`), and a step along a
    /// pointer inside one, is [`Own::ArgInner`]: a pointer to it stays
    /// inside the member.
    pub(super) fn own_object(
        &self,
        fr: &Frame,
        place: &Expr,
        st: &State,
        depth: u32,
    ) -> Option<Own> {
        if depth > 8 {
            return None;
        }
        let inside = |k: Own| match k {
            Own::Arg => Own::ArgInner,
            k => k,
        };
        match place {
            Expr::Field {
                base, arrow: false, ..
            } => self.own_object(fr, base, st, depth + 1).map(inside),
            Expr::Index { base, .. } if self.is_array(fr, base) => {
                self.own_object(fr, base, st, depth + 1)
            }
            Expr::Index { base, index, .. } => match self.own_value_at(fr, base, st, depth + 1)? {
                Own::Arg if *index != Some(0) => Some(Own::ArgPart),
                k => Some(k),
            },
            Expr::Field {
                base, arrow: true, ..
            } => self.own_value_at(fr, base, st, depth + 1).map(inside),
            Expr::Deref(base) => self.own_value_at(fr, base, st, depth + 1),
            // A non-static local of this frame (`c.env`, `&c`).
            Expr::Var(x) if fr.locals.get(x).is_some_and(|t| !t.is_static) => Some(Own::Frame),
            _ => None,
        }
    }

    /// `x = rhs` for a local: `x` holds an own object when `rhs` is one,
    /// and no longer the object a join went through.
    pub(super) fn note_own(&self, fr: &Frame, x: &Name, rhs: &Expr, st: &mut State) {
        st.joined_own.retain(|(y, _)| y != x);
        let null = || {
            let ptr = fr.locals.get(x).is_some_and(|t| t.pointer > 0);
            (ptr && !st.own.is_empty() && matches!(uncast(rhs), Expr::Int(0)))
                .then(|| Own::Held(HeldChain::default()))
        };
        let k = self.own_value(fr, rhs, st).or_else(null);
        if st.own.is_empty() && k.is_none() {
            return;
        }
        let add = k.filter(|_| tracks_ptr(fr, x)).map(|k| (x.clone(), k));
        replace_own(
            st,
            |y| y == &**x || y.starts_with("#res") || cell_member(y, x).is_some(),
            add,
        );
    }

    /// `x->f = rhs` through a local pointer whose address is not taken:
    /// when `rhs` is an allocation of the instance's own, `x->f` is an own
    /// member cell from here on this path, until `x` or `x->f` changes
    /// (`this->conn = calloc(..)`). A load of it holding no lock gives an
    /// [`Own::Held`] pointer naming the member in `cells`: another
    /// instance's store in between would have to be ordered before the
    /// load by something other than a lock the load holds, or be an
    /// unordered write of `x->f`, itself reported. The race check trusts
    /// it only while every store into a member of that name is of the
    /// storing instance's own allocation (`HeldMembers::cell_dirty`).
    pub(super) fn note_own_cell(&self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &mut State) {
        let Expr::Field {
            base,
            field,
            arrow: true,
        } = lhs
        else {
            return;
        };
        let Expr::Var(x) = uncast(base) else {
            return;
        };
        if !tracks_ptr(fr, x) {
            return;
        }
        let name = cell_name(x, field);
        let add = match self.own_value(fr, rhs, st) {
            Some(Own::Alloc) => self
                .cell_chain(fr, lhs, field, st)
                .map(|c| (name.clone(), Own::Held(c))),
            _ => None,
        };
        if add.is_none() && lookup_cell(st, x, field).is_none() {
            return;
        }
        replace_own(st, |y| y == &*name, add);
    }

    /// The chain of own member cell `lhs` (`x->f`), unless its container
    /// is known to be shared by the instances: a global or a static, or
    /// the thread's argument (then the cell holds only while the thread
    /// owns its argument, or its slot: `HeldChain::arg`). There another
    /// instance's store is what the program does, not a slip the cell's
    /// own report would show. A container the walk does not know, or one
    /// loaded from memory (a pool job's `this`), may be one per instance.
    fn cell_chain(&self, fr: &Frame, lhs: &Expr, field: &Name, st: &State) -> Option<HeldChain> {
        // Statics are globals here too.
        if self
            .place(fr, lhs, 0)
            .iter()
            .any(|k| matches!(k.base, Base::Global(_)))
        {
            return None;
        }
        let mut c = HeldChain::default();
        match self.own_object(fr, lhs, st, 0) {
            Some(Own::Arg | Own::ArgInner) => c.arg = true,
            Some(Own::ArgPart) => (c.arg, c.part) = (true, true),
            _ => {}
        }
        c.cells.push(field.clone());
        // The container's sites, for copies of unknown bytes into them
        // (`HeldMembers::dirty_sites`); none when the walk does not know
        // the container.
        add_sites(&mut c, Some(self.cell_sites(fr, lhs).unwrap_or_default()));
        Some(c)
    }

    /// The entries a callee of call `c` starts with: its parameters given
    /// an own pointer.
    pub(super) fn own_params(
        &self,
        fr: &Frame,
        c: &Call,
        params: &[Name],
        st: &State,
    ) -> ThinVec<(Name, Own)> {
        // A local's address (`&c`, `&c.f`, an array `buf`) is the frame's
        // own (`Own::Frame`).
        let local = |a: &Expr| match uncast(a) {
            Expr::AddrOf(_) => true,
            Expr::Var(x) => frame_array(fr, x) || fr.address_taken.contains(x),
            _ => false,
        };
        if st.own.is_empty()
            && !c
                .args
                .iter()
                .any(|a| matches!(uncast(a), Expr::CallResult(_)) || local(a))
        {
            return ThinVec::new();
        }
        let mut v: Vec<(Name, Own)> = params
            .iter()
            .zip(&c.args)
            .filter_map(|(p, a)| Some((p.clone(), self.own_value(fr, a, st)?)))
            .collect();
        // The own member cells of a pointer passed on (`fill(this)`): the
        // parameter's, in the callee.
        for (p, a) in params.iter().zip(&c.args) {
            let Expr::Var(x) = uncast(a) else {
                continue;
            };
            for (y, k) in st.own.iter() {
                if let Some(f) = cell_member(y, x) {
                    v.push((cell_name(p, f), k.clone()));
                }
            }
        }
        v.truncate(MAX_TRACKED);
        v.sort();
        v.dedup_by(|a, b| a.0 == b.0);
        v.into()
    }

    /// `return value`: the caller's result holds an own object when
    /// `value` is one.
    pub(super) fn note_own_returned(&self, fr: &Frame, value: &Expr, st: &mut State) {
        let k = self.own_value(fr, value, st).or_else(|| {
            // A null pointer is no other instance's object: the paths that
            // return one agree with those that return an own allocation.
            let ptr = self.prog.returns.get(&fr.fname).is_some_and(|t| {
                let t = self.prog.resolve_type(t);
                t.pointer > 0
            });
            (ptr && matches!(uncast(value), Expr::Int(0))).then(|| Own::Held(HeldChain::default()))
        });
        if st.own.is_empty() && k.is_none() {
            return;
        }
        let add = k.map(|k| (Name::from(RETURNED), k));
        replace_own(st, |y| y == RETURNED, add);
    }

    /// A thread creation hands `arg`: unless it is a fresh heap object
    /// (the newest of its site), the thread does not own its argument.
    pub(super) fn note_handed(&mut self, fr: &Frame, c: &Call, arg: Option<&Expr>, st: &State) {
        let handed: Vals = arg.map(|e| self.eval(fr, e, 0)).unwrap_or_default();
        let fresh = arg.is_some_and(|e| {
            !handed.is_empty()
                && handed.iter().all(|x| match x {
                    Val::Target(k) => {
                        matches!(k.base, Base::Heap { .. })
                            && st.fresh.contains(&k.base)
                            && (!st.refreshed.contains(&k.base)
                                || super::frames::holds_newest(fr, e, &k.base, st))
                    }
                    _ => false,
                })
        });
        let node = self.d.node_stack.last().copied();
        if fresh {
            self.d.last_fresh_handing = Some((node, fr.fid, c.id, handed));
            return;
        }
        // The object an earlier creation of this block handed fresh, by the
        // same variable: each visit of this site still hands another one.
        let shared = match &self.d.last_fresh_handing {
            Some((n, f, first, vals)) => {
                *n == node
                    && *f == fr.fid
                    && *vals == handed
                    && same_block_handing(&fr.summary.ir.body, *first, c.id)
            }
            None => false,
        };
        // Only the creation right after a fresh handing may share it: a
        // stale one (the same object again, a loop's next round) ends it.
        self.d.last_fresh_handing = None;
        match node {
            Some(n) => {
                let node = &mut self.d.nodes[n as usize];
                if !node.stale_spawns.contains(&c.id) {
                    node.stale_spawns.push(c.id);
                }
                if !shared && !node.unshared_spawns.contains(&c.id) {
                    node.unshared_spawns.push(c.id);
                }
            }
            None => {
                self.d.root_stale_spawns.push((fr.fid, c.id));
                if !shared {
                    self.d.root_unshared_spawns.push((fr.fid, c.id));
                }
            }
        }
    }

    /// The threads each creation of whose site handed another heap
    /// object, though maybe one an earlier creation of the same block had
    /// just handed too (see `Node::unshared_spawns`): two instances of such
    /// a thread never share their argument, and a member of it holds the
    /// id only its own creation stored. Includes the owning threads. Sorted.
    pub(super) fn per_site_threads(&self, reach: &[bool]) -> Vec<u32> {
        // Visits that handed a stale object no earlier creation shared.
        self.arg_threads(reach, &self.d.root_unshared_spawns, |n| &n.unshared_spawns)
    }

    /// The threads that own their argument: every creation, over the
    /// nodes `reach` marks, handed them a fresh heap object, and they are
    /// no callback group. Sorted.
    pub(super) fn owning_threads(&self, reach: &[bool]) -> Vec<u32> {
        self.arg_threads(reach, &self.d.root_stale_spawns, |n| &n.stale_spawns)
    }

    /// The threads handed heap objects, no callback group, whose site's
    /// call is in none of the `bad` creations of the reachable nodes (and
    /// of `root`, outside any node). Sorted.
    fn arg_threads(
        &self,
        reach: &[bool],
        root: &[(FunctionId, u32)],
        bad: impl Fn(&super::memo::Node) -> &Vec<u32>,
    ) -> Vec<u32> {
        let mut calls: FxHashSet<(FunctionId, u32)> = root.iter().copied().collect();
        for (i, n) in self.d.nodes.iter().enumerate() {
            if reach.get(i).copied().unwrap_or(false) {
                calls.extend(bad(n).iter().map(|&c| (n.fid, c)));
            }
        }
        let mut out = Vec::new();
        for (t, th) in self.d.threads.iter().enumerate().skip(1) {
            let Some(site) = th.site.and_then(|s| self.d.sites.get(s as usize)) else {
                continue;
            };
            if !calls.contains(&(site.func, site.call))
                && !self.d.group_roots.contains_key(&(t as u32))
                && heap_args(&self.d.thread_args[t])
            {
                out.push(t as u32);
            }
        }
        out
    }

    /// The sites, keeping a thread id stored in a member of the handed
    /// object (`Site::tid_in_arg`) only where that member holds the id its
    /// creation stored: no statement of the program writes a member of
    /// that name, and every creation that stores an id in one is such a
    /// creation, of threads each creation of whose site handed another
    /// object (`owning`: [`Walker::per_site_threads`], sorted), so no
    /// object's member gets a second id.
    pub(super) fn joinable_sites(&self, owning: &[u32]) -> Vec<crate::facts::Site> {
        let mut sites = self.d.sites.clone();
        if sites.iter().all(|s| s.tid_in_arg.is_none()) {
            return sites;
        }
        let mut unsafe_members: FxHashSet<Name> = FxHashSet::default();
        for &f in self.prog.functions.values().flatten() {
            crate::visit::visit_stmts(&self.summary(f).ir.body, &mut |s| {
                if let racelens_syntax::Stmt::Access(a) = s {
                    if a.kind == racelens_syntax::AccessKind::Write {
                        if let Expr::Field { field, .. } = &a.place {
                            unsafe_members.insert(field.clone());
                        }
                    }
                }
            });
        }
        for (i, s) in sites.iter().enumerate() {
            let owned = self
                .d
                .threads
                .iter()
                .enumerate()
                .filter(|(_, t)| t.site == Some(i as u32))
                .all(|(t, _)| owning.binary_search(&(t as u32)).is_ok());
            for k in &s.tid {
                if let Some(Elem::Field(f)) = k.path.last() {
                    if s.tid_in_arg.as_ref() != Some(f) || !owned {
                        unsafe_members.insert(f.clone());
                    }
                }
            }
        }
        for s in &mut sites {
            if s.tid_in_arg
                .as_ref()
                .is_some_and(|f| unsafe_members.contains(f))
            {
                s.tid_in_arg = None;
            }
        }
        sites
    }
}
