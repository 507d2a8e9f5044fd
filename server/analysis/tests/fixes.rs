//! Every quick fix offered on every racy access of every fixture, applied:
//! the result must compile (`gcc -fsyntax-only`), the fixed access must no
//! longer race, and no report may appear that was not there before.

use racelens_analysis::fixes::{quick_fixes, FileEdit, Fix};
use racelens_analysis::{AnalysisHost, Config, RaceReport};
use std::path::{Path, PathBuf};
use std::process::Command;

const VPATH: &str = "/virtual/a.c";

fn analyse(src: &str) -> (AnalysisHost, Vec<RaceReport>) {
    let mut host = AnalysisHost::new(Config::default());
    host.set_file_text(Path::new(VPATH), src.to_string());
    let races = host.snapshot().races();
    (host, races)
}

/// Applies one file's edits; equal offsets keep their list order, so the
/// edits go in from the back.
fn apply(src: &str, edits: &[FileEdit]) -> String {
    let mut v: Vec<(usize, &FileEdit)> = edits.iter().enumerate().collect();
    v.sort_by_key(|(i, e)| std::cmp::Reverse((e.start, *i)));
    for w in v.windows(2) {
        assert!(
            w[1].1.end <= w[0].1.start,
            "overlapping edits: {:?} and {:?}",
            w[1].1,
            w[0].1
        );
    }
    let mut out = src.to_string();
    for (_, e) in v {
        assert_eq!(e.file, Path::new(VPATH));
        out.replace_range(e.start..e.end, &e.new_text);
    }
    out
}

fn gcc() -> Option<PathBuf> {
    let ok = Command::new("gcc")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then(|| PathBuf::from("gcc"))
}

