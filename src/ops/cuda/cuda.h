/* ops/cuda/cuda.h — the CUDA backend's table and its process-wide controls: the device it starts
 * on, the precision of its products and their bf16 staging buffer, and what the build holds
 * (cuDNN, the SIMT emulation). A C header, included by the C code and, through
 * cuda_internal.h, by the backend's .cu files; a build without CUDA links
 * ops/cuda/backend_cuda_none.c, whose versions refuse or do nothing as each says. The trainer
 * and the commands open a backend through backend_open (ops.h), which calls these, and code above
 * ops/ asks what they say through backend_can_run and backend_info (ops.h), never this header;
 * tests and benchmarks call them directly. Memory: device memory. Errors: none but those named at each
 * function. */
#ifndef TRAINER_OPS_CUDA_H
#define TRAINER_OPS_CUDA_H

#include <stddef.h>

#include "ops/ops.h"

/* The CUDA backend, or NULL with a message in err_msg (size err_len bytes, host) when the build
 * has no CUDA or no device is present (the message says which and to use train.device = cpu). */
const Backend *backend_cuda(char *err_msg, size_t err_len);

/* The device backend_cuda() will start on, for one GPU per rank (docs/distributed.md): ordinal
 * `index` modulo cudaGetDeviceCount() (the trainer passes its local rank, dist_local_rank()).
 * Call it before the first backend_cuda(); later it changes nothing. Default 0. index < 0 is
 * taken as 0. No errors (a build without CUDA ignores it). */
void backend_cuda_use_device(int index);

/* The ordinal of the device backend_cuda() started on (-1 before it succeeded or without
 * CUDA). No errors. */
int backend_cuda_device_index(void);

/* Sets the precision of every later cuda matmul (one of BACKEND_PRECISION_*, ops.h; default
 * fp32): storage, accumulation, master weights and Adam state stay fp32; only matmul's A and B
 * inputs are rounded for the tensor cores — fp32: not at all (CUBLAS_COMPUTE_32F); tf32: to 10
 * mantissa bits (cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32; NVIDIA A100 whitepaper, TF32); bf16: to
 * 7, nearest even, by our kernel before a CUDA_R_16BF product (cuBLAS's _FAST_16BF left fp32
 * inputs at TF32 on an H100: ops/cuda/matmul.cu). Call it at start-up, after backend_cuda(). An
 * unknown value aborts (programmer error). In a build without CUDA it does nothing. */
void backend_cuda_set_precision(int precision);

/* Elements in each half of the bf16 staging buffer (ours, ops/cuda/matmul.cu): at precision bf16
 * the CUDA backend rounds a product's op(A) and op(B) into it, 2 bytes an element, and splits
 * larger products into blocks of rows and columns of the output (each with all of K). Default
 * 16 Mi (64 MiB in all). The buffer is allocated by backend_cuda_set_precision(bf16), or here when
 * it is allocated already. Returns the size before. A product of K above it aborts. elems < 1
 * aborts (programmer error). In a build without CUDA it does nothing and returns 0. */
size_t backend_cuda_set_bf16_stage(size_t elems);

/* The CUDA device's name ("" before backend_cuda() succeeded or without CUDA); "SIMT emulation
 * (host)" in the emulated build. */
const char *backend_cuda_device_name(void);

/* 1 if this build's CUDA backend was built with cuDNN (TRAINER_CUDNN: the rnn_seq_* entries can
 * exist), else 0 (no CUDA, the SIMT emulation, or cuDNN not found at build time). Whether the
 * handle started is told by backend_cuda()'s table (rnn_seq_forward non-NULL). No errors. */
int backend_cuda_has_cudnn(void);

/* 1 in the emulated build (-DTRAINER_SIMT=ON), else 0. No errors. */
int backend_cuda_emulated(void);

#endif
