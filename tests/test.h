/* test.h: the few macros the unit tests share.  A failed CHECK prints file, line and the
 * library's last message, and the test exits non-zero at the end. */
#ifndef OG_TEST_H
#define OG_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "onnxgrad.h"

static int og_test_failures;
static int og_test_checks;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        og_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            og_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__,      \
                    #cond, og_last_error());                                                       \
        }                                                                                          \
    } while (0)

/* CHECK with a printf-style message instead of the expression. */
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        og_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            og_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: ", __FILE__, __LINE__);                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", og_last_error());                               \
        }                                                                                          \
    } while (0)

/* The path of a file a test writes: in the build folder ($OG_TEST_OUT, which CTest sets),
 * else under build/ (a test run by hand from the source folder). */
static inline const char *og_test_out(char *buf, size_t n, const char *name)
{
    const char *dir = getenv("OG_TEST_OUT");
    snprintf(buf, n, "%s/%s", dir && dir[0] ? dir : "build", name);
    return buf;
}

/* An allocator that fails its fail_at-th request (counting from 0) and counts the blocks
 * still live, for failing allocations on purpose: og_allocator a = {og_test_malloc,
 * og_test_free, &counting}. */
typedef struct og_test_counting {
    long calls, fail_at, live;
} og_test_counting;

static inline void *og_test_malloc(void *user, size_t size)
{
    og_test_counting *c = user;
    if (c->calls++ == c->fail_at) return NULL;
    void *p = malloc(size);
    if (p) c->live++;
    return p;
}

static inline void og_test_free(void *user, void *p)
{
    og_test_counting *c = user;
    if (p) c->live--;
    free(p);
}

#define CHECK_OK(expr) CHECK((expr) == OG_OK)

#define TEST_DONE()                                                                                \
    do {                                                                                           \
        printf("%d checks, %d failed\n", og_test_checks, og_test_failures);                        \
        return og_test_failures ? 1 : 0;                                                           \
    } while (0)

#endif
