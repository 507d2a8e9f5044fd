//! Hand-made reader-writer locks: a struct of a mutex, a condition variable
//! and counts of holders, with functions that take and give it back, as in
//! the classic `pthread_rdwr_*_np` of "Pthreads Programming":
//!
//! ```c
//! int rlock(rdwr_t *l) { pthread_mutex_lock(&l->m);
//!     while (l->writers || l->wishwrite) pthread_cond_wait(&l->free, &l->m);
//!     l->readers++; pthread_mutex_unlock(&l->m); return 0; }
//! int wlock(rdwr_t *l) { pthread_mutex_lock(&l->m); l->wishwrite++;
//!     while (l->writers || l->readers) pthread_cond_wait(&l->free, &l->m);
//!     l->writers++; l->wishwrite--; pthread_mutex_unlock(&l->m); return 0; }
//! int wunlock(rdwr_t *l) { pthread_mutex_lock(&l->m); l->writers = 0;
//!     pthread_cond_broadcast(&l->free); pthread_mutex_unlock(&l->m); return 0; }
//! ```
//!
//! A call of such a function is a lock (shared or exclusive) or unlock of
//! the struct its argument points to, applied at the call site like a lock
//! wrapper's (`lock_wrappers.rs`); the body is not walked.
//!
//! [`gate_shape`] reads one function (one pointer parameter `l` to a
//! struct):
//! - an **acquire** locks `l->m`, may update counts, waits in a loop on
//!   `l->m` until a set of counts `Z` is zero (`while (l->a || l->b) wait`,
//!   or `while (1) { if (!l->a) { if (!l->b) break; } wait }`), then raises
//!   exactly one count `K` (and may lower others), unlocks `l->m` and
//!   returns;
//! - a **release** locks `l->m`, lowers or zeroes counts (tests, local
//!   status values and signals of the condition variable allowed), unlocks
//!   and returns.
//!
//! An acquire with `K` in `Z` is exclusive (it waits for its own kind), one
//! with `K` outside `Z` shared. The struct's gate is understood only when
//! its functions together form a reader-writer lock ([`consistent`]): one
//! exclusive count `W`, every shared acquire waits for `W` to be zero,
//! every exclusive one for each shared count, and every count is lowered by
//! some release. Otherwise the functions stay ordinary ones, walked from
//! their bodies (possible false alarms, never a hidden race).
//!
//! Under-approximations: the counts' own accesses inside these functions
//! are not recorded (all are under `l->m`), and code that writes a count
//! outside them (a forced reset) is not looked for.
//!
//! Invariant: the verdict for a struct reads every function of that shape
//! in the program. An edit of a function that has the shape, before or
//! after, walks again from scratch (`incremental.rs`); the verdicts are
//! cached in `WalkData::gates`.

use super::lock_wrappers::LockWrap;
use super::{arrow_member, uncast, Walker};
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary, Program};
use racelens_syntax::{AccessKind, Callee, Expr, Name, Stmt, Test};

/// What one function of a hand-made lock does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct GateShape {
    /// The struct type of the parameter, and its mutex member.
    key: (Name, Name),
    param: Name,
    role: Role,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Role {
    /// Raises count `field` once the counts `waits` are all zero.
    Acquire { field: Name, waits: Vec<Name> },
    /// Lowers or zeroes `fields`.
    Release { fields: Vec<Name> },
}

impl<'a> Walker<'a> {
    /// The lock wrap of `f` when it is an acquire or release of a hand-made
    /// reader-writer lock that the program's other functions complete.
    pub(super) fn gate_wrap(&self, f: FunctionId) -> Option<LockWrap> {
        let s = self.summary(f);
        let g = gate_shape(&s, self.prog)?;
        let known = self.d.gates.borrow().get(&g.key).copied();
        let ok = match known {
            Some(ok) => ok,
            None => {
                let shapes: Vec<GateShape> = self
                    .prog
                    .functions
                    .values()
                    .flatten()
                    .filter_map(|&h| gate_shape(&self.summary(h), self.prog))
                    .filter(|h| h.key == g.key)
                    .collect();
                let ok = consistent(&shapes);
                self.d.gates.borrow_mut().insert(g.key.clone(), ok);
                ok
            }
        };
        if !ok {
            return None;
        }
        let model = match &g.role {
            Role::Acquire { field, waits } => CallModel::Lock {
                arg: 0,
                shared: !waits.contains(field),
            },
            Role::Release { .. } => CallModel::Unlock { arg: 0 },
        };
        Some(LockWrap {
            model,
            lock: Expr::Var(g.param.clone()),
            params: vec![g.param],
            globals: Vec::new(),
        })
    }
}

