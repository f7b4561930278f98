/* args.c — command-line helpers shared by the commands of src/cli (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "train/config.h"

int cli_device_arg(const char *s, int *dev, const char *cmd) {
    if (!strcmp(s, "cpu")) return *dev = DEVICE_CPU, 0;
    if (!strcmp(s, "cuda")) return *dev = DEVICE_CUDA, 0;
    fprintf(stderr, "trainer%s%s: --device must be cpu or cuda, not '%s'\n", cmd ? " " : "",
            cmd ? cmd : "", s);
    return 2;
}

int cli_parse_eval_args(int argc, char **argv, EvalArgs *a, const char *cmd) {
    memset(a, 0, sizeof *a);
    a->device = -1;
    a->dec.beam = 1;
    for (int i = 0; i < argc; i++) {
        int r = parse_decode_arg(argc, argv, &i, &a->dec, &a->len_penalty_set, cmd);
        if (r == 2) return 2;
        if (r == 1) continue;
        if (!strcmp(argv[i], "--checkpoint") && i + 1 < argc) a->checkpoint = argv[++i];
        else if (!strcmp(argv[i], "--src") && i + 1 < argc) a->src = argv[++i];
        else if (!strcmp(argv[i], "--ref") && i + 1 < argc) a->ref = argv[++i];
        else if (!strcmp(argv[i], "--attention-map") && i + 1 < argc) a->attention_map = argv[++i];
        else if (!strcmp(argv[i], "--json")) a->json = 1;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &a->device, NULL)) return 2;
        } else {
            fprintf(stderr, "trainer %s: unknown or incomplete argument '%s'\n", cmd, argv[i]);
            cli_usage(stderr);
            return 2;
        }
    }
    if (!a->checkpoint) {
        fprintf(stderr, "trainer %s: --checkpoint FILE is required\n", cmd);
        return 2;
    }
    return 0;
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
