//! Models of the concurrency API: which functions lock, unlock, create and
//! join threads, allocate, or are atomic, with their argument positions.
//!
//! Defaults cover pthreads, C11 threads and GCC atomics; `racelens.toml` adds
//! project-specific functions and macros in the spirit of RacerF's models.
//! Parsing never fails hard: a broken file yields a [`ConfigError`] with a
//! line and column, and the defaults are used.

use rustc_hash::FxHashMap;
use serde::Deserialize;

/// How a call affects locks or threads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CallModel {
    Lock {
        arg: usize,
        shared: bool,
    },
    TryLock {
        arg: usize,
        shared: bool,
        /// Success is a nonzero result (Linux `spin_trylock`, `mutex_trylock`)
        /// rather than zero (pthreads, C11).
        ok_nonzero: bool,
    },
    Unlock {
        arg: usize,
    },
    Create {
        tid: usize,
        func: usize,
        arg: usize,
    },
    Join {
        tid: usize,
        /// An assumption rather than a call (`__goblint_assume_join(t)`):
        /// every thread `t` may denote has ended, whatever its index.
        all: bool,
    },
    Detach,
    Once {
        func: usize,
    },
    Alloc,
    /// `realloc`: frees its argument and returns a new object.
    Realloc,
    Free,
    /// Atomic read-modify-write or load/store: no plain access.
    Atomic,
    CondWait,
    Barrier,
    /// Enters or leaves a global atomic section (`__VERIFIER_atomic_begin`).
    AtomicBegin,
    AtomicEnd,
    /// Library call that writes through `write` and reads through `read`.
    Mem {
        write: Option<usize>,
        read: Option<usize>,
    },
    /// `scanf`-style: writes through every argument from `from` on.
    Scan {
        from: usize,
    },
    /// A thread-unsafe library function (`rand`, `strtok`, `localtime`):
    /// every call writes hidden static state of the library.
    Unsafe,
    /// Ends the current thread or process.
    Exit,
}

/// The effective configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub models: FxHashMap<String, CallModel>,
    /// Models that apply only to calls of functions the program does not
    /// define (the Linux kernel's locking API, whose short names such as
    /// `down` or `mutex_lock` a program may well use for its own functions).
    pub fallback_models: FxHashMap<String, CallModel>,
    pub atomic_prefixes: Vec<String>,
    /// Diagnostics severity for may-races: "information", "warning" or "hint".
    pub may_severity: String,
    /// `[diagnostics] show_unresolved = true`: the editor also shows may
    /// races on locations with no concrete object (a struct type reached
    /// through an unresolved pointer, wild memory). Off by default.
    pub show_unresolved: bool,
    /// `[analysis] volatile_is_sync = true`: accesses to `volatile` objects
    /// are not reported (an old convention some code bases rely on; C11 and
    /// POSIX give `volatile` no ordering). Off by default.
    pub volatile_is_sync: bool,
    /// `[analysis] malloc_may_fail = true`: an allocation (`malloc`,
    /// `calloc`, `realloc`, ...) may return null, so its failure branches
    /// run. Off by default, as in Goblint (`sem.malloc.fail`): code on a
    /// path where an allocation failed is not walked.
    pub malloc_may_fail: bool,
    /// `[analysis] lock_may_fail = true`: a blocking lock
    /// (`pthread_mutex_lock`, `pthread_spin_lock`, `pthread_rwlock_wrlock`,
    /// `pthread_rwlock_rdlock`, `mtx_lock`) may return an error, so the
    /// branches on its failure run. Off by default, as in Goblint
    /// (`sem.lock.fail`).
    pub lock_may_fail: bool,
    /// `[[program]]` tables: programs declared by name and file globs
    /// (relative to the configuration file's folder), for the cases the
    /// link-based heuristic of [`crate::programs`] gets wrong.
    pub programs: Vec<(String, Vec<String>)>,
}

