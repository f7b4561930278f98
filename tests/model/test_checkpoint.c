/* test_checkpoint.c — model-level checkpoints (src/train/checkpoint.c, docs/design.md §8), in process.
 *
 * A tiny LSTM + Luong model (V 120, E 16, H 64) over a SentencePiece model trained on generated
 * text (no corpus needed), random Adam moments and a distinctive TrainState:
 *   - save + load: every parameter and Adam moment bit for bit, the TrainState field by field,
 *     config_diff == 0, the same SentencePiece bytes, the same tensor table; saving the loaded
 *     model again gives a byte-identical file; no temporary file is left behind;
 *   - the file truncated at many lengths, a byte flipped at many positions, trailing garbage: each
 *     refused with a message naming the file, the Model left all zero, never a crash;
 *   - 42 files that are well-formed for the container but wrong for the model (written with
 *     ckpt_write_atomic, so every CRC is right), each refused with ITS OWN message (asserted):
 *     tensors of a different model (H 32) under this model's config; a tensor missing, extra,
 *     i32 or u8 instead of f32, transposed or flattened; NaN/±Inf in a parameter, Adam m or v;
 *     train.ema_decay's "ema/" records (all or none): one alone, one missing from the full set,
 *     a NaN or a transposed shape in one (the full set loads, ps.ema = its values);
 *     the config, spm or train_state record missing, of the wrong type or size; a stored config
 *     that does not parse, does not validate, has an unknown key or a NUL byte; a SentencePiece
 *     record of text, cut in half or empty; a training state out of range in each field (step,
 *     epoch, batch, RNG increment, Adam step, lr scale, best BLEU, bad epochs, elapsed time);
 *     after every refusal the Model is all zero and the TrainState untouched;
 *   - a checkpoint of a different model (H 32) renamed into place loads as THAT model; the caller
 *     must compare configs (config_diff names model.hidden; `train --resume` refuses it, see
 *     tests/slow/test_resume.c);
 *   - checkpoint_average: two checkpoints give their element-wise mean (exactly the float of
 *     the double mean), the Adam moments and training state of the last; checkpoints of two
 *     different models are refused naming both files;
 *   - a NaN or Inf in a parameter or Adam moment: checkpoint_save refuses, leaves the existing file
 *     byte-identical and no temporary file.
 */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/spm.h"
#include "ops/cpu/cpu.h"
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

/* A path in g_dir that lives to the end of the program (kept in a global table, so that a leak
 * checker sees it as reachable). */
static const char *saved_path(const char *name) {
    static char *saved[32];
    static int n = 0;
    if (n == 32) return path_in(name);
    saved[n] = strdup(path_in(name));
    return saved[n++];
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

/* Builds the model of ini_text(hidden) (into *cfg) over the SentencePiece model file (loaded
 * into *spm); random parameters (model_init_params) and random Adam moments. Returns 0 on
 * success. */
static int build_model(Model *m, Config *cfg, Spm **spm, int hidden, const char *spm_path) {
    Err err;
    *spm = NULL;
    if (config_load_string(cfg, ini_text(hidden), "test config", &err) ||
        config_validate(cfg, &err)) {
        EXPECT(0, "config: %s", err.msg);
        return -1;
    }
    if (spm_load(spm, spm_path, &err)) {
        EXPECT(0, "spm_load: %s", err.msg);
        return -1;
    }
    if (model_create(m, &cfg->model, spm_vocab_size(*spm), backend_cpu(), &err)) {
        EXPECT(0, "model_create: %s", err.msg);
        return -1;
    }
    model_init_params(m, cfg->seed);
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

/* Saves a with config c (a run trained elsewhere: c.device = cuda) as <what>.ckpt and loads it
 * on the CPU: it must load, on device cpu, with a's parameters bit for bit. Returns 1 when it
 * loaded, with the loaded config in *got. */
static int reloads_on_cpu(const char *what, const Model *a, const Config *c, Spm *spm,
                          const TrainState *st, Config *got) {
    char name[64];
    snprintf(name, sizeof name, "%s.ckpt", what);
    const char *path = saved_path(name);
    Err err = {0};
    EXPECT(checkpoint_save(path, a, c, spm, st, &err) == STATUS_OK, "save: %s", err.msg);
    Model m;
    Spm *mspm = NULL;
    Status rc = checkpoint_load(path, &m, got, &mspm, NULL, DEVICE_CPU, &err);
    EXPECT(rc == STATUS_OK, "a checkpoint trained with %s does not load on the cpu: %s", what,
           err.msg);
    if (rc != STATUS_OK) return 0;
    EXPECT(got->device == DEVICE_CPU, "%s: loaded on device %d", what, (int)got->device);
    float *ha = download_all(a), *hm = download_all(&m);
    EXPECT(m.ps.total == a->ps.total && !memcmp(ha, hm, sizeof(float) * a->ps.total),
           "%s: parameters differ after loading", what);
    free(ha), free(hm);
    model_free(&m);
    spm_free(mspm);
    return 1;
}

static int is_all_zero(const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i]) return 0;
    return 1;
}

