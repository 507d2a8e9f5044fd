//! Hover snapshots: `$0` marks the cursor in each inline fixture.

use racelens_analysis::hover::hover;
use racelens_analysis::{AnalysisHost, Config};
use std::path::Path;

fn check(fixture: &str) -> String {
    let offset = fixture.find("$0").expect("fixture has a $0 cursor");
    let src = fixture.replacen("$0", "", 1);
    let mut host = AnalysisHost::new(Config::default());
    let path = Path::new("/virtual/a.c");
    host.set_file_text(path, src);
    hover(&host.snapshot(), path, offset).unwrap_or_else(|| "(no hover)".into())
}

const STATS: &str = r#"#include <pthread.h>
pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
struct stats { long hits; long misses; } stats;
int counter;
void *worker(void *arg) {
    pthread_mutex_lock(&stats_mu);
    stats.hits++;
    stats.misses += 2;
    pthread_mutex_unlock(&stats_mu);
    stats.hits--;
    counter++;
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return counter;
}
"#;

fn at(marker_after: &str) -> String {
    let i = STATS.find(marker_after).expect("marker in STATS");
    let mut s = STATS.to_string();
    s.insert_str(i, "$0");
    check(&s)
}

#[test]
fn racy_global_at_an_access() {
    insta::assert_snapshot!(at("counter++"));
}

#[test]
fn global_at_its_declaration() {
    insta::assert_snapshot!(at("counter;\nvoid"));
}

#[test]
fn struct_field_access_counts_guarded_accesses() {
    insta::assert_snapshot!(at("hits--"));
}

#[test]
fn struct_field_declaration_covers_every_access() {
    insta::assert_snapshot!(at("misses; }"));
}

#[test]
fn static_local() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
int next_id(void) {
    static int id;
    return ++i$0d;
}
void *worker(void *arg) { next_id(); return 0; }
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, 0);
    return 0;
}
"#
    ));
}

#[test]
fn private_local_has_no_hover() {
    assert_eq!(
        check("int f(void) { int x$0 = 1; return x; }\nint main(void) { return f(); }\n"),
        "(no hover)"
    );
}

#[test]
fn unaccessed_global() {
    insta::assert_snapshot!(check("int unused$0;\nint main(void) { return 0; }\n"));
}

#[test]
fn lock_lists_what_it_guards() {
    insta::assert_snapshot!(at("stats_mu);\n    stats.hits++"));
}

/// `config.stop` races; `config` has other fields, and `strerror` writes
/// the library's hidden state in both threads.
const CONFIG: &str = r#"#include <pthread.h>
#include <string.h>
#include <errno.h>
struct config { int stop; int verbose; int level; } config;
void *worker(void *arg) {
    while (!config.stop) { config.verbose = 1; }
    const char *m = strerror(errno);
    return (void *)m;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    config.stop = 1;
    config.level = 2;
    strerror(errno);
    pthread_join(t, 0);
    return 0;
}
"#;

fn config_at(marker_after: &str) -> String {
    let i = CONFIG.find(marker_after).expect("marker in CONFIG");
    let mut s = CONFIG.to_string();
    s.insert_str(i, "$0");
    check(&s)
}

#[test]
fn at_a_race_diagnostics_start_the_raced_field_is_described() {
    let text = config_at("config.stop = 1");
    assert!(text.contains("**`config.stop`**"), "{text}");
    assert!(
        !text.contains("config.level") && !text.contains("config.verbose"),
        "{text}"
    );
}

#[test]
fn on_a_racy_library_call_its_hidden_state_is_described() {
    let text = config_at("strerror(errno);\n    pthread_join");
    assert!(text.contains("(static state of strerror)"), "{text}");
    assert!(text.contains("hidden static state"), "{text}");
    assert!(text.contains("data race"), "{text}");
    // Inside the call's range too, on its argument.
    let inner = config_at("errno);\n    pthread_join");
    assert_eq!(inner, text);
}
