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
    /// The text defines `main`, but the parse lost the definition: the file
    /// was analysed without it (as a library when nothing else has `main`).
    LostMain,
    /// A function definition whose name the parser could not read: its
    /// body was not analysed.
    LostFunction,
    /// The build configuration (compile_commands.json, declared programs)
    /// has a problem; the defaults are used for what it could not say.
    Build,
    /// A name two units define: programs were formed once per definition.
    Link,
    /// Units that no program uses, analysed as a library.
    Library,
    /// Conditionals whose condition racelens could not decide: all their
    /// branches were analysed.
    Conditional,
}

impl Kind {
    /// The notification descriptor id (SARIF) and the `kind` (JSON).
    pub fn id(self) -> &'static str {
        match self {
            Kind::SyntaxError => "syntax-error",
            Kind::NotC => "not-c-source",
            Kind::Incomplete => "analysis-incomplete",
            Kind::LostMain => "main-lost",
            Kind::LostFunction => "function-lost",
            Kind::Build => "build-config",
            Kind::Link => "link-ambiguity",
            Kind::Library => "library-mode",
            Kind::Conditional => "conditional-undecided",
        }
    }

    /// SARIF notification level.
    pub fn level(self) -> &'static str {
        match self {
            Kind::SyntaxError | Kind::NotC | Kind::LostMain | Kind::LostFunction | Kind::Build => {
                "warning"
            }
            Kind::Incomplete | Kind::Link | Kind::Library | Kind::Conditional => "note",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Kind::SyntaxError => "The file has syntax errors and was analysed as far as it parses.",
            Kind::NotC => "An input named on the command line is not C source and was skipped.",
            Kind::Incomplete => {
                "The analysis of a function stopped at a budget; races involving it may be missed."
            }
            Kind::LostMain => {
                "The file defines main, but the parser lost the definition; the program was analysed without it."
            }
            Kind::LostFunction => {
                "A function is defined here, but the parser could not read its name; its body was not analysed."
            }
            Kind::Build => "The build configuration has a problem; defaults were used where it could not be read.",
            Kind::Link => "Two units define one name; each program using it was analysed once per definition.",
            Kind::Library => "Units that no program uses were analysed in library mode.",
            Kind::Conditional => {
                "Conditionals whose condition could not be decided; every branch was analysed."
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
pub fn syntax_error(file: &Path, tree: &Tree, src: &str) -> Option<Notice> {
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    // Depth first, in order: the first ERROR or MISSING node that is an
    // error of the C text (a macro's type argument is not).
    let mut cursor = root.walk();
    let mut found = None;
    'walk: loop {
        let n = cursor.node();
        if n.is_error() || n.is_missing() {
            if racelens_syntax::errors::is_syntax_error(n, src) {
                found = Some(n);
                break;
            }
        } else if n.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    let n = found?;
    Some(Notice {
        kind: Kind::SyntaxError,
        file: file.to_path_buf(),
        span: Some((n.start_byte(), n.end_byte().max(n.start_byte()))),
        message: "syntax error, analysed in part".to_string(),
        func: None,
    })
}

/// Where the text defines `main` (`int main(...) {`), if it does: a word
/// `main` after a type word on its line, a parameter list, then `{`.
pub fn main_in_text(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut from = 0;
    while let Some(at) = text[from..].find("main").map(|i| i + from) {
        from = at + 4;
        if at > 0 && word(b[at - 1]) || b.get(at + 4).is_some_and(|&c| word(c)) {
            continue;
        }
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let mut line = &text[start..at];
        if line.trim().is_empty() && start > 0 {
            // GNU style: the type on the line above (`int\nmain (void)`).
            let above = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            line = &text[above..start - 1];
        }
        let typed = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| matches!(w, "int" | "void"));
        if !typed || line.contains(['=', ';', '(', '"']) {
            continue;
        }
        let rest = text[at + 4..].trim_start();
        if !rest.starts_with('(') {
            continue;
        }
        let Some(close) = rest.find(')') else {
            continue;
        };
        if rest[close + 1..].trim_start().starts_with('{') {
            return Some(at);
        }
    }
    None
}

/// A warning when `text` defines `main` but the parsed items do not.
pub fn lost_main(file: &Path, text: &str, defined: bool) -> Option<Notice> {
    if defined {
        return None;
    }
    let at = main_in_text(text)?;
    Some(Notice {
        kind: Kind::LostMain,
        file: file.to_path_buf(),
        span: Some((at, at + 4)),
        message: "`main` is defined here but the parser lost its definition; analysed without it"
            .to_string(),
        func: None,
    })
}

/// A warning for a function definition whose name could not be read.
pub fn lost_function(file: &Path, span: (usize, usize)) -> Notice {
    Notice {
        kind: Kind::LostFunction,
        file: file.to_path_buf(),
        span: Some(span),
        message:
            "a function is defined here but its name could not be read; its body is not analysed"
                .to_string(),
        func: None,
    }
}

/// A problem with the build configuration (no file of its own).
pub fn build(message: String) -> Notice {
    Notice {
        kind: Kind::Build,
        file: PathBuf::new(),
        span: None,
        message,
        func: None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_definition_of_main_not_its_mentions() {
        let src = "// call main() later\nint x = main_count;\nstatic int main_(void);\nint\nmain(int argc, char **argv)\n{ return 0; }\n";
        assert_eq!(main_in_text(src).map(|at| &src[at..at + 4]), Some("main"));
        assert!(main_in_text(src).unwrap() > src.find("int\n").unwrap());
        for none in [
            "int main(void);\n",
            "x = main(1);\n",
            "void *worker(void *p) { return p; }\n",
        ] {
            assert_eq!(main_in_text(none), None, "{none}");
        }
        assert!(lost_main(Path::new("a.c"), "int main(void) { }", true).is_none());
        let n = lost_main(Path::new("a.c"), "int main(void) { }", false).unwrap();
        assert_eq!(n.kind, Kind::LostMain);
    }
}
