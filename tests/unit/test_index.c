/* test_index.c: Gather, GatherElements, GatherND, OneHot, ScatterElements, ScatterND on
 * hand-built nodes: results, and OG_ERR_RUNTIME (never a bad read) for indices out of
 * range. */
#include "unit/index_harness.h"

static const int64_t d2x3[] = {2, 3};

static void test_gather(void)
{
    float data[] = {1, 2, 3, 4, 5, 6};
    int32_t idx[] = {2, -3, 1};
    int64_t di[] = {3};
    og_tensor *in[2] = {h_tensor(OG_FLOAT, 2, d2x3, data), h_tensor(OG_INT32, 1, di, idx)};
    h_attr ax = {.name = "axis", .type = 'i', .i = 1};
    og_tensor *y = NULL;
    H_CHECK(h_run("Gather", 13, &ax, 1, in, 2, &y) == OG_OK);
    float expect[] = {3, 1, 2, 6, 4, 5};
    H_CHECK(h_close_f32(y, expect, 6));
    H_CHECK(y && y->rank == 2 && y->dims[1] == 3);
    og_tensor_free(y);

    idx[1] = 3; /* out of range for dim 3 */
    og_tensor_free(in[1]);
    in[1] = h_tensor(OG_INT32, 1, di, idx);
    H_CHECK(h_run("Gather", 13, &ax, 1, in, 2, &y) == OG_ERR_RUNTIME);
    H_CHECK(strstr(og_last_error(), "indices") && strstr(og_last_error(), "value 3"));
    H_CHECK(strstr(og_last_error(), "n0") != NULL);
    h_free_all(in, 2);
}

static void test_gather_elements_and_scatter(void)
{
    float data[] = {1, 2, 3, 4, 5, 6};
    int64_t idx[] = {2, 0, 1, -1};
    int64_t di[] = {2, 2};
    og_tensor *in[3] = {h_tensor(OG_FLOAT, 2, d2x3, data), h_tensor(OG_INT64, 2, di, idx), NULL};
    h_attr ax = {.name = "axis", .type = 'i', .i = 1};
    og_tensor *y = NULL;
    H_CHECK(h_run("GatherElements", 13, &ax, 1, in, 2, &y) == OG_OK);
    float expect[] = {3, 1, 5, 6};
    H_CHECK(h_close_f32(y, expect, 4));
    og_tensor_free(y);

    float upd[] = {10, 20, 30, 40};
    in[2] = h_tensor(OG_FLOAT, 2, di, upd);
    h_attr attrs[2] = {ax, {.name = "reduction", .type = 's', .s = "add"}};
    H_CHECK(h_run("ScatterElements", 18, attrs, 2, in, 3, &y) == OG_OK);
    float expect2[] = {21, 2, 13, 4, 35, 46};
    H_CHECK(h_close_f32(y, expect2, 6));
    og_tensor_free(y);

    /* add is not valid before opset 16 */
    H_CHECK(h_run("ScatterElements", 13, attrs, 2, in, 3, &y) == OG_ERR_MODEL);

    idx[3] = -4;
    og_tensor_free(in[1]);
    in[1] = h_tensor(OG_INT64, 2, di, idx);
    H_CHECK(h_run("ScatterElements", 18, attrs, 2, in, 3, &y) == OG_ERR_RUNTIME);
    H_CHECK(strstr(og_last_error(), "value -4") != NULL);
    H_CHECK(h_run("GatherElements", 13, &ax, 1, in, 2, &y) == OG_ERR_RUNTIME);
    h_free_all(in, 3);
}

static void test_nd(void)
{
    int32_t data[] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t dd[] = {2, 2, 2};
    int64_t idx[] = {1, 0, 0, 1};
    int64_t di[] = {2, 2};
    og_tensor *in[3] = {h_tensor(OG_INT32, 3, dd, data), h_tensor(OG_INT64, 2, di, idx), NULL};
    og_tensor *y = NULL;
    H_CHECK(h_run("GatherND", 13, NULL, 0, in, 2, &y) == OG_OK);
    H_CHECK(y && y->numel == 4 && y->dtype == OG_INT32);
    if (y) {
        const int32_t *v = y->data;
        H_CHECK(v[0] == 4 && v[1] == 5 && v[2] == 2 && v[3] == 3);
    }
    og_tensor_free(y);

    /* batch_dims 1: per batch, index 1-tuples into [2, 2] */
    int64_t idx_b[] = {1, 0};
    int64_t dib[] = {2, 1};
    og_tensor *inb[2] = {in[0], h_tensor(OG_INT64, 2, dib, idx_b)};
    h_attr bd = {.name = "batch_dims", .type = 'i', .i = 1};
    H_CHECK(h_run("GatherND", 13, &bd, 1, inb, 2, &y) == OG_OK);
    if (y) {
        const int32_t *v = y->data;
        H_CHECK(y->numel == 4 && v[0] == 2 && v[1] == 3 && v[2] == 4 && v[3] == 5);
    }
    og_tensor_free(y);
    og_tensor_free(inb[1]);

    int32_t upd[] = {100, 101, 102, 103};
    in[2] = h_tensor(OG_INT32, 2, di, upd);
    h_attr red = {.name = "reduction", .type = 's', .s = "max"};
    H_CHECK(h_run("ScatterND", 18, &red, 1, in, 3, &y) == OG_OK);
    if (y) {
        const int32_t *v = y->data;
        H_CHECK(v[0] == 0 && v[2] == 102 && v[3] == 103 && v[4] == 100 && v[5] == 101);
    }
    og_tensor_free(y);

    idx[2] = 2;
    og_tensor_free(in[1]);
    in[1] = h_tensor(OG_INT64, 2, di, idx);
    H_CHECK(h_run("ScatterND", 18, &red, 1, in, 3, &y) == OG_ERR_RUNTIME);
    H_CHECK(strstr(og_last_error(), "value 2") != NULL);
    H_CHECK(h_run("GatherND", 13, NULL, 0, in, 2, &y) == OG_ERR_RUNTIME);
    h_free_all(in, 3);
}

static void test_onehot(void)
{
    int64_t idx[] = {0, -1, 7, 2};
    int64_t di[] = {4};
    float depth = 3, values[] = {-1, 5};
    int64_t dv[] = {2};
    og_tensor *in[3] = {h_tensor(OG_INT64, 1, di, idx), h_tensor(OG_FLOAT, 0, NULL, &depth),
                        h_tensor(OG_FLOAT, 1, dv, values)};
    h_attr ax = {.name = "axis", .type = 'i'};
    og_tensor *y = NULL;
    H_CHECK(h_run("OneHot", 11, &ax, 1, in, 3, &y) == OG_OK);
    /* [depth 3, 4]; 7 is out of range: an all-off column */
    float expect[] = {5, -1, -1, -1, -1, -1, -1, -1, -1, 5, -1, 5};
    H_CHECK(y && y->dims[0] == 3 && y->dims[1] == 4);
    H_CHECK(h_close_f32(y, expect, 12));
    og_tensor_free(y);
    h_free_all(in, 3);
}

int main(void)
{
    test_gather();
    test_gather_elements_and_scatter();
    test_nd();
    test_onehot();
    if (h_failures) {
        fprintf(stderr, "test_index: %d failures\n", h_failures);
        return 1;
    }
    printf("test_index: ok\n");
    return 0;
}
