//! Globals that stay zero: a scalar global defined with no initializer (or
//! a literal zero) that no function of the program ever writes, and whose
//! address is never taken, holds zero for the whole run. A branch taken
//! only when it is nonzero (`if (g_use_cache) process_client_cache(..)`,
//! a feature flag nobody sets) or positive (`if (verbose > 0) log(..)`)
//! never runs, and the walk skips it.
//!
//! The same holds for a member chain of such a global (`opts.token` of
//! `struct opts opts = {0};`, `cfg.log.level`) that nothing writes: neither
//! the chain, nor one of its prefixes as a whole (`opts = o`), nor one of
//! its extensions, with no union or bit-field group on the way. A struct
//! parameter given a copy of such a global (`set_opts(package_opts)`,
//! `Frame::copies`) holds the same zeros in that calling context when its
//! function writes no part of it ([`Walker::copied_zero`]).
//!
//! Conditions, all decided from the program's text:
//! - the name is a global in the scope of the test (no local hides it),
//!   scalar (not an array) or a chain of `.` members ending in a scalar
//!   member, neither `volatile` (another agent may change it) nor
//!   `_Atomic`;
//! - some unit defines it, every definition has no initializer or a literal
//!   zero one (`0`, `NULL`, `(T) 0`, `{0}`);
//! - no statement of any function writes it (or, for a chain, a prefix
//!   or an extension of it), and no expression takes its (root's)
//!   address (`&g` handed to `scanf` or stored), nor does any global's
//!   initializer name it;
//! - the program has a `main`: a library's clients may write its globals.
//!
//! A write that stores the literal zero in a whole name (`server = 0;`)
//! keeps it zero, and one that stores a parameter of its function
//! (`server = srv;`) does when that parameter is zero at every call
//! ([`Walker::param_always_zero`]: direct calls only, each passing `0`).
//!
//! Invariant: the answer reads every function's text. The verdicts are
//! kept in `WalkData::constants`; an edit that could change one (a new write
//! of a name judged to stay zero, or a removed write of one judged written,
//! or any edit of or naming a function whose parameter a verdict read,
//! `WalkData::zero_params`) walks again from scratch ([`edit`],
//! `incremental.rs`).

use super::frames::Frame;
use super::Walker;
use crate::db::{FunctionId, FunctionSummary};
use racelens_syntax::{AccessKind, Call, Callee, Expr, Name, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};

impl<'a> Walker<'a> {
    /// Does the global `var`, as `fr` names it, hold zero for the whole run
    /// (see the module doc)?
    pub(super) fn constant_zero(&mut self, fr: &Frame, var: &Name) -> bool {
        let root = var.split('.').next().unwrap_or(var);
        !fr.locals.contains_key(root) && self.global_zero(var)
    }

    /// [`Walker::constant_zero`] of a name known to be the global's.
    fn global_zero(&mut self, var: &Name) -> bool {
        let (root, members) = match var.split_once('.') {
            Some((r, m)) => (r, Some(m)),
            None => (&**var, None),
        };
        let Some(t) = self.prog.global(root) else {
            return false;
        };
        if t.array || t.atomic || t.is_volatile() {
            return false;
        }
        if members.is_some_and(|m| !self.scalar_member(t, m)) {
            return false;
        }
        if !self.prog.defined_globals.contains(root)
            || self.prog.nonzero_init.contains(root)
            || self.prog.functions_named("main").is_none()
        {
            return false;
        }
        if let Some(&known) = self.d.constants.borrow().get(var) {
            return known;
        }
        let named_by_init = self.prog.named_by_global_init(root);
        if self.d.written.borrow().is_none() {
            // One pass over every function for all the names asked about.
            let mut counts: FxHashMap<Name, u32> = FxHashMap::default();
            for &f in self.prog.functions.values().flatten() {
                for n in written_names(&self.summary(f), f.name(self.db)) {
                    *counts.entry(n).or_default() += 1;
                }
            }
            *self.d.written.borrow_mut() = Some(counts);
        }
        let (written, from_params) = match self.d.written.borrow().as_ref() {
            Some(c) => {
                let has = |k: &str| c.get(k).is_some_and(|&n| n > 0);
                let from_params: Vec<(Name, usize)> = match has(&format!("{var}<")) {
                    true => c
                        .iter()
                        .filter(|(_, &n)| n > 0)
                        .filter_map(|(k, _)| param_write(k, var))
                        .collect(),
                    false => Vec::new(),
                };
                (conflicts(var, has), from_params)
            }
            None => (false, Vec::new()),
        };
        // Written only with what a parameter holds (`_server = server;` in
        // `trc_init`): zero still when each of those parameters is zero at
        // every call.
        let mut from_zero_params = true;
        for (f, i) in &from_params {
            self.d.zero_params.borrow_mut().insert(f.clone());
            from_zero_params = from_zero_params && !written && self.param_always_zero(f, *i);
        }
        if !from_params.is_empty() {
            // Edits name those functions as the program does (a static one
            // of a unit renamed), as well as by their own names.
            let named: Vec<Name> = self
                .prog
                .functions
                .iter()
                .filter(|(_, ds)| {
                    ds.iter()
                        .any(|d| from_params.iter().any(|(f, _)| d.name(self.db) == f))
                })
                .map(|(n, _)| n.clone())
                .collect();
            self.d.zero_params.borrow_mut().extend(named);
        }
        let unwritten = !named_by_init && !written && from_zero_params;
        self.d.constants.borrow_mut().insert(var.clone(), unwritten);
        unwritten
    }

