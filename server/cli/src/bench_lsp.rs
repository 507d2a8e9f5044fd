//! `racelens bench lsp FILE`: the edit path as a user feels it. Spawns a
//! language server (`racelens lsp` by default, or any command such as
//! `clangd`), speaks JSON-RPC over its stdio like an editor and times each
//! `didChange` until the first `publishDiagnostics` of that version.
//!
//! Scenarios, in order (`--scenario` picks one):
//! - `typing`: a new statement typed character by character at the start of
//!   several function bodies, one key every `--interval-ms` (50, 100 and
//!   200 by default), then deleted in one edit. A key whose own version is
//!   never published (a newer key superseded it) counts until the first
//!   diagnostics of that version or a newer one.
//! - `random`: `--edits` random one-character inserts and deletes inside
//!   function bodies, each undone by the next edit, each sent as soon as the
//!   previous edit's diagnostics arrive; a hover sent with every tenth edit
//!   measures how long requests wait behind edits.
//! - `soak`: `--soak` more random edits, the server's resident memory
//!   (`VmRSS`) read every 500 edits (0: at the soak's start, after the
//!   scenarios before it) and compared with the memory after open.
//!
//! Only the client's clock is used; nothing here looks inside the server.

use racelens_syntax::LineIndex;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `racelens bench lsp` was asked for.
pub struct LspBench {
    pub file: PathBuf,
    pub workspace: Option<PathBuf>,
    /// The server command; empty: this binary's `lsp`.
    pub server: Vec<String>,
    pub intervals: Vec<u64>,
    pub places: usize,
    pub edits: usize,
    pub soak: usize,
    pub scenario: Option<String>,
    pub seed: u64,
}

/// No answer within this time ends the benchmark with an error.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Idle time between scenarios and typing places (the user pauses).
const PAUSE: Duration = Duration::from_millis(400);
/// The statement typed by the typing scenario.
const TYPED: &str = "\n    racelens_n = racelens_n + 1;";
/// Memory is read every this many soak edits.
const RSS_EVERY: usize = 500;

/// A message from the server, stamped on arrival.
enum Incoming {
    Publish {
        uri: String,
        version: Option<i64>,
        at: Instant,
    },
    Response {
        id: i64,
        at: Instant,
    },
}

struct Client {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    incoming: Receiver<Incoming>,
    next_id: i64,
    uri: String,
    /// Latest version sent for the benchmark's file.
    version: i64,
    /// The file's text as the server has it.
    text: String,
    /// Publishes of the file seen but not yet consumed.
    published: Vec<(i64, Instant)>,
    /// Responses seen, by request id.
    responses: HashMap<i64, Instant>,
}

fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn send(stdin: &Mutex<ChildStdin>, msg: &Value) -> Result<(), String> {
    let mut w = stdin.lock().map_err(|_| "stdin lock poisoned")?;
    w.write_all(&frame(msg))
        .and_then(|_| w.flush())
        .map_err(|e| format!("the server closed its input: {e}"))
}

fn read_frame(r: &mut impl BufRead) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            len = v.trim().parse().ok();
        }
    }
    let mut body = vec![0; len?];
    r.read_exact(&mut body).ok()?;
    // The client's own share of the latency: a large publish takes a JSON
    // parse as long as some server phases (an editor parses it too).
    let t0 = Instant::now();
    let v = serde_json::from_slice(&body).ok();
    if std::env::var_os("RACELENS_TIMING").is_some() && body.len() > 100_000 {
        eprintln!(
            "client: {} bytes parsed in {:.1?}",
            body.len(),
            t0.elapsed()
        );
    }
    v
}

