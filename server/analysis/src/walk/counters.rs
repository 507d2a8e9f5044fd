//! Counter joins: `main` waits, under a mutex, until a count of running
//! threads reaches zero, and each of those threads counts itself out as the
//! last thing it does.
//!
//! ```c
//! running = n;                                  // before the creation loop
//! for (i = 0; i < n; i++) pthread_create(.., worker, ..);
//! ...
//! pthread_mutex_lock(&m);
//! while (running > 0) pthread_cond_wait(&cv, &m);
//! pthread_mutex_unlock(&m);                     // all workers are done
//!
//! void *worker(void *a) { ...; pthread_mutex_lock(&m); running--;
//!                         pthread_mutex_unlock(&m); pthread_cond_signal(&cv); return 0; }
//! ```
//!
//! When the wait loop exits, `main` holds `m` and has seen `running == 0`;
//! every worker's decrement happened before under `m`, and everything a
//! worker did came before its decrement, so the workers are joined.
//! [`Walker::counter_wait`] takes the loop as a join of the creation site
//! only when all of this holds (anything else keeps the threads live):
//! - the loop is in `main` (run once), at the top level of its body; its test
//!   is `C > 0`, `C != 0` or `C`, for a global `C`, and its body waits on a
//!   condition variable with mutex `m`, which is held when the loop exits;
//! - the site is a call at the top level of the body of a counting loop
//!   `0 <= i < X` at the top level of `main`, after `C = X` with nothing
//!   in between writing `X` or `C`, so that at most `X` threads are counted
//!   by `X` (fewer only make the wait longer);
//! - each entry function of the site ends with `lock(&m); C--; unlock(&m);`
//!   (then only signals and `return`), writes `C` nowhere else, returns
//!   nowhere else, and is called from nowhere and named nowhere but at that
//!   site;
//! - no other code in the program writes `C` or takes its address.
//!
//! Invariant: the decision reads other functions' text (who writes `C`, who
//! names the entry), which an incremental update does not re-walk. The names
//! it read are kept in `WalkData::text_names`; an edit of a function that
//! mentions one of them, before or after the edit, falls back to a full walk
//! (`incremental.rs`).

use super::frames::Frame;
use super::state::State;
use super::{uncast, Walker};
use crate::db::FunctionId;
use crate::visit::{mentions, mentions_addr};
use racelens_syntax::{AccessKind, Callee, Expr, Name, Stmt, Test};

const COND_WAITS: &[&str] = &[
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "cnd_wait",
    "cnd_timedwait",
];
const SIGNALS: &[&str] = &[
    "pthread_cond_signal",
    "pthread_cond_broadcast",
    "cnd_signal",
    "cnd_broadcast",
];

impl<'a> Walker<'a> {
    /// At the exit of a `while` loop: joins the threads a counter wait (see
    /// the module doc) proves finished.
    pub(super) fn counter_wait(
        &mut self,
        fr: &Frame,
        test: &Test,
        body: &[Stmt],
        do_while: bool,
        exit: &mut State,
    ) {
        let counter = match test {
            Test::Positive { var } => var,
            Test::VarZero {
                var,
                zero_on_true: false,
            } => var,
            _ => return,
        };
        if do_while || &*fr.fname != "main" || self.prog.global(counter).is_none() {
            return;
        }
        if fr.locals.contains_key(counter) {
            return;
        }
        let top = &fr.summary.ir.body;
        let Some(wait_at) = top.iter().position(
            |s| matches!(s, Stmt::Loop { body: b, .. } if std::ptr::eq(b.as_ptr(), body.as_ptr())),
        ) else {
            return;
        };
        // The mutex the body waits with, held at the exit.
        let mut mutex: Option<Expr> = None;
        crate::visit::visit_calls(body, &mut |c| {
            if let Callee::Direct(n) = &c.callee {
                if COND_WAITS.contains(&&**n) {
                    if let Some(m) = c.args.get(1) {
                        mutex = Some(uncast(m).clone());
                    }
                }
            }
        });
        let Some(mutex) = mutex else { return };
        let Expr::AddrOf(m) = &mutex else { return };
        let Expr::Var(mname) = &**m else { return };
        if self.prog.global(mname).is_none() || fr.locals.contains_key(mname) {
            return;
        }
        self.note_counter_names([counter.clone(), mname.clone()]);
        let (keys, resolved) = self.lock_keys(fr, Some(&mutex));
        if !resolved || keys.len() != 1 || !exit.must.0.iter().any(|h| h.lock == keys[0]) {
            return;
        }
        // Sites created in `main` by a counting loop the counter counts.
        self.read(self.d.sites_epoch);
        let mut joined = Vec::new();
        for (i, site) in self.d.sites.iter().enumerate() {
            let i = i as u32;
            if site.func != fr.fid || !exit.active.contains(i) {
                continue;
            }
            if let Some(entry) = counted_site(top, wait_at, counter, site.call) {
                joined.push((i, entry));
            }
        }
        let mut done = Vec::new();
        for (i, entry) in joined {
            let entries = self.functions_of(fr, &Callee::Indirect(entry.clone()));
            for &f in &entries {
                let e = (f.name(self.db).clone(), counter.clone(), mutex.clone());
                if !self.d.counter_entries.contains(&e) {
                    self.d.counter_entries.push(e);
                }
                self.note_counter_names([f.name(self.db).clone()]);
            }
            if entries.is_empty() {
                continue;
            }
            let ok = entries
                .iter()
                .all(|&f| self.counts_itself_out(f, counter, &mutex));
            let call = self.d.sites[i as usize].call;
            if ok && self.only_writers(counter, fr.fid, &entries, call) {
                done.push(i);
            }
        }
        for s in done {
            self.join_site(exit, s);
        }
    }

