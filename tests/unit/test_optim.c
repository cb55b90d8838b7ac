/* test_optim.c: the ai.onnx.preview.training optimizers Momentum (standard and Nesterov),
 * Adagrad and Adam on small hand-checked inputs in float32 and float64, a large tensor cut
 * into blocks and threads with an omitted output, and the errors of bad layouts, shapes,
 * types and attributes. */
#include "unit/node_harness.h"

#define TRAINING "ai.onnx.preview.training"

static og_tensor *scalar(og_dtype dt, double v) { return nh_scalar(dt, v); }

/* A case of optimizer op `op` (opset 1 of the training domain) over inputs in[0..n_in-1]. */
static nh_node o_node(const char *op, og_tensor *const *in, int n_in, int n_out)
{
    nh_node n = {.op = op, .domain = TRAINING, .opset = 1, .n_in = n_in, .n_out = n_out};
    for (int i = 0; i < n_in; i++) n.in[i] = in[i];
    return n;
}

/* With the shapes unknown at load: only the run-time inference sees them. */
static void o_dynamic(nh_node *n)
{
    for (int i = 0; i < n->n_in; i++) n->decl[i] = "?";
}

/* Run n and check it fails with `want`, naming the node, a and b. */
static void expect_error(const nh_node *n, og_status want, const char *a, const char *b)
{
    nh_result res;
    og_status got = nh_run(n, &res);
    CHECK(got == want);
    const char *msg = og_last_error();
    CHECK(strstr(msg, "n0") != NULL);
    if (a) CHECK(strstr(msg, a) != NULL);
    if (b) CHECK(strstr(msg, b) != NULL);
    if (got != want || (a && !strstr(msg, a)) || (b && !strstr(msg, b)))
        fprintf(stderr, "  status %s, message: %s\n", og_status_name(got), msg);
    nh_release(&res);
}

/* Momentum, standard mode, two tensors (X1 [2], X2 [1]); alpha 0.9, beta 0.5, norm 0.1,
 * R 0.1.  G_reg = 0.1 X + G = {0.6, 0.8}, {-0.7}.
 *  T = 1: V_new = 0.9 V + 0.5 G_reg = {1.2, 0.4}, {1.45}; X_new = X - 0.1 V_new.
 *  T = 0: beta counts as 1: V_new = {1.5, 0.8}, {1.1}. */
static void test_momentum_standard(og_dtype dt, int64_t t)
{
    int64_t d1[] = {2}, d2[] = {1};
    double x1[] = {1, -2}, g1[] = {0.5, 1}, v1[] = {1, 0}, x2[] = {3}, g2[] = {-1}, v2[] = {2};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.1),    scalar(OG_INT64, (double)t),
                       nh_tensor(dt, 1, d1, x1), nh_tensor(dt, 1, d2, x2),
                       nh_tensor(dt, 1, d1, g1), nh_tensor(dt, 1, d2, g2),
                       nh_tensor(dt, 1, d1, v1), nh_tensor(dt, 1, d2, v2)};
    nh_node n = o_node("Momentum", in, 8, 4);
    nh_attr at[] = {NH_FLOAT("alpha", 0.9f), NH_FLOAT("beta", 0.5f),
                    NH_FLOAT("norm_coefficient", 0.1f), NH_STRING("mode", "standard")};
    memcpy(n.attrs, at, sizeof at);
    nh_result res;
    CHECK(nh_run(&n, &res) == OG_OK);
    og_tensor **out = res.out;
    double tol = dt == OG_FLOAT ? 1e-6 : 1e-7; /* the attributes are float32 */
    if (t > 0) {
        double xn1[] = {0.88, -2.04}, xn2[] = {2.855}, vn1[] = {1.2, 0.4}, vn2[] = {1.45};
        nh_expect("momentum X1_new", out[0], 2, xn1, tol);
        nh_expect("momentum X2_new", out[1], 1, xn2, tol);
        nh_expect("momentum V1_new", out[2], 2, vn1, tol);
        nh_expect("momentum V2_new", out[3], 1, vn2, tol);
    } else {
        double xn1[] = {0.85, -2.08}, xn2[] = {2.89}, vn1[] = {1.5, 0.8}, vn2[] = {1.1};
        nh_expect("momentum T=0 X1_new", out[0], 2, xn1, tol);
        nh_expect("momentum T=0 X2_new", out[1], 1, xn2, tol);
        nh_expect("momentum T=0 V1_new", out[2], 2, vn1, tol);
        nh_expect("momentum T=0 V2_new", out[3], 1, vn2, tol);
    }
    for (int j = 0; j < 4; j++) CHECK(out[j] && out[j]->dtype == dt);
    nh_release(&res);
    nh_free_tensors(in, 8);
}

