/* test_ema.c — train.ema_decay: the exponential moving average of the weights
 * (Polyak & Juditsky 1992) that train_step keeps in ParamSet.ema.
 *
 *  1. After every step of the trainer's step (train_step, cfg.ema_decay = 0.9) on a tiny RNN,
 *     ps->ema equals a host recomputation of ema_t = d·ema_{t-1} + (1 − d)·θ_t from ema_0 = θ_0
 *     in float: each step bit for bit from the previous EMA (scale, then axpy, fused or not, as
 *     the backend's loop was compiled), and the whole chain from θ_0 to within 1e-5 relative;
 *     then again from a fresh EMA with train.ema_warmup, d = min(0.9, (1 + n) / (10 + n)) after
 *     n updates (Marian's and TensorFlow's warm-up), and train_ema_decay's two ends.
 *  2. A step with ema_decay = 0 leaves ps->ema alone.
 *  3. params_swap_ema twice restores data and ema bit for bit.
 *  4. checkpoint_save / checkpoint_load keep ema bit for bit ("ema/" records), and a model
 *     without ema saves a checkpoint without them that loads with ps.ema = NULL.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/batch.h"
#include "data/spm.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/step.h"

enum { V = 40, MAXLEN = 10, BUDGET = 100, NPAIRS = 200, STEPS = 12 };

static size_t count_diff_bits(const float *a, const float *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

int main(void) {
    /* random pairs of 1..MAXLEN tokens a side, ids 4..V-1 */
    Rng rng;
    rng_seed(&rng, 3, 3);
    TestCorpus corpus;
    if (test_random_corpus(&corpus, &rng, NPAIRS, MAXLEN, V, BUDGET))
        return test_report("test_ema");
    const Encoded *e = &corpus.e;
    const BatchPlan *plan = &corpus.plan;
    Err err;
    CHECK(plan->nbatches >= STEPS + 1, "too few batches");

    Config cfg;
    config_defaults(&cfg);
    cfg.model.type = MODEL_RNN, cfg.model.attention = ATTN_LUONG_GENERAL;
    cfg.model.emb = 8, cfg.model.hidden = 8, cfg.model.dropout = 0.1f;
    cfg.seed = 7, cfg.lr = 1e-2f, cfg.warmup_steps = 0, cfg.ema_decay = 0.9f;
    Model m;
    if (model_create(&m, &cfg.model, V, backend_cpu(), &err)) {
        EXPECT(0, "model_create: %s", err.msg);
        return test_report("test_ema");
    }
    model_init_params(&m, cfg.seed);
    ParamSet *ps = &m.ps;
    EXPECT(ps->ema == NULL, "a new model has no EMA buffer");
    params_allocate_ema(ps);
    size_t n = ps->total;
    int bB, bS, bT;
    batch_bounds(BUDGET, MAXLEN, &bB, &bS, &bT);
    TokenBatch tb;
    batch_alloc(&tb, bB, bS, bT, BUDGET, BUDGET);
    model_reserve(&m, bB, bS, bT, BUDGET, BUDGET);

    /* 1. the recurrence, step by step: first with the constant decay, then (1b) with
     * train.ema_warmup from a fresh EMA, d = min(0.9, (1 + n) / (10 + n)) after n updates */
    TrainState st = {.step = 0, .epoch = 1, .lr_scale = 1.0, .best_score = -1.0};
    for (int warm = 0; warm < 2; warm++) {
        cfg.ema_warmup = warm;
        if (warm) { /* a fresh EMA: ema = θ now */
            float *th0 = test_to_host(ps->be, ps->data, n);
            ps->be->upload(ps->ema, th0, sizeof(float) * n);
            free(th0);
        }
        float *ref = test_to_host(ps->be, ps->data, n); /* ema_0 = θ_0 */
        double worst = 0, dmin = 1, dmax = 0;
        size_t step_bad = 0;
        float *prev = test_to_host(ps->be, ps->ema, n);
        for (int t = 0; t < STEPS; t++) {
            batch_fill(&tb, e, plan->idx + plan->start[t],
                       (int)(plan->start[t + 1] - plan->start[t]));
            StepResult r = train_step(&m, &cfg, &tb, &st, NULL);
            EXPECT(r.finite, "step %d: non-finite", t + 1);
            double nu = st.adam_t - 1; /* updates before this one */
            const float d = warm && (1.0 + nu) / (10.0 + nu) < 0.9 ? (float)((1.0 + nu) / (10.0 + nu))
                                                                  : 0.9f;
            if (d < dmin) dmin = d;
            if (d > dmax) dmax = d;
            float *th = test_to_host(ps->be, ps->data, n), *em = test_to_host(ps->be, ps->ema, n);
            for (size_t i = 0; i < n; i++) {
                /* this step exactly, from the device's previous EMA: scale, then the axpy (with
                 * or without a fused multiply-add, as the compiler chose for the backend's loop) */
                volatile float sc = d * prev[i], w = (1.0f - d) * th[i];
                float plain = sc + w, fused = fmaf(1.0f - d, th[i], sc);
                if (memcmp(&em[i], &plain, 4) && memcmp(&em[i], &fused, 4)) step_bad++;
                ref[i] = d * ref[i] + (1.0f - d) * th[i];
                double err_i = fabs((double)em[i] - ref[i]) / (1e-3 + fabs(ref[i]));
                worst = test_max_nan(worst, err_i);
            }
            memcpy(prev, em, sizeof(float) * n);
            free(th), free(em);
        }
        float *th = test_to_host(ps->be, ps->data, n);
        size_t moved = 0;
        for (size_t i = 0; i < n; i++) moved += ref[i] != th[i];
        printf("EMA after %d steps (ema_warmup %d: d from %.4f to %.4f) against the host "
               "recurrence: worst relative error %.3g; %zu of %zu weights differ from the EMA\n",
               STEPS, warm, dmin, dmax, worst, moved, n);
        printf("each step against d·ema + (1 − d)·θ from the previous EMA: %zu of %zu values "
               "differ in their bits\n", step_bad, n * STEPS);
        EXPECT(step_bad == 0, "ema_warmup %d: %zu EMA values differ from the one-step recurrence",
               warm, step_bad);
        EXPECT(worst < 1e-5, "ema_warmup %d: EMA differs from the host recurrence (worst "
               "relative error %g)", warm, worst);
        EXPECT(moved > n / 2, "the EMA should lag the weights (only %zu of %zu differ)", moved, n);
        free(th), free(ref), free(prev);
    }
    cfg.ema_warmup = 0;
    /* the warm-up's ends: 0.1 for the first update, the configured decay from n = 81 (d = 0.9;
     * (1 + 80) / 90 = 0.9 exactly in real numbers) on, and off without ema_warmup */
    Config wc = cfg;
    wc.ema_warmup = 1;
    EXPECT(train_ema_decay(&wc, 0) == 0.1f, "first update: %g", (double)train_ema_decay(&wc, 0));
    EXPECT(train_ema_decay(&wc, 1000) == 0.9f, "after 1000 updates: %g",
           (double)train_ema_decay(&wc, 1000));
    EXPECT(train_ema_decay(&wc, 40) < 0.9f && train_ema_decay(&wc, 40) > 0.8f, "n = 40: %g",
           (double)train_ema_decay(&wc, 40));
    EXPECT(train_ema_decay(&cfg, 0) == 0.9f, "without ema_warmup: %g",
           (double)train_ema_decay(&cfg, 0));

    /* 2. ema_decay = 0: the buffer is left alone */
    float *before = test_to_host(ps->be, ps->ema, n);
    Config off = cfg;
    off.ema_decay = 0;
    batch_fill(&tb, e, plan->idx + plan->start[STEPS],
               (int)(plan->start[STEPS + 1] - plan->start[STEPS]));
    train_step(&m, &off, &tb, &st, NULL);
    float *after = test_to_host(ps->be, ps->ema, n);
    EXPECT(count_diff_bits(before, after, n) == 0, "ema_decay = 0 changed the EMA buffer");
    free(after);

    /* 3. swap twice: bit for bit */
    float *data0 = test_to_host(ps->be, ps->data, n);
    params_swap_ema(ps);
    float *sd = test_to_host(ps->be, ps->data, n), *se = test_to_host(ps->be, ps->ema, n);
    EXPECT(count_diff_bits(sd, before, n) == 0 && count_diff_bits(se, data0, n) == 0,
           "params_swap_ema does not exchange data and ema");
    params_swap_ema(ps);
    free(sd), free(se);
    sd = test_to_host(ps->be, ps->data, n), se = test_to_host(ps->be, ps->ema, n);
    EXPECT(count_diff_bits(sd, data0, n) == 0 && count_diff_bits(se, before, n) == 0,
           "params_swap_ema twice does not restore both buffers");
    free(sd), free(se);

    /* 4. checkpoint round trip, with and without ema */
    const char *dir = test_tmpdir();
    char spm_txt[1200], spm_prefix[1200], spm_model[1300];
    snprintf(spm_txt, sizeof spm_txt, "%s/spm.txt", dir);
    snprintf(spm_prefix, sizeof spm_prefix, "%s/spm", dir);
    snprintf(spm_model, sizeof spm_model, "%s.model", spm_prefix);
    FILE *f = fopen(spm_txt, "w");
    CHECK(f, "cannot write the SentencePiece text");
    for (int i = 0; i < 200; i++)
        fprintf(f, "ein kleiner test %d und noch ein satz mit wörtern\n", i);
    fclose(f);
    const char *files[1] = {spm_txt};
    Spm *spm = NULL;
    if (spm_train(files, 1, 60, spm_prefix, 1, &err) || spm_load(&spm, spm_model, &err)) {
        EXPECT(0, "SentencePiece: %s", err.msg);
        return test_report("test_ema");
    }
    /* a model of the spm's vocabulary, so that the checkpoint's config and spm agree */
    Model m2;
    int V2 = spm_vocab_size(spm);
    cfg.train_src[0] = 'x', cfg.train_tgt[0] = 'x', cfg.val_src[0] = 'x', cfg.val_tgt[0] = 'x';
    CHECK(!model_create(&m2, &cfg.model, V2, backend_cpu(), &err), "model_create");
    model_init_params(&m2, 11);
    params_allocate_ema(&m2.ps);
    float *h = test_to_host(m2.ps.be, m2.ps.ema, m2.ps.total);
    for (int t = 0; t < m2.ps.n; t++) /* tensors only: the alignment gaps load as zeros */
        for (size_t j = 0; j < m2.ps.specs[t].size; j++) {
            float *x = &h[m2.ps.specs[t].offset + j];
            *x = *x * 0.5f + 1e-3f * (float)(j % 7);
        }
    m2.be->upload(m2.ps.ema, h, sizeof(float) * m2.ps.total);
    char p1[1300], p2[1300];
    snprintf(p1, sizeof p1, "%s/ema.ckpt", dir);
    snprintf(p2, sizeof p2, "%s/noema.ckpt", dir);
    TrainState s0 = {.step = 1, .epoch = 1, .lr_scale = 1.0, .best_score = -1.0,
                     .epoch_rng = {1, 1}};
    EXPECT(!checkpoint_save(p1, &m2, &cfg, spm, &s0, &err), "save with ema: %s", err.msg);
    Model l;
    Config lc;
    Spm *lspm;
    if (!checkpoint_load(p1, &l, &lc, &lspm, NULL, -1, &err)) {
        EXPECT(l.ps.ema != NULL, "a checkpoint with ema/ records loads without the EMA buffer");
        if (l.ps.ema) {
            float *g = test_to_host(l.ps.be, l.ps.ema, l.ps.total);
            EXPECT(count_diff_bits(g, h, m2.ps.total) == 0, "EMA not restored bit for bit");
            free(g);
        }
        EXPECT(fabsf(lc.ema_decay - 0.9f) == 0, "ema_decay not stored in the config");
        model_free(&l), spm_free(lspm);
    } else {
        EXPECT(0, "load with ema: %s", err.msg);
    }
    float *held = m2.ps.ema;
    m2.ps.ema = NULL;
    EXPECT(!checkpoint_save(p2, &m2, &cfg, spm, &s0, &err), "save without ema: %s", err.msg);
    m2.ps.ema = held;
    if (!checkpoint_load(p2, &l, &lc, &lspm, NULL, -1, &err)) {
        EXPECT(l.ps.ema == NULL, "a checkpoint without ema/ records loads with an EMA buffer");
        model_free(&l), spm_free(lspm);
    } else {
        EXPECT(0, "load without ema: %s", err.msg);
    }
    printf("checkpoint with ema/ records: restored bit for bit; without: loads with no EMA\n");

    free(h), free(before), free(data0);
    spm_free(spm);
    model_free(&m2);
    batch_free(&tb);
    model_free(&m);
    test_random_corpus_free(&corpus);
    return test_report("test_ema");
}
