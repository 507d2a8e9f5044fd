//! Lowering of one function definition to the concurrency IR.
//!
//! The function's own text is parsed on its own, so every byte range is
//! already relative to the function. Macro calls are expanded textually,
//! parsed as a statement block and lowered in place with the call site's span.
//! Recursion is bounded by [`MAX_DEPTH`]: deeper syntax is skipped and the
//! function is marked `truncated`, so no input can overflow the stack.
//!
//! This room owns the `Lowerer` state (source text, call-site span while a
//! macro is expanded, active macros, statement count, current statement
//! span) and its bookkeeping; `stmt`, `cond`, `expr`, `call` and `expand`
//! each add the methods for one kind of syntax.

use crate::fields::Field;
use crate::ir::*;
use crate::items::{base_type, declarator, function_declarator, name};
use crate::macros::MacroTable;
use crate::parse::parse_text;
use tree_sitter::Node;

mod call;
mod cond;
mod expand;
mod expr;
mod fixed;
mod stmt;

/// Maximum syntax nesting that is lowered.
pub const MAX_DEPTH: u32 = 200;
/// Maximum number of IR statements per function.
pub const MAX_STMTS: usize = 400_000;
/// Maximum nesting of macro expansions.
const MAX_MACRO_DEPTH: usize = 8;

/// Lowers the function definition found in `fn_text` (the function's own
/// text, parsed standalone). Returns an empty IR when no definition is found.
///
/// A definition that parses only once recovery blanks one side of its
/// conditionals (`#ifdef X` `if (a) {` `#else` `if (b) {` `#endif`) is
/// found as in its file ([`crate::items::for_each_function`]), so that the
/// standalone text lowers as the same definition did in the file.
pub fn lower_function(fn_text: &str, macros: &MacroTable) -> FnIr {
    let tree = parse_text(fn_text);
    let mut ir = None;
    crate::items::for_each_function(&tree, fn_text, &mut |def, text, _| {
        if ir.is_none() {
            ir = Some(lower_definition(def, text, macros));
        }
    });
    ir.unwrap_or_default()
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
        scalars: Vec::new(),
        pointers: Vec::new(),
        active: Vec::new(),
        nstmts: 0,
        stmt_span: Span::default(),
        cond_calls: Vec::new(),
        if_condition: false,
        bool_names: bool_names(&src[def.start_byte()..def.end_byte()]),
        fixed: fixed::FixedLocals::of(def, src, &|w| {
            macros.get(w).and_then(stmt::macro_value).is_some()
        }),
    };
    if let Some(d) = def.field("declarator") {
        lw.params(d);
    }
    let mut body = Vec::new();
    if let Some(b) = def.field("body") {
        lw.stmt(b, &mut body, 0);
    }
    // SV-COMP's lock idiom: the function's effect on its lock word, as a
    // call that the lock models classify (in the function's own IR, so an
    // edit of the function changes it like any other statement).
    let name = def.field("declarator").and_then(|d| {
        let mut ty = crate::ir::TypeInfo::default();
        declarator(d, &mut ty).map(|n| crate::items::text(n, src))
    });
    if name.is_some_and(|n| n.starts_with("__VERIFIER_atomic_")) {
        let params: Vec<Name> = lw.ir.params.iter().map(|p| p.name.clone()).collect();
        let lock = match verifier_lock(&body) {
            Some((m, acquires)) => Some((Expr::AddrOf(Box::new(Expr::Var(m))), acquires)),
            // The lock word passed by pointer (`acquire(&m)`).
            None => def
                .field("body")
                .and_then(|b| verifier_pointer_lock(crate::items::text(b, src), &params))
                .map(|(p, acquires)| (Expr::Var(p), acquires)),
        };
        if let Some((m, acquires)) = lock {
            let end = def.end_byte().saturating_sub(lw.base);
            let span = Span::new(end.saturating_sub(1), end);
            let id = lw.ir.ncalls;
            lw.ir.ncalls += 1;
            let f = if acquires {
                "pthread_mutex_lock"
            } else {
                "pthread_mutex_unlock"
            };
            body.push(Stmt::Call(Call {
                id,
                callee: Callee::Direct(Name::from(f)),
                args: vec![m],
                span,
                stmt_span: span,
            }));
        }
    }
    lw.ir.body = body;
    lw.ir.address_taken.sort();
    lw.ir.address_taken.dedup();
    // The first `&` of each name (sorted by name, then offset).
    lw.ir.address_at.sort();
    lw.ir.address_at.dedup_by(|a, b| a.0 == b.0);
    lw.ir.recovered_types.sort();
    lw.ir.recovered_types.dedup();
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
    /// Parameters and locals declared so far that are neither pointers nor
    /// arrays: `n + i` of these is arithmetic, not an element's address.
    scalars: Vec<Name>,
    /// Parameters and locals declared so far as pointers or arrays.
    pointers: Vec<Name>,
    active: Vec<Name>,
    nstmts: usize,
    stmt_span: Span,
    /// (node id, call id) of calls lowered while evaluating a condition.
    cond_calls: Vec<(usize, u32)>,
    /// An `if` condition is being lowered: an assignment in it (`(x = e)`)
    /// tests the variable assigned (`lower/cond.rs`). Loop conditions keep
    /// such tests opaque (`while ((n = read(..)) > 0)`).
    if_condition: bool,
    /// Locals that hold one value all their life, which loop ranges read
    /// through (`lower/fixed.rs`).
    fixed: fixed::FixedLocals,
    /// `true` and `false` when the function uses them as variables (see
    /// [`bool_names`]).
    bool_names: [bool; 2],
}

