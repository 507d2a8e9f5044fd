//! FUSE: when the operations a file system registers start to run.
//!
//! `fuse_new(&args, &ops, ..)` (and `fuse_lowlevel_new`, `fuse_session_new`,
//! `fuse_setup`) only keeps the table of operations; libfuse calls them once
//! the program enters a loop (`fuse_loop`, `fuse_loop_mt`,
//! `fuse_session_loop`, `fuse_session_loop_mt`, and their versioned
//! symbols such as `fuse_loop_mt_31`). What the program does between the
//! two (`sshfs`: connect, fill the request table, daemonize) happens before
//! any operation runs. So when the program calls a loop somewhere, a
//! registration starts nothing, and each loop call starts the operations of
//! every registration in the program (a callback group, as before, but
//! created at the loop). A program that registers but never calls a loop
//! (it hands the handle to code out of sight) keeps the old reading: the
//! operations may run from the registration on. `fuse_main` registers and
//! runs at once, as before. Every loop, and `fuse_main`, returns only once
//! the operations have ended: the operations' thread is joined there (when
//! it holds nothing else). `fuse_loop` and `fuse_session_loop` (not `_mt`)
//! run them on the calling thread, one at a time, walked at the call, and
//! so does a `fuse_main` whose caller added `-s` to its arguments
//! ([`main_single_threaded`]): `init` first, the others to a fixed point,
//! then `destroy` ([`is_init`], [`is_destroy`] tell them by signature).
//!
//! Invariant: [`Walker::fuse_operations`] reads every function's calls and
//! the pointer store only, never the walk's flow-sensitive state; a re-walk
//! that meets a deferred registration changes shared state (a walk from
//! scratch), so the loop's callbacks never go stale.

use super::frames::Frame;
use super::{add_vals, Val, Vals, Walker};
use crate::visit::visit_calls;
use racelens_syntax::{Call, Callee, Expr, Name};

/// What a FUSE library function does with the operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Keeps the table of operations for a loop to run.
    Registers,
    /// Runs the operations registered before.
    Loop,
    Other,
}

/// FUSE's asynchronous entry points (`library::is_async`) other than
/// `fuse_main` and the loops keep the operations; the loops run them.
pub(super) fn role(name: &str) -> Role {
    if name.starts_with("fuse_loop") || name.starts_with("fuse_session_loop") {
        Role::Loop
    } else if name.starts_with("fuse_")
        && !name.starts_with("fuse_main")
        && (super::library::is_async(name) || name.starts_with("fuse_new_"))
    {
        Role::Registers
    } else {
        Role::Other
    }
}

/// Does a call of `name` return only once the file system is unmounted
/// and every operation has ended (`fuse_main`, which runs the loop, and the
/// loops, multi-threaded ones included: `fuse_session_loop_mt` joins its
/// workers before it returns)?
pub(super) fn ends_operations(name: &str) -> bool {
    name.starts_with("fuse_main") || role(name) == Role::Loop
}

/// Does loop `name` run the operations on the calling thread, one at a
/// time (`fuse_loop`, `fuse_session_loop`, as opposed to their `_mt`
/// forms)?
pub(super) fn single_threaded(name: &str) -> bool {
    role(name) == Role::Loop && !name.contains("_mt")
}

/// Is `ir` shaped like FUSE's `init` operation: its first parameter a
/// `struct fuse_conn_info *` (`void *init(struct fuse_conn_info *conn)`,
/// and libfuse 3's `(conn, struct fuse_config *cfg)`)?
pub(super) fn is_init(ir: &racelens_syntax::FnIr) -> bool {
    ir.params
        .first()
        .is_some_and(|p| p.ty.pointer == 1 && p.ty.name.as_deref() == Some("fuse_conn_info"))
}

/// Is `ir` shaped like FUSE's `destroy` operation: one parameter, a
/// `void *` (`void destroy(void *private_data)`)? No other operation takes
/// only that.
pub(super) fn is_destroy(ir: &racelens_syntax::FnIr) -> bool {
    matches!(&ir.params[..], [p] if p.ty.pointer == 1 && p.ty.name.as_deref() == Some("void"))
}

