/* test_norm.c: BatchNormalization, InstanceNormalization, LayerNormalization and Dropout on
 * small hand-checked inputs, and their run-time errors. */
#include "unit/node_harness.h"

/* Release a case's result and its input tensors. */
static void done(nh_result *r, og_tensor **in, int n_in)
{
    nh_release(r);
    nh_free_tensors(in, n_in);
}

static void test_batchnorm_inference(void)
{
    int64_t xd[] = {1, 2, 1, 2}, cd[] = {2};
    double x[] = {1, 3, 5, 9}, s[] = {1, 2}, b[] = {0, 1}, m[] = {0, 1}, v[] = {1, 4};
    og_tensor *in[] = {nh_tensor(OG_DOUBLE, 4, xd, x), nh_tensor(OG_DOUBLE, 1, cd, s),
                       nh_tensor(OG_DOUBLE, 1, cd, b), nh_tensor(OG_FLOAT, 1, cd, m),
                       nh_tensor(OG_FLOAT, 1, cd, v)};
    nh_node n = {.op = "BatchNormalization",
                 .opset = 15,
                 .attrs = {NH_FLOAT("epsilon", 0)},
                 .in = {in[0], in[1], in[2], in[3], in[4]},
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {1, 3, 5, 9}; /* channel 1: 2 * (x - 1) / 2 + 1 = x */
    nh_expect("batchnorm", r.out[0], 4, y, 1e-12);
    done(&r, in, 5);
}

static void test_batchnorm_training(void)
{
    int64_t xd[] = {2, 1, 2}, cd[] = {1};
    double x[] = {1, 3, 5, 7}, one[] = {1}, zero[] = {0};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, xd, x), nh_tensor(OG_FLOAT, 1, cd, one),
                       nh_tensor(OG_FLOAT, 1, cd, zero), nh_tensor(OG_FLOAT, 1, cd, zero),
                       nh_tensor(OG_FLOAT, 1, cd, one)};
    nh_node n = {
        .op = "BatchNormalization",
        .opset = 15,
        .attrs = {NH_INT("training_mode", 1), NH_FLOAT("epsilon", 0), NH_FLOAT("momentum", 0.5f)},
        .in = {in[0], in[1], in[2], in[3], in[4]},
        .n_out = 3,
        .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    /* batch mean 4, variance 5 */
    double sd = sqrt(5.0);
    double y[] = {-3 / sd, -1 / sd, 1 / sd, 3 / sd}, rm[] = {2}, rv[] = {3};
    nh_expect("batchnorm training y", r.out[0], 4, y, 1e-5);
    nh_expect("running_mean", r.out[1], 1, rm, 1e-6);
    nh_expect("running_var", r.out[2], 1, rv, 1e-6);
    done(&r, in, 5);
}

/* opset 7, spatial = 0: one scale/shift per activation (C x H), N = 2 */
static void test_batchnorm_per_activation(void)
{
    int64_t xd[] = {2, 1, 2}, pd[] = {1, 2};
    double x[] = {1, 2, 3, 4}, s[] = {1, 2}, b[] = {0, 1}, m[] = {1, 0}, v[] = {1, 4};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, xd, x), nh_tensor(OG_FLOAT, 2, pd, s),
                       nh_tensor(OG_FLOAT, 2, pd, b), nh_tensor(OG_FLOAT, 2, pd, m),
                       nh_tensor(OG_FLOAT, 2, pd, v)};
    nh_node n = {.op = "BatchNormalization",
                 .opset = 7,
                 .attrs = {NH_INT("spatial", 0), NH_FLOAT("epsilon", 0)},
                 .in = {in[0], in[1], in[2], in[3], in[4]},
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {0, 3, 2, 5}; /* column 0: x - 1; column 1: 2 * x / 2 + 1 */
    nh_expect("batchnorm per activation", r.out[0], 4, y, 1e-6);
    done(&r, in, 5);
}

