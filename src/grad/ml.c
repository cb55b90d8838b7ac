/* ml.c: gradients of the ai.onnx.ml ops (src/ops/ml.c), and the lowering of the linear
 * models to standard ops, through which their coefficients are trained.
 *
 * Rules, with y the op's output and dy its gradient (rows of the last axis):
 *   Scaler:     y = (x - offset) s           dx = dy s       (s per feature or one value)
 *   Normalizer: y = x / d(x), d = max x, sum |x| or sqrt(sum x^2) over the row,
 *               dx = dy / d - g (sum_j dy_j x_j) / d^2,  g = dd/dx:
 *                 MAX [x == max] / count(x == max) (ties share, as ReduceMax's rule),
 *                 L1 sign(x), L2 x / d;
 *               where d == 0, y = x and dx = dy
 *   ArrayFeatureExtractor: z = x[..., idx]   dx = dz · H,  H[k, f] = [idx_k == f]
 *               (a repeated index adds up; [F] inputs give [1, k] and take dx back as [F])
 *   Imputer:    dx = dy where x is not the replaced value (NaN: not NaN), 0 where replaced
 *   FeatureVectorizer: each input's slice of dy (zeros over the columns it had cut off)
 *   Binarizer, OneHotEncoder, LabelEncoder, the tree ensembles: piecewise constant in x,
 *               so no gradient reaches x (zero almost everywhere)
 * The linear models are not differentiated by a rule: og_grad_lower_ml rewrites them as
 * MatMul/Add on initializers (grad.h), so their coefficients and intercepts become weights
 * like any other, their input gradient flows through MatMul, and the graph saved still runs
 * anywhere.  ZipMap has no rule either: its sequence of maps is differentiated as the tensor
 * it packs (og_grad_output_source). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grad/rule_util.h"
#include "ops/ml_params.h"

/* dy in x's dtype (an op whose output the spec fixes to float may read float64) */
static int dy_as_x(og_gb *b, const og_node *n, int dy)
{
    og_dtype xt = og_gb_value(b, IN(0))->dtype, yt = og_gb_value(b, OUT(0))->dtype;
    return xt != yt && xt != OG_UNDEFINED ? og_rule_cast(b, dy, xt) : dy;
}

static bool float_input(og_gb *b, const og_node *n, int i)
{
    og_dtype t = og_gb_value(b, n->in[i])->dtype;
    return t == OG_FLOAT || t == OG_DOUBLE;
}

static og_status g_scaler(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_scaler_params *p = n->params;
    if (!WANTS(0) || !float_input(b, n, 0)) return og_gb_status(b);
    int rank = og_rule_rank_of(b, n, IN(0), "X");
    if (rank > 2 && p->n > 1)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "the gradient of a per-feature Scaler takes X of rank 1 or 2, not %d",
                          rank),
               og_gb_status(b);
    og_dtype dt = og_gb_value(b, IN(0))->dtype;
    int s = p->n == 1 ? og_gb_scalar(b, p->scale[0], dt)
                      : og_gb_const_floats(b, p->scale, (int)p->n, dt);
    dx[0] = og_rule_mul(b, dy_as_x(b, n, dy[0]), s);
    return og_gb_status(b);
}

static og_status g_normalizer(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_normalizer_params *p = n->params;
    if (!WANTS(0) || !float_input(b, n, 0)) return og_gb_status(b);
    int x = IN(0), rank = og_rule_rank_of(b, n, x, "X");
    if (rank < 0) return og_gb_status(b);
    og_dtype dt = og_gb_value(b, x)->dtype;
    int64_t ax = rank - 1;
    int g, d;
    /* comparisons as Less / Greater: Equal takes floats only from opset 11, and the
     * converters' models often import 9 */
    if (p->norm == OG_NORM_MAX) {
        d = og_rule_reduce(b, "ReduceMax", x, &ax, 1, true);
        int mask =
            og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Less", x, d)), dt); /* x == max */
        g = og_rule_div(b, mask, og_rule_reduce(b, "ReduceSum", mask, &ax, 1, true));
    } else if (p->norm == OG_NORM_L1) {
        d = og_rule_reduce(b, "ReduceSum", og_gb_op1(b, "Abs", x), &ax, 1, true);
        g = og_gb_op1(b, "Sign", x);
    } else {
        d = og_gb_op1(b, "Sqrt",
                      og_rule_reduce(b, "ReduceSum", og_rule_mul(b, x, x), &ax, 1, true));
        g = -1; /* x / d, below */
    }
    int zero = og_gb_op1(
        b, "Not",
        og_gb_op2(b, "Greater", og_gb_op1(b, "Abs", d), og_gb_scalar(b, 0.0, dt))); /* d == 0 */
    int safe = og_rule_select(b, zero, og_gb_scalar(b, 1.0, dt), d, x);
    if (g < 0) g = og_rule_div(b, x, safe);
    int dyx = dy_as_x(b, n, dy[0]);
    int dot = og_rule_reduce(b, "ReduceSum", og_rule_mul(b, dyx, x), &ax, 1, true);
    int v = og_rule_sub(b, og_rule_div(b, dyx, safe),
                        og_rule_div(b, og_rule_mul(b, g, dot), og_rule_mul(b, safe, safe)));
    dx[0] = og_rule_select(b, zero, dyx, v, x);
    return og_gb_status(b);
}

