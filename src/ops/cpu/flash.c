/* flash.c — flash attention on the CPU (Dao et al. 2022, "FlashAttention", Algorithm 1 forward,
 * Algorithm 2 backward): exact softmax(scale · q kᵀ + mask) v computed over tiles of keys with
 * the online softmax, keeping only lse = log Σ_s exp(scale · q·k_s) per query row; the backward
 * recomputes the probabilities tile by tile from q, k and lse. Semantics in ops/ops.h.
 *
 * Shapes: B batch, NH heads, Tq query length, Tk key length, D query/key size, Dv value size.
 *   q [B,NH,Tq,D], k [B,NH,Tk,D], v [B,NH,Tk,Dv], out [B,NH,Tq,Dv], lse [B,NH,Tq], key_len [B].
 * Mask: query row t sees key s iff s < key_len[b] and (not causal, or s <= t + Tk − Tq), so the
 *   visible keys of a row are a prefix 0 .. lim(t) − 1, and lim grows with t. A row with no
 *   visible key has out = 0 and lse = −∞, and contributes nothing to the gradients.
 *
 * Tiling: blocks of FLASH_BR query rows (FLASH_BR_CAUSAL when causal) × tiles of FLASH_BC keys.
 *   The products on a tile (S = scale·Q Kᵀ, P V, Pᵀ dO, dO Vᵀ, dS K, dSᵀ Q) are cblas_sgemm
 *   calls on sub-matrices; OpenBLAS (OpenMP build) runs them single-threaded inside our parallel
 *   region, and it never splits the inner dimension, so a product's bits do not depend on its
 *   thread count. The softmax parts are `omp simd` loops with cpu_expf (cpu_internal.h). Tiles
 *   wholly beyond key_len[b] or wholly masked by causality are never visited.
 *   bench/bench_attention times it against the materialised attn_forward / attn_backward.
 *
 * Tile size: the products are OpenBLAS calls whose fixed cost (packing both operands, the call)
 *   is paid per tile, so the tiles are as large as keeps a thread's score and probability tiles
 *   within its L2 cache: 128 × 256 floats is 128 KiB each. Causal, a block's last tile holds the
 *   diagonal and computes the scores above it, which are masked; blocks of FLASH_BR_CAUSAL = 64
 *   rows halve that waste, which costs more there than the smaller products do.
 *
 * Memory: per thread 2·br·bc floats of the caller's work (cpu_flash_attn_workspace: scores /
 *   probabilities, dp / ds), br = min(Tq, FLASH_BR) rows by bc = min(Tk, FLASH_BC) keys, and
 *   O(FLASH_BR) on the stack; nothing is allocated; no Tq × Tk matrix exists anywhere. The output
 *   block itself is the accumulator O of Algorithm 1, and the backward adds into dq, dk, dv
 *   directly.
 *
 * Parallelism and determinism (docs/design.md §9): the forward runs over (b, h, query block), the
 *   backward over (b, h) — the dq, dk and dv rows it writes belong to that (b, h), so there are
 *   no races and no atomics. Each work item is done by one thread in a fixed order, so the
 *   results are bit-identical for any number of threads. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "core/common.h"
#include "ops/cpu/cpu_internal.h"

#define FLASH_BR 128       /* query rows per block */
#define FLASH_BR_CAUSAL 64 /* query rows per block when causal (at most FLASH_BR) */
#define FLASH_BC 256       /* keys per tile */

/* Parallelise only above this many multiply-adds (B·NH·Tq·Tk·(D + Dv)). */
#define FLASH_PAR_MIN 262144.0

/* Keys per tile for Tk keys: min(Tk, FLASH_BC), at least 1; the row stride of the tiles. */
static inline int tile_keys(int Tk) { return Tk < 1 ? 1 : Tk < FLASH_BC ? Tk : FLASH_BC; }

/* Floats of one thread's work for Tq queries and Tk keys: two tiles of br × bc, br = min(Tq,
 * FLASH_BR) (at least 1; the blocks of either mask fit), bc = tile_keys(Tk). Non-decreasing in
 * Tq and in Tk, so a workspace sized for the longest lengths serves every shorter call. */
static size_t thread_work(int Tq, int Tk) {
    const int br = Tq < 1 ? 1 : Tq < FLASH_BR ? Tq : FLASH_BR;
    return 2 * (size_t)br * (size_t)tile_keys(Tk);
}

/* Floats of work for flash_attn_forward and _backward: thread_work(Tq, Tk) per OpenMP thread. */
static size_t cpu_flash_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH, (void)D, (void)Dv;
    return (size_t)omp_get_max_threads() * thread_work(Tq, Tk);
}

/* Number of visible keys of query row t (keys 0 .. lim − 1); off = Tk − Tq. */
static inline int row_limit(int t, int len, int causal, int off) {
    int lim = len;
    if (causal && t + off + 1 < lim) lim = t + off + 1;
    return lim < 0 ? 0 : lim;
}

