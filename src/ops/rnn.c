/* rnn.c: RNN, GRU and LSTM, their training forms and their backward ops (see rnn.h):
 * attributes and shape inference.
 *
 * Shapes (D directions, T steps, N batch, I input size, H hidden size, G gates: 1, 3, 4):
 *   X [T, N, I] (layout 1: [N, T, I]), W [D, G·H, I], R [D, G·H, H], B [D, 2·G·H],
 *   sequence_lens [N] int32, initial_h and initial_c [D, N, H] (layout 1: [N, D, H]),
 *   P [D, 3·H];  Y [T, D, N, H] (layout 1: [N, T, D, H]), Y_h and Y_c as initial_h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ops/rnn.h"

static const int og_since_onnxgrad[] = {1, 0};

const og_dtype og_rnn_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

static const char *const act_names[OG_ACT_COUNT] = {
    "Relu",       "Tanh",        "Sigmoid", "Affine",   "LeakyRelu", "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu",     "Softsign", "Softplus"};

const char *og_rnn_act_name(og_rnn_act_kind k)
{
    return k >= 0 && k < OG_ACT_COUNT ? act_names[k] : "?";
}

/* How many of activation_alpha and activation_beta an activation takes, in order, and its
 * defaults: those of the ONNX op of the same name (Affine and ScaledTanh, experimental ops
 * once, default to the identity scaling). */
static void act_defaults(og_rnn_act_kind k, int *n_alpha, int *n_beta, float *alpha, float *beta)
{
    *n_alpha = *n_beta = 0;
    *alpha = *beta = 0;
    switch (k) {
    case OG_ACT_AFFINE: *n_alpha = *n_beta = 1, *alpha = 1, *beta = 0; break;
    case OG_ACT_SCALED_TANH: *n_alpha = *n_beta = 1, *alpha = 1, *beta = 1; break;
    case OG_ACT_HARD_SIGMOID: *n_alpha = *n_beta = 1, *alpha = 0.2f, *beta = 0.5f; break;
    case OG_ACT_LEAKY_RELU: *n_alpha = 1, *alpha = 0.01f; break;
    case OG_ACT_THRESHOLDED_RELU: *n_alpha = 1, *alpha = 1; break;
    case OG_ACT_ELU: *n_alpha = 1, *alpha = 1; break;
    default: break;
    }
}

int64_t og_rnn_saved_width(const og_rnn_params *p, int64_t h)
{
    switch (p->kind) {
    case OG_RNN_SIMPLE: return 2 * h;
    case OG_RNN_GRU: return 5 * h;
    default: return 6 * h;
    }
}

/* ---- parse ----------------------------------------------------------------------- */

static og_status parse_acts(const og_op_ctx *c, og_rnn_params *p)
{
    static const og_rnn_act_kind dflt[3][3] = {
        {OG_ACT_TANH}, {OG_ACT_SIGMOID, OG_ACT_TANH}, {OG_ACT_SIGMOID, OG_ACT_TANH, OG_ACT_TANH}};
    const og_attr *names = og_node_attr(c->node, "activations");
    int n_alpha = 0, n_beta = 0;
    const float *alpha = og_attr_floats(c->node, "activation_alpha", &n_alpha);
    const float *beta = og_attr_floats(c->node, "activation_beta", &n_beta);
    int ia = 0, ib = 0;
    int n = names ? names->n : 0;
    if (names && n != p->n_act && n != p->n_act * p->num_dir)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'activations' has %d entries, expected %d%s",
                           n, p->n_act,
                           p->num_dir == 2 ? " per direction (or one list for both)" : "");
    for (int d = 0; d < p->num_dir; d++)
        for (int j = 0; j < p->n_act; j++) {
            og_rnn_act *a = &p->act[d][j];
            a->kind = dflt[p->kind][j];
            if (names) {
                const char *s = names->strings[n == p->n_act ? j : d * p->n_act + j];
                int k = 0;
                while (k < OG_ACT_COUNT && strcasecmp(s, act_names[k]) != 0) k++;
                if (k == OG_ACT_COUNT)
                    return og_op_error(c, OG_ERR_UNSUPPORTED,
                                       "attribute 'activations' names '%s', which is none of "
                                       "the spec's (Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                                       "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, "
                                       "Softplus)",
                                       s);
                a->kind = (og_rnn_act_kind)k;
            }
            /* activation_alpha and activation_beta are consumed in the order of the
             * activations, each by the functions that take one */
            int na, nb;
            act_defaults(a->kind, &na, &nb, &a->alpha, &a->beta);
            if (na && ia < n_alpha) a->alpha = alpha[ia++];
            if (nb && ib < n_beta) a->beta = beta[ib++];
        }
    return OG_OK;
}

