/* batch.c — the training filter, the epoch plan (shuffle, bucket by length, cut by token budget)
 * and the one batch layout: batch-major TokenBatch host arrays allocated once and filled per
 * batch (batch.h, core/tokens.h). */
#include "data/batch.h"

#include <string.h>

static int src_len_of(const Encoded *e, long i) { return (int)(e->src_off[i + 1] - e->src_off[i]); }
static int tgt_len_of(const Encoded *e, long i) {
    return e->tgt_off ? (int)(e->tgt_off[i + 1] - e->tgt_off[i]) : 0;
}

long batch_filter(const Encoded *e, int max_len, long **keep) {
    long n = 0;
    *keep = xmalloc(sizeof(long) * (e->n ? e->n : 1));
    for (long i = 0; i < e->n; i++) {
        int s = src_len_of(e, i), t = tgt_len_of(e, i);
        if (s >= 1 && s <= max_len && t >= 1 && t <= max_len) (*keep)[n++] = i;
    }
    return n;
}

static const Encoded *sort_e;
static int cmp_len(const void *a, const void *b) {
    long i = *(const long *)a, j = *(const long *)b;
    int d = src_len_of(sort_e, i) - src_len_of(sort_e, j);
    if (!d) d = tgt_len_of(sort_e, i) - tgt_len_of(sort_e, j);
    return d;
}

