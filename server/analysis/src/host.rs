//! The analysis API used by the CLI and the language server.
//!
//! [`AnalysisHost`] owns the database and is the only place inputs change;
//! [`Analysis`] is a cheap snapshot (a db clone) that answers queries on
//! another thread. A snapshot's query unwinds with `salsa::Cancelled` when
//! the host changes an input; callers catch it and retry or drop the result.
//! [`Analysis`] itself is defined in [`crate::snapshot`], below the layers
//! the host calls; the queries here that need those layers extend it.

use crate::baseline::{advance, Edit};
use crate::config::Config;
use crate::db::{file_items, function_offset, RootDb, SourceFile, Workspace};
use crate::explain::{self, Budget, Verdict};
use crate::programs::{partition, Partition};
use crate::races::thread_analysis;
use crate::report::{all_races, races_in_files, RaceReport, SiteRef};
use crate::snapshot::Analysis;
use crate::snapshot::ProgramRef;
use crate::units::{BuildConfig, Universe};
use racelens_syntax::{parse, Parsed};
use rustc_hash::FxHashSet;
use salsa::Setter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Owner of the database and its inputs.
pub struct AnalysisHost {
    db: RootDb,
    universe: Universe,
    config: Arc<Config>,
    /// The partition the program inputs were last brought in line with.
    partition: Arc<Partition>,
    /// One input per program of that partition, in its order, as
    /// snapshots hand them out.
    programs: Arc<Vec<ProgramRef>>,
    files: BTreeMap<PathBuf, SourceFile>,
}

impl Default for AnalysisHost {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl AnalysisHost {
    pub fn new(config: Config) -> Self {
        let db = RootDb::default();
        let universe = Universe::new(&db, Vec::new(), Arc::new(BuildConfig::default()));
        let mut host = AnalysisHost {
            db,
            universe,
            config: Arc::new(config),
            partition: Arc::default(),
            programs: Arc::default(),
            files: BTreeMap::new(),
        };
        host.sync();
        host
    }

    /// Sets a file's text, parsing it from scratch.
    pub fn set_file_text(&mut self, path: &Path, text: impl Into<Arc<str>>) {
        let parsed = parse::parse(text.into());
        self.set_file(path, parsed);
    }

    /// Sets a file's parse (for example one made incrementally by the editor layer).
    pub fn set_file(&mut self, path: &Path, parsed: Parsed) {
        let t0 = std::time::Instant::now();
        self.put_file(path, parsed);
        let t1 = std::time::Instant::now();
        self.sync();
        if std::env::var_os("RACELENS_TIMING").is_some() {
            eprintln!(
                "racelens: set_file: input write {:.1?}, programs {:.1?}",
                t1 - t0,
                t1.elapsed()
            );
        }
    }

    /// Sets many files at once; the programs are formed once, at the end.
    pub fn set_files(&mut self, files: impl IntoIterator<Item = (PathBuf, Parsed)>) {
        for (p, parsed) in files {
            self.put_file(&p, parsed);
        }
        self.sync();
    }

    fn put_file(&mut self, path: &Path, parsed: Parsed) {
        match self.files.get(path) {
            Some(&f) => {
                // The last good version of each function, as of the text
                // being replaced (computed before the write; see baseline.rs).
                let edit = Edit::between(&f.parsed(&self.db).text, &parsed.text);
                let baseline = edit.map(|e| advance(&self.db, self.universe, f, &e));
                let old = f.set_parsed(&mut self.db).to(parsed);
                drop_later(old);
                if let Some(b) = baseline {
                    f.set_baseline(&mut self.db).to(Some(b));
                }
            }
            None => {
                let f = SourceFile::new(&self.db, path.to_path_buf(), parsed, None);
                self.files.insert(path.to_path_buf(), f);
                let list: Vec<SourceFile> = self.files.values().copied().collect();
                self.universe.set_files(&mut self.db).to(list);
            }
        }
    }

    pub fn remove_file(&mut self, path: &Path) {
        if self.files.remove(path).is_some() {
            let list: Vec<SourceFile> = self.files.values().copied().collect();
            self.universe.set_files(&mut self.db).to(list);
            self.sync();
        }
    }

