/* ops/ops.h — the backend table: every tensor operation the models use, each a forward/backward pair,
 * and OpKind, the same ops by name.
 *
 *   GRADIENTS ACCUMULATE. Every backward function ADDS (+=) into the gradients it produces, for
 *   parameters and inputs alike; callers zero gradient buffers when a step begins.
 *   The exceptions are temporaries that only their own caller reads, each marked "overwritten"
 *   or WRITES at its declaration (a zeroing pass over a large buffer saved): lstm_cell_backward's
 *   dgates, gru_cell_backward's dgx and dgh, relu_dropout_backward's dinp and
 *   xent_forward_backward's dlogits (the seed of the backward pass).
 *
 * Conventions (docs/design.md §3): outputs first, gradients first in backward, then inputs and saved
 * activations, then dimensions. Tensors are float32, row-major, contiguous, and live wherever the
 * backend keeps memory (host for cpu, device for cuda): model code never dereferences them.
 * Integer arrays (token ids, lengths) are int32 and live in backend memory too (uploaded by the
 * caller). Scalars that must reach the host (a loss, a norm) are return values.
 *
 * Shape letters: N rows (any flattened leading dims), C columns, B batch, S source length,
 * T target length, E embedding, H hidden, V vocabulary, NH heads, Tq/Tk query/key positions,
 * D query/key width per head (HS), Dv value width per head, A additive score size, M/K/Nc matrix
 * dims. Sizes passed as size_t n count floats; workspace functions return floats.
 *
 * Ops never allocate (docs/design.md §2, §6): an op that needs scratch memory takes `float *work`
 * (backend memory, last argument) and has a size function *_workspace(...) in this table
 * returning the floats it needs for those sizes; the caller reserves that much once (its
 * reserve function, for the largest batch) and passes it on every call. Scratch of a size fixed
 * at start-up (the CUDA reductions' partials) is allocated once by the backend's constructor.
 *
 * Errors: no op returns a Status or checks its input sizes — shapes are the caller's contract
 * (programmer errors); the memory functions abort on failure (CHECK / CUDA_CHECK). Each op's
 * source (paper and equation) is in its comment; "—" where it is plain algebra.
 *
 * Ops by name (ggml's GGML_OP_NAME): OpKind has one value per computational field of Backend
 * (OP_MATMUL … OP_ADAM_UPDATE; not the memory functions), op_name(op) its field's name,
 * supports_op(be, op) whether a backend implements it (its entry is non-NULL), and
 * backend_require_ops(be, ops, n, err) refuses a backend that lacks any of a list, naming each
 * missing op; every model lists the ops it calls (rnn_ops_used, transformer_ops_used), so a
 * backend is refused before training starts. Backend-independent code: ops/ops.c, and
 * ops/backend.c: backend_open, the one way to open a backend (below).
 *
 * The tree: ops/cpu/ holds the CPU backend (its controls: ops/cpu/cpu.h) and ops/cuda/ the CUDA
 * backend (its controls: ops/cuda/cuda.h), each as one file per op family, the families of
 * OP_FAMILIES below: ops/cpu/<family>.c and ops/cuda/<family>.cu (its kernels in <family>.cuh),
 * each ending in the function that sets its family's fields of the table
 * (cpu_register_<family>, cuda_register_<family>); backend_cpu.c and backend_cuda.cu hold the
 * memory functions and call the registrations, both from OP_FAMILIES. ops/params.h carves
 * parameters from one table. Every op is tested by tests/ops/test_backend_ops.c (one case per
 * OpKind; the attention cases in tests/ops/attention_softmax.c, attention_linear.c,
 * attention_taylor.c, attention_linformer.c and attention_local.c; the rows of the attention ops
 * in tests/ops/rows_attention.c, where pointwise_attn_* and head_rmsnorm_*, the family
 * attn_pointwise of sigmoid and rela, have their references; the harness in op_harness.c).
 */
#ifndef TRAINER_OPS_H
#define TRAINER_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

typedef struct Backend Backend;

/* One LSTM or GRU layer over a whole sequence, as cuDNN runs it (Backend.rnn_seq_*, below).
 * Legend: T time steps (the longest sequence), B batch, I input size, Hs hidden size per
 * direction, G gate blocks (LSTM 4, GRU 3), D directions (1 or 2). */
typedef struct {
    int gru;     /* 0 LSTM (gate order i, f, g, o), 1 GRU (r, z, n) */
    int dirs;    /* D: 1 one direction (forward in time), 2 both: direction 1 runs backward in
                    time from each sequence's own last step (a bidirectional layer) */
    int in, h;   /* I, Hs */
    int B, T;    /* batch rows, time steps */
} RnnSeqShape;

/* The parameters (or, in backward, their gradients) of one direction of an RnnSeqShape layer,
 * in our layout (model/rnn.h RnnLayer): W_ih [G·Hs, I], W_hh [G·Hs, Hs], b [G·Hs] (LSTM: its one
 * bias; GRU: b_ih), b_hh [3·Hs] (GRU only; NULL for LSTM). Backend memory. */
typedef struct {
    float *W_ih, *W_hh, *b, *b_hh;
} RnnSeqParams;

/* Sizes an RnnSeqShape needs, in floats: the weight space (the layer's parameters in the
 * library's own layout; the same size again for their gradients), the workspace and the reserve
 * (what a training forward keeps for the backward). */
typedef struct {
    size_t weights, work, reserve;
} RnnSeqSizes;

/* The feature map of linear_attn_* (Backend, below): φ(x) = elu(x) + 1 (Katharopoulos et al.
 * 2020 §3.2), or the identity (the inputs are features already: the taylor kind). */
enum { LINEAR_PHI_ELU1 = 0, LINEAR_PHI_IDENTITY = 1 };

/* The weight function of pointwise_attn_* (Backend, below): the sigmoid kind's σ with the bias
 * −log n, or rela's max(·, 0). */
enum { POINTWISE_SIGMOID = 0, POINTWISE_RELU = 1 };

struct Backend {
    const char *name; /* "cpu" or "cuda" */
    int host_memory;  /* 1: tensors are host memory, which the host may read and write and MPI
                       * may send as they are (cpu); 0: device memory, reached through upload and
                       * download only (cuda, the SIMT emulation included) */

