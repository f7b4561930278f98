/* test_transformer.c — the whole tiny Transformer (model/transformer.h) on the CPU:
 *  1. Gradients: every parameter's analytic gradient against central finite differences
 *     (every element of tensors up to 40 elements, 40 spread-out elements of bigger ones, 8
 *     under a sanitizer: test_fd_samples;
 *     ε = 1e-3 on float32, |a − n| ≤ 3e-3 + 3e-2·|n|, see check_grad for kinks), dropout on
 *     (p = 0.2; masks are a pure
 *     function of the key), for every attention kind in every slot where it is allowed, pre-LN
 *     and post-LN, tied and untied embeddings; before them, a second training pass with
 *     grad_scale 0.5 and no zeroing must add half of every gradient again (they accumulate,
 *     scaled; testutil.h). Tiny model: V 13, D 8, 2 heads, F 12, 2 + 2
 *     layers, 3 sentences with source lengths 5, 3, 1 and target lengths 4, 2, 3.
 *  2. flash = sdp at model level: the same parameters give the same loss (|Δ| ≤ 1e-5·|loss|)
 *     and gradients (|a − b| ≤ 1e-5 + 1e-4·|b|).
 *  3. Padding: changing a padded source token or a padded target input changes nothing.
 *  4. Cached decoding = full recomputation: feeding the target inputs one step at a time
 *     (transformer_decode_step, keys and values cached, linear's and taylor's running state) gives
 *     each position's log-probabilities of the teacher-forced pass (max |Δ| ≤ 2e-5); with 2 rows
 *     per sentence fed different sequences and swapped by transformer_decode_reorder after every
 *     step, each sequence still gets its own teacher-forced log-probabilities.
 *  The exact reference for the gradients is the PyTorch fixture (test_transformer_torch.c);
 *  this test adds dropout and more combinations, at finite-difference precision.
 *  5. decode_beam with K = 1 = decode_greedy (ids and attention maps), and the attention maps'
 *     rows are distributions over the unpadded source (sum 1, zero on padding; luong_local: at
 *     most 1, its local-p Gaussian and local-m windows past the source).
 *  7. Batches of other shapes decoded by one model after model_reserve_decode's plan equal a
 *     fresh model's, and reallocate nothing (check_decode_plan).
 *  8. The output layer in blocks of rows (model_set_loss_rows): the 9 target rows in blocks of 2
 *     give the training and evaluation losses (|Δ| ≤ 1e-6·|loss|) and the gradients (bound of 2)
 *     of one block, tied and untied; and 1 holds for a model run in blocks. After model_release
 *     and a reserve of other bounds, the model gives the same loss.
 *  luong_local: in the encoder self-attention and the cross-attention, both modes, each score
 *  (1, 4, 5); refused in the decoder self-attention (no causal form). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/tokens.h"
#include "data/batch.h"
#include "eval/decode.h"
#include "eval/translate.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"

enum { V = 13, D = 8, NH = 2, F = 12, B = 3, S = 5, T = 4 };

typedef struct {
    AttentionKind es, ds, cr;
    int pre, tie;
    LinformerShare share; /* linformer's sharing (r = 3, n = 6 in every case) */
} Case;

/* luong_local's window, mode and score for the next model built (main sets them) */
static AttentionOptions local_opt = {
    .local_window = 2, .local_mode = LOCAL_PREDICTIVE, .local_score = LOCAL_SCORE_GENERAL};

/* The kinds' options of case c (each kind reads its own): linformer r 3, n 6 and c's sharing;
 * luong_local's local_opt */
static AttentionOptions case_opt(Case c) {
    AttentionOptions o = local_opt;
    o.linformer_k = 3, o.linformer_max_len = 6, o.linformer_share = c.share;
    return o;
}

static const char *name(Case c) {
    static char buf[160];
    snprintf(buf, sizeof buf, "self %s, dec self %s, cross %s, %s-LN, %s%s%s",
             attention_kind_names[c.es], attention_kind_names[c.ds], attention_kind_names[c.cr],
             c.pre ? "pre" : "post", c.tie ? "tied" : "untied",
             c.es == ATTN_LINFORMER || c.cr == ATTN_LINFORMER ? ", linformer share " : "",
             c.es == ATTN_LINFORMER || c.cr == ATTN_LINFORMER ? linformer_share_names[c.share]
                                                              : "");
    if (c.es == ATTN_LUONG_LOCAL || c.cr == ATTN_LUONG_LOCAL)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ", local D=%d %s %s",
                 local_opt.local_window, local_mode_names[local_opt.local_mode],
                 local_score_names[local_opt.local_score]);
    return buf;
}

