/* attention/attention.h — the attention table: every kind, for every model and slot (docs/design.md §4).
 *
 * Legend: B batch (rows), NH heads, Tq query positions, Tk key positions, HS head size,
 * Dq query width, Dk key/value width (the merged heads: Dk = NH·HS), A additive score size,
 * R decoding rows, Tcap cached positions.
 *
 * One calling convention for all kinds: queries q [B, NH, Tq, HS], keys k [B, NH, Tk, HS],
 * values v [B, NH, Tk, HS], key_len [B] (backend memory; NULL = all keys visible) and a causal
 * flag (key s is visible to query t iff s < key_len[b] and, causal, s <= t + Tk − Tq); output
 * o [B, NH, Tq, HS]; what the kind saves for backward (weights [B, NH, Tq, Tk], lse [B, NH, Tq],
 * the weights of each query's window [B, NH, Tq, 2W + 2] or nothing: AttentionSave). The Transformer calls it through mha.c (projections and heads); the RNN decoder
 * with Tq = 1 per step (input feeding) or Tq = T (attention after the whole RNN), keys and
 * values from the encoder states h̄_s (mha.h's RnnAttn, rnn_attn_* functions).
 *
 * Each kind is one row (AttentionOps) defined in its own file, src/attention/<name>.c (the
 * three Luong scores share luong.c; luong_local is local.c), with the parameters it owns,
 * forward, backward, workspace, its decoding state, its place in the RNN and the properties
 * every list of kinds is derived from (models, tests, benches, docs: docs/design.md, "Adding an
 * attention kind"); attention_supports() is the one place that answers "can kind X serve in
 * slot Y here?".
 *
 * Memory: tensors (q, k, v, o, save, work, state, key_len, step_len, parent) live in backend
 * memory; only the *_host functions read host arrays. Sizes returned are counts of floats.
 * Errors: only attention_kind_from_name returns a Status and only attention_supports refuses
 * (with a message); everything else is a programmer's contract (CHECKs named below, no input
 * errors). Sources: each kind's file and the enum below; docs/design.md §4 for the table.
 */
#ifndef TRAINER_ATTENTION_H
#define TRAINER_ATTENTION_H

#include "core/common.h"
#include "ops/params.h"
#include "ops/ops.h"

/* The attention table's rows, one line a kind: X(ENUM, name) gives the enum value ATTN_<ENUM>,
 * the config name "name" and the row `attention_<name>` (an AttentionOps, defined in the kind's
 * file). Every list of kinds (the enum, the names, the rows, the config's values) comes from
 * here; adding a kind is one line here and its file (docs/design.md, "Adding an attention kind").
 * The order is the enum's, after ATTN_NONE (no attention, RNN only). */
#define ATTENTION_KINDS(X)                                                                      \
    X(BAHDANAU, bahdanau)             /* Bahdanau et al. 2015, additive: vᵀ tanh(W s + U h) */ \
    X(LUONG_DOT, luong_dot)           /* Luong et al. 2015 eq. 8, dot: h_tᵀ h̄_s */              \
    X(LUONG_GENERAL, luong_general)   /* Luong et al. 2015 eq. 8, general: h_tᵀ W_a h̄_s */      \
    X(LUONG_CONCAT, luong_concat)     /* Luong et al. 2015 eq. 8, concat */                    \
    X(SDP, sdp)                       /* Vaswani et al. 2017 §3.2.1, scaled dot-product */     \
    X(FLASH, flash)                   /* Dao et al. 2022, tiled exact attention */             \
    X(LINEAR, linear)                 /* Katharopoulos et al. 2020, φ(x) = elu(x) + 1 */       \
    X(EFFICIENT, efficient)           /* Shen et al. 2021, softmax over Q's rows, K's columns */ \
    X(TAYLOR, taylor)                 /* Li et al. 2020, first-order Taylor: ∝ 1 + q̂·k̂ */      \
    X(LINFORMER, linformer)           /* Wang et al. 2020 eq. 7, keys projected to r rows */   \
    X(LUONG_LOCAL, luong_local)       /* Luong et al. 2015 §3.2, local-m / local-p */        \
    X(SIGMOID, sigmoid)               /* Ramapuram et al. 2024, σ(q·k/√d − log n) */          \
    X(RELA, rela)                     /* Zhang et al. 2021, RMSNorm(ReLU(q·k/√d) v) */        \
    X(QKNORM, qknorm)                 /* Henry et al. 2020, softmax(g q̂·k̂), g learned */

