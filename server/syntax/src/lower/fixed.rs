//! Locals that hold one value for their whole life: declared once with an
//! initializer, never assigned again, their address never taken. A loop
//! range that names one (`int lo = id * CH, hi = lo + CH; for (j = lo; j <
//! hi; j++)`) reads as its initializer (`id*8<id*8+8`), so that the ranges
//! the analysis compares textually (per-thread slices, join ranges) see
//! through them.
//!
//! Owns nothing beyond the map built once per function from its syntax
//! tree. Invariant: a name is replaced only when every identifier of its
//! initializer is itself fixed (such a local, a parameter never assigned
//! whose address is never taken), a number or a macro standing for one
//! (which `numeric_tokens` then replaces), so the text means the same
//! value wherever the local is in scope; names declared twice (shadowing)
//! are never replaced.

use crate::fields::Field;
use crate::items::text;
use rustc_hash::{FxHashMap, FxHashSet};
use tree_sitter::Node;

/// Nested replacements (`hi` is `lo + CH`, `lo` is `id * CH`) go at most
/// this deep.
const MAX_NESTING: u32 = 4;

/// The fixed locals of a function definition and the text they stand for
/// (whitespace removed).
#[derive(Default)]
pub(super) struct FixedLocals {
    texts: FxHashMap<String, String>,
}

impl FixedLocals {
    /// `constant`: is this identifier a name for an integer constant (an
    /// object-like macro)?
    pub(super) fn of(def: Node, src: &str, constant: &dyn Fn(&str) -> bool) -> Self {
        let mut declared: FxHashMap<String, u32> = FxHashMap::default();
        let mut inits: FxHashMap<String, String> = FxHashMap::default();
        let mut changed: FxHashSet<String> = FxHashSet::default();
        let mut params: FxHashSet<String> = FxHashSet::default();
        let mut statics: FxHashSet<String> = FxHashSet::default();
        let mut stack = vec![def];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "parameter_declaration" => {
                    if let Some(id) = n.field("declarator").and_then(plain_identifier) {
                        params.insert(text(id, src).to_string());
                    }
                }
                "declaration" => {
                    let is_static = {
                        let mut c = n.walk();
                        let found = n.children(&mut c).any(|ch| {
                            ch.kind() == "storage_class_specifier" && text(ch, src) == "static"
                        });
                        found
                    };
                    let mut c = n.walk();
                    for d in n.children_by_field_name("declarator", &mut c) {
                        let (id, value) = match d.kind() {
                            "init_declarator" => (
                                d.field("declarator").and_then(plain_identifier),
                                d.field("value"),
                            ),
                            _ => (plain_identifier(d), None),
                        };
                        // Only scalars named plainly count; a pointer or
                        // array declarator is declared all the same.
                        let name = match id {
                            Some(id) => text(id, src).to_string(),
                            None => match d.field("declarator").or(Some(d)).and_then(innermost) {
                                Some(x) => text(x, src).to_string(),
                                None => continue,
                            },
                        };
                        *declared.entry(name.clone()).or_default() += 1;
                        if is_static {
                            statics.insert(name.clone());
                        }
                        match (id, value) {
                            (Some(_), Some(v)) => {
                                let t: String = text(v, src).split_whitespace().collect();
                                inits.insert(name, t);
                            }
                            _ => {
                                changed.insert(name);
                            }
                        }
                    }
                }
                "assignment_expression" => {
                    if let Some(l) = n.field("left").map(super::unparen) {
                        if l.kind() == "identifier" {
                            changed.insert(text(l, src).to_string());
                        }
                    }
                }
                "update_expression" => {
                    if let Some(a) = n.field("argument").map(super::unparen) {
                        if a.kind() == "identifier" {
                            changed.insert(text(a, src).to_string());
                        }
                    }
                }
                "pointer_expression" | "unary_expression"
                    if n.field("operator").map(|o| text(o, src)) == Some("&") =>
                {
                    if let Some(a) = n.field("argument").map(super::unparen) {
                        if a.kind() == "identifier" {
                            changed.insert(text(a, src).to_string());
                        }
                    }
                }
                _ => {}
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        let fixed = |x: &str| {
            !changed.contains(x)
                && !statics.contains(x)
                && (params.contains(x) && !declared.contains_key(x)
                    || declared.get(x) == Some(&1) && inits.contains_key(x) && !params.contains(x))
        };
        let arithmetic = |t: &str| {
            t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_+-*()".contains(c))
                && words(t)
                    .all(|w| w.starts_with(|c: char| c.is_ascii_digit()) || fixed(w) || constant(w))
        };
        let texts = inits
            .iter()
            .filter(|(x, t)| fixed(x) && arithmetic(t))
            .map(|(x, t)| (x.clone(), t.clone()))
            .collect();
        FixedLocals { texts }
    }

