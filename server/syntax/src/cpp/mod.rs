//! Conditional compilation of one translation unit: which branches of
//! `#if` / `#ifdef` / `#ifndef` / `#elif` / `#else` the compiler would
//! build, given the macros of the command line (or GCC's predefined ones)
//! and the `#define`s and `#undef`s the unit has seen so far, its own and
//! those of the workspace headers it includes.
//!
//! The result is, per file of the unit, the byte ranges to blank: the
//! inactive branches and the directive lines of every conditional whose
//! conditions were all decided. Blanking replaces bytes by spaces and keeps
//! newlines, so every offset and line of the original text stays valid.
//!
//! Invariants:
//! - A condition that cannot be decided (a macro that an unread system
//!   header or a missing project header may define, `__has_include` of a
//!   system header, an expression this evaluator does not understand) keeps
//!   every branch of its conditional and all its directive lines: the
//!   behaviour of racelens before this evaluator. It is counted.
//! - A `#define` or `#undef` inside an undecided branch makes that macro
//!   unknown afterwards, so later conditions on it are undecided too.
//! - Only files the caller can find ([`Sources`]) are read; system headers
//!   are never read.
//! - A header's blanking is that of its first inclusion in the unit
//!   ([`merge`] joins those of several units).
//! - This module does no IO: the caller hands over the texts.

mod expr;
mod merge;

pub use expr::Undecided;
pub use merge::merge;

use crate::ir::Name;
use crate::preproc::lines;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A macro's parameters (`None` for object-like macros) and body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Macro {
    pub params: Option<Vec<Name>>,
    pub body: String,
}

/// The macro state at one point of a unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Macros {
    /// `Some` when defined, `None` when known to be undefined (`#undef`, `-U`).
    map: FxHashMap<Name, Option<Macro>>,
    /// Defined or undefined in a branch whose condition is undecided.
    unknown: FxHashSet<Name>,
}

const GCC_PREDEFINED: &str = include_str!("../../data/gcc-x86_64-linux.h");

/// Macros that GCC on x86-64 Linux does not predefine and that no system
/// header defines either: other compilers and platforms. Their absence is
/// certain, although their names are in the implementation's namespace.
const OTHER_PLATFORMS: &[&str] = &[
    "_WIN32",
    "_WIN64",
    "_MSC_VER",
    "_WINDOWS",
    "WIN32",
    "__WIN32__",
    "__APPLE__",
    "__MACH__",
    "__FreeBSD__",
    "__OpenBSD__",
    "__NetBSD__",
    "__DragonFly__",
    "__sun",
    "__sun__",
    "__SVR4",
    "__CYGWIN__",
    "__MINGW32__",
    "__MINGW64__",
    "__clang__",
    "__INTEL_COMPILER",
    "_AIX",
    "__hpux",
    "__ANDROID__",
    "__EMSCRIPTEN__",
    "__cplusplus",
    "__OBJC__",
    "__HAIKU__",
    "__QNX__",
    "__VXWORKS__",
    "__TINYC__",
    "__PCC__",
    "_CRAYC",
];

impl Macros {
    /// GCC 12's predefined macros on x86-64 Linux, adjusted for `-std`.
    pub fn gcc_predefined(std: Option<&str>) -> Macros {
        let mut m = Macros::default();
        for line in GCC_PREDEFINED.lines() {
            if let Some(def) = line.strip_prefix("#define ") {
                m.define_text(def);
            }
        }
        for n in OTHER_PLATFORMS {
            m.map.insert(Name::from(*n), None);
        }
        if let Some(std) = std {
            let version = match std.trim_start_matches("gnu").trim_start_matches('c') {
                "89" | "90" => None,
                "99" | "9x" => Some("199901L"),
                "11" | "1x" => Some("201112L"),
                "17" | "18" => Some("201710L"),
                "2x" | "23" => Some("202000L"),
                _ => Some("201710L"),
            };
            match version {
                Some(v) => m.define("__STDC_VERSION__", Some(v)),
                None => m.undef("__STDC_VERSION__"),
            }
            if std.starts_with('c') {
                m.define("__STRICT_ANSI__", Some("1"));
                for n in ["linux", "unix"] {
                    m.undef(n);
                }
            }
        }
        m
    }