    /* ---- memory ---- */
    /* Sizes in bytes; *_host pointers are host memory, the others backend memory. alloc aborts on
     * failure (CHECK "out of host memory" / CUDA_CHECK); the others have no errors. */
    void *(*alloc)(size_t bytes);            /* zero-filled; aborts on failure */
    void (*free)(void *p);
    void (*upload)(void *dst, const void *src_host, size_t bytes);
    void (*download)(void *dst_host, const void *src, size_t bytes);
    /* within the backend; dst and src must not overlap (CUDA: cudaMemcpy device to device,
     * undefined on overlap, although the CPU's memmove would forgive it) */
    void (*copy)(void *dst, const void *src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    void (*synchronize)(void);
    /* ---- operand-reuse hints (optional, NULL where a backend gains nothing from them; called
     * through the helpers of "Operand-reuse hints" below, where their contracts are) ---- */
    void (*matmul_run)(int begin);
    void (*matmul_hold)(const float *p, size_t n);
    void (*matmul_keep)(const float *p, size_t n);
    int (*matmul_transb_slower)(void);

    /* ---- dense algebra ---- */
    /* C[M,Nc] = alpha * op(A) op(B) + beta * C; op(A) is [M,K] (A stored [K,M] if transA),
     * op(B) is [K,Nc] (B stored [Nc,K] if transB). cblas_sgemm / cublasSgemm. */
    void (*matmul)(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                   int transB, float alpha, float beta);
    /* A dense layer's affine map in one call: out[N,C] = inp[N,K] · weight[C,K]ᵀ + bias[C], then
     * max(·, 0) when relu = 1 (the inner activation of Vaswani et al. 2017 eq. 2). Overwrites
     * out, which must not overlap inp, weight or bias. Forward only: its backward is matmul and
     * bias_backward (after relu_dropout_backward with p = 0 when relu). The CPU runs cblas_sgemm
     * then the bias row (bit-identical to matmul + bias_forward, or + bias_relu_dropout_forward
     * with p = 0); CUDA runs one cublasLtMatmul with the epilogue CUBLASLT_EPILOGUE_BIAS or
     * CUBLASLT_EPILOGUE_RELU_BIAS (the bias added to the fp32 accumulator before the store). */
    void (*matmul_bias_forward)(float *out, const float *inp, const float *weight,
                                const float *bias, int N, int C, int K, int relu);
    /* out[N,C] += bias[C] (—) */
    void (*bias_forward)(float *out, const float *bias, int N, int C);
    /* dbias[C] += sum_n dout[n,C] (—; no hidden state: a constant ones vector) */
    void (*bias_backward)(float *dbias, const float *dout, int N, int C);
    /* y[n] += a * x[n] */
    void (*axpy)(float *y, float a, const float *x, size_t n);
    /* x[n] *= a */
    void (*scale)(float *x, float a, size_t n);
    /* returns sum x[n]^2 (accumulated in double; gradient clipping, Pascanu et al. 2013) */
    double (*sumsq)(const float *x, size_t n);
    /* returns 1 if every element is finite, else 0 */
    int (*all_finite)(const float *x, size_t n);

    /* ---- shape ops (—) ---- */
    /* out[N, Ca+Cb] = [a[N,Ca] | b[N,Cb]] */
    void (*concat2_forward)(float *out, const float *a, const float *b, int N, int Ca, int Cb);
    /* da += dout[:, :Ca]; db += dout[:, Ca:] (either may be NULL) */
    void (*concat2_backward)(float *da, float *db, const float *dout, int N, int Ca, int Cb);
    /* out[D1,D0,C] = transpose of inp[D0,D1,C] in its first two axes */
    void (*transpose01_forward)(float *out, const float *inp, int D0, int D1, int C);
    /* dinp[D0,D1,C] += transpose of dout[D1,D0,C] */
    void (*transpose01_backward)(float *dinp, const float *dout, int D0, int D1, int C);

    /* ---- element-wise ---- */
    /* out[n] = tanh(inp[n]) */
    void (*tanh_forward)(float *out, const float *inp, size_t n);
    /* dinp += dout * (1 - out^2) */
    void (*tanh_backward)(float *dinp, const float *dout, const float *out, size_t n);
    /* Inverted dropout (Srivastava et al. 2014): mask[i] = keep ? 1/(1-p) : 0 drawn from
     * rng_hash(key, i) (core/rng.h); out = inp * mask; out, mask, inp [n]. p (a probability,
     * 0 <= p < 1) = 0 gives out = inp, mask = 1. */
    void (*dropout_forward)(float *out, float *mask, const float *inp, float p, uint64_t key,
                            size_t n);
    /* dinp += dout * mask */
    void (*dropout_backward)(float *dinp, const float *dout, const float *mask, size_t n);

    /* ---- Transformer pieces (Vaswani et al. 2017) ----
     * Layer normalisation (Ba et al. 2016 eq. 4): per row n, μ = mean_c inp[n,c],
     * σ² = mean_c (inp[n,c] − μ)² (biased), rstd = 1/√(σ² + 1e-5);
     * out[N,C] = (inp − μ) · rstd ⊙ weight[C] + bias[C]; mean[N], rstd[N] saved for backward. */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, int N, int C);
    /* Accumulates dinp[N,C], dweight[C], dbias[C] (dweight, dbias summed over rows in a fixed
     * order: deterministic). */
    void (*layernorm_backward)(float *dinp, float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *weight, const float *mean,
                               const float *rstd, int N, int C);
    /* The feed-forward network's activation (Vaswani et al. 2017 eq. 2) with its dropout, in one
     * pass: out[N,C] = max(inp + bias[C], 0) · mask, mask drawn as in dropout_forward
     * (rng_hash(key, i) over the flattened index; p = 0 gives mask = 1) and not stored: out
     * itself tells relu_dropout_backward where the gradient flows. out may equal inp. */
    void (*bias_relu_dropout_forward)(float *out, const float *inp, const float *bias, float p,
                                      uint64_t key, int N, int C);
    /* dinp = dout · mask · [inp + bias > 0] over n elements, from bias_relu_dropout_forward's
     * out and its p: out > 0 exactly where the element was kept (mask = 1/(1-p)) and positive,
     * so dinp = [out > 0] · dout / (1 - p). The gradient of the pre-activation (inp + bias),
     * OVERWRITTEN, not accumulated (a temporary, like lstm's dgates); the bias gradient is
     * bias_backward of it. */
    void (*relu_dropout_backward)(float *dinp, const float *dout, const float *out, float p,
                                  size_t n);
    /* (—) out[A,D1,D0,C] = inp[A,D0,D1,C] (axes 1 and 2 swapped): splits heads, [B,T,NH,HS] →
     * [B,NH,T,HS] (D0 = T, D1 = NH), and merges them back (D0 = NH, D1 = T). */
    void (*permute0213_forward)(float *out, const float *inp, int A, int D0, int D1, int C);
    /* dinp[A,D0,D1,C] += the same permutation of dout[A,D1,D0,C] */
    void (*permute0213_backward)(float *dinp, const float *dout, int A, int D0, int D1, int C);
    /* cache[n, t, :] = x[n, :] for n < N: one decoding step written into a [N, Tcap, C] cache
     * (keys or values of every row and head, N = rows · NH, C = HS). */
    void (*write_step)(float *cache, const float *x, int N, int Tcap, int t, int C);
    /* dst[i·stride + c] = src[idx[i]·stride + c] for i < n, c < D <= stride (beam search:
     * reorder the first D floats of strided rows, e.g. the filled prefix of a key cache).
     * idx in backend memory; dst and src must not overlap. */
    void (*gather_rows_strided)(float *dst, const float *src, const int *idx, int n, int D,
                                int stride);

    /* ---- embedding (Vaswani et al. 2017 §3.4; the √E scale is the caller's) ---- */
    /* out[N,E] = table[ids[n], :] */
    void (*embedding_forward)(float *out, const int *ids, const float *table, int N, int E);
    /* dtable[ids[n], :] += dout[n, :] (deterministic: rows are summed in order) */
    void (*embedding_backward)(float *dtable, const float *dout, const int *ids, int N, int E);

    /* ---- LSTM cell (Hochreiter & Schmidhuber 1997; gate order i, f, g, o as in cuDNN) ----
     * gates[B,4H]: on entry the pre-activations x W_ihᵀ + h_prev W_hhᵀ + b; on return the
     * activations (σ(i), σ(f), tanh(g), σ(o)), kept for backward.
     * c = f ⊙ c_prev + i ⊙ g; h = o ⊙ tanh(c). With mask[B] (1 = real step, 0 = padding;
     * may be NULL) a masked row keeps its state: c = c_prev, h = h_prev. */
    void (*lstm_cell_forward)(float *h, float *c, float *gates, const float *h_prev,
                              const float *c_prev, const float *mask, int B, int H);
    /* Given dh, dc (gradients w.r.t. this step's h and c, complete), writes dgates[B,4H]
     * (pre-activation gradients; overwritten, not accumulated: it is a temporary) and accumulates
     * dh_prev (masked rows only: dh passes through), dc_prev. */
    void (*lstm_cell_backward)(float *dgates, float *dh_prev, float *dc_prev, const float *dh,
                               const float *dc, const float *gates, const float *c,
                               const float *c_prev, const float *mask, int B, int H);

    /* ---- GRU cell (Cho et al. 2014, in the form of cuDNN and PyTorch; gate order r, z, n) ----
     * gx[B,3H]: on entry x W_ihᵀ + b_ih; on return the activations (r, z, n), kept for backward.
     * gh[B,3H]: h_prev W_hhᵀ + b_hh (read only; its n part is needed again by backward).
     * r = σ(gx_r + gh_r); z = σ(gx_z + gh_z); n = tanh(gx_n + r ⊙ gh_n);
     * h = (1 − z) ⊙ n + z ⊙ h_prev. With mask[B] (may be NULL) a masked row keeps h = h_prev. */
    void (*gru_cell_forward)(float *h, float *gx, const float *gh, const float *h_prev,
                             const float *mask, int B, int H);
    /* Given dh[B,H] (complete), writes dgx[B,3H] and dgh[B,3H] (pre-activation gradients of the
     * two products; overwritten: temporaries) and accumulates dh_prev (the direct z ⊙ h_prev
     * path only; the caller adds dgh W_hh). Masked rows: dgx = dgh = 0, dh_prev += dh. */
    void (*gru_cell_backward)(float *dgx, float *dgh, float *dh_prev, const float *dh,
                              const float *gx, const float *gh, const float *h_prev,
                              const float *mask, int B, int H);

