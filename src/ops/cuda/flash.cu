/* ops/cuda/flash.cu — flash_attn_forward, flash_attn_backward and flash_attn_workspace on the GPU
 * (Dao et al. 2022, Algorithms 1 and 2; semantics: ops/ops.h; kernels and determinism:
 * flash.cuh). The workspace holds D_t = rowsum(dout ⊙ out) [B·NH·Tq]; the tile length is chosen
 * per call so the tiles fit in FL_SMEM_MAX bytes of dynamic shared memory (at most 64 rows; D + Dv
 * up to about 6,000 floats). Errors: a failed launch aborts (LAUNCH); D + Dv too wide for one
 * tile row is a programmer error (CHECK).
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/flash.cuh"

/* Rows per tile so that `per_row` floats per tile row plus `fixed` floats fit in FL_SMEM_MAX. */
static int flash_tile(int per_row, int fixed) {
    long avail = FL_SMEM_MAX / (long)sizeof(float) - fixed;
    long t = avail / per_row;
    CHECK(t >= 1, "flash attention: D + Dv too large for one tile row in 48 KiB of shared memory");
    return t > 64 ? 64 : (int)t;
}

static size_t cu_flash_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)Tk, (void)D, (void)Dv;
    return (size_t)B * NH * Tq + 1;
}

static void cu_flash_attn_forward(float *out, float *lse, const float *q, const float *k,
                                  const float *v, const int *key_len, float scale, int causal,
                                  int B, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    (void)work;
    if (B * NH <= 0 || Tq <= 0) return;
    int tile = flash_tile(D + Dv + 1, D + Dv + 3);
    size_t smem = sizeof(float) * ((size_t)tile * (D + Dv) + tile + D + Dv + 3);
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH(k_flash_forward, grid, FL_THREADS, smem, out, lse, q, k, v, key_len, scale, causal, NH,
           Tq, Tk, D, Dv, tile);
}

static void cu_flash_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                   const float *q, const float *k, const float *v,
                                   const float *out, const float *lse, const int *key_len,
                                   float scale, int causal, int B, int NH, int Tq, int Tk, int D,
                                   int Dv, float *work) {
    int R = B * NH;
    if ((!dq && !dk && !dv) || R <= 0 || Tq <= 0 || Tk <= 0) return;
    int rows = R * Tq;
    LAUNCH(k_flash_rowdot, (rows + FL_THREADS - 1) / FL_THREADS, FL_THREADS, 0, work, dout, out,
           rows, Dv);
    if (dq) {
        int tile = flash_tile(D + Dv + 1, 2 * D + Dv);
        size_t smem = sizeof(float) * ((size_t)tile * (D + Dv) + tile + 2 * (size_t)D + Dv);
        dim3 grid((unsigned)Tq, (unsigned)R);
        LAUNCH(k_flash_backward_dq, grid, FL_THREADS, smem, dq, dout, q, k, v, lse, work, key_len,
               scale, causal, NH, Tq, Tk, D, Dv, tile);
    }
    if (dk || dv) {
        int tile = flash_tile(D + Dv + 2, 2 * (D + Dv));
        size_t smem = sizeof(float) * ((size_t)tile * (D + Dv) + 2 * (size_t)tile + 2 * ((size_t)D + Dv));
        dim3 grid((unsigned)Tk, (unsigned)R);
        LAUNCH(k_flash_backward_dkdv, grid, FL_THREADS, smem, dk, dv, dout, q, k, v, lse, work,
               key_len, scale, causal, NH, Tq, Tk, D, Dv, tile);
    }
}

void cuda_register_flash(Backend *be) {
    be->flash_attn_forward = cu_flash_attn_forward;
    be->flash_attn_backward = cu_flash_attn_backward;
    be->flash_attn_workspace = cu_flash_attn_workspace;
}
