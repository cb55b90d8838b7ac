/* test_fuse_tr.c: MatMuls reading their operands through a Transpose (src/exec/fuse.c:
 * og_fusion_plan_transpose, kernels/cpu/linalg.c: matmul_kernel with og_kernel_ctx.perm).
 * Each graph runs in a session with the plan and in a debug session (every node by itself,
 * the Transpose copied); the outputs must agree to rounding, and the log must say how many
 * Transposes the MatMuls read in place.  Swaps of the last two axes (attention's
 * k.transpose(-2, -1), the gradient builder's), head moves (0, 2, 1, 3) and (0, 2, 3, 1),
 * the reversed 2-D perm (no attribute), a broadcast batch, an initializer's Transpose as B,
 * one Transpose read by two MatMuls and twice by one, axes of 1, double, two threads; and
 * what must stay as it is: a Transpose read by another op too, one that is a graph output,
 * one moving the last axis to the front, and a run that asks for the Transpose's output. */
#include "exec/exec_internal.h"
#include "unit/fuse_graph.h"

static int transposes;
static void on_log(void *user, og_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    log_count(msg, " Transposes read in place", &transposes);
}

/* One node: op, its inputs (NULL ends), its output; perm for a Transpose (n_perm 0: no
 * attribute, the reverse). */
typedef struct tr_node {
    const char *op, *in[2], *out;
    int n_perm;
    int64_t perm[4];
} tr_node;

typedef struct tr_case {
    const char *label;
    og_dtype dt;
    int xr;
    int64_t xd[4]; /* input X */
    int wr;
    int64_t wd[4]; /* initializer W (rank 0: none) */
    tr_node nodes[4];
    const char *outputs[3];
    int threads;
    int expect;       /* Transposes read in place */
    const char *want; /* non-NULL: the run asks for this value besides the outputs */
} tr_case;

#define SWAP4                                                                                      \
    4, { 0, 1, 3, 2 }
