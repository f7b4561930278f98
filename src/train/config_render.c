/* config_render.c — a config as text and the key reference (config.h): config_to_ini and
 * config_drop_unread, the key list of `trainer --help` and the Markdown of `trainer
 * --config-reference`, config_diff, the attention and save folder in words, and backend_open's
 * options. The key table is config_keys.c's. Host memory. Source: —. */
#include "train/config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "train/config_keys.h"

void config_drop_unread(Config *c) {
    for (int i = 0; i < config_n_keys; i++) {
        const KeyDef *k = &config_keys[i];
        Err err;
        if (!config_key_read(c, k))
            CHECK(config_key_set(c, k, k->def, "default", &err) == STATUS_OK,
                  "config table: a default does not parse");
    }
    memset(c->given, 0, sizeof c->given);
}

char *config_to_ini(const Config *c) {
    size_t cap = 4096, len = 0;
    char *out = xmalloc(cap), val[1100];
    out[0] = 0;
    for (int s = 0; s < CONFIG_N_SECTIONS; s++) {
        size_t need = 64;
        for (int i = 0; i < config_n_keys; i++) need += 64 + config_keys[i].size;
        if (len + need > cap) out = xrealloc(out, cap = 2 * (len + need));
        len += (size_t)snprintf(out + len, cap - len, "%s[%s]\n", s ? "\n" : "",
                                config_sections[s]);
        for (int i = 0; i < config_n_keys; i++) {
            const KeyDef *k = &config_keys[i];
            if (strcmp(k->section, config_sections[s]) != 0 || !config_key_read(c, k)) continue;
            config_key_value(c, k, val, sizeof val);
            const char *q = k->type == T_STR ? "\"" : "";
            len += (size_t)snprintf(out + len, cap - len, "%s = %s%s%s\n", k->key, q, val, q);
        }
    }
    return out;
}

/* Who reads a key, in words; R_HEADS lists the multi-head kinds from the attention table (md:
 * the Markdown page, which links docs/attention.md's table of kinds instead). */
