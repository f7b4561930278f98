/* study.c — a study's plan, its runs and its report (study.h). */
#include "study/study.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/spm.h"
#include "study/report.h"
#include "train/config.h"
#include "train/rundir.h"
#include "train/runlog.h"
#include "train/train.h"

#define MAX_TABLES 8
#define MAX_CONFIGS 64
#define MAX_SEEDS 16
#define MAX_JOBS 64
#define PATH 1024

typedef struct {
    char name[64], title[256], baseline[256];
    int first, n; /* its configs: configs[first .. first + n) */
    unsigned long long seeds[MAX_SEEDS]; /* its own seeds (a check at one seed, say) */
    int nseeds;                          /* 0: the study's */
    int has_x;                           /* x given: its place on the study's x_label axis */
    double x;
} Table;

typedef struct {
    char path[PATH]; /* the config file, as the trainer is given it */
    char name[256];  /* its file name without .ini */
    int table;
    char recipe[PATH]; /* the file it includes (its recipe), or "" when it includes none */
    char other[1024];  /* the keys other than the attention's in which its resolved config
                          differs from its recipe's, with its values ("model.input_feeding =
                          false, train.lr = 0.002"), or "" */
} StudyConfig;

enum { MISSING, RUNNING, ARCHIVED };

typedef struct {
    int config;
    unsigned long long seed;
    char name[300], dir[PATH], archive[PATH], log[PATH + 8];
    int state;
    int skip; /* left out by study_only: neither trained nor listed */
} StudyRun;

struct Study {
    char file[PATH], dir[PATH];
    char title[512], spm[PATH], notes[PATH], x_label[256];
    int epochs, precision, ntests;
    unsigned long long seeds[MAX_SEEDS];
    int nseeds;
    DecodeOpts beam;
    int sentences[ARCHIVE_MAX_MAPS], nsentences;
    char test_src[ARCHIVE_MAX_TESTS][PATH], test_tgt[ARCHIVE_MAX_TESTS][PATH];
    Table tables[MAX_TABLES];
    int ntables;
    StudyConfig configs[MAX_CONFIGS];
    int nconfigs;
    int device;      /* -1: the configs' own */
    char only[512];  /* study_only's patterns, or "" */
    StudyRun *runs;  /* [nruns]: seed by seed, config by config */
    int nruns;
    Config first;    /* the first run's config (its data trains the SentencePiece model) */
};

/* ---- paths ---- */

/* dir/rel (rel as it is when absolute), with "." and "x/.." parts removed, into out. */
static void join_path(const char *dir, const char *rel, char *out, size_t n) {
    char tmp[2 * PATH + 2];
    if (rel[0] == '/' || !dir[0]) snprintf(tmp, sizeof tmp, "%s", rel);
    else snprintf(tmp, sizeof tmp, "%s/%s", dir, rel);
    const char *parts[256];
    int np = 0, ups = 0, abs = tmp[0] == '/';
    for (char *tok = strtok(tmp, "/"); tok; tok = strtok(NULL, "/")) {
        if (!strcmp(tok, ".")) continue;
        if (!strcmp(tok, "..")) {
            if (np > 0) np--;
            else if (!abs) ups++;
            continue;
        }
        if (np < 256) parts[np++] = tok;
    }
    out[0] = 0;
    if (abs) str_appendf(out, n, "/");
    for (int i = 0; i < ups; i++) str_appendf(out, n, "../");
    for (int i = 0; i < np; i++) str_appendf(out, n, "%s%s", i ? "/" : "", parts[i]);
    if (!out[0]) snprintf(out, n, ".");
}

/* ---- the plan ---- */

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

/* Splits a blank-separated list into words (in place); their count, or -1 when over max. */
static int words(char *s, char **w, int max) {
    int n = 0;
    for (char *tok = strtok(s, " \t"); tok; tok = strtok(NULL, " \t")) {
        if (n == max) return -1;
        w[n++] = tok;
    }
    return n;
}

