//! End-to-end tests of `racelens lsp`: spawn the binary, speak JSON-RPC
//! with Content-Length framing, and check what it publishes and answers.

mod common;

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A client speaking to a spawned server.
struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// Notifications and server requests seen so far, in order.
    seen: Vec<Value>,
    /// What `workspace/configuration` answers for the `racelens` section.
    settings: Value,
}

impl Client {
    fn spawn(root: Option<&Path>) -> Client {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_racelens"));
        cmd.arg("lsp")
            .current_dir(root.unwrap_or(Path::new(".")))
            .stderr(Stdio::null());
        let (child, stdin, incoming) = common::spawn(cmd);
        Client {
            child,
            stdin,
            incoming,
            next_id: 0,
            seen: Vec::new(),
            settings: json!({}),
        }
    }

    fn send(&mut self, msg: Value) {
        let body = serde_json::to_vec(&msg).unwrap();
        self.stdin.write_all(&common::frame(&body)).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send_raw(&mut self, body: &str) {
        self.stdin
            .write_all(&common::frame(body.as_bytes()))
            .unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Receives one message, answering the server's own requests.
    fn recv(&mut self, deadline: Instant) -> Option<Value> {
        let msg = match self
            .incoming
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => return None,
            Err(RecvTimeoutError::Disconnected) => panic!("server closed its output"),
        };
        if let (Some(id), Some(method)) = (msg.get("id"), msg.get("method").and_then(Value::as_str))
        {
            let result = match method {
                "workspace/configuration" => json!([self.settings.clone()]),
                _ => Value::Null,
            };
            self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        }
        if msg.get("method").is_some() {
            self.seen.push(msg.clone());
        }
        Some(msg)
    }

    /// Sends a request and waits for its response (result or error).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + TIMEOUT;
        while let Some(msg) = self.recv(deadline) {
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return msg;
            }
        }
        panic!("no response to {method}");
    }

    /// Has the server sent a message (request or notification) that
    /// satisfies `pred`, now or before the deadline? The workspace load
    /// runs beside the open file's analysis, so its messages may come
    /// after the diagnostics.
    fn seen_where(&mut self, pred: impl Fn(&Value) -> bool) -> bool {
        let deadline = Instant::now() + TIMEOUT;
        while !self.seen.iter().any(&pred) {
            if self.recv(deadline).is_none() {
                return false;
            }
        }
        true
    }

    /// Waits for a response (no `method`) that satisfies `pred`.
    fn response_where(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        while let Some(msg) = self.recv(deadline) {
            if msg.get("method").is_none() && pred(&msg) {
                return msg;
            }
        }
        panic!("no such response");
    }

    fn initialize(&mut self, capabilities: Value, root: Option<&Path>, options: Value) -> Value {
        let root_uri = root.map(uri);
        let folders = root
            .map(|r| json!([{"uri": uri(r), "name": "root"}]))
            .unwrap_or(Value::Null);
        let resp = self.request(
            "initialize",
            json!({"processId": null, "rootUri": root_uri, "workspaceFolders": folders, "capabilities": capabilities, "initializationOptions": options}),
        );
        self.notify("initialized", json!({}));
        resp["result"].clone()
    }

    fn open(&mut self, path: &Path, text: &str) {
        self.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri(path), "languageId": "c", "version": 1, "text": text}}));
    }

    fn change(&mut self, path: &Path, version: i32, changes: Value) {
        self.notify("textDocument/didChange", json!({"textDocument": {"uri": uri(path), "version": version}, "contentChanges": changes}));
    }

    /// Waits for diagnostics of `path` that satisfy `pred`, returning them.
    fn diagnostics_where(&mut self, path: &Path, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let want = uri(path);
        let deadline = Instant::now() + TIMEOUT;
        let mut last = None;
        while let Some(msg) = self.recv(deadline) {
            if msg["method"] == "textDocument/publishDiagnostics" && msg["params"]["uri"] == want {
                let diags = msg["params"]["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if pred(&diags) {
                    return diags;
                }
                last = Some(diags);
            }
        }
        panic!("timed out waiting for diagnostics of {want}; last published: {last:#?}");
    }

    fn races(&mut self, path: &Path, n: usize) -> Vec<Value> {
        self.diagnostics_where(path, |d| {
            d.iter().filter(|d| d["code"] == "data-race").count() == n
        })
    }

    fn shutdown(mut self) -> i32 {
        let resp = self.request("shutdown", Value::Null);
        assert!(resp.get("error").is_none(), "{resp}");
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "server did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// A fresh directory with the given files, canonicalised.
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("racelens-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    std::fs::canonicalize(&dir).unwrap()
}

fn utf8_caps() -> Value {
    json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}, "window": {"workDoneProgress": true},
           "workspace": {"configuration": true, "didChangeWatchedFiles": {"dynamicRegistration": true}}})
}

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

