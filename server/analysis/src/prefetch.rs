//! Spreads the parallel parts of a cold analysis over several threads.
//!
//! The walk is sequential, but the phases around it are not: lowering the
//! files (each file's functions depend on that file and the macro table
//! alone) and summarizing each function before it, checking the memory
//! locations (each check reads one location's accesses) after it.
//! [`prefetch`] runs them on `workers` threads, each
//! with its own database clone, so the sequential queries that follow find
//! their results memoized and compute exactly what they would have alone.
//! It pays off on a cold start (a workspace load, `racelens check`); after
//! an edit almost everything is memoized already and callers skip it.
//!
//! A worker that meets `salsa::Cancelled` (the host changed an input) stops
//! quietly: the caller's own next query unwinds the same way.

use crate::db::{
    file_items, file_lowered, program, walk_summary, FunctionId, RootDb, SourceFile, Workspace,
};
use crate::races::{locations_in, thread_analysis};
use crate::report::location_reports;
use racelens_syntax as syntax;
use rustc_hash::FxHashSet;

/// Lowers every file and summarizes every function, walks, then checks the locations that `files` access
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
    let order = syntax::par::largest_first(all.iter().map(|f| f.parsed(db).text.len() as u64));
    // Every file's items first: lowering any file needs the workspace's
    // macro table, which reads the items of all of them, so a worker
    // lowering a file before they exist computes them all alone while the
    // others wait for it.
    in_parallel(db, workers, &order, |db, i| {
        file_items(db, ws.universe(db), all[i]);
    });
    let ta = std::time::Instant::now();
    in_parallel(db, workers, &order, |db, i| {
        file_lowered(db, ws, all[i]);
    });
    let tb = std::time::Instant::now();
    // Then each function's summary (its IR and call models), which the walk
    // reads for every function before it starts.
    let functions: Vec<FunctionId> = program(db, ws)
        .functions
        .values()
        .flatten()
        .copied()
        .collect();
    let tc = std::time::Instant::now();
    let order: Vec<usize> = (0..functions.len()).collect();
    in_parallel(db, workers, &order, |db, i| {
        walk_summary(db, functions[i]);
    });
    let t1 = std::time::Instant::now();
    if timing {
        eprintln!(
            "racelens: prefetch: items {:.1?}, lowering {:.1?}, program {:.1?}, summaries {:.1?}",
            ta - t0,
            tb - ta,
            tc - tb,
            t1 - tc
        );
    }
    // The walk runs here, on the caller's thread (it needs a deep stack).
    thread_analysis(db, ws);
    let t2 = std::time::Instant::now();
    let wanted = locations_in(db, ws, files);
    let order: Vec<usize> = (0..wanted.len()).collect();
    in_parallel(db, workers, &order, |db, i| {
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

/// Runs `job(db, i)` for every index `i` of `order`, in that order, on
/// `workers` threads, each with its own database clone.
fn in_parallel(db: &RootDb, workers: usize, order: &[usize], job: impl Fn(&RootDb, usize) + Sync) {
    let clones = (0..workers).map(|_| db.clone()).collect();
    syntax::par::run(order, clones, |db, next| -> Vec<(usize, ())> {
        let _ = salsa::Cancelled::catch(std::panic::AssertUnwindSafe(|| {
            while let Some(i) = next() {
                job(&db, i);
            }
        }));
        Vec::new()
    });
}
