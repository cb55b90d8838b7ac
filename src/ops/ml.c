/* ml.c: the ai.onnx.ml ops that scikit-learn converters emit (what they mean: attributes,
 * types, shapes).  The tree ensembles' parsing is in ml_tree.c; the CPU kernels in
 * src/kernels/cpu/ml.c and ml_tree.c; the gradient rules in src/grad/ml.c.
 *
 * The spec leaves corners open; where it does, these ops follow onnxruntime (the reference
 * every model converted by skl2onnx is checked against), and ml_params.h says what each op
 * computes.  One extension: an output the spec fixes to float is float64 when the model
 * already types it float64 (ml_params.h, out_double), so that the float64 copies `check`
 * differentiates stay in float64. */
#include <math.h>
#include <string.h>

#include "ops/ml_params.h"

static const int since_1[] = {1, 0};
static const int since_label_encoder[] = {1, 2, 4, 0};
static const int since_trees[] = {1, 3, 0};
static const int since_5[] = {5, 0};

static const og_dtype numeric_in[] = {OG_FLOAT, OG_DOUBLE, OG_INT64, OG_INT32, OG_UNDEFINED};

/* ---- shared helpers ------------------------------------------------------------------- */

static og_status alloc_params(const og_op_ctx *c, size_t size, void **params)
{
    *params = og_calloc(c->alloc, 1, size);
    return *params ? OG_OK : og_op_error(c, OG_ERR_NOMEM, "out of memory parsing attributes");
}

bool og_ml_declared_double(const og_op_ctx *c, int j)
{
    if (!c->graph || j >= c->node->n_out || c->node->out[j] < 0) return false;
    const og_value *v = &c->graph->values[c->node->out[j]];
    if (v->dtype == OG_DOUBLE) return true;
    /* a container whose leaf tensors are float64 (ZipMap's seq(map(k, float64))) */
    const og_type *t = v->type;
    while (t && t->kind != OG_KIND_TENSOR) t = t->elem;
    return t && t->dtype == OG_DOUBLE;
}

static og_dtype float_out(og_dtype x, bool double_out)
{
    (void)x;
    return double_out ? OG_DOUBLE : OG_FLOAT;
}

og_status og_ml_post_transform(const og_op_ctx *c, const char *name, og_post *out)
{
    static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    const char *s = og_attr_string(c->node, name, "NONE");
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (og_post)i;
            return OG_OK;
        }
    return og_op_error(
        c, OG_ERR_MODEL,
        "attribute '%s' is '%s'; it must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or "
        "PROBIT",
        name, s);
}

/* Check the attributes' types this op reads; one wrong type fails naming it. */
static og_status check_types(const og_op_ctx *c, const char *const *names,
                             const og_attr_type *types, int n)
{
    for (int i = 0; i < n; i++) {
        og_status st = og_attr_check_type(c, names[i], types[i]);
        if (st) return st;
    }
    return OG_OK;
}

/* Input 0 must be rank 1 or 2 (known ranks only, at load). */
static og_status rank_1_or_2(const og_op_ctx *c, const og_vinfo *x, const char *what)
{
    if (x->rank >= 0 && (x->rank < 1 || x->rank > 2))
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "input %s has rank %d; it must be [N, F] or [F]", what, x->rank);
    return OG_OK;
}

/* N and F of a rank-1 ([F]: N 1) or rank-2 input, as far as known. */
static void n_and_f(const og_vinfo *x, int64_t *n, int64_t *f)
{
    *n = x->rank == 2 ? x->dims[0] : x->rank == 1 ? 1 : OG_DIM_UNKNOWN;
    *f = x->rank >= 1 ? x->dims[x->rank - 1] : OG_DIM_UNKNOWN;
}

/* ---- LinearRegressor, LinearClassifier ------------------------------------------------ */

