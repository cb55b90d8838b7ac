/* A session's buffer pool (core.h: og_pool): a request takes the most recently released
 * idle block that fits within twice its size (its memory the likeliest still in cache),
 * never one too small or more than twice too large; a new block otherwise, counted against
 * the budget, which frees idle blocks to make room before it refuses; outputs released
 * after the pool closed are freed, not kept. */
#include "core/core.h"
#include "test.h"

static void test_reuse_order(void)
{
    og_pool *p = og_pool_new(NULL);
    CHECK(p != NULL);
    if (!p) return;
    /* blocks of 1000, 1500, 1200 and 100000 bytes, released in that order */
    const size_t sizes[4] = {1000, 1500, 1200, 100000};
    og_buffer *b[4];
    void *data[4];
    for (int i = 0; i < 4; i++) {
        b[i] = og_pool_get(p, sizes[i]);
        CHECK(b[i] != NULL);
        if (!b[i]) return;
        data[i] = b[i]->data;
    }
    for (int i = 0; i < 4; i++) og_buffer_release(b[i]);
    /* 1000 bytes: 1200 (released third) and 1500 (second) and 1000 (first) fit; 100000 is
     * more than twice too large.  The last released that fits comes first. */
    og_buffer *x = og_pool_get(p, 1000), *y = og_pool_get(p, 1000), *z = og_pool_get(p, 1000);
    CHECKF(x && x->data == data[2], "the most recently released fitting block first");
    CHECKF(y && y->data == data[1], "then the one released before it");
    CHECKF(z && z->data == data[0], "then the first");
    /* nothing fits 1600 bytes (100000 is too large): a new block */
    og_buffer *n = og_pool_get(p, 1600);
    CHECKF(n && n->data != data[3] && n->capacity >= 1600, "a new block for 1600 bytes");
    /* 60000 bytes: the 100000-byte block fits within twice */
    og_buffer *big = og_pool_get(p, 60000);
    CHECKF(big && big->data == data[3], "the large block for 60000 bytes");
    size_t held, budget, refused;
    og_pool_usage(p, &held, &budget, &refused);
    CHECKF(held >= 1000 + 1500 + 1200 + 100000 + 1600, "held %zu", held);
    /* released out of order, then taken again: the order of release counts, not of get */
    og_buffer_release(z);
    og_buffer_release(x);
    og_buffer_release(y);
    og_buffer *again = og_pool_get(p, 900);
    CHECKF(again && again->data == data[1], "the last released (the 1500-byte block) first");
    og_buffer_release(again);
    og_buffer_release(n);
    og_buffer_release(big);
    og_pool_close(p);
}

static void test_budget(void)
{
    og_pool *p = og_pool_new(NULL);
    CHECK(p != NULL);
    if (!p) return;
    og_pool_set_budget(p, 100000);
    og_buffer *a = og_pool_get(p, 60000);
    CHECK(a != NULL);
    og_buffer *b = og_pool_get(p, 60000);
    CHECKF(b == NULL, "a second 60000-byte block passes the budget of 100000");
    size_t held, budget, refused;
    og_pool_usage(p, &held, &budget, &refused);
    CHECKF(held == 60000 && budget == 100000 && refused == 60000, "usage %zu %zu %zu", held, budget,
           refused);
    og_buffer_release(a);
    /* 20000 bytes: the idle 60000-byte block is more than twice too large (the slack is
     * 2x + 4 KB), and a new one fits beside it (80000 <= 100000) */
    og_buffer *c = og_pool_get(p, 20000);
    CHECKF(c && c->capacity < 60000, "a new small block beside the idle large one");
    /* 70000 bytes: the idle block is too small and 60000 + 20000 + 70000 passes the
     * budget: the idle block is freed to make room */
    og_buffer *d = og_pool_get(p, 70000);
    CHECKF(d != NULL, "idle blocks freed to make room");
    og_pool_usage(p, &held, &budget, &refused);
    CHECKF(held == 90000, "held %zu after freeing the idle block", held);
    og_pool_close(p);
    /* released after the close: freed (ASan would report a leak otherwise) */
    og_buffer_release(c);
    og_buffer_release(d);
}

int main(void)
{
    test_reuse_order();
    test_budget();
    TEST_DONE();
}
