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
 * This file dispatches on the command and prints the usage; the argument helpers the commands
 * share are in cli/args.c (cli/cli.h). Exit codes: 0 success, 1 a failure of the run, 2 a bad
 * command line.
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
            omp_get_max_threads(), bf16 ? "yes" : "no: ", bf16 ? "" : why);
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

void cli_usage(FILE *f) {
    fprintf(f,
            "usage:\n"
            "  trainer [train] --config FILE [--set section.key=value]... [--resume]\n"
            "      train a model; --resume continues from <save_dir>/last.ckpt\n");
    cli_eval_usage(f);
    cli_translate_usage(f);
    cli_score_usage(f);
    fprintf(f,
            "  trainer compare RUN_DIR|CONFIG|ARCHIVE... [--out DIR] [--beam K] [--len-penalty A]\n"
            "                  [--sentences i,j,k] [--test-src FILE --test-tgt FILE]...\n"
            "                  [--device cpu|cuda] [--baseline CONFIG]\n"
            "                  [--budget steps=N|epochs=N|hours=H] [--seeds s1,s2,...]\n"
            "      a report comparing runs (tables, curves, attention heatmaps, significance\n"
            "      against --baseline) in DIR; configs are trained first (--budget: each under\n"
            "      that budget; --seeds: once per seed); trainer compare --help for more\n"
            "  trainer archive RUN_DIR --out DIR [--test-src FILE --test-tgt FILE]... [--beam K]\n"
            "                  [--len-penalty A] [--sentences i,j,k] [--device cpu|cuda]\n"
            "                  [--threads N] [--config FILE] [--name NAME]\n"
            "      keep a run's card, config, metrics, test translations and attention in DIR,\n"
            "      without its checkpoints (a report reads it as a run)\n"
            "  trainer study STUDY.ini [--jobs N] [--status] [--report] [--device cpu|cuda]\n"
            "      train the plan's missing runs, archive each and write its report\n");
    cli_average_usage(f);
    fprintf(f,
            "  trainer --help     this text and every config key\n"
            "  trainer --version  the source revision and what this build can run\n\n");
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
