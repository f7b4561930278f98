/* test_avg_ema.c — checkpoint averaging and EMA in `trainer train`:
 * train.keep_checkpoints, train.average_last and train.ema_decay.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread (as test_resume).
 *
 *   A  3 epochs, keep_checkpoints = 2, average_last = 2, ema_decay = 0.9, uninterrupted:
 *      - epoch2.ckpt and epoch3.ckpt remain, epoch1.ckpt was deleted;
 *      - avg.ckpt loads and every parameter is the mean of the two kept ones (summed in double,
 *        as checkpoint_average, so bit for bit), and the log gives its validation BLEU next to
 *        best's;
 *      - the log says validation uses the EMA weights; last.ckpt holds "ema/", "adam_m/" and
 *        "adam_v/" records, best.ckpt, avg.ckpt and the epoch checkpoints none of them (weights
 *        only; best's parameters are the EMA weights).
 *   B  the same config stopped at max_steps = 20 (mid-epoch 1: no epoch checkpoint yet, so the
 *      log says there is nothing to average), then --resume to the end: last.ckpt (parameters,
 *      Adam moments, EMA) and avg.ckpt equal A's bit for bit.
 *   C  average_last = 3 with keep_checkpoints = 2 is a config error naming both keys.
 */
#include <math.h>

#include "trainer_run.h"
#include "train/checkpoint.h"
#include "train/ckptfile.h"

#define TIMEOUT 240.0

static const char *g_work;

/* The flat buffers of a checkpoint on the host: k = 0 parameters, 1 Adam m, 2 Adam v, 3 EMA
 * (NULL when it has none). Returns 0 on success. */
typedef struct {
    size_t n;
    float *buf[4];
} Flat;

static int load_flat(const char *path, Flat *f) {
    Model m;
    Config c;
    Spm *spm;
    Err err;
    memset(f, 0, sizeof *f);
    if (checkpoint_load(path, &m, &c, &spm, NULL, -1, &err)) {
        EXPECT(0, "cannot load %s: %s", path, err.msg);
        return 1;
    }
    f->n = m.ps.total;
    float *src[4] = {m.ps.data, m.ps.m, m.ps.v, m.ps.ema};
    for (int k = 0; k < 4; k++) {
        if (!src[k]) continue;
        f->buf[k] = malloc(sizeof(float) * f->n);
        m.be->download(f->buf[k], src[k], sizeof(float) * f->n);
    }
    model_free(&m);
    spm_free(spm);
    return 0;
}

static int keep_none(const char *name, void *ctx) {
    (void)name, (void)ctx;
    return 0;
}

/* The number of records of path whose name starts with prefix (-1: unreadable). */
static int count_records(const char *path, const char *prefix) {
    CkptRecord *recs;
    int n, c = 0;
    Err err;
    if (ckpt_read_some(path, keep_none, NULL, &recs, &n, &err)) return -1;
    for (int i = 0; i < n; i++) c += !strncmp(recs[i].name, prefix, strlen(prefix));
    ckpt_records_free(recs, n);
    return c;
}

static void flat_free(Flat *f) {
    for (int k = 0; k < 4; k++) free(f->buf[k]);
}