static void cpu_flash_attn_forward(float *out, float *lse, const float *q, const float *k,
                                   const float *v, const int *key_len, float scale, int causal,
                                   int B, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    if (B <= 0 || NH <= 0 || Tq <= 0) return;
    const int br = causal ? FLASH_BR_CAUSAL : FLASH_BR; /* rows per block */
    const int nblk = (Tq + br - 1) / br;                 /* query blocks per (b, h) */
    const long items = (long)B * NH * nblk;
    const int off = Tk - Tq;
    const int ldt = tile_keys(Tk); /* row stride of the tile */
#pragma omp parallel if ((double)B * NH * Tq * Tk * (D + Dv) > FLASH_PAR_MIN)
    {
        float *s = work + (size_t)omp_get_thread_num() * thread_work(Tq, Tk); /* [br, bc] S, P */
        float m[FLASH_BR], l[FLASH_BR]; /* running max and running sum of each row */
#pragma omp for schedule(dynamic, 1)
        for (long it = 0; it < items; it++) {
            const long bh = it / nblk; /* b · NH + h */
            const int b = (int)(bh / NH);
            const int r0 = (int)(it % nblk) * br;
            const int nr = Tq - r0 < br ? Tq - r0 : br;
            const int len = cpu_key_count(key_len, b, Tk);
            const float *qb = q + ((size_t)bh * Tq + r0) * D; /* [nr, D] */
            const float *kb = k + (size_t)bh * Tk * D;        /* [Tk, D] */
            const float *vb = v + (size_t)bh * Tk * Dv;       /* [Tk, Dv] */
            float *ob = out + ((size_t)bh * Tq + r0) * Dv;    /* [nr, Dv], the accumulator O */
            float *lb = lse + (size_t)bh * Tq + r0;           /* [nr] */
            memset(ob, 0, sizeof(float) * (size_t)nr * Dv);
            for (int r = 0; r < nr; r++) m[r] = -INFINITY, l[r] = 0.0f;
            /* keys any row of the block sees: those of its last row */
            const int kend = row_limit(r0 + nr - 1, len, causal, off);
            for (int c0 = 0; c0 < kend; c0 += ldt) {
                const int nc = kend - c0 < ldt ? kend - c0 : ldt;
                /* S = scale · Q_i K_jᵀ (Algorithm 1 line 9) */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, nc, D, scale, qb, D,
                            kb + (size_t)c0 * D, D, 0.0f, s, ldt);
                for (int r = 0; r < nr; r++) {
                    float *restrict sr = s + (size_t)r * ldt;
                    int rl = row_limit(r0 + r, len, causal, off) - c0; /* visible in the tile */
                    if (rl > nc) rl = nc;
                    if (rl <= 0) { /* the row sees no key of this tile: P row = 0, O unchanged */
                        memset(sr, 0, sizeof(float) * nc);
                        continue;
                    }
                    /* m_new = max(m, rowmax(S)); P = exp(S − m_new) (lines 10–11) */
                    float mn = m[r];
#pragma omp simd reduction(max : mn)
                    for (int c = 0; c < rl; c++) mn = sr[c] > mn ? sr[c] : mn;
#pragma omp simd
                    for (int c = 0; c < rl; c++) sr[c] = cpu_expf(sr[c] - mn);
                    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                    for (int c = 0; c < rl; c++) sum += sr[c];
                    for (int c = rl; c < nc; c++) sr[c] = 0.0f; /* masked keys */
                    /* l = e^{m − m_new} l + rowsum(P); O = e^{m − m_new} O (line 12); when m
                     * was −∞ both l and O are still 0, and expf(−∞) = 0 */
                    const float alpha = expf(m[r] - mn);
                    l[r] = alpha * l[r] + sum;
                    m[r] = mn;
                    if (alpha != 1.0f) {
                        float *restrict orow = ob + (size_t)r * Dv;
#pragma omp simd
                        for (int d = 0; d < Dv; d++) orow[d] *= alpha;
                    }
                }
                /* O += P V_j (line 12) */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, Dv, nc, 1.0f, s, ldt,
                            vb + (size_t)c0 * Dv, Dv, 1.0f, ob, Dv);
            }
            /* O = O / l; lse = m + log l (lines 12–13). l = 0 only for a row with no visible
             * key (otherwise its maximum contributes e^0 = 1): out stays 0, lse = −∞. */
            for (int r = 0; r < nr; r++) {
                if (l[r] > 0.0f) {
                    const float inv = 1.0f / l[r];
                    float *restrict orow = ob + (size_t)r * Dv;
#pragma omp simd
                    for (int d = 0; d < Dv; d++) orow[d] *= inv;
                    lb[r] = m[r] + logf(l[r]);
                } else {
                    lb[r] = -INFINITY;
                }
            }
        }
    }
}

