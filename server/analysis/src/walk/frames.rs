//! Frames and bindings: a function's frame for some pointer arguments (the
//! flow-insensitive points-to of its local pointers, over a
//! [`FrameBase`] that holds whatever the arguments are), the flow-sensitive
//! local pointers of the path (`State::ptrs`), and the caller's frame-local
//! facts kept aside while a callee runs ([`FrameFacts`]).
//!
//! Owns the caches `WalkData::frames` and `frame_bases`. Invariants: a
//! frame is a fact of its own function and arguments only, so it is built
//! without the current statement's flow-sensitive pointers
//! ([`Walker::without_cur_ptrs`]); `WalkData::cur_ptrs` mirrors the
//! `ptrs` of the state being walked, and every assignment to a tracked local
//! pointer updates both ([`Walker::assign_ptr`]).

use super::addressed::{each_address, early_accesses, lent_locals};
use super::state::{Ptrs, State};
use super::wild::wild_locals;
use super::{add_vals, uncast, Val, Vals, Walker, MAX_TRACKED};
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary};
use crate::model::*;
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{Callee, Expr, Name, Span, Stmt, Test, TypeInfo};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;
use thin_vec::ThinVec;

/// Is `x` a local pointer the walk follows flow-sensitively (non-static,
/// address never taken)?
pub(super) fn tracks_ptr(fr: &Frame, x: &Name) -> bool {
    !fr.address_taken.contains(x) && fr.locals.get(x).map(|t| !t.is_static).unwrap_or(false)
}

/// `x` now holds `v` (unknown when empty: the frame's points-to applies).
/// Kept sorted by name, at most [`MAX_TRACKED`] entries.
pub(super) fn set_ptr(ptrs: &mut Vec<(Name, Vals)>, x: &Name, v: Vals) {
    ptrs.retain(|(y, _)| y != x);
    if !v.is_empty() && ptrs.len() < MAX_TRACKED {
        let at = ptrs.partition_point(|(y, _)| y < x);
        ptrs.insert(at, (x.clone(), v));
    }
}

/// `x = rhs`: `x` holds the newest object of a refreshed site (see
/// `State::refreshed`) when `rhs` is that object's allocation or a local
/// holding it; otherwise it holds none.
fn note_newest(fr: &Frame, x: &Name, rhs: &Expr, st: &mut State) {
    if st.refreshed.is_empty() {
        return;
    }
    let held: Vec<Base> = match tracks_ptr(fr, x) {
        true => newest_held(fr, rhs, st),
        false => Vec::new(),
    };
    st.set_newest_held(x, held);
}

/// The name under which `State::newest` says what call `id` returned: the
/// newest object of a refreshed site (a name no C identifier can have).
pub(super) fn returned_by(id: u32) -> Name {
    format!("#res{id}").into()
}

/// The name under which a function's exit state says what it returns.
pub(super) const RETURNED: &str = "#ret";

/// After call `id` returns: what the callee returned (`RETURNED` among
/// the pointers `restore` gave back) becomes the call's result,
/// [`returned_by`]`(id)`, when `keep`; an older result of the same call
/// goes either way.
pub(super) fn name_result(st: &mut State, id: u32, keep: bool) {
    let res = returned_by(id);
    let ret = st
        .ptrs
        .iter()
        .find(|(x, _)| &**x == RETURNED)
        .map(|r| r.1.clone());
    if ret.is_none() && !st.ptrs.iter().any(|(x, _)| *x == res) {
        return;
    }
    let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
    p.retain(|(x, _)| &**x != RETURNED);
    set_ptr(&mut p, &res, ret.filter(|_| keep).unwrap_or_default());
    st.ptrs = Arc::new(p);
}

/// The refreshed sites whose newest object the pointer value `e` holds (or
/// points into): those a local it passes on holds, or whose object it
/// takes an address inside, those a call returned, and the one a refreshed
/// site's allocation makes.
fn newest_held(fr: &Frame, e: &Expr, st: &State) -> Vec<Base> {
    let e = uncast(e);
    let holder = match e {
        Expr::CallResult(id) => Some(returned_by(*id)),
        e => super::pointer_local(e).cloned(),
    };
    let mut held: Vec<Base> = match &holder {
        Some(h) => st.newest_held_by(h).cloned().collect(),
        None => Vec::new(),
    };
    // An address inside the object a local holds (`&c->st`, `&c->buf[2]`)
    // points into the same object.
    if let Expr::AddrOf(place) = e {
        if let Some(p) = super::slots::deref_root(place) {
            held.extend(st.newest_held_by(p).cloned());
        }
    }
    if let Expr::CallResult(id) = e {
        let b = Base::Heap {
            func: fr.fname.clone(),
            call: *id,
        };
        if st.refreshed.contains(&b) {
            held.push(b);
        }
    }
    held
}

