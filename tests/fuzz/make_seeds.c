/* make_seeds.c — writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) with
 * the project's own code, from a few hundred lines of Multi30k. Built as fuzz_make_seeds by the
 * normal build (not a test); run by hand from the repository root when a format changes:
 *
 *     build/fuzz_make_seeds [OUT_DIR]        (default tests/fuzz/corpus; needs data/multi30k)
 *
 * It writes: config/ (the defaults as INI, tests/fixtures/tiny.ini, --set lines), spm/tiny.model
 * (a unigram model of 100 pieces trained by spm_train on 300 German + 300 English lines) and
 * spm/tiny_identity.model (the same without its 240 KB NFKC character map, which the other
 * seeds use so that they stay small),
 * spm_encode/ (sentences), corpus/ (plain, CRLF + BOM, gzip), encoded/tiny.cache (encoded_build
 * of 40 pairs), ckpt/ (checkpoint_save of a tiny RNN and a tiny Transformer; a container of
 * every dtype) and checkpoint/tiny.bin, tiny_transformer.bin (those checkpoints in
 * fuzz_checkpoint's record list format).
 * Exit code 0 on success; any failure prints its reason and exits 1. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/corpus.h"
#include "data/encoded.h"
#include "data/spm.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "train/checkpoint.h"
#include "train/ckptfile.h"
#include "train/config.h"

#define N_SPM_LINES 300
#define N_PAIRS 40
#define VOCAB 100

static const char *g_out;

static void die(const char *what, const char *msg) {
    fprintf(stderr, "make_seeds: %s: %s\n", what, msg);
    exit(1);
}

static const char *out_path(const char *sub, const char *name) {
    static char buf[4][4096];
    static int k;
    char *b = buf[k++ & 3];
    snprintf(b, sizeof buf[0], "%s/%s", g_out, sub);
    if (mkdir(b, 0755) != 0 && errno != EEXIST) die(b, strerror(errno));
    snprintf(b, sizeof buf[0], "%s/%s/%s", g_out, sub, name);
    return b;
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) die(path, strerror(errno));
    printf("wrote %s (%zu bytes)\n", path, n);
}

static void write_text(const char *path, const char *s) { write_bytes(path, s, strlen(s)); }

/* n lines of a Multi30k file, joined with '\n' (each line kept short). */
static char *join_lines(char **lines, long n, const char *eol) {
    size_t cap = 1, at = 0;
    for (long i = 0; i < n; i++) cap += strlen(lines[i]) + strlen(eol);
    char *s = xmalloc(cap);
    for (long i = 0; i < n; i++) at += (size_t)sprintf(s + at, "%s%s", lines[i], eol);
    s[at] = 0;
    return s;
}

static void seeds_config(void) {
    Config c;
    config_defaults(&c);
    char *ini = config_to_ini(&c);
    write_text(out_path("config", "defaults.ini"), ini);
    free(ini);
    size_t n = 0;
    FILE *f = fopen("tests/fixtures/tiny.ini", "rb");
    if (!f) die("tests/fixtures/tiny.ini", strerror(errno));
    char buf[8192];
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes(out_path("config", "tiny.ini"), buf, n);
    write_text(out_path("config", "set_lines.txt"),
               "train.lr=5e-4\nmodel.cell=gru\ndata.train_src=\"a b.gz\"\nrun.name=x\n"
               "train.seed=18446744073709551615\nmodel.input_feeding=off\n"
               "train.max_steps=1000000000000000\n");
}

/* ---- protobuf wire format, just enough to drop the normaliser's character map ---- */

