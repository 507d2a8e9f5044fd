//! Items of one top-level declaration-like node: functions, globals,
//! typedefs, struct shapes, `#define`s and Linux-style `DEFINE_*` globals.
//!
//! Each node's items are extracted with offsets relative to the node, so
//! the same text anywhere gives the same piece, and memoized by text (nodes
//! with errors are not). `append_piece` shifts a piece back to its place.

use super::types::pointer_param_mask;
use super::{
    base_type, declarator, name, text, FileItems, FunctionItem, GlobalItem, InitField, MacroDef,
    StructDef,
};
use crate::fields::Field;
use crate::ir::{Name, TypeInfo};
use tree_sitter::Node;

/// The items of one top-level declaration-like node, with offsets relative
/// to the node's start (so that the same text anywhere gives the same piece).
fn node_items(child: Node, src: &str) -> FileItems {
    let mut items = FileItems::default();
    match child.kind() {
        "declaration" => declaration_item(child, src, &mut items),
        "type_definition" => typedef_item(child, src, &mut items),
        "preproc_def" | "preproc_function_def" => macro_item(child, src, &mut items),
        "struct_specifier" | "union_specifier" => struct_defs(child, src, &mut items, 0),
        // `struct s { ... };` alone sometimes parses this way, and
        // so does `DEFINE_SPINLOCK(s);` without a storage class.
        "expression_statement" => define_macro_item(child, src, &mut items),
        _ => {}
    }
    let at = child.start_byte() as u32;
    // Wrapping, so that `append_piece` restores any offset exactly.
    for g in &mut items.globals {
        g.start = g.start.wrapping_sub(at);
        g.end = g.end.wrapping_sub(at);
        g.decl_start = g.decl_start.wrapping_sub(at);
        g.decl_end = g.decl_end.wrapping_sub(at);
    }
    items
}

/// Appends a node's items (see [`node_items`]) found at offset `at`.
pub(super) fn append_piece(items: &mut FileItems, piece: &FileItems, at: u32) {
    items
        .globals
        .extend(piece.globals.iter().map(|g| GlobalItem {
            start: g.start.wrapping_add(at),
            end: g.end.wrapping_add(at),
            decl_start: g.decl_start.wrapping_add(at),
            decl_end: g.decl_end.wrapping_add(at),
            ..g.clone()
        }));
    items.structs.extend(piece.structs.iter().cloned());
    items.typedefs.extend(piece.typedefs.iter().cloned());
    items.macros.extend(piece.macros.iter().cloned());
    items.prototypes.extend(piece.prototypes.iter().cloned());
    items
        .pointer_params
        .extend(piece.pointer_params.iter().cloned());
}

static MEMO: crate::memo::TextMemo<FileItems> = crate::memo::TextMemo::new();

/// Entries of the declaration memo and the bytes of their texts.
pub fn memo_stats() -> (usize, usize) {
    MEMO.stats()
}

/// [`node_items`] by node kind and text: an edit inside one function body
/// makes the whole file's items be extracted again; with the memo, only the
/// declarations whose text changed are walked (mt-daapd, 1.1 MB of
/// declarations: about 6 ms of every edit). A node with errors may parse
/// differently in another context, so it is not memoized.
pub(super) fn memoized_node_items(node: Node, src: &str) -> std::sync::Arc<FileItems> {
    if node.has_error() {
        return std::sync::Arc::new(node_items(node, src));
    }
    MEMO.get(text(node, src), node.kind_id() as u64, || {
        node_items(node, src)
    })
}

pub(super) fn function_item(node: Node, src: &str, offset: usize, items: &mut FileItems) {
    let ty = base_type(node, src);
    let mut t = ty.clone();
    let Some(n) = node
        .field("declarator")
        .and_then(|decl| declarator(decl, &mut t))
        .filter(|n| !text(*n, src).trim().is_empty())
    else {
        let span = (offset + node.start_byte(), offset + node.end_byte());
        items.lost_functions.push((span.0 as u32, span.1 as u32));
        return;
    };
    t.is_function = false;
    if let Some(t) = node.field("type") {
        struct_defs(t, src, items, 0);
    }
    let rel = node.start_byte() as u32;
    let start = (offset + node.start_byte()) as u32;
    items.functions.push(FunctionItem {
        name: name(n, src),
        start,
        end: (offset + node.end_byte()) as u32,
        is_static: ty.is_static,
        ret: t,
        name_span: (n.start_byte() as u32 - rel, n.end_byte() as u32 - rel),
    });
}