    /* ---- additive attention (Bahdanau et al. 2015 eq. 6; Luong et al. 2015 eq. 8 "concat") ----
     * Rows r = b·NH + h of B·NH (an RNN calls with NH = 1); row r uses v[h] and key_len[b].
     * score[r,t,s] = v[h]ᵀ tanh(qp[r,t,:] + kp[r,s,:]) for s < key_len[b] (and, causal,
     * s <= t + Tk − Tq), −∞ beyond; weights[B,NH,Tq,Tk] = softmax_s(score) (saved);
     * out[B,NH,Tq,Dv] = Σ_s weights · values[r,s,:]. qp[B,NH,Tq,A] the projected queries (W q),
     * kp[B,NH,Tk,A] the projected keys (U h_s), v[NH,A], key_len[B] (NULL: all visible). A row
     * with no visible key gets zero weights and zero output. The forward needs no workspace. */
    void (*additive_attn_forward)(float *out, float *weights, const float *qp, const float *kp,
                                  const float *v, const float *values, const int *key_len,
                                  int causal, int B, int NH, int Tq, int Tk, int A, int Dv);
    /* Accumulates dqp, dkp, dv[NH,A], dvalues (each may be NULL; shapes as above); the
     * tanh is recomputed from qp and kp, so nothing of size B·Tq·Tk·A is stored. work: backend
     * memory of additive_attn_workspace floats (may be NULL where that is 0); a NULL work where
     * the backend needs some is a CHECK. */
    void (*additive_attn_backward)(float *dqp, float *dkp, float *dv, float *dvalues,
                                   const float *dout, const float *qp, const float *kp,
                                   const float *v, const float *values, const float *weights,
                                   int B, int NH, int Tq, int Tk, int A, int Dv, float *work);
    /* Floats of work additive_attn_backward needs for these sizes (the CPU: 0, its scratch is
     * per-thread stack rows; the CUDA backend: the score gradients [B·NH,Tq,Tk] and the
     * queries' shares of dv [B·NH,Tq,A], so its sum over them is deterministic). No errors. */
    size_t (*additive_attn_workspace)(int B, int NH, int Tq, int Tk, int A, int Dv);

