/* test_linalg.c: MatMul, Gemm and Einsum through parse, static and run-time inference and
 * the CPU kernel, against plain reference loops, plus error cases. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/kernel.h"

static int failures = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static uint32_t rng = 12345;
static double rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

typedef struct attr_spec {
    const char *name;
    og_attr_type type;
    double f;
    const char *s;
} attr_spec;

/* A graph of one node over inputs x0..x(n-1) of the given tensors' types and shapes. */
static og_status build(og_graph **gout, const char *op, int opset, const og_tensor *const *in,
                       int n_in, const attr_spec *attrs)
{
    og_graph *g = og_graph_new(NULL);
    g->opsets = og_calloc(g->alloc, 1, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(g->alloc, "");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    og_node *n = og_graph_add_node(g, op, "", "n0", n_in, 1);
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) continue;
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        int v = og_graph_add_value(g, name);
        og_value *val = &g->values[v];
        val->kind = OG_VALUE_INPUT;
        val->is_graph_input = true;
        val->dtype = in[i]->dtype;
        val->rank = in[i]->rank;
        memcpy(val->dims, in[i]->dims, sizeof val->dims);
        n->in[i] = v;
    }
    int y = og_graph_add_value(g, "y");
    g->values[y].is_graph_output = true;
    g->outputs = og_malloc(g->alloc, sizeof *g->outputs);
    g->outputs[0] = y;
    g->n_outputs = 1;
    n->out[0] = y;
    int na = 0;
    while (attrs && attrs[na].name) na++;
    n->attrs = og_calloc(g->alloc, (size_t)na + 1, sizeof *n->attrs);
    for (int i = 0; i < na; i++) {
        og_attr *a = &n->attrs[n->n_attrs++];
        a->name = og_strdup(g->alloc, attrs[i].name);
        a->type = attrs[i].type;
        if (a->type == OG_ATTR_FLOAT) a->f = (float)attrs[i].f;
        if (a->type == OG_ATTR_INT) a->i = (int64_t)attrs[i].f;
        if (a->type == OG_ATTR_STRING) {
            a->s = og_strdup(g->alloc, attrs[i].s);
            a->s_len = strlen(attrs[i].s);
        }
    }
    *gout = g;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    return st;
}

