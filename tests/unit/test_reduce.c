/* The reduce family one node at a time: a hand-built graph, static inference, then the
 * run-time infer and the CPU kernel called directly, against naive loops.  Also the error
 * paths (bad axes, K, empty ArgMax axis).  `test_reduce bench` times a few kernels. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/kernel.h"
#include "test.h"

/* ---- building one node ------------------------------------------------------------ */

static og_attr *new_attr(og_graph *g, og_node *n, const char *name, og_attr_type type)
{
    n->attrs = og_realloc(g->alloc, n->attrs, (size_t)n->n_attrs * sizeof *n->attrs,
                          (size_t)(n->n_attrs + 1) * sizeof *n->attrs);
    og_attr *a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = og_strdup(g->alloc, name);
    a->type = type;
    return a;
}

static void attr_int(og_graph *g, const char *name, int64_t v)
{
    new_attr(g, &g->nodes[0], name, OG_ATTR_INT)->i = v;
}

static void attr_ints(og_graph *g, const char *name, const int64_t *v, int n)
{
    og_attr *a = new_attr(g, &g->nodes[0], name, OG_ATTR_INTS);
    a->n = n;
    a->ints = og_malloc(g->alloc, (size_t)(n ? n : 1) * sizeof *v);
    memcpy(a->ints, v, (size_t)n * sizeof *v);
}

/* A graph with one node `op` (opset `opset`) of n_in inputs x0.. and n_out outputs y0..;
 * input 0 gets dtype and shape; attributes are added before resolve (see finish). */
static og_graph *node_graph(const char *op, int opset, int n_in, int n_out)
{
    og_graph *g = og_graph_new(NULL);
    g->opsets = og_calloc(g->alloc, 1, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(g->alloc, "");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    char name[16];
    g->inputs = og_malloc(g->alloc, (size_t)n_in * sizeof *g->inputs);
    g->outputs = og_malloc(g->alloc, (size_t)n_out * sizeof *g->outputs);
    for (int i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "x%d", i);
        int v = og_graph_add_value(g, name);
        g->values[v].kind = OG_VALUE_INPUT;
        g->values[v].is_graph_input = true;
        g->inputs[g->n_inputs++] = v;
    }
    for (int j = 0; j < n_out; j++) {
        snprintf(name, sizeof name, "y%d", j);
        int v = og_graph_add_value(g, name);
        g->values[v].is_graph_output = true;
        g->outputs[g->n_outputs++] = v;
    }
    og_node *n = og_graph_add_node(g, op, "", "n", n_in, n_out);
    for (int i = 0; i < n_in; i++) n->in[i] = i;
    for (int j = 0; j < n_out; j++) n->out[j] = n_in + j;
    return g;
}

static og_status finish(og_graph *g, const og_tensor *const *in)
{
    for (int i = 0; i < g->nodes[0].n_in; i++) {
        og_value *v = &g->values[i];
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->dims, sizeof v->dims);
    }
    og_status st = og_graph_finalize(g);
    return st ? st : og_graph_resolve(g, true);
}

