/* train.c — train_run, the training loop (train.h): data, SentencePiece and batches, the step
 * (model_loss, then optim.c's clipping, Adam and schedule), validation, early stopping,
 * checkpoints, metrics.jsonl and signals; set_threads. */
#include "train/train.h"

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "eval/metrics.h"
#include "eval/translate.h"
#include "train/checkpoint.h"
#include "train/inject.h"
#include "train/optim.h"

/* OpenBLAS's own thread-count setter (declared by its cblas.h in most builds). */
void openblas_set_num_threads(int num_threads);

void set_threads(int threads) {
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = 1;
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
}

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

/* Removes temporary files a killed save left behind (<dir>/<name>.ckpt.tmp.<pid>); called with
 * the folder locked, and it spares a file whose pid is still alive all the same. */
static void remove_stale_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        const char *t = strstr(ent->d_name, ".ckpt.tmp.");
        if (!t) continue;
        long pid = strtol(t + strlen(".ckpt.tmp."), NULL, 10);
        if (pid > 0 && pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
            continue; /* its process still runs */
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) == 0) printf("removed %s, left by an interrupted save\n", path);
    }
    closedir(d);
}

/* On resume: drops the lines of metrics.jsonl that a killed run wrote after the checkpoint's
 * step, so that every step appears once, and a last line the kill cut short. Rewritten
 * atomically (temporary file + rename). */
static Status trim_metrics(const char *path, long step, Err *err) {
    FILE *in = fopen(path, "r");
    if (!in) return STATUS_OK; /* nothing logged yet */
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "w");
    if (!out) {
        fclose(in);
        return err_set(err, "cannot write %s: %s", tmp, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    long dropped = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        const char *k = strstr(line, "\"step\": ");
        if (line[len - 1] != '\n' || (k && strtol(k + 8, NULL, 10) > step)) {
            /* a line cut short by the crash, or one the resumed run will write again */
            dropped++;
            continue;
        }
        fputs(line, out);
    }
    free(line);
    fclose(in);
    if (fclose(out) || rename(tmp, path)) {
        unlink(tmp);
        return err_set(err, "cannot rewrite %s: %s", path, strerror(errno));
    }
    if (dropped) printf("metrics: dropped %ld lines logged after step %ld by the interrupted run\n",
                        dropped, step);
    return STATUS_OK;
}

