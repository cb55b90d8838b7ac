/* control.c: If, Loop, Scan and SequenceMap: attributes, the types their subgraphs' inputs receive,
 * and static inference from their subgraphs' outputs.  The executor runs them (src/exec/control.c):
 * they have OG_OP_CONTROL and no device kernel.
 *
 *   If(cond) -> outputs of then_branch or else_branch (no inputs; outer values by name)
 *   Loop(M, cond, v...) -> final v..., scan outputs stacked along a new first axis;
 *       body(iteration int64, cond bool, v...) -> (cond, v..., scan slices...)
 *   Scan(states..., scan inputs...) -> final states, scan outputs; one step per slice along
 *       each input's scan axis; Scan-8 has a leading batch axis and sequence_lens first
 *       (src/ops/control.h).
 *   SequenceMap(seq, extra...) -> one sequence per body output; body(item i of seq, item i
 *       of each extra sequence or each extra tensor whole) -> the outputs' items i. */
#include <string.h>

#include "ops/control.h"

/* ---- parse ----------------------------------------------------------------------- */

/* The graph attribute `name` of node n (NULL if absent). */
static og_graph *graph_attr(const og_node *n, const char *name)
{
    const og_attr *a = og_node_attr(n, name);
    return a && a->type == OG_ATTR_GRAPH ? a->g : NULL;
}

static og_status need_graph(const og_op_ctx *c, const char *name, og_graph **g)
{
    const og_attr *a = og_node_attr(c->node, name);
    *g = a && a->type == OG_ATTR_GRAPH ? a->g : NULL;
    if (!*g)
        return og_op_error(c, OG_ERR_MODEL, "attribute '%s' (a graph) is %s", name,
                           a ? "not a graph" : "missing");
    return OG_OK;
}

