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

/// Commits arena memory as it is used rather than up front: by default
/// mimalloc commits whole arenas, which raised the peak RSS on
/// mt-daapd_comb.c from 82 to 114 MB; committed lazily it is 87 MB, at
/// the same speed.
/// Tree-sitter's C code allocates through mimalloc too: its parse trees are
/// many small nodes, and the memcached project's read + parse phase is
/// about 8% faster so (median 99 -> 91 ms, same-window A/B).
/// It must run before the first allocation (and tree-sitter's allocator
/// before any tree-sitter call), so it runs as an ELF constructor, before
/// the Rust runtime starts.
extern "C" fn tune_allocator() {
    // SAFETY: a plain option store, before any thread exists.
    unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) }
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
mod check;
mod inputs;
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

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Sarif,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse files or folders (each folder is one program) and report races.
    Check {
        /// C files or folders; defaults to the current folder.
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// A racelens.toml to use instead of the one found upward from the first path.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Run the interleaving check without a budget and print a schedule
        /// that exhibits each race (SARIF: codeFlows) and the refuted candidates.
        #[arg(long)]
        explain: bool,
    },
    /// Run the language server over stdio.
    Lsp,
    /// Measure the language server's edit and load latencies.
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check {
            paths,
            format,
            config,
            explain,
        } => check::run(paths, format, config, explain),
        Command::Bench { which } => bench::run(which),
        Command::Lsp => {
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