/// The same program with main's access guarded too.
const GUARDED: &str = "#include <pthread.h>
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
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    pthread_join(t, 0);
    return 0;
}
";

fn line_of(text: &str, needle: &str) -> u32 {
    text.lines().position(|l| l.contains(needle)).expect(needle) as u32
}

#[test]
fn open_publishes_races_with_related_information() {
    let dir = project("open", &[("race.c", RACY)]);
    let file = dir.join("race.c");
    let mut c = Client::spawn(Some(&dir));
    let init = c.initialize(utf8_caps(), Some(&dir), json!({}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    assert!(
        init.get("offsetEncoding").is_none(),
        "offsetEncoding only for clients that ask: {init}"
    );
    c.open(&file, RACY);
    let diags = c.races(&file, 2);
    let main_access = line_of(RACY, "pthread_create") + 1;
    let d = diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == main_access)
        .expect("race on main's access");
    assert_eq!(
        d["range"],
        json!({"start": {"line": main_access, "character": 4}, "end": {"line": main_access, "character": 11}})
    );
    assert_eq!(d["severity"], 2, "must-races are warnings");
    assert_eq!(d["source"], "racelens");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("data race on `counter`"),
        "{d}"
    );
    let related: Vec<&str> = d["relatedInformation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert!(
        related.contains(&"conflicting write in thread `worker`, holding {`m`}"),
        "{related:?}"
    );
    assert!(
        related.contains(&"thread `worker` is created here"),
        "{related:?}"
    );
    let created = d["relatedInformation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["message"] == "thread `worker` is created here")
        .unwrap();
    assert_eq!(created["location"]["uri"], uri(&file));
    assert_eq!(
        created["location"]["range"]["start"]["line"],
        line_of(RACY, "pthread_create")
    );
    // The workspace load reported progress and registered file watchers.
    assert!(c.seen_where(|m| m["method"] == "window/workDoneProgress/create"));
    assert!(c.seen_where(|m| m["method"] == "$/progress"
        && m["params"]["value"]["title"] == "racelens: loading workspace"));
    assert!(c.seen_where(|m| m["method"] == "client/registerCapability"
        && m["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles"));
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn diagnostics_gain_the_schedule_as_ordered_steps() {
    let dir = project("steps", &[("race.c", RACY)]);
    let file = dir.join("race.c");
    let mut c = Client::spawn(Some(&dir));
    c.initialize(utf8_caps(), Some(&dir), json!({}));
    c.open(&file, RACY);
    let main_access = line_of(RACY, "pthread_create") + 1;
    let steps_of = |d: &Value| -> Vec<(String, u64)> {
        d["relatedInformation"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter(|r| r["message"].as_str().unwrap().starts_with("step "))
                    .map(|r| {
                        (
                            r["message"].as_str().unwrap().to_string(),
                            r["location"]["range"]["start"]["line"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    // The plain diagnostics come first; the republished ones carry steps.
    let diags = c.diagnostics_where(&file, |d| {
        d.iter()
            .any(|d| d["range"]["start"]["line"] == main_access && !steps_of(d).is_empty())
    });
    let d = diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == main_access)
        .unwrap();
    let related = d["relatedInformation"].as_array().unwrap();
    // Conflicts and creations first, then the steps in order.
    let first_step = related
        .iter()
        .position(|r| r["message"].as_str().unwrap().starts_with("step "))
        .unwrap();
    assert!(related[..first_step]
        .iter()
        .any(|r| r["message"] == "thread `worker` is created here"));
    let steps = steps_of(d);
    for (i, (m, _)) in steps.iter().enumerate() {
        assert!(m.starts_with(&format!("step {}: ", i + 1)), "{steps:?}");
    }
    assert_eq!(
        steps[0],
        (
            format!(
                "step 1: thread `worker` #1 created at L{}",
                line_of(RACY, "pthread_create") + 1
            ),
            line_of(RACY, "pthread_create") as u64
        ),
        "{steps:?}"
    );
    let last = steps.last().unwrap();
    assert!(last.0.contains("`counter`"), "{steps:?}");
    assert!(
        steps.iter().any(|(_, l)| *l == main_access as u64),
        "a step points at main's access: {steps:?}"
    );
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn commenting_out_a_lock_adds_a_race_and_reverting_removes_it() {
    let dir = project("toggle", &[]);
    let file = dir.join("toggle.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.open(&file, GUARDED);
    c.diagnostics_where(&file, |d| d.is_empty());
    let lock = line_of(GUARDED, "pthread_create") + 1;
    let unlock = lock + 2;
    // Comment out main's lock and unlock in one didChange (bottom first
    // would also work; these are applied in order).
    c.change(&file, 2, json!([
        {"range": {"start": {"line": lock, "character": 4}, "end": {"line": lock, "character": 4}}, "text": "// "},
        {"range": {"start": {"line": unlock, "character": 4}, "end": {"line": unlock, "character": 4}}, "text": "// "},
    ]));
    let diags = c.races(&file, 2);
    assert!(
        diags
            .iter()
            .any(|d| d["range"]["start"]["line"] == lock + 1),
        "{diags:#?}"
    );
    c.change(&file, 3, json!([
        {"range": {"start": {"line": lock, "character": 4}, "end": {"line": lock, "character": 7}}, "text": ""},
        {"range": {"start": {"line": unlock, "character": 4}, "end": {"line": unlock, "character": 7}}, "text": ""},
    ]));
    c.diagnostics_where(&file, |d| d.is_empty());
}

#[test]
fn an_edit_in_one_file_changes_the_diagnostics_of_another() {
    let a = "#include <pthread.h>
extern int counter;
extern pthread_mutex_t m;
void *worker(void *arg) {
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    return 0;
}
";
    let b = "#include <pthread.h>
int counter;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
void *worker(void *arg);
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    pthread_join(t, 0);
    return 0;
}
";
    let dir = project("cross", &[("a.c", a), ("b.c", b)]);
    let (fa, fb) = (dir.join("a.c"), dir.join("b.c"));
    let mut c = Client::spawn(Some(&dir));
    c.initialize(utf8_caps(), Some(&dir), json!({}));
    c.open(&fa, a);
    c.open(&fb, b);
    c.diagnostics_where(&fb, |d| d.is_empty());
    // Drop the worker's lock in a.c: main's access in b.c now races.
    let lock = line_of(a, "pthread_mutex_lock");
    c.change(&fa, 2, json!([{"range": {"start": {"line": lock, "character": 0}, "end": {"line": lock + 1, "character": 0}}, "text": ""}]));
    let diags = c.races(&fb, 1);
    assert_eq!(diags[0]["range"]["start"]["line"], line_of(b, "counter++"));
    let related = diags[0]["relatedInformation"].as_array().unwrap();
    assert!(
        related.iter().any(|r| r["location"]["uri"] == uri(&fa)),
        "{related:#?}"
    );
}

/// The access sits after multibyte text on its line; its column differs by
/// encoding, and an edit addressed in that encoding must land right.
fn multibyte_positions(caps: Value, expect_encoding: &str, top_level_offset_encoding: bool) {
    let text = GUARDED.replace(
        "    pthread_mutex_lock(&m);\n    counter++;",
        "    /* é😀 */ pthread_mutex_lock(&m); counter++;",
    );
    let dir = project(
        &format!("enc-{expect_encoding}-{top_level_offset_encoding}"),
        &[],
    );
    let file = dir.join("enc.c");
    let mut c = Client::spawn(None);
    let init = c.initialize(caps, None, json!({}));
    assert_eq!(init["capabilities"]["positionEncoding"], expect_encoding);
    if top_level_offset_encoding {
        assert_eq!(init["offsetEncoding"], expect_encoding, "{init}");
    }
    c.open(&file, &text);
    c.diagnostics_where(&file, |d| d.is_empty());
    let line_no = line_of(&text, "é😀");
    let line = text.lines().nth(line_no as usize).unwrap();
    let col = |byte: usize| -> usize {
        if expect_encoding == "utf-8" {
            byte
        } else {
            line[..byte].encode_utf16().count()
        }
    };
    let lock = line.find("pthread_mutex_lock(&m);").unwrap();
    let (start, end) = (col(lock), col(lock + "pthread_mutex_lock(&m);".len()));
    c.change(&file, 2, json!([{"range": {"start": {"line": line_no, "character": start}, "end": {"line": line_no, "character": end}}, "text": "(void)0;"}]));
    let diags = c.races(&file, 2);
    let new_line = line.replace("pthread_mutex_lock(&m);", "(void)0;");
    let access = new_line.find("counter++").unwrap();
    let col = |byte: usize| {
        if expect_encoding == "utf-8" {
            byte
        } else {
            new_line[..byte].encode_utf16().count()
        }
    };
    let d = diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == line_no)
        .expect("race after the multibyte comment");
    assert_eq!(d["range"]["start"]["character"], col(access));
    assert_eq!(
        d["range"]["end"]["character"],
        col(access + "counter".len())
    );
}

#[test]
fn positions_after_multibyte_text_in_utf8() {
    multibyte_positions(
        json!({"general": {"positionEncodings": ["utf-16", "utf-8"]}}),
        "utf-8",
        false,
    );
}

#[test]
fn positions_after_multibyte_text_in_utf8_via_clangd_offset_encoding() {
    multibyte_positions(
        json!({"offsetEncoding": ["utf-8", "utf-16"]}),
        "utf-8",
        true,
    );
}

#[test]
fn positions_after_multibyte_text_in_utf16() {
    multibyte_positions(
        json!({"general": {"positionEncodings": ["utf-16"]}}),
        "utf-16",
        false,
    );
}

#[test]
fn explain_code_actions_and_hover_answer_without_errors() {
    let dir = project("explain", &[]);
    let file = dir.join("explain.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.open(&file, RACY);
    let diags = c.races(&file, 2);
    let main_access = line_of(RACY, "pthread_create") + 1;
    let pos = json!({"line": main_access, "character": 5});
    let resp = c.request(
        "workspace/executeCommand",
        json!({"command": "racelens.explain", "arguments": [{"uri": uri(&file), "position": pos}]}),
    );
    let result = &resp["result"];
    assert!(
        result["race"].as_str().unwrap().contains("`counter`"),
        "{resp}"
    );
    assert!(
        result["text"].is_string() && result["steps"].is_array(),
        "{resp}"
    );
    for step in result["steps"].as_array().unwrap() {
        assert!(
            step["message"].is_string()
                && step["uri"].is_string()
                && step["range"]["start"]["line"].is_number(),
            "{step}"
        );
    }
    let none = c.request("workspace/executeCommand", json!({"command": "racelens.explain", "arguments": [{"uri": uri(&file), "position": {"line": 0, "character": 0}}]}));
    assert_eq!(none["result"], Value::Null, "{none}");
    let bad = c.request(
        "workspace/executeCommand",
        json!({"command": "racelens.explain", "arguments": [{"uri": 3}]}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let d = diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == main_access)
        .unwrap();
    let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": uri(&file)}, "range": d["range"], "context": {"diagnostics": [d]}}));
    for a in actions["result"].as_array().expect("code actions") {
        assert_eq!(a["kind"], "quickfix", "{a}");
        assert_eq!(a["diagnostics"][0]["message"], d["message"], "{a}");
        assert!(a["edit"]["changes"][uri(&file)].is_array(), "{a}");
    }
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&file)}, "position": pos}),
    );
    assert!(hover.get("error").is_none(), "{hover}");
    if !hover["result"].is_null() {
        assert_eq!(hover["result"]["contents"]["kind"], "markdown");
    }
}

#[test]
fn bad_input_gets_errors_not_a_crash() {
    let dir = project("robust", &[]);
    let file = dir.join("r.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    let unknown = c.request("racelens/noSuchMethod", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let malformed = c.request("textDocument/hover", json!({"textDocument": 42}));
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");
    c.send_raw("{not json");
    let parse_error = c.response_where(|m| m["id"].is_null() && m.get("error").is_some());
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    c.send_raw(r#"{"jsonrpc":"2.0","id":77,"method":5}"#);
    let invalid = c.response_where(|m| m["id"] == 77);
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    // Edits to unopened documents are ignored; out-of-range positions clamp.
    c.change(&dir.join("never-opened.c"), 2, json!([{"text": "int x;"}]));
    c.open(&file, GUARDED);
    c.diagnostics_where(&file, |d| d.is_empty());
    c.change(&file, 2, json!([{"range": {"start": {"line": 999, "character": 999}, "end": {"line": 1000, "character": 0}}, "text": "\n/* tail */\n"}]));
    c.change(&file, 3, json!([{"range": {"start": {"line": 0, "character": 999}, "end": {"line": 0, "character": 1999}}, "text": ""}]));
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&file)}, "position": {"line": 99999, "character": 5}}),
    );
    assert!(hover.get("error").is_none(), "{hover}");
    c.diagnostics_where(&file, |d| d.is_empty());
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn a_broken_racelens_toml_gets_a_diagnostic_and_a_fix_clears_it() {
    let dir = project(
        "toml",
        &[("racelens.toml", "[locks]\nlock = 3\n"), ("main.c", RACY)],
    );
    let toml = dir.join("racelens.toml");
    let mut c = Client::spawn(Some(&dir));
    c.initialize(utf8_caps(), Some(&dir), json!({}));
    let diags = c.diagnostics_where(&toml, |d| !d.is_empty());
    assert_eq!(diags[0]["range"]["start"]["line"], 1, "{diags:#?}");
    assert_eq!(diags[0]["severity"], 1);
    std::fs::write(&toml, "[locks]\nlock = [\"my_lock\"]\n").unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&toml), "type": 2}]}),
    );
    c.diagnostics_where(&toml, |d| d.is_empty());
}