#define ATTENTION_KIND_ENUM_(E, name) ATTN_##E,
#define ATTENTION_KIND_NAME(E, name) #name,
typedef enum AttentionKind {
    ATTN_NONE = 0,
    ATTENTION_KINDS(ATTENTION_KIND_ENUM_)
    ATTN_KIND_COUNT
} AttentionKind;

/* Config names, indexed by AttentionKind ("none", "bahdanau", "luong_dot", ...). */
extern const char *const attention_kind_names[ATTN_KIND_COUNT];

/* Parses a config name into *kind. Errors: unknown name → STATUS_ERR, "unknown attention kind
 * 'x' (valid: none, bahdanau, ...)". Source: —. */
Status attention_kind_from_name(const char *name, AttentionKind *kind, Err *err);

/* Linformer's parameter sharing (Wang et al. 2020 §4 "Parameter sharing"; model.linformer_share):
 * none — E_i, F_i per head; headwise — one E, F per layer shared by its heads; kv — one E = F per
 * layer (shared by the heads too); layerwise — one E for every layer of the model (refused by
 * config_validate: the parameter table cannot alias one tensor under two owners). */
typedef enum {
    LINFORMER_SHARE_NONE,
    LINFORMER_SHARE_HEADWISE,
    LINFORMER_SHARE_KV,
    LINFORMER_SHARE_LAYERWISE,
    LINFORMER_SHARE_COUNT
} LinformerShare;
extern const char *const linformer_share_names[LINFORMER_SHARE_COUNT]; /* "none", ... */

/* luong_local's window position and score (Luong et al. 2015 §3.2; model.local_mode,
 * model.local_score). */
typedef enum { LOCAL_MONOTONIC, LOCAL_PREDICTIVE, LOCAL_MODE_COUNT } LocalMode;
extern const char *const local_mode_names[LOCAL_MODE_COUNT]; /* "monotonic", "predictive" */
/* X(ENUM, name): the scores (eq. 8, and sdp's scaled one), their enum and config names from
 * this one list */
#define LOCAL_SCORES(X)                                                                         \
    X(DOT, dot)               /* h_tᵀ h̄_s */                                                    \
    X(GENERAL, general)       /* h_t W_a h̄_s */                                                 \
    X(CONCAT, concat)         /* additive, as bahdanau */                                       \
    X(SCALED_DOT, scaled_dot) /* general / √HS (Vaswani et al. 2017 eq. 1) */
#define LOCAL_SCORE_ENUM_(E, name) LOCAL_SCORE_##E,
#define LOCAL_SCORE_NAME_(E, name) #name,
typedef enum { LOCAL_SCORES(LOCAL_SCORE_ENUM_) LOCAL_SCORE_COUNT } LocalScore;
extern const char *const local_score_names[LOCAL_SCORE_COUNT]; /* LOCAL_SCORES' names */

/* The options of the kinds that have them (the [model] section's linformer_* and local_* keys,
 * model/spec.h), one struct for every kind: each kind reads its own fields.
 * linformer: a field <= 0 (or a NULL pointer where one is taken) means its default:
 * linformer_k r = 32, linformer_max_len n = 128, linformer_share none.
 * luong_local: no defaults here — local_window must be >= 1 (its declare CHECKs it, so NULL or
 * {0} is refused for luong_local); the config's defaults are D = 10, predictive, general. */
