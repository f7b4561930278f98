/* rng.c — PCG32 (O'Neill 2014, XSH-RR 64/32), its bounded and float draws and Box–Muller
 * (rng.h). */
#include "core/rng.h"

#include <math.h>

void rng_seed(Rng *r, uint64_t seed, uint64_t stream) {
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    rng_u32(r);
    r->state += seed;
    rng_u32(r);
}

uint32_t rng_u32(Rng *r) {
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ull + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

float rng_uniform(Rng *r) { return (float)(rng_u32(r) >> 8) * (1.0f / 16777216.0f); }

uint32_t rng_below(Rng *r, uint32_t n) {
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t x = rng_u32(r);
        if (x >= threshold) return x % n;
    }
}

float rng_normal(Rng *r) {
    float u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-12f) u1 = 1e-12f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}
