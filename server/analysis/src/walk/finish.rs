//! The analysis result: turns the facts the walk recorded into a
//! [`ThreadAnalysis`]. Each base's facts are capped to
//! [`MAX_FACTS`](super::MAX_FACTS) in an order that does not depend on the
//! order the walk found them, accesses through unresolved struct pointers
//! are copied into every base of that struct type, and each thread's
//! uniqueness is settled (its site ran once, outside loops and replays, in
//! a unique parent).
//!
//! Owns no state of its own: it consumes `WalkData::facts` and reads the
//! rest, which stays for an incremental update. The free functions here are
//! shared with `incremental.rs`, which must produce the same result for a
//! base as a full walk: both go through [`cap_facts`] and [`with_copies`].

use super::private::PrivateInputs;
use super::{Val, Vals, Walker, MAX_FACTS, MAX_PREFIXES};
use crate::db::FunctionId;
use crate::facts::*;
use crate::model::*;
use racelens_syntax::Name;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Do two thread-id locations name the same id? Unknown indices match any.
/// The accesses through unresolved pointers of each struct type T (base
/// `Type(T)`), in a fixed order so that caps keep the same facts whatever
/// order the walk found them in.
pub(super) fn typed_facts<'f>(
    rank: &FnRank,
    facts: impl Iterator<Item = (&'f Base, impl Iterator<Item = &'f AccessFact>)>,
) -> Vec<(Name, Vec<AccessFact>)> {
    let mut typed: Vec<(Name, Vec<AccessFact>)> = facts
        .filter_map(|(b, f)| {
            if let Base::Type(t) = b {
                Some((t.clone(), cap_facts(rank, f.cloned())))
            } else {
                None
            }
        })
        .collect();
    typed.sort_by(|a, b| a.0.cmp(&b.0));
    typed
}

/// The struct prefixes of a base that take copies: the first in path order.
pub(super) fn used_prefixes<'p>(
    p: impl Iterator<Item = &'p (Vec<Elem>, Name)>,
) -> Vec<&'p (Vec<Elem>, Name)> {
    let mut p: Vec<&(Vec<Elem>, Name)> = p.collect();
    p.sort();
    p.truncate(MAX_PREFIXES);
    p
}

/// The facts of one base, sorted: its own, plus copies of the accesses
/// through unresolved pointers of every struct type found at its prefixes
/// (such an access may touch every object of that type).
pub(super) fn base_facts(
    rank: &FnRank,
    base: &Base,
    own: impl Iterator<Item = AccessFact>,
    prefixes: &[&(Vec<Elem>, Name)],
    typed: &[(Name, &[AccessFact])],
) -> Vec<AccessFact> {
    let own = cap_facts(rank, own);
    if !takes_copies(base, own.len(), prefixes, typed) {
        return own;
    }
    with_copies(rank, base, own, prefixes, typed)
}

/// Does the struct found at `prefix` take copies of type `t`'s accesses?
/// (A type's own base takes none at its root.)
fn takes(base: &Base, t: &Name, (prefix, ty): &(Vec<Elem>, Name)) -> bool {
    ty == t && !(matches!(base, Base::Type(b) if b == t) && prefix.is_empty())
}

/// Does a base with `own` capped facts take copies of typed accesses? Most
/// take none, or are full: [`cap_facts`] already sorted them.
fn takes_copies(
    base: &Base,
    own: usize,
    prefixes: &[&(Vec<Elem>, Name)],
    typed: &[(Name, &[AccessFact])],
) -> bool {
    own < MAX_FACTS
        && typed
            .iter()
            .any(|(t, _)| prefixes.iter().any(|p| takes(base, t, p)))
}

