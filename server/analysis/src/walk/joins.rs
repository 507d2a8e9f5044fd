//! Joins: `pthread_join` (and the other join models) of a thread id
//! place ends the creation sites whose threads that place may hold — all
//! of a site's threads only where the join provably covers them (a loop
//! over the creating loop's range, every id place of a site with several,
//! or the one place while it holds the site's only running thread,
//! `State::tid_held`). A join that matches no site yet is kept pending
//! (`WalkData::pending_joins`) for a thread created later. A creation
//! that overwrites the one id place of a thread still running on its path
//! makes that earlier site's id escaped: no join of the place ends it.
//!
//! Owns no state of its own; reads the sites (a `read` of `sites_epoch`),
//! marks overwritten ones (`Site::tid_escaped`, an effect that bumps
//! `sites_epoch`) and changes the path's [`State`].

use super::frames::Frame;
use super::spawn::same_thread_id;
use super::state::State;
use super::Walker;
use crate::model::*;
use racelens_syntax::{Call, Expr, Name};

/// A constant loop range `START<END` as numbers.
fn const_range(b: &str) -> Option<(i64, i64)> {
    let (a, b) = b.split_once('<')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The indices of a constant strided range `START<END+=K` (at most 256).
fn strided_indices(b: &str) -> Option<Vec<i64>> {
    let (range, k) = b.split_once("+=")?;
    let (from, to) = const_range(range)?;
    let k: i64 = k.parse().ok()?;
    if k <= 0 || to - from > 256 * k {
        return None;
    }
    Some((from..to).step_by(k as usize).collect())
}

/// Do the joined index ranges of `site` cover `[from, to)`?
fn covered(joined: &[(u32, i64, i64)], site: u32, from: i64, to: i64) -> bool {
    let mut at = from;
    loop {
        if at >= to {
            return true;
        }
        match joined
            .iter()
            .filter(|j| j.0 == site && j.1 <= at && at < j.2)
            .map(|j| j.2)
            .max()
        {
            Some(next) => at = next,
            None => return false,
        }
    }
}

impl Walker<'_> {
    /// A creation (of `site`) that stores its thread id into the one cell
    /// `tids` where another creation, still running on this path (`active`,
    /// the path's running sites before it), stored its own
    /// (`pthread_create(&t, .., a, ..); pthread_create(&t, .., b, ..)`):
    /// that earlier thread's id is gone, and no later join of `t` joins it.
    /// Its site is marked as one whose id escaped (as when unknown code is
    /// handed the id), so the joins of its cells count for nothing.
    pub(super) fn overwrite_thread_ids(&mut self, tids: &[LocKey], active: &SiteSet, site: u32) {
        let [k] = tids else { return };
        if k.path.iter().any(|e| matches!(e, Elem::Index(_))) {
            return;
        }
        let hit: Vec<usize> = self
            .d
            .sites
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                *i as u32 != site
                    && !s.tid_escaped
                    && active.contains(*i as u32)
                    && !s.tid.is_empty()
                    && s.tid.iter().all(|t| same_thread_id(t, k))
            })
            .map(|(i, _)| i)
            .collect();
        self.escape_thread_ids(&hit);
    }

    /// Sites `hit` lose their thread ids for joining (`Site::tid_escaped`):
    /// an effect on the sites, which the walk reads through `sites_epoch`.
    pub(super) fn escape_thread_ids(&mut self, hit: &[usize]) {
        if hit.is_empty() {
            return;
        }
        self.effect();
        self.d.sites_epoch = self.d.epoch;
        for &i in hit {
            self.d.sites[i].tid_escaped = true;
        }
    }

    /// Call `c` joins the thread whose id is its argument `tid` (`all`:
    /// the model joins every thread, e.g. a pool's wait-all).
    pub(super) fn join_call(
        &mut self,
        fr: &Frame,
        c: &Call,
        tid: usize,
        all: bool,
        st: &mut State,
    ) {
        if let Some(e) = c.args.get(tid) {
            self.note_joined(fr, e, st);
            let keys: Vec<LocKey> = self.place(fr, e, 0);
            self.read(self.d.sites_epoch);
            if self.d.thread != 0
                && keys.len() == 1
                && self.d.main_tids.iter().any(|m| same_thread_id(m, &keys[0]))
            {
                st.main_ended = true;
            }
            // `pthread_join(t[2])` joins one of the threads a loop
            // created into `t[i]`, not all of them.
            let joins_all = all
                || !keys.is_empty()
                    && !keys
                        .iter()
                        .all(|k| k.path.iter().any(|e| matches!(e, Elem::Index(Some(_)))));
            let index: Option<i64> = {
                let ix: Vec<Option<i64>> = keys
                    .iter()
                    .map(|k| {
                        k.path.iter().rev().find_map(|e| match e {
                            Elem::Index(Some(i)) => Some(*i),
                            _ => None,
                        })
                    })
                    .collect();
                match ix.first() {
                    Some(&Some(i)) if ix.iter().all(|x| *x == Some(i)) => Some(i),
                    _ => None,
                }
            };
            // A join loop covers a creation loop when their ranges
            // match (or are not known): `i < 9` joins some of the
            // threads `i < 10` created. With constant ranges, the
            // joined indices add up (`t[0]`, then `1 <= i < 4`).
            let join_raw = self.frame_loop().cloned().flatten();
            let join_bound = join_raw.as_ref().map(|b| self.with_constant_params(fr, b));
            let end_cell = self
                .d
                .loops
                .last()
                .filter(|l| l.depth == self.d.stack.len())
                .and_then(|l| l.end.clone());
            let mut matching: Vec<u32> = Vec::new();
            for (i, s) in self.d.sites.iter().enumerate() {
                let i = i as u32;
                if s.tid_escaped
                    || !s
                        .tid
                        .iter()
                        .any(|t| keys.iter().any(|k| same_thread_id(k, t)))
                {
                    continue;
                }
                if s.tid.len() > 1 {
                    // One site, several thread ids: joined once each is joined.
                    for (n, t) in s.tid.iter().enumerate() {
                        let n = n as u32;
                        if keys.iter().any(|k| same_thread_id(k, t))
                            && !st.joined_tids.contains(&(i, n))
                        {
                            st.joined_tids.push((i, n));
                            st.joined_tids.sort();
                        }
                    }
                    let all = (0..s.tid.len() as u32).all(|n| st.joined_tids.contains(&(i, n)));
                    if !all {
                        continue;
                    }
                }
                // A site that one id place serves for several
                // threads (a wrapper that creates into its own
                // object, called twice: `t->handle` of one heap
                // site) is joined through that place only where it
                // holds the one thread that may run (`tid_held`
                // below), as a loop's site is.
                let several =
                    s.tid.len() == 1 && (s.visits > 1 || self.d.replayed_sites.contains(&i));
                if (!s.in_loop && !several) || all {
                    matching.push(i);
                    continue;
                }
                // One id place, holding the id of the site's only
                // thread that may run (see `State::tid_held`): a
                // round that creates and joins it (`for (;;) {
                // create(&t); ..; join(t); }`).
                let scalar = |k: &LocKey| !k.path.iter().any(|e| matches!(e, Elem::Index(_)));
                if s.tid.len() == 1
                    && keys.len() == 1
                    && scalar(&keys[0])
                    && st.tid_held.contains(i)
                {
                    matching.push(i);
                    continue;
                }
                let site_bound = s.const_bound.as_ref().or(s.loop_bound.as_ref());
                let created = site_bound.and_then(|b| const_range(b));
                // A strided join loop joins its indices one by one;
                // two loops together may cover a constant range.
                if let (true, Some(j)) = (joins_all, &join_bound) {
                    if j.contains("+=") {
                        let (Some(ixs), Some((from, to))) = (strided_indices(j), created) else {
                            continue;
                        };
                        for x in ixs {
                            if !st.joined_ix.contains(&(i, x, x + 1)) {
                                st.joined_ix.push((i, x, x + 1));
                            }
                        }
                        st.joined_ix.sort();
                        if covered(&st.joined_ix, i, from, to) {
                            matching.push(i);
                        }
                        continue;
                    }
                }
                let part = match (joins_all, &join_bound) {
                    // A join in a loop whose range is not known (a
                    // stride, an early exit, a changed counter) may
                    // skip threads: it joins none for sure.
                    (true, None) if !all && self.frame_loop().is_some() => continue,
                    // Outside a loop, a join of a loop's one id place
                    // joins the last thread stored there (`for (..)
                    // create(&t); join(t);`), not the site; the case
                    // where it is the only one that may run was taken
                    // above (`tid_held`). (A join of `t[k]` for some
                    // `k` still ends the site: `t[n - 1]` after a
                    // join loop over the others.)
                    (true, None)
                        if !all
                            && keys
                                .iter()
                                .all(|k| !k.path.iter().any(|e| matches!(e, Elem::Index(_)))) =>
                    {
                        continue
                    }
                    (true, None) => None,
                    (true, Some(j))
                        if join_raw.as_ref() == s.loop_bound.as_ref() || Some(j) == site_bound =>
                    {
                        None
                    }
                    // Up to a cell that counts the site's threads.
                    (true, Some(_))
                        if end_cell
                            .as_ref()
                            .is_some_and(|k| st.counts.contains(&(k.clone(), i))) =>
                    {
                        None
                    }
                    (true, Some(j)) => match const_range(j) {
                        Some(r) => Some(r),
                        None if s.loop_bound.is_none() => None,
                        None => continue,
                    },
                    (false, _) => match index {
                        Some(k) => Some((k, k + 1)),
                        None => continue,
                    },
                };
                match (part, created) {
                    (None, _) if joins_all => matching.push(i),
                    // The creation loop's range is not known: a join
                    // loop is taken to join all its threads.
                    (Some(_), None) if joins_all && s.loop_bound.is_none() => matching.push(i),
                    (Some((a, b)), Some((from, to))) => {
                        if !st.joined_ix.contains(&(i, a, b)) {
                            st.joined_ix.push((i, a, b));
                            st.joined_ix.sort();
                        }
                        if covered(&st.joined_ix, i, from, to) {
                            matching.push(i);
                        }
                    }
                    _ => {}
                }
            }
            if matching.is_empty()
                && keys.len() == 1
                && matches!(keys[0].base, Base::Global(_) | Base::Heap { .. })
            {
                self.effect();
                self.d.pending_join_fns.insert(fr.fid);
                let pending = (self.d.thread, keys[0].clone(), st.clean.to_vec());
                if !self.d.pending_joins.contains(&pending) {
                    self.d.pending_joins.push(pending);
                }
            }
            for s in matching {
                self.join_site(st, s);
            }
        }
    }
}