static Status plan_key(Study *s, int table, char *key, char *val, const char *where, Err *err) {
    char *w[MAX_CONFIGS + 1];
    if (table < 0) {
        if (!strcmp(key, "title")) {
            snprintf(s->title, sizeof s->title, "%s", val);
        } else if (!strcmp(key, "epochs")) {
            char *end;
            long e = strtol(val, &end, 10);
            if (*end || end == val || e < 1 || e > 1000000)
                return err_set(err, "%s: epochs = %s: give a whole number of epochs, 1 or more",
                               where, val);
            s->epochs = (int)e;
        } else if (!strcmp(key, "precision")) {
            s->precision = -1;
            for (int i = 0; i < 3; i++)
                if (!strcmp(val, precision_names[i])) s->precision = i;
            if (s->precision < 0)
                return err_set(err, "%s: precision = %s: give fp32, tf32 or bf16", where, val);
        } else if (!strcmp(key, "seeds")) {
            if (parse_u64_list(val, s->seeds, MAX_SEEDS, &s->nseeds, UINT64_MAX))
                return err_set(err, "%s: seeds = %s: give 1 to %d different seeds, e.g. "
                               "seeds = 1 2 3", where, val, MAX_SEEDS);
        } else if (!strcmp(key, "test_src") || !strcmp(key, "test_tgt")) {
            int n = words(val, w, ARCHIVE_MAX_TESTS);
            if (n < 1)
                return err_set(err, "%s: %s: give 1 to %d files separated by blanks", where, key,
                               ARCHIVE_MAX_TESTS);
            for (int i = 0; i < n; i++) {
                char *path = key[5] == 's' ? s->test_src[i] : s->test_tgt[i];
                join_path(s->dir, w[i], path, PATH);
                FILE *f = path_is_dir(path) ? NULL : fopen(path, "rb");
                if (!f)
                    return err_set(err, "%s: %s: cannot read %s (%s); give the test set's file, "
                                   "relative to the plan's folder", where, key, path,
                                   path_is_dir(path) ? "a folder" : strerror(errno));
                fclose(f);
            }
            if (key[5] == 's') s->ntests = n;
            else if (n != s->ntests)
                return err_set(err, "%s: test_tgt names %d files and test_src %d; pair them, "
                               "test_src first", where, n, s->ntests);
        } else if (!strcmp(key, "spm_model")) {
            join_path(s->dir, val, s->spm, sizeof s->spm);
        } else if (!strcmp(key, "notes")) {
            join_path(s->dir, val, s->notes, sizeof s->notes);
        } else if (!strcmp(key, "x_label")) {
            if (!val[0])
                return err_set(err, "%s: x_label is empty; name what the tables' x measure, "
                               "e.g. x_label = example length (pieces)", where);
            snprintf(s->x_label, sizeof s->x_label, "%s", val);
        } else if (!strcmp(key, "beam")) {
            char *end;
            long k = strtol(val, &end, 10);
            if (*end || end == val || k < 1 || k > 64)
                return err_set(err, "%s: beam = %s: give 1 to 64", where, val);
            s->beam.beam = (int)k;
        } else if (!strcmp(key, "len_penalty")) {
            char *end;
            double a = strtod(val, &end);
            if (*end || end == val || !(a >= 0 && a <= 10))
                return err_set(err, "%s: len_penalty = %s: give 0 to 10", where, val);
            s->beam.len_penalty = (float)a;
        } else if (!strcmp(key, "sentences")) {
            unsigned long long v[ARCHIVE_MAX_MAPS];
            if (parse_u64_list(val, v, ARCHIVE_MAX_MAPS, &s->nsentences, 100000000))
                return err_set(err, "%s: sentences = %s: give up to %d sentence numbers",
                               where, val, ARCHIVE_MAX_MAPS);
            for (int i = 0; i < s->nsentences; i++) s->sentences[i] = (int)v[i];
        } else {
            return err_set(err, "%s: unknown key '%s' in [study]; valid keys: title, epochs, "
                           "precision, seeds, test_src, test_tgt, spm_model, beam, len_penalty, "
                           "sentences, notes, x_label", where, key);
        }
        return STATUS_OK;
    }
    Table *t = &s->tables[table];
    if (!strcmp(key, "title")) {
        snprintf(t->title, sizeof t->title, "%s", val);
    } else if (!strcmp(key, "baseline")) {
        snprintf(t->baseline, sizeof t->baseline, "%s", val);
    } else if (!strcmp(key, "configs")) {
        if (t->n)
            return err_set(err, "%s: configs is given twice in [table %s]; list them on one line",
                           where, t->name);
        int n = words(val, w, MAX_CONFIGS);
        if (n < 1 || s->nconfigs + n > MAX_CONFIGS)
            return err_set(err, "%s: configs: give 1 or more config files (at most %d in a "
                           "study)", where, MAX_CONFIGS);
        t->first = s->nconfigs, t->n = n;
        for (int i = 0; i < n; i++) {
            StudyConfig *c = &s->configs[s->nconfigs++];
            join_path(s->dir, w[i], c->path, sizeof c->path);
            const char *base = strrchr(c->path, '/');
            snprintf(c->name, sizeof c->name, "%s", base ? base + 1 : c->path);
            size_t l = strlen(c->name);
            if (l > 4 && !strcmp(c->name + l - 4, ".ini")) c->name[l - 4] = 0;
            c->table = table;
            for (int j = 0; j < s->nconfigs - 1; j++)
                if (!strcmp(s->configs[j].name, c->name))
                    return err_set(err, "%s: two configs are called %s (%s and %s); their runs "
                                   "would share a name: rename one", where, c->name,
                                   s->configs[j].path, c->path);
        }
    } else if (!strcmp(key, "seeds")) {
        if (parse_u64_list(val, t->seeds, MAX_SEEDS, &t->nseeds, UINT64_MAX))
            return err_set(err, "%s: seeds = %s in [table %s]: give 1 to %d different seeds, "
                           "e.g. seeds = 1", where, val, t->name, MAX_SEEDS);
    } else if (!strcmp(key, "x")) {
        char *end;
        double x = strtod(val, &end);
        if (*end || end == val || !isfinite(x))
            return err_set(err, "%s: x = %s in [table %s]: give a number, the table's place on "
                           "the x_label axis (e.g. x = 65)", where, val, t->name);
        t->x = x, t->has_x = 1;
    } else {
        return err_set(err, "%s: unknown key '%s' in [table %s]; valid keys: title, configs, "
                       "baseline, seeds, x", where, key, t->name);
    }
    return STATUS_OK;
}

static Status plan_load(Study *s, const char *file, Err *err) {
    memset(s, 0, sizeof *s);
    s->beam = (DecodeOpts){.beam = 5, .len_penalty = 1.0f};
    s->nsentences = 3, s->sentences[1] = 1, s->sentences[2] = 2;
    s->precision = -1;
    s->device = -1;
    snprintf(s->file, sizeof s->file, "%s", file);
    const char *slash = strrchr(file, '/');
    snprintf(s->dir, sizeof s->dir, "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    join_path(s->dir, "spm.model", s->spm, sizeof s->spm);
    FILE *f = fopen(file, "r");
    if (!f) return err_set(err, "%s: cannot read the plan: %s", file, strerror(errno));
    char line[CONFIG_MAX_LINE + 2], where[PATH + 32];
    int lineno = 0, table = -1, section = 0;
    Status rc = STATUS_OK;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(where, sizeof where, "%s:%d", file, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            rc = err_set(err, "%s: line over %d bytes; shorten it", where, CONFIG_MAX_LINE);
            break;
        }
        line[strcspn(line, "\n")] = 0;
        char *p = trim(line);
        if (!*p || *p == '#' || *p == ';') continue;
        if (*p == '[') {
            char *close = strchr(p, ']');
            if (!close || *trim(close + 1)) {
                rc = err_set(err, "%s: write a section as [study] or [table NAME]", where);
                break;
            }
            *close = 0;
            char *name = trim(p + 1);
            if (!strcmp(name, "study")) {
                if (section & 1) rc = err_set(err, "%s: [study] appears twice", where);
                section |= 1, table = -1;
            } else if (!strncmp(name, "table", 5) && (name[5] == ' ' || name[5] == '\t')) {
                char *tn = trim(name + 5);
                if (s->ntables == MAX_TABLES)
                    rc = err_set(err, "%s: at most %d tables", where, MAX_TABLES);
                for (int i = 0; !rc && i < s->ntables; i++)
                    if (!strcmp(s->tables[i].name, tn))
                        rc = err_set(err, "%s: [table %s] appears twice", where, tn);
                if (rc) break;
                table = s->ntables++;
                snprintf(s->tables[table].name, sizeof s->tables[table].name, "%s", tn);
                snprintf(s->tables[table].title, sizeof s->tables[table].title, "%s", tn);
                section |= 2;
            } else {
                rc = err_set(err, "%s: unknown section [%s]; sections: [study], [table NAME]",
                             where, name);
            }
            continue;
        }
        char *eq = strchr(p, '=');
        if (!eq || !section) {
            rc = err_set(err, "%s: expected key = value under [study] or [table NAME]", where);
            break;
        }
        *eq = 0;
        rc = plan_key(s, table, trim(p), trim(eq + 1), where, err);
    }
    fclose(f);
    if (rc) return rc;
    if (!s->title[0]) snprintf(s->title, sizeof s->title, "Study %.490s", s->file);
    if (s->epochs < 1 || s->precision < 0 || s->nseeds < 1 || s->ntests < 1 || !s->ntables)
        return err_set(err, "%s: a plan needs epochs, precision, seeds, test_src and test_tgt "
                       "in [study], and a [table NAME] with configs", file);
    for (int i = 0; i < s->ntables; i++) {
        const Table *t = &s->tables[i];
        if (!t->n) return err_set(err, "%s: [table %s] has no configs", file, t->name);
        int found = !t->baseline[0];
        for (int j = 0; j < t->n; j++) found |= !strcmp(s->configs[t->first + j].name, t->baseline);
        if (!found)
            return err_set(err, "%s: [table %s]: baseline = %s is none of its configs (write a "
                           "config's file name without .ini)", file, t->name, t->baseline);
        if (t->has_x && !s->x_label[0])
            return err_set(err, "%s: [table %s] gives x, but [study] has no x_label to say what "
                           "it measures; add x_label or remove x", file, t->name);
    }
    int nx = 0;
    for (int i = 0; i < s->ntables; i++) nx += s->tables[i].has_x;
    if (s->x_label[0] && !nx)
        return err_set(err, "%s: x_label = %s, but no [table] gives x, so nothing reads it; give "
                       "each table's x or remove x_label", file, s->x_label);
    return STATUS_OK;
}

