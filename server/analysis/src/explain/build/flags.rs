//! Which globals the model tracks as flags: plain scalars tested by an
//! `if` or loop condition, never atomic and never reached by address, with
//! their initial values.

use super::local_names;
use crate::db::{program, walk_summary, Workspace};
use racelens_syntax::{Expr, Name, Stmt, Test};
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Globals tested as plain flags (`if (ready)`, `while (!done)`), scalar,
/// never atomic and never reached through their address, with their
/// initial value when the program text gives one.
#[salsa::tracked(returns(ref))]
pub(super) fn flag_candidates(
    db: &dyn salsa::Database,
    ws: Workspace,
) -> Arc<BTreeMap<Name, Option<i64>>> {
    let prog = program(db, ws);
    let mut tested: FxHashSet<Name> = FxHashSet::default();
    let mut escaped: FxHashSet<Name> = FxHashSet::default();
    for f in prog.functions.values().flatten() {
        let s = walk_summary(db, *f);
        let locals = local_names(s);
        crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
            Stmt::If {
                test: Test::VarZero { var, .. },
                ..
            }
            | Stmt::Loop {
                test: Test::VarZero { var, .. },
                ..
            } if !locals.contains_key(var) => {
                tested.insert(var.clone());
            }
            Stmt::Call(c) => {
                for a in &c.args {
                    if let Expr::AddrOf(p) = a {
                        if let Expr::Var(v) = &**p {
                            escaped.insert(v.clone());
                        }
                    }
                }
            }
            Stmt::Assign {
                rhs: Expr::AddrOf(p),
                ..
            } => {
                if let Expr::Var(v) = &**p {
                    escaped.insert(v.clone());
                }
            }
            _ => {}
        });
    }
    let mut out = BTreeMap::new();
    for v in tested {
        let Some(ty) = prog.globals.get(&v) else {
            continue;
        };
        let ty = prog.resolve_type(ty);
        let scalar = ty.pointer == 0
            && !ty.array
            && !ty.atomic
            && !ty.thread_local
            && !ty
                .name
                .as_ref()
                .map(|n| prog.structs.contains_key(n))
                .unwrap_or(false);
        if scalar && !escaped.contains(&v) {
            let init = global_init(db, ws, &v);
            out.insert(v, init);
        }
    }
    Arc::new(out)
}

/// The initial value of a global: 0 without initializer, the constant when
/// it is an integer literal, unknown otherwise.
fn global_init(db: &dyn salsa::Database, ws: Workspace, name: &str) -> Option<i64> {
    for &file in ws.files(db) {
        let items = crate::db::file_items(db, ws.universe(db), file);
        if let Some(g) = items
            .globals
            .iter()
            .find(|g| &*g.name == name && !g.is_extern)
        {
            let p = file.parsed(db);
            let text = p
                .text
                .get(g.end as usize..g.decl_end as usize)
                .unwrap_or("");
            let Some(rest) = text.trim_start().strip_prefix('=') else {
                return Some(0);
            };
            let lit: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            return parse_int(&lit);
        }
    }
    Some(0)
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    match s {
        "true" => return Some(1),
        "false" | "NULL" => return Some(0),
        _ => {}
    }
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}