    fn note_counter_names(&mut self, names: impl IntoIterator<Item = Name>) {
        for n in names {
            if !self.d.counter_names.contains(&n) {
                self.d.counter_names.push(n);
                self.d.counter_names.sort();
            }
        }
    }

    /// Does entry function `f` count itself out (see [`counts_out`])?
    fn counts_itself_out(&self, f: FunctionId, counter: &Name, mutex: &Expr) -> bool {
        counts_out(&self.summary(f), counter, mutex)
    }

    /// Is the counter written only by `main`'s `C = X` (checked by
    /// [`counted_site`]) and the entries' own decrements, its address never
    /// taken, and each entry called from nowhere and named nowhere but at
    /// the creation site?
    fn only_writers(
        &self,
        counter: &Name,
        main: FunctionId,
        entries: &[FunctionId],
        site_call: u32,
    ) -> bool {
        let entry_names: Vec<Name> = entries.iter().map(|&f| f.name(self.db).clone()).collect();
        for f in self.prog.functions.values().flatten() {
            let s = self.summary(*f);
            let mut ok = true;
            // An entry counts itself out once: its ending's decrement.
            let mut writes = 0;
            crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
                Stmt::Access(a) if a.kind == AccessKind::Write && names_var(&a.place, counter) => {
                    writes += 1;
                    let own = *f == main || entries.contains(f);
                    if !own || (entries.contains(f) && !s.ir.decrements.contains(&a.span)) {
                        ok = false;
                    }
                }
                Stmt::Assign { lhs, rhs } => {
                    if mentions_addr(rhs, counter) || entry_names.iter().any(|e| mentions(rhs, e)) {
                        ok = false;
                    }
                    if !matches!(lhs, Expr::Var(_)) && mentions(lhs, counter) {
                        ok = false;
                    }
                }
                Stmt::Call(c) => {
                    if let Callee::Direct(n) = &c.callee {
                        if entry_names.contains(n) {
                            ok = false;
                        }
                    }
                    let at_site = *f == main && c.id == site_call;
                    for a in &c.args {
                        if mentions_addr(a, counter) {
                            ok = false;
                        }
                        if !at_site && entry_names.iter().any(|e| mentions(a, e)) {
                            ok = false;
                        }
                    }
                }
                _ => {}
            });
            if !ok || (entries.contains(f) && writes != 1) {
                return false;
            }
        }
        // Initializers of globals name the entry (function tables) or take
        // the counter's address (`int *pc = &running;`) too.
        !self
            .prog
            .global_inits
            .values()
            .any(|refs| refs.iter().any(|r| entry_names.contains(r) || r == counter))
    }
}

/// The entry expression of creation call `call` when it sits at the top
/// level of a counting loop `0 <= i < X` at `main`'s top level, after
/// `C = X` with no write of `X` or `C` between them, and before the wait.
fn counted_site<'e>(
    top: &'e [Stmt],
    wait_at: usize,
    counter: &Name,
    call: u32,
) -> Option<&'e Expr> {
    let (loop_at, entry, bound) = top[..wait_at]
        .iter()
        .enumerate()
        .find_map(|(i, s)| match s {
            Stmt::Loop {
                body,
                bound: Some(b),
                var: Some(_),
                do_while: false,
                ..
            } => body.iter().find_map(|st| match st {
                Stmt::Call(c) if c.id == call => c.args.get(2).map(|e| (i, e, b)),
                _ => None,
            }),
            _ => None,
        })?;
    let x = bound.strip_prefix("0<")?;
    let set_at = top[..loop_at]
        .iter()
        .rposition(|s| matches!(s, Stmt::Assign { lhs: Expr::Var(c), .. } if c == counter))?;
    let Stmt::Assign { rhs, .. } = &top[set_at] else {
        return None;
    };
    match uncast(rhs) {
        Expr::Var(v) if &**v == x => {}
        Expr::Int(k) if k.to_string() == x => {}
        _ => return None,
    }
    // Nothing between the set and the loop writes X or C; nothing between
    // the loop and the wait writes C.
    let writes = |stmts: &[Stmt], v: &str| {
        let mut hit = false;
        crate::visit::visit_stmts(stmts, &mut |s| {
            if let Stmt::Access(a) = s {
                if a.kind == AccessKind::Write && matches!(&a.place, Expr::Var(n) if &**n == v) {
                    hit = true;
                }
            }
        });
        hit
    };
    let between = &top[set_at + 1..loop_at];
    if writes(between, x) || writes(between, counter) || writes(&top[loop_at..wait_at], counter) {
        return None;
    }
    // The counting loop writes the counter nowhere either.
    Some(entry)
}

