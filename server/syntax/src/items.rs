//! Top-level items of one C file: function definitions, globals, struct and
//! typedef shapes, and `#define`s.
//!
//! Only the top level is walked here (plus preprocessor conditionals and
//! `extern "C"` blocks), so this stays cheap enough to redo on every edit;
//! function bodies are lowered separately, one function at a time.

use crate::fields::Field;
use crate::ir::{Name, TypeInfo};
use tree_sitter::{Node, Tree};

/// A function definition and where its text lives in the file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionItem {
    pub name: Name,
    pub start: u32,
    pub end: u32,
    pub is_static: bool,
    /// The return type.
    pub ret: TypeInfo,
    /// Span of the name, relative to `start`.
    pub name_span: (u32, u32),
}

/// A global variable declaration (or definition).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalItem {
    pub name: Name,
    pub ty: TypeInfo,
    /// Identifiers mentioned in the initializer (function pointer tables,
    /// `&other_global`).
    pub init_refs: Vec<Name>,
    pub is_extern: bool,
    /// Absolute byte range of the declarator name.
    pub start: u32,
    pub end: u32,
    /// Absolute byte range of the whole declaration.
    pub decl_start: u32,
    pub decl_end: u32,
}

/// A struct (or union) and its fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructDef {
    pub name: Name,
    pub fields: Vec<(Name, TypeInfo)>,
}

/// A `#define`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MacroDef {
    pub name: Name,
    /// `None` for object-like macros.
    pub params: Option<Vec<Name>>,
    pub body: String,
}

/// Everything at the top level of a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FileItems {
    pub functions: Vec<FunctionItem>,
    pub globals: Vec<GlobalItem>,
    pub structs: Vec<StructDef>,
    pub typedefs: Vec<(Name, TypeInfo)>,
    pub macros: Vec<MacroDef>,
    /// Declared function names (prototypes) with their return types.
    pub prototypes: Vec<(Name, TypeInfo)>,
    /// For declared functions: bit `i` set when parameter `i` is a pointer.
    pub pointer_params: Vec<(Name, u64)>,
    /// Byte offsets of syntax errors (first few), for reporting.
    pub error_count: u32,
}

pub(crate) fn text<'a>(n: Node, src: &'a str) -> &'a str {
    src.get(n.byte_range()).unwrap_or("")
}

pub(crate) fn name(n: Node, src: &str) -> Name {
    Name::from(text(n, src))
}

/// Nodes whose children are top-level items too: conditional blocks,
/// `extern "C" { ... }`.
pub(crate) fn holds_items(kind: &str) -> bool {
    matches!(
        kind,
        "preproc_if"
            | "preproc_ifdef"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef"
            | "linkage_specification"
            | "declaration_list"
    )
}

/// The top-level function definitions of a tree, in source order (the same
/// order and filter as [`FileItems::functions`]).
pub fn function_nodes<'t>(tree: &'t Tree, src: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![(tree.root_node(), 0u32)];
    while let Some((node, depth)) = stack.pop() {
        let mut cur = node.walk();
        for child in node.named_children(&mut cur) {
            match child.kind() {
                "function_definition" => {
                    let mut t = TypeInfo::default();
                    if child
                        .field("declarator")
                        .and_then(|d| declarator(d, &mut t))
                        .is_some()
                    {
                        out.push(child);
                    }
                }
                k if (k == "ERROR" || holds_items(k)) && depth < 64 => {
                    stack.push((child, depth + 1))
                }
                _ => {}
            }
        }
    }
    let _ = src;
    out.sort_by_key(|n| n.start_byte());
    out
}

/// Calls `f(node, text, offset)` for every function definition of the file,
/// in source order: those of the tree (`text` is `src`, `offset` 0) and those
/// recovered from syntax errors (`text` is a region of the file, `offset` its
/// start).
///
/// tree-sitter's error recovery can swallow the functions after a broken one
/// into one `ERROR` node, or tear a definition apart at the top level
/// (`int` `main(...)` `{` statements... `}`), typically because the branches
/// of an `#if`/`#else` inside it open braces differently. Such regions — an
/// `ERROR` node, a torn definition up to its matching brace, a definition
/// with errors that contains conditionals — are parsed again on their own,
/// with [`crate::preproc::blank_inactive`] applied (one configuration of the
/// conditionals; byte offsets unchanged). A region's functions replace the
/// erroneous definitions they overlap. Regions are disjoint, so this costs at
/// most one more parse of the file, and only for files with errors.
pub fn for_each_function(tree: &Tree, src: &str, f: &mut dyn FnMut(Node, &str, usize)) {
    for_each_function_in(tree, src, &recover(tree, src), f)
}

