/* test_iofail.c — a full disk or an I/O error at ANY system call of a checkpoint save (docs/design.md
 * §8): the previous checkpoint stays byte-identical, no temporary file is left behind, and the
 * run ends with a message that names the checkpoint and the system error.
 *
 * Method (the way SQLite tests I/O errors): the trainer runs under the LD_PRELOAD shim
 * tests/faults/iofail.c ($IOFAIL_LIB, built by CMake), which counts the calls made on
 * <run>/last.ckpt*, and on the run folder itself, from the moment the temporary file is opened,
 * and makes call number N fail.
 *   0. A reference run (tiny config, 2000/100 Multi30k pairs, one thread) stops at
 *      train.max_steps = 2 and saves last.ckpt (the "previous checkpoint").
 *   1. Census: `--resume` to max_steps = 3 under the shim, nothing failing: the shim lists every
 *      call of the one save (open, write, pwrite, fsync, close, rename of the temporary file, the
 *      open/pread/close of its verification, the open/fsync/close of the folder).
 *   2. For N = 1 .. all of them with ENOSPC, and again with EIO (every call except the writes
 *      in the middle of the payload): the same resume with call N failing. Before the rename: exit status 1, the message (the log's last line) names
 *      <run>/last.ckpt and strerror, last.ckpt is byte-identical to the reference. At or after the
 *      rename (the folder's fsync): the new checkpoint is in place and loads (step 3) and a
 *      failure other than closing a read-only descriptor is still reported (exit 1). Closing a
 *      descriptor opened read-only (the verification's, the folder's) may fail harmlessly: the
 *      run may then succeed, and its new checkpoint must load. Never a temporary file left.
 *   3. The same sweep over the pread calls of the verification (EIO): each refused with
 *      "verifying the temporary file failed; nothing was replaced".
 *   4. A disk that stays full (every call from the first write on fails), then a plain --resume
 *      that must continue from the untouched checkpoint to step 3.
 *   5. Every write cut short (half of what was asked) and every other write/pread interrupted
 *      (EINTR): the save must succeed (retries) and the checkpoint load at step 3.
 * Prints, per system call, how many injected faults were handled.
 */
#include "trainer_run.h"
#include "train/checkpoint.h"

#define TIMEOUT 120.0
#define MAX_CALLS 4096

typedef struct {
    long n;
    char kind[16];
    char acc;         /* 'r' read-only descriptor, 'w' written, '-' rename */
    char result[32];
    char path[1024];
} Call;

static const char *g_work, *g_dir, *g_lib, *g_last;
static char *g_base, *g_base_metrics;
static size_t g_base_n, g_base_metrics_n;
static int g_run_no = 0;

/* Writes back the reference last.ckpt and metrics.jsonl. */
static void restore(void) {
    EXPECT(test_write_file(g_last, g_base, g_base_n) == 0, "cannot restore %s", g_last);
    EXPECT(test_write_file(tr_fmt("%s/metrics.jsonl", g_dir), g_base_metrics,
                           g_base_metrics_n) == 0, "cannot restore metrics.jsonl");
}

static void set_env(const char *k, const char *v) {
    if (v) setenv(k, v, 1);
    else unsetenv(k);
}

/* `trainer train --resume` to max_steps = 3 in g_dir, under the shim when fail_at >= 0 (0: count
 * only). Returns the exit code; the log's path in *log_out. */
