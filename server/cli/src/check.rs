//! `racelens check`: load the program, analyse it, print the races.
//!
//! Exit codes: 0 when no race is found, 1 when races are found, 2 for usage
//! or IO errors (with a message on stderr).

use crate::inputs;
use crate::render::{self, Sources};
use crate::sarif;
use crate::Format;
use racelens_analysis::{AnalysisHost, CheckLimits, Config};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(
    paths: Vec<PathBuf>,
    format: Format,
    config: Option<PathBuf>,
    explain: bool,
) -> ExitCode {
    // One analysis, no edits: no walk is kept for incremental updates.
    racelens_analysis::walk::set_incremental(false);
    match run_inner(paths, format, config, explain) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("racelens: error: {msg}");
            ExitCode::from(2)
        }
    }
}

/// Loads the configuration, reporting problems on stderr.
pub fn config_for(explicit: Option<PathBuf>, first: Option<&PathBuf>) -> Result<Config, String> {
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
        return Ok(Config::default());
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
    Ok(cfg)
}

fn run_inner(
    mut paths: Vec<PathBuf>,
    format: Format,
    config: Option<PathBuf>,
    explain: bool,
) -> Result<ExitCode, String> {
    if paths.is_empty() {
        paths.push(PathBuf::from("."));
    }
    let files = inputs::collect(&paths)?;
    if files.is_empty() {
        return Err(format!(
            "no .c or .h files found in {}",
            paths
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let cfg = config_for(config, paths.first())?;
    let mut loaded = Vec::new();
    let mut total = 0usize;
    for f in &files {
        let text = inputs::read_lossy(f)?;
        total += text.len();
        loaded.push((f.clone(), Arc::<str>::from(text)));
    }
    let progress = (std::io::stderr().is_terminal() && (total > 2_000_000 || files.len() > 50))
        .then(|| {
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
            let mut sources = Sources::new();
            for (p, parsed) in parse_all(&loaded, progress.as_ref()) {
                sources.add(&p, parsed.text.clone());
                host.set_file(&p, parsed);
            }
            if let Some(pb) = &progress {
                pb.set_message("analysing");
            }
            let timing = std::env::var_os("RACELENS_TIMING").is_some();
            if timing {
                eprintln!("racelens: parsed in {:?}", t_load.elapsed());
            }
            let t0 = std::time::Instant::now();
            let analysis = host.snapshot();
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
            let workers = racelens_syntax::par::workers(4);
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
            (checked, incomplete, sources)
        })
        .map_err(|e| format!("cannot start analysis thread: {e}"))?
        .join();
    let (checked, incomplete, sources) = match result {
        Ok(r) => r,
        Err(_) => return Err("internal error during analysis (please report this bug)".into()),
    };
    let races = &checked.races;
    // Schedules are printed with --explain only.
    let schedules: &[Option<racelens_analysis::Explanation>] =
        if explain { &checked.schedules } else { &[] };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let _ = match format {
        Format::Sarif => sarif::render(races, schedules, &incomplete, &sources, &mut out),
        Format::Json => out.write_all(json(races, &sources).as_bytes()),
        Format::Human => {
            let mut s = render::render(races, &incomplete, &sources, schedules);
            if explain && !checked.refuted.is_empty() {
                s.push_str(&render::refuted(&checked.refuted, &sources));
            }
            s.push_str(&format!(
                "racelens: {} racy access{} in {} file{}\n",
                races.len(),
                if races.len() == 1 { "" } else { "es" },
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ));
            out.write_all(s.as_bytes())
        }
    };
    let _ = out.flush();
    Ok(if races.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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

fn json(races: &[racelens_analysis::RaceReport], src: &Sources) -> String {
    let site = |s: &racelens_analysis::SiteRef| {
        let (l, c) = src.position(&s.file, s.start);
        serde_json::json!({ "file": s.file, "line": l + 1, "column": c + 1, "function": s.func })
    };
    let v: Vec<serde_json::Value> = races
        .iter()
        .map(|r| {
            serde_json::json!({
                "variable": r.var,
                "access": racelens_analysis::report::kind_word(r.kind),
                "confidence": if r.confidence == racelens_analysis::Confidence::Must { "must" } else { "may" },
                "location": site(&r.site),
                "threads": r.threads,
                "locks": r.locks,
                "message": r.message(),
                "conflicts": r.conflicts.iter().map(|c| serde_json::json!({ "location": site(&c.site), "access": racelens_analysis::report::kind_word(c.kind), "thread": c.thread, "locks": c.locks })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({ "races": v })).expect("json")
}

/// Parses the files on all cores, the largest first, keeping their order.
fn parse_all(
    loaded: &[(PathBuf, Arc<str>)],
    progress: Option<&indicatif::ProgressBar>,
) -> Vec<(PathBuf, racelens_syntax::Parsed)> {
    use racelens_syntax::par;
    let order = par::largest_first(loaded.iter().map(|l| l.1.len() as u64));
    par::run(&order, vec![(); par::workers(8)], |(), next| {
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