static int src[S * B], src_len[B] = {5, 3, 1}, tin[T * B], tout[T * B], tgt_len[B] = {4, 2, 3};

/* The batch of src and the time-major targets ti, to (NULL: decoding); free with batch_free. */
static TokenBatch batch(int *ti, int *to) {
    TokenBatch hb;
    test_token_batch(&hb, B, S, T, src, src_len, ti, to);
    return hb;
}

/* The spec of a test model: D wide, NH heads, F feed-forward, L layers a side; pre: pre-LN;
 * tie: tied embeddings; es, ds, cr: the kinds of the three slots. */
static ModelSpec tf_spec(int L, float dropout, int pre, int tie, AttentionKind es,
                         AttentionKind ds, AttentionKind cr, AttentionOptions opt) {
    return (ModelSpec){.type = MODEL_TRANSFORMER, .d_model = D, .heads = NH, .d_ff = F,
                       .enc_layers = L, .dec_layers = L, .dropout = dropout,
                       .norm = pre ? NORM_PRE : NORM_POST, .tie_embeddings = tie,
                       .self_attention = es, .dec_self_attention = ds, .cross_attention = cr,
                       .attn_opt = opt};
}

/* The backend build() gives its models: the CPU's, or check_decode_plan's counting copy. */
static const Backend *g_be;
/* model_set_loss_rows for the models build() makes (0: one block) */
static int g_loss_rows;

static int build(Model *m, Case c, float dropout, uint64_t seed) {
    Err err;
    memset(m, 0, sizeof *m);
    m->be = g_be ? g_be : backend_cpu();
    m->V = V;
    params_init_set(&m->ps, m->be);
    ModelSpec tc = tf_spec(2, dropout, c.pre, c.tie, c.es, c.ds, c.cr, case_opt(c));
    if (transformer_create(&m->tf, &m->ps, &tc, V, &err)) {
        EXPECT(0, "%s: transformer_create: %s", name(c), err.msg);
        return 1;
    }
    params_allocate(&m->ps);
    Rng rng;
    rng_seed(&rng, seed, 5);
    params_initialise(&m->ps, &rng, 0.0f);
    /* layer norms and biases start at 1 and 0: move them so their gradients are exercised */
    for (int i = 0; i < m->ps.n; i++) {
        ParamSpec *s = &m->ps.specs[i];
        if (s->init == INIT_ZERO || s->init == INIT_ONE)
            for (size_t j = 0; j < s->size; j++)
                m->ps.data[s->offset + j] += 0.3f * (2.0f * rng_uniform(&rng) - 1.0f);
    }
    /* PAD is never an output */
    for (int i = 0; i < m->ps.n; i++)
        if (!strcmp(m->ps.specs[i].name, "out.b")) m->ps.data[m->ps.specs[i].offset] = -30.0f;
    model_set_loss_rows(m, g_loss_rows);
    model_reserve(m, 4 * B, S, 8, 4L * B * S, 4L * B * 8);
    return 0;
}

/* The loss fd_compare differentiates: the training pass with gradient scale 0 (no gradient is
 * accumulated), dropout keyed as in the analytic pass. */
typedef struct {
    Model *m;
    const TokenBatch *hb;
    uint64_t key;
} LossCtx;
static double loss_at(void *p) {
    LossCtx *c = p;
    return model_loss(c->m, c->hb, 0.1f, 1, c->key, 0.0f);
}

/* the kinds check_grad has checked, in any slot: every kind of the table must be (main) */
static int graded[ATTN_KIND_COUNT];

/* 1. finite differences over every parameter (fd_compare, testutil.h). ε = 1e-3,
 * |a − n| ≤ 3e-3 + 3e-2·|n|; an element that disagrees is measured again with ε = 3e-4 and 3e-3
 * and passes if either agrees: a ReLU kink (or a near-tie in a softmax) within ±ε of the point
 * spoils one step size, a wrong gradient spoils all three. */
