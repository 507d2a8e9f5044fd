//! Race reports in absolute file positions: what the CLI and the LSP show.
//!
//! This turns per-location race pairs (function-relative) into one report
//! per racy access, naming the variable, the access kind, the threads, the
//! locks held and every conflicting access.

use crate::db::Workspace;
use crate::db::{function_offset, FunctionId};
use crate::facts::ThreadTable;
use crate::races::{location_accesses, locations, races_at, thread_analysis, Confidence};
use racelens_syntax::AccessKind;
use racelens_syntax::Span;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::PathBuf;

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
}

/// One racy access and everything it conflicts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceReport {
    pub var: String,
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
}

impl RaceReport {
    /// "data race on `counter`: write in thread `worker` holding no lock"
    pub fn message(&self) -> String {
        let kind = kind_word(self.kind);
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
            "{} data race on `{}`: {} in {} {} holding {}",
            if self.confidence == Confidence::Must {
                ""
            } else {
                "possible"
            },
            self.var,
            kind,
            plural,
            threads,
            locks_text(&self.locks)
        )
        .trim_start()
        .to_string()
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
        Some(th) => th.entry.to_string(),
        None => "?".into(),
    }
}

/// Where `fact` is, in absolute terms.
pub fn site_of(db: &dyn salsa::Database, func: FunctionId, span: racelens_syntax::Span) -> SiteRef {
    let off = function_offset(db, func) as usize;
    SiteRef {
        file: func.file(db).path(db).clone(),
        start: off + span.start as usize,
        end: off + span.end as usize,
        func: func.name(db).to_string(),
    }
}

/// Conflicting accesses listed per report; the rest are summarised.
pub const MAX_CONFLICTS: usize = 16;

/// All races of the workspace, one report per racy access, sorted by position.
pub fn all_races(db: &dyn salsa::Database, ws: Workspace) -> Vec<RaceReport> {
    let table = thread_analysis(db, ws).table.clone();
    let mut sites: FxHashMap<(FunctionId, Span), SiteRef> = FxHashMap::default();
    let mut site = |f: FunctionId, s: Span| {
        sites
            .entry((f, s))
            .or_insert_with(|| site_of(db, f, s))
            .clone()
    };
    let mut index: FxHashMap<(FunctionId, Span), usize> = FxHashMap::default();
    let mut reports: Vec<RaceReport> = Vec::new();
    let mut seen_conflicts: FxHashSet<(usize, FunctionId, Span, AccessKind, u32)> =
        FxHashSet::default();
    // Thread names and (report, creation site) pairs seen, once each: a
    // program with thousands of racing pairs would otherwise format names
    // and compare creations for every pair.
    let names: Vec<String> = (0..table.threads.len() as u32)
        .map(|t| thread_name(&table, t))
        .collect();
    let name_of = |t: u32| -> &str { names.get(t as usize).map(|n| &n[..]).unwrap_or("?") };
    let mut seen_creations: FxHashSet<(usize, u32)> = FxHashSet::default();
    for &loc in locations(db, ws) {
        let pairs = races_at(db, loc);
        if pairs.is_empty() {
            continue;
        }
        let facts = location_accesses(db, loc);
        let base = loc.key(db);
        for p in pairs.iter() {
            let (a, b) = (&facts[p.a as usize], &facts[p.b as usize]);
            for (x, y) in [(a, b), (b, a)] {
                let i = match index.get(&(x.func, x.span)) {
                    Some(&i) => i,
                    None => {
                        let i = reports.len();
                        reports.push(RaceReport {
                            var: x.key(base).display(),
                            site: site(x.func, x.span),
                            kind: x.kind,
                            threads: Vec::new(),
                            locks: x.must.names(),
                            confidence: p.confidence,
                            conflicts: Vec::new(),
                            creations: Vec::new(),
                            refuted: None,
                        });
                        index.insert((x.func, x.span), i);
                        i
                    }
                };
                let r = &mut reports[i];
                if x.kind == AccessKind::Write {
                    r.kind = AccessKind::Write;
                }
                if p.confidence == Confidence::Must {
                    r.confidence = Confidence::Must;
                }
                if r.threads.len() < 16 {
                    let tn = name_of(x.thread);
                    if !r.threads.iter().any(|t| t == tn) {
                        r.threads.push(tn.to_string());
                    }
                }
                if r.conflicts.len() < MAX_CONFLICTS
                    && seen_conflicts.insert((i, y.func, y.span, y.kind, y.thread))
                {
                    let other_thread = if x.thread == y.thread && std::ptr::eq(x, y) {
                        format!("{} (another instance)", name_of(y.thread))
                    } else {
                        name_of(y.thread).to_string()
                    };
                    let c = Conflict {
                        site: site(y.func, y.span),
                        kind: y.kind,
                        thread: other_thread,
                        locks: y.must.names(),
                    };
                    let r = &mut reports[i];
                    if !r.conflicts.contains(&c) {
                        r.conflicts.push(c);
                    }
                }
                if let Some(ts) = table.threads.get(y.thread as usize).and_then(|t| t.site) {
                    if reports[i].creations.len() < 8 && seen_creations.insert((i, y.thread)) {
                        let s = &table.sites[ts as usize];
                        let cr = Creation {
                            thread: name_of(y.thread).to_string(),
                            site: site(s.func, s.span),
                        };
                        let r = &mut reports[i];
                        if !r.creations.contains(&cr) {
                            r.creations.push(cr);
                        }
                    }
                }
            }
        }
    }
    for r in &mut reports {
        r.conflicts.sort();
    }
    reports.sort_by(|a, b| a.site.cmp(&b.site));
    reports
}
