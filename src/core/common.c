/* common.c — err_set / err_prefix, the aborting allocators, the monotonic clock, mkdir -p and
 * the atomic file write (common.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/common.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

Status err_set(Err *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return STATUS_ERR;
}

Status err_prefix(Err *err, const char *fmt, ...) {
    if (err) {
        char head[1024], old[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(head, sizeof head, fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof old);
        size_t k = strlen(head);
        if (k > sizeof err->msg - 3) k = sizeof err->msg - 3;
        memcpy(err->msg, head, k);
        memcpy(err->msg + k, ": ", 2);
        size_t room = sizeof err->msg - k - 3, n = strnlen(old, sizeof old);
        if (n > room) n = room;
        memcpy(err->msg + k + 2, old, n);
        err->msg[k + 2 + n] = 0;
    }
    return STATUS_ERR;
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL, "out of memory");
    return p;
}

void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    CHECK(p != NULL, "out of memory");
    return p;
}

void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    CHECK(p != NULL, "out of memory");
    return p;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

void str_appendf(char *buf, size_t n, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

Status make_dirs(const char *path, Err *err) {
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return err_set(err, "cannot create folder %.60s...: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST)
            return err_set(err, "cannot create folder %s: %s", buf, strerror(errno));
        *p = c;
        if (!c) break;
    }
    struct stat sb;
    if (stat(path, &sb) || !S_ISDIR(sb.st_mode))
        return err_set(err, "cannot create folder %s: a file of that name exists", path);
    return STATUS_OK;
}

char *temp_path_for(const char *path) {
    size_t n = strlen(path) + 32;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

int temp_name_stale(const char *name, const char *stem) {
    const char *t;
    if (stem) {
        size_t n = strlen(stem);
        if (strncmp(name, stem, n) || strncmp(name + n, ".tmp.", 5)) return 0;
        t = name + n;
    } else if (!(t = strstr(name, ".tmp."))) {
        return 0;
    }
    char *end;
    long pid = strtol(t + 5, &end, 10);
    if (pid <= 0 || *end) return 0; /* not <stem>.tmp.<pid>: not ours */
    if (pid == (long)getpid()) return 1;
    return !(kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

Status write_file_atomic(const char *path, const void *data, size_t n, Err *err) {
    char *tmp = temp_path_for(path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = fd >= 0;
    for (size_t done = 0; ok && done < n;) {
        ssize_t w = write(fd, (const char *)data + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        ok = w > 0;
        if (ok) done += (size_t)w;
    }
    ok = ok && fsync(fd) == 0;
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && ok) ok = 0, saved = errno;
    if (ok && rename(tmp, path) != 0) ok = 0, saved = errno;
    if (!ok) {
        if (fd >= 0) unlink(tmp);
        free(tmp);
        return err_set(err, "cannot write %s: %s; check that its folder is writable and has "
                       "free space", path, strerror(saved));
    }
    free(tmp);
    fsync_parent_dir(path); /* best effort: the file itself is durable */
    return STATUS_OK;
}

int fsync_parent_dir(const char *path) {
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else strcpy(dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    int r = fsync(fd) == 0 || errno == EINVAL ? 0 : -1;
    int saved = errno;
    close(fd);
    errno = saved;
    return r;
}

int parse_u64_list(const char *s, unsigned long long *out, int max, int *n,
                   unsigned long long limit) {
    *n = 0;
    const char *p = s;
    while (*p == ' ' || *p == ',') p++;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p) || *n == max) return -1;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || v > limit) return -1;
        for (int i = 0; i < *n; i++)
            if (out[i] == v) return -1;
        out[(*n)++] = v;
        p = end;
        if (*p && *p != ',' && *p != ' ') return -1;
        while (*p == ' ' || *p == ',') p++;
    }
    return *n > 0 ? 0 : -1;
}

int path_is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int path_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}
