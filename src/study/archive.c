/* archive.c — a run's archive, written from its run folder and read back (archive.h). */
#include "study/archive.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/machine.h"
#include "core/revision.h"
#include "data/corpus.h"
#include "data/spm.h"
#include "eval/metrics.h"
#include "train/checkpoint.h"

#define FORMAT 1

int archive_is(const char *dir) {
    char p[1100];
    snprintf(p, sizeof p, "%s/run.json", dir);
    return path_is_file(p);
}

void archive_test_name(const char *tgt, char *buf, size_t n) {
    const char *base = strrchr(tgt, '/');
    base = base ? base + 1 : tgt;
    snprintf(buf, n, "%s", base);
    size_t len = strlen(buf);
    if (len > 3 && !strcmp(buf + len - 3, ".gz")) buf[len -= 3] = 0;
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = 0;
    for (char *p = buf; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-')) *p = '_';
    if (!buf[0]) snprintf(buf, n, "test");
}

const ArchiveTest *archive_test(const Archive *a, const char *name) {
    for (int i = 0; i < a->ntests; i++)
        if (!strcmp(a->tests[i].name, name)) return &a->tests[i];
    return NULL;
}

/* ---- files ---- */

/* The lines of text (n bytes, '\n' separated; a last line without '\n' counts, a trailing '\n'
 * ends the last line) as malloc'd strings; *count their number. */
static char **split_lines(const char *text, size_t n, long *count) {
    long cap = 1;
    for (size_t i = 0; i < n; i++) cap += text[i] == '\n';
    char **lines = xcalloc((size_t)cap, sizeof *lines);
    long k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && text[i] != '\n') continue;
        if (i == n && start == n) break; /* nothing after the last '\n' */
        size_t len = i - start;
        lines[k] = xmalloc(len + 1);
        memcpy(lines[k], text + start, len);
        lines[k][len] = 0;
        k++;
        start = i + 1;
    }
    *count = k;
    return lines;
}

/* The whole file as a malloc'd NUL-terminated string (*n bytes, may be NULL). */
static Status read_text(const char *path, char **out, size_t *n, Err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(err, "%s: cannot read: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) buf = xrealloc(buf, cap *= 2);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return err_set(err, "%s: read error", path);
    }
    buf[len] = 0;
    *out = buf;
    if (n) *n = len;
    return STATUS_OK;
}

static Status read_lines(const char *path, char ***lines, long *count, Err *err) {
    char *text;
    size_t n;
    if (read_text(path, &text, &n, err)) return STATUS_ERR;
    *lines = split_lines(text, n, count);
    free(text);
    return STATUS_OK;
}

static Status write_lines(const char *path, char *const *lines, long n, Err *err) {
    size_t total = 1;
    for (long i = 0; i < n; i++) total += strlen(lines[i]) + 1;
    char *buf = xmalloc(total), *p = buf;
    for (long i = 0; i < n; i++) {
        size_t l = strlen(lines[i]);
        memcpy(p, lines[i], l);
        p += l;
        *p++ = '\n';
    }
    Status s = write_file_atomic(path, buf, (size_t)(p - buf), err);
    free(buf);
    return s;
}

static Status write_text(const char *path, const char *text, Err *err) {
    return write_file_atomic(path, text, strlen(text), err);
}

/* Removes the archive in dir (its known files and test/); anything else there is refused. */
static Status remove_archive(const char *dir, Err *err) {
    static const char *const files[] = {"run.json", "config.ini", "metrics.jsonl",
                                        "attention.json"};
    char p[1200];
    snprintf(p, sizeof p, "%s/test", dir);
    DIR *d = opendir(p);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/test/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    snprintf(p, sizeof p, "%s/test", dir);
    rmdir(p);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    if (rmdir(dir) != 0)
        return err_set(err, "%s: cannot replace this folder (%s): it holds files that are not an "
                       "archive's; choose another output folder", dir, strerror(errno));
    return STATUS_OK;
}

/* Removes the <out_dir>.tmp.<pid> folders that a killed archiving process left beside out_dir
 * (temp_path_for's name, temp_name_stale); one that holds files other than an archive's is
 * left, with a warning. */
