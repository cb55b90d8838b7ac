/* The reduce family one node at a time (node_harness.h: static inference, then a session's
 * run), against naive loops.  Also the error paths (bad axes, K, empty ArgMax axis).
 * `test_reduce bench` times a few kernels with their bound loops. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <string.h>
#include <time.h>

#include "unit/node_harness.h"

/* ---- building one node ------------------------------------------------------------ */

/* A case of `op` at `opset` over in[0..n_in-1], n_out outputs, `threads` threads. */
static nh_node node(const char *op, int opset, const og_tensor *const *in, int n_in, int n_out,
                    int threads)
{
    nh_node n = {.op = op, .opset = opset, .n_in = n_in, .n_out = n_out, .threads = threads};
    for (int i = 0; i < n_in; i++) n.in[i] = in[i];
    return n;
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

static void free_all(nh_result *r, og_tensor **ts, int n)
{
    nh_free_tensors(ts, n);
    nh_release(r);
}

/* ---- correctness ------------------------------------------------------------------ */

/* ReduceSum over axis 1 of [2,3,4] (strided path), axes as input, keepdims 0. */
static void test_sum_axis1(void)
{
    int64_t d[] = {2, 3, 4}, ax[] = {1};
    og_tensor *x = tensor(OG_FLOAT, 3, d), *a = ints1(1, ax);
    fill(x, false);
    const og_tensor *in[] = {x, a};
    nh_node n = node("ReduceSum", 13, in, 2, 1, 1);
    n.attrs[0] = (nh_attr)NH_INT("keepdims", 0);
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    CHECK(nh_static_out(&r, 0)->rank == -1); /* axes unknown at load, keepdims 0: rank unknown */
    CHECK_OK(nh_exec(&r));
    og_tensor *y = r.out[0];
    CHECK(y && y->rank == 2);
    for (int i = 0; y && i < 2; i++)
        for (int k = 0; k < 4; k++) {
            double s = 0;
            for (int j = 0; j < 3; j++) s += get(x, i * 12 + j * 4 + k);
            CHECK(fabs(get(y, i * 4 + k) - s) < 1e-5);
        }
    og_tensor *all[] = {x, a};
    free_all(&r, all, 2);
}

/* Axis 0 of [3000, 50] with 4 threads: the row bands reduce apart, then combine. */
static void test_split_columns(void)
{
    const char *ops[] = {"ReduceSum", "ReduceMax", "ReduceL2"};
    for (int op = 0; op < 3; op++) {
        int64_t d[] = {3000, 50}, ax[] = {0};
        og_tensor *x = tensor(OG_FLOAT, 2, d), *a = ints1(1, ax);
        fill(x, false);
        const og_tensor *in[] = {x, a};
        nh_node n = node(ops[op], 18, in, 2, 1, 4);
        n.attrs[0] = (nh_attr)NH_INT("keepdims", 0);
        nh_result r;
        CHECK_OK(nh_load(&n, &r));
        CHECK_OK(nh_exec(&r));
        og_tensor *y = r.out[0];
        for (int i = 0; y && i < 50; i++) {
            double s = op == 1 ? -1e30 : 0;
            for (int k = 0; k < 3000; k++) {
                double v = get(x, k * 50 + i);
                s = op == 0 ? s + v : op == 1 ? fmax(s, v) : s + v * v;
            }
            if (op == 2) s = sqrt(s);
            CHECK(fabs(get(y, i) - s) <= 1e-4 * fmax(1, fabs(s)));
        }
        og_tensor *all[] = {x, a};
        free_all(&r, all, 2);
    }
}

/* ReduceMean over axes 0 and 2 (apart: the permuting path), keepdims 1, opset 18. */
static void test_mean_apart(void)
{
    int64_t d[] = {3, 5, 7}, ax[] = {0, -1};
    og_tensor *x = tensor(OG_DOUBLE, 3, d), *a = ints1(2, ax);
    fill(x, false);
    const og_tensor *in[] = {x, a};
    nh_node n = node("ReduceMean", 18, in, 2, 1, 2);
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    og_tensor *y = r.out[0];
    CHECK(y && y->rank == 3 && y->dims[0] == 1 && y->dims[1] == 5);
    for (int j = 0; y && j < 5; j++) {
        double s = 0;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 7; k++) s += get(x, i * 35 + j * 7 + k);
        CHECK(fabs(get(y, j) - s / 21) < 1e-12);
    }
    og_tensor *all[] = {x, a};
    free_all(&r, all, 2);
}

