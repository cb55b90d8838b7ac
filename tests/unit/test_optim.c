/* test_optim.c: the ai.onnx.preview.training optimizers Momentum (standard and Nesterov),
 * Adagrad and Adam on small hand-checked inputs in float32 and float64, a large tensor cut
 * into blocks and threads with an omitted output, and the errors of bad layouts, shapes,
 * types and attributes. */
#include "unit/nn_harness.h"

#define TRAINING "ai.onnx.preview.training"

enum { MAX_IO = 16 };

/* A one-node graph of a training-domain op (opset 1 of that domain, 17 of ai.onnx) with
 * n_in inputs "i0".. and n_out outputs "o0".. */
static void o_node(og_graph **gp, const char *op, int n_in, int n_out)
{
    og_graph *g = og_graph_new(NULL);
    *gp = g;
    g->opsets = og_calloc(g->alloc, 2, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(g->alloc, "");
    g->opsets[0].version = 17;
    g->opsets[1].domain = og_strdup(g->alloc, TRAINING);
    g->opsets[1].version = 1;
    g->n_opsets = 2;
    og_graph_add_node(g, op, TRAINING, "n0", n_in, n_out);
    char name[16];
    g->inputs = og_malloc(g->alloc, (size_t)(n_in + 1) * sizeof *g->inputs);
    g->outputs = og_malloc(g->alloc, (size_t)(n_out + 1) * sizeof *g->outputs);
    for (int i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "i%d", i);
        int v = og_graph_add_value(g, name);
        g->nodes[0].in[i] = v;
        g->values[v].kind = OG_VALUE_INPUT;
        g->values[v].is_graph_input = true;
        g->inputs[i] = v;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(name, sizeof name, "o%d", i);
        int v = og_graph_add_value(g, name);
        g->nodes[0].out[i] = v;
        g->values[v].is_graph_output = true;
        g->outputs[i] = v;
    }
    g->n_inputs = n_in;
    g->n_outputs = n_out;
}

/* As h_run, for up to MAX_IO inputs and outputs of the training domain.  With
 * static_shapes false the graph's values keep unknown types and shapes at resolve, so that
 * only the run-time inference sees them. */