static og_status g_afe(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0) || !float_input(b, n, 0)) return og_gb_status(b);
    int x = IN(0), rank = og_rule_rank_of(b, n, x, "X");
    if (rank < 0) return og_gb_status(b);
    og_dtype dt = og_gb_value(b, x)->dtype;
    /* H[k, f] = [idx_k == f], f over X's last axis (its size read at run time) */
    int64_t flat = -1, last = -1, axis1 = 1;
    int idx = og_rule_reshape_c(b, IN(1), &flat, 1);
    int f = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", x), og_gb_const_i64(b, &last, 1));
    int range = og_rule_iota(b, og_rule_reshape_c(b, f, NULL, 0));
    int h = og_rule_cast(b, og_gb_op2(b, "Equal", og_rule_unsqueeze(b, idx, &axis1, 1), range), dt);
    int g = og_gb_op2(b, "MatMul", dy[0], h);
    dx[0] = rank == 1 ? og_gb_reshape_like(b, g, x) : g;
    return og_gb_status(b);
}

/* Imputer: y = x where x is not the replaced value, else a constant: dx = dy there. */
static og_status g_imputer(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_imputer_params *p = n->params;
    if (!WANTS(0) || !float_input(b, n, 0) || p->ints) return og_gb_status(b);
    int x = IN(0);
    og_dtype dt = og_gb_value(b, x)->dtype;
    int keep; /* x is not the replaced value (Less / Greater: Equal takes floats from 11) */
    if (isnan(p->rep_f)) {
        keep = og_gb_op1(b, "Not", og_gb_op1(b, "IsNaN", x));
    } else {
        int c = og_gb_scalar(b, p->rep_f, dt);
        keep = og_gb_op2(b, "Or", og_gb_op2(b, "Less", x, c), og_gb_op2(b, "Greater", x, c));
    }
    dx[0] = og_rule_mul(b, dy[0], og_rule_cast(b, keep, dt));
    return og_gb_status(b);
}

/* FeatureVectorizer: input i fills columns off_i .. off_i + take_i of y (take_i its
 * columns, or inputdimensions[i] when it has more, the rest cut off): dx_i is that slice of
 * dy, zero-padded over the columns cut, in x_i's shape. */
static og_status g_featvec(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_featvec_params *p = n->params;
    int64_t off = 0, ax = 1;
    for (int i = 0; i < n->n_in; off += p->dims[i], i++) {
        if (!WANTS(i) || !float_input(b, n, i)) continue;
        const og_value *v = og_gb_value(b, n->in[i]);
        int64_t cols = v->rank == 1 ? v->dims[0] : v->rank == 2 ? v->dims[1] : OG_DIM_UNKNOWN;
        if (!og_dim_known(cols))
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "the gradient of FeatureVectorizer needs input %d's column count "
                              "(a known last dim of a rank-1 or 2 input)",
                              i),
                   og_gb_status(b);
        og_dtype dt = v->dtype;
        int64_t take = cols < p->dims[i] ? cols : p->dims[i], end = off + take;
        int g = og_rule_slice(b, og_rule_cast(b, dy[0], dt), &ax, &off, &end, NULL, 1);
        if (take < cols) {
            int64_t pads[4] = {0, 0, 0, cols - take};
            if (og_gb_opset(b) >= 11) {
                g = og_gb_op2(b, "Pad", g, og_gb_const_i64(b, pads, 4));
            } else {
                g = og_gb_op1(b, "Pad", g);
                og_gb_attr_ints(b, og_gb_last(b), "pads", pads, 4);
            }
        }
        dx[i] = og_gb_reshape_like(b, g, n->in[i]);
    }
    return og_gb_status(b);
}

