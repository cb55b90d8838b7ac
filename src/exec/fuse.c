/* fuse.c: the activation-fusion, expansion and pooling plans of an inference session and
 * the weight-gradient plan of every CPU session (see fuse.h).
 *
 * Pattern, for a node P whose binding applies activations (og_kernel_binding.act) and
 * whose output 0 is v (float or double, not a graph output):
 *   v read once, by Relu / Clip (constant bounds) / HardSwish / HardSigmoid / Sigmoid A:
 *     P runs with A's activation and writes A's output;
 *   v read twice, by Sigmoid S and Mul M with M = v * S(v) (either order), S's output read
 *     by M alone and not a graph output: P runs with SiLU and writes M's output.
 * The values computed are those of the unfused nodes bit for bit (og_cpu_act uses the
 * activations' own expressions). */
#include <math.h>
#include <string.h>

#include "exec/fuse.h"
#include "kernels/cpu/conv_pwdw.h"
#include "kernels/cpu/conv_s2.h"
#include "ops/conv_params.h"
#include "ops/pool.h"
#include "ops/tensor_shared.h"
#include "ops/unary_params.h"

/* How many times node inputs read value v. */
static int readers(const og_graph *g, int v, int *first, int *second)
{
    int count = 0;
    *first = *second = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++)
            if (g->nodes[i].in[j] == v) {
                if (count == 0)
                    *first = i;
                else if (count == 1)
                    *second = i;
                count++;
            }
    return count;
}

static bool is_op(const og_node *n, const char *op)
{
    return n->domain[0] == 0 && strcmp(n->op_type, op) == 0;
}

/* A scalar value fixed for the session's life (a Constant's output or an initializer that
 * no input can override), as a double in *out. */
static bool constant_scalar(const og_graph *g, int v, og_dtype dt, double *out)
{
    if (v < 0) return true; /* omitted: the caller keeps its default */
    const og_value *val = &g->values[v];
    const og_tensor *t = val->known;
    bool fixed = (val->kind == OG_VALUE_INITIALIZER && !val->is_graph_input) ||
                 (val->producer >= 0 && is_op(&g->nodes[val->producer], "Constant"));
    if (!t || !fixed || t->kind != OG_KIND_TENSOR || t->numel != 1 || t->dtype != dt) return false;
    *out = og_tensor_get_f64(t, 0);
    return true;
}

/* The activation of single-reader node a over a value of dtype dt, or false. */
static bool activation_of(const og_graph *g, const og_node *a, og_dtype dt, og_act *act)
{
    memset(act, 0, sizeof *act);
    if (a->n_out < 1 || a->out[0] < 0 || a->n_in < 1) return false;
    const og_unary_params *p = a->params;
    if (is_op(a, "Relu")) {
        act->kind = OG_FUSE_RELU;
    } else if (is_op(a, "HardSwish")) {
        act->kind = OG_FUSE_HARDSWISH;
    } else if (is_op(a, "Sigmoid")) {
        act->kind = OG_FUSE_SIGMOID;
    } else if (is_op(a, "HardSigmoid")) {
        if (!p) return false;
        act->kind = OG_FUSE_HARDSIGMOID;
        act->alpha = p->alpha;
        act->beta = p->beta;
    } else if (is_op(a, "Clip")) {
        act->kind = OG_FUSE_CLIP;
        act->lo = -HUGE_VAL;
        act->hi = HUGE_VAL;
        if (a->since_version < 11) {
            if (!p) return false;
            act->lo = p->clip_min;
            act->hi = p->clip_max;
        } else if (!constant_scalar(g, a->n_in > 1 ? a->in[1] : -1, dt, &act->lo) ||
                   !constant_scalar(g, a->n_in > 2 ? a->in[2] : -1, dt, &act->hi)) {
            return false;
        }
        if (act->lo > act->hi) act->lo = act->hi; /* as the Clip kernel does */
    } else {
        return false;
    }
    return true;
}

