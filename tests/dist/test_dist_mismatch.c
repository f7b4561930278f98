/* test_dist_mismatch.c — ranks started with different configs or data are refused at start-up
 * (train/dist_check.h). Two MPMD launches of 2 ranks (`mpirun -np 1 trainer ... :
 * -np 1 trainer ... <difference>`) on the tiny config:
 *   - rank 1 given another --set train.lr: both ranks exit non-zero within 60 s, before any
 *     training step, with a message naming rank 1 and the key with both values;
 *   - rank 1 given a training file of other bytes: refused naming data.train_src, its size and
 *     CRC32 against rank 0's.
 * No metrics line and no checkpoint may be written. Skipped (77) without data/multi30k.
 */
#include "dist_run.h"

/* `mpirun --oversubscribe -np 1 <rank 0's argv> : -np 1 <rank 0's argv + more>`; returns rc. */
static int run_mpmd(const char *work, const char *dir, const char *log, const char *const *more) {
    TrArgv t = {{0}, 0}, a = {{0}, 0};
    tr_train_argv(&t, work, dir);
    tr_arg(&a, "%s", dr_mpiexec());
    tr_arg(&a, "--oversubscribe");
    for (int r = 0; r < 2; r++) {
        if (r) tr_arg(&a, ":");
        tr_arg(&a, "-np");
        tr_arg(&a, "1");
        for (int i = 0; i < t.n; i++) tr_arg(&a, "%s", t.v[i]);
        for (int i = 0; r && more[i]; i++) tr_arg(&a, "%s", more[i]);
    }
    tr_print_argv("run", a.v);
    double t0 = tr_now();
    int rc = tr_run(a.v, log, NULL, 60);
    printf("  exit %d after %.1f s\n", rc, tr_now() - t0);
    tr_argv_free(&t);
    tr_argv_free(&a);
    return rc;
}

int main(void) {
    const char *test = "test_dist_mismatch";
    double t0;
    char *work = tr_begin_slices(test, &t0, 300, 20);

    DR_PATH(dir, "%s/run1", work);
    DR_PATH(log, "%s/lr.log", work);
    const char *lr[] = {"--set", "train.lr=0.002", NULL};
    int rc = run_mpmd(work, dir, log, lr);
    EXPECT(rc > 0 && rc != 124, "another train.lr on rank 1: refused (exit %d)", rc);
    EXPECT(tr_file_contains(log, "rank 1") && tr_file_contains(log, "differs from rank 0") &&
           tr_file_contains(log, "train.lr: 0.003 -> 0.002"),
           "the message names rank 1, train.lr and both values");
    EXPECT(!tr_exists(tr_fmt("%s/metrics.jsonl", dir)) && !tr_exists(tr_fmt("%s/last.ckpt", dir)),
           "nothing was trained or written");
    if (test_failures) tr_print_tail(log, 30);

    /* rank 1's training source: the same lines but one, at another path */
    size_t n = 0;
    char *src = test_read_file(tr_fmt("%s/train.de", work), &n);
    EXPECT(src && n > 10, "read the training slice");
    if (src) {
        src[0] = src[0] == 'Z' ? 'Y' : 'Z';
        test_write_file(tr_fmt("%s/other.de", work), src, n);
        free(src);
    }
    snprintf(dir, sizeof dir, "%s/run2", work);
    snprintf(log, sizeof log, "%s/data.log", work);
    const char *data[] = {"--set", tr_fmt("data.train_src=%s/other.de", work), NULL};
    rc = run_mpmd(work, dir, log, data);
    EXPECT(rc > 0 && rc != 124, "other training data on rank 1: refused (exit %d)", rc);
    EXPECT(tr_file_contains(log, "rank 1") && tr_file_contains(log, "data.train_src") &&
           tr_file_contains(log, "CRC32"), "the message names rank 1, data.train_src and CRC32");
    if (test_failures) tr_print_tail(log, 30);
    int v = tr_finish(test, t0);
    return v;
}
