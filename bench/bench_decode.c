/* bench_decode.c — the cost of beam search against greedy decoding, per sentence, on a trained
 * checkpoint: translates the same N source lines with greedy decoding and with beam K (length
 * penalty α), after one untimed warm-up pass of each, and prints milliseconds per sentence, the
 * subword tokens produced, and the beam/greedy time ratio, all from one invocation.
 *
 *   build/bench_decode --checkpoint checkpoints/luong/best.ckpt \
 *       --src data/multi30k/test_2016_flickr.de.gz [--n 1000] [--beam 5] [--len-penalty 1]
 *       [--threads N]
 *
 * Decoding batches are those of `trainer translate` (translate_lines: sorted by length, up to
 * TRANSLATE_BATCH_TOKENS padded target positions × K per batch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/corpus.h"
#include "eval/translate.h"
#include "ops/cpu/cpu.h"
#include "train/checkpoint.h"
#include "train/train.h"

#include <omp.h>

static double run(Model *m, const Spm *spm, char **lines, long n, const DecodeOpts *o,
                  long *words) {
    Err err;
    char **out = NULL;
    double t0 = now_seconds();
    if (translate_lines(m, spm, (const char *const *)lines, n, o, &out, NULL, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        exit(1);
    }
    double dt = now_seconds() - t0;
    *words = 0;
    for (long i = 0; i < n; i++) {
        int *ids = NULL, k = 0;
        if (spm_encode(spm, out[i], &ids, &k, &err) == STATUS_OK) *words += k;
        free(ids);
    }
    free_lines(out, n);
    return dt;
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    const char *ckpt = NULL, *src = NULL;
    long n = 1000;
    int threads = 0, alpha_set = 0;
    DecodeOpts beam = {.beam = 5, .len_penalty = 1.0f};
    for (int i = 1; i < argc; i++) {
        int r = parse_decode_arg(argc, argv, &i, &beam, &alpha_set, "bench_decode");
        if (r == 2) return 2;
        if (r == 1) continue;
        if (!strcmp(argv[i], "--checkpoint") && i + 1 < argc) ckpt = argv[++i];
        else if (!strcmp(argv[i], "--src") && i + 1 < argc) src = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_decode --checkpoint FILE --src FILE [--n N] [--beam K] "
                    "[--len-penalty A] [--threads N]\n");
            return 2;
        }
    }
    if (!ckpt || !src || n < 1) {
        fprintf(stderr, "bench_decode: --checkpoint FILE and --src FILE are required\n");
        return 2;
    }
    Err err;
    Model m;
    Config cfg;
    Spm *spm;
    if (checkpoint_load(ckpt, &m, &cfg, &spm, NULL, -1, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    BackendOptions bo = config_backend_options(&cfg); /* the checkpoint's device */
    bo.precision = BACKEND_KEEP;
    if (threads > 0) bo.threads = threads;
    const Backend *be;
    if (backend_open(&bo, &be, NULL, 0, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    char **lines = NULL;
    long nl = 0;
    CorpusStats st;
    if (corpus_read_lines(src, cfg.max_line_bytes, &lines, &nl, &st, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    if (n > nl) n = nl;
    DecodeOpts greedy = {.beam = 1, .len_penalty = 0.0f};
    long wg, wb;
    run(&m, spm, lines, n < 50 ? n : 50, &greedy, &wg); /* warm-up: allocations, thread pool */
    run(&m, spm, lines, n < 50 ? n : 50, &beam, &wb);
    double tg = run(&m, spm, lines, n, &greedy, &wg);
    double tb = run(&m, spm, lines, n, &beam, &wb);
    char att[64];
    printf("checkpoint %s (%s, attention %s), %ld sentences of %s, %d threads\n", ckpt,
           cfg.model.type == MODEL_TRANSFORMER ? "transformer" : "rnn",
           config_attention_text(&cfg, att, sizeof att), n, src, omp_get_max_threads());
    printf("greedy:          %8.2f ms/sentence  (%.2f s, %ld output subwords)\n", 1e3 * tg / n, tg,
           wg);
    printf("beam %2d, α %.2g: %8.2f ms/sentence  (%.2f s, %ld output subwords)\n", beam.beam,
           (double)beam.len_penalty, 1e3 * tb / n, tb, wb);
    printf("beam/greedy time per sentence: %.2fx\n", tb / tg);
    corpus_free_lines(lines, nl);
    model_free(&m);
    spm_free(spm);
    return 0;
}
