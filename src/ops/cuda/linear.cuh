/* ops/cuda/linear.cuh — kernels of linear attention (Katharopoulos et al. 2020 eq. 6–9, §3.3.1,
 * §3.4; semantics: ops/ops.h; the CPU reference and the derivation of the gradients:
 * ops/cpu/linear.c). Written against ops/cuda/kernel_api.h. Host side: linear.cu.
 *
 * Shapes: B batch, NH heads, Tq queries, Tk keys, D query/key width, Dv value width;
 * q [B,NH,Tq,D], k [B,NH,Tk,D], v [B,NH,Tk,Dv], out [B,NH,Tq,Dv], key_len [B] (NULL: all).
 *
 * One block per (b, h) pair walks time in order, as the CPU's one thread per pair does: the
 * running state S [D,Dv] (then R in the backward's second pass), z [D] (then r) and the rows'
 * vectors φ(q_t), φ(k_s), out_t live in the pair's slice of the workspace (lin_work floats per
 * pair; in linear_attn_step the state is the caller's and the row vectors are in shared memory),
 * each float owned by one thread between barriers. Every sum that crosses threads (the
 * normaliser den_t = φ(q_t)·z_t + 1e-6, g_t·out_t) is taken by thread 0 in the CPU's order, and
 * every per-element sum (over d or over e) by the owning thread in the CPU's order, so the result
 * is the same bits under every thread and block schedule and equals the CPU's up to FMA
 * contraction. The loop bounds (visible keys, the suffix of rows) are the same in every thread:
 * every thread reaches every barrier. Causal decoding (linear_attn_step) runs the same
 * add-key and row code, so a step equals the causal forward's row. The non-causal form split at
 * its key summary (linear_attn_summary, _read and their backwards, below) spreads what is
 * independent further: the summary one thread per state float, the read one block per query row,
 * the summary's backward one block per key; only the read's backward walks a pair's rows in order.
 */
#ifndef TRAINER_CUDA_LINEAR_CUH
#define TRAINER_CUDA_LINEAR_CUH

#include <stddef.h>

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int LIN_THREADS = 128;     /* threads per (b, h) block */
constexpr float LIN_EPS = 1e-6f;     /* the normaliser's guard, as the CPU's */

/* Floats of workspace per (b, h) pair: S [D,Dv], z [D], K [D], Q [D], o [Dv], den [Tq], cc [Tq]. */
__host__ __device__ inline size_t lin_work(int Tq, int D, int Dv) {
    return (size_t)D * Dv + 3 * (size_t)D + (size_t)Dv + 2 * (size_t)Tq;
}

/* The feature map m: LIN_PHI_ELU1 elu(x) + 1, LIN_PHI_IDENTITY x (ops.h's LINEAR_PHI_*; the
 * values are checked against them in linear.cu). */
constexpr int LIN_PHI_ELU1 = 0, LIN_PHI_IDENTITY = 1;
__device__ inline float lin_phi(float x, int m) {
    return m == LIN_PHI_IDENTITY ? x : x > 0.0f ? x + 1.0f : expf(x);
}
__device__ inline float lin_dphi(float x, int m) {
    return m == LIN_PHI_IDENTITY ? 1.0f : x > 0.0f ? 1.0f : expf(x);
}

/* Keys visible to query row t (0 .. vis−1): key_len, and s <= t + (Tk − Tq) when causal. */
__device__ inline int lin_visible(int t, int len, int causal, int Tq, int Tk) {
    if (!causal) return len;
    long lim = (long)t + (Tk - Tq) + 1;
    if (lim < 0) lim = 0;
    return lim < len ? (int)lim : len;
}

/* S += φ(k_s) v_sᵀ, z += φ(k_s) for one key (K: scratch [D]). Called by every thread of the
 * block; a barrier before it first reads S or z (a caller's writes to them need none of their
 * own), and one at the end. */
__device__ inline void lin_add_key(float *S, float *z, float *K, const float *kr, const float *vr,
                                   int m, int D, int Dv) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) K[d] = lin_phi(kr[d], m);
    __syncthreads();
    for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) S[i] += K[i / Dv] * vr[i % Dv];
    for (int d = threadIdx.x; d < D; d += blockDim.x) z[d] += K[d];
    __syncthreads();
}

