/* comm_mpi.c: og_comm over MPI (include/onnxgrad_mpi.h), the whole of libonnxgrad_mpi.
 *
 * It uses only the public headers: the trainer calls it through the og_comm table, and it
 * reports errors with og_set_error.  Every collective is non-blocking underneath and is
 * completed by polling MPI_Testall, so that a wait can give up after the timeout instead of
 * hanging on a rank that will never join. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onnxgrad_mpi.h"

#define DEFAULT_TIMEOUT_S 300.0
/* A wait polls this long, yielding the core between polls (sched_yield returns at once when
 * nothing else is runnable, so an idle core keeps polling; on a busy one the rank it waits
 * for, or another program, runs instead of a spinning rank), then sleeps 20 us between
 * polls: ranks that share cores with each other (or with other programs) leave them to
 * whoever computes. */
#define SPIN_S 0.0002
/* The tag of c_reduce_scatter's messages (c->comm is onnxgrad's own duplicate, where nothing else
 * sends point to point). */
#define REDUCE_SCATTER_TAG 7

/* ---- memory shared by the ranks of one machine -------------------------------------------
 *
 * c_shared_alloc gives every rank a block of an MPI shared-memory window, and each rank the
 * address of every rank's block.  A reduce_scatter or allgather whose data lie in such a
 * block (og_trainer_set_comm keeps its gradient buckets there) is done in place: the sums
 * and copies read the other ranks' blocks directly, with no message, no kernel copy and no
 * MPI progress.  Ranks synchronize through two counters each, in a second window: every
 * shared collective gets the next sequence number s (all ranks call collectives in the same
 * order); a rank publishes `arrive = s` when its data for s are written, does its reads once
 * every rank has arrived at s, then publishes `leave = s`; the collective is complete for a
 * rank when every rank has left s (nobody reads its block for s any more, so it may write
 * there again).  Reads happen in sequence order, so both counters only grow. */
/* The counters are shared between processes: only lock-free atomics work there. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

typedef struct shm_ctl {
    _Atomic uint64_t arrive;
    char pad0[64 - sizeof(uint64_t)];
    _Atomic uint64_t leave;
    char pad1[64 - sizeof(uint64_t)];
} shm_ctl;

typedef struct shm_block {
    MPI_Win win;
    size_t nbytes;
    char **base; /* every rank's block */
    bool in_use;
} shm_block;

struct mpi_req;

typedef struct mpi_comm {
    og_comm table; /* first: og_comm * and mpi_comm * are the same address */
    MPI_Comm comm;
    int rank, size;
    double timeout_s;
    /* shared memory: shm is 0 until the first c_shared_alloc decides it with every rank,
     * then 1 (on) or -1 (the ranks are not all on this machine, or one of them has
     * ONNXGRAD_MPI_SHM=0); shm_env_off: this rank's ONNXGRAD_MPI_SHM=0.  closed: freed by
     * og_mpi_comm_free while a block was still in use: the struct stays until the last
     * c_shared_free (MPI's objects are gone). */
    int shm;
    bool shm_env_off, closed;
    MPI_Comm node;
    MPI_Win ctl_win;
    char **ctl; /* every rank's counters (shm_ctl) */
    shm_block *blocks;
    int n_blocks;
    uint64_t seq;            /* the last shared collective started here */
    struct mpi_req *pending; /* started, not yet read: oldest first */
    struct mpi_req **pending_end;
} mpi_comm;

/* A started collective: one MPI request per chunk of at most INT_MAX elements, and the
 * count and displacement arrays of a v-collective, which must live until it completes. */