/* opset 9 with the statistics outputs: training, saved_mean/saved_var are the batch's */
static void test_batchnorm_training_old(void)
{
    int64_t xd[] = {4, 1}, cd[] = {1};
    double x[] = {0, 2, 4, 6}, one[] = {1}, zero[] = {0};
    og_tensor *in[] = {nh_tensor(OG_DOUBLE, 2, xd, x), nh_tensor(OG_DOUBLE, 1, cd, one),
                       nh_tensor(OG_DOUBLE, 1, cd, zero), nh_tensor(OG_DOUBLE, 1, cd, zero),
                       nh_tensor(OG_DOUBLE, 1, cd, one)};
    nh_node n = {.op = "BatchNormalization",
                 .opset = 9,
                 .attrs = {NH_FLOAT("momentum", 0.25f)},
                 .in = {in[0], in[1], in[2], in[3], in[4]},
                 .n_out = 5,
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double rm[] = {2.25}, rv[] = {0.25 + 0.75 * 5}, sm[] = {3}, sv[] = {5};
    nh_expect("bn9 running mean", r.out[1], 1, rm, 1e-9);
    nh_expect("bn9 running var", r.out[2], 1, rv, 1e-9);
    nh_expect("bn9 saved mean", r.out[3], 1, sm, 1e-9);
    nh_expect("bn9 saved var", r.out[4], 1, sv, 1e-9);
    done(&r, in, 5);
}

static void test_batchnorm_bad_channels(void)
{
    int64_t xd[] = {1, 2, 2}, cd[] = {3};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, xd, NULL), nh_tensor(OG_FLOAT, 1, cd, NULL),
                       nh_tensor(OG_FLOAT, 1, cd, NULL), nh_tensor(OG_FLOAT, 1, cd, NULL),
                       nh_tensor(OG_FLOAT, 1, cd, NULL)};
    nh_node n = {.op = "BatchNormalization",
                 .opset = 9,
                 .in = {in[0], in[1], in[2], in[3], in[4]},
                 .threads = 2};
    nh_expect_fail(&n, 0, OG_ERR_SHAPE, NULL);
    nh_free_tensors(in, 5);
}

static void test_instancenorm(void)
{
    int64_t xd[] = {1, 2, 2}, cd[] = {2};
    double x[] = {1, 3, 10, 20}, s[] = {1, 2}, b[] = {0, 1};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, xd, x), nh_tensor(OG_FLOAT, 1, cd, s),
                       nh_tensor(OG_FLOAT, 1, cd, b)};
    nh_node n = {.op = "InstanceNormalization",
                 .opset = 6,
                 .attrs = {NH_FLOAT("epsilon", 0)},
                 .in = {in[0], in[1], in[2]},
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {-1, 1, -1, 3};
    nh_expect("instancenorm", r.out[0], 4, y, 1e-6);
    done(&r, in, 3);
}

/* axis -1 over rows of 2; Scale of shape [1] broadcasts, B absent */
static void test_layernorm(void)
{
    int64_t xd[] = {2, 2}, sd[] = {1};
    double x[] = {1, 3, -2, 2}, s[] = {2};
    og_tensor *in[] = {nh_tensor(OG_DOUBLE, 2, xd, x), nh_tensor(OG_DOUBLE, 1, sd, s)};
    nh_node n = {.op = "LayerNormalization",
                 .opset = 17,
                 .attrs = {NH_FLOAT("epsilon", 0)},
                 .in = {in[0], in[1]},
                 .n_out = 3,
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double y[] = {-2, 2, -2, 2}, mean[] = {2, 0}, inv[] = {1, 0.5};
    nh_expect("layernorm y", r.out[0], 4, y, 1e-12);
    nh_expect("layernorm mean", r.out[1], 2, mean, 1e-6);
    nh_expect("layernorm invstd", r.out[2], 2, inv, 1e-6);
    CHECK(r.out[1] && r.out[1]->dtype == OG_FLOAT && r.out[1]->rank == 2 && r.out[1]->dims[1] == 1);
    done(&r, in, 2);
}

static void test_layernorm_bad_scale(void)
{
    int64_t xd[] = {2, 3}, sd[] = {2};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, xd, NULL), nh_tensor(OG_FLOAT, 1, sd, NULL)};
    nh_node n = {.op = "LayerNormalization", .opset = 17, .in = {in[0], in[1]}, .threads = 2};
    nh_expect_fail(&n, 0, OG_ERR_SHAPE, NULL);
    nh_free_tensors(in, 2);
}

