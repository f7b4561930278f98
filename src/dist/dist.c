/* dist.c — the world of ranks (dist.h): MPI when built with it (TRAINER_MPI) and started by a
 * launcher, else one rank; the collectives, and the watchdog thread that ends a rank whose peers
 * died or stopped answering. */
#include "dist/dist.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef TRAINER_MPI
#include <mpi.h>
#endif

typedef struct {
    char host[64];
    long pid;
} RankInfo;

static int g_rank = 0, g_size = 1, g_local = 0;
static int g_mpi __attribute__((unused)) = 0; /* 1 once MPI_Init_thread succeeded */
static RankInfo g_self_info, *g_info = NULL; /* [g_size], from dist_init */

/* The watchdog's view of the collective in flight (g_since 0: none). */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static double g_since = 0, g_timeout = 0;
static char g_what[256];
static pthread_t g_thread;
static int g_thread_started = 0, g_thread_stop = 0;

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
int dist_local_rank(void) { return g_local; }
const char *dist_host(int rank) {
    return g_info && rank >= 0 && rank < g_size ? g_info[rank].host : "?";
}
long dist_pid(int rank) { return g_info && rank >= 0 && rank < g_size ? g_info[rank].pid : 0; }

/* The state letter of another rank's process on this host (/proc/PID/stat: R, S, D, T, Z, ...;
 * 'X' when it is gone), or 0 for this rank and ranks on other hosts. */
static char local_peer_state(int r) {
    if (r == g_rank || strcmp(g_info[r].host, g_info[g_rank].host) != 0) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", g_info[r].pid);
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 'X' : 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* 1 when the process of a rank on this host is gone or a zombie. */
static int local_peer_dead(int r) {
    char c = local_peer_state(r);
    return c == 'Z' || c == 'X';
}

/* The dead ranks on this host, as "rank 1 (pid 123 on vm), ..." into buf; returns how many. */
static int dead_peers(char *buf, size_t n) {
    int k = 0;
    buf[0] = 0;
    for (int r = 0; r < g_size; r++) {
        if (!local_peer_dead(r)) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%srank %d (pid %ld on %s)", k ? ", " : "", r, g_info[r].pid,
                 g_info[r].host);
        k++;
    }
    return k;
}

static void (*volatile g_fault_hook)(void) = NULL; /* dist_set_fault_hook */

void dist_set_fault_hook(void (*hook)(void)) { g_fault_hook = hook; }

/* Ends this rank after a fault in a collective: the fault hook, the message, then _exit (no
 * MPI_Finalize). */
static void give_up(const char *what, const char *why) __attribute__((noreturn));
static void give_up(const char *what, const char *why) {
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER; /* one thread reports and exits */
    pthread_mutex_lock(&once);
    void (*hook)(void) = g_fault_hook;
    if (hook) hook();
    char dead[1024];
    int nd = dead_peers(dead, sizeof dead);
    int others = 0;
    for (int r = 0; r < g_size; r++)
        others += strcmp(g_info[r].host, g_info[g_rank].host) != 0;
    char stopped[1024] = "";
    for (int r = 0; r < g_size; r++) { /* a stopped (SIGSTOP, debugger) rank never answers */
        char c = local_peer_state(r);
        size_t len = strlen(stopped);
        if (c == 'T' || c == 't')
            snprintf(stopped + len, sizeof stopped - len, ", rank %d (pid %ld on %s) is stopped",
                     r, g_info[r].pid, g_info[r].host);
    }
    fflush(stdout);
    fprintf(stderr, "rank %d: %s during %s; %s%s%s%s; exiting (the last checkpoint stays loadable: "
            "continue with --resume)\n", g_rank, why, what,
            nd ? dead : "no rank on this host has died",
            nd ? (nd == 1 ? " has died" : " have died") : "", stopped,
            others ? " (ranks on other hosts cannot be checked from here: see mpirun's message)"
                   : "");
    fflush(stderr);
    _exit(DIST_EXIT_PEER);
}

static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&g_mu);
        int stop = g_thread_stop;
        double since = g_since, timeout = g_timeout;
        char what[256];
        snprintf(what, sizeof what, "%s", g_what);
        pthread_mutex_unlock(&g_mu);
        if (stop) return NULL;
        if (since <= 0) continue;
        char dead[1024];
        if (dead_peers(dead, sizeof dead)) give_up(what, "a peer rank died");
        if (timeout > 0 && now_seconds() - since > timeout) {
            char why[128];
            snprintf(why, sizeof why, "no answer from the other ranks within dist.timeout = %g s",
                     timeout);
            give_up(what, why);
        }
    }
}

void dist_set_timeout(double seconds) {
    pthread_mutex_lock(&g_mu);
    g_timeout = seconds;
    pthread_mutex_unlock(&g_mu);
    if (g_size > 1 && !g_thread_started) {
        CHECK(pthread_create(&g_thread, NULL, watchdog, NULL) == 0, "cannot start the watchdog");
        g_thread_started = 1;
    }
}

