/* test_rnn_grad.c — the whole tiny RNN model's backward against central finite differences, for
 * every attention kind of the table (the multi-head ones, the rows' multi_head, with 2 heads,
 * linformer at r 3, n 6 >= S 5; luong_local in both modes with each score, per step and batched;
 * any other kind in both cells and both feeds), both cells and both input-feeding settings, and the batched attention (input_feeding = false,
 * Tq = T) against the step-by-step one (Tq = 1).
 *
 * Finite differences: parameter elements of a tiny model (V 13, E 4, H 6, batch of 3 with padding;
 * twice also a batch of sequences of at most two steps, S = T = 2) are perturbed by ±eps — every
 * element of tensors up to 48 elements, 48 spread-out elements of bigger ones (8 under a sanitizer:
 * test_fd_samples) — and the analytic gradient must match (loss in float32, so the tolerance is
 * |a − n| ≤ 2e-3 + 2e-2·|n|), and normwise, per tensor whose sampled gradient has a norm of at least
 * 1e-2, ‖a − n‖ ≤ 1e-2·‖n‖ (an error in every element, such as a wrong scale, that the absolute
 * floor lets through elementwise). sdp runs once more with its weights initialised at scale 2,
 * where its W_q and W_k gradients are far above the differences' noise. Dropout is on (p = 0.2):
 * masks are a pure function of the key, so the perturbed passes see the same masks.
 * Before the finite differences, a second training pass with grad_scale 0.5 and no zeroing must
 * add half of every gradient again (the gradients accumulate, scaled; testutil.h).
 * Batched vs step by step: the same model and batch with rnn_set_stepwise off and on must give
 * the same loss and gradients up to float32 reordering (|a − b| ≤ 1e-5 + 1e-4·|b|).
 * Padding: a source token past a sentence's length, changed, must not change the loss.
 * Output layer in blocks of rows (rnn_set_loss_rows): 9 target rows in blocks of 2 give the loss
 * and gradients of one block (same bound as batched vs step by step), and the finite
 * differences hold for a model run in blocks; after rnn_release and a new reserve the model
 * gives the same loss. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/tokens.h"
#include "data/batch.h"
#include "model/rnn.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"

typedef struct {
    RnnModel *m;
    ParamSet ps;
    TokenBatch batch; /* batch-major, from the time-major arrays below */
    int src[5 * 3], tin[4 * 3], tout[4 * 3], src_len[3];
} Fixture;

/* The kinds' options for the next fixture (each kind reads its own): linformer r 3, n 6 (>= S);
 * luong_local's window, mode and score (main sets them for its cases) */
static AttentionOptions attn_opt = {.linformer_k = 3, .linformer_max_len = 6,
                                    .linformer_share = LINFORMER_SHARE_NONE, .local_window = 1,
                                    .local_mode = LOCAL_PREDICTIVE,
                                    .local_score = LOCAL_SCORE_GENERAL};

/* the next fixture's parameter initialisation scale (params_initialise) */
static float init_scale = 0.5f;

/* rnn_set_loss_rows for the next fixture (0: one block) */
static int loss_rows = 0;

/* 1: the next fixture's batch has sequences of two steps at most (S = T = 2), where the
 * recurrent weights' gradient sums a single step past the first */
static int short_seq = 0;

static const char *describe(AttentionKind kind, int gru, int feed, int Le, int Ld) {
    static char buf[128];
    snprintf(buf, sizeof buf, "%s %s feed=%d Le=%d Ld=%d", attention_kind_names[kind],
             gru ? "gru" : "lstm", feed, Le, Ld);
    if (kind == ATTN_LUONG_LOCAL)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " D=%d %s %s",
                 attn_opt.local_window, local_mode_names[attn_opt.local_mode],
                 local_score_names[attn_opt.local_score]);
    return buf;
}