    /* ---- efficient attention kinds (multi-head; the Transformer and the RNN) ----
     * Layout: q[B,NH,Tq,D], k[B,NH,Tk,D], v[B,NH,Tk,Dv], out[B,NH,Tq,Dv]; key_len[B] (backend
     * memory): keys at positions >= key_len[b] take no part; causal: key s is visible to query t
     * only if s <= t + (Tk − Tq) (as attn_forward). Backward passes accumulate into dq, dk, dv
     * (each may be NULL).
     *
     * Flash attention (Dao et al. 2022, Algorithm 1 forward, Algorithm 2 backward): exact
     * softmax(scale·q kᵀ + mask) v computed over tiles of keys with the online softmax; keeps only
     * lse[B,NH,Tq] = log Σ_s exp(scale·q·k_s) per row (−∞ for a row with no visible key, whose
     * output is 0); the backward recomputes the scores tile by tile from q, k and lse, using
     * rowsum(dout ⊙ out); no Tq×Tk matrix is stored, extra memory is O(tile) per thread. */
    void (*flash_attn_forward)(float *out, float *lse, const float *q, const float *k,
                               const float *v, const int *key_len, float scale, int causal, int B,
                               int NH, int Tq, int Tk, int D, int Dv, float *work);
    void (*flash_attn_backward)(float *dq, float *dk, float *dv, const float *dout,
                                const float *q, const float *k, const float *v, const float *out,
                                const float *lse, const int *key_len, float scale, int causal,
                                int B, int NH, int Tq, int Tk, int D, int Dv, float *work);
    /* Floats of work that flash_attn_forward and _backward need for these sizes, for every
     * thread the backend may use (the CPU: omp_get_max_threads() at the time of the call, so a
     * caller sizes work after setting its thread count). Ops never allocate (docs/design.md §2). */
    size_t (*flash_attn_workspace)(int B, int NH, int Tq, int Tk, int D, int Dv);
    /* Linear attention (Katharopoulos et al. 2020 eq. 6–9) with the feature map φ chosen by
     * phi (LINEAR_PHI_*, below): φ(x) = elu(x) + 1 (LINEAR_PHI_ELU1, the paper's), or φ(x) = x
     * (LINEAR_PHI_IDENTITY: q and k are already features, non-negative dot products, e.g. the
     * taylor kind's [1; x/‖x‖₂] from l2feature_forward; then dq, dk are the gradients of the
     * features themselves):
     * out_t = φ(q_t)ᵀ Σ_s φ(k_s) v_sᵀ / (φ(q_t)ᵀ Σ_s φ(k_s) + 1e-6) over the visible keys s;
     * causal: prefix sums over s (eq. 8–9); the backward recomputes the running sums forward and
     * backward in time (§3.3.1) instead of storing one D×Dv state per position. Nothing of size
     * Tq×Tk or T·D·Dv is stored. A row with no visible key gets out = 0. */
    void (*linear_attn_forward)(float *out, const float *q, const float *k, const float *v,
                                const int *key_len, int causal, int phi, int B, int NH, int Tq,
                                int Tk, int D, int Dv, float *work);
    void (*linear_attn_backward)(float *dq, float *dk, float *dv, const float *dout,
                                 const float *q, const float *k, const float *v,
                                 const int *key_len, int causal, int phi, int B, int NH, int Tq,
                                 int Tk, int D, int Dv, float *work);
    /* Floats of work for linear_attn_forward and _backward (as flash_attn_workspace). */
    size_t (*linear_attn_workspace)(int B, int NH, int Tq, int Tk, int D, int Dv);
    /* One step of causal linear attention as a recurrence (Katharopoulos et al. 2020 §3.4,
     * the recurrent form), for incremental decoding: per row and head,
     * state[D,Dv] += φ(k) vᵀ, zsum[D] += φ(k), then out = stateᵀ φ(q) / (φ(q)·zsum + 1e-6),
     * φ as phi says (LINEAR_PHI_*).
     * q, k [B,NH,D], v, out [B,NH,Dv], state [B,NH,D,Dv], zsum [B,NH,D] (zero before the first
     * step). Step t's out equals row t of linear_attn_forward with causal = 1, bit for bit.
     * No workspace (the CUDA backend keeps its 2·D + Dv + 1 floats of row scratch per (b, h) in
     * shared memory: it CHECKs 2·D + Dv + 1 <= 12288, 48 KiB). */
    void (*linear_attn_step)(float *out, float *state, float *zsum, const float *q,
                             const float *k, const float *v, int phi, int B, int NH, int D,
                             int Dv);
    /* Non-causal linear attention split at its summary, for keys and values read by many calls
     * (the RNN decoder: one query per target step over the same encoder states). Per (b, h),
     * over the L = min(key_len[b], Tk) visible keys (key_len NULL: all Tk):
     * linear_attn_summary overwrites state[B,NH,D,Dv] = Σ_{s<L} φ(k_s) v_sᵀ and
     * zsum[B,NH,D] = Σ_{s<L} φ(k_s) (Katharopoulos et al. 2020 eq. 6), the keys added in order
     * s = 0 .. L−1; then linear_attn_read overwrites out[B,NH,Tq,Dv] with
     * out_t = stateᵀ φ(q_t) / (φ(q_t)·zsum + 1e-6) for q [B,NH,Tq,D]. The two equal one
     * linear_attn_forward with causal = 0 over the same keys, bit for bit (a pair with L = 0 has
     * state = zsum = 0 and out = 0). phi as linear_attn_forward. No workspace; errors: the
     * CUDA backend keeps a block's row scratch (read: D + 1 floats, read_backward: D + Dv + 2,
     * summary_backward: D) in shared memory and CHECKs it against 48 KiB. */
    void (*linear_attn_summary)(float *state, float *zsum, const float *k, const float *v,
                                const int *key_len, int phi, int B, int NH, int Tk, int D,
                                int Dv);
    void (*linear_attn_read)(float *out, const float *q, const float *state, const float *zsum,
                             int phi, int B, int NH, int Tq, int D, int Dv);
    /* The read's backward, with g_t = dout_t, den_t = φ(q_t)·zsum + 1e-6, out_t recomputed and
     * c_t = (g_t·out_t) / den_t: accumulates (+=) dq_t += ((state g_t − zsum (g_t·out_t)) / den_t)
     * ⊙ φ'(q_t) (dq may be NULL), dstate[B,NH,D,Dv] += Σ_t φ(q_t) g_tᵀ / den_t and
     * dzsum[B,NH,D] −= Σ_t φ(q_t) c_t (the sums over t in order t = 0 .. Tq−1). */
    void (*linear_attn_read_backward)(float *dq, float *dstate, float *dzsum, const float *dout,
                                      const float *q, const float *state, const float *zsum,
                                      int phi, int B, int NH, int Tq, int D, int Dv);
    /* The summary's backward: for the visible keys s < L, accumulates
     * dk_s += (dstate v_s + dzsum) ⊙ φ'(k_s) and dv_s += dstateᵀ φ(k_s) (dk [B,NH,Tk,D],
     * dv [B,NH,Tk,Dv]; either may be NULL; dk may be the same buffer as dv when k is v and
     * D = Dv); padded keys get nothing. Read_backward's sums over every call, then this once,
     * give linear_attn_backward's dk, dv of the calls taken together (up to rounding). */
    void (*linear_attn_summary_backward)(float *dk, float *dv, const float *dstate,
                                         const float *dzsum, const float *k, const float *v,
                                         const int *key_len, int phi, int B, int NH, int Tk,
                                         int D, int Dv);
    /* The features of first-order Taylor linear attention (Li et al. 2020, "Linear Attention
     * Mechanism: An Efficient Attention for Semantic Segmentation"; the taylor kind): per row n,
     * r = 1/√(‖inp[n]‖² + 1e-12) (the squared norm summed in double), x̂ = inp[n]·r and
     * out[n] = [1; x̂], so that out_q·out_k = 1 + q̂·k̂ ≥ 0. out[N, D+1], inp[N, D]. */
    void (*l2feature_forward)(float *out, const float *inp, int N, int D);
    /* dinp[N,D] += r (dx̂ − x̂ (x̂·dx̂)), dx̂ = dout[n, 1..D] (dout[n, 0] is the constant's and
     * ignored), r and x̂ recomputed from inp (x̂·dx̂ summed in double). */
    void (*l2feature_backward)(float *dinp, const float *dout, const float *inp, int N, int D);
    /* Linformer's projection over the key axis (Wang et al. 2020 eq. 7: E_i K, F_i V), with
     * padding zeroed first: per (b, h), L = min(key_len[b], Tk) visible positions,
     *   out[b,h,j,:] = Σ_{s<L} P_h[j,s] x[b,h,s,:]   (j < R; positions s >= L contribute 0).
     * x [B,NH,Tk,D], out [B,NH,R,D] (overwritten); P holds NP = NH (shared = 0) or 1 (shared = 1,
     * one [R,n] for every head) matrices [R, n] of which only the first Tk columns are read
     * (Tk <= n, the caller's contract); key_len [B] (NULL: all Tk visible). A pair with L = 0
     * gets out = 0. No workspace. Source: Wang et al. 2020, "Linformer: Self-Attention with
     * Linear Complexity", eq. 7. */
    void (*linformer_proj_forward)(float *out, const float *P, const float *x, const int *key_len,
                                   int B, int NH, int R, int Tk, int D, int n, int shared);
    /* Its backward (each of dx, dP may be NULL): dx[b,h,s,:] += Σ_j P_h[j,s] dout[b,h,j,:] for
     * s < L (padded positions get nothing), dP_h[j,s] += Σ_b [s < L_b] Σ_d dout[b,h,j,d]
     * x[b,h,s,d] (shared: summed over the heads too) for s < Tk; columns s >= Tk untouched. The
     * sums over b (and h) run in a fixed order: deterministic, no atomics. */
    void (*linformer_proj_backward)(float *dx, float *dP, const float *dout, const float *P,
                                    const float *x, const int *key_len, int B, int NH, int R,
                                    int Tk, int D, int n, int shared);
    /* Local attention (Luong et al. 2015 §3.2; the luong_local kind): rows r = b·NH + h of
     * B·NH, row r uses key_len[b] and, additive, va[h]. Per query t of row r, with
     * len = min(key_len[b], Tk) (Tk when key_len is NULL) and W = window (D of the paper):
     *   p_t = pos0 + t (local-m, z NULL) or p_t = len·σ(z[b·Tq + t]) (local-p, eq. 9; one
     *   position per query, shared by the heads);
     *   the window W_t = {integer s : |s − p_t| ≤ W, 0 ≤ s < len} (clipped to the valid keys);
     *   e_s = scale·q_t·k_s (dot; va NULL) or va[h]ᵀ tanh(q_t + k_s) (additive; D = A);
     *   a_s = softmax_{s ∈ W_t}(e)_s (eq. 7 restricted to the window), times
     *   exp(−(s − p_t)² / (2σ²)), σ = W/2, for local-p (eq. 10); 0 outside W_t;
     *   out[B,NH,Tq,Dv] = Σ_s a_s v_s; the weights are saved as the window alone:
     *   weights[B,NH,Tq,LW], LW = local_attn_save_width(W) = 2W + 2, per query row
     *   [lo, a_lo, a_{lo+1}, …, a_{lo+2W}] with lo = max(⌈p_t − W⌉, 0) the window's first key
     *   (an integer held in a float: exact below 2^24) and 0 past its last key (the window
     *   holds at most 2W + 1 keys), so a row takes O(W) memory, not O(Tk).
     * q[B,NH,Tq,D], k[B,NH,Tk,D], va[NH,D] or NULL, v[B,NH,Tk,Dv], z[B,Tq] or NULL. A row with
     * an empty window (local-m, p_t ≥ len + W) gets zero weights and zero output. No causal
     * form. The forward needs no workspace. */
    void (*local_attn_forward)(float *out, float *weights, const float *q, const float *k,
                               const float *va, const float *v, const float *z,
                               const int *key_len, float scale, int window, int pos0, int B,
                               int NH, int Tq, int Tk, int D, int Dv);
    /* Accumulates dq, dk, dva [NH,D] (additive only), dv and dz [B,Tq] (local-p only; each may
     * be NULL). The window is recomputed from z as the forward found it; dz is the gradient
     * through p_t in the Gaussian, dp = Σ_s dL/da_s · a_s (s − p_t)/σ², dz = dp·p_t(1 − p_t/len);
     * window membership is piecewise constant in p_t and contributes nothing. work:
     * local_attn_workspace floats (a NULL work where that is > 0 is a CHECK). */
    void (*local_attn_backward)(float *dq, float *dk, float *dva, float *dv, float *dz,
                                const float *dout, const float *q, const float *k,
                                const float *va, const float *v, const float *z,
                                const float *weights, const int *key_len, float scale,
                                int window, int pos0, int B, int NH, int Tq, int Tk, int D,
                                int Dv, float *work);
    /* Floats of work for local_attn_backward (the CPU: 0; CUDA: the score gradients of the
     * windows [B·NH,Tq,2W+1], the per-row gradients of z [B·NH,Tq] and the rows' shares of dva
     * [B·NH,D]): O(Tq·W) per head. */
    size_t (*local_attn_workspace)(int B, int NH, int Tq, int Tk, int D, int Dv, int window);
    /* Efficient attention (Shen et al. 2021 eq. 2): out = ρ_q(q) (ρ_k(k)ᵀ v) with ρ_q the
     * softmax over each row of q (over D) and ρ_k the softmax over each column of k (over the
     * key_len[b] visible positions); no causal form (callers must refuse one). */
    void (*efficient_attn_forward)(float *out, const float *q, const float *k, const float *v,
                                   const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                   int Dv, float *work);
    void (*efficient_attn_backward)(float *dq, float *dk, float *dv, const float *dout,
                                    const float *q, const float *k, const float *v,
                                    const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                    int Dv, float *work);
    /* Floats of work for efficient_attn_forward and _backward (as flash_attn_workspace). */
    size_t (*efficient_attn_workspace)(int B, int NH, int Tq, int Tk, int D, int Dv);
    /* Efficient attention split at its context, as linear_attn_summary and _read (the RNN
     * decoder's keys read by many calls): efficient_attn_summary overwrites
     * ctx[B,NH,D,Dv] = ρ_k(k)ᵀ v over the L = min(key_len[b], Tk) visible keys (key_len NULL:
     * all Tk; 0 where L = 0); efficient_attn_read overwrites out[B,NH,Tq,Dv] = ρ_q(q) ctx for
     * q [B,NH,Tq,D]. The two equal one efficient_attn_forward over the same keys, bit for bit.
     * No workspace; errors: the CUDA backend keeps up to 3·D floats of a block's scratch in
     * shared memory and CHECKs them against 48 KiB. */
    void (*efficient_attn_summary)(float *ctx, const float *k, const float *v,
                                   const int *key_len, int B, int NH, int Tk, int D, int Dv);
    void (*efficient_attn_read)(float *out, const float *q, const float *ctx, int B, int NH,
                                int Tq, int D, int Dv);
    /* The read's backward: with P_t = ρ_q(q_t) and g_t = dout_t, accumulates (+=)
     * dq_t += P_t ⊙ (ctx g_t − P_t·(ctx g_t)) (dq may be NULL) and
     * dctx[B,NH,D,Dv] += Σ_t P_t g_tᵀ (over t in order 0 .. Tq−1). */
    void (*efficient_attn_read_backward)(float *dq, float *dctx, const float *dout,
                                         const float *q, const float *ctx, int B, int NH, int Tq,
                                         int D, int Dv);
    /* The context's backward, from dctx and the context itself: for the visible keys s < L,
     * with K = ρ_k(k) recomputed, accumulates dk_sd += K_sd ((dctx v_s)_d − Σ_e dctx_de ctx_de)
     * and dv_s += dctxᵀ K_s (dk, dv as efficient_attn_backward's; either may be NULL; dk may be
     * the same buffer as dv when k is v and D = Dv); padded keys get nothing. */
    void (*efficient_attn_summary_backward)(float *dk, float *dv, const float *dctx,
                                            const float *ctx, const float *k, const float *v,
                                            const int *key_len, int B, int NH, int Tk, int D,
                                            int Dv);

