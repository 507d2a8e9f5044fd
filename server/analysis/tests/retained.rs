//! Memory over many edits: what the analysis retains must not grow with the
//! number of edits when the program does not (issue 26, item 4).
//!
//! Edits at different places each leave superseded texts behind (the
//! lowering and declaration memos are content-addressed), and each may
//! intern new names. The test edits every function of a program in turn,
//! thousands of times, and compares the retained structures after a first
//! round of edits with those at the end.

use racelens_analysis::AnalysisHost;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

const FUNCTIONS: usize = 6;

/// A program of `FUNCTIONS` thread functions, each about 6 KB of text
/// (mostly a comment, cheap to analyse but part of the memoized text), the
/// `edited`-th (if any) with a statement of its own.
fn program(edited: Option<(usize, usize)>) -> String {
    let mut s = String::from("#include <pthread.h>\nint shared;\nint g;\n");
    for f in 0..FUNCTIONS {
        writeln!(s, "void *worker{f}(void *arg) {{").unwrap();
        if let Some((e, n)) = edited.filter(|(e, _)| *e == f) {
            writeln!(s, "    g = {n};").unwrap();
            let _ = e;
        }
        writeln!(s, "    /* {} */", "padding ".repeat(750)).unwrap();
        for i in 0..8 {
            writeln!(s, "    shared = shared + {i};").unwrap();
        }
        s.push_str("    return 0;\n}\n");
    }
    s.push_str("int main(void) {\n    pthread_t t;\n");
    for f in 0..FUNCTIONS {
        writeln!(s, "    pthread_create(&t, 0, worker{f}, 0);").unwrap();
    }
    s.push_str("    return 0;\n}\n");
    s
}

/// Edits `count` times, each a new text in the next function.
fn edit(host: &mut AnalysisHost, path: &Path, from: usize, count: usize) {
    for n in from..from + count {
        host.set_file_text(path, program(Some((n % FUNCTIONS, n))));
        assert!(!host.snapshot().races().is_empty());
    }
}

/// Memo text a generation holds before it is replaced (`memo.rs`).
const GENERATION_BYTES: usize = 2 << 20;

#[test]
fn retained_structures_stay_bounded_over_thousands_of_edits() {
    let path = Path::new("/virtual/retained.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, program(None));
    edit(&mut host, path, 0, 100);
    let early: BTreeMap<String, usize> = host.retained();
    // About 6 KB of new function text per edit: 6 MB in all, three
    // generations of each memo.
    edit(&mut host, path, 100, 1000);
    let late = host.retained();
    eprintln!("after 100 edits: {early:#?}\nafter 1,100 edits: {late:#?}");
    for (name, &n) in &late {
        let before = early.get(name).copied().unwrap_or(0);
        if name.starts_with("memo:") {
            if name.ends_with("bytes") {
                assert!(
                    n <= 2 * GENERATION_BYTES + 64 * 1024,
                    "{name}: {n} bytes retained after 1,100 edits\n{late:#?}"
                );
            }
            continue;
        }
        assert!(
            n <= before + before / 10 + 16,
            "{name} grew from {before} to {n} over 1,000 edits\n{early:#?}\n{late:#?}"
        );
    }
}