    /// `Some(Some(m))` when defined, `Some(None)` when known undefined,
    /// `None` when nothing is known about the name.
    pub fn state(&self, name: &str) -> Option<Option<&Macro>> {
        self.map.get(name).map(|m| m.as_ref())
    }

    pub fn is_unknown(&self, name: &str) -> bool {
        self.unknown.contains(name)
    }

    /// `-D NAME` (value 1) or `-D NAME=VALUE`.
    pub fn define(&mut self, name: &str, value: Option<&str>) {
        let (name, params) = split_params(name);
        self.unknown.remove(name);
        self.map.insert(
            Name::from(name),
            Some(Macro {
                params,
                body: value.unwrap_or("1").to_string(),
            }),
        );
    }

    pub fn undef(&mut self, name: &str) {
        self.unknown.remove(name);
        self.map.insert(Name::from(name.trim()), None);
    }

    /// The text after `#define`: `NAME body` or `NAME(a, b) body`.
    pub fn define_text(&mut self, def: &str) {
        let def = def.trim_start();
        let end = def
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(def.len());
        if end == 0 {
            return;
        }
        let (head, body) = if def[end..].starts_with('(') {
            let close = def[end..]
                .find(')')
                .map(|k| end + k + 1)
                .unwrap_or(def.len());
            (&def[..close], &def[close..])
        } else {
            (&def[..end], &def[end..])
        };
        let (name, params) = split_params(head);
        self.unknown.remove(name);
        self.map.insert(
            Name::from(name),
            Some(Macro {
                params,
                body: body.trim().to_string(),
            }),
        );
    }

    fn forget(&mut self, name: &str) {
        self.map.remove(name);
        self.unknown.insert(Name::from(name));
    }
}

fn split_params(head: &str) -> (&str, Option<Vec<Name>>) {
    match head.find('(') {
        Some(k) => {
            let inner = head[k + 1..].trim_end().trim_end_matches(')');
            let params = inner
                .split(',')
                .map(|p| Name::from(p.trim()))
                .filter(|p| !p.is_empty())
                .collect();
            (head[..k].trim(), Some(params))
        }
        None => (head.trim(), None),
    }
}

/// How a unit is compiled: the command line's macro operations in order,
/// its include folders and forced includes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    /// `-D` (`Some(value)`, where `-DX` has value `None`) and `-U` (`Err`), in order.
    pub macros: Vec<(String, MacroOp)>,
    pub include_dirs: Vec<PathBuf>,
    pub forced_includes: Vec<PathBuf>,
    pub std: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MacroOp {
    Define(Option<String>),
    Undef,
}

impl Flags {
    /// The macro state at the start of the unit.
    pub fn initial_macros(&self) -> Macros {
        let mut m = Macros::gcc_predefined(self.std.as_deref());
        for (name, op) in &self.macros {
            match op {
                MacroOp::Define(v) => m.define(name, v.as_deref()),
                MacroOp::Undef => m.undef(name),
            }
        }
        m
    }
}

/// The files a unit may include: those of the workspace.
pub trait Sources {
    /// The path and text of the file an `#include` names, from the file
    /// that includes it; `quoted` for `"..."`, false for `<...>`.
    fn find(&mut self, spec: &str, quoted: bool, from: &Path) -> Option<(PathBuf, Arc<str>)>;
}

/// What the evaluation decided for one file of a unit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FileBlanks {
    /// Byte ranges to blank, in order, each within one logical line group.
    pub blank: Vec<(u32, u32)>,
    /// Conditionals whose every condition was decided.
    pub decided: u32,
    /// Conditionals with an undecided condition (kept whole).
    pub undecided: u32,
    /// The first undecided condition: its line (0-based) and cause.
    pub first_undecided: Option<(u32, String)>,
}

/// The evaluation of one unit: its own file first, then each header in
/// order of first inclusion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UnitConditions {
    pub files: Vec<(PathBuf, FileBlanks)>,
    /// Quoted includes found nowhere in the workspace.
    pub missing: Vec<String>,
}

impl UnitConditions {
    pub fn of(&self, path: &Path) -> Option<&FileBlanks> {
        self.files.iter().find(|(p, _)| p == path).map(|(_, b)| b)
    }
}