/// Does a function's text assign to `true` or `false`? Before C23 they are
/// ordinary names (mt-daapd declares `char *true, *false` and frees them),
/// which tree-sitter still reads as the literals; assigned, they are
/// variables throughout the function.
fn bool_names(text: &str) -> [bool; 2] {
    let assigned = |name: &str| {
        text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + name.len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && after.starts_with('=')
                && !after.starts_with("==")
        })
    };
    [assigned("true"), assigned("false")]
}

/// The node under parentheses and casts: `(int) ((T) x)` is `x`.
fn uncast(mut n: Node) -> Node {
    loop {
        n = unparen(n);
        match (n.kind(), n.field("value")) {
            ("cast_expression", Some(v)) => n = v,
            _ => return n,
        }
    }
}

fn unparen(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" {
        match crate::items::first_named(n) {
            Some(c) => n = c,
            None => break,
        }
    }
    n
}

impl<'s> Lowerer<'s> {
    /// `&p` (node `n`) takes the address of the variable `p` lies in:
    /// `&x.f` lends part of `x` as surely as `&x` lends all of it. Through
    /// `[]` only `address_at` follows (a pointer's `&p[i]` lends none of
    /// `p`; the walk roots an array's by type).
    fn take_address(&mut self, p: &Expr, n: Node) {
        let mut e = p;
        let mut indexed = false;
        let root = loop {
            match e {
                Expr::Var(v) => break v,
                Expr::Field {
                    base, arrow: false, ..
                } => e = base,
                Expr::Index { base, .. } => {
                    indexed = true;
                    e = base;
                }
                _ => return,
            }
        };
        if !indexed {
            self.ir.address_taken.push(root.clone());
        }
        let at = self.span(n).start;
        self.ir.address_at.push((root.clone(), at));
    }

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
        let Some(list) = function_declarator(d).and_then(|n| n.field("parameters")) else {
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
                    // `int m[][4]` is `int (*m)[4]`: indexing `m`
                    // dereferences it, and the row it yields is indexed
                    // in place (see `indexes_array`).
                    ty.array = false;
                    ty.rows = 0;
                    ty.pointer += 1;
                }
                let span = self.span(nn);
                self.note_scalar(name(nn, self.src), &ty);
                self.ir.params.push(LocalDecl {
                    name: name(nn, self.src),
                    ty,
                    span,
                });
            }
        }
    }
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