/* Training dropout is deterministic for a seed; kept elements are scaled by 1/(1-ratio). */
static void test_dropout_training(void)
{
    uint8_t first[1000];
    for (int pass = 0; pass < 2; pass++) {
        int64_t xd[] = {1000};
        double x[1000], ratio[] = {0.25}, t[] = {1};
        for (int i = 0; i < 1000; i++) x[i] = i + 1;
        og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, xd, x), nh_tensor(OG_FLOAT, 0, NULL, ratio),
                           nh_tensor(OG_BOOL, 0, NULL, t)};
        nh_node n = {.op = "Dropout",
                     .opset = 13,
                     .attrs = {NH_INT("seed", 7)},
                     .in = {in[0], in[1], in[2]},
                     .n_out = 2,
                     .threads = 2};
        nh_result r;
        CHECK_OK(nh_run(&n, &r));
        if (!r.out[0] || !r.out[1]) {
            og_test_failures++;
            done(&r, in, 3);
            return;
        }
        const float *y = r.out[0]->data;
        const uint8_t *m = r.out[1]->data;
        int kept = 0, bad = 0;
        for (int i = 0; i < 1000; i++) {
            kept += m[i];
            if (fabs(y[i] - (m[i] ? x[i] / 0.75 : 0)) > 1e-3) bad++;
            if (pass == 0) first[i] = m[i];
            if (pass == 1 && first[i] != m[i]) bad++;
        }
        CHECK(bad == 0);
        CHECK(kept > 700 && kept < 800);
        done(&r, in, 3);
    }
}

static void test_dropout_inference(void)
{
    int64_t xd[] = {3};
    double x[] = {1, 2, 3}, ones[] = {1, 1, 1};
    og_tensor *in[] = {nh_tensor(OG_DOUBLE, 1, xd, x)};
    nh_node n = {.op = "Dropout",
                 .opset = 10,
                 .attrs = {NH_FLOAT("ratio", 0.3f)},
                 .in = {in[0]},
                 .n_out = 2,
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    nh_expect("dropout y", r.out[0], 3, x, 0);
    nh_expect("dropout mask", r.out[1], 3, ones, 0);
    CHECK(r.out[1] && r.out[1]->dtype == OG_BOOL);
    done(&r, in, 1);
}

static void test_dropout_bad_ratio(void)
{
    int64_t xd[] = {3};
    double ratio[] = {1.5};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, xd, NULL), nh_tensor(OG_FLOAT, 0, NULL, ratio)};
    nh_node n = {.op = "Dropout", .opset = 13, .in = {in[0], in[1]}, .threads = 2};
    nh_expect_fail(&n, 0, OG_ERR_RUNTIME, NULL);
    nh_free_tensors(in, 2);
}

