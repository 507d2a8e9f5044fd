//! Half-typed code: while a function has syntax errors its previous version
//! did not have, the analysis keeps its last good version (`baseline.rs`).
//!
//! Each test types into a program and checks, after every keystroke, that
//! the races are those of the last good text, at the same places (moved
//! past the inserted text), with only the edited function's own reports
//! marked stale. Typing that completes a statement makes a new last good
//! version, whose races may differ by that function's own accesses.

use racelens_analysis::{AnalysisHost, RaceReport};
use std::path::Path;

const PROGRAM: &str = "#include <pthread.h>
int counter;
int total;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void *worker(void *arg) {
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    total++;
    return 0;
}

static void report(void) {
    total = 0;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    counter++;
    report();
    pthread_join(t, 0);
    return 0;
}
";

fn races(host: &AnalysisHost) -> Vec<RaceReport> {
    host.snapshot().races()
}

/// `before`'s reports with every offset at or past `at` moved by `by`,
/// the way an insertion of `by` bytes at `at` moves the text.
fn shifted(before: &[RaceReport], at: usize, by: usize) -> Vec<RaceReport> {
    let mv = |x: &mut usize| {
        if *x >= at {
            *x += by
        }
    };
    before
        .iter()
        .cloned()
        .map(|mut r| {
            mv(&mut r.site.start);
            mv(&mut r.site.end);
            for c in &mut r.conflicts {
                mv(&mut c.site.start);
                mv(&mut c.site.end);
            }
            for c in &mut r.creations {
                mv(&mut c.site.start);
                mv(&mut c.site.end);
            }
            r
        })
        .collect()
}

fn unmarked(rs: &[RaceReport]) -> Vec<RaceReport> {
    rs.iter()
        .cloned()
        .map(|mut r| {
            r.stale = None;
            r
        })
        .collect()
}

/// Types `typed` one character at a time at `at` (after `anchor` in `text`,
/// which parses without errors). After each keystroke: when the text parses
/// without errors, it is the new last good one; otherwise the races must be the last good ones,
/// moved past what was typed since, with exactly the reports of `func`
/// marked stale. Returns the race counts after each keystroke.
fn type_into(path: &Path, text: &str, anchor: &str, typed: &str, func: &str) -> Vec<usize> {
    let at = text.find(anchor).expect(anchor) + anchor.len();
    assert!(!racelens_syntax::parse_text(text).root_node().has_error());
    let mut host = AnalysisHost::default();
    host.set_file_text(path, text);
    let mut good = races(&host);
    let mut good_len = 0;
    let mut counts = vec![good.len()];
    let mut stale_seen = 0;
    for n in 1..=typed.len() {
        if !typed.is_char_boundary(n) {
            continue;
        }
        let now = format!("{}{}{}", &text[..at], &typed[..n], &text[at..]);
        host.set_file_text(path, now.as_str());
        let rs = races(&host);
        counts.push(rs.len());
        let stale = host.snapshot().stale_functions(path);
        // A text that parses, and uses no name being typed (a partial
        // identifier declared nowhere: `typed_names.rs`), is the new last
        // good one.
        if !racelens_syntax::parse_text(&now).root_node().has_error() && stale.is_empty() {
            assert!(rs.iter().all(|r| r.stale.is_none()), "{rs:#?}");
            good = rs;
            good_len = n;
            continue;
        }
        stale_seen += 1;
        assert!(
            stale.iter().all(|f| f == func),
            "after {:?}: only `{func}` stands as its last good version: {stale:?}",
            &typed[..n]
        );
        for r in &rs {
            assert_eq!(
                r.stale.is_some(),
                r.site.func == func,
                "after {:?}: only `{func}`'s own reports are stale: {r:#?}",
                &typed[..n]
            );
        }
        let expect = shifted(&good, at + good_len, n - good_len);
        let got = unmarked(&rs);
        if got != expect {
            let brief = |rs: &[RaceReport]| {
                rs.iter()
                    .map(|r| format!("{} {} {}", r.site.start, r.site.func, r.message()))
                    .collect::<Vec<_>>()
            };
            panic!(
                "after {:?} (stale: {stale:?}): not the races of the last good text ({:?}):\n{:#?}\nexpected:\n{:#?}",
                &typed[..n],
                &typed[..good_len],
                brief(&got),
                brief(&expect)
            );
        }
    }
    assert!(stale_seen > 0, "typing {typed:?} never broke the syntax");
    counts
}

