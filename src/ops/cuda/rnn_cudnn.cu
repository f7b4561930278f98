/* ops/cuda/rnn_cudnn.cu — one LSTM/GRU layer over a whole sequence through cuDNN: the optional
 * Backend entries rnn_seq_sizes, rnn_seq_forward, rnn_seq_backward (semantics, shapes and
 * errors: ops/ops.h; the model's use and the padding argument: model/rnn.c). Compiled only in a
 * CUDA build that found cuDNN (CMakeLists.txt defines TRAINER_CUDNN; never in the SIMT build:
 * cuDNN cannot be emulated) and by scripts/ptxas_check.sh for its one kernel (rnn_cudnn.cuh).
 * NOT EXECUTED where it was written (no GPU there): it compiles and links; its results are
 * checked against our own cells by tests/gpu/test_rnn_cudnn.c on a GPU.
 *
 * Sources: cuDNN API reference, cudnn_adv library (v8 RNN API, present in cuDNN 9):
 * cudnnSetRNNDescriptor_v8, cudnnGetRNNWeightSpaceSize, cudnnGetRNNWeightParams,
 * cudnnSetRNNDataDescriptor, cudnnGetRNNTempSpaceSizes, cudnnRNNForward,
 * cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8; cudnn_ops: cudnnSetDropoutDescriptor,
 * cudnnSetTensorNdDescriptor.
 *
 * The equations (cuDNN API reference, cudnnRNNMode_t) against ours (ops.h, ops/cpu/lstm.c, gru.c):
 *   LSTM  i = σ(W_i x + R_i h' + bW_i + bR_i), f, o likewise, c' = tanh(W_c x + R_c h' + bW_c +
 *         bR_c); c = f ⊙ c_prev + i ⊙ c'; h = o ⊙ tanh(c). Ours: gates i, f, g, o with one bias
 *         b: equal with bW = b and bR = 0.
 *   GRU   r = σ(W_r x + R_r h' + bW_r + bR_r); i = σ(W_i x + R_i h' + bW_i + bR_i);
 *         h~ = tanh(W_h x + r ⊙ (R_h h' + bR_h) + bW_h); h = (1 − i) ⊙ h~ + i ⊙ h'. Ours (r, z, n):
 *         r = σ(gx_r + gh_r), z = σ(gx_z + gh_z), n = tanh(gx_n + r ⊙ gh_n),
 *         h = (1 − z) ⊙ n + z ⊙ h_prev with gx = x W_ihᵀ + b_ih, gh = h_prev W_hhᵀ + b_hh:
 *         equal with z = i, n = h~, bW = b_ih, bR = b_hh (the reset gate multiplies the recurrent
 *         product including its bias: cuDNN's "linear before reset" form, as ours).
 *
 * Our parameters in cuDNN's weight space (cudnnGetRNNWeightParams, pseudoLayer = direction d,
 * linLayerID id; every matrix is Hs rows of I (input side) or Hs (recurrent side) floats,
 * row-major, which is the row block of our matrix as stored; CHECKed by element count):
 *   LSTM  id 0, 1, 2, 3 = input side of gates i, f, g (cuDNN's c'), o = W_ih rows [k·Hs, (k+1)·Hs)
 *         with k = id, bias bW = b[k·Hs ..]; id 4 + k = recurrent side of the same gate = W_hh
 *         rows of block k, bias bR = 0 (kept zero: written as zero by every forward).
 *   GRU   id 0, 1, 2 = input side of r, z (cuDNN's update gate i), n (cuDNN's h~) = W_ih block
 *         k = id, bias bW = b_ih block k; id 3 + k = W_hh block k, bias bR = b_hh block k.
 * Gradients (cudnnRNNBackwardWeights_v8, CUDNN_WGRAD_MODE_ADD into a zeroed dweight space) are
 * added back block by block (cublasSaxpy, deterministic). LSTM bias: our b plays the role of
 * bW alone (bR is a constant 0), so d b = d bW; d bR equals it but is NOT added (adding both would
 * count the bias twice). GRU: d b_ih = d bW, d b_hh = d bR.
 *
 * Padding: an RNN data descriptor per call with the batch's lengths (host array), layout
 * CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED with CUDNN_RNN_PADDED_IO_ENABLED and padding fill 0:
 * cuDNN runs sequence b over its len[b] steps only (direction 1 from its own last step), writes
 * 0 to y at t >= len[b], and hy/cy hold each sequence's final state. dx at t >= len[b] is zeroed
 * here (k_rnn_zero_padding), where our masked cells give 0.
 *
 * Precision: fp32 data and fp32 arithmetic (mathPrec CUDNN_DATA_FLOAT). At train.precision = fp32
 * the math type is CUDNN_FMA_MATH (no tensor cores: no TF32 rounding, like our cuBLAS fp32
 * products); at tf32 and bf16 it is CUDNN_DEFAULT_MATH, which lets cuDNN use TF32 tensor cores on
 * Ampere and later (cuDNN has no bf16 rounding for fp32 RNN data, so bf16 here means tf32).
 *
 * Memory: ops never allocate device memory (docs/design.md §6): the weight space, its gradient twin,
 * workspace and reserve are the caller's (rnn_seq_sizes). Host side, cuDNN descriptors are made
 * per call (data and state descriptors) or once per layer shape (the RNN descriptor, cached in
 * g_desc: at most RNN_DESC_CAP shapes, a CHECK beyond).
 * Stream: the legacy default stream, as every other op (cuDNN's and cuBLAS's handles are left on
 * stream 0), so the calls are ordered with our kernels and cudaMemcpy.
 */
