/* core/rng.h — the one seeded PRNG of the program (docs/design.md §9): PCG32 (O'Neill 2014, "PCG: A Family
 * of Simple Fast Space-Efficient Statistically Good Algorithms for Random Number Generation",
 * the XSH-RR 64/32 member). Used for initialisation and shuffling; its state is saved in
 * checkpoints. Dropout uses rng_hash (a counter-based stream keyed by seed and step) so that any
 * backend, the GPU included, draws the same masks without sharing this state.
 * Every function works on host memory and has no errors (no Status, no CHECK). */
#ifndef TRAINER_RNG_H
#define TRAINER_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state;
    uint64_t inc; /* odd */
} Rng;

/* Seeds the generator (seed: any 64-bit value; stream: selects one of 2^63 sequences), as
 * O'Neill's pcg32_srandom_r. */
void rng_seed(Rng *r, uint64_t seed, uint64_t stream);
/* Next uniform 32-bit integer (PCG32 XSH-RR output of the old state, then one LCG step). */
uint32_t rng_u32(Rng *r);
/* Uniform float in [0, 1) with 24 random bits. */
float rng_uniform(Rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias (rejection, as O'Neill's
 * pcg32_boundedrand_r). */
uint32_t rng_below(Rng *r, uint32_t n);
/* Standard normal N(0, 1) (Box & Muller 1958), from two rng_uniform draws. */
float rng_normal(Rng *r);

/* Counter-based hash: a uniform 32-bit value from (key, counter) (SplitMix64 finaliser,
 * Steele et al. 2014). Pure function: the same inputs give the same output on every backend.
 * One definition serves the host and the GPU: under nvcc it is also a __device__ function
 * (RNG_HOST_DEVICE), so the CUDA dropout kernels (the CUDA backend's dropout.cuh) draw the
 * CPU's masks bit for bit. */
#if defined(__CUDACC__)
#define RNG_HOST_DEVICE __host__ __device__
#else
#define RNG_HOST_DEVICE
#endif
static inline RNG_HOST_DEVICE uint32_t rng_hash(uint64_t key, uint64_t counter) {
    uint64_t z = key + 0x9E3779B97F4A7C15ull * (counter + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint32_t)(z >> 32);
}

#endif
