//! Wild pointers and hidden library state: values the walk cannot resolve
//! to an object but must not ignore.
//!
//! A wild pointer is an uninitialized local pointer, or a non-zero integer
//! used where a pointer is expected. Code without a body that writes through
//! one may hit any object; those writes meet in one abstract location
//! ([`Base::Unknown`](crate::model::Base)). Thread-unsafe library functions
//! (`rand`, `strtok`) write hidden static state, named here.

use super::frames::Frame;
use racelens_syntax::{Expr, Name, Stmt, Test, TypeInfo};
use rustc_hash::{FxHashMap, FxHashSet};

/// Is this value wild: a non-zero integer constant or a wild local? `Some(true)`
/// when it is pointer-typed, `Some(false)` for an integer that becomes a wild
/// pointer only where a pointer is expected.
pub(super) fn wild_value(fr: &Frame, e: &Expr) -> Option<bool> {
    match e {
        Expr::Int(n) if *n != 0 => Some(false),
        Expr::Var(x) if fr.wild.contains(x) => {
            Some(fr.locals.get(x).map(|t| t.pointer >= 1).unwrap_or(false))
        }
        Expr::Cast { pointer, value, .. } => {
            let v = wild_value(fr, value)?;
            Some(v || *pointer >= 1)
        }
        _ => None,
    }
}

pub(super) fn is_wild(fr: &Frame, e: &Expr) -> bool {
    wild_value(fr, e).is_some()
}

/// Library functions without a model whose listed parameters are pointers
/// (bit `i` for parameter `i`), for when no prototype is in the program.
pub(super) const LIBRARY_POINTER_PARAMS: &[(&str, u64)] = &[("pthread_setspecific", 0b10)];

/// Locals that can only hold a wild pointer when used as one: non-static
/// scalars or pointers whose address is never taken, that are left
/// uninitialized or only ever set to non-zero integer constants (or, for
/// integers, to arithmetic). Any assignment of null, of an address or of
/// another variable makes a local tame.
pub(super) fn wild_locals(
    ir: &racelens_syntax::FnIr,
    locals: &FxHashMap<Name, TypeInfo>,
    structs: &FxHashMap<Name, Vec<(Name, TypeInfo)>>,
) -> FxHashSet<Name> {
    let mut wild: FxHashSet<Name> = FxHashSet::default();
    crate::visit::visit_stmts(&ir.body, &mut |s| {
        if let Stmt::Decl(d) = s {
            let t = locals.get(&d.name).unwrap_or(&d.ty);
            let scalar = t.pointer >= 1
                || t.name
                    .as_ref()
                    .map(|n| !structs.contains_key(n))
                    .unwrap_or(false);
            if scalar && !t.array && !t.is_static && !t.thread_local {
                wild.insert(d.name.clone());
            }
        }
    });
    for p in &ir.params {
        wild.remove(&p.name);
    }
    for x in &ir.address_taken {
        wild.remove(x);
    }
    if wild.is_empty() {
        return wild;
    }
    crate::visit::visit_stmts(&ir.body, &mut |s| {
        // A local tested or assumed to be null may well be null.
        if let Stmt::If {
            test:
                Test::VarZero {
                    var,
                    zero_on_true: true,
                },
            ..
        } = s
        {
            wild.remove(var);
        }
        if let Stmt::Assign {
            lhs: Expr::Var(x),
            rhs,
        } = s
        {
            let r = super::uncast(rhs);
            let integer = locals.get(x).map(|t| t.pointer == 0).unwrap_or(false);
            let keeps = match r {
                Expr::Int(n) => *n != 0,
                Expr::Other | Expr::Init(_) => integer,
                _ => false,
            };
            if !keeps {
                wild.remove(x);
            }
        }
    });
    wild
}

/// The hidden static state a thread-unsafe library function uses; functions
/// that share state (`srand` and `rand`) name the same.
pub(super) fn hidden_state(f: &str) -> &str {
    match f {
        "srand" => "rand",
        "srandom" => "random",
        "lrand48" | "mrand48" | "srand48" => "drand48",
        "gmtime" => "localtime",
        "ctime" => "asctime",
        "unsetenv" | "putenv" => "setenv",
        f => f,
    }
}