impl Client {
    fn spawn(cmd: &[String]) -> Result<Client, String> {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // The server's own timing lines (`RACELENS_TIMING`) or log
            // (`RACELENS_LOG`) are shown when asked for; otherwise a
            // server's chatter (clangd's log) would drown the figures.
            .stderr(
                match std::env::var_os("RACELENS_TIMING").is_some()
                    || std::env::var_os("RACELENS_LOG").is_some()
                {
                    true => Stdio::inherit(),
                    false => Stdio::null(),
                },
            )
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", cmd[0]))?;
        let stdin = Arc::new(Mutex::new(child.stdin.take().ok_or("no stdin")?));
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let (tx, incoming) = channel();
        let answer = stdin.clone();
        std::thread::spawn(move || {
            while let Some(msg) = read_frame(&mut stdout) {
                let at = Instant::now();
                let method = msg.get("method").and_then(Value::as_str);
                let event = match (msg.get("id"), method) {
                    // A request of the server's: answer as an editor would.
                    (Some(id), Some(m)) => {
                        let result = match m {
                            "workspace/configuration" => json!([{}]),
                            _ => Value::Null,
                        };
                        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                        if send(&answer, &reply).is_err() {
                            break;
                        }
                        continue;
                    }
                    (None, Some("textDocument/publishDiagnostics")) => Incoming::Publish {
                        uri: msg["params"]["uri"].as_str().unwrap_or("").to_string(),
                        version: msg["params"]["version"].as_i64(),
                        at,
                    },
                    (Some(id), None) => Incoming::Response {
                        id: id.as_i64().unwrap_or(-1),
                        at,
                    },
                    _ => continue,
                };
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        Ok(Client {
            child,
            stdin,
            incoming,
            next_id: 0,
            uri: String::new(),
            version: 0,
            text: String::new(),
            published: Vec::new(),
            responses: HashMap::new(),
        })
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        send(
            &self.stdin,
            &json!({"jsonrpc": "2.0", "method": method, "params": params}),
        )
    }

    fn request(&mut self, method: &str, params: Value) -> Result<i64, String> {
        self.next_id += 1;
        let id = self.next_id;
        send(
            &self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )?;
        Ok(id)
    }

    /// Takes one message off the queue, keeping the file's publishes and
    /// the responses.
    fn pump(&mut self, deadline: Instant) -> Result<(), String> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(wait) {
            Ok(Incoming::Publish { uri, version, at }) => {
                if uri == self.uri {
                    // A server that does not echo versions: the latest sent.
                    self.published.push((version.unwrap_or(self.version), at));
                }
                Ok(())
            }
            Ok(Incoming::Response { id, at }) => {
                self.responses.insert(id, at);
                Ok(())
            }
            Err(RecvTimeoutError::Timeout) => Err("no answer from the server in time".into()),
            Err(RecvTimeoutError::Disconnected) => Err("the server exited".into()),
        }
    }

    fn wait_response(&mut self, id: i64) -> Result<Instant, String> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(at) = self.responses.remove(&id) {
                return Ok(at);
            }
            self.pump(deadline)?;
        }
    }

    /// When diagnostics of `version` or a newer one first arrived.
    fn wait_published(&mut self, version: i64) -> Result<Instant, String> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(&(_, at)) = self.published.iter().find(|(v, _)| *v >= version) {
                return Ok(at);
            }
            self.pump(deadline)?;
        }
    }

    /// Drops publishes that arrive within `idle` (the second passes).
    fn settle(&mut self, idle: Duration) {
        let end = Instant::now() + idle;
        while Instant::now() < end {
            if self.pump(end).is_err() {
                break;
            }
        }
        self.published.clear();
    }

    fn initialize(&mut self, root: Option<&Path>) -> Result<(), String> {
        let root_uri = root.map(uri_of);
        let folders = root_uri
            .as_ref()
            .map(|u| json!([{"uri": u, "name": "bench"}]))
            .unwrap_or(Value::Null);
        let id = self.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": root_uri,
                "workspaceFolders": folders,
                "capabilities": {
                    "textDocument": {"publishDiagnostics": {"versionSupport": true}},
                    "general": {"positionEncodings": ["utf-16"]},
                },
            }),
        )?;
        self.wait_response(id)?;
        self.notify("initialized", json!({}))
    }

    fn open(&mut self, path: &Path, text: String) -> Result<(), String> {
        self.uri = uri_of(path);
        self.version = 1;
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {
                "uri": self.uri, "languageId": "c", "version": 1, "text": text,
            }}),
        )?;
        self.text = text;
        Ok(())
    }

    /// Sends `start..end` of the text replaced by `new`; returns when it
    /// was sent and the new version.
    fn change(&mut self, start: usize, end: usize, new: &str) -> Result<(i64, Instant), String> {
        let index = LineIndex::new(&self.text);
        let pos = |o| {
            let (line, character) = index.position(&self.text, o, true);
            json!({"line": line, "character": character})
        };
        let range = json!({"start": pos(start), "end": pos(end)});
        self.version += 1;
        let params = json!({
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"range": range, "text": new}],
        });
        self.text.replace_range(start..end, new);
        let at = Instant::now();
        self.notify("textDocument/didChange", params)?;
        Ok((self.version, at))
    }

    fn hover(&mut self, offset: usize) -> Result<i64, String> {
        let (line, character) = LineIndex::new(&self.text).position(&self.text, offset, true);
        self.request(
            "textDocument/hover",
            json!({
                "textDocument": {"uri": self.uri},
                "position": {"line": line, "character": character},
            }),
        )
    }

    fn rss_mb(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb / 1024.0)
    }

    fn shutdown(mut self) {
        if let Ok(id) = self.request("shutdown", Value::Null) {
            let _ = self.wait_response(id);
        }
        let _ = self.notify("exit", Value::Null);
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn uri_of(path: &Path) -> String {
    racelens_lsp::convert::path_to_uri(path)
        .map(|u| u.as_str().to_string())
        .unwrap_or_else(|| format!("file://{}", path.display()))
}

/// The function bodies of a text: byte ranges strictly inside the braces.
fn bodies(text: &str) -> Vec<(usize, usize)> {
    let tree = racelens_syntax::parse_text(text);
    racelens_syntax::extract_items(&tree, text)
        .functions
        .iter()
        .filter_map(|f| {
            let (start, end) = (f.start as usize, f.end as usize);
            let open = text[start + f.name_span.1 as usize..end].find('{')?;
            let open = start + f.name_span.1 as usize + open + 1;
            let close = text[..end].rfind('}')?;
            (close > open + 1).then_some((open, close))
        })
        .collect()
}

/// A small deterministic generator (xorshift64*), so runs repeat.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// Characters a random insert types.
const TYPED_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz_0123456789 ;,()*=+-<>!&|";

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<44} p50 {:>8.2} ms   p95 {:>8.2} ms   max {:>8.2} ms   (n={})",
        ms(crate::bench::percentile(&times, 0.5)),
        ms(crate::bench::percentile(&times, 0.95)),
        ms(times.last().copied().unwrap_or_default()),
        times.len()
    );
}