/* Piecewise-constant ops: no gradient reaches their input (zero almost everywhere). */
static og_status g_none(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    (void)n;
    (void)dy;
    (void)dx;
    return og_gb_status(b);
}

const og_grad_rule og_grad_ml[] = {{"Scaler", "ai.onnx.ml", g_scaler},
                                   {"Normalizer", "ai.onnx.ml", g_normalizer},
                                   {"ArrayFeatureExtractor", "ai.onnx.ml", g_afe},
                                   {"Imputer", "ai.onnx.ml", g_imputer},
                                   {"FeatureVectorizer", "ai.onnx.ml", g_featvec},
                                   {"Binarizer", "ai.onnx.ml", g_none},
                                   {"OneHotEncoder", "ai.onnx.ml", g_none},
                                   {"LabelEncoder", "ai.onnx.ml", g_none},
                                   {"TreeEnsembleRegressor", "ai.onnx.ml", g_none},
                                   {"TreeEnsembleClassifier", "ai.onnx.ml", g_none},
                                   {"TreeEnsemble", "ai.onnx.ml", g_none},
                                   {0}};

/* ---- ZipMap ------------------------------------------------------------------------- */

int og_grad_output_source(const og_graph *g, int v)
{
    int p = g->values[v].producer;
    if (p < 0) return v;
    const og_node *n = &g->nodes[p];
    if (strcmp(n->op_type, "ZipMap") == 0 && strcmp(n->domain, "ai.onnx.ml") == 0 && n->n_in > 0 &&
        n->in[0] >= 0)
        return n->in[0];
    return v;
}

/* ---- the lowering of LinearRegressor and LinearClassifier ----------------------------- */

static bool is_linear(const og_node *n)
{
    return strcmp(n->domain, "ai.onnx.ml") == 0 && (strcmp(n->op_type, "LinearRegressor") == 0 ||
                                                    strcmp(n->op_type, "LinearClassifier") == 0);
}

/* "<base><suffix>", else "<base><suffix>_1", "_2", ... : the first no value of g has, in a
 * new string (NULL when out of memory). */
static char *free_name(const og_graph *g, const char *base, const char *suffix)
{
    size_t size = strlen(base) + strlen(suffix) + 24;
    char *out = og_malloc(g->alloc, size);
    if (!out) return NULL;
    snprintf(out, size, "%s%s", base, suffix);
    for (int k = 1; og_graph_find_value(g, out) >= 0; k++)
        snprintf(out, size, "%s%s_%d", base, suffix, k);
    return out;
}

/* Names depend on g as loaded only (the lowering computes them all before adding any
 * weight), so the same graph gives the same names every time.  Two linear nodes of one name
 * are told apart by their index: "<name>_<i>_coefficients".  Distinct bases never clash:
 * the suffixes end differently, and a numeric suffix keeps the base's end. */
og_status og_grad_ml_weight_names(const og_graph *g, int i, char **coef, char **inter)
{
    *coef = *inter = NULL;
    if (i < 0 || i >= g->n_nodes || !is_linear(&g->nodes[i])) return OG_OK;
    const char *name = g->nodes[i].name;
    bool shared = false;
    for (int k = 0; k < g->n_nodes && !shared; k++)
        shared = k != i && is_linear(&g->nodes[k]) && strcmp(g->nodes[k].name, name) == 0;
    size_t len = strlen(name) + 24;
    char *base = og_malloc(g->alloc, len);
    if (base) {
        if (shared)
            snprintf(base, len, "%s_%d", name, i);
        else
            snprintf(base, len, "%s", name);
        *coef = free_name(g, base, "_coefficients");
        *inter = free_name(g, base, "_intercepts");
        og_free(g->alloc, base);
    }
    if (*coef && *inter) return OG_OK;
    og_free(g->alloc, *coef);
    og_free(g->alloc, *inter);
    *coef = *inter = NULL;
    return og_error(OG_ERR_NOMEM, "out of memory");
}

