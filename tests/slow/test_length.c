/* test_length.c — the Transformer at length (docs/design.md §4: "every kind trains at thousands
 * of pieces, and its extra memory grows as its mathematics says"): for every attention kind that
 * the Transformer allows in its encoder self-attention slot (attention_supports), one training
 * step (forward and backward, model_loss) on one example of L = 4,096 pieces a side, and the
 * memory the model plans for it (model_activation_bytes, after model_reserve) at L and at L/2.
 *
 * The model: d_model 16, 2 heads, d_ff 32, 1 + 1 layers, vocabulary 32, dropout 0.1, the kind in
 * every slot that allows it (the decoder self-attention needs a causal form, the others take
 * flash there, O(L) itself); linformer with linformer_max_len = L (its projections span the
 * example), luong_local local-p with the general score and window D = 10 (the config's
 * defaults). The example: one sentence, source and target ids a fixed pattern over the
 * vocabulary, so every position (and the sinusoids' whole table up to L) is read.
 *
 * Checks, per kind:
 *  - the loss is finite and positive, and the gradient's global norm is finite and nonzero;
 *  - the planned bytes at L over those at L/2: at least QUADRATIC_MIN(L) (3.5 from L = 2,048,
 *    3.0 from 512, 2.45 below) for the kinds that keep L × L weights (their rows' save is
 *    ATTN_SAVE_WEIGHTS: sdp, the Luong scores, bahdanau, ...), and at most LINEAR_MAX(L) (2.2;
 *    2.4 below L = 256, where the CPU's flash tiles, 256 keys wide, still grow) for the others,
 *    whose extra memory is O(L) (flash, linear, efficient, taylor, linformer) or O(L·D)
 *    (luong_local: its windows): the accounting sees an L² term where there is one, so the
 *    linear bound is a bound that can fail;
 *  - sdp's attention bytes (transformer_attention_bytes: what the attentions save and their
 *    workspace) hold at least its three attentions' weights, 3·NH·L² floats; and from L = 1,024,
 *    where both ran, luong_local's are at most 1/8 of sdp's (LOCAL_OVER_SDP_MAX).
 * Options: --length N (a power of two >= 128; default 4,096), --linear-memory (only the kinds
 * whose extra memory is O(L) or O(L·D), growth 1 below), --quadratic-memory (only the others),
 * --kinds a,b,... (only these kinds, by their config names; for timing one kind) and --backend
 * cuda, the CUDA backend: CTest's test_length_simt runs the emulated one at
 * N = 128 for every kind, test_length_simt_long and test_length_simt_long_quadratic at 4,096
 * with one option each (two tests, so that `ctest -j` runs the halves at once: minutes of
 * emulation each), test_length_cuda a device at 4,096 (label gpu). Without a CUDA backend it
 * exits 77, but in the emulated build, where that is a failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tokens.h"
#include "data/batch.h"
#include "model/model.h"
#include "model/transformer.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "testutil.h"
#include "train/optim.h"

enum { V = 32, DM = 16, NH = 2, FF = 32, LOCAL_D = 10 };
#define LINEAR_MAX(L) ((L) >= 256 ? 2.2 : 2.4)
#define LOCAL_OVER_SDP_MAX 0.125
/* the L² term dominates the plan from about L = 1,024 (x3.9 at 4,096 with this model); at
 * shorter L the O(L) activations still weigh: the CPU's smallest quadratic growth was x2.51 at
 * L = 128, x3.17 at 512, x3.70 at 2,048, and the largest linear one x2.36 at 128 */
#define QUADRATIC_MIN(L) ((L) >= 2048 ? 3.5 : (L) >= 512 ? 3.0 : 2.45)

/* How a kind's extra memory grows with the length L, from its row: 2 as L² where it saves its
 * Tq × Tk weights (ATTN_SAVE_WEIGHTS), else 1, linearly (O(L), or O(L·D) for saved windows). */
static int growth(AttentionKind k) {
    return attention_row(k)->save == ATTN_SAVE_WEIGHTS ? 2 : 1;
}

