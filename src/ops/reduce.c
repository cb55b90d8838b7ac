/* reduce.c: the reduce family: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare},
 * ArgMax/ArgMin, Softmax/LogSoftmax, Hardmax, CumSum and TopK: attribute parsing and type and shape
 * inference. */
#include <string.h>

#include "ops/reduce_params.h"

/* ReduceMax/ReduceMin's schemas: uint32 and uint64 from opset 1, int8 and uint8 from 12,
 * bool from 20 */
static const og_dtype types_minmax1[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                         OG_UINT32, OG_UINT64, OG_UNDEFINED};
static const og_dtype types_minmax12[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32, OG_INT64,    OG_UINT32,
                                          OG_UINT64, OG_INT8,   OG_UINT8, OG_UNDEFINED};
static const og_dtype types_minmax20[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32, OG_INT64, OG_UINT32,
                                          OG_UINT64, OG_INT8,   OG_UINT8, OG_BOOL,  OG_UNDEFINED};
/* ReduceSum, ReduceMean, ReduceProd, ReduceL1, ReduceSumSquare, and ReduceL2, ReduceLogSum,
 * ReduceLogSumExp (their integer results computed in float64 and cast back) */
static const og_dtype types_sumlike[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                         OG_UINT32, OG_UINT64, OG_UNDEFINED};
static const og_dtype types_index[] = {OG_INT32, OG_INT64, OG_UNDEFINED};

