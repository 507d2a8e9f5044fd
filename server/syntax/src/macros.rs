//! Workspace macro table and textual expansion of `#define`s.
//!
//! racelens never runs the real preprocessor. It expands object-like and
//! function-like macros defined in the workspace at the point where the
//! lowering meets them, which is enough for `#define LOCK() pthread_mutex_lock(&m)`
//! and `STATS_LOCK()`-style wrappers. Expansion of the result is bounded by
//! the lowering (a macro never expands inside itself).

use crate::ir::Name;
use crate::items::MacroDef;
use rustc_hash::FxHashMap;

/// All `#define`s of the workspace, last definition wins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MacroTable {
    defs: FxHashMap<Name, MacroDef>,
    /// A content hash, so caches can tell tables apart cheaply.
    fingerprint: u64,
}

impl MacroTable {
    pub fn new<'a>(defs: impl IntoIterator<Item = &'a MacroDef>) -> Self {
        let mut t = MacroTable::default();
        for d in defs {
            t.defs.insert(d.name.clone(), d.clone());
        }
        let mut names: Vec<&MacroDef> = t.defs.values().collect();
        names.sort_by(|a, b| a.name.cmp(&b.name));
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        for d in names {
            d.hash(&mut h);
        }
        t.fingerprint = h.finish();
        t
    }

    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub fn get(&self, name: &str) -> Option<&MacroDef> {
        self.defs.get(name)
    }

    pub fn len(&self) -> usize {
        self.defs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// Expands a function-like macro with the given argument texts.
    pub fn expand_call(&self, def: &MacroDef, args: &[&str]) -> String {
        let params = def.params.as_deref().unwrap_or(&[]);
        let lookup = |id: &str| -> Option<String> {
            if id == "__VA_ARGS__" {
                let start = params.iter().position(|p| &**p == "__VA_ARGS__")?;
                return Some(args.get(start..).map(|a| a.join(", ")).unwrap_or_default());
            }
            let i = params.iter().position(|p| &**p == id)?;
            Some(
                args.get(i)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default(),
            )
        };
        substitute(&def.body, &lookup)
    }
}

/// The arguments of a macro invocation, from the text of its parenthesised
/// list: split at commas outside nested brackets, strings and character
/// constants, as the preprocessor does. `()` has no argument.
pub fn split_args(list: &str) -> Vec<&str> {
    let inner = list.trim();
    let inner = inner.strip_prefix('(').unwrap_or(inner);
    let inner = inner.strip_suffix(')').unwrap_or(inner);
    if inner.trim().is_empty() {
        return Vec::new();
    }
    let bytes = inner.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(inner[start.min(inner.len())..].trim());
    out
}

/// Replaces identifiers in `body` through `lookup`, handling `#x` and `a ## b`.
fn substitute(body: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len() + 16);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                if bytes[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(bytes.len());
            out.push_str(&body[start..i]);
        } else if c == b'#' && bytes.get(i + 1) == Some(&b'#') {
            // Token pasting: drop the operator and surrounding blanks.
            while out.ends_with(' ') {
                out.pop();
            }
            i += 2;
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
        } else if c == b'#' {
            // Stringification.
            i += 1;
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let v = lookup(&body[s..i]).unwrap_or_else(|| body[s..i].to_string());
            out.push('"');
            out.push_str(&v.replace('\\', "\\\\").replace('"', "\\\""));
            out.push('"');
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            match lookup(&body[s..i]) {
                Some(v) => out.push_str(&v),
                None => out.push_str(&body[s..i]),
            }
        } else {
            let ch_len = body[i..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
            out.push_str(&body[i..i + ch_len]);
            i += ch_len;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_arguments_at_top_level_commas() {
        assert_eq!(
            split_args("(dev, struct my_data, dev)"),
            ["dev", "struct my_data", "dev"]
        );
        assert_eq!(
            split_args("(f(a, b), \",\", x[1, 2], ',', /* , */ y)"),
            ["f(a, b)", "\",\"", "x[1, 2]", "','", "/* , */ y"]
        );
        assert!(split_args("( )").is_empty());
    }

    #[test]
    fn expands_params_stringify_and_paste() {
        let d = MacroDef {
            name: "L".into(),
            params: Some(vec!["x".into(), "y".into()]),
            body: "pthread_mutex_lock(&x##_lock); puts(#y); \"x\"".into(),
        };
        let t = MacroTable::new([&d]);
        assert_eq!(
            t.expand_call(&d, &["s", "hi"]),
            "pthread_mutex_lock(&s_lock); puts(\"hi\"); \"x\""
        );
    }
}
