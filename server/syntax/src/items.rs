//! Top-level items of one C file: function definitions, globals, struct and
//! typedef shapes, and `#define`s.
//!
//! Only the top level is walked here (plus preprocessor conditionals and
//! `extern "C"` blocks), so this stays cheap enough to redo on every edit;
//! function bodies are lowered separately, one function at a time.
//!
//! This room owns the item types ([`FileItems`] and its parts) and the
//! top-level walk; `recovery` finds functions in broken regions, `decls`
//! extracts one declaration-like node, `types` reads declared types.
//! Functions and globals come out sorted by their start offset.

use crate::ir::{Name, TypeInfo};
use tree_sitter::{Node, Tree};

mod decls;
pub use decls::memo_stats;
mod recovery;
mod types;

use decls::{append_piece, function_item, memoized_node_items};
pub use recovery::memo_stats as region_memo_stats;
pub use recovery::{for_each_function, for_each_function_in, function_nodes, recover, Recovery};
pub(crate) use types::{base_type, declarator, function_declarator};

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
    /// The identifiers of a struct initializer (of the global, or of each
    /// element of an array of structs) by the member they initialize: see
    /// [`InitField`].
    pub init_fields: Vec<InitField>,
    /// The initializer is not a literal zero (`= 1`, `= f()`); false when
    /// there is none (static storage starts at zero) or it is `0`, `NULL`,
    /// `(T) 0`, `{0}`.
    pub init_nonzero: bool,
    pub is_extern: bool,
    /// Absolute byte range of the declarator name.
    pub start: u32,
    pub end: u32,
    /// Absolute byte range of the whole declaration.
    pub decl_start: u32,
    pub decl_end: u32,
}

/// An identifier in a struct's initializer list, by the member it
/// initializes: `{1, "x", &f}` names `f` at position 2 of 3 elements,
/// `{.emit = f}` names it by designator. Only the outermost list of a
/// struct counts (each element's list for an array of structs); the
/// analysis maps positions to members when the list has no more elements
/// than the struct has members (with fewer braces, as in `{1, 2, f}` for a
/// nested struct, positions do not name members).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InitField {
    pub pos: u32,
    pub count: u32,
    pub field: Option<Name>,
    pub name: Name,
}

/// A struct (or union) and its fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructDef {
    pub name: Name,
    pub fields: Vec<(Name, TypeInfo)>,
    /// A union: all its members share one object (C11 6.7.2.1p16).
    pub is_union: bool,
    /// Groups of members that are one memory location although each has
    /// its own name, so that writing one conflicts with accessing another:
    /// runs of two or more named bit-fields with no other member or
    /// zero-width bit-field between them (C11 3.14), and the members of an
    /// anonymous union member (C11 6.7.2.1p13), which are members of this
    /// struct as well (as are those of an anonymous struct member).
    pub shared_runs: Vec<Vec<Name>>,
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
    /// Absolute byte ranges of function definitions whose name could not
    /// be read: their bodies are not analysed, and the output says so.
    pub lost_functions: Vec<(u32, u32)>,
}

pub(crate) fn text<'a>(n: Node, src: &'a str) -> &'a str {
    src.get(n.byte_range()).unwrap_or("")
}

/// The first named child that is not a comment: tree-sitter puts comments
/// anywhere between tokens (`return /* why */ x;`, `( /* note */ f)`).
pub(crate) fn first_named(n: Node) -> Option<Node> {
    let mut cur = n.walk();
    let first = n.named_children(&mut cur).find(|c| c.kind() != "comment");
    first
}

pub(crate) fn name(n: Node, src: &str) -> Name {
    Name::from(text(n, src))
}

/// The member an initializer pair (`.emit = f`, GNU's old `emit: f`)
/// designates, when it designates exactly one member (not `[2] = ..`, not
/// `.a.b = ..`).
pub(crate) fn designated_member(pair: Node, src: &str) -> Option<Name> {
    let mut c = pair.walk();
    let designators: Vec<Node> = pair.children_by_field_name("designator", &mut c).collect();
    match designators[..] {
        [d] if d.kind() == "field_designator" => d.named_child(0).map(|f| name(f, src)),
        [d] if d.kind() == "field_identifier" => Some(name(d, src)),
        _ => None,
    }
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
    items.error_count = count_errors(root, src);
    items
}

