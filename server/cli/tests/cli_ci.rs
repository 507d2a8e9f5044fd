//! `racelens check` as CI and command-line users meet it (issue 25): exit
//! codes and notices, SARIF for code scanning (fingerprints, relative URIs,
//! rules, invocations, validated against the OASIS SARIF 2.1.0 schema),
//! suppression comments, baselines, colour and the other options, and the
//! human output's details. Every test spawns the binary.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `counter` is written by the worker under `m` and by main without it.
const RACY: &str = "#include <pthread.h>
int counter;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
void *worker(void *arg) {
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    counter++;
    pthread_join(t, 0);
    return 0;
}
";

/// Two threads from one function, both writing `hits` unguarded, and a
/// heap object both write.
const TWO_THREADS: &str = "#include <pthread.h>
#include <stdlib.h>
int hits;
void *worker(void *arg) {
    int *p = arg;
    *p = 1;
    hits++;
    return 0;
}
int main(void) {
    pthread_t a, b;
    int *shared = malloc(sizeof(int));
    pthread_create(&a, 0, worker, shared);
    pthread_create(&b, 0, worker, shared);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
";

fn racelens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_racelens"))
}

/// A fresh, canonical directory with the given files.
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("racelens-ci-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, text) in files {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::canonicalize(&dir).unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    racelens()
        .current_dir(dir)
        .arg("check")
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sarif(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--format", "sarif"];
    all.extend_from_slice(args);
    let o = run(dir, &all);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("bad SARIF ({e}): {}\n{}", stdout(&o), stderr(&o)));
    (o.status.code().unwrap(), v)
}

fn json(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let o = run(dir, &all);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}\n{}", stdout(&o), stderr(&o)));
    (o.status.code().unwrap(), v)
}

fn results(v: &Value) -> &Vec<Value> {
    v["runs"][0]["results"].as_array().unwrap()
}

fn notifications(v: &Value) -> &Vec<Value> {
    v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap()
}

/// The notices of `check --format json` output.
fn notices(v: &Value) -> &Vec<Value> {
    v["notices"].as_array().unwrap()
}

