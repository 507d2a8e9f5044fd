//! `racelens check`: load the program, analyse it, print the races.
//!
//! Exit codes: 0 when no race is found, 1 when races are found, 2 for usage
//! or IO errors (with a message on stderr).

use crate::fingerprint;
use crate::inputs;
use crate::notices::{self, Notice};
use crate::render::{self, Sources};
use crate::sarif;
use crate::{CheckArgs, ColorChoice, ConfidenceFilter, Format};
use racelens_analysis::{AnalysisHost, CheckLimits, Confidence, Config, Explanation, RaceReport};
use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// One race as reported: the report, its schedule (with `--explain`), its
/// fingerprint and whether a comment suppresses it.
pub struct Finding {
    pub report: RaceReport,
    pub schedule: Option<Explanation>,
    pub fingerprint: String,
    pub suppressed: bool,
}

pub fn run(args: CheckArgs) -> ExitCode {
    // One analysis, no edits: no walk is kept for incremental updates.
    racelens_analysis::walk::set_incremental(false);
    match run_inner(args) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("racelens: error: {msg}");
            ExitCode::from(2)
        }
    }
}

/// Colour for the human output: `always`, `never`, or (auto) when the
/// output is a terminal and `NO_COLOR` is unset or empty.
fn use_color(choice: ColorChoice, to_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            to_terminal
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        }
    }
}

/// Loads the configuration, reporting problems on stderr; returns it with
/// the file it came from.
fn config_and_path(
    explicit: Option<PathBuf>,
    first: Option<&PathBuf>,
) -> Result<(Config, Option<PathBuf>), String> {
    let path = match explicit {
        Some(p) => {
            if !p.is_file() {
                return Err(format!("config file `{}` does not exist", p.display()));
            }
            Some(p)
        }
        None => first.and_then(|p| inputs::find_config(p)),
    };
    let Some(path) = path else {
        return Ok((Config::default(), None));
    };
    let (cfg, errors) = inputs::load_config(&path)?;
    for e in errors {
        eprintln!(
            "racelens: warning: {}:{}:{}: {} (using the default configuration)",
            path.display(),
            e.line,
            e.column,
            e.message
        );
    }
    Ok((cfg, Some(path)))
}

/// The command line's own `-D`, `-U` and `-I`, for every unit.
fn extra_flags(args: &CheckArgs) -> racelens_syntax::cpp::Flags {
    let words: Vec<String> = (args.define.iter().map(|d| format!("-D{d}")))
        .chain(args.undefine.iter().map(|u| format!("-U{u}")))
        .chain(args.include.iter().map(|i| format!("-I{}", i.display())))
        .collect();
    let cwd = std::env::current_dir().unwrap_or_default();
    racelens_lsp::build::parse_flags(&words, &cwd)
}