static og_status linear_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"coefficients",   "intercepts",       "targets",
                                        "post_transform", "classlabels_ints", "classlabels_strings",
                                        "multi_class"};
    static const og_attr_type types[] = {OG_ATTR_FLOATS, OG_ATTR_FLOATS, OG_ATTR_INT,
                                         OG_ATTR_STRING, OG_ATTR_INTS,   OG_ATTR_STRINGS,
                                         OG_ATTR_INT};
    og_status st = check_types(c, names, types, 7);
    if (st || (st = alloc_params(c, sizeof(og_linear_params), params))) return st;
    og_linear_params *p = *params;
    const og_node *n = c->node;
    p->classifier = strcmp(n->op_type, "LinearClassifier") == 0;
    int nc = 0, ni = 0;
    p->coef = og_attr_floats(n, "coefficients", &nc);
    p->n_coef = nc;
    p->intercepts = og_attr_floats(n, "intercepts", &ni);
    p->n_intercepts = ni;
    if (!p->coef || nc == 0)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'coefficients' is missing or empty");
    if ((st = og_ml_post_transform(c, "post_transform", &p->post))) return st;
    p->double_out = og_ml_declared_double(c, p->classifier ? 1 : 0);
    if (!p->classifier) {
        p->targets = og_attr_int(n, "targets", 1);
        if (p->targets < 1 || nc % p->targets)
            return og_op_error(c, OG_ERR_MODEL,
                               "attribute 'targets' is %lld; it must be >= 1 and divide the %d "
                               "coefficients",
                               (long long)p->targets, nc);
        if (ni != p->targets) p->intercepts = NULL; /* onnxruntime ignores them then */
        return OG_OK;
    }
    int nl_i = 0, nl_s = 0;
    p->labels_i = og_attr_ints(n, "classlabels_ints", &nl_i);
    const og_attr *ls = og_node_attr(n, "classlabels_strings");
    if (ls) {
        p->labels_s = ls->strings;
        nl_s = ls->n;
    }
    if ((nl_i > 0) == (nl_s > 0))
        return og_op_error(c, OG_ERR_MODEL,
                           "exactly one of 'classlabels_ints' and 'classlabels_strings' must be "
                           "given (ints: %d, strings: %d)",
                           nl_i, nl_s);
    p->string_labels = nl_s > 0;
    p->n_labels = nl_s > 0 ? nl_s : nl_i;
    p->targets = ni; /* 0: from the coefficients and F at run time */
    if (ni > 0 && nc % ni)
        return og_op_error(c, OG_ERR_MODEL, "%d coefficients do not split into %d classes", nc, ni);
    int64_t t = ni > 0 ? ni : 0;
    if (t > 1 && p->n_labels < t)
        return og_op_error(c, OG_ERR_MODEL, "%lld classes of scores but %lld class labels",
                           (long long)t, (long long)p->n_labels);
    return OG_OK;
}

/* Number of score columns T and of output columns of Z, from F (known) or p. */
static og_status linear_dims(const og_op_ctx *c, const og_linear_params *p, int64_t f, int64_t *t,
                             int64_t *z_cols)
{
    *t = p->targets;
    if (*t == 0 && f > 0) {
        if (p->n_coef % f)
            return og_op_error(c, OG_ERR_SHAPE, "%lld coefficients do not fit %lld features",
                               (long long)p->n_coef, (long long)f);
        *t = p->n_coef / f;
    }
    if (*t > 0 && f >= 0 && p->n_coef != *t * f)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "input X has %lld features, but the %lld coefficients make %lld x %lld",
                           (long long)f, (long long)p->n_coef, (long long)*t,
                           (long long)(p->n_coef / *t));
    *z_cols = *t;
    if (p->classifier && *t == 1 && p->n_labels != 2)
        return og_op_error(c, OG_ERR_MODEL,
                           "one column of scores (a binary classifier) needs two class labels, "
                           "not %lld",
                           (long long)p->n_labels);
    if (p->classifier && *t == 1 && p->post != OG_POST_PROBIT) *z_cols = 2;
    if (p->classifier && *t > 1 && p->n_labels < *t)
        return og_op_error(c, OG_ERR_MODEL, "%lld classes of scores but %lld class labels",
                           (long long)*t, (long long)p->n_labels);
    return OG_OK;
}

static og_status linear_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_linear_params *p = c->node->params;
    og_status st;
    if ((st = og_check_dtype(c, in, 0, numeric_in)) || (st = rank_1_or_2(c, &in[0], "X")))
        return st;
    int64_t n, f, t = OG_DIM_UNKNOWN, zc = OG_DIM_UNKNOWN;
    n_and_f(&in[0], &n, &f);
    if (f >= 0 || p->targets > 0) {
        if ((st = linear_dims(c, p, f, &t, &zc))) return st;
        if (t <= 0) t = zc = OG_DIM_UNKNOWN;
    }
    og_dtype fd = float_out(in[0].dtype, p->double_out);
    if (!p->classifier) {
        int64_t d[2] = {n, p->targets};
        og_vinfo_set(&out[0], fd, in[0].rank >= 1 ? 2 : -1, d);
        return OG_OK;
    }
    int64_t dz[2] = {n, zc};
    og_vinfo_set(&out[0], p->string_labels ? OG_STRING : OG_INT64, in[0].rank >= 1 ? 1 : -1, &n);
    if (n_out > 1) og_vinfo_set(&out[1], fd, in[0].rank >= 1 ? 2 : -1, dz);
    return OG_OK;
}

