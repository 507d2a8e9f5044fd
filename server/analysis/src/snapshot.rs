//! The read-only view of the analysis at one revision, [`Analysis`]: a
//! database clone, the workspace input and the files by path.
//!
//! Lives below [`crate::host`] so that the layers the host calls (explain,
//! fixes, hover) can take a snapshot without reaching up into the host.
//! Only the host makes snapshots; queries over a snapshot that need those
//! layers (races, checks) are in `host`, the raw accessors here.

use crate::db::{file_items, RootDb, SourceFile, Workspace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A read-only view of the analysis at one revision.
#[derive(Clone)]
pub struct Analysis {
    pub(crate) db: RootDb,
    pub(crate) ws: Workspace,
    pub(crate) files: BTreeMap<PathBuf, SourceFile>,
}

impl Analysis {
    /// The input of a file, for queries that need its syntax tree.
    pub fn file(&self, path: &Path) -> Option<SourceFile> {
        self.files.get(path).copied()
    }

    pub fn file_text(&self, path: &Path) -> Option<Arc<str>> {
        self.files
            .get(path)
            .map(|f| f.parsed(&self.db).text.clone())
    }

    /// Number of syntax errors in a file.
    pub fn syntax_errors(&self, path: &Path) -> u32 {
        self.files
            .get(path)
            .map(|f| file_items(&self.db, *f).error_count)
            .unwrap_or(0)
    }

    /// Does the file's item list define a function of this name? (A
    /// definition that tree-sitter's error recovery tore apart is missing.)
    pub fn defines(&self, path: &Path, name: &str) -> bool {
        self.files
            .get(path)
            .map(|f| {
                file_items(&self.db, *f)
                    .functions
                    .iter()
                    .any(|g| &*g.name == name)
            })
            .unwrap_or(false)
    }

    pub fn db(&self) -> &RootDb {
        &self.db
    }

    pub fn workspace(&self) -> Workspace {
        self.ws
    }
}
