//! Where a frame lends its locals: which locals have their address taken,
//! whole or in part, and which accesses by name come before the frame
//! lends them at all.
//!
//! *Lent locals* ([`lent_locals`]). `&x` lends `x`; so do `&x.f`, `&x.a[i]`
//! and `&arr[i]` of an array, and an array used as a value (`g = buf`,
//! `strcpy(x.buf, ..)`: it decays to its address, C11 6.3.2.1p3). The
//! lowering notes `&` through members (`FnIr::address_taken`); elements
//! and decays need types (`&p[i]` of a pointer lends none of `p`), which
//! the frame adds from here. Whether the address reaches another thread is
//! the race check's question (`escaped_locals`); a local never lent is one
//! object per frame and is not recorded at all.
//!
//! *Early accesses* ([`early_accesses`]). Another thread reaches a frame's
//! `x` only through an address that frame lent. So an access to `x` by
//! name made before the frame lends `x` in any way touches an object no
//! other thread can reach yet: its frame initialises a context before
//! handing `&c` out (`c.prev = parent; run(&c)`), and two threads running
//! the function must not meet there. An access is early when it lies in
//! the function's straight prefix (the statements before the first loop,
//! label or `setjmp` call, in body order: nothing there runs twice in one
//! frame), after no statement that lends `x`, and before the first `&`
//! applied to `x` in the text (`FnIr::address_at`, which also sees an `&`
//! inside arithmetic the IR keeps no value of). Arrays are never early:
//! their decays leave no offset.
//!
//! Invariant: both are facts of the function's summary and the program's
//! types alone (built once per function and walk, in its `FrameBase`).
//!
//! Under-approximation (it may hide a race): a frame that lends `&x` with
//! a relaxed atomic store, so that another thread's access through it is
//! ordered after no early access, is not seen; so is an address that
//! leaves through an integer (`(long) &x + 0` in arithmetic is still seen
//! by its offset, a later copy of that integer is not).

use crate::db::Program;
use racelens_syntax::{Callee, Expr, Name, Span, Stmt, TypeInfo};
use rustc_hash::{FxHashMap, FxHashSet};

/// The type of a place inside a local's own storage (`x`, `x.f`, `x.a[i]`),
/// as far as members and array elements go; `None` past a pointer.
fn local_type(e: &Expr, locals: &FxHashMap<Name, TypeInfo>, prog: &Program) -> Option<TypeInfo> {
    match e {
        Expr::Var(x) => locals.get(x).cloned(),
        Expr::Field {
            base,
            field,
            arrow: false,
        } => {
            let bt = local_type(base, locals, prog)?;
            if bt.pointer > 0 || bt.array {
                return None;
            }
            Some(prog.resolve_type(prog.field_type(bt.name.as_deref()?, field)?))
        }
        Expr::Index { base, .. } => {
            let mut t = local_type(base, locals, prog)?;
            if !(t.array || t.rows > 0) {
                return None;
            }
            t.index_once();
            Some(t)
        }
        _ => None,
    }
}

