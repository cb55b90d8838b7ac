/* optim.c: the optimizers of domain ai.onnx.preview.training (opset 1): Momentum, Adagrad
 * and Adam.  Attributes, the variadic layout (see ops/optim.h) and shape inference: every
 * output has the type and shape of its X (G and the states must match it exactly; no
 * broadcasting), R is a float or double scalar and T an int64 scalar ("scalar": a tensor of
 * one element). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/optim.h"

#define OG_TRAINING_DOMAIN "ai.onnx.preview.training"

/* Letters of the tensor groups after R and T, per kind. */
static const char *group_letters(og_optim_kind kind)
{
    switch (kind) {
    case OG_OPTIM_MOMENTUM: return "XGV";
    case OG_OPTIM_ADAGRAD: return "XGH";
    case OG_OPTIM_ADAM: return "XGVH";
    }
    return "";
}

/* "R", "T", "X", "G2", ...: the spec's name of input j. */
static const char *input_role(const og_optim_params *p, int j, char *buf, size_t size)
{
    if (j == 0) return "R";
    if (j == 1) return "T";
    int group = (j - 2) / p->n, i = (j - 2) % p->n;
    char letter = group_letters(p->kind)[group];
    if (p->n == 1)
        snprintf(buf, size, "%c", letter);
    else
        snprintf(buf, size, "%c%d", letter, i + 1);
    return buf;
}

/* A float attribute: its value, the default when absent (required ones fail then). */
static og_status read_float(const og_op_ctx *c, const char *name, bool required, float dflt,
                            double *out)
{
    og_status st = og_attr_check_type(c, name, OG_ATTR_FLOAT);
    if (st) return st;
    const og_attr *a = og_node_attr(c->node, name);
    if (!a && required)
        return og_op_error(c, OG_ERR_MODEL, "required attribute '%s' is missing", name);
    float v = a ? a->f : dflt;
    if (!isfinite(v))
        return og_op_error(c, OG_ERR_MODEL, "attribute '%s' is %g, expected a finite value", name,
                           (double)v);
    *out = v;
    return OG_OK;
}

static og_status parse_optim(const og_op_ctx *c, og_optim_kind kind, void **params)
{
    const og_node *n = c->node;
    og_status st = OG_OK;
    og_optim_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->kind = kind;
    p->n_states = kind == OG_OPTIM_ADAM ? 2 : 1;
    const char *letters = group_letters(kind);
    int groups = 2 + p->n_states;
    if (n->n_in < 2 + groups || (n->n_in - 2) % groups != 0) {
        st = og_op_error(c, OG_ERR_MODEL,
                         "has %d inputs, expected R, T and %d runs of n tensors (%s...) for "
                         "2 + %d n inputs",
                         n->n_in, groups, letters, groups);
        goto fail;
    }
    p->n = (n->n_in - 2) / groups;
    if (n->n_out != (1 + p->n_states) * p->n) {
        st =
            og_op_error(c, OG_ERR_MODEL,
                        "has %d outputs, expected %d: the new value of each of the %d inputs "
                        "of %s",
                        n->n_out, (1 + p->n_states) * p->n, (1 + p->n_states) * p->n,
                        kind == OG_OPTIM_ADAM ? "X, V and H"
                                              : (kind == OG_OPTIM_ADAGRAD ? "X and H" : "X and V"));
        goto fail;
    }
    switch (kind) {
    case OG_OPTIM_MOMENTUM: {
        if ((st = read_float(c, "alpha", true, 0, &p->alpha))) goto fail;
        if ((st = read_float(c, "beta", true, 0, &p->beta))) goto fail;
        if ((st = read_float(c, "norm_coefficient", true, 0, &p->norm_coefficient))) goto fail;
        if ((st = og_attr_check_type(c, "mode", OG_ATTR_STRING))) goto fail;
        const char *mode = og_attr_string(n, "mode", NULL);
        if (!mode) {
            st = og_op_error(c, OG_ERR_MODEL, "required attribute 'mode' is missing");
            goto fail;
        }
        if (strcmp(mode, "nesterov") == 0) {
            p->nesterov = true;
        } else if (strcmp(mode, "standard") != 0) {
            st = og_op_error(c, OG_ERR_MODEL,
                             "attribute 'mode' is '%s', expected 'standard' or 'nesterov'", mode);
            goto fail;
        }
        break;
    }
    case OG_OPTIM_ADAGRAD:
        if ((st = read_float(c, "decay_factor", false, 0.0f, &p->decay_factor))) goto fail;
        if ((st = read_float(c, "epsilon", false, 1e-6f, &p->epsilon))) goto fail;
        if ((st = read_float(c, "norm_coefficient", false, 0.0f, &p->norm_coefficient))) goto fail;
        break;
    case OG_OPTIM_ADAM:
        if ((st = read_float(c, "alpha", false, 0.9f, &p->alpha))) goto fail;
        if ((st = read_float(c, "beta", false, 0.999f, &p->beta))) goto fail;
        if ((st = read_float(c, "epsilon", false, 1e-6f, &p->epsilon))) goto fail;
        if ((st = read_float(c, "norm_coefficient", false, 0.0f, &p->norm_coefficient))) goto fail;
        if ((st = read_float(c, "norm_coefficient_post", false, 0.0f, &p->norm_coefficient_post)))
            goto fail;
        break;
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

static og_status parse_momentum(const og_op_ctx *c, void **params)
{
    return parse_optim(c, OG_OPTIM_MOMENTUM, params);
}
static og_status parse_adagrad(const og_op_ctx *c, void **params)
{
    return parse_optim(c, OG_OPTIM_ADAGRAD, params);
}
static og_status parse_adam(const og_op_ctx *c, void **params)
{
    return parse_optim(c, OG_OPTIM_ADAM, params);
}

/* R and T: one element of the right type. */
static og_status check_scalar(const og_op_ctx *c, const og_optim_params *p, const og_vinfo *in,
                              int j, const og_dtype *allowed, const char *types)
{
    char role[16], shape[128];
    const og_vinfo *v = &in[j];
    if (v->dtype != OG_UNDEFINED) {
        bool ok = false;
        for (const og_dtype *a = allowed; *a != OG_UNDEFINED; a++) ok = ok || *a == v->dtype;
        if (!ok)
            return og_op_error(c, OG_ERR_TYPE, "input %d (%s) has element type %s, expected %s", j,
                               input_role(p, j, role, sizeof role), og_dtype_name(v->dtype), types);
    }
    for (int d = 0; d < v->rank; d++)
        if (og_dim_known(v->dims[d]) && v->dims[d] != 1)
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) has shape %s, expected a scalar", j,
                               input_role(p, j, role, sizeof role),
                               og_shape_str(v->rank, v->dims, shape, sizeof shape));
    return OG_OK;
}