/// `c->n` goes through a pointer no analysis can resolve (`lookup` has no
/// body): a may race on `(struct conn).n`, with no concrete object.
const UNRESOLVED: &str = "#include <pthread.h>
struct conn {
    int n;
};
struct conn *lookup(int id);
int total;
void *worker(void *a) {
    struct conn *c = lookup(1);
    c->n++;
    total++;
    return a;
}
int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, 0, worker, 0);
    pthread_create(&t2, 0, worker, 0);
    pthread_join(t1, 0);
    pthread_join(t2, 0);
    return 0;
}
";

#[test]
fn may_races_without_a_concrete_object_show_only_when_asked() {
    let dir = project("unresolved", &[]);
    let file = dir.join("u.c");
    let mut c = Client::spawn(None);
    c.initialize(
        json!({"workspace": {"configuration": true}}),
        None,
        json!({}),
    );
    c.open(&file, UNRESOLVED);
    // By default only the race on `total` (a concrete object).
    let shown = c.races(&file, 1);
    let line = line_of(UNRESOLVED, "total++;");
    assert!(
        shown
            .iter()
            .all(|d| d["code"] != "data-race" || d["range"]["start"]["line"] == line),
        "{shown:?}"
    );
    c.settings = json!({"showUnresolved": true});
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": null}),
    );
    let all = c.races(&file, 2);
    let unresolved = line_of(UNRESOLVED, "c->n++;");
    assert!(
        all.iter().any(|d| d["range"]["start"]["line"] == unresolved
            && d["message"].as_str().unwrap().contains("struct conn")),
        "{all:?}"
    );
}