    pub fn has_file(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// The current text and tree of a file, as the analysis has them.
    pub fn file_parsed(&self, path: &Path) -> Option<Parsed> {
        self.files.get(path).map(|f| f.parsed(&self.db).clone())
    }

    pub fn file_paths(&self) -> Vec<PathBuf> {
        self.files.keys().cloned().collect()
    }

    pub fn set_config(&mut self, config: Config) {
        if *self.config != config {
            self.config = Arc::new(config);
            for p in self.programs.clone().iter() {
                p.ws.set_config(&mut self.db).to(self.config.clone());
            }
        }
    }

    /// How units are compiled and which programs are declared.
    pub fn set_build(&mut self, build: BuildConfig) {
        if **self.universe.build(&self.db) != build {
            self.universe.set_build(&mut self.db).to(Arc::new(build));
            self.sync();
        }
    }

    /// Brings the program inputs in line with the partition. A program
    /// keeps its input (and so its memos) while its name is unchanged.
    fn sync(&mut self) {
        let part = partition(&self.db, self.universe).clone();
        if part == self.partition && !self.programs.is_empty() {
            return;
        }
        let mut old: Vec<Workspace> = self.programs.iter().map(|p| p.ws).collect();
        let mut programs = Vec::with_capacity(part.programs.len());
        for spec in &part.programs {
            let k = old.iter().position(|ws| **ws.name(&self.db) == *spec.name);
            let ws = match k {
                Some(k) => {
                    let ws = old.remove(k);
                    if *ws.files(&self.db) != spec.files {
                        ws.set_files(&mut self.db).to(spec.files.clone());
                    }
                    ws
                }
                None => Workspace::new(
                    &self.db,
                    spec.files.clone(),
                    self.config.clone(),
                    self.universe,
                    Arc::from(spec.name.as_str()),
                ),
            };
            programs.push(ProgramRef {
                ws,
                name: Arc::from(spec.name.as_str()),
                library: spec.library,
                files: spec.files.iter().copied().collect(),
            });
        }
        self.programs = Arc::new(programs);
        self.partition = part;
    }

    pub fn snapshot(&self) -> Analysis {
        Analysis {
            db: self.db.clone(),
            ws: self.programs[0].ws,
            universe: self.universe,
            programs: self.programs.clone(),
            files: self.files.clone(),
        }
    }

    /// How many of each structure the analysis retains, by name: salsa's
    /// interned and input structs and memoized queries (`query:` prefix),
    /// the content-addressed memos (`memo:` entries and text bytes), and
    /// the whole walks kept for incremental updates (`walks kept`, over the
    /// process), for tests that watch memory over many edits. Like an input write,
    /// it waits for outstanding snapshots.
    pub fn retained(&mut self) -> BTreeMap<String, usize> {
        let db: &mut dyn salsa::Database = &mut self.db;
        let info = db.memory_usage();
        let mut out = BTreeMap::new();
        for s in &info.structs {
            *out.entry(s.debug_name().to_string()).or_insert(0) += s.count();
        }
        for (name, q) in &info.queries {
            *out.entry(format!("query:{name}")).or_insert(0) += q.count();
        }
        let memos = [
            ("lowering", crate::lower_cache::stats()),
            ("declarations", racelens_syntax::items::memo_stats()),
            ("region trees", racelens_syntax::items::region_memo_stats()),
        ];
        for (name, (entries, bytes)) in memos {
            out.insert(format!("memo:{name} entries"), entries);
            out.insert(format!("memo:{name} bytes"), bytes);
        }
        out.insert("walks kept".into(), crate::walk::kept_walks());
        out
    }

    /// The database, for query-execution logs in tests and benchmarks.
    pub fn db(&self) -> &RootDb {
        &self.db
    }
}

/// A function whose analysis was cut short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incomplete {
    pub site: SiteRef,
    pub reason: String,
}

impl Analysis {
    /// Every race, one report per racy access, over every program.
    pub fn races(&self) -> Vec<RaceReport> {
        self.merge(
            self.programs
                .iter()
                .map(|p| (p, all_races(&self.db, p.ws)))
                .collect(),
        )
    }

