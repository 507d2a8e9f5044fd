//! Quick fixes for races: guard an access with the lock that guards the
//! others, protect a variable with a new mutex, or make a counter atomic.
//!
//! Exists so that every race report comes with edits that, once applied,
//! compile and remove the race; the edits follow the file's own lock idiom.
//! A fix is offered only when it removes every race of the reported access:
//! a lock goes around the conflicting accesses that lack it too, and the
//! atomic rewrite covers every access or none. `tests/fixes.rs` applies
//! every fix to every fixture, compiles it and re-analyses it.

mod atomic;
mod region;
mod spelling;
pub(crate) mod syntax;

use crate::config::CallModel;
use crate::db::{function_offset, function_summary, program, FunctionId, Workspace};
use crate::facts::AccessFact;
use crate::locate::{fact_site, locate};
use crate::model::{Base, LocKey};
use crate::races::races_at;
use crate::report::RaceReport;
use crate::snapshot::Analysis;
use racelens_syntax::{Callee, Parsed, Stmt};
use region::LockText;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A replacement of `start..end` (byte offsets of the current text) in
/// `file`. The edits of a fix never overlap; insertions at the same offset
/// appear in list order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    pub file: PathBuf,
    pub start: usize,
    pub end: usize,
    pub new_text: String,
}

/// A quick fix: a title and the edits that make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<FileEdit>,
    pub is_preferred: bool,
}

/// The quick fixes offered for one race report, the preferred one first.
pub fn quick_fixes(analysis: &Analysis, report: &RaceReport) -> Vec<Fix> {
    // Only the program that has the race: its files are the ones edited.
    let analysis = &analysis.for_report(report);
    let Some(ctx) = Ctx::new(analysis, report) else {
        return Vec::new();
    };
    let mut fixes = Vec::new();
    let guard = ctx.guard_with_existing_lock();
    let guarded = guard.is_some();
    fixes.extend(guard);
    fixes.extend(ctx.atomic());
    if !guarded && ctx.best_lock().is_none() && ctx.sibling_lock().is_none() {
        fixes.extend(ctx.new_mutex());
    }
    for (i, f) in fixes.iter_mut().enumerate() {
        f.is_preferred = i == 0;
    }
    fixes
}

/// One access place: the function it is in and its absolute range.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    file: PathBuf,
    start: usize,
    end: usize,
    func: salsa::Id,
}

/// What the fixes know about the reported access.
struct Ctx<'a> {
    analysis: &'a Analysis,
    db: &'a dyn salsa::Database,
    ws: Workspace,
    report: &'a RaceReport,
    facts: Arc<Vec<AccessFact>>,
    key: LocKey,
    /// Facts at the reported site.
    ours: Vec<usize>,
    /// Facts racing with ours.
    conflicts: Vec<usize>,
    /// Every racing pair of the location.
    pairs: Vec<(usize, usize)>,
    funcs: FxHashMap<salsa::Id, FunctionId>,
}

impl<'a> Ctx<'a> {
    fn new(analysis: &'a Analysis, report: &'a RaceReport) -> Option<Self> {
        let db = analysis.db();
        let ws = analysis.workspace();
        let l = locate(db, ws, report).into_iter().next()?;
        let base = l.loc.key(db).clone();
        let key = l.facts[l.at_site[0]].key(&base);
        let mut conflicts = BTreeSet::new();
        let pairs: Vec<(usize, usize)> = races_at(db, l.loc)
            .iter()
            .map(|p| (p.a as usize, p.b as usize))
            .collect();
        for p in races_at(db, l.loc).iter() {
            let (a, b) = (p.a as usize, p.b as usize);
            for (x, y) in [(a, b), (b, a)] {
                if l.at_site.contains(&x) {
                    conflicts.insert(y);
                }
            }
        }
        let funcs = l.facts.iter().map(|f| (f.func.key(), f.func)).collect();
        Some(Ctx {
            analysis,
            db,
            ws,
            report,
            facts: l.facts.clone(),
            key,
            ours: l.at_site,
            conflicts: conflicts.into_iter().collect(),
            pairs,
            funcs,
        })
    }