/* A new initializer `name` of g: `data` (n floats) stored as dtype with the given shape. */
static int add_weight(og_graph *g, const char *name, const float *data, int rank,
                      const int64_t *dims, og_dtype dtype, og_status *st)
{
    og_tensor *t = NULL;
    if ((*st = og_tensor_alloc(dtype, rank, dims, g->alloc, &t))) return -1;
    for (int64_t i = 0; i < t->numel; i++) {
        if (dtype == OG_DOUBLE)
            ((double *)t->data)[i] = data[i];
        else
            ((float *)t->data)[i] = data[i];
    }
    int v = og_graph_add_value(g, name);
    if (v < 0 || !og_graph_add_initializer(g, v)) {
        og_tensor_free(t);
        *st = og_error(OG_ERR_NOMEM, "out of memory");
        return -1;
    }
    og_value *val = &g->values[v];
    val->kind = OG_VALUE_INITIALIZER;
    t->readonly = true;
    val->init = t;
    val->known = t;
    val->dtype = dtype;
    val->rank = rank;
    memcpy(val->dims, dims, (size_t)rank * sizeof *dims);
    return v;
}

/* A Constant node holding t (labels); its output id. */
static int const_node(og_gb *b, og_graph *g, const og_tensor *t)
{
    int v = og_gb_op(b, "Constant", 0, NULL);
    int node = og_gb_last(b);
    if (v < 0) return -1;
    og_attr at = {0};
    at.name = "value";
    at.type = OG_ATTR_TENSOR;
    at.t = (og_tensor *)t;
    og_status st = og_node_add_attr(g, node, &at);
    if (st) return og_gb_fail(b, NULL, st, "%s", og_last_error());
    return v;
}

/* onnxruntime's probit of p, elementwise, with standard ops (ml_params.h) */
static int probit_ops(og_gb *b, int p, og_dtype dt)
{
    int x = og_rule_sub(b, og_rule_mul(b, og_gb_scalar(b, 2.0, dt), p), og_gb_scalar(b, 1.0, dt));
    int one = og_gb_scalar(b, 1.0, dt);
    int l = og_gb_op1(b, "Log", og_rule_mul(b, og_rule_sub(b, one, x), og_rule_add(b, one, x)));
    int v = og_rule_add(b, og_gb_scalar(b, 2.0 / (3.14159 * 0.147), dt),
                        og_rule_mul(b, og_gb_scalar(b, 0.5, dt), l));
    int v2 = og_rule_mul(b, og_gb_scalar(b, 1.0 / 0.147, dt), l);
    int r = og_gb_op1(
        b, "Sqrt",
        og_rule_sub(b, og_gb_op1(b, "Sqrt", og_rule_sub(b, og_rule_mul(b, v, v), v2)), v));
    return og_rule_mul(b, og_rule_mul(b, og_gb_scalar(b, 1.41421356, dt), og_gb_op1(b, "Sign", x)),
                       r);
}

/* The post transform of [N, T] scores s (T > 1) with standard ops. */
static int post_ops(og_gb *b, int s, og_post post, og_dtype dt)
{
    int64_t ax = 1;
    switch (post) {
    case OG_POST_LOGISTIC: return og_gb_op1(b, "Sigmoid", s);
    case OG_POST_SOFTMAX: {
        int y = og_gb_op1(b, "Softmax", s);
        og_gb_attr_int(b, og_gb_last(b), "axis", 1);
        return y;
    }
    case OG_POST_SOFTMAX_ZERO: {
        /* scores within 1e-7 of 0 stay near 0 and out of the sum */
        int m = og_rule_reduce(b, "ReduceMax", s, &ax, 1, true);
        int keep = og_gb_op2(b, "Greater", og_gb_op1(b, "Abs", s), og_gb_scalar(b, 1e-7, dt));
        int e = og_gb_op3(b, "Where", keep, og_gb_op1(b, "Exp", og_rule_sub(b, s, m)),
                          og_rule_mul(b, s, og_gb_op1(b, "Exp", og_gb_op1(b, "Neg", m))));
        int sum = og_rule_reduce(b, "ReduceSum", og_rule_mul(b, e, og_rule_cast(b, keep, dt)), &ax,
                                 1, true);
        return og_rule_div(b, e, sum);
    }
    case OG_POST_PROBIT: return probit_ops(b, s, dt);
    case OG_POST_NONE: break;
    }
    return s;
}

