//! Members that share one memory location (C11 3.14): the members of a
//! union (also of an anonymous union member, C11 6.7.2.1p13), and a run of
//! adjacent bit-fields. Writing `f.a` of `struct { unsigned a : 1, b : 1; }
//! f` rewrites the unit that holds `f.b` as well, and `u.i` and `u.f` of a
//! union are one object, so each pair conflicts although the member names
//! differ.
//!
//! The walk keeps member names as written everywhere (the pointer store,
//! locks, flags: a union's pointer member is found under the name it was
//! stored by). Only the location an access is *recorded* at is rewritten
//! ([`Walker::shared_locations`]): a union member's step is dropped, so
//! the access is one of the union object (which overlaps every member and
//! everything below them, `races` comparing paths by prefix), and a
//! grouped member's step (a bit-field, a member of an anonymous union
//! member) names its group (`f.a/b`).
//!
//! Invariants: only the trailing member and element steps that the
//! accessed expression itself spells (`x.u.i`, `p->flags.a`, `a[k].u.i`)
//! are rewritten, and only where the key's path has those very steps; a
//! key reached otherwise is left as it is.

use super::frames::Frame;
use super::Walker;
use crate::model::{Elem, LocKey};
use racelens_syntax::{Expr, Name};

/// One trailing step of an accessed expression, last step first.
enum Step {
    /// A member of its own, or an element.
    Keep,
    /// A union's member: dropped.
    Union(Name),
    /// A member of a group (bit-field run, anonymous union): renamed to the
    /// group.
    Run(Name, Name),
}

impl Walker<'_> {
    /// `keys`, the locations `place` designates, with shared members
    /// rewritten (module doc).
    pub(super) fn shared_locations(
        &self,
        fr: &Frame,
        place: &Expr,
        keys: Vec<LocKey>,
    ) -> Vec<LocKey> {
        if self.prog.shared_members.is_empty() {
            return keys;
        }
        let mut steps = Vec::new();
        let mut e = place;
        let mut any = false;
        for _ in 0..16 {
            match e {
                Expr::Field { base, field, arrow } => {
                    let shared = self
                        .type_of(fr, base, 0)
                        .and_then(|t| t.name)
                        .and_then(|s| self.prog.shared_member(&s, field).cloned());
                    any |= shared.is_some();
                    steps.push(match shared {
                        Some(None) => Step::Union(field.clone()),
                        Some(Some(run)) => Step::Run(field.clone(), run),
                        None => Step::Keep,
                    });
                    if *arrow {
                        break;
                    }
                    e = base;
                }
                Expr::Index { base, .. } if self.is_array(fr, base) => {
                    steps.push(Step::Keep);
                    e = base;
                }
                Expr::Cast { value, .. } => e = value,
                _ => break,
            }
        }
        if !any {
            return keys;
        }
        keys.into_iter().map(|k| rewrite(k, &steps)).collect()
    }
}

/// `k` with the steps rewritten, if its path ends with them.
fn rewrite(k: LocKey, steps: &[Step]) -> LocKey {
    let n = k.path.len();
    if n < steps.len() {
        return k;
    }
    let tail = &k.path[n - steps.len()..];
    let matches = steps
        .iter()
        .zip(tail.iter().rev())
        .all(|(s, e)| match (s, e) {
            (Step::Union(f) | Step::Run(f, _), Elem::Field(g)) => f == g,
            (Step::Keep, _) => true,
            _ => false,
        });
    if !matches {
        return k;
    }
    let mut out = LocKey {
        base: k.base.clone(),
        path: k.path[..n - steps.len()].to_vec(),
    };
    for (s, e) in steps.iter().rev().zip(tail) {
        match s {
            Step::Keep => out.path.push(e.clone()),
            Step::Union(_) => {}
            Step::Run(_, run) => out.path.push(Elem::Field(run.clone())),
        }
    }
    out
}
