//! The one writer of stdout, so that diagnostics can skip tower-lsp's
//! `serde_json::Value` detour.
//!
//! tower-lsp-server sends every message as a `Value` (`Client` turns the
//! params into one, its codec turns that into text). A publish of a large
//! program's diagnostics is megabytes (memcached.c: 809 diagnostics with
//! their related information, 2.7 MB), and the `Value` step alone cost
//! about 20 ms of every edit. So stdout has one writer task here: the
//! transport writes its frames into a [`Frames`] sink, which cuts them
//! apart at their `Content-Length` headers and queues each whole frame, and
//! [`publish_diagnostics`] queues a frame it serialized straight from the
//! LSP types. Frames never interleave, and each source keeps its order.

use serde::Serialize;
use std::io::Write;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tower_lsp_server::ls_types::{Diagnostic, Uri};

/// Frames waiting for the writer; an empty one asks it to stop.
static QUEUE: OnceLock<UnboundedSender<Vec<u8>>> = OnceLock::new();

/// Starts the writer task on `out` (on the current runtime) and returns the
/// sink the transport writes to, and the task, which ends after
/// [`close`] once every queued frame is written.
pub fn start<W: AsyncWrite + Unpin + Send + 'static>(
    out: W,
) -> (Frames, tokio::task::JoinHandle<()>) {
    let (tx, rx) = unbounded_channel();
    let _ = QUEUE.set(tx.clone());
    let task = tokio::spawn(write_frames(out, rx));
    (
        Frames {
            tx,
            buf: Vec::new(),
        },
        task,
    )
}

/// Asks the writer to stop after the frames queued so far.
pub fn close() {
    if let Some(q) = QUEUE.get() {
        let _ = q.send(Vec::new());
    }
}

async fn write_frames<W: AsyncWrite + Unpin>(mut out: W, mut rx: UnboundedReceiver<Vec<u8>>) {
    while let Some(frame) = rx.recv().await {
        if frame.is_empty() {
            break;
        }
        if out.write_all(&frame).await.is_err() {
            return;
        }
        // Flush once the queue is drained: a burst goes out together.
        if rx.is_empty() && out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.flush().await;
}

#[derive(Serialize)]
struct Notification<P> {
    jsonrpc: &'static str,
    method: &'static str,
    params: P,
}

#[derive(Serialize)]
struct PublishParams<'a> {
    uri: &'a Uri,
    diagnostics: &'a [Diagnostic],
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i32>,
}

/// Sends `textDocument/publishDiagnostics`, serialized directly. Returns
/// false when no writer runs (then the caller sends it through tower-lsp).
pub fn publish_diagnostics(uri: &Uri, diagnostics: &[Diagnostic], version: Option<i32>) -> bool {
    let Some(q) = QUEUE.get() else {
        return false;
    };
    let msg = Notification {
        jsonrpc: "2.0",
        method: "textDocument/publishDiagnostics",
        params: PublishParams {
            uri,
            diagnostics,
            version,
        },
    };
    let Ok(body) = serde_json::to_vec(&msg) else {
        return false;
    };
    let mut frame = Vec::with_capacity(body.len() + 32);
    let _ = write!(frame, "Content-Length: {}\r\n\r\n", body.len());
    frame.extend_from_slice(&body);
    q.send(frame).is_ok()
}

/// The transport's output: bytes in, whole frames queued for the writer.
pub struct Frames {
    tx: UnboundedSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl Frames {
    /// Queues every complete frame at the start of the buffer.
    fn queue_complete(&mut self) -> std::io::Result<()> {
        loop {
            let Some(head_end) = find(&self.buf, b"\r\n\r\n") else {
                return Ok(());
            };
            let head = std::str::from_utf8(&self.buf[..head_end]).unwrap_or("");
            let len = head
                .split("\r\n")
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok());
            let Some(len) = len else {
                // Not a header we understand: pass the bytes on as they are.
                let all = std::mem::take(&mut self.buf);
                return self.send(all);
            };
            let end = head_end + 4 + len;
            if self.buf.len() < end {
                return Ok(());
            }
            let rest = self.buf.split_off(end);
            let frame = std::mem::replace(&mut self.buf, rest);
            self.send(frame)?;
        }
    }

    fn send(&self, frame: Vec<u8>) -> std::io::Result<()> {
        if frame.is_empty() {
            return Ok(());
        }
        self.tx
            .send(frame)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "writer stopped"))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl AsyncWrite for Frames {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.buf.extend_from_slice(data);
        Poll::Ready(self.queue_complete().map(|()| data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_at_their_headers_whatever_the_writes() {
        let (tx, mut rx) = unbounded_channel();
        let mut f = Frames {
            tx,
            buf: Vec::new(),
        };
        let stream = b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]";
        for chunk in stream.chunks(5) {
            f.buf.extend_from_slice(chunk);
            f.queue_complete().unwrap();
        }
        assert_eq!(rx.try_recv().unwrap(), b"Content-Length: 2\r\n\r\n{}");
        assert_eq!(rx.try_recv().unwrap(), b"Content-Length: 3\r\n\r\n[1]");
        assert!(rx.try_recv().is_err());
    }
}