static void remove_stale_temps(const char *out_dir) {
    char parent[1100];
    const char *slash = strrchr(out_dir, '/'), *stem = slash ? slash + 1 : out_dir;
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - out_dir) : 1,
             slash ? out_dir : ".");
    if (!parent[0]) snprintf(parent, sizeof parent, "/");
    DIR *d = opendir(parent);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!temp_name_stale(e->d_name, stem)) continue;
        char p[1400];
        Err err;
        snprintf(p, sizeof p, "%s/%s", parent, e->d_name);
        if (remove_archive(p, &err) == STATUS_OK)
            fprintf(stderr, "removed %s, left by an interrupted archive\n", p);
        else
            fprintf(stderr, "warning: %s\n", err.msg);
    }
    if (d) closedir(d);
}

/* ---- writing ---- */

/* The checkpoint to score in run_dir into name ("avg.ckpt", "best.ckpt" or "last.ckpt") and its
 * validation BLEU (NaN for last.ckpt). Errors: none of the three exists. */
static Status pick_checkpoint(const char *run_dir, const RunLog *log, char *name, size_t n,
                              double *val_bleu, Err *err) {
    char p[1200];
    double best = runlog_best_bleu(log, NULL);
    snprintf(p, sizeof p, "%s/avg.ckpt", run_dir);
    int avg = path_is_file(p) && log->has_avg && (log->avg.val_bleu >= best || log->nval == 0);
    snprintf(p, sizeof p, "%s/best.ckpt", run_dir);
    int has_best = path_is_file(p) && log->nval > 0;
    snprintf(p, sizeof p, "%s/last.ckpt", run_dir);
    int has_last = path_is_file(p);
    if (avg) snprintf(name, n, "avg.ckpt"), *val_bleu = log->avg.val_bleu;
    else if (has_best) snprintf(name, n, "best.ckpt"), *val_bleu = best;
    else if (has_last) snprintf(name, n, "last.ckpt"), *val_bleu = NAN;
    else
        return err_set(err, "%s has no best.ckpt, avg.ckpt or last.ckpt; give the folder of a "
                       "trained run (its train.save_dir)", run_dir);
    return STATUS_OK;
}

/* Adds a number that may be NaN (written as null). */
static void add_num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static cJSON *strings(char *const *s, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(s[i]));
    return a;
}

/* attention.json of the maps of test set t's sentences (greedy). */
static Status write_maps(const char *path, Model *m, const Spm *spm, const Corpus *c,
                         const char *test, const ArchiveOpts *o, Err *err) {
    const char *lines[ARCHIVE_MAX_MAPS];
    int idx[ARCHIVE_MAX_MAPS], n = 0;
    for (int k = 0; k < o->nsentences && n < ARCHIVE_MAX_MAPS; k++)
        if (o->sentences[k] >= 0 && o->sentences[k] < c->n)
            idx[n] = o->sentences[k], lines[n++] = c->src[o->sentences[k]];
    AttnMap maps[ARCHIVE_MAX_MAPS];
    memset(maps, 0, sizeof maps);
    char **out = NULL;
    DecodeOpts greedy = {.beam = 1, .len_penalty = 0.0f};
    Status s = STATUS_OK;
    if (n && translate_lines(m, spm, lines, n, &greedy, &out, maps, err))
        return err_prefix(err, "attention maps");
    cJSON *arr = cJSON_CreateArray();
    for (int k = 0; k < n; k++) {
        const AttnMap *a = &maps[k];
        cJSON *o1 = cJSON_CreateObject(), *w = cJSON_CreateArray();
        cJSON_AddStringToObject(o1, "test", test);
        cJSON_AddNumberToObject(o1, "sentence", idx[k]);
        cJSON_AddItemToObject(o1, "src", strings(a->src, a->S));
        cJSON_AddItemToObject(o1, "tgt", strings(a->tgt, a->T));
        for (int t = 0; t < a->T; t++) {
            cJSON *row = cJSON_CreateArray();
            for (int s2 = 0; s2 < a->S; s2++)
                cJSON_AddItemToArray(row, cJSON_CreateNumber(
                                              round((double)a->w[(size_t)t * a->S + s2] * 1e4) /
                                              1e4));
            cJSON_AddItemToArray(w, row);
        }
        cJSON_AddItemToObject(o1, "weights", w);
        cJSON_AddItemToArray(arr, o1);
    }
    char *text = cJSON_Print(arr);
    s = write_text(path, text, err);
    cJSON_free(text);
    cJSON_Delete(arr);
    for (int k = 0; k < n; k++) attn_map_free(&maps[k]);
    free_lines(out, n);
    return s;
}