#ifndef TRAINER_CUDNN
#define TRAINER_CUDNN 1 /* this file exists only for builds with cuDNN (see above) */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/kernel_api.h"
#include "ops/cuda/rnn_cudnn.cuh"

static_assert(CUDA_EW_THREADS == 256, "k_rnn_zero_padding declares __launch_bounds__(256)");

enum { RNN_DESC_CAP = 64, RNN_MAX_IDS = 8 };

static cudnnHandle_t g_cudnn;                /* created by cuda_register_rnn_cudnn */
static cudnnDropoutDescriptor_t g_nodrop;    /* dropout 0: one layer per descriptor, none used */

/* One RNN descriptor per layer shape and math type, with the offsets (bytes from the start of
 * the weight space) of every linear layer's matrix and bias, per direction. */
typedef struct {
    int gru, dirs, in, h;
    cudnnMathType_t math;
    cudnnRNNDescriptor_t desc;
    size_t wbytes;                           /* cudnnGetRNNWeightSpaceSize */
    int have_off;                            /* moff/boff filled (first call with a space) */
    size_t moff[2][RNN_MAX_IDS], boff[2][RNN_MAX_IDS];
} RnnDesc;

static RnnDesc g_desc[RNN_DESC_CAP];
static int g_ndesc;

/* Element count of a tensor descriptor (cudnnGetTensorNdDescriptor); CHECKs float data. */
static size_t desc_elems(cudnnTensorDescriptor_t d) {
    cudnnDataType_t dt;
    int nb = 0, dims[8], strides[8];
    CUDNN_CHECK(cudnnGetTensorNdDescriptor(d, 8, &dt, &nb, dims, strides));
    CHECK(dt == CUDNN_DATA_FLOAT, "cuDNN RNN: weight tensor is not float");
    size_t n = 1;
    for (int i = 0; i < nb; i++) n *= (size_t)dims[i];
    return n;
}

