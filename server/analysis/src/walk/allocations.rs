//! Allocation and lock success: whether an allocation's result may be
//! null, and whether a blocking lock's result may be an error.
//!
//! C lets `malloc` and its kin return null, but a race that needs an
//! allocation to fail is rarely what a developer wants reported, and the
//! failure branch of a function that locks only after its allocation
//! succeeded (`h = malloc(..); if (!h) return NULL; lock(&m); return h;`)
//! would otherwise leave every caller's lock unknown. So by default, as in
//! Goblint (`sem.malloc.fail` off), an allocation succeeds: its call's
//! result is a nonzero branch fact (`State::conds`), which the walk
//! propagates like any other (assignments to locals, `return`), and a test
//! of it takes one branch only. `[analysis] malloc_may_fail = true` keeps
//! both outcomes.
//!
//! The same holds for a blocking lock of a mutex, spin lock or read-write
//! lock (Goblint's `sem.lock.fail`, `[analysis] lock_may_fail`): its
//! tested result is a zero branch fact.
//!
//! Invariant: the fact is added only at the call of a modelled allocator
//! (`CallModel::Alloc`, `CallModel::Realloc`), never for one that fails by
//! design (`g_try_malloc`, `RedisModule_TryAlloc`) or returns null for a
//! null argument (GLib's `g_strdup`), and only at a tested call of one of
//! the five POSIX/C11 blocking locks named in [`Walker::lock_succeeds`].

use super::frames::Frame;
use super::state::State;
use super::Walker;
use racelens_syntax::{Call, Callee};

impl Walker<'_> {
    /// An allocation returns an object, not null, unless the configuration
    /// says allocations may fail (`[analysis] malloc_may_fail`, off by
    /// default as Goblint's `sem.malloc.fail`): the call's result is known
    /// nonzero, so a branch on its failure (`if (!p) return NULL;`) does
    /// not run, and a function that locks after its allocation succeeded
    /// returns holding the lock. Allocators that fail by design
    /// (`g_try_malloc`, `RedisModule_TryAlloc`) and GLib's string copies
    /// (null for null) keep both outcomes.
    pub(super) fn allocation_succeeds(&self, fr: &Frame, c: &Call, st: &mut State) {
        let Callee::Direct(name) = &c.callee else {
            return;
        };
        let lower = name.to_ascii_lowercase();
        if lower.contains("try")
            || lower.starts_with("g_str")
            || fr.fid.ws(self.db).config(self.db).malloc_may_fail
        {
            return;
        }
        st.know(super::spawn::call_flag(c.id), true);
    }

    /// A blocking lock of a mutex, spin lock or read-write lock returns 0
    /// unless the configuration says locks may fail (`[analysis]
    /// lock_may_fail`, off by default as Goblint's `sem.lock.fail`): for a
    /// lock that is initialised and not already the caller's, POSIX leaves
    /// it no error to return, so a branch on its failure (`if
    /// (pthread_mutex_lock(&m) != 0) { perror(..); return; }`) does not
    /// run. Timed locks (they time out), semaphores (`EINTR`) and locks of
    /// other APIs keep both outcomes, and so does a lock whose result is
    /// not tested.
    pub(super) fn lock_succeeds(&self, fr: &Frame, c: &Call, st: &mut State) {
        let Callee::Direct(name) = &c.callee else {
            return;
        };
        if !fr.tested.contains(&c.id)
            || !matches!(
                &**name,
                "pthread_mutex_lock"
                    | "pthread_spin_lock"
                    | "pthread_rwlock_wrlock"
                    | "pthread_rwlock_rdlock"
                    | "mtx_lock"
            )
            || fr.fid.ws(self.db).config(self.db).lock_may_fail
        {
            return;
        }
        st.know(super::spawn::call_flag(c.id), false);
    }
}
