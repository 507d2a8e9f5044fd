//! A launcher's trampoline (`start(t)` calling `t->callback(t)`) started for
//! several functions on elements of one array is one abstract thread: its
//! instances may be different launches, created and joined at different
//! times, so none of its races is a *must* race, while a thread that runs
//! one function keeps its musts. (Capsules that are distinct objects are a
//! site each: fixture `launcher_global_capsules.c`.)

use racelens_analysis::races::Confidence;
use racelens_analysis::AnalysisHost;
use std::path::Path;

const LAUNCHER: &str = r#"
#include <pthread.h>
struct thread { pthread_t handle; void *(*callback)(struct thread *); };
int a_state, b_state, shared;
static void *start(void *arg) {
    struct thread *t = arg;
    return t->callback(t);
}
static void launch(struct thread *t, void *(*cb)(struct thread *)) {
    t->callback = cb;
    pthread_create(&t->handle, 0, start, t);
}
static void *run_a(struct thread *t) { a_state = 1; shared++; return t; }
static void *run_b(struct thread *t) { b_state = 1; shared++; return t; }
int main(void) {
    static struct thread pool[2];
    launch(&pool[0], run_a);
    launch(&pool[1], run_b);
    shared = 5;
    pthread_join(pool[0].handle, 0);
    pthread_join(pool[1].handle, 0);
    return 0;
}
"#;

#[test]
fn a_trampoline_that_runs_several_functions_makes_no_must_race() {
    let mut host = AnalysisHost::default();
    let path = Path::new("/virtual/launcher.c");
    host.set_file_text(path, LAUNCHER);
    let races = host.snapshot().races();
    let on = |v: &str| races.iter().filter(|r| r.var == v).collect::<Vec<_>>();
    assert!(!on("shared").is_empty(), "{races:?}");
    assert!(
        races.iter().all(|r| r.confidence == Confidence::May),
        "{races:?}"
    );
    // One function launched: the same code keeps its must race.
    let single = LAUNCHER.replace("launch(&pool[1], run_b);", "");
    host.set_file_text(path, single.as_str());
    let races = host.snapshot().races();
    assert!(
        races
            .iter()
            .any(|r| r.var == "shared" && r.confidence == Confidence::Must),
        "{races:?}"
    );
}
