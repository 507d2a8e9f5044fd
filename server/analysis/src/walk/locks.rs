//! Lock resolution: which lock objects a lock argument denotes
//! ([`Walker::lock_keys`]), symbolic locks held through a pointer
//! (`&q->lock` guards accesses through `q`), and index and region locks
//! (`lock(&L[i])` guards `A[i]`, and what is derived from it; `lock(&p[i].m)`
//! guards `p[i]` of a heap array behind pointer `p`).
//!
//! Owns no walker state; it reads the frame and the state's `syms`.
//! Invariants: a symbolic lock is rooted at a plain pointer or index
//! variable and dies when that variable is assigned ([`Walker::retag`]);
//! one that names a pointer in its marker (`@*p`, `@*q->items`) dies too
//! when that pointer or a member of that name is assigned, and crosses a
//! call only renamed to the other side's names ([`rename_marker`]).

use super::frames::Frame;
use super::state::State;
use super::wild::is_wild;
use super::{common, targets, Walker, MAX_TRACKED};
use crate::model::*;
use racelens_syntax::{Expr, Name};

/// `a[4].f` -> ("a", 0, Some(4)): the first index below a named array (a global or
/// local, through fields: `c.slots[2]` is "c.slots"), its position in the
/// path, and its constant value if it has one.
fn first_index(k: &LocKey) -> Option<(String, usize, Option<i64>)> {
    // Most locations have no index: no name to build then.
    if !k.path.iter().any(|e| matches!(e, Elem::Index(_))) {
        return None;
    }
    let mut name = match &k.base {
        Base::Global(n) => n.to_string(),
        Base::Local { var, .. } => var.to_string(),
        _ => return None,
    };
    for (i, e) in k.path.iter().enumerate() {
        match e {
            Elem::Field(f) => {
                name.push('.');
                name.push_str(f);
            }
            Elem::Index(ix) => return Some((name, i, *ix)),
        }
    }
    None
}

/// `a[4].f` -> ("a", 4, [f]): an element of a named array with a constant
/// index, and the path below it.
pub(super) fn const_indexed(k: &LocKey) -> Option<(String, i64, &[Elem])> {
    match first_index(k)? {
        (name, at, Some(ix)) => Some((name, ix, &k.path[at + 1..])),
        _ => None,
    }
}

/// `a[*].f` -> ("a", 0): a named array's unknown element, and the position
/// of its index in the path.
pub(super) fn any_indexed(k: &LocKey) -> Option<(String, usize)> {
    match first_index(k)? {
        (name, at, None) => Some((name, at)),
        _ => None,
    }
}

/// `a` or `c.slots`: the name of an array given as a variable or a field
/// path over one.
pub(super) fn array_path(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(a) => Some(a.to_string()),
        Expr::Field {
            base,
            field,
            arrow: false,
        } => Some(format!("{}.{field}", array_path(base)?)),
        _ => None,
    }
}

/// Is a symbolic-lock path a region tag (see `State::syms`)?
pub(super) fn is_region(path: &[Elem]) -> bool {
    matches!(path.first(), Some(Elem::Field(f)) if f.starts_with('#'))
}

/// The lock a region tag `[#arr, @lock, [*], rest..]` stands for: the element
/// of the lock array with the index of the data array.
pub(super) fn region_lock(tag: &[Elem]) -> Option<LocKey> {
    let (Some(Elem::Field(arr)), Some(Elem::Field(lock))) = (tag.first(), tag.get(1)) else {
        return None;
    };
    Some(index_lock(
        lock.strip_prefix('@')?,
        arr.strip_prefix('#')?,
        tag.get(3..).unwrap_or_default(),
    ))
}

/// The pointer `p` a marker field `@*p` of an element `p[i]` names (see
/// `sym_roots`), or `None` for any other field (an array's marker `@a`).
pub(super) fn pointer_marker(field: &str) -> Option<&str> {
    field.strip_prefix("@*")
}