/// Does the pointer value `e` hold (or point into) the newest object of the
/// refreshed site `b` ([`newest_held`], which also takes an address inside
/// the object a pointer holds, `&j->link`, `&j->hdr.node`; a step `j + 1`
/// along it is one already), or is it `b`'s allocation itself?
pub(super) fn holds_newest(fr: &Frame, e: &Expr, b: &Base, st: &State) -> bool {
    matches!(uncast(e), Expr::CallResult(id)
        if matches!(b, Base::Heap { func, call } if *func == fr.fname && call == id))
        || newest_held(fr, e, st).contains(b)
}

impl Walker<'_> {
    /// `return value`: for each refreshed site (and each site of this
    /// function's own allocations, which another path to the exit may
    /// refresh), does the value hold the site's newest object, or no object
    /// of the site at all (the result of code without a body, another
    /// site)? Then whatever the caller assigns the call's result to holds
    /// the newest object, if it holds one of the site at all (`RETURNED`;
    /// paths that meet keep what all of them say).
    pub(super) fn note_returned(&mut self, fr: &Frame, value: &Expr, st: &mut State) {
        self.note_own_returned(fr, value, st);
        st.newest.retain(|(v, _)| &**v != RETURNED);
        if st.refreshed.is_empty() && st.allocated.is_empty() {
            return;
        }
        let vals = self.eval(fr, value, 0);
        let mut tags: Vec<(Name, Base)> = Vec::new();
        // The value holds the newest object of these sites (which locals
        // hold it was observed for the memo).
        let newest = newest_held(fr, value, st);
        for b in &newest {
            self.observe_refresh(b);
            tags.push((Name::from(RETURNED), b.clone()));
        }
        // The function's own sites, which another path to the exit may
        // allocate anew: a value that holds no object of the site says so
        // whatever the state.
        let own = |b: &Base| matches!(b, Base::Heap { func, .. } if *func == fr.fname);
        for b in st.allocated.iter().filter(|b| own(b)) {
            let other = !vals
                .iter()
                .any(|v| matches!(v, super::Val::Target(k) if k.base == *b));
            if other {
                tags.push((Name::from(RETURNED), b.clone()));
            }
        }
        if !tags.is_empty() {
            let mut v: Vec<(Name, Base)> = st.newest.to_vec();
            v.extend(tags);
            v.sort();
            v.dedup();
            st.newest = v.into();
        }
    }
}

/// A function's frame for some pointer arguments: the points-to of its
/// local pointers, over what the function holds whatever its arguments.
pub(super) struct Frame {
    pub(super) fid: FunctionId,
    pub(super) base: Arc<FrameBase>,
    pub(super) pts: FxHashMap<Name, Vals>,
    /// Parameters given the constant zero (a null pointer, `0`) that the
    /// body never assigns and whose address it never takes: they stay
    /// zero, so a branch taken only when one is nonzero never runs (`if
    /// (parent) parent->children = n;` of `add(NULL, ..)`; `if (!level)
    /// exit(1);` of `log(0, ..)`).
    pub(super) zeros: Vec<Name>,
    /// Struct parameters given a copy of a global by value (parameter,
    /// global) whose function writes no part of them and never takes their
    /// address: a member chain of one holds what the global's does, as far
    /// as its staying zero goes (`constants.rs`).
    pub(super) copies: Vec<(Name, Name)>,
    /// Parameters given a variable the calling path tested nonzero, that
    /// the function never writes and whose address it never takes: a
    /// branch taken only when one is zero never runs (`if (path == NULL)`
    /// of `if (gh_log_path) gh_log_open(gh_log_path);`).
    pub(super) nonzeros: Vec<Name>,
}

impl std::ops::Deref for Frame {
    type Target = FrameBase;
    fn deref(&self) -> &FrameBase {
        &self.base
    }
}

