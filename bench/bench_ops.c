/* bench_ops.c — times the CPU backend's hot ops at configs/luong.ini's sizes (a benchmark, not a
 * test). Each op runs `reps` times after a warm-up; the median time is printed with GFLOP/s where
 * the op is a matrix product.
 *
 *   bench_ops [threads]
 *
 * Sizes: B 150 sentences, S = T = 14 subwords (a 4096-token batch), E 256, H 512, V 8000; then
 * attention at configs/transformer.ini's sizes (160 sentences, 4 heads of 64, 14 positions),
 * with the heads split and in their merged layout (attn_*_merged, as the Transformer calls
 * them), and linear attention at those sizes (GFLOP/s counts its state's 2·HS² multiply-adds a
 * position forward, three times that backward).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "train/train.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define REPS 15
#define TIME(label, flops, stmt)                                                          \
    do {                                                                                  \
        double t[REPS];                                                                   \
        stmt;                                                                             \
        for (int r = 0; r < REPS; r++) {                                                  \
            double t0 = now_seconds();                                                    \
            stmt;                                                                         \
            t[r] = now_seconds() - t0;                                                    \
        }                                                                                 \
        qsort(t, REPS, sizeof(double), cmp_double);                                       \
        double med = t[REPS / 2];                                                         \
        if ((flops) > 0)                                                                  \
            printf("%-44s %9.3f ms  %7.1f GFLOP/s\n", label, med * 1e3, (flops) / med * 1e-9); \
        else                                                                              \
            printf("%-44s %9.3f ms\n", label, med * 1e3);                                 \
    } while (0)

static float *randn(const Backend *be, size_t n, Rng *rng) {
    float *h = xmalloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) h[i] = rng_normal(rng) * 0.5f;
    float *d = be->alloc(sizeof(float) * n);
    be->upload(d, h, sizeof(float) * n);
    free(h);
    return d;
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    BackendOptions bo = {.device = BACKEND_DEVICE_CPU, .precision = BACKEND_KEEP,
                         .threads = threads > 0 ? threads : 0, .ordinal = BACKEND_KEEP};
    const Backend *be;
    Err err;
    if (backend_open(&bo, &be, NULL, 0, &err)) {
        fprintf(stderr, "bench_ops: %s\n", err.msg);
        return 1;
    }
    Rng rng;
    rng_seed(&rng, 1, 1);
    int B = 150, S = 14, T = 14, H = 512, V = 8000, E = 256;
    int NT = B * T;
    float *hdec = randn(be, (size_t)NT * H, &rng), *W_out = randn(be, (size_t)V * H, &rng);
    float *logits = randn(be, (size_t)NT * V, &rng), *dlogits = randn(be, (size_t)NT * V, &rng);
    float *dW = randn(be, (size_t)V * H, &rng);
    int *tgt = xmalloc(sizeof(int) * NT);
    for (int i = 0; i < NT; i++) tgt[i] = 4 + (int)rng_below(&rng, V - 4);
    printf("CPU backend, B %d, S %d, T %d, E %d, H %d, V %d\n", B, S, T, E, H, V);
    TIME("output projection fwd [B*T,H]x[H,V]", 2.0 * NT * H * V,
         be->matmul(logits, hdec, W_out, NT, V, H, 0, 1, 1.0f, 0.0f));
    TIME("output projection dW [V,B*T]x[B*T,H]", 2.0 * NT * H * V,
         be->matmul(dW, dlogits, hdec, V, H, NT, 1, 0, 1.0f, 1.0f));
    TIME("output projection dX [B*T,V]x[V,H]", 2.0 * NT * H * V,
         be->matmul(hdec, dlogits, W_out, NT, H, V, 0, 0, 1.0f, 0.0f));
    float *xwork = be->alloc(sizeof(float) * (be->xent_workspace(NT, V) + 1));
    TIME("xent fwd+bwd (label smoothing) [B*T,V]", 0,
         be->xent_forward_backward(dlogits, logits, tgt, NT, V, 0.1f, 0, 1e-3f, xwork));
    TIME("bias backward [B*T,V]", 0, be->bias_backward(W_out, dlogits, NT, V));
    float *x = randn(be, (size_t)B * (E + H), &rng), *Wih = randn(be, (size_t)4 * H * (E + H), &rng);
    float *gates = randn(be, (size_t)B * 4 * H, &rng), *h = randn(be, (size_t)B * H, &rng);
    float *c = randn(be, (size_t)B * H, &rng), *hp = randn(be, (size_t)B * H, &rng);
    float *cp = randn(be, (size_t)B * H, &rng);
    TIME("decoder step gates [B,E+H]x[E+H,4H]", 2.0 * B * (E + H) * 4 * H,
         be->matmul(gates, x, Wih, B, 4 * H, E + H, 0, 1, 1.0f, 0.0f));
    TIME("lstm cell fwd [B,4H]", 0, be->lstm_cell_forward(h, c, gates, hp, cp, NULL, B, H));
    float *dg = randn(be, (size_t)B * 4 * H, &rng);
    TIME("lstm cell bwd [B,4H]", 0,
         be->lstm_cell_backward(dg, hp, cp, h, c, gates, c, cp, NULL, B, H));
    float *keys = randn(be, (size_t)B * S * H, &rng), *ctx = randn(be, (size_t)B * H, &rng);
    float *w = randn(be, (size_t)B * S, &rng), *dk = randn(be, (size_t)B * S * H, &rng);
    int *len = xmalloc(sizeof(int) * B);
    for (int b = 0; b < B; b++) len[b] = S - (b % 4);
    TIME("attention fwd (one decoder step) [B,1,S,H]", 0,
         be->attn_forward(ctx, w, h, keys, keys, len, 1.0f, 0, B, 1, 1, S, H, H));
    float *work = randn(be, be->attn_workspace(B, 1, 1, S, H, H), &rng);
    TIME("attention bwd (one decoder step) [B,1,S,H]", 0,
         be->attn_backward(hp, dk, dk, ctx, h, keys, keys, w, 1.0f, B, 1, 1, S, H, H, work));

    /* self-attention at Transformer sizes: flash (src/ops/cpu/flash.c) vs materialised weights;
     * AB 2 sentences, NH 8 heads of HS 64, AT 256 positions, causal (decoder), full lengths */
    {
        int AB = 2, NH = 8, AT = 256, HS = 64;
        size_t n = (size_t)AB * NH * AT * HS;
        float *aq = randn(be, n, &rng), *ak = randn(be, n, &rng), *av = randn(be, n, &rng);
        float *ao = randn(be, n, &rng), *ago = randn(be, n, &rng), *adq = randn(be, n, &rng);
        float *adk = randn(be, n, &rng), *adv = randn(be, n, &rng);
        float *alse = randn(be, (size_t)AB * NH * AT, &rng);
        float *aw = randn(be, (size_t)AB * NH * AT * AT, &rng);
        int *alen = xmalloc(sizeof(int) * AB);
        for (int i = 0; i < AB; i++) alen[i] = AT;
        size_t wf = be->flash_attn_workspace(AB, NH, AT, AT, HS, HS);
        size_t wa = be->attn_workspace(AB, NH, AT, AT, HS, HS);
        float *awork = randn(be, wf > wa ? wf : wa, &rng);
        float sc = 0.125f;                                  /* 1/√HS */
        double fl = 2.0 * 2.0 * AB * NH * AT * AT * HS / 2; /* q kᵀ and a v, causal half */
        TIME("flash attn fwd [2,8,256,64] causal", fl,
             be->flash_attn_forward(ao, alse, aq, ak, av, alen, sc, 1, AB, NH, AT, AT, HS, HS, awork));
        TIME("flash attn bwd [2,8,256,64] causal", 2.5 * fl,
             be->flash_attn_backward(adq, adk, adv, ago, aq, ak, av, ao, alse, alen, sc, 1, AB,
                                     NH, AT, AT, HS, HS, awork));
        TIME("materialised attn fwd [2,8,256,64] causal", fl,
             be->attn_forward(ao, aw, aq, ak, av, alen, sc, 1, AB, NH, AT, AT, HS, HS));
        TIME("materialised attn bwd [2,8,256,64] causal", 2.0 * fl,
             be->attn_backward(adq, adk, adv, ago, aq, ak, av, aw, sc, AB, NH, AT, AT, HS, HS,
                               awork));
        free(alen);
    }

    /* attention at configs/transformer.ini's sizes: AB 160 sentences, NH 4 heads of HS 64, AT 14
     * positions, lengths 8–14 (padding), the encoder's (all keys) and the decoder's (causal) */
    {
        int AB = 160, NH = 4, AT = 14, HS = 64;
        size_t n = (size_t)AB * NH * AT * HS;
        float *aq = randn(be, n, &rng), *ak = randn(be, n, &rng), *av = randn(be, n, &rng);
        float *ao = randn(be, n, &rng), *ago = randn(be, n, &rng), *adq = randn(be, n, &rng);
        float *adk = randn(be, n, &rng), *adv = randn(be, n, &rng);
        float *aw = randn(be, (size_t)AB * NH * AT * AT, &rng);
        int *alen = xmalloc(sizeof(int) * AB);
        for (int i = 0; i < AB; i++) alen[i] = AT - i % 7;
        float *awork = randn(be, be->attn_workspace(AB, NH, AT, AT, HS, HS), &rng);
        float sc = 0.125f;                               /* 1/√HS */
        double fl = 2.0 * 2.0 * AB * NH * AT * AT * HS; /* q kᵀ and a v, all keys (an upper bound) */
        for (int causal = 0; causal <= 1; causal++) {
            char lab[96];
            snprintf(lab, sizeof lab, "sdp attn fwd [160,4,14,64]%s", causal ? " causal" : "");
            TIME(lab, fl, be->attn_forward(ao, aw, aq, ak, av, alen, sc, causal, AB, NH, AT, AT, HS, HS));
            snprintf(lab, sizeof lab, "sdp attn bwd [160,4,14,64]%s", causal ? " causal" : "");
            TIME(lab, 2.0 * fl,
                 be->attn_backward(adq, adk, adv, ago, aq, ak, av, aw, sc, AB, NH, AT, AT, HS, HS,
                                   awork));
            /* the heads' merged layout, as the Transformer calls it (the same sizes) */
            snprintf(lab, sizeof lab, "sdp attn fwd merged [160,14,4,64]%s", causal ? " causal" : "");
            TIME(lab, fl,
                 be->attn_forward_merged(ao, aw, aq, ak, av, alen, sc, causal, AB, NH, AT, AT, HS,
                                         HS));
            snprintf(lab, sizeof lab, "sdp attn bwd merged [160,14,4,64]%s", causal ? " causal" : "");
            TIME(lab, 2.0 * fl,
                 be->attn_backward_merged(adq, adk, adv, ago, aq, ak, av, aw, sc, AB, NH, AT, AT,
                                          HS, HS, awork));
            /* linear attention (φ = elu + 1), as the linear kind calls it: one D×Dv state per
             * (sentence, head), 2·HS² multiply-adds a position forward (a key joins the state,
             * a query reads it) */
            float *lwork = randn(be, be->linear_attn_workspace(AB, NH, AT, AT, HS, HS), &rng);
            double lf = 2.0 * 2.0 * AB * NH * AT * HS * HS;
            snprintf(lab, sizeof lab, "linear attn fwd [160,4,14,64]%s", causal ? " causal" : "");
            TIME(lab, lf,
                 be->linear_attn_forward(ao, aq, ak, av, alen, causal, LINEAR_PHI_ELU1, AB, NH, AT,
                                         AT, HS, HS, lwork));
            snprintf(lab, sizeof lab, "linear attn bwd [160,4,14,64]%s", causal ? " causal" : "");
            TIME(lab, 3.0 * lf,
                 be->linear_attn_backward(adq, adk, adv, ago, aq, ak, av, alen, causal,
                                          LINEAR_PHI_ELU1, AB, NH, AT, AT, HS, HS, lwork));
            be->free(lwork);
        }
        free(alen);
    }
    return 0;
}
