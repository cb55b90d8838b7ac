/* test_backend.c: the device seam (src/kernels/kernel.h).  A toy device, defined here with
 * nothing but a kernel table, runs a graph through the same executor as the CPU; what a
 * device lacks (an op, a dtype) fails when the session is created, naming the node; the
 * CPU binds its typed loops then, and its kernels compute with the loop bound. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/rnn.h"
#include "unit/node_harness.h"

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

/* A toy Pow whose loop depends on both inputs' dtypes (select_types): float32 base with a
 * float32 or an int64 exponent; an exponent of unknown dtype leaves the choice to the run. */
static const toy_loop toy_pow_ff = {toy_relu_f32}, toy_pow_fi = {toy_relu_f32};
static const void *toy_select_types(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)n;
    (void)out;
    if (t[0] != OG_FLOAT) return NULL;
    if (t[1] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    return t[1] == OG_FLOAT ? &toy_pow_ff : t[1] == OG_INT64 ? &toy_pow_fi : NULL;
}

/* A toy Cast whose loop depends on its output's dtype (select_types reads out_types):
 * float32 to float32 or int64; before the output's dtype is known, the choice is the run's. */
static const toy_loop toy_cast_ff = {toy_relu_f32}, toy_cast_fi = {toy_relu_f32};
static const void *toy_select_cast(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)n;
    if (t[0] != OG_FLOAT) return NULL;
    if (out[0] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    return out[0] == OG_FLOAT ? &toy_cast_ff : out[0] == OG_INT64 ? &toy_cast_fi : NULL;
}

static const og_kernel_def toy_family[] = {
    {.name = "Relu", .domain = "", .fn = toy_relu, .select = toy_select},
    {.name = "Pow", .domain = "", .fn = toy_relu, .select_types = toy_select_types},
    {.name = "Cast", .domain = "", .fn = toy_relu, .select_types = toy_select_cast},
    {.name = NULL},
};
static const og_kernel_def *const toy_tables[] = {toy_family, NULL};
static const og_allocator *toy_allocator(const og_allocator *host) { return host; }
static const og_backend toy_backend = {"toy", toy_tables, toy_allocator};

/* x0 (dtype, [n]) -> op -> y0, resolved: the graph in r->g (release with nh_release).  The
 * input's data does not matter here: x0 is declared with its dtype and shape. */
static og_graph *one_node(nh_result *r, const char *op, og_dtype dtype, int64_t n)
{
    og_tensor *x = nh_tensor(dtype, 1, &n, NULL);
    nh_node spec = {.op = op, .opset = 14, .in = {x}};
    og_status st = nh_load(&spec, r);
    og_tensor_free(x);
    r->spec = NULL; /* spec and x are gone: nh_exec is not for this graph */
    if (st) nh_release(r);
    return r->g;
}

/* Runs s (a one_node graph) on x = xs[0..n): its output y, NULL on failure. */
static og_tensor *run_x(og_session *s, float *xs, int64_t n)
{
    og_tensor *x = NULL, *y = NULL;
    const char *names[] = {"x0"};
    CHECK_OK(og_tensor_wrap(OG_FLOAT, 1, &n, xs, (size_t)n * sizeof *xs, NULL, &x));
    if (s && x) CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    og_tensor_free(x);
    return y;
}

static void toy_runs_a_graph(void)
{
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_FLOAT, 4);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, false, &s));
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
    nh_release(&r);
}

/* What the toy device lacks fails at creation, with the node and the device named. */
static void toy_refuses_at_creation(void)
{
    og_session *s = NULL;
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_DOUBLE, 3);
    CHECK(g != NULL);
    toy_calls = 0;
    CHECK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, false, &s) ==
          OG_ERR_UNSUPPORTED);
    CHECK(s == NULL && toy_calls == 0);
    CHECK(strstr(og_last_error(), "node 'n0' (Relu") != NULL);
    CHECK(strstr(og_last_error(), "float64") != NULL);
    CHECK(strstr(og_last_error(), "toy kernel of Relu") != NULL);
    CHECK(strstr(og_last_error(), "computes float32)") != NULL);
    nh_release(&r);

    g = one_node(&r, "Abs", OG_FLOAT, 3);
    CHECK(g != NULL);
    CHECK(og_exec_create(g, &toy_backend, og_default_allocator(), NULL, false, &s) ==
          OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "node 'n0' (Abs, opset 13): op Abs has no toy kernel") != NULL);
    nh_release(&r);
}

/* An entry with select_types binds the loop of every input's static dtype (the binding then
 * holds only while all of them match: all_types), binds nothing when a dtype it needs is
 * known only at run time, and refuses naming the other inputs' dtypes it read. */
static void toy_binds_by_all_types(void)
{
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    og_node n = g->nodes[0];
    int ins[2] = {0, 0};
    n.op_type = (char *)"Pow";
    n.n_in = 2;
    n.in = ins;
    og_kernel_binding b;
    og_dtype t[2] = {OG_FLOAT, OG_FLOAT};
    CHECK_OK(og_backend_bind(&toy_backend, &n, t, NULL, &b));
    CHECK(b.impl == &toy_pow_ff && b.all_types == 1 && b.type == OG_FLOAT);
    t[1] = OG_INT64;
    CHECK_OK(og_backend_bind(&toy_backend, &n, t, NULL, &b));
    CHECK(b.impl == &toy_pow_fi && b.all_types == 1);
    t[1] = OG_UNDEFINED;
    CHECK_OK(og_backend_bind(&toy_backend, &n, t, NULL, &b));
    CHECK(b.fn == toy_relu && b.impl == NULL && b.all_types == 0);
    t[1] = OG_INT8;
    CHECK(og_backend_bind(&toy_backend, &n, t, NULL, &b) == OG_ERR_UNSUPPORTED);
    CHECKF(strstr(og_last_error(),
                  "node 'n0' (Pow, opset 14): input 0 is float32, which the toy kernel of Pow "
                  "does not compute with input 1 int8 (it computes no dtype)") != NULL,
           "message %s", og_last_error());
    t[0] = OG_DOUBLE;
    t[1] = OG_FLOAT;
    CHECK(og_backend_bind(&toy_backend, &n, t, NULL, &b) == OG_ERR_UNSUPPORTED);
    CHECKF(strstr(og_last_error(), "input 0 is float64, which the toy kernel of Pow does not "
                                   "compute with input 1 float32 (it computes float32)") != NULL,
           "message %s", og_last_error());
    nh_release(&r);
}

/* An entry with select_types sees the outputs' static dtypes too: it binds the loop of the
 * output's dtype (which the binding then keeps in out_types), nothing when the output's dtype
 * is not known (no out_types), and a refusal names the output's dtype. */
static void toy_binds_by_output_types(void)
{
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    og_node n = g->nodes[0];
    n.op_type = (char *)"Cast";
    og_kernel_binding b;
    og_dtype t[1] = {OG_FLOAT}, o[1] = {OG_FLOAT};
    CHECK_OK(og_backend_bind(&toy_backend, &n, t, o, &b));
    CHECK(b.impl == &toy_cast_ff && b.all_types == 1 && b.out_types[0] == OG_FLOAT);
    o[0] = OG_INT64;
    CHECK_OK(og_backend_bind(&toy_backend, &n, t, o, &b));
    CHECK(b.impl == &toy_cast_fi && b.all_types == 1 && b.out_types[0] == OG_INT64);
    CHECK_OK(og_backend_bind(&toy_backend, &n, t, NULL, &b));
    CHECK(b.fn == toy_relu && b.impl == NULL && b.all_types == 0);
    o[0] = OG_INT8;
    CHECK(og_backend_bind(&toy_backend, &n, t, o, &b) == OG_ERR_UNSUPPORTED);
    CHECKF(strstr(og_last_error(),
                  "node 'n0' (Cast, opset 14): input 0 is float32, which the toy kernel of Cast "
                  "does not compute with output 0 int8 (it computes no dtype)") != NULL,
           "message %s", og_last_error());
    nh_release(&r);
}

/* The CPU binds the unary family's typed loop for the static dtype, and lists what it
 * computes when a dtype has no loop. */
