//! Lowering of one function definition to the concurrency IR.
//!
//! The function's own text is parsed on its own, so every byte range is
//! already relative to the function. Macro calls are expanded textually,
//! parsed as a statement block and lowered in place with the call site's span.
//! Recursion is bounded by [`MAX_DEPTH`]: deeper syntax is skipped and the
//! function is marked `truncated`, so no input can overflow the stack.

use crate::fields::Field;
use crate::ir::*;
use crate::items::{base_type, declarator, name, text};
use crate::macros::MacroTable;
use crate::parse::{parse_text, parse_text_cached};
use tree_sitter::Node;

/// Maximum syntax nesting that is lowered.
pub const MAX_DEPTH: u32 = 200;
/// Maximum number of IR statements per function.
pub const MAX_STMTS: usize = 400_000;
/// Maximum nesting of macro expansions.
const MAX_MACRO_DEPTH: usize = 8;

/// Lowers the function definition found in `fn_text` (the function's own
/// text, parsed standalone). Returns an empty IR when no definition is found.
pub fn lower_function(fn_text: &str, macros: &MacroTable) -> FnIr {
    let tree = parse_text(fn_text);
    let root = tree.root_node();
    let mut cur = root.walk();
    let def = root
        .named_children(&mut cur)
        .find(|n| n.kind() == "function_definition");
    match def {
        Some(def) => lower_definition(def, fn_text, macros),
        None => FnIr::default(),
    }
}

/// Lowers a `function_definition` node of a parsed file whose text is `src`.
/// Spans come out relative to the start of the definition.
pub fn lower_definition(def: Node, src: &str, macros: &MacroTable) -> FnIr {
    let mut lw = Lowerer {
        src,
        base: def.start_byte(),
        macros,
        over: None,
        ir: FnIr::default(),
        active: Vec::new(),
        nstmts: 0,
        stmt_span: Span::default(),
        cond_calls: Vec::new(),
    };
    if let Some(d) = def.field("declarator") {
        lw.params(d);
    }
    let mut body = Vec::new();
    if let Some(b) = def.field("body") {
        lw.stmt(b, &mut body, 0);
    }
    lw.ir.body = body;
    lw.ir.address_taken.sort();
    lw.ir.address_taken.dedup();
    lw.ir
}

struct Lowerer<'s> {
    src: &'s str,
    /// Byte offset of the function in `src`; spans are relative to it.
    base: usize,
    macros: &'s MacroTable,
    /// Span that replaces every span while lowering a macro expansion.
    over: Option<Span>,
    ir: FnIr,
    active: Vec<Name>,
    nstmts: usize,
    stmt_span: Span,
    /// (node id, call id) of calls lowered while evaluating a condition.
    cond_calls: Vec<(usize, u32)>,
}

/// Functions that assume (or assert) their single condition argument.
fn is_assume(f: &str) -> bool {
    matches!(
        f,
        "assert" | "__VERIFIER_assume" | "__goblint_assume" | "assume_abort_if_not"
    )
}

fn unparen(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" {
        match n.named_child(0) {
            Some(c) => n = c,
            None => break,
        }
    }
    n
}

impl<'s> Lowerer<'s> {
    fn span(&self, n: Node) -> Span {
        self.over.unwrap_or_else(|| {
            Span::new(
                n.start_byte().saturating_sub(self.base),
                n.end_byte().saturating_sub(self.base),
            )
        })
    }

    /// Records an access of `place` at `span`.
    fn access(&mut self, out: &mut Vec<Stmt>, place: &Expr, kind: AccessKind, span: Span) {
        self.push(
            out,
            Stmt::Access(Access {
                place: place.clone(),
                kind,
                span,
            }),
        );
    }

    fn push(&mut self, out: &mut Vec<Stmt>, s: Stmt) {
        if self.nstmts >= MAX_STMTS {
            self.ir.truncated = true;
            return;
        }
        self.nstmts += 1;
        out.push(s);
    }

    fn params(&mut self, d: Node) {
        // Find the function_declarator that holds the parameter list.
        let mut n = d;
        for _ in 0..32 {
            if n.kind() == "function_declarator" {
                break;
            }
            match n.field("declarator") {
                Some(c) => n = c,
                None => return,
            }
        }
        let Some(list) = n.field("parameters") else {
            return;
        };
        let mut cur = list.walk();
        for p in list.named_children(&mut cur) {
            if p.kind() != "parameter_declaration" {
                continue;
            }
            let mut ty = base_type(p, self.src);
            let Some(dn) = p.field("declarator") else {
                continue;
            };
            if let Some(nn) = declarator(dn, &mut ty) {
                if ty.array {
                    ty.array = false;
                    ty.pointer += 1;
                }
                let span = self.span(nn);
                self.ir.params.push(LocalDecl {
                    name: name(nn, self.src),
                    ty,
                    span,
                });
            }
        }
    }

