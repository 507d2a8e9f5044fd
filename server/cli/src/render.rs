//! Human output: code frames for each racy access and its conflicts,
//! rendered with codespan-reporting.

use crate::check::Finding;
use crate::notices::{Kind, Notice};
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use racelens_analysis::{Confidence, RaceReport};
use racelens_syntax::LineIndex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The texts of the analysed files, for positions and code frames.
pub struct Sources {
    files: BTreeMap<PathBuf, (Arc<str>, LineIndex, usize)>,
    simple: SimpleFiles<String, Arc<str>>,
    cwd: Option<PathBuf>,
}

impl Sources {
    pub fn new() -> Self {
        Sources {
            files: BTreeMap::new(),
            simple: SimpleFiles::new(),
            cwd: std::env::current_dir()
                .ok()
                .map(|c| std::fs::canonicalize(&c).unwrap_or(c)),
        }
    }

    pub fn add(&mut self, path: &Path, text: Arc<str>) {
        let shown = self.shown(path);
        let id = self.simple.add(shown, text.clone());
        let li = LineIndex::new(&text);
        self.files.insert(path.to_path_buf(), (text, li, id));
    }

    /// Zero-based line and UTF-16 column of a byte offset.
    pub fn position(&self, path: &Path, offset: usize) -> (u32, u32) {
        match self.files.get(path) {
            Some((t, li, _)) => li.position(t, offset, true),
            None => (0, 0),
        }
    }

    /// A path as shown to people: relative to the current folder (with
    /// `..` where needed), absolute when they share no folder but the root.
    pub fn shown(&self, path: &Path) -> String {
        match &self.cwd {
            Some(c) => relative(path, c),
            None => path.display().to_string(),
        }
    }

    /// The text of an analysed file.
    pub fn text(&self, path: &Path) -> Option<&str> {
        self.files.get(path).map(|f| &*f.0)
    }

    /// One-based line and column in code points of a byte offset (the
    /// unit of the human output, as in codespan's code frames).
    pub fn line_col_chars(&self, path: &Path, offset: usize) -> (u32, u32) {
        match self.files.get(path) {
            Some((t, li, _)) => {
                let (l, c) = li.position(t, offset.min(t.len()), false);
                (l + 1, c + 1)
            }
            None => (0, 0),
        }
    }

    fn id(&self, path: &Path) -> Option<usize> {
        self.files.get(path).map(|f| f.2)
    }

    fn range(&self, path: &Path, start: usize, end: usize) -> std::ops::Range<usize> {
        let len = self.files.get(path).map(|f| f.0.len()).unwrap_or(0);
        let s = racelens_syntax::line_index::floor_char_boundary(
            self.files.get(path).map(|f| &*f.0).unwrap_or(""),
            start.min(len),
        );
        let e = racelens_syntax::line_index::floor_char_boundary(
            self.files.get(path).map(|f| &*f.0).unwrap_or(""),
            end.min(len),
        )
        .max(s);
        s..e
    }
}

