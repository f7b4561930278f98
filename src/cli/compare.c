/* compare.c — `trainer compare`: one table, curves and attention maps for several trained runs.
 *
 *   trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A] [--sentences i,j,k]
 *                          [--test-src FILE --test-tgt FILE] [--device cpu|cuda]
 *                          [--baseline NAME] [--budget steps=N|epochs=N|hours=H]
 *                          [--seeds s1,s2,...]
 *
 * RUN is either
 *  - a run folder written by `trainer train` (train.save_dir, e.g. checkpoints/luong) holding
 *    best.ckpt and metrics.jsonl; its name is the folder's last component, or, where several
 *    RUN folders share that component (a/run, b/run), the run.name of its config.ini (written
 *    by `trainer train` since 2026-11-26; without one the name stays); or
 *  - a config .ini file: its run folder is config_save_dir() of the loaded (and validated)
 *    config, its name run.name. If that folder has no best.ckpt yet, the run is trained first
 *    (train_run); if it holds a last.ckpt, training resumes from it first (an interrupted run
 *    is completed; one that had reached its limits trains nothing), then it is compared.
 * Names are reduced to [A-Za-z0-9._-] (other bytes become '_') and made unique ("name_2", ...)
 * because they also name files.
 *
 * A run folder without best.ckpt (stopped before its first validation) is compared on its
 * last.ckpt, and compare.md says so next to the run.
 *
 * For each run: best.ckpt (or last.ckpt, above) is loaded (checkpoint_load_weights; --device
 * overrides the stored train.device); metrics.jsonl is read with a tolerant key lookup ("key":
 * number; unparsable lines are skipped with a warning on stderr); the test set — the checkpoint's
 * data.test_src/test_tgt (for a config RUN: the .ini's), or --test-src/--test-tgt for every run —
 * is loaded with corpus_load (pairs with an empty or over-long side are skipped, so sentence
 * indices count kept pairs) and translated twice: greedily and with beam K (default 5) and
 * length penalty α (default 1.0; Wu et al. 2016 eq. 14), scored with sacreBLEU-compatible corpus
 * BLEU and chrF (metrics.h).
 *
 * Table columns (compare.md, compare.csv, and the Markdown table on stdout):
 *   run, model (rnn|transformer), cell (lstm|gru; "—" for a transformer), attention
 *   (config_attention_text: the RNN's kind, or the Transformer's "self/dec self/cross" kinds,
 *   one name when all agree), input feeding (yes|no; "—" for a transformer), parameters (floats),
 *   epochs (highest epoch with a validation line), training time (the last validation line's
 *   "elapsed", seconds; Markdown shows h/min/s), tokens/s (mean "tok_s" of the train lines),
 *   peak memory MiB (max "peak_rss_mb" of the validation lines; "—" / empty when absent: runs from
 *   before that key), best validation perplexity (min "val_ppl"), best validation BLEU
 *   (max "val_bleu"), test BLEU and chrF (percent) greedy, test BLEU and chrF with beam K.
 *   A missing value is "—" in Markdown and an empty field in CSV; CSV numbers are plain
 *   (no units, '.' decimal point, RFC 4180 quoting for text).
 *
 * Files written in DIR (default "compare" in the current folder, created with its parents):
 *   compare.md   the table, a line naming the machine (CPU "model name" from /proc/cpuinfo,
 *                online cores, date), the decoding settings, the runs' folders and test sets,
 *                and image links to the PNGs below (or why a map was skipped);
 *   compare.csv  the same columns;
 *   curves.png   validation BLEU and perplexity (log scale) by epoch of every run, two panels
 *                (plot_curves_png);
 *   tradeoff.png test BLEU (beam) against parameters and against training time, one labelled
 *                point per run (plot_tradeoff_png);
 *   attention_<run>_<i>.png  the greedy translation's attention of test sentence i (0-based;
 *                --sentences, default 0,1,2 — those beyond a short test set are left out unless
 *                given explicitly, which is an error) for each run with an attention; runs with
 *                model.attention = none are skipped with a note in compare.md.
 *
 * --baseline NAME (a run's name as in the table): every other run is compared with it by paired
 * bootstrap resampling on the test set (Koehn 2004; eval/significance.h: 1000 resamples, seed
 * 12345, the statistics of sacreBLEU's --paired-bs) on the beam translations: the BLEU
 * difference, its 95% interval and p, in a "Significance" section of compare.md that says in
 * words which differences are significant at 0.05, and in compare.csv (delta_bleu_vs_baseline,
 * delta_lo, delta_hi, p_value; empty for the baseline). The runs must share the test set
 * (same target file and pair count), else it is an error naming both.
 *
 * --budget steps=N | epochs=N | hours=H gives every config RUN the same training budget
 * (train.max_steps, max_epochs or max_hours set to it, the other two limits lifted, and no early
 * stopping: train.patience = 0) and a run folder of its own, <save_dir>_<budget> (steps2000,
 * epochs8, hours1.5), so that a run trained under another budget is never reused. --seeds
 * s1,s2,... (up to CMP_MAX_SEEDS) trains every config RUN once per seed (train.seed), as runs
 * named <name>_s<seed> in <save_dir>[_<budget>]_s<seed>; compare.md then gains a "Seeds" table:
 * per config, the mean ± sample standard deviation over its seeds of the test BLEU (greedy and
 * beam) and of the best validation BLEU. Both need config RUNs: a run folder is already trained
 * (usage error, exit 2).
 *
 * Needs the gnuplot program (checked before any training or decoding).
 */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "eval/decode.h"
