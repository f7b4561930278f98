/* test_decode.c — incremental decoding and search (model/rnn.h rnn_decode_*, eval/decode.h), for
 * every RNN attention kind of the table (the multi-head ones with model.heads = 2; luong_local in
 * both modes with each score and windows that clip; a kind without a case of its own gets two,
 * from main), both cells and both input-feeding settings, on tiny random models (V 13, E 4, H 6,
 * 2 sentences of 5 and 3 source tokens):
 *  1. Step by step = teacher forcing: feeding the target inputs one step at a time through
 *     rnn_decode_step gives the same Σ log p(y_t) as rnn_forward_backward (|Δ| ≤ 1e-5·|loss|).
 *  2. Reordering: with 2 rows per sentence fed two different sequences, the rows swap
 *     (rnn_decode_reorder) after every step while the sequences follow them; each sequence's
 *     Σ log p must still equal its own teacher-forced value. A reorder that dropped or mixed any
 *     piece of state (h, c, the fed-back h̃, the expanded source) would break it.
 *  3. Beam 1 = greedy: decode_beam with K = 1 returns the same ids and attention as
 *     decode_greedy.
 *  4. Beam search is exact when the beam holds every prefix: with max_T = 3 and K = 169 = V²,
 *     its result equals the best of all 13³ outputs found by scoring each one by teacher
 *     forcing, with the length penalty α = 0 and α = 1 (Wu et al. 2016 eq. 14); for one case of
 *     each decoder style (bahdanau, Luong with feeding, none with GRU, concat with GRU), for
 *     luong_local local-p (input feeding) and local-m (its window p_t = t follows the step), and
 *     for each kind without a case of its own (input feeding; main).
 *  5. Decoding in a model reserved by model_reserve_decode alone (two steps' states) past the
 *     large reserve's T equals decoding in the large one (check_small_reserve).
 * The Model is assembled by hand (no tokenizer is needed to decode ids); its output bias for
 * PAD is −30, so no search picks PAD, which teacher forcing could not score, and its EOS bias
 * is lowered by 2 so that the best output is not always EOS alone. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/tokens.h"
#include "data/batch.h"
#include "eval/decode.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"

enum { V = 13, E = 4, H = 6, B = 2, S = 5, T = 4 };

typedef struct {
    AttentionKind kind;
    int gru, feed;
    AttentionOptions opt; /* luong_local's window, mode and score (linformer's: build's) */
    int exact;            /* 1: also the exhaustive beam search of check_search */
} Case;
#define LOCAL(D, mode, score) {.local_window = (D), .local_mode = (mode), .local_score = (score)}

static const char *name(Case c) {
    static char buf[96];
    snprintf(buf, sizeof buf, "%s %s feed=%d", attention_kind_names[c.kind], c.gru ? "gru" : "lstm",
             c.feed);
    if (c.kind == ATTN_LUONG_LOCAL)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " D=%d %s %s", c.opt.local_window,
                 local_mode_names[c.opt.local_mode], local_score_names[c.opt.local_score]);
    return buf;
}

static int src[S * B], src_len[B] = {5, 3};

/* build()'s reserve: 0 the large one every check uses; K > 0 only what model_reserve_decode
 * gives decoding with K rows a sentence (two steps' states), for check_small_reserve */
static int g_decode_K;

static int build(Model *m, Case c) {
    Err err;
    memset(m, 0, sizeof *m);
    m->be = backend_cpu();
    m->V = V;
    params_init_set(&m->ps, m->be);
    /* the kinds' options: the case's (luong_local's window, mode and score) with linformer's
     * r 4, n 5 = S (headwise) */
    AttentionOptions opt = c.opt;
    opt.linformer_k = 4, opt.linformer_max_len = 5, opt.linformer_share = LINFORMER_SHARE_HEADWISE;
    ModelSpec spec = {.type = MODEL_RNN, .cell = c.gru ? CELL_GRU : CELL_LSTM,
                      .attention = c.kind, .emb = E, .hidden = H, .enc_layers = 1,
                      .dec_layers = 1, .input_feeding = c.feed, .heads = 2, .attn_opt = opt};
    if (rnn_create(&m->rnn, &m->ps, &spec, V, &err)) {
        EXPECT(0, "%s: rnn_create: %s", name(c), err.msg);
        return 1;
    }
    params_allocate(&m->ps);
    Rng rng;
    rng_seed(&rng, 11, (uint64_t)c.kind * 4 + (uint64_t)c.gru * 2 + (uint64_t)c.feed);
    params_initialise(&m->ps, &rng, 0.8f); /* peaked enough that outputs differ */
    /* PAD is never an output (teacher forcing ignores PAD targets, so it could not score one) */
    for (int i = 0; i < m->ps.n; i++)
        if (!strcmp(m->ps.specs[i].name, "out.b")) {
            m->ps.data[m->ps.specs[i].offset + TOKEN_PAD] = -30;
            m->ps.data[m->ps.specs[i].offset + TOKEN_EOS] -= 2; /* longer outputs compete */
        }
    if (g_decode_K) {
        BatchBounds one = {B, S, 12, (long)B * S, (long)B * 12};
        model_reserve_decode(m, g_decode_K, &one, 1);
    } else {
        model_reserve(m, 256 * B, S, 8, 256L * B * S, 256L * B * 8);
    }
    return 0;
}

