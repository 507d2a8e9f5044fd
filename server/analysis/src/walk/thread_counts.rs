//! Cells that count the threads a creation loop has created, so that a join
//! loop up to such a cell joins every one of them.
//!
//! A thread pool often keeps how many workers it started and joins that
//! many when it is torn down, also on the error path of its own creation
//! loop:
//!
//! ```c
//! for (i = 0; i < n; i++)
//!     if (pthread_create(&p->threads[i], 0, worker, p)) {
//!         p->count = i;      /* threads 0 .. i-1 exist */
//!         pool_free(p);      /* for (j = 0; j < p->count; j++) join(p->threads[j]) */
//!         return NULL;
//!     }
//! p->count = n;
//! ```
//!
//! A cell *counts* site `s` (`State::counts`) after it is assigned
//! - the creation loop's counter, in the branch where this round's creation
//!   failed (`if (pthread_create(..))` tested directly): the threads of the
//!   earlier rounds, indices `0 .. i`, are all there are;
//! - the end of the creation loop's range (`0<n`), after the loop;
//! - before the loop, the local or parameter `n` the loop runs to
//!   (`p->n = n; for (i = 0; i < n; i++) create(..)`), when the loop's body
//!   does not assign `n`: the cell and `n` are kept together
//!   (`State::count_vars`) until either changes, and the creation turns
//!   the pair into a count of its site.
//!
//! Both need the creation loop to start at zero and step by one (its range
//! in normal form). Any later assignment to the cell ends it. A join loop
//! whose range is `0<E`, with `E` that one cell, then joins all the
//! site's threads (`calls.rs`), as a loop with the creation loop's own
//! range does.
//!
//! Under-approximations (each may keep a joined thread live, a possible
//! false alarm, never a missed race): a result stored in a variable before
//! it is tested (`err = pthread_create(..); if (err)`), a count kept in a
//! variable other than the loop's counter, and writes to the cell by code
//! without a body are not followed; a write that may or may not hit the cell
//! ends it.

use super::frames::Frame;
use super::state::State;
use super::Walker;
use crate::model::LocKey;
use racelens_syntax::{Expr, Name, Stmt};

