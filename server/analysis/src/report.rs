//! Race reports in absolute file positions: what the CLI and the LSP show.
//!
//! This turns per-location race pairs (function-relative) into one report
//! per racy access, naming the variable (and whose local it is), the access
//! kind, the threads, the locks held and every conflicting access. A pair
//! of a signal handler and code outside handlers is reported at the
//! handler's access only.

use crate::db::{function_offset, FunctionId};
use crate::db::{SourceFile, Workspace};
use crate::facts::ThreadTable;
use crate::model::Base;
use crate::races::{
    location_accesses, locations_in, races_at, thread_analysis, Confidence, Location,
};
use racelens_syntax::AccessKind;
use racelens_syntax::Span;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// A place in a file, in absolute byte offsets.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteRef {
    pub file: PathBuf,
    pub start: usize,
    pub end: usize,
    pub func: String,
}

/// The other side of a race.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Conflict {
    pub site: SiteRef,
    pub kind: AccessKind,
    pub thread: String,
    pub locks: Vec<String>,
}

/// Where a thread involved in a race is created.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Creation {
    pub thread: String,
    pub site: SiteRef,
    /// The thread is a signal handler and the site its installation.
    pub signal: bool,
}

impl Creation {
    /// "thread `worker` is created", "signal handler `on_int` is
    /// installed": the note at the site, which the caller ends with where.
    pub fn note(&self) -> String {
        match self.signal {
            true => format!("signal handler `{}` is installed", self.thread),
            false => format!("thread `{}` is created", self.thread),
        }
    }
}

/// One racy access and everything it conflicts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceReport {
    pub var: String,
    /// Whose variable `var` is, when it is a function's local or static
    /// (`LocKey::owner`): the message says so.
    pub owner: Option<String>,
    pub site: SiteRef,
    pub kind: AccessKind,
    pub threads: Vec<String>,
    pub locks: Vec<String>,
    pub confidence: Confidence,
    pub conflicts: Vec<Conflict>,
    pub creations: Vec<Creation>,
    /// Set when the bounded interleaving check refuted the candidate: what
    /// orders the accesses. Such a report is downgraded to a may race.
    pub refuted: Option<String>,
    /// The object is `volatile`: the message says so (volatile orders nothing).
    pub volatile: bool,
    /// The access is an atomic operation on an object that is also accessed
    /// plainly (an atomic operation races only with plain accesses).
    pub atomic: bool,
    /// The programs the race was found in, when the workspace has several.
    pub programs: Vec<String>,
    /// No concrete object is known for the access: every location it
    /// races on is a struct type reached through an unresolved pointer
    /// (`(struct conn)`) or memory behind a wild pointer. The editor hides
    /// such reports unless asked (`showUnresolved`).
    pub unresolved: bool,
    /// Every pair of the report involves a speculative callback group
    /// (`Thread::speculative`): a table of functions handed to code that is
    /// not known to run them on another thread. The concurrency itself is a
    /// guess, so the editor hides such reports with the unresolved ones.
    pub speculative: bool,
    /// Every pair of the report holds an element of this lock array on
    /// both sides, which element unknown (`lock(&item_locks[hv % N])`): a
    /// striped lock, which most often is the same element for the same
    /// object. The editor hides such may races with the unresolved ones.
    pub lock_array: Option<String>,
    /// The access lies in a function whose current text has new syntax
    /// errors, or uses a name being typed: the report comes from its last
    /// good version ([`crate::baseline`]) and may be out of date. Never set
    /// by the CLI, which sets each file once.
    pub stale: Option<crate::baseline::Staleness>,
}