static void expect_same_flat(const char *pa, const char *pb, int nbuf, const char *what) {
    Flat a, b;
    if (load_flat(pa, &a)) return;
    if (load_flat(pb, &b)) {
        flat_free(&a);
        return;
    }
    static const char *names[4] = {"parameters", "Adam m", "Adam v", "EMA"};
    EXPECT(a.n == b.n, "%s: sizes differ", what);
    for (int k = 0; k < nbuf && a.n == b.n; k++) {
        EXPECT(a.buf[k] && b.buf[k], "%s: %s missing", what, names[k]);
        if (!a.buf[k] || !b.buf[k]) continue;
        size_t nd = 0;
        for (size_t i = 0; i < a.n; i++) nd += memcmp(&a.buf[k][i], &b.buf[k][i], 4) != 0;
        printf("%s: %s: %zu of %zu differ\n", what, names[k], nd, a.n);
        EXPECT(nd == 0, "%s: %zu of %zu %s differ between %s and %s", what, nd, a.n, names[k],
               pa, pb);
    }
    flat_free(&a);
    flat_free(&b);
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_avg_ema", &t_start);
    const char *opts[] = {"--set", "train.max_epochs=3", "--set", "train.keep_checkpoints=2",
                          "--set", "train.average_last=2", "--set", "train.ema_decay=0.9"};

    /* ---- C: the config check, before any data work ---- */
    const char *log = NULL;
    const char *dC = test_strdup(tr_fmt("%s/C", g_work));
    int rc = tr_train(g_work, dC, TIMEOUT, &log, "--set", "train.keep_checkpoints=2", "--set",
                      "train.average_last=3", NULL);
    printf("average_last > keep_checkpoints: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 2, "average_last = 3 with keep_checkpoints = 2 should fail with status 2 (a "
           "config error), got %d", rc);
    EXPECT(tr_file_contains(log, "train.average_last") &&
               tr_file_contains(log, "train.keep_checkpoints"),
           "the refusal should name train.average_last and train.keep_checkpoints");

    /* ---- A: uninterrupted ---- */
    const char *dA = test_strdup(tr_fmt("%s/A", g_work));
    const char *logA = NULL;
    rc = tr_train(g_work, dA, TIMEOUT, &logA, opts[0], opts[1], opts[2], opts[3], opts[4], opts[5],
                  opts[6], opts[7], NULL);
    EXPECT(rc == 0, "run A failed (exit %d)", rc);
    if (rc != 0) return test_report("test_avg_ema");
    EXPECT(!tr_exists(tr_fmt("%s/epoch1.ckpt", dA)), "A: epoch1.ckpt should have been deleted "
           "(keep_checkpoints = 2)");
    EXPECT(tr_exists(tr_fmt("%s/epoch2.ckpt", dA)) && tr_exists(tr_fmt("%s/epoch3.ckpt", dA)),
           "A: epoch2.ckpt and epoch3.ckpt should remain");
    EXPECT(tr_exists(tr_fmt("%s/avg.ckpt", dA)), "A: no avg.ckpt");
    EXPECT(tr_file_contains(logA, "averaged the last 2 epoch checkpoints (epochs 2, 3)"),
           "A: the log does not say which checkpoints were averaged");
    EXPECT(tr_file_contains(logA, "avg.ckpt: val ppl") && tr_file_contains(logA, "(best.ckpt "),
           "A: the log does not give avg.ckpt's validation BLEU next to best's");
    EXPECT(tr_file_contains(logA, "EMA weights"), "A: the log does not say it validates the EMA "
           "weights");
    Flat e2, e3, av, best, last;
    if (!load_flat(tr_fmt("%s/epoch2.ckpt", dA), &e2) &&
        !load_flat(tr_fmt("%s/epoch3.ckpt", dA), &e3) &&
        !load_flat(tr_fmt("%s/avg.ckpt", dA), &av)) {
        size_t bad = 0, moved = 0;
        for (size_t i = 0; i < av.n; i++) {
            float want = (float)(((double)e2.buf[0][i] + (double)e3.buf[0][i]) / 2);
            bad += memcmp(&want, &av.buf[0][i], 4) != 0;
            moved += e2.buf[0][i] != e3.buf[0][i];
        }
        printf("avg.ckpt against the mean of epoch2.ckpt and epoch3.ckpt: %zu of %zu differ "
               "(%zu differ between the two)\n", bad, av.n, moved);
        EXPECT(bad == 0, "avg.ckpt: %zu of %zu parameters are not the mean of the kept ones", bad,
               av.n);
        EXPECT(moved > av.n / 2, "epoch2 and epoch3 should differ");
        flat_free(&e2), flat_free(&e3), flat_free(&av);
    }
    if (!load_flat(tr_fmt("%s/best.ckpt", dA), &best) &&
        !load_flat(tr_fmt("%s/last.ckpt", dA), &last)) {
        EXPECT(best.buf[3] == NULL, "best.ckpt should hold the EMA weights as its parameters and "
               "no ema/ records");
        EXPECT(last.buf[3] != NULL, "last.ckpt should hold the EMA records");
        static const char *const weights_only[4] = {"best", "avg", "epoch2", "epoch3"};
        for (int i = 0; i < 4; i++) {
            const char *p = tr_fmt("%s/%s.ckpt", dA, weights_only[i]);
            EXPECT(count_records(p, "param/") > 0 && count_records(p, "adam_m/") == 0 &&
                       count_records(p, "adam_v/") == 0 && count_records(p, "ema/") == 0,
                   "%s.ckpt should hold the weights alone (no adam_m/, adam_v/ or ema/ records)",
                   weights_only[i]);
        }
        const char *lp = tr_fmt("%s/last.ckpt", dA);
        EXPECT(count_records(lp, "adam_m/") == count_records(lp, "param/") &&
                   count_records(lp, "adam_v/") == count_records(lp, "param/"),
               "last.ckpt should hold Adam's moments of every parameter");
        flat_free(&best), flat_free(&last);
    }

    /* ---- B: interrupted mid-epoch 1, resumed to the end ---- */
    const char *dB = test_strdup(tr_fmt("%s/B", g_work));
    rc = tr_train(g_work, dB, TIMEOUT, &log, opts[0], opts[1], opts[2], opts[3], opts[4], opts[5],
                  opts[6], opts[7], "--set", "train.max_steps=20", NULL);
    EXPECT(rc == 0, "B first part failed (exit %d)", rc);
    EXPECT(tr_file_contains(log, "no epoch checkpoint was written, so no avg.ckpt"),
           "B: stopped in epoch 1, the log should say there was nothing to average");
    EXPECT(!tr_exists(tr_fmt("%s/avg.ckpt", dB)), "B: avg.ckpt without an epoch checkpoint");
    rc = tr_train(g_work, dB, TIMEOUT, &log, "--resume", opts[0], opts[1], opts[2], opts[3],
                  opts[4], opts[5], opts[6], opts[7], NULL);
    EXPECT(rc == 0, "B resume failed (exit %d)", rc);
    EXPECT(tr_file_contains(log, "resumed from"), "B: the log does not say it resumed");
    expect_same_flat(tr_fmt("%s/last.ckpt", dA), tr_fmt("%s/last.ckpt", dB), 4,
                     "B (resumed at step 20) last.ckpt");
    expect_same_flat(tr_fmt("%s/avg.ckpt", dA), tr_fmt("%s/avg.ckpt", dB), 1,
                     "B (resumed at step 20) avg.ckpt");
    EXPECT(!tr_exists(tr_fmt("%s/epoch1.ckpt", dB)) && tr_exists(tr_fmt("%s/epoch3.ckpt", dB)),
           "B: the kept epoch checkpoints should be epochs 2 and 3");

    return tr_finish("test_avg_ema", t_start);
}
