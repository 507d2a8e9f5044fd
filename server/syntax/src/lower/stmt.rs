//! Statements and declarations: the control-flow skeleton of the IR.
//!
//! Turns C statements (blocks, `if`, loops, `switch`, `goto` targets, local
//! declarations with their initializers) into [`Stmt`] trees and recognizes
//! the range of counting `for` loops. Owns no state beyond the shared
//! [`Lowerer`]; every recursion checks [`MAX_DEPTH`] and marks the function
//! `truncated` instead of descending further.

use super::{uncast, unparen, Lowerer, MAX_DEPTH};
use crate::fields::Field;
use crate::ir::*;
use crate::items::{base_type, declarator, name, text};
use tree_sitter::Node;

impl<'s> Lowerer<'s> {
    /// A loop range with object-like macros that stand for integer constants
    /// replaced by their values (`0<N` with `#define N 8` is `0<8`), so that
    /// join ranges add up numerically (`t[0]`, then `1 <= i < N`).
    /// Constant arithmetic is folded (`0<N-2` is `0<6`). A local that holds
    /// one value all its life reads as its initializer first
    /// (`lower/fixed.rs`: `lo<hi` is `id*8<id*8+8`).
    fn numeric_bound(&self, b: Option<Name>) -> Option<Name> {
        let b = b?;
        let (lo, hi) = b.split_once('<')?;
        let num = |t: &str| {
            let t = self.numeric_tokens(&self.fixed.expand(t));
            fold_const(&t).map_or(t, |k| k.to_string())
        };
        let hi = match hi.split_once("+=") {
            Some((end, step)) => format!("{}+={}", num(end), num(step)),
            None => num(hi),
        };
        Some(Name::from(format!("{}<{hi}", num(lo))))
    }