void dist_fault(const char *what, const char *why) { give_up(what, why); }

static __attribute__((unused)) void enter(const char *what) {
    pthread_mutex_lock(&g_mu);
    snprintf(g_what, sizeof g_what, "%s", what);
    g_since = now_seconds();
    pthread_mutex_unlock(&g_mu);
}

static __attribute__((unused)) void leave(void) {
    pthread_mutex_lock(&g_mu);
    g_since = 0;
    pthread_mutex_unlock(&g_mu);
}

void dist_watch_begin(const char *what) { enter(what); }
void dist_watch_end(void) { leave(); }

#ifdef TRAINER_MPI
static void mpi_ok(int rc, const char *call, const char *what) {
    if (rc == MPI_SUCCESS) return;
    char s[MPI_MAX_ERROR_STRING], why[MPI_MAX_ERROR_STRING + 64];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", rc);
    snprintf(why, sizeof why, "%s failed (%s)", call, s);
    give_up(what, why);
}

/* Started by an MPI launcher: OpenMPI's mpirun, or a PMI/PMIx one (MPICH's hydra, Slurm). */
static int launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}
#endif

Status dist_init(int *argc, char ***argv, Err *err) {
    (void)argc, (void)argv, (void)err;
    if (gethostname(g_self_info.host, sizeof g_self_info.host) != 0)
        snprintf(g_self_info.host, sizeof g_self_info.host, "?");
    g_self_info.host[sizeof g_self_info.host - 1] = 0;
    g_self_info.pid = (long)getpid();
    g_info = xcalloc(1, sizeof(RankInfo));
    g_info[0] = g_self_info;
#ifdef TRAINER_MPI
    if (!launched()) return STATUS_OK;
    int provided = 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, s, &len);
        return err_set(err, "MPI_Init_thread failed: %s", s);
    }
    g_mpi = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    free(g_info);
    g_info = xcalloc((size_t)g_size, sizeof(RankInfo));
    g_info[g_rank] = g_self_info;
    if (g_size > 1) dist_allgather(&g_self_info, g_info, sizeof(RankInfo), "start-up (host names)");
    for (int r = 0; r < g_rank; r++) g_local += strcmp(g_info[r].host, g_self_info.host) == 0;
#endif
    return STATUS_OK;
}

void dist_finalize(void) {
    if (g_thread_started) {
        pthread_mutex_lock(&g_mu);
        g_thread_stop = 1;
        pthread_mutex_unlock(&g_mu);
        pthread_join(g_thread, NULL);
        g_thread_started = 0;
    }
#ifdef TRAINER_MPI
    if (g_mpi) {
        MPI_Finalize();
        g_mpi = 0;
    }
#endif
}