typedef struct {
    int linformer_k;                /* r: projected length of keys and values */
    int linformer_max_len;          /* n: the longest key sequence the projections span */
    LinformerShare linformer_share; /* sharing of E, F */
    int local_window;       /* D: the window [p_t − D, p_t + D], σ = D/2 (>= 1) */
    LocalMode local_mode;   /* local-m: p_t = t; local-p: p_t = S·σ(v_pᵀ tanh(W_p h_t)) */
    LocalScore local_score; /* eq. 8: dot, general (h_t W_a), concat (additive); scaled_dot:
                               general / √HS (Vaswani et al. 2017 eq. 1) */
} AttentionOptions;
enum { LINFORMER_K_DEFAULT = 32, LINFORMER_MAX_LEN_DEFAULT = 128 };

/* Where an attention serves; each slot is one config key. */
typedef enum AttentionSlot {
    ATTN_SLOT_RNN,      /* model.attention: the RNN decoder over the encoder states */
    ATTN_SLOT_ENC_SELF, /* model.self_attention: the Transformer encoder */
    ATTN_SLOT_DEC_SELF, /* model.dec_self_attention: the Transformer decoder (causal) */
    ATTN_SLOT_CROSS,    /* model.cross_attention: the Transformer decoder over the encoder */
    ATTN_SLOT_COUNT
} AttentionSlot;

/* The config key of each slot ("model.attention", ...). */
extern const char *const attention_slot_keys[ATTN_SLOT_COUNT];

/* What forward saves: nothing, the weights [B, NH, Tq, Tk], the log-sum-exp [B, NH, Tq], or the
 * weights of each query's window [B, NH, Tq, 2W + 2] (W = opt.local_window: the window's first
 * key, then its 2W + 1 weights; ops.h local_attn_forward), O(Tq·W) instead of O(Tq·Tk). */
typedef enum { ATTN_SAVE_NONE, ATTN_SAVE_WEIGHTS, ATTN_SAVE_LSE, ATTN_SAVE_WINDOW } AttentionSave;

/* What the running sums of a linear-attention row (linear.c) are over: q and k themselves
 * through the ops' φ = elu + 1 (linear; Katharopoulos et al. 2020), or the features [1; x̂],
 * x̂ = x/‖x‖₂, HS + 1 wide, through the identity (taylor; Li et al. 2020). */
typedef enum { LINEAR_FEATURES_ELU1, LINEAR_FEATURES_L2 } LinearFeatures;

/* What a kind's weights over the visible keys of one query satisfy (its saved weights and
 * weights_host: attention maps; tests check them): a distribution, each >= 0 summing to 1 (the
 * softmax kinds, linear, efficient, taylor); each >= 0 summing to at most 1 (luong_local: its
 * local-p Gaussian scales the row, a local-m window may hold no key); each in (0, 1), no
 * normalisation (sigmoid); each >= 0, no normalisation (rela, before its RMSNorm). */
typedef enum {
    ATTN_WEIGHTS_SUM_1,
    ATTN_WEIGHTS_SUM_AT_MOST_1,
    ATTN_WEIGHTS_OPEN_UNIT,
    ATTN_WEIGHTS_NONNEG
} AttentionWeights;

typedef struct AttentionOps AttentionOps;

/* One attention: its kind's row, sizes and the parameters the kind owns (backend memory). */
typedef struct {
    AttentionKind kind;
    const AttentionOps *ops;
    int NH, HS;     /* heads and head size */
    int Dq, Dk;     /* query width (before the kind's query transform) and key width */
    int own_proj;   /* 1: no projections around (the RNN): the additive kinds own W_q and U */
    int A;          /* additive score size (A = HS with projections around, Dq without) */
    int q_transform, k_transform; /* the kind transforms the query / keys (set by its declare) */
    Param W_a;      /* luong_general: [Dq, Dk] (q' = q W_a); additive own_proj: W_q [A, Dq] */
    Param U_a;      /* additive own_proj: U [A, Dk] */
    Param v_a;      /* additive: [A] (own_proj) or [NH, HS] */
    int lf_r, lf_n; /* linformer: projected length r and projection width n */
    LinformerShare lf_share; /* linformer: sharing of E, F (never layerwise) */
    Param lf_E, lf_F; /* linformer: E, F [NH·r, n] (none) or [r, n] (headwise); kv: E alone */
    AttentionOptions opt; /* attention_declare's opt, copied ({0} for NULL); luong_local reads
                           * its window, mode and score here */
    Param W_p, v_p; /* luong_local predictive: W_p [Dq, Dq], v_p [Dq] (Luong et al. 2015 eq. 9) */
    Param gain;     /* rela: the RMSNorm gain [NH, HS], one per head (init 1); qknorm: g − g0 [1] */
    int pos0;       /* luong_local monotonic: the position of query 0 (p_t = pos0 + t). The caller
                     * sets it before forward and backward: the RNN its decoding step t in
                     * per-step calls (Tq = 1), 0 when all T queries come at once */
} Attention;

