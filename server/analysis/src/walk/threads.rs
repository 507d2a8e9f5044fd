//! The thread table and library mode: does the program start threads at
//! all, which functions are the roots (`main`, the uncalled functions, or a
//! library's API, each a non-unique thread of its own), and what a thread
//! leaves behind when it ends (the locks that protect the sites it created
//! and never joined, the locks its ancestors held along the creation chain).
//!
//! Owns the thread-level parts of [`WalkData`](super::WalkData): `threads`,
//! `thread_args`, `thread_acquired`, `protected`, `joined_inside` and the
//! reading side of `pending_joins`. Invariant: a change to the protection
//! of a site goes through [`Walker::protect`], which counts as an effect on
//! state shared by the whole walk (see `memo.rs`).

use super::spawn::same_thread_id;
use super::state::State;
use super::{uncast, Walker, THREAD_BUDGET};
use crate::config::CallModel;
use crate::db::{FunctionId, FunctionSummary};
use crate::facts::*;
use crate::model::*;
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{Call, Callee, Expr, Name, Stmt};
use rustc_hash::FxHashSet;

/// (site or thread, lock) pairs.
pub(super) type SiteLocks = Vec<(u32, LocKey)>;

/// Visits every variable name an expression mentions.
fn visit_names(e: &Expr, f: &mut dyn FnMut(&Name)) {
    match e {
        Expr::Var(n) => f(n),
        Expr::Field { base, .. } | Expr::Index { base, .. } => visit_names(base, f),
        Expr::Deref(v) | Expr::AddrOf(v) | Expr::Offset(v) | Expr::Cast { value: v, .. } => {
            visit_names(v, f)
        }
        Expr::Choice(vs) => vs.iter().for_each(|v| visit_names(v, f)),
        Expr::Init(vs) => vs.iter().for_each(|(_, v)| visit_names(v, f)),
        Expr::CallResult(_) | Expr::Int(_) | Expr::Str | Expr::Other => {}
    }
}

/// The function an argument names: `f`, `&f` or `(void *(*)(void *))f`.
pub(super) fn function_name(e: &Expr) -> Option<Name> {
    match e {
        Expr::Var(n) => Some(n.clone()),
        Expr::AddrOf(inner) | Expr::Cast { value: inner, .. } => function_name(inner),
        _ => None,
    }
}

impl<'a> Walker<'a> {
    /// Does some call of the program create a thread?
    pub(super) fn creates_threads(&self) -> bool {
        self.prog.functions.values().flatten().any(|f| {
            let s = self.summary(*f);
            if s.models
                .values()
                .any(|m| matches!(m, CallModel::Create { .. }))
            {
                return true;
            }
            // A library function that runs callbacks on threads of its own.
            let mut pool = false;
            crate::visit::visit_calls(&s.ir.body, &mut |c| {
                pool |= matches!(&c.callee, Callee::Direct(n)
                    if super::library::starts_threads(n) && self.prog.functions_named(n).is_none());
            });
            pool
        })
    }

    /// Library mode: a program without `main` that takes locks is a library
    /// (or a kernel module) whose functions its clients may call from any
    /// number of threads at once.
    pub(super) fn is_library(&self) -> bool {
        self.prog.functions_named("main").is_none() && self.uses_locks()
    }

    /// Can no thread ever start? Then the program has no races and is not
    /// walked. `has_threads` and `library` are [`Self::creates_threads`] and
    /// [`Self::is_library`], which the walk needs too.
    pub(super) fn single_threaded(&self, has_threads: bool, library: bool) -> bool {
        !has_threads && !library && !self.thread_entry_escapes() && !self.installs_signal_handlers()
    }

