//! Macro expansion inside a function body.
//!
//! An expansion is parsed on its own and lowered in place: while it is
//! lowered the lowerer's source is the expansion text and every span is the
//! call site's (`Lowerer::over`). Both are restored before returning, and
//! the active-macro stack (bounded by [`MAX_MACRO_DEPTH`]) keeps a macro
//! from expanding inside itself.

use super::{parse_int, Lowerer, MAX_MACRO_DEPTH};
use crate::fields::Field;
use crate::ir::*;
use crate::parse::parse_text_cached;
use tree_sitter::Node;

impl<'s> Lowerer<'s> {
    /// An object-like macro used as a value: constants become integers, code is expanded.
    pub(super) fn object_macro(
        &mut self,
        n: Node,
        id: &str,
        out: &mut Vec<Stmt>,
        depth: u32,
    ) -> Option<Expr> {
        let def = self.macros.get(id)?;
        if def.params.is_some()
            || self.active.iter().any(|a| &**a == id)
            || self.active.len() >= MAX_MACRO_DEPTH
        {
            return None;
        }
        if let Some(k) = super::macro_int(def) {
            return Some(Expr::Int(k));
        }
        if def.body.is_empty() {
            return Some(Expr::Other);
        }
        let body = def.body.clone();
        let name = def.name.clone();
        Some(self.lower_expansion(&name, &body, self.span(n), out, depth))
    }

    pub(super) fn macro_place(
        &mut self,
        id: &str,
        body: &str,
        out: &mut Vec<Stmt>,
        depth: u32,
    ) -> Option<Expr> {
        if parse_int(body.trim()).is_some()
            || body.trim().is_empty()
            || self.active.len() >= MAX_MACRO_DEPTH
        {
            return None;
        }
        let wrapped = format!("void __racelens_macro(void) {{\n{body};\n}}\n");
        let tree = parse_text_cached(&wrapped);
        let e = first_expression(tree.root_node())?;
        let saved = (self.src, self.over);
        let span = self.stmt_span;
        // SAFETY of lifetimes: the expansion text lives until the end of this call.
        let text_ref: &str = &wrapped;
        let r = unsafe_extend(text_ref, |src| {
            self.active.push(Name::from(id));
            let prev = std::mem::replace(&mut self.src, src);
            self.over = Some(saved.1.unwrap_or(span));
            let p = self.place(e, out, depth + 1);
            self.src = prev;
            self.active.pop();
            p
        });
        self.src = saved.0;
        self.over = saved.1;
        Some(r)
    }

    /// Parses a macro expansion as a block and lowers it with `span` for all spans.
    pub(super) fn lower_expansion(
        &mut self,
        name: &Name,
        expansion: &str,
        span: Span,
        out: &mut Vec<Stmt>,
        depth: u32,
    ) -> Expr {
        let wrapped = format!("void __racelens_macro(void) {{\n{expansion};\n}}\n");
        let tree = parse_text_cached(&wrapped);
        let root = tree.root_node();
        let Some(body) = root.named_child(0).and_then(|f| f.field("body")) else {
            return Expr::Other;
        };
        let saved = (self.src, self.over);
        let mut cur = body.walk();
        let stmts: Vec<Node> = body
            .named_children(&mut cur)
            .filter(|c| c.kind() != "expression_statement" || c.named_child_count() > 0)
            .collect();
        let text_ref: &str = &wrapped;
        let r = unsafe_extend(text_ref, |src| {
            self.active.push(name.clone());
            self.src = src;
            self.over = Some(saved.1.unwrap_or(span));
            let r = if stmts.len() == 1 && stmts[0].kind() == "expression_statement" {
                let e = stmts[0].named_child(0).expect("checked");
                self.value(e, out, depth + 1)
            } else {
                for s in &stmts {
                    self.stmt(*s, out, depth + 1);
                }
                Expr::Other
            };
            self.active.pop();
            r
        });
        self.src = saved.0;
        self.over = saved.1;
        r
    }
}

/// Runs `f` with `text` viewed at the lowerer's source lifetime. The lowerer
/// restores its own source before `f`'s borrow ends, so no reference to
/// `text` outlives this call.
fn unsafe_extend<'a, 'b, R>(text: &'a str, f: impl FnOnce(&'b str) -> R) -> R {
    // SAFETY: callers reset every stored copy of the reference before returning.
    let extended: &'b str = unsafe { std::mem::transmute::<&'a str, &'b str>(text) };
    f(extended)
}

fn first_expression(root: Node) -> Option<Node> {
    let body = root.named_child(0)?.field("body")?;
    let st = body.named_child(0)?;
    if st.kind() == "expression_statement" {
        st.named_child(0)
    } else {
        None
    }
}