    /// The races whose access lies in one of these files, exactly as
    /// [`races`](Self::races) reports them, checking only the locations
    /// these files access, in the programs that contain them. Unknown
    /// paths are ignored.
    pub fn races_in<'a>(&self, paths: impl IntoIterator<Item = &'a Path>) -> Vec<RaceReport> {
        let files = self.source_files(paths);
        self.merge(
            self.programs
                .iter()
                .filter(|p| files.iter().any(|f| p.files.contains(f)))
                .map(|p| (p, races_in_files(&self.db, p.ws, &files)))
                .collect(),
        )
    }

    /// The union of the programs' reports. With one program, its reports
    /// unchanged; with several, each names its programs, and a report that
    /// several programs make (a shared file) is shown once.
    fn merge(&self, per_program: Vec<(&ProgramRef, Vec<RaceReport>)>) -> Vec<RaceReport> {
        let tagged = per_program
            .into_iter()
            .map(|(p, rs)| (p, rs.into_iter().map(|r| (r, ())).collect()))
            .collect();
        self.merge_with(tagged)
            .into_iter()
            .map(|(r, ())| r)
            .collect()
    }

    /// [`merge`](Self::merge) of reports that carry a `T` each; a report
    /// several programs make keeps the first program's `T`.
    fn merge_with<T>(
        &self,
        per_program: Vec<(&ProgramRef, Vec<(RaceReport, T)>)>,
    ) -> Vec<(RaceReport, T)> {
        if self.programs.len() <= 1 {
            return per_program.into_iter().flat_map(|(_, r)| r).collect();
        }
        let mut out: Vec<(RaceReport, T)> = Vec::new();
        let mut index: std::collections::HashMap<(PathBuf, usize, usize, String), usize> =
            Default::default();
        for (p, reports) in per_program {
            for (mut r, t) in reports {
                let key = (r.site.file.clone(), r.site.start, r.site.end, r.var.clone());
                match index.get(&key) {
                    Some(&i) => out[i].0.programs.push(p.name.to_string()),
                    None => {
                        r.programs = vec![p.name.to_string()];
                        index.insert(key, out.len());
                        out.push((r, t));
                    }
                }
            }
        }
        out.sort_by(|(a, _), (b, _)| {
            (&a.site.file, a.site.start, a.site.end, &a.var).cmp(&(
                &b.site.file,
                b.site.start,
                b.site.end,
                &b.var,
            ))
        });
        out
    }

    /// Link ambiguities and duplicate definitions met while forming the
    /// programs: (file, message).
    pub fn link_notes(&self) -> Vec<(PathBuf, String)> {
        partition(&self.db, self.universe).notes.clone()
    }

    /// What the conditional compilation decided for a file: blanked
    /// ranges, decided and undecided conditionals.
    pub fn conditions(&self, path: &Path) -> Option<racelens_syntax::cpp::FileBlanks> {
        let f = self.files.get(path)?;
        Some((**crate::units::file_blanks(&self.db, self.universe, *f)).clone())
    }

    /// The flags a unit is compiled with, and whether they came from the
    /// compilation database.
    pub fn unit_flags(&self, path: &Path) -> (racelens_syntax::cpp::Flags, bool) {
        let build = self.universe.build(&self.db);
        (
            build.flags_of(path).clone(),
            build.per_file.contains_key(path),
        )
    }

    /// The text of a file as the compiler sees it (inactive branches blanked).
    pub fn view_text(&self, path: &Path) -> Option<Arc<str>> {
        let f = self.files.get(path)?;
        Some(
            crate::units::file_view(&self.db, self.universe, *f)
                .text
                .clone(),
        )
    }