static og_status rnn_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_status st;
    static const char *const ints[] = {"hidden_size", "input_forget", "linear_before_reset",
                                       "layout"};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if ((st = og_attr_check_type(c, ints[i], OG_ATTR_INT))) return st;
    if ((st = og_attr_check_type(c, "direction", OG_ATTR_STRING)) ||
        (st = og_attr_check_type(c, "activations", OG_ATTR_STRINGS)) ||
        (st = og_attr_check_type(c, "activation_alpha", OG_ATTR_FLOATS)) ||
        (st = og_attr_check_type(c, "activation_beta", OG_ATTR_FLOATS)) ||
        (st = og_attr_check_type(c, "clip", OG_ATTR_FLOAT)))
        return st;
    og_rnn_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    const char *op = n->op_type;
    if (strncmp(op, "LSTM", 4) == 0) {
        p->kind = OG_RNN_LSTM;
        p->gates = 4;
        p->n_act = 3;
    } else if (strncmp(op, "GRU", 3) == 0) {
        p->kind = OG_RNN_GRU;
        p->gates = 3;
        p->n_act = 2;
    } else {
        p->kind = OG_RNN_SIMPLE;
        p->gates = 1;
        p->n_act = 1;
    }
    size_t len = strlen(op);
    p->role = len > 5 && strcmp(op + len - 5, "Train") == 0  ? OG_RNN_TRAIN
              : len > 4 && strcmp(op + len - 4, "Grad") == 0 ? OG_RNN_BACKWARD
                                                             : OG_RNN_FORWARD;
    const char *dir = og_attr_string(n, "direction", "forward");
    if (strcmp(dir, "forward") == 0)
        p->direction = 0;
    else if (strcmp(dir, "reverse") == 0)
        p->direction = 1;
    else if (strcmp(dir, "bidirectional") == 0)
        p->direction = 2;
    else {
        st = og_op_error(c, OG_ERR_MODEL,
                         "attribute 'direction' is '%s', expected forward, reverse or "
                         "bidirectional",
                         dir);
        goto fail;
    }
    p->num_dir = p->direction == 2 ? 2 : 1;
    p->hidden_size = og_attr_int(n, "hidden_size", -1);
    if (og_node_attr(n, "hidden_size") && (p->hidden_size < 1 || p->hidden_size > (1 << 30))) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'hidden_size' is %lld, expected >= 1",
                         (long long)p->hidden_size);
        goto fail;
    }
    if (og_node_attr(n, "clip")) {
        p->has_clip = true;
        p->clip = og_attr_float(n, "clip", 0);
        if (!(p->clip > 0)) {
            st = og_op_error(c, OG_ERR_MODEL, "attribute 'clip' is %g, expected > 0",
                             (double)p->clip);
            goto fail;
        }
    }
    p->input_forget = p->kind == OG_RNN_LSTM && og_attr_int(n, "input_forget", 0) != 0;
    p->linear_before_reset = p->kind == OG_RNN_GRU && og_attr_int(n, "linear_before_reset", 0);
    /* layout exists from version 14 (and in onnxgrad's own ops) */
    p->layout = n->domain[0] || n->since_version >= 14 ? (int)og_attr_int(n, "layout", 0) : 0;
    if (p->layout != 0 && p->layout != 1) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'layout' is %d, expected 0 or 1", p->layout);
        goto fail;
    }
    if ((st = parse_acts(c, p))) goto fail;
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

/* ---- infer ----------------------------------------------------------------------- */

