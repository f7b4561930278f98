/* ops/cuda/attn_common.cuh — what the attention kernels share (attn_sdp.cuh, attn_additive.cuh,
 * flash.cuh). Written against ops/cuda/kernel_api.h.
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

#endif
