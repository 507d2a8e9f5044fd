//! Unpublished heap sites: objects that never reach memory another thread
//! can read.
//!
//! An object of allocation site `S` can be touched by a thread only through
//! a pointer it holds. A pointer leaves the thread instance that allocated
//! the object in one of these ways, and the walk notes each as a
//! *publication* of `S` (`Node::published`):
//! - it is stored anywhere but a plain local of the frame (a global, a
//!   field, an array element, a local whose address is taken), which the
//!   pointer store also records for code the walk did not reach;
//! - it is handed to code without a body that may keep it (an event
//!   library's registration; `memcpy`-like functions known to keep nothing
//!   do not publish), or stored by an atomic operation;
//! - it is handed to a thread or callback as its argument while it is not
//!   fresh (another thread may already hold it).
//!
//! A pointer handed, *fresh*, as a new thread's argument is not a
//! publication: that object goes to exactly one thread instance (the
//! *receiver*). So for an unpublished site, each object is touched only by
//! the instance that allocated it and by at most one receiver instance.
//! Two allocating instances, or two receiving instances, never share an
//! object, and the race check does not pair them ([`PrivateHeap::apart`]).
//! The allocator-receiver pairs stay (the creator may keep using the
//! object), and so does any thread the site reaches some other way.
//!
//! Invariant: publications are facts of nodes' own statements, like
//! accesses, so an incremental update recomputes them from the reachable
//! nodes; `incremental.rs` bails when the result would change.
//!
//! Under-approximations (each may hide a race): a pointer copied into
//! memory by `memcpy` from a pointer variable's own bytes is followed only
//! for `memcpy(dst, &p, n)`; pointers cast to integers and back are not
//! followed.

use super::{Val, Walker};
use crate::facts::PrivateHeap;
use crate::model::Base;
use std::collections::BTreeMap;

impl<'a> Walker<'a> {
    /// Heap site `b` may now be reachable by another thread.
    pub(super) fn publish(&mut self, b: &Base) {
        if !matches!(b, Base::Heap { .. }) {
            return;
        }
        if std::env::var_os("RACELENS_DEBUG_PUBLISH").is_some() {
            let f = self
                .d
                .node_stack
                .last()
                .map(|&n| self.d.nodes[n as usize].fid.name(self.db).to_string());
            eprintln!("publish {b:?} in {f:?}");
        }
        match self.d.node_stack.last() {
            Some(&n) => {
                super::state::insert_sorted(&mut self.d.nodes[n as usize].published, b.clone())
            }
            None => super::state::insert_sorted(&mut self.d.root_published, b.clone()),
        }
    }

    /// The current node's own statements allocated from heap site `b`.
    pub(super) fn note_alloc(&mut self, b: &Base) {
        if let Some(&n) = self.d.node_stack.last() {
            super::state::insert_sorted(&mut self.d.nodes[n as usize].allocs, b.clone());
        }
    }

    /// The unpublished heap sites of the walk, over the nodes `reach` marks
    /// (all of them when `None`), with their allocating and receiving
    /// threads. Sorted by base.
    pub(super) fn private_heap(&self, reach: Option<&[bool]>) -> Vec<(Base, PrivateHeap)> {
        let mut published: Vec<&Base> = self.d.root_published.iter().collect();
        let mut allocators: BTreeMap<&Base, Vec<u32>> = BTreeMap::new();
        for (i, node) in self.d.nodes.iter().enumerate() {
            if reach.is_some_and(|r| !r.get(i).copied().unwrap_or(false)) {
                continue;
            }
            published.extend(node.published.iter());
            for b in &node.allocs {
                allocators.entry(b).or_default().push(node.thread);
            }
        }
        // Pointers in the store are in memory outside any frame.
        for vals in self.d.store.values() {
            for v in vals {
                if let Val::Target(k) = v {
                    if matches!(k.base, Base::Heap { .. }) {
                        published.push(&k.base);
                    }
                }
            }
        }
        // Callback groups run what unknown code hands them.
        for roots in self.d.group_roots.values() {
            for (_, vals) in roots {
                for v in vals {
                    if let Val::Target(k) = v {
                        published.push(&k.base);
                    }
                }
            }
        }
        let mut receivers: BTreeMap<&Base, Vec<u32>> = BTreeMap::new();
        for (t, vals) in self.d.thread_args.iter().enumerate() {
            let group = self.d.group_roots.contains_key(&(t as u32));
            for v in vals {
                if let Val::Target(k) = v {
                    if matches!(k.base, Base::Heap { .. }) {
                        match group {
                            true => published.push(&k.base),
                            false => receivers.entry(&k.base).or_default().push(t as u32),
                        }
                    }
                }
            }
        }
        published.sort();
        published.dedup();
        let mut out = Vec::new();
        for (b, mut alloc) in allocators {
            if published.binary_search(&b).is_ok() {
                continue;
            }
            alloc.sort_unstable();
            alloc.dedup();
            let mut recv = receivers.remove(b).unwrap_or_default();
            recv.sort_unstable();
            recv.dedup();
            if recv.iter().any(|t| alloc.binary_search(t).is_ok()) {
                continue;
            }
            out.push((
                b.clone(),
                PrivateHeap {
                    allocators: alloc,
                    receivers: recv,
                },
            ));
        }
        out
    }
}
