//! Fuzz-style robustness tests of the analysis, run in-process through
//! [`AnalysisHost`]: hostile input must never panic, overflow the stack or
//! hang, and budgets that cut the analysis short must show in
//! [`Analysis::incomplete`].
//!
//! These are the stable-toolchain stand-in for cargo-fuzz targets (which
//! need nightly and `cargo-fuzz`): proptest generates the inputs, and the
//! seed corpus is the annotated programs in `fixtures/` at the repository
//! root, which the truncation and mutation properties start from.
//!
//! Reproducibility: the RNG seed is fixed and each property runs
//! [`CASES`] cases, unless `PROPTEST_RNG_SEED` or `PROPTEST_CASES` say
//! otherwise (e.g. `PROPTEST_CASES=5000 PROPTEST_RNG_SEED=7` for a longer
//! local fuzzing session). A failing case is shrunk and its seed saved to
//! `robustness.proptest-regressions` next to this file; commit that file so
//! every later run replays the case first.

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use racelens_analysis::{Analysis, AnalysisHost, Config, RaceReport, SiteRef};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Cases per property: enough to find shallow crashes, small enough to keep
/// the suite fast.
const CASES: u32 = 64;
/// The hang bound of the stress programs. Not a performance target.
const HANG_LIMIT: Duration = Duration::from_secs(20);
/// The stack of a plain `std::thread::spawn`.
const DEFAULT_STACK: usize = 2 << 20;
/// The stack `racelens check` and `racelens lsp` give the analysis.
const PRODUCTION_STACK: usize = 256 << 20;
/// Set in the child process that runs one test in isolation.
const CHILD_ENV: &str = "RACELENS_ROBUSTNESS_CHILD";
/// Address space of that child: far above what any case here needs.
const MEMORY_CAP_KB: u64 = 4 << 20;

fn config() -> ProptestConfig {
    // `default()` reads the PROPTEST_* variables; keep what they set.
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = CASES;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0x7ace_1e45);
    }
    // Relative to the package root, the working directory of `cargo test`
    // (the default, source-parallel lookup does not find integration tests).
    c.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(
        "tests/robustness.proptest-regressions",
    )));
    c
}

/// The seed corpus: every program in `fixtures/`, sorted by name.
fn fixtures() -> &'static [(String, String)] {
    static CORPUS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
            .expect("fixtures folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "c"))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read_to_string(&p).expect("fixture text"),
                )
            })
            .collect();
        files.sort();
        assert!(
            files.len() >= 60,
            "expected the fixtures corpus, found {} files in {}",
            files.len(),
            dir.display()
        );
        files
    })
}

/// What one analysis run produced.
struct Outcome {
    races: Vec<RaceReport>,
    incomplete: Vec<String>,
    elapsed: Duration,
}

fn path() -> PathBuf {
    PathBuf::from("/fuzz/input.c")
}

/// Every query the CLI and the server run on a file: parse, per-function
/// summaries, the thread walk, the race reports, hover and quick fixes, and
/// checks that every reported position lies on a character boundary of the
/// text (the server converts them to line/column without re-checking).
fn analyse_in(host: &mut AnalysisHost, text: &str) -> Outcome {
    let t = Instant::now();
    host.set_file_text(&path(), text);
    let analysis = host.snapshot();
    run_queries(&analysis, text);
    let races = analysis.races();
    for r in &races {
        check_site(text, &r.site);
        r.conflicts.iter().for_each(|c| check_site(text, &c.site));
        r.creations.iter().for_each(|c| check_site(text, &c.site));
    }
    for r in races.iter().take(3) {
        for fix in racelens_analysis::fixes::quick_fixes(&analysis, r) {
            for e in &fix.edits {
                assert!(
                    e.start <= e.end && e.end <= text.len(),
                    "fix edit {}..{} outside the text ({} bytes)",
                    e.start,
                    e.end,
                    text.len()
                );
            }
        }
    }
    let incomplete = analysis
        .incomplete()
        .into_iter()
        .map(|i| format!("{}: {}", i.site.func, i.reason))
        .collect();
    Outcome {
        races,
        incomplete,
        elapsed: t.elapsed(),
    }
}