/* Nesterov, float64, R 0.1 given as double: G_reg = {0.6, 0.8}, V_new = {1.2, 0.4},
 * X_new = X - 0.1 (G_reg + 0.9 V_new) = {1 - 0.168, -2 - 0.116}. */
static void test_momentum_nesterov(void)
{
    int64_t d[] = {2};
    double x[] = {1, -2}, gr[] = {0.5, 1}, v[] = {1, 0};
    og_tensor *in[] = {scalar(OG_DOUBLE, 0.1), scalar(OG_INT64, 3), nh_tensor(OG_DOUBLE, 1, d, x),
                       nh_tensor(OG_DOUBLE, 1, d, gr), nh_tensor(OG_DOUBLE, 1, d, v)};
    nh_node n = o_node("Momentum", in, 5, 2);
    nh_attr at[] = {NH_FLOAT("alpha", 0.9f), NH_FLOAT("beta", 0.5f),
                    NH_FLOAT("norm_coefficient", 0.1f), NH_STRING("mode", "nesterov")};
    memcpy(n.attrs, at, sizeof at);
    nh_result res;
    CHECK(nh_run(&n, &res) == OG_OK);
    og_tensor **out = res.out;
    /* attributes are float32 in the model: 0.9f and 0.1f are not 0.9 and 0.1 exactly */
    double xn[] = {0.832, -2.116}, vn[] = {1.2, 0.4};
    nh_expect("nesterov X_new", out[0], 2, xn, 1e-7);
    nh_expect("nesterov V_new", out[1], 2, vn, 1e-7);
    CHECK(out[0] && out[0]->dtype == OG_DOUBLE);
    nh_release(&res);
    nh_free_tensors(in, 5);
}

/* Adagrad: R 0.5, T 2, decay 0.5 -> r = 0.5 / (1 + 2 * 0.5) = 0.25; norm 0.5, epsilon 1.
 * X {2, 1}, G {2, 1.5} -> G_reg = {3, 2}; H {7, 12} -> H_new = {16, 16}, sqrt + eps = 5;
 * X_new = X - 0.25 G_reg / 5 = {1.85, 0.9}. */
static void test_adagrad(og_dtype dt)
{
    int64_t d[] = {2, 1};
    double x[] = {2, 1}, gr[] = {2, 1.5}, h[] = {7, 12};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.5), scalar(OG_INT64, 2), nh_tensor(dt, 2, d, x),
                       nh_tensor(dt, 2, d, gr), nh_tensor(dt, 2, d, h)};
    nh_node n = o_node("Adagrad", in, 5, 2);
    nh_attr at[] = {NH_FLOAT("decay_factor", 0.5f), NH_FLOAT("epsilon", 1.0f),
                    NH_FLOAT("norm_coefficient", 0.5f)};
    memcpy(n.attrs, at, sizeof at);
    nh_result res;
    CHECK(nh_run(&n, &res) == OG_OK);
    og_tensor **out = res.out;
    double xn[] = {1.85, 0.9}, hn[] = {16, 16};
    double tol = dt == OG_FLOAT ? 1e-6 : 1e-14;
    nh_expect("adagrad X_new", out[0], 2, xn, tol);
    nh_expect("adagrad H_new", out[1], 2, hn, tol);
    CHECK(out[0] && out[0]->rank == 2 && out[0]->dims[0] == 2 && out[0]->dims[1] == 1);
    nh_release(&res);
    nh_free_tensors(in, 5);
}