/* ---- ArrayFeatureExtractor ------------------------------------------------------------ */

static const og_dtype afe_types[] = {OG_FLOAT, OG_DOUBLE, OG_INT64,
                                     OG_INT32, OG_STRING, OG_UNDEFINED};
static const og_dtype int64_only[] = {OG_INT64, OG_UNDEFINED};

static og_status afe_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    og_status st;
    if ((st = og_check_dtype(c, in, 0, afe_types)) || (st = og_check_dtype(c, in, 1, int64_only)))
        return st;
    if (in[0].rank == 0)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL, "input X is a scalar");
    int64_t k = OG_DIM_UNKNOWN;
    if (in[1].rank >= 0 && og_vinfo_static(&in[1])) og_shape_numel(in[1].rank, in[1].dims, &k);
    if (c->runtime) {
        if (k == 0) return og_op_error(c, OG_ERR_SHAPE, "input Y holds no index");
        int64_t f = in[0].dims[in[0].rank - 1];
        const og_tensor *y = in[1].value;
        for (int64_t i = 0; y && i < y->numel; i++) {
            int64_t v = ((const int64_t *)y->data)[i];
            if (v < 0 || v >= f)
                return og_op_error(c, OG_ERR_RUNTIME,
                                   "input Y: index %lld (element %lld) is outside 0..%lld of X's "
                                   "last axis",
                                   (long long)v, (long long)i, (long long)f - 1);
        }
    }
    if (in[0].rank < 0) {
        out[0].dtype = in[0].dtype;
        return OG_OK;
    }
    int64_t d[OG_MAX_RANK];
    int r = in[0].rank;
    if (r == 1) { /* onnxruntime: [F] gives [1, k] */
        d[0] = 1;
        d[1] = k;
        r = 2;
    } else {
        memcpy(d, in[0].dims, sizeof d);
        d[r - 1] = k;
    }
    og_vinfo_set(&out[0], in[0].dtype, r, d);
    return OG_OK;
}

/* ---- ZipMap --------------------------------------------------------------------------- */

static og_status zipmap_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"classlabels_int64s", "classlabels_strings"};
    static const og_attr_type types[] = {OG_ATTR_INTS, OG_ATTR_STRINGS};
    og_status st = check_types(c, names, types, 2);
    if (st || (st = alloc_params(c, sizeof(og_zipmap_params), params))) return st;
    og_zipmap_params *p = *params;
    int ni = 0;
    p->keys_i = og_attr_ints(c->node, "classlabels_int64s", &ni);
    const og_attr *ks = og_node_attr(c->node, "classlabels_strings");
    int ns = ks ? ks->n : 0;
    if ((ni > 0) == (ns > 0))
        return og_op_error(c, OG_ERR_MODEL,
                           "exactly one of 'classlabels_int64s' and 'classlabels_strings' must be "
                           "given (int64s: %d, strings: %d)",
                           ni, ns);
    p->strings = ns > 0;
    p->keys_s = ks ? ks->strings : NULL;
    p->n_keys = ns > 0 ? ns : ni;
    p->double_out = og_ml_declared_double(c, 0);
    return OG_OK;
}

static const og_dtype float_types[] = {OG_FLOAT, OG_DOUBLE, OG_UNDEFINED};

static og_status zipmap_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_zipmap_params *p = c->node->params;
    og_status st;
    if ((st = og_check_dtype(c, in, 0, float_types)) || (st = rank_1_or_2(c, &in[0], "X")))
        return st;
    int64_t f = in[0].rank >= 1 ? in[0].dims[in[0].rank - 1] : OG_DIM_UNKNOWN;
    if (f >= 0 && f != p->n_keys)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "input X has %lld columns for %lld class labels", (long long)f,
                           (long long)p->n_keys);
    /* seq(map(key, tensor(float))), the values scalars */
    og_dtype vd = float_out(in[0].dtype, p->double_out);
    const og_type *leaf = og_op_type_tensor(c, vd, -1, NULL);
    const og_type *map =
        leaf ? og_op_type_wrap(c, OG_KIND_MAP, p->strings ? OG_STRING : OG_INT64, leaf) : NULL;
    og_vinfo_set_kind(&out[0], OG_KIND_SEQUENCE,
                      map ? og_op_type_wrap(c, OG_KIND_SEQUENCE, OG_UNDEFINED, map) : NULL);
    return OG_OK;
}