fn analyse(text: &str) -> Outcome {
    analyse_in(&mut AnalysisHost::new(Config::default()), text)
}

fn run_queries(analysis: &Analysis, text: &str) {
    let (db, ws) = (analysis.db(), analysis.workspace());
    for f in ws.files(db) {
        for &fid in racelens_analysis::db::file_functions(db, ws, *f) {
            let _ = racelens_analysis::db::function_summary(db, fid);
        }
    }
    let _ = racelens_analysis::races::thread_analysis(db, ws);
    let _ = analysis.syntax_errors(&path());
    // Hover at a few places, including past the end of the text.
    for offset in [
        0,
        text.len() / 3,
        text.len() / 2,
        text.len(),
        text.len() + 10,
    ] {
        let _ = racelens_analysis::hover::hover(analysis, &path(), offset);
    }
}

fn check_site(text: &str, s: &SiteRef) {
    assert!(
        s.start <= s.end && s.end <= text.len(),
        "site {}..{} in `{}` outside the text ({} bytes)",
        s.start,
        s.end,
        s.func,
        text.len()
    );
    assert!(
        text.is_char_boundary(s.start) && text.is_char_boundary(s.end),
        "site {}..{} in `{}` splits a character",
        s.start,
        s.end,
        s.func
    );
}

/// Runs `f` on a fresh thread with the given stack and fails the test if
/// it takes longer than `limit` (the thread is left behind: a hang).
fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    stack: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(what.into())
        .stack_size(stack)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn");
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {limit:?} (hang)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked (see above)"),
    }
}

