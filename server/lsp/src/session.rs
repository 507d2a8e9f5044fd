//! The running server around the [`State`]: scheduling diagnostics, running
//! analysis work off the async runtime, loading the workspace, and talking
//! back to the client.
//!
//! Diagnostics follow the one-writer pattern: an edit changes the state and
//! bumps the revision under the lock; a task then waits a few milliseconds,
//! takes a snapshot job if no newer edit came, and computes it on the analysis
//! thread.
//!
//! While a diagnostics analysis runs, an edit does not cancel it: the
//! edit's input write is deferred ([`State::sync`]), the running analysis
//! finishes and publishes under its own document version, and then the
//! newest text is analysed. So when keys arrive faster than the analysis
//! runs, diagnostics still arrive once per analysis instead of never. A
//! request (hover, code action, command) needs the newest text: it syncs,
//! which cancels the running analysis (salsa unwinds it); the next
//! analysis then starts from the newest text. Published results never go
//! back to an older revision.
//!
//! Explanations cost only idle time: once the user has paused for
//! [`EXPLAIN_IDLE`] after a publish, a second pass on the same revision adds
//! the schedules of the bounded interleaving check (within
//! [`EXPLAIN_LIMITS`]) and republishes. Any edit cancels it at once: the
//! search and the model building poll for cancellation.

use crate::config::Settings;
use crate::convert::Encoding;
use crate::diagnostics::{FileDiagnostics, Publisher, EXPLAIN_LIMITS};
use crate::state::State;
use crate::workspace;
use racelens_analysis::Cancelled;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;
use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::{
    ClientCapabilities, ConfigurationItem, DidChangeWatchedFilesRegistrationOptions,
    FileSystemWatcher, GlobPattern, ProgressToken, Registration,
};
use tower_lsp_server::{Client, NotCancellable, OngoingProgress, Unbounded};

/// `RACELENS_TIMING=1`: where each revision's time went, on stderr.
pub(crate) fn timing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RACELENS_TIMING").is_some())
}

/// Wait this long after an edit before analysing, to coalesce bursts.
const DEBOUNCE: Duration = Duration::from_millis(3);
/// The explanation pass runs once no edit came for this long after a publish.
const EXPLAIN_IDLE: Duration = Duration::from_millis(300);
/// A client that does not answer a request within this time is not waited for.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Awaits a request to the client; a failure or no answer is logged and
/// yields `None`, so a client that never answers cannot stall start-up.
async fn ask<T>(
    what: &str,
    request: impl std::future::Future<Output = jsonrpc::Result<T>>,
) -> Option<T> {
    match tokio::time::timeout(CLIENT_TIMEOUT, request).await {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::warn!("{what} failed: {e}");
            None
        }
        Err(_) => {
            tracing::warn!("{what}: no answer from the client within {CLIENT_TIMEOUT:?}");
            None
        }
    }
}

/// A `$/progress` stream without percentage or cancel button.
type Progress = OngoingProgress<Unbounded, NotCancellable>;

/// Why analysis work produced no result.
#[derive(Debug)]
pub enum Failure {
    /// A newer edit cancelled it; its own work will answer.
    Cancelled,
    Panicked(String),
}

impl Failure {
    pub fn into_rpc(self) -> jsonrpc::Error {
        match self {
            Failure::Cancelled => jsonrpc::Error::content_modified(),
            Failure::Panicked(msg) => jsonrpc::Error {
                message: format!("racelens: internal error: {msg}").into(),
                ..jsonrpc::Error::internal_error()
            },
        }
    }
}

/// Runs `f` on a blocking thread, turning salsa cancellation and panics
/// into a [`Failure`] instead of taking the server down.
pub async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    match tokio::task::spawn_blocking(move || std::panic::catch_unwind(AssertUnwindSafe(f))).await {
        Ok(caught) => settle(caught),
        Err(e) => Err(Failure::Panicked(e.to_string())),
    }
}

/// What a job's `catch_unwind` gave: its value, or the salsa cancellation
/// or panic that unwound it.
fn settle<T>(caught: std::thread::Result<T>) -> Result<T, Failure> {
    match caught {
        Ok(value) => Ok(value),
        Err(payload) if payload.is::<Cancelled>() => Err(Failure::Cancelled),
        Err(payload) => Err(Failure::Panicked(panic_message(payload.as_ref()))),
    }
}