impl RaceReport {
    /// "data race on `counter`: write in thread `worker` holding no lock",
    /// "data race on `len` (local of `main`): ..".
    pub fn message(&self) -> String {
        let kind = match self.atomic {
            true => format!("atomic {}", kind_word(self.kind)),
            false => kind_word(self.kind).to_string(),
        };
        let threads = self
            .threads
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let plural = if self.threads.len() > 1 {
            "threads"
        } else {
            "thread"
        };
        format!(
            "{} data race on `{}`{}{}: {} in {} {} holding {}",
            if self.confidence == Confidence::Must {
                ""
            } else {
                "possible"
            },
            self.var,
            match &self.owner {
                Some(o) => format!(" ({o})"),
                None => String::new(),
            },
            match (self.volatile, shared_group(&self.var)) {
                (true, _) => " (volatile, which does not synchronise)",
                // Bit-fields or anonymous union members (`walk/overlap.rs`).
                (false, true) => " (members that share one memory location)",
                (false, false) => "",
            },
            kind,
            plural,
            threads,
            match &self.lock_array {
                // Both sides may hold an element of the array: which one
                // is the question the report leaves open.
                Some(a) if self.locks.is_empty() =>
                    format!("an element of lock array `{a}` (which element is not known)"),
                Some(a) => format!(
                    "{} and an element of lock array `{a}` (which element is not known)",
                    locks_text(&self.locks)
                ),
                None => locks_text(&self.locks),
            }
        )
        .trim_start()
        .to_string()
            + &self.program_suffix()
    }