/* Merge dim `d` into *known: equal known dims, or the first known one. */
static og_status same_dim(const og_op_ctx *c, int64_t *known, int64_t d, const char *what)
{
    if (!og_dim_known(d)) return OG_OK;
    if (og_dim_known(*known) && *known != d)
        return og_op_error(c, OG_ERR_SHAPE, "%s is %lld, expected %lld", what, (long long)d,
                           (long long)*known);
    *known = d;
    return OG_OK;
}

typedef struct rnn_dims {
    int64_t t, n, in, h, d;
} rnn_dims;

static const char *const in_names[] = {"X",         "W",         "R", "B", "sequence_lens",
                                       "initial_h", "initial_c", "P"};

/* Check the forward inputs in[0..nin-1] against each other; dims into *o (unknown where
 * nothing says). */
static og_status check_inputs(const og_op_ctx *c, const og_rnn_params *p, const og_vinfo *in,
                              int nin, rnn_dims *o)
{
    og_status st;
    o->t = o->n = o->in = o->h = OG_DIM_UNKNOWN;
    o->d = p->num_dir;
    if (p->hidden_size > 0) o->h = p->hidden_size;
    int64_t G = p->gates;
    for (int i = 0; i < nin; i++) {
        if (in[i].dtype == OG_UNDEFINED && in[i].rank < 0) continue;
        if (i == OG_RNN_IN_SEQ) {
            if (in[i].dtype != OG_UNDEFINED && in[i].dtype != OG_INT32)
                return og_op_error(c, OG_ERR_TYPE, "input 4 (sequence_lens) is %s, expected int32",
                                   og_dtype_name(in[i].dtype));
        } else {
            if ((st = og_check_dtype(c, in, i, og_rnn_types))) return st;
            if ((st = og_check_same_dtype(c, in, 0, i))) return st;
        }
        int want = i == OG_RNN_IN_B || i == OG_RNN_IN_P ? 2 : i == OG_RNN_IN_SEQ ? 1 : 3;
        if (in[i].rank >= 0 && in[i].rank != want)
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) has rank %d, expected %d", i,
                               in_names[i], in[i].rank, want);
    }
    const og_vinfo *X = &in[0], *W = &in[1], *R = &in[2];
    char what[96];
    if (R->rank == 3 && (st = same_dim(c, &o->h, R->dims[2], "R's dim 2 (hidden size)"))) return st;
    if (X->rank == 3) {
        o->t = X->dims[p->layout ? 1 : 0];
        o->n = X->dims[p->layout ? 0 : 1];
        o->in = X->dims[2];
    }
    int64_t gh = og_dim_known(o->h) ? G * o->h : OG_DIM_UNKNOWN;
    for (int i = 1; i <= 2; i++) {
        const og_vinfo *v = i == 1 ? W : R;
        if (v->rank != 3) continue;
        snprintf(what, sizeof what, "input %d (%s) dim 0 (directions)", i, in_names[i]);
        if ((st = same_dim(c, &o->d, v->dims[0], what))) return st;
        snprintf(what, sizeof what, "input %d (%s) dim 1 (%lld gates x hidden size)", i,
                 in_names[i], (long long)G);
        if ((st = same_dim(c, &gh, v->dims[1], what))) return st;
    }
    if (W->rank == 3 && (st = same_dim(c, &o->in, W->dims[2], "input 1 (W) dim 2 (input size)")))
        return st;
    if (og_dim_known(gh) && !og_dim_known(o->h)) {
        if (gh % G)
            return og_op_error(c, OG_ERR_SHAPE, "W and R have %lld rows, not a multiple of %lld",
                               (long long)gh, (long long)G);
        o->h = gh / G;
    }
    if (nin > OG_RNN_IN_B && in[OG_RNN_IN_B].rank == 2) {
        const og_vinfo *B = &in[OG_RNN_IN_B];
        int64_t w = og_dim_known(o->h) ? 2 * G * o->h : OG_DIM_UNKNOWN;
        if ((st = same_dim(c, &o->d, B->dims[0], "input 3 (B) dim 0 (directions)")) ||
            (st = same_dim(c, &w, B->dims[1], "input 3 (B) dim 1 (2 x gates x hidden size)")))
            return st;
    }
    if (nin > OG_RNN_IN_SEQ && in[OG_RNN_IN_SEQ].rank == 1 &&
        (st = same_dim(c, &o->n, in[OG_RNN_IN_SEQ].dims[0], "input 4 (sequence_lens) length")))
        return st;
    for (int i = OG_RNN_IN_H0; i <= OG_RNN_IN_C0 && i < nin; i++) {
        const og_vinfo *v = &in[i];
        if (v->rank != 3) continue;
        snprintf(what, sizeof what, "input %d (%s) directions", i, in_names[i]);
        if ((st = same_dim(c, &o->d, v->dims[p->layout ? 1 : 0], what))) return st;
        snprintf(what, sizeof what, "input %d (%s) batch", i, in_names[i]);
        if ((st = same_dim(c, &o->n, v->dims[p->layout ? 0 : 1], what))) return st;
        snprintf(what, sizeof what, "input %d (%s) hidden size", i, in_names[i]);
        if ((st = same_dim(c, &o->h, v->dims[2], what))) return st;
    }
    if (nin > OG_RNN_IN_P && in[OG_RNN_IN_P].rank == 2) {
        const og_vinfo *P = &in[OG_RNN_IN_P];
        int64_t w = og_dim_known(o->h) ? 3 * o->h : OG_DIM_UNKNOWN;
        if ((st = same_dim(c, &o->d, P->dims[0], "input 7 (P) dim 0 (directions)")) ||
            (st = same_dim(c, &w, P->dims[1], "input 7 (P) dim 1 (3 x hidden size)")))
            return st;
    }
    if (o->d != p->num_dir)
        return og_op_error(c, OG_ERR_SHAPE,
                           "the inputs have %lld directions, but direction '%s' has %d",
                           (long long)o->d,
                           p->direction == 0   ? "forward"
                           : p->direction == 1 ? "reverse"
                                               : "bidirectional",
                           p->num_dir);
    if (c->runtime &&
        !(og_dim_known(o->t) && og_dim_known(o->n) && og_dim_known(o->h) && og_dim_known(o->in)))
        return og_op_error(c, OG_ERR_INTERNAL, "shapes unknown at run time");
    if (c->runtime && o->h < 1) return og_op_error(c, OG_ERR_SHAPE, "the hidden size is 0");
    return OG_OK;
}