/// What a frame holds whatever the pointer arguments: built once per
/// function and walk (it reads the function's summary and the program's
/// types only).
pub(super) struct FrameBase {
    pub(super) fname: Name,
    pub(super) summary: Arc<FunctionSummary>,
    pub(super) locals: FxHashMap<Name, TypeInfo>,
    pub(super) address_taken: FxHashSet<Name>,
    /// Accesses by name to a lent local made before the frame lends it
    /// (`addressed::early_accesses`): no other thread can reach them.
    pub(super) early: FxHashSet<(Span, Name)>,
    pub(super) calls: FxHashMap<u32, Callee>,
    /// Atomic operations by call id: the object each reads (`*p` of
    /// `atomic_load(p)`, `__atomic_exchange_n(p, ..)`), whose old value is
    /// the call's result.
    pub(super) atomic_objects: FxHashMap<u32, Expr>,
    /// Calls of library functions whose result points into what an
    /// argument points to (`strchr(s, c)`: somewhere in `s`), by call id:
    /// what the result may be (see `library::derived_result`).
    pub(super) derived_results: FxHashMap<u32, Vec<Expr>>,
    /// Locals assigned exactly once, from `&place`: `d = &s->datum`.
    pub(super) single_defs: FxHashMap<Name, Expr>,
    /// Locals assigned from a call result: (local, call id).
    pub(super) from_calls: Vec<(Name, u32)>,
    /// Calls whose result a test or an assignment to a variable reads: only
    /// their lock results are kept in [`State::tries`] (an entry for any
    /// other call is never looked up, and would only make a loop's head
    /// differ between passes).
    pub(super) tested: FxHashSet<u32>,
    /// Wild locals: never given an address or null, only left uninitialized
    /// or set to non-zero integers (see [`wild_locals`]).
    pub(super) wild: FxHashSet<Name>,
    /// Assignments to non-static locals, in body order: the input of the
    /// flow-insensitive points-to.
    local_assigns: Vec<(Name, Expr)>,
    /// The body has a `goto` (local pointers are then not followed
    /// flow-sensitively by the pointer store).
    pub(super) has_goto: bool,
    /// A `goto` jumps back to a label that comes before it in the body (or
    /// to one that is not there): the walk meets each label once, in the
    /// state of its first arrival, so facts known there may not hold for
    /// the jump (see `stmts::known_value`).
    pub(super) backward_goto: bool,
    /// Locals whose address is taken only to lend it to library calls that
    /// keep nothing (see [`lent_only`]).
    pub(super) lent: FxHashSet<Name>,
    /// The parameters and the non-static locals that only ever hold one of
    /// them (see [`param_copies`](Self::param_copies)), once asked.
    param_copies: std::sync::OnceLock<FxHashSet<Name>>,
    /// The parameters whose branch taken on zero does something (see
    /// [`acts_on_zero`](Self::acts_on_zero)), once asked.
    acting_on_zero: std::sync::OnceLock<FxHashSet<Name>>,
    /// The function is defined in a translation unit, not a header (see
    /// `AccessFact::build`).
    pub(super) in_unit: bool,
}

impl FrameBase {
    /// The parameters, and the non-static locals (address never taken)
    /// whose every assignment is one of them up to casts (`km = (kmem_t *)
    /// _km`). Greatest such set.
    pub(super) fn param_copies(&self) -> &FxHashSet<Name> {
        self.param_copies.get_or_init(|| {
            let params: FxHashSet<Name> =
                self.summary.ir.params.iter().map(|p| p.name.clone()).collect();
            let mut candidates: FxHashSet<&Name> = self
                .local_assigns
                .iter()
                .map(|(x, _)| x)
                .filter(|x| !params.contains(*x) && !self.address_taken.contains(*x))
                .collect();
            loop {
                let keep: FxHashSet<&Name> = candidates
                    .iter()
                    .copied()
                    .filter(|x| {
                        self.local_assigns
                            .iter()
                            .filter(|(y, _)| y == *x)
                            .all(|(_, rhs)| matches!(uncast(rhs), Expr::Var(v) if params.contains(v) || candidates.contains(v)))
                    })
                    .collect();
                if keep.len() == candidates.len() {
                    break;
                }
                candidates = keep;
            }
            let mut out = params.clone();
            out.extend(candidates.into_iter().cloned());
            out
        })
    }