typedef struct mpi_req {
    int n;
    const char *what;
    int *ints;
    /* A pairwise reduce-scatter (c_reduce_scatter) sums when its transfers complete:
     * part[0 .. count) = src[0] + src[1] + ... + src[n_src - 1], in rank order. */
    int n_src;
    const void **src;
    void *part, *scratch;
    int64_t count;
    og_dtype dtype;
    /* a shared collective (n == 0): its sequence number, kind, block and offset there; read
     * once this rank has done its reads (then out of the pending list) */
    uint64_t seq;
    int kind; /* SHM_REDUCE_SCATTER, SHM_ALLGATHER */
    const shm_block *block;
    size_t off;
    bool read;
    struct mpi_req *next;
    MPI_Request r[];
} mpi_req;

enum { SHM_REDUCE_SCATTER = 1, SHM_ALLGATHER = 2 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* OG_ERR_RUNTIME with this rank, the call and MPI's text. */
static og_status mpi_fail(const mpi_comm *c, const char *call, int code)
{
    char text[MPI_MAX_ERROR_STRING] = "", msg[1024];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "code %d", code);
    snprintf(msg, sizeof msg, "rank %d: %s failed: %s", c->rank, call, text);
    return og_set_error(OG_ERR_RUNTIME, msg);
}

int og_mpi_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static void free_req(mpi_req *q)
{
    if (!q) return;
    free(q->ints);
    free(q->src);
    free(q->scratch);
    free(q);
}

/* part = src[0] + src[1] + ... in rank order (part may be src[0] or src[1]: both are read
 * before part is written). */
static void sum_parts(mpi_req *q)
{
    int64_t n = q->count;
    if (q->dtype == OG_FLOAT) {
        float *p = q->part;
        const float *a = q->src[0], *b = q->src[1];
        for (int64_t i = 0; i < n; i++) p[i] = a[i] + b[i];
        for (int k = 2; k < q->n_src; k++) {
            const float *c = q->src[k];
            for (int64_t i = 0; i < n; i++) p[i] += c[i];
        }
    } else {
        double *p = q->part;
        const double *a = q->src[0], *b = q->src[1];
        for (int64_t i = 0; i < n; i++) p[i] = a[i] + b[i];
        for (int k = 2; k < q->n_src; k++) {
            const double *c = q->src[k];
            for (int64_t i = 0; i < n; i++) p[i] += c[i];
        }
    }
}

/* A request whose transfers are all complete: its sum if it has one, then freed. */
static void finish_req(mpi_req *q)
{
    if (!q->kind && q->n_src > 1) sum_parts(q);
    free_req(q);
}

/* ---- shared collectives ---- */

static shm_ctl *ctl_of(const mpi_comm *c, int r) { return (shm_ctl *)(void *)c->ctl[r]; }

/* The block holding data[0 .. nbytes) on this rank, and the offset of data there; NULL when
 * data are not in shared memory. */
static const shm_block *shm_find(const mpi_comm *c, const void *data, size_t nbytes, size_t *off)
{
    uintptr_t p = (uintptr_t)data;
    for (int b = 0; b < c->n_blocks; b++) {
        const shm_block *k = &c->blocks[b];
        if (!k->in_use) continue;
        uintptr_t lo = (uintptr_t)k->base[c->rank];
        if (p >= lo && p - lo <= k->nbytes && nbytes <= k->nbytes - (p - lo)) {
            *off = (size_t)(p - lo);
            return k;
        }
    }
    return NULL;
}

/* Queue a started shared collective and tell the other ranks this rank's data are written
 * (the release orders the caller's writes before it). */
static void shm_start(mpi_comm *c, mpi_req *q)
{
    q->seq = ++c->seq;
    *c->pending_end = q;
    c->pending_end = &q->next;
    atomic_store_explicit(&ctl_of(c, c->rank)->arrive, q->seq, memory_order_release);
}

/* This rank's reads of shared collective q: the sum of its part of every rank's block, or
 * the other ranks' parts copied into its own block. */
