/* prepare.c — the SentencePiece model of a run and its encoded splits (prepare.h). */
#include "data/prepare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Status prepare_spm_train(const Corpus *train, int vocab_size, const char *dir, Spm **spm,
                         Err *err) {
    return prepare_spm_train_sep(train, vocab_size, 0, dir, spm, err);
}

Status prepare_check_sep(const Spm *spm, int concat, const char *what, Err *err) {
    if (concat <= 1 || spm_piece_id(spm, CORPUS_SEP) >= 0) return STATUS_OK;
    return err_set(err, "data.concat = %d joins sentences with the piece %s, which %s does not "
                   "hold; train the SentencePiece model with the run (leave data.spm_model "
                   "empty) or with %s as a user-defined symbol", concat, CORPUS_SEP, what,
                   CORPUS_SEP);
}

Status prepare_spm_train_sep(const Corpus *train, int vocab_size, int sep, const char *dir,
                             Spm **spm, Err *err) {
    char txt[1100], prefix[1100], model[1200];
    snprintf(txt, sizeof txt, "%s/spm_train.txt", dir);
    snprintf(prefix, sizeof prefix, "%s/spm", dir);
    snprintf(model, sizeof model, "%s.model", prefix);
    FILE *f = fopen(txt, "w");
    if (!f) return err_set(err, "cannot write %s: %s", txt, strerror(errno));
    for (long i = 0; i < train->n; i++) { /* joined examples: one sentence a line again */
        for (int side = 0; side < 2; side++) {
            const char *line = side ? train->tgt[i] : train->src[i];
            if (!sep) {
                fprintf(f, "%s\n", line);
                continue;
            }
            int np;
            char **parts = xmalloc(((strlen(line) + 1) / 2 + 1) * sizeof *parts);
            free(corpus_split_joined(line, &np, parts, (int)((strlen(line) + 1) / 2 + 1)));
            for (int p = 0; p < np; p++) {
                if (parts[p][0]) fprintf(f, "%s\n", parts[p]);
                free(parts[p]);
            }
            free(parts);
        }
    }
    int werr = ferror(f), cerr = fclose(f), e = errno; /* the text goes, whatever happens */
    if (werr || cerr) {
        unlink(txt);
        return err_set(err, "cannot write %s: %s", txt, strerror(werr && !cerr ? EIO : e));
    }
    double t0 = now_seconds();
    const char *files[1] = {txt};
    Status s = spm_train_symbols(files, 1, vocab_size, prefix, 1, sep ? CORPUS_SEP : NULL, err);
    unlink(txt);
    if (s) return err_prefix(err, "SentencePiece training on the training text");
    printf("SentencePiece: trained a joint unigram model of %d pieces%s in %.1f s -> %s\n",
           vocab_size, sep ? " (" CORPUS_SEP " one of them)" : "", now_seconds() - t0, model);
    return spm_load(spm, model, err);
}

Status prepare_spm_load(const char *path, int vocab_size, const char *dir, Spm **spm, Err *err) {
    char copy[1200];
    void *bytes = NULL;
    size_t n = 0;
    if (spm_load(spm, path, err)) return err_prefix(err, "data.spm_model");
    if (spm_vocab_size(*spm) != vocab_size)
        return err_set(err, "data.spm_model = %s has %d pieces, but data.vocab_size = %d; set "
                       "data.vocab_size = %d", path, spm_vocab_size(*spm), vocab_size,
                       spm_vocab_size(*spm));
    snprintf(copy, sizeof copy, "%s/spm.model", dir);
    Status s = spm_serialize(*spm, &bytes, &n, err);
    if (!s) s = write_file_atomic(copy, bytes, n, err);
    free(bytes);
    if (!s)
        printf("SentencePiece: %d pieces from data.spm_model = %s (copied to %s)\n",
               spm_vocab_size(*spm), path, copy);
    return s;
}

Status prepare_encode(const Corpus *c, const Spm *spm, const char *cache_dir, const char *name,
                      const char *what, Encoded *e, Err *err) {
    char cache[1400];
    snprintf(cache, sizeof cache, "%s/%s.%s.enc", cache_dir, name, what);
    if (make_dirs(cache_dir, err)) return err_prefix(err, "data.cache_dir");
    double t0 = now_seconds();
    if (encoded_build(e, (const char *const *)c->src, (const char *const *)c->tgt, c->n, spm,
                      cache, err))
        return err_prefix(err, "encoding %s", what);
    printf("%s: %ld pairs %s in %.2f s (%s)\n", what, e->n,
           encoded_last_was_cache_hit ? "loaded from cache" : "encoded", now_seconds() - t0, cache);
    return STATUS_OK;
}
