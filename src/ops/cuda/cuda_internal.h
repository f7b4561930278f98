/* ops/cuda/cuda_internal.h — what the CUDA backend's files share (C++; not a public header).
 *
 * The CUDA backend mirrors ops/cpu/ file by file: each op family is a kernel header
 * <family>.cuh (kernels only, written against ops/cuda/kernel_api.h so that the SIMT emulation
 * can run them) and a <family>.cu holding the host functions that launch them. Each .cu fills its
 * entries of the Backend table through one cuda_register_<family>(Backend *) declared here;
 * backend_cuda.cu calls them all and owns the memory functions and start-up.
 *
 * Shared state (defined in backend_cuda.cu): g_cuda_blas, the cuBLAS handle. Every launch goes to
 * the legacy default stream, so ops are ordered with each other and with cudaMemcpy.
 *
 * Launch shapes: element-wise kernels use CUDA_EW_THREADS threads per block and at most
 * CUDA_EW_MAX_BLOCKS blocks (grid-stride loops cover the rest); cuda_ew_blocks(n) gives the count.
 * Errors: as kernel_api.h (abort on a failed CUDA/cuBLAS call). Shapes: ops/ops.h.
 */
#ifndef TRAINER_CUDA_INTERNAL_H
#define TRAINER_CUDA_INTERNAL_H

#include <stddef.h>

#include <cublas_v2.h>

#include "ops/cuda/cuda_check.h"

extern "C" {
#include "core/common.h"
#include "ops/cuda/cuda.h"
#include "ops/ops.h"
}

constexpr int CUDA_EW_THREADS = 256;     /* threads per block, element-wise kernels */
constexpr int CUDA_EW_MAX_BLOCKS = 4096; /* grid-stride loops cover the rest */

/* Blocks for an element-wise kernel over n > 0 items. */
static inline unsigned cuda_ew_blocks(size_t n) {
    size_t b = (n + CUDA_EW_THREADS - 1) / CUDA_EW_THREADS;
    return (unsigned)(b < (size_t)CUDA_EW_MAX_BLOCKS ? b : (size_t)CUDA_EW_MAX_BLOCKS);
}

extern cublasHandle_t g_cuda_blas; /* created by backend_cuda() */

/* One per op family (<family>.cu): sets that family's entries of the table. Called once, by
 * backend_cuda.cu, while it builds the table. */
void cuda_register_matmul(Backend *be);        /* matmul (cuBLAS) */
void cuda_register_bias(Backend *be);          /* bias_forward, bias_backward */
void cuda_register_elementwise(Backend *be);   /* axpy, scale, sumsq, all_finite, tanh_* */
void cuda_register_shape(Backend *be);         /* concat2, transpose01, permute0213, write_step,
                                                  gather_rows, gather_rows_strided */
void cuda_register_dropout(Backend *be);       /* dropout_*, bias_relu_dropout_forward,
                                                  relu_dropout_backward */
void cuda_register_embedding(Backend *be);     /* embedding_* */
void cuda_register_adam(Backend *be);          /* adam_update */
void cuda_register_layernorm(Backend *be);     /* layernorm_* */
void cuda_register_softmax_xent(Backend *be);  /* xent_*, log_softmax, argmax */
void cuda_register_lstm(Backend *be);          /* lstm_cell_* */
void cuda_register_gru(Backend *be);           /* gru_cell_* */
void cuda_register_attn_sdp(Backend *be);      /* attn_forward, attn_backward, attn_workspace */
void cuda_register_attn_additive(Backend *be); /* additive_attn_* */
void cuda_register_attn_local(Backend *be);    /* local_attn_* */
void cuda_register_attn_pointwise(Backend *be); /* pointwise_attn_*, head_rmsnorm_* */
void cuda_register_flash(Backend *be);         /* flash_attn_* */
void cuda_register_linear(Backend *be);        /* linear_attn_* */
void cuda_register_efficient(Backend *be);     /* efficient_attn_* */
void cuda_register_linformer(Backend *be);     /* linformer_proj_* */
#ifdef TRAINER_CUDNN
void cuda_register_rnn_cudnn(Backend *be);     /* rnn_seq_sizes, rnn_seq_forward,
                                                  rnn_seq_backward (cuDNN; rnn_cudnn.cu): set
                                                  only if the cuDNN handle starts */
#endif

/* The precision backend_cuda_set_precision chose (BACKEND_PRECISION_*; matmul.cu). */
int cuda_precision(void);

#endif
