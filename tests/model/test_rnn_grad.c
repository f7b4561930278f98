/* test_rnn_grad.c — the whole tiny RNN model's backward against central finite differences.
 * Every parameter element of a tiny model (V 13, E 4, H 6, 2+2 layers, batch of 3 with padding)
 * is perturbed by ±eps; the analytic gradient must match (loss in float32, so the tolerance is
 * |a − n| ≤ 2e-3 + 2e-2·|n|). Dropout is on (p = 0.2): masks are a pure function of the key, so
 * the perturbed passes see the same masks. Run for each RNN attention kind. */
#include <math.h>
#include <string.h>

#include "data/spm.h"
#include "model/rnn.h"
#include "testutil.h"

static void run(AttentionKind kind, int Le, int Ld) {
    const Backend *be = backend_cpu();
    ParamSet ps;
    params_init_set(&ps, be);
    RnnModel *m;
    Err err;
    int V = 13, E = 4, H = 6, B = 3, S = 5, T = 4;
    if (rnn_create(&m, &ps, V, E, H, Le, Ld, 0.2f, 1, kind, &err)) {
        EXPECT(0, "rnn_create: %s", err.msg);
        return;
    }
    params_allocate(&ps);
    Rng rng;
    rng_seed(&rng, 7, 1);
    params_initialise(&ps, &rng, 0.5f);
    rnn_reserve(m, B, S, T, (long)B * S, (long)B * T);
    int src_len[3] = {5, 3, 1}, tgt_len[3] = {4, 2, 3};
    int src[5 * 3], tin[4 * 3], tout[4 * 3];
    float mask[5 * 3];
    for (int t = 0; t < S; t++)
        for (int b = 0; b < B; b++) {
            int real = t < src_len[b];
            src[t * B + b] = real ? 4 + (int)rng_below(&rng, V - 4) : SPM_PAD_ID;
            mask[t * B + b] = (float)real;
        }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            tin[t * B + b] = t == 0 ? SPM_BOS_ID : t < tgt_len[b] ? 4 + (int)rng_below(&rng, V - 4) : SPM_PAD_ID;
        }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            tout[t * B + b] = t + 1 < tgt_len[b] ? tin[(t + 1) * B + b] : t + 1 == tgt_len[b] ? SPM_EOS_ID : SPM_PAD_ID;
    RnnBatch batch = {B, S, T, src, src_len, mask, tin, tout};
    uint64_t key = 12345;
    params_zero_grad(&ps);
    rnn_forward_backward(m, &batch, 0.1f, 1, key, 1.0f);
    float *grad = xmalloc(sizeof(float) * ps.total);
    memcpy(grad, ps.grad, sizeof(float) * ps.total);
    int bad = 0;
    double maxrel = 0;
    float eps = 1e-2f;
    for (int i = 0; i < ps.n; i++) {
        ParamSpec *s = &ps.specs[i];
        for (size_t j = 0; j < s->size; j++) {
            float *w = ps.data + s->offset + j, w0 = *w;
            *w = w0 + eps;
            double lp = rnn_forward_backward(m, &batch, 0.1f, 1, key, 0.0f);
            *w = w0 - eps;
            double lm = rnn_forward_backward(m, &batch, 0.1f, 1, key, 0.0f);
            *w = w0;
            double num = (lp - lm) / (2 * eps), an = grad[s->offset + j];
            double diff = fabs(an - num);
            if (diff > 2e-3 + 2e-2 * fabs(num)) {
                if (bad++ < 10)
                    fprintf(stderr, "%s %s[%zu]: analytic %.6f numeric %.6f\n",
                            attention_kind_names[kind], s->name, j, an, num);
            }
            if (fabs(num) > 1e-3 && diff / fabs(num) > maxrel) maxrel = diff / fabs(num);
        }
    }
    printf("%s Le=%d Ld=%d: %zu parameters, max relative error %.2e, %d bad\n",
           attention_kind_names[kind], Le, Ld, ps.total, maxrel, bad);
    EXPECT(bad == 0, "%d gradient elements disagree", bad);
    free(grad);
    rnn_free(m);
    params_free(&ps);
}

int main(void) {
    run(ATTN_LUONG_GENERAL, 2, 2);
    run(ATTN_LUONG_GENERAL, 1, 2);
    run(ATTN_LUONG_DOT, 1, 1);
    return test_report("test_rnn_grad");
}
