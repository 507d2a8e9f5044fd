//! Expression evaluation: the static type of an expression, the places an
//! lvalue denotes ([`Walker::place`]), what a pointer expression may point
//! to ([`Walker::eval`]) and the functions a callee may be.
//!
//! Owns no state: it reads the frame, the pointer store (`store.rs`) and
//! the current statement's flow-sensitive pointers (`WalkData::cur_ptrs`,
//! which take precedence over the frame's flow-insensitive points-to).
//! Invariant: pointer values are bounded by [`MAX_VALS`](super::MAX_VALS)
//! (everything goes through `add_vals`), and every method passes on a
//! recursion `depth` that bounds its work.

use super::frames::Frame;
use super::wild::is_wild;
use super::{add_vals, targets, Val, Vals, Walker};
use crate::config::CallModel;
use crate::db::FunctionId;
use crate::model::*;
use racelens_syntax::{Callee, Expr, Name, TypeInfo};

impl<'a> Walker<'a> {
    pub(super) fn type_of(&self, fr: &Frame, e: &Expr, depth: u32) -> Option<TypeInfo> {
        if depth > 32 {
            return None;
        }
        match e {
            Expr::Var(x) => fr
                .locals
                .get(x)
                .cloned()
                .or_else(|| self.prog.global(x).map(|t| self.prog.resolve_type(t))),
            Expr::Field { base, field, arrow } => {
                let bt = self.type_of(fr, base, depth + 1)?;
                let level = if *arrow {
                    bt.pointer.saturating_sub(1)
                } else {
                    bt.pointer
                };
                let obj_volatile = level < 8 && (bt.volatile >> level) & 1 == 1;
                let ft = self.prog.field_type(bt.name.as_deref()?, field)?;
                let mut ft = self.prog.resolve_type(ft);
                if obj_volatile && ft.pointer < 8 {
                    ft.volatile |= 1 << ft.pointer;
                }
                Some(ft)
            }
            Expr::CallResult(id) => match fr.calls.get(id) {
                Some(Callee::Direct(n)) => {
                    self.prog.returns.get(n).map(|t| self.prog.resolve_type(t))
                }
                _ => None,
            },
            Expr::Index { base, .. } => {
                let mut t = self.type_of(fr, base, depth + 1)?;
                t.index_once();
                Some(t)
            }
            Expr::Deref(v) => {
                let mut t = self.type_of(fr, v, depth + 1)?;
                t.index_once();
                Some(t)
            }
            Expr::AddrOf(p) => {
                let mut t = self.type_of(fr, p, depth + 1)?;
                t.pointer += 1;
                Some(t)
            }
            Expr::Cast {
                ty: Some(ty),
                pointer,
                ..
            } => Some(self.prog.resolve_type(&TypeInfo {
                // A cast that spells no `*` keeps the old reading, a pointer
                // to its type: the lowering cannot tell `(long) p` from a
                // typedef of a pointer in code not preprocessed.
                pointer: (*pointer).max(1),
                name: Some(ty.clone()),
                ..Default::default()
            })),
            Expr::Cast { value, .. } | Expr::Offset(value) => self.type_of(fr, value, depth + 1),
            _ => None,
        }
    }

    pub(super) fn is_array(&self, fr: &Frame, e: &Expr) -> bool {
        match self.type_of(fr, e, 0) {
            Some(t) => t.array,
            None => self.untyped_global(fr, e),
        }
    }

    /// A global whose type is unknown: taken for an array when indexed.
    fn untyped_global(&self, fr: &Frame, e: &Expr) -> bool {
        matches!(e, Expr::Var(x) if !fr.locals.contains_key(x) && self.prog.global(x).is_some())
    }

