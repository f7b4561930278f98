/* test_nonfinite.c — a NaN or Inf loss or gradient skips the update and is logged with its step;
 * train.max_nonfinite of them in a row end the run with a clear error; no checkpoint ever holds a
 * non-finite value.
 *
 * Non-finite steps are injected through TRAINER_TEST_INJECT_NONFINITE (src/train/inject.h: the
 * loss, or the first gradient element, of the listed steps is made NaN or Inf after the backward
 * pass). Tiny config, 2000/100 Multi30k pairs, one thread, log_every = save_every = 1.
 *   0. base: steps 1-2, last.ckpt at step 2; ref4: base resumed to step 4 without injection.
 *   1. For each kind (loss NaN, loss Inf, gradient NaN, gradient Inf): base resumed to step 3
 *      with step 3 poisoned: exit 0, the log names step 3 and "update skipped", metrics.jsonl has
 *      no line for step 3 (and no malformed line), and the step-3 checkpoint holds exactly the
 *      step-2 parameters, Adam moments and Adam step (the update was skipped, nothing else).
 *   2. Scattered injections (never train.max_nonfinite in a row): base resumed to step 12 with
 *      steps 4, 6, 8, 9 poisoned and max_nonfinite = 3: exit 0, four "update skipped" lines with
 *      their steps, every logged loss finite.
 *   3. K in a row: base resumed with steps 5.. poisoned and max_nonfinite = 4: exit 1 with
 *      "steps 5 to 8: train.max_nonfinite = 4 steps in a row"; last.ckpt (step 7) holds exactly
 *      ref4's parameters and moments; a plain --resume then continues to step 10. With the
 *      default (10): "steps 3 to 12: train.max_nonfinite = 10".
 *   4. A malformed TRAINER_TEST_INJECT_NONFINITE is refused (exit 1, the variable named).
 * Every checkpoint written is read back record by record: every f32 element finite.
 */
#include <math.h>

#include "trainer_run.h"
#include "train/checkpoint.h"
#include "train/ckptfile.h"

#define TIMEOUT 120.0

static const char *g_work, *g_dir, *g_last;
static int g_run_no = 0, g_injected = 0, g_ckpts_scanned = 0;
static char *g_base, *g_base_metrics;
static size_t g_base_n, g_base_metrics_n;

/* `trainer train` into g_dir with save_every = 1, the injection spec (NULL: none) and more
 * arguments (NULL-terminated). Returns the exit code; the log path in *log_out. */
static int train(const char *inject, const char **log_out, ...) {
    TrArgv a;
    tr_train_argv(&a, g_work, g_dir);
    tr_set(&a, "train.save_every=1");
    va_list ap;
    va_start(ap, log_out);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) tr_arg(&a, "%s", s);
    va_end(ap);
    const char *log = tr_fmt("%s/run%02d.log", g_work, ++g_run_no);
    if (inject) setenv("TRAINER_TEST_INJECT_NONFINITE", inject, 1);
    int rc = tr_run(a.v, log, NULL, TIMEOUT);
    unsetenv("TRAINER_TEST_INJECT_NONFINITE");
    printf("run %d (inject '%s'): exit %d\n", g_run_no, inject ? inject : "", rc);
    tr_argv_free(&a);
    if (log_out) *log_out = log;
    return rc;
}

static void restore_base(void) {
    EXPECT(test_write_file(g_last, g_base, g_base_n) == 0, "restore last.ckpt");
    EXPECT(test_write_file(tr_fmt("%s/metrics.jsonl", g_dir), g_base_metrics,
                           g_base_metrics_n) == 0, "restore metrics.jsonl");
}

/* Reads every record of a checkpoint and checks that every f32 element is finite. Returns the
 * number of non-finite elements (-1 if it cannot be read). */
static long nonfinite_in(const char *path) {
    CkptRecord *r = NULL;
    int n = 0;
    Err err;
    if (ckpt_read(path, &r, &n, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    long bad = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].dtype != CKPT_F32) continue;
        const float *x = r[i].data;
        for (size_t k = 0; k < r[i].nbytes / sizeof(float); k++) bad += !isfinite(x[k]);
    }
    ckpt_records_free(r, n);
    g_ckpts_scanned++;
    return bad;
}

/* Parameters + Adam moments (host copy, 3 × total floats) and state of a checkpoint; NULL when
 * it does not load. */
