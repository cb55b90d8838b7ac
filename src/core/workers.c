/* workers.c: a session's worker threads (core.h: og_workers).
 *
 * One job at a time: its chunks are numbered and cut into one contiguous block per
 * participant.  Each participant claims its own block's chunks in order, then what is left
 * of the others' (a late or slow thread's share is taken over chunk by chunk), from
 * counters that also hold the job's number (low 32 bits of its generation), so a worker
 * that woke for an earlier job can never claim a chunk of a later one.  Thread s taking
 * the same share of every layer keeps what it wrote in its own core's cache for the next
 * (MobileNet-v2 8x64x64 and EfficientNet-B0 on two threads: 1 % less time than with one
 * counter for all).  The
 * caller wakes the workers (a broadcast) and starts on the chunks at once; at the end it
 * waits only until every claimed chunk is done, spinning (a chunk in progress belongs to a
 * running thread).  A worker that has not woken by then finds no chunk left and goes back to
 * sleep: the caller never waits for a thread to be scheduled, which with blocking waits
 * costs 13-75 us here, longer than many of a network's layers.
 *
 * Between jobs a worker polls the counter for WORKER_POLL_NS before it blocks on the
 * condition variable, so that the next layer's job finds it awake; with OMP_WAIT_POLICY
 * =passive (waiting threads must not use the CPU) it blocks at once.  The kernels' matrix
 * products run on the workers too (gemm.c), so that BLAS's OpenMP threads, which poll
 * after their own regions, do not share the cores with polling workers. */
#define _POSIX_C_SOURCE 200809L /* strcasecmp */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WORKER_PAUSE() _mm_pause()
#else
#define WORKER_PAUSE() ((void)0)
#endif

#include "core/core.h"

/* How long a worker polls for the next job (unless OMP_WAIT_POLICY=passive): longer than
 * most gaps between a network's parallel layers.  Two-thread inference, polls that ran
 * out per run: EfficientNet-B0 3.1 at 200 us, 0.3 at 500, MobileNet-v2 0.8 and 0.1,
 * ResNet-18 2.7 and 0.2; a worker that blocked wakes 13-75 us after the next job starts. */
#define WORKER_POLL_NS 500000

struct og_workers {
    const og_allocator *alloc;
    int n;           /* worker threads; the caller is participant 0 */
    int64_t poll_ns; /* how long a worker polls for the next job before it blocks */
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
    _Atomic uint64_t next; /* generation << 32: posted last, what polling workers watch */
    _Atomic uint64_t *blk; /* per participant: (generation << 32) | next chunk of its block */
    _Atomic int64_t done;  /* chunks finished */
    atomic_flag busy;      /* a job in flight: a nested run goes serial */
};

typedef struct worker_arg {
    og_workers *w;
    int slot;
} worker_arg;

/* The first chunk of participant b's block of a job of `chunks` chunks and `parts`
 * participants (its end: the next block's first). */
static int64_t block_start(int64_t chunks, int parts, int b) { return chunks * b / parts; }

/* The next chunk of block b of job `gen32` (-1: none left, or another job now). */
static int64_t claim(og_workers *w, int b, uint32_t gen32, int64_t end)
{
    uint64_t v = atomic_load_explicit(&w->blk[b], memory_order_relaxed);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen32 || (int64_t)(v & 0xFFFFFFFFu) >= end) return -1;
        if (atomic_compare_exchange_weak_explicit(&w->blk[b], &v, v + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return (int64_t)(v & 0xFFFFFFFFu);
    }
}

/* Participant `slot` runs the chunks of its own block, then what is left of the others'. */
static void run_chunks(og_workers *w, uint32_t gen32, og_range_fn fn, void *ctx, int64_t items,
                       int64_t grain, int64_t chunks, int parts, int slot)
{
    for (int k = 0; k < parts; k++) {
        const int b = (slot + k) % parts;
        const int64_t end = block_start(chunks, parts, b + 1);
        int64_t c;
        while ((c = claim(w, b, gen32, end)) >= 0) {
            const int64_t i0 = c * grain, i1 = i0 + grain < items ? i0 + grain : items;
            fn(ctx, i0, i1, slot);
            atomic_fetch_add_explicit(&w->done, 1, memory_order_release);
        }
    }
}

