//! Child lookups by field name without tree-sitter's name search.
//!
//! `Node::child_by_field_name` looks the name up in the grammar's field
//! table (a linear scan of string compares) on every call, and lowering asks
//! for fields hundreds of thousands of times on a large project. The ids are
//! resolved once here and the lookup goes by id.

use crate::parse::language;
use rustc_hash::FxHashMap;
use std::sync::OnceLock;
use tree_sitter::Node;

/// Field ids of the C grammar, by name.
fn ids() -> &'static FxHashMap<String, u16> {
    static IDS: OnceLock<FxHashMap<String, u16>> = OnceLock::new();
    IDS.get_or_init(|| {
        let lang = language();
        (1..=lang.field_count() as u16)
            .filter_map(|id| Some((lang.field_name_for_id(id)?.to_string(), id)))
            .collect()
    })
}

/// `child_by_field_name`, by the field's id.
pub trait Field<'t> {
    fn field(&self, name: &str) -> Option<Node<'t>>;
}

impl<'t> Field<'t> for Node<'t> {
    fn field(&self, name: &str) -> Option<Node<'t>> {
        self.child_by_field_id(*ids().get(name)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_text;

    #[test]
    fn a_field_is_the_child_of_that_name() {
        let tree = parse_text("int f(int a) { if (a > 1) return a; else return 0; }\n");
        let mut stack = vec![tree.root_node()];
        let names = [
            "declarator",
            "body",
            "condition",
            "consequence",
            "alternative",
            "left",
            "right",
            "operator",
            "type",
            "parameters",
        ];
        let mut seen = 0;
        while let Some(n) = stack.pop() {
            for name in names {
                assert_eq!(
                    n.field(name),
                    n.child_by_field_name(name),
                    "{name} of {}",
                    n.kind()
                );
                seen += n.field(name).is_some() as usize;
            }
            assert_eq!(n.field("no_such_field"), None);
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        assert!(seen > 8, "{seen}");
    }
}