/// Do these functions of one struct form a reader-writer lock (see the
/// module doc)?
fn consistent(shapes: &[GateShape]) -> bool {
    let mut exclusive: Option<&Name> = None;
    let mut shared: Vec<(&Name, &Vec<Name>)> = Vec::new();
    let mut exclusive_waits: Vec<&Vec<Name>> = Vec::new();
    let mut released: Vec<&Name> = Vec::new();
    for s in shapes {
        match &s.role {
            Role::Acquire { field, waits } if waits.contains(field) => {
                if exclusive.is_some_and(|w| w != field) {
                    return false;
                }
                exclusive = Some(field);
                exclusive_waits.push(waits);
            }
            Role::Acquire { field, waits } => shared.push((field, waits)),
            Role::Release { fields } => released.extend(fields),
        }
    }
    let Some(w) = exclusive else {
        return false;
    };
    let counts_ok = shared
        .iter()
        .all(|(r, z)| z.contains(w) && exclusive_waits.iter().all(|zw| zw.contains(r)));
    let roles: Vec<&Name> = std::iter::once(w)
        .chain(shared.iter().map(|(r, _)| *r))
        .collect();
    counts_ok
        && released.iter().all(|f| roles.contains(f))
        && roles.iter().all(|r| released.contains(r))
}

/// A read of the parameter `l` itself (`l->f` reads `l`).
fn reads_param(st: &Stmt, p: &Name) -> bool {
    matches!(st, Stmt::Access(a) if a.kind == AccessKind::Read && matches!(&a.place, Expr::Var(x) if x == p))
}

/// `&l->f` for the parameter `l`: `f`.
fn addr_member<'e>(e: &'e Expr, p: &Name) -> Option<&'e Name> {
    match uncast(e) {
        Expr::AddrOf(x) => arrow_member(x, p),
        _ => None,
    }
}

/// A change of a count: raised, lowered or zeroed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Up,
    Down,
}

/// Reads statements of a gate function that only touch the counts, its
/// locals and the condition variable, collecting how counts change.
struct Counts<'s> {
    s: &'s FunctionSummary,
    p: &'s Name,
    locals: Vec<Name>,
    steps: Vec<(Name, Step)>,
    /// The last write of a count, to tell `++` from `--` at its assignment.
    last_write: Option<(Name, bool)>,
}

impl Counts<'_> {
    /// Accepts `stmts` when each is a count or local access, a count step,
    /// a local assignment, a signal of a condition variable of the struct
    /// (when `signals`), or a branch of those.
    fn take<'x>(&mut self, stmts: impl IntoIterator<Item = &'x Stmt>, signals: bool) -> bool {
        stmts.into_iter().all(|st| self.take_one(st, signals))
    }

    fn take_one(&mut self, st: &Stmt, signals: bool) -> bool {
        match st {
            Stmt::Decl(_) => true,
            Stmt::Access(a) => {
                if let Some(f) = arrow_member(&a.place, self.p) {
                    if a.kind == AccessKind::Write {
                        let down = self.s.ir.decrements.contains(&a.span);
                        self.last_write = Some((f.clone(), down));
                    }
                    true
                } else {
                    reads_param(st, self.p)
                        || matches!(&a.place, Expr::Var(x) if self.locals.contains(x))
                }
            }
            Stmt::Assign { lhs, rhs } => {
                if let Some(f) = arrow_member(lhs, self.p) {
                    let step = match uncast(rhs) {
                        Expr::Int(0) => Step::Down,
                        Expr::Offset(x) if arrow_member(x, self.p) == Some(f) => {
                            match &self.last_write {
                                Some((w, true)) if w == f => Step::Down,
                                Some((w, false)) if w == f => Step::Up,
                                _ => return false,
                            }
                        }
                        _ => return false,
                    };
                    self.steps.push((f.clone(), step));
                    true
                } else {
                    matches!(lhs, Expr::Var(x) if self.locals.contains(x))
                        && matches!(uncast(rhs), Expr::Int(_) | Expr::Other | Expr::Init(_))
                }
            }
            Stmt::If {
                cond, then, els, ..
            } => self.take(cond, signals) && self.take(then, signals) && self.take(els, signals),
            Stmt::Call(c) => {
                signals
                    && matches!(&c.callee, Callee::Direct(n)
                        if matches!(&**n, "pthread_cond_signal" | "pthread_cond_broadcast"))
                    && c.args.len() == 1
                    && addr_member(&c.args[0], self.p).is_some()
            }
            _ => false,
        }
    }
}

