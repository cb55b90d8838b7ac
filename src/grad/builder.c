/* builder.c: the reverse pass that turns a forward graph into its training graph.
 *
 * 1. Clone the forward graph (og_graph_clone: the clone owns everything).
 * 2. Mark the values a gradient can reach: forward from the trained weights and the inputs
 *    needing gradients (through float values only), and backward from the selected
 *    outputs.  Nodes outside both sets get no gradient code.
 * 3. Walk the nodes in reverse topological order; for a node with gradients on its
 *    outputs, sum each output's contributions and call the op's rule, which emits the
 *    nodes of the local gradients of its inputs.
 * 4. Name the results `<input>_grad` / `<weight>_grad`, order inputs and outputs as in
 *    DESIGN §4, drop the nodes no output needs, then finalize and resolve the new graph. */
#include <stdio.h>
#include <string.h>

#include "grad/grad_internal.h"

static og_status clone_graph(const og_graph *fwd, const og_allocator *a, og_graph **out)
{
    og_status st = og_graph_clone(fwd, a, out);
    if (st) return st;
    /* finalize as the round trip did (fwd need not be finalized; linear), then resolve: a
     * clone shares no parsed attributes */
    st = og_graph_finalize(*out);
    if (!st) st = og_graph_resolve(*out, false);
    if (st) {
        og_graph_free(*out);
        *out = NULL;
    }
    return st;
}

static og_status add_contribution(og_gb *b, int v, int grad)
{
    return og_gb_contribute(b, v, grad, -1);
}

/* The total gradient of v: its one contribution, or their Sum (sequences and optionals:
 * og_gb_sequence_total); -1 if none. */
static int total_gradient(og_gb *b, int v)
{
    og_contribs *c = &b->contribs[v];
    if (c->n == 0) return -1;
    if (og_value_kind_of(&b->g->values[v]) != OG_KIND_TENSOR) {
        int s = og_gb_sequence_total(b, v, c->list, c->pos, c->n);
        c->n = 1;
        c->list[0] = s;
        c->pos[0] = -1;
        return s;
    }
    if (c->n == 1) return c->list[0];
    int s = og_gb_op(b, "Sum", c->n, c->list);
    c->n = 1;
    c->list[0] = s;
    return s;
}

/* A tensor of v's runtime shape and dtype filled with `fill` (0 or 1):
 * ConstantOfShape(Shape(v)) with a one-element value of v's dtype; float for an integer v
 * (a differentiated zero point: its gradient is a float tensor, src/grad/quant.c). */
static int filled_like(og_gb *b, int v, double fill)
{
    int z = og_gb_op1(b, "ConstantOfShape", og_gb_op1(b, "Shape", v));
    int node = og_gb_last(b);
    og_tensor *t = NULL;
    int64_t one = 1;
    if (z < 0) return -1;
    og_dtype dt = b->g->values[v].dtype;
    if (og_dtype_is_integer(dt)) dt = OG_FLOAT;
    if (og_tensor_create(dt, 1, &one, b->a, &t))
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "%s", og_last_error());
    if (t->dtype == OG_FLOAT)
        *(float *)t->data = (float)fill;
    else if (t->dtype == OG_DOUBLE)
        *(double *)t->data = fill;
    else if (t->dtype == OG_FLOAT16)
        *(uint16_t *)t->data = og_float_to_half((float)fill);
    og_attr at = {0};
    at.name = "value";
    at.type = OG_ATTR_TENSOR;
    at.t = t;
    og_status st = og_node_add_attr(b->g, node, &at);
    og_tensor_free(t);
    if (st) return og_gb_fail(b, NULL, st, "%s", og_last_error());
    return z;
}

/* The constants the rules emitted (values from first_new on) that no node reads once
 * pruning removed their readers leave the initializer list: a saved graph would carry them
 * for nothing (onnxruntime warns about each).  g is finalized (consumer counts). */
static void drop_unread_constants(og_graph *g, int first_new)
{
    int k = 0;
    for (int i = 0; i < g->n_inits; i++) {
        int v = g->inits[i];
        og_value *val = &g->values[v];
        if (v >= first_new && val->n_consumers == 0 && !val->is_graph_output &&
            !val->is_graph_input) {
            og_tensor_free(val->init);
            val->init = NULL;
            val->known = NULL;
            val->kind = OG_VALUE_INTERMEDIATE;
            continue;
        }
        g->inits[k++] = v;
    }
    g->n_inits = k;
}

