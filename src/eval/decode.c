/* decode.c — greedy decoding and batched beam search (decode.h). The model runs on the backend;
 * the search bookkeeping (candidates, finished hypotheses, histories) runs on the host. */
#include "eval/decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tokens.h"

void decode_greedy(Model *m, const TokenBatch *tb, int max_T, int *out_ids, float *attn) {
    const Backend *be = m->be;
    int B = tb->B, S = tb->S, V = m->V;
    int *dev_ids = be->alloc(sizeof(int) * B);
    int *ids = xmalloc(sizeof(int) * B);
    char *done = xcalloc(B, 1);
    float *w = attn ? xmalloc(sizeof(float) * B * S) : NULL; /* one step's weights [B,S] */
    for (int i = 0; i < B; i++) ids[i] = TOKEN_BOS;
    for (int i = 0; i < B * max_T; i++) out_ids[i] = TOKEN_PAD;
    model_decode_begin(m, tb, 1, max_T);
    be->upload(dev_ids, ids, sizeof(int) * B);
    for (int t = 0; t < max_T; t++) {
        const float *logits = model_decode_step(m, t, dev_ids, 0);
        be->argmax(dev_ids, logits, B, V); /* also the next step's input */
        be->download(ids, dev_ids, sizeof(int) * B);
        if (w) be->download(w, model_decode_attention(m, t), sizeof(float) * B * S);
        int all = 1;
        for (int i = 0; i < B; i++) {
            if (done[i]) continue;
            out_ids[i * max_T + t] = ids[i];
            if (w) memcpy(attn + ((size_t)i * max_T + t) * S, w + (size_t)i * S, sizeof(float) * S);
            if (ids[i] == TOKEN_EOS) done[i] = 1;
            all &= done[i];
        }
        if (all) break;
    }
    be->free(dev_ids);
    free(ids);
    free(done);
    free(w);
}

typedef struct {
    float score; /* log p(y_≤t | x) */
    int row, token;
} Cand;

typedef struct {
    double norm; /* s(Y) = log p / lp */
    int len;     /* tokens, EOS included if it ended */
    int *ids;    /* [max_T] */
    float *w;    /* [max_T, S] or NULL */
} Hyp;

/* Inserts c into top[n] (sorted by score, descending) keeping at most cap entries; ties keep
 * the earlier candidate first, as argmax keeps the first maximum. */
static void top_insert(Cand *top, int *n, int cap, Cand c) {
    if (*n == cap && !(c.score > top[cap - 1].score)) return;
    int i = *n < cap ? (*n)++ : cap - 1;
    while (i > 0 && c.score > top[i - 1].score) top[i] = top[i - 1], i--;
    top[i] = c;
}

static double length_penalty(int len, float alpha) {
    return alpha == 0.0f ? 1.0 : pow((5.0 + len) / 6.0, alpha);
}