    /* ---- rows (—) ----
     * dst[i, :] = src[idx[i], :] for i < n, rows of D floats (beam search: expand and reorder
     * hypotheses). idx in backend memory; dst and src must not overlap. */
    void (*gather_rows)(float *dst, const float *src, const int *idx, int n, int D);

    /* ---- attention core: scores materialised (Luong et al. 2015 eq. 7–8; Vaswani et al. 2017
     * eq. 1) ----
     * out[B,NH,Tq,Dv] = softmax(scale · q kᵀ + mask) v, with weights[B,NH,Tq,Tk] saved.
     * q[B,NH,Tq,D], k[B,NH,Tk,D], v[B,NH,Tk,Dv]; key_len[B] (NULL: all visible): keys at
     * positions >= key_len[b] get weight 0 (-inf score); causal: key s > query t + (Tk - Tq) is
     * masked. A fully masked row yields zero weights and zero output. No workspace. */
    void (*attn_forward)(float *out, float *weights, const float *q, const float *k,
                         const float *v, const int *key_len, float scale, int causal, int B,
                         int NH, int Tq, int Tk, int D, int Dv);
    /* dq, dk, dv accumulate (each may be NULL); work: attn_workspace floats. */
    void (*attn_backward)(float *dq, float *dk, float *dv, const float *dout, const float *q,
                          const float *k, const float *v, const float *weights, float scale,
                          int B, int NH, int Tq, int Tk, int D, int Dv, float *work);
    /* Floats of work for attn_backward (as flash_attn_workspace). */
    size_t (*attn_workspace)(int B, int NH, int Tq, int Tk, int D, int Dv);
    /* attn_forward and attn_backward on the heads' merged layout, the one the projections
     * write: q, out, dq, dout [B, Tq, NH, D] (row (b, t) of [B·Tq, NH·D], head h at columns
     * h·D …), k, dk [B, Tk, NH, D], v, dv [B, Tk, NH, Dv]; weights, work and everything else
     * as above, except that attn_backward_merged OVERWRITES dq, dk, dv (each non-NULL one),
     * so that the caller zeroes nothing. Equal to splitting the heads (permute0213) around
     * attn_forward / attn_backward (into zeroed gradients) and merging them after, without
     * those copies (mha.c). Optional: where a backend leaves them NULL, the caller splits and
     * merges (attention_merged_ok). */
    void (*attn_forward_merged)(float *out, float *weights, const float *q, const float *k,
                                const float *v, const int *key_len, float scale, int causal,
                                int B, int NH, int Tq, int Tk, int D, int Dv);
    void (*attn_backward_merged)(float *dq, float *dk, float *dv, const float *dout,
                                 const float *q, const float *k, const float *v,
                                 const float *weights, float scale, int B, int NH, int Tq,
                                 int Tk, int D, int Dv, float *work);

    /* ---- pointwise attention: each weight a function of its own score, no normalisation
     * over the keys (the sigmoid and rela kinds) ----
     * weights[B,NH,Tq,Tk] = f(scale · q_t·k_s + bias_t) for the visible keys s (as attn_forward:
     * s < key_len[b] and, causal, s <= t + Tk − Tq), exactly 0 for the others;
     * out[B,NH,Tq,Dv] = Σ_s weights_ts v_s. fn (POINTWISE_*, above) chooses f and bias:
     *   POINTWISE_SIGMOID: f = σ, bias_t = −log n_t, n_t the number of keys query t sees
     *     (Ramapuram et al. 2024, "Theory, analysis, and best practices for sigmoid
     *     self-attention", b = −log n; here n counted per query row: n_t = min(key_len[b],
     *     t + 1 + Tk − Tq) when causal, else min(key_len[b], Tk));
     *   POINTWISE_RELU: f = max(·, 0), bias 0 (Zhang et al. 2021, "Sparse attention with
     *     linear units", before its normalisation).
     * Shapes as attn_forward's; a row with no visible key gets zero weights and zero output.
     * No workspace for the forward. */
    void (*pointwise_attn_forward)(float *out, float *weights, const float *q, const float *k,
                                   const float *v, const int *key_len, float scale, int causal,
                                   int fn, int B, int NH, int Tq, int Tk, int D, int Dv);
    /* Accumulates dq, dk, dv (each may be NULL) from the saved weights alone: dv += weightsᵀ
     * dout, and with dP = dout vᵀ, dS = f'(w) ⊙ dP · scale (σ: w (1 − w); relu: [w > 0]),
     * dq += dS k, dk += dSᵀ q. Masked weights are 0, so f'(0) = 0 passes them nothing (a sigmoid
     * weight that underflowed to 0 likewise). work: pointwise_attn_workspace floats. */
    void (*pointwise_attn_backward)(float *dq, float *dk, float *dv, const float *dout,
                                    const float *q, const float *k, const float *v,
                                    const float *weights, float scale, int fn, int B, int NH,
                                    int Tq, int Tk, int D, int Dv, float *work);
    /* Floats of work for pointwise_attn_backward (as attn_workspace). */
    size_t (*pointwise_attn_workspace)(int B, int NH, int Tq, int Tk, int D, int Dv);
    /* RMS normalisation of each head's rows with a gain per head (Zhang and Sennrich 2019,
     * "Root mean square layer normalization"; ReLA's normalisation, Zhang et al. 2021): per
     * row (b, h, t) of inp [B,NH,T,C], rstd = 1/√(mean_c inp² + 1e-8) (the mean of squares
     * summed in double), out[b,h,t,:] = inp · rstd ⊙ gain[h,:]; rstd [B,NH,T] saved.
     * gain [NH,C]. out may not alias inp. */
    void (*head_rmsnorm_forward)(float *out, float *rstd, const float *inp, const float *gain,
                                 int B, int NH, int T, int C);
    /* Accumulates dinp [B,NH,T,C] += rstd (g − x̂ mean_c(x̂ ⊙ g)), g = dout ⊙ gain[h],
     * x̂ = inp · rstd, and dgain [NH,C] += Σ_{b,t} dout ⊙ x̂ (summed over b, then t, in order:
     * deterministic); either may be NULL. */
    void (*head_rmsnorm_backward)(float *dinp, float *dgain, const float *dout, const float *inp,
                                  const float *gain, const float *rstd, int B, int NH, int T,
                                  int C);