static size_t get_varint(const uint8_t *p, size_t n, size_t at, uint64_t *v) {
    *v = 0;
    for (int shift = 0; at < n && shift < 64; shift += 7) {
        uint8_t b = p[at++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return at;
    }
    die("protobuf", "bad varint");
    return 0;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* A copy of a serialized ModelProto whose NormalizerSpec (field 3) is replaced by
 * {name: "identity", add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces as they were}
 * without the ~240 KB precompiled_charsmap (field 2), so that the fuzz seeds stay small. */
static uint8_t *strip_charsmap(const uint8_t *p, size_t n, size_t *out_n) {
    uint8_t *out = xmalloc(n + 64);
    size_t at = 0, o = 0;
    while (at < n) {
        size_t start = at;
        uint64_t key, len = 0, v;
        at = get_varint(p, n, at, &key);
        int wt = (int)(key & 7);
        if (wt == 0) at = get_varint(p, n, at, &v);
        else if (wt == 2) at = get_varint(p, n, at, &len), at += len;
        else if (wt == 1) at += 8;
        else if (wt == 5) at += 4;
        else die("protobuf", "unexpected wire type");
        if (at > n) die("protobuf", "truncated");
        if (key != ((3u << 3) | 2)) {
            memcpy(out + o, p + start, at - start);
            o += at - start;
            continue;
        }
        /* the NormalizerSpec: keep its varint fields, drop name and charsmap */
        const uint8_t *q = p + at - len;
        uint8_t spec[64];
        size_t so = 0, qa = 0;
        static const char name[] = "identity";
        spec[so++] = (1u << 3) | 2;
        spec[so++] = (uint8_t)(sizeof name - 1);
        memcpy(spec + so, name, sizeof name - 1);
        so += sizeof name - 1;
        while (qa < len) {
            size_t qs = qa;
            uint64_t k2, l2 = 0, v2;
            qa = get_varint(q, len, qa, &k2);
            if ((k2 & 7) == 0) qa = get_varint(q, len, qa, &v2);
            else if ((k2 & 7) == 2) qa = get_varint(q, len, qa, &l2), qa += l2;
            else die("protobuf", "unexpected wire type in NormalizerSpec");
            if ((k2 & 7) == 0 && qa - qs <= 8 && so + (qa - qs) <= sizeof spec) {
                memcpy(spec + so, q + qs, qa - qs);
                so += qa - qs;
            }
        }
        out[o++] = (uint8_t)key;
        o += put_varint(out + o, so);
        memcpy(out + o, spec, so);
        o += so;
    }
    *out_n = o;
    return out;
}

/* Trains spm/tiny.model; returns the loaded model. */
static Spm *seeds_spm(char **de, char **en) {
    const char *txt = out_path("spm", ".train.txt");
    FILE *f = fopen(txt, "wb");
    if (!f) die(txt, strerror(errno));
    for (int i = 0; i < N_SPM_LINES; i++) fprintf(f, "%s\n%s\n", de[i], en[i]);
    fclose(f);
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/spm/tiny", g_out);
    Err err;
    const char *files[1] = {txt};
    if (spm_train(files, 1, VOCAB, prefix, 1, &err) != STATUS_OK) die("spm_train", err.msg);
    unlink(txt);
    char vocab[4200];
    snprintf(vocab, sizeof vocab, "%s.vocab", prefix);
    unlink(vocab);
    Spm *s = NULL;
    if (spm_load(&s, out_path("spm", "tiny.model"), &err) != STATUS_OK) die("spm_load", err.msg);
    printf("wrote %s (%d pieces)\n", out_path("spm", "tiny.model"), spm_vocab_size(s));
    void *bytes = NULL;
    size_t nb = 0, ns = 0;
    if (spm_serialize(s, &bytes, &nb, &err) != STATUS_OK) die("spm_serialize", err.msg);
    uint8_t *small = strip_charsmap(bytes, nb, &ns);
    Spm *t = NULL;
    if (spm_load_from_bytes(&t, small, ns, &err) != STATUS_OK) die("stripped model", err.msg);
    write_bytes(out_path("spm", "tiny_identity.model"), small, ns);
    free(small);
    free(bytes);
    spm_free(s);
    return t;
}

static void seeds_text(char **de, char **en) {
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "de%d.txt", i);
        write_text(out_path("spm_encode", name), de[i]);
        snprintf(name, sizeof name, "en%d.txt", i);
        write_text(out_path("spm_encode", name), en[i]);
    }
    write_text(out_path("spm_encode", "mixed.txt"),
               "  Größe —  “café” ½\t😀 \xff\xfe");

    char *plain = join_lines(de, 20, "\n");
    write_text(out_path("corpus", "plain.de.txt"), plain);
    char *crlf = join_lines(en, 20, "\r\n");
    size_t n = strlen(crlf);
    char *bom = xmalloc(n + 4);
    memcpy(bom, "\xEF\xBB\xBF", 3);
    memcpy(bom + 3, crlf, n + 1);
    write_bytes(out_path("corpus", "crlf_bom.en.txt"), bom, n + 3);
    write_text(out_path("corpus", "mixed.txt"),
               "ok line\n\n   \t\nbad \xc3\x28 utf8\nlast line without newline");
    const char *gz = out_path("corpus", "plain.en.gz");
    gzFile g = gzopen(gz, "wb9");
    if (!g) die(gz, "gzopen");
    char *en_text = join_lines(en, 20, "\n");
    gzwrite(g, en_text, (unsigned)strlen(en_text));
    if (gzclose(g) != Z_OK) die(gz, "gzclose");
    printf("wrote %s\n", gz);
    free(plain);
    free(crlf);
    free(bom);
    free(en_text);
}

