/* rnn_function.c: the functions of standard ops that define the recurrent training ops in a
 * saved training graph (see rnn_function.h).
 *
 * Train (per direction d, steps in the direction's order, X in layout 0):
 *   A = X·W_dᵀ + Wb_d + Rb_d                     [T, N, G·H], before the loop
 *   Loop t:  a = A[t] + H·R_dᵀ, the gates as the op defines them; with sequence lengths, the
 *            mask m = (t < len) [N, 1] keeps the state where m = 0 and zeroes Y there;
 *            scan outputs: Y_t, saved_t (rnn.h's layout), t
 *   reverse directions put the scan outputs back in time order with Gather(·, t's)
 * Grad (per direction, steps in the reverse of the forward's order):
 *   H_{t-1} (and C_{t-1}) are saved's states shifted by one step, the initial state first
 *   Loop t:  the pre-activations' gradient dA_t from dH (+ dY_t·m) and the carried dC, as
 *            the kernel computes it (src/kernels/cpu/rnn_typed.inc); dH ← dA_t·R_d (plus
 *            the direct paths), kept where m = 0;  scan outputs: dA_t (and the GRU's extra
 *            operands), t
 *   dX = dA·W_d (summed over directions), dW = dAᵀ·X, dR = dAᵀ·H_{t-1}, dB = [Σ dA, Σ dA'],
 *   dP = Σ dA_gate·C over the flattened steps. */
#include <stdio.h>
#include <string.h>

#include "grad/rnn_function.h"
#include "grad/rule_util.h"
#include "onnx/onnx_io.h"

static const char *const attr_names[] = {
    "activation_alpha", "activation_beta", "activations",        "clip", "direction", "hidden_size",
    "input_forget",     "layout",          "linear_before_reset"};
static const char *const in_names[] = {"X",         "W",         "R", "B", "sequence_lens",
                                       "initial_h", "initial_c", "P"};
static const char *const grad_names[] = {"dX",         "dW",         "dR", "dB", "dsequence_lens",
                                         "dinitial_h", "dinitial_c", "dP"};

/* ---- the key --------------------------------------------------------------------------- */

/* How many of activation_alpha and activation_beta an activation takes (src/ops/rnn.c). */
static int act_params(og_rnn_act_kind k)
{
    switch (k) {
    case OG_ACT_AFFINE:
    case OG_ACT_SCALED_TANH:
    case OG_ACT_HARD_SIGMOID: return 2;
    case OG_ACT_LEAKY_RELU:
    case OG_ACT_THRESHOLDED_RELU:
    case OG_ACT_ELU: return 1;
    default: return 0;
    }
}

bool og_rnn_fn_key_init(og_rnn_fn_key *k, og_gb *b, const og_node *n, const og_rnn_params *p,
                        const int *dy, const bool *want)
{
    memset(k, 0, sizeof *k);
    k->p = *p;
    k->p.role = OG_RNN_FORWARD;
    int nin = og_rnn_n_in(p->kind), nout = og_rnn_n_out(p->kind);
    k->dtype = og_gb_value(b, n->in[0])->dtype;
    if (k->dtype != OG_FLOAT && k->dtype != OG_DOUBLE && k->dtype != OG_FLOAT16) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                   "the gradient needs X's element type (a float type) statically");
        return false;
    }
    for (int i = 0; i < nin; i++) {
        if (i < n->n_in && n->in[i] >= 0) k->has_in |= 1u << i;
        if (want[i]) k->want |= 1u << i;
    }
    for (int j = 0; j < nout && j < n->n_out; j++)
        if (dy[j] >= 0) k->has_dy |= 1u << j;
    /* the text: every choice the bodies depend on */
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    char *o = k->overload;
    size_t left = sizeof k->overload;
    int w =
        snprintf(o, left, "%s.%s.layout%d", og_dtype_name(k->dtype), dirs[p->direction], p->layout);
    for (int d = 0; d < p->num_dir && w > 0 && (size_t)w < left; d++)
        for (int j = 0; j < p->n_act && w > 0 && (size_t)w < left; j++) {
            const og_rnn_act *a = &p->act[d][j];
            int np = act_params(a->kind);
            o += w, left -= (size_t)w;
            w = np == 2 ? snprintf(o, left, ".%s(%.9g,%.9g)", og_rnn_act_name(a->kind),
                                   (double)a->alpha, (double)a->beta)
                : np == 1
                    ? snprintf(o, left, ".%s(%.9g)", og_rnn_act_name(a->kind), (double)a->alpha)
                    : snprintf(o, left, ".%s", og_rnn_act_name(a->kind));
        }
    if (w > 0 && (size_t)w < left) {
        o += w, left -= (size_t)w;
        w = snprintf(o, left, "%s%.9g%s%s.in%x.grad%x.dy%x", p->has_clip ? ".clip" : "",
                     p->has_clip ? (double)p->clip : 0.0, p->input_forget ? ".input_forget" : "",
                     p->linear_before_reset ? ".linear_before_reset" : "", k->has_in, k->want,
                     k->has_dy);
    }
    if (w < 0 || (size_t)w >= left) {
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the function overload's name is too long");
        return false;
    }
    return true;
}

/* ---- node helpers ---------------------------------------------------------------------- */

static int sc(og_gb *b, const og_rnn_fn_key *k, double v) { return og_gb_scalar(b, v, k->dtype); }
static int i64(og_gb *b, int64_t v) { return og_gb_scalar_i64(b, v, OG_INT64); }

static int gather(og_gb *b, int x, int idx, int axis)
{
    int r = og_gb_op2(b, "Gather", x, idx);
    if (axis) og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    return r;
}

static int concat(og_gb *b, const int *xs, int n, int axis)
{
    for (int i = 0; i < n; i++)
        if (xs[i] < 0) return -1;
    if (n == 1) return xs[0];
    int r = og_gb_op(b, "Concat", n, xs);
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    return r;
}

static int concat2(og_gb *b, int x, int y, int axis)
{
    int xs[2] = {x, y};
    return concat(b, xs, 2, axis);
}

/* x split into n equal parts along axis */
static void split(og_gb *b, int x, int axis, int n, int *out)
{
    int node = og_gb_op_multi(b, "Split", 1, &x, n, out);
    og_gb_attr_int(b, node, "axis", axis);
    if (og_gb_opset(b) >= 18) og_gb_attr_int(b, node, "num_outputs", n);
}

