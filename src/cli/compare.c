/* compare.c — `trainer compare`: one report comparing several runs, from their archives.
 *
 *   trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A] [--sentences i,j,k]
 *                          [--test-src FILE --test-tgt FILE]... [--device cpu|cuda]
 *                          [--baseline CONFIG] [--budget steps=N|epochs=N|hours=H]
 *                          [--seeds s1,s2,...]
 *
 * RUN is either
 *  - an archive folder (report/archive.h: written by `trainer archive`, `trainer study` or an
 *    earlier compare); it is read as it is, nothing is decoded;
 *  - a run folder written by `trainer train` (its train.save_dir, e.g. checkpoints/luong); or
 *  - a config .ini file: its run folder is config_save_dir() of the loaded (and validated)
 *    config. If that folder has no best.ckpt yet, the run is trained first (train_run); if it
 *    holds a last.ckpt, training resumes from it first (an interrupted run is completed; one that
 *    had reached its limits trains nothing).
 * Every run folder (given, or a config's) is archived into DIR/archive/<run> (archive_run: the
 * test sets translated greedily and with beam K, default 5, α default 1.0; the attention of the
 * --sentences, default 0,1,2), and the report is written from the archives alone
 * (report/report.h): DIR/compare.md, compare.csv, significance.csv (with --baseline), the curves,
 * the trade-off plot and the heatmaps. Comparing those archives again gives the same report, byte
 * for byte, but for the line naming the date and machine.
 *
 * A run's name: an archive's own; a run folder's last component, or, where several RUN folders
 * share that component (a/run, b/run), the run.name of its config.ini; a config's run.name. Names are reduced to [A-Za-z0-9._-] and made
 * unique ("name_2"). Runs whose names differ only by a trailing _s<seed> and whose configs agree
 * but for the seed (report.h) are one config, reported as mean ± sd over its seeds.
 *
 * The test sets: --test-src/--test-tgt pairs (repeatable), else each run's own: an archive's, or
 * the config's data.test_src/test_tgt; every run must have those of the first run. --baseline
 * CONFIG tests every other config against it (seed-aware paired bootstrap, report.h).
 * --budget steps=N | epochs=N | hours=H gives every config RUN the same training budget
 * (train.max_steps, max_epochs or max_hours set to it, the other two limits lifted, and no early
 * stopping: train.patience = 0) and a run folder of its own, <save_dir>_<budget> (steps2000,
 * epochs8, hours1.5), so that a run trained under another budget is never reused. --seeds
 * s1,s2,... (up to CMP_MAX_SEEDS) trains every config RUN once per seed (train.seed), as runs
 * named <name>_s<seed> in <save_dir>[_<budget>]_s<seed>. Both need config RUNs: a run folder or an
 * archive is already trained (usage error, exit 2).
 *
 * Needs the gnuplot program (checked before any training or decoding).
 */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "report/archive.h"
#include "report/report.h"
#include "eval/plot.h"
#include "train/config.h"
#include "train/train.h"

#define CMP_MAX_SEEDS 16

enum { BUDGET_NONE, BUDGET_STEPS, BUDGET_EPOCHS, BUDGET_HOURS };
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

typedef struct {
    Run *runs;
    int nruns;
    const char *out_dir;
    DecodeOpts beam;
    int device;                       /* -1 = each checkpoint's */
    unsigned long long sentences[ARCHIVE_MAX_MAPS];
    int nsentences;
    CliTests tests;
    const char *baseline;            /* --baseline CONFIG, or NULL */
    int budget_kind;                 /* BUDGET_* (--budget) */
    double budget;                   /* its N or H */
    char budget_tag[64];             /* "epochs8": folder suffix and report text */
    unsigned long long seeds[CMP_MAX_SEEDS]; /* --seeds */
    int nseeds;
} Compare;