/* The name of the gradient of `base`, allocated with b->a (NULL when out of memory):
 * `<base>_grad`, or `<prefix>_<base>_grad` with a prefix (og_grad_spec.prefix). */
static char *grad_name(const og_gb *b, const char *base)
{
    size_t n = strlen(base) + (b->name_prefix ? strlen(b->name_prefix) + 1 : 0) + 8;
    char *name = og_malloc(b->a, n);
    if (!name) return NULL;
    if (b->name_prefix)
        snprintf(name, n, "%s_%s_grad", b->name_prefix, base);
    else
        snprintf(name, n, "%s_grad", base);
    return name;
}

/* Rename: an Identity whose output is called `<name>_grad` (made unique if taken). */
static int named_output(og_gb *b, int v, const og_value *of)
{
    char *first = grad_name(b, of->name);
    size_t n = first ? strlen(first) + 24 : 0;
    char *name = first ? og_malloc(b->a, n) : NULL;
    if (!name) {
        og_free(b->a, first);
        return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    }
    snprintf(name, n, "%s", first);
    for (int k = 1; og_graph_find_value(b->g, name) >= 0; k++) snprintf(name, n, "%s_%d", first, k);
    int r;
    if (v >= b->n_state && b->opset < 14 && og_value_kind_of(of) == OG_KIND_SEQUENCE) {
        /* Identity takes sequences from opset 14: an emitted sequence gradient is renamed */
        og_status st = og_graph_rename_value(b->g, v, name);
        r = st ? og_gb_fail(b, NULL, st, "%s", og_last_error()) : v;
    } else {
        r = og_gb_op_named(b, "Identity", 1, &v, name);
    }
    og_free(b->a, first);
    og_free(b->a, name);
    return r;
}

/* Whether value v can carry a gradient: a float tensor, or a sequence or optional whose
 * innermost elements are float tensors. */
static bool carries_float(const og_value *v)
{
    if (!v->type) return og_dtype_is_float(v->dtype);
    const og_type *t = v->type;
    while (t && t->kind != OG_KIND_TENSOR && t->kind != OG_KIND_MAP) t = t->elem;
    return t && t->kind == OG_KIND_TENSOR && og_dtype_is_float(t->dtype);
}

/* Mark what a gradient can reach: forward from the sources through float values, backward
 * from the differentiated outputs (over the first nn0 nodes, the forward ones). */
static void mark(og_gb *b, int nn0, const int *src, int n_src, const int *outs, int n_outs)
{
    og_graph *g = b->g;
    for (int i = 0; i < n_src; i++) {
        OG_ASSERT(src[i] >= 0);
        b->wants[src[i]] = true;
    }
    /* forward reach: float outputs of nodes with a wanted input, and the integer output of
     * a QuantizeLinear, which carries a straight-through surrogate gradient to the
     * DequantizeLinear that reads it (quantization-aware training, src/grad/quant.c) */
    for (int i = 0; i < nn0; i++) {
        const og_node *n = &g->nodes[i];
        bool any = false;
        for (int j = 0; j < n->n_in && !any; j++) any = n->in[j] >= 0 && b->wants[n->in[j]];
        if (!any) continue;
        bool surrogate = !n->domain[0] && strcmp(n->op_type, "QuantizeLinear") == 0;
        for (int j = 0; j < n->n_out; j++)
            if (n->out[j] >= 0 && (surrogate || carries_float(&g->values[n->out[j]])))
                b->wants[n->out[j]] = true;
    }
    /* backward reach from the selected outputs */
    for (int i = 0; i < n_outs; i++) b->relevant[outs[i]] = true;
    for (int i = nn0 - 1; i >= 0; i--) {
        const og_node *n = &g->nodes[i];
        bool any = false;
        for (int j = 0; j < n->n_out && !any; j++) any = n->out[j] >= 0 && b->relevant[n->out[j]];
        if (!any) continue;
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0) b->relevant[n->in[j]] = true;
    }
}

/* Whether graph g or one of its subgraphs has a value named `name` (a read of an enclosing
 * value by name). */
static bool names_value(const og_graph *g, const char *name, int depth)
{
    if (og_graph_find_value(g, name) >= 0 || depth > OG_MAX_NESTING) return true;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_attrs; k++)
            if (g->nodes[i].attrs[k].g && names_value(g->nodes[i].attrs[k].g, name, depth + 1))
                return true;
    return false;
}

