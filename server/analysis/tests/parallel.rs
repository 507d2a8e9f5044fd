//! The parallel and file-restricted entry points give exactly the answers
//! of the sequential, whole-workspace ones.
//!
//! An editor asks for the races of its open files only ([`Analysis::races_in`]),
//! a cold start spreads lowering and location checks over threads
//! ([`Analysis::prefetch`]), and `racelens check` runs the bounded
//! interleaving check on several threads ([`Analysis::races_checked_on`]).
//! None of them may change a report.

use racelens_analysis::{AnalysisHost, CheckLimits};
use std::path::Path;

const QUEUE: &str = r#"
#include <pthread.h>
pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
int queue_len;
int dropped;
void push(void) {
  pthread_mutex_lock(&qlock);
  queue_len++;
  pthread_mutex_unlock(&qlock);
  dropped++;
}
int peek(void) { return queue_len; }
"#;

const MAIN: &str = r#"
#include <pthread.h>
void push(void);
int peek(void);
extern int dropped;
int served;
void *worker(void *arg) {
  push();
  served++;
  return 0;
}
int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], 0, worker, 0);
  served = peek() + dropped;
  return 0;
}
"#;

fn host() -> AnalysisHost {
    let mut host = AnalysisHost::default();
    host.set_file_text(Path::new("/virtual/queue.c"), QUEUE);
    host.set_file_text(Path::new("/virtual/main.c"), MAIN);
    host
}

#[test]
fn races_in_a_file_are_the_races_whose_access_is_there() {
    let all = host().snapshot().races();
    assert!(all
        .iter()
        .any(|r| r.site.file == Path::new("/virtual/queue.c")));
    assert!(all
        .iter()
        .any(|r| r.site.file == Path::new("/virtual/main.c")));
    for file in ["/virtual/queue.c", "/virtual/main.c"] {
        let expected: Vec<_> = all
            .iter()
            .filter(|r| r.site.file == Path::new(file))
            .cloned()
            .collect();
        // Asked first, before anything else is memoized, and conflicts in
        // the other file included.
        assert_eq!(host().snapshot().races_in([Path::new(file)]), expected);
    }
    assert_eq!(
        host()
            .snapshot()
            .races_in([Path::new("/virtual/nowhere.c")]),
        Vec::new()
    );
}

#[test]
fn prefetching_on_threads_changes_no_report() {
    let expected = host().snapshot().races();
    for workers in [1, 2, 3] {
        let analysis = host().snapshot();
        analysis.prefetch(None, workers);
        assert_eq!(analysis.races(), expected, "{workers} workers");
        let analysis = host().snapshot();
        analysis.prefetch(Some(&[Path::new("/virtual/main.c")]), workers);
        assert_eq!(analysis.races(), expected, "{workers} workers, one file");
    }
}

#[test]
fn the_interleaving_check_on_threads_gives_the_same_verdicts() {
    let one = host().snapshot().races_checked(CheckLimits::DEFAULT);
    assert!(!one.races.is_empty());
    for workers in [2, 3] {
        let many = host()
            .snapshot()
            .races_checked_on(CheckLimits::DEFAULT, workers);
        assert_eq!(many.races, one.races);
        assert_eq!(many.refuted, one.refuted);
        assert_eq!(many.schedules.len(), one.schedules.len());
        for (a, b) in many.schedules.iter().zip(&one.schedules) {
            assert_eq!(a.is_some(), b.is_some());
        }
    }
}