static void check_grad(Case c) {
    graded[c.es] = graded[c.ds] = graded[c.cr] = 1;
    Model m;
    if (build(&m, c, 0.2f, 7)) return;
    TokenBatch hb = batch(tin, tout);
    uint64_t key = 12345;
    ParamSet *ps = &m.ps;
    params_zero_grad(ps);
    model_loss(&m, &hb, 0.1f, 1, key, 1.0f);
    float *grad = xmalloc(sizeof(float) * ps->total);
    memcpy(grad, ps->grad, sizeof(float) * ps->total);
    model_loss(&m, &hb, 0.1f, 1, key, 0.5f); /* the gradients accumulate, scaled */
    test_check_accumulated(grad, ps, name(c), 0.5);
    const FdOptions opt = {1e-3f, 3e-3, 3e-2, 1e-2, {3e-4f, 3e-3f}};
    LossCtx ctx = {&m, &hb, key};
    long bad = 0, n = 0, retried = 0;
    double maxrel = 0;
    for (int i = 0; i < ps->n; i++) {
        ParamSpec *s = &ps->specs[i];
        size_t ns = (size_t)test_fd_samples(40), stride = s->size <= ns ? 1 : s->size / ns;
        char what[256];
        snprintf(what, sizeof what, "%s: %s", name(c), s->name);
        FdResult r = fd_compare(what, ps->data + s->offset, s->size, stride, grad + s->offset,
                                loss_at, &ctx, &opt);
        n += r.n, bad += r.bad, retried += r.retried;
        if (r.max_rel > maxrel) maxrel = r.max_rel;
    }
    printf("%s: %ld gradient elements of %zu parameters, max relative error %.2e (|g| > 0.01), "
           "%ld measured again, %ld bad\n", name(c), n, ps->total, maxrel, retried, bad);
    EXPECT(bad == 0, "%s: %ld gradient elements disagree with finite differences", name(c), bad);
    free(grad);
    batch_free(&hb);
    model_free(&m);
}

/* 2. flash = sdp with the same parameters (same names and shapes) */
static void check_flash_equals_sdp(int pre) {
    Case cs = {ATTN_SDP, ATTN_SDP, ATTN_SDP, pre, 1, LINFORMER_SHARE_NONE},
         cf = {ATTN_FLASH, ATTN_FLASH, ATTN_FLASH, pre, 1, LINFORMER_SHARE_NONE};
    Model a, b;
    if (build(&a, cs, 0.2f, 3) || build(&b, cf, 0.2f, 3)) return;
    EXPECT(a.ps.total == b.ps.total, "parameter counts differ");
    memcpy(b.ps.data, a.ps.data, sizeof(float) * a.ps.total);
    TokenBatch hb = batch(tin, tout);
    params_zero_grad(&a.ps), params_zero_grad(&b.ps);
    double la = model_loss(&a, &hb, 0.1f, 1, 77, 1.0f), lb = model_loss(&b, &hb, 0.1f, 1, 77, 1.0f);
    double worst;
    long bad = test_grad_mismatches(b.ps.grad, a.ps.grad, a.ps.total, 1e-5, 1e-4, &worst);
    printf("flash vs sdp (%s-LN): loss %.9g vs %.9g, worst gradient difference %.2e\n",
           pre ? "pre" : "post", la, lb, worst);
    EXPECT(fabs(la - lb) <= 1e-5 * fabs(la), "flash loss %.9g, sdp %.9g", lb, la);
    EXPECT(bad == 0, "%ld gradients differ between flash and sdp", bad);
    batch_free(&hb);
    model_free(&a), model_free(&b);
}

/* 8. the output layer and loss in blocks of 2 rows against one block */
static void check_blocks(Case c) {
    Model a, b;
    if (build(&a, c, 0.2f, 4)) return;
    g_loss_rows = 2;
    int fail = build(&b, c, 0.2f, 4);
    g_loss_rows = 0;
    if (fail) {
        model_free(&a);
        return;
    }
    TokenBatch hb = batch(tin, tout);
    params_zero_grad(&a.ps), params_zero_grad(&b.ps);
    double la = model_loss(&a, &hb, 0.1f, 1, 21, 1.0f), lb = model_loss(&b, &hb, 0.1f, 1, 21, 1.0f);
    double ea = model_loss(&a, &hb, 0.1f, 0, 21, 0.0f), eb = model_loss(&b, &hb, 0.1f, 0, 21, 0.0f);
    double worst;
    long bad = test_grad_mismatches(b.ps.grad, a.ps.grad, a.ps.total, 1e-5, 1e-4, &worst);
    printf("%s: loss in blocks of 2 rows vs one: %.9g vs %.9g, worst gradient difference %.2e\n",
           name(c), lb, la, worst);
    EXPECT(fabs(la - lb) <= 1e-6 * fabs(la), "%s: loss in blocks %.9g, in one %.9g", name(c), lb,
           la);
    EXPECT(fabs(ea - eb) <= 1e-6 * fabs(ea), "%s: evaluation loss in blocks %.9g, in one %.9g",
           name(c), eb, ea);
    EXPECT(bad == 0, "%s: %ld gradients differ between blocks of rows and one block", name(c),
           bad);
    /* model_release, then a reserve of exactly this batch: the same evaluation loss, bit for bit */
    model_release(&a);
    model_reserve(&a, B, S, T, (long)B * S, (long)B * T);
    double ra = model_loss(&a, &hb, 0.1f, 0, 21, 0.0f);
    EXPECT(ra == ea, "%s: evaluation loss after model_release and model_reserve %.9g, before %.9g",
           name(c), ra, ea);
    batch_free(&hb);
    model_free(&a), model_free(&b);
}