/* ReduceMax (opset 11: axes attribute) and ReduceProd of an empty set. */
static void test_max_attr_and_empty(void)
{
    int64_t d[] = {4, 6};
    og_tensor *x = tensor(OG_INT32, 2, d);
    fill(x, false);
    const og_tensor *in[] = {x};
    nh_node n = node("ReduceMax", 11, in, 1, 1, 1);
    n.attrs[0] = (nh_attr)NH_INTS("axes", -1);
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    for (int i = 0; r.out[0] && i < 4; i++) {
        double m = -1e9;
        for (int k = 0; k < 6; k++) m = fmax(m, get(x, i * 6 + k));
        CHECK(get(r.out[0], i) == m);
    }
    og_tensor *all[] = {x};
    free_all(&r, all, 1);

    int64_t de[] = {2, 0, 3}, axe[] = {1};
    og_tensor *e = tensor(OG_FLOAT, 3, de), *ae = ints1(1, axe);
    const og_tensor *ine[] = {e, ae};
    n = node("ReduceProd", 18, ine, 2, 1, 1);
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    og_tensor *ye = r.out[0];
    CHECK(ye && ye->numel == 6 && ((float *)ye->data)[5] == 1.0f);
    og_tensor *alle[] = {e, ae};
    free_all(&r, alle, 2);
}

/* Softmax along a middle axis (13) and the legacy 2-D coercion (11). */
static void test_softmax(void)
{
    int64_t d[] = {2, 3, 4};
    for (int legacy = 0; legacy < 2; legacy++) {
        og_tensor *x = tensor(OG_FLOAT, 3, d);
        fill(x, false);
        const og_tensor *in[] = {x};
        nh_node n = node(legacy ? "LogSoftmax" : "Softmax", legacy ? 11 : 13, in, 1, 1, 1);
        n.attrs[0] = (nh_attr)NH_INT("axis", 1);
        nh_result r;
        CHECK_OK(nh_load(&n, &r));
        CHECK_OK(nh_exec(&r));
        og_tensor *y = r.out[0];
        for (int i = 0; y && i < 2; i++) {
            if (legacy) { /* log-softmax over the 12 trailing values */
                double m = -1e30, s = 0;
                for (int j = 0; j < 12; j++) m = fmax(m, get(x, i * 12 + j));
                for (int j = 0; j < 12; j++) s += exp(get(x, i * 12 + j) - m);
                for (int j = 0; j < 12; j++)
                    CHECK(fabs(get(y, i * 12 + j) - (get(x, i * 12 + j) - m - log(s))) < 1e-5);
                continue;
            }
            for (int k = 0; k < 4; k++) {
                double s = 0, e[3];
                for (int j = 0; j < 3; j++) s += e[j] = exp(get(x, i * 12 + j * 4 + k));
                for (int j = 0; j < 3; j++)
                    CHECK(fabs(get(y, i * 12 + j * 4 + k) - e[j] / s) < 1e-6);
            }
        }
        og_tensor *all[] = {x};
        free_all(&r, all, 1);
    }
}

