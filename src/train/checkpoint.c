#include "train/checkpoint.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "train/ckptfile.h"

enum { ST_STEP, ST_EPOCH, ST_BATCH, ST_RNG_STATE, ST_RNG_INC, ST_ADAM_T, ST_LR_SCALE, ST_BEST,
       ST_BAD, ST_ELAPSED, ST_COUNT };

/* Record-name prefixes of the three flat buffers: parameters, Adam m, Adam v. */
static const char *const prefix[3] = {"param/", "adam_m/", "adam_v/"};

static uint64_t f2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double u2f(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

Status checkpoint_save(const char *path, const Model *m, const TrainState *st, Err *err) {
    const ParamSet *ps = &m->ps;
    const Backend *be = m->be;
    Status rc = STATUS_ERR;
    int n = 0, cap = 3 * ps->n + 3;
    CkptRecord *recs = xcalloc(cap, sizeof *recs);
    float *host = xmalloc(sizeof(float) * ps->total * 3);
    char *ini = config_to_ini(&m->cfg);
    void *spm_bytes = NULL;
    size_t spm_n = 0;
    uint64_t state[ST_COUNT] = {(uint64_t)st->step, (uint64_t)st->epoch, (uint64_t)st->batch_in_epoch,
                                st->epoch_rng.state, st->epoch_rng.inc, (uint64_t)st->adam_t,
                                f2u(st->lr_scale), f2u(st->best_bleu), (uint64_t)st->bad_epochs,
                                f2u(st->elapsed)};
    if (spm_serialize(m->spm, &spm_bytes, &spm_n, err)) goto cleanup;
    be->download(host, ps->data, sizeof(float) * ps->total);
    be->download(host + ps->total, ps->m, sizeof(float) * ps->total);
    be->download(host + 2 * ps->total, ps->v, sizeof(float) * ps->total);
    static const char *what[3] = {"parameter", "Adam first moment of", "Adam second moment of"};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ps->n; i++) {
            const ParamSpec *s = &ps->specs[i];
            const float *x = host + k * ps->total + s->offset;
            for (size_t j = 0; j < s->size; j++)
                if (!isfinite(x[j])) {
                    err_set(err, "refusing to write checkpoint %s: the %s '%s' holds a "
                            "non-finite value (NaN or Inf) at element %zu; the previous "
                            "checkpoint is kept", path, what[k], s->name, j);
                    goto cleanup;
                }
        }
    recs[n] = (CkptRecord){.dtype = CKPT_U8, .ndim = 1, .shape = {(int64_t)strlen(ini)},
                           .data = ini, .nbytes = strlen(ini)};
    snprintf(recs[n++].name, CKPT_NAME_MAX, "config");
    recs[n] = (CkptRecord){.dtype = CKPT_U8, .ndim = 1, .shape = {(int64_t)spm_n},
                           .data = spm_bytes, .nbytes = spm_n};
    snprintf(recs[n++].name, CKPT_NAME_MAX, "spm");
    recs[n] = (CkptRecord){.dtype = CKPT_U64, .ndim = 1, .shape = {ST_COUNT}, .data = state,
                           .nbytes = sizeof state};
    snprintf(recs[n++].name, CKPT_NAME_MAX, "train_state");
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ps->n; i++) {
            const ParamSpec *s = &ps->specs[i];
            CkptRecord *r = &recs[n++];
            r->dtype = CKPT_F32;
            r->ndim = s->ndim;
            for (int d = 0; d < s->ndim; d++) r->shape[d] = s->shape[d];
            r->data = host + k * ps->total + s->offset;
            r->nbytes = sizeof(float) * s->size;
            snprintf(r->name, CKPT_NAME_MAX, "%s%s", prefix[k], s->name);
        }
    rc = ckpt_write_atomic(path, recs, n, 1, err);
cleanup:
    free(recs);
    free(host);
    free(ini);
    free(spm_bytes);
    return rc;
}

/* The train_state record u[ST_COUNT] as a TrainState, refusing values that no run writes and
 * that the training loop would misuse (a negative batch position is an array index there). */
static Status read_state(const uint64_t *u, TrainState *st, const char *path, Err *err) {
    double lr_scale = u2f(u[ST_LR_SCALE]), best = u2f(u[ST_BEST]), elapsed = u2f(u[ST_ELAPSED]);
    const char *bad = u[ST_STEP] > (uint64_t)LONG_MAX ? "step"
                      : u[ST_EPOCH] < 1 || u[ST_EPOCH] > (uint64_t)INT_MAX ? "epoch"
                      : u[ST_BATCH] > (uint64_t)LONG_MAX ? "batch position"
                      : (u[ST_RNG_INC] & 1) == 0 ? "shuffling RNG increment (must be odd)"
                      : u[ST_ADAM_T] > (uint64_t)INT_MAX ? "Adam step"
                      : !(lr_scale > 0 && lr_scale <= 1) ? "learning-rate scale"
                      : !(best == -1 || (best >= 0 && best <= 100)) ? "best BLEU"
                      : u[ST_BAD] > (uint64_t)INT_MAX ? "epochs without improvement"
                      : !(elapsed >= 0 && isfinite(elapsed)) ? "elapsed time" : NULL;
    if (bad)
        return err_set(err, "checkpoint %s: the training state holds an impossible %s; the file "
                       "was not written by this trainer — use another checkpoint", path, bad);
    *st = (TrainState){.step = (long)u[ST_STEP], .epoch = (int)u[ST_EPOCH],
                       .batch_in_epoch = (long)u[ST_BATCH],
                       .epoch_rng = {u[ST_RNG_STATE], u[ST_RNG_INC]}, .adam_t = (int)u[ST_ADAM_T],
                       .lr_scale = lr_scale, .best_bleu = best, .bad_epochs = (int)u[ST_BAD],
                       .elapsed = elapsed};
    return STATUS_OK;
}

