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