static void cpu_flash_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                    const float *q, const float *k, const float *v,
                                    const float *out, const float *lse, const int *key_len,
                                    float scale, int causal, int B, int NH, int Tq, int Tk, int D,
                                    int Dv, float *work) {
    if (!dq && !dk && !dv) return;
    if (B <= 0 || NH <= 0 || Tq <= 0 || Tk <= 0) return;
    const int off = Tk - Tq;
    const int BNH = B * NH;
    const int need_ds = dq || dk;
    const int ldt = tile_keys(Tk);                      /* row stride of the tiles */
    const int br = causal ? FLASH_BR_CAUSAL : FLASH_BR; /* rows per block */
#pragma omp parallel if ((double)B * NH * Tq * Tk * (D + Dv) > FLASH_PAR_MIN)
    {
        /* p [br, bc] (probabilities), ds [br, bc] (dp, then ds) */
        float *p = work + (size_t)omp_get_thread_num() * thread_work(Tq, Tk);
        float *ds = p + thread_work(Tq, Tk) / 2;
        float Dr[FLASH_BR]; /* rowsum(dout ⊙ out) */
        int lim[FLASH_BR];  /* visible keys of each row of the block */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BNH; bh++) {
            const int b = bh / NH;
            const int len = cpu_key_count(key_len, b, Tk);
            const float *kb = k + (size_t)bh * Tk * D;  /* [Tk, D] */
            const float *vb = v + (size_t)bh * Tk * Dv; /* [Tk, Dv] */
            float *dkb = dk ? dk + (size_t)bh * Tk * D : NULL;
            float *dvb = dv ? dv + (size_t)bh * Tk * Dv : NULL;
            for (int r0 = 0; r0 < Tq; r0 += br) {
                const int nr = Tq - r0 < br ? Tq - r0 : br;
                const float *qb = q + ((size_t)bh * Tq + r0) * D;      /* [nr, D] */
                const float *gob = dout + ((size_t)bh * Tq + r0) * Dv; /* [nr, Dv] */
                const float *ob = out + ((size_t)bh * Tq + r0) * Dv;   /* [nr, Dv] */
                const float *lb = lse + (size_t)bh * Tq + r0;          /* [nr] */
                float *dqb = dq ? dq + ((size_t)bh * Tq + r0) * D : NULL;
                int kend = 0;
                for (int r = 0; r < nr; r++) {
                    /* a row with lse = −∞ saw no key in the forward: it takes no part */
                    lim[r] = lb[r] == -INFINITY ? 0 : row_limit(r0 + r, len, causal, off);
                    if (lim[r] > kend) kend = lim[r];
                    /* Dr = rowsum(dO ⊙ O) (Algorithm 2 line 19: Σ_s P_s dP_s = dO·O) */
                    const float *gr = gob + (size_t)r * Dv, *orow = ob + (size_t)r * Dv;
                    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
                    for (int d = 0; d < Dv; d++) acc += gr[d] * orow[d];
                    Dr[r] = acc;
                }
                for (int c0 = 0; c0 < kend; c0 += ldt) {
                    const int nc = kend - c0 < ldt ? kend - c0 : ldt;
                    const float *kj = kb + (size_t)c0 * D;  /* K_j [nc, D] */
                    const float *vj = vb + (size_t)c0 * Dv; /* V_j [nc, Dv] */
                    /* S = scale · Q_i K_jᵀ; P = exp(S − lse), 0 where masked (lines 11–13) */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, nc, D, scale, qb, D,
                                kj, D, 0.0f, p, ldt);
                    for (int r = 0; r < nr; r++) {
                        float *restrict pr = p + (size_t)r * ldt;
                        int rl = lim[r] - c0;
                        if (rl < 0) rl = 0;
                        if (rl > nc) rl = nc;
                        const float L = lb[r];
#pragma omp simd
                        for (int c = 0; c < rl; c++) pr[c] = cpu_expf(pr[c] - L);
                        for (int c = rl; c < nc; c++) pr[c] = 0.0f;
                    }
                    /* dV_j += P_ijᵀ dO_i (out = P V; line 16) */
                    if (dvb)
                        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nc, Dv, nr, 1.0f, p,
                                    ldt, gob, Dv, 1.0f, dvb + (size_t)c0 * Dv, Dv);
                    if (!need_ds) continue;
                    /* dP = dO_i V_jᵀ (line 17) */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, nc, Dv, 1.0f, gob, Dv,
                                vj, Dv, 0.0f, ds, ldt);
                    /* dS = P ⊙ (dP − Dr) (line 20), times scale from S = scale · Q Kᵀ */
                    for (int r = 0; r < nr; r++) {
                        float *restrict dsr = ds + (size_t)r * ldt;
                        const float *restrict pr = p + (size_t)r * ldt;
                        const float dr = Dr[r];
#pragma omp simd
                        for (int c = 0; c < nc; c++) dsr[c] = pr[c] * (dsr[c] - dr) * scale;
                    }
                    /* dQ_i += dS K_j (line 21) */
                    if (dqb)
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, D, nc, 1.0f, ds,
                                    ldt, kj, D, 1.0f, dqb, D);
                    /* dK_j += dSᵀ Q_i (line 22) */
                    if (dkb)
                        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nc, D, nr, 1.0f, ds,
                                    ldt, qb, D, 1.0f, dkb + (size_t)c0 * D, D);
                }
            }
        }
    }
}

void cpu_register_flash(Backend *be) {
    be->flash_attn_workspace = cpu_flash_attn_workspace;
    be->flash_attn_forward = cpu_flash_attn_forward;
    be->flash_attn_backward = cpu_flash_attn_backward;
}
