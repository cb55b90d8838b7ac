/* upgrade.c: models importing default-domain opsets 1 to 6, rewritten at load into their
 * opset-7 equivalents (og_onnx_upgrade_legacy, declared in onnx_io.h).
 *
 * Why a load-time pass rather than old versions in each op's definition: below opset 7 the
 * differences are a handful of attributes (binary ops broadcasting a suffix of A or at `axis`,
 * `consumed_inputs`, `is_test`, Reshape's `shape`, Concat's default axis...), while every op
 * the gradient builder and the training graph emit (Shape, Expand, ReduceSum with axes...)
 * needs opset 7 or later anyway.  So the graph is rewritten with standard nodes only, its
 * default-domain import raised to 7, and everything after the loader (inference, kernels,
 * gradients, the saved model) sees an opset-7 model.  A model saved after loading imports
 * opset 7 (docs/ARCHITECTURE.md, "Opsets below 7").
 *
 * Each rewrite keeps the old version's meaning, read from onnx.defs' schemas of versions
 * 1..6:
 * - `consumed_inputs` (version 1 of most ops: an in-place hint) is dropped.
 * - Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less (1..6): with broadcast=1, B's
 *   shape matches a contiguous run of A's dims starting at `axis` (default: A's last dims,
 *   a suffix, which numpy broadcasting does as it is).  B at axis a of rank-rA A, B of rank
 *   rB, lines up under numpy rules once it gets rA - a - rB trailing 1-dims: an Unsqueeze
 *   with axes rB .. rA - a - 1.  This needs both ranks at load (declared inputs,
 *   initializers, value_info); else OG_ERR_UNSUPPORTED.  broadcast=0 (equal shapes) is a
 *   case of numpy broadcasting.
 * - Gemm (1..6): `broadcast` dropped (C broadcasts unidirectionally from 7).
 * - PRelu (1, 6): a slope of C > 1 values for X of rank r >= 3 is per channel (axis 1, as
 *   the exporters that wrote these models meant it); from 7 slope broadcasts from the last
 *   axis, so the slope gets r - 2 trailing 1-dims (Unsqueeze).
 * - BatchNormalization (1, 6): is_test=0 is training (batch statistics); from 7 training is
 *   asking for the statistics outputs, so missing ones are added as fresh values; is_test
 *   dropped, `spatial` kept (7 has it).
 * - Dropout (1, 6): is_test dropped (from 7 Dropout is the identity at inference).
 * - Concat (1..3): a missing axis is 1.
 * - Reshape (1..4): the `shape` attribute becomes an int64 initializer input.
 * - Pad (1): `paddings` is `pads` (same layout).
 * - Split (1): a constant second input becomes the `split` attribute.
 * - Upsample (1): width_scale, height_scale become scales [1, 1, h, w]; mode bilinear is
 *   linear.
 * - Cast (1): `to` given by name ("FLOAT") becomes the TensorProto data type number.
 * - LpPool, GlobalLpPool (1): float p becomes an int (an integral p only).
 * - RNN, GRU, LSTM (1; GRU 3): `output_sequence` dropped (Y is optional from 7).
 * - Tile (1): tiles and axis inputs have no opset-7 form here: OG_ERR_UNSUPPORTED. */
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_io.h"

