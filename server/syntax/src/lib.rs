//! Syntax layer of racelens: tree-sitter-c parsing, top-level item extraction,
//! macro expansion and lowering of function bodies to the concurrency IR.
//!
//! Nothing here knows about threads or locks; it only turns C text into small,
//! comparable values that the salsa layer can memoize. All spans produced by
//! [`lower`] are relative to the start of the function they belong to.

pub mod cpp;
pub mod errors;
pub mod fields;
pub mod ir;
pub mod items;
pub mod line_index;
pub mod lower;
pub mod macros;
pub mod memo;
pub mod misparse;
pub mod par;
pub mod parse;
pub mod preproc;
pub mod rename;
pub mod respan;
pub mod typecast;

pub use ir::*;
pub use items::{
    extract_items, extract_items_in, for_each_function, for_each_function_in, function_nodes,
    recover, FileItems, FunctionItem, GlobalItem, MacroDef, Recovery, StructDef,
};
pub use line_index::LineIndex;
pub use lower::{lower_definition, lower_function};
pub use macros::MacroTable;
pub use parse::{parse_text, Parsed};