/* Adam: alpha 0.5, beta 0.75, epsilon 1, norm 0.5, norm_post 0.1, R 0.3.
 * X {2, -2}, G {1, -1} -> G_reg = {2, -2}; V {1, -1} -> V_new = 0.5 V + 0.5 G_reg =
 * {1.5, -1.5}; H {4, 4} -> H_new = 0.75 H + 0.25 G_reg^2 = {4, 4}, sqrt + eps = 3.
 * T = 2: r = 0.3 sqrt(1 - 0.75^2) / (1 - 0.5^2) = 0.4 sqrt(0.4375); T = 0: r = 0.3.
 * X_new = 0.9 (X - r V_new / 3) = {1.8 - 0.45 r, -1.8 + 0.45 r}. */
static void test_adam(og_dtype dt, int64_t t)
{
    int64_t d[] = {2};
    double x[] = {2, -2}, gr[] = {1, -1}, v[] = {1, -1}, h[] = {4, 4};
    og_tensor *in[] = {scalar(OG_DOUBLE, 0.3), scalar(OG_INT64, (double)t),
                       nh_tensor(dt, 1, d, x), nh_tensor(dt, 1, d, gr),
                       nh_tensor(dt, 1, d, v), nh_tensor(dt, 1, d, h)};
    nh_node n = o_node("Adam", in, 6, 3);
    nh_attr at[] = {NH_FLOAT("alpha", 0.5f), NH_FLOAT("beta", 0.75f), NH_FLOAT("epsilon", 1.0f),
                    NH_FLOAT("norm_coefficient", 0.5f), NH_FLOAT("norm_coefficient_post", 0.1f)};
    memcpy(n.attrs, at, sizeof at);
    nh_result res;
    CHECK(nh_run(&n, &res) == OG_OK);
    og_tensor **out = res.out;
    double r = t > 0 ? 0.4 * sqrt(0.4375) : 0.3;
    /* norm_coefficient_post is 0.1f: keep its float error out of the float64 check */
    double post = 1 - (double)0.1f;
    double xn[] = {post * (2 - r / 2), post * (-2 + r / 2)}, vn[] = {1.5, -1.5}, hn[] = {4, 4};
    double tol = dt == OG_FLOAT ? 1e-6 : 1e-14;
    nh_expect("adam X_new", out[0], 2, xn, tol);
    nh_expect("adam V_new", out[1], 2, vn, tol);
    nh_expect("adam H_new", out[2], 2, hn, tol);
    if (dt == OG_DOUBLE && t == 2) { /* the rounded hand values, as a check on the above */
        double approx[] = {1.68094, -1.68094};
        nh_expect("adam X_new approx", out[0], 2, approx, 1e-5);
    }
    nh_release(&res);
    nh_free_tensors(in, 6);
}

/* Adam on 70001 elements (many blocks, a partial last one, two threads) with V_new
 * omitted, against the formula evaluated in double. */