void og_fusion_clear(const og_graph *g, og_fusion *nodes, bool *internal)
{
    for (int i = 0; i < g->n_nodes; i++) {
        nodes[i].act.kind = OG_FUSE_NONE;
        nodes[i].out = -1;
        nodes[i].skip = false;
        nodes[i].wg_x = nodes[i].wg_dy = -1;
        nodes[i].pre = -1;
        nodes[i].post = -1;
        nodes[i].res = -1;
        nodes[i].tr[0] = nodes[i].tr[1] = -1;
    }
    for (int v = 0; v < g->n_values; v++) internal[v] = false;
}

int og_fusion_plan(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                   bool *internal)
{
    int fused = 0;
    og_fusion_clear(g, nodes, internal);
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        if (!kernels[i].act || !kernels[i].fn || nodes[i].skip || n->n_out < 1 || n->out[0] < 0)
            continue;
        int v = n->out[0];
        const og_value *val = &g->values[v];
        if (val->is_graph_output || (val->dtype != OG_FLOAT && val->dtype != OG_DOUBLE)) continue;
        int r1, r2, count = readers(g, v, &r1, &r2);
        og_act act;
        if (count == 1 && g->nodes[r1].in[0] == v &&
            activation_of(g, &g->nodes[r1], val->dtype, &act)) {
            nodes[i].act = act;
            nodes[i].out = g->nodes[r1].out[0];
            nodes[r1].skip = true;
            internal[v] = true;
            fused++;
            continue;
        }
        if (count != 2 || r1 == r2) continue;
        /* SiLU: Sigmoid S(v) and Mul M(v, S) in either order */
        int s = is_op(&g->nodes[r1], "Sigmoid") ? r1 : r2, m = s == r1 ? r2 : r1;
        const og_node *sn = &g->nodes[s], *mn = &g->nodes[m];
        if (!is_op(sn, "Sigmoid") || !is_op(mn, "Mul") || sn->n_in != 1 || sn->n_out < 1 ||
            sn->out[0] < 0 || mn->n_in != 2 || mn->n_out < 1 || mn->out[0] < 0)
            continue;
        int sv = sn->out[0], a, b;
        if (g->values[sv].is_graph_output || readers(g, sv, &a, &b) != 1 || a != m) continue;
        if (!((mn->in[0] == v && mn->in[1] == sv) || (mn->in[0] == sv && mn->in[1] == v))) continue;
        nodes[i].act.kind = OG_FUSE_SILU;
        nodes[i].out = mn->out[0];
        nodes[s].skip = nodes[m].skip = true;
        internal[v] = internal[sv] = true;
        fused += 2;
    }
    return fused;
}

/* ---- the weight gradient of a Conv ------------------------------------------------------ */

/* Node p (-1: none) is a Transpose swapping axes 0 and 1 of a rank-`rank` value. */
static bool swaps01(const og_graph *g, int p, int rank)
{
    if (p < 0) return false;
    const og_node *n = &g->nodes[p];
    const og_attr *a = og_node_attr(n, "perm");
    if (!is_op(n, "Transpose") || n->n_in != 1 || n->in[0] < 0 || !a || a->n != rank) return false;
    for (int i = 0; i < rank; i++)
        if (a->ints[i] != (i == 0 ? 1 : i == 1 ? 0 : i)) return false;
    return true;
}

/* A 1-D int64 constant (an initializer no input overrides, or a Constant's output) whose
 * values are all `want` (any when want < 0: then only its length, into *len). */
static bool const_ints(const og_graph *g, int v, int64_t want, int *len)
{
    if (v < 0) return false;
    const og_value *val = &g->values[v];
    const og_tensor *t = val->known;
    bool fixed = (val->kind == OG_VALUE_INITIALIZER && !val->is_graph_input) ||
                 (val->producer >= 0 && is_op(&g->nodes[val->producer], "Constant"));
    if (!t || !fixed || t->kind != OG_KIND_TENSOR || t->dtype != OG_INT64 || t->rank != 1)
        return false;
    for (int64_t i = 0; want >= 0 && i < t->numel; i++)
        if (((const int64_t *)t->data)[i] != want) return false;
    if (len) *len = (int)t->numel;
    return true;
}

/* Slice node s keeps the first elements of some spatial axes of a rank-`rank` value
 * (starts 0, steps 1, axes >= 2), as conv_dw's does. */