static void cpu_binds_typed_loops(void)
{
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    og_kernel_binding b;
    og_dtype types[1] = {OG_FLOAT};
    CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, NULL, &b));
    CHECK(b.fn != NULL && b.impl != NULL);
    const void *f32 = b.impl;
    types[0] = OG_INT64;
    CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, NULL, &b));
    CHECK(b.impl != NULL && b.impl != f32);
    types[0] = OG_UNDEFINED; /* not known before the run: the kernel picks */
    CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, NULL, &b));
    CHECK(b.fn != NULL && b.impl == NULL);
    types[0] = OG_UINT8; /* Relu has the signed types only */
    CHECK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, NULL, &b) == OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(),
                 "computes float32, float64, float16, bfloat16, int8, int16, int32, int64)") !=
          NULL);
    nh_release(&r);

    /* every op the CPU has an entry for binds; the view ops bind to no kernel */
    g = one_node(&r, "Identity", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (g) {
        types[0] = OG_FLOAT;
        CHECK_OK(og_backend_bind(&og_cpu_backend, &g->nodes[0], types, NULL, &b));
        CHECK(b.fn == NULL);
        nh_release(&r);
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
    nh_result r;
    og_graph *g = one_node(&r, "Sigmoid", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    CHECK(g->nodes[0].since_version == 13);
    og_kernel_binding b;
    og_dtype types[1] = {OG_FLOAT};
    CHECK(og_backend_bind(&old_backend, &g->nodes[0], types, NULL, &b) == OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "do not compute since-version 13") != NULL);
    CHECK_OK(og_backend_bind(&both_backend, &g->nodes[0], types, NULL, &b));
    CHECK(b.impl == &toy_relu_loop); /* the since-13 entry, with its select */
    CHECK(og_backend_find(&both_backend, "", "Sigmoid", 6) == &both_sigmoids[0]);
    CHECK(og_backend_find(&both_backend, "ai.onnx", "Sigmoid", 13) == &both_sigmoids[1]);
    CHECK(og_backend_find(&old_backend, "", "Sigmoid", 13) == NULL);
    nh_release(&r);
}

/* ---- the CPU families' type constraints ---------------------------------------------- */

/* Binds node n at dtypes t on the CPU: OG_OK with a typed loop bound (impl) or not, or
 * OG_ERR_UNSUPPORTED with a message that names the node and ends with `refusal`. */
static void check_cpu_bind(const og_node *n, const og_dtype *t, og_status want, bool impl,
                           const char *refusal)
{
    og_kernel_binding b;
    og_status st = og_backend_bind(&og_cpu_backend, n, t, NULL, &b);
    CHECK(st == want);
    if (st != want) fprintf(stderr, "  %s at %s: status %d\n", n->op_type, og_dtype_name(t[0]), st);
    if (want == OG_OK) {
        CHECK(b.fn != NULL && (b.impl != NULL) == impl);
        return;
    }
    char label[64];
    snprintf(label, sizeof label, "node 'n0' (%s, opset", n->op_type);
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
         "float32, float64, float16, bfloat16, int32, int64, uint32, uint64)"},
        {"ReduceMax",
         {OG_INT8, OG_BOOL},
         true,
         OG_STRING,
         "(it computes float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, "
         "uint16, uint32, uint64, bool)"},
        {"ReduceL2",
         {OG_FLOAT, OG_UINT32},
         true,
         OG_INT8,
         "(it computes float32, float64, float16, bfloat16, int32, int64, uint32, uint64)"},
        {"ArgMax",
         {OG_UINT8, OG_DOUBLE},
         true,
         OG_BOOL,
         "(it computes float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, "
         "uint16, uint32, uint64)"},
        {"Softmax",
         {OG_FLOAT, OG_FLOAT16},
         true,
         OG_INT32,
         "(it computes float32, float64, float16, bfloat16)"},
        {"Dropout",
         {OG_FLOAT, OG_BFLOAT16},
         true,
         OG_INT64,
         "(it computes float32, float64, float16, bfloat16)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nh_result r;
        og_graph *g = one_node(&r, cases[i].op, OG_FLOAT, 2);
        CHECK(g != NULL);
        if (!g) continue;
        for (int j = 0; j < 2; j++)
            check_cpu_bind(&g->nodes[0], &cases[i].good[j], OG_OK, cases[i].impl, NULL);
        check_cpu_bind(&g->nodes[0], &cases[i].bad, OG_ERR_UNSUPPORTED, false, cases[i].refusal);
        nh_release(&r);
    }

    /* Transpose moves bytes: every dtype binds */
    nh_result r;
    og_graph *g = one_node(&r, "Transpose", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (g) {
        static const og_dtype any[] = {OG_FLOAT16, OG_BOOL, OG_UINT64};
        for (int j = 0; j < 3; j++) check_cpu_bind(&g->nodes[0], &any[j], OG_OK, false, NULL);
        nh_release(&r);
    }

    /* Gather's constraint is on its indices (input 1), whose typed read it binds; the data
     * may have any dtype */
    g = one_node(&r, "Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (g) {
        og_node gather = g->nodes[0];
        gather.op_type = (char *)"Gather";
        gather.n_in = 2;
        og_dtype t[2] = {OG_FLOAT16, OG_INT64};
        check_cpu_bind(&gather, t, OG_OK, true, NULL);
        t[1] = OG_INT16;
        check_cpu_bind(&gather, t, OG_ERR_UNSUPPORTED, false,
                       "input 1 is int16, which the CPU kernel of Gather does not compute (it "
                       "computes int32, int64)");
        nh_release(&r);
    }
}

/* The pool (LpPool and RoiAlign too), norm (GroupNormalization, LpNormalization,
 * MeanVarianceNormalization and LRN included), linalg (Det too), reduce's Hardmax, resize's
 * AffineGrid and optim families bind a typed loop too, for the dtype of their type input, and
 * refuse the others naming node, op, device and what they compute. The node is a copy of a resolved
 * Relu under the family op's name and arity: binding looks at the op, its since-version and the
 * static dtypes, not at attributes.
 */
static void cpu_families_bind_loops(void)
{
    static const struct {
        const char *op, *domain;
        int n_in, type_input;
        og_dtype good[2], bad;
        const char *computes;
    } cases[] = {
        /* the pools: float16 through float32's loops, no bfloat16 */
        {"MaxPool", "", 1, 0, {OG_FLOAT, OG_FLOAT16}, OG_BFLOAT16, "float32, float64, float16"},
        {"GlobalAveragePool",
         "",
         1,
         0,
         {OG_DOUBLE, OG_FLOAT16},
         OG_BFLOAT16,
         "float32, float64, float16"},
        /* norm: float16 and bfloat16 through float32's binding */
        {"BatchNormalization",
         "",
         5,
         0,
         {OG_FLOAT, OG_BFLOAT16},
         OG_INT32,
         "float32, float64, float16, bfloat16"},
        {"LayerNormalization",
         "",
         3,
         0,
         {OG_DOUBLE, OG_FLOAT16},
         OG_INT32,
         "float32, float64, float16, bfloat16"},
        {"InstanceNormalization",
         "",
         3,
         0,
         {OG_FLOAT, OG_DOUBLE},
         OG_INT64,
         "float32, float64, float16, bfloat16"},
        {"MatMul",
         "",
         2,
         0,
         {OG_FLOAT16, OG_UINT64},
         OG_UINT8,
         "float32, float64, float16, bfloat16, int32, int64, uint32, uint64"},
        {"Gemm",
         "",
         3,
         0,
         {OG_DOUBLE, OG_UINT32},
         OG_UINT8,
         "float32, float64, float16, bfloat16, int32, int64, uint32, uint64"},
        {"Einsum",
         "",
         2,
         0,
         {OG_FLOAT16, OG_INT8},
         OG_BOOL,
         "float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, "
         "uint64"},
        {"Adam",
         "ai.onnx.preview.training",
         6,
         2,
         {OG_FLOAT, OG_DOUBLE},
         OG_INT64,
         "float32, float64"},
        {"Momentum",
         "ai.onnx.preview.training",
         5,
         2,
         {OG_DOUBLE, OG_FLOAT},
         OG_FLOAT16,
         "float32, float64"},
        {"Adagrad",
         "ai.onnx.preview.training",
         5,
         2,
         {OG_FLOAT, OG_DOUBLE},
         OG_INT32,
         "float32, float64"},
        /* the newer normalizations: 16-bit floats bound to the float32 loops' binding */
        {"GroupNormalization",
         "",
         3,
         0,
         {OG_FLOAT, OG_FLOAT16},
         OG_INT32,
         "float32, float64, float16, bfloat16"},
        {"LRN", "", 1, 0, {OG_DOUBLE, OG_BFLOAT16}, OG_INT8, "float32, float64, float16, bfloat16"},
        {"LpNormalization",
         "",
         1,
         0,
         {OG_FLOAT, OG_DOUBLE},
         OG_INT64,
         "float32, float64, float16, bfloat16"},
        {"LpPool",
         "",
         1,
         0,
         {OG_FLOAT, OG_FLOAT16},
         OG_INT8,
         "float32, float64, float16, bfloat16"},
        {"AffineGrid",
         "",
         2,
         0,
         {OG_DOUBLE, OG_FLOAT16},
         OG_INT32,
         "float32, float64, float16, bfloat16"},
        {"RoiAlign",
         "",
         3,
         0,
         {OG_FLOAT, OG_DOUBLE},
         OG_INT64,
         "float32, float64, float16, bfloat16"},
        {"Hardmax",
         "",
         1,
         0,
         {OG_FLOAT, OG_DOUBLE},
         OG_INT32,
         "float32, float64, float16, bfloat16"},
        {"Det",
         "",
         1,
         0,
         {OG_DOUBLE, OG_BFLOAT16},
         OG_INT64,
         "float32, float64, float16, bfloat16"},
        {"MeanVarianceNormalization",
         "",
         1,
         0,
         {OG_DOUBLE, OG_FLOAT16},
         OG_UINT8,
         "float32, float64, float16, bfloat16"},
        /* rnn: float16 through float32's binding, no bfloat16 */
        {"LSTM", "", 3, 0, {OG_FLOAT, OG_FLOAT16}, OG_BFLOAT16, "float32, float64, float16"},
        {"GRUGrad",
         OG_RNN_DOMAIN,
         6,
         0,
         {OG_DOUBLE, OG_FLOAT},
         OG_INT32,
         "float32, float64, float16"},
    };
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_FLOAT, 2);
    CHECK(g != NULL);
    if (!g) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        og_node n = g->nodes[0];
        int ins[6] = {0, 0, 0, 0, 0, 0};
        n.op_type = (char *)cases[i].op;
        n.domain = (char *)cases[i].domain;
        n.n_in = cases[i].n_in;
        n.in = ins;
        og_dtype t[6] = {OG_FLOAT, OG_INT64, OG_FLOAT, OG_FLOAT, OG_FLOAT, OG_FLOAT};
        const void *impl[2] = {NULL, NULL};
        for (int j = 0; j < 2; j++) {
            og_kernel_binding b;
            t[cases[i].type_input] = cases[i].good[j];
            CHECK_OK(og_backend_bind(&og_cpu_backend, &n, t, NULL, &b));
            CHECKF(b.impl != NULL && b.type_input == cases[i].type_input &&
                       b.type == cases[i].good[j],
                   "%s at %s: no loop bound", cases[i].op, og_dtype_name(cases[i].good[j]));
            impl[j] = b.impl;
        }
        CHECKF(impl[0] != impl[1], "%s: one loop for two dtypes", cases[i].op);
        t[cases[i].type_input] = cases[i].bad;
        /* (an entry binding on several dtypes names the others between the two parts) */
        char want[256], want_has[256];
        snprintf(want, sizeof want,
                 "node 'n0' (%s%s%s, opset 14): input %d is %s, which the CPU kernel of %s "
                 "does not compute",
                 cases[i].domain, cases[i].domain[0] ? "." : "", cases[i].op, cases[i].type_input,
                 og_dtype_name(cases[i].bad), cases[i].op);
        snprintf(want_has, sizeof want_has, "(it computes %s)", cases[i].computes);
        og_kernel_binding b;
        CHECK(og_backend_bind(&og_cpu_backend, &n, t, NULL, &b) == OG_ERR_UNSUPPORTED);
        CHECKF(strstr(og_last_error(), want) != NULL && strstr(og_last_error(), want_has) != NULL,
               "%s: message %s", cases[i].op, og_last_error());
    }
    nh_release(&r);
}

/* t's bytes and shape under another dtype of the same size. */
static og_tensor *relabel(const og_tensor *t, og_dtype as)
{
    og_tensor *u = NULL;
    CHECK_OK(og_tensor_from_data(as, t->rank, t->dims, t->data, og_tensor_nbytes(t), NULL, &u));
    return u;
}

/* An unsigned dtype of dt's size: most kernels of these families refuse it; those that
 * compute it (Clip, Div, Mod) give other bytes than the signed loop on negative values.  For
 * the 8-bit quantized types, the other one (int8 <-> uint8). */
static og_dtype unsigned_like(og_dtype dt)
{
    if (dt == OG_INT8) return OG_UINT8;
    if (dt == OG_UINT8) return OG_INT8;
    return og_dtype_size(dt) == 8 ? OG_UINT64 : OG_UINT32;
}