/* One row of the table. Functions that a kind does not need are NULL. Backward functions
 * ACCUMULATE into their gradients (ops.h). */
struct AttentionOps {
    AttentionKind kind;
    int causal_ok;       /* has a causal form */
    const char *no_causal; /* causal_ok = 0: why (for attention_supports' message) */
    int multi_head;      /* the RNN splits model.heads heads for it (else it uses one head) */
    int rnn_prev_state;  /* in the RNN, the query is s_{t−1} and c_t feeds the RNN input
                          * (Bahdanau et al. 2015 §3.1); else the query is h_t (Luong §3.1) */
    int scaled;          /* dot-product scores scaled by 1/√HS (Vaswani et al. 2017 eq. 1) */
    AttentionSave save;  /* what forward saves for backward and for attention maps;
                          * ATTN_SAVE_WEIGHTS keeps Tq × Tk weights: memory quadratic in the
                          * length (tests/slow/test_length.c checks the plan against it) */
    AttentionWeights weights; /* what its weights satisfy (ATTN_WEIGHTS_SUM_1 unless set) */
    float fd_eps;        /* the step of finite-difference checks of a loss through the kind
                          * (tests/model; 0: the tests' own). rela: 1e-3, where its per-head
                          * RMSNorm of few values bends the loss sharply */
    LinearFeatures linear_features; /* the rows of linear.c's machinery: their feature map */
    const OpKind *ops;   /* the backend ops the kind calls (training and decoding) */
    int nops;
    /* Extra conditions on the sizes (e.g. luong_dot: Dq = Dk); 1 if fine, else 0 and a reason
     * (without the key) in why. */
    int (*sizes_ok)(int Dq, int Dk, char *why, size_t why_len);
    /* Declares the kind's own parameters (W_a, U_a, v_a) under prefix; mat: the init of its
     * matrices (the model's convention). */
    void (*declare)(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat);
    /* The kind's transform of the merged query: qp[N, Dk or A] from q[N, Dq] (luong_general
     * q W_a, additive own_proj q W_qᵀ), and its backward: dq[N, Dq] += …, parameter gradients. */
    void (*query_forward)(const Attention *a, const Backend *be, float *qp, const float *q, int N);
    void (*query_backward)(const Attention *a, const Backend *be, float *dq, const float *dqp,
                           const float *q, int N);
    /* The kind's transform of the keys (additive own_proj: kp[N, A] = keys U_aᵀ) and its
     * backward: dkeys[N, Dk] += dkp U_a, dU_a += dkpᵀ keys. */
    void (*keys_forward)(const Attention *a, const Backend *be, float *kp, const float *keys,
                         int N);
    void (*keys_backward)(const Attention *a, const Backend *be, float *dkeys, const float *dkp,
                          const float *keys, int N);
    /* o [B,NH,Tq,HS] (overwritten) and save from q (after query_forward, split into heads),
     * k, v; work: workspace() floats. */
    void (*forward)(const Attention *a, const Backend *be, float *o, float *save, const float *q,
                    const float *k, const float *v, const int *key_len, int causal, int B,
                    int Tq, int Tk, float *work);
    /* Accumulates dq, dk, dv (heads; dk may equal dv when k == v) and the kind's parameter
     * gradients. */
    void (*backward)(const Attention *a, const Backend *be, float *dq, float *dk, float *dv,
                     const float *dout, const float *o, const float *save, const float *q,
                     const float *k, const float *v, const int *key_len, int causal, int B,
                     int Tq, int Tk, float *work);
    /* Floats of workspace forward and backward need (depends on the thread count). */
    size_t (*workspace)(const Attention *a, const Backend *be, int B, int Tq, int Tk);
    /* Floats forward saves for BTq query rows against Tk keys, where the row saves more than
     * save says (NULL: save's size). rela: its weights, then its output before the RMSNorm
     * and the norm's rstd. */
    size_t (*save_floats)(const Attention *a, long BTq, int Tk);
    /* Decoding state of a causal self-attention, one query per step (NULL: a KV cache, keys and
     * values [R, NH, Tcap, HS] each, appended per step; attention.c). linear: the running sums
     * of Katharopoulos et al. 2020 §3.4, constant in t; taylor: the same over its features. */
    size_t (*state_floats)(const Attention *a, int R, int Tcap);
    void (*decode_step)(const Attention *a, const Backend *be, float *o, float *save, float *state,
                        const float *q, const float *k, const float *v, const int *step_len,
                        int R, int t, int Tcap, float *work);
    /* dst = src with row r taken from row parent[r] (parent [R] backend memory; parent_bh
     * [R·NH]: parent[r]·NH + h) after step t. */
    void (*decode_reorder)(const Attention *a, const Backend *be, float *dst, const float *src,
                           const int *parent, const int *parent_bh, int R, int t, int Tcap);
    /* Host-side weights of one query against len keys for attention maps: w[s] for s < len,
     * from one head's q [HS] and k [len, HS] (after query_forward), v_a [HS] of that head
     * (additive) or NULL. The softmax for the softmax kinds; φ(q)·φ(k_s) / Σ for linear;
     * ρ_q(q)·ρ_k(k)_s for efficient; (1 + q̂·k̂_s) / Σ for taylor: each sums to 1. The
     * pointwise kinds' own weights, which need not: σ(q·k_s/√HS − log len) for sigmoid,
     * max(q·k_s/√HS, 0) for rela (before its RMSNorm). NULL for luong_local (its weights need
     * W_p, v_p and p_t): the models read its saved weights. */
    void (*weights_host)(float *w, const float *q, const float *k, const float *v_a, int len,
                         int HS);
    /* Keys summarised once (NULL for the kinds without): where the keys and values stay the same
     * over many calls (the RNN decoder, one call per target step over the same encoder states),
     * the kind computes its summary of them once, sum[summary_floats(B, Tk)] (α·B + β·B·Tk
     * floats), and each call reads it, as forward would with those keys and values (no causal
     * form, no save).
     * summary_forward writes sum from k, v, key_len [B, NH, Tk, HS]; forward_summary writes
     * o [B,NH,Tq,HS] from q and sum; backward_summary accumulates dq and dsum (same layout as
     * sum, zero before the first call) from dout; then summary_backward, once, accumulates dk
     * and dv (may be the same buffer) and the kind's parameter gradients from the summed dsum
     * and sum, and may write dsum's own scratch parts. work: workspace(B, Tq, Tk) floats.
     * linformer: sum = [E K, F V], O(r·HS) a query instead of O(Tk·r·HS); linear: [Σ φ(k) vᵀ,
     * Σ φ(k)] (Katharopoulos et al. 2020 eq. 6) and taylor the same over its features, with
     * the features of k kept for the backward; efficient: ρ_k(k)ᵀ v (Shen et al. 2021 eq. 2):
     * O(HS²) a query instead of O(Tk·HS²). */
    size_t (*summary_floats)(const Attention *a, int B, int Tk);
    void (*summary_forward)(const Attention *a, const Backend *be, float *sum, const float *k,
                            const float *v, const int *key_len, int B, int Tk);
    void (*forward_summary)(const Attention *a, const Backend *be, float *o, const float *q,
                            const float *sum, int B, int Tq, float *work);
    void (*backward_summary)(const Attention *a, const Backend *be, float *dq, float *dsum,
                             const float *dout, const float *q, const float *sum, int B, int Tq,
                             float *work);
    void (*summary_backward)(const Attention *a, const Backend *be, float *dk, float *dv,
                             float *dsum, const float *sum, const float *k, const float *v,
                             const int *key_len, int B, int Tk);
};

