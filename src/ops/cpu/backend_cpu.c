/* backend_cpu.c — the CPU backend (OpenBLAS + OpenMP), the reference (docs/design.md §2): its memory
 * functions, the table that gathers the ops, and the choice of OpenBLAS kernels. The ops live one
 * family per file beside it (matmul.c, bias.c, elementwise.c, dropout.c, layernorm.c,
 * embedding.c, softmax_xent.c, lstm.c, gru.c, adam.c, shape.c and the attention files),
 * declared in cpu_internal.h; src/ops/cuda/ mirrors the same files. */
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "ops/cpu/cpu_internal.h"

static void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    size_t n = (bytes + 63) / 64 * 64;
    CHECK(posix_memalign(&p, 64, n ? n : 64) == 0, "out of host memory");
    memset(p, 0, n);
    return p;
}
static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memmove(dst, src, bytes);
}
/* memset; a large block (the gradients each step, 30 MB for configs/transformer.ini) in
 * 1 MiB pieces across the OpenMP threads */
static void cpu_zero(void *p, size_t bytes) {
    enum { PIECE = 1 << 20 };
    if (bytes < 4 * (size_t)PIECE) {
        if (bytes) memset(p, 0, bytes);
        return;
    }
    long n = (long)((bytes + PIECE - 1) / PIECE);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        size_t off = (size_t)i * PIECE;
        memset((char *)p + off, 0, bytes - off < PIECE ? bytes - off : PIECE);
    }
}
static void cpu_sync(void) {}

static const Backend CPU_BACKEND = {
    .name = "cpu",
    .host_memory = 1,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_sync,
    .matmul_run = cpu_matmul_run,
    .matmul_hold = cpu_matmul_hold,
    .matmul_keep = cpu_matmul_keep,
    .matmul_transb_slower = cpu_matmul_transb_slower,
    .matmul = cpu_matmul,
    .matmul_bias_forward = cpu_matmul_bias_forward,
    .bias_forward = cpu_bias_forward,
    .bias_backward = cpu_bias_backward,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .sumsq = cpu_sumsq,
    .all_finite = cpu_all_finite,
    .concat2_forward = cpu_concat2_forward,
    .concat2_backward = cpu_concat2_backward,
    .transpose01_forward = cpu_transpose01_forward,
    .transpose01_backward = cpu_transpose01_backward,
    .tanh_forward = cpu_tanh_forward,
    .tanh_backward = cpu_tanh_backward,
    .dropout_forward = cpu_dropout_forward,
    .dropout_backward = cpu_dropout_backward,
    .embedding_forward = cpu_embedding_forward,
    .embedding_backward = cpu_embedding_backward,
    .lstm_cell_forward = cpu_lstm_cell_forward,
    .lstm_cell_backward = cpu_lstm_cell_backward,
    .gru_cell_forward = cpu_gru_cell_forward,
    .gru_cell_backward = cpu_gru_cell_backward,
    .additive_attn_forward = cpu_additive_attn_forward,
    .additive_attn_backward = cpu_additive_attn_backward,
    .additive_attn_workspace = cpu_additive_attn_workspace,
    .local_attn_forward = cpu_local_attn_forward,
    .local_attn_backward = cpu_local_attn_backward,
    .local_attn_workspace = cpu_local_attn_workspace,
    .gather_rows = cpu_gather_rows,
    .gather_rows_strided = cpu_gather_rows_strided,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .bias_relu_dropout_forward = cpu_bias_relu_dropout_forward,
    .relu_dropout_backward = cpu_relu_dropout_backward,
    .permute0213_forward = cpu_permute0213_forward,
    .permute0213_backward = cpu_permute0213_backward,
    .write_step = cpu_write_step,
    .linear_attn_step = cpu_linear_attn_step,
    .linear_attn_summary = cpu_linear_attn_summary,
    .linear_attn_read = cpu_linear_attn_read,
    .linear_attn_read_backward = cpu_linear_attn_read_backward,
    .linear_attn_summary_backward = cpu_linear_attn_summary_backward,
    .efficient_attn_summary = cpu_efficient_attn_summary,
    .efficient_attn_read = cpu_efficient_attn_read,
    .efficient_attn_read_backward = cpu_efficient_attn_read_backward,
    .efficient_attn_summary_backward = cpu_efficient_attn_summary_backward,
    .l2feature_forward = cpu_l2feature_forward,
    .l2feature_backward = cpu_l2feature_backward,
    .linformer_proj_forward = cpu_linformer_proj_forward,
    .linformer_proj_backward = cpu_linformer_proj_backward,
    .flash_attn_forward = cpu_flash_attn_forward,
    .flash_attn_backward = cpu_flash_attn_backward,
    .flash_attn_workspace = cpu_flash_attn_workspace,
    .linear_attn_forward = cpu_linear_attn_forward,
    .linear_attn_backward = cpu_linear_attn_backward,
    .linear_attn_workspace = cpu_linear_attn_workspace,
    .efficient_attn_forward = cpu_efficient_attn_forward,
    .efficient_attn_backward = cpu_efficient_attn_backward,
    .efficient_attn_workspace = cpu_efficient_attn_workspace,
    .attn_forward = cpu_attn_forward,
    .attn_backward = cpu_attn_backward,
    .attn_forward_merged = cpu_attn_forward_merged,
    .attn_backward_merged = cpu_attn_backward_merged,
    .attn_workspace = cpu_attn_workspace,
    .pointwise_attn_forward = cpu_pointwise_attn_forward,
    .pointwise_attn_backward = cpu_pointwise_attn_backward,
    .pointwise_attn_workspace = cpu_pointwise_attn_workspace,
    .head_rmsnorm_forward = cpu_head_rmsnorm_forward,
    .head_rmsnorm_backward = cpu_head_rmsnorm_backward,
    .xent_forward_backward = cpu_xent_forward_backward,
    .xent_workspace = cpu_xent_workspace,
    .log_softmax = cpu_log_softmax,
    .argmax = cpu_argmax,
    .adam_update = cpu_adam_update,
};

const Backend *backend_cpu(void) { return &CPU_BACKEND; }

void backend_cpu_prefer_fast_blas(char **argv) {
    if (getenv("OPENBLAS_CORETYPE") || getenv("TRAINER_NO_REEXEC")) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return;
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    setenv("TRAINER_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: go on with the default kernels */
}