/// The marker field of the elements `p[i]` of pointer `p` (`@*p`).
fn marker_field(p: &str) -> Elem {
    Elem::Field(Name::from(format!("@*{p}")))
}

/// An assignment of variable `p` (or through it, `*p = ..`): the elements
/// `p[i]`, `p->f[i]` and `p.f[i]` that symbolic locks held through them
/// stood for are no longer what those places name.
pub(super) fn end_pointer_markers(p: &Name, st: &mut State) {
    end_markers(st, |m| {
        m == &**p
            || m.strip_prefix(&**p)
                .is_some_and(|rest| rest.starts_with("->") || rest.starts_with('.'))
    });
}

/// A store into `lhs` (not a plain local): the pointer markers it may
/// move end (see [`end_pointer_markers`], [`end_member_markers`]).
pub(super) fn end_markers_at_store(lhs: &Expr, st: &mut State) {
    match lhs {
        Expr::Var(x) => end_pointer_markers(x, st),
        Expr::Deref(p) => {
            if let Expr::Var(x) = super::uncast(p) {
                end_pointer_markers(x, st);
            }
        }
        Expr::Field { field, .. } => end_member_markers(field, st),
        _ => {}
    }
}

/// The symbolic locks that follow pointer arguments into a callee (those
/// rooted where argument `i` points, `arg_root[i]`), under the callee's
/// names: rooted at parameter `i`, their pointer markers renamed.
pub(super) fn syms_into_callee(
    st: &State,
    arg_root: &[Option<(Name, Vec<Elem>)>],
    names: &CallNames,
) -> thin_vec::ThinVec<(Name, Vec<Elem>, bool)> {
    let mut out = thin_vec::ThinVec::new();
    for (q, path, sh) in &st.syms {
        for (i, r) in arg_root.iter().enumerate() {
            let Some((x, pre)) = r else { continue };
            if x == q && path.starts_with(pre) {
                if let Some(path) = rename_marker(&path[pre.len()..], names, true) {
                    out.push((names.params[i].clone(), path, *sh));
                }
            }
        }
    }
    out
}

/// An assignment of a member named `field` of anything: the elements
/// `q->field[i]` and `q.field[i]` that symbolic locks held through them
/// stood for may have moved, and so may the objects `q->field->..` that
/// symbolic locks reached through that member.
pub(super) fn end_member_markers(field: &Name, st: &mut State) {
    end_markers(st, |m| {
        m.strip_suffix(&**field)
            .is_some_and(|head| head.ends_with("->") || head.ends_with('.'))
    });
    let through = |y: &(Name, Vec<Elem>, bool)| {
        y.1.windows(2).any(|w| {
            matches!((&w[0], &w[1]), (Elem::Field(a), Elem::Field(d))
                if a == field && &**d == DEREF)
        })
    };
    if st.syms.iter().any(through) {
        st.syms.retain(|y| !through(y));
    }
}

/// The field that marks a dereference inside a symbolic lock's path
/// (`q->a->f` is `[a, *, f]` below `q`): not a C identifier.
pub(super) const DEREF: &str = "*";

/// A symbolic path split after its last dereference mark: what leads to
/// the object (`[a, *]` of `[a, *, f]`, empty when there is none) and the
/// path inside it (`[f]`).
pub(super) fn deref_split(path: &[Elem]) -> (&[Elem], &[Elem]) {
    let at = path
        .iter()
        .rposition(|e| matches!(e, Elem::Field(f) if &**f == DEREF))
        .map_or(0, |i| i + 1);
    path.split_at(at)
}

/// How a pointer marker's variable is renamed across a call (see
/// [`rename_marker`]): the call's arguments and the callee's parameters,
/// and which names each side declares as its own (parameters, locals).
pub(super) struct CallNames<'c> {
    pub args: &'c [Expr],
    pub params: &'c [Name],
    pub caller_declares: Declares<'c>,
    pub callee_declares: Declares<'c>,
}

/// Does one side of a call declare this name as its own?
pub(super) type Declares<'c> = &'c dyn Fn(&str) -> bool;

