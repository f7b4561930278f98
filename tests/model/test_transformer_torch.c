/* test_transformer_torch.c — the whole tiny Transformer against PyTorch fixtures (docs/design.md §11).
 *
 * tests/fixtures/transformer_tiny/NAME.txt are written by
 * tests/reference/make_transformer_fixture.py (float64 PyTorch, no dropout; the sdp cases are also
 * checked there against nn.TransformerEncoderLayer / nn.TransformerDecoderLayer): parameters, a
 * padded batch, the logits, the summed label-smoothed loss (ε 0.1) and its gradient w.r.t. every
 * parameter. The fixtures are committed, so this test needs no PyTorch; it runs every one of
 * them (every .txt file in tests/fixtures/transformer_tiny), which cover the attention kinds sdp, flash,
 * linear, efficient, bahdanau, luong_dot, luong_general and luong_concat, and those added
 * since, in the slots they may take, pre- and post-LN, tied and untied embeddings.
 * For each: the same model from transformer_create (dropout 0), the parameters loaded by name
 * (shapes checked, every declared tensor in the fixture and vice versa), one transformer_loss
 * with train = 1, and
 *   logits                      |ours − ref| ≤ 1e-4 + 1e-4·|ref|
 *   loss (train and eval pass)  |ours − ref| ≤ 1e-5·|ref|
 *   each gradient tensor        ‖ours − ref‖₂ / ‖ref‖₂ ≤ 1e-4, elementwise
 *                               |ours − ref| ≤ 1e-4 + 1e-3·|ref|
 * then a second training pass with grad_scale 0.5 and without zeroing must add half of every
 * gradient again (they accumulate, scaled: test_check_accumulated).
 * Ours runs in float32, so these are float32 tolerances. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/transformer.h"
#include "data/batch.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"
#include "torch_fixture.h"

static void run(const char *path) {
    Fixture fx;
    if (!fixture_load(&fx, path, "transformer_fixture")) {
        EXPECT(0, "cannot load %s", path);
        return;
    }
    ModelSpec c = {.type = MODEL_TRANSFORMER};
    int V = 0;
    char norm[16], es[32], ds[32], cr[32];
    double smoothing;
    Err err;
    int ok = sscanf(fx.config, "%d %d %d %d %d %d %15s %d %31s %31s %31s %lf", &V, &c.d_model,
                    &c.heads, &c.d_ff, &c.enc_layers, &c.dec_layers, norm, &c.tie_embeddings, es,
                    ds, cr, &smoothing) == 12 &&
             attention_kind_from_name(es, &c.self_attention, &err) == STATUS_OK &&
             attention_kind_from_name(ds, &c.dec_self_attention, &err) == STATUS_OK &&
             attention_kind_from_name(cr, &c.cross_attention, &err) == STATUS_OK && V == fx.V;
    EXPECT(ok, "%s: bad config line: %s", path, fx.config);
    if (!ok) {
        fixture_free(&fx);
        return;
    }
    c.norm = !strcmp(norm, "pre") ? NORM_PRE : NORM_POST;
    const Backend *be = backend_cpu();
    ParamSet ps;
    params_init_set(&ps, be);
    TfModel *m;
    if (transformer_create(&m, &ps, &c, V, &err)) {
        EXPECT(0, "%s: transformer_create: %s", path, err.msg);
        fixture_free(&fx);
        return;
    }
    params_allocate(&ps);
    fixture_set_params(&fx, &ps, path);
    int B = fx.B, S = fx.S, T = fx.T;
    TokenBatch hb; /* the fixture's arrays are time-major */
    test_token_batch(&hb, B, S, T, fx.src, fx.src_len, fx.tgt_in, fx.tgt_out);
    transformer_reserve(m, B, S, T, (long)B * S, (long)B * T);
    params_zero_grad(&ps);
    double loss = transformer_loss(m, &hb, (float)smoothing, 1, 99, 1.0f);
    /* logits: ours one row per non-padding target position in (b, t) order, the fixture's
     * time-major [T,B,V] over every position */
    int R = 0, r = 0, real = 0;
    const float *lg = transformer_logits(m, &R);
    for (int i = 0; i < B * T; i++) real += fx.tgt_out[i] != TOKEN_PAD;
    EXPECT(R == (real < B * T ? real : B * T), "%s: %d logit rows for %d real targets", path, R,
           real);
    double lmax = 0;
    long lbad = 0;
    for (int b = 0; b < B && R == real; b++)
        for (int t = 0; t < T; t++) {
            if (fx.tgt_out[t * B + b] == TOKEN_PAD) continue;
            for (int v = 0; v < V; v++) {
                double ours = lg[(size_t)r * V + v];
                double ref = fx.logits[((size_t)t * B + b) * V + v], d = fabs(ours - ref);
                lmax = d > lmax ? d : lmax;
                lbad += d > 1e-4 + 1e-4 * fabs(ref);
            }
            r++;
        }
    double loss_eval = transformer_loss(m, &hb, (float)smoothing, 0, 0, 0.0f);
    double lrel = fabs(loss - fx.loss) / fabs(fx.loss);
    double lrel_eval = fabs(loss_eval - fx.loss) / fabs(fx.loss);
    printf("%s: %s, %zu parameters\n", path, fx.config, ps.total);
    printf("  logits max |Δ| %.2e; loss ours %.9f torch %.9f rel %.2e (eval pass rel %.2e)\n",
           lmax, loss, fx.loss, lrel, lrel_eval);
    EXPECT(lbad == 0, "%s: %ld logits off (max |Δ| %.3g)", path, lbad, lmax);
    EXPECT(lrel <= 1e-5, "%s: loss %.9f vs %.9f (rel %.2e)", path, loss, fx.loss, lrel);
    EXPECT(lrel_eval <= 1e-5, "%s: eval loss %.9f vs %.9f (rel %.2e)", path, loss_eval, fx.loss,
           lrel_eval);
    fixture_check_grads(&fx, &ps, path, 1e-4, 1e-4);
    float *g1 = test_grad_copy(&ps); /* the gradients accumulate (transformer.h) */
    transformer_loss(m, &hb, (float)smoothing, 1, 99, 0.5f);
    test_check_accumulated(g1, &ps, path, 0.5);
    free(g1);
    batch_free(&hb);
    transformer_free(m);
    params_free(&ps);
    fixture_free(&fx);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void) {
    /* every fixture make_transformer_fixture.py wrote, in name order */
    const char *dir = "tests/fixtures/transformer_tiny";
    char *names[64];
    int n = 0;
    DIR *d = opendir(dir);
    EXPECT(d != NULL, "cannot open %s (run from the repository root)", dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".txt") && n < 64)
            names[n++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    EXPECT(n > 0, "no fixtures (*.txt) in %s", dir);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run(path);
        free(names[i]);
    }
    printf("%d PyTorch fixtures\n", n);
    return test_report("test_transformer_torch");
}