static int g_refusals = 0;
/* Set around the variants whose only fault is in an Adam or EMA record's values, which
 * checkpoint_load_weights does not read: it must then accept the file. */
static int g_weights_load_ok = 0;

/* Expects checkpoint_load(path), or with weights checkpoint_load_weights(path), to fail with a
 * message naming path and containing want (unless NULL), to leave the Model all zero, the Spm
 * NULL and the TrainState unwritten. */
static void refused_by(const char *path, const char *what, const char *want, int weights) {
    Model m;
    Config cfg;
    Spm *spm = (Spm *)&cfg; /* poison: the loader must reset it */
    TrainState st, st_before;
    memset(&m, 0xA5, sizeof m); /* poison: the loader must reset it */
    memset(&st, 0x5C, sizeof st);
    st_before = st;
    Err err;
    err.msg[0] = 0;
    const char *fn = weights ? "checkpoint_load_weights" : "checkpoint_load";
    Status rc = weights ? checkpoint_load_weights(path, &m, &cfg, &spm, -1, &err)
                        : checkpoint_load(path, &m, &cfg, &spm, &st, -1, &err);
    EXPECT(rc != STATUS_OK, "%s: %s accepted a damaged file", what, fn);
    if (rc == STATUS_OK) {
        model_free(&m);
        spm_free(spm);
        return;
    }
    g_refusals++;
    EXPECT(err.msg[0] && strstr(err.msg, path), "%s: %s: the message should name %s: '%s'", what,
           fn, path, err.msg);
    EXPECT(!want || strstr(err.msg, want), "%s: %s: the message should say '%s': '%s'", what, fn,
           want, err.msg);
    EXPECT(is_all_zero(&m, sizeof m), "%s: %s: the Model is not left empty after a failed load",
           what, fn);
    EXPECT(spm == NULL, "%s: %s: the Spm is not left NULL after a failed load", what, fn);
    EXPECT(!memcmp(&st, &st_before, sizeof st), "%s: a failed load wrote the TrainState", what);
    if (!weights) printf("  %-28s -> %.200s\n", what, err.msg);
}

/* Both loaders must refuse path (refused_by), except that checkpoint_load_weights must load it
 * while g_weights_load_ok is set. */
static void expect_refused_msg(const char *path, const char *what, const char *want) {
    refused_by(path, what, want, 0);
    if (!g_weights_load_ok) {
        refused_by(path, what, want, 1);
        return;
    }
    Model m;
    Config cfg;
    Spm *spm = NULL;
    Err err;
    Status rc = checkpoint_load_weights(path, &m, &cfg, &spm, -1, &err);
    EXPECT(rc == STATUS_OK, "%s: checkpoint_load_weights should load the file (it does not read "
           "the damaged values): %s", what, err.msg);
    if (rc == STATUS_OK) model_free(&m), spm_free(spm);
}

