//! Allocation wrappers: the functions whose every call is a new heap
//! object, as a call of `malloc` is (`xmalloc`, `my_malloc` around
//! `xmalloc`, `alloc(ptr, n)` around `realloc`, and pool allocators such as
//! `kmalloc(km, n)` or `do_cache_alloc(cache)` that hand out a block of
//! their pool or a new one).
//!
//! Owns `WalkData::wrappers`, `alloc_slots` and `alloc_slot_index`
//! (dropped when the store is built and when an edit changes the pointer
//! inputs, see `incremental.rs`).
//!
//! Invariants: the answer is syntactic (a function's body and declared
//! return type, and those of the wrappers it calls, at most
//! `MAX_WRAPPER_NESTING` deep), so it never depends on the walk's values
//! or on the order of the questions; it is cached per (function, level).
//! A function that keeps a pointer to what it allocates (stores it, hands
//! it to code that may keep it) or starts threads is never a wrapper: its
//! object keeps the site inside it. Nor is one that may return what a
//! parameter was given (stepped along, `to += n; return to;`, or kept when
//! not null, `if (!buf) buf = malloc(n); return buf;`): a parameter holds
//! the caller's value unless the body first of all gives it another
//! ([`overwritten_first`]).

use super::library::does_not_retain;
use super::{pointer_local, uncast, Walker};
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary};
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{Call, Callee, Expr, Name, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// Allocation wrappers nest at most this deep (`a` around `b` around `c`
/// around `malloc`).
pub(super) const MAX_WRAPPER_NESTING: u8 = 3;

/// May `e`'s value be the pointer held in local `x` (up to casts and
/// offsets)?
pub(super) fn holds_value(e: &Expr, x: &Name) -> bool {
    match uncast(e) {
        Expr::Var(y) => y == x,
        Expr::Offset(b) => holds_value(b, x),
        Expr::Choice(v) => v.iter().any(|e| holds_value(e, x)),
        _ => false,
    }
}

/// The variable a place, or an address, is reached from (`x` of
/// `x->a[2].b`, `*x`, `&x->h[i]`), through members, elements,
/// dereferences, offsets and casts.
pub(super) fn root_var(e: &Expr) -> Option<&Name> {
    match e {
        Expr::Var(y) => Some(y),
        Expr::Field { base, .. } | Expr::Index { base, .. } => root_var(base),
        Expr::Deref(b) | Expr::AddrOf(b) | Expr::Offset(b) => root_var(b),
        Expr::Cast { value, .. } => root_var(value),
        _ => None,
    }
}

/// Does `body` assign parameter `p` a value that is not `p` itself moved
/// along, in a statement of its own top level, before any statement that
/// may leave the function or jump (`return`, `goto`, a label) and before
/// any statement that copies `p` elsewhere? Then no path returns or copies
/// the caller's value.
fn overwritten_first(body: &[Stmt], p: &Name) -> bool {
    for st in body {
        if let Stmt::Assign {
            lhs: Expr::Var(x),
            rhs,
        } = st
        {
            if x == p {
                return !holds_value(rhs, p);
            }
        }
        let mut bad = false;
        visit_stmts(std::slice::from_ref(st), &mut |s| match s {
            Stmt::Return { .. } | Stmt::Goto(_) | Stmt::Label(_) => bad = true,
            Stmt::Assign { rhs, .. } if holds_value(rhs, p) => bad = true,
            _ => {}
        });
        if bad {
            return false;
        }
    }
    false
}

/// The names of a function's parameters and declared locals.
pub(super) fn local_names(s: &FunctionSummary) -> FxHashSet<Name> {
    let mut out: FxHashSet<Name> = s.ir.params.iter().map(|p| p.name.clone()).collect();
    visit_stmts(&s.ir.body, &mut |st| {
        if let Stmt::Decl(d) = st {
            out.insert(d.name.clone());
        }
    });
    out
}

/// How an allocation wrapper makes each object it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WrapperKind {
    /// Every object it returns is new memory (or null).
    Plain,
    /// New memory on some paths, a block of its pool on others (`kmalloc`).
    Pool,
}