/* Σ over the batch of log p(tout | tin) by teacher forcing (one sentence per row of tin). */
static double teacher_forced(Model *m, const int *tin, const int *tout, int nb, int nt,
                             const int *src_b, const int *len_b) {
    TokenBatch b;
    test_token_batch(&b, nb, S, nt, src_b, len_b, tin, tout);
    double lp = -rnn_forward_backward(m->rnn, &b, 0.0f, 0, 0, 0.0f);
    batch_free(&b);
    return lp;
}

static void check_steps(Case c) {
    Model m;
    if (build(&m, c)) return;
    Rng rng;
    rng_seed(&rng, 5, 5);
    /* sequence A: tin/tout as in training; sequence B: other tokens */
    int tin[2][T * B], tout[2][T * B];
    for (int q = 0; q < 2; q++)
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                tin[q][t * B + b] = t ? tout[q][(t - 1) * B + b] : TOKEN_BOS;
                tout[q][t * B + b] = 4 + (int)rng_below(&rng, V - 4);
            }
    double ref[2];
    for (int q = 0; q < 2; q++) ref[q] = teacher_forced(&m, tin[q], tout[q], B, T, src, src_len);

    /* 1. K = 1, step by step */
    TokenBatch rb;
    test_token_batch(&rb, B, S, 0, src, src_len, NULL, NULL);
    rnn_decode_begin(m.rnn, &rb, 1);
    double sum = 0;
    for (int t = 0; t < T; t++) {
        const float *lp = rnn_decode_step(m.rnn, t, tin[0] + t * B, 1);
        for (int b = 0; b < B; b++) sum += lp[b * V + tout[0][t * B + b]];
    }
    EXPECT(fabs(sum - ref[0]) <= 1e-5 * fabs(ref[0]), "%s: step by step Σ log p %.9g, teacher "
           "forcing %.9g", name(c), sum, ref[0]);

    /* 2. K = 2, rows swap after every step; where[q][b] = the row holding sequence q */
    rnn_decode_begin(m.rnn, &rb, 2);
    int where[2][B], ids[2 * B], parent[2 * B];
    double got[2] = {0, 0};
    for (int b = 0; b < B; b++) where[0][b] = 2 * b, where[1][b] = 2 * b + 1;
    for (int t = 0; t < T; t++) {
        for (int q = 0; q < 2; q++)
            for (int b = 0; b < B; b++) ids[where[q][b]] = tin[q][t * B + b];
        const float *lp = rnn_decode_step(m.rnn, t, ids, 1);
        for (int q = 0; q < 2; q++)
            for (int b = 0; b < B; b++) got[q] += lp[where[q][b] * V + tout[q][t * B + b]];
        for (int b = 0; b < B; b++) { /* swap the two rows of every sentence */
            parent[2 * b] = 2 * b + 1, parent[2 * b + 1] = 2 * b;
            for (int q = 0; q < 2; q++) where[q][b] ^= 1;
        }
        rnn_decode_reorder(m.rnn, t, parent);
    }
    for (int q = 0; q < 2; q++)
        EXPECT(fabs(got[q] - ref[q]) <= 1e-5 * fabs(ref[q]), "%s: with reordering, sequence %d "
               "Σ log p %.9g, teacher forcing %.9g", name(c), q, got[q], ref[q]);
    printf("%s: Σ log p teacher forcing %.6f, step by step %.6f, reordered %.6f / %.6f\n",
           name(c), ref[0], sum, got[0], got[1]);
    batch_free(&rb);
    model_free(&m);
}