/// A base's capped facts `own` with the copies of the typed accesses its
/// prefixes take, sorted (see [`base_facts`]).
fn with_copies(
    rank: &FnRank,
    base: &Base,
    own: Vec<AccessFact>,
    prefixes: &[&(Vec<Elem>, Name)],
    typed: &[(Name, &[AccessFact])],
) -> Vec<AccessFact> {
    let mut set: FxHashSet<AccessFact> = own.into_iter().collect();
    'copies: for (t, tfacts) in typed {
        for p in prefixes.iter().copied() {
            if !takes(base, t, p) {
                continue;
            }
            let prefix = &p.0;
            for f in tfacts.iter() {
                // Once the set is full nothing more goes in: stop copying.
                if set.len() >= MAX_FACTS {
                    break 'copies;
                }
                let mut path = Vec::with_capacity(prefix.len() + f.path.len());
                path.extend(prefix.iter().cloned());
                path.extend(f.path.iter().cloned());
                set.insert(AccessFact {
                    path: path.into(),
                    thread: f.thread,
                    func: f.func,
                    span: f.span,
                    kind: f.kind,
                    direct_local: f.direct_local,
                    weak: true,
                    volatile: f.volatile,
                    sig_atomic: f.sig_atomic,
                    atomic: f.atomic,
                    slot: None,
                    own: None,
                    joined: None,
                    build: f.build.clone(),
                    ctx: f.ctx.clone(),
                });
            }
        }
    }
    let mut v: Vec<AccessFact> = set.into_iter().collect();
    v.sort_by(|a, b| fact_order(rank, a, b));
    v
}

/// A base's own accesses, sorted, at most [`MAX_FACTS`] of them. Over the
/// cap, every access (function, span, path, kind and thread) keeps its first
/// contexts in turn, round by round, so that no racy access disappears
/// from the reports while another keeps thousands of contexts. The result
/// depends only on the set of facts, not on the order they were found in.
fn cap_facts(rank: &FnRank, facts: impl Iterator<Item = AccessFact>) -> Vec<AccessFact> {
    let mut v: Vec<AccessFact> = facts.collect();
    v.sort_by(|a, b| fact_order(rank, a, b));
    v.dedup();
    if v.len() <= MAX_FACTS {
        return v;
    }
    // Facts of one access are adjacent in `fact_order`: rank each among them.
    let same = |a: &AccessFact, b: &AccessFact| {
        (&a.path, a.thread, a.func, a.span, a.kind) == (&b.path, b.thread, b.func, b.span, b.kind)
    };
    let mut ranks = Vec::with_capacity(v.len());
    for i in 0..v.len() {
        let r = match i {
            0 => 0,
            _ if same(&v[i - 1], &v[i]) => ranks[i - 1] + 1,
            _ => 0,
        };
        ranks.push(r);
    }
    // The largest round `r` with every rank below it fitting, then as many
    // of round `r` as still fit, in order.
    let mut per_round: Vec<usize> = Vec::new();
    for &r in &ranks {
        if per_round.len() <= r {
            per_round.resize(r + 1, 0);
        }
        per_round[r] += 1;
    }
    let (mut round, mut taken) = (0, 0);
    while round < per_round.len() && taken + per_round[round] <= MAX_FACTS {
        taken += per_round[round];
        round += 1;
    }
    // Round `r` only partly fits: take its facts thread by thread in turn
    // (the first of each thread, then the second, ...), so that the cap
    // does not keep one thread's accesses and drop every other's.
    let room = MAX_FACTS - taken;
    let mut last: Vec<(usize, u32, usize)> = Vec::new();
    let mut per_thread: FxHashMap<u32, usize> = FxHashMap::default();
    for (i, (f, &r)) in v.iter().zip(&ranks).enumerate() {
        if r == round {
            let n = per_thread.entry(f.thread).or_insert(0);
            last.push((*n, f.thread, i));
            *n += 1;
        }
    }
    last.sort_unstable();
    let mut chosen = vec![false; v.len()];
    for &(_, _, i) in last.iter().take(room) {
        chosen[i] = true;
    }
    v.into_iter()
        .zip(ranks)
        .enumerate()
        .filter(|(i, (_, r))| *r < round || chosen[*i])
        .map(|(_, (f, _))| f)
        .collect()
}

/// Functions' places in a fixed order ([`crate::db::Program::fn_rank`]).
pub(super) type FnRank = FxHashMap<FunctionId, u32>;

