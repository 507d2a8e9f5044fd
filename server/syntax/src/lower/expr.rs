//! Expressions: values and places (lvalues).
//!
//! `value` evaluates an expression and emits the reads and writes it
//! performs; `place` returns the object an lvalue designates and emits only
//! the reads needed to find it (pointers, indices). Every access is recorded
//! in evaluation order with the span of its own syntax (or of the macro call
//! being expanded).

use super::{cast_pointer, parse_int, type_name, Lowerer, MAX_DEPTH};
use crate::fields::Field;
use crate::ir::*;
use crate::items::{name, text};
use tree_sitter::Node;

impl<'s> Lowerer<'s> {
    /// Does the function use `true` or `false` as a variable (see
    /// `lower::bool_names`)?
    fn bool_name(&self, id: &str) -> bool {
        match id {
            "true" => self.bool_names[0],
            "false" => self.bool_names[1],
            _ => false,
        }
    }

    /// The index `n` as an [`Affine`] (`x * K + y`, `K * x + C`, `x * K`),
    /// with plain variables `x` and `y` and integer constants `K > 0` and
    /// `C` (literals or object macros of one).
    fn affine(&self, n: Node) -> Option<Box<Affine>> {
        let n = super::unparen(n);
        if let Some((scaled, member)) = self.term(n).filter(|(_, m)| m.is_some()) {
            return Some(Box::new(Affine {
                scaled,
                member,
                k: 1,
                k_text: Name::from("1"),
                offset: AffineOffset::None,
            }));
        }
        if n.kind() != "binary_expression" {
            return None;
        }
        let op = text(n.field("operator")?, self.src);
        if op == "*" {
            let ((scaled, member), k, k_text) = self.scaled(n)?;
            return Some(Box::new(Affine {
                scaled,
                member,
                k,
                k_text,
                offset: AffineOffset::None,
            }));
        }
        if op != "+" {
            return None;
        }
        let (l, r) = (
            super::unparen(n.field("left")?),
            super::unparen(n.field("right")?),
        );
        let (((scaled, member), k, k_text), other) = match self.scaled(l) {
            Some(s) => (s, r),
            None => (self.scaled(r)?, l),
        };
        let offset = match self.int_const(other) {
            Some(c) => AffineOffset::Int(c),
            None => AffineOffset::Var(Name::from(self.plain_var(other)?)),
        };
        Some(Box::new(Affine {
            scaled,
            member,
            k,
            k_text,
            offset,
        }))
    }

    /// `x * K` or `K * x` for a [`term`](Self::term) `x`: the term, `K`
    /// and `K`'s text.
    #[allow(clippy::type_complexity)]
    fn scaled(&self, n: Node) -> Option<((Name, Option<Name>), i64, Name)> {
        if n.kind() != "binary_expression" || text(n.field("operator")?, self.src) != "*" {
            return None;
        }
        let (l, r) = (
            super::unparen(n.field("left")?),
            super::unparen(n.field("right")?),
        );
        let (x, kn) = match self.term(l) {
            Some(x) => (x, r),
            None => (self.term(r)?, l),
        };
        let k = self.int_const(kn).filter(|k| *k > 0)?;
        let k_text: String = text(kn, self.src).split_whitespace().collect();
        Some((x, k, Name::from(k_text)))
    }

    /// A plain variable `x`, or a member `x->f` read through one: `x` and
    /// the member.
    fn term(&self, n: Node) -> Option<(Name, Option<Name>)> {
        let n = super::unparen(n);
        if let Some(x) = self.plain_var(n) {
            return Some((Name::from(x), None));
        }
        if n.kind() != "field_expression"
            || n.field("operator").map(|o| text(o, self.src)) != Some("->")
        {
            return None;
        }
        let x = self.plain_var(super::unparen(n.field("argument")?))?;
        let f = n.field("field")?;
        (f.kind() == "field_identifier")
            .then(|| (Name::from(x), Some(Name::from(text(f, self.src)))))
    }

