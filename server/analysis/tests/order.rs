//! Reports do not depend on the order in which salsa handed out its Ids.
//!
//! The accesses of a location come in the walk's order, which follows
//! hash sets keyed by function Ids; a CLI run and an editor session that
//! opens files one by one intern functions in different orders. A report's
//! capped lists (the conflicts it shows, its threads and creation sites)
//! must be chosen by source position, and a unit's renamed static must
//! not carry an Id: the same program gives the same report in the terminal
//! and in the editor.

use racelens_analysis::AnalysisHost;
use std::path::PathBuf;

/// Loads `files` in their order; when `editor_first`, asks first for the
/// races of each file alone, in reverse order, as an editor opening files
/// would, so that queries (and the Ids they intern) run in another order.
fn races_loaded_in(
    files: &[(PathBuf, String)],
    editor_first: bool,
) -> Vec<racelens_analysis::RaceReport> {
    let mut host = AnalysisHost::default();
    for (n, (p, text)) in files.iter().enumerate() {
        host.set_file_text(p, text.as_str());
        // A workspace that grows while it is analysed (an editor opening
        // files one by one) interns its functions in another order.
        if editor_first && n % 8 == 7 {
            host.snapshot().races_in([p.as_path()]);
        }
    }
    let analysis = host.snapshot();
    if editor_first {
        for (p, _) in files.iter().rev() {
            analysis.races_in([p.as_path()]);
        }
    }
    analysis.races()
}

/// A program of several units whose shared counter is touched by forty
/// functions on four threads (so its reports have capped conflict lists),
/// and two units with a `static` of the same name, each raced on.
fn synthetic() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for u in 0..4 {
        let mut s = String::from("#include <pthread.h>\nextern int shared;\nstatic int mine;\n");
        for j in 0..10 {
            s += &format!("void f{u}_{j}(void) {{ shared = shared + {j}; mine++; }}\n");
        }
        s += &format!("void *worker{u}(void *a) {{\n");
        for j in 0..10 {
            s += &format!("    f{u}_{j}();\n");
        }
        s += "    return a;\n}\n";
        s += &format!("void start{u}(void) {{ pthread_t t; pthread_create(&t, 0, worker{u}, 0); mine = 1; }}\n");
        files.push((PathBuf::from(format!("/virtual/order/unit{u}.c")), s));
    }
    let main = "int shared;\nvoid start0(void); void start1(void); void start2(void); void start3(void);\n\
                int main(void) { start0(); start1(); start2(); start3(); shared = 0; return 0; }\n";
    files.push((PathBuf::from("/virtual/order/main.c"), main.to_string()));
    files
}

#[test]
fn capped_lists_and_static_names_do_not_depend_on_loading_order() {
    let mut files = synthetic();
    let forward = races_loaded_in(&files, false);
    files.reverse();
    let backward = races_loaded_in(&files, true);
    let capped = racelens_analysis::report::MAX_CONFLICTS;
    assert!(forward.iter().any(|r| r.conflicts.len() == capped));
    // The four `mine`s are four objects, each named as the C code names it.
    let statics: Vec<&str> = forward
        .iter()
        .filter(|r| r.var.starts_with("mine"))
        .map(|r| r.var.as_str())
        .collect();
    assert!(
        !statics.is_empty() && statics.iter().all(|v| *v == "mine"),
        "{statics:?}"
    );
    assert_eq!(forward, backward);
}

/// memcached: many units, capped conflict lists, type-based locations
/// whose facts are capped. 789 reports differed before facts were ordered
/// by `Program::fn_rank`, and 3 while that order ignored an access's slot
/// and `volatile` flag (equal accesses kept their hash set's order, which
/// follows salsa Ids, and the race check lists 16 partners in that order).
#[test]
fn memcached_reports_do_not_depend_on_loading_order() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/bench/projects/memcached");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "h")))
        .map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            (p, text)
        })
        .collect();
    files.sort();
    assert!(files.len() > 10, "memcached sources at {}", dir.display());
    let forward = races_loaded_in(&files, false);
    files.reverse();
    let backward = races_loaded_in(&files, true);
    assert_eq!(forward.len(), backward.len());
    let differ: Vec<_> = forward
        .iter()
        .zip(&backward)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| (&a.var, a.site.start))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} reports differ: {differ:?}",
        differ.len(),
        forward.len()
    );
}