    /// Is parameter `i` of the function named `f` zero in every call: `f`
    /// is not `main`, its name is used only as the callee of direct calls
    /// (never as a value, in a function or a global's initializer), at
    /// least one call exists, each passes the literal zero there, and `f`
    /// never writes the parameter or takes its address?
    fn param_always_zero(&self, raw: &Name, i: usize) -> bool {
        // `raw` is the function's own name; the program, its callers and
        // global initializers name it as the program does (a static one
        // of a unit renamed). One function of that name, or no verdict.
        let mut named = self
            .prog
            .functions
            .iter()
            .filter(|(_, ds)| ds.iter().any(|d| d.name(self.db) == raw));
        let (Some((f, defs)), None) = (named.next(), named.next()) else {
            return false;
        };
        if &**f == "main" || self.prog.named_by_global_init(f) {
            return false;
        }
        for &d in defs {
            let s = self.summary(d);
            let Some(p) = s.ir.params.get(i) else {
                return false;
            };
            let written = written_names(&s, d.name(self.db));
            if s.ir.address_taken.contains(&p.name) || writes_any(&written, &p.name) {
                return false;
            }
        }
        self.direct_calls_only(f, |_, c| {
            matches!(c.args.get(i).map(super::uncast), Some(Expr::Int(0)))
        })
        .is_some_and(|calls| calls > 0)
    }

    /// The number of direct calls of the function the program names `f`,
    /// each of which `at_call` accepts (given the function it is in), when
    /// the program uses the name only as such a callee: not named in a call
    /// through a pointer, not passed, assigned or returned, and its address
    /// not hidden in an integer (`walk/laundered.rs`). `None` otherwise.
    /// (A global's initializer is the caller's to check.)
    pub(super) fn direct_calls_only(
        &self,
        f: &Name,
        mut at_call: impl FnMut(FunctionId, &Call) -> bool,
    ) -> Option<u32> {
        let mut calls = 0u32;
        for &g in self.prog.functions.values().flatten() {
            let mut ok = true;
            let other = other_uses(
                &self.summary(g),
                |n| n == f,
                |c| {
                    calls += 1;
                    ok &= at_call(g, c);
                },
            );
            if other || !ok {
                return None;
            }
        }
        Some(calls)
    }

    /// Is `members` (`a.b`) of a global of type `t` a chain of members of
    /// structs (not through a pointer or an array, no member sharing its
    /// location: a union's, a bit-field's) ending in a scalar that is
    /// neither an array, `volatile` nor `_Atomic`?
    fn scalar_member(&self, t: &racelens_syntax::TypeInfo, members: &str) -> bool {
        let mut ty = self.prog.resolve_type(t);
        for m in members.split('.') {
            if ty.pointer > 0 || ty.array {
                return false;
            }
            let Some(s) = ty.name.clone() else {
                return false;
            };
            if self.prog.shared_member(&s, m).is_some() {
                return false;
            }
            let Some(ft) = self.prog.field_type(&s, m) else {
                return false;
            };
            ty = self.prog.resolve_type(ft);
            if ty.array || ty.atomic || ty.is_volatile() {
                return false;
            }
        }
        ty.pointer > 0
            || !self
                .prog
                .structs
                .contains_key(ty.name.as_deref().unwrap_or(""))
    }

