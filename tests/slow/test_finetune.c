/* test_finetune.c — train.init_from (fine-tuning) through `trainer train`.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread. A: the source run, 1 epoch; its best.ckpt is the checkpoint fine-tuned from.
 *   B  init_from = A/best.ckpt, lr 1e-30 (min_lr 0), 6 steps: exit 0, the log says where the
 *      weights came from; every parameter of B's last.ckpt is bit for bit A/best.ckpt's (the
 *      update lr·m/(√v + ε) ~ 1e-30 rounds away); metrics.jsonl counts steps from 1 (a fresh
 *      step count); config.ini holds init_from and init_from_crc, the CRC-32 of A/best.ckpt;
 *      B's spm.model is A's. Then --resume to step 8 is accepted and keeps the CRC.
 *   C  init_from = A/best.ckpt on new data (the validation pairs as training text), lr 3e-3,
 *      6 steps: most parameters move.
 *   D  refusals, each naming the key: another model.hidden (the architecture), another
 *      data.vocab_size (the SentencePiece model), an init_from_crc of another file, and
 *      init_from_crc without init_from (a config error, status 2); and --resume without a
 *      last.ckpt fails before it reads the corpora (a training file that does not exist is not
 *      named).
 */
#include <math.h>

#include "trainer_run.h"
#include "train/checkpoint.h"
#include "train/ckptfile.h"

#define TIMEOUT 240.0

static const char *g_work;

/* The parameters of a checkpoint (host), *n of them; NULL when it does not load. */
static float *params_of(const char *path, size_t *n) {
    Model m;
    Config c;
    Spm *spm;
    Err err;
    if (checkpoint_load_weights(path, &m, &c, &spm, -1, &err)) {
        EXPECT(0, "cannot load %s: %s", path, err.msg);
        return NULL;
    }
    *n = m.ps.total;
    float *p = malloc(sizeof(float) * *n);
    m.be->download(p, m.ps.data, sizeof(float) * *n);
    model_free(&m);
    spm_free(spm);
    return p;
}

/* How many of the parameters of checkpoint b differ from a's in their bits; -1 when they do
 * not load or differ in count. */