/* A family kernel computes with the loop bound to its node, whatever the tensors' dtype
 * field says: given the binding (k->impl) of case c's resolved node and the same bytes
 * labelled with an unsigned type of the same size (bit i of lie_in: input i; of lie_out:
 * output j), it writes the bytes the session wrote; left to pick its loop itself
 * (k->impl NULL), it reads the label and refuses or computes the unsigned result. */
static void bound_loop_is_used(const nh_node *c, unsigned lie_in, unsigned lie_out)
{
    nh_result r;
    CHECK_OK(nh_run(c, &r));
    if (r.status) {
        nh_release(&r);
        return;
    }
    const og_node *n = r.node;
    og_dtype types[NH_MAX_IO], out_types[NH_MAX_IO];
    for (int i = 0; i < n->n_in; i++)
        types[i] = n->in[i] >= 0 ? r.g->values[n->in[i]].dtype : OG_UNDEFINED;
    for (int j = 0; j < n->n_out; j++)
        out_types[j] = n->out[j] >= 0 ? r.g->values[n->out[j]].dtype : OG_UNDEFINED;
    og_kernel_binding b;
    CHECK_OK(og_backend_bind(&og_cpu_backend, n, types, out_types, &b));
    CHECKF(b.impl != NULL, "%s: no loop bound", n->op_type);
    const og_tensor *in[NH_MAX_IO] = {0};
    og_tensor *lied[NH_MAX_IO] = {0}, *out[NH_MAX_IO] = {0};
    for (int i = 0; i < n->n_in; i++) {
        in[i] = c->in[i];
        if (c->in[i] && (lie_in >> i & 1))
            in[i] = lied[i] = relabel(c->in[i], unsigned_like(c->in[i]->dtype));
    }
    for (int j = 0; j < n->n_out; j++) {
        const og_tensor *y = r.out[j];
        if (!y) continue;
        og_dtype dt = (lie_out >> j & 1) ? unsigned_like(y->dtype) : y->dtype;
        CHECK_OK(og_tensor_alloc(dt, y->rank, y->dims, NULL, &out[j]));
    }
    og_kernel_ctx k = {
        .node = n, .params = n->params, .alloc = r.g->alloc, .threads = 1, .impl = b.impl};
    og_status st = b.fn(&k, in, n->n_in, out, n->n_out);
    CHECKF(st == OG_OK, "%s with its bound loop: %s", n->op_type, og_last_error());
    for (int j = 0; j < n->n_out && !st; j++)
        if (out[j])
            CHECKF(memcmp(out[j]->data, r.out[j]->data, og_tensor_nbytes(out[j])) == 0,
                   "%s: output %d differs from the session's", n->op_type, j);
    k.impl = NULL;
    st = b.fn(&k, in, n->n_in, out, n->n_out);
    bool same = st == OG_OK;
    for (int j = 0; j < n->n_out && same; j++)
        if (out[j]) same = memcmp(out[j]->data, r.out[j]->data, og_tensor_nbytes(out[j])) == 0;
    CHECKF(st == OG_ERR_UNSUPPORTED || (st == OG_OK && !same),
           "%s without a binding: status %s (%s the session's bytes)", n->op_type,
           og_status_name(st), same ? "with" : "without");
    nh_free_tensors(lied, NH_MAX_IO);
    nh_free_tensors(out, NH_MAX_IO);
    nh_release(&r);
}

static void cpu_kernels_use_bound_loops(void)
{
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = sin(0.7 * i) * 3;
    /* pool: MaxPool float32 with its indices (int64, not relabelled) */
    og_tensor *x = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 4, 4}, v);
    nh_node pool = {.op = "MaxPool",
                    .opset = 12,
                    .attrs = {NH_INTS("kernel_shape", 2, 2), NH_INTS("strides", 2, 2)},
                    .in = {x},
                    .n_out = 2};
    bound_loop_is_used(&pool, 1, 1);
    og_tensor_free(x);
    /* pool: LpPool float64, p = 3 (pow), padded; its loops carry the average pool's */
    x = nh_tensor(OG_DOUBLE, 4, (int64_t[]){1, 2, 4, 4}, v);
    nh_node lppool = {
        .op = "LpPool",
        .opset = 18,
        .attrs = {NH_INTS("kernel_shape", 3, 3), NH_INTS("pads", 1, 1, 1, 1), NH_INT("p", 3)},
        .in = {x}};
    bound_loop_is_used(&lppool, 1, 1);
    og_tensor_free(x);
    /* pool: RoiAlign float64, two regions (the rois relabelled too: read by the bound loop) */
    og_tensor *ra[3] = {
        nh_tensor(OG_DOUBLE, 4, (int64_t[]){2, 2, 4, 4}, v),
        nh_tensor(OG_DOUBLE, 2, (int64_t[]){2, 4}, (double[]){0.5, 0.2, 3.1, 2.7, 1, 1, 2, 3}),
        nh_tensor(OG_INT64, 1, (int64_t[]){2}, (double[]){1, 0})};
    nh_node roi = {.op = "RoiAlign",
                   .opset = 16,
                   .attrs = {NH_INT("output_height", 2), NH_INT("output_width", 3),
                             NH_INT("sampling_ratio", 2)},
                   .in = {ra[0], ra[1], ra[2]}};
    bound_loop_is_used(&roi, 3, 1);
    nh_free_tensors(ra, 3);

    /* norm: LayerNormalization float64 (Mean and InvStdDev are float32) */
    og_tensor *ln[3] = {nh_tensor(OG_DOUBLE, 2, (int64_t[]){4, 8}, v),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){8}, v + 32),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){8}, v + 40)};
    nh_node norm = {
        .op = "LayerNormalization", .opset = 17, .in = {ln[0], ln[1], ln[2]}, .n_out = 3};
    bound_loop_is_used(&norm, 7, 1);
    nh_free_tensors(ln, 3);
    /* norm: the same with Mean and InvStdDev relabelled (their float32 stores are bound) */
    ln[0] = nh_tensor(OG_DOUBLE, 2, (int64_t[]){4, 8}, v);
    ln[1] = nh_tensor(OG_DOUBLE, 1, (int64_t[]){8}, v + 32);
    ln[2] = nh_tensor(OG_DOUBLE, 1, (int64_t[]){8}, v + 40);
    nh_node norm_io = {.op = "LayerNormalization",
                       .opset = 17,
                       .attrs = {NH_INT("stash_type", 1)},
                       .in = {ln[0], ln[1], ln[2]},
                       .n_out = 3};
    bound_loop_is_used(&norm_io, 7, 7);
    nh_free_tensors(ln, 3);
    /* norm: BatchNormalization training float32 (X relabelled; its running mean and variance
     * are float64, their stores bound), and Dropout-7's float32 mask (all ones) */
    og_tensor *bn[5] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){2, 3, 2, 2}, v),
                        nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, v + 30),
                        nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, v + 33),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){3}, v + 36),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){3}, (double[]){1, 2, 3})};
    nh_node batchnorm = {.op = "BatchNormalization",
                         .opset = 15,
                         .attrs = {NH_INT("training_mode", 1)},
                         .in = {bn[0], bn[1], bn[2], bn[3], bn[4]},
                         .n_out = 3};
    bound_loop_is_used(&batchnorm, 1, 7);
    nh_free_tensors(bn, 5);
    x = nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 4}, v);
    nh_node dropout = {.op = "Dropout", .opset = 7, .in = {x}, .n_out = 2};
    bound_loop_is_used(&dropout, 1, 3);
    og_tensor_free(x);
    /* tensor: Cast float32 to int32 (the loop of the pair, saturating; as uint32, the
     * unbound kernel gives 0 for the negative values) and CastLike float64 to int64 */
    x = nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 4}, v);
    nh_node cast = {.op = "Cast", .opset = 19, .attrs = {NH_INT("to", OG_INT32)}, .in = {x}};
    bound_loop_is_used(&cast, 0, 1);
    og_tensor_free(x);
    og_tensor *cl[2] = {nh_tensor(OG_DOUBLE, 2, (int64_t[]){3, 4}, v),
                        nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){0})};
    nh_node castlike = {.op = "CastLike", .opset = 19, .in = {cl[0], cl[1]}};
    bound_loop_is_used(&castlike, 0, 1);
    nh_free_tensors(cl, 2);
    /* norm, the newer ops: GroupNormalization float64 (opset 21: scale and bias per channel)
     * and LRN float32 */
    og_tensor *gn[3] = {nh_tensor(OG_DOUBLE, 4, (int64_t[]){2, 4, 2, 2}, v),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){4}, v + 32),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){4}, v + 40)};
    nh_node groupnorm = {.op = "GroupNormalization",
                         .opset = 21,
                         .attrs = {NH_INT("num_groups", 2)},
                         .in = {gn[0], gn[1], gn[2]}};
    bound_loop_is_used(&groupnorm, 7, 1);
    nh_free_tensors(gn, 3);
    x = nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 5, 2, 3}, v);
    nh_node lrn = {.op = "LRN", .opset = 13, .attrs = {NH_INT("size", 3)}, .in = {x}};
    bound_loop_is_used(&lrn, 1, 1);
    og_tensor_free(x);

    /* linalg: MatMul float32 (the plain loops) and Einsum float64 */
    og_tensor *mm[2] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 3, 4}, v),
                        nh_tensor(OG_FLOAT, 2, (int64_t[]){4, 5}, v + 24)};
    nh_node matmul = {.op = "MatMul", .opset = 13, .in = {mm[0], mm[1]}};
    bound_loop_is_used(&matmul, 3, 1);
    nh_free_tensors(mm, 2);
    og_tensor *es[2] = {nh_tensor(OG_DOUBLE, 3, (int64_t[]){2, 3, 4}, v),
                        nh_tensor(OG_DOUBLE, 3, (int64_t[]){2, 4, 5}, v + 24)};
    nh_node einsum = {.op = "Einsum",
                      .opset = 12,
                      .attrs = {NH_STRING("equation", "bij,bjk->bki")},
                      .in = {es[0], es[1]}};
    bound_loop_is_used(&einsum, 3, 1);
    nh_free_tensors(es, 2);
    /* linalg: Det float32, two 3x3 matrices */
    x = nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 3, 3}, v);
    nh_node det = {.op = "Det", .opset = 11, .in = {x}};
    bound_loop_is_used(&det, 1, 1);
    og_tensor_free(x);

    /* resize: AffineGrid float32, 2-D, align_corners */
    og_tensor *ag[2] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 2, 3}, v),
                        nh_tensor(OG_INT64, 1, (int64_t[]){4}, (double[]){2, 1, 3, 4})};
    nh_node affine = {.op = "AffineGrid",
                      .opset = 20,
                      .attrs = {NH_INT("align_corners", 1)},
                      .in = {ag[0], ag[1]}};
    bound_loop_is_used(&affine, 1, 1);
    nh_free_tensors(ag, 2);

    /* reduce: Hardmax float64 along axis 1 */
    x = nh_tensor(OG_DOUBLE, 3, (int64_t[]){2, 5, 3}, v);
    nh_node hardmax = {.op = "Hardmax", .opset = 13, .attrs = {NH_INT("axis", 1)}, .in = {x}};
    bound_loop_is_used(&hardmax, 1, 1);
    og_tensor_free(x);

    /* loss: SoftmaxCrossEntropyLoss float64 with log_prob, int64 targets */
    og_tensor *sce[2] = {nh_tensor(OG_DOUBLE, 2, (int64_t[]){4, 5}, v),
                         nh_tensor(OG_INT64, 1, (int64_t[]){4}, (double[]){1, 0, 4, 2})};
    nh_node loss = {
        .op = "SoftmaxCrossEntropyLoss", .opset = 13, .in = {sce[0], sce[1]}, .n_out = 2};
    bound_loop_is_used(&loss, 1, 3);
    nh_free_tensors(sce, 2);

    /* optim: Adam float32 (R float, T int64 as they are) */
    int64_t d8 = 8;
    og_tensor *ad[6] = {nh_scalar(OG_FLOAT, 0.1),
                        nh_scalar(OG_INT64, 2),
                        nh_tensor(OG_FLOAT, 1, &d8, v),
                        nh_tensor(OG_FLOAT, 1, &d8, v + 8),
                        nh_tensor(OG_FLOAT, 1, &d8, v + 16),
                        nh_tensor(OG_FLOAT, 1, &d8, (double[]){1, 2, 3, 4, 5, 6, 7, 8})};
    nh_node adam = {.op = "Adam",
                    .domain = "ai.onnx.preview.training",
                    .opset = 1,
                    .in = {ad[0], ad[1], ad[2], ad[3], ad[4], ad[5]},
                    .n_out = 3};
    bound_loop_is_used(&adam, 0x3c, 7);
    nh_free_tensors(ad, 6);
}

