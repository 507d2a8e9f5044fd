//! One configuration of a file's preprocessor conditionals, for recovering
//! definitions that tree-sitter's error recovery tore apart.
//!
//! tree-sitter-c parses the unpreprocessed text, so a function whose
//! `#if`/`#else` branches each open a block (`#ifdef A if (x) { #else
//! if (y) { #endif`) has unbalanced braces and its body ends up flattened at
//! the top level. [`blank_inactive`] keeps the first branch of every
//! conditional (the `#else` branch of `#if 0`) and replaces the other
//! branches and all conditional directive lines by spaces. Newlines and
//! every byte offset are unchanged, so a tree of the blanked text has the
//! spans of the original. The scan is one linear pass.

use std::borrow::Cow;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Branch {
    /// The current branch is kept.
    Keeping,
    /// No branch kept yet (`#if 0`): the next `#elif`/`#else` is kept.
    Pending,
    /// A branch was kept already: the rest is blanked.
    Done,
}

/// Maximum conditional nesting tracked; deeper directives are only blanked.
const MAX_NESTING: usize = 256;

/// Might `b` hold a directive whose word starts with one of `words`? A
/// quick superset test: any `#` followed by blanks and such a word.
pub fn may_have_directive(b: &[u8], words: &[&[u8]]) -> bool {
    b.iter().enumerate().any(|(i, &c)| {
        if c != b'#' {
            return false;
        }
        let mut j = i + 1;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        words.iter().any(|w| b[j..].starts_with(w))
    })
}

/// Might `b` hold a conditional directive (`#if`, `#ifdef`, `#elif`,
/// `#else`, `#endif`, ...)?
fn may_have_conditional(b: &[u8]) -> bool {
    may_have_directive(b, &[b"if", b"el", b"endif"])
}

/// One logical line of C text: a preprocessor directive runs through its
/// backslash continuations. Lines inside a block comment are never
/// directives.
pub(crate) struct Line<'a> {
    /// Byte range, without the final newline.
    pub start: usize,
    pub end: usize,
    /// 0-based line number of `start`.
    pub line: u32,
    /// For a directive: its word (`if`, `define`, ...) and the text after it.
    pub directive: Option<(&'a str, &'a str)>,
}

/// The logical lines of `src`, in order (see [`Line`]).
pub(crate) fn lines(src: &str) -> impl Iterator<Item = Line<'_>> {
    let b = src.as_bytes();
    let (mut i, mut in_comment, mut line, mut counted_to) = (0usize, false, 0u32, 0usize);
    std::iter::from_fn(move || {
        if i >= b.len() {
            return None;
        }
        line += b[counted_to..i].iter().filter(|&&c| c == b'\n').count() as u32;
        counted_to = i;
        let start = i;
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        let directive = !in_comment && b.get(j) == Some(&b'#');
        let mut end = i;
        loop {
            while end < b.len() && b[end] != b'\n' {
                end += 1;
            }
            let cont = directive
                && end > start
                && (b[end - 1] == b'\\'
                    || (b[end - 1] == b'\r' && end >= 2 && b[end - 2] == b'\\'));
            if cont && end < b.len() {
                end += 1;
            } else {
                break;
            }
        }
        in_comment = scan_comments(&b[start..end], in_comment);
        i = end + 1;
        let directive = directive.then(|| {
            let mut k = j + 1;
            while k < end && (b[k] == b' ' || b[k] == b'\t') {
                k += 1;
            }
            let w0 = k;
            while k < end && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            (&src[w0..k], &src[k..end])
        });
        Some(Line {
            start,
            end,
            line,
            directive,
        })
    })
}