static bool slices_from_0(const og_graph *g, const og_node *s, int rank)
{
    if (!is_op(s, "Slice") || s->since_version < 10 || s->n_in < 4 || s->in[0] < 0) return false;
    int ns = 0, na = 0;
    if (!const_ints(g, s->in[1], 0, &ns) || !const_ints(g, s->in[3], -1, &na) || ns != na)
        return false;
    if (s->n_in > 4 && s->in[4] >= 0 && !const_ints(g, s->in[4], 1, NULL)) return false;
    const int64_t *axes = g->values[s->in[3]].known->data;
    for (int i = 0; i < na; i++)
        if (axes[i] < 2 || axes[i] >= rank) return false;
    return true;
}

/* dW smaller than this (LeNet's 6x1x5x5 and 16x6x5x5) makes a thin GEMM of a long K, which
 * the transposed-column Conv (kernels/cpu/conv.c) does faster in chunks. */
#define WGRAD_MIN_SIZE 4096

int og_fusion_plan_wgrad(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                         bool *internal)
{
    int skipped = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *c = &g->nodes[i];
        const og_conv_params *p = c->params;
        if (!is_op(c, "Conv") || !kernels[i].fn || nodes[i].skip || nodes[i].out >= 0 || !p ||
            c->n_in != 2 || c->in[0] < 0 || c->in[1] < 0 || c->n_out < 1 || c->out[0] < 0 ||
            p->group != 1 || (p->auto_pad != OG_CONV_NOTSET && p->auto_pad != OG_CONV_VALID))
            continue;
        int z = c->out[0], rank = g->values[z].rank;
        og_dtype dt = g->values[z].dtype;
        if (rank < 3 || rank > OG_CONV_MAX_SP + 2 || (dt != OG_FLOAT && dt != OG_DOUBLE)) continue;
        int tx = g->values[c->in[0]].producer, tdy = g->values[c->in[1]].producer;
        if (!swaps01(g, tx, rank) || !swaps01(g, tdy, rank)) continue;
        /* z -> [Slice ->] Transpose, each read once, none a graph output */
        int r1, r2, last = -1, sl = -1;
        if (g->values[z].is_graph_output || readers(g, z, &r1, &r2) != 1) continue;
        if (slices_from_0(g, &g->nodes[r1], rank) && g->nodes[r1].in[0] == z &&
            g->nodes[r1].n_out >= 1 && g->nodes[r1].out[0] >= 0) {
            int sv = g->nodes[r1].out[0];
            if (g->values[sv].is_graph_output || readers(g, sv, &last, &r2) != 1) continue;
            sl = r1;
        } else {
            last = r1;
        }
        if (!swaps01(g, last, rank) || g->nodes[last].n_out < 1 || g->nodes[last].out[0] < 0)
            continue;
        int dw = g->nodes[last].out[0];
        bool fixed = g->values[dw].rank == rank && g->values[dw].dtype == dt;
        int64_t size = 1; /* dW's elements: the GEMM's M x N */
        for (int d = 0; fixed && d < rank; d++) {
            fixed = og_dim_known(g->values[dw].dims[d]);
            size *= fixed ? g->values[dw].dims[d] : 1;
        }
        if (!fixed || size < WGRAD_MIN_SIZE || nodes[last].skip || (sl >= 0 && nodes[sl].skip))
            continue;
        nodes[i].out = dw;
        nodes[i].wg_x = g->nodes[tx].in[0];
        nodes[i].wg_dy = g->nodes[tdy].in[0];
        internal[z] = true;
        nodes[last].skip = true;
        skipped++;
        if (sl >= 0) {
            nodes[sl].skip = true;
            internal[g->nodes[sl].out[0]] = true;
            skipped++;
        }
        /* the inner Transposes when nothing else reads them */
        int ins[2] = {c->in[0], c->in[1]}, tr[2] = {tx, tdy};
        for (int k = 0; k < 2 && ins[0] != ins[1]; k++)
            if (!g->values[ins[k]].is_graph_output && readers(g, ins[k], &r1, &r2) == 1 &&
                !nodes[tr[k]].skip) {
                nodes[tr[k]].skip = true;
                internal[ins[k]] = true;
                skipped++;
            }
    }
    return skipped;
}

/* ---- a pointwise Conv inside the depthwise Conv of its output ---------------------------- */