/// A problem in a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub message: String,
    /// 1-based line and column, when known.
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl Default for Config {
    fn default() -> Self {
        use CallModel::*;
        let mut m = FxHashMap::default();
        let mut put = |names: &[&str], model: CallModel| {
            for n in names {
                m.insert(n.to_string(), model.clone());
            }
        };
        put(
            &[
                "pthread_mutex_lock",
                "pthread_spin_lock",
                "mtx_lock",
                "pthread_mutex_timedlock",
                "mtx_timedlock",
            ],
            Lock {
                arg: 0,
                shared: false,
            },
        );
        put(
            &["pthread_rwlock_wrlock", "pthread_rwlock_timedwrlock"],
            Lock {
                arg: 0,
                shared: false,
            },
        );
        put(
            &["pthread_rwlock_rdlock", "pthread_rwlock_timedrdlock"],
            Lock {
                arg: 0,
                shared: true,
            },
        );
        put(
            &[
                "pthread_mutex_trylock",
                "pthread_spin_trylock",
                "mtx_trylock",
                "pthread_rwlock_trywrlock",
            ],
            TryLock {
                arg: 0,
                shared: false,
                ok_nonzero: false,
            },
        );
        // Hand-made spin locks: `while (__sync_lock_test_and_set(&l, 1)) ;`
        // acquires `l` when the call returns zero (the flag was clear), and
        // `__sync_lock_release(&l)` releases it. GCC documents the pair as
        // the acquire and release of a lock; C11's `atomic_flag` is the same.
        put(
            &[
                "__sync_lock_test_and_set",
                "__atomic_test_and_set",
                "atomic_flag_test_and_set",
                "atomic_flag_test_and_set_explicit",
            ],
            TryLock {
                arg: 0,
                shared: false,
                ok_nonzero: false,
            },
        );
        // An exchange loop that swaps in a nonzero constant is one as well
        // (`while (atomic_exchange(&l, 1)) ;`); one that swaps in anything
        // else (`old = atomic_exchange(&head, NULL)`) is an atomic update
        // (`walk::calls::swaps_in_computed`).
        put(
            &[
                "atomic_exchange",
                "atomic_exchange_explicit",
                "__atomic_exchange_n",
            ],
            TryLock {
                arg: 0,
                shared: false,
                ok_nonzero: false,
            },
        );
        // A compare-and-swap loop that swaps in a constant is a spin lock
        // too (`while (!CAS(&l, &zero, 1))`): it succeeds on a nonzero
        // result. The walk takes a CAS that swaps in a computed value for an
        // atomic update, and an atomic store into a held word for a release.
        put(
            &[
                "__sync_bool_compare_and_swap",
                "__atomic_compare_exchange_n",
                "atomic_compare_exchange_strong",
                "atomic_compare_exchange_weak",
                "atomic_compare_exchange_strong_explicit",
                "atomic_compare_exchange_weak_explicit",
            ],
            TryLock {
                arg: 0,
                shared: false,
                ok_nonzero: true,
            },
        );
        put(
            &[
                "__sync_lock_release",
                "__atomic_clear",
                "atomic_flag_clear",
                "atomic_flag_clear_explicit",
            ],
            Unlock { arg: 0 },
        );
        put(
            &["pthread_rwlock_tryrdlock"],
            TryLock {
                arg: 0,
                shared: true,
                ok_nonzero: false,
            },
        );
        put(
            &[
                "pthread_mutex_unlock",
                "pthread_spin_unlock",
                "mtx_unlock",
                "pthread_rwlock_unlock",
            ],
            Unlock { arg: 0 },
        );
        put(
            &["pthread_create"],
            Create {
                tid: 0,
                func: 2,
                arg: 3,
            },
        );
        put(
            &["thrd_create"],
            Create {
                tid: 0,
                func: 1,
                arg: 2,
            },
        );
        put(&["pthread_join", "thrd_join"], Join { tid: 0, all: false });
        put(&["__goblint_assume_join"], Join { tid: 0, all: true });
        put(&["pthread_detach", "thrd_detach"], Detach);
        put(&["pthread_once", "call_once"], Once { func: 1 });
        put(&["realloc", "xrealloc"], Realloc);
        put(
            &[
                "malloc",
                "calloc",
                "strdup",
                "strndup",
                "aligned_alloc",
                "valloc",
                "xmalloc",
                "alloca",
                "__builtin_alloca",
                "xcalloc",
                "g_malloc",
                "g_new0",
                // libevent's bases: a new one each call (`walk/libevent.rs`
                // tells handlers' threads apart by their base).
                "event_base_new",
                "event_base_new_with_config",
                "event_init",
            ],
            Alloc,
        );
        put(
            &["free"],
            Mem {
                write: Some(0),
                read: None,
            },
        );
        put(
            &[
                "pthread_cond_wait",
                "pthread_cond_timedwait",
                "cnd_wait",
                "cnd_timedwait",
            ],
            CondWait,
        );
        put(&["pthread_barrier_wait"], Barrier);
        put(&["__VERIFIER_atomic_begin"], AtomicBegin);
        put(&["__VERIFIER_atomic_end"], AtomicEnd);
        put(
            &[
                "memset",
                "bzero",
                "sprintf",
                "snprintf",
                "vsprintf",
                "vsnprintf",
                "fgets",
                "gets",
                "time",
            ],
            Mem {
                write: Some(0),
                read: None,
            },
        );
        put(
            &[
                "memcpy", "memmove", "strcpy", "strncpy", "strcat", "strncat",
            ],
            Mem {
                write: Some(0),
                read: Some(1),
            },
        );
        put(
            &["strlen", "strcmp", "strncmp", "strchr", "puts"],
            Mem {
                write: None,
                read: Some(0),
            },
        );
        put(
            &[
                "pthread_exit",
                "thrd_exit",
                "exit",
                "_exit",
                "abort",
                // A failed `assert` (glibc, BSD and macOS spellings).
                "__assert_fail",
                "__assert_perror_fail",
                "__assert_rtn",
                "__assert",
            ],
            Exit,
        );
        Config {
            models: m,
            fallback_models: fallback_models(),
            atomic_prefixes: vec![
                "atomic_".into(),
                "__atomic_".into(),
                "__sync_".into(),
                "__c11_atomic_".into(),
            ],
            may_severity: "information".into(),
            show_unresolved: false,
            volatile_is_sync: false,
            malloc_may_fail: false,
            lock_may_fail: false,
            programs: Vec::new(),
        }
    }
}