void decode_beam(Model *m, const TokenBatch *tb, int K, float alpha, int max_T, int *out_ids,
                 float *attn) {
    const Backend *be = m->be;
    int B = tb->B, S = tb->S, V = m->V, R = B * K;
    int *dev_ids = be->alloc(sizeof(int) * R), *dev_parent = be->alloc(sizeof(int) * R);
    int *ids = xmalloc(sizeof(int) * R), *parent = xmalloc(sizeof(int) * R);
    float *score = xmalloc(sizeof(float) * R), *nscore = xmalloc(sizeof(float) * R);
    int *hist = xcalloc((size_t)R * max_T, sizeof(int)), *nhist = xcalloc((size_t)R * max_T, sizeof(int));
    size_t wrow = (size_t)max_T * S;
    float *whist = attn ? xcalloc(R * wrow, sizeof(float)) : NULL;
    float *nwhist = attn ? xcalloc(R * wrow, sizeof(float)) : NULL;
    float *w = attn ? xmalloc(sizeof(float) * R * S) : NULL;
    float *lp = xmalloc(sizeof(float) * R * V);
    Hyp *fin = xcalloc((size_t)B * K, sizeof(Hyp));
    int *nfin = xcalloc(B, sizeof(int));
    char *done = xcalloc(B, 1);
    Cand *top = xmalloc(sizeof(Cand) * 2 * K);
    for (int r = 0; r < R; r++) ids[r] = TOKEN_BOS, score[r] = r % K ? -INFINITY : 0.0f;
    model_decode_begin(m, tb, K, max_T);
    be->upload(dev_ids, ids, sizeof(int) * R);
    for (int t = 0; t < max_T; t++) {
        be->download(lp, model_decode_step(m, t, dev_ids, 1), sizeof(float) * R * V);
        if (w) be->download(w, model_decode_attention(m, t), sizeof(float) * R * S);
        int all = 1;
        for (int i = 0; i < B; i++) {
            int r0 = i * K;
            if (done[i]) { /* keep the rows in place; their output is ignored */
                for (int k = 0; k < K; k++) parent[r0 + k] = r0 + k, nscore[r0 + k] = -INFINITY;
                continue;
            }
            /* the 2K best continuations: at least K of them do not end the hypothesis */
            int n = 0;
            for (int k = 0; k < K; k++) {
                int r = r0 + k;
                if (score[r] == -INFINITY) continue;
                const float *row = lp + (size_t)r * V;
                for (int v = 0; v < V; v++)
                    top_insert(top, &n, 2 * K, (Cand){score[r] + row[v], r, v});
            }
            int live = 0;
            for (int c = 0; c < n && live < K; c++) {
                int len = t + 1, last = t == max_T - 1;
                if (top[c].token == TOKEN_EOS || last) {
                    /* only an ending among the K best candidates finishes a hypothesis: the
                     * lower ones would fill the K slots with poor short outputs */
                    if (c >= K || nfin[i] == K) continue;
                    Hyp *h = &fin[(size_t)i * K + nfin[i]++];
                    h->norm = top[c].score / length_penalty(len, alpha);
                    h->len = len;
                    h->ids = xmalloc(sizeof(int) * max_T);
                    memcpy(h->ids, hist + (size_t)top[c].row * max_T, sizeof(int) * t);
                    h->ids[t] = top[c].token;
                    if (w) {
                        h->w = xmalloc(sizeof(float) * wrow);
                        memcpy(h->w, whist + top[c].row * wrow, sizeof(float) * t * S);
                        memcpy(h->w + (size_t)t * S, w + (size_t)top[c].row * S, sizeof(float) * S);
                    }
                    continue;
                }
                int r = r0 + live++;
                parent[r] = top[c].row, nscore[r] = top[c].score, ids[r] = top[c].token;
            }
            for (; live < K; live++) parent[r0 + live] = r0, nscore[r0 + live] = -INFINITY;
            if (nfin[i] >= K) done[i] = 1;
            all &= done[i];
        }
        if (all) break;
        /* rows take their parents' state and history; then append this step's token */
        for (int r = 0; r < R; r++) {
            memcpy(nhist + (size_t)r * max_T, hist + (size_t)parent[r] * max_T, sizeof(int) * t);
            nhist[(size_t)r * max_T + t] = ids[r];
            if (w) {
                memcpy(nwhist + r * wrow, whist + parent[r] * wrow, sizeof(float) * t * S);
                memcpy(nwhist + r * wrow + (size_t)t * S, w + (size_t)parent[r] * S, sizeof(float) * S);
            }
        }
        int *ti = hist; hist = nhist; nhist = ti;
        float *tf = score; score = nscore; nscore = tf;
        if (w) tf = whist, whist = nwhist, nwhist = tf;
        be->upload(dev_parent, parent, sizeof(int) * R);
        model_decode_reorder(m, t, dev_parent);
        be->upload(dev_ids, ids, sizeof(int) * R);
    }
    for (int i = 0; i < B * max_T; i++) out_ids[i] = TOKEN_PAD;
    for (int i = 0; i < B; i++) {
        const Hyp *best = NULL;
        for (int j = 0; j < nfin[i]; j++) /* the first of equals: the one found earliest */
            if (!best || fin[(size_t)i * K + j].norm > best->norm) best = &fin[(size_t)i * K + j];
        if (!best) continue; /* max_T = 0 */
        memcpy(out_ids + (size_t)i * max_T, best->ids, sizeof(int) * best->len);
        if (attn) memcpy(attn + (size_t)i * wrow, best->w, sizeof(float) * best->len * S);
    }
    for (int j = 0; j < B * K; j++) free(fin[j].ids), free(fin[j].w);
    be->free(dev_ids), be->free(dev_parent);
    free(ids), free(parent), free(score), free(nscore), free(hist), free(nhist);
    free(whist), free(nwhist), free(w), free(lp), free(fin), free(nfin), free(done), free(top);
}

void decode_batch(Model *m, const TokenBatch *tb, const DecodeOpts *opt, int max_T, int *out_ids,
                  float *attn) {
    if (opt->beam <= 1) decode_greedy(m, tb, max_T, out_ids, attn);
    else decode_beam(m, tb, opt->beam, opt->len_penalty, max_T, out_ids, attn);
}

int parse_decode_arg(int argc, char **argv, int *i, DecodeOpts *d, int *alpha_set,
                     const char *cmd) {
    int beam = !strcmp(argv[*i], "--beam"), lp = !strcmp(argv[*i], "--len-penalty");
    if (!beam && !lp) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "trainer %s: %s needs a value\n", cmd, argv[*i]);
        return 2;
    }
    const char *v = argv[++*i];
    char *end;
    if (beam) {
        long k = strtol(v, &end, 10);
        if (*end || end == v || k < 1 || k > 64) {
            fprintf(stderr, "trainer %s: --beam %s: give a beam size from 1 to 64\n", cmd, v);
            return 2;
        }
        d->beam = (int)k;
        if (!*alpha_set) d->len_penalty = k > 1 ? 1.0f : 0.0f;
    } else {
        double a = strtod(v, &end);
        if (*end || end == v || !(a >= 0 && a <= 10)) {
            fprintf(stderr, "trainer %s: --len-penalty %s: give α from 0 to 10 (Wu et al. 2016 "
                    "eq. 14; 0 = none)\n", cmd, v);
            return 2;
        }
        d->len_penalty = (float)a, *alpha_set = 1;
    }
    return 1;
}
