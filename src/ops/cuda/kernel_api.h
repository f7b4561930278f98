/* ops/cuda/kernel_api.h — what every kernel header (src/ops/cuda/<family>.cuh) includes, so that
 * one kernel source compiles two ways (docs/design.md §11):
 *
 *   nvcc (__CUDACC__)        for the GPU: the macros below are plain CUDA;
 *   a host C++ compiler       with TRAINER_SIMT defined (the emulated build, -DTRAINER_SIMT=ON):
 *                             the CUDA keywords, built-in variables, barriers and warp collectives
 *                             come from the SIMT emulation (ops/cuda/simt/simt.h), where each CUDA
 *                             thread is a fiber (tests, never shipped in the trainer).
 *
 * Rules for kernel code (the emulation depends on them):
 *   - Launch only through LAUNCH(kernel, grid, block, smem_bytes, args...); it also checks the
 *     launch (CUDA_CHECK_LAUNCH). A template kernel is launched through a named pointer
 *     (auto k = k_tile<64>; LAUNCH(k, ...)), since a macro argument cannot hold "<a, b>".
 *   - Dynamic shared memory only through DYN_SHARED(type, name) at the top of the kernel; its size
 *     is LAUNCH's smem_bytes.
 *   - Static shared memory is declared `__shared__ T name[...]` inside the kernel body.
 *   - Warp collectives only the *_sync forms with an explicit mask (__shfl_sync, __shfl_xor_sync,
 *     __shfl_down_sync, __shfl_up_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp).
 *   - Tensor cores only through cuBLAS(Lt) (or the WMMA API): no inline PTX.
 *   - No float atomics (docs/design.md §9: results are deterministic); integer atomics are allowed.
 *   - Every kernel declares __launch_bounds__(max threads per block) (scripts/ptxas_check.sh reads
 *     it, through the PTX's .maxntid, to compute occupancy; a kernel without it fails the check).
 *   - A kernel that uses DYN_SHARED states the most dynamic shared memory its host code launches
 *     it with, in bytes, in a comment before its body: `// smem-max: 16384` (a literal number;
 *     append `optin` when the host code raises cudaFuncAttributeMaxDynamicSharedMemorySize
 *     through a pointer instead of naming the kernel in cudaFuncSetAttribute). The host code
 *     must never launch it with more. scripts/ptxas_check.sh adds it to the static shared memory
 *     for the occupancy table (docs/cuda_kernels.md) and fails above 227 KiB, or above 48 KiB
 *     without the attribute.
 *
 * Errors: a bad launch is reported by CUDA_CHECK_LAUNCH (abort with file:line); under the
 * emulation a barrier divergence, deadlock or bad shuffle aborts naming the kernel, block, thread
 * and file:line. Source: the CUDA C++ Programming Guide (execution configuration, §B.6 barriers,
 * §B.22 warp shuffles); docs/gpu.md.
 */
#ifndef TRAINER_CUDA_KERNEL_API_H
#define TRAINER_CUDA_KERNEL_API_H

#include "ops/cuda/cuda_check.h"

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#define LAUNCH(kernel, grid, block, smem, ...)                                                 \
    do {                                                                                       \
        kernel<<<(grid), (block), (smem)>>>(__VA_ARGS__);                                      \
        CUDA_CHECK_LAUNCH();                                                                   \
    } while (0)

#define DYN_SHARED(type, name)                                                                 \
    extern __shared__ __align__(16) unsigned char trainer_dyn_smem_[];                         \
    type *name = reinterpret_cast<type *>(trainer_dyn_smem_)

#elif defined(TRAINER_SIMT)

#include "ops/cuda/simt/simt.h"

/* The kernel call runs once per emulated thread, inside the launch's fibers. As on a GPU, more
 * than 48 KiB of dynamic shared memory needs cudaFuncSetAttribute first: the host stand-in of the
 * runtime (ops/cuda/simt/include, declared through cuda_check.h) keeps the attribute, and an
 * over-size launch runs nothing and sets the last error, which CUDA_CHECK_LAUNCH reports. */
#define LAUNCH(kernel, grid, block, smem, ...)                                                 \
    do {                                                                                       \
        if (cuda_host_check_launch_smem((const void *)(kernel), (size_t)(smem)))               \
            simt::launch(#kernel, __FILE__, __LINE__, dim3(grid), dim3(block), (size_t)(smem), \
                         [=]() { kernel(__VA_ARGS__); });                                      \
        CUDA_CHECK_LAUNCH();                                                                   \
    } while (0)

#define DYN_SHARED(type, name) type *name = reinterpret_cast<type *>(simt::dynamic_shared())

#else
#error "ops/cuda/kernel_api.h: compile with nvcc, or with TRAINER_SIMT defined (emulated build)"
#endif

#endif