static og_status o_run(og_graph *g, og_tensor *const *in, const bool *want, og_tensor **out,
                       bool static_shapes, int threads)
{
    og_node *n = &g->nodes[0];
    og_vinfo vin[MAX_IO], vout[MAX_IO];
    og_status st;
    H_CHECK(n->n_in <= MAX_IO && n->n_out <= MAX_IO);
    int kept = 0;
    for (int j = 0; j < n->n_out; j++) {
        out[j] = NULL;
        if (want[j])
            g->outputs[kept++] = n->out[j];
        else
            n->out[j] = -1; /* an omitted output, no longer a graph output */
    }
    g->n_outputs = kept;
    for (int i = 0; i < n->n_in && static_shapes; i++) {
        og_value *v = &g->values[n->in[i]];
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->dims, sizeof v->dims);
    }
    if ((st = og_graph_finalize(g))) return st;
    if ((st = og_graph_resolve(g, true))) return st;
    n = &g->nodes[0];
    for (int i = 0; i < n->n_in; i++) {
        og_vinfo_set(&vin[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        vin[i].value = in[i];
    }
    for (int j = 0; j < n->n_out; j++) og_vinfo_unknown(&vout[j]);
    og_op_ctx c = {n, g->alloc, NULL, true};
    if ((st = n->op->infer(&c, vin, n->n_in, vout, n->n_out))) return st;
    for (int j = 0; j < n->n_out; j++) {
        if (!want[j]) continue;
        if ((st = og_tensor_alloc(vout[j].dtype, vout[j].rank, vout[j].dims, NULL, &out[j])))
            return st;
    }
    og_kernel_fn fn = og_cpu_kernel_find(TRAINING, n->op_type);
    H_CHECK(fn != NULL);
    if (!fn) return OG_ERR_INTERNAL;
    og_kernel_ctx k = {n, n->params, g->alloc, threads, NULL, 0};
    return fn(&k, (const og_tensor *const *)in, n->n_in, out, n->n_out);
}

static og_tensor *scalar(og_dtype dt, double v) { return h_tensor(dt, 0, NULL, &v); }

static void expect_error(og_status got, og_status want, const char *a, const char *b)
{
    H_CHECK(got == want);
    const char *msg = og_last_error();
    H_CHECK(strstr(msg, "n0") != NULL);
    if (a) H_CHECK(strstr(msg, a) != NULL);
    if (b) H_CHECK(strstr(msg, b) != NULL);
    if (got != want || (a && !strstr(msg, a)) || (b && !strstr(msg, b)))
        fprintf(stderr, "  status %s, message: %s\n", og_status_name(got), msg);
}

/* Momentum, standard mode, two tensors (X1 [2], X2 [1]); alpha 0.9, beta 0.5, norm 0.1,
 * R 0.1.  G_reg = 0.1 X + G = {0.6, 0.8}, {-0.7}.
 *  T = 1: V_new = 0.9 V + 0.5 G_reg = {1.2, 0.4}, {1.45}; X_new = X - 0.1 V_new.
 *  T = 0: beta counts as 1: V_new = {1.5, 0.8}, {1.1}. */
static void test_momentum_standard(og_dtype dt, int64_t t)
{
    og_graph *g;
    o_node(&g, "Momentum", 8, 4);
    h_attr_float(g, "alpha", 0.9f);
    h_attr_float(g, "beta", 0.5f);
    h_attr_float(g, "norm_coefficient", 0.1f);
    h_attr_string(g, "mode", "standard");
    int64_t d1[] = {2}, d2[] = {1};
    double x1[] = {1, -2}, g1[] = {0.5, 1}, v1[] = {1, 0}, x2[] = {3}, g2[] = {-1}, v2[] = {2};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.1),   scalar(OG_INT64, (double)t),
                       h_tensor(dt, 1, d1, x1), h_tensor(dt, 1, d2, x2),
                       h_tensor(dt, 1, d1, g1), h_tensor(dt, 1, d2, g2),
                       h_tensor(dt, 1, d1, v1), h_tensor(dt, 1, d2, v2)};
    og_tensor *out[4];
    bool want[] = {true, true, true, true};
    H_CHECK(o_run(g, in, want, out, true, 1) == OG_OK);
    double tol = dt == OG_FLOAT ? 1e-6 : 1e-7; /* the attributes are float32 */
    if (t > 0) {
        double xn1[] = {0.88, -2.04}, xn2[] = {2.855}, vn1[] = {1.2, 0.4}, vn2[] = {1.45};
        h_expect("momentum X1_new", out[0], 2, xn1, tol);
        h_expect("momentum X2_new", out[1], 1, xn2, tol);
        h_expect("momentum V1_new", out[2], 2, vn1, tol);
        h_expect("momentum V2_new", out[3], 1, vn2, tol);
    } else {
        double xn1[] = {0.85, -2.08}, xn2[] = {2.89}, vn1[] = {1.5, 0.8}, vn2[] = {1.1};
        h_expect("momentum T=0 X1_new", out[0], 2, xn1, tol);
        h_expect("momentum T=0 X2_new", out[1], 1, xn2, tol);
        h_expect("momentum T=0 V1_new", out[2], 2, vn1, tol);
        h_expect("momentum T=0 V2_new", out[3], 1, vn2, tol);
    }
    for (int j = 0; j < 4; j++) H_CHECK(out[j] && out[j]->dtype == dt);
    h_free(g, in, 8);
    h_free(NULL, out, 4);
}

/* Nesterov, float64, R 0.1 given as double: G_reg = {0.6, 0.8}, V_new = {1.2, 0.4},
 * X_new = X - 0.1 (G_reg + 0.9 V_new) = {1 - 0.168, -2 - 0.116}. */
static void test_momentum_nesterov(void)
{
    og_graph *g;
    o_node(&g, "Momentum", 5, 2);
    h_attr_float(g, "alpha", 0.9f);
    h_attr_float(g, "beta", 0.5f);
    h_attr_float(g, "norm_coefficient", 0.1f);
    h_attr_string(g, "mode", "nesterov");
    int64_t d[] = {2};
    double x[] = {1, -2}, gr[] = {0.5, 1}, v[] = {1, 0};
    og_tensor *in[] = {scalar(OG_DOUBLE, 0.1), scalar(OG_INT64, 3), h_tensor(OG_DOUBLE, 1, d, x),
                       h_tensor(OG_DOUBLE, 1, d, gr), h_tensor(OG_DOUBLE, 1, d, v)};
    og_tensor *out[2];
    bool want[] = {true, true};
    H_CHECK(o_run(g, in, want, out, true, 1) == OG_OK);
    /* attributes are float32 in the model: 0.9f and 0.1f are not 0.9 and 0.1 exactly */
    double xn[] = {0.832, -2.116}, vn[] = {1.2, 0.4};
    h_expect("nesterov X_new", out[0], 2, xn, 1e-7);
    h_expect("nesterov V_new", out[1], 2, vn, 1e-7);
    H_CHECK(out[0] && out[0]->dtype == OG_DOUBLE);
    h_free(g, in, 5);
    h_free(NULL, out, 2);
}