/* The quant family has two type variables: QuantizeLinear's and DequantizeLinear's loops are
 * bound from every input's static dtype (select_types), DynamicQuantizeLinear's from x's. */
static void cpu_binds_quant_by_all_types(void)
{
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = sin(0.7 * i) * 3;
    /* the bound loop is used: x (QuantizeLinear, DynamicQuantizeLinear) or y
     * (DequantizeLinear) relabelled, the kernel computes with its binding and refuses
     * without it */
    og_tensor *q[3] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 4}, v),
                       nh_tensor(OG_FLOAT, 1, (int64_t[]){4}, (double[]){0.02, 0.05, 0.1, 0.3}),
                       nh_tensor(OG_INT8, 1, (int64_t[]){4}, (double[]){-3, 0, 7, 1})};
    nh_node quant = {.op = "QuantizeLinear", .opset = 13, .in = {q[0], q[1], q[2]}};
    bound_loop_is_used(&quant, 1, 0);
    nh_free_tensors(q, 3);
    og_tensor *dq[3] = {
        nh_tensor(OG_UINT8, 2, (int64_t[]){2, 3}, (double[]){0, 7, 128, 200, 255, 3}),
        nh_scalar(OG_DOUBLE, 0.125), nh_scalar(OG_UINT8, 100)};
    nh_node dequant = {.op = "DequantizeLinear", .opset = 13, .in = {dq[0], dq[1], dq[2]}};
    bound_loop_is_used(&dequant, 0, 1);
    nh_free_tensors(dq, 3);
    og_tensor *x = nh_tensor(OG_FLOAT, 2, (int64_t[]){4, 5}, v);
    nh_node dynq = {.op = "DynamicQuantizeLinear", .opset = 11, .in = {x}, .n_out = 3};
    bound_loop_is_used(&dynq, 1, 2);
    og_tensor_free(x);

    /* each pair of dtypes its loop, and a refusal naming the other inputs' dtypes */
    nh_result r;
    og_tensor *in[3] = {nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, v), nh_scalar(OG_FLOAT, 0.5),
                        nh_scalar(OG_UINT8, 3)};
    nh_node spec = {.op = "QuantizeLinear", .opset = 13, .in = {in[0], in[1], in[2]}};
    CHECK_OK(nh_load(&spec, &r));
    if (!r.status) {
        og_kernel_binding b;
        og_dtype t[3] = {OG_FLOAT, OG_FLOAT, OG_UINT8};
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        const void *f_u8 = b.impl;
        CHECK(f_u8 != NULL && b.all_types == 1 && b.types[1] == OG_FLOAT && b.types[2] == OG_UINT8);
        t[1] = OG_DOUBLE; /* float64 arithmetic */
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.impl != NULL && b.impl != f_u8);
        t[1] = OG_FLOAT;
        t[2] = OG_INT16;
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.impl != NULL && b.impl != f_u8);
        t[1] = OG_UNDEFINED; /* known at run time only: the kernel picks then */
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.fn != NULL && b.impl == NULL && b.all_types == 0);
        t[0] = OG_INT64;
        t[1] = OG_FLOAT;
        t[2] = OG_UINT8;
        CHECK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b) == OG_ERR_UNSUPPORTED);
        CHECKF(strstr(og_last_error(),
                      "node 'n0' (QuantizeLinear, opset 13): input 0 is int64, which the CPU "
                      "kernel of QuantizeLinear does not compute with input 1 float32, input 2 "
                      "uint8 (it computes float32, float64, float16, bfloat16, int32)") != NULL,
               "message %s", og_last_error());
        t[0] = OG_FLOAT;
        t[2] = OG_INT32;
        CHECK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b) == OG_ERR_UNSUPPORTED);
        CHECKF(strstr(og_last_error(),
                      "input 0 is float32, which the CPU kernel of QuantizeLinear does not "
                      "compute with input 1 float32, input 2 int32 (it computes no dtype)") != NULL,
               "message %s", og_last_error());
    }
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* Binding case spec's resolved node at dtypes t (inference would refuse most of them, so
 * the bind is called directly) fails naming node, op, device and the dtypes: want. */
static void check_bind_refusal(const nh_node *spec, const og_dtype *t, const char *want)
{
    nh_result r;
    CHECK_OK(nh_load(spec, &r));
    if (!r.status) {
        og_kernel_binding b;
        CHECK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b) == OG_ERR_UNSUPPORTED);
        CHECKF(strstr(og_last_error(), want) != NULL, "%s: message %s", spec->op, og_last_error());
    }
    nh_release(&r);
}

/* GridSample has two type variables, X and the grid: select_types binds the loop of the
 * pair (16-bit floats through the float32 pair's). */
static void cpu_binds_grid_sample(void)
{
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = sin(0.7 * i) * 1.1;
    og_tensor *gs[2] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 3, 4}, v),
                        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 3, 2}, v + 24)};
    nh_node grid = {.op = "GridSample", .opset = 20, .in = {gs[0], gs[1]}};
    bound_loop_is_used(&grid, 3, 1); /* X and the grid relabelled */
    check_bind_refusal(&grid, (og_dtype[]){OG_FLOAT, OG_INT64},
                       "node 'n0' (GridSample, opset 20): input 0 is float32, which the CPU kernel "
                       "of GridSample does not compute with input 1 int64 (it computes no dtype)");
    check_bind_refusal(&grid, (og_dtype[]){OG_STRING, OG_DOUBLE},
                       "input 0 is string, which the CPU kernel of GridSample does not compute "
                       "with input 1 float64 (it computes float32, float64, float16, bfloat16, "
                       "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool)");
    nh_free_tensors(gs, 2);
    og_tensor *gd[2] = {nh_tensor(OG_DOUBLE, 4, (int64_t[]){1, 2, 3, 4}, v),
                        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 3, 2}, v + 24)};
    nh_node mixed = {.op = "GridSample",
                     .opset = 20,
                     .attrs = {NH_STRING("mode", "cubic")},
                     .in = {gd[0], gd[1]}};
    bound_loop_is_used(&mixed, 1, 1);
    nh_free_tensors(gd, 2);
}

/* rnn: LSTM float64 and GRU float32, X, W and R relabelled, their outputs too */
static void cpu_rnn_uses_bound_loops(void)
{
    double v[256];
    for (int i = 0; i < 256; i++) v[i] = sin(0.7 * i) * 0.5;
    og_tensor *ls[3] = {nh_tensor(OG_DOUBLE, 3, (int64_t[]){3, 2, 4}, v),
                        nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 12, 4}, v + 24),
                        nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 12, 3}, v + 72)};
    nh_node lstm = {.op = "LSTM",
                    .opset = 14,
                    .attrs = {NH_INT("hidden_size", 3)},
                    .in = {ls[0], ls[1], ls[2]},
                    .n_out = 3};
    bound_loop_is_used(&lstm, 7, 7);
    nh_free_tensors(ls, 3);
    og_tensor *gr[3] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){3, 2, 4}, v),
                        nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 9, 4}, v + 24),
                        nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 9, 3}, v + 96)};
    nh_node gru = {.op = "GRU",
                   .opset = 14,
                   .attrs = {NH_INT("hidden_size", 3), NH_STRING("direction", "bidirectional")},
                   .in = {gr[0], gr[1], gr[2]},
                   .n_out = 2};
    bound_loop_is_used(&gru, 7, 3);
    nh_free_tensors(gr, 3);
}

/* ml: Scaler, Binarizer, LinearRegressor and a tree ensemble (float64 x) compute with the
 * loops bound to x's dtype (and the output's); a dtype they lack is refused at bind. */