static int unsq(og_gb *b, int x, int64_t axis) { return og_rule_unsqueeze(b, x, &axis, 1); }

static int transpose(og_gb *b, int x, int64_t p0, int64_t p1, int64_t p2, int64_t p3, int rank)
{
    int64_t perm[4] = {p0, p1, p2, p3};
    return og_rule_transpose(b, x, perm, rank);
}

static int flatten2(og_gb *b, int x)
{
    int r = og_gb_op1(b, "Flatten", x);
    og_gb_attr_int(b, og_gb_last(b), "axis", 2);
    return r;
}

/* Σ over the steps and rows: [T, N, C] -> [C] */
static int sum01(og_gb *b, int x)
{
    int64_t axes[2] = {0, 1};
    return og_gb_reduce_sum(b, x, axes, 2, false);
}

/* x masked to 0/1 in the element type */
static int as_dt(og_gb *b, const og_rnn_fn_key *k, int cond)
{
    return og_rule_cast(b, cond, k->dtype);
}

/* ---- activations ----------------------------------------------------------------------- */

static int clip(og_gb *b, const og_rnn_fn_key *k, int x)
{
    if (!k->p.has_clip) return x;
    double c = k->p.clip;
    if (og_gb_opset(b) >= 11) return og_gb_op3(b, "Clip", x, sc(b, k, -c), sc(b, k, c));
    int r = og_gb_op1(b, "Clip", x);
    og_gb_attr_float(b, og_gb_last(b), "min", (float)-c);
    og_gb_attr_float(b, og_gb_last(b), "max", (float)c);
    return r;
}

/* 1 where the clip let x through, else 0 (-1: no clip) */
static int clip_mask(og_gb *b, const og_rnn_fn_key *k, int x)
{
    if (!k->p.has_clip) return -1;
    int cut = og_gb_op2(b, "Greater", og_gb_op1(b, "Abs", x), sc(b, k, k->p.clip));
    return og_rule_sub(b, sc(b, k, 1), as_dt(b, k, cut));
}

static int act(og_gb *b, const og_rnn_fn_key *k, const og_rnn_act *a, int x)
{
    double al = a->alpha, be = a->beta;
    int r;
    switch (a->kind) {
    case OG_ACT_RELU: return og_gb_op1(b, "Relu", x);
    case OG_ACT_TANH: return og_gb_op1(b, "Tanh", x);
    case OG_ACT_SIGMOID: return og_gb_op1(b, "Sigmoid", x);
    case OG_ACT_AFFINE: return og_rule_add(b, og_rule_mul(b, x, sc(b, k, al)), sc(b, k, be));
    case OG_ACT_SCALED_TANH:
        return og_rule_mul(b, og_gb_op1(b, "Tanh", og_rule_mul(b, x, sc(b, k, be))), sc(b, k, al));
    case OG_ACT_SOFTSIGN: return og_gb_op1(b, "Softsign", x);
    case OG_ACT_SOFTPLUS: return og_gb_op1(b, "Softplus", x);
    case OG_ACT_THRESHOLDED_RELU:
        if (og_gb_opset(b) < 10) /* no ThresholdedRelu before opset 10 */
            return og_rule_mul(b, x, as_dt(b, k, og_gb_op2(b, "Greater", x, sc(b, k, al))));
        r = og_gb_op1(b, "ThresholdedRelu", x);
        og_gb_attr_float(b, og_gb_last(b), "alpha", (float)al);
        return r;
    case OG_ACT_HARD_SIGMOID:
        r = og_gb_op1(b, "HardSigmoid", x);
        og_gb_attr_float(b, og_gb_last(b), "alpha", (float)al);
        og_gb_attr_float(b, og_gb_last(b), "beta", (float)be);
        return r;
    default: /* LeakyRelu, Elu */
        r = og_gb_op1(b, a->kind == OG_ACT_ELU ? "Elu" : "LeakyRelu", x);
        og_gb_attr_float(b, og_gb_last(b), "alpha", (float)al);
        return r;
    }
}

/* act'(x), with y = act(x) (a scalar for Affine) */
static int dact(og_gb *b, const og_rnn_fn_key *k, const og_rnn_act *a, int x, int y)
{
    double al = a->alpha, be = a->beta;
    int one = sc(b, k, 1);
    switch (a->kind) {
    case OG_ACT_RELU: return as_dt(b, k, og_gb_op2(b, "Greater", x, sc(b, k, 0)));
    case OG_ACT_TANH: return og_rule_sub(b, one, og_rule_mul(b, y, y));
    case OG_ACT_SIGMOID: return og_rule_mul(b, y, og_rule_sub(b, one, y));
    case OG_ACT_AFFINE: return sc(b, k, al);
    case OG_ACT_LEAKY_RELU: { /* 1, or α below 0 */
        int neg = as_dt(b, k, og_gb_op2(b, "Less", x, sc(b, k, 0)));
        return og_rule_add(b, one, og_rule_mul(b, neg, sc(b, k, al - 1)));
    }
    case OG_ACT_THRESHOLDED_RELU: return as_dt(b, k, og_gb_op2(b, "Greater", x, sc(b, k, al)));
    case OG_ACT_SCALED_TANH: { /* α·β·(1 − tanh²(βx)) */
        int t = og_gb_op1(b, "Tanh", og_rule_mul(b, x, sc(b, k, be)));
        return og_rule_mul(b, og_rule_sub(b, one, og_rule_mul(b, t, t)), sc(b, k, al * be));
    }
    case OG_ACT_HARD_SIGMOID: { /* α inside (0, 1) */
        int v = og_rule_add(b, og_rule_mul(b, x, sc(b, k, al)), sc(b, k, be));
        int in = og_rule_mul(b, as_dt(b, k, og_gb_op2(b, "Greater", v, sc(b, k, 0))),
                             as_dt(b, k, og_gb_op2(b, "Less", v, one)));
        return og_rule_mul(b, in, sc(b, k, al));
    }
    case OG_ACT_ELU: { /* 1, or y + α below 0 */
        int neg = as_dt(b, k, og_gb_op2(b, "Less", x, sc(b, k, 0)));
        return og_rule_add(b, one, og_rule_mul(b, neg, og_rule_add(b, y, sc(b, k, al - 1))));
    }
    case OG_ACT_SOFTSIGN: { /* 1 / (1 + |x|)² */
        int s = og_rule_add(b, one, og_gb_op1(b, "Abs", x));
        return og_gb_op1(b, "Reciprocal", og_rule_mul(b, s, s));
    }
    default: return og_gb_op1(b, "Sigmoid", x); /* Softplus */
    }
}