static void shm_read(const mpi_comm *c, mpi_req *q)
{
    const int *counts = q->ints, *displ = q->ints + c->size;
    size_t es = og_dtype_size(q->dtype);
    char *mine = q->block->base[c->rank] + q->off;
    if (q->kind == SHM_REDUCE_SCATTER) {
        for (int r = 0; r < c->size; r++)
            q->src[r] = q->block->base[r] + q->off + (size_t)displ[c->rank] * es;
        sum_parts(q);
        return;
    }
    for (int r = 0; r < c->size; r++)
        if (r != c->rank && counts[r] > 0)
            memcpy(mine + (size_t)displ[r] * es, q->block->base[r] + q->off + (size_t)displ[r] * es,
                   (size_t)counts[r] * es);
}

/* Do the reads of every queued shared collective whose data every rank has written, in
 * sequence order, each followed by `leave`. */
static void shm_progress(mpi_comm *c)
{
    while (c->pending) {
        mpi_req *q = c->pending;
        for (int r = 0; r < c->size; r++)
            if (atomic_load_explicit(&ctl_of(c, r)->arrive, memory_order_acquire) < q->seq) return;
        shm_read(c, q);
        atomic_store_explicit(&ctl_of(c, c->rank)->leave, q->seq, memory_order_release);
        q->read = true;
        c->pending = q->next;
        if (!c->pending) c->pending_end = &c->pending;
        q->next = NULL;
    }
}

/* Whether request q is complete: its MPI requests, or for a shared collective, every rank
 * done reading it. */
static og_status poll_req(mpi_comm *c, mpi_req *q, int *flag)
{
    *flag = 0;
    if (!q->kind) {
        int rc = MPI_Testall(q->n, q->r, flag, MPI_STATUSES_IGNORE);
        return rc == MPI_SUCCESS ? OG_OK : mpi_fail(c, q->what, rc);
    }
    shm_progress(c);
    if (!q->read) return OG_OK;
    for (int r = 0; r < c->size; r++)
        if (atomic_load_explicit(&ctl_of(c, r)->leave, memory_order_acquire) < q->seq) return OG_OK;
    *flag = 1;
    return OG_OK;
}

static int c_rank(void *user) { return ((mpi_comm *)user)->rank; }
static int c_size(void *user) { return ((mpi_comm *)user)->size; }

static og_status c_test(void *user, void *request, int *done)
{
    mpi_comm *c = user;
    mpi_req *q = request;
    int flag = 0;
    *done = 0;
    og_status st = poll_req(c, q, &flag);
    if (st) return st;
    if (flag) {
        finish_req(q);
        *done = 1;
    }
    return OG_OK;
}

