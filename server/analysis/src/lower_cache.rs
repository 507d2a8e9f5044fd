//! A content-addressed cache of lowered functions.
//!
//! `file_lowered` re-runs on every edit of a file; without this cache it would
//! lower every function of the file again. The cache maps (function text,
//! macro table) to the IR, so unchanged functions are reused. A hit returns
//! exactly what lowering would compute, so salsa's determinism is preserved.

use racelens_syntax::{self as syntax, FnIr, MacroTable};
use rustc_hash::FxHashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};
use tree_sitter::Node;

/// Entries kept before the cache is cleared.
const MAX_ENTRIES: usize = 200_000;

type Key = (u64, u64);

fn cache() -> &'static Mutex<FxHashMap<Key, (Arc<str>, Arc<FnIr>)>> {
    static CACHE: OnceLock<Mutex<FxHashMap<Key, (Arc<str>, Arc<FnIr>)>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Lowers `def` (a node of a tree over `src`), reusing a previous result for
/// the same text and macros.
pub fn lower(def: Node, src: &str, macros: &MacroTable) -> Arc<FnIr> {
    let text = src.get(def.byte_range()).unwrap_or("");
    let mut h = rustc_hash::FxHasher::default();
    text.hash(&mut h);
    let key = (h.finish(), macros.fingerprint());
    if let Some((t, ir)) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        if &**t == text {
            return ir.clone();
        }
    }
    let ir = Arc::new(syntax::lower_definition(def, src, macros));
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= MAX_ENTRIES {
        c.clear();
    }
    c.insert(key, (Arc::from(text), ir.clone()));
    ir
}