/// A diagnostics analysis, run on the analysis thread.
type AnalysisJob = Box<dyn FnOnce() + Send>;

/// The one thread that runs diagnostics analyses, started on first use.
/// Analyses allocate most of the server's memory (the memoized summaries,
/// walks and reports). Run on whichever of the runtime's many blocking
/// threads was free, each left its pages in that thread's allocator heap,
/// and the resident memory grew with the number of threads that had ever
/// analysed (mt-daapd, 1,000 random edits: 1.84x the memory after open;
/// 1.39x on one thread). Analyses run one at a time anyway (see the module
/// doc). Requests stay on the blocking pool: giving hovers and code actions
/// a thread of their own too changed nothing measurable (1.41x).
fn analysis_thread() -> Option<&'static std::sync::mpsc::Sender<AnalysisJob>> {
    static SENDER: OnceLock<Option<std::sync::mpsc::Sender<AnalysisJob>>> = OnceLock::new();
    SENDER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<AnalysisJob>();
            let spawned = std::thread::Builder::new()
                .name("racelens-analysis".into())
                .stack_size(crate::STACK_SIZE)
                .spawn(move || {
                    for job in rx {
                        job();
                    }
                });
            match spawned {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::error!(
                        "cannot start the analysis thread ({e}); using the blocking pool"
                    );
                    None
                }
            }
        })
        .as_ref()
}

/// Runs a diagnostics analysis `f` on the analysis thread (or, if it could
/// not be started, on a blocking thread), with [`run_blocking`]'s handling
/// of cancellation and panics.
pub async fn run_analysis<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    let Some(sender) = analysis_thread() else {
        return run_blocking(f).await;
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: AnalysisJob = Box::new(move || {
        let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(f)));
    });
    if sender.send(job).is_err() {
        return Err(Failure::Panicked("the analysis thread has stopped".into()));
    }
    match rx.await {
        Ok(caught) => settle(caught),
        Err(_) => Err(Failure::Panicked(
            "the analysis thread dropped a job".into(),
        )),
    }
}

pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// What the client said it can do, as far as the server cares.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientFeatures {
    pub configuration: bool,
    pub work_done_progress: bool,
    pub watch_files: bool,
}

impl ClientFeatures {
    pub fn from_capabilities(caps: &ClientCapabilities) -> Self {
        let ws = caps.workspace.as_ref();
        ClientFeatures {
            configuration: ws.and_then(|w| w.configuration).unwrap_or(false),
            work_done_progress: caps
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false),
            watch_files: ws
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
        }
    }
}

/// The diagnostics analysis under way, if any.
#[derive(Default)]
struct Flight {
    /// The revision being analysed.
    running: Option<u64>,
    /// An edit deferred its analysis until the running one ends.
    queued: bool,
}

pub struct Session {
    state: Mutex<State>,
    revision: Arc<AtomicU64>,
    publisher: tokio::sync::Mutex<(Publisher, u64)>,
    flight: Mutex<Flight>,
    client: Client,
    features: OnceLock<ClientFeatures>,
}

impl Session {
    pub fn new(client: Client) -> Arc<Session> {
        let state = State::new(Encoding::default(), Settings::default());
        Arc::new(Session {
            revision: state.revision_counter(),
            state: Mutex::new(state),
            publisher: Default::default(),
            flight: Mutex::default(),
            client,
            features: OnceLock::new(),
        })
    }