    /// The inputs of these paths; unknown paths are left out.
    fn source_files<'a>(&self, paths: impl IntoIterator<Item = &'a Path>) -> FxHashSet<SourceFile> {
        paths
            .into_iter()
            .filter_map(|p| self.files.get(p).copied())
            .collect()
    }

    /// Computes, on `workers` threads, what a first look at the races of
    /// `paths` (of every file when `None`) will ask for: see
    /// [`crate::prefetch`]. Worth it on a cold start only.
    pub fn prefetch(&self, paths: Option<&[&Path]>, workers: usize) {
        let files = paths.map(|ps| self.source_files(ps.iter().copied()));
        for p in self.programs.iter() {
            if files
                .as_ref()
                .is_some_and(|fs| !fs.iter().any(|f| p.files.contains(f)))
            {
                continue;
            }
            let all: Vec<SourceFile> = p.ws.files(&self.db).clone();
            crate::prefetch::prefetch(&self.db, p.ws, &all, files.as_ref(), workers);
        }
    }

    /// Every race after the layered check: the bounded interleaving check
    /// runs on the first `limits.races` reports within `limits.budget`
    /// each; [`settle`] applies its verdict. Deterministic: the budget
    /// counts states, not time.
    pub fn races_checked(&self, limits: CheckLimits) -> CheckedRaces {
        self.races_checked_on(limits, 1)
    }

    /// [`races_checked`](Self::races_checked) with the checks spread over
    /// `workers` threads, each with its own snapshot. The verdicts, and so
    /// the result, do not depend on the number of workers.
    pub fn races_checked_on(&self, limits: CheckLimits, workers: usize) -> CheckedRaces {
        if self.programs.len() <= 1 {
            return self.checked_program(limits, workers);
        }
        // Each program on its own, then the union (see `merge`).
        let mut out = CheckedRaces::default();
        let mut per = Vec::new();
        for p in self.programs.iter() {
            let c = self.for_program(p.ws).checked_program(limits, workers);
            per.push((p, c.races.into_iter().zip(c.schedules).collect()));
            for (mut r, why) in c.refuted {
                r.programs = vec![p.name.to_string()];
                out.refuted.push((r, why));
            }
        }
        (out.races, out.schedules) = self.merge_with(per).into_iter().unzip();
        out
    }

    /// [`races_checked_on`](Self::races_checked_on) for the program this
    /// snapshot looks at.
    fn checked_program(&self, limits: CheckLimits, workers: usize) -> CheckedRaces {
        let mut out = CheckedRaces::default();
        let races = all_races(&self.db, self.ws);
        let n = limits.races.min(races.len());
        let order: Vec<usize> = (0..n).collect();
        let verdicts = match n {
            0 => Vec::new(),
            _ => racelens_syntax::par::run(
                &order,
                vec![self.clone(); workers.max(1)],
                |analysis, next| {
                    let c = explain::Checker::new(&analysis);
                    let mut done = Vec::new();
                    while let Some(i) = next() {
                        done.push((i, c.check(&races[i], limits.budget)));
                    }
                    done
                },
            ),
        };
        let mut verdicts = verdicts.into_iter().map(|v| v.1);
        for r in races.into_iter() {
            let verdict = verdicts.next().unwrap_or(Verdict::Unknown);
            let schedule = match &verdict {
                Verdict::Witness(e) => Some(e.clone()),
                _ => None,
            };
            match settle(r, &verdict) {
                Settled::Kept(r) => {
                    out.races.push(r);
                    out.schedules.push(schedule);
                }
                Settled::Dropped(r, why) => out.refuted.push((r, why)),
            }
        }
        out
    }

    /// Functions whose analysis hit a budget.
    pub fn incomplete(&self) -> Vec<Incomplete> {
        let mut out: Vec<Incomplete> = Vec::new();
        for p in self.programs.iter() {
            for i in self.for_program(p.ws).incomplete_program() {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
        out
    }

    fn incomplete_program(&self) -> Vec<Incomplete> {
        let ta = thread_analysis(&self.db, self.ws);
        // Functions lowered only in part (nesting or size budget) come first.
        let mut list: Vec<(crate::db::FunctionId, String)> = Vec::new();
        for file in self.ws.files(&self.db) {
            for &f in crate::db::file_functions(&self.db, self.ws, *file) {
                if crate::db::function_ir(&self.db, f).truncated {
                    list.push((
                        f,
                        "nesting or size budget exceeded, analysed in part".to_string(),
                    ));
                }
            }
        }
        for (f, why) in ta.incomplete.iter() {
            if !list.iter().any(|(g, _)| g == f) {
                // The walk's own words: a budget, or a call it could not follow.
                list.push((*f, why.clone()));
            }
        }
        list.iter()
            .map(|(f, why)| {
                let off = function_offset(&self.db, *f) as usize;
                let items = file_items(&self.db, self.universe, f.file(&self.db));
                let name_len = f.name(&self.db).len();
                let start = items
                    .functions
                    .iter()
                    .find(|i| i.start as usize == off)
                    .map(|i| off + i.name_span.0 as usize)
                    .unwrap_or(off);
                Incomplete {
                    site: SiteRef {
                        file: f.file(&self.db).path(&self.db).clone(),
                        start,
                        end: start + name_len,
                        func: f.name(&self.db).to_string(),
                    },
                    reason: why.clone(),
                }
            })
            .collect()
    }
}

/// How far the bounded check goes over a program's reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckLimits {
    /// Reports checked, in report order; the rest keep the walk's verdict.
    pub races: usize,
    /// Work allowed to each check.
    pub budget: Budget,
}