static og_status control_parse(const og_op_ctx *c, void **params)
{
    og_status st;
    og_graph *g1, *g2;
    const char *op = c->node->op_type;
    /* Scan's axis and direction lists follow the struct: two per scan input and output,
     * which num_scan_inputs and the node's arity bound (no fixed limit) */
    const og_node *nd = c->node;
    int64_t n_lists = strcmp(op, "Scan") == 0 ? 2 * ((int64_t)nd->n_in + nd->n_out) : 0;
    og_control_params *p = og_calloc(c->alloc, 1, sizeof *p + (size_t)n_lists * sizeof p->lists[0]);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    if (strcmp(op, "If") == 0) {
        p->kind = OG_CONTROL_IF;
        if ((st = need_graph(c, "then_branch", &g1)) || (st = need_graph(c, "else_branch", &g2)))
            goto fail;
        p->n_out = g1->n_outputs;
        if (g2->n_outputs != g1->n_outputs || c->node->n_out != g1->n_outputs) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "then_branch has %d outputs, else_branch %d, the node %d: they must "
                             "be equal",
                             g1->n_outputs, g2->n_outputs, c->node->n_out);
            goto fail;
        }
    } else if (strcmp(op, "Loop") == 0) {
        p->kind = OG_CONTROL_LOOP;
        if ((st = need_graph(c, "body", &g1))) goto fail;
        int own = c->node->n_in - c->node->n_implicit;
        p->n_state = own - 2;
        p->n_scan_out = g1->n_outputs - 1 - p->n_state;
        if (own < 2 || g1->n_inputs != own || p->n_scan_out < 0 ||
            c->node->n_out != p->n_state + p->n_scan_out) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "the body has %d inputs and %d outputs, the node %d inputs and %d "
                             "outputs: a body takes the iteration number, the condition and "
                             "each loop-carried value, and gives the condition, the carried "
                             "values and the scan outputs",
                             g1->n_inputs, g1->n_outputs, own, c->node->n_out);
            goto fail;
        }
    } else if (strcmp(op, "SequenceMap") == 0) {
        p->kind = OG_CONTROL_SEQMAP;
        if ((st = need_graph(c, "body", &g1))) goto fail;
        p->n_own = c->node->n_in - c->node->n_implicit;
        if (p->n_own < 1 || g1->n_inputs != p->n_own || g1->n_outputs != c->node->n_out) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "the body has %d inputs and %d outputs, the node %d inputs and %d "
                             "outputs: they must be equal",
                             g1->n_inputs, g1->n_outputs, p->n_own, c->node->n_out);
            goto fail;
        }
    } else {
        p->kind = OG_CONTROL_SCAN;
        p->v8 = c->node->since_version < 9;
        if ((st = need_graph(c, "body", &g1))) goto fail;
        if ((st = og_attr_check_type(c, "num_scan_inputs", OG_ATTR_INT))) goto fail;
        int own = c->node->n_in - c->node->n_implicit - (p->v8 ? 1 : 0);
        p->n_scan_in = (int)og_attr_int(c->node, "num_scan_inputs", -1);
        p->n_state = own - p->n_scan_in;
        p->n_scan_out = c->node->n_out - p->n_state;
        if (p->n_scan_in >= 0 && p->n_scan_in <= own && p->n_scan_out >= 0) {
            p->in_axes = p->lists;
            p->in_dirs = p->in_axes + p->n_scan_in;
            p->out_axes = p->in_dirs + p->n_scan_in;
            p->out_dirs = p->out_axes + p->n_scan_out;
        }
        if (p->n_scan_in < 1 || p->n_state < 0 || p->n_scan_out < 0 || g1->n_inputs != own ||
            g1->n_outputs != c->node->n_out) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "num_scan_inputs is %d; the body has %d inputs and %d outputs, the "
                             "node %d inputs%s and %d outputs: they do not fit",
                             p->n_scan_in, g1->n_inputs, g1->n_outputs, own,
                             p->v8 ? " after sequence_lens" : "", c->node->n_out);
            goto fail;
        }
        static const char *const lists[] = {"scan_input_axes", "scan_input_directions",
                                            "scan_output_axes", "scan_output_directions",
                                            "directions"};
        int64_t *dst[] = {p->in_axes, p->in_dirs, p->out_axes, p->out_dirs, p->in_dirs};
        int want[] = {p->n_scan_in, p->n_scan_in, p->n_scan_out, p->n_scan_out, p->n_scan_in};
        for (int k = 0; k < 5; k++) {
            if ((k == 4) != p->v8) continue; /* Scan-8 has directions only */
            if ((st = og_attr_check_type(c, lists[k], OG_ATTR_INTS))) goto fail;
            int cnt = 0;
            const int64_t *v = og_attr_ints(c->node, lists[k], &cnt);
            if (v && cnt != want[k]) {
                st = og_op_error(c, OG_ERR_MODEL, "attribute '%s' has %d entries, expected %d",
                                 lists[k], cnt, want[k]);
                goto fail;
            }
            for (int i = 0; i < want[k]; i++) {
                dst[k][i] = v ? v[i] : 0;
                if ((k == 1 || k >= 3) && dst[k][i] != 0 && dst[k][i] != 1) {
                    st = og_op_error(c, OG_ERR_MODEL, "attribute '%s' has %lld, expected 0 or 1",
                                     lists[k], (long long)dst[k][i]);
                    goto fail;
                }
            }
        }
    }
    if (p->kind != OG_CONTROL_IF) {
        /* carried values, states, scan inputs and SequenceMap's inputs are required: one
         * omitted ("" as its name) would reach the executor as a missing tensor */
        int first = p->kind == OG_CONTROL_LOOP ? 2 : p->kind == OG_CONTROL_SCAN && p->v8 ? 1 : 0;
        for (int i = first; i < c->node->n_in - c->node->n_implicit; i++)
            if (c->node->in[i] < 0) {
                st = og_op_error(c, OG_ERR_MODEL, "input %d is omitted; %s needs it", i,
                                 c->node->op_type);
                goto fail;
            }
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

/* ---- subgraph inputs -------------------------------------------------------------- */

/* Whether a body input's declared shape contradicts the shape vi feeds it: another rank, or
 * a dim both know with two values. */
static bool shape_contradicts(const og_value *v, const og_vinfo *vi)
{
    if (v->rank < 0 || vi->rank < 0) return false;
    if (v->rank != vi->rank) return true;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] >= 0 && vi->dims[d] >= 0 && v->dims[d] != vi->dims[d]) return true;
    return false;
}

/* Body input i takes vi's type where it declares none, and vi's shape where it declares no
 * rank or a shape that vi contradicts (a declaration the node's inputs disagree with: trust
 * what is fed, as merge_vinfo trusts the op over a declared output; keeping a wrong
 * declaration made the state unknown after the first pass and a saved model load with
 * another shape than the original). */