static og_status new_params(const og_op_ctx *c, og_reduce_params **p)
{
    *p = og_calloc(c->alloc, 1, sizeof **p);
    if (!*p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    return OG_OK;
}

static og_status check_int_attrs(const og_op_ctx *c, const char *const *names)
{
    for (; *names; names++) {
        og_status st = og_attr_check_type(c, *names, OG_ATTR_INT);
        if (st) return st;
    }
    return OG_OK;
}

/* ---- Reduce* ---------------------------------------------------------------------- */

static bool is_op(const og_op_ctx *c, const char *name) { return !strcmp(c->node->op_type, name); }

static og_status reduce_parse(const og_op_ctx *c, void **params)
{
    static const char *const ints[] = {"keepdims", "noop_with_empty_axes", NULL};
    og_status st = check_int_attrs(c, ints);
    if (st) return st;
    og_reduce_params *p;
    if ((st = new_params(c, &p))) return st;
    *params = p;
    /* axes moved from attribute to input 1 at 13 for ReduceSum, 18 for the others */
    int input_since = is_op(c, "ReduceSum") ? 13 : 18;
    p->axes_input = c->node->since_version >= input_since;
    p->keepdims = og_attr_int(c->node, "keepdims", 1) != 0;
    p->noop_with_empty_axes = p->axes_input && og_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
    if (!p->axes_input) {
        if ((st = og_attr_check_type(c, "axes", OG_ATTR_INTS))) return st;
        int n;
        const int64_t *axes = og_attr_ints(c->node, "axes", &n);
        if (n > OG_MAX_RANK)
            return og_op_error(c, OG_ERR_MODEL, "attribute 'axes' has %d entries, more than %d", n,
                               OG_MAX_RANK);
        p->n_axes = n;
        if (n) memcpy(p->axes, axes, (size_t)n * sizeof *axes);
    }
    return OG_OK;
}

og_status og_reduce_axes_mask(const og_reduce_params *p, int rank, const og_tensor *axes,
                              bool *mask, bool *noop)
{
    int64_t vals[OG_MAX_RANK];
    int n = 0;
    const char *what = "attribute 'axes'";
    if (p->axes_input) {
        what = "input 1 (axes)";
        if (axes) {
            if (axes->rank > 1)
                return og_error(OG_ERR_SHAPE, "input 1 (axes) must be 1-D, got rank %d",
                                axes->rank);
            if (axes->dtype != OG_INT64 && axes->dtype != OG_INT32)
                return og_error(OG_ERR_TYPE, "input 1 (axes) must be int64, got %s",
                                og_dtype_name(axes->dtype));
            if (axes->numel > OG_MAX_RANK)
                return og_error(OG_ERR_SHAPE, "input 1 (axes) has %lld entries, more than %d",
                                (long long)axes->numel, OG_MAX_RANK);
            n = (int)axes->numel;
            for (int i = 0; i < n; i++) vals[i] = og_tensor_get_i64(axes, i);
        }
    } else {
        n = p->n_axes;
        for (int i = 0; i < n; i++) vals[i] = p->axes[i];
    }
    *noop = false;
    for (int d = 0; d < rank; d++) mask[d] = n == 0;
    if (n == 0) {
        *noop = p->noop_with_empty_axes;
        if (*noop)
            for (int d = 0; d < rank; d++) mask[d] = false;
        return OG_OK;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = vals[i];
        if (a < -(int64_t)rank || a >= rank)
            return og_error(p->axes_input ? OG_ERR_RUNTIME : OG_ERR_MODEL,
                            "%s has value %lld, out of range for rank %d", what, (long long)a,
                            rank);
        mask[a < 0 ? a + rank : a] = true;
    }
    return OG_OK;
}

static og_status reduce_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_reduce_params *p = c->node->params;
    const og_dtype *types = og_types_float;
    int v = c->node->since_version;
    if (is_op(c, "ReduceMax") || is_op(c, "ReduceMin"))
        types = v >= 20 ? types_minmax20 : v >= 12 ? types_minmax12 : types_minmax1;
    else if (is_op(c, "ReduceSum") || is_op(c, "ReduceMean") || is_op(c, "ReduceProd") ||
             is_op(c, "ReduceL1") || is_op(c, "ReduceSumSquare") || is_op(c, "ReduceL2") ||
             is_op(c, "ReduceLogSum") || is_op(c, "ReduceLogSumExp"))
        types = types_sumlike;
    /* float16 in every version, bfloat16 from opset 13 (every Reduce* op's schema); the
     * kernels compute both through float32 copies */
    og_dtype half_types[23];
    og_status st = og_check_dtype(c, in, 0, og_types_with_half(c, types, 1, 13, half_types));
    if (st) return st;
    bool has_axes_in = n_in > 1 && c->node->in[1] >= 0;
    if (has_axes_in && !p->axes_input)
        return og_op_error(c, OG_ERR_MODEL,
                           "takes axes as an attribute in this opset, not as "
                           "input 1");
    if (has_axes_in && (st = og_check_dtype(c, in, 1, types_index))) return st;
    out[0].dtype = in[0].dtype;
    int rank = in[0].rank;
    if (rank < 0) return OG_OK;
    const og_tensor *axes = NULL;
    if (has_axes_in) {
        axes = in[1].value;
        if (!axes && !(in[1].rank == 1 && in[1].dims[0] == 0)) {
            /* axes unknown until run time: only keepdims tells the rank */
            if (p->keepdims) out[0].rank = rank;
            return OG_OK;
        }
    }
    bool mask[OG_MAX_RANK], noop;
    if ((st = og_reduce_axes_mask(p, rank, axes, mask, &noop))) {
        char label[256];
        return og_error_prefix(st, "%s", og_node_label(c->node, label, sizeof label));
    }
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (!mask[d])
            out[0].dims[r++] = in[0].dims[d];
        else if (p->keepdims)
            out[0].dims[r++] = 1;
    }
    out[0].rank = r;
    return OG_OK;
}

/* ---- ArgMax, ArgMin ------------------------------------------------------------------ */

static og_status arg_parse(const og_op_ctx *c, void **params)
{
    static const char *const ints[] = {"axis", "keepdims", "select_last_index", NULL};
    og_status st = check_int_attrs(c, ints);
    if (st) return st;
    og_reduce_params *p;
    if ((st = new_params(c, &p))) return st;
    *params = p;
    p->axis = og_attr_int(c->node, "axis", 0);
    p->keepdims = og_attr_int(c->node, "keepdims", 1) != 0;
    p->select_last_index =
        c->node->since_version >= 12 && og_attr_int(c->node, "select_last_index", 0) != 0;
    return OG_OK;
}

