/* emit.c: the helpers rules use to add nodes, attributes and constants to the training
 * graph.  Errors are sticky: see grad.h. */
#include <stdio.h>
#include <string.h>

#include "grad/grad_internal.h"

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

bool og_gb_wants(const og_gb *b, const og_node *n, int i)
{
    if (i < 0 || i >= n->n_in) return false;
    int v = n->in[i];
    return v >= 0 && v < b->n_state && b->wants[v];
}

const og_value *og_gb_value(const og_gb *b, int v) { return &b->g->values[v]; }
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

/* A fresh value name that the graph does not use. */
static int new_value(og_gb *b, const char *hint)
{
    char name[300];
    do {
        snprintf(name, sizeof name, "%s_%d_%s", b->prefix ? b->prefix : "og_grad", b->counter++,
                 hint);
    } while (og_graph_find_value(b->g, name) >= 0);
    int v = og_graph_add_value(b->g, name);
    if (v < 0) og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    return v;
}

static void node_name(og_gb *b, const char *op, char *name, size_t size)
{
    if (b->current)
        snprintf(name, size, "%s/grad/%s_%d", b->current->name, op, b->counter++);
    else
        snprintf(name, size, "%s/%s_%d", b->prefix ? b->prefix : "og_grad", op, b->counter++);
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
    return b;
}

og_status og_gb_close(og_gb *b)
{
    if (!b) return OG_OK;
    og_status st = b->st;
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

int og_gb_op_named(og_gb *b, const char *op, int n_in, const int *in, const char *out_name)
{
    if (b->st) return -1;
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
    char name[300];
    node_name(b, op, name, sizeof name);
    og_node *n = og_graph_add_node(b->g, op, "", name, present, 1);
    if (!n) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < present; i++) n->in[i] = in[i];
    n->out[0] = v;
    b->last_node = b->g->n_nodes - 1;
    return v;
}

int og_gb_op_to(og_gb *b, const char *op, int n_in, const int *in, int out_value)
{
    if (b->st) return -1;
    char name[300];
    node_name(b, op, name, sizeof name);
    og_node *n = og_graph_add_node(b->g, op, "", name, n_in, 1);
    if (!n) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
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
    if (dtype != OG_FLOAT && dtype != OG_DOUBLE)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s constant",
                          og_dtype_name(dtype));
    if (og_tensor_alloc(dtype, 1, &d, b->a, &t))
        return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        if (dtype == OG_FLOAT)
            ((float *)t->data)[i] = v[i];
        else
            ((double *)t->data)[i] = v[i];
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
    case OG_INT64: *(int64_t *)t->data = (int64_t)v; break;
    case OG_INT32: *(int32_t *)t->data = (int32_t)v; break;
    default:
        og_tensor_free(t);
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED, "cannot make a %s constant",
                          og_dtype_name(dtype));
    }
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
    const og_value *t = &b->g->values[like];
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
    const og_value *t = &b->g->values[target];
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

int og_gb_sum_to(og_gb *b, int grad, int from, int target)
{
    if (b->st || grad < 0) return -1;
    const og_value *f = &b->g->values[from];
    if (f->rank < 0)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "cannot undo broadcasting: the rank of '%s' is unknown", f->name);
    return og_gb_sum_to_shape(b, grad, f->rank, f->dims, target);
}

int og_gb_sum_to_shape(og_gb *b, int grad, int from_rank, const int64_t *from_dims, int target)
{
    if (b->st || grad < 0) return -1;
    const og_value *t = &b->g->values[target];
    if (t->rank < 0)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "cannot undo broadcasting onto '%s': its rank is unknown", t->name);
    if (t->rank > from_rank)
        return og_gb_fail(b, NULL, OG_ERR_INTERNAL, "'%s' has a larger rank than its gradient",
                          t->name);
    struct {
        int rank;
        const int64_t *dims;
    } fs = {from_rank, from_dims}, *f = &fs;
    int off = f->rank - t->rank;
    int64_t axes[OG_MAX_RANK];
    int n = 0;
    for (int d = 0; d < f->rank; d++) {
        if (d < off) {
            axes[n++] = d;
            continue;
        }
        int64_t td = t->dims[d - off], fd = f->dims[d];
        if (td == 1 && fd != 1) /* broadcast along d (a no-op sum if fd is 1 at run time) */
            axes[n++] = d;
        else if (td < 0 && td != fd)
            return sum_to_dynamic(b, grad, f->rank, target);
    }
    if (n == 0) return grad;
    int r = og_gb_reduce_sum(b, grad, axes, n, true);
    return off == 0 ? r : og_gb_reshape_like(b, r, target);
}

/* The forward node's index in the training graph is the producer of its present outputs
 * (forward values keep the indices of the clone, and emitted nodes only come after). */
int og_gb_forward_output(og_gb *b, const og_node *n, int j)
{
    if (b->st) return -1;
    if (j < 0 || j >= 64) /* as many outputs as the builder gives a rule gradients for */
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
