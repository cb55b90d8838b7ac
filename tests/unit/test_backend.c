/* test_backend.c: the device seam (src/kernels/kernel.h).  A toy device, defined here with
 * nothing but a kernel table, runs a graph through the same executor as the CPU; what a
 * device lacks (an op, a dtype) fails when the session is created, naming the node; the
 * CPU binds its typed loops then. */
#include <math.h>
#include <stdio.h>
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

/* Runs s (a one_node graph) on x = xs[0..n): its output y, NULL on failure. */
static og_tensor *run_x(og_session *s, float *xs, int64_t n)
{
    og_tensor *x = NULL, *y = NULL;
    const char *names[] = {"x"};
    CHECK_OK(og_tensor_wrap(OG_FLOAT, 1, &n, xs, (size_t)n * sizeof *xs, NULL, &x));
    if (s && x) CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    og_tensor_free(x);
    return y;
}

static void toy_runs_a_graph(void)
{
    og_graph *g = one_node("Relu", OG_FLOAT, 4);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, &s));
    float xs[4] = {-1.5f, 2.0f, 0.0f, -0.25f};
    toy_calls = 0;
    og_tensor *y = run_x(s, xs, 4);
    CHECK(toy_calls == 1);
    if (y) {
        const float *yp = og_tensor_cdata(y);
        CHECK(yp[0] == 0.0f && yp[1] == 2.0f && yp[2] == 0.0f && yp[3] == 0.0f);
    }
    og_tensor_free(y);
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
    CHECK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, &s) == OG_ERR_UNSUPPORTED);
    CHECK(s == NULL && toy_calls == 0);
    CHECK(strstr(og_last_error(), "node 'node0' (Relu") != NULL);
    CHECK(strstr(og_last_error(), "float64") != NULL);
    CHECK(strstr(og_last_error(), "toy kernel of Relu") != NULL);
    CHECK(strstr(og_last_error(), "computes float32)") != NULL);
    og_graph_free(g);

    g = one_node("Abs", OG_FLOAT, 3);
    CHECK(g != NULL);
    CHECK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, &s) == OG_ERR_UNSUPPORTED);
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

/* ---- the CPU families' type constraints ---------------------------------------------- */

/* Binds node n at dtypes t on the CPU: OG_OK with a typed loop bound (impl) or not, or
 * OG_ERR_UNSUPPORTED with a message that names the node and ends with `refusal`. */
static void check_cpu_bind(const og_node *n, const og_dtype *t, og_status want, bool impl,
                           const char *refusal)
{
    og_kernel_binding b;
    og_status st = og_backend_bind(&og_cpu_backend, n, t, &b);
    CHECK(st == want);
    if (st != want) fprintf(stderr, "  %s at %s: status %d\n", n->op_type, og_dtype_name(t[0]), st);
    if (want == OG_OK) {
        CHECK(b.fn != NULL && (b.impl != NULL) == impl);
        return;
    }
    char label[64];
    snprintf(label, sizeof label, "node 'node0' (%s, opset", n->op_type);
    CHECK(strstr(og_last_error(), label) != NULL);
    CHECK(strstr(og_last_error(), refusal) != NULL);
}

/* Each family states what its kernels compute: a dtype a kernel lacks is refused when the
 * node is bound, listing what it has; those it has bind (with their loop where the entry
 * selects one).  Inference refuses these dtypes too, so the bind is called directly. */
