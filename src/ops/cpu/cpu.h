/* ops/cpu/cpu.h — the CPU backend's table and its process-wide controls: the choice of OpenBLAS
 * kernels, the precision of its products, the bf16 check and rounding, and the name of its
 * product library for logs. The trainer and the commands open a backend through backend_open
 * (ops.h), which calls these; tests and benchmarks call them directly. The ops themselves are
 * documented on the table in ops/ops.h; their code is ops/cpu/<family>.c (cpu_internal.h).
 * Memory: 64-byte aligned host memory. Errors: none but those named at each function. */
#ifndef TRAINER_OPS_CPU_H
#define TRAINER_OPS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* The CPU backend (OpenBLAS + OpenMP; memory is 64-byte aligned host memory): always present;
 * the reference, with every op. Built on the first call (thread-safe); later calls return the
 * same table. Aborts naming the op if an op family left one unset (programmer error). */
const Backend *backend_cpu(void);

/* Debian's OpenBLAS 0.3.21 picks its Haswell (AVX2) kernels on AVX-512 machines; its SkylakeX
 * kernels are about twice as fast there. OpenBLAS reads OPENBLAS_CORETYPE when it is loaded,
 * before main(), so on an AVX-512 CPU this sets it and re-executes the program (argv) once.
 * A user's own OPENBLAS_CORETYPE wins. Returns only when no re-execution happened. */
void backend_cpu_prefer_fast_blas(char **argv);

/* NULL, or a one-line warning for logs when the environment's OPENBLAS_CORETYPE names a core
 * without AVX-512 (e.g. Haswell) on a CPU that has it: OpenBLAS's small products (the
 * attention's, which call it directly) then run at about half their speed. No errors. */
const char *backend_cpu_blas_warning(void);

/* Sets the precision of every later CPU matmul and matmul_bias_forward: BACKEND_PRECISION_FP32
 * (default) or _BF16, where both inputs are rounded to bfloat16 (nearest even) and the products
 * accumulated and stored in fp32 by oneDNN's matmul primitive; weights, gradients, Adam, layer
 * norm, softmax and the loss stay fp32 (train.precision = bf16 on the CPU; the rounding
 * of PyTorch's CPU autocast to bf16). Call it at start-up, after backend_cpu_bf16_supported said
 * yes. Another value, or bf16 in a build without oneDNN, aborts (programmer error). */
void backend_cpu_set_precision(int precision);

/* 1 when bf16 products run here: a build with oneDNN (TRAINER_DNNL). On a CPU with AVX512_BF16
 * they run natively and *why (when why is not NULL) is ""; on one without, they are emulated:
 * fp32 sgemm on the inputs rounded by the portable loop, the same values (a product of two bf16
 * values is exact in fp32; only the order of the fp32 sums may differ), slower than fp32, and
 * *why says so. Else 0, with *why saying what is missing and what to do. TRAINER_CPU_BF16=off in
 * the environment makes the backend act as on a CPU without AVX512_BF16, for tests. */
int backend_cpu_bf16_supported(const char **why);

/* The library of the CPU's dense products, for logs: "openblas sgemm", "onednn sgemm" (fp32 on
 * AVX-512 CPUs in a build with oneDNN; TRAINER_CPU_GEMM = openblas | onednn overrides), or at
 * precision bf16 "onednn matmul (bf16 inputs, fp32 accumulation)", or on an Intel CPU without
 * AMX "onednn sgemm on bf16-rounded inputs (fp32 accumulation)" (or openblas's;
 * TRAINER_CPU_BF16_GEMM = onednn | sgemm overrides). */
const char *backend_cpu_gemm_name(void);

/* dst[i] = src[i] rounded to bfloat16 (the high 16 bits after rounding to nearest, ties to
 * even; NaN stays NaN), for i < n. The rounding of the bf16 products above: AVX512_BF16's
 * instruction where the CPU has it (TRAINER_CPU_BF16=off: never), else a portable loop with
 * the same results but for subnormal inputs (the instruction flushes them to zero). No errors. */
void backend_cpu_round_bf16(uint16_t *dst, const float *src, size_t n);

#endif