/* Whether the rule just run for node n used gradient d (a sequence's or an optional's): a
 * dx is d, or a node emitted since node first reads it, directly or by name in a
 * subgraph. */
static bool used_gradient(const og_gb *b, const og_node *n, const int *dx, int d, int first)
{
    const og_graph *g = b->g;
    for (int j = 0; j < n->n_in; j++)
        if (dx[j] == d) return true;
    for (int i = first; i < g->n_nodes; i++) {
        const og_node *e = &g->nodes[i];
        for (int j = 0; j < e->n_in; j++)
            if (e->in[j] == d) return true;
        for (int k = 0; k < e->n_attrs; k++)
            if (e->attrs[k].g && names_value(e->attrs[k].g, g->values[d].name, 0)) return true;
    }
    return false;
}

/* The reverse pass over the first nn0 nodes: sums each value's contributions and calls
 * the rules; the gradients of the sources are then their total_gradient().  A rule that
 * leaves the gradient of a sequence or optional output unused would drop it silently: that
 * is refused (a tensor's unused gradient is a rule's own business: its output may not
 * depend on the wanted inputs). */
static og_status reverse_pass(og_gb *b, int nn0)
{
    og_graph *g = b->g;
    const og_allocator *a = b->a;
    og_status st = OG_OK;
    /* dy and dx hold as many entries as the widest node has outputs and inputs */
    int width = 1;
    for (int i = 0; i < nn0; i++) {
        if (g->nodes[i].n_out > width) width = g->nodes[i].n_out;
        if (g->nodes[i].n_in > width) width = g->nodes[i].n_in;
    }
    int *dy = og_malloc(a, 3 * (size_t)width * sizeof *dy), *dx = dy + width;
    int *held = dx + width; /* the sequence or optional outputs with a gradient */
    if (!dy) return og_error(OG_ERR_NOMEM, "out of memory building gradients");
    /* the reverse pass */
    for (int i = nn0 - 1; i >= 0 && !b->st; i--) {
        og_node n = g->nodes[i]; /* a copy: emitting nodes may move the array */
        bool any = false;
        for (int j = 0; j < n.n_out; j++) {
            int v = n.out[j];
            dy[j] = (v >= 0 && b->wants[v] && b->relevant[v]) ? total_gradient(b, v) : -1;
            any = any || dy[j] >= 0;
        }
        bool needs = false;
        for (int j = 0; j < n.n_in; j++) needs = needs || og_gb_wants(b, &n, j);
        if (!any || !needs) continue;
        const og_grad_rule *rule = og_grad_rule_find(n.domain, n.op_type);
        if (!rule) {
            char label[256];
            st = og_error(OG_ERR_UNSUPPORTED,
                          "%s: op %s has no gradient rule in onnxgrad, and "
                          "a gradient must flow through it",
                          og_node_label(&n, label, sizeof label), n.op_type);
            goto done;
        }
        for (int j = 0; j < n.n_in; j++) dx[j] = -1;
        /* a rule may emit any number of values: the og_gb_value pointers it holds are
         * copies (emit.c), unmoved when the value array grows */
        /* the rule may add outputs to the node (og_gb_forward_output): the ones it had */
        int first = g->n_nodes, n_out = n.n_out;
        for (int j = 0; j < n_out; j++)
            held[j] = dy[j] >= 0 && og_value_kind_of(&g->values[n.out[j]]) != OG_KIND_TENSOR
                          ? n.out[j]
                          : -1;
        b->current = &n;
        st = rule->fn(b, &n, dy, dx);
        b->current = NULL;
        if (st || b->st) {
            st = b->st ? b->st : st;
            goto done;
        }
        for (int j = 0; j < n_out; j++) {
            if (held[j] < 0 || b->unused_ok || used_gradient(b, &n, dx, dy[j], first)) continue;
            char label[256];
            st = og_error(OG_ERR_UNSUPPORTED,
                          "%s: the gradient of its output '%s' (a %s) would be dropped: "
                          "onnxgrad's rule for %s does not carry it to the inputs",
                          og_node_label(&n, label, sizeof label), g->values[held[j]].name,
                          og_kind_name(og_value_kind_of(&g->values[held[j]])), n.op_type);
            goto done;
        }
        b->unused_ok = false;
        for (int j = 0; j < n.n_in; j++) {
            if (dx[j] < 0 || !og_gb_wants(b, &n, j)) continue;
            st = add_contribution(b, n.in[j], dx[j]);
            if (st) goto done;
        }
    }
done:
    og_free(a, dy);
    if (!st && b->st) st = b->st;
    return st;
}