/* Input j (G, V or H of tensor i) against X = input jx: same type, same shape. */
static og_status check_like_x(const og_op_ctx *c, const og_optim_params *p, const og_vinfo *in,
                              int jx, int j)
{
    char role[16], xrole[16], a[128], b[128];
    const og_vinfo *x = &in[jx], *v = &in[j];
    if (x->dtype != OG_UNDEFINED && v->dtype != OG_UNDEFINED && x->dtype != v->dtype)
        return og_op_error(c, OG_ERR_TYPE, "input %d (%s) has element type %s, expected %s's %s", j,
                           input_role(p, j, role, sizeof role), og_dtype_name(v->dtype),
                           input_role(p, jx, xrole, sizeof xrole), og_dtype_name(x->dtype));
    if (x->rank < 0 || v->rank < 0) return OG_OK;
    bool same = x->rank == v->rank;
    for (int d = 0; same && d < x->rank; d++)
        if (og_dim_known(x->dims[d]) && og_dim_known(v->dims[d]) && x->dims[d] != v->dims[d])
            same = false;
    if (!same)
        return og_op_error(
            c, OG_ERR_SHAPE, "input %d (%s) has shape %s, expected %s's shape %s", j,
            input_role(p, j, role, sizeof role), og_shape_str(v->rank, v->dims, a, sizeof a),
            input_role(p, jx, xrole, sizeof xrole), og_shape_str(x->rank, x->dims, b, sizeof b));
    return OG_OK;
}

/* What the group of tensor i knows together (they are checked equal). */
static void merge_into(og_vinfo *m, const og_vinfo *v)
{
    if (m->dtype == OG_UNDEFINED) m->dtype = v->dtype;
    if (v->rank < 0) return;
    if (m->rank < 0) {
        m->rank = v->rank;
        memcpy(m->dims, v->dims, sizeof m->dims);
        return;
    }
    for (int d = 0; d < m->rank; d++)
        if (!og_dim_known(m->dims[d]) && og_dim_known(v->dims[d])) m->dims[d] = v->dims[d];
}

static og_status infer_optim(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    const og_optim_params *p = c->node->params;
    static const og_dtype r_types[] = {OG_FLOAT, OG_DOUBLE, OG_UNDEFINED};
    static const og_dtype t_types[] = {OG_INT64, OG_UNDEFINED};
    char role[16];
    og_status st;
    int groups = 2 + p->n_states;
    if (n_in != 2 + groups * p->n || n_out != (1 + p->n_states) * p->n)
        return og_op_error(c, OG_ERR_INTERNAL, "input/output counts changed after parsing");
    if ((st = check_scalar(c, p, in, 0, r_types, "float or double"))) return st;
    if ((st = check_scalar(c, p, in, 1, t_types, "int64"))) return st;
    for (int i = 0; i < p->n; i++) {
        int jx = 2 + i;
        og_dtype xt = in[jx].dtype;
        if (xt != OG_UNDEFINED && xt != OG_FLOAT && xt != OG_DOUBLE)
            return og_op_error(c, OG_ERR_TYPE,
                               "input %d (%s) has element type %s, expected float or double", jx,
                               input_role(p, jx, role, sizeof role), og_dtype_name(xt));
        og_vinfo m = in[jx];
        m.value = NULL;
        for (int g = 1; g < groups; g++) {
            int j = 2 + g * p->n + i;
            if ((st = check_like_x(c, p, in, jx, j))) return st;
            merge_into(&m, &in[j]);
        }
        for (int k = 0; k <= p->n_states; k++) {
            out[k * p->n + i] = m;
            out[k * p->n + i].value = NULL;
        }
    }
    return OG_OK;
}

/* Arity 2+ in, 1+ out here so that parse_optim reports a bad count with the layout. */
const og_op_def og_ops_optim[] = {
    {"Momentum", OG_TRAINING_DOMAIN, OG_SINCE(Momentum), 2, -1, 1, -1, parse_momentum, NULL,
     infer_optim, 0},
    {"Adagrad", OG_TRAINING_DOMAIN, OG_SINCE(Adagrad), 2, -1, 1, -1, parse_adagrad, NULL,
     infer_optim, 0},
    {"Adam", OG_TRAINING_DOMAIN, OG_SINCE(Adam), 2, -1, 1, -1, parse_adam, NULL, infer_optim, 0},
    {0}};
