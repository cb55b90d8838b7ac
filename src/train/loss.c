/*
 * loss.c: og_model_add_loss, a loss appended to a model as ordinary ONNX nodes.
 *
 * With e = y - t, per element:
 *   squared    e^2                      absolute  |e|
 *   elastic    r |e| + (1 - r) e^2      huber     0.5 e^2 if |e| <= d, else d (|e| - 0.5 d)
 *   log        softplus(y) - t y        (binary log loss on logits, stable for any y)
 *   cross-entropy / nll: SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss, reduction none
 *   proba      -log max(p_t / sum_c p_c, tiny): scikit-learn's log_loss of probabilities
 * then a mean or sum over every element, weighted per sample when sample weights are given
 * (the weight of sample i multiplies every element of its row; a batch of zero total weight
 * has loss 0), plus the penalties
 * l1 sum|W| + l2 sum W^2.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "grad/grad.h"

void og_loss_options_init(og_loss_options *o, og_loss_kind kind)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->reduction = OG_REDUCTION_MEAN;
    o->l1_ratio = 0.5;
    o->delta = 1.0;
}

static const char *kind_name(og_loss_kind k)
{
    static const char *const names[] = {"squared", "absolute",      "elastic", "huber",
                                        "log",     "cross-entropy", "nll",     "proba"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "unknown";
}

/* base if no value of g has that name, else base_1, base_2, ... (into buf, 64 bytes) */
static const char *free_name(const og_graph *g, const char *base, char *buf)
{
    snprintf(buf, 64, "%s", base);
    for (int k = 1; og_graph_find_value(g, buf) >= 0; k++) snprintf(buf, 64, "%s_%d", base, k);
    return buf;
}

/* A new graph input named `name` of the given type into *out. */
static og_status add_input(og_graph *g, const char *name, og_dtype dtype, int rank,
                           const int64_t *dims, int *out)
{
    if (og_graph_find_value(g, name) >= 0)
        return og_error(OG_ERR_INVALID_ARG,
                        "the name '%s' is already used in the model: choose another", name);
    int *inputs = og_realloc(g->alloc, g->inputs, (size_t)g->n_inputs * sizeof *inputs,
                             (size_t)(g->n_inputs + 1) * sizeof *inputs);
    if (!inputs) return og_error(OG_ERR_NOMEM, "out of memory");
    g->inputs = inputs;
    int v = og_graph_add_value(g, name);
    if (v < 0) return og_error(OG_ERR_NOMEM, "out of memory");
    og_value *val = &g->values[v];
    val->kind = OG_VALUE_INPUT;
    val->is_graph_input = true;
    val->dtype = dtype;
    val->rank = rank;
    for (int d = 0; d < rank; d++) val->dims[d] = dims[d];
    g->inputs[g->n_inputs++] = v;
    *out = v;
    return OG_OK;
}

/* Per-element loss of prediction y against target t. */
static int elementwise(og_gb *b, const og_loss_options *o, int y, int t, og_dtype dt)
{
    int e = og_gb_op2(b, "Sub", y, t);
    switch (o->kind) {
    case OG_LOSS_SQUARED: return og_gb_op2(b, "Mul", e, e);
    case OG_LOSS_ABSOLUTE: return og_gb_op1(b, "Abs", e);
    case OG_LOSS_ELASTIC: {
        int l1 = og_gb_op2(b, "Mul", og_gb_scalar(b, o->l1_ratio, dt), og_gb_op1(b, "Abs", e));
        int l2 =
            og_gb_op2(b, "Mul", og_gb_scalar(b, 1.0 - o->l1_ratio, dt), og_gb_op2(b, "Mul", e, e));
        return og_gb_op2(b, "Add", l1, l2);
    }
    case OG_LOSS_HUBER: {
        int a = og_gb_op1(b, "Abs", e);
        int quad = og_gb_op2(b, "Mul", og_gb_scalar(b, 0.5, dt), og_gb_op2(b, "Mul", e, e));
        int lin = og_gb_op2(b, "Mul", og_gb_scalar(b, o->delta, dt),
                            og_gb_op2(b, "Sub", a, og_gb_scalar(b, 0.5 * o->delta, dt)));
        int far = og_gb_op2(b, "Less", og_gb_scalar(b, o->delta, dt), a);
        return og_gb_op3(b, "Where", far, lin, quad);
    }
    default: return -1;
    }
}

