/* workers.c: a session's worker threads (core.h: og_workers).
 *
 * One job at a time: its chunks are numbered, and the caller and the workers claim them in
 * order from one counter that also holds the job's number (low 32 bits of its generation),
 * so a worker that woke for an earlier job can never claim a chunk of a later one.  The
 * caller wakes the workers (a broadcast) and starts on the chunks at once; at the end it
 * waits only until every claimed chunk is done, spinning (a chunk in progress belongs to a
 * running thread).  A worker that has not woken by then finds no chunk left and goes back to
 * sleep: the caller never waits for a thread to be scheduled, which with blocking waits
 * (OMP_WAIT_POLICY=passive) costs 35-75 us here, longer than many of a network's layers.
 * Waiting workers block on a condition variable; they never spin.
 *
 * Only where OpenMP's threads block too (OMP_WAIT_POLICY=passive): where they spin (the
 * default, or active), a region of OpenMP costs a few microseconds, and workers beside
 * them, spinning or not, measured slower (ResNet-18 on two threads: 9.7 ms with OpenMP's
 * threads alone, 10.7 with blocking workers, 12.8 with workers polling 200 us after each
 * job: three threads spinning on two cores). */
#define _POSIX_C_SOURCE 200809L /* strcasecmp */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>

#include "core/core.h"

struct og_workers {
    const og_allocator *alloc;
    int n; /* worker threads; the caller is participant 0 */
    pthread_t *th;
    struct worker_arg *args;
    pthread_mutex_t m;
    pthread_cond_t cv;
    /* under m */
    uint64_t gen;
    bool stop;
    og_range_fn fn;
    void *ctx;
    int64_t items, grain, chunks;
    int threads; /* participants of the job */
    int started; /* threads created */
    /* lock-free */
    _Atomic uint64_t next; /* (generation << 32) | next chunk */
    _Atomic int64_t done;  /* chunks finished */
    atomic_flag busy;      /* a job in flight: a nested run goes serial */
};

typedef struct worker_arg {
    og_workers *w;
    int slot;
} worker_arg;

/* The next chunk of job `gen32` (-1: none left, or another job now). */
static int64_t claim(og_workers *w, uint32_t gen32, int64_t chunks)
{
    uint64_t v = atomic_load_explicit(&w->next, memory_order_relaxed);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen32 || (int64_t)(v & 0xFFFFFFFFu) >= chunks) return -1;
        if (atomic_compare_exchange_weak_explicit(&w->next, &v, v + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return (int64_t)(v & 0xFFFFFFFFu);
    }
}

static void run_chunks(og_workers *w, uint32_t gen32, og_range_fn fn, void *ctx, int64_t items,
                       int64_t grain, int64_t chunks, int slot)
{
    int64_t c;
    while ((c = claim(w, gen32, chunks)) >= 0) {
        const int64_t i0 = c * grain, i1 = i0 + grain < items ? i0 + grain : items;
        fn(ctx, i0, i1, slot);
        atomic_fetch_add_explicit(&w->done, 1, memory_order_release);
    }
}

static void *worker_main(void *p)
{
    worker_arg *a = p;
    og_workers *w = a->w;
    const int slot = a->slot;
    uint64_t seen = 0;
    pthread_mutex_lock(&w->m);
    seen = w->gen;
    for (;;) {
        while (!w->stop && w->gen == seen) pthread_cond_wait(&w->cv, &w->m);
        if (w->stop) break;
        seen = w->gen;
        const og_range_fn fn = w->fn;
        void *ctx = w->ctx;
        const int64_t items = w->items, grain = w->grain, chunks = w->chunks;
        const bool mine = slot < w->threads;
        pthread_mutex_unlock(&w->m);
        if (mine) run_chunks(w, (uint32_t)seen, fn, ctx, items, grain, chunks, slot);
        pthread_mutex_lock(&w->m);
    }
    pthread_mutex_unlock(&w->m);
    return NULL;
}

og_workers *og_workers_new(const og_allocator *a, int threads)
{
    a = og_alloc_or_default(a);
    const char *policy = getenv("OMP_WAIT_POLICY");
    if (threads < 2 || !policy || strcasecmp(policy, "passive") != 0) return NULL;
    og_workers *w = og_calloc(a, 1, sizeof *w);
    if (!w) return NULL;
    w->alloc = a;
    w->n = threads - 1;

    atomic_flag_clear(&w->busy);
    w->th = og_calloc(a, (size_t)w->n, sizeof *w->th);
    worker_arg *args = og_calloc(a, (size_t)w->n, sizeof *args);
    bool ok = w->th && args && pthread_mutex_init(&w->m, NULL) == 0;
    if (ok && pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->m);
        ok = false;
    }
    if (!ok) {
        og_free(a, args);
        og_free(a, w->th);
        og_free(a, w);
        return NULL;
    }
    w->args = args;
    for (int i = 0; i < w->n; i++) {
        args[i] = (worker_arg){w, i + 1};
        if (pthread_create(&w->th[i], NULL, worker_main, &args[i]) != 0) break;
        w->started++;
    }
    if (w->started < w->n) { /* fewer threads than asked: a pool of those there are */
        w->n = w->started;
        if (w->n == 0) {
            og_workers_free(w);
            return NULL;
        }
    }
    return w;
}

void og_workers_free(og_workers *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->m);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->m);
    for (int i = 0; i < w->started; i++) pthread_join(w->th[i], NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->m);
    og_free(w->alloc, w->args);
    og_free(w->alloc, w->th);
    og_free(w->alloc, w);
}

int og_workers_count(const og_workers *w) { return w ? w->n + 1 : 1; }

void og_workers_run(og_workers *w, int threads, int64_t items, int64_t grain, og_range_fn fn,
                    void *ctx)
{
    if (items <= 0) return;
    if (grain < 1) grain = 1;
    const int64_t chunks = (items + grain - 1) / grain;
    if (!w || threads < 2 || chunks < 2 || chunks > 0xFFFFFFFF ||
        atomic_flag_test_and_set_explicit(&w->busy, memory_order_acquire)) {
        fn(ctx, 0, items, 0); /* one participant: the whole range */
        return;
    }
    pthread_mutex_lock(&w->m);
    w->gen++;
    const uint32_t gen32 = (uint32_t)w->gen;
    w->fn = fn;
    w->ctx = ctx;
    w->items = items;
    w->grain = grain;
    w->chunks = chunks;
    w->threads = threads;
    atomic_store_explicit(&w->done, 0, memory_order_relaxed);
    atomic_store_explicit(&w->next, (uint64_t)gen32 << 32, memory_order_release);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->m);
    run_chunks(w, gen32, fn, ctx, items, grain, chunks, 0);
    /* every chunk is claimed; those still running belong to running threads */
    for (int spins = 0; atomic_load_explicit(&w->done, memory_order_acquire) < chunks; spins++)
        if (spins >= 64) sched_yield();
    atomic_flag_clear_explicit(&w->busy, memory_order_release);
}
