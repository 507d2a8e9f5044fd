//! Child processes: `fork()` copies the calling process, and in the copy
//! only the calling thread exists (POSIX `fork`: "the new process shall
//! contain a replica of the calling thread"). Memory is the child's own
//! copy, so nothing the child does races with the parent's threads, and
//! nothing the parent does races with the child.
//!
//! The child is the path on which the fork's result is zero:
//! - `if (pid == 0)`, `if (!pid)` (the then-branch), `if (pid) return;`
//!   and `if (pid != 0) exit(0);` (the rest of the function, as daemons
//!   detach), where every assignment of the local `pid` in the function is
//!   the result of `fork()` (directly, `pid = fork()`, or through another
//!   such local, `tmp = fork(); pid = tmp;`);
//! - `if (fork() == 0)` on the call itself, and `if ((pid = fork()) == 0)`;
//! - the `case 0:` arm of `switch (pid)`, `switch (fork())` or
//!   `switch (pid = fork())`.
//!
//! On that path `State::forked` is set, and every access recorded there
//! carries `FactCtx::forked` (`record.rs`), until the child creates a
//! thread (installing a signal handler is not one: `calls.rs`). From
//! there on it records as before: the new thread may race with what
//! follows, and the parent's threads, which do not exist in the child,
//! are paired again (a possible false alarm, never a missed race).
//! `races.rs` pairs a forked access only with a signal handler's: a
//! handler the child inherits (or installs) may interrupt it. Never with
//! another forked access, even one of the same handler: each is in the
//! process its own fork made. Where the
//! child's path meets the parent's (a child branch that falls through),
//! the flag holds only if it holds on both. Tests that do not split the
//! child from a failed fork (`pid > 0`, `pid < 0`, `pid == -1`) mark
//! nothing: a failed fork's error path runs in the parent. `vfork` is not
//! a fork here: its child shares the parent's memory until it calls `exec`
//! or `_exit`.
//!
//! Under-approximation: memory shared between the processes on purpose
//! (`mmap(MAP_SHARED)`, System V shared memory) is shared across the fork,
//! and a race there between the child and a parent's thread is missed. A
//! `fork` the program defines itself is an ordinary function. Cost: the
//! functions a child calls get calling contexts of their own (the flag is
//! part of the memo key): `check` on mt-daapd, whose mDNS responder runs
//! in a child, takes about a tenth longer.
//!
//! Invariant: which locals hold a fork's result is read from the
//! function's own text ([`ForkVars`], cached per walker), so copies of its
//! nodes and incremental updates agree with a walk from scratch.

use super::frames::Frame;
use super::{uncast, Walker};
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{AccessKind, Callee, Expr, FnIr, Name, Stmt, Test};

/// What a function's text says about its calls of `fork()`.
#[derive(Default)]
pub(super) struct ForkVars {
    /// The ids of its `fork()` calls.
    calls: Vec<u32>,
    /// Its locals that only ever hold a fork's result.
    vars: Vec<Name>,
}

/// The fork calls of `ir` and the locals holding only their results.
fn fork_vars(ir: &FnIr) -> ForkVars {
    let mut calls = Vec::new();
    visit_calls(&ir.body, &mut |c| {
        if matches!(&c.callee, Callee::Direct(n) if &**n == "fork") {
            calls.push(c.id);
        }
    });
    if calls.is_empty() {
        return ForkVars::default();
    }
    let mut assigns: Vec<(Name, Expr)> = Vec::new();
    visit_stmts(&ir.body, &mut |s| {
        if let Stmt::Assign {
            lhs: Expr::Var(x),
            rhs,
        } = s
        {
            assigns.push((x.clone(), uncast(rhs).clone()));
        }
    });
    // Grow the set: a local all of whose assignments are a fork's result
    // or another such local (a parameter or a local whose address is
    // taken may hold anything).
    let mut vars: Vec<Name> = Vec::new();
    loop {
        let mut grew = false;
        for (x, _) in &assigns {
            if vars.contains(x)
                || ir.address_taken.contains(x)
                || ir.params.iter().any(|p| &p.name == x)
            {
                continue;
            }
            let all = assigns
                .iter()
                .filter(|(y, _)| y == x)
                .all(|(_, rhs)| match rhs {
                    Expr::CallResult(id) => calls.contains(id),
                    Expr::Var(y) => vars.contains(y),
                    _ => false,
                });
            if all {
                vars.push(x.clone());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    ForkVars { calls, vars }
}

impl<'a> Walker<'a> {
    /// The fork calls and fork result locals of `fr`'s function.
    fn fork_vars_of(&self, fr: &Frame) -> std::sync::Arc<ForkVars> {
        if let Some(v) = self.fork_vars.borrow().get(&fr.fid) {
            return v.clone();
        }
        let v = std::sync::Arc::new(fork_vars(&fr.summary.ir));
        self.fork_vars.borrow_mut().insert(fr.fid, v.clone());
        v
    }

    /// Is the program's `fork` the C library's (no body of its own)?
    fn library_fork(&self) -> bool {
        self.prog.functions_named("fork").is_none()
    }

    /// Does `test` compare a fork's result with zero (its zero side is the
    /// child)?
    pub(super) fn tests_fork(&self, fr: &Frame, test: &Test) -> bool {
        let fork = match test {
            Test::CallZero { id, .. } => self.fork_vars_of(fr).calls.contains(id),
            Test::VarZero { var, .. } => self.fork_vars_of(fr).vars.contains(var),
            _ => false,
        };
        fork && self.library_fork()
    }

    /// Is `cond`, a switch's condition, a fork's result: `switch (fork())`,
    /// `switch (pid = fork())`, or a read of a fork result local and
    /// nothing else?
    pub(super) fn fork_switch(&self, fr: &Frame, cond: &[Stmt]) -> bool {
        if !self.library_fork() {
            return false;
        }
        let fv = self.fork_vars_of(fr);
        if fv.calls.is_empty() {
            return false;
        }
        match cond {
            [Stmt::Access(a)] => {
                a.kind == AccessKind::Read
                    && matches!(&a.place, Expr::Var(x) if fv.vars.contains(x))
            }
            // `switch (fork())`, `switch (pid = fork())`: the call, and
            // at most the assignment of its result to a variable.
            _ => {
                let mut fork = false;
                let only = cond.iter().all(|s| match s {
                    Stmt::Call(c) if fv.calls.contains(&c.id) => {
                        fork = true;
                        true
                    }
                    Stmt::Assign {
                        lhs: Expr::Var(_),
                        rhs,
                    } => matches!(uncast(rhs), Expr::CallResult(id) if fv.calls.contains(id)),
                    Stmt::Access(a) => {
                        a.kind == AccessKind::Write && matches!(a.place, Expr::Var(_))
                    }
                    _ => false,
                });
                fork && only
            }
        }
    }
}