impl Walker<'_> {
    /// `lhs = rhs`: a cell that counted threads no longer does, and it may
    /// start to (see the module doc).
    pub(super) fn note_count(&mut self, fr: &Frame, lhs: &Expr, rhs: &Expr, st: &mut State) {
        // A local that changes no longer says what a cell holds.
        if let Expr::Var(x) = lhs {
            if !st.count_vars.is_empty() {
                st.count_vars.retain(|c| &c.1 != x);
            }
        }
        // `p->count = n;` before a creation loop over `0<n`.
        let before = match rhs {
            Expr::Var(v) if counts_before_loop(fr, v) => Some(v),
            _ => None,
        };
        // Most assignments neither end a count nor start one.
        let may_count = matches!(rhs, Expr::Var(_))
            && self
                .d
                .sites
                .iter()
                .any(|s| s.func == fr.fid && s.loop_bound.is_some());
        if st.counts.is_empty() && st.count_vars.is_empty() && !may_count && before.is_none() {
            return;
        }
        let keys = self.place(fr, lhs, 0);
        if !st.counts.is_empty() {
            st.counts.retain(|(k, _)| !keys.contains(k));
        }
        if !st.count_vars.is_empty() {
            st.count_vars.retain(|(k, _, _)| !keys.contains(k));
        }
        if let (Some(v), [key]) = (before, &keys[..]) {
            let depth = self.d.stack.len() as u32;
            if st.count_vars.len() < super::MAX_TRACKED {
                st.count_vars.push((key.clone(), v.clone(), depth));
                st.count_vars.sort();
            }
        }
        let (Expr::Var(v), [key]) = (rhs, &keys[..]) else {
            return;
        };
        let depth = self.d.stack.len();
        let mut found: Vec<u32> = Vec::new();
        for (i, s) in self.d.sites.iter().enumerate() {
            if s.func != fr.fid {
                continue;
            }
            let Some(b) = &s.loop_bound else { continue };
            let Some(end) = b.strip_prefix("0<") else {
                continue;
            };
            let mut open = self
                .d
                .loops
                .iter()
                .filter(|l| l.depth == depth && l.bound.as_ref() == Some(b));
            let counts = match open.next() {
                // Inside the creation loop: the counter, where this round's
                // creation failed.
                Some(l) => {
                    l.var.as_ref() == Some(v)
                        && st
                            .conds
                            .iter()
                            .any(|c| c.1 && c.0 == super::spawn::call_flag(s.call))
                }
                // After it: the end of its range.
                None => end == &**v,
            };
            if counts {
                found.push(i as u32);
            }
        }
        for s in found {
            if st.counts.len() < super::MAX_TRACKED && !st.counts.contains(&(key.clone(), s)) {
                st.counts.push((key.clone(), s));
            }
        }
        // Sorted, so that equal facts make equal states.
        st.counts.sort();
    }

    /// A creation at a site in a counting loop over `0<v` of this frame:
    /// the cells assigned `v` before (`State::count_vars`) count the
    /// site's threads from now on.
    pub(super) fn count_from_vars(&self, site: u32, st: &mut State) {
        let Some(Some(b)) = self.frame_loop() else {
            return;
        };
        let Some(v) = b.strip_prefix("0<") else {
            return;
        };
        let depth = self.d.stack.len() as u32;
        let mut added = false;
        for (k, x, d) in st.count_vars.clone().iter() {
            let c = (k.clone(), site);
            if *d == depth
                && &**x == v
                && !st.counts.contains(&c)
                && st.counts.len() < super::MAX_TRACKED
            {
                st.counts.push(c);
                added = true;
            }
        }
        if added {
            st.counts.sort();
        }
    }

    /// The one cell a counting loop's range `0<E` ends at (`i < p->count`,
    /// `i < count`), read in its condition `cond`.
    pub(super) fn loop_end_cell(
        &self,
        fr: &Frame,
        cond: &[Stmt],
        bound: Option<&Name>,
        var: Option<&Name>,
    ) -> Option<LocKey> {
        let (b, v) = (bound?, var?);
        let end = b.strip_prefix("0<")?;
        if end.parse::<i64>().is_ok() {
            return None;
        }
        let reads: Vec<&Expr> = cond
            .iter()
            .filter_map(|s| match s {
                Stmt::Access(a) => Some(&a.place),
                _ => None,
            })
            .collect();
        // A plain variable, or the one read that is not a plain variable
        // (`p->count` reads `p`, then `p->count`).
        let place = match reads
            .iter()
            .find(|p| matches!(p, Expr::Var(x) if **x == *end))
        {
            Some(p) => *p,
            None => {
                let _ = v;
                let mut deeper = reads.iter().filter(|p| !matches!(p, Expr::Var(_)));
                let p = deeper.next()?;
                if deeper.next().is_some() {
                    return None;
                }
                *p
            }
        };
        match &self.place(fr, place, 0)[..] {
            [k] => Some(k.clone()),
            _ => None,
        }
    }
}

/// Does a creation loop of `fr` run over `0<v`, for a local or parameter
/// `v` whose address is never taken and that the loop's body does not
/// assign (`p->count = n; for (i = 0; i < n; i++) create(..)`)?
fn counts_before_loop(fr: &Frame, v: &Name) -> bool {
    // Checked on every assignment of a plain variable: the function's
    // creation calls first, before any scan of its body.
    if fr.address_taken.contains(v)
        || !fr.locals.contains_key(v)
        || !fr
            .summary
            .models
            .values()
            .any(|m| matches!(m, crate::config::CallModel::Create { .. }))
    {
        return false;
    }
    let creates = |body: &[Stmt]| {
        let mut yes = false;
        crate::visit::visit_calls(body, &mut |c| {
            yes |= matches!(
                fr.summary.models.get(&c.id),
                Some(crate::config::CallModel::Create { .. })
            )
        });
        yes
    };
    let assigns = |body: &[Stmt]| {
        let mut yes = false;
        crate::visit::visit_stmts(body, &mut |s| {
            yes |= matches!(s, Stmt::Assign { lhs: Expr::Var(x), .. } if x == v);
        });
        yes
    };
    let mut found = false;
    crate::visit::visit_stmts(&fr.summary.ir.body, &mut |s| {
        if let Stmt::Loop {
            body,
            bound: Some(b),
            ..
        } = s
        {
            found |= b.strip_prefix("0<") == Some(&**v) && creates(body) && !assigns(body);
        }
    });
    found
}
