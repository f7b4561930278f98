/* config.c — strict INI parser driven by one table of keys (see config.h for the grammar). */
#include "train/config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/corpus.h"
#include "ops/cuda/cuda.h"

const char *const model_type_names[2] = {"rnn", "transformer"};
const char *const cell_type_names[2] = {"lstm", "gru"};
const char *const device_type_names[2] = {"cpu", "cuda"};
const char *const norm_place_names[2] = {"pre", "post"};
const char *const lr_schedule_names[2] = {"plateau", "inverse_sqrt"};
const char *const early_stop_metric_names[3] = {"bleu", "chrf", "ppl"};
const char *const precision_names[3] = {"fp32", "tf32", "bf16"};
const char *const rnn_impl_names[2] = {"own", "cudnn"};
_Static_assert((int)PRECISION_FP32 == (int)BACKEND_PRECISION_FP32 &&
                   (int)PRECISION_TF32 == (int)BACKEND_PRECISION_TF32 &&
                   (int)PRECISION_BF16 == (int)BACKEND_PRECISION_BF16,
               "Precision and ops.h's BACKEND_PRECISION_* must agree");
_Static_assert((int)DEVICE_CPU == (int)BACKEND_DEVICE_CPU &&
                   (int)DEVICE_CUDA == (int)BACKEND_DEVICE_CUDA,
               "DeviceType and ops.h's BACKEND_DEVICE_* must agree");
const char *const dec_self_attention_names[ATTN_KIND_COUNT] = {
    "same", ATTENTION_KINDS(ATTENTION_KIND_NAME)};
static_assert(sizeof dec_self_attention_names / sizeof dec_self_attention_names[0] ==
                  ATTN_KIND_COUNT, "dec_self_attention_names must name every AttentionKind");

static_assert(sizeof(ModelType) == sizeof(int) && sizeof(CellType) == sizeof(int) &&
                  sizeof(DeviceType) == sizeof(int) && sizeof(AttentionKind) == sizeof(int) &&
                  sizeof(NormPlace) == sizeof(int) && sizeof(LrSchedule) == sizeof(int) &&
                  sizeof(EarlyStopMetric) == sizeof(int) &&
                  sizeof(RnnImpl) == sizeof(int) && sizeof(LinformerShare) == sizeof(int) &&
                  sizeof(LocalMode) == sizeof(int) && sizeof(LocalScore) == sizeof(int),
              "enum fields are written through int *");
static_assert(sizeof(long) == 8, "train.max_steps (long) is declared with a range up to 1e15");

/* ---------------------------------------------------------------------------------------------
 * The table: every key, once.
 * ------------------------------------------------------------------------------------------- */
typedef enum { T_INT, T_LONG, T_U64, T_FLOAT, T_BOOL, T_ENUM, T_STR } KeyType;
/* Who reads a key: every model (R_ALL), one model type, or the models whose attention needs it.
 * A key that the config's model does not read may keep its default but not be given
 * (config_validate), and config_to_ini leaves it out. */
typedef enum {
    R_ALL,       /* every model, and the training */
    R_RNN,       /* model.type = rnn */
    R_TF,        /* model.type = transformer */
    R_HEADS,     /* a Transformer, or an RNN whose attention is multi-head (attention.h) */
    R_LINFORMER, /* a model with a linformer attention */
    R_LOCAL,     /* a model with a luong_local attention */
} KeyReader;
static const char *const type_names[] = {"int", "int", "uint64", "float", "bool", "enum", "string"};

typedef struct {
    const char *section, *key;
    KeyType type;
    size_t off, size;            /* field offset and size in Config */
    const char *def;             /* default, as it would be written in a file */
    double lo, hi;               /* numeric range (T_INT, T_LONG, T_FLOAT) */
    bool lo_open, hi_open;       /* exclusive bounds (T_FLOAT) */
    const char *const *names;    /* T_ENUM: valid names, indexed by the enum value */
    int n_names;
    const char *help;
    KeyReader reads;             /* which models read the key (key_read) */
    const char *instead;         /* for a key one model type does not read: what that type
                                    takes instead (the message of config_validate), or NULL */
} KeyDef;

#define FIELD(f) offsetof(Config, f), sizeof(((Config *)0)->f)
#define NAMES(a) a, (int)(sizeof a / sizeof a[0])
/* The last two arguments of K_INT, K_FLT, K_BOOL and K_ENUM (the "..."): who reads the key
 * (KeyReader), and what the model type that does not read it takes instead (NULL: nothing);
 * ALL for the keys every model reads. */
#define K_INT(s, k, f, d, lo, hi, h, ...) \
    {s, k, T_INT, FIELD(f), d, lo, hi, 0, 0, NULL, 0, h, __VA_ARGS__}
#define K_LONG(s, k, f, d, lo, hi, h) \
    {s, k, T_LONG, FIELD(f), d, lo, hi, 0, 0, NULL, 0, h, R_ALL, NULL}
#define K_U64(s, k, f, d, h) {s, k, T_U64, FIELD(f), d, 0, 0, 0, 0, NULL, 0, h, R_ALL, NULL}
#define K_FLT(s, k, f, d, lo, lo_open, hi, hi_open, h, ...) \
    {s, k, T_FLOAT, FIELD(f), d, lo, hi, lo_open, hi_open, NULL, 0, h, __VA_ARGS__}
#define K_BOOL(s, k, f, d, h, ...) \
    {s, k, T_BOOL, FIELD(f), d, 0, 0, 0, 0, NULL, 0, h, __VA_ARGS__}
#define K_ENUM(s, k, f, d, names, h, ...) \
    {s, k, T_ENUM, FIELD(f), d, 0, 0, 0, 0, NAMES(names), h, __VA_ARGS__}
#define K_STR(s, k, f, d, h) {s, k, T_STR, FIELD(f), d, 0, 0, 0, 0, NULL, 0, h, R_ALL, NULL}
#define ALL R_ALL, NULL

