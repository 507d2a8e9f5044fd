//! Scores the `racelens` binary against the annotated programs in `fixtures/`.
//!
//! Every `fixtures/*.c` is one whole program. A line whose `//` comment holds
//! `RACE` expects a data-race report on that line; `NORACE` expects none. The
//! binary runs once per program as `racelens check --format sarif FILE`, and
//! every SARIF result whose ruleId starts with `data-race` counts as a report
//! on the `startLine` of its first location. This is the same scoring as
//! `shared/score/score.py`, so the two numbers agree.
//!
//! Annotations are ground truth: a line the analysis gets wrong stays wrong
//! here and is listed in the table this test prints. The test is a ratchet:
//! it fails when accuracy or recall drops below the floors below, so raise
//! them when the analysis improves.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Share of annotated lines scored right (both kinds) that must not be lost.
/// 0.97 over the 103 programs before issue 23's 33 TSan-checked programs
/// (volatile, partial join loops, launchers, parser traps, hand-made locks,
/// joins in helpers, per-thread array ranges) came in; 0.9619 with them,
/// 0.9713 once per-thread slots of one array were modelled; 0.9816 over
/// 176 programs once atomic operations were recorded as atomic accesses;
/// 0.9901 over 266 once launchers handed distinct globals or locals, and
/// functions storing one parameter into another's object, were told apart.
const FLOOR: f64 = 0.985;
/// Share of `RACE` lines that must be reported (0.9951 with them; 1.0
/// once a plain access racing with an atomic operation was reported).
const RECALL_FLOOR: f64 = 0.995;
/// The suite must stay at least this big.
const MIN_PROGRAMS: usize = 40;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Race,
    NoRace,
}

struct Annotation {
    line: usize,
    kind: Kind,
    /// `TODO` or `SKIP` in the comment: score.py scores such lines apart.
    todo: bool,
}

/// Reads the annotations the way score.py does: the text after the first
/// `//` of a line must contain `RACE`; `NORACE` in it makes it a no-race line.
fn annotations(text: &str) -> Vec<Annotation> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(at) = line.find("//") else { continue };
        let comment = &line[at + 2..];
        if !comment.contains("RACE") {
            continue;
        }
        let kind = if comment.contains("NORACE") {
            Kind::NoRace
        } else {
            Kind::Race
        };
        let todo = comment.contains("TODO") || comment.contains("SKIP");
        out.push(Annotation {
            line: i + 1,
            kind,
            todo,
        });
    }
    out
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Resolves a SARIF artifact URI to a real path, relative ones against the
/// current folder (as score.py does).
fn uri_to_path(uri: &str) -> PathBuf {
    let raw = match uri.strip_prefix("file://") {
        Some(rest) => percent_decode(rest),
        None => match uri.strip_prefix("file:") {
            Some(rest) => percent_decode(rest),
            None => std::env::current_dir()
                .unwrap_or_default()
                .join(percent_decode(uri))
                .to_string_lossy()
                .into_owned(),
        },
    };
    let p = PathBuf::from(raw);
    p.canonicalize().unwrap_or(p)
}

/// Runs the binary on one program and returns the lines it reports races on.
fn reported_lines(path: &Path) -> Result<BTreeSet<usize>, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_racelens"))
        .args(["check", "--format", "sarif"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run racelens: {e}"))?;
    match out.status.code() {
        Some(0) | Some(1) => {}
        other => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: String = stderr
                .trim()
                .chars()
                .rev()
                .take(300)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(format!("exit {other:?}: {tail}"));
        }
    }
    let sarif: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("bad SARIF: {e}"))?;
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut lines = BTreeSet::new();
    for run in sarif["runs"].as_array().into_iter().flatten() {
        for res in run["results"].as_array().into_iter().flatten() {
            if !res["ruleId"]
                .as_str()
                .unwrap_or("")
                .starts_with("data-race")
            {
                continue;
            }
            let Some(loc) = res["locations"].as_array().and_then(|l| l.first()) else {
                continue;
            };
            let phys = &loc["physicalLocation"];
            let uri = phys["artifactLocation"]["uri"].as_str().unwrap_or("");
            if !uri.is_empty() && uri_to_path(uri) != real {
                continue;
            }
            if let Some(line) = phys["region"]["startLine"].as_u64().filter(|&l| l > 0) {
                lines.insert(line as usize);
            }
        }
    }
    Ok(lines)
}

#[derive(Default)]
struct Tally {
    tp: usize,
    fn_: usize,
    tn: usize,
    fp: usize,
}