    fn stmts_of(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) {
        let mut cur = n.walk();
        let children: Vec<Node> = n.named_children(&mut cur).collect();
        for c in children {
            self.stmt(c, out, depth + 1);
        }
    }

    fn block(&mut self, n: Option<Node>, depth: u32) -> Vec<Stmt> {
        let mut v = Vec::new();
        if let Some(n) = n {
            self.stmt(n, &mut v, depth + 1);
        }
        v
    }

    fn stmt(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return;
        }
        match n.kind() {
            "compound_statement" | "translation_unit" => self.stmts_of(n, out, depth),
            "declaration" => self.declaration(n, out, depth),
            "expression_statement" => {
                let saved = self.stmt_span;
                self.stmt_span = self.span(n);
                if let Some(e) = n.named_child(0) {
                    self.value(e, out, depth + 1);
                }
                self.stmt_span = saved;
            }
            "if_statement" => {
                let mut cond = Vec::new();
                let test = match n.field("condition") {
                    Some(c) => self.condition(c, &mut cond, depth),
                    None => Test::Other,
                };
                let then = self.block(n.field("consequence"), depth);
                let els = match n.field("alternative") {
                    Some(a) => {
                        let mut v = Vec::new();
                        self.stmts_of(a, &mut v, depth);
                        v
                    }
                    None => Vec::new(),
                };
                self.push(
                    out,
                    Stmt::If {
                        cond,
                        test,
                        then,
                        els,
                    },
                );
            }
            "while_statement" => {
                let mut cond = Vec::new();
                let c = n.field("condition");
                let infinite = c
                    .map(|c| matches!(text(unparen(c), self.src), "1" | "true"))
                    .unwrap_or(false);
                let test = match c {
                    Some(c) => self.condition(c, &mut cond, depth),
                    None => Test::Other,
                };
                let body = self.block(n.field("body"), depth);
                self.push(
                    out,
                    Stmt::Loop {
                        cond,
                        test,
                        body,
                        do_while: false,
                        infinite,
                        bound: while_bound(n, self.src),
                    },
                );
            }
            "do_statement" => {
                let body = self.block(n.field("body"), depth);
                let mut cond = Vec::new();
                let c = n.field("condition");
                let infinite = c
                    .map(|c| matches!(text(unparen(c), self.src), "1" | "true"))
                    .unwrap_or(false);
                let test = match c {
                    Some(c) => self.condition(c, &mut cond, depth),
                    None => Test::Other,
                };
                let zero = c
                    .map(|c| text(unparen(c), self.src) == "0")
                    .unwrap_or(false);
                if zero {
                    // `do { ... } while (0)`: a plain block.
                    out.extend(body);
                    out.extend(cond);
                } else {
                    self.push(
                        out,
                        Stmt::Loop {
                            cond,
                            test,
                            body,
                            do_while: true,
                            infinite,
                            bound: None,
                        },
                    );
                }
            }
            "for_statement" => {
                if let Some(init) = n.field("initializer") {
                    if init.kind() == "declaration" {
                        self.declaration(init, out, depth);
                    } else {
                        self.value(init, out, depth + 1);
                    }
                }
                let mut cond = Vec::new();
                let c = n.field("condition");
                let test = match c {
                    Some(c) => self.condition(c, &mut cond, depth),
                    None => Test::Other,
                };
                let mut body = self.block(n.field("body"), depth);
                if let Some(u) = n.field("update") {
                    self.value(u, &mut body, depth + 1);
                }
                let bound = loop_bound(n, self.src);
                self.push(
                    out,
                    Stmt::Loop {
                        cond,
                        test,
                        body,
                        do_while: false,
                        infinite: c.is_none(),
                        bound,
                    },
                );
            }
            "switch_statement" => {
                let mut cond = Vec::new();
                if let Some(c) = n.field("condition") {
                    self.value(c, &mut cond, depth + 1);
                }
                let mut arms: Vec<Vec<Stmt>> = Vec::new();
                let mut zero = None;
                let mut pre = Vec::new();
                if let Some(body) = n.field("body") {
                    let mut cur = body.walk();
                    let children: Vec<Node> = body.named_children(&mut cur).collect();
                    for c in children {
                        if c.kind() == "case_statement" {
                            let mut arm = Vec::new();
                            let mut c2 = c.walk();
                            let value = c.field("value");
                            if value.is_some_and(|v| {
                                v.kind() == "number_literal" && text(v, self.src).trim() == "0"
                            }) {
                                zero = Some(arms.len());
                            }
                            let value = value.map(|v| v.id());
                            let parts: Vec<Node> = c
                                .named_children(&mut c2)
                                .filter(|x| Some(x.id()) != value)
                                .collect();
                            for p in parts {
                                self.stmt(p, &mut arm, depth + 1);
                            }
                            arms.push(arm);
                        } else if let Some(last) = arms.last_mut() {
                            let mut v = Vec::new();
                            self.stmt(c, &mut v, depth + 1);
                            last.extend(v);
                        } else {
                            self.stmt(c, &mut pre, depth + 1);
                        }
                    }
                }
                if arms.is_empty() {
                    arms.push(pre);
                }
                self.push(out, Stmt::Switch { cond, arms, zero });
            }
            "return_statement" => {
                let value = n.named_child(0).map(|e| self.value(e, out, depth + 1));
                let span = self.span(n);
                self.push(out, Stmt::Return { span, value });
            }
            "break_statement" => self.push(out, Stmt::Break),
            "continue_statement" => self.push(out, Stmt::Continue),
            "goto_statement" => self.push(out, Stmt::Goto),
            "labeled_statement" | "attributed_statement" => {
                let mut cur = n.walk();
                let children: Vec<Node> = n
                    .named_children(&mut cur)
                    .filter(|c| {
                        c.kind() != "statement_identifier" && c.kind() != "attribute_declaration"
                    })
                    .collect();
                for c in children {
                    self.stmt(c, out, depth + 1);
                }
            }
            "preproc_if" | "preproc_ifdef" | "preproc_elif" | "preproc_else"
            | "preproc_elifdef" => {
                let alt = n.field("alternative");
                let cond_id = n
                    .field("condition")
                    .or_else(|| n.field("name"))
                    .map(|c| c.id());
                let mut then = Vec::new();
                let mut cur = n.walk();
                let children: Vec<Node> = n
                    .named_children(&mut cur)
                    .filter(|c| Some(c.id()) != cond_id && Some(c.id()) != alt.map(|a| a.id()))
                    .collect();
                for c in children {
                    self.stmt(c, &mut then, depth + 1);
                }
                let els = match alt {
                    Some(a) => {
                        let mut v = Vec::new();
                        self.stmt(a, &mut v, depth + 1);
                        v
                    }
                    None => Vec::new(),
                };
                if n.kind() == "preproc_else" {
                    out.extend(then);
                } else {
                    self.push(
                        out,
                        Stmt::If {
                            cond: Vec::new(),
                            test: Test::Other,
                            then,
                            els,
                        },
                    );
                }
            }
            "ERROR" => {
                let mut cur = n.walk();
                let children: Vec<Node> = n.named_children(&mut cur).collect();
                for c in children {
                    if is_statement_kind(c.kind()) {
                        self.stmt(c, out, depth + 1);
                    } else if c.kind().ends_with("expression") || c.kind() == "identifier" {
                        self.value(c, out, depth + 1);
                    }
                }
            }
            "function_definition"
            | "comment"
            | "type_definition"
            | "preproc_def"
            | "preproc_function_def"
            | "preproc_call"
            | "preproc_include" => {}
            k if k.ends_with("expression") => {
                self.value(n, out, depth + 1);
            }
            _ => {}
        }
    }

    fn declaration(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) {
        let base = base_type(n, self.src);
        let mut cur = n.walk();
        let decls: Vec<Node> = n.children_by_field_name("declarator", &mut cur).collect();
        for d in decls {
            let mut ty = base.clone();
            let Some(nn) = declarator(d, &mut ty) else {
                continue;
            };
            if ty.is_function {
                continue;
            }
            let name = name(nn, self.src);
            let span = self.span(nn);
            self.array_sizes(d, out, depth);
            self.push(
                out,
                Stmt::Decl(LocalDecl {
                    name: name.clone(),
                    ty: ty.clone(),
                    span,
                }),
            );
            if d.kind() == "init_declarator" {
                if let Some(v) = d.field("value") {
                    let saved = self.stmt_span;
                    self.stmt_span = self.span(n);
                    let rhs = if v.kind() == "initializer_list" {
                        self.initializer(v, out, depth + 1);
                        Expr::Other
                    } else {
                        self.value(v, out, depth + 1)
                    };
                    self.stmt_span = saved;
                    if !ty.is_static {
                        self.access(out, &Expr::Var(name.clone()), AccessKind::Write, span);
                        self.push(
                            out,
                            Stmt::Assign {
                                lhs: Expr::Var(name),
                                rhs,
                            },
                        );
                    }
                }
            }
        }
    }

    /// Evaluates the size expressions of (variable-length) array declarators.
    fn array_sizes(&mut self, d: Node, out: &mut Vec<Stmt>, depth: u32) {
        let mut n = d;
        for _ in 0..16 {
            if n.kind() == "array_declarator" {
                if let Some(size) = n.field("size") {
                    if !matches!(size.kind(), "number_literal") {
                        self.value(size, out, depth + 1);
                    }
                }
            }
            match n.field("declarator") {
                Some(c) => n = c,
                None => break,
            }
        }
    }

    fn initializer(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return;
        }
        let mut cur = n.walk();
        let children: Vec<Node> = n.named_children(&mut cur).collect();
        for c in children {
            match c.kind() {
                "initializer_list" => self.initializer(c, out, depth + 1),
                "initializer_pair" => {
                    if let Some(v) = c.field("value") {
                        if v.kind() == "initializer_list" {
                            self.initializer(v, out, depth + 1);
                        } else {
                            self.value(v, out, depth + 1);
                        }
                    }
                }
                _ => {
                    self.value(c, out, depth + 1);
                }
            }
        }
    }

    /// Lowers a branch condition and derives its [`Test`].
    fn condition(&mut self, c: Node, out: &mut Vec<Stmt>, depth: u32) -> Test {
        self.cond_calls.clear();
        let inner = unparen(c);
        self.value(inner, out, depth + 1);
        let test = self.test_of(inner, true, false, 0);
        self.cond_calls.clear();
        test
    }

    /// The [`Test`] of a condition; `null_is_zero` also takes `NULL` for zero
    /// (in assumptions, where it is not a macro this file defines).
    fn test_of(&self, n: Node, positive: bool, null_is_zero: bool, depth: u32) -> Test {
        if depth > 8 {
            return Test::Other;
        }
        let n = unparen(n);
        match n.kind() {
            "call_expression" => match self.cond_calls.iter().find(|(id, _)| *id == n.id()) {
                Some(&(_, id)) => Test::CallZero {
                    id,
                    zero_on_true: !positive,
                },
                None => Test::Other,
            },
            "identifier" => Test::VarZero {
                var: name(n, self.src),
                zero_on_true: !positive,
            },
            "unary_expression" if n.field("operator").map(|o| text(o, self.src)) == Some("!") => {
                match n.field("argument") {
                    Some(a) => self.test_of(a, !positive, null_is_zero, depth + 1),
                    None => Test::Other,
                }
            }
            "binary_expression" => {
                let op = n.field("operator").map(|o| text(o, self.src)).unwrap_or("");
                let (Some(l), Some(r)) = (n.field("left"), n.field("right")) else {
                    return Test::Other;
                };
                let zero = |x: Node| {
                    let t = text(unparen(x), self.src);
                    t == "0" || (null_is_zero && t == "NULL")
                };
                let (subject, konst) = if zero(r) {
                    (l, true)
                } else if zero(l) {
                    (r, true)
                } else {
                    (l, false)
                };
                if !konst {
                    return Test::Other;
                }
                match op {
                    "==" => self.test_of(subject, !positive, null_is_zero, depth + 1),
                    "!=" => self.test_of(subject, positive, null_is_zero, depth + 1),
                    _ => Test::Other,
                }
            }
            _ => Test::Other,
        }
    }

    /// Evaluates an expression for its value, emitting the accesses it performs.
    fn value(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return Expr::Other;
        }
        match n.kind() {
            "identifier" => {
                let id = text(n, self.src);
                if let Some(e) = self.object_macro(n, id, out, depth) {
                    return e;
                }
                let place = Expr::Var(Name::from(id));
                let span = self.span(n);
                self.access(out, &place, AccessKind::Read, span);
                place
            }
            "field_expression" | "subscript_expression" => {
                let place = self.place(n, out, depth + 1);
                let span = self.span(n);
                self.access(out, &place, AccessKind::Read, span);
                place
            }
            "pointer_expression" => {
                let op = n.field("operator").map(|o| text(o, self.src)).unwrap_or("");
                let Some(arg) = n.field("argument") else {
                    return Expr::Other;
                };
                if op == "&" {
                    let p = self.place(arg, out, depth + 1);
                    if let Expr::Var(v) = &p {
                        self.ir.address_taken.push(v.clone());
                    }
                    Expr::AddrOf(Box::new(p))
                } else {
                    let place = self.place(n, out, depth + 1);
                    let span = self.span(n);
                    self.access(out, &place, AccessKind::Read, span);
                    place
                }
            }
            "parenthesized_expression" => match n.named_child(0) {
                Some(c) => self.value(c, out, depth + 1),
                None => Expr::Other,
            },
            "number_literal" => parse_int(text(n, self.src))
                .map(Expr::Int)
                .unwrap_or(Expr::Other),
            "string_literal" | "concatenated_string" | "char_literal" => Expr::Str,
            "null" | "true" | "false" => Expr::Int(0),
            "cast_expression" => {
                let ty = n.field("type").map(|t| type_name(text(t, self.src)));
                match n.field("value") {
                    Some(v) => {
                        let value = self.value(v, out, depth + 1);
                        Expr::Cast {
                            ty,
                            value: Box::new(value),
                        }
                    }
                    None => Expr::Other,
                }
            }
            "assignment_expression" => {
                let op = n
                    .field("operator")
                    .map(|o| text(o, self.src))
                    .unwrap_or("=");
                let rhs = match n.field("right") {
                    Some(r) => self.value(r, out, depth + 1),
                    None => Expr::Other,
                };
                let Some(l) = n.field("left") else {
                    return Expr::Other;
                };
                let place = self.place(l, out, depth + 1);
                let span = self.span(l);
                if op != "=" {
                    self.access(out, &place, AccessKind::Read, span);
                }
                self.access(out, &place, AccessKind::Write, span);
                let rhs = if op == "=" {
                    rhs
                } else {
                    Expr::Offset(Box::new(place.clone()))
                };
                self.push(
                    out,
                    Stmt::Assign {
                        lhs: place.clone(),
                        rhs: rhs.clone(),
                    },
                );
                rhs
            }
            "update_expression" => {
                let Some(a) = n.field("argument") else {
                    return Expr::Other;
                };
                let place = self.place(a, out, depth + 1);
                let span = self.span(a);
                self.access(out, &place, AccessKind::Read, span);
                self.access(out, &place, AccessKind::Write, span);
                self.push(
                    out,
                    Stmt::Assign {
                        lhs: place.clone(),
                        rhs: Expr::Offset(Box::new(place.clone())),
                    },
                );
                Expr::Offset(Box::new(place))
            }
            "call_expression" => self.call(n, out, depth),
            "binary_expression" => {
                let op = n.field("operator").map(|o| text(o, self.src)).unwrap_or("");
                let l = n.field("left").map(|l| self.value(l, out, depth + 1));
                let r = n.field("right").map(|r| self.value(r, out, depth + 1));
                match (op, l, r) {
                    (
                        "+" | "-",
                        Some(
                            l @ (Expr::Var(_)
                            | Expr::Field { .. }
                            | Expr::AddrOf(_)
                            | Expr::Cast { .. }
                            | Expr::CallResult(_)
                            | Expr::Offset(_)),
                        ),
                        _,
                    ) => Expr::Offset(Box::new(l)),
                    ("+", _, Some(r @ (Expr::Var(_) | Expr::AddrOf(_)))) => {
                        Expr::Offset(Box::new(r))
                    }
                    _ => Expr::Other,
                }
            }
            "unary_expression" => {
                if let Some(a) = n.field("argument") {
                    self.value(a, out, depth + 1);
                }
                Expr::Other
            }
            "conditional_expression" => {
                if let Some(c) = n.field("condition") {
                    self.value(c, out, depth + 1);
                }
                let mut alts = Vec::new();
                for f in ["consequence", "alternative"] {
                    if let Some(c) = n.field(f) {
                        alts.push(self.value(c, out, depth + 1));
                    }
                }
                Expr::Choice(alts)
            }
            "comma_expression" => {
                if let Some(l) = n.field("left") {
                    self.value(l, out, depth + 1);
                }
                match n.field("right") {
                    Some(r) => self.value(r, out, depth + 1),
                    None => Expr::Other,
                }
            }
            "initializer_list" => {
                self.initializer(n, out, depth + 1);
                Expr::Other
            }
            "compound_literal_expression" => {
                if let Some(v) = n.field("value") {
                    self.initializer(v, out, depth + 1);
                }
                Expr::Other
            }
            "sizeof_expression" => {
                // `sizeof(int[n])` evaluates the length of a variable-length array.
                if let Some(t) = n.field("type") {
                    let mut stack = vec![t];
                    let mut cur = t.walk();
                    while let Some(x) = stack.pop() {
                        if x.kind() == "abstract_array_declarator" {
                            if let Some(size) = x.field("size") {
                                self.value(size, out, depth + 1);
                            }
                        }
                        stack.extend(x.named_children(&mut cur));
                    }
                }
                Expr::Other
            }
            "alignof_expression" | "offsetof_expression" | "gnu_asm_expression" => Expr::Other,
            "compound_statement" => {
                // GNU statement expression `({ ...; e; })`: its value is `e`.
                let mut cur = n.walk();
                let children: Vec<Node> = n.named_children(&mut cur).collect();
                let mut value = Expr::Other;
                for (i, c) in children.iter().enumerate() {
                    if i + 1 == children.len() && c.kind() == "expression_statement" {
                        if let Some(e) = c.named_child(0) {
                            value = self.value(e, out, depth + 1);
                        }
                    } else {
                        self.stmt(*c, out, depth + 1);
                    }
                }
                value
            }
            _ => {
                let mut cur = n.walk();
                let children: Vec<Node> = n.named_children(&mut cur).collect();
                for c in children {
                    if c.kind().ends_with("expression") || c.kind() == "identifier" {
                        self.value(c, out, depth + 1);
                    }
                }
                Expr::Other
            }
        }
    }

    /// Evaluates an expression as an lvalue: returns the object it designates
    /// and emits the reads needed to find it (pointers, indices).
    fn place(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return Expr::Other;
        }
        match n.kind() {
            "identifier" => {
                let id = text(n, self.src);
                if let Some(def) = self.macros.get(id) {
                    if def.params.is_none() && !self.active.iter().any(|a| &**a == id) {
                        if let Some(e) = self.macro_place(id, &def.body.clone(), out, depth) {
                            return e;
                        }
                    }
                }
                Expr::Var(Name::from(id))
            }
            "parenthesized_expression" => match n.named_child(0) {
                Some(c) => self.place(c, out, depth + 1),
                None => Expr::Other,
            },
            "field_expression" => {
                let arrow = n
                    .field("operator")
                    .map(|o| text(o, self.src) == "->")
                    .unwrap_or(false);
                let field = n
                    .field("field")
                    .map(|f| name(f, self.src))
                    .unwrap_or_else(|| Name::from("?"));
                let Some(a) = n.field("argument") else {
                    return Expr::Other;
                };
                let base = if arrow {
                    self.value(a, out, depth + 1)
                } else {
                    self.place(a, out, depth + 1)
                };
                Expr::Field {
                    base: Box::new(base),
                    field,
                    arrow,
                }
            }
            "subscript_expression" => {
                let Some(a) = n.field("argument") else {
                    return Expr::Other;
                };
                let base = self.place(a, out, depth + 1);
                let index = n.field("index").map(|i| self.value(i, out, depth + 1));
                let (index, var) = match index {
                    Some(Expr::Int(k)) => (Some(k), None),
                    Some(Expr::Var(v)) => (None, Some(v)),
                    _ => (None, None),
                };
                Expr::Index {
                    base: Box::new(base),
                    index,
                    var,
                }
            }
            "pointer_expression" => {
                let op = n.field("operator").map(|o| text(o, self.src)).unwrap_or("");
                let Some(a) = n.field("argument") else {
                    return Expr::Other;
                };
                if op == "*" {
                    let v = self.value(a, out, depth + 1);
                    Expr::Deref(Box::new(v))
                } else {
                    self.value(n, out, depth + 1)
                }
            }
            "cast_expression" => match n.field("value") {
                Some(v) => self.place(v, out, depth + 1),
                None => Expr::Other,
            },
            _ => self.value(n, out, depth + 1),
        }
    }

    fn call(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
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
                    let args: Vec<&str> = arg_nodes.iter().map(|a| text(*a, self.src)).collect();
                    let expansion = self.macros.expand_call(&def, &args);
                    return self.lower_expansion(&def.name, &expansion, self.span(n), out, depth);
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
                match self.test_of(a, true, true, 0) {
                    Test::Other => None,
                    t => Some(t),
                }
            }
            _ => None,
        };
        let id = self.ir.ncalls;
        self.ir.ncalls += 1;
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

    /// An object-like macro used as a value: constants become integers, code is expanded.
    fn object_macro(&mut self, n: Node, id: &str, out: &mut Vec<Stmt>, depth: u32) -> Option<Expr> {
        let def = self.macros.get(id)?;
        if def.params.is_some()
            || self.active.iter().any(|a| &**a == id)
            || self.active.len() >= MAX_MACRO_DEPTH
        {
            return None;
        }
        if let Some(k) = parse_int(
            def.body
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')'),
        ) {
            return Some(Expr::Int(k));
        }
        if def.body.is_empty() {
            return Some(Expr::Other);
        }
        let body = def.body.clone();
        let name = def.name.clone();
        Some(self.lower_expansion(&name, &body, self.span(n), out, depth))
    }

    fn macro_place(
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
    fn lower_expansion(
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

fn is_statement_kind(k: &str) -> bool {
    k.ends_with("_statement") || k == "declaration" || k == "compound_statement"
}

/// Normalizes a type name from a cast or declaration: `struct foo *` -> `foo`.
pub fn type_name(t: &str) -> Name {
    let t = t.replace('*', " ");
    let words: Vec<&str> = t
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "struct" | "union" | "const" | "volatile" | "enum" | "unsigned" | "signed"
            )
        })
        .collect();
    Name::from(words.last().copied().unwrap_or(""))
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// The range of a counting `for` loop in normal form, `START<END` (`0<n`,
/// `0<10`; `i <= 9` is `0<10`), when it starts at a value, tests its counter
/// against a bound with `<`, `<=` or `!=`, and steps it by one. Joins in one
/// loop cover the threads created in another only when the ranges match.
fn loop_bound(n: Node, src: &str) -> Option<Name> {
    let squash = |n: Node| -> String { text(n, src).split_whitespace().collect() };
    let init = n.field("initializer")?;
    let (var, start) = match init.kind() {
        "assignment_expression" => {
            let l = init.field("left")?;
            if l.kind() != "identifier" || text(init.field("operator")?, src) != "=" {
                return None;
            }
            (text(l, src), squash(init.field("right")?))
        }
        "declaration" => {
            let d = init.field("declarator")?;
            if d.kind() != "init_declarator" {
                return None;
            }
            let v = d.field("declarator")?;
            if v.kind() != "identifier" {
                return None;
            }
            (text(v, src), squash(d.field("value")?))
        }
        _ => return None,
    };
    let cond = unparen(n.field("condition")?);
    if cond.kind() != "binary_expression" {
        return None;
    }
    let left = unparen(cond.field("left")?);
    if left.kind() != "identifier" || text(left, src) != var {
        return None;
    }
    let right = squash(cond.field("right")?);
    let end = match text(cond.field("operator")?, src) {
        "<" | "!=" => right,
        "<=" => match right.parse::<i64>() {
            Ok(k) => (k + 1).to_string(),
            Err(_) => format!("{right}+1"),
        },
        _ => return None,
    };
    let step: String = squash(n.field("update")?);
    let ones = [
        format!("{var}++"),
        format!("++{var}"),
        format!("{var}+=1"),
        format!("{var}={var}+1"),
    ];
    if !ones.contains(&step) {
        return None;
    }
    if leaves_early(n.field("body")?, var, None, src) {
        return None;
    }
    Some(Name::from(format!("{start}<{end}")))
}