#include "eval/metrics.h"
#include "eval/plot.h"
#include "eval/significance.h"
#include "eval/translate.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/train.h"

#define CMP_MAX_SENTENCES 64
#define CMP_MAX_SEEDS 16

enum { BUDGET_NONE, BUDGET_STEPS, BUDGET_EPOCHS, BUDGET_HOURS };
#define DASH "\xe2\x80\x94" /* — */

/* One run: where it is, what metrics.jsonl says, what the test set gives. */
typedef struct {
    char arg[1024];        /* the RUN argument as given */
    char name[256];        /* display and file name ([A-Za-z0-9._-], unique) */
    char dir[1024];        /* run folder */
    int from_config;       /* RUN was an .ini */
    const char *ckpt;      /* "best.ckpt", or "last.ckpt" when no validation has run yet */
    Config ini;            /* the loaded config when from_config */
    /* from the checkpoint */
    Config cfg;
    long params;
    char test_src[1024], test_tgt[1024];
    long test_n;
    /* from metrics.jsonl */
    CurvePoint *pts;
    int npts;
    int epochs;
    double train_secs, tok_s, peak_mib, best_ppl, best_bleu;
    int has_secs, has_tok_s, has_peak;
    /* test scores */
    double bleu_g, chrf_g, bleu_b, chrf_b;
    BleuStats *seg;        /* [test_n] per-sentence BLEU statistics of the beam translations */
    PairedBootstrap sig;   /* against --baseline (has_sig) */
    int has_sig;
    int group;             /* index of the RUN argument it came from (--seeds expands one RUN) */
    /* attention maps: which sentence indices were drawn (-1 = none) */
    int has_attention;
    int drawn[CMP_MAX_SENTENCES];
    int ndrawn;
} Run;

typedef struct {
    Run *runs;
    int nruns;
    const char *out_dir;
    DecodeOpts beam;
    int device;                       /* -1 = each checkpoint's */
    int sentences[CMP_MAX_SENTENCES]; /* test sentence indices for the maps */
    int nsentences;
    int sentences_given;
    const char *test_src, *test_tgt; /* overrides, or NULL */
    const char *baseline;            /* --baseline NAME, or NULL */
    int base;                        /* its index in runs */
    int budget_kind;                 /* BUDGET_* (--budget) */
    double budget;                   /* its N or H */
    char budget_tag[64];             /* "epochs8": folder suffix and report text */
    unsigned long long seeds[CMP_MAX_SEEDS]; /* --seeds */
    int nseeds;
} Compare;

#define CMP_RESAMPLES 1000
#define CMP_SEED 12345

static void usage(FILE *f) {
    fprintf(f,
            "usage: trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A]\n"
            "                       [--sentences i,j,k] [--test-src FILE --test-tgt FILE]\n"
            "                       [--device cpu|cuda]\n"
            "  RUN: a run folder (with best.ckpt and metrics.jsonl, e.g. checkpoints/luong) or a\n"
            "       config .ini (trained first when its folder has no best.ckpt yet)\n"
            "  --out DIR          output folder (default: compare)\n"
            "  --beam K           beam size of the second decoding (1..64, default 5)\n"
            "  --len-penalty A    length penalty alpha for the beam (0..10, default 1.0)\n"
            "  --sentences i,j,k  0-based test sentences for the attention maps (default 0,1,2)\n"
            "  --test-src/--test-tgt  test set for every run (default: each run's "
            "data.test_src/test_tgt)\n"
            "  --device cpu|cuda  device to evaluate on (default: each checkpoint's)\n"
            "  --baseline NAME    paired bootstrap (1000 resamples) of every run against run NAME\n"
            "  --budget steps=N|epochs=N|hours=H  the same training budget for every config RUN\n"
            "  --seeds s1,s2,...  train every config RUN once per seed (mean ± sd in the report)\n"
            "writes DIR/compare.md, DIR/compare.csv, DIR/curves.png, DIR/tradeoff.png, "
            "DIR/attention_<run>_<i>.png\n");
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

/* "--sentences 0,1,2" → indices. Returns 0 or 2 (message on stderr). */
static int parse_sentences(const char *s, Compare *c) {
    c->nsentences = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 100000000 || errno || (*end && *end != ',')) {
            fprintf(stderr, "trainer compare: --sentences %s: give 0-based test sentence "
                    "indices separated by commas, e.g. 0,1,2\n", s);
            return 2;
        }
        if (c->nsentences == CMP_MAX_SENTENCES) {
            fprintf(stderr, "trainer compare: --sentences %s: at most %d sentences\n", s,
                    CMP_MAX_SENTENCES);
            return 2;
        }
        c->sentences[c->nsentences++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p) {
            fprintf(stderr, "trainer compare: --sentences %s: trailing comma\n", s);
            return 2;
        }
    }
    if (c->nsentences == 0) {
        fprintf(stderr, "trainer compare: --sentences needs at least one index, e.g. 0,1,2\n");
        return 2;
    }
    return 0;
}

