/* trainer_run.h — helpers for the tests that run the trainer binary (tests/slow/test_*.c): slices of
 * Multi30k in a temporary folder, the command line of a tiny training run
 * (tests/fixtures/tiny.ini), starting / waiting for / killing the trainer with its output in a
 * log file, a whole `trainer train` run (tr_train), reading metrics.jsonl and the step of a
 * checkpoint. Header-only: every function is static.
 *
 * The binary is $TRAINER_BIN (CTest sets it), else $TRAINER_BUILD_DIR/trainer, else
 * build/trainer. Tests run with the repository root as working directory.
 * Every training run gets train.threads = 1: one thread is deterministic, and two tests running
 * side by side (ctest -j2) on a 2-core CI machine do not oversubscribe it.
 */
#ifndef TRAINER_TESTS_TRAINER_RUN_H
#define TRAINER_TESTS_TRAINER_RUN_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"
#include "train/checkpoint.h"

/* every helper is static; unused ones must not warn */
#define TR_FN static __attribute__((unused))

#define TR_CONFIG "tests/fixtures/tiny.ini"
#define TR_DATA "data/multi30k"

/* ---- time ---- */

TR_FN double tr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

TR_FN void tr_sleep(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- paths and files ---- */

/* snprintf into one of a ring of static buffers (a few results may be alive at once). */
TR_FN const char *tr_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
TR_FN const char *tr_fmt(const char *fmt, ...) {
    static char bufs[32][4096];
    static int k = 0;
    char *b = bufs[k++ & 31];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, 4096, fmt, ap);
    va_end(ap);
    return b;
}

TR_FN int tr_exists(const char *path) { return access(path, F_OK) == 0; }

TR_FN long tr_file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* The trainer binary; exits 1 (a failure, not a skip) when it cannot be found. */
TR_FN const char *tr_bin(void) {
    static char buf[4096];
    const char *b = getenv("TRAINER_BIN");
    if (b && *b) snprintf(buf, sizeof buf, "%s", b);
    else if ((b = getenv("TRAINER_BUILD_DIR")) && *b) snprintf(buf, sizeof buf, "%s/trainer", b);
    else snprintf(buf, sizeof buf, "build/trainer");
    if (access(buf, X_OK) != 0) {
        fprintf(stderr, "FAIL: trainer binary '%s' not found or not executable (set TRAINER_BIN; "
                "build the 'trainer' target)\n", buf);
        exit(1);
    }
    return buf;
}

/* Exits 77 (skipped) when the Multi30k files are not there (data/get_multi30k.sh fetches them);
 * exits 1 when the tiny config is missing (the test runs from the wrong folder). */
TR_FN void tr_require_data(const char *test) {
    static const char *f[] = {TR_DATA "/train.de.gz", TR_DATA "/train.en.gz", TR_DATA "/val.de.gz",
                              TR_DATA "/val.en.gz"};
    for (int i = 0; i < 4; i++)
        if (!tr_exists(f[i])) {
            printf("%s: SKIP: %s is missing; run data/get_multi30k.sh first\n", test, f[i]);
            exit(77);
        }
    if (!tr_exists(TR_CONFIG)) {
        fprintf(stderr, "%s: FAIL: %s not found; run the test from the repository root\n", test,
                TR_CONFIG);
        exit(1);
    }
}

/* Copies the first max_lines lines of a gzip text file into a plain file. Returns the number of
 * lines written, or -1. */
TR_FN long tr_gz_head(const char *gz_path, const char *out_path, long max_lines) {
    gzFile g = gzopen(gz_path, "rb");
    if (!g) return -1;
    FILE *o = fopen(out_path, "w");
    if (!o) {
        gzclose(g);
        return -1;
    }
    char buf[8192];
    long n = 0;
    while (n < max_lines && gzgets(g, buf, sizeof buf)) {
        size_t len = strlen(buf);
        fputs(buf, o);
        if (len && buf[len - 1] == '\n') n++;
        else if (gzeof(g)) {
            fputc('\n', o);
            n++;
        }
    }
    gzclose(g);
    return fclose(o) == 0 ? n : -1;
}

