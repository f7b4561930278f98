/* test_checkpoint.c — model-level checkpoints (src/train/checkpoint.c, DESIGN.md §7), in process.
 *
 * A tiny LSTM + Luong model (V 120, E 16, H 64) over a SentencePiece model trained on generated
 * text (no corpus needed), random Adam moments and a distinctive TrainState:
 *   - save + load: every parameter and Adam moment bit for bit, the TrainState field by field,
 *     config_diff == 0, the same SentencePiece bytes, the same tensor table; saving the loaded
 *     model again gives a byte-identical file; no temporary file is left behind;
 *   - the file truncated at many lengths, a byte flipped at many positions, trailing garbage: each
 *     refused with a message naming the file, the Model left all zero, never a crash;
 *   - records that are well-formed for the container but wrong for the model (written with
 *     ckpt_write_atomic, so every CRC is right): tensors of a different model (H 32) under this
 *     model's config, a missing / extra tensor, a wrong dtype, a NaN in a tensor, a short
 *     train_state, a broken config or SentencePiece record, a missing config: each refused;
 *   - a checkpoint of a different model (H 32) renamed into place loads as THAT model; the caller
 *     must compare configs (config_diff names model.hidden; `train --resume` refuses it, see
 *     tests/slow/test_resume.c);
 *   - a NaN or Inf in a parameter or Adam moment: checkpoint_save refuses, leaves the existing file
 *     byte-identical and no temporary file.
 */
#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/spm.h"
#include "testutil.h"
#include "train/checkpoint.h"
#include "train/ckptfile.h"

#define V 120

static const char *g_dir;

static const char *path_in(const char *name) {
    static char bufs[8][4096];
    static int k = 0;
    char *b = bufs[k++ & 7];
    snprintf(b, 4096, "%s/%s", g_dir, name);
    return b;
}

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint32_t next_u32(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}
static float next_float(void) { return (float)((next_u32() >> 8) / 16777216.0); }

/* Made-up text: 1500 lines of pseudo-words built from random syllables (enough distinct
 * substrings for a 120-piece unigram model). */
static int write_text(const char *path) {
    static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "bi", "da",
                                "fu", "ge", "ho", "ji", "pa", "qu", "xe", "zy", "ch", "sch",
                                "ä", "ö", "ü", "ß", "st", "nd", "er", "en", "th", "ing"};
    const int ns = (int)(sizeof syl / sizeof syl[0]);
    char words[300][32];
    for (int i = 0; i < 300; i++) {
        words[i][0] = 0;
        int k = 1 + (int)(next_u32() % 4);
        for (int j = 0; j < k; j++) strcat(words[i], syl[next_u32() % ns]);
    }
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < 1500; i++) {
        int nw = 4 + (int)(next_u32() % 10);
        for (int k = 0; k < nw; k++) fprintf(f, "%s%s", k ? " " : "", words[next_u32() % 300]);
        fprintf(f, ".\n");
    }
    return fclose(f);
}

static const char *ini_text(int hidden) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "[run]\nname = ckpt_test\n"
             "[model]\ntype = rnn\ncell = lstm\nattention = luong_general\nemb = 16\n"
             "hidden = %d\nenc_layers = 1\ndec_layers = 1\ndropout = 0.1\ninput_feeding = yes\n"
             "[data]\nvocab_size = %d\nmax_len = 40\n"
             "[train]\nseed = 99\nlr = 0.002\nbatch_tokens = 800\nthreads = 1\n"
             "save_dir = \"/nonexistent/ckpt test\"\n",
             hidden, V);
    return buf;
}

/* Builds the model of ini_text(hidden) over the SentencePiece model file; random parameters
 * (model_init_params) and random Adam moments. Returns 0 on success. */