/* Masked (-inf) entries get 0; a NaN row gives NaN, without undefined behaviour. */
static void test_softmax_special(void)
{
    int64_t d[] = {2, 40};
    og_tensor *x = tensor(OG_FLOAT, 2, d);
    float *xv = x->data;
    for (int j = 0; j < 40; j++) {
        xv[j] = j % 2 ? -INFINITY : 0.0f;
        xv[40 + j] = j == 7 ? NAN : 1.0f;
    }
    const og_tensor *in[] = {x};
    nh_node n = node("Softmax", 13, in, 1, 1, 1);
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    float *yv = r.out[0] ? r.out[0]->data : xv;
    CHECK(fabsf(yv[0] - 0.05f) < 1e-6f && yv[1] < 1e-30f && isnan(yv[47]));
    og_tensor *all[] = {x};
    free_all(&r, all, 1);
}

/* ArgMin with ties and select_last_index; CumSum exclusive+reverse; TopK with ties. */
/* The narrow and unsigned integer loops at their extremes (issue 12): uint64 values above
 * INT64_MAX through ReduceMax/ReduceMin/ReduceSum (opset 11; the sum wraps mod 2^64), int8 through
 * ArgMin/ArgMax with both index selections. */
static void test_narrow_unsigned(void)
{
    int64_t d[] = {2, 3};
    const uint64_t big = UINT64_MAX - 1, top = (uint64_t)1 << 63;
    const uint64_t xv[] = {1, big, 5, top, 7, top + 2};
    og_tensor *x = nh_tensor_raw(OG_UINT64, 2, d, xv);
    const og_tensor *in[] = {x};
    static const char *const ops[] = {"ReduceMax", "ReduceMin", "ReduceSum"};
    const uint64_t want[3][2] = {{big, top + 2}, {1, 7}, {big + 6, top + top + 9}};
    for (int op = 0; op < 3; op++) {
        nh_node n = node(ops[op], 11, in, 1, 1, 1);
        n.attrs[0] = (nh_attr)NH_INTS("axes", 1);
        n.attrs[1] = (nh_attr)NH_INT("keepdims", 0);
        nh_result r;
        CHECK_OK(nh_load(&n, &r));
        CHECK_OK(nh_exec(&r));
        const og_tensor *y = r.out[0];
        CHECK(y && y->dtype == OG_UINT64 && y->numel == 2);
        for (int i = 0; y && i < 2; i++) CHECK(((const uint64_t *)y->data)[i] == want[op][i]);
        nh_release(&r);
    }
    og_tensor *all[] = {x};
    nh_free_tensors(all, 1);

    const int8_t bv[] = {-128, 127, 0, -128, 127};
    int64_t db = 5;
    og_tensor *b = nh_tensor_raw(OG_INT8, 1, &db, bv);
    const og_tensor *inb[] = {b};
    /* [ArgMax, ArgMin][first, last] */
    const int64_t wantb[2][2] = {{1, 4}, {0, 3}};
    for (int op = 0; op < 2; op++)
        for (int last = 0; last < 2; last++) {
            nh_node n = node(op ? "ArgMin" : "ArgMax", 13, inb, 1, 1, 1);
            n.attrs[0] = (nh_attr)NH_INT("select_last_index", last);
            nh_result r;
            CHECK_OK(nh_load(&n, &r));
            CHECK_OK(nh_exec(&r));
            CHECK(r.out[0] && ((const int64_t *)r.out[0]->data)[0] == wantb[op][last]);
            nh_release(&r);
        }
    og_tensor *allb[] = {b};
    nh_free_tensors(allb, 1);
}