static og_status c_wait(void *user, void *request)
{
    mpi_comm *c = user;
    mpi_req *q = request;
    double start = now_s();
    for (;;) {
        int flag = 0;
        og_status st = poll_req(c, q, &flag);
        if (st) return st;
        if (flag) {
            finish_req(q);
            return OG_OK;
        }
        double waited = now_s() - start;
        if (waited > c->timeout_s) {
            char msg[1024];
            snprintf(msg, sizeof msg,
                     "rank %d: %s did not complete in %.0f s: another rank is dead or stuck "
                     "(the timeout is og_mpi_options.timeout_s, onnxgrad train --comm-timeout)",
                     c->rank, q->what, waited);
            return og_set_error(OG_ERR_RUNTIME, msg); /* the request stays: MPI_Abort follows */
        }
        if (waited > SPIN_S) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
}

static mpi_req *new_req(int64_t count, int64_t chunk, const char *what)
{
    int64_t n = count > 0 ? (count + chunk - 1) / chunk : 1;
    mpi_req *q = malloc(sizeof *q + (size_t)n * sizeof(MPI_Request));
    if (!q) return NULL;
    q->n = (int)n;
    q->what = what;
    q->ints = NULL;
    q->n_src = 0;
    q->src = NULL;
    q->part = q->scratch = NULL;
    q->seq = 0;
    q->kind = 0;
    q->block = NULL;
    q->off = 0;
    q->read = false;
    q->next = NULL;
    for (int i = 0; i < q->n; i++) q->r[i] = MPI_REQUEST_NULL;
    return q;
}

static og_status c_allreduce(void *user, void *data, int64_t count, og_dtype dtype, og_comm_op op,
                             void **request)
{
    mpi_comm *c = user;
    MPI_Datatype t = dtype == OG_FLOAT    ? MPI_FLOAT
                     : dtype == OG_DOUBLE ? MPI_DOUBLE
                     : dtype == OG_INT64  ? MPI_INT64_T
                                          : MPI_DATATYPE_NULL;
    MPI_Op o = op == OG_COMM_SUM ? MPI_SUM : op == OG_COMM_MIN ? MPI_MIN : MPI_MAX;
    *request = NULL;
    if (t == MPI_DATATYPE_NULL || count < 0) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "rank %d: allreduce of %lld %s values: not a float, double or "
                 "int64 array",
                 c->rank, (long long)count, og_dtype_name(dtype));
        return og_set_error(OG_ERR_INVALID_ARG, msg);
    }
    mpi_req *q = new_req(count, INT_MAX, "MPI_Iallreduce");
    if (!q) return og_set_error(OG_ERR_NOMEM, "out of memory for an MPI request");
    size_t es = og_dtype_size(dtype);
    for (int i = 0; i < q->n; i++) {
        int64_t off = (int64_t)i * INT_MAX, m = count - off < INT_MAX ? count - off : INT_MAX;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, (char *)data + (size_t)off * es, (int)m, t, o,
                                c->comm, &q->r[i]);
        if (rc != MPI_SUCCESS) {
            free(q);
            return mpi_fail(c, "MPI_Iallreduce", rc);
        }
    }
    *request = q;
    return OG_OK;
}

/* The MPI type of a float or double part, and a request holding counts[] (and their
 * displacements) as ints; NULL with the error set when a count is out of range. */
static mpi_req *v_req(mpi_comm *c, const int64_t *counts, og_dtype dtype, const char *what,
                      int n_reqs, MPI_Datatype *t, og_status *st)
{
    *t = dtype == OG_FLOAT ? MPI_FLOAT : dtype == OG_DOUBLE ? MPI_DOUBLE : MPI_DATATYPE_NULL;
    int64_t total = 0;
    bool ok = *t != MPI_DATATYPE_NULL && counts;
    for (int r = 0; ok && r < c->size; r++) {
        ok = counts[r] >= 0 && counts[r] <= INT_MAX;
        total += ok ? counts[r] : 0;
    }
    if (!ok || total > INT_MAX) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "rank %d: %s of %s values: not float or double parts of at most INT_MAX "
                 "elements in all",
                 c->rank, what, og_dtype_name(dtype));
        *st = og_set_error(OG_ERR_INVALID_ARG, msg);
        return NULL;
    }
    mpi_req *q = new_req(n_reqs, 1, what);
    if (q) q->ints = malloc(2 * (size_t)c->size * sizeof *q->ints);
    if (!q || !q->ints) {
        free_req(q);
        *st = og_set_error(OG_ERR_NOMEM, "out of memory for an MPI request");
        return NULL;
    }
    int displ = 0;
    for (int r = 0; r < c->size; r++) {
        q->ints[r] = (int)counts[r];
        q->ints[c->size + r] = displ;
        displ += (int)counts[r];
    }
    *st = OG_OK;
    return q;
}

/* Open MPI's libnbc runs MPI_Ireduce_scatter as a binomial reduce of the whole buffer to rank
 * 0 followed by a scatter: with 2 ranks, rank 0 receives and sums every element while rank 1
 * waits, and then sends half back.  This is the pairwise exchange instead: every rank sends
 * each peer that peer's part of its buffer, receives its own part from each peer, and sums
 * the parts in rank order when they have arrived (in the test or wait that completes the
 * request).  Each rank receives and sums (N - 1) / N of a part's worth per peer, in parallel;
 * with its gradients in one bucket, the MLP of bench/bench_mpi.py spent 0.55 ms per 2-rank step
 * in communication instead of 1.20. */