/// Fallback models, used for calls of functions without a body in the
/// program: `scanf`-style and thread-unsafe C library functions (a program
/// may define its own `random` or `readdir`), kernel and GLib allocators
/// (`kmalloc`, `kmem_cache_alloc`, `umem_zalloc`, `g_malloc0`), the Linux
/// kernel's locking API (mutexes, spinlocks, rwlocks, rw semaphores,
/// semaphores) and the Solaris kernel's mutexes (`mutex_enter`,
/// `mutex_exit`).
fn fallback_models() -> FxHashMap<String, CallModel> {
    use CallModel::*;
    let mut m = FxHashMap::default();
    let mut put = |names: &[&str], model: CallModel| {
        for n in names {
            m.insert(n.to_string(), model.clone());
        }
    };
    put(&["scanf", "vscanf"], Scan { from: 1 });
    // Kernel and kernel-style allocators (Linux, Solaris/illumos and the
    // userland ports of ZFS: `umem_*`), and GLib's: each call returns a new
    // object, or one its cache got back by the matching free (the end of
    // the old object's life).
    put(
        &[
            "kmalloc",
            "kzalloc",
            "kcalloc",
            "kmalloc_array",
            "vmalloc",
            "vzalloc",
            "kvmalloc",
            "kvzalloc",
            "kmem_alloc",
            "kmem_zalloc",
            "kmem_cache_alloc",
            "kmem_cache_zalloc",
            "umem_alloc",
            "umem_zalloc",
            "umem_cache_alloc",
            "g_malloc0",
            "g_new",
            "g_try_malloc",
            "g_try_malloc0",
            "g_strdup",
            "g_strndup",
            "g_slice_alloc",
            "g_slice_alloc0",
            // The Redis module API's allocators: function pointers the
            // module fills by name (`RedisModule_GetApi("RedisModule_Alloc",
            // &RedisModule_Alloc)`), which call Redis's `zmalloc`.
            "RedisModule_Alloc",
            "RedisModule_Calloc",
            "RedisModule_TryAlloc",
            "RedisModule_Strdup",
        ],
        Alloc,
    );
    put(&["RedisModule_Realloc"], Realloc);
    put(
        &[
            "kfree",
            "vfree",
            "kvfree",
            "kmem_free",
            "umem_free",
            "g_free",
            "RedisModule_Free",
        ],
        Mem {
            write: Some(0),
            read: None,
        },
    );
    put(
        &["kmem_cache_free", "umem_cache_free", "g_slice_free1"],
        Mem {
            write: Some(1),
            read: None,
        },
    );
    put(
        &["sscanf", "fscanf", "vsscanf", "vfscanf"],
        Scan { from: 2 },
    );
    put(
        &[
            // Not `random`/`srandom`: POSIX does not list them among the
            // functions that need not be thread-safe (XSH 2.9.1), and
            // glibc and musl guard their state with a lock.
            "rand",
            "srand",
            "drand48",
            "lrand48",
            "mrand48",
            "srand48",
            "strtok",
            "localtime",
            "gmtime",
            "ctime",
            "asctime",
            "strerror",
            "setenv",
            "unsetenv",
            "putenv",
            "readdir",
            "getpwnam",
            "getpwuid",
            "getgrnam",
            "gethostbyname",
            "inet_ntoa",
        ],
        Unsafe,
    );
    let exclusive = Lock {
        arg: 0,
        shared: false,
    };
    put(
        &[
            "mutex_lock",
            "mutex_lock_nested",
            "mutex_lock_interruptible",
            "mutex_lock_interruptible_nested",
            "mutex_lock_killable",
            "mutex_lock_io",
            "spin_lock",
            "spin_lock_nested",
            "spin_lock_irq",
            "spin_lock_irqsave",
            "spin_lock_irqsave_nested",
            "spin_lock_bh",
            "raw_spin_lock",
            "raw_spin_lock_irq",
            "raw_spin_lock_irqsave",
            "raw_spin_lock_bh",
            "write_lock",
            "write_lock_irq",
            "write_lock_irqsave",
            "write_lock_bh",
            "down_write",
            "down_write_killable",
            "down",
            "down_interruptible",
            "down_killable",
            // Solaris/illumos kernel mutexes (ZFS and its ports).
            "mutex_enter",
        ],
        exclusive,
    );
    put(
        &[
            "read_lock",
            "read_lock_irq",
            "read_lock_irqsave",
            "read_lock_bh",
            "down_read",
            "down_read_killable",
            "down_read_interruptible",
        ],
        Lock {
            arg: 0,
            shared: true,
        },
    );
    put(
        &[
            "mutex_trylock",
            "spin_trylock",
            "spin_trylock_irq",
            "spin_trylock_irqsave",
            "spin_trylock_bh",
            "raw_spin_trylock",
            "write_trylock",
            "down_write_trylock",
            "mutex_tryenter",
        ],
        TryLock {
            arg: 0,
            shared: false,
            ok_nonzero: true,
        },
    );
    put(
        &["read_trylock", "down_read_trylock"],
        TryLock {
            arg: 0,
            shared: true,
            ok_nonzero: true,
        },
    );
    // `down_trylock` returns zero on success, like pthreads.
    put(
        &["down_trylock"],
        TryLock {
            arg: 0,
            shared: false,
            ok_nonzero: false,
        },
    );
    put(
        &[
            "mutex_exit",
            "mutex_unlock",
            "spin_unlock",
            "spin_unlock_irq",
            "spin_unlock_irqrestore",
            "spin_unlock_bh",
            "raw_spin_unlock",
            "raw_spin_unlock_irq",
            "raw_spin_unlock_irqrestore",
            "raw_spin_unlock_bh",
            "read_unlock",
            "read_unlock_irq",
            "read_unlock_irqrestore",
            "read_unlock_bh",
            "write_unlock",
            "write_unlock_irq",
            "write_unlock_irqrestore",
            "write_unlock_bh",
            "up_read",
            "up_write",
            "up",
        ],
        Unlock { arg: 0 },
    );
    m
}

