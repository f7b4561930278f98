/* dist/dist.h — the ranks of a data-parallel run (docs/distributed.md) on MPI: start-up and shutdown,
 * rank / world size / local rank / host names, and the few collectives the trainer uses (a sum
 * of floats or doubles in place, a broadcast, an all-gather, a barrier), with a watchdog that
 * ends a rank whose peers stopped answering.
 *
 * One world per process, held here (the functions take no handle). Built with MPI (TRAINER_MPI,
 * CMake found MPI) the world is MPI_COMM_WORLD when the process was started by an MPI launcher
 * (mpirun / mpiexec / srun set OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK); otherwise — a plain
 * `trainer train`, or a build without MPI — it is a world of one rank: dist_init calls no MPI
 * function, every collective returns at once and leaves its buffer as it is, so a single
 * process trains bit for bit as it did before this module existed.
 *
 * Errors: dist_init returns a Status (MPI_Init_thread failed). A collective that fails (an MPI
 * error code: the errors handler is MPI_ERRORS_RETURN) or that does not complete within the
 * timeout of dist_set_timeout is a fault of the job, not an input error: the rank prints
 * "rank R: ..." on stderr — the collective, what it was for, and the peer ranks found dead —
 * and exits with status DIST_EXIT_PEER (no MPI_Finalize; mpirun then ends the job).
 * Peer deaths: a watchdog thread (no MPI calls of its own) polls, while a collective is in
 * flight, the processes of the ranks on this host (/proc/PID/stat: gone or a zombie = dead) and
 * the timeout; ranks on other hosts are only covered by the timeout (and by mpirun, which by
 * default ends the whole job when one rank dies). Units: sizes in elements or bytes as named,
 * times in seconds. Sources: the MPI 3.1 standard (MPI_Init_thread, MPI_Comm_rank,
 * MPI_Comm_size, MPI_Comm_set_errhandler with
 * MPI_ERRORS_RETURN, MPI_Allreduce with MPI_IN_PLACE and MPI_SUM, MPI_Bcast, MPI_Allgather,
 * MPI_Barrier, MPI_Abort, MPI_Finalize, MPI_Error_string).
 */
#ifndef TRAINER_DIST_H
#define TRAINER_DIST_H

#include <stddef.h>

#include "core/common.h"

#define DIST_EXIT_PEER 3 /* the exit status of a rank that gave up on its peers */

/* Starts the world: MPI_Init_thread (MPI_THREAD_FUNNELED: only the main thread calls MPI) when
 * built with MPI and started by a launcher, else a world of one rank (no MPI call). Then every
 * rank learns every rank's host name and pid (an all-gather), and its local rank (its index among
 * the ranks whose host name, gethostname, is its own). Call once, before any other function here.
 * Errors: "MPI_Init_thread failed: <MPI error string>". */
Status dist_init(int *argc, char ***argv, Err *err);
/* Ends the world: stops the watchdog and calls MPI_Finalize when dist_init initialised MPI (a
 * collective: call it on every rank, or exit without it after an error). No errors. */
void dist_finalize(void);

int dist_rank(void);       /* this rank, 0 .. dist_size() - 1 (0 without MPI) */
int dist_size(void);       /* ranks in the world (1 without MPI or launcher) */
int dist_local_rank(void); /* this rank's index among the ranks on its host (0 without MPI) */
const char *dist_host(int rank); /* the host name of rank (dist_init's gathering); no errors */
long dist_pid(int rank);         /* the process id of rank on its host; no errors */
/* "N ranks on H hosts: host0 [0 1], host1 [2 3]" (pids listed with pids != 0) into buf (n bytes)
 * and returned. No errors. */
const char *dist_layout(char *buf, size_t n, int pids);

/* The most seconds one collective may wait for the others (dist.timeout); <= 0: no limit.
 * Starts the watchdog thread (world size > 1) on its first call. No errors. */
void dist_set_timeout(double seconds);

/* In-place sum over all ranks of buf[0..n) (MPI_Allreduce, MPI_IN_PLACE, MPI_SUM; MPI_FLOAT or
 * MPI_DOUBLE). Every rank gets the same sums; the order of the float additions is MPI's (the
 * result equals one process's sum up to rounding). what names the call in fault messages
 * ("the gradient of step 12"). Faults: see the top (the rank exits). */
