/* compare.c — `trainer compare`'s runs, archives and report (compare.h). */
#include "study/compare.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/plot.h"
#include "study/report.h"
#include "train/config.h"
#include "train/train.h"

enum { RUN_FOLDER, RUN_CONFIG, RUN_ARCHIVE };

/* One RUN: where it is and what it is. */
typedef struct {
    char arg[1024];        /* the RUN argument as given */
    char name[256];        /* its name ([A-Za-z0-9._-], unique) */
    char dir[1024];        /* its run folder, or the archive folder */
    char archive[1400];    /* the archive the report reads */
    int kind;              /* RUN_* */
    Config ini;            /* a config RUN's config */
} Run;

struct Compare {
    const CompareOpts *o;
    Run *runs;
    int nruns;
};

/* ---- small helpers ---- */

/* The last path component of p (without trailing slashes) into buf. */
static void base_name(const char *p, char *buf, size_t n) {
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && p[start - 1] != '/') start--;
    size_t k = len - start;
    if (k >= n) k = n - 1;
    memcpy(buf, p + start, k);
    buf[k] = 0;
}

/* 1 if another RUN argument is a folder whose last component is args[i]'s. */
static int folder_name_shared(const char *const *args, int n, int i) {
    char a[256], b[256];
    base_name(args[i], a, sizeof a);
    for (int j = 0; j < n; j++) {
        if (j == i || !path_is_dir(args[j])) continue;
        base_name(args[j], b, sizeof b);
        if (!strcmp(a, b)) return 1;
    }
    return 0;
}

/* r->name = the run.name of r->dir/config.ini, where that file loads; else unchanged. */
static void name_from_config_ini(Run *r) {
    char path[1100];
    snprintf(path, sizeof path, "%s/config.ini", r->dir);
    if (!path_is_file(path)) return;
    Config *c = xmalloc(sizeof *c);
    Err err;
    if (config_load(c, path, &err) == STATUS_OK && c->name[0])
        snprintf(r->name, sizeof r->name, "%s", c->name);
    free(c);
}