/* Adagrad: R 0.5, T 2, decay 0.5 -> r = 0.5 / (1 + 2 * 0.5) = 0.25; norm 0.5, epsilon 1.
 * X {2, 1}, G {2, 1.5} -> G_reg = {3, 2}; H {7, 12} -> H_new = {16, 16}, sqrt + eps = 5;
 * X_new = X - 0.25 G_reg / 5 = {1.85, 0.9}. */
static void test_adagrad(og_dtype dt)
{
    og_graph *g;
    o_node(&g, "Adagrad", 5, 2);
    h_attr_float(g, "decay_factor", 0.5f);
    h_attr_float(g, "epsilon", 1.0f);
    h_attr_float(g, "norm_coefficient", 0.5f);
    int64_t d[] = {2, 1};
    double x[] = {2, 1}, gr[] = {2, 1.5}, h[] = {7, 12};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.5), scalar(OG_INT64, 2), h_tensor(dt, 2, d, x),
                       h_tensor(dt, 2, d, gr), h_tensor(dt, 2, d, h)};
    og_tensor *out[2];
    bool want[] = {true, true};
    H_CHECK(o_run(g, in, want, out, true, 1) == OG_OK);
    double xn[] = {1.85, 0.9}, hn[] = {16, 16};
    double tol = dt == OG_FLOAT ? 1e-6 : 1e-14;
    h_expect("adagrad X_new", out[0], 2, xn, tol);
    h_expect("adagrad H_new", out[1], 2, hn, tol);
    H_CHECK(out[0] && out[0]->rank == 2 && out[0]->dims[0] == 2 && out[0]->dims[1] == 1);
    h_free(g, in, 5);
    h_free(NULL, out, 2);
}

/* Adam: alpha 0.5, beta 0.75, epsilon 1, norm 0.5, norm_post 0.1, R 0.3.
 * X {2, -2}, G {1, -1} -> G_reg = {2, -2}; V {1, -1} -> V_new = 0.5 V + 0.5 G_reg =
 * {1.5, -1.5}; H {4, 4} -> H_new = 0.75 H + 0.25 G_reg^2 = {4, 4}, sqrt + eps = 3.
 * T = 2: r = 0.3 sqrt(1 - 0.75^2) / (1 - 0.5^2) = 0.4 sqrt(0.4375); T = 0: r = 0.3.
 * X_new = 0.9 (X - r V_new / 3) = {1.8 - 0.45 r, -1.8 + 0.45 r}. */
static void test_adam(og_dtype dt, int64_t t)
{
    og_graph *g;
    o_node(&g, "Adam", 6, 3);
    h_attr_float(g, "alpha", 0.5f);
    h_attr_float(g, "beta", 0.75f);
    h_attr_float(g, "epsilon", 1.0f);
    h_attr_float(g, "norm_coefficient", 0.5f);
    h_attr_float(g, "norm_coefficient_post", 0.1f);
    int64_t d[] = {2};
    double x[] = {2, -2}, gr[] = {1, -1}, v[] = {1, -1}, h[] = {4, 4};
    og_tensor *in[] = {scalar(OG_DOUBLE, 0.3), scalar(OG_INT64, (double)t), h_tensor(dt, 1, d, x),
                       h_tensor(dt, 1, d, gr), h_tensor(dt, 1, d, v),       h_tensor(dt, 1, d, h)};
    og_tensor *out[3];
    bool want[] = {true, true, true};
    H_CHECK(o_run(g, in, want, out, true, 1) == OG_OK);
    double r = t > 0 ? 0.4 * sqrt(0.4375) : 0.3;
    /* norm_coefficient_post is 0.1f: keep its float error out of the float64 check */
    double post = 1 - (double)0.1f;
    double xn[] = {post * (2 - r / 2), post * (-2 + r / 2)}, vn[] = {1.5, -1.5}, hn[] = {4, 4};
    double tol = dt == OG_FLOAT ? 1e-6 : 1e-14;
    h_expect("adam X_new", out[0], 2, xn, tol);
    h_expect("adam V_new", out[1], 2, vn, tol);
    h_expect("adam H_new", out[2], 2, hn, tol);
    if (dt == OG_DOUBLE && t == 2) { /* the rounded hand values, as a check on the above */
        double approx[] = {1.68094, -1.68094};
        h_expect("adam X_new approx", out[0], 2, approx, 1e-5);
    }
    h_free(g, in, 6);
    h_free(NULL, out, 3);
}

