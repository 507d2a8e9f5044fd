//! libevent: on which thread a registered handler runs.
//!
//! `event_assign(&ev, base, fd, what, cb, arg)` (and `event_new`,
//! `evtimer_*`, `evsignal_*`, `event_base_once`, `evconnlistener_new`,
//! `event_set` followed by `event_base_set(base, &ev)`, ...) only records
//! the handler. libevent runs it from `event_base_loop(base, ..)` or
//! `event_base_dispatch(base)`: on the thread that runs the loop of the
//! event's base, one handler at a time, with the `arg` given at the
//! registration. A server that gives each worker thread a base of its own
//! (memcached: `setup_thread` makes `me->base`, `worker_libevent` loops it)
//! runs each connection's handlers on its worker, not on a thread of their
//! own beside every other thread.
//!
//! So when the program calls a loop somewhere, a registration that some
//! loop may run starts nothing, and each loop call walks, on the calling
//! thread, at the call, the handlers of every registration in the program
//! whose base may be the loop's: each from the state at the call, once per
//! thread and loop call (a later visit of the call, the next round of
//! `while (..) event_base_loop(..)`, joins what they left the first time),
//! none or any of them. A handler's last parameter is
//! bound to the registration's `arg` (the argument after its last
//! function); its others are unresolved, as for any callback.
//!
//! Bases are matched by the objects they may point to: the base argument of
//! the registration (for `event_set`, of an `event_base_set` on the same
//! event expression in the same function) read in the registering
//! function's frame, and the loop's base read where the loop is called.
//! Each is read without calling context, a parameter standing for what the
//! function's direct callers pass. A base not known by value that is a
//! member of a struct of known type (`bec->event_thread->base`) is any base
//! the program stores into that member of that type (`Walker::bases_by_type`).
//! A base racelens knows nothing of (a
//! value from code without a body, `bufferevent_setcb`'s buffer event, the
//! default base of `event_dispatch`) may be any, and matches every loop:
//! an over-approximation (the handler is walked on more threads than run
//! it). A registration no loop matches, and every registration of a
//! program that calls no loop (it hands its base to code out of sight),
//! keeps the reading of other asynchronous APIs: a callback group, a
//! thread of its own from its registration on.
//!
//! Invariant: the plan ([`Walker::libevent_plan`]) reads function
//! summaries and the pointer store only, never the walk's flow-sensitive
//! state, so a deferred registration does nothing in the walk; the walk
//! keeps the plan it used, and an incremental update whose new plan differs
//! walks from scratch, so a loop's handlers never go stale.
//!
//! `RACELENS_DEBUG_LIBEVENT=1` prints the plan and what each loop call runs.

use super::frames::Frame;
use super::state::{join, State};
use super::{add_vals, uncast, Val, Vals, Walker};
use crate::db::FunctionId;
use crate::visit::visit_calls;
use racelens_syntax::{Call, Callee, Expr, Name, Stmt};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// What a libevent function does with the handlers it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Records a handler; its base is argument `base` (`None`: set later
    /// by `event_base_set`, or not known here).
    Registers {
        base: Option<usize>,
    },
    /// Runs the handlers of the base in argument `base` (`None`: the
    /// default base) until the loop ends.
    Loop {
        base: Option<usize>,
    },
    Other,
}

/// The role of the libevent function `name` (as the program calls it,
/// without a body of its own).
pub(super) fn role(name: &str) -> Role {
    match name {
        "event_assign" | "evtimer_assign" | "evsignal_assign" => Role::Registers { base: Some(1) },
        "event_new"
        | "evtimer_new"
        | "evsignal_new"
        | "event_base_once"
        | "evconnlistener_new"
        | "evconnlistener_new_bind" => Role::Registers { base: Some(0) },
        "event_set" | "evtimer_set" | "evsignal_set" | "event_once" | "bufferevent_setcb"
        | "evhttp_set_cb" | "evhttp_set_gencb" => Role::Registers { base: None },
        "event_base_loop" | "event_base_dispatch" => Role::Loop { base: Some(0) },
        "event_dispatch" | "event_loop" => Role::Loop { base: None },
        _ => Role::Other,
    }
}

/// One registration: its place, its handlers, what they are handed, and
/// the bases it may be on (empty: any).
#[derive(Debug, PartialEq)]
pub(super) struct Registration {
    func: FunctionId,
    call: u32,
    handlers: Vec<FunctionId>,
    arg: Vals,
    bases: Vals,
}

