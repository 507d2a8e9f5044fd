//! The racelens language server: live data-race diagnostics, hover, quick
//! fixes and race explanations for C files, over LSP on stdio.
//!
//! Only this crate knows LSP types. Layers: [`server`] has the thin
//! `LanguageServer` handlers; [`session`] schedules analysis work and talks
//! to the client; [`state`] owns the documents and the analysis host (the
//! single writer); [`document`] is the incremental edit path; [`convert`],
//! [`diagnostics`] and [`requests`] turn analysis results into LSP values;
//! [`workspace`] reads the disk; [`config`] holds the client's settings.
//!
//! The `racelens bench` command drives [`state::State`] directly, through
//! the same methods the handlers call.

pub mod build;
pub mod config;
pub mod convert;
pub mod diagnostics;
pub mod document;
mod middleware;
mod output;
pub mod requests;
pub mod server;
pub mod session;
pub mod snapshot;
pub mod state;
mod transport;
pub mod workspace;

pub use convert::{Encoding, LineCol};
pub use document::TextChange;
pub use state::State;
/// Its types appear in [`document::Document`]'s API.
pub use tree_sitter;

/// Stack size of the runtime's threads: the analysis recurses deeply (but
/// boundedly) on large programs, like `racelens check`'s worker thread.
const STACK_SIZE: usize = 256 << 20;

/// Runs the server over stdin and stdout until the client sends `exit` or
/// closes stdin. Logs go to stderr through `tracing`. After an `exit` that
/// no `shutdown` preceded, the process exits here with code 1.
pub fn run_stdio() {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(2);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(32)
        .thread_stack_size(STACK_SIZE)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return;
        }
    };
    let lifecycle = middleware::Lifecycle::default();
    runtime.block_on(async {
        let (service, socket) = tower_lsp_server::LspService::build(server::Server::new)
            .custom_method(transport::INVALID_MESSAGE, server::Server::invalid_message)
            .finish();
        let service = middleware::TrackExit::new(
            middleware::AnswerDollarRequests::new(middleware::CatchPanics::new(service)),
            lifecycle.clone(),
        );
        let input = transport::filter(tokio::io::stdin());
        let (frames, writer) = output::start(tokio::io::stdout());
        tower_lsp_server::Server::new(input, frames, socket)
            .serve(service)
            .await;
        output::close();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    });
    // Stdin's reader thread may still be blocked in a read that cannot be
    // cancelled; do not wait for it.
    runtime.shutdown_background();
    if lifecycle.exit_code() != 0 {
        std::process::exit(lifecycle.exit_code());
    }
}