static void test_adam_large(void)
{
    enum { N = 70001 };
    int64_t d[] = {N};
    double *vals = malloc(4 * N * sizeof *vals);
    CHECK(vals != NULL);
    if (!vals) return;
    for (int i = 0; i < 4 * N; i++) vals[i] = sin(0.37 * i) * (i % 4 == 3 ? 1 : 2);
    double *xv = vals, *gv = vals + N, *vv = vals + 2 * N, *hv = vals + 3 * N;
    for (int i = 0; i < N; i++) hv[i] = fabs(hv[i]);
    og_tensor *in[] = {scalar(OG_FLOAT, 0.01),        scalar(OG_INT64, 5),
                       nh_tensor(OG_FLOAT, 1, d, xv), nh_tensor(OG_FLOAT, 1, d, gv),
                       nh_tensor(OG_FLOAT, 1, d, vv), nh_tensor(OG_FLOAT, 1, d, hv)};
    nh_node n = o_node("Adam", in, 6, 3);
    n.attrs[0] = (nh_attr)NH_FLOAT("norm_coefficient", 0.01f);
    n.attrs[1] = (nh_attr)NH_FLOAT("norm_coefficient_post", 0.001f);
    n.omit_out = 1u << 1; /* V_new */
    n.threads = 2;
    nh_result res;
    og_status st = nh_run(&n, &res);
    og_tensor **out = res.out;
    if (st) fprintf(stderr, "adam large: %s\n", og_last_error());
    CHECK(st == OG_OK);
    CHECK(out[1] == NULL);
    if (out[0] && out[2]) {
        double a = (double)0.9f, b = (double)0.999f, eps = (double)1e-6f;
        double r = 0.01 * sqrt(1 - pow(b, 5)) / (1 - pow(a, 5));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            double x = (float)xv[i], gi = (float)gv[i], v = (float)vv[i], h = (float)hv[i];
            double gr = (double)0.01f * x + gi;
            double vn = a * v + (1 - a) * gr, hn = b * h + (1 - b) * gr * gr;
            double xn = (1 - (double)0.001f) * (x - r * vn / (sqrt(hn) + eps));
            double got_x = ((float *)out[0]->data)[i], got_h = ((float *)out[2]->data)[i];
            if (fabs(got_x - xn) > 1e-5 * (1 + fabs(xn)) || fabs(got_h - hn) > 1e-5 * (1 + hn)) {
                if (!bad)
                    fprintf(stderr, "adam large: element %d: X %.9g vs %.9g, H %.9g vs %.9g\n", i,
                            got_x, xn, got_h, hn);
                bad++;
            }
        }
        CHECK(bad == 0);
    }
    free(vals);
    nh_release(&res);
    nh_free_tensors(in, 6);
}

/* ---- bad input ------------------------------------------------------------------- */

/* Momentum with R, T, X1, G1, V1, X2: not 2 + 3n inputs. */
static void test_bad_count(void)
{
    int64_t d[] = {2};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.1),           scalar(OG_INT64, 0),
                       nh_tensor(OG_FLOAT, 1, d, NULL), nh_tensor(OG_FLOAT, 1, d, NULL),
                       nh_tensor(OG_FLOAT, 1, d, NULL), nh_tensor(OG_FLOAT, 1, d, NULL)};
    nh_node n = o_node("Momentum", in, 6, 2);
    nh_attr at[] = {NH_FLOAT("alpha", 0.9f), NH_FLOAT("beta", 0.5f),
                    NH_FLOAT("norm_coefficient", 0), NH_STRING("mode", "standard")};
    memcpy(n.attrs, at, sizeof at);
    expect_error(&n, OG_ERR_MODEL, "has 6 inputs", "2 + 3 n");
    nh_free_tensors(in, 6);
}

/* Adam with 2 tensors but 4 outputs instead of 6. */
static void test_bad_output_count(void)
{
    og_tensor *in[10];
    int64_t d[] = {1};
    in[0] = scalar(OG_FLOAT, 0.1);
    in[1] = scalar(OG_INT64, 0);
    for (int i = 2; i < 10; i++) in[i] = nh_tensor(OG_FLOAT, 1, d, NULL);
    nh_node n = o_node("Adam", in, 10, 4);
    expect_error(&n, OG_ERR_MODEL, "has 4 outputs", "expected 6");
    nh_free_tensors(in, 10);
}

/* Adagrad whose G2 has another shape than X2: caught at load and, with the shapes unknown
 * there, at run time. */
static void test_bad_shape(bool static_shapes)
{
    int64_t d1[] = {2}, d2[] = {3}, d3[] = {4};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.1),
                       scalar(OG_INT64, 0),
                       nh_tensor(OG_FLOAT, 1, d1, NULL),
                       nh_tensor(OG_FLOAT, 1, d2, NULL),
                       nh_tensor(OG_FLOAT, 1, d1, NULL),
                       nh_tensor(OG_FLOAT, 1, d3, NULL),
                       nh_tensor(OG_FLOAT, 1, d1, NULL),
                       nh_tensor(OG_FLOAT, 1, d2, NULL)};
    nh_node n = o_node("Adagrad", in, 8, 4);
    if (!static_shapes) o_dynamic(&n);
    expect_error(&n, OG_ERR_SHAPE, "input 5 (G2)", "X2's shape [3]");
    nh_free_tensors(in, 8);
}