/// A place that holds a function pointer, as the walk names it without
/// types: a struct member by name, or a global variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Slot {
    Member(Name),
    Global(Name),
}

impl<'a> Walker<'a> {
    /// Does `f` only ever return memory it has just allocated (or null),
    /// itself or through such a wrapper? Such a wrapper (`xmalloc`,
    /// `alloc(ptr, size)` around `realloc`, `my_malloc` around `xmalloc`) is
    /// an allocation site at each of its call sites; otherwise every object
    /// a program allocates through it would be one.
    pub(super) fn is_alloc_wrapper(&self, f: FunctionId) -> bool {
        self.alloc_wrapper_at(f, 0)
    }

    /// [`is_alloc_wrapper`](Self::is_alloc_wrapper) with at most
    /// `MAX_WRAPPER_NESTING - level` wrappers below it. Cached by level,
    /// which makes the answer independent of the order of the questions.
    pub(super) fn alloc_wrapper_at(&self, f: FunctionId, level: u8) -> bool {
        if let Some(&w) = self.d.wrappers.borrow().get(&(f, level)) {
            return w;
        }
        let w = self.wrapper_kind(f, level).is_some();
        self.d.wrappers.borrow_mut().insert((f, level), w);
        w
    }

    /// Is `f` an allocation wrapper (see [`alloc_wrapper_at`](Self::alloc_wrapper_at)),
    /// and of which kind? Not cached.
    pub(super) fn wrapper_kind(&self, f: FunctionId, level: u8) -> Option<WrapperKind> {
        let s = self.summary(f);
        // A function that also starts threads (storing their ids into the
        // new object, handing it to them) is no mere allocator: the object
        // keeps the site inside it, where those stores name it.
        if s.models
            .values()
            .any(|m| matches!(m, CallModel::Create { .. }))
        {
            return None;
        }
        // The wrappers `f` calls (`my_malloc` around `xmalloc` around
        // `malloc`) allocate too, up to a few levels (a chain of thousands
        // of functions must not recurse as deep; a cycle ends at the limit).
        let mut wraps: FxHashMap<u32, bool> = FxHashMap::default();
        if level < MAX_WRAPPER_NESTING {
            visit_calls(&s.ir.body, &mut |c| {
                if let Callee::Direct(n) = &c.callee {
                    if s.models.contains_key(&c.id) {
                        return;
                    }
                    if let Some(defs) = self.prog.functions_named(n) {
                        let w = defs.len() == 1
                            && defs[0] != f
                            && self.alloc_wrapper_at(defs[0], level + 1);
                        wraps.insert(c.id, w);
                    }
                }
            });
        }
        // Calls through a function pointer that only ever holds allocation
        // wrappers (Remotery's `g_Settings.malloc`, set to `&CRTMalloc`).
        if level < MAX_WRAPPER_NESTING {
            visit_calls(&s.ir.body, &mut |c| {
                if let Some(slot) = self.slot_of(&s, &c.callee) {
                    if self.slot_allocates(&slot, level + 1) {
                        wraps.insert(c.id, true);
                    }
                }
            });
        }
        let allocates = |e: &Expr| {
            matches!(uncast(e), Expr::CallResult(id)
                if matches!(s.models.get(id), Some(CallModel::Alloc | CallModel::Realloc))
                    || wraps.get(id) == Some(&true))
        };
        let null = |e: &Expr| matches!(uncast(e), Expr::Int(0));
        // The locals that only ever hold new memory or null: every value
        // assigned to them is an allocation, null, or such a local
        // (`tmp = malloc(n); ptr = tmp; return ptr;`). The greatest such
        // set: start from every assigned local and drop until stable.
        let mut assigns: Vec<(Name, Expr)> = Vec::new();
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } = st
            {
                assigns.push((x.clone(), rhs.clone()));
            }
        });
        let mut holds: FxHashMap<Name, bool> =
            assigns.iter().map(|(x, _)| (x.clone(), true)).collect();
        // A parameter starts with what the caller passed: assigned only
        // itself moved along (`to += n; return to;`), it still points into
        // the caller's object, never to new memory. Unless the body first
        // of all gives it another value (`p = realloc(p, n); .. return p;`).
        let given: Vec<Name> =
            s.ir.params
                .iter()
                .map(|p| p.name.clone())
                .filter(|p| !overwritten_first(&s.ir.body, p))
                .collect();
        for p in &given {
            if let Some(h) = holds.get_mut(p) {
                *h = false;
            }
        }
        loop {
            let mut changed = false;
            for (x, rhs) in &assigns {
                if holds.get(x) != Some(&true) {
                    continue;
                }
                // Pointer arithmetic stays inside the new object.
                let ok = allocates(rhs)
                    || null(rhs)
                    || pointer_local(rhs).is_some_and(|y| {
                        holds.get(y) == Some(&true) && !s.ir.address_taken.contains(y)
                    });
                if !ok {
                    holds.insert(x.clone(), false);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // A mere allocator keeps no pointer to the new object: a holding
        // local whose value is stored anywhere but another holding local,
        // or handed to code that may keep it, makes `f` a constructor that
        // publishes (`c = malloc(..); table[fd] = c; return c;`), whose
        // object must keep its own site.
        let kept = |x: &Name| {
            let mut kept = false;
            visit_stmts(&s.ir.body, &mut |st| {
                if let Stmt::Assign { lhs, rhs } = st {
                    // Into a holding local, or into a new object.
                    if holds_value(rhs, x)
                        && !root_var(lhs).is_some_and(|y| holds.get(y) == Some(&true))
                    {
                        kept = true;
                    }
                }
            });
            visit_calls(&s.ir.body, &mut |c| {
                for (i, a) in c.args.iter().enumerate() {
                    if holds_value(a, x) && self.call_keeps(&s, c, i, level) {
                        kept = true;
                    }
                }
            });
            kept
        };
        let escaped: Vec<Name> = holds
            .iter()
            .filter(|(x, h)| **h && kept(x))
            .map(|(x, _)| x.clone())
            .collect();
        for x in escaped {
            if super::private::debug() {
                eprintln!("racelens: {} keeps {x}: no mere allocator", f.name(self.db));
            }
            holds.insert(x, false);
        }
        let (mut any, mut all) = (false, true);
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Return { value: Some(e), .. } = st {
                let e = uncast(e);
                // A local that only ever holds new memory (and whose address
                // nobody else can use to change it), or a pointer into it
                // (`return (char *) p + sizeof(size_t);` past a size header).
                let fresh = allocates(e)
                    || pointer_local(e).is_some_and(|x| {
                        holds.get(x) == Some(&true) && !s.ir.address_taken.contains(x)
                    });
                if fresh {
                    any = true;
                } else if !null(e) {
                    all = false;
                }
            }
        });
        if any && all {
            Some(WrapperKind::Plain)
        } else if self.returns_void_pointer(f)
            && self.pools(&s, &assigns, &given, &allocates, level)
        {
            Some(WrapperKind::Pool)
        } else {
            None
        }
    }

    /// The function-pointer slot a call goes through: a member
    /// (`(*g_Settings.malloc)(..)`, `s->alloc(..)`), or a global variable.
    fn slot_of(&self, s: &FunctionSummary, callee: &Callee) -> Option<Slot> {
        let mut e = match callee {
            Callee::Indirect(e) => e,
            Callee::Direct(n) => {
                let global = !local_names(s).contains(n) && self.prog.global(n).is_some();
                return global.then(|| Slot::Global(n.clone()));
            }
        };
        loop {
            match e {
                Expr::Deref(b) => e = b,
                Expr::Cast { value, .. } => e = value,
                _ => break,
            }
        }
        match e {
            Expr::Field { field, .. } => Some(Slot::Member(field.clone())),
            Expr::Var(n)
                if self.prog.global(&**n).is_some()
                    && self.prog.functions_named(&**n).is_none() =>
            {
                Some(Slot::Global(n.clone()))
            }
            _ => None,
        }
    }

    /// Does every value the program ever puts in `slot` name an allocation
    /// wrapper (at nesting `level`)? Every assignment to a member of that
    /// name (of any struct) or to the global, and every initializer of one,
    /// must name such a function, and there must be one; a member or global
    /// whose address is taken may be written through it, and is no such
    /// slot. Cached per slot and level.
    fn slot_allocates(&self, slot: &Slot, level: u8) -> bool {
        let key = (slot.clone(), level);
        if let Some(&v) = self.d.alloc_slots.borrow().get(&key) {
            return v;
        }
        // Asked again while answering (a wrapper that calls through its own
        // slot): no.
        self.d.alloc_slots.borrow_mut().insert(key.clone(), false);
        let index = self.slot_index();
        let (mut targets, ok) = index.get(slot).cloned().unwrap_or((Vec::new(), true));
        targets.sort();
        targets.dedup();
        let v = ok
            && !targets.is_empty()
            && targets.iter().all(|n| {
                self.prog
                    .functions_named(n)
                    .is_some_and(|d| d.len() == 1 && self.alloc_wrapper_at(d[0], level))
            });
        self.d.alloc_slots.borrow_mut().insert(key, v);
        v
    }

    /// What the program puts in each function-pointer slot: for every slot
    /// assigned or initialized anywhere, the functions named, and whether
    /// every value is a function and the slot's address is never taken.
    /// One pass over every body, kept until the store is asked again.
    fn slot_index(&self) -> Arc<FxHashMap<Slot, (Vec<Name>, bool)>> {
        if let Some(i) = self.d.alloc_slot_index.borrow().as_ref() {
            return i.clone();
        }
        let mut index: FxHashMap<Slot, (Vec<Name>, bool)> = FxHashMap::default();
        let put = |index: &mut FxHashMap<Slot, (Vec<Name>, bool)>, s: Slot, f: Option<Name>| {
            let e = index.entry(s).or_insert_with(|| (Vec::new(), true));
            match f {
                Some(n) => e.0.push(n),
                None => e.1 = false,
            }
        };
        for f in self.prog.functions.values().flatten() {
            for (k, v) in self.slot_puts(&self.summary(*f)) {
                put(&mut index, k, v);
            }
        }
        for fields in self.prog.global_init_fields.values() {
            for i in fields {
                if let Some(m) = &i.field {
                    let f = self.prog.functions_named(&i.name).map(|_| i.name.clone());
                    put(&mut index, Slot::Member(m.clone()), f);
                }
            }
        }
        for (g, names) in &self.prog.global_inits {
            for n in names {
                let f = self.prog.functions_named(n).map(|_| n.clone());
                put(&mut index, Slot::Global(g.clone()), f);
            }
        }
        let index = Arc::new(index);
        *self.d.alloc_slot_index.borrow_mut() = Some(index.clone());
        index
    }

    /// What one function puts in function-pointer slots, in order (see
    /// [`slot_index`](Self::slot_index)): the function named, or `None`
    /// for a value that is not one or an address taken. Two texts that put
    /// the same leave the index as it was.
    pub(super) fn slot_puts(&self, s: &FunctionSummary) -> Vec<(Slot, Option<Name>)> {
        let slot = |e: &Expr| match uncast(e) {
            Expr::Field { field, .. } => Some(Slot::Member(field.clone())),
            Expr::Var(n) if self.prog.global(n).is_some() => Some(Slot::Global(n.clone())),
            _ => None,
        };
        let function_named = |e: &Expr| -> Option<Name> {
            let e = match uncast(e) {
                Expr::AddrOf(x) => uncast(x),
                x => x,
            };
            match e {
                Expr::Var(n) if self.prog.functions_named(n).is_some() => Some(n.clone()),
                _ => None,
            }
        };
        let mut out = Vec::new();
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign { lhs, rhs } = st {
                if let Some(k) = slot(lhs) {
                    out.push((k, function_named(rhs)));
                }
                // Its address taken: it may be written through it.
                if let Expr::AddrOf(x) = uncast(rhs) {
                    if let Some(k) = slot(x) {
                        out.push((k, None));
                    }
                }
            }
        });
        visit_calls(&s.ir.body, &mut |c| {
            for a in &c.args {
                if let Expr::AddrOf(x) = uncast(a) {
                    if let Some(k) = slot(x) {
                        out.push((k, None));
                    }
                }
            }
        });
        out
    }

    /// Is `f` declared to return `void *`, C's type for untyped new memory
    /// (`malloc`'s own)?
    fn returns_void_pointer(&self, f: FunctionId) -> bool {
        let Some(t) = self.prog.returns.get(&**f.name(self.db)) else {
            return false;
        };
        let t = self.prog.resolve_type(t);
        t.pointer == 1 && t.name.as_deref() == Some("void")
    }

    /// Is the function of summary `s` (declared to return `void *`) a pool
    /// allocator: does it return new memory on some path, and memory of its
    /// own pool on others, keeping no pointer to what it allocates
    /// (`kmalloc(km, n)`: `malloc(n)` without an arena, else a block cut
    /// from the arena's free list; `do_cache_alloc(cache)`: a freed buffer
    /// taken off the cache's list, else `malloc`)? Each block such a pool
    /// hands out is its caller's until it is freed back, and reuse after a
    /// free is ordered by the pool (its lock, or its one thread), so each
    /// call is a new object as with `malloc`. A lookup that creates what it
    /// does not find (`e = find(t, k); if (!e) { e = malloc(..);
    /// insert(t, e); } return e;`) keeps its new object and is no pool.
    /// `given`: the parameters that may still hold the caller's value
    /// (not [`overwritten_first`]).
    fn pools(
        &self,
        s: &FunctionSummary,
        assigns: &[(Name, Expr)],
        given: &[Name],
        allocates: &dyn Fn(&Expr) -> bool,
        level: u8,
    ) -> bool {
        let mut args_of: FxHashMap<u32, Vec<Expr>> = FxHashMap::default();
        visit_calls(&s.ir.body, &mut |c| {
            args_of.insert(c.id, c.args.clone());
        });
        // The locals that may hold new memory: assigned an allocation, a
        // pointer into such a local, or what a call makes of one
        // (`object = get_object(ret)` past a red zone). Least set.
        let mut may: FxHashSet<Name> = FxHashSet::default();
        let mut through: FxHashSet<u32> = FxHashSet::default();
        loop {
            let mut changed = false;
            for (x, rhs) in assigns {
                let from_call = match uncast(rhs) {
                    Expr::CallResult(id) if !s.models.contains_key(id) => args_of
                        .get(id)
                        .filter(|args| args.iter().any(|a| may.iter().any(|y| holds_value(a, y))))
                        .map(|_| *id),
                    _ => None,
                };
                if allocates(rhs)
                    || pointer_local(rhs).is_some_and(|y| may.contains(y))
                    || from_call.is_some()
                {
                    changed |= from_call.is_some_and(|id| through.insert(id));
                    changed |= may.insert(x.clone());
                }
            }
            if !changed {
                break;
            }
        }
        if may.iter().any(|x| s.ir.address_taken.contains(x)) {
            return false;
        }
        // Kept: stored anywhere but into such a local, or handed to code
        // that may keep it (a call that only returns it, as `get_object`,
        // hands it back to a local of `may`).
        let mut kept = false;
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign { lhs, rhs } = st {
                if may.iter().any(|x| holds_value(rhs, x))
                    && !root_var(lhs)
                        .is_some_and(|y| may.contains(y) && matches!(lhs, Expr::Var(_)))
                {
                    kept = true;
                }
            }
        });
        visit_calls(&s.ir.body, &mut |c| {
            for (i, a) in c.args.iter().enumerate() {
                if kept || !may.iter().any(|x| holds_value(a, x)) {
                    continue;
                }
                kept = match through.contains(&c.id) {
                    true => self.call_stores(s, c, i, level),
                    false => self.call_keeps(s, c, i, level),
                };
            }
        });
        if kept {
            return false;
        }
        // A pool takes the block it hands out off the pool it is given: it
        // writes memory it reaches from its parameters, through them or
        // through its own locals (`cache->freecurr--`, `q->ptr = p->ptr`
        // with `q = km->loop_head`), not the new memory. A getter that
        // returns a cached object or new memory and changes no pool (at
        // most a global counter) is no pool.
        let params: Vec<&Name> = s.ir.params.iter().map(|p| &p.name).collect();
        let locals = local_names(s);
        let mut takes = false;
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign { lhs, .. } = st {
                takes |= !matches!(lhs, Expr::Var(_))
                    && root_var(lhs).is_some_and(|y| locals.contains(y) && !may.contains(y));
            }
        });
        let reallocates = s.models.values().any(|m| matches!(m, CallModel::Realloc));
        // The locals that may still hold what a parameter was given (`if
        // (!buf) buf = malloc(n); return buf;` gives the caller's `buf`
        // back when it is not null): a parameter not given another value
        // first of all (`given`), and the locals copied from one. Least set.
        let mut callers: FxHashSet<Name> = given.iter().cloned().collect();
        loop {
            let mut changed = false;
            for (x, rhs) in assigns {
                if pointer_local(rhs).is_some_and(|y| callers.contains(y)) {
                    changed |= callers.insert(x.clone());
                }
            }
            if !changed {
                break;
            }
        }
        let (mut any, mut caller_object) = (false, false);
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Return { value: Some(e), .. } = st {
                let fresh = allocates(e) || pointer_local(e).is_some_and(|x| may.contains(x));
                any |= fresh;
                // The caller's own object given back (`return ap;` when it
                // is big enough) is a new object only for a realloc-like
                // function, whose callers drop the old pointer.
                caller_object |= (!fresh && params.iter().any(|p| holds_value(e, p)))
                    || pointer_local(e).is_some_and(|x| callers.contains(x));
            }
        });
        // A realloc-like function (`krealloc(km, ap, n)`, which gives `ap`
        // back when it is big enough) changes no pool of its own either.
        any && (takes || reallocates) && (!caller_object || reallocates)
    }

    /// May call `c` of a function with summary `s` keep the pointer passed
    /// as its argument `i` once it returns (store it, hand it to a thread,
    /// return it)? A modelled library call keeps it only when it creates a
    /// thread or stores atomically; a function with a body keeps it when its
    /// parameter may be stored or handed on to a call that keeps it (a few
    /// levels deep; deeper, or unknown, it may).
    pub(super) fn call_keeps(&self, s: &FunctionSummary, c: &Call, i: usize, level: u8) -> bool {
        self.call_retains(s, c, i, level, true)
    }

    /// [`call_keeps`](Self::call_keeps), except that returning the pointer
    /// does not count (`get_object(ptr)` returns `ptr` past a header).
    fn call_stores(&self, s: &FunctionSummary, c: &Call, i: usize, level: u8) -> bool {
        self.call_retains(s, c, i, level, false)
    }

    fn call_retains(
        &self,
        s: &FunctionSummary,
        c: &Call,
        i: usize,
        level: u8,
        returning: bool,
    ) -> bool {
        if let Some(m) = s.models.get(&c.id) {
            return matches!(
                m,
                CallModel::Create { .. } | CallModel::Once { .. } | CallModel::Atomic
            );
        }
        let Callee::Direct(n) = &c.callee else {
            return true;
        };
        let Some(defs) = self.prog.functions_named(n) else {
            return !does_not_retain(n);
        };
        if level >= MAX_WRAPPER_NESTING || defs.len() != 1 {
            return true;
        }
        self.param_kept(&self.summary(defs[0]), i, level + 1, returning)
    }

    /// May the function of summary `g` keep the pointer passed as its
    /// parameter `i` (see [`call_keeps`](Self::call_keeps)), looking at
    /// most `MAX_WRAPPER_NESTING - level` calls deeper?
    fn param_kept(&self, g: &FunctionSummary, i: usize, level: u8, returning: bool) -> bool {
        let Some(p) = g.ir.params.get(i).map(|p| p.name.clone()) else {
            // A variadic argument.
            return true;
        };
        if g.ir.address_taken.contains(&p) {
            return true;
        }
        // The locals that hold `p`'s value (`uint64_t *pre = ptr;`): what
        // happens to them happens to `p`.
        let held = param_holders(g, &p);
        let holds = |e: &Expr| held.iter().any(|x| holds_value(e, x));
        let mut kept = false;
        visit_stmts(&g.ir.body, &mut |st| match st {
            Stmt::Assign { lhs, rhs } if holds(rhs) => {
                kept |= !matches!(lhs, Expr::Var(y) if held.contains(y));
            }
            Stmt::Return { value: Some(e), .. } if holds(e) => kept |= returning,
            _ => {}
        });
        if !kept {
            visit_calls(&g.ir.body, &mut |c2| {
                for (j, a) in c2.args.iter().enumerate() {
                    if !kept && holds(a) && self.call_keeps(g, c2, j, level) {
                        kept = true;
                    }
                }
            });
        }
        kept
    }
}