/* The row of kind (NULL for ATTN_NONE). CHECKs kind is in range ("attention_row: kind out of
 * range"). */
const AttentionOps *attention_row(AttentionKind kind);
/* Writes the backend ops kind calls (training and decoding) to ops[] (room for OP_COUNT) and
 * returns their number; 0 for ATTN_NONE. A model lists them so that a backend lacking one is
 * refused before training (backend_require_ops). */
int attention_ops_used(AttentionKind kind, OpKind *ops); /* no errors */

/* The one answer to "can kind serve in slot here?": 1, or 0 with the message in why, which
 * names the slot's config key, the kind, the reason and what to set instead. causal: the slot
 * is causal (the decoder self-attention); Dq, Dk the query and key widths; NH the heads the slot
 * would use (the Transformer's model.heads; for the RNN model.heads, used by the multi-head
 * kinds only); be: checked for the kind's ops (NULL: not checked). why: why_len bytes, host.
 * Refusals (one message form, "<key> = <kind>: <reason>"): none in a Transformer slot (the RNN
 * may have none); the slot is causal and the kind has no causal form (efficient, linformer,
 * luong_local: the row's no_causal); the sizes do not fit the kind (sizes_ok, e.g. luong_dot
 * Dq ≠ Dk) or NH does not divide the width; be lacks an op the kind calls. Source: docs/design.md §4. */