/* One output row: Q = φ(q_t), den = Q·z + eps (thread 0, in order d = 0..D−1), o = Sᵀ Q / den
 * (thread per e, in order of d). Returns den to every thread (read from *den_sh after the last
 * barrier). Every thread of the block calls it; a barrier before it first reads S or z, and one
 * at the end. */
__device__ inline float lin_row(float *o, float *Q, float *den_sh, const float *qr, const float *S,
                                const float *z, int m, int D, int Dv) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) Q[d] = lin_phi(qr[d], m);
    __syncthreads();
    if (threadIdx.x == 0) {
        float den = 0.0f;
        for (int d = 0; d < D; d++) den += Q[d] * z[d];
        *den_sh = den + LIN_EPS;
    }
    __syncthreads();
    float den = *den_sh, inv = 1.0f / den;
    for (int e = threadIdx.x; e < Dv; e += blockDim.x) {
        float acc = 0.0f;
        for (int d = 0; d < D; d++) acc += Q[d] * S[(size_t)d * Dv + e];
        o[e] = acc * inv;
    }
    __syncthreads();
    return den;
}

/* Forward (eq. 6; causal: prefix sums, eq. 8–9). Launch: B·NH blocks of LIN_THREADS; work:
 * lin_work floats per block. out overwritten. */
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_forward(float *out, const float *q, const float *k, const float *v,
                     const int *key_len, int causal, int m, int NH, int Tq, int Tk, int D, int Dv,
                     float *work) {
    __shared__ float den_sh;
    const int bh = blockIdx.x;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    float *S = work + (size_t)bh * lin_work(Tq, D, Dv), *z = S + (size_t)D * Dv, *K = z + D,
          *Q = K + D, *o = Q + D;
    const float *qb = q + (size_t)bh * Tq * D, *kb = k + (size_t)bh * Tk * D,
                *vb = v + (size_t)bh * Tk * Dv;
    float *ob = out + (size_t)bh * Tq * Dv;
    /* S and z; no barrier: lin_add_key and lin_row have one before they read them */
    for (int i = threadIdx.x; i < D * Dv + D; i += blockDim.x) S[i] = 0.0f;
    int sp = 0;
    for (int t = 0; t < Tq; t++) {
        int vis = lin_visible(t, len, causal, Tq, Tk);
        for (; sp < vis; sp++)
            lin_add_key(S, z, K, kb + (size_t)sp * D, vb + (size_t)sp * Dv, m, D, Dv);
        float *orow = ob + (size_t)t * Dv;
        if (vis == 0) {
            for (int e = threadIdx.x; e < Dv; e += blockDim.x) orow[e] = 0.0f;
            continue; /* uniform in the block: vis is the same in every thread */
        }
        lin_row(o, Q, &den_sh, qb + (size_t)t * D, S, z, m, D, Dv);
        for (int e = threadIdx.x; e < Dv; e += blockDim.x) orow[e] = o[e];
    }
}

/* The most dynamic shared memory of the kernels that keep their row scratch there instead of in
 * a workspace (k_linear_step, k_linear_read, k_linear_read_backward,
 * k_linear_summary_backward), in bytes: the default limit, no opt-in needed (those kernels have
 * no static shared memory). Their host code CHECKs each launch against it. */
constexpr size_t LIN_SMEM_MAX = 49152;

/* One decoding step (§3.4): per (b, h) block, the key joins the state, the query reads it.
 * state [B·NH, D, Dv], zsum [B·NH, D] (the caller's); the block's scratch K, Q [D], o [Dv] and
 * the normaliser den [1] is dynamic shared memory, lin_step_smem(D, Dv) bytes (no workspace; the
 * kernel has no static shared memory, so up to 48 KiB needs no opt-in). Launch: B·NH blocks of
 * LIN_THREADS. */