/// A total order of facts, for reports and for deterministic caps. Functions
/// go by their rank, not their salsa Id (which depends on loading order).
/// Every field but the context's identity takes part: facts equal here are
/// equal, so no order of a hash set (which follows salsa Ids) survives.
fn fact_order(rank: &FnRank, a: &AccessFact, b: &AccessFact) -> std::cmp::Ordering {
    let key = |f: FunctionId| (rank.get(&f).copied().unwrap_or(u32::MAX), f.key());
    (
        &a.path,
        a.thread,
        key(a.func),
        a.span,
        a.kind,
        &a.must,
        &a.may,
        &a.active,
        &a.partly,
        &a.created,
    )
        .cmp(&(
            &b.path,
            b.thread,
            key(b.func),
            b.span,
            b.kind,
            &b.must,
            &b.may,
            &b.active,
            &b.partly,
            &b.created,
        ))
        .then_with(|| (&a.acquired, &a.clean).cmp(&(&b.acquired, &b.clean)))
        .then_with(|| a.phases.cmp(&b.phases))
        .then(a.weak.cmp(&b.weak))
        .then(a.direct_local.cmp(&b.direct_local))
        .then(a.main_ended.cmp(&b.main_ended))
        .then(a.forked.cmp(&b.forked))
        .then(a.volatile.cmp(&b.volatile))
        .then(a.atomic.cmp(&b.atomic))
        .then(a.slot.cmp(&b.slot))
        .then(a.own.cmp(&b.own))
        .then(a.joined.cmp(&b.joined))
}

impl<'a> Walker<'a> {
    /// The unpublished heap sites ([`private_heap`](Self::private_heap))
    /// and the locals whose address may reach another thread (see
    /// `ThreadTable::escaped_locals`), which depend on each other: a local
    /// whose address may reach another thread publishes what it holds, and
    /// a cell of a heap object is a way out for a local unless the site is
    /// unpublished and handed to no thread (the frame that stored the
    /// address belongs to the one instance that touches the object:
    /// `alac->input_buffer = packet` into the decoder a thread made for
    /// itself). Locals escape through the targets of the pointer store
    /// (which holds every pointer stored outside a frame), thread and
    /// callback arguments, and the function cells threads were handed; a
    /// cell of a local is a way out only once that local has escaped itself
    /// (`ritor = rbuffer` where `&ritor` is handed to a callee stays with
    /// the frame).
    ///
    /// The least solution: it starts with no heap cell a way out and adds
    /// the cells of each site found published, until nothing changes. A
    /// cycle of its own (a tree search that keeps `&fake` root in its
    /// nodes and the nodes in `fake`) then publishes nothing; before, every
    /// heap cell was a way out at first, and the cycle held itself up.
    /// Both only grow from round to round, so this ends; after
    /// `MAX_ESCAPE_ROUNDS` it takes every heap cell as a way out.
    pub(super) fn private_and_escaped(
        &self,
        reach: &[bool],
    ) -> (Vec<(Base, PrivateHeap)>, Vec<Base>, PrivateInputs<'_>) {
        let mut escaped = self.escaped_closure(|cell| match cell {
            Base::Local { .. } => Cell::Follow,
            Base::Heap { .. } => Cell::Skip,
            _ => Cell::Root,
        });
        let inputs = self.private_inputs(reach);
        for _ in 0..MAX_ESCAPE_ROUNDS {
            let private = self.private_heap(&inputs, &escaped);
            let next = self.escaped_locals(&private);
            if next == escaped {
                return (private, escaped, inputs);
            }
            escaped = next;
        }
        let escaped = self.escaped_closure(|cell| match cell {
            Base::Local { .. } => Cell::Follow,
            _ => Cell::Root,
        });
        let private = self.private_heap(&inputs, &escaped);
        let escaped = self.escaped_locals(&private);
        (private, escaped, inputs)
    }

    /// The locals that escape when the cells of every heap site but the
    /// unpublished ones handed to no thread (`private`) are ways out.
    fn escaped_locals(&self, private: &[(Base, PrivateHeap)]) -> Vec<Base> {
        let alone: FxHashSet<&Base> = private
            .iter()
            .filter(|(_, p)| p.receivers.is_empty())
            .map(|(b, _)| b)
            .collect();
        self.escaped_closure(|cell| match cell {
            Base::Local { .. } => Cell::Follow,
            Base::Heap { .. } if alone.contains(cell) => Cell::Skip,
            _ => Cell::Root,
        })
    }