    /// " (program `server`)", when the workspace has several programs.
    pub fn program_suffix(&self) -> String {
        match self.programs.len() {
            0 => String::new(),
            1 => format!(" (program `{}`)", self.programs[0]),
            _ => format!(
                " (programs {})",
                self.programs
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

pub fn kind_word(k: AccessKind) -> &'static str {
    match k {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
    }
}

pub fn locks_text(locks: &[String]) -> String {
    if locks.is_empty() {
        "no lock".to_string()
    } else {
        format!(
            "{{{}}}",
            locks
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Display name of a thread.
pub fn thread_name(table: &ThreadTable, t: u32) -> String {
    match table.threads.get(t as usize) {
        Some(th) if th.signal => format!("{} (signal handler)", crate::model::c_name(&th.entry)),
        Some(th) => crate::model::c_name(&th.entry).to_string(),
        None => "?".into(),
    }
}

/// Where `fact` is, in absolute terms.
pub fn site_of(db: &dyn salsa::Database, func: FunctionId, span: racelens_syntax::Span) -> SiteRef {
    let (start, end) = fact_range(db, func, span);
    SiteRef {
        file: func.file(db).path(db).clone(),
        start,
        end,
        func: crate::model::c_name(func.name(db)).to_string(),
    }
}

/// The byte range in its file of a span of the walk's facts in `func`: for
/// a function whose last good version stands in, a span of that text,
/// placed where the text lies now (`db::walk_summary`).
pub fn fact_range(
    db: &dyn salsa::Database,
    func: FunctionId,
    span: racelens_syntax::Span,
) -> (usize, usize) {
    placed_range(placement(db, func), span)
}

/// A function's offset and, when its last good version stands in, where
/// that text lies now (`db::stale_placement`): what [`placed_range`] reads.
type Placed = (u32, Option<(crate::baseline::Placement, u32)>);

fn placement(db: &dyn salsa::Database, func: FunctionId) -> Placed {
    (
        function_offset(db, func),
        crate::db::stale_placement(db, func),
    )
}

/// [`fact_range`] of a function whose [`placement`] is known.
fn placed_range((off, at): Placed, span: racelens_syntax::Span) -> (usize, usize) {
    let (s, e) = match at {
        Some((at, len)) => (at.map(len, span.start), at.map(len, span.end)),
        None => (span.start, span.end),
    };
    (off as usize + s as usize, off as usize + e as usize)
}

/// `a.cmp(b)` for sites, with equal paths found by their bytes: `Path`'s
/// order compares component by component, and nearly every pair shares
/// its file.
fn cmp_sites(a: &SiteRef, b: &SiteRef) -> std::cmp::Ordering {
    if a.file.as_os_str() == b.file.as_os_str() {
        (a.start, a.end, &a.func).cmp(&(b.start, b.end, &b.func))
    } else {
        a.cmp(b)
    }
}

/// `a.cmp(b)` for conflicts (the derived order: site, kind, thread, locks).
fn cmp_conflicts(a: &Conflict, b: &Conflict) -> std::cmp::Ordering {
    cmp_sites(&a.site, &b.site)
        .then_with(|| a.kind.cmp(&b.kind))
        .then_with(|| a.thread.cmp(&b.thread))
        .then_with(|| a.locks.cmp(&b.locks))
}

/// Conflicting accesses listed per report; the rest are summarised.
pub const MAX_CONFLICTS: usize = 16;

/// What the race pairs of one location say about one racy access, in
/// function-relative terms. Memoized per location, so that an edit rebuilds
/// the fragments of only the locations whose race pairs changed;
/// [`all_races`] merges them into reports in absolute positions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    func: FunctionId,
    span: Span,
    var: String,
    owner: Option<String>,
    /// A write when any of the access's facts here writes.
    kind: AccessKind,
    /// Must when any of its pairs here is a must race.
    confidence: Confidence,
    /// The locks of its first fact.
    locks: Vec<String>,
    /// Its threads, distinct, in pair order (the order of the location's
    /// facts, a fixed order: `walk::finish`), at most [`FRAGMENT_THREADS`].
    threads: Vec<u32>,
    /// Distinct conflicting accesses, in pair order, at most twice what a
    /// report shows.
    conflicts: Vec<FragmentConflict>,
    /// The threads of the conflicting accesses, likewise.
    others: Vec<u32>,
    /// Any of its facts here accesses a `volatile` object.
    volatile: bool,
    /// Its facts here are atomic operations.
    atomic: bool,
    /// The location is a struct type reached through an unresolved pointer,
    /// or memory behind a wild pointer: no concrete object is known.
    unresolved: bool,
    /// The lock array both sides of every pair here may hold an element of
    /// (`RacePair::lock_array`), if all have one.
    lock_array: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct FragmentConflict {
    func: FunctionId,
    span: Span,
    kind: AccessKind,
    thread: u32,
    /// The access races with itself in another instance of its thread.
    itself: bool,
    locks: Vec<String>,
}

/// Thread ids kept per fragment list (reports show at most 16 names).
const FRAGMENT_THREADS: usize = 32;

/// The report fragments of one location, in the order its pairs name them.
/// A pair of a signal handler's access and an access outside handlers is
/// reported at the handler's access only, the other listed as its
/// conflict: C11 7.14.1.1 puts the fault in the handler, which is where it
/// is mended, and a handler that calls into the program (mt-daapd's
/// `mDNS_Close`) would otherwise mark every access of the code it may
/// interrupt.
#[salsa::tracked(returns(ref))]
pub fn location_reports(db: &dyn salsa::Database, loc: Location) -> Arc<Vec<Fragment>> {
    let pairs = races_at(db, loc);
    if pairs.is_empty() {
        return Arc::default();
    }
    let facts = location_accesses(db, loc);
    let table = crate::races::thread_table(db, loc.ws(db));
    let base = loc.key(db);
    let mut out: Vec<Fragment> = Vec::new();
    let mut index: FxHashMap<(FunctionId, Span), usize> = FxHashMap::default();
    let mut seen: FxHashSet<(usize, FunctionId, Span, AccessKind, u32)> = FxHashSet::default();
    let push_new = |v: &mut Vec<u32>, t: u32| {
        if v.len() < FRAGMENT_THREADS && !v.contains(&t) {
            v.push(t);
        }
    };
    for p in pairs.iter() {
        let (a, b) = (&facts[p.a as usize], &facts[p.b as usize]);
        for (x, y) in [(a, b), (b, a)] {
            if table.is_signal(y.thread) && !table.is_signal(x.thread) {
                continue;
            }
            let i = *index.entry((x.func, x.span)).or_insert_with(|| {
                out.push(Fragment {
                    func: x.func,
                    span: x.span,
                    var: x.key(base).display(),
                    owner: x.key(base).owner(),
                    kind: x.kind,
                    confidence: p.confidence,
                    locks: x.must.names(),
                    threads: Vec::new(),
                    conflicts: Vec::new(),
                    others: Vec::new(),
                    volatile: x.volatile,
                    atomic: x.atomic,
                    unresolved: matches!(base, Base::Type(_) | Base::Unknown),
                    lock_array: p.lock_array.as_ref().map(|k| k.display()),
                });
                out.len() - 1
            });
            let f = &mut out[i];
            if x.kind == AccessKind::Write {
                f.kind = AccessKind::Write;
            }
            if p.confidence == Confidence::Must {
                f.confidence = Confidence::Must;
            }
            if p.lock_array.is_none() {
                f.lock_array = None;
            }
            f.volatile |= x.volatile;
            f.atomic &= x.atomic;
            push_new(&mut f.threads, x.thread);
            if f.conflicts.len() < 2 * MAX_CONFLICTS
                && seen.insert((i, y.func, y.span, y.kind, y.thread))
            {
                f.conflicts.push(FragmentConflict {
                    func: y.func,
                    span: y.span,
                    kind: y.kind,
                    thread: y.thread,
                    itself: p.a == p.b,
                    locks: y.must.names(),
                });
            }
            push_new(&mut f.others, y.thread);
        }
    }
    Arc::new(out)
}

/// All races of the workspace, one report per racy access, sorted by position.
pub fn all_races(db: &dyn salsa::Database, ws: Workspace) -> Vec<RaceReport> {
    collect_races(db, ws, None)
}

/// The races whose access lies in one of `files`, as [`all_races`] would
/// report them (conflicts anywhere). Only the locations these files access
/// are checked: an editor needs the races of its open files, and a cold
/// load then skips the checks of every location only closed files touch.
pub fn races_in_files(
    db: &dyn salsa::Database,
    ws: Workspace,
    files: &FxHashSet<SourceFile>,
) -> Vec<RaceReport> {
    collect_races(db, ws, Some(files))
}

/// What the fragments of one report say, before the capped lists are chosen.
#[derive(Default)]
struct Gathered<'a> {
    threads: Vec<u32>,
    others: Vec<u32>,
    /// A fragment's thread lists were cut at [`FRAGMENT_THREADS`].
    capped: bool,
    /// Each with whether its fragment's access was a write, and the
    /// fragment's location name.
    conflicts: Vec<(bool, &'a str, &'a FragmentConflict)>,
    /// The fragment that named the report was a write.
    var_written: bool,
}

fn collect_races(
    db: &dyn salsa::Database,
    ws: Workspace,
    files: Option<&FxHashSet<SourceFile>>,
) -> Vec<RaceReport> {
    let table = thread_analysis(db, ws).table.clone();
    let started = std::time::Instant::now();
    let wanted = |f: FunctionId| files.is_none_or(|fs| fs.contains(&f.file(db)));
    let mut sites: FxHashMap<(FunctionId, Span), SiteRef> = FxHashMap::default();
    let mut site = |f: FunctionId, s: Span| {
        sites
            .entry((f, s))
            .or_insert_with(|| site_of(db, f, s))
            .clone()
    };
    // Locations come in the order of their bases, and one access may lie
    // in several. So each report first gathers what its fragments say, and
    // the capped lists (threads, conflicts, creations) are chosen afterwards
    // by thread index and source position: the same program gives the same
    // report however its files were loaded.
    let mut index: FxHashMap<(FunctionId, Span), usize> = FxHashMap::default();
    let mut reports: Vec<RaceReport> = Vec::new();
    let mut gathered: Vec<Gathered> = Vec::new();
    let mut offsets: FxHashMap<FunctionId, (u32, Placed)> = FxHashMap::default();
    let names: Vec<String> = (0..table.threads.len() as u32)
        .map(|t| thread_name(&table, t))
        .collect();
    let name_of = |t: u32| -> &str { names.get(t as usize).map(|n| &n[..]).unwrap_or("?") };
    for loc in locations_in(db, ws, files) {
        for f in location_reports(db, loc).iter() {
            if !wanted(f.func) {
                continue;
            }
            let i = match index.get(&(f.func, f.span)) {
                Some(&i) => i,
                None => {
                    let i = reports.len();
                    reports.push(RaceReport {
                        var: f.var.clone(),
                        owner: f.owner.clone(),
                        site: site(f.func, f.span),
                        kind: f.kind,
                        threads: Vec::new(),
                        locks: f.locks.clone(),
                        confidence: f.confidence,
                        conflicts: Vec::new(),
                        creations: Vec::new(),
                        refuted: None,
                        volatile: f.volatile,
                        atomic: f.atomic,
                        unresolved: f.unresolved,
                        speculative: false,
                        lock_array: f.lock_array.clone(),
                        programs: Vec::new(),
                        stale: crate::db::function_stale(db, f.func).clone(),
                    });
                    gathered.push(Gathered {
                        var_written: f.kind == AccessKind::Write,
                        ..Gathered::default()
                    });
                    index.insert((f.func, f.span), i);
                    i
                }
            };
            let r = &mut reports[i];
            // One access can lie in several locations (a concrete object
            // and its type): the name shown is the concrete one, and among
            // equals the first by text, not the first met. Two accesses
            // may share an expression (`gp[5] = c` reads `gp` and writes
            // the element): the report is a write, so it names what is
            // written.
            let written = f.kind == AccessKind::Write;
            let g = &mut gathered[i];
            if (!f.unresolved, written, std::cmp::Reverse(&f.var))
                > (!r.unresolved, g.var_written, std::cmp::Reverse(&r.var))
            {
                g.var_written = written;
                r.var = f.var.clone();
                r.owner = f.owner.clone();
                r.locks = f.locks.clone();
            }
            if f.kind == AccessKind::Write {
                r.kind = AccessKind::Write;
            }
            if f.confidence == Confidence::Must {
                r.confidence = Confidence::Must;
            }
            r.volatile |= f.volatile;
            r.atomic &= f.atomic;
            r.unresolved &= f.unresolved;
            if f.lock_array.is_none() {
                r.lock_array = None;
            }
            g.threads.extend_from_slice(&f.threads);
            g.others.extend_from_slice(&f.others);
            g.capped |= f.threads.len() >= FRAGMENT_THREADS || f.others.len() >= FRAGMENT_THREADS;
            g.conflicts
                .extend(f.conflicts.iter().map(|c| (written, &f.var[..], c)));
        }
    }
    // Conflicts are listed by file path, then position: each file's rank
    // among the paths, taken once (a report may gather hundreds of
    // conflicts, and comparing paths component by component cost most of
    // an edit's report building on mt-daapd).
    let mut file_rank: FxHashMap<SourceFile, u32> = FxHashMap::default();
    for g in &gathered {
        for (_, _, c) in &g.conflicts {
            file_rank.entry(c.func.file(db)).or_insert(0);
        }
    }
    let mut by_path: Vec<(&std::path::Path, SourceFile)> = file_rank
        .keys()
        .map(|f| (f.path(db).as_path(), *f))
        .collect();
    by_path.sort_by(|a, b| a.0.cmp(b.0));
    for (i, (_, f)) in by_path.iter().enumerate() {
        file_rank.insert(*f, i as u32);
    }
    let speculative = |t: &u32| {
        table
            .threads
            .get(*t as usize)
            .is_some_and(|th| th.speculative)
    };
    for (r, mut g) in reports.iter_mut().zip(gathered) {
        // Each pair joins one of the access's threads with one of the
        // conflicts': when all of either side are speculative, so is every
        // pair (never a must race).
        r.speculative = !g.capped
            && r.confidence == Confidence::May
            && (g.threads.iter().all(speculative) || g.others.iter().all(speculative));
        g.threads.sort_unstable();
        g.threads.dedup();
        for &t in &g.threads {
            let tn = name_of(t);
            if r.threads.len() < 16 && !r.threads.iter().any(|x| x == tn) {
                r.threads.push(tn.to_string());
            }
        }
        // Chosen by source position before any is built: a report may
        // gather hundreds, and building one clones a path and formats names.
        // The conflicts of another access of the same expression (the
        // read of `gp` in `gp[5] = c`, where the report names the element
        // written) belong to that access's own reports, not to this one.
        let (var_written, var) = (g.var_written, &r.var[..]);
        let mut cands: Vec<_> = g
            .conflicts
            .iter()
            .filter(|(w, v, _)| *w == var_written || *v == var)
            .map(|&(_, _, c)| {
                let (rank, placed) = *offsets
                    .entry(c.func)
                    .or_insert_with(|| (file_rank[&c.func.file(db)], placement(db, c.func)));
                let (start, end) = placed_range(placed, c.span);
                (
                    (rank, start, end, c.kind, name_of(c.thread), c.itself),
                    &c.locks,
                    c,
                )
            })
            .collect();
        cands.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        // One line per access and thread: the same access met in two
        // calling contexts keeps its first lock set in order (no lock first).
        cands.dedup_by(|b, a| a.0 == b.0);
        let mut conflicts: Vec<Conflict> = cands
            .iter()
            .take(MAX_CONFLICTS)
            .map(|(_, _, c)| Conflict {
                site: site(c.func, c.span),
                kind: c.kind,
                thread: match c.itself {
                    true => format!("{} (another instance)", name_of(c.thread)),
                    false => name_of(c.thread).to_string(),
                },
                locks: c.locks.clone(),
            })
            .collect();
        conflicts.sort_by(cmp_conflicts);
        r.conflicts = conflicts;
        g.others.sort_unstable();
        g.others.dedup();
        // A handler's report says where it was installed, as well as where
        // the threads it conflicts with were created.
        let mut noted: Vec<u32> = g
            .threads
            .iter()
            .copied()
            .filter(|&t| table.is_signal(t))
            .collect();
        noted.sort_unstable();
        noted.dedup();
        let others: Vec<u32> = g
            .others
            .iter()
            .copied()
            .filter(|t| !noted.contains(t))
            .collect();
        noted.extend(others);
        for &t in &noted {
            if r.creations.len() >= 8 {
                break;
            }
            if let Some(ts) = table.threads.get(t as usize).and_then(|t| t.site) {
                let s = &table.sites[ts as usize];
                let th = &table.threads[t as usize];
                let cr = Creation {
                    // A handler's note says what it is.
                    thread: match th.signal {
                        true => crate::model::c_name(&th.entry).to_string(),
                        false => name_of(t).to_string(),
                    },
                    site: site(s.func, s.span),
                    signal: th.signal,
                };
                if !r.creations.contains(&cr) {
                    r.creations.push(cr);
                }
            }
        }
    }
    reports.sort_by(|a, b| cmp_sites(&a.site, &b.site));
    if std::env::var_os("RACELENS_TIMING").is_some() {
        eprintln!(
            "racelens: {} race reports in {:.1?}",
            reports.len(),
            started.elapsed()
        );
    }
    reports
}

/// Does the location name members that share one location (`f.a/b`: no
/// C name has a `/`)?
fn shared_group(var: &str) -> bool {
    var.rsplit('.').next().is_some_and(|m| m.contains('/'))
}
