/* ops/backend.c — backend_open, and what a build and machine can run (ops.h:
 * backend_precision_valid, backend_precision_runs, backend_can_run, backend_info): the one place
 * where a process sets its OpenMP and OpenBLAS threads, starts the CPU or CUDA backend
 * (ops/cpu/cpu.h, ops/cuda/cuda.h) and sets the precision of its products, and the line that
 * tells the log which library runs them. Errors: the messages of ops.h; host memory only.
 * Source: —. */
#include "ops/ops.h"

#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"

/* OpenBLAS's own thread-count setter (declared by its cblas.h in most builds). */
void openblas_set_num_threads(int num_threads);

/* BACKEND_PRECISION_* as train.precision spells them. */
static const char *const precision_text[3] = {"fp32", "tf32", "bf16"};

int backend_precision_valid(int device, int precision, char *why, size_t n) {
    CHECK(device == BACKEND_DEVICE_CPU || device == BACKEND_DEVICE_CUDA,
          "backend_precision_valid: device is BACKEND_DEVICE_CPU or BACKEND_DEVICE_CUDA");
    CHECK(precision >= BACKEND_PRECISION_FP32 && precision <= BACKEND_PRECISION_BF16,
          "backend_precision_valid: precision is one of BACKEND_PRECISION_*");
    if (device == BACKEND_DEVICE_CPU && precision == BACKEND_PRECISION_TF32) {
        if (why && n)
            snprintf(why, n, "train.precision = tf32 needs train.device = cuda (TF32 is a "
                     "tensor-core format); on the cpu set train.precision = fp32 or bf16");
        return 0;
    }
    return 1;
}

int backend_precision_runs(int device, int precision, char *why, size_t n) {
    const char *no_bf16 = "";
    if (!backend_precision_valid(device, precision, why, n)) return 0;
    if (device == BACKEND_DEVICE_CPU && precision == BACKEND_PRECISION_BF16 &&
        !backend_cpu_bf16_supported(&no_bf16)) {
        if (why && n)
            snprintf(why, n, "train.precision = bf16 on train.device = cpu, but %s; set "
                     "train.precision = fp32", no_bf16);
        return 0;
    }
    return 1;
}

int backend_can_run(const BackendOptions *o, char *why, size_t n) {
    CHECK(o->precision == BACKEND_KEEP ||
              (o->precision >= BACKEND_PRECISION_FP32 && o->precision <= BACKEND_PRECISION_BF16),
          "backend_can_run: precision is one of BACKEND_PRECISION_* or BACKEND_KEEP");
    if (o->rnn_cudnn && !backend_cuda_has_cudnn()) {
        if (why && n)
            snprintf(why, n, "model.rnn_impl = cudnn, but this build of trainer has no cuDNN (%s); "
                     "set model.rnn_impl = own",
                     backend_cuda_emulated() ? "the SIMT emulation of the CUDA backend cannot run "
                                               "cuDNN"
                                             : "cudnn.h and libcudnn were not found when it was "
                                               "built: install cuDNN and rebuild");
        return 0;
    }
    return o->precision == BACKEND_KEEP || backend_precision_runs(o->device, o->precision, why, n);
}

BackendInfo backend_info(int device) {
    CHECK(device == BACKEND_DEVICE_CPU || device == BACKEND_DEVICE_CUDA,
          "backend_info: device is BACKEND_DEVICE_CPU or BACKEND_DEVICE_CUDA");
    if (device == BACKEND_DEVICE_CPU) return (BackendInfo){0, 0, -1, ""};
    return (BackendInfo){.emulated = backend_cuda_emulated(), .cudnn = backend_cuda_has_cudnn(),
                         .gpu_index = backend_cuda_device_index(),
                         .gpu_name = backend_cuda_device_name()};
}

Status backend_open(const BackendOptions *o, const Backend **be, char *line, size_t n,
                    Err *err) {
    CHECK(o->device == BACKEND_DEVICE_CPU || o->device == BACKEND_DEVICE_CUDA,
          "backend_open: device is BACKEND_DEVICE_CPU or BACKEND_DEVICE_CUDA");
    CHECK(o->precision == BACKEND_KEEP ||
              (o->precision >= BACKEND_PRECISION_FP32 && o->precision <= BACKEND_PRECISION_BF16),
          "backend_open: precision is one of BACKEND_PRECISION_* or BACKEND_KEEP");
    CHECK(o->threads >= 0 || o->threads == BACKEND_KEEP,
          "backend_open: threads is >= 0 or BACKEND_KEEP");
    CHECK(!line || o->precision != BACKEND_KEEP,
          "backend_open: the line names the precision, so it needs one given");
    char why[512];
    *be = NULL;
    if (line && n) line[0] = 0;
    if (!backend_can_run(o, why, sizeof why)) return err_set(err, "%s", why);
    if (o->threads != BACKEND_KEEP) {
        int t = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (t <= 0) t = 1;
        omp_set_num_threads(t);
        openblas_set_num_threads(t);
    }
    if (o->device == BACKEND_DEVICE_CUDA) {
        if (o->ordinal != BACKEND_KEEP) backend_cuda_use_device(o->ordinal);
        *be = backend_cuda(why, sizeof why);
        if (!*be) return err_set(err, "train.device = cuda: %s", why);
        if (o->precision != BACKEND_KEEP) backend_cuda_set_precision(o->precision);
        if (line && n)
            snprintf(line, n, "device: cuda, %s, precision %s, kernels: own, matmul: cublas "
                     "(bias: cublasLt epilogue)", backend_cuda_device_name(),
                     precision_text[o->precision]);
        return STATUS_OK;
    }
    *be = backend_cpu();
    if (o->precision != BACKEND_KEEP) backend_cpu_set_precision(o->precision);
    if (line && n) {
        const char *warn = backend_cpu_blas_warning();
        snprintf(line, n, "device: cpu, precision %s, matmul: %s%s%s",
                 precision_text[o->precision], backend_cpu_gemm_name(), warn ? "; warning: " : "",
                 warn ? warn : "");
    }
    return STATUS_OK;
}