/* 1 when a binary of revision rev was built from a tree with uncommitted changes (`git describe
 * --dirty` appends "-dirty"; core/revision.h). */
static int revision_dirty(const char *rev) {
    size_t n = strlen(rev);
    return n >= 6 && !strcmp(rev + n - 6, "-dirty");
}

/* 1 when a start of the run in log was built from a tree with uncommitted changes. */
static int starts_dirty(const RunLog *log) {
    for (int i = 0; i < log->nstarts; i++)
        if (revision_dirty(log->starts[i].revision)) return 1;
    return 0;
}

/* The card's "trained_on": the run's start lines. */
static cJSON *trained_on(const RunLog *log) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < log->nstarts; i++) {
        const RunStart *s = &log->starts[i];
        cJSON *o = cJSON_CreateObject();
        runlog_add_start_fields(o, s);
        cJSON_AddNumberToObject(o, "epoch", s->epoch);
        cJSON_AddNumberToObject(o, "step", (double)s->step);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* Decodes test set spec (greedy and beam) into tmp/test/NAME.*, its card entry into tests. */
static Status archive_test_set(const char *tmp, Model *m, const Spm *spm, const Config *cfg,
                               const ArchiveTestSpec *spec, const ArchiveOpts *o, int first,
                               cJSON *tests, Err *err) {
    Corpus c = {0};
    char name[128], p[1400];
    char **greedy = NULL, **beam = NULL, **greedy_doc = NULL, **beam_doc = NULL;
    JoinedScore jg = {0}, jb = {0};
    Status rc = STATUS_ERR;
    if (spec->name) snprintf(name, sizeof name, "%s", spec->name);
    else archive_test_name(spec->tgt, name, sizeof name);
    if (corpus_load(&c, spec->src, spec->tgt, cfg->max_line_bytes, err)) {
        err_prefix(err, "test set %s", name);
        goto done;
    }
    long nsent = c.n; /* sentences, before data.concat joins them */
    if (corpus_concat(&c, cfg->concat, err)) {
        err_prefix(err, "test set %s", name);
        goto done;
    }
    DecodeOpts g = {.beam = 1, .len_penalty = 0.0f};
    double t0 = now_seconds();
    if (translate_lines(m, spm, (const char *const *)c.src, c.n, &g, &greedy, NULL, err) ||
        (o->beam.beam > 1 &&
         translate_lines(m, spm, (const char *const *)c.src, c.n, &o->beam, &beam, NULL, err))) {
        err_prefix(err, "translating test set %s (%s)", name, spec->src);
        goto done;
    }
    char **bh = o->beam.beam > 1 ? beam : greedy; /* K = 1 is greedy decoding (decode.h) */
    /* joined examples (data.concat): documents without the separators are archived and
     * scored; the sentences of those that split right give a sentence BLEU */
    char **ref = c.tgt;
    if (cfg->concat > 1) {
        char **refs[1] = {c.tgt};
        metrics_joined_score(&jg, greedy, refs, 1, c.n, cfg->concat, nsent);
        metrics_joined_score(&jb, bh, refs, 1, c.n, cfg->concat, nsent);
        greedy_doc = jg.doc_hyp, beam_doc = jb.doc_hyp, ref = jg.doc_ref[0];
    }
    char **gh = cfg->concat > 1 ? greedy_doc : greedy, **bd = cfg->concat > 1 ? beam_doc : bh;
    const char *const *rf = (const char *const *)ref;
    double bg = bleu_corpus((const char *const *)gh, rf, c.n).score;
    double cg = chrf_corpus((const char *const *)gh, rf, c.n);
    double bb = bleu_corpus((const char *const *)bd, rf, c.n).score;
    double cb = chrf_corpus((const char *const *)bd, rf, c.n);
    fprintf(stderr, "  %s: %ld %s, BLEU %.2f greedy, %.2f beam %d (%.1f s)\n", name, c.n,
            cfg->concat > 1 ? "documents" : "sentences", bg, bb, o->beam.beam,
            now_seconds() - t0);
    snprintf(p, sizeof p, "%s/test/%s.ref", tmp, name);
    if (write_lines(p, ref, c.n, err)) goto done;
    snprintf(p, sizeof p, "%s/test/%s.greedy", tmp, name);
    if (write_lines(p, gh, c.n, err)) goto done;
    snprintf(p, sizeof p, "%s/test/%s.beam%d", tmp, name, o->beam.beam);
    if (write_lines(p, bd, c.n, err)) goto done;
    if (first && model_has_attention(m) && o->nsentences > 0) {
        snprintf(p, sizeof p, "%s/attention.json", tmp);
        if (write_maps(p, m, spm, &c, name, o, err)) goto done;
    }
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddStringToObject(t, "src", spec->src);
    cJSON_AddStringToObject(t, "tgt", spec->tgt);
    cJSON_AddNumberToObject(t, "sentences", (double)c.n);
    cJSON_AddNumberToObject(t, "bleu_greedy", round(bg * 1e4) / 1e4);
    cJSON_AddNumberToObject(t, "chrf_greedy", round(cg * 1e4) / 1e4);
    cJSON_AddNumberToObject(t, "bleu_beam", round(bb * 1e4) / 1e4);
    cJSON_AddNumberToObject(t, "chrf_beam", round(cb * 1e4) / 1e4);
    if (cfg->concat > 1) { /* the lines are documents of data.concat sentences */
        cJSON_AddNumberToObject(t, "concat", cfg->concat);
        cJSON_AddNumberToObject(t, "lines", (double)nsent);
        const JoinedScore *js[2] = {&jg, &jb};
        const char *key[2][2] = {{"bleu_split_greedy", "split_mismatches_greedy"},
                                 {"bleu_split_beam", "split_mismatches_beam"}};
        for (int i = 0; i < 2; i++) {
            if (js[i]->nsplit)
                cJSON_AddNumberToObject(t, key[i][0], round(js[i]->split.score * 1e4) / 1e4);
            else
                cJSON_AddNullToObject(t, key[i][0]);
            cJSON_AddNumberToObject(t, key[i][1], (double)js[i]->mismatches);
        }
    }
    cJSON_AddItemToArray(tests, t);
    rc = STATUS_OK;
done:
    metrics_joined_free(&jg, 1, c.n);
    metrics_joined_free(&jb, 1, c.n);
    free_lines(greedy, c.n);
    free_lines(beam, c.n);
    corpus_free(&c);
    return rc;
}

/* The card, without its "tests" (the caller adds them). */
static cJSON *card(const Config *cfg, const RunLog *log, const Model *m, const char *ckpt,
                   double ckpt_bleu, uint64_t spm_hash, const ArchiveOpts *o) {
    char attn[64], cpu[256], now[32], hash[24];
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "format", FORMAT);
    cJSON_AddStringToObject(c, "name", o->name ? o->name : cfg->name);
    cJSON_AddStringToObject(c, "config", o->config_file ? o->config_file : "");
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)cfg->seed);
    cJSON_AddStringToObject(c, "seed", seed); /* 64-bit: a string, exact */
    cJSON_AddStringToObject(c, "model", model_type_names[cfg->model.type]);
    cJSON_AddStringToObject(c, "attention", config_attention_text(cfg, attn, sizeof attn));
    cJSON_AddNumberToObject(c, "parameters", (double)m->ps.total);
    cJSON_AddStringToObject(c, "precision", precision_names[cfg->precision]);
    cJSON_AddStringToObject(c, "checkpoint", ckpt);
    add_num(c, "checkpoint_val_bleu", ckpt_bleu);
    int epochs = 0;
    for (int i = 0; i < log->nval; i++)
        if (log->val[i].epoch > epochs) epochs = log->val[i].epoch;
    cJSON_AddNumberToObject(c, "epochs", epochs);
    cJSON_AddNumberToObject(c, "steps", (double)log->last_step);
    double secs = log->nval ? log->val[log->nval - 1].elapsed : NAN, peak = NAN;
    for (int i = 0; i < log->nval; i++)
        if (isfinite(log->val[i].peak_mib) && !(log->val[i].peak_mib <= peak))
            peak = log->val[i].peak_mib;
    add_num(c, "training_seconds", secs);
    add_num(c, "tokens_per_second", isfinite(log->tok_s) ? round(log->tok_s * 10) / 10 : NAN);
    add_num(c, "peak_memory_mib", peak);
    cJSON_AddItemToObject(c, "trained_on", trained_on(log));
    cJSON_AddBoolToObject(c, "uncommitted_changes", starts_dirty(log));
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)spm_hash);
    cJSON_AddStringToObject(c, "spm_hash", hash);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "time", machine_utc_now(now, sizeof now));
    cJSON_AddStringToObject(a, "revision", trainer_revision());
    cJSON_AddStringToObject(a, "cpu", machine_cpu(cpu, sizeof cpu));
    cJSON_AddItemToObject(c, "archived", a);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "beam", o->beam.beam);
    cJSON_AddNumberToObject(d, "len_penalty", (double)o->beam.len_penalty);
    cJSON_AddStringToObject(d, "max_length", "2S+10");
    cJSON_AddItemToObject(c, "decoding", d);
    return c;
}

