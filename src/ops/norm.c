/* norm.c: BatchNormalization, InstanceNormalization, LayerNormalization,
 * GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN and Dropout:
 * attributes and shape inference. */
#include <math.h>
#include <string.h>

#include "ops/norm.h"

static og_norm_params *new_params(const og_op_ctx *c)
{
    og_norm_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) og_op_error(c, OG_ERR_NOMEM, "out of memory");
    return p;
}

/* Type checks of the attributes a family op may carry. */
static og_status check_attr_types(const og_op_ctx *c)
{
    static const char *const floats[] = {"epsilon", "momentum", "ratio", "alpha", "beta", "bias"};
    static const char *const ints[] = {"spatial", "training_mode", "is_test", "axis", "stash_type",
                                       "seed",    "num_groups",    "p",       "size"};
    og_status st;
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++)
        if ((st = og_attr_check_type(c, floats[i], OG_ATTR_FLOAT))) return st;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if ((st = og_attr_check_type(c, ints[i], OG_ATTR_INT))) return st;
    return og_attr_check_type(c, "axes", OG_ATTR_INTS);
}

static og_status check_epsilon(const og_op_ctx *c, double eps)
{
    if (!(eps >= 0) || isinf(eps))
        return og_op_error(c, OG_ERR_MODEL, "attribute 'epsilon' is %g, expected >= 0", eps);
    return OG_OK;
}

/* Numel of a vinfo, -1 when not static (or past int64). */
static int64_t vinfo_numel(const og_vinfo *v) { return og_vinfo_numel(v); }

/* ---- BatchNormalization ---------------------------------------------------------- */

static og_status parse_batchnorm(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    int v = n->since_version;
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->epsilon = og_attr_float(n, "epsilon", 1e-5f);
    p->momentum = og_attr_float(n, "momentum", 0.9f);
    p->per_channel = v >= 9 || og_attr_int(n, "spatial", 1) != 0;
    if (v >= 14) {
        p->training = og_attr_int(n, "training_mode", 0) != 0;
    } else if (v >= 7) {
        /* before opset 14, asking for the statistics outputs means training */
        for (int j = 1; j < n->n_out; j++)
            if (n->out[j] >= 0) p->training = true;
    } else {
        p->training = og_attr_int(n, "is_test", 0) == 0;
    }
    if ((st = check_epsilon(c, p->epsilon))) {
        og_free(c->alloc, p);
        return st;
    }
    *params = p;
    return OG_OK;
}

static og_status infer_batchnorm(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_norm_params *p = c->node->params;
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    int v = c->node->since_version;
    og_dtype types[23]; /* float16 in every version, bfloat16 from 14 */
    og_types_with_half(c, og_types_float, 1, 14, types);
    og_status st;
    for (int i = 0; i < 5; i++) {
        if ((st = og_check_dtype(c, in, i, types))) return st;
        if (v < 15 && i > 0 && (i < 3 || v < 14) && (st = og_check_same_dtype(c, in, 0, i)))
            return st;
    }
    if (v >= 14 && (st = og_check_same_dtype(c, in, 3, 4))) return st;
    if ((st = og_check_same_dtype(c, in, 1, 2))) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    int rank = in[0].rank;
    if (rank >= 0 && rank < 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) has rank %d, expected at least 2", rank);
    /* expected parameter shape: [C], or X's shape without N for per-activation */
    og_vinfo pshape;
    og_vinfo_unknown(&pshape);
    if (rank >= 2) {
        if (p->per_channel) {
            pshape.rank = 1;
            pshape.dims[0] = in[0].dims[1];
        } else {
            pshape.rank = rank - 1;
            memcpy(pshape.dims, in[0].dims + 1, (size_t)(rank - 1) * sizeof *pshape.dims);
        }
    }
    int64_t want = vinfo_numel(&pshape);
    for (int i = 1; i < 5; i++) {
        int64_t got = vinfo_numel(&in[i]);
        if (want >= 0 && got >= 0 && got != want)
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) has %lld elements, expected %lld", i,
                               names[i], (long long)got, (long long)want);
    }
    for (int j = 1; j < n_out && j < 5; j++) {
        const og_vinfo *src = pshape.rank >= 0 ? &pshape : &in[3];
        og_vinfo_copy_shape(&out[j], src);
        out[j].dtype = v >= 14 ? in[j <= 2 ? j + 2 : 3].dtype : in[0].dtype;
    }
    (void)n_in;
    return OG_OK;
}

/* ---- InstanceNormalization ------------------------------------------------------- */