/* The gradient through act(clip(pre)) = y: g·act'(x)·[|pre| <= clip] (x = clip(pre)). */
static int through(og_gb *b, const og_rnn_fn_key *k, const og_rnn_act *a, int g, int pre, int x,
                   int y)
{
    int r = og_rule_mul(b, g, dact(b, k, a, x, y));
    int cm = clip_mask(b, k, pre);
    return cm >= 0 ? og_rule_mul(b, r, cm) : r;
}

/* ---- loop bodies ----------------------------------------------------------------------- */

#define LOOP_MAX 16

typedef struct loop {
    og_graph *g; /* the body */
    og_gb *b;
    og_graph *outer;
    int ins[LOOP_MAX], outs[LOOP_MAX];
    int n_ins, n_outs;
} loop;

static bool set_opsets(og_graph *g, int64_t opset)
{
    g->opsets = og_calloc(g->alloc, 1, sizeof *g->opsets);
    if (!g->opsets || !(g->opsets[0].domain = og_strdup(g->alloc, ""))) return false;
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    return true;
}

/* A new value of g that is a graph input of type dt (rank -1 unknown, 0 scalar). */
static int add_input(og_graph *g, const char *name, og_dtype dt, int rank)
{
    int v = og_graph_add_value(g, name);
    if (v < 0) return -1;
    og_value *val = &g->values[v];
    val->kind = OG_VALUE_INPUT;
    val->is_graph_input = true;
    val->has_value_info = true;
    val->dtype = dt;
    val->rank = rank;
    return v;
}

static bool loop_open(og_gb *ob, og_graph *outer, loop *L, const char *prefix)
{
    memset(L, 0, sizeof *L);
    L->outer = outer;
    L->g = og_graph_new(outer->alloc);
    if (!L->g || !set_opsets(L->g, og_gb_opset(ob)) ||
        !(L->g->name = og_strdup(L->g->alloc, prefix)) || !(L->b = og_gb_open(L->g, prefix))) {
        og_graph_free(L->g);
        L->g = NULL;
        og_gb_fail(ob, NULL, OG_ERR_NOMEM, "out of memory");
        return false;
    }
    return true;
}

static void loop_free(loop *L)
{
    if (L->b) og_gb_close(L->b);
    og_graph_free(L->g);
    L->b = NULL;
    L->g = NULL;
}

/* Body input `name` (i, cond, then the carried states) */
static int loop_in(loop *L, const char *name, og_dtype dt, int rank)
{
    int v = add_input(L->g, name, dt, rank);
    if (v < 0 || L->n_ins == LOOP_MAX) return og_gb_fail(L->b, NULL, OG_ERR_NOMEM, "out of memory");
    L->ins[L->n_ins++] = v;
    return v;
}

/* Outer-scope value v (of the outer graph) inside the body: a value of the same name. */
static int loop_outer(loop *L, int v)
{
    if (v < 0) return -1;
    const char *name = L->outer->values[v].name;
    int w = og_graph_find_value(L->g, name);
    if (w < 0) w = og_graph_add_value(L->g, name);
    if (w < 0) return og_gb_fail(L->b, NULL, OG_ERR_NOMEM, "out of memory");
    return w;
}

/* Body output v (cond, the carried states, then the scan outputs), of type dt. */
static void loop_out(loop *L, int v, og_dtype dt)
{
    if (v < 0 || og_gb_status(L->b)) return;
    if (L->n_outs == LOOP_MAX) {
        og_gb_fail(L->b, NULL, OG_ERR_INTERNAL, "too many loop outputs");
        return;
    }
    /* a value may be a body output once: a carried state passed through is copied */
    for (int i = 0; i < L->n_outs; i++)
        if (L->outs[i] == v) v = og_gb_op1(L->b, "Identity", v);
    for (int i = 0; i < L->n_ins; i++)
        if (L->ins[i] == v) v = og_gb_op1(L->b, "Identity", v);
    if (v < 0) return;
    L->g->values[v].dtype = dt;
    L->g->values[v].has_value_info = true;
    L->outs[L->n_outs++] = v;
}

/* The Loop node in the outer graph over M steps with the carried initial values init[0..n-1]
 * (as many as the body's carried states); out[] gets its outputs (final states, then scan
 * outputs).  Frees the body. */
static void loop_close(og_gb *ob, loop *L, int M, const int *init, int n_init, int *out)
{
    int in[LOOP_MAX];
    og_status st = og_gb_close(L->b);
    L->b = NULL;
    if (st) og_gb_fail(ob, NULL, st, "%s", og_last_error());
    if (!og_gb_status(ob)) {
        L->g->inputs = og_malloc(L->g->alloc, (size_t)L->n_ins * sizeof(int));
        L->g->outputs = og_malloc(L->g->alloc, (size_t)L->n_outs * sizeof(int));
        if (!L->g->inputs || !L->g->outputs) {
            og_gb_fail(ob, NULL, OG_ERR_NOMEM, "out of memory");
        } else {
            memcpy(L->g->inputs, L->ins, (size_t)L->n_ins * sizeof(int));
            memcpy(L->g->outputs, L->outs, (size_t)L->n_outs * sizeof(int));
            L->g->n_inputs = L->n_ins;
            L->g->n_outputs = L->n_outs;
            for (int i = 0; i < L->n_outs; i++) L->g->values[L->outs[i]].is_graph_output = true;
        }
    }
    in[0] = M;
    in[1] = -1; /* no condition */
    for (int i = 0; i < n_init; i++) in[2 + i] = init[i];
    int node = og_gb_op_ext(ob, "", "Loop", 2 + n_init, in, L->n_outs - 1, NULL, out);
    if (node >= 0) {
        og_attr at;
        st = og_onnx_pack_graph_attr(L->g, "body", &at);
        if (!st) {
            at.name = (char *)"body";
            st = og_node_add_attr(L->outer, node, &at);
            og_free(L->g->alloc, at.raw);
        }
        if (st) og_gb_fail(ob, NULL, st, "%s", og_last_error());
    }
    loop_free(L);
}

/* ---- what both functions share ---------------------------------------------------------- */

