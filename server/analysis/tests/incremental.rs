//! Incrementality: which salsa queries re-execute after an edit.
//!
//! Editing one function body must re-run only that function's summary, plus
//! the race checks of the memory locations whose accesses actually changed.

use racelens_analysis::AnalysisHost;
use std::path::Path;

const BEFORE: &str = r#"
#include <pthread.h>
int hits;
int misses;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void *worker(void *arg) {
    pthread_mutex_lock(&m);
    hits++;
    pthread_mutex_unlock(&m);
    return 0;
}

void *other(void *arg) {
    misses++;
    return 0;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, other, 0);
    misses++;
    pthread_mutex_lock(&m);
    hits++;
    pthread_mutex_unlock(&m);
    return 0;
}
"#;

fn count(log: &[String], query: &str) -> usize {
    log.iter()
        .filter(|l| l.starts_with(&format!("{query}(")))
        .count()
}

#[test]
fn editing_one_body_reexecutes_only_its_summary() {
    let path = Path::new("/virtual/inc.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, BEFORE);
    let before = host.snapshot().races();
    assert!(before.iter().any(|r| r.var == "misses"), "{before:#?}");
    assert!(!before.iter().any(|r| r.var == "hits"), "{before:#?}");

    host.db().enable_logging();
    // A body edit in `other` after its access: the text (and every later
    // function's offset) changes, the accesses do not.
    let edited = BEFORE.replace(
        "    misses++;\n    return 0;",
        "    misses++;\n    /* done */ return 0;",
    );
    assert_ne!(edited, BEFORE);
    host.set_file_text(path, edited.as_str());
    let after = host.snapshot().races();
    let log = host.db().take_log();

    assert_eq!(
        count(&log, "function_summary"),
        1,
        "only `other` is re-lowered: {log:#?}"
    );
    // The accesses of no location changed (spans are function-relative), so
    // no race check re-runs.
    assert_eq!(count(&log, "races_at"), 0, "{log:#?}");
    // Nor is any location's report fragment rebuilt: only their merge into
    // absolute positions runs again.
    assert_eq!(count(&log, "location_reports"), 0, "{log:#?}");
    assert_eq!(before.len(), after.len());
}

#[test]
fn a_changed_access_rechecks_only_its_location() {
    let path = Path::new("/virtual/inc2.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, BEFORE);
    let _ = host.snapshot().races();
    host.db().enable_logging();
    // `worker` now also touches `misses` unguarded: the `misses` location's
    // accesses change, `hits` keeps its accesses.
    let edited = BEFORE.replace("    hits++;\n    pthread_mutex_unlock(&m);\n    return 0;\n}\n\nvoid *other", "    hits++;\n    pthread_mutex_unlock(&m);\n    misses = 0;\n    return 0;\n}\n\nvoid *other");
    host.set_file_text(path, edited.as_str());
    let after = host.snapshot().races();
    let log = host.db().take_log();
    assert_eq!(count(&log, "function_summary"), 1, "{log:#?}");
    assert_eq!(
        count(&log, "races_at"),
        1,
        "only the `misses` check re-runs: {log:#?}"
    );
    assert_eq!(
        count(&log, "location_reports"),
        1,
        "only the `misses` report fragments are rebuilt: {log:#?}"
    );
    assert!(
        after
            .iter()
            .any(|r| r.var == "misses" && r.threads.iter().any(|t| t == "worker")),
        "{after:#?}"
    );
}
