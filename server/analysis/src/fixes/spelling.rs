//! How a file acquires and releases a given lock: the wrapper function or
//! macro it already uses for that lock (`stats_lock()`, `CACHE_LOCK()`),
//! else the raw call (`pthread_mutex_lock(&m);`).
//!
//! Every lock and unlock call of the program is matched to the lock's
//! location with a small syntactic resolver (globals, static locals and
//! their fields). Wrappers are parameterless functions whose only call
//! locks or unlocks that lock, directly or through another wrapper. The
//! most used spelling wins, macros before wrappers before raw calls, as
//! long as every name it mentions is visible where the fix goes.

use super::region::LockText;
use super::syntax::{declared_before, free_identifiers};
use crate::config::CallModel;
use crate::db::{function_offset, function_summary, program, FunctionId, Program, Workspace};
use crate::model::{Base, Elem, LocKey};
use racelens_syntax::{Call, Callee, Expr, Parsed, Stmt};
use rustc_hash::FxHashMap;
use tree_sitter::Node;

/// Visits a call with its function, the function's summary and its model.
type CallVisitor<'v> =
    dyn FnMut(FunctionId, &crate::db::FunctionSummary, &Call, Option<&CallModel>) + 'v;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Macro,
    Wrapper,
    Raw,
}

/// One way the program locks or unlocks the lock, and how often.
#[derive(Clone, Debug)]
struct Spelled {
    kind: Kind,
    text: String,
    /// The function it appears in (for names local to it).
    func: FunctionId,
    /// The lock or unlock function behind it.
    callee: String,
    count: usize,
}

/// Where the lock and unlock go.
pub(super) struct At<'a> {
    pub func: FunctionId,
    pub parsed: &'a Parsed,
    pub pos: usize,
    /// The access expression, to derive `&q->lock` from `q->count`.
    pub access: Option<Node<'a>>,
    pub key: &'a LocKey,
}

pub(super) struct Spellings<'a> {
    db: &'a dyn salsa::Database,
    ws: Workspace,
    prog: std::sync::Arc<Program>,
    lock: &'a LocKey,
    locks: Vec<Spelled>,
    unlocks: Vec<Spelled>,
}

impl<'a> Spellings<'a> {
    pub(super) fn new(db: &'a dyn salsa::Database, ws: Workspace, lock: &'a LocKey) -> Self {
        let prog = program(db, ws).clone();
        let mut s = Spellings {
            db,
            ws,
            prog,
            lock,
            locks: Vec::new(),
            unlocks: Vec::new(),
        };
        s.collect();
        s
    }

    /// The lock and unlock statements to use at `at`.
    pub(super) fn at(&self, at: &At) -> Option<LockText> {
        for kind in [Kind::Macro, Kind::Wrapper] {
            let best = |v: &[Spelled]| {
                v.iter()
                    .filter(|s| s.kind == kind && self.visible(s, at))
                    .max_by_key(|s| s.count)
                    .cloned()
            };
            if let (Some(l), Some(u)) = (best(&self.locks), best(&self.unlocks)) {
                let lc = self
                    .locks
                    .iter()
                    .filter(|s| s.kind == Kind::Raw)
                    .map(|s| s.count)
                    .max()
                    .unwrap_or(0);
                if l.count >= lc {
                    return Some(LockText {
                        lock: format!("{};", l.text),
                        unlock: format!("{};", u.text),
                    });
                }
            }
        }
        self.raw(at)
    }

    /// `pthread_mutex_lock(&expr);` with the expression written for `at`.
    fn raw(&self, at: &At) -> Option<LockText> {
        let expr = self
            .global_expr(at)
            .or_else(|| derived_expr(at, self.lock))?;
        let callee = self
            .locks
            .iter()
            .max_by_key(|s| s.count)
            .map(|s| s.callee.clone())
            .or_else(|| self.callee_by_field())
            .unwrap_or_else(|| "pthread_mutex_lock".into());
        let (lock_fn, unlock_fn) = exclusive(
            &callee,
            self.unlocks
                .iter()
                .max_by_key(|s| s.count)
                .map(|s| s.callee.as_str()),
        );
        Some(LockText {
            lock: format!("{lock_fn}(&{expr});"),
            unlock: format!("{unlock_fn}(&{expr});"),
        })
    }

    /// `m`, `s.mu`: the lock written from its global name, if visible at `at`.
    fn global_expr(&self, at: &At) -> Option<String> {
        let Base::Global(g) = &self.lock.base else {
            return None;
        };
        let mut s = match g.split_once("::") {
            Some((f, v)) if f == &**at.func.name(self.db) => v.to_string(),
            Some(_) => return None,
            None => {
                let here = self.local_names(at.func);
                if here.iter().any(|n| n == &**g) || !self.declared(g, at) {
                    return None;
                }
                g.to_string()
            }
        };
        for e in &self.lock.path {
            match e {
                Elem::Field(f) => s = format!("{s}.{f}"),
                Elem::Index(Some(i)) => s = format!("{s}[{i}]"),
                Elem::Index(None) => return None,
            }
        }
        Some(s)
    }