typedef struct fn_ctx {
    og_gb *b;
    og_graph *g;
    const og_rnn_fn_key *k;
    int in[12];    /* the formal inputs (value ids; every one is listed) */
    int X0;        /* X in layout 0 */
    int M, Tm1;    /* the step count and T − 1 (int64 scalars) */
    int lens, any; /* sequence_lens as [N, 1] of the element type, len > 0; -1 without */
    int h0l, c0l;  /* initial states in layout 0, -1 when absent */
} fn_ctx;

static bool has(const fn_ctx *c, int i) { return (c->k->has_in >> i) & 1u; }

static bool fn_open(fn_ctx *c, og_gb *ob, const og_rnn_fn_key *k, const char *prefix, int n_formal,
                    const char *const *formal)
{
    memset(c, 0, sizeof *c);
    c->k = k;
    c->g = og_graph_new(og_gb_alloc(ob));
    if (!c->g || !set_opsets(c->g, og_gb_opset(ob)) || !(c->b = og_gb_open(c->g, prefix))) {
        og_graph_free(c->g);
        c->g = NULL;
        og_gb_fail(ob, NULL, OG_ERR_NOMEM, "out of memory");
        return false;
    }
    c->g->inputs = og_malloc(c->g->alloc, (size_t)n_formal * sizeof(int));
    if (!c->g->inputs) {
        og_gb_fail(c->b, NULL, OG_ERR_NOMEM, "out of memory");
        return true;
    }
    for (int i = 0; i < n_formal; i++) {
        c->in[i] = add_input(c->g, formal[i], OG_UNDEFINED, -1);
        if (c->in[i] < 0) {
            og_gb_fail(c->b, NULL, OG_ERR_NOMEM, "out of memory");
            return true;
        }
        c->g->inputs[c->g->n_inputs++] = c->in[i];
    }
    og_gb *b = c->b;
    const og_rnn_params *p = &k->p;
    c->X0 = p->layout ? transpose(b, c->in[0], 1, 0, 2, 0, 3) : c->in[0];
    c->M = gather(b, og_gb_op1(b, "Shape", c->X0), i64(b, 0), 0);
    c->Tm1 = og_rule_sub(b, c->M, i64(b, 1));
    c->lens = c->any = -1;
    if (has(c, OG_RNN_IN_SEQ)) {
        c->lens = unsq(b, og_rule_cast(b, c->in[OG_RNN_IN_SEQ], k->dtype), 1);
        c->any = as_dt(b, k, og_gb_op2(b, "Greater", c->lens, sc(b, k, 0)));
    }
    c->h0l = c->c0l = -1;
    for (int i = OG_RNN_IN_H0; i <= OG_RNN_IN_C0; i++) {
        if (!has(c, i) || (i == OG_RNN_IN_C0 && p->kind != OG_RNN_LSTM)) continue;
        int v = p->layout ? transpose(b, c->in[i], 1, 0, 2, 0, 3) : c->in[i];
        if (i == OG_RNN_IN_H0)
            c->h0l = v;
        else
            c->c0l = v;
    }
    return true;
}

/* Name value v as the function's output `name` (an Identity), or a placeholder scalar. */
static void fn_output(fn_ctx *c, int v, const char *name)
{
    og_gb *b = c->b;
    if (og_gb_status(b)) return;
    if (v < 0) v = sc(b, c->k, 0); /* an output the calling node never asks for */
    int o = og_gb_op_named(b, "Identity", 1, &v, name);
    if (o < 0) return;
    int *outs = og_realloc(c->g->alloc, c->g->outputs, (size_t)c->g->n_outputs * sizeof(int),
                           (size_t)(c->g->n_outputs + 1) * sizeof(int));
    if (!outs) {
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        return;
    }
    c->g->outputs = outs;
    outs[c->g->n_outputs++] = o;
}

/* Pack the function and add it to the training graph; frees the context. */
static void fn_close(fn_ctx *c, og_gb *ob, const char *name)
{
    og_status st = og_gb_close(c->b);
    c->b = NULL;
    if (st) og_gb_fail(ob, NULL, st, "%s", og_last_error());
    if (!og_gb_status(ob)) {
        og_blob blob = {0};
        st = og_onnx_pack_function(c->g, OG_RNN_DOMAIN, name, c->k->overload, attr_names,
                                   (int)(sizeof attr_names / sizeof *attr_names), &blob);
        if (st)
            og_gb_fail(ob, NULL, st, "%s", og_last_error());
        else
            og_gb_add_function(ob, OG_RNN_DOMAIN, name, c->k->overload, &blob);
        og_free(c->g->alloc, blob.data);
    }
    og_graph_free(c->g);
    c->g = NULL;
}

/* Zeros [N, H]: 0·(a row of X's first step's first column + R_d's first row) */
static int zeros_nh(og_gb *b, const og_rnn_fn_key *k, int X0, int Rd)
{
    int64_t ax = 1, s0 = 0, e1 = 1;
    int col = og_rule_slice(b, gather(b, X0, i64(b, 0), 0), &ax, &s0, &e1, NULL, 1); /* [N, 1] */
    int row = unsq(b, gather(b, Rd, i64(b, 0), 0), 0);                               /* [1, H] */
    return og_rule_mul(b, og_rule_add(b, col, row), sc(b, k, 0));
}

/* ---- Train ------------------------------------------------------------------------------ */