/* ---- Normalizer, Scaler, Binarizer, Imputer ------------------------------------------- */

static og_status normalizer_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "norm", OG_ATTR_STRING);
    if (st || (st = alloc_params(c, sizeof(og_normalizer_params), params))) return st;
    og_normalizer_params *p = *params;
    const char *s = og_attr_string(c->node, "norm", "MAX");
    if (strcmp(s, "MAX") == 0)
        p->norm = OG_NORM_MAX;
    else if (strcmp(s, "L1") == 0)
        p->norm = OG_NORM_L1;
    else if (strcmp(s, "L2") == 0)
        p->norm = OG_NORM_L2;
    else
        return og_op_error(c, OG_ERR_MODEL, "attribute 'norm' is '%s'; it must be MAX, L1 or L2",
                           s);
    p->double_out = og_ml_declared_double(c, 0);
    return OG_OK;
}

static og_status normalizer_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                  int n_out)
{
    const og_normalizer_params *p = c->node->params;
    og_status st;
    if ((st = og_check_dtype(c, in, 0, numeric_in)) || (st = rank_1_or_2(c, &in[0], "X")))
        return st;
    og_vinfo_set(&out[0], float_out(in[0].dtype, p->double_out), in[0].rank, in[0].dims);
    return OG_OK;
}

static og_status scaler_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"offset", "scale"};
    static const og_attr_type types[] = {OG_ATTR_FLOATS, OG_ATTR_FLOATS};
    og_status st = check_types(c, names, types, 2);
    if (st || (st = alloc_params(c, sizeof(og_scaler_params), params))) return st;
    og_scaler_params *p = *params;
    int no = 0, ns = 0;
    p->offset = og_attr_floats(c->node, "offset", &no);
    p->scale = og_attr_floats(c->node, "scale", &ns);
    if (ns == 0 || ns != no)
        return og_op_error(c, OG_ERR_MODEL,
                           "attributes 'scale' (%d values) and 'offset' (%d) must be non-empty "
                           "and of one length",
                           ns, no);
    p->n = ns;
    p->double_out = og_ml_declared_double(c, 0);
    return OG_OK;
}

static og_status scaler_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_scaler_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, numeric_in);
    if (st) return st;
    if (in[0].rank == 0)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL, "input X is a scalar");
    /* the feature count is dim 1 of [N, F, ...], dim 0 of [F], as onnxruntime reads it */
    int64_t f = in[0].rank == 1 ? in[0].dims[0] : in[0].rank >= 2 ? in[0].dims[1] : OG_DIM_UNKNOWN;
    if (f >= 0 && p->n != 1 && p->n != f)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "scale and offset have %lld values; X has %lld features (they must "
                           "have 1 or F)",
                           (long long)p->n, (long long)f);
    og_vinfo_set(&out[0], float_out(in[0].dtype, p->double_out), in[0].rank, in[0].dims);
    return OG_OK;
}

static og_status binarizer_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "threshold", OG_ATTR_FLOAT);
    if (st || (st = alloc_params(c, sizeof(og_binarizer_params), params))) return st;
    ((og_binarizer_params *)*params)->threshold = og_attr_float(c->node, "threshold", 0.0f);
    return OG_OK;
}

static og_status same_numeric_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                    int n_out)
{
    og_status st = og_check_dtype(c, in, 0, numeric_in);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    return OG_OK;
}

static og_status imputer_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"imputed_value_floats", "imputed_value_int64s",
                                        "replaced_value_float", "replaced_value_int64"};
    static const og_attr_type types[] = {OG_ATTR_FLOATS, OG_ATTR_INTS, OG_ATTR_FLOAT, OG_ATTR_INT};
    og_status st = check_types(c, names, types, 4);
    if (st || (st = alloc_params(c, sizeof(og_imputer_params), params))) return st;
    og_imputer_params *p = *params;
    int nf = 0, ni = 0;
    p->imp_f = og_attr_floats(c->node, "imputed_value_floats", &nf);
    p->imp_i = og_attr_ints(c->node, "imputed_value_int64s", &ni);
    if ((nf > 0) == (ni > 0))
        return og_op_error(c, OG_ERR_MODEL,
                           "exactly one of 'imputed_value_floats' and 'imputed_value_int64s' "
                           "must be given (floats: %d, int64s: %d)",
                           nf, ni);
    p->ints = ni > 0;
    p->n_imp = ni > 0 ? ni : nf;
    p->rep_f = og_attr_float(c->node, "replaced_value_float", 0.0f);
    p->rep_i = og_attr_int(c->node, "replaced_value_int64", 0);
    return OG_OK;
}

