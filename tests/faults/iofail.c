/* iofail.c — an LD_PRELOAD shim that makes file-system calls fail on demand, for the tests of
 * disk-full and I/O-error handling (tests/slow/test_iofail.c). Not linked into the trainer.
 *
 * It wraps open/openat (and their 64-bit and _2 fortify forms), write, pwrite, pread, fsync,
 * fdatasync, close, rename, renameat and renameat2. A call is TRACKED when it names (or acts on a
 * file descriptor opened from) a tracked path; only tracked calls are counted, numbered 1, 2, ...
 * in the order they happen, and only they can be made to fail. Everything else passes straight
 * to libc. (stdio's internal writes do not go through these symbols; the checkpoint writer uses
 * plain POSIX calls, which do.)
 *
 * Environment (read once, at the first wrapped call):
 *   IOFAIL_MATCH   colon-separated substrings; a path containing one of them is tracked
 *   IOFAIL_EXACT   colon-separated paths tracked when equal (e.g. the checkpoint folder, which
 *                  is opened to be fsync'ed)
 *   IOFAIL_ARM     substring: counting starts at the first open() of a path containing it (that
 *                  call is number 1); unset: counting starts at once
 *   IOFAIL_CALLS   comma-separated call kinds that are counted: open, write, pwrite, pread, fsync,
 *                  fdatasync, close, rename (default: all but pread)
 *   IOFAIL_FAIL_AT N: tracked call number N fails (0 or unset: none fails)
 *   IOFAIL_STICKY  1: every counted call from N on fails (a disk that stays full)
 *   IOFAIL_ERRNO   ENOSPC, EIO, EDQUOT, EFBIG, EROFS or a number (default EIO)
 *   IOFAIL_MODE    fail (default) | short: every counted write/pwrite transfers at most half of
 *                  what it was asked (at least 1 byte) | eintr: every other counted write, pwrite
 *                  or pread fails with EINTR before doing anything
 *   IOFAIL_LOG     a file to append one line per counted call to:
 *                  "<n> <call> <r|w|-> <ok|FAIL errno-name> <path>", where r/w says whether the
 *                  descriptor was opened read-only or for writing (- for rename)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

enum { C_OPEN, C_WRITE, C_PWRITE, C_PREAD, C_FSYNC, C_FDATASYNC, C_CLOSE, C_RENAME, C_KINDS };
static const char *const kind_names[C_KINDS] = {"open",  "write",     "pwrite", "pread",
                                                "fsync", "fdatasync", "close",  "rename"};

#define MAX_FD 4096
#define MAX_PATTERNS 16

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_inited = 0;
static char *g_match[MAX_PATTERNS], *g_exact[MAX_PATTERNS];
static int g_nmatch = 0, g_nexact = 0;
static const char *g_arm = NULL;
static int g_armed = 1;
static int g_counted[C_KINDS];
static long g_fail_at = 0, g_count = 0;
static int g_sticky = 0, g_errno = EIO, g_mode = 0; /* mode 0 fail, 1 short, 2 eintr */
static int g_log_fd = -1;
static long g_eintr_toggle = 0;
static char *g_fd_path[MAX_FD]; /* tracked fds: the path they were opened from */
static char g_fd_acc[MAX_FD];   /* 'r' opened read-only, 'w' otherwise */

/* ---- the real functions ---- */
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_close)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);

static void split_list(const char *env, char **out, int *n, char sep) {
    const char *s = getenv(env);
    if (!s || !*s) return;
    char *copy = strdup(s);
    for (char *tok = copy; tok && *n < MAX_PATTERNS;) {
        char *next = strchr(tok, sep);
        if (next) *next++ = 0;
        if (*tok) out[(*n)++] = tok;
        tok = next;
    }
}

static int parse_errno(const char *s) {
    static const struct { const char *name; int value; } names[] = {
        {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EDQUOT", EDQUOT}, {"EFBIG", EFBIG},
        {"EROFS", EROFS},   {"EINTR", EINTR}, {"EACCES", EACCES}};
    if (!s || !*s) return EIO;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) return names[i].value;
    int v = atoi(s);
    return v > 0 ? v : EIO;
}

static const char *errno_name(int e) {
    switch (e) {
    case ENOSPC: return "ENOSPC";
    case EIO: return "EIO";
    case EDQUOT: return "EDQUOT";
    case EFBIG: return "EFBIG";
    case EROFS: return "EROFS";
    case EINTR: return "EINTR";
    case EACCES: return "EACCES";
    }
    return "E?";
}

