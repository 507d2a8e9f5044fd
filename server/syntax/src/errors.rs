//! Which ERROR and MISSING nodes of a tree are syntax errors of the file.
//!
//! tree-sitter-c leaves an error node in two places where the C is valid:
//! a type given as an argument, which only a macro or a builtin takes
//! (`container_of(p, struct s, m)`, `__builtin_va_arg(ap, char *)`), and an
//! unnamed bit-field (`unsigned int : 16;`), whose missing name it marks.
//! [`is_syntax_error`] tells these apart, so that the error count and the
//! "syntax error" notice speak of the file's own errors only. The tree
//! itself is left as it is: the lowering expands such macro calls from
//! their text (`macros::split_args`).

use crate::macros::split_args;
use tree_sitter::Node;

/// Is this error or missing node an error of the C text?
pub fn is_syntax_error(node: Node, src: &str) -> bool {
    if node.is_missing() {
        // `unsigned int : 16;`: the field name is optional before a width.
        let unnamed_bitfield = node.kind() == "field_identifier"
            && node
                .next_sibling()
                .is_some_and(|s| s.kind() == "bitfield_clause");
        return !unnamed_bitfield && !in_type_argument(node, src);
    }
    !(node.is_error() && in_type_argument(node, src))
}

/// Does this node lie inside an argument, of a call's argument list, whose
/// text is a type name? (`char const **` leaves an ERROR for `char` and a
/// missing operand below the list.)
fn in_type_argument(node: Node, src: &str) -> bool {
    let mut list = node.parent();
    for _ in 0..4 {
        match list {
            Some(p) if p.kind() != "argument_list" => list = p.parent(),
            _ => break,
        }
    }
    let Some(list) = list.filter(|p| p.kind() == "argument_list") else {
        return false;
    };
    let Some(text) = src.get(list.byte_range()) else {
        return false;
    };
    let base = list.start_byte();
    let (s, e) = (node.start_byte(), node.end_byte());
    split_args(text).into_iter().any(|arg| {
        // `split_args` returns slices of `text`: their place in the file.
        let at = base + (arg.as_ptr() as usize - text.as_ptr() as usize);
        at <= s && e <= at + arg.len() && is_type_name(arg)
    })
}

/// `struct s`, `char *`, `unsigned long`, `const T *`: words and stars only,
/// with a type keyword or a star, or two words (`T const`). One word alone
/// is an expression, which would have parsed.
fn is_type_name(arg: &str) -> bool {
    const TYPE_WORDS: &[&str] = &[
        "struct", "union", "enum", "const", "volatile", "signed", "unsigned", "char", "short",
        "int", "long", "float", "double", "void", "_Bool",
    ];
    let mut words = 0;
    let mut typed = false;
    for tok in arg.split(|c: char| c.is_whitespace() || c == '*') {
        if tok.is_empty() {
            continue;
        }
        let ident = tok
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && tok.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return false;
        }
        words += 1;
        typed |= TYPE_WORDS.contains(&tok);
    }
    // Every token was a word: the text is words and stars only.
    words > 0 && (typed || arg.contains('*') || words > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_text;

    fn errors(src: &str) -> usize {
        let tree = parse_text(src);
        let mut n = 0;
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if (node.is_error() || node.is_missing()) && is_syntax_error(node, src) {
                n += 1;
            }
            let mut cur = node.walk();
            stack.extend(node.children(&mut cur));
        }
        n
    }

    #[test]
    fn type_arguments_and_unnamed_bitfields_are_valid_c() {
        for ok in [
            "void f(void *arg) { struct d *data = container_of(arg, struct d, dev); }\n",
            "void f(int *p) { struct s *s = list_entry(p, struct s, list); }\n",
            "void f(void) { char *s = __builtin_va_arg(ap, char *); }\n",
            "void f(void) { T *p = MallocNew(struct DNS_Async_Instance); }\n",
            "void f(void) { char const **p = __builtin_va_arg(ap, char const   **); }\n",
            "struct bf { unsigned int a : 4; unsigned int  : 16 ; };\n",
        ] {
            assert_eq!(errors(ok), 0, "{ok}");
        }
    }

    #[test]
    fn real_errors_still_count() {
        for bad in [
            "void f(void) { g(a b); }\n",
            "void f(void) { g(1 +); }\n",
            "void f(void) { x = ; }\n",
            "void f(void) { g(struct s, ); x = = 1; }\n",
        ] {
            assert!(errors(bad) > 0, "{bad}");
        }
    }
}