static const KeyDef keys[] = {
    K_STR("run", "name", name, "default",
          "run name; config_load sets it from the file name unless given; names "
          "checkpoints/<name>"),

    K_ENUM("model", "type", model.type, "rnn", model_type_names, "model family", ALL),
    K_ENUM("model", "cell", model.cell, "lstm", cell_type_names, "recurrent cell", R_RNN, NULL),
    K_ENUM("model", "attention", model.attention, "luong_general", attention_kind_names,
           "the RNN decoder's attention over the encoder states", R_RNN,
           "model.self_attention, model.dec_self_attention and model.cross_attention"),
    K_INT("model", "emb", model.emb, "256", 1, 65536, "embedding size E", R_RNN,
          "model.d_model"),
    K_INT("model", "hidden", model.hidden, "512", 2, 65536,
          "decoder hidden size H; the bidirectional encoder uses H/2 per direction (even)", R_RNN,
          "model.d_model and model.d_ff"),
    K_INT("model", "enc_layers", model.enc_layers, "1", 1, 16, "encoder layers", ALL),
    K_INT("model", "dec_layers", model.dec_layers, "1", 1, 16, "decoder layers", ALL),
    K_FLT("model", "dropout", model.dropout, "0.3", 0, 0, 1, 1, "dropout probability", ALL),
    K_BOOL("model", "input_feeding", model.input_feeding, "true",
           "feed the attentional state to the next decoder step (Luong 2015 §3.3)", R_RNN, NULL),
    K_ENUM("model", "rnn_impl", model.rnn_impl, "own", rnn_impl_names,
           "who runs the RNN's LSTM/GRU layers: own (our kernels) or cudnn (cuDNN, train.device "
           "= cuda only; needs a GPU, not run in CI). cudnn runs every encoder layer, and the "
           "decoder layers only without input feeding and without bahdanau (whose layer 0 reads "
           "c_t); other decoder layers, and decoding, keep own", R_RNN, NULL),
    K_INT("model", "d_model", model.d_model, "256", 2, 65536, "Transformer width D", R_TF,
          "model.emb and model.hidden"),
    K_INT("model", "heads", model.heads, "4", 1, 256,
          "attention heads (divide d_model; RNN: divide hidden, for the multi-head kinds)",
          R_HEADS, NULL),
    K_INT("model", "d_ff", model.d_ff, "1024", 1, 1048576, "Transformer feed-forward width",
          R_TF, "model.hidden"),
    K_ENUM("model", "norm", model.norm, "pre", norm_place_names,
           "Transformer layer norm before (pre) or after (post, Vaswani et al. 2017) each "
           "sub-layer's residual", R_TF, NULL),
    K_BOOL("model", "tie_embeddings", model.tie_embeddings, "true",
           "Transformer: one matrix for source and target embeddings and the output layer", R_TF,
           NULL),
    K_ENUM("model", "self_attention", model.self_attention, "sdp", attention_kind_names,
           "Transformer encoder self-attention (and the decoder's unless dec_self_attention)",
           R_TF, "model.attention"),
    K_ENUM("model", "dec_self_attention", model.dec_self_attention, "same",
           dec_self_attention_names,
           "Transformer decoder (causal) self-attention; same = self_attention", R_TF,
           "model.attention"),
    K_ENUM("model", "cross_attention", model.cross_attention, "sdp", attention_kind_names,
           "Transformer encoder-decoder attention", R_TF, "model.attention"),
    K_INT("model", "linformer_k", model.attn_opt.linformer_k, "32", 1, 4096,
          "linformer: projected length r of keys and values (E, F are r x n; Wang et al. 2020)",
          R_LINFORMER, NULL),
    K_INT("model", "linformer_max_len", model.attn_opt.linformer_max_len, "128", 1, 100000,
          "linformer: n, the longest source (subword tokens) its projections span; longer "
          "sources are refused (>= data.max_len)", R_LINFORMER, NULL),
    K_ENUM("model", "linformer_share", model.attn_opt.linformer_share, "none",
           linformer_share_names,
           "linformer: none (E, F per head), headwise (one E, F per layer), kv (one E = F per "
           "layer); layerwise is not supported (Wang et al. 2020 §4)", R_LINFORMER, NULL),
    K_INT("model", "local_window", model.attn_opt.local_window, "10", 1, 1000,
          "luong_local: half-width D of the window [p_t - D, p_t + D] (Luong et al. 2015 §3.2; "
          "the paper's 10); sigma = D/2 for predictive", R_LOCAL, NULL),
    K_ENUM("model", "local_mode", model.attn_opt.local_mode, "predictive", local_mode_names,
           "luong_local: monotonic (local-m, p_t = t) or predictive (local-p, p_t = S "
           "sigmoid(v_p' tanh(W_p h_t)) with a Gaussian around p_t)", R_LOCAL, NULL),
    K_ENUM("model", "local_score", model.attn_opt.local_score, "general", local_score_names,
           "luong_local's score (Luong et al. 2015 eq. 8): dot, general or concat", R_LOCAL, NULL),

    K_STR("data", "train_src", train_src, "data/multi30k/train.de.gz", "training source text"),
    K_STR("data", "train_tgt", train_tgt, "data/multi30k/train.en.gz", "training target text"),
    K_STR("data", "val_src", val_src, "data/multi30k/val.de.gz", "validation source text"),
    K_STR("data", "val_tgt", val_tgt, "data/multi30k/val.en.gz", "validation target text"),
    K_STR("data", "test_src", test_src, "data/multi30k/test_2016_flickr.de.gz",
          "test source text (empty with test_tgt: no test set)"),
    K_STR("data", "test_tgt", test_tgt, "data/multi30k/test_2016_flickr.en.gz",
          "test target text"),
    K_INT("data", "vocab_size", vocab_size, "8000", 100, 1000000,
          "joint SentencePiece vocabulary size (with data.spm_model: must be that model's)",
          ALL),
    K_STR("data", "spm_model", spm_model, "",
          "a SentencePiece model file to use instead of training one on the training text (the "
          "run keeps a copy); empty = train one"),
    K_INT("data", "max_len", max_len, "100", 1, 100000,
          "max subword tokens per side of a training pair; longer pairs are skipped", ALL),
    K_INT("data", "concat", concat, "1", 1, 4096,
          "join this many consecutive sentence pairs (in file order) into one example, with "
          "the piece " CORPUS_SEP " between sentences on both sides, in training, validation and "
          "trainer eval (document-level examples; data.max_len then holds for each sentence)",
          ALL),
    K_INT("data", "max_line_bytes", max_line_bytes, "1000", 1, 1 << 20,
          "pairs with a raw line longer than this are skipped (training, validation and "
          "archived test sets); trainer eval refuses a longer source line (or cuts it: "
          "--crop-long)", ALL),
    K_STR("data", "cache_dir", cache_dir, "data/cache", "folder for tokenized data and models"),

    K_ENUM("train", "device", device, "cpu", device_type_names, "compute backend", ALL),
    K_ENUM("train", "precision", precision, "fp32", precision_names,
           "matmul input rounding: cuda fp32|tf32|bf16; cpu fp32|bf16 (AVX512_BF16, oneDNN)", ALL),
    K_U64("train", "seed", seed, "1", "seed of the one PRNG (init, shuffling, dropout)"),
    K_INT("train", "max_epochs", max_epochs, "30", 1, 1000000, "epochs to train at most", ALL),
    K_LONG("train", "max_steps", max_steps, "0", 0, 1e15, "optimizer steps at most; 0 = no limit"),
    K_FLT("train", "max_hours", max_hours, "0", 0, 0, 1e6, 0,
          "training time budget in hours (validation included); a run that reaches it "
          "validates its last weights before it ends (best.ckpt if better); 0 = no limit", ALL),
    K_INT("train", "batch_tokens", batch_tokens, "4096", 2, 100000000,
          "source+target tokens per batch (>= 2 * data.max_len)", ALL),
    K_FLT("train", "lr", lr, "1e-3", 0, 1, 10, 0, "peak learning rate (Adam)", ALL),
    K_ENUM("train", "lr_schedule", lr_schedule, "plateau", lr_schedule_names,
           "plateau: warm-up, constant, x lr_decay after a validation without a better score; "
           "inverse_sqrt: warm-up, then lr*sqrt(warmup/step) (Vaswani et al. 2017)", ALL),
    K_INT("train", "warmup_steps", warmup_steps, "500", 0, 1000000000, "linear warm-up steps",
          ALL),
    K_FLT("train", "lr_decay", lr_decay, "0.5", 0, 1, 1, 0,
          "lr factor when the validation score (early_stop_metric) does not improve", ALL),
    K_FLT("train", "min_lr", min_lr, "1e-5", 0, 0, 10, 0, "learning-rate floor (<= lr)", ALL),
    K_FLT("train", "adam_beta1", adam_beta1, "0.9", 0, 0, 1, 1, "Adam beta1", ALL),
    K_FLT("train", "adam_beta2", adam_beta2, "0.999", 0, 0, 1, 1, "Adam beta2", ALL),
    K_FLT("train", "adam_eps", adam_eps, "1e-8", 0, 1, 1, 0, "Adam epsilon", ALL),
    K_FLT("train", "clip_norm", clip_norm, "5", 0, 0, 1e6, 0,
          "clip the global gradient norm to this; 0 = off", ALL),
    K_INT("train", "max_nonfinite", max_nonfinite, "10", 1, 1000000,
          "a step with a NaN/Inf loss or gradient is skipped; this many in a row end the run",
          ALL),
    K_FLT("train", "label_smoothing", label_smoothing, "0.1", 0, 0, 1, 1, "label smoothing", ALL),
    K_INT("train", "patience", patience, "5", 0, 1000000,
          "validations (epochs, unless valid_every) without a better score (early_stop_metric) "
          "before stopping; with bleu, validations of BLEU 0 before any above 0 do not count; "
          "0 = never stop early", ALL),
    K_INT("train", "log_every", log_every, "100", 1, 1000000000, "steps between log lines", ALL),
    K_INT("train", "save_every", save_every, "500", 0, 1000000000,
          "steps between checkpoints (also one per epoch end); 0 = epoch ends only", ALL),
    K_STR("train", "save_dir", save_dir, "", "checkpoint folder; empty = checkpoints/<name>"),
    K_INT("train", "keep_checkpoints", keep_checkpoints, "0", 0, 1000000,
          "also write epoch<N>.ckpt at each epoch end and keep the last this many (older "
          "ones deleted once the new one is written); 0 = off", ALL),
    K_INT("train", "average_last", average_last, "0", 0, 1000000,
          "at the end of the run write avg.ckpt, the mean parameters of the last this many "
          "epoch checkpoints (Vaswani et al. 2017 6.1), and validate it (fewer when fewer were "
          "written: the log and metrics.jsonl's avg line say so); needs keep_checkpoints >= it; "
          "0 = off", ALL),
    K_FLT("train", "ema_decay", ema_decay, "0", 0, 0, 1, 1,
          "exponential moving average of the weights, ema = d*ema + (1-d)*w after every step "
          "(Polyak & Juditsky 1992); validation and best.ckpt use it; 0 = off", ALL),
    K_BOOL("train", "ema_warmup", ema_warmup, "false",
           "with ema_decay: d = min(ema_decay, (1 + n) / (10 + n)) after n updates (the warm-up "
           "of Marian and TensorFlow), so that the early average follows the weights", ALL),
    K_INT("train", "threads", threads, "0", 0, 4096, "CPU threads; 0 = all cores", ALL),
    K_INT("train", "val_max_sentences", val_max_sentences, "0", 0, 1000000000,
          "validation sentences used; 0 = all", ALL),
    K_INT("train", "valid_every", valid_every, "0", 0, 1000000000,
          "optimizer steps between validations (best.ckpt, patience and the plateau decay "
          "count them); 0 = at the end of each epoch", ALL),
    K_ENUM("train", "early_stop_metric", early_stop_metric, "bleu", early_stop_metric_names,
           "the validation score that picks best.ckpt and counts patience and the plateau "
           "decay (ppl: lower is better); bleu: a validation of BLEU 0 while none has scored "
           "above 0 counts for neither (the model translates nothing yet, its perplexity may "
           "still fall) and its weights replace best.ckpt", ALL),
    K_INT("train", "accum_steps", accum_steps, "1", 1, 1000000,
          "batches whose gradients one optimizer step sums (gradient accumulation; the loss "
          "normalised by their target tokens together)", ALL),
    K_STR("train", "init_from", init_from, "",
          "a checkpoint whose weights start this run (fine-tuning: a fresh optimizer, schedule "
          "and step count; the same [model] keys but dropout and rnn_impl, and its SentencePiece "
          "model); empty = initialise from train.seed"),
    K_STR("train", "init_from_crc", init_from_crc, "",
          "CRC-32 of the init_from file, 8 hex digits: the run writes it to config.ini, and a "
          "start with it given refuses a file with another CRC; empty = not checked"),

    K_FLT("dist", "timeout", dist_timeout, "300", 0, 0, 1e6, 0,
          "seconds a rank waits for the others once training has begun (one step's sums, or "
          "rank 0's validation and saving) before it exits naming the dead ranks; 0 = no limit",
          ALL),
    K_BOOL("dist", "overlap", dist_overlap, "false",
           "start the gradient sum of finished layers while backward goes on (MPI_Iallreduce by "
           "buckets, on the CPU; train.device = cuda keeps one ncclAllReduce after backward)", ALL),
    K_FLT("dist", "bucket_mb", dist_bucket_mb, "4", 0, 1, 1e6, 0,
          "MiB of gradient per bucket with dist.overlap (the last bucket holds the rest)", ALL),
};
enum { N_KEYS = (int)(sizeof keys / sizeof keys[0]) };
static_assert(N_KEYS <= CONFIG_MAX_KEYS, "Config.given needs a flag per key: raise CONFIG_MAX_KEYS");
static const char *const sections[] = {"run", "model", "data", "train", "dist"};
enum { N_SECTIONS = (int)(sizeof sections / sizeof sections[0]) };

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */
#define FLD(c, k, T) ((T *)((char *)(c) + (k)->off))
#define CFLD(c, k, T) ((const T *)((const char *)(c) + (k)->off))

