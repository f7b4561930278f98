/* args.c — command-line helpers shared by the commands of src/cli (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "train/checkpoint.h"
#include "train/config.h"

int cli_device_arg(const char *s, int *dev, const char *cmd) {
    if (!strcmp(s, "cpu")) return *dev = DEVICE_CPU, 0;
    if (!strcmp(s, "cuda")) return *dev = DEVICE_CUDA, 0;
    fprintf(stderr, "trainer%s%s: --device must be cpu or cuda, not '%s'\n", cmd ? " " : "",
            cmd ? cmd : "", s);
    return 2;
}

int cli_threads_arg(const char *s, int *threads, const char *cmd) {
    char *end;
    errno = 0;
    long t = strtol(s, &end, 10);
    if (end == s || *end || errno || t < 1 || t > 4096) {
        fprintf(stderr, "trainer %s: --threads %s: give 1 to 4096\n", cmd, s);
        return 2;
    }
    *threads = (int)t;
    return 0;
}

/* --sample topk:K | topp:P | temp:T into d; 0, or 2 with a message. */
static int sample_arg(const char *v, DecodeOpts *d, const char *cmd) {
    char *end;
    if (!strncmp(v, "topk:", 5)) {
        long k = strtol(v + 5, &end, 10);
        if (end != v + 5 && !*end && k >= 1 && k <= 1000000) {
            d->sample = DECODE_TOPK, d->topk = (int)k;
            return 0;
        }
    } else if (!strncmp(v, "topp:", 5)) {
        double p = strtod(v + 5, &end);
        if (end != v + 5 && !*end && p > 0 && p <= 1) {
            d->sample = DECODE_TOPP, d->topp = (float)p;
            return 0;
        }
    } else if (!strncmp(v, "temp:", 5)) {
        double t = strtod(v + 5, &end);
        if (end != v + 5 && !*end && t > 0 && t <= 1000) {
            d->sample = DECODE_TEMP, d->temperature = (float)t;
            return 0;
        }
    }
    fprintf(stderr, "trainer %s: --sample %s: give topk:K (K >= 1, the K most probable tokens) "
            "topp:P (0 < P <= 1, the most probable tokens holding probability P) or temp:T "
            "(0 < T <= 1000, every token at temperature T)\n", cmd, v);
    return 2;
}

