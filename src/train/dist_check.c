/* dist_check.c — the start-up comparison of the ranks' config, binary and training files
 * (dist_check.h). */
#include "train/dist_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "dist/dist.h"
#include "train/ckptfile.h"

enum { FP_FILES = 3 }; /* the binary, data.train_src, data.train_tgt */

/* One rank's record (fixed size: dist_allgather sends it as bytes). */
typedef struct {
    uint32_t config_crc;
    uint32_t crc[FP_FILES];
    int64_t size[FP_FILES];
    int error[FP_FILES];  /* errno of a file that could not be read, else 0 */
    char diff[1024];      /* config_diff(rank 0's config, this rank's), "" when equal */
} Fingerprint;

Status dist_check_ranks(const Config *cfg, Err *err) {
    int world = dist_size(), rank = dist_rank();
    if (world == 1) return STATUS_OK;
    Fingerprint me;
    memset(&me, 0, sizeof me);
    const char *names[FP_FILES] = {"binary", "data.train_src", "data.train_tgt"};
    const char *paths[FP_FILES] = {"/proc/self/exe", cfg->train_src, cfg->train_tgt};
    for (int i = 0; i < FP_FILES; i++) me.error[i] = file_crc32(paths[i], &me.size[i], &me.crc[i]);

    /* the config: CRC32 of the resolved text, and the keys that differ from rank 0's */
    char *ini = config_to_ini(cfg);
    uint64_t len = strlen(ini);
    me.config_crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)ini, (uInt)len);
    dist_bcast(&len, sizeof len, 0, "the start-up check (config size)");
    char *text = rank == 0 ? ini : xmalloc(len + 1);
    dist_bcast(text, len, 0, "the start-up check (config text)");
    if (rank != 0) {
        text[len] = 0;
        Config c0;
        Err e2;
        if (config_load_string(&c0, text, "rank 0's config", &e2))
            snprintf(me.diff, sizeof me.diff, "rank 0's config text does not load here: %.900s",
                     e2.msg);
        else config_diff(&c0, cfg, me.diff, sizeof me.diff);
        free(text);
    }
    free(ini);

    Fingerprint *all = xmalloc(sizeof(Fingerprint) * (size_t)world);
    dist_allgather(&me, all, sizeof me, "the start-up check");
    char msg[sizeof err->msg];
    msg[0] = 0;
    int bad = 0;
    for (int r = 0; r < world; r++) {
        const Fingerprint *f = &all[r], *z = &all[0];
        char what[1800];
        what[0] = 0;
        for (int i = 0; i < FP_FILES; i++)
            if (f->error[i])
                str_appendf(what, sizeof what, "%s%s %s cannot be read there: %s",
                            what[0] ? "; " : "", names[i], paths[i], strerror(f->error[i]));
        if (r > 0) {
            if (f->config_crc != z->config_crc)
                str_appendf(what, sizeof what, "%sconfig (%s)", what[0] ? "; " : "",
                            f->diff[0] ? f->diff
                                       : "the texts differ in a way config_diff does not see");
            for (int i = 0; i < FP_FILES; i++)
                if (!f->error[i] && !z->error[i] && (f->size[i] != z->size[i] ||
                                                     f->crc[i] != z->crc[i]))
                    str_appendf(what, sizeof what,
                                "%s%s %s (%lld bytes, CRC32 %08x; rank 0: %lld bytes, CRC32 %08x)",
                                what[0] ? "; " : "", names[i], paths[i], (long long)f->size[i],
                                f->crc[i], (long long)z->size[i], z->crc[i]);
        }
        if (!what[0]) continue;
        if (bad++ == 0)
            snprintf(msg, sizeof msg, "rank %d (host %s)%s: %s", r, dist_host(r),
                     r ? " differs from rank 0" : "", what);
    }
    free(all);
    if (!bad) return STATUS_OK;
    return err_set(err, "the ranks do not match (the start-up check): %s%s; start every rank with "
                   "the same binary, config, --set options and data files", msg,
                   bad > 1 ? " (and more ranks differ)" : "");
}