    /// `t` with each fixed local replaced by the text it stands for, in
    /// parentheses unless it is a product (or `t` is that text alone).
    pub(super) fn expand(&self, t: &str) -> String {
        self.expand_at(t, 0)
    }

    fn expand_at(&self, t: &str, depth: u32) -> String {
        if self.texts.is_empty() || depth >= MAX_NESTING {
            return t.to_string();
        }
        let mut out = String::new();
        let mut word = String::new();
        let chars: Vec<char> = t.chars().collect();
        let mut i = 0;
        while i <= chars.len() {
            let c = chars.get(i).copied();
            if let Some(c) = c.filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                word.push(c);
                i += 1;
                continue;
            }
            if !word.is_empty() {
                match self.texts.get(&word) {
                    Some(r) => {
                        let r = self.expand_at(r, depth + 1);
                        let before = out.chars().next_back();
                        let after = c;
                        let sum = r.contains(['+', '-']);
                        let tight = matches!(before, Some('*' | '/' | '-'))
                            || matches!(after, Some('*' | '/'));
                        if sum && tight {
                            out.push('(');
                            out.push_str(&r);
                            out.push(')');
                        } else {
                            out.push_str(&r);
                        }
                    }
                    None => out.push_str(&word),
                }
                word.clear();
            }
            if let Some(c) = c {
                out.push(c);
            }
            i += 1;
        }
        out
    }
}

/// The identifiers of an expression's text.
fn words(t: &str) -> impl Iterator<Item = &str> {
    t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The identifier a declarator is, when it is one (not a pointer, array or
/// function declarator).
fn plain_identifier(d: Node) -> Option<Node> {
    (d.kind() == "identifier").then_some(d)
}

/// The identifier inside any declarator (`*p`, `a[4]`, `(*f)(int)`).
fn innermost(d: Node) -> Option<Node> {
    let mut d = d;
    for _ in 0..16 {
        if d.kind() == "identifier" {
            return Some(d);
        }
        d = d.field("declarator")?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(src: &str) -> FixedLocals {
        let tree = crate::parse_text(src);
        let mut out = None;
        crate::items::for_each_function(&tree, src, &mut |def, text, _| {
            if out.is_none() {
                out = Some(FixedLocals::of(def, text, &|w| w == "CH"));
            }
        });
        out.unwrap()
    }

    #[test]
    fn single_value_locals_are_seen_through() {
        let f = fixed(
            "void f(long id) { int lo = id * 8, hi = lo + CH; int j; \
             for (j = lo; j < hi; j++) g(j); }",
        );
        assert_eq!(f.expand("lo<hi"), "id*8<id*8+CH");
        assert_eq!(f.expand("j<hi*2"), "j<(id*8+CH)*2");
    }

    #[test]
    fn locals_that_change_or_escape_are_kept() {
        let f = fixed(
            "void f(int id, int k) { int a = id * 8; a++; int b = k * 2; k = 3; \
             int c = id; int *p = &c; int d = g(); int e = 4; int e2 = e; \
             static int s = 4; int w; w = 2; { int a = 1; } }",
        );
        assert_eq!(f.expand("a<b"), "a<b");
        assert_eq!(f.expand("c<d"), "c<d");
        assert_eq!(f.expand("s<w"), "s<w");
        assert_eq!(f.expand("e<e2"), "4<4");
    }
}
