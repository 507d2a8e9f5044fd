//! One view of a header that several units include under different
//! configurations.
//!
//! Each unit evaluates a header's conditionals with its own macros
//! ([`super::evaluate`]). A header has one view, so when the units disagree
//! the view keeps what **any** of them compiles: a line is blanked only when
//! every unit blanks it. A conditional chain that holds a line the units
//! disagree on keeps its own directive lines, so that its branches stay
//! alternatives of one `#if` (as an undecided conditional does) instead of
//! becoming two definitions in a row. It is counted as undecided, with the
//! reason.
//!
//! Invariants:
//! - Units that agree give exactly their common blanks back.
//! - Only whole lines are blanked, so offsets and lines stay valid.
//! - The chain kept for a disagreement is the innermost one holding the
//!   line: an include guard around it stays decided.

use super::FileBlanks;
use crate::preproc::lines;

/// A conditional chain: its directive lines, and where it starts and ends.
struct Chain {
    lines: Vec<(u32, u32)>,
    differs: bool,
    first_line: u32,
}

/// Is the whole span `s` blanked by `blank` (sorted, disjoint ranges)?
fn blanked(blank: &[(u32, u32)], s: (u32, u32)) -> bool {
    let i = blank.partition_point(|r| r.1 < s.1);
    blank.get(i).is_some_and(|r| r.0 <= s.0 && r.1 >= s.1)
}

/// The view of a header with text `text` that `variants` (one per
/// including unit, named by `units`) blank differently.
pub fn merge(text: &str, variants: &[&FileBlanks], units: &[String]) -> FileBlanks {
    let Some(first) = variants.first() else {
        return FileBlanks::default();
    };
    if variants.iter().all(|v| v.blank == first.blank) {
        return (*first).clone();
    }
    let mut out = FileBlanks {
        decided: variants.iter().map(|v| v.decided).min().unwrap_or(0),
        undecided: variants.iter().map(|v| v.undecided).max().unwrap_or(0),
        first_undecided: variants.iter().find_map(|v| v.first_undecided.clone()),
        ..FileBlanks::default()
    };
    let mut stack: Vec<Chain> = Vec::new();
    let mut done: Vec<Chain> = Vec::new();
    // Lines every unit blanks, in order; directive lines of the chains they
    // belong to are filtered at the end.
    let mut common: Vec<(u32, u32)> = Vec::new();
    for l in lines(text) {
        let span = (l.start as u32, l.end as u32);
        let all = variants.iter().all(|v| blanked(&v.blank, span));
        let any = variants.iter().any(|v| blanked(&v.blank, span));
        let word = l.directive.map(|(w, _)| w);
        if matches!(word, Some("if" | "ifdef" | "ifndef")) {
            stack.push(Chain {
                lines: Vec::new(),
                differs: false,
                first_line: l.line,
            });
        }
        let conditional = matches!(
            word,
            Some("if" | "ifdef" | "ifndef" | "elif" | "elifdef" | "elifndef" | "else" | "endif")
        );
        if let Some(top) = stack.last_mut() {
            if conditional {
                top.lines.push(span);
            }
            if all != any {
                top.differs = true;
            }
        }
        if all {
            common.push(span);
        }
        if word == Some("endif") {
            if let Some(top) = stack.pop() {
                done.push(top);
            }
        }
    }
    // An unterminated chain (a half-typed buffer) ends at the file's end.
    done.append(&mut stack);
    let mut keep: Vec<(u32, u32)> = Vec::new();
    for c in done.iter().filter(|c| c.differs) {
        out.undecided += 1;
        out.decided = out.decided.saturating_sub(1);
        let earlier = out
            .first_undecided
            .as_ref()
            .is_some_and(|(l, _)| *l < c.first_line);
        if !earlier {
            out.first_undecided = Some((
                c.first_line,
                format!(
                    "decided differently by the units that include it ({})",
                    units.join(", ")
                ),
            ));
        }
        keep.extend(&c.lines);
    }
    keep.sort_unstable();
    out.blank = common
        .into_iter()
        .filter(|s| keep.binary_search(s).is_err())
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blanks_of(text: &str, lines_blanked: &[usize]) -> FileBlanks {
        let mut b = FileBlanks::default();
        for l in lines(text) {
            if lines_blanked.contains(&(l.line as usize)) {
                b.blank.push((l.start as u32, l.end as u32));
            }
        }
        b
    }

    const HEADER: &str =
        "#ifndef H\n#define H\n#ifdef SAFE\nint a;\n#else\nint b;\n#endif\n#endif\n";

    #[test]
    fn agreeing_units_keep_their_blanks() {
        let one = blanks_of(HEADER, &[0, 2, 4, 5, 6, 7]);
        let m = merge(HEADER, &[&one, &one.clone()], &["a.c".into(), "b.c".into()]);
        assert_eq!(m, one);
    }

    #[test]
    fn disagreeing_units_keep_both_branches_and_the_inner_directives() {
        // a.c: SAFE defined (line 5 blanked); b.c: not (line 3 blanked).
        let a = blanks_of(HEADER, &[0, 2, 4, 5, 6, 7]);
        let b = blanks_of(HEADER, &[0, 2, 3, 4, 6, 7]);
        let m = merge(HEADER, &[&a, &b], &["a.c".into(), "b.c".into()]);
        // The guard (lines 0, 7) stays blanked; the inner chain stays whole.
        assert_eq!(m, blanks_of(HEADER, &[0, 7]).with_counts(&m));
        assert_eq!(m.undecided, 1);
        let (line, why) = m.first_undecided.clone().unwrap();
        assert_eq!(line, 2);
        assert!(why.contains("a.c, b.c"), "{why}");
    }

    impl FileBlanks {
        fn with_counts(mut self, other: &FileBlanks) -> FileBlanks {
            self.decided = other.decided;
            self.undecided = other.undecided;
            self.first_undecided = other.first_undecided.clone();
            self
        }
    }
}
