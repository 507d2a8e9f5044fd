//! The JSON-RPC plumbing shared by the tests that spawn `racelens lsp`:
//! Content-Length framing and a reader thread that turns the server's output
//! into messages. The clients built on it (`lsp_e2e.rs` for features,
//! `torture.rs` for abuse) stay separate.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};

/// Reads one Content-Length frame; `None` at the end of the output. The
/// server must write valid JSON.
pub fn read_frame(r: &mut impl BufRead) -> Option<Value> {
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
    Some(serde_json::from_slice(&body).expect("the server writes valid JSON"))
}

/// `body` with its Content-Length header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    [
        format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
        body,
    ]
    .concat()
}

/// Spawns `cmd` (a `racelens lsp` command with stdio left to set here but
/// stderr chosen by the caller) and reads its messages on a thread.
pub fn spawn(mut cmd: Command) -> (Child, ChildStdin, Receiver<Value>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn racelens lsp");
    let stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let (tx, incoming) = channel();
    std::thread::spawn(move || {
        while let Some(msg) = read_frame(&mut stdout) {
            if tx.send(msg).is_err() {
                break;
            }
        }
    });
    (child, stdin, incoming)
}
