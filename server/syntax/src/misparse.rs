//! Statements that parse without an error node yet are not C: a word typed
//! at the start of a statement turns it into a declaration.
//!
//! Typing `v` on the line before `resp_reset(resp);` gives
//! `v resp_reset(resp);`, which tree-sitter parses, error-free, as the
//! declaration of a function `resp_reset` returning a type `v`, with one
//! parameter of type `resp`; `n a = b;` declares a local `a` of type `n`.
//! The call and the assignment are gone, and the function's accesses change
//! for one keystroke. Neither is C when `resp` and `n` are variables of the
//! function: a variable is not a type name, and a parameter list of bare
//! identifiers (C11 6.7.6.3p3) is allowed only in a definition.
//! [`misparsed_statements`] counts such declarations, so that the function
//! counts as having a syntax error (`baseline.rs` keeps its last good
//! version meanwhile).
//!
//! The converse too: typing `n = ` on the line before `T *root;` gives
//! `n = T *root;`, an assignment of a product, error-free, and the local
//! `root` is declared no more. A type name used as a value is not C
//! either: each left operand of a product that names a type (a typedef of
//! the file, or a name the function uses as a type) and no variable of the
//! function counts as one more such statement.
//!
//! "Variables of the function" are its parameters and every name a
//! declaration of its body declares, whatever the block: an
//! over-approximation of the names in scope that only a type and a
//! variable of one name in one function could fool.
//!
//! Invariant: reads the tree only; a definition with no such declaration
//! counts zero.

use crate::ir::TypeInfo;
use crate::items::{declarator, function_declarator};
use crate::Name;
use tree_sitter::Node;

