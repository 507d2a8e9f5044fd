//! Hover over a shared variable: who touches it, under which locks, and
//! whether it races.
//!
//! Exists so that an editor can answer "is this variable safe?" at any
//! mention of a global, static or struct field, from the same per-location
//! facts the race check uses. The name under the cursor is found on the
//! file's tree-sitter tree; an access is matched to its facts by span, and a
//! declaration by name (globals, static locals) or by struct and field.
//!
//! Inside a racy access (a race diagnostic's range) the hover describes the
//! objects that access races on, whatever name is under the cursor: at the
//! start of `config.stop` that is `config.stop`, not every field of
//! `config`; on a `strerror(...)` call, the library's hidden state.

use crate::db::{
    file_functions, function_offset, function_summary, program, FunctionId, SourceFile, Workspace,
};
use crate::facts::AccessFact;
use crate::locate::{fact_site, line_number, short_path, thread_label};
use crate::model::{Base, Elem, LocKey};
use crate::races::{
    location_accesses, locations, locations_in, races_at, thread_analysis, Confidence, Location,
};
use crate::snapshot::Analysis;
use racelens_syntax::{AccessKind, Stmt};
use rustc_hash::FxHashSet;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use tree_sitter::Node;

/// Locations shown in one hover at most.
const MAX_LOCATIONS: usize = 4;
/// Racy accesses listed per location at most.
const MAX_RACY_SITES: usize = 8;

/// Markdown describing the shared variable under `offset`, if any.
pub fn hover(analysis: &Analysis, path: &Path, offset: usize) -> Option<String> {
    let analysis = &analysis.for_file(path);
    let db = analysis.db();
    let ws = analysis.workspace();
    let file = analysis.file(path)?;
    let racy = racy_at(analysis, file, path, offset);
    let locs = if racy.is_empty() {
        let parsed = file.parsed(db);
        let root = parsed.tree.root_node();
        let node = [offset, offset.saturating_sub(1)]
            .into_iter()
            .filter_map(|o| root.descendant_for_byte_range(o, o))
            .find(|n| matches!(n.kind(), "identifier" | "field_identifier"))?;
        let name = parsed.text.get(node.byte_range())?.to_string();
        let target = Target {
            db,
            ws,
            file,
            path,
            node,
            name: name.clone(),
        };
        let locs = target.by_access().or_else(|| target.by_declaration())?;
        if locs.is_empty() {
            if let Some(text) = target.lock_key().and_then(|k| lock_summary(analysis, &k)) {
                return Some(text);
            }
            return target
                .is_shared_name()
                .then(|| format!("**`{name}`**: no thread accesses it"));
        }
        locs
    } else {
        racy
    };
    render_all(analysis, &locs)
}

/// The locations of the narrowest racy access in `path` that contains
/// `offset` (the range of its race diagnostic), in the order the race
/// reports meet them (so the object the diagnostic names comes first).
fn racy_at(analysis: &Analysis, file: SourceFile, path: &Path, offset: usize) -> Vec<Shown> {
    let db = analysis.db();
    let files: FxHashSet<SourceFile> = [file].into_iter().collect();
    let mut best: Option<usize> = None;
    let mut out: Vec<Shown> = Vec::new();
    for loc in locations_in(db, analysis.workspace(), Some(&files)) {
        let pairs = races_at(db, loc);
        if pairs.is_empty() {
            continue;
        }
        let facts = location_accesses(db, loc);
        let base = loc.key(db);
        for i in pairs.iter().flat_map(|p| [p.a, p.b]) {
            let f = &facts[i as usize];
            if f.func.file(db) != file {
                continue;
            }
            let s = fact_site(db, f);
            if s.file != path || !(s.start <= offset && offset < s.end.max(s.start + 1)) {
                continue;
            }
            let width = s.end - s.start;
            if best.is_some_and(|b| width > b) {
                continue;
            }
            if best.is_some_and(|b| width < b) {
                out.clear();
            }
            best = Some(width);
            let key = f.key(base);
            if !out.iter().any(|s| s.key == key) {
                out.push(Shown { loc, key });
            }
        }
    }
    out
}

fn render_all(analysis: &Analysis, locs: &[Shown]) -> Option<String> {
    if locs.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, shown) in locs.iter().take(MAX_LOCATIONS).enumerate() {
        if i > 0 {
            out.push_str("\n---\n\n");
        }
        render(analysis, shown, &mut out);
    }
    if locs.len() > MAX_LOCATIONS {
        let _ = writeln!(out, "\n… and {} more locations", locs.len() - MAX_LOCATIONS);
    }
    Some(out)
}