/// How many callers deep a parameter's values are read for the plan.
const CONTEXT_DEPTH: u32 = 5;

/// A function with more direct callers than this is read without them.
const MAX_CALLERS: usize = 32;

/// A registration as written.
struct Raw {
    func: FunctionId,
    call: u32,
    args: Vec<Expr>,
    handlers: Vec<FunctionId>,
    arg: Option<Expr>,
    bases: Vec<Expr>,
}

/// What [`Walker::context_frame`] reads, and the frames it built.
struct Contexts<'c> {
    calls_of: &'c FxHashMap<Name, Vec<(FunctionId, Vec<Expr>)>>,
    handed: &'c FxHashMap<FunctionId, Vec<(FunctionId, Expr)>>,
    memo: FxHashMap<(FunctionId, u32), Arc<Frame>>,
    busy: Vec<FunctionId>,
}

/// A function's stores into a member of some name, as (struct expression,
/// value), and the struct expressions whose such member's address it takes.
type MemberSites = (FunctionId, Vec<(Expr, Expr)>, Vec<Expr>);

/// What [`Walker::bases_by_type`] found, for one plan.
#[derive(Default)]
struct Members {
    /// By member name (one pass over the program each).
    sites: FxHashMap<Name, Arc<[MemberSites]>>,
    /// By (struct type, member).
    values: FxHashMap<(Name, Name), Option<Vals>>,
}

/// Every loop call and registration of the program.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Plan {
    /// The bases each loop call may run (empty: any).
    loops: Vec<Vals>,
    regs: Vec<Registration>,
}

/// Does `v` name no object (a base that may be any)?
fn no_object(v: &Vals) -> bool {
    !v.iter().any(|x| matches!(x, Val::Target(_)))
}

/// May base sets `a` and `b` name one base? An empty set (or one with no
/// object in it) is any base.
fn may_share(a: &Vals, b: &Vals) -> bool {
    let objs = |v: &Vals| -> Vec<crate::model::Base> {
        v.iter()
            .filter_map(|x| match x {
                Val::Target(k) => Some(k.base.clone()),
                _ => None,
            })
            .collect()
    };
    let (a, b) = (objs(a), objs(b));
    a.is_empty() || b.is_empty() || a.iter().any(|x| b.contains(x))
}

impl<'a> Walker<'a> {
    /// The program's libevent loops and registrations, read once per walk.
    pub(super) fn libevent_plan(&self) -> Arc<Plan> {
        self.libevent
            .get_or_init(|| {
                let plan = self.without_cur_ptrs(|| self.build_plan());
                if std::env::var_os("RACELENS_DEBUG_LIBEVENT").is_some() {
                    for l in &plan.loops {
                        eprintln!("libevent: loop on {l:?}");
                    }
                    for r in &plan.regs {
                        eprintln!(
                            "libevent: {} call {} registers {:?} on {:?} with {:?}",
                            r.func.name(self.db),
                            r.call,
                            r.handlers
                                .iter()
                                .map(|h| h.name(self.db))
                                .collect::<Vec<_>>(),
                            r.bases,
                            r.arg
                        );
                    }
                }
                Arc::new(plan)
            })
            .clone()
    }