static ModelSpec spec_for(AttentionKind k, const Backend *be, int L) {
    ModelSpec s = {0};
    char why[512];
    s.type = MODEL_TRANSFORMER, s.d_model = DM, s.heads = NH, s.d_ff = FF;
    s.enc_layers = 1, s.dec_layers = 1, s.dropout = 0.1f, s.norm = NORM_PRE;
    s.tie_embeddings = 1;
    s.self_attention = k;
    s.dec_self_attention =
        attention_supports(k, ATTN_SLOT_DEC_SELF, 1, be, DM, DM, NH, why, sizeof why) ? k
                                                                                     : ATTN_FLASH;
    s.cross_attention =
        attention_supports(k, ATTN_SLOT_CROSS, 0, be, DM, DM, NH, why, sizeof why) ? k
                                                                                  : ATTN_FLASH;
    s.attn_opt = (AttentionOptions){.linformer_k = LINFORMER_K_DEFAULT,
                                    .linformer_max_len = L,
                                    .linformer_share = LINFORMER_SHARE_NONE,
                                    .local_window = LOCAL_D,
                                    .local_mode = LOCAL_PREDICTIVE,
                                    .local_score = LOCAL_SCORE_GENERAL};
    return s;
}

/* One sentence of L pieces a side (target: BOS + L − 1 words in, L − 1 words + EOS out). */
static void make_batch(TokenBatch *tb, int L) {
    int *src = xmalloc(sizeof(int) * L), *tin = xmalloc(sizeof(int) * L);
    int *tout = xmalloc(sizeof(int) * L), len = L;
    for (int t = 0; t < L; t++) {
        src[t] = 4 + (7 * t + 3) % (V - 4);
        tin[t] = t == 0 ? TOKEN_BOS : 4 + (5 * t + 1) % (V - 4);
        tout[t] = t + 1 < L ? 4 + (5 * (t + 1) + 1) % (V - 4) : TOKEN_EOS;
    }
    test_token_batch(tb, 1, L, L, src, &len, tin, tout);
    free(src), free(tin), free(tout);
}

/* Returns the kind's attention bytes at L (transformer_attention_bytes), or -1 if it failed. */
static long long check_kind(AttentionKind k, const Backend *be, const TokenBatch *tb, int L) {
    const char *name = attention_kind_names[k];
    ModelSpec spec = spec_for(k, be, L);
    Model m;
    Err err;
    if (model_create(&m, &spec, V, be, &err)) {
        EXPECT(0, "%s at L = %d: %s", name, L, err.msg);
        return -1;
    }
    model_init_params(&m, 11);
    int H = L / 2;
    model_reserve(&m, 1, H, H, H, H);
    size_t half = model_activation_bytes(&m);
    model_release(&m);
    model_reserve(&m, 1, L, L, L, L);
    size_t full = model_activation_bytes(&m), attn = transformer_attention_bytes(m.tf);
    double ratio = half ? (double)full / (double)half : INFINITY;

    double t0 = now_seconds();
    params_zero_grad(&m.ps);
    double loss = model_loss(&m, tb, 0.1f, 1, 5, 1.0f / (float)tb->tgt_tokens);
    double norm = optim_grad_norm(&m.ps), secs = now_seconds() - t0;
    printf("  %-14s (dec self %s, cross %s): loss %.4f, |grad| %.3g, planned %.1f MiB at L = %d "
           "(attention %.2f), %.1f MiB at %d: x%.2f; the step %.1f s\n",
           name, attention_kind_names[spec.dec_self_attention],
           attention_kind_names[spec.cross_attention], loss, norm, full / 1048576.0, L,
           attn / 1048576.0, half / 1048576.0, H, ratio, secs);
    EXPECT(isfinite(loss) && loss > 0, "%s at L = %d: loss %g", name, L, loss);
    EXPECT(isfinite(norm) && norm > 0, "%s at L = %d: gradient norm %g", name, L, norm);
    if (growth(k) == 1)
        EXPECT(ratio <= LINEAR_MAX(L), "%s: planned memory x%.2f from L = %d to %d (> %.1f: it "
               "grows faster than linearly)", name, ratio, H, L, LINEAR_MAX(L));
    else
        EXPECT(ratio >= QUADRATIC_MIN(L), "%s: planned memory x%.2f from L = %d to %d (< %.2f: "
               "its L x L weights are not in the plan)", name, ratio, H, L, QUADRATIC_MIN(L));
    model_free(&m);
    return (long long)attn;
}