/// Striped locks: each thread locks `locks[hash % N]` around the object
/// the hash names. Which element is taken is not known, so the accesses
/// stay may races, but they are shown only with the unresolved ones.
const STRIPED: &str = "#include <pthread.h>
#include <stdlib.h>
#define N 16
pthread_mutex_t locks[N];
struct item {
    int hits;
};
struct item *table[64];
int total;
void *worker(void *a) {
    unsigned h = (unsigned)(long)a * 2654435761u;
    pthread_mutex_lock(&locks[h % N]);
    struct item *it = table[h % 64];
    if (!it) {
        it = calloc(1, sizeof *it);
        table[h % 64] = it;
    }
    it->hits++;
    pthread_mutex_unlock(&locks[h % N]);
    total++;
    return a;
}
int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], 0);
    return 0;
}
";

#[test]
fn may_races_under_a_striped_lock_show_only_when_asked() {
    let dir = project("striped", &[]);
    let file = dir.join("s.c");
    let mut c = Client::spawn(None);
    c.initialize(
        json!({"workspace": {"configuration": true}}),
        None,
        json!({}),
    );
    c.open(&file, STRIPED);
    let total = line_of(STRIPED, "total++;");
    let shown = c.races(&file, 1);
    assert!(
        shown
            .iter()
            .all(|d| d["code"] != "data-race" || d["range"]["start"]["line"] == total),
        "{shown:?}"
    );
    c.settings = json!({"showUnresolved": true});
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": null}),
    );
    let all = c.races(&file, 4);
    let hits = line_of(STRIPED, "it->hits++;");
    assert!(
        all.iter().any(|d| d["range"]["start"]["line"] == hits
            && d["message"]
                .as_str()
                .unwrap()
                .contains("an element of lock array `locks[*]` (which element is not known)")),
        "{all:?}"
    );
}

