/* index.c: Gather, GatherElements, GatherND, OneHot, Scatter, ScatterElements, ScatterND,
 * NonZero, Compress, ReverseSequence:
 * attribute parsing and type/shape inference.  Index values are checked by the kernels
 * (they need the data); infer checks ranks, dims and element types. */
#include <string.h>

#include "ops/index_params.h"
#include "ops/op.h"

/* ---- parsing --------------------------------------------------------------------- */

static og_status parse_reduction(const og_op_ctx *c, og_index_params *p)
{
    const og_node *n = c->node;
    og_status st = og_attr_check_type(c, "reduction", OG_ATTR_STRING);
    if (st) return st;
    const char *r = og_attr_string(n, "reduction", "none");
    /* add/mul came with version 16, max/min with 18 */
    if (strcmp(r, "none") == 0)
        p->reduction = OG_SCATTER_NONE;
    else if (strcmp(r, "add") == 0 && n->since_version >= 16)
        p->reduction = OG_SCATTER_ADD;
    else if (strcmp(r, "mul") == 0 && n->since_version >= 16)
        p->reduction = OG_SCATTER_MUL;
    else if (strcmp(r, "max") == 0 && n->since_version >= 18)
        p->reduction = OG_SCATTER_MAX;
    else if (strcmp(r, "min") == 0 && n->since_version >= 18)
        p->reduction = OG_SCATTER_MIN;
    else
        return og_op_error(c, OG_ERR_MODEL, "attribute reduction '%s' is not valid in this version",
                           r);
    return OG_OK;
}

static og_status parse_index(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_status st;
    if ((st = og_attr_check_type(c, "axis", OG_ATTR_INT))) return st;
    if ((st = og_attr_check_type(c, "batch_dims", OG_ATTR_INT))) return st;
    if ((st = og_attr_check_type(c, "batch_axis", OG_ATTR_INT))) return st;
    if ((st = og_attr_check_type(c, "time_axis", OG_ATTR_INT))) return st;
    og_index_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->has_axis = og_node_attr(n, "axis") != NULL;
    p->batch_axis = og_attr_int(n, "batch_axis", 1);
    p->time_axis = og_attr_int(n, "time_axis", 0);
    if (strcmp(n->op_type, "ReverseSequence") == 0 &&
        ((p->batch_axis != 0 && p->batch_axis != 1) || p->time_axis + p->batch_axis != 1)) {
        og_free(c->alloc, p);
        return og_op_error(c, OG_ERR_MODEL,
                           "attributes batch_axis %lld and time_axis %lld must be 0 and 1, or 1 "
                           "and 0",
                           (long long)og_attr_int(n, "batch_axis", 1),
                           (long long)og_attr_int(n, "time_axis", 0));
    }
    bool onehot = strcmp(n->op_type, "OneHot") == 0;
    p->axis = og_attr_int(n, "axis", onehot ? -1 : 0);
    p->batch_dims = og_attr_int(n, "batch_dims", 0);
    if (p->batch_dims < 0) {
        og_free(c->alloc, p);
        return og_op_error(c, OG_ERR_MODEL, "attribute batch_dims is %lld, must be >= 0",
                           (long long)p->batch_dims);
    }
    if (strcmp(n->op_type, "ScatterElements") == 0 || strcmp(n->op_type, "ScatterND") == 0) {
        st = parse_reduction(c, p);
        if (st) {
            og_free(c->alloc, p);
            return st;
        }
    }
    *params = p;
    return OG_OK;
}

/* ---- checks ---------------------------------------------------------------------- */

static const og_dtype index_types[] = {OG_INT32, OG_INT64, OG_UNDEFINED};
static const og_dtype reduce_types[] = {OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64, OG_UNDEFINED};

/* Data of any fixed-size element type moves by element size. */
static og_status check_movable(const og_op_ctx *c, const og_vinfo *in, int i)
{
    if (in[i].dtype != OG_UNDEFINED && og_dtype_size(in[i].dtype) == 0)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "input %d has element type %s, not supported", i,
                           og_dtype_name(in[i].dtype));
    return OG_OK;
}

