/* ops/cuda/rnn_cudnn.cuh — the one kernel of the cuDNN RNN path (host side: rnn_cudnn.cu).
 * Written against ops/cuda/kernel_api.h. Shapes: T steps, B rows, C columns; v [T,B,C]
 * time-major, len [B] (device, int32). One thread per element, grid-stride; one writer per float.
 */
#ifndef TRAINER_CUDA_RNN_CUDNN_CUH
#define TRAINER_CUDA_RNN_CUDNN_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

/* v[t,b,:] = 0 for t >= len[b] (the padding steps of sequence b). cuDNN's documentation does not
 * say what cudnnRNNBackwardData_v8 leaves in dx at padding positions; our cells give 0 there, so
 * the op writes 0 itself. Launch: cuda_ew_blocks(T·B·C) blocks of 256. */
__global__ void __launch_bounds__(256)
    k_rnn_zero_padding(float *v, const int *len, int T, int B, int C) {
    size_t total = (size_t)T * B * C, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t row = k / (size_t)C; /* t·B + b */
        int t = (int)(row / (size_t)B), b = (int)(row % (size_t)B);
        if (t >= len[b]) v[k] = 0.0f;
    }
}

#endif
