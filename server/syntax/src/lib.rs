//! Syntax layer of racelens: tree-sitter-c parsing, top-level item extraction,
//! macro expansion and lowering of function bodies to the concurrency IR.
//!
//! Nothing here knows about threads or locks; it only turns C text into small,
//! comparable values that the salsa layer can memoize. All spans produced by
//! [`lower`] are relative to the start of the function they belong to.

pub mod ir;
pub mod items;
pub mod line_index;
pub mod lower;
pub mod macros;
pub mod parse;
pub mod preproc;

pub use ir::*;
pub use items::{
    extract_items, for_each_function, function_nodes, FileItems, FunctionItem, GlobalItem,
    MacroDef, StructDef,
};
pub use line_index::LineIndex;
pub use lower::{lower_definition, lower_function};
pub use macros::MacroTable;
pub use parse::{parse_text, Parsed};