/* Gather and GatherElements also move strings (their kernels copy each one). */
static og_status check_gatherable(const og_op_ctx *c, const og_vinfo *in, int i)
{
    if (in[i].dtype != OG_UNDEFINED && !og_dtype_is_valid(in[i].dtype))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "input %d has element type %s, not supported", i,
                           og_dtype_name(in[i].dtype));
    return OG_OK;
}

static og_status check_rank(const og_op_ctx *c, int rank, const char *what)
{
    if (rank > OG_MAX_RANK)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "%s would have rank %d, above %d", what, rank,
                           OG_MAX_RANK);
    return OG_OK;
}

/* Two dims that must be equal: fail only when both are known and differ. */
static og_status check_dim(const og_op_ctx *c, int64_t a, int64_t b, const char *what, int axis)
{
    if (a >= 0 && b >= 0 && a != b)
        return og_op_error(c, OG_ERR_SHAPE, "%s: dim %d is %lld, expected %lld", what, axis,
                           (long long)a, (long long)b);
    return OG_OK;
}

/* ---- Gather ---------------------------------------------------------------------- */

static og_status infer_gather(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_index_params *p = c->node->params;
    og_status st;
    if ((st = check_gatherable(c, in, 0)) || (st = og_check_dtype(c, in, 1, index_types)))
        return st;
    out[0].dtype = in[0].dtype;
    if (in[0].rank < 0 || in[1].rank < 0) return OG_OK;
    int r = in[0].rank, q = in[1].rank, axis;
    if (r < 1) return og_op_error(c, OG_ERR_SHAPE, "input 0 (data) must have rank >= 1, got 0");
    if ((st = og_norm_axis(c, p->axis, r, "attribute axis", &axis))) return st;
    if ((st = check_rank(c, r + q - 1, "output"))) return st;
    int k = 0;
    for (int d = 0; d < axis; d++) out[0].dims[k++] = in[0].dims[d];
    for (int d = 0; d < q; d++) out[0].dims[k++] = in[1].dims[d];
    for (int d = axis + 1; d < r; d++) out[0].dims[k++] = in[0].dims[d];
    out[0].rank = k;
    return OG_OK;
}

/* ---- GatherElements -------------------------------------------------------------- */

/* GatherElements and Scatter(Elements): data and indices have one rank; the output of
 * GatherElements has the shape of indices.  Off the axis, indices may not be larger than
 * data. */
static og_status check_elements(const og_op_ctx *c, const og_vinfo *in, int *axis_out)
{
    const og_index_params *p = c->node->params;
    og_status st;
    int r = in[0].rank;
    if (r < 1) return og_op_error(c, OG_ERR_SHAPE, "input 0 (data) must have rank >= 1, got 0");
    if (in[1].rank >= 0 && in[1].rank != r)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (indices) has rank %d, data has rank %d",
                           in[1].rank, r);
    if ((st = og_norm_axis(c, p->axis, r, "attribute axis", axis_out))) return st;
    if (c->runtime)
        for (int d = 0; d < r; d++)
            if (d != *axis_out && in[1].dims[d] > in[0].dims[d])
                return og_op_error(c, OG_ERR_SHAPE,
                                   "input 1 (indices) dim %d is %lld, larger than data's %lld", d,
                                   (long long)in[1].dims[d], (long long)in[0].dims[d]);
    return OG_OK;
}

static og_status infer_gather_elements(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                       og_vinfo *out, int n_out)
{
    og_status st;
    int axis;
    if ((st = check_gatherable(c, in, 0)) || (st = og_check_dtype(c, in, 1, index_types)))
        return st;
    out[0].dtype = in[0].dtype;
    if (in[1].rank >= 0) og_vinfo_set(&out[0], in[0].dtype, in[1].rank, in[1].dims);
    if (in[0].rank < 0) return OG_OK;
    return check_elements(c, in, &axis);
}

/* ---- Scatter / ScatterElements ---------------------------------------------------- */