/// Declarations in the body of the function definition `def` whose type, or
/// a parameter of whose function declarator, is a bare identifier naming a
/// variable of the function, and products whose left operand names a type
/// (`typedefs`: the file's, [`FileItems::typedefs`](crate::FileItems)).
/// Zero for any other node.
pub fn misparsed_statements(def: Node, src: &str, typedefs: &[(Name, TypeInfo)]) -> u32 {
    if def.kind() != "function_definition" {
        return 0;
    }
    let (Some(decl), Some(body)) = (
        def.child_by_field_name("declarator"),
        def.child_by_field_name("body"),
    ) else {
        return 0;
    };
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let mut vars: Vec<&str> = Vec::new();
    // Parameters: the identifiers declared by the definition's parameter
    // list.
    if let Some(params) =
        function_declarator(decl).and_then(|d| d.child_by_field_name("parameters"))
    {
        let mut c = params.walk();
        for p in params.named_children(&mut c) {
            if let Some(x) = p.child_by_field_name("declarator") {
                if let Some(id) = declared_name(x) {
                    vars.push(text(id));
                }
            }
        }
    }
    let mut decls = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if n.kind() == "declaration" {
            decls.push(n);
            let mut c = n.walk();
            for x in n.children_by_field_name("declarator", &mut c) {
                if let Some(id) = declared_name(x) {
                    vars.push(text(id));
                }
            }
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    let mut count = types_as_values(def, body, src, &vars, typedefs);
    if decls.is_empty() {
        return count;
    }
    let is_var = |n: Node| n.kind() == "type_identifier" && vars.contains(&text(n));
    for n in decls {
        if n.child_by_field_name("type").is_some_and(is_var) {
            count += 1;
            continue;
        }
        let mut c = n.walk();
        let calls = n
            .children_by_field_name("declarator", &mut c)
            .filter(|x| x.kind() == "function_declarator")
            .filter_map(|x| x.child_by_field_name("parameters"))
            .any(|params| {
                let mut c = params.walk();
                let found = params.named_children(&mut c).any(|p| {
                    p.kind() == "parameter_declaration"
                        && p.child_by_field_name("declarator").is_none()
                        && p.child_by_field_name("type").is_some_and(is_var)
                });
                found
            });
        if calls {
            count += 1;
        }
    }
    count
}

/// Left operands of products in `body` naming a type and no variable of
/// the function (`vars`): a typedef of the file (`typedefs`), or a type
/// name the definition itself uses (its return type, parameters,
/// declarations, casts).
fn types_as_values(
    def: Node,
    body: Node,
    src: &str,
    vars: &[&str],
    typedefs: &[(Name, TypeInfo)],
) -> u32 {
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("");
    let mut types: Vec<&str> = Vec::new();
    let mut stack = vec![def];
    while let Some(n) = stack.pop() {
        // A tag (`struct item`) lives in a namespace of its own: a
        // variable `item` may stand beside it.
        let tag = n.parent().is_some_and(|p| {
            matches!(
                p.kind(),
                "struct_specifier" | "union_specifier" | "enum_specifier"
            )
        });
        if n.kind() == "type_identifier" && !tag {
            types.push(text(n));
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    types.extend(typedefs.iter().map(|(t, _)| &**t));
    types.retain(|t| !vars.contains(t));
    if types.is_empty() {
        return 0;
    }
    let mut count = 0;
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match n.kind() {
            // Declarations name variables and types, not values (an
            // initialiser is an expression, and is searched).
            "declaration" => {
                let mut c = n.walk();
                for d in n.children_by_field_name("declarator", &mut c) {
                    if let Some(v) = d.child_by_field_name("value") {
                        stack.push(v);
                    }
                }
                continue;
            }
            // The left operand of a product: `T *root` read as `T * root`
            // (not any use, which `va_arg(ap, T)` or `sizeof (T)` would
            // make in code that is fine).
            "identifier"
                if types.contains(&text(n))
                    && n.parent().is_some_and(|p| {
                        p.kind() == "binary_expression"
                            && p.child_by_field_name("left") == Some(n)
                            && p.child_by_field_name("operator").map(text) == Some("*")
                    }) =>
            {
                count += 1
            }
            _ => {}
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    count
}

/// The identifier a declarator declares (through pointers, arrays,
/// initialisers, parentheses and function declarators).
fn declared_name(n: Node) -> Option<Node> {
    declarator(n, &mut TypeInfo::default()).filter(|id| id.kind() == "identifier")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(src: &str) -> u32 {
        let mut p = tree_sitter::Parser::new();
        p.set_language(&tree_sitter_c::LANGUAGE.into()).unwrap();
        let tree = p.parse(src, None).unwrap();
        let typedefs = crate::items::extract_items(&tree, src).typedefs;
        let root = tree.root_node();
        let mut c = root.walk();
        let n = root
            .named_children(&mut c)
            .filter(|n| n.kind() == "function_definition")
            .map(|d| misparsed_statements(d, src, &typedefs))
            .sum();
        n
    }

    #[test]
    fn a_word_typed_before_a_call_or_an_assignment_is_counted() {
        let src = "typedef struct r r;\nint g;\nstatic void f(r *resp, int n) {\n    int c = 1, *q;\n    v resp_reset(resp);\n    x conn(c, n);\n    n g = c;\n    if (c) {\n        w free(q);\n    }\n}\n";
        assert_eq!(count(src), 4);
    }

    #[test]
    fn a_declaration_that_became_a_product_is_counted() {
        let src = "typedef struct blk BLOCK;\nBLOCK *f(int n, ...) {\n    n = BLOCK *root;\n    int k = n * sizeof(BLOCK);\n    va_arg(ap, BLOCK);\n    return (BLOCK *)0;\n}\nint item;\nint g(void) {\n    struct item *p = 0;\n    int x = 2;\n    x = item * 3;\n    return x + (p != 0);\n}\n";
        assert_eq!(count(src), 1);
    }

    #[test]
    fn real_declarations_are_not_counted() {
        let src = "typedef struct r r;\ntypedef int size;\nstatic void f(r *resp, int n) {\n    r *other = resp;\n    size k = n;\n    void h(int, r);\n    int g(size);\n    int p();\n    (void)other; (void)k;\n}\n";
        assert_eq!(count(src), 0);
    }
}