__host__ __device__ inline size_t lin_step_smem(int D, int Dv) {
    return (2 * (size_t)D + (size_t)Dv + 1) * sizeof(float);
}
// smem-max: 49152
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_step(float *out, float *state, float *zsum, const float *q, const float *k,
                  const float *v, int m, int D, int Dv) {
    DYN_SHARED(float, sm);
    const int bh = blockIdx.x;
    float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
    float *K = sm, *Q = K + D, *o = Q + D, *den_sh = o + Dv;
    lin_add_key(S, z, K, k + (size_t)bh * D, v + (size_t)bh * Dv, m, D, Dv);
    lin_row(o, Q, den_sh, q + (size_t)bh * D, S, z, m, D, Dv);
    for (int e = threadIdx.x; e < Dv; e += blockDim.x) out[(size_t)bh * Dv + e] = o[e];
}

/* Backward (§3.3.1 with the normaliser; the CPU's two passes): pass 1 forward in time rebuilds
 * S_t, z_t and gives dq and the rows' den_t, c_t; pass 2 backward in time accumulates R_s, r_s
 * over the suffix of rows that see key s and gives dk, dv. Accumulates into dq, dk, dv (each
 * may be NULL). Launch: B·NH blocks of LIN_THREADS; work: lin_work floats per block. */
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                      const float *k, const float *v, const int *key_len, int causal, int m,
                      int NH, int Tq, int Tk, int D, int Dv, float *work) {
    __shared__ float den_sh, gdo_sh;
    const int bh = blockIdx.x;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    if (len == 0) return; /* uniform in the block, before any barrier: no row sees a key */
    float *S = work + (size_t)bh * lin_work(Tq, D, Dv), *z = S + (size_t)D * Dv, *K = z + D,
          *Q = K + D, *o = Q + D, *den = o + Dv, *cc = den + Tq;
    const float *qb = q + (size_t)bh * Tq * D, *kb = k + (size_t)bh * Tk * D,
                *vb = v + (size_t)bh * Tk * Dv, *gb = dout + (size_t)bh * Tq * Dv;

    /* pass 1 (no barrier after the zeroing: lin_add_key and lin_row have one before they read
     * S or z) */
    for (int i = threadIdx.x; i < D * Dv + D; i += blockDim.x) S[i] = 0.0f;
    int sp = 0;
    for (int t = 0; t < Tq; t++) {
        int vis = lin_visible(t, len, causal, Tq, Tk);
        for (; sp < vis; sp++)
            lin_add_key(S, z, K, kb + (size_t)sp * D, vb + (size_t)sp * Dv, m, D, Dv);
        if (vis == 0) {
            if (threadIdx.x == 0) den[t] = 0.0f, cc[t] = 0.0f;
            continue;
        }
        const float *qr = qb + (size_t)t * D, *g = gb + (size_t)t * Dv;
        float dn = lin_row(o, Q, &den_sh, qr, S, z, m, D, Dv);
        if (threadIdx.x == 0) {
            float gdo = 0.0f;
            for (int e = 0; e < Dv; e++) gdo += g[e] * o[e]; /* g_t · out_t */
            gdo_sh = gdo;
            den[t] = dn;
            cc[t] = gdo / dn;
        }
        __syncthreads();
        float gdo = gdo_sh;
        if (dq)
            for (int d = threadIdx.x; d < D; d += blockDim.x) {
                float sg = 0.0f;
                for (int e = 0; e < Dv; e++) sg += S[(size_t)d * Dv + e] * g[e];
                dq[((size_t)bh * Tq + t) * D + d] += (sg - z[d] * gdo) / dn * lin_dphi(qr[d], m);
            }
        __syncthreads(); /* gdo_sh and o are rewritten by the next row */
    }
    if (!dk && !dv) return; /* uniform */

    /* pass 2: R (in S), r (in z) over the rows tp .. Tq−1 that see key s */
    for (int i = threadIdx.x; i < D * Dv + D; i += blockDim.x) S[i] = 0.0f;
    __syncthreads();
    int tp = Tq;
    for (int s = len - 1; s >= 0; s--) {
        while (tp > 0 && lin_visible(tp - 1, len, causal, Tq, Tk) > s) {
            tp--;
            const float *qr = qb + (size_t)tp * D, *g = gb + (size_t)tp * Dv;
            float w = 1.0f / den[tp], c = cc[tp];
            for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) {
                float qw = lin_phi(qr[i / Dv], m) * w;
                S[i] += qw * g[i % Dv];
            }
            for (int d = threadIdx.x; d < D; d += blockDim.x) z[d] += lin_phi(qr[d], m) * c;
            __syncthreads();
        }
        const float *kr = kb + (size_t)s * D, *vr = vb + (size_t)s * Dv;
        if (dk)
            for (int d = threadIdx.x; d < D; d += blockDim.x) {
                float rv = 0.0f;
                for (int e = 0; e < Dv; e++) rv += S[(size_t)d * Dv + e] * vr[e];
                dk[((size_t)bh * Tk + s) * D + d] += (rv - z[d]) * lin_dphi(kr[d], m);
            }
        if (dv)
            for (int e = threadIdx.x; e < Dv; e += blockDim.x) {
                float acc = 0.0f;
                for (int d = 0; d < D; d++) acc += lin_phi(kr[d], m) * S[(size_t)d * Dv + e];
                dv[((size_t)bh * Tk + s) * Dv + e] += acc;
            }
        __syncthreads(); /* R, r change for the next key */
    }
}

