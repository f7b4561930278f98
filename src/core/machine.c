/* machine.c — the machine in words (machine.h). */
#include "core/machine.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The value after "key<blanks>:" on a /proc/cpuinfo line, or NULL when the line is another key. */
static const char *cpuinfo_value(const char *line, const char *key) {
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0) return NULL;
    const char *p = line + k;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != ':') return NULL;
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

const char *machine_cpu(char *buf, size_t n) {
    char name[256] = "", family[32] = "", model[32] = "", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        const char *v;
        if (!strcmp(line, "\n")) break; /* the first processor's block is enough */
        if ((v = cpuinfo_value(line, "model name")))
            snprintf(name, sizeof name, "%.*s", (int)strcspn(v, "\r\n"), v);
        else if ((v = cpuinfo_value(line, "cpu family")))
            snprintf(family, sizeof family, "%.*s", (int)strcspn(v, "\r\n"), v);
        else if ((v = cpuinfo_value(line, "model")))
            snprintf(model, sizeof model, "%.*s", (int)strcspn(v, "\r\n"), v);
    }
    if (f) fclose(f);
    if (!name[0]) {
        struct utsname u;
        snprintf(buf, n, "unknown %s CPU", uname(&u) == 0 ? u.machine : "");
    } else if (family[0] && model[0]) {
        snprintf(buf, n, "%s (family %s, model %s)", name, family, model);
    } else {
        snprintf(buf, n, "%s", name);
    }
    return buf;
}

const char *machine_utc_now(char *buf, size_t n) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

double machine_peak_rss_mb(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_maxrss / 1024.0;
}

int machine_run_forked(void (*fn)(const void *arg, void *out), const void *arg, void *out,
                       size_t n) {
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        fn(arg, out);
        size_t done = 0;
        while (done < n) {
            ssize_t w = write(fd[1], (const char *)out + done, n - done);
            if (w <= 0) _exit(1);
            done += (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd[0], (char *)out + got, n - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return got == n && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}
