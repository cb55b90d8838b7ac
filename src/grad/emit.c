/* emit.c: the helpers rules use to add nodes, attributes and constants to the training
 * graph.  Errors are sticky: see grad.h. */
#include <stdio.h>
#include <string.h>

#include "grad/grad_internal.h"
#include "grad/rule_util.h" /* og_rule_iota and og_rule_select for sum_late_axes */

og_status og_gb_status(const og_gb *b) { return b->st; }

int og_gb_fail(og_gb *b, const og_node *n, og_status st, const char *fmt, ...)
{
    if (b->st) return -1;
    char msg[768], label[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!n) n = b->current;
    if (n)
        og_error(st, "%s: gradient: %s", og_node_label(n, label, sizeof label), msg);
    else if (b->prefix)
        og_error(st, "%s", msg);
    else
        og_error(st, "gradient: %s", msg);
    b->st = st;
    return -1;
}

og_status og_gb_contribute(og_gb *b, int v, int grad, int pos)
{
    og_contribs *c = &b->contribs[v];
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 2;
        int *l = og_realloc(b->a, c->list, (size_t)c->n * sizeof *l, (size_t)cap * sizeof *l);
        if (!l) return og_error(OG_ERR_NOMEM, "out of memory building gradients");
        c->list = l;
        int *p = og_realloc(b->a, c->pos, (size_t)c->n * sizeof *p, (size_t)cap * sizeof *p);
        if (!p) return og_error(OG_ERR_NOMEM, "out of memory building gradients");
        c->pos = p;
        c->cap = cap;
    }
    c->list[c->n] = grad;
    c->pos[c->n++] = pos;
    return OG_OK;
}

void og_gb_item_gradient(og_gb *b, int seq, int pos, int grad)
{
    if (b->st || grad < 0 || pos < 0 || seq < 0 || seq >= b->n_state || !b->wants[seq]) return;
    og_status st = og_gb_contribute(b, seq, grad, pos);
    if (st) og_gb_fail(b, NULL, st, "%s", og_last_error());
}

bool og_gb_wants(const og_gb *b, const og_node *n, int i)
{
    if (i < 0 || i >= n->n_in) return false;
    int v = n->in[i];
    return v >= 0 && v < b->n_state && b->wants[v];
}

/* A copy of value v made on first request (see og_gb.snap).  The builder is only ever
 * made writable (og_gb_open, the builder's own), so the cast drops no real constness. */
const og_value *og_gb_value(const og_gb *b, int v)
{
    og_gb *w = (og_gb *)b;
    if (v < 0 || v >= b->g->n_values || b->st) return &b->g->values[v < 0 ? 0 : v];
    if (v >= w->n_snap) {
        int cap = b->g->n_values + 64;
        og_value **s =
            og_realloc(b->a, w->snap, (size_t)w->n_snap * sizeof *s, (size_t)cap * sizeof *s);
        if (!s) {
            og_gb_fail(w, NULL, OG_ERR_NOMEM, "out of memory");
            return &b->g->values[v];
        }
        for (int i = w->n_snap; i < cap; i++) s[i] = NULL;
        w->snap = s;
        w->n_snap = cap;
    }
    if (!w->snap[v]) {
        w->snap[v] = og_malloc(b->a, sizeof *w->snap[v]);
        if (!w->snap[v]) {
            og_gb_fail(w, NULL, OG_ERR_NOMEM, "out of memory");
            return &b->g->values[v];
        }
        *w->snap[v] = b->g->values[v];
    }
    return w->snap[v];
}

void og_gb_release(og_gb *b)
{
    for (int i = 0; i < b->n_snap; i++) og_free(b->a, b->snap[i]);
    og_free(b->a, b->snap);
    b->snap = NULL;
    b->n_snap = 0;
}
int64_t og_gb_opset(const og_gb *b) { return b->opset; }

const og_node *og_gb_producer(const og_gb *b, int v)
{
    if (v < 0 || v >= b->n_state) return NULL;
    int p = b->g->values[v].producer;
    return p >= 0 && p < b->g->n_nodes ? &b->g->nodes[p] : NULL;
}
const og_allocator *og_gb_alloc(const og_gb *b) { return b->a; }
int og_gb_last(const og_gb *b) { return b->st ? -1 : b->last_node; }

static void add_attr(og_gb *b, int node, const og_attr *at)
{
    if (b->st || node < 0) return;
    og_status st = og_node_add_attr(b->g, node, at);
    if (st) og_gb_fail(b, NULL, st, "%s", og_last_error());
}