/* One direction of the forward; y, yh, yc, sv get [T, N, H], [N, H], [N, H], [T, N, K]. */
static void train_dir(fn_ctx *c, int d, int *y, int *yh, int *yc, int *sv)
{
    og_gb *b = c->b;
    const og_rnn_fn_key *k = c->k;
    const og_rnn_params *p = &k->p;
    bool rev = p->direction == 1 || d == 1, lstm = p->kind == OG_RNN_LSTM;
    bool gru = p->kind == OG_RNN_GRU, lbr = gru && p->linear_before_reset;
    const og_rnn_act *acts = p->act[d];
    int idx = i64(b, d);
    int Wd = gather(b, c->in[OG_RNN_IN_W], idx, 0), Rd = gather(b, c->in[OG_RNN_IN_R], idx, 0);
    int A = og_gb_op2(b, "MatMul", c->X0, transpose(b, Wd, 1, 0, 0, 0, 2)); /* [T, N, GH] */
    int rbh = -1;
    if (has(c, OG_RNN_IN_B)) {
        int wr[2], rb3[3];
        split(b, gather(b, c->in[OG_RNN_IN_B], idx, 0), 0, 2, wr);
        int rb = wr[1];
        if (lbr) { /* Rbh goes inside the reset gate's product */
            split(b, wr[1], 0, 3, rb3);
            rbh = rb3[2];
            int parts[3] = {rb3[0], rb3[1], og_rule_mul(b, rb3[2], sc(b, k, 0))};
            rb = concat(b, parts, 3, 0);
        }
        A = og_rule_add(b, A, og_rule_add(b, wr[0], rb));
    }
    int zeros = -1;
    int h0 = c->h0l >= 0 ? gather(b, c->h0l, idx, 0) : (zeros = zeros_nh(b, k, c->X0, Rd));
    int c0 = -1;
    if (lstm)
        c0 = c->c0l >= 0 ? gather(b, c->c0l, idx, 0)
                         : (zeros >= 0 ? zeros : zeros_nh(b, k, c->X0, Rd));
    int P3[3] = {-1, -1, -1}, R3[3] = {-1, -1, -1}, RhT = -1;
    if (lstm && has(c, OG_RNN_IN_P)) split(b, gather(b, c->in[OG_RNN_IN_P], idx, 0), 0, 3, P3);
    if (gru && !lbr) {
        split(b, Rd, 0, 3, R3);
        RhT = transpose(b, R3[2], 1, 0, 0, 0, 2);
    }
    int RdT = transpose(b, Rd, 1, 0, 0, 0, 2);

    loop L;
    if (!loop_open(b, c->g, &L, d ? "t1" : "t0")) return;
    og_gb *lb = L.b;
    int i = loop_in(&L, "i", OG_INT64, 0), cond = loop_in(&L, "cond", OG_BOOL, 0);
    int h = loop_in(&L, "h", k->dtype, -1), cc = lstm ? loop_in(&L, "c", k->dtype, -1) : -1;
    int t = rev ? og_rule_sub(lb, loop_outer(&L, c->Tm1), i) : i;
    int xt = gather(lb, loop_outer(&L, A), t, 0);              /* [N, GH] */
    int rec = og_gb_op2(lb, "MatMul", h, loop_outer(&L, RdT)); /* Ht-1·Rᵀ */
    int m = -1;
    if (c->lens >= 0)
        m = as_dt(lb, k,
                  og_gb_op2(lb, "Less", og_rule_cast(lb, t, k->dtype), loop_outer(&L, c->lens)));
    int hn, cn = -1, pre;
    if (lstm) {
        int g4[4];
        split(lb, og_rule_add(lb, xt, rec), 1, 4, g4); /* i, o, f, c */
        if (P3[0] >= 0) {
            g4[0] = og_rule_add(lb, g4[0], og_rule_mul(lb, loop_outer(&L, P3[0]), cc));
            g4[2] = og_rule_add(lb, g4[2], og_rule_mul(lb, loop_outer(&L, P3[2]), cc));
        }
        int gi = act(lb, k, &acts[0], clip(lb, k, g4[0]));
        int gc = act(lb, k, &acts[1], clip(lb, k, g4[3]));
        int gf = p->input_forget ? og_rule_sub(lb, sc(lb, k, 1), gi)
                                 : act(lb, k, &acts[0], clip(lb, k, g4[2]));
        cn = og_rule_add(lb, og_rule_mul(lb, gf, cc), og_rule_mul(lb, gi, gc));
        if (P3[1] >= 0) g4[1] = og_rule_add(lb, g4[1], og_rule_mul(lb, loop_outer(&L, P3[1]), cn));
        int go = act(lb, k, &acts[0], clip(lb, k, g4[1]));
        hn = og_rule_mul(lb, go, act(lb, k, &acts[2], cn));
        pre = concat(lb, g4, 4, 1);
    } else if (gru) {
        int a3[3], r3[3];
        split(lb, xt, 1, 3, a3);
        split(lb, rec, 1, 3, r3);
        a3[0] = og_rule_add(lb, a3[0], r3[0]);
        a3[1] = og_rule_add(lb, a3[1], r3[1]);
        int z = act(lb, k, &acts[0], clip(lb, k, a3[0]));
        int r = act(lb, k, &acts[0], clip(lb, k, a3[1]));
        int ph, aux;
        if (lbr) { /* h~'s input: xh + r ⊙ (Ht-1·Rhᵀ + Rbh) */
            aux = rbh >= 0 ? og_rule_add(lb, r3[2], loop_outer(&L, rbh)) : r3[2];
            ph = og_rule_add(lb, a3[2], og_rule_mul(lb, r, aux));
        } else { /* xh + (r ⊙ Ht-1)·Rhᵀ (Rbh is in xh) */
            aux = og_rule_mul(lb, r3[2], sc(lb, k, 0));
            ph = og_rule_add(lb, a3[2],
                             og_gb_op2(lb, "MatMul", og_rule_mul(lb, r, h), loop_outer(&L, RhT)));
        }
        int hh = act(lb, k, &acts[1], clip(lb, k, ph));
        hn = og_rule_add(lb, hh, og_rule_mul(lb, z, og_rule_sub(lb, h, hh)));
        int parts[4] = {a3[0], a3[1], ph, aux};
        pre = concat(lb, parts, 4, 1);
    } else {
        pre = og_rule_add(lb, xt, rec);
        hn = act(lb, k, &acts[0], clip(lb, k, pre));
    }
    int hout = hn, cout = cn, yt = hn;
    if (m >= 0) { /* past the row's length: state kept, Y and saved's pre-activations zero */
        hout = og_rule_add(lb, h, og_rule_mul(lb, m, og_rule_sub(lb, hn, h)));
        if (lstm) cout = og_rule_add(lb, cc, og_rule_mul(lb, m, og_rule_sub(lb, cn, cc)));
        yt = og_rule_mul(lb, m, hn);
        pre = og_rule_mul(lb, m, pre);
    }
    int svp[3] = {pre, lstm ? cout : hout, hout};
    int svt = concat(lb, svp, lstm ? 3 : 2, 1);
    loop_out(&L, og_gb_op1(lb, "Identity", cond), OG_BOOL);
    loop_out(&L, hout, k->dtype);
    if (lstm) loop_out(&L, cout, k->dtype);
    loop_out(&L, yt, k->dtype);
    loop_out(&L, svt, k->dtype);
    if (rev) loop_out(&L, og_gb_op1(lb, "Identity", t), OG_INT64);
    int init[2] = {h0, c0}, out[6];
    loop_close(b, &L, c->M, init, lstm ? 2 : 1, out);
    int o = lstm ? 2 : 1;
    *yh = out[0];
    *yc = lstm ? out[1] : -1;
    *y = out[o];
    *sv = out[o + 1];
    if (rev) { /* scan outputs in time order */
        *y = gather(b, *y, out[o + 2], 0);
        *sv = gather(b, *sv, out[o + 2], 0);
    }
    if (c->any >= 0) { /* a row without steps: Y_h, Y_c are zeros */
        *yh = og_rule_mul(b, *yh, c->any);
        if (lstm) *yc = og_rule_mul(b, *yc, c->any);
    }
}