fn declaration_item(node: Node, src: &str, items: &mut FileItems) {
    let base = base_type(node, src);
    if let Some(t) = node.field("type") {
        struct_defs(t, src, items, 0);
    }
    let is_extern = node
        .children(&mut node.walk())
        .any(|c| c.kind() == "storage_class_specifier" && text(c, src) == "extern");
    let mut cur = node.walk();
    for d in node.children_by_field_name("declarator", &mut cur) {
        let mut ty = base.clone();
        let Some(n) = declarator(d, &mut ty) else {
            continue;
        };
        ty.one_element = ty.array && ty.rows == 0 && declares_one_element(d, src);
        if ty.is_function {
            ty.is_function = false;
            let mask = pointer_param_mask(d, src);
            if mask != 0 {
                items.pointer_params.push((name(n, src), mask));
            }
            items.prototypes.push((name(n, src), ty));
            continue;
        }
        // tree-sitter-c 0.24 does not know `_Thread_local`: it ends up in an
        // error node before the declaration, on the same line.
        let line_start = src[..node.start_byte()]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        let prefix = src.get(line_start..n.start_byte()).unwrap_or("");
        if prefix.contains("_Thread_local")
            || prefix.contains("thread_local ")
            || prefix.contains("__thread")
        {
            ty.thread_local = true;
        }
        let mut init_refs = Vec::new();
        let mut init_fields = Vec::new();
        let mut init_nonzero = false;
        if d.kind() == "init_declarator" {
            if let Some(v) = d.field("value") {
                collect_identifiers(v, src, &mut init_refs);
                init_nonzero = !literal_zero(v, src, 0);
                if v.kind() == "initializer_list" {
                    match ty.array {
                        false => struct_init_fields(v, src, &mut init_fields),
                        true => {
                            let mut cur = v.walk();
                            for e in v.named_children(&mut cur) {
                                let e = match e.kind() {
                                    "initializer_pair" => e.field("value").unwrap_or(e),
                                    _ => e,
                                };
                                if e.kind() == "initializer_list" {
                                    struct_init_fields(e, src, &mut init_fields);
                                }
                            }
                        }
                    }
                }
            }
        }
        items.globals.push(GlobalItem {
            name: name(n, src),
            ty,
            init_refs,
            init_fields,
            init_nonzero,
            is_extern,
            start: n.start_byte() as u32,
            end: n.end_byte() as u32,
            decl_start: node.start_byte() as u32,
            decl_end: node.end_byte() as u32,
        });
    }
}

/// `DEFINE_SPINLOCK(s);` at the top level: a Linux-style definition macro
/// (`DEFINE_MUTEX`, `DEFINE_RWLOCK`, ...) whose expansion is unknown defines
/// the global named by its argument, typed by the macro's name. With a
/// storage class (`static DEFINE_MUTEX(m);`) tree-sitter already reads a
/// declaration of `m` with the type `DEFINE_MUTEX`.
fn define_macro_item(node: Node, src: &str, items: &mut FileItems) {
    let Some(call) = node
        .named_child(0)
        .filter(|c| c.kind() == "call_expression")
    else {
        return;
    };
    let Some(func) = call.field("function") else {
        return;
    };
    let macro_name = text(func, src);
    if func.kind() != "identifier" || !is_definition_macro(macro_name) {
        return;
    }
    let Some(args) = call.field("arguments") else {
        return;
    };
    let mut cur = args.walk();
    let args: Vec<Node> = args.named_children(&mut cur).collect();
    let [arg] = args[..] else { return };
    if arg.kind() != "identifier" {
        return;
    }
    items.globals.push(GlobalItem {
        name: name(arg, src),
        ty: TypeInfo {
            name: Some(Name::from(macro_name)),
            ..TypeInfo::default()
        },
        init_refs: Vec::new(),
        init_fields: Vec::new(),
        init_nonzero: true,
        is_extern: false,
        start: arg.start_byte() as u32,
        end: arg.end_byte() as u32,
        decl_start: node.start_byte() as u32,
        decl_end: node.end_byte() as u32,
    });
}

/// `DEFINE_MUTEX`, `DEFINE_SPINLOCK`, ...: an upper-case `DEFINE_` macro.
fn is_definition_macro(n: &str) -> bool {
    n.strip_prefix("DEFINE_")
        .map(|rest| {
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        })
        .unwrap_or(false)
}

