//! What copies of whole structs and of memory carry in the pointer store
//! (`store.rs`): a struct assignment (`job = q->jobs[head]`), a struct
//! passed by value, an initializer list, a `memcpy` whose ends the model
//! knows, each member by member, nested structs a few levels down; and the
//! members of a deep clone's copy that the code overwrites before anything
//! reads them, which the copy does not carry (see `clone_copy.rs`).
//!
//! Owns nothing: each function pushes the updates one statement makes to
//! the pass's list, as `store.rs`'s `store_updates` does for the rest.
//! Invariant: only pointer members (and function pointers) are copied; a
//! scalar member holds no address.

use super::frames::Frame;
use super::{add_vals, uncast, Val, Vals, Walker};
use crate::model::*;
use racelens_syntax::{Call, Callee, Expr, Name, Stmt};

impl Walker<'_> {
    /// The struct type of `e` when it is a struct value (not a pointer to
    /// one, not an array of them).
    pub(super) fn struct_type(&self, fr: &Frame, e: &Expr) -> Option<Name> {
        let t = self.type_of(fr, e, 0)?;
        let name = t.name.filter(|_| t.pointer == 0 && !t.array)?;
        self.prog.structs.contains_key(&name).then_some(name)
    }

    /// `struct job j = {fn, .arg = p}`: each pointer member of `dsts` gets
    /// the value of the element that initializes it (by designator, or by
    /// position), nested lists a few levels down.
    pub(super) fn struct_init(
        &self,
        fr: &Frame,
        dsts: &[LocKey],
        ty: &Name,
        elems: &[(Option<Name>, Expr)],
        depth: u8,
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        let Some(fields) = self.prog.structs.get(ty) else {
            return;
        };
        for (i, (designator, value)) in elems.iter().enumerate() {
            let member = match designator {
                Some(f) => fields.iter().find(|(n, _)| n == f),
                None => fields.get(i),
            };
            let Some((f, ft)) = member else { continue };
            let ft = self.prog.resolve_type(ft);
            let here: Vec<LocKey> = dsts
                .iter()
                .map(|k| k.clone().with(Elem::Field(f.clone())))
                .collect();
            match value {
                Expr::Init(inner) if ft.pointer == 0 && !ft.array && depth < 3 => {
                    if let Some(n) = ft.name.filter(|n| self.prog.structs.contains_key(n)) {
                        self.struct_init(fr, &here, &n, inner, depth + 1, updates);
                    }
                }
                _ if ft.pointer > 0 || ft.is_function => {
                    let v = self.eval(fr, value, 0);
                    if !v.is_empty() {
                        for k in here {
                            updates.push((k, v.clone()));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// `T a[] = {..}` of a local array: its cells get the values of the
    /// pointer elements (`void *(*fns[])(void *) = {fa, fb}`), or the
    /// members of each struct element (`struct task ts[] = {{fa, 0}, ..}`).
    pub(super) fn array_init(
        &self,
        fr: &Frame,
        lhs: &Expr,
        elems: &[(Option<Name>, Expr)],
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        let Some(mut et) = self.resolved_type(fr, lhs, 0).filter(|t| t.array) else {
            return;
        };
        et.index_once();
        let et = self.prog.resolve_type(&et);
        let elem_struct = et
            .name
            .clone()
            .filter(|n| et.pointer == 0 && !et.array && self.prog.structs.contains_key(n));
        let dsts = self.cells(fr, lhs);
        if dsts.is_empty() {
            return;
        }
        for (_, value) in elems {
            match (value, &elem_struct) {
                (Expr::Init(inner), Some(n)) => self.struct_init(fr, &dsts, n, inner, 0, updates),
                (v, None) if et.pointer > 0 || et.is_function => {
                    let v = self.eval(fr, v, 0);
                    if !v.is_empty() {
                        for k in &dsts {
                            updates.push((k.clone(), v.clone()));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A struct passed by value (`launch(t)` for `launch(struct task t)`):
    /// the callee's parameter is a copy, whose function pointer members hold
    /// the functions the argument's do, so that `pthread_create(&id, 0,
    /// t.fn, t.arg)` starts them. Its data pointer members are not followed
    /// (docs/analysis.md): what they point to stays unknown in the callee.
    pub(super) fn struct_args(&self, fr: &Frame, c: &Call, updates: &mut Vec<(LocKey, Vals)>) {
        let Callee::Direct(n) = &c.callee else {
            return;
        };
        if c.args.is_empty() || self.names_variable(fr, n) {
            return;
        }
        for g in self.definitions(fr, std::slice::from_ref(n)) {
            let callee = self.summary(g);
            for (p, a) in callee.ir.params.iter().zip(&c.args) {
                let t = self.prog.resolve_type(&p.ty);
                let Some(ty) = t
                    .name
                    .filter(|n| t.pointer == 0 && !t.array && self.prog.structs.contains_key(n))
                else {
                    continue;
                };
                let dst = LocKey::new(Base::Local {
                    func: g.name(self.db).clone(),
                    var: p.name.clone(),
                });
                self.copy_members(fr, &[dst], a, ty, true, updates);
            }
        }
    }

    /// `dst = src` of a whole struct (`job_t job = q->jobs[head]`): each
    /// pointer member `dst` gets what the same member of `src` holds, so
    /// that `job.fn(job.arg)` calls what was stored into the queue. Nested
    /// struct members are followed a few levels.
    pub(super) fn struct_copy(
        &self,
        fr: &Frame,
        dst: &Expr,
        src: &Expr,
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        if !matches!(
            src,
            Expr::Var(_) | Expr::Field { .. } | Expr::Index { .. } | Expr::Deref(_)
        ) {
            return;
        }
        let Some(name) = self.struct_type(fr, dst) else {
            return;
        };
        let dsts = self.cells(fr, dst);
        if dsts.is_empty() {
            return;
        }
        self.copy_members(fr, &dsts, src, name, false, updates);
    }

    /// A struct copy into `*x` of an object this function allocated
    /// (`*copy = *o`, `memcpy(copy, o, sizeof *copy)`), whose updates are
    /// `updates[from..]`: drop those of the members the following
    /// statements overwrite before anything can read them (`copy->net =
    /// net_clone(o->net)`, see `clone_copy.rs`).
    pub(super) fn drop_overwritten(
        &self,
        fr: &Frame,
        dst: &Expr,
        before: &[Stmt],
        rest: &[Stmt],
        from: usize,
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        // Only in the top-level list is `before` all that ran first.
        if !std::ptr::eq(before.as_ptr(), fr.summary.ir.body.as_ptr()) {
            return;
        }
        let Expr::Deref(p) = uncast(dst) else {
            return;
        };
        let Expr::Var(x) = uncast(p) else {
            return;
        };
        let plain_local = |n: &Name| {
            fr.locals.get(n).is_some_and(|t| !t.is_static) && !fr.address_taken.contains(n)
        };
        let members = super::clone_copy::overwritten_members(before, rest, x, &plain_local);
        if members.is_empty() {
            return;
        }
        let vals = self.eval(fr, p, 0);
        let own = !vals.is_empty()
            && vals.iter().all(|v| {
                matches!(v, Val::Target(k) if k.path.is_empty()
                    && matches!(&k.base, Base::Heap { func, .. } if *func == fr.fname))
            });
        if !own {
            return;
        }
        let copied = updates.split_off(from);
        updates.extend(copied.into_iter().filter(
            |(k, _)| !matches!(k.path.first(), Some(Elem::Field(f)) if members.contains(f)),
        ));
    }

    /// `memcpy(dst, src, n)` (any copy of memory the model knows both ends
    /// of): what `*src` holds, `*dst` holds, as `*dst = *src` would store
    /// it: each pointer member of a struct (by the type of either end), or
    /// the pointer itself (`memcpy(&p, &q, sizeof p)`). Bytes of a scalar
    /// type hold no address.
    pub(super) fn mem_copy(
        &self,
        fr: &Frame,
        dst: &Expr,
        src: &Expr,
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        let deref = |e: &Expr| match uncast(e) {
            Expr::AddrOf(x) => (**x).clone(),
            e => Expr::Deref(Box::new(e.clone())),
        };
        let (d, s) = (deref(dst), deref(src));
        if let Some(name) = self
            .struct_type(fr, &d)
            .or_else(|| self.struct_type(fr, &s))
        {
            let dsts = self.cells(fr, &d);
            if !dsts.is_empty() {
                self.copy_members(fr, &dsts, &s, name, false, updates);
            }
            return;
        }
        let pointer = |e: &Expr| {
            self.type_of(fr, e, 0)
                .is_some_and(|t| t.pointer > 0 && !t.array)
        };
        if !(pointer(&d) || pointer(&s)) {
            return;
        }
        let v = self.eval(fr, &s, 0);
        if v.is_empty() {
            return;
        }
        for k in self.cells(fr, &d) {
            updates.push((k, v.clone()));
        }
    }

    /// The pointer members of struct `src` (of type `name`) into the same
    /// members of `dsts`, nested structs a few levels down; with
    /// `functions_only`, only the functions they hold.
    pub(super) fn copy_members(
        &self,
        fr: &Frame,
        dsts: &[LocKey],
        src: &Expr,
        name: Name,
        functions_only: bool,
        updates: &mut Vec<(LocKey, Vals)>,
    ) {
        if !matches!(
            src,
            Expr::Var(_) | Expr::Field { .. } | Expr::Index { .. } | Expr::Deref(_)
        ) {
            return;
        }
        let srcs = self.cells(fr, src);
        // (member path, its struct type, nesting) still to copy.
        let mut todo: Vec<(Vec<Elem>, Name, u8)> = vec![(Vec::new(), name, 0)];
        while let Some((path, ty, depth)) = todo.pop() {
            for (field, ft) in self.prog.structs.get(&ty).into_iter().flatten() {
                let ft = self.prog.resolve_type(ft);
                let mut p = path.clone();
                p.push(Elem::Field(field.clone()));
                if ft.pointer > 0 || ft.is_function {
                    let mut v = Vals::new();
                    for k in &srcs {
                        let mut k = k.clone();
                        k.path.extend(p.iter().cloned());
                        if let Some(x) = self.store_get(&k) {
                            let x = x
                                .iter()
                                .filter(|v| !functions_only || matches!(v, Val::Func(_)));
                            add_vals(&mut v, x.cloned());
                        }
                    }
                    if !v.is_empty() {
                        for k in dsts {
                            let mut k = k.clone();
                            k.path.extend(p.iter().cloned());
                            updates.push((k, v.clone()));
                        }
                    }
                } else if !ft.array && depth < 3 {
                    if let Some(n) = ft.name.filter(|n| self.prog.structs.contains_key(n)) {
                        todo.push((p, n, depth + 1));
                    }
                }
            }
        }
    }
}