/* ---- metrics.jsonl ---- */

/* The number after "key": in line; 1 if found and finite. */
static int json_num(const char *line, const char *key, double *v) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t') p++;
    char *end;
    double d = strtod(p, &end);
    if (end == p || !isfinite(d)) return 0;
    *v = d;
    return 1;
}

/* The string after "type": in line into buf; 1 if found. */
static int json_type(const char *line, char *buf, size_t n) {
    const char *p = strstr(line, "\"type\":");
    if (!p) return 0;
    p += 7;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != '"') return 0;
    size_t k = 0;
    while (*p && *p != '"' && k + 1 < n) buf[k++] = *p++;
    buf[k] = 0;
    return *p == '"';
}

static Status read_metrics(Run *r, Err *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/metrics.jsonl", r->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(err, "%s: cannot read: %s; compare needs the metrics.jsonl that "
                       "`trainer train` writes next to best.ckpt", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, bad = 0, ntok = 0;
    int pcap = 0;
    double tok_sum = 0;
    r->best_ppl = INFINITY, r->best_bleu = -INFINITY;
    while (getline(&line, &cap, f) != -1) {
        lineno++;
        char type[32];
        double v;
        const char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p) continue;
        if (!json_type(p, type, sizeof type)) {
            bad++;
            continue;
        }
        if (!strcmp(type, "train")) {
            if (json_num(p, "tok_s", &v)) tok_sum += v, ntok++;
        } else if (!strcmp(type, "val")) {
            double e, ppl, bleu;
            if (!json_num(p, "epoch", &e) || !json_num(p, "val_ppl", &ppl) ||
                !json_num(p, "val_bleu", &bleu)) {
                bad++;
                continue;
            }
            if (r->npts == pcap) {
                pcap = pcap ? 2 * pcap : 16;
                r->pts = xrealloc(r->pts, sizeof *r->pts * (size_t)pcap);
            }
            double secs = NAN;
            if (json_num(p, "elapsed", &v)) secs = v;
            r->pts[r->npts++] = (CurvePoint){(int)e, bleu, ppl, secs / 3600.0};
            if ((int)e > r->epochs) r->epochs = (int)e;
            if (ppl < r->best_ppl) r->best_ppl = ppl;
            if (bleu > r->best_bleu) r->best_bleu = bleu;
            if (json_num(p, "elapsed", &v)) r->train_secs = v, r->has_secs = 1;
            if (json_num(p, "peak_rss_mb", &v)) {
                if (!r->has_peak || v > r->peak_mib) r->peak_mib = v;
                r->has_peak = 1;
            }
        }
    }
    int rerr = ferror(f);
    free(line);
    fclose(f);
    if (rerr) return err_set(err, "%s: read error", path);
    if (ntok) r->tok_s = tok_sum / (double)ntok, r->has_tok_s = 1;
    if (bad)
        fprintf(stderr, "trainer compare: warning: %s: %ld of %ld lines are not train/val "
                "records this version understands; skipped\n", path, bad, lineno);
    if (r->npts == 0)
        fprintf(stderr, "trainer compare: warning: %s has no validation line; the validation "
                "columns of run %s stay empty\n", path, r->name);
    return STATUS_OK;
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

/* --seeds s1,s2,...; returns 0, or 2 with a message. */
static int parse_seeds(const char *s, Compare *c) {
    c->nseeds = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        if (*p == '-' || !isdigit((unsigned char)*p)) break;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || c->nseeds == CMP_MAX_SEEDS) break;
        for (int i = 0; i < c->nseeds; i++)
            if (c->seeds[i] == v) {
                fprintf(stderr, "trainer compare: --seeds %s: seed %llu is given twice\n", s, v);
                return 2;
            }
        c->seeds[c->nseeds++] = v;
        p = end;
        if (*p == ',' && p[1]) p++;
        else if (*p) break;
    }
    if (*p || c->nseeds == 0) {
        fprintf(stderr, "trainer compare: --seeds %s: give 1 to %d different non-negative "
                "integers separated by commas, e.g. --seeds 1,2,3\n", s, CMP_MAX_SEEDS);
        return 2;
    }
    return 0;
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
    if (is_dir(arg)) {
        char ck[1100], mj[1100];
        snprintf(r->dir, sizeof r->dir, "%s", arg);
        snprintf(ck, sizeof ck, "%s/best.ckpt", arg);
        snprintf(mj, sizeof mj, "%s/metrics.jsonl", arg);
        int has_ck = is_file(ck), has_mj = is_file(mj);
        r->ckpt = "best.ckpt";
        if (!has_ck) { /* no validation yet: the last checkpoint, and the report says so */
            snprintf(ck, sizeof ck, "%s/last.ckpt", arg);
            has_ck = is_file(ck);
            r->ckpt = "last.ckpt";
            if (has_ck && has_mj)
                fprintf(stderr, "trainer compare: RUN %s has no best.ckpt yet (no validation "
                        "has run): comparing its last.ckpt\n", arg);
        }
        if (!has_ck || !has_mj) {
            fprintf(stderr, "trainer compare: RUN %s: this folder has no %s%s%s; give a run "
                    "folder written by `trainer train` (its train.save_dir, e.g. "
                    "checkpoints/luong) or the run's config .ini (compare then trains it)\n",
                    arg, has_ck ? "" : "best.ckpt or last.ckpt",
                    !has_ck && !has_mj ? " and no " : "", has_mj ? "" : "metrics.jsonl");
            return 2;
        }
        base_name(arg, r->name, sizeof r->name);
        return 0;
    }
    if (!is_file(arg)) {
        fprintf(stderr, "trainer compare: RUN %s: %s; give a run folder (with best.ckpt and "
                "metrics.jsonl) or a config .ini\n", arg,
                access(arg, F_OK) == 0 ? "not a regular file or folder" : strerror(errno));
        return 2;
    }
    if (config_load(&r->ini, arg, &err) || config_validate(&r->ini, &err)) {
        fprintf(stderr, "trainer compare: RUN %s is neither a run folder nor a usable config "
                "file: %s\n", arg, err.msg);
        return 2;
    }
    r->from_config = 1;
    r->ckpt = "best.ckpt";
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
    if (!r->from_config || (has_best && !resume)) return STATUS_OK;
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
        r->ckpt = "last.ckpt"; /* stopped before the first validation (train.max_steps) */
        fprintf(stderr, "trainer compare: %s stopped before its first validation: comparing "
                "last.ckpt\n", r->arg);
    }
    return STATUS_OK;
}