/// Is an initializer a literal zero: `0`, `0U`, `NULL`, `'\0'`, `false`,
/// `(T) 0`, `((void *) 0)`, `{0}`, `{ }`?
fn literal_zero(n: Node, src: &str, depth: u32) -> bool {
    if depth > 8 {
        return false;
    }
    match n.kind() {
        "number_literal" => {
            let t = text(n, src).trim_end_matches(['u', 'U', 'l', 'L']);
            matches!(t, "0" | "0x0" | "0X0" | "00")
        }
        "null" | "false" => true,
        "char_literal" => matches!(text(n, src), "'\\0'"),
        "identifier" => text(n, src) == "NULL",
        "parenthesized_expression" => n
            .named_child(0)
            .is_some_and(|c| literal_zero(c, src, depth + 1)),
        "cast_expression" => n
            .field("value")
            .is_some_and(|c| literal_zero(c, src, depth + 1)),
        "initializer_list" => {
            let mut cur = n.walk();
            let kids: Vec<Node> = n.named_children(&mut cur).collect();
            kids.iter()
                .filter(|c| c.kind() != "comment")
                .all(|c| literal_zero(*c, src, depth + 1))
        }
        _ => false,
    }
}

/// The identifiers of one struct initializer list by member (see
/// [`InitField`]).
fn struct_init_fields(list: Node, src: &str, out: &mut Vec<InitField>) {
    let mut cur = list.walk();
    let elems: Vec<Node> = list.named_children(&mut cur).collect();
    if elems.iter().any(|e| e.kind() == "comment") || out.len() > 4096 {
        return;
    }
    let count = elems.len() as u32;
    // After a designator, a positional element initializes the member after
    // the designated one, not the one at its position: skipped.
    let mut designated = false;
    for (i, e) in elems.into_iter().enumerate() {
        designated |= e.kind() == "initializer_pair";
        if designated && e.kind() != "initializer_pair" {
            continue;
        }
        let (field, value) = match e.kind() {
            "initializer_pair" => {
                let Some(field) = crate::items::designated_member(e, src) else {
                    continue;
                };
                (Some(field), e.field("value"))
            }
            _ => (None, Some(e)),
        };
        let Some(value) = value else { continue };
        let mut names = Vec::new();
        collect_identifiers(value, src, &mut names);
        for n in names {
            out.push(InitField {
                pos: i as u32,
                count,
                field: field.clone(),
                name: n,
            });
        }
    }
}

fn collect_identifiers(node: Node, src: &str, out: &mut Vec<Name>) {
    let mut stack = vec![node];
    let mut cur = node.walk();
    while let Some(n) = stack.pop() {
        if out.len() > 4096 {
            return;
        }
        if n.kind() == "identifier" {
            out.push(name(n, src));
        } else {
            stack.extend(n.named_children(&mut cur));
        }
    }
}

fn typedef_item(node: Node, src: &str, items: &mut FileItems) {
    let base = base_type(node, src);
    let type_node = node.field("type");
    let mut cur = node.walk();
    let decls: Vec<Node> = node
        .children_by_field_name("declarator", &mut cur)
        .collect();
    for d in decls {
        let mut ty = base.clone();
        let Some(n) = declarator(d, &mut ty) else {
            continue;
        };
        let tname = name(n, src);
        // An anonymous struct takes the typedef's name.
        if let Some(t) = type_node {
            if matches!(t.kind(), "struct_specifier" | "union_specifier")
                && t.field("name").is_none()
            {
                ty.name = Some(tname.clone());
                if let Some(body) = t.field("body") {
                    let (fields, shared_runs) = struct_fields(body, src, items, 1);
                    items.structs.push(StructDef {
                        name: tname.clone(),
                        fields,
                        is_union: t.kind() == "union_specifier",
                        shared_runs,
                    });
                }
            }
        }
        items.typedefs.push((tname, ty));
    }
    if let Some(t) = type_node {
        if t.field("name").is_some() {
            struct_defs(t, src, items, 0);
        }
    }
}

fn struct_defs(node: Node, src: &str, items: &mut FileItems, depth: u32) {
    if depth > 32 || !matches!(node.kind(), "struct_specifier" | "union_specifier") {
        return;
    }
    let Some(body) = node.field("body") else {
        return;
    };
    // An anonymous one (`static struct { .. } table[]`, a member's
    // `struct { .. } inner;`) under the name `base_type` gives it.
    let sname = match node.field("name") {
        Some(n) => name(n, src),
        None => super::types::anon_name(text(node, src)),
    };
    let (fields, shared_runs) = struct_fields(body, src, items, depth + 1);
    items.structs.push(StructDef {
        name: sname,
        fields,
        is_union: node.kind() == "union_specifier",
        shared_runs,
    });
}

