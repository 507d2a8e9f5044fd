//! The server's state: open documents, the workspace's files, settings and
//! the analysis host, the single writer of the analysis inputs.
//!
//! Every change to the inputs goes through a method here, called with the
//! state's lock held and without awaiting, so edits apply in arrival order.
//! Each change bumps the revision; readers take a [`Snapshot`] (the
//! analysis together with the open files' texts), so what they compute
//! matches the versions they report.
//!
//! A document edit ([`State::change`]) only updates the document (rope,
//! tree, version) and marks it pending; its salsa input write happens in
//! [`State::sync`], which every snapshot, every other input change and the
//! session's diagnostics scheduling call first. The write waits until every
//! outstanding snapshot has unwound, which they do promptly: at their next
//! query, and inside the explanation search and model building, which poll
//! for cancellation. Deferring the write lets the session finish an
//! analysis that is under way when keys arrive faster than it runs
//! (`session.rs`); a request needs a snapshot of the newest text, so it
//! syncs, and cancels that analysis.

use crate::config::{parse_severity, Settings};
use crate::convert::{path_to_uri, Encoding, LineCol, OpenFile};
use crate::diagnostics::{config_diagnostics, DiagnosticsJob, FileDiagnostics};
use crate::document::{Document, TextChange};
use crate::snapshot::Snapshot;
use crate::workspace;
use racelens_analysis::{AnalysisHost, Config};
use racelens_syntax::{LineIndex, Parsed};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tower_lsp_server::ls_types::{Diagnostic, DiagnosticSeverity, Uri};
use tree_sitter::Parser;

struct OpenDocument {
    uri: Uri,
    doc: Document,
}

/// The configuration file in effect and what parsing it found.
#[derive(Default)]
struct ConfigFile {
    path: Option<PathBuf>,
    /// The configuration read from it (programs declared there shape the
    /// build configuration).
    config: Config,
    may_severity: Option<DiagnosticSeverity>,
    /// Diagnostics of the file, already in LSP terms.
    diagnostics: Vec<Diagnostic>,
}

pub struct State {
    host: AnalysisHost,
    parser: Parser,
    docs: BTreeMap<PathBuf, OpenDocument>,
    roots: Vec<PathBuf>,
    /// The workspace's C files on disk (open or not).
    disk_files: BTreeSet<PathBuf>,
    settings: Settings,
    encoding: Encoding,
    config: ConfigFile,
    revision: Arc<AtomicU64>,
    /// Open documents edited since their parse was last handed to the host.
    pending: BTreeSet<PathBuf>,
}

/// Threads the first analysis after a workspace load uses at most.
const MAX_LOAD_WORKERS: usize = 4;

impl State {
    pub fn new(encoding: Encoding, settings: Settings) -> State {
        State {
            host: AnalysisHost::new(Config::default()),
            parser: racelens_syntax::parse::new_parser(),
            docs: BTreeMap::new(),
            roots: Vec::new(),
            disk_files: BTreeSet::new(),
            settings,
            encoding,
            config: ConfigFile::default(),
            revision: Arc::default(),
            pending: BTreeSet::new(),
        }
    }

