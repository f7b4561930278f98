/* attention_fixture.h — the problem the attention cases of test_backend_ops build their checks on
 * (attention_softmax.c, attention_linear.c, attention_taylor.c, attention_linformer.c): shapes,
 * inputs drawn from optest_rng, the loss L = Σ r ⊙ out, a workspace sized for the current OpenMP
 * thread count, and the checks the attention ops and kinds share. CPU backend (backend_cpu())
 * only; allocation failures exit 2 (optest.h's fnew).
 *
 * Layout [B, NH, T, ·], key_len[B]: q [B,NH,Tq,D], k [B,NH,Tk,D], v [B,NH,Tk,Dv]; out and
 * r = dL/dout [B,NH,Tq,Dv]. A kind (attention/attention.h) has D = Dv = its head size. Key s is
 * visible to query row t of batch entry b when s < min(key_len[b], Tk) and, causal, when
 * s ≤ t + Tk − Tq. */
#ifndef TRAINER_TESTS_ATTENTION_FIXTURE_H
#define TRAINER_TESTS_ATTENTION_FIXTURE_H

#include <stddef.h>

#include "attention/attention.h"
#include "ops/params.h"
#include "optest.h"

typedef struct AttnProb AttnProb;

struct AttnProb {
    /* set by the case before attn_prob_init */
    int B, NH, Tq, Tk, D, Dv;
    int causal;
    float scale;        /* an op's softmax scale, where it takes one (not read here) */
    int kind;           /* which op of its file the case runs (the file's own tag; not read here) */
    const int *key_len; /* [B], the case's own array (not copied) */
    Attention at;       /* a kind's case: attention_declare'd before attn_prob_init */
    ParamSet ps;        /* at's parameters where it has some (params_free'd by attn_prob_free) */
    /* floats of work the op or kind needs at the current OpenMP thread count */
    size_t (*workspace)(const AttnProb *p);
    /* out = the op or kind on (q, k, v), with p's shapes, key_len, causal and work (may be NULL
     * where the case uses neither attn_prob_loss nor the shared checks) */
    void (*fwd)(const AttnProb *p, float *out, const float *q, const float *k, const float *v);
    /* dq, dk, dv += the gradient of L = Σ r ⊙ out at (q, k, v) (a kind's parameter gradients,
     * where it has some, are zeroed first); as fwd, may be NULL */
    void (*bwd)(AttnProb *p, float *dq, float *dk, float *dv, const float *q, const float *k,
                const float *v);
    /* made by attn_prob_init */
    float *q, *k, *v, *r; /* the inputs, and r = dL/dout */
    float *out;           /* [no] scratch for attn_prob_loss */
    float *work;          /* workspace(p) + 1 floats */
    size_t nq, nk, nv, no;
};

/* Sizes nq, nk, nv, no from p's shapes; draws q, then k, uniform in [−qk, qk), then v and r
 * uniform in [−1, 1), from optest_rng in that order; out zeroed; work from attn_prob_work. */
void attn_prob_init(AttnProb *p, float qk);
/* (Re)allocates work, zeroed, for the current OpenMP thread count (p->workspace). */
void attn_prob_work(AttnProb *p);
/* Frees what attn_prob_init made and p->ps; the shapes stay. */
void attn_prob_free(AttnProb *p);
/* A kind's workspace: attention_workspace(&p->at, backend_cpu(), B, Tq, Tk). */
size_t attn_kind_workspace(const AttnProb *p);
/* An FdLoss over an AttnProb: fwd(q, k, v) into out, then Σ r ⊙ out in double. */
double attn_prob_loss(void *ctx);
/* min(key_len[b], Tk): the keys batch entry b has. */
int attn_prob_klen(const AttnProb *p, int b);
/* 1 when key s is visible to query row t of batch entry b (see above), else 0. */
int attn_prob_visible(const AttnProb *p, int b, int t, int s);

/* The checks the cases share, each adding to the open group st (stat_begin .. stat_end). gq, gk,
 * gv are bwd's gradients at (q, k, v) from zeroed buffers, out fwd's output there. */
/* Padding never receives weight, for a problem with D = Dv: the padded keys (s >= klen) have
 * exactly zero gk and gv; replacing the padded keys and values by others (±50, 1e3) changes no
 * bit of out, dq, dk or dv (fwd and bwd again, so a kind's parameter gradients are those of the
 * changed inputs afterwards); rows that see no key have out and gq exactly 0. */
void attn_check_padding(Stat *st, AttnProb *p, const float *out, const float *gq,
                        const float *gk, const float *gv);
/* bwd accumulates: into buffers prefilled from optest_rng (uniform in [−1, 1), dq then dk then
 * dv) it adds gq, gk, gv (accum_check, ACC_TOL). */
void attn_check_accumulate(Stat *st, AttnProb *p, const float *gq, const float *gk,
                           const float *gv);
/* Gradients against a reference: for w < n, ref_grad(p, rg, w) fills rg with ns[w] doubles, and
 * every gs[w][i] must be within atol + rtol·|rg[i]| of it (stat_add, named names[w]). */
void attn_check_ref_grads(Stat *st, const AttnProb *p,
                          void (*ref_grad)(const AttnProb *p, double *grad, int which), int n,
                          float *const gs[], const size_t ns[], const char *const names[],
                          double atol, double rtol);
/* fwd and bwd (into zeroed buffers) with 1 and then 2 OpenMP threads, work reallocated for each
 * (attn_prob_work): out, dq, dk and dv must be the same bits. Leaves one thread set. */
void attn_check_threads(Stat *st, AttnProb *p);
/* Keys = values in one buffer (the RNN's call) with dk = dv in one buffer, for D = Dv: dq is
 * the same bits as with separate dk and dv buffers, and the one buffer holds dk + dv (to 1e-6
 * absolute + 1e-6 relative). */
void attn_check_kv_one_buffer(Stat *st, AttnProb *p);

#endif