static Status copy_file(const char *from, const char *to, Err *err) {
    char *text;
    size_t n;
    if (read_text(from, &text, &n, err)) return STATUS_ERR;
    Status s = write_file_atomic(to, text, n, err);
    free(text);
    return s;
}

Status archive_run(const char *run_dir, const char *out_dir, const ArchiveOpts *o, Err *err) {
    Status rc = STATUS_ERR;
    RunLog log;
    Model m = {0};
    Config cfg;
    Spm *spm = NULL;
    cJSON *c = NULL;
    char p[1200], ckpt[16];
    double ckpt_bleu;
    uint64_t hash = 0;
    CHECK(o && o->beam.beam >= 1 && o->ntests >= 0 && o->ntests <= ARCHIVE_MAX_TESTS,
          "archive_run: bad options");
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    if (runlog_read(p, &log, err)) return STATUS_ERR;
    char *tmp = temp_path_for(out_dir); /* the archive is written here, then renamed */
    if (pick_checkpoint(run_dir, &log, ckpt, sizeof ckpt, &ckpt_bleu, err)) goto done;
    if (path_is_dir(out_dir) && !archive_is(out_dir)) {
        DIR *d = opendir(out_dir);
        struct dirent *e;
        int empty = 1;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
        if (d) closedir(d);
        if (!empty) {
            err_set(err, "%s exists and is not an archive; choose another output folder",
                    out_dir);
            goto done;
        }
    }
    snprintf(p, sizeof p, "%s/%s", run_dir, ckpt);
    fprintf(stderr, "archiving %s (%s) into %s\n", run_dir, ckpt, out_dir);
    if (checkpoint_load_weights(p, &m, &cfg, &spm, o->device, err)) goto done;
    if (spm_hash(spm, &hash, err)) {
        err_prefix(err, "%s", p);
        goto done;
    }
    /* the checkpoint's backend with the archive's threads; the products keep the process's
     * precision (a run trained in this process left its own) */
    BackendOptions bo = config_backend_options(&cfg);
    bo.precision = BACKEND_KEEP;
    if (o->threads > 0) bo.threads = o->threads;
    const Backend *be;
    if (backend_open(&bo, &be, NULL, 0, err)) goto done;
    remove_stale_temps(out_dir);
    snprintf(p, sizeof p, "%s/test", tmp);
    if (make_dirs(p, err)) goto done;
    ArchiveTestSpec own = {NULL, cfg.test_src, cfg.test_tgt};
    const ArchiveTestSpec *specs = o->ntests ? o->tests : &own;
    int nspecs = o->ntests ? o->ntests : 1;
    if (!o->ntests && (!cfg.test_src[0] || !cfg.test_tgt[0])) {
        err_set(err, "%s: the run's config has no test set (data.test_src, data.test_tgt); name "
                "one to translate", run_dir);
        goto done;
    }
    c = card(&cfg, &log, &m, ckpt, ckpt_bleu, hash, o);
    cJSON *tests = cJSON_AddArrayToObject(c, "tests");
    for (int i = 0; i < nspecs; i++) {
        for (int j = 0; j < i; j++) {
            char a[128], b[128];
            if (specs[i].name) snprintf(a, sizeof a, "%s", specs[i].name);
            else archive_test_name(specs[i].tgt, a, sizeof a);
            if (specs[j].name) snprintf(b, sizeof b, "%s", specs[j].name);
            else archive_test_name(specs[j].tgt, b, sizeof b);
            if (!strcmp(a, b)) {
                err_set(err, "two test sets are called %s (%s and %s); name them apart", a,
                        specs[j].tgt, specs[i].tgt);
                goto done;
            }
        }
        if (archive_test_set(tmp, &m, spm, &cfg, &specs[i], o, i == 0, tests, err)) goto done;
    }
    char *ini = config_to_ini(&cfg);
    snprintf(p, sizeof p, "%s/config.ini", tmp);
    Status s = write_text(p, ini, err);
    free(ini);
    if (s) goto done;
    char from[1200];
    snprintf(from, sizeof from, "%s/metrics.jsonl", run_dir);
    snprintf(p, sizeof p, "%s/metrics.jsonl", tmp);
    if (copy_file(from, p, err)) goto done;
    char *text = cJSON_Print(c);
    snprintf(p, sizeof p, "%s/run.json", tmp);
    s = write_text(p, text, err);
    cJSON_free(text);
    if (s) goto done;
    if (path_is_dir(out_dir) && remove_archive(out_dir, err)) goto done;
    if (rename(tmp, out_dir) != 0) {
        err_set(err, "cannot rename %s to %s: %s", tmp, out_dir, strerror(errno));
        goto done;
    }
    fsync_parent_dir(out_dir);
    rc = STATUS_OK;
done:
    if (rc && path_is_dir(tmp)) {
        Err e2;
        remove_archive(tmp, &e2);
    }
    free(tmp);
    cJSON_Delete(c);
    runlog_free(&log);
    if (m.rnn || m.tf) model_free(&m);
    spm_free(spm);
    return rc;
}