static void type_input(og_graph *sub, int i, const og_vinfo *vi)
{
    if (i >= sub->n_inputs) return;
    og_value *v = &sub->values[sub->inputs[i]];
    if (v->type) return;
    if (v->dtype != OG_UNDEFINED && v->rank >= 0 &&
        (vi->kind != OG_KIND_TENSOR || vi->dtype != v->dtype || !shape_contradicts(v, vi)))
        return;
    if (vi->kind != OG_KIND_TENSOR) {
        if (v->dtype == OG_UNDEFINED) v->type = vi->type;
        return;
    }
    if (v->dtype == OG_UNDEFINED) v->dtype = vi->dtype;
    if (v->dtype != vi->dtype && vi->dtype != OG_UNDEFINED) return;
    v->shape_inferred = true;
    v->rank = vi->rank;
    memcpy(v->dims, vi->dims, sizeof v->dims);
}

bool og_control_subgraph_settle(const og_op_ctx *c, og_graph *sub)
{
    const og_control_params *p = c->node->params;
    if (!p || p->kind == OG_CONTROL_IF) return true;
    /* a loop-carried value (a state) whose shape the body changes: keep what stays */
    int first_in = p->kind == OG_CONTROL_LOOP ? 2 : 0, first_out = p->kind == OG_CONTROL_LOOP;
    bool settled = true;
    for (int k = 0; k < p->n_state; k++) {
        if (first_in + k >= sub->n_inputs || first_out + k >= sub->n_outputs) break;
        og_value *in = &sub->values[sub->inputs[first_in + k]];
        const og_value *out = &sub->values[sub->outputs[first_out + k]];
        /* a declared shape stays; one the node fed (the declaration had no rank, or one the
         * fed value contradicts) settles like an undeclared input's: else a model saved with
         * the settled state (its rank dropped) loads again with the state fixed to the
         * initial shape, and saving that gives other bytes */
        if (in->has_value_info && in->rank >= 0 && !in->type && !in->shape_inferred) continue;
        if (in->rank < 0) continue;
        if (out->rank != in->rank) {
            in->rank = -1;
            settled = false;
            continue;
        }
        for (int d = 0; d < in->rank; d++)
            if (in->dims[d] != out->dims[d] && in->dims[d] != OG_DIM_UNKNOWN) {
                in->dims[d] = OG_DIM_UNKNOWN;
                settled = false;
            }
    }
    return settled;
}

/* vi with axis `axis` (and, for Scan-8, the batch axis 0 before it) taken out */
static og_vinfo slice_info(const og_vinfo *vi, int axis, bool batch)
{
    og_vinfo s = *vi;
    s.value = NULL;
    if (vi->rank < 0) return s;
    int drop = batch ? 2 : 1;
    if (vi->rank < drop || axis < 0 || axis >= vi->rank) {
        og_vinfo_unknown(&s);
        s.dtype = vi->dtype;
        return s;
    }
    int r = 0;
    for (int d = 0; d < vi->rank; d++)
        if (d != axis && !(batch && d == 0)) s.dims[r++] = vi->dims[d];
    s.rank = r;
    return s;
}

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

og_status og_control_subgraph_inputs(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                     og_graph *sub)
{
    const og_control_params *p = c->node->params;
    if (!p || p->kind == OG_CONTROL_IF) return OG_OK;
    og_vinfo vi;
    if (p->kind == OG_CONTROL_SEQMAP) { /* a sequence's item, or a tensor as it is */
        for (int i = 0; i < n_in && i < p->n_own; i++) {
            const og_type *e =
                in[i].kind == OG_KIND_SEQUENCE && in[i].type ? in[i].type->elem : NULL;
            if (in[i].kind == OG_KIND_TENSOR) {
                type_input(sub, i, &in[i]);
            } else if (e) {
                og_vinfo_unknown(&vi);
                if (e->kind == OG_KIND_TENSOR)
                    og_vinfo_set(&vi, e->dtype, e->rank, e->dims);
                else
                    og_vinfo_set_kind(&vi, e->kind, e);
                type_input(sub, i, &vi);
            }
        }
        return OG_OK;
    }
    if (p->kind == OG_CONTROL_LOOP) {
        int64_t none = 0;
        og_vinfo_unknown(&vi);
        og_vinfo_set(&vi, OG_INT64, 0, &none);
        type_input(sub, 0, &vi);
        og_vinfo_set(&vi, OG_BOOL, 0, &none);
        type_input(sub, 1, &vi);
        for (int i = 2; i < n_in; i++) type_input(sub, i, &in[i]);
        return OG_OK;
    }
    int first = p->v8 ? 1 : 0;
    for (int i = 0; i < p->n_state && first + i < n_in; i++) {
        vi = in[first + i];
        if (p->v8 && vi.rank >= 1) { /* per batch row */
            for (int d = 1; d < vi.rank; d++) vi.dims[d - 1] = vi.dims[d];
            vi.rank--;
        }
        type_input(sub, i, &vi);
    }
    for (int k = 0; k < p->n_scan_in && first + p->n_state + k < n_in; k++) {
        const og_vinfo *x = &in[first + p->n_state + k];
        int axis = p->v8 ? 1 : norm_axis(p->in_axes[k], x->rank);
        vi = slice_info(x, axis, p->v8);
        type_input(sub, p->n_state + k, &vi);
    }
    return OG_OK;
}

