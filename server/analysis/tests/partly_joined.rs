//! A race with a thread that is joined on some paths to the access and not
//! on others (a join an error return skips, a join under a condition) is a
//! *may* race: it happens on some executions only. A thread joined on no
//! path keeps its *must* race, and one joined on every path races with
//! nothing after the join.

use racelens_analysis::races::Confidence;
use racelens_analysis::AnalysisHost;
use std::path::Path;

const PROGRAM: &str = r#"
#include <pthread.h>
int state;
static void *worker(void *arg) { state = 1; return arg; }
static int run(int fail) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    if (fail)
        return 1;
    pthread_join(t, 0);
    return 0;
}
int main(int argc, char **argv) {
    run(argc > 2);
    state = 2;
    return 0;
}
"#;

fn confidence_on(host: &mut AnalysisHost, text: &str, var: &str) -> Vec<Confidence> {
    host.set_file_text(Path::new("/virtual/partly.c"), text);
    let races = host.snapshot().races();
    races
        .iter()
        .filter(|r| r.var == var)
        .map(|r| r.confidence)
        .collect()
}

#[test]
fn a_join_an_error_return_skips_makes_a_may_race() {
    let mut host = AnalysisHost::default();
    let partly = confidence_on(&mut host, PROGRAM, "state");
    assert!(!partly.is_empty(), "the error path still races");
    assert!(partly.iter().all(|c| *c == Confidence::May), "{partly:?}");
    // Never joined: the race is certain.
    let never = PROGRAM.replace("    pthread_join(t, 0);\n", "");
    let never = confidence_on(&mut host, &never, "state");
    assert!(never.contains(&Confidence::Must), "{never:?}");
    // Joined on every path: no race at all.
    let always = PROGRAM.replace("    if (fail)\n        return 1;\n", "");
    assert!(confidence_on(&mut host, &always, "state").is_empty());
}

#[test]
fn a_thread_created_after_a_partly_joined_one_runs_for_certain() {
    // The first worker is joined on some paths; the one created after it
    // runs at the write on every path, and its race stays *must*.
    let text = PROGRAM.replace(
        "    run(argc > 2);\n    state = 2;",
        "    run(argc > 2);\n    pthread_t u;\n    pthread_create(&u, 0, worker, 0);\n    state = 2;",
    );
    let mut host = AnalysisHost::default();
    let c = confidence_on(&mut host, &text, "state");
    assert!(c.contains(&Confidence::Must), "{c:?}");
}