    fn place(&self, f: &AccessFact) -> Place {
        let s = fact_site(self.db, f);
        Place {
            file: s.file,
            start: s.start,
            end: s.end,
            func: f.func.key(),
        }
    }

    fn same_key(&self) -> impl Iterator<Item = &AccessFact> {
        let base = self.key.base.clone();
        self.facts.iter().filter(move |f| f.key(&base) == self.key)
    }

    fn var(&self) -> String {
        self.report.var.clone()
    }

    /// The lock held at most of the other accesses to the location, with
    /// how many of how many distinct places hold it.
    fn best_lock(&self) -> Option<(LocKey, usize, usize)> {
        let here = self.place(&self.facts[self.ours[0]]);
        self.most_held(self.same_key().filter(|f| self.place(f) != here))
    }

    /// The lock held at most accesses to the other fields of the same
    /// struct (`q->lock` for `q->count`), when the location is a field.
    fn sibling_lock(&self) -> Option<(LocKey, usize, usize)> {
        let Some((crate::model::Elem::Field(_), parent)) = self.key.path.split_last() else {
            return None;
        };
        let base = self.key.base.clone();
        self.most_held(self.facts.iter().filter(|f| {
            let k = f.key(&base);
            k != self.key
                && k.path.len() == self.key.path.len()
                && k.path[..parent.len()] == *parent
        }))
    }