/// The members of a struct or union body (with those of its anonymous
/// members), and its groups of members that share one location (see
/// [`StructDef::shared_runs`]).
fn struct_fields(
    body: Node,
    src: &str,
    items: &mut FileItems,
    depth: u32,
) -> (Vec<(Name, TypeInfo)>, Vec<Vec<Name>>) {
    let mut fields = Vec::new();
    let mut runs: Vec<Vec<Name>> = Vec::new();
    // The named bit-fields of the run being read.
    let mut run: Vec<Name> = Vec::new();
    let end_run = |run: &mut Vec<Name>, runs: &mut Vec<Vec<Name>>| {
        if run.len() > 1 {
            runs.push(std::mem::take(run));
        }
        run.clear();
    };
    let mut cur = body.walk();
    for f in body.named_children(&mut cur) {
        if f.kind() != "field_declaration" {
            continue;
        }
        let base = base_type(f, src);
        if let Some(t) = f.field("type") {
            struct_defs(t, src, items, depth + 1);
        }
        let mut c2 = f.walk();
        for d in f.children_by_field_name("declarator", &mut c2) {
            let mut ty = base.clone();
            let named = declarator(d, &mut ty)
                .map(|n| name(n, src))
                .filter(|n| !n.is_empty() && !d.is_missing());
            // `unsigned a : 1` has its width in the clause after the
            // declarator; an unnamed one (`unsigned : 3`) parses with a
            // missing name.
            let width = d
                .next_named_sibling()
                .filter(|w| w.kind() == "bitfield_clause")
                .map(|w| {
                    let t = text(w, src).trim_start_matches(':').trim();
                    t != "0"
                });
            match (width, &named) {
                (Some(true), Some(n)) => run.push(n.clone()),
                (Some(true), None) => {}
                // A zero-width bit-field or an ordinary member.
                _ => end_run(&mut run, &mut runs),
            }
            if let Some(n) = named {
                fields.push((n, ty));
            }
        }
        if f.children_by_field_name("declarator", &mut f.walk())
            .next()
            .is_none()
        {
            // An anonymous struct or union member ends a run; its members
            // are this struct's, and a union's share one location.
            end_run(&mut run, &mut runs);
            let anon = f
                .field("type")
                .filter(|t| matches!(t.kind(), "struct_specifier" | "union_specifier"))
                .and_then(|t| Some((t.kind() == "union_specifier", t.field("body")?)));
            if let Some((union, body)) = anon {
                let (inner, inner_runs) = struct_fields(body, src, items, depth + 1);
                if union {
                    // Its own members; those of an anonymous struct in it
                    // (one alternative of several) do not overlap each
                    // other, and are left apart.
                    let own = direct_members(body, src);
                    if own.len() > 1 {
                        runs.push(own);
                    }
                } else {
                    runs.extend(inner_runs);
                }
                fields.extend(inner);
            }
        }
    }
    end_run(&mut run, &mut runs);
    (fields, runs)
}

/// The members declared directly in `body` (not in an anonymous member),
/// in order.
fn direct_members(body: Node, src: &str) -> Vec<Name> {
    let mut out = Vec::new();
    let mut cur = body.walk();
    for f in body.named_children(&mut cur) {
        if f.kind() != "field_declaration" {
            continue;
        }
        let mut c2 = f.walk();
        for d in f.children_by_field_name("declarator", &mut c2) {
            if let Some(n) = declarator(d, &mut TypeInfo::default()) {
                if !d.is_missing() {
                    out.push(name(n, src));
                }
            }
        }
    }
    out
}

fn macro_item(node: Node, src: &str, items: &mut FileItems) {
    let Some(n) = node.field("name") else {
        return;
    };
    let params = node.field("parameters").map(|p| {
        let mut cur = p.walk();
        p.named_children(&mut cur)
            .map(|c| {
                if c.kind() == "variadic_parameter" || text(c, src) == "..." {
                    Name::from("__VA_ARGS__")
                } else {
                    name(c, src)
                }
            })
            .collect()
    });
    let body = node
        .field("value")
        .map(|v| {
            text(v, src)
                .replace("\\\r\n", " ")
                .replace("\\\n", " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    items.macros.push(MacroDef {
        name: name(n, src),
        params,
        body,
    });
}

/// Does the declarator declare an array of exactly one element (`t[1]`,
/// `t[1U]`), not a pointer to one (`(*t)[1]`)?
fn declares_one_element(mut d: Node, src: &str) -> bool {
    for _ in 0..16 {
        match d.kind() {
            "init_declarator" | "attributed_declarator" => match d.field("declarator") {
                Some(x) => d = x,
                None => return false,
            },
            "array_declarator" => {
                let Some(size) = d.field("size") else {
                    return false;
                };
                let digits = text(size, src).trim_end_matches(['u', 'U', 'l', 'L']);
                return size.kind() == "number_literal" && digits == "1";
            }
            _ => return false,
        }
    }
    false
}
