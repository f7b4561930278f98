/* train.c — train_run, the training loop (train.h): data, SentencePiece and batches, the step
 * (model_loss, then optim.c's clipping, Adam and schedule), validation, early stopping,
 * checkpoints, metrics.jsonl and signals. With N ranks (dist/dist.h) every rank runs
 * it on its shard of each batch, and rank 0 alone validates, logs and saves. */
#include "train/train.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/machine.h"
#include "core/revision.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "dist/dist.h"
#include "dist/dist_nccl.h"
#include "eval/metrics.h"
#include "eval/translate.h"
#include "ops/cuda/cuda.h"
#include "train/checkpoint.h"
#include "train/dist_check.h"
#include "train/finetune.h"
#include "train/inject.h"
#include "train/optim.h"

/* SIGINT/SIGTERM: the loop finishes its step, saves last.ckpt and returns. A second signal
 * while that is pending stops the process at once (the default action; nothing is saved, the
 * last complete checkpoint stays). */
static volatile sig_atomic_t g_stop_signal = 0;
static void on_signal(int sig) {
    if (g_stop_signal) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_stop_signal = sig;
}

/* Installs on_signal for SIGINT and SIGTERM, run on an alternate stack (SA_ONSTACK): pushed onto
 * the stack of the code it interrupts, the handler's frame overwrote data that oneDNN's JIT
 * products keep below the stack pointer, and a SIGTERM that arrived during one corrupted the heap
 * (test_concurrent_eval under load: 4 runs in 30, none in 12 with TRAINER_CPU_GEMM=openblas).
 * Process-directed signals go to the main thread, which calls this. Errors: none (a failing
 * sigaltstack leaves the handler on the normal stack). */
static void install_stop_signals(void) {
    static void *alt; /* kept for the life of the process */
    if (!alt) {
        size_t n = 1 << 16;
        alt = xmalloc(n);
        stack_t ss = {.ss_sp = alt, .ss_size = n, .ss_flags = 0};
        sigaltstack(&ss, NULL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static const char *signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

/* One training run per folder: an exclusive flock on <dir>/train.lock, held until the process
 * ends (the kernel releases it on any exit, SIGKILL included, so it never goes stale); the file
 * holds the holder's pid for the message. Returns the descriptor, or -1 with err set when
 * another process holds it (two runs would overwrite each other's checkpoints). */
static int lock_run_dir(const char *dir, Err *err) {
    char path[2048];
    snprintf(path, sizeof path, "%s/train.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        err_set(err, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        close(fd);
        if (e == EWOULDBLOCK)
            err_set(err, "another trainer (pid %s) is already training in %s (it holds %s); "
                    "wait for it to finish, stop it, or set another train.save_dir",
                    pid[0] ? pid : "?", dir, path);
        else
            err_set(err, "cannot lock %s: %s", path, strerror(e));
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        pid[0] = 0; /* the pid is only for the message above: no error */
    return fd;
}

/* Removes the temporary files that a killed atomic write left behind in the run folder
 * (<dir>/<name>.tmp.<pid>, temp_path_for's name: a checkpoint's, config.ini's or
 * metrics.jsonl's); called with the folder locked, and it spares a file whose pid is still alive
 * all the same. */
static void remove_stale_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        const char *t = strstr(ent->d_name, ".tmp.");
        if (!t) continue;
        char *end;
        long pid = strtol(t + strlen(".tmp."), &end, 10);
        if (pid <= 0 || *end) continue; /* not <name>.tmp.<pid>: not ours */
        if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
            continue; /* its process still runs */
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) == 0) printf("removed %s, left by an interrupted write\n", path);
    }
    closedir(d);
}

/* On resume: drops the lines of metrics.jsonl that a killed run wrote after the checkpoint's
 * step, so that every step appears once, and a last line the kill cut short. Rewritten
 * atomically (write_file_atomic). */
static Status trim_metrics(const char *path, long step, Err *err) {
    FILE *in = fopen(path, "r");
    if (!in) return STATUS_OK; /* nothing logged yet */
    char *line = NULL, *kept = NULL;
    size_t cap = 0, n = 0, kcap = 0;
    long dropped = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        const char *k = strstr(line, "\"step\": ");
        if (line[len - 1] != '\n' || (k && strtol(k + 8, NULL, 10) > step)) {
            /* a line cut short by the crash, or one the resumed run will write again */
            dropped++;
            continue;
        }
        if (n + (size_t)len > kcap) kcap = 2 * (n + (size_t)len), kept = xrealloc(kept, kcap);
        memcpy(kept + n, line, (size_t)len);
        n += (size_t)len;
    }
    free(line);
    fclose(in);
    Status s = write_file_atomic(path, kept ? kept : "", n, err);
    free(kept);
    if (!s && dropped)
        printf("metrics: dropped %ld lines logged after step %ld by the interrupted run\n",
               dropped, step);
    return s;
}

/* Writes the training text (both languages, one sentence a line) and trains the joint
 * SentencePiece model save_dir/spm.model on it. One thread: the result is deterministic. */
static Status train_spm(const Config *cfg, const Corpus *train, const char *dir, Spm **spm,
                        Err *err) {
    char txt[1100], prefix[1100], model[1200];
    snprintf(txt, sizeof txt, "%s/spm_train.txt", dir);
    snprintf(prefix, sizeof prefix, "%s/spm", dir);
    snprintf(model, sizeof model, "%s.model", prefix);
    FILE *f = fopen(txt, "w");
    if (!f) return err_set(err, "cannot write %s: %s", txt, strerror(errno));
    for (long i = 0; i < train->n; i++) fprintf(f, "%s\n%s\n", train->src[i], train->tgt[i]);
    if (fclose(f)) return err_set(err, "cannot write %s: %s", txt, strerror(errno));
    double t0 = now_seconds();
    const char *files[1] = {txt};
    if (spm_train(files, 1, cfg->vocab_size, prefix, 1, err)) return err_prefix(err, "SentencePiece training on %s", txt);
    unlink(txt);
    printf("SentencePiece: trained a joint unigram model of %d pieces in %.1f s -> %s\n",
           cfg->vocab_size, now_seconds() - t0, model);
    return spm_load(spm, model, err);
}

Status train_spm_model(const Config *cfg, const char *dir, Err *err) {
    Corpus c = {0};
    Spm *spm = NULL;
    if (make_dirs(dir, err)) return STATUS_ERR;
    Status s = corpus_load(&c, cfg->train_src, cfg->train_tgt, cfg->max_line_bytes, err);
    if (!s) s = train_spm(cfg, &c, dir, &spm, err);
    spm_free(spm);
    corpus_free(&c);
    return s;
}

