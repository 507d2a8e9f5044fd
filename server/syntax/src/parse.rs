//! Thin wrappers over tree-sitter-c: one place creates parsers, so the rest
//! of the code never touches tree-sitter set-up.

use std::sync::Arc;
use tree_sitter::{Language, Parser, Tree};

/// The tree-sitter-c language.
pub fn language() -> Language {
    tree_sitter_c::LANGUAGE.into()
}

/// A fresh parser for C.
pub fn new_parser() -> Parser {
    let mut p = Parser::new();
    p.set_language(&language())
        .expect("tree-sitter-c ABI matches tree-sitter");
    p
}

/// A parsed file: the text together with its tree.
#[derive(Clone)]
pub struct Parsed {
    pub text: Arc<str>,
    pub tree: Arc<Tree>,
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parsed({} bytes)", self.text.len())
    }
}

/// Two parses are equal when they are the very same parse: a tree has no
/// structural equality, and the text decides the memo anyway.
impl PartialEq for Parsed {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.tree, &other.tree) && Arc::ptr_eq(&self.text, &other.text)
    }
}
impl Eq for Parsed {}
impl std::hash::Hash for Parsed {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.tree) as usize).hash(state)
    }
}

thread_local! {
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new(new_parser());
}

/// Parses `text` from scratch. Never fails: tree-sitter recovers from errors.
pub fn parse_text(text: &str) -> Tree {
    PARSER.with(|p| {
        let mut p = p.borrow_mut();
        p.reset();
        p.parse(text, None)
            .unwrap_or_else(|| new_parser().parse("", None).expect("empty parse"))
    })
}

/// Parses `text` into a [`Parsed`].
pub fn parse(text: Arc<str>) -> Parsed {
    let tree = parse_text(&text);
    Parsed {
        text,
        tree: Arc::new(tree),
    }
}