fn count_errors(root: Node, src: &str) -> u32 {
    if !root.has_error() {
        return 0;
    }
    let mut n = 0;
    let mut cur = root.walk();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            n += u32::from(crate::errors::is_syntax_error(node, src));
            continue;
        }
        if node.has_error() {
            stack.extend(node.children(&mut cur));
        }
    }
    n
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
    fn an_anonymous_struct_of_a_global_has_its_members() {
        // No tag and no typedef: the global's type names the struct by its
        // text, and the struct's members are known under that name, also
        // for an anonymous struct nested as a member.
        let src = "static struct { const char *name; void *(*run)(void *); struct { int n; } inner; } table[2];\n";
        let items = extract_items(&parse_text(src), src);
        let ty = items.globals[0].ty.name.clone().unwrap();
        assert!(ty.starts_with("<anon#"), "{ty}");
        let def = items.structs.iter().find(|s| s.name == ty).unwrap();
        let members: Vec<&str> = def.fields.iter().map(|f| &*f.0).collect();
        assert_eq!(members, ["name", "run", "inner"]);
        let inner = def.fields[2].1.name.clone().unwrap();
        assert!(items
            .structs
            .iter()
            .any(|s| s.name == inner && &*s.fields[0].0 == "n"));
    }

    #[test]
    fn shared_runs_and_unions_are_known() {
        // `a` and `b` share a memory location, and so do `e` and `g` across
        // an unnamed bit-field; `c` (a plain member) and `: 0` end a run, so
        // `d` is alone.
        let src = "struct flags { unsigned a : 1, b : 2; int c; unsigned d : 3; unsigned : 0; unsigned e : 1; unsigned : 2; unsigned g : 1; int h; };\nunion u { int i; float f; };\ntypedef union { int j; } v_t;\n";
        let items = extract_items(&parse_text(src), src);
        let def = |n: &str| items.structs.iter().find(|s| &*s.name == n).unwrap();
        let runs: Vec<Vec<&str>> = def("flags")
            .shared_runs
            .iter()
            .map(|r| r.iter().map(|n| &**n).collect())
            .collect();
        assert_eq!(runs, [vec!["a", "b"], vec!["e", "g"]]);
        assert!(!def("flags").is_union);
        assert!(def("u").is_union && def("v_t").is_union);
        assert!(def("u").shared_runs.is_empty());
        // C11 anonymous members: their members are the struct's, and an
        // anonymous union's members are one location.
        // The alternatives of an anonymous union that are anonymous structs
        // keep their members apart (`p` and `q` do not overlap).
        let src = "struct s { int tag; union { int i; float f; struct { int p, q; }; }; struct { int x, y; }; };\n";
        let items = extract_items(&parse_text(src), src);
        let def = items.structs.iter().find(|s| &*s.name == "s").unwrap();
        let members: Vec<&str> = def.fields.iter().map(|f| &*f.0).collect();
        assert_eq!(members, ["tag", "i", "f", "p", "q", "x", "y"]);
        assert_eq!(
            def.shared_runs,
            [vec!["i".into(), "f".into()]] as [Vec<Name>; 1]
        );
    }

    #[test]
    fn parenthesized_function_names_are_read() {
        // CIL writes functions with a format attribute this way.
        let src = "int ( /* format attribute */  say)(char const *fmt, ...) { return 0; }\nint (plain)(void) { return 1; }\nint (*pick(int k))(void) { return 0; }\n";
        let items = extract_items(&parse_text(src), src);
        let names: Vec<&str> = items.functions.iter().map(|f| &*f.name).collect();
        assert_eq!(names, ["say", "plain", "pick"]);
        assert!(items.lost_functions.is_empty());
    }

    #[test]
    fn definitions_without_a_readable_name_are_counted() {
        let src = "int ( /* nothing */ )(void) { return 0; }\nint f(void) { return 1; }\n";
        let items = extract_items(&parse_text(src), src);
        let names: Vec<&str> = items.functions.iter().map(|f| &*f.name).collect();
        assert_eq!(names, ["f"]);
        assert_eq!(items.lost_functions, [(0, src.find('\n').unwrap() as u32)]);
    }

    #[test]
    fn literal_zero_initializers_are_told_apart() {
        let src = "int a;\nint b = 0;\nint *c = NULL;\nlong d = (long) 0UL;\nstruct s e = { 0 };\nchar f = '\\0';\nint g = 1;\nint h = f();\nint *i = &a;\n";
        let items = extract_items(&parse_text(src), src);
        let nonzero: Vec<(&str, bool)> = items
            .globals
            .iter()
            .map(|g| (&*g.name, g.init_nonzero))
            .collect();
        assert_eq!(
            nonzero,
            [
                ("a", false),
                ("b", false),
                ("c", false),
                ("d", false),
                ("e", false),
                ("f", false),
                ("g", true),
                ("h", true),
                ("i", true)
            ]
        );
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