/* Writes work/train.{de,en} (the first ntrain lines of the training data) and work/val.{de,en}
 * (the first nval lines of the validation data). Exits 1 on failure. */
TR_FN void tr_make_slices(const char *work, long ntrain, long nval) {
    static const char *lang[2] = {"de", "en"};
    for (int i = 0; i < 2; i++) {
        long a = tr_gz_head(tr_fmt(TR_DATA "/train.%s.gz", lang[i]),
                            tr_fmt("%s/train.%s", work, lang[i]), ntrain);
        long b = tr_gz_head(tr_fmt(TR_DATA "/val.%s.gz", lang[i]),
                            tr_fmt("%s/val.%s", work, lang[i]), nval);
        if (a != ntrain || b != nval) {
            fprintf(stderr, "FAIL: could not write the data slices into %s (%ld/%ld train, "
                    "%ld/%ld val lines of %s)\n", work, a, ntrain, b, nval, lang[i]);
            exit(1);
        }
    }
}

/* Prints the last max_lines lines of a log file to stderr (for a failing step). */
TR_FN void tr_print_tail(const char *log, int max_lines) {
    size_t n = 0;
    char *t = test_read_file(log, &n);
    if (!t) return;
    size_t start = n;
    int lines = 0;
    while (start > 0) {
        if (t[start - 1] == '\n' && start != n && ++lines >= max_lines) break;
        start--;
    }
    fprintf(stderr, "---- last lines of %s ----\n%s---- end ----\n", log, t + start);
    free(t);
}

/* The last non-empty line of a file (static buffer), or "" */
TR_FN const char *tr_last_line(const char *path) {
    static char buf[8192];
    buf[0] = 0;
    size_t n = 0;
    char *t = test_read_file(path, &n);
    if (!t) return buf;
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r')) t[--n] = 0;
    char *p = strrchr(t, '\n');
    snprintf(buf, sizeof buf, "%s", p ? p + 1 : t);
    free(t);
    return buf;
}

/* Number of lines in a file (-1 if unreadable). */
TR_FN long tr_count_lines(const char *path) {
    size_t n = 0;
    char *t = test_read_file(path, &n);
    if (!t) return -1;
    long c = 0;
    for (size_t i = 0; i < n; i++) c += t[i] == '\n';
    if (n && t[n - 1] != '\n') c++;
    free(t);
    return c;
}

/* 1 if path starts with the 8-byte PNG signature. */
TR_FN int tr_file_is_png(const char *path) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char b[8];
    size_t r = fread(b, 1, 8, f);
    fclose(f);
    return r == 8 && memcmp(b, sig, 8) == 0;
}

TR_FN int tr_file_contains(const char *path, const char *needle) {
    char *t = test_read_file(path, NULL);
    int r = t && strstr(t, needle) != NULL;
    free(t);
    return r;
}

/* ---- command lines ---- */

typedef struct {
    char *v[128];
    int n;
} TrArgv;

/* Appends the text of fmt and ap (at most 4095 bytes) to a; exits 1 past 127 arguments. */
TR_FN void tr_varg(TrArgv *a, const char *fmt, va_list ap) {
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (a->n >= 127) {
        fprintf(stderr, "FAIL: too many arguments\n");
        exit(1);
    }
    a->v[a->n++] = strdup(buf);
    a->v[a->n] = NULL;
}