/* ---- reading ---- */

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* An array of strings into n malloc'd strings (*out); 0 when it is not one. */
static int jstrings(const cJSON *a, char ***out, int *n) {
    if (!cJSON_IsArray(a)) return 0;
    *n = cJSON_GetArraySize(a);
    *out = xcalloc((size_t)(*n > 0 ? *n : 1), sizeof **out);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        if (!cJSON_IsString(v)) return 0;
        (*out)[i++] = xstrdup(v->valuestring);
    }
    return 1;
}

/* The card c's "spm_hash" (read from path) into *known and *hash; absent: unknown. */
static Status card_spm_hash(const cJSON *c, const char *path, int *known, uint64_t *hash,
                            Err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "spm_hash");
    *known = 0, *hash = 0;
    if (!v) return STATUS_OK;
    const char *h = cJSON_IsString(v) ? v->valuestring : NULL;
    int ok = h && strlen(h) == 16;
    for (int i = 0; ok && i < 16; i++) ok = isxdigit((unsigned char)h[i]) != 0;
    if (!ok)
        return err_set(err, "%s: \"spm_hash\" is not 16 hex digits; archive the run again (or "
                       "remove the key: the model is then unknown)", path);
    *hash = strtoull(h, NULL, 16), *known = 1;
    return STATUS_OK;
}

