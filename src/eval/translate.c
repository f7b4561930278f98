/* translate.c — translate_lines (encode, batch by source length, decode, detokenise, attention
 * maps) and eval_perplexity (teacher-forced, no label smoothing) on a model the CLI loaded
 * (translate.h). */
#include "eval/translate.h"

#include <math.h>
#include <string.h>

#include "data/batch.h"

static const Encoded *g_e;
static int cmp_src_len(const void *a, const void *b) {
    long i = *(const long *)a, j = *(const long *)b;
    long li = g_e->src_off[i + 1] - g_e->src_off[i], lj = g_e->src_off[j + 1] - g_e->src_off[j];
    return li != lj ? (li < lj ? -1 : 1) : (i > j) - (i < j);
}

/* The pieces of ids[0..n) as malloc'd strings. */
static char **pieces(const Spm *spm, const int *ids, int n) {
    char **p = xmalloc(sizeof(char *) * (n ? n : 1));
    for (int i = 0; i < n; i++) p[i] = xstrdup(spm_piece(spm, ids[i]));
    return p;
}

void attn_map_free(AttnMap *a) {
    if (!a) return;
    for (int i = 0; a->src && i < a->S; i++) free(a->src[i]);
    for (int i = 0; a->tgt && i < a->T; i++) free(a->tgt[i]);
    free(a->src), free(a->tgt), free(a->w);
    memset(a, 0, sizeof *a);
}

Status translate_lines(Model *m, const Spm *spm, const char *const *lines, long n,
                       const DecodeOpts *opt, char ***out, AttnMap *maps, Err *err) {
    DecodeOpts one = *opt;
    one.nbest = 1;
    return translate_ensemble(&m, 1, spm, lines, n, &one, out, NULL, maps, err);
}