    /// Does indexing `base` stay inside the array object (rather than
    /// dereference a pointer)? Also for `a[i]` of `int a[N][M]`: types keep
    /// one array flag, so the row looks like a scalar; but a scalar cannot
    /// be indexed, so it is an array.
    fn indexes_array(&self, fr: &Frame, base: &Expr) -> bool {
        match self.type_of(fr, base, 0) {
            Some(t) => t.array || (matches!(base, Expr::Index { .. }) && t.pointer == 0),
            None => self.untyped_global(fr, base),
        }
    }

    /// The objects an lvalue expression may designate.
    pub(super) fn place(&self, fr: &Frame, e: &Expr, depth: u32) -> Vec<LocKey> {
        if depth > 32 {
            return Vec::new();
        }
        match e {
            Expr::Var(x) => {
                if let Some(t) = fr.locals.get(x) {
                    if t.is_static {
                        vec![LocKey::new(Base::Global(Name::from(format!(
                            "{}::{}",
                            fr.fname, x
                        ))))]
                    } else {
                        vec![LocKey::new(Base::Local {
                            func: fr.fname.clone(),
                            var: x.clone(),
                        })]
                    }
                } else if self.prog.global(x).is_some() {
                    vec![LocKey::new(Base::Global(x.clone()))]
                } else {
                    Vec::new()
                }
            }
            Expr::Field { base, field, arrow } => {
                let bases = if *arrow {
                    self.deref(fr, base, depth + 1)
                } else {
                    self.place(fr, base, depth + 1)
                };
                bases
                    .into_iter()
                    .map(|k| k.with(Elem::Field(field.clone())))
                    .collect()
            }
            Expr::Index { base, index, .. } => {
                if self.indexes_array(fr, base) {
                    // An array of one element has one: `table[fd]` is
                    // `table[0]` in every defined execution.
                    let index = match self.type_of(fr, base, depth + 1) {
                        Some(t) if t.one_element && matches!(**base, Expr::Var(_)) => Some(0),
                        _ => *index,
                    };
                    self.place(fr, base, depth + 1)
                        .into_iter()
                        .map(|k| k.with(Elem::Index(index)))
                        .collect()
                } else {
                    self.deref(fr, base, depth + 1)
                        .into_iter()
                        .map(|mut k| {
                            if let Some(Elem::Index(i)) = k.path.last_mut() {
                                *i = None;
                                k
                            } else if k.path.is_empty() && matches!(k.base, Base::Type(_)) {
                                // Any object of the type: an element of an
                                // array of them is one too.
                                k
                            } else {
                                k.with(Elem::Index(*index))
                            }
                        })
                        .collect()
                }
            }
            Expr::Deref(v) => self.deref(fr, v, depth + 1),
            Expr::Cast { value, .. } => self.place(fr, value, depth + 1),
            _ => Vec::new(),
        }
    }

    /// The objects a pointer value may point to; falls back to the pointee's
    /// struct type when the pointer is unresolved.
    pub(super) fn deref(&self, fr: &Frame, v: &Expr, depth: u32) -> Vec<LocKey> {
        let mut out = targets(self.eval(fr, v, depth + 1));
        if out.is_empty() && is_wild(fr, v) {
            out.push(LocKey::new(Base::Unknown));
        } else if out.is_empty() && self.d.store_strict.get() {
            self.d.store_unresolved.set(true);
        } else if out.is_empty() {
            if let Some(t) = self.type_of(fr, v, 0) {
                if let Some(n) = &t.name {
                    // Memory behind a pointer that unknown code returned may be
                    // any object of its type, scalars included.
                    let from_unknown = self.from_unknown_call(fr, v);
                    let levels = u32::from(t.pointer) + u32::from(t.array) + u32::from(t.rows);
                    if levels >= 1 && (self.prog.structs.contains_key(n) || from_unknown) {
                        out.push(LocKey::new(Base::Type(type_object(n, levels - 1))));
                    }
                }
            }
        }
        out
    }

    /// Is `e` the address of a struct member that is an array (`&it->data`,
    /// under casts)?
    fn array_member_addr(&self, fr: &Frame, e: &Expr) -> bool {
        let Expr::AddrOf(m) = super::uncast(e) else {
            return false;
        };
        matches!(&**m, Expr::Field { .. }) && self.type_of(fr, m, 0).is_some_and(|t| t.array)
    }