/// The standard function a compiler's or C library's spelling stands for:
/// `__builtin_memcpy` and `__memcpy_chk` are `memcpy`, glibc's inline
/// `__strsep_g` and `__strcspn_c2` are `strsep` and `strcspn`, `__strdup` is
/// `strdup`, the fortified `__builtin___snprintf_chk` is `snprintf`,
/// glibc's `__fread_alias` and `__strtol_internal` are `fread` and
/// `strtol`. Other names come back unchanged.
pub(crate) fn library_name(f: &str) -> &str {
    let Some(rest) = f.strip_prefix("__") else {
        return f;
    };
    // A fortified builtin (`__builtin___snprintf_chk`, whose arguments
    // start as `snprintf`'s do) loses both prefixes.
    let rest = rest
        .strip_prefix("builtin___")
        .or_else(|| rest.strip_prefix("builtin_"))
        .unwrap_or(rest);
    // glibc's fortify aliases and internal spellings (`__fread_alias`,
    // `__strtol_internal`) take the standard function's arguments first.
    let rest = ["_chk", "_g", "_c1", "_c2", "_c3", "_alias", "_internal"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))
        .unwrap_or(rest);
    match rest.is_empty() || rest.starts_with('_') {
        true => f,
        false => rest,
    }
}

impl Config {
    /// The model of a callee name, if any, whether or not the program
    /// defines the function; see [`Config::model_of`].
    pub fn model(&self, name: &str) -> Option<&CallModel> {
        if let Some(m) = self.models.get(name) {
            return Some(m);
        }
        if self
            .atomic_prefixes
            .iter()
            .any(|p| name.starts_with(p.as_str()))
        {
            return Some(&CallModel::Atomic);
        }
        None
    }

