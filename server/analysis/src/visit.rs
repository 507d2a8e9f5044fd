//! Visitors over a function's lowered statements (the IR of
//! `racelens_syntax`, whose statement visitor this re-exports): every
//! statement, nested ones included, every statement list, every call,
//! every variable name an expression mentions, and every name whose
//! address it takes. A leaf module: the database ([`crate::db`]), the thread walk and
//! the explanations and fixes all use it, and it uses none of them.

use racelens_syntax::{Call, Expr, Name, Stmt};

/// Visits every statement, nested ones included (the syntax layer's
/// visitor, which its own rewrites share).
pub use racelens_syntax::visit_stmts;

/// Visits every call, nested ones included.
pub fn visit_calls(stmts: &[Stmt], f: &mut dyn FnMut(&Call)) {
    visit_stmts(stmts, &mut |s| {
        if let Stmt::Call(c) = s {
            f(c)
        }
    });
}

/// Visits every statement list (a body, a branch, a loop's body or
/// condition, a switch arm), outer lists before the lists nested in them.
pub fn visit_blocks(stmts: &[Stmt], f: &mut dyn FnMut(&[Stmt])) {
    f(stmts);
    visit_stmts(stmts, &mut |s| match s {
        Stmt::If {
            cond, then, els, ..
        } => {
            f(cond);
            f(then);
            f(els);
        }
        Stmt::Loop { cond, body, .. } => {
            f(cond);
            f(body);
        }
        Stmt::Switch { cond, arms, .. } => {
            f(cond);
            for a in arms {
                f(a);
            }
        }
        _ => {}
    });
}

/// Visits every variable name `e` mentions, index variables included.
pub fn visit_names(e: &Expr, f: &mut dyn FnMut(&Name)) {
    match e {
        Expr::Var(n) => f(n),
        Expr::Field { base, .. } => visit_names(base, f),
        Expr::Index {
            base, var, affine, ..
        } => {
            visit_names(base, f);
            if let Some(v) = var {
                f(v);
            }
            if let Some(a) = affine {
                f(&a.scaled);
                if let racelens_syntax::AffineOffset::Var(v) = &a.offset {
                    f(v);
                }
            }
        }
        Expr::Deref(x) | Expr::AddrOf(x) | Expr::Offset(x) => visit_names(x, f),
        Expr::Cast { value, .. } => visit_names(value, f),
        Expr::Choice(xs) => xs.iter().for_each(|x| visit_names(x, f)),
        Expr::Init(xs) => xs.iter().for_each(|(_, x)| visit_names(x, f)),
        Expr::CallResult(_) | Expr::Int(_) | Expr::Str | Expr::Other => {}
    }
}

/// Does `e` mention variable `v` (see [`visit_names`])?
pub fn mentions(e: &Expr, v: &Name) -> bool {
    let mut hit = false;
    visit_names(e, &mut |n| hit |= n == v);
    hit
}

/// Calls `f` for each name whose address `e` takes: every name inside the
/// operand of a `&` reached through `e`'s members, dereferences, offsets,
/// indexed bases, casts and choices (`&g`, `&g.f`, and, conservatively,
/// `i` in `&a[i]`).
pub fn visit_addr_names(e: &Expr, f: &mut dyn FnMut(&Name)) {
    match e {
        Expr::AddrOf(x) => visit_names(x, f),
        Expr::Field { base, .. }
        | Expr::Deref(base)
        | Expr::Offset(base)
        | Expr::Index { base, .. } => visit_addr_names(base, f),
        Expr::Cast { value, .. } => visit_addr_names(value, f),
        Expr::Choice(xs) => xs.iter().for_each(|x| visit_addr_names(x, f)),
        _ => {}
    }
}

/// Does `e` take the address of `v` (see [`visit_addr_names`])?
pub fn mentions_addr(e: &Expr, v: &Name) -> bool {
    let mut hit = false;
    visit_addr_names(e, &mut |n| hit |= n == v);
    hit
}
