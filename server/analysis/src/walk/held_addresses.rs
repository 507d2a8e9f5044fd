//! Where locals' addresses are held outside their frames, by path: which
//! struct inside a local a pointer of that struct's type may reach.
//!
//! An access through an unresolved `T *` is copied into every object with a
//! `T` at some path (`finish::base_facts`). For a local, a `T *` can only
//! point at its `T` member at path `p` if an address that leads there left
//! the frame: the address of the local or of an enclosing member (a prefix
//! of `p`), of `p` itself, or of `p`'s first member, which is the same
//! address (`(T *) &x.r.first`). An address deeper inside the struct, past
//! its first member (`&pkt.r.rdatastorage`, copied into a heap record), does
//! not give a `T *` to it, unless the program steps back from a member to
//! its enclosing `T` somewhere (`(T *) ((char *) p - offsetof(T, m))`,
//! container_of: `FnIr::recovered_types`). Addresses that left the frame
//! are the `Target`s the pointer store holds, and the arguments of threads
//! and callback groups: a superset of the paths by which
//! `ThreadTable::escaped_locals` escape (that closure follows only some
//! cells).
//!
//! Under-approximation: a step back from a member that is not spelled as a
//! cast of a subtraction (`(T *) ((char *) p - off)`), say one hidden in a
//! function without a body, is not seen: a `T *` it makes does not reach a
//! local's `T` whose only held address lies past its first member.
//!
//! Invariant: a fact of the store and of the thread and group arguments
//! only, so an incremental update that keeps those keeps it (and
//! `incremental.rs` bails when it changes).

use super::{Val, Vals, Walker};
use crate::model::{Base, Elem};
use racelens_syntax::{Name, TypeInfo};
use rustc_hash::FxHashMap;

/// Per local, the paths at which its address is held outside its frame,
/// sorted and without duplicates; and the struct types some function
/// steps back to from a member's address, sorted.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct HeldAddresses {
    paths: FxHashMap<Base, Vec<Vec<Elem>>>,
    recovered: Vec<Name>,
}

impl Walker<'_> {
    /// The addresses of locals the pointer store, the threads' arguments
    /// and the callback groups' arguments hold, by path, and the struct
    /// types the program's functions step back to.
    pub(super) fn held_addresses(&self) -> HeldAddresses {
        let mut out: FxHashMap<Base, Vec<Vec<Elem>>> = FxHashMap::default();
        let mut add = |vals: &Vals| {
            for v in vals {
                if let Val::Target(k) = v {
                    if matches!(k.base, Base::Local { .. }) {
                        out.entry(k.base.clone()).or_default().push(k.path.clone());
                    }
                }
            }
        };
        for v in self.d.store.values() {
            add(v);
        }
        for v in &self.d.thread_args {
            add(v);
        }
        for r in self.d.group_roots.values() {
            for (_, v) in r {
                add(v);
            }
        }
        for paths in out.values_mut() {
            paths.sort();
            paths.dedup();
        }
        let mut recovered: Vec<Name> = Vec::new();
        for &f in self.prog.functions.values().flatten() {
            for t in &self.summary(f).ir.recovered_types {
                let ty = TypeInfo {
                    name: Some(t.clone()),
                    ..Default::default()
                };
                if let Some(n) = self.prog.resolve_type(&ty).name {
                    recovered.push(n);
                }
            }
        }
        recovered.sort();
        recovered.dedup();
        HeldAddresses {
            paths: out,
            recovered,
        }
    }
}

/// May a pointer of struct type `ty` reach the struct at `prefix` inside
/// `base`? Always, but for a local: only when an address held outside its
/// frame leads there (see the module doc).
pub(super) fn reachable_by_type(
    held: &HeldAddresses,
    structs: &FxHashMap<Name, Vec<(Name, TypeInfo)>>,
    base: &Base,
    (prefix, ty): &(Vec<Elem>, Name),
) -> bool {
    if !matches!(base, Base::Local { .. }) {
        return true;
    }
    let Some(paths) = held.paths.get(base) else {
        return false;
    };
    let first = structs.get(ty).and_then(|f| f.first()).map(|(n, _)| n);
    let recovered = held.recovered.binary_search(ty).is_ok();
    paths.iter().any(|q| {
        let n = q.len().min(prefix.len());
        let same = q[..n].iter().zip(&prefix[..n]).all(|(a, b)| match (a, b) {
            (Elem::Index(_), Elem::Index(_)) => true,
            (Elem::Field(x), Elem::Field(y)) => x == y,
            _ => false,
        });
        same && match q.get(prefix.len()) {
            None => true,
            Some(Elem::Field(f)) => recovered || Some(f) == first,
            Some(Elem::Index(_)) => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(n: &str) -> Elem {
        Elem::Field(n.into())
    }

    #[test]
    fn a_member_address_past_the_first_member_does_not_reach_the_struct() {
        let pkt = Base::Local {
            func: "receive".into(),
            var: "pkt".into(),
        };
        let mut structs = FxHashMap::default();
        let int = TypeInfo::default();
        structs.insert(
            Name::from("Rec"),
            vec![(Name::from("next"), int.clone()), (Name::from("data"), int)],
        );
        let rec = (vec![f("r")], Name::from("Rec"));
        let held = |paths: Vec<Vec<Elem>>| {
            let mut h = HeldAddresses::default();
            h.paths.insert(pkt.clone(), paths);
            h
        };
        // `&pkt.r.data` held: a `Rec *` does not reach `pkt.r`.
        assert!(!reachable_by_type(
            &held(vec![vec![f("r"), f("data")]]),
            &structs,
            &pkt,
            &rec
        ));
        // `&pkt`, `&pkt.r` or `&pkt.r.next` (the same address) held: it does.
        for q in [vec![], vec![f("r")], vec![f("r"), f("next")]] {
            assert!(reachable_by_type(&held(vec![q]), &structs, &pkt, &rec));
        }
        // Unless some function steps back from a member to a `Rec`.
        let mut back = held(vec![vec![f("r"), f("data")]]);
        back.recovered = vec![Name::from("Rec")];
        assert!(reachable_by_type(&back, &structs, &pkt, &rec));
        // Nothing held: the local never left its frame.
        assert!(!reachable_by_type(
            &HeldAddresses::default(),
            &structs,
            &pkt,
            &rec
        ));
        // Other bases take every copy, as before.
        let g = Base::Global("g".into());
        assert!(reachable_by_type(
            &HeldAddresses::default(),
            &structs,
            &g,
            &rec
        ));
    }
}