static int find_section(const char *s) {
    for (int i = 0; i < N_SECTIONS; i++)
        if (strcmp(s, sections[i]) == 0) return i;
    return -1;
}

static const KeyDef *find_key(const char *section, const char *key) {
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].key, key) == 0) return &keys[i];
    return NULL;
}

/* 1 when a slot of c's model uses attention kind x */
static bool model_uses(const ModelSpec *ms, AttentionKind x) {
    if (ms->type == MODEL_RNN) return ms->attention == x;
    return ms->self_attention == x || spec_dec_self_attention(ms) == x || ms->cross_attention == x;
}

/* 1 when c's model (and training) reads key k (KeyReader). */
static bool key_read(const Config *c, const KeyDef *k) {
    const ModelSpec *ms = &c->model;
    const AttentionOps *row;
    switch (k->reads) {
    case R_ALL: return true;
    case R_RNN: return ms->type == MODEL_RNN;
    case R_TF: return ms->type == MODEL_TRANSFORMER;
    case R_HEADS:
        row = ms->type == MODEL_RNN ? attention_row(ms->attention) : NULL;
        return ms->type == MODEL_TRANSFORMER || (row && row->multi_head);
    case R_LINFORMER: return model_uses(ms, ATTN_LINFORMER);
    case R_LOCAL: return model_uses(ms, ATTN_LUONG_LOCAL);
    }
    return true;
}

static void list_names(const KeyDef *k, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < k->n_names; i++) str_appendf(buf, n, "%s%s", i ? ", " : "", k->names[i]);
}

static void list_keys(const char *section, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].section, section) == 0)
            str_appendf(buf, n, "%s%s", buf[0] ? ", " : "", keys[i].key);
}

static void list_sections(char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < N_SECTIONS; i++) str_appendf(buf, n, "%s[%s]", i ? ", " : "", sections[i]);
}