static Status make_dir(const char *path, Err *err) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST)
            return err_set(err, "cannot create folder %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return err_set(err, "cannot create folder %s: %s", buf, strerror(errno));
    return STATUS_OK;
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

static Status encode_split(const Config *cfg, const Corpus *c, const Spm *spm, const char *what,
                           Encoded *e, Err *err) {
    char cache[1400];
    snprintf(cache, sizeof cache, "%s/%s.%s.enc", cfg->cache_dir, cfg->name, what);
    if (make_dir(cfg->cache_dir, err)) return STATUS_ERR;
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
    DecodeOpts greedy = {1, 0.0f};
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

Status train_run(const Config *cfg_in, int resume, Err *err) {
    Status rc = STATUS_ERR;
    Config cfg = *cfg_in;
    Corpus train = {0}, val = {0};
    Encoded tenc = {0}, venc = {0};
    Model model = {0};
    BatchPlan plan = {0};
    TokenBatch hb = {0};
    long *keep = NULL;
    FILE *metrics = NULL;
    int lock_fd = -1;
    Spm *spm = NULL;
    TrainState st = {.step = 0, .epoch = 1, .lr_scale = 1.0, .best_bleu = -1.0};
    NonfiniteInjection inject; /* tests only: TRAINER_TEST_INJECT_NONFINITE (train/inject.h) */
    char dir[1024], last[1100], best[1100], mpath[1100];
    config_save_dir(&cfg, dir, sizeof dir);
    snprintf(last, sizeof last, "%s/last.ckpt", dir);
    snprintf(best, sizeof best, "%s/best.ckpt", dir);
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", dir);
    set_threads(cfg.threads);
    const Backend *be;
    if (config_backend(cfg.device, &be, err)) goto cleanup; /* refuse before any data work */
    if (inject_parse(&inject, getenv(INJECT_ENV), err)) goto cleanup;
    if (make_dir(dir, err)) goto cleanup;
    if ((lock_fd = lock_run_dir(dir, err)) < 0) goto cleanup;
    remove_stale_temps(dir);

    if (corpus_load(&train, cfg.train_src, cfg.train_tgt, cfg.max_line_bytes, err)) goto cleanup;
    corpus_print_summary(&train, "train", stdout);
    if (corpus_load(&val, cfg.val_src, cfg.val_tgt, cfg.max_line_bytes, err)) goto cleanup;
    corpus_print_summary(&val, "val", stdout);

    if (resume) {
        if (access(last, F_OK) != 0) {
            err_set(err, "--resume: there is no checkpoint %s to resume from; run without "
                    "--resume to start training", last);
            goto cleanup;
        }
        Config c; /* the checkpoint's config */
        if (checkpoint_load(last, &model, &c, &spm, &st, (int)cfg.device, err)) goto cleanup;
        /* keys that may change on resume; everything else must match the checkpoint */
        c.max_epochs = cfg.max_epochs, c.max_steps = cfg.max_steps, c.patience = cfg.patience;
        c.max_hours = cfg.max_hours;
        c.log_every = cfg.log_every, c.save_every = cfg.save_every, c.threads = cfg.threads;
        c.val_max_sentences = cfg.val_max_sentences, c.device = cfg.device;
        c.max_nonfinite = cfg.max_nonfinite;
        snprintf(c.save_dir, sizeof c.save_dir, "%s", cfg.save_dir);
        char diff[2048];
        if (config_diff(&c, &cfg, diff, sizeof diff)) {
            err_set(err, "--resume: the config differs from the one %s was trained with (%s); "
                    "resume with the original settings or start a new run in another "
                    "train.save_dir", last, diff);
            goto cleanup;
        }
        if (trim_metrics(mpath, st.step, err)) goto cleanup;
        printf("resumed from %s: epoch %d, step %ld, batch %ld of the epoch\n", last, st.epoch,
               st.step, st.batch_in_epoch);
    } else {
        if (train_spm(&cfg, &train, dir, &spm, err)) goto cleanup;
        if (model_create(&model, &cfg.model, spm_vocab_size(spm), be, err)) goto cleanup;
        model_init_params(&model, cfg.seed);
        rng_seed(&st.epoch_rng, cfg.seed, 0x5eed);
        unlink(mpath);
    }
    if (encode_split(&cfg, &train, spm, "train", &tenc, err)) goto cleanup;
    if (encode_split(&cfg, &val, spm, "val", &venc, err)) goto cleanup;
    long nkeep = batch_filter(&tenc, cfg.max_len, &keep);
    printf("train: %ld pairs within %d subword tokens a side (%ld longer ones skipped)\n", nkeep,
           cfg.max_len, tenc.n - nkeep);
    int bB, bS, bT;
    batch_bounds(cfg.batch_tokens, cfg.max_len, &bB, &bS, &bT);
    batch_alloc(&hb, bB, bS, bT, cfg.batch_tokens, cfg.batch_tokens);
    model_reserve(&model, bB, bS, bT, cfg.batch_tokens, cfg.batch_tokens);
    char attn[64];
    printf("model: %s, attention %s, %zu parameters, device %s, %d threads\n",
           model_type_names[cfg.model.type], config_attention_text(&cfg, attn, sizeof attn),
           model.ps.total, model.be->name, omp_get_max_threads());
    metrics = fopen(mpath, "a");
    if (!metrics) {
        err_set(err, "cannot open %s: %s", mpath, strerror(errno));
        goto cleanup;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    ParamSet *ps = &model.ps;
    be = model.be;
    double t_start = now_seconds() - st.elapsed, t_log = now_seconds();
    double log_loss = 0;
    long log_tok = 0, log_tokens_all = 0, log_steps = 0;
    int nonfinite_run = 0, stop = 0;
    for (; st.epoch <= cfg.max_epochs && !stop; st.epoch++) {
        Rng rng = st.epoch_rng;
        if (batch_plan(&plan, &tenc, keep, nkeep, cfg.batch_tokens, &rng, err)) goto cleanup;
        for (; st.batch_in_epoch < plan.nbatches; st.batch_in_epoch++) {
            long bi = st.batch_in_epoch;
            int B = (int)(plan.start[bi + 1] - plan.start[bi]);
            batch_fill(&hb, &tenc, plan.idx + plan.start[bi], B);
            params_zero_grad(ps);
            uint64_t key = rng_hash(cfg.seed, (uint64_t)st.step);
            double loss = model_loss(&model, &hb, cfg.label_smoothing, 1, key,
                                     1.0f / (float)hb.tgt_tokens);
            const char *injected = inject.n ? inject_apply(&inject, st.step + 1, be, ps->grad,
                                                           &loss) : NULL;
            double norm = optim_grad_norm(ps);
            int finite = isfinite(norm) && isfinite(loss);
            if (!finite) {
                nonfinite_run++;
                char what[128];
                if (!isfinite(loss) && !isfinite(norm))
                    snprintf(what, sizeof what, "loss (%g) and gradient norm (%g)", loss, norm);
                else if (!isfinite(loss)) snprintf(what, sizeof what, "loss (%g)", loss);
                else snprintf(what, sizeof what, "gradient norm (%g)", norm);
                fprintf(stderr, "step %ld: non-finite %s%s%s%s; update skipped (%d in a row; "
                        "train.max_nonfinite = %d)\n", st.step + 1, what,
                        injected ? " [injected: " : "", injected ? injected : "",
                        injected ? "]" : "", nonfinite_run, cfg.max_nonfinite);
                if (nonfinite_run >= cfg.max_nonfinite) {
                    int saved = access(last, F_OK) == 0;
                    err_set(err, "steps %ld to %ld: train.max_nonfinite = %d steps in a row had a "
                            "non-finite loss or gradient, so training stopped; %s%s — lower "
                            "train.lr, set train.clip_norm, or check the data%s",
                            st.step + 2 - nonfinite_run, st.step + 1, cfg.max_nonfinite,
                            saved ? last : "no checkpoint was written yet",
                            saved ? " holds the last saved state" : "",
                            saved ? ", then --resume" : "");
                    goto cleanup;
                }
            } else {
                nonfinite_run = 0;
                optim_clip(ps, norm, cfg.clip_norm);
                st.adam_t++;
                optim_adam(ps, &cfg, optim_lr(&cfg, st.step + 1, st.lr_scale), st.adam_t);
            }
            st.step++;
            if (finite) { /* a skipped step leaves no NaN in the logged mean */
                log_loss += loss;
                log_tok += hb.tgt_tokens;
            }
            log_tokens_all += hb.tgt_tokens + hb.src_tokens;
            log_steps++;
            int last_batch = st.batch_in_epoch + 1 == plan.nbatches;
            if (st.step % cfg.log_every == 0 && log_tok > 0) {
                double now = now_seconds(), el = now - t_start;
                double tps = log_tokens_all / (now - t_log);
                double spb = (now - t_log) / log_steps;
                char e1[32], e2[32];
                fmt_time(e1, sizeof e1, el);
                fmt_time(e2, sizeof e2, spb * (plan.nbatches - st.batch_in_epoch - 1));
                double l = log_loss / log_tok, lr = optim_lr(&cfg, st.step + 1, st.lr_scale);
                printf("epoch %d step %ld (%ld/%ld) | loss %.4f ppl %.2f | lr %.2e | %.0f tok/s | "
                       "elapsed %s, epoch ETA %s\n", st.epoch, st.step, st.batch_in_epoch + 1,
                       plan.nbatches, l, exp(l), lr, tps, e1, e2);
                fprintf(metrics, "{\"type\": \"train\", \"epoch\": %d, \"step\": %ld, \"loss\": %.17g, "
                        "\"ppl\": %.4f, \"lr\": %.6g, \"tok_s\": %.1f, \"elapsed\": %.1f}\n",
                        st.epoch, st.step, l, exp(l), lr, tps, el);
                fflush(metrics);
                fflush(stdout);
                log_loss = 0, log_tok = 0, log_tokens_all = 0, log_steps = 0, t_log = now;
            }
            /* the limit that ends the run after this step, if any (named in the message) */
            int by_steps = cfg.max_steps > 0 && st.step >= cfg.max_steps;
            int by_hours = !by_steps && cfg.max_hours > 0 &&
                           now_seconds() - t_start >= 3600.0 * cfg.max_hours;
            int limit = by_steps || by_hours;
            if (limit || g_stop_signal ||
                (cfg.save_every > 0 && st.step % cfg.save_every == 0 && !last_batch)) {
                TrainState pos = st; /* the position to resume at: the next batch */
                pos.batch_in_epoch++;
                pos.elapsed = now_seconds() - t_start;
                if (checkpoint_save(last, &model, &cfg, spm, &pos, err)) goto cleanup;
                if (g_stop_signal) {
                    printf("%s: finished step %ld, saved %s; continue with --resume\n",
                           signal_name(g_stop_signal), st.step, last);
                    rc = STATUS_OK;
                    goto cleanup;
                }
                if (limit) {
                    if (by_steps)
                        printf("reached train.max_steps = %ld; saved %s\n", cfg.max_steps, last);
                    else
                        printf("reached train.max_hours = %g; saved %s\n", (double)cfg.max_hours,
                               last);
                    stop = 1;
                    break;
                }
            }
        }
        if (stop) break;
        /* end of epoch: validate, decay, early stopping, checkpoints */
        batch_plan_free(&plan);
        double vppl, vbleu, vchrf, t0 = now_seconds();
        if (validate(&model, spm, cfg.val_max_sentences, &val, &venc, &vppl, &vbleu, &vchrf,
                     err))
            goto cleanup;
        int improved = vbleu > st.best_bleu;
        if (improved) st.best_bleu = vbleu, st.bad_epochs = 0;
        else st.bad_epochs++, st.lr_scale = optim_decay(&cfg, st.lr_scale);
        st.elapsed = now_seconds() - t_start;
        char e1[32];
        fmt_time(e1, sizeof e1, st.elapsed);
        printf("epoch %d done | val ppl %.2f | val BLEU %.2f chrF %.2f (best %.2f)%s | "
               "validation %.1f s | elapsed %s\n", st.epoch, vppl, vbleu, vchrf, st.best_bleu,
               improved ? " new best" : "", now_seconds() - t0, e1);
        fprintf(metrics, "{\"type\": \"val\", \"epoch\": %d, \"step\": %ld, \"val_ppl\": %.4f, "
                "\"val_bleu\": %.4f, \"val_chrf\": %.4f, \"lr\": %.6g, \"elapsed\": %.1f, "
                "\"peak_rss_mb\": %.1f}\n", st.epoch, st.step, vppl, vbleu, vchrf,
                optim_lr(&cfg, st.step + 1, st.lr_scale), st.elapsed, peak_rss_mb());
        fflush(metrics);
        fflush(stdout);
        TrainState next = st;
        next.epoch = st.epoch + 1;
        next.batch_in_epoch = 0;
        next.epoch_rng = rng;
        if (improved && checkpoint_save(best, &model, &cfg, spm, &next, err)) goto cleanup;
        if (checkpoint_save(last, &model, &cfg, spm, &next, err)) goto cleanup;
        st.epoch_rng = rng;
        st.batch_in_epoch = 0;
        if (cfg.patience > 0 && st.bad_epochs >= cfg.patience) {
            printf("early stopping: validation BLEU has not improved for %d epochs\n",
                   st.bad_epochs);
            break;
        }
        if (g_stop_signal && st.epoch < cfg.max_epochs) { /* came during the validation */
            printf("%s: finished epoch %d (step %ld), saved %s; continue with --resume\n",
                   signal_name(g_stop_signal), st.epoch, st.step, last);
            rc = STATUS_OK;
            goto cleanup;
        }
    }
    if (st.best_bleu >= 0) /* a validation ran (-1: none yet), so best.ckpt was written */
        printf("training done: %ld steps, best validation BLEU %.2f, %s in %s\n", st.step,
               st.best_bleu, best, dir);
    else if (access(last, F_OK) == 0)
        printf("training done: %ld steps; no validation ran (the run stopped before the end of "
               "its first epoch), so there is no best checkpoint; the last state is %s\n",
               st.step, last);
    else
        printf("training done: %ld steps; no validation ran and no checkpoint was written\n",
               st.step);
    rc = STATUS_OK;
cleanup:
    if (lock_fd >= 0) close(lock_fd); /* releases the folder */
    if (metrics) fclose(metrics);
    batch_plan_free(&plan);
    batch_free(&hb);
    free(keep);
    encoded_free(&tenc);
    encoded_free(&venc);
    corpus_free(&train);
    corpus_free(&val);
    if (model.rnn || model.tf) model_free(&model);
    spm_free(spm);
    return rc;
}
