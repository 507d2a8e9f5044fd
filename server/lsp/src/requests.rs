//! Answers to requests on a snapshot: hover, quick fixes and the
//! `racelens.explain` command.
//!
//! These run off the async runtime, on a snapshot taken with the open
//! files' texts, so every range is computed against the text the analysis
//! saw. They may unwind with `Cancelled` when an edit arrives.

use crate::convert::Files;
use crate::diagnostics::{conflict_message, race_diagnostic, SOURCE};
use crate::snapshot::Snapshot;
use racelens_analysis::fixes::{quick_fixes, Fix};
use racelens_analysis::suppress::{suppress_fix, Suppressions};
use racelens_analysis::{explain, hover, RaceReport};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, Hover, HoverContents,
    MarkupContent, MarkupKind, TextEdit, Uri, WorkspaceEdit,
};

pub const EXPLAIN_COMMAND: &str = "racelens.explain";

pub fn hover(snap: &Snapshot, path: &Path, offset: usize) -> Option<Hover> {
    let markdown = hover::hover(&snap.analysis, path, offset)?;
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown,
        }),
        range: None,
    })
}

/// Quick fixes for the races whose access overlaps `start..=end`. Each
/// action carries the client's matching diagnostics, or ours when the
/// client sent none.
pub fn code_actions(
    snap: &Snapshot,
    path: &Path,
    start: usize,
    end: usize,
    context: &[Diagnostic],
) -> Vec<CodeActionOrCommand> {
    let mut files = Files::new(&snap.analysis, &snap.open, snap.encoding);
    let mut actions = Vec::new();
    let suppressions = Suppressions::of(&snap.analysis);
    let text = snap.analysis.file_text(path);
    for report in snap
        .analysis
        .races_in([path])
        .iter()
        .filter(|r| r.site.start <= end && start <= r.site.end)
        .filter(|r| !suppressions.suppresses(r))
    {
        let mut fixes = quick_fixes(&snap.analysis, report);
        // Last: a comment that suppresses the race (never preferred).
        fixes.extend(text.as_deref().map(|t| suppress_fix(t, report)));
        if fixes.is_empty() {
            continue;
        }
        let range = files.range(path, report.site.start, report.site.end);
        let mut diagnostics: Vec<Diagnostic> = context
            .iter()
            .filter(|d| d.source.as_deref() == Some(SOURCE) && Some(d.range) == range)
            .cloned()
            .collect();
        if diagnostics.is_empty() {
            diagnostics.extend(race_diagnostic(report, snap.may_severity, &mut files));
        }
        for fix in fixes {
            let Some(edit) = workspace_edit(&fix, &mut files) else {
                continue;
            };
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(diagnostics.clone()),
                edit: Some(edit),
                is_preferred: Some(fix.is_preferred),
                ..CodeAction::default()
            }));
        }
    }
    actions
}

/// A fix's byte-offset edits as LSP text edits, grouped by file.
fn workspace_edit(fix: &Fix, files: &mut Files) -> Option<WorkspaceEdit> {
    let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    for e in &fix.edits {
        let range = files.range(&e.file, e.start, e.end)?;
        changes
            .entry(files.uri(&e.file)?)
            .or_default()
            .push(TextEdit {
                range,
                new_text: e.new_text.clone(),
            });
    }
    Some(WorkspaceEdit {
        changes: Some(changes),
        ..WorkspaceEdit::default()
    })
}

/// The race at `offset` (the narrowest access containing it, else the
/// first on the same line) with its schedule, as the `racelens.explain`
/// answer; `None` when there is no race there.
pub fn explain(snap: &Snapshot, path: &Path, offset: usize) -> Option<Value> {
    let races = snap.analysis.races_in([path]);
    let mut files = Files::new(&snap.analysis, &snap.open, snap.encoding);
    let in_file = || races.iter();
    let line = files.range(path, offset, offset)?.start.line;
    let report = in_file()
        .filter(|r| r.site.start <= offset && offset <= r.site.end)
        .min_by_key(|r| r.site.end - r.site.start)
        .or_else(|| {
            in_file().find(|r| {
                files
                    .range(path, r.site.start, r.site.start)
                    .is_some_and(|rg| rg.start.line == line)
            })
        })?;
    let explanation = explain::explain(&snap.analysis, report);
    let steps: Vec<Value> = explanation
        .iter()
        .flat_map(|e| &e.steps)
        .filter_map(|s| {
            let loc = files.location(&s.site)?;
            Some(json!({ "message": s.message, "uri": loc.uri, "range": loc.range }))
        })
        .collect();
    let text = match &explanation {
        Some(e) => e.text(),
        None => unexplained_text(report, &mut files),
    };
    Some(json!({ "race": report.message(), "steps": steps, "text": text }))
}

/// When the schedule search finds nothing: the accesses and creations
/// involved, one per line.
fn unexplained_text(report: &RaceReport, files: &mut Files) -> String {
    let mut at = |site: &racelens_analysis::SiteRef| {
        let line = files
            .range(&site.file, site.start, site.start)
            .map(|r| r.start.line + 1)
            .unwrap_or(0);
        format!(
            "{}:{line}",
            site.file
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        )
    };
    let mut text = format!(
        "No schedule found within the search bound. Accesses involved:\n- {} ({})\n",
        report.message(),
        at(&report.site)
    );
    for c in &report.conflicts {
        text += &format!("- {} ({})\n", conflict_message(c), at(&c.site));
    }
    for c in &report.creations {
        text += &format!("- {} at {}\n", c.note(), at(&c.site));
    }
    text
}
