//! Naming memory in the model: what a pointer points to, which lock or
//! condition variable an argument denotes, and whether a location is one
//! object in every run (only those may exclude or order anything).

use super::{Builder, Frame};
use crate::config::CallModel;
use crate::db::walk_summary;
use crate::model::{Base, Elem, LocKey};
use racelens_syntax::{Expr, Name, Stmt};

impl Builder<'_> {
    /// The index of the lock (or condition variable) `e` points to, or
    /// `None` when it may stand for several objects (an unknown index, a
    /// heap object from a loop, an unresolved pointer). Leaving such a lock
    /// out only adds schedules, so refutations stay sound.
    pub(super) fn lock_id(&mut self, fr: &Frame, e: Option<&Expr>, lock: bool) -> Option<u16> {
        let k = e
            .and_then(|e| self.pointee(fr, e, 0))
            .filter(|k| self.definite(k))?;
        let (index, names) = if lock {
            (&mut self.lock_index, &mut self.model.locks)
        } else {
            (&mut self.cond_index, &mut self.model.conds)
        };
        Some(*index.entry(format!("{k:?}")).or_insert_with(|| {
            names.push(k.display());
            (names.len() - 1) as u16
        }))
    }

    /// Does the location denote one object in every run?
    pub(super) fn definite(&self, k: &LocKey) -> bool {
        if k.path.iter().any(|e| matches!(e, Elem::Index(None))) {
            return false;
        }
        let once = |func: &Name| {
            &**func == "main"
                && self
                    .model
                    .threads
                    .first()
                    .map(|t| t.site.is_none() && &*t.entry == "main")
                    .unwrap_or(false)
        };
        match &k.base {
            Base::Global(_) => true,
            Base::Local { func, .. } => once(func),
            Base::Heap { func, call } => {
                once(func)
                    && self
                        .function_named(func, None)
                        .map(|f| !call_in_loop(&walk_summary(self.db, f).ir.body, *call, false))
                        .unwrap_or(false)
            }
            Base::Type(_) | Base::Synthetic(_) | Base::Unknown => false,
        }
    }

    /// The object a pointer expression points to.
    pub(super) fn pointee(&self, fr: &Frame, e: &Expr, depth: u32) -> Option<LocKey> {
        if depth > 16 {
            return None;
        }
        match e {
            Expr::AddrOf(p) => self.place(fr, p, depth + 1),
            Expr::Var(x) => match fr.env.get(x) {
                Some(v) => v.clone(),
                None if !fr.locals.contains_key(x)
                    && self.prog.globals.get(x).map(|t| t.array).unwrap_or(false) =>
                {
                    Some(LocKey::new(Base::Global(x.clone())))
                }
                None => None,
            },
            Expr::Cast { value, .. } | Expr::Offset(value) => self.pointee(fr, value, depth + 1),
            Expr::CallResult(id) => matches!(fr.summary.models.get(id), Some(CallModel::Alloc))
                .then(|| {
                    LocKey::new(Base::Heap {
                        func: fr.fname.clone(),
                        call: *id,
                    })
                }),
            Expr::Choice(alts) => {
                let vs: Vec<Option<LocKey>> = alts
                    .iter()
                    .map(|a| self.pointee(fr, a, depth + 1))
                    .collect();
                vs.windows(2)
                    .all(|w| w[0] == w[1])
                    .then(|| vs.first().cloned().flatten())
                    .flatten()
            }
            _ => None,
        }
    }

    /// The object an lvalue designates.
    pub(super) fn place(&self, fr: &Frame, e: &Expr, depth: u32) -> Option<LocKey> {
        if depth > 16 {
            return None;
        }
        match e {
            Expr::Var(x) => match fr.locals.get(x) {
                Some(true) => Some(LocKey::new(Base::Global(
                    format!("{}::{x}", fr.fname).into(),
                ))),
                Some(false) => Some(LocKey::new(Base::Local {
                    func: fr.fname.clone(),
                    var: x.clone(),
                })),
                None => self
                    .prog
                    .globals
                    .contains_key(x)
                    .then(|| LocKey::new(Base::Global(x.clone()))),
            },
            Expr::Field { base, field, arrow } => {
                let b = if *arrow {
                    self.pointee(fr, base, depth + 1)
                } else {
                    self.place(fr, base, depth + 1)
                };
                b.map(|k| k.with(Elem::Field(field.clone())))
            }
            Expr::Index { base, index, .. } => {
                let is_ptr = matches!(&**base, Expr::Var(x) if fr.env.contains_key(x));
                let b = if is_ptr {
                    self.pointee(fr, base, depth + 1)
                } else {
                    self.place(fr, base, depth + 1)
                };
                b.map(|k| k.with(Elem::Index(*index)))
            }
            Expr::Deref(v) => self.pointee(fr, v, depth + 1),
            Expr::Cast { value, .. } => self.place(fr, value, depth + 1),
            _ => None,
        }
    }
}

/// Is call `id` inside a loop of `stmts`?
pub(super) fn call_in_loop(stmts: &[Stmt], id: u32, in_loop: bool) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Call(c) => c.id == id && in_loop,
        Stmt::If {
            cond, then, els, ..
        } => {
            call_in_loop(cond, id, in_loop)
                || call_in_loop(then, id, in_loop)
                || call_in_loop(els, id, in_loop)
        }
        Stmt::Loop { cond, body, .. } => {
            call_in_loop(cond, id, true) || call_in_loop(body, id, true)
        }
        Stmt::Switch { cond, arms, .. } => {
            call_in_loop(cond, id, in_loop) || arms.iter().any(|a| call_in_loop(a, id, in_loop))
        }
        _ => false,
    })
}