pub fn run(b: LspBench) -> Result<(), String> {
    let path = std::fs::canonicalize(&b.file)
        .map_err(|e| format!("cannot read `{}`: {e}", b.file.display()))?;
    let root = b
        .workspace
        .as_deref()
        .map(std::fs::canonicalize)
        .transpose()
        .map_err(|e| format!("cannot read the workspace: {e}"))?;
    let text = racelens_lsp::workspace::read_lossy(&path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?
        .to_string();
    let server = match b.server.is_empty() {
        true => {
            let me = std::env::current_exe().map_err(|e| e.to_string())?;
            vec![me.display().to_string(), "lsp".into()]
        }
        false => b.server.clone(),
    };
    let bodies = bodies(&text);
    if bodies.is_empty() {
        return Err("no function bodies to edit".into());
    }
    let wants = |s: &str| b.scenario.as_deref().is_none_or(|w| w == s);

    let mut c = Client::spawn(&server)?;
    println!("server: {} (pid {})", server.join(" "), c.child.id());
    let t0 = Instant::now();
    c.initialize(root.as_deref())?;
    c.open(&path, text)?;
    let first = c.wait_published(1)?;
    c.settle(Duration::from_secs(1));
    let open_rss = c.rss_mb().unwrap_or(0.0);
    println!(
        "{}: {} bytes, {} function bodies; open to first diagnostics {:.1} ms, RSS {:.1} MB",
        path.display(),
        c.text.len(),
        bodies.len(),
        (first - t0).as_secs_f64() * 1e3,
        open_rss
    );

    if wants("typing") {
        let places = b.places.min(bodies.len()).max(1);
        let stride = bodies.len() / places;
        for &interval in &b.intervals {
            let mut keys = Vec::new();
            let mut own = 0usize;
            for p in 0..places {
                let (open, _) = bodies[p * stride + stride / 2];
                let sent = type_statement(&mut c, open, Duration::from_millis(interval))?;
                for (v, at) in &sent {
                    keys.push(c.wait_published(*v)? - *at);
                    own += c.published.iter().any(|(pv, _)| pv == v) as usize;
                }
                let (v, _) = c.change(open, open + TYPED.len(), "")?;
                c.wait_published(v)?;
                c.settle(PAUSE);
            }
            let n = keys.len();
            summary(
                &format!("typing, a key every {interval} ms ({own}/{n} own)"),
                keys,
            );
        }
    }

    let mut rng = Rng(b.seed | 1);
    if wants("random") && b.edits > 0 {
        let (times, hovers) = random_edits(&mut c, &bodies, &mut rng, b.edits, 10)?;
        summary("random edits, next at diagnostics", times);
        summary("hover sent with an edit, to its answer", hovers);
        c.settle(PAUSE);
    }

    if wants("soak") && b.soak > 0 {
        let mut rss = vec![(0, c.rss_mb().unwrap_or(0.0))];
        let mut all = Vec::new();
        let mut done = 0;
        while done < b.soak {
            let n = RSS_EVERY.min(b.soak - done);
            all.extend(random_edits(&mut c, &bodies, &mut rng, n, 0)?.0);
            done += n;
            rss.push((done, c.rss_mb().unwrap_or(0.0)));
        }
        summary(&format!("soak, {} random edits", b.soak), all);
        let line: Vec<String> = rss.iter().map(|(n, mb)| format!("{n}: {mb:.1}")).collect();
        println!("soak RSS MB after edits: {}", line.join(", "));
        let last = rss[rss.len() - 1].1;
        println!(
            "soak RSS after {} edits / after open: {:.2}x (open {open_rss:.1} MB)",
            b.soak,
            last / open_rss.max(1e-9)
        );
    }
    c.shutdown();
    Ok(())
}

/// Types [`TYPED`] after `at`, one key every `interval`; returns each key's
/// version and sending time.
fn type_statement(
    c: &mut Client,
    at: usize,
    interval: Duration,
) -> Result<Vec<(i64, Instant)>, String> {
    let start = Instant::now();
    let mut sent = Vec::new();
    for (i, ch) in TYPED.char_indices() {
        let due = start + interval * sent.len() as u32;
        // Keep reading while waiting (the reader thread stamps messages).
        while Instant::now() < due {
            match c.pump(due) {
                Err(_) if Instant::now() >= due => break,
                Err(e) => return Err(e),
                Ok(()) => {}
            }
        }
        let s = &TYPED[i..i + ch.len_utf8()];
        sent.push(c.change(at + i, at + i, s)?);
    }
    Ok(sent)
}

/// `n` random one-character edits in function bodies, each sent when the
/// previous one's diagnostics arrived, in pairs: an edit, then its undo.
/// With `hover_every` > 0, every so many edits a hover at the edited place
/// is sent right after the change; returns its latencies too.
fn random_edits(
    c: &mut Client,
    bodies: &[(usize, usize)],
    rng: &mut Rng,
    n: usize,
    hover_every: usize,
) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let (mut times, mut hovers) = (Vec::new(), Vec::new());
    let mut undo: Option<(usize, usize, String)> = None;
    for i in 0..n {
        let (start, end, new) = match undo.take() {
            Some(u) => u,
            None => {
                let (open, close) = bodies[rng.below(bodies.len())];
                let at = floor_boundary(&c.text, open + rng.below(close - open));
                let ch = c.text.as_bytes()[at];
                if rng.below(2) == 0 && ch.is_ascii() {
                    undo = Some((at, at, (ch as char).to_string()));
                    (at, at + 1, String::new())
                } else {
                    let t = TYPED_CHARS[rng.below(TYPED_CHARS.len())] as char;
                    undo = Some((at, at + 1, String::new()));
                    (at, at, t.to_string())
                }
            }
        };
        if std::env::var_os("RACELENS_TIMING").is_some() {
            let (a, b) = (start.saturating_sub(24), (end + 24).min(c.text.len()));
            let (a, b) = (floor_boundary(&c.text, a), floor_boundary(&c.text, b));
            eprintln!(
                "client: edit {:?} -> {new:?} in {:?}",
                &c.text[start..end],
                &c.text[a..b]
            );
        }
        let (v, at) = c.change(start, end, &new)?;
        let hover = match hover_every > 0 && i % hover_every == 0 {
            true => Some(c.hover(start)?),
            false => None,
        };
        times.push(c.wait_published(v)? - at);
        if std::env::var_os("RACELENS_TIMING").is_some() {
            eprintln!(
                "client: version {v} published after {:.1?}",
                times[times.len() - 1]
            );
        }
        if let Some(id) = hover {
            hovers.push(c.wait_response(id)? - at);
        }
        c.published.clear();
    }
    Ok((times, hovers))
}

/// The nearest char boundary of `s` at or before `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