/* ---- non-causal linear attention split at its key summary (linear_attn_summary, _read,
 * _read_backward, _summary_backward; ops.h has the contract) ----
 * The summary and the read run the forward's arithmetic: each state element's sum over the keys
 * in order s = 0 .. L−1 as lin_add_key adds them, and each row through lin_row itself, so
 * summary then read gives k_linear_forward's non-causal out bit for bit. The backwards keep
 * ops/cpu/linear.c's order: the read's sums dstate and dzsum over the rows t = 0 .. Tq−1, each
 * float by the one thread that owns it; the summary's adds dk's term before dv's. Every output
 * float has one writer at a time; no float atomics. */

/* Bytes of dynamic shared memory: k_linear_read's Q [D] and den [1]; k_linear_read_backward's
 * Q [D], o [Dv], den [1] and g·out [1]; k_linear_summary_backward's φ(k_s) [D]. */
__host__ __device__ inline size_t lin_read_smem(int D) {
    return ((size_t)D + 1) * sizeof(float);
}
__host__ __device__ inline size_t lin_read_backward_smem(int D, int Dv) {
    return ((size_t)D + (size_t)Dv + 2) * sizeof(float);
}
__host__ __device__ inline size_t lin_summary_backward_smem(int D) {
    return (size_t)D * sizeof(float);
}

/* state [B·NH, D, Dv] = Σ_{s<L} φ(k_s) v_sᵀ, zsum [B·NH, D] = Σ_{s<L} φ(k_s) (eq. 6), both
 * overwritten, L = min(key_len[b], Tk) (all Tk when key_len is NULL). One thread per output
 * float: flat index i over the pair's D·Dv state floats, then its D zsum floats; it sums its
 * keys in order s = 0 .. L−1 in a register, the products as lin_add_key forms them, so each
 * float is the forward's S or z after its L-th key, bit for bit. No barrier, no shared memory.
 * Launch: grid (⌈(D·Dv + D) / LIN_THREADS⌉, B·NH) of LIN_THREADS. */
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_summary(float *state, float *zsum, const float *k, const float *v,
                     const int *key_len, int m, int NH, int Tk, int D, int Dv) {
    const int bh = blockIdx.y;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nst = (size_t)D * Dv;
    if (i >= nst + D) return; /* no barrier in this kernel */
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * Dv;
    float acc = 0.0f;
    if (i < nst) {
        const int d = (int)(i / Dv), e = (int)(i % Dv);
        for (int s = 0; s < len; s++) /* S += φ(k_s) v_sᵀ */
            acc += lin_phi(kb[(size_t)s * D + d], m) * vb[(size_t)s * Dv + e];
        state[(size_t)bh * nst + i] = acc;
    } else {
        const int d = (int)(i - nst);
        for (int s = 0; s < len; s++) acc += lin_phi(kb[(size_t)s * D + d], m); /* z += φ(k_s) */
        zsum[(size_t)bh * D + d] = acc;
    }
}

