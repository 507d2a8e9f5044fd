//! The salsa database: inputs, interned ids and the per-file and
//! per-function queries.
//!
//! Inputs are one [`SourceFile`] per C file and one [`Workspace`] that lists
//! them with the configuration. Functions, and memory locations of the race
//! check, are interned. The chain `file_items -> function_text ->
//! function_summary` backdates at every step, so an edit inside one body
//! re-executes only that body's summary.

use crate::baseline::{
    effective_functions, program_items, Baseline, EffectiveFn, Placement, Source, Staleness,
};
use crate::config::{CallModel, Config};
use crate::units::{file_view, is_unit, Universe};
use racelens_syntax::{self as syntax, FileItems, FnIr, MacroTable, Name, Parsed, TypeInfo};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One C source or header file.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: PathBuf,
    #[returns(ref)]
    pub parsed: Parsed,
    /// The last good version of each function ([`crate::baseline`]);
    /// `None` for the file's first version.
    #[returns(ref)]
    pub baseline: Option<Arc<Baseline>>,
}

/// One program (see [`crate::programs`]): its files, the configuration,
/// the universe of all files it was formed from, and its name.
#[salsa::input(debug)]
pub struct Workspace {
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    #[returns(ref)]
    pub config: Arc<Config>,
    #[returns(copy)]
    pub universe: Universe,
    #[returns(ref)]
    pub name: Arc<str>,
}

/// A function definition, identified by file, name and ordinal among
/// definitions of that name in the file.
#[salsa::interned(unsafe(no_lifetime), revisions = usize::MAX, debug)]
pub struct FunctionId {
    #[returns(copy)]
    pub ws: Workspace,
    #[returns(copy)]
    pub file: SourceFile,
    #[returns(ref)]
    pub name: Name,
    #[returns(copy)]
    pub ordinal: u32,
}

impl Workspace {
    /// The input's id, as query-execution logs print it.
    pub fn key(self) -> salsa::Id {
        salsa::plumbing::AsId::as_id(&self)
    }
}

impl FunctionId {
    /// A stable sort key.
    pub fn key(self) -> salsa::Id {
        salsa::plumbing::AsId::as_id(&self)
    }
}

/// Records which queries executed, for incrementality tests and profiling.
pub type ExecutionLog = Arc<Mutex<Option<Vec<String>>>>;

/// The database.
#[salsa::db]
#[derive(Clone)]
pub struct RootDb {
    storage: salsa::Storage<Self>,
    log: ExecutionLog,
}

impl Default for RootDb {
    fn default() -> Self {
        let log: ExecutionLog = Arc::default();
        let sink = log.clone();
        let storage = salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
            if let salsa::EventKind::WillExecute { database_key } = event.kind {
                if let Some(v) = sink.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                    v.push(format!("{database_key:?}"));
                }
            }
        })));
        RootDb { storage, log }
    }
}

impl RootDb {
    /// Starts recording executed queries.
    pub fn enable_logging(&self) {
        *self.log.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    }