static og_status parse_eps_only(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->epsilon = og_attr_float(c->node, "epsilon", 1e-5f);
    if ((st = check_epsilon(c, p->epsilon))) {
        og_free(c->alloc, p);
        return st;
    }
    *params = p;
    return OG_OK;
}

static og_status infer_instancenorm(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                    int n_out)
{
    static const char *const names[] = {"input", "scale", "B"};
    og_dtype types[23]; /* float16; no bfloat16 up to opset 21 */
    og_types_with_half(c, og_types_float, 1, 0, types);
    og_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = og_check_dtype(c, in, i, types))) return st;
        if ((st = og_check_same_dtype(c, in, 0, i))) return st;
    }
    int rank = in[0].rank;
    if (rank >= 0 && rank < 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (input) has rank %d, expected at least 2",
                           rank);
    int64_t C = rank >= 2 && og_dim_known(in[0].dims[1]) ? in[0].dims[1] : -1;
    for (int i = 1; i < 3; i++) {
        int64_t got = vinfo_numel(&in[i]);
        if (C >= 0 && got >= 0 && got != C)
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) has %lld elements, expected %lld", i,
                               names[i], (long long)got, (long long)C);
    }
    og_vinfo_copy_shape(&out[0], &in[0]);
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

/* ---- LayerNormalization ---------------------------------------------------------- */

static og_status parse_layernorm(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->epsilon = og_attr_float(c->node, "epsilon", 1e-5f);
    p->axis = og_attr_int(c->node, "axis", -1);
    int64_t stash = og_attr_int(c->node, "stash_type", 1);
    if (stash == OG_FLOAT || stash == OG_DOUBLE) {
        p->stash = (og_dtype)stash;
    } else {
        st = og_op_error(c, OG_ERR_UNSUPPORTED,
                         "attribute 'stash_type' is %lld; only 1 (float) and 11 (double) are "
                         "supported",
                         (long long)stash);
    }
    if (!st) st = check_epsilon(c, p->epsilon);
    if (st) {
        og_free(c->alloc, p);
        return st;
    }
    *params = p;
    return OG_OK;
}

/* Scale and B must broadcast (numpy-style, right-aligned) into the normalized shape. */
static og_status check_layernorm_param(const og_op_ctx *c, const og_vinfo *x, int axis,
                                       const og_vinfo *w, int i, const char *name)
{
    if (w->rank < 0 || x->rank < 0) return OG_OK;
    int nr = x->rank - axis;
    for (int d = 0; d < w->rank; d++) {
        int64_t wd = w->dims[w->rank - 1 - d];
        int64_t xd = d < nr ? x->dims[x->rank - 1 - d] : 1;
        if (!og_dim_known(wd) || !og_dim_known(xd)) continue;
        if (wd != 1 && wd != xd) {
            char a[128], b[128];
            return og_op_error(c, OG_ERR_SHAPE,
                               "input %d (%s) of shape %s does not broadcast to the normalized "
                               "shape %s (axis %d)",
                               i, name, og_shape_str(w->rank, w->dims, a, sizeof a),
                               og_shape_str(nr, x->dims + axis, b, sizeof b), axis);
        }
    }
    return OG_OK;
}

static og_status infer_layernorm(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_norm_params *p = c->node->params;
    og_dtype types[23]; /* float16 and bfloat16 (opset 17) */
    og_types_with_half(c, og_types_float, 1, 17, types);
    og_status st;
    for (int i = 0; i < n_in && i < 3; i++) {
        if ((st = og_check_dtype(c, in, i, types))) return st;
        if ((st = og_check_same_dtype(c, in, 0, i))) return st;
    }
    og_vinfo_copy_shape(&out[0], &in[0]);
    for (int j = 1; j < n_out && j < 3; j++) out[j].dtype = p->stash;
    int rank = in[0].rank;
    if (rank < 0) return OG_OK;
    int axis;
    if (rank == 0)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) is a scalar, expected rank >= 1");
    if ((st = og_norm_axis(c, p->axis, rank, "attribute 'axis'", &axis))) return st;
    if ((st = check_layernorm_param(c, &in[0], axis, &in[1], 1, "Scale"))) return st;
    if (n_in > 2 && (st = check_layernorm_param(c, &in[0], axis, &in[2], 2, "B"))) return st;
    for (int j = 1; j < n_out && j < 3; j++) {
        out[j].rank = rank;
        for (int d = 0; d < rank; d++) out[j].dims[d] = d < axis ? in[0].dims[d] : 1;
    }
    return OG_OK;
}

/* ---- Dropout --------------------------------------------------------------------- */