    fn build_plan(&self) -> Plan {
        // Which functions hold a loop or a registration, and every direct
        // call's arguments by callee (for their parameters).
        let mut users: Vec<FunctionId> = Vec::new();
        let mut calls_of: FxHashMap<Name, Vec<(FunctionId, Vec<Expr>)>> = FxHashMap::default();
        let mut any_loop = false;
        for &f in self.prog.functions.values().flatten() {
            let mut uses = false;
            visit_calls(&self.summary(f).ir.body, &mut |c| {
                if let Callee::Direct(n) = &c.callee {
                    match role(n) {
                        Role::Loop { .. } => {
                            any_loop = true;
                            uses = true;
                        }
                        Role::Registers { .. } => uses = true,
                        Role::Other => {}
                    }
                    if self.prog.functions_named(n).is_some() {
                        calls_of
                            .entry(n.clone())
                            .or_default()
                            .push((f, c.args.clone()));
                    }
                }
            });
            if uses {
                users.push(f);
            }
        }
        let mut plan = Plan::default();
        if !any_loop {
            return plan;
        }
        // The registrations and loops as written, with their handlers.
        let mut raws: Vec<Raw> = Vec::new();
        let mut loops: Vec<(FunctionId, Option<Expr>)> = Vec::new();
        for &f in &users {
            let summary = self.summary(f);
            // `event_base_set(base, &ev)` gives an `event_set` event its base.
            let mut base_sets: Vec<(Expr, Expr)> = Vec::new();
            let mut found: Vec<Call> = Vec::new();
            visit_calls(&summary.ir.body, &mut |c| {
                if let Callee::Direct(n) = &c.callee {
                    if &**n == "event_base_set" {
                        if let [b, e, ..] = &c.args[..] {
                            base_sets.push((b.clone(), e.clone()));
                        }
                    } else if role(n) != Role::Other {
                        found.push(c.clone());
                    }
                }
            });
            for c in found {
                let Callee::Direct(n) = &c.callee else {
                    continue;
                };
                match role(n) {
                    Role::Loop { base } => {
                        loops.push((f, base.and_then(|i| c.args.get(i)).cloned()));
                    }
                    Role::Registers { base } => {
                        let bases: Vec<Expr> = match base {
                            Some(i) => c.args.get(i).cloned().into_iter().collect(),
                            None => match c.args.first() {
                                Some(ev) => base_sets
                                    .iter()
                                    .filter(|(_, e)| uncast(e) == uncast(ev))
                                    .map(|(b, _)| b.clone())
                                    .collect(),
                                None => Vec::new(),
                            },
                        };
                        raws.push(Raw {
                            func: f,
                            call: c.id,
                            args: c.args.clone(),
                            handlers: Vec::new(),
                            arg: None,
                            bases,
                        });
                    }
                    Role::Other => {}
                }
            }
        }
        // The handlers, read where each registration's function is called
        // (`setup_thread_notify(me, tn, cb)` handing on its caller's
        // function), and the argument after the last of them.
        {
            let none = FxHashMap::default();
            let mut cx = Contexts {
                calls_of: &calls_of,
                handed: &none,
                memo: FxHashMap::default(),
                busy: Vec::new(),
            };
            for r in &mut raws {
                let fr = self.context_frame(&mut cx, r.func, CONTEXT_DEPTH);
                let (direct, table) = self.handed_functions(&fr, &r.args);
                r.handlers = direct
                    .iter()
                    .chain(&table)
                    .filter_map(|v| match v {
                        Val::Func(f) => self.prog.functions_named(f).map(|d| d[0]),
                        _ => None,
                    })
                    .collect();
                let mut seen = rustc_hash::FxHashSet::default();
                r.handlers.retain(|h| seen.insert(*h));
                let last_fn = r.args.iter().rposition(|a| {
                    self.eval(&fr, a, 0)
                        .iter()
                        .any(|v| matches!(v, Val::Func(_)))
                });
                r.arg = last_fn.and_then(|i| r.args.get(i + 1)).cloned();
            }
            raws.retain(|r| !r.handlers.is_empty());
        }
        // A handler's last parameter holds what its registrations hand it.
        let mut handed: FxHashMap<FunctionId, Vec<(FunctionId, Expr)>> = FxHashMap::default();
        for r in &raws {
            if let Some(a) = &r.arg {
                for &h in &r.handlers {
                    handed.entry(h).or_default().push((r.func, a.clone()));
                }
            }
        }
        let mut cx = Contexts {
            calls_of: &calls_of,
            handed: &handed,
            memo: FxHashMap::default(),
            busy: Vec::new(),
        };
        for (f, base) in loops {
            let fr = self.context_frame(&mut cx, f, CONTEXT_DEPTH);
            let bases = base.map(|b| self.eval(&fr, &b, 0)).unwrap_or_default();
            plan.loops.push(bases);
        }
        let mut members = Members::default();
        for r in raws {
            let fr = self.context_frame(&mut cx, r.func, CONTEXT_DEPTH);
            let arg = r.arg.map(|a| self.eval(&fr, &a, 0)).unwrap_or_default();
            let mut bases = Vals::new();
            for b in &r.bases {
                let mut v = self.eval(&fr, b, 0);
                if no_object(&v) {
                    let typed = self.bases_by_type(&mut cx, &mut members, r.func, &fr, b, 1);
                    v = typed.unwrap_or(v);
                }
                add_vals(&mut bases, v);
            }
            plan.regs.push(Registration {
                func: r.func,
                call: r.call,
                handlers: r.handlers,
                arg,
                bases,
            });
        }
        // A registration whose base is not known re-registers a handler on
        // the base its event already had (`event_set(&c->event, ..,
        // event_handler, c); event_base_set(c->event.ev_base, &c->event)`):
        // the bases of the handler's registrations that are known.
        let known: Vec<(Vec<FunctionId>, Vals)> = plan
            .regs
            .iter()
            .filter(|r| !no_object(&r.bases))
            .map(|r| (r.handlers.clone(), r.bases.clone()))
            .collect();
        for r in plan.regs.iter_mut().filter(|r| no_object(&r.bases)) {
            for (hs, b) in &known {
                if hs.iter().any(|h| r.handlers.contains(h)) {
                    add_vals(&mut r.bases, b.iter().cloned());
                }
            }
        }
        plan
    }