    /// The lock function used on a field of the same name elsewhere.
    fn callee_by_field(&self) -> Option<String> {
        let Some(Elem::Field(f)) = self.lock.path.last() else {
            return None;
        };
        let mut found = None;
        self.each_call(&mut |_, _, c, model| {
            if let Some(CallModel::Lock { arg, .. }) = model {
                if let Some(Expr::AddrOf(p)) = c.args.get(*arg) {
                    if matches!(&**p, Expr::Field { field, .. } if field == f) && found.is_none() {
                        found = callee_name(c);
                    }
                }
            }
        });
        found
    }

    fn declared(&self, name: &str, at: &At) -> bool {
        declared_before(at.parsed, name, at.pos)
            || !crate::fixes::syntax::mentions(
                &at.parsed.text[..at.pos.min(at.parsed.text.len())],
                name,
            ) && self.defined_elsewhere(name, at)
    }

    /// Defined in another file (a header the fix's file includes, presumably).
    fn defined_elsewhere(&self, name: &str, at: &At) -> bool {
        let file = at.func.file(self.db);
        let in_other = |f: &FunctionId| f.file(self.db) != file;
        self.prog
            .functions
            .get(name)
            .map(|fs| fs.iter().any(in_other))
            .unwrap_or(false)
    }

    /// Can `s` be written at `at`: are the names it mentions visible there?
    fn visible(&self, s: &Spelled, at: &At) -> bool {
        let here = self.local_names(at.func);
        let theirs = self.local_names(s.func);
        let macros = crate::db::macro_table(self.db, self.ws);
        free_identifiers(&s.text).iter().all(|id| {
            if s.func == at.func && here.contains(id) {
                return true;
            }
            if here.contains(id) || theirs.contains(id) {
                return false;
            }
            if macros.get(id).is_some()
                || self.prog.is_function(id)
                || self.prog.globals.contains_key(id.as_str())
            {
                return self.declared(id, at);
            }
            false
        })
    }

    fn local_names(&self, f: FunctionId) -> Vec<String> {
        let s = function_summary(self.db, f);
        let mut v: Vec<String> = s.ir.params.iter().map(|p| p.name.to_string()).collect();
        crate::visit::visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Decl(d) = st {
                v.push(d.name.to_string());
            }
        });
        v
    }

    fn each_call(&self, f: &mut CallVisitor) {
        for &fid in self.prog.functions.values().flatten() {
            let s = function_summary(self.db, fid).clone();
            crate::visit::visit_calls(&s.ir.body, &mut |c| f(fid, &s, c, s.models.get(&c.id)));
        }
    }

    /// Every lock and unlock of the lock in the program, by spelling.
    fn collect(&mut self) {
        let mut wrappers: FxHashMap<String, bool> = FxHashMap::default();
        for &fid in self.prog.functions.values().flatten() {
            if let Some(is_lock) = self.wrapper(fid, 0) {
                wrappers.insert(fid.name(self.db).to_string(), is_lock);
            }
        }
        let mut found: Vec<(bool, Spelled)> = Vec::new();
        let lock = self.lock.clone();
        self.each_call(&mut |fid, s, c, model| {
            let fname = fid.name(self.db);
            if wrappers.contains_key(&**fname) {
                return;
            }
            let is_lock = match model {
                Some(CallModel::Lock { arg, .. })
                    if resolve(&self.prog, fname, s, c.args.get(*arg)).as_ref() == Some(&lock) =>
                {
                    true
                }
                Some(CallModel::Unlock { arg })
                    if resolve(&self.prog, fname, s, c.args.get(*arg)).as_ref() == Some(&lock) =>
                {
                    false
                }
                None => match &c.callee {
                    Callee::Direct(n) => match wrappers.get(&**n) {
                        Some(&l) => l,
                        None => return,
                    },
                    _ => return,
                },
                _ => return,
            };
            let p = fid.file(self.db).parsed(self.db);
            let off = function_offset(self.db, fid) as usize;
            let text = p
                .text
                .get(off + c.span.start as usize..off + c.span.end as usize)
                .unwrap_or("")
                .to_string();
            let callee = callee_name(c).unwrap_or_default();
            let head: String = text
                .chars()
                .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
                .collect();
            let kind = if !head.is_empty()
                && head != callee
                && crate::db::macro_table(self.db, self.ws)
                    .get(&head)
                    .is_some()
            {
                Kind::Macro
            } else if model.is_none() {
                Kind::Wrapper
            } else {
                Kind::Raw
            };
            found.push((
                is_lock,
                Spelled {
                    kind,
                    text,
                    func: fid,
                    callee,
                    count: 1,
                },
            ));
        });
        for (is_lock, s) in found {
            let v = if is_lock {
                &mut self.locks
            } else {
                &mut self.unlocks
            };
            match v.iter_mut().find(|x| x.kind == s.kind && x.text == s.text) {
                Some(x) => x.count += 1,
                None => v.push(s),
            }
        }
        for v in [&mut self.locks, &mut self.unlocks] {
            v.sort_by(|a, b| {
                b.count
                    .cmp(&a.count)
                    .then(a.kind.cmp(&b.kind))
                    .then(a.text.cmp(&b.text))
            });
        }
    }

    /// `Some(true)` for a parameterless function whose only call locks the
    /// lock (directly or through another wrapper), `Some(false)` for unlock.
    fn wrapper(&self, f: FunctionId, depth: u32) -> Option<bool> {
        let s = function_summary(self.db, f);
        if depth > 3 || !s.ir.params.is_empty() {
            return None;
        }
        let mut calls: Vec<Call> = Vec::new();
        crate::visit::visit_calls(&s.ir.body, &mut |c| calls.push(c.clone()));
        let [c] = calls.as_slice() else { return None };
        let fname = f.name(self.db);
        match s.models.get(&c.id) {
            Some(CallModel::Lock { arg, .. }) => {
                (resolve(&self.prog, fname, s, c.args.get(*arg)).as_ref() == Some(self.lock))
                    .then_some(true)
            }
            Some(CallModel::Unlock { arg }) => {
                (resolve(&self.prog, fname, s, c.args.get(*arg)).as_ref() == Some(self.lock))
                    .then_some(false)
            }
            None => match &c.callee {
                Callee::Direct(n) => self
                    .prog
                    .functions
                    .get(n)
                    .and_then(|fs| self.wrapper(fs[0], depth + 1)),
                _ => None,
            },
            _ => None,
        }
    }
}

