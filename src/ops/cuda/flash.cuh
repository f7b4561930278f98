/* ops/cuda/flash.cuh — flash attention (Dao et al. 2022, "FlashAttention", Algorithm 1 forward,
 * Algorithm 2 backward; semantics: ops/ops.h; CPU reference: ops/cpu/flash.c). Written against
 * ops/cuda/kernel_api.h. Host side: flash.cu.
 * Shapes: R = B·NH rows (b, h); q [R,Tq,D], k [R,Tk,D], v [R,Tk,Dv], out [R,Tq,Dv],
 * lse [R,Tq], key_len [B] (NULL: all); causal: key s visible to query t iff s <= t + Tk − Tq.
 *
 * Exact softmax attention without a Tq×Tk matrix: keys (forward, dq) or queries (dk, dv) are
 * streamed through dynamic shared memory in tiles of `tile` rows (the host picks it so the tiles
 * fit in 48 KiB). Forward, one block per query row: the online softmax (running max m and sum l,
 * the accumulator rescaled by e^{m_old − m_new} per tile), lse = m + log l saved. Backward,
 * Algorithm 2 split so that no float atomics are needed: one block per query row accumulates
 * dq over key tiles; one block per key row accumulates dk and dv over query tiles; both recompute
 * p = exp(scale q·k − lse) and use D_t = rowsum(dout ⊙ out) (k_flash_rowdot, in the workspace).
 * Sums across threads (the tile's max and sum) are taken by thread 0 in key order; per-element
 * sums by their owning thread in tile order: deterministic under every schedule.
 */
#ifndef TRAINER_CUDA_FLASH_CUH
#define TRAINER_CUDA_FLASH_CUH

#include <stddef.h>

#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int FL_THREADS = 64;          /* threads per block */
constexpr int FL_SMEM_MAX = 48 * 1024;  /* dynamic shared memory per block at most (bytes) */

/* Forward. Launch: grid (Tq, R) of FL_THREADS; dynamic shared memory
 * (tile·(D + Dv) + tile + D + Dv + 3) floats. */
// smem-max: 49152
__global__ void __launch_bounds__(FL_THREADS)
    k_flash_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                    const int *key_len, float scale, int causal, int NH, int Tq, int Tk, int D,
                    int Dv, int tile) {
    DYN_SHARED(float, sm);
    float *Kt = sm, *Vt = Kt + (size_t)tile * D, *p = Vt + (size_t)tile * Dv, *qs = p + tile,
          *acc = qs + D, *st = acc + Dv; /* st: m, l, corr */
    const int t = blockIdx.x, r = blockIdx.y;
    const int lim = attn_key_limit(key_len, r / NH, causal, t, Tq, Tk);
    const float *qr = q + ((size_t)r * Tq + t) * D, *kb = k + (size_t)r * Tk * D,
                *vb = v + (size_t)r * Tk * Dv;
    for (int d = threadIdx.x; d < D; d += FL_THREADS) qs[d] = qr[d];
    for (int e = threadIdx.x; e < Dv; e += FL_THREADS) acc[e] = 0.0f;
    if (threadIdx.x == 0) st[0] = -INFINITY, st[1] = 0.0f;
    __syncthreads();
    for (int j0 = 0; j0 < lim; j0 += tile) {
        int nj = lim - j0 < tile ? lim - j0 : tile;
        for (int i = threadIdx.x; i < nj * D; i += FL_THREADS) Kt[i] = kb[(size_t)j0 * D + i];
        for (int i = threadIdx.x; i < nj * Dv; i += FL_THREADS) Vt[i] = vb[(size_t)j0 * Dv + i];
        __syncthreads();
        for (int j = threadIdx.x; j < nj; j += FL_THREADS) {
            float s = 0.0f;
            for (int d = 0; d < D; d++) s += qs[d] * Kt[(size_t)j * D + d];
            p[j] = scale * s;
        }
        __syncthreads();
        if (threadIdx.x == 0) { /* online softmax (Algorithm 1 lines 9–11), keys in order */
            float m_old = st[0], m_new = m_old;
            for (int j = 0; j < nj; j++) m_new = p[j] > m_new ? p[j] : m_new;
            float corr = expf(m_old - m_new), l = st[1] * corr;
            for (int j = 0; j < nj; j++) l += (p[j] = expf(p[j] - m_new));
            st[0] = m_new, st[1] = l, st[2] = corr;
        }
        __syncthreads();
        float corr = st[2];
        for (int e = threadIdx.x; e < Dv; e += FL_THREADS) {
            float a = acc[e] * corr;
            for (int j = 0; j < nj; j++) a += p[j] * Vt[(size_t)j * Dv + e];
            acc[e] = a;
        }
        __syncthreads(); /* the next tile overwrites Kt, Vt, p */
    }
    float *o = out + ((size_t)r * Tq + t) * Dv;
    float l = st[1];
    for (int e = threadIdx.x; e < Dv; e += FL_THREADS) o[e] = lim > 0 ? acc[e] / l : 0.0f;
    if (threadIdx.x == 0) lse[(size_t)r * Tq + t] = lim > 0 ? st[0] + logf(l) : -INFINITY;
}