Status translate_ensemble(Model *const *models, int nm, const Spm *spm, const char *const *lines,
                          long n, const DecodeOpts *opt, char ***out, float *scores,
                          AttnMap *maps, Err *err) {
    Model *m = models[0];
    int nbest = opt->nbest > 1 ? opt->nbest : 1, sampling = opt->sample != DECODE_SEARCH;
    if (opt->beam < 1 || opt->beam > 64)
        return err_set(err, "--beam %d: the beam size must be between 1 and 64", opt->beam);
    if (!(opt->len_penalty >= 0.0f))
        return err_set(err, "--len-penalty %g: the length penalty α must be >= 0",
                       (double)opt->len_penalty);
    if (nbest > opt->beam)
        return err_set(err, "--nbest %d: beam search keeps --beam %d hypotheses; give --beam %d "
                       "or more", nbest, opt->beam, nbest);
    if (sampling && (opt->beam > 1 || nbest > 1))
        return err_set(err, "--sample draws one translation per sentence; it takes neither "
                       "--beam nor --nbest");
    if (sampling && !(opt->sample == DECODE_TOPK ? opt->topk >= 1 : opt->temperature > 0.0f))
        return err_set(err, "--sample: topk:K needs K >= 1, temp:T needs T > 0");
    for (int i = 1; i < nm; i++)
        if (models[i]->V != m->V || models[i]->be != m->be)
            return err_set(err, "ensemble: model %d has %d pieces on %s, model 1 %d on %s; "
                           "ensembles take models of one SentencePiece model on one device",
                           i + 1, models[i]->V, models[i]->be->name, m->V, m->be->name);
    if (maps && !model_has_attention(m))
        return err_set(err, "this model has no attention to draw (model.attention = none, or a "
                       "linformer cross-attention, whose implied weights need its E and F)");
    if (maps) memset(maps, 0, sizeof(AttnMap) * n);
    Status rc = STATUS_ERR;
    Encoded e = {0};
    TokenBatch tb = {0};
    long *order = xmalloc(sizeof(long) * (n ? n : 1));
    int *ids = NULL, K = sampling ? 1 : opt->beam;
    float *attn = NULL, *sc = NULL;
    uint64_t *keys = NULL;
    char **res = xcalloc(n ? (size_t)n * nbest : 1, sizeof(char *));
    e.n = n;
    e.src_off = xmalloc(sizeof(int64_t) * (n + 1));
    long cap = 1024, used = 0, ng = 0, *gstart = NULL;
    BatchBounds *gb = NULL; /* each group's batch (T = its max_T) */
    e.src_ids = xmalloc(sizeof(int32_t) * cap);
    e.src_off[0] = 0;
    for (long i = 0; i < n; i++) {
        int *t = NULL, k = 0;
        if (spm_encode(spm, lines[i], &t, &k, err)) {
            err_prefix(err, "input line %ld", opt->first_line + i + 1);
            goto cleanup;
        }
        if (k > TRANSLATE_MAX_SRC) k = TRANSLATE_MAX_SRC;
        if (model_check_source_len(m, k, err)) { /* linformer: model.linformer_max_len */
            free(t);
            err_prefix(err, "input line %ld", opt->first_line + i + 1);
            goto cleanup;
        }
        if (used + k > cap) {
            while (used + k > cap) cap *= 2;
            e.src_ids = xrealloc(e.src_ids, sizeof(int32_t) * cap);
        }
        memcpy(e.src_ids + used, t, sizeof(int) * k);
        free(t);
        used += k;
        e.src_off[i + 1] = used;
        order[i] = i;
    }
    g_e = &e;
    qsort(order, n, sizeof(long), cmp_src_len);
    long k = 0;
    /* an empty source translates to nothing (its score 0) */
    for (; k < n && e.src_off[order[k] + 1] == e.src_off[order[k]]; k++)
        for (int h = 0; h < nbest; h++) {
            res[order[k] * nbest + h] = xstrdup("");
            if (scores) scores[order[k] * nbest + h] = 0.0f;
        }
    /* sentences sorted by length: each group takes as many as fit the token budget at its
     * longest; the groups are planned first so that the batch and the model are sized once */
    gstart = xmalloc(sizeof(long) * (n - k + 1));
    gb = xmalloc(sizeof(BatchBounds) * (n - k + 1));
    BatchBounds bounds = {1, 1, 1, 1, 1}; /* of the groups' batches (decoding: T = maxT) */
    while (k < n) {
        long first = k;
        int maxT = 0, S = 0;
        while (k < n) {
            int s = (int)(e.src_off[order[k] + 1] - e.src_off[order[k]]);
            int T = 2 * s + 10;
            if ((k - first + 1) * (long)T * K > TRANSLATE_BATCH_TOKENS && k > first) break;
            maxT = T, S = s, k++;
        }
        int B = (int)(k - first);
        gstart[ng] = first;
        gb[ng] = (BatchBounds){B, S, maxT, (long)B * S, (long)B * maxT};
        bounds_grow(&bounds, gb[ng++]);
    }
    gstart[ng] = n;
    batch_alloc(&tb, bounds.B, bounds.S, 1, bounds.NS, bounds.B);
    for (int i = 0; i < nm; i++) model_reserve_decode(models[i], K, gb, ng);
    ids = xmalloc(sizeof(int) * bounds.NT * nbest);
    sc = xmalloc(sizeof(float) * bounds.B * nbest);
    keys = xmalloc(sizeof(uint64_t) * bounds.B);
    if (maps) attn = xmalloc(sizeof(float) * bounds.NT * bounds.S);
    for (long g = 0; g < ng; g++) {
        long first = gstart[g];
        int B = gb[g].B, maxT = gb[g].T;
        batch_fill(&tb, &e, order + first, B);
        for (int b = 0; b < B; b++) /* the input line */
            keys[b] = (uint64_t)(opt->first_line + order[first + b]);
        decode_search(models, nm, &tb, opt, keys, maxT, ids, scores ? sc : NULL,
                      maps ? attn : NULL);
        for (int b = 0; b < B * nbest; b++) {
            long li = order[first + b / nbest];
            const int *y = ids + (size_t)b * maxT;
            int len = 0;
            while (len < maxT && y[len] != TOKEN_EOS && y[len] != TOKEN_PAD) len++;
            if (spm_decode(spm, y, len, &res[li * nbest + b % nbest], err)) goto cleanup;
            if (scores) scores[li * nbest + b % nbest] = sc[b];
            if (!maps || b % nbest) continue; /* the map of the best hypothesis */
            AttnMap *a = &maps[li]; /* rows: the output pieces and EOS; columns: the source */
            int Ts = len + (len < maxT && y[len] == TOKEN_EOS), Ss = (int)(e.src_off[li + 1] - e.src_off[li]);
            a->S = Ss, a->T = Ts;
            a->src = pieces(spm, e.src_ids + e.src_off[li], Ss);
            a->tgt = pieces(spm, y, Ts);
            a->w = xmalloc(sizeof(float) * (Ts ? Ts : 1) * (Ss ? Ss : 1));
            for (int t = 0; t < Ts; t++)
                memcpy(a->w + (size_t)t * Ss, attn + ((size_t)(b / nbest) * maxT + t) * tb.S,
                       sizeof(float) * Ss);
        }
    }
    *out = res;
    res = NULL;
    rc = STATUS_OK;
cleanup:
    if (res) free_lines(res, n * nbest);
    if (rc && maps)
        for (long i = 0; i < n; i++) attn_map_free(&maps[i]);
    free(ids);
    free(sc);
    free(keys);
    free(attn);
    free(gstart);
    free(gb);
    free(order);
    free(e.src_ids);
    free(e.src_off);
    batch_free(&tb);
    return rc;
}

