//! Casts that the parser read as calls.
//!
//! `(T)(x)` is a cast when `T` names a type, and a call through the
//! pointer `T` when `T` is a variable. tree-sitter-c cannot know which
//! without the declarations, and parses it as a call; the lowering then
//! records an indirect call through `T` with the argument `x`. Walked as
//! such, unknown code would keep `x` (publishing a heap object), may write
//! through it, and the result would point nowhere the walk knows
//! (`struct obj *o = (var)(arg);` lost its object and fell back to
//! type-based locations).
//!
//! [`typedef_casts`] rewrites such calls, once the program's type names
//! are known, into what they are: the call statement goes, and each use of
//! its result becomes `Expr::Cast { ty: T, value: x }`.
//! Invariant: only an indirect call through a bare name that the function
//! does not declare (a parameter or local) and that names a type, with
//! exactly one argument, is rewritten; the read of the name as a function
//! pointer, recorded before the call, goes with it.

use crate::ir::{Access, Callee, Expr, FnIr, Name, Stmt};
use rustc_hash::FxHashMap;

/// The names `ir` calls as `(n)(x)` that it does not declare itself: the
/// candidates for [`typedef_casts`]. Empty for almost every function.
pub fn cast_candidates(ir: &FnIr) -> Vec<Name> {
    let mut declared: Vec<Name> = ir.params.iter().map(|p| p.name.clone()).collect();
    crate::rename::declared_in(&ir.body, &mut declared);
    let mut out = Vec::new();
    crate::ir::visit_stmts(&ir.body, &mut |s| {
        if let Stmt::Call(c) = s {
            if let (Callee::Indirect(Expr::Var(n)), 1) = (&c.callee, c.args.len()) {
                if !declared.contains(n) && !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
    });
    out
}

/// `ir` with each call `(T)(x)` whose `T`, one of its `candidates` (see
/// [`cast_candidates`]), satisfies `is_type` turned into the cast it is.
/// `None` when there is none.
pub fn typedef_casts(
    ir: &FnIr,
    candidates: &[Name],
    is_type: &dyn Fn(&str) -> bool,
) -> Option<FnIr> {
    let types: Vec<Name> = candidates.iter().filter(|n| is_type(n)).cloned().collect();
    if types.is_empty() {
        return None;
    }
    let mut out = ir.clone();
    let mut casts: FxHashMap<u32, Expr> = FxHashMap::default();
    strip(&mut out.body, &types, &mut casts);
    if casts.is_empty() {
        return None;
    }
    // A cast of a cast (`(T)((U)(x))`): the inner result is replaced
    // inside the outer one's value first (calls are numbered in order).
    let mut ids: Vec<u32> = casts.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let mut e = casts[&id].clone();
        subst(&mut e, &casts);
        casts.insert(id, e);
    }
    stmts(&mut out.body, &casts);
    Some(out)
}

/// Removes the cast calls (and the read of their type name as a function
/// pointer) from `body`, noting each one's replacement.
fn strip(body: &mut Vec<Stmt>, types: &[Name], casts: &mut FxHashMap<u32, Expr>) {
    let is_cast = |s: &Stmt| match s {
        Stmt::Call(c) => {
            matches!(&c.callee, Callee::Indirect(Expr::Var(n)) if types.contains(n))
                && c.args.len() == 1
        }
        _ => false,
    };
    let mut keep = vec![true; body.len()];
    for i in 0..body.len() {
        if !is_cast(&body[i]) {
            continue;
        }
        let Stmt::Call(c) = &body[i] else { continue };
        let Callee::Indirect(Expr::Var(ty)) = &c.callee else {
            continue;
        };
        casts.insert(
            c.id,
            Expr::Cast {
                ty: Some(ty.clone()),
                pointer: 0,
                value: Box::new(c.args[0].clone()),
            },
        );
        keep[i] = false;
        // The lowering reads the callee before the call.
        for j in (0..i).rev() {
            match &body[j] {
                Stmt::Access(Access {
                    place: Expr::Var(n),
                    ..
                }) if n == ty => {
                    keep[j] = false;
                    break;
                }
                Stmt::Access(_) => continue,
                _ => break,
            }
        }
    }
    let mut i = 0;
    body.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    for s in body.iter_mut() {
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                strip(cond, types, casts);
                strip(then, types, casts);
                strip(els, types, casts);
            }
            Stmt::Loop { cond, body, .. } => {
                strip(cond, types, casts);
                strip(body, types, casts);
            }
            Stmt::Switch { cond, arms, .. } => {
                strip(cond, types, casts);
                for a in arms {
                    strip(a, types, casts);
                }
            }
            _ => {}
        }
    }
}

fn stmts(body: &mut [Stmt], casts: &FxHashMap<u32, Expr>) {
    crate::ir::visit_stmts_mut(body, &mut |s| {
        crate::ir::stmt_exprs_mut(s, &mut |e| subst(e, casts))
    });
}

fn subst(e: &mut Expr, casts: &FxHashMap<u32, Expr>) {
    match e {
        Expr::CallResult(id) => {
            if let Some(r) = casts.get(id) {
                *e = r.clone();
            }
        }
        Expr::Field { base, .. } | Expr::Index { base, .. } => subst(base, casts),
        Expr::Deref(b) | Expr::AddrOf(b) | Expr::Offset(b) => subst(b, casts),
        Expr::Cast { value, .. } => subst(value, casts),
        Expr::Choice(v) => v.iter_mut().for_each(|x| subst(x, casts)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(src: &str) -> FnIr {
        crate::lower_function(src, &crate::MacroTable::default())
    }

    #[test]
    fn a_typedef_name_called_is_a_cast() {
        let ir = lower(
            "void *f(void *arg) { struct obj *o = (var)(arg); o->n = (u32)(o->n + 1); return o; }",
        );
        assert_eq!(
            cast_candidates(&ir),
            vec![Name::from("var"), Name::from("u32")]
        );
        let out = typedef_casts(&ir, &cast_candidates(&ir), &|n| n == "var" || n == "u32")
            .expect("rewritten");
        let dump = format!("{:?}", out.body);
        assert!(!dump.contains("Call("), "no call is left: {dump}");
        assert!(!dump.contains("CallResult"), "{dump}");
        assert!(
            dump.contains("Cast { ty: Some(\"var\"), pointer: 0, value: Var(\"arg\") }"),
            "{dump}"
        );
        assert!(
            !dump.contains("place: Var(\"var\")"),
            "the type is not read: {dump}"
        );
    }

    #[test]
    fn a_declared_pointer_or_a_non_type_stays_a_call() {
        let ir = lower("void f(void (*fp)(int), int x) { (fp)(x); (hook)(x); }");
        assert_eq!(cast_candidates(&ir), vec![Name::from("hook")]);
        assert!(typedef_casts(&ir, &cast_candidates(&ir), &|n| n == "fp").is_none());
        assert!(typedef_casts(&ir, &cast_candidates(&ir), &|_| false).is_none());
    }

    #[test]
    fn nested_casts_compose() {
        let ir = lower("int f(long x) { return (u32)((u16)(x)); }");
        let out = typedef_casts(&ir, &cast_candidates(&ir), &|n| n == "u32" || n == "u16")
            .expect("rewritten");
        let dump = format!("{:?}", out.body);
        assert!(
            dump.contains(
                "Cast { ty: Some(\"u32\"), pointer: 0, value: Cast { ty: Some(\"u16\"), pointer: 0, value: Var(\"x\") } }"
            ),
            "{dump}"
        );
    }
}