/* The --set arguments that make config c's run of seed s (the same for the config check and
 * for the trainer's command line), into sets (each 1100 bytes); their count. */
static int run_sets(const Study *s, const StudyRun *r, char sets[][1100]) {
    /* the paths fit: Config's fields are 1024 bytes, and config_set refuses longer values */
    int n = 0;
    snprintf(sets[n++], 1100, "run.name=%s", r->name);
    snprintf(sets[n++], 1100, "train.save_dir=%s", r->dir);
    snprintf(sets[n++], 1100, "train.seed=%llu", r->seed);
    snprintf(sets[n++], 1100, "train.max_epochs=%d", s->epochs);
    snprintf(sets[n++], 1100, "train.max_steps=0");
    snprintf(sets[n++], 1100, "train.max_hours=0");
    snprintf(sets[n++], 1100, "train.patience=0");
    snprintf(sets[n++], 1100, "train.precision=%s", precision_names[s->precision]);
    snprintf(sets[n++], 1100, "train.threads=1");
    snprintf(sets[n++], 1100, "data.spm_model=%s", s->spm);
    if (s->device >= 0) snprintf(sets[n++], 1100, "train.device=%s", device_type_names[s->device]);
    return n;
}

static void make_runs(const Study *s, StudyRun *runs, int *n) {
    *n = 0;
    for (int k = 0; k < MAX_SEEDS; k++) /* seed by seed: each config gets a run early */
        for (int c = 0; c < s->nconfigs; c++) {
            const Table *t = &s->tables[s->configs[c].table]; /* its seeds, or the study's */
            if (k >= (t->nseeds ? t->nseeds : s->nseeds)) continue;
            StudyRun *r = &runs[(*n)++];
            memset(r, 0, sizeof *r);
            r->config = c, r->seed = t->nseeds ? t->seeds[k] : s->seeds[k];
            snprintf(r->name, sizeof r->name, "%s_s%llu", s->configs[c].name, r->seed);
            char rel[320];
            snprintf(rel, sizeof rel, "runs/%s", r->name);
            join_path(s->dir, rel, r->dir, sizeof r->dir);
            snprintf(rel, sizeof rel, "archive/%s", r->name);
            join_path(s->dir, rel, r->archive, sizeof r->archive);
            snprintf(r->log, sizeof r->log, "%s.log", r->dir);
        }
}

/* Loads and validates every run's config with the plan's settings; the configs must share the
 * training data and vocabulary (one SentencePiece model), and those of a table one data.concat
 * (a table compares its runs on the same test documents). *first gets the first run's config,
 * with data.concat the largest of the plan's (so that the shared model it trains holds <sep>
 * when any config joins sentences). */
static Status plan_check(const Study *s, const StudyRun *runs, int nruns, Config *first,
                         Err *err) {
    Config *c = xmalloc(sizeof *c);
    char sets[16][1100];
    int concat[MAX_TABLES], by[MAX_TABLES]; /* each table's data.concat, and the config giving it */
    for (int t = 0; t < MAX_TABLES; t++) by[t] = -1;
    Status rc = STATUS_OK;
    for (int i = 0; i < nruns && !rc; i++) {
        const StudyConfig *sc = &s->configs[runs[i].config];
        int n = run_sets(s, &runs[i], sets);
        rc = config_load(c, sc->path, err);
        for (int k = 0; k < n && !rc; k++) rc = config_set(c, sets[k], err);
        if (!rc) rc = config_validate(c, err);
        char why[512];
        BackendOptions bo = config_backend_options(c);
        if (!rc && !backend_can_run(&bo, why, sizeof why))
            rc = err_set(err, "config %s: %s", c->name, why);
        if (rc) {
            err_prefix(err, "%s: config %s (run %s)", s->file, sc->path, runs[i].name);
            break;
        }
        int t = sc->table;
        if (by[t] < 0) concat[t] = c->concat, by[t] = runs[i].config;
        else if (c->concat != concat[t]) {
            rc = err_set(err, "%s: table %s joins its test sets two ways: data.concat = %d in %s, "
                         "%d in %s; a table compares its runs on the same test documents, so give "
                         "each data.concat a table of its own", s->file, s->tables[t].name,
                         concat[t], s->configs[by[t]].path, c->concat, sc->path);
            break;
        }
        if (i == 0) {
            *first = *c;
            continue;
        }
        if (c->concat > first->concat) first->concat = c->concat;
        if (strcmp(c->train_src, first->train_src) || strcmp(c->train_tgt, first->train_tgt) ||
            c->vocab_size != first->vocab_size || c->max_line_bytes != first->max_line_bytes)
            rc = err_set(err, "%s: config %s trains on other data or another vocabulary than %s "
                         "(data.train_src, train_tgt, vocab_size, max_line_bytes); the runs of a "
                         "study share one SentencePiece model", s->file, sc->path,
                         s->configs[runs[0].config].path);
    }
    free(c);
    return rc;
}

/* ---- recipes: what each config changes in the file it includes ---- */

/* The file that the config file path includes (`include = FILE` before its first section) as
 * config_load resolves it (FILE relative to path's folder unless absolute) into load (n bytes),
 * and with "." and ".." parts removed into shown; 0 when it includes none. */
static int config_include(const char *path, char *load, char *shown, size_t n) {
    FILE *f = fopen(path, "rb");
    char line[CONFIG_MAX_LINE + 8];
    int found = 0;
    for (int first = 1; f && !found && fgets(line, sizeof line, f); first = 0) {
        char *p = line;
        if (first && !strncmp(p, "\xef\xbb\xbf", 3)) p += 3; /* a byte-order mark */
        p[strcspn(p, "\r\n")] = 0;
        p = trim(p);
        if (*p == '[') break;
        char *eq = strchr(p, '=');
        if (!eq || *p == '#' || *p == ';') continue;
        *eq = 0;
        if (strcmp(trim(p), "include")) continue;
        const char *val = trim(eq + 1), *slash = strrchr(path, '/');
        int dir = val[0] == '/' || !slash ? 0 : (int)(slash - path) + 1;
        snprintf(load, n, "%.*s%s", dir, path, val);
        char folder[PATH];
        snprintf(folder, sizeof folder, "%.*s", dir ? dir - 1 : 0, path);
        join_path(folder, val, shown, n);
        found = 1;
    }
    if (f) fclose(f);
    return found;
}

