//! Member cells: what a pointer member of a local struct, or of the object
//! a local pointer holds, points to since it was last assigned on this
//! path (`st.page_data = calloc(..)`, then `st.page_data` or, in a callee
//! handed `&st`, `st->page_data`).
//!
//! The pointer store is flow-insensitive: a member holds everything ever
//! stored into it, so a local struct filled by a copy of another object
//! (`memcpy(st, &e->stats, ..)`) and then given a buffer of its own still
//! points into the other object's buffer, and a helper writing through the
//! member is taken to write there. A member cell is one more flow-sensitive
//! pointer of the path (`State::ptrs`, next to the local pointers of
//! `frames.rs`), named `x.f` (member `f` of local `x`) or `p->f` (member
//! `f` of what local pointer `p` holds), read instead of the store while it
//! lasts ([`Walker::member_cell_vals`]).
//!
//! Invariants (when a cell stops holding):
//! - it is set only by an assignment to the member by that name
//!   (`x.f = v`, `p->f = v`), and only to what `v` evaluates to, when
//!   that holds no function: which functions a call through a member
//!   reaches stays a fact of the whole program (`store_functions`);
//! - any other write that may reach the member drops it: a write whose
//!   objects overlap the cell's, one through a pointer the walk cannot
//!   resolve or resolves by type only, and an assignment to `p` itself
//!   ([`Walker::drop_member_cells`]);
//! - a call drops the cells an argument may point into (`memcpy(&st, ..)`,
//!   `pthread_create(.., &st)`); a call of a function with a body also
//!   drops every cell but those of a local whose address no value of the
//!   pointer store holds ([`Walker::stored_locals`]): the callee may
//!   reach the rest through memory. The cells the callee was handed and
//!   still holds at its exit then come back;
//! - a callee handed `&x` (or `p`) starts with the cells of `x` (of `p`)
//!   as cells of its parameter (`calls.rs`, `memo.rs`), so they are part
//!   of its context; its exit state keeps its parameters' cells
//!   (`exit_state`), and those it was handed come back to the caller as
//!   `#out:` entries (`FrameFacts::restore`), then `#keep:` ones
//!   ([`keep_cells_out`]) until the caller's [`Walker::cells_after_call`]
//!   names them its own again. A callee not walked (out of contexts)
//!   hands none back.
//!
//! A cell `p->f` may also hold an object that was unpublished when stored
//! there (`c->buf = malloc(..)`: of a fresh site, the newest object of a
//! refreshed one), noted in `State::newest` under the cell's name
//! ([`Walker::fresh_into_cell`], then `State::set_newest_held` in
//! `stmts.rs`). While the cell holds and `p` holds an unpublished object
//! too, an access through the cell (`c->buf[0] = ..`,
//! `memset(c->buf, ..)`) is set-up no other thread can see
//! ([`Walker::through_nested_cell`]). The note goes with the cell (every
//! way above a cell stops holding), across any call of a function with a
//! body, and when the inner object escapes or is stored anywhere else
//! (`private.rs`).
//!
//! Under-approximation: a store by another thread between the assignment
//! and the read (itself a race on the member, reported as such) is not
//! among what the read may see.

use super::frames::{tracks_ptr, Frame};
use super::state::State;
use super::{uncast, Vals, Walker};
use crate::model::{Base, LocKey};
use racelens_syntax::{Call, Expr, Name};
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// The name of the cell of member `f` of local `x` (`arrow`: of what `x`
/// points to).
fn cell_name(x: &str, f: &str, arrow: bool) -> Name {
    Name::from(format!("{x}{}{f}", if arrow { "->" } else { "." }))
}

/// The local, member and arrow of a cell's name, if it is one.
fn parse_cell(n: &str) -> Option<(&str, &str, bool)> {
    if let Some((x, f)) = n.split_once("->") {
        return Some((x, f, true));
    }
    let (x, f) = n.split_once('.')?;
    Some((x, f, false))
}

/// Is `n` a cell of what a local pointer holds (`p->f`)?
pub(super) fn is_arrow_cell(n: &str) -> bool {
    !n.starts_with('#') && n.contains("->")
}

fn is_cell(n: &str) -> bool {
    !n.starts_with('#') && (n.contains('.') || n.contains("->"))
}

/// The cells among `seeded` a callee's exit state `st` still holds,
/// named for the caller's `keep_cells_out` (`#out:p->f`).
pub(super) fn cells_out(seeded: &[Name], st: &State) -> Vec<(Name, Vals)> {
    seeded
        .iter()
        .filter_map(|n| {
            let (_, v) = st.ptrs.iter().find(|(y, _)| y == n)?;
            Some((Name::from(format!("{OUT}{n}")), v.clone()))
        })
        .collect()
}