static void seeds_encoded(char **de, char **en, const Spm *s) {
    const char *path = out_path("encoded", "tiny.cache");
    unlink(path);
    Encoded e;
    Err err;
    if (encoded_build(&e, (const char *const *)de, (const char *const *)en, N_PAIRS, s, path,
                      &err) != STATUS_OK)
        die("encoded_build", err.msg);
    printf("wrote %s\n", path);
    encoded_free(&e);
}

/* Appends one record in fuzz_checkpoint's format. */
static size_t pack_record(uint8_t *out, const CkptRecord *r) {
    size_t at = 0, len = strlen(r->name);
    out[at++] = (uint8_t)len;
    memcpy(out + at, r->name, len);
    at += len;
    out[at++] = (uint8_t)r->dtype;
    out[at++] = (uint8_t)r->ndim;
    for (int d = 0; d < r->ndim; d++)
        for (int k = 0; k < 4; k++) out[at++] = (uint8_t)((uint64_t)r->shape[d] >> (8 * k));
    memcpy(out + at, r->data, r->nbytes);
    return at + r->nbytes;
}

/* A checkpoint of the tiny model that sets[0..nsets) configure, as ckpt/<name>.ckpt and, in
 * fuzz_checkpoint's record list format, checkpoint/<name>.bin. Takes s (and frees it). */
static void tiny_checkpoint(Spm *s, const char *name, const char *const *sets, int nsets) {
    Config cfg;
    Err err;
    config_defaults(&cfg);
    for (int i = 0; i < nsets; i++)
        if (config_set(&cfg, sets[i], &err) != STATUS_OK) die("config_set", err.msg);
    if (config_validate(&cfg, &err) != STATUS_OK) die("config_validate", err.msg);
    Model m;
    if (model_create(&m, &cfg.model, spm_vocab_size(s), backend_cpu(), &err) != STATUS_OK)
        die("model_create", err.msg);
    model_init_params(&m, cfg.seed);
    TrainState st = {.step = 3, .epoch = 1, .batch_in_epoch = 3, .adam_t = 3, .lr_scale = 1.0,
                     .best_score = -1.0, .bad_epochs = 0, .elapsed = 1.5};
    rng_seed(&st.epoch_rng, cfg.seed, 0x5eed);
    char file[64];
    snprintf(file, sizeof file, "%s.ckpt", name);
    const char *ck = out_path("ckpt", file);
    if (checkpoint_save(ck, &m, &cfg, s, &st, &err) != STATUS_OK) die("checkpoint_save", err.msg);
    printf("wrote %s (%zu parameters)\n", ck, m.ps.total);
    model_free(&m);
    spm_free(s);

    CkptRecord *recs = NULL;
    int n = 0;
    if (ckpt_read(ck, &recs, &n, &err) != STATUS_OK) die("ckpt_read", err.msg);
    size_t cap = 1024;
    for (int i = 0; i < n; i++) cap += 128 + recs[i].nbytes;
    uint8_t *packed = xmalloc(cap);
    size_t at = 0;
    for (int i = 0; i < n; i++) at += pack_record(packed + at, &recs[i]);
    snprintf(file, sizeof file, "%s.bin", name);
    write_bytes(out_path("checkpoint", file), packed, at);
    free(packed);
    ckpt_records_free(recs, n);
}

