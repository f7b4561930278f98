/* test_valid_every.c — train.valid_every, train.early_stop_metric and train.accum_steps through
 * `trainer train`.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread.
 *   V1 valid_every = 10, patience = 1, lr 1e-30 (min_lr 0: the weights, so the scores, stay as
 *      they are), early_stop_metric = chrf (the untrained model's BLEU is 0, and validations of
 *      BLEU 0 do not count: test_early_stop_bleu0.c): validations at steps 10 and 20 alone,
 *      then early stopping after one validation without a better chrF ("validations", not
 *      "epochs"); best.ckpt written at step 10.
 *   V2 valid_every = 7, max_steps = 30, early_stop_metric = ppl: "val" lines at steps 7, 14, 21
 *      and 28 alone; the log names the best perplexity; 30 steps logged; the tok/s of the steps
 *      right after a validation (8, 15, 22, 29) count training alone: their median is at least
 *      0.4 of the other steps' (a validation inside the window makes it about 0.1; the console's
 *      epoch ETA comes from the same window).
 *   V3 one epoch with accum_steps = 1 (N steps) and with accum_steps = 2: ceil(N / 2) optimizer
 *      steps, logged once each from 1, and the epoch's validation at that step.
 *   V4 accum_steps = 2 stopped at max_steps = 5 (mid-epoch), then --resume to the end of the
 *      epoch: last.ckpt equals V3's bit for bit (the position counts batches, the step
 *      optimizer steps).
 */
#include "trainer_run.h"
#include "train/checkpoint.h"

#define TIMEOUT 240.0

static const char *g_work;

/* The val lines' steps of run folder dir into steps[0..*n) (at most max); 0 on success. */
static int val_steps(const char *dir, long *steps, int max, int *n, long *train_lines,
                     int *consecutive) {
    TrMetrics m;
    *n = 0;
    if (tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m)) {
        EXPECT(0, "%s: no metrics.jsonl", dir);
        return 1;
    }
    for (long i = 0; i < m.nval && *n < max; i++) steps[(*n)++] = m.vals[i].step;
    *train_lines = m.n;
    *consecutive = 1;
    for (long i = 0; i < m.n; i++) *consecutive &= m.steps[i].step == i + 1;
    tr_metrics_free(&m);
    return 0;
}

/* The median of the tok_s of the "train" lines of dir's metrics.jsonl whose step is (after = 1)
 * or is not (after = 0) one past a multiple of every; -1 if none. */