const OUT: &str = "#out:";
const KEEP: &str = "#keep:";

/// After call `c` of a callee with parameters `params` returned: the
/// cells it still held at its exit (`#out:p->f`) are the caller's cells
/// of what it handed `p` (`x.f` for `&x`, `q->f` for `q`), kept across the
/// call as `#keep:` entries until [`Walker::cells_after_call`].
pub(super) fn keep_cells_out(st: &mut State, c: &Call, params: &[Name]) {
    if !st.ptrs.iter().any(|(n, _)| n.starts_with(OUT)) {
        return;
    }
    let mut p: Vec<(Name, Vals)> = Vec::with_capacity(st.ptrs.len());
    let mut kept: Vec<(Name, Vals)> = Vec::new();
    for (n, v) in st.ptrs.iter() {
        let Some(cell) = n.strip_prefix(OUT) else {
            p.push((n.clone(), v.clone()));
            continue;
        };
        let Some((q, f, true)) = parse_cell(cell) else {
            continue;
        };
        let Some(i) = params.iter().position(|x| &**x == q) else {
            continue;
        };
        let name = match c.args.get(i).map(uncast) {
            Some(Expr::AddrOf(inner)) => match uncast(inner) {
                Expr::Var(x) => cell_name(x, f, false),
                _ => continue,
            },
            Some(Expr::Var(x)) => cell_name(x, f, true),
            _ => continue,
        };
        kept.push((Name::from(format!("{KEEP}{name}")), v.clone()));
    }
    for (n, v) in kept {
        super::frames::set_ptr(&mut p, &n, v);
    }
    st.ptrs = Arc::new(p);
}

/// May any of `a` overlap any of `b`?
fn any_overlap(a: &[LocKey], b: &[LocKey]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.may_overlap(y)))
}

/// The cells that no longer hold (or all cells: `all`) hold no newest
/// object either.
fn prune_newest_cells(st: &mut State, all: bool) {
    if !st.newest.iter().any(|(x, _)| is_cell(x)) {
        return;
    }
    let live = |x: &Name| !all && st.ptrs.iter().any(|(y, _)| y == x);
    let v: Vec<(Name, Base)> = st
        .newest
        .iter()
        .filter(|(x, _)| !is_cell(x) || live(x))
        .cloned()
        .collect();
    st.newest = v.into();
}

