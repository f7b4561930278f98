// host_cuda.cc — the host implementation of the CUDA runtime stand-in (include/cuda_runtime_api.h)
// for the emulated build (-DTRAINER_SIMT=ON): "device" memory is host memory, every call is
// synchronous on the calling thread, streams and events are tokens that order nothing. One device,
// named "SIMT emulation (host)", reports H100-like limits (132 SMs, 227 KiB opt-in shared memory
// per block, 65,536 registers per SM). Errors follow CUDA: a failing call returns its code and sets
// the last error. With SIMT_NO_DEVICE=1 in the environment cudaGetDeviceCount reports no device,
// as on a machine without a GPU: the tests of what the emulated build does when the backend
// cannot start use it (a simt test must then fail, never skip). Source: CUDA Runtime API
// reference (CUDA 13.0); docs/design.md §11.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <map>
#include <unordered_map>

#include <cuda_runtime_api.h>

namespace {

constexpr size_t kAlign = 256;                       // cudaMalloc's guaranteed alignment
constexpr size_t kSmemDefault = 48 * 1024;           // dynamic shared memory without opt-in
constexpr size_t kSmemOptin = 227 * 1024;            // H100: max per block with opt-in
constexpr size_t kTotalMem = 80ull * 1024 * 1024 * 1024;

std::mutex g_mu;
std::map<const char *, size_t> g_allocs;                 // live cudaMalloc blocks -> bytes
std::unordered_map<const void *, int> g_func_smem;        // cudaFuncSetAttribute values
size_t g_live_bytes = 0;
unsigned long long g_malloc_calls = 0; // successful non-empty cudaMalloc calls since start
thread_local cudaError_t g_last = cudaSuccess;            // per host thread, as in CUDA
int g_stream_tokens, g_event_tokens;                      // addresses used as handles

cudaError_t fail(cudaError_t e) {
    if (e != cudaSuccess) g_last = e;
    return e;
}

// 1 if [p, p+n) lies inside one live allocation (device pointer check for copies/sets).
bool inside_alloc(const void *p, size_t n) {
    std::lock_guard<std::mutex> lk(g_mu);
    const char *c = static_cast<const char *>(p);
    auto it = g_allocs.upper_bound(c); /* first block starting after c */
    if (it == g_allocs.begin()) return false;
    --it;
    return c >= it->first && n <= it->second && (size_t)(c - it->first) <= it->second - n;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
    if (!count) return fail(cudaErrorInvalidValue);
    const char *none = getenv("SIMT_NO_DEVICE");
    *count = none && strcmp(none, "1") == 0 ? 0 : 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *device) {
    if (!device) return fail(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int device) {
    if (!p) return fail(cudaErrorInvalidValue);
    if (device != 0) return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    strncpy(p->name, "SIMT emulation (host)", sizeof p->name - 1);
    p->totalGlobalMem = kTotalMem;
    p->sharedMemPerBlock = kSmemDefault;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
    p->clockRate = 1980000;
    p->totalConstMem = 65536;
    p->major = 9, p->minor = 0;
    p->multiProcessorCount = 132;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->regsPerMultiprocessor = 65536;
    p->sharedMemPerBlockOptin = kSmemOptin;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    if (!value) return fail(cudaErrorInvalidValue);
    if (device != 0) return fail(cudaErrorInvalidDevice);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
        *value = (int)p.sharedMemPerMultiprocessor;
        break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaGetLastError(void) {
    cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return g_last; }

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorUnknown: return "cudaErrorUnknown";
    }
    return "cudaErrorUnrecognized";
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorUnknown: return "unknown error";
    }
    return "unrecognized error code";
}

cudaError_t cudaMalloc(void **devPtr, size_t size) {
    if (!devPtr) return fail(cudaErrorInvalidValue);
    *devPtr = nullptr;
    if (size == 0) return cudaSuccess; /* CUDA: a zero-byte request gives NULL and succeeds */
    /* exactly size bytes at cudaMalloc's alignment: under ASan a kernel that reads or writes
     * past the request is reported even inside the alignment's slack, as compute-sanitizer's
     * memcheck reports it on a GPU */
    void *p = nullptr;
    if (posix_memalign(&p, kAlign, size) != 0) p = nullptr;
    if (!p) return fail(cudaErrorMemoryAllocation);
    memset(p, 0xFF, size); /* device memory is uninitialised: reads before writes show as NaN */
    {
        std::lock_guard<std::mutex> lk(g_mu);
        g_allocs[static_cast<const char *>(p)] = size;
        g_live_bytes += size;
        g_malloc_calls++;
    }
    *devPtr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr) {
    if (!devPtr) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        auto it = g_allocs.find(static_cast<const char *>(devPtr));
        if (it == g_allocs.end()) return fail(cudaErrorInvalidValue);
        g_live_bytes -= it->second;
        g_allocs.erase(it);
    }
    free(devPtr);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    if (count == 0) return cudaSuccess;
    if (!dst || !src) return fail(cudaErrorInvalidValue);
    bool dst_dev, src_dev;
    switch (kind) {
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; break;
    case cudaMemcpyHostToDevice: dst_dev = true, src_dev = false; break;
    case cudaMemcpyDeviceToHost: dst_dev = false, src_dev = true; break;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; break;
    case cudaMemcpyDefault: dst_dev = src_dev = false; break; /* inferred: any pointer is fine */
    default: return fail(cudaErrorInvalidMemcpyDirection);
    }
    /* the "device" side must lie inside one cudaMalloc block, as on a GPU */
    if ((dst_dev && !inside_alloc(dst, count)) || (src_dev && !inside_alloc(src, count)))
        return fail(cudaErrorInvalidValue);
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t) {
    return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
    if (count == 0) return cudaSuccess;
    if (!devPtr || !inside_alloc(devPtr, count)) return fail(cudaErrorInvalidValue);
    memset(devPtr, value, count);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t) {
    return cudaMemset(devPtr, value, count);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    if (!free_bytes || !total_bytes) return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(g_mu);
    *total_bytes = kTotalMem;
    *free_bytes = g_live_bytes < kTotalMem ? kTotalMem - g_live_bytes : 0;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
    if (!stream) return fail(cudaErrorInvalidValue);
    *stream = reinterpret_cast<cudaStream_t>(&g_stream_tokens);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *event) {
    if (!event) return fail(cudaErrorInvalidValue);
    *event = reinterpret_cast<cudaEvent_t>(&g_event_tokens);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    return event ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    return event ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    if (!ms) return fail(cudaErrorInvalidValue);
    if (!start || !end) return fail(cudaErrorInvalidResourceHandle);
    *ms = 0.0f; /* no timing in the emulation */
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
    if (!func) return fail(cudaErrorInvalidValue); /* CUDA: invalid device function */
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout)
        return (value >= -1 && value <= 100) ? cudaSuccess : fail(cudaErrorInvalidValue);
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return fail(cudaErrorInvalidValue);
    if (value < 0 || (size_t)value > kSmemOptin) return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(g_mu);
    g_func_smem[func] = value;
    return cudaSuccess;
}

size_t cuda_host_max_dynamic_smem(const void *func) {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_func_smem.find(func);
    return it == g_func_smem.end() ? kSmemDefault : (size_t)it->second;
}

unsigned long long cuda_host_malloc_calls(void) {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_malloc_calls;
}

int cuda_host_check_launch_smem(const void *func, size_t smem_bytes) {
    if (smem_bytes <= cuda_host_max_dynamic_smem(func)) return 1;
    fail(cudaErrorInvalidValue);
    return 0;
}

}  // extern "C"