static og_status check_reduction_type(const og_op_ctx *c, const og_vinfo *in)
{
    const og_index_params *p = c->node->params;
    if (p->reduction == OG_SCATTER_NONE) return OG_OK;
    return og_check_dtype(c, in, 0, reduce_types);
}

static og_status infer_scatter_elements(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                        og_vinfo *out, int n_out)
{
    og_status st;
    int axis;
    if ((st = check_movable(c, in, 0)) || (st = og_check_dtype(c, in, 1, index_types)) ||
        (st = og_check_same_dtype(c, in, 0, 2)) || (st = check_reduction_type(c, in)))
        return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank < 0) return OG_OK;
    if ((st = check_elements(c, in, &axis))) return st;
    if (in[2].rank >= 0 && in[1].rank >= 0) {
        if (in[2].rank != in[1].rank)
            return og_op_error(c, OG_ERR_SHAPE, "input 2 (updates) has rank %d, indices has %d",
                               in[2].rank, in[1].rank);
        for (int d = 0; d < in[1].rank; d++)
            if ((st = check_dim(c, in[2].dims[d], in[1].dims[d], "input 2 (updates)", d)))
                return st;
    }
    return OG_OK;
}

/* ---- GatherND -------------------------------------------------------------------- */

static og_status infer_gather_nd(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_index_params *p = c->node->params;
    og_status st;
    if ((st = check_movable(c, in, 0)) || (st = og_check_dtype(c, in, 1, index_types))) return st;
    out[0].dtype = in[0].dtype;
    if (in[0].rank < 0 || in[1].rank < 0) return OG_OK;
    int r = in[0].rank, q = in[1].rank, b = (int)p->batch_dims;
    if (r < 1 || q < 1)
        return og_op_error(c, OG_ERR_SHAPE, "inputs 0 (data) and 1 (indices) need rank >= 1");
    if (p->batch_dims >= q || p->batch_dims >= r)
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute batch_dims %lld must be below the ranks of data (%d) and "
                           "indices (%d)",
                           (long long)p->batch_dims, r, q);
    for (int d = 0; d < b; d++)
        if ((st = check_dim(c, in[1].dims[d], in[0].dims[d], "input 1 (indices) batch", d)))
            return st;
    int64_t m = in[1].dims[q - 1];
    if (m < 0) return OG_OK; /* the output rank depends on it */
    if (m < 1 || m > r - b)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 1 (indices) last dim is %lld, must be in [1, %d] (data rank %d "
                           "minus batch_dims %d)",
                           (long long)m, r - b, r, b);
    int k = 0;
    for (int d = 0; d < q - 1; d++) out[0].dims[k++] = in[1].dims[d];
    for (int d = b + (int)m; d < r; d++) out[0].dims[k++] = in[0].dims[d];
    if ((st = check_rank(c, k, "output"))) return st;
    out[0].rank = k;
    return OG_OK;
}

/* ---- ScatterND ------------------------------------------------------------------- */

static og_status infer_scatter_nd(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                  int n_out)
{
    og_status st;
    if ((st = check_movable(c, in, 0)) || (st = og_check_dtype(c, in, 1, index_types)) ||
        (st = og_check_same_dtype(c, in, 0, 2)) || (st = check_reduction_type(c, in)))
        return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank < 0 || in[1].rank < 0) return OG_OK;
    int r = in[0].rank, q = in[1].rank;
    if (r < 1 || q < 1)
        return og_op_error(c, OG_ERR_SHAPE, "inputs 0 (data) and 1 (indices) need rank >= 1");
    int64_t m = in[1].dims[q - 1];
    if (m < 0) return OG_OK;
    if (m < 1 || m > r)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 1 (indices) last dim is %lld, must be in [1, %d] (data rank)",
                           (long long)m, r);
    if (in[2].rank < 0) return OG_OK;
    /* updates = indices.shape[:-1] + data.shape[m:] */
    int ur = q - 1 + r - (int)m;
    if (in[2].rank != ur)
        return og_op_error(c, OG_ERR_SHAPE, "input 2 (updates) has rank %d, expected %d",
                           in[2].rank, ur);
    for (int d = 0; d < q - 1; d++)
        if ((st = check_dim(c, in[2].dims[d], in[1].dims[d], "input 2 (updates)", d))) return st;
    for (int d = q - 1; d < ur; d++)
        if ((st = check_dim(c, in[2].dims[d], in[0].dims[d - (q - 1) + (int)m], "input 2 (updates)",
                            d)))
            return st;
    return OG_OK;
}