static void train_function(og_gb *ob, const og_rnn_fn_key *k, const char *name)
{
    const og_rnn_params *p = &k->p;
    int nin = og_rnn_n_in(p->kind), D = p->num_dir;
    bool lstm = p->kind == OG_RNN_LSTM;
    fn_ctx c;
    if (!fn_open(&c, ob, k, "f", nin, in_names)) return;
    og_gb *b = c.b;
    int y[2], yh[2], yc[2], sv[2];
    for (int d = 0; d < D; d++) {
        train_dir(&c, d, &y[d], &yh[d], &yc[d], &sv[d]);
        y[d] = unsq(b, y[d], 1);
        yh[d] = unsq(b, yh[d], 0);
        if (lstm) yc[d] = unsq(b, yc[d], 0);
        sv[d] = unsq(b, sv[d], 0);
    }
    int Y = concat(b, y, D, 1), Yh = concat(b, yh, D, 0), S = concat(b, sv, D, 0);
    int Yc = lstm ? concat(b, yc, D, 0) : -1;
    if (p->layout) {
        Y = transpose(b, Y, 2, 0, 1, 3, 4);
        Yh = transpose(b, Yh, 1, 0, 2, 0, 3);
        if (lstm) Yc = transpose(b, Yc, 1, 0, 2, 0, 3);
    }
    fn_output(&c, Y, "Y");
    fn_output(&c, Yh, "Y_h");
    if (lstm) fn_output(&c, Yc, "Y_c");
    fn_output(&c, S, "saved");
    fn_close(&c, ob, name);
}

/* ---- Grad ------------------------------------------------------------------------------- */

/* The states before each step: s shifted by one step in the direction's order, the initial
 * state s0 [N, H] first. */
static int shifted(og_gb *b, int s, int s0, bool rev)
{
    int64_t ax = 0, zero = 0, one = 1, m1 = -1, end = INT64_MAX;
    int first = unsq(b, s0, 0);
    if (!rev) return concat2(b, first, og_rule_slice(b, s, &ax, &zero, &m1, NULL, 1), 0);
    return concat2(b, og_rule_slice(b, s, &ax, &one, &end, NULL, 1), first, 0);
}

static const int64_t T10[2] = {1, 0};

typedef struct dir_grads {
    int dx, dw, dr, db, dh0, dc0, dp;
} dir_grads;

static bool wants(const og_rnn_fn_key *k, int i) { return (k->want >> i) & 1u; }

