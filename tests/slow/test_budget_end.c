/* test_budget_end.c — the end of a run that its time budget stops, and an average of fewer epoch
 * checkpoints than train.average_last asks.
 *
 * Data: the first 8000 training and 100 validation pairs of Multi30k (an epoch of tiny.ini takes
 * seconds, so a budget of 0.2 s ends the run within its first epoch), tests/fixtures/tiny.ini,
 * one thread.
 *   - train.max_hours = 0.00005 (0.18 s), max_epochs = 3: the run exits 0 saying it reached
 *     train.max_hours and validated; metrics.jsonl's last "val" line is at the run's last step
 *     (last.ckpt's), within epoch 1, and best.ckpt exists and holds that step (the first
 *     validation is always the best so far);
 *   - max_epochs = 2, keep_checkpoints = 5, average_last = 5 (on the first 2000 pairs): avg.ckpt
 *     is the mean of the 2 epoch checkpoints written; the log says that train.average_last asked
 *     for 5, and the "avg" line holds "averaged": 2 and "average_last": 5.
 */
#include "trainer_run.h"

#define TIMEOUT 240.0

int main(void) {
    double t_start;
    const char *work = tr_begin_slices("test_budget_end", &t_start, 8000, 100), *log;

    /* ---- the time budget ends the run within an epoch ---- */
    const char *dH = test_strdup(tr_fmt("%s/H", work));
    int rc = tr_train(work, dH, TIMEOUT, &log, "--set", "train.max_hours=0.00005", "--set",
                      "train.max_epochs=3", NULL);
    EXPECT(rc == 0 && tr_file_contains(log, "reached train.max_hours") &&
               tr_file_contains(log, "validated the last weights"),
           "the run should stop at train.max_hours, saying it validated (exit %d)", rc);
    long last = tr_ckpt_step(tr_fmt("%s/last.ckpt", dH), NULL, 0);
    TrMetrics m;
    EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", dH), &m) == 0, "no metrics.jsonl in %s",
           dH);
    EXPECT(m.nval >= 1 && m.vals[m.nval - 1].step == last && m.vals[m.nval - 1].epoch == 1,
           "the last validation should be at the last step %ld within epoch 1 (%ld validations, "
           "the last at step %ld, epoch %d)", last, m.nval,
           m.nval ? m.vals[m.nval - 1].step : -1L, m.nval ? m.vals[m.nval - 1].epoch : 0);
    EXPECT(tr_ckpt_step(tr_fmt("%s/best.ckpt", dH), NULL, 0) == last,
           "best.ckpt should hold the validated last weights (step %ld)", last);
    tr_metrics_free(&m);

    /* ---- an average of fewer epoch checkpoints than asked ---- */
    tr_gz_head(TR_DATA "/train.de.gz", tr_fmt("%s/train2k.de", work), 2000);
    tr_gz_head(TR_DATA "/train.en.gz", tr_fmt("%s/train2k.en", work), 2000);
    const char *dA = test_strdup(tr_fmt("%s/A", work));
    rc = tr_train(work, dA, TIMEOUT, &log, "--set", tr_fmt("data.train_src=%s/train2k.de", work),
                  "--set", tr_fmt("data.train_tgt=%s/train2k.en", work), "--set",
                  "train.max_epochs=2", "--set", "train.keep_checkpoints=5", "--set",
                  "train.average_last=5", NULL);
    EXPECT(rc == 0 && tr_exists(tr_fmt("%s/avg.ckpt", dA)), "the averaging run failed (exit %d)",
           rc);
    EXPECT(tr_file_contains(log, "not the 5 train.average_last asks"),
           "the log should say that avg.ckpt averages fewer checkpoints than the 5 asked");
    char *t = test_read_file(tr_fmt("%s/metrics.jsonl", dA), NULL);
    const char *avg = t ? strstr(t, "\"type\": \"avg\"") : NULL;
    double averaged = 0, asked = 0;
    EXPECT(avg && tr_json_number(avg, "averaged", &averaged) && averaged == 2 &&
               tr_json_number(avg, "average_last", &asked) && asked == 5,
           "the avg line should hold averaged 2 and average_last 5 (%g, %g)", averaged, asked);
    free(t);
    return tr_finish("test_budget_end", t_start);
}
