//! A guard between stdin and the JSON-RPC transport.
//!
//! tower-lsp-server stops reading its input after the first message it
//! cannot decode (bad JSON, a body that is no JSON-RPC message, bad
//! headers), which would end the server. This filter reads the frames
//! itself and passes on only decodable ones: a broken message becomes a
//! request to [`INVALID_MESSAGE`] with the original id (or `null`), which
//! the server answers with the JSON-RPC error the client is owed.
//!
//! One repair comes first: a `\uXXXX` escape of a lone UTF-16 surrogate
//! (valid JSON, but no Unicode scalar, so serde_json refuses it in a
//! string) becomes `\ufffd`, as a lossy UTF-16 decoder would make it.
//! Editors send such text when a buffer holds a broken surrogate pair, and
//! the document must still open.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tower_lsp_server::jsonrpc::{self, ErrorCode, Request, Response};

/// The method that stands in for an undecodable message.
pub const INVALID_MESSAGE: &str = "racelens/invalidMessage";

/// Larger bodies are skipped rather than buffered.
const MAX_BODY: usize = 1 << 30;
const MAX_HEADER_LINE: u64 = 8 << 10;

/// Parameters of [`INVALID_MESSAGE`].
#[derive(Serialize, Deserialize)]
pub struct InvalidMessage {
    pub code: i64,
    pub message: String,
}

impl InvalidMessage {
    /// The error to answer with.
    pub fn into_error(self) -> jsonrpc::Error {
        jsonrpc::Error {
            code: ErrorCode::from(self.code),
            message: self.message.into(),
            data: None,
        }
    }
}

/// What tower-lsp-server decodes: a response or a request/notification.
#[derive(Deserialize)]
#[serde(untagged)]
enum Incoming {
    #[allow(dead_code)]
    Response(Response),
    #[allow(dead_code)]
    Request(Request),
}

/// Spawns the filter over `input` and returns the stream the server reads.
pub fn filter<R: AsyncRead + Unpin + Send + 'static>(input: R) -> tokio::io::DuplexStream {
    let (mut tx, rx) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let mut reader = BufReader::new(input);
        while let Some(frame) = read_frame(&mut reader).await {
            let Some(body) = frame else { continue };
            let body = sanitize(body);
            let header = format!("Content-Length: {}\r\n\r\n", body.len());
            if tx.write_all(header.as_bytes()).await.is_err() || tx.write_all(&body).await.is_err()
            {
                break;
            }
        }
        // Dropping `tx` ends the server's input.
    });
    rx
}