static og_status c_reduce_scatter(void *user, const void *data, void *part, const int64_t *counts,
                                  og_dtype dtype, void **request)
{
    mpi_comm *c = user;
    MPI_Datatype t;
    og_status st;
    *request = NULL;
    int n = c->size, me = c->rank;
    mpi_req *q = v_req(c, counts, dtype, "reduce-scatter (MPI_Isend/MPI_Irecv)",
                       n > 1 ? 2 * (n - 1) : 1, &t, &st);
    if (!q) return st;
    size_t es = og_dtype_size(dtype);
    const int *displ = q->ints + n;
    int64_t mine = counts[me];
    if (n == 1) { /* nothing to exchange: the part is the data */
        memcpy(part, data, (size_t)mine * es);
        *request = q;
        return OG_OK;
    }
    size_t total = (size_t)(displ[n - 1] + counts[n - 1]) * es, off = 0;
    const shm_block *block = shm_find(c, data, total, &off);
    q->src = malloc((size_t)n * sizeof *q->src);
    q->scratch = !block && n > 2 && mine > 0 ? malloc((size_t)(n - 2) * (size_t)mine * es) : NULL;
    if (!q->src || (!block && n > 2 && mine > 0 && !q->scratch)) {
        free_req(q);
        return og_set_error(OG_ERR_NOMEM, "out of memory for a reduce-scatter");
    }
    q->n_src = n;
    q->part = part;
    q->count = mine;
    q->dtype = dtype;
    if (block) { /* in place in shared memory */
        q->n = 0;
        q->what = "reduce-scatter (shared memory)";
        q->kind = SHM_REDUCE_SCATTER;
        q->block = block;
        q->off = off;
        shm_start(c, q);
        *request = q;
        return OG_OK;
    }
    /* the lowest peer (rank 0 or 1) arrives in part, the others in scratch */
    int k = 0, first = me == 0 ? 1 : 0;
    for (int r = 0; r < n; r++) {
        if (r == me) {
            q->src[r] = (const char *)data + (size_t)displ[me] * es;
            continue;
        }
        void *dst = r == first ? part : (char *)q->scratch + (size_t)(k++) * (size_t)mine * es;
        q->src[r] = dst;
        int rc = MPI_Irecv(dst, (int)mine, t, r, REDUCE_SCATTER_TAG, c->comm,
                           &q->r[2 * (r < me ? r : r - 1)]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend((const char *)data + (size_t)displ[r] * es, (int)counts[r], t, r,
                           REDUCE_SCATTER_TAG, c->comm, &q->r[2 * (r < me ? r : r - 1) + 1]);
        if (rc != MPI_SUCCESS) {
            free_req(q); /* MPI_Abort follows the error: the started transfers are not waited */
            return mpi_fail(c, "MPI_Isend/MPI_Irecv of a reduce-scatter", rc);
        }
    }
    *request = q;
    return OG_OK;
}

static og_status c_allgather(void *user, void *data, const int64_t *counts, og_dtype dtype,
                             void **request)
{
    mpi_comm *c = user;
    MPI_Datatype t;
    og_status st;
    *request = NULL;
    mpi_req *q = v_req(c, counts, dtype, "MPI_Iallgatherv", 1, &t, &st);
    if (!q) return st;
    int n = c->size;
    size_t es = og_dtype_size(dtype), off = 0;
    size_t total = (size_t)(q->ints[2 * n - 1] + q->ints[n - 1]) * es;
    const shm_block *block = n > 1 ? shm_find(c, data, total, &off) : NULL;
    if (block) { /* in place in shared memory */
        q->n = 0;
        q->what = "allgather (shared memory)";
        q->kind = SHM_ALLGATHER;
        q->block = block;
        q->off = off;
        q->dtype = dtype;
        shm_start(c, q);
        *request = q;
        return OG_OK;
    }
    int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, q->ints, q->ints + c->size,
                             t, c->comm, &q->r[0]);
    if (rc != MPI_SUCCESS) {
        free_req(q);
        return mpi_fail(c, "MPI_Iallgatherv", rc);
    }
    *request = q;
    return OG_OK;
}