/* 3. padding changes nothing */
static void check_padding(Case c) {
    Model m;
    if (build(&m, c, 0.2f, 9)) return;
    TokenBatch hb = batch(tin, tout);
    double l0 = model_loss(&m, &hb, 0.1f, 0, 5, 0.0f);
    hb.src[1 * S + 4] = 6;    /* t = 4 of sentence 1 (length 3) */
    hb.tgt_in[1 * T + 3] = 7; /* t = 3 of sentence 1 (target length 2) */
    double l1 = model_loss(&m, &hb, 0.1f, 0, 5, 0.0f);
    EXPECT(l0 == l1, "%s: padded tokens changed the loss (%.9g vs %.9g)", name(c), l0, l1);
    batch_free(&hb);
    model_free(&m);
}

/* log_softmax of the teacher-forced logits, [B,T,V] batch-major, on the host */
static void teacher_logp(Model *m, int *ti, int *to, float *lp) {
    TokenBatch hb = batch(ti, to);
    model_loss(m, &hb, 0.0f, 0, 0, 0.0f);
    batch_free(&hb);
    int R = 0;
    const float *lg = transformer_logits(m->tf, &R);
    EXPECT(R == B * T, "teacher forcing without padding gave %d logit rows, not %d", R, B * T);
    for (int r = 0; r < B * T; r++) {
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < V; v++) mx = lg[r * V + v] > mx ? lg[r * V + v] : mx;
        for (int v = 0; v < V; v++) z += exp(lg[r * V + v] - mx);
        for (int v = 0; v < V; v++) lp[r * V + v] = (float)(lg[r * V + v] - mx - log(z));
    }
}

/* 4. cached decoding = full recomputation, with and without reordering */
/* the kinds check_decode has decoded through, in any slot: every kind of the table must be */
static int decoded[ATTN_KIND_COUNT];