/* ---- OneHot ---------------------------------------------------------------------- */

/* indices and depth: the schema's numeric types (float16 among them, bfloat16 in no version
 * up to opset 21) */
static const og_dtype onehot_index_types[] = {
    OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_INT8,   OG_INT16,  OG_INT32,
    OG_INT64, OG_UINT8,  OG_UINT16,  OG_UINT32, OG_UINT64, OG_UNDEFINED,
};

static og_status infer_onehot(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_index_params *p = c->node->params;
    og_status st;
    if ((st = og_check_dtype(c, in, 0, onehot_index_types)) ||
        (st = og_check_dtype(c, in, 1, onehot_index_types)) || (st = check_movable(c, in, 2)))
        return st;
    out[0].dtype = in[2].dtype;
    if (in[2].rank >= 0 && og_vinfo_static(&in[2])) {
        int64_t nv = og_vinfo_numel(&in[2]);
        if (nv != 2)
            return og_op_error(c, OG_ERR_SHAPE, "input 2 (values) has %lld elements, expected 2",
                               (long long)nv);
    }
    int64_t depth = OG_DIM_UNKNOWN;
    const og_tensor *dt = in[1].value;
    if (dt) {
        if (dt->numel != 1)
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (depth) has %lld elements, expected 1",
                               (long long)dt->numel);
        double dv = og_tensor_get_f64(dt, 0);
        if (!(dv >= 1.0 && dv < 1e15))
            return og_op_error(c, OG_ERR_RUNTIME, "input 1 (depth) is %g, must be positive", dv);
        depth = (int64_t)dv;
    } else if (c->runtime) {
        return og_op_error(c, OG_ERR_INTERNAL, "input 1 (depth) has no value at run time");
    }
    if (in[0].rank < 0) return OG_OK;
    int q = in[0].rank, axis;
    if ((st = og_norm_axis(c, p->axis, q + 1, "attribute axis", &axis))) return st;
    if ((st = check_rank(c, q + 1, "output"))) return st;
    int k = 0;
    for (int d = 0; d < q; d++) {
        if (d == axis) out[0].dims[k++] = depth;
        out[0].dims[k++] = in[0].dims[d];
    }
    if (axis == q) out[0].dims[k++] = depth;
    out[0].rank = k;
    return OG_OK;
}

/* ---- Compress -------------------------------------------------------------------- */

/* The output takes the selected slices along axis (or the selected elements of the
 * flattened input): their count is the number of true entries of the 1-D condition, which
 * may be shorter than the axis (the rest is dropped) but not longer. */
static og_status infer_compress(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    static const og_dtype bools[] = {OG_BOOL, OG_UNDEFINED};
    const og_index_params *p = c->node->params;
    og_status st;
    if ((st = check_movable(c, in, 0)) || (st = og_check_dtype(c, in, 1, bools))) return st;
    out[0].dtype = in[0].dtype;
    if (in[1].rank > 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (condition) has rank %d, expected 1",
                           in[1].rank);
    int64_t count = OG_DIM_UNKNOWN, len = in[1].rank == 0 ? 1 : in[1].dims[0];
    const og_tensor *cond = in[1].value;
    if (cond) {
        count = 0;
        for (int64_t i = 0; i < cond->numel; i++) count += ((const uint8_t *)cond->data)[i] != 0;
    }
    int r = in[0].rank, axis = -1;
    if (r < 0) return OG_OK;
    int64_t limit = 1;
    if (p->has_axis) {
        if (r < 1) return og_op_error(c, OG_ERR_SHAPE, "input 0 is a scalar, expected rank >= 1");
        if ((st = og_norm_axis(c, p->axis, r, "attribute 'axis'", &axis))) return st;
        limit = in[0].dims[axis];
    } else {
        for (int d = 0; d < r && limit >= 0; d++)
            limit = og_dim_known(in[0].dims[d]) ? limit * in[0].dims[d] : -1;
    }
    if (og_dim_known(len) && limit >= 0 && len > limit)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 1 (condition) has %lld entries, more than the %lld it selects "
                           "from",
                           (long long)len, (long long)limit);
    if (!p->has_axis) {
        out[0].rank = 1;
        out[0].dims[0] = count;
        return OG_OK;
    }
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dims[axis] = count;
    return OG_OK;
}

