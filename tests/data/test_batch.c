/* test_batch.c — token-budget batching: every kept pair appears exactly once per epoch, no batch
 * exceeds batch_tokens padded tokens, batches are length-bucketed, the same seed and RNG state
 * give the same batches, another epoch's state gives another order, and batch_fill lays out
 * every field of the batch-major TokenBatch (core/tokens.h) as documented — ids, BOS/EOS/PAD,
 * masks, lengths, the non-padding target rows and the token counts — in the buffers
 * batch_alloc sized once (never moved), also for a batch without targets (decoding). And
 * batch_shard (data parallelism): for 1..5 ranks on every batch, the shards are contiguous, in
 * rank order, cover the batch once, their target tokens (as batch_fill counts them) add up to
 * the returned total, and each is within one sentence of total / ranks (the nearest cut).
 * bounds_max (core/tokens.h): no planned batch asks more of three workspace-like sizes than
 * bounds_max of batch_bounds' bounds gives, and a case worked by hand. */
#include <math.h>
#include <string.h>

#include "data/batch.h"
#include "core/tokens.h"
#include "testutil.h"

/* Workspace-like sizes of a call over b sentences, tq queries and tk keys, for bounds_max. */
static size_t ws_btt(const void *c, int b, int tq, int tk) {
    return (void)c, (size_t)b * tq * tk;
}
static size_t ws_b(const void *c, int b, int tq, int tk) {
    return (void)c, (void)tq, (void)tk, (size_t)b;
}
static size_t ws_tt(const void *c, int b, int tq, int tk) {
    return (void)c, (void)b, (size_t)tq * tk;
}

