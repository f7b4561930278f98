/* ops/cuda/simt/simt.h — the SIMT emulation: CUDA kernel source compiled by a host C++17 compiler
 * runs on the CPU, each CUDA thread a fiber (docs/design.md §11; docs/gpu.md).
 * Included by ops/cuda/kernel_api.h when TRAINER_SIMT is defined; tests only, never the trainer.
 *
 * What it provides (names as CUDA spells them):
 *   keywords      __global__ (a kernel; expands to `static`, so do not write `static __global__`),
 *                 __device__, __host__, __constant__, __forceinline__ (not __noinline__:
 *                 libstdc++ spells its own attribute that way),
 *                 __launch_bounds__(...), __restrict__, __align__(n), __shared__
 *   built-ins     threadIdx, blockIdx (uint3), blockDim, gridDim (dim3), warpSize (32)
 *   barriers      __syncthreads(), __syncwarp(mask)
 *   warp ops      __shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync (any trivially
 *                 copyable type of at most 8 bytes: int, unsigned, float, double, long long, ...),
 *                 __ballot_sync, __any_sync, __all_sync, __activemask()
 *   math          __expf, __logf, __powf, __sinf, __cosf, __fdividef, rsqrtf, __saturatef,
 *                 __float2int_rn, __int_as_float, __float_as_int, __ldg, min/max; <cmath> in scope
 *   bits          __ffs
 *   atomics       atomicAdd/Sub/Max/Min/Exch/CAS on int, unsigned, unsigned long long (real
 *                 atomics, relaxed order as on the GPU). Float atomics are deleted: a use does
 *                 not compile (docs/design.md §9).
 *   launch        simt::launch(kernel name, file, line, grid, block, smem bytes, body): runs
 *                 body() once per thread of every block (kernel_api.h's LAUNCH calls it);
 *                 simt::dynamic_shared(): the block's dynamic shared memory (smem bytes).
 *
 * Semantics (CUDA C++ Programming Guide: §B.6 synchronization functions, §B.22 warp shuffle,
 * §B.23 warp vote): a block runs on one OS thread; a fiber runs until __syncthreads or a warp
 * collective; when no fiber can run the scheduler completes the warp collectives whose masked
 * lanes have all arrived, else the block barrier once every thread waits at it, else it reports
 * the error. Errors (abort with a message naming kernel, block, thread(s) and file:line, or
 * recorded: simt_c.h's simt_set_fail_mode): bad launch configuration; a __syncthreads not reached
 * by every thread of the block (threads that returned do not count: strict); threads waiting at
 * different __syncthreads; a warp-collective mask naming an absent, exited or elsewhere-waiting
 * lane or not naming the caller; lanes of one collective with different masks or operations; a
 * shuffle width that is not a power of two in 1..32. A shuffle whose source lane is outside the
 * mask reads poison (all bits set: NaN for float).
 *
 * Shared memory: `__shared__ T name[...]` is function-static storage, filled with 0xFF bytes (NaN)
 * at every block start in the plain build, so a read before a write shows. Rule (gcc): declare
 * __shared__ only in kernels (__global__) or in static device functions — gcc refuses to mix the
 * static storage of inline and non-inline functions in one section ("section type conflict").
 * Under ASan it is a plain static (not poisoned: ASan gives it redzones instead); under TSan it is
 * thread_local (blocks run concurrently), not poisoned. Dynamic shared memory is a heap buffer of
 * exactly the launch's size, 0xFF-filled at every block start (an overrun is an ASan report).
 *
 * Schedules (simt_c.h): the order in which runnable fibers are resumed and blocks are run:
 * forward, reverse or seeded random. A race-free kernel gives the same bits under every schedule.
 * Not modelled: weak memory order, timing, tensor-core PTX, fast-math code generation.
 */
#ifndef TRAINER_SIMT_H
#define TRAINER_SIMT_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/sanitizers.h"
#include "simt_c.h"
#include "simt_types.h"

/* Which variant of the emulation this translation unit is compiled for. */
#if defined(__SANITIZE_THREAD__) || defined(SIMT_TSAN)
#define SIMT_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIMT_TSAN_BUILD 1
#endif
#endif

/* ---- keywords ---------------------------------------------------------------------------- */
#define __global__ static __attribute__((unused))
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#ifndef __restrict__
#define __restrict__ __restrict
#endif
#if defined(SIMT_TSAN_BUILD)
#define __shared__ static thread_local
#elif TRAINER_ASAN
#define __shared__ static
#else
#define __shared__ static __attribute__((section("simt_shared")))
#endif

namespace simt {
namespace detail {

/* One emulated thread's built-in variables (the current fiber's, through g_ctx). */
struct Ctx {
    uint3 tid, bid;
    dim3 bdim, gdim;
};
extern __thread const Ctx *g_ctx;

enum WarpOp { OP_SYNCWARP, OP_SHFL_IDX, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR, OP_BALLOT, OP_ANY,
              OP_ALL };

/* The block barrier at file:line. */
void syncthreads(const char *file, int line);
/* A warp collective: deposits val (the low sizeof(T) bytes of a shuffle's value, or a vote's
 * predicate), waits for every lane of mask, returns this lane's result. */
uint64_t warp_op(WarpOp op, unsigned mask, uint64_t val, unsigned arg, int width,
                 const char *file, int line);
unsigned activemask();

typedef void (*BodyFn)(const void *body);
void launch_impl(const char *kernel, const char *file, int line, dim3 grid, dim3 block,
                 size_t smem_bytes, BodyFn fn, const void *body);

template <class T>
inline T shfl(WarpOp op, unsigned mask, T var, unsigned arg, int width, const char *file,
              int line) {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                  "simt: a shuffled value must be trivially copyable and at most 8 bytes");
    uint64_t u = 0;
    std::memcpy(&u, &var, sizeof(T));
    uint64_t r = warp_op(op, mask, u, arg, width, file, line);
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
}

} // namespace detail