    /// `t` with each identifier that is an object-like macro standing for an
    /// integer replaced by its value (`i*CHUNK` is `i*10`).
    fn numeric_tokens(&self, t: &str) -> String {
        let value =
            |t: &str| -> Option<String> { macro_value(self.macros.get(t)?).map(|k| k.to_string()) };
        let mut out = String::new();
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            if !word.is_empty() {
                match word.starts_with(|c: char| c.is_ascii_digit()) {
                    true => out.push_str(word),
                    false => out.push_str(&value(word).unwrap_or_else(|| word.clone())),
                }
                word.clear();
            }
        };
        for ch in t.chars() {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                word.push(ch);
            } else {
                flush(&mut word, &mut out);
                out.push(ch);
            }
        }
        flush(&mut word, &mut out);
        out
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

    pub(super) fn stmt(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) {
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
                if let Some(e) = crate::items::first_named(n) {
                    self.value(e, out, depth + 1);
                }
                self.stmt_span = saved;
            }
            "if_statement" => {
                let mut cond = Vec::new();
                self.if_condition = true;
                let test = match n.field("condition") {
                    Some(c) => self.condition(c, &mut cond, depth),
                    None => Test::Other,
                };
                self.if_condition = false;
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
                let counted = while_bound(n, self.src);
                self.push(
                    out,
                    Stmt::Loop {
                        cond,
                        test,
                        body,
                        do_while: false,
                        infinite,
                        bound: self.numeric_bound(plain(counted.clone()).map(|b| b.0)),
                        var: plain(counted.clone()).map(|b| b.1),
                        member: member(counted),
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
                    // `do { ... } while (0)`: a plain block. Its own `break`
                    // and `continue` leave it: they jump to its end.
                    let mut body = body;
                    let end: Name = format!("do#{}", n.start_byte()).into();
                    let leaves = leave_to(&mut body, &end, false);
                    out.extend(body);
                    out.extend(cond);
                    if leaves {
                        self.push(out, Stmt::Label(end));
                    }
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
                            var: None,
                            member: None,
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
                let counted = loop_bound(n, self.src);
                let member = member(counted.clone());
                let counted = plain(counted);
                let var = counted.as_ref().map(|b| b.1.clone());
                let bound = self.numeric_bound(counted.map(|b| b.0));
                self.push(
                    out,
                    Stmt::Loop {
                        cond,
                        test,
                        body,
                        do_while: false,
                        infinite: c.is_none(),
                        bound,
                        var,
                        member,
                    },
                );
            }
            "switch_statement" => {
                let mut cond = Vec::new();
                let mut var = None;
                if let Some(c) = n.field("condition") {
                    self.value(c, &mut cond, depth + 1);
                    let v = super::uncast(c);
                    if v.kind() == "identifier" {
                        var = Some(crate::items::name(v, self.src));
                    }
                }
                let mut arms: Vec<Vec<Stmt>> = Vec::new();
                let mut zero = None;
                let mut default = None;
                let mut pre = Vec::new();
                if let Some(body) = n.field("body") {
                    let mut cur = body.walk();
                    let children: Vec<Node> = body.named_children(&mut cur).collect();
                    for c in children {
                        if c.kind() == "case_statement" {
                            let mut arm = Vec::new();
                            let mut c2 = c.walk();
                            let value = c.field("value");
                            match value.map(|v| super::cond::int_const(v, self.src)) {
                                None => default = Some(arms.len()),
                                Some(Some(0)) => zero = Some(arms.len()),
                                Some(Some(_)) => {}
                                // A label whose value the lowering does not
                                // know (an enumerator, a macro) may be zero.
                                Some(None) => var = None,
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
                self.push(
                    out,
                    Stmt::Switch {
                        cond,
                        arms,
                        zero,
                        var,
                        default,
                    },
                );
            }
            "return_statement" => {
                let value = crate::items::first_named(n).map(|e| self.value(e, out, depth + 1));
                let span = self.span(n);
                self.push(out, Stmt::Return { span, value });
            }
            "break_statement" => self.push(out, Stmt::Break),
            "continue_statement" => self.push(out, Stmt::Continue),
            "goto_statement" => {
                let label = n
                    .named_child(0)
                    .map(|l| name(l, self.src))
                    .unwrap_or_default();
                self.push(out, Stmt::Goto(label));
            }
            "labeled_statement" | "attributed_statement" => {
                if let Some(l) = n.child_by_field_name("label") {
                    self.push(out, Stmt::Label(name(l, self.src)));
                }
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
                // Two arms of one conditional are never compiled together.
                if let (Some(a), None) = (alt, self.over) {
                    if n.kind() != "preproc_else" {
                        let rel = |b: usize| b.saturating_sub(self.base) as u32;
                        let cond = rel(n.start_byte());
                        for (arm, (s, e)) in [
                            (n.start_byte(), a.start_byte()),
                            (a.start_byte(), a.end_byte()),
                        ]
                        .into_iter()
                        .enumerate()
                        {
                            self.ir.build_arms.push(crate::ir::BuildArm {
                                range: Span {
                                    start: rel(s),
                                    end: rel(e),
                                },
                                cond,
                                arm: arm as u8,
                            });
                        }
                    }
                }
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
            self.note_scalar(name.clone(), &ty);
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
                    // An array's list is kept as a value too, for what its
                    // elements point to (`void *(*fns[])(void *) = {fa, fb}`).
                    let rhs = if v.kind() == "initializer_list" && ty.pointer > 0 && !ty.array {
                        self.initializer(v, out, depth + 1);
                        Expr::Other
                    } else if v.kind() == "initializer_list" {
                        self.init_list(v, out, depth + 1)
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

    /// A struct initializer list as a value ([`Expr::Init`]), its elements'
    /// reads emitted as [`initializer`](Self::initializer) emits them.
    fn init_list(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return Expr::Other;
        }
        let mut cur = n.walk();
        let children: Vec<Node> = n
            .named_children(&mut cur)
            .filter(|c| c.kind() != "comment")
            .collect();
        let mut elems = Vec::new();
        // After a designator, a positional element initializes the member
        // after the designated one, not the one at its position: left out.
        let mut designated = false;
        for c in children {
            let (field, value) = match c.kind() {
                "initializer_pair" => {
                    designated = true;
                    let field = crate::items::designated_member(c, self.src);
                    let value = match c.field("value") {
                        Some(v) if v.kind() == "initializer_list" => {
                            self.init_list(v, out, depth + 1)
                        }
                        Some(v) => self.value(v, out, depth + 1),
                        None => Expr::Other,
                    };
                    match field {
                        Some(f) => (Some(f), value),
                        None => continue,
                    }
                }
                "initializer_list" => (None, self.init_list(c, out, depth + 1)),
                _ => (None, self.value(c, out, depth + 1)),
            };
            if field.is_some() || !designated {
                elems.push((field, value));
            }
        }
        Expr::Init(elems)
    }

    pub(super) fn initializer(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) {
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
}

/// Turns the `break`s and `continue`s of a `do { ... } while (0)` body that
/// leave that block (not those of a loop inside it, nor a `break` of a
/// `switch` inside it) into `goto end`. Says whether it found one.
fn leave_to(stmts: &mut [Stmt], end: &Name, in_switch: bool) -> bool {
    let mut found = false;
    for s in stmts {
        match s {
            Stmt::Break if !in_switch => {
                *s = Stmt::Goto(end.clone());
                found = true;
            }
            Stmt::Continue => {
                *s = Stmt::Goto(end.clone());
                found = true;
            }
            Stmt::If { then, els, .. } => {
                found |= leave_to(then, end, in_switch);
                found |= leave_to(els, end, in_switch);
            }
            Stmt::Switch { arms, .. } => {
                for a in arms {
                    found |= leave_to(a, end, true);
                }
            }
            _ => {}
        }
    }
    found
}

fn is_statement_kind(k: &str) -> bool {
    k.ends_with("_statement") || k == "declaration" || k == "compound_statement"
}

/// The end of a counting loop's range from its condition on the counter
/// `var` (`var < END`, `var != END`, `var <= END` as `END+1`), squashed.
fn range_end(cond: Node, var: &str, src: &str) -> Option<String> {
    let cond = unparen(cond);
    if cond.kind() != "binary_expression" {
        return None;
    }
    // CIL compares a narrow counter through casts: `(int) i < (int) n`.
    let left = uncast(cond.field("left")?);
    if counter_text(left, src).as_deref() != Some(var) {
        return None;
    }
    let right = squash(cond.field("right")?, src);
    match text(cond.field("operator")?, src) {
        "<" | "!=" => Some(right),
        "<=" => Some(match right.parse::<i64>() {
            Ok(k) => (k + 1).to_string(),
            Err(_) => format!("{right}+1"),
        }),
        _ => None,
    }
}

/// Does the expression `e` step `var` by one (`var++`, `++var`, `var += 1`,
/// `var = var + 1`, and CIL's `var = (T) ((int) var + 1)`)?
fn steps_by_one(e: Node, var: &str, src: &str) -> bool {
    // `(o.n)++`, as CIL writes a member's step.
    let step = squash(e, src).replace(&format!("({var})"), var);
    if [
        format!("{var}++"),
        format!("++{var}"),
        format!("{var}+=1"),
        format!("{var}={var}+1"),
    ]
    .contains(&step)
    {
        return true;
    }
    let e = unparen(e);
    if e.kind() != "assignment_expression"
        || e.field("operator").map(|o| text(o, src)) != Some("=")
        || e.field("left")
            .and_then(|l| counter_text(l, src))
            .as_deref()
            != Some(var)
    {
        return false;
    }
    let Some(sum) = e.field("right").map(uncast) else {
        return false;
    };
    if sum.kind() != "binary_expression" || sum.field("operator").map(|o| text(o, src)) != Some("+")
    {
        return false;
    }
    let side = |f: &str| sum.field(f).map(|x| text(uncast(x), src));
    matches!(
        (side("left"), side("right")),
        (Some(a), Some("1")) | (Some("1"), Some(a)) if a == var
    )
}

/// A counting loop's (range, counter) when the counter is a variable.
fn plain(counted: Option<(Name, Name)>) -> Option<(Name, Name)> {
    counted.filter(|(_, v)| !v.contains('.'))
}

/// A counting loop's counter when it is a struct's member
/// (`Stmt::Loop::member`).
fn member(counted: Option<(Name, Name)>) -> Option<Name> {
    counted.map(|(_, v)| v).filter(|v| v.contains('.'))
}

/// A loop counter as a range names it: a variable (`i`), or a member of a
/// variable's struct reached by `.` only (`o.cur_host`, smtprc's creation
/// loop); under parentheses and casts.
fn counter_text(n: Node, src: &str) -> Option<String> {
    let n = uncast(unparen(n));
    match n.kind() {
        "identifier" => Some(text(n, src).to_string()),
        "field_expression" if n.field("operator").map(|o| text(o, src)) == Some(".") => {
            let base = counter_text(n.field("argument")?, src)?;
            Some(format!("{base}.{}", text(n.field("field")?, src)))
        }
        _ => None,
    }
}

/// The node's text without whitespace.
fn squash(n: Node, src: &str) -> String {
    text(n, src).split_whitespace().collect()
}

/// The range of a counting `for` loop in normal form, `START<END` (`0<n`,
/// `0<10`; `i <= 9` is `0<10`), when it starts at a value, tests its counter
/// against a bound with `<`, `<=` or `!=`, and steps it by one; a loop that
/// steps it by `K` instead has the range `START<END+=K`. Joins in one
/// loop cover the threads created in another only when the ranges match.
fn loop_bound(n: Node, src: &str) -> Option<(Name, Name)> {
    let (var, start) = counter_init(n.field("initializer")?, src)?;
    let var = &*var;
    let end = range_end(n.field("condition")?, var, src)?;
    let update = n.field("update")?;
    let step = match steps_by_one(update, var, src) {
        true => String::new(),
        false => format!("+={}", stride(update, var, src)?),
    };
    let exits = Exits {
        var,
        cont: None,
        src,
    };
    if exits.leaves_early(n.field("body")?, None) {
        return None;
    }
    Some((Name::from(format!("{start}<{end}{step}")), Name::from(var)))
}

/// The counter and start of a counting loop's initialization: `i = START`
/// or a declaration whose first declarator is `i = START`.
fn counter_init(init: Node, src: &str) -> Option<(String, String)> {
    match init.kind() {
        "assignment_expression" => {
            let l = init.field("left")?;
            if text(init.field("operator")?, src) != "=" {
                return None;
            }
            Some((counter_text(l, src)?, squash(init.field("right")?, src)))
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
            Some((text(v, src).to_string(), squash(d.field("value")?, src)))
        }
        _ => None,
    }
}

/// The step of an update `var += K` or `var = var + K` by a constant (or
/// a name, a macro constant once lowered) other than one.
fn stride(e: Node, var: &str, src: &str) -> Option<String> {
    let step = squash(e, src);
    let k = step
        .strip_prefix(&format!("{var}+="))
        .or_else(|| step.strip_prefix(&format!("{var}={var}+")))?;
    let simple = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (simple && k != "1" && k != "0").then(|| k.to_string())
}

/// The range of a counting `while` loop, as [`loop_bound`] gives it for a
/// `for` loop: `i = START; while (i < END) { ...; i++; }`, the counter set
/// (or declared, `T i = START;`) by the statement just before the loop and
/// stepped by one as the body's last statement (the shape CIL and
/// hand-written C give counting loops), with no `continue` skipping the
/// step.
fn while_bound(n: Node, src: &str) -> Option<(Name, Name)> {
    let prev = n.prev_named_sibling()?;
    let init = match prev.kind() {
        "expression_statement" => unparen(crate::items::first_named(prev)?),
        // `T i = START;`, one declarator.
        "declaration" => {
            let mut c = prev.walk();
            if prev.children_by_field_name("declarator", &mut c).count() != 1 {
                return None;
            }
            prev
        }
        _ => return None,
    };
    let (var, start) = counter_init(init, src)?;
    let var = &*var;
    let end = range_end(n.field("condition")?, var, src)?;
    let body = n.field("body")?;
    if body.kind() != "compound_statement" {
        return None;
    }
    let last = body.named_child((body.named_child_count() as u32).checked_sub(1)?)?;
    // `L: i++;` as the last statement: a `goto L` in the body goes on to
    // the step, as `continue` does in a `for` loop (CIL writes every
    // `continue` so: `goto __Cont; .. __Cont: /* CIL Label */ i ++;`).
    let (last, cont) = match last.kind() {
        "expression_statement" => (last, None),
        "labeled_statement" => {
            let mut cur = last.walk();
            let step = last
                .named_children(&mut cur)
                .filter(|c| c.kind() != "comment")
                .last()?;
            let label = text(last.field("label")?, src);
            if step.kind() != "expression_statement" || jumps_from_outside(n, body, label, src) {
                return None;
            }
            (step, Some(label))
        }
        _ => return None,
    };
    if !steps_by_one(crate::items::first_named(last)?, var, src) {
        return None;
    }
    let exits = Exits { var, cont, src };
    if exits.leaves_early(body, Some(last)) || continues(body) {
        return None;
    }
    Some((Name::from(format!("{start}<{end}")), Name::from(var)))
}

/// Does a `goto label` outside the loop `body` (in the function holding the
/// loop statement `n`) jump to its label?
fn jumps_from_outside(n: Node, body: Node, label: &str, src: &str) -> bool {
    let mut top = n;
    while let Some(p) = top.parent() {
        top = p;
        if p.kind() == "function_definition" {
            break;
        }
    }
    let mut stack = vec![top];
    while let Some(x) = stack.pop() {
        if x == body {
            continue;
        }
        if x.kind() == "goto_statement" && x.field("label").is_some_and(|l| text(l, src) == label) {
            return true;
        }
        let mut cur = x.walk();
        stack.extend(x.named_children(&mut cur));
    }
    false
}

/// Does the loop body `n` hold a `continue` of its own loop (not of an
/// inner one)? In a `while` loop it skips the step at the end of the body,
/// so the counter may keep its value for another iteration.
fn continues(n: Node) -> bool {
    match n.kind() {
        "continue_statement" => true,
        "for_statement" | "while_statement" | "do_statement" => false,
        _ => {
            let mut cur = n.walk();
            let kids: Vec<Node> = n.named_children(&mut cur).collect();
            kids.into_iter().any(continues)
        }
    }
}

/// What leaves a counting loop of counter `var` early: a `goto` (but one
/// to `cont`, the label of the loop's step), a `break` of its own, a
/// change of the counter.
struct Exits<'a> {
    var: &'a str,
    cont: Option<&'a str>,
    src: &'a str,
}

impl Exits<'_> {
    /// A `goto` that leaves the loop: any but one to the step's label.
    fn goto_leaves(&self, n: Node) -> bool {
        let label = n.field("label").map(|l| text(l, self.src));
        self.cont.is_none() || label != self.cont
    }

    /// Can the loop body `n` leave its loop before the range is done, or
    /// change the counter other than by its step (`skip`)? A `break` of
    /// this loop (not of an inner loop or `switch`), a `goto` out, or an
    /// assignment to the counter. Such a loop has no range: a join loop
    /// that may stop early joins only some threads.
    fn leaves_early(&self, n: Node, skip: Option<Node>) -> bool {
        if Some(n) == skip {
            return false;
        }
        match n.kind() {
            "break_statement" => return true,
            "goto_statement" => return self.goto_leaves(n),
            "for_statement" | "while_statement" | "do_statement" | "switch_statement" => {
                // Their own `break`s stay inside; a goto or counter change does not.
                let mut cur = n.walk();
                return n.named_children(&mut cur).any(|c| self.inner_leaves(c));
            }
            "assignment_expression" | "update_expression" if assigns(n, self.var, self.src) => {
                return true
            }
            _ => {}
        }
        let mut cur = n.walk();
        let kids: Vec<Node> = n.named_children(&mut cur).collect();
        kids.into_iter().any(|c| self.leaves_early(c, skip))
    }

    /// [`leaves_early`](Self::leaves_early) inside a nested loop or switch:
    /// only a `goto` or a change of the counter leaves the outer loop's
    /// range.
    fn inner_leaves(&self, n: Node) -> bool {
        match n.kind() {
            "goto_statement" => return self.goto_leaves(n),
            "assignment_expression" | "update_expression" if assigns(n, self.var, self.src) => {
                return true
            }
            _ => {}
        }
        let mut cur = n.walk();
        let kids: Vec<Node> = n.named_children(&mut cur).collect();
        kids.into_iter().any(|c| self.inner_leaves(c))
    }
}

/// Is `n` (an assignment or update expression) a change of `var`?
fn assigns(n: Node, var: &str, src: &str) -> bool {
    let target = n.field("left").or_else(|| n.field("argument"));
    target.is_some_and(|t| counter_text(t, src).as_deref() == Some(var))
}

/// The integer an object-like macro stands for in a loop range (`#define
/// N 8`, `(8)`): decimal digits only, unlike [`super::macro_int`], which
/// indexes and expansions read (`8U`, `0x10` too), so a range keeps such a
/// macro's name.
pub(super) fn macro_value(d: &crate::items::MacroDef) -> Option<i64> {
    if d.params.is_some() {
        return None;
    }
    d.body
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim()
        .parse::<i64>()
        .ok()
}

/// The value of `t` when it is integer constants joined by `+`, `-` and
/// `*`, with parentheses (`6-2`, `(3+1)*2`); without spaces.
fn fold_const(t: &str) -> Option<i64> {
    fn sum(t: &[u8], at: &mut usize) -> Option<i64> {
        let mut v = product(t, at)?;
        while let Some(&op) = t.get(*at) {
            match op {
                b'+' => {
                    *at += 1;
                    v = v.checked_add(product(t, at)?)?;
                }
                b'-' => {
                    *at += 1;
                    v = v.checked_sub(product(t, at)?)?;
                }
                _ => break,
            }
        }
        Some(v)
    }
    fn product(t: &[u8], at: &mut usize) -> Option<i64> {
        let mut v = atom(t, at)?;
        while t.get(*at) == Some(&b'*') {
            *at += 1;
            v = v.checked_mul(atom(t, at)?)?;
        }
        Some(v)
    }
    fn atom(t: &[u8], at: &mut usize) -> Option<i64> {
        match t.get(*at)? {
            b'(' => {
                *at += 1;
                let v = sum(t, at)?;
                (t.get(*at) == Some(&b')')).then_some(())?;
                *at += 1;
                Some(v)
            }
            b'-' => {
                *at += 1;
                atom(t, at)?.checked_neg()
            }
            c if c.is_ascii_digit() => {
                let start = *at;
                while t.get(*at).is_some_and(|c| c.is_ascii_digit()) {
                    *at += 1;
                }
                std::str::from_utf8(&t[start..*at]).ok()?.parse().ok()
            }
            _ => None,
        }
    }
    let t = t.as_bytes();
    let mut at = 0;
    let v = sum(t, &mut at)?;
    (at == t.len()).then_some(v)
}

#[cfg(test)]
mod fold_tests {
    use super::fold_const;

    #[test]
    fn folds_constant_arithmetic_only() {
        assert_eq!(fold_const("6-2"), Some(4));
        assert_eq!(fold_const("(3+1)*2"), Some(8));
        assert_eq!(fold_const("2+3*4"), Some(14));
        assert_eq!(fold_const("10"), Some(10));
        assert_eq!(fold_const("n-2"), None);
        assert_eq!(fold_const("6/2"), None);
        assert_eq!(fold_const("(6"), None);
    }
}
