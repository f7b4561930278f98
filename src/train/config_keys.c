/* config_keys.c — the key table of the run configuration, every key once, and what is done to
 * one key: its default (config_defaults), the parsing of one value (config_key_set), its text, the
 * models that read it (config_keys.h). config.c parses files and validates with it,
 * config_render.c writes configs and the key reference from it. Host memory. Source: — (Marian's
 * one-declaration option table). */
#include "train/config_keys.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/corpus.h"

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

const KeyDef config_keys[] = {
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
           "luong_local's score (Luong et al. 2015 eq. 8): dot, general or concat; scaled_dot "
           "is general over sqrt(head size), sdp's score (Vaswani et al. 2017 eq. 1)",
           R_LOCAL, NULL),

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
           "matmul input rounding: cuda fp32|tf32|bf16; cpu fp32|bf16 (oneDNN; emulated without AVX512_BF16)", ALL),
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
enum { N_KEYS = (int)(sizeof config_keys / sizeof config_keys[0]) };
const int config_n_keys = N_KEYS;
static_assert(N_KEYS <= CONFIG_MAX_KEYS,
              "Config.given needs a flag per key: raise CONFIG_MAX_KEYS");
const char *const config_sections[CONFIG_N_SECTIONS] = {"run", "model", "data", "train", "dist"};
const char *const config_key_type_names[] = {"int", "int", "uint64", "float", "bool", "enum",
                                             "string"};

/* ---------------------------------------------------------------------------------------------
 * One key
 * ------------------------------------------------------------------------------------------- */
/* 1 when a slot of c's model uses attention kind x */
static bool model_uses(const ModelSpec *ms, AttentionKind x) {
    if (ms->type == MODEL_RNN) return ms->attention == x;
    return ms->self_attention == x || spec_dec_self_attention(ms) == x || ms->cross_attention == x;
}

bool config_key_read(const Config *c, const KeyDef *k) {
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

void config_key_names(const KeyDef *k, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < k->n_names; i++) str_appendf(buf, n, "%s%s", i ? ", " : "", k->names[i]);
}

void config_key_range(const KeyDef *k, char *buf, size_t n) {
    if (k->type == T_U64)
        snprintf(buf, n, "[0, %llu]", (unsigned long long)UINT64_MAX);
    else
        snprintf(buf, n, "%c%.16g, %.16g%c", k->lo_open ? '(' : '[', k->lo, k->hi,
                 k->hi_open ? ')' : ']');
}

bool config_key_in_range(const KeyDef *k, double v) {
    return (k->lo_open ? v > k->lo : v >= k->lo) && (k->hi_open ? v < k->hi : v <= k->hi);
}