/* ---- evaluation ---- */

/* Translates c with o and scores it; seg (NULL: not wanted) gets the per-sentence statistics. */
static Status score(Model *m, const Spm *spm, const Corpus *c, const DecodeOpts *o, double *bleu,
                    double *chrf, BleuStats **seg, Err *err) {
    char **hyp = NULL;
    double t0 = now_seconds();
    if (translate_lines(m, spm, (const char *const *)c->src, c->n, o, &hyp, NULL, err)) return
        STATUS_ERR;
    BleuScore b = bleu_corpus((const char *const *)hyp, (const char *const *)c->tgt, c->n);
    *bleu = b.score;
    *chrf = chrf_corpus((const char *const *)hyp, (const char *const *)c->tgt, c->n);
    if (seg) {
        free(*seg);
        *seg = xmalloc(sizeof **seg * (size_t)(c->n > 0 ? c->n : 1));
        bleu_segment_stats(*seg, (const char *const *)hyp, (const char *const *)c->tgt, c->n);
    }
    free_lines(hyp, c->n);
    fprintf(stderr, "  %s: BLEU %.2f chrF %.2f (%ld sentences, %.1f s)\n",
            o->beam == 1 ? "greedy" : "beam", *bleu, *chrf, c->n, now_seconds() - t0);
    return STATUS_OK;
}

static Status attention_maps(Compare *cmp, Run *r, Model *m, const Spm *spm, const Corpus *c,
                             Err *err) {
    Status rc = STATUS_ERR;
    const char *lines[CMP_MAX_SENTENCES];
    int idx[CMP_MAX_SENTENCES], n = 0;
    AttnMap maps[CMP_MAX_SENTENCES];
    char **out = NULL;
    memset(maps, 0, sizeof maps);
    for (int k = 0; k < cmp->nsentences; k++) {
        if (cmp->sentences[k] >= c->n) continue; /* checked in eval_run when given explicitly */
        idx[n] = cmp->sentences[k];
        lines[n++] = c->src[cmp->sentences[k]];
    }
    if (n == 0) return STATUS_OK;
    DecodeOpts greedy = {1, 0.0f};
    if (translate_lines(m, spm, lines, n, &greedy, &out, maps, err))
        return err_prefix(err, "attention maps of run %s", r->name);
    for (int k = 0; k < n; k++) {
        char path[1400], title[1600];
        snprintf(path, sizeof path, "%s/attention_%s_%d.png", cmp->out_dir, r->name, idx[k]);
        snprintf(title, sizeof title, "%s: test sentence %d (greedy)", r->name, idx[k]);
        if (plot_attention_png(&maps[k], path, title, err)) goto cleanup;
        r->drawn[r->ndrawn++] = idx[k];
    }
    rc = STATUS_OK;
cleanup:
    for (int k = 0; k < n; k++) attn_map_free(&maps[k]);
    free_lines(out, n);
    return rc;
}