static double median_tok_s(const char *dir, int every, int after) {
    char *t = test_read_file(tr_fmt("%s/metrics.jsonl", dir), NULL);
    double v[256];
    int n = 0;
    for (char *line = t; line && *line && n < 256;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        double step, tps;
        if (strstr(line, "\"train\"") && tr_json_number(line, "step", &step) &&
            tr_json_number(line, "tok_s", &tps) && step > 1 &&
            ((long)step % every == 1) == after)
            v[n++] = tps;
        line = nl ? nl + 1 : NULL;
    }
    free(t);
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double x = v[j];
            v[j] = v[j - 1], v[j - 1] = x;
        }
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : -1;
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_valid_every", &t_start);
    const char *log = NULL;
    long st[64], lines;
    int n, consecutive;

    /* ---- V1: early stopping counts validations ---- */
    const char *d1 = test_strdup(tr_fmt("%s/V1", g_work));
    int rc = tr_train(g_work, d1, TIMEOUT, &log, "--set", "train.valid_every=10", "--set",
                      "train.patience=1", "--set", "train.lr=1e-30", "--set", "train.min_lr=0",
                      "--set", "train.early_stop_metric=chrf", NULL);
    EXPECT(rc == 0, "V1 failed (exit %d)", rc);
    if (!val_steps(d1, st, 64, &n, &lines, &consecutive))
        EXPECT(n == 2 && st[0] == 10 && st[1] == 20 && lines == 20,
               "V1: validations at steps 10 and 20 and 20 steps expected; %d validations (first "
               "at %ld), %ld steps", n, n ? st[0] : -1L, lines);
    EXPECT(tr_file_contains(log, "early stopping: validation chrF has not improved for 1 "
                                 "validations"),
           "V1: the log should say early stopping came after 1 validation");
    EXPECT(tr_exists(tr_fmt("%s/best.ckpt", d1)), "V1: no best.ckpt");

    /* ---- V2: the rhythm and the perplexity ---- */
    const char *d2 = test_strdup(tr_fmt("%s/V2", g_work));
    rc = tr_train(g_work, d2, TIMEOUT, &log, "--set", "train.valid_every=7", "--set",
                  "train.max_steps=30", "--set", "train.early_stop_metric=ppl", NULL);
    EXPECT(rc == 0, "V2 failed (exit %d)", rc);
    if (!val_steps(d2, st, 64, &n, &lines, &consecutive))
        EXPECT(n == 4 && st[0] == 7 && st[1] == 14 && st[2] == 21 && st[3] == 28 && lines == 30 &&
                   consecutive,
               "V2: validations at steps 7, 14, 21, 28 and steps 1..30 expected; %d validations, "
               "%ld steps", n, lines);
    double after = median_tok_s(d2, 7, 1), others = median_tok_s(d2, 7, 0);
    printf("V2: median tok/s %.0f after a validation, %.0f otherwise\n", after, others);
    EXPECT(after > 0 && others > 0 && after >= 0.4 * others,
           "V2: tok/s after a validation %.0f, otherwise %.0f: the validation's time should not "
           "count as training time", after, others);
    EXPECT(tr_file_contains(log, "(best perplexity ") &&
               tr_file_contains(log, "best validation perplexity"),
           "V2: the log should give the best perplexity");

    /* ---- V3: one epoch, accum_steps 1 and 2 ---- */
    const char *d3a = test_strdup(tr_fmt("%s/V3a", g_work));
    const char *d3b = test_strdup(tr_fmt("%s/V3b", g_work));
    rc = tr_train(g_work, d3a, TIMEOUT, &log, "--set", "train.max_epochs=1", NULL);
    long n1 = 0, n2 = 0;
    if (!rc && !val_steps(d3a, st, 64, &n, &lines, &consecutive)) n1 = lines;
    rc |= tr_train(g_work, d3b, TIMEOUT, &log, "--set", "train.max_epochs=1", "--set",
                   "train.accum_steps=2", NULL);
    EXPECT(rc == 0, "V3 failed");
    if (!rc && !val_steps(d3b, st, 64, &n, &lines, &consecutive)) {
        n2 = lines;
        EXPECT(n1 > 10 && n2 == (n1 + 1) / 2 && consecutive && n == 1 && st[0] == n2,
               "V3: %ld batches make %ld optimizer steps with accum_steps = 2, want %ld logged "
               "once each and one validation at the last (got %d at step %ld)", n1, n2,
               (n1 + 1) / 2, n, n ? st[0] : -1L);
    }
    printf("V3: one epoch is %ld steps, %ld with accum_steps = 2\n", n1, n2);

    /* ---- V4: an interrupted accumulating run resumes exactly ---- */
    const char *d4 = test_strdup(tr_fmt("%s/V4", g_work));
    rc = tr_train(g_work, d4, TIMEOUT, &log, "--set", "train.max_epochs=1", "--set",
                  "train.accum_steps=2", "--set", "train.max_steps=5", NULL);
    rc |= tr_train(g_work, d4, TIMEOUT, &log, "--set", "train.max_epochs=1", "--set",
                   "train.accum_steps=2", "--resume", NULL);
    EXPECT(rc == 0 && tr_file_contains(log, "batch 10 of the epoch"),
           "V4: the stopped run should resume at batch 10 (5 steps of 2)");
    /* the parameters, the moments and the step (the files differ in save_dir and time) */
    Model ma, mb;
    Config ca, cb;
    Spm *sa, *sb;
    TrainState ta, tb;
    Err err;
    if (!checkpoint_load(tr_fmt("%s/last.ckpt", d3b), &ma, &ca, &sa, &ta, -1, &err) &&
        !checkpoint_load(tr_fmt("%s/last.ckpt", d4), &mb, &cb, &sb, &tb, -1, &err)) {
        size_t bad = 0, nt = ma.ps.total;
        for (size_t i = 0; i < nt; i++)
            bad += memcmp(&ma.ps.data[i], &mb.ps.data[i], 4) != 0 ||
                   memcmp(&ma.ps.m[i], &mb.ps.m[i], 4) != 0 ||
                   memcmp(&ma.ps.v[i], &mb.ps.v[i], 4) != 0;
        EXPECT(bad == 0 && ta.step == tb.step && ta.adam_t == tb.adam_t,
               "V4: %zu of %zu parameters or moments differ; steps %ld and %ld", bad, nt,
               ta.step, tb.step);
        model_free(&ma), model_free(&mb), spm_free(sa), spm_free(sb);
    } else {
        EXPECT(0, "V4: %s", err.msg);
    }
    return tr_finish("test_valid_every", t_start);
}
