//! A work queue over a few threads, shared by every parallel step.
//!
//! Loading a workspace parses its files, a cold analysis lowers files and
//! checks locations, and `racelens check` runs the interleaving check on
//! many reports: each is a list of independent jobs of very different
//! sizes. [`run`] hands the jobs out one at a time, in the order given
//! (largest first balances best), to one thread per worker state, one of
//! them the caller's. Each thread runs its own `worker` loop on its own
//! state (a database clone: the database is `Send` but not `Sync`), so it
//! can set up what it needs once (a checker) before taking jobs.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Stack of a helper thread: lowering and checks recurse, boundedly.
const STACK: usize = 64 << 20;

/// Runs `worker` once per state in `states` (at least one), each on a
/// thread of its own, the first on the caller's; states beyond the number
/// of jobs are dropped unused. A worker calls its `next` argument for the
/// next job index from `order` until it returns `None`, and returns
/// `(index, result)` pairs; all of them come back sorted by index. A panic
/// in a helper is resumed on the caller's thread with its own payload (a
/// `salsa::Cancelled` stays one).
pub fn run<S: Send, R: Send>(
    order: &[usize],
    mut states: Vec<S>,
    worker: impl Fn(S, &dyn Fn() -> Option<usize>) -> Vec<(usize, R)> + Sync,
) -> Vec<(usize, R)> {
    states.truncate(order.len().max(1));
    let mut states = states.into_iter();
    let Some(own) = states.next() else {
        return Vec::new();
    };
    let next = AtomicUsize::new(0);
    let take = || order.get(next.fetch_add(1, Ordering::Relaxed)).copied();
    let mut done = std::thread::scope(|s| {
        let helpers: Vec<_> = states
            .filter_map(|state| {
                let (worker, take) = (&worker, &take);
                std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(s, move || worker(state, take))
                    .ok()
            })
            .collect();
        let mut done = worker(own, &take);
        for h in helpers {
            match h.join() {
                Ok(d) => done.extend(d),
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        done
    });
    done.sort_by_key(|d| d.0);
    done
}

/// The indices of `sizes`, largest first (ties in index order).
pub fn largest_first(sizes: impl IntoIterator<Item = u64>) -> Vec<usize> {
    let mut order: Vec<(u64, usize)> = sizes.into_iter().zip(0..).collect();
    order.sort_by_key(|&(size, i)| (std::cmp::Reverse(size), i));
    order.into_iter().map(|x| x.1).collect()
}

/// Threads worth using on this machine, at most `cap`.
pub fn workers(cap: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, cap.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_runs_once_and_results_come_back_in_index_order() {
        let order = largest_first([3, 9, 1, 9, 5]);
        assert_eq!(order, vec![1, 3, 4, 0, 2]);
        for workers in [1, 2, 4, 9] {
            let out = run(&order, vec![(); workers], |(), next| {
                let mut v = Vec::new();
                while let Some(i) = next() {
                    v.push((i, i * 10));
                }
                v
            });
            assert_eq!(out, vec![(0, 0), (1, 10), (2, 20), (3, 30), (4, 40)]);
        }
    }

    #[test]
    fn a_helper_panic_reaches_the_caller_with_its_payload() {
        let order: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(|| {
            run(&order, vec![(); 2], |(), next| -> Vec<(usize, ())> {
                while let Some(i) = next() {
                    if i == 40 {
                        std::panic::panic_any(40usize);
                    }
                    std::thread::yield_now();
                }
                Vec::new()
            })
        });
        assert_eq!(caught.unwrap_err().downcast_ref::<usize>(), Some(&40));
    }
}