static void cpu_families_state_types(void)
{
    static const struct {
        const char *op;
        og_dtype good[2];
        bool impl; /* the entry selects a typed loop */
        og_dtype bad;
        const char *refusal;
    } cases[] = {
        {"ReduceSum",
         {OG_FLOAT, OG_INT64},
         true,
         OG_BOOL,
         "input 0 is bool, which the CPU kernel of ReduceSum does not compute (it computes "
         "float32, float64, int32, int64)"},
        {"ReduceMax",
         {OG_DOUBLE, OG_BOOL},
         true,
         OG_INT8,
         "(it computes float32, float64, int32, int64, bool)"},
        {"ReduceL2", {OG_FLOAT, OG_DOUBLE}, true, OG_INT32, "(it computes float32, float64)"},
        {"ArgMax",
         {OG_INT32, OG_DOUBLE},
         true,
         OG_UINT8,
         "(it computes float32, float64, int32, int64)"},
        {"Softmax", {OG_FLOAT, OG_DOUBLE}, false, OG_FLOAT16, "(it computes float32, float64)"},
        {"Dropout", {OG_FLOAT, OG_DOUBLE}, false, OG_INT64, "(it computes float32, float64)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        og_graph *g = one_node(cases[i].op, OG_FLOAT, 2);
        CHECK(g != NULL);
        if (!g) continue;
        for (int j = 0; j < 2; j++)
            check_cpu_bind(&g->nodes[0], &cases[i].good[j], OG_OK, cases[i].impl, NULL);
        check_cpu_bind(&g->nodes[0], &cases[i].bad, OG_ERR_UNSUPPORTED, false, cases[i].refusal);
        og_graph_free(g);
    }

    /* Transpose moves bytes: every dtype binds */
    og_graph *g = one_node("Transpose", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (g) {
        static const og_dtype any[] = {OG_FLOAT16, OG_BOOL, OG_UINT64};
        for (int j = 0; j < 3; j++) check_cpu_bind(&g->nodes[0], &any[j], OG_OK, false, NULL);
        og_graph_free(g);
    }

    /* Gather's constraint is on its indices (input 1); the data may have any dtype */
    g = one_node("Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (g) {
        og_node gather = g->nodes[0];
        gather.op_type = (char *)"Gather";
        gather.n_in = 2;
        og_dtype t[2] = {OG_FLOAT16, OG_INT64};
        check_cpu_bind(&gather, t, OG_OK, false, NULL);
        t[1] = OG_INT16;
        check_cpu_bind(&gather, t, OG_ERR_UNSUPPORTED, false,
                       "input 1 is int16, which the CPU kernel of Gather does not compute (it "
                       "computes int32, int64)");
        og_graph_free(g);
    }
}

/* A session runs a reduction through the loop it bound at creation. */
static void cpu_runs_bound_reduction(void)
{
    og_graph *g = one_node("ReduceSum", OG_FLOAT, 4);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, &og_cpu_backend, og_default_allocator(), NULL, &s));
    float xs[4] = {1.5f, -2.0f, 4.0f, 0.25f};
    og_tensor *y = run_x(s, xs, 4);
    CHECK(y != NULL && og_tensor_numel(y) == 1);
    if (y) CHECK(((const float *)og_tensor_cdata(y))[0] == 3.75f);
    og_tensor_free(y);
    og_session_free(s);
    og_graph_free(g);
}

/* A binding holds for the static dtype only: a run whose input has another dtype (here the
 * declaration is dropped after the session bound Relu's float32 loop, and float64 comes
 * in) gets no bound loop, and the kernel picks the float64 one itself. */
static void binding_follows_the_run(void)
{
    og_graph *g = one_node("Relu", OG_FLOAT, 3);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, NULL, og_default_allocator(), NULL, &s));
    g->values[g->inputs[0]].dtype = OG_UNDEFINED;
    double xs[3] = {-2.0, 0.5, 1e300};
    int64_t n = 3;
    og_tensor *x = NULL, *y = NULL;
    const char *names[] = {"x"};
    CHECK_OK(og_tensor_wrap(OG_DOUBLE, 1, &n, xs, sizeof xs, NULL, &x));
    if (s && x) CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    if (y) {
        const double *yp = og_tensor_cdata(y);
        CHECK(og_tensor_dtype(y) == OG_DOUBLE && yp[0] == 0.0 && yp[1] == 0.5 && yp[2] == 1e300);
    }
    og_tensor_free(y);
    og_tensor_free(x);
    og_session_free(s);
    og_graph_free(g);
}

int main(void)
{
    toy_runs_a_graph();
    toy_refuses_at_creation();
    cpu_binds_typed_loops();
    kernels_by_version();
    binding_follows_the_run();
    cpu_families_state_types();
    cpu_runs_bound_reduction();
    TEST_DONE();
}