    /// Returns and clears the recorded query executions.
    pub fn take_log(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

#[salsa::db]
impl salsa::Database for RootDb {}

/// The broken regions of a file with syntax errors, parsed again once for
/// both `file_items` and `file_lowered`.
#[salsa::tracked(returns(ref))]
pub fn file_recovery(
    db: &dyn salsa::Database,
    u: Universe,
    file: SourceFile,
) -> Arc<syntax::Recovery> {
    let p = file_view(db, u, file);
    Arc::new(syntax::recover(&p.tree, &p.text))
}

/// Top-level items of a file, as the compiler sees it ([`file_view`]).
#[salsa::tracked(returns(ref))]
pub fn file_items(db: &dyn salsa::Database, u: Universe, file: SourceFile) -> Arc<FileItems> {
    let p = file_view(db, u, file);
    Arc::new(syntax::extract_items_in(
        &p.tree,
        &p.text,
        file_recovery(db, u, file),
    ))
}

/// The functions defined in a file, in source order: those the analysis
/// uses ([`effective_functions`]: a function with new syntax errors, or
/// lost to error recovery, stands as its last good version).
#[salsa::tracked(returns(ref))]
pub fn file_functions(
    db: &dyn salsa::Database,
    ws: Workspace,
    file: SourceFile,
) -> Vec<FunctionId> {
    effective_functions(db, ws.universe(db), file)
        .iter()
        .map(|f| FunctionId::new(db, ws, file, f.name.clone(), f.ordinal))
        .collect()
}

/// Position of each function in its file's [`effective_functions`] (a map,
/// so that looking up every function of a huge file stays linear).
#[salsa::tracked(returns(ref))]
pub fn function_positions(
    db: &dyn salsa::Database,
    ws: Workspace,
    file: SourceFile,
) -> Arc<FxHashMap<FunctionId, usize>> {
    Arc::new(
        file_functions(db, ws, file)
            .iter()
            .enumerate()
            .map(|(i, f)| (*f, i))
            .collect(),
    )
}

fn function_index(db: &dyn salsa::Database, f: FunctionId) -> Option<usize> {
    function_positions(db, f.ws(db), f.file(db))
        .get(&f)
        .copied()
}

fn function_entry(db: &dyn salsa::Database, f: FunctionId) -> Option<EffectiveFn> {
    let fns = effective_functions(db, f.ws(db).universe(db), f.file(db));
    function_index(db, f).and_then(|i| fns.get(i)).cloned()
}

/// The text of one function definition (for a stale function, the region
/// its last good text maps to). Backdated when unchanged.
#[salsa::tracked(returns(ref))]
pub fn function_text(db: &dyn salsa::Database, f: FunctionId) -> Arc<str> {
    let p = file_view(db, f.ws(db).universe(db), f.file(db));
    match function_entry(db, f) {
        Some(i) => Arc::from(
            p.text
                .get(i.start as usize..(i.start + i.len) as usize)
                .unwrap_or(""),
        ),
        None => Arc::from(""),
    }
}

/// Absolute byte offset of a function in its file (kept out of summaries).
#[salsa::tracked(returns(copy))]
pub fn function_offset(db: &dyn salsa::Database, f: FunctionId) -> u32 {
    function_entry(db, f).map(|i| i.start).unwrap_or(0)
}

/// Does the analysis use this function's last good version because its
/// current text has new syntax errors or uses a name being typed, and
/// which? Its reports are then possibly stale ([`crate::baseline`]).
#[salsa::tracked(returns(ref))]
pub fn function_stale(db: &dyn salsa::Database, f: FunctionId) -> Option<Staleness> {
    function_entry(db, f).and_then(|e| e.staleness())
}

/// Every `#define` of the workspace.
#[salsa::tracked(returns(ref))]
pub fn macro_table(db: &dyn salsa::Database, ws: Workspace) -> Arc<MacroTable> {
    let files = ws.files(db);
    Arc::new(MacroTable::new(
        files
            .iter()
            .map(|f| program_items(db, ws.universe(db), *f))
            .collect::<Vec<_>>()
            .iter()
            .flat_map(|items| items.macros.iter()),
    ))
}

/// The per-function summary: the lowered body plus the meaning of each call
/// under the configured models.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionSummary {
    pub ir: Arc<FnIr>,
    /// Model of each call id, where the callee is a modeled function.
    pub models: BTreeMap<u32, CallModel>,
    /// Functions of the program this body names under a cast to an
    /// integer type (sorted): their address may come back from an integer
    /// (see `walk::laundered`).
    pub launders: Vec<Name>,
}

/// Every function of a file lowered from the file's own tree (one parse).
/// Functions whose text and macros are unchanged reuse their previous IR.
#[salsa::tracked(returns(ref))]
pub fn file_lowered(
    db: &dyn salsa::Database,
    ws: Workspace,
    file: SourceFile,
) -> Arc<Vec<Arc<FnIr>>> {
    let u = ws.universe(db);
    let p = file_view(db, u, file);
    let macros = macro_table(db, ws);
    let mut v: Vec<(usize, Arc<FnIr>)> = Vec::new();
    let recovery = file_recovery(db, u, file);
    syntax::for_each_function_in(&p.tree, &p.text, recovery, &mut |n, text, offset| {
        v.push((
            offset + n.start_byte(),
            crate::lower_cache::lower(n, text, macros),
        ))
    });
    v.sort_by_key(|x| x.0);
    Arc::new(v.into_iter().map(|x| x.1).collect())
}

/// One function's IR. Re-executes for every function of an edited file but
/// backdates unless that function changed, which keeps summaries valid.
/// A stale function's IR is its last good version's, with spans moved to
/// where that text lies now (for what reads the current text: fixes,
/// hover); the walk reads it unmoved ([`walk_summary`]).
#[salsa::tracked(returns(ref))]
pub fn function_ir(db: &dyn salsa::Database, f: FunctionId) -> Arc<FnIr> {
    if let Some(ir) = good_ir(db, f) {
        return match stale_placement(db, f) {
            Some((at, len)) => Arc::new(syntax::respan::respan(ir, &|x| at.map(len, x))),
            None => ir.clone(),
        };
    }
    let ir = match function_entry(db, f).map(|e| e.source) {
        Some(Source::Current(i)) => file_lowered(db, f.ws(db), f.file(db))
            .get(i as usize)
            .cloned()
            .unwrap_or_default(),
        _ => Arc::default(),
    };
    renamed(db, f, ir)
}

/// The IR of the last good version that stands in for a stale or lost
/// function, with its spans where they lie in that text; `None` for a
/// function whose current text is used.
#[salsa::tracked(returns(ref))]
pub fn good_ir(db: &dyn salsa::Database, f: FunctionId) -> Option<Arc<FnIr>> {
    let (Source::Stale { good, .. } | Source::Ghost(good)) = function_entry(db, f)?.source else {
        return None;
    };
    let ir = match f
        .file(db)
        .baseline(db)
        .as_deref()
        .and_then(|b| b.fns.get(good as usize))
    {
        Some(g) => crate::lower_cache::lower_text(&g.text, macro_table(db, f.ws(db))),
        None => Arc::default(),
    };
    Some(renamed(db, f, ir))
}

/// Where the last good text of a stale or lost function lies now, and its
/// length: a position `x` of its IR ([`good_ir`], [`walk_summary`]) is at
/// `function_offset + at.map(len, x)` in the current text.
#[salsa::tracked(returns(copy))]
pub fn stale_placement(db: &dyn salsa::Database, f: FunctionId) -> Option<(Placement, u32)> {
    let (Source::Stale { good, .. } | Source::Ghost(good)) = function_entry(db, f)?.source else {
        return None;
    };
    let base = f.file(db).baseline(db).as_deref()?;
    let g = base.fns.get(good as usize)?;
    Some((g.at, g.text.len() as u32))
}

fn renamed(db: &dyn salsa::Database, f: FunctionId, ir: Arc<FnIr>) -> Arc<FnIr> {
    match static_renames(db, f.ws(db)).get(&f.file(db)) {
        Some(map) => Arc::new(syntax::rename::rename(&ir, map)),
        None => ir,
    }
}

/// For each unit of a program, its file-scope statics whose names another
/// file of the program also defines, renamed `name@unit` (see
/// [`syntax::rename`]). Empty for a program of one unit.
#[salsa::tracked(returns(ref))]
pub fn static_renames(
    db: &dyn salsa::Database,
    ws: Workspace,
) -> Arc<FxHashMap<SourceFile, FxHashMap<Name, Name>>> {
    let u = ws.universe(db);
    let files = ws.files(db);
    if files.iter().filter(|f| is_unit(f.path(db))).count() < 2 {
        return Arc::default();
    }
    // How many files define each name, statically or not.
    let mut count: FxHashMap<&Name, usize> = FxHashMap::default();
    let mut statics: Vec<(SourceFile, Vec<&Name>)> = Vec::new();
    let all: Vec<Arc<FileItems>> = files.iter().map(|f| program_items(db, u, *f)).collect();
    for (f, items) in files.iter().zip(&all) {
        let mut mine: Vec<&Name> = Vec::new();
        let names = effective_functions(db, u, *f)
            .iter()
            .map(|g| (&g.name, g.is_static))
            .chain(
                items
                    .globals
                    .iter()
                    .filter(|g| !g.is_extern)
                    .map(|g| (&g.name, g.ty.is_static)),
            );
        let mut seen = BTreeSet::new();
        for (n, is_static) in names {
            if seen.insert(n) {
                *count.entry(n).or_default() += 1;
                if is_static && is_unit(f.path(db)) {
                    mine.push(n);
                }
            }
        }
        statics.push((*f, mine));
    }
    let mut out = FxHashMap::default();
    for (f, mine) in statics {
        // Named by the unit's path, which is unique and, unlike a salsa
        // Id, the same however the workspace was loaded (`order.rs`).
        let unit = f.path(db).to_string_lossy().into_owned();
        let map: FxHashMap<Name, Name> = mine
            .into_iter()
            .filter(|n| count[n] > 1)
            .map(|n| (n.clone(), Name::from(format!("{n}@{unit}"))))
            .collect();
        if !map.is_empty() {
            out.insert(f, map);
        }
    }
    Arc::new(out)
}

/// The per-function summary: the lowered body plus the meaning of each call
/// under the configured models. Depends only on the function's IR and the config.
#[salsa::tracked(returns(ref))]
pub fn function_summary(db: &dyn salsa::Database, f: FunctionId) -> Arc<FunctionSummary> {
    summarize(db, f, function_ir(db, f).clone())
}

/// The summary the thread walk reads (and what pairs the walk's facts with
/// statements: the explanations). For a function whose last good version
/// stands in, that version's summary with its spans where they lie in the
/// good text, not moved through the edits since: typing in a function with
/// new syntax errors, or a slip in a name, changes nothing the walk reads,
/// and the walk runs neither incrementally nor from scratch. Positions of
/// its facts come out through [`stale_placement`] (`report::site_of`).
/// Otherwise, [`function_summary`].
#[salsa::tracked(returns(ref))]
pub fn walk_summary(db: &dyn salsa::Database, f: FunctionId) -> Arc<FunctionSummary> {
    match good_ir(db, f) {
        Some(ir) => summarize(db, f, ir.clone()),
        None => function_summary(db, f).clone(),
    }
}

fn summarize(db: &dyn salsa::Database, f: FunctionId, mut ir: Arc<FnIr>) -> Arc<FunctionSummary> {
    let candidates = syntax::typecast::cast_candidates(&ir);
    let launders = crate::walk::launders(db, f.ws(db), &ir, &candidates);
    // `(T)(x)` parsed as a call through `T` is a cast when `T` is a type
    // (`syntax::typecast`); only functions that have such a call ask.
    if !candidates.is_empty() {
        let types = type_names(db, f.ws(db));
        // A name ending in `_t` is a type (POSIX reserves the suffix) unless
        // the program defines it otherwise, and so is `_Bool`.
        let is_type = |n: &str| match types.get(n) {
            Some(t) => *t,
            None => n == "_Bool" || n.ends_with("_t"),
        };
        if let Some(out) = syntax::typecast::typedef_casts(&ir, &candidates, &is_type) {
            ir = Arc::new(out);
        }
    }
    let config = f.ws(db).config(db);
    let mut models = BTreeMap::new();
    let defined = |n: &str| defined_functions(db, f.ws(db)).contains(n);
    collect_models(&ir.body, config, &defined, &mut models);
    // A call through a global function pointer that only ever holds one
    // library function (`parson_malloc = &malloc`) is a call of it.
    let mut fn_ptrs: Option<&Arc<BTreeMap<Name, Name>>> = None;
    crate::visit::visit_calls(&ir.body, &mut |c| {
        let Some(n) = pointer_callee(&c.callee) else {
            return;
        };
        if models.contains_key(&c.id) || ir.params.iter().any(|p| p.name == *n) {
            return;
        }
        let map = fn_ptrs.get_or_insert_with(|| fn_pointer_targets(db, f.ws(db)));
        if let Some(m) = map.get(n).and_then(|t| config.model_of(t, || false)) {
            models.insert(c.id, m.clone());
        } else if matches!(c.callee, syntax::Callee::Indirect(_)) {
            // A library's function pointer known by its own name (the Redis
            // module API's `RedisModule_Alloc`, filled by name at load).
            if let Some(m) = config.fallback_models.get(&**n) {
                models.insert(c.id, m.clone());
            }
        }
    });
    Arc::new(FunctionSummary {
        ir,
        models,
        launders,
    })
}

/// The variable a call goes through when it may be a function pointer:
/// `fp(x)`, `(fp)(x)`, `(*fp)(x)`.
fn pointer_callee(c: &syntax::Callee) -> Option<&Name> {
    match c {
        syntax::Callee::Direct(n) => Some(n),
        syntax::Callee::Indirect(syntax::Expr::Var(n)) => Some(n),
        syntax::Callee::Indirect(syntax::Expr::Deref(e)) => match &**e {
            syntax::Expr::Var(n) => Some(n),
            _ => None,
        },
        _ => None,
    }
}

/// Globals that are function pointers holding one library function for
/// the whole run: defined with an initializer that names a function the
/// program does not define and the configuration models (`static void
/// *(*parson_malloc)(size_t) = &malloc;`), never written by a statement
/// and never taken the address of. A call through one is a call of that
/// function (an allocation, a free, a lock). Reads every function's IR only
/// when some global has such an initializer.
#[salsa::tracked(returns(ref))]
pub fn fn_pointer_targets(db: &dyn salsa::Database, ws: Workspace) -> Arc<BTreeMap<Name, Name>> {
    let p = program(db, ws);
    let config = ws.config(db);
    let mut out: BTreeMap<Name, Name> = BTreeMap::new();
    for (g, refs) in &p.global_inits {
        if p.is_function(g) {
            continue;
        }
        if let [r] = &refs[..] {
            if p.functions_named(r).is_none()
                && p.global(r).is_none()
                && config.model_of(r, || false).is_some()
            {
                out.insert(g.clone(), r.clone());
            }
        }
    }
    if out.is_empty() {
        return Arc::new(out);
    }
    // Written or address taken anywhere: it may hold something else.
    let mut dropped: Vec<Name> = Vec::new();
    for f in p.functions.values().flatten() {
        let ir = function_ir(db, *f);
        crate::visit::visit_stmts(&ir.body, &mut |s| {
            let mut exprs: Vec<&syntax::Expr> = Vec::new();
            match s {
                syntax::Stmt::Access(a) => {
                    if let (syntax::Expr::Var(n), syntax::AccessKind::Write) = (&a.place, a.kind) {
                        dropped.push(n.clone());
                    }
                    exprs.push(&a.place);
                }
                syntax::Stmt::Assign { lhs, rhs } => {
                    if let syntax::Expr::Var(n) = lhs {
                        dropped.push(n.clone());
                    }
                    exprs.push(lhs);
                    exprs.push(rhs);
                }
                syntax::Stmt::Call(c) => exprs.extend(c.args.iter()),
                syntax::Stmt::Return { value: Some(v), .. } => exprs.push(v),
                _ => {}
            }
            for e in exprs {
                crate::visit::visit_addr_names(e, &mut |n| dropped.push(n.clone()));
            }
        });
    }
    for n in dropped {
        out.remove(&n);
    }
    Arc::new(out)
}

/// Whether a name is a type: `true` for the program's typedefs that are
/// not also a global or a function, `false` for globals and functions
/// whose names end in `_t` (which are taken for types otherwise).
/// Backdated unless one is added or removed, so the few summaries that
/// ask it stay valid across body edits.
#[salsa::tracked(returns(ref))]
pub fn type_names(db: &dyn salsa::Database, ws: Workspace) -> Arc<BTreeMap<Name, bool>> {
    let p = program(db, ws);
    let value = |n: &str| p.globals.contains_key(n) || p.is_function(n);
    let mut out: BTreeMap<Name, bool> = p.typedefs.keys().map(|n| (n.clone(), !value(n))).collect();
    for n in p.globals.keys().chain(p.functions.keys()) {
        if n.ends_with("_t") {
            out.insert(n.clone(), false);
        }
    }
    Arc::new(out)
}

/// Names of the functions the workspace defines (with a body). Backdated
/// unless a definition is added, removed or renamed, so the summaries that
/// ask it (only those calling a name with a fallback model) stay valid
/// across body edits.
#[salsa::tracked(returns(ref))]
pub fn defined_functions(db: &dyn salsa::Database, ws: Workspace) -> Arc<BTreeSet<Name>> {
    Arc::new(program(db, ws).functions.keys().cloned().collect())
}

fn collect_models(
    stmts: &[syntax::Stmt],
    config: &Config,
    defined: &dyn Fn(&str) -> bool,
    out: &mut BTreeMap<u32, CallModel>,
) {
    crate::visit::visit_calls(stmts, &mut |c| {
        if let syntax::Callee::Direct(n) = &c.callee {
            if let Some(m) = config.model_of(n, || defined(n)) {
                out.insert(c.id, m.clone());
            }
        }
    });
}

/// Whole-program symbol tables, free of positions so that it backdates.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Program {
    pub functions: BTreeMap<Name, Vec<FunctionId>>,
    pub globals: BTreeMap<Name, TypeInfo>,
    pub global_inits: BTreeMap<Name, Vec<Name>>,
    /// The identifiers of struct initializers by member (see
    /// `racelens_syntax::items::InitField`).
    pub global_init_fields: BTreeMap<Name, Vec<racelens_syntax::items::InitField>>,
    /// Globals with a definition (not only `extern` declarations), and
    /// those of them whose initializer is not a literal zero.
    pub defined_globals: rustc_hash::FxHashSet<Name>,
    pub nonzero_init: rustc_hash::FxHashSet<Name>,
    pub structs: FxHashMap<Name, Vec<(Name, TypeInfo)>>,
    /// Members that share their memory location with others, by struct
    /// and member: `None` for a union's members (the location is the union
    /// object itself), else the name of the group the member is in: a run
    /// of adjacent bit-fields (C11 3.14) or an anonymous union member's
    /// members (`a/b`). See [`Program::shared_member`].
    pub shared_members: FxHashMap<Name, FxHashMap<Name, Option<Name>>>,
    pub typedefs: FxHashMap<Name, TypeInfo>,
    pub prototypes: rustc_hash::FxHashSet<Name>,
    /// Return types of defined and declared functions.
    pub returns: FxHashMap<Name, TypeInfo>,
    /// Declared functions: bit `i` set when parameter `i` is a pointer.
    pub pointer_params: FxHashMap<Name, u64>,
    /// `functions` and `globals` by hash, for the walk's lookups (the
    /// ordered maps keep the iteration order the walk depends on).
    function_index: FxHashMap<Name, Vec<FunctionId>>,
    global_index: FxHashMap<Name, TypeInfo>,
    /// Each function's place in the order of (file path, name, ordinal):
    /// the walk sorts and caps facts by it, so that which facts a cap keeps
    /// does not depend on the order salsa handed out function Ids.
    pub fn_rank: FxHashMap<FunctionId, u32>,
}

