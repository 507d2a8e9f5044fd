//! [`Snapshot`]: what a request or diagnostics job reads off the state's
//! lock, an analysis snapshot together with the open files it was taken with.
//!
//! Lives below `state` (which makes snapshots) and `diagnostics` and
//! `requests` (which read them), so those need not import each other.
//! A snapshot is immutable; the texts in `open` are the versions the
//! analysis saw, so positions computed from it match what is reported.

use crate::convert::{Encoding, OpenFile};
use racelens_analysis::Analysis;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tower_lsp_server::ls_types::DiagnosticSeverity;

/// What a request needs to answer off the lock: a snapshot and the open
/// files it was taken with.
pub struct Snapshot {
    pub analysis: Analysis,
    pub open: BTreeMap<PathBuf, OpenFile>,
    pub encoding: Encoding,
    pub may_severity: DiagnosticSeverity,
    /// Publish may races with no concrete object (see
    /// `RaceReport::unresolved`).
    pub show_unresolved: bool,
}
