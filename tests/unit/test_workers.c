/* A session's worker threads (core.h: og_workers): every item of every job is computed once,
 * by a participant whose slot is below the job's thread count, and the job's results are
 * all there when og_workers_run returns; jobs follow each other with no gap (a worker that
 * woke for one job must not take a chunk of the next), a run from inside a job runs alone;
 * all of it with workers that poll between jobs (OMP_WAIT_POLICY unset or active) and with
 * workers that block at once (passive).  Also built into `make tsan`.  The kernels' use of
 * them (og_par_range) is checked by test_conv and test_fuse, run a second time with
 * OMP_WAIT_POLICY=passive (tests/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/core.h"
#include "test.h"

typedef struct job {
    _Atomic int *hits; /* per item */
    int64_t items;
    int threads;
    _Atomic int bad_slot, bad_range, calls, by_workers;
    og_workers *w; /* for the nested run */
    int64_t *out;  /* item i writes i * 3 + 1 (plain stores: the return must publish them) */
} job;

static void item_fn(void *ctx, int64_t i0, int64_t i1, int slot)
{
    job *j = ctx;
    atomic_fetch_add(&j->calls, 1);
    if (slot < 0 || slot >= j->threads) atomic_fetch_add(&j->bad_slot, 1);
    if (slot > 0) atomic_fetch_add(&j->by_workers, 1);
    if (i0 < 0 || i1 > j->items || i0 >= i1) atomic_fetch_add(&j->bad_range, 1);
    for (int64_t i = i0; i < i1 && i >= 0 && i < j->items; i++) {
        atomic_fetch_add(&j->hits[i], 1);
        j->out[i] = i * 3 + 1;
    }
}

/* A job whose items each run a whole job of their own on the same workers: the inner runs
 * go serial (the pool is busy), and still compute every inner item once. */
static void nested_fn(void *ctx, int64_t i0, int64_t i1, int slot)
{
    job *outer = ctx;
    (void)slot;
    for (int64_t i = i0; i < i1; i++) {
        _Atomic int hits[7] = {0};
        int64_t out[7] = {0};
        job in = {.hits = hits, .items = 7, .threads = 1, .out = out};
        og_workers_run(outer->w, 2, 7, 1, item_fn, &in);
        bool once = atomic_load(&in.calls) == 1 && atomic_load(&in.bad_slot) == 0;
        for (int q = 0; q < 7; q++)
            once = once && atomic_load(&hits[q]) == 1 && out[q] == 3 * q + 1;
        if (once) atomic_fetch_add(&outer->hits[i], 1);
    }
}

static void check_job(og_workers *w, int threads, int64_t items, int64_t grain, int *worker_calls)
{
    _Atomic int *hits = calloc((size_t)items, sizeof *hits);
    int64_t *out = calloc((size_t)items, sizeof *out);
    CHECK(hits && out);
    if (!hits || !out) {
        free(hits);
        free(out);
        return;
    }
    job j = {.hits = hits, .items = items, .threads = threads, .out = out};
    og_workers_run(w, threads, items, grain, item_fn, &j);
    int64_t wrong = 0;
    for (int64_t i = 0; i < items; i++) wrong += atomic_load(&hits[i]) != 1 || out[i] != i * 3 + 1;
    CHECKF(wrong == 0, "threads %d, %lld items, grain %lld: %lld items not computed once", threads,
           (long long)items, (long long)grain, (long long)wrong);
    CHECK(atomic_load(&j.bad_slot) == 0);
    CHECK(atomic_load(&j.bad_range) == 0);
    const int64_t g = grain < 1 ? 1 : grain, chunks = (items + g - 1) / g;
    if (threads < 2 || !w || chunks < 2)
        CHECKF(atomic_load(&j.calls) == 1, "one participant: one call, got %d",
               atomic_load(&j.calls));
    else
        CHECKF(atomic_load(&j.calls) == chunks, "%lld chunks, %d calls", (long long)chunks,
               atomic_load(&j.calls));
    *worker_calls += atomic_load(&j.by_workers);
    free(hits);
    free(out);
}

/* Every job shape on w, jobs back to back, and a run from inside a job. */
static void exercise(og_workers *w, int *worker_calls)
{
    CHECK(og_workers_count(w) == 3);
    /* shapes: one item, fewer items than threads, grains that do not divide, grain 0, one
     * chunk, many chunks; 1, 2 and 3 participants */
    const int64_t items[] = {1, 2, 3, 17, 64, 1000, 4099};
    const int64_t grains[] = {0, 1, 3, 16, 5000};
    for (int t = 1; t <= 3; t++)
        for (size_t a = 0; a < sizeof items / sizeof *items; a++)
            for (size_t b = 0; b < sizeof grains / sizeof *grains; b++)
                check_job(w, t, items[a], grains[b], worker_calls);
    check_job(NULL, 3, 100, 1, worker_calls); /* no workers: the caller alone */

    /* jobs back to back, no gap: a late worker must not take a later job's chunks; jobs of
     * long items give the workers time to wake and take part */
    for (int r = 0; r < 2000; r++) check_job(w, 1 + r % 3, 1 + r % 97, 1 + r % 5, worker_calls);

    /* a run from inside a job runs alone */
    _Atomic int hits[40] = {0};
    int64_t out[40] = {0};
    job j = {.hits = hits, .items = 40, .threads = 3, .w = w, .out = out};
    og_workers_run(w, 3, 40, 2, nested_fn, &j);
    int ok = 0;
    for (int i = 0; i < 40; i++) ok += atomic_load(&hits[i]) == 1;
    CHECKF(ok == 40, "nested runs: %d of 40 items complete", ok);
}

int main(void)
{
    /* workers for every wait policy: polling between jobs unless it is passive */
    CHECK(og_workers_new(NULL, 1) == NULL);
    CHECK(og_workers_count(NULL) == 1);
    CHECK(!og_workers_poll(NULL));
    unsetenv("OMP_WAIT_POLICY");
    og_workers *polling = og_workers_new(NULL, 3);
    CHECK(polling != NULL);
    CHECK(og_workers_poll(polling));
    setenv("OMP_WAIT_POLICY", "active", 1);
    og_workers *active = og_workers_new(NULL, 2);
    CHECK(active != NULL && og_workers_poll(active));
    og_workers_free(active);
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);

    /* every allocation failing in turn: NULL, nothing leaked */
    for (long fail = 0; fail < 8; fail++) {
        og_test_counting cnt = {0, fail, 0};
        og_allocator a = {og_test_malloc, og_test_free, &cnt};
        og_workers *f = og_workers_new(&a, 3);
        if (f) {
            CHECK(og_workers_count(f) == 3);
            og_workers_free(f);
        }
        CHECK(cnt.live == 0);
        if (!f) CHECK(cnt.calls > fail); /* it failed because the allocation did */
    }

    og_workers *w = og_workers_new(NULL, 3);
    CHECK(w != NULL);
    if (!w || !polling) TEST_DONE();
    CHECK(!og_workers_poll(w));
    int blocking_calls = 0, polling_calls = 0;
    exercise(w, &blocking_calls);
    exercise(polling, &polling_calls);
    printf("chunks the workers took: %d blocking, %d polling\n", blocking_calls, polling_calls);
    og_workers_free(polling);
    og_workers_free(w);
    og_workers_free(NULL);
    TEST_DONE();
}