static void cpu_ml_uses_bound_loops(void)
{
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = sin(0.7 * i) * 3;
    og_tensor *x = nh_tensor(OG_FLOAT, 2, (int64_t[]){4, 3}, v);
    nh_node scaler = {
        .op = "Scaler",
        .domain = "ai.onnx.ml",
        .opset = 1,
        .attrs = {NH_FLOATS("offset", 0.5f, -1.0f, 2.0f), NH_FLOATS("scale", 2.0f, 0.25f, 3.0f)},
        .in = {x}};
    bound_loop_is_used(&scaler, 1, 1);
    check_bind_refusal(&scaler, (og_dtype[]){OG_UINT8},
                       "input 0 is uint8, which the CPU kernel of Scaler does not compute (it "
                       "computes float32, float64, int32, int64)");
    nh_node binarizer = {.op = "Binarizer",
                         .domain = "ai.onnx.ml",
                         .opset = 1,
                         .attrs = {NH_FLOAT("threshold", 0.5f)},
                         .in = {x}};
    bound_loop_is_used(&binarizer, 1, 1);
    og_tensor_free(x);
    x = nh_tensor(OG_DOUBLE, 2, (int64_t[]){4, 2}, (double[]){1, -2, 3, 4, -5, 6, 7, 8});
    nh_node linear = {.op = "LinearRegressor",
                      .domain = "ai.onnx.ml",
                      .opset = 1,
                      .attrs = {NH_FLOATS("coefficients", 0.5f, -1.5f), NH_FLOATS("intercepts", 2)},
                      .in = {x}};
    bound_loop_is_used(&linear, 1, 1);
    nh_node tree = {
        .op = "TreeEnsembleRegressor",
        .domain = "ai.onnx.ml",
        .opset = 3,
        .attrs = {NH_INT("n_targets", 1), NH_INTS("nodes_treeids", 0, 0, 0),
                  NH_INTS("nodes_nodeids", 0, 1, 2), NH_INTS("nodes_featureids", 1, 0, 0),
                  NH_STRINGS("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF"),
                  NH_FLOATS("nodes_values", 0.3f, 0, 0), NH_INTS("nodes_truenodeids", 1, 0, 0),
                  NH_INTS("nodes_falsenodeids", 2, 0, 0), NH_INTS("target_ids", 0, 0),
                  NH_INTS("target_nodeids", 1, 2), NH_INTS("target_treeids", 0, 0),
                  NH_FLOATS("target_weights", 1.5f, -2.0f)},
        .in = {x}};
    bound_loop_is_used(&tree, 1, 0);
    check_bind_refusal(&tree, (og_dtype[]){OG_BOOL},
                       "node 'n0' (ai.onnx.ml.TreeEnsembleRegressor, opset 3): input 0 is bool, "
                       "which the CPU kernel of TreeEnsembleRegressor does not compute (it "
                       "computes float32, float64, int32, int64)");
    og_tensor_free(x);
}

/* The small per-call picks that now bind: Mean's final division, Range's loop, Clip's
 * integer bounds, and integer Div's zero-divisor scan (the bound loop's slot: with the binding, a
 * divisor relabelled uint32 is still scanned as int32 and its zero refused; without, the kernel
 * refuses the dtype). */
static void cpu_small_picks_bind(void)
{
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = sin(0.7 * i) * 3;
    og_tensor *m[3] = {nh_tensor(OG_DOUBLE, 1, (int64_t[]){4}, v),
                       nh_tensor(OG_DOUBLE, 2, (int64_t[]){3, 4}, v + 4),
                       nh_tensor(OG_DOUBLE, 1, (int64_t[]){1}, v + 1)};
    nh_node mean = {.op = "Mean", .opset = 13, .in = {m[0], m[1], m[2]}};
    bound_loop_is_used(&mean, 7, 1);
    nh_free_tensors(m, 3);
    og_tensor *rg[3] = {nh_scalar(OG_FLOAT, 0.5), nh_scalar(OG_FLOAT, 4),
                        nh_scalar(OG_FLOAT, 0.75)};
    nh_node range = {.op = "Range", .opset = 11, .in = {rg[0], rg[1], rg[2]}};
    bound_loop_is_used(&range, 5, 1);
    nh_free_tensors(rg, 3);
    /* Clip int32: the bounds are read as the bound loop's integers (relabelled uint32 here) */
    og_tensor *cl[3] = {nh_tensor(OG_INT32, 1, (int64_t[]){5}, (double[]){-7, -2, 0, 3, 9}),
                        nh_scalar(OG_INT32, -3), nh_scalar(OG_INT32, 4)};
    nh_node clip = {.op = "Clip", .opset = 13, .in = {cl[0], cl[1], cl[2]}};
    bound_loop_is_used(&clip, 7, 1);
    nh_free_tensors(cl, 3);

    og_tensor *dv[2] = {nh_tensor(OG_INT32, 1, (int64_t[]){3}, (double[]){7, -9, 12}),
                        nh_tensor(OG_INT32, 1, (int64_t[]){3}, (double[]){2, 4, -5})};
    nh_node div = {.op = "Div", .opset = 14, .in = {dv[0], dv[1]}};
    bound_loop_is_used(&div, 3, 1);
    nh_result r;
    CHECK_OK(nh_load(&div, &r));
    if (!r.status) {
        og_dtype t[2] = {OG_INT32, OG_INT32};
        og_kernel_binding b;
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        og_tensor *a = relabel(dv[0], OG_UINT32), *zero = NULL, *y = NULL;
        int32_t z[3] = {3, 0, 1};
        CHECK_OK(og_tensor_from_data(OG_UINT32, 1, (int64_t[]){3}, z, sizeof z, NULL, &zero));
        CHECK_OK(og_tensor_alloc(OG_UINT32, 1, (int64_t[]){3}, NULL, &y));
        const og_tensor *ins[2] = {a, zero};
        og_kernel_ctx k = {.node = r.node,
                           .params = r.node->params,
                           .alloc = r.g->alloc,
                           .threads = 1,
                           .impl = b.impl};
        CHECK(b.fn(&k, ins, 2, &y, 1) == OG_ERR_RUNTIME);
        CHECKF(strstr(og_last_error(), "integer division by zero (element 1 of input 1)") != NULL,
               "message %s", og_last_error());
        k.impl = NULL; /* the unsigned loop: the same zero divisor */
        CHECK(b.fn(&k, ins, 2, &y, 1) == OG_ERR_RUNTIME);
        og_tensor_free(a);
        og_tensor_free(zero);
        og_tensor_free(y);
    }
    nh_release(&r);
    nh_free_tensors(dv, 2);
}

/* Scatter's loop depends on the data's dtype and the reduction, its constraint on the
 * indices' dtype (two type variables), whose read is bound with the loop: ScatterElements with
 * reduction add binds float32's add, refuses a bool data at bind, and ScatterND without
 * reduction binds a byte mover; int64 indices relabelled uint64 are read as bound (refused
 * without a binding). */
static void cpu_scatter_binds_by_all_types(void)
{
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = sin(0.7 * i) * 3;
    og_tensor *se[3] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, v),
                        nh_tensor(OG_INT64, 2, (int64_t[]){2, 2}, (double[]){0, 2, 2, 0}),
                        nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 2}, v + 6)};
    nh_node scatter = {.op = "ScatterElements",
                       .opset = 18,
                       .attrs = {NH_INT("axis", 1), NH_STRING("reduction", "add")},
                       .in = {se[0], se[1], se[2]}};
    bound_loop_is_used(&scatter, 5, 1);
    bound_loop_is_used(&scatter, 7, 1); /* the indices' int64 read is bound too */
    check_bind_refusal(&scatter, (og_dtype[]){OG_BOOL, OG_INT64, OG_BOOL},
                       "node 'n0' (ScatterElements, opset 18): input 1 is int64, which the CPU "
                       "kernel of ScatterElements does not compute with input 0 bool, input 2 "
                       "bool (it computes no dtype)");
    check_bind_refusal(&scatter, (og_dtype[]){OG_FLOAT, OG_INT8, OG_FLOAT},
                       "input 1 is int8, which the CPU kernel of ScatterElements does not compute "
                       "with input 0 float32, input 2 float32 (it computes int32, int64)");
    nh_free_tensors(se, 3);
    og_tensor *sn[3] = {nh_tensor(OG_DOUBLE, 1, (int64_t[]){5}, v),
                        nh_tensor(OG_INT64, 2, (int64_t[]){2, 1}, (double[]){3, 1}),
                        nh_tensor(OG_DOUBLE, 1, (int64_t[]){2}, v + 8)};
    nh_node nd = {.op = "ScatterND", .opset = 18, .in = {sn[0], sn[1], sn[2]}};
    bound_loop_is_used(&nd, 2, 0); /* int64 indices relabelled uint64: read as bound */
    nh_result r;
    CHECK_OK(nh_run(&nd, &r));
    if (!r.status) {
        og_kernel_binding b;
        og_dtype t[3] = {OG_DOUBLE, OG_INT64, OG_DOUBLE};
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        const void *d64 = b.impl;
        t[0] = t[2] = OG_UINT64; /* the same size: the same byte mover */
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(d64 != NULL && b.impl == d64 && b.all_types == 1);
        t[1] = OG_INT32; /* the same update loop, the other index read */
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.impl != NULL && b.impl != d64);
    }
    nh_release(&r);
    nh_free_tensors(sn, 3);
}

/* The losses have two type variables, the scores (and weights) and the target: select_types
 * binds the loops of the pair, one per pair, and refuses a pair it lacks at bind, naming node,
 * op, device and both dtypes; the kernel reads the target through the bound loop (an int64
 * target relabelled uint64 is still read as int64; without a binding it is refused). */
static void cpu_loss_binds_by_all_types(void)
{
    double v[32];
    for (int i = 0; i < 32; i++) v[i] = sin(0.7 * i) * 2;
    og_tensor *sce[2] = {nh_tensor(OG_DOUBLE, 3, (int64_t[]){2, 4, 3}, v),
                         nh_tensor(OG_INT64, 2, (int64_t[]){2, 3}, (double[]){1, 0, 3, 2, 2, 1})};
    nh_node s = {.op = "SoftmaxCrossEntropyLoss", .opset = 13, .in = {sce[0], sce[1]}, .n_out = 2};
    bound_loop_is_used(&s, 2, 0);
    bound_loop_is_used(&s, 3, 3);
    check_bind_refusal(&s, (og_dtype[]){OG_DOUBLE, OG_UINT8},
                       "node 'n0' (SoftmaxCrossEntropyLoss, opset 13): input 0 is float64, which "
                       "the CPU kernel of SoftmaxCrossEntropyLoss does not compute with input 1 "
                       "uint8");
    nh_free_tensors(sce, 2);
    og_tensor *nl[3] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){4, 3}, v),
                        nh_tensor(OG_INT32, 1, (int64_t[]){4}, (double[]){2, 0, 1, 2}),
                        nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, v + 12)};
    nh_node nll = {.op = "NegativeLogLikelihoodLoss",
                   .opset = 13,
                   .attrs = {NH_STRING("reduction", "sum")},
                   .in = {nl[0], nl[1], nl[2]}};
    bound_loop_is_used(&nll, 2, 0);
    bound_loop_is_used(&nll, 7, 1);
    /* float16 scores run through float32's loops, of an int32 or int64 target only */
    check_bind_refusal(&nll, (og_dtype[]){OG_FLOAT16, OG_UINT8, OG_FLOAT16},
                       "input 0 is float16, which the CPU kernel of NegativeLogLikelihoodLoss "
                       "does not compute with input 1 uint8, input 2 float16");
    check_bind_refusal(&nll, (og_dtype[]){OG_FLOAT, OG_INT32, OG_DOUBLE},
                       "input 0 is float32, which the CPU kernel of NegativeLogLikelihoodLoss "
                       "does not compute with input 1 int32, input 2 float64");
    /* the pairs bind distinct loops; an unknown target dtype leaves the choice to the run */
    nh_result r;
    CHECK_OK(nh_load(&nll, &r));
    if (!r.status) {
        og_kernel_binding b;
        const void *impl[4];
        static const og_dtype pairs[4][2] = {{OG_FLOAT, OG_INT32},
                                             {OG_FLOAT, OG_INT64},
                                             {OG_DOUBLE, OG_INT32},
                                             {OG_DOUBLE, OG_INT64}};
        for (int i = 0; i < 4; i++) {
            og_dtype t[3] = {pairs[i][0], pairs[i][1], pairs[i][0]};
            CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
            impl[i] = b.impl;
            CHECK(b.impl != NULL && b.all_types == 1);
            for (int j = 0; j < i; j++) CHECK(impl[j] != impl[i]);
        }
        og_dtype t[3] = {OG_FLOAT, OG_UNDEFINED, OG_FLOAT};
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.impl == NULL);
    }
    nh_release(&r);
    nh_free_tensors(nl, 3);
}

