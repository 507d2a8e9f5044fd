//! What the walk knows about library functions without a body: which keep
//! the functions they are given for later, which run them on other threads,
//! and which keep none of their pointer arguments once they return.
//!
//! Invariant: names are matched after [`library_name`](crate::config::library_name) strips the spellings
//! compilers and C libraries add to a standard function (`__builtin_`,
//! glibc's `__strsep_g`, fortified `__sprintf_chk`), so a list names the
//! standard function once.

use crate::config::library_name;

/// Library functions that keep the functions they are given for later, and
/// call them neither now nor on another thread while the program runs:
/// exit and fork handlers, thread-specific data destructors, cancellation
/// cleanups. Their callbacks are not walked. (Signal handlers are their own
/// concurrent context, see [`SIGNAL_HANDLERS`].)
pub(super) const DEFERRED_CALLBACKS: &[&str] = &[
    "atexit",
    "on_exit",
    "at_quick_exit",
    "pthread_atfork",
    "pthread_key_create",
    "pthread_cleanup_push",
];

/// Library functions that install signal handlers: the handler may run at
/// any time, interrupting any thread, so it is an abstract thread of its own.
pub(super) const SIGNAL_HANDLERS: &[&str] = &["signal", "sigaction", "sigset", "bsd_signal"];

/// The members of `struct sigaction` that hold its handler (glibc nests
/// them in `__sigaction_handler` once its header is expanded).
pub(super) const SIGACTION_HANDLER_MEMBERS: &[&str] = &["sa_handler", "sa_sigaction"];

/// Well-known asynchronous APIs: library functions that run the functions
/// they are given later, on another thread, or on whichever thread runs an
/// event loop. Their callbacks are walked as threads (callback groups, see
/// docs/analysis.md). Every other function without a body that is handed a
/// function runs it on the calling thread, at the call.
const ASYNC_CALLBACKS: &[&str] = &[
    // (Threads and thread pools of other libraries: `THREAD_POOLS`.)
    // POSIX notifications that may start a thread (SIGEV_THREAD).
    "timer_create",
    "mq_notify",
    "aio_read",
    "aio_write",
    "lio_listio",
    // libevent: handlers run on the thread that runs the base's loop, which
    // need not be the registering thread.
    "event_set",
    "event_assign",
    "event_new",
    "evtimer_set",
    "evtimer_assign",
    "evtimer_new",
    "evsignal_set",
    "evsignal_assign",
    "evsignal_new",
    "event_base_once",
    "event_once",
    "bufferevent_setcb",
    "bufferevent_socket_new",
    "evhttp_set_cb",
    "evhttp_set_gencb",
    "evconnlistener_new",
    "evconnlistener_new_bind",
    // libev and libuv watchers (when not macros).
    "ev_set_cb",
    "ev_io_init",
    "ev_timer_init",
    "ev_signal_init",
    "ev_async_init",
    "uv_read_start",
    "uv_timer_start",
    "uv_listen",
    "uv_async_init",
    "uv_signal_start",
    "uv_poll_start",
    "uv_idle_start",
    // GLib main loop sources.
    "g_idle_add",
    "g_idle_add_full",
    "g_timeout_add",
    "g_timeout_add_full",
    "g_timeout_add_seconds",
    "g_signal_connect_data",
    "g_io_add_watch",
    // libupnp runs client and device handlers on its own thread pool.
    "UpnpRegisterClient",
    "UpnpRegisterRootDevice",
    "UpnpRegisterRootDevice2",
    "UpnpRegisterRootDevice3",
    "UpnpRegisterRootDevice4",
    // FUSE runs its operations on its own (worker) threads.
    "fuse_main",
    "fuse_main_real",
    "fuse_new",
    "fuse_loop",
    "fuse_loop_mt",
    "fuse_session_loop_mt",
    "fuse_lowlevel_new",
    "fuse_lowlevel_new_compat",
    "fuse_lowlevel_new_compat25",
    "fuse_new_compat2",
    "fuse_new_compat22",
    "fuse_new_compat25",
    "fuse_main_real_compat22",
    "fuse_main_real_compat25",
    "fuse_session_new",
    "fuse_setup",
];

