/* test_early_stop_bleu0.c — early stopping on BLEU (the default train.early_stop_metric) does not
 * end a run while its validation BLEU is still 0.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread, a validation every 3 steps (train.valid_every), train.patience = 2, at most 60
 * steps. The first validations of this run score BLEU 0.00 (the model writes nothing that
 * matches yet) while the perplexity falls.
 *   - the setup holds: at least 3 validations in a row score BLEU 0 from the first;
 *   - the run does not stop early at a validation of BLEU 0: it goes on until a validation
 *     scores above 0 (and may stop early after that) or to train.max_steps;
 *   - those validations do not decay the learning rate (the plateau decay): the lr of the "val"
 *     lines never falls while BLEU is 0 (it rises through the warm-up, then stays);
 *   - best.ckpt holds the last BLEU-0 validation's weights if no validation scored above 0, or
 *     a later validation's.
 */
#include "trainer_run.h"

#define TIMEOUT 180.0

int main(void) {
    double t_start;
    const char *work = tr_begin("test_early_stop_bleu0", &t_start), *log;
    const char *dir = test_strdup(tr_fmt("%s/P", work));
    int rc = tr_train(work, dir, TIMEOUT, &log, "--set", "train.valid_every=3", "--set",
                      "train.patience=2", "--set", "train.max_steps=60", NULL);
    EXPECT(rc == 0, "the run failed (exit %d)", rc);
    TrMetrics m;
    EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m) == 0, "no metrics.jsonl");
    long zeros = 0;
    while (zeros < m.nval && strtod(m.vals[zeros].bleu, NULL) == 0.0) zeros++;
    printf("%ld validations, the first %ld of BLEU 0\n", m.nval, zeros);
    EXPECT(zeros >= 3, "the setup should give at least 3 validations of BLEU 0 from the first "
           "(%ld): the test checks nothing otherwise", zeros);
    int stopped_early = tr_file_contains(log, "early stopping");
    EXPECT(!(stopped_early && zeros == m.nval),
           "the run stopped early at step %ld, while every validation so far had BLEU 0",
           m.nval ? m.vals[m.nval - 1].step : 0L);
    EXPECT(zeros < m.nval || tr_file_contains(log, "reached train.max_steps = 60"),
           "with BLEU 0 throughout, the run should go on to train.max_steps");
    for (long i = 1; i < zeros; i++)
        EXPECT(strtod(m.vals[i].lr, NULL) >= strtod(m.vals[i - 1].lr, NULL),
               "the learning rate fell from %s to %s at step %ld, a validation of BLEU 0",
               m.vals[i - 1].lr, m.vals[i].lr, m.vals[i].step);
    long best = tr_ckpt_step(tr_fmt("%s/best.ckpt", dir), NULL, 0);
    EXPECT(zeros > 0 && best >= m.vals[zeros - 1].step,
           "best.ckpt (step %ld) should be at least the last BLEU-0 validation's (step %ld)",
           best, zeros > 0 ? m.vals[zeros - 1].step : -1L);
    tr_metrics_free(&m);
    return tr_finish("test_early_stop_bleu0", t_start);
}
