//! Per-thread slots of one array: a thread created in a counting loop that
//! receives the loop's counter `i` (as `(void *) i`, or as `&A[i]`, maybe
//! after storing `i` into `A[i]` or its member `A[i].id`, in the same
//! iteration or in a numbering loop just before) has a
//! number of its own, different in each instance. Its entry function's
//! accesses indexed by that number (`a[i]`, `a[j]` for `j` in
//! `[i * 10, i * 10 + 10)`, `a[i * 10 + j]` for `j` in `[0, 10)`,
//! `p->result` for `p = &jobs[i]`, `p[j]` for `p = &a[i * 10]`) touch elements
//! no other instance touches, so the race check does not pair them
//! (`races::slot_apart`).
//!
//! Two halves. At a creation site, [`Walker::site_slot`] decides how the
//! visit hands the counter over; the site keeps it only while every visit
//! agrees and either comes from one calling context and runs in no other
//! loop, or is serial (no thread of the site runs when its counting loop
//! starts: [`SiteSlot`], `WalkData::slot_sites`), and `finish` gives it to
//! the thread when its creator is unique and the site is never replayed
//! (or is serial). In the entry function,
//! [`Walker::slot_tag`] marks an access whose index is the number, from
//! the function's own text alone ([`OwnVars`]): the mark does not depend
//! on the calling context, so copies and incremental updates keep it, and
//! the race check trusts it only in the thread whose entry the function is.
//! A helper's parameter used as an index is marked too
//! ([`SlotArg::Param`]); [`Walker::number_params`] finds, from all
//! summaries, the parameters every call fills with the number, and the race
//! check trusts the mark only for those.
//! Invariant: a mark never makes a race appear, it can only remove pairs of
//! two instances of one slot thread.