/// Library functions that store, through a pointer argument, a pointer
/// derived from another argument: `(out, source)` argument indices, the
/// source `None` when the stored pointer is derived from what `*out`
/// held. `strtol(s, &end, b)` stores a pointer into `s`, `strtok_r(s, d,
/// &save)` one into `s` (or, when `s` is null, into what `save` held), and
/// `strsep(&p, d)` one into what `p` held, or null. They store through no
/// other pointer argument a pointer (only characters).
pub(super) fn derived_out(f: &str) -> Option<(usize, Option<usize>)> {
    match f {
        "strtol" | "strtoul" | "strtoll" | "strtoull" | "strtoq" | "strtouq" | "strtod"
        | "strtof" | "strtold" | "strtoimax" | "strtoumax" => Some((1, Some(0))),
        "strtok_r" | "__strtok_r" => Some((2, Some(0))),
        "strsep" => Some((0, None)),
        _ => None,
    }
}

/// Library functions whose result points into what an argument points to:
/// `(argument, through)`, with `through` when the result comes from what
/// the argument points to (`strsep(&p, d)` returns the old `p`). `strchr`,
/// `strstr`, `memchr` and their kin return a pointer into their first
/// argument; `strcpy`, `memcpy`, `fgets` return their destination;
/// `strtok_r(s, d, &save)` a pointer into `s`, or into what `save` held.
pub(super) fn derived_result(f: &str) -> &'static [(usize, bool)] {
    match f {
        "strchr" | "strrchr" | "strstr" | "strcasestr" | "strpbrk" | "memchr" | "memrchr"
        | "rawmemchr" | "strchrnul" | "index" | "rindex" | "fgets" | "strcpy" | "strncpy"
        | "strcat" | "strncat" | "memcpy" | "memmove" | "memset" | "stpcpy" | "stpncpy"
        | "mempcpy" | "strtok" => &[(0, false)],
        "strsep" => &[(0, true)],
        "strtok_r" | "__strtok_r" => &[(0, false), (2, true)],
        _ => &[],
    }
}

/// Asynchronous APIs ([`is_async`]) that run what they are given on threads
/// of their own (not on whichever thread runs an event loop, which may be
/// the only one): a program that calls one has threads even when it never
/// calls `pthread_create` (a FUSE file system whose operations run on
/// libfuse's workers).
pub(super) fn starts_threads(f: &str) -> bool {
    THREAD_POOLS.contains(&f)
        || f.starts_with("fuse_main")
        || f.starts_with("UpnpRegister")
        || f.starts_with("fuse_loop_mt")
        || f.starts_with("fuse_session_loop_mt")
}

/// Threads and thread pools of other libraries: asynchronous APIs (see
/// [`is_async`]) that always run what they are given on threads of their
/// own.
const THREAD_POOLS: &[&str] = &[
    "g_thread_new",
    "g_thread_try_new",
    "g_thread_create",
    "g_thread_pool_new",
    "uv_thread_create",
    "uv_queue_work",
    "SDL_CreateThread",
    "apr_thread_create",
    "CreateThread",
    "_beginthread",
    "_beginthreadex",
];

/// Does library function `f` run the functions it is given later, on
/// another thread or an event loop's ([`ASYNC_CALLBACKS`],
/// [`THREAD_POOLS`])?
pub(super) fn is_async(f: &str) -> bool {
    ASYNC_CALLBACKS.contains(&f) || THREAD_POOLS.contains(&f)
}

/// Is `f` a library function some list here names (a callback keeper, a
/// signal installer, an asynchronous API, one that keeps no pointer)?
/// `typed_names.rs` takes such a name for ordinary code, never a slip.
pub(crate) fn knows(f: &str) -> bool {
    DEFERRED_CALLBACKS.contains(&f)
        || SIGNAL_HANDLERS.contains(&f)
        || is_async(f)
        || starts_threads(f)
        || does_not_retain(f)
}

