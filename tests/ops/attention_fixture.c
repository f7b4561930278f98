/* attention_fixture.c — the attention cases' problem and shared checks (attention_fixture.h). */
#include "attention_fixture.h"

#include <omp.h>
#include <stdlib.h>

#include "ops/cpu/cpu.h"
#include "ops/ops.h"

void attn_prob_init(AttnProb *p, float qk) {
    size_t bh = (size_t)p->B * p->NH;
    p->nq = bh * p->Tq * p->D, p->nk = bh * p->Tk * p->D;
    p->nv = bh * p->Tk * p->Dv, p->no = bh * p->Tq * p->Dv;
    p->q = frand(p->nq, -qk, qk);
    p->k = frand(p->nk, -qk, qk);
    p->v = frand(p->nv, -1, 1);
    p->r = frand(p->no, -1, 1);
    p->out = fnew(p->no);
    p->work = NULL;
    attn_prob_work(p);
}

void attn_prob_work(AttnProb *p) {
    free(p->work);
    p->work = fnew(p->workspace(p) + 1);
}

void attn_prob_free(AttnProb *p) {
    free(p->q), free(p->k), free(p->v), free(p->r), free(p->out), free(p->work);
    p->q = p->k = p->v = p->r = p->out = p->work = NULL;
    params_free(&p->ps);
}

size_t attn_kind_workspace(const AttnProb *p) {
    return attention_workspace(&p->at, backend_cpu(), p->B, p->Tq, p->Tk);
}

double attn_prob_loss(void *ctx) {
    AttnProb *p = ctx;
    p->fwd(p, p->out, p->q, p->k, p->v);
    return dot_rd(p->r, p->out, p->no);
}

int attn_prob_klen(const AttnProb *p, int b) {
    int len = p->key_len[b];
    return len < p->Tk ? len : p->Tk;
}

int attn_prob_visible(const AttnProb *p, int b, int t, int s) {
    if (s >= attn_prob_klen(p, b)) return 0;
    if (p->causal && s > t + (p->Tk - p->Tq)) return 0;
    return 1;
}

void attn_check_padding(Stat *st, AttnProb *p, const float *out, const float *gq,
                        const float *gk, const float *gv) {
    int B = p->B, NH = p->NH, Tq = p->Tq, Tk = p->Tk, HS = p->D;
    float *k2 = fdup(p->k, p->nk), *v2 = fdup(p->v, p->nv), *o2 = fnew(p->no);
    float *q2 = fnew(p->nq), *dk2 = fnew(p->nk), *dv2 = fnew(p->nv);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int s = attn_prob_klen(p, b); s < Tk; s++) {
                size_t i = (((size_t)b * NH + h) * Tk + s) * HS;
                for (int d = 0; d < HS; d++) {
                    stat_true(st, gk[i + d] == 0.0f && gv[i + d] == 0.0f,
                              "padded key b%d h%d s%d has a nonzero dk/dv", b, h, s);
                    k2[i + d] = 50.0f * (d % 2 ? 1 : -1), v2[i + d] = 1e3f;
                }
            }
    p->fwd(p, o2, p->q, k2, v2);
    p->bwd(p, q2, dk2, dv2, p->q, k2, v2);
    stat_same(st, "out with other padded keys", o2, out, p->no);
    stat_same(st, "dq with other padded keys", q2, gq, p->nq);
    stat_same(st, "dk with other padded keys", dk2, gk, p->nk);
    stat_same(st, "dv with other padded keys", dv2, gv, p->nv);
    for (int b = 0; b < B; b++) /* rows that see no key: out = +0, dq = 0 */
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < Tq; t++) {
                int any = 0;
                for (int s = 0; s < Tk; s++) any |= attn_prob_visible(p, b, t, s);
                if (any) continue;
                size_t i = (((size_t)b * NH + h) * Tq + t) * HS;
                int zero = 1;
                for (int d = 0; d < HS; d++) zero &= out[i + d] == 0.0f && gq[i + d] == 0.0f;
                stat_true(st, zero, "row b%d h%d t%d sees no key: out or dq nonzero", b, h, t);
            }
    free(k2), free(v2), free(o2), free(q2), free(dk2), free(dv2);
}

void attn_check_accumulate(Stat *st, AttnProb *p, const float *gq, const float *gk,
                           const float *gv) {
    float *pq = frand(p->nq, -1, 1), *pk = frand(p->nk, -1, 1), *pv = frand(p->nv, -1, 1);
    float *aq = fdup(pq, p->nq), *ak = fdup(pk, p->nk), *av = fdup(pv, p->nv);
    p->bwd(p, aq, ak, av, p->q, p->k, p->v);
    accum_check(st, "dq", aq, pq, gq, p->nq);
    accum_check(st, "dk", ak, pk, gk, p->nk);
    accum_check(st, "dv", av, pv, gv, p->nv);
    free(pq), free(pk), free(pv), free(aq), free(ak), free(av);
}

void attn_check_kv_one_buffer(Stat *st, AttnProb *p) {
    float *sq = fnew(p->nq), *sk = fnew(p->nk), *sv = fnew(p->nk), *sq2 = fnew(p->nq);
    float *dkv = fnew(p->nk);
    p->bwd(p, sq, sk, sv, p->q, p->k, p->k);
    p->bwd(p, sq2, dkv, dkv, p->q, p->k, p->k);
    stat_same(st, "dq", sq2, sq, p->nq);
    for (size_t i = 0; i < p->nk; i++)
        stat_add(st, dkv[i], (double)sk[i] + sv[i], 1e-6, 1e-6, "dk+dv", (long)i);
    free(sq), free(sk), free(sv), free(sq2), free(dkv);
}

void attn_check_ref_grads(Stat *st, const AttnProb *p,
                          void (*ref_grad)(const AttnProb *p, double *grad, int which), int n,
                          float *const gs[], const size_t ns[], const char *const names[],
                          double atol, double rtol) {
    for (int w = 0; w < n; w++) {
        double *rg = test_dnew(ns[w]);
        ref_grad(p, rg, w);
        for (size_t i = 0; i < ns[w]; i++)
            stat_add(st, gs[w][i], rg[i], atol, rtol, names[w], (long)i);
        free(rg);
    }
}

void attn_check_threads(Stat *st, AttnProb *p) {
    float *o[2], *gq[2], *gk[2], *gv[2];
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        attn_prob_work(p);
        o[i] = fnew(p->no), gq[i] = fnew(p->nq), gk[i] = fnew(p->nk), gv[i] = fnew(p->nv);
        p->fwd(p, o[i], p->q, p->k, p->v);
        p->bwd(p, gq[i], gk[i], gv[i], p->q, p->k, p->v);
    }
    omp_set_num_threads(1);
    stat_same(st, "out", o[0], o[1], p->no);
    stat_same(st, "dq", gq[0], gq[1], p->nq);
    stat_same(st, "dk", gk[0], gk[1], p->nk);
    stat_same(st, "dv", gv[0], gv[1], p->nv);
    for (int i = 0; i < 2; i++) free(o[i]), free(gq[i]), free(gk[i]), free(gv[i]);
}