static bool is_default(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

static const char *const BINARY[] = {"Add", "Sub", "Mul",   "Div",     "Pow", "And",
                                     "Or",  "Xor", "Equal", "Greater", "Less"};

static bool is_binary(const char *op)
{
    for (size_t i = 0; i < sizeof BINARY / sizeof *BINARY; i++)
        if (strcmp(op, BINARY[i]) == 0) return true;
    return false;
}

static og_status up_error(og_status code, const og_graph *g, int ni, const char *what)
{
    const og_node *n = &g->nodes[ni];
    return og_error(code, "node '%s' (%s, opset below 7): %s", n->name, n->op_type, what);
}

/* Rank of value v at load (declared input, initializer, value_info, or the value of the same
 * name in an enclosing graph), -1 when unknown. */
static int rank_at_load(const og_graph *g, int v)
{
    if (v < 0) return -1;
    const og_value *val = &g->values[v];
    if (val->rank >= 0 || val->type) return val->type ? -1 : val->rank;
    for (const og_graph *p = g->parent; p; p = p->parent) {
        int w = og_graph_find_value(p, val->name);
        if (w >= 0) return p->values[w].type ? -1 : p->values[w].rank;
    }
    return -1;
}

/* A value name not used in g yet: "<base>_<tag><k>". */
static int fresh_value(og_graph *g, const char *base, const char *tag)
{
    char name[512];
    for (int k = 0;; k++) {
        snprintf(name, sizeof name, "%s_%s%d", base, tag, k);
        if (og_graph_find_value(g, name) < 0) return og_graph_add_value(g, name);
    }
}

/* Replace input j of node ni by Unsqueeze(input, axes) (opset 1..12 form: axes attribute). */
static og_status unsqueeze_input(og_graph *g, int ni, int j, const int64_t *axes, int n_axes)
{
    char nname[512];
    int src = g->nodes[ni].in[j];
    snprintf(nname, sizeof nname, "%s_upgrade_unsqueeze%d", g->nodes[ni].name, j);
    int out = fresh_value(g, g->values[src].name, "unsqueezed");
    if (out < 0) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
    og_node *u = og_graph_add_node(g, "Unsqueeze", "", nname, 1, 1);
    if (!u) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
    u->in[0] = src;
    u->out[0] = out;
    u->attrs = og_calloc(g->alloc, 1, sizeof *u->attrs);
    if (!u->attrs) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
    og_attr at = {0};
    at.name = "axes";
    at.type = OG_ATTR_INTS;
    at.n = n_axes;
    at.ints = (int64_t *)axes;
    og_status st = og_node_add_attr(g, g->n_nodes - 1, &at);
    if (st) return st;
    g->nodes[ni].in[j] = out;
    return OG_OK;
}

static og_status upgrade_binary(og_graph *g, int ni)
{
    const og_attr *b = og_node_attr(&g->nodes[ni], "broadcast");
    const og_attr *ax = og_node_attr(&g->nodes[ni], "axis");
    bool bcast = b && b->i != 0;
    bool has_axis = ax != NULL;
    int64_t axis = ax ? ax->i : 0;
    og_node_remove_attr(g, ni, "broadcast");
    og_node_remove_attr(g, ni, "axis");
    if (!bcast || !has_axis || g->nodes[ni].n_in < 2) return OG_OK;
    int ra = rank_at_load(g, g->nodes[ni].in[0]), rb = rank_at_load(g, g->nodes[ni].in[1]);
    if (ra < 0 || rb < 0)
        return up_error(OG_ERR_UNSUPPORTED, g, ni,
                        "broadcast at 'axis' needs the ranks of A and B at load (declare them "
                        "in value_info)");
    if (axis < 0) axis += ra;
    int64_t trailing = (int64_t)ra - axis - rb;
    if (axis < 0 || trailing < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "axis %lld does not fit B of rank %d in A of rank %d",
                 (long long)(ax ? axis : 0), rb, ra);
        return up_error(OG_ERR_MODEL, g, ni, msg);
    }
    if (trailing == 0) return OG_OK; /* B already lines up with A's last dims */
    int64_t axes[OG_MAX_RANK];
    for (int64_t k = 0; k < trailing && k < OG_MAX_RANK; k++) axes[k] = rb + k;
    return unsqueeze_input(g, ni, 1, axes, (int)trailing);
}

static og_status upgrade_prelu(og_graph *g, int ni)
{
    const og_node *n = &g->nodes[ni];
    if (n->n_in < 2 || n->in[1] < 0) return OG_OK;
    int rx = rank_at_load(g, n->in[0]), rs = rank_at_load(g, n->in[1]);
    const og_value *slope = &g->values[n->in[1]];
    if (rs != 1) return OG_OK; /* scalars, and slopes shaped for broadcasting already */
    if (slope->dims[0] == 1) return OG_OK;
    if (rx < 0)
        return up_error(OG_ERR_UNSUPPORTED, g, ni,
                        "a per-channel slope needs the rank of X at load (declare it in "
                        "value_info)");
    if (rx < 3) return OG_OK; /* channels are the last axis already */
    int64_t axes[OG_MAX_RANK];
    for (int k = 0; k < rx - 2; k++) axes[k] = 1 + k;
    return unsqueeze_input(g, ni, 1, axes, rx - 2);
}

/* Grow node ni's outputs to n_out, the new ones fresh values. */
static og_status add_outputs(og_graph *g, int ni, int n_out)
{
    og_node *n = &g->nodes[ni];
    if (n->n_out >= n_out) n_out = n->n_out;
    int *out =
        og_realloc(g->alloc, n->out, (size_t)n->n_out * sizeof *out, (size_t)n_out * sizeof *out);
    if (!out) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
    n->out = out;
    for (int j = n->n_out; j < n_out; j++) out[j] = -1;
    n->n_out = n_out;
    for (int j = 1; j < n_out; j++) {
        if (g->nodes[ni].out[j] >= 0) continue;
        int v = fresh_value(g, g->nodes[ni].name, "stat");
        if (v < 0) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
        g->nodes[ni].out[j] = v;
    }
    return OG_OK;
}