    /* ---- output layer ----
     * Fused log-softmax + cross-entropy with label smoothing (Szegedy et al. 2016 §7):
     * target distribution (1-ε) one-hot + ε/V uniform; rows whose target == ignore_id add
     * nothing. Returns the summed loss over counted rows (nats) and, when dlogits != NULL,
     * WRITES grad_scale * d(loss)/d(logits) to dlogits[N,V] (overwritten, not accumulated:
     * the caller need not zero it; ignored rows get zeros). logits[N,V], targets[N].
     * work: backend memory of xent_workspace(N, V) floats (may be NULL where that is 0); a NULL
     * work where the backend needs some is a CHECK. */
    double (*xent_forward_backward)(float *dlogits, const float *logits, const int *targets,
                                    int N, int V, float smoothing, int ignore_id,
                                    float grad_scale, float *work);
    /* Floats of work xent_forward_backward needs for N rows of V (the CPU: 0, it sums the rows'
     * losses in registers; the CUDA backend: N + 1 doubles, the rows' losses and their sum for
     * the fixed-order two-pass reduction, plus one float to align them). No errors. */
    size_t (*xent_workspace)(int N, int V);
    /* out[N,V] = log_softmax(logits[N,V]) row-wise, in nats (for decoding). */
    void (*log_softmax)(float *out, const float *logits, int N, int V);
    /* ids[N] = argmax_v x[n, v] (first on ties). */
    void (*argmax)(int *ids, const float *x, int N, int V);

    /* ---- optimiser (Kingma & Ba 2015, Algorithm 1, bias-corrected) ----
     * Over n parameters: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²;
     * p -= lr · (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps); t >= 1. */
    void (*adam_update)(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                        float b1, float b2, float eps, int t);

    /* ---- optional: LSTM/GRU layers through cuDNN (model.rnn_impl = cudnn) ----
     * Not OpKinds: NULL on the cpu backend and on the emulated (SIMT) cuda backend, non-NULL only
     * on a cuda backend built with cuDNN (TRAINER_CUDNN) whose cuDNN handle started; a model asks
     * for them (rnn_set_impl) and refuses to run without them. cuDNN cannot be emulated, so these
     * are checked only against our own cells, on a real GPU (tests/model/test_model_cuda.c).
     * Sources: cuDNN API reference (cudnn_adv): cudnnRNNForward, cudnnRNNBackwardData_v8,
     * cudnnRNNBackwardWeights_v8, cudnnGetRNNWeightParams, cudnnGetRNNTempSpaceSizes,
     * cudnnGetRNNWeightSpaceSize, cudnnSetRNNDataDescriptor; the equations are those of
     * lstm_cell_forward and gru_cell_forward above (cuDNN's LSTM, and its GRU, which is the
     * "linear before reset" form used here).
     *
     * Shapes (time-major, s: RnnSeqShape): x [T,B,I], y [T,B,D·Hs] (direction d in columns
     * d·Hs .. d·Hs+Hs−1, the layout of [→h; ←h]), hx, hy, cx, cy [D,B,Hs]. len[B] (backend memory)
     * and len_host[B] (host) are the same lengths, 1 <= len[b] <= T (CHECKed: a zero-length
     * sequence aborts). Sequence b is x[0 .. len[b]−1, b]; y at t >= len[b] is 0, and hy, cy are
     * each sequence's state after its own last step (direction 1: after step 0). Our masked cells
     * (mask = t < len[b]) give the same y for t < len[b] and, for direction 1, for t >= len[b]
     * (0); direction 0 keeps its state there (see model/rnn.c for why nothing reads it).
     * params[D]: direction d's parameters, copied into wspace (sizes.weights floats) by each
     * forward; wspace must still hold them at the matching backward.
     *
     * rnn_seq_sizes: *out for batches of up to s->B rows and s->T steps (cuDNN's sizes for the
     * longest batch; every smaller batch needs no more, which forward and backward CHECK:
     * "cuDNN RNN workspace too small: rnn_reserve it for this batch"). No other errors. */
    void (*rnn_seq_sizes)(RnnSeqSizes *out, const RnnSeqShape *s);
    /* y = the layer over x from the initial state hx, cx (either may be NULL: zeros); writes y,
     * and hy, cy when non-NULL (cy, cx: LSTM only). train != 0 fills reserve for the backward
     * (cuDNN's training mode), train = 0 leaves it untouched (inference mode). work, reserve:
     * work_n, reserve_n floats of backend memory (rnn_seq_sizes). Math: fp32 (CUDNN_FMA_MATH)
     * at precision fp32, TF32 tensor cores allowed (CUDNN_DEFAULT_MATH) at tf32 and bf16 (cuDNN
     * has no bf16 rounding of fp32 RNN data). Errors: cuDNN failures abort (CUDNN_CHECK). */
    void (*rnn_seq_forward)(float *y, float *hy, float *cy, const float *x, const float *hx,
                            const float *cx, const RnnSeqParams *params, const int *len,
                            const int *len_host, const RnnSeqShape *s, int train, float *wspace,
                            float *work, size_t work_n, float *reserve, size_t reserve_n);
    /* Backward of a training rnn_seq_forward of the same inputs (the same x, hx, cx, y, lengths,
     * wspace and reserve). dy [T,B,D·Hs] (ignored at t >= len[b]), dhy, dcy [D,B,Hs] (may be
     * NULL: zero). WRITES dx [T,B,I] (overwritten, not accumulated: 0 at t >= len[b]) and dhx,
     * dcx when non-NULL; ACCUMULATES the parameter gradients into grads[D] (as every op: +=).
     * dwspace: sizes.weights floats of scratch (zeroed here, then cuDNN adds into it:
     * CUDNN_WGRAD_MODE_ADD). Errors as rnn_seq_forward. */
    void (*rnn_seq_backward)(float *dx, float *dhx, float *dcx, const RnnSeqParams *grads,
                             const float *dy, const float *dhy, const float *dcy, const float *x,
                             const float *y, const float *hx, const float *cx, const int *len,
                             const int *len_host, const RnnSeqShape *s, const float *wspace,
                             float *dwspace, float *work, size_t work_n, float *reserve,
                             size_t reserve_n);
};

/* Every computational op of the Backend table (not the memory functions), one per field and named
 * as the field: OP_MATMUL is Backend.matmul. op_name() gives the field's name ("matmul"); the
 * tables behind op_name and supports_op are checked against OP_COUNT at compile time (ops.c).
 * One row X(ENUM, field) per op gives OpKind OP_<ENUM> and the name table (ops.c). A new op is
 * appended at the end: test_backend_ops seeds each op's inputs from its number, so inserting
 * one would redraw the inputs of every op after it. */