/* A fresh value name that the graph does not use (hints are op names: short). */
static int new_value(og_gb *b, const char *hint)
{
    /* the whole prefix: control-flow gradients tell their scopes apart by it, and two
     * prefixes may differ only past any fixed length */
    const char *pre = b->name_prefix ? b->name_prefix : b->prefix ? b->prefix : "og_grad";
    char *name = NULL;
    do {
        og_free(b->a, name);
        name = og_strfmt(b->a, "%s_%d_%.60s", pre, b->counter++, hint);
    } while (name && og_graph_find_value(b->g, name) >= 0);
    int v = name ? og_graph_add_value(b->g, name) : -1;
    og_free(b->a, name);
    if (v < 0) og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    return v;
}

/* The name of an emitted node, "<forward node>/grad/<op>_<k>" (allocated: forward node
 * names have any length), NULL when out of memory. */
static char *node_name(og_gb *b, const char *op)
{
    const char *base = b->current ? b->current->name : (b->prefix ? b->prefix : "og_grad");
    size_t n = strlen(base) + strlen(op) + 32;
    char *name = og_malloc(b->a, n);
    if (!name) return NULL;
    snprintf(name, n, b->current ? "%s/grad/%s_%d" : "%s/%s_%d", base, op, b->counter++);
    return name;
}

/* The doc_string of a node emitted for the rule of b->current names that forward node
 * and op (OG_GRAD_DOC_PREFIX), so that an error in it says what it differentiates.  False
 * when out of memory. */
static bool set_origin(og_gb *b, og_node *n)
{
    if (!b->current) return true;
    size_t len = strlen(b->current->name) + strlen(b->current->op_type) + 32;
    char *doc = og_malloc(b->g->alloc, len);
    if (!doc) return false;
    snprintf(doc, len, OG_GRAD_DOC_PREFIX "'%s' (%s)", b->current->name, b->current->op_type);
    og_free(b->g->alloc, n->doc);
    n->doc = doc;
    return true;
}

og_gb *og_gb_open(og_graph *g, const char *prefix)
{
    og_gb *b = og_calloc(g->alloc, 1, sizeof *b);
    if (!b) return NULL;
    b->g = g;
    b->a = g->alloc;
    b->opset = og_graph_opset(g, "");
    b->prefix = prefix;
    b->last_node = -1;
    b->max_nodes = (int64_t)g->n_nodes * OG_GB_NODES_PER_NODE + OG_GB_NODES_EXTRA;
    return b;
}

og_status og_gb_close(og_gb *b)
{
    if (!b) return OG_OK;
    og_status st = b->st;
    og_gb_release(b);
    og_free(b->a, b);
    return st;
}

int og_gb_op_multi(og_gb *b, const char *op, int n_in, const int *in, int n_out, int *out)
{
    for (int j = 0; j < n_out; j++) out[j] = -1;
    if (b->st || n_out < 1) return -1;
    int first = og_gb_op_named(b, op, n_in, in, NULL);
    if (first < 0) return -1;
    int node = b->last_node;
    og_node *n = &b->g->nodes[node];
    int *outs = og_realloc(b->a, n->out, sizeof *outs, (size_t)n_out * sizeof *outs);
    if (!outs) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    n->out = outs;
    n->n_out = n_out;
    out[0] = first;
    for (int j = 1; j < n_out; j++) {
        n->out[j] = new_value(b, op);
        if (n->out[j] < 0) return -1;
        out[j] = n->out[j];
        n = &b->g->nodes[node];
    }
    return node;
}

void og_gb_copy_attrs(og_gb *b, int node, const og_node *src, const char *skip)
{
    for (int i = 0; i < src->n_attrs && !b->st && node >= 0; i++) {
        if (skip && strcmp(src->attrs[i].name, skip) == 0) continue;
        add_attr(b, node, &src->attrs[i]);
    }
}

/* Room for one more node, or the sticky OG_ERR_LIMIT. */
static bool node_room(og_gb *b)
{
    if (!b->max_nodes) /* an emitter set up without og_gb_open: from its first node */
        b->max_nodes = (int64_t)b->g->n_nodes * OG_GB_NODES_PER_NODE + OG_GB_NODES_EXTRA;
    if (b->g->n_nodes < b->max_nodes) return true;
    og_gb_fail(b, NULL, OG_ERR_LIMIT,
               "the graph would pass %lld nodes (%d per node of the model, plus %d): a rule "
               "that unrolls an attribute this far is refused",
               (long long)b->max_nodes, OG_GB_NODES_PER_NODE, OG_GB_NODES_EXTRA);
    return false;
}