static long params_differ(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    float *pa = params_of(a, &na), *pb = params_of(b, &nb);
    long d = -1;
    if (pa && pb && na == nb) {
        d = 0;
        for (size_t i = 0; i < na; i++) d += memcmp(&pa[i], &pb[i], 4) != 0;
        printf("%s against %s: %ld of %zu parameters differ\n", b, a, d, na);
    }
    free(pa);
    free(pb);
    return d;
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_finetune", &t_start);
    const char *log = NULL;

    /* ---- D (config): init_from_crc without init_from, before any data work ---- */
    int rc = tr_train(g_work, tr_fmt("%s/D0", g_work), TIMEOUT, &log, "--set",
                      "train.init_from_crc=0123abcd", NULL);
    printf("init_from_crc alone: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 2 && tr_file_contains(log, "train.init_from_crc") &&
               tr_file_contains(log, "without train.init_from"),
           "init_from_crc without init_from should be a config error naming both keys (exit %d)",
           rc);

    /* ---- A: the source run ---- */
    const char *dA = test_strdup(tr_fmt("%s/A", g_work));
    rc = tr_train(g_work, dA, TIMEOUT, &log, "--set", "train.max_epochs=1", NULL);
    EXPECT(rc == 0 && tr_exists(tr_fmt("%s/best.ckpt", dA)), "run A failed (exit %d)", rc);
    if (rc != 0) return tr_finish("test_finetune", t_start);
    const char *src = test_strdup(tr_fmt("%s/best.ckpt", dA));
    const char *init = test_strdup(tr_fmt("train.init_from=%s", src));
    int64_t size;
    uint32_t crc;
    EXPECT(file_crc32(src, &size, &crc) == 0, "cannot read %s", src);

    /* ---- B: lr ~ 0 leaves every weight as it was ---- */
    const char *dB = test_strdup(tr_fmt("%s/B", g_work));
    rc = tr_train(g_work, dB, TIMEOUT, &log, "--set", init, "--set", "train.lr=1e-30", "--set",
                  "train.min_lr=0", "--set", "train.max_steps=6", NULL);
    EXPECT(rc == 0, "B failed (exit %d)", rc);
    EXPECT(tr_file_contains(log, "initialised from train.init_from"), "B: the log does not say "
           "where the weights came from");
    EXPECT(params_differ(src, tr_fmt("%s/last.ckpt", dB)) == 0,
           "B: lr 1e-30 should leave every parameter of %s bit for bit", src);
    TrMetrics m;
    if (tr_metrics_read(tr_fmt("%s/metrics.jsonl", dB), &m) == 0) {
        EXPECT(m.n == 6 && m.steps[0].step == 1 && m.steps[5].step == 6,
               "B: metrics.jsonl should log steps 1..6 (a fresh step count), has %ld lines from "
               "step %ld", m.n, m.n ? m.steps[0].step : -1L);
        tr_metrics_free(&m);
    }
    char want[64];
    snprintf(want, sizeof want, "init_from_crc = \"%08x\"", crc);
    EXPECT(tr_file_contains(tr_fmt("%s/config.ini", dB), want) &&
               tr_file_contains(tr_fmt("%s/config.ini", dB), tr_fmt("init_from = \"%s\"", src)),
           "B: config.ini should record init_from and %s", want);
    EXPECT(test_files_equal(tr_fmt("%s/spm.model", dA), tr_fmt("%s/spm.model", dB)),
           "B: spm.model should be the source run's");
    rc = tr_train(g_work, dB, TIMEOUT, &log, "--set", init, "--set", "train.lr=1e-30", "--set",
                  "train.min_lr=0", "--set", "train.max_steps=8", "--resume", NULL);
    EXPECT(rc == 0 && tr_file_contains(log, "resumed from"), "B: --resume failed (exit %d)", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/config.ini", dB), want), "B: after --resume config.ini "
           "should still record %s", want);
    /* the run's config.ini is a config that starts the same run again (the CRC checked) */
    const char *dB2 = test_strdup(tr_fmt("%s/B2", g_work));
    TrArgv a;
    tr_train_argv_config(&a, tr_fmt("%s/config.ini", dB), g_work, dB2);
    tr_set(&a, "train.max_steps=2");
    rc = tr_run(a.v, tr_fmt("%s/b2.log", g_work), NULL, TIMEOUT);
    tr_argv_free(&a);
    EXPECT(rc == 0, "B2: training from B's config.ini failed (exit %d)", rc);

    /* ---- C: new data moves the weights ---- */
    const char *dC = test_strdup(tr_fmt("%s/C", g_work));
    rc = tr_train(g_work, dC, TIMEOUT, &log, "--set", init, "--set",
                  tr_fmt("data.train_src=%s/val.de", g_work), "--set",
                  tr_fmt("data.train_tgt=%s/val.en", g_work), "--set", "train.max_steps=6", NULL);
    EXPECT(rc == 0, "C failed (exit %d)", rc);
    size_t n = 0;
    free(params_of(src, &n));
    long moved = params_differ(src, tr_fmt("%s/last.ckpt", dC));
    EXPECT(moved > (long)n / 2, "C: fine-tuning on new data should move most parameters (%ld of "
           "%zu moved)", moved, n);

    /* ---- D: refusals naming the key ---- */
    rc = tr_train(g_work, tr_fmt("%s/D1", g_work), TIMEOUT, &log, "--set", init, "--set",
                  "model.hidden=128", NULL);
    printf("another model.hidden: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1 && tr_file_contains(log, "model.hidden: 64 -> 128"),
           "another architecture should be refused naming model.hidden (exit %d)", rc);
    rc = tr_train(g_work, tr_fmt("%s/D2", g_work), TIMEOUT, &log, "--set", init, "--set",
                  "data.vocab_size=600", NULL);
    printf("another data.vocab_size: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1 && tr_file_contains(log, "data.vocab_size = 600"),
           "another vocabulary size should be refused naming data.vocab_size (exit %d)", rc);
    rc = tr_train(g_work, tr_fmt("%s/D3", g_work), TIMEOUT, &log, "--set", init, "--set",
                  tr_fmt("train.init_from_crc=%08x", crc ^ 1u), NULL);
    printf("another CRC: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1 && tr_file_contains(log, "train.init_from_crc"),
           "a checkpoint of another CRC should be refused naming train.init_from_crc (exit %d)",
           rc);
    /* --resume without last.ckpt fails before reading the corpora (one that does not exist) */
    rc = tr_train(g_work, tr_fmt("%s/D4", g_work), TIMEOUT, &log, "--set",
                  "data.train_src=/nonexistent/train.de", "--resume", NULL);
    printf("--resume without last.ckpt: exit %d, says: %s\n", rc, tr_last_line(log));
    EXPECT(rc == 1 && tr_file_contains(log, "--resume: there is no checkpoint") &&
               !tr_file_contains(log, "/nonexistent/train.de"),
           "--resume without last.ckpt should fail before reading the training data (exit %d)",
           rc);
    return tr_finish("test_finetune", t_start);
}