static void expect_refused(const char *path, const char *what) {
    expect_refused_msg(path, what, NULL);
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

/* ---- well-formed files (every CRC right) that do not fit the model ---- */

static const CkptRecord *g_orig; /* the records of a good checkpoint */
static int g_norig;
static const char *g_crafted;    /* where the variants are written */

/* Writes the good records with the one called name replaced by *with (NULL: removed) and extra
 * appended (unless NULL), and expects checkpoint_load to refuse the file saying want. */
static void variant(const char *what, const char *name, const CkptRecord *with,
                    const CkptRecord *extra, const char *want) {
    CkptRecord *r = malloc(sizeof *r * (size_t)(g_norig + 1));
    int k = 0, found = 0;
    for (int i = 0; i < g_norig; i++) {
        if (name && !strcmp(g_orig[i].name, name)) {
            found = 1;
            if (with) r[k++] = *with;
        } else {
            r[k++] = g_orig[i];
        }
    }
    if (extra) r[k++] = *extra;
    EXPECT(!name || found, "%s: no record '%s' in the good file", what, name);
    if (!write_records(g_crafted, r, k)) expect_refused_msg(g_crafted, what, want);
    free(r);
}

/* A parameter-like record of the good file: the first 2-D non-square one of prefix. */
static const CkptRecord *tensor_of(const char *prefix) {
    for (int i = 0; i < g_norig; i++)
        if (!strncmp(g_orig[i].name, prefix, strlen(prefix)) && g_orig[i].ndim == 2 &&
            g_orig[i].shape[0] != g_orig[i].shape[1] && g_orig[i].nbytes >= 16)
            return &g_orig[i];
    return NULL;
}

/* r with element k of its float data set to v (data copied into buf). */
static CkptRecord with_value(const CkptRecord *r, float *buf, size_t k, float v) {
    CkptRecord c = *r;
    memcpy(buf, r->data, r->nbytes);
    buf[k] = v;
    c.data = buf;
    return c;
}

static void wrong_tensors(void) {
    const CkptRecord *p = tensor_of("param/"), *am = tensor_of("adam_m/"),
                     *av = tensor_of("adam_v/");
    if (!p || !am || !av) {
        EXPECT(0, "no 2-D non-square tensors to damage");
        return;
    }
    char want[256];
    const CkptRecord *lastr = &g_orig[g_norig - 1];
    snprintf(want, sizeof want, "tensor '%s' is missing", lastr->name);
    variant("last tensor missing", lastr->name, NULL, NULL, want);
    snprintf(want, sizeof want, "tensor '%s' is missing", p->name);
    variant("a parameter missing", p->name, NULL, NULL, want);
    CkptRecord extra = *p;
    snprintf(extra.name, CKPT_NAME_MAX, "param/extra.weight");
    variant("an extra tensor", NULL, NULL, &extra,
            "'param/extra.weight' is not part of this model");
    float *buf = malloc(p->nbytes + am->nbytes + av->nbytes);
    size_t np = p->nbytes / sizeof(float);
    CkptRecord c = with_value(p, buf, np / 2, NAN);
    snprintf(want, sizeof want, "tensor '%s' holds a non-finite value (nan) at element %zu",
             p->name, np / 2);
    variant("NaN in a parameter", p->name, &c, NULL, want);
    c = with_value(p, buf, np - 1, -INFINITY);
    variant("-Inf in a parameter", p->name, &c, NULL, "(-inf) at element");
    c = with_value(am, buf, 0, INFINITY);
    snprintf(want, sizeof want, "tensor '%s' holds a non-finite value (inf) at element 0",
             am->name);
    g_weights_load_ok = 1;
    variant("+Inf in Adam m", am->name, &c, NULL, want);
    c = with_value(av, buf, 3, NAN);
    snprintf(want, sizeof want, "tensor '%s' holds a non-finite value (nan)", av->name);
    variant("NaN in Adam v", av->name, &c, NULL, want);
    g_weights_load_ok = 0;
    free(buf);
    c = *p;
    c.dtype = CKPT_I32;
    snprintf(want, sizeof want, "tensor '%s' is i32, expected f32", p->name);
    variant("f32 tensor stored as i32", p->name, &c, NULL, want);
    c = *p;
    c.dtype = CKPT_U8;
    c.ndim = 1;
    c.shape[0] = (int64_t)p->nbytes;
    c.shape[1] = 0;
    snprintf(want, sizeof want, "tensor '%s' is u8, expected f32", p->name);
    variant("f32 tensor stored as bytes", p->name, &c, NULL, want);
    c = *p;
    c.shape[0] = p->shape[1];
    c.shape[1] = p->shape[0];
    snprintf(want, sizeof want, "tensor '%s' has shape [%lld, %lld] but the model needs "
             "[%lld, %lld]", p->name, (long long)c.shape[0], (long long)c.shape[1],
             (long long)p->shape[0], (long long)p->shape[1]);
    variant("a transposed tensor", p->name, &c, NULL, want);
    c = *p;
    c.ndim = 1;
    c.shape[0] = p->shape[0] * p->shape[1];
    c.shape[1] = 0;
    snprintf(want, sizeof want, "tensor '%s' has shape [%lld] but", p->name,
             (long long)c.shape[0]);
    variant("a flattened tensor", p->name, &c, NULL, want);
}

/* train.ema_decay's "ema/" records: all or none. The good file (none) with a copy of
 * every parameter as "ema/<name>" loads, with ps.ema equal to the parameters; one "ema/" record
 * alone, one missing from the full set, a NaN or a transposed shape in one are refused, naming
 * the tensor. */
static void wrong_ema(void) {
    int np = 0;
    for (int i = 0; i < g_norig; i++) np += !strncmp(g_orig[i].name, "param/", 6);
    CkptRecord *r = malloc(sizeof *r * (size_t)(g_norig + np));
    memcpy(r, g_orig, sizeof *r * (size_t)g_norig);
    int n = g_norig, first = -1, mat = -1;
    for (int i = 0; i < g_norig; i++) {
        if (strncmp(g_orig[i].name, "param/", 6)) continue;
        r[n] = g_orig[i];
        snprintf(r[n].name, CKPT_NAME_MAX, "ema/%s", g_orig[i].name + 6);
        if (first < 0) first = n;
        if (mat < 0 && r[n].ndim == 2 && r[n].shape[0] != r[n].shape[1]) mat = n;
        n++;
    }
    if (first < 0 || mat < 0) {
        EXPECT(0, "no parameters to copy as ema/ records");
        free(r);
        return;
    }
    /* the full set loads */
    if (!write_records(g_crafted, r, n)) {
        Model m;
        Config c;
        Spm *spm;
        Err err;
        if (checkpoint_load(g_crafted, &m, &c, &spm, NULL, -1, &err) == STATUS_OK) {
            EXPECT(m.ps.ema != NULL, "a checkpoint with every ema/ record loads without EMA");
            if (m.ps.ema)
                EXPECT(!memcmp(m.ps.ema, m.ps.data, sizeof(float) * m.ps.total),
                       "the ema/ records (copies of the parameters) load as something else");
            model_free(&m);
            spm_free(spm);
        } else {
            EXPECT(0, "a checkpoint with every ema/ record is refused: %s", err.msg);
        }
    }
    char want[256];
    /* one ema/ record alone: the first other one is missing */
    CkptRecord *one = malloc(sizeof *one * (size_t)(g_norig + 1));
    memcpy(one, g_orig, sizeof *one * (size_t)g_norig);
    one[g_norig] = r[mat];
    snprintf(want, sizeof want, "tensor '%s' is missing",
             mat == first ? r[first + 1].name : r[first].name);
    if (!write_records(g_crafted, one, g_norig + 1))
        expect_refused_msg(g_crafted, "one ema/ record alone", want);
    free(one);
    /* the full set less one */
    snprintf(want, sizeof want, "tensor '%s' is missing", r[n - 1].name);
    if (!write_records(g_crafted, r, n - 1))
        expect_refused_msg(g_crafted, "an ema/ record missing", want);
    /* a NaN, a transposed shape */
    CkptRecord keep = r[mat];
    float *buf = malloc(keep.nbytes);
    r[mat] = with_value(&keep, buf, 1, NAN);
    snprintf(want, sizeof want, "tensor '%s' holds a non-finite value (nan) at element 1",
             keep.name);
    g_weights_load_ok = 1;
    if (!write_records(g_crafted, r, n)) expect_refused_msg(g_crafted, "NaN in an EMA", want);
    g_weights_load_ok = 0;
    r[mat] = keep;
    r[mat].shape[0] = keep.shape[1], r[mat].shape[1] = keep.shape[0];
    snprintf(want, sizeof want, "tensor '%s' has shape [%lld, %lld] but the model needs",
             keep.name, (long long)keep.shape[1], (long long)keep.shape[0]);
    if (!write_records(g_crafted, r, n))
        expect_refused_msg(g_crafted, "a transposed EMA tensor", want);
    free(buf);
    free(r);
}

static CkptRecord bytes_record(const char *name, const void *data, size_t n) {
    CkptRecord r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, CKPT_NAME_MAX, "%s", name);
    r.dtype = CKPT_U8;
    r.ndim = 1;
    r.shape[0] = (int64_t)n;
    r.data = (void *)data;
    r.nbytes = n;
    return r;
}