static void grad_dir(fn_ctx *c, int d, const int *dyl, dir_grads *o)
{
    og_gb *b = c->b;
    const og_rnn_fn_key *k = c->k;
    const og_rnn_params *p = &k->p;
    int nin = og_rnn_n_in(p->kind);
    bool rev = p->direction == 1 || d == 1, lstm = p->kind == OG_RNN_LSTM;
    bool gru = p->kind == OG_RNN_GRU, lbr = gru && p->linear_before_reset;
    const og_rnn_act *acts = p->act[d];
    int idx = i64(b, d);
    int Wd = gather(b, c->in[OG_RNN_IN_W], idx, 0), Rd = gather(b, c->in[OG_RNN_IN_R], idx, 0);
    int nparts = lstm ? 6 : gru ? 5 : 2, part[6];
    split(b, gather(b, c->in[nin], idx, 0), 2, nparts, part);
    int Hs = part[nparts - 1];
    int zeros = og_rule_mul(b, gather(b, Hs, i64(b, 0), 0), sc(b, k, 0)); /* [N, H] */
    int h0 = c->h0l >= 0 ? gather(b, c->h0l, idx, 0) : zeros;
    int Hprev = shifted(b, Hs, h0, rev), C = -1, Cprev = -1;
    if (lstm) {
        C = part[4];
        Cprev = shifted(b, C, c->c0l >= 0 ? gather(b, c->c0l, idx, 0) : zeros, rev);
    }
    int P3[3] = {-1, -1, -1}, R3[3] = {-1, -1, -1}, Rzr = -1;
    if (lstm && has(c, OG_RNN_IN_P)) split(b, gather(b, c->in[OG_RNN_IN_P], idx, 0), 0, 3, P3);
    if (gru && !lbr) {
        split(b, Rd, 0, 3, R3);
        Rzr = concat2(b, R3[0], R3[1], 0);
    }
    int dYd = dyl[0] >= 0 ? gather(b, dyl[0], idx, 1) : -1; /* [T, N, H] */
    int dh_init = dyl[1] >= 0 ? gather(b, dyl[1], idx, 0) : zeros;
    int dc_init = lstm ? (dyl[2] >= 0 ? gather(b, dyl[2], idx, 0) : zeros) : -1;
    if (c->any >= 0) {
        dh_init = og_rule_mul(b, dh_init, c->any);
        if (lstm) dc_init = og_rule_mul(b, dc_init, c->any);
    }

    loop L;
    if (!loop_open(b, c->g, &L, d ? "g1" : "g0")) return;
    og_gb *lb = L.b;
    int i = loop_in(&L, "i", OG_INT64, 0), cond = loop_in(&L, "cond", OG_BOOL, 0);
    int dh = loop_in(&L, "dh", k->dtype, -1), dc = lstm ? loop_in(&L, "dc", k->dtype, -1) : -1;
    int t = rev ? i : og_rule_sub(lb, loop_outer(&L, c->Tm1), i);
    int m = -1;
    if (c->lens >= 0)
        m = as_dt(lb, k,
                  og_gb_op2(lb, "Less", og_rule_cast(lb, t, k->dtype), loop_outer(&L, c->lens)));
    int gh = dh;
    if (dYd >= 0) {
        int dy = gather(lb, loop_outer(&L, dYd), t, 0);
        gh = og_rule_add(lb, dh, m >= 0 ? og_rule_mul(lb, dy, m) : dy);
    }
#define AT(v) gather(lb, loop_outer(&L, v), t, 0)
    int din, drec = -1, extra = -1, dhp, dcp = -1;
    if (lstm) {
        /* h = o·hf(C), C = f·Ct-1 + i·c~ (see src/kernels/cpu/rnn_typed.inc) */
        int pi = AT(part[0]), po = AT(part[1]), pf = AT(part[2]), pc = AT(part[3]);
        int Ct = AT(C), cp = AT(Cprev);
        int xi = clip(lb, k, pi), xo = clip(lb, k, po), xf = clip(lb, k, pf), xc = clip(lb, k, pc);
        int gi = act(lb, k, &acts[0], xi), go = act(lb, k, &acts[0], xo);
        int gf = p->input_forget ? og_rule_sub(lb, sc(lb, k, 1), gi) : act(lb, k, &acts[0], xf);
        int gc = act(lb, k, &acts[1], xc), hc = act(lb, k, &acts[2], Ct);
        int dpo = through(lb, k, &acts[0], og_rule_mul(lb, gh, hc), po, xo, go);
        /* dC = dh·o·hf'(C) (C itself is never clipped) + the carried dC */
        int dC = og_rule_add(
            lb, og_rule_mul(lb, og_rule_mul(lb, gh, go), dact(lb, k, &acts[2], Ct, hc)), dc);
        if (P3[1] >= 0) dC = og_rule_add(lb, dC, og_rule_mul(lb, dpo, loop_outer(&L, P3[1])));
        int di = og_rule_mul(lb, dC, gc), df = og_rule_mul(lb, dC, cp);
        int dgc = og_rule_mul(lb, dC, gi);
        dcp = og_rule_mul(lb, dC, gf);
        int dpf;
        if (p->input_forget) {
            di = og_rule_sub(lb, di, df);
            dpf = og_rule_mul(lb, df, sc(lb, k, 0));
        } else {
            dpf = through(lb, k, &acts[0], df, pf, xf, gf);
        }
        int dpi = through(lb, k, &acts[0], di, pi, xi, gi);
        int dpc = through(lb, k, &acts[1], dgc, pc, xc, gc);
        if (P3[0] >= 0)
            dcp = og_rule_add(lb, dcp,
                              og_rule_add(lb, og_rule_mul(lb, dpi, loop_outer(&L, P3[0])),
                                          og_rule_mul(lb, dpf, loop_outer(&L, P3[2]))));
        int parts[4] = {dpi, dpo, dpf, dpc};
        din = concat(lb, parts, 4, 1);
        if (m >= 0) din = og_rule_mul(lb, din, m);
        dhp = og_gb_op2(lb, "MatMul", din, loop_outer(&L, Rd));
    } else if (gru) {
        /* h = (1 − z)·h~ + z·Ht-1 */
        int pz = AT(part[0]), pr = AT(part[1]), ph = AT(part[2]), hp = AT(Hprev);
        int xz = clip(lb, k, pz), xr = clip(lb, k, pr), xh = clip(lb, k, ph);
        int z = act(lb, k, &acts[0], xz), r = act(lb, k, &acts[0], xr);
        int hh = act(lb, k, &acts[1], xh);
        int dz = og_rule_mul(lb, gh, og_rule_sub(lb, hp, hh));
        int dph = through(lb, k, &acts[1], og_rule_mul(lb, gh, og_rule_sub(lb, sc(lb, k, 1), z)),
                          ph, xh, hh);
        int dhd = og_rule_mul(lb, gh, z), dr, du = -1;
        if (lbr) { /* h~ = g(xh + r ⊙ u), u = Ht-1·Rhᵀ + Rbh */
            int aux = AT(part[3]);
            dr = og_rule_mul(lb, dph, aux);
            du = og_rule_mul(lb, dph, r);
        } else { /* h~ = g(xh + (r ⊙ Ht-1)·Rhᵀ + Rbh): e = dh~'·Rh */
            int e = og_gb_op2(lb, "MatMul", dph, loop_outer(&L, R3[2]));
            dr = og_rule_mul(lb, e, hp);
            dhd = og_rule_add(lb, dhd, og_rule_mul(lb, e, r));
            extra = og_rule_mul(lb, r, hp);
            if (m >= 0) extra = og_rule_mul(lb, extra, m);
        }
        int dpz = through(lb, k, &acts[0], dz, pz, xz, z);
        int dpr = through(lb, k, &acts[0], dr, pr, xr, r);
        int parts[3] = {dpz, dpr, dph};
        din = concat(lb, parts, 3, 1);
        if (m >= 0) din = og_rule_mul(lb, din, m);
        if (lbr) {
            parts[2] = du;
            drec = concat(lb, parts, 3, 1);
            if (m >= 0) drec = og_rule_mul(lb, drec, m);
            dhp = og_rule_add(lb, dhd, og_gb_op2(lb, "MatMul", drec, loop_outer(&L, Rd)));
        } else {
            int zr = concat2(lb, dpz, dpr, 1);
            dhp = og_rule_add(lb, dhd, og_gb_op2(lb, "MatMul", zr, loop_outer(&L, Rzr)));
        }
    } else {
        int pa = AT(part[0]);
        int x = clip(lb, k, pa);
        din = through(lb, k, &acts[0], gh, pa, x, act(lb, k, &acts[0], x));
        if (m >= 0) din = og_rule_mul(lb, din, m);
        dhp = og_gb_op2(lb, "MatMul", din, loop_outer(&L, Rd));
    }
#undef AT
    int dhout = dhp, dcout = dcp;
    if (m >= 0) { /* past the row's length the state's gradient passes through */
        dhout = og_rule_add(lb, dh, og_rule_mul(lb, m, og_rule_sub(lb, dhp, dh)));
        if (lstm) dcout = og_rule_add(lb, dc, og_rule_mul(lb, m, og_rule_sub(lb, dcp, dc)));
    }
    loop_out(&L, og_gb_op1(lb, "Identity", cond), OG_BOOL);
    loop_out(&L, dhout, k->dtype);
    if (lstm) loop_out(&L, dcout, k->dtype);
    loop_out(&L, din, k->dtype);
    int n_scan = 1;
    if (drec >= 0 || extra >= 0) {
        loop_out(&L, drec >= 0 ? drec : extra, k->dtype);
        n_scan++;
    }
    if (!rev) loop_out(&L, og_gb_op1(lb, "Identity", t), OG_INT64);
    int init[2] = {dh_init, dc_init}, out[6];
    loop_close(b, &L, c->M, init, lstm ? 2 : 1, out);
    int s0 = lstm ? 2 : 1;
    int DIN = out[s0], D2 = n_scan > 1 ? out[s0 + 1] : -1;
    if (!rev) { /* scan outputs came last step first: put them in time order */
        int ts = out[s0 + n_scan];
        DIN = gather(b, DIN, ts, 0);
        if (D2 >= 0) D2 = gather(b, D2, ts, 0);
    }
    int DREC = lbr ? D2 : DIN;
    o->dh0 = out[0];
    o->dc0 = lstm ? out[1] : -1;
    o->dx = wants(k, OG_RNN_IN_X) ? og_gb_op2(b, "MatMul", DIN, Wd) : -1;
    if (wants(k, OG_RNN_IN_W))
        o->dw = og_gb_op2(b, "MatMul", og_rule_transpose(b, flatten2(b, DIN), T10, 2),
                          flatten2(b, c->X0));
    if (wants(k, OG_RNN_IN_R)) {
        int hf = flatten2(b, Hprev);
        if (gru && !lbr) {
            int d3[3];
            split(b, DIN, 2, 3, d3);
            int zr = flatten2(b, concat2(b, d3[0], d3[1], 2));
            int top = og_gb_op2(b, "MatMul", og_rule_transpose(b, zr, T10, 2), hf);
            int bot = og_gb_op2(b, "MatMul", og_rule_transpose(b, flatten2(b, d3[2]), T10, 2),
                                flatten2(b, D2));
            o->dr = concat2(b, top, bot, 0);
        } else {
            o->dr = og_gb_op2(b, "MatMul", og_rule_transpose(b, flatten2(b, DREC), T10, 2), hf);
        }
    }
    if (wants(k, OG_RNN_IN_B)) o->db = concat2(b, sum01(b, DIN), sum01(b, DREC), 0);
    if (lstm && wants(k, OG_RNN_IN_P)) {
        int d4[4];
        split(b, DIN, 2, 4, d4);
        int parts[3] = {sum01(b, og_rule_mul(b, d4[0], Cprev)), sum01(b, og_rule_mul(b, d4[1], C)),
                        sum01(b, og_rule_mul(b, d4[2], Cprev))};
        o->dp = concat(b, parts, 3, 0);
    }
}