/// The pointer levels a cast's type spells: its `*`s (`struct s **` has 2),
/// and 1 for a pointer to a function (`void *(*)(void *)`).
pub fn cast_pointer(t: &str) -> u8 {
    if t.contains('(') {
        return 1;
    }
    u8::try_from(t.matches('*').count()).unwrap_or(u8::MAX)
}

/// The integer an object-like macro's body is, under parentheses
/// (`#define N 8`, `(8U)`, `0x10`), as indexes and expansions read it.
fn macro_int(d: &crate::items::MacroDef) -> Option<i64> {
    if d.params.is_some() {
        return None;
    }
    parse_int(d.body.trim().trim_start_matches('(').trim_end_matches(')'))
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
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
    fn casts_keep_the_pointer_levels_they_spell() {
        let ir =
            lower("void f(void *q) { x = *(struct s **) q; y = (long) q; z = (void (*)(int)) q; }");
        let mut casts = Vec::new();
        crate::visit_stmts(&ir.body, &mut |s| {
            if let Stmt::Assign { rhs, .. } = s {
                let mut e = rhs;
                while let Expr::Deref(v) = e {
                    e = v;
                }
                if let Expr::Cast { ty, pointer, .. } = e {
                    casts.push((ty.as_deref().unwrap_or("").to_string(), *pointer));
                }
            }
        });
        // (A pointer to a function keeps a name that matches no type.)
        let levels: Vec<u8> = casts.iter().map(|c| c.1).collect();
        assert_eq!(levels, vec![2, 0, 1]);
        assert_eq!(casts[0].0, "s");
        assert_eq!(casts[1].0, "long");
        assert_eq!(cast_pointer("const char * const *"), 2);
    }

    #[test]
    fn a_pointer_stepped_back_and_cast_records_its_type() {
        let src = "#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))\n\
                   void f(void *p) { struct w *a = container_of(p, struct w, link); \
                   struct v *b = (struct v *)((char *)p + 8); struct u *c = (struct u *)p; }";
        let ir = lower(src);
        // Only the subtraction steps back to an enclosing struct; an
        // offset forward (`p + 8`) or a plain cast does not.
        assert_eq!(ir.recovered_types, vec![Name::from("w")]);
    }

    #[test]
    fn an_address_of_a_member_or_element_lends_its_variable() {
        let src = "void f(int *p) { struct s c; int a[4]; g = c.n; h(&c.x.y); q = &a[1]; r = &p[2]; k = &c; s = &(*p).f; }";
        let ir = lower(src);
        // `&` through `.` lends the variable; through `[]` only types
        // tell (an array's element, or where a pointer points).
        assert_eq!(ir.address_taken, vec![Name::from("c")]);
        let fn_start = src.find("void f").unwrap() as u32;
        let at = |needle: &str| src.find(needle).unwrap() as u32 - fn_start;
        assert_eq!(
            ir.address_at,
            vec![
                ("a".into(), at("&a[1]")),
                ("c".into(), at("&c.x")),
                ("p".into(), at("&p[2]"))
            ]
        );
    }

    #[test]
    fn conditional_arms_are_recorded() {
        let src = "void f(void) {\n#ifdef A\n a = 1;\n#elif B\n b = 1;\n#else\n c = 1;\n#endif\n#ifdef D\n d = 1;\n#endif\n e = 1;\n}";
        let ir = lower(src);
        let at = |needle: &str| ir.arms_at(src.find(needle).unwrap() as u32);
        let (a, b, c) = (at("a = 1"), at("b = 1"), at("c = 1"));
        let cond = src.find("#ifdef A").unwrap() as u32;
        let elif = src.find("#elif").unwrap() as u32;
        assert_eq!(a, vec![(cond, 0)]);
        assert_eq!(b, vec![(cond, 1), (elif, 0)]);
        assert_eq!(c, vec![(cond, 1), (elif, 1)]);
        // A conditional without an alternative, and code outside: no arms.
        assert!(at("d = 1").is_empty());
        assert!(at("e = 1").is_empty());
    }

    #[test]
    fn struct_initializer_lists_keep_their_elements() {
        let ir = lower(
            "void f(void (*fn)(void *), void *p) { struct job j = {fn, .arg = p, 3}; struct job k = {fn, {p}}; int a[2] = {1, 2}; }",
        );
        let rhs: Vec<&Expr> = ir
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::Assign { rhs, .. } => Some(rhs),
                _ => None,
            })
            .collect();
        // A positional element after a designator is left out.
        assert_eq!(
            rhs[0],
            &Expr::Init(vec![
                (None, Expr::Var("fn".into())),
                (Some("arg".into()), Expr::Var("p".into())),
            ])
        );
        assert_eq!(
            rhs[1],
            &Expr::Init(vec![
                (None, Expr::Var("fn".into())),
                (None, Expr::Init(vec![(None, Expr::Var("p".into()))])),
            ])
        );
        // An array's list is a value too (its elements may be functions a
        // thread is created with: `void *(*fns[])(void *) = {fa, fb}`).
        assert_eq!(
            rhs[2],
            &Expr::Init(vec![(None, Expr::Int(1)), (None, Expr::Int(2))])
        );
    }

    #[test]
    fn true_is_one_unless_the_function_assigns_it() {
        let rhs = |ir: &FnIr| -> Vec<Expr> {
            ir.body
                .iter()
                .filter_map(|s| match s {
                    Stmt::Assign { rhs, .. } => Some(rhs.clone()),
                    _ => None,
                })
                .collect()
        };
        let ir = lower("void f(void) { running = true; stopped = false; }");
        assert_eq!(rhs(&ir), vec![Expr::Int(1), Expr::Int(0)]);
        // Before C23 they are names: mt-daapd's `char *true` holds a string.
        let ir = lower("void f(void) { char *true; true = g(); x = true; y = false; }");
        assert_eq!(rhs(&ir).last(), Some(&Expr::Int(0)));
        assert!(rhs(&ir).contains(&Expr::Other));
        assert!(!rhs(&ir).contains(&Expr::Int(1)));
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
    fn comparisons_with_constants_keep_the_branch_zero_takes() {
        let ir = lower(
            "struct o { int n; }; void f(int x, struct o o, unsigned u) { \
             if (x < 0) {} if (1U == x) {} if (o.n != 2) {} if (!(x <= 3)) {} \
             if (2 > x) {} if (x >= 0) {} if (u < -1) {} if (x == y) {} if (x > 0) {} }",
        );
        let tests: Vec<&Test> = ir
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::If { test, .. } => Some(test),
                _ => None,
            })
            .collect();
        let zero: Vec<Option<bool>> = tests
            .iter()
            .map(|t| match t {
                Test::Compare { then_on_zero, .. } => Some(*then_on_zero),
                _ => None,
            })
            .collect();
        // A negative constant in an order is left out (`u < -1` holds
        // for an unsigned zero), as are two variables; `x > 0` stays
        // `Positive`.
        let expected = [
            Some(false),
            Some(false),
            Some(true),
            Some(false),
            Some(true),
            Some(true),
            None,
            None,
            None,
        ];
        assert_eq!(zero, expected);
        assert!(matches!(tests[2], Test::Compare { var, .. } if &**var == "o.n"));
        assert!(matches!(tests[8], Test::Positive { .. }));
        // Equality keeps its constant and which way the then-branch goes.
        let equal: Vec<Option<(i64, bool)>> = tests[..4]
            .iter()
            .map(|t| match t {
                Test::Compare { equal, .. } => *equal,
                _ => None,
            })
            .collect();
        assert_eq!(equal, [None, Some((1, true)), Some((2, false)), None]);
    }

    #[test]
    fn a_switch_names_its_variable_only_when_every_label_is_known() {
        let switches = |src: &str| -> Vec<(Option<Name>, Option<usize>, Option<usize>)> {
            lower(src)
                .body
                .iter()
                .filter_map(|s| match s {
                    Stmt::Switch {
                        var, zero, default, ..
                    } => Some((var.clone(), *zero, *default)),
                    _ => None,
                })
                .collect()
        };
        let known = switches(
            "void f(int d) { switch ((int) d) { case 2: a(); break; case 0U: b(); default: c(); } }",
        );
        assert_eq!(known, vec![(Some("d".into()), Some(1), Some(2))]);
        // An enumerator may be zero; so may a switch on an expression.
        let unknown = switches(
            "void f(int d) { switch (d) { case OFF: a(); } switch (d + 1) { case 1: b(); } }",
        );
        assert_eq!(unknown, vec![(None, None, None), (None, None, None)]);
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

    #[test]
    fn verifier_lock_words_passed_by_pointer() {
        let params = [Name::from("m")];
        let lock = |b: &str| verifier_pointer_lock(b, &params);
        assert_eq!(
            lock("{ __VERIFIER_assume(*m == 0); *m = 1; }"),
            Some((Name::from("m"), true))
        );
        assert_eq!(
            lock("{ assume_abort_if_not((*m) == 0); (*m) = 2; }"),
            Some((Name::from("m"), true))
        );
        assert_eq!(lock("{ *m = 0; }"), Some((Name::from("m"), false)));
        // Not the idiom: another word, a zero store after the wait, a
        // global, more statements.
        assert_eq!(lock("{ __VERIFIER_assume(*m == 0); *n = 1; }"), None);
        assert_eq!(lock("{ __VERIFIER_assume(*m == 0); *m = 0; }"), None);
        assert_eq!(lock("{ g = 0; }"), None);
        assert_eq!(lock("{ *m = 0; g = 1; }"), None);
    }

    #[test]
    fn affine_and_constant_indexes_are_kept() {
        let ir = lower(
            "#define K 10\nvoid f(long i, int j) { a[i * K + j] = 1; a[j + 4 * i] = 2; a[i * 2 + 1] = 3; a[K - 1] = 4; a[i * j] = 5; a[i + j] = 6; }",
        );
        let places: Vec<Expr> = ir
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::Access(a) if a.kind == AccessKind::Write => Some(a.place.clone()),
                _ => None,
            })
            .collect();
        let index = |e: &Expr| match e {
            Expr::Index {
                index, var, affine, ..
            } => (*index, var.clone(), affine.as_deref().cloned()),
            _ => panic!("not an index: {e:?}"),
        };
        let affine = |x: &str, k: i64, t: &str, offset: AffineOffset| {
            Some(Affine {
                scaled: Name::from(x),
                member: None,
                k,
                k_text: Name::from(t),
                offset,
            })
        };
        assert_eq!(
            index(&places[0]),
            (
                None,
                None,
                affine("i", 10, "K", AffineOffset::Var(Name::from("j")))
            )
        );
        assert_eq!(
            index(&places[1]),
            (
                None,
                None,
                affine("i", 4, "4", AffineOffset::Var(Name::from("j")))
            )
        );
        assert_eq!(
            index(&places[2]),
            (None, None, affine("i", 2, "2", AffineOffset::Int(1)))
        );
        assert_eq!(index(&places[3]), (Some(9), None, None));
        // No constant factor, no factor at all: unknown.
        assert_eq!(index(&places[4]), (None, None, None));
        assert_eq!(index(&places[5]), (None, None, None));
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

    #[test]
    fn strided_loops_have_strided_ranges() {
        let b = bounds(
            "void f(int n) { int i; for (i=1; i<n; i+=2) g(); for (i = 0; i < 6; i = i + 3) g(); \
             for (i = 0; i < 6; i += n * 2) g(); }",
        );
        let s = |x: &str| Some(Name::from(x));
        assert_eq!(b, vec![s("1<n+=2"), s("0<6+=3"), None]);
    }

    #[test]
    fn a_jump_to_the_step_keeps_a_while_loops_range() {
        // CIL's `continue`: `goto __Cont; .. __Cont: i ++;` runs the step.
        let b = bounds(
            "void f(int n) { int i; i = 0; while (i < n) { if (g()) goto __Cont; h(); \
             __Cont: /* CIL Label */ i ++; } \
             i = 0; while (i < n) { if (g()) goto out; __C: i ++; } out: ; \
             i = 0; while (i < n) { __D: i ++; } goto __D; }",
        );
        let s = |x: &str| Some(Name::from(x));
        // A jump elsewhere leaves early; a jump to the step from outside
        // the loop enters it anywhere.
        assert_eq!(b, vec![s("0<n"), None, None]);
    }
}

