/* dist/dist_nccl.h — the gradient sum between GPUs (docs/distributed.md): one NCCL
 * communicator over the ranks of dist.h, each rank on its own GPU (the CUDA backend's device,
 * chosen by local rank: BackendOptions.ordinal, ops/ops.h), and an in-place sum of a float
 * buffer in device memory.
 *
 * Built with NCCL (TRAINER_NCCL: CMake found nccl.h and libnccl next to the CUDA toolkit and
 * MPI; or the emulated build, -DTRAINER_SIMT=ON with MPI, where the SIMT emulation's
 * host_nccl.cc, in the CUDA backend's simt/ folder, stands in for NCCL on MPI) the functions below do what they say; otherwise
 * dist_nccl_available() is 0, dist_nccl_init refuses with a message saying that NCCL was not
 * found at build time, and the others are never reached (they abort: programmer error).
 *
 * Streams: every call runs on the legacy default stream (stream 0), the one the CUDA backend
 * launches every op on (the CUDA backend's cuda_internal.h), so the allreduce starts after the backward
 * pass's kernels and the next op starts after it.
 * Faults (as dist.h's collectives): an NCCL call that fails, an asynchronous NCCL error, a dead
 * peer on this host, or no completion within dist.timeout (dist_set_timeout) ends this rank with
 * "rank R: <NCCL call> failed (<ncclGetErrorString>) during <what>" (what names the step) and
 * exit status DIST_EXIT_PEER, after ncclCommAbort (dist_set_fault_hook).
 * Sources: the NCCL documentation (docs.nvidia.com/deeplearning/nccl, "API": ncclGetUniqueId,
 * ncclCommInitRank, ncclAllReduce, ncclCommGetAsyncError, ncclCommAbort, ncclCommDestroy,
 * ncclGetErrorString; "Error handling and communicator abort" for the polling of
 * ncclCommGetAsyncError while waiting) and the CUDA Runtime API (cudaStreamQuery).
 */
#ifndef TRAINER_DIST_NCCL_H
#define TRAINER_DIST_NCCL_H

#include <stddef.h>

#include "core/common.h"

/* 1 when this build has NCCL (or its emulated stand-in), else 0. No errors. */
int dist_nccl_available(void);

/* The communicator of the world (collective: every rank calls it, after dist_init and after the
 * CUDA backend started on this rank's device). Rank 0 makes the ncclUniqueId (ncclGetUniqueId)
 * and broadcasts it over MPI (dist_bcast); every rank then calls ncclCommInitRank(dist_size(),
 * id, dist_rank()) under the watchdog (no time limit unless dist_set_timeout set one). A world of
 * one rank needs none: it returns STATUS_OK at once. Errors: built without NCCL ("NCCL was not
 * found when this trainer was built ..."); "rank R: ncclGetUniqueId / ncclCommInitRank failed:
 * <ncclGetErrorString>". A second call does nothing. */
Status dist_nccl_init(Err *err);

/* 1 once dist_nccl_init made a communicator (world size > 1), else 0. No errors. */
int dist_nccl_ready(void);

/* In-place sum over all ranks of dev[0..n) (device memory, n floats): one ncclAllReduce
 * (ncclFloat, ncclSum, sendbuff = recvbuff) on stream 0, then a wait for it — cudaStreamQuery
 * polled with ncclCommGetAsyncError under the watchdog — so that on return the sums are in dev
 * on every rank and the stream is idle. The order of the float additions is NCCL's (ring or tree:
 * the result equals one process's sum up to rounding). what names the call in fault messages
 * ("the gradient sum of step 12"). Faults: see the top (the rank exits). Requires
 * dist_nccl_ready(). */
void dist_nccl_sum_float(float *dev, size_t n, const char *what);

/* Frees the communicator: ncclCommDestroy when ok (every rank gets here after a run that ended
 * well), else ncclCommAbort (this rank alone stops; no peer is waited for). Nothing without a
 * communicator. No errors (a failure is printed). */
void dist_nccl_finalize(int ok);

#endif