/// Reads one frame: `None` at the end of input, `Some(None)` for a header
/// block without a usable `Content-Length` or an oversized body (skipped).
async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Option<Vec<u8>>> {
    let mut content_length = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        let n = (&mut *reader)
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .await
            .ok()?;
        if n == 0 {
            return None;
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim();
        if line.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                content_length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let Some(len) = content_length else {
        tracing::warn!("skipping a message without a valid Content-Length header");
        return Some(None);
    };
    if len > MAX_BODY {
        tracing::warn!("skipping a message of {len} bytes");
        tokio::io::copy(&mut (&mut *reader).take(len as u64), &mut tokio::io::sink())
            .await
            .ok()?;
        return Some(None);
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).await.ok()?;
    Some(Some(body))
}

/// The body itself when the server can decode it, else a stand-in request.
fn sanitize(body: Vec<u8>) -> Vec<u8> {
    let decodes =
        |b: &[u8]| std::str::from_utf8(b).is_ok() && serde_json::from_slice::<Incoming>(b).is_ok();
    if decodes(&body) {
        return body;
    }
    if let Some(repaired) = replace_lone_surrogates(&body).filter(|b| decodes(b)) {
        tracing::warn!("replaced lone UTF-16 surrogate escapes with U+FFFD");
        return repaired;
    }
    let (id, code, message) = match serde_json::from_slice::<Value>(&body) {
        Err(e) => (
            Value::Null,
            ErrorCode::ParseError,
            format!("parse error: {e}"),
        ),
        Ok(v) => {
            let id = v
                .get("id")
                .filter(|id| id.is_string() || id.is_i64())
                .cloned()
                .unwrap_or(Value::Null);
            (
                id,
                ErrorCode::InvalidRequest,
                "invalid JSON-RPC message".to_string(),
            )
        }
    };
    tracing::warn!("answering an undecodable message with `{message}`");
    let params = InvalidMessage {
        code: code.code(),
        message,
    };
    serde_json::to_vec(
        &json!({ "jsonrpc": "2.0", "id": id, "method": INVALID_MESSAGE, "params": params }),
    )
    .unwrap_or_default()
}

/// The 4 hex digits at the start of `b`, as a UTF-16 code unit.
fn hex4(b: &[u8]) -> Option<u16> {
    let digits = std::str::from_utf8(b.get(..4)?).ok()?;
    if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

/// `body` with every `\uXXXX` escape of a lone surrogate replaced by
/// `\ufffd`; `None` when it has none. Backslashes only occur in JSON
/// strings, each starting an escape, so a scan over escapes suffices.
fn replace_lone_surrogates(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut changed = false;
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'\\' {
            out.push(body[i]);
            i += 1;
            continue;
        }
        let unit = (body.get(i + 1) == Some(&b'u'))
            .then(|| hex4(&body[i + 2..]))
            .flatten();
        let Some(unit) = unit else {
            // Another escape (`\\`, `\"`, ...): copy it whole.
            out.extend_from_slice(&body[i..(i + 2).min(body.len())]);
            i += 2;
            continue;
        };
        let len = match unit {
            0xD800..=0xDBFF => {
                let low = (body.get(i + 6..i + 8) == Some(&b"\\u"[..]))
                    .then(|| hex4(&body[i + 8..]))
                    .flatten();
                match low {
                    Some(0xDC00..=0xDFFF) => 12,
                    _ => 0,
                }
            }
            0xDC00..=0xDFFF => 0,
            _ => 6,
        };
        if len == 0 {
            out.extend_from_slice(b"\\ufffd");
            changed = true;
            i += 6;
        } else {
            out.extend_from_slice(&body[i..i + len]);
            i += len;
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let fix =
            |s: &str| replace_lone_surrogates(s.as_bytes()).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(fix(r#""a\ud800b""#).as_deref(), Some(r#""a\ufffdb""#));
        assert_eq!(
            fix(r#""\uDC00\ud800""#).as_deref(),
            Some(r#""\ufffd\ufffd""#)
        );
        assert_eq!(
            fix(r#""\ud800\u0041""#).as_deref(),
            Some(r#""\ufffd\u0041""#)
        );
        assert_eq!(fix(r#""x\ud800""#).as_deref(), Some(r#""x\ufffd""#));
        // A valid pair, an escaped backslash before `ud800`, plain escapes.
        assert_eq!(fix(r#""\ud83d\ude00 \\ud800 \u00e9 \" \n""#), None);
        assert_eq!(
            fix(r#""\ud800\\udc00""#).as_deref(),
            Some(r#""\ufffd\\udc00""#)
        );
        let body = br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"text":"int x; // \ud800!"}}"#;
        let v: Value = serde_json::from_slice(&sanitize(body.to_vec())).unwrap();
        assert_eq!(v["method"], "textDocument/didOpen");
        assert_eq!(v["params"]["text"], "int x; // \u{fffd}!");
    }

    #[tokio::test]
    async fn frames_pass_through_and_garbage_becomes_a_stand_in() {
        let input = [
            frame(r#"{"jsonrpc":"2.0","method":"initialized"}"#),
            frame("{not json"),
            "X-Other: 1\r\n\r\n".into(),
            frame(r#"{"id":7,"method":"hover"}"#),
        ]
        .concat();
        let mut out = String::new();
        filter(std::io::Cursor::new(input.into_bytes()))
            .read_to_string(&mut out)
            .await
            .unwrap();
        let bodies: Vec<Value> = out
            .split("Content-Length: ")
            .skip(1)
            .map(|f| serde_json::from_str(f.split_once("\r\n\r\n").unwrap().1).unwrap())
            .collect();
        assert_eq!(bodies.len(), 3);
        assert_eq!(bodies[0]["method"], "initialized");
        assert_eq!(
            (
                bodies[1]["method"].as_str(),
                &bodies[1]["id"],
                &bodies[1]["params"]["code"]
            ),
            (Some(INVALID_MESSAGE), &Value::Null, &json!(-32700))
        );
        assert_eq!(
            (&bodies[2]["id"], &bodies[2]["params"]["code"]),
            (&json!(7), &json!(-32600))
        );
    }
}