    fn most_held<'f>(
        &self,
        facts: impl Iterator<Item = &'f AccessFact>,
    ) -> Option<(LocKey, usize, usize)> {
        let mut at: BTreeMap<Place, Vec<&AccessFact>> = BTreeMap::new();
        for f in facts {
            at.entry(self.place(f)).or_default().push(f);
        }
        let mut counts: BTreeMap<LocKey, usize> = BTreeMap::new();
        for fs in at.values() {
            let mut held: Vec<LocKey> = fs[0].must.0.iter().map(|h| h.lock.clone()).collect();
            held.retain(|l| fs.iter().all(|f| f.must.0.iter().any(|h| &h.lock == l)));
            for l in held {
                if !matches!(l.base, Base::Synthetic(_)) {
                    *counts.entry(l).or_default() += 1;
                }
            }
        }
        let (lock, k) = counts
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
        Some((lock, k, at.len()))
    }

    /// "Guard with `m` (held at 5 of 6 other accesses)"; for an unguarded
    /// field, the lock of its struct's other fields.
    fn guard_with_existing_lock(&self) -> Option<Fix> {
        let (lock, held) = match (self.best_lock(), self.sibling_lock()) {
            (Some((l, k, n)), _) => (l, format!("held at {k} of {n} other accesses")),
            (None, Some((l, k, n))) => (
                l,
                format!("held at {k} of {n} accesses to the other fields"),
            ),
            (None, None) => return None,
        };
        let holds = |f: &AccessFact| f.must.0.iter().any(|h| h.lock == lock);
        let mut places: Vec<Place> = vec![self.place(&self.facts[self.ours[0]])];
        for &c in &self.conflicts {
            let p = self.place(&self.facts[c]);
            if !holds(&self.facts[c]) && !places.contains(&p) {
                places.push(p);
            }
        }
        // Locking again where the lock may already be held would deadlock.
        let at_places = |f: &&AccessFact| places.iter().any(|p| *p == self.place(f));
        if self
            .facts
            .iter()
            .filter(at_places)
            .any(|f| f.may.0.iter().any(|h| h.lock == lock))
        {
            return None;
        }
        if self.may_invert_order(&places, &lock) {
            return None;
        }
        let spellings = spelling::Spellings::new(self.db, self.ws, &lock);
        let edits = self.guard(&places, &|at| spellings.at(at))?;
        let name = lock.display();
        let title = match places.len() {
            1 => format!("Guard with `{name}` ({held})"),
            m => format!(
                "Guard with `{name}` here and at {} ({held})",
                plural(m - 1, "other racing access")
            ),
        };
        Some(Fix {
            title,
            edits,
            is_preferred: false,
        })
    }

    /// Would taking `lock` inside the locks already held at `places` nest
    /// two locks that some access elsewhere holds together (so possibly in
    /// the other order)? Then the fix could deadlock.
    fn may_invert_order(&self, places: &[Place], lock: &LocKey) -> bool {
        let outer: BTreeSet<&LocKey> = self
            .facts
            .iter()
            .filter(|f| places.contains(&self.place(f)))
            .flat_map(|f| f.may.0.iter().map(|h| &h.lock))
            .filter(|l| *l != lock)
            .collect();
        if outer.is_empty() {
            return false;
        }
        crate::races::locations(self.db, self.ws)
            .iter()
            .any(|&loc| {
                crate::races::location_accesses(self.db, loc)
                    .iter()
                    .any(|f| {
                        f.may.0.iter().any(|h| &h.lock == lock)
                            && f.may.0.iter().any(|h| outer.contains(&h.lock))
                    })
            })
    }

    /// Lock and unlock around each place, files and regions at a time.
    fn guard(
        &self,
        places: &[Place],
        spell: &dyn Fn(&spelling::At) -> Option<LockText>,
    ) -> Option<Vec<FileEdit>> {
        let mut edits = Vec::new();
        let files: BTreeSet<&PathBuf> = places.iter().map(|p| &p.file).collect();
        for file in files {
            let sf = self.analysis.file(file)?;
            let p = sf.parsed(self.db);
            let here: Vec<(usize, usize)> = places
                .iter()
                .filter(|x| &x.file == file)
                .map(|x| (x.start, x.end))
                .collect();
            let touches: Vec<(usize, usize)> = self
                .same_key()
                .map(|f| self.place(f))
                .filter(|x| &x.file == file)
                .map(|x| (x.start, x.end))
                .collect();
            let e = self
                .guard_file(p, file, places, &here, &touches, spell)
                .or_else(|| self.guard_file(p, file, places, &here, &here, spell))?;
            edits.extend(e);
        }
        Some(edits)
    }

    fn guard_file(
        &self,
        p: &Parsed,
        file: &Path,
        places: &[Place],
        here: &[(usize, usize)],
        touches: &[(usize, usize)],
        spell: &dyn Fn(&spelling::At) -> Option<LockText>,
    ) -> Option<Vec<FileEdit>> {
        let mut edits = Vec::new();
        for r in region::regions(p, here, touches)? {
            let first = places
                .iter()
                .filter(|x| x.file == file && r.start() <= x.start && x.end <= r.end())
                .min()?;
            let func = *self.funcs.get(&first.func)?;
            if self.blocked(func, r.start(), r.end()) {
                return None;
            }
            let at = spelling::At {
                func,
                parsed: p,
                pos: r.start(),
                access: syntax::node_at(p, first.start, first.end),
                key: &self.key,
            };
            let lt = spell(&at)?;
            // The places guarded here touch the location too: a conflict
            // of another key that overlaps it (`a[3]` for `a[*]`) included.
            let all_touches: Vec<(usize, usize)> = self
                .same_key()
                .map(|f| self.place(f))
                .filter(|x| x.file == file)
                .map(|x| (x.start, x.end))
                .chain(here.iter().copied())
                .collect();
            edits.extend(region::guard_edits(p, file, &r, &lt, &all_touches, &|n| {
                region::return_type(&p.text, n)
            })?);
        }
        Some(edits)
    }

    /// Does the range call anything that synchronises (or might)? Holding
    /// a new lock across it could deadlock or change the lock order.
    fn blocked(&self, func: FunctionId, start: usize, end: usize) -> bool {
        let off = function_offset(self.db, func) as usize;
        let s = function_summary(self.db, func);
        let mut blocked = false;
        let mut memo = FxHashMap::default();
        crate::visit::visit_calls(&s.ir.body, &mut |c| {
            let (cs, ce) = (off + c.span.start as usize, off + c.span.end as usize);
            if cs < start || ce > end {
                return;
            }
            blocked |= match s.models.get(&c.id) {
                Some(m) => is_sync(m),
                None => match &c.callee {
                    Callee::Direct(n) => self.calls_sync(n, &mut memo, 0),
                    Callee::Indirect(_) => true,
                },
            };
        });
        blocked
    }

    fn calls_sync(&self, name: &str, memo: &mut FxHashMap<String, bool>, depth: u32) -> bool {
        if let Some(&b) = memo.get(name) {
            return b;
        }
        let prog = program(self.db, self.ws);
        let Some(fs) = prog.functions.get(name) else {
            return false;
        };
        if depth > 16 {
            return true;
        }
        memo.insert(name.to_string(), false);
        let mut b = false;
        for &f in fs {
            let s = function_summary(self.db, f);
            let mut callees = Vec::new();
            crate::visit::visit_calls(
                &s.ir.body,
                &mut |c| match (s.models.get(&c.id), &c.callee) {
                    (Some(m), _) => b |= is_sync(m),
                    (None, Callee::Direct(n)) => callees.push(n.to_string()),
                    (None, Callee::Indirect(_)) => b = true,
                },
            );
            for n in callees {
                b |= self.calls_sync(&n, memo, depth + 1);
            }
        }
        memo.insert(name.to_string(), b);
        b
    }

    /// Rewrites every access of a scalar integer with atomic builtins.
    fn atomic(&self) -> Option<Fix> {
        let prog = program(self.db, self.ws);
        let ty = match &self.key.base {
            Base::Global(g) if self.key.path.is_empty() => match g.split_once("::") {
                None => prog.resolve_type(prog.globals.get(g)?),
                Some((f, v)) => prog.resolve_type(&self.static_local_type(f, v)?),
            },
            _ => return None,
        };
        let is_bool = crate::model::integer_kind(&ty)?;
        if self.facts.iter().any(|f| !f.path.is_empty()) {
            return None;
        }
        let mut sites: Vec<(PathBuf, usize, usize)> = self
            .facts
            .iter()
            .map(|f| self.place(f))
            .map(|p| (p.file, p.start, p.end))
            .collect();
        sites.sort();
        sites.dedup();
        let edits = atomic::rewrite_all(self.analysis, &self.key, is_bool, &sites)?;
        let title = format!(
            "Use atomic operations for every access to {} ({})",
            self.subject(),
            plural(sites.len(), "place")
        );
        Some(Fix {
            title,
            edits,
            is_preferred: false,
        })
    }

    fn static_local_type(&self, func: &str, var: &str) -> Option<racelens_syntax::TypeInfo> {
        let prog = program(self.db, self.ws);
        let f = *prog.functions.get(func)?.first()?;
        let mut ty = None;
        crate::visit::visit_stmts(&function_summary(self.db, f).ir.body, &mut |s| {
            if let Stmt::Decl(d) = s {
                if &*d.name == var && d.ty.is_static {
                    ty = Some(d.ty.clone());
                }
            }
        });
        ty
    }

    /// "Protect `x` with a new mutex" (when guarding this access is
    /// enough) and "Protect every access to `x` with a new mutex `x_lock`".
    fn new_mutex(&self) -> Vec<Fix> {
        let ours = self.place(&self.facts[self.ours[0]]);
        let mut every: Vec<Place> = vec![ours.clone()];
        for f in self
            .same_key()
            .chain(self.conflicts.iter().map(|&c| &self.facts[c]))
        {
            let p = self.place(f);
            if !every.contains(&p) {
                every.push(p);
            }
        }
        // Guarding our statement alone suffices when everything racing with
        // an access of that statement (`x = x + 1` reads and writes) is in
        // it too: otherwise the line would still race.
        let region = self.own_region(&ours);
        // Is the place inside the region that guarding `ours` alone locks?
        let inside = |p: &Place| {
            p.file == ours.file
                && ((p.start == ours.start && p.end == ours.end)
                    || region.iter().any(|&(s, e)| s <= p.start && p.end <= e))
        };
        // Each fact's verdict once: the pairs name the same facts many times.
        let near_memo: std::cell::RefCell<FxHashMap<usize, bool>> = Default::default();
        let near = |i: usize| {
            if let Some(&v) = near_memo.borrow().get(&i) {
                return v;
            }
            let v = inside(&self.place(&self.facts[i]));
            near_memo.borrow_mut().insert(i, v);
            v
        };
        let single_suffices = self
            .pairs
            .iter()
            .flat_map(|&(a, b)| [(a, b), (b, a)])
            .filter(|&(x, _)| self.ours.contains(&x) || near(x))
            .all(|(_, y)| near(y));
        let var = self.subject();
        let mut fixes: Vec<Fix> = Vec::new();
        let mut offer = |places: &[Place], title: &dyn Fn(&str) -> String| {
            let Some(decl) = self.declaration_point(places) else {
                return;
            };
            let lt = LockText {
                lock: format!("pthread_mutex_lock(&{});", decl.name),
                unlock: format!("pthread_mutex_unlock(&{});", decl.name),
            };
            let Some(mut edits) = self.guard(places, &|_| Some(lt.clone())) else {
                return;
            };
            edits.extend(decl.edits.iter().cloned());
            edits.sort_by(|a, b| (&a.file, a.start).cmp(&(&b.file, b.start)));
            if !fixes.iter().any(|f| f.edits == edits) {
                fixes.push(Fix {
                    title: title(&decl.name),
                    edits,
                    is_preferred: false,
                });
            }
        };
        if single_suffices {
            offer(std::slice::from_ref(&ours), &|_| {
                format!("Protect {var} with a new mutex")
            });
        }
        offer(&every, &|name| {
            format!("Protect every access to {var} with a new mutex `{name}`")
        });
        fixes
    }

    /// "`counter`", or the object's description without inner quotes.
    fn subject(&self) -> String {
        format!("`{}`", self.var().replace('`', ""))
    }

    /// The byte ranges that guarding `ours` alone would lock (computed once
    /// per fix: a location may have thousands of racing pairs to test).
    fn own_region(&self, ours: &Place) -> Vec<(usize, usize)> {
        let Some(sf) = self.analysis.file(&ours.file) else {
            return Vec::new();
        };
        let p = sf.parsed(self.db);
        let touches: Vec<(usize, usize)> = self
            .same_key()
            .map(|f| self.place(f))
            .filter(|x| x.file == ours.file)
            .map(|x| (x.start, x.end))
            .collect();
        region::regions(p, &[(ours.start, ours.end)], &touches)
            .map(|rs| rs.iter().map(|r| (r.start(), r.end())).collect())
            .unwrap_or_default()
    }

    /// Where `static pthread_mutex_t x_lock = ...;` goes: next to the
    /// variable when every place sees it there, else at top level before
    /// the first function with a place. All places must be in one file.
    fn declaration_point(&self, places: &[Place]) -> Option<NewLock> {
        let file = &places.first()?.file;
        if places.iter().any(|p| &p.file != file) {
            return None;
        }
        let name_base = lock_name_base(&self.key);
        let sees = |d: &NewLock| {
            places
                .iter()
                .all(|p| p.start >= d.visible_from && p.end <= d.visible_until)
        };
        let next_to_variable = match &self.key.base {
            Base::Global(g) if !g.contains("::") => self.after_global(g, &name_base),
            Base::Global(g) => self.after_static_local(g, &name_base),
            _ => None,
        };
        if let Some(d) = next_to_variable.filter(|d| &d.file == file && sees(d)) {
            return Some(d);
        }
        let sf = self.analysis.file(file)?;
        let p = sf.parsed(self.db);
        let first = places
            .iter()
            .filter_map(|x| self.funcs.get(&x.func))
            .map(|&f| function_offset(self.db, f) as usize)
            .min()?;
        let at = syntax::line_start(&p.text, first);
        NewLock::new(file, p, &name_base, at, "", "\n\n", at).filter(|d| sees(d))
    }

    fn after_global(&self, g: &str, name_base: &str) -> Option<NewLock> {
        for &file in self.ws.files(self.db) {
            let items = crate::db::file_items(self.db, self.ws.universe(self.db), file);
            if let Some(gi) = items
                .globals
                .iter()
                .find(|x| *x.name == *racelens_syntax::rename::source_name(g) && !x.is_extern)
            {
                let p = file.parsed(self.db);
                let end = gi.decl_end as usize;
                let at = syntax::trivia_to_eol(&p.text, end).unwrap_or(end);
                return NewLock::new(file.path(self.db), p, name_base, at, "\n", "", end);
            }
        }
        None
    }

    fn after_static_local(&self, g: &str, name_base: &str) -> Option<NewLock> {
        let (func, var) = g.split_once("::")?;
        let prog = program(self.db, self.ws);
        let f = *prog.functions.get(func)?.first()?;
        let s = function_summary(self.db, f);
        let mut span = None;
        crate::visit::visit_stmts(&s.ir.body, &mut |st| {
            if let Stmt::Decl(d) = st {
                if &*d.name == var && d.ty.is_static {
                    span = Some(d.span);
                }
            }
        });
        let off = function_offset(self.db, f) as usize;
        let span = span?;
        let file = f.file(self.db);
        let p = file.parsed(self.db);
        let n = syntax::node_at(p, off + span.start as usize, off + span.end as usize)?;
        let (stmt, _) = syntax::statement_around(n)?;
        let indent = syntax::indent_before(&p.text, stmt.start_byte())?.to_string();
        let at = syntax::trivia_to_eol(&p.text, stmt.end_byte()).unwrap_or(stmt.end_byte());
        let end_of_function = off + crate::db::function_text(self.db, f).len();
        NewLock::new(
            file.path(self.db),
            p,
            name_base,
            at,
            &format!("\n{indent}"),
            "",
            stmt.end_byte(),
        )
        .map(|mut d| {
            // Visible only inside its function.
            d.visible_until = end_of_function;
            d
        })
    }
}