fn run_inner(args: CheckArgs) -> Result<ExitCode, String> {
    let start_time = std::time::SystemTime::now();
    let mut paths = args.paths.clone();
    if paths.is_empty() {
        paths.push(PathBuf::from("."));
    }
    let format = args.format;
    let explain = args.explain;
    let list_programs = args.list_programs;
    let collected = inputs::collect(&paths, args.build_path.as_deref(), &args.exclude)?;
    let mut notices: Vec<Notice> = collected
        .not_c
        .into_iter()
        .map(|(f, why)| notices::not_c(f, why))
        .collect();
    let files = collected.files;
    let (cfg, cfg_path) = config_and_path(args.config.clone(), paths.first())?;
    let extra = extra_flags(&args);
    let (build, build_warnings) = racelens_lsp::build::build_config(
        &paths
            .iter()
            .map(|p| racelens_lsp::workspace::canonical(p))
            .collect::<Vec<_>>(),
        args.build_path.as_deref(),
        &cfg,
        cfg_path.as_deref().and_then(Path::parent),
        &extra,
        &files,
    );
    for w in build_warnings {
        notices.push(notices::build(w));
    }
    let mut loaded = Vec::new();
    let mut total = 0usize;
    for f in &files {
        let text = inputs::read_lossy(f)?;
        if text.contains('\0') {
            notices.push(notices::not_c(
                f.clone(),
                "not a C source file (binary content), skipped".to_string(),
            ));
            continue;
        }
        total += text.len();
        loaded.push((f.clone(), Arc::<str>::from(text)));
    }
    if loaded.is_empty() {
        let cwd = Sources::new();
        for n in &notices {
            eprintln!("racelens: warning: {}: {}", cwd.shown(&n.file), n.message);
        }
        return Err(format!(
            "no C source to analyse in {}",
            paths
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let n_files = loaded.len();
    let parse_workers = args
        .jobs
        .map_or_else(|| racelens_syntax::par::workers(8), |j| j as usize);
    let workers = args
        .jobs
        .map_or_else(|| racelens_syntax::par::workers(4), |j| j as usize);
    let progress =
        (std::io::stderr().is_terminal() && (total > 2_000_000 || n_files > 50)).then(|| {
            let pb = indicatif::ProgressBar::new(loaded.len() as u64);
            pb.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {msg} [{bar:30}] {pos}/{len} files",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            pb.set_message("parsing");
            pb
        });
    // Deep but bounded recursion in the analysis gets a generous stack.
    let result = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let t_load = std::time::Instant::now();
            let mut host = AnalysisHost::new(cfg);
            host.set_build(build);
            let mut sources = Sources::new();
            let mut syntax = Vec::new();
            let mut texts = Vec::new();
            let mut batch = Vec::new();
            for (p, parsed) in parse_all(&loaded, progress.as_ref(), parse_workers) {
                syntax.extend(notices::syntax_error(&p, &parsed.tree, &parsed.text));
                texts.push(p.clone());
                sources.add(&p, parsed.text.clone());
                batch.push((p, parsed));
            }
            host.set_files(batch);
            if let Some(pb) = &progress {
                pb.set_message("analysing");
            }
            let timing = std::env::var_os("RACELENS_TIMING").is_some();
            if timing {
                eprintln!("racelens: parsed in {:?}", t_load.elapsed());
            }
            let t0 = std::time::Instant::now();
            let analysis = host.snapshot();
            if list_programs {
                return Err(crate::programs::listing(&analysis, &sources));
            }
            for p in &texts {
                let text = analysis.view_text(p).unwrap_or_default();
                syntax.extend(notices::lost_main(p, &text, analysis.defines(p, "main")));
                for span in analysis.lost_functions(p) {
                    syntax.push(notices::lost_function(p, span));
                }
            }
            syntax.extend(crate::programs::notices(&analysis));
            if timing {
                let db = analysis.db();
                let ws = analysis.workspace();
                for f in ws.files(db) {
                    for &fid in racelens_analysis::db::file_functions(db, ws, *f) {
                        let _ = racelens_analysis::db::function_summary(db, fid);
                    }
                }
                eprintln!("racelens: summaries done after {:?}", t0.elapsed());
            }
            // Lowering and the location checks spread over the cores; the
            // walk between them runs here.
            analysis.prefetch(None, workers);
            if timing {
                eprintln!(
                    "racelens: walk done after {:?}, peak RSS {} KB",
                    t0.elapsed(),
                    peak_rss_kb()
                );
            }
            // The layered check: refuted candidates are dropped or become
            // may races. Plain `check` bounds it by a state budget per
            // report; --explain runs every search to its own bound.
            let limits = if explain {
                CheckLimits::FULL
            } else {
                CheckLimits::DEFAULT
            };
            let checked = analysis.races_checked_on(limits, workers);
            let incomplete = analysis.incomplete();
            let suppressions = racelens_analysis::suppress::Suppressions::of(&analysis);
            let suppressed: Vec<bool> = checked
                .races
                .iter()
                .map(|r| suppressions.suppresses(r))
                .collect();
            if timing {
                eprintln!(
                    "racelens: races done after {:?}, peak RSS {} KB",
                    t0.elapsed(),
                    peak_rss_kb()
                );
            }
            if let Some(pb) = progress {
                pb.finish_and_clear();
            }
            let programs = crate::programs::summary(&analysis);
            Ok((checked, incomplete, sources, syntax, suppressed, programs))
        })
        .map_err(|e| format!("cannot start analysis thread: {e}"))?
        .join();
    let (checked, incomplete, sources, syntax, suppressed, programs) = match result {
        Ok(Ok(r)) => r,
        Ok(Err(listing)) => {
            print!("{listing}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(_) => return Err("internal error during analysis (please report this bug)".into()),
    };
    notices.extend(syntax);
    notices.extend(incomplete.iter().map(notices::incomplete));

    // Fingerprints are computed over every race, so that neither
    // --confidence nor suppressions change the others' numbering.
    let all: Vec<&RaceReport> = checked.races.iter().collect();
    let prints = fingerprint::fingerprints(&all, &sources);
    let mut schedules = checked.schedules.into_iter();
    let mut findings: Vec<Finding> = Vec::new();
    for ((report, fingerprint), suppressed) in checked.races.into_iter().zip(prints).zip(suppressed)
    {
        let schedule = schedules.next().flatten().filter(|_| explain);
        let keep = match args.confidence {
            ConfidenceFilter::All => true,
            ConfidenceFilter::May => report.refuted.is_none(),
            ConfidenceFilter::Must => report.confidence == Confidence::Must,
        };
        if keep {
            findings.push(Finding {
                report,
                schedule,
                fingerprint,
                suppressed,
            });
        }
    }
    let mut known = 0usize;
    if let Some(b) = &args.baseline {
        let base = read_baseline(b)?;
        let before = findings.len();
        findings.retain(|f| !base.contains(&f.fingerprint));
        known = before - findings.len();
    }
    let root = sarif_root(&args, &paths)?;
    let working_dir = std::env::current_dir()
        .map(|c| std::fs::canonicalize(&c).unwrap_or(c))
        .unwrap_or_default();
    let command_line: Vec<String> = std::env::args().collect();
    let reported: Vec<&Finding> = findings.iter().filter(|f| !f.suppressed).collect();
    let n_suppressed = findings.len() - reported.len();
    let mut exit = if reported.is_empty() { 0 } else { 1 };
    if let Some(path) = &args.write_baseline {
        let all: Vec<&Finding> = reported.clone();
        let run = sarif::Run {
            root: root.clone(),
            notices: &notices,
            command_line: command_line.clone(),
            working_dir: working_dir.clone(),
            start: start_time,
            exit_code: 0,
            baseline: false,
        };
        let mut buf = Vec::new();
        sarif::render(&all, &sources, &run, &mut buf).map_err(|e| e.to_string())?;
        std::fs::write(path, buf)
            .map_err(|e| format!("cannot write the baseline `{}`: {e}", path.display()))?;
        eprintln!(
            "racelens: wrote a baseline of {} race{} to {}",
            all.len(),
            if all.len() == 1 { "" } else { "s" },
            path.display()
        );
        exit = 0;
    }

    let (mut out, dest): (Box<dyn Write>, String) = match &args.output {
        Some(p) => (
            Box::new(std::io::BufWriter::new(
                std::fs::File::create(p)
                    .map_err(|e| format!("cannot create `{}`: {e}", p.display()))?,
            )),
            format!("`{}`", p.display()),
        ),
        None => (
            Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            "standard output".to_string(),
        ),
    };
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let color = use_color(args.color, to_terminal);
    let written = match format {
        Format::Sarif => {
            let run = sarif::Run {
                root,
                notices: &notices,
                command_line,
                working_dir,
                start: start_time,
                exit_code: exit,
                baseline: args.baseline.is_some(),
            };
            let all: Vec<&Finding> = findings.iter().collect();
            sarif::render(&all, &sources, &run, &mut out)
        }
        Format::Json => {
            let refuted: &[(RaceReport, String)] = if explain { &checked.refuted } else { &[] };
            out.write_all(json(&findings, &notices, refuted, &sources, n_files, known).as_bytes())
        }
        Format::Human => {
            let mut s = render::render(&reported, &notices, &sources, color, args.quiet);
            if explain && !args.quiet && !checked.refuted.is_empty() {
                s.extend(render::refuted(&checked.refuted, &sources).into_bytes());
            }
            let mut line = format!(
                "racelens: {} racy access{} in {} file{}",
                reported.len(),
                if reported.len() == 1 { "" } else { "es" },
                n_files,
                if n_files == 1 { "" } else { "s" }
            );
            if let Some(p) = &programs {
                line.push_str(&format!(" ({p})"));
            }
            if n_suppressed > 0 {
                line.push_str(&format!(", {n_suppressed} suppressed"));
            }
            if known > 0 {
                line.push_str(&format!(", {known} in the baseline"));
            }
            let bad = notices
                .iter()
                .filter(|n| n.kind == notices::Kind::SyntaxError)
                .count();
            let partial = notices
                .iter()
                .filter(|n| n.kind == notices::Kind::Incomplete)
                .count();
            if partial > 0 {
                line.push_str(&format!(
                    ", {partial} function{} analysed in part",
                    if partial == 1 { "" } else { "s" }
                ));
            }
            if bad > 0 {
                line.push_str(&format!(
                    ", {bad} file{} with syntax errors",
                    if bad == 1 { "" } else { "s" }
                ));
            }
            s.extend(render::summary(&line, color));
            out.write_all(&s)
        }
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write the report to {dest}: {e}"))?;
    Ok(ExitCode::from(exit as u8))
}

/// `%SRCROOT%`: `--sarif-root`, else the one folder given, else the
/// current folder.
fn sarif_root(args: &CheckArgs, paths: &[PathBuf]) -> Result<PathBuf, String> {
    let dir = match &args.sarif_root {
        Some(d) => d.clone(),
        None if paths.len() == 1 && paths[0].is_dir() => paths[0].clone(),
        None => std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?,
    };
    std::fs::canonicalize(&dir).map_err(|e| format!("cannot read `{}`: {e}", dir.display()))
}

/// The fingerprints of a baseline: every result's `partialFingerprints`
/// entry of a SARIF log written by `--write-baseline` (or `--format sarif`).
fn read_baseline(path: &Path) -> Result<HashSet<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the baseline `{}`: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the baseline `{}` is not JSON: {e}", path.display()))?;
    let runs = v["runs"]
        .as_array()
        .ok_or_else(|| format!("the baseline `{}` is not a SARIF log", path.display()))?;
    Ok(runs
        .iter()
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .filter_map(|r| r["partialFingerprints"][fingerprint::KEY].as_str())
        .map(str::to_string)
        .collect())
}

/// Peak resident set size of this process, from /proc (0 where unavailable).
pub fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The JSON report (documented in docs/output.md).
fn json(
    findings: &[Finding],
    notices: &[Notice],
    refuted: &[(RaceReport, String)],
    src: &Sources,
    files: usize,
    known: usize,
) -> String {
    use serde_json::json;
    let place = |file: &Path, start: usize, end: usize| {
        let (l, c) = src.position(file, start);
        let (el, ec) = src.position(file, end);
        json!({ "file": file, "line": l + 1, "column": c + 1, "endLine": el + 1, "endColumn": ec + 1 })
    };
    let site = |s: &racelens_analysis::SiteRef| {
        let mut v = place(&s.file, s.start, s.end);
        v["function"] = json!(s.func);
        v
    };
    let race = |r: &RaceReport| {
        json!({
            "variable": r.var,
            "access": racelens_analysis::report::kind_word(r.kind),
            "confidence": if r.confidence == Confidence::Must { "must" } else { "may" },
            "location": site(&r.site),
            "threads": r.threads,
            "locks": r.locks,
            "message": r.message(),
            "conflicts": r.conflicts.iter().map(|c| json!({ "location": site(&c.site), "access": racelens_analysis::report::kind_word(c.kind), "thread": c.thread, "locks": c.locks })).collect::<Vec<_>>(),
            "creations": render::creations(r).into_iter().map(|c| json!({ "thread": c.thread, "location": site(&c.site) })).collect::<Vec<_>>(),
            "refutedBy": r.refuted,
            "programs": r.programs,
            "unresolved": r.unresolved,
            "speculative": r.speculative,
            "lockArray": r.lock_array,
        })
    };
    let finding = |f: &Finding| {
        let mut v = race(&f.report);
        v["fingerprint"] = json!(f.fingerprint);
        if let Some(e) = &f.schedule {
            v["schedule"] = json!(e
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| json!({ "step": i + 1, "thread": s.thread, "message": s.message, "location": site(&s.site) }))
                .collect::<Vec<_>>());
        }
        v
    };
    let races: Vec<_> = findings
        .iter()
        .filter(|f| !f.suppressed)
        .map(finding)
        .collect();
    let suppressed: Vec<_> = findings
        .iter()
        .filter(|f| f.suppressed)
        .map(finding)
        .collect();
    let notices: Vec<_> = notices
        .iter()
        .map(|n| {
            let mut v = json!({ "kind": n.kind.id(), "level": n.kind.level(), "message": n.message, "file": n.file });
            if let Some((s, e)) = n.span {
                v["location"] = place(&n.file, s, e);
            }
            if let Some(f) = &n.func {
                v["function"] = json!(f);
            }
            v
        })
        .collect();
    let mut v = json!({
        "version": 1,
        "columnKind": "utf16CodeUnits",
        "races": races,
        "suppressed": suppressed,
        "notices": notices,
        "summary": { "files": files, "races": races.len(), "suppressed": suppressed.len(), "inBaseline": known },
    });
    if !refuted.is_empty() {
        v["refuted"] = json!(refuted
            .iter()
            .map(|(r, why)| {
                let mut x = race(r);
                x["reason"] = json!(why);
                x
            })
            .collect::<Vec<_>>());
    }
    let mut s = serde_json::to_string_pretty(&v).expect("json");
    s.push('\n');
    s
}

/// Parses the files on all cores, the largest first, keeping their order.
fn parse_all(
    loaded: &[(PathBuf, Arc<str>)],
    progress: Option<&indicatif::ProgressBar>,
    workers: usize,
) -> Vec<(PathBuf, racelens_syntax::Parsed)> {
    use racelens_syntax::par;
    let order = par::largest_first(loaded.iter().map(|l| l.1.len() as u64));
    par::run(&order, vec![(); workers.max(1)], |(), next| {
        let mut done = Vec::new();
        while let Some(i) = next() {
            done.push((i, racelens_syntax::parse::parse(loaded[i].1.clone())));
            if let Some(pb) = progress {
                pb.inc(1);
            }
        }
        done
    })
    .into_iter()
    .map(|(i, p)| (loaded[i].0.clone(), p))
    .collect()
}