    /// Of the escaped locals, those whose address leaves its frame's thread
    /// only through thread arguments: no global, callback group's argument
    /// or wild memory reaches them, through heap cells or other locals'
    /// cells (see `ThreadTable::arg_only_locals`).
    fn arg_only_locals(&self, escaped: &[Base]) -> Vec<Base> {
        let roots = self.group_args();
        let shared = store_closure(
            &self.d.store,
            roots,
            |b| matches!(b, Base::Local { .. } | Base::Heap { .. }),
            |cell| match cell {
                Base::Local { .. } | Base::Heap { .. } => Cell::Follow,
                _ => Cell::Root,
            },
        );
        escaped
            .iter()
            .filter(|b| shared.binary_search(b).is_err())
            .cloned()
            .collect()
    }

    /// The arguments callback groups' roots are handed: memory unknown code
    /// shares.
    fn group_args(&self) -> Vec<&Vals> {
        self.d
            .group_roots
            .values()
            .flat_map(|r| r.iter().map(|(_, v)| v))
            .collect()
    }

    /// `ThreadTable::shared_heap` and `handed_down`, from what decides the
    /// unpublished sites and the locals that escape (and of them, those
    /// only thread arguments lead to); and the sites published otherwise
    /// than down to new threads, which alone of these an incremental update
    /// may change.
    fn shared_and_handed(
        &self,
        inputs: &PrivateInputs<'_>,
        escaped: &[Base],
        arg_only: &[Base],
        threads: usize,
    ) -> (Vec<Base>, Vec<(u32, Vec<Base>)>, Vec<Base>) {
        let otherwise = self.published_otherwise(inputs, escaped, arg_only);
        let (shared, down) = self.handed_heap(escaped, arg_only, &otherwise, threads);
        (shared, down, otherwise)
    }

    /// The heap sites memory shared other than through thread arguments
    /// may reach (`ThreadTable::shared_heap`), and per thread, the others
    /// its own arguments reach (`ThreadTable::handed_down`). Shared memory:
    /// a global or static, an escaped local that reaches other threads
    /// otherwise than through thread arguments, an object behind an
    /// unresolved pointer, a callback group's argument; followed through
    /// heap objects and locals. The pointer store misses what went where
    /// the walk could not resolve, so the sites the walk published
    /// otherwise than down to new threads (`otherwise`) are shared too.
    fn handed_heap(
        &self,
        escaped: &[Base],
        arg_only: &[Base],
        otherwise: &[Base],
        threads: usize,
    ) -> (Vec<Base>, Vec<(u32, Vec<Base>)>) {
        let roots = self.group_args();
        let local_or_heap = |b: &Base| matches!(b, Base::Local { .. } | Base::Heap { .. });
        let mut shared = store_closure(&self.d.store, roots, local_or_heap, |cell| match cell {
            Base::Heap { .. } => Cell::Follow,
            Base::Local { .. }
                if escaped.binary_search(cell).is_err() || arg_only.binary_search(cell).is_ok() =>
            {
                Cell::Follow
            }
            _ => Cell::Root,
        });
        shared.retain(|b| matches!(b, Base::Heap { .. }));
        shared.extend(otherwise.iter().cloned());
        shared.sort();
        shared.dedup();
        let down = (0..threads as u32)
            .filter_map(|t| {
                let args = self
                    .d
                    .thread_args
                    .get(t as usize)
                    .filter(|a| !a.is_empty())?;
                let mut reach =
                    store_closure(
                        &self.d.store,
                        vec![args],
                        local_or_heap,
                        |cell| match cell {
                            Base::Heap { .. } | Base::Local { .. } => Cell::Follow,
                            _ => Cell::Skip,
                        },
                    );
                reach
                    .retain(|b| matches!(b, Base::Heap { .. }) && shared.binary_search(b).is_err());
                Some((t, reach))
            })
            .collect();
        (shared, down)
    }

