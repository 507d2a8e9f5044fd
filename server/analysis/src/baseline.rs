//! The last good version of each function, so that half-typed code does not
//! shake the diagnostics.
//!
//! An editor buffer has syntax errors most of the time it is being typed
//! in. tree-sitter's error recovery then changes more than the function
//! being edited: a stray `}` can make one function swallow every function
//! after it (`main` among them), and an unclosed `/*` hides the rest of the
//! file. So, while a function has syntax errors that its previous version
//! did not have, the thread walk uses its *last good* version instead, as
//! rust-analyzer keeps its last good state. The same holds while it uses a
//! name being typed: a slip of a name of its last good text that nothing in
//! the workspace declares (`db_remoed`, `p->nxt`; see `typed_names.rs`),
//! which parses but would rebuild the pointer store for one keystroke.
//!
//! This module owns:
//! - [`Baseline`], a salsa input field of each `SourceFile`: per function
//!   (identified by file, name and ordinal among same-named definitions),
//!   its last good text, how many syntax errors that text had, and where
//!   that text lies in the current file ([`Placement`]); and the file's
//!   error count and items at its last good version. `None` for a
//!   file's first version, which is its own baseline, so the CLI (which
//!   sets each file once) never sees a stale function.
//! - [`effective_functions`], the query that decides, per function, what
//!   the analysis uses: its current definition ([`Source::Current`]), or
//!   its last good text ([`Source::Stale`]) when the current one has more
//!   error or missing nodes or uses a name being typed, or,
//!   while the file has more errors than its last good version
//!   ("broken"), when it swallowed the untouched text of
//!   another function. In a broken file, a function that recovery lost but
//!   whose last good text is still in place, unchanged, stands as that
//!   text ([`Source::Ghost`], not stale: its text is current), and
//!   definitions the baseline does not know are left out (a function
//!   being typed, or a piece of a torn region), as are new definitions
//!   with errors. A function whose good text is gone (deleted, renamed) is
//!   dropped. A function whose text differs from its good one only by
//!   blanks between tokens ([`spacing_only`]) stands as its good text too
//!   ([`Source::Ghost`]: the analysis is the same, only positions move).
//! - [`program_items`]: the items the program reads besides functions
//!   (globals, types, prototypes, macros), those of the last good version
//!   while the file is broken.
//! - [`advance`], which the host calls before each text change: the
//!   baseline of the next revision, from this revision's effective
//!   functions, with every placement moved through the edit.
//!
//! Invariant: the baseline is an input, so results are a function of the
//! inputs (salsa stays deterministic); only the host writes it. Functions
//! that are not stale read nothing of it but their own entry's presence,
//! so their summaries do not re-run.

use crate::db::{file_items, SourceFile};
use crate::typed_names::occurs_as_word;
use crate::units::{file_view, Universe};
use racelens_syntax::FileItems;
use racelens_syntax::{Name, TypeInfo};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use tree_sitter::{Node, Tree};

/// The last good version of each function of a file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Baseline {
    pub fns: Vec<GoodFn>,
    /// Error and missing nodes in the whole file at its last good version
    /// (the last revision with no more than the one before).
    pub file_errors: u32,
    /// The file's items at that version, for what the program reads of
    /// them besides functions ([`program_items`]).
    pub items: Option<Arc<FileItems>>,
}

impl Baseline {
    /// Is a revision whose file has `errors` error and missing nodes
    /// "broken": does it parse worse than the last good version?
    pub fn broken(&self, errors: u32) -> bool {
        errors > self.file_errors
    }
}

/// One function's last good version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoodFn {
    pub name: Name,
    pub ordinal: u32,
    /// Its text then (as the compiler sees it: inactive branches blank).
    pub text: Arc<str>,
    /// Error and missing nodes in it then.
    pub errors: u32,
    pub is_static: bool,
    pub ret: TypeInfo,
    /// Where that text lies in the current file.
    pub at: Placement,
}

/// Where a good text lies now: the region of the file that replaced it, and
/// how much of its start and end no edit has touched since.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Placement {
    pub start: u32,
    pub len: u32,
    pub prefix: u32,
    pub suffix: u32,
}

/// One text change: old bytes `start..old_end` became new `start..new_end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edit {
    pub start: u32,
    pub old_end: u32,
    pub new_end: u32,
}