/// Evaluates the conditionals of the unit `path` with text `text`.
pub fn evaluate(
    path: &Path,
    text: &str,
    flags: &Flags,
    sources: &mut dyn Sources,
) -> UnitConditions {
    let mut u = Unit {
        macros: flags.initial_macros(),
        out: UnitConditions::default(),
        index: FxHashMap::default(),
        once: FxHashSet::default(),
        missing_quoted: false,
        saw_system: false,
        sources,
    };
    for f in &flags.forced_includes {
        if let Some((p, t)) = u.sources.find(&f.to_string_lossy(), true, path) {
            u.file(&p, &t, Activity::Active, 0);
        }
    }
    u.file(path, text, Activity::Active, 0);
    u.out
}

/// Whether code at a point is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    Active,
    /// Inside a branch whose condition is undecided.
    Uncertain,
    Inactive,
}

/// Whether a branch of a conditional chain was taken: yes, no, or unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tri {
    Yes,
    No,
    Maybe,
}

impl Tri {
    fn or(self, o: Tri) -> Tri {
        match (self, o) {
            (Tri::Yes, _) | (_, Tri::Yes) => Tri::Yes,
            (Tri::No, Tri::No) => Tri::No,
            _ => Tri::Maybe,
        }
    }
}

struct Frame {
    parent: Activity,
    taken: Tri,
    undecided: bool,
    /// Directive lines of the chain, blanked at `#endif` when all decided.
    lines: Vec<(u32, u32)>,
    /// Where the chain's blank ranges start in the file's list.
    first_blank: usize,
}

const MAX_DEPTH: u32 = 40;
const MAX_NESTING: usize = 256;

struct Unit<'a> {
    macros: Macros,
    out: UnitConditions,
    index: FxHashMap<PathBuf, usize>,
    once: FxHashSet<PathBuf>,
    missing_quoted: bool,
    saw_system: bool,
    sources: &'a mut dyn Sources,
}

