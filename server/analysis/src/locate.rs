//! From a race report back to the analysis facts behind it, plus the small
//! display helpers (thread labels, line numbers) that hover, explain and the
//! quick fixes share.
//!
//! Reports carry absolute positions and display names only; the features
//! built on top of them need the memory location, every access to it and the
//! racing pairs, which live in the per-location queries of [`crate::races`].

use crate::db::Workspace;
use crate::facts::{AccessFact, ThreadTable};
use crate::races::{location_accesses, locations, races_at, Location};
use crate::report::{site_of, RaceReport, SiteRef};
use racelens_syntax::LineIndex;
use std::sync::Arc;

/// The base object of a report's location, with all accesses below it and
/// the indices of the accesses at the reported site.
pub(crate) struct Located {
    pub loc: Location,
    pub facts: Arc<Vec<AccessFact>>,
    pub at_site: Vec<usize>,
}

/// The locations whose racy accesses include the report's site.
pub(crate) fn locate(db: &dyn salsa::Database, ws: Workspace, report: &RaceReport) -> Vec<Located> {
    let mut out = Vec::new();
    for &loc in locations(db, ws) {
        if races_at(db, loc).is_empty() {
            continue;
        }
        let base = loc.key(db);
        let facts = location_accesses(db, loc).clone();
        let at_site: Vec<usize> = facts
            .iter()
            .enumerate()
            .filter(|(_, f)| f.key(base).display() == report.var && fact_site(db, f) == report.site)
            .map(|(i, _)| i)
            .collect();
        if !at_site.is_empty() {
            out.push(Located {
                loc,
                facts,
                at_site,
            });
        }
    }
    out
}

/// [`locate`] for many reports at once: every racy location is scanned
/// once, instead of once per report.
pub(crate) struct LocateIndex {
    map: rustc_hash::FxHashMap<(SiteRef, String), Vec<Located>>,
}

impl LocateIndex {
    pub(crate) fn new(db: &dyn salsa::Database, ws: Workspace) -> Self {
        let mut map: rustc_hash::FxHashMap<(SiteRef, String), Vec<Located>> = Default::default();
        for &loc in locations(db, ws) {
            if races_at(db, loc).is_empty() {
                continue;
            }
            let base = loc.key(db);
            let facts = location_accesses(db, loc).clone();
            let mut here: rustc_hash::FxHashMap<(SiteRef, String), Vec<usize>> = Default::default();
            for (i, f) in facts.iter().enumerate() {
                here.entry((fact_site(db, f), f.key(base).display()))
                    .or_default()
                    .push(i);
            }
            for (k, at_site) in here {
                map.entry(k).or_default().push(Located {
                    loc,
                    facts: facts.clone(),
                    at_site,
                });
            }
        }
        LocateIndex { map }
    }

    /// What [`locate`] returns for `report`.
    pub(crate) fn get(&self, report: &RaceReport) -> &[Located] {
        self.map
            .get(&(report.site.clone(), report.var.clone()))
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }
}

pub(crate) fn fact_site(db: &dyn salsa::Database, f: &AccessFact) -> SiteRef {
    site_of(db, f.func, f.span)
}

/// "`worker`", or "`worker` #2" when several abstract threads run `worker`.
pub(crate) fn thread_label(table: &ThreadTable, t: u32) -> String {
    let Some(th) = table.threads.get(t as usize) else {
        return "`?`".into();
    };
    let same: Vec<usize> = table
        .threads
        .iter()
        .enumerate()
        .filter(|(_, o)| o.entry == th.entry)
        .map(|(i, _)| i)
        .collect();
    if same.len() <= 1 {
        format!("`{}`", th.entry)
    } else {
        let k = same.iter().position(|&i| i == t as usize).unwrap_or(0) + 1;
        format!("`{}` #{k}", th.entry)
    }
}

/// One-based line of a byte offset in a text.
pub(crate) fn line_number(text: &str, offset: usize) -> usize {
    LineIndex::new(text).line_of(offset.min(text.len())) + 1
}

/// The last path component, for compact "file:line" output.
pub(crate) fn short_path(p: &std::path::Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}