#[test]
fn settings_toggle_diagnostics() {
    let dir = project("settings", &[]);
    let file = dir.join("s.c");
    let mut c = Client::spawn(None);
    c.initialize(
        json!({"workspace": {"configuration": true}}),
        None,
        json!({"enable": false}),
    );
    c.open(&file, RACY);
    c.diagnostics_where(&file, |d| d.is_empty());
    c.settings = json!({"enable": true});
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": null}),
    );
    c.races(&file, 2);
    c.settings = json!({"enable": false});
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"racelens": {"enable": false}}}),
    );
    c.diagnostics_where(&file, |d| d.is_empty());
}

#[test]
fn unopened_files_follow_the_disk_even_when_not_utf8_and_close_reverts_to_it() {
    let worker = "#include <pthread.h>
extern int counter;
extern pthread_mutex_t m;
void *worker(void *arg) {
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    return 0;
}
";
    let main = GUARDED.replace(
        "void *worker(void *arg) {\n    pthread_mutex_lock(&m);\n    counter++;\n    pthread_mutex_unlock(&m);\n    return 0;\n}\n",
        "void *worker(void *arg);\n",
    );
    let dir = project("disk", &[("w.c", worker), ("main.c", &main)]);
    let (fw, fm) = (dir.join("w.c"), dir.join("main.c"));
    let mut c = Client::spawn(Some(&dir));
    c.initialize(utf8_caps(), Some(&dir), json!({}));
    c.open(&fm, &main);
    c.diagnostics_where(&fm, |d| d.is_empty());
    // On disk, the worker loses its lock (and gains bytes that are not
    // UTF-8, read lossily): main's access races.
    let mut unguarded = b"/* \xff\xfe latin-1 \xe9t\xe9 */\n".to_vec();
    unguarded.extend(worker.replace("    pthread_mutex_lock(&m);\n", "").bytes());
    std::fs::write(&fw, unguarded).unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&fw), "type": 2}]}),
    );
    c.races(&fm, 1);
    // Opening w.c with the guarded text wins over the disk; closing it
    // goes back to the disk.
    c.open(&fw, worker);
    c.races(&fm, 0);
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri(&fw)}}),
    );
    c.races(&fm, 1);
}

