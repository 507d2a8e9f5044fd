//! Local cells: what a pointer local whose address is taken holds, read by
//! name or through that address, when it is the instance's own allocation.
//!
//! A parser keeps its cursor in a local and lends the cursor's address to
//! its helpers (`raw = unescape(q); cursor = raw; match(&cursor)` reading
//! `**cursor` and advancing `(*cursor)++`). Such a local is not tracked by
//! [`State::own`] (its address is taken), so what it points to used to be
//! no own object, and two instances' parses of their own copies met as one
//! object merged by allocation site.
//!
//! A *local cell* is a non-static, non-array pointer local of a function,
//! not a parameter (the caller's argument is no store the walk records),
//! whose address is taken. Reading it by name in its own frame, or through
//! a pointer that came from its address through locals and parameters only
//! ([`Own::Frame`], so the local lies on the reading instance's own stack),
//! gives an [`Own::Held`] pointer naming the cell ([`HeldChain::cells`],
//! named by [`cell_name`]: `&func:var`, which no member's name can be). It
//! holds where [`HeldMembers::holds`](crate::facts::HeldMembers::holds)
//! finds the cell clean:
//! - the local never escapes to another thread (`ThreadTable::
//!   escaped_locals`), so only its own instance writes it;
//! - every store into it, by name or through a pointer the walk resolves to
//!   it, stores an allocation of the storing instance's own, zero, a
//!   string, or the cell's own value moved along (`(*cursor)++`,
//!   `*cursor = end` with `end` loaded from `*cursor`) ([`HeldStore::Cell`]);
//!   anything else is [`HeldStore::Dirty`];
//! - no code without a body (a library call, an unresolved function
//!   pointer) is handed a pointer that may point to it (`memcpy(&p, ..)`,
//!   `getline(&p, ..)`), except the library functions that store there a
//!   pointer derived from another argument (`strtol(s, &end, 10)`,
//!   `strtok_r(s, d, &save)`, `strsep(&p, d)`), when that argument keeps
//!   the promise.
//!
//! Invariant: like the member records of `held.rs`, these are facts of the
//! nodes' own statements, so `held_members` derives the clean cells from
//! the reachable nodes, and the incremental update compares the result.
//!
//! Under-approximation (it may hide a race): a store through a pointer the
//! walk cannot resolve at all (`HeldStore::Elements`, a copy to unknown
//! memory) is not taken to hit a local cell; a pointer to the local that
//! reaches such a store came from memory, and the local then escapes
//! unless that memory is a frame's own.

use super::frames::{Frame, FrameBase};
use super::held::HeldStore;
use super::state::State;
use super::{uncast, Walker};
use crate::facts::{HeldChain, Own};
use crate::model::{Base, LocKey};
use racelens_syntax::{Call, Expr, Name};

/// The name of the cell of local `var` of function `func` in
/// [`HeldChain::cells`]: members are identifiers, so `&` starts no member.
pub(super) fn cell_name(func: &str, var: &str) -> Name {
    Name::from(format!("{}{func}:{var}", crate::facts::LOCAL_CELL))
}

/// Is `x` a local cell of the function `fb` describes?
fn is_cell(fb: &FrameBase, x: &Name) -> bool {
    fb.address_taken.contains(x)
        && fb
            .locals
            .get(x)
            .is_some_and(|t| !t.is_static && !t.array && t.pointer > 0)
        && !fb.summary.ir.params.iter().any(|p| &p.name == x)
}

/// A [`Own::Held`] pointer read from the cells `cells` (sorted).
fn held(cells: Vec<Name>) -> Own {
    Own::Held(HeldChain {
        cells: cells.into(),
        ..HeldChain::default()
    })
}

