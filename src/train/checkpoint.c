/* checkpoint.c — a training checkpoint as ckptfile records (checkpoint.h): save (config, spm,
 * parameters, Adam moments, training state) and the all-or-nothing load that hands back a model,
 * its config and its SentencePiece model. */
#include "train/checkpoint.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "train/ckptfile.h"

enum { ST_STEP, ST_EPOCH, ST_BATCH, ST_RNG_STATE, ST_RNG_INC, ST_ADAM_T, ST_LR_SCALE, ST_BEST,
       ST_BAD, ST_ELAPSED, ST_COUNT };

/* Record-name prefixes of the flat buffers: parameters, Adam m, Adam v, and (only in a
 * checkpoint of a run with train.ema_decay > 0) the EMA of the parameters. */
static const char *const prefix[4] = {"param/", "adam_m/", "adam_v/", "ema/"};

static uint64_t f2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double u2f(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* Checks the stored training state before anything trusts it: counts within the types they are
 * read into and consistent with each other and with the stored config cfg (train.accum_steps
 * batches a step, train.early_stop_metric's range, train.valid_every's count of validations),
 * the RNG increment odd (PCG32), the doubles finite and in range. Returns the reason in why, or
 * NULL when the state is sound. */
static const char *train_state_problem(const uint64_t *u, const Config *cfg, char *why,
                                       size_t n) {
    const uint64_t step = u[ST_STEP];
    const double best = u2f(u[ST_BEST]);
    const int ppl = cfg->early_stop_metric == STOP_PPL;
    /* validations so far: at each epoch's end, or every train.valid_every steps */
    const uint64_t validations = cfg->valid_every > 0 ? step / (uint64_t)cfg->valid_every
                                 : u[ST_EPOCH] - (u[ST_EPOCH] > 0);
    if (step > (uint64_t)1e15)
        snprintf(why, n, "step = %llu is beyond any run (at most 1e15)",
                 (unsigned long long)step);
    else if (u[ST_EPOCH] < 1 || u[ST_EPOCH] > (uint64_t)INT_MAX - 1)
        snprintf(why, n, "epoch = %llu is not in [1, %d]", (unsigned long long)u[ST_EPOCH],
                 INT_MAX - 1);
    else if (u[ST_BATCH] / (uint64_t)cfg->accum_steps > step)
        snprintf(why, n, "batch_in_epoch = %llu exceeds the %llu steps done of train.accum_steps "
                 "= %d batches", (unsigned long long)u[ST_BATCH], (unsigned long long)step,
                 cfg->accum_steps);
    else if ((u[ST_RNG_INC] & 1) == 0)
        snprintf(why, n, "the shuffling RNG's increment %llu is even (PCG32 needs it odd)",
                 (unsigned long long)u[ST_RNG_INC]);
    else if (u[ST_ADAM_T] > step || u[ST_ADAM_T] > (uint64_t)INT_MAX)
        snprintf(why, n, "adam_t = %llu exceeds the %llu steps done",
                 (unsigned long long)u[ST_ADAM_T], (unsigned long long)step);
    else if (!(u2f(u[ST_LR_SCALE]) >= 0.0 && u2f(u[ST_LR_SCALE]) <= 1.0))
        snprintf(why, n, "lr_scale = %g is not in [0, 1]", u2f(u[ST_LR_SCALE]));
    else if (!(best == -1.0 || (best >= 0.0 && (ppl ? isfinite(best) : best <= 100.0))))
        snprintf(why, n, "best_score = %g is neither -1 (none yet) nor in %s "
                 "(train.early_stop_metric = %s)", best, ppl ? "[0, inf)" : "[0, 100]",
                 early_stop_metric_names[cfg->early_stop_metric]);
    else if (u[ST_BAD] > (uint64_t)INT_MAX || u[ST_BAD] > validations)
        snprintf(why, n, "bad_epochs = %llu is more than the %llu validations so far",
                 (unsigned long long)u[ST_BAD], (unsigned long long)validations);
    else if (!(u2f(u[ST_ELAPSED]) >= 0.0 && isfinite(u2f(u[ST_ELAPSED]))))
        snprintf(why, n, "elapsed = %g seconds is not a finite time >= 0", u2f(u[ST_ELAPSED]));
    else
        return NULL;
    return why;
}

/* The U8/U64 record called name with the expected dtype (and, if nbytes > 0, size); NULL with a
 * message in err when it is missing or malformed. */
static const CkptRecord *need_record(const char *path, const CkptRecord *recs, int n,
                                     const char *name, CkptDType dtype, size_t nbytes, Err *err) {
    const CkptRecord *r = ckpt_find(recs, n, name);
    if (!r)
        err_set(err, "checkpoint %s: the record '%s' is missing, so this is not a complete "
                "trainer checkpoint; use another checkpoint", path, name);
    else if (r->dtype != dtype)
        err_set(err, "checkpoint %s: the record '%s' is %s, expected %s; the file was not "
                "written by this trainer", path, name, ckpt_dtype_name(r->dtype),
                ckpt_dtype_name(dtype));
    else if (nbytes > 0 && r->nbytes != nbytes)
        err_set(err, "checkpoint %s: the record '%s' holds %zu bytes, expected %zu; the file was "
                "not written by this trainer", path, name, r->nbytes, nbytes);
    else
        return r;
    return NULL;
}

/* checkpoint_save (full: the Adam moments and the EMA too) and checkpoint_save_weights. */
static Status save(const char *path, const Model *m, const Config *cfg, const Spm *spm,
                   const TrainState *st, int full, Err *err) {
    const ParamSet *ps = &m->ps;
    const Backend *be = m->be;
    CHECK(!full || (ps->m && ps->v), "checkpoint_save of a model loaded for inference "
          "(checkpoint_load_weights)");
    Status rc = STATUS_ERR;
    int nbuf = !full ? 1 : ps->ema ? 4 : 3; /* param (, adam_m, adam_v (, ema)) */
    int n = 0, cap = nbuf * ps->n + 3;
    CkptRecord *recs = xcalloc(cap, sizeof *recs);
    float *host = NULL;
    char *ini = config_to_ini(cfg);
    void *spm_bytes = NULL;
    size_t spm_n = 0;
    uint64_t state[ST_COUNT] = {(uint64_t)st->step, (uint64_t)st->epoch, (uint64_t)st->batch_in_epoch,
                                st->epoch_rng.state, st->epoch_rng.inc, (uint64_t)st->adam_t,
                                f2u(st->lr_scale), f2u(st->best_score), (uint64_t)st->bad_epochs,
                                f2u(st->elapsed)};
    if (spm_serialize(spm, &spm_bytes, &spm_n, err)) goto cleanup;
    /* a backend's host memory (the CPU's): the records point into it; device memory is copied to
     * the host first (for configs/luong.ini that copy is 145 MiB) */
    const float *src[4] = {ps->data, ps->m, ps->v, ps->ema};
    if (!be->host_memory) {
        host = xmalloc(sizeof(float) * ps->total * nbuf);
        for (int k = 0; k < nbuf; k++) {
            be->download(host + k * ps->total, src[k], sizeof(float) * ps->total);
            src[k] = host + k * ps->total;
        }
    }
    static const char *what[4] = {"parameter", "Adam first moment of", "Adam second moment of",
                                  "moving average (EMA) of"};
    for (int k = 0; k < nbuf; k++)
        for (int i = 0; i < ps->n; i++) {
            const ParamSpec *s = &ps->specs[i];
            const float *x = src[k] + s->offset;
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
    for (int k = 0; k < nbuf; k++)
        for (int i = 0; i < ps->n; i++) {
            const ParamSpec *s = &ps->specs[i];
            CkptRecord *r = &recs[n++];
            r->dtype = CKPT_F32;
            r->ndim = s->ndim;
            for (int d = 0; d < s->ndim; d++) r->shape[d] = s->shape[d];
            r->data = (void *)(src[k] + s->offset); /* the writer only reads it */
            r->nbytes = sizeof(float) * s->size;
            snprintf(r->name, CKPT_NAME_MAX, "%s%s", prefix[k], s->name);
        }
    /* zlib level 0 (stored blocks): trained float32 weights and Adam moments deflate by only
     * ~8 % at level 1, which cost 2.9 s of CPU per 112 MB configs/transformer.ini checkpoint
     * (4 saves an epoch: 4–5 % of its wall time); stored, a save costs a copy and the CRCs. */
    rc = ckpt_write_atomic(path, recs, n, 0, err);
cleanup:
    free(recs);
    free(host);
    free(ini);
    free(spm_bytes);
    return rc;
}

Status checkpoint_save(const char *path, const Model *m, const Config *cfg, const Spm *spm,
                       const TrainState *st, Err *err) {
    return save(path, m, cfg, spm, st, 1, err);
}

Status checkpoint_save_weights(const char *path, const Model *m, const Config *cfg,
                               const Spm *spm, const TrainState *st, Err *err) {
    return save(path, m, cfg, spm, st, 0, err);
}

/* ckpt_read_some's keep for checkpoint_load_weights: every record but the Adam moments and the
 * EMA (prefix[1..3]). */
static int keep_weights(const char *name, void *ctx) {
    (void)ctx;
    for (int k = 1; k < 4; k++)
        if (!strncmp(name, prefix[k], strlen(prefix[k]))) return 0;
    return 1;
}

/* checkpoint_load, and with weights_only checkpoint_load_weights (st is then NULL). */
static Status load(const char *path, Model *m, Config *cfg_out, Spm **spm_out, TrainState *st,
                   int device_override, int weights_only, Err *err) {
    CkptRecord *recs = NULL;
    int n = 0;
    char *ini = NULL;
    Spm *spm = NULL;
    const CkptRecord **found = NULL;
    memset(m, 0, sizeof *m);
    *spm_out = NULL;
    if (ckpt_read_some(path, weights_only ? keep_weights : NULL, NULL, &recs, &n, err))
        return STATUS_ERR;
    const CkptRecord *rc_cfg = need_record(path, recs, n, "config", CKPT_U8, 0, err);
    if (!rc_cfg) goto fail;
    const CkptRecord *rc_spm = need_record(path, recs, n, "spm", CKPT_U8, 0, err);
    if (!rc_spm) goto fail;
    const CkptRecord *rc_st = need_record(path, recs, n, "train_state", CKPT_U64,
                                          ST_COUNT * sizeof(uint64_t), err);
    if (!rc_st) goto fail;
    if (memchr(rc_cfg->data, 0, rc_cfg->nbytes)) {
        err_set(err, "checkpoint %s: the stored config holds a NUL byte; the file is corrupt — "
                "use another checkpoint", path);
        goto fail;
    }
    ini = xmalloc(rc_cfg->nbytes + 1);
    memcpy(ini, rc_cfg->data, rc_cfg->nbytes);
    ini[rc_cfg->nbytes] = 0;
    Config cfg;
    config_defaults(&cfg);
    if (config_load_string(&cfg, ini, "config stored in checkpoint", err)) {
        err_prefix(err, "checkpoint %s", path);
        goto fail;
    }
    if (device_override >= 0) cfg.device = (DeviceType)device_override;
    /* model.rnn_impl says how the LSTM/GRU layers ran, not what they compute (the parameters are
     * the same): a checkpoint trained with cudnn loads with our own kernels where cuDNN is not
     * there (the CPU, a build without it) */
    if (cfg.model.rnn_impl == RNN_IMPL_CUDNN &&
        (cfg.device != DEVICE_CUDA || !backend_info(BACKEND_DEVICE_CUDA).cudnn))
        cfg.model.rnn_impl = RNN_IMPL_OWN;
    /* train.precision likewise says how the run's products were rounded, not what the (fp32)
     * parameters are: a checkpoint trained at tf32, or at bf16, loads at fp32 where that cannot
     * run (the averaging at the end of a tf32 run loads on the CPU) */
    if (!backend_precision_runs((int)cfg.device, (int)cfg.precision, NULL, 0))
        cfg.precision = PRECISION_FP32;
    if (config_validate(&cfg, err)) {
        err_prefix(err, "checkpoint %s", path);
        goto fail;
    }
    char why[256];
    if (train_state_problem(rc_st->data, &cfg, why, sizeof why)) {
        err_set(err, "checkpoint %s: the training state is corrupt: %s; use another checkpoint",
                path, why);
        goto fail;
    }
    if (spm_load_from_bytes(&spm, rc_spm->data, rc_spm->nbytes, err)) {
        err_prefix(err, "checkpoint %s: SentencePiece model", path);
        goto fail;
    }
    const Backend *be;
    /* the device only: the threads and precision stay the process's (a run that loads a
     * checkpoint keeps its own) */
    BackendOptions bo = {.device = (int)cfg.device, .precision = BACKEND_KEEP,
                         .threads = BACKEND_KEEP, .ordinal = BACKEND_KEEP};
    /* Declared, not yet allocated: the stored config may ask for any size, so every tensor is
     * checked against the file's records before anything of the model's size is allocated. */
    if (backend_open(&bo, &be, NULL, 0, err)) { /* the machine's fault, not the file's */
        err_prefix(err, "checkpoint %s: cannot be loaded on train.device = %s", path,
                   device_type_names[cfg.device]);
        goto fail;
    }
    if (model_declare(m, &cfg.model, spm_vocab_size(spm), be, err)) {
        err_prefix(err, "checkpoint %s: the model of its stored config cannot be built (a "
                   "corrupt or crafted file; use another checkpoint)", path);
        goto fail;
    }
    ParamSet *ps = &m->ps;
    /* the Adam moments: all or none (a weights-only checkpoint, checkpoint_save_weights, has
     * none; checkpoint_load_weights does not read them: it has them all when the file has one);
     * "ema/" records: all or none (a checkpoint of a run without train.ema_decay has none) */
    int has[4] = {1, 0, 0, 0}, nbuf = 1;
    for (int i = 0; i < n; i++)
        for (int k = 1; k < 4; k++)
            if (!strncmp(recs[i].name, prefix[k], strlen(prefix[k]))) has[k] = 1;
    if (has[1] || has[2]) has[1] = has[2] = 1; /* one moment asks for both */
    for (int k = 1; k < 4; k++) nbuf += has[k];
    found = xcalloc(4 * (size_t)ps->n + 1, sizeof *found); /* [4·n]: each tensor's record */
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < ps->n && has[k]; i++) {
            const ParamSpec *s = &ps->specs[i];
            char name[CKPT_NAME_MAX];
            snprintf(name, sizeof name, "%s%s", prefix[k], s->name);
            const CkptRecord *r = found[k * ps->n + i] = ckpt_find(recs, n, name);
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
    if (n != 3 + nbuf * ps->n) {
        /* every expected record was found, so some record is not one of them: name it */
        const char *extra = "?";
        for (int i = 0; i < n && extra[0] == '?'; i++) {
            const char *nm = recs[i].name;
            if (!strcmp(nm, "config") || !strcmp(nm, "spm") || !strcmp(nm, "train_state"))
                continue;
            int known = 0;
            for (int k = 0; k < 4 && !known; k++) {
                if (!has[k]) continue;
                size_t pl = strlen(prefix[k]);
                if (strncmp(nm, prefix[k], pl)) continue;
                for (int t = 0; t < ps->n && !known; t++)
                    known = !strcmp(nm + pl, ps->specs[t].name);
            }
            if (!known) extra = nm;
        }
        err_set(err, "checkpoint %s: holds %d records but this model has %d: '%s' is not part of "
                "this model; the file was not written for this model", path, n, 3 + nbuf * ps->n,
                extra);
        goto fail;
    }
    if (weights_only) {
        model_allocate_weights(m);
    } else {
        model_allocate(m);
        if (has[3]) params_allocate_ema(ps);
    }
    /* each tensor straight from its record into its slice (the buffers are zero-filled, gaps
     * included): no host copy of the whole model on top of the file's */
    float *dev[4] = {ps->data, ps->m, ps->v, ps->ema};
    for (int k = 0; k < (weights_only ? 1 : 4); k++)
        for (int i = 0; i < ps->n && has[k]; i++) {
            const ParamSpec *s = &ps->specs[i];
            const CkptRecord *r = found[k * ps->n + i];
            const float *x = r->data;
            for (size_t j = 0; j < s->size; j++)
                if (!isfinite(x[j])) {
                    err_set(err, "checkpoint %s: tensor '%s' holds a non-finite value (%g) at "
                            "element %zu; it cannot be trained from — use an earlier "
                            "checkpoint", path, r->name, (double)x[j], j);
                    goto fail;
                }
            m->be->upload(dev[k] + s->offset, x, r->nbytes);
        }
    if (st) {
        const uint64_t *u = rc_st->data;
        *st = (TrainState){.step = (long)u[ST_STEP], .epoch = (int)u[ST_EPOCH],
                           .batch_in_epoch = (long)u[ST_BATCH],
                           .epoch_rng = {u[ST_RNG_STATE], u[ST_RNG_INC]},
                           .adam_t = (int)u[ST_ADAM_T], .lr_scale = u2f(u[ST_LR_SCALE]),
                           .best_score = u2f(u[ST_BEST]), .bad_epochs = (int)u[ST_BAD],
                           .elapsed = u2f(u[ST_ELAPSED]), .weights_only = !has[1]};
    }
    *cfg_out = cfg;
    *spm_out = spm;
    free(found);
    free(ini);
    ckpt_records_free(recs, n);
    return STATUS_OK;
fail:
    if (m->rnn || m->tf) model_free(m);
    spm_free(spm);
    free(found);
    free(ini);
    ckpt_records_free(recs, n);
    memset(m, 0, sizeof *m);
    return STATUS_ERR;
}

Status checkpoint_load(const char *path, Model *m, Config *cfg, Spm **spm, TrainState *st,
                       int device_override, Err *err) {
    return load(path, m, cfg, spm, st, device_override, 0, err);
}

Status checkpoint_load_weights(const char *path, Model *m, Config *cfg, Spm **spm,
                               int device_override, Err *err) {
    return load(path, m, cfg, spm, NULL, device_override, 1, err);
}

/* "[d0]" or "[d0, d1]" of a parameter spec into buf[n]. */
static const char *shape_text(const ParamSpec *sp, char *buf, size_t n) {
    if (sp->ndim == 1)
        snprintf(buf, n, "[%d]", sp->shape[0]);
    else
        snprintf(buf, n, "[%d, %d]", sp->shape[0], sp->shape[1]);
    return buf;
}

Status checkpoint_average(const char *const *paths, int n, const char *out, Err *err) {
    if (n < 1) return err_set(err, "checkpoint_average: no checkpoint to average");
    Model base = {0}, other = {0};
    Config cfg, ocfg;
    Spm *spm = NULL, *ospm = NULL;
    TrainState st;
    double *acc = NULL;
    Status rc = STATUS_ERR;
    /* the weights alone (the training state too): the average is a weights-only checkpoint */
    if (load(paths[n - 1], &base, &cfg, &spm, &st, DEVICE_CPU, 1, err)) return STATUS_ERR;
    const ParamSet *ps = &base.ps;
    acc = xcalloc(ps->total, sizeof *acc);
    for (int i = 0; i < n; i++) {
        const Model *m = &base;
        if (i != n - 1) {
            if (checkpoint_load_weights(paths[i], &other, &ocfg, &ospm, DEVICE_CPU, err))
                goto done;
            m = &other;
            int same = other.ps.n == ps->n && other.ps.total == ps->total;
            for (int k = 0; same && k < ps->n; k++) {
                const ParamSpec *a = &other.ps.specs[k], *b = &ps->specs[k];
                char sa[48], sb[48];
                if (strcmp(a->name, b->name) != 0 || a->size != b->size || a->ndim != b->ndim ||
                    strcmp(shape_text(a, sa, sizeof sa), shape_text(b, sb, sizeof sb)) != 0) {
                    err_set(err,
                            "trainer average: %s has tensor %s of shape %s where %s has %s %s: "
                            "average checkpoints of one model (one run's save_dir)",
                            paths[i], a->name, sa, paths[n - 1], b->name, sb);
                    goto done;
                }
            }
            if (!same) {
                err_set(err,
                        "trainer average: %s holds %d tensors (%zu floats), %s holds %d (%zu): "
                        "average checkpoints of one model (one run's save_dir)",
                        paths[i], other.ps.n, other.ps.total, paths[n - 1], ps->n, ps->total);
                goto done;
            }
        }
        const float *w = m->ps.data; /* CPU backend: host memory */
        for (size_t j = 0; j < ps->total; j++) acc[j] += (double)w[j];
        if (m == &other) {
            model_free(&other);
            spm_free(ospm);
            ospm = NULL;
        }
    }
    for (size_t j = 0; j < ps->total; j++) ps->data[j] = (float)(acc[j] / n);
    rc = checkpoint_save_weights(out, &base, &cfg, spm, &st, err);
done:
    free(acc);
    model_free(&other);
    if (ospm) spm_free(ospm);
    model_free(&base);
    spm_free(spm);
    return rc;
}