/* Resize: linear and cubic bind their float32 or float64 loops (the integers and bool the
 * float64 ones on a copy; a string is refused at bind), nearest moves bytes of any dtype. */
static void cpu_resize_binds_loops(void)
{
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = sin(0.7 * i) * 3;
    og_tensor *rs[3] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 3, 4}, v), NULL,
                        nh_tensor(OG_FLOAT, 1, (int64_t[]){4}, (double[]){1, 1, 1.5, 2})};
    nh_node linear = {.op = "Resize",
                      .opset = 13,
                      .attrs = {NH_STRING("mode", "linear")},
                      .in = {rs[0], NULL, rs[2]},
                      .n_in = 3};
    bound_loop_is_used(&linear, 1, 1);
    nh_node cubic = {.op = "Resize",
                     .opset = 13,
                     .attrs = {NH_STRING("mode", "cubic")},
                     .in = {rs[0], NULL, rs[2]},
                     .n_in = 3};
    bound_loop_is_used(&cubic, 1, 1);
    check_bind_refusal(&linear, (og_dtype[]){OG_STRING, OG_UNDEFINED, OG_FLOAT},
                       "node 'n0' (Resize, opset 13): input 0 is string, which the CPU kernel of "
                       "Resize does not compute (it computes float32, float64, float16, bfloat16, "
                       "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool)");
    nh_result r;
    nh_node nearest = {.op = "Resize", .opset = 13, .in = {rs[0], NULL, rs[2]}, .n_in = 3};
    CHECK_OK(nh_load(&nearest, &r));
    if (!r.status) {
        og_kernel_binding b;
        og_dtype t[3] = {OG_UINT8, OG_UNDEFINED, OG_FLOAT};
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.impl != NULL);
    }
    nh_release(&r);
    nh_free_tensors(rs, 3);
}

/* A select_types binding holds only while every input has the static dtype it was bound
 * for: here the scale is declared float32 when the session binds QuantizeLinear's loop
 * (float32 arithmetic), the declaration is then dropped and a float64 scale comes in.  The
 * executor passes no binding, and the kernel picks float64 arithmetic itself:
 * 0.35f / 0.1 is 3.49999994 in float64 (3) but rounds to 3.5 in float32 (4, to even). */
static void quant_binding_follows_the_run(void)
{
    og_tensor *in[3] = {nh_scalar(OG_FLOAT, 0.35), nh_scalar(OG_FLOAT, 0.1),
                        nh_scalar(OG_UINT8, 0)};
    nh_node spec = {.op = "QuantizeLinear", .opset = 13, .in = {in[0], in[1], in[2]}};
    nh_result r;
    og_session *s = NULL;
    og_tensor *sd = nh_scalar(OG_DOUBLE, 0.1), *y = NULL;
    CHECK_OK(nh_load(&spec, &r));
    if (!r.status) CHECK_OK(og_exec_create(r.g, NULL, og_default_allocator(), NULL, false, &s));
    if (s) {
        const char *names[] = {"x0", "x1", "x2"};
        const og_tensor *f32[3] = {in[0], in[1], in[2]}, *f64[3] = {in[0], sd, in[2]};
        CHECK_OK(og_session_run(s, names, f32, 3, &y));
        if (y) CHECK(((const uint8_t *)og_tensor_cdata(y))[0] == 4);
        og_tensor_free(y);
        y = NULL;
        r.g->values[r.node->in[1]].dtype = OG_UNDEFINED;
        CHECK_OK(og_session_run(s, names, f64, 3, &y));
        if (y)
            CHECKF(((const uint8_t *)og_tensor_cdata(y))[0] == 3, "float64 scale: %d",
                   ((const uint8_t *)og_tensor_cdata(y))[0]);
    }
    og_tensor_free(y);
    og_tensor_free(sd);
    og_session_free(s);
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* A session runs a reduction through the loop it bound at creation. */
static void cpu_runs_bound_reduction(void)
{
    nh_result r;
    og_graph *g = one_node(&r, "ReduceSum", OG_FLOAT, 4);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, &og_cpu_backend, og_default_allocator(), NULL, false, &s));
    float xs[4] = {1.5f, -2.0f, 4.0f, 0.25f};
    og_tensor *y = run_x(s, xs, 4);
    CHECK(y != NULL && og_tensor_numel(y) == 1);
    if (y) CHECK(((const float *)og_tensor_cdata(y))[0] == 3.75f);
    og_tensor_free(y);
    og_session_free(s);
    nh_release(&r);
}

/* A binding holds for the static dtype only: a run whose input has another dtype (here the
 * declaration is dropped after the session bound Relu's float32 loop, and float64 comes
 * in) gets no bound loop, and the kernel picks the float64 one itself. */
static void binding_follows_the_run(void)
{
    nh_result r;
    og_graph *g = one_node(&r, "Relu", OG_FLOAT, 3);
    CHECK(g != NULL);
    if (!g) return;
    og_session *s = NULL;
    CHECK_OK(og_exec_create(g, NULL, og_default_allocator(), NULL, false, &s));
    g->values[g->inputs[0]].dtype = OG_UNDEFINED;
    double xs[3] = {-2.0, 0.5, 1e300};
    int64_t n = 3;
    og_tensor *x = NULL, *y = NULL;
    const char *names[] = {"x0"};
    CHECK_OK(og_tensor_wrap(OG_DOUBLE, 1, &n, xs, sizeof xs, NULL, &x));
    if (s && x) CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    if (y) {
        const double *yp = og_tensor_cdata(y);
        CHECK(og_tensor_dtype(y) == OG_DOUBLE && yp[0] == 0.0 && yp[1] == 0.5 && yp[2] == 1e300);
    }
    og_tensor_free(y);
    og_tensor_free(x);
    og_session_free(s);
    nh_release(&r);
}

/* Real nodes (their params matter): MaxPool-12 binds an int8 and a uint8 loop, AveragePool
 * has none for int8 (the message lists what it computes); Pow binds the loop of its (base,
 * exponent) pair through select_types, one per pair, and leaves the choice to the run when
 * the exponent's dtype is not known. */
static void cpu_binds_int_maxpool_and_pow(void)
{
    og_tensor *x = nh_tensor(OG_INT8, 4, (int64_t[]){1, 1, 2, 2}, NULL);
    const char *ops[] = {"MaxPool", "AveragePool"};
    for (int i = 0; i < 2; i++) {
        nh_node spec = {
            .op = ops[i], .opset = 12, .attrs = {NH_INTS("kernel_shape", 2, 2)}, .in = {x}};
        nh_result r;
        /* AveragePool's inference refuses int8: load it at float32, bind it at int8 */
        og_tensor *xf = i ? nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, NULL) : NULL;
        if (xf) spec.in[0] = xf;
        CHECK_OK(nh_load(&spec, &r));
        og_tensor_free(xf);
        r.spec = NULL;
        if (!r.g) continue;
        const og_node *n = &r.g->nodes[0];
        og_kernel_binding b;
        og_dtype t8 = OG_INT8, tu8 = OG_UINT8, tf = OG_FLOAT;
        if (i == 0) {
            CHECK_OK(og_backend_bind(&og_cpu_backend, n, &t8, NULL, &b));
            const void *i8 = b.impl;
            CHECK_OK(og_backend_bind(&og_cpu_backend, n, &tu8, NULL, &b));
            const void *u8 = b.impl;
            CHECK_OK(og_backend_bind(&og_cpu_backend, n, &tf, NULL, &b));
            CHECK(i8 && u8 && b.impl && i8 != u8 && i8 != b.impl);
        } else {
            CHECK(og_backend_bind(&og_cpu_backend, n, &t8, NULL, &b) == OG_ERR_UNSUPPORTED);
            CHECKF(strstr(og_last_error(), "(it computes float32, float64, float16)") != NULL,
                   "message %s", og_last_error());
        }
        nh_release(&r);
    }
    og_tensor_free(x);
    og_tensor *a = nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, NULL),
              *e = nh_tensor(OG_UINT64, 1, (int64_t[]){2}, NULL);
    nh_node pw = {.op = "Pow", .opset = 15, .in = {a, e}};
    nh_result r;
    CHECK_OK(nh_load(&pw, &r));
    r.spec = NULL;
    if (r.g) {
        const og_node *n = &r.g->nodes[0];
        og_kernel_binding b;
        og_dtype t[2] = {OG_FLOAT, OG_UINT64};
        CHECK_OK(og_backend_bind(&og_cpu_backend, n, t, NULL, &b));
        const void *fu64 = b.impl;
        CHECK(fu64 != NULL && b.all_types == 1);
        t[1] = OG_UINT32;
        CHECK_OK(og_backend_bind(&og_cpu_backend, n, t, NULL, &b));
        CHECK(b.impl != NULL && b.impl != fu64);
        t[1] = OG_UNDEFINED;
        CHECK_OK(og_backend_bind(&og_cpu_backend, n, t, NULL, &b));
        CHECK(b.fn != NULL && b.impl == NULL);
        /* a 16-bit float base or exponent: one binding, the float32 loop on copies */
        t[0] = OG_FLOAT16;
        t[1] = OG_FLOAT;
        CHECK_OK(og_backend_bind(&og_cpu_backend, n, t, NULL, &b));
        const void *half = b.impl;
        t[0] = OG_FLOAT;
        t[1] = OG_BFLOAT16;
        CHECK_OK(og_backend_bind(&og_cpu_backend, n, t, NULL, &b));
        CHECK(half != NULL && b.impl == half && half != fu64);
        t[0] = OG_BOOL;
        CHECK(og_backend_bind(&og_cpu_backend, n, t, NULL, &b) == OG_ERR_UNSUPPORTED);
    }
    nh_release(&r);
    nh_free_tensors((og_tensor *[]){a, e}, 2);
}

