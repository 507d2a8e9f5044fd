//! Translation units and what the compiler sees of each file.
//!
//! The [`Universe`] input holds every file racelens was given and how each
//! unit is compiled ([`BuildConfig`]). Each `.c` (or `.i`) file is a
//! translation unit; [`unit_conditions`] evaluates its conditional
//! compilation, through the workspace headers it includes
//! ([`racelens_syntax::cpp`]). [`file_view`] is a file as the compiler
//! sees it: inactive branches and decided directive lines blanked, every
//! offset unchanged, so spans into the view are spans into the file.
//!
//! Invariants:
//! - A unit's view depends only on its own flags and the workspace texts.
//!   A header's view is the one of its first inclusion in each unit that
//!   includes it; when those units disagree, it keeps what any of them
//!   compiles ([`cpp::merge`]) and counts the disagreement as undecided.
//! - A file with nothing to blank is its own view (no second parse).
//! - Include lookup: a quoted include from the including file's folder,
//!   then the unit's `-I` folders, then, as a last resort, the one
//!   workspace file whose path ends with the include's path.

use crate::db::SourceFile;
use racelens_syntax::cpp::{self, FileBlanks, Flags, UnitConditions};
use racelens_syntax::{parse, Parsed};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Every file given, and how units are compiled.
#[salsa::input(debug)]
pub struct Universe {
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    #[returns(ref)]
    pub build: Arc<BuildConfig>,
}

/// How each unit is compiled, and the programs the user declared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BuildConfig {
    /// Flags of units the compilation database does not list.
    pub default_flags: Flags,
    /// Flags of the units the compilation database lists.
    pub per_file: BTreeMap<PathBuf, Flags>,
    /// Programs declared in `racelens.toml`: a name and its files.
    pub programs: Vec<DeclaredProgram>,
    /// Where the flags came from (`compile_commands.json`'s path), for
    /// `--list-programs`.
    pub database: Option<PathBuf>,
}

/// A program named in `racelens.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeclaredProgram {
    pub name: String,
    /// The files, as absolute paths (globs already expanded by the caller).
    pub files: Vec<PathBuf>,
}

impl BuildConfig {
    pub fn flags_of(&self, path: &Path) -> &Flags {
        self.per_file.get(path).unwrap_or(&self.default_flags)
    }
}

/// Is this file a translation unit (as opposed to a header)?
pub fn is_unit(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("c" | "i"))
}

/// The files by path.
#[salsa::tracked(returns(ref))]
pub fn universe_index(
    db: &dyn salsa::Database,
    u: Universe,
) -> Arc<FxHashMap<PathBuf, SourceFile>> {
    Arc::new(
        u.files(db)
            .iter()
            .map(|f| (f.path(db).clone(), *f))
            .collect(),
    )
}

/// `a/b/../c` as `a/c`, without touching the disk.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

struct Finder<'a> {
    db: &'a dyn salsa::Database,
    index: &'a FxHashMap<PathBuf, SourceFile>,
    dirs: &'a [PathBuf],
}

impl cpp::Sources for Finder<'_> {
    fn find(&mut self, spec: &str, quoted: bool, from: &Path) -> Option<(PathBuf, Arc<str>)> {
        let spec_path = Path::new(spec);
        let here = from.parent().map(|d| d.join(spec_path));
        let candidates = here
            .into_iter()
            .filter(|_| quoted)
            .chain(self.dirs.iter().map(|d| d.join(spec_path)));
        let hit = candidates
            .map(|c| normalize(&c))
            .find_map(|c| self.index.get(&c).copied())
            .or_else(|| {
                // No compilation database: the one workspace file whose
                // path ends with the include's path.
                let mut it = self
                    .index
                    .iter()
                    .filter(|(p, _)| p.ends_with(spec_path) && !is_unit(p));
                match (it.next(), it.next()) {
                    (Some((_, f)), None) if quoted || self.dirs.is_empty() => Some(*f),
                    _ => None,
                }
            })?;
        Some((hit.path(self.db).clone(), hit.parsed(self.db).text.clone()))
    }
}

/// Might the text hold a directive that matters here (a conditional or an
/// include)? A cheap test that spares preprocessed files the line scan.
fn has_directives(text: &str) -> bool {
    racelens_syntax::preproc::may_have_directive(
        text.as_bytes(),
        &[b"if", b"el", b"endif", b"include"],
    )
}