int og_gb_op_named(og_gb *b, const char *op, int n_in, const int *in, const char *out_name)
{
    if (b->st || !node_room(b)) return -1;
    int present = n_in;
    while (present > 0 && in[present - 1] < 0) present--;
    for (int i = 0; i < present; i++)
        if (in[i] < -1 || (in[i] < 0 && i == 0)) return -1; /* an earlier helper failed */
    int v;
    if (out_name) {
        v = og_graph_add_value(b->g, out_name);
        if (v < 0) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    } else {
        v = new_value(b, op);
        if (v < 0) return -1;
    }
    char *name = node_name(b, op);
    og_node *n = name ? og_graph_add_node(b->g, op, "", name, present, 1) : NULL;
    og_free(b->a, name);
    if (!n || !set_origin(b, n)) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < present; i++) n->in[i] = in[i];
    n->out[0] = v;
    b->last_node = b->g->n_nodes - 1;
    return v;
}

int og_gb_op_to(og_gb *b, const char *op, int n_in, const int *in, int out_value)
{
    if (b->st || !node_room(b)) return -1;
    char *name = node_name(b, op);
    og_node *n = name ? og_graph_add_node(b->g, op, "", name, n_in, 1) : NULL;
    og_free(b->a, name);
    if (!n || !set_origin(b, n)) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_in; i++) n->in[i] = in[i];
    n->out[0] = out_value;
    b->last_node = b->g->n_nodes - 1;
    return out_value;
}

int og_gb_op(og_gb *b, const char *op, int n_in, const int *in)
{
    return og_gb_op_named(b, op, n_in, in, NULL);
}

int og_gb_op1(og_gb *b, const char *op, int x) { return og_gb_op(b, op, 1, &x); }

int og_gb_op2(og_gb *b, const char *op, int x, int y)
{
    int in[2] = {x, y};
    if (x < 0 || y < 0) return -1;
    return og_gb_op(b, op, 2, in);
}

int og_gb_op3(og_gb *b, const char *op, int x, int y, int z)
{
    int in[3] = {x, y, z};
    if (x < 0 || y < 0 || z < 0) return -1;
    return og_gb_op(b, op, 3, in);
}

void og_gb_attr_int(og_gb *b, int node, const char *name, int64_t v)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_INT;
    at.i = v;
    add_attr(b, node, &at);
}

void og_gb_attr_float(og_gb *b, int node, const char *name, float v)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_FLOAT;
    at.f = v;
    add_attr(b, node, &at);
}

void og_gb_attr_ints(og_gb *b, int node, const char *name, const int64_t *v, int n)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_INTS;
    at.n = n;
    at.ints = (int64_t *)v;
    add_attr(b, node, &at);
}

void og_gb_attr_floats(og_gb *b, int node, const char *name, const float *v, int n)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_FLOATS;
    at.n = n;
    at.floats = (float *)v;
    add_attr(b, node, &at);
}

void og_gb_attr_string(og_gb *b, int node, const char *name, const char *v)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_STRING;
    at.s = (char *)v;
    at.s_len = strlen(v);
    add_attr(b, node, &at);
}

/* A new initializer holding t (taken over). */
/* A constant: an initializer of the training graph, or, for an emitter opened with
 * og_gb_open, a Constant node (so that the graph gains no initializer a trainer would take
 * for a weight). */
static int const_node(og_gb *b, og_tensor *t, const char *hint)
{
    /* before opset 9 a Constant holds floats only: other types are a cast float constant */
    og_dtype cast = OG_UNDEFINED;
    if (b->opset < 9 && !og_dtype_is_float(t->dtype)) {
        og_tensor *f = NULL;
        if (og_tensor_create(OG_FLOAT, t->rank, t->dims, b->a, &f)) {
            og_tensor_free(t);
            return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        }
        for (int64_t i = 0; i < t->numel; i++)
            ((float *)f->data)[i] = (float)og_tensor_get_f64(t, i);
        cast = t->dtype;
        og_tensor_free(t);
        t = f;
    }
    int v = og_gb_op(b, "Constant", 0, NULL);
    if (v >= 0) {
        og_attr at = {0};
        at.name = (char *)"value";
        at.type = OG_ATTR_TENSOR;
        at.t = t;
        add_attr(b, og_gb_last(b), &at);
    }
    (void)hint;
    og_tensor_free(t);
    if (v >= 0 && cast != OG_UNDEFINED) {
        v = og_gb_op1(b, "Cast", v);
        og_gb_attr_int(b, og_gb_last(b), "to", cast);
    }
    return b->st ? -1 : v;
}

