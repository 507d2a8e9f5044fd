//! Names being typed: a function that uses, for the first time, a name that
//! nothing in the workspace declares is half-typed code, as one with new
//! syntax errors is (`baseline.rs` then keeps its last good version).
//!
//! Typing `set->InterfaceActive` character by character, or a one-letter
//! slip such as `db_remoed`, passes through names that resolve to nothing.
//! Analysed as they stand, each such keystroke rebuilds the pointer store
//! or moves a callee's contexts, and the diagnostics jump and come back one
//! key later. [`typed_name`] finds such a name by reading text only (no
//! parse, no symbol table: unpreprocessed projects have headers out of
//! sight, and macros declare names a parse does not see):
//! - a word (identifier, field or type name, outside comments and string
//!   and character literals) of the function's current text that its last
//!   good text does not have;
//! - used once in the function (a new local is declared and then used:
//!   two occurrences);
//! - not a C keyword, and not spelled like a macro (no lowercase letter:
//!   `ENOMEM` may come from a system header out of sight);
//! - one edit (a character inserted, deleted or replaced) from a word of
//!   the good text, the longer of the two at least three characters long:
//!   a slip in a name, or a name being changed. A wholly new name is
//!   ordinary code even when nothing in sight declares it: a system type
//!   (`pthread_t`) put back when a commented-out line is restored, or a
//!   first call of a library function (`fopen`) whose header is out of
//!   sight;
//! - not a function the analysis has a model of (`calloc`, `strlen`,
//!   `pthread_mutex_lock`: C library, POSIX and thread APIs);
//! - occurring as a whole word nowhere else in the workspace (the rest of
//!   its file, every other file).
//!
//! Invariant: the verdict is a function of the two texts and of the
//! workspace's texts that `elsewhere` reads; only candidates that pass the
//! tests on the two texts ask `elsewhere`, so that an edit that adds no
//! slip of a name reads no other file.

use crate::config::Config;
use crate::programs::identifiers;
use racelens_syntax::Name;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::LazyLock;

/// The first name (in text order) of `current` that is being typed, by the
/// rules of the module doc; `elsewhere(w)` says whether `w` occurs as a
/// whole word anywhere else in the workspace.
pub fn typed_name(current: &str, good: &str, elsewhere: impl Fn(&str) -> bool) -> Option<Name> {
    let good_words: FxHashSet<&str> = identifiers(good).map(|(_, w)| w).collect();
    let mut new: FxHashMap<&str, (u32, usize)> = FxHashMap::default();
    for (at, w) in identifiers(current) {
        if !good_words.contains(w) {
            new.entry(w).or_insert((0, at)).0 += 1;
        }
    }
    let mut new: Vec<(usize, &str)> = new
        .into_iter()
        .filter(|(w, (n, _))| {
            *n == 1 && !is_keyword(w) && w.bytes().any(|b| b.is_ascii_lowercase())
        })
        .map(|(w, (_, at))| (at, w))
        .collect();
    new.sort_unstable();
    new.into_iter()
        .map(|(_, w)| w)
        .filter(|w| !known_function(w) && good_words.iter().any(|g| one_edit(g, w)))
        .find(|w| !elsewhere(w))
        .map(Name::from)
}

/// Is `w` a function the analysis has a model of (the C library, POSIX,
/// pthreads, C11 threads, atomics: [`Config`]'s built-in models and the
/// walk's library lists)? `calloc` put back where `malloc` stood is code,
/// not a slip.
fn known_function(w: &str) -> bool {
    static DEFAULT: LazyLock<Config> = LazyLock::new(Config::default);
    DEFAULT.model_of(w, || false).is_some() || crate::walk::library::knows(w)
}

/// Does `w` occur in `text` as a whole word (not inside a longer name)?
pub fn occurs_as_word(text: &str, w: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(w).any(|(i, _)| {
        let j = i + w.len();
        (i == 0 || !is_word_byte(b[i - 1])) && (j == b.len() || !is_word_byte(b[j]))
    })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Are `a` and `b` one inserted, deleted or replaced byte apart, the longer
/// at least three bytes long?
fn one_edit(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (s, l) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if l.len() - s.len() > 1 || a == b || l.len() < 3 {
        return false;
    }
    let p = s.iter().zip(l).take_while(|(x, y)| x == y).count();
    if s.len() == l.len() {
        s[p + 1..] == l[p + 1..]
    } else {
        s[p..] == l[p + 1..]
    }
}

/// C's keywords and the spellings compilers add, which no declaration
/// declares.
fn is_keyword(w: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
        "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
        "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
        "union", "unsigned", "void", "volatile", "while", "line", "define", "undef", "ifdef",
        "ifndef", "elif", "endif", "include", "pragma", "error", "defined",
    ];
    KEYWORDS.contains(&w) || w.starts_with("__") || w.starts_with("_Atomic") || w == "_Bool"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(current: &str, good: &str, workspace: &str) -> Option<String> {
        typed_name(current, good, |w| occurs_as_word(workspace, w)).map(|n| n.to_string())
    }

    #[test]
    fn a_slip_in_a_name_is_being_typed() {
        let ws = "int db_removed; struct s { int next; };";
        let good = "{ f(db_removed); p = p->next; }";
        assert_eq!(
            typed("{ f(db_remoed); p = p->next; }", good, ws).as_deref(),
            Some("db_remoed")
        );
        assert_eq!(
            typed("{ f(db_removed); p = p->nxt; }", good, ws).as_deref(),
            Some("nxt")
        );
        assert_eq!(typed(good, good, ws), None);
    }

    #[test]
    fn declared_names_keywords_macros_and_new_names_are_not() {
        let ws = "int counter;";
        let good = "{ x = 1; countr = 2; }";
        // Declared elsewhere in the workspace.
        assert_eq!(typed("{ x = 1; counter = 2; }", good, ws), None);
        // A new local: declared, then used.
        assert_eq!(
            typed("{ int countre; countre = 1; x = 1; }", good, ws),
            None
        );
        // A keyword, a macro-like name, a name inside a comment or a string.
        assert_eq!(typed("{ x = 1; return COUNTR2; }", good, ws), None);
        assert_eq!(
            typed("{ x = 1; /* countx */ puts(\"countx\"); }", good, ws),
            None
        );
        // A wholly new name is ordinary code: a system type put back, a
        // first call of a library function.
        assert_eq!(
            typed("{ pthread_t t; x = 1; fopen(\"f\", \"r\"); }", good, ws),
            None
        );
        // Short names: `y` is not a slip of `x`.
        assert_eq!(typed("{ y = 1; countr = 2; }", good, ws), None);
        // A slip in a call.
        assert_eq!(
            typed(
                "{ SetNextCacheCheckTme(m); }",
                "{ SetNextCacheCheckTime(m); }",
                ""
            )
            .as_deref(),
            Some("SetNextCacheCheckTme")
        );
    }

    #[test]
    fn whole_words_only() {
        assert!(occurs_as_word("a db_removed;", "db_removed"));
        assert!(!occurs_as_word("a db_removed2;", "db_removed"));
        assert!(!occurs_as_word("xdb_removed", "db_removed"));
        assert!(one_edit("abc", "abd") && one_edit("abc", "ab") && one_edit("ab", "xab"));
        assert!(!one_edit("abc", "abc") && !one_edit("abc", "a") && !one_edit("x", "a"));
    }
}