fn callee_name(c: &Call) -> Option<String> {
    match &c.callee {
        Callee::Direct(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The write-mode lock function and its unlock for a family.
fn exclusive(lock: &str, unlock: Option<&str>) -> (String, String) {
    let (l, u) = match lock {
        "pthread_rwlock_rdlock"
        | "pthread_rwlock_wrlock"
        | "pthread_rwlock_timedwrlock"
        | "pthread_rwlock_timedrdlock" => ("pthread_rwlock_wrlock", "pthread_rwlock_unlock"),
        "pthread_spin_lock" => ("pthread_spin_lock", "pthread_spin_unlock"),
        "mtx_lock" | "mtx_timedlock" => ("mtx_lock", "mtx_unlock"),
        "pthread_mutex_lock" | "pthread_mutex_timedlock" => {
            ("pthread_mutex_lock", "pthread_mutex_unlock")
        }
        other => {
            return (
                other.to_string(),
                unlock.unwrap_or("pthread_mutex_unlock").to_string(),
            )
        }
    };
    (l.to_string(), u.to_string())
}

/// The lock's location named by a call argument, when it is `&global`,
/// `&static_local` or a field path below one.
fn resolve(
    prog: &Program,
    fname: &str,
    s: &crate::db::FunctionSummary,
    arg: Option<&Expr>,
) -> Option<LocKey> {
    fn place(
        prog: &Program,
        fname: &str,
        s: &crate::db::FunctionSummary,
        e: &Expr,
    ) -> Option<LocKey> {
        match e {
            Expr::Var(x) => {
                let mut local = s.ir.params.iter().any(|p| &p.name == x).then_some(false);
                crate::visit::visit_stmts(&s.ir.body, &mut |st| {
                    if let Stmt::Decl(d) = st {
                        if &d.name == x {
                            local = Some(d.ty.is_static);
                        }
                    }
                });
                match local {
                    Some(true) => Some(LocKey::new(Base::Global(format!("{fname}::{x}").into()))),
                    Some(false) => None,
                    None => prog
                        .globals
                        .contains_key(x)
                        .then(|| LocKey::new(Base::Global(x.clone()))),
                }
            }
            Expr::Field {
                base,
                field,
                arrow: false,
            } => place(prog, fname, s, base).map(|k| k.with(Elem::Field(field.clone()))),
            Expr::Index {
                base,
                index: Some(i),
                ..
            } => place(prog, fname, s, base).map(|k| k.with(Elem::Index(Some(*i)))),
            Expr::Cast { value, .. } => place(prog, fname, s, value),
            _ => None,
        }
    }
    match arg? {
        Expr::AddrOf(p) => place(prog, fname, s, p),
        _ => None,
    }
}

/// `q->lock` from the access `q->count` when the lock is a sibling field
/// of the accessed one.
fn derived_expr(at: &At, lock: &LocKey) -> Option<String> {
    let (Some(Elem::Field(lock_field)), Some(Elem::Field(_))) =
        (lock.path.last(), at.key.path.last())
    else {
        return None;
    };
    if lock.base != at.key.base
        || lock.path[..lock.path.len() - 1] != at.key.path[..at.key.path.len() - 1]
    {
        return None;
    }
    let n = at.access?;
    if n.kind() != "field_expression" {
        return None;
    }
    let base = n.child_by_field_name("argument")?;
    let op = n.child_by_field_name("operator")?;
    let text = &at.parsed.text;
    let b = &text[base.byte_range()];
    let pure = b
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '>' | '-' | '[' | ']' | ' '))
        && !b.contains("--");
    pure.then(|| format!("{b}{}{lock_field}", &text[op.byte_range()]))
}