int main(void) {
    Rng r;
    rng_seed(&r, 3, 3);
    long n = 3000;
    Encoded e = {0};
    e.n = n;
    e.src_off = xmalloc(sizeof(int64_t) * (n + 1));
    e.tgt_off = xmalloc(sizeof(int64_t) * (n + 1));
    e.src_ids = xmalloc(sizeof(int32_t) * n * 60);
    e.tgt_ids = xmalloc(sizeof(int32_t) * n * 60);
    e.src_off[0] = e.tgt_off[0] = 0;
    for (long i = 0; i < n; i++) {
        int s = (int)rng_below(&r, 60), t = 1 + (int)rng_below(&r, 59); /* some empty sources */
        for (int k = 0; k < s; k++) e.src_ids[e.src_off[i] + k] = 4 + (int)rng_below(&r, 100);
        for (int k = 0; k < t; k++) e.tgt_ids[e.tgt_off[i] + k] = 4 + (int)rng_below(&r, 100);
        e.src_off[i + 1] = e.src_off[i] + s;
        e.tgt_off[i + 1] = e.tgt_off[i] + t;
    }
    long *keep;
    int max_len = 50, budget = 800;
    long nk = batch_filter(&e, max_len, &keep);
    long expect = 0;
    for (long i = 0; i < n; i++) {
        long s = e.src_off[i + 1] - e.src_off[i], t = e.tgt_off[i + 1] - e.tgt_off[i];
        expect += s >= 1 && s <= max_len && t >= 1 && t <= max_len;
    }
    EXPECT(nk == expect && nk > 0 && nk < n, "filter kept %ld, expected %ld", nk, expect);

    Rng a, b;
    rng_seed(&a, 42, 7);
    b = a;
    BatchPlan p1, p2, p3;
    Err err;
    EXPECT(batch_plan(&p1, &e, keep, nk, budget, &a, &err) == 0, "%s", err.msg);
    EXPECT(batch_plan(&p2, &e, keep, nk, budget, &b, &err) == 0, "%s", err.msg);
    EXPECT(batch_plan(&p3, &e, keep, nk, budget, &a, &err) == 0, "%s", err.msg); /* next epoch */
    EXPECT(p1.nbatches == p2.nbatches && !memcmp(p1.idx, p2.idx, sizeof(long) * nk),
           "same RNG state must give the same batches");
    EXPECT(memcmp(p1.idx, p3.idx, sizeof(long) * nk) != 0, "the next epoch must differ");

    char *seen = xcalloc(n, 1);
    int over = 0, spread_bad = 0;
    TokenBatch hb;
    int bB, bS, bT;
    batch_bounds(budget, max_len, &bB, &bS, &bT);
    batch_alloc(&hb, bB, bS, bT, budget, budget);
    TokenBatch first = hb; /* the buffers batch_fill must keep using */
    long layout_bad = 0;
    BatchBounds pb = batch_plan_bounds(&p1, &e), seen_b = {1, 1, 1, 1, 1};
    size_t (*const bound_fn[3])(const void *, int, int, int) = {ws_btt, ws_b, ws_tt};
    size_t bound_max[3];
    long beyond_max = 0;
    for (int f = 0; f < 3; f++) bound_max[f] = bounds_max(bound_fn[f], NULL, bB, bT, bS, budget, budget);
    for (long k = 0; k < p1.nbatches; k++) {
        int B = (int)(p1.start[k + 1] - p1.start[k]);
        const long *ix = p1.idx + p1.start[k];
        batch_fill(&hb, &e, ix, B);
        bounds_grow(&seen_b, (BatchBounds){B, hb.S, hb.T, (long)B * hb.S, (long)B * hb.T});
        if ((long)B * (hb.S + hb.T) > budget) over++;
        for (int f = 0; f < 3; f++) /* every batch within bounds_max of the reserve's bounds */
            if (bound_fn[f](NULL, B, hb.T, hb.S) > bound_max[f]) beyond_max++;
        EXPECT(B <= bB && hb.S <= bS && hb.T <= bT, "batch %ld beyond batch_bounds", k);
        EXPECT(hb.src == first.src && hb.tgt_row_id == first.tgt_row_id,
               "batch_fill moved the buffers");
        int mn = 1 << 30, mx = 0;
        for (int q = 0; q < B; q++) {
            seen[ix[q]]++;
            int s = (int)(e.src_off[ix[q] + 1] - e.src_off[ix[q]]);
            mn = s < mn ? s : mn, mx = s > mx ? s : mx;
        }
        if (mx - mn > 2) spread_bad++; /* sorted by source length: neighbours are close */
        /* layout, batch-major: sentence q's row is contiguous */
        long src_tok = 0, nr = 0;
        for (int q = 0; q < B; q++) {
            long i = ix[q];
            int s = (int)(e.src_off[i + 1] - e.src_off[i]), t = (int)(e.tgt_off[i + 1] - e.tgt_off[i]);
            const int32_t *x = e.src_ids + e.src_off[i], *y = e.tgt_ids + e.tgt_off[i];
            const int *src = hb.src + (size_t)q * hb.S, *tin = hb.tgt_in + (size_t)q * hb.T;
            const int *tout = hb.tgt_out + (size_t)q * hb.T;
            const float *mask = hb.src_mask + (size_t)q * hb.S;
            layout_bad += hb.src_len[q] != s || hb.tgt_len[q] != t + 1;
            for (int j = 0; j < hb.S; j++)
                layout_bad += src[j] != (j < s ? x[j] : TOKEN_PAD) || mask[j] != (j < s ? 1.0f : 0.0f);
            for (int j = 0; j < hb.T; j++) {
                int in = j == 0 ? TOKEN_BOS : j <= t ? y[j - 1] : TOKEN_PAD;
                int out = j < t ? y[j] : j == t ? TOKEN_EOS : TOKEN_PAD;
                layout_bad += tin[j] != in || tout[j] != out;
                if (out == TOKEN_PAD) continue;
                layout_bad += nr >= hb.tgt_tokens || hb.tgt_row[nr] != q * hb.T + j ||
                              hb.tgt_row_tm[nr] != j * hb.B + q || hb.tgt_row_id[nr] != out;
                nr++;
            }
            src_tok += s;
        }
        layout_bad += nr != hb.tgt_tokens || src_tok != hb.src_tokens;
    }
    EXPECT(layout_bad == 0, "%ld fields differ from the documented layout", layout_bad);
    /* batch_plan_bounds: exactly the largest of what batch_fill made, bound by bound */
    EXPECT(pb.B == seen_b.B && pb.S == seen_b.S && pb.T == seen_b.T && pb.NS == seen_b.NS &&
               pb.NT == seen_b.NT,
           "batch_plan_bounds B %d S %d T %d NS %ld NT %ld, the batches' B %d S %d T %d NS %ld "
           "NT %ld", pb.B, pb.S, pb.T, pb.NS, pb.NT, seen_b.B, seen_b.S, seen_b.T, seen_b.NS,
           seen_b.NT);
    EXPECT(pb.NS < (long)pb.B * pb.S && pb.NT < (long)pb.B * pb.T,
           "the plan's token bounds should be below B·S and B·T (length-sorted batches)");

    /* a batch without targets (decoding): T = 1, BOS in, PAD out, no target rows */
    Encoded src_only = e;
    src_only.tgt_off = NULL, src_only.tgt_ids = NULL;
    batch_fill(&hb, &src_only, p1.idx, (int)(p1.start[1] - p1.start[0]));
    int ok = hb.T == 1 && hb.tgt_tokens == 0;
    for (int q = 0; q < hb.B; q++)
        ok &= hb.tgt_in[q] == TOKEN_BOS && hb.tgt_out[q] == TOKEN_PAD && hb.tgt_len[q] == 1;
    EXPECT(ok, "a batch without targets: T %d, %ld target rows", hb.T, hb.tgt_tokens);
    long dup = 0, missing = 0;
    for (long k = 0; k < nk; k++) missing += seen[keep[k]] == 0, dup += seen[keep[k]] > 1;
    EXPECT(missing == 0 && dup == 0, "%ld kept pairs missing, %ld repeated", missing, dup);
    EXPECT(over == 0, "%d batches exceed %d tokens", over, budget);
    EXPECT(beyond_max == 0, "%ld batch sizes beyond bounds_max of batch_bounds' bounds", beyond_max);
    /* by hand: b·tq·tk with at most 10 sentences of 5 positions and 20 tokens a side is largest
     * at b = 4 (4·5·5 = 100; b = 5 gives 5·4·4 = 80); b alone at b = 10 (tq = tk = 2) */
    EXPECT(bounds_max(ws_btt, NULL, 10, 5, 5, 20, 20) == 100 &&
               bounds_max(ws_b, NULL, 10, 5, 5, 20, 20) == 10 &&
               bounds_max(ws_tt, NULL, 10, 5, 5, 20, 20) == 25,
           "bounds_max: %zu %zu %zu, not 100 10 25", bounds_max(ws_btt, NULL, 10, 5, 5, 20, 20),
           bounds_max(ws_b, NULL, 10, 5, 5, 20, 20), bounds_max(ws_tt, NULL, 10, 5, 5, 20, 20));
    EXPECT(spread_bad == 0, "%d batches mix source lengths more than 2 apart", spread_bad);
    printf("%ld pairs kept of %ld, %ld batches of <= %d tokens\n", nk, n, p1.nbatches, budget);

    /* batch_shard */
    long shard_bad = 0;
    for (int world = 1; world <= 5; world++)
        for (long b = 0; b < p1.nbatches; b++) {
            const long *idx = p1.idx + p1.start[b];
            int nb = (int)(p1.start[b + 1] - p1.start[b]), prev_hi = 0, maxlen = 0;
            long sum = 0, total = -1;
            for (int q = 0; q < nb; q++) {
                int t = (int)(e.tgt_off[idx[q] + 1] - e.tgt_off[idx[q]]) + 1;
                if (t > maxlen) maxlen = t;
            }
            for (int rank = 0; rank < world; rank++) {
                int lo, hi;
                long tot = batch_shard(&e, idx, nb, rank, world, &lo, &hi);
                if (total < 0) total = tot;
                shard_bad += tot != total || lo != prev_hi || hi < lo || hi > nb;
                prev_hi = hi;
                batch_fill(&hb, &e, idx + lo, hi - lo);
                sum += hb.tgt_tokens;
                /* the cut nearest to k·total/world: a shard is off by less than one sentence at
                 * each of its two ends */
                double share = (double)total / world;
                shard_bad += fabs((double)hb.tgt_tokens - share) > 2.0 * maxlen;
            }
            shard_bad += prev_hi != nb || sum != total;
        }
    EXPECT(shard_bad == 0, "batch_shard: %ld violations of the shard rule", shard_bad);
    int lo, hi; /* fewer sentences than ranks: empty shards, the batch still covered once */
    batch_shard(&e, p1.idx, 2, 4, 5, &lo, &hi);
    EXPECT(lo == 2 && hi == 2, "the last of 5 ranks on a 2-sentence batch: [%d, %d)", lo, hi);

    BatchPlan bad;
    EXPECT(batch_plan(&bad, &e, keep, nk, 20, &a, &err) != 0 && strstr(err.msg, "batch_tokens"),
           "a budget smaller than one pair must be refused with a message: %s", err.msg);
    batch_plan_free(&p1);
    batch_plan_free(&p2);
    batch_plan_free(&p3);
    batch_free(&hb);
    free(seen);
    free(keep);
    encoded_free(&e);
    return test_report("test_batch");
}