static int add_const(og_gb *b, og_tensor *t, const char *hint)
{
    if (b->st) {
        og_tensor_free(t);
        return -1;
    }
    if (b->prefix) return const_node(b, t, hint);
    int v = new_value(b, hint);
    if (v < 0) {
        og_tensor_free(t);
        return -1;
    }
    if (!og_graph_add_initializer(b->g, v)) {
        og_tensor_free(t);
        return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    }
    og_value *val = &b->g->values[v];
    val->kind = OG_VALUE_INITIALIZER;
    val->init = t;
    val->known = t;
    t->readonly = true;
    val->dtype = t->dtype;
    val->rank = t->rank;
    memcpy(val->dims, t->dims, sizeof val->dims);
    return v;
}

int og_gb_const_i64(og_gb *b, const int64_t *v, int n)
{
    og_tensor *t = NULL;
    int64_t d = n;
    if (b->st) return -1;
    if (og_tensor_from_data(OG_INT64, 1, &d, v, (size_t)n * sizeof *v, b->a, &t))
        return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    return add_const(b, t, "ints");
}

int og_gb_const_floats(og_gb *b, const float *v, int n, og_dtype dtype)
{
    og_tensor *t = NULL;
    int64_t d = n;
    if (b->st) return -1;
    if (dtype != OG_FLOAT && dtype != OG_DOUBLE && dtype != OG_FLOAT16 && dtype != OG_BFLOAT16)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s constant",
                          og_dtype_name(dtype));
    if (og_tensor_alloc(dtype, 1, &d, b->a, &t))
        return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        if (dtype == OG_FLOAT)
            ((float *)t->data)[i] = v[i];
        else if (dtype == OG_DOUBLE)
            ((double *)t->data)[i] = v[i];
        else if (dtype == OG_FLOAT16)
            ((uint16_t *)t->data)[i] = og_float_to_half(v[i]);
        else
            ((uint16_t *)t->data)[i] = og_float_to_bfloat16(v[i]);
    }
    return add_const(b, t, "floats");
}

int og_gb_const_tensor(og_gb *b, const og_tensor *t)
{
    og_tensor *c = NULL;
    if (b->st) return -1;
    og_status st = og_tensor_clone(t, b->a, &c);
    if (st) return og_gb_fail(b, NULL, st, "%s", og_last_error());
    return add_const(b, c, "tensor");
}

int og_gb_scalar(og_gb *b, double v, og_dtype dtype)
{
    og_tensor *t = NULL;
    if (b->st) return -1;
    if (og_tensor_create(dtype, 0, NULL, b->a, &t))
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s constant",
                          og_dtype_name(dtype));
    switch (dtype) {
    case OG_FLOAT: *(float *)t->data = (float)v; break;
    case OG_DOUBLE: *(double *)t->data = v; break;
    case OG_FLOAT16: *(uint16_t *)t->data = og_float_to_half((float)v); break;
    case OG_BFLOAT16: *(uint16_t *)t->data = og_float_to_bfloat16((float)v); break;
    case OG_INT64:
    case OG_INT32:
        /* [-2^63, 2^63): the doubles that convert to int64 without undefined behaviour */
        if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) ||
            v != (double)(int64_t)v) {
            og_tensor_free(t);
            return og_gb_fail(b, NULL, OG_ERR_LIMIT, "the %s constant %g is not an integer of it",
                              og_dtype_name(dtype), v);
        }
        og_tensor_free(t);
        return og_gb_scalar_i64(b, (int64_t)v, dtype);
    default:
        og_tensor_free(t);
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s constant",
                          og_dtype_name(dtype));
    }
    return add_const(b, t, "scalar");
}

int og_gb_scalar_i64(og_gb *b, int64_t v, og_dtype dtype)
{
    og_tensor *t = NULL;
    if (b->st) return -1;
    if (dtype != OG_INT64 && dtype != OG_INT32)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s integer constant",
                          og_dtype_name(dtype));
    if (dtype == OG_INT32 && (v < INT32_MIN || v > INT32_MAX))
        return og_gb_fail(b, NULL, OG_ERR_LIMIT, "the constant %lld does not fit in int32",
                          (long long)v);
    if (og_tensor_create(dtype, 0, NULL, b->a, &t))
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s constant",
                          og_dtype_name(dtype));
    if (dtype == OG_INT64)
        *(int64_t *)t->data = v;
    else
        *(int32_t *)t->data = (int32_t)v;
    return add_const(b, t, "scalar");
}