/// The name under the cursor and where it is.
struct Target<'a> {
    db: &'a dyn salsa::Database,
    ws: Workspace,
    file: SourceFile,
    path: &'a Path,
    node: Node<'a>,
    name: String,
}

impl Target<'_> {
    /// Locations accessed by the expression under the cursor, matched by span.
    fn by_access(&self) -> Option<Vec<Shown>> {
        let mut spans = vec![self.node.byte_range()];
        if let Some(p) = self.node.parent() {
            let is_field = self.node.kind() == "field_identifier" && p.kind() == "field_expression";
            let is_array = p.kind() == "subscript_expression"
                && p.child_by_field_name("argument") == Some(self.node);
            if is_field || is_array {
                spans.insert(0, p.byte_range());
            }
        }
        for span in spans {
            let found = self.shown(|_, f| {
                let s = fact_site(self.db, f);
                s.file == self.path && s.start == span.start && s.end == span.end
            });
            if !found.is_empty() {
                return Some(found);
            }
        }
        None
    }

    /// Every distinct location (base and path) with an access that `keep` accepts.
    fn shown(&self, keep: impl Fn(&LocKey, &AccessFact) -> bool) -> Vec<Shown> {
        let mut out: Vec<Shown> = Vec::new();
        for &loc in locations(self.db, self.ws) {
            let base = loc.key(self.db);
            for f in location_accesses(self.db, loc).iter() {
                let key = f.key(base);
                if keep(&key, f) && !out.iter().any(|s| s.key == key) {
                    out.push(Shown { loc, key });
                }
            }
        }
        out
    }

    /// Locations named by a declaration, or by a mention that no fact covers.
    fn by_declaration(&self) -> Option<Vec<Shown>> {
        let bases = if self.node.kind() == "field_identifier" {
            return Some(self.by_field());
        } else {
            self.bases()?
        };
        Some(self.shown(|k, _| bases.contains(&k.base)))
    }

    /// What an identifier may name: a local of the enclosing function, a
    /// static local, or a global.
    fn bases(&self) -> Option<Vec<Base>> {
        let name: racelens_syntax::Name = self.name.as_str().into();
        if let Some(f) = self.enclosing_function() {
            let ir = &function_summary(self.db, f).ir;
            let mut local = ir
                .params
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.ty.is_static);
            crate::visit::visit_stmts(&ir.body, &mut |s| {
                if let Stmt::Decl(d) = s {
                    if d.name == name && local.is_none() {
                        local = Some(d.ty.is_static);
                    }
                }
            });
            let fname = f.name(self.db).clone();
            match local {
                Some(true) => return Some(vec![Base::Global(format!("{fname}::{name}").into())]),
                Some(false) => {
                    return Some(vec![Base::Local {
                        func: fname,
                        var: name,
                    }])
                }
                None => {}
            }
        }
        program(self.db, self.ws)
            .globals
            .contains_key(&name)
            .then(|| vec![Base::Global(name)])
    }

    /// Locations ending in this field, of the struct that declares it when known.
    fn by_field(&self) -> Vec<Shown> {
        let prog = program(self.db, self.ws);
        let field: racelens_syntax::Name = self.name.as_str().into();
        let owner = self.declaring_struct();
        let owners: Vec<&racelens_syntax::Name> = prog
            .structs
            .iter()
            .filter(|(_, fs)| fs.iter().any(|(n, _)| *n == field))
            .map(|(s, _)| s)
            .collect();
        let unique_field = owners.len() <= 1;
        // A bit-field is accessed as its run (`walk/overlap.rs`).
        let runs: Vec<racelens_syntax::Name> = prog
            .shared_members
            .iter()
            .filter(|(s, _)| owner.as_deref().is_none_or(|o| &***s == o))
            .filter_map(|(_, ms)| ms.get(&field).cloned().flatten())
            .collect();
        self.shown(|k, _| {
            match k.path.last() {
                Some(Elem::Field(f)) if *f == field || runs.contains(f) => {}
                _ => return false,
            }
            let Some(owner) = &owner else { return true };
            match struct_of_parent(prog, k) {
                Some(s) => *s == **owner,
                None => unique_field,
            }
        })
    }

    /// The struct whose declaration holds the field under the cursor.
    fn declaring_struct(&self) -> Option<String> {
        let mut n = self.node.parent()?;
        if n.kind() != "field_declaration" {
            return None;
        }
        let text = &self.file.parsed(self.db).text;
        for _ in 0..8 {
            n = n.parent()?;
            if matches!(n.kind(), "struct_specifier" | "union_specifier") {
                if let Some(name) = n.child_by_field_name("name") {
                    return text.get(name.byte_range()).map(str::to_string);
                }
                let td = n.parent().filter(|p| p.kind() == "type_definition")?;
                let d = td.child_by_field_name("declarator")?;
                return text.get(d.byte_range()).map(str::to_string);
            }
        }
        None
    }

    fn enclosing_function(&self) -> Option<FunctionId> {
        let off = self.node.start_byte();
        file_functions(self.db, self.ws, self.file)
            .iter()
            .copied()
            .find(|&f| {
                let start = function_offset(self.db, f) as usize;
                start <= off && off < start + crate::db::function_text(self.db, f).len()
            })
    }

    /// The lock a global (or static local) name denotes.
    fn lock_key(&self) -> Option<LocKey> {
        match self.bases()?.as_slice() {
            [b @ Base::Global(_)] => Some(LocKey::new(b.clone())),
            _ => None,
        }
    }

    /// Worth a hover even without accesses: a global, or a struct field.
    fn is_shared_name(&self) -> bool {
        self.node.kind() == "field_identifier"
            || matches!(self.bases().as_deref(), Some([Base::Global(_)]))
    }
}