impl Walker<'_> {
    /// `lhs = rhs`, before the store: when `lhs` is a cell `p->f` and
    /// `rhs` holds unpublished objects only (of fresh sites, the newest
    /// object of a refreshed one), those sites, which the cell will hold
    /// (`State::set_newest_held`, from `stmts.rs`).
    pub(super) fn fresh_into_cell(
        &mut self,
        fr: &Frame,
        lhs: &Expr,
        rhs: &Expr,
        st: &State,
    ) -> Option<(Name, Vec<Base>)> {
        let n = self.member_cell(fr, lhs)?;
        if !is_arrow_cell(&n) {
            return None;
        }
        let mut sites = Vec::new();
        for v in self.eval(fr, rhs, 0).iter() {
            match v {
                super::Val::Target(k) if k.path.is_empty() && self.unpublished(fr, rhs, k, st) => {
                    sites.push(k.base.clone())
                }
                _ => return Some((n, Vec::new())),
            }
        }
        sites.sort();
        sites.dedup();
        Some((n, sites))
    }

    /// Does `place` go through a cell `p->f` (read as a pointer: `p->f[i]`,
    /// `*p->f`, `p->f->g`, past steps inside its array members) holding an
    /// object of `site` that was unpublished when stored there
    /// ([`Walker::fresh_into_cell`]), while `p` holds an unpublished object?
    /// Then no other thread can reach that object yet: it is reached only
    /// through `p`'s, which no other thread has. Cheap when no cell holds
    /// such an object: every access of a heap object not fresh asks.
    pub(super) fn through_nested_cell(
        &mut self,
        fr: &Frame,
        place: &Expr,
        site: &Base,
        st: &State,
    ) -> bool {
        if !st.newest.iter().any(|(x, _)| is_cell(x)) {
            return false;
        }
        let inner = super::record::within_arrays(place, &|e| self.is_array(fr, e));
        let Some(n) = super::record::pointer_read(inner).and_then(|p| self.member_cell(fr, p))
        else {
            return false;
        };
        if !st.ptrs.iter().any(|(y, _)| *y == n) || !st.newest_held_by(&n).any(|b| b == site) {
            return false;
        }
        let Some((x, _, true)) = parse_cell(&n) else {
            return false;
        };
        let p = Expr::Var(Name::from(x));
        let vals = self.eval(fr, &p, 0);
        !vals.is_empty()
            && vals.iter().all(|v| match v {
                super::Val::Target(k) => self.unpublished(fr, &p, k, st),
                _ => false,
            })
    }

    /// Is `k`, an object the pointer value `e` points to, one no other
    /// thread can reach yet: of a fresh heap site, and the newest object
    /// when the site is refreshed? What it reads of the heap state is part
    /// of the memo node's entry (`memo::heap_agrees`).
    fn unpublished(&mut self, fr: &Frame, e: &Expr, k: &LocKey, st: &State) -> bool {
        self.observe_heap(&k.base);
        self.observe_refresh(&k.base);
        matches!(k.base, Base::Heap { .. })
            && st.fresh.contains(&k.base)
            && (!st.refreshed.contains(&k.base) || super::frames::holds_newest(fr, e, &k.base, st))
    }

    /// The cell `e` names, if it can be one: member `f` (not an array) of
    /// a non-static local struct by name (`x.f`), or of what a local
    /// pointer whose address is not taken holds (`p->f`).
    pub(super) fn member_cell(&self, fr: &Frame, e: &Expr) -> Option<Name> {
        let Expr::Field { base, field, arrow } = e else {
            return None;
        };
        let Expr::Var(x) = uncast(base) else {
            return None;
        };
        let t = fr.locals.get(x)?;
        let ok = match arrow {
            true => tracks_ptr(fr, x),
            false => !t.is_static && !t.array && t.pointer == 0,
        };
        if !ok || self.is_array(fr, e) {
            return None;
        }
        Some(cell_name(x, field, *arrow))
    }

    /// What cell `e` holds on this path, if it is a cell that holds.
    pub(super) fn member_cell_vals(&self, fr: &Frame, e: &Expr) -> Option<Vals> {
        let ptrs = self.d.cur_ptrs.borrow();
        if !ptrs.iter().any(|(n, _)| is_cell(n)) {
            return None;
        }
        let n = self.member_cell(fr, e)?;
        ptrs.iter().find(|(y, _)| *y == n).map(|(_, v)| v.clone())
    }

    fn set_ptrs(&self, st: &mut State, p: Vec<(Name, Vals)>) {
        st.ptrs = Arc::new(p);
        *self.d.cur_ptrs.borrow_mut() = st.ptrs.clone();
    }

    /// The objects cell `n` of this frame lies in.
    fn cell_places(&self, fr: &Frame, n: &str) -> Vec<LocKey> {
        let Some((x, f, arrow)) = parse_cell(n) else {
            return Vec::new();
        };
        let e = Expr::Field {
            base: Box::new(Expr::Var(Name::from(x))),
            field: Name::from(f),
            arrow,
        };
        self.place(fr, &e, 0)
    }

    /// A write to `place` happened: the cells it may reach (all of them,
    /// when the walk cannot name it or names it by type only) no longer
    /// hold.
    pub(super) fn drop_member_cells(&self, fr: &Frame, place: &Expr, st: &mut State) {
        if !st.ptrs.iter().any(|(n, _)| is_cell(n)) {
            return;
        }
        let written = self.place(fr, place, 0);
        let unknown = written.is_empty() || written.iter().any(|k| matches!(k.base, Base::Type(_)));
        let mut changed = false;
        let mut p: Vec<(Name, Vals)> = Vec::with_capacity(st.ptrs.len());
        for (n, v) in st.ptrs.iter() {
            let drop = is_cell(n) && {
                let cell = self.cell_places(fr, n);
                unknown || cell.is_empty() || any_overlap(&cell, &written)
            };
            if drop {
                changed = true;
            } else {
                p.push((n.clone(), v.clone()));
            }
        }
        if changed {
            self.set_ptrs(st, p);
            prune_newest_cells(st, false);
        }
    }

    /// `x` is assigned: the cells of what it pointed to no longer name
    /// that object.
    pub(super) fn drop_cells_of(&self, x: &str, st: &mut State) {
        let of = |n: &str| parse_cell(n).is_some_and(|(y, _, _)| y == x);
        if !st.ptrs.iter().any(|(n, _)| is_cell(n) && of(n)) {
            return;
        }
        let p = st
            .ptrs
            .iter()
            .filter(|(n, _)| !(is_cell(n) && of(n)))
            .cloned()
            .collect();
        self.set_ptrs(st, p);
        prune_newest_cells(st, false);
    }

    /// `lhs = rhs` where `lhs` is a cell: it holds what `rhs` evaluates to
    /// (the write itself dropped it and the cells it overlaps, see
    /// [`Walker::drop_member_cells`]).
    pub(super) fn assign_member_cell(&self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &mut State) {
        let Some(n) = self.member_cell(fr, lhs) else {
            return;
        };
        let mut v = self.eval(fr, rhs, 0);
        // Function pointers stay with the store (`store_functions`): the
        // calls a member makes are a fact of the program, not of a path.
        if v.iter().any(|x| matches!(x, super::Val::Func(_))) {
            v.clear();
        }
        if v.is_empty() && !st.ptrs.iter().any(|(y, _)| *y == n) {
            return;
        }
        let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
        super::frames::set_ptr(&mut p, &n, v);
        self.set_ptrs(st, p);
    }

    /// The locals whose address is a value of the pointer store: a
    /// function may reach them through memory.
    fn stored_locals(&self) -> Arc<FxHashSet<Base>> {
        if let Some(s) = self.d.stored_locals.borrow().as_ref() {
            return s.clone();
        }
        let mut out = FxHashSet::default();
        for vals in self.d.store.values() {
            for v in vals {
                if let super::Val::Target(k) = v {
                    if matches!(k.base, Base::Local { .. }) {
                        out.insert(k.base.clone());
                    }
                }
            }
        }
        let out = Arc::new(out);
        *self.d.stored_locals.borrow_mut() = Some(out.clone());
        out
    }

    /// After call `c`: the cells its arguments may point into go, and, for
    /// a function with a body (`bodies`), those of anything but a local
    /// whose address no memory holds (the callee may reach the rest
    /// through memory); then the cells the callee was handed and still
    /// held at its exit come back (`keep_cells_out`). A local struct whose
    /// address is in no argument and nowhere in memory keeps its cells,
    /// in its own frame and through a parameter handed its address: no
    /// callee can reach it.
    pub(super) fn cells_after_call(&self, fr: &Frame, c: &Call, bodies: bool, st: &mut State) {
        // A callee may have stored another object into a cell it was
        // handed, which comes back holding that one.
        prune_newest_cells(st, bodies);
        let keep = |n: &str| n.starts_with(KEEP);
        if !st.ptrs.iter().any(|(n, _)| is_cell(n) || keep(n)) {
            return;
        }
        let mut targets: Vec<LocKey> = Vec::new();
        for a in &c.args {
            for v in self.eval(fr, a, 0) {
                if let super::Val::Target(k) = v {
                    targets.push(k);
                }
            }
        }
        let stored = bodies.then(|| self.stored_locals());
        let mut p: Vec<(Name, Vals)> = Vec::with_capacity(st.ptrs.len());
        let mut kept: Vec<(Name, Vals)> = Vec::new();
        for (n, v) in st.ptrs.iter() {
            if let Some(cell) = n.strip_prefix(KEEP) {
                kept.push((Name::from(cell), v.clone()));
                continue;
            }
            if !is_cell(n) {
                p.push((n.clone(), v.clone()));
                continue;
            }
            let places = self.cell_places(fr, n);
            let reached = places.is_empty() || any_overlap(&places, &targets);
            // Only a local's member, and only one whose address no memory
            // holds, is out of a callee's reach.
            let through_memory = stored.as_ref().is_some_and(|s| {
                places
                    .iter()
                    .any(|c| !matches!(c.base, Base::Local { .. }) || s.contains(&c.base))
            });
            if !reached && !through_memory {
                p.push((n.clone(), v.clone()));
            }
        }
        for (n, v) in kept {
            super::frames::set_ptr(&mut p, &n, v);
        }
        p.sort_by(|a, b| a.0.cmp(&b.0));
        if *p != **st.ptrs {
            self.set_ptrs(st, p);
            prune_newest_cells(st, false);
        }
    }

    /// The cells a callee starts with: for each parameter `p` handed `&x`
    /// (or a local pointer `q`), the cells of `x` (of `q`) as `p->f`.
    pub(super) fn member_cell_seeds(
        &self,
        c: &Call,
        params: &[Name],
        st: &State,
    ) -> Vec<(Name, Vals)> {
        let mut out = Vec::new();
        if !st.ptrs.iter().any(|(n, _)| is_cell(n)) {
            return out;
        }
        for (p, a) in params.iter().zip(&c.args) {
            let (x, arrow) = match uncast(a) {
                Expr::AddrOf(inner) => match uncast(inner) {
                    Expr::Var(x) => (x, false),
                    _ => continue,
                },
                Expr::Var(q) => (q, true),
                _ => continue,
            };
            for (n, v) in st.ptrs.iter() {
                if let Some((y, f, ar)) = parse_cell(n) {
                    if y == &**x && ar == arrow {
                        out.push((cell_name(p, f, true), v.clone()));
                    }
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out.truncate(super::MAX_TRACKED);
        out
    }
}