/// The locals of `s` that hold the value of parameter `p` (up to casts and
/// offsets; `p` included, locals whose address is taken not). Least set.
pub(super) fn param_holders(s: &FunctionSummary, p: &Name) -> FxHashSet<Name> {
    let locals = local_names(s);
    let mut held: FxHashSet<Name> = FxHashSet::from_iter([p.clone()]);
    loop {
        let mut changed = false;
        visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Assign {
                lhs: Expr::Var(y),
                rhs,
            } = st
            {
                if locals.contains(y)
                    && !s.ir.address_taken.contains(y)
                    && held.iter().any(|x| holds_value(rhs, x))
                {
                    changed |= held.insert(y.clone());
                }
            }
        });
        if !changed {
            break;
        }
    }
    held
}

impl<'a> Walker<'a> {
    /// The parameters of allocation wrapper `g` whose objects its new
    /// object may be, or may hold what they held: it returns them (`krealloc`
    /// gives back `ap` when it is big enough) or hands them to `realloc`
    /// (or to such a wrapper, at most `MAX_WRAPPER_NESTING - level` deep).
    /// A call's new object holds what *that call's* arguments held there
    /// (`copied_into`), not what every caller's did. Cached at level 0
    /// (`WalkData::passed_on`, dropped with the wrapper verdicts).
    pub(super) fn passed_on_params(&self, g: FunctionId, level: u8) -> Arc<[usize]> {
        if level == 0 {
            if let Some(v) = self.d.passed_on.borrow().get(&g) {
                return v.clone();
            }
        }
        let s = self.summary(g);
        let mut out = Vec::new();
        for (i, p) in s.ir.params.iter().enumerate() {
            let held = param_holders(&s, &p.name);
            let holds = |e: &Expr| held.iter().any(|x| holds_value(e, x));
            let mut on = false;
            visit_stmts(&s.ir.body, &mut |st| {
                on |= matches!(st, Stmt::Return { value: Some(e), .. } if holds(e));
            });
            visit_calls(&s.ir.body, &mut |c| {
                if on {
                    return;
                }
                for (j, a) in c.args.iter().enumerate() {
                    if !holds(a) {
                        continue;
                    }
                    on |= match s.models.get(&c.id) {
                        Some(m) => j == 0 && matches!(m, CallModel::Realloc),
                        None => match &c.callee {
                            Callee::Direct(n) if level < MAX_WRAPPER_NESTING => self
                                .prog
                                .functions_named(n)
                                .filter(|defs| defs.len() == 1 && defs[0] != g)
                                .is_some_and(|defs| {
                                    self.is_alloc_wrapper(defs[0])
                                        && self.passed_on_params(defs[0], level + 1).contains(&j)
                                }),
                            _ => false,
                        },
                    };
                }
            });
            if on {
                out.push(i);
            }
        }
        let out: Arc<[usize]> = out.into();
        if level == 0 {
            self.d.passed_on.borrow_mut().insert(g, out.clone());
        }
        out
    }

    /// Does `realloc` call `c` of an allocation wrapper's frame reallocate
    /// what a parameter points to (`realloc(ap, n)` in `krealloc`)? Its
    /// caller's call copies that argument's contents itself
    /// ([`passed_on_params`](Self::passed_on_params)); in the wrapper's own
    /// site they would join every caller's.
    pub(super) fn reallocates_param(&self, fid: FunctionId, c: &Call) -> bool {
        let Some(a) = c.args.first() else {
            return false;
        };
        if !self.is_alloc_wrapper(fid) {
            return false;
        }
        let s = self.summary(fid);
        s.ir.params
            .iter()
            .any(|p| param_holders(&s, &p.name).iter().any(|x| holds_value(a, x)))
    }
}
