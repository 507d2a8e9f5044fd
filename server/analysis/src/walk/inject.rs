//! Arrays of pointers to per-thread objects: `ws[i] = malloc(..)` for each
//! `i`, then thread `i` works on `ws[i]->count`. Each element points to an
//! object of its own, so two instances of a slot thread that load their
//! object from their own element touch two objects, however the walk
//! merges the objects by allocation site.
//!
//! Two halves, like `slots.rs`:
//! - [`Walker::via_tag`] marks an access of the object an element points
//!   to (`A[x]->f`, `(*A[x]).f`, `*(A + x)->f`), `x` holding the slot
//!   thread's number, with [`Slot::via`]: a hash of the element locations
//!   of `A` (interned in `WalkData::via_arrays`). The mark comes from the
//!   function's text and the element's points-to set, like the slot marks.
//! - The walk notes every write of an element of an array (or of a whole
//!   object, or through an unknown pointer) that may hold a pointer
//!   (`Node::elem_writes`), and whether it stores a fresh object: the newest
//!   object of an allocation site that has not escaped on the path (see
//!   `private.rs`). [`Walker::injective_arrays`] keeps the arrays whose
//!   every write is such a store: a fresh object goes into one element, and
//!   after that store it is no longer fresh, so no two elements ever hold
//!   one object. The race check trusts a `via` mark only for those
//!   (`races::slot_apart`), and, as for every slot mark, only between two
//!   instances of the thread whose number the index holds.
//!
//! Invariants: the notes are facts of nodes' own statements, like accesses,
//! so `finish` and the incremental update derive the injective arrays from
//! the reachable nodes and the functions no node walked (whose writes are
//! never fresh), and an incremental update bails when the result would
//! change. A mark never makes a race appear.
//!
//! Under-approximations (each may hide a race): a pointer written into an
//! element by code without a body (a library given the array) is not seen;
//! a freed object's address reused by a later allocation stored into
//! another element is taken for a new object (a use after free, which C
//! leaves undefined anyway).

use super::frames::{holds_newest, Frame};
use super::state::{insert_sorted, State};
use super::{uncast, Val, Walker};
use crate::db::FunctionId;
use crate::facts::{AccessFact, Slot};
use crate::model::{Base, Elem, LocKey};
use racelens_syntax::{AccessKind, Expr, Stmt};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The location with every index made "any index": one element stands for
/// all of its array.
fn any_index(k: &LocKey) -> LocKey {
    LocKey {
        base: k.base.clone(),
        path: k
            .path
            .iter()
            .map(|e| match e {
                Elem::Index(_) => Elem::Index(None),
                f => f.clone(),
            })
            .collect(),
    }
}

/// The pointer whose pointee `place` accesses, when it is an array
/// element or a variable: `A[x]` in `A[x]->f`, `(*A[x]).f.g`, `*A[x]`,
/// `(*(A + x))->f` (the lowering reads `A + x` as `&A[x]`), `me` in
/// `me->f`. Members and array indexes within the pointee may follow; a
/// second dereference may not.
fn pointee_pointer<'e>(w: &Walker, fr: &Frame, place: &'e Expr) -> Option<&'e Expr> {
    let mut e = place;
    let ptr = loop {
        match e {
            Expr::Field {
                base, arrow: false, ..
            } => e = base,
            Expr::Index { base, .. } if w.is_array(fr, base) => e = base,
            Expr::Field {
                base, arrow: true, ..
            } => break &**base,
            Expr::Deref(base) => break &**base,
            _ => return None,
        }
    };
    let mut p = uncast(ptr);
    if let Expr::Deref(inner) = p {
        if let Expr::AddrOf(x) = uncast(inner) {
            p = uncast(x);
        }
    }
    matches!(p, Expr::Index { .. } | Expr::Var(_)).then_some(p)
}