impl Unit<'_> {
    /// May a name that nothing defined so far still be defined by a header
    /// racelens did not read?
    fn unknown(&self, name: &str) -> bool {
        unread(self.missing_quoted, self.saw_system, name)
    }

    fn file(&mut self, path: &Path, text: &str, base: Activity, depth: u32) {
        if depth > MAX_DEPTH || self.once.contains(path) {
            return;
        }
        let first = !self.index.contains_key(path);
        if first {
            self.index.insert(path.to_path_buf(), self.out.files.len());
            self.out
                .files
                .push((path.to_path_buf(), FileBlanks::default()));
        }
        let mut blanks = FileBlanks::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut act = base;
        for l in lines(text) {
            let span = (l.start as u32, l.end as u32);
            let line_no = l.line;
            let Some((word, rest)) = l.directive else {
                if act == Activity::Inactive {
                    blanks.blank.push(span);
                }
                continue;
            };
            let rest = logical(rest);
            match word {
                "if" | "ifdef" | "ifndef" => {
                    let c = if act == Activity::Inactive || stack.len() >= MAX_NESTING {
                        Tri::No
                    } else {
                        self.condition(word, &rest, path, &mut blanks, line_no)
                    };
                    stack.push(Frame {
                        parent: act,
                        taken: Tri::No,
                        undecided: false,
                        lines: vec![span],
                        first_blank: blanks.blank.len(),
                    });
                    act = self.enter(&mut stack, c);
                }
                "elif" | "elifdef" | "elifndef" | "else" => {
                    let Some(top) = stack.last_mut() else {
                        continue;
                    };
                    top.lines.push(span);
                    let parent = top.parent;
                    let taken = top.taken;
                    let c = if parent == Activity::Inactive || taken == Tri::Yes {
                        Tri::No
                    } else if word == "else" {
                        Tri::Yes
                    } else {
                        let w = word.trim_start_matches("el");
                        let w = if w == "if" { "if" } else { w };
                        self.condition(w, &rest, path, &mut blanks, line_no)
                    };
                    act = self.enter(&mut stack, c);
                }
                "endif" => {
                    let Some(top) = stack.pop() else {
                        continue;
                    };
                    // A decided chain goes whole, directive lines included;
                    // so does one inside a branch that is not compiled, even
                    // undecided: one left behind (`#if defined(__APPLE__)`
                    // whose `#endif` went) would open a conditional the view
                    // never closes.
                    let inactive = top.parent == Activity::Inactive;
                    if top.undecided && !inactive {
                        blanks.undecided += 1;
                    } else {
                        if !inactive {
                            blanks.decided += 1;
                        }
                        let mut chain = top.lines;
                        chain.push(span);
                        blanks.blank.extend(chain);
                        blanks.blank[top.first_blank..].sort_unstable();
                    }
                    act = top.parent;
                }
                _ => match act {
                    Activity::Inactive => blanks.blank.push(span),
                    _ => self.other(word, &rest, path, act, depth),
                },
            }
        }
        // An unterminated conditional keeps its lines (a half-typed buffer).
        if first {
            let slot = self.index[path];
            blanks.blank.sort_unstable();
            self.out.files[slot].1 = blanks;
        }
    }

    /// Takes the next branch of the chain on top of `stack`, whose
    /// condition is `c`, and returns the activity inside it.
    fn enter(&mut self, stack: &mut [Frame], c: Tri) -> Activity {
        let Some(top) = stack.last_mut() else {
            return Activity::Active;
        };
        if top.parent == Activity::Inactive {
            return Activity::Inactive;
        }
        let branch = match (top.taken, c) {
            (Tri::Yes, _) | (_, Tri::No) => Tri::No,
            (Tri::No, Tri::Yes) => Tri::Yes,
            _ => Tri::Maybe,
        };
        if c == Tri::Maybe {
            top.undecided = true;
        }
        top.taken = top.taken.or(c);
        match branch {
            Tri::No => Activity::Inactive,
            Tri::Yes => top.parent,
            Tri::Maybe => Activity::Uncertain,
        }
    }

    fn condition(
        &mut self,
        word: &str,
        rest: &str,
        from: &Path,
        blanks: &mut FileBlanks,
        line: u32,
    ) -> Tri {
        let r = match word {
            "ifdef" | "ifndef" | "def" | "ndef" => {
                let n = first_word(rest).unwrap_or("");
                let known = match self.macros.state(n) {
                    Some(s) => Ok(s.is_some()),
                    None if self.macros.is_unknown(n) || self.unknown(n) => Err(Undecided(
                        format!("`{n}` may be defined by a header racelens did not read"),
                    )),
                    None => Ok(false),
                };
                known.map(|d| d == (word == "ifdef" || word == "def"))
            }
            _ => {
                let (missing, system) = (self.missing_quoted, self.saw_system);
                let unknown_now = |n: &str| unread(missing, system, n);
                let sources = &mut *self.sources;
                expr::eval(rest, &self.macros, &unknown_now, &mut |spec, quoted| {
                    if quoted || !spec.is_empty() {
                        let found = sources.find(spec, quoted, from).is_some();
                        // An angled header may be a system header: only
                        // a workspace hit decides.
                        if found {
                            Some(true)
                        } else if quoted {
                            Some(false)
                        } else {
                            None
                        }
                    } else {
                        None
                    }
                })
            }
        };
        match r {
            Ok(true) => Tri::Yes,
            Ok(false) => Tri::No,
            Err(Undecided(why)) => {
                if blanks.first_undecided.is_none() {
                    blanks.first_undecided = Some((line, why));
                }
                Tri::Maybe
            }
        }
    }

    /// `#define`, `#undef`, `#include`, `#pragma once` in compiled code.
    fn other(&mut self, word: &str, rest: &str, path: &Path, act: Activity, depth: u32) {
        match word {
            "define" => {
                if act == Activity::Active {
                    self.macros.define_text(rest);
                } else if let Some(n) = first_word(rest) {
                    self.macros.forget(n);
                }
            }
            "undef" => {
                if let Some(n) = first_word(rest) {
                    if act == Activity::Active {
                        self.macros.undef(n);
                    } else {
                        self.macros.forget(n);
                    }
                }
            }
            "pragma" if rest.trim() == "once" => {
                self.once.insert(path.to_path_buf());
            }
            "include" | "include_next" | "import" => {
                let spec = rest.trim();
                let (name, quoted) = if let Some(q) =
                    spec.strip_prefix('"').and_then(|s| s.split('"').next())
                {
                    (q, true)
                } else if let Some(a) = spec.strip_prefix('<').and_then(|s| s.split('>').next()) {
                    (a, false)
                } else {
                    // A computed include: whatever it defines is unknown.
                    self.missing_quoted = true;
                    return;
                };
                match self.sources.find(name, quoted, path) {
                    Some((p, t)) => self.file(&p, &t, act, depth + 1),
                    None if quoted => {
                        self.missing_quoted = true;
                        if !self.out.missing.iter().any(|m| m == name) {
                            self.out.missing.push(name.to_string());
                        }
                    }
                    None => self.saw_system = true,
                }
            }
            _ => {}
        }
    }
}

