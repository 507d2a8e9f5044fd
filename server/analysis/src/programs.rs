//! Programs: which translation units link together, as a linker would
//! decide.
//!
//! - Each unit that defines `main` roots a program. The program pulls in,
//!   transitively, the units that define the external names its units use.
//! - A name that two candidate units define is a link ambiguity: the
//!   program forks into one variant per candidate (at most
//!   [`MAX_VARIANTS`]), each analysed on its own, and a note says so. No
//!   definition is dropped.
//! - Units that no program pulls in form one library, analysed in library
//!   mode.
//! - `racelens.toml` may declare programs by their files; declared
//!   programs come first and their units are not used by the heuristic.
//! - Headers belong to the programs whose units include them. A header no
//!   unit includes (an include path racelens could not resolve) belongs to
//!   every program, so that its declarations stay visible.
//!
//! "Uses" are the identifiers of a unit's compiled text (its view) that it
//! does not define itself: a superset of the names the linker resolves. A
//! local variable named like another unit's external definition can pull
//! that unit in; the result is a larger program, never a lost definition.
//!
//! With at most one unit, the whole workspace is one program (or library),
//! exactly as before programs existed; no unit is scanned.

use crate::db::{file_items, SourceFile};
use crate::units::{file_view, is_unit, unit_headers, Universe};
use racelens_syntax::Name;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// Most variants one program forks into over link ambiguities.
pub const MAX_VARIANTS: usize = 8;

/// One program (or the library) as the analysis sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProgramSpec {
    pub name: String,
    /// No unit defines `main`: analysed in library mode.
    pub library: bool,
    /// Declared in `racelens.toml`.
    pub declared: bool,
    /// Its translation units, in path order.
    pub units: Vec<PathBuf>,
    /// Its files: units and headers, in path order.
    pub files: Vec<SourceFile>,
}

/// The programs of a workspace and the notes about how they were formed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Partition {
    pub programs: Vec<ProgramSpec>,
    /// Link ambiguities and duplicate definitions: (file, message).
    pub notes: Vec<(PathBuf, String)>,
}

/// What one unit defines and uses, for linking.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UnitSymbols {
    pub has_main: bool,
    /// External functions and objects it defines.
    pub defines: BTreeSet<Name>,
    /// Identifiers it mentions and does not define.
    pub uses: BTreeSet<Name>,
}

const KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Atomic",
    "_Thread_local",
    "define",
    "include",
    "ifdef",
    "ifndef",
    "endif",
    "elif",
    "undef",
    "pragma",
    "defined",
];

#[salsa::tracked(returns(ref))]
pub fn unit_symbols(db: &dyn salsa::Database, u: Universe, file: SourceFile) -> Arc<UnitSymbols> {
    let items = file_items(db, u, file);
    let mut defines = BTreeSet::new();
    let mut local = BTreeSet::new();
    let mut has_main = false;
    for f in &items.functions {
        if f.is_static {
            local.insert(f.name.clone());
        } else {
            has_main |= &*f.name == "main";
            defines.insert(f.name.clone());
        }
    }
    for g in &items.globals {
        if g.ty.is_static {
            local.insert(g.name.clone());
        } else if !g.is_extern {
            defines.insert(g.name.clone());
        }
    }
    let text = &file_view(db, u, file).text;
    // Distinct words first (a hash set of slices): a large unit mentions
    // tens of thousands of identifiers, a few thousand distinct ones.
    let words: rustc_hash::FxHashSet<&str> = identifiers(text).map(|(_, w)| w).collect();
    let uses: BTreeSet<Name> = words
        .into_iter()
        .filter(|w| !defines.contains(*w) && !local.contains(*w) && !KEYWORDS.contains(w))
        .map(Name::from)
        .collect();
    Arc::new(UnitSymbols {
        has_main,
        defines,
        uses,
    })
}

