/* decode.c — greedy decoding and batched beam search (decode.h). The model runs on the backend;
 * the search bookkeeping (candidates, finished hypotheses, histories) runs on the host. */
#include "eval/decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
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

/* The models of an ensemble stepped together: each its own device buffers of ids and parents,
 * their log-probabilities [R, V] averaged on the host (the mean over the models, summed in
 * model order: an ensemble of one model with itself averages to its own values exactly). */
typedef struct {
    Model *const *m;
    int n, R, V;
    int **ids, **parent; /* [n] device buffers of [R] ids */
    float *tmp;          /* [R·V] host, the second and later models' log-probabilities */
} Ens;

static void ens_open(Ens *e, Model *const *m, int n, int R, int V) {
    e->m = m, e->n = n, e->R = R, e->V = V;
    e->ids = xmalloc(sizeof(int *) * n), e->parent = xmalloc(sizeof(int *) * n);
    for (int i = 0; i < n; i++) {
        e->ids[i] = m[i]->be->alloc(sizeof(int) * R);
        e->parent[i] = m[i]->be->alloc(sizeof(int) * R);
    }
    e->tmp = n > 1 ? xmalloc(sizeof(float) * (size_t)R * V) : NULL;
}

static void ens_close(Ens *e) {
    for (int i = 0; i < e->n; i++) e->m[i]->be->free(e->ids[i]), e->m[i]->be->free(e->parent[i]);
    free(e->ids), free(e->parent), free(e->tmp);
}

static void ens_upload_ids(Ens *e, const int *ids) {
    for (int i = 0; i < e->n; i++) e->m[i]->be->upload(e->ids[i], ids, sizeof(int) * e->R);
}

static void ens_reorder(Ens *e, int t, const int *parent) {
    for (int i = 0; i < e->n; i++) {
        e->m[i]->be->upload(e->parent[i], parent, sizeof(int) * e->R);
        model_decode_reorder(e->m[i], t, e->parent[i]);
    }
}

/* Step t of every model into lp [R·V] (host): the mean of their log-probabilities. */
static void ens_step(Ens *e, int t, float *lp) {
    size_t n = (size_t)e->R * e->V;
    e->m[0]->be->download(lp, model_decode_step(e->m[0], t, e->ids[0], 1), sizeof(float) * n);
    if (e->n == 1) return;
    for (int i = 1; i < e->n; i++) {
        e->m[i]->be->download(e->tmp, model_decode_step(e->m[i], t, e->ids[i], 1),
                              sizeof(float) * n);
        for (size_t j = 0; j < n; j++) lp[j] += e->tmp[j];
    }
    for (size_t j = 0; j < n; j++) lp[j] /= (float)e->n;
}

/* decode_beam over the ensemble models[0..nm) (their log-probabilities averaged at each step;
 * the attention is models[0]'s), returning each sentence's nbest (<= K) finished hypotheses
 * best first: ids out_ids[(b·nbest + k)·max_T ...], s(Y) scores[b·nbest + k] (NULL: not
 * wanted), attention of the best. A sentence with fewer finished hypotheses gets PAD rows and
 * scores of -inf. With nm = 1 and nbest = 1 it is decode_beam. */