static og_status parse_dropout(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->ratio = og_attr_float(c->node, "ratio", 0.5f);
    p->seed = (uint64_t)og_attr_int(c->node, "seed", 0);
    if (!(p->ratio >= 0 && p->ratio <= 1)) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'ratio' is %g, expected 0..1", p->ratio);
        og_free(c->alloc, p);
        return st;
    }
    *params = p;
    return OG_OK;
}

static og_status infer_dropout(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    int v = c->node->since_version;
    og_dtype types[23], ratio_types[23]; /* data: float16, bfloat16 from 13; ratio: float16 */
    og_status st = og_check_dtype(c, in, 0, og_types_with_half(c, og_types_float, 1, 13, types));
    if (st) return st;
    if (v >= 12 && n_in > 1) {
        static const og_dtype bools[] = {OG_BOOL, OG_UNDEFINED};
        og_types_with_half(c, og_types_float, 1, 0, ratio_types);
        if ((st = og_check_dtype(c, in, 1, ratio_types))) return st;
        if (n_in > 2 && (st = og_check_dtype(c, in, 2, bools))) return st;
        for (int i = 1; i < n_in && i < 3; i++) {
            int64_t n = vinfo_numel(&in[i]);
            if (in[i].dtype != OG_UNDEFINED && n >= 0 && n != 1)
                return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) has %lld elements, expected 1",
                                   i, i == 1 ? "ratio" : "training_mode", (long long)n);
        }
        const og_tensor *r = in[1].value;
        if (r && r->numel == 1) {
            double ratio = og_tensor_get_f64(r, 0);
            if (!(ratio >= 0 && ratio <= 1))
                return og_op_error(c, OG_ERR_RUNTIME, "input 1 (ratio) is %g, expected 0..1",
                                   ratio);
        }
    }
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (n_out > 1) {
        og_vinfo_copy_shape(&out[1], &in[0]);
        out[1].dtype = v >= 10 ? OG_BOOL : in[0].dtype;
    }
    return OG_OK;
}

/* ---- GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN --------------- */

/* float16, float, double and bfloat16 (the spec's lists; 16-bit floats compute in float) */
static const og_dtype types_f16[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};

static og_status fail_param(const og_op_ctx *c, og_norm_params *p, og_status st)
{
    og_free(c->alloc, p);
    return st;
}

static og_status parse_groupnorm(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->epsilon = og_attr_float(c->node, "epsilon", 1e-5f);
    p->groups = og_attr_int(c->node, "num_groups", 0);
    int64_t stash = og_attr_int(c->node, "stash_type", 1);
    if (!og_node_attr(c->node, "num_groups"))
        return fail_param(c, p, og_op_error(c, OG_ERR_MODEL, "attribute 'num_groups' is required"));
    if (p->groups < 1)
        return fail_param(c, p,
                          og_op_error(c, OG_ERR_MODEL,
                                      "attribute 'num_groups' is %lld, expected >= 1",
                                      (long long)p->groups));
    if (stash != OG_FLOAT && stash != OG_DOUBLE)
        return fail_param(c, p,
                          og_op_error(c, OG_ERR_UNSUPPORTED,
                                      "attribute 'stash_type' is %lld; only 1 (float) and 11 "
                                      "(double) are supported",
                                      (long long)stash));
    p->stash = (og_dtype)stash;
    if ((st = check_epsilon(c, p->epsilon))) return fail_param(c, p, st);
    *params = p;
    return OG_OK;
}

/* X [N, C, ...]; scale and bias hold one value per group (18) or per channel (21) */
static og_status infer_groupnorm(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_norm_params *p = c->node->params;
    static const char *const names[] = {"X", "scale", "bias"};
    og_status st;
    for (int i = 0; i < 3; i++)
        if ((st = og_check_dtype(c, in, i, types_f16)) || (st = og_check_same_dtype(c, in, 0, i)))
            return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    int rank = in[0].rank;
    if (rank >= 0 && rank < 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) has rank %d, expected at least 2", rank);
    int64_t C = rank >= 2 && og_dim_known(in[0].dims[1]) ? in[0].dims[1] : -1;
    if (C >= 0 && C % p->groups)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 0 (X) has %lld channels, not a multiple of "
                           "num_groups %lld",
                           (long long)C, (long long)p->groups);
    int64_t want = c->node->since_version >= 21 ? C : p->groups;
    for (int i = 1; i < 3; i++) {
        int64_t got = vinfo_numel(&in[i]);
        if (want >= 0 && got >= 0 && got != want)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input %d (%s) has %lld elements, expected %lld (%s)", i, names[i],
                               (long long)got, (long long)want,
                               c->node->since_version >= 21 ? "one per channel" : "one per group");
    }
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