static void check_search(Case c, int exhaustive) {
    Model m;
    if (build(&m, c)) return;
    TokenBatch hb;
    test_token_batch(&hb, B, S, 0, src, src_len, NULL, NULL);
    /* 3. beam 1 = greedy */
    enum { MT = 6 };
    int g[B * MT], k1[B * MT];
    float ga[B * MT * S], ka[B * MT * S];
    memset(ga, 0, sizeof ga), memset(ka, 0, sizeof ka);
    int att = model_has_attention(&m);
    decode_greedy(&m, &hb, MT, g, att ? ga : NULL);
    decode_beam(&m, &hb, 1, 0.0f, MT, k1, att ? ka : NULL);
    EXPECT(!memcmp(g, k1, sizeof g), "%s: beam 1 ids differ from greedy", name(c));
    EXPECT(!memcmp(ga, ka, sizeof ga), "%s: beam 1 attention differs from greedy", name(c));

    /* 4. exact search: every output of up to 3 tokens, scored by teacher forcing */
    if (!exhaustive) {
        batch_free(&hb);
        model_free(&m);
        return;
    }
    static double lp[B][V * V * V];
    static int lens[V * V * V];
    for (int code = 0; code < V * V * V; code++) {
        int y[3] = {code % V, code / V % V, code / (V * V)}, len = 3;
        if (y[0] == TOKEN_EOS) len = 1;
        else if (y[1] == TOKEN_EOS) len = 2;
        lens[code] = len;
        int skip = (len == 1 && code >= V) || (len == 2 && code >= V * V); /* counted already */
        for (int t = 0; t < len; t++) skip |= y[t] == TOKEN_PAD; /* not an output, see above */
        for (int b = 0; b < B; b++) {
            lp[b][code] = -INFINITY;
            if (skip) continue;
            int tin[3], tout[3], srcb[S], lenb = src_len[b];
            for (int s = 0; s < S; s++) srcb[s] = src[s * B + b];
            for (int t = 0; t < len; t++) tin[t] = t ? y[t - 1] : TOKEN_BOS, tout[t] = y[t];
            lp[b][code] = teacher_forced(&m, tin, tout, 1, len, srcb, &lenb);
        }
    }
    for (int ai = 0; ai < 2; ai++) {
        float alpha = ai ? 1.0f : 0.0f;
        int out[B * 3];
        decode_beam(&m, &hb, V * V, alpha, 3, out, NULL);
        for (int b = 0; b < B; b++) {
            double best = -INFINITY;
            int bc = 0;
            for (int code = 0; code < V * V * V; code++) {
                double sc = lp[b][code] / (ai ? pow((5.0 + lens[code]) / 6.0, alpha) : 1.0);
                if (sc > best) best = sc, bc = code;
            }
            int y[3] = {bc % V, bc / V % V, bc / (V * V)}, same = 1;
            for (int t = 0; t < 3; t++) same &= out[b * 3 + t] == (t < lens[bc] ? y[t] : TOKEN_PAD);
            EXPECT(same, "%s α=%g sentence %d: beam K=169 gives %d %d %d, exhaustive search "
                   "%d %d %d (len %d, score %.6f)", name(c), (double)alpha, b, out[b * 3],
                   out[b * 3 + 1], out[b * 3 + 2], y[0], y[1], y[2], lens[bc], best);
            if (same) printf("%s α=%g sentence %d: beam = exhaustive best of %d outputs (len %d, "
                             "score %.4f)\n", name(c), (double)alpha, b, V * V * V, lens[bc], best);
        }
    }
    batch_free(&hb);
    model_free(&m);
}

/* 5. The decoding reserve: greedy and beam 3 with max_T = 12 (past the T = 8 of the large
 * reserve: a step keeps its states in one of two slots) in a model reserved by
 * model_reserve_decode alone give the ids and attention of the large reserve's model. */
static void check_small_reserve(Case c) {
    enum { MT = 12, KB = 3 };
    static int ids[2][2][B * MT];
    static float at[2][2][B * MT * S];
    memset(at, 0, sizeof at);
    TokenBatch hb;
    test_token_batch(&hb, B, S, 0, src, src_len, NULL, NULL);
    for (int small = 0; small < 2; small++)
        for (int beam = 0; beam < 2; beam++) {
            Model m;
            g_decode_K = small ? (beam ? KB : 1) : 0;
            int fail = build(&m, c);
            g_decode_K = 0;
            if (fail) continue;
            float *w = model_has_attention(&m) ? at[small][beam] : NULL;
            if (beam) decode_beam(&m, &hb, KB, 1.0f, MT, ids[small][beam], w);
            else decode_greedy(&m, &hb, MT, ids[small][beam], w);
            model_free(&m);
        }
    for (int beam = 0; beam < 2; beam++) {
        EXPECT(!memcmp(ids[0][beam], ids[1][beam], sizeof ids[0][beam]),
               "%s: %s ids with model_reserve_decode's reserve differ from the large reserve's",
               name(c), beam ? "beam 3" : "greedy");
        EXPECT(!memcmp(at[0][beam], at[1][beam], sizeof at[0][beam]),
               "%s: %s attention with model_reserve_decode's reserve differs", name(c),
               beam ? "beam 3" : "greedy");
    }
    int longest = 0; /* the check means something only if some output runs past two steps */
    for (int b = 0; b < B; b++) {
        int len = 0;
        while (len < MT && ids[1][0][b * MT + len] != TOKEN_EOS) len++;
        longest = len > longest ? len : longest;
    }
    EXPECT(longest > 2, "%s: greedy outputs of at most %d tokens", name(c), longest);
    batch_free(&hb);
}

