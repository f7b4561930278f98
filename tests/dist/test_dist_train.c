/* test_dist_train.c — 2 ranks train the tiny config to a checkpoint that `trainer eval` loads
 *. `mpirun -np 2 trainer train --config tests/fixtures/tiny.ini` on the first 600 / 30
 * Multi30k pairs (one thread a rank, one epoch, train.save_every = 10) must:
 *   - exit 0 and print the world line (2 ranks, the host layout) and progress lines with the
 *     allreduce time next to the compute time;
 *   - leave one metrics.jsonl (rank 0 alone writes it) with every step once, the ranks' times,
 *     and one validation line; last.ckpt and best.ckpt;
 *   - and `trainer eval --checkpoint best.ckpt` (one process) loads it and scores 20 val lines.
 * Skipped (77) without data/multi30k.
 */
#include "dist_run.h"

int main(void) {
    const char *test = "test_dist_train";
    double t0;
    char *work = tr_begin_slices(test, &t0, 600, 30);
    DR_PATH(dir, "%s/run", work);
    DR_PATH(log, "%s/train.log", work);
    TrArgv a;
    dr_train_argv(&a, 2, NULL, work, dir);
    tr_set(&a, "train.max_epochs=1");
    tr_set(&a, "train.save_every=10");
    tr_print_argv("run", a.v);
    int rc = tr_run(a.v, log, NULL, test_sanitized() ? 900 : 240);
    EXPECT(rc == 0, "2 ranks: exit %d (0 expected)", rc);
    if (rc != 0) tr_print_tail(log, 40);
    EXPECT(tr_file_contains(log, "world: 2 ranks on 1 host"), "the start-up line names the world");
    EXPECT(tr_file_contains(log, "allreduce") && tr_file_contains(log, "ms per step"),
           "the progress line has the allreduce time per step");
    EXPECT(dr_rank_pid(log, 1) > 0, "the start-up line names rank 1's pid");
    TrMetrics m;
    EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m) == 0, "metrics.jsonl readable");
    EXPECT(m.n > 5 && m.bad_lines == 0 && m.nval == 1, "metrics: %ld steps, %ld val lines, %ld bad",
           m.n, m.nval, m.bad_lines);
    for (long i = 0; i < m.n; i++)
        EXPECT(m.steps[i].step == i + 1, "metrics line %ld is step %ld (each step once, from one "
               "rank)", i + 1, m.steps[i].step);
    tr_metrics_free(&m);
    EXPECT(tr_file_contains(tr_fmt("%s/metrics.jsonl", dir), "\"allreduce_s\""),
           "metrics.jsonl has the allreduce time");
    EXPECT(tr_exists(tr_fmt("%s/last.ckpt", dir)) && tr_exists(tr_fmt("%s/best.ckpt", dir)),
           "last.ckpt and best.ckpt written");

    /* the checkpoint of the 2-rank run, loaded by one process */
    tr_gz_head(TR_DATA "/val.de.gz", tr_fmt("%s/v20.de", work), 20);
    tr_gz_head(TR_DATA "/val.en.gz", tr_fmt("%s/v20.en", work), 20);
    TrArgv e = {{0}, 0};
    tr_eval_argv(&e, tr_fmt("%s/best.ckpt", dir), tr_fmt("%s/v20.de", work),
                 tr_fmt("%s/v20.en", work));
    const char *elog = tr_fmt("%s/eval.log", work);
    rc = tr_run(e.v, elog, NULL, 120);
    EXPECT(rc == 0, "trainer eval of the 2-rank checkpoint: exit %d", rc);
    if (rc != 0) tr_print_tail(elog, 20);
    else printf("eval: %s\n", tr_last_line(elog));
    EXPECT(tr_last_line(elog)[0] == '{', "eval printed its JSON line");
    tr_argv_free(&a);
    tr_argv_free(&e);
    int v = tr_finish(test, t0);
    return v;
}