/* 1 when p starts with "section.key: " (a key of config_diff's summary). */
static int diff_key_at(const char *p) {
    const char *q = p;
    while (islower((unsigned char)*q) || *q == '_') q++;
    if (q == p || *q++ != '.') return 0;
    const char *k = q;
    while (islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_') q++;
    return q > k && q[0] == ':' && q[1] == ' ';
}

/* config_diff's summary "a.b: X -> Y; c.d: Z -> W" as "a.b = Y, c.d = W" (the second config's
 * values; "" for an empty string) into out (n bytes). */
static void diff_values(const char *d, char *out, size_t n) {
    out[0] = 0;
    while (diff_key_at(d)) {
        const char *colon = strstr(d, ": "), *arrow = strstr(colon, " -> ");
        if (!arrow) break;
        const char *v = arrow + 4, *end = v;
        while ((end = strstr(end, "; ")) && !diff_key_at(end + 2)) end += 2;
        if (!end) end = v + strlen(v);
        str_appendf(out, n, "%s%.*s = %.*s", out[0] ? ", " : "", (int)(colon - d), d,
                    (int)(end - v), end > v ? v : "\"\"");
        d = *end ? end + 2 : end;
    }
}

/* Config file path with run r's settings (run_sets) into *c. */
static Status load_for_run(const Study *s, const StudyRun *r, const char *path, Config *c,
                           Err *err) {
    char sets[16][1100];
    int n = run_sets(s, r, sets);
    Status rc = config_load(c, path, err);
    for (int k = 0; k < n && !rc; k++) rc = config_set(c, sets[k], err);
    return rc;
}

/* Each config's recipe (the file it includes) and the keys other than the attention's in which
 * it differs from it, both with the plan's settings (run_sets), into s->configs. The attention's
 * keys: the slots (model.attention, self_attention, dec_self_attention, cross_attention), the
 * options that only an attention reads (model.linformer_*, model.local_*), and in an RNN
 * model.heads, which only its multi-head attentions read. Errors: config_load's, for the
 * config or its recipe. */
static Status recipe_diffs(Study *s, Err *err) {
    Config *c = xmalloc(sizeof *c), *r = xmalloc(sizeof *r);
    char load[PATH], diff[4096];
    Status rc = STATUS_OK;
    for (int i = 0; i < s->nconfigs && !rc; i++) {
        StudyConfig *sc = &s->configs[i];
        const StudyRun *run = &s->runs[i]; /* the first seed's runs go config by config */
        sc->recipe[0] = sc->other[0] = 0;
        if (!config_include(sc->path, load, sc->recipe, sizeof sc->recipe)) continue;
        rc = load_for_run(s, run, sc->path, c, err);
        if (!rc && load_for_run(s, run, load, r, err))
            rc = err_prefix(err, "its recipe %s", sc->recipe);
        if (rc) {
            err_prefix(err, "%s: config %s", s->file, sc->path);
            break;
        }
        ModelSpec *m = &c->model;
        m->attention = r->model.attention, m->self_attention = r->model.self_attention;
        m->dec_self_attention = r->model.dec_self_attention;
        m->cross_attention = r->model.cross_attention, m->attn_opt = r->model.attn_opt;
        if (m->type == MODEL_RNN && r->model.type == MODEL_RNN) m->heads = r->model.heads;
        if (config_diff(r, c, diff, sizeof diff)) diff_values(diff, sc->other, sizeof sc->other);
    }
    free(c), free(r);
    return rc;
}

/* names[0..n) as "a", "a and b" or "a, b and c" appended to buf (n bytes), each between q. */
static void append_names(char *buf, size_t size, const char *const *names, int n, const char *q) {
    for (int i = 0; i < n; i++)
        str_appendf(buf, size, "%s%s%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ", q, names[i],
                    q);
}

/* What the configs change in their recipes, in a sentence or two, into buf (n bytes): that
 * every config differs from its recipe in the attention alone, or which configs also set which
 * other keys; and which configs include no file (no recipe). Paths and keys between q ("`" for
 * Markdown, "" for a terminal). */
static void recipe_text(const Study *s, const char *q, char *buf, size_t n) {
    const char *none[MAX_CONFIGS], *recipes[MAX_CONFIGS];
    int nn = 0, nrec = 0, ndiff = 0;
    for (int i = 0; i < s->nconfigs; i++) {
        const StudyConfig *c = &s->configs[i];
        if (!c->recipe[0]) {
            none[nn++] = c->name;
            continue;
        }
        ndiff += c->other[0] != 0;
        int seen = 0;
        for (int k = 0; k < nrec; k++) seen |= !strcmp(recipes[k], c->recipe);
        if (!seen) recipes[nrec++] = c->recipe;
    }
    buf[0] = 0;
    if (nn) {
        append_names(buf, n, none, nn, "");
        str_appendf(buf, n, " include%s no file, so %s no recipe to compare with%s",
                    nn == 1 ? "s" : "", nn == 1 ? "it has" : "they have", nrec ? "; " : ".");
    }
    if (!nrec) return;
    char list[4096] = "";
    for (int k = 0; k < nrec; k++)
        str_appendf(list, sizeof list, "%s%s%s%s", k == 0 ? "" : k == nrec - 1 ? " or " : ", ", q,
                    recipes[k], q);
    if (!ndiff) {
        str_appendf(buf, n, "%s config differs from its recipe (the file it includes: %s) in the "
                    "attention alone.", nn ? "every other" : "Every", list);
        return;
    }
    str_appendf(buf, n, "%s differ from their recipes (the file each includes: %s) in the "
                "attention and, for some, in other keys:", nn ? "the other configs" : "The configs",
                list);
    /* configs that change the same other keys are named together, in the plan's order */
    int done[MAX_CONFIGS] = {0}, groups = 0;
    for (int i = 0; i < s->nconfigs; i++) {
        const StudyConfig *c = &s->configs[i];
        if (done[i] || !c->recipe[0] || !c->other[0]) continue;
        const char *same[MAX_CONFIGS];
        int ns = 0;
        for (int j = i; j < s->nconfigs; j++)
            if (!done[j] && s->configs[j].recipe[0] && !strcmp(s->configs[j].other, c->other))
                same[ns++] = s->configs[j].name, done[j] = 1;
        str_appendf(buf, n, "%s ", groups++ ? ";" : "");
        append_names(buf, n, same, ns, "");
        str_appendf(buf, n, " also set%s %s%s%s", ns == 1 ? "s" : "", q, c->other, q);
    }
    str_appendf(buf, n, ".");
}

/* ---- state ---- */

static void scan(StudyRun *runs, int n) {
    for (int i = 0; i < n; i++) {
        char last[PATH + 400];
        snprintf(last, sizeof last, "%s/last.ckpt", runs[i].dir);
        runs[i].state = archive_is(runs[i].archive) ? ARCHIVED
                        : path_is_file(last) || rundir_busy(runs[i].dir) ? RUNNING
                                                                       : MISSING;
    }
}

/* The training seconds (the last validation's elapsed; NaN if none or unreadable), the epochs
 * validated and whether its last start was on a GPU (gpu may be NULL) of the run whose
 * metrics.jsonl is in dir. */
static double run_secs(const char *dir, int *epochs, int *gpu) {
    char p[PATH + 400];
    RunLog log;
    Err err;
    *epochs = 0;
    if (gpu) *gpu = 0;
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    if (runlog_read(p, &log, &err)) return NAN;
    if (gpu && log.nstarts) *gpu = log.starts[log.nstarts - 1].gpu[0] != 0;
    double s = log.nval ? log.val[log.nval - 1].elapsed : NAN;
    for (int i = 0; i < log.nval; i++)
        if (log.val[i].epoch > *epochs) *epochs = log.val[i].epoch;
    runlog_free(&log);
    return s;
}

static void fmt_hours(char *buf, size_t n, double s) {
    if (!isfinite(s)) snprintf(buf, n, "unknown");
    else if (s >= 3600) snprintf(buf, n, "%.1f h", s / 3600);
    else snprintf(buf, n, "%.0f min", s / 60);
}

/* "; table flash: 1 seed" for each table with its own seeds, into buf (n bytes; "" if none). */
static void table_seeds_text(const Study *s, char *buf, size_t n) {
    buf[0] = 0;
    for (int t = 0; t < s->ntables; t++)
        if (s->tables[t].nseeds)
            str_appendf(buf, n, "; table %s: %d seed%s", s->tables[t].name,
                        s->tables[t].nseeds, s->tables[t].nseeds == 1 ? "" : "s");
}

/* Refuses run r when had, the config its archive was trained with, differs from the one the plan
 * gives r now (its config file with run_sets) in a key that changes what a run trains
 * (config_diff_trained): its scores would be reported as that config's; or (!archived) when had,
 * the config its run folder began with, differs from it in a key that a resumed run keeps
 * (config_diff_resume): `trainer train --resume` would refuse it. Errors: the config's load
 * errors, and the difference, naming the folder, the keys and what to do. */
static Status run_config_check(const Study *s, const StudyRun *r, const Config *had, int archived,
                               Err *err) {
    const StudyConfig *sc = &s->configs[r->config];
    Config *now = xmalloc(sizeof *now);
    char diff[2048];
    Status rc = load_for_run(s, r, sc->path, now, err);
    if (rc) err_prefix(err, "%s: config %s", s->file, sc->path);
    else if (!(archived ? config_diff_trained(had, now, diff, sizeof diff)
                        : config_diff_resume(had, now, diff, sizeof diff)))
        rc = STATUS_OK;
    else if (archived)
        rc = err_set(err, "%s/config.ini: the run was trained with a config that differs from "
                     "the plan's %s (archived -> now: %s), so its scores are not %s's; move the "
                     "archive folder %s out of the study so that it trains the run again, or "
                     "give the config back the values the run was trained with", r->archive,
                     sc->path, diff, sc->name, r->archive);
    else
        rc = err_set(err, "%s/config.ini: run %s began with a config that differs from the "
                     "plan's %s (the run folder -> now: %s), and a resumed run keeps its own; "
                     "remove the run folder %s so that the study trains the run afresh, or give "
                     "the config back the values the run began with", r->dir, r->name, sc->path,
                     diff, r->dir);
    free(now);
    return rc;
}

/* 1 if run r's folder holds a run that `trainer train --resume` goes on with: a last.ckpt and
 * the config.ini the run began with. */
static int run_resumes(const StudyRun *r) {
    char p[PATH + 16];
    snprintf(p, sizeof p, "%s/last.ckpt", r->dir);
    if (!path_is_file(p)) return 0;
    snprintf(p, sizeof p, "%s/config.ini", r->dir);
    return path_is_file(p);
}

/* run_config_check against the config.ini of run r's archive (archived) or of its run folder.
 * Errors: its load errors, run_config_check's. */
static Status run_file_config_check(const Study *s, const StudyRun *r, int archived, Err *err) {
    Config *c = xmalloc(sizeof *c);
    char p[PATH + 16];
    snprintf(p, sizeof p, "%s/config.ini", archived ? r->archive : r->dir);
    Status rc = config_load(c, p, err);
    if (!rc) rc = run_config_check(s, r, c, archived, err);
    free(c);
    return rc;
}

static void status(const Study *s, StudyRun *runs, int n, int jobs, FILE *f) {
    scan(runs, n);
    int count[3] = {0, 0, 0}, chosen = 0;
    for (int i = 0; i < n; i++)
        if (!runs[i].skip) count[runs[i].state]++, chosen++;
    char own[256];
    table_seeds_text(s, own, sizeof own);
    fprintf(f, "%s: %d runs (%d configs x %d seed%s%s), %d epochs each, %s\n", s->file, n,
            s->nconfigs, s->nseeds, s->nseeds == 1 ? "" : "s", own, s->epochs,
            precision_names[s->precision]);
    if (s->only[0]) fprintf(f, "--only %s: %d of the %d runs\n", s->only, chosen, n);
    fprintf(f, "archived %d, running %d, missing %d\n", count[ARCHIVED], count[RUNNING],
           count[MISSING]);
    char recipes[8192];
    recipe_text(s, "", recipes, sizeof recipes);
    fprintf(f, "%s\n", recipes);
    /* seconds per run: the config's archived runs, else its table's, else from the epochs that
     * running runs have validated; archived runs only of the kind of device the missing ones
     * train on (--device, else the CPU), since a GPU's minutes say nothing of a CPU's hours */
    int want_gpu = s->device == DEVICE_CUDA;
    double *cfg_secs = xcalloc((size_t)s->nconfigs, sizeof *cfg_secs);
    double tab_sum[MAX_TABLES] = {0}, rate_sum = 0;
    int *cfg_n = xcalloc((size_t)s->nconfigs, sizeof *cfg_n), tab_n[MAX_TABLES] = {0}, rate_n = 0;
    for (int i = 0; i < n; i++) {
        int e, gpu;
        const char *dir = runs[i].state == ARCHIVED ? runs[i].archive : runs[i].dir;
        double sec = run_secs(dir, &e, &gpu);
        if (runs[i].state == ARCHIVED && isfinite(sec) && gpu == want_gpu) {
            cfg_secs[runs[i].config] += sec, cfg_n[runs[i].config]++;
            tab_sum[s->configs[runs[i].config].table] += sec;
            tab_n[s->configs[runs[i].config].table]++;
        } else if (runs[i].state == RUNNING && isfinite(sec) && e > 0) {
            rate_sum += sec / e, rate_n++;
        }
    }
    double left = 0;
    int unknown = 0, stale = 0, stale_dirs = 0;
    for (int t = 0; t < s->ntables; t++) {
        const Table *tb = &s->tables[t];
        int listed = 0;
        for (int c = tb->first; c < tb->first + tb->n; c++) {
            int has = 0; /* a run of c that study_only kept */
            for (int i = 0; i < n && !has; i++) has = runs[i].config == c && !runs[i].skip;
            if (!has) continue;
            if (!listed++) fprintf(f, "\n%s (%s):\n", tb->title, tb->name);
            fprintf(f, "  %-26s", s->configs[c].name);
            for (int i = 0; i < n; i++) {
                if (runs[i].config != c || runs[i].skip) continue;
                int e = 0;
                double per = cfg_n[c] ? cfg_secs[c] / cfg_n[c]
                             : tab_n[t] ? tab_sum[t] / tab_n[t]
                             : rate_n   ? rate_sum / rate_n * s->epochs
                                        : NAN;
                if (runs[i].state == ARCHIVED) {
                    Err err;
                    int st = run_file_config_check(s, &runs[i], 1, &err) != STATUS_OK;
                    fprintf(f, "  s%llu archived%s", runs[i].seed, st ? " (config differs)" : "");
                    stale += st;
                    continue;
                }
                double done = runs[i].state == RUNNING ? run_secs(runs[i].dir, &e, NULL) : 0;
                Err err;
                int differs = runs[i].state == RUNNING && run_resumes(&runs[i]) &&
                              run_file_config_check(s, &runs[i], 0, &err) != STATUS_OK;
                stale_dirs += differs;
                if (runs[i].state == RUNNING)
                    fprintf(f, "  s%llu running (epoch %d of %d done%s)", runs[i].seed, e,
                            s->epochs, differs ? "; config differs" : "");
                else fprintf(f, "  s%llu missing", runs[i].seed);
                if (isfinite(per)) left += fmax(per - (isfinite(done) ? done : 0), 0);
                else unknown++;
            }
            fprintf(f, "\n");
        }
    }
    char h1[32], h2[32];
    fmt_hours(h1, sizeof h1, left);
    fmt_hours(h2, sizeof h2, left / (jobs > 0 ? jobs : 1));
    int missing = chosen - count[ARCHIVED];
    if (count[ARCHIVED] == chosen)
        fprintf(f, "\nevery run%s is archived\n", s->only[0] ? " of --only" : "");
    else if (unknown == missing)
        fprintf(f, "\ntime left: unknown: no run of %s has been archived %s or has "
                   "finished an epoch yet\n", s->only[0] ? "their configs or tables" : "this plan",
                want_gpu ? "on a GPU" : "on a CPU");
    else
        fprintf(f, "\ntime left: about %s of training %s (%s with --jobs %d), from the times of "
               "the runs archived %s or running so far%s\n", h1,
               want_gpu ? "on a GPU, one run at a time" : "on one thread each", h2, jobs,
               want_gpu ? "on a GPU" : "on a CPU",
               unknown ? "; runs without a measured config or table are not counted" : "");
    if (stale)
        fprintf(f, "%d archive%s trained with another config than %s config file gives now: "
                "training and --report refuse %s, and --prepare names the keys\n", stale,
                stale == 1 ? " was" : "s were", stale == 1 ? "its" : "their",
                stale == 1 ? "it" : "them");
    if (stale_dirs)
        fprintf(f, "%d run folder%s began with another config than %s config file gives now: "
                "training refuses to resume %s (--prepare names the keys); remove %s to train "
                "afresh\n", stale_dirs, stale_dirs == 1 ? "" : "s",
                stale_dirs == 1 ? "its" : "their", stale_dirs == 1 ? "it" : "them",
                stale_dirs == 1 ? "it" : "them");
    free(cfg_secs), free(cfg_n);
}

/* ---- running ---- */

static volatile sig_atomic_t g_stop;
static void on_stop(int sig) { g_stop = sig; }

/* Starts /proc/self/exe with argv (NULL-terminated), output appended to log; its pid, or -1. */
static pid_t spawn(char *const *argv, const char *log) {
    char dir[PATH + 8];
    Err err;
    snprintf(dir, sizeof dir, "%s", log);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (slash && make_dirs(dir, &err)) fprintf(stderr, "trainer study: %s\n", err.msg);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid != 0) return pid;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO);
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "trainer study: cannot run /proc/self/exe: %s\n", strerror(errno));
    _exit(127);
}