int attention_supports(AttentionKind kind, AttentionSlot slot, int causal, const Backend *be,
                       int Dq, int Dk, int NH, char *why, size_t why_len);

/* attention_supports for the Transformer's three slots at once: enc (encoder self-attention),
 * dec (decoder self-attention, causal) and cross, each with D-wide queries and keys and NH
 * heads. 1, or 0 with the first refusal's message in why. Source: docs/design.md §4. */
int attention_supports_transformer(AttentionKind enc, AttentionKind dec, AttentionKind cross,
                                   const Backend *be, int D, int NH, char *why, size_t why_len);

/* Sets up a for kind (attention_supports must have said yes) and declares the kind's own
 * parameters under prefix (e.g. "dec.attn", "enc.l0.self"). NH heads of Dk / NH; own_proj:
 * 1 when no q/k projections surround the attention (the RNN); mat: init of its matrices; opt:
 * the kinds' options (copied; NULL: linformer's defaults, which luong_local refuses by CHECK).
 * CHECKs a valid row, NH >= 1 and NH | Dk ("attention_declare: check attention_supports first");
 * linformer CHECKs its sharing is not layerwise (config_validate refuses it). */
void attention_declare(Attention *a, ParamSet *ps, const char *prefix, AttentionKind kind,
                       int Dq, int Dk, int NH, int own_proj, ParamInit mat,
                       const AttentionOptions *opt);
/* The longest key sequence kind can take under opt (linformer: linformer_max_len), or 0 for no
 * limit. No errors. */
int attention_max_keys(AttentionKind kind, const AttentionOptions *opt);

/* Floats forward saves for BTq = B·Tq query rows against Tk keys: weights NH·BTq·Tk, lse NH·BTq,
 * windows NH·BTq·(2W + 2) (AttentionSave), or the row's save_floats (rela: NH·BTq·(Tk + HS + 1)),
 * or 0. No errors; likewise the three size functions below. */
size_t attention_save_floats(const Attention *a, long BTq, int Tk);
/* 1 if the kind's save holds its weights (ATTN_SAVE_WEIGHTS or ATTN_SAVE_WINDOW: attention maps
 * can be read from it), else 0. No errors. */
int attention_saves_weights(const AttentionOps *row);
/* Host arrays: w[Tk] = one query's weights over Tk keys from its saved row saved[n], n =
 * attention_save_floats(a, 1, Tk) / NH (one head's share): a copy (ATTN_SAVE_WEIGHTS), or the
 * window placed at its first key and zeros elsewhere (ATTN_SAVE_WINDOW; keys past Tk dropped).
 * CHECKs that the kind saves weights ("attention_saved_weights_host: the kind saves no
 * weights"). */