/* sum(w_i l_i...) / sum(w_i * row size) (mean) or sum(w_i l_i...) (sum). */
static int weighted(og_gb *b, int l, int w, int rank, og_reduction red)
{
    int wb = w;
    if (rank > 1) {
        int64_t shape[OG_MAX_RANK];
        shape[0] = -1;
        for (int d = 1; d < rank; d++) shape[d] = 1;
        wb = og_gb_op2(b, "Reshape", w, og_gb_const_i64(b, shape, rank));
    }
    int num = og_gb_op1(b, "ReduceSum", og_gb_op2(b, "Mul", l, wb));
    og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    if (red == OG_REDUCTION_SUM) return num;
    int full = rank > 1 ? og_gb_op2(b, "Expand", wb, og_gb_op1(b, "Shape", l)) : w;
    int den = og_gb_op1(b, "ReduceSum", full);
    og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    /* a batch whose weights are all zero has loss 0, not 0/0 */
    og_dtype dt = og_gb_value(b, w)->dtype;
    int zero = og_gb_op2(b, "Equal", den, og_gb_scalar(b, 0.0, dt));
    den = og_gb_op3(b, "Where", zero, og_gb_scalar(b, 1.0, dt), den);
    return og_gb_op2(b, "Div", num, den);
}

static bool is_float(og_dtype t) { return t == OG_FLOAT || t == OG_DOUBLE || t == OG_FLOAT16; }

static og_status check_options(const og_graph *g, const og_loss_options *o, int *y_out)
{
    if ((unsigned)o->kind > OG_LOSS_PROBA)
        return og_error(OG_ERR_INVALID_ARG, "unknown loss kind %d", (int)o->kind);
    if (o->reduction != OG_REDUCTION_MEAN && o->reduction != OG_REDUCTION_SUM)
        return og_error(OG_ERR_INVALID_ARG, "unknown reduction %d", (int)o->reduction);
    if (o->kind == OG_LOSS_ELASTIC && !(o->l1_ratio >= 0 && o->l1_ratio <= 1))
        return og_error(OG_ERR_INVALID_ARG, "elastic loss: l1_ratio %g is outside [0, 1]",
                        o->l1_ratio);
    if (o->kind == OG_LOSS_HUBER && !(o->delta > 0))
        return og_error(OG_ERR_INVALID_ARG, "huber loss: delta %g must be > 0", o->delta);
    if (!(o->l1 >= 0) || !(o->l2 >= 0))
        return og_error(OG_ERR_INVALID_ARG, "penalties l1 %g and l2 %g must be >= 0", o->l1, o->l2);
    if (g->n_outputs == 0) return og_error(OG_ERR_INVALID_ARG, "the model has no output");
    /* the first float tensor output; a ZipMap's sequence of maps stands for the
     * probabilities it packs (a classifier's labels come first in skl2onnx's models) */
    int y = og_grad_output_source(g, g->outputs[0]);
    for (int i = 0; i < g->n_outputs && !o->output; i++) {
        int v = og_grad_output_source(g, g->outputs[i]);
        if (is_float(g->values[v].dtype) && !g->values[v].type) {
            y = v;
            break;
        }
    }
    if (o->output) {
        y = -1;
        for (int i = 0; i < g->n_outputs && y < 0; i++)
            if (strcmp(g->values[g->outputs[i]].name, o->output) == 0)
                y = og_grad_output_source(g, g->outputs[i]);
        if (y < 0) {
            char list[512] = "";
            size_t len = 0;
            for (int i = 0; i < g->n_outputs && len + 64 < sizeof list; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", i ? ", " : "",
                                        g->values[g->outputs[i]].name);
            return og_error(OG_ERR_INVALID_ARG, "the model has no output '%s' (outputs: %s)",
                            o->output, list);
        }
    }
    const og_value *yv = &g->values[y];
    if (!is_float(yv->dtype))
        return og_error(OG_ERR_TYPE, "%s loss: output '%s' is %s, not a float tensor",
                        kind_name(o->kind), yv->name, og_dtype_name(yv->dtype));
    if (o->kind >= OG_LOSS_CROSS_ENTROPY) { /* cross-entropy, nll, proba */
        int64_t opset = og_graph_opset(g, "");
        int need = o->kind == OG_LOSS_PROBA ? 9 : 12;
        if (opset < need)
            return og_error(OG_ERR_UNSUPPORTED,
                            "%s loss needs a default opset >= %d (the model imports %lld)",
                            kind_name(o->kind), need, (long long)opset);
        if (yv->rank >= 0 && yv->rank < 2)
            return og_error(OG_ERR_SHAPE,
                            "%s loss: output '%s' has rank %d; it must be [N, C, ...] scores",
                            kind_name(o->kind), yv->name, yv->rank);
    }
    *y_out = y;
    return OG_OK;
}