/* Expand one Gradient node (index gi) in place. */
static og_status expand_one(og_graph *g, int gi)
{
    const og_allocator *a = g->alloc;
    og_gb b;
    og_status st = OG_OK;
    memset(&b, 0, sizeof b);
    b.a = a;
    b.g = g;
    b.opset = og_graph_opset(g, "");
    og_node gn = g->nodes[gi];
    char label[256];
    int nx = 0;
    const og_attr *xs = og_node_attr(&gn, "xs");
    const char *y = og_attr_string(&gn, "y", NULL);
    if (xs && xs->type == OG_ATTR_STRINGS) nx = xs->n;
    if (!y || nx == 0 || gn.n_out != nx)
        return og_error(OG_ERR_MODEL,
                        "%s: Gradient needs attributes y and xs, and one output "
                        "per entry of xs",
                        og_node_label(&gn, label, sizeof label));
    int nv0 = g->n_values, nn0 = g->n_nodes;
    int yv = og_graph_find_value(g, y);
    int *src = og_malloc(a, (size_t)(nx + 1) * sizeof *src);
    b.n_state = nv0;
    b.wants = og_calloc(a, (size_t)nv0 + 1, sizeof *b.wants);
    b.relevant = og_calloc(a, (size_t)nv0 + 1, sizeof *b.relevant);
    b.contribs = og_calloc(a, (size_t)nv0 + 1, sizeof *b.contribs);
    if (!src || !b.wants || !b.relevant || !b.contribs) {
        st = og_error(OG_ERR_NOMEM, "out of memory expanding Gradient");
        goto done;
    }
    if (yv < 0) {
        st = og_error(OG_ERR_MODEL, "%s: y '%s' is no value of the graph",
                      og_node_label(&gn, label, sizeof label), y);
        goto done;
    }
    for (int i = 0; i < nx; i++) {
        src[i] = og_graph_find_value(g, xs->strings[i]);
        if (src[i] < 0) {
            st = og_error(OG_ERR_MODEL, "%s: xs entry '%s' is no value of the graph",
                          og_node_label(&gn, label, sizeof label), xs->strings[i]);
            goto done;
        }
    }
    mark(&b, nn0, src, nx, &yv, 1);
    if (b.wants[yv]) {
        int seed = filled_like(&b, yv, 1.0);
        if (seed < 0 || (st = add_contribution(&b, yv, seed))) {
            if (!st) st = b.st; /* filled_like failed: its status, not OK */
            goto done;
        }
    }
    st = reverse_pass(&b, nn0);
    if (st) goto done;
    /* the Gradient node's outputs now come from Identity nodes; the node itself goes */
    for (int i = 0; i < nx; i++) {
        int out = g->nodes[gi].out[i];
        if (out < 0) continue;
        int t = total_gradient(&b, src[i]);
        if (t < 0) t = filled_like(&b, src[i], 0.0);
        g->nodes[gi].out[i] = -1;
        og_gb_op_to(&b, "Identity", 1, &t, out);
    }
    st = b.st;
done:
    og_gb_release(&b);
    if (b.contribs)
        for (int v = 0; v < b.n_state; v++) {
            og_free(a, b.contribs[v].list);
            og_free(a, b.contribs[v].pos);
        }
    og_free(a, b.contribs);
    og_free(a, b.wants);
    og_free(a, b.relevant);
    og_free(a, src);
    return st;
}

static bool is_gradient_op(const og_node *n)
{
    return strcmp(n->op_type, "Gradient") == 0 &&
           strcmp(n->domain, "ai.onnx.preview.training") == 0;
}

og_status og_grad_expand_gradient_ops(og_graph *g)
{
    og_status st = OG_OK;
    bool any = false;
    for (int i = 0; i < g->n_nodes && !st; i++) {
        if (!is_gradient_op(&g->nodes[i])) continue;
        any = true;
        st = expand_one(g, i);
    }
    if (!any || st) return st;
    /* the Gradient nodes produce nothing now: drop them, then sort again */
    for (int i = g->n_nodes - 1; i >= 0; i--)
        if (is_gradient_op(&g->nodes[i])) og_graph_remove_node(g, i);
    if (!st) st = og_graph_finalize(g);
    return st;
}