/// The symbolic-lock path `path`, its pointer marker (`@*r`, `@*r->f`,
/// `@*r.f`: see `sym_roots`) renamed from the caller's names to the
/// callee's (`into_callee`) or back. A variable of one side passed as a
/// plain argument is the matching parameter of the other; a global keeps
/// its name when the other side declares nothing of that name. `None`:
/// the other side cannot name the element, and the lock does not go there.
/// A path without a pointer marker is returned as it is.
pub(super) fn rename_marker(
    path: &[Elem],
    names: &CallNames,
    into_callee: bool,
) -> Option<Vec<Elem>> {
    let Some(Elem::Field(f)) = path.first() else {
        return Some(path.to_vec());
    };
    let Some(m) = pointer_marker(f) else {
        return Some(path.to_vec());
    };
    let cut = m
        .find("->")
        .into_iter()
        .chain(m.find('.'))
        .min()
        .unwrap_or(m.len());
    let (root, rest) = m.split_at(cut);
    let arg_of = |j: usize| match names.args.get(j).map(super::uncast) {
        Some(Expr::Var(x)) => Some(x.clone()),
        _ => None,
    };
    let (here, there): (Declares, Declares) = if into_callee {
        (names.caller_declares, names.callee_declares)
    } else {
        (names.callee_declares, names.caller_declares)
    };
    let renamed: Name = if here(root) {
        if into_callee {
            let j = (0..names.params.len()).find(|&j| arg_of(j).is_some_and(|x| &*x == root))?;
            names.params[j].clone()
        } else {
            let j = names.params.iter().position(|p| &**p == root)?;
            arg_of(j)?
        }
    } else if there(root) {
        return None;
    } else {
        Name::from(root)
    };
    let mut out = vec![marker_field(&format!("{renamed}{rest}"))];
    out.extend(path[1..].iter().cloned());
    Some(out)
}

/// Does function `s` declare `n` as a parameter or a local of its own?
pub(super) fn declares(s: &crate::db::FunctionSummary, n: &str) -> bool {
    if s.ir.params.iter().any(|p| &*p.name == n) {
        return true;
    }
    let mut hit = false;
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        hit |= matches!(st, racelens_syntax::Stmt::Decl(d) if &*d.name == n);
    });
    hit
}

/// Drops the symbolic locks whose pointer marker `@*m` has `ends(m)`.
fn end_markers(st: &mut State, ends: impl Fn(&str) -> bool) {
    if st.syms.is_empty() {
        return;
    }
    let hit = |y: &(Name, Vec<Elem>, bool)| {
        matches!(y.1.first(), Some(Elem::Field(f))
            if pointer_marker(f).is_some_and(&ends))
    };
    if st.syms.iter().any(hit) {
        st.syms.retain(|y| !hit(y));
    }
}

/// `L[index of A]` (then `rest`): the element of lock array `L` with the
/// index of the element of data array `A` being accessed. Every way of
/// holding such a lock (index variable, constant index, region tag, pointer
/// to an element) must name it alike, so they all build it here.
pub(super) fn index_lock(lock_array: &str, data_array: &str, rest: &[Elem]) -> LocKey {
    LocKey {
        base: Base::Synthetic(Name::from(format!("{lock_array}[index of {data_array}]"))),
        path: rest.to_vec(),
    }
}