static Status read_maps(Archive *a, Err *err) {
    char p[1200], *text;
    snprintf(p, sizeof p, "%s/attention.json", a->dir);
    if (!path_is_file(p)) return STATUS_OK;
    if (read_text(p, &text, NULL, err)) return STATUS_ERR;
    cJSON *arr = cJSON_Parse(text);
    free(text);
    Status rc = STATUS_ERR;
    if (!cJSON_IsArray(arr)) {
        err_set(err, "%s: not a JSON array of maps; archive the run again", p);
        goto done;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        if (a->nmaps == ARCHIVE_MAX_MAPS) break;
        ArchiveMap *m = &a->maps[a->nmaps];
        const char *t = jstr(o, "test");
        double s = jnum(o, "sentence");
        int S = 0, T = 0;
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "weights");
        if (!t || !isfinite(s) ||
            !jstrings(cJSON_GetObjectItemCaseSensitive(o, "src"), &m->map.src, &S) ||
            !jstrings(cJSON_GetObjectItemCaseSensitive(o, "tgt"), &m->map.tgt, &T) ||
            !cJSON_IsArray(w) || cJSON_GetArraySize(w) != T || S < 1 || T < 1) {
            m->map.S = S, m->map.T = T;
            a->nmaps++; /* freed with the archive */
            err_set(err, "%s: map %d is malformed (test, sentence, src, tgt, weights[T][S]); "
                    "archive the run again", p, a->nmaps);
            goto done;
        }
        snprintf(m->test, sizeof m->test, "%s", t);
        m->sentence = (int)s;
        m->map.S = S, m->map.T = T;
        m->map.w = xcalloc((size_t)S * (size_t)T, sizeof *m->map.w);
        a->nmaps++;
        int r = 0;
        const cJSON *row;
        cJSON_ArrayForEach(row, w) {
            if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != S) {
                err_set(err, "%s: map %d: weight row %d does not have %d columns", p, a->nmaps,
                        r, S);
                goto done;
            }
            int k = 0;
            const cJSON *x;
            cJSON_ArrayForEach(x, row) m->map.w[(size_t)r * S + k++] = (float)x->valuedouble;
            r++;
        }
    }
    rc = STATUS_OK;