    /// Does the function test its parameter `p` for zero (`if (!path)`,
    /// `if (path == NULL)`) with a branch taken on zero that calls, or
    /// accesses memory other than its own non-static locals (not only
    /// `tmp = 0; return`)? Only then is a nonzero argument worth a calling
    /// context of its own (`Val::NonZero`).
    pub(super) fn acts_on_zero(&self, p: &Name) -> bool {
        let acting = self.acting_on_zero.get_or_init(|| {
            let own = |e: &Expr| {
                matches!(e, Expr::Var(x) if self.locals.get(x).is_some_and(|t| !t.is_static))
            };
            let mut out = FxHashSet::default();
            visit_stmts(&self.summary.ir.body, &mut |st| {
                let Stmt::If {
                    test: Test::VarZero { var, zero_on_true },
                    then,
                    els,
                    ..
                } = st
                else {
                    return;
                };
                if !self.summary.ir.params.iter().any(|q| q.name == *var) {
                    return;
                }
                let mut acts = false;
                visit_stmts(if *zero_on_true { then } else { els }, &mut |z| {
                    acts |= match z {
                        Stmt::Access(a) => !own(&a.place),
                        Stmt::Call(_) => true,
                        _ => false,
                    };
                });
                if acts {
                    out.insert(var.clone());
                }
            });
            out
        });
        acting.contains(p)
    }

    /// The values assigned to local `x` in the body, in body order.
    pub(super) fn assigned_values<'b>(
        &'b self,
        x: &'b Name,
    ) -> impl Iterator<Item = &'b Expr> + 'b {
        self.local_assigns
            .iter()
            .filter(move |(y, _)| y == x)
            .map(|(_, rhs)| rhs)
    }

    /// Is `x` assigned at least once, and is every value assigned to it
    /// one that `ok` accepts?
    pub(super) fn only_assigned(&self, x: &Name, ok: impl Fn(&Expr) -> bool) -> bool {
        let mut any = false;
        for (y, rhs) in &self.local_assigns {
            if y == x {
                if !ok(rhs) {
                    return false;
                }
                any = true;
            }
        }
        any
    }

    /// Is `x` assigned at least once, and only ever an address (`&o`)?
    pub(super) fn only_addresses(&self, x: &Name) -> bool {
        self.only_assigned(x, |rhs| matches!(super::uncast(rhs), Expr::AddrOf(_)))
    }
}

/// The variables that stay zero in a frame whose parameters `params` are
/// given zero (see [`Frame::zeros`]): those parameters and the locals copied
/// from them, when every assignment to each gives it zero (`p = parent`,
/// `p = NULL`, or `p = p->parent`, which runs only where `p` is not null).
fn zero_locals(base: &FrameBase, params: Vec<Name>) -> Vec<Name> {
    let mut assigns: FxHashMap<&Name, Vec<&Expr>> = FxHashMap::default();
    for (x, rhs) in &base.local_assigns {
        assigns.entry(x).or_default().push(rhs);
    }
    let is_param = |x: &Name| base.summary.ir.params.iter().any(|p| p.name == *x);
    // The greatest set closed under "every assignment gives zero"...
    let mut z: FxHashSet<&Name> = params.iter().collect();
    z.extend(
        assigns
            .keys()
            .copied()
            .filter(|x| !is_param(x) && !base.address_taken.contains(*x)),
    );
    loop {
        let before = z.len();
        let keep: Vec<&Name> = z
            .iter()
            .copied()
            .filter(|x| {
                assigns
                    .get(x)
                    .is_none_or(|rs| rs.iter().all(|r| zero_valued(r, &z)))
            })
            .collect();
        z = keep.into_iter().collect();
        if z.len() == before {
            break;
        }
    }
    // ...of which only the parameters and what is copied from them.
    let mut out: Vec<Name> = params.iter().filter(|p| z.contains(p)).cloned().collect();
    loop {
        let more: Vec<Name> = z
            .iter()
            .filter(|x| !out.contains(x))
            .filter(|x| {
                assigns.get(*x).is_some_and(|rs| {
                    rs.iter()
                        .any(|r| matches!(uncast(r), Expr::Var(y) if out.contains(y)))
                })
            })
            .map(|x| (*x).clone())
            .collect();
        if more.is_empty() {
            break;
        }
        out.extend(more);
    }
    out
}

/// Is `e` zero when the variables `z` are: the constant, one of them, or
/// memory read through one of them (which never runs)?
fn zero_valued(e: &Expr, z: &FxHashSet<&Name>) -> bool {
    fn through(e: &Expr) -> Option<&Name> {
        match e {
            Expr::Field {
                base, arrow: true, ..
            }
            | Expr::Deref(base) => match uncast(base) {
                Expr::Var(v) => Some(v),
                b => through(b),
            },
            Expr::Field { base, .. } | Expr::Index { base, .. } => match uncast(base) {
                Expr::Var(v) if matches!(e, Expr::Index { .. }) => Some(v),
                b => through(b),
            },
            _ => None,
        }
    }
    match uncast(e) {
        Expr::Int(0) => true,
        Expr::Var(v) => z.contains(v),
        Expr::Choice(es) => es.iter().all(|e| zero_valued(e, z)),
        e => through(e).is_some_and(|v| z.contains(v)),
    }
}

