//! The read-only view of the analysis at one revision, [`Analysis`]: a
//! database clone, the workspace input and the files by path.
//!
//! Lives below [`crate::host`] so that the layers the host calls (explain,
//! fixes, hover) can take a snapshot without reaching up into the host.
//! Only the host makes snapshots; queries over a snapshot that need those
//! layers (races, checks) are in `host`, the raw accessors here.

use crate::db::{file_items, RootDb, SourceFile, Workspace};
use crate::units::Universe;
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A read-only view of the analysis at one revision. Queries about one
/// program (hover, fixes, explanations) use the program `ws`; see
/// [`Analysis::for_file`] and [`Analysis::for_report`].
#[derive(Clone)]
pub struct Analysis {
    pub(crate) db: RootDb,
    /// The program the single-program queries look at.
    pub(crate) ws: Workspace,
    pub(crate) universe: Universe,
    pub(crate) programs: Arc<Vec<ProgramRef>>,
    pub(crate) files: BTreeMap<PathBuf, SourceFile>,
}

/// One program of the snapshot.
#[derive(Clone, Debug)]
pub struct ProgramRef {
    pub ws: Workspace,
    pub name: Arc<str>,
    pub library: bool,
    pub files: FxHashSet<SourceFile>,
}

impl Analysis {
    /// Every program, in partition order.
    pub fn programs(&self) -> &[ProgramRef] {
        &self.programs
    }

    /// The same snapshot looking at program `ws`.
    pub fn for_program(&self, ws: Workspace) -> Analysis {
        Analysis { ws, ..self.clone() }
    }

    /// The programs that contain a file.
    pub fn programs_of(&self, path: &Path) -> Vec<&ProgramRef> {
        match self.files.get(path) {
            Some(f) => self
                .programs
                .iter()
                .filter(|p| p.files.contains(f))
                .collect(),
            None => Vec::new(),
        }
    }

    /// The snapshot looking at the first program that contains `path`.
    pub fn for_file(&self, path: &Path) -> Analysis {
        match self.programs_of(path).first() {
            Some(p) => self.for_program(p.ws),
            None => self.clone(),
        }
    }

    /// The snapshot looking at the (first) program a report came from.
    pub fn for_report(&self, r: &crate::report::RaceReport) -> Analysis {
        let named = r
            .programs
            .first()
            .and_then(|n| self.programs.iter().find(|p| *p.name == **n));
        match named {
            Some(p) => self.for_program(p.ws),
            None => self.for_file(&r.site.file),
        }
    }

    pub fn universe(&self) -> Universe {
        self.universe
    }

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
            .map(|f| file_items(&self.db, self.universe, *f).error_count)
            .unwrap_or(0)
    }

    /// The functions of a file whose last good version the analysis uses
    /// because their text has new syntax errors (see [`crate::baseline`]),
    /// in source order.
    pub fn stale_functions(&self, path: &Path) -> Vec<String> {
        self.files
            .get(path)
            .map(|f| {
                crate::baseline::effective_functions(&self.db, self.universe, *f)
                    .iter()
                    .filter(|g| g.stale())
                    .map(|g| g.name.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Does the file's item list define a function of this name? (A
    /// definition that tree-sitter's error recovery tore apart is missing.)
    pub fn defines(&self, path: &Path, name: &str) -> bool {
        self.files
            .get(path)
            .map(|f| {
                file_items(&self.db, self.universe, *f)
                    .functions
                    .iter()
                    .any(|g| &*g.name == name)
            })
            .unwrap_or(false)
    }

    /// Byte ranges of the function definitions in `path` whose name the
    /// parser could not read (their bodies are not analysed).
    pub fn lost_functions(&self, path: &Path) -> Vec<(usize, usize)> {
        self.files
            .get(path)
            .map(|f| {
                file_items(&self.db, self.universe, *f)
                    .lost_functions
                    .iter()
                    .map(|&(a, b)| (a as usize, b as usize))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn db(&self) -> &RootDb {
        &self.db
    }

    pub fn workspace(&self) -> Workspace {
        self.ws
    }
}