impl Edit {
    /// The smallest single edit that turns `old` into `new` (common prefix
    /// and suffix), or `None` when they are equal.
    pub fn between(old: &str, new: &str) -> Option<Edit> {
        if old == new {
            return None;
        }
        let (a, b) = (old.as_bytes(), new.as_bytes());
        let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let max = a.len().min(b.len()) - p;
        let s = a
            .iter()
            .rev()
            .zip(b.iter().rev())
            .take(max)
            .take_while(|(x, y)| x == y)
            .count();
        Some(Edit {
            start: p as u32,
            old_end: (a.len() - s) as u32,
            new_end: (b.len() - s) as u32,
        })
    }
}

impl Placement {
    /// A text that lies unchanged at `start`.
    pub fn exact(start: u32, len: u32) -> Self {
        Placement {
            start,
            len,
            prefix: len,
            suffix: len,
        }
    }

    /// This placement after `e`.
    pub fn through(self, e: &Edit) -> Self {
        let end = self.start + self.len;
        let delta = e.new_end as i64 - e.old_end as i64;
        if e.old_end <= self.start && e.start < self.start {
            // Wholly before (an insertion at the very start counts as inside).
            return Placement {
                start: (self.start as i64 + delta) as u32,
                ..self
            };
        }
        if e.start > end || (e.start == end && e.old_end == end && self.len > 0) {
            return self;
        }
        let start = self.start.min(e.start);
        let new_end = if e.old_end > end {
            e.new_end
        } else {
            (end as i64 + delta) as u32
        };
        Placement {
            start,
            len: new_end.saturating_sub(start),
            prefix: self.prefix.min(e.start.saturating_sub(self.start)),
            suffix: self.suffix.min(end.saturating_sub(e.old_end)),
        }
    }

    /// Where position `x` of the good text (of length `good`) is now,
    /// relative to `start`: shifted in the untouched suffix (a position
    /// where text was inserted moves with the text after it), unchanged in
    /// the untouched prefix, the edited region's start in between.
    pub fn map(&self, good: u32, x: u32) -> u32 {
        if x >= good.saturating_sub(self.suffix) {
            (x as i64 + self.len as i64 - good as i64).max(0) as u32
        } else if x <= self.prefix {
            x
        } else {
            self.prefix
        }
    }
}

/// Why a report is possibly out of date: its function's last good version
/// stands in for a current text with new syntax errors, or one that uses a
/// name being typed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Staleness {
    SyntaxErrors,
    TypedName(Name),
}

/// What the analysis uses for one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Its current definition: this index into `file_items`' functions.
    Current(u32),
    /// Its current definition (`item`) has new syntax errors, or uses a
    /// name being typed ([`EffectiveFn::typed`]): the last good version
    /// (this index into the baseline) stands in.
    Stale { item: u32, good: u32 },
    /// Recovery lost it, but its good text is in place, inside a broken
    /// region; or its text differs from the good one only by blanks
    /// between tokens: the last good version stands in, not stale.
    Ghost(u32),
}

/// A function of a file as the analysis sees it at this revision.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EffectiveFn {
    pub name: Name,
    pub ordinal: u32,
    /// Its region in the file (for a stale or lost function, where its good
    /// text lies now).
    pub start: u32,
    pub len: u32,
    pub is_static: bool,
    pub ret: TypeInfo,
    /// Error and missing nodes in the text used.
    pub errors: u32,
    pub source: Source,
    /// For a stale function: the name being typed that keeps its last good
    /// version in place (a current text that uses a name nothing in the
    /// workspace declares, `typed_names.rs`); `None` when the current text
    /// has more error or missing nodes.
    pub typed: Option<Name>,
}

impl EffectiveFn {
    /// Does its last good version stand in for a current text with new
    /// syntax errors? Its own reports are then possibly stale. (A function
    /// recovery lost is not: its text is its last good text.)
    pub fn stale(&self) -> bool {
        matches!(self.source, Source::Stale { .. })
    }

    /// Why its reports are possibly stale, when they are.
    pub fn staleness(&self) -> Option<Staleness> {
        match (&self.source, &self.typed) {
            (Source::Stale { .. }, Some(w)) => Some(Staleness::TypedName(w.clone())),
            (Source::Stale { .. }, None) => Some(Staleness::SyntaxErrors),
            _ => None,
        }
    }