static og_status c_broadcast(void *user, void *data, size_t nbytes, int root)
{
    mpi_comm *c = user;
    mpi_req *q = new_req((int64_t)nbytes, INT_MAX, "MPI_Ibcast");
    if (!q) return og_set_error(OG_ERR_NOMEM, "out of memory for an MPI request");
    for (int i = 0; i < q->n; i++) {
        size_t off = (size_t)i * INT_MAX, m = nbytes - off < INT_MAX ? nbytes - off : INT_MAX;
        int rc = MPI_Ibcast((char *)data + off, (int)m, MPI_BYTE, root, c->comm, &q->r[i]);
        if (rc != MPI_SUCCESS) {
            free(q);
            return mpi_fail(c, "MPI_Ibcast", rc);
        }
    }
    return c_wait(c, q);
}

static void c_abort(void *user, const char *message);

/* Every rank's value v: the smallest and the largest (a blocking MPI_Iallreduce). */
static og_status min_max(mpi_comm *c, int64_t v, int64_t *lo, int64_t *hi)
{
    int64_t x[2] = {v, -v};
    mpi_req *q = new_req(1, 1, "MPI_Iallreduce");
    if (!q) return og_set_error(OG_ERR_NOMEM, "out of memory for an MPI request");
    int rc = MPI_Iallreduce(MPI_IN_PLACE, x, 2, MPI_INT64_T, MPI_MIN, c->comm, &q->r[0]);
    if (rc != MPI_SUCCESS) {
        free_req(q);
        return mpi_fail(c, "MPI_Iallreduce", rc);
    }
    og_status st = c_wait(c, q);
    *lo = x[0];
    *hi = -x[1];
    return st;
}

/* A shared window of `bytes` on this rank and every rank's address of it, aligned up to 64
 * bytes (Open MPI's segments start after a header); false when MPI fails. */
static bool shm_window(mpi_comm *c, size_t bytes, MPI_Win *win, char ***bases)
{
    MPI_Info info = MPI_INFO_NULL;
    char *mine = NULL;
    *bases = NULL;
    *win = MPI_WIN_NULL;
    if (MPI_Info_create(&info) == MPI_SUCCESS) MPI_Info_set(info, "alloc_shared_noncontig", "true");
    int rc = MPI_Win_allocate_shared((MPI_Aint)(bytes + 64), 1, info, c->node, &mine, win);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        *win = MPI_WIN_NULL;
        return false;
    }
    *bases = calloc((size_t)c->size, sizeof **bases);
    bool ok = *bases != NULL;
    for (int r = 0; ok && r < c->size; r++) {
        MPI_Aint size = 0;
        int unit = 0;
        char *p = NULL;
        ok = MPI_Win_shared_query(*win, r, &size, &unit, &p) == MPI_SUCCESS && p &&
             (size_t)size >= bytes + 64;
        if (ok) (*bases)[r] = p + (64 - (uintptr_t)p % 64) % 64;
    }
    return ok;
}

/* og_comm.shared_alloc: a block of a shared window, an unused one of the same size when
 * every rank has it, or NULL on every rank (the ranks are not all on this machine, or one
 * has ONNXGRAD_MPI_SHM=0).  Every rank must return a block or NULL alike, and hold the same
 * windows (og_mpi_comm_free frees them collectively): when MPI or memory fails on some rank,
 * or the ranks cannot agree, the job ends (MPI_Abort). */