    /// The model of a call of `name`: the configured and pthreads models
    /// always, the fallback (kernel) models only when the program has no
    /// body for `name` (`defined` is asked only then).
    pub fn model_of(&self, name: &str, defined: impl FnOnce() -> bool) -> Option<&CallModel> {
        if let Some(m) = self.model(name) {
            return Some(m);
        }
        let fallback = self.fallback_models.get(name);
        if fallback.is_none() && library_name(name) == name {
            return None;
        }
        if defined() {
            return None;
        }
        // A library's own spelling of a standard function (`__strdup`,
        // `__memcpy_chk`, `__builtin_memset`), when the program has no body
        // for it: its arguments start the same way.
        fallback.or_else(|| {
            let std = library_name(name);
            self.model(std).or_else(|| self.fallback_models.get(std))
        })
    }

    /// Parses `racelens.toml` text on top of the defaults. Errors leave the
    /// defaults in place and are returned alongside.
    pub fn from_toml(text: &str) -> (Config, Vec<ConfigError>) {
        let mut cfg = Config::default();
        let mut errors = Vec::new();
        match toml::from_str::<FileConfig>(text) {
            Ok(fc) => fc.apply(&mut cfg, &mut errors),
            Err(e) => {
                let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
                errors.push(ConfigError {
                    message: e.message().to_string(),
                    line,
                    column,
                });
            }
        }
        (cfg, errors)
    }
}

fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0) as u32
        + 1;
    (line, col)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    locks: LockSection,
    #[serde(default)]
    threads: ThreadSection,
    #[serde(default)]
    atomics: AtomicSection,
    #[serde(default)]
    macros: LockSection,
    #[serde(default)]
    diagnostics: DiagSection,
    #[serde(default)]
    analysis: AnalysisSection,
    #[serde(default)]
    program: Vec<ProgramSection>,
}