/* The math type of the current train.precision (see the file comment). */
static cudnnMathType_t math_type(void) {
    return cuda_precision() == BACKEND_PRECISION_FP32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

/* The cached descriptor of shape s (created on first use: host memory only). */
static RnnDesc *rnn_desc(const RnnSeqShape *s) {
    cudnnMathType_t math = math_type();
    for (int i = 0; i < g_ndesc; i++) {
        RnnDesc *e = &g_desc[i];
        if (e->gru == s->gru && e->dirs == s->dirs && e->in == s->in && e->h == s->h &&
            e->math == math)
            return e;
    }
    CHECK(g_ndesc < RNN_DESC_CAP, "cuDNN RNN: more layer shapes than RNN_DESC_CAP");
    CHECK(s->dirs == 1 || s->dirs == 2, "rnn_seq: dirs must be 1 or 2");
    RnnDesc *e = &g_desc[g_ndesc++];
    memset(e, 0, sizeof *e);
    e->gru = s->gru, e->dirs = s->dirs, e->in = s->in, e->h = s->h, e->math = math;
    CUDNN_CHECK(cudnnCreateRNNDescriptor(&e->desc));
    /* one layer, no projection (projSize = hiddenSize), both biases (LSTM: bR kept 0) */
    CUDNN_CHECK(cudnnSetRNNDescriptor_v8(
        e->desc, CUDNN_RNN_ALGO_STANDARD, s->gru ? CUDNN_GRU : CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
        s->dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT,
        CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, math, s->in, s->h, s->h, 1, g_nodrop,
        CUDNN_RNN_PADDED_IO_ENABLED));
    CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(g_cudnn, e->desc, &e->wbytes));
    return e;
}

/* Fills e's offsets from the addresses cudnnGetRNNWeightParams gives in space, CHECKing that
 * every matrix and bias has the element count of our block. */
static void weight_offsets(RnnDesc *e, const void *space) {
    if (e->have_off) return;
    int G = e->gru ? 3 : 4;
    cudnnTensorDescriptor_t md, bd;
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&md));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&bd));
    for (int d = 0; d < e->dirs; d++)
        for (int id = 0; id < 2 * G; id++) {
            void *ma = NULL, *ba = NULL;
            CUDNN_CHECK(cudnnGetRNNWeightParams(g_cudnn, e->desc, d, e->wbytes, space, id, md,
                                                &ma, bd, &ba));
            CHECK(ma && ba, "cuDNN RNN: a linear layer without matrix or bias (double bias "
                            "mode gives both)");
            size_t cols = id < G ? (size_t)e->in : (size_t)e->h;
            CHECK(desc_elems(md) == (size_t)e->h * cols && desc_elems(bd) == (size_t)e->h,
                  "cuDNN RNN: weight layout differs from ours (matrix Hs x I or Hs x Hs, bias Hs "
                  "per gate); set model.rnn_impl = own");
            e->moff[d][id] = (size_t)((const char *)ma - (const char *)space);
            e->boff[d][id] = (size_t)((const char *)ba - (const char *)space);
            CHECK(e->moff[d][id] + sizeof(float) * e->h * cols <= e->wbytes &&
                      e->boff[d][id] + sizeof(float) * e->h <= e->wbytes,
                  "cuDNN RNN: a weight lies outside the weight space");
        }
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(md));
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(bd));
    e->have_off = 1;
}

/* Our block of linear layer id in p (see the file comment): matrix *m of *mn floats, bias *b
 * (NULL: the LSTM's recurrent bias, kept zero). */
static void our_block(const RnnDesc *e, const RnnSeqParams *p, int id, float **m, size_t *mn,
                      float **b) {
    int G = e->gru ? 3 : 4, k = id % G, h = e->h;
    if (id < G) {
        *m = p->W_ih + (size_t)k * h * e->in, *mn = (size_t)h * e->in, *b = p->b + (size_t)k * h;
    } else {
        *m = p->W_hh + (size_t)k * h * h, *mn = (size_t)h * h;
        *b = e->gru ? p->b_hh + (size_t)k * h : NULL;
    }
}

/* The data and state descriptors of one call. */
typedef struct {
    cudnnRNNDataDescriptor_t x, y;
    cudnnTensorDescriptor_t h; /* [D, B, Hs]: hx, hy, cx, cy and their gradients */
} SeqDescs;