/// The broken regions of a file with errors, parsed again with inactive
/// conditionals blanked (see [`for_each_function`]). Computing it once lets
/// several passes over the functions share it.
#[derive(Default)]
pub struct Recovery {
    /// (offset in the file, blanked region text, its tree).
    regions: Vec<(usize, String, Tree)>,
}

impl PartialEq for Recovery {
    /// The trees follow from the texts.
    fn eq(&self, other: &Self) -> bool {
        self.regions.len() == other.regions.len()
            && self
                .regions
                .iter()
                .zip(&other.regions)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
    }
}

impl std::fmt::Debug for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recovery({} regions)", self.regions.len())
    }
}

/// Parses the broken regions of `tree` again (nothing for a tree without
/// errors).
pub fn recover(tree: &Tree, src: &str) -> Recovery {
    if !tree.root_node().has_error() {
        return Recovery::default();
    }
    let main = function_nodes(tree, src);
    let blanked = crate::preproc::blank_inactive(src);
    let regions = broken_regions(tree, src, &blanked, &main)
        .into_iter()
        .filter_map(|r| {
            let sub = blanked.get(r.clone())?;
            (!sub.trim().is_empty())
                .then(|| (r.start, sub.to_string(), crate::parse::parse_text(sub)))
        })
        .collect();
    Recovery { regions }
}

/// [`for_each_function`] with the file's [`Recovery`] already computed.
pub fn for_each_function_in(
    tree: &Tree,
    src: &str,
    recovery: &Recovery,
    f: &mut dyn FnMut(Node, &str, usize),
) {
    let main = function_nodes(tree, src);
    if !tree.root_node().has_error() {
        for n in main {
            f(n, src, 0);
        }
        return;
    }
    // (start, end, rank, node, text, offset); a lower rank wins an overlap.
    let mut cands: Vec<(usize, usize, u8, Node, &str, usize)> = Vec::new();
    for n in main {
        let rank = if n.has_error() { 2 } else { 0 };
        cands.push((n.start_byte(), n.end_byte(), rank, n, src, 0));
    }
    for (offset, sub, t) in &recovery.regions {
        for n in function_nodes(t, sub) {
            let (s, e) = (offset + n.start_byte(), offset + n.end_byte());
            cands.push((s, e, 1, n, sub, *offset));
        }
    }
    cands.sort_by_key(|c| (c.2, c.0));
    // Accepted ranges: start -> end, disjoint.
    let mut taken: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for c in cands {
        let (s, e) = (c.0, c.1);
        let before = taken.range(..=s).next_back().is_some_and(|(_, &pe)| pe > s);
        let after = taken
            .range(s..)
            .next()
            .is_some_and(|(&ps, _)| ps < e.max(s + 1));
        if before || after {
            continue;
        }
        taken.insert(s, e);
        out.push(c);
    }
    out.sort_by_key(|c| c.0);
    for (_, _, _, n, text, offset) in out {
        f(n, text, offset);
    }
}

