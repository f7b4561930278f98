/* cuda_runtime_api.h — HOST STAND-IN (emulated build only, -DTRAINER_SIMT=ON; never on a real
 * build's include path). Declares the subset of the CUDA runtime API that src/ops/cuda/ uses, with
 * CUDA's names, types and enum values; implemented in ../host_cuda.cc, where "device" memory is
 * host memory and streams/events are ordering no-ops (everything runs synchronously on the
 * calling thread). Usable from C and C++. Source: CUDA Runtime API reference (CUDA 13.0);
 * docs/design.md §11.
 *
 * Errors: as CUDA: each call returns a cudaError_t, and a failing call also sets the "last error"
 * that cudaGetLastError returns and clears (cudaPeekAtLastError returns without clearing).
 */
#ifndef TRAINER_SIMT_CUDA_RUNTIME_API_H
#define TRAINER_SIMT_CUDA_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The error codes used here, with CUDA's values. */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorLaunchFailure = 719,
    cudaErrorUnknown = 999
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

/* Device attributes (cudaDeviceGetAttribute), CUDA's values. */
typedef enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxBlockDimX = 2,
    cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrMaxRegistersPerBlock = 12,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMaxThreadsPerMultiProcessor = 39,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
    cudaDevAttrMaxRegistersPerMultiprocessor = 82,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
} cudaDeviceAttr;

/* Kernel attributes (cudaFuncSetAttribute), CUDA's values. */
typedef enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9
} cudaFuncAttribute;

/* The fields of CUDA's cudaDeviceProp that code here may read (a subset: the real struct has
 * more; only the emulated build sees this one). */
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;          /* bytes */
    size_t sharedMemPerBlock;       /* bytes without opt-in (48 KiB) */
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;                  /* kHz */
    size_t totalConstMem;
    int major, minor;               /* compute capability */
    int multiProcessorCount;
    int l2CacheSize;                /* bytes */
    int maxThreadsPerMultiProcessor;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    size_t sharedMemPerBlockOptin;  /* bytes with cudaFuncAttributeMaxDynamicSharedMemorySize */
};
typedef struct cudaDeviceProp cudaDeviceProp;

typedef struct CUstream_st *cudaStream_t; /* opaque; 0 = the legacy default stream */
typedef struct CUevent_st *cudaEvent_t;   /* opaque */

/* Device management: one device (0), "SIMT emulation (host)", H100-like limits. */
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);

/* Errors. */
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);

/* Memory: cudaMalloc gives 256-byte aligned host memory (uninitialised, as on a GPU: filled with
 * 0xFF bytes so that a read before a write shows as NaN); cudaFree(NULL) is a no-op, a pointer
 * not from cudaMalloc is cudaErrorInvalidValue. Copies and sets are synchronous. */
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

/* Streams and events: handles that order nothing (all work is already synchronous). */
cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
/* cudaSuccess: the stream's work has completed (always, here; a GPU may answer cudaErrorNotReady). */
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* Kernel attributes. func is the kernel (any function pointer). MaxDynamicSharedMemorySize must be
 * 0..227 KiB; the value is recorded per kernel (cuda_host_max_dynamic_smem reads it back). */
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);

/* Emulation-only: the dynamic shared memory a kernel may use: 48 KiB, or what
 * cudaFuncSetAttribute(MaxDynamicSharedMemorySize) allowed for func. */
size_t cuda_host_max_dynamic_smem(const void *func);

/* Emulation-only, called by kernel_api.h's LAUNCH before each launch: 1 if func may be launched
 * with smem_bytes of dynamic shared memory (cuda_host_max_dynamic_smem); else 0, with the last
 * error set to cudaErrorInvalidValue as a real launch would (CUDA_CHECK_LAUNCH then reports it). */
int cuda_host_check_launch_smem(const void *func, size_t smem_bytes);

/* Emulation-only: successful cudaMalloc calls (of more than 0 bytes) since the program started;
 * tests/model/test_model_cuda.c checks that training steps make none (docs/design.md §2, §6). */
unsigned long long cuda_host_malloc_calls(void);

#ifdef __cplusplus
}
#endif

#endif
