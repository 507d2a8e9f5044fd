//! `racelens bench edit --workspace`: a file edited as one file of a loaded
//! project sees the races its edits make with the project's other files.
//!
//! Only the command's behaviour is pinned here (it runs, loads the folder,
//! reports its figures); its timings belong in `docs/benchmarks.md`.

use std::process::Command;

const MAIN: &str = r#"#include <pthread.h>
extern int shared;
extern void *worker(void *arg);
static int local_count;

static void tick(void) {
    local_count = local_count + 1;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    shared = 1;
    tick();
    return 0;
}
"#;

const WORKER: &str = r#"int shared;
void *worker(void *arg) {
    shared = 2;
    return 0;
}
"#;

fn bench_edit(dir: &std::path::Path, workspace: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_racelens"));
    cmd.args(["bench", "edit"])
        .arg(dir.join("main.c"))
        .args(["--iterations", "4"]);
    if workspace {
        cmd.arg("--workspace").arg(dir);
    }
    let out = cmd.output().expect("racelens runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn diagnostics_at_open(out: &str) -> usize {
    let line = out
        .lines()
        .find(|l| l.contains("open to first diagnostics"))
        .expect("an open line");
    let n = line.rsplit('(').next().unwrap();
    n.split_whitespace()
        .next()
        .unwrap()
        .parse()
        .expect("a count")
}

#[test]
fn bench_edit_in_a_workspace_sees_the_other_files() {
    let dir = std::env::temp_dir().join(format!("racelens-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.c"), MAIN).unwrap();
    std::fs::write(dir.join("worker.c"), WORKER).unwrap();

    let alone = bench_edit(&dir, false);
    let project = bench_edit(&dir, true);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(project.contains("workspace: 2 files"), "{project}");
    for out in [&alone, &project] {
        assert!(out.contains("edit to diagnostics (server path)"), "{out}");
        assert!(out.contains("bare tree-sitter incremental parse"), "{out}");
    }
    // Alone, `worker` has no body: no thread runs and nothing races; the one
    // diagnostic says that `main` creates a thread whose body is missing. In
    // its project, main's write to `shared` races with the worker's.
    assert_eq!(diagnostics_at_open(&alone), 1, "{alone}");
    assert!(diagnostics_at_open(&project) >= 1, "{project}");
}