static og_status rnn_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_rnn_params *p = c->node->params;
    int nin = og_rnn_n_in(p->kind), nout = og_rnn_n_out(p->kind);
    rnn_dims s;
    og_status st = check_inputs(c, p, in, n_in < nin ? n_in : nin, &s);
    if (st) return st;
    og_dtype dt = in[0].dtype;
    for (int j = 0; j < n_out && j < nout; j++) {
        out[j].dtype = dt;
        if (j == 0) {
            out[j].rank = 4;
            int64_t y[4] = {s.t, s.d, s.n, s.h}, yl[4] = {s.n, s.t, s.d, s.h};
            memcpy(out[j].dims, p->layout ? yl : y, sizeof y);
        } else {
            out[j].rank = 3;
            out[j].dims[0] = p->layout ? s.n : s.d;
            out[j].dims[1] = p->layout ? s.d : s.n;
            out[j].dims[2] = s.h;
        }
    }
    if (p->role == OG_RNN_TRAIN) {
        if (n_out <= nout || c->node->out[nout] < 0)
            return og_op_error(c, OG_ERR_MODEL, "output %d (saved) is required", nout);
        og_vinfo *v = &out[nout];
        v->dtype = dt;
        v->rank = 4;
        v->dims[0] = s.d;
        v->dims[1] = s.t;
        v->dims[2] = s.n;
        v->dims[3] = og_dim_known(s.h) ? og_rnn_saved_width(p, s.h) : OG_DIM_UNKNOWN;
    }
    return OG_OK;
}

/* The backward op: the forward's checks, then saved and the output gradients against the
 * forward's shapes; each gradient has its input's type and shape. */