static void init(void) {
    if (g_inited) return;
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_pread = dlsym(RTLD_NEXT, "pread");
    real_pread64 = dlsym(RTLD_NEXT, "pread64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_close = dlsym(RTLD_NEXT, "close");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
    split_list("IOFAIL_MATCH", g_match, &g_nmatch, ':');
    split_list("IOFAIL_EXACT", g_exact, &g_nexact, ':');
    g_arm = getenv("IOFAIL_ARM");
    if (g_arm && !*g_arm) g_arm = NULL;
    g_armed = g_arm == NULL;
    const char *calls = getenv("IOFAIL_CALLS");
    for (int k = 0; k < C_KINDS; k++) {
        if (!calls || !*calls) {
            g_counted[k] = k != C_PREAD;
            continue;
        }
        const char *p = strstr(calls, kind_names[k]);
        size_t len = strlen(kind_names[k]);
        g_counted[k] = 0;
        while (p) { /* whole words of the comma-separated list only */
            if ((p == calls || p[-1] == ',') && (p[len] == 0 || p[len] == ',')) {
                g_counted[k] = 1;
                break;
            }
            p = strstr(p + 1, kind_names[k]);
        }
    }
    const char *s = getenv("IOFAIL_FAIL_AT");
    g_fail_at = s ? atol(s) : 0;
    s = getenv("IOFAIL_STICKY");
    g_sticky = s && *s == '1';
    g_errno = parse_errno(getenv("IOFAIL_ERRNO"));
    s = getenv("IOFAIL_MODE");
    g_mode = s && !strcmp(s, "short") ? 1 : s && !strcmp(s, "eintr") ? 2 : 0;
    s = getenv("IOFAIL_LOG");
    if (s && *s) g_log_fd = (int)syscall(SYS_openat, AT_FDCWD, s,
                                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    g_inited = 1;
}

static int path_tracked(const char *path) {
    if (!path) return 0;
    for (int i = 0; i < g_nmatch; i++)
        if (strstr(path, g_match[i])) return 1;
    for (int i = 0; i < g_nexact; i++)
        if (!strcmp(path, g_exact[i])) return 1;
    return 0;
}

static void log_call(long n, int kind, char acc, const char *path, int failed_errno) {
    if (g_log_fd < 0) return;
    char line[1200];
    int len;
    if (failed_errno)
        len = snprintf(line, sizeof line, "%ld %s %c FAIL-%s %s\n", n, kind_names[kind], acc,
                       errno_name(failed_errno), path ? path : "?");
    else
        len = snprintf(line, sizeof line, "%ld %s %c ok %s\n", n, kind_names[kind], acc,
                       path ? path : "?");
    if (len > (int)sizeof line - 1) len = (int)sizeof line - 1;
    if (len > 0) (void)syscall(SYS_write, g_log_fd, line, (size_t)len);
}

/* Decides the fate of one call: 0 = pass it on, else the errno to fail it with. Counts it when
 * it is tracked and of a counted kind. */
static int decide(int kind, const char *path, char acc, int tracked) {
    int fail = 0;
    pthread_mutex_lock(&g_lock);
    init();
    if (!g_armed && kind == C_OPEN && path && g_arm && strstr(path, g_arm)) g_armed = 1;
    if (tracked && g_armed && g_counted[kind]) {
        long n = ++g_count;
        if (g_mode == 0 && g_fail_at > 0 && (n == g_fail_at || (g_sticky && n > g_fail_at)))
            fail = g_errno;
        if (g_mode == 2 && (kind == C_WRITE || kind == C_PWRITE || kind == C_PREAD) &&
            (g_eintr_toggle++ % 2) == 0)
            fail = EINTR;
        log_call(n, kind, acc, path, fail);
    }
    pthread_mutex_unlock(&g_lock);
    return fail;
}

static const char *fd_path(int fd) {
    return fd >= 0 && fd < MAX_FD ? g_fd_path[fd] : NULL;
}
static char fd_acc(int fd) { return fd >= 0 && fd < MAX_FD && g_fd_acc[fd] ? g_fd_acc[fd] : '-'; }

static void remember_fd(int fd, const char *path, int flags) {
    if (fd < 0 || fd >= MAX_FD) return;
    pthread_mutex_lock(&g_lock);
    free(g_fd_path[fd]);
    g_fd_path[fd] = strdup(path);
    g_fd_acc[fd] = (flags & O_ACCMODE) == O_RDONLY ? 'r' : 'w';
    pthread_mutex_unlock(&g_lock);
}

static void forget_fd(int fd) {
    if (fd < 0 || fd >= MAX_FD) return;
    pthread_mutex_lock(&g_lock);
    free(g_fd_path[fd]);
    g_fd_path[fd] = NULL;
    g_fd_acc[fd] = 0;
    pthread_mutex_unlock(&g_lock);
}

/* ---- the wrappers ---- */

/* Opens through the system call itself (what libc's open does on Linux). */
static int do_open(int dirfd, const char *path, int flags, mode_t mode) {
    pthread_mutex_lock(&g_lock);
    init();
    pthread_mutex_unlock(&g_lock);
    int tracked = path_tracked(path);
    int e = decide(C_OPEN, path, (flags & O_ACCMODE) == O_RDONLY ? 'r' : 'w', tracked);
    if (e) {
        errno = e;
        return -1;
    }
    int fd = (int)syscall(SYS_openat, dirfd, path, flags, mode);
    if (fd >= 0 && tracked) remember_fd(fd, path, flags);
    return fd;
}

#define OPEN_MODE(flags, mode)                                  \
    mode_t mode = 0;                                            \
    if ((flags) & (O_CREAT | O_TMPFILE)) {                      \
        va_list ap;                                             \
        va_start(ap, flags);                                    \
        mode = (mode_t)va_arg(ap, int);                         \
        va_end(ap);                                             \
    }

int open(const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    return do_open(AT_FDCWD, path, flags, mode);
}
int open64(const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    return do_open(AT_FDCWD, path, flags, mode);
}
int openat(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    return do_open(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    return do_open(dirfd, path, flags, mode);
}
int __open_2(const char *path, int flags) { return do_open(AT_FDCWD, path, flags, 0); }
int __open64_2(const char *path, int flags) { return do_open(AT_FDCWD, path, flags, 0); }

static ssize_t do_write(int kind, int fd, const void *buf, size_t n, off_t off) {
    const char *p = fd_path(fd);
    int e = decide(kind, p, fd_acc(fd), p != NULL);
    if (e) {
        errno = e;
        return -1;
    }
    if (p && g_mode == 1 && n > 1) n /= 2;
    if (kind == C_WRITE) return real_write(fd, buf, n);
    return real_pwrite(fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n) {
    if (!g_inited) {
        pthread_mutex_lock(&g_lock);
        init();
        pthread_mutex_unlock(&g_lock);
    }
    return do_write(C_WRITE, fd, buf, n, 0);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    if (!g_inited) {
        pthread_mutex_lock(&g_lock);
        init();
        pthread_mutex_unlock(&g_lock);
    }
    return do_write(C_PWRITE, fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    if (!g_inited) {
        pthread_mutex_lock(&g_lock);
        init();
        pthread_mutex_unlock(&g_lock);
    }
    const char *p = fd_path(fd);
    int e = decide(C_PREAD, p, fd_acc(fd), p != NULL);
    if (e) {
        errno = e;
        return -1;
    }
    return real_pread(fd, buf, n, off);
}
ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }

static int do_sync(int kind, int fd) {
    pthread_mutex_lock(&g_lock);
    init();
    pthread_mutex_unlock(&g_lock);
    const char *p = fd_path(fd);
    int e = decide(kind, p, fd_acc(fd), p != NULL);
    if (e) {
        errno = e;
        return -1;
    }
    return kind == C_FSYNC ? real_fsync(fd) : real_fdatasync(fd);
}
int fsync(int fd) { return do_sync(C_FSYNC, fd); }
int fdatasync(int fd) { return do_sync(C_FDATASYNC, fd); }

int close(int fd) {
    pthread_mutex_lock(&g_lock);
    init();
    pthread_mutex_unlock(&g_lock);
    const char *p = fd_path(fd);
    int e = decide(C_CLOSE, p, fd_acc(fd), p != NULL);
    forget_fd(fd);
    int rc = real_close(fd); /* the descriptor is released even when the call "fails" (Linux) */
    if (e) {
        errno = e;
        return -1;
    }
    return rc;
}

static int do_rename(const char *from, const char *to) {
    pthread_mutex_lock(&g_lock);
    init();
    pthread_mutex_unlock(&g_lock);
    int tracked = path_tracked(from) || path_tracked(to);
    int e = decide(C_RENAME, to, '-', tracked);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}
int rename(const char *from, const char *to) {
    int rc = do_rename(from, to);
    return rc ? rc : real_rename(from, to);
}
int renameat(int fd1, const char *from, int fd2, const char *to) {
    int rc = do_rename(from, to);
    return rc ? rc : real_renameat(fd1, from, fd2, to);
}
int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned int flags) {
    int rc = do_rename(from, to);
    return rc ? rc : real_renameat2(fd1, from, fd2, to, flags);
}