use super::frames::Frame;
use super::slot_loops::{
    assignments_of, counter_of, creating_loop, first_store_before, overlaps, slice_stride,
    stored_by_earlier_loop, stores_counter_before, takes_address_of,
};
use super::{uncast, Walker};
use crate::config::CallModel;
use crate::db::FunctionId;
use crate::facts::{member_tag, Slot, SlotArg};
use crate::model::{Elem, LocKey};
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{
    AccessKind, Affine, AffineOffset, Call, Callee, Expr, FnIr, Name, Span, Stmt,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How one visit of a creation site hands its threads their numbers (see
/// [`Walker::site_slot`]).
pub(super) struct VisitSlot {
    arg: SlotArg,
    /// The counting loop runs inside another loop, here or in a caller.
    outer: bool,
    /// The sites with threads that may still run when the walk entered
    /// the counting loop.
    active: crate::model::SiteSet,
}

/// What every visit of a creation site so far agrees on: the slot it
/// hands, and whether the visits are told apart. Two instances with one
/// number never run together when the visits come from one calling
/// context (`one_node`, in no other loop) or when each visit is *serial*:
/// no thread of the site may still run when its counting loop starts, so
/// the threads of earlier visits are all joined (a pool helper called
/// twice, or in a loop, that joins its workers before it returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SiteSlot {
    pub(super) arg: SlotArg,
    node: Option<u32>,
    one_node: bool,
    /// Every visit was serial: replays of it are too (a replayed context
    /// has the very entry state, `State::active` included, of the one
    /// walked).
    pub(super) serial: bool,
}

/// What a thread entry function's text says about its parameter `p`.
#[derive(Default)]
pub(super) struct OwnVars {
    /// Locals holding the number: assigned once, from `(T) p` (a value),
    /// from `*(T *) p` (the number stored behind the pointer) or from
    /// `a->f` (stored in the pointee's member `f`).
    values: Vec<(Name, SlotArg)>,
    /// `p` and the locals assigned once from `(T *) p`.
    ptrs: Vec<Name>,
    /// Accesses `A[i]` of a counting loop over `i` (or through a local
    /// alias `t = &A[i]`, see [`element_aliases`]) that come before a
    /// thread creation in the loop's body: (span, counter, call id).
    creator: Vec<(Span, Name, u32)>,
    /// The parameters never assigned and whose address is never taken, by
    /// position: an index that is one of them is marked
    /// [`SlotArg::Param`].
    params: Vec<(Name, u8)>,
    /// Locals assigned once, from an array's element `A[x]` (`x` a plain
    /// variable), whose address is never taken: (local, element).
    pub(super) element_locals: Vec<(Name, Expr)>,
    /// The parameter itself, when it is the only one and an integer (`int
    /// start(long id)`, created through a cast): handed the counter by
    /// value, it holds the number (see [`Walker::number_params`]).
    int_param: Option<Name>,
    /// The members of the pointee that the function writes through one of
    /// `ptrs` (`None`: the whole pointee): a number in another member can
    /// be read in place (`a[d->id]`).
    written_members: Vec<Option<Name>>,
}

impl OwnVars {
    /// The parameter at position `k`, when it is never assigned and its
    /// address is never taken.
    pub(super) fn fixed_param(&self, k: usize) -> Option<&Name> {
        self.params
            .iter()
            .find(|(_, i)| usize::from(*i) == k)
            .map(|(p, _)| p)
    }

    /// How `x`, used as an index, holds the slot thread's number: a local
    /// derived from the argument, or a parameter ([`SlotArg::Param`]).
    pub(super) fn number_var(&self, x: &Name) -> Option<SlotArg> {
        if let Some((_, from)) = self.values.iter().find(|(y, _)| y == x) {
            return Some(*from);
        }
        self.params
            .iter()
            .find(|(y, _)| y == x)
            .map(|(_, i)| SlotArg::Param(*i))
    }

    fn is_empty(&self) -> bool {
        self.values.is_empty()
            && self.ptrs.is_empty()
            && self.creator.is_empty()
            && self.params.is_empty()
    }
}

/// The accesses `A[i]` (`A[i].f`) in counting loops over `i` that precede
/// a thread creation of the same iteration (pre-order), with that call.
fn creator_accesses(ir: &FnIr, models: &BTreeMap<u32, CallModel>) -> Vec<(Span, Name, u32)> {
    let mut out = Vec::new();
    visit_stmts(&ir.body, &mut |s| {
        let Stmt::Loop {
            body,
            var: Some(v),
            bound: Some(_),
            ..
        } = s
        else {
            return;
        };
        let aliases = element_aliases(ir, body, v);
        // An alias stands for this iteration's element once assigned.
        let mut live: Vec<Name> = Vec::new();
        let mut pending: Vec<Span> = Vec::new();
        visit_stmts(body, &mut |s| match s {
            Stmt::Assign {
                lhs: Expr::Var(x), ..
            } if aliases.iter().any(|(y, _)| y == x) => live.push(x.clone()),
            Stmt::Access(a)
                if counter_index(&a.place) == Some(v)
                    || counter_index(inside_members(&a.place)) == Some(v)
                    || deref_root(&a.place).is_some_and(|r| live.contains(r)) =>
            {
                pending.push(a.span)
            }
            Stmt::Call(c) if matches!(models.get(&c.id), Some(CallModel::Create { .. })) => {
                for sp in pending.drain(..) {
                    out.push((sp, v.clone(), c.id));
                }
            }
            // A library call's accesses of its pointer arguments' objects
            // (`memset(A[i].buf, ..)`) carry the call's span.
            Stmt::Call(c)
                if c.args
                    .iter()
                    .any(|a| counter_index(inside_members(uncast(a))) == Some(v)) =>
            {
                pending.push(c.span)
            }
            _ => {}
        });
    });
    out
}

/// Locals that stand for the element `A[v]` of a counting loop over `v`
/// (`t = threads + i;`, `t = &threads[i];`): assigned by a statement of the
/// loop's body itself (not inside a branch), from the element's address,
/// and nowhere else in the function; their address is never taken. With
/// the element expression `A[v]`.
fn element_aliases(ir: &FnIr, body: &[Stmt], v: &Name) -> Vec<(Name, Expr)> {
    let mut out = Vec::new();
    for s in body {
        let Stmt::Assign {
            lhs: Expr::Var(x),
            rhs,
        } = s
        else {
            continue;
        };
        let Expr::AddrOf(e) = uncast(rhs) else {
            continue;
        };
        if !matches!(&**e, Expr::Index { base, var: Some(y), .. } if y == v && !has_index(base)) {
            continue;
        }
        if assignments_of(ir, x) == 1
            && !ir.address_taken.contains(x)
            && !ir.params.iter().any(|p| p.name == *x)
        {
            out.push((x.clone(), (**e).clone()));
        }
    }
    out
}

/// The element `e` lies in: `e` without the members taken of it with `.`
/// (`A[i]` of `A[i].f.g`).
fn element_of(e: &Expr) -> &Expr {
    let mut e = e;
    while let Expr::Field {
        base, arrow: false, ..
    } = e
    {
        e = base;
    }
    e
}

/// The place `e` lies in once the steps that may stay inside it are taken
/// off: indexes (`A[i].buf[j]`), whole-member dereferences (`memset(A[i].buf,
/// ..)` writes `*A[i].buf`) and `.` members. From the text alone: whether
/// each step stays in the object (an array member) or leaves it (a pointer
/// member) is for the caller to check against the object the access
/// denotes (`Walker::creator_member_slot`).
fn inside_members(e: &Expr) -> &Expr {
    let mut e = e;
    loop {
        match e {
            Expr::Index { base, .. } if has_index(base) => e = base,
            Expr::Deref(base) if has_index(base) => e = base,
            Expr::Field {
                base, arrow: false, ..
            } if has_index(base) => e = base,
            _ => return e,
        }
    }
}

/// The index variable of `A[i]` or `A[i].f.g` (no other index or
/// dereference on the way).
fn counter_index(e: &Expr) -> Option<&Name> {
    match element_of(e) {
        Expr::Index {
            base, var: Some(x), ..
        } if !has_index(base) => Some(x),
        _ => None,
    }
}

/// The root variable of a place reached through one dereference and fields
/// only (`x->f`, `*x`, `(*x).f.g`, `x[0]`): `None` when an index or a
/// second dereference is on the way.
pub(super) fn deref_root(e: &Expr) -> Option<&Name> {
    match e {
        Expr::Field {
            base, arrow: false, ..
        } => deref_root(base),
        Expr::Field {
            base, arrow: true, ..
        }
        | Expr::Deref(base) => match uncast(base) {
            Expr::Var(x) => Some(x),
            _ => None,
        },
        Expr::Index {
            base,
            index: Some(0),
            ..
        } => match uncast(base) {
            Expr::Var(x) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

/// The own-number variables of a single-parameter function.
fn own_vars(ir: &FnIr, fname: &str, models: &BTreeMap<u32, CallModel>) -> OwnVars {
    let mut out = OwnVars {
        creator: creator_accesses(ir, models),
        ..OwnVars::default()
    };
    // Each local's assignments (declarations with an initializer included).
    let mut assigns: Vec<(Name, Expr)> = Vec::new();
    let mut locals: Vec<Name> = Vec::new();
    visit_stmts(&ir.body, &mut |s| match s {
        Stmt::Assign {
            lhs: Expr::Var(x),
            rhs,
        } => assigns.push((x.clone(), rhs.clone())),
        Stmt::Decl(d) if !d.ty.is_static => locals.push(d.name.clone()),
        _ => {}
    });
    out.params = ir
        .params
        .iter()
        .enumerate()
        .filter(|(_, q)| {
            !ir.address_taken.contains(&q.name) && !assigns.iter().any(|(x, _)| x == &q.name)
        })
        .filter_map(|(i, q)| Some((q.name.clone(), u8::try_from(i).ok()?)))
        .collect();
    // Locals that hold what one element of an array held (`me = ws[id]`):
    // assigned once, their address never taken (see `inject.rs`).
    for x in locals.iter().filter(|x| !ir.address_taken.contains(x)) {
        let mut it = assigns.iter().filter(|(y, _)| y == x);
        let (Some((_, rhs)), None) = (it.next(), it.next()) else {
            continue;
        };
        let mut e = uncast(rhs);
        if let Expr::Deref(inner) = e {
            if let Expr::AddrOf(el) = uncast(inner) {
                e = uncast(el);
            }
        }
        if let Expr::Index {
            base, var: Some(_), ..
        } = e
        {
            if !has_index(base) {
                out.element_locals.push((x.clone(), e.clone()));
            }
        }
    }
    let [param] = &ir.params[..] else {
        return out;
    };
    let p = &param.name;
    // A recursive entry would see another argument in the inner call.
    let mut recursive = false;
    visit_calls(&ir.body, &mut |c: &Call| {
        recursive |= matches!(&c.callee, Callee::Direct(n) if &**n == fname);
    });
    if recursive || ir.address_taken.contains(p) {
        return out;
    }
    if assigns.iter().any(|(x, _)| x == p) {
        return out;
    }
    let single = |x: &Name| -> Option<&Expr> {
        let mut it = assigns.iter().filter(|(y, _)| y == x);
        let first = it.next()?;
        match it.next() {
            None => Some(&first.1),
            Some(_) => None,
        }
    };
    out.ptrs.push(p.clone());
    if param.ty.pointer == 0 && !param.ty.array {
        out.int_param = Some(p.clone());
    }
    let candidates: Vec<&Name> = locals
        .iter()
        .filter(|x| !ir.address_taken.contains(x))
        .collect();
    for x in &candidates {
        if let Some(Expr::Var(y)) = single(x).map(uncast) {
            if y == p && !out.ptrs.contains(x) {
                out.ptrs.push((*x).clone());
            }
        }
    }
    // The number behind the pointer is trusted only when the function
    // never writes through it; a number in a member of the pointee, when
    // it never writes that member (nor the whole pointee).
    let mut writes_through = false;
    let mut written_members: Vec<Option<Name>> = Vec::new();
    visit_stmts(&ir.body, &mut |s| {
        if let Stmt::Access(a) = s {
            if a.kind == AccessKind::Write {
                if let Some(r) = deref_root(&a.place) {
                    if out.ptrs.contains(r) {
                        writes_through = true;
                        written_members.push(pointee_member(&a.place).cloned());
                    }
                }
            }
        }
    });
    for x in &candidates {
        let Some(rhs) = single(x).map(uncast) else {
            continue;
        };
        let from = match rhs {
            Expr::Var(y) if y == p => Some(SlotArg::Value),
            e if !writes_through
                && matches!(e, Expr::Deref(_) | Expr::Index { .. })
                && deref_root(e).is_some_and(|r| out.ptrs.contains(r)) =>
            {
                Some(SlotArg::Stored)
            }
            // `int id = a->id;` for `a = (struct arg *) p`.
            Expr::Field {
                base,
                field,
                arrow: true,
            } if matches!(uncast(base), Expr::Var(r) if out.ptrs.contains(r))
                && !written_members
                    .iter()
                    .any(|m| m.as_ref().is_none_or(|m| m == field)) =>
            {
                Some(SlotArg::Member(member_tag(field)))
            }
            _ => None,
        };
        if let Some(from) = from {
            out.values.push(((*x).clone(), from));
        }
    }
    out.written_members = written_members;
    out
}

impl<'a> Walker<'a> {
    /// The own-number variables of `fid` (cached per walker).
    pub(super) fn own_vars_of(&self, fr: &Frame) -> Arc<OwnVars> {
        if let Some(v) = self.own_vars.borrow().get(&fr.fid) {
            return v.clone();
        }
        let v = Arc::new(own_vars(&fr.summary.ir, &fr.fname, &fr.summary.models));
        self.own_vars.borrow_mut().insert(fr.fid, v.clone());
        v
    }

    /// The own-number variables of `fid`, by id (cached like
    /// [`own_vars_of`](Self::own_vars_of)).
    fn own_vars_by_id(&self, fid: FunctionId) -> Arc<OwnVars> {
        if let Some(v) = self.own_vars.borrow().get(&fid) {
            return v.clone();
        }
        let s = self.summary(fid);
        let v = Arc::new(own_vars(&s.ir, fid.name(self.db), &s.models));
        self.own_vars.borrow_mut().insert(fid, v.clone());
        v
    }

    /// The parameters that hold the number of a slot thread whose entry is
    /// `entry`, handed its number as `arg`: a function's parameter at
    /// position `k` (never assigned, its address never taken) when every
    /// call of the function in the program is a direct call, from the entry
    /// or from a function already found, that passes there a local holding
    /// the number (`long id = (long)arg; do_work(id);`) or such a parameter
    /// (`do_work(id)` calling `store(id)`). The function must have one
    /// definition, not be `main`, and never be used as a value (no call
    /// through a pointer may reach it, no global initializer names it).
    pub(super) fn number_params(&self, entry: FunctionId, arg: SlotArg) -> Vec<(FunctionId, u8)> {
        let own = self.own_vars_by_id(entry);
        let holds = |from: SlotArg| {
            Slot {
                pos: 0,
                stride: 1,
                from,
                before: 0,
                via: 0,
            }
            .holds_for(arg)
        };
        let mut holders: Vec<(FunctionId, Vec<Name>)> = vec![(
            entry,
            own.values
                .iter()
                .filter(|(_, from)| holds(*from))
                .map(|(x, _)| x.clone())
                .collect(),
        )];
        let mut out: Vec<(FunctionId, u8)> = Vec::new();
        // The entry's own integer parameter, handed the counter by value.
        if let (Some(p), SlotArg::Value) = (&own.int_param, arg) {
            holders[0].1.push(p.clone());
            out.push((entry, 0));
        }
        if holders[0].1.is_empty() {
            return Vec::new();
        }
        let mut rejected: Vec<(Name, u8)> = Vec::new();
        // Each round looks at the calls of the functions found so far.
        let mut next = 0;
        while next < holders.len() {
            let (f, names) = holders[next].clone();
            next += 1;
            let mut candidates: Vec<(Name, u8)> = Vec::new();
            visit_calls(&self.summary(f).ir.body, &mut |c: &Call| {
                let Callee::Direct(n) = &c.callee else { return };
                for (k, a) in c.args.iter().enumerate() {
                    if matches!(uncast(a), Expr::Var(x) if names.contains(x)) {
                        if let Ok(k) = u8::try_from(k) {
                            if !candidates.contains(&(n.clone(), k)) {
                                candidates.push((n.clone(), k));
                            }
                        }
                    }
                }
            });
            for (n, k) in candidates {
                if rejected.contains(&(n.clone(), k)) {
                    continue;
                }
                let g = match self.prog.functions_named(&n) {
                    Some(gs) if gs.len() == 1 && &*n != "main" => gs[0],
                    _ => continue,
                };
                if out.contains(&(g, k)) {
                    continue;
                }
                let Some(pname) = self
                    .own_vars_by_id(g)
                    .params
                    .iter()
                    .find(|(_, i)| *i == k)
                    .map(|(p, _)| p.clone())
                else {
                    rejected.push((n, k));
                    continue;
                };
                if !self.every_call_passes(&n, k, &holders) {
                    // A caller found later may still make it hold.
                    continue;
                }
                out.push((g, k));
                match holders.iter_mut().find(|(h, _)| *h == g) {
                    Some((_, ns)) => ns.push(pname),
                    None => holders.push((g, vec![pname])),
                }
                // Its callers' facts changed: look at them again.
                next = next.min(holders.iter().position(|(h, _)| *h == g).unwrap_or(next));
            }
        }
        out
    }

    /// Is every use of the function named `n` in the program a direct call
    /// from one of `holders` passing, at position `k`, one of that
    /// function's holder names?
    fn every_call_passes(&self, n: &Name, k: u8, holders: &[(FunctionId, Vec<Name>)]) -> bool {
        if self.prog.named_by_global_init(n) {
            return false;
        }
        self.direct_calls_only(n, |f, c| {
            let names = holders.iter().find(|(h, _)| *h == f).map(|(_, ns)| ns);
            let a = c.args.get(k as usize).map(uncast);
            matches!((a, names), (Some(Expr::Var(x)), Some(ns)) if ns.contains(x))
        })
        .is_some_and(|calls| calls > 0)
    }

    /// How this visit of the creation call `c` hands its thread a number of
    /// its own: the call is in a counting loop of this function (inside it,
    /// only loops that retry the call until it succeeds: [`retries`]; the
    /// loops around it, here or in a caller, are noted for
    /// [`note_site_slot`](Self::note_site_slot)), and `arg` is the loop's counter or the
    /// address of the element it indexes. A counter that is a struct's
    /// member counts only as a value, and only when nothing else may write
    /// it ([`Walker::member_counter`]).
    pub(super) fn site_slot(
        &mut self,
        fr: &Frame,
        c: &Call,
        arg: Option<&Expr>,
    ) -> Option<VisitSlot> {
        let (counting, retries) = creating_loop(&fr.summary.ir.body, c.id)?;
        let at = self.d.loops.len().checked_sub(1 + retries)?;
        if self.d.loops[at..]
            .iter()
            .any(|l| l.depth != self.d.stack.len())
        {
            return None;
        }
        let arg = self.counting_slot(fr, c, counting, at, arg)?;
        Some(VisitSlot {
            arg,
            outer: at > 0,
            active: self.d.loops[at].active.clone(),
        })
    }

    /// How the counting loop `counting`, the walk's loop `at`, hands its
    /// thread the counter (see [`site_slot`](Self::site_slot)).
    fn counting_slot(
        &mut self,
        fr: &Frame,
        c: &Call,
        counting: &Stmt,
        at: usize,
        arg: Option<&Expr>,
    ) -> Option<SlotArg> {
        // A member counter (`o.cur_host`) counts only when nothing else
        // may write it.
        if let Stmt::Loop {
            member: Some(v), ..
        } = counting
        {
            let counts = self.member_counter(fr, v);
            return (counts && counter_of(uncast(arg?)).as_deref() == Some(&**v))
                .then_some(SlotArg::Value);
        }
        let super::WalkedLoop {
            bound: Some(_),
            var: Some(v),
            ..
        } = &self.d.loops[at]
        else {
            return None;
        };
        let Stmt::Loop {
            body,
            var: Some(lv),
            bound: Some(_),
            ..
        } = counting
        else {
            return None;
        };
        if lv != v || fr.address_taken.contains(v) {
            return None;
        }
        // `t = &A[i]; .. create(.., t)` hands `&A[i]`.
        let arg = uncast(arg?);
        let aliases = element_aliases(&fr.summary.ir, body, v);
        let alias = match arg {
            Expr::Var(x) => aliases
                .iter()
                .find(|(y, _)| y == x)
                .map(|(_, e)| Expr::AddrOf(Box::new(e.clone()))),
            _ => None,
        };
        match alias.as_ref().unwrap_or(arg) {
            Expr::Var(x) if x == v => Some(SlotArg::Value),
            // `p = malloc(..); *p = i; create(.., p)`: a fresh object per
            // iteration that holds the number.
            Expr::Var(x) => self.fresh_holder(fr, body, x, v, c.id),
            Expr::AddrOf(inner) => match &**inner {
                Expr::Index {
                    base, var: Some(x), ..
                } if x == v => {
                    // Aliases of this very element (`t = &A[i]`).
                    let names: Vec<Name> = aliases
                        .iter()
                        .filter(|(_, e)| e == &**inner)
                        .map(|(y, _)| y.clone())
                        .collect();
                    Some(
                        stores_counter_before(body, base, v, &names, c.id)
                            .or_else(|| stored_by_earlier_loop(&fr.summary.ir.body, c.id, base))
                            .unwrap_or(SlotArg::Pointer),
                    )
                }
                // `&A[i * K]`: a slice of `K` elements.
                Expr::Index {
                    base,
                    var: None,
                    affine: Some(a),
                    ..
                } if a.scaled == *v
                    && a.member.is_none()
                    && !has_index(base)
                    && matches!(a.offset, AffineOffset::None | AffineOffset::Int(0)) =>
                {
                    u32::try_from(a.k)
                        .ok()
                        .filter(|k| *k > 0)
                        .map(SlotArg::Slice)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// May the member counter `v` (`o.cur_host`) of a creation loop in
    /// `fr` count, taking each value of its range once? Its variable is a
    /// local whose address is never taken, or a global whose address
    /// nothing takes (no `&o`, `&o.f`, no global initializer naming it)
    /// and that no other function writes, as a whole or in a member
    /// overlapping `v`, and `fr` writes only as `v` itself. The loop's own
    /// body does not assign it (the lowering's range says so). The global joins `WalkData::text_names`:
    /// an edit of any function mentioning it falls back to a full walk.
    fn member_counter(&mut self, fr: &Frame, v: &str) -> bool {
        let root = v.split('.').next().unwrap_or(v);
        let local = fr.locals.get(root).map(|t| !t.is_static);
        if local == Some(false)
            || local.is_none() && self.prog.global(root).is_none()
            || self
                .prog
                .global_inits
                .values()
                .flatten()
                .any(|r| &**r == root)
        {
            return false;
        }
        let fids: Vec<FunctionId> = if local.is_some() {
            if fr.address_taken.contains(root) {
                return false;
            }
            vec![fr.fid]
        } else {
            let name = Name::from(root);
            if !self.d.text_names.contains(&name) {
                self.effect();
                self.d.text_names.push(name);
                self.d.text_names.sort();
            }
            self.prog.functions.values().flatten().copied().collect()
        };
        for f in fids {
            let summary = self.summary(f);
            let mut bad = false;
            visit_stmts(&summary.ir.body, &mut |s| {
                bad = bad
                    || match s {
                        // The creating function may write the counter
                        // itself (the loop's start and step; its body does
                        // not, or the loop has no range), not a part or
                        // the whole of its variable (`o = saved`).
                        Stmt::Access(a) => {
                            a.kind == AccessKind::Write
                                && counter_of(uncast(&a.place))
                                    .is_some_and(|p| overlaps(&p, v) && (f != fr.fid || p != v))
                        }
                        Stmt::Assign { lhs, rhs } => {
                            takes_address_of(lhs, root) || takes_address_of(rhs, root)
                        }
                        Stmt::Call(c) => c.args.iter().any(|a| takes_address_of(a, root)),
                        Stmt::Return { value: Some(e), .. } => takes_address_of(e, root),
                        _ => false,
                    };
            });
            if bad {
                return false;
            }
        }
        true
    }

    /// How a local `x` handed to the creation call `call` holds the
    /// counter `v` of the loop whose body is `body`: `x` is assigned once in
    /// the function, by a statement of the body itself (not inside a
    /// branch), from an allocation, so each iteration hands an object of
    /// its own; and before the call the same iteration stores `v` behind it
    /// (`*x = v`, `x[0] = v`: `Stored`) or into a member (`x->id = v`:
    /// `Member`). The first such store decides.
    fn fresh_holder(
        &self,
        fr: &Frame,
        body: &[Stmt],
        x: &Name,
        v: &Name,
        call: u32,
    ) -> Option<SlotArg> {
        if fr.address_taken.contains(x)
            || !fr.locals.contains_key(x)
            || fr.summary.ir.params.iter().any(|p| p.name == *x)
        {
            return None;
        }
        let assigned = assignments_of(&fr.summary.ir, x);
        let fresh = body.iter().any(|s| {
            matches!(s, Stmt::Assign { lhs: Expr::Var(y), rhs } if y == x
                && matches!(uncast(rhs), Expr::CallResult(id) if self.allocates_at(fr, *id)))
        });
        if assigned != 1 || !fresh {
            return None;
        }
        let behind = |e: &Expr| match e {
            Expr::Deref(b) => matches!(uncast(b), Expr::Var(y) if y == x),
            Expr::Index {
                base,
                index: Some(0),
                ..
            } => matches!(uncast(base), Expr::Var(y) if y == x),
            _ => false,
        };
        first_store_before(body, v, call, |lhs| match lhs {
            e if behind(e) => Some(SlotArg::Stored),
            Expr::Field {
                base,
                field,
                arrow: true,
            } if matches!(uncast(base), Expr::Var(y) if y == x) => {
                Some(SlotArg::Member(member_tag(field)))
            }
            _ => None,
        })
    }

    /// Keeps, per site, the slot its visits agree on (see the module doc).
    pub(super) fn note_site_slot(&mut self, site: u32, visit: Option<VisitSlot>) {
        let node = self.d.node_stack.last().copied();
        let this = visit.and_then(|v| {
            let serial = !v.active.contains(site);
            (serial || !v.outer).then_some(SiteSlot {
                arg: v.arg,
                node,
                one_node: true,
                serial,
            })
        });
        let e = self.d.slot_sites.entry(site).or_insert(this);
        let (Some(s), Some(t)) = (e.as_mut(), this) else {
            *e = None;
            return;
        };
        s.one_node &= s.node == t.node;
        s.serial &= t.serial;
        if s.arg != t.arg || !(s.one_node || s.serial) {
            *e = None;
        }
    }

    /// The slot of an access of `place`, which denotes `k`, in `fr`: its
    /// index is the function's own number when the function is a slot
    /// thread's entry.
    pub(super) fn slot_tag(
        &self,
        fr: &Frame,
        place: &Expr,
        span: Span,
        k: &LocKey,
    ) -> Option<Slot> {
        let own = self.own_vars_of(fr);
        if own.is_empty() {
            return None;
        }
        let mut unknown = k
            .path
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, Elem::Index(None)));
        let pos = u8::try_from(unknown.next()?.0).ok()?;
        // The creating loop's `memset(A[i].buf, ..)`, `A[i].buf[j]` before
        // creating thread `i`: inside an array member of element `i`.
        if let Some(slot) = self.creator_member_slot(place, span, k, pos, &own) {
            return Some(slot);
        }
        if unknown.next().is_some() {
            // `p->buf[j]`, `memset(p->buf, ..)` with `p = &jobs[i]`: inside
            // an array member of the argument's element, whose own index
            // is the first unknown one of the path.
            return self.member_array_slot(fr, place, k, pos, &own);
        }
        // The creating loop's `A[i]` before creating thread `i`.
        if let Some((_, _, call)) = own.creator.iter().find(|(s, v, _)| {
            *s == span && (counter_index(place) == Some(v) || deref_root(place).is_some())
        }) {
            return Some(Slot {
                pos,
                stride: 1,
                from: SlotArg::Creator,
                before: *call,
                via: 0,
            });
        }
        // `p[j]` inside the slice the thread is handed (`&A[i * K]`).
        if let Some(slot) = self.slice_slot(fr, place, pos, &own) {
            return Some(slot);
        }
        // `p->result` with `p = &jobs[i]`: the element of the argument.
        if let Some(r) = deref_root(place) {
            if own.ptrs.contains(r) && !has_index(place) {
                return Some(Slot {
                    pos,
                    stride: 1,
                    from: SlotArg::Pointer,
                    before: 0,
                    via: 0,
                });
            }
        }
        // `p->buf[3]`: inside an array member of that element.
        if let Some(slot) = self.member_array_slot(fr, place, k, pos, &own) {
            return Some(slot);
        }
        // `a[x]`, `a[x].f`, or `a[j]` in a slice loop of `x`.
        let Expr::Index {
            base, var, affine, ..
        } = element_of(place)
        else {
            return None;
        };
        if has_index(base) {
            return None;
        }
        if let Some(a) = affine {
            return self.affine_slot(fr, a, pos, &own);
        }
        let x = var.as_ref()?;
        // A local holding the number, or a parameter that may (see
        // `number_params`).
        if let Some(from) = own.number_var(x) {
            return Some(Slot {
                pos,
                stride: 1,
                from,
                before: 0,
                via: 0,
            });
        }
        // A counter of a loop of this frame whose range is a slice.
        if fr.address_taken.contains(x) || !fr.locals.contains_key(x) {
            return None;
        }
        let depth = self.d.stack.len();
        for l in self.d.loops.iter().rev() {
            if l.depth != depth {
                break;
            }
            if l.var.as_ref() != Some(x) {
                continue;
            }
            let bound = l.bound.as_ref()?;
            return own.values.iter().find_map(|(y, from)| {
                slice_stride(bound, y).map(|stride| Slot {
                    pos,
                    stride,
                    from: *from,
                    before: 0,
                    via: 0,
                })
            });
        }
        None
    }

    /// The slot of an index `x * K + y` whose `x` holds the number, when
    /// the index stays in `[x * K, x * K + K)`: `y` is absent, a constant
    /// in `[0, K)`, or the counter of a loop of this frame over `[0, L)`
    /// with `L <= K` (`L` and `K` the same constant or the same macro).
    fn affine_slot(&self, fr: &Frame, a: &Affine, pos: u8, own: &OwnVars) -> Option<Slot> {
        let from = match &a.member {
            None => own.values.iter().find(|(y, _)| *y == a.scaled)?.1,
            // `a[d->id]`: the number read in place from a member that the
            // function never writes.
            Some(f) => {
                let written = own
                    .written_members
                    .iter()
                    .any(|m| m.as_ref().is_none_or(|m| m == f));
                if !own.ptrs.contains(&a.scaled) || written {
                    return None;
                }
                SlotArg::Member(member_tag(f))
            }
        };
        let stride = u32::try_from(a.k).ok().filter(|k| *k > 0)?;
        match &a.offset {
            AffineOffset::None => {}
            AffineOffset::Int(c) => {
                if *c < 0 || *c >= a.k {
                    return None;
                }
            }
            AffineOffset::Var(y) => {
                let hi = self.zero_based_loop(fr, y)?;
                let fits = hi == &*a.k_text || hi.parse::<i64>().is_ok_and(|l| l > 0 && l <= a.k);
                if !fits {
                    return None;
                }
            }
        }
        Some(Slot {
            pos,
            stride,
            from,
            before: 0,
            via: 0,
        })
    }

    /// The slot of `p[j]` (`p[C]`) for a pointer `p` the thread is handed,
    /// `j` the counter of a loop of this frame over `[0, L)` (`C` below a
    /// constant `L`): inside the slice when the thread is handed the start
    /// of one of at least `L` elements ([`SlotArg::Slice`]).
    fn slice_slot(&self, fr: &Frame, place: &Expr, pos: u8, own: &OwnVars) -> Option<Slot> {
        let Expr::Index {
            base, index, var, ..
        } = element_of(place)
        else {
            return None;
        };
        let Expr::Var(p) = uncast(base) else {
            return None;
        };
        if !own.ptrs.contains(p) {
            return None;
        }
        let len = match (index, var) {
            (Some(c), _) => c.checked_add(1).filter(|l| *c >= 0 && *l > 0)?,
            (None, Some(y)) => {
                let hi = self.zero_based_loop(fr, y)?;
                hi.parse::<i64>().ok().filter(|l| *l > 0)?
            }
            _ => return None,
        };
        Some(Slot {
            pos,
            stride: 0,
            from: SlotArg::Slice(u32::try_from(len).ok()?),
            before: 0,
            via: 0,
        })
    }

    /// The end `L` of the range `[0, L)` of the counting loop of this
    /// frame whose counter is the local `y`, as written (a step other than
    /// one stays in the range too).
    fn zero_based_loop<'b>(&'b self, fr: &Frame, y: &Name) -> Option<&'b str> {
        if fr.address_taken.contains(y) || !fr.locals.contains_key(y) {
            return None;
        }
        let depth = self.d.stack.len();
        let l = self
            .d
            .loops
            .iter()
            .rev()
            .take_while(|l| l.depth == depth)
            .find(|l| l.var.as_ref() == Some(y))?;
        let (lo, hi) = l.bound.as_ref()?.split_once('<')?;
        (lo == "0").then(|| hi.split_once("+=").map_or(hi, |(h, _)| h))
    }

    /// The slot of the creating loop's access `place` when it lies in
    /// array members of the element `A[i]` that thread `i` is handed
    /// (`memset(A[i].buf, ..)`, `A[i].rows[j][k]`): every step off the
    /// element stays in it (an array member, never a pointer member:
    /// `A[i].ip[0]` is another object), and the element's index is the
    /// path's first unknown one.
    fn creator_member_slot(
        &self,
        place: &Expr,
        span: Span,
        k: &LocKey,
        pos: u8,
        own: &OwnVars,
    ) -> Option<Slot> {
        let (_, _, call) = own.creator.iter().find(|(s, _, _)| *s == span)?;
        // The steps off the element, outermost first: `Some(member)` for
        // `.member`, `None` for an index.
        let mut steps: Vec<Option<&Name>> = Vec::new();
        let mut e = place;
        loop {
            match e {
                Expr::Index { base, .. } if has_index(base) => {
                    steps.push(None);
                    e = base;
                }
                // The whole member (`memset(A[i].buf, ..)`).
                Expr::Deref(base) if matches!(**base, Expr::Field { .. }) && has_index(base) => {
                    e = base
                }
                Expr::Field {
                    base,
                    field,
                    arrow: false,
                } if has_index(base) => {
                    steps.push(Some(field));
                    e = base;
                }
                _ => break,
            }
        }
        let v = counter_index(e)?;
        if !own.creator.iter().any(|(s, x, _)| *s == span && x == v) {
            return None;
        }
        // The object the access denotes is the element's own storage: its
        // path is the element's index followed by exactly these steps. A
        // step through a pointer member (`A[i].ip[0]`) would have left
        // for another object, whose path this is not.
        let rest = k.path.get(pos as usize + 1..)?;
        let same = rest.len() == steps.len()
            && rest
                .iter()
                .zip(steps.iter().rev())
                .all(|(p, s)| match (p, s) {
                    (Elem::Field(f), Some(g)) => f == *g,
                    (Elem::Index(_), None) => true,
                    _ => false,
                });
        let first = k.path.iter().position(|x| matches!(x, Elem::Index(_)));
        (first == Some(pos as usize) && same).then_some(Slot {
            pos,
            stride: 1,
            from: SlotArg::Creator,
            before: *call,
            via: 0,
        })
    }

    /// The slot of `place` (`p->buf[j]`, `p->m.rows[j][k]`) when it lies in
    /// array members of the element that own pointer `p` points to: the
    /// element is the path's first index, at `pos`, and every later index
    /// of the path is one of `place`'s indexes into an array member, none
    /// through a pointer member (`p->ip[0]` is another object).
    fn member_array_slot(
        &self,
        fr: &Frame,
        place: &Expr,
        k: &LocKey,
        pos: u8,
        own: &OwnVars,
    ) -> Option<Slot> {
        let mut e = place;
        let mut member_indexes = 0usize;
        loop {
            match e {
                Expr::Index { base, .. } if self.is_array(fr, base) => {
                    member_indexes += 1;
                    e = base;
                }
                // The whole member (`memset(p->buf, ..)`): no index.
                Expr::Deref(base) if self.is_array(fr, base) => e = base,
                Expr::Field {
                    base, arrow: false, ..
                } => e = base,
                _ => break,
            }
        }
        let r = deref_root(e)?;
        let indexes = k
            .path
            .iter()
            .filter(|x| matches!(x, Elem::Index(_)))
            .count();
        let first = k.path.iter().position(|x| matches!(x, Elem::Index(_)));
        (own.ptrs.contains(r)
            && !has_index(e)
            && first == Some(pos as usize)
            && indexes == member_indexes + 1)
            .then_some(Slot {
                pos,
                stride: 1,
                from: SlotArg::Pointer,
                before: 0,
                via: 0,
            })
    }
}

/// The member of the pointee that a place reached through one dereference
/// lies in (`f` of `p->f.g`, `(*p).f`, `p[0].f`): `None` for the whole
/// pointee (`*p`, `p[0]`).
fn pointee_member(e: &Expr) -> Option<&Name> {
    let mut e = e;
    let mut member = None;
    loop {
        match e {
            Expr::Field {
                base,
                field,
                arrow: false,
            } => {
                member = Some(field);
                e = base;
            }
            Expr::Field {
                field, arrow: true, ..
            } => return Some(field),
            // `p->buf[3]` lies in `buf`; `p[0].f` in `f`.
            Expr::Index { base, .. } => e = base,
            _ => return member,
        }
    }
}

/// Does the place index anything on its way (`a[i]->f`)?
pub(super) fn has_index(e: &Expr) -> bool {
    match e {
        Expr::Index { .. } => true,
        Expr::Field { base, .. }
        | Expr::Deref(base)
        | Expr::Cast { value: base, .. }
        | Expr::Offset(base)
        | Expr::AddrOf(base) => has_index(base),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::slice_stride;

    #[test]
    fn slices_of_the_own_number() {
        assert_eq!(slice_stride("i*10<i*10+10", "i"), Some(10));
        assert_eq!(slice_stride("10*i<10*i+4", "i"), Some(10));
        assert_eq!(slice_stride("i*8<(i+1)*8", "i"), Some(8));
        assert_eq!(slice_stride("i*10<i*10+11", "i"), None);
        assert_eq!(slice_stride("i*n<i*n+n", "i"), None);
        assert_eq!(slice_stride("0<10", "i"), None);
    }
}