#[test]
fn a_stray_identifier_before_a_closing_brace_keeps_the_last_good_races() {
    let path = Path::new("/virtual/last_good.c");
    // Before the `}` of `worker`: the broken definition would swallow
    // `report` and `main`.
    let counts = type_into(path, PROGRAM, "    return 0;\n", "    foo", "worker");
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
}

#[test]
fn an_unclosed_comment_keeps_the_functions_after_it() {
    let path = Path::new("/virtual/last_good.c");
    let counts = type_into(path, PROGRAM, "    counter++;\n", "/* x", "worker");
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
}

#[test]
fn statements_typed_into_main_change_only_main_once_they_parse() {
    let path = Path::new("/virtual/last_good.c");
    let typed = "    pthread_create(&t, 0, worker, 0);\n    total++;\n";
    let counts = type_into(
        path,
        PROGRAM,
        "    counter++;\n    report();\n",
        typed,
        "main",
    );
    // The last keystroke completes both statements: `total++` in main
    // now races with the worker's.
    assert!(counts.last() > counts.first(), "{counts:?}");
}

#[test]
fn deleting_or_renaming_a_function_drops_its_last_good_version() {
    let path = Path::new("/virtual/last_good.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, PROGRAM);
    assert!(races(&host).iter().any(|r| r.site.func == "report"));
    // Renamed: the call in main now names a function without a body.
    host.set_file_text(
        path,
        PROGRAM.replace("void report(void) {", "void rep(void) {"),
    );
    let rs = races(&host);
    assert!(
        rs.iter()
            .all(|r| r.site.func != "report" && r.stale.is_none()),
        "{rs:#?}"
    );
    // Deleted (with a syntax error elsewhere, so the file is not clean).
    let start = PROGRAM.find("static void report").unwrap();
    let end = PROGRAM[start..].find("}\n").unwrap() + start + 2;
    let deleted = format!("{}{}", &PROGRAM[..start], &PROGRAM[end..])
        .replace("    counter++;\n    report();", "    counter++ report();");
    host.set_file_text(path, PROGRAM);
    host.set_file_text(path, deleted.as_str());
    let rs = races(&host);
    assert!(rs.iter().all(|r| r.site.func != "report"), "{rs:#?}");
}

#[test]
fn a_file_set_once_with_errors_is_analysed_as_it_is() {
    // The CLI's case: the first version is its own last good version.
    let path = Path::new("/virtual/last_good.c");
    let broken = PROGRAM.replace(
        "    total++;\n    return 0;",
        "    total++;\n    foo\n    return 0;",
    );
    let mut host = AnalysisHost::default();
    host.set_file_text(path, broken.as_str());
    let rs = races(&host);
    assert!(rs.iter().all(|r| r.stale.is_none()), "{rs:#?}");
}

/// The case: pfscan, where a stray identifier in `worker` made
/// `main` vanish and turned 7 races into 48 (`../shared`, as in CI).
#[test]
fn typing_into_pfscan_keeps_its_races() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/bench/realworld/pthread/pfscan_comb.c");
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!("skipped: {} is missing", path.display());
        return;
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let virt = Path::new("/virtual/real/pfscan_comb.c");
    let anchor = "    if (! (tmp == 1)) {\n      break;\n";
    let counts = type_into(virt, &text, anchor, "    foo", "worker");
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
    let anchor = "  pthread_mutex_lock(& aworker_lock);\n";
    let counts = type_into(virt, &text, anchor, "/* ", "worker");
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
}

