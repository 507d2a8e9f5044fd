//! Diagnostics: the races and incomplete analyses of a snapshot in LSP
//! terms, and the [`Publisher`] that works out what to send.
//!
//! A [`DiagnosticsJob`] is taken under the state's lock and computed off
//! the async runtime; it unwinds with `Cancelled` when a newer edit arrives.
//! Every open file is recomputed, since an edit in one file can add or
//! remove races in another.
//!
//! Publishing takes two passes. [`DiagnosticsJob::compute`] gives the
//! walk's races at once; [`DiagnosticsJob::compute_explained`] then runs the
//! bounded interleaving check on the races of open files (at most
//! [`EXPLAIN_LIMITS`]: a count of races and a state budget each, so the
//! result does not depend on timing) and adds each schedule as numbered
//! `relatedInformation` steps after the conflicts and creations. Refuted
//! candidates follow [`racelens_analysis::host::settle`]: dropped, or
//! downgraded to the may severity with the reason in the message.

use crate::convert::{Encoding, Files};
use crate::snapshot::Snapshot;
use racelens_analysis::baseline::Staleness;
use racelens_analysis::explain::{Budget, Checker};
use racelens_analysis::host::{settle, Settled};
use racelens_analysis::report::{kind_word, locks_text};
use racelens_analysis::{
    CheckLimits, Confidence, ConfigError, Conflict, Creation, Explanation, Incomplete, RaceReport,
    Verdict,
};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, NumberOrString, Position, Range,
    Uri,
};

pub const SOURCE: &str = "racelens";
pub const RACE_CODE: &str = "data-race";

/// The second pass checks at most this many races of open files per
/// revision, each within this budget (a few milliseconds); the rest keep
/// the walk's verdict and no schedule.
pub const EXPLAIN_LIMITS: CheckLimits = CheckLimits {
    races: 64,
    budget: Budget {
        build: 20_000,
        states: 20_000,
    },
};

/// The diagnostics of one file, with the document version they belong to.
/// Shared, not copied: the [`Publisher`] keeps what it sent to compare the
/// next revision with, and copying a large file's list on every publish
/// (mt-daapd: 1,122 diagnostics with 8,215 related locations) cost about
/// 1 ms per edit.
#[derive(Clone, Debug, PartialEq)]
pub struct FileDiagnostics {
    pub uri: Uri,
    pub version: Option<i32>,
    pub diagnostics: Arc<[Diagnostic]>,
}

/// Everything needed to compute one revision's diagnostics.
pub struct DiagnosticsJob {
    pub snapshot: Snapshot,
    pub enable: bool,
    /// The configuration file's own diagnostics, computed when it was read.
    pub config: Option<FileDiagnostics>,
    /// Threads for the parallel parts of a cold analysis (see
    /// `racelens_analysis::prefetch`): more than one only for the first
    /// diagnostics after a workspace load, since after an edit nearly
    /// everything is memoized and threads would only add overhead.
    pub workers: usize,
}

impl DiagnosticsJob {
    /// The diagnostics of every open file (and of the configuration file).
    pub fn compute(&self) -> Vec<FileDiagnostics> {
        self.diagnostics(None)
    }

    /// [`compute`](Self::compute) with the bounded interleaving check run
    /// on the races of open files within `limits`.
    pub fn compute_explained(&self, limits: CheckLimits) -> Vec<FileDiagnostics> {
        self.diagnostics(Some(limits))
    }

