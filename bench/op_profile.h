/* op_profile.h — where a training step's time goes, op by op (bench only, never in
 * the trainer): a Backend whose every op calls the same op of another backend, those with a
 * shim in op_profile.c between two of its synchronize() calls, adding the wall time, the call
 * count and, for the dense-algebra and attention ops, the FLOPs to a table (op_profile_print
 * names the ops without one, untimed); each GEMM shape (M, N, K, transA, transB) gets its own
 * row, so that the product's GFLOP/s in the step can be set against sgemm's at the same shape
 * measured alone.
 *
 * Units: seconds of wall time (CLOCK_MONOTONIC; or CPU time, op_profile_cpu_clock), FLOPs counted as 2·M·N·K per product (attention:
 * its Tq × Tk products, with causal masking not discounted). Host memory for the tables.
 * Errors: none (op_profile_wrap CHECKs it is called once). Not thread-safe: the trainer calls
 * ops from one thread. Source: the idea of PyTorch's profiler table (torch.profiler's
 * key_averages), done on our Backend table (src/ops/ops.h). */
#ifndef TRAINER_BENCH_OP_PROFILE_H
#define TRAINER_BENCH_OP_PROFILE_H

#include <stdio.h>

#include "ops/ops.h"

/* A backend that times inner's ops (its memory functions are inner's own): build the model with
 * it. Call once per process; the returned table is static. */
const Backend *op_profile_wrap(const Backend *inner);
/* on = 1: every time here (the ops, the products alone, the peaks) is the process's CPU time
 * (cpu_seconds) instead of the wall clock, for one thread on a machine other jobs share; the
 * caller runs one thread. */
void op_profile_cpu_clock(int on);
/* Forgets what was timed so far (e.g. after warm-up steps). */
void op_profile_reset(void);
/* Prints, as Markdown tables: per op (by time) calls, ms and % of a step, GFLOP and GFLOP/s,
 * the time between ops and the step's total FLOP/s (steps timed steps of step_seconds each,
 * measured by the caller around them); then the gemm_rows slowest GEMM shapes with their GFLOP/s
 * in the step, inner's matmul alone at that shape (measured now, ≥ 0.2 s each) and the ratio. */
void op_profile_print(FILE *f, int steps, double step_seconds, int gemm_rows);
/* The fp32 FMA peak of threads cores, measured: GFLOP/s of 12 independent FMA chains per core
 * (enough to keep current x86 cores' FMA pipes full) of the widest vectors the CPU has: 512-bit
 * on AVX-512 CPUs, else 256-bit AVX2 + FMA (*vector_bits says which); 0 (and 0 bits) where it
 * has neither. */
double op_profile_fma_peak(int threads, int *vector_bits);
/* The bf16 peak of threads cores, measured: GFLOP/s of 12 independent chains of AVX512_BF16's
 * vdpbf16ps (64 FLOPs each: 32 bf16 products summed into 16 floats); 0 on CPUs without it. */
double op_profile_bf16_peak(int threads);
/* GFLOP/s of inner's matmul alone on n × n × n (after op_profile_wrap). */
double op_profile_sgemm_square(int n);

#endif