/* Build, infer at run time, run; *y gets the output (caller frees). */
static og_status run(const char *op, int opset, const og_tensor *const *in, int n_in,
                     const attr_spec *attrs, int threads, og_tensor **y)
{
    og_graph *g = NULL;
    *y = NULL;
    og_status st = build(&g, op, opset, in, n_in, attrs);
    if (st) goto done;
    og_node *n = &g->nodes[0];
    og_vinfo vi[8], vo;
    for (int i = 0; i < n_in; i++) {
        og_vinfo_unknown(&vi[i]);
        if (!in[i]) continue;
        og_vinfo_set(&vi[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        vi[i].value = in[i];
    }
    og_vinfo_unknown(&vo);
    og_op_ctx c = {n, g->alloc, NULL, true};
    st = n->op->infer(&c, vi, n_in, &vo, 1);
    if (st) goto done;
    st = og_tensor_alloc(vo.dtype, vo.rank, vo.dims, NULL, y);
    if (st) goto done;
    og_kernel_ctx k = {n, n->params, g->alloc, threads, NULL, 0};
    st = og_cpu_kernel_find("", op)(&k, in, n_in, y, 1);
done:
    og_graph_free(g);
    return st;
}

static og_tensor *mk(og_dtype dt, int rank, const int64_t *dims)
{
    og_tensor *t = NULL;
    og_tensor_alloc(dt, rank, dims, NULL, &t);
    for (int64_t i = 0; i < t->numel; i++) {
        double v = rnd();
        switch (dt) {
        case OG_FLOAT: ((float *)t->data)[i] = (float)v; break;
        case OG_DOUBLE: ((double *)t->data)[i] = v; break;
        case OG_INT32: ((int32_t *)t->data)[i] = (int32_t)(v * 5); break;
        default: ((int64_t *)t->data)[i] = (int64_t)(v * 5); break;
        }
    }
    return t;
}

/* MatMul [3] x [2,3,4] -> [2,4] and [2,1,2,3] x [3,3,2] -> [2,3,2,2]. */
static void test_matmul(void)
{
    static const og_dtype dts[] = {OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64};
    for (int di = 0; di < 4; di++) {
        og_dtype dt = dts[di];
        int64_t da[] = {2, 1, 2, 3}, db[] = {3, 3, 2};
        og_tensor *in[2] = {mk(dt, 4, da), mk(dt, 3, db)}, *y = NULL;
        og_status st = run("MatMul", 13, (const og_tensor *const *)in, 2, NULL, 2, &y);
        CHECK(!st, "MatMul: %s", og_last_error());
        if (!st) {
            CHECK(y->rank == 4 && y->dims[0] == 2 && y->dims[1] == 3 && y->dims[2] == 2 &&
                      y->dims[3] == 2,
                  "MatMul shape");
            for (int b0 = 0; b0 < 2; b0++)
                for (int b1 = 0; b1 < 3; b1++)
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 2; j++) {
                            double s = 0;
                            for (int p = 0; p < 3; p++)
                                s += og_tensor_get_f64(in[0], (b0 * 2 + i) * 3 + p) *
                                     og_tensor_get_f64(in[1], (b1 * 3 + p) * 2 + j);
                            double got = og_tensor_get_f64(y, ((b0 * 3 + b1) * 2 + i) * 2 + j);
                            CHECK(fabs(got - s) < 1e-5, "MatMul %s: %g vs %g", og_dtype_name(dt),
                                  got, s);
                        }
        }
        og_tensor_free(y);
        og_tensor_free(in[0]);
        og_tensor_free(in[1]);
    }
    /* 1-D x 3-D and a K mismatch */
    int64_t d1[] = {3}, d3[] = {2, 3, 4}, d4[] = {2, 4, 4};
    og_tensor *a = mk(OG_FLOAT, 1, d1), *b = mk(OG_FLOAT, 3, d3), *c = mk(OG_FLOAT, 3, d4), *y;
    const og_tensor *ab[2] = {a, b}, *ac[2] = {a, c};
    CHECK(!run("MatMul", 9, ab, 2, NULL, 1, &y) && y->rank == 2 && y->dims[0] == 2 &&
              y->dims[1] == 4,
          "MatMul 1-D x 3-D");
    og_tensor_free(y);
    CHECK(run("MatMul", 13, ac, 2, NULL, 1, &y) == OG_ERR_SHAPE, "K mismatch not caught");
    og_tensor_free(y);
    /* wrapping int32 products (no UB under -fsanitize=undefined) */
    int64_t d2[] = {1, 2}, d21[] = {2, 1};
    og_tensor *ia = mk(OG_INT32, 2, d2), *ib = mk(OG_INT32, 2, d21);
    ((int32_t *)ia->data)[0] = ((int32_t *)ia->data)[1] = 1 << 30;
    ((int32_t *)ib->data)[0] = ((int32_t *)ib->data)[1] = 4;
    const og_tensor *iab[2] = {ia, ib};
    CHECK(!run("MatMul", 13, iab, 2, NULL, 1, &y) && ((int32_t *)y->data)[0] == 0, "int wrap");
    og_tensor_free(y);
    og_tensor_free(ia);
    og_tensor_free(ib);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

/* Gemm with transA, C of shape [M,1], and the opset rules on C. */
static void test_gemm(void)
{
    int64_t da[] = {5, 3}, db[] = {5, 4}, dc[] = {3, 1};
    og_tensor *a = mk(OG_DOUBLE, 2, da), *b = mk(OG_DOUBLE, 2, db), *c = mk(OG_DOUBLE, 2, dc), *y;
    const attr_spec at[] = {{"transA", OG_ATTR_INT, 1, NULL},
                            {"alpha", OG_ATTR_FLOAT, 0.5, NULL},
                            {"beta", OG_ATTR_FLOAT, 2, NULL},
                            {0}};
    const og_tensor *abc[3] = {a, b, c};
    og_status st = run("Gemm", 11, abc, 3, at, 2, &y);
    CHECK(!st, "Gemm: %s", og_last_error());
    if (!st)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double s = 0;
                for (int p = 0; p < 5; p++)
                    s += og_tensor_get_f64(a, p * 3 + i) * og_tensor_get_f64(b, p * 4 + j);
                s = 0.5 * s + 2 * og_tensor_get_f64(c, i);
                CHECK(fabs(og_tensor_get_f64(y, i * 4 + j) - s) < 1e-9, "Gemm value");
            }
    og_tensor_free(y);
    const og_tensor *ab[2] = {a, b};
    CHECK(run("Gemm", 9, ab, 2, at, 1, &y) == OG_ERR_MODEL, "Gemm-9 without C accepted");
    og_tensor_free(y);
    const og_tensor *ba[3] = {b, a, c};
    CHECK(run("Gemm", 13, ba, 3, NULL, 1, &y) == OG_ERR_SHAPE, "Gemm K mismatch accepted");
    og_tensor_free(y);
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

/* Einsum: three operands with a diagonal and a summed-only label, and bad equations. */
static void test_einsum(void)
{
    int64_t da[] = {2, 3, 3}, db[] = {3, 4}, dc[] = {4, 5};
    og_tensor *a = mk(OG_FLOAT, 3, da), *b = mk(OG_FLOAT, 2, db), *c = mk(OG_FLOAT, 2, dc), *y;
    const og_tensor *abc[3] = {a, b, c};
    const attr_spec eq[] = {{"equation", OG_ATTR_STRING, 0, "zii, ij ,jk->k"}, {0}};
    og_status st = run("Einsum", 12, abc, 3, eq, 2, &y);
    CHECK(!st, "Einsum: %s", og_last_error());
    if (!st) {
        CHECK(y->rank == 1 && y->dims[0] == 5, "Einsum shape");
        for (int kk = 0; kk < 5; kk++) {
            double s = 0;
            for (int z = 0; z < 2; z++)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++)
                        s += og_tensor_get_f64(a, (z * 3 + i) * 3 + i) *
                             og_tensor_get_f64(b, i * 4 + j) * og_tensor_get_f64(c, j * 5 + kk);
            CHECK(fabs(og_tensor_get_f64(y, kk) - s) < 1e-4, "Einsum value %g vs %g",
                  og_tensor_get_f64(y, kk), s);
        }
    }
    og_tensor_free(y);
    static const char *bad[] = {"zii,ij->k",    "zii,ij,jk->kk", "z.i,ij,jk",
                                "zii,ij,jk->q", "zi,ij,jk",      "zii,ij,j9"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const attr_spec e2[] = {{"equation", OG_ATTR_STRING, 0, bad[i]}, {0}};
        st = run("Einsum", 12, abc, 3, e2, 1, &y);
        CHECK(st == OG_ERR_MODEL || st == OG_ERR_SHAPE, "'%s' accepted (%d)", bad[i], (int)st);
        og_tensor_free(y);
    }
    og_tensor_free(a);
    og_tensor_free(b);
    og_tensor_free(c);
}

int main(void)
{
    test_matmul();
    test_gemm();
    test_einsum();
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("test_linalg: all passed\n");
    return failures ? 1 : 0;
}
