/* test_index.c: Gather, GatherElements, GatherND, OneHot, ScatterElements, ScatterND on
 * one-node graphs: results, and OG_ERR_RUNTIME (never a bad read) for indices out of
 * range. */
#include "unit/node_harness.h"

static const int64_t d2x3[] = {2, 3};

/* |y - want| <= 1e-5 + 1e-4 |want| elementwise, y float32 of n elements. */
static bool close_f32(const og_tensor *y, const double *want, int64_t n)
{
    return y && y->dtype == OG_FLOAT && nh_close("values", y, n, want, 1e-5, 1e-4);
}

static void test_gather(void)
{
    int32_t idx[] = {2, -3, 1};
    int64_t di[] = {3};
    og_tensor *in[2] = {nh_tensor(OG_FLOAT, 2, d2x3, (double[]){1, 2, 3, 4, 5, 6}),
                        nh_tensor_raw(OG_INT32, 1, di, idx)};
    nh_node n = {.op = "Gather",
                 .opset = 13,
                 .attrs = {NH_INT("axis", 1)},
                 .in = {in[0], in[1]},
                 .threads = 2};
    nh_result r;
    CHECK(nh_run(&n, &r) == OG_OK);
    CHECK(close_f32(r.out[0], (double[]){3, 1, 2, 6, 4, 5}, 6));
    CHECK(r.out[0] && r.out[0]->rank == 2 && r.out[0]->dims[1] == 3);
    nh_release(&r);

    idx[1] = 3; /* out of range for dim 3 */
    og_tensor_free(in[1]);
    n.in[1] = in[1] = nh_tensor_raw(OG_INT32, 1, di, idx);
    CHECK(nh_run(&n, &r) == OG_ERR_RUNTIME);
    CHECK(strstr(og_last_error(), "indices") && strstr(og_last_error(), "value 3"));
    CHECK(strstr(og_last_error(), "n0") != NULL);
    nh_release(&r);
    nh_free_tensors(in, 2);
}

static void test_gather_elements_and_scatter(void)
{
    int64_t idx[] = {2, 0, 1, -1};
    int64_t di[] = {2, 2};
    og_tensor *in[3] = {nh_tensor(OG_FLOAT, 2, d2x3, (double[]){1, 2, 3, 4, 5, 6}),
                        nh_tensor_raw(OG_INT64, 2, di, idx), NULL};
    nh_node ge = {.op = "GatherElements",
                  .opset = 13,
                  .attrs = {NH_INT("axis", 1)},
                  .in = {in[0], in[1]},
                  .threads = 2};
    nh_result r;
    CHECK(nh_run(&ge, &r) == OG_OK);
    CHECK(close_f32(r.out[0], (double[]){3, 1, 5, 6}, 4));
    nh_release(&r);

    in[2] = nh_tensor(OG_FLOAT, 2, di, (double[]){10, 20, 30, 40});
    nh_node se = {.op = "ScatterElements",
                  .opset = 18,
                  .attrs = {NH_INT("axis", 1), NH_STRING("reduction", "add")},
                  .in = {in[0], in[1], in[2]},
                  .threads = 2};
    CHECK(nh_run(&se, &r) == OG_OK);
    CHECK(close_f32(r.out[0], (double[]){21, 2, 13, 4, 35, 46}, 6));
    nh_release(&r);

    /* add is not valid before opset 16 */
    se.opset = 13;
    CHECK(nh_run(&se, &r) == OG_ERR_MODEL);
    nh_release(&r);
    se.opset = 18;

    idx[3] = -4;
    og_tensor_free(in[1]);
    se.in[1] = ge.in[1] = in[1] = nh_tensor_raw(OG_INT64, 2, di, idx);
    CHECK(nh_run(&se, &r) == OG_ERR_RUNTIME);
    CHECK(strstr(og_last_error(), "value -4") != NULL);
    nh_release(&r);
    CHECK(nh_run(&ge, &r) == OG_ERR_RUNTIME);
    nh_release(&r);
    nh_free_tensors(in, 3);
}