static int fixture(Fixture *f, AttentionKind kind, int gru, int feed, int Le, int Ld) {
    const Backend *be = backend_cpu();
    Err err;
    int V = 13, E = 4, H = 6, B = 3, S = short_seq ? 2 : 5, T = short_seq ? 2 : 4;
    params_init_set(&f->ps, be);
    /* heads = 2 (HS 3): used by the multi-head kinds sdp, flash, linear, efficient */
    ModelSpec spec = {.type = MODEL_RNN, .cell = gru ? CELL_GRU : CELL_LSTM, .attention = kind,
                      .emb = E, .hidden = H, .enc_layers = Le, .dec_layers = Ld, .dropout = 0.2f,
                      .input_feeding = feed, .heads = 2, .attn_opt = attn_opt};
    if (rnn_create(&f->m, &f->ps, &spec, V, &err)) {
        EXPECT(0, "rnn_create (%s): %s", describe(kind, gru, feed, Le, Ld), err.msg);
        return 1;
    }
    params_allocate(&f->ps);
    Rng rng;
    rng_seed(&rng, 7, 1);
    params_initialise(&f->ps, &rng, init_scale);
    rnn_set_loss_rows(f->m, loss_rows);
    rnn_reserve(f->m, B, S, T, (long)B * S, (long)B * T);
    int src_len[3] = {5, 3, 1}, tgt_len[3] = {4, 2, 3};
    if (short_seq) src_len[0] = 2, src_len[1] = 1, src_len[2] = 2, tgt_len[0] = 2,
                   tgt_len[1] = 1, tgt_len[2] = 2;
    memcpy(f->src_len, src_len, sizeof src_len);
    test_random_src(f->src, S, B, src_len, V, &rng);
    test_random_tgt(f->tin, f->tout, T, B, tgt_len, V, &rng);
    test_token_batch(&f->batch, B, S, T, f->src, f->src_len, f->tin, f->tout);
    return 0;
}

static void fixture_free(Fixture *f) {
    batch_free(&f->batch);
    rnn_free(f->m);
    params_free(&f->ps);
}

/* the kinds run() and run_stepwise() have checked: every kind of the table must be (main) */
static int ran[ATTN_KIND_COUNT], ran_stepwise[ATTN_KIND_COUNT];

/* Batched attention and output layer vs step by step: same loss, same gradients. */
static void run_stepwise(AttentionKind kind, int gru) {
    ran_stepwise[kind] = 1;
    Fixture f;
    if (fixture(&f, kind, gru, 0, 1, 1)) return;
    uint64_t key = 99;
    params_zero_grad(&f.ps);
    double l1 = rnn_forward_backward(f.m, &f.batch, 0.1f, 1, key, 1.0f);
    float *g1 = xmalloc(sizeof(float) * f.ps.total);
    memcpy(g1, f.ps.grad, sizeof(float) * f.ps.total);
    rnn_set_stepwise(f.m, 1);
    params_zero_grad(&f.ps);
    double l2 = rnn_forward_backward(f.m, &f.batch, 0.1f, 1, key, 1.0f);
    double worst;
    long bad = test_grad_mismatches(g1, f.ps.grad, f.ps.total, 1e-5, 1e-4, &worst);
    printf("%s: batched vs step by step: loss %.9g vs %.9g, worst gradient difference %.2e\n",
           describe(kind, gru, 0, 1, 1), l1, l2, worst);
    EXPECT(fabs(l1 - l2) <= 1e-5 * fabs(l2), "%s: loss batched %.9g, step by step %.9g",
           describe(kind, gru, 0, 1, 1), l1, l2);
    EXPECT(bad == 0, "%s: %ld gradients differ between batched and step by step",
           describe(kind, gru, 0, 1, 1), bad);
    /* padding: change a padded source token; nothing may change */
    rnn_set_stepwise(f.m, 0);
    f.batch.src[1 * 5 + 4] = 5; /* sentence 1 (length 3), t = 4 */
    double l3 = rnn_forward_backward(f.m, &f.batch, 0.1f, 0, key, 0.0f);
    EXPECT(l3 == rnn_forward_backward(f.m, &f.batch, 0.1f, 0, key, 0.0f), "not deterministic");
    f.batch.src[1 * 5 + 4] = 9;
    double l4 = rnn_forward_backward(f.m, &f.batch, 0.1f, 0, key, 0.0f);
    EXPECT(l3 == l4, "%s: a padded source token changed the loss (%.9g vs %.9g)",
           describe(kind, gru, 0, 1, 1), l3, l4);
    free(g1);
    fixture_free(&f);
}

/* The output layer and loss in blocks of 2 rows (5 blocks of the 9 target rows) against one
 * block: same loss, same gradients (only dW_out's and db_out's sums run in another order). */