/* Reduces s to [A-Za-z0-9._-] ("run" if empty or "."/".."). */
static void sanitize(char *s) {
    for (char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-')) *p = '_';
    if (!*s || !strcmp(s, ".") || !strcmp(s, "..")) strcpy(s, "run");
}

static void uniquify(Run *runs, int i) {
    char base[256];
    memcpy(base, runs[i].name, sizeof base);
    for (int k = 2;; k++) {
        int clash = 0;
        for (int j = 0; j < i; j++) clash |= !strcmp(runs[j].name, runs[i].name);
        if (!clash) return;
        snprintf(runs[i].name, sizeof runs[i].name, "%.240s_%d", base, k);
    }
}

/* Appends sfx to dst (capacity n); -1 (dst unchanged) when it does not fit. */
static int append(char *dst, size_t n, const char *sfx) {
    size_t l = strlen(dst), k = strlen(sfx);
    if (l + k >= n) return -1;
    memcpy(dst + l, sfx, k + 1);
    return 0;
}

/* r's folder (and train.save_dir) suffixed with sfx. Errors: too long. */
static Status suffix_dir(Run *r, const char *sfx, Err *err) {
    if (append(r->dir, sizeof r->dir, sfx) || strlen(r->dir) >= sizeof r->ini.save_dir)
        return err_set(err, "RUN %s: its folder %s%s is too long; set a shorter train.save_dir",
                       r->arg, r->dir, sfx);
    memcpy(r->ini.save_dir, r->dir, strlen(r->dir) + 1);
    return STATUS_OK;
}

/* The budget in r->ini, and r's folder suffixed with its tag (config RUNs). */
static Status apply_budget(const CompareOpts *c, Run *r, Err *err) {
    Config *ini = &r->ini;
    if (c->budget_kind == BUDGET_NONE) return STATUS_OK;
    ini->max_steps = c->budget_kind == BUDGET_STEPS ? (long)c->budget : 0;
    ini->max_epochs = c->budget_kind == BUDGET_EPOCHS ? (int)c->budget : 1000000;
    ini->max_hours = c->budget_kind == BUDGET_HOURS ? c->budget : 0;
    ini->patience = 0; /* the whole budget: no early stopping */
    char sfx[80];
    snprintf(sfx, sizeof sfx, "_%s", c->budget_tag);
    return suffix_dir(r, sfx, err);
}

/* r as the run of seed s: train.seed, name <name>_s<seed>, folder <dir>_s<seed>. */
static Status apply_seed(Run *r, unsigned long long s, Err *err) {
    char sfx[32];
    r->ini.seed = (uint64_t)s;
    snprintf(sfx, sizeof sfx, "_s%llu", s);
    if (append(r->name, sizeof r->name, sfx))
        return err_set(err, "RUN %s: run.name is too long for a seed suffix", r->arg);
    return suffix_dir(r, sfx, err);
}

/* ---- resolving RUN arguments ---- */

/* Fills r from the argument. Errors: neither an archive, a run folder nor a usable config. */
static Status resolve_run(Run *r, const char *arg, Err *err) {
    snprintf(r->arg, sizeof r->arg, "%s", arg);
    if (path_is_dir(arg) && archive_is(arg)) {
        Archive a;
        Status s = archive_read(arg, &a, err);
        if (!s) snprintf(r->name, sizeof r->name, "%s", a.name);
        archive_free(&a);
        if (s) return err_prefix(err, "RUN %s", arg);
        r->kind = RUN_ARCHIVE;
        snprintf(r->dir, sizeof r->dir, "%s", arg);
        snprintf(r->archive, sizeof r->archive, "%s", arg);
        return STATUS_OK;
    }
    if (path_is_dir(arg)) {
        char ck[1100], mj[1100];
        snprintf(r->dir, sizeof r->dir, "%s", arg);
        snprintf(mj, sizeof mj, "%s/metrics.jsonl", arg);
        int has_ck = 0;
        static const char *const names[] = {"best.ckpt", "avg.ckpt", "last.ckpt"};
        for (int i = 0; i < 3; i++) {
            snprintf(ck, sizeof ck, "%s/%s", arg, names[i]);
            has_ck |= path_is_file(ck);
        }
        if (!has_ck || !path_is_file(mj))
            return err_set(err, "RUN %s: this folder has no %s%s%s; give an archive, a run "
                           "folder written by `trainer train` (its train.save_dir, e.g. "
                           "checkpoints/luong) or the run's config .ini (compare then trains it)",
                           arg, has_ck ? "" : "best.ckpt or last.ckpt",
                           !has_ck && !path_is_file(mj) ? " and no " : "",
                           path_is_file(mj) ? "" : "metrics.jsonl");
        r->kind = RUN_FOLDER;
        base_name(arg, r->name, sizeof r->name);
        return STATUS_OK;
    }
    if (!path_is_file(arg))
        return err_set(err, "RUN %s: %s; give an archive or run folder, or a config .ini", arg,
                       access(arg, F_OK) == 0 ? "not a regular file or folder" : strerror(errno));
    if (config_load(&r->ini, arg, err) || config_validate(&r->ini, err))
        return err_prefix(err, "RUN %s is neither a run folder nor a usable config file", arg);
    r->kind = RUN_CONFIG;
    config_save_dir(&r->ini, r->dir, sizeof r->dir);
    snprintf(r->name, sizeof r->name, "%s", r->ini.name);
    return STATUS_OK;
}

/* Trains a config RUN whose folder has no best.ckpt yet, and resumes one that holds a
 * last.ckpt (an interrupted run; train_run trains nothing when the run had reached its limits). */
static Status train_if_needed(Run *r, Err *err) {
    char ck[1100], last[1100];
    snprintf(ck, sizeof ck, "%s/best.ckpt", r->dir);
    snprintf(last, sizeof last, "%s/last.ckpt", r->dir);
    int has_best = path_is_file(ck), resume = path_is_file(last);
    if (r->kind != RUN_CONFIG || (has_best && !resume)) return STATUS_OK;
    if (has_best)
        fprintf(stderr, "trainer compare: %s: resuming %s from last.ckpt, in case it was "
                "interrupted before its limits\n", r->dir, r->arg);
    else
        fprintf(stderr, "trainer compare: %s has no best.ckpt yet: %s training %s first\n",
                r->dir, resume ? "resuming (from last.ckpt)" : "starting", r->arg);
    if (train_run(&r->ini, resume, err)) return err_prefix(err, "training %s", r->arg);
    if (!path_is_file(ck)) {
        if (!path_is_file(last))
            return err_set(err, "training %s finished without %s or %s", r->arg, ck, last);
        fprintf(stderr, "trainer compare: %s stopped before its first validation: comparing "
                "last.ckpt\n", r->arg);
    }
    return STATUS_OK;
}

/* The archive of every run folder (given, or a config's) into DIR/archive/<run>. */
static Status archive_runs(Compare *c, Err *err) {
    const CompareOpts *co = c->o;
    for (int i = 0; i < c->nruns; i++) {
        Run *r = &c->runs[i];
        if (r->kind == RUN_ARCHIVE) continue;
        snprintf(r->archive, sizeof r->archive, "%s/archive/%s", co->out_dir, r->name);
        ArchiveOpts o = {co->tests, co->ntests, co->beam, co->sentences, co->nsentences,
                         co->device, 0, r->kind == RUN_CONFIG ? r->arg : NULL, r->name};
        ArchiveTestSpec own = {NULL, r->ini.test_src, r->ini.test_tgt};
        if (r->kind == RUN_CONFIG && !co->ntests) { /* the .ini's test set */
            if (!own.src[0] || !own.tgt[0])
                return err_set(err, "run %s: %s has no test set (data.test_src and "
                               "data.test_tgt are empty); set them in the config (e.g. "
                               "data/multi30k/test_2016_flickr.de.gz and .en.gz) or give "
                               "--test-src FILE --test-tgt FILE", r->name, r->arg);
            o.tests = &own, o.ntests = 1;
        }
        if (archive_run(r->dir, r->archive, &o, err))
            return err_prefix(err, "run %s", r->name);
    }
    return STATUS_OK;
}

/* The report from the archives. */
static Status report(Compare *c, Err *err) {
    const CompareOpts *co = c->o;
    Archive *a = xcalloc((size_t)c->nruns, sizeof *a);
    const Archive **p = xcalloc((size_t)c->nruns, sizeof *p);
    Status rc = STATUS_OK;
    int n = 0;
    for (; n < c->nruns && !rc; n++) {
        rc = archive_read(c->runs[n].archive, &a[n], err);
        snprintf(a[n].name, sizeof a[n].name, "%s", c->runs[n].name);
        p[n] = &a[n];
    }
    const char *tests[ARCHIVE_MAX_TESTS];
    char names[ARCHIVE_MAX_TESTS][128];
    int ntests = 0;
    if (!rc && co->ntests) {
        for (int k = 0; k < co->ntests; k++) {
            archive_test_name(co->tests[k].tgt, names[k], sizeof names[k]);
            tests[ntests++] = names[k];
        }
    } else if (!rc) {
        for (int k = 0; k < a[0].ntests; k++) tests[ntests++] = a[0].tests[k].name;
        if (!ntests) rc = err_set(err, "run %s has no test set", a[0].name);
    }
    if (!rc) {
        char title[128], intro[512] = "";
        snprintf(title, sizeof title, "Comparison of %d run%s", c->nruns,
                 c->nruns == 1 ? "" : "s");
        if (co->budget_kind != BUDGET_NONE)
            snprintf(intro, sizeof intro, "Budget: every config trained with %s (train.%s = %g, "
                     "the other limits lifted, train.patience = 0: no early stopping).",
                     co->budget_tag, co->budget_kind == BUDGET_STEPS    ? "max_steps"
                                     : co->budget_kind == BUDGET_EPOCHS ? "max_epochs"
                                                                        : "max_hours",
                     co->budget);
        ReportTable t = {"Results", "", co->baseline, NULL, p, NULL, c->nruns, NULL, 0, 0.0};
        ReportOpts o = {co->out_dir, "compare.md", "compare.csv", title, intro[0] ? intro : NULL,
                        NULL, tests, ntests, co->sentences, co->nsentences, co->echo, NULL};
        rc = report_write(&o, &t, 1, err);
    }
    for (int i = 0; i < n; i++) archive_free(&a[i]);
    free(a), free(p);
    return rc;
}

Status compare_prepare(const CompareOpts *o, Compare **out, Err *err) {
    Compare *c = *out = xcalloc(1, sizeof *c);
    c->o = o;
    int per = o->nseeds ? o->nseeds : 1;
    c->runs = xcalloc((size_t)o->nruns * (size_t)per, sizeof *c->runs);
    for (int i = 0; i < o->nruns; i++) {
        Run one;
        memset(&one, 0, sizeof one);
        if (resolve_run(&one, o->runs[i], err)) return STATUS_ERR;
        if (one.kind == RUN_FOLDER && folder_name_shared(o->runs, o->nruns, i))
            name_from_config_ini(&one);
        if ((o->budget_kind != BUDGET_NONE || o->nseeds) && one.kind != RUN_CONFIG)
            return err_set(err, "--budget and --seeds train config RUNs, but RUN %s is already "
                           "trained; give its config .ini instead", o->runs[i]);
        if (apply_budget(o, &one, err)) return STATUS_ERR;
        for (int s = 0; s < per; s++) {
            Run *r = &c->runs[c->nruns];
            *r = one;
            if (o->nseeds && apply_seed(r, o->seeds[s], err)) return STATUS_ERR;
            sanitize(r->name);
            uniquify(c->runs, c->nruns);
            c->nruns++;
        }
    }
    if (o->baseline) { /* a config is a run's name, or its name without _s<seed> */
        int found = 0;
        char stem[256], list[2048] = "";
        for (int i = 0; i < c->nruns; i++) {
            report_stem(c->runs[i].name, stem, sizeof stem);
            found |= !strcmp(c->runs[i].name, o->baseline) || !strcmp(stem, o->baseline);
            if (!strstr(list, stem))
                str_appendf(list, sizeof list, "%s%s", list[0] ? ", " : "", stem);
        }
        if (!found)
            return err_set(err, "--baseline %s is not one of the configs (%s); give a config's "
                           "name as the report shows it", o->baseline, list);
    }
    return STATUS_OK;
}

Status compare_write(Compare *c, Err *err) {
    if (!plot_gnuplot_available(err)) return STATUS_ERR;
    if (make_dirs(c->o->out_dir, err))
        return err_prefix(err, "--out %s (choose another --out DIR)", c->o->out_dir);
    for (int i = 0; i < c->nruns; i++)
        if (train_if_needed(&c->runs[i], err)) return STATUS_ERR;
    return archive_runs(c, err) || report(c, err) ? STATUS_ERR : STATUS_OK;
}

void compare_free(Compare *c) {
    if (!c) return;
    free(c->runs);
    free(c);
}
