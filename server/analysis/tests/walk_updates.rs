//! Incremental walk updates equal walks from scratch.
//!
//! Every fixture gets body edits of the kinds typing produces (a statement
//! added, commented out or duplicated, a character inserted) and each edit
//! is reverted. With verification on, every incremental update of the thread
//! walk is compared with a full walk inside the analysis and a difference
//! panics; the reports are also compared with a fresh host's.

use racelens_analysis::walk::{incremental_stats, set_verify};
use racelens_analysis::AnalysisHost;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixtures_dir().join(name)).unwrap()
}

fn fixtures() -> Vec<PathBuf> {
    let dir = fixtures_dir();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map(|x| x == "c").unwrap_or(false))
        .collect();
    v.sort();
    v
}

/// `count` edits of statement lines inside function bodies (indented by
/// two spaces or more, or a tab, ending in `;`), spread over the file.
fn edits(text: &str, count: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let body: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let l = lines[i];
            (l.starts_with("  ") || l.starts_with('\t'))
                && l.trim_end().ends_with(';')
                && !l.contains("//")
                && !l.contains("/*")
        })
        .collect();
    let step = (body.len() / count).max(1);
    let mut out = Vec::new();
    for (k, &i) in body.iter().step_by(step).enumerate() {
        let mut l2: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        match k % 4 {
            0 => l2[i] = format!("{}\n    x = x;", lines[i]),
            1 => l2[i] = format!("// {}", lines[i]),
            2 => l2[i] = format!("{}\n{}", lines[i], lines[i]),
            _ => l2[i] = lines[i].replacen(';', " ;", 1),
        }
        out.push(l2.join("\n") + "\n");
    }
    out
}

/// The tests here count incremental updates through process-wide counters
/// (and a fresh host may reuse a kept walk, which counts too): they run one
/// at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets the file's text and computes the reports; also says whether this
/// host's walk was updated incrementally rather than walked again.
fn edit_and_report(host: &mut AnalysisHost, path: &Path, text: &str) -> (Vec<String>, bool) {
    let (before, _) = incremental_stats();
    host.set_file_text(path, text);
    let r = reports(host);
    let (after, _) = incremental_stats();
    (r, after > before)
}

/// The reports of a new host that saw these texts in turn.
fn replayed(path: &Path, history: &[&str]) -> Vec<String> {
    let mut fresh = AnalysisHost::default();
    for text in history {
        fresh.set_file_text(path, *text);
    }
    reports(&fresh)
}

fn reports(host: &AnalysisHost) -> Vec<String> {
    let mut v: Vec<String> = host
        .snapshot()
        .races()
        .iter()
        .map(|r| format!("{r:?}"))
        .collect();
    v.sort();
    v
}

#[test]
fn body_edits_update_the_walk_exactly() {
    let _serial = serial();
    set_verify(true);
    let (updates_before, _) = incremental_stats();
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let virt = Path::new("/virtual").join(path.file_name().unwrap());
        let mut host = AnalysisHost::default();
        host.set_file_text(&virt, text.as_str());
        let original = reports(&host);
        for edited in edits(&text, 30) {
            host.set_file_text(&virt, edited.as_str());
            let after = reports(&host);
            // Edits may break the syntax: the fresh host gets the same
            // last good version (baseline.rs) by seeing the original first.
            let fresh = replayed(&virt, &[&text, &edited]);
            assert_eq!(after, fresh, "{}", path.display());
            host.set_file_text(&virt, text.as_str());
            assert_eq!(reports(&host), original, "{}", path.display());
        }
    }
    let (updates, full) = incremental_stats();
    eprintln!(
        "walk updates: {} incremental, {full} from scratch",
        updates - updates_before
    );
    // Most edits take the incremental path (functions that create threads
    // and recursive ones walk again from scratch).
    assert!(
        updates - updates_before > 100,
        "only {} incremental updates",
        updates - updates_before
    );
}

/// The same on real programs from the benchmark corpus (`../shared`, as in
/// CI), where contexts, recursion and budgets are real.
#[test]
fn body_edits_of_real_programs_update_the_walk_exactly() {
    let _serial = serial();
    set_verify(true);
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench/realworld/pthread");
    let programs = ["pfscan_comb.c", "zebedee_comb.c"];
    let (updates_before, _) = incremental_stats();
    let mut seen = 0;
    for name in programs {
        let path = corpus.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        seen += 1;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let virt = Path::new("/virtual/real").join(name);
        let mut host = AnalysisHost::default();
        host.set_file_text(&virt, text.as_str());
        let original = reports(&host);
        for edited in edits(&text, 12) {
            // Verification panics inside the analysis on a difference.
            host.set_file_text(&virt, edited.as_str());
            reports(&host);
            host.set_file_text(&virt, text.as_str());
            assert_eq!(reports(&host), original, "{name}");
        }
    }
    let (updates, _) = incremental_stats();
    if seen > 0 {
        assert!(
            updates > updates_before,
            "no incremental update on real programs"
        );
    } else {
        eprintln!("skipped: {} is missing", corpus.display());
    }
}

/// mt-daapd from the benchmark corpus (`../shared`, as in CI), if there.
fn mt_daapd() -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/bench/realworld/pthread/mt-daapd_comb.c");
    match std::fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(_) => {
            eprintln!("skipped: {} is missing", path.display());
            None
        }
    }
}

