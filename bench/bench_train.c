/* bench_train.c — training throughput of the model of any config (the RNN encoder–decoder or
 * the Transformer), and the batches it ran on.
 *
 *   bench_train --config configs/luong.ini [--batches N] [--warmup W] [--dump FILE]
 *               [--threads T] [--spm MODEL] [--profile [ROWS]] [--clock wall|cpu]
 *               [--set SECTION.KEY=VALUE]...
 *
 * Builds exactly the batches the trainer's first epoch starts with (same SentencePiece model,
 * examples joined by data.concat, length filter, seeded bucketing), writes the first W + N of
 * them to FILE for the PyTorch script of the model type (bench_rnn_torch.py,
 * bench_transformer_torch.py), then runs W warm-up and N
 * timed training steps with the trainer's own train_step (train/step.h: zero gradients, forward
 * + backward with dropout and label smoothing, grad_scale = 1 / target tokens, global-norm clip
 * and Adam step at the schedule's learning rate; no plateau decay, which needs a validation)
 * and prints
 *
 *   trainer: X tokens/s (N steps, T threads)
 *   bench_train: peak resident memory M MiB (the whole process)
 *
 * where tokens are the non-padding source + target tokens of the timed batches (targets count
 * EOS), as in the trainer's own tok/s. Host-side batch building is done before timing (the
 * PyTorch scripts also get their tensors ready beforehand). The model is built by model_create,
 * so whatever model.type the config names is what is timed.
 *
 * SentencePiece model: --spm MODEL, else data.spm_model when the config names one (the model the
 * trainer loads then), else <save_dir>/spm.model when it exists (the trainer trains it
 * deterministically at the start of a run, so it is the same model), else one is trained on the
 * training text in a temporary folder exactly as the trainer does.
 *
 * --clock cpu (one CPU thread only): the timed steps, and with --profile every figure of the
 * profile, on the process's CPU time (cpu_seconds) instead of the wall clock, so that other jobs
 * on a shared machine do not add to them (they still share its caches and memory bandwidth).
 *
 * --set: overrides of the config, as trainer's (e.g. --set train.precision=bf16; at most 32).
 *
 * --profile: the model runs on bench/op_profile.h's timing backend around the config's; after the
 * timed steps it prints where a step's time goes, op by op (calls, ms, %, GFLOP/s), the ROWS
 * (default 12) slowest GEMM shapes against sgemm alone at each shape, sgemm on 1024³ and 2048³,
 * and the FMA peak of T threads, measured (op_profile_fma_peak). The ops are timed between synchronize()
 * calls, which costs the CUDA backend its overlap of host and device (a per-op profile, not a
 * speed figure); on the CPU every op is synchronous already.
 *
 * Dump format (little-endian; see bench/README.md). Version 2 carries the whole config, so a
 * script reads every model and training setting from it:
 *   header: char magic[8] "BRNNDUMP" (the name of version 1's writer, kept), int32 version (2),
 *           uint32 n, char config[n]: config_to_ini text of the config (no NUL; INI with
 *           [run] [model] [data] [train], full-line '#' comments, key = value, strings in
 *           double quotes),
 *           int32 V (the SentencePiece model's vocabulary), int32 threads,
 *           int64 parameter count (ours), int32 nbatches, int32 warmup (W)
 *   per batch: int32 B, S, T; int32 src[S*B], src_len[B], tgt_in[T*B], tgt_out[T*B]
 *              (time-major: element [t*B + b]; PAD = 0; the trainer's batches are batch-major,
 *              core/tokens.h, and are transposed as they are written)
 *   trailer: uint32 CRC32 (zlib) of every byte before it.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/machine.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "data/prepare.h"
#include "data/spm.h"
#include "op_profile.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "train/config.h"
#include "train/step.h"
#include "train/train.h"


/* ---- dump writer: an in-memory buffer, CRC'd and written at the end ---- */
typedef struct {
    unsigned char *p;
    size_t n, cap;
} Buf;

static void put(Buf *b, const void *x, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 4096;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}
static void put_i32(Buf *b, int32_t v) { put(b, &v, 4); }

/* x [B,L] (batch-major) written time-major: element [l*B + b]. */
static void put_time_major(Buf *b, const int *x, int B, int L) {
    for (int l = 0; l < L; l++)
        for (int i = 0; i < B; i++) put_i32(b, x[(size_t)i * L + l]);
}

