//! Abstract memory locations, locks and thread sets shared by the analyses.
//!
//! A location is a base (global, static local, local of a frame, heap
//! allocation site, or a struct type when the pointer cannot be resolved)
//! plus a field/index path. Locks are identified by the location of the lock
//! object, so `&q->lock` over the same `q` as `q->count` is recognised.

use racelens_syntax::{Name, TypeInfo};
use std::fmt;
use thin_vec::ThinVec;

/// The name prefix of the local that stands for an `alloca` call's block
/// (`#alloca3` for call 3 of its function): a name no C local can have.
pub const ALLOCA_BLOCK: &str = "#alloca";

/// The base object of a location.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Base {
    /// A global variable, or a static local named `func::var`.
    Global(Name),
    /// A local variable (or parameter) of a function frame.
    Local { func: Name, var: Name },
    /// Memory from the allocation call `call` in `func`.
    Heap { func: Name, call: u32 },
    /// Some object of this struct type, reached through an unresolved pointer.
    Type(Name),
    /// A synthetic lock (for example the one guarding a `pthread_once` body).
    Synthetic(Name),
    /// Memory behind a wild pointer: an uninitialized pointer or a non-zero
    /// integer used as an address. It may be any object; wild accesses of
    /// two threads may meet.
    Unknown,
}

/// One step of a path below a base.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Elem {
    Field(Name),
    /// A constant index, or `None` for any index.
    Index(Option<i64>),
}

/// An abstract memory location.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocKey {
    pub base: Base,
    pub path: Vec<Elem>,
}

/// The C name of a global or function. A unit's static whose name another
/// unit of the program also defines is keyed `name@unit-path`
/// (`db::static_renames`); users see `name`.
pub fn c_name(n: &str) -> &str {
    n.split('@').next().unwrap_or(n)
}

impl LocKey {
    pub fn new(base: Base) -> Self {
        LocKey {
            base,
            path: Vec::new(),
        }
    }

    pub fn with(&self, e: Elem) -> Self {
        let mut k = self.clone();
        if k.path.len() < 8 {
            k.path.push(e);
        }
        k
    }

    /// True when the base may stand for several run-time objects.
    pub fn is_weak(&self) -> bool {
        matches!(self.base, Base::Type(_) | Base::Heap { .. } | Base::Unknown)
    }

    /// A lock key that may stand for several lock objects.
    pub fn is_weak_lock(&self) -> bool {
        matches!(self.base, Base::Type(_) | Base::Unknown)
            || self.path.iter().any(|e| matches!(e, Elem::Index(None)))
    }

    /// The location with all indices forgotten (for points-to storage).
    pub fn without_indices(&self) -> LocKey {
        LocKey {
            base: self.base.clone(),
            path: self
                .path
                .iter()
                .filter(|e| matches!(e, Elem::Field(_)))
                .cloned()
                .collect(),
        }
    }

    /// May the two locations overlap? Distinct fields or distinct constant
    /// indices do not; a prefix (the whole struct) overlaps its parts.
    pub fn may_overlap(&self, other: &LocKey) -> bool {
        if self.base != other.base {
            return false;
        }
        for (a, b) in self.path.iter().zip(&other.path) {
            match (a, b) {
                (Elem::Field(x), Elem::Field(y)) if x != y => return false,
                (Elem::Index(Some(i)), Elem::Index(Some(j))) if i != j => return false,
                _ => {}
            }
        }
        true
    }

    /// Do the two locations certainly denote the same object?
    pub fn must_overlap(&self, other: &LocKey) -> bool {
        self == other && !self.path.iter().any(|e| matches!(e, Elem::Index(None)))
    }

    /// Whose variable it is, when its name alone does not say: "local of
    /// `main`" for a local of a frame, "static local of `f`" for a
    /// function's static; `None` for globals and other objects.
    pub fn owner(&self) -> Option<String> {
        match &self.base {
            Base::Local { func, var } if !var.starts_with(ALLOCA_BLOCK) => {
                Some(format!("local of `{}`", c_name(func)))
            }
            Base::Global(n) => c_name(n)
                .rsplit_once("::")
                .map(|(f, _)| format!("static local of `{f}`")),
            _ => None,
        }
    }

    /// The variable name users see: `counter`, `q->count`, `arr[2]`.
    pub fn display(&self) -> String {
        let mut s = match &self.base {
            Base::Global(n) => {
                let n = c_name(n);
                n.rsplit("::").next().unwrap_or(n).to_string()
            }
            Base::Local { func, var } if var.starts_with(ALLOCA_BLOCK) => {
                format!("(stack block from alloca in {func})")
            }
            Base::Local { var, .. } => var.to_string(),
            Base::Heap { func, .. } => format!("(heap object allocated in {func})"),
            // A type-based location: any object of that type that an
            // unresolved pointer may reach. Scalars are not structs.
            Base::Type(t)
                if t.split_whitespace().filter(|w| *w != "*").all(|w| {
                    matches!(
                        w,
                        "int"
                            | "long"
                            | "short"
                            | "char"
                            | "signed"
                            | "unsigned"
                            | "float"
                            | "double"
                            | "_Bool"
                            | "bool"
                            | "void"
                    )
                }) =>
            {
                format!("(some {t} behind an unresolved pointer)")
            }
            Base::Type(t) => format!("(struct {t})"),
            Base::Synthetic(n) => n.to_string(),
            Base::Unknown => "(memory behind a wild pointer)".to_string(),
        };
        for e in &self.path {
            match e {
                Elem::Field(f) => {
                    s.push('.');
                    s.push_str(f);
                }
                Elem::Index(Some(i)) => s.push_str(&format!("[{i}]")),
                Elem::Index(None) => s.push_str("[*]"),
            }
        }
        s
    }
}