static Status eval_run(Compare *cmp, Run *r, Err *err) {
    Status rc = STATUS_ERR;
    Model m;
    Spm *spm;
    Corpus c = {0};
    char ck[1100];
    snprintf(ck, sizeof ck, "%s/%s", r->dir, r->ckpt);
    fprintf(stderr, "trainer compare: run %s: %s\n", r->name, ck);
    if (read_metrics(r, err)) return STATUS_ERR;
    if (checkpoint_load_weights(ck, &m, &r->cfg, &spm, cmp->device, err)) return STATUS_ERR;
    set_threads(r->cfg.threads);
    r->params = (long)m.ps.total;
    r->has_attention = model_has_attention(&m);
    const Config *tc = r->from_config ? &r->ini : &r->cfg;
    snprintf(r->test_src, sizeof r->test_src, "%s", cmp->test_src ? cmp->test_src : tc->test_src);
    snprintf(r->test_tgt, sizeof r->test_tgt, "%s", cmp->test_tgt ? cmp->test_tgt : tc->test_tgt);
    if (!r->test_src[0] || !r->test_tgt[0]) {
        err_set(err, "run %s: %s has no test set (data.test_src and data.test_tgt are empty); "
                "set them in the config (e.g. data/multi30k/test_2016_flickr.de.gz and .en.gz) "
                "or give --test-src FILE --test-tgt FILE", r->name,
                r->from_config ? r->arg : "the config stored in the checkpoint");
        goto cleanup;
    }
    if (corpus_load(&c, r->test_src, r->test_tgt, r->cfg.max_line_bytes, err)) {
        err_prefix(err, "run %s: test set", r->name);
        goto cleanup;
    }
    r->test_n = c.n;
    if (cmp->sentences_given)
        for (int k = 0; k < cmp->nsentences; k++)
            if (cmp->sentences[k] >= c.n) {
                err_set(err, "--sentences %d: the test set of run %s (%s) has only %ld usable "
                        "pairs (indices 0..%ld)", cmp->sentences[k], r->name, r->test_src, c.n,
                        c.n - 1);
                goto cleanup;
            }
    DecodeOpts greedy = {1, 0.0f};
    if (score(&m, spm, &c, &greedy, &r->bleu_g, &r->chrf_g, &r->seg, err)) goto fail_decode;
    if (cmp->beam.beam == 1) /* K = 1 is greedy decoding (decode.h) */
        r->bleu_b = r->bleu_g, r->chrf_b = r->chrf_g;
    else if (score(&m, spm, &c, &cmp->beam, &r->bleu_b, &r->chrf_b, &r->seg, err))
        goto fail_decode;
    if (r->has_attention && attention_maps(cmp, r, &m, spm, &c, err)) goto cleanup;
    rc = STATUS_OK;
    goto cleanup;
fail_decode:
    err_prefix(err, "run %s: decoding %s", r->name, r->test_src);
cleanup:
    corpus_free(&c);
    model_free(&m);
    spm_free(spm);
    return rc;
}

/* The paired bootstrap of every run against the baseline (--baseline). Errors: runs whose test
 * sets differ. */
static Status significance(Compare *cmp, Err *err) {
    const Run *b = &cmp->runs[cmp->base];
    for (int i = 0; i < cmp->nruns; i++) {
        Run *r = &cmp->runs[i];
        if (i == cmp->base) continue;
        if (r->test_n != b->test_n || strcmp(r->test_tgt, b->test_tgt) != 0)
            return err_set(err, "--baseline %s: run %s was tested on %s (%ld pairs) and the "
                           "baseline on %s (%ld pairs); a paired test needs one test set: give "
                           "--test-src FILE --test-tgt FILE", b->name, r->name, r->test_tgt,
                           r->test_n, b->test_tgt, b->test_n);
        if (r->test_n < 1)
            return err_set(err, "--baseline %s: the test set %s has no usable pairs", b->name,
                           b->test_tgt);
        r->sig = paired_bootstrap(b->seg, r->seg, r->test_n, CMP_RESAMPLES, NULL, CMP_SEED);
        r->has_sig = 1;
    }
    return STATUS_OK;
}

/* ---- output ---- */

static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10)) continue;
            char *p = strchr(line, ':');
            if (!p) continue;
            p++;
            while (*p == ' ' || *p == '\t') p++;
            size_t k = strcspn(p, "\r\n");
            snprintf(buf, n, "%.*s", (int)k, p);
            break;
        }
        fclose(f);
    }
    if (!strcmp(buf, "unknown CPU")) {
        struct utsname u;
        if (uname(&u) == 0) snprintf(buf, n, "unknown %s CPU", u.machine);
    }
}