int og_gb_scalar_like(og_gb *b, double v, int like)
{
    if (b->st || like < 0) return -1;
    if (b->g->values[like].dtype == OG_UNDEFINED)
        return og_gb_fail(b, NULL, OG_ERR_INTERNAL, "the type of '%s' is not known statically",
                          b->g->values[like].name);
    return og_gb_scalar(b, v, b->g->values[like].dtype);
}

int og_gb_reduce_sum(og_gb *b, int x, const int64_t *axes, int n_axes, bool keepdims)
{
    if (b->st || x < 0) return -1;
    int r;
    if (b->opset >= 13) {
        int ax = og_gb_const_i64(b, axes, n_axes);
        r = og_gb_op2(b, "ReduceSum", x, ax);
    } else {
        r = og_gb_op1(b, "ReduceSum", x);
        og_gb_attr_ints(b, og_gb_last(b), "axes", axes, n_axes);
    }
    og_gb_attr_int(b, og_gb_last(b), "keepdims", keepdims ? 1 : 0);
    return r;
}

int og_gb_reshape_like(og_gb *b, int x, int like)
{
    if (b->st || x < 0 || like < 0) return -1;
    const og_value *t = og_gb_value(b, like);
    bool known = t->rank >= 0;
    for (int d = 0; known && d < t->rank; d++) known = t->dims[d] >= 0;
    int shape;
    if (known) {
        int64_t dims[OG_MAX_RANK];
        memcpy(dims, t->dims, sizeof dims);
        shape = og_gb_const_i64(b, dims, t->rank);
    } else {
        shape = og_gb_op1(b, "Shape", like);
    }
    return og_gb_op2(b, "Reshape", x, shape);
}

/* The broadcast axes decided at run time: sum over the axes where the target's shape
 * (padded with leading 1s) differs from the gradient's, then take the target's shape.
 *   axes = NonZero(padded_target_shape != grad_shape); ReduceSum(grad, axes, keepdims,
 *   noop_with_empty_axes) */
static int sum_to_dynamic(og_gb *b, int grad, int from_rank, int target)
{
    const og_value *t = og_gb_value(b, target);
    if (b->opset < 13)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "undoing broadcasting onto '%s', whose dims are unknown before run "
                          "time, needs opset >= 13",
                          t->name);
    int tshape = og_gb_op1(b, "Shape", target);
    int pad = from_rank - t->rank;
    if (pad > 0) {
        int64_t ones[OG_MAX_RANK];
        for (int i = 0; i < pad; i++) ones[i] = 1;
        int lead = og_gb_const_i64(b, ones, pad);
        tshape = og_gb_op2(b, "Concat", lead, tshape);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    }
    int differ = og_gb_op1(b, "Not", og_gb_op2(b, "Equal", tshape, og_gb_op1(b, "Shape", grad)));
    int64_t flat = -1;
    int axes =
        og_gb_op2(b, "Reshape", og_gb_op1(b, "NonZero", differ), og_gb_const_i64(b, &flat, 1));
    int s = og_gb_op2(b, "ReduceSum", grad, axes);
    int node = og_gb_last(b);
    og_gb_attr_int(b, node, "keepdims", 1);
    og_gb_attr_int(b, node, "noop_with_empty_axes", 1);
    return og_gb_op2(b, "Reshape", s, og_gb_op1(b, "Shape", target));
}

/* Before opset 13 ReduceSum's axes are an attribute, so axes decided at run time are
 * handled one by one: along axis d (target axis d - off),
 *   g' = Slice(Where(Shape(target)[d - off] == 1, Expand(ReduceSum(g, d), Shape(g)), g),
 *              0, Shape(target)[d - off], d)
 * i.e. the sum where the target has 1 there, g itself where it has g's dim.  Slice with
 * computed ends needs opset 10; before, the first td entries along d are a Gather of
 * og_rule_iota(td).  Below opset 9 (no Where, no Expand before 8) the sum is broadcast by
 * an Add onto zeros of g's shape and the choice is og_rule_select's arithmetic. */