/// The range of a counting `while` loop, as [`loop_bound`] gives it for a
/// `for` loop: `i = START; while (i < END) { ...; i++; }`, the counter set
/// by the statement just before the loop and stepped by one as the body's
/// last statement (the shape CIL and hand-written C give counting loops).
fn while_bound(n: Node, src: &str) -> Option<Name> {
    let squash = |n: Node| -> String { text(n, src).split_whitespace().collect() };
    let prev = n.prev_named_sibling()?;
    if prev.kind() != "expression_statement" {
        return None;
    }
    let init = unparen(prev.named_child(0)?);
    if init.kind() != "assignment_expression" || text(init.field("operator")?, src) != "=" {
        return None;
    }
    let l = init.field("left")?;
    if l.kind() != "identifier" {
        return None;
    }
    let var = text(l, src);
    let start = squash(init.field("right")?);
    let cond = unparen(n.field("condition")?);
    if cond.kind() != "binary_expression" {
        return None;
    }
    let left = unparen(cond.field("left")?);
    if left.kind() != "identifier" || text(left, src) != var {
        return None;
    }
    let right = squash(cond.field("right")?);
    let end = match text(cond.field("operator")?, src) {
        "<" | "!=" => right,
        "<=" => match right.parse::<i64>() {
            Ok(k) => (k + 1).to_string(),
            Err(_) => format!("{right}+1"),
        },
        _ => return None,
    };
    let body = n.field("body")?;
    if body.kind() != "compound_statement" {
        return None;
    }
    let last = body.named_child((body.named_child_count() as u32).checked_sub(1)?)?;
    if last.kind() != "expression_statement" {
        return None;
    }
    let step: String = squash(last.named_child(0)?);
    let ones = [
        format!("{var}++"),
        format!("++{var}"),
        format!("{var}+=1"),
        format!("{var}={var}+1"),
    ];
    if !ones.contains(&step) {
        return None;
    }
    if leaves_early(body, var, Some(last), src) {
        return None;
    }
    Some(Name::from(format!("{start}<{end}")))
}