/* 1 if name is one of list's comma-separated names. */
static int name_in_list(const char *name, const char *list) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int L = 4096, cuda = 0, only = 0; /* only the kinds of this growth (0: every kind) */
    const char *kinds = NULL;          /* --kinds: a comma-separated list (NULL: every kind) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc && !strcmp(argv[i + 1], "cuda"))
            cuda = 1, i++;
        else if (!strcmp(argv[i], "--length") && i + 1 < argc)
            L = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--linear-memory"))
            only = 1;
        else if (!strcmp(argv[i], "--quadratic-memory"))
            only = 2;
        else if (!strcmp(argv[i], "--kinds") && i + 1 < argc)
            kinds = argv[++i];
        else {
            fprintf(stderr, "usage: test_length [--backend cuda] [--length N] "
                            "[--linear-memory | --quadratic-memory] [--kinds a,b,...]\n");
            return 2;
        }
    }
    if (L < 128 || (L & (L - 1))) {
        fprintf(stderr, "test_length: --length must be a power of two >= 128\n");
        return 2;
    }
    const Backend *be = backend_cpu();
    if (cuda) {
        char msg[512] = "";
        be = backend_cuda(msg, sizeof msg);
        if (!be) {
#ifdef TRAINER_SIMT /* the emulated backend always exists: not starting is a failure */
            fprintf(stderr, "test_length: FAIL: the emulated CUDA backend did not start: %s\n",
                    msg);
            return 1;
#else
            printf("test_length: skipped: %s\n", msg);
            return 77;
#endif
        }
    }
    printf("test_length: the Transformer on %s, one example of %d pieces a side\n", be->name, L);
    TokenBatch tb;
    make_batch(&tb, L);
    int n = 0;
    long long attn[ATTN_KIND_COUNT];
    for (int k = 0; k < ATTN_KIND_COUNT; k++) attn[k] = -1; /* not run */
    for (int k = 1; k < ATTN_KIND_COUNT; k++) {
        char why[512];
        if (!attention_supports((AttentionKind)k, ATTN_SLOT_ENC_SELF, 0, be, DM, DM, NH, why,
                                sizeof why)) {
            printf("  %-14s not allowed in the encoder self-attention: %s\n",
                   attention_kind_names[k], why);
            continue;
        }
        if (kinds && !name_in_list(attention_kind_names[k], kinds)) continue;
        if (only && growth((AttentionKind)k) != only) {
            printf("  %-14s left out: its extra memory grows as %s\n", attention_kind_names[k],
                   only == 1 ? "L^2 (--linear-memory)" : "L (--quadratic-memory)");
            continue;
        }
        attn[k] = check_kind((AttentionKind)k, be, &tb, L);
        n++;
    }
    EXPECT(kinds ? n >= 1 : n >= 6, "only %d kinds ran", n);
    long long sdp_weights = 3LL * NH * L * L * (long long)sizeof(float);
    if (attn[ATTN_SDP] >= 0)
        EXPECT(attn[ATTN_SDP] >= sdp_weights, "sdp's attention bytes at L = %d: %lld, fewer than "
               "its three attentions' weights (%lld)", L, attn[ATTN_SDP], sdp_weights);
    if (attn[ATTN_LUONG_LOCAL] >= 0 && attn[ATTN_SDP] > 0) {
        double r = (double)attn[ATTN_LUONG_LOCAL] / (double)attn[ATTN_SDP];
        printf("  luong_local's attention bytes over sdp's at L = %d: %.4f\n", L, r);
        EXPECT(L < 1024 || r <= LOCAL_OVER_SDP_MAX, "luong_local's attention bytes are %.3f of "
               "sdp's at L = %d (> %.3f)", r, L, LOCAL_OVER_SDP_MAX);
    }
    batch_free(&tb);
    return test_report("test_length");
}