static og_status upgrade_batchnorm(og_graph *g, int ni)
{
    const og_attr *t = og_node_attr(&g->nodes[ni], "is_test");
    bool training = !t || t->i == 0;
    og_node_remove_attr(g, ni, "is_test");
    if (!training) {
        /* inference: the statistics outputs must not be asked for at 7 */
        og_node *n = &g->nodes[ni];
        for (int j = 1; j < n->n_out; j++)
            if (n->out[j] >= 0)
                return up_error(OG_ERR_MODEL, g, ni, "is_test=1 with statistics outputs");
        return OG_OK;
    }
    return add_outputs(g, ni, 5);
}

static og_status upgrade_reshape(og_graph *g, int ni)
{
    const og_attr *s = og_node_attr(&g->nodes[ni], "shape");
    if (!s) return OG_OK;
    if (s->type != OG_ATTR_INTS || g->nodes[ni].n_in != 1)
        return up_error(OG_ERR_MODEL, g, ni, "attribute 'shape' must be ints, with one input");
    int64_t dim = s->n;
    og_tensor *t = NULL;
    og_status st = og_tensor_alloc(OG_INT64, 1, &dim, g->alloc, &t);
    if (st) return st;
    if (s->n) memcpy(t->data, s->ints, (size_t)s->n * sizeof(int64_t));
    int v = fresh_value(g, g->nodes[ni].name, "shape");
    if (v < 0 || !og_graph_add_initializer(g, v)) {
        og_tensor_free(t);
        return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
    }
    og_value *val = &g->values[v];
    val->kind = OG_VALUE_INITIALIZER;
    val->init = t;
    t->readonly = true;
    val->dtype = OG_INT64;
    val->rank = 1;
    val->dims[0] = dim;
    og_node *n = &g->nodes[ni];
    int *in = og_realloc(g->alloc, n->in, sizeof *in, 2 * sizeof *in);
    if (!in) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
    n->in = in;
    in[1] = v;
    n->n_in = 2;
    og_node_remove_attr(g, ni, "shape");
    return OG_OK;
}

static og_status rename_attr(og_graph *g, int ni, const char *from, const char *to)
{
    og_node *n = &g->nodes[ni];
    for (int j = 0; j < n->n_attrs; j++) {
        if (strcmp(n->attrs[j].name, from) != 0) continue;
        char *name = og_strdup(g->alloc, to);
        if (!name) return og_error(OG_ERR_NOMEM, "out of memory upgrading an old-opset model");
        og_free(g->alloc, n->attrs[j].name);
        n->attrs[j].name = name;
    }
    return OG_OK;
}

static og_status upgrade_split(og_graph *g, int ni)
{
    og_node *n = &g->nodes[ni];
    if (n->n_in < 2 || n->in[1] < 0) {
        if (n->n_in > 1) n->n_in = 1;
        return OG_OK;
    }
    const og_value *s = &g->values[n->in[1]];
    if (!s->init || s->init->dtype != OG_INT64 || s->init->rank != 1)
        return up_error(OG_ERR_UNSUPPORTED, g, ni,
                        "a 'split' input must be a constant int64 vector (an initializer)");
    if (og_node_attr(n, "split"))
        return up_error(OG_ERR_MODEL, g, ni, "'split' given both as input and attribute");
    og_attr at = {0};
    at.name = "split";
    at.type = OG_ATTR_INTS;
    at.n = (int)s->init->dims[0];
    at.ints = (int64_t *)s->init->data;
    og_status st = og_node_add_attr(g, ni, &at);
    if (st) return st;
    g->nodes[ni].n_in = 1;
    return OG_OK;
}

static og_status upgrade_upsample(og_graph *g, int ni)
{
    const og_attr *h = og_node_attr(&g->nodes[ni], "height_scale");
    const og_attr *w = og_node_attr(&g->nodes[ni], "width_scale");
    const og_attr *m = og_node_attr(&g->nodes[ni], "mode");
    if (!h && !w && !(m && m->s && strcmp(m->s, "bilinear") == 0)) return OG_OK;
    if (!h || !w) return up_error(OG_ERR_MODEL, g, ni, "needs height_scale and width_scale");
    float scales[4] = {1.0f, 1.0f, h->f, w->f};
    og_status st;
    if (m && m->s && strcmp(m->s, "bilinear") == 0) {
        og_node_remove_attr(g, ni, "mode");
        og_attr at = {0};
        at.name = "mode";
        at.type = OG_ATTR_STRING;
        at.s = "linear";
        at.s_len = 6;
        if ((st = og_node_add_attr(g, ni, &at))) return st;
    }
    og_node_remove_attr(g, ni, "height_scale");
    og_node_remove_attr(g, ni, "width_scale");
    og_attr at = {0};
    at.name = "scales";
    at.type = OG_ATTR_FLOATS;
    at.n = 4;
    at.floats = scales;
    return og_node_add_attr(g, ni, &at);
}