/// SV-COMP's lock idiom on a lock word passed by pointer, from the body's
/// text: `{ __VERIFIER_assume(*p == 0); *p = 1; }` (or `assume_abort_if_not`,
/// `(*p)`, any nonzero constant) acquires the word parameter `p` points to,
/// `{ *p = 0; }` releases it. Returns the parameter and whether it acquires.
fn verifier_pointer_lock(body: &str, params: &[Name]) -> Option<(Name, bool)> {
    let t: String = body.split_whitespace().collect();
    let t = t.strip_prefix('{')?.strip_suffix('}')?;
    let stmts: Vec<&str> = t.split(';').filter(|x| !x.is_empty()).collect();
    let word = |e: &str| -> Option<Name> {
        let e = e
            .strip_prefix("(*")
            .and_then(|x| x.strip_suffix(')'))
            .or_else(|| e.strip_prefix('*'))?;
        params.iter().find(|p| &***p == e).cloned()
    };
    let set = |st: &str| -> Option<(Name, i64)> {
        let (l, r) = st.split_once('=')?;
        Some((word(l)?, parse_int(r)?))
    };
    match &stmts[..] {
        [assume, store] => {
            let cond = ["__VERIFIER_assume(", "assume_abort_if_not("]
                .iter()
                .find_map(|f| assume.strip_prefix(f))?
                .strip_suffix(')')?;
            let (l, r) = cond.split_once("==")?;
            let (p, k) = set(store)?;
            (word(l)? == p && parse_int(r)? == 0 && k != 0).then_some((p, true))
        }
        [store] => set(store).filter(|(_, k)| *k == 0).map(|(p, _)| (p, false)),
        _ => None,
    }
}

/// SV-COMP's lock idiom inside a `__VERIFIER_atomic_*` function: a body
/// that assumes a global `m` is zero and then sets it to a nonzero constant
/// acquires `m` (`assume(m == 0); m = 1;`); one that only sets it to zero
/// releases it. Returns the global and whether the function acquires it.
pub(crate) fn verifier_lock(body: &[Stmt]) -> Option<(Name, bool)> {
    let mut waits: Vec<&Name> = Vec::new();
    let mut sets: Vec<(&Name, i64)> = Vec::new();
    for s in body {
        match s {
            Stmt::If {
                test:
                    Test::VarZero {
                        var,
                        zero_on_true: true,
                    },
                then,
                els,
                ..
            } if then.is_empty() && els.is_empty() => waits.push(var),
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs: Expr::Int(k),
            } => sets.push((x, *k)),
            Stmt::Access(_) | Stmt::Decl(_) => {}
            Stmt::Call(_) => {}
            _ => return None,
        }
    }
    match (&waits[..], &sets[..]) {
        ([w], [(x, k)]) if *w == *x && *k != 0 => Some(((*x).clone(), true)),
        ([], [(x, 0)]) => Some(((*x).clone(), false)),
        _ => None,
    }
}