/// The identifiers of C text, with their byte offsets, outside comments,
/// strings and characters (numbers, `0x1f` and `1e10` included, skipped).
pub(crate) fn identifiers(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            let c = b[i];
            if c == b'/' && b.get(i + 1) == Some(&b'/') {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            } else if c == b'"' || c == b'\'' {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            } else if c.is_ascii_alphabetic() || c == b'_' {
                let st = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                return text.get(st..i).map(|w| (st, w));
            } else if c.is_ascii_digit() {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

fn stem(p: &std::path::Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// The programs of the universe (see the module doc).
#[salsa::tracked(returns(ref))]
pub fn partition(db: &dyn salsa::Database, u: Universe) -> Arc<Partition> {
    let mut all: Vec<SourceFile> = u.files(db).clone();
    all.sort_by(|a, b| a.path(db).cmp(b.path(db)));
    let units: Vec<SourceFile> = all
        .iter()
        .copied()
        .filter(|f| is_unit(f.path(db)))
        .collect();
    let declared = &u.build(db).programs;
    if units.len() <= 1 && declared.is_empty() {
        let name = units
            .first()
            .map(|f| stem(f.path(db)))
            .unwrap_or_else(|| "library".to_string());
        return Arc::new(Partition {
            programs: vec![ProgramSpec {
                name,
                library: false,
                declared: false,
                units: units.iter().map(|f| f.path(db).clone()).collect(),
                files: all,
            }],
            notes: Vec::new(),
        });
    }
    let by_path: BTreeMap<PathBuf, SourceFile> =
        all.iter().map(|f| (f.path(db).clone(), *f)).collect();
    let headers_of: BTreeMap<PathBuf, Vec<PathBuf>> = units
        .iter()
        .map(|f| (f.path(db).clone(), unit_headers(db, u, *f)))
        .collect();
    let included: BTreeSet<&PathBuf> = headers_of.values().flatten().collect();
    let orphans: Vec<PathBuf> = by_path
        .keys()
        .filter(|p| !is_unit(p) && !included.contains(p))
        .cloned()
        .collect();
    let files_of = |members: &BTreeSet<PathBuf>| -> Vec<SourceFile> {
        let mut v: BTreeSet<&PathBuf> = members.iter().collect();
        for m in members {
            v.extend(headers_of.get(m).into_iter().flatten());
        }
        v.extend(orphans.iter());
        v.into_iter()
            .filter_map(|p| by_path.get(p).copied())
            .collect()
    };
    let has_main = |p: &PathBuf| unit_symbols(db, u, by_path[p]).has_main;
    let mut out = Partition::default();
    let mut taken: BTreeSet<PathBuf> = BTreeSet::new();
    for d in declared {
        let members: BTreeSet<PathBuf> = d
            .files
            .iter()
            .filter(|p| by_path.contains_key(*p) && is_unit(p))
            .cloned()
            .collect();
        taken.extend(members.iter().cloned());
        let library = !members.iter().any(has_main);
        out.programs.push(ProgramSpec {
            name: d.name.clone(),
            library,
            declared: true,
            units: members.iter().cloned().collect(),
            files: files_of(&members),
        });
    }
    let free: Vec<PathBuf> = units
        .iter()
        .map(|f| f.path(db).clone())
        .filter(|p| !taken.contains(p))
        .collect();
    let syms: BTreeMap<PathBuf, &Arc<UnitSymbols>> = free
        .iter()
        .map(|p| (p.clone(), unit_symbols(db, u, by_path[p])))
        .collect();
    let roots: Vec<&PathBuf> = free.iter().filter(|p| syms[*p].has_main).collect();
    // Who defines each external name (units with their own `main` link
    // into no other program).
    let mut definers: BTreeMap<&Name, Vec<PathBuf>> = BTreeMap::new();
    for f in &free {
        if !syms[f].has_main {
            for n in &syms[f].defines {
                definers.entry(n).or_default().push(f.clone());
            }
        }
    }
    let mut reached: BTreeSet<PathBuf> = BTreeSet::new();
    let mut ambiguous: BTreeSet<(Name, Vec<PathBuf>)> = BTreeSet::new();
    for root in roots {
        let variants = link(root, &syms, &definers, &mut ambiguous);
        let many = variants.len() > 1;
        for members in variants {
            reached.extend(members.iter().cloned());
            let mut name = stem(root);
            if many {
                let extra: Vec<String> = members
                    .iter()
                    .filter(|m| *m != root)
                    .filter(|m| ambiguous.iter().any(|(_, c)| c.contains(m)))
                    .map(|m| file_name(m))
                    .collect();
                name = format!("{name} (with {})", extra.join(", "));
            }
            for (a, (x, y)) in duplicates(&members, &syms) {
                out.notes.push((
                    root.clone(),
                    format!(
                        "program `{name}`: `{a}` is defined in both {} and {}; both definitions are analysed",
                        file_name(&x),
                        file_name(&y)
                    ),
                ));
            }
            out.programs.push(ProgramSpec {
                name,
                library: false,
                declared: false,
                units: members.iter().cloned().collect(),
                files: files_of(&members),
            });
        }
    }
    for (n, cands) in &ambiguous {
        let names: Vec<String> = cands.iter().map(|c| file_name(c)).collect();
        out.notes.push((
            cands[0].clone(),
            format!(
                "link ambiguity: `{n}` is defined in {}; each program that uses it is analysed once with each definition",
                names.join(" and ")
            ),
        ));
    }
    let rest: BTreeSet<PathBuf> = free
        .iter()
        .filter(|f| !reached.contains(*f))
        .cloned()
        .collect();
    if !rest.is_empty() || out.programs.is_empty() {
        out.programs.push(ProgramSpec {
            name: "library".to_string(),
            library: true,
            declared: false,
            units: rest.iter().cloned().collect(),
            files: if rest.is_empty() {
                all.clone()
            } else {
                files_of(&rest)
            },
        });
    }
    // Names are unique: a second program of one name gets a number.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for p in &mut out.programs {
        let k = seen.entry(p.name.clone()).or_default();
        *k += 1;
        if *k > 1 {
            p.name = format!("{} #{k}", p.name);
        }
    }
    Arc::new(out)
}

type Syms<'a> = BTreeMap<PathBuf, &'a Arc<UnitSymbols>>;

/// The unit sets of the program rooted at `root`: one per combination of
/// choices at link ambiguities, at most [`MAX_VARIANTS`].
fn link(
    root: &PathBuf,
    syms: &Syms,
    definers: &BTreeMap<&Name, Vec<PathBuf>>,
    ambiguous: &mut BTreeSet<(Name, Vec<PathBuf>)>,
) -> Vec<BTreeSet<PathBuf>> {
    let mut done = Vec::new();
    let mut todo = vec![BTreeSet::from([root.clone()])];
    while let Some(mut members) = todo.pop() {
        let mut fork = None;
        loop {
            let defined: BTreeSet<&Name> = members
                .iter()
                .flat_map(|m| syms[m].defines.iter())
                .collect();
            let mut add = Vec::new();
            for m in &members {
                for n in &syms[m].uses {
                    if defined.contains(n) {
                        continue;
                    }
                    match definers.get(n).map(|v| v.as_slice()) {
                        Some([one]) => add.push(one.clone()),
                        Some(many) if many.len() > 1 && fork.is_none() => {
                            fork = Some((n.clone(), many.to_vec()));
                        }
                        _ => {}
                    }
                }
            }
            let before = members.len();
            members.extend(add);
            if members.len() == before {
                break;
            }
        }
        // Resolve the first ambiguity still open by forking.
        let open = fork.filter(|(n, _)| !members.iter().any(|m| syms[m].defines.contains(n)));
        match open {
            Some((n, cands)) if done.len() + todo.len() < MAX_VARIANTS => {
                ambiguous.insert((n, cands.clone()));
                for c in cands.iter().rev() {
                    let mut v = members.clone();
                    v.insert(c.clone());
                    todo.push(v);
                }
            }
            _ => done.push(members),
        }
    }
    done.sort();
    done.dedup();
    done
}

/// Names that two units of one program both define.
fn duplicates(members: &BTreeSet<PathBuf>, syms: &Syms) -> Vec<(Name, (PathBuf, PathBuf))> {
    let mut first: BTreeMap<&Name, &PathBuf> = BTreeMap::new();
    let mut out = Vec::new();
    for m in members {
        for n in &syms[m].defines {
            match first.get(n) {
                Some(f) => out.push((n.clone(), ((*f).clone(), m.clone()))),
                None => {
                    first.insert(n, m);
                }
            }
        }
    }
    out
}
