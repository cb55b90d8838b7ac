/* test_thread.h: threads for the tests, on pthreads.  glibc's C11 thrd_create and mtx_lock
 * call pthreads' internals directly, around the functions ThreadSanitizer intercepts, so a
 * test built for `make tsan` that used them would crash (an unknown thread) or miss its
 * locks.  Thread functions keep C11's signature, int f(void *). */
#ifndef OG_TEST_THREAD_H
#define OG_TEST_THREAD_H

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

typedef struct test_thread {
    pthread_t t;
} test_thread;

typedef struct test_thread_call {
    int (*fn)(void *);
    void *arg;
} test_thread_call;

static void *test_thread_main(void *p)
{
    test_thread_call c = *(test_thread_call *)p;
    free(p);
    c.fn(c.arg);
    return NULL;
}

/* 0 on success */
static inline int test_thread_start(test_thread *th, int (*fn)(void *), void *arg)
{
    test_thread_call *c = malloc(sizeof *c);
    if (!c) return -1;
    c->fn = fn;
    c->arg = arg;
    if (pthread_create(&th->t, NULL, test_thread_main, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

static inline void test_thread_join(test_thread *th) { pthread_join(th->t, NULL); }
static inline void test_thread_yield(void) { sched_yield(); }

#endif