/// Does `s` (an entry function) end with `lock(m); C--; unlock(m);` (then
/// only signals and a `return`), returning nowhere else?
pub(super) fn counts_out(s: &crate::db::FunctionSummary, counter: &Name, mutex: &Expr) -> bool {
    let body = &s.ir.body;

    let mut returns = 0;
    crate::visit::visit_stmts(body, &mut |st| {
        if matches!(st, Stmt::Return { .. }) {
            returns += 1;
        }
    });
    let mut rest: &[Stmt] = body;
    if let [init @ .., Stmt::Return { .. }] = rest {
        rest = init;
    } else if returns > 0 {
        return false;
    }
    if returns > 1 {
        return false;
    }
    let is_call = |st: &Stmt, names: &[&str], arg: Option<&Expr>| match st {
        Stmt::Call(c) => {
            matches!(&c.callee, Callee::Direct(n) if names.contains(&&**n))
                && arg.is_none_or(|a| c.args.first().map(uncast) == Some(a))
        }
        _ => false,
    };
    while let [init @ .., last] = rest {
        if is_call(last, SIGNALS, None) {
            rest = init;
        } else {
            break;
        }
    }
    let var = Expr::Var(counter.clone());
    let [.., lock, Stmt::Access(r), Stmt::Access(w), Stmt::Assign { lhs, .. }, unlock] = rest
    else {
        return false;
    };
    is_call(lock, &["pthread_mutex_lock", "mtx_lock"], Some(mutex))
        && is_call(unlock, &["pthread_mutex_unlock", "mtx_unlock"], Some(mutex))
        && r.kind == AccessKind::Read
        && r.place == var
        && w.kind == AccessKind::Write
        && w.place == var
        && *lhs == var
        && s.ir.decrements.contains(&w.span)
}

fn names_var(e: &Expr, v: &Name) -> bool {
    matches!(e, Expr::Var(n) if n == v)
}

/// Has an edit of function `name` (summary `old` to `new`) changed what a
/// counter join read (see the module doc)?
pub(super) fn counter_inputs_changed(
    name: &str,
    old: &crate::db::FunctionSummary,
    new: &crate::db::FunctionSummary,
    names: &[Name],
    entries: &[(Name, Name, Expr)],
) -> bool {
    if !summary_mentions(name, old, names) && !summary_mentions(name, new, names) {
        return false;
    }
    if name == "main" {
        // Its nodes are walked again, and decide again.
        return false;
    }
    let judged: Vec<&(Name, Name, Expr)> = entries.iter().filter(|e| &*e.0 == name).collect();
    if judged.is_empty() {
        return true;
    }
    judged
        .iter()
        .any(|(_, c, m)| counts_out(old, c, m) != counts_out(new, c, m))
        || naming(old, names) != naming(new, names)
}

/// Does statement `st` (a leaf) name any of `names`: as a variable, a
/// callee, or in an access?
fn names_any(st: &Stmt, names: &[Name]) -> bool {
    let any = |e: &Expr| names.iter().any(|n| mentions(e, n));
    match st {
        Stmt::Access(a) => any(&a.place),
        Stmt::Assign { lhs, rhs } => any(lhs) || any(rhs),
        Stmt::Call(c) => {
            matches!(&c.callee, Callee::Direct(f) if names.contains(f)) || c.args.iter().any(any)
        }
        _ => false,
    }
}

/// The statements of `s` that name any of `names`, spans cleared, each
/// with whether it is a decrement by one.
fn naming(s: &crate::db::FunctionSummary, names: &[Name]) -> Vec<(Stmt, bool)> {
    let mut out = Vec::new();
    crate::visit::visit_stmts(&s.ir.body, &mut |st| {
        if names_any(st, names) {
            let dec = matches!(st, Stmt::Access(a) if s.ir.decrements.contains(&a.span));
            out.push((st.clone(), dec));
        }
    });
    let decs: Vec<bool> = out.iter().map(|x| x.1).collect();
    let ir = racelens_syntax::FnIr {
        body: out.into_iter().map(|x| x.0).collect(),
        ..Default::default()
    };
    let body = racelens_syntax::respan::respan(&ir, &|_| 0).body;
    body.into_iter().zip(decs).collect()
}

/// Does a function summary name any of `names` (as a variable, a callee, or
/// in an access)? An edit of such a function may change a counter join.
pub(super) fn summary_mentions(name: &str, s: &crate::db::FunctionSummary, names: &[Name]) -> bool {
    if names.iter().any(|n| &**n == name) {
        return true;
    }
    let mut hit = false;
    crate::visit::visit_stmts(&s.ir.body, &mut |st| hit = hit || names_any(st, names));
    hit
}
