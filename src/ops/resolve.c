/* resolve.c: binding nodes to op definitions, parsing attributes, and static type and
 * shape inference over the whole graph (og_graph_resolve, declared in op.h).  Which device
 * computes a node is not asked here: the executor binds kernels when a session is made. */
#include <stdio.h>
#include <string.h>

#include "ops/op.h"

static void value_to_vinfo(const og_value *v, og_vinfo *vi)
{
    vi->dtype = v->dtype;
    vi->rank = v->rank;
    memcpy(vi->dims, v->dims, sizeof vi->dims);
    vi->value = v->known;
    vi->kind = og_value_kind_of(v);
    vi->type = v->type;
}

/* Merge an inferred vinfo into a value: what the value already knows (a declaration) is
 * kept where inference knows less. */
static og_status merge_vinfo(og_graph *g, const og_node *n, og_value *v, const og_vinfo *vi)
{
    char label[256];
    if (vi->kind != OG_KIND_TENSOR || v->type) {
        og_kind declared = og_value_kind_of(v);
        if (v->type && v->has_value_info && declared != vi->kind) {
            char t[256];
            return og_error(OG_ERR_TYPE, "%s: output '%s' is declared %s but computes a %s",
                            og_node_label(n, label, sizeof label), v->name,
                            og_value_type_str(g, v, t, sizeof t), og_kind_name(vi->kind));
        }
        if (vi->kind == OG_KIND_TENSOR) { /* a declaration the op contradicts: trust the op */
            v->type = NULL;
        } else {
            /* the op's type where it knows one (more than the kind alone: an empty
             * Optional's, whose element the op does not read from its type attribute), else
             * the declaration's, else the kind alone */
            bool bare = vi->type && vi->type->kind != OG_KIND_TENSOR && !vi->type->elem;
            const og_type *t = vi->type && !(bare && v->type && declared == vi->kind) ? vi->type
                               : declared == vi->kind                                 ? v->type
                                                                                      : NULL;
            if (!t && !(t = og_graph_type_wrap(g, vi->kind, OG_UNDEFINED, NULL)))
                return og_error(OG_ERR_NOMEM, "out of memory during type inference");
            v->type = t;
            v->dtype = OG_UNDEFINED;
            v->rank = -1;
            if (vi->value && !v->known) v->known = vi->value;
            return OG_OK;
        }
    }
    if (vi->dtype != OG_UNDEFINED) {
        if (v->dtype != OG_UNDEFINED && v->dtype != vi->dtype && v->has_value_info)
            return og_error(OG_ERR_TYPE, "%s: output '%s' is declared %s but computes %s",
                            og_node_label(n, label, sizeof label), v->name, og_dtype_name(v->dtype),
                            og_dtype_name(vi->dtype));
        v->dtype = vi->dtype;
    }
    if (vi->rank >= 0) {
        if (v->rank >= 0 && v->rank != vi->rank) {
            /* a declaration that disagrees with the op: trust the op */
            v->rank = vi->rank;
            memcpy(v->dims, vi->dims, sizeof v->dims);
        } else if (v->rank < 0) {
            v->rank = vi->rank;
            memcpy(v->dims, vi->dims, sizeof v->dims);
        } else {
            for (int d = 0; d < vi->rank; d++)
                if (vi->dims[d] >= 0 || v->dims[d] == OG_DIM_UNKNOWN) v->dims[d] = vi->dims[d];
        }
    }
    if (vi->value && !v->known) v->known = vi->value;
    return OG_OK;
}

/* A dim the op cannot tell before run time (a Reshape's computed shape, a NonZero's count)
 * gets a symbol of its own, "<value>.dim<d>", instead of staying anonymous: the ops after it
 * that keep the dim (element-wise ops, a MatMul's rows) then carry the same symbol, so that
 * two values known to share a dim say so (the gradient builder undoes a broadcast statically
 * where both sides have one symbol, instead of deciding at run time).  A symbol names one
 * value per run, like an input's; a dim already declared or symbolic is kept. */