static void test_arg_cumsum_topk(void)
{
    int64_t d[] = {1, 5};
    og_tensor *x = tensor(OG_INT32, 2, d);
    int32_t xv[] = {2, 0, 3, 0, 1};
    memcpy(x->data, xv, sizeof xv);
    const og_tensor *in[] = {x};
    nh_node n = node("ArgMin", 13, in, 1, 1, 1);
    n.attrs[0] = (nh_attr)NH_INT("axis", -1);
    n.attrs[1] = (nh_attr)NH_INT("select_last_index", 1);
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    og_tensor *y = r.out[0];
    CHECK(y && y->dtype == OG_INT64 && ((int64_t *)y->data)[0] == 3);
    nh_release(&r);

    /* CumSum: [2,0,3,0,1] exclusive reverse -> [4,4,1,1,0] */
    int64_t axv = 1;
    og_tensor *a = tensor(OG_INT64, 0, NULL);
    memcpy(a->data, &axv, sizeof axv);
    const og_tensor *inc[] = {x, a};
    n = node("CumSum", 14, inc, 2, 1, 1);
    n.attrs[0] = (nh_attr)NH_INT("exclusive", 1);
    n.attrs[1] = (nh_attr)NH_INT("reverse", 1);
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    int32_t want[] = {4, 4, 1, 1, 0};
    CHECK(r.out[0] && memcmp(r.out[0]->data, want, sizeof want) == 0);
    nh_release(&r);

    /* TopK smallest 3 of [2,0,3,0,1] -> values [0,0,1], indices [1,3,4] */
    int64_t kv = 3;
    og_tensor *k = ints1(1, &kv);
    const og_tensor *ink[] = {x, k};
    n = node("TopK", 11, ink, 2, 2, 1);
    n.attrs[0] = (nh_attr)NH_INT("largest", 0);
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    int32_t wv[] = {0, 0, 1};
    int64_t wi[] = {1, 3, 4};
    CHECK(r.out[0] && r.out[1] && memcmp(r.out[0]->data, wv, sizeof wv) == 0 &&
          memcmp(r.out[1]->data, wi, sizeof wi) == 0);
    og_tensor *all[] = {x, a, k};
    free_all(&r, all, 3);
}

/* Integer sums wrap (two's complement) rather than overflow. */
static void test_int_wrap(void)
{
    int64_t d[] = {2};
    og_tensor *x = tensor(OG_INT32, 1, d);
    ((int32_t *)x->data)[0] = INT32_MAX;
    ((int32_t *)x->data)[1] = 1;
    const og_tensor *in[] = {x};
    nh_node n = node("ReduceSum", 11, in, 1, 1, 1);
    n.attrs[0] = (nh_attr)NH_INT("keepdims", 0);
    nh_result r;
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    og_tensor *y = r.out[0];
    CHECK(y && y->rank == 0 && ((int32_t *)y->data)[0] == INT32_MIN);
    nh_release(&r);

    og_tensor *x64 = tensor(OG_INT64, 1, d), *a = tensor(OG_INT64, 0, NULL);
    ((int64_t *)x64->data)[0] = INT64_MAX;
    ((int64_t *)x64->data)[1] = 1;
    const og_tensor *inc[] = {x64, a};
    n = node("CumSum", 11, inc, 2, 1, 1);
    CHECK_OK(nh_load(&n, &r));
    CHECK_OK(nh_exec(&r));
    CHECK(r.out[0] && ((int64_t *)r.out[0]->data)[1] == INT64_MIN);
    og_tensor *all[] = {x, x64, a};
    free_all(&r, all, 3);
}

