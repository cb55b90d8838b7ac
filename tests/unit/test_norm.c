/* test_norm.c: BatchNormalization, InstanceNormalization, LayerNormalization and Dropout on
 * small hand-checked inputs, and their run-time errors. */
#include "unit/nn_harness.h"

static void test_batchnorm_inference(void)
{
    og_graph *g;
    h_node(&g, "BatchNormalization", 15, 5, 1);
    h_attr_float(g, "epsilon", 0);
    int64_t xd[] = {1, 2, 1, 2}, cd[] = {2};
    double x[] = {1, 3, 5, 9}, s[] = {1, 2}, b[] = {0, 1}, m[] = {0, 1}, v[] = {1, 4};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 4, xd, x), h_tensor(OG_DOUBLE, 1, cd, s),
                       h_tensor(OG_DOUBLE, 1, cd, b), h_tensor(OG_FLOAT, 1, cd, m),
                       h_tensor(OG_FLOAT, 1, cd, v)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {1, 3, 5, 9}; /* channel 1: 2 * (x - 1) / 2 + 1 = x */
    h_expect("batchnorm", out[0], 4, y, 1e-12);
    h_free(g, in, 5);
    h_free(NULL, out, 1);
}

static void test_batchnorm_training(void)
{
    og_graph *g;
    h_node(&g, "BatchNormalization", 15, 5, 3);
    h_attr_int(g, "training_mode", 1);
    h_attr_float(g, "epsilon", 0);
    h_attr_float(g, "momentum", 0.5f);
    int64_t xd[] = {2, 1, 2}, cd[] = {1};
    double x[] = {1, 3, 5, 7}, one[] = {1}, zero[] = {0};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, x), h_tensor(OG_FLOAT, 1, cd, one),
                       h_tensor(OG_FLOAT, 1, cd, zero), h_tensor(OG_FLOAT, 1, cd, zero),
                       h_tensor(OG_FLOAT, 1, cd, one)};
    og_tensor *out[3];
    bool want[] = {true, true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    /* batch mean 4, variance 5 */
    double sd = sqrt(5.0);
    double y[] = {-3 / sd, -1 / sd, 1 / sd, 3 / sd}, rm[] = {2}, rv[] = {3};
    h_expect("batchnorm training y", out[0], 4, y, 1e-5);
    h_expect("running_mean", out[1], 1, rm, 1e-6);
    h_expect("running_var", out[2], 1, rv, 1e-6);
    h_free(g, in, 5);
    h_free(NULL, out, 3);
}

/* opset 7, spatial = 0: one scale/shift per activation (C x H), N = 2 */
static void test_batchnorm_per_activation(void)
{
    og_graph *g;
    h_node(&g, "BatchNormalization", 7, 5, 1);
    h_attr_int(g, "spatial", 0);
    h_attr_float(g, "epsilon", 0);
    int64_t xd[] = {2, 1, 2}, pd[] = {1, 2};
    double x[] = {1, 2, 3, 4}, s[] = {1, 2}, b[] = {0, 1}, m[] = {1, 0}, v[] = {1, 4};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, x), h_tensor(OG_FLOAT, 2, pd, s),
                       h_tensor(OG_FLOAT, 2, pd, b), h_tensor(OG_FLOAT, 2, pd, m),
                       h_tensor(OG_FLOAT, 2, pd, v)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {0, 3, 2, 5}; /* column 0: x - 1; column 1: 2 * x / 2 + 1 */
    h_expect("batchnorm per activation", out[0], 4, y, 1e-6);
    h_free(g, in, 5);
    h_free(NULL, out, 1);
}

/* opset 9 with the statistics outputs: training, saved_mean/saved_var are the batch's */
static void test_batchnorm_training_old(void)
{
    og_graph *g;
    h_node(&g, "BatchNormalization", 9, 5, 5);
    h_attr_float(g, "momentum", 0.25f);
    int64_t xd[] = {4, 1}, cd[] = {1};
    double x[] = {0, 2, 4, 6}, one[] = {1}, zero[] = {0};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 2, xd, x), h_tensor(OG_DOUBLE, 1, cd, one),
                       h_tensor(OG_DOUBLE, 1, cd, zero), h_tensor(OG_DOUBLE, 1, cd, zero),
                       h_tensor(OG_DOUBLE, 1, cd, one)};
    og_tensor *out[5];
    bool want[] = {true, true, true, true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double rm[] = {2.25}, rv[] = {0.25 + 0.75 * 5}, sm[] = {3}, sv[] = {5};
    h_expect("bn9 running mean", out[1], 1, rm, 1e-9);
    h_expect("bn9 running var", out[2], 1, rv, 1e-9);
    h_expect("bn9 saved mean", out[3], 1, sm, 1e-9);
    h_expect("bn9 saved var", out[4], 1, sv, 1e-9);
    h_free(g, in, 5);
    h_free(NULL, out, 5);
}