/// The conditional compilation of one unit and the headers it includes.
#[salsa::tracked(returns(ref))]
pub fn unit_conditions(
    db: &dyn salsa::Database,
    u: Universe,
    file: SourceFile,
) -> Arc<UnitConditions> {
    let path = file.path(db);
    let text = &file.parsed(db).text;
    if !has_directives(text) {
        return Arc::new(UnitConditions {
            files: vec![(path.clone(), FileBlanks::default())],
            ..UnitConditions::default()
        });
    }
    let build = u.build(db);
    let flags = build.flags_of(path);
    let mut finder = Finder {
        db,
        index: universe_index(db, u),
        dirs: &flags.include_dirs,
    };
    Arc::new(cpp::evaluate(path, text, flags, &mut finder))
}

/// For each header, the units that include it, in path order.
#[salsa::tracked(returns(ref))]
pub fn header_units(
    db: &dyn salsa::Database,
    u: Universe,
) -> Arc<FxHashMap<PathBuf, Vec<SourceFile>>> {
    let mut units: Vec<SourceFile> = u
        .files(db)
        .iter()
        .copied()
        .filter(|f| is_unit(f.path(db)))
        .collect();
    units.sort_by(|a, b| a.path(db).cmp(b.path(db)));
    let mut by_header: FxHashMap<PathBuf, Vec<SourceFile>> = FxHashMap::default();
    for unit in units {
        for (p, _) in unit_conditions(db, u, unit).files.iter().skip(1) {
            by_header.entry(p.clone()).or_default().push(unit);
        }
    }
    Arc::new(by_header)
}

/// The headers each unit includes, transitively, by path.
pub fn unit_headers(db: &dyn salsa::Database, u: Universe, unit: SourceFile) -> Vec<PathBuf> {
    unit_conditions(db, u, unit)
        .files
        .iter()
        .skip(1)
        .map(|(p, _)| p.clone())
        .collect()
}

/// What to blank in a file.
#[salsa::tracked(returns(ref))]
pub fn file_blanks(db: &dyn salsa::Database, u: Universe, file: SourceFile) -> Arc<FileBlanks> {
    let path = file.path(db);
    if is_unit(path) {
        return Arc::new(
            unit_conditions(db, u, file)
                .of(path)
                .cloned()
                .unwrap_or_default(),
        );
    }
    let Some(units) = header_units(db, u).get(path) else {
        return Arc::default();
    };
    let mut variants: Vec<&FileBlanks> = Vec::new();
    let mut including: Vec<SourceFile> = Vec::new();
    for unit in units {
        let Some(b) = unit_conditions(db, u, *unit).of(path) else {
            continue;
        };
        if !variants.contains(&b) {
            variants.push(b);
        }
        including.push(*unit);
    }
    Arc::new(match variants.as_slice() {
        [] => FileBlanks::default(),
        [one] => (*one).clone(),
        _ => {
            // The units' names, for the note that counts the disagreement.
            let names: Vec<String> = including
                .iter()
                .map(|unit| {
                    let p = unit.path(db);
                    p.file_name().map_or_else(
                        || p.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    )
                })
                .collect();
            cpp::merge(&file.parsed(db).text, &variants, &names)
        }
    })
}

/// The file as the compiler sees it (see the module doc).
#[salsa::tracked(returns(ref))]
pub fn file_view(db: &dyn salsa::Database, u: Universe, file: SourceFile) -> Parsed {
    let parsed = file.parsed(db);
    let blanks = file_blanks(db, u, file);
    if blanks.blank.is_empty() {
        return parsed.clone();
    }
    let text: Arc<str> = Arc::from(cpp::apply(&parsed.text, &blanks.blank));
    // The previous view of this path, to parse only what changed.
    static VIEWS: OnceLock<Mutex<FxHashMap<PathBuf, Parsed>>> = OnceLock::new();
    let views = VIEWS.get_or_init(Default::default);
    let old = views
        .lock()
        .ok()
        .and_then(|m| m.get(file.path(db)).cloned());
    let view = match old {
        Some(old) => parse::reparse(&old, text),
        None => parse::parse(text),
    };
    if let Ok(mut m) = views.lock() {
        // Bounded: one view per path, the newest.
        if m.len() > 4096 {
            m.clear();
        }
        m.insert(file.path(db).clone(), view.clone());
    }
    view
}