impl Program {
    /// The functions defined with this name (normally one).
    pub fn functions_named(&self, name: &str) -> Option<&Vec<FunctionId>> {
        self.function_index.get(name)
    }

    /// Does some global's initializer name `name` (`int *pc = &running;`,
    /// a table of functions)?
    pub fn named_by_global_init(&self, name: &str) -> bool {
        self.global_inits
            .values()
            .any(|refs| refs.iter().any(|r| &**r == name))
    }

    /// The type of the global of this name.
    pub fn global(&self, name: &str) -> Option<&TypeInfo> {
        self.global_index.get(name)
    }

    /// Resolves typedef names to the underlying type, adding pointer levels.
    pub fn resolve_type(&self, ty: &TypeInfo) -> TypeInfo {
        let mut t = ty.clone();
        let sig = |n: &str| n == "sig_atomic_t" || n == "__sig_atomic_t";
        for _ in 0..16 {
            let Some(n) = &t.name else { break };
            t.sig_atomic |= sig(n);
            if self.structs.contains_key(n) {
                break;
            }
            match self.typedefs.get(n) {
                Some(def) if def.name.as_ref() != Some(n) => {
                    t.volatile |= def.volatile << t.pointer.min(7);
                    t.pointer += def.pointer;
                    if t.array && def.array {
                        t.rows = t.rows.saturating_add(def.rows + 1);
                    } else if def.array {
                        t.rows = def.rows;
                    }
                    t.array |= def.array;
                    t.atomic |= def.atomic;
                    t.name = def.name.clone();
                }
                _ => break,
            }
        }
        t
    }