/* out[bh, t] = stateᵀ φ(q_t) / (φ(q_t)·zsum + 1e-6) (eq. 6) for one row t per block: lin_row,
 * the forward's row code, writing straight into out. The rows are independent. Scratch: Q [D]
 * and den [1] in dynamic shared memory, lin_read_smem(D) bytes. Launch: grid (Tq, B·NH) of
 * LIN_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_read(float *out, const float *q, const float *state, const float *zsum, int m,
                  int Tq, int D, int Dv) {
    DYN_SHARED(float, sm);
    float *Q = sm, *den_sh = Q + D;
    /* row t = blockIdx.x of pair bh (size_t offsets from the start: with int ones, ptxas for
     * sm_90 spilled 8 bytes) */
    const size_t bh = blockIdx.y, row = bh * Tq + blockIdx.x;
    lin_row(out + row * Dv, Q, den_sh, q + row * D, state + bh * D * Dv, zsum + bh * D, m, D, Dv);
}

/* The read's backward (ops/cpu/linear.c's derivation with S = state, z = zsum for every row):
 * per (b, h) block, rows t = 0 .. Tq−1 in order; each row recomputes out_t and den_t by lin_row,
 * g·out_t by thread 0 in order e = 0 .. Dv−1, then
 *   dq_t[d]     += ((S g_t)[d] − z[d] (g_t·out_t)) / den_t · φ'(q_t[d])   (a thread per d; dq
 *                  may be NULL)
 *   dstate[d,e] += (φ(q_t[d]) / den_t) g_t[e]                             (a thread per (d, e))
 *   dzsum[d]    −= φ(q_t[d]) c_t,  c_t = (g_t·out_t) / den_t              (a thread per d)
 * Each dstate and dzsum float is owned by the same thread for every row, so its sum runs over t
 * in order. Scratch: Q [D], o [Dv], den and g·out in dynamic shared memory,
 * lin_read_backward_smem(D, Dv) bytes. Launch: B·NH blocks of LIN_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_read_backward(float *dq, float *dstate, float *dzsum, const float *dout,
                           const float *q, const float *state, const float *zsum, int m, int Tq,
                           int D, int Dv) {
    DYN_SHARED(float, sm);
    const int bh = blockIdx.x;
    float *Q = sm, *o = Q + D, *den_sh = o + Dv, *gdo_sh = den_sh + 1;
    const float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
    float *dS = dstate + (size_t)bh * D * Dv, *dz = dzsum + (size_t)bh * D;
    for (int t = 0; t < Tq; t++) {
        const size_t row = (size_t)bh * Tq + t;
        const float *qr = q + row * D, *g = dout + row * Dv;
        float dn = lin_row(o, Q, den_sh, qr, S, z, m, D, Dv); /* ends with a barrier: o is whole */
        if (threadIdx.x == 0) {
            float gdo = 0.0f;
            for (int e = 0; e < Dv; e++) gdo += g[e] * o[e]; /* g_t · out_t */
            *gdo_sh = gdo;
        }
        __syncthreads();
        float gdo = *gdo_sh, w = 1.0f / dn, c = gdo / dn;
        if (dq)
            for (int d = threadIdx.x; d < D; d += blockDim.x) {
                float sg = 0.0f;
                for (int e = 0; e < Dv; e++) sg += S[(size_t)d * Dv + e] * g[e];
                dq[row * D + d] += (sg - z[d] * gdo) / dn * lin_dphi(qr[d], m);
            }
        for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) {
            float qw = Q[i / Dv] * w;
            dS[i] += qw * g[i % Dv]; /* dstate += φ(q_t) g_tᵀ / den_t */
        }
        for (int d = threadIdx.x; d < D; d += blockDim.x) dz[d] -= Q[d] * c; /* −φ(q_t) c_t */
        __syncthreads(); /* Q, o, den and g·out are rewritten by the next row */
    }
}