/* The geometry of Conv node n over an input of dims x_dims (rank 4, static but for the batch, taken
 * as 1) and weight value w, of static shape; false when not known. */
static bool static_geometry(const og_graph *g, const og_node *n, const int64_t *x_dims, int w,
                            og_conv_geom *geom)
{
    const og_value *wv = &g->values[w];
    if (!n->params || wv->rank != 4) return false;
    for (int d = 0; d < 4; d++)
        if (!og_dim_known(wv->dims[d]) || (d > 0 && !og_dim_known(x_dims[d]))) return false;
    int64_t dims[4] = {1, x_dims[1], x_dims[2], x_dims[3]};
    return og_conv_geometry(n, n->params, true, 4, dims, 4, wv->dims, -1, geom) == OG_OK;
}

/* The node that writes value v in a fused run: its producer, or, where an activation
 * producing v was fused away, the node it was fused into (-1: none). */
static int fused_producer(const og_graph *g, const og_fusion *nodes, int v)
{
    int p = g->values[v].producer;
    if (p >= 0 && nodes[p].skip)
        for (int q = 0; q < g->n_nodes; q++)
            if (nodes[q].out == v && nodes[q].wg_x < 0) p = q;
    return p;
}

int og_fusion_plan_pwdw(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                        bool *internal)
{
    int skipped = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *d = &g->nodes[i];
        const og_conv_params *pd = d->params;
        if (!is_op(d, "Conv") || !kernels[i].fn || !kernels[i].act || nodes[i].skip ||
            nodes[i].wg_x >= 0 || !pd || d->n_in < 2 || d->n_in > 3 || d->in[0] < 0 || d->in[1] < 0)
            continue;
        const int v = d->in[0];
        int r1, r2;
        if (g->values[v].is_graph_output || readers(g, v, &r1, &r2) != 1) continue;
        const int pi = fused_producer(g, nodes, v); /* a Conv P, or P's fused activation */
        if (pi < 0 || nodes[pi].skip || nodes[pi].pre >= 0 || nodes[pi].wg_x >= 0) continue;
        const og_node *p = &g->nodes[pi];
        const int pout = nodes[pi].out >= 0 ? nodes[pi].out : p->n_out > 0 ? p->out[0] : -1;
        if (!is_op(p, "Conv") || !kernels[pi].fn || pout != v || p->n_out != 1 || p->n_in < 2 ||
            p->in[0] < 0 || p->in[1] < 0 || (p->n_in > 2 && p->in[2] < 0) ||
            g->values[p->out[0]].is_graph_output)
            continue;
        const og_value *xv = &g->values[p->in[0]], *mv = &g->values[v];
        if (xv->rank != 4 || mv->rank != 4 || xv->dtype != OG_FLOAT || mv->dtype != OG_FLOAT)
            continue;
        og_conv_geom g1, g2;
        if (!static_geometry(g, p, xv->dims, p->in[1], &g1)) continue;
        const int64_t mid[4] = {1, g1.m, g1.out[0], g1.out[1]};
        if (!static_geometry(g, d, mid, d->in[1], &g2) || !og_conv_pwdw_applies(&g1, &g2, OG_FLOAT))
            continue;
        nodes[i].pre = pi;
        nodes[pi].skip = true;
        internal[v] = internal[p->out[0]] = true;
        skipped++;
    }
    return skipped;
}

/* ---- the residual Add after a Conv -------------------------------------------------- */

/* Whether values a and b have the same shape: each dim known and equal, or the same
 * symbol (a model's batch: the kernel checks the dims it gets). */
static bool same_shape(const og_value *a, const og_value *b)
{
    if (a->rank < 1 || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] || a->dims[d] == OG_DIM_UNKNOWN) return false;
    return true;
}

/* Whether Conv node c is pointwise (1x1, strides 1, no pads, one group) on a 2-D input
 * whose dims are static but for the batch. */
static bool pointwise_conv(const og_graph *g, const og_node *c)
{
    const og_value *xv = &g->values[c->in[0]];
    og_conv_geom geom;
    if (c->n_in < 2 || c->in[0] < 0 || c->in[1] < 0 || xv->rank != 4 ||
        !static_geometry(g, c, xv->dims, c->in[1], &geom) || geom.group != 1)
        return false;
    for (int d = 0; d < 2; d++)
        if (geom.kernel[d] != 1 || geom.stride[d] != 1 || geom.pad_begin[d] != 0 ||
            geom.pad_end[d] != 0)
            return false;
    return true;
}