    /// Of the functions `wanted`, those thread `t`'s walk reached (walked
    /// or replayed), among the nodes `reach` marks.
    fn functions_run_by(
        &self,
        t: u32,
        reach: &[bool],
        wanted: &FxHashSet<FunctionId>,
    ) -> FxHashSet<FunctionId> {
        let mut out = FxHashSet::default();
        if wanted.is_empty() {
            return out;
        }
        let mut seen = vec![false; self.d.nodes.len()];
        let mut todo: Vec<u32> = self
            .d
            .thread_roots
            .get(t as usize)
            .cloned()
            .unwrap_or_default();
        while let Some(n) = todo.pop() {
            let i = n as usize;
            if i >= seen.len()
                || std::mem::replace(&mut seen[i], true)
                || !reach.get(i).copied().unwrap_or(true)
            {
                continue;
            }
            let node = &self.d.nodes[i];
            if wanted.contains(&node.fid) {
                out.insert(node.fid);
                if out.len() == wanted.len() {
                    break;
                }
            }
            todo.extend(node.children.iter().copied());
        }
        out
    }

    /// Of the escaped locals, those of frames thread `t`'s instances may
    /// share, sorted: the ones its arguments reach (`handed`, from
    /// `WalkData::arg_reach`: `Thread::arg_locals`) and the ones of
    /// functions it never runs (`Thread::outer_locals`). A local of a
    /// function the thread runs itself may be its own frame's, stored where
    /// its argument leads: not its creator's.
    pub(super) fn frame_locals(
        &self,
        t: u32,
        reach: &[bool],
        escaped: &[Base],
        handed: &[Base],
    ) -> (Vec<Base>, Vec<Base>) {
        let func_of = |b: &Base| match b {
            Base::Local { func, .. } => Some(func.clone()),
            _ => None,
        };
        let wanted: FxHashSet<FunctionId> = handed
            .iter()
            .chain(escaped)
            .filter_map(func_of)
            .filter_map(|f| self.prog.functions_named(&f).cloned())
            .flatten()
            .collect();
        let runs: FxHashSet<Name> = self
            .functions_run_by(t, reach, &wanted)
            .into_iter()
            .map(|f| f.name(self.db).clone())
            .collect();
        let foreign = |b: &&Base| !matches!(b, Base::Local { func, .. } if runs.contains(func));
        let handed = handed.iter().filter(foreign).cloned().collect();
        let outer = escaped.iter().filter(foreign).cloned().collect();
        (handed, outer)
    }

    /// The locals values `args` reach through the pointer store (heap and
    /// local cells followed), sorted.
    fn arg_reach(&self, args: &Vals) -> Vec<Base> {
        let mut out = store_closure(
            &self.d.store,
            vec![args],
            |b| matches!(b, Base::Local { .. } | Base::Heap { .. }),
            |cell| match cell {
                Base::Local { .. } | Base::Heap { .. } => Cell::Follow,
                _ => Cell::Skip,
            },
        );
        out.retain(|b| matches!(b, Base::Local { .. }));
        out
    }

    fn escaped_closure(&self, cell: impl Fn(&Base) -> Cell) -> Vec<Base> {
        let mut roots: Vec<&Vals> = self.d.thread_args.iter().collect();
        for r in self.d.group_roots.values() {
            roots.extend(r.iter().map(|(_, v)| v));
        }
        store_closure(
            &self.d.store,
            roots,
            |b| matches!(b, Base::Local { .. }),
            cell,
        )
    }

    /// The heap sites a global may reach (see `ThreadTable::global_heap`),
    /// given the escaped locals.
    pub(super) fn global_heap(&self, escaped: &[Base]) -> Vec<Base> {
        store_closure(
            &self.d.store,
            Vec::new(),
            |b| matches!(b, Base::Heap { .. }),
            |cell| match cell {
                Base::Heap { .. } => Cell::Follow,
                Base::Local { .. } if escaped.binary_search(cell).is_err() => Cell::Skip,
                // An object behind an unresolved pointer: in a library, a
                // caller's (the race check's type-based rule).
                Base::Type(_) => Cell::Skip,
                _ => Cell::Root,
            },
        )
    }