impl<'a> Walker<'a> {
    /// The loop range `b` (`0<n`) with a parameter of `fr`'s function that
    /// every call in the program passes as the same integer constant
    /// replaced by it (`wait_all(t, N)` for `wait_all(pthread_t *t, int n)`
    /// joins over `0<4`), so that a join helper's loop can cover the
    /// caller's creation loop. The parameter must never be assigned nor
    /// have its address taken. Its name joins `WalkData::text_names`: an
    /// edit of a caller may change the constant. A creation loop's range
    /// is read so too, so that the two stay comparable.
    pub(super) fn with_constant_params(&mut self, fr: &Frame, b: &Name) -> Name {
        let Some((lo, hi)) = b.split_once('<') else {
            return b.clone();
        };
        let (end, step) = match hi.split_once("+=") {
            Some((e, k)) => (e, Some(k)),
            None => (hi, None),
        };
        let ir = &fr.summary.ir;
        // The parameters never assigned, whose address is never taken.
        let fixed = self.own_vars_of(fr);
        let mut subst = |t: &str| -> String {
            let Some(k) = ir.params.iter().position(|p| &*p.name == t) else {
                return t.to_string();
            };
            let fname = fr.fname.clone();
            if fixed.fixed_param(k).is_none_or(|p| &**p != t)
                || self
                    .prog
                    .functions_named(&fname)
                    .is_none_or(|fs| fs.len() != 1)
            {
                return t.to_string();
            }
            if !self.d.text_names.contains(&fname) {
                self.effect();
                self.d.text_names.push(fname.clone());
                self.d.text_names.sort();
            }
            let mut value: Option<i64> = None;
            let mut same = true;
            let calls = self.direct_calls_only(&fname, |_, c| {
                match (c.args.get(k).map(super::uncast), value) {
                    (Some(Expr::Int(v)), None) => value = Some(*v),
                    (Some(Expr::Int(v)), Some(w)) if *v == w => {}
                    _ => same = false,
                }
                true
            });
            match (calls, value) {
                (Some(n), Some(v)) if n > 0 && same && !self.prog.named_by_global_init(&fname) => {
                    v.to_string()
                }
                _ => t.to_string(),
            }
        };
        let lo = subst(lo);
        let end = subst(end);
        Name::from(match step {
            Some(k) => format!("{lo}<{end}+={k}"),
            None => format!("{lo}<{end}"),
        })
    }
}
