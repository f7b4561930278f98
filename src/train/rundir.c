/* rundir.c — the run folder: its lock, stale temporary files and epoch checkpoints (rundir.h). */
#include "train/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"

/* Removes the temporary files that a killed atomic write left behind in the run folder
 * (<dir>/<name>.tmp.<pid>, temp_path_for's name: a checkpoint's, config.ini's or
 * metrics.jsonl's); called with the folder locked, and it spares a file whose pid is still alive
 * all the same. */
static void remove_stale_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (!temp_name_stale(ent->d_name, NULL)) continue; /* not ours, or its writer runs */
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) == 0) printf("removed %s, left by an interrupted write\n", path);
    }
    closedir(d);
}

/* The error of a train.lock (path, open as fd, closed here) that flock refused with errno e:
 * another trainer holds it (its pid, read from the file, named), or the lock failed. Returns
 * -1. */
static int lock_refused(int fd, const char *dir, const char *path, int e, Err *err) {
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

int rundir_lock(const char *dir, Err *err) {
    char path[2048];
    snprintf(path, sizeof path, "%s/train.lock", dir);
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            err_set(err, "cannot open %s: %s", path, strerror(errno));
            return -1;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) return lock_refused(fd, dir, path, errno, err);
        /* the lock counts only while its file is still the folder's train.lock: a run that
         * ends deletes the file (rundir_unlock), maybe after this one opened it */
        struct stat held, now;
        if (fstat(fd, &held) != 0 || stat(path, &now) != 0 || held.st_dev != now.st_dev ||
            held.st_ino != now.st_ino) {
            close(fd); /* deleted meanwhile: lock the new one */
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
            pid[0] = 0; /* the pid is only for the message above: no error */
        remove_stale_temps(dir);
        return fd;
    }
    err_set(err, "cannot lock %s: it was deleted and created again 100 times in a row; are "
            "other trainers starting and stopping in %s?", path, dir);
    return -1;
}

void rundir_unlock(const char *dir, int fd) {
    if (fd < 0) return;
    char path[2048];
    snprintf(path, sizeof path, "%s/train.lock", dir);
    if (unlink(path) != 0 && errno != ENOENT) /* the lock still ends with the descriptor */
        fprintf(stderr, "cannot delete %s: %s\n", path, strerror(errno));
    close(fd);
}

int rundir_busy(const char *dir) {
    char path[2048];
    snprintf(path, sizeof path, "%s/train.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* releases the lock if this took it */
    return busy;
}

void rundir_epoch_ckpt(char *buf, size_t n, const char *dir, int epoch) {
    snprintf(buf, n, "%s/epoch%d.ckpt", dir, epoch);
}

/* The epochs N of the files epoch<N>.ckpt in dir, ascending, into a new array *out (the caller
 * frees it; NULL when none); returns their count (0 when dir cannot be read). Only names of
 * exactly that form count. */
static int list_epochs(const char *dir, int **out) {
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

/* The epoch checkpoints of dir (list_epochs) into *e, and in *upto how many of them are of an
 * epoch up to `epoch` (the first *upto). Returns their count. */
static int epochs_upto(const char *dir, int epoch, int **e, int *upto) {
    int n = list_epochs(dir, e);
    *upto = 0;
    while (*upto < n && (*e)[*upto] <= epoch) ++*upto;
    return n;
}

void rundir_prune_epochs(const char *dir, int epoch, int keep) {
    int *e, upto, n = epochs_upto(dir, epoch, &e, &upto);
    for (int i = 0; i < n; i++) {
        if (i >= upto - keep && i < upto) continue;
        char path[2048];
        rundir_epoch_ckpt(path, sizeof path, dir, e[i]);
        if (unlink(path) != 0)
            fprintf(stderr, "cannot delete %s (train.keep_checkpoints = %d): %s\n", path, keep,
                    strerror(errno));
    }
    free(e);
}

Status rundir_average(const char *dir, int epoch, int k, const char *out, int *averaged,
                      int *last, Err *err) {
    int *e, upto;
    epochs_upto(dir, epoch, &e, &upto);
    *averaged = 0;
    if (upto == 0) {
        printf("train.average_last = %d: no epoch checkpoint was written, so no avg.ckpt\n", k);
        free(e);
        return STATUS_OK;
    }
    int m = upto < k ? upto : k;
    *last = e[upto - 1];
    char **paths = xcalloc((size_t)m, sizeof *paths), list[1024] = "";
    for (int i = 0; i < m; i++) {
        paths[i] = xmalloc(1200);
        rundir_epoch_ckpt(paths[i], 1200, dir, e[upto - m + i]);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? ", " : "",
                 e[upto - m + i]);
    }
    free(e);
    Status rc = checkpoint_average((const char *const *)paths, m, out, err);
    for (int i = 0; i < m; i++) free(paths[i]);
    free(paths);
    if (rc) return STATUS_ERR;
    if (m < k)
        printf("averaged the last %d epoch checkpoints (epochs %s; fewer than train.average_last "
               "= %d: only %d were written) -> %s\n", m, list, k, m, out);
    else
        printf("averaged the last %d epoch checkpoints (epochs %s) -> %s\n", m, list, out);
    *averaged = m;
    return STATUS_OK;
}