impl<'a> Walker<'a> {
    /// `q->a.b` -> (q, [a, b]); `*q` -> (q, []): the pointer variable an
    /// lvalue goes through, and the path below its target.
    /// Every symbolic root of an lvalue: the pointer variable itself first,
    /// then, for `p = &a[i]`, the roots of `a[i]` (valid while `i` is unchanged).
    pub(super) fn sym_roots(&self, fr: &Frame, e: &Expr, depth: u32) -> Vec<(Name, Vec<Elem>)> {
        if depth > 16 {
            return Vec::new();
        }
        let extend = |mut v: Vec<(Name, Vec<Elem>)>, el: Elem| {
            for r in &mut v {
                r.1.push(el.clone());
            }
            v
        };
        match e {
            Expr::Field {
                base,
                field,
                arrow: true,
            } => {
                let inner = match &**base {
                    Expr::Cast { value, .. } => &**value,
                    b => b,
                };
                match inner {
                    Expr::Var(q) if fr.locals.contains_key(q) => {
                        let mut v = vec![(q.clone(), vec![Elem::Field(field.clone())])];
                        if let Some(Expr::AddrOf(place)) = fr.single_defs.get(q) {
                            v.extend(extend(
                                self.sym_roots(fr, place, depth + 1),
                                Elem::Field(field.clone()),
                            ));
                        }
                        v
                    }
                    // `q->a->f`: through the pointer member `a` of what the
                    // local `q` points to, one object while `q` and members
                    // named `a` are not assigned. The path below `q` marks
                    // the dereference: `[a, *, f]` (see [`deref_split`]).
                    Expr::Field {
                        base: b2,
                        field: a,
                        arrow: true,
                    } => match super::uncast(b2) {
                        Expr::Var(q) if fr.locals.contains_key(q) => vec![(
                            q.clone(),
                            vec![
                                Elem::Field(a.clone()),
                                Elem::Field(Name::from(DEREF)),
                                Elem::Field(field.clone()),
                            ],
                        )],
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                }
            }
            Expr::Field {
                base,
                field,
                arrow: false,
            } => extend(
                self.sym_roots(fr, base, depth + 1),
                Elem::Field(field.clone()),
            ),
            Expr::Index {
                base,
                index: Some(i),
                ..
            } if self.is_array(fr, base) => {
                extend(self.sym_roots(fr, base, depth + 1), Elem::Index(Some(*i)))
            }
            // `a[i]` for an array `a` and a plain index variable `i`: the same
            // element while `i` is unchanged. The root is the index variable;
            // its path starts with a marker of the array that is dropped when
            // the lock is instantiated. And, whatever the index (`q->arr[k %
            // n]`), some element of the array member of `q`: a lock held
            // through `q` guards all of `q`'s object.
            Expr::Index { base, var, .. } if self.is_array(fr, base) => {
                let marker = match var {
                    Some(i) if fr.locals.contains_key(i) => array_path(base).map(|a| {
                        (
                            i.clone(),
                            vec![Elem::Field(Name::from(format!("@{a}"))), Elem::Index(None)],
                        )
                    }),
                    _ => None,
                };
                let mut v: Vec<(Name, Vec<Elem>)> = marker.into_iter().collect();
                v.extend(extend(
                    self.sym_roots(fr, base, depth + 1),
                    Elem::Index(None),
                ));
                v
            }
            // `p[i]` for a pointer variable `p` (an array on the heap, reached
            // through a global or a local pointer: `threads[i]`) and a plain
            // index variable `i`: the same element while neither `i` nor `p`
            // is assigned. Its marker `@*p` stands only for the lock in the
            // element being accessed (`lock(&p[i].m); p[i].n++`), never for
            // a lock array striped over another array (see
            // [`pointer_marker`]): `p` may point to other arrays at other
            // times, so only a lock and data of one element are known alike.
            Expr::Index {
                base,
                var: Some(i),
                index: None,
                ..
            } if fr.locals.contains_key(i) => match self.indexed_pointer(fr, base) {
                Some(p) => vec![(i.clone(), vec![marker_field(&p), Elem::Index(None)])],
                None => Vec::new(),
            },
            Expr::Deref(v) => match &**v {
                Expr::Var(q) if fr.locals.contains_key(q) => {
                    let mut out = vec![(q.clone(), Vec::new())];
                    if let Some(Expr::AddrOf(place)) = fr.single_defs.get(q) {
                        out.extend(self.sym_roots(fr, place, depth + 1));
                    }
                    out
                }
                Expr::Cast { value, .. } => {
                    self.sym_roots(fr, &Expr::Deref(value.clone()), depth + 1)
                }
                // `*&x` is `x` (what `memset(&p[i].a, ..)` writes).
                Expr::AddrOf(place) => self.sym_roots(fr, place, depth + 1),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The region tags of a pointer value: `A[i]` (and anything read or
    /// computed from it) while the index lock `L[i]` is held, or a local
    /// pointer already tagged.
    pub(super) fn region_tags(
        &self,
        fr: &Frame,
        e: &Expr,
        st: &State,
        depth: u32,
    ) -> Vec<(Vec<Elem>, bool)> {
        if depth > 16 || st.syms.is_empty() {
            return Vec::new();
        }
        match e {
            Expr::Cast { value: b, .. }
            | Expr::Offset(b)
            | Expr::AddrOf(b)
            | Expr::Deref(b)
            | Expr::Field { base: b, .. } => self.region_tags(fr, b, st, depth + 1),
            Expr::Index {
                base, var: Some(v), ..
            } if self.is_array(fr, base) => match array_path(base) {
                Some(arr) => st
                    .syms
                    .iter()
                    .filter(|x| &x.0 == v)
                    .filter(|x| matches!(x.1.first(), Some(Elem::Field(l)) if l.starts_with('@')))
                    .map(|x| {
                        let mut tag = vec![Elem::Field(Name::from(format!("#{arr}")))];
                        tag.extend(x.1.iter().cloned());
                        (tag, x.2)
                    })
                    .collect(),
                None => Vec::new(),
            },
            Expr::Index { base, .. } => self.region_tags(fr, base, st, depth + 1),
            Expr::Var(q) if fr.locals.contains_key(q) => st
                .syms
                .iter()
                .filter(|x| &x.0 == q && is_region(&x.1))
                .map(|x| (x.1.clone(), x.2))
                .collect(),
            Expr::Choice(alts) => {
                let mut all = alts.iter().map(|a| self.region_tags(fr, a, st, depth + 1));
                let first = all.next().unwrap_or_default();
                all.fold(first, |acc, t| common(&acc, &t))
            }
            _ => Vec::new(),
        }
    }

    /// The name of a pointer whose elements `p[i]` a lock held through the
    /// same `p[i]` guards (see `sym_roots`): a pointer (not an array) that
    /// is a global or a non-static local whose address is not taken
    /// (`threads`), or a member of one (`axel->conn`, `pool.items`). Only
    /// assignments of the variable or of a member of that name, which end
    /// the lock's marker ([`end_pointer_markers`]), change it here.
    fn indexed_pointer(&self, fr: &Frame, base: &Expr) -> Option<String> {
        let (root, name) = match base {
            Expr::Var(p) => (p, p.to_string()),
            Expr::Field {
                base: inner,
                field,
                arrow,
            } => match &**inner {
                Expr::Var(q) => (q, format!("{q}{}{field}", if *arrow { "->" } else { "." })),
                _ => return None,
            },
            _ => return None,
        };
        let local = fr.locals.get(root);
        if local.is_some_and(|t| t.is_static) || fr.address_taken.contains(root) {
            return None;
        }
        if local.is_none() && self.prog.global(root).is_none() {
            return None;
        }
        self.type_of(fr, base, 0)
            .is_some_and(|t| t.pointer > 0 && !t.array)
            .then_some(name)
    }

    /// `x = rhs` for a local `x`: the symbolic locks through `x` end, and
    /// `x` takes the region tags of `rhs`.
    pub(super) fn retag(&self, fr: &Frame, x: &Name, rhs: &Expr, st: &mut State) {
        let tags = self.region_tags(fr, rhs, st, 0);
        end_pointer_markers(x, st);
        st.syms.retain(|y| &y.0 != x);
        st.sym_guards.retain(|g| &g.2 .0 != x);
        for (tag, sh) in tags {
            if st.syms.len() < MAX_TRACKED {
                st.syms.push((x.clone(), tag, sh));
            }
        }
        st.syms.sort();
        st.syms.dedup();
    }

    /// The symbolic lock named by a lock call's pointer argument.
    pub(super) fn lock_sym(&self, fr: &Frame, arg: &Expr) -> Option<(Name, Vec<Elem>)> {
        self.lock_syms(fr, arg).into_iter().next()
    }

    pub(super) fn lock_syms(&self, fr: &Frame, arg: &Expr) -> Vec<(Name, Vec<Elem>)> {
        match arg {
            Expr::AddrOf(place) => self.sym_roots(fr, place, 0),
            Expr::Cast { value, .. } => self.lock_syms(fr, value),
            Expr::Var(_) => self.sym_roots(fr, &Expr::Deref(Box::new(arg.clone())), 0),
            _ => Vec::new(),
        }
    }

    /// The locks an argument may denote; `false` when it is unresolved.
    pub(super) fn lock_keys(&self, fr: &Frame, arg: Option<&Expr>) -> (Vec<LocKey>, bool) {
        let Some(arg) = arg else {
            return (Vec::new(), false);
        };
        let mut v = targets(self.eval(fr, arg, 0));
        if v.is_empty() && is_wild(fr, arg) {
            // A wild lock pointer may be any lock.
            return (v, false);
        }
        if v.is_empty() {
            // An unresolved lock pointer: name it by its expression's type or text.
            v = self.deref(fr, arg, 0);
            if v.is_empty() {
                if let Expr::Var(x) = arg {
                    v.push(
                        LocKey::new(Base::Local {
                            func: fr.fname.clone(),
                            var: x.clone(),
                        })
                        .with(Elem::Field(Name::from("*"))),
                    );
                }
                return (v, false);
            }
        }
        (v, true)
    }
}

/// The symbolic locks (and the guards on them) of a callee's exit state
/// `e`, as the caller sees them after the call: the callee's, rooted at its
/// parameters, move to the caller's arguments (`arg_root`, by parameter);
/// a guard on the callee's result follows the call's `flag`; the caller's
/// own (`before`) survive unless the callee was given their pointer
/// (region tags always do: the callee cannot reassign the caller's locals).
pub(super) fn syms_after_call(
    e: &mut State,
    before: &State,
    names: &CallNames,
    arg_root: &[Option<(Name, Vec<Elem>)>],
    flag: &Name,
) {
    let params = names.params;
    let rooted = |p: &Name, path: &[Elem]| -> Option<(Name, Vec<Elem>)> {
        let i = params.iter().position(|x| x == p)?;
        let (x, pre) = arg_root.get(i)?.as_ref()?;
        let mut full = pre.clone();
        full.extend(path.iter().cloned());
        Some((x.clone(), full))
    };
    let passed = |v: &Name, path: &[Elem]| {
        arg_root
            .iter()
            .flatten()
            .any(|(x, pre)| x == v && path.starts_with(pre))
    };
    let mut back = Vec::new();
    for (p, path, sh) in e.syms.iter().filter(|x| !is_region(&x.1)) {
        if let Some((x, full)) = rooted(p, path) {
            if let Some(full) = rename_marker(&full, names, false) {
                back.push((x, full, *sh));
            }
        }
    }
    for x in &before.syms {
        if !passed(&x.0, &x.1) || is_region(&x.1) {
            back.push(x.clone());
        }
    }
    back.sort();
    back.dedup();
    e.syms = back.into();
    let mut guards = Vec::new();
    for (v, nz, (p, path, sh)) in e.sym_guards.iter() {
        if &**v == super::frames::RETURNED {
            if let Some((x, full)) = rooted(p, path) {
                if let Some(full) = rename_marker(&full, names, false) {
                    guards.push((flag.clone(), *nz, (x, full, *sh)));
                }
            }
        } else if !passed(p, path) {
            guards.push((v.clone(), *nz, (p.clone(), path.clone(), *sh)));
        }
    }
    guards.sort();
    guards.dedup();
    e.sym_guards = guards.into();
}