static void beam_search(Model *const *models, int nm, const TokenBatch *tb, int K, float alpha,
                        int nbest, int max_T, int *out_ids, float *scores, float *attn) {
    int B = tb->B, S = tb->S, V = models[0]->V, R = B * K;
    Ens ens;
    ens_open(&ens, models, nm, R, V);
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
    for (int i = 0; i < nm; i++) model_decode_begin(models[i], tb, K, max_T);
    ens_upload_ids(&ens, ids);
    for (int t = 0; t < max_T; t++) {
        ens_step(&ens, t, lp);
        if (w) models[0]->be->download(w, model_decode_attention(models[0], t),
                                       sizeof(float) * R * S);
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
        ens_reorder(&ens, t, parent);
        ens_upload_ids(&ens, ids);
    }
    for (long i = 0; i < (long)B * nbest * max_T; i++) out_ids[i] = TOKEN_PAD;
    char *taken = xcalloc((size_t)K, 1);
    for (int i = 0; i < B; i++) {
        memset(taken, 0, (size_t)K);
        for (int k = 0; k < nbest; k++) {
            int best = -1; /* the best not yet taken; of equals, the one found earliest */
            for (int j = 0; j < nfin[i]; j++)
                if (!taken[j] && (best < 0 || fin[(size_t)i * K + j].norm >
                                                  fin[(size_t)i * K + best].norm))
                    best = j;
            if (scores) scores[(size_t)i * nbest + k] = best < 0 ? -INFINITY
                                                      : (float)fin[(size_t)i * K + best].norm;
            if (best < 0) continue; /* max_T = 0, or fewer finished than nbest */
            const Hyp *h = &fin[(size_t)i * K + best];
            taken[best] = 1;
            memcpy(out_ids + ((size_t)i * nbest + k) * max_T, h->ids, sizeof(int) * h->len);
            if (attn && k == 0) memcpy(attn + (size_t)i * wrow, h->w, sizeof(float) * h->len * S);
        }
    }
    free(taken);
    for (int j = 0; j < B * K; j++) free(fin[j].ids), free(fin[j].w);
    ens_close(&ens);
    free(ids), free(parent), free(score), free(nscore), free(hist), free(nhist);
    free(whist), free(nwhist), free(w), free(lp), free(fin), free(nfin), free(done), free(top);
}

void decode_beam(Model *m, const TokenBatch *tb, int K, float alpha, int max_T, int *out_ids,
                 float *attn) {
    beam_search(&m, 1, tb, K, alpha, 1, max_T, out_ids, NULL, attn);
}



/* qsort order for the nucleus: decreasing log-probability, increasing id among equals. */
static const float *g_sort_lp;
static int cmp_prob_desc(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    float x = g_sort_lp[i], y = g_sort_lp[j];
    return x != y ? (x > y ? -1 : 1) : (i > j) - (i < j);
}

int decode_pick_token(const float *lp, int V, const DecodeOpts *opt, Rng *r, int *order) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (lp[v] > lp[best]) best = v;
    if (opt->sample == DECODE_SEARCH) return best;
    int n = V;
    double inv_t = opt->sample == DECODE_TEMP ? 1.0 / opt->temperature : 1.0, sum = 0;
    if (opt->sample == DECODE_TOPK) { /* the K largest, by insertion into order[0..n) */
        n = 0;
        for (int v = 0; v < V; v++) {
            if (n == opt->topk && !(lp[v] > lp[order[n - 1]])) continue;
            int i = n < opt->topk ? n++ : n - 1;
            while (i > 0 && lp[v] > lp[order[i - 1]]) order[i] = order[i - 1], i--;
            order[i] = v;
        }
    } else {
        for (int v = 0; v < V; v++) order[v] = v;
    }
    if (opt->sample == DECODE_TOPP) { /* the nucleus: sorted, cut where the mass reaches P */
        g_sort_lp = lp;
        qsort(order, (size_t)V, sizeof(int), cmp_prob_desc);
        double z = 0, c = 0;
        for (int v = 0; v < V; v++) z += exp(lp[v] - lp[best]);
        for (n = 0; n < V;) {
            c += exp(lp[order[n++]] - lp[best]) / z;
            if (c >= opt->topp) break;
        }
    }
    for (int i = 0; i < n; i++) sum += exp((lp[order[i]] - lp[best]) * inv_t);
    double u = (double)rng_uniform(r) * sum, c = 0;
    for (int i = 0; i < n; i++) {
        c += exp((lp[order[i]] - lp[best]) * inv_t);
        if (u < c) return order[i];
    }
    return order[n - 1]; /* u within rounding of the sum */
}

/* One token a step chosen on the host (decode_pick_token) from the models' mean log-probabilities:
 * greedy decoding of an ensemble, and sampling. Row b draws from rng_seed(opt->seed,
 * row_keys[b]) (row_keys NULL: b). scores [B] (NULL: not wanted) get Σ log p of the chosen
 * tokens, EOS included. Arguments otherwise as decode_greedy's. */
