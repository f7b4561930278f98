/* run.c — opening and closing a training run (run.h): backend, run folder, data, SentencePiece,
 * model, batch buffers and the run's files, on every rank. */
#include "train/run.h"

#include <errno.h>
#include <omp.h>
#include <string.h>
#include <unistd.h>

#include "data/prepare.h"
#include "dist/dist.h"
#include "dist/dist_nccl.h"
#include "train/finetune.h"
#include "train/ranks.h"
#include "train/rundir.h"
#include "train/runlog.h"
#include "train/step.h"
#include "train/train.h"

Status train_spm_model(const Config *cfg, const char *dir, Err *err) {
    Corpus c = {0};
    Spm *spm = NULL;
    if (make_dirs(dir, err)) return STATUS_ERR;
    Status s = corpus_load(&c, cfg->train_src, cfg->train_tgt, cfg->max_line_bytes, err);
    if (!s) s = corpus_concat(&c, cfg->concat, err);
    if (!s) s = prepare_spm_train_sep(&c, cfg->vocab_size, cfg->concat > 1, dir, &spm, err);
    spm_free(spm);
    corpus_free(&c);
    return s;
}

/* Rank 0's part of opening the run: save_dir and its lock, the corpora, and the model (new, or
 * from last.ckpt with resume) with its SentencePiece model. The other ranks load the corpora
 * only (ranks_share_start gives them the rest). */
