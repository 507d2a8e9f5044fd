//! How the workspace is built: `compile_commands.json` read into per-unit
//! flags, and the programs `racelens.toml` declares, as one
//! [`BuildConfig`] for the analysis.
//!
//! The database is looked up as clang-tidy does: in the folder given with
//! `-p` (the CLI) or, by default, in each workspace root and its `build/`.
//! Only `-D`, `-U`, `-I` (and `-iquote`, `-isystem`, `-idirafter`),
//! `-include` and `-std` are read; other flags do not change what racelens
//! sees. A database that does not parse is reported, never fatal.

use crate::workspace::canonical;
use racelens_analysis::units::{BuildConfig, DeclaredProgram};
use racelens_analysis::Config;
use racelens_syntax::cpp::{Flags, MacroOp};
use std::path::{Path, PathBuf};

/// The database's path: `build` itself when it is the file, else the
/// first of `build/compile_commands.json`, then each root's and its
/// `build/`'s.
pub fn database_path(roots: &[PathBuf], build: Option<&Path>) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    match build {
        Some(b) if b.is_file() => candidates.push(b.to_path_buf()),
        Some(b) => candidates.push(b.join(crate::workspace::DATABASE_FILE)),
        None => {
            for r in roots {
                let dir = if r.is_dir() {
                    r.clone()
                } else {
                    r.parent().map(Path::to_path_buf).unwrap_or_default()
                };
                candidates.push(dir.join(crate::workspace::DATABASE_FILE));
                candidates.push(dir.join("build").join(crate::workspace::DATABASE_FILE));
            }
        }
    }
    candidates.into_iter().find(|c| c.is_file())
}

/// Reads the build configuration. `extra` holds the command line's own
/// `-D`/`-U`/`-I` flags, which apply to every unit (after the database's).
/// `config_dir` is where `racelens.toml` lives (declared programs' globs
/// are relative to it); `files` are the workspace's files. Problems come
/// back as messages.
pub fn build_config(
    roots: &[PathBuf],
    build: Option<&Path>,
    config: &Config,
    config_dir: Option<&Path>,
    extra: &Flags,
    files: &[PathBuf],
) -> (BuildConfig, Vec<String>) {
    let mut out = BuildConfig {
        default_flags: extra.clone(),
        ..BuildConfig::default()
    };
    let mut warnings = Vec::new();
    if let Some(db) = database_path(roots, build) {
        match read_database(&db) {
            Ok(entries) => {
                for (file, mut flags) in entries {
                    flags.macros.extend(extra.macros.iter().cloned());
                    flags
                        .include_dirs
                        .extend(extra.include_dirs.iter().cloned());
                    out.per_file.insert(file, flags);
                }
                out.database = Some(db);
            }
            Err(e) => warnings.push(format!("{}: {e}; its flags are not used", db.display())),
        }
    }
    for (name, globs) in &config.programs {
        let base = config_dir.map(Path::to_path_buf).unwrap_or_default();
        let mut set = globset::GlobSetBuilder::new();
        for g in globs {
            let pattern = if Path::new(g).is_absolute() {
                g.clone()
            } else {
                base.join(g).to_string_lossy().into_owned()
            };
            match globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
            {
                Ok(g) => {
                    set.add(g);
                }
                Err(e) => warnings.push(format!("program `{name}`: invalid glob `{g}`: {e}")),
            }
        }
        let Ok(set) = set.build() else { continue };
        let members: Vec<PathBuf> = files.iter().filter(|f| set.is_match(f)).cloned().collect();
        if members.is_empty() {
            warnings.push(format!("program `{name}` in racelens.toml matches no file"));
        }
        out.programs.push(DeclaredProgram {
            name: name.clone(),
            files: members,
        });
    }
    (out, warnings)
}

/// The units of a database with their flags.
pub(crate) fn read_database(path: &Path) -> Result<Vec<(PathBuf, Flags)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let entries: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| format!("not a compilation database ({e})"))?;
    let here = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for e in &entries {
        let Some(file) = e.get("file").and_then(|f| f.as_str()) else {
            continue;
        };
        let dir = match e.get("directory").and_then(|d| d.as_str()) {
            Some(d) if Path::new(d).is_absolute() => PathBuf::from(d),
            Some(d) => here.join(d),
            None => here.to_path_buf(),
        };
        let args: Vec<String> = match (e.get("arguments"), e.get("command")) {
            (Some(serde_json::Value::Array(a)), _) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            (_, Some(serde_json::Value::String(c))) => split_command(c),
            _ => Vec::new(),
        };
        out.push((canonical(&dir.join(file)), parse_flags(&args, &dir)));
    }
    Ok(out)
}

/// A shell command line split into words (quotes and backslashes).
pub fn split_command(c: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = c.chars();
    while let Some(ch) = chars.next() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// The flags that change what racelens sees, from a compiler's arguments.
pub fn parse_flags(args: &[String], dir: &Path) -> Flags {
    let mut f = Flags::default();
    let mut i = 0;
    let path = |p: &str| canonical(&dir.join(p));
    while i < args.len() {
        let a = args[i].as_str();
        let mut value = |flag: &str| -> Option<String> {
            if a == flag {
                i += 1;
                args.get(i).cloned()
            } else {
                a.strip_prefix(flag).map(str::to_string)
            }
        };
        if let Some(d) = value("-D") {
            match d.split_once('=') {
                Some((n, v)) => f
                    .macros
                    .push((n.to_string(), MacroOp::Define(Some(v.to_string())))),
                None => f.macros.push((d, MacroOp::Define(None))),
            }
        } else if let Some(u) = value("-U") {
            f.macros.push((u, MacroOp::Undef));
        } else if let Some(inc) = value("-include") {
            f.forced_includes.push(path(&inc));
        } else if let Some(d) = value("-iquote")
            .or_else(|| value("-isystem"))
            .or_else(|| value("-idirafter"))
            .or_else(|| value("-I"))
        {
            f.include_dirs.push(path(&d));
        } else if let Some(s) = a.strip_prefix("-std=") {
            f.std = Some(s.to_string());
        }
        i += 1;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_from_a_command_line() {
        let args = split_command(
            r#"cc -c -DTHREADSAFE -D VERSION="\"1.0\"" -UNDEBUG -I include -Isrc -std=c11 -include cfg.h -O2 -o x.o x.c"#,
        );
        let f = parse_flags(&args, Path::new("/nonexistent"));
        assert_eq!(
            f.macros,
            vec![
                ("THREADSAFE".to_string(), MacroOp::Define(None)),
                (
                    "VERSION".to_string(),
                    MacroOp::Define(Some("\"1.0\"".to_string()))
                ),
                ("NDEBUG".to_string(), MacroOp::Undef),
            ]
        );
        assert_eq!(
            f.include_dirs,
            vec![
                PathBuf::from("/nonexistent/include"),
                PathBuf::from("/nonexistent/src")
            ]
        );
        assert_eq!(f.forced_includes, vec![PathBuf::from("/nonexistent/cfg.h")]);
        assert_eq!(f.std.as_deref(), Some("c11"));
    }
}