static void wrong_records(void) {
    variant("no config record", "config", NULL, NULL, "the record 'config' is missing");
    variant("no spm record", "spm", NULL, NULL, "the record 'spm' is missing");
    variant("no train_state record", "train_state", NULL, NULL,
            "the record 'train_state' is missing");
    const CkptRecord *ts = ckpt_find(g_orig, g_norig, "train_state");
    CkptRecord c = *ts;
    c.dtype = CKPT_F32;
    c.shape[0] = (int64_t)(ts->nbytes / 4);
    variant("train_state as f32", "train_state", &c, NULL,
            "the record 'train_state' is f32, expected u64");
    c = *ts;
    c.shape[0] -= 1;
    c.nbytes -= 8;
    variant("short train_state", "train_state", &c, NULL,
            "the record 'train_state' holds 72 bytes, expected 80");
    static const char junk[] = "[model]\nhidden = sixty-four\n";
    c = bytes_record("config", junk, strlen(junk));
    variant("config that does not parse", "config", &c, NULL,
            "config stored in checkpoint:2: model.hidden = sixty-four is not a whole number");
    static const char odd[] = "[model]\nhidden = 63\n";
    c = bytes_record("config", odd, strlen(odd));
    variant("config that does not validate", "config", &c, NULL, "model.hidden = 63 is odd");
    /* a config of a model far bigger than the file: refused before it is allocated (this one
     * needs 5 * 10^11 parameters: 2 TB each for weights, gradients and moments) */
    static const char huge[] = "[model]\nhidden = 65536\nemb = 65536\nenc_layers = 8\n"
                               "dec_layers = 8\n";
    c = bytes_record("config", huge, strlen(huge));
    variant("config of a huge model", "config", &c, NULL,
            "tensor 'param/enc.emb' has shape [120, 16] but the model needs [120, 65536]");
    static const char future[] = "[model]\nhidden = 64\nwidth = 3\n";
    c = bytes_record("config", future, strlen(future));
    variant("config with an unknown key", "config", &c, NULL,
            "config stored in checkpoint:3: unknown key 'width' in [model]");
    const CkptRecord *cf = ckpt_find(g_orig, g_norig, "config");
    char *nul = malloc(cf->nbytes);
    memcpy(nul, cf->data, cf->nbytes);
    nul[cf->nbytes / 2] = 0;
    c = bytes_record("config", nul, cf->nbytes);
    variant("config with a NUL byte", "config", &c, NULL, "the stored config holds a NUL byte");
    free(nul);
    static const char notspm[] = "this is not a SentencePiece model";
    c = bytes_record("spm", notspm, strlen(notspm));
    variant("spm record of text", "spm", &c, NULL, "SentencePiece model");
    const CkptRecord *sp = ckpt_find(g_orig, g_norig, "spm");
    c = bytes_record("spm", sp->data, sp->nbytes / 2);
    variant("spm record cut in half", "spm", &c, NULL, "SentencePiece model");
    c = bytes_record("spm", "", 0);
    variant("empty spm record", "spm", &c, NULL, "SentencePiece model");
}