/// The non-static local whose own storage place `e` lies in (`x`, `x.f`,
/// `x.a[i]`, `arr[i]`), by type: `p[i]` of a pointer lies elsewhere.
pub(super) fn local_root<'e>(
    e: &'e Expr,
    locals: &FxHashMap<Name, TypeInfo>,
    prog: &Program,
) -> Option<&'e Name> {
    match e {
        Expr::Var(x) => locals.get(x).is_some_and(|t| !t.is_static).then_some(x),
        Expr::Field {
            base, arrow: false, ..
        } => local_root(base, locals, prog),
        Expr::Index { base, .. } => {
            let t = local_type(base, locals, prog)?;
            if t.array || t.rows > 0 {
                local_root(base, locals, prog)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The locals statement `s` itself lends (not those of statements nested
/// in it): every `&` of a place in a local's storage, anywhere in its
/// expressions, and every array in a local's storage used as a value.
fn lends(s: &Stmt, locals: &FxHashMap<Name, TypeInfo>, prog: &Program, out: &mut Vec<Name>) {
    let addrs = |e: &Expr, out: &mut Vec<Name>| {
        each_address(e, &mut |p| out.extend(local_root(p, locals, prog).cloned()))
    };
    let values = |e: &Expr, out: &mut Vec<Name>| {
        addrs(e, out);
        decays(e, &mut |p| {
            if local_type(p, locals, prog).is_some_and(|t| t.array) {
                out.extend(local_root(p, locals, prog).cloned());
            }
        });
    };
    match s {
        Stmt::Assign { lhs, rhs } => {
            addrs(lhs, out);
            values(rhs, out);
        }
        Stmt::Call(c) => {
            c.args.iter().for_each(|a| values(a, out));
            if let Callee::Indirect(e) = &c.callee {
                addrs(e, out);
            }
        }
        Stmt::Access(a) => addrs(&a.place, out),
        Stmt::Return { value: Some(v), .. } => values(v, out),
        _ => {}
    }
}

/// Calls `f` with the place under every `&` in `e`, outer first.
pub(super) fn each_address(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    match e {
        Expr::AddrOf(p) => {
            f(p);
            each_address(p, f);
        }
        Expr::Var(_) | Expr::CallResult(_) | Expr::Int(_) | Expr::Str | Expr::Other => {}
        Expr::Field { base, .. }
        | Expr::Index { base, .. }
        | Expr::Deref(base)
        | Expr::Offset(base) => each_address(base, f),
        Expr::Cast { value, .. } => each_address(value, f),
        Expr::Choice(v) => v.iter().for_each(|x| each_address(x, f)),
        Expr::Init(v) => v.iter().for_each(|(_, x)| each_address(x, f)),
    }
}

/// Calls `f` with every place a value `e` may be the decayed address of:
/// the value itself under casts, offsets (`buf + n`), choices and
/// initializer lists.
fn decays(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    match e {
        Expr::Var(_) | Expr::Field { .. } | Expr::Index { .. } => f(e),
        Expr::Cast { value, .. } | Expr::Offset(value) => decays(value, f),
        Expr::Choice(xs) => xs.iter().for_each(|x| decays(x, f)),
        Expr::Init(xs) => xs.iter().for_each(|(_, x)| decays(x, f)),
        _ => {}
    }
}

/// The non-static locals `body` lends anywhere, sorted (see the module
/// doc); the lowering's `address_taken` holds those lent by `&` through
/// members already.
pub(super) fn lent_locals(
    body: &[Stmt],
    locals: &FxHashMap<Name, TypeInfo>,
    prog: &Program,
) -> Vec<Name> {
    let mut names = Vec::new();
    racelens_syntax::visit_stmts(body, &mut |s| lends(s, locals, prog, &mut names));
    names.sort();
    names.dedup();
    names
}

/// A call that may return twice (`setjmp`): what follows it may run again.
fn returns_twice(s: &Stmt) -> bool {
    matches!(s, Stmt::Call(c) if matches!(&c.callee, Callee::Direct(n)
        if matches!(&**n, "setjmp" | "_setjmp" | "sigsetjmp" | "__sigsetjmp" | "__builtin_setjmp" | "savectx" | "vfork")))
}

/// The early accesses of a function (see the module doc): the span of each
/// access statement, with the local it touches by name, made before its
/// frame lends that local. Only lent, non-array locals are of interest
/// (`lent`: the frame's lent locals; others are never recorded).
pub(super) fn early_accesses(
    body: &[Stmt],
    address_at: &[(Name, u32)],
    lent: &FxHashSet<Name>,
    locals: &FxHashMap<Name, TypeInfo>,
    prog: &Program,
) -> FxHashSet<(Span, Name)> {
    let mut early = FxHashSet::default();
    if lent.is_empty() {
        return early;
    }
    let first_at = |x: &Name| match address_at.binary_search_by(|(y, _)| y.cmp(x)) {
        Ok(i) => address_at[i].1,
        Err(_) => u32::MAX,
    };
    let mut straight = true;
    let mut lent_so_far: Vec<Name> = Vec::new();
    racelens_syntax::visit_stmts(body, &mut |s| {
        if !straight {
            return;
        }
        if matches!(s, Stmt::Loop { .. } | Stmt::Label(_)) || returns_twice(s) {
            straight = false;
            return;
        }
        lends(s, locals, prog, &mut lent_so_far);
        let Stmt::Access(a) = s else { return };
        let Some(x) = local_root(&a.place, locals, prog) else {
            return;
        };
        if lent.contains(x)
            && locals.get(x).is_some_and(|t| !t.array)
            && !lent_so_far.contains(x)
            && a.span.start < first_at(x)
        {
            early.insert((a.span, x.clone()));
        }
    });
    early
}