static int sum_late_axes(og_gb *b, int grad, const int64_t *late, int n_late, int off, int target)
{
    og_dtype dt = og_gb_value(b, target)->dtype;
    int tshape = og_gb_op1(b, "Shape", target);
    int64_t zero = 0, one = 1;
    for (int i = 0; i < n_late; i++) {
        int64_t d = late[i], td = d - off;
        int tdim = og_gb_op2(b, "Gather", tshape, og_gb_const_i64(b, &td, 1)); /* [1] */
        int s = og_gb_reduce_sum(b, grad, &d, 1, true), e;
        if (b->opset >= 8)
            e = og_gb_op2(b, "Expand", s, og_gb_op1(b, "Shape", grad));
        else /* Cast(g < g): zeros of g's shape (g is a float gradient) */
            e = og_gb_op2(b, "Add", s, og_rule_cast(b, og_gb_op2(b, "Less", grad, grad), dt));
        int is1 = og_gb_op2(b, "Equal", tdim, og_gb_const_i64(b, &one, 1));
        int w = og_rule_select(b, is1, e, grad, target);
        if (b->opset >= 10) {
            int in[4] = {w, og_gb_const_i64(b, &zero, 1), tdim, og_gb_const_i64(b, &d, 1)};
            grad = og_gb_op(b, "Slice", 4, in);
        } else {
            int idx = og_rule_iota(b, og_rule_reshape_c(b, tdim, NULL, 0));
            grad = og_gb_op2(b, "Gather", w, idx);
            og_gb_attr_int(b, og_gb_last(b), "axis", d);
        }
    }
    return grad;
}

int og_gb_sum_to(og_gb *b, int grad, int from, int target)
{
    if (b->st || grad < 0) return -1;
    const og_value *f = og_gb_value(b, from);
    if (f->rank < 0)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "cannot undo broadcasting: the rank of '%s' is unknown", f->name);
    return og_gb_sum_to_shape(b, grad, f->rank, f->dims, target);
}

/* Whether an input of n other than input `self` may have, on output axis d, a dim other
 * than 1 and other than `td` (self's dim there): only such a peer can make the output's dim
 * differ from self's.  Inputs are aligned to the right.  A peer of unknown rank may. */
static bool peer_may_broadcast(const og_gb *b, const og_node *n, int self, int out_rank, int d,
                               int64_t td)
{
    for (int k = 0; k < n->n_in; k++) {
        if (k == self || n->in[k] < 0) continue;
        const og_value *p = &b->g->values[n->in[k]];
        if (p->rank < 0) return true;
        int off = out_rank - p->rank;
        if (d < off) continue; /* the peer lacks this axis */
        int64_t pd = p->dims[d - off];
        if (pd == 1 || (pd == td && td != OG_DIM_UNKNOWN)) continue;
        return true;
    }
    return false;
}

/* og_gb_sum_to_shape, and og_gb_sum_to_input when n is set: then the output's dim on an
 * axis whose dims are unknown before run time is self's own when no other input can
 * broadcast there (e.g. [?, T] + [T]: axis 0 of the output is the first input's), and the
 * last `tail` axes are the target's own (MatMul's matrix axes), never broadcast. */
static int sum_to(og_gb *b, int grad, int from_rank, const int64_t *from_dims, int target,
                  const og_node *n, int self, int tail)
{
    if (b->st || grad < 0) return -1;
    const og_value *t = og_gb_value(b, target);
    if (t->rank < 0)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "cannot undo broadcasting onto '%s': its rank is unknown", t->name);
    if (t->rank > from_rank)
        return og_gb_fail(b, NULL, OG_ERR_INTERNAL, "'%s' has a larger rank than its gradient",
                          t->name);
    int off = from_rank - t->rank;
    int64_t axes[OG_MAX_RANK];
    int n_axes = 0;
    /* Per axis d of the gradient, with td the target's dim there and fd the gradient's:
     *   leading axis (d < off)         broadcast: summed
     *   td == 1, fd not 1              broadcast (a no-op sum when fd is 1 at run time)
     *   td known, not 1                not broadcast (fd equals td)
     *   fd == 1                        not broadcast (td is 1 too)
     *   td symbolic, fd the same one   not broadcast (one symbol, one value)
     *   no other input of n can be     not broadcast (the output's dim there is td)
     *   other than 1 or td there
     *   otherwise                      td is 1 or fd only at run time: an anonymous unknown
     *                                  dim equals no other (two unknowns may differ), and a
     *                                  symbol may be 1 where the other side is not
     * The last case decides the axes at run time (sum_to_dynamic). */
    int64_t late[OG_MAX_RANK];
    int n_late = 0;
    for (int d = 0; d < from_rank - tail; d++) {
        if (d < off) {
            axes[n_axes++] = d;
            continue;
        }
        int64_t td = t->dims[d - off], fd = from_dims[d];
        if (td == 1 && fd != 1)
            axes[n_axes++] = d;
        else if (!(td >= 0 || fd == 1 || (td == fd && td != OG_DIM_UNKNOWN)) &&
                 (!n || peer_may_broadcast(b, n, self, from_rank, d, td)))
            late[n_late++] = d;
    }
    if (n_late > 0 && b->opset >= 13) return sum_to_dynamic(b, grad, from_rank, target);
    if (n_late > 0) grad = sum_late_axes(b, grad, late, n_late, off, target);
    if (n_axes == 0) return grad;
    int r = og_gb_reduce_sum(b, grad, axes, n_axes, true);
    return off == 0 ? r : og_gb_reshape_like(b, r, target);
}