static og_status imputer_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_imputer_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, numeric_in);
    if (st) return st;
    og_dtype t = in[0].dtype;
    if (t != OG_UNDEFINED && (t == OG_FLOAT || t == OG_DOUBLE) == p->ints)
        return og_op_error(c, c->runtime ? OG_ERR_TYPE : OG_ERR_MODEL,
                           "input X is %s but the imputed values are %s", og_dtype_name(t),
                           p->ints ? "int64s" : "floats");
    if (in[0].rank == 0)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL, "input X is a scalar");
    int64_t f = in[0].rank == 1 ? in[0].dims[0] : in[0].rank >= 2 ? in[0].dims[1] : OG_DIM_UNKNOWN;
    if (f >= 0 && p->n_imp != 1 && p->n_imp != f)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "%lld imputed values for %lld features (1 or F are allowed)",
                           (long long)p->n_imp, (long long)f);
    og_vinfo_copy_shape(&out[0], &in[0]);
    return OG_OK;
}

/* ---- OneHotEncoder -------------------------------------------------------------------- */

static og_status onehot_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"cats_int64s", "cats_strings", "zeros"};
    static const og_attr_type types[] = {OG_ATTR_INTS, OG_ATTR_STRINGS, OG_ATTR_INT};
    og_status st = check_types(c, names, types, 3);
    if (st || (st = alloc_params(c, sizeof(og_onehot_params), params))) return st;
    og_onehot_params *p = *params;
    int ni = 0;
    p->cats_i = og_attr_ints(c->node, "cats_int64s", &ni);
    const og_attr *cs = og_node_attr(c->node, "cats_strings");
    int ns = cs ? cs->n : 0;
    if ((ni > 0) == (ns > 0))
        return og_op_error(c, OG_ERR_MODEL,
                           "exactly one of 'cats_int64s' and 'cats_strings' must be given "
                           "(int64s: %d, strings: %d)",
                           ni, ns);
    p->strings = ns > 0;
    p->cats_s = cs ? cs->strings : NULL;
    p->n_cats = ns > 0 ? ns : ni;
    p->zeros = og_attr_int(c->node, "zeros", 1) != 0;
    p->double_out = og_ml_declared_double(c, 0);
    return OG_OK;
}

static const og_dtype onehot_types[] = {OG_STRING, OG_INT64,  OG_INT32,
                                        OG_FLOAT,  OG_DOUBLE, OG_UNDEFINED};

static og_status onehot_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_onehot_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, onehot_types);
    if (st) return st;
    og_dtype t = in[0].dtype;
    if (t != OG_UNDEFINED && (t == OG_STRING) != p->strings)
        return og_op_error(c, c->runtime ? OG_ERR_TYPE : OG_ERR_MODEL,
                           "input X is %s but the categories are %s", og_dtype_name(t),
                           p->strings ? "strings" : "int64s");
    if (in[0].rank >= OG_MAX_RANK || in[0].rank > 2)
        return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL,
                           "input X has rank %d; at most 2 is allowed", in[0].rank);
    og_dtype od = float_out(t, p->double_out);
    if (in[0].rank < 0) {
        out[0].dtype = od;
        return OG_OK;
    }
    int64_t d[OG_MAX_RANK];
    memcpy(d, in[0].dims, sizeof d);
    d[in[0].rank] = p->n_cats;
    og_vinfo_set(&out[0], od, in[0].rank + 1, d);
    return OG_OK;
}

/* ---- LabelEncoder, CategoryMapper ----------------------------------------------------- */

static void lookup_free(const og_allocator *a, void *params)
{
    og_lookup_params *p = params;
    if (!p) return;
    og_tensor_free(p->keys);
    og_tensor_free(p->values);
    og_tensor_free(p->def);
    og_tensor_free(p->rkeys);
    og_tensor_free(p->rvalues);
    og_tensor_free(p->rdef);
    og_free(a, p);
}

