//! Suppression comments, in the spirit of clang-tidy's `// NOLINT`.
//!
//! `// racelens: ignore` (or `/* racelens: ignore */`), optionally with a
//! rule list (`// racelens: ignore[data-race]`), suppresses
//!
//! * the race reported at an access on the comment's line, when the comment
//!   follows code on that line;
//! * the race reported at an access on the next line, when the comment is
//!   alone on its line;
//! * every race on a variable (or struct field) whose declaration is on the
//!   line so covered. Variables are matched by name: the report names the
//!   variable (`counter`, `s.count`, `arr[2]`), not the declaration.
//!
//! The CLI leaves suppressed results out of its human output and exit code
//! and marks them in SARIF; the language server shows none for them and
//! offers [`suppress_fix`] as a quick fix.

use crate::fixes::{FileEdit, Fix};
use crate::{Analysis, RaceReport};
use racelens_syntax::LineIndex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tree_sitter::{Node, Tree};

/// The rule id of data races, as written in `racelens: ignore[...]`.
pub const RULE: &str = "data-race";
/// The marker that starts a suppression comment.
const MARKER: &str = "racelens:";

/// The suppression comments of a whole program.
#[derive(Default)]
pub struct Suppressions {
    /// Per file with suppression comments: its text, line index and the
    /// zero-based lines whose accesses are suppressed.
    lines: FxHashMap<PathBuf, (Arc<str>, LineIndex, FxHashSet<u32>)>,
    /// Variables declared on a suppressed line.
    vars: FxHashSet<String>,
    /// Struct fields declared on a suppressed line.
    fields: FxHashSet<String>,
}

impl Suppressions {
    /// Reads the suppression comments of every file of the analysis. Only
    /// files whose text contains the marker are looked at closely.
    pub fn of(analysis: &Analysis) -> Suppressions {
        let db = analysis.db();
        let mut out = Suppressions::default();
        for f in analysis.universe().files(db) {
            let parsed = f.parsed(db);
            out.add_file(f.path(db).clone(), parsed.text.clone(), &parsed.tree);
        }
        out
    }

    /// Adds one file's comments.
    pub fn add_file(&mut self, path: PathBuf, text: Arc<str>, tree: &Tree) {
        if !text.contains(MARKER) {
            return;
        }
        let li = LineIndex::new(&text);
        let mut rows = FxHashSet::default();
        for (pos, _) in text.match_indices(MARKER) {
            let Some(node) = tree
                .root_node()
                .descendant_for_byte_range(pos, pos + MARKER.len())
            else {
                continue;
            };
            if node.kind() != "comment" {
                continue;
            }
            let comment = &text[node.start_byte()..node.end_byte()];
            if !applies(comment) {
                continue;
            }
            let line_start = li.line_start(node.start_position().row);
            let alone = text[line_start.min(node.start_byte())..node.start_byte()]
                .chars()
                .all(char::is_whitespace);
            let row = if alone {
                node.end_position().row + 1
            } else {
                node.start_position().row
            };
            rows.insert(row as u32);
            self.declarations_on(&text, &li, tree, row);
        }
        if !rows.is_empty() {
            self.lines.insert(path, (text, li, rows));
        }
    }

    /// Records the names declared by the declaration on `row`, if any.
    fn declarations_on(&mut self, text: &str, li: &LineIndex, tree: &Tree, row: usize) {
        let start = li.line_start(row);
        if start >= text.len() {
            return;
        }
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let Some(first) = text[start..line_end]
            .char_indices()
            .find(|(_, c)| !c.is_whitespace())
            .map(|(i, _)| start + i)
        else {
            return;
        };
        let mut node = tree.root_node().descendant_for_byte_range(first, first);
        while let Some(n) = node {
            match n.kind() {
                "declaration" | "field_declaration" | "parameter_declaration" => {
                    let field = n.kind() == "field_declaration";
                    let mut cursor = n.walk();
                    for d in n.children_by_field_name("declarator", &mut cursor) {
                        if let Some(name) = declared_name(d, text) {
                            if field {
                                self.fields.insert(name);
                            } else {
                                self.vars.insert(name);
                            }
                        }
                    }
                    return;
                }
                "function_definition" | "compound_statement" | "translation_unit" => return,
                _ => node = n.parent(),
            }
        }
    }