static void *c_shared_alloc(void *user, size_t nbytes)
{
    mpi_comm *c = user;
    int64_t lo = 0, hi = 0;
    if (c->size < 2 || c->shm < 0 || c->closed) return NULL;
    size_t bytes = (nbytes + 63) / 64 * 64;
    if (!bytes) bytes = 64;
    if (c->shm == 0) { /* the first: this machine's ranks, and the counters */
        int node_size = 0, node_rank = -1;
        bool ok = MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c->node) ==
                  MPI_SUCCESS;
        if (!ok) c->node = MPI_COMM_NULL;
        ok = ok && MPI_Comm_size(c->node, &node_size) == MPI_SUCCESS &&
             MPI_Comm_rank(c->node, &node_rank) == MPI_SUCCESS;
        /* 0: failed, 1: not wanted or not one machine, 2: go */
        int64_t v = !ok                                                              ? 0
                    : c->shm_env_off || node_size != c->size || node_rank != c->rank ? 1
                                                                                     : 2;
        if (min_max(c, v, &lo, &hi) || lo == 0) c_abort(c, "setting up MPI shared memory failed");
        if (lo == 1) {
            c->shm = -1;
            return NULL;
        }
        ok = shm_window(c, sizeof(shm_ctl), &c->ctl_win, &c->ctl);
        if (ok) {
            atomic_init(&ctl_of(c, c->rank)->arrive, 0);
            atomic_init(&ctl_of(c, c->rank)->leave, 0);
        }
        /* also the barrier after which the counters are read */
        if (min_max(c, ok, &lo, &hi) || lo == 0)
            c_abort(c, "allocating MPI shared memory (the counters) failed");
        c->shm = 1;
    }
    /* an unused block of this size that every rank has, else a new window */
    int64_t reuse = -1;
    for (int b = 0; b < c->n_blocks && reuse < 0; b++)
        if (!c->blocks[b].in_use && c->blocks[b].nbytes == bytes) reuse = b;
    if (min_max(c, reuse, &lo, &hi)) c_abort(c, og_last_error());
    if (lo == hi && lo >= 0) {
        c->blocks[lo].in_use = true;
        return c->blocks[lo].base[c->rank];
    }
    shm_block *grown = realloc(c->blocks, (size_t)(c->n_blocks + 1) * sizeof *grown);
    if (!grown) {
        c_abort(c, "out of memory for an MPI shared-memory window");
        return NULL; /* not reached: MPI_Abort ends the job */
    }
    c->blocks = grown;
    shm_block k = {MPI_WIN_NULL, bytes, NULL, true};
    bool ok = shm_window(c, bytes, &k.win, &k.base);
    if (min_max(c, ok, &lo, &hi) || lo == 0)
        c_abort(c, "allocating an MPI shared-memory window failed");
    c->blocks[c->n_blocks++] = k;
    return k.base[c->rank];
}

/* Free what og_mpi_comm_free left to the last block's release. */
static void free_closed(mpi_comm *c)
{
    for (int b = 0; b < c->n_blocks; b++) free(c->blocks[b].base);
    free(c->blocks);
    free(c->ctl);
    free(c);
}

/* og_comm.shared_free: the block is unused (its window is freed with the communicator; after
 * og_mpi_comm_free, the last release frees what is left of it). */
static void c_shared_free(void *user, void *block)
{
    mpi_comm *c = user;
    bool used = false;
    for (int b = 0; b < c->n_blocks; b++) {
        if (block && c->blocks[b].in_use && c->blocks[b].base[c->rank] == block)
            c->blocks[b].in_use = false;
        used = used || c->blocks[b].in_use;
    }
    if (c->closed && !used) free_closed(c);
}

static void c_abort(void *user, const char *message)
{
    fprintf(stderr, "onnxgrad: %s; aborting every rank\n", message);
    fflush(stderr);
    (void)user;
    MPI_Abort(MPI_COMM_WORLD, 1);
}

