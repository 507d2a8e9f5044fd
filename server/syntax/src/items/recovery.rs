//! Finding every function definition of a file, including those that
//! tree-sitter's error recovery tore apart or swallowed.
//!
//! Owns [`Recovery`]: the broken regions of a file parsed again with
//! inactive conditionals blanked. Regions are disjoint and in order, byte
//! offsets are those of the file, and a file without errors has none, so
//! it costs nothing there.

use super::{declarator, holds_items};
use crate::fields::Field;
use crate::ir::TypeInfo;
use tree_sitter::{Node, Tree};

/// The top-level function definitions of a tree, in source order (the same
/// order and filter as [`FileItems::functions`]).
pub fn function_nodes<'t>(tree: &'t Tree, src: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![(tree.root_node(), 0u32)];
    while let Some((node, depth)) = stack.pop() {
        let mut cur = node.walk();
        for child in node.named_children(&mut cur) {
            match child.kind() {
                "function_definition" => {
                    let mut t = TypeInfo::default();
                    if child
                        .field("declarator")
                        .and_then(|d| declarator(d, &mut t))
                        .is_some()
                    {
                        out.push(child);
                    }
                }
                k if (k == "ERROR" || holds_items(k)) && depth < 64 => {
                    stack.push((child, depth + 1))
                }
                _ => {}
            }
        }
    }
    let _ = src;
    out.sort_by_key(|n| n.start_byte());
    out
}

/// Calls `f(node, text, offset)` for every function definition of the file,
/// in source order: those of the tree (`text` is `src`, `offset` 0) and those
/// recovered from syntax errors (`text` is a region of the file, `offset` its
/// start).
///
/// tree-sitter's error recovery can swallow the functions after a broken one
/// into one `ERROR` node, or tear a definition apart at the top level
/// (`int` `main(...)` `{` statements... `}`), typically because the branches
/// of an `#if`/`#else` inside it open braces differently. Such regions — an
/// `ERROR` node, a torn definition up to its matching brace, a definition
/// with errors that contains conditionals — are parsed again on their own,
/// with [`crate::preproc::blank_inactive`] applied (one configuration of the
/// conditionals; byte offsets unchanged). A region's functions replace the
/// erroneous definitions they overlap. Regions are disjoint, so this costs at
/// most one more parse of the file, and only for files with errors.
pub fn for_each_function(tree: &Tree, src: &str, f: &mut dyn FnMut(Node, &str, usize)) {
    for_each_function_in(tree, src, &recover(tree, src), f)
}

/// The broken regions of a file with errors, parsed again with inactive
/// conditionals blanked (see [`for_each_function`]). Computing it once lets
/// several passes over the functions share it.
#[derive(Default)]
pub struct Recovery {
    /// (offset in the file, blanked region text, its tree).
    regions: Vec<(usize, String, Tree)>,
}

impl PartialEq for Recovery {
    /// The trees follow from the texts.
    fn eq(&self, other: &Self) -> bool {
        self.regions.len() == other.regions.len()
            && self
                .regions
                .iter()
                .zip(&other.regions)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
    }
}

impl std::fmt::Debug for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recovery({} regions)", self.regions.len())
    }
}

/// Parses the broken regions of `tree` again (nothing for a tree without
/// errors).
pub fn recover(tree: &Tree, src: &str) -> Recovery {
    if !tree.root_node().has_error() {
        return Recovery::default();
    }
    let main = function_nodes(tree, src);
    let blanked = crate::preproc::blank_inactive(src);
    let regions = broken_regions(tree, src, &blanked, &main)
        .into_iter()
        .filter_map(|r| {
            let sub = blanked.get(r.clone())?;
            (!sub.trim().is_empty()).then(|| (r.start, sub.to_string(), region_tree(sub)))
        })
        .collect();
    Recovery { regions }
}

/// Trees of broken regions by text. An edit outside a region leaves its
/// text as it was, so each edit parses at most the region it lies in again
/// (memcached.c: five regions, 80 KB, about 10 ms of every edit). The tree
/// is the fresh parse of the text, so a hit changes nothing. Trees are
/// larger than their texts: generations are short.
static REGION_TREES: crate::memo::TextMemo<Tree> =
    crate::memo::TextMemo::with_generation_bytes(512 << 10);

/// Salt of [`REGION_TREES`] (the memo holds only region trees).
const REGION_SALT: u64 = 0x7265_6769_6f6e;

fn region_tree(text: &str) -> Tree {
    (*REGION_TREES.get(text, REGION_SALT, || crate::parse::parse_text(text))).clone()
}

/// Entries of the region tree memo and the bytes of their texts.
pub fn memo_stats() -> (usize, usize) {
    REGION_TREES.stats()
}

