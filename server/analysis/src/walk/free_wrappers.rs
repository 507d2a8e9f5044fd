//! Free wrappers and allocator bookkeeping: the functions that give memory
//! back to an allocator (`kfree(km, p)`: `free(p)` without an arena, else
//! `p` linked into the arena's free list), and the stores an allocator
//! makes into its own pool. Only a free wrapper that links what it frees
//! into memory is a pool's (a destructor that frees its object is not),
//! and the blocks such functions reach through pointers loaded from memory
//! or past an offset are not recorded (`pool_block_access`).
//!
//! A block on a pool's free list is dead: the program reaches it again only
//! through the pool's allocator, whose every call is a new object
//! (`alloc_wrappers.rs`). So the pointers an allocator or a free wrapper
//! stores into memory reached from its parameters and locals (`q->ptr =
//! p`, `km->loop_head = q`) publish nothing (`private.rs`); before, every
//! block ever freed into one arena was one list, and a worker's per-call
//! arrays were published with the arena of the thread buffer holding it.
//!
//! Owns `WalkData::free_params` and `allocator_internal` (dropped with the
//! allocation-wrapper verdicts, see `incremental.rs`).
//!
//! Invariants: the answers are syntactic (a function's body and the
//! wrappers it calls, at most `MAX_WRAPPER_NESTING` deep), cached per
//! function (and level), and independent of the order of the questions.
//! A function that stores what it frees anywhere but memory reached from
//! its own parameters and locals, returns it, hands it to code that may
//! keep it, or starts threads, is no free wrapper (a `finish(job)` that
//! frees a job or queues it for another thread).

use super::alloc_wrappers::{
    holds_value, local_names, param_holders, root_var, WrapperKind, MAX_WRAPPER_NESTING,
};
use super::frames::Frame;
use super::Walker;
use crate::config::CallModel;
use crate::db::FunctionId;
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{Callee, Expr, Stmt};

/// Whether a function's stores are allocator bookkeeping
/// ([`Walker::allocator_internal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bookkeeping {
    Yes,
    /// No, and its own body decides that (apart from the allocation-wrapper
    /// verdicts, which an update checks on their own).
    No,
    /// No, because it frees none of its parameters, which may read its
    /// callees' bodies.
    NotFreeing,
}

/// Library functions that free their argument.
const FREES: &[&str] = &["free", "cfree", "g_free", "xfree"];

impl<'a> Walker<'a> {
    /// The parameters `f` frees (a bit per index, the first 32), looking at
    /// most `MAX_WRAPPER_NESTING - level` free wrappers deep: each is
    /// handed to `free` (or `realloc`, or a free wrapper at its position)
    /// on some path, and otherwise kept only in memory reached from `f`'s
    /// parameters and locals.
    pub(super) fn free_params_at(&self, f: FunctionId, level: u8) -> u32 {
        if let Some(&m) = self.d.free_params.borrow().get(&(f, level)) {
            return m;
        }
        let s = self.summary(f);
        let mut mask = 0u32;
        let creates = s
            .models
            .values()
            .any(|m| matches!(m, CallModel::Create { .. } | CallModel::Once { .. }));
        let locals = local_names(&s);
        for (i, p) in s.ir.params.iter().enumerate().take(32) {
            if creates || s.ir.address_taken.contains(&p.name) {
                break;
            }
            // The locals that hold the parameter's value (`p = (header_t *)
            // ((size_t *) ap - 1)`).
            let held = param_holders(&s, &p.name);
            let holds = |e: &Expr| held.iter().any(|x| holds_value(e, x));
            let mut kept = false;
            visit_stmts(&s.ir.body, &mut |st| match st {
                Stmt::Assign { lhs, rhs } if holds(rhs) => {
                    kept |= !root_var(lhs).is_some_and(|y| locals.contains(y));
                }
                Stmt::Return { value: Some(e), .. } if holds(e) => kept = true,
                _ => {}
            });
            let mut frees = false;
            visit_calls(&s.ir.body, &mut |c| {
                for (j, a) in c.args.iter().enumerate() {
                    if kept || !holds(a) {
                        continue;
                    }
                    let freeing = match s.models.get(&c.id) {
                        Some(CallModel::Free | CallModel::Realloc) => true,
                        // The C library's `free` (its model is a write of
                        // the object) and its common spellings.
                        Some(CallModel::Mem { .. }) => {
                            matches!(&c.callee, Callee::Direct(n) if FREES.contains(&&**n))
                        }
                        Some(_) => false,
                        None => match &c.callee {
                            Callee::Direct(n) if level < MAX_WRAPPER_NESTING && j < 32 => self
                                .prog
                                .functions_named(n)
                                .filter(|defs| defs.len() == 1 && defs[0] != f)
                                .is_some_and(|defs| {
                                    self.free_params_at(defs[0], level + 1) & (1 << j) != 0
                                }),
                            _ => false,
                        },
                    };
                    match freeing {
                        true => frees = true,
                        false => kept |= self.call_keeps(&s, c, j, level),
                    }
                }
            });
            if frees && !kept {
                mask |= 1 << i;
            }
        }
        self.d.free_params.borrow_mut().insert((f, level), mask);
        mask
    }