impl Walker<'_> {
    /// The local cell place `k` is, if it is one.
    fn cell_of_place(&self, k: &LocKey) -> Option<Name> {
        let Base::Local { func, var } = &k.base else {
            return None;
        };
        if !k.path.is_empty() {
            return None;
        }
        // A name two functions share (statics of two units) is not known.
        let fids = self.prog.functions_named(func)?;
        let [fid] = fids.as_slice() else {
            return None;
        };
        is_cell(&self.frame_base(*fid), var).then(|| cell_name(func, var))
    }

    /// The local cells place `e` is, when it is one or more of them and
    /// nothing else.
    fn cells_at(&self, fr: &Frame, e: &Expr) -> Option<Vec<Name>> {
        let places = self.place(fr, e, 0);
        if places.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for k in &places {
            let n = self.cell_of_place(k)?;
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out.sort();
        Some(out)
    }

    /// What pointer value `e` holds when it reads a local cell: by name in
    /// its frame (`cursor`), or through a pointer to the instance's own
    /// frame (`*pcursor`, `pcursor[0]`).
    pub(super) fn own_local_cell(
        &self,
        fr: &Frame,
        e: &Expr,
        own_base: &dyn Fn(&Expr) -> Option<Own>,
    ) -> Option<Own> {
        match e {
            Expr::Var(x) if is_cell(&fr.base, x) => Some(held(vec![cell_name(&fr.fname, x)])),
            Expr::Deref(b)
            | Expr::Index {
                base: b,
                index: Some(0),
                ..
            } if own_base(b) == Some(Own::Frame) => self.cells_at(fr, e).map(held),
            _ => None,
        }
    }

    /// Is `v` (the own kind of a value stored into cell `n`) one that
    /// keeps the cell's promise: an allocation of the instance's own, or
    /// the cell's own value moved along?
    fn keeps_cell(v: Option<&Own>, n: &Name) -> bool {
        match v {
            Some(Own::Alloc) => true,
            Some(Own::Held(c)) => {
                !c.arg
                    && c.from_arg.is_empty()
                    && c.from_alloc.is_empty()
                    && c.cells.iter().all(|m| m == n)
            }
            _ => false,
        }
    }

    /// The records of `lhs = rhs` for the local cells `lhs` may be (by
    /// name, or through a pointer the walk resolves), in state `st`.
    pub(super) fn local_cell_stores(
        &self,
        fr: &Frame,
        lhs: &Expr,
        rhs: &Expr,
        st: &State,
        out: &mut Vec<HeldStore>,
    ) {
        let cells = match lhs {
            Expr::Var(x) if is_cell(&fr.base, x) => vec![cell_name(&fr.fname, x)],
            Expr::Deref(_) | Expr::Index { .. } => {
                let places = self.place(fr, lhs, 0);
                let mut v: Vec<Name> = places
                    .iter()
                    .filter_map(|k| self.cell_of_place(k))
                    .collect();
                v.dedup();
                v
            }
            _ => return,
        };
        if cells.is_empty() {
            return;
        }
        let plain = matches!(uncast(rhs), Expr::Int(0) | Expr::Str);
        let v = if plain {
            None
        } else {
            self.own_value(fr, rhs, st)
        };
        for n in cells {
            out.push(if plain || Self::keeps_cell(v.as_ref(), &n) {
                HeldStore::Cell(n)
            } else {
                HeldStore::Dirty(n)
            });
        }
    }

    /// The records of call `c` (in state `st`) for the local cells code
    /// without a body is handed a pointer to: it may store anything there,
    /// unless it is a library function that stores a pointer derived from
    /// another argument (`strtol(s, &end, 10)`, `strsep(&p, ..)`, see
    /// `library::derived_out`), which keeps the cell's promise when that
    /// argument is the instance's own allocation or the cell's own value.
    pub(super) fn local_cell_call(
        &self,
        fr: &Frame,
        c: &Call,
        st: &State,
        out: &mut Vec<HeldStore>,
    ) {
        let bodiless = match fr.calls.get(&c.id) {
            Some(callee) => self.functions_of(fr, callee).is_empty(),
            None => true,
        };
        if !bodiless {
            return;
        }
        let derived = match &c.callee {
            racelens_syntax::Callee::Direct(n) => super::library::derived_out(n),
            _ => None,
        };
        if let Some((o, src)) = derived {
            let Some(a) = c.args.get(o) else {
                return;
            };
            // What the stored pointer is derived from: the source argument
            // (null: the cell itself), or the cell itself.
            let from = src
                .and_then(|i| c.args.get(i))
                .filter(|e| !matches!(uncast(e), Expr::Int(0)));
            let v = from.and_then(|e| self.own_value(fr, e, st));
            for k in self.place(fr, &Expr::Deref(Box::new(uncast(a).clone())), 0) {
                if let Some(n) = self.cell_of_place(&k) {
                    let keeps = match from {
                        None => true,
                        Some(_) => Self::keeps_cell(v.as_ref(), &n),
                    };
                    out.push(match keeps {
                        true => HeldStore::Cell(n),
                        false => HeldStore::Dirty(n),
                    });
                }
            }
            return;
        }
        for a in &c.args {
            let a = uncast(a);
            if !matches!(a, Expr::AddrOf(_) | Expr::Var(_) | Expr::Offset(_)) {
                continue;
            }
            for k in self.place(fr, &Expr::Deref(Box::new(a.clone())), 0) {
                if let Some(n) = self.cell_of_place(&k) {
                    out.push(HeldStore::Dirty(n));
                }
            }
        }
    }

    /// The walk meets `x = rhs` for a local `x` whose address is taken.
    pub(super) fn note_local_cell(&mut self, fr: &Frame, x: &Name, rhs: &Expr, st: &State) {
        let mut out = Vec::new();
        self.local_cell_stores(fr, &Expr::Var(x.clone()), rhs, st, &mut out);
        for s in out {
            self.note_held(s);
        }
    }
}