    /// The threads whose entry merges launches (`Thread::merged_launches`):
    /// a fact of the reachable nodes' own statements, like accesses. Sorted.
    pub(super) fn merged_threads(&self, reach: &[bool]) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .d
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| n.merges && reach.get(*i).copied().unwrap_or(false))
            .map(|(_, n)| n.thread)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The callback groups all of whose functions were only handed to
    /// unknown code in tables of functions (see `Thread::speculative`).
    /// Sorted.
    pub(super) fn speculative_threads(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .d
            .group_roots
            .iter()
            .filter(|(_, roots)| {
                roots.iter().all(|(n, _)| {
                    self.d.callbacks_in_tables.contains(n) && !self.d.callbacks_sure.contains(n)
                })
            })
            .map(|(t, _)| *t)
            .collect();
        v.sort_unstable();
        v
    }

    /// The analysis result. Consumes the facts; the rest of the data stays
    /// for an incremental update.
    pub(super) fn finish(&mut self) -> ThreadAnalysis {
        let facts = std::mem::take(&mut self.d.facts);
        let mut threads = self.d.threads.clone();
        // A struct inside a local takes copies only where a pointer of its
        // type may reach it (see `held_addresses.rs`).
        self.d.held_addresses = self.held_addresses();
        let held = &self.d.held_addresses;
        let structs = &self.prog.structs;
        let prefixes: FxHashMap<&Base, Vec<&(Vec<Elem>, Name)>> = self
            .d
            .struct_prefixes
            .iter()
            .map(|(b, p)| {
                let open = p
                    .iter()
                    .filter(|x| super::held_addresses::reachable_by_type(held, structs, b, x));
                (b, used_prefixes(open))
            })
            .collect();
        let mut bases: FxHashSet<&Base> = facts.keys().collect();
        bases.extend(prefixes.keys().copied());
        let bases: Vec<&Base> = bases.into_iter().collect();
        // Each base's facts are a pure function of the walk's: on a large
        // program they are sorted and capped on every core, largest first.
        let workers = |n: usize| match n {
            0..=255 => 1,
            _ => racelens_syntax::par::workers(4),
        };
        let rank = &self.prog.fn_rank;
        let order = racelens_syntax::par::largest_first(
            bases
                .iter()
                .map(|b| facts.get(*b).map_or(0, |f| f.len()) as u64),
        );
        let mut own: Vec<Vec<AccessFact>> = vec![Vec::new(); bases.len()];
        for (i, v) in
            racelens_syntax::par::run(&order, vec![(); workers(bases.len())], |(), next| {
                let mut out = Vec::new();
                while let Some(i) = next() {
                    let v = cap_facts(
                        rank,
                        facts
                            .get(bases[i])
                            .into_iter()
                            .flatten()
                            .map(|r| r.fact.clone()),
                    );
                    out.push((i, v));
                }
                out
            })
        {
            own[i] = v;
        }
        // Accesses through unresolved pointers of struct type T may touch
        // every object of type T: copy them into those bases, from T's own
        // capped facts (a fixed order, so that the cap keeps the same facts
        // whatever order the walk found them in).
        let mut typed: Vec<(Name, &[AccessFact])> = bases
            .iter()
            .zip(&own)
            .filter_map(|(b, v)| match b {
                Base::Type(t) if facts.contains_key(*b) => Some((t.clone(), &v[..])),
                _ => None,
            })
            .collect();
        typed.sort_by(|a, b| a.0.cmp(&b.0));
        let prefixes_of = |i: usize| prefixes.get(bases[i]).map(|p| &p[..]).unwrap_or(&[]);
        let copying: Vec<usize> = (0..bases.len())
            .filter(|&i| takes_copies(bases[i], own[i].len(), prefixes_of(i), &typed))
            .collect();
        let copied =
            racelens_syntax::par::run(&copying, vec![(); workers(copying.len())], |(), next| {
                let mut out = Vec::new();
                while let Some(i) = next() {
                    out.push((
                        i,
                        with_copies(rank, bases[i], own[i].clone(), prefixes_of(i), &typed),
                    ));
                }
                out
            });
        drop(typed);
        for (i, v) in copied {
            own[i] = v;
        }
        let located: Vec<(Base, Vec<AccessFact>)> = bases
            .iter()
            .zip(own)
            .filter(|(_, v)| !v.is_empty())
            .map(|(b, v)| ((*b).clone(), v))
            .collect();
        drop(bases);
        drop(facts);
        // Uniqueness: a thread is unique when its site runs once, outside
        // loops and memo replays, in a unique parent.
        for i in 1..threads.len() {
            let th = &threads[i];
            let site = th.site.map(|s| &self.d.sites[s as usize]);
            let parent_unique = th
                .parent
                .map(|p| threads[p as usize].runs_once())
                .unwrap_or(true);
            let unique = th.unique
                && parent_unique
                && site
                    .map(|s| {
                        // Per entry when known: visits in a loop count as
                        // many (`spawn`), so one entry's loop does not make
                        // another entry of the same site many.
                        match s.entry_visits.iter().find(|(n, _)| *n == th.entry) {
                            Some(v) => v.1 <= 1,
                            None => !s.in_loop && s.visits <= 1,
                        }
                    })
                    .unwrap_or(true)
                && th
                    .site
                    .map(|s| !self.d.replayed_sites.contains(&s))
                    .unwrap_or(true);
            threads[i].unique = unique;
        }
        // Slot threads (see `slots`): every visit of the site agreed, from
        // one calling context, and the site is never replayed. When the
        // creator does not run once, its instances each number their own
        // threads: the numbers tell apart only the elements of one frame's
        // array (`Thread::slot_frame_only`).
        for i in 1..threads.len() {
            let th = &threads[i];
            let Some(site) = th.site else { continue };
            let parent_unique = th
                .parent
                .map(|p| threads[p as usize].runs_once())
                .unwrap_or(true);
            let agreed = self.d.slot_sites.get(&site).copied().flatten();
            let entry = match self.prog.functions_named(&th.entry) {
                Some(fs) if fs.len() == 1 => Some(fs[0]),
                _ => None,
            };
            threads[i].slot = match (agreed, entry) {
                (Some(s), Some(f))
                    if (s.serial || !self.d.replayed_sites.contains(&site))
                        && !self.d.group_roots.contains_key(&(i as u32)) =>
                {
                    Some((f, s.arg))
                }
                _ => None,
            };
            threads[i].slot_frame_only = threads[i].slot.is_some() && !parent_unique;
            threads[i].slot_params = match threads[i].slot {
                Some((f, arg)) => self.number_params(f, arg),
                None => Vec::new(),
            };
        }
        let mut locations = BTreeMap::new();
        for (k, v) in located {
            locations.insert(k, Arc::new(v));
        }
        let reach = super::incremental::reachable(&self.d);
        let (private_heap, escaped_locals, inputs) = self.private_and_escaped(&reach);
        for t in self.merged_threads(&reach) {
            if let Some(t) = threads.get_mut(t as usize) {
                t.merged_launches = true;
            }
        }
        let owning = self.owning_threads(&reach);
        for &t in &owning {
            if let Some(t) = threads.get_mut(t as usize) {
                t.owns_arg = true;
            }
        }
        for t in self.speculative_threads() {
            if let Some(t) = threads.get_mut(t as usize) {
                t.speculative = true;
            }
        }
        let per_site = self.per_site_threads(&reach);
        for &t in &per_site {
            if let Some(t) = threads.get_mut(t as usize) {
                t.arg_per_site = true;
            }
        }
        let global_heap = self.global_heap(&escaped_locals);
        let arg_only_locals = self.arg_only_locals(&escaped_locals);
        let (shared_heap, handed_down, otherwise) =
            self.shared_and_handed(&inputs, &escaped_locals, &arg_only_locals, threads.len());
        drop(inputs);
        self.d.published_otherwise = otherwise;
        if super::private::debug() {
            eprintln!("racelens: shared heap {shared_heap:?}; handed down {handed_down:?}");
        }
        // Lazily set globals set at a thread's creations, or its ancestors'.
        for t in 0..threads.len() {
            let mut set = self
                .d
                .thread_set_globals
                .get(&(t as u32))
                .cloned()
                .unwrap_or_default();
            if let Some(p) = threads[t].parent.filter(|&p| (p as usize) < t) {
                set.extend(threads[p as usize].set_globals.iter().cloned());
            }
            set.sort();
            set.dedup();
            threads[t].set_globals = set;
        }
        self.d.arg_reach = Vec::new();
        if !escaped_locals.is_empty() {
            self.d.arg_reach = (0..threads.len())
                .map(|t| match self.d.thread_args.get(t) {
                    Some(args) if !args.is_empty() => self.arg_reach(args),
                    _ => Vec::new(),
                })
                .collect();
            for (t, th) in threads.iter_mut().enumerate() {
                (th.arg_locals, th.outer_locals) =
                    self.frame_locals(t as u32, &reach, &escaped_locals, &self.d.arg_reach[t]);
            }
        }
        if super::private::debug() {
            eprintln!(
                "racelens: escaped locals {escaped_locals:?}; only through thread arguments {arg_only_locals:?}"
            );
        }
        let mut sites = self.joinable_sites(&per_site);
        // Spawns no visit saw in order: a memo replay, a callback group's
        // registration (see `Site::unseen_spawns`).
        for &s in &self.d.replayed_sites {
            if let Some(x) = sites.get_mut(s as usize) {
                x.unseen_spawns = true;
            }
        }
        for t in self.d.group_roots.keys() {
            if let Some(x) = threads
                .get(*t as usize)
                .and_then(|th| th.site)
                .and_then(|s| sites.get_mut(s as usize))
            {
                x.unseen_spawns = true;
            }
        }
        if super::private::debug() {
            for (i, s) in sites.iter().enumerate() {
                eprintln!(
                    "racelens: site {i} in {}: visits {}, active seen {:?}, unseen spawns {}, once {:?}",
                    s.func.name(self.db),
                    s.visits,
                    s.active_seen,
                    s.unseen_spawns,
                    s.once_held
                );
            }
        }
        let held = self.held_members(&reach, &threads, &escaped_locals);
        let injective = self.injective_arrays(&reach, &locations);
        if super::private::debug() {
            eprintln!("racelens: held members: {held:?}");
        }
        ThreadAnalysis {
            table: Arc::new(ThreadTable {
                threads,
                sites,
                escaped_locals,
                arg_only_locals,
                shared_heap,
                handed_down,
                private_heap,
                global_heap,
                held,
                injective,
            }),
            locations,
            incomplete: {
                let mut v: Vec<(FunctionId, String)> =
                    self.d.incomplete.clone().into_iter().collect();
                v.sort_by_key(|(f, _)| f.key());
                v
            },
        }
    }
}