/* "[1, 65536]", "[0, 1)", "0..18446744073709551615" — the accepted values of a number key. */
static void range_text(const KeyDef *k, char *buf, size_t n) {
    if (k->type == T_U64)
        snprintf(buf, n, "[0, %llu]", (unsigned long long)UINT64_MAX);
    else
        snprintf(buf, n, "%c%.16g, %.16g%c", k->lo_open ? '(' : '[', k->lo, k->hi,
                 k->hi_open ? ')' : ']');
}

static bool in_range(const KeyDef *k, double v) {
    return (k->lo_open ? v > k->lo : v >= k->lo) && (k->hi_open ? v < k->hi : v <= k->hi);
}

/* Echo of user text for messages: at most 60 bytes, marked when cut. */
static const char *echo(const char *s, char *buf, size_t n) {
    snprintf(buf, n, "%.60s%s", s, strlen(s) > 60 ? "..." : "");
    return buf;
}

static bool is_int_text(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* Shortest %.Ng (N <= 9) that reads back as exactly v. */
static void format_float(float v, char *buf, size_t n) {
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, n, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) return;
    }
}

/* Writes the value of key k in c as file text (strings unquoted). */
static void value_text(const Config *c, const KeyDef *k, char *buf, size_t n) {
    switch (k->type) {
    case T_INT: snprintf(buf, n, "%d", *CFLD(c, k, int)); break;
    case T_LONG: snprintf(buf, n, "%ld", *CFLD(c, k, long)); break;
    case T_U64: snprintf(buf, n, "%llu", (unsigned long long)*CFLD(c, k, uint64_t)); break;
    case T_FLOAT: format_float(*CFLD(c, k, float), buf, n); break;
    case T_BOOL: snprintf(buf, n, "%s", *CFLD(c, k, int) ? "true" : "false"); break;
    case T_ENUM: {
        int v = *CFLD(c, k, int);
        snprintf(buf, n, "%s", v >= 0 && v < k->n_names ? k->names[v] : "?");
        break;
    }
    case T_STR: snprintf(buf, n, "%s", CFLD(c, k, char)); break;
    }
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* ---------------------------------------------------------------------------------------------
 * The one setter: parses the text of a value (already trimmed) into the field of key k.
 * where: "FILE:LINE" or "--set section.key", the head of every message.
 * ------------------------------------------------------------------------------------------- */
static Status set_value(Config *c, const KeyDef *k, const char *val, const char *where, Err *err) {
    char range[96], names[512], e[80];
    size_t len = strlen(val);
    bool quoted = len > 0 && val[0] == '"';
    if (k->type != T_STR && quoted)
        return err_set(err, "%s: %s.%s = %s: quotes are only for string values; write the value "
                       "without quotes", where, k->section, k->key, echo(val, e, sizeof e));
    if (k->type != T_STR && len == 0)
        return err_set(err, "%s: %s.%s has an empty value; write a value or remove the line to "
                       "keep the default %s", where, k->section, k->key, k->def);
    range_text(k, range, sizeof range);
    const char *hint = (strchr(val, '#') || strchr(val, ';'))
                           ? " (comments must be on a line of their own)" : "";

    switch (k->type) {
    case T_INT:
    case T_LONG: {
        if (!is_int_text(val))
            return err_set(err, "%s: %s.%s = %s is not a whole number%s; write an integer in %s",
                           where, k->section, k->key, echo(val, e, sizeof e), hint, range);
        errno = 0;
        long long v = strtoll(val, NULL, 10);
        if (errno == ERANGE || !in_range(k, (double)v))
            return err_set(err, "%s: %s.%s = %s is out of range; write an integer in %s", where,
                           k->section, k->key, echo(val, e, sizeof e), range);
        if (k->type == T_INT) *FLD(c, k, int) = (int)v;
        else *FLD(c, k, long) = (long)v;
        return STATUS_OK;
    }
    case T_U64: {
        if (!is_int_text(val) || val[0] == '-')
            return err_set(err, "%s: %s.%s = %s is not a non-negative whole number%s; write an "
                           "integer in %s", where, k->section, k->key, echo(val, e, sizeof e),
                           hint, range);
        errno = 0;
        unsigned long long v = strtoull(val, NULL, 10);
        if (errno == ERANGE)
            return err_set(err, "%s: %s.%s = %s is out of range; write an integer in %s", where,
                           k->section, k->key, echo(val, e, sizeof e), range);
        *FLD(c, k, uint64_t) = (uint64_t)v;
        return STATUS_OK;
    }
    case T_FLOAT: {
        const char *s = val + (val[0] == '+' || val[0] == '-');
        if (strncasecmp(s, "nan", 3) == 0 || strncasecmp(s, "inf", 3) == 0)
            return err_set(err, "%s: %s.%s = %s: NaN and infinity are not allowed; write a finite "
                           "number in %s", where, k->section, k->key, echo(val, e, sizeof e),
                           range);
        bool digit = false, ok = true;
        for (const char *p = val; *p; p++) {
            if (*p >= '0' && *p <= '9') digit = true;
            else if (!strchr("+-.eE", *p)) ok = false;
        }
        char *end = NULL;
        errno = 0;
        float v = ok && digit ? strtof(val, &end) : 0.0f;
        if (!ok || !digit || end == val || *end != 0)
            return err_set(err, "%s: %s.%s = %s is not a number%s; write a decimal number in %s",
                           where, k->section, k->key, echo(val, e, sizeof e), hint, range);
        if (errno == ERANGE || !isfinite(v) || !in_range(k, (double)v))
            return err_set(err, "%s: %s.%s = %s is out of range; write a number in %s", where,
                           k->section, k->key, echo(val, e, sizeof e), range);
        *FLD(c, k, float) = v;
        return STATUS_OK;
    }
    case T_BOOL: {
        static const char *const t[] = {"true", "yes", "on", "1"}, *const f[] = {"false", "no",
                                                                                 "off", "0"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(val, t[i]) == 0) { *FLD(c, k, int) = 1; return STATUS_OK; }
            if (strcasecmp(val, f[i]) == 0) { *FLD(c, k, int) = 0; return STATUS_OK; }
        }
        return err_set(err, "%s: %s.%s = %s is not a bool%s; write true or false (also yes/no, "
                       "on/off, 1/0)", where, k->section, k->key, echo(val, e, sizeof e), hint);
    }
    case T_ENUM:
        for (int i = 0; i < k->n_names; i++)
            if (strcmp(val, k->names[i]) == 0) { *FLD(c, k, int) = i; return STATUS_OK; }
        list_names(k, names, sizeof names);
        return err_set(err, "%s: %s.%s = %s is not a valid name%s; write one of: %s", where,
                       k->section, k->key, echo(val, e, sizeof e), hint, names);
    case T_STR: {
        if (quoted) {
            if (len < 2 || val[len - 1] != '"')
                return err_set(err, "%s: %s.%s = %s: unterminated quote; end the value with '\"' "
                               "or remove the opening quote", where, k->section, k->key,
                               echo(val, e, sizeof e));
            val++;
            len -= 2;
        } else {
            for (size_t i = 1; i < len; i++)
                if ((val[i] == '#' || val[i] == ';') && (val[i - 1] == ' ' || val[i - 1] == '\t'))
                    return err_set(err, "%s: %s.%s = %s looks like it has a trailing comment; "
                                   "comments must be on a line of their own (quote the value if "
                                   "the '%c' belongs to it)", where, k->section, k->key,
                                   echo(val, e, sizeof e), val[i]);
        }
        /* checked here, not only per file line, so that --set values obey it too: the value is
         * written into checkpoints by config_to_ini and must load back from there */
        for (size_t i = 0; i < len;) {
            if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f)
                return err_set(err, "%s: %s.%s contains control character 0x%02x; remove it",
                               where, k->section, k->key, (unsigned char)val[i]);
            size_t u = utf8_len((const unsigned char *)val + i, len - i);
            if (u == 0)
                return err_set(err, "%s: %s.%s is not valid UTF-8 (at byte %zu); write it as "
                               "UTF-8", where, k->section, k->key, i + 1);
            i += u;
        }
        if (len >= k->size)
            return err_set(err, "%s: %s.%s is %zu bytes long, over the %zu-byte limit; use a "
                           "shorter value", where, k->section, k->key, len, k->size - 1);
        char *dst = FLD(c, k, char);
        memset(dst, 0, k->size);
        memcpy(dst, val, len);
        return STATUS_OK;
    }
    }
    return err_set(err, "%s: internal error: bad key type", where);
}