    /// The global whose copy the argument `arg` of a call in `fr` is: a
    /// struct global passed by value (`set_opts(package_opts)`), or a
    /// parameter `fr` holds such a copy in, passed on.
    pub(super) fn copied_global(&self, fr: &Frame, arg: &Expr) -> Option<Name> {
        let Expr::Var(x) = arg else {
            return None;
        };
        if let Some((_, g)) = fr.copies.iter().find(|(p, _)| p == x) {
            return Some(g.clone());
        }
        if fr.locals.contains_key(x) {
            return None;
        }
        self.struct_type(fr, arg).map(|_| x.clone())
    }

    /// Is the variable or member chain `var` of a test in `fr` zero here: a
    /// parameter given zero (`Frame::zeros`), a global that stays zero, or
    /// a member of a parameter that copies one?
    pub(super) fn known_zero(&mut self, fr: &Frame, var: &Name) -> bool {
        fr.zeros.contains(var) || self.constant_zero(fr, var) || self.copied_zero(fr, var)
    }

    /// Does a test of the variable `x` in `fr` still hold where the path
    /// goes on (until the walk sees a write of it): neither `volatile` (a
    /// signal handler may change it) nor a local whose address is taken
    /// (written through a pointer)?
    pub(super) fn tested_value_kept(&self, fr: &Frame, x: &Name) -> bool {
        match fr.locals.get(x) {
            Some(t) => !t.is_volatile() && !fr.address_taken.contains(x),
            None => self.prog.global(x).is_some_and(|t| !t.is_volatile()),
        }
    }

    /// Is the member chain `var` (`o.token`) of a struct parameter that
    /// this calling context gave a copy of a global (`Frame::copies`) zero:
    /// the global's chain stays zero, and the function writes no part of
    /// the parameter?
    pub(super) fn copied_zero(&mut self, fr: &Frame, var: &Name) -> bool {
        let Some((root, members)) = var.split_once('.') else {
            return false;
        };
        let Some((_, g)) = fr.copies.iter().find(|(p, _)| &**p == root) else {
            return false;
        };
        let chain: Name = format!("{g}.{members}").into();
        self.global_zero(&chain)
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
    zero_params: &FxHashSet<Name>,
    fname: &Name,
    old: &FunctionSummary,
    new: &FunctionSummary,
) -> Result<(), &'static str> {
    // A verdict read the calls of these functions and their parameters.
    let named = |s: &FunctionSummary| {
        let mut called = false;
        let other = other_uses(s, |n| zero_params.contains(n), |_| called = true);
        called || other
    };
    if !zero_params.is_empty() && (zero_params.contains(fname) || named(old) || named(new)) {
        return Err("a call of a function whose parameter a constant global reads changed");
    }
    let (was, now) = (written_names(old, fname), written_names(new, fname));
    let (w, n) = (|k: &str| was.contains(k), |k: &str| now.contains(k));
    let changed = verdicts.iter().any(|(v, &zero)| {
        let cond = |has: &dyn Fn(&str) -> bool| has(&format!("{v}<"));
        match zero {
            true => conflicts(v, n) || cond(&n),
            false => (conflicts(v, w) && !conflicts(v, n)) || cond(&w) != cond(&n),
        }
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

/// Does a write that [`written_names`] lists as `written` change the
/// variable or member chain `var`: a write of it or of a prefix of it as a
/// whole, or of an extension of it (`var~`)?
fn conflicts(var: &str, written: impl Fn(&str) -> bool) -> bool {
    if written(var) || written(&format!("{var}~")) {
        return true;
    }
    var.match_indices('.').any(|(i, _)| written(&var[..i]))
}

/// Visits the uses in `s` of the functions whose names `is_fn` accepts:
/// calls `direct` with each direct call of one, and says whether one is
/// used otherwise: named in a call through a pointer, passed, assigned,
/// returned, or its address hidden in an integer (`walk/laundered.rs`).
fn other_uses(
    s: &FunctionSummary,
    is_fn: impl Fn(&Name) -> bool,
    mut direct: impl FnMut(&Call),
) -> bool {
    let mut other = s.launders.iter().any(&is_fn);
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        let mentions = |e: &Expr| {
            let mut hit = false;
            crate::visit::visit_names(e, &mut |n| hit |= is_fn(n));
            hit
        };
        match st {
            Stmt::Call(c) => {
                match &c.callee {
                    Callee::Direct(n) if is_fn(n) => direct(c),
                    Callee::Indirect(e) => other |= mentions(e),
                    Callee::Direct(_) => {}
                }
                other |= c.args.iter().any(mentions);
            }
            Stmt::Assign { lhs, rhs } => other |= mentions(lhs) || mentions(rhs),
            Stmt::Return { value: Some(e), .. } => other |= mentions(e),
            _ => {}
        }
    });
    other
}

/// Does a function whose [`written_names`] are `written` write the local
/// `x` in any way (as a whole, a member of it, from a parameter)?
pub(super) fn writes_any(written: &FxHashSet<Name>, x: &str) -> bool {
    [x.to_string(), format!("{x}~"), format!("{x}<")]
        .iter()
        .any(|k| written.contains(&**k))
}

/// The (function, parameter index) of a conditional write key `var<f#i`
/// of `var` (see [`written_names`]).
fn param_write(key: &str, var: &str) -> Option<(Name, usize)> {
    let rest = key.strip_prefix(var)?.strip_prefix('<')?;
    let (f, i) = rest.rsplit_once('#')?;
    Some((f.into(), i.parse().ok()?))
}

/// The dot chain an lvalue writes (`g`, `g.a.b`; `g.a` for `g.a[i]`), or
/// `None` for one through a pointer.
fn chain(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(x) => Some(x.to_string()),
        Expr::Field {
            base,
            field,
            arrow: false,
        } => Some(format!("{}.{field}", chain(base)?)),
        Expr::Index { base, .. } => chain(base),
        _ => None,
    }
}

