//! Translation units, programs and the preprocessor, end to end: each
//! folder of `fixtures-programs/` is analysed with `racelens check --format
//! json FOLDER`, every `// RACE` line must be reported and no `// NORACE`
//! line may be, and each folder's own expectations (program names, notes,
//! `--list-programs`) are checked. The fixtures' ground truth is C11 and
//! was checked with ThreadSanitizer (see each folder's main file).

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures-programs");

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_racelens")
}

fn folder(name: &str) -> PathBuf {
    std::fs::canonicalize(Path::new(ROOT).join(name)).expect("fixture folder")
}

/// (file name, line) of every report, and the whole JSON.
fn check(dir: &Path, extra: &[&str]) -> (BTreeSet<(String, usize)>, Value) {
    let out = Command::new(bin())
        .args(["check", "--format", "json"])
        .args(extra)
        .arg(dir)
        .output()
        .expect("run racelens");
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json output");
    let mut lines = BTreeSet::new();
    for r in v["races"].as_array().expect("races") {
        let file = r["location"]["file"].as_str().unwrap_or("");
        let name = Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        lines.insert((name, r["location"]["line"].as_u64().unwrap_or(0) as usize));
    }
    (lines, v)
}

/// The annotated lines of every C file under `dir`: (file name, line, race?).
fn annotations(dir: &Path) -> Vec<(String, usize, bool)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read fixture folder") {
        let p = e.expect("entry").path();
        if !matches!(p.extension().and_then(|x| x.to_str()), Some("c" | "h")) {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read fixture");
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        for (i, line) in text.lines().enumerate() {
            let Some(at) = line.find("//") else { continue };
            let c = &line[at + 2..];
            if c.contains("RACE") {
                out.push((name.clone(), i + 1, !c.contains("NORACE")));
            }
        }
    }
    out
}

fn assert_annotations(dir: &Path, extra: &[&str]) -> Value {
    let (reported, v) = check(dir, extra);
    let ann = annotations(dir);
    assert!(!ann.is_empty(), "{}: no annotations", dir.display());
    for (file, line, race) in ann {
        let got = reported.contains(&(file.clone(), line));
        assert_eq!(
            got,
            race,
            "{}/{file}:{line}: expected {}, reports: {reported:?}",
            dir.display(),
            if race { "a race" } else { "no race" }
        );
    }
    v
}

fn messages(v: &Value) -> Vec<String> {
    v["races"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap_or("").to_string())
        .collect()
}

fn notices(v: &Value) -> Vec<(String, String)> {
    v["notices"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    (
                        n["kind"].as_str().unwrap_or("").to_string(),
                        n["message"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn same_named_statics_are_two_objects() {
    assert_annotations(&folder("same_named_statics"), &[]);
}

/// A global assigned only a parameter of a unit's static function is judged
/// from that function's calls, not from those of another unit's function
/// of the same name (`walk/constants.rs`).
#[test]
fn a_static_setter_is_not_confused_with_a_namesake() {
    assert_annotations(&folder("static_setter"), &[]);
}

#[test]
fn an_extern_global_is_one_object_across_units() {
    assert_annotations(&folder("extern_global"), &[]);
}

#[test]
fn two_executables_are_two_programs() {
    let dir = folder("two_executables");
    let v = assert_annotations(&dir, &[]);
    let m = messages(&v);
    assert!(m.iter().all(|m| m.ends_with("(program `server`)")), "{m:?}");
    let list = Command::new(bin())
        .args(["check", "--list-programs"])
        .arg(&dir)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("program `report`: 2 files"), "{list}");
    assert!(list.contains("program `server`: 2 files"), "{list}");
}

#[test]
fn a_duplicate_definition_forks_the_program_and_is_noted() {
    let v = assert_annotations(&folder("duplicate_definition"), &[]);
    let n = notices(&v);
    assert!(
        n.iter().any(|(k, m)| k == "link-ambiguity"
            && m.contains("`log_event` is defined in log_file.c and log_null.c")),
        "{n:?}"
    );
    assert!(messages(&v)[0].contains("(program `main (with log_file.c)`)"));
}

#[test]
fn a_define_from_the_compilation_database_selects_the_locked_branch() {
    assert_annotations(&folder("threadsafe_db"), &[]);
    assert_annotations(&folder("threadsafe_nodb"), &[]);
    // The same define given on the command line has the same effect.
    let (reported, _) = check(&folder("threadsafe_nodb"), &["-DTHREADSAFE"]);
    assert!(reported.is_empty(), "{reported:?}");
}

#[test]
fn code_under_if_zero_is_not_analysed() {
    assert_annotations(&folder("if_zero"), &[]);
}

#[test]
fn a_configuration_macro_from_a_header_decides_a_conditional() {
    assert_annotations(&folder("config_header"), &[]);
}

#[test]
fn a_header_race_names_both_programs() {
    let v = assert_annotations(&folder("header_two_programs"), &[]);
    let m = messages(&v);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].ends_with("(programs `prog_one`, `prog_two`)"), "{m:?}");
}

#[test]
fn a_header_configured_differently_by_two_units_keeps_what_either_compiles() {
    // a_plain.c sorts first and does not define WITH_STATS: a view of its
    // inclusion alone would lose b_stats.c's race on `stats`.
    let v = assert_annotations(&folder("header_two_configs"), &[]);
    let n = notices(&v);
    assert!(
        n.iter().any(|(k, m)| k == "conditional-undecided"
            && m.contains(
                "decided differently by the units that include it (a_plain.c, b_stats.c)"
            )),
        "{n:?}"
    );
}

#[test]
fn racelens_toml_is_found_above_the_folder() {
    assert_annotations(&folder("toml_above/ws"), &[]);
}