typedef struct {
    pid_t pid;
    int run, archiving;
} Job;

static pid_t start_training(const Study *s, const StudyRun *r) {
    char sets[16][1100], *argv[48];
    int n = run_sets(s, r, sets), a = 0;
    char last[PATH + 400];
    snprintf(last, sizeof last, "%s/last.ckpt", r->dir);
    argv[a++] = "trainer", argv[a++] = "train", argv[a++] = "--config";
    argv[a++] = (char *)s->configs[r->config].path;
    for (int k = 0; k < n; k++) argv[a++] = "--set", argv[a++] = sets[k];
    if (path_is_file(last)) argv[a++] = "--resume";
    argv[a] = NULL;
    printf("study: %s %s (log %s)\n", path_is_file(last) ? "resuming" : "training", r->name,
           r->log);
    return spawn(argv, r->log);
}

static pid_t start_archive(const Study *s, const StudyRun *r) {
    char *argv[64], beam[16], alpha[32], sent[256] = "";
    int a = 0;
    snprintf(beam, sizeof beam, "%d", s->beam.beam);
    snprintf(alpha, sizeof alpha, "%g", (double)s->beam.len_penalty);
    for (int i = 0; i < s->nsentences; i++)
        str_appendf(sent, sizeof sent, "%s%d", i ? "," : "", s->sentences[i]);
    argv[a++] = "trainer", argv[a++] = "archive", argv[a++] = (char *)r->dir;
    argv[a++] = "--out", argv[a++] = (char *)r->archive;
    for (int k = 0; k < s->ntests; k++) {
        argv[a++] = "--test-src", argv[a++] = (char *)s->test_src[k];
        argv[a++] = "--test-tgt", argv[a++] = (char *)s->test_tgt[k];
    }
    argv[a++] = "--beam", argv[a++] = beam, argv[a++] = "--len-penalty", argv[a++] = alpha;
    argv[a++] = "--sentences", argv[a++] = sent, argv[a++] = "--threads", argv[a++] = "1";
    argv[a++] = "--config", argv[a++] = (char *)s->configs[r->config].path;
    if (s->device >= 0) argv[a++] = "--device", argv[a++] = (char *)device_type_names[s->device];
    argv[a] = NULL;
    printf("study: archiving %s into %s\n", r->name, r->archive);
    return spawn(argv, r->log);
}