static const char *reader_text(KeyReader r, int md) {
    static char heads[256];
    if (r == R_HEADS && md)
        return "transformer; rnn with a multi-head attention ([the kinds](attention.md#the-kinds))";
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
    for (int s = 0; s < CONFIG_N_SECTIONS; s++) {
        fprintf(f, "\n[%s]\n", config_sections[s]);
        for (int i = 0; i < config_n_keys; i++) {
            const KeyDef *k = &config_keys[i];
            if (strcmp(k->section, config_sections[s]) != 0) continue;
            extra[0] = 0;
            if (k->type == T_ENUM) {
                char names[512];
                config_key_names(k, names, sizeof names);
                snprintf(extra, sizeof extra, "; one of: %s", names);
            } else if (k->type == T_INT || k->type == T_LONG || k->type == T_FLOAT) {
                char range[96];
                config_key_range(k, range, sizeof range);
                snprintf(extra, sizeof extra, "; range %s", range);
            }
            char full[64], who[256] = "";
            snprintf(full, sizeof full, "%s.%s", k->section, k->key);
            if (k->reads != R_ALL) snprintf(who, sizeof who, " [%s]", reader_text(k->reads, 0));
            fprintf(f, "  %-25s %-6s default %s%s%s%s\n      %s%s\n", full,
                    config_key_type_names[k->type], k->type == T_STR ? "\"" : "", k->def,
                    k->type == T_STR ? "\"" : "", extra, k->help, who);
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

/* 1 if k's values are the attention table's kinds after its first name (none, or same). */
static int attention_kind_key(const KeyDef *k) {
    if (k->type != T_ENUM || k->n_names != ATTN_KIND_COUNT) return 0;
    for (int i = 1; i < ATTN_KIND_COUNT; i++)
        if (strcmp(k->names[i], attention_kind_names[i]) != 0) return 0;
    return 1;
}

void config_print_markdown(FILE *f) {
    fprintf(f, "# Configuration keys\n\n"
               "Every key of a config file, generated by `trainer --config-reference` from the "
               "trainer's key table (`src/train/config_keys.c`); the CTest test `config_reference` "
               "fails when this page and the table disagree. A config is an INI file: "
               "`[section]` headers, `key = value` lines, full-line `#` or `;` comments, string "
               "values optionally in double quotes. A file may begin with `include = FILE` "
               "(relative to its folder): FILE's keys load first, then this file's. "
               "`--set section.key=value` overrides a key on the command line. Everything else "
               "is an error naming the file and line: an unknown section or key, a repeated "
               "key, a value out of its range, and a key given to a model that does not read it "
               "(the column \"read by\"). `trainer --help` prints the same table as text.\n");
    for (int s = 0; s < CONFIG_N_SECTIONS; s++) {
        fprintf(f, "\n## [%s]\n\n| key | type | default | values | read by | meaning |\n"
                   "|---|---|---|---|---|---|\n", config_sections[s]);
        for (int i = 0; i < config_n_keys; i++) {
            const KeyDef *k = &config_keys[i];
            if (strcmp(k->section, config_sections[s]) != 0) continue;
            char values[600] = "";
            if (attention_kind_key(k))
                snprintf(values, sizeof values, "%s, or a kind of the attention table ([the "
                         "kinds](attention.md#the-kinds); `trainer --help` lists them)",
                         k->names[0]);
            else if (k->type == T_ENUM) config_key_names(k, values, sizeof values);
            else if (k->type != T_STR && k->type != T_BOOL)
                config_key_range(k, values, sizeof values);
            else if (k->type == T_BOOL) snprintf(values, sizeof values, "true, false");
            fprintf(f, "| `%s.%s` | %s | `%s` | ", k->section, k->key,
                    config_key_type_names[k->type], k->def[0] ? k->def : "\"\"");
            md_cell(f, values);
            fprintf(f, " | %s | ", reader_text(k->reads, 1));
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

int config_diff(const Config *a, const Config *b, char *buf, size_t n) {
    int count = 0;
    char va[1100], vb[1100];
    if (buf && n) buf[0] = 0;
    for (int i = 0; i < config_n_keys; i++) {
        const KeyDef *k = &config_keys[i];
        bool same = k->type == T_STR ? strcmp(CFLD(a, k, char), CFLD(b, k, char)) == 0
                                     : memcmp(CFLD(a, k, char), CFLD(b, k, char), k->size) == 0;
        if (same) continue;
        count++;
        if (buf && n) {
            config_key_value(a, k, va, sizeof va);
            config_key_value(b, k, vb, sizeof vb);
            str_appendf(buf, n, "%s%s.%s: %s -> %s", count > 1 ? "; " : "", k->section, k->key,
                        va, vb);
        }
    }
    return count;
}

int config_diff_trained(const Config *a, const Config *b, char *buf, size_t n) {
    Config *x = xmalloc(sizeof *x), *y = xmalloc(sizeof *y);
    *x = *a, *y = *b;
    Config *c[2] = {x, y};
    for (int i = 0; i < 2; i++) {
        memset(c[i]->name, 0, sizeof c[i]->name);
        memset(c[i]->save_dir, 0, sizeof c[i]->save_dir);
        memset(c[i]->cache_dir, 0, sizeof c[i]->cache_dir);
        memset(c[i]->spm_model, 0, sizeof c[i]->spm_model);
        c[i]->seed = 0, c[i]->threads = 0, c[i]->device = DEVICE_CPU, c[i]->log_every = 1;
        c[i]->save_every = 0, c[i]->max_nonfinite = 1, c[i]->dist_timeout = 0;
        c[i]->dist_overlap = 0, c[i]->dist_bucket_mb = 1;
    }
    int k = config_diff(x, y, buf, n);
    free(x), free(y);
    return k;
}

int config_diff_resume(const Config *start, const Config *now, char *buf, size_t n) {
    Config *c = xmalloc(sizeof *c);
    *c = *start; /* the keys that may change on resume, from now */
    c->max_epochs = now->max_epochs, c->max_steps = now->max_steps, c->patience = now->patience;
    c->max_hours = now->max_hours;
    c->log_every = now->log_every, c->save_every = now->save_every, c->threads = now->threads;
    c->val_max_sentences = now->val_max_sentences, c->device = now->device;
    c->max_nonfinite = now->max_nonfinite, c->dist_timeout = now->dist_timeout;
    c->dist_overlap = now->dist_overlap, c->dist_bucket_mb = now->dist_bucket_mb;
    c->keep_checkpoints = now->keep_checkpoints, c->average_last = now->average_last;
    snprintf(c->save_dir, sizeof c->save_dir, "%s", now->save_dir);
    if (!now->init_from_crc[0]) memset(c->init_from_crc, 0, sizeof c->init_from_crc);
    int k = config_diff(c, now, buf, n);
    free(c);
    return k;
}

BackendOptions config_backend_options(const Config *c) {
    return (BackendOptions){.device = (int)c->device, .precision = (int)c->precision,
                            .threads = c->threads, .ordinal = BACKEND_KEEP,
                            .rnn_cudnn = c->model.rnn_impl == RNN_IMPL_CUDNN};
}
