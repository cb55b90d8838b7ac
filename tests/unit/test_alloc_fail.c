/* Allocation failures on purpose: for every N, an allocator that fails its N-th request
 * makes load, session creation and run fail cleanly (OG_ERR_NOMEM, nothing leaked), until
 * N is large enough for everything to succeed. */
#include <string.h>

#include "test.h"

/* One attempt; returns the status of the first failing step. */
static og_status attempt(og_test_counting *c, const og_tensor *x)
{
    og_allocator a = {og_test_malloc, og_test_free, c};
    og_load_options lo = {.allocator = &a};
    og_session_options so = {.threads = 1, .allocator = &a};
    og_model *m = NULL;
    og_session *s = NULL;
    og_tensor *y = NULL;
    const char *names[] = {"x"};
    og_status st = og_model_load_file("models/mlp.onnx", &lo, &m);
    if (!st) st = og_session_create(m, &so, &s);
    for (int run = 0; run < 2 && !st; run++) { /* the second run reuses pooled buffers */
        st = og_session_run(s, names, &x, 1, &y);
        og_tensor_free(y);
        y = NULL;
    }
    og_session_free(s);
    og_model_free(m);
    return st;
}

int main(void)
{
    og_tensor *x = NULL;
    CHECK_OK(og_npy_load("models/mlp_x.npy", NULL, &x));
    if (!x) TEST_DONE();
    int failures_seen = 0, other = 0;
    long n;
    for (n = 0; n < 100000; n++) {
        og_test_counting c = {0, n, 0};
        og_status st = attempt(&c, x);
        CHECK(c.live == 0); /* nothing leaked on any path */
        if (c.live != 0) fprintf(stderr, "fail_at=%ld leaked %ld blocks\n", n, c.live);
        if (st == OG_OK) break;
        if (st == OG_ERR_NOMEM)
            failures_seen++;
        else {
            other++;
            fprintf(stderr, "fail_at=%ld: %s: %s\n", n, og_status_name(st), og_last_error());
        }
    }
    printf("succeeded once %ld allocations were allowed; %d clean OG_ERR_NOMEM failures\n", n,
           failures_seen);
    CHECK(n < 100000);
    CHECK(failures_seen > 50);
    CHECK(other == 0);
    og_tensor_free(x);
    TEST_DONE();
}