og_status og_mpi_comm_create(const og_mpi_options *opts, og_comm **out)
{
    if (!out) return og_set_error(OG_ERR_INVALID_ARG, "og_mpi_comm_create: out is NULL");
    *out = NULL;
    double timeout = opts && opts->timeout_s > 0 ? opts->timeout_s : DEFAULT_TIMEOUT_S;
    if (opts && !(opts->timeout_s >= 0))
        return og_set_error(OG_ERR_INVALID_ARG, "og_mpi_comm_create: the timeout must be >= 0");
    int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;
    MPI_Finalized(&finalized);
    if (finalized)
        return og_set_error(OG_ERR_UNSUPPORTED, "og_mpi_comm_create: MPI is finalized already");
    MPI_Initialized(&inited);
    if (!inited) {
#ifdef OPEN_MPI
        /* Open MPI's libnbc runs an in-place MPI_Iallreduce on fewer than 4 ranks as a
         * binomial tree: rank 0 receives the whole buffer, sums it and sends it back while
         * the other rank waits.  Its algorithm 3 (reduce-scatter then allgather, for counts of
         * at least the ranks' power of two; ring below) has every rank sum and copy its own
         * part: about 30 % less CPU per reduction of the MLP's 2.7 MB of gradients, measured with
         * bench/bench_allreduce.py (README).  Only when the user chose no algorithm; Open MPI
         * reads it at initialization, so it is set just before. */
        setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
#endif
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS)
            return og_set_error(OG_ERR_RUNTIME, "og_mpi_comm_create: MPI_Init_thread failed");
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_FUNNELED)
        return og_set_error(OG_ERR_UNSUPPORTED,
                            "og_mpi_comm_create: MPI was initialized without thread support "
                            "(MPI_THREAD_SINGLE); onnxgrad computes with threads of its own and "
                            "needs MPI_THREAD_FUNNELED at least");
    mpi_comm *c = calloc(1, sizeof *c);
    if (!c) return og_set_error(OG_ERR_NOMEM, "out of memory");
    MPI_Comm base =
        opts && opts->use_fortran_comm ? MPI_Comm_f2c(opts->fortran_comm) : MPI_COMM_WORLD;
    int rc = MPI_Comm_dup(base, &c->comm);
    if (rc != MPI_SUCCESS) {
        free(c);
        return og_set_error(OG_ERR_RUNTIME, "og_mpi_comm_create: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    c->timeout_s = timeout;
    c->table.user = c;
    c->table.rank = c_rank;
    c->table.size = c_size;
    c->table.allreduce = c_allreduce;
    c->table.test = c_test;
    c->table.wait = c_wait;
    c->table.broadcast = c_broadcast;
    c->table.abort = c_abort;
    c->table.reduce_scatter = c_reduce_scatter;
    c->table.allgather = c_allgather;
    c->table.shared_alloc = c_shared_alloc;
    c->table.shared_free = c_shared_free;
    c->node = MPI_COMM_NULL;
    c->ctl_win = MPI_WIN_NULL;
    c->pending_end = &c->pending;
    const char *shm = getenv("ONNXGRAD_MPI_SHM");
    c->shm_env_off = shm && strcmp(shm, "0") == 0;
    *out = &c->table;
    return OG_OK;
}

void og_mpi_comm_free(og_comm *comm)
{
    if (!comm) return;
    mpi_comm *c = comm->user;
    int finalized = 0;
    MPI_Finalized(&finalized);
    bool used = false;
    for (int b = 0; b < c->n_blocks; b++) {
        if (!finalized) MPI_Win_free(&c->blocks[b].win);
        used = used || c->blocks[b].in_use;
    }
    if (!finalized && c->ctl_win != MPI_WIN_NULL) MPI_Win_free(&c->ctl_win);
    if (!finalized && c->node != MPI_COMM_NULL) MPI_Comm_free(&c->node);
    if (!finalized) MPI_Comm_free(&c->comm);
    /* a trainer still holding a block gives it back later (og_trainer_free) */
    c->closed = true;
    if (!used) free_closed(c);
}

og_status og_mpi_finalize(void)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) return OG_OK;
    if (MPI_Finalize() != MPI_SUCCESS) return og_set_error(OG_ERR_RUNTIME, "MPI_Finalize failed");
    return OG_OK;
}