static void check_decode(Case c) {
    Model m;
    if (build(&m, c, 0.0f, 11)) return;
    decoded[c.es] = decoded[c.ds] = decoded[c.cr] = 1;
    int ti[2][T * B], to[2][T * B];
    Rng rng;
    rng_seed(&rng, 21, 0);
    for (int q = 0; q < 2; q++)
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                ti[q][t * B + b] = t ? to[q][(t - 1) * B + b] : TOKEN_BOS;
                to[q][t * B + b] = 4 + (int)rng_below(&rng, V - 4);
            }
    static float ref[2][B * T * V];
    for (int q = 0; q < 2; q++) teacher_logp(&m, ti[q], to[q], ref[q]);
    TokenBatch hb = batch(NULL, NULL);
    double worst = 0;
    model_decode_begin(&m, &hb, 1, T);
    for (int t = 0; t < T; t++) {
        const float *lp = model_decode_step(&m, t, ti[0] + t * B, 1);
        for (int b = 0; b < B; b++)
            for (int v = 0; v < V; v++) {
                double d = fabs(lp[b * V + v] - ref[0][(b * T + t) * V + v]);
                worst = d > worst ? d : worst;
            }
    }
    EXPECT(worst <= 2e-5, "%s: cached decoding differs from teacher forcing by %.3g", name(c),
           worst);
    /* K = 2: row 2b + k holds sequence where; rows swap after every step */
    double worst2 = 0;
    model_decode_begin(&m, &hb, 2, T);
    int where[2][B], ids[2 * B], parent[2 * B];
    for (int b = 0; b < B; b++) where[0][b] = 2 * b, where[1][b] = 2 * b + 1;
    for (int t = 0; t < T; t++) {
        for (int q = 0; q < 2; q++)
            for (int b = 0; b < B; b++) ids[where[q][b]] = ti[q][t * B + b];
        const float *lp = model_decode_step(&m, t, ids, 1);
        for (int q = 0; q < 2; q++)
            for (int b = 0; b < B; b++)
                for (int v = 0; v < V; v++) {
                    double d = fabs(lp[where[q][b] * V + v] - ref[q][(b * T + t) * V + v]);
                    worst2 = d > worst2 ? d : worst2;
                }
        for (int b = 0; b < B; b++) {
            parent[2 * b] = 2 * b + 1, parent[2 * b + 1] = 2 * b;
            for (int q = 0; q < 2; q++) where[q][b] ^= 1;
        }
        model_decode_reorder(&m, t, parent);
    }
    EXPECT(worst2 <= 2e-5, "%s: reordered cached decoding differs from teacher forcing by %.3g",
           name(c), worst2);
    printf("%s: cached decoding vs teacher forcing max |Δ log p| %.2e, reordered %.2e\n",
           name(c), worst, worst2);

    /* 5. beam 1 = greedy, attention maps are distributions over the unpadded source (a
     * cross-attention without host weights, linformer, has no maps: model_has_attention) */
    enum { MT = 6 };
    int g[B * MT], k1[B * MT], maps = model_has_attention(&m);
    static float ga[B * MT * S], ka[B * MT * S];
    EXPECT(maps == (c.cr != ATTN_LINFORMER), "%s: model_has_attention %d", name(c), maps);
    memset(ga, 0, sizeof ga), memset(ka, 0, sizeof ka);
    decode_greedy(&m, &hb, MT, g, maps ? ga : NULL);
    decode_beam(&m, &hb, 1, 0.0f, MT, k1, maps ? ka : NULL);
    EXPECT(!memcmp(g, k1, sizeof g), "%s: beam 1 ids differ from greedy", name(c));
    EXPECT(!memcmp(ga, ka, sizeof ga), "%s: beam 1 attention differs from greedy", name(c));
    for (int b = 0; b < B && maps; b++) { /* luong_local: local-p's Gaussian scales the row,
                                            * local-m's window may hold no key: at most 1, none
                                            * on padding */
        double sum = 0, pad = 0;
        /* what the kind's weights satisfy (its row's weights, AttentionWeights): a
         * distribution, a sum of at most 1, each in (0, 1), or each >= 0 */
        AttentionWeights wr = attention_row(c.cr)->weights;
        int in_range = 1;
        for (int s = 0; s < S; s++) {
            float w = ga[(b * MT) * S + s];
            *(s < src_len[b] ? &sum : &pad) += w;
            if (s < src_len[b]) in_range &= wr == ATTN_WEIGHTS_OPEN_UNIT ? w > 0 && w < 1 : w >= 0;
        }
        EXPECT(in_range, "%s: sentence %d: an attention weight out of its kind's range", name(c),
               b);
        int sum_ok = wr == ATTN_WEIGHTS_SUM_1          ? fabs(sum - 1) < 1e-5
                   : wr == ATTN_WEIGHTS_SUM_AT_MOST_1 ? sum < 1 + 1e-5
                   : wr == ATTN_WEIGHTS_OPEN_UNIT     ? sum > 0
                                                      : 1;
        EXPECT(sum_ok && pad == 0,
               "%s: sentence %d: attention row sums to %.6f, %.3g on padding", name(c), b, sum,
               pad);
    }
    batch_free(&hb);
    model_free(&m);
}

/* 7. Decoding batches of other shapes in one model (model_reserve_decode's plan, as
 * translate_lines does): each batch's greedy and beam-2 ids and attention maps equal those of a
 * fresh model decoding that batch alone, and after the plan no batch reallocates: decoding a
 * batch after the first allocates as much as decoding it again (only the search's own buffers).
 * The batches grow in source and output length while they shrink in sentences, so a model sized
 * at the first batch's decode_begin grows later; the control (no plan) must show that. */
static long g_allocs;
static void *count_alloc(size_t n) {
    g_allocs++;
    return backend_cpu()->alloc(n);
}

enum { NPLAN = 3 };
static const int plan_B[NPLAN] = {3, 2, 2}, plan_S[NPLAN] = {3, 4, 5}, plan_T[NPLAN] = {6, 8, 11};

static void plan_batch(TokenBatch *hb, int i) {
    int sb[5 * 3], lb[3];
    Rng rng;
    rng_seed(&rng, 31, (uint64_t)i);
    for (int b = 0; b < plan_B[i]; b++) lb[b] = plan_S[i] - b; /* the first one unpadded */
    test_random_src(sb, plan_S[i], plan_B[i], lb, V, &rng);
    test_token_batch(hb, plan_B[i], plan_S[i], 0, sb, lb, NULL, NULL);
}