static og_status name_unknown_dims(og_graph *g, const og_value *v, og_vinfo *vi)
{
    if (vi->kind != OG_KIND_TENSOR || vi->rank < 0 || vi->rank > OG_MAX_RANK) return OG_OK;
    for (int d = 0; d < vi->rank; d++) {
        if (vi->dims[d] != OG_DIM_UNKNOWN) continue;
        if (v->rank == vi->rank && v->dims[d] != OG_DIM_UNKNOWN) continue; /* merge keeps it */
        char name[320];
        snprintf(name, sizeof name, "%s.dim%d", v->name ? v->name : "", d);
        int sym = og_graph_symbol(g, name);
        if (sym < 0) return og_error(OG_ERR_NOMEM, "out of memory during shape inference");
        vi->dims[d] = -1 - (int64_t)sym;
    }
    return OG_OK;
}

/* Forget the inferred shapes of g's computed values (and of its subgraphs'), keeping
 * declared shapes, before inferring again from other input shapes. */
static void forget_shapes(og_graph *g)
{
    for (int v = 0; v < g->n_values; v++) {
        og_value *val = &g->values[v];
        if (val->producer < 0 || (val->has_value_info && !val->shape_inferred)) continue;
        val->rank = -1;
        for (int d = 0; d < OG_MAX_RANK; d++) val->dims[d] = OG_DIM_UNKNOWN;
        val->known = NULL;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_attrs; k++)
            if (g->nodes[i].attrs[k].g) forget_shapes(g->nodes[i].attrs[k].g);
}

/* Resolve the subgraphs of node ni of g: their outer values take the types of g's values of
 * the same names, the op types their inputs, then they resolve recursively. */
static og_status resolve_subgraphs(og_graph *g, int ni, const og_vinfo *in, int n_in, bool strict)
{
    og_node *n = &g->nodes[ni];
    og_op_ctx c = {n, g->alloc, g, false};
    char label[256];
    for (int k = 0; k < n->n_attrs; k++) {
        og_graph *sub = n->attrs[k].g;
        if (!sub) continue;
        for (int v = 0; v < sub->n_values; v++) {
            og_value *o = &sub->values[v];
            if (o->kind != OG_VALUE_OUTER) continue;
            int w = og_graph_find_value(g, o->name);
            if (w < 0) continue; /* finalize made sure it exists */
            const og_value *src = &g->values[w];
            o->dtype = src->dtype;
            o->rank = src->rank;
            memcpy(o->dims, src->dims, sizeof o->dims);
            o->type = src->type;
            o->known = src->known;
        }
        bool control = n->op && (n->op->flags & OG_OP_CONTROL);
        og_status st = control ? og_control_subgraph_inputs(&c, in, n_in, sub) : OG_OK;
        if (!st) st = og_graph_resolve(sub, strict);
        /* a body that changes a carried value's shape: again, with what stays */
        for (int pass = 0; !st && control && pass < 2 && !og_control_subgraph_settle(&c, sub);
             pass++) {
            forget_shapes(sub);
            st = og_graph_resolve(sub, strict);
        }
        int depth = 0;
        for (const og_graph *q = g->parent; q; q = q->parent) depth++;
        if (st && depth < 4) /* the outer levels name where */
            return og_error_prefix(st, "%s, attribute '%s'", og_node_label(n, label, sizeof label),
                                   n->attrs[k].name);
        if (st) return st;
    }
    return OG_OK;
}