/* Adam on 70001 elements (many blocks, a partial last one, two threads) with V_new
 * omitted, against the formula evaluated in double. */
static void test_adam_large(void)
{
    og_graph *g;
    o_node(&g, "Adam", 6, 3);
    h_attr_float(g, "norm_coefficient", 0.01f);
    h_attr_float(g, "norm_coefficient_post", 0.001f);
    enum { N = 70001 };
    int64_t d[] = {N};
    double *vals = malloc(4 * N * sizeof *vals);
    H_CHECK(vals != NULL);
    if (!vals) return;
    for (int i = 0; i < 4 * N; i++) vals[i] = sin(0.37 * i) * (i % 4 == 3 ? 1 : 2);
    double *xv = vals, *gv = vals + N, *vv = vals + 2 * N, *hv = vals + 3 * N;
    for (int i = 0; i < N; i++) hv[i] = fabs(hv[i]);
    og_tensor *in[] = {scalar(OG_FLOAT, 0.01),       scalar(OG_INT64, 5),
                       h_tensor(OG_FLOAT, 1, d, xv), h_tensor(OG_FLOAT, 1, d, gv),
                       h_tensor(OG_FLOAT, 1, d, vv), h_tensor(OG_FLOAT, 1, d, hv)};
    og_tensor *out[3];
    bool want[] = {true, false, true};
    og_status st = o_run(g, in, want, out, true, 2);
    if (st) fprintf(stderr, "adam large: %s\n", og_last_error());
    H_CHECK(st == OG_OK);
    H_CHECK(out[1] == NULL);
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
        H_CHECK(bad == 0);
    }
    free(vals);
    h_free(g, in, 6);
    h_free(NULL, out, 3);
}

/* ---- bad input ------------------------------------------------------------------- */

/* Momentum with R, T, X1, G1, V1, X2: not 2 + 3n inputs. */
static void test_bad_count(void)
{
    og_graph *g;
    o_node(&g, "Momentum", 6, 2);
    h_attr_float(g, "alpha", 0.9f);
    h_attr_float(g, "beta", 0.5f);
    h_attr_float(g, "norm_coefficient", 0);
    h_attr_string(g, "mode", "standard");
    int64_t d[] = {2};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.1),          scalar(OG_INT64, 0),
                       h_tensor(OG_FLOAT, 1, d, NULL), h_tensor(OG_FLOAT, 1, d, NULL),
                       h_tensor(OG_FLOAT, 1, d, NULL), h_tensor(OG_FLOAT, 1, d, NULL)};
    og_tensor *out[2];
    bool want[] = {true, true};
    expect_error(o_run(g, in, want, out, true, 1), OG_ERR_MODEL, "has 6 inputs", "2 + 3 n");
    h_free(g, in, 6);
    h_free(NULL, out, 2);
}

/* Adam with 2 tensors but 4 outputs instead of 6. */
static void test_bad_output_count(void)
{
    og_graph *g;
    o_node(&g, "Adam", 10, 4);
    og_tensor *in[10];
    int64_t d[] = {1};
    in[0] = scalar(OG_FLOAT, 0.1);
    in[1] = scalar(OG_INT64, 0);
    for (int i = 2; i < 10; i++) in[i] = h_tensor(OG_FLOAT, 1, d, NULL);
    og_tensor *out[4];
    bool want[] = {true, true, true, true};
    expect_error(o_run(g, in, want, out, true, 1), OG_ERR_MODEL, "has 4 outputs", "expected 6");
    h_free(g, in, 10);
    h_free(NULL, out, 4);
}

/* Adagrad whose G2 has another shape than X2: caught at load and, with the shapes unknown
 * there, at run time. */