/* Allocations of decoding hb (greedy K = 1, else beam K) into ids/attn. */
static long decode_allocs(Model *m, const TokenBatch *hb, int K, int *ids, float *attn, int MT) {
    long before = g_allocs;
    if (K == 1) decode_greedy(m, hb, MT, ids, attn);
    else decode_beam(m, hb, K, 1.0f, MT, ids, attn);
    return g_allocs - before;
}

static void check_decode_plan(Case c) {
    static Backend counting;
    counting = *backend_cpu();
    counting.alloc = count_alloc;
    g_be = &counting;
    for (int K = 1; K <= 2; K++)
        for (int planned = 0; planned < 2; planned++) {
            Model m;
            if (build(&m, c, 0.0f, 13)) break;
            BatchBounds gb[NPLAN];
            for (int i = 0; i < NPLAN; i++)
                gb[i] = (BatchBounds){plan_B[i], plan_S[i], plan_T[i], (long)plan_B[i] * plan_S[i],
                                      (long)plan_B[i] * plan_T[i]};
            if (planned) model_reserve_decode(&m, K, gb, NPLAN);
            int grew = 0, maps = model_has_attention(&m);
            for (int i = 0; i < NPLAN; i++) {
                TokenBatch hb;
                plan_batch(&hb, i);
                int MT = plan_T[i], n = plan_B[i] * MT;
                static int ids[3 * 11], ids2[3 * 11], ref[3 * 11];
                static float at[3 * 11 * 5], at2[3 * 11 * 5], rat[3 * 11 * 5];
                memset(at, 0, sizeof at), memset(at2, 0, sizeof at2), memset(rat, 0, sizeof rat);
                long first = decode_allocs(&m, &hb, K, ids, maps ? at : NULL, MT);
                long again = decode_allocs(&m, &hb, K, ids2, maps ? at2 : NULL, MT);
                grew |= i > 0 && first != again;
                if (planned && i > 0)
                    EXPECT(first == again, "%s, K %d: batch %d (B %d, S %d, max_T %d) reallocated "
                           "after the plan: %ld allocations, %ld when repeated", name(c), K, i,
                           plan_B[i], plan_S[i], MT, first, again);
                Model f; /* a fresh model decoding this batch alone */
                if (!build(&f, c, 0.0f, 13)) {
                    decode_allocs(&f, &hb, K, ref, maps ? rat : NULL, MT);
                    EXPECT(!memcmp(ids, ref, sizeof(int) * n) &&
                               !memcmp(ids2, ref, sizeof(int) * n),
                           "%s, K %d, planned %d: batch %d's ids differ from a fresh model's",
                           name(c), K, planned, i);
                    EXPECT(!memcmp(at, rat, sizeof(float) * n * plan_S[i]) &&
                               !memcmp(at2, rat, sizeof(float) * n * plan_S[i]),
                           "%s, K %d, planned %d: batch %d's attention differs from a fresh "
                           "model's", name(c), K, planned, i);
                    model_free(&f);
                }
                batch_free(&hb);
            }
            if (!planned)
                EXPECT(grew, "%s, K %d: without a plan no batch reallocated: the check above "
                       "cannot fail", name(c), K);
            model_free(&m);
        }
    g_be = NULL;
}

/* 6. linformer: a source longer than model.linformer_max_len = n is refused before the model,
 * naming the key and the length (model_check_source_len, and eval_perplexity through it) */
static void check_too_long(void) {
    Case c = {ATTN_LINFORMER, ATTN_SDP, ATTN_LINFORMER, 1, 1, LINFORMER_SHARE_NONE};
    Model m;
    if (build(&m, c, 0.0f, 5)) return;
    Err err = {{0}};
    EXPECT(model_max_source_len(&m) == 6, "%s: max source %d", name(c), model_max_source_len(&m));
    EXPECT(model_check_source_len(&m, 6, &err) == STATUS_OK, "6 tokens refused: %s", err.msg);
    EXPECT(model_check_source_len(&m, 7, &err) != STATUS_OK &&
               strstr(err.msg, "a source of 7 subword tokens") &&
               strstr(err.msg, "model.linformer_max_len = 6") &&
               strstr(err.msg, "model.linformer_max_len >= 7"),
           "7 tokens: %s", err.msg);
    int32_t src_ids[9] = {4, 5, 6, 4, 5, 6, 4, 5, 6}, tgt_ids[2] = {5, 6};
    int64_t src_off[3] = {0, 2, 9}, tgt_off[3] = {0, 1, 2};
    Encoded e = {2, src_ids, src_off, tgt_ids, tgt_off};
    double ppl;
    EXPECT(eval_perplexity(&m, &e, &ppl, NULL, &err) != STATUS_OK && strstr(err.msg, "pair 2") &&
               strstr(err.msg, "a source of 7 subword tokens") &&
               strstr(err.msg, "model.linformer_max_len = 6"),
           "eval_perplexity on a 7-token source: %s", err.msg);
    model_free(&m);
    Case s = {ATTN_SDP, ATTN_SDP, ATTN_SDP, 1, 1, LINFORMER_SHARE_NONE};
    if (build(&m, s, 0.0f, 5)) return;
    EXPECT(model_max_source_len(&m) == 0 && model_check_source_len(&m, 100000, &err) == STATUS_OK,
           "sdp has a source limit");
    model_free(&m);
    printf("linformer: a 7-token source is refused with model.linformer_max_len = 6\n");
}