/// Can the loop body `n` leave its loop before the range is done, or change
/// the counter `var` other than by its step (`skip`)? A `break` of this loop
/// (not of an inner loop or `switch`), a `goto`, or an assignment to `var`.
/// Such a loop has no range: a join loop that may stop early joins only some
/// threads.
fn leaves_early(n: Node, var: &str, skip: Option<Node>, src: &str) -> bool {
    if Some(n) == skip {
        return false;
    }
    match n.kind() {
        "break_statement" | "goto_statement" => return true,
        "for_statement" | "while_statement" | "do_statement" | "switch_statement" => {
            // Their own `break`s stay inside; a goto or counter change does not.
            let mut cur = n.walk();
            return n
                .named_children(&mut cur)
                .any(|c| inner_leaves(c, var, src));
        }
        "assignment_expression" | "update_expression" => {
            let target = n.field("left").or_else(|| n.field("argument"));
            if target.is_some_and(|t| text(unparen(t), src) == var) {
                return true;
            }
        }
        _ => {}
    }
    let mut cur = n.walk();
    let kids: Vec<Node> = n.named_children(&mut cur).collect();
    kids.into_iter().any(|c| leaves_early(c, var, skip, src))
}

/// [`leaves_early`] inside a nested loop or switch: only a `goto` or a
/// change of the counter leaves the outer loop's range.
fn inner_leaves(n: Node, var: &str, src: &str) -> bool {
    match n.kind() {
        "goto_statement" => return true,
        "assignment_expression" | "update_expression" => {
            let target = n.field("left").or_else(|| n.field("argument"));
            if target.is_some_and(|t| text(unparen(t), src) == var) {
                return true;
            }
        }
        _ => {}
    }
    let mut cur = n.walk();
    let kids: Vec<Node> = n.named_children(&mut cur).collect();
    kids.into_iter().any(|c| inner_leaves(c, var, src))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::extract_items;

    fn lower(src: &str) -> FnIr {
        let tree = parse_text(src);
        let items = extract_items(&tree, src);
        let table = MacroTable::new(&items.macros);
        let f = items.functions.last().unwrap();
        lower_function(&src[f.start as usize..f.end as usize], &table)
    }

    #[test]
    fn lowers_accesses_calls_and_macros() {
        let ir = lower("#define LOCK() pthread_mutex_lock(&m)\nvoid f(int *p) { LOCK(); g = g + 1; p->x[2] = 3; }");
        let calls: Vec<_> = ir
            .body
            .iter()
            .filter_map(|s| {
                if let Stmt::Call(c) = s {
                    Some(c.callee.clone())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(calls, vec![Callee::Direct("pthread_mutex_lock".into())]);
        let writes = ir
            .body
            .iter()
            .filter(|s| matches!(s, Stmt::Access(a) if a.kind == AccessKind::Write))
            .count();
        assert_eq!(writes, 2);
        assert_eq!(ir.params.len(), 1);
        assert_eq!(ir.params[0].ty.pointer, 1);
    }

    #[test]
    fn trylock_condition_is_recognized() {
        let ir = lower("void f(void) { if (pthread_mutex_trylock(&m) == 0) { x = 1; } }");
        assert!(matches!(
            &ir.body[0],
            Stmt::If {
                test: Test::CallZero {
                    zero_on_true: true,
                    ..
                },
                ..
            }
        ));
    }

    #[test]
    fn assumptions_keep_their_test() {
        let ir = lower(
            "void f(void) { void *p; __VERIFIER_assume(p == NULL); assume_abort_if_not(p != 0); }",
        );
        let tests: Vec<&Test> = ir
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::If { test, .. } => Some(test),
                _ => None,
            })
            .collect();
        assert!(matches!(
            tests[..],
            [
                Test::VarZero {
                    zero_on_true: true,
                    ..
                },
                Test::VarZero {
                    zero_on_true: false,
                    ..
                }
            ]
        ));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut src = String::from("void f(void) { x = ");
        for _ in 0..20000 {
            src.push('(');
        }
        src.push('1');
        for _ in 0..20000 {
            src.push(')');
        }
        src.push_str("; }");
        let ir = lower(&src);
        assert!(ir.truncated);
    }
}

#[cfg(test)]
mod loop_bound_tests {
    use super::*;

    fn bounds(src: &str) -> Vec<Option<Name>> {
        let ir = lower_function(src, &MacroTable::default());
        let mut out = Vec::new();
        fn walk(s: &[Stmt], out: &mut Vec<Option<Name>>) {
            for st in s {
                if let Stmt::Loop { body, bound, .. } = st {
                    out.push(bound.clone());
                    walk(body, out);
                }
            }
        }
        walk(&ir.body, &mut out);
        out
    }

    #[test]
    fn counting_loops_have_ranges() {
        let b = bounds(
            "void f(int n) { int i; for (i=0; i<10; i++) g(); for (int j = 0; j <= 9; ++j) g(); \
             for (i = 0; i < n->cap; i += 1) g(); for (i = 0; i < n; i--) g(); while (i < n) g(); }",
        );
        let s = |x: &str| Some(Name::from(x));
        assert_eq!(b, vec![s("0<10"), s("0<10"), s("0<n->cap"), None, None]);
    }
}