    /// The bases a registration's base expression `e` (read in `f`'s frame
    /// `fr`) may be, by the declared type of the struct it is a member of,
    /// when its value is not known (`bec->event_thread->base` of a backend
    /// loaded from memory, `t->base` of `t = PROXY_GET_THR(L)`): every base
    /// the program stores into that member of that struct type. A parameter
    /// (`_set_main_event(be, be->event_thread->base, ..)`) is read so at its
    /// direct callers, `depth` levels up. `None` when any store's value is
    /// not known either, or the member's address is taken anywhere (it may
    /// be set out of sight): the registration then stays on any base.
    fn bases_by_type(
        &self,
        cx: &mut Contexts,
        members: &mut Members,
        f: FunctionId,
        fr: &Frame,
        e: &Expr,
        depth: u32,
    ) -> Option<Vals> {
        match uncast(e) {
            Expr::Field { base, field, .. } => {
                let strukt = self.struct_name(fr, base)?;
                let key = (strukt, field.clone());
                if let Some(known) = members.values.get(&key) {
                    return known.clone();
                }
                let sites = match members.sites.get(field) {
                    Some(s) => s.clone(),
                    None => {
                        let s: Arc<[MemberSites]> = self.member_sites(field).into();
                        members.sites.insert(field.clone(), s.clone());
                        s
                    }
                };
                let found = self.member_values(cx, &sites, &key.0);
                members.values.insert(key, found.clone());
                found
            }
            Expr::Var(p) if depth > 0 => {
                let i = self
                    .summary(f)
                    .ir
                    .params
                    .iter()
                    .position(|q| &q.name == p)?;
                let sites = cx.calls_of.get(f.name(self.db))?.clone();
                let mut out = Vals::new();
                for (g, args) in sites {
                    let a = args.get(i)?;
                    let gfr = self.context_frame(cx, g, CONTEXT_DEPTH);
                    let mut v = self.eval(&gfr, a, 0);
                    if no_object(&v) {
                        v = self.bases_by_type(cx, members, g, &gfr, a, depth - 1)?;
                    }
                    add_vals(&mut out, v);
                }
                (!no_object(&out)).then_some(out)
            }
            _ => None,
        }
    }

    /// The struct type `x` is or points to, typedefs resolved all along the
    /// member chain (`Walker::resolved_type`: `c->owner` of a `conn_t *c`).
    fn struct_name(&self, fr: &Frame, x: &Expr) -> Option<Name> {
        self.resolved_type(fr, x, 0)?.name
    }

    /// Every value the program stores into member `field` of a struct of
    /// type `strukt` (`t->base = event_base_new()`, `t->base = base` with
    /// `base` read at the callers), or `None` when one is not known or the
    /// member's address is taken (or a store's struct is of a type not
    /// known: it may be this one).
    fn member_values(
        &self,
        cx: &mut Contexts,
        sites: &[MemberSites],
        strukt: &Name,
    ) -> Option<Vals> {
        let mut out = Vals::new();
        for (g, stores, addr) in sites {
            // Read without callers first: a parameter's value (`t->base =
            // base`) needs them, a new base does not.
            // A struct expression of unknown type may be of this one.
            let plain = self.frame_cached(*g, &[]);
            let ours = |x: &Expr| match self.struct_name(&plain, x) {
                Some(n) => Some(&n == strukt),
                None => None,
            };
            for x in addr {
                if ours(x) != Some(false) {
                    return None;
                }
            }
            for (x, rhs) in stores {
                if !ours(x)? || matches!(uncast(rhs), Expr::Int(0)) {
                    continue;
                }
                let mut v = self.eval(&plain, rhs, 0);
                if no_object(&v) {
                    let gfr = self.context_frame(cx, *g, CONTEXT_DEPTH);
                    v = self.eval(&gfr, rhs, 0);
                }
                if no_object(&v) {
                    return None;
                }
                add_vals(&mut out, v);
            }
        }
        (!no_object(&out)).then_some(out)
    }