impl Tally {
    fn scored(&self) -> usize {
        self.tp + self.fn_ + self.tn + self.fp
    }
    fn accuracy(&self) -> f64 {
        (self.tp + self.tn) as f64 / self.scored().max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fn_).max(1) as f64
    }
    fn precision(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fp).max(1) as f64
    }
}

fn fixture_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .unwrap_or_else(|e| panic!("cannot read {FIXTURES}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    files
}

#[test]
fn fixtures_score() {
    let files = fixture_files();
    let mut tally = Tally::default();
    let mut wrong: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut unannotated: Vec<String> = Vec::new();
    let mut escape_hatches: Vec<String> = Vec::new();
    let mut per_file: Vec<(String, usize, usize)> = Vec::new();

    for path in &files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let want = annotations(&text);
        if want.is_empty() {
            unannotated.push(name);
            continue;
        }
        let got = match reported_lines(path) {
            Ok(got) => got,
            Err(e) => {
                errors.push(format!("{name}: {e}"));
                BTreeSet::new()
            }
        };
        let (mut ok_here, mut all_here) = (0, 0);
        for a in &want {
            if a.todo {
                escape_hatches.push(format!("{name}:{}", a.line));
                continue;
            }
            let hit = got.contains(&a.line);
            let ok = hit == (a.kind == Kind::Race);
            match (a.kind, hit) {
                (Kind::Race, true) => tally.tp += 1,
                (Kind::Race, false) => tally.fn_ += 1,
                (Kind::NoRace, true) => tally.fp += 1,
                (Kind::NoRace, false) => tally.tn += 1,
            }
            all_here += 1;
            if ok {
                ok_here += 1;
            } else {
                let expected = if a.kind == Kind::Race {
                    "RACE   (missed)"
                } else {
                    "NORACE (false alarm)"
                };
                let src = text.lines().nth(a.line - 1).unwrap_or("").trim();
                wrong.push(format!("{:<32} {:>4}  {expected:<21} {src}", name, a.line));
            }
        }
        per_file.push((name, ok_here, all_here));
    }

    println!(
        "\n{:<32} {:>4}  {:<21} source",
        "program", "line", "expected"
    );
    for w in &wrong {
        println!("{w}");
    }
    println!("\nper program (right/scored):");
    for (name, ok, all) in &per_file {
        let mark = if ok == all { "" } else { "  <--" };
        println!("  {name:<32} {ok:>3}/{all:<3}{mark}");
    }
    for e in &errors {
        println!("ERROR {e}");
    }
    println!(
        "\nprograms {}  scored lines {}  tp {} fn {} tn {} fp {}  accuracy {:.4}  recall {:.4}  precision {:.4}  (floors: accuracy {FLOOR}, recall {RECALL_FLOOR})",
        per_file.len(),
        tally.scored(),
        tally.tp,
        tally.fn_,
        tally.tn,
        tally.fp,
        tally.accuracy(),
        tally.recall(),
        tally.precision()
    );

    assert!(
        files.len() >= MIN_PROGRAMS,
        "only {} programs in {FIXTURES}, want at least {MIN_PROGRAMS}",
        files.len()
    );
    assert!(
        unannotated.is_empty(),
        "programs without any RACE/NORACE annotation: {unannotated:?}"
    );
    assert!(escape_hatches.is_empty(), "TODO/SKIP annotations are not allowed in fixtures/ (annotate the true behaviour): {escape_hatches:?}");
    assert!(
        errors.is_empty(),
        "racelens failed on {} program(s): {errors:?}",
        errors.len()
    );
    assert!(
        tally.accuracy() >= FLOOR,
        "accuracy {:.4} fell below the floor {FLOOR}; {} wrong lines listed above",
        tally.accuracy(),
        wrong.len()
    );
    assert!(
        tally.recall() >= RECALL_FLOOR,
        "race recall {:.4} fell below the floor {RECALL_FLOOR}",
        tally.recall()
    );
}

#[test]
fn annotation_parsing_matches_score_py() {
    let a =
        annotations("x++; // RACE\ny++; // NORACE\nz; // plain\nw; // RACE TODO\n// NORACE SKIP\n");
    let got: Vec<(usize, Kind, bool)> = a.iter().map(|a| (a.line, a.kind, a.todo)).collect();
    assert_eq!(
        got,
        vec![
            (1, Kind::Race, false),
            (2, Kind::NoRace, false),
            (4, Kind::Race, true),
            (5, Kind::NoRace, true)
        ]
    );
}

#[test]
fn file_uris_are_decoded() {
    assert_eq!(percent_decode("/a%20b/c.c"), "/a b/c.c");
    assert_eq!(percent_decode("/a%2"), "/a%2");
}
