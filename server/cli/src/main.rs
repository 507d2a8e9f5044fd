//! The `racelens` binary: `check` for people and CI, `lsp` for editors,
//! `bench` for the committed benchmarks.

/// The walk and the race checks allocate many small, short-lived vectors;
/// mimalloc serves them faster than glibc's allocator (memcached cold load
/// about 10% faster, `check` on large files 5-10%).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's option setter (`mimalloc.h`), exported by the linked library.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    // mimalloc's C allocation functions, handed to tree-sitter.
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_calloc(count: usize, size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(p: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    fn mi_free(p: *mut std::ffi::c_void);
}

/// `mi_option_arena_eager_commit` in `mimalloc.h`'s `mi_option_t`.
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;
/// `mi_option_purge_delay` there.
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Commits arena memory as it is used rather than up front: by default
/// mimalloc commits whole arenas, which raised the peak RSS on
/// mt-daapd_comb.c from 82 to 114 MB; committed lazily it is 87 MB, at
/// the same speed.
/// Tree-sitter's C code allocates through mimalloc too: its parse trees are
/// many small nodes, and the memcached project's read + parse phase is
/// about 8% faster so (median 99 -> 91 ms, same-window A/B).
/// Freed pages are returned to the OS at once rather than after mimalloc's
/// default 10 ms purge delay (a delayed purge is carried out only by later
/// allocator activity, and the server's threads idle between edits).
/// Issue 26, item 4: the live heap of `racelens lsp` on mt-daapd stays
/// near 95 MB over 1,000 random edits while RSS rose from 101 to 225 MB;
/// with immediate purges 170 MB, at the same edit latency.
/// It must run before the first allocation (and tree-sitter's allocator
/// before any tree-sitter call), so it runs as an ELF constructor, before
/// the Rust runtime starts.
extern "C" fn tune_allocator() {
    // SAFETY: a plain option store, before any thread exists.
    unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) }
    // SAFETY: as above.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
    // SAFETY: one allocator family (mimalloc's malloc, calloc, realloc and
    // free, never null for a nonzero size, malloc's alignment), installed
    // once, before any tree-sitter object exists and before any thread.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: mi_malloc,
            calloc: mi_calloc,
            realloc: mi_realloc,
            free: mi_free,
        }))
    }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static TUNE_ALLOCATOR: extern "C" fn() = tune_allocator;

mod bench;
mod bench_lsp;
mod check;
mod fingerprint;
mod inputs;
mod notices;
mod programs;
mod render;
mod sarif;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "racelens",
    version,
    about = "Finds data races in C programs that use pthreads or C11 threads"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Format {
    Human,
    Json,
    Sarif,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Which races are reported (and decide the exit code).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ConfidenceFilter {
    /// Only races that happen on every run that reaches the accesses.
    Must,
    /// Must races and may races that the interleaving check did not refute.
    May,
    /// Every reported race, including candidates downgraded by the
    /// interleaving check.
    All,
}

const CHECK_AFTER_HELP: &str = "\
Exit codes:
  0  no race reported (suppressed races, races in the baseline and races
     below --confidence do not count)
  1  races reported
  2  usage error, unreadable input, no C file to analyse, or output that
     could not be written (with a message on stderr)

Suppress one race with `// racelens: ignore` (or `// racelens: ignore[data-race]`)
on the access's line or the line above; on a declaration it suppresses
every race on that variable. Output formats: docs/output.md.";

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// C files or folders; defaults to the current folder. The files form
    /// programs as a linker would (see `--list-programs`).
    pub paths: Vec<PathBuf>,
    /// Output format (see docs/output.md).
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// A racelens.toml to use instead of the one found upward from the first path.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run the interleaving check without a budget and print a schedule
    /// that exhibits each race (SARIF: codeFlows) and the refuted candidates.
    #[arg(long)]
    pub explain: bool,
    /// Colour the human output (`auto`: on a terminal, unless NO_COLOR is set).
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: ColorChoice,
    /// Threads for parsing and checking (default: the available cores).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Print the summary line and notices only (human format).
    #[arg(short, long)]
    pub quiet: bool,
    /// Write the report to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Which races to report; also decides the exit code.
    #[arg(long, value_enum, default_value = "all")]
    pub confidence: ConfidenceFilter,
    /// Leave out files matching GLOB (relative to a folder given, to the
    /// current folder, or a file name; repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Folder that holds compile_commands.json (default: each folder given,
    /// then its `build/`).
    #[arg(short = 'p', long = "build-path", value_name = "BUILD_DIR")]
    pub build_path: Option<PathBuf>,
    /// Define a macro for every file (after compile_commands.json's flags).
    #[arg(short = 'D', value_name = "MACRO[=VALUE]")]
    pub define: Vec<String>,
    /// Undefine a macro for every file.
    #[arg(short = 'U', value_name = "MACRO")]
    pub undefine: Vec<String>,
    /// Add a folder to the include path of every file.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Print the programs found (their files, and the flags each unit is
    /// analysed with) instead of analysing them.
    #[arg(long)]
    pub list_programs: bool,
    /// Base of the relative SARIF URIs (%SRCROOT%); default: the folder
    /// given, else the current folder.
    #[arg(long, value_name = "DIR")]
    pub sarif_root: Option<PathBuf>,
    /// Report only races whose fingerprint is not in this SARIF file.
    #[arg(long, value_name = "FILE.sarif")]
    pub baseline: Option<PathBuf>,
    /// Write the current races to FILE (SARIF) as a baseline; the report
    /// follows as usual, and the exit code is 0.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse files or folders (their programs, as a linker would form them) and report races.
    #[command(after_help = CHECK_AFTER_HELP)]
    Check(CheckArgs),
    /// Run the language server (over stdio, the only transport).
    Lsp {
        /// Accepted for editors that pass it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Measure the language server's edit and load latencies.
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Bench { which } => bench::run(which),
        Command::Lsp { stdio: _ } => {
            tracing_subscriber::fmt()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_env("RACELENS_LOG")
                        .unwrap_or_else(|_| "info,salsa=warn".into()),
                )
                .init();
            racelens_lsp::run_stdio();
            ExitCode::SUCCESS
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    }

    /// The constructor ran and the option numbers name the options meant
    /// (mimalloc's defaults are 2 for eager arena commits, 10 ms for purges).
    #[test]
    fn allocator_is_tuned_before_main() {
        // SAFETY: a plain option read.
        let get = |o| unsafe { mi_option_get(o) };
        assert_eq!(get(super::MI_OPTION_ARENA_EAGER_COMMIT), 0);
        assert_eq!(get(super::MI_OPTION_PURGE_DELAY), 0);
    }
}