    /// Does the program install a signal handler of its own: `signal(s, h)`
    /// (`sigset`, `bsd_signal`) with `h` a function of the program, or
    /// `sigaction` in a function that stores one into a `sa_handler` or
    /// `sa_sigaction` member? A handler is a concurrent context (see
    /// `Thread::signal`), even in a program without threads.
    pub(super) fn installs_signal_handlers(&self) -> bool {
        let program_fn = |e: &Expr| {
            function_name(uncast(e)).is_some_and(|n| self.prog.functions_named(&n).is_some())
        };
        self.prog.functions.values().flatten().any(|f| {
            let s = self.summary(*f);
            let mut direct = false;
            let mut via_struct = false;
            visit_calls(&s.ir.body, &mut |c| {
                let Callee::Direct(n) = &c.callee else { return };
                if !super::library::SIGNAL_HANDLERS.contains(&&**n)
                    || self.prog.functions_named(n).is_some()
                {
                    return;
                }
                if &**n == "sigaction" {
                    via_struct = true;
                } else {
                    direct |= c.args.get(1).is_some_and(program_fn);
                }
            });
            if direct {
                return true;
            }
            let mut stores = false;
            if via_struct {
                visit_stmts(&s.ir.body, &mut |st| {
                    if let Stmt::Assign {
                        lhs: Expr::Field { field, .. },
                        rhs,
                    } = st
                    {
                        stores |= super::library::SIGACTION_HANDLER_MEMBERS.contains(&&**field)
                            && program_fn(rhs);
                    }
                });
            }
            stores
        })
    }

    /// At the end of a thread, the sites it created and never joined keep the
    /// locks that were never released (a lock held at exit is never released).
    pub(super) fn thread_ended(&mut self, exit: Option<State>) {
        let t = self.d.thread as usize;
        // It also ends where a callee calls `pthread_exit`.
        self.d.threads[t].leaks = match (exit.as_ref(), &self.d.exit_active) {
            (Some(e), Some(a)) => Some(e.active.union(a)),
            (Some(e), None) => Some(e.active.clone()),
            (None, a) => a.clone(),
        };
        let Some(exit) = exit else { return };
        for &s in &exit.created.0 {
            if !exit.active.contains(s) {
                continue;
            }
            self.protect(s, held_since(&exit, s), Vec::new());
        }
    }

    /// Locks acquired by this thread (tagged with its spawn site) and by its
    /// ancestors before they created the next thread on the chain.
    pub(super) fn chain_acquired(&self, st: &State) -> Vec<(u32, LocKey)> {
        if st.acquired.is_empty()
            && self
                .d
                .thread_acquired
                .get(self.d.thread as usize)
                .map(|v| v.is_empty())
                .unwrap_or(true)
        {
            return Vec::new();
        }
        let mut v = self
            .d
            .thread_acquired
            .get(self.d.thread as usize)
            .cloned()
            .unwrap_or_default();
        if let Some(site) = self.d.threads[self.d.thread as usize].site {
            for l in &st.acquired {
                v.push((site, l.clone()));
            }
        }
        v.sort();
        v.dedup();
        v
    }

    /// Thread `t`'s protection by an ancestor that joined it: the ancestor
    /// held a lock from before it created the child on `t`'s creation chain
    /// until it joined `t` through a global thread id (`main` locks `m`,
    /// creates `t2`, which creates `t3` into `id3`; `main` joins `id3`, then
    /// unlocks). Returns `t`'s (joiner, lock) creation locks and its
    /// (sibling site, lock) joined-inside pairs, as for a joined child.
    /// Every such join counts, even one some paths of the joiner skip.
    pub(super) fn ancestor_joins(&self, t: u32) -> (SiteLocks, SiteLocks) {
        let (mut locks, mut inside) = (Vec::new(), Vec::new());
        let th = &self.d.threads[t as usize];
        let (Some(site), Some(parent)) = (th.site, th.parent) else {
            return (locks, inside);
        };
        let info = &self.d.sites[site as usize];
        if info.in_loop || info.tid_escaped {
            return (locks, inside);
        }
        for (joiner, key, clean) in &self.d.pending_joins {
            if *joiner == parent || !info.tid.iter().any(|k| same_thread_id(k, key)) {
                continue;
            }
            // The site on the chain that the joiner itself created.
            let mut cur = parent;
            let anc_site = loop {
                let c = &self.d.threads[cur as usize];
                match c.parent {
                    Some(p) if p == *joiner => break c.site,
                    Some(p) => cur = p,
                    None => break None,
                }
            };
            let Some(anc_site) = anc_site else { continue };
            let held: Vec<&LocKey> = clean
                .iter()
                .filter(|(x, _)| *x == anc_site)
                .map(|(_, l)| l)
                .collect();
            locks.extend(held.iter().map(|l| (*joiner, (*l).clone())));
            inside.extend(
                clean
                    .iter()
                    .filter(|(x, l)| *x != anc_site && held.contains(&l))
                    .cloned(),
            );
        }
        (locks, inside)
    }

