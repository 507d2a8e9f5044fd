//! The files of the workspace on disk: which .c/.h files make up the
//! program, reading them, and where `racelens.toml` is.
//!
//! A folder's files come from `compile_commands.json` when it has one (plus
//! every header), otherwise from a walk that respects `.gitignore`. This is
//! the only module of the server that reads source files from disk.

use racelens_syntax::Parsed;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const CONFIG_FILE: &str = "racelens.toml";
pub const DATABASE_FILE: &str = "compile_commands.json";

pub fn is_c(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("c" | "h"))
}

pub fn is_config(p: &Path) -> bool {
    p.file_name().and_then(|n| n.to_str()) == Some(CONFIG_FILE)
}

/// The canonical path, or the path itself when it cannot be resolved.
pub fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The C files of all `roots`, sorted.
pub fn scan(roots: &[PathBuf]) -> BTreeSet<PathBuf> {
    roots.iter().flat_map(|r| folder_files(r)).collect()
}

/// The .c/.h files of one folder: from `compile_commands.json` if present
/// (plus every header), otherwise every file not ignored by `.gitignore`.
pub fn folder_files(dir: &Path) -> Vec<PathBuf> {
    folder_files_with(dir, dir)
}

/// [`folder_files`] with `compile_commands.json` looked up in `build`
/// (the CLI's `-p BUILD_DIR`, or the folder's `build/`).
pub fn folder_files_with(dir: &Path, build: &Path) -> Vec<PathBuf> {
    let walked = ignore::WalkBuilder::new(dir)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && is_c(e.path()))
        .map(|e| canonical(e.path()));
    let Some(listed) = compile_commands(build) else {
        return walked.collect();
    };
    let mut files: Vec<PathBuf> = walked
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("h"))
        .collect();
    files.extend(listed.into_iter().filter(|p| p.is_file()));
    files
}

/// The source files named by `dir/compile_commands.json`, if it exists and parses.
fn compile_commands(dir: &Path) -> Option<Vec<PathBuf>> {
    let entries = crate::build::read_database(&dir.join(DATABASE_FILE)).ok()?;
    Some(entries.into_iter().map(|(file, _)| file).collect())
}

/// Reads a file, replacing invalid UTF-8 rather than failing.
pub fn read_lossy(p: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(p)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Reads and parses files in parallel, the largest first so that no thread
/// is left with a big file at the end; unreadable files are logged and
/// skipped. The result keeps the order of `paths`.
pub fn load(paths: &[PathBuf]) -> Vec<(PathBuf, Parsed)> {
    use racelens_syntax::par;
    let order = par::largest_first(
        paths
            .iter()
            .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)),
    );
    par::run(&order, vec![(); par::workers(8)], |(), next| {
        let mut done = Vec::new();
        while let Some(i) = next() {
            done.extend(load_one(&paths[i]).map(|l| (i, l)));
        }
        done
    })
    .into_iter()
    .map(|x| x.1)
    .collect()
}

fn load_one(p: &Path) -> Option<(PathBuf, Parsed)> {
    match read_lossy(p) {
        Ok(text) => Some((
            p.to_path_buf(),
            racelens_syntax::parse::parse(Arc::from(text)),
        )),
        Err(e) => {
            tracing::warn!("cannot read `{}`: {e}", p.display());
            None
        }
    }
}

/// The configuration file in use: `configured` (absolute, or relative to
/// the first root; `${workspaceFolder}` and a leading `~` are expanded as
/// editors do) when set, else `racelens.toml` in the first root that has one.
pub fn config_path(configured: &str, roots: &[PathBuf]) -> Option<PathBuf> {
    if !configured.is_empty() {
        let mut expanded = configured.to_string();
        if let Some(root) = roots.first() {
            expanded = expanded.replace("${workspaceFolder}", &root.to_string_lossy());
        }
        if let (Some(rest), Some(home)) = (expanded.strip_prefix("~/"), std::env::var_os("HOME")) {
            expanded = Path::new(&home).join(rest).to_string_lossy().into_owned();
        }
        let p = PathBuf::from(expanded);
        return Some(match (p.is_absolute(), roots.first()) {
            (false, Some(root)) => canonical(&root.join(p)),
            _ => canonical(&p),
        });
    }
    // In a root, else upward from the first root, as the CLI does.
    roots
        .iter()
        .map(|r| r.join(CONFIG_FILE))
        .chain(
            roots
                .first()
                .into_iter()
                .flat_map(|r| r.ancestors().skip(1))
                .map(|d| d.join(CONFIG_FILE)),
        )
        .find(|p| p.is_file())
        .map(|p| canonical(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_respects_gitignore_and_compile_commands() {
        let dir = std::env::temp_dir().join(format!("racelens-ws-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/build")).unwrap();
        for f in ["a/x.c", "a/y.h", "a/build/gen.c", "a/notes.txt"] {
            std::fs::write(dir.join(f), "int v;\n").unwrap();
        }
        std::fs::write(dir.join("a/.gitignore"), "build/\n").unwrap();
        let names = |set: BTreeSet<PathBuf>| {
            set.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(scan(&[canonical(&dir.join("a"))])), ["x.c", "y.h"]);
        std::fs::write(
            dir.join("a/compile_commands.json"),
            r#"[{"directory": "build", "file": "gen.c"}]"#
                .replace("build", &dir.join("a/build").to_string_lossy()),
        )
        .unwrap();
        assert_eq!(names(scan(&[canonical(&dir.join("a"))])), ["gen.c", "y.h"]);
        let root = canonical(&dir.join("a"));
        assert_eq!(
            config_path("${workspaceFolder}/x.toml", std::slice::from_ref(&root)),
            Some(root.join("x.toml"))
        );
        assert_eq!(
            config_path("x.toml", std::slice::from_ref(&root)),
            Some(root.join("x.toml"))
        );
        assert_eq!(config_path("", std::slice::from_ref(&root)), None);
        // One folder above the root.
        std::fs::write(dir.join(CONFIG_FILE), "").unwrap();
        assert_eq!(
            config_path("", std::slice::from_ref(&root)),
            Some(canonical(&dir.join(CONFIG_FILE)))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