int og_fusion_plan_res(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                       bool *internal)
{
    int skipped = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *c = &g->nodes[i];
        if (!is_op(c, "Conv") || !kernels[i].fn || !kernels[i].act || nodes[i].skip ||
            nodes[i].out >= 0 || nodes[i].wg_x >= 0 || nodes[i].pre >= 0 || nodes[i].post >= 0 ||
            c->n_out != 1 || c->out[0] < 0)
            continue;
        const int v = c->out[0];
        int ai, a2;
        if (g->values[v].is_graph_output || g->values[v].dtype != OG_FLOAT ||
            readers(g, v, &ai, &a2) != 1)
            continue;
        const og_node *a = &g->nodes[ai];
        if (!is_op(a, "Add") || nodes[ai].skip || nodes[ai].wg_x >= 0 || a->n_in != 2 ||
            a->n_out != 1 || a->out[0] < 0)
            continue;
        const int r = a->in[0] == v ? a->in[1] : a->in[0];
        if (r < 0 || r == v || internal[r] || !same_shape(&g->values[v], &g->values[r]) ||
            !same_shape(&g->values[v], &g->values[a->out[0]]) || g->values[r].dtype != OG_FLOAT ||
            g->values[a->out[0]].dtype != OG_FLOAT)
            continue;
        const int rp = fused_producer(g, nodes, r); /* r written before C runs */
        if (rp >= i || !pointwise_conv(g, c)) continue;
        nodes[i].res = r;
        nodes[i].act = nodes[ai].act;
        nodes[i].out = nodes[ai].out >= 0 ? nodes[ai].out : a->out[0];
        nodes[ai].skip = true;
        nodes[ai].act.kind = OG_FUSE_NONE;
        nodes[ai].out = -1;
        internal[v] = true; /* A's own output: internal already where A had an activation */
        skipped++;
    }
    return skipped;
}

/* ---- a MaxPool inside the stride-2 Conv before it ------------------------------------ */

/* Whether MaxPool node m pools 3x3 windows at strides 2 with pads 1, dilations 1, floor
 * sizes, into one output. */
static bool max_pool_3x3s2(const og_node *m)
{
    const og_pool_params *p = m->params;
    if (!is_op(m, "MaxPool") || !p || p->kind != OG_POOL_MAX || p->global || p->nsp != 2 ||
        p->ceil_mode || p->auto_pad != OG_PAD_NOTSET || m->n_in != 1 || m->in[0] < 0 ||
        m->n_out < 1 || m->out[0] < 0 || (m->n_out > 1 && m->out[1] >= 0))
        return false;
    for (int i = 0; i < 2; i++)
        if (p->kernel[i] != 3 || p->strides[i] != 2 || p->dilations[i] != 1 || p->pads[i] != 1 ||
            p->pads[2 + i] != 1)
            return false;
    return true;
}

int og_fusion_plan_pool(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                        bool *internal)
{
    int skipped = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *m = &g->nodes[i];
        if (nodes[i].skip || nodes[i].out >= 0 || !max_pool_3x3s2(m)) continue;
        const int v = m->in[0];
        int r1, r2;
        if (g->values[v].is_graph_output || g->values[v].dtype != OG_FLOAT ||
            readers(g, v, &r1, &r2) != 1)
            continue;
        const int ci = fused_producer(g, nodes, v); /* a Conv C, or C's fused activation */
        if (ci < 0 || nodes[ci].skip || nodes[ci].pre >= 0 || nodes[ci].wg_x >= 0 ||
            nodes[ci].post >= 0)
            continue;
        const og_node *c = &g->nodes[ci];
        const int cout = nodes[ci].out >= 0 ? nodes[ci].out : c->n_out > 0 ? c->out[0] : -1;
        float lo, hi;
        if (!is_op(c, "Conv") || !kernels[ci].fn || !kernels[ci].act || cout != v ||
            c->n_out != 1 || c->n_in < 2 || c->in[0] < 0 || c->in[1] < 0 ||
            (c->n_in > 2 && c->in[2] < 0) || g->values[c->out[0]].is_graph_output ||
            (nodes[ci].act.kind != OG_FUSE_NONE && !og_act_clamp_f32(&nodes[ci].act, &lo, &hi)))
            continue;
        const og_value *xv = &g->values[c->in[0]];
        og_conv_geom cg;
        if (xv->rank != 4 || xv->dtype != OG_FLOAT ||
            !static_geometry(g, c, xv->dims, c->in[1], &cg) ||
            !og_conv_s2_panel_applies(&cg, OG_FLOAT))
            continue;
        nodes[ci].post = i;
        nodes[ci].out = m->out[0];
        nodes[i].skip = true;
        internal[v] = internal[c->out[0]] = true;
        skipped++;
    }
    return skipped;
}

