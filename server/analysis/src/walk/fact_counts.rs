//! The facts and struct prefixes of an incremental walk's reachable
//! nodes, counted: which bases an update must compute again.
//!
//! Owns [`Counts`], kept in `WalkData::counts` between updates
//! (`incremental.rs`).
//!
//! Invariants: `facts` and `prefixes` hold, for each base, every fact and
//! prefix some reachable node records, with the number of such nodes
//! (never zero); `moved_*` hold those whose count went from or to zero
//! since the last [`Counts::locations`], net: a fact that went and came
//! back is not there. The first count (`Counts::of`) records no move.

use super::finish::{base_facts, typed_facts, used_prefixes};
use super::memo::Node;
use super::HARD_MAX_FACTS;
use crate::facts::AccessFact;
use crate::model::{Base, Elem};
use racelens_syntax::Name;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A fact as [`Counts`] keeps it: hashed with its context's hash too. An
/// [`AccessFact`]'s own hash leaves the context out, and the accesses of one
/// expression in many calling contexts (memcached's `realtime` has 61) all
/// collided: counting a large program's facts took 0.6 s.
#[derive(Clone, PartialEq, Eq)]
struct Counted {
    fact: AccessFact,
    ctx_hash: u64,
}

impl std::hash::Hash for Counted {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.fact.hash(h);
        self.ctx_hash.hash(h);
    }
}

/// The hashes of the fact contexts met by one pass over nodes, by address:
/// a few thousand contexts are shared by a million facts. Kept for one
/// pass only, while the nodes hold every context it names (an address is
/// reused once its context is dropped).
#[derive(Default)]
struct CtxHashes(FxHashMap<usize, u64>);

impl CtxHashes {
    fn counted(&mut self, f: &AccessFact) -> Counted {
        let ctx_hash = *self
            .0
            .entry(Arc::as_ptr(&f.ctx) as usize)
            .or_insert_with(|| {
                std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, &*f.ctx)
            });
        Counted {
            fact: f.clone(),
            ctx_hash,
        }
    }
}

/// The facts and struct prefixes of the reachable nodes, each with the
/// number of nodes recording it, and those that came (`true`) or went
/// (`false`) since the last result. A fact that went and came back (a
/// re-walked node recording what it recorded before, the common case) is
/// no change: only the bases of the others are computed again.
#[derive(Default)]
pub(super) struct Counts {
    facts: FxHashMap<Base, FxHashMap<Counted, u32>>,
    prefixes: FxHashMap<Base, FxHashMap<(Vec<Elem>, Name), u32>>,
    moved_facts: FxHashMap<(Base, Counted), bool>,
    moved_prefixes: FxHashMap<(Base, (Vec<Elem>, Name)), bool>,
    /// Counting the first result, every fact comes: not recorded.
    settled: bool,
}

/// Notes that `k` came (or went), or that it is back as it was.
fn moved<K: std::hash::Hash + Eq>(m: &mut FxHashMap<K, bool>, k: K, came: bool) {
    match m.get(&k) {
        Some(&was) if was != came => {
            m.remove(&k);
        }
        _ => {
            m.insert(k, came);
        }
    }
}

impl Counts {
    pub(super) fn of(nodes: &[Node], reach: &[bool]) -> Counts {
        let mut c = Counts::default();
        let mut hashes = CtxHashes::default();
        for (i, node) in nodes.iter().enumerate() {
            if reach[i] {
                c.add_with(&node.facts, &node.prefixes, &mut hashes);
            }
        }
        c.settled = true;
        c
    }

    pub(super) fn add(
        &mut self,
        facts: &[(Base, AccessFact)],
        prefixes: &[(Base, Vec<(Vec<Elem>, Name)>)],
    ) {
        self.add_with(facts, prefixes, &mut CtxHashes::default());
    }

    fn add_with(
        &mut self,
        facts: &[(Base, AccessFact)],
        prefixes: &[(Base, Vec<(Vec<Elem>, Name)>)],
        hashes: &mut CtxHashes,
    ) {
        for (b, f) in facts {
            let key = hashes.counted(f);
            let set = match self.facts.get_mut(b) {
                Some(set) => set,
                None => self.facts.entry(b.clone()).or_default(),
            };
            // A fact new to the set comes; only then is its key copied
            // (counting a whole walk's million facts copies none).
            match set.get_mut(&key) {
                Some(n) => *n += 1,
                None => {
                    if self.settled {
                        moved(&mut self.moved_facts, (b.clone(), key.clone()), true);
                    }
                    set.insert(key, 1);
                }
            }
        }
        for (b, found) in prefixes {
            let set = self.prefixes.entry(b.clone()).or_default();
            for p in found {
                let n = set.entry(p.clone()).or_insert(0);
                *n += 1;
                if *n == 1 && self.settled {
                    moved(&mut self.moved_prefixes, (b.clone(), p.clone()), true);
                }
            }
        }
    }