/* A 1-D tensor (or scalar with n 0) from a list attribute. */
static og_status list_tensor(const og_op_ctx *c, const og_attr *at, og_tensor **out)
{
    int64_t n = at->n;
    og_status st;
    switch (at->type) {
    case OG_ATTR_FLOATS:
        st = og_tensor_from_data(OG_FLOAT, 1, &n, at->floats, (size_t)n * sizeof(float), c->alloc,
                                 out);
        break;
    case OG_ATTR_INTS:
        st = og_tensor_from_data(OG_INT64, 1, &n, at->ints, (size_t)n * sizeof(int64_t), c->alloc,
                                 out);
        break;
    case OG_ATTR_STRINGS:
        st = og_tensor_from_strings(1, &n, (const char *const *)at->strings, c->alloc, out);
        break;
    case OG_ATTR_TENSOR: {
        const og_tensor *t = at->t;
        if (t->rank > 1)
            return og_op_error(c, OG_ERR_MODEL, "attribute '%s' has rank %d; it must be 1-D",
                               at->name, t->rank);
        int64_t m = t->numel;
        st = og_tensor_clone(t, c->alloc, out);
        if (!st && t->rank == 0) {
            (*out)->rank = 1;
            (*out)->dims[0] = m;
        }
        break;
    }
    default: return og_op_error(c, OG_ERR_MODEL, "attribute '%s' has the wrong type", at->name);
    }
    return st ? og_error_prefix(st, "attribute '%s'", at->name) : OG_OK;
}

/* The one attribute of names[] that is present (error if none or several). */
static og_status one_of(const og_op_ctx *c, const char *const *names, int n, const char *what,
                        const og_attr **out)
{
    *out = NULL;
    int found = 0;
    for (int i = 0; i < n; i++) {
        const og_attr *a = og_node_attr(c->node, names[i]);
        if (!a) continue;
        *out = a;
        found++;
    }
    if (found != 1)
        return og_op_error(c, OG_ERR_MODEL, "exactly one %s attribute must be given, found %d",
                           what, found);
    return OG_OK;
}

/* A scalar default of dtype dt: default_tensor (v4), else default_<type>, else the spec's
 * ("_Unused", -1, -0.0). */
static og_status default_value(const og_op_ctx *c, og_dtype dt, og_tensor **out)
{
    const og_tensor *dtensor = og_attr_tensor(c->node, "default_tensor");
    if (dtensor) {
        if (dtensor->dtype != dt || dtensor->numel != 1)
            return og_op_error(
                c, OG_ERR_MODEL, "attribute 'default_tensor' must hold one %s, holds %lld %s",
                og_dtype_name(dt), (long long)dtensor->numel, og_dtype_name(dtensor->dtype));
        og_status st = og_tensor_clone(dtensor, c->alloc, out);
        if (!st) (*out)->rank = 0;
        return st;
    }
    if (dt == OG_STRING) {
        const char *s = og_attr_string(c->node, "default_string", "_Unused");
        return og_tensor_from_strings(0, NULL, &s, c->alloc, out);
    }
    og_status st = og_tensor_alloc(dt, 0, NULL, c->alloc, out);
    if (st) return st;
    switch (dt) {
    case OG_FLOAT: *(float *)(*out)->data = og_attr_float(c->node, "default_float", -0.0f); break;
    case OG_DOUBLE: *(double *)(*out)->data = og_attr_float(c->node, "default_float", -0.0f); break;
    case OG_INT64: *(int64_t *)(*out)->data = og_attr_int(c->node, "default_int64", -1); break;
    case OG_INT32:
        *(int32_t *)(*out)->data = (int32_t)og_attr_int(c->node, "default_int64", -1);
        break;
    case OG_INT16:
        *(int16_t *)(*out)->data = (int16_t)og_attr_int(c->node, "default_int64", -1);
        break;
    default: break;
    }
    return OG_OK;
}

/* LabelEncoder 1: classes_strings[i] <-> i, both directions (the input picks one). */
static og_status label_encoder_1(const og_op_ctx *c, og_lookup_params *p)
{
    const og_attr *cls = og_node_attr(c->node, "classes_strings");
    og_status st;
    if (!cls || cls->type != OG_ATTR_STRINGS)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'classes_strings' is missing");
    int64_t n = cls->n;
    if ((st = list_tensor(c, cls, &p->keys)) ||
        (st = og_tensor_alloc(OG_INT64, 1, &n, c->alloc, &p->values)))
        return st;
    for (int64_t i = 0; i < n; i++) ((int64_t *)p->values->data)[i] = i;
    if ((st = og_tensor_clone(p->values, c->alloc, &p->rkeys)) ||
        (st = og_tensor_clone(p->keys, c->alloc, &p->rvalues)) ||
        (st = default_value(c, OG_INT64, &p->def)) || (st = default_value(c, OG_STRING, &p->rdef)))
        return st;
    p->first_wins = true;
    return OG_OK;
}