/* ---- infer ----------------------------------------------------------------------- */

static void from_value(og_vinfo *vi, const og_value *v)
{
    og_vinfo_unknown(vi);
    vi->dtype = v->dtype;
    vi->rank = v->rank;
    memcpy(vi->dims, v->dims, sizeof vi->dims);
    vi->kind = og_value_kind_of(v);
    vi->type = v->type;
}

static og_status control_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_control_params *p = c->node->params;
    const og_node *n = c->node;
    if (c->runtime) return OG_OK; /* the executor computes the outputs */
    if (p->kind == OG_CONTROL_IF) {
        const og_graph *t = graph_attr(n, "then_branch"), *e = graph_attr(n, "else_branch");
        if (n_in > 0 && in[0].dtype != OG_UNDEFINED && in[0].dtype != OG_BOOL)
            return og_op_error(c, OG_ERR_TYPE, "input 0 (cond) is %s, expected bool",
                               og_dtype_name(in[0].dtype));
        for (int j = 0; j < n_out; j++) {
            og_vinfo a, b;
            from_value(&a, &t->values[t->outputs[j]]);
            from_value(&b, &e->values[e->outputs[j]]);
            if (a.kind != b.kind ||
                (a.dtype != OG_UNDEFINED && b.dtype != OG_UNDEFINED && a.dtype != b.dtype))
                return og_op_error(c, OG_ERR_TYPE,
                                   "output %d is a %s %s in then_branch and a %s %s in "
                                   "else_branch",
                                   j, og_kind_name(a.kind), og_dtype_name(a.dtype),
                                   og_kind_name(b.kind), og_dtype_name(b.dtype));
            out[j] = a;
            if (a.dtype == OG_UNDEFINED) out[j].dtype = b.dtype;
            if (a.rank != b.rank) {
                out[j].rank = -1;
            } else {
                for (int d = 0; d < a.rank; d++)
                    if (a.dims[d] != b.dims[d]) out[j].dims[d] = OG_DIM_UNKNOWN;
            }
            if (a.type != b.type) out[j].type = NULL;
        }
        return OG_OK;
    }
    const og_graph *body = graph_attr(n, "body");
    if (p->kind == OG_CONTROL_SEQMAP) {
        if (n_in > 0 && in[0].kind != OG_KIND_SEQUENCE &&
            !(in[0].kind == OG_KIND_TENSOR && in[0].dtype == OG_UNDEFINED && in[0].rank < 0))
            return og_op_error(c, OG_ERR_TYPE, "input 0 must be a sequence, got a %s",
                               og_kind_name(in[0].kind));
        for (int j = 0; j < n_out; j++) { /* a sequence of what the body gives */
            og_vinfo b;
            from_value(&b, &body->values[body->outputs[j]]);
            const og_type *e =
                b.kind == OG_KIND_TENSOR ? og_op_type_tensor(c, b.dtype, b.rank, b.dims) : b.type;
            og_vinfo_unknown(&out[j]);
            og_vinfo_set_kind(&out[j], OG_KIND_SEQUENCE,
                              e ? og_op_type_wrap(c, OG_KIND_SEQUENCE, OG_UNDEFINED, e) : NULL);
        }
        return OG_OK;
    }
    if (p->kind == OG_CONTROL_LOOP) {
        if (n_in > 0 && n->in[0] >= 0 && in[0].dtype != OG_UNDEFINED && in[0].dtype != OG_INT64)
            return og_op_error(c, OG_ERR_TYPE, "input 0 (M) is %s, expected int64",
                               og_dtype_name(in[0].dtype));
        if (n_in > 1 && n->in[1] >= 0 && in[1].dtype != OG_UNDEFINED && in[1].dtype != OG_BOOL)
            return og_op_error(c, OG_ERR_TYPE, "input 1 (cond) is %s, expected bool",
                               og_dtype_name(in[1].dtype));
        for (int j = 0; j < n_out; j++) {
            from_value(&out[j], &body->values[body->outputs[1 + j]]);
            if (j < p->n_state) continue;
            /* a scan output: the slices stacked along a new first axis */
            if (out[j].rank >= 0 && out[j].rank < OG_MAX_RANK) {
                for (int d = out[j].rank; d > 0; d--) out[j].dims[d] = out[j].dims[d - 1];
                out[j].dims[0] = OG_DIM_UNKNOWN;
                out[j].rank++;
            } else {
                out[j].rank = -1;
            }
        }
        return OG_OK;
    }
    /* Scan: states keep their types; scan outputs stack the slices along their axis */
    int first = p->v8 ? 1 : 0;
    int64_t T = OG_DIM_UNKNOWN, N = OG_DIM_UNKNOWN;
    for (int k = 0; k < p->n_scan_in && first + p->n_state + k < n_in; k++) {
        const og_vinfo *x = &in[first + p->n_state + k];
        int axis = p->v8 ? 1 : norm_axis(p->in_axes[k], x->rank);
        if (x->rank >= 0 && (axis < 0 || axis >= x->rank || (p->v8 && x->rank < 2)))
            return og_op_error(c, OG_ERR_SHAPE, "scan input %d has rank %d, no axis %lld", k,
                               x->rank, p->v8 ? 1LL : (long long)p->in_axes[k]);
        if (x->rank >= 0 && og_dim_known(x->dims[axis])) T = x->dims[axis];
        if (p->v8 && x->rank >= 1 && og_dim_known(x->dims[0])) N = x->dims[0];
    }
    for (int j = 0; j < n_out; j++) {
        from_value(&out[j], &body->values[body->outputs[j]]);
        if (j < p->n_state) {
            if (p->v8 && out[j].rank >= 0 && out[j].rank < OG_MAX_RANK) {
                for (int d = out[j].rank; d > 0; d--) out[j].dims[d] = out[j].dims[d - 1];
                out[j].dims[0] = N;
                out[j].rank++;
            }
            continue;
        }
        int r = out[j].rank;
        if (r < 0 || r + (p->v8 ? 2 : 1) > OG_MAX_RANK) {
            out[j].rank = -1;
            continue;
        }
        int axis = p->v8 ? 1 : norm_axis(p->out_axes[j - p->n_state], r + 1);
        if (axis < 0 || axis > r)
            return og_op_error(c, OG_ERR_SHAPE, "scan_output_axes[%d] is %lld for rank %d",
                               j - p->n_state, (long long)p->out_axes[j - p->n_state], r + 1);
        int64_t dims[OG_MAX_RANK];
        int k = 0;
        for (int d = 0; d <= r + (p->v8 ? 1 : 0); d++) {
            if (p->v8 && d == 0)
                dims[d] = N;
            else if (d == axis)
                dims[d] = T;
            else
                dims[d] = out[j].dims[k++];
        }
        out[j].rank = r + (p->v8 ? 2 : 1);
        memcpy(out[j].dims, dims, sizeof dims);
    }
    return OG_OK;
}

const og_op_def og_ops_control[] = {
    {"If", "", OG_SINCE(If), 1, 1, 1, 1 << 16, control_parse, NULL, control_infer,
     OG_OP_CONTROL | OG_OP_ANY_KIND},
    {"Loop", "", OG_SINCE(Loop), 0, 1 << 16, 0, 1 << 16, control_parse, NULL, control_infer,
     OG_OP_CONTROL | OG_OP_ANY_KIND},
    {"Scan", "", OG_SINCE(Scan), 0, 1 << 16, 1, 1 << 16, control_parse, NULL, control_infer,
     OG_OP_CONTROL | OG_OP_ANY_KIND},
    {"SequenceMap", "", OG_SINCE(SequenceMap), 1, 1 << 16, 1, 1 << 16, control_parse, NULL,
     control_infer, OG_OP_CONTROL | OG_OP_ANY_KIND},
    {0}};
