/* test_sampler.c — the token choice of decoding (eval/decode.h decode_pick_token) on known
 * distributions, without a model.
 *
 * The distribution p = (0.05, 0.5, 0.15, 0.3) over 4 tokens (log-probabilities):
 *   - DECODE_SEARCH picks token 1 (the maximum);
 *   - top-p (Holtzman et al. 2020) with P = 1e-6 always picks token 1 (greedy), with P = 0.7
 *     only tokens 1 and 3 (the nucleus 0.5 + 0.3), in the proportion 0.5 : 0.3 (= 0.625, within
 *     0.02 over 20000 draws), with P = 0.9 tokens 1, 3 and 2 but never 0, with P = 1 every token
 *     (token 0 near 0.05);
 *   - ties: of (0.4, 0.4, 0.2) with P = 0.3 the nucleus is the lower id alone (token 0);
 *   - top-k with K = 2 stays within {1, 3}, as top-p 0.7 does;
 *   - a draw depends only on the generator's seed: the same seed, the same token.
 */
#include <math.h>
#include <stdio.h>

#include "eval/decode.h"
#include "testutil.h"

#define DRAWS 20000

/* Counts of the tokens drawn from lp [V] (V <= 8) under opt, each draw with its own generator
 * seeded (42, i), into count[0..V). */
static void draw(const float *lp, int V, const DecodeOpts *opt, long *count) {
    int order[8];
    for (int v = 0; v < V; v++) count[v] = 0;
    for (int i = 0; i < DRAWS; i++) {
        Rng r;
        rng_seed(&r, 42, (uint64_t)i);
        count[decode_pick_token(lp, V, opt, &r, order)]++;
    }
}

int main(void) {
    const float p[4] = {0.05f, 0.5f, 0.15f, 0.3f};
    float lp[4];
    for (int v = 0; v < 4; v++) lp[v] = logf(p[v]);
    long c[4];
    int order[8];
    Rng r;
    rng_seed(&r, 1, 0);
    DecodeOpts greedy = {.beam = 1};
    EXPECT(decode_pick_token(lp, 4, &greedy, &r, order) == 1, "greedy: token 1 expected");

    DecodeOpts o = {.beam = 1, .sample = DECODE_TOPP, .topp = 1e-6f};
    draw(lp, 4, &o, c);
    EXPECT(c[1] == DRAWS, "topp:1e-6 should always pick the most probable token (%ld of %d)",
           c[1], DRAWS);

    o.topp = 0.7f;
    draw(lp, 4, &o, c);
    EXPECT(c[0] == 0 && c[2] == 0, "topp:0.7: tokens 0 and 2 are outside the nucleus {1, 3}, "
           "drawn %ld and %ld times", c[0], c[2]);
    double share = (double)c[1] / DRAWS;
    EXPECT(fabs(share - 0.625) < 0.02, "topp:0.7: token 1 should take 0.5/0.8 = 0.625 of the "
           "draws, took %.4f", share);

    o.topp = 0.9f;
    draw(lp, 4, &o, c);
    EXPECT(c[0] == 0 && c[1] > 0 && c[2] > 0 && c[3] > 0,
           "topp:0.9: the nucleus is {1, 3, 2}; counts %ld %ld %ld %ld", c[0], c[1], c[2], c[3]);

    o.topp = 1.0f;
    draw(lp, 4, &o, c);
    share = (double)c[0] / DRAWS;
    EXPECT(fabs(share - 0.05) < 0.01, "topp:1: every token; token 0 took %.4f of the draws "
           "(0.05 expected)", share);

    const float q[3] = {logf(0.4f), logf(0.4f), logf(0.2f)};
    o.topp = 0.3f;
    draw(q, 3, &o, c);
    EXPECT(c[0] == DRAWS, "topp:0.3 of (0.4, 0.4, 0.2): the nucleus is token 0 alone (the lower "
           "id of equals); counts %ld %ld %ld", c[0], c[1], c[2]);

    DecodeOpts k = {.beam = 1, .sample = DECODE_TOPK, .topk = 2};
    draw(lp, 4, &k, c);
    EXPECT(c[0] == 0 && c[2] == 0 && c[1] > 0 && c[3] > 0, "topk:2 should stay within {1, 3}");

    o.topp = 0.9f;
    int same = 1;
    for (int i = 0; i < 100; i++) {
        Rng a, b;
        rng_seed(&a, 9, (uint64_t)i), rng_seed(&b, 9, (uint64_t)i);
        same &= decode_pick_token(lp, 4, &o, &a, order) == decode_pick_token(lp, 4, &o, &b, order);
    }
    EXPECT(same, "the same seed should draw the same token");
    return test_report("test_sampler");
}