/* Polls w->next for up to w->poll_ns until a job after `seen` is posted. */
static void poll_next(og_workers *w, uint64_t seen)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1;; i++) {
        if ((uint32_t)(atomic_load_explicit(&w->next, memory_order_relaxed) >> 32) !=
            (uint32_t)seen)
            return;
        WORKER_PAUSE();
        if (i % 64 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((int64_t)(t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec) >=
                w->poll_ns)
                return;
        }
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
        if (w->poll_ns > 0 && !w->stop && w->gen == seen) {
            pthread_mutex_unlock(&w->m);
            poll_next(w, seen);
            pthread_mutex_lock(&w->m);
        }
        while (!w->stop && w->gen == seen) pthread_cond_wait(&w->cv, &w->m);
        if (w->stop) break;
        seen = w->gen;
        const og_range_fn fn = w->fn;
        void *ctx = w->ctx;
        const int64_t items = w->items, grain = w->grain, chunks = w->chunks;
        const int parts = w->threads;
        pthread_mutex_unlock(&w->m);
        if (slot < parts) run_chunks(w, (uint32_t)seen, fn, ctx, items, grain, chunks, parts, slot);
        pthread_mutex_lock(&w->m);
    }
    pthread_mutex_unlock(&w->m);
    return NULL;
}

og_workers *og_workers_new(const og_allocator *a, int threads)
{
    a = og_alloc_or_default(a);
    if (threads < 2) return NULL;
    og_workers *w = og_calloc(a, 1, sizeof *w);
    if (!w) return NULL;
    w->alloc = a;
    w->n = threads - 1;
    const char *policy = getenv("OMP_WAIT_POLICY");
    w->poll_ns = policy && strcasecmp(policy, "passive") == 0 ? 0 : WORKER_POLL_NS;

    atomic_flag_clear(&w->busy);
    w->th = og_calloc(a, (size_t)w->n, sizeof *w->th);
    worker_arg *args = og_calloc(a, (size_t)w->n, sizeof *args);
    w->blk = og_calloc(a, (size_t)w->n + 1, sizeof *w->blk);
    bool ok = w->th && args && w->blk && pthread_mutex_init(&w->m, NULL) == 0;
    if (ok && pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->m);
        ok = false;
    }
    if (!ok) {
        og_free(a, w->blk);
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
    w->gen++; /* a new generation ends the polls at once */
    atomic_store_explicit(&w->next, (uint64_t)(uint32_t)w->gen << 32, memory_order_release);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->m);
    for (int i = 0; i < w->started; i++) pthread_join(w->th[i], NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->m);
    og_free(w->alloc, w->args);
    og_free(w->alloc, w->blk);
    og_free(w->alloc, w->th);
    og_free(w->alloc, w);
}

bool og_workers_poll(const og_workers *w) { return w && w->poll_ns > 0; }

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
    if (threads > w->n + 1) threads = w->n + 1;
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
    for (int b = 0; b < threads; b++)
        atomic_store_explicit(&w->blk[b],
                              (uint64_t)gen32 << 32 | (uint64_t)block_start(chunks, threads, b),
                              memory_order_relaxed);
    atomic_store_explicit(&w->next, (uint64_t)gen32 << 32, memory_order_release);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->m);
    run_chunks(w, gen32, fn, ctx, items, grain, chunks, threads, 0);
    /* every chunk is claimed; those still running belong to running threads */
    for (int spins = 0; atomic_load_explicit(&w->done, memory_order_acquire) < chunks; spins++)
        if (spins >= 64) sched_yield();
    atomic_flag_clear_explicit(&w->busy, memory_order_release);
}