    fn diagnostics(&self, explain: Option<CheckLimits>) -> Vec<FileDiagnostics> {
        let snap = &self.snapshot;
        let mut per_file: BTreeMap<&Path, Vec<Diagnostic>> = snap
            .open
            .keys()
            .map(|p| (p.as_path(), Vec::new()))
            .collect();
        if self.enable {
            if self.workers > 1 {
                let open: Vec<&Path> = snap.open.keys().map(|p| p.as_path()).collect();
                snap.analysis.prefetch(Some(&open), self.workers);
            }
            let mut files = Files::new(&snap.analysis, &snap.open, snap.encoding);
            let t_start = std::time::Instant::now();
            // Only open files get diagnostics: only their locations are checked.
            let races = snap
                .analysis
                .races_in(snap.open.keys().map(|p| p.as_path()));
            let t_races = t_start.elapsed();
            let checker = explain
                .filter(|l| l.races > 0 && !races.is_empty())
                .map(|l| (l, Checker::new(&snap.analysis)));
            let mut checked = 0usize;
            let suppressions = racelens_analysis::suppress::Suppressions::of(&snap.analysis);
            for report in races {
                if suppressions.suppresses(&report) {
                    continue;
                }
                // A may race with no concrete object, only with a
                // speculative callback group, or under a striped lock on
                // both sides, is a weak candidate: shown only on request.
                if (report.unresolved || report.speculative || report.lock_array.is_some())
                    && report.confidence == Confidence::May
                    && !snap.show_unresolved
                {
                    continue;
                }
                let Some(list) = per_file.get_mut(report.site.file.as_path()) else {
                    continue;
                };
                let verdict = match &checker {
                    Some((limits, c)) if checked < limits.races => {
                        checked += 1;
                        c.check(&report, limits.budget)
                    }
                    _ => Verdict::Unknown,
                };
                let schedule = match &verdict {
                    Verdict::Witness(e) => Some(e),
                    _ => None,
                };
                if let Settled::Kept(report) = settle(report, &verdict) {
                    list.extend(
                        race_diagnostic(&report, snap.may_severity, &mut files).map(|d| {
                            match schedule {
                                Some(e) => with_schedule(d, e, &mut files),
                                None => d,
                            }
                        }),
                    );
                }
            }
            if crate::session::timing() {
                eprintln!(
                    "racelens: diagnostics: races {t_races:.1?}, conversion {:.1?}",
                    t_start.elapsed() - t_races
                );
            }
            for inc in snap.analysis.incomplete() {
                if let Some(list) = per_file.get_mut(inc.site.file.as_path()) {
                    list.extend(incomplete_diagnostic(&inc, &mut files));
                }
            }
        }
        let mut out: Vec<FileDiagnostics> = per_file
            .into_iter()
            .map(|(path, diagnostics)| {
                let open = &snap.open[path];
                FileDiagnostics {
                    uri: open.uri.clone(),
                    version: Some(open.version),
                    diagnostics: diagnostics.into(),
                }
            })
            .collect();
        out.extend(self.config.clone());
        out
    }
}

pub fn conflict_message(c: &Conflict) -> String {
    format!(
        "conflicting {} in thread `{}`, holding {}",
        kind_word(c.kind),
        c.thread,
        locks_text(&c.locks)
    )
}

pub fn creation_message(c: &Creation) -> String {
    format!("{} here", c.note())
}

/// One race as a diagnostic on its access, with the conflicting accesses
/// and the thread creations as related information.
pub fn race_diagnostic(
    report: &RaceReport,
    may_severity: DiagnosticSeverity,
    files: &mut Files,
) -> Option<Diagnostic> {
    let range = files.range(&report.site.file, report.site.start, report.site.end)?;
    let conflicts = report
        .conflicts
        .iter()
        .map(|c| (&c.site, conflict_message(c)));
    let creations = report
        .creations
        .iter()
        .map(|c| (&c.site, creation_message(c)));
    let related: Vec<DiagnosticRelatedInformation> = conflicts
        .chain(creations)
        .filter_map(|(site, message)| {
            Some(DiagnosticRelatedInformation {
                location: files.location(site)?,
                message,
            })
        })
        .collect();
    let severity = match report.confidence {
        Confidence::Must => DiagnosticSeverity::WARNING,
        Confidence::May => may_severity,
    };
    Some(Diagnostic {
        range,
        severity: Some(severity),
        code: Some(NumberOrString::String(RACE_CODE.into())),
        source: Some(SOURCE.into()),
        message: match &report.refuted {
            Some(why) => format!(
                "{} (the bounded interleaving check found no schedule: {why})",
                report.message()
            ),
            None => report.message(),
        } + &stale_note(report),
        related_information: (!related.is_empty()).then_some(related),
        data: report
            .stale
            .is_some()
            .then(|| serde_json::json!({ "stale": true })),
        ..Diagnostic::default()
    })
}