/* Runs body() once per thread: grid (blocks, each > 0) x block (threads, 1..1024 in all) with
 * smem_bytes (<= 227 KiB) of dynamic shared memory; kernel, file and line name the launch in
 * errors. Returns when every block has finished (or, in record mode, at the first error). */
template <class F>
void launch(const char *kernel, const char *file, int line, dim3 grid, dim3 block,
            size_t smem_bytes, const F &body) {
    detail::launch_impl(
        kernel, file, line, grid, block, smem_bytes,
        [](const void *p) { (*static_cast<const F *>(p))(); }, &body);
}

/* The current block's dynamic shared memory: exactly the launch's smem_bytes. */
void *dynamic_shared();

} // namespace simt

/* ---- built-in variables -------------------------------------------------------------------- */
#define threadIdx (::simt::detail::g_ctx->tid)
#define blockIdx (::simt::detail::g_ctx->bid)
#define blockDim (::simt::detail::g_ctx->bdim)
#define gridDim (::simt::detail::g_ctx->gdim)
#define warpSize 32

/* ---- barriers and warp collectives (the call site comes from the default arguments) ------- */
inline void __syncthreads(const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    simt::detail::syncthreads(file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char *file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
    simt::detail::warp_op(simt::detail::OP_SYNCWARP, mask, 0, 0, 32, file, line);
}
template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32,
                     const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    return simt::detail::shfl(simt::detail::OP_SHFL_IDX, mask, var, (unsigned)srcLane, width,
                              file, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                        const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    return simt::detail::shfl(simt::detail::OP_SHFL_UP, mask, var, delta, width, file, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                          const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    return simt::detail::shfl(simt::detail::OP_SHFL_DOWN, mask, var, delta, width, file, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32,
                         const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    return simt::detail::shfl(simt::detail::OP_SHFL_XOR, mask, var, (unsigned)laneMask, width,
                              file, line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char *file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
    return (unsigned)simt::detail::warp_op(simt::detail::OP_BALLOT, mask, pred != 0, 0, 32, file,
                                           line);
}
inline int __any_sync(unsigned mask, int pred, const char *file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
    return (int)simt::detail::warp_op(simt::detail::OP_ANY, mask, pred != 0, 0, 32, file, line);
}
inline int __all_sync(unsigned mask, int pred, const char *file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
    return (int)simt::detail::warp_op(simt::detail::OP_ALL, mask, pred != 0, 0, 32, file, line);
}
inline unsigned __activemask() { return simt::detail::activemask(); }

/* ---- math and bit intrinsics (host definitions, IEEE-exact where CUDA's are approximate) ---- */
/* glibc declares __expf and __logf itself (same meaning), so these are macros. */
#define __expf expf
#define __logf logf
#define __powf powf
#define __sinf sinf
#define __cosf cosf
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}
inline int __float_as_int(float f) {
    int i;
    std::memcpy(&i, &f, sizeof i);
    return i;
}
inline unsigned __float_as_uint(float f) {
    unsigned i;
    std::memcpy(&i, &f, sizeof i);
    return i;
}
inline float __uint_as_float(unsigned i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}
inline int __ffs(int x) { return __builtin_ffs(x); }
template <class T> inline T __ldg(const T *p) { return *p; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

/* ---- integer atomics (relaxed, as CUDA's atomicXxx) ----------------------------------------- */
#define SIMT_ATOMICS_(T)                                                                        \
    inline T atomicAdd(T *a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }      \
    inline T atomicSub(T *a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }      \
    inline T atomicExch(T *a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }    \
    inline T atomicCAS(T *a, T cmp, T v) {                                                     \
        __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);     \
        return cmp;                                                                            \
    }                                                                                          \
    inline T atomicMax(T *a, T v) {                                                            \
        T old = __atomic_load_n(a, __ATOMIC_RELAXED);                                          \
        while (old < v && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED,      \
                                                       __ATOMIC_RELAXED)) {                    \
        }                                                                                      \
        return old;                                                                            \
    }                                                                                          \
    inline T atomicMin(T *a, T v) {                                                            \
        T old = __atomic_load_n(a, __ATOMIC_RELAXED);                                          \
        while (old > v && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED,      \
                                                       __ATOMIC_RELAXED)) {                    \
        }                                                                                      \
        return old;                                                                            \
    }
SIMT_ATOMICS_(int)
SIMT_ATOMICS_(unsigned)
SIMT_ATOMICS_(unsigned long long)
#undef SIMT_ATOMICS_
/* The project forbids float atomics (docs/design.md §9: results must not depend on thread order). */
float atomicAdd(float *, float) = delete;
double atomicAdd(double *, double) = delete;
float atomicSub(float *, float) = delete;
float atomicMax(float *, float) = delete;
float atomicMin(float *, float) = delete;
float atomicExch(float *, float) = delete;

#endif
