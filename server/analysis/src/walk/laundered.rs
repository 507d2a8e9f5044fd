//! Functions whose address is hidden in an integer.
//!
//! Interpreters and tagged-value libraries keep function pointers inside
//! integers: `(strm_value)((intptr_t) f) & ~TAG`, `(uintptr_t) cb | 1`.
//! The walk follows function values through assignments, memory and casts
//! to pointer types, but not through integer arithmetic, so a later call
//! through the decoded pointer finds no target and its code would go
//! unanalysed. Such a function is *laundered*: its name appears, as a
//! value, under a cast to an integer type, or it is passed as the argument
//! of a function that casts that parameter so (`strm_cfunc_value(f)`,
//! one level). A call through a pointer the
//! walk cannot resolve may call any laundered function that takes as many
//! arguments as the call passes (`calls.rs`). This over-approximates the
//! callees of such a call; without it, the races in the code those
//! pointers run were missed.
//!
//! Invariant: the set is a function of the summaries alone, each function
//! contributing its `FunctionSummary::launders` (see [`launders`]);
//! `incremental.rs` walks from scratch when an edit changes the edited
//! function's contribution.

use super::Walker;
use crate::db::{defined_functions, program, FunctionId, Program, Workspace};
use crate::visit::visit_stmts;
use racelens_syntax::{Callee, Expr, FnIr, Name, Stmt};
use std::sync::Arc;

/// Laundered functions with their parameter counts.
pub(super) type Laundered = Arc<Vec<(FunctionId, usize)>>;
/// (function, parameter index) pairs that launder what callers pass.
pub(super) type Params = Arc<Vec<(Name, usize)>>;

/// The C integer types a pointer can be stored in (after typedefs).
const INTEGER_TYPES: &[&str] = &[
    "char",
    "short",
    "int",
    "long",
    "unsigned",
    "signed",
    "intptr_t",
    "uintptr_t",
    "size_t",
    "ssize_t",
    "ptrdiff_t",
    "intmax_t",
    "uintmax_t",
    "int64_t",
    "uint64_t",
    "int32_t",
    "uint32_t",
    "__int64_t",
    "__uint64_t",
    "__intptr_t",
];

/// Is `ty` (a cast's type name) an integer type of the program?
fn integer_type(prog: &Program, ty: &str) -> bool {
    let t = prog.resolve_type(&racelens_syntax::TypeInfo {
        name: Some(ty.into()),
        ..Default::default()
    });
    t.pointer == 0
        && t.name
            .as_deref()
            .is_some_and(|n| INTEGER_TYPES.contains(&n))
}

/// The value under casts and `&`: `(intptr_t) &f` is `f`.
fn bare(mut v: &Expr) -> &Expr {
    while let Expr::Cast { value, .. } | Expr::AddrOf(value) = v {
        v = value;
    }
    v
}

/// Calls `f` with (type, value) for every cast in `ir`, counting a call
/// `(T)(x)` through one of the names `candidates` (those it does not
/// declare, see `racelens_syntax::typecast::cast_candidates`) as the cast
/// it may be.
fn casts(ir: &FnIr, candidates: &[Name], f: &mut dyn FnMut(&Name, &Expr)) {
    fn walk(e: &Expr, f: &mut dyn FnMut(&Name, &Expr)) {
        match e {
            Expr::Cast { ty, value, .. } => {
                if let Some(t) = ty {
                    f(t, value);
                }
                walk(value, f);
            }
            Expr::Field { base, .. } | Expr::Index { base, .. } => walk(base, f),
            Expr::Deref(x) | Expr::AddrOf(x) | Expr::Offset(x) => walk(x, f),
            Expr::Choice(xs) => xs.iter().for_each(|x| walk(x, f)),
            _ => {}
        }
    }
    visit_stmts(&ir.body, &mut |s| match s {
        Stmt::Access(a) => walk(&a.place, f),
        Stmt::Assign { lhs, rhs } => {
            walk(lhs, f);
            walk(rhs, f);
        }
        Stmt::Call(c) => {
            if let (Callee::Indirect(Expr::Var(t)), [arg]) = (&c.callee, &c.args[..]) {
                if candidates.contains(t) {
                    f(t, arg);
                }
            }
            c.args.iter().for_each(|a| walk(a, f));
        }
        Stmt::Return { value: Some(v), .. } => walk(v, f),
        _ => {}
    });
}