    /// Is member `f` an array in every struct that has a member `f`? (What
    /// a pointer holds names the member, not its struct.)
    fn array_member(&self, f: &Name) -> bool {
        self.array_fields
            .get_or_init(|| {
                let mut arrays: rustc_hash::FxHashSet<Name> = Default::default();
                let mut others: rustc_hash::FxHashSet<Name> = Default::default();
                for fields in self.prog.structs.values() {
                    for (n, t) in fields {
                        match self.prog.resolve_type(t).array {
                            true => arrays.insert(n.clone()),
                            false => others.insert(n.clone()),
                        };
                    }
                }
                arrays.retain(|n| !others.contains(n));
                arrays
            })
            .contains(f)
    }

    /// Does this pointer value come from a call to a function without a body?
    fn from_unknown_call(&self, fr: &Frame, v: &Expr) -> bool {
        /// Library functions that return a pointer to the calling thread's
        /// own object: what is accessed through the result is not shared.
        const THREAD_LOCAL_RESULTS: &[&str] = &[
            "__errno_location",
            "__error",
            "___errno",
            "__errno",
            "__h_errno_location",
        ];
        let is_unknown = |id: &u32| match fr.calls.get(id) {
            // `errno` is `*__errno_location()` (glibc; `__error()` on the
            // BSDs, `___errno()` on Solaris): each thread has its own.
            Some(Callee::Direct(n)) if THREAD_LOCAL_RESULTS.contains(&&**n) => false,
            Some(Callee::Direct(n)) => {
                self.prog.functions_named(n).is_none() && fr.summary.models.get(id).is_none()
            }
            _ => false,
        };
        match v {
            Expr::CallResult(id) => is_unknown(id),
            Expr::Cast { value, .. } => self.from_unknown_call(fr, value),
            Expr::Var(x) if fr.locals.contains_key(x) => {
                fr.from_calls.iter().any(|(y, id)| y == x && is_unknown(id))
            }
            _ => false,
        }
    }