TR_FN void tr_arg(TrArgv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TR_FN void tr_arg(TrArgv *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tr_varg(a, fmt, ap);
    va_end(ap);
}

/* Appends "--set" and the formatted KEY=VALUE (at most 4095 bytes) to a, as tr_arg does: exits
 * 1 past 127 arguments. */
TR_FN void tr_set(TrArgv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TR_FN void tr_set(TrArgv *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tr_arg(a, "--set");
    tr_varg(a, fmt, ap);
    va_end(ap);
}

TR_FN void tr_argv_free(TrArgv *a) {
    for (int i = 0; i < a->n; i++) free(a->v[i]);
    a->n = 0;
    a->v[0] = NULL;
}

/* `trainer train --config CONFIG` (a fixture of tiny.ini's form) with the data slices of work/,
 * save_dir and its own cache folder save_dir/cache, one thread. Append more --set options with
 * tr_set (and --resume with tr_arg). */
TR_FN void tr_train_argv_config(TrArgv *a, const char *config, const char *work,
                                const char *save_dir) {
    a->n = 0;
    tr_arg(a, "%s", tr_bin());
    tr_arg(a, "train");
    tr_arg(a, "--config");
    tr_arg(a, "%s", config);
    tr_set(a, "data.train_src=%s/train.de", work);
    tr_set(a, "data.train_tgt=%s/train.en", work);
    tr_set(a, "data.val_src=%s/val.de", work);
    tr_set(a, "data.val_tgt=%s/val.en", work);
    tr_set(a, "train.save_dir=%s", save_dir);
    tr_set(a, "data.cache_dir=%s/cache", save_dir);
    tr_set(a, "train.threads=1");
}

/* tr_train_argv_config with tests/fixtures/tiny.ini (TR_CONFIG). */
TR_FN void tr_train_argv(TrArgv *a, const char *work, const char *save_dir) {
    tr_train_argv_config(a, TR_CONFIG, work, save_dir);
}

TR_FN void tr_print_argv(const char *what, char *const *argv) {
    printf("%s:", what);
    for (int i = 0; argv[i]; i++) printf(" %s", argv[i]);
    printf("\n");
    fflush(stdout);
}

/* ---- processes ---- */

/* Starts argv[0] with stdout to out_log and stderr to err_log (the same file if err_log is NULL;
 * files truncated first unless append) and stdin from stdin_path (or /dev/null). Returns the pid;
 * exits 1 if fork fails. */
TR_FN pid_t tr_spawn2(char *const argv[], const char *out_log, const char *err_log, int append,
                      const char *stdin_path) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
        int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
        int out = open(out_log, flags, 0644);
        int er = err_log ? open(err_log, flags, 0644) : dup(out);
        if (in < 0 || out < 0 || er < 0) _exit(126);
        dup2(in, 0);
        dup2(out, 1);
        dup2(er, 2);
        close(in);
        close(out);
        close(er);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* tr_spawn2 with stdout and stderr into one log. */
TR_FN pid_t tr_spawn(char *const argv[], const char *log, int append, const char *stdin_path) {
    return tr_spawn2(argv, log, NULL, append, stdin_path);
}

/* Waits for pid at most timeout_s seconds. Returns its exit code, 128 + the signal number when a
 * signal ended it, or -1 on timeout (the process is then killed with SIGKILL and reaped). */
TR_FN int tr_wait(pid_t pid, double timeout_s) {
    double t_end = tr_now() + timeout_s;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
            return -2;
        }
        if (r < 0 && errno != EINTR) return -2;
        if (tr_now() > t_end) {
            fprintf(stderr, "timeout: process %d ran longer than %.0f s; killing it\n", (int)pid,
                    timeout_s);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        tr_sleep(0.005);
    }
}

/* Runs argv to completion (see tr_spawn, tr_wait). */
TR_FN int tr_run(char *const argv[], const char *log, const char *stdin_path, double timeout_s) {
    return tr_wait(tr_spawn(argv, log, 0, stdin_path), timeout_s);
}

/* Runs `trainer train` (tr_train_argv: tiny.ini on the slices of work, save_dir, one thread) with
 * the extra arguments that follow log_out (const char *, ended by NULL) and waits for it at most
 * timeout_s seconds. The log (stdout and stderr) is work/runNN.log, NN counting this program's
 * calls from 01; *log_out, unless log_out is NULL, gets its path (test_strdup: valid until the
 * program exits). Prints the command line as "run NN:", then the exit code and the seconds it
 * took, and the log's last 15 lines (stderr) when the exit code is not 0. Returns the exit code
 * (tr_wait's: -1 on timeout). */
TR_FN int tr_train(const char *work, const char *save_dir, double timeout_s,
                   const char **log_out, ...) {
    static int run_no = 0;
    TrArgv a;
    tr_train_argv(&a, work, save_dir);
    va_list ap;
    va_start(ap, log_out);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) tr_arg(&a, "%s", s);
    va_end(ap);
    const char *log = test_strdup(tr_fmt("%s/run%02d.log", work, ++run_no));
    char cmd[64];
    snprintf(cmd, sizeof cmd, "run %d", run_no);
    tr_print_argv(cmd, a.v);
    double t0 = tr_now();
    int rc = tr_run(a.v, log, NULL, timeout_s);
    printf("  -> exit %d in %.1f s (log %s)\n", rc, tr_now() - t0, log);
    if (rc != 0) tr_print_tail(log, 15);
    tr_argv_free(&a);
    if (log_out) *log_out = log;
    return rc;
}