/* Trains and archives every run without an archive, jobs at a time; the number that failed. */
static int run_all(const Study *s, StudyRun *runs, int n, int jobs) {
    Job job[MAX_JOBS];
    int active = 0, next = 0, failed = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL), sigaction(SIGTERM, &sa, NULL);
    for (;;) {
        while (!g_stop && active < jobs && next < n) {
            StudyRun *r = &runs[next++];
            if (r->skip || archive_is(r->archive)) continue;
            if (rundir_busy(r->dir)) {
                printf("study: %s is being trained by another trainer; left to it\n", r->name);
                continue;
            }
            pid_t pid = start_training(s, r);
            if (pid < 0) {
                fprintf(stderr, "trainer study: cannot start %s: %s\n", r->name,
                        strerror(errno));
                failed++;
                continue;
            }
            job[active++] = (Job){pid, (int)(r - runs), 0};
        }
        if (!active) break;
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0) {
            if (errno == EINTR) {
                for (int j = 0; j < active; j++) kill(job[j].pid, g_stop ? g_stop : SIGTERM);
                continue;
            }
            break;
        }
        int j = 0;
        while (j < active && job[j].pid != pid) j++;
        if (j == active) continue;
        StudyRun *r = &runs[job[j].run];
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        char last[PATH + 400];
        snprintf(last, sizeof last, "%s/last.ckpt", r->dir);
        if (ok && !job[j].archiving && !g_stop && archive_is(r->archive)) {
            /* another machine archived this run while it trained here: its archive stays */
            printf("study: %s was archived meanwhile, elsewhere; that archive is kept, and this "
                   "run's folder %s is left as it is\n", r->name, r->dir);
            job[j] = job[--active];
            continue;
        }
        if (ok && !job[j].archiving && !g_stop) {
            job[j].pid = start_archive(s, r), job[j].archiving = 1;
            if (job[j].pid > 0) continue;
            ok = 0;
        }
        if (!ok && !g_stop) {
            fprintf(stderr, "trainer study: %s failed to %s (exit %d); its output is in %s\n",
                    r->name, job[j].archiving ? "archive" : "train",
                    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), r->log);
            failed++;
        } else if (ok && job[j].archiving) {
            printf("study: %s archived in %s\n", r->name, r->archive);
        }
        job[j] = job[--active];
    }
    return failed;
}