/* [x0; x1] along a new first axis (x0 alone for one direction) */
static int stack(og_gb *b, int D, int x0, int x1)
{
    int xs[2] = {unsq(b, x0, 0), D > 1 ? unsq(b, x1, 0) : -1};
    return concat(b, xs, D, 0);
}

static void grad_function(og_gb *ob, const og_rnn_fn_key *k, const char *name)
{
    const og_rnn_params *p = &k->p;
    int nin = og_rnn_n_in(p->kind), nout = og_rnn_n_out(p->kind), D = p->num_dir;
    bool lstm = p->kind == OG_RNN_LSTM;
    const char *formal[12];
    static const char *const dys[] = {"saved", "dY", "dY_h", "dY_c"};
    for (int i = 0; i < nin; i++) formal[i] = in_names[i];
    for (int j = 0; j <= nout; j++) formal[nin + j] = dys[j];
    fn_ctx c;
    if (!fn_open(&c, ob, k, "f", nin + 1 + nout, formal)) return;
    og_gb *b = c.b;
    /* the output gradients in layout 0 */
    int dyl[3] = {-1, -1, -1};
    for (int j = 0; j < nout; j++) {
        if (!((k->has_dy >> j) & 1u)) continue;
        int v = c.in[nin + 1 + j];
        if (p->layout) v = j == 0 ? transpose(b, v, 1, 2, 0, 3, 4) : transpose(b, v, 1, 0, 2, 0, 3);
        dyl[j] = v;
    }
    dir_grads g[2];
    memset(g, 0xff, sizeof g); /* every id -1 */
    for (int d = 0; d < D; d++) grad_dir(&c, d, dyl, &g[d]);
    int res[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
#define STACK(field) stack(b, D, g[0].field, g[1].field)
    if (wants(k, OG_RNN_IN_X)) {
        res[0] = D > 1 ? og_rule_add(b, g[0].dx, g[1].dx) : g[0].dx;
        if (p->layout) res[0] = transpose(b, res[0], 1, 0, 2, 0, 3);
    }
    if (wants(k, OG_RNN_IN_W)) res[1] = STACK(dw);
    if (wants(k, OG_RNN_IN_R)) res[2] = STACK(dr);
    if (wants(k, OG_RNN_IN_B)) res[3] = STACK(db);
    if (wants(k, OG_RNN_IN_H0)) res[5] = STACK(dh0);
    if (lstm && wants(k, OG_RNN_IN_C0)) res[6] = STACK(dc0);
    if (lstm && wants(k, OG_RNN_IN_P)) res[7] = STACK(dp);
#undef STACK
    for (int i = OG_RNN_IN_H0; i <= OG_RNN_IN_C0 && p->layout; i++)
        if (res[i] >= 0) res[i] = transpose(b, res[i], 1, 0, 2, 0, 3);
    for (int i = 0; i < nin; i++) fn_output(&c, res[i], grad_names[i]);
    fn_close(&c, ob, name);
}

void og_rnn_functions(og_gb *b, const og_rnn_fn_key *k, int grad_node)
{
    const char *base = k->p.kind == OG_RNN_LSTM ? "LSTM" : k->p.kind == OG_RNN_GRU ? "GRU" : "RNN";
    char train[16], grad[16];
    snprintf(train, sizeof train, "%sTrain", base);
    snprintf(grad, sizeof grad, "%sGrad", base);
    if (!og_gb_has_function(b, OG_RNN_DOMAIN, train, k->overload)) train_function(b, k, train);
    if (!og_gb_has_function(b, OG_RNN_DOMAIN, grad, k->overload)) grad_function(b, k, grad);
    og_gb_set_overload(b, grad_node, k->overload);
}