/// The variables whose address `e` takes (`&x`, `&x.f`, `&x[i]`).
fn addresses_in(e: &Expr, out: &mut Vec<Name>) {
    fn object(e: &Expr) -> Option<&Name> {
        match e {
            Expr::Var(x) => Some(x),
            Expr::Field {
                base, arrow: false, ..
            }
            | Expr::Index { base, .. } => object(base),
            _ => None,
        }
    }
    each_address(e, &mut |p| out.extend(object(p).cloned()));
}

/// The variable `a` lends its address to, when the argument is `&x` itself.
pub(super) fn lent_to(a: &Expr) -> Option<&Name> {
    match uncast(a) {
        Expr::AddrOf(x) => match &**x {
            Expr::Var(v) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// The locals of `body` whose address only ever goes, as `&x` itself, to
/// library calls that keep none of their arguments (`strsep(&first, ..)`):
/// nothing but such a call can write them, so they can be followed
/// flow-sensitively between those calls.
fn lent_only(
    s: &FunctionSummary,
    address_taken: &FxHashSet<Name>,
    has_body: &dyn Fn(&str) -> bool,
) -> FxHashSet<Name> {
    let mut bad: Vec<Name> = Vec::new();
    visit_stmts(&s.ir.body, &mut |st| match st {
        Stmt::Assign { lhs, rhs } => {
            addresses_in(lhs, &mut bad);
            addresses_in(rhs, &mut bad);
        }
        Stmt::Call(c) => {
            let keeps = matches!(
                s.models.get(&c.id),
                Some(CallModel::Create { .. } | CallModel::Once { .. } | CallModel::Atomic)
            );
            let lent = !keeps
                && matches!(&c.callee, Callee::Direct(n)
                    if !has_body(n) && super::library::does_not_retain(n));
            for a in &c.args {
                let mut v = Vec::new();
                addresses_in(a, &mut v);
                if !(lent && lent_to(a).is_some()) {
                    bad.extend(v);
                }
            }
            if let Callee::Indirect(e) = &c.callee {
                addresses_in(e, &mut bad);
            }
        }
        Stmt::Access(a) => addresses_in(&a.place, &mut bad),
        Stmt::Return { value: Some(e), .. } => addresses_in(e, &mut bad),
        _ => {}
    });
    // A set: a body that takes 50,000 addresses (`lock(&m1); .. lock(&mN)`)
    // made the lookups below quadratic (seconds per pass).
    let bad: FxHashSet<Name> = bad.into_iter().collect();
    address_taken
        .iter()
        .filter(|x| !bad.contains(*x))
        .cloned()
        .collect()
}

/// The caller's frame-local facts, kept aside while a callee runs.
#[derive(Default)]
pub(super) struct FrameFacts {
    pub(super) conds: Vec<(Name, bool)>,
    pub(super) guards: Vec<(u32, Name, bool)>,
    pub(super) ptrs: Ptrs,
    pub(super) lock_guards: Vec<(Name, bool, Held)>,
    pub(super) sym_guards: Vec<(Name, bool, (Name, Vec<Elem>, bool))>,
    /// The member cells the callee started with (`member_cells.rs`): those
    /// it still holds at its exit go back to the caller.
    pub(super) seeded: Vec<Name>,
}

impl FrameFacts {
    /// Gives the facts back to the state after the call. A guard of a site
    /// the callee may have spawned again no longer holds.
    pub(super) fn restore(self, st: &mut State, spawned: &[u32]) {
        let returned = st.ptrs.iter().find(|(x, _)| &**x == RETURNED).cloned();
        let cells = super::member_cells::cells_out(&self.seeded, st);
        st.ptrs = self.ptrs;
        if !cells.is_empty() {
            let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
            for (n, v) in cells {
                set_ptr(&mut p, &n, v);
            }
            st.ptrs = Arc::new(p);
        }
        // What the callee returned, under `RETURNED` until the call site
        // names it after its call (`calls.rs`; other callers drop it).
        if let Some(r) = returned {
            let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
            set_ptr(&mut p, &r.0, r.1);
            st.ptrs = Arc::new(p);
        }
        // The callee's locals; the caller puts back what still holds, and
        // reads what the callee returned (`RETURNED`).
        if !st.newest.is_empty() {
            st.newest.retain(|(v, _)| &**v == RETURNED);
        }
        // A lock the callee took or released no longer follows the flag.
        // One held in a mode the flag tells (`state::join`: written per the
        // flag, read otherwise) is unchanged while it is still held only
        // for reading.
        let moded: Vec<(Name, LocKey)> = self
            .lock_guards
            .iter()
            .filter(|g| g.2.shared)
            .map(|g| (g.0.clone(), g.2.lock.clone()))
            .collect();
        for g in self.lock_guards {
            let l = &g.2.lock;
            let unchanged = match st.must.0.iter().find(|h| &h.lock == l) {
                None => st.may.0.iter().any(|h| &h.lock == l),
                Some(h) => h.shared && moded.iter().any(|m| m.0 == g.0 && &m.1 == l),
            };
            if unchanged && !st.lock_guards.contains(&g) {
                st.lock_guards.push(g);
            }
        }
        st.lock_guards.sort();
        // The caller's symbolic guards name its own locals: the call site
        // drops those whose pointer the callee was given (`calls.rs`).
        for g in self.sym_guards {
            if !st.sym_guards.contains(&g) {
                st.sym_guards.push(g);
            }
        }
        st.sym_guards.sort();
        for c in self.conds {
            if !st.conds.iter().any(|x| x.0 == c.0) {
                st.conds.push(c);
            }
        }
        st.guards.extend(
            self.guards
                .into_iter()
                .filter(|g| !spawned.contains(&g.0) && st.created.contains(g.0)),
        );
    }
}

/// Removes the elements of `v` that `keep` rejects and returns them (without
/// reallocating when there are none).
fn split_off<T>(v: &mut ThinVec<T>, keep: impl Fn(&T) -> bool) -> Vec<T> {
    if v.iter().all(&keep) {
        return Vec::new();
    }
    let (kept, out): (Vec<T>, Vec<T>) = std::mem::take(v).into_iter().partition(|x| keep(x));
    *v = kept.into();
    out
}

fn address_taken_has(v: &[Name], x: &Name) -> bool {
    v.iter().any(|y| y == x)
}

impl<'a> Walker<'a> {
    /// Frames depend only on the function and the pointer arguments: build
    /// each once.
    pub(super) fn frame_cached(&self, fid: FunctionId, bindings: &[Vals]) -> Arc<Frame> {
        let key = (fid, bindings.to_vec());
        if let Some(f) = self.d.frames.borrow().get(&key) {
            return f.clone();
        }
        let f = Arc::new(self.frame(fid, bindings));
        self.d.frames.borrow_mut().insert(key, f.clone());
        f
    }

    /// Runs `f` without the flow-sensitive pointers of the frame being
    /// walked: frames and return values are facts of their own function,
    /// and must not depend on which caller (or re-walk) asked first.
    pub(super) fn without_cur_ptrs<T>(&self, f: impl FnOnce() -> T) -> T {
        let saved = std::mem::take(&mut *self.d.cur_ptrs.borrow_mut());
        let out = f();
        *self.d.cur_ptrs.borrow_mut() = saved;
        out
    }

    pub(super) fn frame(&self, fid: FunctionId, bindings: &[Vals]) -> Frame {
        self.without_cur_ptrs(|| self.frame_inner(fid, bindings))
    }

    fn frame_inner(&self, fid: FunctionId, bindings: &[Vals]) -> Frame {
        let base = self.frame_base(fid);
        let mut pts: FxHashMap<Name, Vals> = FxHashMap::default();
        let mut zeros = Vec::new();
        let mut copies = Vec::new();
        let mut nonzeros = Vec::new();
        for (i, p) in base.summary.ir.params.iter().enumerate() {
            match bindings.get(i) {
                Some(b) if b.contains(&Val::Zero) => {
                    if !base.address_taken.contains(&p.name) {
                        zeros.push(p.name.clone());
                    }
                }
                Some(b) => {
                    // The markers are facts of the frame, not values: what
                    // is left is what the argument holds, empty or not.
                    let mut b = b.clone();
                    b.retain(|v| match v {
                        Val::Copy(g) => {
                            copies.push((p.name.clone(), g.clone()));
                            false
                        }
                        Val::NonZero => {
                            nonzeros.push(p.name.clone());
                            false
                        }
                        _ => true,
                    });
                    pts.insert(p.name.clone(), b);
                }
                None => {}
            }
        }
        if !zeros.is_empty() {
            zeros = zero_locals(&base, zeros);
        }
        if !copies.is_empty() || !nonzeros.is_empty() {
            let written = super::constants::written_names(&base.summary, &base.fname);
            let kept = |p: &Name| {
                !base.address_taken.contains(p) && !super::constants::writes_any(&written, p)
            };
            copies.retain(|(p, _)| kept(p));
            nonzeros.retain(kept);
        }
        let mut frame = Frame {
            fid,
            base,
            pts,
            zeros,
            copies,
            nonzeros,
        };
        // Flow-insensitive points-to of local pointers, to a small fixpoint.
        let base = frame.base.clone();
        for _ in 0..3 {
            let mut changed = false;
            for (x, rhs) in &base.local_assigns {
                let v = self.eval(&frame, rhs, 0);
                if !v.is_empty() {
                    changed |= add_vals(frame.pts.entry(x.clone()).or_default(), v);
                }
            }
            if !changed {
                break;
            }
        }
        frame
    }

    /// The argument-independent part of `fid`'s frames, built once.
    pub(super) fn frame_base(&self, fid: FunctionId) -> Arc<FrameBase> {
        if let Some(b) = self.d.frame_bases.borrow().get(&fid) {
            return b.clone();
        }
        let summary = self.summary(fid);
        let mut locals = FxHashMap::default();
        for p in &summary.ir.params {
            locals.insert(p.name.clone(), self.prog.resolve_type(&p.ty));
        }
        visit_stmts(&summary.ir.body, &mut |s| {
            if let Stmt::Decl(d) = s {
                locals.insert(d.name.clone(), self.prog.resolve_type(&d.ty));
            }
        });
        let mut address_taken: FxHashSet<Name> = summary.ir.address_taken.iter().cloned().collect();
        // Elements and decayed arrays lend their local too (`&buf[i]`,
        // `f(buf)`, `strcpy(x.name, ..)`), which takes types to tell.
        address_taken.extend(lent_locals(&summary.ir.body, &locals, &self.prog));
        let early = early_accesses(
            &summary.ir.body,
            &summary.ir.address_at,
            &address_taken,
            &locals,
            &self.prog,
        );
        let fname = fid.name(self.db).clone();
        let mut calls = FxHashMap::default();
        let mut atomic_objects = FxHashMap::default();
        let mut derived_results = FxHashMap::default();
        visit_calls(&summary.ir.body, &mut |c| {
            calls.insert(c.id, c.callee.clone());
            if matches!(summary.models.get(&c.id), Some(CallModel::Atomic)) {
                if let Some(a) = c.args.first() {
                    atomic_objects.insert(c.id, Expr::Deref(Box::new(a.clone())));
                }
            }
            if let Callee::Direct(n) = &c.callee {
                let from = super::library::derived_result(n);
                if !from.is_empty() && self.prog.functions_named(n).is_none() {
                    let srcs: Vec<Expr> = from
                        .iter()
                        .filter_map(|&(i, through)| {
                            let a = c.args.get(i)?.clone();
                            let a = match through {
                                true => Expr::Deref(Box::new(a)),
                                false => a,
                            };
                            Some(Expr::Offset(Box::new(a)))
                        })
                        .collect();
                    derived_results.insert(c.id, srcs);
                }
            }
        });
        let mut counts: FxHashMap<Name, (u32, Option<Expr>)> = FxHashMap::default();
        let mut from_calls = Vec::new();
        let mut local_assigns = Vec::new();
        let mut has_goto = false;
        let mut tested = FxHashSet::default();
        let mut at = 0u32;
        let mut labels: FxHashMap<Name, u32> = FxHashMap::default();
        let mut gotos: Vec<(Name, u32)> = Vec::new();
        visit_stmts(&summary.ir.body, &mut |s| {
            has_goto |= matches!(s, Stmt::Goto(_));
            at += 1;
            match s {
                Stmt::Label(l) => {
                    labels.insert(l.clone(), at);
                }
                Stmt::Goto(l) => gotos.push((l.clone(), at)),
                _ => {}
            }
            match s {
                Stmt::If {
                    test: Test::CallZero { id, .. },
                    ..
                }
                | Stmt::Loop {
                    test: Test::CallZero { id, .. },
                    ..
                }
                | Stmt::Assign {
                    lhs: Expr::Var(_),
                    rhs: Expr::CallResult(id),
                } => {
                    tested.insert(*id);
                }
                _ => {}
            }
            if let Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } = s
            {
                if let Expr::CallResult(id) = uncast(rhs) {
                    from_calls.push((x.clone(), *id));
                }
                let e = counts.entry(x.clone()).or_insert((0, None));
                e.0 += 1;
                e.1 = Some(rhs.clone());
                if locals
                    .get(x)
                    .map(|t: &TypeInfo| !t.is_static)
                    .unwrap_or(false)
                {
                    local_assigns.push((x.clone(), rhs.clone()));
                }
            }
        });
        let single_defs = counts
            .into_iter()
            .filter_map(|(x, (n, e))| match e {
                Some(e @ Expr::AddrOf(_))
                    if n == 1
                        && locals.contains_key(&x)
                        && !address_taken_has(&summary.ir.address_taken, &x) =>
                {
                    Some((x, e))
                }
                _ => None,
            })
            .collect();
        let wild = wild_locals(&summary.ir, &locals, &self.prog.structs);
        let lent = lent_only(&summary, &address_taken, &|n| {
            self.prog.functions_named(n).is_some()
        });
        let base = Arc::new(FrameBase {
            fname,
            summary,
            locals,
            address_taken,
            early,
            calls,
            atomic_objects,
            derived_results,
            single_defs,
            from_calls,
            tested,
            wild,
            local_assigns,
            has_goto,
            backward_goto: gotos
                .iter()
                .any(|(l, g)| labels.get(l).is_none_or(|at| at < g)),
            lent,
            param_copies: std::sync::OnceLock::new(),
            acting_on_zero: std::sync::OnceLock::new(),
            in_unit: crate::units::is_unit(fid.file(self.db).path(self.db)),
        });
        self.d.frame_bases.borrow_mut().insert(fid, base.clone());
        base
    }

    /// Does a branch fact's variable name a global? A member chain
    /// (`conf.quiet`) does when its head does.
    pub(super) fn names_global(&self, v: &Name) -> bool {
        self.prog.global(v).is_some()
            || v.match_indices('.')
                .any(|(i, _)| self.prog.global(&v[..i]).is_some())
    }

    /// Takes the branch facts and spawn guards on variables that are not
    /// globals out of a state about to enter a callee.
    pub(super) fn stash_frame_facts(&self, st: &mut State) -> FrameFacts {
        let global = |v: &Name| self.names_global(v);
        // Symbolic locks stay: a callee that unlocks `&s->m` through its own
        // pointer must release the caller's `&s->m`.
        FrameFacts {
            conds: split_off(&mut st.conds, |c| global(&c.0)),
            guards: split_off(&mut st.guards, |g| global(&g.1)),
            ptrs: std::mem::take(&mut st.ptrs),
            lock_guards: split_off(&mut st.lock_guards, |g| global(&g.0)),
            sym_guards: std::mem::take(&mut st.sym_guards).to_vec(),
            seeded: Vec::new(),
        }
    }

    /// `return v`: what `v` points to here, in this calling context and on
    /// this path, is what the call's result holds (`RETURNED` among the
    /// state's pointers; paths that disagree join, and a path that returns
    /// nothing known drops it, so the caller falls back on the function's
    /// context-free return values).
    pub(super) fn note_return_value(&self, fr: &Frame, v: &Expr, st: &mut State) {
        let vals = self.eval(fr, v, 0);
        let ret = RETURNED;
        if vals.is_empty() && !st.ptrs.iter().any(|(y, _)| &**y == ret) {
            return;
        }
        let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
        set_ptr(&mut p, &Name::from(ret), vals);
        st.ptrs = Arc::new(p);
    }

    /// `x = rhs` for a local pointer whose address is not taken: from here
    /// on this path, `x` holds what `rhs` evaluates to (when that is known).
    #[inline(never)]
    pub(super) fn assign_ptr(&self, fr: &Frame, x: &Name, rhs: &Expr, st: &mut State) {
        self.drop_cells_of(x, st);
        note_newest(fr, x, rhs, st);
        self.note_own(fr, x, rhs, st);
        if !tracks_ptr(fr, x) {
            return;
        }
        let v = self.eval(fr, rhs, 0);
        if v.is_empty() && !st.ptrs.iter().any(|(y, _)| y == x) {
            return;
        }
        let mut p: Vec<(Name, Vals)> = st.ptrs.to_vec();
        set_ptr(&mut p, x, v);
        st.ptrs = Arc::new(p);
        *self.d.cur_ptrs.borrow_mut() = st.ptrs.clone();
    }
}