    /// Does its last good version stand in for it, stale or lost?
    pub fn last_good(&self) -> bool {
        !matches!(self.source, Source::Current(_))
    }
}

/// The functions of a file that the analysis uses, in source order (see
/// the module doc). Re-executes on every edit of the file, like
/// `file_items`, and backdates when nothing changed.
#[salsa::tracked(returns(ref))]
pub fn effective_functions(
    db: &dyn salsa::Database,
    u: Universe,
    file: SourceFile,
) -> Arc<Vec<EffectiveFn>> {
    let view = file_view(db, u, file);
    let items = file_items(db, u, file);
    let mut ordinals: FxHashMap<&str, u32> = FxHashMap::default();
    let roots = error_roots(&view.tree);
    let current: Vec<EffectiveFn> = items
        .functions
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let ord = ordinals.entry(&item.name).or_insert(0);
            *ord += 1;
            EffectiveFn {
                name: item.name.clone(),
                ordinal: *ord - 1,
                start: item.start,
                len: item.end - item.start,
                is_static: item.is_static,
                ret: item.ret.clone(),
                errors: errors_in(&roots, &view.text, item.start, item.end),
                source: Source::Current(i as u32),
                typed: None,
            }
        })
        .collect();
    let Some(base) = file.baseline(db).as_deref() else {
        return Arc::new(current);
    };
    // More errors in the file than in its last good version: recovery may
    // have lost or torn apart definitions the edit did not touch.
    let broken = base.broken(items.error_count);
    let index: FxHashMap<(&str, u32), usize> = base
        .fns
        .iter()
        .enumerate()
        .map(|(i, g)| ((&*g.name, g.ordinal), i))
        .collect();
    // Last good texts still in place, untouched since.
    let in_place: Vec<bool> = base
        .fns
        .iter()
        .map(|g| broken && in_place(&view.text, g))
        .collect();
    let placed: Vec<u32> = base
        .fns
        .iter()
        .zip(&in_place)
        .filter(|(_, &p)| p)
        .map(|(g, _)| g.at.start)
        .collect();
    let mut matched = vec![false; base.fns.len()];
    let mut out = Vec::with_capacity(current.len());
    for mut f in current {
        let Some(&g) = index.get(&(&*f.name, f.ordinal)) else {
            // Being typed, or a piece of a broken region: left out until
            // the file parses as well as before.
            if !broken && f.errors == 0 {
                out.push(f);
            }
            continue;
        };
        matched[g] = true;
        let good = &base.fns[g];
        let (s, e) = (f.start as usize, (f.start + f.len) as usize);
        let changed = view.text.get(s..e) != Some(&*good.text);
        if changed {
            // A word typed before a statement can make it a declaration
            // that parses (`misparse.rs`); only changed text is scanned.
            f.errors += misparsed(&view.tree, &view.text, s, e, &items.typedefs);
        }
        // New errors, or it swallowed another function's untouched text.
        let swallowed = || {
            let next = placed.partition_point(|&s| s <= f.start);
            placed.get(next).is_some_and(|&s| s < f.start + f.len)
        };
        let Source::Current(item) = f.source else {
            unreachable!()
        };
        let stale = Source::Stale {
            item,
            good: g as u32,
        };
        if f.errors > good.errors || (broken && swallowed()) {
            out.push(standing_in(good, stale));
        } else if let Some(w) = typed_name(db, u, file, &view.text, &f, good) {
            let mut s = standing_in(good, stale);
            s.typed = Some(w);
            out.push(s);
        } else if changed
            && !broken
            && (good.at.start, good.at.len) == (f.start, f.len)
            && spacing_only(&good.text, &view.text[s..e], &good.at)
        {
            // Only blanks changed: the last good version stands, not
            // stale (the analysis of the text is the same), its positions
            // moved through the edit.
            out.push(standing_in(good, Source::Ghost(g as u32)));
        } else {
            out.push(f);
        }
    }
    let taken: Vec<(u32, u32)> = out
        .iter()
        .filter(|f| !f.last_good())
        .map(|f| (f.start, f.start + f.len))
        .collect();
    for (g, good) in base.fns.iter().enumerate() {
        let (s, e) = (good.at.start, good.at.start + good.at.len);
        if !matched[g] && in_place[g] && !taken.iter().any(|&(a, b)| a < e && s < b) {
            out.push(standing_in(good, Source::Ghost(g as u32)));
        }
    }
    out.sort_by_key(|f| f.start);
    Arc::new(out)
}