static void decode_host(Model *const *models, int nm, const TokenBatch *tb, const DecodeOpts *opt,
                        const uint64_t *row_keys, int max_T, int *out_ids, float *scores,
                        float *attn) {
    int B = tb->B, S = tb->S, V = models[0]->V;
    Ens ens;
    ens_open(&ens, models, nm, B, V);
    int *ids = xmalloc(sizeof(int) * B), *order = xmalloc(sizeof(int) * V);
    float *lp = xmalloc(sizeof(float) * (size_t)B * V);
    float *w = attn ? xmalloc(sizeof(float) * B * S) : NULL;
    char *done = xcalloc(B, 1);
    Rng *rng = xmalloc(sizeof(Rng) * B);
    for (int i = 0; i < B; i++) {
        ids[i] = TOKEN_BOS;
        rng_seed(&rng[i], opt->seed, row_keys ? row_keys[i] : (uint64_t)i);
        if (scores) scores[i] = 0;
    }
    for (int i = 0; i < B * max_T; i++) out_ids[i] = TOKEN_PAD;
    for (int i = 0; i < nm; i++) model_decode_begin(models[i], tb, 1, max_T);
    ens_upload_ids(&ens, ids);
    for (int t = 0; t < max_T; t++) {
        ens_step(&ens, t, lp);
        if (w) models[0]->be->download(w, model_decode_attention(models[0], t),
                                       sizeof(float) * B * S);
        int all = 1;
        for (int i = 0; i < B; i++) {
            if (done[i]) continue; /* its row goes on decoding; its output is ignored */
            const float *row = lp + (size_t)i * V;
            ids[i] = decode_pick_token(row, V, opt, &rng[i], order);
            if (scores) scores[i] += row[ids[i]];
            out_ids[i * max_T + t] = ids[i];
            if (w) memcpy(attn + ((size_t)i * max_T + t) * S, w + (size_t)i * S, sizeof(float) * S);
            if (ids[i] == TOKEN_EOS) done[i] = 1;
            all &= done[i];
        }
        if (all) break;
        ens_upload_ids(&ens, ids);
    }
    ens_close(&ens);
    free(ids), free(order), free(lp), free(w), free(done), free(rng);
}

void decode_force(Model *const *models, int nm, const TokenBatch *tb, const int *tgt,
                  const int *len, int max_T, double *logp) {
    int B = tb->B, V = models[0]->V;
    Ens ens;
    ens_open(&ens, models, nm, B, V);
    int *ids = xmalloc(sizeof(int) * B);
    float *lp = xmalloc(sizeof(float) * (size_t)B * V);
    for (int i = 0; i < B; i++) ids[i] = TOKEN_BOS, logp[i] = 0;
    int T = 0; /* the longest reference: no step after it */
    for (int i = 0; i < B; i++) T = len[i] > T ? len[i] : T;
    for (int i = 0; i < nm; i++) model_decode_begin(models[i], tb, 1, max_T);
    for (int t = 0; t < T; t++) {
        ens_upload_ids(&ens, ids);
        ens_step(&ens, t, lp);
        for (int i = 0; i < B; i++) {
            if (t >= len[i]) continue; /* its row goes on; its output is ignored */
            int y = tgt[(size_t)i * max_T + t];
            logp[i] += lp[(size_t)i * V + y];
            ids[i] = y; /* the reference is the next step's input */
        }
    }
    ens_close(&ens);
    free(ids), free(lp);
}

void decode_search(Model *const *models, int nm, const TokenBatch *tb, const DecodeOpts *opt,
                   const uint64_t *row_keys, int max_T, int *out_ids, float *scores,
                   float *attn) {
    int nbest = opt->nbest > 1 ? opt->nbest : 1;
    if (opt->sample != DECODE_SEARCH || (nm > 1 && opt->beam <= 1 && nbest == 1))
        decode_host(models, nm, tb, opt, row_keys, max_T, out_ids, scores, attn);
    else if (opt->beam <= 1 && nbest == 1 && !scores)
        decode_greedy(models[0], tb, max_T, out_ids, attn);
    else
        beam_search(models, nm, tb, opt->beam, opt->len_penalty, nbest, max_T, out_ids, scores,
                    attn);
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
