//! Renaming the file-scope statics of one translation unit in a lowered
//! function, so that two units' `static int counter;` stay two objects
//! once their functions meet in one program.
//!
//! A renamed name is `name@unit` (`@` cannot occur in a C identifier);
//! [`source_name`] gives back what the user wrote. Names that the function
//! declares itself (parameters, locals anywhere in its body) are left
//! alone: a local that shadows a static in one block keeps the static's
//! other uses under the old name, a rare imprecision.

use crate::ir::{Callee, Expr, FnIr, Name, Stmt, Test};
use rustc_hash::FxHashMap;

/// The name as written in the source: `counter@a.c` is `counter`.
pub fn source_name(n: &str) -> &str {
    n.split('@').next().unwrap_or(n)
}

/// `ir` with the names of `map` renamed.
pub fn rename(ir: &FnIr, map: &FxHashMap<Name, Name>) -> FnIr {
    let mut declared: Vec<Name> = ir.params.iter().map(|p| p.name.clone()).collect();
    crate::rename::decls(&ir.body, &mut declared);
    let map: FxHashMap<Name, Name> = map
        .iter()
        .filter(|(k, _)| !declared.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut out = ir.clone();
    if !map.is_empty() {
        stmts(&mut out.body, &map);
    }
    out
}

/// The names `body` declares (locals of any block).
pub(crate) fn declared_in(body: &[Stmt], out: &mut Vec<Name>) {
    decls(body, out)
}

fn decls(body: &[Stmt], out: &mut Vec<Name>) {
    crate::ir::visit_stmts(body, &mut |s| {
        if let Stmt::Decl(d) = s {
            out.push(d.name.clone());
        }
    });
}

fn name(n: &mut Name, map: &FxHashMap<Name, Name>) {
    if let Some(m) = map.get(n) {
        *n = m.clone();
    }
}

fn stmts(body: &mut [Stmt], map: &FxHashMap<Name, Name>) {
    crate::ir::visit_stmts_mut(body, &mut |s| {
        crate::ir::stmt_exprs_mut(s, &mut |e| expr(e, map));
        match s {
            Stmt::Call(c) => {
                if let Callee::Direct(n) = &mut c.callee {
                    name(n, map);
                }
            }
            Stmt::If { test, .. } | Stmt::Loop { test, .. } => test_names(test, map),
            Stmt::Switch { var: Some(v), .. } => name(v, map),
            _ => {}
        }
    });
}

fn test_names(t: &mut Test, map: &FxHashMap<Name, Name>) {
    if let Test::Positive { var } = t {
        name(var, map);
    }
    if let Test::VarZero { var, .. } | Test::Compare { var, .. } = t {
        // A member chain (`conf.quiet`) renames its head.
        match var.split_once('.') {
            Some((head, rest)) => {
                let mut h: Name = head.into();
                name(&mut h, map);
                if *h != *head {
                    *var = format!("{h}.{rest}").into();
                }
            }
            None => name(var, map),
        }
    }
}

fn expr(e: &mut Expr, map: &FxHashMap<Name, Name>) {
    match e {
        Expr::Var(n) => name(n, map),
        Expr::Field { base, .. } => expr(base, map),
        Expr::Index {
            base, var, affine, ..
        } => {
            expr(base, map);
            if let Some(v) = var {
                name(v, map);
            }
            if let Some(a) = affine {
                name(&mut a.scaled, map);
                if let crate::ir::AffineOffset::Var(v) = &mut a.offset {
                    name(v, map);
                }
            }
        }
        Expr::Deref(b) | Expr::AddrOf(b) | Expr::Offset(b) => expr(b, map),
        Expr::Cast { value, .. } => expr(value, map),
        Expr::Choice(v) => v.iter_mut().for_each(|x| expr(x, map)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statics_are_renamed_unless_declared_locally() {
        let src = "void f(int n) { counter++; g(&counter); n++; int tmp = counter; }";
        let ir = crate::lower_function(src, &crate::MacroTable::default());
        let map: FxHashMap<Name, Name> =
            [("counter", "counter@a.c"), ("n", "n@a.c"), ("g", "g@a.c")]
                .into_iter()
                .map(|(a, b)| (Name::from(a), Name::from(b)))
                .collect();
        let out = format!("{:?}", rename(&ir, &map).body);
        assert!(out.contains("counter@a.c") && out.contains("g@a.c"));
        assert!(!out.contains("n@a.c"), "a parameter shadows the static");
        assert_eq!(source_name("counter@a.c"), "counter");
    }
}