/* Adam with R of shape [2]; Momentum with a float T; Adam with V of another type. */
static void test_bad_scalars_and_types(void)
{
    int64_t d[] = {2};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 1, d, NULL),  scalar(OG_INT64, 0),
                       nh_tensor(OG_FLOAT, 1, d, NULL),  nh_tensor(OG_FLOAT, 1, d, NULL),
                       nh_tensor(OG_DOUBLE, 1, d, NULL), nh_tensor(OG_FLOAT, 1, d, NULL)};
    nh_node n = o_node("Adam", in, 6, 3);
    expect_error(&n, OG_ERR_SHAPE, "input 0 (R)", "scalar");
    nh_free_tensors(in, 6);

    og_tensor *in2[] = {scalar(OG_FLOAT, 0.1),
                        scalar(OG_INT64, 0),
                        nh_tensor(OG_FLOAT, 1, d, NULL),
                        nh_tensor(OG_FLOAT, 1, d, NULL),
                        nh_tensor(OG_DOUBLE, 1, d, NULL),
                        nh_tensor(OG_FLOAT, 1, d, NULL)};
    n = o_node("Adam", in2, 6, 3);
    expect_error(&n, OG_ERR_TYPE, "input 4 (V)", "float64");
    nh_free_tensors(in2, 6);

    og_tensor *in3[] = {scalar(OG_FLOAT, 0.1), scalar(OG_FLOAT, 0), nh_tensor(OG_FLOAT, 1, d, NULL),
                        nh_tensor(OG_FLOAT, 1, d, NULL), nh_tensor(OG_FLOAT, 1, d, NULL)};
    n = o_node("Momentum", in3, 5, 2);
    nh_attr at[] = {NH_FLOAT("alpha", 0.9f), NH_FLOAT("beta", 0.5f),
                    NH_FLOAT("norm_coefficient", 0), NH_STRING("mode", "standard")};
    memcpy(n.attrs, at, sizeof at);
    /* at run time only: the static check would say the same */
    o_dynamic(&n);
    expect_error(&n, OG_ERR_TYPE, "input 1 (T)", "int64");
    nh_free_tensors(in3, 5);
}

/* Momentum with mode "heavy", and one without its required alpha. */
static void test_bad_attributes(void)
{
    int64_t d[] = {1};
    for (int k = 0; k < 2; k++) {
        og_tensor *in[] = {scalar(OG_FLOAT, 0.1), scalar(OG_INT64, 0),
                           nh_tensor(OG_FLOAT, 1, d, NULL), nh_tensor(OG_FLOAT, 1, d, NULL),
                           nh_tensor(OG_FLOAT, 1, d, NULL)};
        nh_node n = o_node("Momentum", in, 5, 2);
        int na = 0;
        if (k == 1) n.attrs[na++] = (nh_attr)NH_FLOAT("alpha", 0.9f);
        n.attrs[na++] = (nh_attr)NH_FLOAT("beta", 0.5f);
        n.attrs[na++] = (nh_attr)NH_FLOAT("norm_coefficient", 0);
        n.attrs[na++] = (nh_attr)NH_STRING("mode", k == 1 ? "heavy" : "standard");
        if (k == 0)
            expect_error(&n, OG_ERR_MODEL, "'alpha'", "missing");
        else
            expect_error(&n, OG_ERR_MODEL, "'heavy'", "nesterov");
        nh_free_tensors(in, 5);
    }
}

int main(void)
{
    test_momentum_standard(OG_FLOAT, 1);
    test_momentum_standard(OG_FLOAT, 0);
    test_momentum_standard(OG_DOUBLE, 1);
    test_momentum_nesterov();
    test_adagrad(OG_FLOAT);
    test_adagrad(OG_DOUBLE);
    test_adam(OG_DOUBLE, 2);
    test_adam(OG_FLOAT, 2);
    test_adam(OG_FLOAT, 0);
    test_adam_large();
    test_bad_count();
    test_bad_output_count();
    test_bad_shape(true);
    test_bad_shape(false);
    test_bad_scalars_and_types();
    test_bad_attributes();
    NH_DONE();
}