static void seq_descs(SeqDescs *d, const RnnSeqShape *s, const int *len_host) {
    for (int b = 0; b < s->B; b++)
        CHECK(len_host[b] >= 1 && len_host[b] <= s->T,
              "cuDNN RNN: a sequence length outside [1, T] (an empty source sentence?); set "
              "model.rnn_impl = own");
    float fill = 0.0f;
    CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&d->x));
    CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&d->y));
    CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->x, CUDNN_DATA_FLOAT,
                                          CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, s->T, s->B,
                                          s->in, len_host, &fill));
    CUDNN_CHECK(cudnnSetRNNDataDescriptor(d->y, CUDNN_DATA_FLOAT,
                                          CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, s->T, s->B,
                                          s->dirs * s->h, len_host, &fill));
    int dims[3] = {s->dirs, s->B, s->h}, strides[3] = {s->B * s->h, s->h, 1};
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d->h));
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(d->h, CUDNN_DATA_FLOAT, 3, dims, strides));
}

static void seq_descs_free(SeqDescs *d) {
    CUDNN_CHECK(cudnnDestroyRNNDataDescriptor(d->x));
    CUDNN_CHECK(cudnnDestroyRNNDataDescriptor(d->y));
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(d->h));
}

/* cuDNN's workspace and reserve for this call, CHECKed against what the caller reserved. */
static void temp_sizes(const RnnDesc *e, const SeqDescs *d, int train, size_t work_n,
                       size_t reserve_n, size_t *wk, size_t *rs) {
    CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(g_cudnn, e->desc,
                                          train ? CUDNN_FWD_MODE_TRAINING
                                                : CUDNN_FWD_MODE_INFERENCE,
                                          d->x, wk, rs));
    CHECK(*wk <= sizeof(float) * work_n && (!train || *rs <= sizeof(float) * reserve_n),
          "cuDNN RNN workspace too small: rnn_reserve it for this batch");
}

/* sizes: cuDNN's for s->B rows of s->T steps each (the longest batch), in floats. */
static void cu_rnn_seq_sizes(RnnSeqSizes *out, const RnnSeqShape *s) {
    RnnDesc *e = rnn_desc(s);
    int *len = (int *)xmalloc(sizeof(int) * (size_t)(s->B > 0 ? s->B : 1));
    for (int b = 0; b < s->B; b++) len[b] = s->T;
    SeqDescs d;
    seq_descs(&d, s, len);
    size_t wk = 0, rs = 0;
    CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(g_cudnn, e->desc, CUDNN_FWD_MODE_TRAINING, d.x, &wk,
                                          &rs));
    seq_descs_free(&d);
    free(len);
    out->weights = (e->wbytes + sizeof(float) - 1) / sizeof(float);
    out->work = (wk + sizeof(float) - 1) / sizeof(float);
    out->reserve = (rs + sizeof(float) - 1) / sizeof(float);
}

/* Copies params[D] into the weight space (zeroed first, so the LSTM's bR is 0). */
static void load_weights(RnnDesc *e, const RnnSeqParams *params, float *wspace) {
    weight_offsets(e, wspace);
    char *base = (char *)wspace;
    CUDA_CHECK(cudaMemsetAsync(wspace, 0, e->wbytes, 0));
    for (int d = 0; d < e->dirs; d++)
        for (int id = 0; id < 2 * (e->gru ? 3 : 4); id++) {
            float *m, *b;
            size_t mn;
            our_block(e, &params[d], id, &m, &mn, &b);
            CUDA_CHECK(cudaMemcpyAsync(base + e->moff[d][id], m, sizeof(float) * mn,
                                       cudaMemcpyDeviceToDevice, 0));
            if (b)
                CUDA_CHECK(cudaMemcpyAsync(base + e->boff[d][id], b, sizeof(float) * e->h,
                                           cudaMemcpyDeviceToDevice, 0));
        }
}

/* grads[D] += the weight gradients in dwspace (see the file comment for the LSTM bias). */
static void add_grads(RnnDesc *e, const RnnSeqParams *grads, const float *dwspace) {
    weight_offsets(e, dwspace);
    const char *base = (const char *)dwspace;
    const float one = 1.0f;
    for (int d = 0; d < e->dirs; d++)
        for (int id = 0; id < 2 * (e->gru ? 3 : 4); id++) {
            float *m, *b;
            size_t mn;
            our_block(e, &grads[d], id, &m, &mn, &b);
            CUBLAS_CHECK(cublasSaxpy(g_cuda_blas, (int)mn, &one,
                                     (const float *)(base + e->moff[d][id]), 1, m, 1));
            if (b)
                CUBLAS_CHECK(cublasSaxpy(g_cuda_blas, e->h, &one,
                                         (const float *)(base + e->boff[d][id]), 1, b, 1));
        }
}

