//! Globals that stay zero: a scalar global defined with no initializer (or
//! a literal zero) that no function of the program ever writes, and whose
//! address is never taken, holds zero for the whole run. A branch taken
//! only when it is nonzero (`if (g_use_cache) process_client_cache(..)`,
//! a feature flag nobody sets) or positive (`if (verbose > 0) log(..)`)
//! never runs, and the walk skips it.
//!
//! Conditions, all decided from the program's text:
//! - the name is a global in the scope of the test (no local hides it),
//!   scalar (not an array, not a member chain), neither `volatile` (another
//!   agent may change it) nor `_Atomic`;
//! - some unit defines it, every definition has no initializer or a literal
//!   zero one (`0`, `NULL`, `(T) 0`, `{0}`);
//! - no statement of any function writes it, and no expression takes its
//!   address (`&g` handed to `scanf` or stored), nor does any global's
//!   initializer name it;
//! - the program has a `main`: a library's clients may write its globals.
//!
//! Invariant: the answer reads every function's text. The verdicts are
//! kept in `WalkData::constants`; an edit that could change one (a new write
//! of a name judged to stay zero, or a removed write of one judged written)
//! walks again from scratch ([`edit`], `incremental.rs`).

use super::frames::Frame;
use super::Walker;
use crate::db::FunctionSummary;
use racelens_syntax::{AccessKind, Expr, Name, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};

impl<'a> Walker<'a> {
    /// Does the global `var`, as `fr` names it, hold zero for the whole run
    /// (see the module doc)?
    pub(super) fn constant_zero(&mut self, fr: &Frame, var: &Name) -> bool {
        if var.contains('.') || fr.locals.contains_key(var) {
            return false;
        }
        let Some(t) = self.prog.global(var) else {
            return false;
        };
        if t.array || t.atomic || t.is_volatile() {
            return false;
        }
        if !self.prog.defined_globals.contains(var)
            || self.prog.nonzero_init.contains(var)
            || self.prog.functions_named("main").is_none()
        {
            return false;
        }
        if let Some(&known) = self.d.constants.borrow().get(var) {
            return known;
        }
        let named_by_init = self.prog.named_by_global_init(var);
        if self.d.written.borrow().is_none() {
            // One pass over every function for all the names asked about.
            let mut counts: FxHashMap<Name, u32> = FxHashMap::default();
            for &f in self.prog.functions.values().flatten() {
                for n in written_names(&self.summary(f)) {
                    *counts.entry(n).or_default() += 1;
                }
            }
            *self.d.written.borrow_mut() = Some(counts);
        }
        let written = self
            .d
            .written
            .borrow()
            .as_ref()
            .is_some_and(|c| c.get(var).is_some_and(|&n| n > 0));
        let unwritten = !named_by_init && !written;
        self.d.constants.borrow_mut().insert(var.clone(), unwritten);
        unwritten
    }
}

/// An edit of one function (summary `old` to `new`): would it change a
/// verdict of `verdicts` (name -> stays zero)? A name judged to stay zero
/// changes when the new text writes it; one judged written may change when
/// the old text wrote it and the new one does not. When none would, the
/// per-name counts of writers (`WalkData::written`) move from the old text
/// to the new.
pub(super) fn edit(
    verdicts: &FxHashMap<Name, bool>,
    written: &mut Option<FxHashMap<Name, u32>>,
    old: &FunctionSummary,
    new: &FunctionSummary,
) -> Result<(), &'static str> {
    let (was, now) = (written_names(old), written_names(new));
    let changed = verdicts.iter().any(|(v, &zero)| match zero {
        true => now.contains(v),
        false => was.contains(v) && !now.contains(v),
    });
    if changed {
        return Err("a constant global's writes changed");
    }
    if let Some(counts) = written.as_mut() {
        for n in &was {
            if let Some(c) = counts.get_mut(n) {
                *c = c.saturating_sub(1);
            }
        }
        for n in now {
            *counts.entry(n).or_default() += 1;
        }
    }
    Ok(())
}

/// The names a function writes as a whole (`g = ..`, `g++`) or whose
/// address it takes ([`crate::visit::visit_addr_names`]).
fn written_names(s: &FunctionSummary) -> FxHashSet<Name> {
    let mut out = FxHashSet::default();
    let addr = |e: &Expr, out: &mut FxHashSet<Name>| {
        crate::visit::visit_addr_names(e, &mut |n| {
            out.insert(n.clone());
        })
    };
    crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
        Stmt::Access(a) => {
            if let (AccessKind::Write, Expr::Var(x)) = (a.kind, &a.place) {
                out.insert(x.clone());
            }
            addr(&a.place, &mut out);
        }
        Stmt::Assign { lhs, rhs } => {
            if let Expr::Var(x) = lhs {
                out.insert(x.clone());
            }
            addr(lhs, &mut out);
            addr(rhs, &mut out);
        }
        Stmt::Call(c) => c.args.iter().for_each(|a| addr(a, &mut out)),
        Stmt::Return { value: Some(e), .. } => addr(e, &mut out),
        _ => {}
    });
    out
}