/* ---- ReverseSequence ------------------------------------------------------------- */

static og_status infer_reverse_sequence(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                        og_vinfo *out, int n_out)
{
    static const og_dtype lens[] = {OG_INT64, OG_UNDEFINED};
    const og_index_params *p = c->node->params;
    og_status st;
    if ((st = check_movable(c, in, 0)) || (st = og_check_dtype(c, in, 1, lens))) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank >= 0 && in[0].rank < 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, expected >= 2", in[0].rank);
    if (in[1].rank >= 0 && in[1].rank != 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (sequence_lens) has rank %d, expected 1",
                           in[1].rank);
    if (in[0].rank >= 2 && in[1].rank == 1)
        return check_dim(c, in[1].dims[0], in[0].dims[p->batch_axis],
                         "input 1 (sequence_lens) against the batch axis", 0);
    return OG_OK;
}

/* ---- table ----------------------------------------------------------------------- */

/* NonZero: [rank, count] int64 indices of the nonzero elements, in C order; the count
 * depends on the data, so it is known only at run time (or for a constant input). */
static og_status infer_nonzero(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    (void)n_in;
    (void)n_out;
    out[0].dtype = OG_INT64;
    if (in[0].rank < 0) return OG_OK;
    out[0].rank = 2;
    out[0].dims[0] = in[0].rank == 0 ? 1 : in[0].rank;
    const og_tensor *t = in[0].value;
    if (!t) return OG_OK;
    int64_t count = 0;
    for (int64_t i = 0; i < t->numel; i++) count += og_tensor_get_f64(t, i) != 0.0;
    out[0].dims[1] = count;
    (void)c;
    return OG_OK;
}

const og_op_def og_ops_index[] = {
    {"NonZero", "", OG_SINCE(NonZero), 1, 1, 1, 1, NULL, NULL, infer_nonzero, 0},
    {"Gather", "", OG_SINCE(Gather), 2, 2, 1, 1, parse_index, NULL, infer_gather, 0},
    {"GatherElements", "", OG_SINCE(GatherElements), 2, 2, 1, 1, parse_index, NULL,
     infer_gather_elements, 0},
    {"GatherND", "", OG_SINCE(GatherND), 2, 2, 1, 1, parse_index, NULL, infer_gather_nd, 0},
    {"OneHot", "", OG_SINCE(OneHot), 3, 3, 1, 1, parse_index, NULL, infer_onehot, 0},
    {"Scatter", "", OG_SINCE(Scatter), 3, 3, 1, 1, parse_index, NULL, infer_scatter_elements, 0},
    {"ScatterElements", "", OG_SINCE(ScatterElements), 3, 3, 1, 1, parse_index, NULL,
     infer_scatter_elements, 0},
    {"ScatterND", "", OG_SINCE(ScatterND), 3, 3, 1, 1, parse_index, NULL, infer_scatter_nd, 0},
    {"Compress", "", OG_SINCE(Compress), 2, 2, 1, 1, parse_index, NULL, infer_compress, 0},
    {"ReverseSequence", "", OG_SINCE(ReverseSequence), 2, 2, 1, 1, parse_index, NULL,
     infer_reverse_sequence, 0},
    {0},
};