int main(void) {
    omp_set_num_threads(1); /* tiny shapes; ctest -j2 on 2 cores must not oversubscribe */
    Rng rng;
    rng_seed(&rng, 3, 3);
    test_random_src(src, S, B, src_len, V, &rng);
    test_random_tgt(tin, tout, T, B, tgt_len, V, &rng);
    /* every kind of the table with a causal form in every slot; pre- and post-LN; tied and
     * untied (the others below, where they may serve) */
    AttentionKind selfk[ATTN_KIND_COUNT];
    int nself = 0;
    for (int k = 1; k < ATTN_KIND_COUNT; k++)
        if (attention_row((AttentionKind)k)->causal_ok) selfk[nself++] = (AttentionKind)k;
    for (int i = 0; i < nself; i++) {
        Case c = {selfk[i], selfk[i], selfk[i], i % 2 == 1, i % 3 != 2, LINFORMER_SHARE_NONE};
        check_grad(c);
        check_padding(c);
        check_decode(c);
    }
    const Case extra[] = {
        {ATTN_EFFICIENT, ATTN_SDP, ATTN_EFFICIENT, 1, 1, LINFORMER_SHARE_NONE},
        {ATTN_EFFICIENT, ATTN_LINEAR, ATTN_EFFICIENT, 0, 0, LINFORMER_SHARE_NONE},
        {ATTN_SDP, ATTN_LINEAR, ATTN_BAHDANAU, 1, 0, LINFORMER_SHARE_NONE},
        {ATTN_LINEAR, ATTN_FLASH, ATTN_LUONG_GENERAL, 0, 1, LINFORMER_SHARE_NONE},
        /* linformer (r 3, n 6 >= S 5) in the encoder and cross slots, each sharing mode */
        {ATTN_LINFORMER, ATTN_SDP, ATTN_LINFORMER, 1, 1, LINFORMER_SHARE_NONE},
        {ATTN_LINFORMER, ATTN_LINEAR, ATTN_LINFORMER, 0, 0, LINFORMER_SHARE_HEADWISE},
        {ATTN_SDP, ATTN_SDP, ATTN_LINFORMER, 1, 0, LINFORMER_SHARE_KV},
        {ATTN_LINFORMER, ATTN_FLASH, ATTN_SDP, 0, 1, LINFORMER_SHARE_NONE},
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        check_grad(extra[i]);
        check_padding(extra[i]);
        check_decode(extra[i]);
    }
    /* luong_local (Luong et al. 2015 §3.2) in the encoder self-attention and the cross-attention
     * (one window position per query, shared by the heads), both modes, the three scores */
#define LOCAL(D, mode, score) {.local_window = (D), .local_mode = (mode), .local_score = (score)}
    const struct { Case c; AttentionOptions o; } local[] = {
        {{ATTN_SDP, ATTN_SDP, ATTN_LUONG_LOCAL, 1, 1, LINFORMER_SHARE_NONE},
         LOCAL(2, LOCAL_PREDICTIVE, LOCAL_SCORE_GENERAL)},
        {{ATTN_LUONG_LOCAL, ATTN_LINEAR, ATTN_LUONG_LOCAL, 0, 0, LINFORMER_SHARE_NONE},
         LOCAL(1, LOCAL_MONOTONIC, LOCAL_SCORE_DOT)},
        {{ATTN_LUONG_LOCAL, ATTN_SDP, ATTN_SDP, 1, 0, LINFORMER_SHARE_NONE},
         LOCAL(2, LOCAL_PREDICTIVE, LOCAL_SCORE_CONCAT)},
        {{ATTN_FLASH, ATTN_SDP, ATTN_LUONG_LOCAL, 0, 1, LINFORMER_SHARE_NONE},
         LOCAL(1, LOCAL_MONOTONIC, LOCAL_SCORE_CONCAT)},
    };
#undef LOCAL
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        local_opt = local[i].o;
        check_grad(local[i].c);
        check_padding(local[i].c);
        check_decode(local[i].c);
    }
    local_opt = (AttentionOptions){
        .local_window = 2, .local_mode = LOCAL_PREDICTIVE, .local_score = LOCAL_SCORE_GENERAL};
    /* a kind of the table that none of the above runs (one without a causal form): in the
     * encoder self- and the cross-attention, sdp in the causal slot */
    for (int k = 1; k < ATTN_KIND_COUNT; k++)
        if (!graded[k]) {
            Case c = {(AttentionKind)k, ATTN_SDP, (AttentionKind)k, k % 2, 1,
                      LINFORMER_SHARE_NONE};
            check_grad(c);
            check_padding(c);
            check_decode(c);
        }
    for (int k = 1; k < ATTN_KIND_COUNT; k++)
        EXPECT(graded[k] && decoded[k], "attention kind %s has no Transformer gradient case (%d) "
               "or no decoding case (%d) in test_transformer: add one", attention_kind_names[k],
               graded[k], decoded[k]);
    check_flash_equals_sdp(1);
    check_flash_equals_sdp(0);
    const Case blocks[] = {{ATTN_SDP, ATTN_SDP, ATTN_SDP, 1, 1, LINFORMER_SHARE_NONE},
                           {ATTN_FLASH, ATTN_LINEAR, ATTN_LUONG_GENERAL, 0, 0,
                            LINFORMER_SHARE_NONE}};
    for (int i = 0; i < 2; i++) check_blocks(blocks[i]);
    g_loss_rows = 2; /* the finite differences of a model run in blocks, tied */
    check_grad(blocks[0]);
    g_loss_rows = 0;
    const Case plan_cases[] = {
        {ATTN_SDP, ATTN_SDP, ATTN_SDP, 1, 1, LINFORMER_SHARE_NONE},
        {ATTN_FLASH, ATTN_LINEAR, ATTN_LUONG_GENERAL, 0, 0, LINFORMER_SHARE_NONE},
        {ATTN_SDP, ATTN_SDP, ATTN_LUONG_LOCAL, 1, 0, LINFORMER_SHARE_NONE},
    };
    for (size_t i = 0; i < sizeof plan_cases / sizeof plan_cases[0]; i++)
        check_decode_plan(plan_cases[i]);
    /* the causal slot refuses efficient attention with the key to change */
    Model m = {0};
    Err err;
    m.be = backend_cpu();
    params_init_set(&m.ps, m.be);
    ModelSpec bad = tf_spec(1, 0.0f, 1, 1, ATTN_SDP, ATTN_EFFICIENT, ATTN_SDP,
                            (AttentionOptions){.linformer_share = LINFORMER_SHARE_NONE});
    EXPECT(transformer_create(&m.tf, &m.ps, &bad, V, &err) != STATUS_OK &&
               strstr(err.msg, "model.dec_self_attention") && strstr(err.msg, "no causal form"),
           "efficient decoder self-attention accepted or unclear: %s", err.msg);
    params_free(&m.ps);
    /* ... and luong_local, whose window has no causal form */
    m = (Model){0};
    m.be = backend_cpu();
    params_init_set(&m.ps, m.be);
    ModelSpec bad2 = tf_spec(1, 0.0f, 1, 1, ATTN_SDP, ATTN_LUONG_LOCAL, ATTN_SDP, local_opt);
    EXPECT(transformer_create(&m.tf, &m.ps, &bad2, V, &err) != STATUS_OK &&
               strstr(err.msg, "model.dec_self_attention = luong_local") &&
               strstr(err.msg, "no causal form"),
           "luong_local decoder self-attention accepted or unclear: %s", err.msg);
    params_free(&m.ps);
    /* ... and linformer, naming its reason */
    ModelSpec badl = tf_spec(1, 0.0f, 1, 1, ATTN_SDP, ATTN_LINFORMER, ATTN_SDP,
                             (AttentionOptions){.linformer_k = 3, .linformer_max_len = 6,
                                                .linformer_share = LINFORMER_SHARE_NONE});
    params_init_set(&m.ps, m.be);
    EXPECT(transformer_create(&m.tf, &m.ps, &badl, V, &err) != STATUS_OK &&
               strstr(err.msg, "model.dec_self_attention = linformer") &&
               strstr(err.msg, "no causal form"),
           "linformer decoder self-attention accepted or unclear: %s", err.msg);
    params_free(&m.ps);
    check_too_long();
    return test_report("test_transformer");
}
