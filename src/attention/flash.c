/* flash.c — flash attention (Dao et al. 2022, Algorithms 1–2): the function of sdp.c,
 * softmax(q kᵀ / √HS) v, computed over tiles of keys with the online softmax; no Tq × Tk matrix
 * is stored, only lse [B, NH, Tq] (ops: flash_attn_forward, flash_attn_backward). */
#include <math.h>

#include "attention/kinds.h"

static float flash_scale(const Attention *a) { return 1.0f / sqrtf((float)a->HS); }

static void flash_forward(const Attention *a, const Backend *be, float *o, float *save,
                          const float *q, const float *k, const float *v, const int *key_len,
                          int causal, int B, int Tq, int Tk, float *work) {
    be->flash_attn_forward(o, save, q, k, v, key_len, flash_scale(a), causal, B, a->NH, Tq, Tk,
                           a->HS, a->HS, work);
}

static void flash_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                           float *dv, const float *dout, const float *o, const float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work) {
    be->flash_attn_backward(dq, dk, dv, dout, q, k, v, o, save, key_len, flash_scale(a), causal,
                            B, a->NH, Tq, Tk, a->HS, a->HS, work);
}

static size_t flash_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return be->flash_attn_workspace(B, a->NH, Tq, Tk, a->HS, a->HS);
}

static const OpKind flash_ops[] = {OP_FLASH_ATTN_FORWARD, OP_FLASH_ATTN_BACKWARD,
                                   OP_FLASH_ATTN_WORKSPACE};

static void flash_weights_host(float *w, const float *q, const float *k, const float *v_a,
                               int len, int HS) { /* the softmax flash never stores */
    (void)v_a;
    attention_dot_weights_host(w, q, k, len, HS, 1.0f / sqrtf((float)HS));
}

const AttentionOps attention_flash = {
    .kind = ATTN_FLASH, .causal_ok = 1, .multi_head = 1, .scaled = 1, .save = ATTN_SAVE_LSE,
    .ops = flash_ops, .nops = 3, .forward = flash_forward,
    .backward = flash_backward, .workspace = flash_workspace,
    .weights_host = flash_weights_host};