    /// The state. Never hold the guard across an `.await`.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn set_features(&self, features: ClientFeatures) {
        let _ = self.features.set(features);
    }

    fn features(&self) -> ClientFeatures {
        self.features.get().copied().unwrap_or_default()
    }

    fn is_current(&self, revision: u64) -> bool {
        self.revision.load(Ordering::SeqCst) == revision
    }

    fn flight(&self) -> MutexGuard<'_, Flight> {
        self.flight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes the diagnostics of `revision` soon, unless a newer one comes.
    pub fn schedule_diagnostics(self: &Arc<Self>, revision: u64) {
        let session = self.clone();
        tokio::spawn(async move { session.refresh(revision, DEBOUNCE, false).await });
    }

    /// [`schedule_diagnostics`](Self::schedule_diagnostics) without the
    /// debounce.
    fn schedule_now(self: &Arc<Self>, revision: u64) {
        let session = self.clone();
        let run: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
            Box::pin(async move { session.refresh(revision, Duration::ZERO, false).await });
        tokio::spawn(run);
    }

    /// Computes and publishes `revision`'s diagnostics after `delay`, unless
    /// a newer revision supersedes them (its own refresh will publish).
    /// While another analysis runs, an edit's analysis waits for it (see the
    /// module comment). `cold`: the first analysis after a workspace load,
    /// which spreads its parallel parts over the cores.
    async fn refresh(self: &Arc<Self>, revision: u64, delay: Duration, cold: bool) {
        tokio::time::sleep(delay).await;
        let t0 = std::time::Instant::now();
        let job = {
            let mut state = self.lock();
            if state.revision() != revision {
                return;
            }
            let mut flight = self.flight();
            // Already under way (the refresh that waited for a running
            // analysis and this revision's own refresh can both get here):
            // a second analysis of it would only halve the first one's CPU.
            if flight.running == Some(revision) {
                return;
            }
            if flight.running.is_some() && state.has_pending() {
                flight.queued = true;
                return;
            }
            flight.running = Some(revision);
            match cold {
                true => state.load_diagnostics_job(),
                false => state.diagnostics_job(),
            }
        };
        let t1 = std::time::Instant::now();
        let result = run_analysis(move || job.compute()).await;
        let t2 = std::time::Instant::now();
        let queued = {
            let mut flight = self.flight();
            if flight.running == Some(revision) {
                flight.running = None;
            }
            std::mem::take(&mut flight.queued)
        };
        let published = match result {
            Ok(files) => {
                let n: usize = files.iter().map(|f| f.diagnostics.len()).sum();
                let published = self.publish(revision, files, false).await;
                if timing() {
                    eprintln!(
                        "racelens: revision {revision}: snapshot {:.1?}, diagnostics {:.1?}, publish {:.1?} ({n} diagnostics)",
                        t1 - t0,
                        t2 - t1,
                        t2.elapsed()
                    );
                }
                published
            }
            Err(Failure::Cancelled) => {
                tracing::debug!("diagnostics of revision {revision} cancelled by a newer edit");
                false
            }
            Err(Failure::Panicked(msg)) => {
                tracing::error!("diagnostics of revision {revision} failed: {msg}");
                false
            }
        };
        if queued {
            // The edits that waited for this analysis: analyse the newest text.
            self.schedule_now(self.revision.load(Ordering::SeqCst));
        } else if published && self.is_current(revision) {
            let session = self.clone();
            tokio::spawn(async move { session.explain(revision).await });
        }
    }

    /// The second pass, in idle time: the same revision with schedules. A
    /// new snapshot is taken so that none is held across the publishing.
    async fn explain(&self, revision: u64) {
        tokio::time::sleep(EXPLAIN_IDLE).await;
        let job = {
            let mut state = self.lock();
            if state.revision() != revision || state.has_pending() {
                return;
            }
            if self.flight().running.is_some() {
                return;
            }
            state.diagnostics_job()
        };
        match run_analysis(move || job.compute_explained(EXPLAIN_LIMITS)).await {
            Ok(files) => {
                self.publish(revision, files, true).await;
            }
            Err(Failure::Cancelled) => {
                tracing::debug!("schedules of revision {revision} cancelled by a newer edit")
            }
            Err(Failure::Panicked(msg)) => {
                tracing::error!("schedules of revision {revision} failed: {msg}")
            }
        }
    }

    /// Sends `revision`'s diagnostics unless newer ones were sent (or, for
    /// `only_current`, unless any edit came since). Returns whether it sent.
    async fn publish(
        &self,
        revision: u64,
        files: Vec<FileDiagnostics>,
        only_current: bool,
    ) -> bool {
        // Checked under the publisher's lock: an older result that finished
        // late must not overwrite a newer one.
        let mut guard = self.publisher.lock().await;
        let (publisher, last) = &mut *guard;
        if revision < *last || (only_current && !self.is_current(revision)) {
            return false;
        }
        *last = revision;
        let t0 = std::time::Instant::now();
        let changes = publisher.changes(files);
        let t1 = std::time::Instant::now();
        for f in changes {
            if !crate::output::publish_diagnostics(&f.uri, &f.diagnostics, f.version) {
                self.client
                    .publish_diagnostics(f.uri, f.diagnostics.to_vec(), f.version)
                    .await;
            }
        }
        if timing() {
            eprintln!(
                "racelens: publish: comparison {:.1?}, serialization {:.1?}",
                t1 - t0,
                t1.elapsed()
            );
        }
        true
    }

    /// After `initialized`: settings (they may name the configuration
    /// file), then the file watchers and the workspace.
    pub async fn start(self: Arc<Self>) {
        self.pull_settings().await;
        futures::join!(self.register_watchers(), self.load_workspace());
    }

    /// Asks the client for the `racelens` section, when it can answer.
    pub async fn pull_settings(self: &Arc<Self>) {
        if !self.features().configuration {
            return;
        }
        let item = ConfigurationItem {
            scope_uri: None,
            section: Some("racelens".into()),
        };
        if let Some(value) = ask(
            "workspace/configuration",
            self.client.configuration(vec![item]),
        )
        .await
        .and_then(|v| v.into_iter().next())
        {
            self.apply_settings(&value);
        }
    }

    /// Merges a settings object into the current settings.
    pub fn apply_settings(self: &Arc<Self>, value: &serde_json::Value) {
        let revision = {
            let mut state = self.lock();
            let mut settings = state.settings().clone();
            settings.update(value);
            if settings == *state.settings() {
                return;
            }
            state.set_settings(settings)
        };
        self.schedule_diagnostics(revision);
    }

    async fn register_watchers(&self) {
        if !self.features().watch_files {
            return;
        }
        let watcher = |glob: &str| FileSystemWatcher {
            glob_pattern: GlobPattern::String(glob.into()),
            kind: None,
        };
        let options = DidChangeWatchedFilesRegistrationOptions {
            watchers: vec![
                watcher("**/*.{c,h}"),
                watcher(&format!("**/{}", workspace::CONFIG_FILE)),
                watcher(&format!("**/{}", workspace::DATABASE_FILE)),
            ],
        };
        let registration = Registration {
            id: "racelens-watched-files".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: serde_json::to_value(options).ok(),
        };
        ask(
            "client/registerCapability",
            self.client.register_capability(vec![registration]),
        )
        .await;
    }

    /// Scans the roots, reads and parses their files off the runtime, hands
    /// them to the analysis and publishes the first diagnostics, reporting
    /// progress meanwhile.
    pub async fn load_workspace(self: &Arc<Self>) {
        let progress = self.begin_progress("racelens: loading workspace").await;
        let report = |message: String| async {
            if let Some(p) = &progress {
                p.report(message).await;
            }
        };
        let roots = self.lock().roots().to_vec();
        let scan_roots = roots.clone();
        let files = run_blocking(move || workspace::scan(&scan_roots))
            .await
            .unwrap_or_default();
        report(format!("parsing {} files", files.len())).await;
        let list: Vec<PathBuf> = files.iter().cloned().collect();
        let loaded = run_blocking(move || workspace::load(&list))
            .await
            .unwrap_or_default();
        tracing::info!(
            "loaded {} of {} files from {} folder(s)",
            loaded.len(),
            files.len(),
            roots.len()
        );
        report("analysing".into()).await;
        let revision = {
            let mut state = self.lock();
            state.reload_config();
            state.add_disk_files(files, loaded)
        };
        self.refresh(revision, Duration::ZERO, true).await;
        if let Some(p) = progress {
            p.finish().await;
        }
    }

    async fn begin_progress(&self, title: &str) -> Option<Progress> {
        if !self.features().work_done_progress {
            return None;
        }
        static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
        let token = ProgressToken::String(format!(
            "racelens/progress/{}",
            NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
        ));
        ask(
            "window/workDoneProgress/create",
            self.client.create_work_done_progress(token.clone()),
        )
        .await?;
        Some(
            self.client
                .progress(token, title)
                .with_message("scanning")
                .begin()
                .await,
        )
    }

    /// Files were created or deleted on disk: rescan the roots and load
    /// the files that joined the workspace.
    pub async fn rescan(self: &Arc<Self>) {
        let roots = self.lock().roots().to_vec();
        let Ok(files) = run_blocking(move || workspace::scan(&roots)).await else {
            return;
        };
        let added = self.lock().set_disk_files(files);
        let loaded = run_blocking(move || workspace::load(&added))
            .await
            .unwrap_or_default();
        let revision = self.lock().set_loaded(loaded);
        self.schedule_diagnostics(revision);
    }
}