#[test]
fn two_hundred_back_to_back_edits_apply_in_order() {
    let text = RACY.replace(
        "    counter++;\n    pthread_join",
        "    /**/ counter++;\n    pthread_join",
    );
    let dir = project("burst", &[]);
    let file = dir.join("burst.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.open(&file, &text);
    c.races(&file, 2);
    let line = line_of(&text, "/**/");
    // Each edit types one more character inside the comment, right after
    // the previous one: any reordering would misplace characters.
    for k in 0..200i32 {
        let at = json!({"line": line, "character": 6 + k});
        c.change(
            &file,
            2 + k,
            json!([{"range": {"start": at, "end": at}, "text": "a"}]),
        );
    }
    // Intermediate revisions may be published or cancelled; the last one
    // must have every character in place.
    let end = 6 + 200 + 3;
    let on_line = |d: &Value| d["range"]["start"]["line"] == line;
    c.diagnostics_where(&file, |d| {
        d.iter()
            .any(|d| on_line(d) && d["range"]["start"]["character"] == end)
    });
    let last = c
        .seen
        .iter()
        .rev()
        .find(|m| m["method"] == "textDocument/publishDiagnostics")
        .unwrap();
    assert_eq!(last["params"]["version"], 201);
}

/// Applies LSP `TextEdit`s (UTF-16 positions, ASCII text here) to `text`.
fn apply_edits(text: &str, edits: &[Value]) -> String {
    let li = racelens_syntax::LineIndex::new(text);
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            let pos = |p: &Value| {
                li.offset(
                    text,
                    p["line"].as_u64().unwrap() as u32,
                    p["character"].as_u64().unwrap() as u32,
                    true,
                )
            };
            (
                pos(&e["range"]["start"]),
                pos(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Apply from the end so earlier offsets stay valid; equal starts keep list order.
    spans.sort_by(|a, b| b.0.cmp(&a.0));
    let mut out = text.to_string();
    for (s, e, t) in spans {
        out.replace_range(s..e, &t);
    }
    out
}

#[test]
fn applying_the_first_quick_fix_removes_the_race() {
    let dir = project("quickfix", &[]);
    let file = dir.join("quickfix.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.open(&file, RACY);
    let diags = c.races(&file, 2);
    let line = line_of(RACY, "pthread_create") + 1;
    let d = diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == line)
        .expect("a race in main")
        .clone();
    let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": uri(&file)}, "range": d["range"], "context": {"diagnostics": [d]}}));
    let first = actions["result"]
        .as_array()
        .and_then(|a| a.first())
        .cloned()
        .expect("a quick fix is offered");
    assert_eq!(first["kind"], "quickfix", "{first}");
    let edits = first["edit"]["changes"][uri(&file)]
        .as_array()
        .cloned()
        .expect("edits for this file");
    let fixed = apply_edits(RACY, &edits);
    assert_ne!(fixed, RACY);
    c.change(&file, 2, json!([{ "text": fixed }]));
    let after = c.races(&file, 0);
    assert!(
        after.iter().all(|d| d["code"] != "data-race"),
        "race left after `{}`:\n{fixed}\n{after:#?}",
        first["title"]
    );
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn lsp_accepts_the_stdio_flag() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_racelens"));
    cmd.args(["lsp", "--stdio"]).stderr(Stdio::null());
    let (child, stdin, incoming) = common::spawn(cmd);
    let mut c = Client {
        child,
        stdin,
        incoming,
        next_id: 0,
        seen: Vec::new(),
        settings: json!({}),
    };
    let caps = c.initialize(json!({}), None, json!({}));
    assert!(caps["capabilities"].is_object(), "{caps}");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn suppressed_races_get_no_diagnostic_and_a_quick_fix_suppresses() {
    let dir = project("suppress", &[]);
    let file = dir.join("s.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.open(&file, RACY);
    let diags = c.races(&file, 2);
    let main_access = line_of(RACY, "pthread_create") + 1;
    let d = diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == main_access)
        .unwrap();
    let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": uri(&file)}, "range": d["range"], "context": {"diagnostics": [d]}}));
    let list = actions["result"].as_array().expect("code actions");
    let suppress = list
        .iter()
        .find(|a| a["title"] == "Suppress this race")
        .unwrap_or_else(|| panic!("no suppress action in {actions}"));
    assert_eq!(suppress["kind"], "quickfix");
    let edits = suppress["edit"]["changes"][uri(&file)].as_array().unwrap();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0]["range"]["start"]["line"], main_access);
    assert_eq!(edits[0]["newText"], "    // racelens: ignore[data-race]\n");
    // The client applies the edit (the server never writes files).
    let fixed = apply_edits(RACY, edits);
    assert_eq!(std::fs::read_to_string(&file).ok(), None);
    c.change(&file, 2, json!([{"text": fixed}]));
    c.races(&file, 1);
    // On the declaration: every race on the variable.
    let decl = RACY.replace("int counter;", "int counter; // racelens: ignore");
    c.change(&file, 3, json!([{"text": decl}]));
    c.races(&file, 0);
}

#[test]
fn a_dollar_request_gets_method_not_found_and_a_dollar_notification_nothing() {
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.notify("$/setTrace", json!({"value": "off"}));
    let resp = c.request("$/racelens/unknown", json!({}));
    assert_eq!(resp["error"]["code"], -32601, "{resp}");
    // The notification got no answer: the next message with an id is the
    // response to the next request.
    let shutdown = c.request("shutdown", Value::Null);
    assert!(shutdown.get("error").is_none(), "{shutdown}");
    c.notify("exit", Value::Null);
}

#[test]
fn a_lone_surrogate_in_did_open_becomes_a_replacement_character() {
    let dir = project("surrogate", &[]);
    let file = dir.join("s.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    let text = format!("/* broken: SURROGATE */\n{RACY}");
    let msg = json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri(&file), "languageId": "c", "version": 1, "text": text}}});
    let body = serde_json::to_string(&msg)
        .unwrap()
        .replace("SURROGATE", r"\ud800");
    c.send_raw(&body);
    let diags = c.races(&file, 2);
    let main_access = line_of(RACY, "pthread_create") + 2;
    assert!(
        diags
            .iter()
            .any(|d| d["range"]["start"]["line"] == main_access),
        "{diags:#?}"
    );
    // The document is open: an edit to it applies.
    c.change(&file, 2, json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "text": ""}]));
    c.diagnostics_where(&file, |d| {
        d.iter()
            .any(|d| d["range"]["start"]["line"] == main_access - 1)
    });
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&file)}, "position": {"line": 0, "character": 12}}),
    );
    assert!(hover.get("error").is_none(), "{hover}");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn documents_in_other_languages_are_not_analysed_and_headers_called_cpp_are() {
    let dir = project("language", &[]);
    let script = dir.join("script.py");
    let header = dir.join("racy.h");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    // Racy C text in a Python document: if it were analysed, it would
    // publish races and clash with the header's definitions.
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri(&script), "languageId": "python", "version": 1, "text": RACY}}));
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri(&header), "languageId": "cpp", "version": 1, "text": RACY}}));
    c.races(&header, 2);
    // The diagnostics of one revision are published together; drain a little.
    let deadline = Instant::now() + Duration::from_millis(500);
    while c.recv(deadline).is_some() {}
    let script_uri = uri(&script);
    assert!(
        !c.seen
            .iter()
            .any(|m| m["params"]["uri"] == script_uri.as_str()),
        "{:#?}",
        c.seen
    );
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": script_uri}, "position": {"line": line_of(RACY, "pthread_create") + 1, "character": 5}}),
    );
    assert_eq!(hover["result"], Value::Null, "{hover}");
    assert_eq!(c.shutdown(), 0);
}