/// Consecutive edits of one function walked in many contexts
/// (`yystpcpy` in mt-daapd's parser: a copy loop over local pointers). A
/// re-walk once built the edited function's frames while the walk still held
/// the flow-sensitive pointers of the context re-walked before, so a later
/// context's fallback points-to named another context's buffer.
#[test]
fn consecutive_edits_of_a_copy_loop_update_the_walk_exactly() {
    let _serial = serial();
    set_verify(true);
    let Some(text) = mt_daapd() else {
        return;
    };
    let head = "static char *yystpcpy(char *yydest , char const   *yysrc ) \n{";
    let start = text.find(head).expect("yystpcpy in mt-daapd");
    let semi = start + text[start..].find(';').expect("a statement");
    // An empty statement after the first: a blank would change positions
    // only, which walks nothing (`baseline::spacing_only`).
    let spaced = format!("{};{}", &text[..=semi], &text[semi + 1..]);
    let virt = Path::new("/virtual/real/mt-daapd_comb.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let original = reports(&host);
    let (updates_before, _) = incremental_stats();
    // Verification panics inside the analysis on a difference.
    for _ in 0..2 {
        host.set_file_text(virt, spaced.as_str());
        reports(&host);
        host.set_file_text(virt, text.as_str());
        assert_eq!(reports(&host), original);
    }
    let (updates, _) = incremental_stats();
    assert!(
        updates >= updates_before + 4,
        "edits of yystpcpy walked from scratch"
    );
}

/// A join of a grandchild through a global id, made in a function of its
/// own: removing it must bring the grandchild's race with a sibling back, as
/// a walk from scratch does (its pending join must not outlive the edit).
#[test]
fn removing_a_pending_join_updates_the_walk_exactly() {
    let _serial = serial();
    set_verify(true);
    let program = |join: &str| {
        format!(
            r#"#include <pthread.h>
pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
pthread_t logger_id, spawner_id, helper_id;
int journal;
void *logger(void *arg) {{
  pthread_mutex_lock(&big);
  journal++;
  pthread_mutex_unlock(&big);
  return 0;
}}
void *helper(void *arg) {{ journal++; return 0; }}
void *spawner(void *arg) {{ pthread_create(&helper_id, 0, helper, 0); return 0; }}
void wait_helper(void) {{
  {join}
}}
int main(void) {{
  pthread_create(&logger_id, 0, logger, 0);
  pthread_mutex_lock(&big);
  pthread_create(&spawner_id, 0, spawner, 0);
  wait_helper();
  pthread_mutex_unlock(&big);
  return 0;
}}
"#
        )
    };
    let virt = Path::new("/virtual/pending_join.c");
    let joined = program("pthread_join(helper_id, 0);");
    let unjoined = program("// pthread_join(helper_id, 0);");
    let mut host = AnalysisHost::default();
    for text in [&joined, &unjoined, &joined] {
        host.set_file_text(virt, text.as_str());
        let mut fresh = AnalysisHost::default();
        fresh.set_file_text(virt, text.as_str());
        assert_eq!(reports(&host), reports(&fresh));
    }
    let mut a = AnalysisHost::default();
    a.set_file_text(virt, joined.as_str());
    let mut b = AnalysisHost::default();
    b.set_file_text(virt, unjoined.as_str());
    assert!(
        reports(&a).is_empty(),
        "the joined grandchild runs inside main's lock"
    );
    assert!(
        !reports(&b).is_empty(),
        "without the join the grandchild races with the logger"
    );
}

/// A program whose one global takes more accesses than the race check keeps
/// per object (4096): `workers` functions of `per` accesses each, called
/// from two threads in two locksets.
fn crowded_program(workers: usize, per: usize) -> String {
    let mut c = String::from(
        "#include <pthread.h>\nint g;\npthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n",
    );
    for w in 0..workers {
        c += &format!("void work{w}(void) {{\n");
        for a in 0..per {
            c += &format!("  g = g + {a};\n");
        }
        c += "}\n";
    }
    c += "void *t1(void *arg) {\n";
    for w in 0..workers {
        c += &format!("  work{w}();\n");
    }
    c += "  return 0;\n}\nvoid *t2(void *arg) {\n  pthread_mutex_lock(&m);\n";
    for w in 0..workers {
        c += &format!("  work{w}();\n");
    }
    c += "  pthread_mutex_unlock(&m);\n  return 0;\n}\n";
    c += "int main(void) {\n  pthread_t a, b;\n  pthread_create(&a, 0, t1, 0);\n  pthread_create(&b, 0, t2, 0);\n  return 0;\n}\n";
    c
}

#[test]
fn edits_of_a_program_over_the_fact_cap_update_the_walk_exactly() {
    let _serial = serial();
    // 40 x 60 accesses in two contexts: 4800 facts on `g`, over the cap.
    set_verify(true);
    let text = crowded_program(40, 60);
    let virt = Path::new("/virtual/crowded.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let original = reports(&host);
    // The cap keeps accesses of both threads, so races are still found.
    assert!(original.len() > 1000, "{}", original.len());
    assert!(original.iter().any(|r| r.contains("\"t1\"")));
    assert!(original.iter().any(|r| r.contains("\"t2\"")));
    let mut updated = 0;
    for edited in [
        text.replace("void work3(void) {\n", "void work3(void) {\n  g = 1;\n"),
        text.replace(
            "void work5(void) {\n  g = g + 0;",
            "void work5(void) {\n  // g = g + 0;",
        ),
    ] {
        assert_ne!(edited, text);
        let (after, up) = edit_and_report(&mut host, virt, edited.as_str());
        let mut fresh = AnalysisHost::default();
        fresh.set_file_text(virt, edited.as_str());
        assert_eq!(after, reports(&fresh));
        let (back, up_back) = edit_and_report(&mut host, virt, text.as_str());
        assert_eq!(back, original);
        updated += up as usize + up_back as usize;
    }
    assert_eq!(
        updated, 4,
        "a walk over the cap is kept and updated, not redone"
    );
}

/// A function whose callee creates a thread (as a callback registration
/// does in an event loop): edits of its body update the walk, and an edit
/// that changes which creations are replayed walks from scratch.
#[test]
fn edits_above_a_thread_creation_update_the_walk_exactly() {
    let _serial = serial();
    set_verify(true);
    let text = "#include <pthread.h>\n\
int counter;\n\
int seen;\n\
pthread_t t;\n\
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n\
void *worker(void *arg) {\n  counter = counter + 1;\n  pthread_mutex_lock(&m);\n  seen = seen + 1;\n  pthread_mutex_unlock(&m);\n  return 0;\n}\n\
void start(void) {\n  pthread_create(&t, 0, worker, 0);\n}\n\
void setup(int n) {\n  int i;\n  for (i = 0; i < n; i++)\n    start();\n  counter = 1;\n}\n\
int main(void) {\n  setup(4);\n  pthread_mutex_lock(&m);\n  seen = 0;\n  pthread_mutex_unlock(&m);\n  return 0;\n}\n";
    let virt = Path::new("/virtual/above_create.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text);
    let original = reports(&host);
    assert!(
        original.iter().any(|r| r.contains("counter")),
        "{original:?}"
    );
    let mut updated = Vec::new();
    for edited in [
        // Inside `setup`, after the creations: same threads, same replays.
        text.replace("  counter = 1;\n}", "  counter = 2;\n}"),
        text.replace("  counter = 1;\n}", "  counter = 1;\n  seen = seen;\n}"),
        // The loop goes: `start` runs once, nothing is replayed.
        text.replace("  for (i = 0; i < n; i++)\n    start();", "  start();"),
    ] {
        assert_ne!(edited, text);
        let (after, up) = edit_and_report(&mut host, virt, edited.as_str());
        let mut fresh = AnalysisHost::default();
        fresh.set_file_text(virt, edited.as_str());
        assert_eq!(after, reports(&fresh), "{edited}");
        let (back, up_back) = edit_and_report(&mut host, virt, text);
        assert_eq!(back, original);
        updated.push((up, up_back));
    }
    // The first two edits (and their reverts) are updates; the third
    // changes the creations and is walked again.
    assert_eq!(
        updated,
        [(true, true), (true, true), (false, false)],
        "edits above a creation are updated, not walked again"
    );
}

/// An edit that leaves a program which can start no thread (its only
/// `pthread_create` is broken and `void *worker(void *)` is no longer used
/// as a value) is not walked at all. An incremental update of the previous
/// revision's walk would still record `main`'s accesses. (Found by the
/// server's random edit sequences: `/*` typed into the creation's
/// arguments, then a character of `pthread_create` replaced.)
#[test]
fn an_edit_that_leaves_no_thread_creation_is_not_an_update() {
    let _serial = serial();
    set_verify(true);
    let text = "#include <pthread.h>\nint counter;\nvoid *worker(void *arg) {\n    counter++;\n    return 0;\n}\nint main(void) {\n    pthread_t t;\n    pthread_create(&t, 0, worker, 0);\n    counter = counter + 1;\n    pthread_join(t, 0);\n    return 0;\n}\n";
    let broken = text.replace(
        "pthread_create(&t, 0, worker, 0);",
        "pthread_create(/*, worker, 0);",
    );
    let renamed = broken.replace("pthread_create", "pthre _create");
    let virt = Path::new("/virtual/last_creation.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text);
    let original = reports(&host);
    assert!(!original.is_empty());
    // Verification panics inside the analysis on a difference.
    // With the same history, a fresh host has the same last good versions
    // (baseline.rs): `main` stands as its version with the creation while
    // its text has new syntax errors.
    for (i, edited) in [&broken, &renamed].into_iter().enumerate() {
        host.set_file_text(virt, edited.as_str());
        let history: Vec<&str> = [text, &broken, &renamed][..i + 2].to_vec();
        assert_eq!(reports(&host), replayed(virt, &history));
    }
    host.set_file_text(virt, text);
    assert_eq!(reports(&host), original);
}

/// A counter join (`walk/counters.rs`) reads who else writes the counter:
/// a new write of it in a function no thread reaches, an edit the walk does
/// not re-walk, must still end the join.
#[test]
fn a_new_writer_of_a_counter_ends_the_counter_join() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("counter_join_condvar.c");
    let base = format!("{text}\nvoid reset(void) {{\n  nworkers = 2;\n}}\n");
    let edited = base.replace("  nworkers = 2;", "  nworkers = 2;\n  running = 0;");
    let virt = Path::new("/virtual/counter_join_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    assert!(reports(&host).is_empty(), "{:?}", reports(&host));
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(
        after.iter().any(|r| r.contains("matches")),
        "the workers are no longer joined: {after:?}"
    );
    host.set_file_text(virt, base.as_str());
    assert!(reports(&host).is_empty());
}

/// A member counter of a creation loop (`walk/slots.rs`) counts only while
/// no other function writes it: a new writer elsewhere, in a function the
/// walk does not re-walk, must bring the pool's races back.
#[test]
fn a_new_writer_of_a_member_counter_ends_its_numbers() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("slot_number_member_counter.c");
    let base = format!("{text}\nvoid spare(void) {{\n  o.no = 4;\n}}\n");
    let edited = base.replace("  o.no = 4;\n}", "  o.no = 4;\n  o.cur = 0;\n}");
    let virt = Path::new("/virtual/member_counter_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let before = reports(&host);
    assert!(!before.iter().any(|r| r.contains("start_a")), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(|r| r.contains("start_a")), "{after:?}");
    host.set_file_text(virt, base.as_str());
    assert_eq!(reports(&host), before);
}

/// An array of pointers keeps its elements' objects apart
/// (`walk/inject.rs`) only while every store into it is a fresh object's:
/// an edit of a helper that copies one element into another spoils it.
#[test]
fn copying_an_element_spoils_a_pointer_array() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("pointer_array_fresh_elements.c")
        .replace("    run(own_global);", "    setup();\n    run(own_global);")
        .replace(
            "int main(void) {",
            "static void setup(void) {\n    ws[0]->total = 0;\n}\n\nint main(void) {",
        );
    let edited = text.replace("    ws[0]->total = 0;", "    ws[1] = ws[0];");
    let virt = Path::new("/virtual/pointer_array_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let before = reports(&host);
    assert!(
        !before.iter().any(|r| r.contains("own_global")),
        "{before:?}"
    );
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(|r| r.contains("own_global")), "{after:?}");
    host.set_file_text(virt, text.as_str());
    assert_eq!(reports(&host), before);
}

/// A binary semaphore (`walk/semaphores.rs`) is judged from every function
/// that names it: a stray post in a function no thread reaches, an edit the
/// walk does not re-walk, must still end its use as a mutex.
#[test]
fn a_stray_post_ends_a_binary_semaphore() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("binary_semaphore_mutex.c");
    let base = format!("{text}\nvoid spare(void) {{\n  entries = 0;\n}}\n");
    let edited = base.replace("  entries = 0;", "  entries = 0;\n  sem_post(&table_sem);");
    let virt = Path::new("/virtual/binary_semaphore_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let before = reports(&host);
    assert!(
        !before.iter().any(|r| r.contains("\"entries\"")),
        "{before:?}"
    );
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(|r| r.contains("\"entries\"")), "{after:?}");
}

/// Edits of a counter join's entry update the walk incrementally while its
/// ending stays (typing in the worker), and end the join when the worker
/// writes after counting itself out.
#[test]
fn edits_of_a_counted_worker_update_the_join_exactly() {
    let _serial = serial();
    set_verify(true);
    let base = fixture_text("counter_join_condvar.c");
    let virt = Path::new("/virtual/counter_join_worker.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    assert!(reports(&host).is_empty());
    // A statement before the counting out: still joined, and incremental.
    let inside = base.replace(
        "  pthread_mutex_unlock(&stats_lock);\n",
        "  pthread_mutex_unlock(&stats_lock);\n  nworkers = nworkers;\n",
    );
    let (r, incremental) = edit_and_report(&mut host, virt, &inside);
    assert_eq!(r, replayed(virt, &[&inside]));
    assert!(
        incremental,
        "an edit that keeps the worker's ending walks from scratch"
    );
    // A write after it: no longer joined.
    let after = base.replace(
        "  pthread_cond_signal(&done_cv);\n  return NULL;",
        "  pthread_cond_signal(&done_cv);\n  matches = 0;\n  return NULL;",
    );
    let (r, _) = edit_and_report(&mut host, virt, &after);
    assert_eq!(r, replayed(virt, &[&after]));
    assert!(r.iter().any(|x| x.contains("matches")), "{r:?}");
}

/// A hand-made reader-writer lock (`walk/gates.rs`) is judged from all its
/// functions together, whose bodies the walk does not enter: a reader that
/// no longer waits for the writer must end the lock's use as one.
#[test]
fn a_reader_that_stops_waiting_ends_a_handmade_rwlock() {
    let _serial = serial();
    set_verify(true);
    let base = fixture_text("handmade_rwlock.c");
    let edited = base.replace("while (l->writers || l->wishwrite)", "while (l->wishwrite)");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/handmade_rwlock_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let before = reports(&host);
    let on_table = |r: &String| r.contains("var: \"table");
    assert!(!before.iter().any(on_table), "{before:?}");
    assert!(before.iter().any(|r| r.contains("\"hits\"")), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_table), "{after:?}");
}

/// A global that stays zero (`walk/constants.rs`) is judged from every
/// function's text: a write added in a function no thread reaches, an
/// edit the walk does not re-walk, must still bring its branch back.
#[test]
fn a_new_write_of_a_flag_brings_its_branch_back() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("flag_never_set.c");
    let base = format!("{text}\nvoid spare(void) {{\n  traced = 0;\n}}\n");
    let edited = base.replace("  traced = 0;\n}", "  traced = 0;\n  use_cache = 1;\n}");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/flag_never_set_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_hits = |r: &String| r.contains("var: \"cache_hits\"");
    let before = reports(&host);
    assert!(!before.iter().any(on_hits), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_hits), "{after:?}");
}