int train_dir_busy(const char *dir) {
    char path[2048];
    snprintf(path, sizeof path, "%s/train.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* releases the lock if this took it */
    return busy;
}

/* data.spm_model: the SentencePiece model of that file, with data.vocab_size pieces, and a copy
 * of it as dir/spm.model (the run folder keeps the model it was trained with, as when it trains
 * one). Errors: spm_load's; a piece count other than data.vocab_size; the copy's write. */
static Status load_spm_model(const Config *cfg, const char *dir, Spm **spm, Err *err) {
    char copy[1200];
    void *bytes = NULL;
    size_t n = 0;
    if (spm_load(spm, cfg->spm_model, err)) return err_prefix(err, "data.spm_model");
    if (spm_vocab_size(*spm) != cfg->vocab_size)
        return err_set(err, "data.spm_model = %s has %d pieces, but data.vocab_size = %d; set "
                       "data.vocab_size = %d", cfg->spm_model, spm_vocab_size(*spm),
                       cfg->vocab_size, spm_vocab_size(*spm));
    snprintf(copy, sizeof copy, "%s/spm.model", dir);
    Status s = spm_serialize(*spm, &bytes, &n, err);
    if (!s) s = write_file_atomic(copy, bytes, n, err);
    free(bytes);
    if (!s)
        printf("SentencePiece: %d pieces from data.spm_model = %s (copied to %s)\n",
               spm_vocab_size(*spm), cfg->spm_model, copy);
    return s;
}

static Status encode_split(const Config *cfg, const Corpus *c, const Spm *spm, const char *what,
                           Encoded *e, Err *err) {
    char cache[1400];
    snprintf(cache, sizeof cache, "%s/%s.%s.enc", cfg->cache_dir, cfg->name, what);
    if (make_dirs(cfg->cache_dir, err)) return err_prefix(err, "data.cache_dir");
    double t0 = now_seconds();
    if (encoded_build(e, (const char *const *)c->src, (const char *const *)c->tgt, c->n, spm, cache,
                      err))
        return err_prefix(err, "encoding %s", what);
    printf("%s: %ld pairs %s in %.2f s (%s)\n", what, e->n,
           encoded_last_was_cache_hit ? "loaded from cache" : "encoded", now_seconds() - t0, cache);
    return STATUS_OK;
}

static void fmt_time(char *buf, size_t n, double s) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* Validation: teacher-forced perplexity and greedy BLEU/chrF on (up to val_max_sentences of)
 * the validation set. */
static Status validate(Model *m, const Spm *spm, int max_sentences, const Corpus *val,
                       const Encoded *venc, double *ppl, double *bleu, double *chrf, Err *err) {
    long n = val->n;
    if (max_sentences > 0 && max_sentences < n) n = max_sentences;
    Encoded sub = *venc;
    sub.n = n;
    if (eval_perplexity(m, &sub, ppl, NULL, err)) return STATUS_ERR;
    char **hyp = NULL;
    DecodeOpts greedy = {.beam = 1, .len_penalty = 0.0f};
    if (translate_lines(m, spm, (const char *const *)val->src, n, &greedy, &hyp, NULL, err))
        return STATUS_ERR;
    BleuScore b = bleu_corpus((const char *const *)hyp, (const char *const *)val->tgt, n);
    *bleu = b.score;
    *chrf = chrf_corpus((const char *const *)hyp, (const char *const *)val->tgt, n);
    printf("  e.g. src: %s\n       hyp: %s\n       ref: %s\n", val->src[0], hyp[0], val->tgt[0]);
    free_lines(hyp, n);
    return STATUS_OK;
}

/* Peak resident set size of this process so far, in MiB (getrusage ru_maxrss, KiB on Linux). */
static double peak_rss_mb(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_maxrss / 1024.0;
}

/* dist.overlap's buckets over a gradient buffer (made on first use, remade when the buffer or
 * the bucket size changes; one buffer at a time: the trainer has one model). */
static DistBuckets *g_buckets;
static const float *g_buckets_buf;
static size_t g_buckets_n, g_buckets_size;

static DistBuckets *buckets_for(ParamSet *ps, const Config *cfg) {
    size_t size = (size_t)((double)cfg->dist_bucket_mb * 1048576.0 / sizeof(float));
    if (size < 1) size = 1;
    if (!g_buckets || g_buckets_buf != ps->grad || g_buckets_n != ps->total ||
        g_buckets_size != size) {
        dist_buckets_free(g_buckets);
        g_buckets = dist_buckets_new(ps->grad, ps->total, size);
        g_buckets_buf = ps->grad, g_buckets_n = ps->total, g_buckets_size = size;
    }
    return g_buckets;
}

float train_ema_decay(const Config *cfg, long n) {
    float d = cfg->ema_decay;
    if (cfg->ema_warmup && n >= 0) {
        float w = (float)((1.0 + (double)n) / (10.0 + (double)n));
        if (w < d) d = w;
    }
    return d;
}

/* The model's GradReady hook with dist.overlap: the buckets within grad[lo..) start. */
static void on_grad_ready(void *ctx, size_t lo) { dist_buckets_ready(ctx, lo); }

StepResult train_step_accum(Model *m, const Config *cfg, int n, MicroBatchFn batch, void *ctx,
                            long global_tgt_tokens, TrainState *st,
                            const NonfiniteInjection *inject, StepSync *sync) {
    ParamSet *ps = &m->ps;
    StepResult r = {0, 0, 0, NULL};
    params_zero_grad(ps);
    uint64_t key = rng_hash(cfg->seed, (uint64_t)st->step);
    double t0 = sync ? now_seconds() : 0;
    int shared = sync && dist_size() > 1;
    /* dist.overlap (host memory: the CPU): buckets of the gradient start summing as backward
     * finishes them */
    DistBuckets *bk = shared && cfg->dist_overlap && m->be->host_memory
                          ? buckets_for(ps, cfg) : NULL;
    char what[96];
    snprintf(what, sizeof what, "the gradient sum of step %ld", st->step + 1);
    long tgt = 0, src = 0;
    for (int j = 0; j < n; j++) {
        const TokenBatch *tb = batch(ctx, j);
        int last = j == n - 1; /* its backward completes the gradient: the buckets start there */
        if (bk && last) {
            dist_buckets_begin(bk, what);
            model_set_grad_ready(m, (GradReady){on_grad_ready, bk});
        }
        /* batch 0 keeps the step's dropout key; each later one takes a key of its own */
        uint64_t kj = j ? rng_hash(key, (uint64_t)j) : key;
        if (tb->B > 0) /* an empty shard adds zeros to the sums */
            r.loss += model_loss(m, tb, cfg->label_smoothing, 1, kj,
                                 1.0f / (float)global_tgt_tokens);
        if (bk && last) model_set_grad_ready(m, (GradReady){NULL, NULL});
        tgt += tb->tgt_tokens, src += tb->src_tokens;
    }
    if (sync) {
        sync->tgt_tokens = tgt;
        sync->src_tokens = src;
        double t1 = now_seconds();
        sync->t_compute = t1 - t0;
        if (shared) {
            if (bk) /* the buckets backward did not start, then the wait for all */
                dist_buckets_finish(bk);
            else if (!m->be->host_memory) /* device memory: NCCL between the GPUs */
                dist_nccl_sum_float(ps->grad, ps->total, what);
            else
                dist_sum_float(ps->grad, ps->total, what);
            double v[5] = {r.loss, (double)tgt, (double)src, sync->flags[0], sync->flags[1]};
            dist_sum_double(v, 5, what);
            r.loss = v[0];
            sync->tgt_tokens = (long)v[1];
            sync->src_tokens = (long)v[2];
            sync->flags[0] = v[3], sync->flags[1] = v[4];
        }
        sync->t_sum = now_seconds() - t1;
    }
    if (inject && inject->n) r.injected = inject_apply(inject, st->step + 1, m->be, ps->grad, &r.loss);
    r.norm = optim_grad_norm(ps);
    if (shared) { /* rank 0's norm: one clipping decision and factor on every rank */
        double t2 = now_seconds();
        dist_bcast(&r.norm, sizeof r.norm, 0, "the gradient norm");
        sync->t_sum += now_seconds() - t2;
    }
    r.finite = isfinite(r.norm) && isfinite(r.loss);
    if (r.finite) {
        optim_clip(ps, r.norm, cfg->clip_norm);
        st->adam_t++;
        optim_adam(ps, cfg, optim_lr(cfg, st->step + 1, st->lr_scale), st->adam_t);
        if (cfg->ema_decay > 0 && ps->ema)
            params_ema_update(ps, train_ema_decay(cfg, st->adam_t - 1));
    }
    st->step++;
    return r;
}

/* MicroBatchFn of a step on one batch: the batch itself. */
static const TokenBatch *one_batch(void *ctx, int j) {
    (void)j;
    return ctx;
}

StepResult train_step_shard(Model *m, const Config *cfg, const TokenBatch *tb,
                            long global_tgt_tokens, TrainState *st,
                            const NonfiniteInjection *inject, StepSync *sync) {
    return train_step_accum(m, cfg, 1, one_batch, (void *)tb, global_tgt_tokens, st, inject,
                            sync);
}

StepResult train_step(Model *m, const Config *cfg, const TokenBatch *tb, TrainState *st,
                      const NonfiniteInjection *inject) {
    return train_step_shard(m, cfg, tb, tb->tgt_tokens, st, inject, NULL);
}

/* Everything one run holds; train_run's parts share it. */
typedef struct {
    Config cfg;
    char dir[1024], last[1100], best[1100], mpath[1100]; /* save_dir and its files */
    Corpus train, val;
    Encoded tenc, venc;
    Spm *spm;
    Model model;
    long *keep, nkeep;   /* the training pairs within data.max_len */
    BatchPlan plan;      /* the current epoch's batches */
    TokenBatch tb;       /* the current batch (host), sized once for the largest */
    FILE *metrics;
    int lock_fd;
    TrainState st;
    NonfiniteInjection inject; /* tests only: TRAINER_TEST_INJECT_NONFINITE (train/inject.h) */
    double t_start;      /* now_seconds() when the run's training time began */
    int rank, world;     /* dist_rank(), dist_size(); rank 0 (the lead) validates, logs, saves */
} Run;

/* Progress since the last log line. */
typedef struct {
    double loss, t;      /* summed loss of the finite steps (nats); when the interval began */
    long tok, tokens_all, steps; /* their target tokens; every step's source + target tokens */
    double t_compute, t_sum; /* seconds of rank 0's forward + backward, and of the sums */
    long batches;        /* the steps' batches (train.accum_steps a step) */
} LogWindow;

/* Batch bi of the epoch's plan: this rank's shard [*lo, *hi) of its sentences (lo, hi may be
 * NULL) and the whole batch's target tokens. */
static long shard_of(Run *r, long bi, int *lo, int *hi) {
    int l, h;
    const long *bidx = r->plan.idx + r->plan.start[bi];
    int nb = (int)(r->plan.start[bi + 1] - r->plan.start[bi]);
    long tokens = batch_shard(&r->tenc, bidx, nb, r->rank, r->world, &l, &h);
    if (lo) *lo = l, *hi = h;
    return tokens;
}

/* MicroBatchFn of the loop (ctx: the Run): this rank's shard of batch batch_in_epoch + j. */
static const TokenBatch *fill_batch(void *ctx, int j) {
    Run *r = ctx;
    long bi = r->st.batch_in_epoch + j;
    int lo, hi;
    shard_of(r, bi, &lo, &hi);
    batch_fill(&r->tb, &r->tenc, r->plan.idx + r->plan.start[bi] + lo, hi - lo);
    return &r->tb;
}

/* Rank 0's part of opening the run: save_dir and its lock, the corpora, and the model (new, or
 * from last.ckpt with resume) with its SentencePiece model. The other ranks load the corpora
 * only (open_sync gives them the rest). */
static Status open_local(Run *r, int resume, const Backend *be, Err *err) {
    Config *cfg = &r->cfg;
    int lead = r->rank == 0;
    if (lead) {
        if (make_dirs(r->dir, err)) return err_prefix(err, "train.save_dir");
        if ((r->lock_fd = lock_run_dir(r->dir, err)) < 0) return STATUS_ERR;
        remove_stale_temps(r->dir);
        if (resume && access(r->last, F_OK) != 0) /* before the corpora: fail fast */
            return err_set(err, "--resume: there is no checkpoint %s to resume from; run "
                           "without --resume to start training", r->last);
    }

    if (corpus_load(&r->train, cfg->train_src, cfg->train_tgt, cfg->max_line_bytes, err))
        return STATUS_ERR;
    corpus_print_summary(&r->train, "train", stdout);
    if (corpus_load(&r->val, cfg->val_src, cfg->val_tgt, cfg->max_line_bytes, err))
        return STATUS_ERR;
    corpus_print_summary(&r->val, "val", stdout);
    if (!lead) return STATUS_OK;

    if (resume) {
        Config c; /* the checkpoint's config */
        if (checkpoint_load(r->last, &r->model, &c, &r->spm, &r->st, (int)cfg->device, err))
            return STATUS_ERR;
        /* keys that may change on resume; everything else must match the checkpoint */
        c.max_epochs = cfg->max_epochs, c.max_steps = cfg->max_steps, c.patience = cfg->patience;
        c.max_hours = cfg->max_hours;
        c.log_every = cfg->log_every, c.save_every = cfg->save_every, c.threads = cfg->threads;
        c.val_max_sentences = cfg->val_max_sentences, c.device = cfg->device;
        c.max_nonfinite = cfg->max_nonfinite, c.dist_timeout = cfg->dist_timeout;
        c.dist_overlap = cfg->dist_overlap, c.dist_bucket_mb = cfg->dist_bucket_mb;
        c.keep_checkpoints = cfg->keep_checkpoints, c.average_last = cfg->average_last;
        snprintf(c.save_dir, sizeof c.save_dir, "%s", cfg->save_dir);
        /* train.init_from was read at the run's start: the CRC it recorded stays the run's */
        if (!cfg->init_from_crc[0])
            memcpy(cfg->init_from_crc, c.init_from_crc, sizeof c.init_from_crc);
        char diff[2048];
        if (config_diff(&c, cfg, diff, sizeof diff))
            return err_set(err, "--resume: the config differs from the one %s was trained with "
                           "(%s); resume with the original settings or start a new run in "
                           "another train.save_dir", r->last, diff);
        if (trim_metrics(r->mpath, r->st.step, err)) return STATUS_ERR;
        printf("resumed from %s: epoch %d, step %ld, batch %ld of the epoch\n", r->last,
               r->st.epoch, r->st.step, r->st.batch_in_epoch);
    } else if (cfg->init_from[0]) { /* fine-tuning: the checkpoint's weights and SentencePiece */
        if (init_from_checkpoint(cfg, r->dir, be, &r->model, &r->spm, err)) return STATUS_ERR;
        rng_seed(&r->st.epoch_rng, cfg->seed, 0x5eed);
        unlink(r->mpath);
    } else {
        if (cfg->spm_model[0] ? load_spm_model(cfg, r->dir, &r->spm, err)
                              : train_spm(cfg, &r->train, r->dir, &r->spm, err))
            return STATUS_ERR;
        if (model_create(&r->model, &cfg->model, spm_vocab_size(r->spm), be, err))
            return STATUS_ERR;
        model_init_params(&r->model, cfg->seed);
        rng_seed(&r->st.epoch_rng, cfg->seed, 0x5eed);
        unlink(r->mpath);
    }
    /* allocated once, with the parameters (docs/design.md §6); a resumed run has it from the
     * checkpoint's "ema/" records (params_allocate_ema then does nothing) */
    if (cfg->ema_decay > 0) params_allocate_ema(&r->model.ps);
    return STATUS_OK;
}

/* After a part every rank ran (each with its own status s): STATUS_OK when every rank passed;
 * otherwise STATUS_ERR on every rank, those that passed with a message naming the first rank
 * that failed (its own message is on its stderr). */
static Status agree(const Run *r, Status s, const char *what, Err *err) {
    if (r->world == 1) return s;
    int bad = dist_first_failed(s == STATUS_OK, what);
    if (bad < 0) return STATUS_OK;
    if (s == STATUS_OK)
        err_set(err, "rank %d (host %s) failed during %s (its message is above); stopping", bad,
                dist_host(bad), what);
    return STATUS_ERR;
}

/* Rank 0's buffer of bytes in backend memory (be's: device memory on cuda) to every rank: through
 * a host copy (MPI_Bcast of host memory; the MPI need not be CUDA-aware) unless it is host
 * memory. */
static void bcast_backend(const Backend *be, void *p, size_t bytes, const char *what) {
    if (be->host_memory) {
        dist_bcast(p, bytes, 0, what);
        return;
    }
    void *h = xmalloc(bytes ? bytes : 1);
    if (dist_rank() == 0) be->download(h, p, bytes);
    dist_bcast(h, bytes, 0, what);
    if (dist_rank() != 0) be->upload(p, h, bytes);
    free(h);
}

/* Rank 0's SentencePiece model, training state, parameters and Adam moments to every rank (the
 * other ranks build the model from the config, which dist_check_ranks found equal). */
static Status open_sync(Run *r, const Backend *be, Err *err) {
    int lead = r->rank == 0;
    void *bytes = NULL;
    uint64_t n = 0;
    Status s = STATUS_OK;
    if (lead) {
        size_t sz = 0;
        s = spm_serialize(r->spm, &bytes, &sz, err);
        n = sz;
    }
    if (agree(r, s, "start-up (sending the SentencePiece model)", err)) return STATUS_ERR;
    dist_bcast(&n, sizeof n, 0, "start-up (SentencePiece model size)");
    if (!lead) bytes = xmalloc(n);
    dist_bcast(bytes, n, 0, "start-up (SentencePiece model)");
    dist_bcast(&r->st, sizeof r->st, 0, "start-up (training state)");
    if (!lead) {
        s = spm_load_from_bytes(&r->spm, bytes, n, err);
        if (!s) s = model_create(&r->model, &r->cfg.model, spm_vocab_size(r->spm), be, err);
    }
    free(bytes);
    if (agree(r, s, "start-up (building the model)", err)) return STATUS_ERR;
    uint64_t total = r->model.ps.total;
    dist_bcast(&total, sizeof total, 0, "start-up (parameter count)");
    CHECK(total == r->model.ps.total, "rank 0's model has another parameter count: the ranks "
          "built different models from equal configs");
    ParamSet *ps = &r->model.ps; /* backend memory: host (cpu) or device (cuda) */
    size_t pbytes = sizeof(float) * ps->total;
    bcast_backend(be, ps->data, pbytes, "start-up (parameters)");
    bcast_backend(be, ps->m, pbytes, "start-up (Adam m)");
    bcast_backend(be, ps->v, pbytes, "start-up (Adam v)");
    if (r->cfg.ema_decay > 0) {
        if (!lead) params_allocate_ema(ps);
        bcast_backend(be, ps->ema, pbytes, "start-up (EMA of the parameters)");
    }
    return STATUS_OK;
}

/* The "start" line of metrics.jsonl (train.h): where and how this start of the run trains. */
static void write_start_record(Run *r) {
    const Config *cfg = &r->cfg;
    char cpu[256], now[32];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "start");
    cJSON_AddNumberToObject(o, "epoch", r->st.epoch);
    cJSON_AddNumberToObject(o, "step", (double)r->st.step);
    cJSON_AddStringToObject(o, "time", machine_utc_now(now, sizeof now));
    cJSON_AddStringToObject(o, "revision", trainer_revision());
    cJSON_AddStringToObject(o, "cpu", machine_cpu(cpu, sizeof cpu));
    cJSON_AddStringToObject(o, "device", device_type_names[cfg->device]);
    cJSON_AddStringToObject(o, "gpu", cfg->device == DEVICE_CUDA ? backend_cuda_device_name() : "");
    cJSON_AddNumberToObject(o, "threads", omp_get_max_threads());
    cJSON_AddNumberToObject(o, "ranks", r->world);
    cJSON_AddStringToObject(o, "precision", precision_names[cfg->precision]);
    char *line = cJSON_PrintUnformatted(o);
    fprintf(r->metrics, "%s\n", line);
    fflush(r->metrics);
    cJSON_free(line);
    cJSON_Delete(o);
}

