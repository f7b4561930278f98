/* test_resume.c — `trainer train --resume` continues a run exactly (docs/design.md §9).
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread. An epoch is then ~110 batches (nb, read from the reference run).
 *
 *   A   reference: 2 epochs uninterrupted (save_every = 0).
 *   B0  after B1's first part, --resume with the same max_steps = K: trains nothing, and
 *       last.ckpt and metrics.jsonl stay byte-identical.
 *   B1  max_steps = K (mid-epoch 1), --resume with max_steps = 2K, then --resume without a step
 *       limit to the end of epoch 2: crosses the epoch boundary (validation, lr decay, best.ckpt)
 *       after a resume. Steps K+1..end, the validation lines, and the final last.ckpt/best.ckpt
 *       (parameters, Adam moments, train state) must equal A's bit for bit.
 *   B2  max_steps = nb (stops on the last batch of epoch 1, before its validation), --resume to
 *       nb + 10: the validation of epoch 1 happens after the resume.
 *   B3  max_epochs = 1 (stops after epoch 1's validation and checkpoints), --resume with
 *       max_epochs = 2, max_steps = nb + 10.
 * Per-step losses are compared as the strings metrics.jsonl holds (%.17g, so bit for bit).
 * Refusals: --resume with a changed model key (model.hidden) and --resume in an empty folder exit
 * with status 1 and a message, and leave last.ckpt byte-identical / absent.
 */
#include <math.h>

#include "trainer_run.h"
#include "train/checkpoint.h"

#define K 20
#define TIMEOUT 180.0

static const char *g_work;

static TrMetrics metrics_of(const char *dir) {
    TrMetrics m;
    if (tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m))
        fprintf(stderr, "cannot read %s/metrics.jsonl\n", dir);
    EXPECT(m.bad_lines == 0, "%s/metrics.jsonl has %ld malformed lines", dir, m.bad_lines);
    return m;
}

/* Steps 1..n each logged exactly once, in order. */
static void expect_steps_once(const TrMetrics *m, long n, const char *what) {
    int ok = m->n == n;
    for (long i = 0; ok && i < n; i++) ok = m->steps[i].step == i + 1;
    EXPECT(ok, "%s: metrics.jsonl should log steps 1..%ld once each, in order (has %ld train "
           "lines, last step %ld)", what, n, m->n, m->n ? m->steps[m->n - 1].step : -1);
}

/* Steps from..to: the loss and lr strings and the epoch of b equal a's. */
static void expect_same_steps(const TrMetrics *a, const TrMetrics *b, long from, long to,
                              const char *what) {
    long bad = 0, missing = 0;
    for (long s = from; s <= to; s++) {
        const TrStep *x = tr_metrics_step(a, s), *y = tr_metrics_step(b, s);
        if (!x || !y) {
            if (missing++ < 3) fprintf(stderr, "  %s: step %ld missing (%s)\n", what, s,
                                       !x ? "reference" : "resumed run");
            continue;
        }
        if (strcmp(x->loss, y->loss) || strcmp(x->lr, y->lr) || x->epoch != y->epoch) {
            if (bad++ < 5)
                fprintf(stderr, "  %s: step %ld: reference epoch %d loss %s lr %s, resumed epoch "
                        "%d loss %s lr %s\n", what, s, x->epoch, x->loss, x->lr, y->epoch,
                        y->loss, y->lr);
        }
    }
    printf("%s: compared steps %ld..%ld: %ld differ, %ld missing\n", what, from, to, bad,
           missing);
    EXPECT(bad == 0 && missing == 0, "%s: steps %ld..%ld of the resumed run differ from the "
           "uninterrupted run (%ld differ, %ld missing)", what, from, to, bad, missing);
}

/* The validation line of each epoch in b equals a's (everything but elapsed). */
static void expect_same_vals(const TrMetrics *a, const TrMetrics *b, const char *what) {
    for (long i = 0; i < b->nval; i++) {
        const TrVal *y = &b->vals[i], *x = NULL;
        for (long j = 0; j < a->nval; j++)
            if (a->vals[j].epoch == y->epoch) x = &a->vals[j];
        EXPECT(x != NULL, "%s: validation of epoch %d missing from the reference", what, y->epoch);
        if (!x) continue;
        EXPECT(x->step == y->step && !strcmp(x->ppl, y->ppl) && !strcmp(x->bleu, y->bleu) &&
                   !strcmp(x->chrf, y->chrf) && !strcmp(x->lr, y->lr),
               "%s: validation of epoch %d differs: reference step %ld ppl %s bleu %s chrf %s lr "
               "%s; resumed step %ld ppl %s bleu %s chrf %s lr %s", what, y->epoch, x->step,
               x->ppl, x->bleu, x->chrf, x->lr, y->step, y->ppl, y->bleu, y->chrf, y->lr);
    }
}

