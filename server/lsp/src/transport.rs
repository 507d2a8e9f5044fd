//! A guard between stdin and the JSON-RPC transport.
//!
//! tower-lsp-server stops reading its input after the first message it
//! cannot decode (bad JSON, a body that is no JSON-RPC message, bad
//! headers), which would end the server. This filter reads the frames
//! itself and passes on only decodable ones: a broken message becomes a
//! request to [`INVALID_MESSAGE`] with the original id (or `null`), which
//! the server answers with the JSON-RPC error the client is owed.

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
    if std::str::from_utf8(&body).is_ok() && serde_json::from_slice::<Incoming>(&body).is_ok() {
        return body;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
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