/// What a report from a function's last good version says about itself
/// (see analysis `baseline.rs`): rust-analyzer-like, the diagnostic stays
/// but is marked as possibly out of date until the function parses again.
pub fn stale_note(report: &RaceReport) -> String {
    let f = &report.site.func;
    match &report.stale {
        Some(Staleness::SyntaxErrors) => format!(
            " (possibly stale: `{f}` has syntax errors, so its last good version is shown)"
        ),
        Some(Staleness::TypedName(w)) => format!(
            " (possibly stale: `{f}` uses `{w}`, which nothing in the workspace declares, so its last good version is shown)"
        ),
        None => String::new(),
    }
}

/// Adds a schedule's steps, numbered, after the diagnostic's other
/// related information.
pub fn with_schedule(mut d: Diagnostic, e: &Explanation, files: &mut Files) -> Diagnostic {
    let steps = e.steps.iter().enumerate().filter_map(|(i, s)| {
        Some(DiagnosticRelatedInformation {
            location: files.location(&s.site)?,
            message: format!("step {}: {}", i + 1, s.message),
        })
    });
    let mut related = d.related_information.take().unwrap_or_default();
    related.extend(steps);
    d.related_information = (!related.is_empty()).then_some(related);
    d
}

fn incomplete_diagnostic(inc: &Incomplete, files: &mut Files) -> Option<Diagnostic> {
    Some(Diagnostic {
        range: files.range(&inc.site.file, inc.site.start, inc.site.end)?,
        severity: Some(DiagnosticSeverity::INFORMATION),
        code: Some(NumberOrString::String("analysis-incomplete".into())),
        source: Some(SOURCE.into()),
        message: format!(
            "analysis incomplete for `{}`: {}",
            inc.site.func, inc.reason
        ),
        ..Diagnostic::default()
    })
}

/// Problems in `racelens.toml`, from the error's position to the end of its line.
pub fn config_diagnostics(text: &str, errors: &[ConfigError], enc: Encoding) -> Vec<Diagnostic> {
    errors
        .iter()
        .map(|e| {
            let line_no = e.line.saturating_sub(1);
            let line = text.lines().nth(line_no as usize).unwrap_or("");
            let units = |s: &str| if enc.is_utf16() { s.encode_utf16().count() } else { s.len() } as u32;
            let prefix: String = line.chars().take(e.column.saturating_sub(1) as usize).collect();
            let (start, end) = (units(&prefix), units(line));
            Diagnostic {
                range: Range { start: Position { line: line_no, character: start }, end: Position { line: line_no, character: end.max(start) } },
                severity: Some(DiagnosticSeverity::ERROR),
                code: Some(NumberOrString::String("config".into())),
                source: Some(SOURCE.into()),
                message: format!("{} (using the default configuration)", e.message),
                ..Diagnostic::default()
            }
        })
        .collect()
}

/// What the client has been sent, to send only what changed.
#[derive(Default)]
pub struct Publisher {
    sent: HashMap<Uri, (Option<i32>, Arc<[Diagnostic]>)>,
}