/* Emit the lowered form of linear node n (index i of g); the values replacing its outputs
 * go to res[0..n_out-1].  Its weights become initializers. */
static og_status lower_one(og_gb *b, og_graph *g, int i, const char *cname, const char *bname,
                           int *res)
{
    const og_node *n = &g->nodes[i];
    const og_linear_params *p = n->params;
    char label[256];
    int x = n->in[0];
    og_dtype xt = g->values[x].dtype;
    /* the weights take the scores' dtype (float64 in a float64 copy of the model, whatever
     * X is), else X's when it is a float type */
    int so = p->classifier ? (n->n_out > 1 ? n->out[1] : -1) : n->out[0];
    og_dtype st_dt = so >= 0 ? g->values[so].dtype : OG_UNDEFINED;
    og_dtype dt = st_dt == OG_DOUBLE || st_dt == OG_FLOAT ? st_dt
                  : xt == OG_DOUBLE                       ? OG_DOUBLE
                                                          : OG_FLOAT;
    const og_value *xv = &g->values[x];
    int64_t f_known = xv->rank >= 1 ? xv->dims[xv->rank - 1] : OG_DIM_UNKNOWN;
    int64_t t = p->targets;
    if (t <= 0 && og_dim_known(f_known) && f_known > 0 && p->n_coef % f_known == 0)
        t = p->n_coef / f_known;
    if (t <= 0)
        return og_error(OG_ERR_UNSUPPORTED,
                        "%s: its class count is known only at run time (no intercepts, X's "
                        "feature count unknown): it cannot be lowered to be differentiated",
                        og_node_label(n, label, sizeof label));
    int64_t f = p->n_coef / t, wdims[2] = {t, f}, shape[2] = {-1, f}, perm[2] = {1, 0};
    og_status st = OG_OK;
    bool classifier = p->classifier;
    og_post post = p->post;
    bool string_labels = p->string_labels;
    int64_t n_labels = p->n_labels;
    int w = add_weight(g, cname, p->coef, 2, wdims, dt, &st);
    if (st) return st;
    int bias = -1;
    if (p->intercepts && p->n_intercepts == t) {
        bias = add_weight(g, bname, p->intercepts, 1, &t, dt, &st);
        if (st) return st;
    }
    n = &g->nodes[i]; /* values may have moved, nodes not; p stays */
    int xf = xt == dt ? x : og_rule_cast(b, x, dt);
    int s = og_gb_op2(b, "MatMul", og_rule_reshape_c(b, xf, shape, 2),
                      og_rule_transpose(b, w, perm, 2));
    if (bias >= 0) s = og_rule_add(b, s, bias);
    if (!classifier) {
        res[0] = t > 1                    ? post_ops(b, s, post, dt)
                 : post == OG_POST_PROBIT ? probit_ops(b, s, dt)
                                          : s;
        return og_gb_status(b);
    }
    /* the label, from the raw scores */
    og_tensor *labels = NULL;
    st = string_labels ? og_tensor_from_strings(1, &n_labels, (const char *const *)p->labels_s,
                                                g->alloc, &labels)
                       : og_tensor_from_data(OG_INT64, 1, &n_labels, p->labels_i,
                                             (size_t)n_labels * sizeof(int64_t), g->alloc, &labels);
    if (st) return st;
    int lab = const_node(b, g, labels);
    og_tensor_free(labels);
    int idx;
    if (t > 1) {
        idx = og_gb_op1(b, "ArgMax", s);
        og_gb_attr_int(b, og_gb_last(b), "axis", 1);
        og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    } else {
        int64_t flat = -1;
        int col = og_rule_reshape_c(b, s, &flat, 1);
        idx = og_rule_cast(b, og_gb_op2(b, "Greater", col, og_gb_scalar(b, 0.0, dt)), OG_INT64);
    }
    res[0] = og_gb_op2(b, "Gather", lab, idx);
    /* the scores */
    if (t > 1) {
        res[1] = post_ops(b, s, post, dt);
    } else if (post == OG_POST_PROBIT) {
        res[1] = probit_ops(b, s, dt);
    } else {
        int pr = post == OG_POST_LOGISTIC ? og_gb_op1(b, "Sigmoid", s) : s;
        int cols[2] = {og_rule_sub(b, og_gb_scalar(b, 1.0, dt), pr), pr};
        res[1] = og_gb_op(b, "Concat", 2, cols);
        og_gb_attr_int(b, og_gb_last(b), "axis", 1);
    }
    return og_gb_status(b);
}