/* Runs `trainer ARGS...` (the arguments after timeout_s, ended by NULL) with standard input from
 * the file in (NULL: /dev/null), standard output into work/cmdNN.out and standard error into
 * work/cmdNN.err (NN counting this program's calls from 01; their paths into *out and *err,
 * test_strdup'ed), at most timeout_s seconds. Prints the command line, and stderr's last lines
 * when the exit code is not 0. Returns the exit code (tr_wait's: -1 on timeout). */
TR_FN int tr_cmd(const char *work, const char *in, const char **out, const char **err,
                 double timeout_s, ...) {
    static int cmd_no = 0;
    TrArgv a = {.n = 0};
    tr_arg(&a, "%s", tr_bin());
    va_list ap;
    va_start(ap, timeout_s);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) tr_arg(&a, "%s", s);
    va_end(ap);
    ++cmd_no;
    *out = test_strdup(tr_fmt("%s/cmd%02d.out", work, cmd_no));
    *err = test_strdup(tr_fmt("%s/cmd%02d.err", work, cmd_no));
    char what[32];
    snprintf(what, sizeof what, "cmd %d", cmd_no);
    tr_print_argv(what, a.v);
    int rc = tr_wait(tr_spawn2(a.v, *out, *err, 0, in), timeout_s);
    if (rc) tr_print_tail(*err, 5);
    tr_argv_free(&a);
    return rc;
}

/* The step a checkpoint holds (checkpoint_load on the CPU), or -1 when it does not load: then
 * checkpoint_load's message goes into msg[0..n) if msg is not NULL, else to stderr. */
TR_FN long tr_ckpt_step(const char *path, char *msg, size_t n) {
    Model m;
    Config cfg;
    Spm *spm;
    TrainState st;
    Err err;
    if (checkpoint_load(path, &m, &cfg, &spm, &st, -1, &err)) {
        if (msg) snprintf(msg, n, "%s", err.msg);
        else fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    model_free(&m), spm_free(spm);
    return st.step;
}

/* ---- metrics.jsonl ---- */

typedef struct {
    long step;
    int epoch;
    char loss[64]; /* the text of the "loss" value, exactly as written (%.17g) */
    char lr[64];
} TrStep;

typedef struct {
    long step;
    int epoch;
    char ppl[64], bleu[64], chrf[64], lr[64];
} TrVal;

typedef struct {
    TrStep *steps;
    long n;
    TrVal *vals;
    long nval;
    long starts;    /* well-formed start lines (each start or resume; train/train.h) */
    long bad_lines; /* lines that are no well-formed start, train, val or avg line */
} TrMetrics;

/* Copies the raw text of "key": VALUE (up to ',' or '}') into out; returns 1 if found. */
TR_FN int tr_json_raw(const char *line, const char *key, char *out, size_t n) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    while (*p == ' ') p++;
    size_t k = 0;
    while (*p && *p != ',' && *p != '}' && *p != '\n' && k + 1 < n) out[k++] = *p++;
    while (k > 0 && out[k - 1] == ' ') k--;
    out[k] = 0;
    return k > 0;
}

