//! The `LanguageServer` implementation: thin handlers that convert the
//! protocol's types, change the [`State`](crate::state::State) under its
//! lock and hand analysis work to the [`Session`].
//!
//! Notifications that change documents do all their work before their
//! first `.await`, so they apply in the order the client sent them even
//! though handlers run concurrently.

use crate::config::Settings;
use crate::convert::{line_col, uri_to_path, Encoding};
use crate::document::TextChange;
use crate::requests::{self, EXPLAIN_COMMAND};
use crate::session::{run_blocking, ClientFeatures, Session};
use crate::transport::InvalidMessage;
use crate::workspace;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

pub struct Server {
    session: Arc<Session>,
}

impl Server {
    pub fn new(client: Client) -> Server {
        Server {
            session: Session::new(client),
        }
    }

    /// Answers a message the transport could not decode with its error.
    pub async fn invalid_message(&self, params: InvalidMessage) -> Result<()> {
        Err(params.into_error())
    }
}

/// The workspace folders, else the deprecated `rootUri` and `rootPath`.
#[allow(deprecated)]
fn roots(params: &InitializeParams) -> Vec<PathBuf> {
    if let Some(folders) = params.workspace_folders.as_ref().filter(|f| !f.is_empty()) {
        return folders.iter().map(|f| uri_to_path(&f.uri)).collect();
    }
    let root_path = || {
        params
            .root_path
            .as_ref()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)))
    };
    params
        .root_uri
        .as_ref()
        .map(uri_to_path)
        .or_else(root_path)
        .into_iter()
        .collect()
}

fn capabilities(encoding: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::from(encoding.name())),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![EXPLAIN_COMMAND.into()],
            ..ExecuteCommandOptions::default()
        }),
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..ServerCapabilities::default()
    }
}

/// `ContentModified` when a document's version moved while a request ran.
fn unchanged(before: Option<i32>, after: Option<i32>) -> Result<()> {
    match before == after {
        true => Ok(()),
        false => Err(Error::content_modified()),
    }
}