/* qsort is not stable: sort (len, position) pairs by packing position as the final key. */
typedef struct { long i; long pos; } Item;
static int cmp_item(const void *a, const void *b) {
    const Item *x = a, *y = b;
    int d = cmp_len(&x->i, &y->i);
    if (d) return d;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

Status batch_plan(BatchPlan *p, const Encoded *e, const long *keep, long nkeep, int batch_tokens,
                  Rng *rng, Err *err) {
    memset(p, 0, sizeof *p);
    Item *items = xmalloc(sizeof(Item) * (nkeep ? nkeep : 1));
    for (long k = 0; k < nkeep; k++) items[k].i = keep[k];
    if (rng) /* Fisher–Yates */
        for (long k = nkeep - 1; k > 0; k--) {
            long j = (long)rng_below(rng, (uint32_t)(k + 1));
            Item t = items[k]; items[k] = items[j]; items[j] = t;
        }
    for (long k = 0; k < nkeep; k++) items[k].pos = k;
    sort_e = e;
    qsort(items, nkeep, sizeof(Item), cmp_item);
    p->idx = xmalloc(sizeof(long) * (nkeep ? nkeep : 1));
    p->start = xmalloc(sizeof(long) * (nkeep + 1));
    long nb = 0, k = 0;
    while (k < nkeep) {
        long first = k;
        int S = 0, T = 0;
        while (k < nkeep) {
            int s = src_len_of(e, items[k].i), t = tgt_len_of(e, items[k].i) + 1;
            int S2 = s > S ? s : S, T2 = t > T ? t : T;
            if ((long)(k - first + 1) * (S2 + T2) > batch_tokens) break;
            S = S2, T = T2, k++;
        }
        if (k == first) {
            int s = src_len_of(e, items[k].i), t = tgt_len_of(e, items[k].i) + 1;
            free(items);
            batch_plan_free(p);
            return err_set(err, "train.batch_tokens = %d is too small for a pair of %d + %d "
                           "tokens; raise train.batch_tokens or lower data.max_len", batch_tokens,
                           s, t);
        }
        p->start[nb++] = first;
    }
    p->start[nb] = nkeep;
    p->nbatches = nb;
    /* shuffle the batch order: permute batch ranges */
    long *order = xmalloc(sizeof(long) * (nb ? nb : 1));
    for (long b = 0; b < nb; b++) order[b] = b;
    if (rng)
        for (long b = nb - 1; b > 0; b--) {
            long j = (long)rng_below(rng, (uint32_t)(b + 1));
            long t = order[b]; order[b] = order[j]; order[j] = t;
        }
    long *start2 = xmalloc(sizeof(long) * (nb + 1));
    long w = 0;
    for (long b = 0; b < nb; b++) {
        start2[b] = w;
        for (long q = p->start[order[b]]; q < p->start[order[b] + 1]; q++) p->idx[w++] = items[q].i;
    }
    start2[nb] = w;
    free(p->start);
    p->start = start2;
    free(order);
    free(items);
    return STATUS_OK;
}

/* The boundary of shard k (0..world): the sentence position nearest to k·total/world target
 * tokens (no allocation: the training step allocates nothing, docs/design.md §6). */
static int shard_cut(const Encoded *e, const long *idx, int B, long total, int k, int world) {
    long target = (long)k * total, c = 0, prev = 0; /* in units of tokens · world */
    int j = 0;
    while (j < B && c * world < target) {
        prev = c;
        c += tgt_len_of(e, idx[j]) + 1;
        j++;
    }
    if (j > 0 && target - prev * world <= c * world - target) j--;
    return j;
}

long batch_shard(const Encoded *e, const long *idx, int B, int rank, int world, int *lo, int *hi) {
    long total = 0;
    for (int b = 0; b < B; b++) total += tgt_len_of(e, idx[b]) + 1;
    *lo = rank == 0 ? 0 : shard_cut(e, idx, B, total, rank, world);
    *hi = rank + 1 >= world ? B : shard_cut(e, idx, B, total, rank + 1, world);
    return total;
}

BatchBounds batch_plan_bounds(const BatchPlan *p, const Encoded *e) {
    BatchBounds c = {1, 1, 1, 1, 1};
    for (long b = 0; b < p->nbatches; b++) {
        int B = (int)(p->start[b + 1] - p->start[b]), S = 1, T = 1;
        for (long k = p->start[b]; k < p->start[b + 1]; k++) {
            int s = src_len_of(e, p->idx[k]), t = e->tgt_off ? tgt_len_of(e, p->idx[k]) + 1 : 1;
            S = s > S ? s : S, T = t > T ? t : T;
        }
        bounds_grow(&c, (BatchBounds){B, S, T, (long)B * S, (long)B * T});
    }
    return c;
}

void batch_plan_free(BatchPlan *p) {
    free(p->idx);
    free(p->start);
    memset(p, 0, sizeof *p);
}

void batch_bounds(int batch_tokens, int max_len, int *B, int *S, int *T) {
    *B = batch_tokens / 3; /* the shortest pair: 1 source token, 1 target token + EOS */
    *S = max_len < batch_tokens - 2 ? max_len : batch_tokens - 2; /* and B·(S + T) fits */
    *T = max_len + 1 < batch_tokens - 1 ? max_len + 1 : batch_tokens - 1;
    if (*S < 1) *S = 1;
    if (*T < 2) *T = 2;
}

void batch_alloc(TokenBatch *tb, int B, int S, int T, long NS, long NT) {
    memset(tb, 0, sizeof *tb);
    tb->cap = (BatchBounds){B, S, T, NS, NT};
    tb->src = xmalloc(sizeof(int) * NS);
    tb->src_mask = xmalloc(sizeof(float) * NS);
    tb->src_len = xmalloc(sizeof(int) * B);
    tb->tgt_in = xmalloc(sizeof(int) * NT);
    tb->tgt_out = xmalloc(sizeof(int) * NT);
    tb->tgt_len = xmalloc(sizeof(int) * B);
    tb->tgt_row = xmalloc(sizeof(int) * NT);
    tb->tgt_row_id = xmalloc(sizeof(int) * NT);
    tb->tgt_row_tm = xmalloc(sizeof(int) * NT);
}

void batch_fill(TokenBatch *tb, const Encoded *e, const long *idx, int B) {
    int S = 1, T = 1;
    for (int b = 0; b < B; b++) {
        int s = src_len_of(e, idx[b]), t = tgt_len_of(e, idx[b]) + 1;
        if (s > S) S = s;
        if (e->tgt_off && t > T) T = t;
    }
    CHECK(bounds_fit(&tb->cap, B, S, T), "batch beyond batch_alloc's capacity");
    tb->B = B, tb->S = S, tb->T = T;
    tb->src_tokens = tb->tgt_tokens = 0;
    for (int b = 0; b < B; b++) {
        long i = idx[b];
        int s = src_len_of(e, i), t = tgt_len_of(e, i);
        const int32_t *sid = e->src_ids + e->src_off[i];
        int *src = tb->src + (size_t)b * S, *tin = tb->tgt_in + (size_t)b * T;
        int *tout = tb->tgt_out + (size_t)b * T;
        float *mask = tb->src_mask + (size_t)b * S;
        tb->src_len[b] = s;
        tb->src_tokens += s;
        for (int k = 0; k < S; k++) {
            src[k] = k < s ? sid[k] : TOKEN_PAD;
            mask[k] = k < s ? 1.0f : 0.0f;
        }
        const int32_t *tid = e->tgt_off ? e->tgt_ids + e->tgt_off[i] : NULL;
        for (int k = 0; k < T; k++) {
            tin[k] = k == 0 ? TOKEN_BOS : (tid && k <= t) ? tid[k - 1] : TOKEN_PAD;
            tout[k] = (tid && k < t) ? tid[k] : (tid && k == t) ? TOKEN_EOS : TOKEN_PAD;
            if (tout[k] != TOKEN_PAD) {
                tb->tgt_row[tb->tgt_tokens] = b * T + k;
                tb->tgt_row_tm[tb->tgt_tokens] = k * B + b;
                tb->tgt_row_id[tb->tgt_tokens++] = tout[k];
            }
        }
        tb->tgt_len[b] = tid ? t + 1 : 1;
    }
}

void batch_free(TokenBatch *tb) {
    free(tb->src);
    free(tb->src_mask);
    free(tb->src_len);
    free(tb->tgt_in);
    free(tb->tgt_out);
    free(tb->tgt_len);
    free(tb->tgt_row);
    free(tb->tgt_row_id);
    free(tb->tgt_row_tm);
    memset(tb, 0, sizeof *tb);
}