/* Dt[r·Tq + t] = Σ_e dout ⊙ out (thread per row, e ascending). Launch: ceil(R·Tq / FL_THREADS)
 * blocks of FL_THREADS. */
__global__ void __launch_bounds__(FL_THREADS)
    k_flash_rowdot(float *Dt, const float *dout, const float *out, int rows, int Dv) {
    int i = blockIdx.x * FL_THREADS + threadIdx.x;
    if (i >= rows) return; /* no barrier in this kernel */
    float s = 0.0f;
    for (int e = 0; e < Dv; e++) s += dout[(size_t)i * Dv + e] * out[(size_t)i * Dv + e];
    Dt[i] = s;
}

/* dq_t += scale Σ_s p_ts (dp_ts − D_t) k_s over the visible keys, in key tiles.
 * Launch: grid (Tq, R) of FL_THREADS; dynamic shared memory (tile·(D + Dv) + tile + D + Dv + D)
 * floats. */
// smem-max: 49152
__global__ void __launch_bounds__(FL_THREADS)
    k_flash_backward_dq(float *dq, const float *dout, const float *q, const float *k,
                        const float *v, const float *lse, const float *Dt, const int *key_len,
                        float scale, int causal, int NH, int Tq, int Tk, int D, int Dv, int tile) {
    DYN_SHARED(float, sm);
    float *Kt = sm, *Vt = Kt + (size_t)tile * D, *ds = Vt + (size_t)tile * Dv, *qs = ds + tile,
          *gs = qs + D, *acc = gs + Dv;
    const int t = blockIdx.x, r = blockIdx.y;
    const int lim = attn_key_limit(key_len, r / NH, causal, t, Tq, Tk);
    if (lim == 0) return; /* uniform: the row saw no key, out = 0 */
    const size_t row = (size_t)r * Tq + t;
    const float *kb = k + (size_t)r * Tk * D, *vb = v + (size_t)r * Tk * Dv;
    const float L = lse[row], Di = Dt[row];
    for (int d = threadIdx.x; d < D; d += FL_THREADS) qs[d] = q[row * D + d], acc[d] = 0.0f;
    for (int e = threadIdx.x; e < Dv; e += FL_THREADS) gs[e] = dout[row * Dv + e];
    /* no barrier here: the tile loop runs (lim > 0), and its first barrier comes before any
     * thread reads another's qs or gs (acc[d] is only ever its owner's) */
    for (int j0 = 0; j0 < lim; j0 += tile) {
        int nj = lim - j0 < tile ? lim - j0 : tile;
        for (int i = threadIdx.x; i < nj * D; i += FL_THREADS) Kt[i] = kb[(size_t)j0 * D + i];
        for (int i = threadIdx.x; i < nj * Dv; i += FL_THREADS) Vt[i] = vb[(size_t)j0 * Dv + i];
        __syncthreads();
        for (int j = threadIdx.x; j < nj; j += FL_THREADS) {
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < D; d++) s += qs[d] * Kt[(size_t)j * D + d];
            for (int e = 0; e < Dv; e++) dp += gs[e] * Vt[(size_t)j * Dv + e];
            float pj = expf(scale * s - L);
            ds[j] = pj * (dp - Di);
        }
        __syncthreads();
        for (int d = threadIdx.x; d < D; d += FL_THREADS) {
            float a = acc[d];
            for (int j = 0; j < nj; j++) a += ds[j] * Kt[(size_t)j * D + d];
            acc[d] = a;
        }
        __syncthreads();
    }
    for (int d = threadIdx.x; d < D; d += FL_THREADS) dq[row * D + d] += scale * acc[d];
}