const char *config_echo(const char *s, char *buf, size_t n) {
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

void config_key_value(const Config *c, const KeyDef *k, char *buf, size_t n) {
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

size_t config_utf8_len(const unsigned char *s, size_t n) {
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
Status config_key_set(Config *c, const KeyDef *k, const char *val, const char *where, Err *err) {
    char range[96], names[512], e[80];
    size_t len = strlen(val);
    bool quoted = len > 0 && val[0] == '"';
    if (k->type != T_STR && quoted)
        return err_set(err, "%s: %s.%s = %s: quotes are only for string values; write the value "
                       "without quotes", where, k->section, k->key, config_echo(val, e, sizeof e));
    if (k->type != T_STR && len == 0)
        return err_set(err, "%s: %s.%s has an empty value; write a value or remove the line to "
                       "keep the default %s", where, k->section, k->key, k->def);
    config_key_range(k, range, sizeof range);
    const char *hint = (strchr(val, '#') || strchr(val, ';'))
                           ? " (comments must be on a line of their own)" : "";

    switch (k->type) {
    case T_INT:
    case T_LONG: {
        if (!is_int_text(val))
            return err_set(err, "%s: %s.%s = %s is not a whole number%s; write an integer in %s",
                           where, k->section, k->key, config_echo(val, e, sizeof e), hint, range);
        errno = 0;
        long long v = strtoll(val, NULL, 10);
        if (errno == ERANGE || !config_key_in_range(k, (double)v))
            return err_set(err, "%s: %s.%s = %s is out of range; write an integer in %s", where,
                           k->section, k->key, config_echo(val, e, sizeof e), range);
        if (k->type == T_INT) *FLD(c, k, int) = (int)v;
        else *FLD(c, k, long) = (long)v;
        return STATUS_OK;
    }
    case T_U64: {
        if (!is_int_text(val) || val[0] == '-')
            return err_set(err, "%s: %s.%s = %s is not a non-negative whole number%s; write an "
                           "integer in %s", where, k->section, k->key,
                           config_echo(val, e, sizeof e), hint, range);
        errno = 0;
        unsigned long long v = strtoull(val, NULL, 10);
        if (errno == ERANGE)
            return err_set(err, "%s: %s.%s = %s is out of range; write an integer in %s", where,
                           k->section, k->key, config_echo(val, e, sizeof e), range);
        *FLD(c, k, uint64_t) = (uint64_t)v;
        return STATUS_OK;
    }
    case T_FLOAT: {
        const char *s = val + (val[0] == '+' || val[0] == '-');
        if (strncasecmp(s, "nan", 3) == 0 || strncasecmp(s, "inf", 3) == 0)
            return err_set(err, "%s: %s.%s = %s: NaN and infinity are not allowed; write a finite "
                           "number in %s", where, k->section, k->key, config_echo(val, e, sizeof e),
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
                           where, k->section, k->key, config_echo(val, e, sizeof e), hint, range);
        if (errno == ERANGE || !isfinite(v) || !config_key_in_range(k, (double)v))
            return err_set(err, "%s: %s.%s = %s is out of range; write a number in %s", where,
                           k->section, k->key, config_echo(val, e, sizeof e), range);
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
                       "on/off, 1/0)", where, k->section, k->key, config_echo(val, e, sizeof e),
                       hint);
    }
    case T_ENUM:
        for (int i = 0; i < k->n_names; i++)
            if (strcmp(val, k->names[i]) == 0) { *FLD(c, k, int) = i; return STATUS_OK; }
        config_key_names(k, names, sizeof names);
        return err_set(err, "%s: %s.%s = %s is not a valid name%s; write one of: %s", where,
                       k->section, k->key, config_echo(val, e, sizeof e), hint, names);
    case T_STR: {
        if (quoted) {
            if (len < 2 || val[len - 1] != '"')
                return err_set(err, "%s: %s.%s = %s: unterminated quote; end the value with '\"' "
                               "or remove the opening quote", where, k->section, k->key,
                               config_echo(val, e, sizeof e));
            val++;
            len -= 2;
        } else {
            for (size_t i = 1; i < len; i++)
                if ((val[i] == '#' || val[i] == ';') && (val[i - 1] == ' ' || val[i - 1] == '\t'))
                    return err_set(err, "%s: %s.%s = %s looks like it has a trailing comment; "
                                   "comments must be on a line of their own (quote the value if "
                                   "the '%c' belongs to it)", where, k->section, k->key,
                                   config_echo(val, e, sizeof e), val[i]);
        }
        /* checked here, not only per file line, so that --set values obey it too: the value is
         * written into checkpoints by config_to_ini and must load back from there */
        for (size_t i = 0; i < len;) {
            if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f)
                return err_set(err, "%s: %s.%s contains control character 0x%02x; remove it",
                               where, k->section, k->key, (unsigned char)val[i]);
            size_t u = config_utf8_len((const unsigned char *)val + i, len - i);
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
        const KeyDef *k = &config_keys[i];
        CHECK(k->type == T_STR || k->size == type_size[k->type],
              "config table: a key's type does not match its Config field");
        int section = 0;
        while (section < CONFIG_N_SECTIONS && strcmp(k->section, config_sections[section]))
            section++;
        CHECK(section < CONFIG_N_SECTIONS, "config table: section missing from config_sections[]");
        Err err;
        if (config_key_set(c, k, k->def, "default", &err) != STATUS_OK) {
            fprintf(stderr, "%s\n", err.msg);
            CHECK(0, "config table: a default does not parse");
        }
    }
}