    /// Are `f`'s stores an allocator's bookkeeping: is `f` a pool allocator
    /// (not a plain allocation wrapper, whose stores may fill the new
    /// object) or a free wrapper that returns nothing and links what it
    /// frees into memory, and that stores only into its own locals and
    /// memory reached from its parameters and locals (a pool's free list)?
    /// Such stores publish nothing (see the module doc).
    pub(super) fn allocator_internal(&self, f: FunctionId) -> bool {
        if let Some(&v) = self.d.allocator_internal.borrow().get(&f) {
            return v == Bookkeeping::Yes;
        }
        let v = self.bookkeeping(f);
        if super::private::debug() && v == Bookkeeping::Yes {
            eprintln!("racelens: {} is allocator bookkeeping", f.name(self.db));
        }
        self.d.allocator_internal.borrow_mut().insert(f, v);
        v == Bookkeeping::Yes
    }

    /// [`allocator_internal`](Self::allocator_internal)'s answer, and
    /// whether it depends on other functions' bodies.
    pub(super) fn bookkeeping(&self, f: FunctionId) -> Bookkeeping {
        let s = self.summary(f);
        // Stores only into its locals and what they reach: its own body
        // decides.
        let locals = local_names(&s);
        let mut own = true;
        visit_stmts(&s.ir.body, &mut |st| match st {
            // A name neither local nor global (a typo while typing)
            // stores nothing anywhere (as `incremental.rs` reads it).
            Stmt::Assign {
                lhs: Expr::Var(y), ..
            } if !locals.contains(y) && self.prog.global(y).is_none() => {}
            Stmt::Assign { lhs, .. } => {
                own &= root_var(lhs).is_some_and(|y| locals.contains(y));
            }
            _ => {}
        });
        if !own {
            return Bookkeeping::No;
        }
        // A pool (the allocation-wrapper verdicts are checked apart).
        if self.is_alloc_wrapper(f) && self.wrapper_kind(f, 0) == Some(WrapperKind::Pool) {
            return Bookkeeping::Yes;
        }
        // A free wrapper returns nothing: one that also computes a result
        // (`b = compact(km, a)`, freeing `a` on its way) may store it.
        let mut returns = false;
        visit_stmts(&s.ir.body, &mut |st| {
            returns |= matches!(st, Stmt::Return { value: Some(_), .. });
        });
        // Most functions hand nothing to a deallocator.
        let mut hands_off = false;
        visit_calls(&s.ir.body, &mut |c| {
            hands_off |= match s.models.get(&c.id) {
                Some(CallModel::Free | CallModel::Realloc) => true,
                Some(CallModel::Mem { .. }) => {
                    matches!(&c.callee, Callee::Direct(n) if FREES.contains(&&**n))
                }
                Some(_) => false,
                None => {
                    matches!(&c.callee, Callee::Direct(n) if self.prog.functions_named(n).is_some())
                }
            };
        });
        if returns || !hands_off {
            return Bookkeeping::No;
        }
        // Whether it frees may read its callees' bodies. A free wrapper is
        // a pool's only when it links what it frees into memory (`q->ptr =
        // p`, `km->loop_head = p`): a destructor that frees its object and
        // does other work is no allocator.
        let mask = self.free_params_at(f, 0);
        let links = s.ir.params.iter().enumerate().take(32).any(|(i, p)| {
            if mask & (1 << i) == 0 {
                return false;
            }
            let held = param_holders(&s, &p.name);
            let mut linked = false;
            visit_stmts(&s.ir.body, &mut |st| {
                if let Stmt::Assign { lhs, rhs } = st {
                    linked |=
                        !matches!(lhs, Expr::Var(_)) && held.iter().any(|x| holds_value(rhs, x));
                }
            });
            linked
        });
        match links {
            true => Bookkeeping::Yes,
            false => Bookkeeping::NotFreeing,
        }
    }

    /// Is `place`, accessed in function `f`, a block of an allocator's pool
    /// rather than the pool itself: `f` is allocator bookkeeping, and the
    /// place is reached through a pointer the function loaded from memory
    /// (`q = km->loop_head; q->ptr`) or computed past an offset (the size
    /// header before the caller's block, `(size_t *) ap - 1`)? Such a
    /// block is free or being handed out; two threads touch one only
    /// through one pool, whose own fields (`km->loop_head`, through a
    /// parameter, or a global's) are recorded and race then. The caller's object itself
    /// (`memcpy(q, ap, n)` reading `ap`) is recorded as well.
    pub(super) fn pool_block_access(&self, fr: &Frame, place: &Expr) -> bool {
        if !self.allocator_internal(fr.fid) {
            return false;
        }
        // A global (a pool kept in one) is the pool's own.
        let copies = fr.param_copies();
        let block =
            root_var(place).is_none_or(|x| fr.locals.contains_key(x) && !copies.contains(x));
        block || has_offset(place)
    }
}

/// Does a place go through pointer arithmetic (`*((size_t *) ap - 1)`)?
fn has_offset(e: &Expr) -> bool {
    match e {
        Expr::Offset(_) => true,
        Expr::Field { base, .. } | Expr::Deref(base) | Expr::Index { base, .. } => has_offset(base),
        Expr::Cast { value, .. } => has_offset(value),
        _ => false,
    }
}