static Status write_dump(const char *path, const Config *cfg, int V, size_t nparams, int threads,
                         const TokenBatch *hb, int nb, int warmup, Err *err) {
    Buf b = {0};
    put(&b, "BRNNDUMP", 8);
    put_i32(&b, 2);
    char *ini = config_to_ini(cfg);
    uint32_t n = (uint32_t)strlen(ini);
    put(&b, &n, 4);
    put(&b, ini, n);
    free(ini);
    put_i32(&b, V);
    put_i32(&b, threads);
    int64_t np = (int64_t)nparams;
    put(&b, &np, 8);
    put_i32(&b, nb);
    put_i32(&b, warmup);
    for (int k = 0; k < nb; k++) {
        const TokenBatch *h = &hb[k];
        put_i32(&b, h->B), put_i32(&b, h->S), put_i32(&b, h->T);
        put_time_major(&b, h->src, h->B, h->S);
        put(&b, h->src_len, sizeof(int) * (size_t)h->B);
        put_time_major(&b, h->tgt_in, h->B, h->T);
        put_time_major(&b, h->tgt_out, h->B, h->T);
    }
    uint32_t crc = (uint32_t)crc32(0L, b.p, (uInt)b.n);
    put(&b, &crc, 4);
    Status rc = STATUS_OK;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b.p, 1, b.n, f) != b.n) rc = err_set(err, "cannot write %s", path);
    if (f && fclose(f) && rc == STATUS_OK) rc = err_set(err, "cannot write %s", path);
    free(b.p);
    return rc;
}

/* Trains the joint SentencePiece model as a run without data.spm_model does
 * (prepare_spm_train_sep: with <sep> for joined examples), in a temporary folder removed after. */
static Status train_spm_tmp(const Config *cfg, const Corpus *train, Spm **spm, Err *err) {
    char dir[] = "/tmp/bench_train.XXXXXX", path[300];
    if (!mkdtemp(dir)) return err_set(err, "cannot create a temporary folder in /tmp");
    printf("bench_train: training the SentencePiece model (%d pieces) in %s\n", cfg->vocab_size,
           dir);
    Status rc = prepare_spm_train_sep(train, cfg->vocab_size, cfg->concat > 1, dir, spm, err);
    const char *files[] = {"spm_train.txt", "spm.model", "spm.vocab"};
    for (int i = 0; i < 3; i++) snprintf(path, sizeof path, "%s/%s", dir, files[i]), unlink(path);
    rmdir(dir);
    return rc;
}

/* --profile's report: the op table, GEMM shapes, sgemm on squares and the FMA peak estimate. */
static void print_profile(int nsteps, double dt, int rows, int threads, const char *products) {
    printf("\n## Profile: %d steps, %.1f ms per step, %d threads\n\n", nsteps, 1e3 * dt / nsteps,
           threads);
    op_profile_print(stdout, nsteps, dt / nsteps, rows);
    double s1 = op_profile_sgemm_square(1024), s2 = op_profile_sgemm_square(2048);
    printf("matmul alone (%s): %.1f GFLOP/s on 1024³, %.1f on 2048³\n",
           products, s1, s2);
    int bits;
    double peak = op_profile_fma_peak(threads, &bits), bf16 = op_profile_bf16_peak(threads);
    if (peak > 0)
        printf("FMA peak, measured (%d-bit FMA chains on %d threads): %.1f GFLOP/s; matmul 2048³ "
               "/ peak %.2f\n", bits, threads, peak, s2 / peak);
    if (bf16 > 0)
        printf("bf16 peak, measured (vdpbf16ps chains on %d threads): %.1f GFLOP/s; matmul 2048³ "
               "/ bf16 peak %.2f\n", threads, bf16, s2 / bf16);
}

