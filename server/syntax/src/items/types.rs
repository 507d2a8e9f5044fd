//! Declared types: storage class, qualifiers and base type of a
//! declaration, and the pointer/array/function shape its declarator adds.
//!
//! Stateless helpers shared by item extraction and by lowering (parameters
//! and locals), so both read a declaration's type the same way.

use super::{name, text};
use crate::fields::Field;
use crate::ir::{Name, TypeInfo};
use tree_sitter::Node;

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
                // Named by its text, not its offset: an edit above it
                // must not change the type (and with it the summary of
                // the function declaring it, or the program's globals).
                None => anon_name(t_text),
            },
            _ => Name::from(t_text.trim()),
        });
    }
    ty
}

/// The name of an anonymous struct, union or enum, from a short hash of
/// its text: the same definition gets the same name wherever it lies.
pub(crate) fn anon_name(text: &str) -> Name {
    Name::from(format!("<anon#{:08x}>", anon_hash(text)))
}

fn anon_hash(text: &str) -> u32 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(text.as_bytes());
    h.finish() as u32
}

/// The function declarator of a definition's declarator `d` (through
/// pointers and parentheses to it: `*f(void)`, `(f)(void)`), which holds
/// the parameter list; `None` when there is none within 32 steps.
pub(crate) fn function_declarator(mut d: Node) -> Option<Node> {
    for _ in 0..32 {
        if d.kind() == "function_declarator" {
            return Some(d);
        }
        d = d.field("declarator")?;
    }
    None
}

/// The parameters of a function declarator that are pointers (or arrays),
/// as a bit mask over the first 64 positions.
pub(super) fn pointer_param_mask(mut d: Node, src: &str) -> u64 {
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
                if ty.array {
                    ty.rows = ty.rows.saturating_add(1);
                }
                ty.array = true;
                d = d.field("declarator")?;
            }
            "function_declarator" | "abstract_function_declarator" => {
                let inner = d.field("declarator")?;
                let pointer = inner.kind() == "parenthesized_declarator"
                    && crate::items::first_named(inner).is_some_and(|i| i.kind() != "identifier");
                if pointer {
                    // `(*fp)(...)`: a function pointer, i.e. data.
                    saw_pointer_in_parens = false;
                } else {
                    // `f(...)`, or `(f)(...)` (CIL writes `int (/* format
                    // attribute */ f)(...)`): a function.
                    ty.is_function = true;
                }
                d = inner;
            }
            "init_declarator" | "attributed_declarator" => {
                d = d.field("declarator").or_else(|| d.named_child(0))?
            }
            "parenthesized_declarator" => d = crate::items::first_named(d)?,
            _ => return None,
        }
    }
    let _ = saw_pointer_in_parens;
    None
}