/* train_state with field k set to v. */
static void state_variant(const char *what, int k, uint64_t v, const char *want) {
    const CkptRecord *ts = ckpt_find(g_orig, g_norig, "train_state");
    uint64_t u[16];
    memcpy(u, ts->data, ts->nbytes);
    u[k] = v;
    CkptRecord c = *ts;
    c.data = u;
    variant(what, "train_state", &c, NULL, want);
}

static uint64_t dbits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static void wrong_train_state(void) {
    /* field order of checkpoint.c: step, epoch, batch, rng state, rng inc, adam_t, lr_scale,
     * best_score, bad_epochs, elapsed; the good file has step 123456789012, epoch 7, batch 41,
     * inc odd, adam_t 98765, lr_scale 0.125, best 23.45, bad 2, elapsed 514.3 */
    state_variant("step 2^63", 0, (uint64_t)1 << 63, "step = 9223372036854775808 is beyond");
    state_variant("epoch 0", 1, 0, "epoch = 0 is not in [1,");
    state_variant("epoch 2^40", 1, (uint64_t)1 << 40, "epoch = 1099511627776 is not in");
    state_variant("batch past the step", 2, 123456789013ull,
                  "batch_in_epoch = 123456789013 exceeds the 123456789012 steps");
    state_variant("even RNG increment", 4, 0xFEDCBA9876543210ull, "is even (PCG32 needs it odd)");
    state_variant("adam_t past the step", 5, 123456789013ull, "adam_t = 123456789013 exceeds");
    state_variant("lr_scale NaN", 6, dbits(NAN), "lr_scale = nan is not in [0, 1]");
    state_variant("lr_scale 2", 6, dbits(2.0), "lr_scale = 2 is not in [0, 1]");
    state_variant("best BLEU 150", 7, dbits(150.0), "best_score = 150 is neither");
    state_variant("best BLEU -Inf", 7, dbits(-INFINITY), "best_score = -inf is neither");
    state_variant("bad epochs = epoch", 8, 7,
                  "bad_epochs = 7 is more than the 6 validations so far");
    state_variant("elapsed -1 s", 9, dbits(-1.0), "elapsed = -1 seconds");
    state_variant("elapsed Inf", 9, dbits(INFINITY), "elapsed = inf seconds");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_dir = strdup(test_tmpdir());
    printf("test_checkpoint: working in %s\n", g_dir);
    Err err;

    /* ---- a SentencePiece model on generated text ---- */
    const char *txt = saved_path("text.txt"), *prefix = saved_path("spm");
    const char *spm_path = saved_path("spm.model");
    EXPECT(write_text(txt) == 0, "cannot write %s", txt);
    const char *files[1] = {txt};
    if (spm_train(files, 1, V, prefix, 1, &err)) {
        EXPECT(0, "spm_train: %s", err.msg);
        return test_report("test_checkpoint");
    }

    /* ---- round trip ---- */
    Model a;
    Config acfg;
    Spm *aspm;
    if (build_model(&a, &acfg, &aspm, 64, spm_path)) return test_report("test_checkpoint");
    printf("model: %zu parameters in %d tensors\n", a.ps.total, a.ps.n);
    TrainState st = {.step = 123456789012L, .epoch = 7, .batch_in_epoch = 41,
                     .epoch_rng = {0x0123456789ABCDEFull, 0xFEDCBA9876543211ull},
                     .adam_t = 98765, .lr_scale = 0.125, .best_score = 23.456789012345678,
                     .bad_epochs = 2, .elapsed = 3600.0 / 7.0};
    const char *ck = saved_path("model.ckpt");
    Status rc = checkpoint_save(ck, &a, &acfg, aspm, &st, &err);
    EXPECT(rc == STATUS_OK, "checkpoint_save: %s", err.msg);
    EXPECT(test_count_temp_files(g_dir, 0) == 0,
           "a temporary file was left after a successful save");
    size_t ck_n = 0;
    char *ck_bytes = test_read_file(ck, &ck_n);
    EXPECT(ck_bytes && ck_n > 0, "cannot read back %s", ck);
    if (!ck_bytes) return test_report("test_checkpoint");
    printf("saved %s: %zu bytes\n", ck, ck_n);

    Model b;
    Config bcfg;
    Spm *bspm;
    TrainState st2;
    memset(&st2, 0x5A, sizeof st2);
    rc = checkpoint_load(ck, &b, &bcfg, &bspm, &st2, -1, &err);
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
    EXPECT(!memcmp(&st2.lr_scale, &st.lr_scale, 8) && !memcmp(&st2.best_score, &st.best_score, 8) &&
               !memcmp(&st2.elapsed, &st.elapsed, 8),
           "TrainState doubles: %.17g %.17g %.17g", st2.lr_scale, st2.best_score, st2.elapsed);
    char diff[1024] = "";
    EXPECT(config_diff(&acfg, &bcfg, diff, sizeof diff) == 0, "configs differ: %s", diff);

    /* a run trained with model.rnn_impl = cudnn (on a GPU) loads on the CPU with our own cells,
     * and one trained at tf32 (a GPU format) at fp32: how the run computed, not what the
     * parameters are (the averaging at the end of a tf32 run loads so) */
    {
        Config ccfg = acfg, lcfg;
        ccfg.model.rnn_impl = RNN_IMPL_CUDNN;
        ccfg.device = DEVICE_CUDA;
        if (reloads_on_cpu("cudnn", &a, &ccfg, aspm, &st, &lcfg))
            EXPECT(lcfg.model.rnn_impl == RNN_IMPL_OWN, "loaded with rnn_impl %d",
                   (int)lcfg.model.rnn_impl);
        ccfg = acfg;
        ccfg.precision = PRECISION_TF32;
        ccfg.device = DEVICE_CUDA;
        if (reloads_on_cpu("tf32", &a, &ccfg, aspm, &st, &lcfg))
            EXPECT(lcfg.precision == PRECISION_FP32, "loaded at precision %d",
                   (int)lcfg.precision);
    }
    EXPECT(!strcmp(bcfg.name, "ckpt_test") && !strcmp(bcfg.save_dir, "/nonexistent/ckpt test"),
           "strings in the config: name '%s' save_dir '%s'", bcfg.name, bcfg.save_dir);
    {
        void *sa = NULL, *sb = NULL;
        size_t na = 0, nb = 0;
        EXPECT(!spm_serialize(aspm, &sa, &na, &err) && !spm_serialize(bspm, &sb, &nb, &err) &&
                   na == nb && !memcmp(sa, sb, na),
               "the SentencePiece model differs after the round trip");
        free(sa);
        free(sb);
    }
    /* load(save(x)) saved again is the same file */
    const char *ck2 = saved_path("again.ckpt");
    EXPECT(checkpoint_save(ck2, &b, &bcfg, bspm, &st2, &err) == STATUS_OK, "second save: %s",
           err.msg);
    size_t ck2_n = 0;
    char *ck2_bytes = test_read_file(ck2, &ck2_n);
    EXPECT(ck2_bytes && ck2_n == ck_n && !memcmp(ck_bytes, ck2_bytes, ck_n),
           "saving the loaded model gives a different file (%zu vs %zu bytes)", ck2_n, ck_n);
    free(ck2_bytes);
    model_free(&b);
    spm_free(bspm);
    /* for inference: the same parameters and config, without gradient, Adam or EMA buffers */
    rc = checkpoint_load_weights(ck, &b, &bcfg, &bspm, -1, &err);
    EXPECT(rc == STATUS_OK, "checkpoint_load_weights: %s", err.msg);
    if (rc == STATUS_OK) {
        EXPECT(b.ps.total == a.ps.total && b.ps.data && !b.ps.grad && !b.ps.m && !b.ps.v &&
                   !b.ps.ema,
               "checkpoint_load_weights: %zu parameters (%zu), buffers data %p grad %p m %p v %p "
               "ema %p: only data should be allocated", b.ps.total, a.ps.total,
               (void *)b.ps.data, (void *)b.ps.grad, (void *)b.ps.m, (void *)b.ps.v,
               (void *)b.ps.ema);
        if (b.ps.total == a.ps.total && b.ps.data) {
            float *ha = malloc(sizeof(float) * a.ps.total), *hb = malloc(sizeof(float) * a.ps.total);
            a.be->download(ha, a.ps.data, sizeof(float) * a.ps.total);
            b.be->download(hb, b.ps.data, sizeof(float) * b.ps.total);
            EXPECT(!memcmp(ha, hb, sizeof(float) * a.ps.total),
                   "checkpoint_load_weights loads other parameters than were saved");
            free(ha), free(hb);
        }
        int unbound = 0;
        for (int i = 0; i < b.ps.n; i++)
            unbound += b.ps.specs[i].bind->w != b.ps.data + b.ps.specs[i].offset ||
                       b.ps.specs[i].bind->g != NULL;
        EXPECT(unbound == 0, "checkpoint_load_weights: %d tensors not bound to their slice (or "
               "with a gradient)", unbound);
        EXPECT(config_diff(&acfg, &bcfg, diff, sizeof diff) == 0, "configs differ: %s", diff);
        model_free(&b);
        spm_free(bspm);
    }
    /* st may be NULL */
    rc = checkpoint_load(ck, &b, &bcfg, &bspm, NULL, -1, &err);
    EXPECT(rc == STATUS_OK, "checkpoint_load with st = NULL: %s", err.msg);
    if (rc == STATUS_OK) model_free(&b), spm_free(bspm);

    /* ---- damaged files ---- */
    const char *bad = saved_path("damaged.ckpt");
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
        const char *txtck = saved_path("text.ckpt");
        test_write_file(txtck, "[model]\nhidden = 64\n", 20);
        expect_refused(txtck, "a text file");
    }

    /* ---- well-formed containers that do not fit the model ---- */
    printf("wrong records:\n");
    Model other;
    Config ocfg;
    Spm *ospm;
    const char *oth = saved_path("other.ckpt");
    if (build_model(&other, &ocfg, &ospm, 32, spm_path) == 0) {
        EXPECT(checkpoint_save(oth, &other, &ocfg, ospm, &st, &err) == STATUS_OK, "save other: %s",
               err.msg);
        model_free(&other);
    }
    spm_free(ospm);
    CkptRecord *orig = NULL, *oth_recs = NULL;
    int n_orig = 0, n_oth = 0;
    EXPECT(ckpt_read(ck, &orig, &n_orig, &err) == STATUS_OK, "ckpt_read: %s", err.msg);
    EXPECT(ckpt_read(oth, &oth_recs, &n_oth, &err) == STATUS_OK, "ckpt_read other: %s", err.msg);
    if (orig && oth_recs) {
        g_orig = orig;
        g_norig = n_orig;
        g_crafted = saved_path("crafted.ckpt");
        int before = g_refusals;
        /* the other model's tensors under this model's config */
        {
            CkptRecord *r = malloc(sizeof *r * (size_t)n_oth);
            memcpy(r, oth_recs, sizeof *r * (size_t)n_oth);
            for (int i = 0; i < n_oth; i++)
                if (!strcmp(r[i].name, "config")) r[i] = *ckpt_find(orig, n_orig, "config");
            if (!write_records(g_crafted, r, n_oth))
                expect_refused_msg(g_crafted, "H 32 tensors, H 64 config", "but the model needs");
            free(r);
        }
        wrong_tensors();
        wrong_ema();
        wrong_records();
        wrong_train_state();
        printf("%d well-formed files that do not fit the model refused\n", g_refusals - before);
    }
    ckpt_records_free(orig, n_orig);
    ckpt_records_free(oth_recs, n_oth);

    /* a checkpoint of another model renamed into place: loads as that model; the configs differ
     * in model.hidden, which is what `train --resume` checks */
    {
        const char *renamed = saved_path("renamed.ckpt");
        size_t on = 0;
        char *ob = test_read_file(oth, &on);
        EXPECT(ob && test_write_file(renamed, ob, on) == 0, "copy %s", oth);
        free(ob);
        Model c;
        Config ccfg;
        Spm *cspm;
        rc = checkpoint_load(renamed, &c, &ccfg, &cspm, NULL, -1, &err);
        EXPECT(rc == STATUS_OK, "the other model's checkpoint should load: %s", err.msg);
        if (rc == STATUS_OK) {
            diff[0] = 0;
            int nd = config_diff(&acfg, &ccfg, diff, sizeof diff);
            printf("other model's checkpoint renamed: loads as hidden = %d; config_diff: %s\n",
                   ccfg.model.hidden, diff);
            EXPECT(ccfg.model.hidden == 32 && nd == 1 && strstr(diff, "model.hidden"),
                   "config_diff should report exactly model.hidden (%d: %s)", nd, diff);
            model_free(&c);
            spm_free(cspm);
        }
    }

    /* ---- checkpoint averaging: the element-wise mean, weights only, the state of the last ---- */
    printf("averaging:\n");
    {
        Model m2;
        Config cfg2;
        Spm *spm2;
        const char *ckb = saved_path("second.ckpt"), *avg = saved_path("avg.ckpt");
        if (build_model(&m2, &cfg2, &spm2, 64, spm_path) == 0) {
            size_t n = m2.ps.total;
            float *w = malloc(sizeof(float) * n);
            m2.be->download(w, m2.ps.data, sizeof(float) * n);
            for (int t = 0; t < m2.ps.n; t++) { /* other values, inside the tensors only */
                const ParamSpec *sp = &m2.ps.specs[t];
                for (size_t i = sp->offset; i < sp->offset + sp->size; i++)
                    w[i] += (next_float() - 0.5f) * 0.3f;
            }
            m2.be->upload(m2.ps.data, w, sizeof(float) * n);
            free(w);
            TrainState st_b = st;
            st_b.step = 4242, st_b.adam_t = 4242;
            EXPECT(checkpoint_save(ckb, &m2, &cfg2, spm2, &st_b, &err) == STATUS_OK, "save: %s",
                   err.msg);
            const char *two[2] = {ck, ckb};
            rc = checkpoint_average(two, 2, avg, &err);
            EXPECT(rc == STATUS_OK, "checkpoint_average: %s", err.msg);
            Model c;
            Config ccfg;
            Spm *cspm;
            TrainState cst;
            if (rc == STATUS_OK &&
                checkpoint_load(avg, &c, &ccfg, &cspm, &cst, -1, &err) == STATUS_OK) {
                float *ha = download_all(&a), *hb = download_all(&m2), *hc = download_all(&c);
                size_t bad_w = 0, bad_mv = 0;
                double dmax = 0.0;
                for (size_t i = 0; i < n; i++) {
                    float want = (float)(((double)ha[i] + (double)hb[i]) / 2.0);
                    bad_w += memcmp(&hc[i], &want, sizeof want) != 0;
                    double d = fabs((double)ha[i] - (double)hb[i]);
                    if (d > dmax) dmax = d;
                    bad_mv += hc[n + i] != 0.0f || hc[2 * n + i] != 0.0f;
                }
                printf("  mean of 2 checkpoints (parameters up to %.3g apart): %zu of %zu "
                       "values differ from (a + b) / 2; %zu Adam values are not 0 (weights "
                       "only)\n",
                       dmax, bad_w, n, bad_mv);
                EXPECT(dmax > 0.01, "the two checkpoints should differ (max %.3g)", dmax);
                EXPECT(bad_w == 0, "%zu averaged parameters differ from the element-wise mean",
                       bad_w);
                EXPECT(bad_mv == 0 && cst.weights_only == 1, "the average should be weights only "
                       "(%zu Adam moments loaded non-zero, weights_only %d)", bad_mv,
                       cst.weights_only);
                EXPECT(cst.step == 4242 && cst.adam_t == 4242,
                       "training state should be the last checkpoint's (step %ld)", cst.step);
                free(ha), free(hb), free(hc);
                model_free(&c);
                spm_free(cspm);
            } else if (rc == STATUS_OK) {
                EXPECT(0, "the average does not load: %s", err.msg);
            }
            /* checkpoints of two different models are refused, naming both files */
            const char *mixed[2] = {oth, ck};
            rc = checkpoint_average(mixed, 2, saved_path("mixed.ckpt"), &err);
            printf("  H 32 with H 64 -> %s\n", rc ? err.msg : "accepted");
            EXPECT(rc != STATUS_OK && strstr(err.msg, "one model") && strstr(err.msg, "other.ckpt"),
                   "averaging different models: %s", rc ? err.msg : "accepted");
            model_free(&m2);
        }
        spm_free(spm2);
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
            rc = checkpoint_save(ck, &a, &acfg, aspm, &st, &err);
            printf("  %-16s -> %s\n", cases[c].what, err.msg);
            EXPECT(rc != STATUS_OK, "%s: checkpoint_save accepted it", cases[c].what);
            if (rc == STATUS_OK) { /* what a resume would then meet */
                Model x;
                Config xcfg;
                Spm *xspm;
                Err e2;
                if (checkpoint_load(ck, &x, &xcfg, &xspm, NULL, -1, &e2) == STATUS_OK)
                    model_free(&x), spm_free(xspm);
                else printf("  (the file it wrote cannot be loaded back: %s)\n", e2.msg);
            }
            EXPECT(err.msg[0] && strstr(err.msg, ck), "%s: the message should name %s: '%s'",
                   cases[c].what, ck, err.msg);
            size_t nn = 0;
            char *now = test_read_file(ck, &nn);
            EXPECT(now && nn == ck_n && !memcmp(now, ck_bytes, ck_n),
                   "%s: the refused save changed %s", cases[c].what, ck);
            free(now);
            EXPECT(test_count_temp_files(g_dir, 0) == 0, "%s: a temporary file was left",
                   cases[c].what);
            const char *fresh = path_in("fresh.ckpt");
            EXPECT(checkpoint_save(fresh, &a, &acfg, aspm, &st, &err) != STATUS_OK &&
                       access(fresh, F_OK) != 0,
                   "%s: a refused save created %s", cases[c].what, fresh);
            /* restore */
            size_t off = cases[c].buf == a.ps.data ? 0 : cases[c].buf == a.ps.m ? n : 2 * n;
            a.be->upload(cases[c].buf + cases[c].at, h + off + cases[c].at, sizeof(float));
        }
        free(h);
        EXPECT(checkpoint_save(ck, &a, &acfg, aspm, &st, &err) == STATUS_OK,
               "save after restoring: %s", err.msg);
        size_t nn = 0;
        char *now = test_read_file(ck, &nn);
        EXPECT(now && nn == ck_n && !memcmp(now, ck_bytes, ck_n),
               "the restored model saves to a different file");
        free(now);
    }
    printf("%d damaged or mismatched files refused\n", g_refusals);
    model_free(&a);
    spm_free(aspm);
    free(ck_bytes);
    return test_report("test_checkpoint");
}