    /// The revision counter, readable without the lock.
    pub fn revision_counter(&self) -> Arc<AtomicU64> {
        self.revision.clone()
    }

    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::SeqCst)
    }

    fn bump(&mut self) -> u64 {
        self.revision.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Set once, by `initialize`, before any document is open.
    pub fn set_encoding(&mut self, encoding: Encoding) {
        self.encoding = encoding;
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn host(&self) -> &AnalysisHost {
        &self.host
    }

    fn is_config(&self, path: &Path) -> bool {
        self.config.path.as_deref() == Some(path) || workspace::is_config(path)
    }

    /// Whether a document the editor opens with this `languageId` is ours:
    /// C, or C++ for a `.h` file (editors call C headers `cpp`), or the
    /// configuration file whatever its language. Others (a `.py` file) are
    /// not opened at all: no analysis, no diagnostics.
    pub fn wants(&self, path: &Path, language_id: &str) -> bool {
        let header = path.extension().is_some_and(|e| e == "h");
        language_id == "c" || (language_id == "cpp" && header) || self.is_config(path)
    }

    /// `didOpen`: the editor's text replaces the disk contents.
    pub fn open(&mut self, uri: Uri, path: PathBuf, version: i32, text: &str) -> u64 {
        self.sync();
        // A file the workspace load already parsed, opened with the same
        // text (the usual case): its tree is reused and the analysis input
        // stays as it is.
        let loaded = self
            .host
            .file_parsed(&path)
            .filter(|p| *p.text == *text && !self.is_config(&path));
        if let Some(parsed) = loaded {
            let doc = Document::from_parsed(parsed, version);
            self.docs.insert(path, OpenDocument { uri, doc });
            return self.bump();
        }
        let doc = Document::new(text, version, &mut self.parser);
        let parsed = doc.parsed();
        self.docs.insert(path.clone(), OpenDocument { uri, doc });
        if self.is_config(&path) {
            self.reload_config();
        } else {
            self.host.set_file(&path, parsed);
        }
        self.bump()
    }

    /// `didChange`: applies the changes to the open document. Returns `None`
    /// when the document is not open. The analysis sees the new text at the
    /// next [`sync`](Self::sync).
    pub fn change(&mut self, path: &Path, version: i32, changes: &[TextChange]) -> Option<u64> {
        let open = self.docs.get_mut(path)?;
        open.doc
            .apply_changes(changes, version, self.encoding, &mut self.parser);
        if self.is_config(path) {
            self.reload_config();
        } else {
            self.pending.insert(path.to_path_buf());
        }
        Some(self.bump())
    }

    /// Whether an edited document's text has not reached the analysis yet.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Hands the edited documents' parses to the analysis (the salsa input
    /// write, which cancels running analysis work).
    pub fn sync(&mut self) {
        for path in std::mem::take(&mut self.pending) {
            if let Some(open) = self.docs.get(&path) {
                self.host.set_file(&path, open.doc.parsed());
            }
        }
    }

    /// `didClose`: back to the disk contents, or out of the program when the
    /// file is not part of the workspace.
    pub fn close(&mut self, path: &Path) -> u64 {
        self.sync();
        if self.docs.remove(path).is_some() {
            if self.is_config(path) {
                self.reload_config();
            } else {
                self.load_from_disk(path);
            }
        }
        self.bump()
    }

    fn load_from_disk(&mut self, path: &Path) {
        let text = if self.disk_files.contains(path) {
            workspace::read_lossy(path).ok()
        } else {
            None
        };
        match text {
            Some(text) => self.host.set_file_text(path, text),
            None => self.host.remove_file(path),
        }
    }

    pub fn set_settings(&mut self, settings: Settings) -> u64 {
        self.sync();
        let config_moved = settings.config_path != self.settings.config_path;
        if settings.trace_server != self.settings.trace_server {
            tracing::info!("racelens.trace.server is now `{}`", settings.trace_server);
        }
        self.settings = settings;
        if config_moved {
            self.reload_config();
        }
        self.bump()
    }

    pub fn set_roots(&mut self, roots: Vec<PathBuf>) {
        self.roots = roots;
    }

    /// Re-reads the configuration file (an open one from its document) and
    /// hands the model to the analysis. A broken file keeps the defaults
    /// and produces diagnostics on the file.
    pub fn reload_config(&mut self) -> u64 {
        self.sync();
        let path = workspace::config_path(&self.settings.config_path, &self.roots);
        let text = path.as_deref().and_then(|p| match self.docs.get(p) {
            Some(open) => Some(open.doc.text().to_string()),
            None => workspace::read_lossy(p)
                .map_err(|e| tracing::warn!("cannot read `{}`: {e}", p.display()))
                .ok(),
        });
        let (config, errors) = text.as_deref().map(Config::from_toml).unwrap_or_default();
        if !errors.is_empty() {
            tracing::warn!(
                "{} problem(s) in `{}`; using the defaults",
                errors.len(),
                path.as_deref().unwrap_or(Path::new("?")).display()
            );
        }
        let diagnostics = text
            .as_deref()
            .map(|t| config_diagnostics(t, &errors, self.encoding))
            .unwrap_or_default();
        self.config = ConfigFile {
            may_severity: parse_severity(&config.may_severity),
            path,
            diagnostics,
            config: config.clone(),
        };
        self.host.set_config(config);
        self.reload_build();
        self.bump()
    }

    /// Re-reads `compile_commands.json` and the programs the configuration
    /// declares, and hands them to the analysis.
    pub fn reload_build(&mut self) {
        let files: Vec<PathBuf> = self
            .disk_files
            .iter()
            .chain(self.docs.keys())
            .cloned()
            .collect();
        let (build, warnings) = crate::build::build_config(
            &self.roots,
            None,
            &self.config.config,
            self.config.path.as_deref().and_then(Path::parent),
            &racelens_syntax::cpp::Flags::default(),
            &files,
        );
        for w in warnings {
            tracing::warn!("{w}");
        }
        self.host.set_build(build);
    }

    /// Adds the files the first scan read from disk and remembers the
    /// workspace's file list. Open files keep the editor's text, and files
    /// a rescan read while the scan ran keep what the rescan read, which is
    /// newer (a change announced before the scan was done starts one).
    pub fn add_disk_files(
        &mut self,
        files: BTreeSet<PathBuf>,
        loaded: Vec<(PathBuf, Parsed)>,
    ) -> u64 {
        let loaded: Vec<(PathBuf, Parsed)> = loaded
            .into_iter()
            .filter(|(p, _)| !self.disk_files.contains(p))
            .collect();
        self.disk_files.extend(files);
        self.set_loaded(loaded)
    }

    /// Files read from disk after `set_disk_files` listed them (open ones
    /// keep the editor's text).
    pub fn set_loaded(&mut self, loaded: Vec<(PathBuf, Parsed)>) -> u64 {
        self.sync();
        let fresh: Vec<(PathBuf, Parsed)> = loaded
            .into_iter()
            .filter(|(p, _)| !self.docs.contains_key(p))
            .collect();
        self.host.set_files(fresh);
        // Declared programs name files by glob: match the new list.
        if !self.config.config.programs.is_empty() {
            self.reload_build();
        }
        self.bump()
    }

    /// Is the file in the workspace as far as it knows yet: open, or
    /// listed by a scan?
    pub fn knows(&self, path: &Path) -> bool {
        self.docs.contains_key(path) || self.disk_files.contains(path)
    }

    /// Replaces the workspace's file list after a rescan: files that left it
    /// leave the program unless open. Returns the files that joined it.
    pub fn set_disk_files(&mut self, files: BTreeSet<PathBuf>) -> Vec<PathBuf> {
        self.sync();
        for gone in self.disk_files.difference(&files) {
            if !self.docs.contains_key(gone) {
                self.host.remove_file(gone);
            }
        }
        let new = files.difference(&self.disk_files).cloned().collect();
        self.disk_files = files;
        self.bump();
        new
    }

    /// A watched file changed on disk. Open documents keep the editor's text.
    pub fn disk_file_changed(&mut self, path: &Path) -> u64 {
        self.sync();
        if self.is_config(path) {
            self.reload_config();
        } else if path.file_name().and_then(|n| n.to_str()) == Some(workspace::DATABASE_FILE) {
            self.reload_build();
        } else if self.disk_files.contains(path) && !self.docs.contains_key(path) {
            self.load_from_disk(path);
        }
        self.bump()
    }

    fn open_files(&self) -> BTreeMap<PathBuf, OpenFile> {
        self.docs
            .iter()
            .filter(|(p, _)| !self.is_config(p))
            .map(|(p, o)| {
                (
                    p.clone(),
                    OpenFile {
                        uri: o.uri.clone(),
                        version: o.doc.version(),
                        text: o.doc.text().clone(),
                        line_index: o.doc.line_index(),
                    },
                )
            })
            .collect()
    }

    /// A snapshot of the newest text (syncing edits first).
    pub fn snapshot(&mut self) -> Snapshot {
        self.sync();
        let may_severity = self
            .settings
            .may_severity
            .or(self.config.may_severity)
            .unwrap_or(DiagnosticSeverity::INFORMATION);
        let show_unresolved = self
            .settings
            .show_unresolved
            .unwrap_or(self.config.config.show_unresolved);
        Snapshot {
            analysis: self.host.snapshot(),
            open: self.open_files(),
            encoding: self.encoding,
            may_severity,
            show_unresolved,
        }
    }

    /// Everything needed to compute the diagnostics of this revision.
    pub fn diagnostics_job(&mut self) -> DiagnosticsJob {
        let config = self.config.path.as_deref().and_then(|p| {
            let open = self.docs.get(p);
            Some(FileDiagnostics {
                uri: open.map(|o| o.uri.clone()).or_else(|| path_to_uri(p))?,
                version: open.map(|o| o.doc.version()),
                diagnostics: self.config.diagnostics.clone().into(),
            })
        });
        DiagnosticsJob {
            snapshot: self.snapshot(),
            enable: self.settings.enable,
            config,
            workers: 1,
        }
    }

    /// [`diagnostics_job`](Self::diagnostics_job) for the first diagnostics
    /// after loading the workspace: a cold analysis, spread over the cores.
    pub fn load_diagnostics_job(&mut self) -> DiagnosticsJob {
        DiagnosticsJob {
            workers: racelens_syntax::par::workers(MAX_LOAD_WORKERS),
            ..self.diagnostics_job()
        }
    }

    /// The version of an open document.
    pub fn version(&self, path: &Path) -> Option<i32> {
        self.docs.get(path).map(|o| o.doc.version())
    }

    /// Byte offset of a position in a file, clamped: through the rope for an
    /// open document, through the analysis' text otherwise.
    pub fn offset(&self, path: &Path, pos: LineCol) -> Option<usize> {
        if let Some(open) = self.docs.get(path) {
            return Some(open.doc.offset(pos, self.encoding));
        }
        let text = self.host.snapshot().file_text(path)?;
        Some(LineIndex::new(&text).offset(&text, pos.line, pos.col, self.encoding.is_utf16()))
    }
}