done:
    cJSON_Delete(arr);
    return rc;
}

static Status read_test(Archive *a, const cJSON *t, Err *err) {
    ArchiveTest *x = &a->tests[a->ntests];
    const char *name = jstr(t, "name"), *src = jstr(t, "src"), *tgt = jstr(t, "tgt");
    char p[1400];
    if (!name || !src || !tgt)
        return err_set(err, "%s/run.json: a test set lacks name, src or tgt; archive the run "
                       "again", a->dir);
    a->ntests++;
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(x->src, sizeof x->src, "%s", src);
    snprintf(x->tgt, sizeof x->tgt, "%s", tgt);
    long n[3] = {0, 0, 0};
    char **lines[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        if (k == 0) snprintf(p, sizeof p, "%s/test/%s.ref", a->dir, name);
        else if (k == 1) snprintf(p, sizeof p, "%s/test/%s.greedy", a->dir, name);
        else snprintf(p, sizeof p, "%s/test/%s.beam%d", a->dir, name, a->beam.beam);
        if (read_lines(p, &lines[k], &n[k], err)) break;
    }
    if (!lines[2] || n[1] != n[0] || n[2] != n[0]) {
        if (lines[2])
            err_set(err, "archive %s, test set %s: %ld references, %ld greedy and %ld beam "
                    "translations; the files must have one line per sentence", a->dir, name,
                    n[0], n[1], n[2]);
        else
            err_prefix(err, "archive %s, test set %s", a->dir, name);
        for (int k = 0; k < 3; k++) free_lines(lines[k], n[k]);
        return STATUS_ERR;
    }
    x->ref = lines[0], x->greedy = lines[1], x->beam = lines[2], x->n = n[0];
    const char *const *ref = (const char *const *)x->ref;
    x->bleu_g = bleu_corpus((const char *const *)x->greedy, ref, x->n).score;
    x->chrf_g = chrf_corpus((const char *const *)x->greedy, ref, x->n);
    x->bleu_b = bleu_corpus((const char *const *)x->beam, ref, x->n).score;
    x->chrf_b = chrf_corpus((const char *const *)x->beam, ref, x->n);
    double k = jnum(t, "concat"), mis = jnum(t, "split_mismatches_beam");
    x->concat = isfinite(k) && k >= 2 ? (int)k : 1;
    x->split_mismatch_b = x->concat > 1 && isfinite(mis) && mis >= 0 ? (long)mis : -1;
    x->split_bleu_b = x->concat > 1 ? jnum(t, "bleu_split_beam") : NAN;
    return STATUS_OK;
}