int main(void) {
    omp_set_num_threads(1); /* tiny shapes; ctest -j2 on 2 cores must not oversubscribe */
    Rng rng;
    rng_seed(&rng, 3, 3);
    test_random_src(src, S, B, src_len, V, &rng);
    const Case fixed[] = {
        {ATTN_NONE, 0, 0, {0}, 0},          {ATTN_BAHDANAU, 0, 0, {0}, 1},
        {ATTN_LUONG_DOT, 0, 0, {0}, 0},     {ATTN_LUONG_DOT, 0, 1, {0}, 1},
        {ATTN_LUONG_GENERAL, 0, 0, {0}, 0}, {ATTN_LUONG_GENERAL, 0, 1, {0}, 0},
        {ATTN_LUONG_CONCAT, 0, 0, {0}, 0},  {ATTN_LUONG_CONCAT, 0, 1, {0}, 0},
        {ATTN_NONE, 1, 0, {0}, 1},          {ATTN_BAHDANAU, 1, 0, {0}, 0},
        {ATTN_LUONG_GENERAL, 1, 0, {0}, 0}, {ATTN_LUONG_CONCAT, 1, 1, {0}, 1},
        /* the Transformer's kinds in the RNN, 2 heads (model.heads) of the encoder states */
        {ATTN_SDP, 0, 1, {0}, 0},           {ATTN_FLASH, 1, 0, {0}, 0},
        {ATTN_LINEAR, 0, 1, {0}, 0},        {ATTN_EFFICIENT, 1, 1, {0}, 0},
        {ATTN_TAYLOR, 1, 1, {0}, 0},        {ATTN_LINFORMER, 0, 1, {0}, 0},
        {ATTN_LINFORMER, 1, 0, {0}, 0},
        /* luong_local: both modes, every score, with and without input feeding; D = 1 so that
         * windows clip and (local-m, T > S + D) empty out */
        {ATTN_LUONG_LOCAL, 0, 1, LOCAL(1, LOCAL_PREDICTIVE, LOCAL_SCORE_GENERAL), 1},
        {ATTN_LUONG_LOCAL, 1, 0, LOCAL(1, LOCAL_PREDICTIVE, LOCAL_SCORE_DOT), 0},
        {ATTN_LUONG_LOCAL, 0, 0, LOCAL(2, LOCAL_PREDICTIVE, LOCAL_SCORE_CONCAT), 0},
        {ATTN_LUONG_LOCAL, 1, 1, LOCAL(1, LOCAL_MONOTONIC, LOCAL_SCORE_DOT), 1},
        {ATTN_LUONG_LOCAL, 0, 0, LOCAL(1, LOCAL_MONOTONIC, LOCAL_SCORE_GENERAL), 0},
        {ATTN_LUONG_LOCAL, 0, 1, LOCAL(2, LOCAL_MONOTONIC, LOCAL_SCORE_CONCAT), 0},
    };
    enum { MAX_CASES = 64 };
    Case cases[MAX_CASES];
    int n = (int)(sizeof fixed / sizeof fixed[0]);
    memcpy(cases, fixed, sizeof fixed);
    /* every other kind of the table, from its row: two cases, with and without input feeding
     * (the u-th such kind: the cell u mod 2 with feeding, with the exhaustive search, then the
     * other cell without) */
    int covered[ATTN_KIND_COUNT] = {0};
    for (int i = 0; i < n; i++) covered[cases[i].kind] = 1;
    for (int k = 1, u = 0; k < ATTN_KIND_COUNT; k++)
        if (!covered[k] && n + 2 <= MAX_CASES) {
            cases[n++] = (Case){(AttentionKind)k, u & 1, 1, {0}, 1};
            cases[n++] = (Case){(AttentionKind)k, !(u & 1), 0, {0}, 0};
            u++;
        }
    for (int i = 0; i < n; i++) covered[cases[i].kind] = 1;
    for (int k = 0; k < ATTN_KIND_COUNT; k++)
        EXPECT(covered[k], "attention kind %s has no decoding case in test_decode: add one",
               attention_kind_names[k]);
    printf("%d decoding cases\n", n);
    for (int i = 0; i < n; i++) {
        check_steps(cases[i]);
        check_search(cases[i], cases[i].exact);
        check_small_reserve(cases[i]);
    }
    return test_report("test_decode");
}