static int usage(void) {
    fprintf(stderr, "usage: bench_train --config FILE [--batches N] [--warmup W] [--dump FILE] "
                    "[--threads T] [--spm MODEL] [--profile [ROWS]] [--loss-rows R] "
                    "[--clock wall|cpu] [--set SECTION.KEY=VALUE]...\n");
    return 2;
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *config = NULL, *dump = NULL, *spm_path = NULL;
    int nsteps = 20, warmup = 3, threads = -1, profile = 0, nsets = 0, loss_rows = 0, cpu_clock = 0;
    const char *sets[32];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) nsteps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--spm") && i + 1 < argc) spm_path = argv[++i];
        else if (!strcmp(argv[i], "--loss-rows") && i + 1 < argc) loss_rows = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--clock") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "cpu") || !strcmp(argv[i + 1], "wall")))
            cpu_clock = !strcmp(argv[++i], "cpu");
        else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < 32) sets[nsets++] = argv[++i];
        else if (!strcmp(argv[i], "--profile")) {
            profile = 12;
            if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9')
                profile = atoi(argv[++i]);
        }
        else return usage();
    }
    if (!config || nsteps < 1 || warmup < 0 || loss_rows < 0) return usage();

    Err err = {{0}};
    Config cfg;
    Corpus train = {0};
    Encoded tenc = {0};
    Model model = {0};
    BatchPlan plan = {0};
    TokenBatch *hbs = NULL;
    long *keep = NULL;
    Spm *spm = NULL;
    int rc = 1, nb = warmup + nsteps;
    if (config_load(&cfg, config, &err)) goto fail;
    for (int i = 0; i < nsets; i++)
        if (config_set(&cfg, sets[i], &err)) goto fail;
    if (config_validate(&cfg, &err)) goto fail;
    BackendOptions bo = config_backend_options(&cfg);
    if (threads >= 0) bo.threads = threads;
    if (cfg.device != DEVICE_CPU) bo.precision = BACKEND_KEEP; /* cuda: fp32 products */
    const Backend *be;
    if (backend_open(&bo, &be, NULL, 0, &err)) goto fail;
    if (cfg.device == DEVICE_CPU)
        printf("bench_train: cpu, precision %s, matmul: %s\n", precision_names[cfg.precision],
               backend_cpu_gemm_name());
    threads = omp_get_max_threads();
    if (cpu_clock && (threads != 1 || cfg.device != DEVICE_CPU)) {
        err_set(&err, "--clock cpu times one CPU thread: give --threads 1 on the CPU");
        goto fail;
    }
    double (*clock_now)(void) = cpu_clock ? cpu_seconds : now_seconds;
    if (cpu_clock) op_profile_cpu_clock(1);

    if (corpus_load(&train, cfg.train_src, cfg.train_tgt, cfg.max_line_bytes, &err)) goto fail;
    if (corpus_concat(&train, cfg.concat, &err)) goto fail; /* data.concat, as the trainer */
    char dir[1024], def_spm[1100], cache[1400];
    config_save_dir(&cfg, dir, sizeof dir);
    snprintf(def_spm, sizeof def_spm, "%s/spm.model", dir);
    if (!spm_path && cfg.spm_model[0]) spm_path = cfg.spm_model;
    if (!spm_path && access(def_spm, R_OK) == 0) spm_path = def_spm;
    if (spm_path) {
        printf("bench_train: SentencePiece model %s\n", spm_path);
        if (spm_load(&spm, spm_path, &err)) goto fail;
    } else if (train_spm_tmp(&cfg, &train, &spm, &err)) {
        goto fail;
    }
    if (prepare_check_sep(spm, cfg.concat, spm_path ? spm_path : "the SentencePiece model",
                          &err))
        goto fail;
    /* a cache of our own, so that the trainer's cache is never rewritten */
    if (make_dirs(cfg.cache_dir, &err)) {
        err_prefix(&err, "data.cache_dir");
        goto fail;
    }
    snprintf(cache, sizeof cache, "%s/bench_train.%s.train.enc", cfg.cache_dir, cfg.name);
    if (encoded_build(&tenc, (const char *const *)train.src, (const char *const *)train.tgt,
                      train.n, spm, cache, &err))
        goto fail;
    int cap = config_example_len(&cfg); /* the trainer's cap: data.max_len × data.concat */
    long nkeep = batch_filter(&tenc, cap, &keep);

    if (profile) be = op_profile_wrap(be);
    if (model_create(&model, &cfg.model, spm_vocab_size(spm), be, &err)) goto fail;
    model_init_params(&model, cfg.seed);
    model_set_loss_rows(&model, loss_rows);
    int bB, bS, bT;
    batch_bounds(cfg.batch_tokens, cap, &bB, &bS, &bT);
    model_reserve(&model, bB, bS, bT, cfg.batch_tokens, cfg.batch_tokens);

    /* the first epoch's batches, as train_run plans them */
    Rng rng;
    rng_seed(&rng, cfg.seed, 0x5eed);
    if (batch_plan(&plan, &tenc, keep, nkeep, cfg.batch_tokens, &rng, &err)) goto fail;
    if (plan.nbatches < nb) {
        err_set(&err, "the epoch has only %ld batches; ask for fewer (--batches + --warmup)",
                plan.nbatches);
        goto fail;
    }
    hbs = xcalloc(nb, sizeof *hbs);
    long tokens_timed = 0;
    for (int k = 0; k < nb; k++) {
        batch_alloc(&hbs[k], bB, bS, bT, cfg.batch_tokens, cfg.batch_tokens);
        batch_fill(&hbs[k], &tenc, plan.idx + plan.start[k], (int)(plan.start[k + 1] - plan.start[k]));
        if (k >= warmup) tokens_timed += hbs[k].src_tokens + hbs[k].tgt_tokens;
    }
    const ModelSpec *ms = &cfg.model;
    if (ms->type == MODEL_TRANSFORMER)
        printf("bench_train: transformer, V %d, d_model %d, heads %d, d_ff %d, layers %d/%d, "
               "%s-LN, tied embeddings %s, attention %s/%s/%s (encoder self/decoder self/cross), ",
               model.V, ms->d_model, ms->heads, ms->d_ff, ms->enc_layers, ms->dec_layers,
               norm_place_names[ms->norm], ms->tie_embeddings ? "yes" : "no",
               attention_kind_names[ms->self_attention],
               attention_kind_names[spec_dec_self_attention(ms)],
               attention_kind_names[ms->cross_attention]);
    else
        printf("bench_train: rnn (%s), V %d, E %d, H %d, layers %d/%d, attention %s, ",
               cell_type_names[ms->cell], model.V, ms->emb, ms->hidden, ms->enc_layers,
               ms->dec_layers, attention_kind_names[ms->attention]);
    printf("dropout %g, label smoothing %g; %zu parameters; %d threads; OPENBLAS_CORETYPE=%s\n",
           ms->dropout, cfg.label_smoothing, model.ps.total, threads,
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
    if (dump) {
        if (write_dump(dump, &cfg, model.V, model.ps.total, threads, hbs, nb, warmup, &err))
            goto fail;
        printf("bench_train: wrote %d batches (%d warm-up + %d timed) to %s\n", nb, warmup, nsteps,
               dump);
    }

    TrainState st = {.step = 0, .epoch = 1, .lr_scale = 1.0, .best_score = -1.0};
    double t0 = 0;
    for (int k = 0; k < nb; k++) {
        if (k == warmup) {
            if (profile) op_profile_reset();
            t0 = clock_now();
        }
        TokenBatch *hb = &hbs[k];
        StepResult r = train_step(&model, &cfg, hb, &st, NULL); /* the trainer's step */
        if (k == 0 || k == nb - 1)
            printf("bench_train: step %d loss %.4f per target token (B %d S %d T %d, grad norm %.3f)\n",
                   k, r.loss / hb->tgt_tokens, hb->B, hb->S, hb->T, r.norm);
    }
    double dt = clock_now() - t0;
    printf("bench_train: %ld tokens (source + target, non-padding) in %.3f s\n", tokens_timed, dt);
    printf("trainer: %.1f tokens/s (%d steps, %d threads%s)\n", tokens_timed / dt, nsteps, threads,
           cpu_clock ? ", process CPU time" : "");
    printf("bench_train: peak resident memory %.1f MiB (the whole process)\n",
           machine_peak_rss_mb());
    if (profile)
        print_profile(nsteps, dt, profile, threads,
                      cfg.device == DEVICE_CPU ? backend_cpu_gemm_name() : "cublas");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "bench_train: %s\n", err.msg);
done:
    if (hbs)
        for (int k = 0; k < nb; k++) batch_free(&hbs[k]);
    free(hbs);
    batch_plan_free(&plan);
    free(keep);
    encoded_free(&tenc);
    corpus_free(&train);
    if (model.rnn || model.tf) model_free(&model);
    spm_free(spm);
    return rc;
}