/* The last per-call picks of issue 9, one op per group: Col2Im (conv family), the ml family's
 * Imputer, OneHotEncoder, LabelEncoder, FeatureVectorizer and ZipMap, and the tensor and index
 * ops that write values of their dtype (OneHot, EyeLike, Pad's constant) compute with the
 * loops bound at creation, and a dtype they lack is refused at bind naming node, op, device
 * and the dtypes they compute. */
static void cpu_last_picks_bind(void)
{
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = sin(0.7 * i) * 3;
    /* Col2Im float32: 2 channels of 2x2 blocks over a 3x3 image */
    og_tensor *c2[3] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 8, 4}, v),
                        nh_tensor(OG_INT64, 1, (int64_t[]){2}, (double[]){3, 3}),
                        nh_tensor(OG_INT64, 1, (int64_t[]){2}, (double[]){2, 2})};
    nh_node col2im = {.op = "Col2Im", .opset = 18, .in = {c2[0], c2[1], c2[2]}};
    bound_loop_is_used(&col2im, 1, 1);
    check_bind_refusal(&col2im, (og_dtype[]){OG_STRING, OG_INT64, OG_INT64},
                       "node 'n0' (Col2Im, opset 18): input 0 is string, which the CPU kernel of "
                       "Col2Im does not compute (it computes float32, float64, float16, bfloat16, "
                       "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool)");
    nh_free_tensors(c2, 3);

    /* ml: Imputer float32 (NaN replaced per column), OneHotEncoder float64 -> float32,
     * LabelEncoder float keys -> int64 values, FeatureVectorizer and ZipMap */
    double xv[12] = {1, NAN, 3, NAN, 5, -6, 7, 8, NAN, 2, 2, 1};
    og_tensor *x = nh_tensor(OG_FLOAT, 2, (int64_t[]){4, 3}, xv);
    nh_node imputer = {.op = "Imputer",
                       .domain = "ai.onnx.ml",
                       .opset = 1,
                       .attrs = {NH_FLOATS("imputed_value_floats", 0.5f, -1.0f, 2.5f),
                                 NH_FLOAT("replaced_value_float", NAN)},
                       .in = {x}};
    bound_loop_is_used(&imputer, 1, 1);
    check_bind_refusal(&imputer, (og_dtype[]){OG_UINT8},
                       "node 'n0' (ai.onnx.ml.Imputer, opset 1): input 0 is uint8, which the CPU "
                       "kernel of Imputer does not compute (it computes float32, float64)");
    nh_node label = {.op = "LabelEncoder",
                     .domain = "ai.onnx.ml",
                     .opset = 2,
                     .attrs = {NH_FLOATS("keys_floats", 1.0f, 2.0f, 3.0f, 5.0f),
                               NH_INTS("values_int64s", 10, 20, 30, 50)},
                     .in = {x}};
    bound_loop_is_used(&label, 1, 0);
    check_bind_refusal(&label, (og_dtype[]){OG_INT64},
                       "node 'n0' (ai.onnx.ml.LabelEncoder, opset 2): input 0 is int64, which "
                       "the CPU kernel of LabelEncoder does not compute (it computes float32)");
    nh_node featvec = {.op = "FeatureVectorizer",
                       .domain = "ai.onnx.ml",
                       .opset = 1,
                       .attrs = {NH_INTS("inputdimensions", 3)},
                       .in = {x}};
    bound_loop_is_used(&featvec, 1, 1);
    og_tensor_free(x);
    x = nh_tensor(OG_DOUBLE, 2, (int64_t[]){3, 2}, (double[]){1, 4, 2.5, -7, 4, 1e30});
    nh_node onehot_enc = {.op = "OneHotEncoder",
                          .domain = "ai.onnx.ml",
                          .opset = 1,
                          .attrs = {NH_INTS("cats_int64s", 4, 1, 2, -7)},
                          .in = {x}};
    bound_loop_is_used(&onehot_enc, 1, 1);
    check_bind_refusal(&onehot_enc, (og_dtype[]){OG_INT16},
                       "input 0 is int16, which the CPU kernel of OneHotEncoder does not compute "
                       "(it computes float32, float64, int32, int64)");
    nh_node zipmap = {.op = "ZipMap",
                      .domain = "ai.onnx.ml",
                      .opset = 1,
                      .attrs = {NH_INTS("classlabels_int64s", 3, 9)},
                      .in = {x}};
    check_bind_refusal(&zipmap, (og_dtype[]){OG_INT64},
                       "input 0 is int64, which the CPU kernel of ZipMap does not compute (it "
                       "computes float32, float64)");
    og_tensor_free(x);

    /* OneHot: float indices (negative ones count from the end), int64 depth, float values */
    og_tensor *oh[3] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, (double[]){1, -1, 2, 0, 5, -3}),
                        nh_tensor(OG_INT64, 0, NULL, (double[]){3}),
                        nh_tensor(OG_FLOAT, 1, (int64_t[]){2}, (double[]){0.25, 4})};
    nh_node onehot = {.op = "OneHot", .opset = 11, .in = {oh[0], oh[1], oh[2]}};
    bound_loop_is_used(&onehot, 1, 0);
    check_bind_refusal(&onehot, (og_dtype[]){OG_BFLOAT16, OG_INT64, OG_FLOAT},
                       "node 'n0' (OneHot, opset 11): input 0 is bfloat16, which the CPU kernel of "
                       "OneHot does not compute (it computes float32, float64, float16, int8, "
                       "int16, int32, int64, uint8, uint16, uint32, uint64)");
    nh_free_tensors(oh, 3);
    /* EyeLike float32 (its ones written by the float32 loop); Pad 2's constant 1.5 */
    x = nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 4}, v);
    nh_node eye = {.op = "EyeLike", .opset = 9, .attrs = {NH_INT("k", 1)}, .in = {x}};
    bound_loop_is_used(&eye, 1, 0);
    check_bind_refusal(&eye, (og_dtype[]){OG_FLOAT8E4M3FN},
                       "input 0 is float8e4m3fn, which the CPU kernel of EyeLike does not compute "
                       "(it computes float32, float64, float16, bfloat16, int8, int16, int32, "
                       "int64, uint8, uint16, uint32, uint64, bool)");
    nh_node pad = {.op = "Pad",
                   .opset = 2,
                   .attrs = {NH_INTS("pads", 0, 1, 1, 0), NH_FLOAT("value", 1.5f)},
                   .in = {x}};
    bound_loop_is_used(&pad, 1, 1);
    check_bind_refusal(&pad, (og_dtype[]){OG_FLOAT8E5M2},
                       "node 'n0' (Pad, opset 2): input 0 is float8e5m2, which the CPU kernel of "
                       "Pad does not compute (it computes float32, float64, float16, bfloat16, "
                       "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool)");
    og_tensor_free(x);

    /* GatherElements: int32 indices (negative ones count from the end) read by the bound
     * loop, not as the uint32 they are relabelled */
    og_tensor *ge[2] = {nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, v),
                        nh_tensor(OG_INT32, 2, (int64_t[]){2, 2}, (double[]){-1, 0, 2, -3})};
    nh_node gather_el = {
        .op = "GatherElements", .opset = 13, .attrs = {NH_INT("axis", 1)}, .in = {ge[0], ge[1]}};
    bound_loop_is_used(&gather_el, 2, 0);
    nh_free_tensors(ge, 2);

    /* NonZero float32 (a -0 is zero as a float, not as the uint32 of its bits), GlobalLpPool
     * float64, MaxRoiPool float32 (X and the rois relabelled), DeformConv float32 (X, W and
     * the offsets relabelled) */
    x = nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, -0.0, 2, -0.0, 5, 0});
    nh_node nonzero = {.op = "NonZero", .opset = 13, .in = {x}};
    bound_loop_is_used(&nonzero, 1, 0);
    check_bind_refusal(&nonzero, (og_dtype[]){OG_STRING},
                       "node 'n0' (NonZero, opset 13): input 0 is string, which the CPU kernel of "
                       "NonZero does not compute (it computes float32, float64, float16, bfloat16, "
                       "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool, ");
    og_tensor_free(x);
    x = nh_tensor(OG_DOUBLE, 4, (int64_t[]){1, 2, 3, 3}, v);
    nh_node lp = {.op = "GlobalLpPool", .opset = 2, .attrs = {NH_INT("p", 3)}, .in = {x}};
    bound_loop_is_used(&lp, 1, 1);
    check_bind_refusal(&lp, (og_dtype[]){OG_BFLOAT16},
                       "input 0 is bfloat16, which the CPU kernel of GlobalLpPool does not "
                       "compute (it computes float32, float64, float16)");
    og_tensor_free(x);
    og_tensor *mr[2] = {
        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 2, 4, 4}, v),
        nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 5}, (double[]){0, 0, 0, 2, 3, 0, 1, 1, 3, 3})};
    nh_node maxroi = {.op = "MaxRoiPool",
                      .opset = 1,
                      .attrs = {NH_INTS("pooled_shape", 2, 2)},
                      .in = {mr[0], mr[1]}};
    bound_loop_is_used(&maxroi, 3, 1);
    nh_free_tensors(mr, 2);
    og_tensor *dc[3] = {nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 3, 3}, v),
                        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, v + 9),
                        nh_tensor(OG_FLOAT, 4, (int64_t[]){1, 8, 2, 2}, v + 13)};
    nh_node deform = {.op = "DeformConv", .opset = 19, .in = {dc[0], dc[1], dc[2]}};
    bound_loop_is_used(&deform, 7, 1);
    check_bind_refusal(&deform, (og_dtype[]){OG_INT32, OG_INT32, OG_INT32},
                       "input 0 is int32, which the CPU kernel of DeformConv does not compute (it "
                       "computes float32, float64, float16)");
    nh_free_tensors(dc, 3);
}

/* The kernels added with the miscops family files bind their loops too: qlinear (the
 * operands' and the output's int8/uint8 loops, select_types), signal (the float loads and
 * stores of DFT and STFT, the stores of the windows' and MelWeightMatrix's output_datatype),
 * random (Bernoulli and Multinomial: the input's loads and the output's stores), select
 * (Unique: the order of its dtype, every dtype having one) and string
 * (TfIdfVectorizer: the reads of x's integer type, or strings, as its pool holds; the other
 * string ops state their one dtype).  For one op of each: the bound loop is used, and a dtype
 * it lacks is refused when the node is bound, naming node, op, device and what it computes. */
