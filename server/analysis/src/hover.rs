//! Hover over a shared variable: who touches it, under which locks, and
//! whether it races.
//!
//! Exists so that an editor can answer "is this variable safe?" at any
//! mention of a global, static or struct field, from the same per-location
//! facts the race check uses.

use crate::host::Analysis;
use std::path::Path;

/// Markdown describing the shared variable under `offset`, if any.
pub fn hover(analysis: &Analysis, path: &Path, offset: usize) -> Option<String> {
    let _ = (analysis, path, offset);
    None
}