/// A member of a struct global that stays zero is judged the same way, by
/// member chain: a write of the member (in a function no thread reaches)
/// brings back the branches of the copies handed by value; a write of
/// another member does not.
#[test]
fn a_new_write_of_a_copied_member_brings_its_branch_back() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("value_guard_struct_copy.c");
    let base = format!("{text}\nvoid spare(void) {{\n  opts.force = 2;\n}}\n");
    let other = base.replace(
        "  opts.force = 2;\n}",
        "  opts.force = 2;\n  package_opts.force = 0;\n}",
    );
    let token = base.replace(
        "  opts.force = 2;\n}",
        "  opts.force = 2;\n  package_opts.token = \"t\";\n}",
    );
    let virt = Path::new("/virtual/value_guard_struct_copy_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_token = |r: &String| r.contains("var: \"opts.token\"");
    let before = reports(&host);
    assert!(!before.iter().any(on_token), "{before:?}");
    host.set_file_text(virt, other.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&other]));
    assert!(!after.iter().any(on_token), "{after:?}");
    host.set_file_text(virt, token.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&token]));
    assert!(after.iter().any(on_token), "{after:?}");
}

/// A global assigned only a parameter that every call passes zero is
/// judged from every call of that function: a call passing 1 (in a
/// function no thread reaches) brings its branches back.
#[test]
fn a_new_nonzero_call_of_a_setter_brings_its_branch_back() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("global_set_from_zero_parameter.c");
    let base = format!("{text}\nvoid spare(void) {{\n  stop();\n}}\n");
    let edited = base.replace("  stop();\n}\n", "  init(0, 1);\n}\n");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/global_set_from_zero_parameter_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_msgs = |r: &String| r.contains("var: \"msgs\"");
    let before = reports(&host);
    assert!(!before.iter().any(on_msgs), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_msgs), "{after:?}");
    host.set_file_text(virt, base.as_str());
    let back = reports(&host);
    assert_eq!(back, before);
}

