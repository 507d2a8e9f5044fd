//! A calling context that differs from an already walked one only in its
//! locksets and thread facts is copied instead of walked, when the callee
//! only records those with its accesses (a hash function, a counter
//! update). The copy must give exactly what walking gives: each access again
//! with the locks held at the new call. This program calls the same helper
//! under lock `a`, under lock `b` and under no lock, in one thread; the
//! races must be the same with copies on and off, and copies must happen.
//! A context walked in one thread serves the other threads too: a copy
//! records its accesses as the copying thread's.
//! (Its own test binary: copies are switched for the whole process, so the
//! tests take turns.)

use racelens_analysis::walk;
use racelens_analysis::AnalysisHost;
use std::path::Path;
use std::sync::Mutex;

/// The copy switch is process-wide: one test at a time.
static SWITCH: Mutex<()> = Mutex::new(());

const PROGRAM: &str = "#include <pthread.h>\n\
    int seed;\n\
    int total;\n\
    pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;\n\
    pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;\n\
    static int mix(int x) {\n\
      int r = x;\n\
      for (int i = 0; i < 3; i++) r = r * 31 + i;\n\
      return r + seed;\n\
    }\n\
    static void bump(void) { total = mix(total); }\n\
    void *worker(void *arg) {\n\
      pthread_mutex_lock(&a); bump(); pthread_mutex_unlock(&a);\n\
      pthread_mutex_lock(&b); bump(); pthread_mutex_unlock(&b);\n\
      bump();\n\
      return 0;\n\
    }\n\
    int main(void) {\n\
      pthread_t t[2];\n\
      for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, 0);\n\
      seed = 7;\n\
      for (int i = 0; i < 2; i++) pthread_join(t[i], 0);\n\
      return 0;\n\
    }\n";

/// Each race as `line: message` followed by the whole report (conflicting
/// accesses, locks, confidence), sorted.
fn races(text: &str) -> Vec<String> {
    let mut host = AnalysisHost::default();
    host.set_file_text(Path::new("/virtual/copies.c"), text.to_string());
    let line = |at: usize| text[..at].matches('\n').count() + 1;
    let mut races: Vec<String> = host
        .snapshot()
        .races()
        .iter()
        .map(|r| format!("{}: {} {r:?}", line(r.site.start), r.message()))
        .collect();
    races.sort();
    races
}

/// The races of `program` walked with copies off, then with copies on, and
/// how many contexts the second analysis copied. Each analysis walks from
/// scratch (an update would reuse the last walk).
fn walked_and_copied(program: &str) -> (Vec<String>, Vec<String>, u64) {
    walk::set_incremental(false);
    walk::set_copies(false);
    let walked = races(program);
    let before = walk::copies_made();
    walk::set_copies(true);
    let copied = races(program);
    (walked, copied, walk::copies_made() - before)
}

#[test]
fn a_copied_context_reports_what_walking_it_reports() {
    let _turn = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let (walked, copied, copies) = walked_and_copied(PROGRAM);
    assert!(
        copies > 0,
        "no context was copied: `mix` under `b` and under no lock differs from `mix` under `a` only in the locksets"
    );
    assert_eq!(walked, copied);
    // The helper's accesses keep the locks of each call: `total` is written
    // under `a`, under `b` and under no lock, and the unlocked write races.
    assert!(
        copied
            .iter()
            .any(|m| m.starts_with("11: ") && m.contains("total")),
        "{copied:#?}"
    );
    // `seed`, read under each lockset, races with `main`'s write.
    assert!(
        copied
            .iter()
            .any(|m| m.starts_with("9: ") && m.contains("seed")),
        "{copied:#?}"
    );
}

/// Two threads call the helper once each, under different locks: neither
/// thread has a context of its own to copy, so every copy comes from the
/// other thread's walk.
const TWO_THREADS: &str = "#include <pthread.h>\n\
    int seed;\n\
    int total;\n\
    pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;\n\
    pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;\n\
    static int mix(int x) {\n\
      int r = x;\n\
      for (int i = 0; i < 3; i++) r = r * 31 + i;\n\
      return r + seed;\n\
    }\n\
    static void bump(void) { total = mix(total); }\n\
    void *left(void *arg) { pthread_mutex_lock(&a); bump(); pthread_mutex_unlock(&a); return 0; }\n\
    void *right(void *arg) { pthread_mutex_lock(&b); bump(); pthread_mutex_unlock(&b); return 0; }\n\
    int main(void) {\n\
      pthread_t l, r;\n\
      pthread_create(&l, 0, left, 0);\n\
      pthread_create(&r, 0, right, 0);\n\
      seed = 7;\n\
      pthread_join(l, 0);\n\
      pthread_join(r, 0);\n\
      return 0;\n\
    }\n";

#[test]
fn a_context_walked_in_one_thread_is_copied_into_another() {
    let _turn = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let (walked, copied, copies) = walked_and_copied(TWO_THREADS);
    assert!(
        copies > 0,
        "`right`'s call of `bump` under `b` was walked, not copied from `left`'s under `a`"
    );
    // Same reports, threads included: the copied write to `total` is
    // `right`'s, under `b`, and races with `left`'s under `a`.
    assert_eq!(walked, copied);
    assert!(
        copied
            .iter()
            .any(|m| m.starts_with("11: ") && m.contains("total") && m.contains("right")),
        "{copied:#?}"
    );
}