static Status open_local(Run *r, int resume, const Backend *be, Err *err) {
    Config *cfg = &r->cfg;
    int lead = r->rank == 0;
    if (lead) {
        if (make_dirs(r->dir, err)) return err_prefix(err, "train.save_dir");
        if ((r->lock_fd = rundir_lock(r->dir, err)) < 0) return STATUS_ERR;
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
    if (cfg->concat > 1) { /* document-level examples: data.concat sentences each */
        long nt = r->train.n, nv = r->val.n;
        if (corpus_concat(&r->train, cfg->concat, err))
            return err_prefix(err, "data.train_src / data.train_tgt");
        if (corpus_concat(&r->val, cfg->concat, err))
            return err_prefix(err, "data.val_src / data.val_tgt");
        printf("data.concat = %d: train %ld pairs joined into %ld examples, val %ld into %ld\n",
               cfg->concat, nt, r->train.n, nv, r->val.n);
    }
    if (!lead) return STATUS_OK;

    if (resume) {
        Config c; /* the checkpoint's config */
        if (checkpoint_load(r->last, &r->model, &c, &r->spm, &r->st, (int)cfg->device, err))
            return STATUS_ERR;
        if (r->st.weights_only)
            return err_set(err, "--resume: %s holds the weights alone, without the optimizer's "
                           "state (Adam's moments) that resuming needs; resume from the run's own "
                           "last.ckpt, or start a new run from these weights with "
                           "train.init_from = %s", r->last, r->last);
        /* train.init_from was read at the run's start: the CRC it recorded stays the run's */
        if (!cfg->init_from_crc[0])
            memcpy(cfg->init_from_crc, c.init_from_crc, sizeof c.init_from_crc);
        char diff[2048];
        if (config_diff_resume(&c, cfg, diff, sizeof diff))
            return err_set(err, "--resume: the config differs from the one %s was trained with "
                           "(%s); resume with the original settings or start a new run in "
                           "another train.save_dir", r->last, diff);
        if (runlog_trim(r->mpath, r->st.step, err)) return STATUS_ERR;
        printf("resumed from %s: epoch %d, step %ld, batch %ld of the epoch\n", r->last,
               r->st.epoch, r->st.step, r->st.batch_in_epoch);
    } else if (cfg->init_from[0]) { /* fine-tuning: the checkpoint's weights and SentencePiece */
        if (init_from_checkpoint(cfg, r->dir, be, &r->model, &r->spm, err)) return STATUS_ERR;
        rng_seed(&r->st.epoch_rng, cfg->seed, 0x5eed);
        unlink(r->mpath);
    } else {
        if (cfg->spm_model[0]
                ? prepare_spm_load(cfg->spm_model, cfg->vocab_size, r->dir, &r->spm, err)
                : prepare_spm_train_sep(&r->train, cfg->vocab_size, cfg->concat > 1, r->dir,
                                        &r->spm, err))
            return STATUS_ERR;
        if (model_create(&r->model, &cfg->model, spm_vocab_size(r->spm), be, err))
            return STATUS_ERR;
        model_init_params(&r->model, cfg->seed);
        rng_seed(&r->st.epoch_rng, cfg->seed, 0x5eed);
        unlink(r->mpath);
    }
    if (prepare_check_sep(r->spm, cfg->concat,
                          resume ? r->last : cfg->init_from[0] ? cfg->init_from
                          : cfg->spm_model[0] ? cfg->spm_model : "the run's spm.model", err))
        return STATUS_ERR;
    /* allocated once, with the parameters (docs/design.md §6); a resumed run has it from the
     * checkpoint's "ema/" records (params_allocate_ema then does nothing) */
    if (cfg->ema_decay > 0) params_allocate_ema(&r->model.ps);
    return STATUS_OK;
}

/* The backend's line with, on cuda, the RNN layers' implementation (model.rnn_impl; cudnn covers
 * the decoder only without input feeding and without bahdanau, rnn.h rnn_set_impl), on stdout
 * (rank 0's: the other ranks' stdout is /dev/null). */
static void print_backend(const Config *cfg, const char *line) {
    const ModelSpec *ms = &cfg->model;
    const char *rnn = cfg->device != DEVICE_CUDA || ms->type != MODEL_RNN ? ""
                      : ms->rnn_impl == RNN_IMPL_OWN ? ", rnn: own"
                      : ms->input_feeding ? ", rnn: cudnn (encoder; decoder own: input feeding)"
                      : ms->attention == ATTN_BAHDANAU
                          ? ", rnn: cudnn (encoder; decoder own: bahdanau)"
                          : ", rnn: cudnn (encoder and decoder)";
    printf("%s%s\n", line, rnn);
}

/* The model's line and, with N ranks, the world's: the ranks, the shards and how the gradient is
 * summed. */
static void print_model(const Run *r) {
    const Config *cfg = &r->cfg;
    char attn[64];
    printf("model: %s, attention %s, %zu parameters, device %s, %d threads\n",
           model_type_names[cfg->model.type], config_attention_text(cfg, attn, sizeof attn),
           r->model.ps.total, r->model.be->name, omp_get_max_threads());
    if (r->world == 1) return;
    char layout[4096];
    printf("world: %s; rank 0 validates, logs and saves; each batch of train.batch_tokens = "
           "%d is split into %d shards of about equal target tokens; gradient sum: ",
           dist_layout(layout, sizeof layout, 1), cfg->batch_tokens, r->world);
    size_t bf = train_bucket_floats(cfg);
    if (dist_nccl_ready())
        printf("ncclAllReduce (one GPU per rank, by local rank: rank 0 on GPU %d)%s",
               backend_info(BACKEND_DEVICE_CUDA).gpu_index,
               cfg->dist_overlap ? "; dist.overlap does not apply (one ncclAllReduce after "
                                   "backward)" : "");
    else if (cfg->dist_overlap && r->model.be->host_memory)
        printf("MPI_Iallreduce by buckets as backward finishes them (dist.overlap: %zu "
               "buckets of up to %g MiB)", (r->model.ps.total + bf - 1) / bf,
               (double)cfg->dist_bucket_mb);
    else
        printf("MPI_Allreduce");
    printf("\n");
}

Status run_open(Run *r, const Config *cfg_in, int resume, Err *err) {
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
    if (ranks_agree(backend_open(&bo, &be, line, sizeof line, err), "start-up (the backend)", err))
        return STATUS_ERR; /* before any data work */
    if (nccl && ranks_agree(dist_nccl_init(err), "start-up (NCCL)", err)) return STATUS_ERR;
    print_backend(cfg, line);
    if (inject_parse(&r->inject, getenv(INJECT_ENV), err)) return STATUS_ERR;
    if (ranks_agree(open_local(r, resume, be, err), resume ? "start-up (loading the checkpoint)"
                                                         : "start-up (data and SentencePiece)",
                    err))
        return STATUS_ERR;
    if (r->world > 1 && ranks_share_start(cfg, be, &r->spm, &r->st, &r->model, err))
        return STATUS_ERR;

    Status s = STATUS_OK;
    if (prepare_encode(&r->train, r->spm, cfg->cache_dir, cfg->name, "train", &r->tenc, err) ||
        prepare_encode(&r->val, r->spm, cfg->cache_dir, cfg->name, "val", &r->venc, err))
        s = STATUS_ERR;
    if (ranks_agree(s, "start-up (encoding the data)", err)) return STATUS_ERR;
    /* a linformer model reads sources of up to model.linformer_max_len tokens: training pairs
     * are within data.max_len (config_validate), validation ones are refused now rather than at
     * the first validation */
    long nval = cfg->val_max_sentences > 0 && cfg->val_max_sentences < r->venc.n
                    ? cfg->val_max_sentences : r->venc.n;
    for (long i = 0; i < nval && !s; i++)
        if (model_check_source_len(&r->model, (int)(r->venc.src_off[i + 1] - r->venc.src_off[i]),
                                   err))
            s = err_prefix(err, "validation pair %ld of data.val_src = %s", i + 1, cfg->val_src);
    if (ranks_agree(s, "start-up (validation source lengths)", err)) return STATUS_ERR;
    int cap = config_example_len(cfg);
    r->nkeep = batch_filter(&r->tenc, cap, &r->keep);
    printf("train: %ld %s within %d subword tokens a side (%ld longer ones skipped)\n",
           r->nkeep, cfg->concat > 1 ? "examples" : "pairs", cap, r->tenc.n - r->nkeep);
    int bB, bS, bT;
    batch_bounds(cfg->batch_tokens, cap, &bB, &bS, &bT);
    batch_alloc(&r->tb, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    model_reserve(&r->model, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    print_model(r);
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
    return ranks_agree(s, "start-up (opening metrics.jsonl, writing config.ini)", err);
}

void run_close(Run *r) {
    rundir_unlock(r->dir, r->lock_fd); /* releases the folder; train.lock goes with it */
    r->lock_fd = -1;
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