    /// The functions that store into a member named `field` or take its
    /// address, with those stores (struct expression, value) and the
    /// struct expressions whose member's address they take: one pass over
    /// the program per member name.
    fn member_sites(&self, field: &Name) -> Vec<MemberSites> {
        let mut out = Vec::new();
        for &g in self.prog.functions.values().flatten() {
            let summary = self.summary(g);
            let mut stores: Vec<(Expr, Expr)> = Vec::new();
            let mut addr: Vec<Expr> = Vec::new();
            crate::visit::visit_stmts(&summary.ir.body, &mut |st| match st {
                Stmt::Assign { lhs, rhs } => {
                    if let Expr::Field { base, field: m, .. } = lhs {
                        if m == field {
                            stores.push(((**base).clone(), rhs.clone()));
                        }
                    }
                    member_addresses(lhs, field, &mut addr);
                    member_addresses(rhs, field, &mut addr);
                }
                Stmt::Call(c) => c
                    .args
                    .iter()
                    .for_each(|a| member_addresses(a, field, &mut addr)),
                Stmt::Return { value: Some(v), .. } => member_addresses(v, field, &mut addr),
                _ => {}
            });
            if !stores.is_empty() || !addr.is_empty() {
                out.push((g, stores, addr));
            }
        }
        out
    }

    /// `f`'s frame without calling context, up to `depth` callers deep: a
    /// pointer parameter holds what `f`'s direct callers pass it (read in
    /// their frames, the same way), and a handler's last parameter what its
    /// registrations hand it.
    fn context_frame(&self, cx: &mut Contexts, f: FunctionId, depth: u32) -> Arc<Frame> {
        if let Some(fr) = cx.memo.get(&(f, depth)) {
            return fr.clone();
        }
        let n = self.summary(f).ir.params.len();
        let callers = cx.calls_of.get(f.name(self.db)).map_or(0, |v| v.len());
        if depth == 0 || n == 0 || cx.busy.contains(&f) || callers > MAX_CALLERS {
            return self.frame_cached(f, &[]);
        }
        cx.busy.push(f);
        let mut bindings = vec![Vals::new(); n];
        let sites: Vec<(FunctionId, Vec<Expr>)> = cx
            .calls_of
            .get(f.name(self.db))
            .cloned()
            .unwrap_or_default();
        for (g, args) in sites {
            let gfr = self.context_frame(cx, g, depth - 1);
            for (i, b) in bindings.iter_mut().enumerate() {
                if let Some(a) = args.get(i) {
                    add_vals(b, self.eval(&gfr, a, 0));
                }
            }
        }
        let handed: Vec<(FunctionId, Expr)> = cx.handed.get(&f).cloned().unwrap_or_default();
        for (g, a) in handed {
            let gfr = self.context_frame(cx, g, depth - 1);
            let v = self.eval(&gfr, &a, 0);
            if let Some(last) = bindings.last_mut() {
                add_vals(last, v);
            }
        }
        cx.busy.pop();
        let fr = match bindings.iter().all(|b| b.is_empty()) {
            true => self.frame_cached(f, &[]),
            false => self.frame_cached(f, &bindings),
        };
        cx.memo.insert((f, depth), fr.clone());
        fr
    }

    /// Call `c` of `fr` to the function `name` without a body: a libevent
    /// loop walks its handlers, and a registration some loop runs does
    /// nothing (its handlers run at the loops). `Err(st)`: any other call.
    pub(super) fn libevent_call(
        &mut self,
        fr: &Frame,
        c: &Call,
        name: &str,
        st: State,
    ) -> Result<Option<State>, State> {
        if self.prog.functions_named(name).is_some() {
            return Err(st);
        }
        match role(name) {
            Role::Loop { base } => Ok(self.libevent_loop(fr, c, base, st)),
            Role::Registers { .. } if self.libevent_deferred(fr, c) => Ok(Some(st)),
            _ => Err(st),
        }
    }