/* ---------------------------------------------------------------------------------------------
 * Defaults
 * ------------------------------------------------------------------------------------------- */
void config_defaults(Config *c) {
    static const size_t type_size[] = {sizeof(int), sizeof(long), sizeof(uint64_t), sizeof(float),
                                       sizeof(int), sizeof(int), 0};
    memset(c, 0, sizeof *c);
    for (int i = 0; i < N_KEYS; i++) {
        const KeyDef *k = &keys[i];
        CHECK(k->type == T_STR || k->size == type_size[k->type],
              "config table: a key's type does not match its Config field");
        CHECK(find_section(k->section) >= 0, "config table: section missing from sections[]");
        Err err;
        if (set_value(c, k, k->def, "default", &err) != STATUS_OK) {
            fprintf(stderr, "%s\n", err.msg);
            CHECK(0, "config table: a default does not parse");
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * The parser
 * ------------------------------------------------------------------------------------------- */
static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
    return s;
}

enum { MAX_INCLUDE_DEPTH = 8 }; /* files included through includes, counting the top one */

static Status load_file(Config *c, const char *path, int depth, Err *err);

/* `include = PATH` (before the first section of the file at src): PATH relative to src's folder
 * unless absolute, loaded at depth + 1. */
static Status include_file(Config *c, const char *val, const char *src, const char *where,
                           int depth, Err *err) {
    char e[80], path[2048];
    if (depth < 0)
        return err_set(err, "%s: include = %s in a config given as text; only config files "
                       "include others (write both to files)", where, echo(val, e, sizeof e));
    if (!*val)
        return err_set(err, "%s: include needs a path (include = transformer.ini)", where);
    if (depth + 1 >= MAX_INCLUDE_DEPTH)
        return err_set(err, "%s: include = %s nests %d files deep; is there a cycle (a file that "
                       "includes itself)?", where, echo(val, e, sizeof e), MAX_INCLUDE_DEPTH);
    const char *slash = strrchr(src, '/');
    int dir = val[0] == '/' || !slash ? 0 : (int)(slash - src) + 1;
    if ((size_t)snprintf(path, sizeof path, "%.*s%s", dir, src, val) >= sizeof path)
        return err_set(err, "%s: the included path is over %zu bytes; shorten it", where,
                       sizeof path - 1);
    if (load_file(c, path, depth + 1, err) == STATUS_OK) return STATUS_OK;
    char inner[sizeof err->msg];
    snprintf(inner, sizeof inner, "%s", err->msg);
    return err_set(err, "%s: in the file it includes: %s", where, inner);
}

/* depth: 0 for the file named on the command line, 1 for a file it includes…; −1 for text
 * (config_load_string), which may not include. */
static Status parse_text(Config *c, const char *text, size_t n, const char *src, int depth,
                         Err *err) {
    char line[CONFIG_MAX_LINE + 1], where[512 + 32], e[80], list[1024];
    int key_line[N_KEYS] = {0}, section_line[N_SECTIONS] = {0};
    int section = -1, included_at = 0;
    const char *p = text, *end = text + n;
    if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3; /* byte-order mark */

    for (int lineno = 1; p < end; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *next = nl ? nl + 1 : end;
        snprintf(where, sizeof where, "%.512s:%d", src, lineno);
        if (len > 0 && p[len - 1] == '\r') len--;
        if (len > CONFIG_MAX_LINE)
            return err_set(err, "%s: line is %zu bytes long, over the %d-byte limit; shorten it "
                           "(long lines are refused, never split)", where, len, CONFIG_MAX_LINE);
        for (size_t i = 0; i < len;) {
            unsigned char ch = (unsigned char)p[i];
            if (ch == 0)
                return err_set(err, "%s: NUL byte at column %zu; a config file is plain text, "
                               "remove it", where, i + 1);
            if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
                return err_set(err, "%s: control character 0x%02x at column %zu; remove it",
                               where, ch, i + 1);
            size_t u = utf8_len((const unsigned char *)p + i, len - i);
            if (u == 0)
                return err_set(err, "%s: invalid UTF-8 at column %zu; save the file as UTF-8",
                               where, i + 1);
            i += u;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p = next;

        char *s = trim(line);
        if (*s == 0 || *s == '#' || *s == ';') continue;

        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close)
                return err_set(err, "%s: unclosed section header %s; write [section]", where,
                               echo(s, e, sizeof e));
            if (*trim(close + 1))
                return err_set(err, "%s: text after the section header: %s; put only [section] "
                               "on the line (comments go on their own line)", where,
                               echo(close + 1, e, sizeof e));
            *close = 0;
            char *name = trim(s + 1);
            section = find_section(name);
            list_sections(list, sizeof list);
            if (section < 0)
                return err_set(err, "%s: unknown section [%s]; valid sections: %s", where,
                               echo(name, e, sizeof e), list);
            if (section_line[section])
                return err_set(err, "%s: section [%s] appears again (first at line %d); merge the "
                               "two", where, name, section_line[section]);
            section_line[section] = lineno;
            continue;
        }

        char *eq = strchr(s, '=');
        if (!eq)
            return err_set(err, "%s: expected 'key = value', '[section]' or a '#' comment, got "
                           "%s; add '= value' or comment the line out", where,
                           echo(s, e, sizeof e));
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        if (!*key)
            return err_set(err, "%s: missing key before '='; write key = value", where);
        if (section < 0 && strcmp(key, "include") == 0) {
            if (included_at)
                return err_set(err, "%s: a second include (the first at line %d); a file "
                               "includes one other (which may include another)", where,
                               included_at);
            included_at = lineno;
            if (include_file(c, val, src, where, depth, err) != STATUS_OK) return STATUS_ERR;
            continue;
        }
        if (section < 0)
            return err_set(err, "%s: key '%s' is outside any section; put it under a [section] "
                           "header (or write include = FILE before the first section)", where,
                           echo(key, e, sizeof e));
        const KeyDef *k = find_key(sections[section], key);
        if (!k) {
            list_keys(sections[section], list, sizeof list);
            const char *other = NULL;
            for (int i = 0; i < N_KEYS && !other; i++)
                if (strcmp(keys[i].key, key) == 0) other = keys[i].section;
            char hint[160] = "";
            if (other) snprintf(hint, sizeof hint, " (%s is a key of [%s])", key, other);
            return err_set(err, "%s: unknown key '%s' in [%s]%s; valid keys: %s", where,
                           echo(key, e, sizeof e), sections[section], hint, list);
        }
        int ki = (int)(k - keys);
        if (depth > 0 && (CFLD(c, k, char) == c->name || CFLD(c, k, char) == c->save_dir))
            return err_set(err, "%s: %s.%s in an included file would give every file that "
                           "includes it the same run folder (one run overwriting another's "
                           "checkpoints); set it in the including file", where, k->section,
                           k->key);
        if (key_line[ki])
            return err_set(err, "%s: duplicate key %s.%s (first at line %d); keep one", where,
                           k->section, k->key, key_line[ki]);
        key_line[ki] = lineno;
        if (set_value(c, k, val, where, err) != STATUS_OK) return STATUS_ERR;
        c->given[ki] = 1;
    }
    return STATUS_OK;
}

Status config_load_string(Config *c, const char *text, const char *source_name, Err *err) {
    config_defaults(c);
    Status st = parse_text(c, text, strlen(text), source_name ? source_name : "<string>", -1, err);
    memset(c->given, 0, sizeof c->given); /* a stored config: no key was given by a user */
    return st;
}

/* Reads the file at path and applies its keys to c (over what c holds). */
static Status load_file(Config *c, const char *path, int depth, Err *err) {
    Status st = STATUS_ERR;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, "%s: cannot open config file: %s; check the path", path, strerror(errno));
        goto cleanup;
    }
    buf = xmalloc(CONFIG_MAX_FILE + 1);
    n = fread(buf, 1, CONFIG_MAX_FILE + 1, f);
    if (ferror(f)) {
        err_set(err, "%s: cannot read config file: %s; check that it is a readable file", path,
                strerror(errno));
        goto cleanup;
    }
    if (n > CONFIG_MAX_FILE) {
        err_set(err, "%s: config file is over %d bytes; is this the right file?", path,
                CONFIG_MAX_FILE);
        goto cleanup;
    }
    st = parse_text(c, buf, n, path, depth, err);
