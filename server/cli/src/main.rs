//! The `racelens` binary: `check` for people and CI, `lsp` for editors,
//! `bench` for the committed benchmarks.

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