/// Typing on in a function that stands as its last good version changes
/// nothing the thread walk reads: its walk summary keeps the good text's
/// spans, and neither the walk nor any summary runs again (only the
/// reports' positions move).
#[test]
fn typing_in_a_broken_function_does_not_walk_again() {
    let path = Path::new("/virtual/last_good.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, PROGRAM);
    let at = PROGRAM.find("    return 0;\n}\n\nstatic").unwrap();
    let typed = |s: &str| format!("{}{s}{}", &PROGRAM[..at], &PROGRAM[at..]);
    host.set_file_text(path, typed("    fo").as_str());
    races(&host);
    assert_eq!(host.snapshot().stale_functions(path), ["worker"]);
    host.db().enable_logging();
    host.set_file_text(path, typed("    foo").as_str());
    races(&host);
    let log = host.db().take_log();
    let rerun = |q: &str| -> Vec<&String> { log.iter().filter(|l| l.starts_with(q)).collect() };
    assert!(!rerun("effective_functions(").is_empty(), "{log:#?}");
    assert_eq!(rerun("function_summary("), Vec::<&String>::new());
    assert_eq!(rerun("thread_analysis("), Vec::<&String>::new());
    // Its walk summary is computed again (its placement moved), and equal.
    assert!(rerun("walk_summary(").len() <= 1, "{log:#?}");
}

/// A name being typed parses, but resolves to nothing: `total` in `worker`
/// becomes `totl` for a keystroke. The last good version stands in, marked
/// with the name, until the text declares it or the slip is undone.
#[test]
fn a_name_declared_nowhere_keeps_the_last_good_races() {
    use racelens_analysis::baseline::Staleness;
    let path = Path::new("/virtual/last_good.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, PROGRAM);
    let good = races(&host);
    assert!(good.iter().any(|r| r.site.func == "worker"), "{good:#?}");
    let slip = PROGRAM.replacen(
        "    total++;\n    return 0;",
        "    totl++;\n    return 0;",
        1,
    );
    assert!(!racelens_syntax::parse_text(&slip).root_node().has_error());
    host.set_file_text(path, slip.as_str());
    let rs = races(&host);
    assert_eq!(host.snapshot().stale_functions(path), ["worker"]);
    let message = |rs: &[RaceReport]| rs.iter().map(|r| r.message()).collect::<Vec<_>>();
    assert_eq!(message(&rs), message(&good));
    for r in &rs {
        let expect = (r.site.func == "worker").then(|| Staleness::TypedName("totl".into()));
        assert_eq!(r.stale, expect, "{r:#?}");
    }
    // Declared now (a global of that name): the current text is analysed,
    // and `worker` no longer writes `total`.
    let declared = slip.replacen("int total;", "int total;\nint totl;", 1);
    host.set_file_text(path, declared.as_str());
    let rs = races(&host);
    assert!(host.snapshot().stale_functions(path).is_empty());
    assert!(rs.iter().all(|r| r.stale.is_none()), "{rs:#?}");
    assert!(message(&rs) != message(&good), "{rs:#?}");
}

/// Globals declared after the edited function: a stray identifier before
/// an inner `}` (`n }` then `type = header;` reads as the declaration
/// `n type = header;` with the brace skipped) can make tree-sitter swallow
/// everything after it into the broken function, globals included (its
/// error recovery does so here once a score of statements follow). The
/// program keeps the globals of its last good version, so the walk is
/// neither run from scratch nor changed: the races stay those of the last
/// good text.
#[test]
fn a_stray_identifier_that_swallows_later_globals_keeps_them() {
    let mut text = String::from(
        "#include <pthread.h>
void *worker(void *arg) {
    char *header = arg;
    char *type;
    int len = 0;
    while (1) {
        if (*header) {
            break;
        }
        header++;
    }
    type = header;
",
    );
    for i in 0..20 {
        text.push_str(&format!("    len = len + {i};\n"));
    }
    text.push_str(
        "    return type;
}
int total;
int hits;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void *other(void *arg) {
    pthread_mutex_lock(&m);
    total++;
    pthread_mutex_unlock(&m);
    hits++;
    return 0;
}

int main(void) {
    pthread_t t, u;
    pthread_create(&t, 0, worker, \"x\");
    pthread_create(&u, 0, other, 0);
    pthread_mutex_lock(&m);
    total++;
    pthread_mutex_unlock(&m);
    hits++;
    return 0;
}
",
    );
    let path = Path::new("/virtual/last_good_later.c");
    let anchor = "        header++;\n";
    // The typed text really swallows the globals into `worker`.
    let at = text.find(anchor).unwrap() + anchor.len();
    let broken = format!("{}n{}", &text[..at], &text[at..]);
    let items = racelens_syntax::extract_items(&racelens_syntax::parse_text(&broken), &broken);
    assert!(
        !items.globals.iter().any(|g| &*g.name == "hits"),
        "tree-sitter no longer swallows the globals here: {:?}",
        items.globals
    );
    let counts = type_into(path, &text, anchor, "n", "worker");
    assert!(
        counts.iter().all(|&c| c == counts[0] && c > 0),
        "{counts:?}"
    );
    // Nothing the walk reads changed: it does not run again.
    let mut host = AnalysisHost::default();
    host.set_file_text(path, text.as_str());
    races(&host);
    host.db().enable_logging();
    host.set_file_text(path, broken.as_str());
    races(&host);
    let log = host.db().take_log();
    assert!(
        !log.iter().any(|l| l.starts_with("thread_analysis(")),
        "{log:#?}"
    );
}

/// A word typed at the start of a line can make the statement after it a
/// declaration that parses: `k note(arg);` declares a function `note`
/// returning a `k`, and the call is gone, though no error node says so.
/// `arg` is a variable, not a type: the function counts as having a new
/// syntax error (`misparse.rs`), and the races stay those of the last good
/// text until the statement is complete.
#[test]
fn a_word_typed_before_a_call_keeps_the_call() {
    let text = PROGRAM
        .replace(
            "static void report(void) {",
            "int noted;\n\nstatic void note(void *p) {\n    noted += p != 0;\n}\n\nstatic void report(void) {\n    noted = 0;",
        )
        .replacen(
            "void *worker(void *arg) {\n",
            "static void note(void *p);\nvoid *worker(void *arg) {\n    note(arg);\n",
            1,
        );
    let path = Path::new("/virtual/last_good_misparse.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, text.as_str());
    let rs = races(&host);
    assert!(rs.iter().any(|r| r.message().contains("noted")), "{rs:#?}");
    misparse_keeps_the_races(path, &text, "    k", "    k = 1;\n");
}

/// Types `typed` at the start of `worker`'s body of `text`, after checking
/// that its `prefix` alone leaves a text tree-sitter parses with no error
/// node (a statement that is not C, `misparse.rs`): the number of races
/// never changes, and is not zero.
fn misparse_keeps_the_races(path: &Path, text: &str, prefix: &str, typed: &str) {
    let anchor = "void *worker(void *arg) {\n";
    let at = text.find(anchor).unwrap() + anchor.len();
    let half = format!("{}{prefix}{}", &text[..at], &text[at..]);
    assert!(
        !racelens_syntax::parse_text(&half).root_node().has_error(),
        "tree-sitter parses {prefix:?} before the body without an error node"
    );
    let counts = type_into(path, text, anchor, typed, "worker");
    assert!(
        counts.iter().all(|&c| c == counts[0]) && counts[0] > 0,
        "{counts:?}"
    );
}

/// A statement typed before a declaration, before its `;`, makes the
/// declaration a product that parses: `n = slot *s = arg;` assigns to
/// `slot * s`, and the local `s` is declared no more, so every access
/// through it names a global of that name, or nothing. A type name is not
/// a value: the function counts as having a new syntax error
/// (`misparse.rs`), and the races stay those of the last good text until
/// the statement is complete (typing `n =` before `DAAP_BLOCK *root;` in
/// mt-daapd walked the program from scratch twice per statement and
/// published 104 reports too many).
#[test]
fn a_statement_typed_before_a_declaration_keeps_the_declaration() {
    let text = PROGRAM
        .replace(
            "int counter;\n",
            "int counter;\ntypedef struct slot { int hits; } slot;\nstruct slot *s;\nint n;\n",
        )
        .replacen(
            "void *worker(void *arg) {\n",
            "void *worker(void *arg) {\n    slot *s = arg;\n    s->hits = 1;\n",
            1,
        )
        .replacen(
            "    counter++;\n    report();",
            "    counter++;\n    s = 0;\n    report();",
            1,
        );
    let path = Path::new("/virtual/last_good_product.c");
    misparse_keeps_the_races(path, &text, "    n = ", "    n = 1;\n");
}

/// A space typed or deleted between tokens changes positions only: the
/// last good version stands, not stale, with its positions moved, and
/// nothing is walked again (such an edit in a function that creates
/// threads walked memcached from scratch, 9 s). The next real edit is
/// analysed as written, as a fresh host analyses it.
#[test]
fn blanks_typed_between_tokens_walk_nothing_again() {
    let path = Path::new("/virtual/last_good_blanks.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(path, PROGRAM);
    let before = races(&host);
    assert!(before.iter().any(|r| r.site.func == "main"), "{before:#?}");
    // In `main`, which creates the thread: one more space of indentation.
    let at = PROGRAM.find("    counter++;\n    report();").unwrap();
    let spaced = format!("{} {}", &PROGRAM[..at], &PROGRAM[at..]);
    host.db().enable_logging();
    host.set_file_text(path, spaced.as_str());
    let rs = races(&host);
    let log = host.db().take_log();
    let rerun = |q: &str| -> Vec<&String> { log.iter().filter(|l| l.starts_with(q)).collect() };
    assert_eq!(rerun("thread_analysis("), Vec::<&String>::new());
    assert!(host.snapshot().stale_functions(path).is_empty());
    assert!(rs.iter().all(|r| r.stale.is_none()), "{rs:#?}");
    assert_eq!(rs, shifted(&before, at, 1));
    // A real edit after it: the current text, as a fresh host sees it.
    let edited = spaced.replacen("     counter++;\n", "     counter++;\n    total++;\n", 1);
    host.set_file_text(path, edited.as_str());
    let mut fresh = AnalysisHost::default();
    fresh.set_file_text(path, edited.as_str());
    assert_eq!(races(&host), races(&fresh));
}