/// How [`store_closure`] treats a cell of the pointer store, by its base.
enum Cell {
    /// What it holds is reached.
    Root,
    /// What it holds is reached once its own base is.
    Follow,
    /// Never followed.
    Skip,
}

/// The bases `wanted` selects among the targets of `roots` and of the
/// store's cells, a cell counting as `cell` says: sorted.
/// Rounds of [`Walker::private_and_escaped`] before it gives up on the
/// least solution.
const MAX_ESCAPE_ROUNDS: usize = 8;

fn store_closure(
    store: &FxHashMap<LocKey, Vals>,
    roots: Vec<&Vals>,
    wanted: impl Fn(&Base) -> bool,
    cell: impl Fn(&Base) -> Cell,
) -> Vec<Base> {
    let mut out: FxHashSet<Base> = FxHashSet::default();
    let add = |out: &mut FxHashSet<Base>, vals: &Vals| {
        let mut grew = false;
        for v in vals {
            if let Val::Target(k) = v {
                if wanted(&k.base) {
                    grew |= out.insert(k.base.clone());
                }
            }
        }
        grew
    };
    for v in roots {
        add(&mut out, v);
    }
    let mut follow: Vec<(&Base, &Vals)> = Vec::new();
    for (k, v) in store.iter() {
        match cell(&k.base) {
            Cell::Root => {
                add(&mut out, v);
            }
            Cell::Follow => follow.push((&k.base, v)),
            Cell::Skip => {}
        }
    }
    loop {
        let mut grew = false;
        for (b, v) in &follow {
            if out.contains(*b) {
                grew |= add(&mut out, v);
            }
        }
        if !grew {
            break;
        }
    }
    let mut out: Vec<Base> = out.into_iter().collect();
    out.sort();
    out
}