static og_status label_encoder_parse(const og_op_ctx *c, void **params)
{
    og_status st = alloc_params(c, sizeof(og_lookup_params), params);
    if (st) return st;
    og_lookup_params *p = *params;
    if (c->node->since_version < 2) return label_encoder_1(c, p);
    static const char *const keys[] = {"keys_floats", "keys_int64s", "keys_strings", "keys_tensor"};
    static const char *const vals[] = {"values_floats", "values_int64s", "values_strings",
                                       "values_tensor"};
    int n = c->node->since_version >= 4 ? 4 : 3;
    const og_attr *k = NULL, *v = NULL;
    if ((st = one_of(c, keys, n, "keys_*", &k)) || (st = one_of(c, vals, n, "values_*", &v)) ||
        (st = list_tensor(c, k, &p->keys)) || (st = list_tensor(c, v, &p->values)))
        return st;
    if (p->keys->numel != p->values->numel)
        return og_op_error(c, OG_ERR_MODEL, "%lld keys and %lld values: they must pair up",
                           (long long)p->keys->numel, (long long)p->values->numel);
    static const og_dtype ok[] = {OG_STRING, OG_INT64,  OG_FLOAT,    OG_INT32,
                                  OG_INT16,  OG_DOUBLE, OG_UNDEFINED};
    for (int i = 0; i < 2; i++) {
        og_dtype dt = (i ? p->values : p->keys)->dtype;
        bool found = false;
        for (const og_dtype *t = ok; *t; t++) found = found || *t == dt;
        if (!found)
            return og_op_error(c, OG_ERR_UNSUPPORTED, "%s of type %s are not supported",
                               i ? "values" : "keys", og_dtype_name(dt));
    }
    /* onnxruntime keeps the first of repeated keys, the spec of version 4 the last; only
     * version 4 matches NaN keys to NaNs (version 2 compares bits as a hash map does) */
    p->first_wins = c->node->since_version < 4;
    p->nan_equal = c->node->since_version >= 4;
    return default_value(c, p->values->dtype, &p->def);
}

static og_status category_mapper_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"cats_int64s", "cats_strings", "default_int64",
                                        "default_string"};
    static const og_attr_type types[] = {OG_ATTR_INTS, OG_ATTR_STRINGS, OG_ATTR_INT,
                                         OG_ATTR_STRING};
    og_status st = check_types(c, names, types, 4);
    if (st || (st = alloc_params(c, sizeof(og_lookup_params), params))) return st;
    og_lookup_params *p = *params;
    const og_attr *ci = og_node_attr(c->node, "cats_int64s"),
                  *cs = og_node_attr(c->node, "cats_strings");
    if (!ci || !cs || ci->n != cs->n)
        return og_op_error(c, OG_ERR_MODEL,
                           "attributes 'cats_int64s' and 'cats_strings' must both be given, of "
                           "one length (%d and %d)",
                           ci ? ci->n : 0, cs ? cs->n : 0);
    if ((st = list_tensor(c, cs, &p->keys)) || (st = list_tensor(c, ci, &p->values)) ||
        (st = list_tensor(c, ci, &p->rkeys)) || (st = list_tensor(c, cs, &p->rvalues)) ||
        (st = default_value(c, OG_INT64, &p->def)) || (st = default_value(c, OG_STRING, &p->rdef)))
        return st;
    p->first_wins = true;
    return OG_OK;
}

static og_status lookup_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_lookup_params *p = c->node->params;
    og_dtype t = in[0].dtype, o = OG_UNDEFINED;
    bool both = p->rkeys != NULL;
    if (t != OG_UNDEFINED) {
        if (t == p->keys->dtype)
            o = p->values->dtype;
        else if (both && t == p->rkeys->dtype)
            o = p->rvalues->dtype;
        else
            return og_op_error(c, c->runtime ? OG_ERR_TYPE : OG_ERR_MODEL,
                               "input X is %s; the keys are %s%s%s", og_dtype_name(t),
                               og_dtype_name(p->keys->dtype), both ? " or " : "",
                               both ? og_dtype_name(p->rkeys->dtype) : "");
    } else if (!both) {
        o = p->values->dtype;
    }
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = o;
    return OG_OK;
}

/* ---- FeatureVectorizer ---------------------------------------------------------------- */