/// The argument of `racelens.explain`.
#[derive(Deserialize)]
struct ExplainArgs {
    uri: Uri,
    position: Position,
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let caps = &params.capabilities;
        let offered = caps
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.clone())
            .unwrap_or_default();
        let encoding = Encoding::negotiate(
            &offered,
            caps.offset_encoding.as_deref().unwrap_or_default(),
        );
        self.session
            .set_features(ClientFeatures::from_capabilities(&params.capabilities));
        {
            let mut state = self.session.lock();
            state.set_encoding(encoding);
            state.set_roots(roots(&params));
            let mut settings = Settings::default();
            settings.update(
                params
                    .initialization_options
                    .as_ref()
                    .unwrap_or(&Value::Null),
            );
            state.set_settings(settings);
            tracing::info!(
                "initialize: {} position encoding, roots {:?}",
                encoding.name(),
                state.roots()
            );
        }
        Ok(InitializeResult {
            capabilities: capabilities(encoding),
            server_info: Some(ServerInfo {
                name: "racelens".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            // clangd's extension: answered only to clients that asked.
            offset_encoding: caps
                .offset_encoding
                .as_ref()
                .map(|_| encoding.name().into()),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        tokio::spawn(self.session.clone().start());
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        let path = uri_to_path(&doc.uri);
        let revision = {
            let mut state = self.session.lock();
            if !state.wants(&path, &doc.language_id) {
                tracing::info!(
                    "ignoring `{}`: language `{}` is not C",
                    doc.uri.as_str(),
                    doc.language_id
                );
                return;
            }
            state.open(doc.uri, path, doc.version, &doc.text)
        };
        self.session.schedule_diagnostics(revision);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let path = uri_to_path(&params.text_document.uri);
        let changes: Vec<TextChange> = params
            .content_changes
            .into_iter()
            .map(|c| TextChange {
                range: c.range.map(|r| (line_col(r.start), line_col(r.end))),
                text: c.text,
            })
            .collect();
        let t0 = std::time::Instant::now();
        let revision = self
            .session
            .lock()
            .change(&path, params.text_document.version, &changes);
        if crate::session::timing() {
            eprintln!("racelens: didChange applied in {:.1?}", t0.elapsed());
        }
        match revision {
            Some(revision) => self.session.schedule_diagnostics(revision),
            None => tracing::warn!(
                "ignoring didChange for `{}`, which is not open",
                params.text_document.uri.as_str()
            ),
        }
    }

    /// Nothing to do: open documents are analysed as they are edited.
    async fn did_save(&self, _: DidSaveTextDocumentParams) {}

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let path = uri_to_path(&params.text_document.uri);
        let revision = self.session.lock().close(&path);
        self.session.schedule_diagnostics(revision);
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        // Pull clients send `null` here and answer `workspace/configuration`;
        // push clients send the settings themselves.
        self.session.apply_settings(&params.settings);
        self.session.pull_settings().await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        let mut rescan = false;
        let mut revision = None;
        {
            let mut state = self.session.lock();
            for event in &params.changes {
                let path = uri_to_path(&event.uri);
                let created_or_deleted =
                    event.typ == FileChangeType::CREATED || event.typ == FileChangeType::DELETED;
                // A change to a C file no scan has listed yet (the first
                // scan may still be reading the folder) is read by a rescan,
                // so that it is not lost.
                if workspace::is_c(&path) && (created_or_deleted || !state.knows(&path)) {
                    rescan = true;
                } else {
                    revision = Some(state.disk_file_changed(&path));
                }
            }
        }
        if let Some(revision) = revision {
            self.session.schedule_diagnostics(revision);
        }
        if rescan {
            self.session.rescan().await;
        }
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        {
            let mut state = self.session.lock();
            let removed: Vec<PathBuf> = params
                .event
                .removed
                .iter()
                .map(|f| uri_to_path(&f.uri))
                .collect();
            let mut roots: Vec<PathBuf> = state
                .roots()
                .iter()
                .filter(|r| !removed.contains(r))
                .cloned()
                .collect();
            roots.extend(params.event.added.iter().map(|f| uri_to_path(&f.uri)));
            state.set_roots(roots);
            state.reload_config();
        }
        self.session.rescan().await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let pos = params.text_document_position_params;
        let path = uri_to_path(&pos.text_document.uri);
        let (snapshot, offset) = {
            let mut state = self.session.lock();
            let Some(offset) = state.offset(&path, line_col(pos.position)) else {
                return Ok(None);
            };
            (state.snapshot(), offset)
        };
        run_blocking(move || requests::hover(&snapshot, &path, offset))
            .await
            .map_err(|f| f.into_rpc())
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        // All our actions are quick fixes; a client asking only for other
        // kinds (say `source.organizeImports`) gets none.
        let wants_quickfix = params.context.only.as_ref().is_none_or(|kinds| {
            kinds
                .iter()
                .any(|k| CodeActionKind::QUICKFIX.as_str().starts_with(k.as_str()))
        });
        if !wants_quickfix {
            return Ok(None);
        }
        let path = uri_to_path(&params.text_document.uri);
        let (snapshot, start, end) = {
            let mut state = self.session.lock();
            let (Some(start), Some(end)) = (
                state.offset(&path, line_col(params.range.start)),
                state.offset(&path, line_col(params.range.end)),
            ) else {
                return Ok(None);
            };
            (state.snapshot(), start, end.max(start))
        };
        let context = params.context.diagnostics;
        let actions =
            run_blocking(move || requests::code_actions(&snapshot, &path, start, end, &context))
                .await
                .map_err(|f| f.into_rpc())?;
        Ok(Some(actions))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        if params.command != EXPLAIN_COMMAND {
            return Err(Error::invalid_params(format!(
                "unknown command `{}`",
                params.command
            )));
        }
        let arg =
            params.arguments.into_iter().next().ok_or_else(|| {
                Error::invalid_params("racelens.explain expects [{uri, position}]")
            })?;
        let args: ExplainArgs = serde_json::from_value(arg).map_err(|e| {
            Error::invalid_params(format!("racelens.explain expects [{{uri, position}}]: {e}"))
        })?;
        let path = uri_to_path(&args.uri);
        let (snapshot, offset, version) = {
            let mut state = self.session.lock();
            let Some(offset) = state.offset(&path, line_col(args.position)) else {
                return Ok(None);
            };
            (state.snapshot(), offset, state.version(&path))
        };
        let explain_path = path.clone();
        let answer = run_blocking(move || requests::explain(&snapshot, &explain_path, offset))
            .await
            .map_err(|f| f.into_rpc())?;
        // An edit that came while the explanation ran without cancelling it
        // (after its last query) makes its ranges stale.
        unchanged(version, self.session.lock().version(&path))?;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::jsonrpc::ErrorCode;

    #[test]
    fn an_answer_computed_on_an_older_version_is_content_modified() {
        assert!(unchanged(Some(3), Some(3)).is_ok());
        assert!(unchanged(None, None).is_ok());
        for (before, after) in [(Some(3), Some(4)), (Some(3), None), (None, Some(1))] {
            assert_eq!(
                unchanged(before, after).unwrap_err().code,
                ErrorCode::ContentModified
            );
        }
    }
}