    /// The pointer values an expression may evaluate to.
    pub(super) fn eval(&self, fr: &Frame, e: &Expr, depth: u32) -> Vals {
        if depth > 32 {
            return Vec::new();
        }
        let mut out = Vec::new();
        // A member cell assigned on this path (`member_cells.rs`), read
        // instead of the store.
        if let Some(v) = matches!(e, Expr::Field { .. })
            .then(|| self.member_cell_vals(fr, e))
            .flatten()
        {
            add_vals(&mut out, v);
            return out;
        }
        match e {
            Expr::Var(x) => {
                if let Some(t) = fr.locals.get(x) {
                    if t.array {
                        add_vals(
                            &mut out,
                            self.place(fr, e, depth + 1).into_iter().map(Val::Target),
                        );
                    } else if t.is_static {
                        let k =
                            LocKey::new(Base::Global(Name::from(format!("{}::{}", fr.fname, x))));
                        if let Some(v) = self.store_get(&k) {
                            add_vals(&mut out, v.iter().cloned());
                        }
                    } else if let Some(v) = self
                        .d
                        .cur_ptrs
                        .borrow()
                        .iter()
                        .find(|(y, _)| y == x)
                        .map(|(_, v)| v.clone())
                    {
                        add_vals(&mut out, v);
                    } else if let Some(v) = fr.pts.get(x) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                    // A local whose address is taken holds what stores
                    // through that address put there (`find(&fn)` that
                    // sets `*out = h->fn`). Not an array: its name is
                    // only its address (`p = auth` points `p` at `auth`,
                    // not at what `auth[2] = pass` stored in it).
                    if !t.is_static && !t.array && fr.address_taken.contains(x) {
                        let k = LocKey::new(Base::Local {
                            func: fr.fname.clone(),
                            var: x.clone(),
                        });
                        if let Some(v) = self.store_get(&k) {
                            add_vals(&mut out, v.iter().cloned());
                        }
                    }
                } else if let Some(t) = self.prog.global(x) {
                    // An array's name is its address; what its elements
                    // hold is read through an index (`elems[i]`).
                    if t.array {
                        add_vals(
                            &mut out,
                            [Val::Target(LocKey::new(Base::Global(x.clone())))],
                        );
                    } else if let Some(v) = self.store_get(&LocKey::new(Base::Global(x.clone()))) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                } else if self.prog.is_function(x) {
                    out.push(Val::Func(x.clone()));
                }
            }
            Expr::AddrOf(p) => {
                if let Expr::Var(f) = &**p {
                    if !fr.locals.contains_key(f)
                        && self.prog.global(f).is_none()
                        && self.prog.is_function(f)
                    {
                        return vec![Val::Func(f.clone())];
                    }
                }
                add_vals(
                    &mut out,
                    self.place(fr, p, depth + 1).into_iter().map(Val::Target),
                );
            }
            Expr::Cast { value, .. } => out = self.eval(fr, value, depth + 1),
            Expr::Offset(value) => {
                // Pointer arithmetic stays in the object; stepping back from a
                // member (container_of) reaches the enclosing struct, and
                // stepping from an element reaches any element. From a
                // member that is an array (`(char *) &it->data + n`,
                // memcached's `ITEM_key`; `token++` over `conn->auth`) it
                // stays among that array's elements: leaving the array is
                // undefined.
                for v in self.eval(fr, value, depth + 1) {
                    let v = match v {
                        Val::Target(k)
                            if matches!(k.path.last(), Some(Elem::Field(f))
                                if self.array_member(f) || self.array_member_addr(fr, value)) =>
                        {
                            Val::Target(k.with(Elem::Index(None)))
                        }
                        Val::Target(mut k) if matches!(k.path.last(), Some(Elem::Field(_))) => {
                            k.path.pop();
                            Val::Target(k)
                        }
                        Val::Target(mut k)
                            if matches!(k.path.last(), Some(Elem::Index(Some(_)))) =>
                        {
                            k.path.pop();
                            Val::Target(k.with(Elem::Index(None)))
                        }
                        v => v,
                    };
                    add_vals(&mut out, [v]);
                }
            }
            // A library result pointing into what an argument points to
            // (`strchr(s, c)`; see `library::derived_result`).
            Expr::CallResult(id) if fr.derived_results.contains_key(id) => {
                for src in &fr.derived_results[id] {
                    let v = self.eval(fr, src, depth + 1);
                    add_vals(&mut out, v);
                }
            }
            Expr::CallResult(id) => match fr.summary.models.get(id) {
                // `alloca` memory lives in the caller's frame: a local of
                // its own per call, shared only when its address escapes
                // like any local's.
                Some(CallModel::Alloc) if is_alloca(fr, *id) => {
                    out.push(Val::Target(LocKey::new(alloca_base(fr, *id))))
                }
                Some(CallModel::Alloc | CallModel::Realloc) => {
                    out.push(Val::Target(LocKey::new(Base::Heap {
                        func: fr.fname.clone(),
                        call: *id,
                    })))
                }
                // An atomic load (or exchange, fetch-and-op) yields what the
                // object held.
                Some(CallModel::Atomic) => {
                    if let Some(o) = fr.atomic_objects.get(id) {
                        add_vals(&mut out, self.eval(fr, o, depth + 1));
                    }
                }
                Some(_) => {}
                None => {
                    if let Some(callee) = fr.calls.get(id) {
                        // What the callee returned where the walk called it
                        // (see `Walker::note_return_value`).
                        let res = super::frames::returned_by(*id);
                        if let Some(v) = self.d.cur_ptrs.borrow().iter().find(|(y, _)| *y == res) {
                            add_vals(&mut out, v.1.iter().cloned());
                            return out;
                        }
                        for f in self.functions_of(fr, callee) {
                            // What an allocation wrapper returns is a new
                            // object per call site, as with `malloc`.
                            let v = match self.is_alloc_wrapper(f) {
                                true => vec![Val::Target(LocKey::new(Base::Heap {
                                    func: fr.fname.clone(),
                                    call: *id,
                                }))],
                                false => self.return_vals(f),
                            };
                            add_vals(&mut out, v);
                        }
                    }
                }
            },
            Expr::Field { .. } | Expr::Index { .. } | Expr::Deref(_) => {
                if self.is_array(fr, e) {
                    add_vals(
                        &mut out,
                        self.place(fr, e, depth + 1).into_iter().map(Val::Target),
                    );
                }
                for k in self.place(fr, e, depth + 1) {
                    if let Some(v) = self.store_get(&k.without_indices()) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                    if let Some(v) = self.assigned_through(&k) {
                        add_vals(&mut out, v.iter().cloned());
                    }
                }
            }
            Expr::Choice(alts) => {
                for a in alts {
                    let v = self.eval(fr, a, depth + 1);
                    add_vals(&mut out, v);
                }
            }
            _ => {}
        }
        out
    }