impl CheckLimits {
    /// What plain `racelens check` runs: per report, 5,000 statements of
    /// model building and 5,000 search states (about a millisecond), on at
    /// most 200 reports.
    pub const DEFAULT: CheckLimits = CheckLimits {
        races: 200,
        budget: Budget {
            build: 5_000,
            states: 5_000,
        },
    };
    /// Everything up to the search's own bounds (`racelens check --explain`).
    pub const FULL: CheckLimits = CheckLimits {
        races: usize::MAX,
        budget: Budget::FULL,
    };
}

/// The reports that survived the check.
#[derive(Clone, Debug, Default)]
pub struct CheckedRaces {
    pub races: Vec<RaceReport>,
    /// The schedule of each of `races`, where the check found one.
    pub schedules: Vec<Option<explain::Explanation>>,
    /// Candidates the check refuted outright, with the reason.
    pub refuted: Vec<(RaceReport, String)>,
}

/// A report after its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    Kept(RaceReport),
    /// Refuted without any bound cutting the search.
    Dropped(RaceReport, String),
}

/// The one policy for refuted candidates, shared by the CLI and the
/// language server. A refutation by a join, a flag protocol, a condition
/// variable, `pthread_once` or a barrier (see
/// [`explain::Refutation::overrules_walk`]) drops the report when the
/// search explored every run of the model, and downgrades it to a may race
/// that says why when a loop or thread bound cut the search. Any other
/// verdict keeps the walk's report.
pub fn settle(mut report: RaceReport, verdict: &Verdict) -> Settled {
    match verdict {
        Verdict::Refuted(r) if r.overrules_walk() && r.exhaustive => {
            Settled::Dropped(report, r.reason.clone())
        }
        Verdict::Refuted(r) if r.overrules_walk() => {
            report.confidence = crate::races::Confidence::May;
            report.refuted = Some(r.reason.clone());
            Settled::Kept(report)
        }
        _ => Settled::Kept(report),
    }
}

/// Frees a replaced parse on a helper thread. Deleting a large file's old
/// tree takes milliseconds (mt-daapd: about 2 ms of every edit) that the
/// edit-to-diagnostics path need not wait for.
fn drop_later(old: Parsed) {
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Mutex, OnceLock};
    static DROPPER: OnceLock<Option<Mutex<Sender<Parsed>>>> = OnceLock::new();
    let dropper = DROPPER.get_or_init(|| {
        let (tx, rx) = channel::<Parsed>();
        std::thread::Builder::new()
            .name("racelens-drop".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    match dropper.as_ref().and_then(|tx| tx.lock().ok()) {
        Some(tx) => {
            if let Err(e) = tx.send(old) {
                drop(e.0);
            }
        }
        None => drop(old),
    }
}
