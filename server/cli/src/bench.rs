//! `racelens bench`: latency of the language server's edit path and of a
//! cold workspace load, measured in-process through the server's own state.
//!
//! `bench edit FILE` opens FILE like `didOpen`, then replays small edits
//! inside function bodies like `didChange` (a character inserted into and
//! deleted from a statement, an `x = x;` line added and removed), each
//! followed by the computation of fresh diagnostics. Next to it, the same
//! edits go through a bare tree-sitter incremental reparse, the floor any
//! editor integration pays. `bench load DIR` loads a folder like the
//! server's start-up does and computes the first diagnostics. `bench lsp`
//! (in `bench_lsp.rs`) measures the same path through a real client.

use clap::Subcommand;
use racelens_lsp::config::Settings;
use racelens_lsp::tree_sitter::{InputEdit, Point, Tree};
use racelens_lsp::{workspace, Encoding, LineCol, State, TextChange};
use racelens_syntax::LineIndex;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Edit-to-diagnostics latency of small edits inside function bodies.
    Edit {
        file: PathBuf,
        /// Number of edits to replay.
        #[arg(long, default_value_t = 200)]
        iterations: usize,
        /// Print each edit's time and the analysis queries it re-ran.
        #[arg(long)]
        verbose: bool,
        /// Load this folder first, as the server does at start-up, so that
        /// FILE is edited as one file of a whole program (a project).
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// Edit-to-diagnostics latency through a real client: spawns the
    /// server and speaks LSP over its stdio (see `bench_lsp.rs`).
    Lsp {
        file: PathBuf,
        /// Open this folder as the workspace (default: the file alone).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Milliseconds between keys in the typing scenario (repeatable).
        #[arg(long = "interval-ms", default_values_t = [50u64, 100, 200])]
        intervals: Vec<u64>,
        /// Function bodies a statement is typed into, per interval.
        #[arg(long, default_value_t = 4)]
        places: usize,
        /// Random one-character edits, each sent when the last one's
        /// diagnostics arrive.
        #[arg(long, default_value_t = 500)]
        edits: usize,
        /// Random edits of the memory soak (RSS every 500 edits); 0: none.
        #[arg(long, default_value_t = 0)]
        soak: usize,
        /// Run only this scenario: typing, random or soak.
        #[arg(long)]
        scenario: Option<String>,
        /// Seed of the random edits.
        #[arg(long, default_value_t = 26)]
        seed: u64,
        /// The server command (default: this binary's `lsp`), for example
        /// `--server clangd`; repeat for arguments.
        #[arg(long)]
        server: Vec<String>,
    },
    /// Time from a cold start on a folder to its first diagnostics.
    Load {
        dir: PathBuf,
        /// The file to open (default: the largest file that defines `main`,
        /// else the first .c file).
        #[arg(long)]
        open: Option<PathBuf>,
    },
}

pub fn run(which: BenchCommand) -> ExitCode {
    // The analysis recurses deeply on large programs, as in `check`.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || match which {
            BenchCommand::Edit {
                file,
                iterations,
                verbose,
                workspace,
            } => edit(&file, iterations, verbose, workspace.as_deref()),
            BenchCommand::Load { dir, open } => load(&dir, open.as_deref()),
            BenchCommand::Lsp {
                file,
                workspace,
                intervals,
                places,
                edits,
                soak,
                scenario,
                seed,
                server,
            } => crate::bench_lsp::run(crate::bench_lsp::LspBench {
                file,
                workspace,
                server,
                intervals,
                places,
                edits,
                soak,
                scenario,
                seed,
            }),
        });
    match worker.map(|w| w.join()) {
        Ok(Ok(Ok(()))) => ExitCode::SUCCESS,
        Ok(Ok(Err(msg))) => {
            eprintln!("racelens: error: {msg}");
            ExitCode::from(2)
        }
        _ => ExitCode::from(2),
    }
}

/// One replayed edit: replace `start..end` of the current text by `text`.
#[derive(Clone)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
    /// The function whose body it edits.
    func: String,
}

/// Four edits per function body, each pair restoring the original text:
/// a space inserted before the first `;` and removed again, then an
/// `x = x;` line inserted after the `{` and removed again. The functions are
/// spread evenly over the file (every k-th one), so that the sample is not
/// just the file's first functions.
fn edits_for(text: &str, tree: &Tree, iterations: usize) -> Vec<Edit> {
    let items = racelens_syntax::extract_items(tree, text);
    let wanted = iterations.div_ceil(4).max(1);
    let stride = (items.functions.len() / wanted).max(1);
    let mut cycle = Vec::new();
    for f in items.functions.iter().step_by(stride) {
        let body = &text[f.start as usize..f.end as usize];
        let Some(open) = body[f.name_span.1 as usize..]
            .find('{')
            .map(|i| i + f.name_span.1 as usize + f.start as usize + 1)
        else {
            continue;
        };
        let line = "\n    racelens_bench_x = racelens_bench_x;";
        let edit = |start, end, text: &str| Edit {
            start,
            end,
            text: text.into(),
            func: f.name.to_string(),
        };
        if let Some(semi) = text[open..f.end as usize].find(';').map(|i| i + open) {
            cycle.push(edit(semi, semi, " "));
            cycle.push(edit(semi, semi + 1, ""));
        }
        cycle.push(edit(open, open, line));
        cycle.push(edit(open, open + line.len(), ""));
    }
    cycle
        .iter()
        .cycle()
        .take(if cycle.is_empty() { 0 } else { iterations })
        .cloned()
        .collect()
}