static void fmt_duration(char *buf, size_t n, double s) {
    long t = (long)llround(s);
    if (t >= 3600) snprintf(buf, n, "%ld h %02ld min", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ld min %02ld s", t / 60, t % 60);
    else snprintf(buf, n, "%.1f s", s);
}


/* The Markdown table (header, rule, one row per run). */
static void write_md_table(FILE *f, const Compare *c) {
    fprintf(f, "| run | model | cell | attention | input feeding | parameters | epochs | "
               "training time | tokens/s | peak memory (MiB) | best val ppl | best val BLEU | "
               "test BLEU greedy | test chrF greedy | test BLEU beam %d | test chrF beam %d |\n",
            c->beam.beam, c->beam.beam);
    fprintf(f, "|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < c->nruns; i++) {
        const Run *r = &c->runs[i];
        int rnn = r->cfg.model.type == MODEL_RNN;
        char secs[64], tok[64], peak[64], ppl[64], bleu[64], attn[64];
        if (r->has_secs) fmt_duration(secs, sizeof secs, r->train_secs);
        else snprintf(secs, sizeof secs, DASH);
        if (r->has_tok_s) snprintf(tok, sizeof tok, "%.0f", r->tok_s);
        else snprintf(tok, sizeof tok, DASH);
        if (r->has_peak) snprintf(peak, sizeof peak, "%.0f", r->peak_mib);
        else snprintf(peak, sizeof peak, DASH);
        if (r->npts) {
            snprintf(ppl, sizeof ppl, "%.2f", r->best_ppl);
            snprintf(bleu, sizeof bleu, "%.2f", r->best_bleu);
        } else {
            snprintf(ppl, sizeof ppl, DASH);
            snprintf(bleu, sizeof bleu, DASH);
        }
        fprintf(f, "| %s | %s | %s | %s | %s | %ld | %d | %s | %s | %s | %s | %s | %.2f | %.2f | "
                   "%.2f | %.2f |\n",
                r->name, model_type_names[r->cfg.model.type],
                rnn ? cell_type_names[r->cfg.model.cell] : DASH,
                config_attention_text(&r->cfg, attn, sizeof attn),
                rnn ? (r->cfg.model.input_feeding ? "yes" : "no") : DASH, r->params, r->epochs,
                secs, tok, peak, ppl, bleu, r->bleu_g, r->chrf_g, r->bleu_b, r->chrf_b);
    }
}

/* A CSV text field (RFC 4180 quoting when needed). */
static void csv_text(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static Status close_checked(FILE *f, const char *path, Err *err) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return err_set(err, "%s: write failed (%s); check the free space and permissions of "
                       "the output folder", path, strerror(errno));
    return STATUS_OK;
}

static Status write_csv(const Compare *c, Err *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/compare.csv", c->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) return err_set(err, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "run,model,cell,attention,input_feeding,parameters,epochs,train_seconds,tok_s,"
               "peak_mib,best_val_ppl,best_val_bleu,test_bleu_greedy,test_chrf_greedy,"
               "test_bleu_beam,test_chrf_beam,delta_bleu_vs_baseline,delta_lo,delta_hi,"
               "p_value\n");
    for (int i = 0; i < c->nruns; i++) {
        const Run *r = &c->runs[i];
        int rnn = r->cfg.model.type == MODEL_RNN;
        char attn[64];
        csv_text(f, r->name);
        fprintf(f, ",%s,%s,%s,%s,%ld,%d,", model_type_names[r->cfg.model.type],
                rnn ? cell_type_names[r->cfg.model.cell] : "",
                config_attention_text(&r->cfg, attn, sizeof attn),
                rnn ? (r->cfg.model.input_feeding ? "yes" : "no") : "", r->params, r->epochs);
        if (r->has_secs) fprintf(f, "%.1f", r->train_secs);
        fputc(',', f);
        if (r->has_tok_s) fprintf(f, "%.1f", r->tok_s);
        fputc(',', f);
        if (r->has_peak) fprintf(f, "%.1f", r->peak_mib);
        fputc(',', f);
        if (r->npts) fprintf(f, "%.4f,%.4f", r->best_ppl, r->best_bleu);
        else fputc(',', f);
        fprintf(f, ",%.4f,%.4f,%.4f,%.4f,", r->bleu_g, r->chrf_g, r->bleu_b, r->chrf_b);
        if (r->has_sig)
            fprintf(f, "%.4f,%.4f,%.4f,%.4f\n", r->sig.delta, r->sig.delta_lo, r->sig.delta_hi,
                    r->sig.p);
        else
            fprintf(f, ",,,\n");
    }
    return close_checked(f, path, err);
}