/// Byte ranges of the file to parse again (see [`for_each_function`]),
/// disjoint and in order.
fn broken_regions(
    tree: &Tree,
    src: &str,
    blanked: &str,
    main: &[Node],
) -> Vec<std::ops::Range<usize>> {
    let mut regions: Vec<std::ops::Range<usize>> = Vec::new();
    // Definitions with errors whose conditionals change when blanked.
    for n in main {
        if n.has_error() && src.get(n.byte_range()) != blanked.get(n.byte_range()) {
            regions.push(n.byte_range());
        }
    }
    let mut stack = vec![(tree.root_node(), 0u32)];
    while let Some((node, depth)) = stack.pop() {
        let mut cur = node.walk();
        let children: Vec<Node> = node.named_children(&mut cur).collect();
        for (i, child) in children.iter().enumerate() {
            match child.kind() {
                // Skip an error region's first line, which holds the
                // construct that broke, unless blanking conditionals changes
                // the region: then the break is likely a torn definition
                // whose header is that first line.
                "ERROR" if child.end_byte() > child.start_byte() => {
                    let r = child.byte_range();
                    let region = src.get(r.clone()).unwrap_or("");
                    let skip = if blanked.get(r.clone()).is_some_and(|b| b != region) {
                        0
                    } else {
                        region.find('\n').map(|i| i + 1).unwrap_or(region.len())
                    };
                    if r.start + skip < r.end {
                        regions.push(r.start + skip..r.end);
                    }
                }
                // A definition torn apart: `int` `main(...)` `{...}`.
                "function_declarator" => {
                    let body_end = match children
                        .get(i + 1)
                        .filter(|b| b.kind() == "compound_statement")
                    {
                        Some(body) => Some(body.end_byte()),
                        None => matching_brace(blanked, child.end_byte()),
                    };
                    if let Some(body_end) = body_end {
                        let mut start = child.start_byte();
                        let mut j = i;
                        while j > 0
                            && matches!(
                                children[j - 1].kind(),
                                "primitive_type"
                                    | "type_identifier"
                                    | "sized_type_specifier"
                                    | "struct_specifier"
                                    | "enum_specifier"
                                    | "union_specifier"
                                    | "storage_class_specifier"
                                    | "type_qualifier"
                                    | "pointer_declarator"
                            )
                        {
                            j -= 1;
                            start = children[j].start_byte();
                        }
                        regions.push(start..body_end);
                    }
                }
                k if holds_items(k) && depth < 64 => stack.push((*child, depth + 1)),
                _ => {}
            }
        }
    }
    // Merge overlapping regions so that no byte is parsed twice.
    regions.sort_by_key(|r| r.start);
    let mut merged: Vec<std::ops::Range<usize>> = Vec::new();
    for r in regions {
        match merged.last_mut() {
            Some(last) if r.start < last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// The end (exclusive) of the `{ ... }` block starting after `from` (after
/// blanks), skipping braces in comments, strings and character literals.
fn matching_brace(src: &str, from: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut i = from;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Extracts the top-level items of a parsed file.
pub fn extract_items(tree: &Tree, src: &str) -> FileItems {
    extract_items_in(tree, src, &recover(tree, src))
}

/// [`extract_items`] with the file's [`Recovery`] already computed.
pub fn extract_items_in(tree: &Tree, src: &str, recovery: &Recovery) -> FileItems {
    let mut items = FileItems::default();
    let root = tree.root_node();
    let mut stack = vec![(root, 0u32)];
    while let Some((node, depth)) = stack.pop() {
        let mut cur = node.walk();
        let children: Vec<Node> = node.named_children(&mut cur).collect();
        for child in children {
            match child.kind() {
                "function_definition" => {}
                "declaration"
                | "type_definition"
                | "preproc_def"
                | "preproc_function_def"
                | "struct_specifier"
                | "union_specifier"
                | "expression_statement" => {
                    let piece = memoized_node_items(child, src);
                    append_piece(&mut items, &piece, child.start_byte() as u32);
                }
                k if (k == "ERROR" || holds_items(k)) && depth < 64 => {
                    stack.push((child, depth + 1))
                }
                _ => {}
            }
        }
    }
    for_each_function_in(tree, src, recovery, &mut |node, sub, offset| {
        function_item(node, sub, offset, &mut items)
    });
    items.functions.sort_by_key(|f| f.start);
    items.globals.sort_by_key(|g| g.start);
    items.error_count = count_errors(root);
    items
}

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
fn append_piece(items: &mut FileItems, piece: &FileItems, at: u32) {
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

/// [`node_items`] by node kind and text: an edit inside one function body
/// makes the whole file's items be extracted again; with the memo, only the
/// declarations whose text changed are walked (mt-daapd, 1.1 MB of
/// declarations: about 6 ms of every edit). A node with errors may parse
/// differently in another context, so it is not memoized.
fn memoized_node_items(node: Node, src: &str) -> std::sync::Arc<FileItems> {
    static MEMO: crate::memo::TextMemo<FileItems> = crate::memo::TextMemo::new();
    if node.has_error() {
        return std::sync::Arc::new(node_items(node, src));
    }
    MEMO.get(text(node, src), node.kind_id() as u64, || {
        node_items(node, src)
    })
}

fn count_errors(root: Node) -> u32 {
    if !root.has_error() {
        return 0;
    }
    let mut n = 0;
    let mut cur = root.walk();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            n += 1;
            continue;
        }
        if node.has_error() {
            stack.extend(node.children(&mut cur));
        }
    }
    n
}

/// Storage class, qualifiers and base type of a declaration-like node.
pub(crate) fn base_type(node: Node, src: &str) -> TypeInfo {
    let mut ty = TypeInfo::default();
    let mut cur = node.walk();
    for child in node.children(&mut cur) {
        match child.kind() {
            "storage_class_specifier" => match text(child, src) {
                "static" => ty.is_static = true,
                "__thread" | "_Thread_local" | "thread_local" => ty.thread_local = true,
                _ => {}
            },
            "type_qualifier" => {
                let q = text(child, src);
                if q.starts_with("_Atomic") {
                    ty.atomic = true;
                } else if q == "volatile" {
                    ty.volatile |= 1;
                }
            }
            "attribute_specifier" | "ms_declspec_modifier" => {
                if text(child, src).contains("thread") {
                    ty.thread_local = true;
                }
            }
            _ => {}
        }
    }
    if let Some(t) = node.field("type") {
        let t_text = text(t, src);
        if t_text.starts_with("_Atomic") || t_text.starts_with("atomic_") {
            ty.atomic = true;
        }
        ty.name = Some(match t.kind() {
            "struct_specifier" | "union_specifier" | "enum_specifier" => match t.field("name") {
                Some(n) => name(n, src),
                None => Name::from(format!("<anon@{}>", t.start_byte())),
            },
            _ => Name::from(t_text.trim()),
        });
    }
    ty
}

/// The parameters of a function declarator that are pointers (or arrays),
/// as a bit mask over the first 64 positions.
fn pointer_param_mask(mut d: Node, src: &str) -> u64 {
    for _ in 0..16 {
        match d.kind() {
            "function_declarator" => break,
            "pointer_declarator" | "init_declarator" | "attributed_declarator" => {
                match d.field("declarator") {
                    Some(inner) => d = inner,
                    None => return 0,
                }
            }
            _ => return 0,
        }
    }
    let Some(params) = d.field("parameters") else {
        return 0;
    };
    let mut mask = 0u64;
    let mut cur = params.walk();
    for (i, p) in params
        .named_children(&mut cur)
        .filter(|p| p.kind() == "parameter_declaration")
        .enumerate()
        .take(64)
    {
        let mut t = base_type(p, src);
        if let Some(decl) = p.field("declarator") {
            declarator(decl, &mut t);
        }
        if t.pointer >= 1 || t.array {
            mask |= 1 << i;
        }
    }
    mask
}

/// Walks a declarator: returns its name node and adjusts pointer/array/function flags.
pub(crate) fn declarator<'t>(mut d: Node<'t>, ty: &mut TypeInfo) -> Option<Node<'t>> {
    let mut saw_pointer_in_parens = false;
    for _ in 0..64 {
        match d.kind() {
            "identifier" | "field_identifier" | "type_identifier" | "primitive_type" => {
                return Some(d)
            }
            "pointer_declarator" | "abstract_pointer_declarator" => {
                ty.pointer = ty.pointer.saturating_add(1);
                let mut cur = d.walk();
                if ty.pointer < 8
                    && d.children(&mut cur).any(|c| {
                        c.kind() == "type_qualifier"
                            && c.child(0).map(|t| t.kind() == "volatile").unwrap_or(false)
                    })
                {
                    ty.volatile |= 1 << ty.pointer;
                }
                saw_pointer_in_parens = true;
                d = d.field("declarator")?;
            }
            "array_declarator" | "abstract_array_declarator" => {
                ty.array = true;
                d = d.field("declarator")?;
            }
            "function_declarator" | "abstract_function_declarator" => {
                let inner = d.field("declarator")?;
                if inner.kind() == "parenthesized_declarator" {
                    // `(*fp)(...)`: a function pointer, i.e. data.
                    saw_pointer_in_parens = false;
                } else {
                    ty.is_function = true;
                }
                d = inner;
            }
            "init_declarator" | "attributed_declarator" => {
                d = d.field("declarator").or_else(|| d.named_child(0))?
            }
            "parenthesized_declarator" => d = d.named_child(0)?,
            _ => return None,
        }
    }
    let _ = saw_pointer_in_parens;
    None
}

fn function_item(node: Node, src: &str, offset: usize, items: &mut FileItems) {
    let ty = base_type(node, src);
    let Some(decl) = node.field("declarator") else {
        return;
    };
    let mut t = ty.clone();
    let Some(n) = declarator(decl, &mut t) else {
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
        if d.kind() == "init_declarator" {
            if let Some(v) = d.field("value") {
                collect_identifiers(v, src, &mut init_refs);
            }
        }
        items.globals.push(GlobalItem {
            name: name(n, src),
            ty,
            init_refs,
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
                    let fields = struct_fields(body, src, items, 1);
                    items.structs.push(StructDef {
                        name: tname.clone(),
                        fields,
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
    let (Some(n), Some(body)) = (node.field("name"), node.field("body")) else {
        return;
    };
    let fields = struct_fields(body, src, items, depth + 1);
    items.structs.push(StructDef {
        name: name(n, src),
        fields,
    });
}

fn struct_fields(
    body: Node,
    src: &str,
    items: &mut FileItems,
    depth: u32,
) -> Vec<(Name, TypeInfo)> {
    let mut fields = Vec::new();
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
            if let Some(n) = declarator(d, &mut ty) {
                fields.push((name(n, src), ty));
            }
        }
    }
    fields
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_text;

    #[test]
    fn memoized_declarations_keep_their_own_offsets() {
        let decl = "static int counter = 0, other;\n";
        let a = format!("{decl}int f(void) {{ return 0; }}\n");
        let b = format!("/* moved down */\n{decl}int f(void) {{ return 1; }}\n");
        for src in [&a, &b, &a] {
            let items = extract_items(&parse_text(src), src);
            let at = src.find("counter").unwrap() as u32;
            assert_eq!(items.globals.len(), 2);
            assert_eq!(items.globals[0].start, at);
            assert_eq!(items.globals[0].end, at + "counter".len() as u32);
            assert_eq!(
                &src[items.globals[1].start as usize..items.globals[1].end as usize],
                "other"
            );
            assert_eq!(
                items.globals[0].decl_start,
                src.find("static").unwrap() as u32
            );
        }
    }

    #[test]
    fn finds_functions_globals_macros_structs() {
        let src = "#define LOCK() pthread_mutex_lock(&m)\n#define N 4\nstatic int counter;\n__thread int tl;\n_Atomic int a;\nstruct q { int n; pthread_mutex_t lock; };\ntypedef struct { int x; } T;\nvoid *(*fns[])(void *) = { f1, f2 };\nint f(void);\nvoid *t_fun(void *arg) { return 0; }\n";
        let tree = parse_text(src);
        let items = extract_items(&tree, src);
        assert_eq!(items.functions.len(), 1);
        assert_eq!(&*items.functions[0].name, "t_fun");
        let g: Vec<&str> = items.globals.iter().map(|g| &*g.name).collect();
        assert_eq!(g, ["counter", "tl", "a", "fns"]);
        assert!(items.globals[1].ty.thread_local);
        assert!(items.globals[2].ty.atomic);
        assert_eq!(items.globals[3].init_refs.len(), 2);
        assert_eq!(items.macros.len(), 2);
        assert_eq!(items.macros[0].params.as_deref(), Some(&[][..]));
        assert!(items
            .structs
            .iter()
            .any(|s| &*s.name == "q" && s.fields.len() == 2));
        assert!(items.structs.iter().any(|s| &*s.name == "T"));
        assert_eq!(&*items.prototypes[0].0, "f");
    }

    #[test]
    fn prototypes_record_pointer_parameters() {
        let src = "extern void magic(struct s *p, int n, char buf[]);\nint *g(int, void **);\nvoid h(void);\n";
        let tree = parse_text(src);
        let items = extract_items(&tree, src);
        let masks: Vec<(&str, u64)> = items
            .pointer_params
            .iter()
            .map(|(n, m)| (&**n, *m))
            .collect();
        assert_eq!(masks, [("magic", 0b101), ("g", 0b10)]);
    }

    #[test]
    fn linux_definition_macros_define_globals() {
        let src = "static int data;\nstatic DEFINE_MUTEX(m1);\nDEFINE_SPINLOCK(s);\nstatic DEFINE_RWLOCK(rw);\nmodule_init(test_init);\nDEFINE_X(a, b);\n";
        let tree = parse_text(src);
        let items = extract_items(&tree, src);
        let g: Vec<(&str, &str)> = items
            .globals
            .iter()
            .map(|g| (&*g.name, g.ty.name.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            g,
            [
                ("data", "int"),
                ("m1", "DEFINE_MUTEX"),
                ("s", "DEFINE_SPINLOCK"),
                ("rw", "DEFINE_RWLOCK")
            ]
        );
        assert!(items.globals[1].ty.is_static && !items.globals[2].ty.is_static);
    }

    /// (name, text of the definition) of every function of `src`.
    fn functions(src: &str) -> Vec<(String, String)> {
        let tree = parse_text(src);
        let items = extract_items(&tree, src);
        let mut seen = Vec::new();
        for_each_function(&tree, src, &mut |n, text, offset| {
            seen.push((offset + n.start_byte(), offset + n.end_byte(), text.len()))
        });
        assert_eq!(seen.len(), items.functions.len());
        for (f, (s, e, _)) in items.functions.iter().zip(&seen) {
            assert_eq!((f.start as usize, f.end as usize), (*s, *e));
        }
        items
            .functions
            .iter()
            .map(|f| {
                let t = &src[f.start as usize..f.end as usize];
                let (a, b) = f.name_span;
                assert_eq!(&t[a as usize..b as usize], &*f.name);
                (f.name.to_string(), t.to_string())
            })
            .collect()
    }

    #[test]
    fn recovers_definition_torn_by_ifdef_branches() {
        // Both branches open a block: the braces only balance once one
        // branch is chosen, so tree-sitter flattens `main` at the top level.
        let src = "static int n;\nvoid *w(void *a) { n++; return a; }\nint main(int argc, char **argv) {\n    int c;\n#ifdef LONG\n    while ((c = getopt_long(argc, argv)) != -1) {\n#else\n    while ((c = getopt(argc, argv)) != -1) {\n#endif\n        n += c;\n    }\n    pthread_t t;\n    pthread_create(&t, 0, w, 0);\n    n++;\n    return 0;\n}\n";
        let fns = functions(src);
        let names: Vec<&str> = fns.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["w", "main"]);
        assert!(fns[1].1.starts_with("int main("));
        assert!(fns[1].1.ends_with("return 0;\n}"));
    }

    #[test]
    fn torn_definition_spans_lower_relative_to_the_function() {
        let src = "int g;\nstatic void f(int x) {\n#if defined(A)\n    if (x > 1) {\n#elif defined(B)\n    if (x > 2) {\n#else\n    if (x) {\n#endif\n        g = 1;\n    }\n}\n";
        let tree = parse_text(src);
        let mut irs = Vec::new();
        for_each_function(&tree, src, &mut |n, text, offset| {
            irs.push((
                offset + n.start_byte(),
                crate::lower_definition(n, text, &crate::MacroTable::default()),
            ))
        });
        assert_eq!(irs.len(), 1);
        let (start, ir) = &irs[0];
        assert_eq!(&src[*start..*start + 11], "static void");
        let dbg = format!("{:?}", ir.body);
        let at = src.find("g = 1").unwrap() - start;
        assert!(dbg.contains(&format!("start: {at},")), "{dbg}");
    }

    #[test]
    fn recovers_functions_swallowed_by_a_broken_definition() {
        // A `case` whose two branches open the same `if` block differently.
        let mut src = String::from("int parse(int c, int *f) {\n    switch (c) {\n    case 1:\n#ifdef WIDE\n        if (get64(f) != 0) {\n#else\n        if (get32(f) != 0) {\n#endif\n            *f = 1;\n        }\n        break;\n    }\n    return 0;\n}\n");
        for i in 0..5 {
            src.push_str(&format!(
                "int after{i}(int *p) {{\n    return *p + {i};\n}}\n"
            ));
        }
        let fns = functions(&src);
        let names: Vec<&str> = fns.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            ["parse", "after0", "after1", "after2", "after3", "after4"]
        );
        assert!(fns[0].1.ends_with("return 0;\n}"));
    }

    #[test]
    fn error_region_with_torn_header_keeps_its_first_function() {
        let src = "int a(void) { return 1; }\nstatic int start(int *t) {\n#ifdef X\n    if (go(t) != 0 && v) {\n#else\n    if (go(t) != 0) {\n#endif\n        return -1;\n    }\n    return 0;\n}\nint b(void) { return 2; }\n";
        let names: Vec<String> = functions(src).into_iter().map(|f| f.0).collect();
        assert_eq!(names, ["a", "start", "b"]);
    }
}
