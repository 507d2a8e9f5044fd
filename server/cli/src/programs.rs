//! What `check` says about the programs it found: the `--list-programs`
//! listing, the notes about how programs were formed and which
//! conditionals stayed undecided, and the summary's program count.

use crate::notices::{Kind, Notice};
use crate::render::Sources;
use racelens_analysis::snapshot::Analysis;
use racelens_syntax::cpp::{Flags, MacroOp};
use std::fmt::Write;

/// `racelens check --list-programs`: each program, its files, and the
/// flags of each unit.
pub fn listing(analysis: &Analysis, src: &Sources) -> String {
    let mut out = String::new();
    for p in analysis.programs() {
        let mut files: Vec<_> = p
            .files
            .iter()
            .map(|f| f.path(analysis.db()).clone())
            .collect();
        files.sort();
        let _ = writeln!(
            out,
            "{} `{}`: {} file{}{}",
            if p.library { "library" } else { "program" },
            p.name,
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            if p.library {
                " (no `main`: analysed in library mode)"
            } else {
                ""
            }
        );
        for f in files {
            let unit = racelens_analysis::units::is_unit(&f);
            let mut line = format!("  {}", src.shown(&f));
            if unit {
                let (flags, from_db) = analysis.unit_flags(&f);
                let _ = write!(
                    line,
                    "  [{}]",
                    if from_db {
                        format!("compile_commands.json: {}", describe(&flags))
                    } else {
                        format!("defaults: {}", describe(&flags))
                    }
                );
            } else {
                line.push_str("  (header)");
            }
            if let Some(c) = analysis.conditions(&f) {
                if c.decided + c.undecided > 0 {
                    let _ = write!(
                        line,
                        "  #if: {} decided, {} undecided",
                        c.decided, c.undecided
                    );
                }
            }
            let _ = writeln!(out, "{line}");
        }
    }
    for (_, note) in analysis.link_notes() {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn describe(f: &Flags) -> String {
    let mut parts: Vec<String> = vec!["GCC x86-64 Linux predefined macros".into()];
    if let Some(s) = &f.std {
        parts.push(format!("-std={s}"));
    }
    for (n, op) in &f.macros {
        parts.push(match op {
            MacroOp::Define(None) => format!("-D{n}"),
            MacroOp::Define(Some(v)) => format!("-D{n}={v}"),
            MacroOp::Undef => format!("-U{n}"),
        });
    }
    for d in &f.include_dirs {
        parts.push(format!("-I{}", d.display()));
    }
    for i in &f.forced_includes {
        parts.push(format!("-include {}", i.display()));
    }
    parts.join(" ")
}

/// Notes about the programs: link ambiguities, units analysed as a
/// library beside real programs, and undecided conditionals.
pub fn notices(analysis: &Analysis) -> Vec<Notice> {
    let mut out: Vec<Notice> = analysis
        .link_notes()
        .into_iter()
        .map(|(file, message)| Notice {
            kind: Kind::Link,
            file,
            span: None,
            message,
            func: None,
        })
        .collect();
    let programs = analysis.programs();
    if programs.len() > 1 {
        for p in programs.iter().filter(|p| p.library) {
            let mut units: Vec<_> = p
                .files
                .iter()
                .map(|f| f.path(analysis.db()).clone())
                .filter(|f| racelens_analysis::units::is_unit(f))
                .collect();
            units.sort();
            if let Some(first) = units.first() {
                out.push(Notice {
                    kind: Kind::Library,
                    file: first.clone(),
                    span: None,
                    message: format!(
                        "{} unit{} that no `main` uses {} analysed as a library",
                        units.len(),
                        if units.len() == 1 { "" } else { "s" },
                        if units.len() == 1 { "is" } else { "are" }
                    ),
                    func: None,
                });
            }
        }
    }
    let mut files: Vec<_> = programs
        .iter()
        .flat_map(|p| p.files.iter().map(|f| f.path(analysis.db()).clone()))
        .collect();
    files.sort();
    files.dedup();
    // One note for the whole run: the first undecided conditional, and
    // the totals (`--list-programs` has them per file).
    let (mut total, mut in_files, mut first) = (0u32, 0usize, None);
    for f in files {
        let Some(c) = analysis.conditions(&f) else {
            continue;
        };
        if c.undecided == 0 {
            continue;
        }
        total += c.undecided;
        in_files += 1;
        if first.is_none() {
            first = c.first_undecided.clone().map(|fu| (f.clone(), fu));
        }
    }
    if let Some((f, (line, why))) = first {
        let text = analysis.file_text(&f).unwrap_or_default();
        let at = racelens_syntax::LineIndex::new(&text).line_start(line as usize);
        out.push(Notice {
            kind: Kind::Conditional,
            file: f,
            span: Some((at, at + 1)),
            message: format!(
                "{total} conditional{} in {in_files} file{} could not be decided ({why}, here first); every branch of {} was analysed (`--list-programs` counts them per file)",
                if total == 1 { "" } else { "s" },
                if in_files == 1 { "" } else { "s" },
                if total == 1 { "it" } else { "them" }
            ),
            func: None,
        });
    }
    out
}

/// "2 programs, 1 library" when the workspace has more than one.
pub fn summary(analysis: &Analysis) -> Option<String> {
    let programs = analysis.programs();
    if programs.len() <= 1 {
        return None;
    }
    let libs = programs.iter().filter(|p| p.library).count();
    let progs = programs.len() - libs;
    let mut s = format!("{progs} program{}", if progs == 1 { "" } else { "s" });
    if libs > 0 {
        let _ = write!(s, ", {libs} librar{}", if libs == 1 { "y" } else { "ies" });
    }
    Some(s)
}