cleanup:
    if (f) fclose(f);
    free(buf);
    return st;
}

Status config_load(Config *c, const char *path, Err *err) {
    config_defaults(c);
    /* Name from the path: basename without ".ini"; the file's run.name (if any) overrides it. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t blen = strlen(base);
    if (blen > 4 && strcmp(base + blen - 4, ".ini") == 0) blen -= 4;
    if (blen >= sizeof c->name)
        return err_set(err, "%s: file name is too long for a run name (max %zu bytes); rename "
                       "the file or set run.name", path, sizeof c->name - 1);
    memset(c->name, 0, sizeof c->name);
    memcpy(c->name, base, blen);
    return load_file(c, path, 0, err);
}

Status config_set(Config *c, const char *assignment, Err *err) {
    char buf[CONFIG_MAX_LINE + 1], where[600], e[80], e2[80];
    if (strlen(assignment) > CONFIG_MAX_LINE)
        return err_set(err, "--set: argument is over %d bytes; shorten it", CONFIG_MAX_LINE);
    strcpy(buf, assignment);
    char *eq = strchr(buf, '=');
    if (!eq)
        return err_set(err, "--set %s: expected section.key=value; add '=value'",
                       echo(assignment, e, sizeof e));
    *eq = 0;
    char *name = trim(buf), *val = trim(eq + 1);
    char *dot = strchr(name, '.');
    char list[1024];
    if (!dot)
        return err_set(err, "--set %s: expected section.key=value (e.g. train.lr=0.001); name the "
                       "section", echo(assignment, e, sizeof e));
    *dot = 0;
    const char *sec = name, *key = dot + 1;
    if (find_section(sec) < 0) {
        list_sections(list, sizeof list);
        return err_set(err, "--set %s.%s: unknown section [%s]; valid sections: %s",
                       echo(sec, e, sizeof e), echo(key, e2, sizeof e2), e, list);
    }
    const KeyDef *k = find_key(sec, key);
    if (!k) {
        list_keys(sec, list, sizeof list);
        return err_set(err, "--set %s.%s: unknown key '%s' in [%s]; valid keys: %s", sec,
                       echo(key, e, sizeof e), e, sec, list);
    }
    snprintf(where, sizeof where, "--set %s.%s", k->section, k->key);
    if (set_value(c, k, val, where, err) != STATUS_OK) return STATUS_ERR;
    c->given[k - keys] = 1;
    return STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Validation
 * ------------------------------------------------------------------------------------------- */
/* The first key given (Config.given) that c's model does not read, as an error naming the key,
 * the model and what it takes instead; STATUS_OK when there is none. */
static Status unread_key(const Config *c, Err *err) {
    const ModelSpec *ms = &c->model;
    const char *model = ms->type == MODEL_RNN ? "an RNN (model.type = rnn)"
                                              : "a Transformer (model.type = transformer)";
    char val[1100], attn[64];
    for (int i = 0; i < N_KEYS; i++) {
        const KeyDef *k = &keys[i];
        if (!c->given[i] || key_read(c, k)) continue;
        value_text(c, k, val, sizeof val);
        switch (k->reads) {
        case R_HEADS:
            return err_set(err, "config %s: model.heads = %s is given, but the RNN's attention "
                           "%s has one head (only sdp, flash, linear, efficient, taylor and "
                           "linformer split model.heads); remove the key", c->name, val,
                           attention_kind_names[ms->attention]);
        case R_LINFORMER:
        case R_LOCAL:
            return err_set(err, "config %s: %s.%s = %s is given, but no attention of this model "
                           "is %s (%s); remove the key or choose that attention", c->name,
                           k->section, k->key, val,
                           k->reads == R_LOCAL ? "luong_local" : "linformer",
                           config_attention_text(c, attn, sizeof attn));
        default:
            return err_set(err, "config %s: %s.%s = %s is given, but %s does not read it%s%s; "
                           "remove %s.%s", c->name, k->section, k->key, val, model,
                           k->instead ? ": it takes " : "", k->instead ? k->instead : "",
                           k->section, k->key);
        }
    }
    return STATUS_OK;
}
Status config_validate(const Config *c, Err *err) {
    const ModelSpec *ms = &c->model;
    char range[96];
    for (int i = 0; i < N_KEYS; i++) {
        const KeyDef *k = &keys[i];
        bool ok = true;
        switch (k->type) {
        case T_INT: ok = in_range(k, *CFLD(c, k, int)); break;
        case T_LONG: ok = in_range(k, (double)*CFLD(c, k, long)); break;
        case T_FLOAT: ok = isfinite(*CFLD(c, k, float)) && in_range(k, *CFLD(c, k, float)); break;
        case T_BOOL: ok = *CFLD(c, k, int) == 0 || *CFLD(c, k, int) == 1; break;
        case T_ENUM: ok = *CFLD(c, k, int) >= 0 && *CFLD(c, k, int) < k->n_names; break;
        case T_STR: ok = memchr(CFLD(c, k, char), 0, k->size) != NULL; break;
        case T_U64: break;
        }
        if (!ok) {
            range_text(k, range, sizeof range);
            return err_set(err, "config %s: %s.%s holds an invalid value; set it within %s",
                           c->name, k->section, k->key,
                           k->type == T_INT || k->type == T_LONG || k->type == T_FLOAT
                               ? range : "its valid values");
        }
    }
    const char *nm = c->name;
    if (unread_key(c, err)) return STATUS_ERR;
    bool name_ok = nm[0] && strcmp(nm, ".") && strcmp(nm, "..");
    for (const char *q = nm; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
              *q == '.' || *q == '_' || *q == '-'))
            name_ok = false;
    if (!name_ok)
        return err_set(err, "config: run.name '%s' cannot name a folder; use letters, digits, "
                       "'.', '_' or '-' (rename the file or set run.name)", nm);
#define RULE(cond, ...) \
    do { if (!(cond)) return err_set(err, __VA_ARGS__); } while (0)
    RULE(ms->type != MODEL_RNN || ms->hidden % 2 == 0,
         "config %s: model.hidden = %d is odd, but the bidirectional encoder uses hidden/2 per "
         "direction; set an even model.hidden", nm, ms->hidden);
    /* every attention slot of the model: the attention table's one check (attention.h) */
    char why[512];
    if (ms->type == MODEL_TRANSFORMER) {
        RULE(attention_supports_transformer(ms->self_attention, spec_dec_self_attention(ms),
                                            ms->cross_attention, NULL, ms->d_model, ms->heads,
                                            why, sizeof why),
             "config %s: %s", nm, why);
    } else {
        RULE(attention_supports(ms->attention, ATTN_SLOT_RNN, 0, NULL, ms->hidden, ms->hidden,
                                ms->heads, why, sizeof why),
             "config %s: %s", nm, why);
    }
    /* linformer (attention_max_keys): every training source, up to data.max_len tokens, must
     * fit its projections; layerwise sharing needs one tensor under several owners */
    int lf = ms->type == MODEL_TRANSFORMER
                 ? ms->self_attention == ATTN_LINFORMER || ms->cross_attention == ATTN_LINFORMER
                 : ms->attention == ATTN_LINFORMER;
    RULE(!lf || ms->attn_opt.linformer_share != LINFORMER_SHARE_LAYERWISE,
         "config %s: model.linformer_share = layerwise (one E for every layer, Wang et al. 2020 "
         "§4) is not supported: the parameter table (ops/params.h) cannot alias one tensor "
         "under several layers; set model.linformer_share = none, headwise or kv", nm);
    int ex = config_example_len(c);
    RULE(!lf || ex <= ms->attn_opt.linformer_max_len,
         "config %s: training sources of up to %d tokens (data.max_len = %d, data.concat = %d) "
         "reach the linformer attention, whose projections span model.linformer_max_len = %d "
         "positions; set model.linformer_max_len >= %d or lower data.max_len", nm, ex,
         c->max_len, c->concat, ms->attn_opt.linformer_max_len, ex);
    const AttentionOps *row = attention_row(ms->attention);
    int luong = row && !row->rnn_prev_state; /* the query is the current state h_t */
    RULE(!(ms->type == MODEL_RNN && ms->input_feeding && !luong),
         "config %s: model.input_feeding = true belongs to the Luong attentions (Luong et al. "
         "2015 §3.3), but model.attention = %s%s; set model.input_feeding = false", nm,
         attention_kind_names[ms->attention],
         ms->attention == ATTN_BAHDANAU ? " (which already feeds its context to the RNN)" : "");
    /* model.rnn_impl = cudnn: an RNN, on the GPU, in a build that has cuDNN (the SIMT build
     * cannot emulate it); in this order, so that each message names the first thing to change */
    RULE(ms->rnn_impl != RNN_IMPL_CUDNN || ms->type == MODEL_RNN,
         "config %s: model.rnn_impl = cudnn applies to the RNN's LSTM/GRU layers, but "
         "model.type = %s; set model.rnn_impl = own", nm, model_type_names[ms->type]);
    RULE(ms->rnn_impl != RNN_IMPL_CUDNN || c->device == DEVICE_CUDA,
         "config %s: model.rnn_impl = cudnn needs train.device = cuda (cuDNN runs on the GPU "
         "only); set train.device = cuda, or model.rnn_impl = own", nm);
    RULE(ms->rnn_impl != RNN_IMPL_CUDNN || backend_cuda_has_cudnn(),
         "config %s: model.rnn_impl = cudnn, but this build of trainer has no cuDNN (%s); set "
         "model.rnn_impl = own", nm,
         backend_cuda_emulated() ? "the SIMT emulation of the CUDA backend cannot run cuDNN"
                                 : "cudnn.h and libcudnn were not found when it was built: "
                                   "install cuDNN and rebuild");
    /* tf32 on the cpu; bf16 on a cpu or build without it (backend_open's own check) */
    RULE(backend_precision_runs((int)c->device, (int)c->precision, why, sizeof why),
         "config %s: %s", nm, why);
    RULE(c->average_last <= c->keep_checkpoints,
         "config %s: train.average_last = %d averages the last %d epoch checkpoints, but "
         "train.keep_checkpoints = %d keeps fewer; set train.keep_checkpoints >= %d or lower "
         "train.average_last", nm, c->average_last, c->average_last, c->keep_checkpoints,
         c->average_last);
    RULE(c->min_lr <= c->lr,
         "config %s: train.min_lr = %g is above train.lr = %g; lower train.min_lr", nm,
         (double)c->min_lr, (double)c->lr);
    RULE((long long)c->batch_tokens >= 2LL * c->max_len,
         "config %s: train.batch_tokens = %d cannot hold one pair of data.max_len = %d tokens per "
         "side; set train.batch_tokens >= %lld or lower data.max_len", nm, c->batch_tokens,
         c->max_len, 2LL * c->max_len);
    RULE(c->train_src[0] && c->train_tgt[0] && c->val_src[0] && c->val_tgt[0],
         "config %s: data.train_src, train_tgt, val_src and val_tgt must all be set; give the "
         "missing paths", nm);
    RULE(!c->test_src[0] == !c->test_tgt[0],
         "config %s: data.test_src and data.test_tgt must both be set or both be empty", nm);
    int hex = 1;
    for (int i = 0; i < 8; i++) hex &= isxdigit((unsigned char)c->init_from_crc[i]) != 0;
    RULE(!c->init_from_crc[0] || (hex && !c->init_from_crc[8]),
         "config %s: train.init_from_crc = %s is not a CRC-32 of 8 hex digits (as config.ini of a "
         "run started with train.init_from writes it); correct it or remove the key", nm,
         c->init_from_crc);
    RULE(!c->init_from_crc[0] || c->init_from[0],
         "config %s: train.init_from_crc = %s is given without train.init_from, the checkpoint "
         "it is the CRC-32 of; give train.init_from or remove train.init_from_crc", nm,
         c->init_from_crc);
#undef RULE
    return STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------------------------- */
void config_drop_unread(Config *c) {
    for (int i = 0; i < N_KEYS; i++) {
        Err err;
        if (!key_read(c, &keys[i])) CHECK(set_value(c, &keys[i], keys[i].def, "default", &err)
                                              == STATUS_OK, "config table: a default does not parse");
    }
    memset(c->given, 0, sizeof c->given);
}

char *config_to_ini(const Config *c) {
    size_t cap = 4096, len = 0;
    char *out = xmalloc(cap), val[1100];
    out[0] = 0;
    for (int s = 0; s < N_SECTIONS; s++) {
        size_t need = 64;
        for (int i = 0; i < N_KEYS; i++) need += 64 + keys[i].size;
        if (len + need > cap) out = xrealloc(out, cap = 2 * (len + need));
        len += (size_t)snprintf(out + len, cap - len, "%s[%s]\n", s ? "\n" : "", sections[s]);
        for (int i = 0; i < N_KEYS; i++) {
            const KeyDef *k = &keys[i];
            if (strcmp(k->section, sections[s]) != 0 || !key_read(c, k)) continue;
            value_text(c, k, val, sizeof val);
            const char *q = k->type == T_STR ? "\"" : "";
            len += (size_t)snprintf(out + len, cap - len, "%s = %s%s%s\n", k->key, q, val, q);
        }
    }
    return out;
}

/* Who reads a key, in words; R_HEADS lists the multi-head kinds from the attention table. */
static const char *reader_text(KeyReader r) {
    static char heads[256];
    if (r == R_HEADS && !heads[0]) {
        snprintf(heads, sizeof heads, "transformer; rnn with a multi-head attention (");
        for (int k = 1, n = 0; k < ATTN_KIND_COUNT; k++) {
            const AttentionOps *row = attention_row((AttentionKind)k);
            if (row && row->multi_head)
                str_appendf(heads, sizeof heads, "%s%s", n++ ? ", " : "", attention_kind_names[k]);
        }
        str_appendf(heads, sizeof heads, ")");
    }
    static const char *const readers[] = {
        [R_ALL] = "every model", [R_RNN] = "rnn", [R_TF] = "transformer", [R_HEADS] = heads,
        [R_LINFORMER] = "a model with a linformer attention",
        [R_LOCAL] = "a model with a luong_local attention"};
    return readers[r];
}

void config_print_keys(FILE *f) {
    char extra[600];
    fprintf(f, "Config keys (INI file sections; override with --set section.key=value).\n"
               "A file may begin with include = FILE (relative to its folder): FILE's keys\n"
               "first, then this file's (configs/transformer_flash.ini). A [model] key marked\n"
               "[rnn] or [transformer] is read by that model type alone: giving it to another\n"
               "is an error, as is an attention option where no attention uses it.\n");
    for (int s = 0; s < N_SECTIONS; s++) {
        fprintf(f, "\n[%s]\n", sections[s]);
        for (int i = 0; i < N_KEYS; i++) {
            const KeyDef *k = &keys[i];
            if (strcmp(k->section, sections[s]) != 0) continue;
            extra[0] = 0;
            if (k->type == T_ENUM) {
                char names[512];
                list_names(k, names, sizeof names);
                snprintf(extra, sizeof extra, "; one of: %s", names);
            } else if (k->type == T_INT || k->type == T_LONG || k->type == T_FLOAT) {
                char range[96];
                range_text(k, range, sizeof range);
                snprintf(extra, sizeof extra, "; range %s", range);
            }
            char full[64], who[256] = "";
            snprintf(full, sizeof full, "%s.%s", k->section, k->key);
            if (k->reads != R_ALL) snprintf(who, sizeof who, " [%s]", reader_text(k->reads));
            fprintf(f, "  %-25s %-6s default %s%s%s%s\n      %s%s\n", full, type_names[k->type],
                    k->type == T_STR ? "\"" : "", k->def, k->type == T_STR ? "\"" : "", extra,
                    k->help, who);
        }
    }
}

/* Markdown table cell text: '|' escaped */
static void md_cell(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s, f);
    }
}