/* Run-time infer + kernel; out[] receives new tensors. */
static og_status run_node(og_graph *g, const og_tensor *const *in, og_tensor **out, int threads)
{
    og_node *n = &g->nodes[0];
    og_vinfo vin[4], vout[4];
    for (int i = 0; i < n->n_in; i++) {
        og_vinfo_set(&vin[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        vin[i].value = in[i];
    }
    for (int j = 0; j < n->n_out; j++) og_vinfo_unknown(&vout[j]);
    og_op_ctx c = {n, g->alloc, NULL, true};
    og_status st = n->op->infer(&c, vin, n->n_in, vout, n->n_out);
    if (st) return st;
    for (int j = 0; j < n->n_out; j++) {
        st = og_tensor_create(vout[j].dtype, vout[j].rank, vout[j].dims, NULL, &out[j]);
        if (st) return st;
    }
    og_kernel_ctx k = {n, n->params, g->alloc, threads, NULL, 0};
    return og_cpu_kernel_find("", n->op_type)(&k, in, n->n_in, out, n->n_out);
}

static og_tensor *tensor(og_dtype t, int rank, const int64_t *dims)
{
    og_tensor *x = NULL;
    og_tensor_create(t, rank, dims, NULL, &x);
    return x;
}

static og_tensor *ints1(int n, const int64_t *v)
{
    int64_t d = n;
    og_tensor *t = tensor(OG_INT64, 1, &d);
    memcpy(t->data, v, (size_t)n * sizeof *v);
    return t;
}

/* deterministic small values; `ties` makes repeats */
static void fill(og_tensor *t, bool ties)
{
    uint32_t s = 12345;
    for (int64_t i = 0; i < t->numel; i++) {
        s = s * 1103515245u + 12345u;
        int v = (int)((s >> 16) % (ties ? 3 : 1000)) - (ties ? 1 : 500);
        switch (t->dtype) {
        case OG_FLOAT: ((float *)t->data)[i] = (float)v / 100.0f; break;
        case OG_DOUBLE: ((double *)t->data)[i] = v / 100.0; break;
        case OG_INT32: ((int32_t *)t->data)[i] = v; break;
        case OG_INT64: ((int64_t *)t->data)[i] = v; break;
        default: break;
        }
    }
}

static double get(const og_tensor *t, int64_t i) { return og_tensor_get_f64(t, i); }

static void free_all(og_graph *g, og_tensor **ts, int n)
{
    for (int i = 0; i < n; i++) og_tensor_free(ts[i]);
    og_graph_free(g);
}

/* ---- correctness ------------------------------------------------------------------ */

/* ReduceSum over axis 1 of [2,3,4] (strided path), axes as input, keepdims 0. */
static void test_sum_axis1(void)
{
    int64_t d[] = {2, 3, 4}, ax[] = {1};
    og_tensor *x = tensor(OG_FLOAT, 3, d), *a = ints1(1, ax), *y[1] = {0};
    fill(x, false);
    const og_tensor *in[] = {x, a};
    og_graph *g = node_graph("ReduceSum", 13, 2, 1);
    attr_int(g, "keepdims", 0);
    CHECK_OK(finish(g, in));
    CHECK(g->values[2].rank == -1); /* axes unknown at load, keepdims 0: rank unknown */
    CHECK_OK(run_node(g, in, y, 1));
    CHECK(y[0] && y[0]->rank == 2);
    for (int i = 0; y[0] && i < 2; i++)
        for (int k = 0; k < 4; k++) {
            double s = 0;
            for (int j = 0; j < 3; j++) s += get(x, i * 12 + j * 4 + k);
            CHECK(fabs(get(y[0], i * 4 + k) - s) < 1e-5);
        }
    og_tensor *all[] = {x, a, y[0]};
    free_all(g, all, 3);
}

/* Axis 0 of [3000, 50] with 4 threads: the row bands reduce apart, then combine. */
static void test_split_columns(void)
{
    const char *ops[] = {"ReduceSum", "ReduceMax", "ReduceL2"};
    for (int op = 0; op < 3; op++) {
        int64_t d[] = {3000, 50}, ax[] = {0};
        og_tensor *x = tensor(OG_FLOAT, 2, d), *a = ints1(1, ax), *y[1] = {0};
        fill(x, false);
        const og_tensor *in[] = {x, a};
        og_graph *g = node_graph(ops[op], 18, 2, 1);
        attr_int(g, "keepdims", 0);
        CHECK_OK(finish(g, in));
        CHECK_OK(run_node(g, in, y, 4));
        for (int i = 0; y[0] && i < 50; i++) {
            double s = op == 1 ? -1e30 : 0;
            for (int r = 0; r < 3000; r++) {
                double v = get(x, r * 50 + i);
                s = op == 0 ? s + v : op == 1 ? fmax(s, v) : s + v * v;
            }
            if (op == 2) s = sqrt(s);
            CHECK(fabs(get(y[0], i) - s) <= 1e-4 * fmax(1, fabs(s)));
        }
        og_tensor *all[] = {x, a, y[0]};
        free_all(g, all, 3);
    }
}

/* ReduceMean over axes 0 and 2 (apart: the permuting path), keepdims 1, opset 18. */
static void test_mean_apart(void)
{
    int64_t d[] = {3, 5, 7}, ax[] = {0, -1};
    og_tensor *x = tensor(OG_DOUBLE, 3, d), *a = ints1(2, ax), *y[1] = {0};
    fill(x, false);
    const og_tensor *in[] = {x, a};
    og_graph *g = node_graph("ReduceMean", 18, 2, 1);
    CHECK_OK(finish(g, in));
    CHECK_OK(run_node(g, in, y, 2));
    CHECK(y[0] && y[0]->rank == 3 && y[0]->dims[0] == 1 && y[0]->dims[1] == 5);
    for (int j = 0; y[0] && j < 5; j++) {
        double s = 0;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 7; k++) s += get(x, i * 35 + j * 7 + k);
        CHECK(fabs(get(y[0], j) - s / 21) < 1e-12);
    }
    og_tensor *all[] = {x, a, y[0]};
    free_all(g, all, 3);
}

/* ReduceMax (opset 11: axes attribute) and ReduceProd of an empty set. */
static void test_max_attr_and_empty(void)
{
    int64_t d[] = {4, 6}, ax[] = {-1};
    og_tensor *x = tensor(OG_INT32, 2, d), *y[1] = {0};
    fill(x, false);
    const og_tensor *in[] = {x};
    og_graph *g = node_graph("ReduceMax", 11, 1, 1);
    attr_ints(g, "axes", ax, 1);
    CHECK_OK(finish(g, in));
    CHECK_OK(run_node(g, in, y, 1));
    for (int i = 0; y[0] && i < 4; i++) {
        double m = -1e9;
        for (int k = 0; k < 6; k++) m = fmax(m, get(x, i * 6 + k));
        CHECK(get(y[0], i) == m);
    }
    og_tensor *all[] = {x, y[0]};
    free_all(g, all, 2);

    int64_t de[] = {2, 0, 3}, axe[] = {1};
    og_tensor *e = tensor(OG_FLOAT, 3, de), *ae = ints1(1, axe), *ye[1] = {0};
    const og_tensor *ine[] = {e, ae};
    g = node_graph("ReduceProd", 18, 2, 1);
    CHECK_OK(finish(g, ine));
    CHECK_OK(run_node(g, ine, ye, 1));
    CHECK(ye[0] && ye[0]->numel == 6 && ((float *)ye[0]->data)[5] == 1.0f);
    og_tensor *alle[] = {e, ae, ye[0]};
    free_all(g, alle, 3);
}

/* Softmax along a middle axis (13) and the legacy 2-D coercion (11). */
static void test_softmax(void)
{
    int64_t d[] = {2, 3, 4};
    for (int legacy = 0; legacy < 2; legacy++) {
        og_tensor *x = tensor(OG_FLOAT, 3, d), *y[1] = {0};
        fill(x, false);
        const og_tensor *in[] = {x};
        og_graph *g = node_graph(legacy ? "LogSoftmax" : "Softmax", legacy ? 11 : 13, 1, 1);
        attr_int(g, "axis", 1);
        CHECK_OK(finish(g, in));
        CHECK_OK(run_node(g, in, y, 1));
        for (int i = 0; y[0] && i < 2; i++) {
            if (legacy) { /* log-softmax over the 12 trailing values */
                double m = -1e30, s = 0;
                for (int j = 0; j < 12; j++) m = fmax(m, get(x, i * 12 + j));
                for (int j = 0; j < 12; j++) s += exp(get(x, i * 12 + j) - m);
                for (int j = 0; j < 12; j++)
                    CHECK(fabs(get(y[0], i * 12 + j) - (get(x, i * 12 + j) - m - log(s))) < 1e-5);
                continue;
            }
            for (int k = 0; k < 4; k++) {
                double s = 0, e[3];
                for (int j = 0; j < 3; j++) s += e[j] = exp(get(x, i * 12 + j * 4 + k));
                for (int j = 0; j < 3; j++)
                    CHECK(fabs(get(y[0], i * 12 + j * 4 + k) - e[j] / s) < 1e-6);
            }
        }
        og_tensor *all[] = {x, y[0]};
        free_all(g, all, 2);
    }
}

/* Masked (-inf) entries get 0; a NaN row gives NaN, without undefined behaviour. */
static void test_softmax_special(void)
{
    int64_t d[] = {2, 40};
    og_tensor *x = tensor(OG_FLOAT, 2, d), *y[1] = {0};
    float *xv = x->data;
    for (int j = 0; j < 40; j++) {
        xv[j] = j % 2 ? -INFINITY : 0.0f;
        xv[40 + j] = j == 7 ? NAN : 1.0f;
    }
    const og_tensor *in[] = {x};
    og_graph *g = node_graph("Softmax", 13, 1, 1);
    CHECK_OK(finish(g, in));
    CHECK_OK(run_node(g, in, y, 1));
    float *yv = y[0] ? y[0]->data : xv;
    CHECK(fabsf(yv[0] - 0.05f) < 1e-6f && yv[1] < 1e-30f && isnan(yv[47]));
    og_tensor *all[] = {x, y[0]};
    free_all(g, all, 2);
}

/* ArgMin with ties and select_last_index; CumSum exclusive+reverse; TopK with ties. */
static void test_arg_cumsum_topk(void)
{
    int64_t d[] = {1, 5};
    og_tensor *x = tensor(OG_INT32, 2, d), *y[2] = {0};
    int32_t xv[] = {2, 0, 3, 0, 1};
    memcpy(x->data, xv, sizeof xv);
    const og_tensor *in[] = {x};
    og_graph *g = node_graph("ArgMin", 13, 1, 1);
    attr_int(g, "axis", -1);
    attr_int(g, "select_last_index", 1);
    CHECK_OK(finish(g, in));
    CHECK_OK(run_node(g, in, y, 1));
    CHECK(y[0] && y[0]->dtype == OG_INT64 && ((int64_t *)y[0]->data)[0] == 3);
    og_tensor_free(y[0]);
    og_graph_free(g);

    /* CumSum: [2,0,3,0,1] exclusive reverse -> [4,4,1,1,0] */
    int64_t axv = 1;
    og_tensor *a = tensor(OG_INT64, 0, NULL);
    memcpy(a->data, &axv, sizeof axv);
    const og_tensor *inc[] = {x, a};
    g = node_graph("CumSum", 14, 2, 1);
    attr_int(g, "exclusive", 1);
    attr_int(g, "reverse", 1);
    CHECK_OK(finish(g, inc));
    CHECK_OK(run_node(g, inc, y, 1));
    int32_t want[] = {4, 4, 1, 1, 0};
    CHECK(y[0] && memcmp(y[0]->data, want, sizeof want) == 0);
    og_tensor_free(y[0]);
    og_graph_free(g);

    /* TopK smallest 3 of [2,0,3,0,1] -> values [0,0,1], indices [1,3,4] */
    int64_t kv = 3;
    og_tensor *k = ints1(1, &kv);
    const og_tensor *ink[] = {x, k};
    g = node_graph("TopK", 11, 2, 2);
    attr_int(g, "largest", 0);
    CHECK_OK(finish(g, ink));
    CHECK_OK(run_node(g, ink, y, 1));
    int32_t wv[] = {0, 0, 1};
    int64_t wi[] = {1, 3, 4};
    CHECK(y[0] && y[1] && memcmp(y[0]->data, wv, sizeof wv) == 0 &&
          memcmp(y[1]->data, wi, sizeof wi) == 0);
    og_tensor *all[] = {x, a, k, y[0], y[1]};
    free_all(g, all, 5);
}

/* Integer sums wrap (two's complement) rather than overflow. */
static void test_int_wrap(void)
{
    int64_t d[] = {2};
    og_tensor *x = tensor(OG_INT32, 1, d), *y[1] = {0};
    ((int32_t *)x->data)[0] = INT32_MAX;
    ((int32_t *)x->data)[1] = 1;
    const og_tensor *in[] = {x};
    og_graph *g = node_graph("ReduceSum", 11, 1, 1);
    attr_int(g, "keepdims", 0);
    CHECK_OK(finish(g, in));
    CHECK_OK(run_node(g, in, y, 1));
    CHECK(y[0] && y[0]->rank == 0 && ((int32_t *)y[0]->data)[0] == INT32_MIN);
    og_tensor_free(y[0]);
    og_graph_free(g);

    og_tensor *x64 = tensor(OG_INT64, 1, d), *a = tensor(OG_INT64, 0, NULL);
    ((int64_t *)x64->data)[0] = INT64_MAX;
    ((int64_t *)x64->data)[1] = 1;
    const og_tensor *inc[] = {x64, a};
    g = node_graph("CumSum", 11, 2, 1);
    CHECK_OK(finish(g, inc));
    CHECK_OK(run_node(g, inc, y, 1));
    CHECK(y[0] && ((int64_t *)y[0]->data)[1] == INT64_MIN);
    og_tensor *all[] = {x, x64, a, y[0]};
    free_all(g, all, 4);
}

/* Bad values fail with a message, at load when known, at run time otherwise. */
static void test_errors(void)
{
    int64_t d[] = {2, 3, 4}, bad[] = {3};
    og_tensor *x = tensor(OG_FLOAT, 3, d), *a = ints1(1, bad), *y[2] = {0};
    const og_tensor *in[] = {x, a};
    og_graph *g = node_graph("ReduceSum", 13, 2, 1);
    CHECK_OK(finish(g, in)); /* axes not a known constant at load */
    og_status st = run_node(g, in, y, 1);
    CHECK(st == OG_ERR_RUNTIME && strstr(og_last_error(), "out of range for rank 3"));
    og_graph_free(g);

    g = node_graph("ReduceL2", 11, 1, 1);
    attr_ints(g, "axes", bad, 1);
    CHECK(finish(g, in) == OG_ERR_MODEL && strstr(og_last_error(), "attribute 'axes'"));
    og_graph_free(g);

    int64_t k = 5;
    og_tensor *kt = ints1(1, &k);
    const og_tensor *ink[] = {x, kt};
    g = node_graph("TopK", 11, 2, 2);
    CHECK_OK(finish(g, ink));
    st = run_node(g, ink, y, 1);
    CHECK(st == OG_ERR_RUNTIME && strstr(og_last_error(), "larger than dim 4"));
    og_graph_free(g);

    int64_t de[] = {2, 0};
    og_tensor *e = tensor(OG_FLOAT, 2, de);
    const og_tensor *ine[] = {e};
    g = node_graph("ArgMax", 13, 1, 1);
    attr_int(g, "axis", 1);
    CHECK(finish(g, ine) == OG_ERR_SHAPE && strstr(og_last_error(), "empty axis"));
    og_graph_free(g);

    int64_t axv = -4;
    og_tensor *ca = tensor(OG_INT64, 0, NULL);
    memcpy(ca->data, &axv, sizeof axv);
    const og_tensor *inc[] = {x, ca};
    g = node_graph("CumSum", 14, 2, 1);
    CHECK_OK(finish(g, inc));
    st = run_node(g, inc, y, 1);
    CHECK(st != OG_OK && strstr(og_last_error(), "input 1 (axis)"));
    og_graph_free(g);
    og_tensor *all[] = {x, a, kt, e, ca};
    for (int i = 0; i < 5; i++) og_tensor_free(all[i]);
}

/* ---- bench ------------------------------------------------------------------------ */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void bench_one(const char *label, const char *op, int opset, int rank, const int64_t *d,
                      const int64_t *axes, int n_axes, int threads)
{
    og_tensor *x = tensor(OG_FLOAT, rank, d), *a = axes ? ints1(n_axes, axes) : NULL;
    og_tensor *y[2] = {0};
    fill(x, false);
    const og_tensor *in[] = {x, a};
    og_graph *g = node_graph(op, opset, a ? 2 : 1, 1);
    if (!a) attr_int(g, "axis", -1);
    CHECK_OK(finish(g, in));
    CHECK_OK(run_node(g, in, y, threads));
    og_node *n = &g->nodes[0];
    og_kernel_ctx k = {n, n->params, g->alloc, threads, NULL, 0};
    og_kernel_fn fn = og_cpu_kernel_find("", op);
    double best = 1e9;
    for (int r = 0; r < 20; r++) {
        double t = now();
        fn(&k, in, n->n_in, y, 1);
        t = now() - t;
        if (t < best) best = t;
    }
    printf("%-24s %8.3f ms\n", label, best * 1e3);
    og_tensor *all[] = {x, a, y[0]};
    free_all(g, all, 3);
}

static void bench(int threads)
{
    int64_t attn[] = {8, 12, 128, 128}, cls[] = {256, 1000}, mid[] = {32, 100, 512};
    int64_t ln[] = {32, 128, 768}, sp[] = {32, 256, 14, 14}, big[] = {4096, 1024};
    int64_t last[] = {-1}, hw[] = {2, 3}, one[] = {1};
    bench_one("softmax [8,12,128,128]", "Softmax", 13, 4, attn, NULL, 0, threads);
    bench_one("logsoftmax [256,1000]", "LogSoftmax", 13, 2, cls, NULL, 0, threads);
    bench_one("mean last [32,128,768]", "ReduceMean", 18, 3, ln, last, 1, threads);
    bench_one("mean hw [32,256,14,14]", "ReduceMean", 18, 4, sp, hw, 2, threads);
    bench_one("sum ax1 [32,100,512]", "ReduceSum", 13, 3, mid, one, 1, threads);
    bench_one("max last [4096,1024]", "ReduceMax", 18, 2, big, last, 1, threads);
    bench_one("lse last [4096,1024]", "ReduceLogSumExp", 18, 2, big, last, 1, threads);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench(argc > 2 ? atoi(argv[2]) : 1);
        return 0;
    }
    test_sum_axis1();
    test_mean_apart();
    test_split_columns();
    test_max_attr_and_empty();
    test_softmax();
    test_softmax_special();
    test_arg_cumsum_topk();
    test_int_wrap();
    test_errors();
    TEST_DONE();
}