static og_status parse_lpnorm(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->axis = og_attr_int(c->node, "axis", -1);
    p->p = og_attr_int(c->node, "p", 2);
    if (p->p != 1 && p->p != 2)
        return fail_param(c, p,
                          og_op_error(c, OG_ERR_MODEL, "attribute 'p' is %lld, expected 1 or 2",
                                      (long long)p->p));
    *params = p;
    return OG_OK;
}

static og_status infer_same_axis(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_norm_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, types_f16);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank == 0)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 is a scalar, expected rank >= 1");
    int axis;
    if (in[0].rank > 0 && (st = og_norm_axis(c, p->axis, in[0].rank, "attribute 'axis'", &axis)))
        return st;
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

static og_status parse_mvn(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    int n = 0;
    const int64_t *axes = og_attr_ints(c->node, "axes", &n);
    if (!axes) { /* the default: over N and the two spatial axes of [N, C, H, W] */
        static const int64_t dflt[3] = {0, 2, 3};
        axes = dflt;
        n = 3;
    }
    if (n > OG_MAX_RANK)
        return fail_param(c, p,
                          og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'axes' has %d entries", n));
    p->n_axes = n;
    memcpy(p->axes, axes, (size_t)n * sizeof *axes);
    *params = p;
    return OG_OK;
}

static og_status infer_mvn(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_norm_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, types_f16);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    bool seen[OG_MAX_RANK] = {false};
    for (int i = 0; i < p->n_axes; i++) {
        int a;
        if ((st = og_norm_axis(c, p->axes[i], r, "attribute 'axes'", &a))) return st;
        if (seen[a]) return og_op_error(c, OG_ERR_MODEL, "attribute 'axes' repeats axis %d", a);
        seen[a] = true;
    }
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

static og_status parse_lrn(const og_op_ctx *c, void **params)
{
    og_status st = check_attr_types(c);
    if (st) return st;
    og_norm_params *p = new_params(c);
    if (!p) return OG_ERR_NOMEM;
    p->alpha = og_attr_float(c->node, "alpha", 1e-4f);
    p->beta = og_attr_float(c->node, "beta", 0.75f);
    p->bias = og_attr_float(c->node, "bias", 1.0f);
    p->size = og_attr_int(c->node, "size", 0);
    if (!og_node_attr(c->node, "size") || p->size < 1)
        return fail_param(c, p,
                          og_op_error(c, OG_ERR_MODEL, "attribute 'size' is %s, expected >= 1",
                                      og_node_attr(c->node, "size") ? "below 1" : "missing"));
    if (!isfinite(p->alpha) || !isfinite(p->beta) || !isfinite(p->bias))
        return fail_param(
            c, p, og_op_error(c, OG_ERR_MODEL, "attributes alpha, beta and bias must be finite"));
    *params = p;
    return OG_OK;
}

/* LRN: X [N, C, D1, ...] */
static og_status infer_lrn(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_f16);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank >= 0 && in[0].rank < 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, expected at least 2 (N, C, ...)",
                           in[0].rank);
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

const og_op_def og_ops_norm[] = {
    {"BatchNormalization", "", OG_SINCE(BatchNormalization), 5, 5, 1, 5, parse_batchnorm, NULL,
     infer_batchnorm, 0},
    {"InstanceNormalization", "", OG_SINCE(InstanceNormalization), 3, 3, 1, 1, parse_eps_only, NULL,
     infer_instancenorm, 0},
    {"LayerNormalization", "", OG_SINCE(LayerNormalization), 2, 3, 1, 3, parse_layernorm, NULL,
     infer_layernorm, 0},
    {"Dropout", "", OG_SINCE(Dropout), 1, 3, 1, 2, parse_dropout, NULL, infer_dropout, 0},
    {"GroupNormalization", "", OG_SINCE(GroupNormalization), 3, 3, 1, 1, parse_groupnorm, NULL,
     infer_groupnorm, 0},
    {"LpNormalization", "", OG_SINCE(LpNormalization), 1, 1, 1, 1, parse_lpnorm, NULL,
     infer_same_axis, 0},
    {"MeanVarianceNormalization", "", OG_SINCE(MeanVarianceNormalization), 1, 1, 1, 1, parse_mvn,
     NULL, infer_mvn, 0},
    {"LRN", "", OG_SINCE(LRN), 1, 1, 1, 1, parse_lrn, NULL, infer_lrn, 0},
    {0}};
