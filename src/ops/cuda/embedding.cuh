/* ops/cuda/embedding.cuh — kernels of the embedding lookup and its backward (Vaswani et al.
 * 2017 §3.4; semantics: ops/ops.h). Written against ops/cuda/kernel_api.h. Host side:
 * embedding.cu. Shapes: N tokens, E embedding width, V vocabulary rows of the table.
 *
 * Backward without float atomics, deterministic: the table rows are split into G groups by id
 * (group g owns every row v with v mod G = g; G a power of two from EMB_TY to EMB_GROUPS, about
 * N / 8: embedding.cu's emb_groups) and the columns into tiles of EMB_TX. The warp of (column
 * tile, group g) walks the tokens n = 0, 1, ..., N-1 IN ORDER, 32 at a time: a ballot marks
 * those whose id is in its group, and for each marked token, in ascending n, lane x adds
 * dout[n, c] to dtable[ids[n], c] for its column c. Every float of dtable thus has exactly one
 * writer, which adds that row's tokens in ascending n — the CPU's sequential sum, bit for bit,
 * under every thread and block order; a ballot tests 32 ids at once.
 */
#ifndef TRAINER_CUDA_EMBEDDING_CUH
#define TRAINER_CUDA_EMBEDDING_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

constexpr int EMB_THREADS = 256;                  /* forward: element-wise block size */
constexpr int EMB_TX = 32;                        /* backward: columns per warp (its lanes) */
constexpr int EMB_TY = 8;                         /* backward: warps per block, one group each */
constexpr int EMB_TILE = EMB_TX * EMB_TY;         /* backward: ids staged per barrier round */
constexpr int EMB_GROUPS = 512;                   /* backward: id groups at most (grid.y·EMB_TY) */
static_assert(EMB_GROUPS % EMB_TY == 0, "EMB_GROUPS must be a multiple of EMB_TY");

/* out[N,E] = table[ids[n], :]; total = N·E; one thread per out element, grid-stride loop
 * (launch: cuda_ew_blocks(total) blocks of EMB_THREADS). No shared memory. */
__global__ void __launch_bounds__(EMB_THREADS)
    k_embedding_forward(float *out, const int *ids, const float *table, size_t total, int E) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t n = k / (size_t)E, e = k % (size_t)E;
        out[k] = table[(size_t)ids[n] * E + e];
    }
}

/* dtable[ids[n], :] += dout[n, :] for n < N in ascending n (the forward line
 * out[n] = table[ids[n]] differentiated). Launch: grid (ceil(E / EMB_TX), G / EMB_TY), block
 * (EMB_TX, EMB_TY), G a power of two; warp y of block (bx, by) owns id group g = by·EMB_TY + y of
 * the G = gridDim.y·EMB_TY groups, and its lane
 * x column c = bx·EMB_TX + x. Static shared memory: EMB_TILE ints, the ids of the current round
 * of tokens, loaded by all threads between two barriers (every thread takes part in every round
 * and every ballot: the guards are on the work, never on the collectives). Deterministic: see
 * the file comment. */
__global__ void __launch_bounds__(EMB_TILE)
    k_embedding_backward(float *dtable, const float *dout, const int *ids, int N, int E) {
    __shared__ int tile_ids[EMB_TILE];
    const int lane = threadIdx.x, c = blockIdx.x * EMB_TX + lane;
    const unsigned g = blockIdx.y * EMB_TY + threadIdx.y, groups = gridDim.y * EMB_TY;
    const int tid = threadIdx.y * EMB_TX + lane;
    for (int n0 = 0; n0 < N; n0 += EMB_TILE) {
        const int m = min(EMB_TILE, N - n0);
        if (tid < m) tile_ids[tid] = ids[n0 + tid];
        __syncthreads();
        for (int k0 = 0; k0 < m; k0 += EMB_TX) {
            const int k = k0 + lane;
            unsigned hit = __ballot_sync(0xffffffffu,
                                         k < m && ((unsigned)tile_ids[k] & (groups - 1)) == g);
            while (hit) { /* the marked tokens in ascending n */
                const int j = k0 + __ffs((int)hit) - 1;
                hit &= hit - 1;
                if (c < E)
                    dtable[(size_t)tile_ids[j] * E + c] += dout[(size_t)(n0 + j) * E + c];
            }
        }
        __syncthreads(); /* the next round overwrites tile_ids */
    }
}

#endif