impl Walker<'_> {
    /// The `via` mark of an access of `place` (see the module doc).
    pub(super) fn via_tag(&mut self, fr: &Frame, place: &Expr) -> Option<Slot> {
        let ptr = pointee_pointer(self, fr, place)?;
        let own = self.own_vars_of(fr);
        let elem = match ptr {
            e @ Expr::Index { .. } => e,
            // `me = ws[id]; me->count++`.
            Expr::Var(me) => &own.element_locals.iter().find(|(y, _)| y == me)?.1,
            _ => return None,
        };
        let Expr::Index {
            base, var: Some(x), ..
        } = elem
        else {
            return None;
        };
        if super::slots::has_index(base) {
            return None;
        }
        let from = own.number_var(x)?;
        let mut keys: Vec<LocKey> = self.place(fr, elem, 0).iter().map(any_index).collect();
        keys.sort();
        keys.dedup();
        let arrays = keys.iter().all(|k| {
            matches!(k.base, Base::Global(_) | Base::Heap { .. })
                && matches!(k.path.last(), Some(Elem::Index(_)))
        });
        if keys.is_empty() || !arrays {
            return None;
        }
        let h = std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, &keys).max(1);
        self.d
            .via_arrays
            .entry(h)
            .or_insert_with(|| Arc::from(keys));
        Some(Slot {
            pos: 0,
            stride: 0,
            from,
            before: 0,
            via: h,
        })
    }

    /// Does `lhs = rhs` store a fresh object (or a null pointer) into an
    /// element? Asked only of stores of a pointer into an element or through
    /// a pointer, so that other stores observe no heap site (which would
    /// split the calling contexts of their function).
    pub(super) fn stores_fresh(&mut self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &State) -> bool {
        if matches!(uncast(rhs), Expr::Int(0)) {
            return true;
        }
        if !matches!(lhs, Expr::Index { .. } | Expr::Deref(_))
            || !self.type_of(fr, lhs, 0).is_some_and(|t| t.pointer > 0)
        {
            return false;
        }
        let vals = self.eval(fr, rhs, 0);
        if vals.is_empty() {
            return false;
        }
        for v in vals {
            let Val::Target(k) = v else {
                return false;
            };
            if !matches!(k.base, Base::Heap { .. }) || !k.path.is_empty() {
                return false;
            }
            self.observe_heap(&k.base);
            if !st.fresh.contains(&k.base) {
                return false;
            }
            self.observe_refresh(&k.base);
            if st.refreshed.contains(&k.base) && !holds_newest(fr, rhs, &k.base, st) {
                return false;
            }
        }
        true
    }

    /// May a write of `place` store a pointer? Not when it writes an
    /// arithmetic object.
    fn may_store_pointer(&self, fr: &Frame, place: &Expr) -> bool {
        let Some(t) = self.type_of(fr, place, 0) else {
            return true;
        };
        let t = self.prog.resolve_type(&t);
        let floating = t.pointer == 0
            && !t.array
            && matches!(t.name.as_deref(), Some("float" | "double" | "long double"));
        !(floating || crate::model::integer_kind(&t).is_some())
    }

    /// The walk writes `place`, which may be `keys`: note the writes that
    /// may put a pointer into an array element (see the module doc), fresh
    /// when `WalkData::store_fresh` says the statement stores a fresh
    /// object.
    pub(super) fn note_elem_writes(&mut self, fr: &Frame, place: &Expr, keys: &[LocKey]) {
        let relevant = |k: &LocKey| match k.base {
            Base::Global(_) | Base::Heap { .. } | Base::Type(_) => {
                matches!(k.path.last(), None | Some(Elem::Index(_)))
            }
            Base::Unknown => true,
            Base::Local { .. } | Base::Synthetic(_) => false,
        };
        if !keys.iter().any(relevant) || !self.may_store_pointer(fr, place) {
            return;
        }
        let fresh = self.d.store_fresh;
        for k in keys.iter().filter(|k| relevant(k)) {
            let w = (any_index(k), fresh);
            match self.d.node_stack.last() {
                Some(&n) => insert_sorted(&mut self.d.nodes[n as usize].elem_writes, w),
                None => insert_sorted(&mut self.d.root_elem_writes, w),
            }
        }
    }

    /// The element writes of function `f`, which no node walked: none is
    /// known to store a fresh object.
    fn unwalked_elem_writes(&self, f: FunctionId, out: &mut Vec<LocKey>) {
        let fr = self.frame_cached(f, &[]);
        crate::visit::visit_stmts(&fr.summary.ir.body, &mut |s| {
            if let Stmt::Access(a) = s {
                if a.kind == AccessKind::Write && self.may_store_pointer(&fr, &a.place) {
                    out.extend(self.place(&fr, &a.place, 0).iter().map(any_index));
                }
            }
        });
    }

    /// The arrays that the accesses in `locations` name, whose every write
    /// the nodes `reach` marks made, or that functions no node walked may
    /// make, stores a fresh object (see the module doc). Sorted.
    pub(super) fn injective_arrays(
        &self,
        reach: &[bool],
        locations: &BTreeMap<Base, Arc<Vec<AccessFact>>>,
    ) -> Vec<u64> {
        if self.d.via_arrays.is_empty() {
            return Vec::new();
        }
        // Only arrays that reachable accesses name: an incremental update
        // keeps the arrays of accesses an edit removed.
        let mut used: Vec<u64> = locations
            .values()
            .flat_map(|v| v.iter())
            .filter_map(|f| f.slot.map(|s| s.via))
            .filter(|h| *h != 0)
            .collect();
        if used.is_empty() {
            return Vec::new();
        }
        used.sort_unstable();
        used.dedup();
        let mut dirty: Vec<LocKey> = self
            .d
            .root_elem_writes
            .iter()
            .filter(|(_, fresh)| !fresh)
            .map(|(k, _)| k.clone())
            .collect();
        for (i, node) in self.d.nodes.iter().enumerate() {
            if reach.get(i).copied().unwrap_or(false) {
                dirty.extend(
                    node.elem_writes
                        .iter()
                        .filter(|(_, fresh)| !fresh)
                        .map(|(k, _)| k.clone()),
                );
            }
        }
        for f in self.unwalked_functions(reach) {
            self.unwalked_elem_writes(f, &mut dirty);
        }
        // A pointer written through an unresolved pointer to a pointer (or
        // to bytes) may land in any element; one to a struct's member lands
        // in a struct, never in an array of pointers.
        let wild = |d: &LocKey| match &d.base {
            Base::Unknown => true,
            Base::Type(n) => d.path.len() <= 1 && !self.prog.structs.contains_key(n),
            _ => false,
        };
        if dirty.iter().any(wild) {
            return Vec::new();
        }
        // An array a global's initializer fills with addresses.
        let initialized = |e: &LocKey| match &e.base {
            Base::Global(g) => self
                .prog
                .global_inits
                .get(g)
                .is_some_and(|refs| refs.iter().any(|r| self.prog.global(r).is_some())),
            _ => false,
        };
        // A write of `d` may put a pointer into element `e`: the same
        // object, at `e` or a path above it.
        let spoils = |d: &LocKey, e: &LocKey| {
            d.base == e.base && d.path.len() <= e.path.len() && d.path[..] == e.path[..d.path.len()]
        };
        let mut out: Vec<u64> = self
            .d
            .via_arrays
            .iter()
            .filter(|(h, _)| used.binary_search(h).is_ok())
            .filter(|(_, elems)| {
                elems
                    .iter()
                    .all(|e| !initialized(e) && !dirty.iter().any(|d| spoils(d, e)))
            })
            .map(|(h, _)| *h)
            .collect();
        out.sort_unstable();
        if super::private::debug() {
            eprintln!(
                "racelens: injective arrays {out:?} of {:?}",
                self.d.via_arrays
            );
        }
        out
    }
}