Status archive_read(const char *dir, Archive *a, Err *err) {
    memset(a, 0, sizeof *a);
    snprintf(a->dir, sizeof a->dir, "%s", dir);
    char p[1200], *text = NULL;
    snprintf(p, sizeof p, "%s/run.json", dir);
    if (read_text(p, &text, NULL, err))
        return err_prefix(err, "%s is not an archive (written by `trainer archive`)", dir);
    cJSON *c = cJSON_Parse(text);
    free(text);
    Status rc = STATUS_ERR;
    const char *name = jstr(c, "name"), *ck = jstr(c, "checkpoint");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(c, "decoding");
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(c, "tests");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(c, "archived");
    if (!cJSON_IsObject(c) || jnum(c, "format") != FORMAT || !name || !ck ||
        !isfinite(jnum(dec, "beam")) || !cJSON_IsArray(tests)) {
        err_set(err, "%s: not a run card of format %d (name, checkpoint, decoding, tests); "
                "archive the run again with this trainer", p, FORMAT);
        goto done;
    }
    snprintf(a->name, sizeof a->name, "%s", name);
    const char *cf = jstr(c, "config");
    snprintf(a->config_file, sizeof a->config_file, "%s", cf ? cf : "");
    snprintf(a->checkpoint, sizeof a->checkpoint, "%s", ck);
    a->checkpoint_val_bleu = jnum(c, "checkpoint_val_bleu");
    a->params = (long)jnum(c, "parameters");
    a->beam = (DecodeOpts){.beam = (int)jnum(dec, "beam"),
                           .len_penalty = (float)jnum(dec, "len_penalty")};
    snprintf(a->archived_time, sizeof a->archived_time, "%s",
             jstr(arch, "time") ? jstr(arch, "time") : "");
    snprintf(a->archived_revision, sizeof a->archived_revision, "%s",
             jstr(arch, "revision") ? jstr(arch, "revision") : "");
    snprintf(a->archived_cpu, sizeof a->archived_cpu, "%s",
             jstr(arch, "cpu") ? jstr(arch, "cpu") : "");
    if (card_spm_hash(c, p, &a->spm_hash_known, &a->spm_hash, err)) goto done;
    const cJSON *dirty = cJSON_GetObjectItemCaseSensitive(c, "uncommitted_changes");
    if (dirty && !cJSON_IsBool(dirty)) {
        err_set(err, "%s: \"uncommitted_changes\" is not true or false; archive the run again",
                p);
        goto done;
    }
    snprintf(p, sizeof p, "%s/config.ini", dir);
    if (read_text(p, &text, NULL, err)) goto done;
    Status s = config_load_string(&a->cfg, text, p, err);
    free(text);
    if (s) goto done;
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    if (runlog_read(p, &a->log, err)) goto done;
    /* cards without the key: from the start lines (the same as the card's "trained_on") */
    a->uncommitted_changes = dirty ? cJSON_IsTrue(dirty) : starts_dirty(&a->log);
    const cJSON *t;
    cJSON_ArrayForEach(t, tests) {
        if (a->ntests == ARCHIVE_MAX_TESTS) break;
        if (read_test(a, t, err)) goto done;
    }
    if (read_maps(a, err)) goto done;
    rc = STATUS_OK;
done:
    cJSON_Delete(c);
    return rc;
}

Status archive_spm_hash(const char *dir, int *known, uint64_t *hash, Err *err) {
    char p[1200], *text;
    *known = 0, *hash = 0;
    snprintf(p, sizeof p, "%s/run.json", dir);
    if (read_text(p, &text, NULL, err))
        return err_prefix(err, "%s is not an archive (written by `trainer archive`)", dir);
    cJSON *c = cJSON_Parse(text);
    free(text);
    Status rc = cJSON_IsObject(c) ? card_spm_hash(c, p, known, hash, err)
                                  : err_set(err, "%s: not a JSON object; archive the run again",
                                            p);
    cJSON_Delete(c);
    return rc;
}

void archive_free(Archive *a) {
    if (!a) return;
    for (int i = 0; i < a->ntests; i++) {
        free_lines(a->tests[i].ref, a->tests[i].n);
        free_lines(a->tests[i].greedy, a->tests[i].n);
        free_lines(a->tests[i].beam, a->tests[i].n);
    }
    for (int i = 0; i < a->nmaps; i++) attn_map_free(&a->maps[i].map);
    runlog_free(&a->log);
    memset(a, 0, sizeof *a);
}
