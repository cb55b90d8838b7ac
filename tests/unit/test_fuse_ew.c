/* test_fuse_ew.c: chains of element-wise nodes run as one loop (src/exec/fuse_ew.c,
 * kernels/cpu/ew_chain.c).  Each graph runs in a session with the chains and in a debug
 * session (og_session_options.debug: no chains, every node by itself); the outputs must be
 * the same bits, the log must say how many nodes the chains hold, and the session must say
 * how many chains ran fused (not one by one, the fallback for shapes a chain does not
 * take).  The erf-GELU of a PyTorch export, a bias along the last axis (rows shorter and
 * longer than a block), LayerNorm's per-row statistics, scalars of every rank, Sum of three,
 * every unary op a chain takes, Pow of 2, 3 and 0.5 (GPT-2's tanh-GELU) and of 1.5 (one by
 * one), a value read outside the chain, a run asking for part of a
 * chain, two threads on a large tensor, and a memory budget the chain's outputs exceed. */
#include "exec/exec_internal.h"
#include "grad/grad.h"
#include "unit/fuse_graph.h"

static int members, loops;
static void on_log(void *user, og_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    log_count(msg, " element-wise nodes in", &members);
    log_count(msg, " loops", &loops);
}

/* One node: op, up to 3 inputs ("" none), its output. */
typedef struct ew_node {
    const char *op, *in[3], *out;
} ew_node;

/* An initializer of `rank` dims, values in [bias - scale, bias + scale]. */
typedef struct ew_init {
    const char *name;
    int rank;
    int64_t dims[4];
    double scale, bias;
} ew_init;

typedef struct ew_case {
    const char *label;
    int rank;
    int64_t xd[4]; /* X's shape */
    double xscale, xbias;
    ew_init inits[4];
    ew_node nodes[12];
    const char *outputs[3];
    int threads;
    int expect_members, expect_loops, expect_fused; /* chains that run fused, per run */
    const char *want[3]; /* NULL: the graph's outputs; else og_session_run_named's */
    int64_t budget;      /* og_session_options.max_memory, 0: none */
} ew_case;

static og_status make_session(og_graph *g, int threads, bool debug, int64_t budget, og_session **s)
{
    og_session_options so = {
        .threads = threads, .log = on_log, .debug = debug, .max_memory = budget};
    return og_exec_create(g, NULL, og_default_allocator(), &so, false, s);
}

static og_status run(og_session *s, const ew_case *c, const og_tensor *x, og_tensor **out, int *n)
{
    const char *in_names[1] = {"X"};
    const og_tensor *ins[1] = {x};
    if (!c->want[0]) {
        *n = s->g->n_outputs;
        return og_session_run(s, in_names, ins, 1, out);
    }
    for (*n = 0; *n < 3 && c->want[*n]; ++*n) {
    }
    return og_session_run_named(s, in_names, ins, 1, c->want, *n, out);
}

static void run_case(const ew_case *c)
{
    fg f = {og_graph_new(NULL), OG_FLOAT};
    og_graph *g = f.g;
    int x = start_graph(&f, 17);
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = c->rank;
    memcpy(g->values[x].dims, c->xd, sizeof c->xd);
    for (int k = 0; k < 4 && c->inits[k].name; k++)
        init(&f, c->inits[k].name, c->inits[k].rank, c->inits[k].dims, c->inits[k].scale,
             c->inits[k].bias, false);
    for (int k = 0; k < 12 && c->nodes[k].op; k++) {
        int n_in = 0;
        while (n_in < 3 && c->nodes[k].in[n_in]) n_in++;
        node(&f, c->nodes[k].op, n_in, c->nodes[k].in, 1, (const char *const[]){c->nodes[k].out});
    }
    for (int k = 0; k < 3 && c->outputs[k]; k++) {
        g->values[value(&f, c->outputs[k])].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(&f, c->outputs[k]);
    }
    og_tensor *xin = NULL;
    og_tensor_alloc(OG_FLOAT, c->rank, c->xd, NULL, &xin);
    for (int64_t i = 0; i < xin->numel; i++)
        set(xin, i, c->xbias + c->xscale * sin(0.37 * (double)i + 0.1 * (double)(i % 7)));
    og_session *fused = NULL, *plain = NULL;
    og_tensor *a[3] = {0}, *b[3] = {0};
    int na = 0, nb = 0;
    members = loops = -1;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = make_session(g, c->threads, false, c->budget, &fused);
    CHECKF(st == OG_OK, "%s: %s", c->label, og_last_error());
    CHECKF(members == c->expect_members && loops == c->expect_loops,
           "%s: %d nodes in %d loops, expected %d in %d", c->label, members, loops,
           c->expect_members, c->expect_loops);
    if (!st) st = make_session(g, c->threads, true, 0, &plain);
    CHECKF(st == OG_OK, "%s: %s", c->label, og_last_error());
    if (!st) {
        og_status sa = run(fused, c, xin, a, &na);
        if (c->budget) { /* refused, named, nothing leaked (the sanitizers' runs) */
            CHECKF(sa == OG_ERR_LIMIT, "%s: status %d, expected OG_ERR_LIMIT", c->label, sa);
            CHECKF(sa && og_last_error() && strstr(og_last_error(), "max_memory"),
                   "%s: message '%s'", c->label, og_last_error() ? og_last_error() : "");
        } else {
            CHECKF(sa == OG_OK, "%s: %s", c->label, og_last_error());
            for (int j = 0; j < 3; j++) { /* and again, counting */
                og_tensor_free(a[j]);
                a[j] = NULL;
            }
            int64_t before = fused->ew.n_fused_runs;
            CHECK_OK(run(fused, c, xin, a, &na));
            CHECKF(fused->ew.n_fused_runs - before == c->expect_fused,
                   "%s: %lld chains ran fused, expected %d", c->label,
                   (long long)(fused->ew.n_fused_runs - before), c->expect_fused);
            CHECK_OK(run(plain, c, xin, b, &nb));
            CHECKF(na == nb, "%s: %d outputs against %d", c->label, na, nb);
            for (int j = 0; j < na && j < nb; j++)
                CHECKF(a[j] && b[j] && og_value_equal(a[j], b[j]),
                       "%s: output %d differs from the node-by-node run", c->label, j);
        }
    }
    for (int j = 0; j < 3; j++) {
        og_tensor_free(a[j]);
        og_tensor_free(b[j]);
    }
    og_session_free(fused);
    og_session_free(plain);
    og_tensor_free(xin);
    og_graph_free(g);
}

