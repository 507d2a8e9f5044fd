//! Incrementality through the server's edit path: an edit inside one
//! function body re-runs that function's summary and no other.

use racelens_analysis::db::{file_functions, FunctionId};
use racelens_lsp::config::Settings;
use racelens_lsp::{Encoding, LineCol, State, TextChange};
use std::path::{Path, PathBuf};

const PROGRAM: &str = "#include <pthread.h>
int counter;
int other;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void helper(void) {
    other = 1;
}
void *worker(void *arg) {
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    helper();
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

fn executed(state: &State, query: &str) -> Vec<String> {
    state
        .host()
        .db()
        .take_log()
        .into_iter()
        .filter(|e| e.starts_with(&format!("{query}(")))
        .collect()
}

fn function_id(state: &mut State, path: &Path, name: &str) -> FunctionId {
    let snap = state.snapshot();
    let (db, ws) = (snap.analysis.db(), snap.analysis.workspace());
    let file = snap.analysis.file(path).expect("file in the analysis");
    *file_functions(db, ws, file)
        .iter()
        .find(|f| &**f.name(db) == name)
        .expect(name)
}

#[test]
fn editing_one_body_reruns_only_that_functions_summary() {
    let path = PathBuf::from("/virtual/incremental.c");
    let uri = "file:///virtual/incremental.c".parse().unwrap();
    let mut state = State::new(Encoding::Utf16, Settings::default());
    state.open(uri, path.clone(), 1, PROGRAM);
    let before = state.diagnostics_job().compute();
    assert_eq!(before[0].diagnostics.len(), 2, "{before:#?}");
    let worker = function_id(&mut state, &path, "worker");

    state.host().db().enable_logging();
    // Insert a statement at the start of worker's body (line 8).
    let at = LineCol { line: 8, col: 0 };
    state
        .change(
            &path,
            2,
            &[TextChange {
                range: Some((at, at)),
                text: "    other = 2;\n".into(),
            }],
        )
        .expect("open");
    let after = state.diagnostics_job().compute();

    let log = state.host().db().take_log();
    let summaries: Vec<&String> = log
        .iter()
        .filter(|e| e.starts_with("function_summary("))
        .collect();
    assert_eq!(
        summaries,
        [&format!("function_summary({:?})", worker.key())],
        "whole log: {log:#?}"
    );
    // The new write to `other` races with nothing (helper runs in worker
    // only), and the old races are still reported, one line further down.
    assert_eq!(after[0].diagnostics.len(), 2, "{after:#?}");
    for (b, a) in before[0]
        .diagnostics
        .iter()
        .zip(after[0].diagnostics.iter())
    {
        assert_eq!(a.message, b.message);
    }

    // A blank line between two functions moves them but re-runs no summary:
    // summaries are relative to their function's start.
    state.host().db().enable_logging();
    let at = LineCol { line: 7, col: 0 };
    state
        .change(
            &path,
            3,
            &[TextChange {
                range: Some((at, at)),
                text: "\n".into(),
            }],
        )
        .expect("open");
    state.diagnostics_job().compute();
    assert!(executed(&state, "function_summary").is_empty());
}

/// `didOpen` of a file the workspace load already parsed, with the disk
/// text: the loaded tree is reused, the analysis re-runs nothing, and the
/// first edit still reparses incrementally to what a fresh open gives.
#[test]
fn opening_a_loaded_file_reuses_its_parse() {
    let path = PathBuf::from("/virtual/loaded.c");
    let uri: tower_lsp_server::ls_types::Uri = "file:///virtual/loaded.c".parse().unwrap();
    let mut state = State::new(Encoding::Utf16, Settings::default());
    let parsed = racelens_syntax::parse::parse(std::sync::Arc::from(PROGRAM));
    state.add_disk_files(
        [path.clone()].into_iter().collect(),
        vec![(path.clone(), parsed.clone())],
    );
    // Analysed before the open (no open file: nothing to publish yet).
    state.diagnostics_job().compute();
    state.host().db().enable_logging();
    state.open(uri.clone(), path.clone(), 1, PROGRAM);
    let opened = state.diagnostics_job().compute();
    let log = state.host().db().take_log();
    assert!(
        !log.iter()
            .any(|e| e.starts_with("file_items(") || e.starts_with("file_lowered(")),
        "opening re-ran the analysis of the file: {log:#?}"
    );
    let now = state
        .host()
        .file_parsed(&path)
        .expect("file in the analysis");
    assert!(std::sync::Arc::ptr_eq(&now.tree, &parsed.tree));
    assert_eq!(opened[0].diagnostics.len(), 2, "{opened:#?}");

    // The same edit through a document opened from scratch gives the same
    // text, tree and diagnostics.
    let edit = [TextChange {
        range: Some((LineCol { line: 9, col: 4 }, LineCol { line: 9, col: 13 })),
        text: "counter--;".into(),
    }];
    state.change(&path, 2, &edit).expect("open");
    let mut fresh = State::new(Encoding::Utf16, Settings::default());
    fresh.open(uri, path.clone(), 1, PROGRAM);
    fresh.change(&path, 2, &edit).expect("open");
    // An edit reaches the analysis when the state syncs (as every snapshot does).
    state.sync();
    fresh.sync();
    let (a, b) = (
        state.host().file_parsed(&path).unwrap(),
        fresh.host().file_parsed(&path).unwrap(),
    );
    assert_eq!(a.text, b.text);
    assert!(a.text.contains("counter--;"));
    assert_eq!(a.tree.root_node().to_sexp(), b.tree.root_node().to_sexp());
    let (da, db) = (
        state.diagnostics_job().compute(),
        fresh.diagnostics_job().compute(),
    );
    let msgs = |d: &Vec<racelens_lsp::diagnostics::FileDiagnostics>| -> Vec<String> {
        d.iter()
            .flat_map(|f| f.diagnostics.iter().map(|x| x.message.clone()))
            .collect()
    };
    assert_eq!(msgs(&da), msgs(&db));
    assert_eq!(msgs(&da).len(), 2, "{da:#?}");
}

/// Two programs in one workspace (`server` = server.c + stats.c, `tool` =
/// tool.c): an edit in tool.c re-runs queries of `tool` only, as salsa's
/// execution events show, and `server`'s diagnostics are unchanged.
#[test]
fn an_edit_rechecks_only_the_program_that_contains_the_file() {
    const SERVER: &str = "#include <pthread.h>\nvoid bump(void);\nstatic void *serve(void *a) { bump(); return a; }\nint main(void) {\n    pthread_t x, y;\n    pthread_create(&x, 0, serve, 0);\n    pthread_create(&y, 0, serve, 0);\n    pthread_join(x, 0);\n    pthread_join(y, 0);\n    return 0;\n}\n";
    const STATS: &str = "int requests;\nvoid bump(void) {\n    requests++;\n}\n";
    const TOOL: &str = "#include <pthread.h>\nint level;\nstatic void *w(void *a) { level = 1; return a; }\nint main(void) {\n    pthread_t t;\n    pthread_create(&t, 0, w, 0);\n    level = 2;\n    pthread_join(t, 0);\n    return 0;\n}\n";
    let mut state = State::new(Encoding::Utf16, Settings::default());
    let files = [("server.c", SERVER), ("stats.c", STATS), ("tool.c", TOOL)];
    for (i, (name, text)) in files.iter().enumerate() {
        let uri = format!("file:///virtual/two/{name}").parse().unwrap();
        state.open(
            uri,
            PathBuf::from(format!("/virtual/two/{name}")),
            i as i32,
            text,
        );
    }
    let before = state.diagnostics_job().compute();
    let snap = state.snapshot();
    let programs: Vec<(String, String)> = snap
        .analysis
        .programs()
        .iter()
        .map(|p| (p.name.to_string(), format!("({:?})", p.ws.key())))
        .collect();
    assert_eq!(
        programs.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["server", "tool"]
    );
    let count = |diags: &[racelens_lsp::diagnostics::FileDiagnostics], name: &str| {
        diags
            .iter()
            .filter(|d| d.uri.as_str().ends_with(name))
            .map(|d| d.diagnostics.len())
            .sum::<usize>()
    };
    assert_eq!(count(&before, "stats.c"), 1, "{before:#?}");
    assert_eq!(count(&before, "tool.c"), 2, "{before:#?}");
    drop(snap);

    state.host().db().enable_logging();
    // A second write in tool.c's thread.
    let at = LineCol { line: 2, col: 26 };
    let tool = PathBuf::from("/virtual/two/tool.c");
    state
        .change(
            &tool,
            9,
            &[TextChange {
                range: Some((at, at)),
                text: "level++; ".into(),
            }],
        )
        .expect("open");
    let after = state.diagnostics_job().compute();
    let log = state.host().db().take_log();
    let (server, tool_ws) = (&programs[0].1, &programs[1].1);
    assert!(
        !log.iter().any(|e| e.ends_with(server.as_str())),
        "queries of `server` re-ran: {log:#?}"
    );
    assert!(
        log.iter().any(|e| e.ends_with(tool_ws.as_str())),
        "nothing of `tool` re-ran: {log:#?}"
    );
    assert_eq!(count(&after, "stats.c"), 1, "{after:#?}");
    assert_eq!(count(&after, "tool.c"), 3, "{after:#?}");
}