static og_status featvec_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "inputdimensions", OG_ATTR_INTS);
    if (st || (st = alloc_params(c, sizeof(og_featvec_params), params))) return st;
    og_featvec_params *p = *params;
    p->dims = og_attr_ints(c->node, "inputdimensions", &p->n_dims);
    if (p->n_dims != c->node->n_in)
        return og_op_error(c, OG_ERR_MODEL, "%d inputs but %d entries in 'inputdimensions'",
                           c->node->n_in, p->n_dims);
    for (int i = 0; i < p->n_dims; i++) {
        if (p->dims[i] < 0 || !og_add_i64(p->total, p->dims[i], &p->total))
            return og_op_error(c, OG_ERR_MODEL, "inputdimensions[%d] is %lld", i,
                               (long long)p->dims[i]);
    }
    p->double_out = og_ml_declared_double(c, 0);
    return OG_OK;
}

static og_status featvec_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_featvec_params *p = c->node->params;
    og_status st;
    bool all_double = true;
    for (int i = 0; i < n_in; i++) {
        if ((st = og_check_dtype(c, in, i, numeric_in))) return st;
        if (in[i].rank == 0)
            return og_op_error(c, c->runtime ? OG_ERR_SHAPE : OG_ERR_MODEL, "input %d is a scalar",
                               i);
        all_double = all_double && in[i].dtype == OG_DOUBLE;
    }
    int64_t n = in[0].rank == 1 ? 1 : in[0].rank >= 2 ? in[0].dims[0] : OG_DIM_UNKNOWN;
    for (int i = 1; c->runtime && i < n_in; i++) {
        int64_t ni = in[i].rank == 1 ? 1 : in[i].dims[0];
        if (ni < n)
            return og_op_error(c, OG_ERR_SHAPE, "input %d has %lld rows, input 0 %lld", i,
                               (long long)ni, (long long)n);
    }
    int64_t d[2] = {n, p->total};
    (void)all_double;
    og_vinfo_set(&out[0], p->double_out ? OG_DOUBLE : OG_FLOAT, 2, d);
    return OG_OK;
}

/* ---- the table ------------------------------------------------------------------------ */

static void free_params(const og_allocator *a, void *params) { og_free(a, params); }

const og_op_def og_ops_ml[] = {
    {"LinearRegressor", "ai.onnx.ml", since_1, 1, 1, 1, 1, linear_parse, free_params, linear_infer,
     0},
    {"LinearClassifier", "ai.onnx.ml", since_1, 1, 1, 2, 2, linear_parse, free_params, linear_infer,
     0},
    {"ArrayFeatureExtractor", "ai.onnx.ml", since_1, 2, 2, 1, 1, NULL, NULL, afe_infer, 0},
    {"ZipMap", "ai.onnx.ml", since_1, 1, 1, 1, 1, zipmap_parse, free_params, zipmap_infer, 0},
    {"Normalizer", "ai.onnx.ml", since_1, 1, 1, 1, 1, normalizer_parse, free_params,
     normalizer_infer, 0},
    {"Scaler", "ai.onnx.ml", since_1, 1, 1, 1, 1, scaler_parse, free_params, scaler_infer, 0},
    {"Binarizer", "ai.onnx.ml", since_1, 1, 1, 1, 1, binarizer_parse, free_params,
     same_numeric_infer, 0},
    {"Imputer", "ai.onnx.ml", since_1, 1, 1, 1, 1, imputer_parse, free_params, imputer_infer, 0},
    {"OneHotEncoder", "ai.onnx.ml", since_1, 1, 1, 1, 1, onehot_parse, free_params, onehot_infer,
     0},
    {"LabelEncoder", "ai.onnx.ml", since_label_encoder, 1, 1, 1, 1, label_encoder_parse,
     lookup_free, lookup_infer, 0},
    {"CategoryMapper", "ai.onnx.ml", since_1, 1, 1, 1, 1, category_mapper_parse, lookup_free,
     lookup_infer, 0},
    {"FeatureVectorizer", "ai.onnx.ml", since_1, 1, -1, 1, 1, featvec_parse, free_params,
     featvec_infer, 0},
    {"TreeEnsembleRegressor", "ai.onnx.ml", since_trees, 1, 1, 1, 1, og_ml_tree_parse,
     og_ml_tree_free, og_ml_tree_infer, 0},
    {"TreeEnsembleClassifier", "ai.onnx.ml", since_trees, 1, 1, 2, 2, og_ml_tree_parse,
     og_ml_tree_free, og_ml_tree_infer, 0},
    {"TreeEnsemble", "ai.onnx.ml", since_5, 1, 1, 1, 1, og_ml_tree_parse, og_ml_tree_free,
     og_ml_tree_infer, 0},
    {0}};