/* l1 sum|W| + l2 sum W^2 over the chosen weights, added to loss. */
static int penalties(og_gb *b, const og_graph *g, const og_loss_options *o, int loss, og_dtype dt)
{
    if (o->l1 == 0 && o->l2 == 0) return loss;
    int n = o->penalty_weights ? o->n_penalty_weights : g->n_inits;
    for (int i = 0; i < n && loss >= 0; i++) {
        int w;
        if (o->penalty_weights) {
            w = og_graph_find_value(g, o->penalty_weights[i]);
            if (w < 0 || g->values[w].kind != OG_VALUE_INITIALIZER || !is_float(g->values[w].dtype))
                return og_gb_fail(b, NULL, OG_ERR_INVALID_ARG,
                                  "penalty: '%s' is not a float initializer of the model",
                                  o->penalty_weights[i]);
        } else {
            w = g->inits[i];
            if (!is_float(g->values[w].dtype) || g->values[w].rank < 2) continue;
        }
        if (g->values[w].dtype != dt)
            return og_gb_fail(b, NULL, OG_ERR_TYPE, "penalty: weight '%s' is %s, the loss %s",
                              g->values[w].name, og_dtype_name(g->values[w].dtype),
                              og_dtype_name(dt));
        if (o->l1 != 0) {
            int s = og_gb_op1(b, "ReduceSum", og_gb_op1(b, "Abs", w));
            og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
            loss = og_gb_op2(b, "Add", loss, og_gb_op2(b, "Mul", og_gb_scalar(b, o->l1, dt), s));
        }
        if (o->l2 != 0) {
            int s = og_gb_op1(b, "ReduceSum", og_gb_op2(b, "Mul", w, w));
            og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
            loss = og_gb_op2(b, "Add", loss, og_gb_op2(b, "Mul", og_gb_scalar(b, o->l2, dt), s));
        }
    }
    return loss;
}