fn fingerprints(v: &Value) -> Vec<String> {
    let mut f: Vec<String> = results(v)
        .iter()
        .map(|r| {
            r["partialFingerprints"]["racelens/v1"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    f.sort();
    f
}

fn validate(v: &Value) {
    // The OASIS schema (as shipped by serde-sarif) has one pattern that
    // ECMA-262 accepts but Rust's regex engines reject (an unescaped `]`);
    // it constrains `run.language`, which racelens does not write.
    let text = include_str!("data/sarif-schema-2.1.0.json").replace(
        "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$",
        "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$",
    );
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF violates the 2.1.0 schema: {errors:#?}"
    );
}

// ---------------------------------------------------------------------------
// Exit codes and messages

#[test]
fn a_failed_write_exits_2_with_a_message() {
    let dir = project("full", &[("race.c", RACY)]);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    for format in ["human", "json", "sarif"] {
        let o = racelens()
            .current_dir(&dir)
            .args(["check", "--format", format, "race.c"])
            .stdout(Stdio::from(full.try_clone().unwrap()))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{format}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot write the report"),
            "{format}: {}",
            stderr(&o)
        );
    }
    // -o to a folder that does not exist fails the same way.
    let o = run(&dir, &["-o", "no/such/dir/out.txt", "race.c"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot create"), "{}", stderr(&o));
}

#[test]
fn syntax_errors_are_reported_in_every_format() {
    let broken = RACY.replace("pthread_t t;", "pthread_t t;\n    int = ;");
    let dir = project("syntax", &[("broken.c", &broken)]);
    let o = run(&dir, &["broken.c"]);
    assert_eq!(o.status.code(), Some(1), "still analysed: {}", stdout(&o));
    assert!(
        stdout(&o).contains("warning: broken.c:12:"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(": syntax error, analysed in part"),
        "{}",
        stdout(&o)
    );
    let (_, j) = json(&dir, &["broken.c"]);
    let n = &j["notices"][0];
    assert_eq!(n["kind"], "syntax-error", "{j}");
    assert_eq!(n["location"]["line"], 12, "{j}");
    let (_, s) = sarif(&dir, &["broken.c"]);
    let notes = notifications(&s);
    assert_eq!(notes[0]["descriptor"]["id"], "syntax-error", "{s}");
    assert_eq!(
        notes[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        12
    );
    assert!(results(&s).iter().all(|r| r["ruleId"] == "data-race"));
    validate(&s);
}

#[test]
fn a_function_whose_name_cannot_be_read_is_warned_about() {
    let src = "int shared;\nint ( /* nothing */ )(void) { shared++; return 0; }\nint main(void) { return 0; }\n";
    let dir = project("lostfn", &[("lostfn.c", src)]);
    let (_, j) = json(&dir, &["lostfn.c"]);
    let lost: Vec<&Value> = notices(&j)
        .iter()
        .filter(|n| n["kind"] == "function-lost")
        .collect();
    assert_eq!(lost.len(), 1, "{j}");
    assert_eq!(lost[0]["location"]["line"], 2, "{j}");
    let (_, s) = sarif(&dir, &["lostfn.c"]);
    assert!(
        notifications(&s)
            .iter()
            .any(|n| n["descriptor"]["id"] == "function-lost"),
        "{s}"
    );
    validate(&s);
}

#[test]
fn a_main_the_parser_lost_is_warned_about() {
    // tree-sitter's recovery swallows the definitions after this initializer.
    let src = "#include <pthread.h>\nstatic int t[2] = { ((int (*)[ 1, 2 };\nint\nmain(void)\n{\n    return 0;\n}\n";
    let dir = project("lostmain", &[("lost.c", src)]);
    let o = run(&dir, &["lost.c"]);
    assert!(
        stdout(&o).contains(
            "warning: lost.c:4:1: `main` is defined here but the parser lost its definition"
        ),
        "{}",
        stdout(&o)
    );
    let (_, j) = json(&dir, &["lost.c"]);
    let kinds: Vec<&str> = notices(&j)
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"main-lost"), "{j}");
    let (_, s) = sarif(&dir, &["lost.c"]);
    assert!(
        notifications(&s)
            .iter()
            .any(|n| n["descriptor"]["id"] == "main-lost"),
        "{s}"
    );
    validate(&s);
    // A file whose main the parser keeps gets no such notice.
    let dir = project("keptmain", &[("kept.c", "int main(void) { return 0; }\n")]);
    let (_, j) = json(&dir, &["kept.c"]);
    assert!(!j.to_string().contains("main-lost"), "{j}");
}

#[test]
fn non_c_input_is_reported_not_counted_as_clean() {
    let dir = project(
        "nonc",
        &[("notes.md", "# Notes\n\nNot C.\n"), ("race.c", RACY)],
    );
    std::fs::write(dir.join("blob.c"), b"\x7fELF\x02\x01\x01\0\0\0\0binary").unwrap();
    let o = run(&dir, &["notes.md"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("notes.md: not a C source file (.md)"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("no C source to analyse"),
        "{}",
        stderr(&o)
    );
    let o = run(&dir, &["blob.c"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("binary"), "{}", stderr(&o));
    // Next to a C file: a warning, and the C file is analysed.
    let o = run(&dir, &["notes.md", "race.c"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("warning: notes.md: not a C source file"),
        "{}",
        stdout(&o)
    );
    let (_, s) = sarif(&dir, &["notes.md", "race.c"]);
    assert_eq!(notifications(&s)[0]["descriptor"]["id"], "not-c-source");
    validate(&s);
}

#[test]
fn incomplete_analyses_are_notifications_not_results() {
    let deep = format!(
        "#include <pthread.h>\nint x, y;\nvoid *worker(void *arg) {{\n    y = 2;\n{} x++;\n    return 0;\n}}\nint main(void) {{\n    pthread_t t1, t2;\n    pthread_create(&t1, 0, worker, 0);\n    pthread_create(&t2, 0, worker, 0);\n    return 0;\n}}\n",
        "if (x) ".repeat(3000)
    );
    let dir = project("incomplete", &[("deep.c", &deep)]);
    let (_, s) = sarif(&dir, &["deep.c"]);
    assert!(
        results(&s).iter().all(|r| r["ruleId"] == "data-race"),
        "{s}"
    );
    assert!(
        notifications(&s)
            .iter()
            .any(|n| n["descriptor"]["id"] == "analysis-incomplete" && n["level"] == "note"),
        "{s}"
    );
    validate(&s);
    let (_, j) = json(&dir, &["deep.c"]);
    assert!(
        notices(&j)
            .iter()
            .any(|n| n["kind"] == "analysis-incomplete" && n["function"] == "worker"),
        "{j}"
    );
    let o = run(&dir, &["--quiet", "deep.c"]);
    assert!(
        stdout(&o).contains("1 function analysed in part"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn help_lists_the_exit_codes() {
    let o = racelens().args(["check", "--help"]).output().unwrap();
    let h = stdout(&o);
    assert!(h.contains("Exit codes:"), "{h}");
    for code in ["  0  ", "  1  ", "  2  "] {
        assert!(h.contains(code), "{h}");
    }
    for opt in [
        "--color",
        "--jobs",
        "--quiet",
        "--output",
        "--confidence",
        "--exclude",
        "--build-path",
        "--sarif-root",
        "--baseline",
        "--write-baseline",
    ] {
        assert!(h.contains(opt), "{opt} missing from {h}");
    }
}

// ---------------------------------------------------------------------------
// SARIF for code scanning

#[test]
fn sarif_is_valid_relative_and_described() {
    let dir = project("sarif", &[("src/race.c", RACY)]);
    let (code, s) = sarif(&dir, &["."]);
    assert_eq!(code, 1);
    validate(&s);
    let run = &s["runs"][0];
    let root = format!("file://{}/", dir.display());
    assert_eq!(run["originalUriBaseIds"]["SRCROOT"]["uri"], root.as_str());
    for r in results(&s) {
        let a = &r["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(a["uri"], "src/race.c", "{r}");
        assert_eq!(a["uriBaseId"], "SRCROOT", "{r}");
        for rel in r["relatedLocations"].as_array().unwrap() {
            assert_eq!(
                rel["physicalLocation"]["artifactLocation"]["uri"],
                "src/race.c"
            );
        }
        assert!(r["partialFingerprints"]["racelens/v1"].is_string(), "{r}");
    }
    let rule = &run["tool"]["driver"]["rules"][0];
    assert_eq!(rule["id"], "data-race");
    for key in ["name", "shortDescription", "fullDescription", "helpUri"] {
        assert!(!rule[key].is_null(), "{key} missing: {rule}");
    }
    assert!(rule["help"]["text"].as_str().unwrap().contains("data race"));
    assert!(rule["help"]["markdown"].as_str().unwrap().contains("fix"));
    assert!(rule["helpUri"]
        .as_str()
        .unwrap()
        .starts_with("https://github.com/racelens/racelens/blob/main/docs/"));
    assert_eq!(rule["defaultConfiguration"]["level"], "warning");
    assert_eq!(
        rule["properties"]["tags"],
        serde_json::json!(["concurrency", "correctness"])
    );
    let inv = &run["invocations"][0];
    assert!(
        inv["commandLine"].as_str().unwrap().contains("check"),
        "{inv}"
    );
    assert_eq!(inv["executionSuccessful"], true);
    assert_eq!(
        inv["workingDirectory"]["uri"],
        format!("file://{}/", dir.display()).as_str()
    );
    let (t0, t1) = (
        inv["startTimeUtc"].as_str().unwrap(),
        inv["endTimeUtc"].as_str().unwrap(),
    );
    assert!(t0.ends_with('Z') && t0 <= t1, "{t0} {t1}");

    // --sarif-root moves %SRCROOT%; a file named from its folder is
    // relative to the current folder by default.
    let (_, s) = sarif(&dir, &["--sarif-root", "src", "src/race.c"]);
    let uri = &results(&s)[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
    assert_eq!(uri, "race.c");
    let (_, s) = sarif(&dir, &["src/race.c"]);
    let uri = &results(&s)[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
    assert_eq!(uri, "src/race.c");
    // Files outside %SRCROOT% keep an absolute URI.
    let (_, s) = sarif(&dir.join("src"), &["--sarif-root", "/proc", "race.c"]);
    let uri = results(&s)[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap();
    assert!(uri.starts_with("file:///"), "{uri}");
    validate(&s);
}

#[test]
fn explain_sarif_is_valid_too() {
    let dir = project("explain", &[("race.c", RACY)]);
    let (_, s) = sarif(&dir, &["--explain", "race.c"]);
    assert!(results(&s).iter().any(|r| r["codeFlows"].is_array()), "{s}");
    validate(&s);
}

#[test]
fn fingerprints_survive_an_unrelated_edit_above() {
    let dir = project("fp", &[("race.c", RACY), ("two.c", TWO_THREADS)]);
    let both = || {
        let (_, a) = sarif(&dir, &["race.c"]);
        let (_, b) = sarif(&dir, &["two.c"]);
        (a, b)
    };
    let (race_before, two_before) = both();
    let moved = format!(
        "/* a licence header\n   of several lines */\n#include <stdio.h>\nstatic int unrelated(int a) {{\n    return a + 1;\n}}\n{}",
        RACY.replace("    counter++;\n    pthread_join", "        counter++;\n\n    pthread_join")
    );
    std::fs::write(dir.join("race.c"), moved).unwrap();
    std::fs::write(dir.join("two.c"), format!("\n\n// moved\n{TWO_THREADS}")).unwrap();
    let (race_after, two_after) = both();
    let lines = |v: &Value| {
        results(v)
            .iter()
            .map(|r| r["locations"][0]["physicalLocation"]["region"]["startLine"].clone())
            .collect::<Vec<_>>()
    };
    assert_ne!(lines(&race_before), lines(&race_after), "the lines moved");
    assert_eq!(fingerprints(&race_before).len(), 2, "{race_before}");
    assert!(fingerprints(&two_before).len() >= 2, "{two_before}");
    assert_eq!(fingerprints(&race_before), fingerprints(&race_after));
    assert_eq!(fingerprints(&two_before), fingerprints(&two_after));
    for v in [&race_before, &two_before] {
        let mut unique = fingerprints(v);
        unique.dedup();
        assert_eq!(unique.len(), fingerprints(v).len(), "distinct: {v}");
    }
}

// ---------------------------------------------------------------------------
// Suppressions and baselines

#[test]
fn suppression_comments_on_the_line_above_and_on_the_line() {
    let above = RACY.replace(
        "    counter++;\n    pthread_join",
        "    // racelens: ignore[data-race]\n    counter++;\n    pthread_join",
    );
    let same = RACY.replace(
        "    counter++;\n    pthread_join",
        "    counter++; /* racelens: ignore */\n    pthread_join",
    );
    let other_rule = RACY.replace(
        "    counter++;\n    pthread_join",
        "    counter++; // racelens: ignore[other-rule]\n    pthread_join",
    );
    let dir = project(
        "suppress",
        &[
            ("above.c", &above),
            ("same.c", &same),
            ("other.c", &other_rule),
        ],
    );
    for f in ["above.c", "same.c"] {
        let o = run(&dir, &[f]);
        assert_eq!(o.status.code(), Some(1), "the worker's access remains");
        let out = stdout(&o);
        assert!(
            out.contains("1 racy access in 1 file, 1 suppressed"),
            "{out}"
        );
        let (_, s) = sarif(&dir, &[f]);
        let sup: Vec<&Value> = results(&s)
            .iter()
            .filter(|r| r["suppressions"].is_array())
            .collect();
        assert_eq!(sup.len(), 1, "{s}");
        assert_eq!(sup[0]["suppressions"][0]["kind"], "inSource");
        validate(&s);
        let (_, j) = json(&dir, &[f]);
        assert_eq!(j["races"].as_array().unwrap().len(), 1);
        assert_eq!(j["suppressed"].as_array().unwrap().len(), 1);
    }
    let o = run(&dir, &["other.c"]);
    assert!(stdout(&o).contains("2 racy accesses"), "{}", stdout(&o));
}

#[test]
fn a_suppression_on_the_declaration_covers_every_race_on_the_variable() {
    let decl = RACY.replace("int counter;", "int counter; // racelens: ignore");
    let dir = project("suppress-decl", &[("decl.c", &decl)]);
    let o = run(&dir, &["decl.c"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("0 racy accesses in 1 file, 2 suppressed"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("data race"), "{}", stdout(&o));
}

#[test]
fn baseline_round_trip_reports_exactly_the_new_race() {
    let dir = project("baseline", &[("race.c", RACY)]);
    let o = run(&dir, &["--write-baseline", "base.sarif", "race.c"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("wrote a baseline of 2 races"),
        "{}",
        stderr(&o)
    );
    let base: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("base.sarif")).unwrap()).unwrap();
    validate(&base);
    let o = run(&dir, &["--baseline", "base.sarif", "race.c"]);
    assert_eq!(o.status.code(), Some(0), "nothing new: {}", stdout(&o));
    assert!(
        stdout(&o).contains("0 racy accesses in 1 file, 2 in the baseline"),
        "{}",
        stdout(&o)
    );
    // An unrelated edit above and one new racy access: main writes
    // `counter` once more, unguarded.
    let grown = format!(
        "#include <stdio.h>\nint other;\n{}",
        RACY.replace(
            "    pthread_join(t, 0);",
            "    counter = 5;\n    pthread_join(t, 0);"
        )
    );
    std::fs::write(dir.join("race.c"), &grown).unwrap();
    let (code, s) = sarif(&dir, &["--baseline", "base.sarif", "race.c"]);
    assert_eq!(code, 1);
    validate(&s);
    assert_eq!(results(&s).len(), 1, "exactly one new result: {s}");
    let new = &results(&s)[0];
    assert_eq!(new["baselineState"], "new");
    assert_eq!(new["properties"]["variable"], "counter");
    let line = grown
        .lines()
        .position(|l| l.contains("counter = 5"))
        .unwrap()
        + 1;
    assert_eq!(
        new["locations"][0]["physicalLocation"]["region"]["startLine"],
        line
    );
    let (_, all) = sarif(&dir, &["race.c"]);
    assert_eq!(results(&all).len(), 3);
    // Human and JSON agree.
    let o = run(&dir, &["--baseline", "base.sarif", "race.c"]);
    assert!(
        stdout(&o).contains("1 racy access in 1 file, 2 in the baseline"),
        "{}",
        stdout(&o)
    );
    let (_, j) = json(&dir, &["--baseline", "base.sarif", "race.c"]);
    assert_eq!(j["races"].as_array().unwrap().len(), 1);
    assert_eq!(j["summary"]["inBaseline"], 2);
    // A missing baseline is an error.
    let o = run(&dir, &["--baseline", "missing.sarif", "race.c"]);
    assert_eq!(o.status.code(), Some(2));
}

// ---------------------------------------------------------------------------
// Terminal and options

#[test]
fn colour_follows_the_option_and_no_color() {
    let dir = project("color", &[("race.c", RACY)]);
    let plain = run(&dir, &["race.c"]);
    assert!(!stdout(&plain).contains('\x1b'), "piped output is plain");
    let always = run(&dir, &["--color", "always", "race.c"]);
    assert!(stdout(&always).contains("\x1b["), "{}", stdout(&always));
    let never = run(&dir, &["--color", "never", "race.c"]);
    assert!(!stdout(&never).contains('\x1b'));
    let o = racelens()
        .current_dir(&dir)
        .args(["check", "--color", "auto", "race.c"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!stdout(&o).contains('\x1b'));
}

#[test]
fn quiet_output_jobs_and_confidence() {
    let dir = project("opts", &[("race.c", RACY), ("two.c", TWO_THREADS)]);
    let o = run(&dir, &["--quiet", "race.c"]);
    assert_eq!(stdout(&o), "racelens: 2 racy accesses in 1 file\n");
    assert_eq!(o.status.code(), Some(1));
    let o = run(&dir, &["-o", "report.txt", "--jobs", "1", "race.c"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    let report = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(report.contains("data race on `counter`"), "{report}");
    let (_, all) = json(&dir, &["two.c"]);
    let (must_code, must) = json(&dir, &["--confidence", "must", "two.c"]);
    let n = |v: &Value| v["races"].as_array().unwrap().len();
    let must_races = all["races"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["confidence"] == "must")
        .count();
    assert_eq!(n(&must), must_races);
    assert_eq!(must_code, if must_races == 0 { 0 } else { 1 });
    let (_, may) = json(&dir, &["--confidence", "may", "two.c"]);
    assert!(n(&must) <= n(&may) && n(&may) <= n(&all));
    let o = run(&dir, &["--jobs", "0", "race.c"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn exclude_and_build_path() {
    let dir = project(
        "exclude",
        &[
            ("race.c", RACY),
            ("vendor/lib.c", TWO_THREADS),
            ("other/x.c", TWO_THREADS),
        ],
    );
    let files = |v: &Value| v["summary"]["files"].as_u64().unwrap();
    let (_, j) = json(&dir, &["."]);
    assert_eq!(files(&j), 3);
    let (_, j) = json(&dir, &["--exclude", "vendor/**", "."]);
    assert_eq!(files(&j), 2);
    let (_, j) = json(&dir, &["--exclude", "vendor/**", "--exclude", "x.c", "."]);
    assert_eq!(files(&j), 1);
    // compile_commands.json in build/ (the default) or in -p DIR names the .c files.
    let cc = format!(
        "[{{\"directory\": \"{}\", \"file\": \"race.c\", \"command\": \"cc -c race.c\"}}]",
        dir.display()
    );
    std::fs::create_dir_all(dir.join("build")).unwrap();
    std::fs::write(dir.join("build/compile_commands.json"), &cc).unwrap();
    let (_, j) = json(&dir, &["."]);
    assert_eq!(files(&j), 1, "build/compile_commands.json: {j}");
    std::fs::rename(dir.join("build"), dir.join("out")).unwrap();
    let (_, j) = json(&dir, &["."]);
    assert_eq!(files(&j), 3);
    let (_, j) = json(&dir, &["-p", "out", "."]);
    assert_eq!(files(&j), 1, "-p out: {j}");
}

// ---------------------------------------------------------------------------
// Human output details

#[test]
fn human_output_details() {
    let dir = project("human", &[("src/two.c", TWO_THREADS)]);
    let o = run(&dir.join("src"), &["two.c"]);
    let out = stdout(&o);
    // Both threads come from one creation line each, listed once, in order.
    for report in out.split("data-race]").skip(1) {
        let notes: Vec<&str> = report
            .lines()
            .filter(|l| l.contains("is created at"))
            .collect();
        let mut sorted = notes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(notes, sorted, "{out}");
    }
    assert!(out.contains("is created at two.c:13"), "{out}");
    assert!(!out.contains("in `main`)"), "no nested backticks: {out}");
    // From the parent folder, paths are relative to it.
    let o = run(&dir, &["src/two.c"]);
    assert!(
        stdout(&o).contains("is created at src/two.c:13"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("┌─ src/two.c:"), "{}", stdout(&o));
}

#[test]
fn json_documents_columns_and_end_positions() {
    let dir = project("jsoncols", &[("race.c", RACY)]);
    let (_, j) = json(&dir, &["--explain", "race.c"]);
    assert_eq!(j["columnKind"], "utf16CodeUnits");
    let r = &j["races"][0];
    for key in ["line", "column", "endLine", "endColumn", "function"] {
        assert!(!r["location"][key].is_null(), "{key}: {r}");
    }
    assert!(r["fingerprint"].is_string());
    assert!(
        j["races"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["schedule"].is_array()),
        "{j}"
    );
}

/// Callbacks handed in a table of functions to code without a body that
/// is not known to start threads may never run concurrently: their races
/// are reported as *may*, while those of real threads stay *must*.
#[test]
fn callbacks_in_a_table_handed_to_unknown_code_are_may() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/ops_table_unknown_registrar.c")
        .canonicalize()
        .unwrap();
    let dir = fixture.parent().unwrap().to_path_buf();
    let (_, j) = json(&dir, &[fixture.to_str().unwrap()]);
    let races = j["races"].as_array().unwrap();
    let confidence = |var: &str| -> Vec<&str> {
        races
            .iter()
            .filter(|r| r["variable"] == var)
            .map(|r| r["confidence"].as_str().unwrap())
            .collect()
    };
    assert_eq!(confidence("counter"), ["may", "may", "may"], "{j}");
    assert_eq!(confidence("total"), ["must"], "{j}");
}

/// A signal handler is a concurrent context even in a program without
/// threads: its race is reported once, at the handler's access, named as
/// a handler, with a note where it is installed; a `volatile sig_atomic_t`
/// flag it shares with `main` is not reported.
#[test]
fn signal_handler_races_are_reported_at_the_handler() {
    let src = "#include <signal.h>\n\
static volatile sig_atomic_t stop;\n\
static long hits;\n\
static void on_int(int sig) { (void)sig; hits++; stop = 1; }\n\
int main(void) {\n\
    signal(SIGINT, on_int);\n\
    while (!stop)\n\
        hits = 0;\n\
    return 0;\n\
}\n";
    let dir = project("signal", &[("sig.c", src)]);
    let o = run(&dir, &["sig.c"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("data race on `hits`: write in thread `on_int (signal handler)`"),
        "{out}"
    );
    assert!(
        out.contains("signal handler `on_int` is installed at sig.c:6"),
        "{out}"
    );
    assert!(!out.contains("`stop`"), "{out}");
    let (_, j) = json(&dir, &["sig.c"]);
    let races = j["races"].as_array().unwrap();
    let lines: Vec<u64> = races
        .iter()
        .map(|r| r["location"]["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![4], "{j}");
}

/// A race on a local says whose local it is, in the message; the JSON
/// `variable` keeps the plain name.
#[test]
fn a_local_is_named_with_its_function() {
    let src = "#include <pthread.h>\n\
static void *w(void *p) { int *c = p; (*c)++; return 0; }\n\
int main(void) {\n\
    int count = 0;\n\
    pthread_t t;\n\
    pthread_create(&t, 0, w, &count);\n\
    count++;\n\
    pthread_join(t, 0);\n\
    return count;\n\
}\n";
    let dir = project("owner", &[("own.c", src)]);
    let out = stdout(&run(&dir, &["own.c"]));
    assert!(
        out.contains("data race on `count` (local of `main`): write in thread `w`"),
        "{out}"
    );
    let (_, j) = json(&dir, &["own.c"]);
    for r in j["races"].as_array().unwrap() {
        assert_eq!(r["variable"], "count", "{j}");
        assert!(
            r["message"].as_str().unwrap().contains("(local of `main`)"),
            "{j}"
        );
    }
}

/// Allocations succeed unless `[analysis] malloc_may_fail = true`: by
/// default a write on the path where `malloc` returned null is not walked
/// (as in Goblint, whose `sem.malloc.fail` is off by default); with the
/// switch it is, and its race is reported.
#[test]
fn allocation_failure_paths_follow_the_config() {
    let src = "#include <pthread.h>\n\
#include <stdlib.h>\n\
static int failures;\n\
static void *w(void *p) {\n\
    char *b = malloc(64);\n\
    if (!b) {\n\
        failures++;\n\
        return p;\n\
    }\n\
    free(b);\n\
    return p;\n\
}\n\
int main(void) {\n\
    pthread_t t1, t2;\n\
    pthread_create(&t1, 0, w, 0);\n\
    pthread_create(&t2, 0, w, 0);\n\
    pthread_join(t1, 0);\n\
    pthread_join(t2, 0);\n\
    return failures;\n\
}\n";
    let dir = project("oom-default", &[("oom.c", src)]);
    assert_eq!(race_lines(&dir, "oom.c"), Vec::<u64>::new());
    let dir = project(
        "oom-may-fail",
        &[
            ("oom.c", src),
            ("racelens.toml", "[analysis]\nmalloc_may_fail = true\n"),
        ],
    );
    assert_eq!(race_lines(&dir, "oom.c"), vec![7]);
}

/// Blocking locks succeed unless `[analysis] lock_may_fail = true`: by
/// default the branch on a failed `pthread_mutex_lock` is not walked (as
/// in Goblint, whose `sem.lock.fail` is off by default); with the switch
/// it is, and its unlocked write races with the locked one. A timed lock
/// keeps its failure branch either way.
#[test]
fn lock_failure_paths_follow_the_config() {
    let src = "#include <pthread.h>\n\
#include <time.h>\n\
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n\
static int n, timeouts;\n\
static void *w(void *p) {\n\
    if (pthread_mutex_lock(&m) != 0) {\n\
        n++;\n\
        return p;\n\
    }\n\
    n++;\n\
    pthread_mutex_unlock(&m);\n\
    struct timespec ts = {0, 0};\n\
    if (pthread_mutex_timedlock(&m, &ts) != 0) {\n\
        timeouts++;\n\
        return p;\n\
    }\n\
    pthread_mutex_unlock(&m);\n\
    return p;\n\
}\n\
int main(void) {\n\
    pthread_t t1, t2;\n\
    pthread_create(&t1, 0, w, 0);\n\
    pthread_create(&t2, 0, w, 0);\n\
    pthread_join(t1, 0);\n\
    pthread_join(t2, 0);\n\
    return n + timeouts;\n\
}\n";
    let dir = project("lockfail-default", &[("lf.c", src)]);
    assert_eq!(race_lines(&dir, "lf.c"), vec![14]);
    let dir = project(
        "lockfail-may-fail",
        &[
            ("lf.c", src),
            ("racelens.toml", "[analysis]\nlock_may_fail = true\n"),
        ],
    );
    assert_eq!(race_lines(&dir, "lf.c"), vec![7, 10, 14]);
}

/// The lines of the races `check --format json` reports on `file` in `dir`,
/// in report order.
fn race_lines(dir: &Path, file: &str) -> Vec<u64> {
    let (_, j) = json(dir, &[file]);
    j["races"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["location"]["line"].as_u64().unwrap())
        .collect()
}