/// The other way round: removing the only write of a flag makes it stay
/// zero, and its branch goes, exactly as a walk from scratch finds.
#[test]
fn removing_the_only_write_of_a_flag_removes_its_branch() {
    let _serial = serial();
    set_verify(true);
    let base = fixture_text("flag_never_set.c");
    let edited = base.replace("enable(&use_stats);", "enable(&traced);");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/flag_write_removed.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_stats = |r: &String| r.contains("var: \"stats\"");
    let before = reports(&host);
    assert!(before.iter().any(on_stats), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(!after.iter().any(on_stats), "{after:?}");
}

/// A call through a pointer the walk cannot resolve may call any function
/// whose address went into an integer (`walk/laundered.rs`), a set read
/// from every function's casts: an edit that stops hiding a builtin in an
/// integer, in a function the walk does not re-walk, must drop the race in
/// its body exactly as a walk from scratch does, and bring it back.
#[test]
fn a_function_no_longer_cast_to_an_integer_is_no_longer_called() {
    let _serial = serial();
    set_verify(true);
    let base = fixture_text("fn_pointer_in_integer.c");
    let edited = base.replace(
        "table[0] = builtin_value(op_count);",
        "table[0] = builtin_value(op_local);",
    );
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/fn_pointer_in_integer_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_calls = |r: &String| r.contains("var: \"calls\"");
    let before = reports(&host);
    assert!(before.iter().any(on_calls), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(!after.iter().any(on_calls), "{after:?}");
    host.set_file_text(virt, base.as_str());
    assert_eq!(reports(&host), before);
}

/// Whether a function is an allocation wrapper reads whether the functions
/// it hands the new object to keep it (`walk/store.rs`): an edit of such a
/// callee, which changes neither the wrapper's summary nor the pointer
/// store, must change the reports exactly as a walk from scratch does, and
/// change them back.
#[test]
fn a_callee_that_stops_keeping_its_argument_makes_a_wrapper() {
    let _serial = serial();
    set_verify(true);
    let base = r#"#include <pthread.h>
#include <stdlib.h>
struct conn { int state; };
static pthread_key_t key;
static struct conn *ga, *gb;
static void remember(struct conn *c) {
    pthread_setspecific(key, c);
}
static struct conn *conn_new(void) {
    struct conn *c = malloc(sizeof *c);
    remember(c);
    return c;
}
static void *ta(void *arg) { ga->state = 1; return arg; }
static void *tb(void *arg) { gb->state = 2; return arg; }
int main(void) {
    pthread_t a, b;
    pthread_key_create(&key, NULL);
    ga = conn_new();
    gb = conn_new();
    pthread_create(&a, NULL, ta, NULL);
    pthread_create(&b, NULL, tb, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
"#;
    let edited = base.replace("    pthread_setspecific(key, c);\n", "    (void) c;\n");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/remember_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base);
    let before = reports(&host);
    // One object for both connections: the threads' writes race.
    assert!(!before.is_empty(), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    // conn_new is an allocation wrapper now: two objects, no race.
    assert!(after.is_empty(), "{after:?}");
    host.set_file_text(virt, base);
    assert_eq!(reports(&host), before);
}

/// Whether a call through a function-pointer member allocates reads every
/// assignment of that member in the program (`walk/alloc_wrappers.rs`): an
/// edit of another function's body that stores a function returning one
/// static object into the member must change the reports exactly as a walk
/// from scratch does, and change them back.
#[test]
fn a_new_value_of_an_allocator_member_ends_the_wrapper() {
    let _serial = serial();
    set_verify(true);
    let base = r#"#include <pthread.h>
#include <stdlib.h>
struct settings { void *(*alloc)(size_t n); };
struct conn { int state; };
static struct settings g;
static struct conn the_conn;
static struct conn *ga, *gb;
static void *crt_alloc(size_t n) { return malloc(n); }
static void *one_conn(size_t n) { (void) n; return &the_conn; }
static void configure(int fixed) {
    if (fixed)
        g.alloc = crt_alloc;
}
static void *lib_alloc(size_t n) { return g.alloc(n); }
static void *ta(void *arg) { ga->state = 1; return arg; }
static void *tb(void *arg) { gb->state = 2; return arg; }
int main(void) {
    pthread_t a, b;
    g.alloc = crt_alloc;
    configure(1);
    ga = lib_alloc(sizeof *ga);
    gb = lib_alloc(sizeof *gb);
    pthread_create(&a, NULL, ta, NULL);
    pthread_create(&b, NULL, tb, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
"#;
    let edited = base.replace(
        "        g.alloc = crt_alloc;\n",
        "        g.alloc = one_conn;\n",
    );
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/allocator_member_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base);
    let before = reports(&host);
    // lib_alloc allocates at each call: two objects, no race.
    assert!(before.is_empty(), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    // The member may hold one_conn: one object for both, and the writes race.
    assert!(!after.is_empty(), "{after:?}");
    host.set_file_text(virt, base);
    assert_eq!(reports(&host), before);
}

/// A call through a pointer may reach only the functions the program uses
/// as values (`walk/store.rs`, `may_allocate`): while it cannot reach the
/// function that allocated a refreshed site's newest object, a local keeps
/// holding that object across the call. An edit of another function's
/// body that stores a function allocating from that site into the pointer
/// changes that, and must change the reports exactly as a walk from
/// scratch does, and change them back. (`get_mem` returns `char *`: a
/// `void *` function that may return fresh memory is a pool allocator,
/// an allocation site at each call, and the site would not be shared.)
#[test]
fn a_function_stored_as_a_value_is_reached_through_pointers() {
    let _serial = serial();
    set_verify(true);
    let base = r#"#include <pthread.h>
#include <stdlib.h>
struct pool { int size; int busy; };
struct ops { void (*log)(const char *); void *(*alloc)(size_t); };
static struct ops ops;
static char *get_mem(size_t n) {
    if (ops.alloc)
        return ops.alloc(n);
    return malloc(n);
}
static void quiet(const char *m) { (void)m; }
static void noisy(const char *m) { free(get_mem(8)); (void)m; }
static void setup(void) {
    ops.log = quiet;
}
struct pool *pool_new(int n) {
    struct pool *p = (struct pool *)get_mem(sizeof *p);
    ops.log("new pool");
    p->size = n;
    return p;
}
static void *worker(void *arg) {
    struct pool *p = arg;
    p->busy = p->size;
    return NULL;
}
int main(void) {
    pthread_t t[4];
    setup();
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, pool_new(i));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    (void)noisy;
    return 0;
}
"#;
    let edited = base.replace("    ops.log = quiet;\n", "    ops.log = noisy;\n");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/value_function_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base);
    let before = reports(&host);
    // `quiet` cannot allocate: `p->size = n` sets up the newest pool
    // before its worker gets it.
    assert!(!before.iter().any(|r| r.contains("size")), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    // `noisy` allocates from `get_mem`'s site too: `p` may no longer hold
    // the newest object of the site.
    assert!(after.iter().any(|r| r.contains("size")), "{after:?}");
    host.set_file_text(virt, base);
    assert_eq!(reports(&host), before);
}

/// An edit of a call's argument (`ws_addarg(& pwsc->request_headers, ..)`
/// mistyped as `request_heaers` in mt-daapd's `ws_getheaders`): the pointer
/// store passes arguments to the callee's parameters, so the update must
/// not keep the store as it was. It once did, and the update recorded
/// accesses through the callee's parameter that a walk from scratch does
/// not make.
#[test]
fn call_argument_edits_update_the_walk_exactly() {
    let _serial = serial();
    set_verify(true);
    let Some(text) = mt_daapd() else {
        return;
    };
    let call = "ws_addarg(& pwsc->request_headers, first";
    let at = text.find(call).expect("the header call in ws_getheaders");
    let edited = format!(
        "{}{}{}",
        &text[..at],
        call.replace("request_headers", "request_heaers"),
        &text[at + call.len()..]
    );
    let virt = Path::new("/virtual/real/mt-daapd_comb.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let original = reports(&host);
    // Verification panics inside the analysis on a difference.
    host.set_file_text(virt, edited.as_str());
    assert_eq!(reports(&host), replayed(virt, &[&text, &edited]));
    host.set_file_text(virt, text.as_str());
    assert_eq!(reports(&host), original);
}

/// An edit that changes the pointer store walks the program again, and so
/// does its undo: one walk per program is kept (two doubled the server's
/// memory), and it is the edit's. An edit of another function after the
/// undo updates the new walk incrementally, exactly as a walk from scratch.
#[test]
fn a_store_changing_edit_and_its_undo_keep_one_walk() {
    let _serial = serial();
    set_verify(true);
    let base = r#"#include <pthread.h>
int a, b, c;
int *gp;
static void point(void) {
    gp = &a;
}
static void *worker(void *arg) {
    *gp = 1;
    c++;
    return arg;
}
int main(void) {
    pthread_t t;
    point();
    pthread_create(&t, NULL, worker, NULL);
    a = 2;
    b = 3;
    pthread_join(t, NULL);
    return 0;
}
"#;
    let edited = base.replace("    gp = &a;\n", "    gp = &b;\n");
    let later = base.replace("    c++;\n", "    c++;\n    c--;\n");
    assert!(edited != base && later != base);
    let virt = Path::new("/virtual/store_edit_undo.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base);
    let before = reports(&host);
    assert!(
        before.iter().any(|r| r.contains("var: \"a\"")),
        "{before:?}"
    );
    // Walks kept over the process (other tests' hosts may keep theirs).
    let kept = host.retained()["walks kept"];
    let (after, updated) = edit_and_report(&mut host, virt, &edited);
    assert!(!updated, "the store changed: a walk from scratch");
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(|r| r.contains("var: \"b\"")), "{after:?}");
    assert_eq!(host.retained()["walks kept"], kept);
    let (undone, updated) = edit_and_report(&mut host, virt, base);
    assert!(
        !updated,
        "the undo changes the store back: a walk from scratch"
    );
    assert_eq!(undone, before);
    assert_eq!(host.retained()["walks kept"], kept);
    let (next, updated) = edit_and_report(&mut host, virt, &later);
    assert!(updated, "the kept walk is updated incrementally");
    assert_eq!(next, replayed(virt, &[&later]));
    assert_eq!(host.retained()["walks kept"], kept);
}

/// A global set lazily and never cleared (`walk/once.rs`) stops being one
/// when an edit, in a function that is never even called, clears it: the
/// workers may make it again, and their writes race, exactly as a walk
/// from scratch finds. The undo makes it one again.
#[test]
fn clearing_a_lazily_set_global_brings_its_making_back() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("lazy_global_before_threads.c");
    let base = format!("{text}\nvoid spare(void) {{\n  loop_fd = 4;\n}}\n");
    let edited = base.replace("  loop_fd = 4;\n}", "  loop_fd = 4;\n  env = 0;\n}");
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/lazy_global_cleared.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_env = |r: &String| r.contains("var: \"env\"");
    let before = reports(&host);
    assert!(!before.iter().any(on_env), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_env), "{after:?}");
    host.set_file_text(virt, base.as_str());
    assert_eq!(reports(&host), before);
}

/// A once flag (`walk/once.rs`) stops being one when an edit clears it
/// elsewhere: the filling branch may run again after a reader passed the
/// test, and the reads race with it, exactly as a walk from scratch finds.
#[test]
fn clearing_a_once_flag_brings_its_races_back() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("once_init_under_lock.c");
    let base = format!("{text}\nvoid spare(void) {{\n  names_ready = 1;\n}}\n");
    let edited = base.replace(
        "  names_ready = 1;\n}",
        "  names_ready = 1;\n  table_ready = 0;\n}",
    );
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/once_flag_cleared.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let on_table = |r: &String| r.contains("var: \"table") && !r.contains("table_ready");
    let before = reports(&host);
    assert!(!before.iter().any(on_table), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_table), "{after:?}");
    host.set_file_text(virt, base.as_str());
    assert_eq!(reports(&host), before);
}

/// Of the walks kept for programs other than the one walked last, the one
/// that costs most to redo stays: in a workspace of one large program and
/// two small ones, editing the small ones in turn does not make the next
/// edit of the large one walk it from scratch (it did when the oldest walk
/// went first: memcached's two test programs, walked after memcached at
/// open, evicted its 9 s walk).
#[test]
fn editing_small_programs_keeps_the_large_programs_walk() {
    let _serial = serial();
    set_verify(true);
    let small = |name: &str| {
        format!(
            r#"#include <pthread.h>
int {name}_n;
static void {name}_bump(void) {{
    {name}_n++;
}}
static void *{name}_worker(void *arg) {{
    {name}_bump();
    return arg;
}}
int main(void) {{
    pthread_t t;
    pthread_create(&t, NULL, {name}_worker, NULL);
    {name}_n = 2;
    pthread_join(t, NULL);
    return 0;
}}
"#
        )
    };
    // Many calling contexts: many more steps than the small programs.
    let mut big = String::from("#include <pthread.h>\nint big_n, big_m;\n");
    big.push_str("static void leaf(int *p) {\n    *p += 1;\n    big_m++;\n}\n");
    for i in 0..12 {
        big.push_str(&format!(
            "static void mid{i}(int k) {{\n    int v = k;\n    leaf(&v);\n    leaf(&big_n);\n    leaf(&v);\n}}\n"
        ));
    }
    big.push_str("static void *big_worker(void *arg) {\n");
    for i in 0..12 {
        big.push_str(&format!("    mid{i}({i});\n"));
    }
    big.push_str("    return arg;\n}\n");
    big.push_str(
        "int main(void) {\n    pthread_t t[2];\n    pthread_create(&t[0], NULL, big_worker, NULL);\n    pthread_create(&t[1], NULL, big_worker, NULL);\n    big_m = 1;\n    pthread_join(t[0], NULL);\n    pthread_join(t[1], NULL);\n    return 0;\n}\n",
    );
    let (s1, s2) = (small("one"), small("two"));
    let bump = |text: &str, var: &str| {
        text.replace(
            &format!("    {var}++;\n"),
            &format!("    {var}++;\n    {var}--;\n"),
        )
    };
    let paths = [
        Path::new("/virtual/kept/big.c"),
        Path::new("/virtual/kept/one.c"),
        Path::new("/virtual/kept/two.c"),
    ];
    let mut host = AnalysisHost::default();
    host.set_file_text(paths[0], big.as_str());
    host.set_file_text(paths[1], s1.as_str());
    host.set_file_text(paths[2], s2.as_str());
    let first = reports(&host);
    assert!(first.iter().any(|r| r.contains("big_m")), "{first:?}");
    assert!(first.iter().any(|r| r.contains("one_n")), "{first:?}");
    // The large program is walked last, then the small ones after it.
    edit_and_report(&mut host, paths[0], &bump(&big, "big_m"));
    edit_and_report(&mut host, paths[1], &bump(&s1, "one_n"));
    edit_and_report(&mut host, paths[2], &bump(&s2, "two_n"));
    let (_, updated) = edit_and_report(&mut host, paths[0], &big);
    assert!(updated, "the large program's walk was kept and updated");
}

/// A helper's parameter holds a slot thread's number only while every call
/// passes the number (`slots::number_params`): an edit of another function
/// that adds a call with a constant brings the helper's races back, and
/// undoing it removes them, each through an incremental update.
#[test]
fn a_new_call_of_a_numbered_helper_brings_its_races_back() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("slot_number_passed_to_helper.c");
    let edited = text.replace("    bump(0);\n", "    bump(0);\n    store(0, 1);\n");
    assert_ne!(text, edited);
    let virt = Path::new("/virtual/numbered_helper.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let on_results = |r: &String| r.contains("var: \"results");
    let before = reports(&host);
    assert!(!before.iter().any(on_results), "{before:?}");
    let (updates, _) = incremental_stats();
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_results), "{after:?}");
    host.set_file_text(virt, text.as_str());
    assert_eq!(reports(&host), before);
    assert!(incremental_stats().0 > updates, "no incremental update");
}

