#include "eval/translate.h"

#include <math.h>
#include <string.h>

static const Encoded *g_e;
static int cmp_src_len(const void *a, const void *b) {
    long i = *(const long *)a, j = *(const long *)b;
    long li = g_e->src_off[i + 1] - g_e->src_off[i], lj = g_e->src_off[j + 1] - g_e->src_off[j];
    return li != lj ? (li < lj ? -1 : 1) : (i > j) - (i < j);
}

Status translate_lines(Model *m, const char *const *lines, long n, char ***out, Err *err) {
    Status rc = STATUS_ERR;
    Encoded e = {0};
    HostBatch hb = {0};
    long *order = xmalloc(sizeof(long) * (n ? n : 1));
    int *ids = NULL;
    char **res = xcalloc(n ? n : 1, sizeof(char *));
    e.n = n;
    e.src_off = xmalloc(sizeof(int64_t) * (n + 1));
    long cap = 1024, used = 0;
    e.src_ids = xmalloc(sizeof(int32_t) * cap);
    e.src_off[0] = 0;
    for (long i = 0; i < n; i++) {
        int *t = NULL, k = 0;
        if (spm_encode(m->spm, lines[i], &t, &k, err)) {
            err_prefix(err, "input line %ld", i + 1);
            goto cleanup;
        }
        if (k > TRANSLATE_MAX_SRC) k = TRANSLATE_MAX_SRC;
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
    while (k < n && e.src_off[order[k] + 1] == e.src_off[order[k]]) res[order[k++]] = xstrdup("");
    while (k < n) {
        /* sentences sorted by length: take as many as fit the token budget at the longest */
        long first = k;
        int maxT = 0;
        while (k < n) {
            int s = (int)(e.src_off[order[k] + 1] - e.src_off[order[k]]);
            int T = 2 * s + 10;
            if ((k - first + 1) * (long)T > TRANSLATE_BATCH_TOKENS && k > first) break;
            maxT = T, k++;
        }
        int B = (int)(k - first);
        batch_fill(&hb, &e, order + first, B);
        model_reserve(m, B, hb.S, maxT, (long)B * hb.S, (long)B * maxT);
        ids = xrealloc(ids, sizeof(int) * B * maxT);
        model_greedy(m, &hb, maxT, ids, NULL);
        for (int b = 0; b < B; b++) {
            int len = 0;
            while (len < maxT && ids[b * maxT + len] != SPM_EOS_ID && ids[b * maxT + len] != SPM_PAD_ID) len++;
            if (spm_decode(m->spm, ids + b * maxT, len, &res[order[first + b]], err)) goto cleanup;
        }
    }
    *out = res;
    res = NULL;
    rc = STATUS_OK;
cleanup:
    if (res) free_lines(res, n);
    free(ids);
    free(order);
    free(e.src_ids);
    free(e.src_off);
    host_batch_free(&hb);
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
    }
    int budget = 4096 > 2 * maxlen ? 4096 : 2 * maxlen;
    if (batch_plan(&plan, e, all, nk, budget, NULL, err)) {
        free(all);
        return STATUS_ERR;
    }
    HostBatch hb = {0};
    double loss = 0;
    long ntok = 0;
    for (long b = 0; b < plan.nbatches; b++) {
        int B = (int)(plan.start[b + 1] - plan.start[b]);
        batch_fill(&hb, e, plan.idx + plan.start[b], B);
        model_reserve(m, B, hb.S, hb.T, (long)B * hb.S, (long)B * hb.T);
        loss += model_loss(m, &hb, 0.0f, 0, 0, 0.0f);
        ntok += hb.tgt_tokens;
    }
    *ppl = ntok ? exp(loss / ntok) : 0;
    if (tokens) *tokens = ntok;
    host_batch_free(&hb);
    batch_plan_free(&plan);
    free(all);
    return STATUS_OK;
}

void free_lines(char **lines, long n) {
    if (!lines) return;
    for (long i = 0; i < n; i++) free(lines[i]);
    free(lines);
}
