/* test_backend.c: the device seam (src/kernels/kernel.h).  A toy device, defined here with
 * nothing but a kernel table, runs a graph through the same executor as the CPU; what a
 * device lacks (an op, a dtype) fails when the session is created, naming the node; the
 * CPU binds its typed loops then. */
#include <math.h>
#include <string.h>

#include "exec/exec.h"
#include "kernels/cpu/kernel.h"
#include "test.h"

/* ---- the toy device: Relu on float32 only, counting its calls ---------------------- */

typedef struct toy_loop {
    void (*fn)(const float *x, float *y, int64_t n);
} toy_loop;

static void toy_relu_f32(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
static const toy_loop toy_relu_loop = {toy_relu_f32};

static const void *toy_select(const og_node *n, og_dtype t)
{
    (void)n;
    return t == OG_FLOAT ? &toy_relu_loop : NULL;
}

static int toy_calls; /* test-only counter */

static og_status toy_relu(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    (void)n_in;
    (void)n_out;
    toy_calls++;
    if (k->impl != &toy_relu_loop) return og_kernel_error(k, OG_ERR_INTERNAL, "not bound");
    ((const toy_loop *)k->impl)->fn(in[0]->data, out[0]->data, in[0]->numel);
    return OG_OK;
}

static const og_kernel_def toy_family[] = {
    {.name = "Relu", .domain = "", .fn = toy_relu, .select = toy_select},
    {.name = NULL},
};
static const og_kernel_def *const toy_tables[] = {toy_family, NULL};
static const og_allocator *toy_allocator(const og_allocator *host) { return host; }
static const og_backend toy_backend = {"toy", toy_tables, toy_allocator};

/* x (dtype, [n]) -> op -> y */
static og_graph *one_node(const char *op, og_dtype dtype, int64_t n)
{
    og_graph *g = og_graph_new(NULL);
    if (!g) return NULL;
    g->opsets = og_calloc(g->alloc, 1, sizeof *g->opsets);
    g->opsets[0].domain = og_strdup(g->alloc, "");
    g->opsets[0].version = 14;
    g->n_opsets = 1;
    og_node *node = og_graph_add_node(g, op, "", "node0", 1, 1);
    int x = og_graph_add_value(g, "x"), y = og_graph_add_value(g, "y");
    g->values[x].kind = OG_VALUE_INPUT;
    g->values[x].is_graph_input = true;
    g->values[x].dtype = dtype;
    g->values[x].rank = 1;
    g->values[x].dims[0] = n;
    g->values[y].is_graph_output = true;
    node = &g->nodes[0];
    node->in[0] = x;
    node->out[0] = y;
    g->inputs = og_malloc(g->alloc, sizeof *g->inputs);
    g->outputs = og_malloc(g->alloc, sizeof *g->outputs);
    g->inputs[0] = x;
    g->outputs[0] = y;
    g->n_inputs = g->n_outputs = 1;
    if (og_graph_finalize(g) || og_graph_resolve(g, true)) {
        og_graph_free(g);
        return NULL;
    }
    return g;
}

static void toy_runs_a_graph(void)
{
    og_graph *g = one_node("Relu", OG_FLOAT, 4);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, &s));
    float xs[4] = {-1.5f, 2.0f, 0.0f, -0.25f};
    int64_t dims[1] = {4};
    og_tensor *x = NULL, *y = NULL;
    CHECK_OK(og_tensor_wrap(OG_FLOAT, 1, dims, xs, sizeof xs, NULL, &x));
    const char *names[] = {"x"};
    toy_calls = 0;
    CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    CHECK(toy_calls == 1);
    if (y) {
        const float *yp = og_tensor_cdata(y);
        CHECK(yp[0] == 0.0f && yp[1] == 2.0f && yp[2] == 0.0f && yp[3] == 0.0f);
    }
    og_tensor_free(y);
    og_tensor_free(x);
    og_session_free(s);
    og_graph_free(g);
}