    pub(super) fn remove(
        &mut self,
        facts: &[(Base, AccessFact)],
        prefixes: &[(Base, Vec<(Vec<Elem>, Name)>)],
    ) {
        let mut hashes = CtxHashes::default();
        for (b, f) in facts {
            if let Some(set) = self.facts.get_mut(b) {
                let key = hashes.counted(f);
                if let Some(n) = set.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        set.remove(&key);
                        moved(&mut self.moved_facts, (b.clone(), key), false);
                    }
                }
            }
        }
        for (b, found) in prefixes {
            if let Some(set) = self.prefixes.get_mut(b) {
                for p in found {
                    if let Some(n) = set.get_mut(p) {
                        *n -= 1;
                        if *n == 0 {
                            set.remove(p);
                            moved(&mut self.moved_prefixes, (b.clone(), p.clone()), false);
                        }
                    }
                }
            }
        }
    }

    /// No base that changed holds more facts or prefixes than a walk keeps.
    pub(super) fn within_bounds(&self) -> Result<(), &'static str> {
        for (b, _) in self.moved_facts.keys() {
            if self.facts.get(b).map(|s| s.len()).unwrap_or(0) >= HARD_MAX_FACTS {
                return Err("too many facts on one object");
            }
        }
        for (b, _) in self.moved_prefixes.keys() {
            if self.prefixes.get(b).map(|s| s.len()).unwrap_or(0) > HARD_MAX_FACTS {
                return Err("too many struct prefixes on one object");
            }
        }
        Ok(())
    }

    /// The previous locations with every touched base computed again (and
    /// every base that takes copies of a touched struct type's accesses).
    /// `open`: may a pointer of its struct type reach the struct at this
    /// prefix of this base (`held_addresses::reachable_by_type`)?
    pub(super) fn locations(
        &mut self,
        mut locations: BTreeMap<Base, Arc<Vec<AccessFact>>>,
        rank: &super::finish::FnRank,
        open: &dyn Fn(&Base, &(Vec<Elem>, Name)) -> bool,
    ) -> BTreeMap<Base, Arc<Vec<AccessFact>>> {
        let mut affected: FxHashSet<Base> = self.moved_facts.drain().map(|((b, _), _)| b).collect();
        affected.extend(self.moved_prefixes.drain().map(|((b, _), _)| b));
        let touched_types: FxHashSet<Name> = affected
            .iter()
            .filter_map(|b| match b {
                Base::Type(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        let used: FxHashMap<&Base, Vec<&(Vec<Elem>, Name)>> = self
            .prefixes
            .iter()
            .map(|(b, p)| (b, used_prefixes(p.keys().filter(|x| open(b, x)))))
            .collect();
        if !touched_types.is_empty() {
            for (b, p) in &used {
                if p.iter().any(|(_, t)| touched_types.contains(t)) {
                    affected.insert((*b).clone());
                }
            }
        }
        let needed: FxHashSet<&Name> = affected
            .iter()
            .filter_map(|b| used.get(b))
            .flatten()
            .map(|(_, t)| t)
            .collect();
        let typed = typed_facts(
            rank,
            self.facts.iter().filter_map(|(b, f)| match b {
                Base::Type(t) if needed.contains(t) => Some((b, f.keys().map(|k| &k.fact))),
                _ => None,
            }),
        );
        let typed: Vec<(Name, &[AccessFact])> =
            typed.iter().map(|(t, f)| (t.clone(), &f[..])).collect();
        for b in affected {
            let own = self
                .facts
                .get(&b)
                .into_iter()
                .flat_map(|f| f.keys().map(|k| k.fact.clone()));
            let p = used.get(&b).map(|p| &p[..]).unwrap_or(&[]);
            let v = base_facts(rank, &b, own, p, &typed);
            if v.is_empty() {
                locations.remove(&b);
            } else {
                locations.insert(b, Arc::new(v));
            }
        }
        locations
    }
}
