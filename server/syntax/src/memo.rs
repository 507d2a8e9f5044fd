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

/// Text (in bytes) computed afresh before the memo starts a new generation.
/// Every edit adds the edited piece's new text; without a bound the memo
/// would keep every version of every piece ever edited (issue 26: memory
/// rose by about 56 KB per edit on mt-daapd).
const GENERATION_BYTES: usize = 2 << 20;

type Entries<V> = FxHashMap<(u64, u64), (Box<str>, Arc<V>)>;

/// Two generations: entries used since the last rotation, and the ones
/// before. A hit in the older one moves the entry forward; a rotation drops
/// whatever was not used for a whole generation. So the memo holds what is
/// in use plus at most two generations of superseded texts.
struct Generations<V> {
    current: Entries<V>,
    previous: Entries<V>,
    /// Bytes of text computed into `current` since the last rotation.
    added: usize,
}

/// A memo of `V` by (text, salt). Meant for a `static`.
pub struct TextMemo<V> {
    entries: Mutex<Option<Generations<V>>>,
    /// Bytes of text computed afresh per generation.
    generation_bytes: usize,
}

impl<V> TextMemo<V> {
    pub const fn new() -> Self {
        Self::with_generation_bytes(GENERATION_BYTES)
    }

    /// A memo whose generations end after `bytes` of text computed afresh
    /// (smaller for values much larger than their texts, such as trees).
    pub const fn with_generation_bytes(bytes: usize) -> Self {
        TextMemo {
            entries: Mutex::new(None),
            generation_bytes: bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Generations<V>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value for `text` and `salt`, computed by `compute` when missing.
    pub fn get(&self, text: &str, salt: u64, compute: impl FnOnce() -> V) -> Arc<V> {
        let mut h = FxHasher::default();
        text.hash(&mut h);
        let key = (h.finish(), salt);
        if let Some(g) = self.lock().as_mut() {
            if let Some((stored, v)) = g.current.get(&key) {
                if &**stored == text {
                    return v.clone();
                }
            }
            if g.previous
                .get(&key)
                .is_some_and(|(stored, _)| &**stored == text)
            {
                let entry = g.previous.remove(&key).expect("just found");
                let v = entry.1.clone();
                g.current.insert(key, entry);
                return v;
            }
        }
        let v = Arc::new(compute());
        let mut entries = self.lock();
        let g = entries.get_or_insert_with(|| Generations {
            current: FxHashMap::default(),
            previous: FxHashMap::default(),
            added: 0,
        });
        g.added += text.len();
        if g.added > self.generation_bytes {
            g.previous = std::mem::take(&mut g.current);
            g.added = 0;
        }
        g.current.insert(key, (text.into(), v.clone()));
        v
    }

    /// Entries held, and the bytes of their texts.
    pub fn stats(&self) -> (usize, usize) {
        self.lock().as_ref().map_or((0, 0), |g| {
            let all = g.current.values().chain(g.previous.values());
            (
                g.current.len() + g.previous.len(),
                all.map(|(t, _)| t.len()).sum(),
            )
        })
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

    #[test]
    fn superseded_texts_leave_after_two_generations() {
        static MEMO: TextMemo<usize> = TextMemo::new();
        let live = "kept in use";
        let piece = "x".repeat(64 << 10);
        for i in 0..(4 * GENERATION_BYTES / piece.len()) {
            MEMO.get(live, 0, || 1);
            MEMO.get(&format!("{piece}{i}"), 0, || 2);
        }
        let (entries, bytes) = MEMO.stats();
        assert!(bytes <= 2 * GENERATION_BYTES + 2 * piece.len(), "{bytes}");
        assert!(
            entries <= 2 * GENERATION_BYTES / piece.len() + 3,
            "{entries}"
        );
        let mut runs = 0;
        MEMO.get(live, 0, || {
            runs += 1;
            1
        });
        assert_eq!(runs, 0, "an entry in use is never dropped");
    }
}