/// The struct type that holds the last field of a location, when the path
/// below a global or a struct-typed base determines it.
fn struct_of_parent(prog: &crate::db::Program, k: &LocKey) -> Option<String> {
    let mut ty = match &k.base {
        Base::Type(t) => Some(t.to_string()),
        Base::Global(g) => prog
            .globals
            .get(g)
            .and_then(|t| prog.resolve_type(t).name)
            .map(|n| n.to_string()),
        _ => None,
    }?;
    for e in &k.path[..k.path.len().saturating_sub(1)] {
        if let Elem::Field(f) = e {
            ty = prog
                .field_type(&ty, f)
                .and_then(|t| prog.resolve_type(t).name)
                .map(|n| n.to_string())?;
        }
    }
    Some(ty)
}

/// "`m` guards `hits`: 4 of 5 accesses": the locations at whose accesses
/// the lock is held, counted like [`locks_line`].
fn lock_summary(analysis: &Analysis, lock: &LocKey) -> Option<String> {
    let db = analysis.db();
    let mut per_key: BTreeMap<String, BTreeMap<AccessKey, bool>> = BTreeMap::new();
    for &loc in locations(db, analysis.workspace()) {
        let base = loc.key(db);
        for f in location_accesses(db, loc).iter() {
            let s = fact_site(db, f);
            let held = f.must.0.iter().any(|h| &h.lock == lock);
            let e = per_key
                .entry(f.key(base).display())
                .or_default()
                .entry((s.file, s.start, s.end, f.kind))
                .or_insert(true);
            *e &= held;
        }
    }
    let mut rows: Vec<(String, usize, usize)> = per_key
        .into_iter()
        .map(|(k, acc)| (k, acc.values().filter(|h| **h).count(), acc.len()))
        .filter(|r| r.1 > 0)
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = format!(
        "**`{}`** (lock) guards {} location{}\n\n| location | accesses holding it |\n|---|---:|\n",
        lock.display(),
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
    for (k, held, total) in rows.iter().take(16) {
        let _ = writeln!(out, "| `{k}` | {held} of {total} |");
    }
    Some(out)
}

/// One location of the hover: its base cluster and its full key.
struct Shown {
    loc: Location,
    key: LocKey,
}

/// One access as users count it: a place in the code and its kind.
type AccessKey = (std::path::PathBuf, usize, usize, AccessKind);

fn render(analysis: &Analysis, shown: &Shown, out: &mut String) {
    let db = analysis.db();
    let table = thread_analysis(db, analysis.workspace()).table.clone();
    let base = shown.loc.key(db);
    let key = &shown.key;
    let facts: Vec<&AccessFact> = location_accesses(db, shown.loc)
        .iter()
        .filter(|f| f.key(base) == *key)
        .collect();
    let mut per_thread: BTreeMap<u32, (BTreeSet<AccessKey>, BTreeSet<AccessKey>)> = BTreeMap::new();
    let mut accesses: BTreeMap<AccessKey, Vec<&AccessFact>> = BTreeMap::new();
    for f in facts {
        let s = fact_site(db, f);
        let k = (s.file, s.start, s.end, f.kind);
        let e = per_thread.entry(f.thread).or_default();
        if f.kind == AccessKind::Read {
            e.0.insert(k.clone())
        } else {
            e.1.insert(k.clone())
        };
        accesses.entry(k).or_default().push(f);
    }
    let nthreads = per_thread.len();
    let _ = writeln!(
        out,
        "**`{}`** ({}): accessed by {nthreads} thread{}\n",
        key.display(),
        describe_base(key),
        if nthreads == 1 { "" } else { "s" }
    );
    out.push_str("| thread | reads | writes |\n|---|---:|---:|\n");
    for (t, (r, w)) in &per_thread {
        let many = table
            .threads
            .get(*t as usize)
            .map(|t| !t.unique)
            .unwrap_or(false);
        let _ = writeln!(
            out,
            "| {}{} | {} | {} |",
            thread_label(&table, *t),
            if many { " (several)" } else { "" },
            r.len(),
            w.len()
        );
    }
    out.push('\n');
    out.push_str(&locks_line(&accesses));
    out.push_str(&races_line(analysis, shown));
}

fn describe_base(k: &LocKey) -> String {
    let what = match &k.base {
        Base::Global(g) if g.contains("::") => "static local",
        Base::Global(_) => "global",
        Base::Local { .. } => "local whose address escapes",
        Base::Heap { .. } => "heap object",
        Base::Type(_) => "object reached through a pointer",
        Base::Synthetic(n) if n.starts_with("(static state of ") => {
            return format!(
                "hidden static state of the C library's `{}`, written by every call",
                n.trim_start_matches("(static state of ")
                    .trim_end_matches(')')
            )
        }
        Base::Synthetic(_) => "synthetic",
        Base::Unknown => "object behind a wild pointer",
    };
    if k.path.iter().any(|e| matches!(e, Elem::Field(_))) {
        format!("field of a {what}")
    } else {
        what.to_string()
    }
}

/// "Guarded by `m`: 4 of 5 accesses", counting an access as guarded when
/// every fact at it holds the lock.
fn locks_line(accesses: &BTreeMap<AccessKey, Vec<&AccessFact>>) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for facts in accesses.values() {
        let mut held: Option<BTreeSet<String>> = None;
        for f in facts {
            let names: BTreeSet<String> = f.must.names().into_iter().collect();
            held = Some(match held {
                None => names,
                Some(h) => h.intersection(&names).cloned().collect(),
            });
        }
        for l in held.unwrap_or_default() {
            *counts.entry(l).or_default() += 1;
        }
    }
    if counts.is_empty() {
        return "Locks: no lock is held at any access\n\n".to_string();
    }
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total = accesses.len();
    let parts: Vec<String> = v
        .iter()
        .map(|(l, n)| format!("`{l}`: {n} of {total} accesses"))
        .collect();
    format!("Locks: {}\n\n", parts.join("; "))
}

