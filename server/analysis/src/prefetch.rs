//! Spreads the parallel parts of a cold analysis over several threads.
//!
//! The walk is sequential, but two phases around it are not: lowering the
//! files (each file's functions depend on that file and the macro table
//! alone) and checking the memory locations (each check reads one
//! location's accesses). [`prefetch`] runs both on `workers` threads, each
//! with its own database clone, so the sequential queries that follow find
//! their results memoized and compute exactly what they would have alone.
//! It pays off on a cold start (a workspace load, `racelens check`); after
//! an edit almost everything is memoized already and callers skip it.
//!
//! A worker that meets `salsa::Cancelled` (the host changed an input) stops
//! quietly: the caller's own next query unwinds the same way.

use crate::db::{file_items, file_lowered, RootDb, SourceFile, Workspace};
use crate::races::{location_accesses, locations, thread_analysis};
use crate::report::location_reports;
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Lowers every file, walks, then checks the locations that `files` access
/// (every location when `files` is `None`), on `workers` threads where the
/// work allows. Does nothing with fewer than two workers.
pub fn prefetch(
    db: &RootDb,
    ws: Workspace,
    all: &[SourceFile],
    files: Option<&FxHashSet<SourceFile>>,
    workers: usize,
) {
    if workers < 2 {
        return;
    }
    let timing = std::env::var_os("RACELENS_TIMING").is_some();
    let t0 = std::time::Instant::now();
    // Lowering: file by file, the largest first for an even spread.
    let mut by_size: Vec<SourceFile> = all.to_vec();
    by_size.sort_by_key(|f| std::cmp::Reverse(f.parsed(db).text.len()));
    in_parallel(db, workers, by_size.len(), |db, i| {
        let f = by_size[i];
        file_items(db, f);
        file_lowered(db, ws, f);
    });
    let t1 = std::time::Instant::now();
    // The walk runs here, on the caller's thread (it needs a deep stack).
    thread_analysis(db, ws);
    let t2 = std::time::Instant::now();
    let wanted: Vec<_> = locations(db, ws)
        .iter()
        .copied()
        .filter(|&loc| {
            files.is_none_or(|fs| {
                location_accesses(db, loc)
                    .iter()
                    .any(|a| fs.contains(&a.func.file(db)))
            })
        })
        .collect();
    in_parallel(db, workers, wanted.len(), |db, i| {
        location_reports(db, wanted[i]);
    });
    if timing {
        eprintln!(
            "racelens: prefetch on {workers} threads: lowering {:.1?}, walk {:.1?}, {} location checks {:.1?}",
            t1 - t0,
            t2 - t1,
            wanted.len(),
            t2.elapsed()
        );
    }
}

/// Stack of a worker thread.
const WORKER_STACK: usize = 64 << 20;

/// Runs `job(db, i)` for every `i < n` on `workers` threads, each taking the
/// next index in turn.
fn in_parallel(db: &RootDb, workers: usize, n: usize, job: impl Fn(&RootDb, usize) + Sync) {
    let next = AtomicUsize::new(0);
    let work = |db: &RootDb| {
        let _ = salsa::Cancelled::catch(std::panic::AssertUnwindSafe(|| loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            job(db, i);
        }));
    };
    std::thread::scope(|s| {
        for _ in 1..workers.min(n) {
            let clone = db.clone();
            let work = &work;
            // Lowering and checks recurse (boundedly); give them room.
            let spawned = std::thread::Builder::new()
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || work(&clone));
            if spawned.is_err() {
                // No thread: this one does the work alone.
                break;
            }
        }
        work(db);
    });
}
