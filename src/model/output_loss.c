/* model/output_loss.c — the output layer and its loss in blocks of rows (output_loss.h). */
#include "model/output_loss.h"

#include <string.h>

#include "core/common.h"
#include "core/tokens.h"

int output_loss_rows(const Backend *be, long R_cap, int V, int max_rows) {
    size_t bytes = strcmp(be->name, "cuda") == 0 ? OUTPUT_LOSS_BLOCK_BYTES_CUDA
                                                 : OUTPUT_LOSS_BLOCK_BYTES_CPU;
    long rows = max_rows > 0 ? max_rows : (long)(bytes / (sizeof(float) * (size_t)V));
    if (rows > R_cap) rows = R_cap;
    return rows < 1 ? 1 : (int)rows;
}

double output_loss(const Backend *be, OutputLoss *o, float *dx, const float *x, const int *targets,
                   int R, int H, const Param *W, const Param *b, float smoothing, int train,
                   float grad_scale) {
    CHECK(R >= 1 && o->rows >= 1, "output_loss: no rows");
    int V = o->V, n = (R + o->rows - 1) / o->rows, per = (R + n - 1) / n;
    double loss = 0.0;
    for (int r0 = 0; r0 < R; r0 += per) {
        int r = R - r0 < per ? R - r0 : per;
        const float *xb = x + (size_t)r0 * H;
        be->matmul_bias_forward(o->logits, xb, W->w, b->w, r, V, H, 0);
        if (!train) {
            loss += be->xent_forward_backward(NULL, o->logits, targets + r0, r, V, smoothing,
                                              TOKEN_PAD, 0.0f, o->work);
            continue;
        }
        loss += be->xent_forward_backward(o->dlogits, o->logits, targets + r0, r, V, smoothing,
                                          TOKEN_PAD, grad_scale, o->work);
        backend_matmul_run(be, 1); /* dlogits rounded once for both products at bf16 */
        be->matmul(W->g, o->dlogits, xb, V, H, r, 1, 0, 1.0f, 1.0f); /* dW += dlogitsᵀ x */
        be->matmul(dx + (size_t)r0 * H, o->dlogits, W->w, r, H, V, 0, 0, 1.0f, 0.0f);
        backend_matmul_run(be, 0);
        be->bias_backward(b->g, o->dlogits, r, V);
    }
    o->last_blocks = n;
    return loss;
}