impl fmt::Display for LocKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// A held lock and whether it is held only for reading.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Held {
    pub lock: LocKey,
    pub shared: bool,
}

/// A sorted set of held locks.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LockSet(pub ThinVec<Held>);

impl LockSet {
    pub fn insert(&mut self, h: Held) {
        if let Some(i) = self.0.iter().position(|x| x.lock == h.lock) {
            // Write mode wins over read mode.
            self.0[i].shared &= h.shared;
            return;
        }
        let pos = self.0.binary_search(&h).unwrap_or_else(|p| p);
        self.0.insert(pos, h);
    }

    pub fn remove(&mut self, lock: &LocKey) {
        self.0.retain(|h| &h.lock != lock);
    }

    /// Releases every held lock `lock` may denote (`m[*]` may be `m[4]`).
    pub fn remove_overlapping(&mut self, lock: &LocKey) {
        self.0.retain(|h| !h.lock.may_overlap(lock));
    }

    pub fn intersect(&self, other: &LockSet) -> LockSet {
        LockSet(
            self.0
                .iter()
                .filter_map(|h| {
                    other.0.iter().find(|o| o.lock == h.lock).map(|o| Held {
                        lock: h.lock.clone(),
                        shared: h.shared || o.shared,
                    })
                })
                .collect(),
        )
    }

    pub fn union(&self, other: &LockSet) -> LockSet {
        let mut r = self.clone();
        for h in &other.0 {
            r.insert(h.clone());
        }
        r
    }

    /// Is there a lock that excludes the two holders from each other (held
    /// by both, in write mode by at least one)?
    pub fn excludes(&self, other: &LockSet) -> bool {
        self.0.iter().any(|h| {
            other
                .0
                .iter()
                .any(|o| o.lock == h.lock && !(o.shared && h.shared))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|h| !matches!(&h.lock.base, Base::Synthetic(n) if n.starts_with("once-done:")))
            .map(|h| {
                if h.shared {
                    format!("{} (read)", h.lock)
                } else {
                    h.lock.display()
                }
            })
            .collect()
    }
}

/// A small sorted set of spawn-site indices.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SiteSet(pub ThinVec<u32>);

impl SiteSet {
    pub fn insert(&mut self, s: u32) {
        if let Err(p) = self.0.binary_search(&s) {
            self.0.insert(p, s);
        }
    }
    pub fn remove(&mut self, s: u32) {
        self.0.retain(|x| *x != s);
    }
    pub fn contains(&self, s: u32) -> bool {
        self.0.binary_search(&s).is_ok()
    }
    pub fn union(&self, o: &SiteSet) -> SiteSet {
        let mut r = self.clone();
        for s in &o.0 {
            r.insert(*s);
        }
        r
    }
    pub fn intersect(&self, o: &SiteSet) -> SiteSet {
        SiteSet(self.0.iter().copied().filter(|s| o.contains(*s)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(n: &str) -> LocKey {
        LocKey::new(Base::Global(n.into()))
    }

    #[test]
    fn overlap_is_field_and_index_sensitive() {
        let s = g("s");
        assert!(!s
            .with(Elem::Field("a".into()))
            .may_overlap(&s.with(Elem::Field("b".into()))));
        assert!(s.may_overlap(&s.with(Elem::Field("b".into()))));
        assert!(!s
            .with(Elem::Index(Some(1)))
            .may_overlap(&s.with(Elem::Index(Some(2)))));
        assert!(s
            .with(Elem::Index(None))
            .may_overlap(&s.with(Elem::Index(Some(2)))));
    }

    #[test]
    fn read_locks_do_not_exclude_readers() {
        let r = LockSet(thin_vec::thin_vec![Held {
            lock: g("rw"),
            shared: true,
        }]);
        let w = LockSet(thin_vec::thin_vec![Held {
            lock: g("rw"),
            shared: false,
        }]);
        assert!(!r.excludes(&r));
        assert!(r.excludes(&w));
    }
}

/// Integer type names (the `__atomic` builtins accept these).
const INTEGER_WORDS: &[&str] = &["int", "long", "short", "char", "unsigned", "signed"];
const INTEGER_TYPEDEFS: &[&str] = &[
    "size_t",
    "ssize_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "sig_atomic_t",
    "off_t",
    "pid_t",
    "time_t",
];

/// Is the type a plain integer (or `bool`, `Some(true)`)?
pub fn integer_kind(ty: &TypeInfo) -> Option<bool> {
    if ty.pointer > 0 || ty.array || ty.atomic {
        return None;
    }
    let name = ty.name.as_deref()?;
    if matches!(name, "bool" | "_Bool") {
        return Some(true);
    }
    let words: Vec<&str> = name.split_whitespace().collect();
    let ok = INTEGER_TYPEDEFS.contains(&name)
        || (!words.is_empty() && words.iter().all(|w| INTEGER_WORDS.contains(w)));
    ok.then_some(false)
}