og_status og_grad_lower_ml(og_graph *g, int *n_lowered)
{
    og_status st = OG_OK;
    int count = 0, nn = g->n_nodes;
    if (n_lowered) *n_lowered = 0;
    for (int i = 0; i < nn; i++) count += is_linear(&g->nodes[i]);
    if (!count) return OG_OK;
    /* every name first, from g as it is (og_grad_ml_weight_names) */
    char **names = og_calloc(g->alloc, 2 * (size_t)nn, sizeof *names);
    if (!names) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nn && !st; i++)
        st = og_grad_ml_weight_names(g, i, &names[2 * i], &names[2 * i + 1]);
    og_gb *b = st ? NULL : og_gb_open(g, "og_ml");
    if (!st && !b) st = og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nn && !st; i++) {
        if (!is_linear(&g->nodes[i])) continue;
        if (!g->nodes[i].params) {
            st = og_error(OG_ERR_INTERNAL, "node '%s' is not resolved", g->nodes[i].name);
            break;
        }
        int res[2] = {-1, -1};
        st = lower_one(b, g, i, names[2 * i], names[2 * i + 1], res);
        for (int j = 0; !st && j < g->nodes[i].n_out && j < 2; j++) {
            int out = g->nodes[i].out[j];
            if (out < 0) continue;
            /* the dtype the op's output has (float for a float64 X the model types float) */
            og_dtype want = g->values[out].dtype;
            int r = res[j];
            if ((want == OG_FLOAT || want == OG_DOUBLE) && r >= 0) r = og_rule_cast(b, r, want);
            og_node *id = og_graph_add_node(g, "Identity", "", NULL, 1, 1);
            if (!id || r < 0) {
                st = og_gb_status(b) ? og_gb_status(b) : og_error(OG_ERR_NOMEM, "out of memory");
                break;
            }
            size_t len = strlen(g->nodes[i].name) + 24;
            og_free(g->alloc, id->name);
            id->name = og_malloc(g->alloc, len);
            if (id->name) snprintf(id->name, len, "%s_lowered_%d", g->nodes[i].name, j);
            id->in[0] = r;
            id->out[0] = out;
            g->nodes[i].out[j] = -1; /* the Identity produces it now */
            if (!id->name) st = og_error(OG_ERR_NOMEM, "out of memory");
        }
    }
    for (int i = 0; i < 2 * nn; i++) og_free(g->alloc, names[i]);
    og_free(g->alloc, names);
    og_status cst = b ? og_gb_close(b) : OG_OK;
    if (!st) st = cst;
    if (st) return st;
    for (int i = nn - 1; i >= 0; i--)
        if (is_linear(&g->nodes[i])) og_graph_remove_node(g, i);
    st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st && n_lowered) *n_lowered = count;
    return st;
}

og_status og_grad_ml_write_back(og_graph *g, const char *name, const og_tensor *value, bool *found)
{
    *found = false;
    for (int i = 0; i < g->n_nodes; i++) {
        char *c = NULL, *b = NULL;
        og_status st = og_grad_ml_weight_names(g, i, &c, &b);
        if (st) return st;
        bool coef = c && strcmp(name, c) == 0, inter = b && strcmp(name, b) == 0;
        og_free(g->alloc, c);
        og_free(g->alloc, b);
        if (!coef && !inter) continue;
        og_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_attrs; k++) {
            og_attr *a = &n->attrs[k];
            if (strcmp(a->name, coef ? "coefficients" : "intercepts") != 0) continue;
            if (a->type != OG_ATTR_FLOATS || a->n != value->numel)
                return og_error(OG_ERR_SHAPE, "weight '%s' has %lld values; node '%s' holds %d",
                                name, (long long)value->numel, n->name, a->n);
            for (int q = 0; q < a->n; q++) a->floats[q] = (float)og_tensor_get_f64(value, q);
            *found = true;
            return OG_OK;
        }
    }
    return OG_OK;
}