impl Publisher {
    /// The notifications that bring the client to `files`: files whose
    /// diagnostics or version changed, and empty lists for files that are
    /// no longer reported (closed documents).
    pub fn changes(&mut self, files: Vec<FileDiagnostics>) -> Vec<FileDiagnostics> {
        let mut out = Vec::new();
        let mut current = HashMap::new();
        for f in files {
            let changed = match self.sent.get(&f.uri) {
                Some((version, diagnostics)) => {
                    *version != f.version || *diagnostics != f.diagnostics
                }
                None => f.version.is_some() || !f.diagnostics.is_empty(),
            };
            current.insert(f.uri.clone(), (f.version, f.diagnostics.clone()));
            if changed {
                out.push(f);
            }
        }
        for (uri, (_, diagnostics)) in self.sent.drain() {
            if !current.contains_key(&uri) && !diagnostics.is_empty() {
                out.push(FileDiagnostics {
                    uri,
                    version: None,
                    diagnostics: Arc::new([]),
                });
            }
        }
        self.sent = current;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(uri: &str, version: Option<i32>, n: usize) -> FileDiagnostics {
        let d = Diagnostic {
            message: "m".into(),
            ..Diagnostic::default()
        };
        FileDiagnostics {
            uri: uri.parse().unwrap(),
            version,
            diagnostics: vec![d; n].into(),
        }
    }

    #[test]
    fn publisher_sends_changes_versions_and_clears_closed_files() {
        let mut p = Publisher::default();
        assert_eq!(
            p.changes(vec![
                file("file:///a.c", Some(1), 1),
                file("file:///b.c", Some(1), 0)
            ])
            .len(),
            2
        );
        assert!(p
            .changes(vec![
                file("file:///a.c", Some(1), 1),
                file("file:///b.c", Some(1), 0)
            ])
            .is_empty());
        let sent = p.changes(vec![file("file:///b.c", Some(2), 0)]);
        assert_eq!(
            sent,
            vec![
                file("file:///b.c", Some(2), 0),
                file("file:///a.c", None, 0)
            ]
        );
        assert!(p.changes(vec![file("file:///t.toml", None, 0)]).is_empty());
    }

    #[test]
    fn must_races_warn_and_may_races_take_the_configured_severity() {
        use crate::convert::Files;
        use racelens_analysis::{AnalysisHost, Config, SiteRef};
        let path = std::path::PathBuf::from("/virtual/sev.c");
        let mut host = AnalysisHost::new(Config::default());
        host.set_file_text(&path, "int x;\nvoid f(void) { x = 1; }\n");
        let analysis = host.snapshot();
        let open = BTreeMap::new();
        let mut files = Files::new(&analysis, &open, Encoding::Utf16);
        let site = SiteRef {
            file: path.clone(),
            start: 22,
            end: 23,
            func: "f".into(),
        };
        let creation = Creation {
            thread: "t".into(),
            site: site.clone(),
            signal: false,
        };
        let mut report = RaceReport {
            var: "x".into(),
            owner: None,
            site,
            kind: racelens_syntax::AccessKind::Write,
            threads: vec!["t".into()],
            locks: vec![],
            confidence: Confidence::May,
            conflicts: vec![],
            creations: vec![creation],
            refuted: None,
            volatile: false,
            atomic: false,
            programs: vec![],
            unresolved: false,
            speculative: false,
            lock_array: None,
            stale: None,
        };
        let d = race_diagnostic(&report, DiagnosticSeverity::HINT, &mut files).unwrap();
        assert_eq!(d.severity, Some(DiagnosticSeverity::HINT));
        assert_eq!(
            d.range,
            Range {
                start: Position {
                    line: 1,
                    character: 15
                },
                end: Position {
                    line: 1,
                    character: 16
                }
            }
        );
        assert_eq!(
            d.related_information.unwrap()[0].message,
            "thread `t` is created here"
        );
        report.confidence = Confidence::Must;
        assert_eq!(
            race_diagnostic(&report, DiagnosticSeverity::HINT, &mut files)
                .unwrap()
                .severity,
            Some(DiagnosticSeverity::WARNING)
        );
    }

    #[test]
    fn config_errors_point_at_their_column() {
        let errs = [ConfigError {
            message: "bad".into(),
            line: 2,
            column: 3,
        }];
        let d = config_diagnostics("[locks]\né = 3\n", &errs, Encoding::Utf8);
        assert_eq!(
            d[0].range.start,
            Position {
                line: 1,
                character: 3
            }
        );
        assert_eq!(
            d[0].range.end,
            Position {
                line: 1,
                character: 6
            }
        );
    }
}