static int run(long fail_at, const char *errname, const char *mode, const char *calls,
               int sticky, const char *call_log, const char **log_out) {
    TrArgv a;
    tr_train_argv(&a, g_work, g_dir);
    tr_set(&a, "train.max_steps=3");
    tr_set(&a, "train.max_epochs=5");
    tr_arg(&a, "--resume");
    const char *log = tr_fmt("%s/run%03d.log", g_work, ++g_run_no);
    const char *old_asan = getenv("ASAN_OPTIONS");
    char *asan_keep = old_asan ? strdup(old_asan) : NULL;
    if (fail_at >= 0) {
        set_env("LD_PRELOAD", g_lib);
        /* a sanitizer build wants its runtime first; the shim only wraps libc calls */
        set_env("ASAN_OPTIONS", tr_fmt("%s%sverify_asan_link_order=0", old_asan ? old_asan : "",
                                       old_asan && *old_asan ? ":" : ""));
        set_env("IOFAIL_MATCH", "/last.ckpt");
        set_env("IOFAIL_EXACT", g_dir);
        set_env("IOFAIL_ARM", ".ckpt.tmp.");
        set_env("IOFAIL_FAIL_AT", tr_fmt("%ld", fail_at));
        set_env("IOFAIL_ERRNO", errname);
        set_env("IOFAIL_MODE", mode);
        set_env("IOFAIL_CALLS", calls);
        set_env("IOFAIL_STICKY", sticky ? "1" : NULL);
        set_env("IOFAIL_LOG", call_log);
    }
    int rc = tr_run(a.v, log, NULL, TIMEOUT);
    static const char *const vars[] = {"LD_PRELOAD", "IOFAIL_MATCH", "IOFAIL_EXACT",
                                       "IOFAIL_ARM", "IOFAIL_FAIL_AT", "IOFAIL_ERRNO",
                                       "IOFAIL_MODE", "IOFAIL_CALLS", "IOFAIL_STICKY",
                                       "IOFAIL_LOG"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    set_env("ASAN_OPTIONS", asan_keep);
    free(asan_keep);
    tr_argv_free(&a);
    if (log_out) *log_out = log;
    return rc;
}

static int same_as_base(void) {
    size_t n = 0;
    char *now = test_read_file(g_last, &n);
    int same = now && n == g_base_n && memcmp(now, g_base, n) == 0;
    free(now);
    return same;
}

/* Reads the shim's call log; returns the number of calls. */
static long read_calls(const char *path, Call *calls, long max) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long n = 0;
    char line[2048];
    while (n < max && fgets(line, sizeof line, f)) {
        Call c;
        memset(&c, 0, sizeof c);
        if (sscanf(line, "%ld %15s %c %31s %1023s", &c.n, c.kind, &c.acc, c.result, c.path) == 5)
            calls[n++] = c;
    }
    fclose(f);
    return n;
}

typedef struct {
    const char *kind;
    int injected, handled;
} Tally;

static Tally g_tally[16];
static int g_ntally = 0;

static Tally *tally(const char *kind) {
    for (int i = 0; i < g_ntally; i++)
        if (!strcmp(g_tally[i].kind, kind)) return &g_tally[i];
    g_tally[g_ntally].kind = strdup(kind);
    return &g_tally[g_ntally++];
}

/* One injected fault at census call c (number n): runs, checks, tallies. rename_at: the census
 * number of the rename. */
static void inject(const Call *c, long rename_at, const char *errname, int err_value,
                   const char *calls) {
    restore();
    const char *log = NULL;
    int rc = run(c->n, errname, "fail", calls, 0, NULL, &log);
    int ntmp = test_count_temp_files(g_dir, 1);
    int may_ignore = !strcmp(c->kind, "close") && c->acc == 'r';
    int after_rename = c->n > rename_at;
    const char *last_line = tr_last_line(log);
    int ok = 1;
    char what[1400];
    snprintf(what, sizeof what, "%s at call %ld (%s %c %s)", errname, c->n, c->kind, c->acc,
             c->path);
    EXPECT(ntmp == 0, "%s: %d temporary file(s) left behind", what, ntmp);
    ok &= ntmp == 0;
    if (rc == 0) {
        EXPECT(may_ignore, "%s: the run succeeded although the failure matters", what);
        ok &= may_ignore;
    } else {
        int named = strstr(last_line, g_last) != NULL && strstr(last_line, strerror(err_value));
        EXPECT(rc == 1, "%s: exit %d, expected 1", what, rc);
        EXPECT(named, "%s: the last line should name %s and '%s': %s", what, g_last,
               strerror(err_value), last_line);
        ok &= rc == 1 && named;
    }
    if (rc != 0 && !after_rename) {
        int same = same_as_base();
        EXPECT(same, "%s: the previous checkpoint changed", what);
        ok &= same;
    } else {
        long s = tr_ckpt_step(g_last, NULL, 0);
        EXPECT(s == 3, "%s: the new checkpoint should load at step 3 (got %ld)", what, s);
        ok &= s == 3;
    }
    if (!ok) tr_print_tail(log, 6);
    else if (getenv("IOFAIL_TEST_VERBOSE")) printf("  %s -> exit %d: %s\n", what, rc, last_line);
    Tally *t = tally(c->kind);
    t->injected++;
    t->handled += ok;
}