int cli_parse_eval_args(int argc, char **argv, EvalArgs *a, const char *cmd) {
    memset(a, 0, sizeof *a);
    a->device = -1;
    a->dec.beam = 1;
    int beam_set = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            a->help = 1;
            return 0;
        }
        beam_set |= !strcmp(argv[i], "--beam");
        int r = parse_decode_arg(argc, argv, &i, &a->dec, &a->len_penalty_set, cmd);
        if (r == 2) return 2;
        if (r == 1) continue;
        char *end;
        if (!strcmp(argv[i], "--checkpoint") && i + 1 < argc) a->checkpoint = argv[++i];
        else if (!strcmp(argv[i], "--src") && i + 1 < argc) a->src = argv[++i];
        else if (!strcmp(argv[i], "--ref") && i + 1 < argc) {
            if (a->nrefs == METRICS_MAX_REFS) {
                fprintf(stderr, "trainer %s: at most %d --ref\n", cmd, METRICS_MAX_REFS);
                return 2;
            }
            a->refs[a->nrefs++] = argv[++i];
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) a->out = argv[++i];
        else if (!strcmp(argv[i], "--attention-map") && i + 1 < argc) a->attention_map = argv[++i];
        else if (!strcmp(argv[i], "--json")) a->json = 1;
        else if (!strcmp(argv[i], "--crop-long")) a->crop_long = 1;
        else if (!strcmp(argv[i], "--stream")) a->stream = 1;
        else if (!strcmp(argv[i], "--alignment")) a->alignment = 1;
        else if (!strcmp(argv[i], "--normalize")) a->normalize = 1;
        else if (!strcmp(argv[i], "--input") && i + 1 < argc) a->input = argv[++i];
        else if (!strcmp(argv[i], "--output") && i + 1 < argc) a->output = argv[++i];
        else if ((!strcmp(argv[i], "--batch-tokens") || !strcmp(argv[i], "--batch-size")) &&
                 i + 1 < argc) {
            int tokens = !strcmp(argv[i], "--batch-tokens");
            long k = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || k < 1 || k > 100000000) {
                fprintf(stderr, "trainer %s: %s %s: give a whole number from 1 to 100000000\n",
                        cmd, argv[i - 1], argv[i]);
                return 2;
            }
            if (tokens) a->dec.batch_tokens = (int)k;
            else a->dec.batch_size = (int)k;
        }
        else if (!strcmp(argv[i], "--concat") && i + 1 < argc) {
            long k = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || k < 1 || k > 4096) {
                fprintf(stderr, "trainer %s: --concat %s: give 1 to 4096 lines an example\n",
                        cmd, argv[i]);
                return 2;
            }
            a->concat = (int)k;
        } else if (!strcmp(argv[i], "--nbest") && i + 1 < argc) {
            long k = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || k < 1 || k > 64) {
                fprintf(stderr, "trainer %s: --nbest %s: give 1 to 64 hypotheses\n", cmd,
                        argv[i]);
                return 2;
            }
            a->dec.nbest = (int)k;
        } else if (!strcmp(argv[i], "--sample") && i + 1 < argc) {
            if (sample_arg(argv[++i], &a->dec, cmd)) return 2;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || end == argv[i] || errno || argv[i][0] == '-') {
                fprintf(stderr, "trainer %s: --seed %s: give a whole number from 0 to %llu\n",
                        cmd, argv[i], (unsigned long long)UINT64_MAX);
                return 2;
            }
            a->dec.seed = (uint64_t)v, a->seed_set = 1;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &a->device, NULL)) return 2;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            if (cli_threads_arg(argv[++i], &a->threads, cmd)) return 2;
        } else {
            fprintf(stderr, "trainer %s: unknown or incomplete argument '%s'; see trainer %s "
                    "--help\n", cmd, argv[i], cmd);
            return 2;
        }
    }
    if (a->dec.nbest > 1 && !beam_set) { /* an n-best list of K: a beam of K */
        a->dec.beam = a->dec.nbest;
        if (!a->len_penalty_set) a->dec.len_penalty = 1.0f;
    }
    if (a->len_penalty_set && a->dec.beam == 1) { /* as --seed without --sample */
        fprintf(stderr, "trainer %s: --len-penalty ranks the hypotheses of a beam search; give "
                "--beam K (K > 1)%s, or drop --len-penalty\n", cmd,
                a->dec.sample ? " instead of --sample" : "");
        return 2;
    }
    if (!a->checkpoint) {
        fprintf(stderr, "trainer %s: --checkpoint FILE is required (see trainer %s --help)\n",
                cmd, cmd);
        return 2;
    }
    return 0;
}

Status cli_check_long_lines(char **src, long n, long first, long limit, int concat, int crop,
                            const char *what, long *cropped, Err *err) {
    for (long i = 0; limit > 0 && i < n; i++) {
        size_t len = strlen(src[i]);
        if (len <= (size_t)limit) continue;
        if (!crop) {
            char joined[96] = "";
            if (concat > 1)
                snprintf(joined, sizeof joined, " for each of the data.concat = %d sentences "
                         "of a line, and \" " CORPUS_SEP " \" between them", concat);
            return err_set(err, "%s, line %ld: %zu bytes, longer than the %ld bytes the model "
                           "reads a line (data.max_line_bytes of its config%s); shorten the line, "
                           "or give --crop-long to cut such lines to %ld bytes", what,
                           first + i + 1, len, limit, joined, limit);
        }
        corpus_utf8_crop(src[i], (size_t)limit);
        (*cropped)++;
    }
    return STATUS_OK;
}

/* 1 when the SentencePiece models a and b serialise to the same bytes (0 also when one cannot
 * be serialised). */