static void seeds_checkpoint(Spm *s) {
    static const char *const rnn[] = {"model.emb=4", "model.hidden=4", "data.vocab_size=100",
                                      "run.name=tiny"};
    Err err;
    void *bytes = NULL;
    size_t nbytes = 0;
    Spm *copy = NULL; /* each model takes its own */
    if (spm_serialize(s, &bytes, &nbytes, &err) != STATUS_OK ||
        spm_load_from_bytes(&copy, bytes, nbytes, &err) != STATUS_OK)
        die("spm copy", err.msg);
    free(bytes);
    tiny_checkpoint(s, "tiny", rnn, 4);
    /* a Transformer with a different kind in each attention slot */
    static const char *const tf[] = {"model.type=transformer", "model.d_model=8", "model.heads=2",
                                     "model.d_ff=8", "model.enc_layers=1", "model.dec_layers=1",
                                     "model.self_attention=linear",
                                     "model.dec_self_attention=flash",
                                     "model.cross_attention=luong_general",
                                     "data.vocab_size=100", "run.name=tiny_tf"};
    tiny_checkpoint(copy, "tiny_transformer", tf, (int)(sizeof tf / sizeof tf[0]));

    /* a container with every dtype, a scalar and an empty tensor */
    float f[6] = {1, -2, 3.5f, 0, 1e-3f, 7};
    int32_t i32[3] = {-1, 0, 1};
    uint8_t u8[5] = {'h', 'e', 'l', 'l', 'o'};
    uint64_t u64[2] = {1, UINT64_MAX};
    CkptRecord r[5] = {
        {.name = "f32/matrix", .dtype = CKPT_F32, .ndim = 2, .shape = {2, 3}, .data = f,
         .nbytes = sizeof f},
        {.name = "i32", .dtype = CKPT_I32, .ndim = 1, .shape = {3}, .data = i32,
         .nbytes = sizeof i32},
        {.name = "blob", .dtype = CKPT_U8, .ndim = 1, .shape = {5}, .data = u8, .nbytes = 5},
        {.name = "scalar", .dtype = CKPT_U64, .ndim = 0, .data = u64, .nbytes = 8},
        {.name = "empty", .dtype = CKPT_F32, .ndim = 3, .shape = {2, 0, 4}, .data = NULL,
         .nbytes = 0},
    };
    (void)u64[1];
    const char *rp = out_path("ckpt", "records.ckpt");
    if (ckpt_write_atomic(rp, r, 5, 6, &err) != STATUS_OK) die("ckpt_write_atomic", err.msg);
    printf("wrote %s\n", rp);
}

int main(int argc, char **argv) {
    g_out = argc > 1 ? argv[1] : "tests/fuzz/corpus";
    if (mkdir(g_out, 0755) != 0 && errno != EEXIST) die(g_out, strerror(errno));
    char **de = NULL, **en = NULL;
    long nde = 0, nen = 0;
    Err err;
    if (corpus_read_lines("data/multi30k/train.de.gz", 1000, &de, &nde, NULL, &err) ||
        corpus_read_lines("data/multi30k/train.en.gz", 1000, &en, &nen, NULL, &err))
        die("reading Multi30k (run data/get_multi30k.sh)", err.msg);
    if (nde < N_SPM_LINES || nen < N_SPM_LINES) die("Multi30k", "too few lines");
    seeds_config();
    Spm *s = seeds_spm(de, en);
    seeds_text(de, en);
    seeds_encoded(de, en, s);
    seeds_checkpoint(s); /* takes s */
    corpus_free_lines(de, nde);
    corpus_free_lines(en, nen);
    return 0;
}