#define OP_KINDS(X)                                                      \
    X(MATMUL, matmul)                                                    \
    X(MATMUL_BIAS_FORWARD, matmul_bias_forward)                          \
    X(BIAS_FORWARD, bias_forward)                                        \
    X(BIAS_BACKWARD, bias_backward)                                      \
    X(AXPY, axpy)                                                        \
    X(SCALE, scale)                                                      \
    X(SUMSQ, sumsq)                                                      \
    X(ALL_FINITE, all_finite)                                            \
    X(CONCAT2_FORWARD, concat2_forward)                                  \
    X(CONCAT2_BACKWARD, concat2_backward)                                \
    X(TRANSPOSE01_FORWARD, transpose01_forward)                          \
    X(TRANSPOSE01_BACKWARD, transpose01_backward)                        \
    X(TANH_FORWARD, tanh_forward)                                        \
    X(TANH_BACKWARD, tanh_backward)                                      \
    X(DROPOUT_FORWARD, dropout_forward)                                  \
    X(DROPOUT_BACKWARD, dropout_backward)                                \
    X(LAYERNORM_FORWARD, layernorm_forward)                              \
    X(LAYERNORM_BACKWARD, layernorm_backward)                            \
    X(BIAS_RELU_DROPOUT_FORWARD, bias_relu_dropout_forward)              \
    X(RELU_DROPOUT_BACKWARD, relu_dropout_backward)                      \
    X(PERMUTE0213_FORWARD, permute0213_forward)                          \
    X(PERMUTE0213_BACKWARD, permute0213_backward)                        \
    X(WRITE_STEP, write_step)                                            \
    X(GATHER_ROWS_STRIDED, gather_rows_strided)                          \
    X(EMBEDDING_FORWARD, embedding_forward)                              \
    X(EMBEDDING_BACKWARD, embedding_backward)                            \
    X(LSTM_CELL_FORWARD, lstm_cell_forward)                              \
    X(LSTM_CELL_BACKWARD, lstm_cell_backward)                            \
    X(GRU_CELL_FORWARD, gru_cell_forward)                                \
    X(GRU_CELL_BACKWARD, gru_cell_backward)                              \
    X(ADDITIVE_ATTN_FORWARD, additive_attn_forward)                      \
    X(ADDITIVE_ATTN_BACKWARD, additive_attn_backward)                    \
    X(FLASH_ATTN_FORWARD, flash_attn_forward)                            \
    X(FLASH_ATTN_BACKWARD, flash_attn_backward)                          \
    X(LINEAR_ATTN_FORWARD, linear_attn_forward)                          \
    X(LINEAR_ATTN_BACKWARD, linear_attn_backward)                        \
    X(LINEAR_ATTN_STEP, linear_attn_step)                                \
    X(L2FEATURE_FORWARD, l2feature_forward)                              \
    X(L2FEATURE_BACKWARD, l2feature_backward)                            \
    X(LINFORMER_PROJ_FORWARD, linformer_proj_forward)                    \
    X(LINFORMER_PROJ_BACKWARD, linformer_proj_backward)                  \
    X(EFFICIENT_ATTN_FORWARD, efficient_attn_forward)                    \
    X(EFFICIENT_ATTN_BACKWARD, efficient_attn_backward)                  \
    X(GATHER_ROWS, gather_rows)                                          \
    X(ATTN_FORWARD, attn_forward)                                        \
    X(ATTN_BACKWARD, attn_backward)                                      \
    X(ATTN_WORKSPACE, attn_workspace)                                    \
    X(ATTN_FORWARD_MERGED, attn_forward_merged)                          \
    X(ATTN_BACKWARD_MERGED, attn_backward_merged)                        \
    X(FLASH_ATTN_WORKSPACE, flash_attn_workspace)                        \
    X(LINEAR_ATTN_WORKSPACE, linear_attn_workspace)                      \
    X(EFFICIENT_ATTN_WORKSPACE, efficient_attn_workspace)                \
    X(ADDITIVE_ATTN_WORKSPACE, additive_attn_workspace)                  \
    X(LOCAL_ATTN_FORWARD, local_attn_forward)                            \
    X(LOCAL_ATTN_BACKWARD, local_attn_backward)                          \
    X(LOCAL_ATTN_WORKSPACE, local_attn_workspace)                        \
    X(XENT_FORWARD_BACKWARD, xent_forward_backward)                      \
    X(XENT_WORKSPACE, xent_workspace)                                    \
    X(LOG_SOFTMAX, log_softmax)                                          \
    X(ARGMAX, argmax)                                                    \
    X(ADAM_UPDATE, adam_update)                                          \
    X(LINEAR_ATTN_SUMMARY, linear_attn_summary)                          \
    X(LINEAR_ATTN_READ, linear_attn_read)                                \
    X(LINEAR_ATTN_READ_BACKWARD, linear_attn_read_backward)              \
    X(LINEAR_ATTN_SUMMARY_BACKWARD, linear_attn_summary_backward)        \
    X(EFFICIENT_ATTN_SUMMARY, efficient_attn_summary)                    \
    X(EFFICIENT_ATTN_READ, efficient_attn_read)                          \
    X(EFFICIENT_ATTN_READ_BACKWARD, efficient_attn_read_backward)        \
    X(EFFICIENT_ATTN_SUMMARY_BACKWARD, efficient_attn_summary_backward)  \
    X(POINTWISE_ATTN_FORWARD, pointwise_attn_forward)                    \
    X(POINTWISE_ATTN_BACKWARD, pointwise_attn_backward)                  \
    X(POINTWISE_ATTN_WORKSPACE, pointwise_attn_workspace)                \
    X(HEAD_RMSNORM_FORWARD, head_rmsnorm_forward)                        \
    X(HEAD_RMSNORM_BACKWARD, head_rmsnorm_backward)

#define OP_KIND_ENUM_(E, field) OP_##E,
typedef enum OpKind { OP_KINDS(OP_KIND_ENUM_) OP_COUNT } OpKind;
#undef OP_KIND_ENUM_

/* The op families, X(family) once for each. A family is one file in each backend,
 * ops/cpu/<family>.c and ops/cuda/<family>.cu, ending in void cpu_register_<family>(Backend *)
 * and void cuda_register_<family>(Backend *), which set the fields named beside it. Both
 * backends declare (cpu_internal.h, cuda_internal.h) and call (backend_cpu.c, backend_cuda.cu)
 * their registrations from this list, in its order, after setting the memory functions (a CUDA
 * family may allocate its fixed scratch through be->alloc), so a family that one backend lacks
 * fails to link. A family that one backend alone has is registered by that backend by hand (the
 * CUDA backend's rnn_cudnn: rnn_seq_*, with cuDNN only). A new family: its two files, one line
 * here, its fields and their OP_KINDS rows above, and their cases in tests/ops (bench/
 * op_profile.c times an op that has a shim there and names the others). */
#define OP_FAMILIES(X)                                                                           \
    X(matmul)        /* matmul, matmul_bias_forward (the CPU also: matmul_run, matmul_hold,    \
                        matmul_keep, matmul_transb_slower) */                                    \
    X(bias)          /* bias_forward, bias_backward */                                           \
    X(elementwise)   /* axpy, scale, sumsq, all_finite, tanh_forward, tanh_backward */           \
    X(dropout)       /* dropout_*, bias_relu_dropout_forward, relu_dropout_backward */           \
    X(layernorm)     /* layernorm_* */                                                           \
    X(embedding)     /* embedding_* */                                                           \
    X(softmax_xent)  /* xent_forward_backward, xent_workspace, log_softmax, argmax */            \
    X(lstm)          /* lstm_cell_* */                                                           \
    X(gru)           /* gru_cell_* */                                                            \
    X(adam)          /* adam_update */                                                           \
    X(shape)         /* concat2_*, transpose01_*, permute0213_*, write_step, gather_rows,        \
                        gather_rows_strided */                                                   \
    X(attn_sdp)      /* attn_forward, attn_backward, attn_*_merged, attn_workspace */            \
    X(attn_additive) /* additive_attn_* */                                                       \
    X(attn_local)    /* local_attn_* */                                                          \
    X(flash)         /* flash_attn_* */                                                          \
    X(linear)        /* linear_attn_*, l2feature_* (the taylor kind's features) */               \
    X(efficient)     /* efficient_attn_* */                                                      \
    X(linformer)     /* linformer_proj_* */                                                      \
    X(attn_pointwise) /* pointwise_attn_*, head_rmsnorm_* (the sigmoid and rela kinds) */

/* The op's name as the Backend field is spelled ("flash_attn_backward"); "?" out of range.
 * No errors. Source: ggml's GGML_OP_NAME (the idea). */
const char *op_name(OpKind op);

/* The byte offset of op's function pointer in Backend (tests build tables that lack ops).
 * CHECKs that op is in range. */
size_t op_offset(OpKind op);

/* 1 if be implements op (its table entry is non-NULL), else 0. CHECKs that op is in range
 * ("supports_op: OpKind out of range"). Source: ggml's supports_op (the idea). */
int supports_op(const Backend *be, OpKind op);

/* Floats local_attn_forward saves per query row for a window of half-width window (≥ 0): the
 * window's first key and its 2·window + 1 weights (local_attn_forward above). No errors.
 * Source: Luong et al. 2015 §3.2 (the window [p_t − D, p_t + D]). */
static inline int local_attn_save_width(int window) { return 2 * window + 2; }

/* Appends more[0..count) to the op list ops[0..n) (room is the caller's; host memory); returns
 * n + count. No errors. */
int op_list_append(OpKind *ops, int n, const OpKind *more, int count);

/* STATUS_OK if be implements each of ops[0..n) (host array; an op listed twice is named once);
 * else STATUS_ERR with a message naming the backend and every missing op, e.g. "cuda backend: no
 * lstm_cell_forward, flash_attn_backward; use train.device = cpu". Source: docs/design.md §2. */
Status backend_require_ops(const Backend *be, const OpKind *ops, int n, Err *err);