/// The names and member chains a function writes as a whole (`g = ..`,
/// `g++`, `g.a.b = ..`, the last also as `g~` and `g.a~`: something under
/// them is written) or whose address it takes (the root's name,
/// [`crate::visit::visit_addr_names`]).
///
/// A whole name assigned the literal zero (`g = 0;`) is not written: it
/// keeps a zero. One assigned a parameter of the function (`g = p;`, the
/// `i`-th) is listed as `g<f#i` and `g<` instead (see
/// [`Walker::param_always_zero`]), `f` the function's name.
pub(super) fn written_names(s: &FunctionSummary, fname: &Name) -> FxHashSet<Name> {
    let mut out = FxHashSet::default();
    let write = |e: &Expr, out: &mut FxHashSet<Name>| {
        if let Some(c) = chain(e) {
            for (i, _) in c.match_indices('.') {
                out.insert(format!("{}~", &c[..i]).into());
            }
            out.insert(c.into());
        }
    };
    let addr = |e: &Expr, out: &mut FxHashSet<Name>| {
        crate::visit::visit_addr_names(e, &mut |n| {
            out.insert(n.clone());
        })
    };
    let param = |x: &Name| s.ir.params.iter().position(|p| &p.name == x);
    // A write access is followed by its assignment when it has one: the
    // assignment's value says what the write stores.
    let mut pending: Option<Expr> = None;
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        if let Stmt::Assign { lhs, .. } = st {
            if pending.as_ref() == Some(lhs) {
                pending = None;
            }
        }
        if let Some(p) = pending.take() {
            write(&p, &mut out);
        }
        match st {
            Stmt::Access(a) => {
                if a.kind == AccessKind::Write {
                    pending = Some(a.place.clone());
                }
                addr(&a.place, &mut out);
            }
            Stmt::Assign { lhs, rhs } => {
                match (lhs, super::uncast(rhs)) {
                    (Expr::Var(_), Expr::Int(0)) => {}
                    (Expr::Var(x), Expr::Var(v)) if param(v).is_some() && param(x).is_none() => {
                        let i = param(v).unwrap_or_default();
                        out.insert(format!("{x}<").into());
                        out.insert(format!("{x}<{fname}#{i}").into());
                    }
                    _ => write(lhs, &mut out),
                }
                addr(lhs, &mut out);
                addr(rhs, &mut out);
            }
            Stmt::Call(c) => c.args.iter().for_each(|a| addr(a, &mut out)),
            Stmt::Return { value: Some(e), .. } => addr(e, &mut out),
            _ => {}
        }
    });
    if let Some(p) = pending {
        write(&p, &mut out);
    }
    out
}