static void cu_rnn_seq_forward(float *y, float *hy, float *cy, const float *x, const float *hx,
                               const float *cx, const RnnSeqParams *params, const int *len,
                               const int *len_host, const RnnSeqShape *s, int train,
                               float *wspace, float *work, size_t work_n, float *reserve,
                               size_t reserve_n) {
    if (s->B <= 0 || s->T <= 0) return;
    RnnDesc *e = rnn_desc(s);
    SeqDescs d;
    seq_descs(&d, s, len_host);
    size_t wk = 0, rs = 0;
    temp_sizes(e, &d, train, work_n, reserve_n, &wk, &rs);
    load_weights(e, params, wspace);
    CUDNN_CHECK(cudnnRNNForward(g_cudnn, e->desc,
                                train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, len,
                                d.x, x, d.y, y, d.h, hx, hy, d.h, s->gru ? NULL : cx,
                                s->gru ? NULL : cy, e->wbytes, wspace, wk, work,
                                train ? rs : 0, train ? reserve : NULL));
    seq_descs_free(&d);
}

static void cu_rnn_seq_backward(float *dx, float *dhx, float *dcx, const RnnSeqParams *grads,
                                const float *dy, const float *dhy, const float *dcy,
                                const float *x, const float *y, const float *hx, const float *cx,
                                const int *len, const int *len_host, const RnnSeqShape *s,
                                const float *wspace, float *dwspace, float *work, size_t work_n,
                                float *reserve, size_t reserve_n) {
    if (s->B <= 0 || s->T <= 0) return;
    RnnDesc *e = rnn_desc(s);
    SeqDescs d;
    seq_descs(&d, s, len_host);
    size_t wk = 0, rs = 0;
    temp_sizes(e, &d, 1, work_n, reserve_n, &wk, &rs);
    int lstm = !s->gru;
    /* data first: it updates the reserve that the weights pass reads */
    CUDNN_CHECK(cudnnRNNBackwardData_v8(g_cudnn, e->desc, len, d.y, y, dy, d.x, dx, d.h, hx, dhy,
                                        dhx, d.h, lstm ? cx : NULL, lstm ? dcy : NULL,
                                        lstm ? dcx : NULL, e->wbytes, wspace, wk, work, rs,
                                        reserve));
    LAUNCH(k_rnn_zero_padding, cuda_ew_blocks((size_t)s->T * s->B * s->in), CUDA_EW_THREADS, 0,
           dx, len, s->T, s->B, s->in);
    CUDA_CHECK(cudaMemsetAsync(dwspace, 0, e->wbytes, 0));
    CUDNN_CHECK(cudnnRNNBackwardWeights_v8(g_cudnn, e->desc, CUDNN_WGRAD_MODE_ADD, len, d.x, x,
                                           d.h, hx, d.y, y, e->wbytes, dwspace, wk, work, rs,
                                           reserve));
    add_grads(e, grads, dwspace);
    seq_descs_free(&d);
}

void cuda_register_rnn_cudnn(Backend *be) {
    /* a cuDNN that cannot start (library/driver mismatch) leaves the entries NULL: the model
     * then refuses model.rnn_impl = cudnn by name (rnn_set_impl) and own runs as always */
    if (cudnnCreate(&g_cudnn) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "cuDNN could not start (cudnnCreate failed): model.rnn_impl = cudnn is "
                        "unavailable on this machine\n");
        return;
    }
    CUDNN_CHECK(cudnnCreateDropoutDescriptor(&g_nodrop));
    CUDNN_CHECK(cudnnSetDropoutDescriptor(g_nodrop, g_cudnn, 0.0f, NULL, 0, 0));
    be->rnn_seq_sizes = cu_rnn_seq_sizes;
    be->rnn_seq_forward = cu_rnn_seq_forward;
    be->rnn_seq_backward = cu_rnn_seq_backward;
}