/// The name being typed in `f`'s current text (`typed_names.rs`), when its
/// text is not its last good one. Reads the other files' texts only when
/// the function has a candidate.
fn typed_name(
    db: &dyn salsa::Database,
    u: Universe,
    file: SourceFile,
    text: &str,
    f: &EffectiveFn,
    good: &GoodFn,
) -> Option<Name> {
    let (s, e) = (f.start as usize, (f.start + f.len) as usize);
    let current = text.get(s..e)?;
    if *current == *good.text {
        return None;
    }
    crate::typed_names::typed_name(current, &good.text, |w| {
        occurs_as_word(&text[..s], w)
            || occurs_as_word(&text[e..], w)
            || u.files(db)
                .iter()
                .filter(|&&o| o != file)
                .any(|o| occurs_as_word(&o.parsed(db).text, w))
    })
}

fn standing_in(good: &GoodFn, source: Source) -> EffectiveFn {
    EffectiveFn {
        name: good.name.clone(),
        ordinal: good.ordinal,
        start: good.at.start,
        len: good.at.len,
        is_static: good.is_static,
        ret: good.ret.clone(),
        errors: good.errors,
        source,
        typed: None,
    }
}

/// Does `cur` differ from the good text `good` only by blanks (spaces and
/// tabs, no line break) in the one region `at` says the edits since
/// touched, outside literals and directive lines, with tokens neither split
/// nor joined? Then both lower alike but for positions, and `at.map` places
/// every position of a token exactly (indentation changed, a space typed
/// or deleted between tokens). Whitespace inside the region collapses to
/// its start, and holds no token.
fn spacing_only(good: &str, cur: &str, at: &Placement) -> bool {
    let (p, q) = (at.prefix as usize, at.suffix as usize);
    let (g, c) = (good.len(), cur.len());
    if p + q > g || p + q > c || good.get(..p) != cur.get(..p) {
        return false;
    }
    if good.get(g - q..) != cur.get(c - q..) {
        return false;
    }
    let blank = |t: &str| t.bytes().all(|b| b == b' ' || b == b'\t');
    // (`get`: positions off a character boundary are no blank region.)
    let (Some(was), Some(now)) = (good.get(p..g - q), cur.get(p..c - q)) else {
        return false;
    };
    if !blank(was) || !blank(now) {
        return false;
    }
    let ws = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_whitespace());
    let gb = good.as_bytes();
    let (left, right) = (p.checked_sub(1).and_then(|i| gb.get(i)), gb.get(g - q));
    // Two tokens side by side stay apart, or together, as they were (a
    // bracket, brace, parenthesis, comma or semicolon is a token of its
    // own whatever follows it).
    let alone = |b: Option<&u8>| b.is_some_and(|b| b";,(){}[]".contains(b));
    let apart = ws(left) || ws(right) || alone(left) || alone(right);
    if !(apart || (!was.is_empty() && !now.is_empty())) {
        return false;
    }
    let line = &good[good[..p].rfind('\n').map_or(0, |i| i + 1)..p];
    let odd = |ch: char| line.matches(ch).count() % 2 == 1;
    !line.trim_start().starts_with('#') && !odd('"') && !odd('\'') && !line.contains('\\')
}

/// Declarations in the definition spanning `start..end` that are not C
/// (`racelens_syntax::misparse`); zero when the tree has no definition
/// there (one that recovery reparsed on its own).
fn misparsed(
    tree: &Tree,
    text: &str,
    start: usize,
    end: usize,
    typedefs: &[(Name, TypeInfo)],
) -> u32 {
    let mut node = tree.root_node().descendant_for_byte_range(start, end);
    while let Some(n) = node {
        if n.kind() == "function_definition" {
            break;
        }
        node = n.parent();
    }
    match node {
        Some(n) if n.start_byte() == start && n.end_byte() == end => {
            racelens_syntax::misparse::misparsed_statements(n, text, typedefs)
        }
        _ => 0,
    }
}

