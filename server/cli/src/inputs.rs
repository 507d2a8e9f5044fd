//! Finding the C files of a program and its configuration on disk.
//!
//! A folder is one program made of its .c and .h files; `.gitignore` is
//! respected and `compile_commands.json`, when present, names the .c files.
//! Folder scanning and lossy reads are shared with the language server
//! (`racelens_lsp::workspace`); this is the only place the CLI reads files.

use racelens_analysis::{Config, ConfigError};
use racelens_lsp::workspace;
use std::path::{Path, PathBuf};

/// The files to analyse, and the notices about inputs left out.
pub struct Collected {
    pub files: Vec<PathBuf>,
    /// Files named on the command line that are not C sources.
    pub not_c: Vec<(PathBuf, String)>,
}

/// Collects the files named by `paths` (files or folders). Files named
/// directly must be C sources (`.c`, `.h`, `.i`); others are reported in
/// [`Collected::not_c`]. `build` is where `compile_commands.json` is looked
/// up (default: each folder, then its `build/`); `exclude` globs leave
/// files out.
pub fn collect(
    paths: &[PathBuf],
    build: Option<&Path>,
    exclude: &[String],
) -> Result<Collected, String> {
    let excluded = exclude_set(exclude)?;
    let cwd = std::env::current_dir().ok().map(|c| absolute(&c));
    let mut out = Vec::new();
    let mut not_c = Vec::new();
    for p in paths {
        let meta =
            std::fs::metadata(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        if meta.is_dir() {
            let dir = absolute(p);
            let build = match build {
                Some(b) => b.to_path_buf(),
                None if dir.join("compile_commands.json").is_file() => dir.clone(),
                None => dir.join("build"),
            };
            out.extend(
                workspace::folder_files_with(p, &build)
                    .into_iter()
                    .filter(|f| !is_excluded(&excluded, f, Some(&dir), cwd.as_deref())),
            );
        } else {
            let f = absolute(p);
            if is_excluded(&excluded, &f, None, cwd.as_deref()) {
                continue;
            }
            match not_c_reason(&f) {
                Some(why) => not_c.push((f, why)),
                None => out.push(f),
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(Collected { files: out, not_c })
}

fn exclude_set(globs: &[String]) -> Result<globset::GlobSet, String> {
    let mut b = globset::GlobSetBuilder::new();
    for g in globs {
        b.add(globset::Glob::new(g).map_err(|e| format!("invalid --exclude glob `{g}`: {e}"))?);
    }
    b.build()
        .map_err(|e| format!("invalid --exclude glob: {e}"))
}

/// Does a glob match the path relative to the folder given, relative to
/// the current folder, as given absolute, or its file name?
fn is_excluded(set: &globset::GlobSet, f: &Path, root: Option<&Path>, cwd: Option<&Path>) -> bool {
    if set.is_empty() {
        return false;
    }
    let rel = |base: Option<&Path>| base.and_then(|b| f.strip_prefix(b).ok());
    set.is_match(f)
        || rel(root).is_some_and(|r| set.is_match(r))
        || rel(cwd).is_some_and(|r| set.is_match(r))
        || f.file_name().is_some_and(|n| set.is_match(n))
}

/// Why a file named on the command line is not analysed as C, if it is not.
fn not_c_reason(f: &Path) -> Option<String> {
    let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !matches!(ext, "c" | "h" | "i") {
        return Some(if ext.is_empty() {
            "not a C source file (no .c or .h extension), skipped".to_string()
        } else {
            format!("not a C source file (.{ext}), skipped")
        });
    }
    is_binary(f).then(|| "not a C source file (binary content), skipped".to_string())
}

/// A NUL byte in the first 8 KiB marks a binary file, as for git and grep.
pub fn is_binary(f: &Path) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 8192];
    let Ok(mut file) = std::fs::File::open(f) else {
        return false;
    };
    let n = file.read(&mut buf).unwrap_or(0);
    buf[..n].contains(&0)
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