/* ---- MatMul operands read through their Transpose ------------------------------------- */

/* The perm of Transpose node t over an input of rank `rank` (its reverse when the node has
 * none), into perm; false when the node's perm has another length. */
static bool transpose_perm(const og_node *t, int rank, int64_t *perm)
{
    const og_transpose_params *p = t->params;
    if (!p || rank < 1 || rank > OG_MAX_RANK || (p->n_perm && p->n_perm != rank)) return false;
    for (int i = 0; i < rank; i++) perm[i] = p->n_perm ? p->perm[i] : rank - 1 - i;
    return true;
}

/* MatMul node i as the plan takes it: the CPU's kernel, two operands of one dtype, no other
 * fusion. */
static bool plain_matmul(const og_graph *g, const og_kernel_binding *kernels,
                         const og_fusion *nodes, int i)
{
    const og_node *m = &g->nodes[i];
    return is_op(m, "MatMul") && kernels[i].perm_in && kernels[i].fn && m->n_in == 2 &&
           !nodes[i].skip && nodes[i].out < 0 && nodes[i].pre < 0 && nodes[i].wg_x < 0 &&
           m->in[0] >= 0 && m->in[1] >= 0 && g->values[m->in[0]].dtype == g->values[m->in[1]].dtype;
}

int og_fusion_plan_transpose(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                             bool *internal, int *reads)
{
    /* reads[v]: the operands of plain MatMuls that are v, or -1 once anything else reads v
     * (one pass: the plan stays linear in the graph's size) */
    for (int v = 0; v < g->n_values; v++) reads[v] = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const bool mm = plain_matmul(g, kernels, nodes, i);
        for (int j = 0; j < g->nodes[i].n_in; j++) {
            const int v = g->nodes[i].in[j];
            if (v >= 0) reads[v] = !mm ? -1 : reads[v] >= 0 ? reads[v] + 1 : -1;
        }
    }
    int skipped = 0;
    for (int t = 0; t < g->n_nodes; t++) {
        const og_node *n = &g->nodes[t];
        if (!is_op(n, "Transpose") || nodes[t].skip || nodes[t].out >= 0 || n->n_in != 1 ||
            n->in[0] < 0 || n->n_out != 1 || n->out[0] < 0)
            continue;
        const og_value *x = &g->values[n->in[0]];
        const int v = n->out[0], rank = x->rank;
        int64_t perm[OG_MAX_RANK];
        if ((x->dtype != OG_FLOAT && x->dtype != OG_DOUBLE) || rank < 2 || reads[v] <= 0 ||
            g->values[v].is_graph_output || !transpose_perm(n, rank, perm) ||
            (perm[rank - 1] != rank - 1 && perm[rank - 2] != rank - 1))
            continue;
        nodes[t].skip = true;
        internal[v] = true;
        skipped++;
    }
    for (int i = 0; skipped && i < g->n_nodes; i++) {
        if (!plain_matmul(g, kernels, nodes, i)) continue;
        for (int j = 0; j < 2; j++) { /* read through a Transpose the plan skips */
            const int v = g->nodes[i].in[j], p = g->values[v].producer;
            if (p >= 0 && reads[v] > 0 && internal[v] && nodes[p].skip &&
                is_op(&g->nodes[p], "Transpose"))
                nodes[i].tr[j] = p;
        }
    }
    return skipped;
}