/* ---- GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void n12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_groupnorm(void)
{
    double x[4] = {1, 3, 10, 20}, y[4] = {-1, 1, -1, 3};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 4, 1}, x),
                       nh_tensor(OG_FLOAT, 1, (int64_t[]){4}, (double[]){1, 1, 2, 2}),
                       nh_tensor(OG_FLOAT, 1, (int64_t[]){4}, (double[]){0, 0, 1, 1})};
    nh_node n = {.op = "GroupNormalization",
                 .opset = 21,
                 .attrs = {NH_INT("num_groups", 2), NH_FLOAT("epsilon", 0)},
                 .in = {in[0], in[1], in[2]}};
    n12_case(&n, "groupnorm per channel", 4, y, 1e-6, in, 3);
    og_tensor *g[] = {nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 4, 1}, x),
                      nh_tensor(OG_DOUBLE, 1, (int64_t[]){2}, (double[]){1, 2}),
                      nh_tensor(OG_DOUBLE, 1, (int64_t[]){2}, (double[]){0, 1})};
    nh_node n18 = {.op = "GroupNormalization",
                   .opset = 18,
                   .attrs = {NH_INT("num_groups", 2), NH_FLOAT("epsilon", 0)},
                   .in = {g[0], g[1], g[2]}};
    n12_case(&n18, "groupnorm per group (18)", 4, y, 1e-12, g, 3);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 3, 1}, NULL),
                      nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, NULL),
                      nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, NULL)};
    nh_node bad = {.op = "GroupNormalization",
                   .opset = 21,
                   .attrs = {NH_INT("num_groups", 2)},
                   .in = {b[0], b[1], b[2]}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_SHAPE, "not a multiple of num_groups");
    nh_free_tensors(b, 3);
}

static void test_lp_mvn_lrn(void)
{
    og_tensor *a[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 2}, (double[]){1, -3, 2, 2})};
    nh_node l1 = {.op = "LpNormalization", .opset = 1, .attrs = {NH_INT("p", 1)}, .in = {a[0]}};
    n12_case(&l1, "lpnorm p 1", 4, (double[]){0.25, -0.75, 0.5, 0.5}, 1e-6, a, 1);
    og_tensor *c[] = {nh_tensor(OG_FLOAT16, 2, (int64_t[]){1, 2}, (double[]){3, 4})};
    nh_node l2 = {.op = "LpNormalization", .opset = 1, .in = {c[0]}};
    n12_case(&l2, "lpnorm p 2 float16", 2, (double[]){0.6, 0.8}, 1e-3, c, 1);
    og_tensor *e[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){1, 2}, NULL)};
    nh_node l3 = {.op = "LpNormalization", .opset = 1, .attrs = {NH_INT("p", 3)}, .in = {e[0]}};
    nh_expect_fail(&l3, NH_LOAD, OG_ERR_MODEL, "'p'");
    nh_free_tensors(e, 1);
    og_tensor *m[] = {nh_tensor(OG_DOUBLE, 2, (int64_t[]){1, 2}, (double[]){1, 3})};
    nh_node mvn = {.op = "MeanVarianceNormalization",
                   .opset = 13,
                   .attrs = {NH_INTS("axes", 1)},
                   .in = {m[0]}};
    n12_case(&mvn, "mvn", 2, (double[]){-1, 1}, 1e-8, m, 1);
    og_tensor *r[] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 1, 1}, (double[]){1, 2})};
    nh_node lrn1 = {.op = "LRN",
                    .opset = 13,
                    .attrs = {NH_INT("size", 1), NH_FLOAT("alpha", 1), NH_FLOAT("beta", 1)},
                    .in = {r[0]}};
    nh_result res;
    CHECK_OK(nh_run(&lrn1, &res));
    nh_expect("lrn size 1", res.out[0], 2, (double[]){0.5, 0.4}, 1e-6);
    nh_release(&res);
    nh_node lrn3 = {.op = "LRN",
                    .opset = 13,
                    .attrs = {NH_INT("size", 3), NH_FLOAT("alpha", 1), NH_FLOAT("beta", 1)},
                    .in = {r[0]}};
    n12_case(&lrn3, "lrn size 3", 2, (double[]){0.375, 0.75}, 1e-6, r, 1);
    og_tensor *z[] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 1, 1}, NULL)};
    nh_node bad = {.op = "LRN", .opset = 13, .in = {z[0]}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_MODEL, "size");
    nh_free_tensors(z, 1);
}

int main(void)
{
    test_batchnorm_inference();
    test_batchnorm_training();
    test_batchnorm_per_activation();
    test_batchnorm_training_old();
    test_batchnorm_bad_channels();
    test_instancenorm();
    test_layernorm();
    test_layernorm_bad_scale();
    test_dropout_training();
    test_dropout_inference();
    test_dropout_bad_ratio();
    test_groupnorm();
    test_lp_mvn_lrn();
    NH_DONE();
}