Status checkpoint_load(const char *path, Model *m, TrainState *st, int device_override,
                       Err *err) {
    CkptRecord *recs = NULL;
    int n = 0;
    float *host = NULL;
    char *ini = NULL;
    Spm *spm = NULL;
    memset(m, 0, sizeof *m);
    if (ckpt_read(path, &recs, &n, err)) return STATUS_ERR;
    const CkptRecord *rc_cfg = ckpt_find(recs, n, "config");
    const CkptRecord *rc_spm = ckpt_find(recs, n, "spm");
    const CkptRecord *rc_st = ckpt_find(recs, n, "train_state");
    if (!rc_cfg || !rc_spm || !rc_st || rc_cfg->dtype != CKPT_U8 || rc_spm->dtype != CKPT_U8 ||
        rc_st->dtype != CKPT_U64 || rc_st->nbytes != ST_COUNT * sizeof(uint64_t)) {
        err_set(err, "checkpoint %s: not a trainer checkpoint (config, spm or train_state record "
                "missing or of the wrong type); use another checkpoint", path);
        goto fail;
    }
    TrainState state;
    if (read_state(rc_st->data, &state, path, err)) goto fail;
    ini = xmalloc(rc_cfg->nbytes + 1);
    memcpy(ini, rc_cfg->data, rc_cfg->nbytes);
    ini[rc_cfg->nbytes] = 0;
    Config cfg;
    config_defaults(&cfg);
    if (config_load_string(&cfg, ini, "config stored in checkpoint", err) ||
        config_validate(&cfg, err)) {
        err_prefix(err, "checkpoint %s", path);
        goto fail;
    }
    if (device_override >= 0) cfg.device = (DeviceType)device_override;
    if (spm_load_from_bytes(&spm, rc_spm->data, rc_spm->nbytes, err)) {
        err_prefix(err, "checkpoint %s: SentencePiece model", path);
        goto fail;
    }
    /* Declared, not yet allocated: the stored config may ask for any size, so every tensor is
     * checked against the file's records before anything of the model's size is allocated. */
    if (model_declare(m, &cfg, spm, err)) { /* takes spm */
        spm = NULL;
        err_prefix(err, "checkpoint %s", path);
        goto fail;
    }
    spm = NULL;
    ParamSet *ps = &m->ps;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ps->n; i++) {
            const ParamSpec *s = &ps->specs[i];
            char name[CKPT_NAME_MAX];
            snprintf(name, sizeof name, "%s%s", prefix[k], s->name);
            const CkptRecord *r = ckpt_find(recs, n, name);
            if (!r) {
                err_set(err, "checkpoint %s: tensor '%s' is missing; the file was not written "
                        "for this model", path, name);
                goto fail;
            }
            if (r->dtype != CKPT_F32) {
                err_set(err, "checkpoint %s: tensor '%s' is %s, expected f32; the file was not "
                        "written by this trainer", path, name, ckpt_dtype_name(r->dtype));
                goto fail;
            }
            int ok = r->ndim == s->ndim;
            for (int d = 0; ok && d < s->ndim; d++) ok = r->shape[d] == s->shape[d];
            if (!ok) {
                char have[96] = "", want[96] = "";
                for (int d = 0; d < r->ndim; d++)
                    snprintf(have + strlen(have), sizeof have - strlen(have), "%s%lld",
                             d ? ", " : "", (long long)r->shape[d]);
                for (int d = 0; d < s->ndim; d++)
                    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d",
                             d ? ", " : "", s->shape[d]);
                err_set(err, "checkpoint %s: tensor '%s' has shape [%s] but the model needs "
                        "[%s]; the file was written for another model", path, name, have, want);
                goto fail;
            }
        }
    if (n != 3 + 3 * ps->n) {
        err_set(err, "checkpoint %s: holds %d records but this model has %d; the file was not "
                "written for this model", path, n, 3 + 3 * ps->n);
        goto fail;
    }
    model_allocate(m);
    host = xmalloc(sizeof(float) * ps->total * 3);
    memset(host, 0, sizeof(float) * ps->total * 3);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ps->n; i++) {
            const ParamSpec *s = &ps->specs[i];
            char name[CKPT_NAME_MAX];
            snprintf(name, sizeof name, "%s%s", prefix[k], s->name);
            const CkptRecord *r = ckpt_find(recs, n, name);
            float *dst = host + k * ps->total + s->offset;
            memcpy(dst, r->data, r->nbytes);
            for (size_t j = 0; j < s->size; j++)
                if (!isfinite(dst[j])) {
                    err_set(err, "checkpoint %s: tensor '%s' holds a non-finite value at %zu",
                            path, name, j);
                    goto fail;
                }
        }
    m->be->upload(ps->data, host, sizeof(float) * ps->total);
    m->be->upload(ps->m, host + ps->total, sizeof(float) * ps->total);
    m->be->upload(ps->v, host + 2 * ps->total, sizeof(float) * ps->total);
    if (st) *st = state;
    free(host);
    free(ini);
    ckpt_records_free(recs, n);
    return STATUS_OK;
fail:
    if (m->rnn || m->spm) model_free(m);
    spm_free(spm);
    free(host);
    free(ini);
    ckpt_records_free(recs, n);
    memset(m, 0, sizeof *m);
    return STATUS_ERR;
}
