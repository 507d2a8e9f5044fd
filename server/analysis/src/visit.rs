//! Visitors over a function's lowered statements (the IR of
//! `racelens_syntax`): every statement, nested ones included, and every
//! call. A leaf module: the database ([`crate::db`]), the thread walk and
//! the explanations and fixes all use it, and it uses none of them.

use racelens_syntax::{Call, Stmt};

/// Visits every statement, nested ones included.
pub fn visit_stmts(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                visit_stmts(cond, f);
                visit_stmts(then, f);
                visit_stmts(els, f);
            }
            Stmt::Loop { cond, body, .. } => {
                visit_stmts(cond, f);
                visit_stmts(body, f);
            }
            Stmt::Switch { cond, arms, .. } => {
                visit_stmts(cond, f);
                for a in arms {
                    visit_stmts(a, f);
                }
            }
            _ => {}
        }
    }
}

/// Visits every call, nested ones included.
pub fn visit_calls(stmts: &[Stmt], f: &mut dyn FnMut(&Call)) {
    visit_stmts(stmts, &mut |s| {
        if let Stmt::Call(c) = s {
            f(c)
        }
    });
}
