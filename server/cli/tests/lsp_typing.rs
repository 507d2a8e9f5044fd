//! Typing through a real client: spawn `racelens lsp`, type statements into
//! a thread function one character per `didChange`, and check every
//! publish. While the text has syntax errors, the diagnostics must be those
//! of the last text that parsed (the last good version of the edited
//! function, analysis `baseline.rs`), at the same places, with only the
//! edited function's own marked as possibly stale. A slip in a name (one
//! that parses but that nothing declares) keeps them too.

mod common;

use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

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

/// Typed before `worker`'s `return 0;`.
const TYPED: &str =
    "    counter++;\n    pthread_mutex_lock(&m);\n    total++;\n    pthread_mutex_unlock(&m);\n";

const NOTE: &str =
    " (possibly stale: `worker` has syntax errors, so its last good version is shown)";

fn offset(text: &str, pos: &Value) -> usize {
    let line = pos["line"].as_u64().unwrap() as usize;
    let col = pos["character"].as_u64().unwrap() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    start + col
}

/// (start, end, message) of each race diagnostic, in offsets of `text`,
/// sorted.
fn races(text: &str, diags: &[Value]) -> Vec<(usize, usize, String)> {
    let mut v: Vec<_> = diags
        .iter()
        .filter(|d| d["code"] == "data-race")
        .map(|d| {
            (
                offset(text, &d["range"]["start"]),
                offset(text, &d["range"]["end"]),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A client with one open document, `typing.c` holding `PROGRAM`.
struct Typist {
    dir: std::path::PathBuf,
    uri: String,
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    incoming: std::sync::mpsc::Receiver<Value>,
}

impl Typist {
    fn open(tag: &str) -> (Typist, Vec<Value>) {
        let dir = std::env::temp_dir().join(format!("racelens-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("typing.c");
        std::fs::write(&path, PROGRAM).unwrap();
        let path = std::fs::canonicalize(&path).unwrap();
        let uri = format!("file://{}", path.display());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_racelens"));
        cmd.arg("lsp").current_dir(&dir).stderr(Stdio::null());
        let (child, stdin, incoming) = common::spawn(cmd);
        let mut t = Typist {
            dir,
            uri,
            child,
            stdin,
            incoming,
        };
        t.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": null, "rootUri": format!("file://{}", t.dir.display()),
            "capabilities": {}}}),
        );
        loop {
            let msg = t
                .incoming
                .recv_timeout(TIMEOUT)
                .expect("initialize answered");
            if msg["id"] == 1 && msg.get("method").is_none() {
                break;
            }
        }
        t.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        t.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": t.uri, "languageId": "c", "version": 1, "text": PROGRAM}}}),
        );
        let first = t.wait(1);
        (t, first)
    }

    fn send(&mut self, msg: Value) {
        let body = serde_json::to_vec(&msg).unwrap();
        self.stdin.write_all(&common::frame(&body)).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Replaces `line:start..end` (one line) with `text` as `version`.
    fn change(&mut self, version: i64, line: u32, start: u32, end: u32, text: &str) {
        self.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": self.uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": start},
                                          "end": {"line": line, "character": end}},
                                "text": text}]}}),
        );
    }

    /// Waits for the publish of `version` (every analysed version is
    /// published: its version differs from the last one sent).
    fn wait(&mut self, version: i64) -> Vec<Value> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let msg = self
                .incoming
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no diagnostics for version {version}"));
            if let (Some(id), Some(_)) = (msg.get("id"), msg.get("method")) {
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": Value::Null}));
            }
            let p = &msg["params"];
            if std::env::var_os("TYPING_DEBUG").is_some() {
                eprintln!("{} {} {}", msg["method"], p["uri"], p["version"]);
            }
            if msg["method"] == "textDocument/publishDiagnostics"
                && p["uri"] == self.uri.as_str()
                && p["version"] == version
            {
                return p["diagnostics"].as_array().cloned().unwrap_or_default();
            }
        }
    }
}