/* Parses "key": <number> as a double; returns 1 if it is a complete finite number. */
TR_FN int tr_json_number(const char *line, const char *key, double *v) {
    char raw[128], *end;
    if (!tr_json_raw(line, key, raw, sizeof raw)) return 0;
    errno = 0;
    double d = strtod(raw, &end);
    if (end == raw || *end || errno) return 0;
    *v = d;
    return d == d && d - d == 0; /* finite */
}

TR_FN void tr_metrics_free(TrMetrics *m) {
    free(m->steps);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Reads metrics.jsonl; returns 0, or -1 when the file cannot be read. */
TR_FN int tr_metrics_read(const char *path, TrMetrics *m) {
    memset(m, 0, sizeof *m);
    char *t = test_read_file(path, NULL);
    if (!t) return -1;
    long cap = 1024, vcap = 16;
    m->steps = malloc(sizeof *m->steps * cap);
    m->vals = malloc(sizeof *m->vals * vcap);
    char *save = NULL;
    for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char type[32];
        double d;
        if (!tr_json_raw(line, "type", type, sizeof type) || line[0] != '{') {
            m->bad_lines++;
            continue;
        }
        if (!strcmp(type, "\"train\"")) {
            TrStep s;
            memset(&s, 0, sizeof s);
            if (!tr_json_number(line, "step", &d)) { m->bad_lines++; continue; }
            s.step = (long)d;
            if (!tr_json_number(line, "epoch", &d)) { m->bad_lines++; continue; }
            s.epoch = (int)d;
            if (!tr_json_raw(line, "loss", s.loss, sizeof s.loss) ||
                !tr_json_raw(line, "lr", s.lr, sizeof s.lr) ||
                !tr_json_number(line, "loss", &d)) {
                m->bad_lines++;
                continue;
            }
            if (m->n == cap) m->steps = realloc(m->steps, sizeof *m->steps * (cap *= 2));
            m->steps[m->n++] = s;
        } else if (!strcmp(type, "\"val\"")) {
            TrVal v;
            memset(&v, 0, sizeof v);
            if (!tr_json_number(line, "step", &d)) { m->bad_lines++; continue; }
            v.step = (long)d;
            if (!tr_json_number(line, "epoch", &d)) { m->bad_lines++; continue; }
            v.epoch = (int)d;
            if (!tr_json_raw(line, "val_ppl", v.ppl, sizeof v.ppl) ||
                !tr_json_raw(line, "val_bleu", v.bleu, sizeof v.bleu) ||
                !tr_json_raw(line, "val_chrf", v.chrf, sizeof v.chrf) ||
                !tr_json_raw(line, "lr", v.lr, sizeof v.lr)) {
                m->bad_lines++;
                continue;
            }
            if (m->nval == vcap) m->vals = realloc(m->vals, sizeof *m->vals * (vcap *= 2));
            m->vals[m->nval++] = v;
        } else if (!strcmp(type, "\"start\"")) {
            if (tr_json_number(line, "step", &d) && tr_json_number(line, "epoch", &d)) m->starts++;
            else m->bad_lines++;
        } else if (!strcmp(type, "\"avg\"")) {
            char bleu[64];
            if (!tr_json_number(line, "step", &d) ||
                !tr_json_raw(line, "val_bleu", bleu, sizeof bleu))
                m->bad_lines++;
        } else {
            m->bad_lines++;
        }
    }
    free(t);
    return 0;
}

/* The last train entry for step s, or NULL. */
TR_FN const TrStep *tr_metrics_step(const TrMetrics *m, long s) {
    for (long i = m->n - 1; i >= 0; i--)
        if (m->steps[i].step == s) return &m->steps[i];
    return NULL;
}