static void run_blocks(AttentionKind kind, int gru, int feed) {
    Fixture f1, f2;
    if (fixture(&f1, kind, gru, feed, 1, 1)) return;
    loss_rows = 2;
    int fail = fixture(&f2, kind, gru, feed, 1, 1);
    loss_rows = 0;
    if (fail) {
        fixture_free(&f1);
        return;
    }
    uint64_t key = 77;
    params_zero_grad(&f1.ps);
    params_zero_grad(&f2.ps);
    double l1 = rnn_forward_backward(f1.m, &f1.batch, 0.1f, 1, key, 1.0f);
    double l2 = rnn_forward_backward(f2.m, &f2.batch, 0.1f, 1, key, 1.0f);
    double e1 = rnn_forward_backward(f1.m, &f1.batch, 0.1f, 0, key, 0.0f);
    double e2 = rnn_forward_backward(f2.m, &f2.batch, 0.1f, 0, key, 0.0f);
    double worst;
    long bad = test_grad_mismatches(f2.ps.grad, f1.ps.grad, f1.ps.total, 1e-5, 1e-4, &worst);
    const char *what = describe(kind, gru, feed, 1, 1);
    printf("%s: loss in blocks of 2 rows vs one: %.9g vs %.9g, worst gradient difference %.2e\n",
           what, l2, l1, worst);
    EXPECT(fabs(l1 - l2) <= 1e-6 * fabs(l1), "%s: loss in blocks %.9g, in one %.9g", what, l2, l1);
    EXPECT(fabs(e1 - e2) <= 1e-6 * fabs(e1), "%s: evaluation loss in blocks %.9g, in one %.9g",
           what, e2, e1);
    EXPECT(bad == 0, "%s: %ld gradients differ between blocks of rows and one block", what, bad);
    /* rnn_release, then a new reserve (the fixture's bounds): the same evaluation loss, bit for
     * bit (a release that kept the capacity would reuse freed buffers: ASan's report) */
    rnn_release(f1.m);
    rnn_reserve(f1.m, 3, 5, 4, 15, 12);
    double r1 = rnn_forward_backward(f1.m, &f1.batch, 0.1f, 0, key, 0.0f);
    EXPECT(r1 == e1, "%s: evaluation loss after rnn_release and rnn_reserve %.9g, before %.9g",
           what, r1, e1);
    fixture_free(&f1);
    fixture_free(&f2);
}

/* The loss fd_compare differentiates: the training pass with gradient scale 0, dropout keyed as
 * in the analytic pass. */
typedef struct {
    RnnModel *m;
    TokenBatch *batch;
    uint64_t key;
} LossCtx;
static double loss_at(void *p) {
    LossCtx *c = p;
    return rnn_forward_backward(c->m, c->batch, 0.1f, 1, c->key, 0.0f);
}

static void run(AttentionKind kind, int gru, int feed, int Le, int Ld) {
    ran[kind] = 1;
    Fixture f;
    if (fixture(&f, kind, gru, feed, Le, Ld)) return;
    RnnModel *m = f.m;
    ParamSet ps = f.ps;
    TokenBatch batch = f.batch;
    uint64_t key = 12345;
    params_zero_grad(&ps);
    rnn_forward_backward(m, &batch, 0.1f, 1, key, 1.0f);
    float *grad = xmalloc(sizeof(float) * ps.total);
    memcpy(grad, ps.grad, sizeof(float) * ps.total);
    rnn_forward_backward(m, &batch, 0.1f, 1, key, 0.5f); /* the gradients accumulate, scaled */
    test_check_accumulated(grad, &ps, describe(kind, gru, feed, Le, Ld), 0.5);
    /* ε, |a − n| ≤ 2e-3 + 2e-2·|n|; ε is the row's fd_eps where it sets one, for a kind whose
     * loss bends sharply (a step of 1e-2 across a kink of its weights; checked at the same
     * tolerances). Such a kind's kinks can still fall within ±ε of an element, where the
     * rounding of the products decides on which side: that element is measured again at ε/3
     * and 3ε (a wrong gradient disagrees at every step) */
    const AttentionOps *row = kind == ATTN_NONE ? NULL : attention_row(kind);
    const int kinked = row && row->fd_eps > 0;
    const float eps = kinked ? row->fd_eps : 1e-2f;
    const FdOptions opt = {eps, 2e-3, 2e-2, 1e-3, {kinked ? eps / 3 : 0, kinked ? 3 * eps : 0}};
    LossCtx ctx = {m, &batch, key};
    long bad = 0;
    double maxrel = 0;
    for (int i = 0; i < ps.n; i++) {
        ParamSpec *s = &ps.specs[i];
        size_t ns = (size_t)test_fd_samples(48), stride = s->size <= ns ? 1 : s->size / ns;
        char what[256];
        snprintf(what, sizeof what, "%s %s", describe(kind, gru, feed, Le, Ld), s->name);
        FdResult r = fd_compare(what, ps.data + s->offset, s->size, stride, grad + s->offset,
                                loss_at, &ctx, &opt);
        bad += r.bad;
        if (r.max_rel > maxrel) maxrel = r.max_rel;
        /* normwise: a tensor-wide error (a wrong scale, say) that the floor hides elementwise */
        double nw = sqrt(r.diff2) / (sqrt(r.num2) + 1e-30);
        EXPECT(sqrt(r.num2) < 1e-2 || nw <= 1e-2, "%s: normwise error %.3e of a gradient of "
               "norm %.3e over %ld elements", what, nw, sqrt(r.num2), r.n);
    }
    printf("%s: %zu parameters, max relative error %.2e, %ld bad\n",
           describe(kind, gru, feed, Le, Ld), ps.total, maxrel, bad);
    EXPECT(bad == 0, "%s: %ld gradient elements disagree", describe(kind, gru, feed, Le, Ld), bad);
    free(grad);
    fixture_free(&f);
}

