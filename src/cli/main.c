/* main.c — the command line of `trainer`: train (default) | eval | translate | score | compare
 * | archive | study | average.
 *
 *   trainer [train] --config FILE [--set section.key=value]... [--resume]      (cli/train.c)
 *   trainer eval --checkpoint FILE[,FILE...] --src FILE --ref FILE [--ref FILE]... [options]
 *                                                                             (cli/eval.c)
 *   trainer translate --checkpoint FILE[,FILE...] [options] < input > output  (cli/translate.c)
 *   trainer score --checkpoint FILE[,FILE...] --src FILE --ref FILE [options] (cli/score.c)
 *   trainer compare RUN_DIR|CONFIG|ARCHIVE... [--out DIR] [options]           (cli/compare.c)
 *   trainer archive RUN_DIR --out DIR [options]                               (cli/archive.c)
 *   trainer study STUDY.ini [options]                                         (cli/study.c)
 *   trainer average --out FILE CKPT...                                         (cli/average.c)
 *   trainer --help | --version
 *
 * This file dispatches on the command; the usage texts are in cli/usage.c, the argument
 * helpers the commands share in cli/args.c (cli/cli.h). Exit codes: 0 success, 1 a failure of
 * the run, 2 a bad command line.
 */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/revision.h"
#include "dist/dist_nccl.h"
#include "ops/cpu/cpu.h"
#include "train/config.h"

/* trainer --version: the source revision and what this build and this machine can run (the
 * facts a report of a run's speed or results should carry). */
static void print_version(FILE *f) {
    const char *why = "";
    int bf16 = backend_cpu_bf16_supported(&why);
    fprintf(f, "trainer %s\n", trainer_revision());
    fprintf(f, "cpu: %s, %d OpenMP threads; bf16 products: %s%s\n", backend_cpu_gemm_name(),
            omp_get_max_threads(), !bf16 ? "no: " : *why ? "yes, " : "yes", why);
#ifdef TRAINER_HAVE_CUDA
    BackendInfo cuda = backend_info(BACKEND_DEVICE_CUDA);
    fprintf(f, "cuda: %s; cuDNN %s; NCCL %s\n",
            cuda.emulated ? "the SIMT emulation on the host (tests only)" : "built",
            cuda.cudnn ? "yes" : "no", dist_nccl_available() ? "yes" : "no");
#else
    fprintf(f, "cuda: not built (nvcc was not found when this trainer was built)\n");
#endif
#ifdef TRAINER_MPI
    fprintf(f, "mpi: yes (mpirun -np N trainer train ...)\n");
#else
    fprintf(f, "mpi: no (no MPI found when this trainer was built)\n");
#endif
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        cli_usage(stdout);
        config_print_keys(stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "--version")) return print_version(stdout), 0;
    if (argc >= 2 && !strcmp(argv[1], "--config-reference"))
        return config_print_markdown(stdout), 0;
    if (argc >= 2 && !strcmp(argv[1], "eval")) return cmd_eval(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "translate")) return cmd_translate(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "score")) return cmd_score(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "compare")) return cmd_compare(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "average")) return cmd_average(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "archive")) return cmd_archive(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "study")) return cmd_study(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_train(argc - 2, argv + 2);
    if (argc >= 2 && argv[1][0] != '-') {
        fprintf(stderr, "trainer: unknown command '%s'\n", argv[1]);
        cli_usage(stderr);
        return 2;
    }
    return cmd_train(argc - 1, argv + 1);
}