static float *state_of(const char *path, TrainState *st, size_t *total) {
    Model m;
    Config cfg;
    Spm *spm;
    Err err;
    if (checkpoint_load(path, &m, &cfg, &spm, st, -1, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return NULL;
    }
    size_t n = m.ps.total;
    float *h = malloc(sizeof(float) * n * 3);
    m.be->download(h, m.ps.data, sizeof(float) * n);
    m.be->download(h + n, m.ps.m, sizeof(float) * n);
    m.be->download(h + 2 * n, m.ps.v, sizeof(float) * n);
    model_free(&m), spm_free(spm);
    *total = n;
    return h;
}

static int same_state(const float *a, const float *b, size_t n) {
    return a && b && memcmp(a, b, sizeof(float) * n * 3) == 0;
}

/* Counts the "update skipped" lines of a log. */
static int skipped_lines(const char *log) {
    char *t = test_read_file(log, NULL);
    int n = 0;
    for (const char *p = t; p && (p = strstr(p, "; update skipped")); p++) n++;
    free(t);
    return n;
}

int main(void) {
    double t_start;
    char *work = tr_begin("test_nonfinite", &t_start);
    g_work = work;
    g_dir = strdup(tr_fmt("%s/run", g_work));
    g_last = strdup(tr_fmt("%s/last.ckpt", g_dir));
    const char *log = NULL;

    /* 0. base (step 2) and ref4 (step 4, no injection) */
    int rc = train(NULL, &log, "--set", "train.max_steps=2", NULL);
    EXPECT(rc == 0, "base run: exit %d", rc);
    if (rc != 0) {
        tr_print_tail(log, 10);
        return tr_finish("test_nonfinite", t_start);
    }
    g_base = test_read_file(g_last, &g_base_n);
    g_base_metrics = test_read_file(tr_fmt("%s/metrics.jsonl", g_dir), &g_base_metrics_n);
    TrainState st2, st, st4;
    size_t total = 0;
    float *p2 = state_of(g_last, &st2, &total);
    EXPECT(p2 && st2.step == 2 && st2.adam_t == 2, "base checkpoint at step 2");
    rc = train(NULL, &log, "--set", "train.max_steps=4", "--resume", NULL);
    float *p4 = state_of(g_last, &st4, &total);
    EXPECT(rc == 0 && p4 && st4.step == 4 && st4.adam_t == 4, "ref4: exit %d", rc);

    /* 1. each kind at step 3 */
    static const char *const kinds[] = {"nan", "inf", "grad-nan", "grad-inf"};
    static const char *const shows[] = {"loss (nan)", "loss (inf)", "gradient norm (nan)",
                                        "gradient norm (inf)"};
    for (int k = 0; k < 4; k++) {
        restore_base();
        rc = train(tr_fmt("3:%s", kinds[k]), &log, "--set", "train.max_steps=3", "--resume",
                   NULL);
        g_injected++;
        const char *want = tr_fmt("step 3: non-finite %s", shows[k]);
        EXPECT(rc == 0, "%s at step 3: exit %d", kinds[k], rc);
        EXPECT(tr_file_contains(log, want) && tr_file_contains(log, "update skipped") &&
                   tr_file_contains(log, tr_fmt("[injected: %s]", kinds[k])),
               "%s at step 3: the log should say '%s'", kinds[k], want);
        EXPECT(skipped_lines(log) == 1, "%s: %d skipped lines", kinds[k], skipped_lines(log));
        TrMetrics m;
        EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", g_dir), &m) == 0, "metrics");
        EXPECT(m.bad_lines == 0 && tr_metrics_step(&m, 2) && !tr_metrics_step(&m, 3),
               "%s: metrics.jsonl should hold step 2, no step 3 and no malformed line (%ld bad)",
               kinds[k], m.bad_lines);
        tr_metrics_free(&m);
        EXPECT(nonfinite_in(g_last) == 0, "%s: the checkpoint holds non-finite values", kinds[k]);
        float *p3 = state_of(g_last, &st, &total);
        EXPECT(p3 && st.step == 3 && st.adam_t == 2 && same_state(p2, p3, total),
               "%s at step 3: the step-3 checkpoint should hold the step-2 parameters and "
               "moments (step %ld, adam_t %d)", kinds[k], st.step, st.adam_t);
        free(p3);
        if (rc != 0) tr_print_tail(log, 8);
    }

    /* 2. scattered, never max_nonfinite in a row */
    restore_base();
    rc = train("4,6:grad-inf,8-9:grad-nan", &log, "--set", "train.max_steps=12", "--set",
               "train.max_nonfinite=3", "--resume", NULL);
    g_injected += 4;
    EXPECT(rc == 0, "scattered injections: exit %d", rc);
    EXPECT(skipped_lines(log) == 4 && tr_file_contains(log, "step 4: non-finite loss (nan)") &&
               tr_file_contains(log, "step 6: non-finite") &&
               tr_file_contains(log, "step 8: non-finite") &&
               tr_file_contains(log, "step 9: non-finite"),
           "scattered: %d skipped lines, or a step missing from them", skipped_lines(log));
    EXPECT(tr_file_contains(log, "(2 in a row; train.max_nonfinite = 3)"),
           "steps 8 and 9 should count 2 in a row");
    {
        TrMetrics m;
        EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", g_dir), &m) == 0, "metrics");
        long logged = 0;
        for (long s = 3; s <= 12; s++) logged += tr_metrics_step(&m, s) != NULL;
        EXPECT(m.bad_lines == 0 && logged == 6, "scattered: %ld finite steps of 3..12 logged "
               "(6 expected), %ld malformed lines", logged, m.bad_lines);
        tr_metrics_free(&m);
    }
    free(state_of(g_last, &st, &total));
    EXPECT(st.step == 12 && st.adam_t == 2 + 6, "scattered: step %ld adam_t %d (12, 8 expected)",
           st.step, st.adam_t);
    EXPECT(nonfinite_in(g_last) == 0, "scattered: the checkpoint holds non-finite values");

    /* 3. K in a row */
    restore_base();
    rc = train("5-1000:nan", &log, "--set", "train.max_steps=30", "--set",
               "train.max_nonfinite=4", "--resume", NULL);
    g_injected += 4;
    EXPECT(rc == 1, "4 in a row: exit %d, expected 1", rc);
    EXPECT(strstr(tr_last_line(log), "steps 5 to 8: train.max_nonfinite = 4 steps in a row") &&
               strstr(tr_last_line(log), g_last),
           "4 in a row: last line '%s'", tr_last_line(log));
    float *p7 = state_of(g_last, &st, &total);
    EXPECT(p7 && st.step == 7 && st.adam_t == 4 && same_state(p4, p7, total),
           "4 in a row: last.ckpt should be step 7 with ref4's parameters (step %ld adam_t %d)",
           st.step, st.adam_t);
    EXPECT(nonfinite_in(g_last) == 0, "4 in a row: the checkpoint holds non-finite values");
    free(p7);
    rc = train(NULL, &log, "--set", "train.max_steps=10", "--resume", NULL);
    EXPECT(rc == 0 && tr_file_contains(log, "resumed from") &&
               tr_file_contains(log, "reached train.max_steps = 10"),
           "--resume after the stop: exit %d", rc);
    free(state_of(g_last, &st, &total));
    EXPECT(st.step == 10 && st.adam_t == 7, "after the resume: step %ld adam_t %d", st.step,
           st.adam_t);
    EXPECT(nonfinite_in(g_last) == 0, "resumed: the checkpoint holds non-finite values");
    /* the default is 10 */
    restore_base();
    rc = train("3-1000:grad-nan", &log, "--set", "train.max_steps=40", "--resume", NULL);
    g_injected += 10;
    EXPECT(rc == 1 && strstr(tr_last_line(log), "steps 3 to 12: train.max_nonfinite = 10 steps"),
           "default max_nonfinite: exit %d, last line '%s'", rc, tr_last_line(log));
    EXPECT(nonfinite_in(g_last) == 0, "default: the checkpoint holds non-finite values");

    /* 4. a malformed spec */
    restore_base();
    rc = train("3:nann", &log, "--set", "train.max_steps=3", "--resume", NULL);
    EXPECT(rc == 1 && strstr(tr_last_line(log), "TRAINER_TEST_INJECT_NONFINITE") &&
               strstr(tr_last_line(log), "'3:nann'"),
           "malformed spec: exit %d, '%s'", rc, tr_last_line(log));
    EXPECT(tr_file_size(g_last) == (long)g_base_n, "a refused spec touched last.ckpt");

    printf("non-finite steps injected: %d; checkpoints scanned element by element: %d\n",
           g_injected, g_ckpts_scanned);
    free(p2);
    free(p4);
    free(g_base);
    free(g_base_metrics);
    return tr_finish("test_nonfinite", t_start);
}