void config_print_markdown(FILE *f) {
    fprintf(f, "# Configuration keys\n\n"
               "Every key of a config file, generated by `trainer --config-reference` from the "
               "trainer's key table (`src/train/config.c`); the CTest test `config_reference` "
               "fails when this page and the table disagree. A config is an INI file: "
               "`[section]` headers, `key = value` lines, full-line `#` or `;` comments, string "
               "values optionally in double quotes. A file may begin with `include = FILE` "
               "(relative to its folder): FILE's keys load first, then this file's. "
               "`--set section.key=value` overrides a key on the command line. Everything else "
               "is an error naming the file and line: an unknown section or key, a repeated "
               "key, a value out of its range, and a key given to a model that does not read it "
               "(the column \"read by\"). `trainer --help` prints the same table as text.\n");
    for (int s = 0; s < N_SECTIONS; s++) {
        fprintf(f, "\n## [%s]\n\n| key | type | default | values | read by | meaning |\n"
                   "|---|---|---|---|---|---|\n", sections[s]);
        for (int i = 0; i < N_KEYS; i++) {
            const KeyDef *k = &keys[i];
            if (strcmp(k->section, sections[s]) != 0) continue;
            char values[600] = "";
            if (k->type == T_ENUM) list_names(k, values, sizeof values);
            else if (k->type != T_STR && k->type != T_BOOL) range_text(k, values, sizeof values);
            else if (k->type == T_BOOL) snprintf(values, sizeof values, "true, false");
            fprintf(f, "| `%s.%s` | %s | `%s` | ", k->section, k->key, type_names[k->type],
                    k->def[0] ? k->def : "\"\"");
            md_cell(f, values);
            fprintf(f, " | %s | ", reader_text(k->reads));
            md_cell(f, k->help);
            fprintf(f, " |\n");
        }
    }
}