/// A new mutex's name, declaration edits and the offset it is visible from.
struct NewLock {
    name: String,
    file: PathBuf,
    visible_from: usize,
    visible_until: usize,
    edits: Vec<FileEdit>,
}

impl NewLock {
    fn new(
        file: &Path,
        p: &Parsed,
        base: &str,
        at: usize,
        before: &str,
        after: &str,
        visible_from: usize,
    ) -> Option<NewLock> {
        let name = (1..100)
            .map(|k| {
                if k == 1 {
                    format!("{base}_lock")
                } else {
                    format!("{base}_lock{k}")
                }
            })
            .find(|n| !syntax::mentions(&p.text, n))?;
        let mut edits = Vec::new();
        if !p.text.contains("pthread.h") {
            edits.push(FileEdit {
                file: file.to_path_buf(),
                start: 0,
                end: 0,
                new_text: "#include <pthread.h>\n".into(),
            });
        }
        edits.push(FileEdit {
            file: file.to_path_buf(),
            start: at,
            end: at,
            new_text: format!(
                "{before}static pthread_mutex_t {name} = PTHREAD_MUTEX_INITIALIZER;{after}"
            ),
        });
        Some(NewLock {
            name,
            file: file.to_path_buf(),
            visible_from,
            visible_until: usize::MAX,
            edits,
        })
    }
}