/// A thread that ends through `pthread_exit` leaves running what it has not
/// joined there, in its start routine or in a callee (`Thread::leaks`):
/// an edit that moves the start routine's `pthread_exit` before its join
/// loop, or makes the helper's `pthread_exit` a return, changes which
/// races main's writes after the join have, exactly as a walk from scratch.
#[test]
fn moving_a_pthread_exit_updates_what_a_thread_leaves_running() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("thread_exit_after_joining.c");
    let virt = Path::new("/virtual/thread_exit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let on =
        |field: &str, r: &[String]| r.iter().any(|x| x.contains(&format!("var: \"opt.{field}")));
    let before = reports(&host);
    assert!(!on("flag", &before) && on("depth", &before), "{before:?}");
    let early = text.replace(
        "    free(tid);\n    pthread_exit(NULL);\n",
        "    pthread_exit(NULL);\n    free(tid);\n",
    );
    let early = early.replace(
        "    for (i = 0; i < n; i++)\n        pthread_join(tid[i], NULL);\n    pthread_exit(NULL);\n",
        "    pthread_exit(NULL);\n    for (i = 0; i < n; i++)\n        pthread_join(tid[i], NULL);\n",
    );
    assert_ne!(text, early);
    let after = edit_and_report(&mut host, virt, &early).0;
    assert_eq!(after, replayed(virt, &[&early]));
    assert!(on("flag", &after), "{after:?}");
    let returns = text.replace(
        "    pthread_exit((void *)(long)code);\n",
        "    (void)code;\n    return;\n",
    );
    assert_ne!(text, returns);
    let after = edit_and_report(&mut host, virt, &returns).0;
    assert_eq!(after, replayed(virt, &[&returns]));
    assert!(!on("depth", &after), "{after:?}");
    host.set_file_text(virt, text.as_str());
    assert_eq!(reports(&host), before);
}