static og_status rnn_grad_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    const og_rnn_params *p = c->node->params;
    int nin = og_rnn_n_in(p->kind);
    if (n_in <= nin || c->node->in[nin] < 0)
        return og_op_error(c, OG_ERR_MODEL, "input %d (saved) is required", nin);
    rnn_dims s;
    og_status st = check_inputs(c, p, in, nin, &s);
    if (st) return st;
    const og_vinfo *sv = &in[nin];
    if ((st = og_check_same_dtype(c, in, 0, nin))) return st;
    if (sv->rank >= 0 && sv->rank != 4)
        return og_op_error(c, OG_ERR_SHAPE, "input %d (saved) has rank %d, expected 4", nin,
                           sv->rank);
    if (sv->rank == 4) {
        int64_t want[4] = {s.d, s.t, s.n,
                           og_dim_known(s.h) ? og_rnn_saved_width(p, s.h) : OG_DIM_UNKNOWN};
        for (int k = 0; k < 4; k++) {
            int64_t d = want[k];
            if ((st = same_dim(c, &d, sv->dims[k], "saved's shape"))) return st;
        }
    }
    /* the output gradients: Y's, Y_h's (and Y_c's) shapes */
    og_vinfo fwd[3];
    for (int j = 0; j < 3; j++) og_vinfo_unknown(&fwd[j]);
    int nout = og_rnn_n_out(p->kind);
    {
        /* shapes as rnn_infer gives them */
        int64_t y[4] = {s.t, s.d, s.n, s.h}, yl[4] = {s.n, s.t, s.d, s.h};
        og_vinfo_set(&fwd[0], in[0].dtype, 4, p->layout ? yl : y);
        int64_t hs[3] = {p->layout ? s.n : s.d, p->layout ? s.d : s.n, s.h};
        for (int j = 1; j < nout; j++) og_vinfo_set(&fwd[j], in[0].dtype, 3, hs);
    }
    for (int j = 0; j < nout && nin + 1 + j < n_in; j++) {
        const og_vinfo *g = &in[nin + 1 + j];
        if (g->dtype == OG_UNDEFINED && g->rank < 0) continue;
        if ((st = og_check_same_dtype(c, in, 0, nin + 1 + j))) return st;
        if (g->rank >= 0 && g->rank != fwd[j].rank)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input %d (gradient of output %d) has rank %d, "
                               "expected %d",
                               nin + 1 + j, j, g->rank, fwd[j].rank);
        for (int k = 0; g->rank >= 0 && k < g->rank; k++) {
            int64_t d = fwd[j].dims[k];
            if ((st = same_dim(c, &d, g->dims[k], "an output gradient's shape"))) return st;
        }
    }
    for (int j = 0; j < n_out && j < nin; j++) {
        if (j == OG_RNN_IN_SEQ) continue;
        og_vinfo_copy_shape(&out[j], &in[j]);
    }
    return OG_OK;
}

const og_op_def og_ops_rnn[] = {
    {"RNN", "", OG_SINCE(RNN), 3, 6, 0, 2, rnn_parse, NULL, rnn_infer, 0},
    {"GRU", "", OG_SINCE(GRU), 3, 6, 0, 2, rnn_parse, NULL, rnn_infer, 0},
    {"LSTM", "", OG_SINCE(LSTM), 3, 8, 0, 3, rnn_parse, NULL, rnn_infer, 0},
    {"RNNTrain", OG_RNN_DOMAIN, og_since_onnxgrad, 3, 6, 0, 3, rnn_parse, NULL, rnn_infer, 0},
    {"GRUTrain", OG_RNN_DOMAIN, og_since_onnxgrad, 3, 6, 0, 3, rnn_parse, NULL, rnn_infer, 0},
    {"LSTMTrain", OG_RNN_DOMAIN, og_since_onnxgrad, 3, 8, 0, 4, rnn_parse, NULL, rnn_infer, 0},
    {"RNNGrad", OG_RNN_DOMAIN, og_since_onnxgrad, 3, 9, 0, 6, rnn_parse, NULL, rnn_grad_infer, 0},
    {"GRUGrad", OG_RNN_DOMAIN, og_since_onnxgrad, 3, 9, 0, 6, rnn_parse, NULL, rnn_grad_infer, 0},
    {"LSTMGrad", OG_RNN_DOMAIN, og_since_onnxgrad, 3, 12, 0, 8, rnn_parse, NULL, rnn_grad_infer, 0},
    {0}};