void attention_saved_weights_host(const Attention *a, float *w, const float *saved, int Tk);
/* Host arrays: w[R, Tk] = each of R query rows' weights, the mean over its NH heads of
 * attention_saved_weights_host, from saved [R, NH, n] (n as above: a decoding step's save, one
 * query a row): the attention map of a kind that keeps its weights. CHECKs as above; no errors. */
void attention_saved_map_host(const Attention *a, float *w, const float *saved, int R, int Tk);
/* Floats of workspace of one call (forward and backward; the CPU's depends on the thread
 * count). */
size_t attention_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk);
/* Width of the query after the kind's transform (Dk, or A for additive own_proj). */
int attention_query_width(const Attention *a);

/* The row's query transform (luong_general q W_a, Luong et al. 2015 eq. 8; additive own_proj
 * q W_qᵀ), or a copy when the kind has none: qp [N, query width] from q [N, Dq]. No errors. */
void attention_query_forward(const Attention *a, const Backend *be, float *qp, const float *q,
                             int N);
/* Backward of attention_query_forward: dq [N, Dq] += …, and the transform's parameter
 * gradients (accumulated). No errors. */
void attention_query_backward(const Attention *a, const Backend *be, float *dq,
                              const float *dqp, const float *q, int N);
/* The row's forward / backward (see AttentionOps; shapes in the legend above, heads
 * [B, NH, T, HS]), work: attention_workspace floats. Backward accumulates. Source: the kind's
 * (enum above). Errors: none; efficient CHECKs causal = 0 (attention_supports refuses it). */
void attention_forward(const Attention *a, const Backend *be, float *o, float *save,
                       const float *q, const float *k, const float *v, const int *key_len,
                       int causal, int B, int Tq, int Tk, float *work);
void attention_backward(const Attention *a, const Backend *be, float *dq, float *dk, float *dv,
                        const float *dout, const float *o, const float *save, const float *q,
                        const float *k, const float *v, const int *key_len, int causal, int B,
                        int Tq, int Tk, float *work);
/* The heads' merged layout [B, T, NH, HS] (row (b, t) of [B·T, NH·HS], what the projections
 * write) instead of [B, NH, T, HS]: attention_merged_ok says whether a's forward and backward
 * run on it on be (the dot-product kinds without a query transform, on a backend with
 * attn_forward_merged: no split and merge of the heads around them); then
 * attention_forward_merged / _backward_merged are attention_forward / _backward with q, k, v,
 * o, dout, dq, dk, dv in that layout (save and the backward's work unchanged; the forward
 * needs no work), except that the backward OVERWRITES dq, dk and dv. No errors; calling them
 * where attention_merged_ok is 0 aborts (programmer error). */
int attention_merged_ok(const Attention *a, const Backend *be);
void attention_forward_merged(const Attention *a, const Backend *be, float *o, float *save,
                              const float *q, const float *k, const float *v,
                              const int *key_len, int causal, int B, int Tq, int Tk);
void attention_backward_merged(const Attention *a, const Backend *be, float *dq, float *dk,
                               float *dv, const float *dout, const float *save, const float *q,
                               const float *k, const float *v, int B, int Tq, int Tk,
                               float *work);

/* Decoding state (causal self-attention, one query per step): floats of one copy for R rows
 * and Tcap steps; one step (k, v [R, NH, 1, HS] of the new position; step_len [R] = t + 1 in
 * backend memory); the beam reorder (parent [R], parent_bh [R·NH], backend memory). The state
 * must be zero before step 0. The default state is a KV cache, keys and values [R, NH, Tcap, HS];
 * linear and taylor keep the running sums of Katharopoulos et al. 2020 §3.4. No errors;
 * t < Tcap is the caller's contract. */
size_t attention_state_floats(const Attention *a, int R, int Tcap);
void attention_decode_step(const Attention *a, const Backend *be, float *o, float *save,
                           float *state, const float *q, const float *k, const float *v,
                           const int *step_len, int R, int t, int Tcap, float *work);
void attention_decode_reorder(const Attention *a, const Backend *be, float *dst,
                              const float *src, const int *parent, const int *parent_bh, int R,
                              int t, int Tcap);

#endif