const char *config_attention_text(const Config *c, char *buf, size_t n) {
    const ModelSpec *ms = &c->model;
    AttentionKind e = ms->self_attention, d = spec_dec_self_attention(ms), x = ms->cross_attention;
    if (ms->type != MODEL_TRANSFORMER) snprintf(buf, n, "%s", attention_kind_names[ms->attention]);
    else if (e == d && d == x) snprintf(buf, n, "%s", attention_kind_names[e]);
    else snprintf(buf, n, "%s/%s/%s", attention_kind_names[e], attention_kind_names[d],
                  attention_kind_names[x]);
    return buf;
}

const char *config_save_dir(const Config *c, char *buf, size_t n) {
    if (c->save_dir[0]) snprintf(buf, n, "%s", c->save_dir);
    else snprintf(buf, n, "checkpoints/%s", c->name);
    return buf;
}

int config_example_len(const Config *c) {
    long n = (long)c->concat * c->max_len + 2L * (c->concat - 1);
    return n > 1000000 ? 1000000 : (int)n;
}

int config_diff(const Config *a, const Config *b, char *buf, size_t n) {
    int count = 0;
    char va[1100], vb[1100];
    if (buf && n) buf[0] = 0;
    for (int i = 0; i < N_KEYS; i++) {
        const KeyDef *k = &keys[i];
        bool same = k->type == T_STR ? strcmp(CFLD(a, k, char), CFLD(b, k, char)) == 0
                                     : memcmp(CFLD(a, k, char), CFLD(b, k, char), k->size) == 0;
        if (same) continue;
        count++;
        if (buf && n) {
            value_text(a, k, va, sizeof va);
            value_text(b, k, vb, sizeof vb);
            str_appendf(buf, n, "%s%s.%s: %s -> %s", count > 1 ? "; " : "", k->section, k->key,
                        va, vb);
        }
    }
    return count;
}

BackendOptions config_backend_options(const Config *c) {
    return (BackendOptions){.device = (int)c->device, .precision = (int)c->precision,
                            .threads = c->threads, .ordinal = BACKEND_KEEP};
}