og_status og_model_add_loss(const og_model *m, const og_loss_options *o, og_model **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_model_add_loss: out is NULL");
    *out = NULL;
    if (!m || !o) return og_error(OG_ERR_INVALID_ARG, "og_model_add_loss: NULL argument");
    int y = -1;
    og_status st = check_options(m->graph, o, &y);
    if (st) return st;
    /* default names: "label" and "loss", else the first of "label_1", ... the model leaves
     * free (scikit-learn converters name a classifier's output "label") */
    char target_buf[64], loss_buf[64];
    const char *target_name =
        o->target_name ? o->target_name : free_name(m->graph, "label", target_buf);
    const char *loss_name = o->loss_name ? o->loss_name : free_name(m->graph, "loss", loss_buf);
    og_model *c = NULL;
    og_gb *b = NULL;
    st = og_model_copy_graph(m, m->user_alloc, &c);
    if (st) return st;
    og_graph *g = c->graph;
    y = og_graph_find_value(g, m->graph->values[y].name);
    const og_value yv = g->values[y]; /* a copy: the values array grows below */
    og_dtype dt = yv.dtype;
    bool classes = o->kind >= OG_LOSS_CROSS_ENTROPY;
    int64_t tdims[OG_MAX_RANK];
    int trank = yv.rank;
    if (classes && trank >= 2) {
        trank = yv.rank - 1;
        tdims[0] = yv.dims[0];
        for (int d = 2; d < yv.rank; d++) tdims[d - 1] = yv.dims[d];
    } else {
        for (int d = 0; d < trank; d++) tdims[d] = yv.dims[d];
    }
    if (strcmp(loss_name, target_name) == 0 ||
        (o->sample_weight_name && (strcmp(o->sample_weight_name, target_name) == 0 ||
                                   strcmp(o->sample_weight_name, loss_name) == 0))) {
        st = og_error(OG_ERR_INVALID_ARG, "the loss, target and sample-weight names must differ");
        goto done;
    }
    if (og_graph_find_value(g, loss_name) >= 0) {
        st = og_error(OG_ERR_INVALID_ARG,
                      "the name '%s' is already used in the model: choose another loss name",
                      loss_name);
        goto done;
    }
    int t = -1, w = -1;
    int64_t n0 = yv.rank >= 1 ? yv.dims[0] : OG_DIM_UNKNOWN;
    st = add_input(g, target_name, classes ? OG_INT64 : dt, trank, tdims, &t);
    if (!st && o->sample_weight_name) st = add_input(g, o->sample_weight_name, dt, 1, &n0, &w);
    if (st) goto done;
    b = og_gb_open(g, "og_loss");
    if (!b) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    int l, lrank = yv.rank;
    if (o->kind == OG_LOSS_PROBA) {
        /* -sum_c [t == c] log max(q_c, tiny), q = p / sum_c p_c, over the class axis: OneHot
         * and ReduceSum, which every opset from 9 has (the converters' classifiers often
         * import 9).  Normalizing, as scikit-learn's log_loss does, changes nothing for
         * probabilities that sum to 1 and makes a binary classifier's two independent
         * sigmoids [sigmoid(-s0), sigmoid(s1)] compete, as they must to classify. */
        int64_t one = 1, zero_one[2] = {0, 1};
        int q = og_gb_op2(b, "Div", y, og_gb_reduce_sum(b, y, &one, 1, true));
        int logp = og_gb_op1(
            b, "Log", og_gb_op2(b, "Max", q, og_gb_scalar(b, dt == OG_DOUBLE ? 1e-15 : 1e-12, dt)));
        int depth = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", y), og_gb_const_i64(b, &one, 1));
        int onehot_vals = og_gb_op1(b, "Cast", og_gb_const_i64(b, zero_one, 2));
        og_gb_attr_int(b, og_gb_last(b), "to", dt);
        int ins[3] = {t, depth, onehot_vals};
        int oh = og_gb_op(b, "OneHot", 3, ins);
        og_gb_attr_int(b, og_gb_last(b), "axis", 1);
        l = og_gb_op1(b, "Neg", og_gb_reduce_sum(b, og_gb_op2(b, "Mul", oh, logp), &one, 1, false));
        lrank = trank;
    } else if (classes) {
        l = og_gb_op2(
            b, o->kind == OG_LOSS_NLL ? "NegativeLogLikelihoodLoss" : "SoftmaxCrossEntropyLoss", y,
            t);
        og_gb_attr_string(b, og_gb_last(b), "reduction", "none");
        lrank = trank;
    } else if (o->kind == OG_LOSS_LOG) {
        l = og_gb_op2(b, "Sub", og_gb_op1(b, "Softplus", y), og_gb_op2(b, "Mul", t, y));
    } else {
        l = elementwise(b, o, y, t, dt);
    }
    int loss;
    if (w >= 0) {
        if (lrank < 1) {
            og_gb_fail(b, NULL, OG_ERR_SHAPE, "sample weights need an output with a batch axis");
            loss = -1;
        } else {
            loss = weighted(b, l, w, lrank, o->reduction);
        }
    } else {
        loss = og_gb_op1(b, o->reduction == OG_REDUCTION_SUM ? "ReduceSum" : "ReduceMean", l);
        og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    }
    loss = penalties(b, g, o, loss, dt);
    if (loss >= 0) og_gb_op_named(b, "Identity", 1, &loss, loss_name);
    st = og_gb_close(b);
    b = NULL;
    if (st) goto done;
    /* outputs: the loss, then the model's */
    int lv = og_graph_find_value(g, loss_name);
    int *outs = og_malloc(g->alloc, (size_t)(g->n_outputs + 1) * sizeof *outs);
    if (!outs) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    outs[0] = lv;
    g->values[lv].is_graph_output = true;
    memcpy(outs + 1, g->outputs, (size_t)g->n_outputs * sizeof *outs);
    og_free(g->alloc, g->outputs);
    g->outputs = outs;
    g->n_outputs++;
    char inputs[600];
    snprintf(inputs, sizeof inputs, "%s%s%s", target_name, o->sample_weight_name ? "\n" : "",
             o->sample_weight_name ? o->sample_weight_name : "");
    /* how the loss combines samples: data-parallel training weights each rank's gradient
     * by it (og_trainer_fit) */
    const char *reduction = o->reduction == OG_REDUCTION_MEAN ? "mean"
                            : o->l1 > 0 || o->l2 > 0          ? "sum+penalty"
                                                              : "sum";
    if (!(st = og_graph_set_metadata(g, "onnxgrad.loss", loss_name)) &&
        !(st = og_graph_set_metadata(g, "onnxgrad.loss_inputs", inputs)) &&
        !(st = og_graph_set_metadata(g, "onnxgrad.loss_reduction", reduction)) &&
        !(st = og_graph_set_metadata(g, "onnxgrad.loss_output", yv.name)) &&
        !(st = og_graph_finalize(g)))
        st = og_graph_resolve(g, true);
    if (st) og_error_prefix(st, "adding a %s loss", kind_name(o->kind));
done:
    og_gb_close(b);
    if (st) {
        og_model_free(c);
        return st;
    }
    *out = c;
    return OG_OK;
}
