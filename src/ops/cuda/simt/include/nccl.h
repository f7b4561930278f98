/* nccl.h — HOST STAND-IN (emulated build only, -DTRAINER_SIMT=ON with MPI; never on a real
 * build's include path). The few NCCL types and calls that src/dist/dist_nccl.c uses, declared
 * here with NCCL's names and enum values (our own declarations, not NVIDIA's header), and
 * implemented in ../host_nccl.cc on MPI: device memory is host memory in the emulation, so a
 * "GPU" all-reduce is an MPI_Allreduce of that memory. Usable from C and C++.
 * Source: the NCCL documentation (docs.nvidia.com/deeplearning/nccl, "API": types, communicator
 * creation and management, collective communication functions); docs/design.md §11, docs/distributed.md.
 *
 * Semantics kept from NCCL: a communicator of nranks ranks, each with a distinct rank in
 * [0, nranks), made collectively from one ncclUniqueId that one rank made and sent to the others;
 * ncclAllReduce is in place when sendbuff == recvbuff; errors are ncclResult_t codes, with
 * ncclGetErrorString's text. The stand-in's own rules (docs/gpu.md): the process must have
 * initialised MPI, and nranks must be MPI_COMM_WORLD's size (the ranks may be numbered in any
 * order: the communicator is split from MPI_COMM_WORLD by NCCL rank).
 */
#ifndef TRAINER_SIMT_NCCL_H
#define TRAINER_SIMT_NCCL_H

#include <stddef.h>

#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_UNIQUE_ID_BYTES 128

/* NCCL's result codes (values as NCCL's). */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7
} ncclResult_t;

/* Element types (values as NCCL's); the stand-in reduces float, double and int32. */
typedef enum {
    ncclInt32 = 2,
    ncclInt = 2,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8
} ncclDataType_t;

/* Reductions (values as NCCL's). */
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

/* The bytes that name a communicator to be (opaque). */
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef struct ncclComm *ncclComm_t; /* opaque */

/* A new id: NCCL_UNIQUE_ID_BYTES random bytes (/dev/urandom). Errors: ncclInvalidArgument
 * (NULL), ncclSystemError (no random bytes). */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
/* Collective over the nranks processes: every one passes the same id and its own rank. Checked
 * with one MPI_Allgather: the same id everywhere and the ranks a permutation of 0..nranks-1, else
 * ncclInvalidUsage on every rank (and no communicator). Errors: ncclInvalidArgument (NULL, rank
 * outside [0, nranks)), ncclInvalidUsage (MPI not initialised, nranks != the MPI world's size,
 * the check above), ncclSystemError (an MPI call failed). */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
/* recvbuff[0..count) = the sum (op) over the ranks of their sendbuff[0..count) (in place when
 * sendbuff == recvbuff), after the stream's earlier work has completed (it has: the emulation is
 * synchronous); MPI_Allreduce on the communicator. Errors: ncclInvalidArgument (NULL comm or
 * buffers with count > 0, an unsupported type or op, count > INT_MAX), ncclSystemError (MPI
 * failed; also kept as the communicator's asynchronous error). */
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
/* The communicator's asynchronous error (ncclSuccess, or the error of a failed collective).
 * Errors: ncclInvalidArgument (NULL). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
/* Frees the communicator (MPI_Comm_free: call it on every rank). Errors: ncclInvalidArgument. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
/* Frees this rank's handle without any communication (its MPI communicator is left to
 * MPI_Finalize or the process's end). Errors: ncclInvalidArgument (NULL). */
ncclResult_t ncclCommAbort(ncclComm_t comm);
/* A constant English text for the code (never NULL). */
const char *ncclGetErrorString(ncclResult_t result);

#ifdef __cplusplus
}
#endif

#endif
