//! Finding the C files of a program and its configuration on disk.
//!
//! A folder is one program made of its .c and .h files; `.gitignore` is
//! respected and `compile_commands.json`, when present, names the .c files.
//! This is the only place the CLI reads source files.

use racelens_analysis::{Config, ConfigError};
use std::path::{Path, PathBuf};

/// Collects the files named by `paths` (files or folders).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta =
            std::fs::metadata(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        if meta.is_dir() {
            out.extend(folder_files(p));
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

fn is_c(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "h"))
}

/// The .c/.h files of a folder: from `compile_commands.json` if present
/// (plus the headers), otherwise every file not ignored by `.gitignore`.
pub fn folder_files(dir: &Path) -> Vec<PathBuf> {
    let mut walked: Vec<PathBuf> = ignore::WalkBuilder::new(dir)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false) && is_c(e.path()))
        .map(|e| absolute(e.path()))
        .collect();
    if let Some(cc) = compile_commands(dir) {
        walked.retain(|p| p.extension().and_then(|e| e.to_str()) == Some("h") || cc.contains(p));
        for p in cc {
            if !walked.contains(&p) && p.exists() {
                walked.push(p);
            }
        }
    }
    walked.sort();
    walked
}

fn compile_commands(dir: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(dir.join("compile_commands.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut out = Vec::new();
    for e in v.as_array()? {
        let file = e.get("file")?.as_str()?;
        let base = e
            .get("directory")
            .and_then(|d| d.as_str())
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.to_path_buf());
        let p = base.join(file);
        out.push(absolute(&p));
    }
    Some(out)
}

/// Reads a file, replacing invalid UTF-8.
pub fn read_lossy(p: &Path) -> Result<String, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
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
