/* core/common.h — the error conventions every module shares (docs/design.md §7), checked allocation
 * and the clock. Part of src/core (with rng.h and tokens.h): used by all, uses nothing.
 *
 * Two kinds of error:
 *  - programmer errors and device failures: CHECK(cond, hint) prints the expression, file:line and
 *    a hint, then aborts;
 *  - input errors (config, corpus, SentencePiece model, checkpoint, command line): functions return
 *    a Status (0 = OK, negative = error) and fill an Err with a message that names the file, line
 *    or key, what was wrong and what to do. Only main() turns a Status into an exit code.
 */
#ifndef TRAINER_COMMON_H
#define TRAINER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int Status; /* 0 = OK, < 0 = error (message in Err) */
#define STATUS_OK 0
#define STATUS_ERR (-1)

/* Error message buffer filled by a failing function. */
typedef struct {
    char msg[2048];
} Err;

/* Formats msg into err (if err is non-NULL; truncated to 2047 bytes) and returns STATUS_ERR, so
 * that callers can write `return err_set(err, "file %s: ...", path);`. No errors of its own.
 * Source: —. */
Status err_set(Err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the message already in err with a formatted context and ": " ("while loading X: ...",
 * truncated to fit err->msg); returns STATUS_ERR; err NULL: nothing. No errors. Source: —. */
Status err_prefix(Err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A programmer error or resource failure: when cond is false, prints "CHECK failed: <cond> at
 * file:line (<hint>)" on stderr and aborts. hint: a C string saying what to do. Source: —. */
#define CHECK(cond, hint)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "CHECK failed: %s at %s:%d (%s)\n", #cond, __FILE__, __LINE__, \
                    (hint));                                                               \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* malloc / calloc / realloc / strdup on the host (n in bytes; 0 is treated as 1) that CHECK-abort
 * with "out of memory" instead of returning NULL (a resource error, not an input error).
 * Source: —. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Appends printf-formatted text to the NUL-terminated string buf of capacity n bytes; the result
 * stays NUL-terminated and is silently truncated at n − 1 bytes (messages, not data). No errors.
 * Source: —. */
void str_appendf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A list of whole numbers in [0, limit] separated by commas or blanks ("0,1,2", "1 2 3") into
 * out[0..*n), at most max, each at most once. Returns 0, or -1 when s is not such a list (empty,
 * another character, a number over limit, a repeat, more than max). Source: —. */
int parse_u64_list(const char *s, unsigned long long *out, int max, int *n,
                   unsigned long long limit);

/* Seconds (double) on the monotonic clock, from an arbitrary origin: only differences mean
 * anything. No errors. Source: —. */
double now_seconds(void);
/* Seconds (double) of CPU time the process has used, all its threads together
 * (CLOCK_PROCESS_CPUTIME_ID): a one-thread benchmark's clock on a machine other jobs share.
 * Only differences mean anything. No errors. Source: POSIX clock_gettime(2). */
double cpu_seconds(void);

/* 1 when path names a regular file (path_is_file) or a folder (path_is_dir), following
 * symbolic links; 0 otherwise, a missing path included. No errors. Source: POSIX stat(2). */
int path_is_file(const char *path);
int path_is_dir(const char *path);

/* mkdir -p: creates the folder path and every missing folder above it (mode 0777 before the
 * umask). Errors: a path of 1024 bytes or more, a part that cannot be created, or a path that
 * exists but is not a folder ("cannot create folder X: <reason>"; the caller prefixes which
 * setting named it). Source: POSIX mkdir(2). */
Status make_dirs(const char *path, Err *err);

/* Writes n bytes to path atomically: into path.tmp.<pid>, flushed to disk (fsync), then renamed
 * over path, then the folder synced (best effort); a failure leaves path as it was and no
 * temporary file. Errors: "cannot write X: <reason>; check that its folder is writable ..."
 * (create, write, sync, close or rename).
 * Source: POSIX rename(2). */
Status write_file_atomic(const char *path, const void *data, size_t n, Err *err);
/* fsync of the folder holding path (its directory entry, after a rename into it): 0, or -1 with
 * errno set. A file system that cannot sync a folder (EINVAL) counts as success. Source: POSIX
 * fsync(2). */
int fsync_parent_dir(const char *path);
/* The temporary file that an atomic write of path goes through: "<path>.tmp.<pid>" (malloc'd;
 * the caller frees). Every atomic writer names its file so (write_file_atomic, checkpoints, the
 * encoded-corpus cache): a run's start-up removes such files whose pid is dead. No errors. */
char *temp_path_for(const char *path);
/* 1 if the directory entry name is "<stem>.tmp.<pid>", temp_path_for's name for a file or folder
 * named stem (any stem when stem is NULL), and no process with that pid runs: what a killed
 * writer left behind. A pid equal to the caller's counts as dead (a sweep runs before the
 * caller writes a temporary of its own). No errors. Source: POSIX kill(2) with signal 0. */
int temp_name_stale(const char *name, const char *stem);

#ifdef __cplusplus
}
#endif

#endif