fn compiles(gcc: &Path, src: &str, name: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("racelens-fixes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join(name);
    std::fs::write(&path, src).map_err(|e| e.to_string())?;
    let out = Command::new(gcc)
        .args(["-fsyntax-only", "-w", "-pthread"])
        .arg(&path)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Line of an offset and the (kind, line, var) identity of a report that
/// survives edits above it when counted by variable and kind.
fn line_of(src: &str, off: usize) -> usize {
    src[..off].matches('\n').count() + 1
}

/// Checks every fix of every report in `src`; returns the failures.
fn check_program(name: &str, src: &str, gcc: Option<&Path>) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let (host, races) = analyse(src);
    let analysis = host.snapshot();
    let original_ok = gcc.map(|g| compiles(g, src, name).is_ok()).unwrap_or(false);
    let mut count = 0;
    for r in &races {
        for fix in quick_fixes(&analysis, r) {
            count += 1;
            if let Err(e) = check_fix(name, src, &races, r, &fix, gcc.filter(|_| original_ok)) {
                failures.push(format!(
                    "{name}:{} `{}` — fix \"{}\": {e}",
                    line_of(src, r.site.start),
                    r.var,
                    fix.title
                ));
            }
        }
    }
    (count, failures)
}

fn check_fix(
    name: &str,
    src: &str,
    before: &[RaceReport],
    r: &RaceReport,
    fix: &Fix,
    gcc: Option<&Path>,
) -> Result<(), String> {
    let fixed = apply(src, &fix.edits);
    if let Some(g) = gcc {
        compiles(g, &fixed, name)
            .map_err(|e| format!("does not compile:\n{e}\n--- fixed text ---\n{fixed}"))?;
    }
    let (host, after) = analyse(&fixed);
    let errors_before = analyse(src).0.snapshot().syntax_errors(Path::new(VPATH));
    if host.snapshot().syntax_errors(Path::new(VPATH)) > errors_before {
        return Err(format!("new syntax errors after the fix\n{fixed}"));
    }
    // The fixed access: same text at the same place relative to the edits.
    let shift: isize = fix
        .edits
        .iter()
        .filter(|e| e.end <= r.site.start)
        .map(|e| e.new_text.len() as isize - (e.end - e.start) as isize)
        .sum();
    let start = (r.site.start as isize + shift) as usize;
    let still = after.iter().any(|a| {
        a.var == r.var
            && (a.site.start == start
                || fixed.get(a.site.start..a.site.end) == src.get(r.site.start..r.site.end)
                    && line_of(&fixed, a.site.start) == line_of(&fixed, start))
    });
    if still {
        return Err(format!(
            "the access still races\n--- fixed text ---\n{fixed}"
        ));
    }
    if after.len() > before.len() {
        let msgs: Vec<String> = after
            .iter()
            .map(|a| format!("L{} {}", line_of(&fixed, a.site.start), a.message()))
            .collect();
        return Err(format!(
            "{} reports before, {} after: {msgs:#?}\n--- fixed text ---\n{fixed}",
            before.len(),
            after.len()
        ));
    }
    Ok(())
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().map(|e| e == "c").unwrap_or(false))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_fix_on_every_fixture_compiles_and_removes_the_race() {
    let gcc = gcc();
    if gcc.is_none() {
        eprintln!("gcc not found: fixes are checked by re-analysis only, not compiled");
    }
    let files = fixtures();
    assert!(!files.is_empty(), "no fixtures/*.c found");
    let (mut total, mut failures) = (0, Vec::new());
    for f in &files {
        let src = std::fs::read_to_string(f).expect("fixture is readable");
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("a.c");
        let (n, fails) = check_program(name, &src, gcc.as_deref());
        total += n;
        failures.extend(fails);
    }
    eprintln!("checked {total} fixes on {} fixtures", files.len());
    assert!(total > 0, "no fix was offered on any fixture");
    assert!(
        failures.is_empty(),
        "{} of {total} fixes failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn inline_programs_get_working_fixes() {
    let gcc = gcc();
    for (name, src, _) in INLINE {
        let (n, fails) = check_program(name, src, gcc.as_deref());
        assert!(n > 0, "{name}: no fix offered");
        assert!(fails.is_empty(), "{}", fails.join("\n\n"));
    }
}

/// The preferred fix of the first report whose line contains `marker`.
fn preferred_fix(src: &str, marker: &str) -> (Fix, String) {
    let (host, races) = analyse(src);
    let analysis = host.snapshot();
    let r = races
        .iter()
        .find(|r| {
            src[r.site.start..]
                .lines()
                .next()
                .unwrap_or("")
                .contains(marker)
                || line_text(src, r.site.start).contains(marker)
        })
        .unwrap_or_else(|| panic!("no race on a line with {marker:?}: {races:#?}"));
    let fixes = quick_fixes(&analysis, r);
    let fix = fixes
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no fix for {marker:?}"));
    let fixed = apply(src, &fix.edits);
    (fix, fixed)
}

fn line_text(src: &str, off: usize) -> &str {
    let s = src[..off].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let e = src[off..].find('\n').map(|i| off + i).unwrap_or(src.len());
    &src[s..e]
}

#[test]
fn fixes_follow_the_file_idiom() {
    for (name, src, expect) in INLINE {
        if expect.is_empty() {
            continue;
        }
        let (fix, fixed) = preferred_fix(src, "// FIX");
        insta::assert_snapshot!(
            format!("fix_{}", name.trim_end_matches(".c")),
            format!("{}\n---\n{fixed}", fix.title)
        );
        for e in expect.split('|') {
            assert!(fixed.contains(e), "{name}: expected {e:?} in\n{fixed}");
        }
    }
}

/// (file name, program, `|`-separated texts the preferred fix of the
/// access marked `// FIX` must produce).
const INLINE: &[(&str, &str, &str)] = &[
    (
        "counter.c",
        r#"#include <pthread.h>
int hits;
void *worker(void *arg) {
    hits++;
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return hits;
}
"#,
        "",
    ),
    (
        "wrapper.c",
        r#"#include <pthread.h>
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static long hits;
static void stats_lock(void) { pthread_mutex_lock(&stats_mu); }
static void stats_unlock(void) { pthread_mutex_unlock(&stats_mu); }
static void *worker(void *arg) {
    stats_lock();
    hits += 2;
    stats_unlock();
    if (arg)
        hits++; // FIX
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, &a);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return (int)hits;
}
"#,
        "if (arg) {\n        stats_lock();\n        hits++; // FIX\n        stats_unlock();\n    }",
    ),
    (
        "macro.c",
        r#"#include <pthread.h>
pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
#define CACHE_LOCK() pthread_mutex_lock(&cache_mu)
#define CACHE_UNLOCK() pthread_mutex_unlock(&cache_mu)
int entries[8];
int used;
int lookup(int k) {
    for (int i = 0; i < 8; i++) {
        if (entries[i] == k)
            break;
        used = i; // FIX
    }
    return used;
}
void *worker(void *arg) {
    CACHE_LOCK();
    used++;
    CACHE_UNLOCK();
    lookup(3);
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
"#,
        "CACHE_LOCK();|CACHE_UNLOCK();",
    ),
    (
        "getter.c",
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int balance;
int get_balance(void) {
    return balance; // FIX
}
void *worker(void *arg) {
    pthread_mutex_lock(&m);
    balance += 10;
    pthread_mutex_unlock(&m);
    return (void *)(long)get_balance();
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#,
        "int result = balance;\n    pthread_mutex_unlock(&m);\n    return result; // FIX",
    ),
    (
        "early_exit.c",
        r#"#include <pthread.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int budget;
int take(int n) {
    if (budget < n) // FIX
        return -1;
    budget -= n;
    return 0;
}
void *worker(void *arg) {
    take(2);
    pthread_mutex_lock(&m);
    budget++;
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return budget;
}
"#,
        "if (budget < n) { // FIX\n        pthread_mutex_unlock(&m);\n        return -1;\n    }",
    ),
    (
        "rwlock.c",
        r#"#include <pthread.h>
pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
int config;
void *reader(void *arg) {
    pthread_rwlock_rdlock(&rw);
    int c = config;
    pthread_rwlock_unlock(&rw);
    return (void *)(long)c;
}
void *writer(void *arg) {
    config = 2; // FIX
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, reader, 0);
    pthread_create(&b, 0, writer, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#,
        "pthread_rwlock_wrlock(&rw);|pthread_rwlock_unlock(&rw);",
    ),
    (
        "queue.c",
        r#"#include <pthread.h>
#include <stdlib.h>
struct queue { pthread_mutex_t lock; int count; };
void push(struct queue *q) {
    pthread_mutex_lock(&q->lock);
    q->count++;
    pthread_mutex_unlock(&q->lock);
}
void *worker(void *arg) {
    struct queue *mine = arg;
    push(mine);
    mine->count--; // FIX
    return 0;
}
int main(void) {
    struct queue *q = malloc(sizeof *q);
    pthread_mutex_init(&q->lock, 0);
    q->count = 0;
    pthread_t a, b;
    pthread_create(&a, 0, worker, q);
    pthread_create(&b, 0, worker, q);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#,
        "pthread_mutex_lock(&mine->lock);",
    ),
    (
        "shapes.c",
        r#"#include <pthread.h>
#include <stdbool.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
bool stop;
int level, hits, mode;
int step(int k) {
    switch (k) {
    case 0:
        hits++;
        break;
    case 1:
        return hits;
    default:
        if (k > 10)
            level = k;
        else if (level > 3)
            level--;
    }
    for (int i = 0; i < level; i++)
        k++;
    do {
        k--;
    } while (mode > 0);
    if (k < 0)
        goto out;
    mode = k;
out:
    hits += 2;
    return k;
}
void *worker(void *arg) {
    while (!stop)
        step((int)(long)arg);
    pthread_mutex_lock(&m);
    hits = 0;
    level = 0;
    mode = 1;
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, 0);
    pthread_create(&b, 0, worker, (void *)1);
    stop = true;
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#,
        "",
    ),
];
