/* finetune.c — train.init_from: the new run's model from a checkpoint's weights (finetune.h). */
#include "train/finetune.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "train/checkpoint.h"
#include "train/ckptfile.h"

/* "[d0]" or "[d0, d1]" of a tensor into buf[n]. */
static const char *shape_text(const ParamSpec *s, char *buf, size_t n) {
    if (s->ndim == 1) snprintf(buf, n, "[%d]", s->shape[0]);
    else snprintf(buf, n, "[%d, %d]", s->shape[0], s->shape[1]);
    return buf;
}

Status init_from_checkpoint(Config *cfg, const char *dir, const Backend *be, Model *m, Spm **spm,
                            Err *err) {
    const char *path = cfg->init_from;
    Model src = {0};
    Config scfg;
    Spm *sspm = NULL, *given = NULL;
    void *bytes = NULL;
    size_t nbytes = 0;
    char crc[16], diff[2048], copy[1200];
    memset(m, 0, sizeof *m);
    *spm = NULL;
    int64_t size;
    uint32_t c;
    int e = file_crc32(path, &size, &c);
    if (e)
        return err_set(err, "train.init_from = %s: cannot read the checkpoint: %s; check the path",
                       path, strerror(e));
    snprintf(crc, sizeof crc, "%08x", c);
    if (cfg->init_from_crc[0] && strcasecmp(cfg->init_from_crc, crc) != 0)
        return err_set(err, "train.init_from = %s has CRC-32 %s, but train.init_from_crc = %s: it "
                       "is not the checkpoint this config was started from; give that file, or "
                       "remove train.init_from_crc to start from this one", path, crc,
                       cfg->init_from_crc);
    if (checkpoint_load_weights(path, &src, &scfg, &sspm, (int)cfg->device, err))
        return err_prefix(err, "train.init_from = %s", path);
    /* the architecture: every [model] key but those that change no parameter's meaning */
    Config a = *cfg;
    a.model = scfg.model;
    a.model.dropout = cfg->model.dropout, a.model.rnn_impl = cfg->model.rnn_impl;
    Status s = STATUS_OK;
    if (config_diff(&a, cfg, diff, sizeof diff))
        s = err_set(err, "train.init_from = %s: its model differs from this config's (%s; the "
                    "checkpoint's value first); a fine-tuned run keeps the architecture: set "
                    "these [model] keys as the checkpoint has them (only model.dropout and "
                    "model.rnn_impl may differ)", path, diff);
    int V = spm_vocab_size(sspm), same = 1;
    if (!s && V != cfg->vocab_size)
        s = err_set(err, "train.init_from = %s: its SentencePiece model has %d pieces, but "
                    "data.vocab_size = %d; set data.vocab_size = %d", path, V, cfg->vocab_size,
                    V);
    if (!s && cfg->spm_model[0]) {
        s = spm_load(&given, cfg->spm_model, err);
        if (s) err_prefix(err, "data.spm_model");
        if (!s) s = spm_same(given, sspm, &same, err);
        if (!s && !same)
            s = err_set(err, "data.spm_model = %s is not the SentencePiece model of "
                        "train.init_from = %s (a fine-tuned run keeps the checkpoint's, whose ids "
                        "its embeddings are trained on); remove data.spm_model", cfg->spm_model,
                        path);
    }
    if (!s) s = model_create(m, &cfg->model, V, be, err);
    /* the same keys build the same tensors; checked all the same before the copy */
    const ParamSet *ps = &m->ps, *ss = &src.ps;
    for (int i = 0; !s && i < ps->n; i++) {
        char sa[48], sb[48];
        const ParamSpec *x = &ps->specs[i], *y = i < ss->n ? &ss->specs[i] : NULL;
        if (!y || strcmp(x->name, y->name) || x->offset != y->offset ||
            strcmp(shape_text(x, sa, sizeof sa), shape_text(y, sb, sizeof sb)))
            s = err_set(err, "train.init_from = %s: this config's model has tensor '%s' of shape "
                        "%s where the checkpoint has %s%s; start from a checkpoint of this "
                        "architecture", path, x->name, sa, y ? y->name : "no tensor",
                        y ? shape_text(y, sb, sizeof sb) : "");
    }
    if (!s && ps->total != ss->total)
        s = err_set(err, "train.init_from = %s: the checkpoint has %zu parameters, this config's "
                    "model %zu; start from a checkpoint of this architecture", path, ss->total,
                    ps->total);
    if (!s) {
        be->copy(ps->data, ss->data, sizeof(float) * ps->total);
        snprintf(copy, sizeof copy, "%s/spm.model", dir);
        s = spm_serialize(sspm, &bytes, &nbytes, err);
        if (!s) s = write_file_atomic(copy, bytes, nbytes, err);
    }
    model_free(&src);
    spm_free(given);
    free(bytes);
    if (s) {
        if (m->rnn || m->tf) model_free(m);
        spm_free(sspm);
        return STATUS_ERR;
    }
    memcpy(cfg->init_from_crc, crc, sizeof crc);
    *spm = sspm;
    printf("initialised from train.init_from = %s (CRC-32 %s, %lld bytes): its weights and "
           "SentencePiece model (%d pieces, copied to %s); a new optimizer, schedule and step "
           "count\n", path, crc, (long long)size, V, copy);
    return STATUS_OK;
}