og_status og_grad_build(const og_graph *fwd, const og_grad_spec *spec, const og_allocator *alloc,
                        og_graph **out)
{
    const og_allocator *a = og_alloc_or_default(alloc);
    og_gb b;
    og_status st;
    int *src = NULL, *outs = NULL, *seeds = NULL, *results = NULL;
    int n_src = spec->n_inputs + spec->n_weights;
    memset(&b, 0, sizeof b);
    b.a = a;
    b.name_prefix = spec->prefix;
    *out = NULL;

    st = clone_graph(fwd, a, &b.g);
    if (st) return st;
    og_graph *g = b.g;
    b.opset = og_graph_opset(g, "");
    int nv0 = g->n_values, nn0 = g->n_nodes;
    /* per-value state sized for the forward values; emitted values never need it */
    b.n_state = nv0;
    b.wants = og_calloc(a, (size_t)nv0 + 1, sizeof *b.wants);
    b.relevant = og_calloc(a, (size_t)nv0 + 1, sizeof *b.relevant);
    b.contribs = og_calloc(a, (size_t)nv0 + 1, sizeof *b.contribs);
    src = og_malloc(a, (size_t)(n_src + 1) * sizeof *src);
    outs = og_malloc(a, (size_t)(spec->n_outputs + 1) * sizeof *outs);
    seeds = og_malloc(a, (size_t)(spec->n_outputs + 1) * sizeof *seeds);
    results = og_malloc(a, (size_t)(n_src + 1) * sizeof *results);
    if (!b.wants || !b.relevant || !b.contribs || !src || !outs || !seeds || !results) {
        st = og_error(OG_ERR_NOMEM, "out of memory building gradients");
        goto done;
    }
    /* the clone keeps every value at its index: the spec's ids hold in it */
    for (int i = 0; i < spec->n_inputs; i++) src[i] = spec->inputs[i];
    for (int i = 0; i < spec->n_weights; i++) src[spec->n_inputs + i] = spec->weights[i];
    for (int i = 0; i < spec->n_outputs; i++) outs[i] = spec->outputs[i];
    for (int i = 0; i < n_src; i++) {
        OG_ASSERT(src[i] >= 0);
        b.wants[src[i]] = true;
    }
    mark(&b, nn0, src, n_src, outs, spec->n_outputs);
    /* seeds: one graph input per selected float output */
    for (int i = 0; i < spec->n_outputs; i++) {
        const og_value *o = &g->values[outs[i]];
        seeds[i] = -1;
        /* a float tensor, or a sequence or optional of them (a Loop's carried sequence, an
         * If's output sequence or optional, src/grad/control.c) */
        og_kind ok = og_value_kind_of(o);
        bool seq = spec->seed_sequences && (ok == OG_KIND_SEQUENCE || ok == OG_KIND_OPTIONAL) &&
                   o->type->elem && o->type->elem->kind == OG_KIND_TENSOR &&
                   og_dtype_is_float(o->type->elem->dtype);
        if (!og_dtype_is_float(o->dtype) && !seq) continue;
        char *name = grad_name(&b, o->name);
        if (!name) {
            st = og_error(OG_ERR_NOMEM, "out of memory building gradients");
            goto done;
        }
        if (og_graph_find_value(g, name) >= 0) {
            st = og_error(OG_ERR_MODEL,
                          "cannot name the gradient seed of output '%s': the model "
                          "already has a value '%s'",
                          o->name, name);
            og_free(a, name);
            goto done;
        }
        int v = og_graph_add_value(g, name);
        og_free(a, name);
        if (v < 0) {
            st = og_error(OG_ERR_NOMEM, "out of memory building gradients");
            goto done;
        }
        o = &g->values[outs[i]]; /* values may have moved */
        og_value *sv = &g->values[v];
        sv->kind = OG_VALUE_INPUT;
        sv->is_graph_input = true;
        sv->has_value_info = true;
        sv->dtype = o->dtype;
        sv->rank = o->rank;
        sv->type = o->type; /* interned by g: NULL for a tensor */
        memcpy(sv->dims, o->dims, sizeof sv->dims);
        seeds[i] = v;
        if (b.wants[outs[i]]) {
            st = add_contribution(&b, outs[i], v);
            if (st) goto done;
        }
    }
    st = reverse_pass(&b, nn0);
    if (st) goto done;
    if (b.st) {
        st = b.st;
        goto done;
    }
    /* results */
    for (int i = 0; i < n_src; i++) {
        int v = src[i];
        int t = total_gradient(&b, v);
        if (t < 0) {
            og_logf(spec->log, spec->log_user, OG_LOG_WARN,
                    "no selected output depends on '%s': its gradient is zero", g->values[v].name);
            /* a sequence or optional (an outer one a subgraph reads, src/grad/control.c):
             * zero items, or a zero element */
            og_kind kind = og_value_kind_of(&g->values[v]);
            t = kind == OG_KIND_SEQUENCE   ? og_gb_sequence_zeros(&b, v)
                : kind == OG_KIND_OPTIONAL ? og_gb_optional_zeros(&b, v)
                                           : filled_like(&b, v, 0.0);
        }
        results[i] = named_output(&b, t, &g->values[v]);
        /* a tensor's gradient has its shape, which inference may not find (the items of a
         * sequence's gradient, src/grad/control.c) */
        og_value *r = results[i] >= 0 ? &g->values[results[i]] : NULL;
        const og_value *sv = &g->values[v];
        if (r && r->rank < 0 && !sv->type && sv->rank >= 0) {
            r->rank = sv->rank;
            memcpy(r->dims, sv->dims, sizeof r->dims);
        }
    }
    if (b.st) {
        st = b.st;
        goto done;
    }
    /* inputs: model inputs, trained weights (initializers kept as default values), seeds */
    {
        int n_in = 0;
        int *inputs =
            og_malloc(a, (size_t)(g->n_inputs + n_src + spec->n_outputs + 1) * sizeof *inputs);
        int *outputs = og_malloc(a, (size_t)(spec->n_outputs + n_src + 1) * sizeof *outputs);
        if (!inputs || !outputs) {
            og_free(a, inputs);
            og_free(a, outputs);
            st = og_error(OG_ERR_NOMEM, "out of memory building gradients");
            goto done;
        }
        for (int i = 0; i < g->n_inputs; i++)
            if (g->values[g->inputs[i]].kind == OG_VALUE_INPUT) inputs[n_in++] = g->inputs[i];
        for (int i = 0; i < spec->n_weights; i++) {
            int w = src[spec->n_inputs + i];
            g->values[w].is_graph_input = true;
            inputs[n_in++] = w;
        }
        /* initializers that were overridable inputs and are not trained stay inputs */
        for (int i = 0; i < g->n_inputs; i++) {
            int v = g->inputs[i];
            bool listed = false;
            for (int k = 0; k < n_in && !listed; k++) listed = inputs[k] == v;
            if (!listed) inputs[n_in++] = v;
        }
        for (int i = 0; i < spec->n_outputs; i++)
            if (seeds[i] >= 0) inputs[n_in++] = seeds[i];
        for (int v = 0; v < g->n_values; v++) g->values[v].is_graph_output = false;
        int n_out = 0;
        for (int i = 0; i < spec->n_outputs; i++) outputs[n_out++] = outs[i];
        for (int i = 0; i < n_src; i++) outputs[n_out++] = results[i];
        for (int i = 0; i < n_out; i++) g->values[outputs[i]].is_graph_output = true;
        og_free(a, g->inputs);
        og_free(a, g->outputs);
        g->inputs = inputs;
        g->n_inputs = n_in;
        g->outputs = outputs;
        g->n_outputs = n_out;
    }
    /* finalized first: the subgraphs of backward control nodes read values of this graph
     * (their implicit inputs), which pruning must see */
    st = og_graph_finalize(g);
    if (!st) st = og_graph_prune(g);
    if (!st) st = og_graph_finalize(g);
    if (!st) drop_unread_constants(g, b.n_state);
    if (!st) st = og_graph_resolve(g, true);
    if (st) goto done;
    og_logf(spec->log, spec->log_user, OG_LOG_INFO,
            "training graph: %d forward nodes, %d nodes in all", nn0, g->n_nodes);
    *out = g;
    b.g = NULL;
done:
    og_gb_release(&b);
    if (b.contribs)
        for (int v = 0; v < b.n_state; v++) {
            og_free(a, b.contribs[v].list);
            og_free(a, b.contribs[v].pos);
        }
    og_free(a, b.contribs);
    og_free(a, b.wants);
    og_free(a, b.relevant);
    og_free(a, src);
    og_free(a, outs);
    og_free(a, seeds);
    og_free(a, results);
    og_graph_free(b.g);
    return st;
}
