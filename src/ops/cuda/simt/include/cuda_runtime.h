/* cuda_runtime.h — HOST STAND-IN (emulated build only, -DTRAINER_SIMT=ON): the runtime API of
 * cuda_runtime_api.h plus, for C++, dim3/uint3 (ops/cuda/simt/simt_types.h) and the C++ template
 * forms of cudaMalloc (typed pointer) and cudaFuncSetAttribute (a kernel named directly). The
 * emulated build force-includes it into every .cu file, as nvcc does. Source: CUDA Runtime API
 * reference.
 */
#ifndef TRAINER_SIMT_CUDA_RUNTIME_H
#define TRAINER_SIMT_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include "ops/cuda/simt/simt_types.h"

/* cudaMalloc into a typed pointer (as CUDA's C++ API). */
template <class T> static inline cudaError_t cudaMalloc(T **devPtr, size_t size) {
    return ::cudaMalloc(reinterpret_cast<void **>(devPtr), size);
}

/* cudaFuncSetAttribute(kernel, attr, value) for a kernel named directly (as CUDA's C++ API). */
template <class T>
static inline cudaError_t cudaFuncSetAttribute(T *func, cudaFuncAttribute attr, int value) {
    return cudaFuncSetAttribute(reinterpret_cast<const void *>(func), attr, value);
}
#endif

#endif