int main(void) {
    double t_start;
    char *work = tr_begin("test_iofail", &t_start);
    g_work = work;
    g_lib = getenv("IOFAIL_LIB");
    if (!g_lib || access(g_lib, R_OK) != 0) {
        fprintf(stderr, "test_iofail: FAIL: $IOFAIL_LIB (%s) is not the built shim; build the "
                "'iofail' target (CTest sets IOFAIL_LIB)\n", g_lib ? g_lib : "unset");
        return 1;
    }
    g_dir = strdup(tr_fmt("%s/run", g_work));
    g_last = strdup(tr_fmt("%s/last.ckpt", g_dir));

    /* 0. the previous checkpoint */
    {
        TrArgv a;
        tr_train_argv(&a, g_work, g_dir);
        tr_set(&a, "train.max_steps=2");
        const char *log = tr_fmt("%s/base.log", g_work);
        int rc = tr_run(a.v, log, NULL, TIMEOUT);
        tr_argv_free(&a);
        EXPECT(rc == 0, "reference run failed (exit %d)", rc);
        if (rc != 0) {
            tr_print_tail(log, 10);
            return tr_finish("test_iofail", t_start);
        }
        g_base = test_read_file(g_last, &g_base_n);
        g_base_metrics = test_read_file(tr_fmt("%s/metrics.jsonl", g_dir), &g_base_metrics_n);
        EXPECT(g_base && g_base_metrics && tr_ckpt_step(g_last, NULL, 0) == 2,
               "reference checkpoint");
        if (!g_base || !g_base_metrics) return tr_finish("test_iofail", t_start);
    }

    /* 1. census */
    static Call calls[MAX_CALLS], reads[MAX_CALLS];
    const char *census = tr_fmt("%s/census.txt", g_work);
    restore();
    int rc = run(0, "EIO", "fail", NULL, 0, census, NULL);
    long ncalls = read_calls(census, calls, MAX_CALLS);
    EXPECT(rc == 0 && ncalls > 5, "census run: exit %d, %ld calls", rc, ncalls);
    EXPECT(tr_ckpt_step(g_last, NULL, 0) == 3, "the census run's checkpoint should be at step 3");
    long rename_at = -1, nwrite = 0;
    for (long i = 0; i < ncalls; i++) {
        if (!strcmp(calls[i].kind, "rename")) rename_at = calls[i].n;
        nwrite += !strcmp(calls[i].kind, "write") || !strcmp(calls[i].kind, "pwrite");
    }
    EXPECT(rename_at > 0, "the census saw no rename");
    EXPECT(ncalls > 0 && !strcmp(calls[0].kind, "open") && strstr(calls[0].path, ".tmp."),
           "the first counted call should open the temporary file");
    printf("census: %ld calls in one save (%ld writes, rename is call %ld):", ncalls, nwrite,
           rename_at);
    for (long i = 0; i < ncalls; i++)
        if (i == 0 || strcmp(calls[i].kind, calls[i - 1].kind) || i + 1 == ncalls ||
            strcmp(calls[i].kind, calls[i + 1].kind))
            printf(" %ld:%s%s", calls[i].n, calls[i].kind, calls[i].acc == 'r' ? "(r)" : "");
    printf("\n");

    /* 2. every call fails in turn with ENOSPC; with EIO every call but the middle writes (the
     * first, second, middle and last write are kept: the writes differ only in their record) */
    if (rename_at > 0) {
        for (long i = 0; i < ncalls; i++) inject(&calls[i], rename_at, "ENOSPC", ENOSPC, NULL);
        long w = 0;
        for (long i = 0; i < ncalls; i++) {
            int is_write = !strcmp(calls[i].kind, "write");
            w += is_write;
            if (is_write && w > 2 && w != nwrite / 2 && i + 1 < ncalls &&
                !strcmp(calls[i + 1].kind, "write"))
                continue;
            inject(&calls[i], rename_at, "EIO", EIO, NULL);
        }
    }

    /* 3. every read of the verification fails */
    const char *census_r = tr_fmt("%s/census_reads.txt", g_work);
    restore();
    rc = run(0, "EIO", "fail", "pread", 0, census_r, NULL);
    long nreads = read_calls(census_r, reads, MAX_CALLS);
    EXPECT(rc == 0 && nreads > 0, "read census: exit %d, %ld reads", rc, nreads);
    printf("census: %ld pread calls verify the temporary file\n", nreads);
    for (long i = 0; i < nreads; i++) {
        restore();
        const char *log = NULL;
        rc = run(reads[i].n, "EIO", "fail", "pread", 0, NULL, &log);
        int ntmp = test_count_temp_files(g_dir, 1);
        const char *ll = tr_last_line(log);
        int ok = rc == 1 && ntmp == 0 && same_as_base() && strstr(ll, g_last) &&
                 strstr(ll, strerror(EIO)) && strstr(ll, "nothing was replaced");
        EXPECT(ok, "EIO at read %ld: exit %d, %d temporary files, message: %s", reads[i].n, rc,
               ntmp, ll);
        Tally *t = tally("pread");
        t->injected++;
        t->handled += ok;
    }

    /* 4. a disk that stays full from the first write on; then a plain resume continues */
    {
        long first_write = -1;
        for (long i = 0; i < ncalls && first_write < 0; i++)
            if (!strcmp(calls[i].kind, "write")) first_write = calls[i].n;
        restore();
        const char *log = NULL;
        rc = run(first_write, "ENOSPC", "fail", NULL, 1, NULL, &log);
        int ntmp = test_count_temp_files(g_dir, 1);
        EXPECT(rc == 1 && ntmp == 0 && same_as_base() &&
                   strstr(tr_last_line(log), strerror(ENOSPC)),
               "disk full from call %ld on: exit %d, %d temporary files, %s", first_write, rc,
               ntmp, tr_last_line(log));
        printf("disk full from call %ld on: exit %d: %s\n", first_write, rc, tr_last_line(log));
        rc = run(-1, NULL, NULL, NULL, 0, NULL, &log);
        EXPECT(rc == 0 && tr_ckpt_step(g_last, NULL, 0) == 3 &&
                   tr_file_contains(log, tr_fmt("resumed from %s: epoch 1, step 2", g_last)),
               "--resume after the failed save: exit %d", rc);
    }

    /* 5. short writes and EINTR are retried */
    {
        static const char *const modes[] = {"short", "eintr"};
        for (int k = 0; k < 2; k++) {
            restore();
            const char *log = NULL;
            const char *cl = tr_fmt("%s/census_%s.txt", g_work, modes[k]);
            rc = run(0, "EIO", modes[k], "open,write,pwrite,pread,fsync,close,rename", 0, cl,
                     &log);
            long n = read_calls(cl, reads, MAX_CALLS);
            long s = tr_ckpt_step(g_last, NULL, 0);
            printf("%s: %ld calls, exit %d, checkpoint at step %ld\n", modes[k], n, rc, s);
            EXPECT(rc == 0 && s == 3 && test_count_temp_files(g_dir, 1) == 0,
                   "%s: exit %d, step %ld", modes[k], rc, s);
            if (rc != 0) tr_print_tail(log, 6);
        }
    }

    int total = 0, handled = 0;
    printf("injected I/O faults handled, per call:");
    for (int i = 0; i < g_ntally; i++) {
        printf(" %s %d/%d", g_tally[i].kind, g_tally[i].handled, g_tally[i].injected);
        total += g_tally[i].injected;
        handled += g_tally[i].handled;
    }
    printf("; total %d/%d\n", handled, total);
    EXPECT(total > 0 && handled == total, "%d of %d injected faults were not handled",
           total - handled, total);
    free(g_base);
    free(g_base_metrics);
    return tr_finish("test_iofail", t_start);
}