int og_gb_sum_to_shape(og_gb *b, int grad, int from_rank, const int64_t *from_dims, int target)
{
    return sum_to(b, grad, from_rank, from_dims, target, NULL, -1, 0);
}

int og_gb_sum_to_input(og_gb *b, int grad, const og_node *n, int i, int tail)
{
    if (b->st || grad < 0) return -1;
    const og_value *f = og_gb_value(b, n->out[0]);
    if (f->rank < 0)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "cannot undo broadcasting: the rank of '%s' is unknown", f->name);
    if (tail < 0 || tail > f->rank || tail > og_gb_value(b, n->in[i])->rank)
        return og_gb_fail(b, n, OG_ERR_INTERNAL, "summing onto input %d: bad tail %d", i, tail);
    return sum_to(b, grad, f->rank, f->dims, n->in[i], n, i, tail);
}

/* The forward node's index in the training graph is the producer of its present outputs
 * (forward values keep the indices of the clone, and emitted nodes only come after). */
void og_gb_gradient_unused(og_gb *b) { b->unused_ok = true; }

int og_gb_forward_output(og_gb *b, const og_node *n, int j)
{
    if (b->st) return -1;
    if (j < 0 || j >= INT32_MAX / 2)
        return og_gb_fail(b, n, OG_ERR_INTERNAL, "output %d of the forward node is out of range",
                          j);
    if (j < n->n_out && n->out[j] >= 0) return n->out[j];
    int node = -1;
    for (int k = 0; k < n->n_out && node < 0; k++)
        if (n->out[k] >= 0 && n->out[k] < b->n_state) node = b->g->values[n->out[k]].producer;
    if (node < 0 || node >= b->g->n_nodes || b->g->nodes[node].out != n->out ||
        (b->current && b->current->out != n->out))
        return og_gb_fail(b, n, OG_ERR_INTERNAL,
                          "output %d: the forward node is not the one whose rule runs", j);
    og_node *f = &b->g->nodes[node];
    if (j >= f->n_out) {
        int *outs = og_realloc(b->a, f->out, (size_t)f->n_out * sizeof *outs,
                               (size_t)(j + 1) * sizeof *outs);
        if (!outs) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        for (int k = f->n_out; k <= j; k++) outs[k] = -1;
        f->out = outs;
        f->n_out = j + 1;
    }
    char hint[96];
    snprintf(hint, sizeof hint, "%s_out%d", f->op_type, j);
    int v = new_value(b, hint);
    if (v < 0) return -1;
    f = &b->g->nodes[node];
    f->out[j] = v;
    b->g->values[v].producer = node;
    if (b->current) { /* the rule's n: the same outputs */
        b->current->out = f->out;
        b->current->n_out = f->n_out;
    }
    return v;
}

int og_gb_op_ext(og_gb *b, const char *domain, const char *op, int n_in, const int *in, int n_out,
                 const bool *want, int *out)
{
    for (int j = 0; j < n_out; j++) out[j] = -1;
    if (b->st || n_out < 1 || !node_room(b)) return -1;
    if (n_in > 0 && in[0] < 0) return -1; /* an earlier helper failed */
    for (int i = 0; i < n_in; i++)
        if (in[i] < -1) return -1;
    int present = n_in;
    while (present > 0 && in[present - 1] < 0) present--;
    char *name = node_name(b, op);
    og_node *n = name ? og_graph_add_node(b->g, op, domain, name, present, n_out) : NULL;
    og_free(b->a, name);
    if (!n || !set_origin(b, n)) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    int node = b->g->n_nodes - 1;
    for (int i = 0; i < present; i++) n->in[i] = in[i];
    for (int j = 0; j < n_out; j++) {
        if (want && !want[j]) continue;
        int v = new_value(b, op);
        if (v < 0) return -1;
        b->g->nodes[node].out[j] = v;
        out[j] = v;
    }
    b->last_node = node;
    return node;
}