/// The human report: a code frame per race and per incomplete analysis,
/// one line per other notice. With `quiet`, the notice lines only.
pub fn render(
    findings: &[&Finding],
    notices: &[Notice],
    src: &Sources,
    color: bool,
    quiet: bool,
) -> Vec<u8> {
    let config = term::Config::default();
    let mut out = if color {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    for n in notices.iter().filter(|n| n.kind != Kind::Incomplete) {
        notice_line(&mut out, n, src);
    }
    if quiet {
        return out.into_inner();
    }
    for f in findings {
        let r = &f.report;
        let Some(id) = src.id(&r.site.file) else {
            continue;
        };
        let mut labels =
            vec![
                Label::primary(id, src.range(&r.site.file, r.site.start, r.site.end)).with_message(
                    format!(
                        "{} of `{}`",
                        racelens_analysis::report::kind_word(r.kind),
                        r.var
                    ),
                ),
            ];
        for c in &r.conflicts {
            if let Some(cid) = src.id(&c.site.file) {
                labels.push(
                    Label::secondary(cid, src.range(&c.site.file, c.site.start, c.site.end))
                        .with_message(format!(
                            "conflicting {} in thread `{}`, holding {}",
                            racelens_analysis::report::kind_word(c.kind),
                            c.thread,
                            racelens_analysis::report::locks_text(&c.locks)
                        )),
                );
            }
        }
        let diag = if r.confidence == Confidence::Must {
            Diagnostic::warning()
        } else {
            Diagnostic::note()
        };
        let mut notes = vec![format!(
            "confidence: {}",
            if r.confidence == Confidence::Must {
                "must"
            } else {
                "may"
            }
        )];
        // One note per thread and creation site, in file and line order.
        let mut created: Vec<(String, u32, String)> = r
            .creations
            .iter()
            .map(|cr| {
                let (l, _) = src.line_col_chars(&cr.site.file, cr.site.start);
                (src.shown(&cr.site.file), l, cr.note())
            })
            .collect();
        created.sort();
        created.dedup();
        for (file, line, note) in created {
            notes.push(format!("{note} at {file}:{line}"));
        }
        if let Some(why) = &r.refuted {
            notes.push(format!(
                "the bounded interleaving check found no schedule: {why}"
            ));
        }
        if let Some(e) = &f.schedule {
            notes.push(format!("schedule:\n{}", e.text()));
        }
        let diag = diag
            .with_message(r.message())
            .with_code("data-race")
            .with_labels(labels)
            .with_notes(notes);
        let _ = term::emit_to_write_style(&mut out, &config, &src.simple, &diag);
    }
    for inc in notices.iter().filter(|n| n.kind == Kind::Incomplete) {
        if let (Some(id), Some((s, e))) = (src.id(&inc.file), inc.span) {
            let diag = Diagnostic::note()
                .with_message(inc.message.clone())
                .with_code("analysis-incomplete")
                .with_labels(vec![Label::primary(id, src.range(&inc.file, s, e))]);
            let _ = term::emit_to_write_style(&mut out, &config, &src.simple, &diag);
        }
    }
    out.into_inner()
}

/// `warning: FILE:LINE:COL: message`, "warning:" coloured as gcc does.
fn notice_line(out: &mut termcolor::Buffer, n: &Notice, src: &Sources) {
    use std::io::Write;
    use termcolor::{Color, ColorSpec, WriteColor};
    let level = n.kind.level();
    let color = if level == "warning" {
        Color::Magenta
    } else {
        Color::Cyan
    };
    let _ = out.set_color(ColorSpec::new().set_fg(Some(color)).set_bold(true));
    let _ = write!(out, "{level}:");
    let _ = out.reset();
    let place = match n.span {
        Some((s, _)) => {
            let (l, c) = src.line_col_chars(&n.file, s);
            format!("{}:{l}:{c}", src.shown(&n.file))
        }
        None if n.file.as_os_str().is_empty() => {
            let _ = writeln!(out, " {}", n.message);
            return;
        }
        None => src.shown(&n.file),
    };
    let _ = writeln!(out, " {place}: {}", n.message);
}

/// The summary line, its count in bold when coloured.
pub fn summary(text: &str, color: bool) -> Vec<u8> {
    use std::io::Write;
    use termcolor::{ColorSpec, WriteColor};
    let mut out = if color {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    let _ = out.set_color(ColorSpec::new().set_bold(true));
    let _ = write!(out, "{text}");
    let _ = out.reset();
    let _ = writeln!(out);
    out.into_inner()
}

/// A report's thread creation sites, each once, in file and offset order.
pub fn creations(r: &RaceReport) -> Vec<&racelens_analysis::Creation> {
    let mut list: Vec<&racelens_analysis::Creation> = r.creations.iter().collect();
    list.sort_by(|a, b| {
        (&a.site.file, a.site.start, &a.thread).cmp(&(&b.site.file, b.site.start, &b.thread))
    });
    list.dedup_by(|a, b| {
        a.site.file == b.site.file && a.site.start == b.site.start && a.thread == b.thread
    });
    list
}

/// `path` relative to `base` (both absolute), with `..` where needed; a
/// path that would climb more than two levels (a file in `/tmp` seen from
/// a project folder) stays absolute, as it is easier to read.
pub fn relative(path: &Path, base: &Path) -> String {
    use std::path::Component;
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common <= 1 || !path.is_absolute() || b.len() - common > 2 {
        return path.display().to_string();
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    out.display().to_string()
}

/// With `--explain`: the candidates the interleaving check refuted, one
/// line each ("file.c:12: `x` refuted: ordered by the flag `ready` (L8)").
pub fn refuted(refuted: &[(RaceReport, String)], src: &Sources) -> String {
    let mut s = String::new();
    for (r, why) in refuted {
        let (l, _) = src.position(&r.site.file, r.site.start);
        s.push_str(&format!(
            "racelens: refuted candidate: {}:{}: {} of `{}`: {why}\n",
            src.shown(&r.site.file),
            l + 1,
            racelens_analysis::report::kind_word(r.kind),
            r.var
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::relative;
    use std::path::Path;

    #[test]
    fn paths_are_relative_to_the_current_folder_unless_far_away() {
        let base = Path::new("/home/u/proj");
        assert_eq!(relative(Path::new("/home/u/proj/src/a.c"), base), "src/a.c");
        assert_eq!(
            relative(Path::new("/home/u/other/a.c"), base),
            "../other/a.c"
        );
        assert_eq!(relative(Path::new("/home/x/a.c"), base), "../../x/a.c");
        assert_eq!(relative(Path::new("/tmp/a.c"), base), "/tmp/a.c");
        assert_eq!(relative(Path::new("a.c"), base), "a.c");
    }
}