/// May `name`, which nothing defined so far, be defined by a header racelens
/// did not read: after a missing quoted include, in the implementation's
/// namespace, or of a POSIX/glibc macro family after a system header?
fn unread(missing_quoted: bool, saw_system: bool, name: &str) -> bool {
    missing_quoted || name.starts_with('_') || (saw_system && system_family(name))
}

fn first_word(s: &str) -> Option<&str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty())
}

/// A directive's text after its name, with continuations joined and
/// comments removed.
fn logical(s: &str) -> String {
    let s = s.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                break;
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                match rest[b + 2..].find("*/") {
                    Some(e) => rest = &rest[b + 2 + e + 2..],
                    None => break,
                }
            }
            _ => {
                out.push_str(rest);
                break;
            }
        }
    }
    out
}

/// Macro names that POSIX and glibc headers define and that programs test
/// with `#if`/`#ifdef`: undecided once a system header was included.
fn system_family(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "PTHREAD_",
        "SO_",
        "O_",
        "EPOLL",
        "SIG",
        "SA_",
        "IPV6_",
        "IP_",
        "TCP_",
        "AF_",
        "PF_",
        "MSG_",
        "INT8_",
        "INT16_",
        "INT32_",
        "INT64_",
        "INTMAX_",
        "INTPTR_",
        "UINT",
        "SIZE_",
        "SSIZE_",
        "LONG_",
        "ULONG_",
        "LLONG_",
        "ULLONG_",
        "CHAR_",
        "SCHAR_",
        "UCHAR_",
        "SHRT_",
        "USHRT_",
        "INT_",
        "CLOCK_",
        "F_",
        "FD_",
        "MAP_",
        "PROT_",
        "S_I",
        "RLIMIT_",
        "SCHED_",
        "SEM_",
        "RTLD_",
        "TIOC",
        "FIO",
        "POLL",
        "SOCK_",
        "INADDR_",
        "NI_",
        "AI_",
        "EAI_",
        "SIOC",
        "IFF_",
        "MADV_",
        "_POSIX",
        "SEEK_",
        "EXIT_",
        "SOL_",
        "SHUT_",
        "LOG_",
        "ATOMIC_",
        "RUSAGE_",
        "TIMER_",
        "ITIMER_",
        "WCHAR_",
        "FLT_",
        "DBL_",
        "LDBL_",
        "HUGE_",
        "NAN",
        "INFINITY",
        "BYTE_ORDER",
        "LITTLE_ENDIAN",
        "BIG_ENDIAN",
        "PATH_MAX",
        "NAME_MAX",
        "HOST_NAME_MAX",
        "IOV_MAX",
        "PIPE_BUF",
        "BUFSIZ",
        "EOF",
        "FILENAME_MAX",
        "RAND_MAX",
        "NULL",
        "SOMAXCONN",
        "WNOHANG",
        "MSG",
        "IN6_",
        "IPPROTO_",
        "ETH_",
        "EV_",
        "NFDBITS",
        "FD_SETSIZE",
        "MB_LEN_MAX",
        "ENOTSUP",
        "EOPNOTSUPP",
    ];
    if PREFIXES.iter().any(|p| name.starts_with(p)) {
        return true;
    }
    // errno values: `E` and capitals, no underscore (EAGAIN, EWOULDBLOCK).
    name.len() > 2
        && name.len() <= 12
        && name.starts_with('E')
        && name
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// `text` with `blanks` replaced by spaces; newlines (and every offset)
/// are kept.
pub fn apply(text: &str, blanks: &[(u32, u32)]) -> String {
    crate::preproc::blank(text, blanks.iter().map(|&(s, e)| (s as usize, e as usize)))
}

#[cfg(test)]
mod tests;
