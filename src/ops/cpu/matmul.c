/* matmul.c — dense matrix product on the CPU: OpenBLAS cblas_sgemm (row-major). Semantics in
 * ops/ops.h. */
#include <cblas.h>

#include "ops/cpu/cpu_internal.h"

void cpu_matmul(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                int transB, float alpha, float beta) {
    if (M == 0 || Nc == 0) return;
    int lda = transA ? M : K, ldb = transB ? K : Nc;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, Nc, K, alpha, A, lda, B, ldb, beta, C, Nc);
}

/* The product, then the bias row (and ReLU) in a second pass: the same arithmetic as matmul +
 * bias_forward (+ bias_relu_dropout_forward with p = 0), so swapping them changes no bit. */
void cpu_matmul_bias_forward(float *out, const float *inp, const float *weight, const float *bias,
                             int N, int C, int K, int relu) {
    cpu_matmul(out, inp, weight, N, C, K, 0, 1, 1.0f, 0.0f);
    if (relu)
        cpu_bias_relu_dropout_forward(out, out, bias, 0.0f, 0, N, C);
    else
        cpu_bias_forward(out, bias, N, C);
}