    /// Site `s`'s threads are joined on this path: the locks the path held
    /// without a break since creating them protected what it did while they
    /// ran ([`protect`](Self::protect)), and they run no more.
    pub(super) fn join_site(&mut self, st: &mut State, s: u32) {
        if st.active.contains(s) {
            let held = held_since(st, s);
            let inside: Vec<(u32, LocKey)> = st
                .clean
                .iter()
                .filter(|(x, l)| *x != s && held.contains(l))
                .cloned()
                .collect();
            self.protect(s, held, inside);
        }
        st.clean.retain(|(x, _)| *x != s);
        if st.active.contains(s) {
            st.joined_some.insert(s);
        }
        st.active.remove(s);
        st.tid_held.remove(s);
    }

    pub(super) fn protect(&mut self, site: u32, held: Vec<LocKey>, inside: Vec<(u32, LocKey)>) {
        self.effect();
        match self.d.protected.get_mut(&site) {
            Some(p) => p.retain(|l| held.contains(l)),
            None => {
                self.d.protected.insert(site, held);
            }
        }
        match self.d.joined_inside.get_mut(&site) {
            Some(p) => p.retain(|x| inside.contains(x)),
            None => {
                self.d.joined_inside.insert(site, inside);
            }
        }
    }

    /// Does some call of the program take or release a lock?
    fn uses_locks(&self) -> bool {
        self.prog.functions.values().flatten().any(|f| {
            self.summary(*f).models.values().any(|m| {
                matches!(
                    m,
                    CallModel::Lock { .. } | CallModel::TryLock { .. } | CallModel::Unlock { .. }
                )
            })
        })
    }

    /// Library mode: every root function (one no other function calls
    /// directly; its address may be taken, as handlers in an operations
    /// table are) is the entry of a non-unique abstract thread without a
    /// creator, which may run in parallel with itself and with every other
    /// root. Functions handed to `pthread_create` or `pthread_once` are left
    /// to those calls.
    pub(super) fn library_threads(&mut self, roots: Vec<(Name, FunctionId)>) {
        for (name, f) in roots {
            if self.d.threads.len() >= THREAD_BUDGET {
                self.mark_incomplete(f, "budget exceeded (too many threads)");
                break;
            }
            let t = self.d.threads.len() as u32;
            let load = is_load_entry(&name);
            let mut th = Thread::new(name.clone(), None, None, load);
            th.load_entry = load;
            self.d.threads.push(th);
            self.d.thread_args.push(Vec::new());
            self.d.thread_acquired.push(Vec::new());
            // Unknown code registering the root as a callback starts this
            // same abstract thread.
            self.d.callback_index.insert(name, t);
        }
    }

    /// The roots of a library: functions no other function calls directly
    /// and that are not handed to `pthread_create` or `pthread_once`.
    pub(super) fn library_roots(&self) -> Vec<(Name, FunctionId)> {
        self.not_called(&mut |caller, c, s, called| {
            if let Callee::Direct(n) = &c.callee {
                // Recursion alone does not make a function called.
                if n != caller {
                    called.insert(n.clone());
                }
            }
            let func = match s.models.get(&c.id) {
                Some(CallModel::Create { func, .. } | CallModel::Once { func }) => *func,
                _ => return,
            };
            if let Some(n) = c.args.get(func).and_then(function_name) {
                called.insert(n);
            }
        })
    }

    /// The names of the functions no function calls directly.
    pub(super) fn uncalled_names(&self) -> FxHashSet<Name> {
        self.not_called(&mut |_, c, _, called| {
            if let Callee::Direct(n) = &c.callee {
                called.insert(n.clone());
            }
        })
        .into_iter()
        .map(|r| r.0)
        .collect()
    }

    /// The roots of a program without `main`: functions no function calls
    /// or passes as an argument.
    pub(super) fn uncalled_functions(&self) -> Vec<FunctionId> {
        self.not_called(&mut |_, c, _, called| {
            if let Callee::Direct(n) = &c.callee {
                called.insert(n.clone());
            }
            for a in &c.args {
                if let Expr::Var(n) = a {
                    called.insert(n.clone());
                }
            }
        })
        .into_iter()
        .map(|r| r.1)
        .collect()
    }