static void cpu_miscops_bind_loops(void)
{
    /* qlinear: a and its zero point relabelled int8 -> uint8, y int8 -> uint8 */
    og_tensor *q[8] = {nh_tensor(OG_INT8, 2, (int64_t[]){2, 3}, (double[]){-10, 4, 7, -3, 9, -8}),
                       nh_scalar(OG_FLOAT, 0.05),
                       nh_scalar(OG_INT8, 0),
                       nh_tensor(OG_INT8, 2, (int64_t[]){3, 2}, (double[]){5, -6, 2, 10, -9, 1}),
                       nh_scalar(OG_FLOAT, 0.1),
                       nh_scalar(OG_INT8, 1),
                       nh_scalar(OG_FLOAT, 0.2),
                       nh_scalar(OG_INT8, -2)};
    nh_node qmm = {
        .op = "QLinearMatMul", .opset = 10, .in = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]}};
    bound_loop_is_used(&qmm, 1u | 4u, 1);
    check_bind_refusal(
        &qmm,
        (og_dtype[]){OG_FLOAT, OG_FLOAT, OG_INT8, OG_INT8, OG_FLOAT, OG_INT8, OG_FLOAT, OG_INT8},
        "node 'n0' (QLinearMatMul, opset 10): input 0 is float32, which the CPU "
        "kernel of QLinearMatMul does not compute with input 1 float32, input 2 "
        "int8, input 3 int8");
    check_bind_refusal(
        &qmm,
        (og_dtype[]){OG_INT8, OG_FLOAT, OG_INT8, OG_INT32, OG_FLOAT, OG_INT32, OG_FLOAT, OG_INT8},
        "which the CPU kernel of QLinearMatMul does not compute with input 1 "
        "float32, input 2 int8, input 3 int32, input 4 float32, input 5 int32, "
        "input 6 float32, input 7 int8 (it computes no dtype)");
    nh_free_tensors(q, 8);

    /* signal: a DFT of a float32 signal, x and y relabelled uint32 */
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = sin(0.9 * i) * 2 + 0.25;
    og_tensor *x = nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 8, 1}, v);
    nh_node dft = {.op = "DFT", .opset = 17, .attrs = {NH_INT("axis", 1)}, .in = {x}};
    bound_loop_is_used(&dft, 1, 1);
    check_bind_refusal(&dft, (og_dtype[]){OG_INT32},
                       "node 'n0' (DFT, opset 17): input 0 is int32, which the CPU kernel of DFT "
                       "does not compute (it computes float32, float64, float16, bfloat16)");
    og_tensor_free(x);

    /* select: Unique (sorted) of float32 values, x and Y relabelled uint32: the bound order
     * is float32's, an unbound kernel orders the relabelled bits (negatives last) */
    x = nh_tensor(OG_FLOAT, 1, (int64_t[]){8}, (double[]){2.5, -1, 3, -1, 0.5, -7, 3, 2.5});
    nh_node unique = {.op = "Unique", .opset = 11, .in = {x}, .n_out = 4};
    bound_loop_is_used(&unique, 1, 1);
    og_tensor_free(x);

    /* random: Bernoulli's kernel called directly (a session draws with another run key):
     * float32 probabilities relabelled uint32 give the same draws with the binding, a refusal
     * without it */
    double pr[12];
    for (int i = 0; i < 12; i++) pr[i] = (i % 5) / 4.0;
    x = nh_tensor(OG_FLOAT, 2, (int64_t[]){3, 4}, pr);
    nh_node bern = {.op = "Bernoulli",
                    .opset = 15,
                    .attrs = {NH_INT("dtype", OG_DOUBLE), NH_FLOAT("seed", 3)},
                    .in = {x}};
    nh_result r;
    CHECK_OK(nh_load(&bern, &r));
    if (!r.status) {
        og_kernel_binding b;
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, (og_dtype[]){OG_FLOAT}, NULL, &b));
        CHECK(b.impl != NULL);
        og_tensor *y[2] = {NULL, NULL}, *lied = relabel(x, OG_UINT32);
        CHECK_OK(og_tensor_alloc(OG_DOUBLE, 2, x->dims, NULL, &y[0]));
        CHECK_OK(og_tensor_alloc(OG_DOUBLE, 2, x->dims, NULL, &y[1]));
        og_kernel_ctx k = {
            .node = r.node, .params = r.node->params, .alloc = r.g->alloc, .threads = 1};
        const og_tensor *in[1] = {x};
        if (y[0] && y[1] && lied) {
            CHECK_OK(b.fn(&k, in, 1, &y[0], 1)); /* picks the float32 loop itself */
            in[0] = lied;
            k.impl = b.impl;
            CHECK_OK(b.fn(&k, in, 1, &y[1], 1));
            CHECK(memcmp(y[0]->data, y[1]->data, og_tensor_nbytes(y[0])) == 0);
            k.impl = NULL;
            CHECK(b.fn(&k, in, 1, &y[1], 1) == OG_ERR_UNSUPPORTED);
        }
        nh_free_tensors(y, 2);
        og_tensor_free(lied);
    }
    nh_release(&r);
    check_bind_refusal(&bern, (og_dtype[]){OG_INT32},
                       "node 'n0' (Bernoulli, opset 15): input 0 is int32, which the CPU kernel "
                       "of Bernoulli does not compute (it computes float32, float64, float16)");
    og_tensor_free(x);

    /* string: TfIdfVectorizer over an integer pool, x int64 relabelled uint64 */
    x = nh_tensor(OG_INT64, 2, (int64_t[]){2, 4}, (double[]){1, 2, 2, 3, 3, 1, 2, 2});
    nh_node tfidf = {.op = "TfIdfVectorizer",
                     .opset = 9,
                     .attrs = {NH_INT("min_gram_length", 1), NH_INT("max_gram_length", 2),
                               NH_INT("max_skip_count", 0), NH_STRING("mode", "TF"),
                               NH_INTS("ngram_counts", 0, 2), NH_INTS("ngram_indexes", 0, 1, 2),
                               NH_INTS("pool_int64s", 2, 3, 2, 2)},
                     .in = {x}};
    bound_loop_is_used(&tfidf, 1, 0);
    check_bind_refusal(&tfidf, (og_dtype[]){OG_STRING},
                       "node 'n0' (TfIdfVectorizer, opset 9): input 0 is string, which the CPU "
                       "kernel of TfIdfVectorizer does not compute (it computes int32, int64)");
    og_tensor_free(x);
    const char *words[] = {"a", "b"};
    og_tensor *sx = NULL;
    CHECK_OK(og_tensor_from_strings(1, (int64_t[]){2}, words, NULL, &sx));
    nh_node norm = {.op = "StringNormalizer", .opset = 10, .in = {sx}};
    check_bind_refusal(&norm, (og_dtype[]){OG_FLOAT},
                       "node 'n0' (StringNormalizer, opset 10): input 0 is float32, which the CPU "
                       "kernel of StringNormalizer does not compute (it computes string)");
    og_tensor_free(sx);
}

/* Cast and CastLike bind the conversion of their (from, to[, saturate]) pair from the input's
 * and the output's static dtypes: one per pair, another one to a float8 type with saturate 0,
 * one for a number and a string; nothing before the target is known (the kernel picks at run
 * time); a target without a conversion is refused, naming the node, the op and both dtypes. */
static void cpu_binds_cast_pairs(void)
{
    og_tensor *x = nh_tensor(OG_FLOAT, 1, (int64_t[]){3}, (double[]){-1.5, 0.25, 1e6});
    struct {
        og_dtype to;
        int saturate;
    } cases[] = {{OG_FLOAT16, 1},      {OG_INT32, 1},  {OG_FLOAT8E4M3FN, 1},
                 {OG_FLOAT8E4M3FN, 0}, {OG_STRING, 1}, {OG_INT4, 1}};
    enum { N = sizeof cases / sizeof cases[0] };
    const void *impl[N] = {0};
    for (int i = 0; i < N; i++) {
        nh_node c = {.op = "Cast",
                     .opset = 21,
                     .attrs = {NH_INT("to", cases[i].to), NH_INT("saturate", cases[i].saturate)},
                     .in = {x}};
        nh_result r;
        CHECK_OK(nh_run(&c, &r));
        if (r.status) continue;
        og_dtype t[1] = {OG_FLOAT}, o[1] = {cases[i].to};
        og_kernel_binding b;
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, o, &b));
        CHECKF(b.impl != NULL && b.all_types == 1 && b.out_types[0] == cases[i].to,
               "Cast to %s: no conversion bound", og_dtype_name(cases[i].to));
        impl[i] = b.impl;
        for (int j = 0; j < i; j++)
            CHECKF(impl[j] != impl[i], "Cast to %s and case %d: one conversion",
                   og_dtype_name(cases[i].to), j);
        CHECK_OK(og_backend_bind(&og_cpu_backend, r.node, t, NULL, &b));
        CHECK(b.fn != NULL && b.impl == NULL && b.all_types == 0);
        o[0] = (og_dtype)14; /* complex64: no conversion */
        CHECK(og_backend_bind(&og_cpu_backend, r.node, t, o, &b) == OG_ERR_UNSUPPORTED);
        CHECKF(strstr(og_last_error(),
                      "node 'n0' (Cast, opset 21): input 0 is float32, which "
                      "the CPU kernel of Cast does not compute with output 0") != NULL,
               "message %s", og_last_error());
        nh_release(&r);
    }
    og_tensor_free(x);
}

int main(void)
{
    toy_runs_a_graph();
    toy_refuses_at_creation();
    toy_binds_by_all_types();
    toy_binds_by_output_types();
    cpu_binds_cast_pairs();
    cpu_binds_typed_loops();
    kernels_by_version();
    binding_follows_the_run();
    cpu_families_state_types();
    cpu_families_bind_loops();
    cpu_binds_int_maxpool_and_pow();
    cpu_kernels_use_bound_loops();
    cpu_runs_bound_reduction();
    cpu_binds_quant_by_all_types();
    quant_binding_follows_the_run();
    cpu_binds_grid_sample();
    cpu_rnn_uses_bound_loops();
    cpu_ml_uses_bound_loops();
    cpu_small_picks_bind();
    cpu_scatter_binds_by_all_types();
    cpu_loss_binds_by_all_types();
    cpu_resize_binds_loops();
    cpu_last_picks_bind();
    cpu_miscops_bind_loops();
    NH_DONE();
}