    /// Is this report suppressed by a comment?
    pub fn suppresses(&self, r: &RaceReport) -> bool {
        if let Some((text, li, rows)) = self.lines.get(&r.site.file) {
            let (row, _) = li.position(text, r.site.start.min(text.len()), false);
            if rows.contains(&row) {
                return true;
            }
        }
        if self.vars.is_empty() && self.fields.is_empty() {
            return false;
        }
        let (base, fields) = split_var(&r.var);
        base.is_some_and(|b| self.vars.contains(b))
            || fields.iter().any(|f| self.fields.contains(*f))
    }

    /// True when no comment suppresses anything.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.vars.is_empty() && self.fields.is_empty()
    }
}

/// Does this comment suppress data races? `racelens: ignore` suppresses
/// every rule, `racelens: ignore[a, b]` the rules listed.
pub fn applies(comment: &str) -> bool {
    let Some(i) = comment.find(MARKER) else {
        return false;
    };
    let rest = comment[i + MARKER.len()..].trim_start();
    let Some(rest) = rest.strip_prefix("ignore") else {
        return false;
    };
    let rest = rest.trim_start();
    match rest.strip_prefix('[') {
        Some(list) => list
            .split(']')
            .next()
            .unwrap_or("")
            .split(',')
            .any(|r| r.trim() == RULE),
        None => rest
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-')),
    }
}

/// The identifier a declarator declares (`*p`, `a[4]`, `x = 1`); `None`
/// for function declarators (prototypes).
fn declared_name(mut d: Node, text: &str) -> Option<String> {
    loop {
        match d.kind() {
            "identifier" | "field_identifier" => {
                return Some(text[d.start_byte()..d.end_byte()].to_string())
            }
            "function_declarator" => return None,
            "parenthesized_declarator" => d = d.named_child(0)?,
            _ => d = d.child_by_field_name("declarator")?,
        }
    }
}

/// A report's variable split into its base name (`None` for heap objects
/// and other parenthesised names) and its field names: `s.a[2].b` is
/// `(Some("s"), ["a", "b"])`.
fn split_var(var: &str) -> (Option<&str>, Vec<&str>) {
    let (base, rest) = if var.starts_with('(') {
        match var.find(')') {
            Some(i) => (None, &var[i + 1..]),
            None => (None, ""),
        }
    } else {
        let i = var.find(['.', '[']).unwrap_or(var.len());
        (Some(&var[..i]), &var[i..])
    };
    let fields = rest
        .split('.')
        .skip(1)
        .map(|f| f.split('[').next().unwrap_or(""))
        .filter(|f| !f.is_empty())
        .collect();
    (base, fields)
}

/// The quick fix "Suppress this race": a `// racelens: ignore[data-race]`
/// line above the access's line, with its indentation.
pub fn suppress_fix(text: &str, r: &RaceReport) -> Fix {
    let at = r.site.start.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    Fix {
        title: "Suppress this race".to_string(),
        edits: vec![FileEdit {
            file: r.site.file.clone(),
            start: line_start,
            end: line_start,
            new_text: format!("{indent}// racelens: ignore[{RULE}]\n"),
        }],
        is_preferred: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_that_apply() {
        assert!(applies("// racelens: ignore"));
        assert!(applies("/* racelens:ignore */"));
        assert!(applies("// racelens: ignore[data-race]"));
        assert!(applies("// racelens: ignore[other, data-race] why"));
        assert!(!applies("// racelens: ignore[other]"));
        assert!(!applies("// racelens: ignored"));
        assert!(!applies("// racelens"));
    }

    #[test]
    fn variables_split() {
        assert_eq!(split_var("counter"), (Some("counter"), vec![]));
        assert_eq!(split_var("s.a[2].b"), (Some("s"), vec!["a", "b"]));
        assert_eq!(
            split_var("(heap object allocated in main).count"),
            (None, vec!["count"])
        );
    }
}
