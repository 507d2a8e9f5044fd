//! Plain `racelens check` runs the bounded interleaving check: candidates
//! that a flag protocol under a lock or a condition variable orders are
//! refuted and dropped, real races keep their report, and `--explain`
//! prints the schedule and the refuted candidates.

use std::path::PathBuf;
use std::process::Command;

/// `data` is handed over through `ready`, set and tested under `m`.
const FLAG: &str = "#include <pthread.h>
#include <stdio.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int data, ready;
void *producer(void *arg) {
    data = 42;
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_mutex_unlock(&m);
    return 0;
}
void *consumer(void *arg) {
    pthread_mutex_lock(&m);
    if (ready)
        printf(\"%d\\n\", data);
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
";

/// The waiter reads `result` only after the worker signalled `cv`, which
/// it does after writing it; `hits` races for real.
const CONDVAR: &str = "#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
int result, hits;
void *waiter(void *arg) {
    pthread_mutex_lock(&m);
    pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    hits++;
    return (void *)(long)result;
}
void *worker(void *arg) {
    result = 7;
    pthread_mutex_lock(&m);
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    hits++;
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, waiter, 0);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
";

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("racelens-refute-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn check(args: &[&str], file: &PathBuf) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_racelens"))
        .arg("check")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn sarif_lines(text: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] == "data-race")
        .map(|r| {
            r["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_flag_protocol_under_a_lock_is_refuted_by_default() {
    let file = write("flag.c", FLAG);
    let (code, out) = check(&["--format", "sarif"], &file);
    assert_eq!(sarif_lines(&out), Vec::<u64>::new(), "{out}");
    assert_eq!(code, 0);
    let (_, human) = check(&["--explain"], &file);
    assert!(
        // The path is shown relative to the current folder (absolute here,
        // as the file lies in the temporary folder).
        human.contains(&format!(
            "refuted candidate: {}:6: write of `data`: ordered by the flag `ready`",
            file.display()
        )),
        "{human}"
    );
}

#[test]
fn a_condition_variable_refutes_one_race_and_the_other_keeps_its_schedule() {
    let file = write("cv.c", CONDVAR);
    let (code, out) = check(&["--format", "sarif"], &file);
    // Only the two `hits++` remain.
    assert_eq!(sarif_lines(&out), vec![9, 17], "{out}");
    assert_eq!(code, 1);
    assert!(!out.contains("codeFlows"), "schedules only with --explain");
    let (_, sarif) = check(&["--explain", "--format", "sarif"], &file);
    let v: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let flow = &v["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"];
    let mut steps: Vec<(u64, String)> = flow
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["locations"].as_array().unwrap().iter())
        .map(|l| {
            (
                l["executionOrder"].as_u64().unwrap(),
                l["location"]["message"]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    steps.sort();
    let orders: Vec<u64> = steps.iter().map(|s| s.0).collect();
    assert_eq!(orders, (1..=steps.len() as u64).collect::<Vec<_>>());
    assert!(steps[0].1.starts_with("thread `"), "{steps:?}");
    assert!(steps.last().unwrap().1.contains("`hits`"), "{steps:?}");
}