/* What the toy device lacks fails at creation, with the node and the device named. */
static void toy_refuses_at_creation(void)
{
    og_session *s = NULL;
    og_graph *g = one_node("Relu", OG_DOUBLE, 3);
    CHECK(g != NULL);
    toy_calls = 0;
    CHECK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, &s) ==
          OG_ERR_UNSUPPORTED);
    CHECK(s == NULL && toy_calls == 0);
    CHECK(strstr(og_last_error(), "node 'node0' (Relu") != NULL);
    CHECK(strstr(og_last_error(), "float64") != NULL);
    CHECK(strstr(og_last_error(), "toy kernel of Relu") != NULL);
    CHECK(strstr(og_last_error(), "computes float32)") != NULL);
    og_graph_free(g);

    g = one_node("Abs", OG_FLOAT, 3);
    CHECK(g != NULL);
    CHECK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, &s) ==
          OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "node 'node0' (Abs, opset 13): op Abs has no toy kernel") !=
          NULL);
    og_graph_free(g);
}

/* The CPU binds the unary family's typed loop for the static dtype, and lists what it
 * computes when a dtype has no loop. */
static void cpu_binds_typed_loops(void)
{
    og_graph *g = one_node("Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    og_kernel_binding b;
    og_dtype types[1] = {OG_FLOAT};
    CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, &b));
    CHECK(b.fn != NULL && b.impl != NULL);
    const void *f32 = b.impl;
    types[0] = OG_INT64;
    CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, &b));
    CHECK(b.impl != NULL && b.impl != f32);
    types[0] = OG_UNDEFINED; /* not known before the run: the kernel picks */
    CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, &b));
    CHECK(b.fn != NULL && b.impl == NULL);
    types[0] = OG_INT8;
    CHECK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, &b) == OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "computes float32, float64, int32, int64)") != NULL);
    og_graph_free(g);

    /* every op the CPU has an entry for binds; the view ops bind to no kernel */
    g = one_node("Identity", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (g) {
        types[0] = OG_FLOAT;
        CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, &b));
        CHECK(b.fn == NULL);
        og_graph_free(g);
    }
}

/* A device whose Sigmoid kernel computes the op's first version only (since 6 up to 12):
 * a model of opset 14 (Sigmoid since-version 13) is refused, naming the version; an entry
 * per range of versions serves both. */
static const og_kernel_def old_sigmoid[] = {
    {.name = "Sigmoid", .domain = "", .fn = toy_relu, .since_min = 6, .since_max = 12},
    {.name = NULL},
};
static const og_kernel_def *const old_tables[] = {old_sigmoid, NULL};
static const og_backend old_backend = {"old", old_tables, toy_allocator};

static const og_kernel_def both_sigmoids[] = {
    {.name = "Sigmoid", .domain = "", .fn = toy_relu, .since_max = 12},
    {.name = "Sigmoid", .domain = "", .fn = toy_relu, .select = toy_select, .since_min = 13},
    {.name = NULL},
};
static const og_kernel_def *const both_tables[] = {both_sigmoids, NULL};
static const og_backend both_backend = {"both", both_tables, toy_allocator};

static void kernels_by_version(void)
{
    og_graph *g = one_node("Sigmoid", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    CHECK(g->nodes[0].since_version == 13);
    og_kernel_binding b;
    og_dtype types[1] = {OG_FLOAT};
    CHECK(og_backend_bind(&old_backend, &g->nodes[0], types, &b) == OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "do not compute since-version 13") != NULL);
    CHECK_OK(og_backend_bind(&both_backend, &g->nodes[0], types, &b));
    CHECK(b.impl == &toy_relu_loop); /* the since-13 entry, with its select */
    CHECK(og_backend_find(&both_backend, "", "Sigmoid", 6) == &both_sigmoids[0]);
    CHECK(og_backend_find(&both_backend, "ai.onnx", "Sigmoid", 13) == &both_sigmoids[1]);
    CHECK(og_backend_find(&old_backend, "", "Sigmoid", 13) == NULL);
    og_graph_free(g);
}

int main(void)
{
    toy_runs_a_graph();
    toy_refuses_at_creation();
    cpu_binds_typed_loops();
    kernels_by_version();
    TEST_DONE();
}