static og_status upgrade_cast(og_graph *g, int ni)
{
    static const struct {
        const char *name;
        int64_t code;
    } names[] = {{"FLOAT", 1},   {"UINT8", 2},   {"INT8", 3},   {"UINT16", 4}, {"INT16", 5},
                 {"INT32", 6},   {"INT64", 7},   {"STRING", 8}, {"BOOL", 9},   {"FLOAT16", 10},
                 {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
    const og_attr *to = og_node_attr(&g->nodes[ni], "to");
    if (!to || to->type != OG_ATTR_STRING) return OG_OK;
    int64_t code = -1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (to->s && strcmp(to->s, names[i].name) == 0) code = names[i].code;
    if (code < 0) return up_error(OG_ERR_MODEL, g, ni, "attribute 'to' names no data type");
    og_node_remove_attr(g, ni, "to");
    og_attr at = {0};
    at.name = "to";
    at.type = OG_ATTR_INT;
    at.i = code;
    return og_node_add_attr(g, ni, &at);
}

static og_status upgrade_lp(og_graph *g, int ni)
{
    const og_attr *p = og_node_attr(&g->nodes[ni], "p");
    if (!p || p->type != OG_ATTR_FLOAT) return OG_OK;
    float f = p->f;
    if (!(f >= 1.0f && f <= 1e6f) || f != (float)(int64_t)f)
        return up_error(OG_ERR_UNSUPPORTED, g, ni, "a non-integral p has no opset-7 form");
    og_node_remove_attr(g, ni, "p");
    og_attr at = {0};
    at.name = "p";
    at.type = OG_ATTR_INT;
    at.i = (int64_t)f;
    return og_node_add_attr(g, ni, &at);
}

static og_status upgrade_node(og_graph *g, int ni)
{
    const char *op = g->nodes[ni].op_type;
    og_node_remove_attr(g, ni, "consumed_inputs");
    if (is_binary(op)) return upgrade_binary(g, ni);
    if (strcmp(op, "Gemm") == 0) {
        og_node_remove_attr(g, ni, "broadcast");
        return OG_OK;
    }
    if (strcmp(op, "PRelu") == 0) return upgrade_prelu(g, ni);
    if (strcmp(op, "BatchNormalization") == 0) return upgrade_batchnorm(g, ni);
    if (strcmp(op, "Dropout") == 0) {
        og_node_remove_attr(g, ni, "is_test");
        return OG_OK;
    }
    if (strcmp(op, "Concat") == 0 && !og_node_attr(&g->nodes[ni], "axis")) {
        og_attr at = {0};
        at.name = "axis";
        at.type = OG_ATTR_INT;
        at.i = 1;
        return og_node_add_attr(g, ni, &at);
    }
    if (strcmp(op, "Reshape") == 0) return upgrade_reshape(g, ni);
    if (strcmp(op, "Pad") == 0) return rename_attr(g, ni, "paddings", "pads");
    if (strcmp(op, "Split") == 0) return upgrade_split(g, ni);
    if (strcmp(op, "Upsample") == 0) return upgrade_upsample(g, ni);
    if (strcmp(op, "Cast") == 0) return upgrade_cast(g, ni);
    if (strcmp(op, "LpPool") == 0 || strcmp(op, "GlobalLpPool") == 0) return upgrade_lp(g, ni);
    if (strcmp(op, "RNN") == 0 || strcmp(op, "GRU") == 0 || strcmp(op, "LSTM") == 0) {
        og_node_remove_attr(g, ni, "output_sequence");
        return OG_OK;
    }
    if (strcmp(op, "Tile") == 0 && g->nodes[ni].n_in == 3)
        return up_error(OG_ERR_UNSUPPORTED, g, ni,
                        "Tile-1 (tiles and axis inputs) is not upgraded; re-export at opset 6+");
    return OG_OK;
}

static og_status upgrade_graph(og_graph *g)
{
    int n_nodes = g->n_nodes; /* nodes the pass appends are opset-7 already */
    for (int ni = 0; ni < n_nodes; ni++) {
        for (int k = 0; k < g->nodes[ni].n_attrs; k++) {
            og_graph *sub = g->nodes[ni].attrs[k].g;
            og_status st = sub ? upgrade_graph(sub) : OG_OK;
            if (st) return st;
        }
        if (!is_default(g->nodes[ni].domain)) continue;
        og_status st = upgrade_node(g, ni);
        if (st) return st;
    }
    return OG_OK;
}

og_status og_onnx_upgrade_legacy(og_graph *g)
{
    bool old = false;
    for (int i = 0; i < g->n_opsets; i++)
        if (is_default(g->opsets[i].domain) && g->opsets[i].version < 7) old = true;
    if (!old) return OG_OK;
    og_status st = upgrade_graph(g);
    if (st) return st;
    for (int i = 0; i < g->n_opsets; i++)
        if (is_default(g->opsets[i].domain) && g->opsets[i].version < 7) g->opsets[i].version = 7;
    return OG_OK;
}