static og_status arg_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_reduce_params *p = c->node->params;
    og_dtype types[23]; /* every integer type; float16 in every version, bfloat16 from 13 */
    og_status st = og_check_dtype(c, in, 0, og_types_with_half(c, og_types_all_int, 1, 13, types));
    if (st) return st;
    out[0].dtype = OG_INT64;
    int rank = in[0].rank, axis;
    if (rank < 0) return OG_OK;
    if ((st = og_norm_axis(c, p->axis, rank, "attribute 'axis'", &axis))) return st;
    if (rank > 0 && in[0].dims[axis] == 0)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has an empty axis %d to take %s over", axis,
                           c->node->op_type);
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (d != axis)
            out[0].dims[r++] = in[0].dims[d];
        else if (p->keepdims)
            out[0].dims[r++] = 1;
    }
    out[0].rank = r;
    return OG_OK;
}

/* ---- Softmax, LogSoftmax ------------------------------------------------------------- */

static og_status softmax_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "axis", OG_ATTR_INT);
    if (st) return st;
    og_reduce_params *p;
    if ((st = new_params(c, &p))) return st;
    *params = p;
    p->legacy_softmax = c->node->since_version < 13;
    p->axis = og_attr_int(c->node, "axis", p->legacy_softmax ? 1 : -1);
    return OG_OK;
}

/* Softmax, LogSoftmax, Hardmax: float16 in every version, bfloat16 from opset 13 (the
 * kernels compute both through float32 copies); the axis checked against the rank. */
static og_status softmax_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_reduce_params *p = c->node->params;
    og_dtype types[23];
    og_status st = og_check_dtype(c, in, 0, og_types_with_half(c, og_types_float, 1, 13, types));
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank >= 0) {
        int axis;
        if ((st = og_norm_axis(c, p->axis, in[0].rank, "attribute 'axis'", &axis))) return st;
    }
    return OG_OK;
}

/* ---- CumSum -------------------------------------------------------------------------- */

static og_status cumsum_parse(const og_op_ctx *c, void **params)
{
    static const char *const ints[] = {"exclusive", "reverse", NULL};
    og_status st = check_int_attrs(c, ints);
    if (st) return st;
    og_reduce_params *p;
    if ((st = new_params(c, &p))) return st;
    *params = p;
    p->exclusive = og_attr_int(c->node, "exclusive", 0) != 0;
    p->reverse = og_attr_int(c->node, "reverse", 0) != 0;
    return OG_OK;
}

static og_status cumsum_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    og_dtype types[23]; /* int32, int64, uint32, uint64; float16 and bfloat16 from CumSum-14 */
    og_status st = og_check_dtype(c, in, 0, og_types_with_half(c, types_sumlike, 14, 14, types));
    if (st || (st = og_check_dtype(c, in, 1, types_index))) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    const og_tensor *a = in[1].value;
    if (!a) return OG_OK;
    if (a->numel != 1 || a->rank > 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (axis) must be a scalar, got %lld values",
                           (long long)a->numel);
    int axis;
    if (in[0].rank >= 0 &&
        (st = og_norm_axis(c, og_tensor_get_i64(a, 0), in[0].rank, "input 1 (axis)", &axis)))
        return st;
    return OG_OK;
}

/* ---- TopK ---------------------------------------------------------------------------- */

static og_status topk_parse(const og_op_ctx *c, void **params)
{
    static const char *const ints[] = {"axis", "k", "largest", "sorted", NULL};
    og_status st = check_int_attrs(c, ints);
    if (st) return st;
    og_reduce_params *p;
    if ((st = new_params(c, &p))) return st;
    *params = p;
    p->axis = og_attr_int(c->node, "axis", -1);
    p->k_input = c->node->since_version >= 10;
    p->largest = c->node->since_version < 11 || og_attr_int(c->node, "largest", 1) != 0;
    p->sorted = c->node->since_version < 11 || og_attr_int(c->node, "sorted", 1) != 0;
    if (!p->k_input) {
        if (!og_node_attr(c->node, "k"))
            return og_op_error(c, OG_ERR_MODEL, "attribute 'k' is required");
        p->k = og_attr_int(c->node, "k", 0);
        if (p->k < 0)
            return og_op_error(c, OG_ERR_MODEL, "attribute 'k' is %lld, must be >= 0",
                               (long long)p->k);
    }
    return OG_OK;
}