    /// An identifier that is no object macro.
    fn plain_var(&self, n: Node) -> Option<&'s str> {
        let id = text(n, self.src);
        (n.kind() == "identifier" && self.macros.get(id).is_none()).then_some(id)
    }

    /// An integer literal, an object macro whose body is one, or a sum,
    /// difference or product of such constants (`N - 1`).
    fn int_const(&self, n: Node) -> Option<i64> {
        let n = super::unparen(n);
        match n.kind() {
            "binary_expression" => {
                let l = self.int_const(n.field("left")?)?;
                let r = self.int_const(n.field("right")?)?;
                match text(n.field("operator")?, self.src) {
                    "+" => l.checked_add(r),
                    "-" => l.checked_sub(r),
                    "*" => l.checked_mul(r),
                    _ => None,
                }
            }
            "number_literal" => parse_int(text(n, self.src)),
            "identifier" => super::macro_int(self.macros.get(text(n, self.src))?),
            _ => None,
        }
    }

    /// Evaluates an expression for its value, emitting the accesses it performs.
    pub(super) fn value(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return Expr::Other;
        }
        // `true` and `false` are names in C before C23: a program may
        // declare locals so called (mt-daapd's `char *true`), which
        // tree-sitter cannot parse as such. Their value is not known.
        if matches!(n.kind(), "true" | "false") && self.bool_name(text(n, self.src)) {
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
                    self.take_address(&p, n);
                    Expr::AddrOf(Box::new(p))
                } else {
                    let place = self.place(n, out, depth + 1);
                    let span = self.span(n);
                    self.access(out, &place, AccessKind::Read, span);
                    place
                }
            }
            "parenthesized_expression" => match crate::items::first_named(n) {
                Some(c) => self.value(c, out, depth + 1),
                None => Expr::Other,
            },
            "number_literal" => parse_int(text(n, self.src))
                .map(Expr::Int)
                .unwrap_or(Expr::Other),
            "string_literal" | "concatenated_string" | "char_literal" => Expr::Str,
            "null" | "false" => Expr::Int(0),
            // C23's `true`, and `stdbool.h`'s in sources not preprocessed.
            "true" => Expr::Int(1),
            "cast_expression" => {
                let spelled = n.field("type").map(|t| text(t, self.src));
                let ty = spelled.map(type_name);
                let pointer = spelled.map_or(0, cast_pointer);
                match n.field("value") {
                    Some(v) => {
                        let value = self.value(v, out, depth + 1);
                        // `(T *) ((char *) p - offsetof(T, m))`: a pointer
                        // stepped back, as `T *` (container_of).
                        if let (Some(t), true, Expr::Offset(_)) = (&ty, pointer > 0, &value) {
                            if steps_back(v, self.src) {
                                self.ir.recovered_types.push(t.clone());
                            }
                        }
                        Expr::Cast {
                            ty,
                            pointer,
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
                if op == "-=" && rhs == Expr::Int(1) {
                    self.ir.decrements.push(span);
                }
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
                if n.field("operator").map(|o| text(o, self.src)) == Some("--") {
                    self.ir.decrements.push(span);
                }
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
                if let Some(e) = self.typedef_cast(n, op, out, depth) {
                    return e;
                }
                let l = n.field("left").map(|l| self.value(l, out, depth + 1));
                let r = n.field("right").map(|r| self.value(r, out, depth + 1));
                match (op, l, r) {
                    // `p + i`: the address of element `i` of what `p`
                    // points into (`&p[i]`), so that `*(p + i)`, `(p + i)->f`
                    // and `pthread_create(t + i, ..)` name the element that
                    // `p[i]`, `p[i].f` and `pthread_join(t[i], ..)` name.
                    ("+", Some(l), r)
                        if self.indexable(&l)
                            && !matches!(&r, Some(Expr::Var(v)) if self.pointers.contains(v)) =>
                    {
                        let (index, var, affine) = match r {
                            Some(Expr::Int(k)) => (Some(k), None, None),
                            Some(Expr::Var(v)) => (None, Some(v), None),
                            _ => (None, None, n.field("right").and_then(|r| self.affine(r))),
                        };
                        Expr::AddrOf(Box::new(Expr::Index {
                            base: Box::new(l),
                            index,
                            var,
                            affine,
                        }))
                    }
                    (
                        "+" | "-",
                        Some(
                            l @ (Expr::Var(_)
                            | Expr::Field { .. }
                            | Expr::AddrOf(_)
                            | Expr::Cast { .. }
                            | Expr::CallResult(_)
                            | Expr::Offset(_)
                            // `*pp + n`, `rows[i] + k`: a pointer loaded
                            // from memory, stepped.
                            | Expr::Deref(_)
                            | Expr::Index { .. }),
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
                let Some(a) = n.field("argument") else {
                    return Expr::Other;
                };
                let v = self.value(a, out, depth + 1);
                // `-1`: a negative constant (an error result).
                match (n.field("operator").map(|o| text(o, self.src)), v) {
                    (Some("-"), Expr::Int(k)) => {
                        k.checked_neg().map(Expr::Int).unwrap_or(Expr::Other)
                    }
                    _ => Expr::Other,
                }
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
                        if let Some(e) = crate::items::first_named(*c) {
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

    /// `(T)*p` and `(T)&x` where `T` is a typedef name: a function is parsed
    /// on its own, where `T` is not known for a type, and tree-sitter reads
    /// `(T) * p` (a product) and `(T) & x` (a bitwise and). CIL writes such
    /// casts everywhere (`value = (rmtU32 )*address;`), and the read of
    /// `*p` was lost. Taken for a cast when the parenthesized name is no
    /// parameter or local of the function (a global in parentheses,
    /// `(g) * n`, would be misread; nobody writes that).
    fn typedef_cast(&mut self, n: Node, op: &str, out: &mut Vec<Stmt>, depth: u32) -> Option<Expr> {
        if op != "*" && op != "&" {
            return None;
        }
        let l = n.field("left")?;
        let r = n.field("right")?;
        if l.kind() != "parenthesized_expression" || l.named_child_count() != 1 {
            return None;
        }
        // A number is never dereferenced, nor its address taken: `(n) * 8`,
        // `(flags) & 4` are arithmetic whatever `n` is; nor is a
        // parenthesized operand, as a macro's parameter is (`((mask) &
        // (x))`).
        let object = matches!(
            r.kind(),
            "identifier" | "field_expression" | "subscript_expression" | "pointer_expression"
        ) || (op == "*" && matches!(r.kind(), "call_expression" | "cast_expression"));
        if !object {
            return None;
        }
        let id = l.named_child(0).filter(|c| c.kind() == "identifier")?;
        let ty = name(id, self.src);
        if self.scalars.contains(&ty)
            || self.pointers.contains(&ty)
            || self.macros.get(&ty).is_some()
        {
            return None;
        }
        let value = match op {
            "*" => {
                let place = match self.value(r, out, depth + 1) {
                    Expr::AddrOf(e) => *e,
                    v => Expr::Deref(Box::new(v)),
                };
                let span = self.span(n);
                self.access(out, &place, AccessKind::Read, span);
                place
            }
            _ => {
                let p = self.place(r, out, depth + 1);
                self.take_address(&p, n);
                Expr::AddrOf(Box::new(p))
            }
        };
        Some(Expr::Cast {
            ty: Some(type_name(&ty)),
            pointer: 0,
            value: Box::new(value),
        })
    }

    /// Evaluates an expression as an lvalue: returns the object it designates
    /// and emits the reads needed to find it (pointers, indices).
    pub(super) fn place(&mut self, n: Node, out: &mut Vec<Stmt>, depth: u32) -> Expr {
        if depth > MAX_DEPTH {
            self.ir.truncated = true;
            return Expr::Other;
        }
        if matches!(n.kind(), "true" | "false") && self.bool_name(text(n, self.src)) {
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
            "parenthesized_expression" => match crate::items::first_named(n) {
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
                let (base, arrow) = match arrow {
                    true => match self.value(a, out, depth + 1) {
                        // `(&e)->f` (and `(p + i)->f`) is `e.f`.
                        Expr::AddrOf(e) => (*e, false),
                        v => (v, true),
                    },
                    false => (self.place(a, out, depth + 1), false),
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
                let index_node = n.field("index");
                let index = index_node.map(|i| self.value(i, out, depth + 1));
                let (index, var, affine) = match index {
                    Some(Expr::Int(k)) => (Some(k), None, None),
                    Some(Expr::Var(v)) => (None, Some(v), None),
                    _ => match index_node.and_then(|i| self.int_const(i)) {
                        // `a[N - 1]`: a constant after all.
                        Some(k) => (Some(k), None, None),
                        None => (None, None, index_node.and_then(|i| self.affine(i))),
                    },
                };
                Expr::Index {
                    base: Box::new(base),
                    index,
                    var,
                    affine,
                }
            }
            "pointer_expression" => {
                let op = n.field("operator").map(|o| text(o, self.src)).unwrap_or("");
                let Some(a) = n.field("argument") else {
                    return Expr::Other;
                };
                if op == "*" {
                    match self.value(a, out, depth + 1) {
                        // `*&e` (and `*(p + i)`, lowered `*&p[i]`) is `e`.
                        Expr::AddrOf(e) => *e,
                        v => Expr::Deref(Box::new(v)),
                    }
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

    /// Notes the declaration of a parameter or local `x` (see
    /// `Lowerer::scalars`). A later declaration of the name decides.
    pub(super) fn note_scalar(&mut self, x: Name, ty: &crate::ir::TypeInfo) {
        self.scalars.retain(|y| *y != x);
        self.pointers.retain(|y| *y != x);
        match ty.pointer == 0 && !ty.array {
            true => self.scalars.push(x),
            false => self.pointers.push(x),
        }
    }

    /// Can `e + i` step through elements of what `e` designates: a
    /// variable not declared a scalar (pointers, arrays, globals), or a
    /// member. A cast (`(char *) p + n`) counts bytes, not elements.
    fn indexable(&self, e: &Expr) -> bool {
        match e {
            Expr::Var(x) => !self.scalars.contains(x),
            Expr::Field { .. } => true,
            _ => false,
        }
    }
}

/// Is `n` (inside parentheses) a subtraction `a - b`?
fn steps_back(mut n: Node, src: &str) -> bool {
    while n.kind() == "parenthesized_expression" {
        match n.named_child(0) {
            Some(c) => n = c,
            None => return false,
        }
    }
    n.kind() == "binary_expression" && n.field("operator").map(|o| text(o, src)) == Some("-")
}