/// The `p` quantile (0..=1) of sorted durations, nearest rank.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted
        .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
        .copied()
        .unwrap_or_default()
}

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<34} p50 {:>8.2} ms   p95 {:>8.2} ms   max {:>8.2} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
        ms(times.last().copied().unwrap_or_default())
    );
}

fn edit(
    file: &Path,
    iterations: usize,
    verbose: bool,
    folder: Option<&Path>,
) -> Result<(), String> {
    let path = canonical(file)?;
    let text = workspace::read_lossy(&path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let uri = racelens_lsp::convert::path_to_uri(&path).ok_or("cannot make a URI for the file")?;

    let t = Instant::now();
    let mut state = State::new(Encoding::Utf8, Settings::default());
    if let Some(dir) = folder {
        let files = load_folder(&mut state, canonical(dir)?);
        println!("workspace: {} files", files);
    }
    state.open(uri, path.clone(), 1, &text);
    let first = state.diagnostics_job().compute();
    let open_time = t.elapsed();
    let count: usize = first.iter().map(|f| f.diagnostics.len()).sum();
    println!(
        "{}: {} bytes, open to first diagnostics {:.1} ms ({count} diagnostics)",
        path.display(),
        text.len(),
        open_time.as_secs_f64() * 1e3
    );

    let edits = edits_for(&text, &racelens_syntax::parse_text(&text), iterations);
    if edits.is_empty() {
        return Err("no function bodies to edit".into());
    }
    let (mut total, mut apply, mut analyse) = (Vec::new(), Vec::new(), Vec::new());
    // Edits whose thread walk was updated incrementally, and the others.
    let (mut updated, mut rewalked) = (Vec::new(), Vec::new());
    let mut rewalked_in: Vec<String> = Vec::new();
    let mut current = text.clone();
    if verbose {
        state.host().db().enable_logging();
    }
    for (i, e) in edits.iter().enumerate() {
        let change = byte_change(&current, e);
        let (updates, _) = racelens_analysis::walk::incremental_stats();
        let t0 = Instant::now();
        state
            .change(&path, i as i32 + 2, &[change])
            .ok_or("the document is not open")?;
        let t1 = Instant::now();
        let diagnostics = state.diagnostics_job().compute();
        let t2 = Instant::now();
        std::hint::black_box(diagnostics);
        current.replace_range(e.start..e.end, &e.text);
        apply.push(t1 - t0);
        analyse.push(t2 - t1);
        total.push(t2 - t0);
        if racelens_analysis::walk::incremental_stats().0 > updates {
            updated.push(t2 - t0);
        } else {
            rewalked.push(t2 - t0);
            if !rewalked_in.contains(&e.func) {
                rewalked_in.push(e.func.clone());
            }
        }
        if verbose {
            println!(
                "edit {i:>4} in `{}`: {:>8.2} ms, re-ran {}",
                e.func,
                (t2 - t0).as_secs_f64() * 1e3,
                query_counts(&state.host().db().take_log())
            );
        }
    }
    println!(
        "{} edits inside {} function bodies:",
        edits.len(),
        racelens_syntax::extract_items(&racelens_syntax::parse_text(&text), &text)
            .functions
            .len()
    );
    let (n_updated, n_rewalked) = (updated.len(), rewalked.len());
    summary("edit to diagnostics (server path)", total);
    summary("  of which: apply edit + reparse", apply);
    summary("  of which: analysis + conversion", analyse);
    if n_updated > 0 {
        summary(
            &format!("walk updated incrementally ({n_updated:>3})"),
            updated,
        );
    }
    if n_rewalked > 0 {
        summary(
            &format!("walk run from scratch    ({n_rewalked:>3})"),
            rewalked,
        );
        println!("  from scratch after edits in: {}", rewalked_in.join(", "));
    }
    summary(
        "bare tree-sitter incremental parse",
        bare_reparse(&text, &edits),
    );
    Ok(())
}

/// "function_summary x1, thread_analysis x1, ..." from a salsa execution log.
fn query_counts(log: &[String]) -> String {
    let mut counts = std::collections::BTreeMap::new();
    for entry in log {
        *counts
            .entry(entry.split('(').next().unwrap_or(entry))
            .or_insert(0) += 1;
    }
    counts
        .iter()
        .map(|(q, n)| format!("{q} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An edit in the client's terms (UTF-8 columns), taken from the text
/// before the edit, as a client computes it.
fn byte_change(text: &str, e: &Edit) -> TextChange {
    let index = LineIndex::new(text);
    let pos = |offset| {
        let (line, col) = index.position(text, offset, false);
        LineCol { line, col }
    };
    TextChange {
        range: Some((pos(e.start), pos(e.end))),
        text: e.text.clone(),
    }
}

/// The same edits applied to a `String` and a tree, reparsing each time with
/// tree-sitter alone.
fn bare_reparse(text: &str, edits: &[Edit]) -> Vec<Duration> {
    let mut parser = racelens_syntax::parse::new_parser();
    // tree-sitter alone, on the raw text (racelens parses line directives
    // as blanks, which tree-sitter-c alone does not).
    let mut text = text.to_string();
    let mut tree = parser.parse(&text, None).expect("tree-sitter parses");
    let point = |text: &str, offset: usize| {
        let before = &text[..offset];
        let row = before.matches('\n').count();
        Point {
            row,
            column: offset - before.rfind('\n').map(|i| i + 1).unwrap_or(0),
        }
    };
    edits
        .iter()
        .map(|e| {
            let t = Instant::now();
            let (start_position, old_end_position) = (point(&text, e.start), point(&text, e.end));
            text.replace_range(e.start..e.end, &e.text);
            let new_end_byte = e.start + e.text.len();
            tree.edit(&InputEdit {
                start_byte: e.start,
                old_end_byte: e.end,
                new_end_byte,
                start_position,
                old_end_position,
                new_end_position: point(&text, new_end_byte),
            });
            tree = parser
                .parse(&text, Some(&tree))
                .expect("tree-sitter parses");
            t.elapsed()
        })
        .collect()
}

fn load(dir: &Path, open: Option<&Path>) -> Result<(), String> {
    let dir = canonical(dir)?;
    let open = open.map(canonical).transpose()?;
    let t0 = Instant::now();
    let mut state = State::new(Encoding::Utf16, Settings::default());
    state.set_roots(vec![dir.clone()]);
    let files = workspace::scan(state.roots());
    let t1 = Instant::now();
    let list: Vec<PathBuf> = files.iter().cloned().collect();
    let loaded = workspace::load(&list);
    let t2 = Instant::now();
    let defines_main = |p: &racelens_syntax::Parsed| {
        racelens_syntax::extract_items(&p.tree, &p.text)
            .functions
            .iter()
            .any(|f| &*f.name == "main")
    };
    let is_c = |p: &Path| p.extension().is_some_and(|e| e == "c");
    // A folder may hold several programs (tests, tools): open the largest
    // file that defines `main`, as the one a developer most likely edits.
    let open = open
        .or_else(|| {
            loaded
                .iter()
                .filter(|(_, p)| defines_main(p))
                .max_by_key(|(_, p)| p.text.len())
                .map(|(path, _)| path.clone())
        })
        .or_else(|| list.iter().find(|p| is_c(p)).cloned());
    let t3 = Instant::now();
    state.reload_config();
    state.add_disk_files(files, loaded);
    if let Some(p) = &open {
        let text = workspace::read_lossy(p).map_err(|e| e.to_string())?;
        let uri = racelens_lsp::convert::path_to_uri(p).ok_or("cannot make a URI")?;
        state.open(uri, p.clone(), 1, &text);
    }
    let diagnostics = state.load_diagnostics_job().compute();
    let t4 = Instant::now();
    let races = state.snapshot().analysis.races().len();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{}: {} files", dir.display(), list.len());
    println!("scan                      {:>8.1} ms", ms(t1 - t0));
    println!("read + parse              {:>8.1} ms", ms(t2 - t1));
    println!("open + analysis + convert {:>8.1} ms", ms(t4 - t3));
    let shown = open
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "no open file".into());
    println!("cold load to first diagnostics {:.1} ms ({races} races in the program; {} diagnostics in {shown})", ms(t4 - t3 + (t2 - t0)), diagnostics.iter().map(|f| f.diagnostics.len()).sum::<usize>());
    Ok(())
}

/// Loads a folder into the server state as its start-up does (scan, read,
/// parse, configuration); returns the number of files.
fn load_folder(state: &mut State, dir: PathBuf) -> usize {
    state.set_roots(vec![dir]);
    let files = workspace::scan(state.roots());
    let list: Vec<PathBuf> = files.iter().cloned().collect();
    let loaded = workspace::load(&list);
    state.reload_config();
    state.add_disk_files(files, loaded);
    list.len()
}

/// The absolute path of an argument, or the error to report.
fn canonical(p: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))
}