/// The functions of the program, and the parameters of `ir`, that `ir`
/// names as values under a cast to an integer type (sorted, no repeats).
/// Reads the program only when the function casts such a name at all.
pub(crate) fn launders(
    db: &dyn salsa::Database,
    ws: Workspace,
    ir: &FnIr,
    candidates: &[Name],
) -> Vec<Name> {
    let mut found: Vec<(Name, Name)> = Vec::new();
    let mut defined = None;
    casts(ir, candidates, &mut |ty, v| {
        if let Expr::Var(n) = bare(v) {
            // A parameter stands for the functions its callers pass.
            let param = ir.params.iter().any(|p| p.name == *n);
            let d = defined.get_or_insert_with(|| defined_functions(db, ws).clone());
            if param || d.contains(n) {
                found.push((ty.clone(), n.clone()));
            }
        }
    });
    if found.is_empty() {
        return Vec::new();
    }
    let prog = program(db, ws);
    let mut out: Vec<Name> = found
        .into_iter()
        .filter(|(ty, _)| integer_type(prog, ty))
        .map(|(_, n)| n)
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Walker<'_> {
    /// The laundered functions that take `nargs` arguments (see the module
    /// comment).
    pub(super) fn laundered(&self, nargs: usize) -> Vec<FunctionId> {
        self.laundered_all()
            .iter()
            .filter(|(_, n)| *n == nargs)
            .map(|(f, _)| *f)
            .collect()
    }

    /// Every laundered function with its parameter count, computed once
    /// per walk (or update).
    pub(super) fn laundered_all(&self) -> Laundered {
        if let Some(v) = self.d.laundered.borrow().clone() {
            return v;
        }
        let all: Vec<FunctionId> = self.prog.functions.values().flatten().copied().collect();
        // (function, parameter index): what callers pass there.
        let mut params: Vec<(Name, usize)> = Vec::new();
        for f in &all {
            let s = self.summary(*f);
            for n in &s.launders {
                if let Some(i) = s.ir.params.iter().position(|p| p.name == *n) {
                    params.push((f.name(self.db).clone(), i));
                }
            }
        }
        params.sort();
        let mut names: Vec<Name> = Vec::new();
        for f in &all {
            names.extend(self.contribution(&self.summary(*f), &params));
        }
        names.sort();
        names.dedup();
        let mut v: Vec<(FunctionId, usize)> = Vec::new();
        for n in &names {
            for f in self.prog.functions_named(n).into_iter().flatten() {
                v.push((*f, self.summary(*f).ir.params.len()));
            }
        }
        let v = Arc::new(v);
        *self.d.laundered.borrow_mut() = Some(v.clone());
        *self.d.laundering_params.borrow_mut() = Some(Arc::new(params));
        v
    }

    /// The laundered functions one summary contributes: those it casts to
    /// an integer itself, and those it passes to a parameter in `params`
    /// (sorted, with repeats).
    fn contribution(&self, s: &crate::db::FunctionSummary, params: &[(Name, usize)]) -> Vec<Name> {
        let mut out: Vec<Name> = s
            .launders
            .iter()
            .filter(|n| !s.ir.params.iter().any(|p| p.name == **n))
            .cloned()
            .collect();
        if !params.is_empty() {
            crate::visit::visit_calls(&s.ir.body, &mut |c| {
                let Callee::Direct(g) = &c.callee else { return };
                for (h, i) in params {
                    if h == g {
                        if let Some(Expr::Var(n)) = c.args.get(*i).map(bare) {
                            if self.prog.functions_named(n).is_some() {
                                out.push(n.clone());
                            }
                        }
                    }
                }
            });
        }
        out.sort();
        out
    }

    /// Would replacing summary `old` by `new` change the laundered set (when
    /// the walk asked for it)? Each function contributes on its own (its
    /// casts, and the functions it passes to laundering parameters), and an
    /// unchanged `launders` keeps the laundering parameters as they were.
    pub(super) fn laundering_changed(
        &self,
        old: &crate::db::FunctionSummary,
        new: &crate::db::FunctionSummary,
    ) -> bool {
        if old.launders != new.launders {
            return true;
        }
        let params = self.d.laundering_params.borrow().clone();
        match params {
            None => false,
            Some(p) => self.contribution(old, &p) != self.contribution(new, &p),
        }
    }
}