/* The summary's backward: one block per visible key s of pair bh (blocks of padded keys,
 * s >= L, return before any barrier and write nothing), with φ(k_s) in dynamic shared memory
 * (lin_summary_backward_smem(D) bytes, when dv is written):
 *   dk_s[d] += (Σ_e dstate[d,e] v_s[e] + dzsum[d]) · φ'(k_s[d])   (a thread per d, e in order)
 *   dv_s[e] += Σ_d φ(k_s[d]) dstate[d,e]                           (a thread per e, d in order)
 * dk may be dv (k is v, D = Dv): the thread that adds to dk_s[j] is the one that adds to dv_s[j]
 * (both loops stride by blockDim.x from threadIdx.x), dk's term first, and no thread reads
 * another's element, so the two adds never race. Either may be NULL. Launch: grid (Tk, B·NH) of
 * LIN_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_summary_backward(float *dk, float *dv, const float *dstate, const float *dzsum,
                              const float *k, const float *v, const int *key_len, int m, int NH,
                              int Tk, int D, int Dv) {
    DYN_SHARED(float, K);
    const int s = blockIdx.x, bh = blockIdx.y;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    if (s >= len) return; /* uniform in the block, before any barrier: a padded key */
    const size_t row = (size_t)bh * Tk + s;
    const float *kr = k + row * D, *vr = v + row * Dv;
    const float *dS = dstate + (size_t)bh * D * Dv, *dz = dzsum + (size_t)bh * D;
    if (dv) { /* uniform */
        for (int d = threadIdx.x; d < D; d += blockDim.x) K[d] = lin_phi(kr[d], m);
        __syncthreads();
    }
    if (dk)
        for (int d = threadIdx.x; d < D; d += blockDim.x) {
            float rv = 0.0f;
            for (int e = 0; e < Dv; e++) rv += dS[(size_t)d * Dv + e] * vr[e];
            dk[row * D + d] += (rv + dz[d]) * lin_dphi(kr[d], m);
        }
    if (dv)
        for (int e = threadIdx.x; e < Dv; e += blockDim.x) {
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += K[d] * dS[(size_t)d * Dv + e];
            dv[row * Dv + e] += acc;
        }
}

/* ---- the taylor kind's features (l2feature_*; ops/cpu/linear.c has the derivation) ----
 * One block of L2F_THREADS per row n of inp [N,D]: r = 1/√(‖x‖² + 1e-12) with ‖x‖² summed in
 * double by block_sum's fixed tree (each thread's strided share in ascending order), so every
 * schedule gives the same bits; each output float has one writer. */
constexpr int L2F_THREADS = 64; /* a power of two (block_sum); rows are head sizes, ~32..128 */

/* r of row x (every thread of the block calls; returns r to all) */
__device__ inline float l2f_rnorm(const float *x, int D, double *buf) {
    double ss = 0.0;
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) ss += (double)x[d] * x[d];
    return (float)(1.0 / sqrt(block_sum<L2F_THREADS>(ss, buf) + 1e-12));
}

/* out[n] = [1; x r]. Launch: N blocks of L2F_THREADS. */
__global__ void __launch_bounds__(L2F_THREADS)
    k_l2feature_forward(float *out, const float *inp, int D) {
    __shared__ double buf[L2F_THREADS];
    const float *x = inp + (size_t)blockIdx.x * D;
    float *o = out + (size_t)blockIdx.x * (D + 1);
    float r = l2f_rnorm(x, D, buf);
    if (threadIdx.x == 0) o[0] = 1.0f;
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) o[1 + d] = x[d] * r;
}

/* dinp[n] += r (g − x̂ (x̂·g)), g = dout[n, 1..D]. Launch: N blocks of L2F_THREADS. */
__global__ void __launch_bounds__(L2F_THREADS)
    k_l2feature_backward(float *dinp, const float *dout, const float *inp, int D) {
    __shared__ double buf[L2F_THREADS];
    const float *x = inp + (size_t)blockIdx.x * D, *g = dout + (size_t)blockIdx.x * (D + 1) + 1;
    float *dx = dinp + (size_t)blockIdx.x * D;
    float r = l2f_rnorm(x, D, buf);
    double xg = 0.0;
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) xg += (double)(x[d] * r) * g[d];
    float c = (float)block_sum<L2F_THREADS>(xg, buf); /* x̂·g */
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) dx[d] += r * (g[d] - x[d] * r * c);
}

#endif
