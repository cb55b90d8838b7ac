/*
 * onnxgrad_mpi.h: a communicator (og_comm, include/onnxgrad.h) over MPI, for data-parallel
 * training across processes and machines.
 *
 * It lives in its own library, libonnxgrad_mpi, built when CMake finds MPI (Open MPI from
 * Debian's packages: libopenmpi-dev); libonnxgrad itself never depends on MPI.  Link both:
 *   cc app.c -lonnxgrad_mpi -lonnxgrad $(mpicc --showme:link)
 * and start the program with mpirun (see README, "Data-parallel training").
 *
 * What the communicator does: allreduce is MPI_Iallreduce in place on a duplicate of the
 * world (or the given) communicator, test is MPI_Testall, broadcast is MPI_Ibcast, all in
 * chunks of at most INT_MAX elements; reduce_scatter is a pairwise exchange (each rank sends
 * every peer that peer's part with MPI_Isend and sums the parts it receives, in rank order)
 * and allgather MPI_Iallgatherv in place (at most INT_MAX elements in all), so that
 * og_trainer_fit shards the optimizer's update across ranks.  When every rank runs on this
 * machine, shared_alloc gives blocks of an MPI shared-memory window (MPI_Win_allocate_shared
 * on MPI_COMM_TYPE_SHARED), where og_trainer_set_comm keeps its gradient buckets; a
 * reduce_scatter or allgather of data in such a block is done in place, reading the other
 * ranks' blocks, synchronized by two counters per rank in shared memory (the same sums in
 * the same order: the same bits as with messages).  The environment variable
 * ONNXGRAD_MPI_SHM=0, read by og_mpi_comm_create, turns shared memory off (shared_alloc
 * returns NULL).  Windows are freed by og_mpi_comm_free, which is collective.  Waits poll (yielding
 * the core between polls for the first 0.2 ms, then sleeping 20 us between polls), so that a
 * collective that does not complete within the timeout fails instead of hanging (a rank that died
 * or hangs, when the MPI runtime itself has not stopped the job); abort prints its message on
 * stderr and calls MPI_Abort, which ends every rank.  MPI errors are returned, not fatal
 * (MPI_ERRORS_RETURN on the duplicate), with MPI's text and this rank's number in the message.
 *
 * Threads: MPI is initialized with MPI_THREAD_SERIALIZED when this library initializes it;
 * the communicator's functions must be called by one thread at a time (a trainer does).
 *
 * With Open MPI, when this library initializes MPI and the environment does not set
 * OMPI_MCA_coll_libnbc_iallreduce_algorithm, it sets it to 3 (reduce-scatter + allgather)
 * first: Open MPI's own choice for in-place reductions on fewer than 4 ranks is a binomial
 * tree, where rank 0 sums everything (README, "Data-parallel training", for the figures).
 */
#ifndef ONNXGRAD_MPI_H
#define ONNXGRAD_MPI_H

#include "onnxgrad.h"

#if defined(OG_STATIC)
#define OG_MPI_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#define OG_MPI_API __attribute__((visibility("default")))
#else
#define OG_MPI_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct og_mpi_options {
    /* Seconds a collective may wait for the other ranks before this rank gives up with
     * OG_ERR_RUNTIME (and a trainer aborts the job): 0 means 300.  Make it longer than
     * the longest work one rank does while the others wait (rank 0 writing a checkpoint). */
    double timeout_s;
    /* Nonzero: duplicate the communicator whose Fortran handle is fortran_comm (C:
     * MPI_Comm_c2f(comm); mpi4py: comm.py2f()) instead of MPI_COMM_WORLD. */
    int use_fortran_comm;
    int fortran_comm;
} og_mpi_options;

/* Nonzero when the environment says an MPI launcher started this process (mpirun or
 * mpiexec of Open MPI or MPICH, srun with PMI): the variables OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE or PMIX_RANK.  Programs use it to decide whether to train data-parallel without
 * paying for MPI's initialization otherwise.  Thread-safe. */
OG_MPI_API int og_mpi_launched(void);

/* A communicator over MPI; MPI is initialized first when nobody has (MPI_Init_thread,
 * MPI_THREAD_SERIALIZED).  opts may be NULL.  Free it with og_mpi_comm_free, after every
 * trainer using it.  Errors: OG_ERR_INVALID_ARG (NULL out, a negative timeout),
 * OG_ERR_UNSUPPORTED (MPI finalized already, or initialized by someone else without
 * thread support MPI_THREAD_FUNNELED at least), OG_ERR_RUNTIME (an MPI call failed: the
 * message has MPI's text), OG_ERR_NOMEM. */
OG_MPI_API og_status og_mpi_comm_create(const og_mpi_options *opts, og_comm **out);

/* Free the duplicate communicator, its shared-memory windows and the table (collective:
 * every rank calls it).  NULL is a no-op.  MPI stays initialized.  A trainer may still
 * hold a block of shared memory (Python frees communicators at exit before the trainers):
 * og_trainer_free and og_trainer_set_comm(t, NULL, 0) may follow and give it back, which
 * frees the table's last memory; any other use of the trainer's communicator is an error. */
OG_MPI_API void og_mpi_comm_free(og_comm *comm);

/* MPI_Finalize when MPI is initialized and not finalized yet (once per process, after every
 * communicator is freed); nothing otherwise.  Errors: OG_ERR_RUNTIME. */
OG_MPI_API og_status og_mpi_finalize(void);

#ifdef __cplusplus
}
#endif
#endif /* ONNXGRAD_MPI_H */
