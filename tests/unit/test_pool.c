/* test_pool.c: AveragePool, MaxPool, GlobalAveragePool, GlobalMaxPool on small hand-checked
 * inputs, and the errors of bad attributes and shapes. */
#include "unit/nn_harness.h"

static void test_maxpool_indices(int storage_order)
{
    og_graph *g;
    h_node(&g, "MaxPool", 12, 1, 2);
    int64_t k[] = {2, 2};
    h_attr_ints(g, "kernel_shape", 2, k);
    h_attr_ints(g, "strides", 2, k);
    h_attr_int(g, "storage_order", storage_order);
    int64_t dims[] = {1, 1, 4, 4};
    double x[16];
    for (int i = 0; i < 16; i++) x[i] = i;
    og_tensor *in[] = {h_tensor(OG_FLOAT, 4, dims, x)}, *out[2];
    bool want[] = {true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {5, 7, 13, 15}, row[] = {5, 7, 13, 15}, col[] = {5, 13, 7, 15};
    h_expect("maxpool y", out[0], 4, y, 0);
    h_expect("maxpool indices", out[1], 4, storage_order ? col : row, 0);
    H_CHECK(out[1] && out[1]->dtype == OG_INT64 && out[1]->rank == 4);
    h_free(g, in, 1);
    h_free(NULL, out, 2);
}

static void test_avgpool_pads(int include_pad)
{
    og_graph *g;
    h_node(&g, "AveragePool", 19, 1, 1);
    int64_t k[] = {3, 3}, pads[] = {1, 1, 1, 1};
    h_attr_ints(g, "kernel_shape", 2, k);
    h_attr_ints(g, "pads", 4, pads);
    h_attr_int(g, "count_include_pad", include_pad);
    int64_t dims[] = {1, 1, 3, 3};
    double ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 4, dims, ones)}, *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double inc[] = {4 / 9., 6 / 9., 4 / 9., 6 / 9., 1, 6 / 9., 4 / 9., 6 / 9., 4 / 9.};
    h_expect("avgpool", out[0], 9, include_pad ? inc : ones, 1e-12);
    h_free(g, in, 1);
    h_free(NULL, out, 1);
}

/* 1-D, dilation 2, ceil_mode: input 0..6, kernel 2, stride 2: windows {0,2} {2,4} {4,6} */
static void test_maxpool_dilated_ceil(void)
{
    og_graph *g;
    h_node(&g, "MaxPool", 12, 1, 1);
    int64_t k[] = {2}, s[] = {2}, d[] = {2};
    h_attr_ints(g, "kernel_shape", 1, k);
    h_attr_ints(g, "strides", 1, s);
    h_attr_ints(g, "dilations", 1, d);
    h_attr_int(g, "ceil_mode", 1);
    int64_t dims[] = {1, 1, 7};
    double x[] = {0, 6, 2, 5, 4, 3, 1};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 3, dims, x)}, *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {2, 4, 4};
    h_expect("maxpool dilated ceil", out[0], 3, y, 0);
    h_free(g, in, 1);
    h_free(NULL, out, 1);
}

static void test_global(const char *op, double want0, double want1)
{
    og_graph *g;
    h_node(&g, op, 13, 1, 1);
    int64_t dims[] = {1, 2, 2, 2};
    double x[] = {1, 2, 3, 4, -1, -2, -3, -4};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 4, dims, x)}, *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {want0, want1};
    h_expect(op, out[0], 2, y, 1e-12);
    H_CHECK(out[0] && out[0]->rank == 4 && out[0]->dims[2] == 1 && out[0]->dims[3] == 1);
    h_free(g, in, 1);
    h_free(NULL, out, 1);
}

static void test_errors(void)
{
    og_graph *g;
    int64_t dims[] = {1, 1, 4, 4}, k3[] = {2, 2, 2}, k9[] = {9, 9};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 4, dims, NULL)}, *out[1];
    bool want[] = {true};
    /* no kernel_shape */
    h_node(&g, "AveragePool", 11, 1, 1);
    H_CHECK(h_run(g, in, want, out) == OG_ERR_MODEL);
    h_free(g, out, 0);
    /* kernel rank does not match the input */
    h_node(&g, "MaxPool", 12, 1, 1);
    h_attr_ints(g, "kernel_shape", 3, k3);
    H_CHECK(h_run(g, in, want, out) == OG_ERR_SHAPE);
    h_free(g, out, 0);
    /* window larger than the input */
    h_node(&g, "MaxPool", 12, 1, 1);
    h_attr_ints(g, "kernel_shape", 2, k9);
    H_CHECK(h_run(g, in, want, out) == OG_ERR_SHAPE);
    h_free(g, out, 0);
    /* bad auto_pad */
    h_node(&g, "MaxPool", 12, 1, 1);
    h_attr_ints(g, "kernel_shape", 2, k3);
    h_attr_string(g, "auto_pad", "SAME");
    H_CHECK(h_run(g, in, want, out) == OG_ERR_MODEL);
    h_free(g, in, 1);
}

int main(void)
{
    test_maxpool_indices(0);
    test_maxpool_indices(1);
    test_avgpool_pads(0);
    test_avgpool_pads(1);
    test_maxpool_dilated_ceil();
    test_global("GlobalAveragePool", 2.5, -2.5);
    test_global("GlobalMaxPool", 4, -1);
    test_errors();
    if (h_failures) fprintf(stderr, "test_pool: %d failures\n", h_failures);
    return h_failures != 0;
}
