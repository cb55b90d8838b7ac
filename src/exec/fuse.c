/* fuse.c: the activation-fusion plan of an inference session (see fuse.h).
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

int og_fusion_plan(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                   bool *internal)
{
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        nodes[i].act.kind = OG_FUSE_NONE;
        nodes[i].out = -1;
        nodes[i].skip = false;
    }
    for (int v = 0; v < g->n_values; v++) internal[v] = false;
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