    /// Does some loop of the program run registration `c` of `fr`?
    fn libevent_deferred(&self, fr: &Frame, c: &Call) -> bool {
        let plan = self.libevent_plan();
        plan.regs
            .iter()
            .filter(|r| r.func == fr.fid && r.call == c.id)
            .any(|r| plan.loops.iter().any(|l| may_share(&r.bases, l)))
    }

    /// Loop call `c` (base in argument `base`) of `fr`: walks, on this
    /// thread, the handlers of every registration whose base may be the
    /// loop's, to a fixed point. `None` when no path returns.
    fn libevent_loop(
        &mut self,
        fr: &Frame,
        c: &Call,
        base: Option<usize>,
        st: State,
    ) -> Option<State> {
        let plan = self.libevent_plan();
        let here = base
            .and_then(|i| c.args.get(i))
            .map(|b| self.eval(fr, b, 0))
            .unwrap_or_default();
        let mut runs: Vec<(FunctionId, Vec<Vals>)> = Vec::new();
        for r in plan.regs.iter().filter(|r| may_share(&r.bases, &here)) {
            for &h in &r.handlers {
                let n = self.summary(h).ir.params.len();
                let mut bindings = vec![Vals::new(); n];
                if let Some(last) = bindings.last_mut() {
                    *last = r.arg.clone();
                }
                match runs.iter_mut().find(|(f, _)| *f == h) {
                    Some((_, old)) => {
                        for (o, b) in old.iter_mut().zip(bindings) {
                            add_vals(o, b);
                        }
                    }
                    None => runs.push((h, bindings)),
                }
            }
        }
        if std::env::var_os("RACELENS_DEBUG_LIBEVENT").is_some() {
            eprintln!(
                "libevent: thread {} loop in {} on {:?} runs {:?}",
                self.d.thread,
                fr.fname,
                here,
                runs.iter().map(|r| r.0.name(self.db)).collect::<Vec<_>>()
            );
        }
        if runs.is_empty() {
            return Some(st);
        }
        // The handlers run once per thread and loop call: a later visit of
        // the call (the next round of `while (..) event_base_loop(..)`)
        // leaves what they left the first time, joined with its own state.
        let key = (self.d.thread, fr.fid, c.id);
        if let Some(done) = self.handler_runs.borrow().get(&key) {
            return join(Some(st), Some(done.clone()));
        }
        // Each handler from the state at the call, once: none may run, or
        // any. (Passes to a fixed point, as a single-threaded FUSE loop's
        // operations get, multiplied memcached's calling contexts past the
        // budget.)
        let exits = self.callback_exits_bound(fr, c, st.clone(), &runs);
        let head = join(Some(st), exits).expect("state present");
        self.handler_runs.borrow_mut().insert(key, head.clone());
        Some(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_name_the_base_argument() {
        assert_eq!(role("event_assign"), Role::Registers { base: Some(1) });
        assert_eq!(role("event_new"), Role::Registers { base: Some(0) });
        assert_eq!(role("event_set"), Role::Registers { base: None });
        assert_eq!(role("event_base_loop"), Role::Loop { base: Some(0) });
        assert_eq!(role("event_dispatch"), Role::Loop { base: None });
        assert_eq!(role("event_add"), Role::Other);
    }
}

/// The struct expressions `x` of every `&x->field` (or `&x.field`) in `e`.
fn member_addresses(e: &Expr, field: &Name, out: &mut Vec<Expr>) {
    match e {
        Expr::AddrOf(p) => {
            if let Expr::Field { base, field: m, .. } = uncast(p) {
                if m == field {
                    out.push((**base).clone());
                }
            }
            member_addresses(p, field, out);
        }
        Expr::Field { base, .. }
        | Expr::Deref(base)
        | Expr::Offset(base)
        | Expr::Cast { value: base, .. }
        | Expr::Index { base, .. } => member_addresses(base, field, out),
        Expr::Choice(v) => v.iter().for_each(|x| member_addresses(x, field, out)),
        Expr::Init(v) => v.iter().for_each(|(_, x)| member_addresses(x, field, out)),
        _ => {}
    }
}