static void test_bad_shape(bool static_shapes)
{
    og_graph *g;
    o_node(&g, "Adagrad", 8, 4);
    int64_t d1[] = {2}, d2[] = {3}, d3[] = {4};
    og_tensor *in[] = {scalar(OG_FLOAT, 0.1),           scalar(OG_INT64, 0),
                       h_tensor(OG_FLOAT, 1, d1, NULL), h_tensor(OG_FLOAT, 1, d2, NULL),
                       h_tensor(OG_FLOAT, 1, d1, NULL), h_tensor(OG_FLOAT, 1, d3, NULL),
                       h_tensor(OG_FLOAT, 1, d1, NULL), h_tensor(OG_FLOAT, 1, d2, NULL)};
    og_tensor *out[4];
    bool want[] = {true, true, true, true};
    expect_error(o_run(g, in, want, out, static_shapes, 1), OG_ERR_SHAPE, "input 5 (G2)",
                 "X2's shape [3]");
    h_free(g, in, 8);
    h_free(NULL, out, 4);
}

/* Adam with R of shape [2]; Momentum with a float T; Adam with V of another type. */
static void test_bad_scalars_and_types(void)
{
    og_graph *g;
    int64_t d[] = {2};
    o_node(&g, "Adam", 6, 3);
    og_tensor *in[] = {h_tensor(OG_FLOAT, 1, d, NULL),  scalar(OG_INT64, 0),
                       h_tensor(OG_FLOAT, 1, d, NULL),  h_tensor(OG_FLOAT, 1, d, NULL),
                       h_tensor(OG_DOUBLE, 1, d, NULL), h_tensor(OG_FLOAT, 1, d, NULL)};
    og_tensor *out[3];
    bool want[] = {true, true, true};
    expect_error(o_run(g, in, want, out, true, 1), OG_ERR_SHAPE, "input 0 (R)", "scalar");
    h_free(g, in, 6);
    h_free(NULL, out, 3);

    o_node(&g, "Adam", 6, 3);
    og_tensor *in2[] = {scalar(OG_FLOAT, 0.1),           scalar(OG_INT64, 0),
                        h_tensor(OG_FLOAT, 1, d, NULL),  h_tensor(OG_FLOAT, 1, d, NULL),
                        h_tensor(OG_DOUBLE, 1, d, NULL), h_tensor(OG_FLOAT, 1, d, NULL)};
    expect_error(o_run(g, in2, want, out, true, 1), OG_ERR_TYPE, "input 4 (V)", "float64");
    h_free(g, in2, 6);
    h_free(NULL, out, 3);

    o_node(&g, "Momentum", 5, 2);
    h_attr_float(g, "alpha", 0.9f);
    h_attr_float(g, "beta", 0.5f);
    h_attr_float(g, "norm_coefficient", 0);
    h_attr_string(g, "mode", "standard");
    og_tensor *in3[] = {scalar(OG_FLOAT, 0.1), scalar(OG_FLOAT, 0), h_tensor(OG_FLOAT, 1, d, NULL),
                        h_tensor(OG_FLOAT, 1, d, NULL), h_tensor(OG_FLOAT, 1, d, NULL)};
    /* at run time only: the static check would say the same */
    expect_error(o_run(g, in3, want, out, false, 1), OG_ERR_TYPE, "input 1 (T)", "int64");
    h_free(g, in3, 5);
    h_free(NULL, out, 2);
}

/* Momentum with mode "heavy", and one without its required alpha. */
static void test_bad_attributes(void)
{
    int64_t d[] = {1};
    for (int k = 0; k < 2; k++) {
        og_graph *g;
        o_node(&g, "Momentum", 5, 2);
        if (k == 1) h_attr_float(g, "alpha", 0.9f);
        h_attr_float(g, "beta", 0.5f);
        h_attr_float(g, "norm_coefficient", 0);
        h_attr_string(g, "mode", k == 1 ? "heavy" : "standard");
        og_tensor *in[] = {scalar(OG_FLOAT, 0.1), scalar(OG_INT64, 0),
                           h_tensor(OG_FLOAT, 1, d, NULL), h_tensor(OG_FLOAT, 1, d, NULL),
                           h_tensor(OG_FLOAT, 1, d, NULL)};
        og_tensor *out[2];
        bool want[] = {true, true};
        if (k == 0)
            expect_error(o_run(g, in, want, out, true, 1), OG_ERR_MODEL, "'alpha'", "missing");
        else
            expect_error(o_run(g, in, want, out, true, 1), OG_ERR_MODEL, "'heavy'", "nesterov");
        h_free(g, in, 5);
        h_free(NULL, out, 2);
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
    if (h_failures) fprintf(stderr, "test_optim: %d failures\n", h_failures);
    return h_failures != 0;
}