/// Is `good`'s text still where it was, unchanged?
fn in_place(text: &str, good: &GoodFn) -> bool {
    let (s, e) = (
        good.at.start as usize,
        (good.at.start + good.at.len) as usize,
    );
    good.at.len as usize == good.text.len() && text.get(s..e) == Some(&*good.text)
}

/// The top-level nodes of a tree, in order, when it holds an error (none
/// otherwise): [`errors_in`] looks only at those around a range, so that a
/// file's functions cost one pass over them, not one each.
pub fn error_roots(tree: &Tree) -> Vec<Node<'_>> {
    let root = tree.root_node();
    if !root.has_error() {
        return Vec::new();
    }
    let mut cur = root.walk();
    let v: Vec<Node> = root.children(&mut cur).collect();
    v
}

/// Error and missing nodes within `start..end` (a missing node at `end`
/// counts: a definition's missing closing brace), below the top-level
/// nodes `roots` ([`error_roots`]) of a tree over `src`: the syntax errors
/// of the C text only, as the file's count has them
/// (`racelens_syntax::errors::is_syntax_error`: a type given to a macro as an
/// argument, `container_of(p, struct s, m)`, is none).
pub fn errors_in(roots: &[Node], src: &str, start: u32, end: u32) -> u32 {
    let (s, e) = (start as usize, end as usize);
    let inside = |n: &Node| {
        if n.start_byte() == n.end_byte() {
            s <= n.start_byte() && n.start_byte() <= e
        } else {
            n.start_byte() < e && s < n.end_byte()
        }
    };
    // Siblings do not overlap: those ending before `start` and those
    // starting after `end` are not inside.
    let first = roots.partition_point(|n| n.end_byte() < s);
    let mut stack: Vec<Node> = roots[first..]
        .iter()
        .take_while(|n| n.start_byte() <= e)
        .copied()
        .collect();
    let Some(top) = stack.first().copied() else {
        return 0;
    };
    let mut n = 0;
    let mut cur = top.walk();
    while let Some(node) = stack.pop() {
        if !inside(&node) {
            continue;
        }
        if node.is_error() || node.is_missing() {
            n += u32::from(racelens_syntax::errors::is_syntax_error(node, src));
        } else if node.has_error() {
            stack.extend(node.children(&mut cur));
        }
    }
    n
}

/// The baseline for the revision after `edit`: each function's last good
/// version as of this revision, placed through the edit. Reads this
/// revision's [`effective_functions`] (the host calls it before it writes
/// the new text).
pub fn advance(
    db: &dyn salsa::Database,
    u: Universe,
    file: SourceFile,
    edit: &Edit,
) -> Arc<Baseline> {
    let view = file_view(db, u, file);
    let errors = file_items(db, u, file).error_count;
    let old = file.baseline(db).as_deref();
    let (file_errors, items) = match old {
        Some(b) if b.broken(errors) => (b.file_errors, b.items.clone()),
        _ => (errors, Some(file_items(db, u, file).clone())),
    };
    let fns = effective_functions(db, u, file)
        .iter()
        .map(|f| {
            let mut good = match (f.source, old) {
                (Source::Stale { good, .. } | Source::Ghost(good), Some(b)) => {
                    b.fns[good as usize].clone()
                }
                _ => {
                    let text = view
                        .text
                        .get(f.start as usize..(f.start + f.len) as usize)
                        .unwrap_or("");
                    // Reuse the previous text's allocation when unchanged.
                    let text = old
                        .and_then(|b| {
                            b.fns
                                .iter()
                                .find(|g| g.name == f.name && g.ordinal == f.ordinal)
                        })
                        .filter(|g| &*g.text == text)
                        .map(|g| g.text.clone())
                        .unwrap_or_else(|| Arc::from(text));
                    GoodFn {
                        name: f.name.clone(),
                        ordinal: f.ordinal,
                        text,
                        errors: f.errors,
                        is_static: f.is_static,
                        ret: f.ret.clone(),
                        at: Placement::exact(f.start, f.len),
                    }
                }
            };
            good.at = good.at.through(edit);
            good
        })
        .collect();
    Arc::new(Baseline {
        fns,
        file_errors,
        items,
    })
}

