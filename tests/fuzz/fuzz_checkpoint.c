/* fuzz_checkpoint.c — fuzz target of checkpoint_load (src/train/checkpoint.c) on a file: the
 * stored config, the SentencePiece model, the model built from them, every tensor's name, type,
 * shape and values, and the training state.
 *
 * The container (zlib streams, CRCs) is fuzzed by fuzz_ckpt; here the input is a list of records
 * in the clear, which the harness writes with ckpt_write_atomic (so every CRC is right) before
 * checkpoint_load reads the file. Input format (little-endian), repeated while >= 3 bytes remain:
 *     u8 name length (mod 96), the name's bytes
 *     u8 dtype (CkptDType; an unknown one ends the list)
 *     u8 ndim (mod 5), ndim x u32 dims
 *     prod(dims) x dtype-size bytes of data (zero-filled past the end of the input; a record of
 *     more than 4 MiB ends the list)
 * tests/fuzz/make_seeds.c writes a real checkpoint of a tiny model in this form.
 * Invariants checked after a successful load: the stored config is valid, the training state is
 * in range (checkpoint.h), and checkpoint_save of the loaded model loads back to the same state
 * and parameters. */
#include <math.h>
#include <string.h>

#include "fuzz_util.h"
#include "train/checkpoint.h"
#include "train/ckptfile.h"

enum { MAX_RECS = 4096 };
#define MAX_RECORD_BYTES ((uint64_t)4 << 20)

/* Parses the input into records (data pointers are malloc'd); returns the count. */
static int parse_records(const uint8_t *p, size_t size, CkptRecord *recs) {
    size_t at = 0;
    int n = 0;
    while (n < MAX_RECS && size - at >= 3) {
        CkptRecord *r = &recs[n];
        memset(r, 0, sizeof *r);
        size_t len = p[at++] % CKPT_NAME_MAX;
        if (len > size - at) len = size - at;
        memcpy(r->name, p + at, len);
        at += len;
        if (at >= size) break;
        r->dtype = (CkptDType)p[at++];
        size_t esz = ckpt_dtype_size(r->dtype);
        if (esz == 0 || at >= size) break;
        r->ndim = p[at++] % (CKPT_MAX_NDIM + 1);
        uint64_t bytes = esz;
        int zero = 0, too_big = 0;
        for (int d = 0; d < r->ndim; d++) {
            uint8_t b[4] = {0, 0, 0, 0};
            for (int k = 0; k < 4 && at < size; k++) b[k] = p[at++];
            r->shape[d] = fuzz_get_u32(b);
            if (r->shape[d] == 0) zero = 1;
            else if (bytes > MAX_RECORD_BYTES / (uint64_t)r->shape[d]) too_big = 1;
            else bytes *= (uint64_t)r->shape[d];
        }
        if (zero) bytes = 0;
        else if (too_big) break;
        r->nbytes = (size_t)bytes;
        r->data = calloc(1, r->nbytes ? r->nbytes : 1);
        size_t have = size - at < r->nbytes ? size - at : r->nbytes;
        memcpy(r->data, p + at, have);
        at += have;
        n++;
    }
    return n;
}

static void check_state(const TrainState *st) {
    FUZZ_ASSERT(st->step >= 0 && st->epoch >= 1 && st->batch_in_epoch >= 0 && st->adam_t >= 0 &&
                    st->bad_epochs >= 0,
                "checkpoint_load accepted a training state out of range: step %ld epoch %d "
                "batch %ld adam_t %d bad_epochs %d",
                st->step, st->epoch, st->batch_in_epoch, st->adam_t, st->bad_epochs);
    FUZZ_ASSERT(isfinite(st->lr_scale) && st->lr_scale > 0 && st->lr_scale <= 1 &&
                    isfinite(st->best_score) && isfinite(st->elapsed) && st->elapsed >= 0,
                "checkpoint_load accepted a training state out of range: lr_scale %.17g best %.17g "
                "elapsed %.17g",
                st->lr_scale, st->best_score, st->elapsed);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_quiet_stdout();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static CkptRecord recs[MAX_RECS];
    int n = parse_records(data, size, recs);
    const char *path = fuzz_tmp_path("model.ckpt");
    Err err;
    Model m, m2;
    Config cfg, cfg2;
    Spm *spm, *spm2;
    TrainState st, st2;
    if (ckpt_write_atomic(path, recs, n, 0, &err) != STATUS_OK) goto done;
    if (checkpoint_load(path, &m, &cfg, &spm, &st, -1, &err) != STATUS_OK) {
        FUZZ_ASSERT(m.rnn == NULL && m.tf == NULL && spm == NULL,
                    "checkpoint_load failed but left a model");
        goto done;
    }
    FUZZ_ASSERT(config_validate(&cfg, &err) == STATUS_OK, "loaded config is invalid: %s",
                err.msg);
    check_state(&st);

    /* save and load again: the same state and the same parameters */
    const char *path2 = fuzz_tmp_path("again.ckpt");
    Status s = checkpoint_save(path2, &m, &cfg, spm, &st, &err);
    FUZZ_ASSERT(s == STATUS_OK, "a loaded checkpoint cannot be saved: %s", err.msg);
    s = checkpoint_load(path2, &m2, &cfg2, &spm2, &st2, -1, &err);
    FUZZ_ASSERT(s == STATUS_OK, "a re-saved checkpoint does not load: %s", err.msg);
    FUZZ_ASSERT(st.step == st2.step && st.epoch == st2.epoch &&
                    st.batch_in_epoch == st2.batch_in_epoch &&
                    st.epoch_rng.state == st2.epoch_rng.state &&
                    st.epoch_rng.inc == st2.epoch_rng.inc && st.adam_t == st2.adam_t &&
                    memcmp(&st.lr_scale, &st2.lr_scale, sizeof(double)) == 0 &&
                    memcmp(&st.best_score, &st2.best_score, sizeof(double)) == 0 &&
                    st.bad_epochs == st2.bad_epochs &&
                    memcmp(&st.elapsed, &st2.elapsed, sizeof(double)) == 0,
                "the training state changed on re-save");
    FUZZ_ASSERT(m.ps.total == m2.ps.total, "the parameter count changed on re-save");
    size_t bytes = sizeof(float) * m.ps.total;
    float *a = malloc(bytes ? bytes : 1), *b = malloc(bytes ? bytes : 1);
    m.be->download(a, m.ps.data, bytes);
    m2.be->download(b, m2.ps.data, bytes);
    FUZZ_ASSERT(memcmp(a, b, bytes) == 0, "the parameters changed on re-save");
    free(a);
    free(b);
    model_free(&m2);
    model_free(&m);
    spm_free(spm2);
    spm_free(spm);
done:
    for (int i = 0; i < n; i++) free(recs[i].data);
    return 0;
}