/* Opens the run: save_dir and its lock, the corpora, the model (new, or from last.ckpt with
 * resume), the encoded splits, the batch buffers and the metrics file. With N ranks, rank 0
 * does the work of one process and the others get its SentencePiece model, training state and
 * parameters (open_sync); only rank 0 holds the lock and the metrics file. */
static Status run_open(Run *r, const Config *cfg_in, int resume, Err *err) {
    Config *cfg = &r->cfg;
    *cfg = *cfg_in;
    r->lock_fd = -1;
    r->rank = dist_rank(), r->world = dist_size();
    r->st = (TrainState){.step = 0, .epoch = 1, .lr_scale = 1.0, .best_score = -1.0};
    config_save_dir(cfg, r->dir, sizeof r->dir);
    snprintf(r->last, sizeof r->last, "%s/last.ckpt", r->dir);
    snprintf(r->best, sizeof r->best, "%s/best.ckpt", r->dir);
    snprintf(r->mpath, sizeof r->mpath, "%s/metrics.jsonl", r->dir);
    const Backend *be;
    char line[512];
    int nccl = r->world > 1 && cfg->device == DEVICE_CUDA; /* the gradient sum on NCCL */
    BackendOptions bo = config_backend_options(cfg);
    if (nccl && !dist_nccl_available()) /* no CUDA in the build, or no NCCL: say which */
        return backend_open(&bo, &be, line, sizeof line, err) ? STATUS_ERR : dist_nccl_init(err);
    if (nccl) bo.ordinal = dist_local_rank(); /* one GPU per rank, by local rank */
    if (agree(r, backend_open(&bo, &be, line, sizeof line, err), "start-up (the backend)", err))
        return STATUS_ERR; /* before any data work */
    if (nccl && agree(r, dist_nccl_init(err), "start-up (NCCL)", err)) return STATUS_ERR;
    /* the backend's line; on cuda with the RNN layers' implementation (model.rnn_impl; cudnn
     * covers the decoder only without input feeding and without bahdanau, rnn.h rnn_set_impl) */
    const ModelSpec *ms = &cfg->model;
    const char *rnn = cfg->device != DEVICE_CUDA || ms->type != MODEL_RNN ? ""
                      : ms->rnn_impl == RNN_IMPL_OWN ? ", rnn: own"
                      : ms->input_feeding ? ", rnn: cudnn (encoder; decoder own: input feeding)"
                      : ms->attention == ATTN_BAHDANAU
                          ? ", rnn: cudnn (encoder; decoder own: bahdanau)"
                          : ", rnn: cudnn (encoder and decoder)";
    printf("%s%s\n", line, rnn); /* rank 0's: the other ranks' stdout is /dev/null */
    if (inject_parse(&r->inject, getenv(INJECT_ENV), err)) return STATUS_ERR;
    if (agree(r, open_local(r, resume, be, err), resume ? "start-up (loading the checkpoint)"
                                                        : "start-up (data and SentencePiece)", err))
        return STATUS_ERR;
    if (r->world > 1 && open_sync(r, be, err)) return STATUS_ERR;

    Status s = STATUS_OK;
    if (encode_split(cfg, &r->train, r->spm, "train", &r->tenc, err) ||
        encode_split(cfg, &r->val, r->spm, "val", &r->venc, err))
        s = STATUS_ERR;
    if (agree(r, s, "start-up (encoding the data)", err)) return STATUS_ERR;
    /* a linformer model reads sources of up to model.linformer_max_len tokens: training pairs
     * are within data.max_len (config_validate), validation ones are refused now rather than at
     * the first validation */
    long nval = cfg->val_max_sentences > 0 && cfg->val_max_sentences < r->venc.n
                    ? cfg->val_max_sentences : r->venc.n;
    for (long i = 0; i < nval && !s; i++)
        if (model_check_source_len(&r->model, (int)(r->venc.src_off[i + 1] - r->venc.src_off[i]),
                                   err))
            s = err_prefix(err, "validation pair %ld of data.val_src = %s", i + 1, cfg->val_src);
    if (agree(r, s, "start-up (validation source lengths)", err)) return STATUS_ERR;
    r->nkeep = batch_filter(&r->tenc, cfg->max_len, &r->keep);
    printf("train: %ld pairs within %d subword tokens a side (%ld longer ones skipped)\n",
           r->nkeep, cfg->max_len, r->tenc.n - r->nkeep);
    int bB, bS, bT;
    batch_bounds(cfg->batch_tokens, cfg->max_len, &bB, &bS, &bT);
    batch_alloc(&r->tb, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    model_reserve(&r->model, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    char attn[64];
    printf("model: %s, attention %s, %zu parameters, device %s, %d threads\n",
           model_type_names[cfg->model.type], config_attention_text(cfg, attn, sizeof attn),
           r->model.ps.total, r->model.be->name, omp_get_max_threads());
    if (r->world > 1) {
        char layout[4096];
        printf("world: %s; rank 0 validates, logs and saves; each batch of train.batch_tokens = "
               "%d is split into %d shards of about equal target tokens; gradient sum: ",
               dist_layout(layout, sizeof layout, 1), cfg->batch_tokens, r->world);
        int ov = cfg->dist_overlap && r->model.be->host_memory;
        size_t bf = (size_t)((double)cfg->dist_bucket_mb * 1048576.0 / sizeof(float));
        if (bf < 1) bf = 1; /* as buckets_for */
        if (dist_nccl_ready())
            printf("ncclAllReduce (one GPU per rank, by local rank: rank 0 on GPU %d)%s",
                   backend_cuda_device_index(),
                   cfg->dist_overlap ? "; dist.overlap does not apply (one ncclAllReduce after "
                                       "backward)" : "");
        else if (ov)
            printf("MPI_Iallreduce by buckets as backward finishes them (dist.overlap: %zu "
                   "buckets of up to %g MiB)", (r->model.ps.total + bf - 1) / bf,
                   (double)cfg->dist_bucket_mb);
        else
            printf("MPI_Allreduce");
        printf("\n");
    }
    if (r->rank == 0) {
        r->metrics = fopen(r->mpath, "a");
        if (!r->metrics) s = err_set(err, "cannot open %s: %s", r->mpath, strerror(errno));
    }
    if (r->rank == 0 && !s) { /* every key as this start of the run resolved it */
        char path[1200], *ini = config_to_ini(cfg);
        snprintf(path, sizeof path, "%s/config.ini", r->dir);
        s = write_file_atomic(path, ini, strlen(ini), err);
        free(ini);
    }
    return agree(r, s, "start-up (opening metrics.jsonl, writing config.ini)", err);
}

static void run_close(Run *r) {
    if (r->lock_fd >= 0) close(r->lock_fd); /* releases the folder */
    if (r->metrics) fclose(r->metrics);
    batch_plan_free(&r->plan);
    batch_free(&r->tb);
    free(r->keep);
    encoded_free(&r->tenc);
    encoded_free(&r->venc);
    corpus_free(&r->train);
    corpus_free(&r->val);
    if (r->model.rnn || r->model.tf) model_free(&r->model);
    spm_free(r->spm);
}

/* The error that ends a run after train.max_nonfinite skipped steps in a row, the last being
 * the step just taken (r->st.step). */
static Status nonfinite_stop(const Run *r, int in_a_row, Err *err) {
    int saved = access(r->last, F_OK) == 0;
    return err_set(err, "steps %ld to %ld: train.max_nonfinite = %d steps in a row had a "
                   "non-finite loss or gradient, so training stopped; %s%s — lower train.lr, "
                   "set train.clip_norm, or check the data%s", r->st.step + 1 - in_a_row,
                   r->st.step, r->cfg.max_nonfinite,
                   saved ? r->last : "no checkpoint was written yet",
                   saved ? " holds the last saved state" : "", saved ? ", then --resume" : "");
}

/* Logs a skipped step (non-finite loss or gradient) on stderr. */
static void log_nonfinite(const Run *r, const StepResult *s, int in_a_row) {
    char what[128];
    if (!isfinite(s->loss) && !isfinite(s->norm))
        snprintf(what, sizeof what, "loss (%g) and gradient norm (%g)", s->loss, s->norm);
    else if (!isfinite(s->loss)) snprintf(what, sizeof what, "loss (%g)", s->loss);
    else snprintf(what, sizeof what, "gradient norm (%g)", s->norm);
    fprintf(stderr, "step %ld: non-finite %s%s%s%s; update skipped (%d in a row; "
            "train.max_nonfinite = %d)\n", r->st.step, what, s->injected ? " [injected: " : "",
            s->injected ? s->injected : "", s->injected ? "]" : "", in_a_row,
            r->cfg.max_nonfinite);
}

/* Writes the progress line (stdout) and the "train" metrics line of the window, whose last step
 * ended at batch `done` of the epoch, and opens a new window. */
static void log_progress(Run *r, LogWindow *w, long done) {
    const Config *cfg = &r->cfg;
    const TrainState *st = &r->st;
    double now = now_seconds(), el = now - r->t_start;
    double tps = w->tokens_all / (now - w->t);
    double spb = (now - w->t) / w->batches; /* seconds a batch */
    char e1[32], e2[32];
    fmt_time(e1, sizeof e1, el);
    fmt_time(e2, sizeof e2, spb * (r->plan.nbatches - done));
    double l = w->loss / w->tok, lr = optim_lr(cfg, st->step + 1, st->lr_scale);
    char ranks[128] = "";
    if (r->world > 1) /* rank 0's times per step: its forward + backward, the sums (allreduce) */
        snprintf(ranks, sizeof ranks, " | %d ranks: compute %.1f ms, allreduce %.1f ms per step",
                 r->world, 1e3 * w->t_compute / w->steps, 1e3 * w->t_sum / w->steps);
    printf("epoch %d step %ld (%ld/%ld) | loss %.4f ppl %.2f | lr %.2e | %.0f tok/s | "
           "elapsed %s, epoch ETA %s%s\n", st->epoch, st->step, done,
           r->plan.nbatches, l, exp(l), lr, tps, e1, e2, ranks);
    fprintf(r->metrics, "{\"type\": \"train\", \"epoch\": %d, \"step\": %ld, \"loss\": %.17g, "
            "\"ppl\": %.4f, \"lr\": %.6g, \"tok_s\": %.1f, \"elapsed\": %.1f",
            st->epoch, st->step, l, exp(l), lr, tps, el);
    if (r->world > 1)
        fprintf(r->metrics, ", \"ranks\": %d, \"compute_s\": %.6f, \"allreduce_s\": %.6f",
                r->world, w->t_compute / w->steps, w->t_sum / w->steps);
    fprintf(r->metrics, "}\n");
    fflush(r->metrics);
    fflush(stdout);
    *w = (LogWindow){0, now, 0, 0, 0, 0, 0, 0};
}

/* The epochs N of the files epoch<N>.ckpt in dir (train.keep_checkpoints), ascending, into a new
 * array *out (the caller frees it; NULL when none); returns their count (0 when dir cannot be
 * read). Only names of exactly that form count. */
static int list_epoch_ckpts(const char *dir, int **out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        int e, len = 0;
        if (sscanf(ent->d_name, "epoch%d.ckpt%n", &e, &len) != 1 || e < 1 ||
            ent->d_name[len] != 0 || strncmp(ent->d_name, "epoch", 5) ||
            !(ent->d_name[5] >= '1' && ent->d_name[5] <= '9'))
            continue;
        if (n == cap) *out = xrealloc(*out, sizeof **out * (size_t)(cap = cap ? 2 * cap : 16));
        (*out)[n++] = e;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of files */
        for (int j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
            int t = (*out)[j];
            (*out)[j] = (*out)[j - 1], (*out)[j - 1] = t;
        }
    return n;
}

/* After epoch<epoch>.ckpt was committed: deletes the epoch checkpoints of dir beyond the last
 * keep of those up to epoch, and any of a later epoch (left by an earlier run in this folder,
 * which this run has overwritten up to epoch). A file that cannot be deleted is named on
 * stderr; no error. */
static void prune_epoch_ckpts(const char *dir, int epoch, int keep) {
    int *e, n = list_epoch_ckpts(dir, &e), upto = 0;
    while (upto < n && e[upto] <= epoch) upto++;
    for (int i = 0; i < n; i++) {
        if (i >= upto - keep && i < upto) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/epoch%d.ckpt", dir, e[i]);
        if (unlink(path) != 0)
            fprintf(stderr, "cannot delete %s (train.keep_checkpoints = %d): %s\n", path, keep,
                    strerror(errno));
    }
    free(e);
}

/* The score of train.early_stop_metric among a validation's, and whether it improves on best
 * (-1: no validation yet). */
static double stop_score(const Config *cfg, double ppl, double bleu, double chrf) {
    return cfg->early_stop_metric == STOP_PPL ? ppl : cfg->early_stop_metric == STOP_CHRF ? chrf
                                                                                         : bleu;
}
static int score_improves(const Config *cfg, double v, double best) {
    return cfg->early_stop_metric == STOP_PPL ? best < 0 || v < best : v > best;
}
static const char *const stop_metric_text[] = {"BLEU", "chrF", "perplexity"};

/* A validation (rank 0), at the end of an epoch or (train.valid_every) after step st->step:
 * perplexity, BLEU and chrF, the best score of train.early_stop_metric and the validations
 * without a better one (r->st and *pos, the state the checkpoints hold: where training goes on),
 * the plateau decay, the printed line and the "val" metrics line, best.ckpt when improved.
 * *early_stop = 1 when train.patience validations passed without a better score. */
static Status validate_now(Run *r, TrainState *pos, int *early_stop, Err *err) {
    const Config *cfg = &r->cfg;
    TrainState *st = &r->st;
    double vppl, vbleu, vchrf, t0 = now_seconds();
    ParamSet *ps = &r->model.ps;
    int ema = cfg->ema_decay > 0 && ps->ema, by_step = cfg->valid_every > 0;
    if (ema) params_swap_ema(ps); /* validate (and save best.ckpt) with the EMA weights */
    Status vs = validate(&r->model, r->spm, cfg->val_max_sentences, &r->val, &r->venc, &vppl,
                         &vbleu, &vchrf, err);
    if (vs) {
        if (ema) params_swap_ema(ps);
        return STATUS_ERR;
    }
    double v = stop_score(cfg, vppl, vbleu, vchrf);
    int improved = score_improves(cfg, v, st->best_score);
    if (improved) st->best_score = v, st->bad_epochs = 0;
    else st->bad_epochs++, st->lr_scale = optim_decay(cfg, st->lr_scale);
    st->elapsed = now_seconds() - r->t_start;
    pos->best_score = st->best_score, pos->bad_epochs = st->bad_epochs;
    pos->lr_scale = st->lr_scale, pos->elapsed = st->elapsed;
    char e1[32], best[48] = "";
    fmt_time(e1, sizeof e1, st->elapsed);
    if (cfg->early_stop_metric != STOP_BLEU)
        snprintf(best, sizeof best, "%s ", stop_metric_text[cfg->early_stop_metric]);
    if (by_step) printf("step %ld (epoch %d)", st->step, st->epoch);
    else printf("epoch %d done", st->epoch);
    printf(" | val ppl %.2f | val BLEU %.2f chrF %.2f (best %s%.2f)%s%s | validation %.1f s | "
           "elapsed %s\n", vppl, vbleu, vchrf, best, st->best_score, improved ? " new best" : "",
           !ema ? "" : improved ? " | EMA weights (train.ema_decay), saved as best.ckpt"
                                : " | EMA weights (train.ema_decay)",
           now_seconds() - t0, e1);
    fprintf(r->metrics, "{\"type\": \"val\", \"epoch\": %d, \"step\": %ld, \"val_ppl\": %.4f, "
            "\"val_bleu\": %.4f, \"val_chrf\": %.4f, \"lr\": %.6g, \"elapsed\": %.1f, "
            "\"peak_rss_mb\": %.1f}\n", st->epoch, st->step, vppl, vbleu, vchrf,
            optim_lr(cfg, st->step + 1, st->lr_scale), st->elapsed, peak_rss_mb());
    fflush(r->metrics);
    fflush(stdout);
    Status bs = STATUS_OK;
    if (improved) {
        /* with EMA, best.ckpt holds the EMA weights as its parameters and no "ema/" records
         * (the swapped-out buffer now holds the raw weights): a plain checkpoint to evaluate */
        float *held = ps->ema;
        if (ema) ps->ema = NULL;
        bs = checkpoint_save(r->best, &r->model, cfg, r->spm, pos, err);
        ps->ema = held;
    }
    if (ema) params_swap_ema(ps); /* back to the raw weights, bit for bit */
    *early_stop = cfg->patience > 0 && st->bad_epochs >= cfg->patience;
    if (*early_stop)
        printf("early stopping: validation %s has not improved for %d %s\n",
               stop_metric_text[cfg->early_stop_metric], st->bad_epochs,
               by_step ? "validations" : "epochs");
    return bs;
}

/* The end of an epoch whose shuffling RNG is now rng: the validation (validate_now) unless
 * train.valid_every sets another rhythm, last.ckpt at the start of the next epoch, and with
 * train.keep_checkpoints epoch<N>.ckpt. *early_stop as validate_now's (0 without one). */
static Status end_epoch(Run *r, Rng rng, int *early_stop, Err *err) {
    const Config *cfg = &r->cfg;
    TrainState *st = &r->st;
    batch_plan_free(&r->plan);
    TrainState next = *st;
    next.epoch = st->epoch + 1;
    next.batch_in_epoch = 0;
    next.epoch_rng = rng;
    *early_stop = 0;
    if (cfg->valid_every == 0) {
        if (validate_now(r, &next, early_stop, err)) return STATUS_ERR;
    } else {
        next.elapsed = st->elapsed = now_seconds() - r->t_start;
    }
    if (checkpoint_save(r->last, &r->model, cfg, r->spm, &next, err)) return STATUS_ERR;
    if (cfg->keep_checkpoints > 0) {
        char path[1200];
        snprintf(path, sizeof path, "%s/epoch%d.ckpt", r->dir, st->epoch);
        if (checkpoint_save(path, &r->model, cfg, r->spm, &next, err)) return STATUS_ERR;
        prune_epoch_ckpts(r->dir, st->epoch, cfg->keep_checkpoints);
    }
    st->epoch_rng = rng;
    st->batch_in_epoch = 0;
    return STATUS_OK;
}

/* train.valid_every = N after step st->step (a multiple of N), the step's batches ending at
 * batch `done` of the epoch: validate_now, then last.ckpt at the next batch. */
static Status validate_at_step(Run *r, long done, int *early_stop, Err *err) {
    TrainState pos = r->st;
    pos.batch_in_epoch = done;
    if (validate_now(r, &pos, early_stop, err)) return STATUS_ERR;
    return checkpoint_save(r->last, &r->model, &r->cfg, r->spm, &pos, err);
}

/* train.average_last = K at the end of a run (rank 0): avg.ckpt = checkpoint_average of the
 * last K epoch checkpoints in save_dir up to the current epoch (fewer when fewer exist, said in
 * the log line), then its validation BLEU printed next to best's. Nothing when K = 0 or no epoch
 * checkpoint exists. Errors: checkpoint_average's, checkpoint_load's, validation's. */
static Status average_at_end(Run *r, Err *err) {
    const Config *cfg = &r->cfg;
    if (cfg->average_last <= 0) return STATUS_OK;
    int *e, n = list_epoch_ckpts(r->dir, &e), upto = 0;
    while (upto < n && e[upto] <= r->st.epoch) upto++;
    if (upto == 0) {
        printf("train.average_last = %d: no epoch checkpoint was written, so no avg.ckpt\n",
               cfg->average_last);
        free(e);
        return STATUS_OK;
    }
    int k = upto < cfg->average_last ? upto : cfg->average_last, last = e[upto - 1];
    char **paths = xcalloc((size_t)k, sizeof *paths), list[1024] = "";
    for (int i = 0; i < k; i++) {
        paths[i] = xmalloc(1200);
        snprintf(paths[i], 1200, "%s/epoch%d.ckpt", r->dir, e[upto - k + i]);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? ", " : "",
                 e[upto - k + i]);
    }
    free(e);
    char out[1200];
    snprintf(out, sizeof out, "%s/avg.ckpt", r->dir);
    /* training is over: its activations go before the averaging loads checkpoints beside the
     * model (otherwise the run's peak memory); the validation below reserves its own, smaller */
    model_release(&r->model);
    Model m = {0};
    Config c;
    Spm *spm = NULL;
    Status rc = checkpoint_average((const char *const *)paths, k, out, err);
    for (int i = 0; i < k; i++) free(paths[i]);
    free(paths);
    if (rc) return STATUS_ERR;
    if (k < cfg->average_last)
        printf("averaged the last %d epoch checkpoints (epochs %s; fewer than train.average_last "
               "= %d: only %d were written) -> %s\n", k, list, cfg->average_last, k, out);
    else
        printf("averaged the last %d epoch checkpoints (epochs %s) -> %s\n", k, list, out);
    /* validated in the run's own model, its weights replaced by avg.ckpt's (training is over, its
     * checkpoints are written): its activations serve, where a second model would reserve its
     * own as large */
    if (checkpoint_load_weights(out, &m, &c, &spm, (int)cfg->device, err)) return STATUS_ERR;
    spm_free(spm);
    size_t total = m.ps.total;
    if (total == r->model.ps.total)
        r->model.be->copy(r->model.ps.data, m.ps.data, sizeof(float) * total);
    model_free(&m);
    if (total != r->model.ps.total)
        return err_set(err, "%s: %zu parameters, the run's model has %zu; the epoch checkpoints "
                       "in %s are not all this run's", out, total, r->model.ps.total, r->dir);
    double vppl, vbleu, vchrf;
    rc = validate(&r->model, r->spm, cfg->val_max_sentences, &r->val, &r->venc, &vppl, &vbleu,
                  &vchrf, err);
    if (rc) return rc;
    char best[48] = "";
    if (cfg->early_stop_metric != STOP_BLEU)
        snprintf(best, sizeof best, "%s ", stop_metric_text[cfg->early_stop_metric]);
    printf("avg.ckpt: val ppl %.2f | val BLEU %.2f chrF %.2f (best.ckpt %s%.2f)\n", vppl, vbleu,
           vchrf, best, r->st.best_score);
    fprintf(r->metrics, "{\"type\": \"avg\", \"epoch\": %d, \"step\": %ld, \"averaged\": %d, "
            "\"val_ppl\": %.4f, \"val_bleu\": %.4f, \"val_chrf\": %.4f}\n", last, r->st.step,
            k, vppl, vbleu, vchrf);
    fflush(r->metrics);
    return STATUS_OK;
}

/* The closing line: the best checkpoint, or that no validation ran and which file holds the
 * last state (only files that exist are named). */
static void print_done(const Run *r) {
    if (r->st.best_score >= 0) /* a validation ran (-1: none yet), so best.ckpt was written */
        printf("training done: %ld steps, best validation %s %.2f, %s in %s\n", r->st.step,
               stop_metric_text[r->cfg.early_stop_metric], r->st.best_score, r->best, r->dir);
    else if (access(r->last, F_OK) == 0)
        printf("training done: %ld steps; no validation ran (the run stopped before the end of "
               "its first epoch), so there is no best checkpoint; the last state is %s\n",
               r->st.step, r->last);
    else
        printf("training done: %ld steps; no validation ran and no checkpoint was written\n",
               r->st.step);
}

/* 1 when the value is non-zero on any rank (a sum over the ranks); one rank: v != 0. */
static int any_rank(const Run *r, int v, const char *what) {
    double x = v ? 1.0 : 0.0;
    if (r->world > 1) dist_sum_double(&x, 1, what);
    return x > 0;
}

/* The step or time limit a run has reached after `step` steps and `elapsed` seconds of
 * training: "train.max_steps" or "train.max_hours" (steps first), NULL when neither (0 = no
 * limit). */
static const char *limit_reached(const Config *cfg, long step, double elapsed) {
    if (cfg->max_steps > 0 && step >= cfg->max_steps) return "train.max_steps";
    if (cfg->max_hours > 0 && elapsed >= 3600.0 * cfg->max_hours) return "train.max_hours";
    return NULL;
}

Status train_run(const Config *cfg_in, int resume, Err *err) {
    Status rc = STATUS_ERR;
    Run run = {0}, *r = &run;
    const Config *cfg = &r->cfg;
    TrainState *st = &r->st;
    if (dist_size() > 1) {
        /* no time limit during start-up (rank 0 may train SentencePiece for long while the
         * others wait): only dead ranks on this host are caught; dist.timeout from the loop on */
        dist_set_timeout(0);
        if (dist_rank() != 0) { /* rank 0 alone logs (stdout); errors still go to stderr */
            fflush(stdout);
            int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (fd >= 0) dup2(fd, STDOUT_FILENO), close(fd);
        }
        if (dist_check_ranks(cfg_in, err)) return STATUS_ERR;
    }
    if (run_open(r, cfg_in, resume, err)) goto cleanup;
    if (r->world > 1) dist_set_timeout(cfg->dist_timeout);
    install_stop_signals();
    int lead = r->rank == 0, many = r->world > 1;

    r->t_start = now_seconds() - st->elapsed;
    LogWindow win = {0, now_seconds(), 0, 0, 0, 0, 0, 0};
    int nonfinite_run = 0, stop = 0;
    /* A resumed run that already reached one of its limits trains nothing more (max_epochs is
     * the loop's own condition): resuming a finished run is a no-op, as `trainer compare` relies
     * on to complete interrupted runs. */
    const char *reached = limit_reached(cfg, st->step, st->elapsed);
    if (!reached && cfg->patience > 0 && st->bad_epochs >= cfg->patience)
        reached = "train.patience (early stopping)";
    if (reached) {
        printf("%s had already reached %s: nothing left to train\n", r->last, reached);
        stop = 1;
    } else if (lead) {
        write_start_record(r); /* a resume that trains nothing leaves metrics.jsonl as it was */
    }
    for (; st->epoch <= cfg->max_epochs && !stop; st->epoch++) {
        Rng rng = st->epoch_rng;
        if (batch_plan(&r->plan, &r->tenc, r->keep, r->nkeep, cfg->batch_tokens, &rng, err))
            goto cleanup;
        long group = 1; /* the batches of this optimizer step (train.accum_steps) */
        for (; st->batch_in_epoch < r->plan.nbatches; st->batch_in_epoch += group) {
            group = r->plan.nbatches - st->batch_in_epoch;
            if (group > cfg->accum_steps) group = cfg->accum_steps;
            long global_tgt = 0, done = st->batch_in_epoch + group;
            for (long j = 0; j < group; j++)
                global_tgt += shard_of(r, st->batch_in_epoch + j, NULL, NULL);
            /* what the ranks agree on with the step's sums: a stop signal on any rank, and
             * rank 0's clock for train.max_hours */
            StepSync sync = {{g_stop_signal ? 1.0 : 0.0, lead ? now_seconds() - r->t_start : 0},
                             0, 0, 0, 0};
            StepResult s = train_step_accum(&r->model, cfg, (int)group, fill_batch, r,
                                            global_tgt, st, &r->inject, &sync);
            CHECK(sync.tgt_tokens == global_tgt, "the ranks' shards do not add up to the global "
                  "batch: do all ranks plan the same batches?");
            int stop_signal = many ? sync.flags[0] > 0 : g_stop_signal != 0;
            if (!s.finite) { /* the same on every rank: the loss and norm are global */
                ++nonfinite_run;
                if (lead) log_nonfinite(r, &s, nonfinite_run);
                if (nonfinite_run >= cfg->max_nonfinite) {
                    nonfinite_stop(r, nonfinite_run, err);
                    goto cleanup;
                }
            } else {
                nonfinite_run = 0;
                win.loss += s.loss; /* a skipped step leaves no NaN in the logged mean */
                win.tok += global_tgt;
            }
            win.tokens_all += global_tgt + sync.src_tokens;
            win.steps++, win.batches += group;
            win.t_compute += sync.t_compute, win.t_sum += sync.t_sum;
            int last_batch = done == r->plan.nbatches;
            if (lead && st->step % cfg->log_every == 0 && win.tok > 0) log_progress(r, &win, done);
            /* train.valid_every: a validation after every N steps (none while a signal stops
             * the run: it saves at once) */
            if (cfg->valid_every > 0 && st->step % cfg->valid_every == 0 && !stop_signal) {
                Status vs = STATUS_OK; /* rank 0 validates and saves; the others wait */
                if (lead) vs = validate_at_step(r, done, &stop, err);
                if (agree(r, vs, "rank 0's validation and checkpoint", err)) goto cleanup;
                if (many) {
                    dist_bcast(st, sizeof *st, 0, "the state after rank 0's validation");
                    dist_bcast(&stop, sizeof stop, 0, "the early-stopping decision");
                }
                if (stop) break; /* early stopping: last.ckpt is written */
            }
            /* the limit that ends the run after this step, if any (named in the message) */
            const char *limit = limit_reached(cfg, st->step,
                                              many ? sync.flags[1] : now_seconds() - r->t_start);
            if (limit || stop_signal ||
                (cfg->save_every > 0 && st->step % cfg->save_every == 0 && !last_batch)) {
                TrainState pos = *st; /* the position to resume at: the next batch */
                pos.batch_in_epoch = done;
                pos.elapsed = now_seconds() - r->t_start;
                Status sv = STATUS_OK; /* rank 0 saves; the others wait for its verdict */
                if (lead) sv = checkpoint_save(r->last, &r->model, cfg, r->spm, &pos, err);
                if (agree(r, sv, "rank 0's checkpoint", err)) goto cleanup;
                if (stop_signal) {
                    printf("%s: finished step %ld, saved %s; continue with --resume\n",
                           g_stop_signal ? signal_name(g_stop_signal) : "a signal (on another "
                           "rank)", st->step, r->last);
                    rc = STATUS_OK;
                    goto cleanup;
                }
                if (limit) {
                    if (strcmp(limit, "train.max_steps") == 0)
                        printf("reached train.max_steps = %ld; saved %s\n", cfg->max_steps,
                               r->last);
                    else
                        printf("reached train.max_hours = %g; saved %s\n",
                               (double)cfg->max_hours, r->last);
                    stop = 1;
                    break;
                }
            }
        }
        if (stop) break;
        Status es = STATUS_OK; /* rank 0 validates and saves; the others wait for its state */
        if (lead) es = end_epoch(r, rng, &stop, err);
        else batch_plan_free(&r->plan);
        if (agree(r, es, "rank 0's validation and checkpoint", err)) goto cleanup;
        if (many) {
            dist_bcast(st, sizeof *st, 0, "the state after rank 0's validation");
            dist_bcast(&stop, sizeof stop, 0, "the early-stopping decision");
        }
        if (stop) break; /* early stopping */
        int signalled = any_rank(r, g_stop_signal != 0, "the stop signals after validation");
        if (signalled && st->epoch < cfg->max_epochs) { /* came during the validation */
            printf("%s: finished epoch %d (step %ld), saved %s; continue with --resume\n",
                   g_stop_signal ? signal_name(g_stop_signal) : "a signal (on another rank)",
                   st->epoch, st->step, r->last);
            rc = STATUS_OK;
            goto cleanup;
        }
    }
    Status as = STATUS_OK; /* rank 0 averages; the others wait for its verdict */
    char avg[1200];
    snprintf(avg, sizeof avg, "%.1100s/avg.ckpt", r->dir);
    if (lead && !(reached && access(avg, F_OK) == 0)) /* a finished run keeps its average */
        as = average_at_end(r, err);
    if (agree(r, as, "rank 0's checkpoint averaging", err)) goto cleanup;
    print_done(r);
    rc = STATUS_OK;
cleanup:
    run_close(r);
    dist_nccl_finalize(rc == STATUS_OK);
    return rc;
}
