// host_nccl.cc — the host implementation of the NCCL stand-in (include/nccl.h) for the emulated
// build (-DTRAINER_SIMT=ON, with MPI): "device" memory is host memory, so a communicator is an MPI
// communicator split from MPI_COMM_WORLD in NCCL-rank order, and ncclAllReduce is MPI_Allreduce.
// Every call is synchronous on the calling thread (MPI_THREAD_FUNNELED: the thread that
// initialised MPI). Errors follow NCCL: each call returns an ncclResult_t. Sources: the NCCL
// documentation ("API"); the MPI 3.1 standard (MPI_Initialized, MPI_Comm_size, MPI_Allgather
// §5.7, MPI_Comm_split §6.4.2, MPI_Allreduce with MPI_IN_PLACE §5.9.6, MPI_Comm_free §6.4.3,
// MPI_Comm_set_errhandler with MPI_ERRORS_RETURN §8.3); docs/design.md §11, docs/distributed.md.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <nccl.h>

struct ncclComm {
    MPI_Comm mpi;           // MPI_COMM_WORLD split by NCCL rank
    int rank, nranks;
    ncclResult_t async;     // the error of a failed collective (ncclCommGetAsyncError)
};

namespace {

// The rank's view at ncclCommInitRank, gathered from every rank for the check.
struct InitRecord {
    ncclUniqueId id;
    int rank, nranks;
};

bool mpi_ready() {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
    if (!uniqueId) return ncclInvalidArgument;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f) return ncclSystemError;
    size_t got = fread(uniqueId->internal, 1, sizeof uniqueId->internal, f);
    fclose(f);
    return got == sizeof uniqueId->internal ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
    *comm = NULL;
    if (!mpi_ready()) return ncclInvalidUsage;
    int size = 0;
    if (MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS) return ncclSystemError;
    if (size != nranks) return ncclInvalidUsage;
    InitRecord mine, *all = static_cast<InitRecord *>(calloc((size_t)size, sizeof(InitRecord)));
    if (!all) return ncclSystemError;
    memset(&mine, 0, sizeof mine);
    mine.id = commId, mine.rank = rank, mine.nranks = nranks;
    if (MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                      MPI_COMM_WORLD) != MPI_SUCCESS) {
        free(all);
        return ncclSystemError;
    }
    // every rank sees the same records, so every rank reaches the same verdict
    bool ok = true;
    unsigned char *seen = static_cast<unsigned char *>(calloc((size_t)size, 1));
    for (int q = 0; q < size && ok; q++) {
        ok = memcmp(&all[q].id, &all[0].id, sizeof(ncclUniqueId)) == 0 &&
             all[q].nranks == nranks && all[q].rank >= 0 && all[q].rank < nranks &&
             !seen[all[q].rank];
        if (ok) seen[all[q].rank] = 1;
    }
    free(seen);
    free(all);
    if (!ok) return ncclInvalidUsage;
    ncclComm *c = static_cast<ncclComm *>(calloc(1, sizeof(ncclComm)));
    if (!c) return ncclSystemError;
    if (MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c->mpi) != MPI_SUCCESS) {
        free(c);
        return ncclSystemError;
    }
    MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
    c->rank = rank, c->nranks = nranks, c->async = ncclSuccess;
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
    if (!comm || (count > 0 && (!sendbuff || !recvbuff)) || count > (size_t)INT_MAX)
        return ncclInvalidArgument;
    MPI_Datatype t;
    switch (datatype) {
    case ncclFloat32: t = MPI_FLOAT; break;
    case ncclFloat64: t = MPI_DOUBLE; break;
    case ncclInt32: t = MPI_INT; break;
    default: return ncclInvalidArgument;
    }
    MPI_Op o;
    switch (op) {
    case ncclSum: o = MPI_SUM; break;
    case ncclProd: o = MPI_PROD; break;
    case ncclMax: o = MPI_MAX; break;
    case ncclMin: o = MPI_MIN; break;
    default: return ncclInvalidArgument;
    }
    // the stream's earlier work: done already (the emulation is synchronous); kept for the form
    if (cudaStreamSynchronize(stream) != cudaSuccess) return ncclUnhandledCudaError;
    if (count == 0) return ncclSuccess;
    int rc = MPI_Allreduce(sendbuff == recvbuff ? MPI_IN_PLACE : sendbuff, recvbuff, (int)count,
                           t, o, comm->mpi);
    if (rc != MPI_SUCCESS) {
        comm->async = ncclSystemError;
        return ncclSystemError;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
    if (!comm || !asyncError) return ncclInvalidArgument;
    *asyncError = comm->async;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclInvalidArgument;
    ncclResult_t r = ncclSuccess;
    if (mpi_ready() && MPI_Comm_free(&comm->mpi) != MPI_SUCCESS) r = ncclSystemError;
    free(comm);
    return r;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclInvalidArgument;
    free(comm); // no communication: the MPI communicator is left to MPI_Finalize / the exit
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error (the MPI call under the stand-in failed)";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage (the ranks passed different ids, rank sets or "
                                  "sizes, or MPI is not running)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    }
    return "unknown result code";
}

}  // extern "C"
