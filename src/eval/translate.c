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
    if (sampling && !(opt->sample == DECODE_TOPK   ? opt->topk >= 1
                      : opt->sample == DECODE_TOPP ? opt->topp > 0.0f && opt->topp <= 1.0f
                                                   : opt->temperature > 0.0f))
        return err_set(err, "--sample: topk:K needs K >= 1, topp:P needs 0 < P <= 1, temp:T "
                       "needs T > 0");
    if (opt->batch_tokens < 0 || opt->batch_size < 0)
        return err_set(err, "--batch-tokens %d, --batch-size %d: give whole numbers >= 1",
                       opt->batch_tokens, opt->batch_size);
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
        int lim = model_max_source_len(m); /* linformer: model.linformer_max_len */
        if (lim && k > lim && opt->crop_long) {
            k = lim;
            if (opt->cropped) (*opt->cropped)++;
        } else if (model_check_source_len(m, k, err)) {
            free(t);
            err_prefix(err, "input line %ld", opt->first_line + i + 1);
            str_appendf(err->msg, sizeof err->msg, "; or give --crop-long to cut it to %d",
                        lim);
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
    long budget = opt->batch_tokens > 0 ? opt->batch_tokens : TRANSLATE_BATCH_TOKENS;
    while (k < n) {
        long first = k;
        int maxT = 0, S = 0;
        while (k < n) {
            int s = (int)(e.src_off[order[k] + 1] - e.src_off[order[k]]);
            int T = 2 * s + 10;
            if (k > first && ((k - first + 1) * (long)T * K > budget ||
                              (opt->batch_size > 0 && k - first >= opt->batch_size)))
                break;
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

/* Sorts indices by their target length (then index): score_ensemble's groups. */
static const int64_t *g_off;
static int cmp_off_len(const void *a, const void *b) {
    long i = *(const long *)a, j = *(const long *)b;
    long li = g_off[i + 1] - g_off[i], lj = g_off[j + 1] - g_off[j];
    return li != lj ? (li < lj ? -1 : 1) : (i > j) - (i < j);
}

/* Appends ids[0..k) to the growing array *a (capacity *cap, used *used). */
static void append_ids(int32_t **a, long *cap, long *used, const int *ids, int k) {
    if (*used + k > *cap) {
        while (*used + k > *cap) *cap *= 2;
        *a = xrealloc(*a, sizeof(int32_t) * *cap);
    }
    memcpy(*a + *used, ids, sizeof(int) * k);
    *used += k;
}

Status score_ensemble(Model *const *models, int nm, const Spm *spm, const char *const *src,
                      const char *const *ref, long n, const DecodeOpts *opt, double *logp,
                      long *ntok, Err *err) {
    Model *m = models[0];
    for (int i = 1; i < nm; i++)
        if (models[i]->V != m->V || models[i]->be != m->be)
            return err_set(err, "ensemble: model %d has %d pieces on %s, model 1 %d on %s; "
                           "ensembles take models of one SentencePiece model on one device",
                           i + 1, models[i]->V, models[i]->be->name, m->V, m->be->name);
    if (opt->batch_tokens < 0 || opt->batch_size < 0)
        return err_set(err, "--batch-tokens %d, --batch-size %d: give whole numbers >= 1",
                       opt->batch_tokens, opt->batch_size);
    Status rc = STATUS_ERR;
    Encoded e = {0}; /* the sources (no targets: a decoding batch) */
    TokenBatch tb = {0};
    long *order = xmalloc(sizeof(long) * (n ? n : 1)), ng = 0, *gstart = NULL;
    long scap = 1024, sused = 0, tcap = 1024, tused = 0;
    int32_t *tgt_ids = xmalloc(sizeof(int32_t) * tcap);
    int64_t *tgt_off = xmalloc(sizeof(int64_t) * (n + 1));
    int *tgt = NULL, *len = NULL;
    double *lp = NULL;
    BatchBounds *gb = NULL;
    int lim = model_max_source_len(m);
    e.n = n;
    e.src_ids = xmalloc(sizeof(int32_t) * scap);
    e.src_off = xmalloc(sizeof(int64_t) * (n + 1));
    e.src_off[0] = tgt_off[0] = 0;
    for (long i = 0; i < n; i++) {
        int *t = NULL, k = 0;
        long line = opt->first_line + i + 1;
        if (spm_encode(spm, src[i], &t, &k, err)) {
            err_prefix(err, "input line %ld, source", line);
            goto cleanup;
        }
        if (k == 0) {
            free(t);
            err_set(err, "input line %ld: the source is empty; a model reads no empty source, "
                    "so the pair has no score: remove it", line);
            goto cleanup;
        }
        if (lim && k > lim && opt->crop_long) {
            k = lim;
            if (opt->cropped) (*opt->cropped)++;
        } else if (model_check_source_len(m, k, err)) {
            free(t);
            err_prefix(err, "input line %ld", line);
            str_appendf(err->msg, sizeof err->msg, "; or give --crop-long to cut it to %d", lim);
            goto cleanup;
        }
        append_ids(&e.src_ids, &scap, &sused, t, k);
        free(t);
        e.src_off[i + 1] = sused;
        if (spm_encode(spm, ref[i], &t, &k, err)) {
            err_prefix(err, "input line %ld, reference", line);
            goto cleanup;
        }
        append_ids(&tgt_ids, &tcap, &tused, t, k);
        free(t);
        tgt_off[i + 1] = tused;
        order[i] = i;
    }
    g_off = e.src_off;
    qsort(order, n, sizeof(long), cmp_off_len);
    gstart = xmalloc(sizeof(long) * (n + 1));
    gb = xmalloc(sizeof(BatchBounds) * (n + 1));
    BatchBounds bounds = {1, 1, 1, 1, 1};
    long budget = opt->batch_tokens > 0 ? opt->batch_tokens : TRANSLATE_BATCH_TOKENS;
    for (long k = 0; k < n;) { /* groups within the budget of padded target tokens */
        long first = k;
        int maxT = 0, S = 0;
        while (k < n) {
            int s = (int)(e.src_off[order[k] + 1] - e.src_off[order[k]]);
            int T = (int)(tgt_off[order[k] + 1] - tgt_off[order[k]]) + 1;
            if (T < maxT) T = maxT;
            if (k > first && ((k - first + 1) * (long)T > budget ||
                              (opt->batch_size > 0 && k - first >= opt->batch_size)))
                break;
            maxT = T, S = s > S ? s : S, k++;
        }
        int B = (int)(k - first);
        gstart[ng] = first;
        gb[ng] = (BatchBounds){B, S, maxT, (long)B * S, (long)B * maxT};
        bounds_grow(&bounds, gb[ng++]);
    }
    gstart[ng] = n;
    batch_alloc(&tb, bounds.B, bounds.S, 1, bounds.NS, bounds.B);
    for (int i = 0; i < nm; i++) model_reserve_decode(models[i], 1, gb, ng);
    tgt = xmalloc(sizeof(int) * bounds.NT);
    len = xmalloc(sizeof(int) * bounds.B);
    lp = xmalloc(sizeof(double) * bounds.B);
    for (long g = 0; g < ng; g++) {
        long first = gstart[g];
        int B = gb[g].B, T = gb[g].T;
        batch_fill(&tb, &e, order + first, B);
        for (int b = 0; b < B; b++) { /* y_1 .. y_n EOS */
            long li = order[first + b];
            int k = (int)(tgt_off[li + 1] - tgt_off[li]);
            memcpy(tgt + (size_t)b * T, tgt_ids + tgt_off[li], sizeof(int) * k);
            tgt[(size_t)b * T + k] = TOKEN_EOS;
            len[b] = k + 1;
        }
        decode_force(models, nm, &tb, tgt, len, T, lp);
        for (int b = 0; b < B; b++) {
            logp[order[first + b]] = lp[b];
            if (ntok) ntok[order[first + b]] = len[b];
        }
    }
    rc = STATUS_OK;
cleanup:
    free(tgt), free(len), free(lp), free(gstart), free(gb), free(order);
    free(tgt_ids), free(tgt_off), free(e.src_ids), free(e.src_off);
    batch_free(&tb);
    return rc;
}

/* The word of each of the n pieces p[0..n) into w[0..n) (-1: none) and the number of words:
 * a word starts at a character other than U+2581 (SentencePiece's word mark, "▁") that follows
 * a mark or the start; a piece belongs to the word of its first such character. unk_is_word:
 * "<unk>" stands for " ⁇ " (its detokenised form), a word of its own. */
static int piece_words(char *const *p, int n, int unk_is_word, int *w) {
    int words = 0, in_word = 0;
    for (int i = 0; i < n; i++) {
        w[i] = -1;
        if (unk_is_word && !strcmp(p[i], "<unk>")) {
            w[i] = words++, in_word = 0;
            continue;
        }
        for (const char *c = p[i]; *c;) {
            if (!strncmp(c, "\xE2\x96\x81", 3) || *c == ' ') {
                in_word = 0;
                c += *c == ' ' ? 1 : 3;
                continue;
            }
            if (!in_word) words++, in_word = 1;
            if (w[i] < 0) w[i] = words - 1;
            c++;
        }
    }
    return words;
}

char *attn_map_alignment(const AttnMap *a) {
    int S = a->S, T = a->T;
    int *ws = xmalloc(sizeof(int) * (S ? S : 1)), *wt = xmalloc(sizeof(int) * (T ? T : 1));
    int Tw = T && !strcmp(a->tgt[T - 1], "</s>") ? T - 1 : T; /* the EOS row: no word */
    int ns = piece_words(a->src, S, 0, ws), nt = piece_words(a->tgt, Tw, 1, wt);
    if (Tw < T) wt[T - 1] = -1;
    double *sum = xmalloc(sizeof(double) * (ns ? ns : 1));
    size_t cap = 16 + (size_t)nt * 24, used = 0;
    char *out = xmalloc(cap);
    out[0] = '\0';
    for (int j = 0; ns && j < nt; j++) {
        for (int i = 0; i < ns; i++) sum[i] = 0;
        for (int t = 0; t < T; t++)
            if (wt[t] == j)
                for (int s = 0; s < S; s++)
                    if (ws[s] >= 0) sum[ws[s]] += a->w[(size_t)t * S + s];
        int best = 0;
        for (int i = 1; i < ns; i++)
            if (sum[i] > sum[best]) best = i;
        used += (size_t)snprintf(out + used, cap - used, "%s%d-%d", used ? " " : "", best, j);
    }
    free(ws), free(wt), free(sum);
    return out;
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