static void test_batchnorm_bad_channels(void)
{
    og_graph *g;
    h_node(&g, "BatchNormalization", 9, 5, 1);
    int64_t xd[] = {1, 2, 2}, cd[] = {3};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, NULL), h_tensor(OG_FLOAT, 1, cd, NULL),
                       h_tensor(OG_FLOAT, 1, cd, NULL), h_tensor(OG_FLOAT, 1, cd, NULL),
                       h_tensor(OG_FLOAT, 1, cd, NULL)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_ERR_SHAPE);
    h_free(g, in, 5);
}

static void test_instancenorm(void)
{
    og_graph *g;
    h_node(&g, "InstanceNormalization", 6, 3, 1);
    h_attr_float(g, "epsilon", 0);
    int64_t xd[] = {1, 2, 2}, cd[] = {2};
    double x[] = {1, 3, 10, 20}, s[] = {1, 2}, b[] = {0, 1};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, x), h_tensor(OG_FLOAT, 1, cd, s),
                       h_tensor(OG_FLOAT, 1, cd, b)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {-1, 1, -1, 3};
    h_expect("instancenorm", out[0], 4, y, 1e-6);
    h_free(g, in, 3);
    h_free(NULL, out, 1);
}

/* axis -1 over rows of 2; Scale of shape [1] broadcasts, B absent */
static void test_layernorm(void)
{
    og_graph *g;
    h_node(&g, "LayerNormalization", 17, 2, 3);
    h_attr_float(g, "epsilon", 0);
    int64_t xd[] = {2, 2}, sd[] = {1};
    double x[] = {1, 3, -2, 2}, s[] = {2};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 2, xd, x), h_tensor(OG_DOUBLE, 1, sd, s)};
    og_tensor *out[3];
    bool want[] = {true, true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double y[] = {-2, 2, -2, 2}, mean[] = {2, 0}, inv[] = {1, 0.5};
    h_expect("layernorm y", out[0], 4, y, 1e-12);
    h_expect("layernorm mean", out[1], 2, mean, 1e-6);
    h_expect("layernorm invstd", out[2], 2, inv, 1e-6);
    H_CHECK(out[1] && out[1]->dtype == OG_FLOAT && out[1]->rank == 2 && out[1]->dims[1] == 1);
    h_free(g, in, 2);
    h_free(NULL, out, 3);
}

static void test_layernorm_bad_scale(void)
{
    og_graph *g;
    h_node(&g, "LayerNormalization", 17, 2, 1);
    int64_t xd[] = {2, 3}, sd[] = {2};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 2, xd, NULL), h_tensor(OG_FLOAT, 1, sd, NULL)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_ERR_SHAPE);
    h_free(g, in, 2);
}

/* Training dropout is deterministic for a seed; kept elements are scaled by 1/(1-ratio). */
static void test_dropout_training(void)
{
    uint8_t first[1000];
    for (int pass = 0; pass < 2; pass++) {
        og_graph *g;
        h_node(&g, "Dropout", 13, 3, 2);
        h_attr_int(g, "seed", 7);
        int64_t xd[] = {1000};
        double x[1000], r[] = {0.25}, t[] = {1};
        for (int i = 0; i < 1000; i++) x[i] = i + 1;
        og_tensor *in[] = {h_tensor(OG_FLOAT, 1, xd, x), h_tensor(OG_FLOAT, 0, NULL, r),
                           h_tensor(OG_BOOL, 0, NULL, t)};
        og_tensor *out[2];
        bool want[] = {true, true};
        H_CHECK(h_run(g, in, want, out) == OG_OK);
        if (!out[0] || !out[1]) {
            h_failures++;
            h_free(g, in, 3);
            return;
        }
        const float *y = out[0]->data;
        const uint8_t *m = out[1]->data;
        int kept = 0, bad = 0;
        for (int i = 0; i < 1000; i++) {
            kept += m[i];
            if (fabs(y[i] - (m[i] ? x[i] / 0.75 : 0)) > 1e-3) bad++;
            if (pass == 0) first[i] = m[i];
            if (pass == 1 && first[i] != m[i]) bad++;
        }
        H_CHECK(bad == 0);
        H_CHECK(kept > 700 && kept < 800);
        h_free(g, in, 3);
        h_free(NULL, out, 2);
    }
}

static void test_dropout_inference(void)
{
    og_graph *g;
    h_node(&g, "Dropout", 10, 1, 2);
    h_attr_float(g, "ratio", 0.3f);
    int64_t xd[] = {3};
    double x[] = {1, 2, 3}, ones[] = {1, 1, 1};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 1, xd, x)}, *out[2];
    bool want[] = {true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    h_expect("dropout y", out[0], 3, x, 0);
    h_expect("dropout mask", out[1], 3, ones, 0);
    H_CHECK(out[1] && out[1]->dtype == OG_BOOL);
    h_free(g, in, 1);
    h_free(NULL, out, 2);
}

static void test_dropout_bad_ratio(void)
{
    og_graph *g;
    h_node(&g, "Dropout", 13, 2, 1);
    int64_t xd[] = {3};
    double r[] = {1.5};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 1, xd, NULL), h_tensor(OG_FLOAT, 0, NULL, r)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_ERR_RUNTIME);
    h_free(g, in, 2);
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
    if (h_failures) fprintf(stderr, "test_norm: %d failures\n", h_failures);
    return h_failures != 0;
}