static const tr_case cases[] = {
    {"A swaps its last two axes",
     OG_FLOAT,
     4,
     {2, 3, 5, 4},
     4,
     {2, 3, 5, 6},
     {{"Transpose", {"X"}, "T", SWAP4}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"B swaps its last two axes",
     OG_FLOAT,
     4,
     {2, 3, 6, 5},
     4,
     {2, 3, 4, 5},
     {{"Transpose", {"X"}, "T", SWAP4}, {"MatMul", {"W", "T"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"heads (0, 2, 1, 3) as A, B broadcast",
     OG_FLOAT,
     4,
     {2, 5, 3, 4},
     2,
     {4, 6},
     {{"Transpose", {"X"}, "T", 4, {0, 2, 1, 3}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"keys (0, 2, 3, 1) as B",
     OG_FLOAT,
     4,
     {2, 4, 3, 5},
     4,
     {2, 3, 6, 5},
     {{"Transpose", {"X"}, "T", 4, {0, 2, 3, 1}}, {"MatMul", {"W", "T"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"heads (0, 2, 1, 3) as B, A broadcast",
     OG_FLOAT,
     4,
     {2, 6, 3, 5},
     2,
     {4, 6},
     {{"Transpose", {"X"}, "T", 4, {0, 2, 1, 3}}, {"MatMul", {"W", "T"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"2-D reverse (no perm) as A",
     OG_FLOAT,
     2,
     {5, 4},
     2,
     {5, 3},
     {{"Transpose", {"X"}, "T", 0, {0}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"an initializer's Transpose as B (Linear)",
     OG_FLOAT,
     3,
     {3, 7, 5},
     2,
     {9, 5},
     {{"Transpose", {"W"}, "U", 2, {1, 0}}, {"MatMul", {"X", "U"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"both operands through Transposes",
     OG_FLOAT,
     3,
     {4, 6, 5},
     3,
     {4, 3, 6},
     {{"Transpose", {"X"}, "T", 3, {0, 2, 1}},
      {"Transpose", {"W"}, "U", 3, {0, 2, 1}},
      {"MatMul", {"T", "U"}, "Y", 0, {0}}},
     {"Y"},
     1,
     2,
     NULL},
    {"one Transpose, two MatMuls",
     OG_FLOAT,
     3,
     {2, 6, 5},
     3,
     {2, 6, 4},
     {{"Transpose", {"X"}, "T", 3, {0, 2, 1}},
      {"MatMul", {"T", "W"}, "Y", 0, {0}},
      {"MatMul", {"X", "T"}, "Z", 0, {0}}},
     {"Y", "Z"},
     1,
     1,
     NULL},
    {"one Transpose as A and B",
     OG_FLOAT,
     2,
     {6, 6},
     0,
     {0},
     {{"Transpose", {"X"}, "T", 2, {1, 0}}, {"MatMul", {"T", "T"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"K of 1",
     OG_FLOAT,
     2,
     {1, 4},
     2,
     {1, 3},
     {{"Transpose", {"X"}, "T", 2, {1, 0}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"M of 1",
     OG_FLOAT,
     2,
     {3, 1},
     2,
     {3, 5},
     {{"Transpose", {"X"}, "T", 2, {1, 0}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"N of 1 as B",
     OG_FLOAT,
     2,
     {1, 4},
     2,
     {3, 4},
     {{"Transpose", {"X"}, "T", 2, {1, 0}}, {"MatMul", {"W", "T"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"double",
     OG_DOUBLE,
     4,
     {2, 3, 5, 4},
     4,
     {2, 3, 5, 6},
     {{"Transpose", {"X"}, "T", SWAP4}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     NULL},
    {"two threads, attention sizes",
     OG_FLOAT,
     4,
     {4, 64, 8, 32},
     4,
     {4, 8, 64, 32},
     {{"Transpose", {"X"}, "T", 4, {0, 2, 3, 1}}, {"MatMul", {"W", "T"}, "Y", 0, {0}}},
     {"Y"},
     2,
     1,
     NULL},
    {"two threads, the head's gradient",
     OG_FLOAT,
     4,
     {4, 64, 8, 32},
     4,
     {4, 8, 64, 64},
     {{"Transpose", {"X"}, "T", 4, {0, 2, 1, 3}}, {"MatMul", {"W", "T"}, "Y", 0, {0}}},
     {"Y"},
     2,
     1,
     NULL},
    {"also read by Relu: copied",
     OG_FLOAT,
     3,
     {2, 6, 5},
     3,
     {2, 6, 4},
     {{"Transpose", {"X"}, "T", 3, {0, 2, 1}},
      {"MatMul", {"T", "W"}, "Y", 0, {0}},
      {"Relu", {"T"}, "Z", 0, {0}}},
     {"Y", "Z"},
     1,
     0,
     NULL},
    {"a graph output: copied",
     OG_FLOAT,
     3,
     {2, 6, 5},
     3,
     {2, 6, 4},
     {{"Transpose", {"X"}, "T", 3, {0, 2, 1}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y", "T"},
     1,
     0,
     NULL},
    {"last axis to the front: copied",
     OG_FLOAT,
     3,
     {4, 3, 5},
     3,
     {5, 3, 2},
     {{"Transpose", {"X"}, "T", 3, {2, 0, 1}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     0,
     NULL},
    {"a run asking for the Transpose's output",
     OG_FLOAT,
     3,
     {2, 6, 5},
     3,
     {2, 6, 4},
     {{"Transpose", {"X"}, "T", 3, {0, 2, 1}}, {"MatMul", {"T", "W"}, "Y", 0, {0}}},
     {"Y"},
     1,
     1,
     "T"},
};

static og_status make_session(og_graph *g, int threads, bool debug, og_session **s)
{
    og_session_options so = {.threads = threads, .log = on_log, .debug = debug};
    return og_exec_create(g, NULL, og_default_allocator(), &so, false, s);
}

/* Largest |a - b| over largest |b| */
static double rel_diff(const og_tensor *a, const og_tensor *b)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < b->numel; i++) {
        const double x =
            a->dtype == OG_FLOAT ? ((const float *)a->data)[i] : ((const double *)a->data)[i];
        const double y =
            b->dtype == OG_FLOAT ? ((const float *)b->data)[i] : ((const double *)b->data)[i];
        d = fmax(d, fabs(x - y));
        m = fmax(m, fabs(y));
    }
    return m > 0 ? d / m : d;
}

static void run_case(const tr_case *c)
{
    fg f = {og_graph_new(NULL), c->dt};
    og_graph *g = f.g;
    int x = start_graph(&f, 17);
    g->values[x].dtype = c->dt;
    g->values[x].rank = c->xr;
    memcpy(g->values[x].dims, c->xd, sizeof c->xd);
    if (c->wr) init(&f, "W", c->wr, c->wd, 0.5, 0.1, false);
    for (int k = 0; k < 4 && c->nodes[k].op; k++) {
        const tr_node *tn = &c->nodes[k];
        const int n_in = tn->in[1] ? 2 : 1;
        const int i = node(&f, tn->op, n_in, tn->in, 1, (const char *const[]){tn->out});
        if (tn->n_perm) {
            og_attr at = {.name = (char *)"perm",
                          .type = OG_ATTR_INTS,
                          .n = tn->n_perm,
                          .ints = (int64_t *)tn->perm};
            og_node_add_attr(g, i, &at);
        }
    }
    int n_out = 0;
    for (; n_out < 3 && c->outputs[n_out]; n_out++) {
        g->values[value(&f, c->outputs[n_out])].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(&f, c->outputs[n_out]);
    }
    og_tensor *xin = NULL;
    og_tensor_alloc(c->dt, c->xr, c->xd, NULL, &xin);
    for (int64_t i = 0; i < xin->numel; i++) set(xin, i, sin(0.37 * (double)i + 0.2));
    og_session *fused = NULL, *plain = NULL;
    og_tensor *a[4] = {0}, *b[4] = {0};
    transposes = -1;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = make_session(g, c->threads, false, &fused);
    CHECKF(st == OG_OK, "%s: %s", c->label, og_last_error());
    CHECKF(transposes == c->expect, "%s: %d Transposes read in place, expected %d", c->label,
           transposes, c->expect);
    if (!st) st = make_session(g, c->threads, true, &plain);
    CHECKF(st == OG_OK, "%s: %s", c->label, og_last_error());
    if (!st) {
        const char *in_names[1] = {"X"}, *want[4] = {0};
        const og_tensor *ins[1] = {xin};
        int n_want = 0;
        for (; n_want < n_out; n_want++) want[n_want] = c->outputs[n_want];
        if (c->want) want[n_want++] = c->want;
        for (int r = 0; r < 2; r++) { /* twice: the second run with the first's buffers back */
            for (int j = 0; j < 4; j++) {
                og_tensor_free(a[j]);
                a[j] = NULL;
            }
            CHECK_OK(og_session_run_named(fused, in_names, ins, 1, want, n_want, a));
        }
        CHECK_OK(og_session_run_named(plain, in_names, ins, 1, want, n_want, b));
        const double tol = c->dt == OG_FLOAT ? 1e-6 : 1e-14;
        for (int j = 0; j < n_want; j++) {
            CHECKF(a[j] && b[j] && a[j]->rank == b[j]->rank &&
                       memcmp(a[j]->dims, b[j]->dims, (size_t)b[j]->rank * sizeof *b[j]->dims) == 0,
                   "%s: output %s has another shape", c->label, want[j]);
            if (a[j] && b[j] && a[j]->numel == b[j]->numel)
                CHECKF(rel_diff(a[j], b[j]) <= tol, "%s: output %s differs by %.3g", c->label,
                       want[j], rel_diff(a[j], b[j]));
        }
    }
    for (int j = 0; j < 4; j++) {
        og_tensor_free(a[j]);
        og_tensor_free(b[j]);
    }
    og_session_free(fused);
    og_session_free(plain);
    og_tensor_free(xin);
    og_graph_free(g);
}

int main(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) run_case(&cases[k]);
    NH_DONE();
}