int cli_load_models(const char *list, int device, int threads, Model *models, int *n,
                    Config *cfg, Spm **spm, const char *cmd) {
    char buf[4096];
    Err err;
    *n = 0;
    *spm = NULL;
    if (device == DEVICE_CUDA) { /* the device first: a checkpoint is not to blame for it */
        BackendOptions bo = {.device = BACKEND_DEVICE_CUDA, .precision = BACKEND_KEEP,
                             .threads = BACKEND_KEEP, .ordinal = BACKEND_KEEP};
        const Backend *be;
        if (backend_open(&bo, &be, NULL, 0, &err)) {
            fprintf(stderr, "trainer %s: --device cuda: no usable GPU (CUDA device) was found "
                    "(%s); decode with --device cpu\n", cmd, err.msg);
            return 1;
        }
    }
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "trainer %s: --checkpoint: the list is over %zu bytes\n", cmd,
                sizeof buf - 1);
        return 1;
    }
    strcpy(buf, list);
    const char *first = NULL;
    for (char *p = buf, *tok; (tok = strsep(&p, ",")) != NULL;) {
        Config c;
        Spm *s = NULL;
        const char *why = NULL;
        if (!*tok) why = "an empty name in the list";
        else if (*n == CLI_MAX_MODELS) why = "more checkpoints than an ensemble takes (8)";
        if (why) {
            fprintf(stderr, "trainer %s: --checkpoint %s: %s\n", cmd, list, why);
            cli_free_models(models, *n, *spm);
            return 1;
        }
        if (checkpoint_load_weights(tok, &models[*n], &c, &s, device, &err)) {
            fprintf(stderr, "trainer %s: %s\n", cmd, err.msg);
            cli_free_models(models, *n, *spm);
            return 1;
        }
        if (*n == 0) {
            *cfg = c, *spm = s, first = tok;
        } else {
            int same = 0;
            Err e;
            spm_same(*spm, s, &same, &e); /* an error leaves same = 0: refused below */
            spm_free(s);
            (*n)++;
            if (!same || models[*n - 1].be != models[0].be) {
                fprintf(stderr, "trainer %s: --checkpoint: %s %s %s; an ensemble takes models of "
                        "one SentencePiece model (runs trained with one data.spm_model) on one "
                        "device\n", cmd, tok,
                        !same ? "has another SentencePiece model than" : "is on another device "
                        "than", first);
                cli_free_models(models, *n, *spm);
                return 1;
            }
            continue;
        }
        (*n)++;
    }
    /* the models' backend, with the run's train.threads; the products keep the process's
     * precision (fp32: inference does not take the run's train.precision) */
    BackendOptions bo = config_backend_options(cfg);
    bo.precision = BACKEND_KEEP;
    if (threads > 0) bo.threads = threads;
    const Backend *be;
    if (backend_open(&bo, &be, NULL, 0, &err)) {
        fprintf(stderr, "trainer %s: %s\n", cmd, err.msg);
        cli_free_models(models, *n, *spm);
        return 1;
    }
    return 0;
}

void cli_free_models(Model *models, int n, Spm *spm) {
    for (int i = 0; i < n; i++) model_free(&models[i]);
    spm_free(spm);
}

int cli_parse_numbers(const char *s, unsigned long long *out, int max, int *n,
                      unsigned long long limit, const char *what) {
    if (parse_u64_list(s, out, max, n, limit) == 0) return 0;
    fprintf(stderr, "trainer: %s %s: give 1 to %d different whole numbers from 0 to %llu, "
            "separated by commas (e.g. 0,1,2)\n", what, s, max, limit);
    return 2;
}

int cli_test_arg(int argc, char **argv, int *i, CliTests *t, const char *cmd) {
    int src = !strcmp(argv[*i], "--test-src"), tgt = !strcmp(argv[*i], "--test-tgt");
    if (!src && !tgt) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "trainer %s: %s needs a file\n", cmd, argv[*i]);
        return 2;
    }
    int *k = src ? &t->nsrc : &t->ntgt;
    if (*k == CLI_MAX_TESTS) {
        fprintf(stderr, "trainer %s: at most %d test sets\n", cmd, CLI_MAX_TESTS);
        return 2;
    }
    const char *f = argv[++*i];
    if (src) t->spec[t->nsrc++].src = f;
    else t->spec[t->ntgt++].tgt = f;
    return 1;
}

int cli_tests_done(const CliTests *t, const char *cmd) {
    if (t->nsrc == t->ntgt) return 0;
    fprintf(stderr, "trainer %s: give --test-src FILE and --test-tgt FILE in pairs (%d and %d "
            "given)\n", cmd, t->nsrc, t->ntgt);
    return 2;
}
