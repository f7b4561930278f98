/* ranks.c — verdicts, flags and state shared by train_run's ranks (ranks.h). */
#include "train/ranks.h"

#include <stdint.h>
#include <stdlib.h>

#include "dist/dist.h"

Status ranks_agree(Status s, const char *what, Err *err) {
    if (dist_size() == 1) return s;
    int bad = dist_first_failed(s == STATUS_OK, what);
    if (bad < 0) return STATUS_OK;
    if (s == STATUS_OK)
        err_set(err, "rank %d (host %s) failed during %s (its message is above); stopping", bad,
                dist_host(bad), what);
    return STATUS_ERR;
}

int ranks_any(int v, const char *what) {
    double x = v ? 1.0 : 0.0;
    if (dist_size() > 1) dist_sum_double(&x, 1, what);
    return x > 0;
}

Status ranks_follow_lead(Status s, TrainState *st, int *stop, Err *err) {
    if (ranks_agree(s, "rank 0's validation and checkpoint", err)) return STATUS_ERR;
    if (dist_size() > 1) {
        dist_bcast(st, sizeof *st, 0, "the state after rank 0's validation");
        dist_bcast(stop, sizeof *stop, 0, "the early-stopping decision");
    }
    return STATUS_OK;
}

/* Rank 0's bytes at p (bytes of them, in be's memory: device memory on cuda) into every rank's
 * p: through a host copy unless be's memory is the host's. */
static void bcast_backend(const Backend *be, void *p, size_t bytes, const char *what) {
    if (be->host_memory) {
        dist_bcast(p, bytes, 0, what);
        return;
    }
    void *h = xmalloc(bytes ? bytes : 1);
    if (dist_rank() == 0) be->download(h, p, bytes);
    dist_bcast(h, bytes, 0, what);
    if (dist_rank() != 0) be->upload(p, h, bytes);
    free(h);
}

Status ranks_share_start(const Config *cfg, const Backend *be, Spm **spm, TrainState *st,
                         Model *m, Err *err) {
    int lead = dist_rank() == 0;
    void *bytes = NULL;
    uint64_t n = 0;
    Status s = STATUS_OK;
    if (lead) {
        size_t sz = 0;
        s = spm_serialize(*spm, &bytes, &sz, err);
        n = sz;
    }
    if (ranks_agree(s, "start-up (sending the SentencePiece model)", err)) return STATUS_ERR;
    dist_bcast(&n, sizeof n, 0, "start-up (SentencePiece model size)");
    if (!lead) bytes = xmalloc(n);
    dist_bcast(bytes, n, 0, "start-up (SentencePiece model)");
    dist_bcast(st, sizeof *st, 0, "start-up (training state)");
    if (!lead) {
        s = spm_load_from_bytes(spm, bytes, n, err);
        if (!s) s = model_create(m, &cfg->model, spm_vocab_size(*spm), be, err);
    }
    free(bytes);
    if (ranks_agree(s, "start-up (building the model)", err)) return STATUS_ERR;
    uint64_t total = m->ps.total;
    dist_bcast(&total, sizeof total, 0, "start-up (parameter count)");
    CHECK(total == m->ps.total, "rank 0's model has another parameter count: the ranks "
          "built different models from equal configs");
    ParamSet *ps = &m->ps; /* backend memory: host (cpu) or device (cuda) */
    size_t pbytes = sizeof(float) * ps->total;
    bcast_backend(be, ps->data, pbytes, "start-up (parameters)");
    bcast_backend(be, ps->m, pbytes, "start-up (Adam m)");
    bcast_backend(be, ps->v, pbytes, "start-up (Adam v)");
    if (cfg->ema_decay > 0) {
        if (!lead) params_allocate_ema(ps);
        bcast_backend(be, ps->ema, pbytes, "start-up (EMA of the parameters)");
    }
    return STATUS_OK;
}
