//! Inlining callees into the model: finding a callee by name, compiling its
//! body in place with its parameters bound, the flow-insensitive pointees of
//! its locals, and whether it contains any event of interest at all.
//!
//! The relevance verdict is cached per function in `Builder::relevant` (a
//! function on a recursive cycle counts as irrelevant while it is being
//! decided). A callee is on `Builder::stack` exactly while its body compiles.

use super::super::model::*;
use super::calls::{is_signal, synchronises};
use super::{local_names, Builder, Frame};
use crate::config::CallModel;
use crate::db::{walk_summary, FunctionId};
use crate::model::LocKey;
use racelens_syntax::{AccessKind, Callee, Expr, Name, Span, Stmt, Test};
use rustc_hash::FxHashMap;

impl<'a> Builder<'a> {
    pub(super) fn function_named(
        &self,
        name: &Name,
        near: Option<FunctionId>,
    ) -> Option<FunctionId> {
        let defs = self.prog.functions.get(name)?;
        let file = near.map(|f| f.file(self.db));
        Some(
            defs.iter()
                .find(|d| Some(d.file(self.db)) == file)
                .copied()
                .unwrap_or(defs[0]),
        )
    }

    /// Compiles `f`'s body in place; `end` ends a thread entry, `None`
    /// continues after the call.
    pub(super) fn inline(&mut self, f: FunctionId, args: Vec<Option<LocKey>>, end: Option<Op>) {
        let summary = walk_summary(self.db, f).clone();
        if summary.ir.truncated {
            self.model
                .gap(format!("`{}` is too large to lower", f.name(self.db)));
        }
        let mut fr = Frame {
            fid: f,
            fname: f.name(self.db).clone(),
            locals: local_names(&summary),
            summary: summary.clone(),
            env: FxHashMap::default(),
            returns: Vec::new(),
            loops: Vec::new(),
        };
        for (p, a) in summary.ir.params.iter().zip(args) {
            fr.env.insert(p.name.clone(), a);
        }
        let scanned = self.bind_locals(&mut fr);
        self.work_left = self.work_left.saturating_sub(scanned);
        self.stack.push(f);
        let saved = std::mem::take(&mut self.loops);
        self.stmts(&mut fr, &summary.ir.body);
        self.loops = saved;
        self.stack.pop();
        let end_pc = self.here();
        let rets = std::mem::take(&mut fr.returns);
        for pc in rets {
            self.patch(pc, 0, end_pc);
        }
        if let Some(end) = end {
            self.emit(end, None);
        }
    }

    /// Flow-insensitive pointees of locals assigned from pointer expressions:
    /// kept only when every assignment agrees.
    /// Returns how many statements it scanned.
    pub(super) fn bind_locals(&self, fr: &mut Frame) -> usize {
        let summary = fr.summary.clone();
        let mut scanned = 0usize;
        for _ in 0..2 {
            let mut seen: FxHashMap<Name, Option<LocKey>> = FxHashMap::default();
            crate::visit::visit_stmts(&summary.ir.body, &mut |s| {
                scanned += 1;
                if let Stmt::Assign {
                    lhs: Expr::Var(x),
                    rhs,
                } = s
                {
                    if fr.locals.get(x) == Some(&false)
                        && !summary.ir.params.iter().any(|p| &p.name == x)
                    {
                        let v = self.pointee(fr, rhs, 0);
                        let e = seen.entry(x.clone()).or_insert_with(|| v.clone());
                        if *e != v {
                            *e = None;
                        }
                    }
                }
            });
            for (k, v) in seen {
                fr.env.insert(k, v);
            }
        }
        scanned
    }

    /// Does `f` (or a callee) contain anything the model needs?
    pub(super) fn is_relevant(&mut self, f: FunctionId) -> bool {
        if let Some(&r) = self.relevant.get(&f) {
            return r;
        }
        self.relevant.insert(f, false);
        let s = walk_summary(self.db, f).clone();
        let locals = local_names(&s);
        let mut callees: Vec<Name> = Vec::new();
        let mut direct = false;
        let wanted = |span: Span| {
            self.wanted
                .accesses
                .iter()
                .any(|(_, g, sp)| *g == f && *sp == span)
        };
        crate::visit::visit_stmts(&s.ir.body, &mut |st| match st {
            Stmt::Access(a) => {
                direct |= wanted(a.span);
                if let Expr::Var(v) = &a.place {
                    direct |= a.kind == AccessKind::Write
                        && !locals.contains_key(v)
                        && self.flags.contains_key(v);
                }
            }
            Stmt::If {
                test: Test::VarZero { var, .. },
                ..
            }
            | Stmt::Loop {
                test: Test::VarZero { var, .. },
                ..
            } => {
                direct |= !locals.contains_key(var) && self.flags.contains_key(var);
            }
            Stmt::Call(c) => match (s.models.get(&c.id), &c.callee) {
                (Some(CallModel::Mem { .. } | CallModel::Scan { .. } | CallModel::Unsafe), _) => {
                    direct |= wanted(c.span)
                }
                (Some(m), _) => direct |= synchronises(m),
                (None, Callee::Direct(n)) if is_signal(n).is_some() => direct = true,
                (None, Callee::Direct(n))
                    if !locals.contains_key(n) && !self.prog.globals.contains_key(n) =>
                {
                    callees.push(n.clone())
                }
                (None, _) => direct = true,
            },
            _ => {}
        });
        let mut r = direct;
        for n in callees {
            if r {
                break;
            }
            if let Some(g) = self.function_named(&n, Some(f)) {
                r |= self.is_relevant(g);
            }
        }
        self.relevant.insert(f, r);
        r
    }

    // ----- statements -----------------------------------------------------
}
