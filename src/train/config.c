/* config.c — the strict INI parser of config files and --set overrides, and config_validate
 * (config.h for the grammar and the rules); the key table and the parsing of one value are in
 * config_keys.c, the renderings in config_render.c. Host memory. Source: — (Marian's
 * one-declaration option table). */
#include "train/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "data/corpus.h" /* CORPUS_SEP */
#include "train/config_keys.h"

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */
static int find_section(const char *s) {
    for (int i = 0; i < CONFIG_N_SECTIONS; i++)
        if (strcmp(s, config_sections[i]) == 0) return i;
    return -1;
}

static const KeyDef *find_key(const char *section, const char *key) {
    for (int i = 0; i < config_n_keys; i++)
        if (strcmp(config_keys[i].section, section) == 0 && strcmp(config_keys[i].key, key) == 0)
            return &config_keys[i];
    return NULL;
}

static void list_keys(const char *section, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < config_n_keys; i++)
        if (strcmp(config_keys[i].section, section) == 0)
            str_appendf(buf, n, "%s%s", buf[0] ? ", " : "", config_keys[i].key);
}

static void list_sections(char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < CONFIG_N_SECTIONS; i++)
        str_appendf(buf, n, "%s[%s]", i ? ", " : "", config_sections[i]);
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
                       "include others (write both to files)", where,
                       config_echo(val, e, sizeof e));
    if (!*val)
        return err_set(err, "%s: include needs a path (include = transformer.ini)", where);
    if (depth + 1 >= MAX_INCLUDE_DEPTH)
        return err_set(err, "%s: include = %s nests %d files deep; is there a cycle (a file that "
                       "includes itself)?", where, config_echo(val, e, sizeof e),
                       MAX_INCLUDE_DEPTH);
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
    int key_line[CONFIG_MAX_KEYS] = {0}, section_line[CONFIG_N_SECTIONS] = {0};
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
            size_t u = config_utf8_len((const unsigned char *)p + i, len - i);
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
                               config_echo(s, e, sizeof e));
            if (*trim(close + 1))
                return err_set(err, "%s: text after the section header: %s; put only [section] "
                               "on the line (comments go on their own line)", where,
                               config_echo(close + 1, e, sizeof e));
            *close = 0;
            char *name = trim(s + 1);
            section = find_section(name);
            list_sections(list, sizeof list);
            if (section < 0)
                return err_set(err, "%s: unknown section [%s]; valid sections: %s", where,
                               config_echo(name, e, sizeof e), list);
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
                           config_echo(s, e, sizeof e));
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
                           config_echo(key, e, sizeof e));
        const KeyDef *k = find_key(config_sections[section], key);
        if (!k) {
            list_keys(config_sections[section], list, sizeof list);
            const char *other = NULL;
            for (int i = 0; i < config_n_keys && !other; i++)
                if (strcmp(config_keys[i].key, key) == 0) other = config_keys[i].section;
            char hint[160] = "";
            if (other) snprintf(hint, sizeof hint, " (%s is a key of [%s])", key, other);
            return err_set(err, "%s: unknown key '%s' in [%s]%s; valid keys: %s", where,
                           config_echo(key, e, sizeof e), config_sections[section], hint, list);
        }
        int ki = (int)(k - config_keys);
        if (depth > 0 && (CFLD(c, k, char) == c->name || CFLD(c, k, char) == c->save_dir))
            return err_set(err, "%s: %s.%s in an included file would give every file that "
                           "includes it the same run folder (one run overwriting another's "
                           "checkpoints); set it in the including file", where, k->section,
                           k->key);
        if (key_line[ki])
            return err_set(err, "%s: duplicate key %s.%s (first at line %d); keep one", where,
                           k->section, k->key, key_line[ki]);
        key_line[ki] = lineno;
        if (config_key_set(c, k, val, where, err) != STATUS_OK) return STATUS_ERR;
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
                       config_echo(assignment, e, sizeof e));
    *eq = 0;
    char *name = trim(buf), *val = trim(eq + 1);
    char *dot = strchr(name, '.');
    char list[1024];
    if (!dot)
        return err_set(err, "--set %s: expected section.key=value (e.g. train.lr=0.001); name the "
                       "section", config_echo(assignment, e, sizeof e));
    *dot = 0;
    const char *sec = name, *key = dot + 1;
    if (find_section(sec) < 0) {
        list_sections(list, sizeof list);
        return err_set(err, "--set %s.%s: unknown section [%s]; valid sections: %s",
                       config_echo(sec, e, sizeof e), config_echo(key, e2, sizeof e2), e, list);
    }
    const KeyDef *k = find_key(sec, key);
    if (!k) {
        list_keys(sec, list, sizeof list);
        return err_set(err, "--set %s.%s: unknown key '%s' in [%s]; valid keys: %s", sec,
                       config_echo(key, e, sizeof e), e, sec, list);
    }
    snprintf(where, sizeof where, "--set %s.%s", k->section, k->key);
    if (config_key_set(c, k, val, where, err) != STATUS_OK) return STATUS_ERR;
    c->given[k - config_keys] = 1;
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
    for (int i = 0; i < config_n_keys; i++) {
        const KeyDef *k = &config_keys[i];
        if (!c->given[i] || config_key_read(c, k)) continue;
        config_key_value(c, k, val, sizeof val);
        switch (k->reads) {
        case R_HEADS: {
            char multi[256] = ""; /* the multi-head kinds, from the attention table */
            for (int kd = 1, n = 0; kd < ATTN_KIND_COUNT; kd++)
                if (attention_row((AttentionKind)kd)->multi_head)
                    str_appendf(multi, sizeof multi, "%s%s", n++ ? ", " : "",
                                attention_kind_names[kd]);
            return err_set(err, "config %s: model.heads = %s is given, but the RNN's attention "
                           "%s has one head (only %s split model.heads); remove the key",
                           c->name, val, attention_kind_names[ms->attention], multi);
        }
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
    for (int i = 0; i < config_n_keys; i++) {
        const KeyDef *k = &config_keys[i];
        bool ok = true;
        switch (k->type) {
        case T_INT: ok = config_key_in_range(k, *CFLD(c, k, int)); break;
        case T_LONG: ok = config_key_in_range(k, (double)*CFLD(c, k, long)); break;
        case T_FLOAT:
            ok = isfinite(*CFLD(c, k, float)) && config_key_in_range(k, *CFLD(c, k, float));
            break;
        case T_BOOL: ok = *CFLD(c, k, int) == 0 || *CFLD(c, k, int) == 1; break;
        case T_ENUM: ok = *CFLD(c, k, int) >= 0 && *CFLD(c, k, int) < k->n_names; break;
        case T_STR: ok = memchr(CFLD(c, k, char), 0, k->size) != NULL; break;
        case T_U64: break;
        }
        if (!ok) {
            config_key_range(k, range, sizeof range);
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
    /* linformer (attention_max_keys): every training source, up to config_example_len, must
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
    /* model.rnn_impl = cudnn: an RNN, on the GPU, in this order, so that each message names the
     * first thing to change (a build without cuDNN: backend_open refuses it, BackendOptions) */
    RULE(ms->rnn_impl != RNN_IMPL_CUDNN || ms->type == MODEL_RNN,
         "config %s: model.rnn_impl = cudnn applies to the RNN's LSTM/GRU layers, but "
         "model.type = %s; set model.rnn_impl = own", nm, model_type_names[ms->type]);
    RULE(ms->rnn_impl != RNN_IMPL_CUDNN || c->device == DEVICE_CUDA,
         "config %s: model.rnn_impl = cudnn needs train.device = cuda (cuDNN runs on the GPU "
         "only); set train.device = cuda, or model.rnn_impl = own", nm);
    /* tf32 on the cpu (bf16 on a CPU or build without it: backend_open refuses it) */
    RULE(backend_precision_valid((int)c->device, (int)c->precision, why, sizeof why),
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


long config_line_bytes(const Config *c) {
    long k = c->concat > 1 ? c->concat : 1;
    return k * c->max_line_bytes + (k - 1) * (long)(strlen(CORPUS_SEP) + 2);
}

int config_example_len(const Config *c) {
    long n = (long)c->concat * c->max_len + 2L * (c->concat - 1);
    return n > 1000000 ? 1000000 : (int)n;
}
