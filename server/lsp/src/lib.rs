//! racelens language server (work in progress).

/// Runs the server over stdio.
pub fn run_stdio() {}
