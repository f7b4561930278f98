/* dist_nccl.c — the NCCL communicator and gradient sum of dist_nccl.h. Compiled in every build;
 * the NCCL code only with TRAINER_NCCL (set on this file alone by CMakeLists.txt when NCCL, or
 * the emulated build's stand-in, is there). */
#include "dist/dist_nccl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dist/dist.h"

#ifdef TRAINER_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

static ncclComm_t g_comm = NULL;
static volatile int g_aborted = 0;

int dist_nccl_available(void) { return 1; }
int dist_nccl_ready(void) { return g_comm != NULL; }

/* The fault hook (dist_set_fault_hook): abort the communicator once, from whichever thread found
 * the fault, so that no NCCL kernel keeps spinning on a dead peer. */
static void abort_comm(void) {
    if (g_comm && !g_aborted) {
        g_aborted = 1;
        ncclCommAbort(g_comm);
    }
}

/* Ends the rank after a failed NCCL call (ncclCommAbort first, through the hook). */
static void nccl_fault(ncclResult_t r, const char *call, const char *what) {
    char why[256];
    snprintf(why, sizeof why, "%s failed (%s)", call, ncclGetErrorString(r));
    dist_fault(what, why);
}

Status dist_nccl_init(Err *err) {
    if (g_comm || dist_size() == 1) return STATUS_OK;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int ok = 1;
    ncclResult_t r = ncclSuccess;
    if (dist_rank() == 0) {
        r = ncclGetUniqueId(&id);
        ok = r == ncclSuccess;
    }
    int bad = dist_first_failed(ok, "start-up (the NCCL unique id)");
    if (bad >= 0)
        return err_set(err, "rank %d: ncclGetUniqueId failed: %s", bad,
                       bad == dist_rank() ? ncclGetErrorString(r) : "(see rank 0's message)");
    dist_bcast(&id, sizeof id, 0, "start-up (the NCCL unique id)");
    dist_watch_begin("start-up (ncclCommInitRank)");
    r = ncclCommInitRank(&g_comm, dist_size(), id, dist_rank());
    dist_watch_end();
    if (r != ncclSuccess) {
        g_comm = NULL;
        return err_set(err, "rank %d: ncclCommInitRank over %d ranks failed: %s", dist_rank(),
                       dist_size(), ncclGetErrorString(r));
    }
    dist_set_fault_hook(abort_comm);
    return STATUS_OK;
}

void dist_nccl_sum_float(float *dev, size_t n, const char *what) {
    CHECK(g_comm, "dist_nccl_sum_float before dist_nccl_init");
    dist_watch_begin(what);
    ncclResult_t r = ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, g_comm, (cudaStream_t)0);
    if (r != ncclSuccess && r != ncclInProgress) nccl_fault(r, "ncclAllReduce", what);
    /* wait: the stream's query, and NCCL's own view of the communicator (a peer that failed
     * shows here as ncclRemoteError / ncclSystemError); the watchdog ends a wait past
     * dist.timeout or on a dead peer on this host */
    for (long spins = 0;; spins++) {
        cudaError_t q = cudaStreamQuery((cudaStream_t)0);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) {
            char why[256];
            snprintf(why, sizeof why, "the CUDA stream failed after ncclAllReduce (%s)",
                     cudaGetErrorString(q));
            dist_fault(what, why);
        }
        ncclResult_t a = ncclSuccess;
        ncclResult_t g = ncclCommGetAsyncError(g_comm, &a);
        if (g != ncclSuccess) nccl_fault(g, "ncclCommGetAsyncError", what);
        if (a != ncclSuccess && a != ncclInProgress) nccl_fault(a, "ncclAllReduce", what);
        if (spins > 1000) { /* past the first ~ms: poll every 50 us */
            struct timespec ts = {0, 50 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    dist_watch_end();
}

void dist_nccl_finalize(int ok) {
    if (!g_comm) return;
    dist_set_fault_hook(NULL);
    ncclResult_t r = ok ? ncclCommDestroy(g_comm) : ncclCommAbort(g_comm);
    if (r != ncclSuccess)
        fprintf(stderr, "rank %d: %s failed: %s\n", dist_rank(),
                ok ? "ncclCommDestroy" : "ncclCommAbort", ncclGetErrorString(r));
    g_comm = NULL;
}

#else /* no NCCL in this build */

int dist_nccl_available(void) { return 0; }
int dist_nccl_ready(void) { return 0; }

Status dist_nccl_init(Err *err) {
    if (dist_size() == 1) return STATUS_OK;
    return err_set(err, "train.device = cuda with %d ranks needs NCCL, and NCCL was not found when "
                   "this trainer was built (CMake looks for nccl.h and libnccl next to the CUDA "
                   "toolkit, with MPI); install NCCL and rebuild, or use train.device = cpu or "
                   "one rank", dist_size());
}

void dist_nccl_sum_float(float *dev, size_t n, const char *what) {
    (void)dev, (void)n, (void)what;
    CHECK(0, "dist_nccl_sum_float in a build without NCCL");
}

void dist_nccl_finalize(int ok) { (void)ok; }

#endif