/// `text` with `ranges` replaced by spaces; newlines (and so every offset
/// and line) are kept. Ranges cover whole lines, so no multi-byte
/// character is cut.
pub(crate) fn blank(text: &str, ranges: impl IntoIterator<Item = (usize, usize)>) -> String {
    let mut out = text.as_bytes().to_vec();
    for (s, e) in ranges {
        let e = e.min(out.len());
        for c in out.get_mut(s..e).into_iter().flatten() {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `src` with the inactive branches of its conditionals and the conditional
/// directive lines blanked. Borrowed when the text has no conditional.
pub fn blank_inactive(src: &str) -> Cow<'_, str> {
    let b = src.as_bytes();
    if !may_have_conditional(b) {
        // Nothing to blank (a preprocessed file): skip the line scan, which
        // every edit of a large file would pay.
        return Cow::Borrowed(src);
    }
    // Ranges to blank, in order.
    let mut blank: Vec<(usize, usize)> = Vec::new();
    let mut stack: Vec<(bool, Branch)> = Vec::new(); // (parent active, branch)
    let mut active = true;
    for l in lines(src) {
        let (line_start, end) = (l.start, l.end);
        let Some((word, rest)) = l.directive else {
            if !active {
                blank.push((line_start, end));
            }
            continue;
        };
        match word {
            "if" | "ifdef" | "ifndef" => {
                let branch = if word == "if" && is_false(rest) {
                    Branch::Pending
                } else {
                    Branch::Keeping
                };
                if stack.len() < MAX_NESTING {
                    stack.push((active, branch));
                } else {
                    stack.push((false, Branch::Done));
                }
            }
            "elif" | "elifdef" | "elifndef" | "else" => {
                if let Some(top) = stack.last_mut() {
                    top.1 = match top.1 {
                        Branch::Pending if word == "elif" && is_false(rest) => Branch::Pending,
                        Branch::Pending => Branch::Keeping,
                        _ => Branch::Done,
                    };
                }
            }
            "endif" => {
                stack.pop();
            }
            _ => {
                // `#define`, `#include`, ...: kept when active.
                if !active {
                    blank.push((line_start, end));
                }
                continue;
            }
        }
        blank.push((line_start, end));
        active = stack
            .last()
            .map(|&(parent, br)| parent && br == Branch::Keeping)
            .unwrap_or(true);
    }
    if blank.is_empty() {
        return Cow::Borrowed(src);
    }
    Cow::Owned(self::blank(src, blank))
}

/// Whether an `#if`/`#elif` condition is the literal `0`.
fn is_false(cond: &str) -> bool {
    let c = cond.trim_start();
    let c = c.split("//").next().unwrap_or("");
    let c = c.split("/*").next().unwrap_or("");
    matches!(c.trim(), "0" | "(0)")
}

/// Whether a block comment is still open at the end of `line`, given whether
/// one was open at its start. Strings and character literals are skipped.
pub(crate) fn scan_comments(line: &[u8], mut in_comment: bool) -> bool {
    let mut i = 0;
    while i < line.len() {
        if in_comment {
            if line[i] == b'*' && line.get(i + 1) == Some(&b'/') {
                in_comment = false;
                i += 2;
                continue;
            }
            i += 1;
            continue;
        }
        match line[i] {
            b'/' if line.get(i + 1) == Some(&b'*') => {
                in_comment = true;
                i += 2;
                continue;
            }
            b'/' if line.get(i + 1) == Some(&b'/') => return false,
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < line.len() && line[i] != q {
                    if line[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    in_comment
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines left with text, trimmed.
    fn kept_lines(out: &str) -> Vec<&str> {
        out.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect()
    }

    #[test]
    fn text_without_conditionals_is_borrowed() {
        let src =
            "#include <x.h>\n#define N 4\nint a[N]; // #warning\nint f(void) { return '#'; }\n";
        assert!(matches!(blank_inactive(src), Cow::Borrowed(_)));
        // Blanks between `#` and the word still make a directive.
        let src = "#  ifdef A\na\n#\telse\nb\n#  endif\n";
        assert_eq!(kept_lines(&blank_inactive(src)), ["a"]);
    }

    #[test]
    fn keeps_first_branch_and_offsets() {
        let src =
            "int f(void) {\n#ifdef A\n  if (a) {\n#else\n  if (b) {\n#endif\n    x++;\n  }\n}\n";
        let out = blank_inactive(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out.lines().map(str::trim).collect::<Vec<_>>(),
            [
                "int f(void) {",
                "",
                "if (a) {",
                "",
                "",
                "",
                "x++;",
                "}",
                "}"
            ]
        );
    }

    #[test]
    fn if_zero_keeps_else_and_nesting() {
        let src = "#if 0\na\n#ifdef X\nb\n#endif\n#elif 0\nc\n#else\nd\n#ifdef Y\ne\n#else\nf\n#endif\n#endif\ng\n";
        let out = blank_inactive(src);
        let kept = kept_lines(&out);
        assert_eq!(kept, ["d", "e", "g"]);
    }

    #[test]
    fn directives_in_comments_and_continuations() {
        let src = "/*\n#else\n*/\n#if defined(A) && \\\n  defined(B)\nx\n#else\ny\n#endif\n";
        let out = blank_inactive(src);
        let kept = kept_lines(&out);
        assert_eq!(kept, ["/*", "#else", "*/", "x"]);
        assert!(matches!(blank_inactive("int x;\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn garbage_does_not_panic() {
        for s in [
            "#",
            "#else",
            "#endif\n#endif",
            "\\\n#if\\",
            "#if 0\n\u{e9}\u{1f600}",
            "/*#if",
        ] {
            let out = blank_inactive(s);
            assert_eq!(out.len(), s.len());
        }
    }
}
