//! Notices: what `check` has to say about its own run rather than about the
//! program (syntax errors, inputs that are not C, analyses cut short by a
//! budget). They are not results: SARIF puts them in
//! `invocations[0].toolExecutionNotifications`, JSON in `notices`, and they
//! never change the exit code.

use racelens_analysis::Incomplete;
use std::path::{Path, PathBuf};
use tree_sitter::Tree;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The file has syntax errors; it was analysed as far as it parses.
    SyntaxError,
    /// A file named on the command line is not C source; it was skipped.
    NotC,
    /// A function's analysis stopped at a budget.
    Incomplete,
}

impl Kind {
    /// The notification descriptor id (SARIF) and the `kind` (JSON).
    pub fn id(self) -> &'static str {
        match self {
            Kind::SyntaxError => "syntax-error",
            Kind::NotC => "not-c-source",
            Kind::Incomplete => "analysis-incomplete",
        }
    }

    /// SARIF notification level.
    pub fn level(self) -> &'static str {
        match self {
            Kind::SyntaxError | Kind::NotC => "warning",
            Kind::Incomplete => "note",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Kind::SyntaxError => "The file has syntax errors and was analysed as far as it parses.",
            Kind::NotC => "An input named on the command line is not C source and was skipped.",
            Kind::Incomplete => {
                "The analysis of a function stopped at a budget; races involving it may be missed."
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Notice {
    pub kind: Kind,
    pub file: PathBuf,
    /// Byte range in the file, when the notice points into it.
    pub span: Option<(usize, usize)>,
    pub message: String,
    /// The function, for [`Kind::Incomplete`].
    pub func: Option<String>,
}

/// The first syntax error of a parsed file, if it has any.
pub fn syntax_error(file: &Path, tree: &Tree) -> Option<Notice> {
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    // Depth first, in order: the first ERROR or MISSING node.
    let mut cursor = root.walk();
    let mut found = None;
    'walk: loop {
        let n = cursor.node();
        if n.is_error() || n.is_missing() {
            found = Some(n);
            break;
        }
        if n.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    let n = found.unwrap_or(root);
    Some(Notice {
        kind: Kind::SyntaxError,
        file: file.to_path_buf(),
        span: Some((n.start_byte(), n.end_byte().max(n.start_byte()))),
        message: "syntax error, analysed in part".to_string(),
        func: None,
    })
}

pub fn not_c(file: PathBuf, why: String) -> Notice {
    Notice {
        kind: Kind::NotC,
        file,
        span: None,
        message: why,
        func: None,
    }
}

pub fn incomplete(inc: &Incomplete) -> Notice {
    Notice {
        kind: Kind::Incomplete,
        file: inc.site.file.clone(),
        span: Some((inc.site.start, inc.site.end)),
        message: format!(
            "analysis incomplete for `{}`: {}",
            inc.site.func, inc.reason
        ),
        func: Some(inc.site.func.clone()),
    }
}