static void usage(FILE *f) {
    fprintf(f,
            "usage: trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A]\n"
            "                       [--sentences i,j,k] [--test-src FILE --test-tgt FILE]...\n"
            "                       [--device cpu|cuda] [--baseline CONFIG]\n"
            "                       [--budget steps=N|epochs=N|hours=H] [--seeds s1,s2,...]\n"
            "  RUN: an archive folder (trainer archive, study or compare wrote it), a run folder\n"
            "       (with best.ckpt and metrics.jsonl, e.g. checkpoints/luong) or a config .ini\n"
            "       (trained first when its folder has no best.ckpt yet)\n"
            "  --out DIR          output folder (default: compare); run folders are archived\n"
            "                     into DIR/archive/<run>\n"
            "  --beam K           beam size of the second decoding (1..64, default 5)\n"
            "  --len-penalty A    length penalty alpha for the beam (0..10, default 1.0)\n"
            "  --sentences i,j,k  0-based test sentences for the attention maps (default 0,1,2)\n"
            "  --test-src/--test-tgt  a test set, repeatable (default: each run's "
            "data.test_src/test_tgt)\n"
            "  --device cpu|cuda  device to decode on (default: each checkpoint's)\n"
            "  --baseline CONFIG  seed-aware paired bootstrap of every config against CONFIG\n"
            "  --budget steps=N|epochs=N|hours=H  the same training budget for every config RUN\n"
            "  --seeds s1,s2,...  train every config RUN once per seed (mean ± sd in the report)\n"
            "writes DIR/compare.md, compare.csv, significance.csv, curves.png, tradeoff.png,\n"
            "attention_<config>_<i>.png and DIR/archive/\n");
}

/* ---- small helpers ---- */

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

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
static int folder_name_shared(const char **args, int n, int i) {
    char a[256], b[256];
    base_name(args[i], a, sizeof a);
    for (int j = 0; j < n; j++) {
        if (j == i || !is_dir(args[j])) continue;
        base_name(args[j], b, sizeof b);
        if (!strcmp(a, b)) return 1;
    }
    return 0;
}