const char *dist_layout(char *buf, size_t n, int pids) {
    buf[0] = 0;
    int hosts = 0;
    size_t len;
    for (int r = 0; r < g_size; r++) {
        int first = 1;
        for (int q = 0; q < r; q++) first &= strcmp(g_info[q].host, g_info[r].host) != 0;
        if (!first) continue;
        hosts++;
        len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s [", hosts > 1 ? ", " : "", g_info[r].host);
        int k = 0;
        for (int q = r; q < g_size; q++) {
            if (strcmp(g_info[q].host, g_info[r].host) != 0) continue;
            len = strlen(buf);
            if (pids) snprintf(buf + len, n - len, "%s%d: pid %ld", k++ ? ", " : "", q, g_info[q].pid);
            else snprintf(buf + len, n - len, "%s%d", k++ ? " " : "", q);
        }
        len = strlen(buf);
        snprintf(buf + len, n - len, "]");
    }
    char head[64];
    snprintf(head, sizeof head, "%d rank%s on %d host%s: ", g_size, g_size == 1 ? "" : "s", hosts,
             hosts == 1 ? "" : "s");
    size_t hl = strlen(head);
    len = strlen(buf);
    if (hl + len + 1 <= n) {
        memmove(buf + hl, buf, len + 1);
        memcpy(buf, head, hl);
    }
    return buf;
}

void dist_sum_float(float *buf, size_t n, const char *what) {
    if (g_size == 1) return;
#ifdef TRAINER_MPI
    enter(what);
    for (size_t off = 0; off < n; off += (size_t)INT_MAX / 2) {
        size_t k = n - off < (size_t)INT_MAX / 2 ? n - off : (size_t)INT_MAX / 2;
        mpi_ok(MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
               "MPI_Allreduce", what);
    }
    leave();
#else
    (void)buf, (void)n, (void)what;
#endif
}

void dist_sum_double(double *buf, size_t n, const char *what) {
    if (g_size == 1) return;
#ifdef TRAINER_MPI
    enter(what);
    CHECK(n <= (size_t)INT_MAX, "dist_sum_double: too many values for one call");
    mpi_ok(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           "MPI_Allreduce", what);
    leave();
#else
    (void)buf, (void)n, (void)what;
#endif
}

void dist_bcast(void *buf, size_t bytes, int root, const char *what) {
    if (g_size == 1) return;
#ifdef TRAINER_MPI
    enter(what);
    for (size_t off = 0; off < bytes; off += (size_t)1 << 30) {
        size_t k = bytes - off < ((size_t)1 << 30) ? bytes - off : (size_t)1 << 30;
        mpi_ok(MPI_Bcast((char *)buf + off, (int)k, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast",
               what);
    }
    leave();
#else
    (void)buf, (void)bytes, (void)root, (void)what;
#endif
}

void dist_allgather(const void *mine, void *all, size_t bytes, const char *what) {
    if (g_size == 1) {
        memmove(all, mine, bytes);
        return;
    }
#ifdef TRAINER_MPI
    enter(what);
    CHECK(bytes <= (size_t)INT_MAX, "dist_allgather: record too large");
    mpi_ok(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD),
           "MPI_Allgather", what);
    leave();
#else
    (void)what;
#endif
}

void dist_barrier(const char *what) {
    if (g_size == 1) return;
#ifdef TRAINER_MPI
    enter(what);
    mpi_ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", what);
    leave();
#else
    (void)what;
#endif
}

int dist_first_failed(int ok, const char *what) {
    if (g_size == 1) return ok ? -1 : 0;
    int v = ok ? g_size : g_rank;
#ifdef TRAINER_MPI
    enter(what);
    mpi_ok(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce",
           what);
    leave();
#else
    (void)what;
#endif
    return v == g_size ? -1 : v;
}

struct DistBuckets {
    float *buf;
    size_t n, bucket;
    int nb, started; /* buckets; how many are started this step (bucket k: from the end) */
    char what[160];
#ifdef TRAINER_MPI
    MPI_Request *req; /* [nb] */
#endif
};

DistBuckets *dist_buckets_new(float *buf, size_t n, size_t bucket) {
    CHECK(bucket >= 1, "dist_buckets_new: a bucket holds at least one float");
    if (bucket > (size_t)INT_MAX / 2) bucket = (size_t)INT_MAX / 2; /* one MPI count */
    DistBuckets *b = xcalloc(1, sizeof *b);
    b->buf = buf, b->n = n, b->bucket = bucket;
    b->nb = (int)((n + bucket - 1) / bucket);
#ifdef TRAINER_MPI
    b->req = xcalloc((size_t)(b->nb ? b->nb : 1), sizeof(MPI_Request));
    for (int k = 0; k < b->nb; k++) b->req[k] = MPI_REQUEST_NULL;
#endif
    return b;
}

int dist_buckets_count(const DistBuckets *b) { return b->nb; }

void dist_buckets_begin(DistBuckets *b, const char *what) {
    b->started = 0;
    snprintf(b->what, sizeof b->what, "%s", what);
}

#ifdef TRAINER_MPI
/* Bucket k covers buf[lo_k .. hi_k), counted from the end: hi_k = n - k·bucket. */
static void bucket_range(const DistBuckets *b, int k, size_t *lo, size_t *hi) {
    *hi = b->n - (size_t)k * b->bucket;
    *lo = *hi > b->bucket ? *hi - b->bucket : 0;
}

static void bucket_start(DistBuckets *b, int k) {
    size_t lo, hi;
    bucket_range(b, k, &lo, &hi);
    mpi_ok(MPI_Iallreduce(MPI_IN_PLACE, b->buf + lo, (int)(hi - lo), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD, &b->req[k]),
           "MPI_Iallreduce", b->what);
}
#endif

void dist_buckets_ready(DistBuckets *b, size_t lo) {
    if (g_size == 1) return;
#ifdef TRAINER_MPI
    int before = b->started;
    while (b->started < b->nb) {
        size_t blo, bhi;
        bucket_range(b, b->started, &blo, &bhi);
        if (blo < lo) break; /* part of it may still change */
        bucket_start(b, b->started++);
    }
    if (b->started > 0 && before == b->started) { /* let MPI move the ones in flight */
        int done = 0;
        mpi_ok(MPI_Testall(b->started, b->req, &done, MPI_STATUSES_IGNORE), "MPI_Testall",
               b->what);
    }
#else
    (void)b, (void)lo;
#endif
}

void dist_buckets_finish(DistBuckets *b) {
    if (g_size == 1) return;
#ifdef TRAINER_MPI
    enter(b->what);
    while (b->started < b->nb) bucket_start(b, b->started++);
    mpi_ok(MPI_Waitall(b->nb, b->req, MPI_STATUSES_IGNORE), "MPI_Waitall", b->what);
    leave();
#else
    (void)b;
#endif
}

void dist_buckets_free(DistBuckets *b) {
    if (!b) return;
#ifdef TRAINER_MPI
    free(b->req);
#endif
    free(b);
}

void dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
#ifdef TRAINER_MPI
    if (g_mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code);
}