/* dv_s += Σ_t p_ts dout_t, dk_s += scale Σ_t p_ts (dp_ts − D_t) q_t over the queries that see
 * key s, in query tiles. Launch: grid (Tk, R) of FL_THREADS; dynamic shared memory
 * (tile·(D + Dv) + 2·tile + 2·(D + Dv)) floats. */
// smem-max: 49152
__global__ void __launch_bounds__(FL_THREADS)
    k_flash_backward_dkdv(float *dk, float *dv, const float *dout, const float *q,
                          const float *k, const float *v, const float *lse, const float *Dt,
                          const int *key_len, float scale, int causal, int NH, int Tq, int Tk,
                          int D, int Dv, int tile) {
    DYN_SHARED(float, sm);
    float *Qt = sm, *Gt = Qt + (size_t)tile * D, *pt = Gt + (size_t)tile * Dv, *ds = pt + tile,
          *ks = ds + tile, *vs = ks + D, *ak = vs + Dv, *av = ak + D;
    const int s = blockIdx.x, r = blockIdx.y;
    int len = key_len ? key_len[r / NH] : Tk;
    if (len > Tk) len = Tk;
    if (s >= len) return; /* uniform: a padded key gets no gradient */
    /* queries that see key s: t >= t0 (causal: s <= t + Tk − Tq) */
    int t0 = causal ? s - (Tk - Tq) : 0;
    if (t0 < 0) t0 = 0;
    const size_t krow = (size_t)r * Tk + s;
    for (int d = threadIdx.x; d < D; d += FL_THREADS) ks[d] = k[krow * D + d], ak[d] = 0.0f;
    for (int e = threadIdx.x; e < Dv; e += FL_THREADS) vs[e] = v[krow * Dv + e], av[e] = 0.0f;
    /* no barrier here: the tile loop's first barrier comes before any thread reads another's
     * ks or vs (t0 < Tq since s < Tk; ak[d], av[e] are only ever their owners') */
    for (int i0 = t0; i0 < Tq; i0 += tile) {
        int ni = Tq - i0 < tile ? Tq - i0 : tile;
        const size_t qrow0 = (size_t)r * Tq + i0;
        for (int i = threadIdx.x; i < ni * D; i += FL_THREADS) Qt[i] = q[qrow0 * D + i];
        for (int i = threadIdx.x; i < ni * Dv; i += FL_THREADS) Gt[i] = dout[qrow0 * Dv + i];
        __syncthreads();
        for (int i = threadIdx.x; i < ni; i += FL_THREADS) {
            float sc = 0.0f, dp = 0.0f;
            for (int d = 0; d < D; d++) sc += Qt[(size_t)i * D + d] * ks[d];
            for (int e = 0; e < Dv; e++) dp += Gt[(size_t)i * Dv + e] * vs[e];
            float pi = expf(scale * sc - lse[qrow0 + i]);
            pt[i] = pi;
            ds[i] = pi * (dp - Dt[qrow0 + i]);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < Dv; e += FL_THREADS) {
            float a = av[e];
            for (int i = 0; i < ni; i++) a += pt[i] * Gt[(size_t)i * Dv + e];
            av[e] = a;
        }
        for (int d = threadIdx.x; d < D; d += FL_THREADS) {
            float a = ak[d];
            for (int i = 0; i < ni; i++) a += ds[i] * Qt[(size_t)i * D + d];
            ak[d] = a;
        }
        __syncthreads();
    }
    if (dv)
        for (int e = threadIdx.x; e < Dv; e += FL_THREADS) dv[krow * Dv + e] += av[e];
    if (dk)
        for (int d = threadIdx.x; d < D; d += FL_THREADS) dk[krow * D + d] += scale * ak[d];
}

#endif