/* Checks that a line is one JSON object {"k": number or "string", ...} holding every key of
 * keys[] (NULL terminated) with a finite number; writes a reason into why. Returns 1 if so. */
TR_FN int tr_json_object_has_numbers(const char *line, const char *const *keys, char *why,
                                      size_t n) {
    size_t len = strlen(line);
    if (len < 2 || line[0] != '{' || line[len - 1] != '}') {
        snprintf(why, n, "not a JSON object: '%.200s'", line);
        return 0;
    }
    /* every "key": value pair must be a string key and a number value, or a string value
     * without escapes (eval's signatures) */
    const char *p = line + 1;
    while (*p && *p != '}') {
        while (*p == ' ') p++;
        if (*p != '"') break;
        const char *q = strchr(p + 1, '"');
        if (!q || q[1] != ':') {
            snprintf(why, n, "malformed key near '%.200s'", p);
            return 0;
        }
        char *end;
        errno = 0;
        const char *v = q + 2;
        while (*v == ' ') v++;
        if (*v == '"' && strchr(v + 1, '"') && !memchr(v + 1, '\\', strchr(v + 1, '"') - v - 1))
            end = strchr(v + 1, '"') + 1;
        else
            strtod(q + 2, &end);
        if (end == q + 2 || errno) {
            snprintf(why, n, "the value after %.*s is not a number", (int)(q - p + 1), p);
            return 0;
        }
        while (*end == ' ') end++;
        if (*end != ',' && *end != '}') {
            snprintf(why, n, "junk after the value of %.*s", (int)(q - p + 1), p);
            return 0;
        }
        p = *end == ',' ? end + 1 : end;
    }
    if (*p != '}' || p[1]) {
        snprintf(why, n, "malformed JSON object near '%.200s'", p);
        return 0;
    }
    for (int i = 0; keys[i]; i++) {
        double d;
        if (!tr_json_number(line, keys[i], &d)) {
            snprintf(why, n, "key '%s' missing or not a finite number", keys[i]);
            return 0;
        }
    }
    return 1;
}


/* argv of `trainer eval --checkpoint CKPT --src SRC --ref REF --json` (free with tr_argv_free). */
TR_FN void tr_eval_argv(TrArgv *a, const char *ckpt, const char *src, const char *ref) {
    tr_arg(a, "%s", tr_bin());
    tr_arg(a, "eval");
    tr_arg(a, "--checkpoint");
    tr_arg(a, "%s", ckpt);
    tr_arg(a, "--src");
    tr_arg(a, "%s", src);
    tr_arg(a, "--ref");
    tr_arg(a, "%s", ref);
    tr_arg(a, "--json");
}


/* the work folder's name from tr_begin_slices, held until the test exits */
static char *tr_work_name __attribute__((unused));

/* Start of a slow test: line-buffered stdout, skip (exit 77) without data/multi30k, a fresh
 * work folder (test_tmpdir) holding the first ntrain training and nval validation pairs
 * (tr_make_slices). Returns the folder's name (malloc'd once, valid until the test exits; the
 * caller does not free it) and the start time in *t_start. */
TR_FN char *tr_begin_slices(const char *test, double *t_start, long ntrain, long nval) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    *t_start = tr_now();
    tr_require_data(test);
    char *work = tr_work_name = strdup(test_tmpdir());
    printf("%s: working in %s (threads = 1)\n", test, work);
    tr_make_slices(work, ntrain, nval);
    return work;
}

/* tr_begin_slices with the 2000-pair training and 100-pair validation slices. */
TR_FN char *tr_begin(const char *test, double *t_start) {
    return tr_begin_slices(test, t_start, 2000, 100);
}

/* End of a slow test: prints the time and the verdict, and returns the exit code. The folder from
 * tr_begin (test_tmpdir) is removed at exit when the test passed, and kept and named when not. */
TR_FN int tr_finish(const char *test, double t_start) {
    printf("%s: %.1f s\n", test, tr_now() - t_start);
    return test_report(test);
}

#endif