static og_status topk_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_reduce_params *p = c->node->params;
    og_dtype types[23]; /* float16 in every version, no bfloat16 up to opset 21 */
    og_status st = og_check_dtype(
        c, in, 0,
        og_types_with_half(c, c->node->since_version >= 11 ? og_types_all_int : og_types_float, 1,
                           0, types));
    if (st) return st;
    if (p->k_input && (n_in < 2 || c->node->in[1] < 0))
        return og_op_error(c, OG_ERR_MODEL, "input 1 (K) is required in this opset");
    if (p->k_input && (st = og_check_dtype(c, in, 1, types_index))) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (n_out > 1) {
        og_vinfo_copy_shape(&out[1], &in[0]);
        out[1].dtype = OG_INT64;
    }
    int64_t k = p->k;
    if (p->k_input) {
        const og_tensor *kt = in[1].value;
        k = -1;
        if (kt) {
            if (kt->numel != 1 || kt->rank > 1)
                return og_op_error(c, OG_ERR_SHAPE,
                                   "input 1 (K) must hold a single value, got %lld values",
                                   (long long)kt->numel);
            k = og_tensor_get_i64(kt, 0);
            if (k < 0)
                return og_op_error(c, OG_ERR_RUNTIME, "input 1 (K) has value %lld, must be >= 0",
                                   (long long)k);
        }
    }
    int rank = in[0].rank, axis;
    if (rank < 0) return OG_OK;
    if (rank == 0) return og_op_error(c, OG_ERR_SHAPE, "input 0 must have rank >= 1");
    if ((st = og_norm_axis(c, p->axis, rank, "attribute 'axis'", &axis))) return st;
    int64_t n = in[0].dims[axis];
    if (k >= 0 && n >= 0 && k > n)
        return og_op_error(c, OG_ERR_RUNTIME, "K is %lld, larger than dim %lld of axis %d",
                           (long long)k, (long long)n, axis);
    for (int j = 0; j < n_out && j < 2; j++) out[j].dims[axis] = k >= 0 ? k : OG_DIM_UNKNOWN;
    return OG_OK;
}

/* ---- table --------------------------------------------------------------------------- */

#define OG_REDUCE_DEF_F(op, flags)                                                                 \
    {                                                                                              \
#op, "", OG_SINCE(op), 1, 2, 1, 1, reduce_parse, NULL, reduce_infer, flags                 \
    }
#define OG_REDUCE_DEF(op) OG_REDUCE_DEF_F(op, 0)

const og_op_def og_ops_reduce[] = {
    OG_REDUCE_DEF_F(ReduceSum, OG_OP_ALIAS_SAME_SIZE),
    OG_REDUCE_DEF_F(ReduceMean, OG_OP_ALIAS_SAME_SIZE),
    OG_REDUCE_DEF_F(ReduceMax, OG_OP_ALIAS_SAME_SIZE),
    OG_REDUCE_DEF_F(ReduceMin, OG_OP_ALIAS_SAME_SIZE),
    OG_REDUCE_DEF_F(ReduceProd, OG_OP_ALIAS_SAME_SIZE),
    OG_REDUCE_DEF(ReduceL1),
    OG_REDUCE_DEF(ReduceL2),
    OG_REDUCE_DEF(ReduceLogSum),
    OG_REDUCE_DEF(ReduceLogSumExp),
    OG_REDUCE_DEF(ReduceSumSquare),
    {"ArgMax", "", OG_SINCE(ArgMax), 1, 1, 1, 1, arg_parse, NULL, arg_infer, 0},
    {"ArgMin", "", OG_SINCE(ArgMin), 1, 1, 1, 1, arg_parse, NULL, arg_infer, 0},
    {"Softmax", "", OG_SINCE(Softmax), 1, 1, 1, 1, softmax_parse, NULL, softmax_infer, 0},
    {"LogSoftmax", "", OG_SINCE(LogSoftmax), 1, 1, 1, 1, softmax_parse, NULL, softmax_infer, 0},
    {"Hardmax", "", OG_SINCE(Hardmax), 1, 1, 1, 1, softmax_parse, NULL, softmax_infer, 0},
    {"CumSum", "", OG_SINCE(CumSum), 2, 2, 1, 1, cumsum_parse, NULL, cumsum_infer, 0},
    {"TopK", "", OG_SINCE(TopK), 1, 2, 2, 2, topk_parse, NULL, topk_infer, 0},
    {0}};