/// The counts that must all be zero for wait loop `st` (on mutex `m` of
/// `p`) to end, when it is one (see the module doc).
fn wait_loop(s: &FunctionSummary, st: &Stmt, p: &Name, m: &Name) -> Option<Vec<Name>> {
    let Stmt::Loop {
        cond,
        test,
        body,
        do_while: false,
        infinite,
        ..
    } = st
    else {
        return None;
    };
    let reads_only = |stmts: &[Stmt]| {
        stmts.iter().all(|x| {
            reads_param(x, p)
                || matches!(x, Stmt::Access(a) if a.kind == AccessKind::Read && arrow_member(&a.place, p).is_some())
        })
    };
    let is_wait = |x: &Stmt| {
        matches!(x, Stmt::Call(c)
            if matches!(s.models.get(&c.id), Some(CallModel::CondWait))
                && c.args.len() == 2
                && addr_member(&c.args[0], p).is_some()
                && addr_member(&c.args[1], p) == Some(m))
    };
    let fields = |chains: &[Name]| -> Option<Vec<Name>> {
        let prefix = format!("{p}->");
        chains
            .iter()
            .map(|c| c.strip_prefix(&prefix).map(Name::from))
            .collect()
    };
    if !*infinite {
        // `while (l->a || l->b) wait;`
        let Test::FieldsZero {
            chains,
            zero_on_true: false,
        } = test
        else {
            return None;
        };
        let body: Vec<&Stmt> = body.iter().filter(|x| !reads_param(x, p)).collect();
        let [w] = body[..] else { return None };
        return (reads_only(cond) && is_wait(w))
            .then(|| fields(chains))
            .flatten();
    }
    // `while (1) { if (!l->a) { if (!l->b) break; } wait; }`
    let body: Vec<&Stmt> = body.iter().filter(|x| !reads_param(x, p)).collect();
    let [exit, w] = body[..] else { return None };
    if !is_wait(w) {
        return None;
    }
    let mut zero = Vec::new();
    let mut at = exit;
    loop {
        let Stmt::If {
            cond,
            test:
                Test::FieldsZero {
                    chains,
                    zero_on_true: true,
                },
            then,
            els,
        } = at
        else {
            return None;
        };
        if !els.is_empty() || !reads_only(cond) {
            return None;
        }
        zero.extend(fields(chains)?);
        let then: Vec<&Stmt> = then.iter().filter(|x| !reads_param(x, p)).collect();
        match then[..] {
            [Stmt::Break] => break,
            [inner] => at = inner,
            _ => return None,
        }
    }
    zero.sort();
    zero.dedup();
    Some(zero)
}

/// The role of a function in a hand-made lock, if it has the shape of one
/// (see the module doc).
pub(super) fn gate_shape(s: &FunctionSummary, prog: &Program) -> Option<GateShape> {
    if s.ir.truncated {
        return None;
    }
    let [param] = &s.ir.params[..] else {
        return None;
    };
    let p = &param.name;
    if s.ir.address_taken.contains(p) {
        return None;
    }
    let ty = prog.resolve_type(&param.ty);
    if ty.pointer != 1 {
        return None;
    }
    let ty_name = ty.name.clone()?;
    let body: Vec<&Stmt> =
        s.ir.body
            .iter()
            .filter(|x| !matches!(x, Stmt::Decl(_)) && !reads_param(x, p))
            .collect();
    let mutex_call = |x: &Stmt, lock: bool| -> Option<Name> {
        let Stmt::Call(c) = x else { return None };
        let ok = match s.models.get(&c.id) {
            Some(CallModel::Lock {
                arg: 0,
                shared: false,
            }) => lock,
            Some(CallModel::Unlock { arg: 0 }) => !lock,
            _ => false,
        };
        ok.then(|| addr_member(c.args.first()?, p).cloned())
            .flatten()
    };
    let (first, rest) = body.split_first()?;
    let m = mutex_call(first, true)?;
    let unlock_at = rest
        .iter()
        .position(|x| mutex_call(x, false).as_ref() == Some(&m))?;
    let locals: Vec<Name> =
        s.ir.body
            .iter()
            .filter_map(|x| match x {
                Stmt::Decl(d) => Some(d.name.clone()),
                _ => None,
            })
            .collect();
    // After the unlock: only the return of a constant or a local.
    let after = &rest[unlock_at + 1..];
    let returns_ok = after.iter().all(|x| {
        matches!(x, Stmt::Access(a) if a.kind == AccessKind::Read && matches!(&a.place, Expr::Var(v) if locals.contains(v)))
            || matches!(x, Stmt::Return { value: None | Some(Expr::Int(_)), .. })
            || matches!(x, Stmt::Return { value: Some(Expr::Var(v)), .. } if locals.contains(v))
    });
    if !returns_ok || !matches!(after.last(), Some(Stmt::Return { .. })) {
        return None;
    }
    let middle = &rest[..unlock_at];
    let mut counts = Counts {
        s,
        p,
        locals,
        steps: Vec::new(),
        last_write: None,
    };
    let waits_at = middle.iter().position(|x| matches!(x, Stmt::Loop { .. }));
    let role = match waits_at {
        Some(i) => {
            let waits = wait_loop(s, middle[i], p, &m)?;
            if !counts.take(middle[..i].iter().copied(), false) {
                return None;
            }
            counts.steps.clear();
            if !counts.take(middle[i + 1..].iter().copied(), false) {
                return None;
            }
            let ups: Vec<&Name> = counts
                .steps
                .iter()
                .filter(|(_, st)| *st == Step::Up)
                .map(|(f, _)| f)
                .collect();
            let [field] = ups[..] else {
                return None;
            };
            Role::Acquire {
                field: field.clone(),
                waits,
            }
        }
        None => {
            if !counts.take(middle.iter().copied(), true)
                || counts.steps.iter().any(|(_, st)| *st == Step::Up)
            {
                return None;
            }
            let mut fields: Vec<Name> = counts.steps.iter().map(|(f, _)| f.clone()).collect();
            fields.sort();
            fields.dedup();
            if fields.is_empty() {
                return None;
            }
            Role::Release { fields }
        }
    };
    Some(GateShape {
        key: (ty_name, m),
        param: p.clone(),
        role,
    })
}