static int build_model(Model *m, int hidden, const char *spm_path) {
    Config cfg;
    Err err;
    Spm *spm = NULL;
    if (config_load_string(&cfg, ini_text(hidden), "test config", &err) ||
        config_validate(&cfg, &err)) {
        EXPECT(0, "config: %s", err.msg);
        return -1;
    }
    if (spm_load(&spm, spm_path, &err)) {
        EXPECT(0, "spm_load: %s", err.msg);
        return -1;
    }
    if (model_create(m, &cfg, spm, &err)) {
        EXPECT(0, "model_create: %s", err.msg);
        return -1;
    }
    model_init_params(m);
    size_t n = m->ps.total;
    /* only inside the tensors: the flat buffers keep each tensor 16-float aligned, and the
     * alignment gaps stay zero (the checkpoint does not store them) */
    float *hm = calloc(n, sizeof(float)), *hv = calloc(n, sizeof(float));
    for (int t = 0; t < m->ps.n; t++) {
        const ParamSpec *s = &m->ps.specs[t];
        for (size_t i = s->offset; i < s->offset + s->size; i++) {
            hm[i] = (next_float() - 0.5f) * 1e-2f;
            hv[i] = next_float() * 1e-4f + 1e-12f;
        }
    }
    m->be->upload(m->ps.m, hm, sizeof(float) * n);
    m->be->upload(m->ps.v, hv, sizeof(float) * n);
    free(hm);
    free(hv);
    return 0;
}

static float *download_all(const Model *m) {
    size_t n = m->ps.total;
    float *h = malloc(sizeof(float) * n * 3);
    m->be->download(h, m->ps.data, sizeof(float) * n);
    m->be->download(h + n, m->ps.m, sizeof(float) * n);
    m->be->download(h + 2 * n, m->ps.v, sizeof(float) * n);
    return h;
}

static int count_temp_files(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

static int is_all_zero(const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i]) return 0;
    return 1;
}

static int g_refusals = 0;

/* Expects checkpoint_load(path) to fail with a message naming path and to leave m all zero. */
static void expect_refused(const char *path, const char *what) {
    Model m;
    TrainState st;
    memset(&m, 0xA5, sizeof m); /* poison: the loader must reset it */
    Err err;
    err.msg[0] = 0;
    Status rc = checkpoint_load(path, &m, &st, -1, &err);
    EXPECT(rc != STATUS_OK, "%s: checkpoint_load accepted a damaged file", what);
    if (rc == STATUS_OK) {
        model_free(&m);
        return;
    }
    g_refusals++;
    EXPECT(err.msg[0] && strstr(err.msg, path), "%s: the message should name %s: '%s'", what,
           path, err.msg);
    EXPECT(is_all_zero(&m, sizeof m), "%s: the Model is not left empty after a failed load", what);
    printf("  %-28s -> %.200s\n", what, err.msg);
}

