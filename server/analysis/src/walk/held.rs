//! Members that hold only what their owner allocated: which loads of a
//! pointer from an own object give an object of the instance's own
//! ([`Own::Held`]).
//!
//! A thread often keeps what it allocates in objects only it reaches: a
//! pipeline worker stores the batch it read into its own argument
//! (`w->data = read_batch()`), fills the batch's members with more of its
//! allocations (`s->reg = calloc(..)`), and later loads them back
//! (`s = w->data; r = s->reg;`). Each of these objects is the worker's
//! allocation, so two workers never share one, however the walk merges
//! them by allocation site. The walk marks a pointer loaded from member `f`
//! of an own object as `Held`, naming the members of the chain, and this
//! module decides, by member name over the whole program, which members
//! keep the promise. A member `f` keeps it when every store into a member
//! named `f` is one of these:
//! - a store of zero, a string, or a value that is no pointer;
//! - through a pointer to an object the storing instance allocated (or,
//!   for a thread that owns its argument or its slot of an array, to that
//!   argument), of a value the instance allocated ([`Own::Alloc`], or
//!   `Held` itself, whose own chain keeps the promise in turn);
//!
//! and no `f` is written another way: through its address (`&x->f`
//! anywhere), by copying a whole struct that contains it, by a `memcpy`
//! into one, by code the walk did not follow. Elements are named by the
//! member that holds or points to their array (`f[]` for `x->f[i]`); a
//! pointer stored through a pointer no member names (`*out = p`) spoils
//! the elements of the heap sites it may point to, or every element when
//! that is not known, and a copy of bytes of unknown kind spoils the sites
//! its destination may be, or everything. Stores through the
//! argument are also kept apart (`HeldMembers::arg_stored`): the creator
//! holds the argument as its own allocation and must not take what the
//! thread stored there for its own. Into an object the storing instance
//! allocated, the store also needs that object's site handed to no thread
//! (its receiver could store there too).
//!
//! The same records decide which members are own cells (`walk::own`,
//! [`HeldChain::cells`](crate::facts::HeldChain)): there the container
//! does not matter, only that every value stored into a member of the
//! name is an allocation of the storing instance's own
//! ([`HeldStore::Cell`], or a fresh [`HeldStore::Own`]), and that no
//! member of the name is written another way (`HeldMembers::cell_dirty`).
//!
//! Invariant: the facts are those of nodes' own statements (`Node::held`),
//! like accesses; `finish` and the incremental update derive
//! [`HeldMembers`] from the reachable nodes and the functions no node
//! walked, and an incremental update bails when the result would change.
//!
//! Under-approximation (each may hide a race): stores into a member by
//! library code given a pointer to the struct (not its member) are not
//! seen, and a member's name stands for the members of that name of every
//! struct (type punning between two structs is not followed).

use super::frames::Frame;
use super::state::{insert_sorted, State};
use super::{uncast, Val, Walker};
use crate::config::CallModel;
use crate::db::FunctionId;
use crate::facts::{HeldChain, HeldMembers, Own, Thread};
use crate::model::{Base, Elem};
use racelens_syntax::{Expr, Name, Stmt};
use rustc_hash::FxHashSet;
use std::collections::BTreeSet;

/// One store into a member, as the walk saw it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum HeldStore {
    /// It may store what the owner did not allocate.
    Dirty(Name),
    /// An allocation of the storing instance's own, through a pointer to
    /// an object the instance may not own (`this->conn = calloc(..)`):
    /// no promise for [`Own::Held`] chains, but the member stays an own
    /// cell ([`HeldChain::cells`]).
    Cell(Name),
    /// A copy into memory whose members are unknown.
    All,
    /// A pointer stored into an element no member names (`*out = p`).
    Elements,
    /// Anything may be written into objects of these heap sites.
    Sites(Vec<Base>),
    /// Through an own pointer, of an own value.
    Own {
        member: Name,
        /// Into the thread's argument (`part`: past its start).
        arg: bool,
        part: bool,
        /// The chains the container and the value were loaded through.
        deps: HeldChain,
        /// The container's heap sites, when it is not the argument.
        sites: Vec<Base>,
        /// The value is an allocation of the storing instance's own
        /// ([`Own::Alloc`]): the member stays an own cell whatever the
        /// container.
        fresh: bool,
    },
}

