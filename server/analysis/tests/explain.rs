//! Snapshots of the bounded interleaving check: witnesses for real races,
//! refutations for candidates that joins, flags, condition variables or
//! barriers order. `$0` marks the reported access to check.

use racelens_analysis::explain::{check as check_race, Verdict};
use racelens_analysis::{AnalysisHost, Config};
use std::path::Path;

fn check(fixture: &str) -> String {
    let offset = fixture.find("$0").expect("fixture has a $0 marker");
    let src = fixture.replacen("$0", "", 1);
    let mut host = AnalysisHost::new(Config::default());
    host.set_file_text(Path::new("/virtual/a.c"), src);
    let analysis = host.snapshot();
    let races = analysis.races();
    let Some(r) = races
        .iter()
        .find(|r| r.site.start <= offset && offset < r.site.end.max(r.site.start + 1))
    else {
        return format!(
            "not reported; reports at {:?}",
            races.iter().map(|r| r.site.start).collect::<Vec<_>>()
        );
    };
    match check_race(&analysis, r) {
        Verdict::Witness(e) => e.text(),
        Verdict::Refuted(why) => format!("refuted: {why}"),
        Verdict::Unknown => "unknown".into(),
    }
}

#[test]
fn counter_in_two_instances_of_one_thread() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
int hits;
void *worker(void *arg) {
    $0hits++;
    return 0;
}
int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, 0, worker, 0);
    pthread_create(&t2, 0, worker, 0);
    pthread_join(t1, 0);
    pthread_join(t2, 0);
    return 0;
}
"#
    ));
}

#[test]
fn locked_write_against_unlocked_read() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int balance;
void *deposit(void *arg) {
    pthread_mutex_lock(&m);
    $0balance += 10;
    pthread_mutex_unlock(&m);
    return 0;
}
void *audit(void *arg) {
    return (void *)(long)balance;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, deposit, 0);
    pthread_create(&b, 0, audit, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#
    ));
}

#[test]
fn threads_created_in_a_loop() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
int last;
void *worker(void *arg) {
    $0last = (int)(long)arg;
    return 0;
}
int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], 0);
    return last;
}
"#
    ));
}

const FLAG: &str = r#"#include <pthread.h>
#include <stdio.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int data, ready;
void *producer(void *arg) {
    $Pdata = 42;
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_mutex_unlock(&m);
    return 0;
}
void *consumer(void *arg) {
    pthread_mutex_lock(&m);
    if (ready)
        printf("%d\n", $Cdata);
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, producer, 0);
    pthread_create(&b, 0, consumer, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#;

#[test]
fn flag_set_under_a_lock_refutes_both_sides() {
    let producer = check(&FLAG.replace("$P", "$0").replace("$C", ""));
    let consumer = check(&FLAG.replace("$P", "").replace("$C", "$0"));
    insta::assert_snapshot!(format!("producer: {producer}\nconsumer: {consumer}"));
}

#[test]
fn condition_variable_without_a_flag() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
int data;
void *waiter(void *arg) {
    pthread_mutex_lock(&m);
    pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    return (void *)(long)$0data;
}
void *signaller(void *arg) {
    data = 1;
    pthread_mutex_lock(&m);
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, waiter, 0);
    pthread_create(&b, 0, signaller, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#
    ));
}

#[test]
fn predicate_loop_around_cond_wait() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
int done, result;
void *worker(void *arg) {
    $0result = 7;
    pthread_mutex_lock(&m);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    pthread_mutex_lock(&m);
    while (!done)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    return result;
}
"#
    ));
}

#[test]
fn barrier_orders_the_phases() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
pthread_barrier_t bar;
int left_part, right_part;
void *left(void *arg) {
    $0left_part = 1;
    pthread_barrier_wait(&bar);
    return (void *)(long)right_part;
}
void *right(void *arg) {
    right_part = 2;
    pthread_barrier_wait(&bar);
    return (void *)(long)left_part;
}
int main(void) {
    pthread_t a, b;
    pthread_barrier_init(&bar, 0, 2);
    pthread_create(&a, 0, left, 0);
    pthread_create(&b, 0, right, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#
    ));
}

#[test]
fn trylock_success_branch_holds_the_lock() {
    insta::assert_snapshot!(check(
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int fast, slow;
void *worker(void *arg) {
    if (pthread_mutex_trylock(&m) == 0) {
        fast++;
        pthread_mutex_unlock(&m);
    } else {
        $0slow++;
    }
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#
    ));
}

#[test]
fn model_with_a_goto_gives_no_refutation() {
    let text = check(
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int data, ready;
void *producer(void *arg) {
    $0data = 1;
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_mutex_unlock(&m);
    return 0;
}
void *consumer(void *arg) {
    pthread_mutex_lock(&m);
    if (!ready)
        goto out;
    data++;
out:
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, producer, 0);
    pthread_create(&b, 0, consumer, 0);
    return 0;
}
"#,
    );
    assert!(!text.starts_with("refuted"), "{text}");
}
