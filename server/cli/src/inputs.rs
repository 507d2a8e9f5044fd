//! Finding the C files of a program and its configuration on disk.
//!
//! A folder is one program made of its .c and .h files; `.gitignore` is
//! respected and `compile_commands.json`, when present, names the .c files.
//! Folder scanning and lossy reads are shared with the language server
//! (`racelens_lsp::workspace`); this is the only place the CLI reads files.

use racelens_analysis::{Config, ConfigError};
use racelens_lsp::workspace;
use std::path::{Path, PathBuf};

/// Collects the files named by `paths` (files or folders).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta =
            std::fs::metadata(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        if meta.is_dir() {
            out.extend(workspace::folder_files(p));
        } else {
            out.push(absolute(p));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Reads a file, replacing invalid UTF-8.
pub fn read_lossy(p: &Path) -> Result<String, String> {
    workspace::read_lossy(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))
}

/// Finds `racelens.toml` upward from `start`.
pub fn find_config(start: &Path) -> Option<PathBuf> {
    let start = absolute(start);
    let mut dir = if start.is_dir() {
        Some(start.as_path())
    } else {
        start.parent()
    };
    while let Some(d) = dir {
        let c = d.join("racelens.toml");
        if c.is_file() {
            return Some(c);
        }
        dir = d.parent();
    }
    None
}

/// Loads a configuration file; errors are returned next to the defaults.
pub fn load_config(path: &Path) -> Result<(Config, Vec<ConfigError>), String> {
    let text = read_lossy(path)?;
    Ok(Config::from_toml(&text))
}