/// A local of a function the workers never run (`serve`'s `res`, handed
/// through a global) is one frame their instances share; once an edit
/// makes a worker call `serve` itself, the local may be its own frame's.
/// The update must say so as a walk from scratch does.
#[test]
fn calling_the_owner_of_a_shared_local_updates_which_frames_instances_share() {
    let _serial = serial();
    set_verify(true);
    let text = "#include <pthread.h>\n\
        struct arg { int *out; };\n\
        struct arg g;\n\
        int depth;\n\
        void serve(void);\n\
        void *w(void *p) {\n\
            g.out[0] = 1;\n\
            if (depth > 1) {\n\
                depth = 0;\n\
            }\n\
            return p;\n\
        }\n\
        void serve(void) {\n\
            int res[4];\n\
            g.out = res;\n\
            while (depth < 100) depth = depth;\n\
        }\n\
        int main(void) {\n\
            pthread_t t[4];\n\
            for (int i = 0; i < 4; i++)\n\
                pthread_create(&t[i], 0, w, 0);\n\
            serve();\n\
            for (int i = 0; i < 4; i++)\n\
                pthread_join(t[i], 0);\n\
            return 0;\n\
        }\n";
    let virt = Path::new("/virtual/outer_local.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text);
    let on = |r: &[String]| {
        r.iter()
            .any(|x| x.contains("var: \"res[0]\"") && x.contains("(another instance)"))
    };
    let before = reports(&host);
    assert!(on(&before), "{before:?}");
    let calls = text.replace("depth = 0;", "depth = 0; serve();");
    assert_ne!(text, calls);
    let (after, incremental) = edit_and_report(&mut host, virt, &calls);
    assert!(incremental);
    assert_eq!(after, replayed(virt, &[&calls]));
    assert!(!on(&after), "{after:?}");
    let after = edit_and_report(&mut host, virt, text).0;
    assert_eq!(after, replayed(virt, &[text]));
    assert_eq!(after, before);
}

/// A join helper's loop runs to a parameter that every call passes as the
/// same constant: an edit of the caller that changes the constant changes
/// which threads the helper joins, as a walk from scratch says.
#[test]
fn changing_a_join_helpers_constant_count_updates_the_joins() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("join_helper_constant_count.c");
    let virt = Path::new("/virtual/join_helper.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, text.as_str());
    let on = |r: &[String]| r.iter().any(|x| x.contains("var: \"r["));
    let before = reports(&host);
    assert!(!on(&before), "{before:?}");
    let fewer = text.replace("wait_all(t, N);", "wait_all(t, 2);");
    assert_ne!(text, fewer);
    let after = edit_and_report(&mut host, virt, &fewer).0;
    assert_eq!(after, replayed(virt, &[&fewer]));
    assert!(on(&after), "{after:?}");
    let after = edit_and_report(&mut host, virt, &text).0;
    assert_eq!(after, before);
}

/// An own member cell (`walk/own.rs`) holds only while every store into a
/// member of its name is of the storing instance's own allocation: a store
/// of something else, by an edit of a helper the walk updates alone, must
/// end it, and undoing the edit restores it.
#[test]
fn a_foreign_store_ends_an_own_member_cell() {
    let _serial = serial();
    set_verify(true);
    let text = fixture_text("own_member_cell.c");
    let base = text
        .replace(
            "int main(void) {",
            "static void spare(struct browser *b) {\n    b->id = 0;\n}\n\nint main(void) {",
        )
        .replace(
            "pthread_create(&t[i], NULL, crew, p);",
            "pthread_create(&t[i], NULL, crew, p);\n    spare(bs[0]);",
        );
    assert!(base.contains("spare(bs[0]);"));
    let edited = base.replace("    b->id = 0;", "    b->conn = (struct conn *)b->tally;");
    let virt = Path::new("/virtual/own_member_cell_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let before = reports(&host);
    assert!(!before.iter().any(|r| r.contains(".bytes\"")), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(|r| r.contains(".bytes\"")), "{after:?}");
    host.set_file_text(virt, base.as_str());
    assert_eq!(reports(&host), before);
}

/// A helper that stores another object through the address of a parser's
/// cursor (`*pc = shared_ptr`) ends the cursor's promise: the reads through
/// it pair with other threads' writes again, after an incremental update as
/// after a walk from scratch, and undoing the edit takes them away.
#[test]
fn a_foreign_store_through_its_address_ends_a_local_cell() {
    let _serial = serial();
    set_verify(true);
    let base = fixture_text("own_local_cell.c");
    let edited = base.replace(
        "    n++;\n    (*pc)++;",
        "    n++;\n    if (n > 40)\n      *pc = shared_ptr;\n    (*pc)++;",
    );
    assert_ne!(base, edited);
    let virt = Path::new("/virtual/own_local_cell_edit.c");
    let mut host = AnalysisHost::default();
    host.set_file_text(virt, base.as_str());
    let before = reports(&host);
    let on_copy = |r: &String| r.contains("allocated in parser)");
    assert!(!before.iter().any(on_copy), "{before:?}");
    host.set_file_text(virt, edited.as_str());
    let after = reports(&host);
    assert_eq!(after, replayed(virt, &[&edited]));
    assert!(after.iter().any(on_copy), "{after:?}");
    host.set_file_text(virt, base.as_str());
    assert_eq!(reports(&host), before);
}