/// Library functions that keep none of their pointer arguments once they
/// return (initializing a mutex inside a new object does not publish it).
pub(super) fn does_not_retain(f: &str) -> bool {
    let f = library_name(f);
    const EXACT: &[&str] = &[
        "pthread_mutex_init",
        "pthread_mutex_destroy",
        "pthread_cond_init",
        "pthread_cond_destroy",
        "pthread_cond_signal",
        "pthread_cond_broadcast",
        "pthread_rwlock_init",
        "pthread_rwlock_destroy",
        "pthread_spin_init",
        "pthread_spin_destroy",
        "pthread_barrier_init",
        "pthread_barrier_destroy",
        "sem_init",
        "sem_destroy",
        "sem_post",
        "sem_wait",
        "sem_trywait",
        "sem_getvalue",
        "mtx_init",
        "mtx_destroy",
        "cnd_init",
        "cnd_destroy",
        "cnd_signal",
        "cnd_broadcast",
        "printf",
        "fprintf",
        "dprintf",
        "perror",
        "fputs",
        "fwrite",
        "write",
        "send",
        "strtol",
        "strtoul",
        "strtoll",
        "strtoull",
        "strtod",
        "atoi",
        "atol",
        "gettimeofday",
        "clock_gettime",
        // Messages and assertions: strings read during the call.
        "assert_fail",
        "assert_rtn",
        "assert",
        "dcgettext",
        "dgettext",
        "gettext",
        "va_start",
        "va_end",
        "va_arg",
        "va_copy",
        "expect",
        "getenv",
        "strptime",
        "inet_addr",
        "inet_ntoa",
        "waitpid",
        "wait",
        "time",
        "usleep",
    ];
    // The C library and POSIX functions that use their pointer arguments
    // only during the call (`setvbuf`, `pthread_setspecific`, `putenv` and
    // `strtok` keep theirs, and are not here).
    const LIBC: &[&str] = &[
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "memchr",
        "memrchr",
        "bcopy",
        "bzero",
        "explicit_bzero",
        "bcmp",
        "strlen",
        "strnlen",
        "strcmp",
        "strncmp",
        "strcasecmp",
        "strncasecmp",
        "strcpy",
        "strncpy",
        "strcat",
        "strncat",
        "strchr",
        "strrchr",
        "strstr",
        "strcasestr",
        "strspn",
        "strcspn",
        "strpbrk",
        "strcoll",
        "strxfrm",
        "stpcpy",
        "stpncpy",
        "strlcpy",
        "strlcat",
        "strerror_r",
        "strsep",
        "index",
        "rindex",
        "strdup",
        "strndup",
        "sprintf",
        "snprintf",
        "vprintf",
        "vfprintf",
        "vsprintf",
        "vsnprintf",
        "vdprintf",
        "asprintf",
        "vasprintf",
        "scanf",
        "fscanf",
        "sscanf",
        "vsscanf",
        "vfscanf",
        "puts",
        "fputc",
        "putc",
        "fgets",
        "fgetc",
        "getc",
        "fread",
        "fflush",
        "fseek",
        "ftell",
        "rewind",
        "feof",
        "ferror",
        "clearerr",
        "getline",
        "getdelim",
        "syslog",
        "vsyslog",
        "atoll",
        "atof",
        "strtof",
        "strtold",
        "strtoimax",
        "strtoumax",
        "localtime_r",
        "gmtime_r",
        "strftime",
        "mktime",
        "ctime_r",
        "asctime_r",
        "nanosleep",
        "read",
        "pread",
        "pwrite",
        "recv",
        "recvfrom",
        "recvmsg",
        "recvmmsg",
        "sendto",
        "sendmsg",
        "sendmmsg",
        "readv",
        "writev",
        "open",
        "openat",
        "stat",
        "lstat",
        "fstat",
        "access",
        "unlink",
        "rename",
        "mkdir",
        "rmdir",
        "chdir",
        "realpath",
        "readlink",
        "getcwd",
        "gethostname",
        "uname",
        "pipe",
        "socketpair",
        "bind",
        "connect",
        "accept",
        "accept4",
        "getsockname",
        "getpeername",
        "setsockopt",
        "getsockopt",
        "select",
        "poll",
        "getaddrinfo",
        "getnameinfo",
        "inet_ntop",
        "inet_pton",
        "inet_aton",
        "gethostbyname_r",
        "qsort",
        "bsearch",
        "regcomp",
        "regexec",
        "sigemptyset",
        "sigfillset",
        "sigaddset",
        "sigdelset",
        "sigprocmask",
        "pthread_sigmask",
        "fopen",
        "opendir",
        "stat64",
        "lstat64",
        "fstat64",
        "open64",
        "fopen64",
        // glibc's `stat` family (`__xstat`, `__fxstatat` in preprocessed
        // code) and more path functions, which read the path and fill the
        // buffer during the call.
        "xstat",
        "lxstat",
        "fxstat",
        "fxstatat",
        "xstat64",
        "lxstat64",
        "fxstat64",
        "fstatat",
        "renameat",
        "symlink",
        "mkfifo",
        "epoll_wait",
        "swprintf",
        "vswprintf",
        "wcscat",
        "wcswidth",
        "fnmatch",
        "remove",
        "mkdtemp",
        "if_nametoindex",
        "sem_timedwait",
        // zlib's gz files and more stream calls, which use the buffer or
        // the stream during the call (as `deflate` does).
        "gzread",
        "gzwrite",
        "deflateParams",
        "deflatePending",
        "deflatePrime",
        "snd_pcm_readi",
        // New strings and numbers made from the arguments: GLib's and
        // curl's copies, OpenSSL's conversion into a new buffer.
        "g_strdup_printf",
        "curl_easy_escape",
        "ASN1_STRING_to_UTF8",
        "json_object_new_int64",
        "lua_pushinteger",
        "munmap",
        // Math and compiler queries: no pointer kept (`__builtin_isnan`,
        // `__builtin_object_size`).
        "isnan",
        "object_size",
        "round",
        "floor",
        "ceil",
        "fabs",
        "sqrt",
        "pow",
        "exp",
        "log",
        // More of the C library and POSIX: buffers used during the call.
        "memccpy",
        "mempcpy",
        "rawmemchr",
        "memmem",
        "wmemcpy",
        "wmemset",
        "wcslen",
        "wcscpy",
        "wcsncpy",
        "wcscmp",
        "wcsncmp",
        "mbstowcs",
        "wcstombs",
        "mbrtowc",
        "wcrtomb",
        "mbtowc",
        "wctomb",
        "strtok_r",
        "basename",
        "dirname",
        "xpg_basename",
        "getpwnam_r",
        "getpwuid_r",
        "getgrnam_r",
        "getgrgid_r",
        "gethostbyaddr_r",
        "getservbyname_r",
        "statvfs",
        "fstatvfs",
        "statfs",
        "fstatfs",
        "getrlimit",
        "setrlimit",
        "getrusage",
        "times",
        "utime",
        "utimes",
        "futimes",
        "chmod",
        "chown",
        "truncate",
        "setenv",
        "ioctl",
        "execv",
        "execvp",
        "execve",
        "execl",
        "execlp",
        "system",
        "popen",
        // zlib: the stream and buffers are used during the call (the
        // `*Init` functions, which tie the stream to zlib's state, are not
        // here).
        "crc32",
        "crc32_combine",
        "adler32",
        "adler32_combine",
        "compress",
        "compress2",
        "uncompress",
        "deflate",
        "inflate",
        "deflateEnd",
        "inflateEnd",
        "deflateReset",
        "inflateReset",
        // OpenSSL: data and keys are read or copied during the call.
        "SSL_read",
        "SSL_write",
        "SSL_peek",
        "EVP_DigestUpdate",
        "EVP_DigestFinal_ex",
        "EVP_EncryptUpdate",
        "EVP_DecryptUpdate",
        "MD5",
        "SHA1",
        "SHA256",
        "RAND_bytes",
        "BF_set_key",
        "BF_ecb_encrypt",
        "BF_cbc_encrypt",
        "BF_cfb64_encrypt",
        "BF_ofb64_encrypt",
        "AES_set_encrypt_key",
        "AES_set_decrypt_key",
        "AES_encrypt",
        "AES_decrypt",
        "AES_cbc_encrypt",
        "BIO_write",
        "BIO_read",
        "BIO_puts",
        "BIO_gets",
        "MD5_Init",
        "MD5_Update",
        "MD5_Final",
        "SHA1_Init",
        "SHA1_Update",
        "SHA1_Final",
        "SHA256_Init",
        "SHA256_Update",
        "SHA256_Final",
        "SHA512_Init",
        "SHA512_Update",
        "SHA512_Final",
        "HMAC",
        "HMAC_Update",
        "HMAC_Final",
        "EVP_EncryptFinal_ex",
        "EVP_DecryptFinal_ex",
        "RSA_private_decrypt",
        "RSA_private_encrypt",
        "RSA_public_decrypt",
        "RSA_public_encrypt",
        // libgcrypt copies keys and IVs into its handle; data is read and
        // written during the call.
        "gcry_cipher_setkey",
        "gcry_cipher_setiv",
        "gcry_cipher_encrypt",
        "gcry_cipher_decrypt",
        "gcry_md_write",
        // Audio output: the samples are written out during the call.
        "ao_play",
        "pa_simple_write",
        "snd_pcm_writei",
        // Strings copied into the library's own values (json-c duplicates
        // the string, Lua interns it) and patterns compiled into a new
        // object; PCRE reads the subject during the match.
        "json_object_new_string",
        "json_object_new_string_len",
        "lua_pushstring",
        "lua_pushlstring",
        "pcre_compile",
        "pcre_compile2",
        "pcre_exec",
        // bzip2's one-shot buffer functions.
        "BZ2_bzBuffToBuffCompress",
        "BZ2_bzBuffToBuffDecompress",
        // Concurrency Kit's hash tables: hashing and lookups read the key
        // during the call (`ck_ht_put_spmc` and the other writers keep it,
        // and are not here).
        "ck_ht_hash",
        "ck_ht_hash_direct",
        "ck_ht_get_spmc",
        "ck_hs_get",
        "ck_rhs_get",
        // setjmp keeps the context in the buffer it is given, not the
        // buffer; cancellation state is the calling thread's own.
        "setjmp",
        "_setjmp",
        "sigsetjmp",
        "__sigsetjmp",
        "longjmp",
        "siglongjmp",
        "pthread_setcancelstate",
        "pthread_setcanceltype",
        "pthread_setname_np",
        "pthread_getname_np",
        "pthread_setaffinity_np",
        "pthread_getaffinity_np",
    ];
    EXACT.contains(&f)
        || LIBC.contains(&f)
        || [
            "pthread_mutexattr_",
            "pthread_condattr_",
            "pthread_rwlockattr_",
            "pthread_attr_",
            // Arbitrary-precision arithmetic (OpenSSL's BN_, GMP's mpz_)
            // reads and writes its operands during the call.
            "BN_",
            "__gmpz_",
            "__gmpq_",
            "mpz_",
            "mpq_",
        ]
        .iter()
        .any(|p| f.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::library_name;

    #[test]
    fn library_spellings_name_the_standard_function() {
        assert_eq!(library_name("__builtin_memcpy"), "memcpy");
        assert_eq!(library_name("__sprintf_chk"), "sprintf");
        assert_eq!(library_name("__strsep_g"), "strsep");
        assert_eq!(library_name("__strcspn_c2"), "strcspn");
        assert_eq!(library_name("__strdup"), "strdup");
        assert_eq!(library_name("memcpy"), "memcpy");
        assert_eq!(library_name("___x"), "___x");
        assert!(does_not_retain("__fprintf_chk"));
        assert!(does_not_retain("__builtin_va_start"));
        assert!(!does_not_retain("__pthread_setspecific"));
        assert!(!does_not_retain("event_add"));
        assert_eq!(library_name("__builtin___snprintf_chk"), "snprintf");
        assert_eq!(library_name("__fread_alias"), "fread");
        assert_eq!(library_name("__strtol_internal"), "strtol");
        assert_eq!(library_name("__xstat"), "xstat");
        assert!(does_not_retain("__fread_alias"));
        assert!(does_not_retain("MD5_Update"));
        assert!(!does_not_retain("epoll_ctl"));
    }
}