/// Runs `test` (the name of the calling `#[test]`) in a child process, so
/// that what would take the whole test binary down fails only that test and
/// says why: a stack overflow (which aborts the process), a hang (the child
/// is killed), or a memory blow-up (the child's address space is capped, so
/// the allocation fails instead of the machine running out of memory). In
/// the child, runs `body` itself.
fn isolated(test: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD_ENV).is_some() {
        return body();
    }
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {}; exec \"$0\" \"$@\"", MEMORY_CAP_KB))
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the test binary");
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let (stdout, stderr) = (
        drain(Box::new(child.stdout.take().unwrap())),
        drain(Box::new(child.stderr.take().unwrap())),
    );
    let deadline = Instant::now() + HANG_LIMIT + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    // Keep the child's measurements visible with --nocapture.
    eprint!(
        "{}",
        stderr
            .lines()
            .filter(|l| l.starts_with("[measured]"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    let Some(status) = status else {
        panic!(
            "`{test}` was killed after {:?} (hang)\n{stderr}",
            deadline.elapsed()
        )
    };
    assert!(
        status.success() && stdout.contains("1 passed"),
        "`{test}` failed in its child process ({status}):\n{stderr}\n{stdout}"
    );
}

// ---------------------------------------------------------------------------
// (a) arbitrary bytes, (b) truncations and (c) mutations of the corpus.

/// Bytes that are likely to matter to a C parser, mixed with anything.
fn c_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop::sample::select(vec![
        &b"{"[..],
        b"}",
        b"(",
        b")",
        b";",
        b"*",
        b"&",
        b"\n",
        b"#define ",
        b"#if 0\n",
        b"#endif\n",
        b"/*",
        b"*/",
        b"\"",
        b"'",
        b"\\\n",
        b"pthread_mutex_lock(&m);",
        b"pthread_mutex_unlock(&m);",
        b"pthread_create(&t, 0, f, 0);",
        b"pthread_join(t, 0);",
        b"int x;",
        b"void *f(void *a) {",
        b"int main(void) {",
        b"x++;",
        b"if (x)",
        b"else",
        b"for (;;)",
        b"while (x)",
        b"return 0;",
        b"\xff\xfe",
        b"\xe2\x80\xa8",
        "é😀".as_bytes(),
        b"\r\n",
        b"\0",
    ]);
    let piece = prop_oneof![
        token.prop_map(|t| t.to_vec()),
        prop::collection::vec(any::<u8>(), 0..8)
    ];
    prop::collection::vec(piece, 0..200).prop_map(|v| v.concat())
}

/// A corpus file and a byte offset in it, rounded down to a char boundary.
fn fixture_and_offset() -> impl Strategy<Value = (usize, prop::sample::Index)> {
    (0..fixtures().len(), any::<prop::sample::Index>())
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the byte at a position.
    Set(prop::sample::Index, u8),
    Delete(prop::sample::Index, usize),
    Insert(prop::sample::Index, Vec<u8>),
    /// Copy a span of the file to another place.
    Splice(prop::sample::Index, prop::sample::Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let idx = any::<prop::sample::Index>;
    prop_oneof![
        (idx(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (idx(), 1..64usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (idx(), c_bytes()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (idx(), idx(), 1..256usize).prop_map(|(a, b, n)| Mutation::Splice(a, b, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let at = |i: &prop::sample::Index, len: usize| if len == 0 { 0 } else { i.index(len + 1) };
    match m {
        Mutation::Set(i, b) if !bytes.is_empty() => {
            let i = i.index(bytes.len());
            bytes[i] = *b;
        }
        Mutation::Set(..) => {}
        Mutation::Delete(i, n) => {
            let i = at(i, bytes.len());
            bytes.drain(i..(i + n).min(bytes.len()));
        }
        Mutation::Insert(i, b) => {
            let i = at(i, bytes.len());
            bytes.splice(i..i, b.iter().copied());
        }
        Mutation::Splice(from, to, n) => {
            let from = at(from, bytes.len());
            let span = bytes[from..(from + n).min(bytes.len())].to_vec();
            let to = at(to, bytes.len());
            bytes.splice(to..to, span);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in c_bytes()) {
        analyse(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn truncated_fixtures_never_panic((file, cut) in fixture_and_offset()) {
        let text = &fixtures()[file].1;
        let cut = floor_char_boundary(text, cut.index(text.len() + 1));
        analyse(&text[..cut]);
    }

    /// Mutations applied one after another to the same host (the editor's
    /// incremental path) end with the same races as a fresh host that saw
    /// the same texts.
    #[test]
    fn mutated_fixtures_never_panic_and_incremental_matches_fresh(file in 0..fixtures().len(), mutations in prop::collection::vec(mutation(), 1..6)) {
        let mut bytes = fixtures()[file].1.clone().into_bytes();
        let mut host = AnalysisHost::new(Config::default());
        analyse_in(&mut host, &fixtures()[file].1);
        let mut history = vec![fixtures()[file].1.clone()];
        for m in &mutations {
            apply(&mut bytes, m);
            history.push(String::from_utf8_lossy(&bytes).into_owned());
            analyse_in(&mut host, history.last().unwrap());
        }
        let incremental = host.snapshot().races();
        // A fresh host that sees the same texts, each set and analysed
        // whole, keeps the same last good versions of functions with new
        // syntax errors (analysis `baseline.rs`).
        let mut fresh = AnalysisHost::new(Config::default());
        for text in &history {
            fresh.set_file_text(&path(), text.as_str());
        }
        prop_assert_eq!(incremental, fresh.snapshot().races());
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Every fixture cut at 16 evenly spaced points, so that each file of the
/// corpus is covered even when the random cases miss it.
#[test]
fn every_fixture_survives_truncation_at_sixteen_points() {
    within(
        "truncation sweep",
        Duration::from_secs(120),
        PRODUCTION_STACK,
        || {
            for (name, text) in fixtures() {
                for k in 0..16 {
                    let cut = floor_char_boundary(text, text.len() * k / 16);
                    let r = std::panic::catch_unwind(|| analyse(&text[..cut]));
                    assert!(r.is_ok(), "{name} cut at byte {cut} panicked");
                }
            }
        },
    );
}

// ---------------------------------------------------------------------------
// (d) deep nesting, on a default 2 MB thread stack.

const DEPTH: usize = 20_000;

/// A complete threaded program around `body`, the worker's statements.
fn program(globals: &str, body: &str) -> String {
    format!(
        "#include <pthread.h>\nint x, y;\npthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n{globals}\n\
         void *worker(void *arg) {{\n{body}\n    return 0;\n}}\n\
         int main(void) {{\n    pthread_t t1, t2;\n    pthread_create(&t1, 0, worker, 0);\n    pthread_create(&t2, 0, worker, 0);\n    \
         y = 1;\n    pthread_join(t1, 0);\n    pthread_join(t2, 0);\n    return 0;\n}}\n"
    )
}

/// Analyses a deeply nested program on a default-sized stack and checks
/// that the unguarded `y = 2;` placed before the nesting is still reported
/// (the analysis degraded around the deep part, not wholesale).
fn deep(what: &str, globals: &str, nested: String) -> Outcome {
    let text = program(globals, &format!("    y = 2;\n{nested}"));
    let name = what.to_string();
    let out = within(what, HANG_LIMIT, DEFAULT_STACK, move || analyse(&text));
    assert!(
        out.races.iter().any(|r| r.var == "y"),
        "{name}: the race on `y` outside the nesting was lost: {:?}",
        out.races.iter().map(|r| &r.var).collect::<Vec<_>>()
    );
    eprintln!(
        "[measured] {name}: {:?}, {} races, incomplete: {:?}",
        out.elapsed,
        out.races.len(),
        out.incomplete
    );
    out
}

#[test]
fn deep_parentheses() {
    isolated("deep_parentheses", || {
        deep(
            "20k parentheses",
            "",
            format!("    x = {}x{};", "(".repeat(DEPTH), ")".repeat(DEPTH)),
        );
    });
}

#[test]
fn deep_braces() {
    isolated("deep_braces", || {
        deep(
            "20k braces",
            "",
            format!("{} x++; {}", "{".repeat(DEPTH), "}".repeat(DEPTH)),
        );
    });
}

#[test]
fn deep_if_statements() {
    isolated("deep_if_statements", || {
        deep(
            "20k nested if",
            "",
            format!("{} x++;", "if (x) ".repeat(DEPTH)),
        );
        deep(
            "20k nested if blocks",
            "",
            format!("{} x++; {}", "if (x) { ".repeat(DEPTH), "}".repeat(DEPTH)),
        );
        deep(
            "20k else-if chain",
            "",
            format!("if (x) x++; {} x--;", "else if (x) x++; ".repeat(DEPTH)),
        );
    });
}

#[test]
fn deep_expressions_and_initializers() {
    isolated("deep_expressions_and_initializers", || {
        deep(
            "20k-term sum",
            "",
            format!("    x = {}1;", "x + ".repeat(DEPTH)),
        );
        deep(
            "20k unary operators",
            "",
            format!("    x = {}x;", "- ".repeat(DEPTH)),
        );
        deep(
            "20k nested initializer",
            &format!("int deep[1] = {}0{};", "{".repeat(DEPTH), "}".repeat(DEPTH)),
            "    x++;".into(),
        );
        deep(
            "20k nested casts",
            "",
            format!("    x = {}x;", "(int)".repeat(DEPTH)),
        );
    });
}

#[test]
fn deep_call_chain() {
    isolated("deep_call_chain", || {
        let decls: String = (0..DEPTH).map(|i| format!("void f{i}(void);\n")).collect();
        let defs: String = (0..DEPTH)
            .map(|i| {
                format!(
                    "void f{i}(void) {{ x++; f{}(); }}\n",
                    (i + 1).min(DEPTH - 1)
                )
            })
            .collect();
        deep(
            "20k-deep call chain",
            &format!("{decls}{defs}"),
            "    f0();".into(),
        );
    });
}

/// The lowering skips syntax nested deeper than its budget and marks the
/// function truncated; [`Analysis::incomplete`] is where a client learns
/// that the results of such a function are partial.
#[test]
fn a_truncated_lowering_is_reported_by_incomplete() {
    within("truncated lowering", HANG_LIMIT, PRODUCTION_STACK, || {
        let text = program("", &format!("    y = 2;\n{} x++;", "if (x) ".repeat(DEPTH)));
        let mut host = AnalysisHost::new(Config::default());
        host.set_file_text(&path(), text.as_str());
        let analysis = host.snapshot();
        let (db, ws) = (analysis.db(), analysis.workspace());
        let truncated: Vec<String> = ws
            .files(db)
            .iter()
            .flat_map(|f| {
                racelens_analysis::db::file_functions(db, ws, *f)
                    .iter()
                    .copied()
            })
            .filter(|&fid| {
                racelens_analysis::db::function_summary(db, fid)
                    .ir
                    .truncated
            })
            .map(|fid| fid.name(db).to_string())
            .collect();
        assert_eq!(
            truncated,
            ["worker"],
            "the lowering budget is hit in `worker` only"
        );
        let incomplete = analysis.incomplete();
        assert!(
            incomplete.iter().any(|i| i.site.func == "worker"),
            "`worker` was lowered only in part, but incomplete() says {incomplete:?}"
        );
    });
}

// ---------------------------------------------------------------------------
// (e) programs that stress the analysis' budgets, each in its own process.

fn stress(what: &str, text: String) -> Outcome {
    let name = what.to_string();
    let out = within(what, HANG_LIMIT, PRODUCTION_STACK, move || analyse(&text));
    eprintln!(
        "[measured] {name}: {:?}, {} races, incomplete: {:?}",
        out.elapsed,
        out.races.len(),
        out.incomplete
    );
    out
}

fn vars(out: &Outcome) -> Vec<&str> {
    out.races.iter().map(|r| r.var.as_str()).collect()
}

#[test]
fn a_hundred_thousand_threads_in_nested_loops() {
    isolated("a_hundred_thousand_threads_in_nested_loops", || {
        let out = stress(
            "100k threads in nested loops",
            program(
                "pthread_t ts[1000][100];\nvoid *inner(void *a) { x++; return 0; }",
                "    for (int i = 0; i < 1000; i++)\n        for (int j = 0; j < 100; j++)\n            pthread_create(&ts[i][j], 0, inner, 0);",
            ),
        );
        assert!(
            vars(&out).contains(&"x"),
            "the `inner` threads race on `x`: {:?}",
            vars(&out)
        );
    });
}

#[test]
fn more_thread_creation_sites_than_the_budget_are_reported_incomplete() {
    isolated(
        "more_thread_creation_sites_than_the_budget_are_reported_incomplete",
        || {
            let sites: String = (0..2_000)
                .map(|i| format!("    pthread_create(&ts[{i}], 0, inner, 0);\n"))
                .collect();
            let out = stress(
                "2000 creation sites",
                program(
                    "pthread_t ts[2000];\nvoid *inner(void *a) { x++; return 0; }",
                    &sites,
                ),
            );
            assert!(
                out.incomplete
                    .iter()
                    .any(|i| i.contains("too many threads")),
                "expected the thread budget in incomplete(): {:?}",
                out.incomplete
            );
            assert!(vars(&out).contains(&"x"));
        },
    );
}

#[test]
fn recursion_cycles() {
    isolated("recursion_cycles", || {
        let globals = "int depth;\n\
            void g(int n);\nvoid f(int n) { pthread_mutex_lock(&m); x++; pthread_mutex_unlock(&m); if (n) g(n - 1); }\n\
            void g(int n) { y++; if (n) f(n - 1); }\n\
            void self(int n) { if (n) self(n - 1); depth++; }\n\
            void (*fp)(int) = f;\nvoid h(int n) { if (n) fp(n); }";
        let out = stress(
            "f -> g -> f cycle",
            program(globals, "    f(3);\n    self(4);\n    h(2);"),
        );
        assert!(
            vars(&out).contains(&"y") && vars(&out).contains(&"depth"),
            "accesses inside the cycles are analysed: {:?}",
            vars(&out)
        );
        assert!(
            !vars(&out).contains(&"x"),
            "`x` is always under `m`: {:?}",
            vars(&out)
        );
    });
}

#[test]
fn a_long_call_cycle() {
    isolated("a_long_call_cycle", || {
        let n = 2_000;
        let decls: String = (0..n).map(|i| format!("void f{i}(int);\n")).collect();
        let defs: String = (0..n)
            .map(|i| {
                format!(
                    "void f{i}(int k) {{ x++; if (k) f{}(k - 1); }}\n",
                    (i + 1) % n
                )
            })
            .collect();
        let out = stress(
            "2000-function call cycle",
            program(&format!("{decls}{defs}"), "    f0(5);"),
        );
        assert!(vars(&out).contains(&"x"));
    });
}

const LOCKS: usize = 50_000;

/// One worker takes all 50,000 locks, touches `x`, and releases them.
#[test]
fn fifty_thousand_locks_held_at_once() {
    isolated("fifty_thousand_locks_held_at_once", || {
        let locks: String = (0..LOCKS)
            .map(|i| format!("pthread_mutex_t m{i} = PTHREAD_MUTEX_INITIALIZER;\n"))
            .collect();
        let lock = (0..LOCKS).map(|i| format!("    pthread_mutex_lock(&m{i});\n"));
        let unlock = (0..LOCKS)
            .rev()
            .map(|i| format!("    pthread_mutex_unlock(&m{i});\n"));
        let body: String = lock
            .chain(["    x++;\n".to_string()])
            .chain(unlock)
            .collect();
        let out = stress("50k locks held at once", program(&locks, &body));
        assert!(
            !vars(&out).contains(&"x") || !out.incomplete.is_empty(),
            "`x` is guarded unless the analysis gave up and said so"
        );
    });
}

/// 50,000 counters, each under its own lock.
#[test]
fn fifty_thousand_lock_unlock_pairs() {
    isolated("fifty_thousand_lock_unlock_pairs", || {
        let globals: String = (0..LOCKS)
            .map(|i| format!("pthread_mutex_t m{i} = PTHREAD_MUTEX_INITIALIZER;\nint c{i};\n"))
            .collect();
        let body: String = (0..LOCKS)
            .map(|i| {
                format!("    pthread_mutex_lock(&m{i}); c{i}++; pthread_mutex_unlock(&m{i});\n")
            })
            .collect();
        let out = stress("50k lock/unlock pairs", program(&globals, &body));
        assert!(
            vars(&out).iter().all(|v| !v.starts_with('c')) || !out.incomplete.is_empty(),
            "every `cN` is guarded unless the analysis gave up and said so"
        );
    });
}

#[test]
fn macros_that_expand_into_each_other() {
    isolated("macros_that_expand_into_each_other", || {
        // E30 would expand to 2^30 statements without a bound.
        let doubling: String = (1..=30)
            .map(|k| format!("#define E{k}(v) E{}(v); E{}(v)\n", k - 1, k - 1))
            .collect();
        let globals = format!(
            "#define A B\n#define B A\n#define F(v) G(v)\n#define G(v) F(v)\n#define SELF SELF + 1\n#define LOCK(l) LOCK(l)\n\
             #define E0(v) v++\n{doubling}#define GUARDED(v) pthread_mutex_lock(&m); v++; pthread_mutex_unlock(&m)"
        );
        let body = "    y = 2;\n    A;\n    B = 1;\n    F(x);\n    G(x) = 2;\n    x = SELF;\n    LOCK(&m);\n    E30(x);\n    GUARDED(x);";
        let out = stress(
            "mutually recursive and exponential macros",
            program(&globals, body),
        );
        assert!(
            vars(&out).contains(&"y"),
            "the race on `y` next to the macros was lost: {:?}",
            vars(&out)
        );
    });
}