/* The erf-GELU of a PyTorch export on X of rank 3, Y = X * (erf(X / sqrt2) + 1) * 0.5: one
 * chain of 5 nodes */
// clang-format off
#define GELU_CASE                                                                                  \
    .rank = 3, .xscale = 3,                                                                        \
    .inits = {{"sqrt2", 0, {0}, 0, 1.4142135}, {"one", 1, {1}, 0, 1},                              \
              {"half", 3, {1, 1, 1}, 0, 0.5}},                                                     \
    .nodes = {{"Div", {"X", "sqrt2"}, "d"}, {"Erf", {"d"}, "e"}, {"Add", {"e", "one"}, "p"},       \
              {"Mul", {"X", "p"}, "m"}, {"Mul", {"m", "half"}, "Y"}},                              \
    .outputs = {"Y"}, .expect_members = 5, .expect_loops = 1
// clang-format on

static const ew_case cases[] = {
    {.label = "erf-GELU", GELU_CASE, .xd = {3, 5, 40}, .threads = 1, .expect_fused = 1},
    {.label = "erf-GELU, 8x64x1024 on two threads",
     GELU_CASE,
     .xd = {8, 64, 1024},
     .threads = 2,
     .expect_fused = 1},
    {.label = "erf-GELU asking for an inner value too",
     GELU_CASE,
     .xd = {3, 5, 40},
     .threads = 1,
     .expect_fused = 1,
     .want = {"Y", "e"}},
    {.label = "erf-GELU asking for an inner value only: its part of the chain",
     GELU_CASE,
     .xd = {3, 5, 40},
     .threads = 1,
     .expect_fused = 1,
     .want = {"p"}},
    {.label = "erf-GELU past the memory budget",
     GELU_CASE,
     .xd = {8, 64, 1024},
     .threads = 1,
     .budget = 1 << 20},
    {.label = "bias rows of 40, a value read outside",
     .rank = 3,
     .xd = {4, 7, 40},
     .xscale = 2,
     .inits = {{"b", 1, {40}, 1, 0}},
     .nodes = {{"Add", {"b", "X"}, "v"}, {"Tanh", {"v"}, "T"}, {"Sub", {"T", "X"}, "Y"}},
     .outputs = {"Y", "T"},
     .threads = 1,
     .expect_members = 3,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "bias rows of 600 (longer than a block)",
     .rank = 3,
     .xd = {2, 3, 600},
     .xscale = 2,
     .inits = {{"b", 2, {1, 600}, 1, 0}},
     .nodes = {{"Add", {"X", "b"}, "v"}, {"Sigmoid", {"v"}, "s"}, {"Mul", {"s", "X"}, "Y"}},
     .outputs = {"Y"},
     .threads = 2,
     .expect_members = 3,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "per-row statistics, rows of 40",
     .rank = 3,
     .xd = {4, 7, 40},
     .xscale = 2,
     .inits = {{"mean", 3, {4, 7, 1}, 0.5, 0}, {"sd", 3, {4, 7, 1}, 0.5, 2}},
     .nodes = {{"Sub", {"X", "mean"}, "c"},
               {"Mul", {"c", "c"}, "q"},
               {"Div", {"q", "sd"}, "r"},
               {"Abs", {"r"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 4,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "per-row statistics, rows of 600, and a bias",
     .rank = 2,
     .xd = {5, 600},
     .xscale = 2,
     .inits = {{"mean", 2, {5, 1}, 0.5, 0}, {"w", 1, {600}, 0.5, 1}},
     .nodes = {{"Sub", {"mean", "X"}, "c"}, {"Mul", {"w", "c"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 2,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "Sum of three, Exp, Neg",
     .rank = 2,
     .xd = {9, 301},
     .xscale = 2,
     .inits = {{"z", 2, {9, 301}, 1, 0}},
     .nodes = {{"Exp", {"X"}, "e"}, {"Sum", {"e", "X", "z"}, "s"}, {"Neg", {"s"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 3,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "every unary op",
     .rank = 1,
     .xd = {1000},
     .xscale = 3,
     .inits = {{"one", 0, {0}, 0, 1}},
     .nodes = {{"Abs", {"X"}, "a"},
               {"Add", {"a", "one"}, "b"},
               {"Sqrt", {"b"}, "c"},
               {"Log", {"c"}, "d"},
               {"Reciprocal", {"b"}, "e"},
               {"Sigmoid", {"d"}, "f"},
               {"Tanh", {"X"}, "g"},
               {"Relu", {"g"}, "h"},
               {"Erf", {"X"}, "i"},
               {"Neg", {"i"}, "j"},
               {"Exp", {"j"}, "k"},
               {"Sum", {"e", "f", "h"}, "l"}},
     .outputs = {"l", "k"},
     .threads = 1,
     /* three chains (by their first nodes in topological order: Abs, Tanh, Erf); Sum reads
      * two of them, whose values are computed after the other's first node: alone */
     .expect_members = 11,
     .expect_loops = 3,
     .expect_fused = 3},
    {.label = "tanh-GELU (GPT-2): Pow of 3",
     .rank = 3,
     .xd = {2, 9, 300},
     .xscale = 3,
     .inits = {{"three", 0, {0}, 0, 3},
               {"k", 0, {0}, 0, 0.044715},
               {"c", 1, {1}, 0, 0.79788456},
               {"one", 0, {0}, 0, 1}},
     .nodes = {{"Pow", {"X", "three"}, "p"},
               {"Mul", {"k", "p"}, "q"},
               {"Add", {"X", "q"}, "r"},
               {"Mul", {"r", "c"}, "s"},
               {"Tanh", {"s"}, "t"},
               {"Add", {"t", "one"}, "u"},
               {"Mul", {"X", "u"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 7,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "Pow of 2 and of 0.5",
     .rank = 2,
     .xd = {7, 50},
     .xscale = 2,
     .inits = {{"two", 1, {1}, 0, 2}, {"half", 0, {0}, 0, 0.5}},
     .nodes = {{"Pow", {"X", "two"}, "p"}, {"Pow", {"p", "half"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 2,
     .expect_loops = 1,
     .expect_fused = 1},
    {.label = "Pow of 1.5: one by one",
     .rank = 2,
     .xd = {7, 50},
     .xscale = 2,
     .xbias = 3,
     .inits = {{"e", 0, {0}, 0, 1.5}},
     .nodes = {{"Pow", {"X", "e"}, "p"}, {"Exp", {"p"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 2,
     .expect_loops = 1,
     .expect_fused = 0},
    {.label = "broadcast along a middle axis: one by one",
     .rank = 3,
     .xd = {4, 7, 40},
     .xscale = 2,
     .inits = {{"p", 3, {1, 7, 40}, 1, 0}},
     .nodes = {{"Mul", {"X", "p"}, "v"}, {"Exp", {"v"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 2,
     .expect_loops = 1,
     .expect_fused = 0},
    {.label = "a statistic and the rows: two chains",
     .rank = 3,
     .xd = {4, 7, 40},
     .xscale = 2,
     .inits = {{"var", 3, {4, 7, 1}, 0.5, 2}, {"eps", 0, {0}, 0, 1e-5}},
     .nodes = {{"Add", {"var", "eps"}, "v"},
               {"Sqrt", {"v"}, "s"},
               {"Div", {"X", "s"}, "d"},
               {"Mul", {"d", "d"}, "Y"}},
     .outputs = {"Y"},
     .threads = 1,
     .expect_members = 4,
     .expect_loops = 2,
     .expect_fused = 2},
};

/* A GELU after a Reshape to a computed shape (a PyTorch export's heads merged back): the
 * Reshape's dims are unknown before run time, and static inference names them
 * ("R.dim0", ...: ops/resolve.c) so that the GELU's values share them.  The training graph
 * then undoes no broadcast at run time (no NonZero: the Mul of R by Erf's branch has one
 * shape on both sides), its backward GELU is one chain with the forward's, and the
 * gradient is the node-by-node one. */
static void test_unknown_dims(void)
{
    fg f = {og_graph_new(NULL), OG_FLOAT};
    og_graph *g = f.g, *t = NULL;
    int x = start_graph(&f, 17);
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = 3;
    g->values[x].dims[0] = og_dim_symbol(og_graph_symbol(g, "batch"));
    g->values[x].dims[1] = 6;
    g->values[x].dims[2] = 40;
    init(&f, "sqrt2", 0, NULL, 0, 1.4142135, false);
    init(&f, "one", 0, NULL, 0, 1, false);
    init(&f, "half", 0, NULL, 0, 0.5, false);
    node(&f, "Shape", 1, (const char *const[]){"X"}, 1, (const char *const[]){"S"});
    node(&f, "Reshape", 2, (const char *const[]){"X", "S"}, 1, (const char *const[]){"R"});
    node(&f, "Div", 2, (const char *const[]){"R", "sqrt2"}, 1, (const char *const[]){"d"});
    node(&f, "Erf", 1, (const char *const[]){"d"}, 1, (const char *const[]){"e"});
    node(&f, "Add", 2, (const char *const[]){"e", "one"}, 1, (const char *const[]){"p"});
    node(&f, "Mul", 2, (const char *const[]){"R", "p"}, 1, (const char *const[]){"m"});
    node(&f, "Mul", 2, (const char *const[]){"m", "half"}, 1, (const char *const[]){"Y"});
    int y = value(&f, "Y");
    g->values[y].is_graph_output = true;
    g->outputs[g->n_outputs++] = y;
    CHECK_OK(og_graph_finalize(g));
    CHECK_OK(og_graph_resolve(g, true));
    const og_value *r = &g->values[value(&f, "R")], *yv = &g->values[y];
    CHECK(r->rank == 3 && yv->rank == 3);
    for (int d = 0; d < 3 && r->rank == 3 && yv->rank == 3; d++)
        CHECKF(r->dims[d] < 0 && r->dims[d] != OG_DIM_UNKNOWN && yv->dims[d] == r->dims[d],
               "dim %d: R %lld, Y %lld", d, (long long)r->dims[d], (long long)yv->dims[d]);
    const char *name = og_graph_dim_name(g, r->dims[0]);
    CHECKF(name && strcmp(name, "R.dim0") == 0, "R's dim 0 is named '%s'", name ? name : "");
    og_grad_spec spec = {.inputs = &x, .n_inputs = 1, .outputs = &y, .n_outputs = 1};
    CHECK_OK(og_grad_build(g, &spec, NULL, &t));
    int nonzero = 0;
    for (int i = 0; t && i < t->n_nodes; i++)
        nonzero += strcmp(t->nodes[i].op_type, "NonZero") == 0;
    CHECKF(nonzero == 0, "the training graph has %d NonZero nodes", nonzero);
    og_session *fused = NULL, *plain = NULL;
    og_tensor *xin = NULL, *seed = NULL, *a[1] = {0}, *b[1] = {0};
    const int64_t xd[3] = {4, 6, 40};
    og_tensor_alloc(OG_FLOAT, 3, xd, NULL, &xin);
    og_tensor_alloc(OG_FLOAT, 3, xd, NULL, &seed);
    for (int64_t i = 0; xin && seed && i < xin->numel; i++) {
        set(xin, i, 3 * sin(0.37 * (double)i));
        set(seed, i, cos(0.11 * (double)i));
    }
    if (t) CHECK_OK(make_session(t, 1, false, 0, &fused));
    if (t) CHECK_OK(make_session(t, 1, true, 0, &plain));
    if (fused && plain) {
        const char *in_names[2] = {"X", "Y_grad"}, *want[1] = {"X_grad"};
        const og_tensor *ins[2] = {xin, seed};
        CHECK_OK(og_session_run_named(fused, in_names, ins, 2, want, 1, a));
        CHECK_OK(og_session_run_named(plain, in_names, ins, 2, want, 1, b));
        CHECKF(a[0] && b[0] && og_value_equal(a[0], b[0]),
               "the gradient differs from the node-by-node one");
        CHECKF(fused->ew.n_fused_runs == 2, "%lld chains ran fused, expected 2 (forward, backward)",
               (long long)fused->ew.n_fused_runs);
    }
    og_tensor_free(a[0]);
    og_tensor_free(b[0]);
    og_tensor_free(xin);
    og_tensor_free(seed);
    og_session_free(fused);
    og_session_free(plain);
    og_graph_free(t);
    og_graph_free(g);
}

int main(void)
{
    test_unknown_dims();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) run_case(&cases[k]);
    NH_DONE();
}