/* Writes records to path (CRCs right) replacing/adding/removing records of the original file. */
static int write_records(const char *path, CkptRecord *recs, int n) {
    Err err;
    if (ckpt_write_atomic(path, recs, n, 1, &err)) {
        EXPECT(0, "ckpt_write_atomic %s: %s", path, err.msg);
        return -1;
    }
    return 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_dir = test_strdup(test_tmpdir());
    printf("test_checkpoint: working in %s\n", g_dir);
    Err err;

    /* ---- a SentencePiece model on generated text ---- */
    const char *txt = test_strdup(path_in("text.txt")), *prefix = test_strdup(path_in("spm"));
    const char *spm_path = test_strdup(path_in("spm.model"));
    EXPECT(write_text(txt) == 0, "cannot write %s", txt);
    const char *files[1] = {txt};
    if (spm_train(files, 1, V, prefix, 1, &err)) {
        EXPECT(0, "spm_train: %s", err.msg);
        return test_report("test_checkpoint");
    }

    /* ---- round trip ---- */
    Model a;
    if (build_model(&a, 64, spm_path)) return test_report("test_checkpoint");
    printf("model: %zu parameters in %d tensors\n", a.ps.total, a.ps.n);
    TrainState st = {.step = 123456789012L, .epoch = 7, .batch_in_epoch = 41,
                     .epoch_rng = {0x0123456789ABCDEFull, 0xFEDCBA9876543211ull},
                     .adam_t = 98765, .lr_scale = 0.125, .best_bleu = 23.456789012345678,
                     .bad_epochs = 2, .elapsed = 3600.0 / 7.0};
    const char *ck = test_strdup(path_in("model.ckpt"));
    Status rc = checkpoint_save(ck, &a, &st, &err);
    EXPECT(rc == STATUS_OK, "checkpoint_save: %s", err.msg);
    EXPECT(count_temp_files() == 0, "a temporary file was left after a successful save");
    size_t ck_n = 0;
    char *ck_bytes = test_read_file(ck, &ck_n);
    EXPECT(ck_bytes && ck_n > 0, "cannot read back %s", ck);
    if (!ck_bytes) return test_report("test_checkpoint");
    printf("saved %s: %zu bytes\n", ck, ck_n);

    Model b;
    TrainState st2;
    memset(&st2, 0x5A, sizeof st2);
    rc = checkpoint_load(ck, &b, &st2, -1, &err);
    EXPECT(rc == STATUS_OK, "checkpoint_load: %s", err.msg);
    if (rc != STATUS_OK) return test_report("test_checkpoint");
    EXPECT(b.ps.total == a.ps.total && b.ps.n == a.ps.n, "parameter table differs: %zu/%d vs "
           "%zu/%d", b.ps.total, b.ps.n, a.ps.total, a.ps.n);
    for (int i = 0; i < a.ps.n && i < b.ps.n; i++) {
        const ParamSpec *x = &a.ps.specs[i], *y = &b.ps.specs[i];
        EXPECT(!strcmp(x->name, y->name) && x->ndim == y->ndim && x->offset == y->offset &&
                   x->size == y->size && !memcmp(x->shape, y->shape, sizeof x->shape),
               "tensor %d: %s vs %s", i, x->name, y->name);
    }
    if (b.ps.total == a.ps.total) {
        float *ha = download_all(&a), *hb = download_all(&b);
        size_t n = a.ps.total, bad[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < n; i++)
                bad[k] += memcmp(&ha[k * n + i], &hb[k * n + i], sizeof(float)) != 0;
        printf("round trip: %zu parameters, %zu Adam m, %zu Adam v values differ\n", bad[0],
               bad[1], bad[2]);
        EXPECT(bad[0] == 0 && bad[1] == 0 && bad[2] == 0,
               "round trip changed %zu parameters, %zu m, %zu v values", bad[0], bad[1], bad[2]);
        free(ha);
        free(hb);
    }
    EXPECT(st2.step == st.step && st2.epoch == st.epoch && st2.batch_in_epoch == st.batch_in_epoch,
           "TrainState step/epoch/batch: %ld %d %ld", st2.step, st2.epoch, st2.batch_in_epoch);
    EXPECT(st2.epoch_rng.state == st.epoch_rng.state && st2.epoch_rng.inc == st.epoch_rng.inc,
           "TrainState rng differs");
    EXPECT(st2.adam_t == st.adam_t && st2.bad_epochs == st.bad_epochs, "adam_t / bad_epochs");
    EXPECT(!memcmp(&st2.lr_scale, &st.lr_scale, 8) && !memcmp(&st2.best_bleu, &st.best_bleu, 8) &&
               !memcmp(&st2.elapsed, &st.elapsed, 8),
           "TrainState doubles: %.17g %.17g %.17g", st2.lr_scale, st2.best_bleu, st2.elapsed);
    char diff[1024] = "";
    EXPECT(config_diff(&a.cfg, &b.cfg, diff, sizeof diff) == 0, "configs differ: %s", diff);
    EXPECT(!strcmp(b.cfg.name, "ckpt_test") && !strcmp(b.cfg.save_dir, "/nonexistent/ckpt test"),
           "strings in the config: name '%s' save_dir '%s'", b.cfg.name, b.cfg.save_dir);
    {
        void *sa = NULL, *sb = NULL;
        size_t na = 0, nb = 0;
        EXPECT(!spm_serialize(a.spm, &sa, &na, &err) && !spm_serialize(b.spm, &sb, &nb, &err) &&
                   na == nb && !memcmp(sa, sb, na),
               "the SentencePiece model differs after the round trip");
        free(sa);
        free(sb);
    }
    /* load(save(x)) saved again is the same file */
    const char *ck2 = test_strdup(path_in("again.ckpt"));
    EXPECT(checkpoint_save(ck2, &b, &st2, &err) == STATUS_OK, "second save: %s", err.msg);
    size_t ck2_n = 0;
    char *ck2_bytes = test_read_file(ck2, &ck2_n);
    EXPECT(ck2_bytes && ck2_n == ck_n && !memcmp(ck_bytes, ck2_bytes, ck_n),
           "saving the loaded model gives a different file (%zu vs %zu bytes)", ck2_n, ck_n);
    free(ck2_bytes);
    model_free(&b);
    /* st may be NULL */
    rc = checkpoint_load(ck, &b, NULL, -1, &err);
    EXPECT(rc == STATUS_OK, "checkpoint_load with st = NULL: %s", err.msg);
    if (rc == STATUS_OK) model_free(&b);

    /* ---- damaged files ---- */
    const char *bad = test_strdup(path_in("damaged.ckpt"));
    printf("truncations:\n");
    {
        size_t cuts[80];
        int nc = 0;
        size_t fixed[] = {0, 1, 7, 8, 12, 16, 20, 23, 24, 25, 24 + 168 - 1, 24 + 168,
                          24 + 2 * 168 + 5};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            if (fixed[i] < ck_n) cuts[nc++] = fixed[i];
        for (int i = 1; i <= 50; i++) cuts[nc++] = ck_n * (size_t)i / 51;
        cuts[nc++] = ck_n - 2;
        cuts[nc++] = ck_n - 1;
        for (int i = 0; i < nc; i++) {
            EXPECT(test_write_file(bad, ck_bytes, cuts[i]) == 0, "write %s", bad);
            char what[64];
            snprintf(what, sizeof what, "truncated to %zu bytes", cuts[i]);
            expect_refused(bad, what);
        }
    }
    printf("byte flips:\n");
    {
        char *copy = malloc(ck_n);
        size_t pos[200];
        int np = 0;
        for (size_t i = 0; i < 24; i++) pos[np++] = i;                   /* header */
        for (size_t i = 0; i < 20; i++) pos[np++] = 24 + i * 97 % (3 * 168); /* table */
        for (int i = 0; i < 100; i++) pos[np++] = 24 + 168 * 3 + (ck_n - 24 - 168 * 3) * i / 100;
        pos[np++] = ck_n - 1;
        for (int i = 0; i < np; i++) {
            if (pos[i] >= ck_n) continue;
            memcpy(copy, ck_bytes, ck_n);
            copy[pos[i]] ^= (char)(1u << (i % 8)) | (char)0x10;
            EXPECT(test_write_file(bad, copy, ck_n) == 0, "write %s", bad);
            char what[64];
            snprintf(what, sizeof what, "byte %zu flipped", pos[i]);
            expect_refused(bad, what);
        }
        /* trailing garbage */
        char *longer = malloc(ck_n + 16);
        memcpy(longer, ck_bytes, ck_n);
        memset(longer + ck_n, 0, 16);
        EXPECT(test_write_file(bad, longer, ck_n + 16) == 0, "write %s", bad);
        expect_refused(bad, "16 zero bytes appended");
        free(longer);
        free(copy);
    }
    expect_refused(path_in("does-not-exist.ckpt"), "missing file");
    expect_refused(g_dir, "a folder");
    {
        const char *txtck = test_strdup(path_in("text.ckpt"));
        test_write_file(txtck, "[model]\nhidden = 64\n", 20);
        expect_refused(txtck, "a text file");
    }

    /* ---- well-formed containers that do not fit the model ---- */
    printf("wrong records:\n");
    Model other;
    const char *oth = test_strdup(path_in("other.ckpt"));
    if (build_model(&other, 32, spm_path) == 0) {
        EXPECT(checkpoint_save(oth, &other, &st, &err) == STATUS_OK, "save other: %s", err.msg);
        model_free(&other);
    }
    CkptRecord *orig = NULL, *oth_recs = NULL;
    int n_orig = 0, n_oth = 0;
    EXPECT(ckpt_read(ck, &orig, &n_orig, &err) == STATUS_OK, "ckpt_read: %s", err.msg);
    EXPECT(ckpt_read(oth, &oth_recs, &n_oth, &err) == STATUS_OK, "ckpt_read other: %s", err.msg);
    if (orig && oth_recs) {
        CkptRecord *r = malloc(sizeof *r * (size_t)(n_orig + n_oth + 1));
        const char *crafted = test_strdup(path_in("crafted.ckpt"));
        /* (1) the other model's tensors under this model's config */
        memcpy(r, oth_recs, sizeof *r * (size_t)n_oth);
        for (int i = 0; i < n_oth; i++)
            if (!strcmp(r[i].name, "config")) r[i] = *ckpt_find(orig, n_orig, "config");
        if (!write_records(crafted, r, n_oth))
            expect_refused(crafted, "H 32 tensors, H 64 config");
        /* (2) a missing tensor (the last adam_v) */
        memcpy(r, orig, sizeof *r * (size_t)n_orig);
        if (!write_records(crafted, r, n_orig - 1)) expect_refused(crafted, "a tensor missing");
        /* (3) an extra tensor */
        r[n_orig] = r[n_orig - 1];
        snprintf(r[n_orig].name, CKPT_NAME_MAX, "param/extra.weight");
        if (!write_records(crafted, r, n_orig + 1)) expect_refused(crafted, "an extra tensor");
        /* (4) a NaN inside a parameter tensor */
        int ip = -1;
        for (int i = 0; i < n_orig && ip < 0; i++)
            if (!strncmp(r[i].name, "param/", 6) && r[i].nbytes >= 16) ip = i;
        float *nanbuf = NULL;
        if (ip >= 0) {
            nanbuf = malloc(r[ip].nbytes);
            memcpy(nanbuf, r[ip].data, r[ip].nbytes);
            nanbuf[r[ip].nbytes / sizeof(float) / 2] = NAN;
            CkptRecord keep = r[ip];
            r[ip].data = nanbuf;
            if (!write_records(crafted, r, n_orig)) expect_refused(crafted, "a NaN in a parameter");
            /* (5) the same bytes as i32: refused, and the message must say what is wrong (the
             * dtype), not report two equal shapes as a mismatch */
            r[ip] = keep;
            r[ip].dtype = CKPT_I32;
            if (!write_records(crafted, r, n_orig)) {
                expect_refused(crafted, "f32 tensor as i32");
                Model m;
                if (checkpoint_load(crafted, &m, NULL, -1, &err) == STATUS_OK) model_free(&m);
                else
                    EXPECT(strstr(err.msg, "i32") || strstr(err.msg, "dtype") ||
                               strstr(err.msg, "type"),
                           "the message for an i32 tensor where f32 is needed should name the "
                           "element type: '%s'", err.msg);
            }
            r[ip] = keep;
            /* (6) a transposed shape (same bytes, wrong shape) */
            if (r[ip].ndim == 2 && r[ip].shape[0] != r[ip].shape[1]) {
                int64_t t = r[ip].shape[0];
                r[ip].shape[0] = r[ip].shape[1];
                r[ip].shape[1] = t;
                if (!write_records(crafted, r, n_orig))
                    expect_refused(crafted, "a transposed tensor");
                r[ip] = keep;
            }
        }
        /* (7) a short train_state */
        for (int i = 0; i < n_orig; i++)
            if (!strcmp(r[i].name, "train_state")) {
                CkptRecord keep = r[i];
                r[i].shape[0] -= 1;
                r[i].nbytes -= 8;
                if (!write_records(crafted, r, n_orig)) expect_refused(crafted, "short train_state");
                r[i] = keep;
            }
        /* (8) a config record that does not parse / does not validate */
        for (int i = 0; i < n_orig; i++)
            if (!strcmp(r[i].name, "config")) {
                CkptRecord keep = r[i];
                static char junk[] = "[model]\nhidden = sixty-four\n";
                r[i].data = junk;
                r[i].nbytes = strlen(junk);
                r[i].shape[0] = (int64_t)r[i].nbytes;
                if (!write_records(crafted, r, n_orig)) expect_refused(crafted, "bad config text");
                static char odd[] = "[model]\nhidden = 63\n";
                r[i].data = odd;
                r[i].nbytes = strlen(odd);
                r[i].shape[0] = (int64_t)r[i].nbytes;
                if (!write_records(crafted, r, n_orig)) expect_refused(crafted, "invalid config");
                r[i] = keep;
            }
        /* (9) a SentencePiece record that is not a model */
        for (int i = 0; i < n_orig; i++)
            if (!strcmp(r[i].name, "spm")) {
                CkptRecord keep = r[i];
                static char junk[] = "this is not a SentencePiece model";
                r[i].data = junk;
                r[i].nbytes = strlen(junk);
                r[i].shape[0] = (int64_t)r[i].nbytes;
                if (!write_records(crafted, r, n_orig)) expect_refused(crafted, "bad spm record");
                r[i] = keep;
            }
        /* (10) no config record at all */
        {
            int k = 0;
            for (int i = 0; i < n_orig; i++)
                if (strcmp(orig[i].name, "config")) r[k++] = orig[i];
            if (!write_records(crafted, r, k)) expect_refused(crafted, "no config record");
        }
        free(nanbuf);
        free(r);
    }
    ckpt_records_free(orig, n_orig);
    ckpt_records_free(oth_recs, n_oth);

    /* a checkpoint of another model renamed into place: loads as that model; the configs differ
     * in model.hidden, which is what `train --resume` checks */
    {
        const char *renamed = test_strdup(path_in("renamed.ckpt"));
        size_t on = 0;
        char *ob = test_read_file(oth, &on);
        EXPECT(ob && test_write_file(renamed, ob, on) == 0, "copy %s", oth);
        free(ob);
        Model c;
        rc = checkpoint_load(renamed, &c, NULL, -1, &err);
        EXPECT(rc == STATUS_OK, "the other model's checkpoint should load: %s", err.msg);
        if (rc == STATUS_OK) {
            diff[0] = 0;
            int nd = config_diff(&a.cfg, &c.cfg, diff, sizeof diff);
            printf("other model's checkpoint renamed: loads as hidden = %d; config_diff: %s\n",
                   c.cfg.hidden, diff);
            EXPECT(c.cfg.hidden == 32 && nd == 1 && strstr(diff, "model.hidden"),
                   "config_diff should report exactly model.hidden (%d: %s)", nd, diff);
            model_free(&c);
        }
    }

    /* ---- a non-finite value: checkpoint_save refuses and leaves the old file alone ---- */
    printf("non-finite values:\n");
    {
        float *h = download_all(&a);
        size_t n = a.ps.total;
        /* the last element of the last tensor (ps.total also counts alignment padding) */
        const ParamSpec *lastp = &a.ps.specs[a.ps.n - 1];
        size_t last_elem = lastp->offset + lastp->size - 1;
        struct {
            float *buf;
            size_t at;
            float val;
            const char *what;
        } cases[] = {{a.ps.data, n / 3, NAN, "NaN parameter"},
                     {a.ps.data, last_elem, INFINITY, "+Inf parameter"},
                     {a.ps.m, 0, -INFINITY, "-Inf Adam m"},
                     {a.ps.v, n / 2, NAN, "NaN Adam v"}};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            a.be->upload(cases[c].buf + cases[c].at, &cases[c].val, sizeof(float));
            err.msg[0] = 0;
            rc = checkpoint_save(ck, &a, &st, &err);
            printf("  %-16s -> %s\n", cases[c].what, err.msg);
            EXPECT(rc != STATUS_OK, "%s: checkpoint_save accepted it", cases[c].what);
            if (rc == STATUS_OK) { /* what a resume would then meet */
                Model x;
                Err e2;
                if (checkpoint_load(ck, &x, NULL, -1, &e2) == STATUS_OK) model_free(&x);
                else printf("  (the file it wrote cannot be loaded back: %s)\n", e2.msg);
            }
            EXPECT(err.msg[0] && strstr(err.msg, ck), "%s: the message should name %s: '%s'",
                   cases[c].what, ck, err.msg);
            size_t nn = 0;
            char *now = test_read_file(ck, &nn);
            EXPECT(now && nn == ck_n && !memcmp(now, ck_bytes, ck_n),
                   "%s: the refused save changed %s", cases[c].what, ck);
            free(now);
            EXPECT(count_temp_files() == 0, "%s: a temporary file was left", cases[c].what);
            const char *fresh = path_in("fresh.ckpt");
            EXPECT(checkpoint_save(fresh, &a, &st, &err) != STATUS_OK && access(fresh, F_OK) != 0,
                   "%s: a refused save created %s", cases[c].what, fresh);
            /* restore */
            size_t off = cases[c].buf == a.ps.data ? 0 : cases[c].buf == a.ps.m ? n : 2 * n;
            a.be->upload(cases[c].buf + cases[c].at, h + off + cases[c].at, sizeof(float));
        }
        free(h);
        EXPECT(checkpoint_save(ck, &a, &st, &err) == STATUS_OK, "save after restoring: %s",
               err.msg);
        size_t nn = 0;
        char *now = test_read_file(ck, &nn);
        EXPECT(now && nn == ck_n && !memcmp(now, ck_bytes, ck_n),
               "the restored model saves to a different file");
        free(now);
    }
    printf("%d damaged or mismatched files refused\n", g_refusals);
    model_free(&a);
    free(ck_bytes);
    int verdict = test_report("test_checkpoint");
    if (verdict == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", g_dir);
    } else {
        printf("test_checkpoint: files kept in %s\n", g_dir);
    }
    return verdict;
}