/// The variable an argument vector expression is rooted at (`args` of
/// `args.argv`, `argv` of `argv`), under casts.
fn argv_root(e: &Expr) -> Option<&Name> {
    match super::uncast(e) {
        Expr::Var(x) => Some(x),
        Expr::Field { base, .. } => argv_root(base),
        _ => None,
    }
}

/// Does call `c` of `fr`, a `fuse_main` (`fuse_main_real`, ...), run the
/// file system single-threaded: did this function add `-s` to the argument
/// vector it hands over (`fuse_opt_add_arg(&args, "-s")` or
/// `fuse_opt_insert_arg(&args, pos, "-s")`, then `fuse_main(args.argc,
/// args.argv, ..)`)? Read from the function's own text, whatever the path.
pub(super) fn main_single_threaded(fr: &Frame, c: &Call) -> bool {
    let named = matches!(&c.callee, Callee::Direct(n) if n.starts_with("fuse_main"));
    let Some(root) = c.args.get(1).and_then(argv_root) else {
        return false;
    };
    if !named {
        return false;
    }
    let mut adds = Vec::new();
    visit_calls(&fr.summary.ir.body, &mut |a| {
        if let Callee::Direct(n) = &a.callee {
            let text_arg = match &**n {
                "fuse_opt_add_arg" => 1,
                "fuse_opt_insert_arg" => 2,
                _ => return,
            };
            let onto = matches!(a.args.first().map(super::uncast),
                Some(Expr::AddrOf(v)) if argv_root(v) == Some(root));
            if onto {
                adds.push((a.id, text_arg));
            }
        }
    });
    fr.summary
        .ir
        .call_strings
        .iter()
        .any(|(id, i, t)| &**t == "-s" && adds.contains(&(*id, *i)))
}

impl<'a> Walker<'a> {
    /// Is every function of the thread that site `s` starts one of `names`
    /// (a callback group holding only what one registration handed over,
    /// not also another library's handlers that this thread registered)?
    pub(super) fn group_only_of(&self, s: u32, names: &[Name]) -> bool {
        let Some(t) = self.d.threads.iter().position(|t| t.site == Some(s)) else {
            return false;
        };
        match self.d.group_roots.get(&(t as u32)) {
            Some(roots) => roots.iter().all(|(n, _)| names.contains(n)),
            None => false,
        }
    }

    /// Does some function of the program call a FUSE loop?
    pub(super) fn runs_fuse_loop(&self) -> bool {
        self.prog.functions.values().flatten().any(|&f| {
            let mut found = false;
            visit_calls(&self.summary(f).ir.body, &mut |c| {
                found |= matches!(&c.callee, Callee::Direct(n) if role(n) == Role::Loop);
            });
            found
        })
    }

    /// The operations of every FUSE registration in the program: the
    /// functions its arguments hold, directly or in a table, read in the
    /// registering function's frame without calling context.
    pub(super) fn fuse_operations(&self) -> Vals {
        let mut out = Vals::new();
        self.without_cur_ptrs(|| {
            for &f in self.prog.functions.values().flatten() {
                let summary = self.summary(f);
                let mut args: Vec<Vec<Expr>> = Vec::new();
                visit_calls(&summary.ir.body, &mut |c| {
                    if matches!(&c.callee, Callee::Direct(n) if role(n) == Role::Registers) {
                        args.push(c.args.clone());
                    }
                });
                if args.is_empty() {
                    continue;
                }
                let fr = self.frame_cached(f, &[]);
                for a in &args {
                    let (direct, table) = self.handed_functions(&fr, a);
                    add_vals(
                        &mut out,
                        direct.into_iter().filter(|v| matches!(v, Val::Func(_))),
                    );
                    add_vals(&mut out, table);
                }
            }
        });
        out
    }
}