static void test_nd(void)
{
    int32_t data[] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t dd[] = {2, 2, 2};
    int64_t idx[] = {1, 0, 0, 1};
    int64_t di[] = {2, 2};
    og_tensor *in[3] = {nh_tensor_raw(OG_INT32, 3, dd, data), nh_tensor_raw(OG_INT64, 2, di, idx),
                        NULL};
    nh_node gnd = {.op = "GatherND", .opset = 13, .in = {in[0], in[1]}, .threads = 2};
    nh_result r;
    CHECK(nh_run(&gnd, &r) == OG_OK);
    og_tensor *y = r.out[0];
    CHECK(y && y->numel == 4 && y->dtype == OG_INT32);
    if (y) {
        const int32_t *v = y->data;
        CHECK(v[0] == 4 && v[1] == 5 && v[2] == 2 && v[3] == 3);
    }
    nh_release(&r);

    /* batch_dims 1: per batch, index 1-tuples into [2, 2] */
    int64_t idx_b[] = {1, 0};
    int64_t dib[] = {2, 1};
    og_tensor *ib = nh_tensor_raw(OG_INT64, 2, dib, idx_b);
    nh_node gb = {.op = "GatherND",
                  .opset = 13,
                  .attrs = {NH_INT("batch_dims", 1)},
                  .in = {in[0], ib},
                  .threads = 2};
    CHECK(nh_run(&gb, &r) == OG_OK);
    y = r.out[0];
    if (y) {
        const int32_t *v = y->data;
        CHECK(y->numel == 4 && v[0] == 2 && v[1] == 3 && v[2] == 4 && v[3] == 5);
    }
    nh_release(&r);
    og_tensor_free(ib);

    int32_t upd[] = {100, 101, 102, 103};
    in[2] = nh_tensor_raw(OG_INT32, 2, di, upd);
    nh_node snd = {.op = "ScatterND",
                   .opset = 18,
                   .attrs = {NH_STRING("reduction", "max")},
                   .in = {in[0], in[1], in[2]},
                   .threads = 2};
    CHECK(nh_run(&snd, &r) == OG_OK);
    y = r.out[0];
    if (y) {
        const int32_t *v = y->data;
        CHECK(v[0] == 0 && v[2] == 102 && v[3] == 103 && v[4] == 100 && v[5] == 101);
    }
    nh_release(&r);

    idx[2] = 2;
    og_tensor_free(in[1]);
    snd.in[1] = gnd.in[1] = in[1] = nh_tensor_raw(OG_INT64, 2, di, idx);
    CHECK(nh_run(&snd, &r) == OG_ERR_RUNTIME);
    CHECK(strstr(og_last_error(), "value 2") != NULL);
    nh_release(&r);
    CHECK(nh_run(&gnd, &r) == OG_ERR_RUNTIME);
    nh_release(&r);
    nh_free_tensors(in, 3);
}

static void test_onehot(void)
{
    int64_t idx[] = {0, -1, 7, 2};
    int64_t di[] = {4}, dv[] = {2};
    og_tensor *in[3] = {nh_tensor_raw(OG_INT64, 1, di, idx), nh_scalar(OG_FLOAT, 3),
                        nh_tensor(OG_FLOAT, 1, dv, (double[]){-1, 5})};
    nh_node n = {.op = "OneHot",
                 .opset = 11,
                 .attrs = {NH_INT("axis", 0)},
                 .in = {in[0], in[1], in[2]},
                 .threads = 2};
    nh_result r;
    CHECK(nh_run(&n, &r) == OG_OK);
    /* [depth 3, 4]; 7 is out of range: an all-off column */
    og_tensor *y = r.out[0];
    CHECK(y && y->dims[0] == 3 && y->dims[1] == 4);
    CHECK(close_f32(y, (double[]){5, -1, -1, -1, -1, -1, -1, -1, -1, 5, -1, 5}, 12));
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* ---- Compress, ReverseSequence (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void i12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_compress(void)
{
    double v[6] = {1, 2, 3, 4, 5, 6};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 2}, v),
                       nh_tensor(OG_BOOL, 1, (int64_t[]){3}, (double[]){0, 1, 1})};
    nh_node n = {.op = "Compress", .opset = 11, .attrs = {NH_INT("axis", 0)}, .in = {in[0], in[1]}};
    i12_case(&n, "compress axis 0", 4, (double[]){3, 4, 5, 6}, 0, in, 2);
    og_tensor *f[] = {nh_tensor(OG_INT64, 2, (int64_t[]){3, 2}, v),
                      nh_tensor(OG_BOOL, 1, (int64_t[]){4}, (double[]){1, 0, 0, 1})};
    nh_node flat = {.op = "Compress", .opset = 9, .in = {f[0], f[1]}};
    i12_case(&flat, "compress flattened", 2, (double[]){1, 4}, 0, f, 2);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 2}, v),
                      nh_tensor(OG_BOOL, 1, (int64_t[]){4}, NULL)};
    nh_node bad = {.op = "Compress", .opset = 11, .attrs = {NH_INT("axis", 0)}, .in = {b[0], b[1]}};
    nh_expect_fail(&bad, 0, OG_ERR_SHAPE, "more than");
    nh_free_tensors(b, 2);
}

static void test_reverse_sequence(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, 6}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){2}, (double[]){3, 1})};
    nh_node n = {.op = "ReverseSequence", .opset = 10, .in = {in[0], in[1]}};
    i12_case(&n, "reversesequence", 6, (double[]){5, 2, 3, 4, 1, 6}, 0, in, 2);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 2}, NULL),
                      nh_tensor(OG_INT64, 1, (int64_t[]){2}, (double[]){4, 1})};
    nh_node bad = {.op = "ReverseSequence", .opset = 10, .in = {b[0], b[1]}};
    nh_expect_fail(&bad, NH_RUN, OG_ERR_RUNTIME, "outside [0, 3]");
    nh_node axes = {.op = "ReverseSequence",
                    .opset = 10,
                    .attrs = {NH_INT("batch_axis", 1), NH_INT("time_axis", 1)},
                    .in = {b[0], b[1]}};
    nh_expect_fail(&axes, NH_LOAD, OG_ERR_MODEL, "batch_axis");
    nh_free_tensors(b, 2);
}

int main(void)
{
    test_gather();
    test_gather_elements_and_scatter();
    test_nd();
    test_onehot();
    test_compress();
    test_reverse_sequence();
    NH_DONE();
}