/// The items of a file that the program reads besides its functions
/// (globals, types, prototypes, macros): the current ones, or, while the
/// file has more syntax errors than its last good version, those of that
/// version. Error recovery that swallows the rest of the file into a
/// broken function (`n }` typed before a closing brace) turns the globals
/// after it into that function's locals; the program must not lose them
/// for a keystroke, any more than the functions ([`effective_functions`]).
/// A declaration being typed counts once the file parses as well as before.
pub fn program_items(db: &dyn salsa::Database, u: Universe, file: SourceFile) -> Arc<FileItems> {
    let items = file_items(db, u, file);
    match file.baseline(db).as_deref() {
        Some(b) if b.broken(items.error_count) => b.items.clone().unwrap_or_else(|| items.clone()),
        _ => items.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_the_common_prefix_and_suffix() {
        let e = Edit::between("abcdef", "abXYdef").unwrap();
        assert_eq!(
            e,
            Edit {
                start: 2,
                old_end: 3,
                new_end: 4
            }
        );
        assert_eq!(Edit::between("aaa", "aaaa").unwrap().start, 3);
        assert!(Edit::between("x", "x").is_none());
    }

    #[test]
    fn placements_follow_edits_before_inside_and_after() {
        let p = Placement::exact(10, 20);
        let before = Edit {
            start: 2,
            old_end: 4,
            new_end: 9,
        };
        assert_eq!(p.through(&before), Placement::exact(15, 20));
        let after = Edit {
            start: 30,
            old_end: 30,
            new_end: 33,
        };
        assert_eq!(p.through(&after), p);
        // Typing three characters at offset 5 of the function.
        let inside = Edit {
            start: 15,
            old_end: 15,
            new_end: 18,
        };
        let q = p.through(&inside);
        assert_eq!((q.start, q.len, q.prefix, q.suffix), (10, 23, 5, 15));
        assert_eq!(q.map(20, 3), 3);
        assert_eq!(q.map(20, 4), 4);
        assert_eq!(q.map(20, 5), 8);
        assert_eq!(q.map(20, 6), 9);
        assert_eq!(q.map(20, 20), 23);
    }

    /// The placement of `good` (at offset 0) after turning it into `cur`
    /// by one edit.
    fn placed(good: &str, cur: &str) -> Placement {
        let e = Edit::between(good, cur).unwrap();
        Placement::exact(0, good.len() as u32).through(&e)
    }

    fn only_blanks(good: &str, cur: &str) -> bool {
        spacing_only(good, cur, &placed(good, cur))
    }

    #[test]
    fn blanks_between_tokens_change_positions_only() {
        let good = "void f(void) {\n    n++;\n    m = n;\n}\n";
        // Indentation, a space between tokens typed or deleted.
        assert!(only_blanks(
            good,
            &good.replace("    m = n;", "     m = n;")
        ));
        assert!(only_blanks(good, &good.replace("    m = n;", "   m = n;")));
        assert!(only_blanks(good, &good.replace("m = n;", "m  = n;")));
        assert!(only_blanks(good, &good.replace("m = n;", "m\t= n;")));
        assert!(only_blanks(good, &good.replace("n++;", "n++ ;")));
        assert!(only_blanks(good, &good.replace("f(void)", "f (void)")));
    }

    #[test]
    fn blanks_that_split_or_join_tokens_or_sit_in_literals_do_not() {
        let good = "int f(int a) {\n    return a;\n}\n";
        // `return a` -> `returna`: joined; `ret urn`: split.
        assert!(!only_blanks(good, &good.replace("return a", "returna")));
        assert!(!only_blanks(good, &good.replace("return", "ret urn")));
        let ops = "void f(int a) {\n    a++;\n}\n";
        assert!(!only_blanks(ops, &ops.replace("a++", "a+ +")));
        // A line break, a string or character literal, a directive line.
        assert!(!only_blanks(
            good,
            &good.replace("    return", "\n    return")
        ));
        let lit = "void f(void) {\n    g(\"a b\", ' ');\n}\n";
        assert!(!only_blanks(lit, &lit.replace("\"a b\"", "\"a  b\"")));
        assert!(!only_blanks(lit, &lit.replace("' '", "'  '")));
        let dir = "void f(void) {\n#define F(x) x\n    F(1);\n}\n";
        assert!(!only_blanks(
            dir,
            &dir.replace("#define F(x)", "#define  F(x)")
        ));
        // Tokens changed.
        assert!(!only_blanks(good, &good.replace("return a;", "return  b;")));
    }
}
