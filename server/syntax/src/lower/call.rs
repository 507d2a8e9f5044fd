//! Function calls: direct and indirect callees, arguments, assumptions.
//!
//! Every call gets the next call id of the function (`FnIr::ncalls`), in
//! lowering order, and is remembered for the enclosing condition's test.
//! Its short string literal arguments are kept by id
//! (`FnIr::call_strings`: FUSE's `-s`).
//! Function-like macros are expanded here instead of becoming calls, and
//! `assert`-like calls keep their test as an empty branch after the call.

use super::{Lowerer, MAX_MACRO_DEPTH};
use crate::fields::Field;
use crate::ir::*;
use crate::items::{name, text};
use tree_sitter::Node;

/// Functions that assume (or assert) their single condition argument.
fn is_assume(f: &str) -> bool {
    matches!(
        f,
        "assert" | "__VERIFIER_assume" | "__goblint_assume" | "assume_abort_if_not"
    )
}

impl<'s> Lowerer<'s> {
    pub(super) fn call(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
        let f = n.field("function");
        let args_node = n.field("arguments");
        let mut arg_nodes: Vec<Node> = Vec::new();
        if let Some(a) = args_node {
            let mut cur = a.walk();
            arg_nodes = a
                .named_children(&mut cur)
                .filter(|c| c.kind() != "comment")
                .collect();
        }
        if let Some(f) = f.filter(|f| f.kind() == "identifier") {
            let fname = text(f, self.src);
            if let Some(def) = self.macros.get(fname) {
                if def.params.is_some()
                    && !self.active.iter().any(|a| &**a == fname)
                    && self.active.len() < MAX_MACRO_DEPTH
                {
                    let def = def.clone();
                    // The preprocessor splits arguments at top-level commas
                    // of the text, whatever they parse as: `container_of(p,
                    // struct s, m)` has a type for an argument, which
                    // tree-sitter leaves as an ERROR among the children.
                    let args: Vec<&str> = match args_node {
                        Some(a) => crate::macros::split_args(text(a, self.src)),
                        None => Vec::new(),
                    };
                    let expansion = self.macros.expand_call(&def, &args);
                    let value =
                        self.lower_expansion(&def.name, &expansion, self.span(n), out, depth);
                    // A macro that expands to a call (`ZSTD_pthread_create(..)`
                    // for `pthread_create(..)`) stands for that call in a
                    // condition's test.
                    if let Expr::CallResult(id) = value {
                        self.cond_calls.push((n.id(), id));
                    }
                    return value;
                }
            }
        }
        let callee = match f {
            Some(f) if f.kind() == "identifier" => Callee::Direct(name(f, self.src)),
            Some(f) => Callee::Indirect(self.value(f, out, depth + 1)),
            None => Callee::Indirect(Expr::Other),
        };
        let mut args = Vec::with_capacity(arg_nodes.len());
        for &a in &arg_nodes {
            args.push(self.value(a, out, depth + 1));
        }
        // `assume(c)` (verifier harnesses, `assert`) tests `c`: keep the
        // test as an empty branch after the call, for what reads tests (a
        // local assumed null is not a wild pointer). Neither side is cut:
        // `assert` is empty under NDEBUG.
        let assumption = match (&callee, arg_nodes.first()) {
            (Callee::Direct(f), Some(&a)) if arg_nodes.len() == 1 && is_assume(f) => {
                match self.test_of(a, true, 0) {
                    Test::Other
                    | Test::Positive { .. }
                    | Test::FieldsZero { .. }
                    | Test::Compare { .. } => None,
                    t => Some(t),
                }
            }
            _ => None,
        };
        let id = self.ir.ncalls;
        self.ir.ncalls += 1;
        for (i, a) in arg_nodes.iter().enumerate().take(u8::MAX as usize) {
            if a.kind() != "string_literal" {
                continue;
            }
            let t = text(*a, self.src);
            if let Some(inner) = t.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                if inner.len() <= 32 && !inner.contains('\\') {
                    self.ir.call_strings.push((id, i as u8, Name::from(inner)));
                }
            }
        }
        self.cond_calls.push((n.id(), id));
        let span = self.span(n);
        let stmt_span = if self.stmt_span == Span::default() {
            span
        } else {
            self.stmt_span
        };
        self.push(
            out,
            Stmt::Call(Call {
                id,
                callee,
                args,
                span,
                stmt_span,
            }),
        );
        if let Some(test) = assumption {
            self.push(
                out,
                Stmt::If {
                    cond: Vec::new(),
                    test,
                    then: Vec::new(),
                    els: Vec::new(),
                },
            );
        }
        Expr::CallResult(id)
    }
}