Status eval_perplexity(Model *m, const Encoded *e, double *ppl, long *tokens, Err *err) {
    long *all = xmalloc(sizeof(long) * (e->n ? e->n : 1));
    long nk = 0;
    for (long i = 0; i < e->n; i++)
        if (e->src_off[i + 1] > e->src_off[i]) all[nk++] = i; /* an empty source has nothing to read */
    BatchPlan plan;
    int maxlen = 0;
    for (long i = 0; i < nk; i++) {
        int s = (int)(e->src_off[all[i] + 1] - e->src_off[all[i]]);
        int t = (int)(e->tgt_off[all[i] + 1] - e->tgt_off[all[i]]) + 1;
        if (s > maxlen) maxlen = s;
        if (t > maxlen) maxlen = t;
        if (model_check_source_len(m, s, err)) { /* linformer: model.linformer_max_len */
            long pair = all[i] + 1;
            free(all);
            return err_prefix(err, "pair %ld", pair);
        }
    }
    int budget = EVAL_BATCH_TOKENS > 2 * maxlen ? EVAL_BATCH_TOKENS : 2 * maxlen;
    if (batch_plan(&plan, e, all, nk, budget, NULL, err)) {
        free(all);
        return STATUS_ERR;
    }
    /* sized to this plan's batches: within the training's reserve, a validation reallocates
     * nothing */
    BatchBounds c = batch_plan_bounds(&plan, e);
    TokenBatch tb;
    batch_alloc(&tb, c.B, c.S, c.T, c.NS, c.NT);
    model_reserve(m, c.B, c.S, c.T, c.NS, c.NT);
    double loss = 0;
    long ntok = 0;
    for (long b = 0; b < plan.nbatches; b++) {
        batch_fill(&tb, e, plan.idx + plan.start[b], (int)(plan.start[b + 1] - plan.start[b]));
        loss += model_loss(m, &tb, 0.0f, 0, 0, 0.0f);
        ntok += tb.tgt_tokens;
    }
    *ppl = ntok ? exp(loss / ntok) : 0;
    if (tokens) *tokens = ntok;
    batch_free(&tb);
    batch_plan_free(&plan);
    free(all);
    return STATUS_OK;
}

void free_lines(char **lines, long n) {
    if (!lines) return;
    for (long i = 0; i < n; i++) free(lines[i]);
    free(lines);
}
