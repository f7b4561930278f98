/* ops/cuda/attn_common.cuh — what the attention kernels share (attn_sdp.cuh, attn_additive.cuh,
 * flash.cuh, linear.cuh, efficient.cuh). Written against ops/cuda/kernel_api.h.
 */
#ifndef TRAINER_CUDA_ATTN_COMMON_CUH
#define TRAINER_CUDA_ATTN_COMMON_CUH

#include "ops/cuda/kernel_api.h"

/* The keys query t of batch row b may see are s < the returned limit: s < key_len[b] (key_len
 * NULL: all Tk) and, when causal, s <= t + (Tk − Tq) (ops/ops.h's masks). No errors. */
__device__ inline int attn_key_limit(const int *key_len, int b, int causal, int t, int Tq,
                                     int Tk) {
    int len = key_len ? key_len[b] : Tk;
    if (len > Tk) len = Tk;
    if (causal && t + (Tk - Tq) + 1 < len) len = t + (Tk - Tq) + 1;
    return len < 0 ? 0 : len;
}

/* Where row r = (b, h) of an attention operand with T rows of W floats starts: the heads split,
 * [B·NH, T, W] (merged = 0; its rows W apart), or merged, [B, T, NH, W] (merged = 1; its rows
 * NH·W apart: attn_row_stride). The CPU's attn_sdp.c row_start. No errors. */
__device__ inline size_t attn_row0(int merged, int r, int NH, int T, int W) {
    return merged ? ((size_t)(r / NH) * T * NH + (size_t)(r % NH)) * W : (size_t)r * T * W;
}

/* The distance in floats between rows t and t + 1 of one head (see attn_row0). */
__device__ inline int attn_row_stride(int merged, int NH, int W) {
    return merged ? NH * W : W;
}

#endif