void og_gb_import(og_gb *b, const char *domain, int64_t version)
{
    og_graph *g = b->g;
    if (b->st || og_graph_opset(g, domain) >= 0) return;
    char *d = og_strdup(b->a, domain);
    og_opset *o = d ? og_realloc(b->a, g->opsets, (size_t)g->n_opsets * sizeof *o,
                                 (size_t)(g->n_opsets + 1) * sizeof *o)
                    : NULL;
    if (!o) {
        og_free(b->a, d);
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        return;
    }
    g->opsets = o;
    o[g->n_opsets].domain = d;
    o[g->n_opsets].version = version;
    g->n_opsets++;
}

void og_gb_set_overload(og_gb *b, int node, const char *overload)
{
    if (b->st || node < 0) return;
    og_node *n = &b->g->nodes[node];
    char *s = og_strdup(b->a, overload);
    if (!s) {
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        return;
    }
    og_free(b->a, n->overload);
    n->overload = s;
}

bool og_gb_has_function(const og_gb *b, const char *domain, const char *name, const char *overload)
{
    return og_graph_find_function(b->g, domain, name, overload) >= 0;
}

void og_gb_add_function(og_gb *b, const char *domain, const char *name, const char *overload,
                        const og_blob *proto)
{
    if (b->st || og_gb_has_function(b, domain, name, overload)) return;
    og_status st = og_graph_add_function(b->g, domain, name, overload, proto->data, proto->size);
    if (st) {
        og_gb_fail(b, NULL, st, "%s", og_last_error());
        return;
    }
    if (b->g->ir_version < 10) b->g->ir_version = 10;
}

void og_gb_forward_retype(og_gb *b, const og_node *n, const char *domain, const char *op,
                          const char *overload)
{
    if (b->st) return;
    int node = -1;
    for (int k = 0; k < n->n_out && node < 0; k++)
        if (n->out[k] >= 0 && n->out[k] < b->n_state) node = b->g->values[n->out[k]].producer;
    if (node < 0 || node >= b->g->n_nodes || b->g->nodes[node].out != n->out) {
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the forward node is not the one whose rule runs");
        return;
    }
    og_node *f = &b->g->nodes[node];
    char *d = og_strdup(b->a, domain), *o = og_strdup(b->a, op);
    if (!d || !o) {
        og_free(b->a, d);
        og_free(b->a, o);
        og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        return;
    }
    og_free(b->a, f->domain);
    og_free(b->a, f->op_type);
    f->domain = d;
    f->op_type = o;
    if (overload) og_gb_set_overload(b, node, overload);
    /* parsed again by the final resolution, as the new op */
    if (f->params) {
        if (f->free_params)
            f->free_params(b->a, f->params);
        else
            og_free(b->a, f->params);
    }
    f->params = NULL;
    f->free_params = NULL;
    f->parsed = false;
    f->op = NULL;
}

og_graph *og_gb_graph(og_gb *b) { return b->g; }

void og_gb_attr_graph(og_gb *b, int node, const char *name, const og_graph *sub)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_GRAPH;
    at.g = (og_graph *)sub; /* copied by og_node_add_attr */
    add_attr(b, node, &at);
}

int og_gb_op_into(og_gb *b, const char *op, int n_in, const int *in, int out_value)
{
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0) return -1;
    return og_gb_op_to(b, op, n_in, in, out_value);
}

void og_gb_forward_reparse(og_gb *b, const og_node *n)
{
    if (b->st) return;
    int node = -1;
    for (int k = 0; k < n->n_out && node < 0; k++)
        if (n->out[k] >= 0 && n->out[k] < b->n_state) node = b->g->values[n->out[k]].producer;
    if (node < 0 || node >= b->g->n_nodes || b->g->nodes[node].out != n->out) {
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the forward node is not the one whose rule runs");
        return;
    }
    og_node *f = &b->g->nodes[node];
    if (f->params) {
        if (f->free_params)
            f->free_params(b->a, f->params);
        else
            og_free(b->a, f->params);
    }
    f->params = NULL;
    f->free_params = NULL;
    f->parsed = false;
}