/// `[[program]] name = "server"  files = ["src/server/*.c", "src/common.c"]`
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramSection {
    name: String,
    files: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AnalysisSection {
    volatile_is_sync: Option<bool>,
    malloc_may_fail: Option<bool>,
    lock_may_fail: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LockSection {
    #[serde(default)]
    lock: Vec<Fun>,
    #[serde(default)]
    unlock: Vec<Fun>,
    #[serde(default)]
    trylock: Vec<Fun>,
    #[serde(default)]
    rdlock: Vec<Fun>,
    #[serde(default)]
    wrlock: Vec<Fun>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ThreadSection {
    #[serde(default)]
    create: Vec<CreateFun>,
    #[serde(default)]
    join: Vec<Fun>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AtomicSection {
    #[serde(default)]
    functions: Vec<String>,
    #[serde(default)]
    prefixes: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DiagSection {
    may_severity: Option<String>,
    show_unresolved: Option<bool>,
}

/// `{ name = "my_lock", arg = 0 }` or just `"my_lock"` (argument 0).
#[derive(Deserialize)]
#[serde(untagged)]
enum Fun {
    Name(String),
    Full {
        name: String,
        #[serde(default)]
        arg: usize,
    },
}

impl Fun {
    fn parts(&self) -> (&str, usize) {
        match self {
            Fun::Name(n) => (n, 0),
            Fun::Full { name, arg } => (name, *arg),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateFun {
    name: String,
    #[serde(default)]
    tid: usize,
    func: usize,
    arg: usize,
}

impl FileConfig {
    fn apply(self, cfg: &mut Config, errors: &mut Vec<ConfigError>) {
        for p in &self.program {
            cfg.programs.push((p.name.clone(), p.files.clone()));
        }
        for sec in [self.locks, self.macros] {
            for f in &sec.lock {
                let (n, arg) = f.parts();
                cfg.models
                    .insert(n.into(), CallModel::Lock { arg, shared: false });
            }
            for f in &sec.wrlock {
                let (n, arg) = f.parts();
                cfg.models
                    .insert(n.into(), CallModel::Lock { arg, shared: false });
            }
            for f in &sec.rdlock {
                let (n, arg) = f.parts();
                cfg.models
                    .insert(n.into(), CallModel::Lock { arg, shared: true });
            }
            for f in &sec.trylock {
                let (n, arg) = f.parts();
                cfg.models.insert(
                    n.into(),
                    CallModel::TryLock {
                        arg,
                        shared: false,
                        ok_nonzero: false,
                    },
                );
            }
            for f in &sec.unlock {
                let (n, arg) = f.parts();
                cfg.models.insert(n.into(), CallModel::Unlock { arg });
            }
        }
        for c in self.threads.create {
            cfg.models.insert(
                c.name,
                CallModel::Create {
                    tid: c.tid,
                    func: c.func,
                    arg: c.arg,
                },
            );
        }
        for f in &self.threads.join {
            let (n, tid) = f.parts();
            cfg.models
                .insert(n.into(), CallModel::Join { tid, all: false });
        }
        for n in self.atomics.functions {
            cfg.models.insert(n, CallModel::Atomic);
        }
        cfg.atomic_prefixes.extend(self.atomics.prefixes);
        if let Some(v) = self.analysis.volatile_is_sync {
            cfg.volatile_is_sync = v;
        }
        if let Some(v) = self.analysis.malloc_may_fail {
            cfg.malloc_may_fail = v;
        }
        if let Some(v) = self.analysis.lock_may_fail {
            cfg.lock_may_fail = v;
        }
        if let Some(v) = self.diagnostics.show_unresolved {
            cfg.show_unresolved = v;
        }
        if let Some(s) = self.diagnostics.may_severity {
            if matches!(s.as_str(), "information" | "warning" | "hint" | "error") {
                cfg.may_severity = s;
            } else {
                errors.push(ConfigError {
                    message: format!(
                        "unknown may_severity `{s}` (expected information, warning or hint)"
                    ),
                    line: 1,
                    column: 1,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_models_and_reports_errors_with_position() {
        let (cfg, errs) = Config::from_toml("[locks]\nlock = [\"my_lock\", { name = \"lk2\", arg = 1 }]\n[threads]\ncreate = [{ name = \"spawn\", func = 0, arg = 1 }]\n");
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            cfg.model("lk2"),
            Some(&CallModel::Lock {
                arg: 1,
                shared: false
            })
        );
        assert_eq!(
            cfg.model("spawn"),
            Some(&CallModel::Create {
                tid: 0,
                func: 0,
                arg: 1
            })
        );
        let (cfg, errs) = Config::from_toml("[locks]\nlock = 3\n");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].line, 2);
        assert_eq!(cfg, Config::default());
    }

    #[test]
    fn kernel_models_apply_only_to_functions_without_a_body() {
        let cfg = Config::default();
        let lock = Some(&CallModel::Lock {
            arg: 0,
            shared: false,
        });
        assert_eq!(cfg.model_of("mutex_lock", || false), lock);
        assert_eq!(cfg.model_of("mutex_lock", || true), None);
        assert_eq!(
            cfg.model_of("spin_trylock", || false),
            Some(&CallModel::TryLock {
                arg: 0,
                shared: false,
                ok_nonzero: true
            })
        );
        // pthreads models do not depend on a body; `defined` is not asked.
        assert_eq!(cfg.model_of("pthread_mutex_lock", || unreachable!()), lock);
        // A configured model wins even over a definition.
        let (cfg, _) = Config::from_toml("[locks]\nlock = [\"down\"]\n");
        assert_eq!(cfg.model_of("down", || true), lock);
    }
}