    /// Does `n`, as `fr` names it, denote a variable (a local or a global)
    /// rather than a function? A call `n(..)` then goes through a pointer.
    pub(super) fn names_variable(&self, fr: &Frame, n: &Name) -> bool {
        fr.locals.contains_key(n) || self.prog.global(n).is_some()
    }

    pub(super) fn functions_of(&self, fr: &Frame, callee: &Callee) -> Vec<FunctionId> {
        let names: Vec<Name> = match callee {
            Callee::Direct(n) if !self.names_variable(fr, n) => vec![n.clone()],
            Callee::Direct(n) => self
                .eval(fr, &Expr::Var(n.clone()), 0)
                .into_iter()
                .filter_map(|v| if let Val::Func(f) = v { Some(f) } else { None })
                .collect(),
            Callee::Indirect(e) => {
                let e = match e {
                    Expr::Deref(inner) => inner,
                    e => e,
                };
                self.eval(fr, e, 0)
                    .into_iter()
                    .filter_map(|v| if let Val::Func(f) = v { Some(f) } else { None })
                    .collect()
            }
        };
        self.definitions(fr, &names)
    }

    /// The definitions of the functions `names`, as called from `fr`: one
    /// each, the one in the caller's own file when several files define it.
    pub(super) fn definitions(&self, fr: &Frame, names: &[Name]) -> Vec<FunctionId> {
        let file = fr.fid.file(self.db);
        names
            .iter()
            .filter_map(|n| {
                let defs = self.prog.functions_named(n)?;
                Some(
                    defs.iter()
                        .find(|d| d.file(self.db) == file)
                        .copied()
                        .unwrap_or(defs[0]),
                )
            })
            .collect()
    }
}

/// Is call `id` of `fr` a call of `alloca`?
pub(super) fn is_alloca(fr: &Frame, id: u32) -> bool {
    matches!(fr.calls.get(&id), Some(Callee::Direct(n)) if matches!(&**n, "alloca" | "__builtin_alloca"))
}

/// The frame-local object an `alloca` call returns: a local of the caller
/// named after the call (`#alloca3`).
pub(super) fn alloca_base(fr: &Frame, id: u32) -> Base {
    Base::Local {
        func: fr.fname.clone(),
        var: Name::from(format!("{ALLOCA_BLOCK}{id}")),
    }
}

/// The name of the type-based object a pointer of `levels` more levels
/// than `n` reaches: `n` itself, or a pointer cell (`*(T **)p` reads a
/// `T *`, never a `T`), spelled `T *`.
fn type_object(n: &Name, levels: u32) -> Name {
    if levels == 0 {
        return n.clone();
    }
    let mut s = n.to_string();
    for _ in 0..levels {
        s.push_str(" *");
    }
    Name::from(s.as_str())
}