/// `counter` -> `counter`, `stats.hits` -> `stats_hits`, `(struct q).n` -> `q_n`.
fn lock_name_base(k: &LocKey) -> String {
    let mut s = match &k.base {
        Base::Global(g) => g.rsplit("::").next().unwrap_or(g).to_string(),
        Base::Local { var, .. } => var.to_string(),
        Base::Heap { func, .. } => format!("{func}_heap"),
        Base::Type(t) => t.to_string(),
        Base::Synthetic(n) => n.to_string(),
        Base::Unknown => "wild".to_string(),
    };
    for e in &k.path {
        if let crate::model::Elem::Field(f) = e {
            s.push('_');
            s.push_str(f);
        }
    }
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn plural(n: usize, what: &str) -> String {
    let s = if n == 1 {
        ""
    } else if what.ends_with("ss") {
        "es"
    } else {
        "s"
    };
    format!("{n} {what}{s}")
}

/// Calls that block or change which locks are held.
fn is_sync(m: &CallModel) -> bool {
    matches!(
        m,
        CallModel::Lock { .. }
            | CallModel::TryLock { .. }
            | CallModel::Unlock { .. }
            | CallModel::Create { .. }
            | CallModel::Join { .. }
            | CallModel::Once { .. }
            | CallModel::CondWait
            | CallModel::Barrier
            | CallModel::Exit
    )
}
