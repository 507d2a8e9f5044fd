//! Small queries on a file's tree and text that the fixes share: the
//! statement around an access, indentation, line ends, and whether a name
//! is declared before a point.

use racelens_syntax::Parsed;
use tree_sitter::Node;

/// Statement kinds that can stand in a block.
const STATEMENTS: &[&str] = &[
    "expression_statement",
    "declaration",
    "return_statement",
    "if_statement",
    "while_statement",
    "do_statement",
    "for_statement",
    "switch_statement",
    "compound_statement",
    "goto_statement",
    "break_statement",
    "continue_statement",
    "labeled_statement",
];

pub(super) fn is_block(n: Node) -> bool {
    matches!(n.kind(), "compound_statement" | "case_statement")
}

/// The smallest node spanning `start..end`.
pub(super) fn node_at(p: &Parsed, start: usize, end: usize) -> Option<Node<'_>> {
    p.tree.root_node().descendant_for_byte_range(start, end)
}

/// The innermost statement around `n` that is a member of a block, or the
/// body of an `if`, `else`, loop (then it needs braces to grow).
pub(super) fn statement_around(mut n: Node) -> Option<(Node, bool)> {
    loop {
        let parent = n.parent()?;
        if parent.kind() == "function_definition" {
            return None;
        }
        if STATEMENTS.contains(&n.kind()) {
            if is_block(parent) {
                return Some((n, false));
            }
            let is_body = match parent.kind() {
                "if_statement" => parent.child_by_field_name("condition") != Some(n),
                // After a label: the label keeps pointing at the new block.
                "else_clause" | "labeled_statement" => true,
                "while_statement" | "do_statement" | "for_statement" => {
                    parent.child_by_field_name("body") == Some(n)
                }
                _ => false,
            };
            if is_body {
                return Some((n, true));
            }
        }
        n = parent;
    }
}

/// Start of the line holding `pos`.
pub(super) fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

/// The indentation before `pos` when only blanks precede it on its line.
pub(super) fn indent_before(text: &str, pos: usize) -> Option<&str> {
    let s = &text[line_start(text, pos)..pos];
    s.chars().all(|c| c == ' ' || c == '\t').then_some(s)
}

/// The indentation of the line holding `pos`.
pub(super) fn line_indent(text: &str, pos: usize) -> &str {
    let s = &text[line_start(text, pos)..];
    let n = s.len() - s.trim_start_matches([' ', '\t']).len();
    &s[..n]
}

/// When only blanks and a comment follow `pos` on its line, the offset of
/// that line's end (before the newline).
pub(super) fn trivia_to_eol(text: &str, pos: usize) -> Option<usize> {
    let end = text[pos..]
        .find('\n')
        .map(|i| pos + i)
        .unwrap_or(text.len());
    let rest = text[pos..end].trim();
    let rest = rest.strip_suffix('\r').unwrap_or(rest).trim();
    let ok = rest.is_empty()
        || rest.starts_with("//")
        || (rest.starts_with("/*")
            && rest.ends_with("*/")
            && !rest[2..rest.len() - 2].contains("*/"));
    ok.then_some(if text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    })
}

/// Is `name` declared or defined at top level (or as a macro) before `pos`?
pub(super) fn declared_before(p: &Parsed, name: &str, pos: usize) -> bool {
    let mut stack = vec![p.tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.start_byte() >= pos {
            continue;
        }
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            if c.start_byte() >= pos {
                continue;
            }
            match c.kind() {
                "preproc_def" | "preproc_function_def"
                    if c.child_by_field_name("name")
                        .map(|x| &p.text[x.byte_range()] == name)
                        .unwrap_or(false) =>
                {
                    return true
                }
                "function_definition" | "declaration"
                    if declarator_names(c, &p.text).iter().any(|d| d == name) =>
                {
                    return true
                }
                "preproc_if"
                | "preproc_ifdef"
                | "preproc_else"
                | "preproc_elif"
                | "linkage_specification"
                | "declaration_list" => stack.push(c),
                _ => {}
            }
        }
    }
    false
}

/// The names a top-level declaration or definition declares.
fn declarator_names(n: Node, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = n.walk();
    for d in n.children_by_field_name("declarator", &mut cur) {
        let mut d = d;
        for _ in 0..16 {
            if d.kind() == "identifier" {
                out.push(text[d.byte_range()].to_string());
                break;
            }
            match d.child_by_field_name("declarator") {
                Some(x) => d = x,
                None => match d.named_child(0) {
                    Some(x) if d.kind() == "parenthesized_declarator" => d = x,
                    _ => break,
                },
            }
        }
    }
    out
}

/// Is `name` a whole word somewhere in `text`?
pub(super) fn mentions(text: &str, name: &str) -> bool {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    text.match_indices(name).any(|(i, _)| {
        (i == 0 || !word(b[i - 1])) && b.get(i + name.len()).map(|&c| !word(c)).unwrap_or(true)
    })
}

/// Identifiers in `text` that are not field names (after `.` or `->`).
pub(super) fn free_identifiers(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let before = text[..s].trim_end();
            if !(before.ends_with('.') || before.ends_with("->")) {
                out.push(text[s..i].to_string());
            }
        } else if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            i += 1;
            while i < b.len() && b[i] != q {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    out
}