    /// Where member `field` of struct `strukt` shares its memory location
    /// with other members: `Some(None)` for a union's member (an access
    /// of it is an access of the union object), `Some(Some(run))` for a
    /// member of a group (a bit-field's run, an anonymous union member's
    /// members: an access of it is one of the group, named `run`), `None`
    /// for a member of its own.
    pub fn shared_member(&self, strukt: &str, field: &str) -> Option<&Option<Name>> {
        self.shared_members.get(strukt)?.get(field)
    }

    pub fn field_type(&self, strukt: &str, field: &str) -> Option<&TypeInfo> {
        self.structs
            .get(strukt)?
            .iter()
            .find(|(n, _)| &**n == field)
            .map(|(_, t)| t)
    }

    pub fn is_function(&self, name: &str) -> bool {
        self.function_index.contains_key(name) || self.prototypes.contains(name)
    }
}

#[salsa::tracked(returns(ref))]
pub fn program(db: &dyn salsa::Database, ws: Workspace) -> Arc<Program> {
    let mut p = Program::default();
    let renames = static_renames(db, ws);
    let none = FxHashMap::default();
    for &file in ws.files(db) {
        let items = program_items(db, ws.universe(db), file);
        let map = renames.get(&file).unwrap_or(&none);
        let named = |n: &Name| map.get(n).unwrap_or(n).clone();
        for f in file_functions(db, ws, file) {
            p.functions.entry(named(f.name(db))).or_default().push(*f);
        }
        for g in &items.globals {
            let e = p
                .globals
                .entry(named(&g.name))
                .or_insert_with(|| g.ty.clone());
            if !g.is_extern {
                let (a, t) = (e.atomic || g.ty.atomic, e.thread_local || g.ty.thread_local);
                *e = g.ty.clone();
                e.atomic = a;
                e.thread_local = t;
            }
            if !g.is_extern {
                p.defined_globals.insert(named(&g.name));
                if g.init_nonzero {
                    p.nonzero_init.insert(named(&g.name));
                }
            }
            if !g.init_refs.is_empty() {
                p.global_inits
                    .entry(named(&g.name))
                    .or_default()
                    .extend(g.init_refs.iter().map(named));
            }
            if !g.init_fields.is_empty() {
                p.global_init_fields
                    .entry(named(&g.name))
                    .or_default()
                    .extend(g.init_fields.iter().map(|x| {
                        let mut x = x.clone();
                        x.name = named(&x.name);
                        x
                    }));
            }
        }
        for s in &items.structs {
            let e = p.structs.entry(s.name.clone()).or_default();
            if e.len() < s.fields.len() {
                *e = s.fields.clone();
            }
            if s.is_union {
                for (f, _) in &s.fields {
                    p.shared_members
                        .entry(s.name.clone())
                        .or_default()
                        .insert(f.clone(), None);
                }
            }
            for run in &s.shared_runs {
                let shown = match &run[..] {
                    [first, .., last] if run.len() > 3 => format!("{first}/.../{last}"),
                    _ => run.iter().map(|n| &**n).collect::<Vec<_>>().join("/"),
                };
                for f in run {
                    p.shared_members
                        .entry(s.name.clone())
                        .or_default()
                        .insert(f.clone(), Some(Name::from(&*shown)));
                }
            }
        }
        for (n, t) in &items.typedefs {
            p.typedefs.insert(n.clone(), t.clone());
        }
        for (n, mask) in &items.pointer_params {
            *p.pointer_params.entry(n.clone()).or_default() |= mask;
        }
        for (n, t) in &items.prototypes {
            p.prototypes.insert(n.clone());
            p.returns.entry(n.clone()).or_insert_with(|| t.clone());
        }
        for f in effective_functions(db, ws.universe(db), file).iter() {
            p.returns.insert(named(&f.name), f.ret.clone());
        }
    }
    p.function_index = p
        .functions
        .iter()
        .map(|(n, f)| (n.clone(), f.clone()))
        .collect();
    p.global_index = p
        .globals
        .iter()
        .map(|(n, t)| (n.clone(), t.clone()))
        .collect();
    let mut all: Vec<FunctionId> = p.functions.values().flatten().copied().collect();
    all.sort_by_cached_key(|f| (f.file(db).path(db), f.name(db), f.ordinal(db)));
    p.fn_rank = all.into_iter().zip(0u32..).collect();
    Arc::new(p)
}
