//! Atomic builtins for a plain scalar counter or flag: `x++` becomes
//! `__atomic_fetch_add(&x, 1, __ATOMIC_SEQ_CST)`, `x = v` an atomic store,
//! and every read an atomic load.
//!
//! A race goes away only when every access is atomic, so the fix rewrites
//! all of them or is not offered. Writes must be exactly an increment,
//! decrement, `+=`-style update or a plain store whose value does not read
//! the variable; then each statement means what it meant, atomically.

use super::syntax::{free_identifiers, node_at};
use super::FileEdit;
use crate::model::{Base, LocKey};
use crate::snapshot::Analysis;
use racelens_syntax::Parsed;
use std::path::PathBuf;
use tree_sitter::Node;

const ORDER: &str = "__ATOMIC_SEQ_CST";

/// The edits that make every access at `sites` atomic, or `None`.
pub(super) fn rewrite_all(
    analysis: &Analysis,
    key: &LocKey,
    is_bool: bool,
    sites: &[(PathBuf, usize, usize)],
) -> Option<Vec<FileEdit>> {
    let name = match &key.base {
        Base::Global(g) if key.path.is_empty() => g.rsplit("::").next().unwrap_or(g).to_string(),
        _ => return None,
    };
    let mut edits = Vec::new();
    for (file, start, end) in sites {
        let sf = analysis.file(file)?;
        let p = sf.parsed(analysis.db());
        let n = node_at(p, *start, *end)?;
        if n.kind() != "identifier"
            || p.text[n.byte_range()] != name
            || n.start_byte() != *start
            || n.end_byte() != *end
        {
            return None;
        }
        let (range, text) = rewrite(p, n, &name, is_bool)?;
        edits.push(FileEdit {
            file: file.clone(),
            start: range.0,
            end: range.1,
            new_text: text,
        });
    }
    edits.sort_by(|a, b| (&a.file, a.start).cmp(&(&b.file, b.start)));
    edits.dedup();
    let overlapping = edits
        .windows(2)
        .any(|w| w[0].file == w[1].file && w[1].start < w[0].end);
    (!overlapping).then_some(edits)
}

/// The replacement for one access to `x`.
fn rewrite(p: &Parsed, n: Node, x: &str, is_bool: bool) -> Option<((usize, usize), String)> {
    let text = &p.text;
    let parent = n.parent()?;
    match parent.kind() {
        "update_expression" => {
            if is_bool {
                return None;
            }
            let op = &text[parent.child_by_field_name("operator")?.byte_range()];
            let prefix = parent
                .child(0)
                .map(|c| c.kind() == "++" || c.kind() == "--")
                .unwrap_or(false);
            let f = match (op, prefix) {
                ("++", false) => "__atomic_fetch_add",
                ("--", false) => "__atomic_fetch_sub",
                ("++", true) => "__atomic_add_fetch",
                ("--", true) => "__atomic_sub_fetch",
                _ => return None,
            };
            Some((
                (parent.start_byte(), parent.end_byte()),
                format!("{f}(&{x}, 1, {ORDER})"),
            ))
        }
        "assignment_expression" if parent.child_by_field_name("left") == Some(n) => {
            let op = &text[parent.child_by_field_name("operator")?.byte_range()];
            let rhs = parent.child_by_field_name("right")?;
            let rhs_text = &text[rhs.byte_range()];
            if free_identifiers(rhs_text).iter().any(|i| i == x) {
                return None;
            }
            let call = match op {
                "=" if value_unused(parent) => {
                    format!("__atomic_store_n(&{x}, {rhs_text}, {ORDER})")
                }
                "+=" if !is_bool => format!("__atomic_add_fetch(&{x}, {rhs_text}, {ORDER})"),
                "-=" if !is_bool => format!("__atomic_sub_fetch(&{x}, {rhs_text}, {ORDER})"),
                // GCC has no fetch operations on `_Bool`.
                "|=" if !is_bool => format!("__atomic_or_fetch(&{x}, {rhs_text}, {ORDER})"),
                "&=" if !is_bool => format!("__atomic_and_fetch(&{x}, {rhs_text}, {ORDER})"),
                "^=" if !is_bool => format!("__atomic_xor_fetch(&{x}, {rhs_text}, {ORDER})"),
                _ => return None,
            };
            Some(((parent.start_byte(), parent.end_byte()), call))
        }
        "pointer_expression"
            if parent
                .child_by_field_name("operator")
                .map(|o| &text[o.byte_range()] == "&")
                .unwrap_or(false) =>
        {
            None
        }
        // Not a read of the value: sizeof, a base of a member or element, a callee.
        "sizeof_expression" | "field_expression" | "subscript_expression" | "call_expression" => {
            None
        }
        _ => Some((
            (n.start_byte(), n.end_byte()),
            format!("__atomic_load_n(&{x}, {ORDER})"),
        )),
    }
}

/// An expression whose value nobody uses: a statement, a `for` clause, or
/// the left of a comma.
fn value_unused(e: Node) -> bool {
    let Some(p) = e.parent() else { return false };
    match p.kind() {
        "expression_statement" => true,
        "for_statement" => p.child_by_field_name("condition") != Some(e),
        "comma_expression" => p.child_by_field_name("left") == Some(e) || value_unused(p),
        "parenthesized_expression" => value_unused(p),
        _ => false,
    }
}