/* Two checkpoint files hold the same parameters, Adam moments, config and train state (all but
 * the elapsed time), bit for bit. */
static void expect_same_checkpoint(const char *pa, const char *pb, const char *what) {
    Model a, b;
    Config ca, cb;
    Spm *spa, *spb;
    TrainState sa, sb;
    Err err;
    if (checkpoint_load(pa, &a, &ca, &spa, &sa, -1, &err)) {
        EXPECT(0, "%s: cannot load %s: %s", what, pa, err.msg);
        return;
    }
    if (checkpoint_load(pb, &b, &cb, &spb, &sb, -1, &err)) {
        EXPECT(0, "%s: cannot load %s: %s", what, pb, err.msg);
        model_free(&a), spm_free(spa);
        return;
    }
    /* save_dir (and cache_dir) differ by construction; everything else must not */
    memcpy(cb.save_dir, ca.save_dir, sizeof cb.save_dir);
    memcpy(cb.cache_dir, ca.cache_dir, sizeof cb.cache_dir);
    char diff[1024] = "";
    EXPECT(config_diff(&ca, &cb, diff, sizeof diff) == 0, "%s: configs differ: %s", what, diff);
    EXPECT(a.ps.total == b.ps.total, "%s: parameter counts differ", what);
    if (a.ps.total == b.ps.total) {
        size_t n = a.ps.total;
        float *ha = malloc(sizeof(float) * n), *hb = malloc(sizeof(float) * n);
        float *bufs_a[3] = {a.ps.data, a.ps.m, a.ps.v}, *bufs_b[3] = {b.ps.data, b.ps.m, b.ps.v};
        static const char *names[3] = {"parameters", "Adam m", "Adam v"};
        for (int k = 0; k < 3; k++) {
            a.be->download(ha, bufs_a[k], sizeof(float) * n);
            b.be->download(hb, bufs_b[k], sizeof(float) * n);
            size_t ndiff = 0;
            for (size_t i = 0; i < n; i++) ndiff += memcmp(&ha[i], &hb[i], sizeof(float)) != 0;
            EXPECT(ndiff == 0, "%s: %zu of %zu %s differ between %s and %s", what, ndiff, n,
                   names[k], pa, pb);
        }
        free(ha);
        free(hb);
    }
    EXPECT(sa.step == sb.step && sa.epoch == sb.epoch && sa.batch_in_epoch == sb.batch_in_epoch &&
               sa.epoch_rng.state == sb.epoch_rng.state && sa.epoch_rng.inc == sb.epoch_rng.inc &&
               sa.adam_t == sb.adam_t && sa.bad_epochs == sb.bad_epochs &&
               memcmp(&sa.lr_scale, &sb.lr_scale, sizeof(double)) == 0 &&
               memcmp(&sa.best_score, &sb.best_score, sizeof(double)) == 0,
           "%s: train states differ: step %ld/%ld epoch %d/%d batch %ld/%ld adam_t %d/%d "
           "lr_scale %.17g/%.17g best %.17g/%.17g bad %d/%d", what, sa.step, sb.step, sa.epoch,
           sb.epoch, sa.batch_in_epoch, sb.batch_in_epoch, sa.adam_t, sb.adam_t, sa.lr_scale,
           sb.lr_scale, sa.best_score, sb.best_score, sa.bad_epochs, sb.bad_epochs);
    printf("%s: %s and %s: %zu parameters, step %ld, epoch %d compared\n", what, pa, pb,
           a.ps.total, sb.step, sb.epoch);
    model_free(&a), spm_free(spa);
    model_free(&b), spm_free(spb);
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_resume", &t_start);

    /* ---- A: the uninterrupted reference ---- */
    const char *dA = tr_fmt("%s/A", g_work);
    dA = test_strdup(dA);
    int rc = tr_train(g_work, dA, TIMEOUT, NULL, NULL);
    EXPECT(rc == 0, "reference run failed (exit %d)", rc);
    if (rc != 0) return test_report("test_resume");
    TrMetrics mA = metrics_of(dA);
    EXPECT(mA.nval == 2, "reference: expected 2 validation lines, got %ld", mA.nval);
    if (mA.nval < 1 || mA.n < 2 * K + 1) {
        EXPECT(0, "reference run too short to test resuming (%ld steps, %ld validations)", mA.n,
               mA.nval);
        return test_report("test_resume");
    }
    long nb = mA.vals[0].step, total = mA.steps[mA.n - 1].step;
    expect_steps_once(&mA, total, "reference");
    printf("reference: %ld steps, %ld batches per epoch\n", total, nb);
    EXPECT(K < nb && 2 * K < nb, "K = %d must fall inside epoch 1 (%ld batches)", K, nb);
    EXPECT(nb + 10 <= total, "epoch 2 too short (%ld steps in all)", total);

    /* ---- B1: stop mid-epoch at K, resume to 2K, resume again to the end ---- */
    const char *dB1 = test_strdup(tr_fmt("%s/B1", g_work));
    rc = tr_train(g_work, dB1, TIMEOUT, NULL, "--set", tr_fmt("train.max_steps=%d", K), NULL);
    EXPECT(rc == 0, "B1 first part failed (exit %d)", rc);
    EXPECT(tr_exists(tr_fmt("%s/last.ckpt", dB1)), "B1: no last.ckpt after max_steps = %d", K);
    TrMetrics m = metrics_of(dB1);
    expect_steps_once(&m, K, "B1 part 1");
    expect_same_steps(&mA, &m, 1, K, "B1 part 1 (same start)");
    tr_metrics_free(&m);

    /* B0: resuming a run that had reached its limit trains nothing and changes no file */
    const char *log = NULL;
    size_t nc0 = 0, nc1 = 0, nm0 = 0, nm1 = 0;
    char *c0 = test_read_file(tr_fmt("%s/last.ckpt", dB1), &nc0);
    char *m0 = test_read_file(tr_fmt("%s/metrics.jsonl", dB1), &nm0);
    rc = tr_train(g_work, dB1, TIMEOUT, &log, "--resume", "--set", tr_fmt("train.max_steps=%d", K),
                  NULL);
    EXPECT(rc == 0, "B0: resuming a finished run failed (exit %d)", rc);
    EXPECT(tr_file_contains(log, "nothing left to train"),
           "B0: the log does not say that the run had reached train.max_steps");
    char *c1 = test_read_file(tr_fmt("%s/last.ckpt", dB1), &nc1);
    char *m1 = test_read_file(tr_fmt("%s/metrics.jsonl", dB1), &nm1);
    EXPECT(c0 && c1 && nc0 == nc1 && !memcmp(c0, c1, nc0),
           "B0: resuming a finished run rewrote last.ckpt");
    EXPECT(m0 && m1 && nm0 == nm1 && !memcmp(m0, m1, nm0),
           "B0: resuming a finished run changed metrics.jsonl");
    free(c0), free(c1), free(m0), free(m1);

    rc = tr_train(g_work, dB1, TIMEOUT, &log, "--resume", "--set",
                  tr_fmt("train.max_steps=%d", 2 * K), NULL);
    EXPECT(rc == 0, "B1 resume to %d failed (exit %d)", 2 * K, rc);
    EXPECT(tr_file_contains(log, "resumed from"), "B1: the log does not say it resumed");
    EXPECT(tr_exists(tr_fmt("%s/last.ckpt", dB1)), "B1: no last.ckpt after the resume");
    m = metrics_of(dB1);
    expect_steps_once(&m, 2 * K, "B1 part 2");
    expect_same_steps(&mA, &m, K + 1, 2 * K, "B1 resume at step K (mid-epoch)");
    tr_metrics_free(&m);

    rc = tr_train(g_work, dB1, TIMEOUT, NULL, "--resume", NULL);
    EXPECT(rc == 0, "B1 resume to the end failed (exit %d)", rc);
    m = metrics_of(dB1);
    expect_steps_once(&m, total, "B1 part 3");
    expect_same_steps(&mA, &m, 2 * K + 1, total, "B1 resume at 2K to the end (crosses epoch 1)");
    EXPECT(m.nval == mA.nval, "B1: %ld validation lines, reference %ld", m.nval, mA.nval);
    expect_same_vals(&mA, &m, "B1");
    tr_metrics_free(&m);
    expect_same_checkpoint(tr_fmt("%s/last.ckpt", dA), tr_fmt("%s/last.ckpt", dB1),
                           "B1 final last.ckpt");
    expect_same_checkpoint(tr_fmt("%s/best.ckpt", dA), tr_fmt("%s/best.ckpt", dB1),
                           "B1 final best.ckpt");

    /* ---- B2: stop on the last batch of epoch 1 (before its validation), resume ---- */
    const char *dB2 = test_strdup(tr_fmt("%s/B2", g_work));
    rc = tr_train(g_work, dB2, TIMEOUT, NULL, "--set", tr_fmt("train.max_steps=%ld", nb), NULL);
    EXPECT(rc == 0, "B2 first part failed (exit %d)", rc);
    m = metrics_of(dB2);
    EXPECT(m.nval == 0, "B2: stopped at max_steps = %ld before the validation, yet has %ld "
           "validation lines", nb, m.nval);
    tr_metrics_free(&m);
    rc = tr_train(g_work, dB2, TIMEOUT, NULL, "--resume", "--set",
                  tr_fmt("train.max_steps=%ld", nb + 10), NULL);
    EXPECT(rc == 0, "B2 resume failed (exit %d)", rc);
    m = metrics_of(dB2);
    expect_steps_once(&m, nb + 10, "B2");
    expect_same_steps(&mA, &m, nb + 1, nb + 10, "B2 resume at the end of epoch 1");
    EXPECT(m.nval == 1, "B2: expected the validation of epoch 1 after resuming, got %ld lines",
           m.nval);
    expect_same_vals(&mA, &m, "B2");
    tr_metrics_free(&m);
    EXPECT(tr_exists(tr_fmt("%s/best.ckpt", dB2)), "B2: no best.ckpt after epoch 1");

    /* ---- B3: one whole epoch, then resume from the epoch-end checkpoint ---- */
    const char *dB3 = test_strdup(tr_fmt("%s/B3", g_work));
    rc = tr_train(g_work, dB3, TIMEOUT, NULL, "--set", "train.max_epochs=1", NULL);
    EXPECT(rc == 0, "B3 first part failed (exit %d)", rc);
    rc = tr_train(g_work, dB3, TIMEOUT, NULL, "--resume", "--set", "train.max_epochs=2", "--set",
                  tr_fmt("train.max_steps=%ld", nb + 10), NULL);
    EXPECT(rc == 0, "B3 resume failed (exit %d)", rc);
    m = metrics_of(dB3);
    expect_steps_once(&m, nb + 10, "B3");
    expect_same_steps(&mA, &m, nb + 1, nb + 10, "B3 resume from the epoch-end checkpoint");
    EXPECT(m.nval == 1, "B3: expected exactly the validation of epoch 1, got %ld lines", m.nval);
    expect_same_vals(&mA, &m, "B3");
    tr_metrics_free(&m);

    /* ---- refusals ---- */
    const char *ck = tr_fmt("%s/last.ckpt", dB2);
    size_t n_before = 0, n_after = 0, met_before = 0, met_after = 0;
    char *before = test_read_file(ck, &n_before);
    char *mbefore = test_read_file(tr_fmt("%s/metrics.jsonl", dB2), &met_before);
    rc = tr_train(g_work, dB2, TIMEOUT, &log, "--resume", "--set", "model.hidden=96", NULL);
    printf("resume with model.hidden changed: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1, "--resume with a changed model.hidden should fail with status 1, got %d", rc);
    EXPECT(tr_file_contains(log, "model.hidden"), "the refusal should name model.hidden");
    char *after = test_read_file(ck, &n_after);
    char *mafter = test_read_file(tr_fmt("%s/metrics.jsonl", dB2), &met_after);
    EXPECT(before && after && n_before == n_after && !memcmp(before, after, n_before),
           "a refused --resume changed %s", ck);
    EXPECT(mbefore && mafter && met_before == met_after && !memcmp(mbefore, mafter, met_before),
           "a refused --resume changed metrics.jsonl");
    free(before), free(after), free(mbefore), free(mafter);

    rc = tr_train(g_work, dB2, TIMEOUT, &log, "--resume", "--set", "data.vocab_size=400", NULL);
    printf("resume with data.vocab_size changed: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1, "--resume with a changed data.vocab_size should fail with status 1, got %d",
           rc);
    EXPECT(tr_file_contains(log, "data.vocab_size"), "the refusal should name data.vocab_size");

    const char *dE = test_strdup(tr_fmt("%s/empty", g_work));
    mkdir(dE, 0755);
    rc = tr_train(g_work, dE, TIMEOUT, &log, "--resume", NULL);
    printf("resume in an empty folder: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1, "--resume in an empty folder should fail with status 1, got %d", rc);
    EXPECT(tr_file_contains(log, "last.ckpt"), "the refusal should name the missing last.ckpt");
    EXPECT(!tr_exists(tr_fmt("%s/last.ckpt", dE)), "a refused --resume created last.ckpt");

    tr_metrics_free(&mA);
    return tr_finish("test_resume", t_start);
}