void dist_sum_float(float *buf, size_t n, const char *what);
void dist_sum_double(double *buf, size_t n, const char *what);
/* Rank root's bytes buf[0..bytes) into every rank's buf (MPI_Bcast of MPI_BYTE; sizes above
 * INT_MAX bytes are sent in pieces). Faults: see the top. */
void dist_bcast(void *buf, size_t bytes, int root, const char *what);
/* Every rank's mine[0..bytes) into all[rank * bytes ..] on every rank (MPI_Allgather of
 * MPI_BYTE; all holds dist_size() * bytes). Faults: see the top. */
void dist_allgather(const void *mine, void *all, size_t bytes, const char *what);
/* Waits for every rank (MPI_Barrier). Faults: see the top. */
void dist_barrier(const char *what);
/* The lowest rank whose ok is 0, or -1 when every rank passed ok != 0 (MPI_Allreduce, MPI_MIN):
 * how the ranks agree to go on or stop together after a step that may fail on some of them.
 * Faults: see the top. */
int dist_first_failed(int ok, const char *what);
/* The gradient sum by buckets, overlapped with the backward pass (dist.overlap; PyTorch DDP's
 * buckets, Li et al. 2020 §3.2.3): buf[0..n) (host memory) is cut into contiguous buckets of
 * about bucket floats each, from the end of the buffer (whose gradients backward finishes
 * first) towards its start; dist_buckets_ready(b, lo) starts an MPI_Iallreduce (in place,
 * MPI_FLOAT, MPI_SUM; MPI 3.1 §5.12.8) of every bucket that lies within buf[lo..n) and was not
 * started yet, and lets MPI progress the ones in flight (MPI_Testall); dist_buckets_finish
 * starts the rest and waits for all (MPI_Waitall, under the watchdog: faults as at the top).
 * Every rank must cut the same buffer the same way (the same n and bucket) and call finish once
 * per step; the ready calls may differ between ranks (an empty shard makes none). The sums
 * equal dist_sum_float's up to the order of float additions (each element is summed by one
 * collective either way). While a bucket is in flight its floats must not be written.
 * dist_buckets_new: bucket >= 1 floats (CHECK); with one rank, or built without MPI, ready and
 * finish do nothing. Errors: none (faults end the rank, as at the top). */
typedef struct DistBuckets DistBuckets;
DistBuckets *dist_buckets_new(float *buf, size_t n, size_t bucket);
/* A new step on the same buffer: no bucket started. what names the step in fault messages. */
void dist_buckets_begin(DistBuckets *b, const char *what);
void dist_buckets_ready(DistBuckets *b, size_t lo);
void dist_buckets_finish(DistBuckets *b);
int dist_buckets_count(const DistBuckets *b); /* how many buckets buf was cut into */
void dist_buckets_free(DistBuckets *b);       /* NULL: nothing; none may be in flight */

/* The watchdog over a blocking call of another library (NCCL's ncclCommInitRank, the wait for
 * an ncclAllReduce, an MPI_Iallreduce's MPI_Wait): between dist_watch_begin(what) and
 * dist_watch_end() the watchdog treats the call as a collective in flight — a dead peer on this
 * host, or no end within dist_set_timeout's seconds, ends this rank as at the top (the message
 * names what). No MPI call of its own; nesting is not supported. No errors. */
void dist_watch_begin(const char *what);
void dist_watch_end(void);
/* Ends this rank after a fault in a collective (as at the top: "rank R: <why> during <what>; ..."
 * on stderr, the dead peers on this host, exit status DIST_EXIT_PEER without MPI_Finalize).
 * Callable from any thread. No return. */
void dist_fault(const char *what, const char *why) __attribute__((noreturn));
/* A function the fault exit calls first (from whichever thread detected the fault: the watchdog
 * or the caller of dist_fault), e.g. ncclCommAbort so that no NCCL kernel is left spinning; NULL
 * removes it. It must not block and must not call MPI. No errors. */
void dist_set_fault_hook(void (*hook)(void));

/* Ends every rank of the job now (MPI_Abort with code; exit(code) without MPI). No return. */
void dist_abort(int code) __attribute__((noreturn));

#endif