impl Drop for Typist {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn typing_statements_keeps_the_last_good_diagnostics() {
    let (mut t, first) = Typist::open("typing");

    let at = PROGRAM.find("    return 0;\n}\n\nstatic").unwrap();
    let mut good_text = PROGRAM.to_string();
    let mut good = races(PROGRAM, &first);
    let mut good_n = 0;
    let mut counts = vec![good.len()];
    let mut stale_publishes = 0;
    let (mut line, mut col) = (10u32, 0u32);
    for (n, ch) in TYPED.char_indices().map(|(i, c)| (i + 1, c)) {
        let version = n as i64 + 1;
        t.change(version, line, col, col, &ch.to_string());
        if ch == '\n' {
            (line, col) = (line + 1, 0);
        } else {
            col += 1;
        }
        let now = format!("{}{}{}", &PROGRAM[..at], &TYPED[..n], &PROGRAM[at..]);
        let diags = t.wait(version);
        let rs = races(&now, &diags);
        counts.push(rs.len());
        if !racelens_syntax::parse_text(&now).root_node().has_error() {
            assert!(
                rs.iter().all(|r| !r.2.contains("possibly stale")),
                "{rs:#?}"
            );
            (good_text, good, good_n) = (now, rs, n);
            continue;
        }
        stale_publishes += 1;
        // Back to the last good text's offsets: what was typed since it
        // sits at `at + good_n`.
        let back = |x: usize| {
            if x >= at + n {
                x - (n - good_n)
            } else {
                x.min(at + good_n.max(x.saturating_sub(at)).min(n))
            }
        };
        let mut mapped: Vec<(usize, usize, String)> = rs
            .iter()
            .map(|(s, e, m)| {
                let in_worker = m.ends_with(NOTE);
                assert!(
                    in_worker || !m.contains("possibly stale"),
                    "after {:?}: only `worker`'s own diagnostics are stale: {m}",
                    &TYPED[..n]
                );
                (back(*s), back(*e), m.trim_end_matches(NOTE).to_string())
            })
            .collect();
        mapped.sort();
        assert_eq!(
            mapped,
            good,
            "after {:?}: the diagnostics of the last good text:\n{good_text}",
            &TYPED[..n]
        );
    }
    eprintln!("race diagnostics per keystroke: {counts:?}");
    assert!(stale_publishes > 0);
}

/// A slip in a name parses but resolves to nothing (`total` becomes
/// `totl` in `worker`): the diagnostics stay those of the last good text,
/// `worker`'s marked with the name, until the slip is undone.
#[test]
fn a_slip_in_a_name_keeps_the_last_good_diagnostics() {
    let (mut t, first) = Typist::open("slip");
    let good = races(PROGRAM, &first);
    assert!(!good.is_empty());
    // `    total++;` is line 9 of PROGRAM (0-based); delete its `a`.
    assert_eq!(PROGRAM.lines().nth(9), Some("    total++;"));
    t.change(2, 9, 7, 8, "");
    let slip = PROGRAM.replacen("    total++;\n    return", "    totl++;\n    return", 1);
    let rs = races(&slip, &t.wait(2));
    let note = " (possibly stale: `worker` uses `totl`, which nothing in the workspace declares, so its last good version is shown)";
    let at = slip.find("totl++").unwrap();
    let back: Vec<(usize, usize, String)> = rs
        .iter()
        .map(|(s, e, m)| {
            let shift = |x: usize| if x > at + 2 { x + 1 } else { x };
            assert!(m.ends_with(note) || !m.contains("possibly stale"), "{m}");
            (shift(*s), shift(*e), m.trim_end_matches(note).to_string())
        })
        .collect();
    assert_eq!(back, good);
    assert!(rs.iter().any(|r| r.2.ends_with(note)), "{rs:#?}");
    // Undone: the current text again, nothing stale.
    t.change(3, 9, 7, 7, "a");
    assert_eq!(races(PROGRAM, &t.wait(3)), good);
}