/* ---- the SentencePiece model of every run ---- */

/* The spm_hash of the SentencePiece model in file path. Errors: spm_load's, spm_hash's. */
static Status file_spm_hash(const char *path, uint64_t *hash, Err *err) {
    Spm *m = NULL;
    Status rc = spm_load(&m, path, err);
    if (!rc) rc = spm_hash(m, hash, err);
    spm_free(m);
    return rc;
}

/* The error for the archive in dir, trained with the model of hash had, against the plan's. */
static Status archive_model_differs(const Study *s, const char *dir, uint64_t had, uint64_t plan,
                                    Err *err) {
    return err_set(err, "%s/run.json: the run was trained with the SentencePiece model of hash "
                   "%016llx, but the plan's spm_model %s has hash %016llx, so its scores do not "
                   "compare with the other runs'; remove the archive folder %s so that the study "
                   "trains the run again with the plan's model, or set spm_model to the model "
                   "the run was trained with", dir, (unsigned long long)had, s->spm,
                   (unsigned long long)plan, dir);
}

/* Refuses, before any training, an archive that records another SentencePiece model than the
 * plan's (an archive without the record is let be) or was trained with another config
 * (run_config_check), and a run folder to be resumed (a last.ckpt) whose spm.model, the copy
 * of the model it began with, is another, or whose config.ini differs from the plan's: the runs
 * it trains take the plan's model (data.spm_model, run_sets) and config, but a resumed run keeps
 * its own. */
static Status check_models(const Study *s, StudyRun *runs, int n, Err *err) {
    uint64_t plan, had;
    int known;
    if (file_spm_hash(s->spm, &plan, err)) return err_prefix(err, "%s: spm_model", s->file);
    scan(runs, n);
    for (int i = 0; i < n; i++) {
        const StudyRun *r = &runs[i];
        char model[PATH + 16];
        snprintf(model, sizeof model, "%s/spm.model", r->dir);
        if (r->state == ARCHIVED) {
            if (archive_spm_hash(r->archive, &known, &had, err)) return STATUS_ERR;
            if (known && had != plan) return archive_model_differs(s, r->archive, had, plan, err);
            if (run_file_config_check(s, r, 1, err)) return STATUS_ERR;
        } else if (r->state == RUNNING && run_resumes(r)) {
            if (run_file_config_check(s, r, 0, err)) return STATUS_ERR;
        }
        if (r->state == RUNNING && path_is_file(model)) {
            if (file_spm_hash(model, &had, err)) return STATUS_ERR;
            if (had != plan)
                return err_set(err, "%s: run %s began with the SentencePiece model of hash "
                               "%016llx, but the plan's spm_model %s has hash %016llx, and a "
                               "resumed run keeps its own; remove the run folder %s so that the "
                               "study trains the run afresh with the plan's model, or set "
                               "spm_model to the model the run began with", model, r->name,
                               (unsigned long long)had, s->spm, (unsigned long long)plan, r->dir);
        }
    }
    return STATUS_OK;
}

/* ---- the report ---- */