int main(void) {
    omp_set_num_threads(1); /* tiny shapes; ctest -j2 on 2 cores must not oversubscribe */
    const AttentionKind luong[] = {ATTN_LUONG_DOT, ATTN_LUONG_GENERAL, ATTN_LUONG_CONCAT};
    for (int gru = 0; gru < 2; gru++) {
        for (int k = 0; k < 3; k++)
            for (int feed = 0; feed < 2; feed++) run(luong[k], gru, feed, 1, 1);
        run(ATTN_BAHDANAU, gru, 0, 1, 1);
        run(ATTN_NONE, gru, 0, 1, 1);
        run(ATTN_LUONG_GENERAL, gru, 1, 2, 2); /* stacked layers, encoder → decoder states */
        run(ATTN_BAHDANAU, gru, 0, 2, 2);
    }
    run(ATTN_LUONG_GENERAL, 0, 1, 1, 2); /* layer counts differ: zero initial state */
    run_blocks(ATTN_LUONG_GENERAL, 0, 1);
    run_blocks(ATTN_BAHDANAU, 1, 0);
    run_blocks(ATTN_LUONG_DOT, 0, 0);
    loss_rows = 2; /* the finite differences of a model run in blocks */
    run(ATTN_LUONG_GENERAL, 0, 1, 1, 1);
    loss_rows = 0;
    short_seq = 1; /* S = T = 2: one recurrent step in the encoder and the decoder */
    run(ATTN_LUONG_GENERAL, 0, 1, 1, 1);
    run(ATTN_BAHDANAU, 1, 0, 2, 2);
    short_seq = 0;
    /* the multi-head kinds of the table serve the RNN too (two heads of the encoder states) */
    for (int k = 1, i = 0; k < ATTN_KIND_COUNT; k++)
        if (attention_row((AttentionKind)k)->multi_head) {
            for (int feed = 0; feed < 2; feed++) run((AttentionKind)k, i & 1, feed, 1, 1);
            i++;
        }
    /* sdp with weights twice as large: its W_q and W_k gradients (1/√HS inside the scores)
     * rise from about 1e-4, under the finite differences' noise, to about 0.5 */
    init_scale = 2.0f;
    for (int feed = 0; feed < 2; feed++) run(ATTN_SDP, 0, feed, 1, 1);
    init_scale = 0.5f;
    for (int gru = 0; gru < 2; gru++) /* every kind of the table (luong_local: below) */
        for (int k = 0; k < ATTN_KIND_COUNT; k++)
            if (k != ATTN_LUONG_LOCAL) run_stepwise((AttentionKind)k, gru);
    /* luong_local (Luong et al. 2015 §3.2): both modes × the three scores, with and without
     * input feeding (per step with p_t = t, or batched); windows D = 1 and 2 clip at S = 5 */
    for (int mode = 0; mode < 2; mode++)
        for (int score = 0; score < 3; score++) {
            attn_opt.local_window = 1 + (score & 1);
            attn_opt.local_mode = (LocalMode)mode, attn_opt.local_score = (LocalScore)score;
            for (int feed = 0; feed < 2; feed++)
                run(ATTN_LUONG_LOCAL, (mode + score) & 1, feed, 1, 1);
            run_stepwise(ATTN_LUONG_LOCAL, score & 1);
        }
    /* a kind of the table that none of the above runs (one head, no options): both cells and
     * both input-feeding settings */
    for (int k = 1; k < ATTN_KIND_COUNT; k++)
        if (!ran[k])
            for (int i = 0; i < 4; i++) run((AttentionKind)k, i >> 1, i & 1, 1, 1);
    for (int k = 0; k < ATTN_KIND_COUNT; k++)
        EXPECT(ran[k] && ran_stepwise[k], "attention kind %s has no finite-difference case (%d) "
               "or no batched-vs-step case (%d) in test_rnn_grad: add one", attention_kind_names[k],
               ran[k], ran_stepwise[k]);
    return test_report("test_rnn_grad");
}