/// [`for_each_function`] with the file's [`Recovery`] already computed.
pub fn for_each_function_in(
    tree: &Tree,
    src: &str,
    recovery: &Recovery,
    f: &mut dyn FnMut(Node, &str, usize),
) {
    let main = function_nodes(tree, src);
    if !tree.root_node().has_error() {
        for n in main {
            f(n, src, 0);
        }
        return;
    }
    // (start, end, rank, node, text, offset); a lower rank wins an overlap.
    let mut cands: Vec<(usize, usize, u8, Node, &str, usize)> = Vec::new();
    for n in main {
        let rank = if n.has_error() { 2 } else { 0 };
        cands.push((n.start_byte(), n.end_byte(), rank, n, src, 0));
    }
    for (offset, sub, t) in &recovery.regions {
        for n in function_nodes(t, sub) {
            let (s, e) = (offset + n.start_byte(), offset + n.end_byte());
            cands.push((s, e, 1, n, sub, *offset));
        }
    }
    cands.sort_by_key(|c| (c.2, c.0));
    // Accepted ranges: start -> end, disjoint.
    let mut taken: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for c in cands {
        let (s, e) = (c.0, c.1);
        let before = taken.range(..=s).next_back().is_some_and(|(_, &pe)| pe > s);
        let after = taken
            .range(s..)
            .next()
            .is_some_and(|(&ps, _)| ps < e.max(s + 1));
        if before || after {
            continue;
        }
        taken.insert(s, e);
        out.push(c);
    }
    out.sort_by_key(|c| c.0);
    for (_, _, _, n, text, offset) in out {
        f(n, text, offset);
    }
}

/// Byte ranges of the file to parse again (see [`for_each_function`]),
/// disjoint and in order.
fn broken_regions(
    tree: &Tree,
    src: &str,
    blanked: &str,
    main: &[Node],
) -> Vec<std::ops::Range<usize>> {
    let mut regions: Vec<std::ops::Range<usize>> = Vec::new();
    // Definitions with errors whose conditionals change when blanked.
    for n in main {
        if n.has_error() && src.get(n.byte_range()) != blanked.get(n.byte_range()) {
            regions.push(n.byte_range());
        }
    }
    let mut stack = vec![(tree.root_node(), 0u32)];
    while let Some((node, depth)) = stack.pop() {
        let mut cur = node.walk();
        let children: Vec<Node> = node.named_children(&mut cur).collect();
        for (i, child) in children.iter().enumerate() {
            match child.kind() {
                // Skip an error region's first line, which holds the
                // construct that broke, unless blanking conditionals changes
                // the region: then the break is likely a torn definition
                // whose header is that first line.
                "ERROR" if child.end_byte() > child.start_byte() => {
                    let r = child.byte_range();
                    let region = src.get(r.clone()).unwrap_or("");
                    let skip = if blanked.get(r.clone()).is_some_and(|b| b != region) {
                        0
                    } else {
                        region.find('\n').map(|i| i + 1).unwrap_or(region.len())
                    };
                    if r.start + skip < r.end {
                        regions.push(r.start + skip..r.end);
                    }
                }
                // A definition torn apart: `int` `main(...)` `{...}`.
                "function_declarator" => {
                    let body_end = match children
                        .get(i + 1)
                        .filter(|b| b.kind() == "compound_statement")
                    {
                        Some(body) => Some(body.end_byte()),
                        None => matching_brace(blanked, child.end_byte()),
                    };
                    if let Some(body_end) = body_end {
                        let mut start = child.start_byte();
                        let mut j = i;
                        while j > 0
                            && matches!(
                                children[j - 1].kind(),
                                "primitive_type"
                                    | "type_identifier"
                                    | "sized_type_specifier"
                                    | "struct_specifier"
                                    | "enum_specifier"
                                    | "union_specifier"
                                    | "storage_class_specifier"
                                    | "type_qualifier"
                                    | "pointer_declarator"
                            )
                        {
                            j -= 1;
                            start = children[j].start_byte();
                        }
                        regions.push(start..body_end);
                    }
                }
                k if holds_items(k) && depth < 64 => stack.push((*child, depth + 1)),
                _ => {}
            }
        }
    }
    // Merge overlapping regions so that no byte is parsed twice.
    regions.sort_by_key(|r| r.start);
    let mut merged: Vec<std::ops::Range<usize>> = Vec::new();
    for r in regions {
        match merged.last_mut() {
            Some(last) if r.start < last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// The end (exclusive) of the `{ ... }` block starting after `from` (after
/// blanks), skipping braces in comments, strings and character literals.
fn matching_brace(src: &str, from: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut i = from;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}
