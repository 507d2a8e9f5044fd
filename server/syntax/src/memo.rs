//! A content-addressed memo: values computed from a piece of source text
//! (plus a salt such as a node kind or a macro table's fingerprint), kept
//! across salsa revisions.
//!
//! Whole-file queries re-run on every edit of the file; with this memo, only
//! the pieces whose text changed are computed again. A hit returns exactly
//! what the computation would, so salsa's determinism is preserved: the text
//! itself is stored and compared, the hash only finds the entry.

use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// Entries kept before a memo starts afresh.
const MAX_ENTRIES: usize = 200_000;

type Entries<V> = FxHashMap<(u64, u64), (Box<str>, Arc<V>)>;

/// A memo of `V` by (text, salt). Meant for a `static`.
pub struct TextMemo<V> {
    entries: Mutex<Option<Entries<V>>>,
}

impl<V> TextMemo<V> {
    pub const fn new() -> Self {
        TextMemo {
            entries: Mutex::new(None),
        }
    }

    /// The value for `text` and `salt`, computed by `compute` when missing.
    pub fn get(&self, text: &str, salt: u64, compute: impl FnOnce() -> V) -> Arc<V> {
        let mut h = FxHasher::default();
        text.hash(&mut h);
        let key = (h.finish(), salt);
        let lock = || self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((stored, v)) = lock().as_ref().and_then(|m| m.get(&key)) {
            if &**stored == text {
                return v.clone();
            }
        }
        let v = Arc::new(compute());
        let mut entries = lock();
        let m = entries.get_or_insert_with(FxHashMap::default);
        if m.len() >= MAX_ENTRIES {
            m.clear();
        }
        m.insert(key, (text.into(), v.clone()));
        v
    }
}

impl<V> Default for TextMemo<V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computes_once_per_text_and_salt() {
        static MEMO: TextMemo<usize> = TextMemo::new();
        let mut runs = 0;
        let mut get = |t: &str, salt: u64| {
            *MEMO.get(t, salt, || {
                runs += 1;
                t.len()
            })
        };
        assert_eq!(get("abc", 1), 3);
        assert_eq!(get("abc", 1), 3);
        assert_eq!(get("abc", 2), 3);
        assert_eq!(get("abcd", 1), 4);
        drop(get);
        assert_eq!(runs, 3);
    }
}