og_status og_graph_resolve(og_graph *g, bool strict)
{
    og_vinfo *in = NULL, *out = NULL;
    int cap_in = 0, cap_out = 0;
    og_status st = OG_OK;
    char label[256];

    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].init) g->values[i].known = g->values[i].init;

    for (int ni = 0; ni < g->n_nodes; ni++) {
        og_node *n = &g->nodes[ni];
        int64_t opset = og_graph_opset(g, n->domain);
        if (opset < 0) {
            st = og_error(OG_ERR_MODEL,
                          "node '%s' (%s) uses domain '%s', which the model "
                          "does not import",
                          n->name, n->op_type, n->domain);
            goto done;
        }
        n->opset = (int)opset;
        const og_op_def *def = og_op_find(n->domain, n->op_type);
        if (!def && !strict) continue; /* known to nobody: outputs stay unknown */
        if (!def) {
            st = og_error(OG_ERR_UNSUPPORTED,
                          "node '%s': op %s (domain '%s', opset %lld) is "
                          "not implemented by onnxgrad",
                          n->name, n->op_type, n->domain[0] ? n->domain : "ai.onnx",
                          (long long)opset);
            goto done;
        }
        n->op = def;
        n->since_version = og_op_resolve_version(def, opset);
        if (n->since_version == 0) {
            st = og_error(OG_ERR_UNSUPPORTED,
                          "node '%s': op %s does not exist in opset %lld "
                          "of domain '%s'",
                          n->name, n->op_type, (long long)opset,
                          n->domain[0] ? n->domain : "ai.onnx");
            goto done;
        }
        /* trailing omitted inputs do not count, nor the subgraphs' implicit inputs */
        int own = n->n_in - n->n_implicit;
        int n_in = own;
        while (n_in > 0 && n->in[n_in - 1] < 0) n_in--;
        if (n_in < def->min_in || (def->max_in >= 0 && n_in > def->max_in)) {
            st = og_error(OG_ERR_MODEL, "%s: has %d inputs, expected %d to %d",
                          og_node_label(n, label, sizeof label), n_in, def->min_in, def->max_in);
            goto done;
        }
        /* required inputs, and every input of a variadic op, must be present */
        for (int j = 0; j < own; j++)
            if (n->in[j] < 0 && (j < def->min_in || def->max_in < 0)) {
                st = og_error(OG_ERR_MODEL, "%s: required input %d is missing",
                              og_node_label(n, label, sizeof label), j);
                goto done;
            }
        for (int j = 0; j < def->min_out && j < n->n_out; j++)
            if (n->out[j] < 0) {
                st = og_error(OG_ERR_MODEL, "%s: required output %d has an empty name",
                              og_node_label(n, label, sizeof label), j);
                goto done;
            }
        if (n->n_out < def->min_out || (def->max_out >= 0 && n->n_out > def->max_out)) {
            st = og_error(OG_ERR_MODEL, "%s: has %d outputs, expected %d to %d",
                          og_node_label(n, label, sizeof label), n->n_out, def->min_out,
                          def->max_out);
            goto done;
        }
        og_op_ctx c = {n, g->alloc, g, false};
        if (def->parse && !n->parsed) {
            st = def->parse(&c, &n->params);
            n->free_params = def->free_params;
            if (st) goto done;
        }
        n->parsed = true;
        if (n->n_in > cap_in) {
            og_free(g->alloc, in);
            cap_in = n->n_in;
            in = og_malloc(g->alloc, (size_t)cap_in * sizeof *in);
            if (!in) goto nomem;
        }
        if (n->n_out > cap_out) {
            og_free(g->alloc, out);
            cap_out = n->n_out;
            out = og_malloc(g->alloc, (size_t)cap_out * sizeof *out);
            if (!out) goto nomem;
        }
        for (int j = 0; j < own; j++) {
            if (n->in[j] >= 0)
                value_to_vinfo(&g->values[n->in[j]], &in[j]);
            else
                og_vinfo_unknown(&in[j]);
            if (in[j].kind != OG_KIND_TENSOR && !(def->flags & OG_OP_ANY_KIND)) {
                char t[256];
                st = og_error(OG_ERR_TYPE, "%s: input %d ('%s') is %s, and the op takes tensors",
                              og_node_label(n, label, sizeof label), j, g->values[n->in[j]].name,
                              og_value_type_str(g, &g->values[n->in[j]], t, sizeof t));
                goto done;
            }
        }
        for (int j = 0; j < n->n_out; j++) og_vinfo_unknown(&out[j]);
        if (n->n_implicit || (def->flags & OG_OP_CONTROL)) {
            st = resolve_subgraphs(g, ni, in, own, strict);
            if (st) goto done;
            n = &g->nodes[ni];
        }
        if (def->infer) {
            st = def->infer(&c, in, own, out, n->n_out);
            if (st) goto done;
        }
        for (int j = 0; j < n->n_out; j++) {
            if (n->out[j] < 0) continue;
            st = name_unknown_dims(g, &g->values[n->out[j]], &out[j]);
            if (st) goto done;
            if (out[j].rank > OG_MAX_RANK) { /* an infer that missed it: dims hold 8 */
                st = og_error(OG_ERR_UNSUPPORTED, "%s: output %d would have rank %d, above %d",
                              og_node_label(n, label, sizeof label), j, out[j].rank, OG_MAX_RANK);
                goto done;
            }
            st = merge_vinfo(g, n, &g->values[n->out[j]], &out[j]);
            if (st) goto done;
        }
    }
    goto done;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory during shape inference");
done:
    og_free(g->alloc, in);
    og_free(g->alloc, out);
    return st;
}