/* Bad values fail with a message, at load when known, at run time otherwise. */
static void test_errors(void)
{
    int64_t d[] = {2, 3, 4}, bad[] = {3};
    og_tensor *x = tensor(OG_FLOAT, 3, d), *a = ints1(1, bad);
    const og_tensor *in[] = {x, a};
    nh_node n = node("ReduceSum", 13, in, 2, 1, 1);
    nh_result r;
    CHECK_OK(nh_load(&n, &r)); /* axes not a known constant at load */
    og_status st = nh_exec(&r);
    CHECK(st == OG_ERR_RUNTIME && strstr(og_last_error(), "out of range for rank 3"));
    nh_release(&r);

    n = node("ReduceL2", 11, in, 1, 1, 1);
    n.attrs[0] = (nh_attr)NH_INTS_N("axes", 1, bad);
    CHECK(nh_load(&n, &r) == OG_ERR_MODEL && strstr(og_last_error(), "attribute 'axes'"));
    nh_release(&r);

    int64_t k = 5;
    og_tensor *kt = ints1(1, &k);
    const og_tensor *ink[] = {x, kt};
    n = node("TopK", 11, ink, 2, 2, 1);
    CHECK_OK(nh_load(&n, &r));
    st = nh_exec(&r);
    CHECK(st == OG_ERR_RUNTIME && strstr(og_last_error(), "larger than dim 4"));
    nh_release(&r);

    int64_t de[] = {2, 0};
    og_tensor *e = tensor(OG_FLOAT, 2, de);
    const og_tensor *ine[] = {e};
    n = node("ArgMax", 13, ine, 1, 1, 1);
    n.attrs[0] = (nh_attr)NH_INT("axis", 1);
    CHECK(nh_load(&n, &r) == OG_ERR_SHAPE && strstr(og_last_error(), "empty axis"));
    nh_release(&r);

    int64_t axv = -4;
    og_tensor *ca = tensor(OG_INT64, 0, NULL);
    memcpy(ca->data, &axv, sizeof axv);
    const og_tensor *inc[] = {x, ca};
    n = node("CumSum", 14, inc, 2, 1, 1);
    CHECK_OK(nh_load(&n, &r));
    st = nh_exec(&r);
    CHECK(st != OG_OK && strstr(og_last_error(), "input 1 (axis)"));
    nh_release(&r);
    og_tensor *all[] = {x, a, kt, e, ca};
    nh_free_tensors(all, 5);
}

/* ---- bench ------------------------------------------------------------------------ */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The kernel alone, 20 times on the outputs of a first run, with the loop bound as a
 * session binds it. */
static void bench_one(const char *label, const char *op, int opset, int rank, const int64_t *d,
                      const int64_t *axes, int n_axes, int threads)
{
    og_tensor *x = tensor(OG_FLOAT, rank, d), *a = axes ? ints1(n_axes, axes) : NULL;
    fill(x, false);
    const og_tensor *in[] = {x, a};
    nh_node c = node(op, opset, in, a ? 2 : 1, 1, threads);
    if (!a) c.attrs[0] = (nh_attr)NH_INT("axis", -1);
    nh_result r;
    CHECK_OK(nh_run(&c, &r));
    const og_node *n = r.node;
    og_kernel_binding b = {0};
    og_dtype types[2] = {OG_FLOAT, OG_INT64};
    CHECK_OK(og_backend_bind(&og_cpu_backend, n, types, NULL, &b));
    og_kernel_ctx k = {
        .node = n, .params = n->params, .alloc = r.g->alloc, .threads = threads, .impl = b.impl};
    double best = 1e9;
    for (int i = 0; i < 20 && b.fn && r.out[0]; i++) {
        double t = now();
        b.fn(&k, in, n->n_in, r.out, 1);
        t = now() - t;
        if (t < best) best = t;
    }
    printf("%-24s %8.3f ms\n", label, best * 1e3);
    og_tensor *all[] = {x, a};
    free_all(&r, all, 2);
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

/* ---- Hardmax (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void r12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_hardmax(void)
{
    double v[6] = {1, 3, 3, 2, 0, 1};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, v)};
    nh_node n = {.op = "Hardmax", .opset = 13, .in = {in[0]}};
    r12_case(&n, "hardmax first maximum", 6, (double[]){0, 1, 0, 1, 0, 0}, 0, in, 1);
    og_tensor *h[] = {nh_tensor(OG_FLOAT16, 2, (int64_t[]){2, 3}, v)};
    nh_node hn = {.op = "Hardmax", .opset = 11, .attrs = {NH_INT("axis", 0)}, .in = {h[0]}};
    r12_case(&hn, "hardmax float16, 2-D coercion", 6, (double[]){0, 1, 0, 0, 0, 0}, 0, h, 1);
    og_tensor *b[] = {nh_tensor(OG_INT64, 1, (int64_t[]){3}, NULL)};
    nh_node bad = {.op = "Hardmax", .opset = 13, .in = {b[0]}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_UNSUPPORTED, "int64");
    nh_free_tensors(b, 1);
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
    test_narrow_unsigned();
    test_errors();
    test_hardmax();
    NH_DONE();
}