/* mean and sample standard deviation (0 for one value) of v[0..n) */
static void mean_sd(const double *v, int n, double *mean, double *sd) {
    double m = 0, q = 0;
    for (int i = 0; i < n; i++) m += v[i];
    m /= n;
    for (int i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0.0;
}

/* The "Seeds" table: per config RUN, mean ± sample sd over its seeds. */
static void write_md_seeds(FILE *f, const Compare *c) {
    fprintf(f, "## Seeds\n\nEvery config trained once per seed (%d seeds:", c->nseeds);
    for (int s = 0; s < c->nseeds; s++) fprintf(f, "%s %llu", s ? "," : "", c->seeds[s]);
    fprintf(f, "); mean ± sample standard deviation over the seeds.\n\n"
               "| config | seeds | test BLEU greedy | test BLEU beam %d | best val BLEU |\n"
               "|---|---|---|---|---|\n", c->beam.beam);
    for (int i = 0; i < c->nruns; i += c->nseeds) {
        double g[CMP_MAX_SEEDS], b[CMP_MAX_SEEDS], v[CMP_MAX_SEEDS], mg, sg, mb, sb, mv, sv;
        int nv = 0;
        for (int s = 0; s < c->nseeds; s++) {
            const Run *r = &c->runs[i + s];
            g[s] = r->bleu_g, b[s] = r->bleu_b;
            if (r->npts) v[nv++] = r->best_bleu;
        }
        mean_sd(g, c->nseeds, &mg, &sg);
        mean_sd(b, c->nseeds, &mb, &sb);
        fprintf(f, "| %s | %d | %.2f ± %.2f | %.2f ± %.2f | ", c->runs[i].ini.name, c->nseeds, mg,
                sg, mb, sb);
        if (nv) {
            mean_sd(v, nv, &mv, &sv);
            fprintf(f, "%.2f ± %.2f |\n", mv, sv);
        } else {
            fprintf(f, DASH " |\n");
        }
    }
    fprintf(f, "\n");
}

static Status write_md(const Compare *c, Err *err) {
    char path[1100], cpu[256], date[64];
    snprintf(path, sizeof path, "%s/compare.md", c->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) return err_set(err, "%s: cannot write: %s", path, strerror(errno));
    cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M %Z", &tm);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(f, "# Comparison of %d run%s\n\n", c->nruns, c->nruns == 1 ? "" : "s");
    write_md_table(f, c);
    fprintf(f, "\nMachine: %s, %ld cores; %s. Evaluated on %s.\n", cpu, cores, date,
            c->device < 0 ? "each checkpoint's train.device" : device_type_names[c->device]);
    fprintf(f, "Decoding: greedy, and beam search with K = %d and length penalty "
               "α = %.2f (Wu et al. 2016 eq. 14); at most 2·S + 10 target pieces. BLEU and chrF "
               "as sacreBLEU's defaults, in percent. Training time and tokens/s are from each "
               "run's metrics.jsonl (the machine that trained it); peak memory is the training "
               "process's peak resident set.\n\n",
            c->beam.beam, (double)c->beam.len_penalty);
    if (c->budget_kind != BUDGET_NONE)
        fprintf(f, "Budget: every config trained with %s (train.%s = %g, the other limits "
                   "lifted, train.patience = 0: no early stopping).\n\n", c->budget_tag,
                c->budget_kind == BUDGET_STEPS ? "max_steps" : c->budget_kind == BUDGET_EPOCHS
                                                                   ? "max_epochs"
                                                                   : "max_hours",
                c->budget);
    if (c->nseeds) write_md_seeds(f, c);
    if (c->baseline) {
        const Run *b = &c->runs[c->base];
        fprintf(f, "## Significance against %s\n\n", b->name);
        fprintf(f, "Paired bootstrap resampling (Koehn 2004) of the test BLEU with beam %d, "
                   "%d resamples (seed %d), as sacreBLEU's `--paired-bs`: the difference from "
                   "%s, its 95%% interval (2.5th–97.5th percentile of the resampled "
                   "differences), each run's bootstrap mean ± 95%% half-width, and p (the "
                   "probability of a difference this large by chance).\n\n",
                c->beam.beam, CMP_RESAMPLES, CMP_SEED, b->name);
        fprintf(f, "| run | test BLEU beam %d | bootstrap μ ± 95%% | Δ vs %s | 95%% interval "
                   "of Δ | p |\n|---|---|---|---|---|---|\n", c->beam.beam, b->name);
        for (int i = 0; i < c->nruns; i++) {
            const Run *r = &c->runs[i];
            if (!r->has_sig) {
                fprintf(f, "| %s (baseline) | %.2f | " DASH " | " DASH " | " DASH " | " DASH
                           " |\n", r->name, r->bleu_b);
                continue;
            }
            fprintf(f, "| %s | %.2f | %.2f ± %.2f | %+.2f | [%+.2f, %+.2f] | %.4f |\n",
                    r->name, r->bleu_b, r->sig.sys_mean, r->sig.sys_ci, r->sig.delta,
                    r->sig.delta_lo, r->sig.delta_hi, r->sig.p);
        }
        fprintf(f, "\n");
        for (int i = 0; i < c->nruns; i++) {
            const Run *r = &c->runs[i];
            if (!r->has_sig) continue;
            if (r->sig.p < 0.05)
                fprintf(f, "- **%s** is significantly %s than %s at 0.05 (%+.2f BLEU, p = "
                           "%.4f).\n", r->name, r->sig.delta > 0 ? "better" : "worse", b->name,
                        r->sig.delta, r->sig.p);
            else
                fprintf(f, "- %s and %s do not differ significantly at 0.05 (%+.2f BLEU, p = "
                           "%.4f).\n", r->name, b->name, r->sig.delta, r->sig.p);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "## Runs\n\n");
    for (int i = 0; i < c->nruns; i++) {
        const Run *r = &c->runs[i];
        fprintf(f, "- **%s**: %s `%s`, checkpoint `%s/%s`%s; test set `%s` / `%s` "
                "(%ld pairs)\n", r->name, r->from_config ? "config" : "folder",
                r->from_config ? r->arg : r->dir, r->dir, r->ckpt,
                strcmp(r->ckpt, "last.ckpt") == 0
                    ? " (**no validation had run: the last checkpoint, not the best**)"
                    : "",
                r->test_src, r->test_tgt, r->test_n);
    }
    fprintf(f, "\n## Test BLEU by model size and by training time\n\n![test BLEU against "
               "parameters and training time](tradeoff.png)\n");
    fprintf(f, "\n## Validation curves\n\n![validation BLEU and perplexity by epoch](curves.png)"
               "\n\n## Attention (greedy translations of test sentences)\n\n");
    for (int i = 0; i < c->nruns; i++) {
        const Run *r = &c->runs[i];
        if (!r->has_attention) {
            fprintf(f, "- %s: skipped, the model has no attention (model.attention = none)\n",
                    r->name);
            continue;
        }
        if (r->ndrawn == 0)
            fprintf(f, "- %s: no map (the selected sentences are beyond its test set)\n",
                    r->name);
        for (int k = 0; k < r->ndrawn; k++)
            fprintf(f, "### %s, test sentence %d\n\n![attention of %s on test sentence %d]"
                       "(attention_%s_%d.png)\n\n", r->name, r->drawn[k], r->name,
                    r->drawn[k], r->name, r->drawn[k]);
    }
    return close_checked(f, path, err);
}

static Status write_curves(const Compare *c, Err *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/curves.png", c->out_dir);
    const char **names = xcalloc((size_t)c->nruns, sizeof(char *));
    const CurvePoint **pts = xcalloc((size_t)c->nruns, sizeof(CurvePoint *));
    int *npts = xcalloc((size_t)c->nruns, sizeof(int));
    for (int i = 0; i < c->nruns; i++) {
        names[i] = c->runs[i].name;
        pts[i] = c->runs[i].pts;
        npts[i] = c->runs[i].npts;
    }
    Status rc = plot_curves_png(path, "validation curves", c->nruns, names, pts, npts, err);
    free(names);
    free(pts);
    free(npts);
    return rc;
}

/* tradeoff.png: test BLEU (beam) against parameters and training time, one point per run. */
static Status write_tradeoff(const Compare *c, Err *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/tradeoff.png", c->out_dir);
    RunPoint *p = xcalloc((size_t)c->nruns, sizeof *p);
    for (int i = 0; i < c->nruns; i++) {
        const Run *r = &c->runs[i];
        p[i] = (RunPoint){r->name, r->bleu_b, (double)r->params,
                          r->has_secs ? r->train_secs / 3600.0 : NAN};
    }
    char title[64];
    snprintf(title, sizeof title, "test BLEU with beam %d", c->beam.beam);
    Status rc = plot_tradeoff_png(path, title, p, c->nruns, err);
    free(p);
    return rc;
}

/* ---- the command ---- */

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
            if (parse_sentences(argv[++i], &c)) goto done;
            c.sentences_given = 1;
        } else if (!strcmp(argv[i], "--test-src") && i + 1 < argc) {
            c.test_src = argv[++i];
        } else if (!strcmp(argv[i], "--test-tgt") && i + 1 < argc) {
            c.test_tgt = argv[++i];
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &c.device, "compare")) goto done;
        } else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
            c.baseline = argv[++i];
        } else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
            if (parse_budget(argv[++i], &c)) goto done;
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            if (parse_seeds(argv[++i], &c)) goto done;
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
        fprintf(stderr, "trainer compare: give at least one RUN (a run folder or a config "
                ".ini)\n");
        usage(stderr);
        goto done;
    }
    if (!c.test_src != !c.test_tgt) {
        fprintf(stderr, "trainer compare: give both --test-src FILE and --test-tgt FILE, or "
                "neither\n");
        goto done;
    }
    int per = c.nseeds ? c.nseeds : 1;
    c.runs = xcalloc((size_t)nargs * (size_t)per, sizeof(Run));
    for (int i = 0; i < nargs; i++) {
        Run one;
        memset(&one, 0, sizeof one);
        if (resolve_run(&one, args[i])) goto done;
        if (!one.from_config && folder_name_shared(args, nargs, i)) name_from_config_ini(&one);
        if ((c.budget_kind != BUDGET_NONE || c.nseeds) && !one.from_config) {
            fprintf(stderr, "trainer compare: --budget and --seeds train config RUNs, but RUN %s "
                    "is a run folder (already trained); give its config .ini instead\n",
                    args[i]);
            goto done;
        }
        if (apply_budget(&c, &one)) goto done;
        for (int s = 0; s < per; s++) {
            Run *r = &c.runs[c.nruns];
            *r = one;
            r->group = i;
            if (c.nseeds && apply_seed(r, c.seeds[s])) goto done;
            sanitize(r->name);
            uniquify(c.runs, c.nruns);
            c.nruns++;
        }
    }
    if (c.baseline) {
        c.base = -1;
        for (int i = 0; i < c.nruns; i++)
            if (!strcmp(c.runs[i].name, c.baseline)) c.base = i;
        if (c.base < 0) {
            fprintf(stderr, "trainer compare: --baseline %s is not one of the runs (", c.baseline);
            for (int i = 0; i < c.nruns; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", c.runs[i].name);
            fprintf(stderr, "); give a run's name as the table shows it\n");
            goto done;
        }
        if (c.nruns < 2) {
            fprintf(stderr, "trainer compare: --baseline needs at least one other run\n");
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
    for (int i = 0; i < c.nruns; i++)
        if (eval_run(&c, &c.runs[i], &err)) goto fail;
    if (c.baseline && significance(&c, &err)) goto fail;
    if (write_curves(&c, &err)) goto fail;
    if (write_tradeoff(&c, &err)) goto fail;
    if (write_csv(&c, &err)) goto fail;
    if (write_md(&c, &err)) goto fail;
    write_md_table(stdout, &c);
    fprintf(stdout, "\nwrote %s/compare.md, %s/compare.csv and the plots in %s\n", c.out_dir,
            c.out_dir, c.out_dir);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "trainer compare: %s\n", err.msg);
done:
    for (int i = 0; i < c.nruns; i++) free(c.runs[i].pts), free(c.runs[i].seg);
    free(c.runs);
    free(args);
    return rc;
}