    /// The functions (first definition of each name) that `mark`, shown
    /// every call of every function with its caller's name and summary,
    /// does not put in the called set.
    fn not_called(
        &self,
        mark: &mut dyn FnMut(&Name, &Call, &FunctionSummary, &mut FxHashSet<Name>),
    ) -> Vec<(Name, FunctionId)> {
        let mut called: FxHashSet<Name> = FxHashSet::default();
        for (name, fs) in &self.prog.functions {
            for f in fs {
                let s = self.summary(*f);
                visit_calls(&s.ir.body, &mut |c| mark(name, c, &s, &mut called));
            }
        }
        self.prog
            .functions
            .iter()
            .filter(|(name, _)| !called.contains(*name))
            .map(|(name, fs)| (name.clone(), fs[0]))
            .collect()
    }

    pub(super) fn looks_like_thread_entry(&self, f: FunctionId) -> bool {
        let s = self.summary(f);
        let ret = self.prog.returns.get(f.name(self.db));
        s.ir.params.len() == 1
            && s.ir.params[0].ty.pointer == 1
            && ret
                .map(|t| t.pointer == 1 && t.name.as_deref() == Some("void"))
                .unwrap_or(false)
    }

    /// Without a thread creation in the program, only a function shaped like
    /// a thread entry (`void *f(void *)`) and used as a value (handed to
    /// unknown code, stored, returned) can start a thread, as a callback of
    /// code without a body. Is there one? When there is not, the program is
    /// single-threaded and its walk can be skipped.
    fn thread_entry_escapes(&self) -> bool {
        let entries: FxHashSet<&Name> = self
            .prog
            .functions
            .iter()
            .filter(|(_, fs)| fs.iter().any(|f| self.looks_like_thread_entry(*f)))
            .map(|(n, _)| n)
            .collect();
        if entries.is_empty() {
            return false;
        }
        if self
            .prog
            .global_inits
            .values()
            .flatten()
            .any(|n| entries.contains(n))
        {
            return true;
        }
        let found = std::cell::Cell::new(false);
        let mut see =
            |e: &Expr| visit_names(e, &mut |n| found.set(found.get() | entries.contains(n)));
        for f in self.prog.functions.values().flatten() {
            visit_stmts(&self.summary(*f).ir.body, &mut |s| match s {
                Stmt::Access(a) => see(&a.place),
                Stmt::Assign { lhs, rhs } => {
                    see(lhs);
                    see(rhs);
                }
                Stmt::Call(c) => {
                    if let Callee::Indirect(e) = &c.callee {
                        see(e);
                    }
                    c.args.iter().for_each(&mut see);
                }
                Stmt::Return { value: Some(v), .. } => see(v),
                _ => {}
            });
            if found.get() {
                return true;
            }
        }
        false
    }
}

/// The locks `st` has held without a break since it created site `s`.
fn held_since(st: &State, s: u32) -> Vec<LocKey> {
    st.clean
        .iter()
        .filter(|(x, _)| *x == s)
        .map(|(_, l)| l.clone())
        .collect()
}

/// A library's load entry: a function its host calls exactly once, on one
/// thread, before it calls anything else the library offers (and the
/// handlers the entry registers only run after it returns):
/// - `RedisModule_OnLoad`: Redis loads a module on its main thread and
///   dispatches none of its commands before the call returns;
/// - `JNI_OnLoad`: the JVM calls it once when `System.loadLibrary` loads the
///   library, before any native method of it is bound;
/// - `PyInit_<module>`: CPython calls it once, under the GIL, when the
///   module is first imported, and builds the module from its result.
pub(crate) fn is_load_entry(name: &str) -> bool {
    matches!(name, "RedisModule_OnLoad" | "JNI_OnLoad")
        || name.strip_prefix("PyInit_").is_some_and(|m| !m.is_empty())
}

/// A host that calls every entry point of the library on one thread of its
/// own, one call at a time, given a library's roots: the name of that
/// thread. Redis runs a module's commands, and the callbacks of the data
/// types it registers, on its main thread (a `BGSAVE` that saves a type's
/// values does so in a forked process, with memory of its own); only the
/// threads the module creates run beside it.
pub(crate) fn single_threaded_host(roots: &[(Name, FunctionId)]) -> Option<&'static str> {
    roots
        .iter()
        .any(|(n, _)| &**n == "RedisModule_OnLoad")
        .then_some("Redis main thread")
}