/// What a copy's pointer argument points to.
enum Pointee {
    Struct(BTreeSet<Name>),
    /// `char`, `int`: bytes that hold no pointer.
    Scalar,
    Void,
    /// A pointer to pointers, or a type not known.
    Unknown,
}

/// Does `e` take an address anywhere?
fn has_addr_of(e: &Expr) -> bool {
    match e {
        Expr::AddrOf(_) => true,
        Expr::Field { base, .. }
        | Expr::Deref(base)
        | Expr::Offset(base)
        | Expr::Index { base, .. } => has_addr_of(base),
        Expr::Cast { value, .. } => has_addr_of(value),
        Expr::Choice(xs) => xs.iter().any(has_addr_of),
        Expr::Init(xs) => xs.iter().any(|(_, x)| has_addr_of(x)),
        _ => false,
    }
}

impl Walker<'_> {
    pub(super) fn note_held(&mut self, s: HeldStore) {
        match self.d.node_stack.last() {
            Some(&n) => insert_sorted(&mut self.d.nodes[n as usize].held, s),
            None => insert_sorted(&mut self.d.root_held, s),
        }
    }

    /// The members of struct type `name`, and of the structs it contains
    /// (by value, arrays included).
    fn members_within(&self, name: &Name, out: &mut BTreeSet<Name>, seen: &mut Vec<Name>) {
        if seen.contains(name) || seen.len() > 32 {
            return;
        }
        seen.push(name.clone());
        let Some(fields) = self.prog.structs.get(name) else {
            return;
        };
        for (f, t) in fields {
            out.insert(f.clone());
            let t = self.prog.resolve_type(t);
            if t.pointer == 0 {
                if let Some(n) = &t.name {
                    self.members_within(n, out, seen);
                }
            }
        }
    }

    /// The members a write of a whole object of type `t` writes, if `t` is
    /// a struct (`None` for a scalar).
    fn struct_members(&self, t: &racelens_syntax::TypeInfo) -> Option<BTreeSet<Name>> {
        let t = self.prog.resolve_type(t);
        if t.pointer > 0 {
            return None;
        }
        let n = t.name.as_ref()?;
        if !self.prog.structs.contains_key(n) {
            return None;
        }
        let mut out = BTreeSet::new();
        self.members_within(n, &mut out, &mut Vec::new());
        Some(out)
    }

    /// `&x->f` (anywhere in `e`): `f` may be written through that address,
    /// and so may the members of what it is.
    fn held_addr_taken(&self, fr: &Frame, e: &Expr, out: &mut Vec<HeldStore>) {
        match e {
            Expr::AddrOf(x) => {
                if let Some(c) = Self::element_cell(x) {
                    out.push(HeldStore::Dirty(c));
                }
                if let Expr::Field { field, .. } = &**x {
                    out.push(HeldStore::Dirty(field.clone()));
                    if let Some(ms) = self.type_of(fr, x, 0).and_then(|t| self.struct_members(&t)) {
                        out.extend(ms.into_iter().map(HeldStore::Dirty));
                    }
                }
                self.held_addr_taken(fr, x, out);
            }
            Expr::Field { base, .. }
            | Expr::Deref(base)
            | Expr::Offset(base)
            | Expr::Index { base, .. } => self.held_addr_taken(fr, base, out),
            Expr::Cast { value, .. } => self.held_addr_taken(fr, value, out),
            Expr::Choice(xs) => xs.iter().for_each(|x| self.held_addr_taken(fr, x, out)),
            Expr::Init(xs) => xs
                .iter()
                .for_each(|(_, x)| self.held_addr_taken(fr, x, out)),
            _ => {}
        }
    }

    /// What statement `lhs = rhs` tells about members (see the module
    /// doc), in state `st` (no own pointers for code the walk did not
    /// follow).
    fn held_assign(&self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &State) -> Vec<HeldStore> {
        let mut out = Vec::new();
        self.held_addr_taken(fr, rhs, &mut out);
        self.local_cell_stores(fr, lhs, rhs, st, &mut out);
        let ty = self.type_of(fr, lhs, 0);
        if let Some(t) = &ty {
            if t.pointer == 0 && !t.array {
                // A struct copy writes every member; a scalar no pointer.
                if let Some(ms) = self.struct_members(t) {
                    out.extend(ms.into_iter().map(HeldStore::Dirty));
                }
                return out;
            }
        }
        if matches!(uncast(rhs), Expr::Int(_) | Expr::Str | Expr::Other) {
            return out;
        }
        let field = match lhs {
            Expr::Field { field, .. } => field.clone(),
            Expr::Index { .. } | Expr::Deref(_) => match Self::element_cell(lhs) {
                Some(c) => c,
                None => {
                    // Through a pointer no member names (`*out = p`): what
                    // it may point to says which member, if any; a local's
                    // or a global's own cells are none.
                    let places = self.place(fr, lhs, 0);
                    let mut any = places.is_empty();
                    let mut sites = Vec::new();
                    for k in &places {
                        match (&k.base, k.path.last()) {
                            (Base::Local { .. } | Base::Global(_), _) => {}
                            (Base::Heap { .. } | Base::Type(_), Some(Elem::Field(f))) => {
                                out.push(HeldStore::Dirty(f.clone()))
                            }
                            (Base::Heap { .. }, _) => sites.push(k.base.clone()),
                            _ => any = true,
                        }
                    }
                    if !sites.is_empty() {
                        out.push(HeldStore::Sites(sites));
                    }
                    if any {
                        if super::private::debug() {
                            eprintln!("racelens: held: any element by {lhs:?} in {}", fr.fname);
                        }
                        out.push(HeldStore::Elements);
                    }
                    return out;
                }
            },
            _ => return out,
        };
        let field = &field;
        // Frames' locals are not what members hold (`walk::own`).
        let kv = self.own_value(fr, rhs, st).filter(|k| *k != Own::Frame);
        let kc = kv
            .as_ref()
            .and_then(|_| self.own_object(fr, lhs, st, 0))
            .filter(|k| *k != Own::Frame);
        let store = match (kc, kv) {
            (Some(kc), Some(kv)) if !matches!(kv, Own::Arg | Own::ArgPart | Own::ArgInner) => {
                let fresh = kv == Own::Alloc;
                let mut deps = HeldChain::default();
                let (mut arg, mut part, mut sites) = (false, false, Vec::new());
                match &kc {
                    Own::Arg | Own::ArgInner => arg = true,
                    Own::ArgPart => (arg, part) = (true, true),
                    // Filtered out above.
                    Own::Frame => {}
                    Own::Alloc | Own::Held(_) => {
                        for k in self.place(fr, lhs, 0) {
                            if matches!(k.base, Base::Heap { .. }) && !sites.contains(&k.base) {
                                sites.push(k.base);
                            }
                        }
                        sites.sort();
                    }
                }
                for k in [&kc, &kv] {
                    if let Own::Held(c) = k {
                        if let Some(Own::Held(j)) =
                            super::own::join_own(&Own::Held(deps.clone()), &Own::Held(c.clone()))
                        {
                            deps = j;
                        } else {
                            return vec![HeldStore::Dirty(field.clone())];
                        }
                    }
                }
                HeldStore::Own {
                    member: field.clone(),
                    arg,
                    part,
                    deps,
                    sites,
                    fresh,
                }
            }
            (None, Some(Own::Alloc)) => HeldStore::Cell(field.clone()),
            _ => HeldStore::Dirty(field.clone()),
        };
        out.push(store);
        out
    }

    /// The walk meets `lhs = rhs` (a store outside the frame's locals).
    pub(super) fn note_held_store(&mut self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &State) {
        for s in self.held_assign(fr, lhs, rhs, st) {
            self.note_held(s);
        }
    }

    /// What call `c` tells about members: addresses of members it is
    /// handed, and what a copy (`memcpy`) writes.
    fn held_call(&self, fr: &Frame, c: &racelens_syntax::Call, st: &State) -> Vec<HeldStore> {
        let mut out = Vec::new();
        for a in &c.args {
            self.held_addr_taken(fr, a, &mut out);
        }
        self.local_cell_call(fr, c, st, &mut out);
        if let Some(CallModel::Mem {
            write: Some(w),
            read: Some(r),
        }) = fr.summary.models.get(&c.id)
        {
            // The copy writes the members of what the destination is, or,
            // through `void *`, of what the source is; bytes copied from
            // scalars carry no pointer.
            let (dst, src) = (c.args.get(*w), c.args.get(*r));
            let kinds = [dst, src].map(|e| e.map_or(Pointee::Unknown, |e| self.pointee(fr, e)));
            match kinds {
                [Pointee::Struct(ms), _] | [Pointee::Void, Pointee::Struct(ms)] => {
                    out.extend(ms.into_iter().map(HeldStore::Dirty))
                }
                [Pointee::Scalar, _] | [Pointee::Void, Pointee::Scalar] => {}
                // Bytes of unknown kind: whatever the destination may be.
                _ => {
                    let places = dst.map_or(Vec::new(), |d| {
                        self.place(fr, &Expr::Deref(Box::new(d.clone())), 0)
                    });
                    let mut sites = Vec::new();
                    let mut any = places.is_empty();
                    for k in places {
                        match k.base {
                            Base::Local { .. } | Base::Global(_) => {}
                            Base::Heap { .. } => sites.push(k.base),
                            _ => any = true,
                        }
                    }
                    if any {
                        if super::private::debug() {
                            eprintln!(
                                "racelens: held: all members by a copy in {} to {dst:?}",
                                fr.fname
                            );
                        }
                        out.push(HeldStore::All)
                    } else if !sites.is_empty() {
                        out.push(HeldStore::Sites(sites));
                    }
                }
            }
        }
        out
    }

    /// What pointer `e` points to, for a copy.
    fn pointee(&self, fr: &Frame, e: &Expr) -> Pointee {
        let Some(mut t) = self.type_of(fr, uncast(e), 0) else {
            return Pointee::Unknown;
        };
        if !t.index_once() {
            return Pointee::Unknown;
        }
        if let Some(ms) = self.struct_members(&t) {
            return Pointee::Struct(ms);
        }
        let t = self.prog.resolve_type(&t);
        match (t.pointer, t.name.as_deref()) {
            (0, Some("void")) => Pointee::Void,
            (0, Some(_)) => Pointee::Scalar,
            _ => Pointee::Unknown,
        }
    }

    /// The walk meets `e` (a local's new value, a returned value): the
    /// members whose address it takes.
    pub(super) fn note_held_addr(&mut self, fr: &Frame, e: &Expr) {
        if !has_addr_of(e) {
            return;
        }
        let mut out = Vec::new();
        self.held_addr_taken(fr, e, &mut out);
        for s in out {
            self.note_held(s);
        }
    }

    /// The walk meets call `c`.
    pub(super) fn note_held_call(&mut self, fr: &Frame, c: &racelens_syntax::Call, st: &State) {
        for s in self.held_call(fr, c, st) {
            self.note_held(s);
        }
    }

    /// What the statements of function `f`, which no node walked, tell:
    /// they run with no pointer known to be own.
    fn held_unwalked(&self, f: FunctionId, out: &mut Vec<HeldStore>) {
        let fr = self.frame_cached(f, &[]);
        let st = State::default();
        let body = &fr.summary.ir.body;
        crate::visit::visit_stmts(body, &mut |s| match s {
            Stmt::Assign { lhs, rhs } => {
                let local =
                    matches!(lhs, Expr::Var(x) if fr.locals.get(x).is_some_and(|t| !t.is_static));
                if local {
                    self.held_addr_taken(&fr, rhs, out);
                    self.local_cell_stores(&fr, lhs, rhs, &st, out);
                } else {
                    out.extend(self.held_assign(&fr, lhs, rhs, &st));
                }
            }
            Stmt::Call(c) => out.extend(self.held_call(&fr, c, &st)),
            Stmt::Return { value: Some(v), .. } => self.held_addr_taken(&fr, v, out),
            _ => {}
        });
    }

    /// Which members keep the promise, over the nodes `reach` marks and the
    /// functions no node walked (see the module doc). `threads` must say
    /// already which own their argument and which a slot.
    pub(super) fn held_members(
        &self,
        reach: &[bool],
        threads: &[Thread],
        escaped: &[Base],
    ) -> HeldMembers {
        let mut stores: Vec<(u32, &HeldStore)> = self.d.root_held.iter().map(|s| (0, s)).collect();
        for (i, node) in self.d.nodes.iter().enumerate() {
            if reach.get(i).copied().unwrap_or(false) {
                stores.extend(node.held.iter().map(|s| (node.thread, s)));
            }
        }
        let mut unwalked = Vec::new();
        for f in self.unwalked_functions(reach) {
            self.held_unwalked(f, &mut unwalked);
        }
        stores.extend(unwalked.iter().map(|s| (0, s)));
        let mut out = HeldMembers::default();
        let mut dirty: FxHashSet<Name> = FxHashSet::default();
        let mut cell_dirty: FxHashSet<Name> = FxHashSet::default();
        let mut arg_stored: FxHashSet<Name> = FxHashSet::default();
        for (_, s) in &stores {
            match s {
                HeldStore::Dirty(n) => {
                    dirty.insert(n.clone());
                    cell_dirty.insert(n.clone());
                }
                HeldStore::Cell(n) => {
                    dirty.insert(n.clone());
                }
                HeldStore::All => out.all_dirty = true,
                HeldStore::Elements => out.elements_dirty = true,
                HeldStore::Sites(b) => out.dirty_sites.extend(b.iter().cloned()),
                HeldStore::Own {
                    member, arg: true, ..
                } => {
                    arg_stored.insert(member.clone());
                }
                HeldStore::Own { .. } => {}
            }
        }
        if out.all_dirty {
            out.dirty_sites.clear();
            return out;
        }
        out.dirty_sites.sort();
        out.dirty_sites.dedup();
        let handed: FxHashSet<&Base> = self
            .d
            .thread_args
            .iter()
            .flatten()
            .filter_map(|v| match v {
                Val::Target(k) => Some(&k.base),
                _ => None,
            })
            .collect();
        let owns = |t: u32| {
            let th = threads.get(t as usize);
            (
                th.is_some_and(|t| t.owns_arg),
                th.is_some_and(|t| t.owns_slot_element()),
            )
        };
        let mut sorted_arg: Vec<Name> = arg_stored.into_iter().collect();
        sorted_arg.sort();
        out.arg_stored = sorted_arg;
        loop {
            let mut changed = false;
            let mut now = HeldMembers {
                dirty: dirty.iter().cloned().collect(),
                ..out.clone()
            };
            now.dirty.sort();
            for (t, s) in &stores {
                let HeldStore::Own {
                    member,
                    arg,
                    part,
                    deps,
                    sites,
                    ..
                } = s
                else {
                    continue;
                };
                if dirty.contains(member) {
                    continue;
                }
                let (whole, slot) = owns(*t);
                let ok = (!arg || whole || (slot && !part))
                    && sites.iter().all(|b| !handed.contains(b))
                    && now.holds(deps, whole, slot);
                if !ok {
                    dirty.insert(member.clone());
                    changed = true;
                }
            }
            if !changed {
                out.dirty = now.dirty;
                break;
            }
        }
        // An own cell needs every value stored into a member of its name
        // to be the storing instance's: a fresh allocation, a pointer
        // loaded through members that keep the promise (none of them
        // another cell, which this is deciding), or what a cell of the
        // same name held, moved along (`w->data = step(w->data)`, where
        // the step returns the object it was given).
        for (t, s) in &stores {
            if let HeldStore::Own {
                member,
                deps,
                fresh: false,
                ..
            } = s
            {
                let (whole, slot) = owns(*t);
                let moved = deps.cells.iter().all(|c| c == member);
                let rest = HeldChain {
                    cells: Default::default(),
                    ..deps.clone()
                };
                if !moved || !out.holds(&rest, whole, slot) {
                    cell_dirty.insert(member.clone());
                }
            }
        }
        // A local another thread may reach is no local cell
        // (`local_cells.rs`).
        for b in escaped {
            if let Base::Local { func, var } = b {
                cell_dirty.insert(super::local_cells::cell_name(func, var));
            }
        }
        let mut cell_dirty: Vec<Name> = cell_dirty.into_iter().collect();
        cell_dirty.sort();
        out.cell_dirty = cell_dirty;
        out
    }
}
