//! Human output: code frames for each racy access and its conflicts,
//! rendered with codespan-reporting.

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use racelens_analysis::{Confidence, Explanation, Incomplete, RaceReport};
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
            cwd: std::env::current_dir().ok(),
        }
    }

    pub fn add(&mut self, path: &Path, text: Arc<str>) {
        let shown = match &self.cwd {
            Some(c) => path.strip_prefix(c).unwrap_or(path).display().to_string(),
            None => path.display().to_string(),
        };
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

pub fn render(
    reports: &[RaceReport],
    incomplete: &[Incomplete],
    src: &Sources,
    schedules: &[Option<Explanation>],
) -> String {
    let config = term::Config::default();
    let mut out = Vec::new();
    for (i, r) in reports.iter().enumerate() {
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
        for cr in &r.creations {
            let (l, _) = src.position(&cr.site.file, cr.site.start);
            notes.push(format!(
                "thread `{}` is created at {}:{}",
                cr.thread,
                cr.site
                    .file
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                l + 1
            ));
        }
        if let Some(why) = &r.refuted {
            notes.push(format!(
                "the bounded interleaving check found no schedule: {why}"
            ));
        }
        if let Some(Some(e)) = schedules.get(i) {
            notes.push(format!("schedule:\n{}", e.text()));
        }
        let diag = diag
            .with_message(r.message())
            .with_code("data-race")
            .with_labels(labels)
            .with_notes(notes);
        let _ = term::emit_to_io_write(&mut out, &config, &src.simple, &diag);
    }
    for inc in incomplete {
        if let Some(id) = src.id(&inc.site.file) {
            let diag = Diagnostic::note()
                .with_message(format!(
                    "analysis incomplete for `{}`: {}",
                    inc.site.func, inc.reason
                ))
                .with_code("analysis-incomplete")
                .with_labels(vec![Label::primary(
                    id,
                    src.range(&inc.site.file, inc.site.start, inc.site.end),
                )]);
            let _ = term::emit_to_io_write(&mut out, &config, &src.simple, &diag);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// With `--explain`: the candidates the interleaving check refuted, one
/// line each ("file.c:12: `x` refuted: ordered by the flag `ready` (L8)").
pub fn refuted(refuted: &[(RaceReport, String)], src: &Sources) -> String {
    let mut s = String::new();
    for (r, why) in refuted {
        let (l, _) = src.position(&r.site.file, r.site.start);
        s.push_str(&format!(
            "racelens: refuted candidate: {}:{}: {} of `{}`: {why}\n",
            r.site
                .file
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            l + 1,
            racelens_analysis::report::kind_word(r.kind),
            r.var
        ));
    }
    s
}