static Status write_report(const Study *s, StudyRun *runs, int n, Err *err) {
    scan(runs, n);
    Archive *a = xcalloc((size_t)n, sizeof *a);
    const Archive **ptr = xcalloc((size_t)n, sizeof *ptr);
    const char **groups = xcalloc((size_t)n, sizeof *groups);
    ReportTable tables[MAX_TABLES];
    char pending[MAX_TABLES][4096]; /* 32 KiB */
    int na = 0, nt = 0;
    Status rc = STATUS_OK;
    char intro[16384], recipes[8192], scored[256] = "", dirty[256] = "";
    int nmissing = 0, plan_known = 0;
    uint64_t plan = 0;
    for (int t = 0; t < s->ntables && !rc; t++) {
        int first = na;
        for (int c = s->tables[t].first; c < s->tables[t].first + s->tables[t].n && !rc; c++)
            for (int i = 0; i < n && !rc; i++) {
                if (runs[i].config != c) continue;
                if (runs[i].state != ARCHIVED) {
                    nmissing++;
                    continue;
                }
                rc = archive_read(runs[i].archive, &a[na], err);
                if (!rc && a[na].spm_hash_known && !plan_known) {
                    if (file_spm_hash(s->spm, &plan, err))
                        rc = err_prefix(err, "%s: spm_model (to check the archives' models)",
                                        s->file);
                    plan_known = 1;
                }
                if (!rc && a[na].spm_hash_known && a[na].spm_hash != plan)
                    rc = archive_model_differs(s, runs[i].archive, a[na].spm_hash, plan, err);
                if (!rc) rc = run_config_check(s, &runs[i], &a[na].cfg, 1, err);
                ptr[na] = &a[na], groups[na] = s->configs[c].name;
                na++;
            }
        if (rc || na == first) continue;
        char *pend = pending[nt];
        pend[0] = 0;
        for (int c = s->tables[t].first; c < s->tables[t].first + s->tables[t].n; c++) {
            int any = 0;
            for (int i = first; i < na; i++) any |= !strcmp(groups[i], s->configs[c].name);
            if (!any)
                snprintf(pend + strlen(pend), sizeof pending[nt] - strlen(pend), "%s%s",
                         pend[0] ? ", " : "", s->configs[c].name);
        }
        const char *base = s->tables[t].baseline;
        int has_base = 0;
        for (int i = first; i < na; i++) has_base |= base[0] && !strcmp(groups[i], base);
        tables[nt++] = (ReportTable){s->tables[t].title,   s->tables[t].name,
                                     has_base ? base : NULL,
                                     !has_base && base[0] ? base : NULL,
                                     ptr + first,           groups + first,
                                     na - first,            pend,
                                     s->tables[t].has_x,    s->tables[t].x};
    }
    if (!rc && !nt) rc = err_set(err, "%s: no run is archived yet; nothing to report", s->file);
    if (!rc) {
        const char *tests[ARCHIVE_MAX_TESTS];
        char names[ARCHIVE_MAX_TESTS][128];
        for (int k = 0; k < s->ntests; k++) {
            archive_test_name(s->test_tgt[k], names[k], sizeof names[k]);
            tests[k] = names[k];
        }
        recipe_text(s, "`", recipes, sizeof recipes);
        char own[256];
        table_seeds_text(s, own, sizeof own);
        int nck[3] = {0, 0, 0}, ndirty = 0; /* avg.ckpt, best.ckpt, last.ckpt */
        for (int i = 0; i < na; i++) {
            nck[!strcmp(a[i].checkpoint, "avg.ckpt")     ? 0
                : !strcmp(a[i].checkpoint, "best.ckpt") ? 1
                                                        : 2]++;
            ndirty += a[i].uncommitted_changes;
        }
        static const char *const ck[3] = {"`avg.ckpt`", "`best.ckpt`",
                                          "`last.ckpt` (no validation had run)"};
        for (int k = 0, parts = 0; k < 3; k++) {
            if (nck[k] == na) snprintf(scored, sizeof scored, "here %s for every run", ck[k]);
            else if (nck[k])
                str_appendf(scored, sizeof scored, "%s%s for %d run%s", parts++ ? ", " : "here ",
                            ck[k], nck[k], nck[k] == 1 ? "" : "s");
        }
        if (ndirty)
            snprintf(dirty, sizeof dirty, "%d of %d runs trained from a tree with uncommitted "
                     "changes; git cannot rebuild them. ", ndirty, na);
        snprintf(intro, sizeof intro,
                 "Written by `trainer study %s` from the archives in `archive/`. Every run "
                 "trains one config of a table for exactly %d epoch%s (no early stopping) at %s "
                 "precision, once per seed (%d seed%s%s), with the shared SentencePiece model "
                 "`%s`. "
                 "%s The checkpoint scored is a run's `avg.ckpt` when the run averaged its last "
                 "checkpoints (train.average_last) and that average validates at least as well "
                 "as its `best.ckpt`, else `best.ckpt`, saved at the run's best validation BLEU "
                 "over its epochs, which need not be the last (%s). %s"
                 "**Archived: %d of %d runs**%s.",
                 s->file, s->epochs, s->epochs == 1 ? "" : "s", precision_names[s->precision],
                 s->nseeds, s->nseeds == 1 ? "" : "s", own, s->spm, recipes, scored, dirty,
                 n - nmissing, n,
                 nmissing ? "; `trainer study … --status` lists the others and the time they "
                            "need" : "");
        ReportOpts o = {s->dir, "README.md", "results.csv", s->title, intro,
                        s->notes[0] ? s->notes : NULL, tests, s->ntests, s->sentences,
                        s->nsentences, NULL, s->x_label[0] ? s->x_label : NULL};
        rc = report_write(&o, tables, nt, err);
        if (!rc) printf("study: report written to %s/README.md (%d of %d runs)\n", s->dir,
                        n - nmissing, n);
    }
    for (int i = 0; i < na; i++) archive_free(&a[i]);
    free(a), free(ptr), free(groups);
    return rc;
}


/* ---- the public functions ---- */

Status study_load(const char *file, int device, int check, Study **out, Err *err) {
    Study *s = *out = xcalloc(1, sizeof *s);
    if (plan_load(s, file, err)) return STATUS_ERR; /* zeroes *s first */
    s->runs = xcalloc(MAX_CONFIGS * MAX_SEEDS, sizeof *s->runs);
    s->device = device;
    make_runs(s, s->runs, &s->nruns);
    if (check && plan_check(s, s->runs, s->nruns, &s->first, err)) return STATUS_ERR;
    return recipe_diffs(s, err);
}

Status study_only(Study *s, const char *patterns, Err *err) {
    char list[sizeof s->only];
    if (snprintf(list, sizeof list, "%s", patterns) >= (int)sizeof list)
        return err_set(err, "--only: the patterns are longer than %zu characters",
                       sizeof list - 1);
    snprintf(s->only, sizeof s->only, "%s", patterns);
    for (int i = 0; i < s->nruns; i++) s->runs[i].skip = 1;
    char *save = NULL;
    for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        g = trim(g);
        int hits = 0;
        for (int i = 0; i < s->nruns; i++)
            if (*g && !fnmatch(g, s->runs[i].name, 0)) s->runs[i].skip = 0, hits++;
        if (!hits)
            return err_set(err, "--only '%s' matches no run of %s: a run is named "
                           "<config>_s<seed>, such as %s (`--status` lists them)", g, s->file,
                           s->nruns ? s->runs[s->nruns - 1].name : "none");
    }
    return STATUS_OK;
}

void study_status(Study *s, int jobs, FILE *f) { status(s, s->runs, s->nruns, jobs, f); }

Status study_prepare(Study *s, Err *err) {
    if (!path_is_file(s->spm)) {
        char dir[PATH], made[PATH + 16];
        const char *slash = strrchr(s->spm, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - s->spm) : 1, slash ? s->spm : ".");
        printf("study: training the shared SentencePiece model %s\n", s->spm);
        if (train_spm_model(&s->first, dir, err)) return STATUS_ERR;
        snprintf(made, sizeof made, "%s/spm.vocab", dir);
        unlink(made); /* the model alone is kept (the vocabulary is in it) */
        snprintf(made, sizeof made, "%s/spm.model", dir);
        if (strcmp(made, s->spm) && rename(made, s->spm) != 0)
            return err_set(err, "cannot rename %s to %s: %s", made, s->spm, strerror(errno));
    }
    return check_models(s, s->runs, s->nruns, err);
}

Status study_train(Study *s, int jobs, int *failed, int *stopped, Err *err) {
    *failed = 0, *stopped = 0;
    if (study_prepare(s, err)) return STATUS_ERR;
    char recipes[8192];
    recipe_text(s, "", recipes, sizeof recipes);
    printf("study: %s\n", recipes);
    *failed = run_all(s, s->runs, s->nruns, jobs);
    *stopped = g_stop != 0;
    return STATUS_OK;
}

Status study_report(Study *s, Err *err) { return write_report(s, s->runs, s->nruns, err); }

void study_free(Study *s) {
    if (!s) return;
    free(s->runs);
    free(s);
}