/* r->name = the run.name of r->dir/config.ini, where that file loads; else unchanged. */
static void name_from_config_ini(Run *r) {
    char path[1100];
    snprintf(path, sizeof path, "%s/config.ini", r->dir);
    if (!is_file(path)) return;
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

/* --budget steps=N | epochs=N | hours=H; returns 0, or 2 with a message. */
static int parse_budget(const char *s, Compare *c) {
    static const struct { const char *key; int kind; } kinds[] = {
        {"steps=", BUDGET_STEPS}, {"epochs=", BUDGET_EPOCHS}, {"hours=", BUDGET_HOURS}};
    for (int k = 0; k < 3; k++) {
        size_t kl = strlen(kinds[k].key);
        if (strncmp(s, kinds[k].key, kl)) continue;
        char *end;
        errno = 0;
        double v = strtod(s + kl, &end);
        int whole = kinds[k].kind != BUDGET_HOURS;
        if (end == s + kl || *end || errno || !(v > 0) || v > 1e9 || (whole && v != floor(v)))
            break;
        c->budget_kind = kinds[k].kind;
        c->budget = v;
        snprintf(c->budget_tag, sizeof c->budget_tag, "%.*s%g", (int)kl - 1, kinds[k].key, v);
        return 0;
    }
    fprintf(stderr, "trainer compare: --budget %s: give steps=N or epochs=N (a positive whole "
            "number) or hours=H (a positive number)\n", s);
    return 2;
}

/* Appends sfx to dst (capacity n); -1 (dst unchanged) when it does not fit. */
static int append(char *dst, size_t n, const char *sfx) {
    size_t l = strlen(dst), k = strlen(sfx);
    if (l + k >= n) return -1;
    memcpy(dst + l, sfx, k + 1);
    return 0;
}

/* r's folder (and train.save_dir) suffixed with sfx; 0, or 2 with a message when too long. */
static int suffix_dir(Run *r, const char *sfx) {
    if (append(r->dir, sizeof r->dir, sfx) || strlen(r->dir) >= sizeof r->ini.save_dir) {
        fprintf(stderr, "trainer compare: RUN %s: its folder %s%s is too long; set a shorter "
                "train.save_dir\n", r->arg, r->dir, sfx);
        return 2;
    }
    memcpy(r->ini.save_dir, r->dir, strlen(r->dir) + 1);
    return 0;
}

/* The budget of --budget in r->ini, and r's folder suffixed with its tag (config RUNs). */
static int apply_budget(const Compare *c, Run *r) {
    Config *ini = &r->ini;
    if (c->budget_kind == BUDGET_NONE) return 0;
    ini->max_steps = c->budget_kind == BUDGET_STEPS ? (long)c->budget : 0;
    ini->max_epochs = c->budget_kind == BUDGET_EPOCHS ? (int)c->budget : 1000000;
    ini->max_hours = c->budget_kind == BUDGET_HOURS ? c->budget : 0;
    ini->patience = 0; /* the whole budget: no early stopping */
    char sfx[80];
    snprintf(sfx, sizeof sfx, "_%s", c->budget_tag);
    return suffix_dir(r, sfx);
}

/* r as the run of seed s: train.seed, name <name>_s<seed>, folder <dir>_s<seed>. */
static int apply_seed(Run *r, unsigned long long s) {
    char sfx[32];
    r->ini.seed = (uint64_t)s;
    snprintf(sfx, sizeof sfx, "_s%llu", s);
    if (append(r->name, sizeof r->name, sfx)) {
        fprintf(stderr, "trainer compare: RUN %s: run.name is too long for a seed suffix\n",
                r->arg);
        return 2;
    }
    return suffix_dir(r, sfx);
}

/* ---- resolving RUN arguments ---- */

/* Fills r from the argument; returns 0, or 2 with a message on stderr. */
static int resolve_run(Run *r, const char *arg) {
    Err err;
    snprintf(r->arg, sizeof r->arg, "%s", arg);
    if (is_dir(arg) && archive_is(arg)) {
        Archive a;
        Status s = archive_read(arg, &a, &err);
        if (!s) snprintf(r->name, sizeof r->name, "%s", a.name);
        archive_free(&a);
        if (s) {
            fprintf(stderr, "trainer compare: RUN %s: %s\n", arg, err.msg);
            return 2;
        }
        r->kind = RUN_ARCHIVE;
        snprintf(r->dir, sizeof r->dir, "%s", arg);
        snprintf(r->archive, sizeof r->archive, "%s", arg);
        return 0;
    }
    if (is_dir(arg)) {
        char ck[1100], mj[1100];
        snprintf(r->dir, sizeof r->dir, "%s", arg);
        snprintf(mj, sizeof mj, "%s/metrics.jsonl", arg);
        int has_ck = 0;
        static const char *const names[] = {"best.ckpt", "avg.ckpt", "last.ckpt"};
        for (int i = 0; i < 3; i++) {
            snprintf(ck, sizeof ck, "%s/%s", arg, names[i]);
            has_ck |= is_file(ck);
        }
        if (!has_ck || !is_file(mj)) {
            fprintf(stderr, "trainer compare: RUN %s: this folder has no %s%s%s; give an "
                    "archive, a run folder written by `trainer train` (its train.save_dir, e.g. "
                    "checkpoints/luong) or the run's config .ini (compare then trains it)\n",
                    arg, has_ck ? "" : "best.ckpt or last.ckpt",
                    !has_ck && !is_file(mj) ? " and no " : "", is_file(mj) ? "" : "metrics.jsonl");
            return 2;
        }
        r->kind = RUN_FOLDER;
        base_name(arg, r->name, sizeof r->name);
        return 0;
    }
    if (!is_file(arg)) {
        fprintf(stderr, "trainer compare: RUN %s: %s; give an archive or run folder, or a "
                "config .ini\n", arg,
                access(arg, F_OK) == 0 ? "not a regular file or folder" : strerror(errno));
        return 2;
    }
    if (config_load(&r->ini, arg, &err) || config_validate(&r->ini, &err)) {
        fprintf(stderr, "trainer compare: RUN %s is neither a run folder nor a usable config "
                "file: %s\n", arg, err.msg);
        return 2;
    }
    r->kind = RUN_CONFIG;
    config_save_dir(&r->ini, r->dir, sizeof r->dir);
    snprintf(r->name, sizeof r->name, "%s", r->ini.name);
    return 0;
}

/* Trains a config RUN whose folder has no best.ckpt yet, and resumes one that holds a
 * last.ckpt (an interrupted run; train_run trains nothing when the run had reached its limits). */
static Status train_if_needed(Run *r, Err *err) {
    char ck[1100], last[1100];
    snprintf(ck, sizeof ck, "%s/best.ckpt", r->dir);
    snprintf(last, sizeof last, "%s/last.ckpt", r->dir);
    int has_best = is_file(ck), resume = is_file(last);
    if (r->kind != RUN_CONFIG || (has_best && !resume)) return STATUS_OK;
    if (has_best)
        fprintf(stderr, "trainer compare: %s: resuming %s from last.ckpt, in case it was "
                "interrupted before its limits\n", r->dir, r->arg);
    else
        fprintf(stderr, "trainer compare: %s has no best.ckpt yet: %s training %s first\n",
                r->dir, resume ? "resuming (from last.ckpt)" : "starting", r->arg);
    if (train_run(&r->ini, resume, err)) return err_prefix(err, "training %s", r->arg);
    if (!is_file(ck)) {
        if (!is_file(last))
            return err_set(err, "training %s finished without %s or %s", r->arg, ck, last);
        fprintf(stderr, "trainer compare: %s stopped before its first validation: comparing "
                "last.ckpt\n", r->arg);
    }
    return STATUS_OK;
}

/* The archive of every run folder (given, or a config's) into DIR/archive/<run>. */
static Status archive_runs(Compare *c, Err *err) {
    int sentences[ARCHIVE_MAX_MAPS];
    for (int k = 0; k < c->nsentences; k++) sentences[k] = (int)c->sentences[k];
    for (int i = 0; i < c->nruns; i++) {
        Run *r = &c->runs[i];
        if (r->kind == RUN_ARCHIVE) continue;
        snprintf(r->archive, sizeof r->archive, "%s/archive/%s", c->out_dir, r->name);
        ArchiveOpts o = {c->tests.spec, c->tests.nsrc, c->beam, sentences, c->nsentences,
                         c->device, 0, r->kind == RUN_CONFIG ? r->arg : NULL, r->name};
        ArchiveTestSpec own = {NULL, r->ini.test_src, r->ini.test_tgt};
        if (r->kind == RUN_CONFIG && !c->tests.nsrc) { /* the .ini's test set */
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
    if (!rc && c->tests.nsrc) {
        for (int k = 0; k < c->tests.nsrc; k++) {
            archive_test_name(c->tests.spec[k].tgt, names[k], sizeof names[k]);
            tests[ntests++] = names[k];
        }
    } else if (!rc) {
        for (int k = 0; k < a[0].ntests; k++) tests[ntests++] = a[0].tests[k].name;
        if (!ntests) rc = err_set(err, "run %s has no test set", a[0].name);
    }
    if (!rc) {
        char title[128];
        snprintf(title, sizeof title, "Comparison of %d run%s", c->nruns,
                 c->nruns == 1 ? "" : "s");
        char intro[512] = "";
        if (c->budget_kind != BUDGET_NONE)
            snprintf(intro, sizeof intro, "Budget: every config trained with %s (train.%s = %g, "
                     "the other limits lifted, train.patience = 0: no early stopping).",
                     c->budget_tag, c->budget_kind == BUDGET_STEPS    ? "max_steps"
                                    : c->budget_kind == BUDGET_EPOCHS ? "max_epochs"
                                                                      : "max_hours",
                     c->budget);
        int sentences[ARCHIVE_MAX_MAPS];
        for (int k = 0; k < c->nsentences; k++) sentences[k] = (int)c->sentences[k];
        ReportTable t = {"Results", "", c->baseline, p, NULL, c->nruns};
        ReportOpts o = {c->out_dir, "compare.md", "compare.csv", title, intro[0] ? intro : NULL,
                        NULL, tests, ntests, sentences, c->nsentences, stdout};
        rc = report_write(&o, &t, 1, err);
    }
    for (int i = 0; i < n; i++) archive_free(&a[i]);
    free(a), free(p);
    return rc;
}

int cmd_compare(int argc, char **argv) {
    Compare c;
    Err err;
    int rc = 2, alpha_set = 0;
    memset(&c, 0, sizeof c);
    c.out_dir = "compare";
    c.device = -1;
    c.beam = (DecodeOpts){5, 1.0f};
    c.nsentences = 3;
    c.sentences[0] = 0, c.sentences[1] = 1, c.sentences[2] = 2;
    const char **args = xcalloc((size_t)(argc > 0 ? argc : 1), sizeof(char *));
    int nargs = 0;
    for (int i = 0; i < argc; i++) {
        int d = parse_decode_arg(argc, argv, &i, &c.beam, &alpha_set, "compare");
        if (d == 2) goto done;
        if (d == 1) continue;
        d = cli_test_arg(argc, argv, &i, &c.tests, "compare");
        if (d == 2) goto done;
        if (d == 1) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            c.out_dir = argv[++i];
            if (!*c.out_dir) {
                fprintf(stderr, "trainer compare: --out needs a folder name\n");
                goto done;
            }
        } else if (!strcmp(argv[i], "--sentences") && i + 1 < argc) {
            if (cli_parse_numbers(argv[++i], c.sentences, ARCHIVE_MAX_MAPS, &c.nsentences,
                                  100000000, "compare --sentences"))
                goto done;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &c.device, "compare")) goto done;
        } else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
            c.baseline = argv[++i];
        } else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
            if (parse_budget(argv[++i], &c)) goto done;
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            if (cli_parse_numbers(argv[++i], c.seeds, CMP_MAX_SEEDS, &c.nseeds, UINT64_MAX,
                                  "compare --seeds"))
                goto done;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "trainer compare: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            goto done;
        } else {
            args[nargs++] = argv[i];
        }
    }
    if (!alpha_set) c.beam.len_penalty = 1.0f; /* the documented default, also for --beam 1 */
    if (nargs == 0) {
        fprintf(stderr, "trainer compare: give at least one RUN (an archive, a run folder or a "
                "config .ini)\n");
        usage(stderr);
        goto done;
    }
    if (cli_tests_done(&c.tests, "compare")) goto done;
    int per = c.nseeds ? c.nseeds : 1;
    c.runs = xcalloc((size_t)nargs * (size_t)per, sizeof(Run));
    for (int i = 0; i < nargs; i++) {
        Run one;
        memset(&one, 0, sizeof one);
        if (resolve_run(&one, args[i])) goto done;
        if (one.kind == RUN_FOLDER && folder_name_shared(args, nargs, i))
            name_from_config_ini(&one);
        if ((c.budget_kind != BUDGET_NONE || c.nseeds) && one.kind != RUN_CONFIG) {
            fprintf(stderr, "trainer compare: --budget and --seeds train config RUNs, but RUN %s "
                    "is already trained; give its config .ini instead\n", args[i]);
            goto done;
        }
        if (apply_budget(&c, &one)) goto done;
        for (int s = 0; s < per; s++) {
            Run *r = &c.runs[c.nruns];
            *r = one;
            if (c.nseeds && apply_seed(r, c.seeds[s])) goto done;
            sanitize(r->name);
            uniquify(c.runs, c.nruns);
            c.nruns++;
        }
    }
    if (c.baseline) { /* a config is a run's name, or its name without _s<seed> */
        int found = 0;
        char stem[256], list[2048] = "";
        for (int i = 0; i < c.nruns; i++) {
            report_stem(c.runs[i].name, stem, sizeof stem);
            found |= !strcmp(c.runs[i].name, c.baseline) || !strcmp(stem, c.baseline);
            if (!strstr(list, stem)) str_appendf(list, sizeof list, "%s%s", list[0] ? ", " : "",
                                                 stem);
        }
        if (!found) {
            fprintf(stderr, "trainer compare: --baseline %s is not one of the configs (%s); give "
                    "a config's name as the report shows it\n", c.baseline, list);
            goto done;
        }
    }
    /* the usage checks are done; from here on a problem is a failure (1) */
    rc = 1;
    if (!plot_gnuplot_available(&err)) goto fail;
    if (make_dirs(c.out_dir, &err)) {
        err_prefix(&err, "--out %s (choose another --out DIR)", c.out_dir);
        goto fail;
    }
    for (int i = 0; i < c.nruns; i++)
        if (train_if_needed(&c.runs[i], &err)) goto fail;
    if (archive_runs(&c, &err) || report(&c, &err)) goto fail;
    fprintf(stdout, "wrote %s/compare.md, %s/compare.csv and the plots in %s; the runs' archives "
            "are in %s/archive\n", c.out_dir, c.out_dir, c.out_dir, c.out_dir);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "trainer compare: %s\n", err.msg);
done:
    free(c.runs);
    free(args);
    return rc;
}