/* ---- Operand-reuse hints ----
 * Four optional entries of the table through which a caller tells the backend what it may keep
 * between matrix products; the CPU at bf16 uses them to round an operand to bfloat16 once
 * instead of once per product. Each helper calls its entry where the backend has one, else does
 * nothing (matmul_transb_slower: returns 0). The results are bit for bit those without the hint
 * (tests/unit/test_precision_cpu.c). No errors. Source: — (ours: no paper). */

/* begin = 1 opens, 0 closes a run of matmul and matmul_bias_forward calls on the calling
 * thread, between which the caller writes nothing and calls no other op: an operand passed
 * again within the run (the same pointer and element count, not overlapped since by a call's
 * output) may reuse the work the backend did on it. The CPU at bf16 keeps the bfloat16
 * rounding of the run's last 6 operands instead of rounding each operand once per product:
 * the results are bit for bit those of the same calls outside a run. Runs do not nest. */
static inline void backend_matmul_run(const Backend *be, int begin) {
    if (be->matmul_run) be->matmul_run(begin);
}
/* Declares that p[0..n) (backend memory) is not written by anything until the next
 * matmul_hold on this thread (p NULL, n 0: none), so that the backend may keep the work it did
 * on matmul operands inside it across products: the CPU at bf16 rounds each weight to bfloat16
 * once per hold (model_loss holds the parameters: once per training step instead of once per
 * product). The CPU CHECKs that no matmul writes into the held range ("matmul: its output
 * overlaps a range held by matmul_hold or matmul_keep"). */
static inline void backend_matmul_hold(const Backend *be, const float *p, size_t n) {
    if (be->matmul_hold) be->matmul_hold(p, n);
}
/* Adds p[0..n) (backend memory) to this thread's current hold: the caller declares that
 * nothing writes it until the next matmul_hold. A model's activation that a later product
 * reads again (a layer's input, multiplied by its weight in the forward and into the weight's
 * gradient in the backward) is then rounded to bfloat16 once per pass by the CPU at bf16, not
 * once per product. Where no hold is current (p of the last matmul_hold NULL), nothing. The CPU
 * CHECKs that no matmul writes into a kept range. */
static inline void backend_matmul_keep(const Backend *be, const float *p, size_t n) {
    if (be->matmul_keep) be->matmul_keep(p, n);
}
/* 1 when this backend's matmul, at its current precision, runs op(B) = Bᵀ of a weight stored
 * [Nc,K] markedly slower than from a copy stored [K,Nc], so that a caller using the weight in
 * several products may keep the transposed copy. The CPU: 1 at fp32 (sgemm), 0 at bf16
 * (oneDNN's bf16 matmul packs either layout alike; bench/bench_gemm measures both). No entry: 0. */
static inline int backend_matmul_transb_slower(const Backend *be) {
    return be->matmul_transb_slower && be->matmul_transb_slower();
}

/* ---- Opening a backend ----
 * The trainer and every command open their backend through backend_open: it sets the threads,
 * starts the CPU backend (ops/cpu/cpu.h) or the CUDA one (ops/cuda/cuda.h) and sets the precision
 * of its products; those headers hold each backend's own controls, for ops/ and the tests. Code
 * above ops/ asks what a build or machine runs here (backend_precision_valid, backend_can_run,
 * backend_info), never ops/cuda/cuda.h. */

enum { BACKEND_DEVICE_CPU = 0, BACKEND_DEVICE_CUDA = 1 }; /* train.device: cpu, cuda */

/* Precision of the matrix products (train.precision): only matmul's A and B inputs are rounded;
 * storage, accumulation, weights and Adam state stay fp32. fp32: not at all; tf32 (cuda only):
 * to 10 mantissa bits; bf16: to 7, nearest even (cuda; cpu in a build with oneDNN). */
enum { BACKEND_PRECISION_FP32 = 0, BACKEND_PRECISION_TF32 = 1, BACKEND_PRECISION_BF16 = 2 };

enum { BACKEND_KEEP = -1 }; /* a BackendOptions field that leaves the process's setting alone */

/* What backend_open opens. A checkpoint loaded during a run opens its device with precision and
 * threads BACKEND_KEEP, so that it changes nothing the run set. */
typedef struct {
    int device;    /* BACKEND_DEVICE_* */
    int precision; /* BACKEND_PRECISION_* from now on, for every product of the backend (a
                    * process-wide setting), or BACKEND_KEEP (fp32 until one is set) */
    int threads;   /* OpenMP and OpenBLAS threads (process-wide): > 0 that many, 0 one per
                    * online core, or BACKEND_KEEP */
    int ordinal;   /* cuda: the GPU, modulo the number of devices (one GPU per rank: the local
                    * rank), or BACKEND_KEEP (the one chosen before, 0 by default); only the
                    * process's first start of the CUDA backend uses it; cpu: unused */
    int rnn_cudnn; /* 1: the caller runs RNN layers on cuDNN (model.rnn_impl = cudnn, the
                    * rnn_seq_* entries), which a build without cuDNN refuses; 0: it does not */
} BackendOptions;

/* Whether device has products at precision on any machine, asking nothing of this one: 1 when
 * it has; else 0 with the reason and what to do in why (n bytes; why may be NULL): "train.precision
 * = tf32 needs train.device = cuda (TF32 is a tensor-core format); on the cpu set
 * train.precision = fp32 or bf16". Values out of range abort (programmer error). */
int backend_precision_valid(int device, int precision, char *why, size_t n);

/* Whether device can run products at precision here, without starting anything: 1 when it
 * can; else 0 with the reason and what to do in why (n bytes; why may be NULL):
 * backend_precision_valid's, or "train.precision = bf16 on train.device = cpu, but <this build
 * has no oneDNN ...>; set train.precision = fp32". Values out of range abort (programmer error). */
int backend_precision_runs(int device, int precision, char *why, size_t n);

/* Whether this build and machine can run o, without starting anything: o->rnn_cudnn on a build
 * without cuDNN, then o->precision (unless BACKEND_KEEP) by backend_precision_runs. 1 when it
 * can; else 0 with the reason and what to do in why (n bytes; why may be NULL): "model.rnn_impl =
 * cudnn, but this build of trainer has no cuDNN (<the SIMT emulation of the CUDA backend cannot
 * run cuDNN | cudnn.h and libcudnn were not found when it was built: install cuDNN and
 * rebuild>); set model.rnn_impl = own", or backend_precision_runs's. Whether a GPU is there is
 * not asked (backend_open finds out). Out-of-range options abort (programmer error). */
int backend_can_run(const BackendOptions *o, char *why, size_t n);

/* What this build's CUDA backend is, and the GPU it started on (backend_info). */
typedef struct {
    int emulated;         /* 1: the SIMT emulation on the host (-DTRAINER_SIMT=ON, tests only) */
    int cudnn;            /* 1: built with cuDNN (model.rnn_impl = cudnn can run) */
    int gpu_index;        /* the ordinal the CUDA backend started on; -1 before it started */
    const char *gpu_name; /* that GPU's name ("SIMT emulation (host)" emulated); "" before */
} BackendInfo;

/* What this build and process hold for device, starting nothing: for BACKEND_DEVICE_CUDA the
 * CUDA backend's (ops/cuda/cuda.h; a build without CUDA: {0, 0, -1, ""}), for
 * BACKEND_DEVICE_CPU {0, 0, -1, ""}. gpu_name is static memory. Another device aborts
 * (programmer error). */
BackendInfo backend_info(int device);

/* Opens o->device's backend into *be: sets the threads, starts the backend (cuda: once per
 * process, on o->ordinal; later calls return the same table), sets the precision, and, when
 * line is not NULL (then o->precision must not be BACKEND_KEEP), writes the one-line
 * description for the log into line (n bytes): "device: cpu, precision bf16, matmul: onednn
 * matmul (bf16 inputs, fp32 accumulation)" (backend_cpu_gemm_name) or "device: cuda, <GPU name>,
 * precision tf32, kernels: own, matmul: cublas (bias: cublasLt epilogue)". Errors (*be NULL,
 * nothing changed but the threads where the CUDA start failed): backend_can_run's
 * refusal; "train.device = cuda: <why>" when this build has no CUDA backend or no device is
 * usable (backend_cuda's message, which says to set train.device = cpu). Out-of-range options
 * abort (programmer error). Call it from the main thread. */
Status backend_open(const BackendOptions *o, const Backend **be, char *line, size_t n, Err *err);

#endif