/// The racy accesses of pairs in which this location takes part.
fn races_line(analysis: &Analysis, shown: &Shown) -> String {
    let db = analysis.db();
    let facts = location_accesses(db, shown.loc);
    let base = shown.loc.key(db);
    let pairs: Vec<_> = races_at(db, shown.loc)
        .iter()
        .filter(|p| {
            [p.a, p.b]
                .iter()
                .any(|&i| facts[i as usize].key(base) == shown.key)
        })
        .cloned()
        .collect();
    if pairs.is_empty() {
        return "Races: none found\n".to_string();
    }
    let must = pairs.iter().any(|p| p.confidence == Confidence::Must);
    let mut sites: BTreeSet<(std::path::PathBuf, usize, AccessKind)> = BTreeSet::new();
    for p in &pairs {
        for i in [p.a, p.b] {
            let f = &facts[i as usize];
            let s = fact_site(db, f);
            sites.insert((s.file, s.start, f.kind));
        }
    }
    let mut listed: Vec<String> = Vec::new();
    for (file, start, kind) in &sites {
        let line = analysis
            .file_text(file)
            .map(|t| line_number(&t, *start))
            .unwrap_or(0);
        let item = format!(
            "{}:{line} ({})",
            short_path(file),
            crate::report::kind_word(*kind)
        );
        if !listed.contains(&item) {
            listed.push(item);
        }
    }
    let more = listed.len().saturating_sub(MAX_RACY_SITES);
    listed.truncate(MAX_RACY_SITES);
    let tail = if more > 0 {
        format!(", and {more} more")
    } else {
        String::new()
    };
    format!(
        "Races: **{}data race** at {}{tail}\n",
        if must { "" } else { "possible " },
        listed.join(", ")
    )
}