/// `config.stop` races, `config` has other fields, and `strerror` writes
/// the library's hidden state in both threads.
const CONFIG: &str = "#include <pthread.h>
#include <string.h>
#include <errno.h>
struct config { int stop; int verbose; int level; } config;
void *worker(void *arg) {
    while (!config.stop) { config.verbose = 1; }
    const char *m = strerror(errno);
    return (void *)m;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    config.stop = 1;
    config.level = 2;
    strerror(errno);
    pthread_join(t, 0);
    return 0;
}
";

#[test]
fn hover_at_a_race_diagnostic_describes_its_object() {
    let dir = project("hover-race", &[]);
    let file = dir.join("config.c");
    let mut c = Client::spawn(None);
    c.initialize(json!({}), None, json!({}));
    c.open(&file, CONFIG);
    let diags = c.diagnostics_where(&file, |d| {
        d.iter().any(|d| {
            d["message"]
                .as_str()
                .is_some_and(|m| m.contains("static state of strerror"))
        }) && d.iter().any(|d| {
            d["message"]
                .as_str()
                .is_some_and(|m| m.contains("`config.stop`"))
        })
    });
    let mut hovered = 0;
    for d in diags.iter().filter(|d| d["code"] == "data-race") {
        let message = d["message"].as_str().unwrap();
        let hover = c.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&file)}, "position": d["range"]["start"]}),
        );
        let text = hover["result"]["contents"]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("no hover at {d}: {hover}"));
        if message.contains("`config.stop`") {
            assert!(text.contains("**`config.stop`**"), "{text}");
            assert!(!text.contains("more"), "{text}");
            assert!(!text.contains("config.level"), "{text}");
            hovered += 1;
        }
        if message.contains("static state of strerror") {
            assert!(text.contains("(static state of strerror)"), "{text}");
            assert!(text.contains("hidden static state"), "{text}");
            hovered += 1;
        }
    }
    assert!(hovered >= 3, "{diags:#?}");
    assert_eq!(c.shutdown(), 0);
}
