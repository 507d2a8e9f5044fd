//! A content-addressed cache of lowered functions.
//!
//! `file_lowered` re-runs on every edit of a file; without this cache it would
//! lower every function of the file again. The cache maps (function text,
//! macro table) to the IR, so unchanged functions are reused. A hit returns
//! exactly what lowering would compute, so salsa's determinism is preserved.

use racelens_syntax::{self as syntax, memo::TextMemo, FnIr, MacroTable};
use std::sync::Arc;
use tree_sitter::Node;

/// An IR is about ten times the size of its text: superseded texts are
/// dropped after 512 KB of new ones (with 2 MB, editing mt-daapd at random
/// kept some 40 MB of IR of texts no longer in the file).
static MEMO: TextMemo<FnIr> = TextMemo::with_generation_bytes(512 << 10);

/// Entries of the cache and the bytes of their texts.
pub fn stats() -> (usize, usize) {
    MEMO.stats()
}

/// Lowers `def` (a node of a tree over `src`), reusing a previous result for
/// the same text and macros.
pub fn lower(def: Node, src: &str, macros: &MacroTable) -> Arc<FnIr> {
    let text = src.get(def.byte_range()).unwrap_or("");
    MEMO.get(text, macros.fingerprint(), || {
        syntax::lower_definition(def, src, macros)
    })
}

/// Lowers a function from its own text (parsed standalone), reusing the
/// result of lowering the same text and macros in its file.
pub fn lower_text(text: &str, macros: &MacroTable) -> Arc<FnIr> {
    MEMO.get(text, macros.fingerprint(), || {
        syntax::lower_function(text, macros)
    })
}
