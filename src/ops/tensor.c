/* tensor.c: shape and data-movement ops: what they mean (attributes, type and shape
 * inference).  Kernels are in src/kernels/cpu/tensor.c. */
#include <math.h>
#include <string.h>

#include "ops/tensor_shared.h"

/* ---- small helpers ------------------------------------------------------------------ */

static og_status nomem(const og_op_ctx *c) { return og_op_error(c, OG_ERR_NOMEM, "out of memory"); }

static og_status alloc_params(const og_op_ctx *c, size_t size, void **params)
{
    *params = og_calloc(c->alloc, 1, size);
    return *params ? OG_OK : nomem(c);
}

/* Read the integer list of input i (1-D or scalar, int32/int64) into buf (cap entries).
 * *known is false when the value is not known yet (load time). */
static og_status input_ints(const og_op_ctx *c, const og_vinfo *in, int i, const char *what,
                            int64_t *buf, int cap, int *n, bool *known)
{
    const og_tensor *t = in[i].value;
    *n = 0;
    *known = false;
    if (!t) {
        if (c->runtime) return og_op_error(c, OG_ERR_INTERNAL, "%s has no value at run time", what);
        return OG_OK;
    }
    if (t->rank > 1)
        return og_op_error(c, OG_ERR_SHAPE, "%s must be 1-D, got rank %d", what, t->rank);
    if (t->dtype != OG_INT64 && t->dtype != OG_INT32)
        return og_op_error(c, OG_ERR_TYPE, "%s must be int64 or int32, got %s", what,
                           og_dtype_name(t->dtype));
    if (t->numel > cap)
        return og_op_error(c, OG_ERR_SHAPE, "%s has %lld entries, at most %d allowed here", what,
                           (long long)t->numel, cap);
    for (int64_t j = 0; j < t->numel; j++) buf[j] = og_tensor_get_i64(t, j);
    *n = (int)t->numel;
    *known = true;
    return OG_OK;
}

/* Length of a 1-D input from its shape (-1 when unknown). */
static int64_t input_len(const og_vinfo *v)
{
    if (v->rank == 0) return 1;
    if (v->rank == 1 && v->dims[0] >= 0) return v->dims[0];
    return -1;
}

static og_status check_rank_limit(const og_op_ctx *c, int64_t rank, const char *what)
{
    if (rank > OG_MAX_RANK)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "%s gives rank %lld, above the limit %d", what,
                           (long long)rank, OG_MAX_RANK);
    return OG_OK;
}

/* A shape input i (Reshape's, ConstantOfShape's): its entries into dims when known; when
 * not, out's rank from the input's length where that is known. */
static og_status shape_input(const og_op_ctx *c, const og_vinfo *in, int i, const char *what,
                             int64_t *dims, int *n, bool *known, og_vinfo *out)
{
    og_status st = input_ints(c, in, i, what, dims, OG_MAX_RANK, n, known);
    if (st || *known) return st;
    int64_t len = input_len(&in[i]);
    if (len < 0) return OG_OK;
    if ((st = check_rank_limit(c, len, what))) return st;
    out->rank = (int)len;
    return OG_OK;
}

/* Dims, repeats: no entry may be negative. */
static og_status check_nonneg(const og_op_ctx *c, const int64_t *v, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (v[i] < 0)
            return og_op_error(c, OG_ERR_SHAPE, "%s has negative entry %lld at %d", what,
                               (long long)v[i], i);
    return OG_OK;
}

/* Normalize a list of axes against rank r; duplicates are an error. */
static og_status norm_axes(const og_op_ctx *c, const int64_t *axes, int n, int r, const char *what,
                           int *out)
{
    bool seen[OG_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (axes[i] < -r || axes[i] >= r)
            return og_op_error(c, OG_ERR_MODEL, "%s has value %lld, out of range for rank %d", what,
                               (long long)axes[i], r);
        int a = (int)(axes[i] < 0 ? axes[i] + r : axes[i]);
        if (seen[a])
            return og_op_error(c, OG_ERR_MODEL, "%s repeats axis %lld", what, (long long)axes[i]);
        seen[a] = true;
        out[i] = a;
    }
    return OG_OK;
}

/* ---- Cast --------------------------------------------------------------------------- */

static og_status cast_finish(const og_op_ctx *c, void *params)
{
    int64_t to = og_attr_int(c->node, "to", 0);
    if (!og_dtype_is_valid((og_dtype)to)) /* numbers, bool and strings */
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "attribute 'to' = %lld: cast to %s is not supported", (long long)to,
                           og_dtype_name((og_dtype)to));
    ((og_cast_params *)params)->to = (og_dtype)to;
    return OG_OK;
}

static og_status cast_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_cast_params *p = c->node->params;
    if (in[0].dtype != OG_UNDEFINED && !og_dtype_is_valid(in[0].dtype))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "input 0 has element type %s, not supported",
                           og_dtype_name(in[0].dtype));
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = p->to;
    return OG_OK;
}

/* CastLike: Cast to the element type of input 1 (target_type), whose values are not read.
 * Its `saturate` (19) concerns float8 targets only, which onnxgrad does not have. */
static og_status castlike_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    for (int i = 0; i < 2; i++)
        if (in[i].dtype != OG_UNDEFINED && !og_dtype_is_valid(in[i].dtype))
            return og_op_error(c, OG_ERR_UNSUPPORTED,
                               "input %d (%s) has element type %s, not supported", i,
                               i ? "target_type" : "input", og_dtype_name(in[i].dtype));
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = in[1].dtype;
    return OG_OK;
}

/* ---- Concat ------------------------------------------------------------------------- */

static og_status concat_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_axis_params *p = c->node->params;
    int rank = -1;
    og_dtype dt = OG_UNDEFINED;
    for (int i = 0; i < n_in; i++) {
        if (in[i].dtype != OG_UNDEFINED) {
            if (dt != OG_UNDEFINED && dt != in[i].dtype)
                return og_op_error(c, OG_ERR_TYPE, "input %d has element type %s, input 0 %s", i,
                                   og_dtype_name(in[i].dtype), og_dtype_name(dt));
            dt = in[i].dtype;
        }
        if (in[i].rank >= 0) {
            if (rank >= 0 && rank != in[i].rank)
                return og_op_error(c, OG_ERR_SHAPE, "input %d has rank %d, another input %d", i,
                                   in[i].rank, rank);
            rank = in[i].rank;
        }
    }
    out[0].dtype = dt;
    if (rank < 0) return OG_OK;
    if (rank == 0) return og_op_error(c, OG_ERR_SHAPE, "inputs are scalars, cannot concatenate");
    int axis;
    og_status st = og_norm_axis(c, p->axis, rank, "attribute 'axis'", &axis);
    if (st) return st;
    out[0].rank = rank;
    for (int d = 0; d < rank; d++) {
        int64_t v = d == axis ? 0 : OG_DIM_UNKNOWN;
        for (int i = 0; i < n_in; i++) {
            if (in[i].rank < 0) {
                if (d == axis) v = OG_DIM_UNKNOWN;
                continue;
            }
            int64_t x = in[i].dims[d];
            if (d == axis) {
                if (x < 0 || v < 0)
                    v = OG_DIM_UNKNOWN;
                else if (!og_add_i64(v, x, &v))
                    return og_op_error(c, OG_ERR_SHAPE,
                                       "the inputs' sizes along axis %d sum past int64", axis);
            } else if (x >= 0) {
                if (v >= 0 && v != x) {
                    char a[128], b[128];
                    return og_op_error(c, OG_ERR_SHAPE,
                                       "input %d has shape %s, which does not match %s outside "
                                       "axis %d",
                                       i, og_shape_str(in[i].rank, in[i].dims, a, sizeof a),
                                       og_shape_str(in[0].rank, in[0].dims, b, sizeof b), axis);
                }
                v = x;
            } else if (v == OG_DIM_UNKNOWN) {
                v = x; /* a symbol is better than nothing */
            }
        }
        out[0].dims[d] = v;
    }
    return OG_OK;
}

/* ---- Constant ----------------------------------------------------------------------- */

static void constant_free(const og_allocator *a, void *params)
{
    og_constant_params *p = params;
    if (!p) return;
    og_tensor_free(p->owned);
    og_free(a, p);
}

static og_status constant_parse(const og_op_ctx *c, void **params)
{
    static const char *const names[] = {"value",         "value_float", "value_floats",
                                        "value_int",     "value_ints",  "value_string",
                                        "value_strings", "sparse_value"};
    const og_attr *found = NULL;
    int n_found = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const og_attr *a = og_node_attr(c->node, names[i]);
        if (a) {
            found = a;
            n_found++;
        }
    }
    if (n_found != 1)
        return og_op_error(c, OG_ERR_MODEL, "needs exactly one value attribute, has %d", n_found);
    og_status st = alloc_params(c, sizeof(og_constant_params), params);
    if (st) return st;
    og_constant_params *p = *params;
    const char *nm = found->name;
    if (strcmp(nm, "value") == 0 && found->type == OG_ATTR_TENSOR && found->t) {
        if (!og_dtype_is_valid(found->t->dtype))
            return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'value' has element type %s",
                               og_dtype_name(found->t->dtype));
        p->t = found->t;
        return OG_OK;
    }
    int64_t n = found->n;
    if (strcmp(nm, "value_float") == 0 && found->type == OG_ATTR_FLOAT)
        st = og_tensor_from_data(OG_FLOAT, 0, NULL, &found->f, sizeof(float), c->alloc, &p->owned);
    else if (strcmp(nm, "value_floats") == 0 && found->type == OG_ATTR_FLOATS)
        st = og_tensor_from_data(OG_FLOAT, 1, &n, found->floats, (size_t)n * sizeof(float),
                                 c->alloc, &p->owned);
    else if (strcmp(nm, "value_int") == 0 && found->type == OG_ATTR_INT)
        st =
            og_tensor_from_data(OG_INT64, 0, NULL, &found->i, sizeof(int64_t), c->alloc, &p->owned);
    else if (strcmp(nm, "value_ints") == 0 && found->type == OG_ATTR_INTS)
        st = og_tensor_from_data(OG_INT64, 1, &n, found->ints, (size_t)n * sizeof(int64_t),
                                 c->alloc, &p->owned);
    else if (strcmp(nm, "value_string") == 0 && found->type == OG_ATTR_STRING)
        st = og_tensor_from_strings(0, NULL, (const char *const *)&found->s, c->alloc, &p->owned);
    else if (strcmp(nm, "value_strings") == 0 && found->type == OG_ATTR_STRINGS)
        st =
            og_tensor_from_strings(1, &n, (const char *const *)found->strings, c->alloc, &p->owned);
    else
        return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute '%s' is not supported", nm);
    if (st) return og_error_prefix(st, "Constant attribute '%s'", nm);
    p->t = p->owned;
    return OG_OK;
}

static og_status constant_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    const og_constant_params *p = c->node->params;
    og_vinfo_set(&out[0], p->t->dtype, p->t->rank, p->t->dims);
    out[0].value = p->t; /* static inference sees the data */
    return OG_OK;
}

/* ---- ConstantOfShape ---------------------------------------------------------------- */

static og_status cos_finish(const og_op_ctx *c, void *params)
{
    og_cos_params *p = params;
    p->dtype = OG_FLOAT; /* zero bytes: 0.0f */
    const og_tensor *t = og_attr_tensor(c->node, "value");
    if (!t) return OG_OK;
    if (!og_dtype_is_known(t->dtype))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'value' has element type %s",
                           og_dtype_name(t->dtype));
    if (t->numel != 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'value' has %lld elements, expected 1",
                           (long long)t->numel);
    p->dtype = t->dtype;
    memcpy(p->bytes, t->data, og_dtype_size(t->dtype));
    return OG_OK;
}

static og_status cos_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_cos_params *p = c->node->params;
    out[0].dtype = p->dtype;
    int64_t dims[OG_MAX_RANK];
    int n;
    bool known;
    og_status st = shape_input(c, in, 0, "input 0 (shape)", dims, &n, &known, &out[0]);
    if (st || !known) return st;
    if ((st = check_nonneg(c, dims, n, "input 0 (shape)"))) return st;
    og_vinfo_set(&out[0], p->dtype, n, dims);
    return OG_OK;
}

/* ---- Expand ------------------------------------------------------------------------- */

static og_status expand_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    out[0].dtype = in[0].dtype;
    og_vinfo shp;
    og_vinfo_unknown(&shp);
    int n;
    bool known;
    og_status st = input_ints(c, in, 1, "input 1 (shape)", shp.dims, OG_MAX_RANK, &n, &known);
    if (st) return st;
    if (!known) {
        int64_t len = input_len(&in[1]);
        if (len >= 0 && (st = check_rank_limit(c, len, "input 1 (shape)"))) return st;
        if (len >= 0 && in[0].rank >= 0) out[0].rank = (int)(len > in[0].rank ? len : in[0].rank);
        return OG_OK;
    }
    if ((st = check_nonneg(c, shp.dims, n, "input 1 (shape)"))) return st;
    shp.rank = n;
    const og_vinfo *pair[2] = {&in[0], &shp};
    return og_infer_broadcast(c, pair, 2, &out[0]);
}

/* ---- Flatten ------------------------------------------------------------------------ */

static int64_t dims_product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        if (dims[i] < 0) return OG_DIM_UNKNOWN;
        if (!og_mul_i64(p, dims[i], &p)) return OG_DIM_UNKNOWN;
    }
    return p;
}

static og_status flatten_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_axis_params *p = c->node->params;
    out[0].dtype = in[0].dtype;
    out[0].rank = 2;
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    int64_t axis = p->axis < 0 ? p->axis + r : p->axis;
    if (axis < 0 || axis > r)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'axis' %lld is out of range for rank %d",
                           (long long)p->axis, r);
    out[0].dims[0] = dims_product(in[0].dims, 0, (int)axis);
    out[0].dims[1] = dims_product(in[0].dims, (int)axis, r);
    return OG_OK;
}

/* ---- Identity ----------------------------------------------------------------------- */

/* Identity takes any kind (sequences and optionals since opset 14 and 16): the output is a
 * view of, or shares, its input. */
static og_status identity_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].value = in[0].value;
    return OG_OK;
}

/* ---- Range -------------------------------------------------------------------------- */

static const og_dtype range_types[] = {OG_FLOAT, OG_DOUBLE, OG_INT16,
                                       OG_INT32, OG_INT64,  OG_UNDEFINED};

static og_status range_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    static const char *const names[] = {"start", "limit", "delta"};
    og_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = og_check_dtype(c, in, i, range_types))) return st;
        if ((st = og_check_same_dtype(c, in, 0, i))) return st;
        /* a scalar, or one value in one dim (a dim unknown before the run may be 1) */
        if (in[i].rank > 1 ||
            (in[i].rank == 1 && in[i].dims[0] != 1 && (c->runtime || og_dim_known(in[i].dims[0]))))
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) must be a scalar, has rank %d", i,
                               names[i], in[i].rank);
    }
    out[0].dtype = in[0].dtype;
    out[0].rank = 1;
    if (!in[0].value || !in[1].value || !in[2].value) return OG_OK;
    int64_t n;
    if (og_dtype_is_float(in[0].dtype)) {
        double s = og_tensor_get_f64(in[0].value, 0), l = og_tensor_get_f64(in[1].value, 0),
               d = og_tensor_get_f64(in[2].value, 0);
        if (d == 0 || d != d) return og_op_error(c, OG_ERR_RUNTIME, "input 2 (delta) is %g", d);
        double cnt = ceil((l - s) / d);
        if (!(cnt < 1e15))
            return og_op_error(c, OG_ERR_RUNTIME, "range (%g, %g, %g) is too long", s, l, d);
        n = cnt > 0 ? (int64_t)cnt : 0;
    } else {
        int64_t s = og_tensor_get_i64(in[0].value, 0), l = og_tensor_get_i64(in[1].value, 0),
                d = og_tensor_get_i64(in[2].value, 0);
        if (d == 0) return og_op_error(c, OG_ERR_RUNTIME, "input 2 (delta) is 0");
        /* exact, in unsigned 64-bit: the span of two int64 values and |delta| always fit */
        uint64_t span = 0, ad = d > 0 ? (uint64_t)d : (uint64_t)(-(d + 1)) + 1, cnt = 0;
        if (d > 0 && l > s) span = (uint64_t)l - (uint64_t)s;
        if (d < 0 && s > l) span = (uint64_t)s - (uint64_t)l;
        cnt = span / ad + (span % ad != 0);
        if (cnt >= (uint64_t)1e15)
            return og_op_error(c, OG_ERR_RUNTIME, "range (%lld, %lld, %lld) is too long",
                               (long long)s, (long long)l, (long long)d);
        n = (int64_t)cnt;
    }
    out[0].dims[0] = n;
    return OG_OK;
}

/* ---- Reshape ------------------------------------------------------------------------ */

static og_status reshape_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_reshape_params *p = c->node->params;
    out[0].dtype = in[0].dtype;
    int64_t shp[OG_MAX_RANK];
    int n;
    bool known;
    og_status st = shape_input(c, in, 1, "input 1 (shape)", shp, &n, &known, &out[0]);
    if (st || !known) return st;
    int r = in[0].rank, neg = -1;
    out[0].rank = n;
    for (int i = 0; i < n; i++) {
        int64_t v = shp[i];
        if (v < -1)
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (shape) has invalid entry %lld at %d",
                               (long long)v, i);
        if (v == -1) {
            if (neg >= 0)
                return og_op_error(c, OG_ERR_SHAPE, "input 1 (shape) has more than one -1");
            neg = i;
            continue;
        }
        if (v == 0 && !p->allowzero) {
            if (r >= 0 && i >= r)
                return og_op_error(c, OG_ERR_SHAPE,
                                   "input 1 (shape) has 0 at %d, beyond the input's rank %d", i, r);
            v = r >= 0 ? in[0].dims[i] : OG_DIM_UNKNOWN;
        }
        out[0].dims[i] = v;
    }
    if (p->allowzero && neg >= 0)
        for (int i = 0; i < n; i++)
            if (shp[i] == 0)
                return og_op_error(c, OG_ERR_SHAPE,
                                   "input 1 (shape) has both 0 and -1 with allowzero=1");
    int64_t total = r >= 0 ? dims_product(in[0].dims, 0, r) : OG_DIM_UNKNOWN;
    int64_t rest = 1;
    for (int i = 0; i < n && rest >= 0; i++) {
        if (i == neg) continue;
        if (out[0].dims[i] < 0)
            rest = OG_DIM_UNKNOWN;
        else if (!og_mul_i64(rest, out[0].dims[i], &rest))
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 1 (shape) asks for more elements than int64 can count");
    }
    if (neg >= 0) {
        out[0].dims[neg] = OG_DIM_UNKNOWN;
        if (total >= 0 && rest >= 0) {
            if (rest == 0 || total % rest != 0) {
                char a[128], b[128];
                return og_op_error(c, OG_ERR_SHAPE, "cannot reshape %s into %s",
                                   og_shape_str(r, in[0].dims, a, sizeof a),
                                   og_shape_str(n, shp, b, sizeof b));
            }
            out[0].dims[neg] = total / rest;
        }
    } else if (total >= 0 && rest >= 0 && total != rest) {
        char a[128], b[128];
        return og_op_error(c, OG_ERR_SHAPE, "cannot reshape %s (%lld elements) into %s",
                           og_shape_str(r, in[0].dims, a, sizeof a), (long long)total,
                           og_shape_str(n, shp, b, sizeof b));
    }
    return OG_OK;
}

/* ---- Shape, Size -------------------------------------------------------------------- */

static og_status shape_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    out[0].dtype = OG_INT64;
    out[0].rank = 1;
    if (in[0].rank >= 0) {
        int64_t s, e;
        og_shape_range(c->node->params, in[0].rank, &s, &e);
        out[0].dims[0] = e - s;
    }
    return OG_OK;
}

static og_status size_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    og_vinfo_set(&out[0], OG_INT64, 0, NULL);
    return OG_OK;
}

/* ---- Squeeze, Unsqueeze ------------------------------------------------------------- */

/* The axes of Squeeze/Unsqueeze, from the attribute (before 13) or input 1. */
typedef struct axes_arg {
    int64_t v[OG_MAX_RANK];
    int n;
    bool has;         /* axes are given at all */
    bool known;       /* their values are known (an input's may not be at load time) */
    const char *what; /* where they come from, for messages */
} axes_arg;

static og_status get_axes(const og_op_ctx *c, const og_vinfo *in, int n_in, axes_arg *a)
{
    const og_axes_params *p = c->node->params;
    a->n = 0;
    a->known = true;
    if (c->node->since_version < 13) {
        a->what = "attribute 'axes'";
        a->has = p->n_axes >= 0;
        if (a->has) a->n = p->n_axes;
        memcpy(a->v, p->axes, sizeof p->axes);
        return OG_OK;
    }
    a->what = "input 1 (axes)";
    a->has = n_in > 1 && c->node->in[1] >= 0;
    if (!a->has) return OG_OK;
    return input_ints(c, in, 1, a->what, a->v, OG_MAX_RANK, &a->n, &a->known);
}

static og_status squeeze_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    out[0].dtype = in[0].dtype;
    axes_arg a;
    og_status st = get_axes(c, in, n_in, &a);
    if (st) return st;
    int r = in[0].rank, ax[OG_MAX_RANK];
    if (a.has && a.known && a.n == 0) a.has = false; /* empty axes: squeeze every 1 */
    if (a.has && !a.known) {
        int64_t len = input_len(&in[1]);
        if (r >= 0 && len > 0 && len <= r) out[0].rank = r - (int)len;
        return OG_OK;
    }
    if (r < 0) return OG_OK;
    bool drop[OG_MAX_RANK] = {false};
    if (a.has) {
        if ((st = norm_axes(c, a.v, a.n, r, a.what, ax))) return st;
        for (int i = 0; i < a.n; i++) {
            if (in[0].dims[ax[i]] >= 0 && in[0].dims[ax[i]] != 1)
                return og_op_error(c, OG_ERR_SHAPE, "cannot squeeze axis %d of size %lld", ax[i],
                                   (long long)in[0].dims[ax[i]]);
            drop[ax[i]] = true;
        }
    } else {
        for (int d = 0; d < r; d++) {
            if (in[0].dims[d] < 0) return OG_OK; /* which dims go is unknown */
            drop[d] = in[0].dims[d] == 1;
        }
    }
    int k = 0;
    for (int d = 0; d < r; d++)
        if (!drop[d]) out[0].dims[k++] = in[0].dims[d];
    out[0].rank = k;
    return OG_OK;
}

static og_status unsqueeze_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    out[0].dtype = in[0].dtype;
    axes_arg a;
    og_status st = get_axes(c, in, n_in, &a);
    if (st) return st;
    if (!a.has) return og_op_error(c, OG_ERR_MODEL, "input 1 (axes) is required");
    int r = in[0].rank, ax[OG_MAX_RANK];
    if (!a.known) {
        int64_t len = input_len(&in[1]);
        if (r >= 0 && len >= 0) {
            if ((st = check_rank_limit(c, r + len, "unsqueezing"))) return st;
            out[0].rank = r + (int)len;
        }
        return OG_OK;
    }
    if (r < 0) return OG_OK;
    if ((st = check_rank_limit(c, (int64_t)r + a.n, "unsqueezing"))) return st;
    int R = r + a.n;
    if ((st = norm_axes(c, a.v, a.n, R, a.what, ax))) return st;
    bool add[OG_MAX_RANK] = {false};
    for (int i = 0; i < a.n; i++) add[ax[i]] = true;
    for (int d = 0, k = 0; d < R; d++) out[0].dims[d] = add[d] ? 1 : in[0].dims[k++];
    out[0].rank = R;
    return OG_OK;
}

/* ---- Split -------------------------------------------------------------------------- */

static og_status split_finish(const og_op_ctx *c, void *params)
{
    const og_split_params *p = params;
    if (c->node->since_version >= 18 && og_node_attr(c->node, "num_outputs") &&
        p->num_outputs != c->node->n_out)
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute 'num_outputs' is %lld but node has %d outputs",
                           (long long)p->num_outputs, c->node->n_out);
    return OG_OK;
}

static og_status split_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    const og_split_params *p = c->node->params;
    for (int i = 0; i < n_out; i++) out[i].dtype = in[0].dtype;
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    int axis;
    og_status st = og_norm_axis(c, p->axis, r, "attribute 'axis'", &axis);
    if (st) return st;
    if (r == 0) return og_op_error(c, OG_ERR_SHAPE, "cannot split a scalar");
    int64_t dim = in[0].dims[axis];
    int64_t *sizes = NULL;
    int n = -1;
    bool from_input = c->node->since_version >= 13 && n_in > 1 && c->node->in[1] >= 0;
    if (from_input) {
        if (in[1].value) {
            if ((st = og_read_int_list(c, in[1].value, "input 1 (split)", &sizes, &n))) return st;
        }
    } else if (p->n_split >= 0) {
        n = p->n_split;
    }
    const int64_t *sz = from_input ? sizes : p->split;
    for (int i = 0; i < n_out; i++) {
        og_vinfo_copy_shape(&out[i], &in[0]);
        out[i].dims[axis] = OG_DIM_UNKNOWN;
    }
    if (n >= 0) {
        if (n != n_out) {
            st = og_op_error(c, OG_ERR_MODEL, "split has %d entries for %d outputs", n, n_out);
            goto done;
        }
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (sz[i] < 0) {
                st =
                    og_op_error(c, OG_ERR_SHAPE, "split has negative entry %lld", (long long)sz[i]);
                goto done;
            }
            if (!og_add_i64(sum, sz[i], &sum)) {
                st = og_op_error(c, OG_ERR_SHAPE, "split sizes sum past int64");
                goto done;
            }
            out[i].dims[axis] = sz[i];
        }
        if (dim >= 0 && sum != dim)
            st = og_op_error(c, OG_ERR_SHAPE, "split sums to %lld, axis %d has size %lld",
                             (long long)sum, axis, (long long)dim);
    } else if (!from_input && dim >= 0) {
        int64_t parts = n_out, chunk = (dim + parts - 1) / parts;
        if (dim % parts != 0 && c->node->since_version < 18) {
            st = og_op_error(c, OG_ERR_SHAPE,
                             "axis %d of size %lld does not split into %d equal "
                             "parts",
                             axis, (long long)dim, n_out);
            goto done;
        }
        for (int i = 0; i < n_out; i++) {
            int64_t left = dim - chunk * i;
            out[i].dims[axis] = left < 0 ? 0 : (left < chunk ? left : chunk);
        }
    }
done:
    og_free(c->alloc, sizes);
    return st;
}

/* ---- Slice -------------------------------------------------------------------------- */

static og_status slice_parse(const og_op_ctx *c, void **params)
{
    og_status st = alloc_params(c, sizeof(og_slice_params), params);
    if (st || c->node->since_version >= 10) return st;
    og_slice_params *p = *params;
    int ns, ne, na;
    const int64_t *s = og_attr_ints(c->node, "starts", &ns);
    const int64_t *e = og_attr_ints(c->node, "ends", &ne);
    const int64_t *a = og_attr_ints(c->node, "axes", &na);
    if (!s || !e)
        return og_op_error(c, OG_ERR_MODEL, "attributes 'starts' and 'ends' are required");
    if (ns != ne || (a && na != ns))
        return og_op_error(c, OG_ERR_MODEL, "starts, ends and axes have %d, %d and %d entries", ns,
                           ne, a ? na : ns);
    if (ns > OG_MAX_RANK)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'starts' has %d entries", ns);
    p->n = ns;
    p->has_axes = a != NULL;
    memcpy(p->starts, s, (size_t)ns * sizeof *s);
    memcpy(p->ends, e, (size_t)ns * sizeof *e);
    if (a) memcpy(p->axes, a, (size_t)ns * sizeof *a);
    return OG_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

og_status og_tensor_slice_resolve(const og_op_ctx *c, const og_vinfo *in, int n_in, int64_t *starts,
                                  int64_t *steps, int64_t *out_dims, bool *known)
{
    int r = in[0].rank;
    int64_t st_[OG_MAX_RANK], en[OG_MAX_RANK], axes[OG_MAX_RANK], sp[OG_MAX_RANK];
    int ns = 0, ne = 0, na = 0, nsp = 0, ax[OG_MAX_RANK];
    bool k1 = true, k2 = true, k3 = true, k4 = true;
    og_status st;
    *known = true;
    for (int d = 0; d < r; d++) {
        starts[d] = 0;
        steps[d] = 1;
        out_dims[d] = in[0].dims[d];
    }
    if (c->node->since_version < 10) {
        const og_slice_params *p = c->node->params;
        ns = ne = na = nsp = p->n;
        memcpy(st_, p->starts, sizeof st_);
        memcpy(en, p->ends, sizeof en);
        for (int i = 0; i < p->n; i++) {
            axes[i] = p->has_axes ? p->axes[i] : i;
            sp[i] = 1;
        }
    } else {
        if ((st = input_ints(c, in, 1, "input 1 (starts)", st_, OG_MAX_RANK, &ns, &k1))) return st;
        if ((st = input_ints(c, in, 2, "input 2 (ends)", en, OG_MAX_RANK, &ne, &k2))) return st;
        if (n_in > 3 && c->node->in[3] >= 0) {
            if ((st = input_ints(c, in, 3, "input 3 (axes)", axes, OG_MAX_RANK, &na, &k3)))
                return st;
        } else {
            na = ns;
            for (int i = 0; i < ns; i++) axes[i] = i;
        }
        if (n_in > 4 && c->node->in[4] >= 0) {
            if ((st = input_ints(c, in, 4, "input 4 (steps)", sp, OG_MAX_RANK, &nsp, &k4)))
                return st;
        } else {
            nsp = ns;
            for (int i = 0; i < ns; i++) sp[i] = 1;
        }
        if (!(k1 && k2 && k3 && k4)) {
            /* Bounds known only at run time: the axes they cut become unknown, the others
             * keep their dims (a [1, 512] buffer cut to [:, :seq] stays [1, ?]) when the
             * axes are known: given, or 0..n-1 from the static length of starts. */
            *known = false;
            int64_t n_axes = input_len(&in[1]);
            bool axes_given = n_in > 3 && c->node->in[3] >= 0;
            bool all = !(axes_given ? k3 : n_axes >= 0 && n_axes <= r);
            for (int i = 0; !all && axes_given && i < na; i++)
                all = axes[i] < -r || axes[i] >= r; /* an error at run time */
            for (int d = 0; d < r; d++)
                if (all) out_dims[d] = OG_DIM_UNKNOWN;
            for (int i = 0; !all && i < (axes_given ? na : (int)n_axes); i++)
                out_dims[axes_given ? (axes[i] + (axes[i] < 0 ? r : 0)) : i] = OG_DIM_UNKNOWN;
            return OG_OK;
        }
        if (!k3) na = ns; /* unreachable, keeps analyzers calm */
    }
    if (ne != ns || na != ns || nsp != ns)
        return og_op_error(c, OG_ERR_SHAPE,
                           "starts, ends, axes and steps have %d, %d, %d and %d entries", ns, ne,
                           na, nsp);
    if ((st = norm_axes(c, axes, ns, r,
                        c->node->since_version < 10 ? "attribute 'axes'" : "input 3 (axes)", ax)))
        return st;
    for (int i = 0; i < ns; i++) {
        int a = ax[i];
        int64_t step = sp[i], dim = in[0].dims[a];
        if (step == 0) return og_op_error(c, OG_ERR_SHAPE, "steps has 0 for axis %d", a);
        if (dim < 0) {
            out_dims[a] = OG_DIM_UNKNOWN;
            *known = false;
            continue;
        }
        int64_t s = st_[i], e = en[i], n;
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (step == INT64_MIN) step = -INT64_MAX;
        if (step > 0) {
            s = clamp64(s, 0, dim);
            e = clamp64(e, 0, dim);
            n = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = clamp64(s, 0, dim - 1);
            e = clamp64(e, -1, dim - 1);
            n = s > e ? (s - e - 1) / -step + 1 : 0;
            if (dim == 0) s = 0;
        }
        starts[a] = s;
        steps[a] = step;
        out_dims[a] = n;
    }
    return OG_OK;
}

static og_status slice_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    if (c->node->since_version >= 10 && n_in < 3)
        return og_op_error(c, OG_ERR_MODEL, "inputs 1 (starts) and 2 (ends) are required");
    if (r < 0) return OG_OK;
    int64_t starts[OG_MAX_RANK], steps[OG_MAX_RANK];
    bool known;
    og_status st = og_tensor_slice_resolve(c, in, n_in, starts, steps, out[0].dims, &known);
    if (st) return st;
    out[0].rank = r;
    return OG_OK;
}

/* ---- Tile --------------------------------------------------------------------------- */

static og_status tile_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    out[0].rank = r;
    int64_t rep[OG_MAX_RANK];
    int n;
    bool known;
    og_status st = input_ints(c, in, 1, "input 1 (repeats)", rep, OG_MAX_RANK, &n, &known);
    if (st) return st;
    if (!known) {
        if (r < 0) out[0].rank = (int)input_len(&in[1]);
        return OG_OK;
    }
    if (r < 0) {
        out[0].rank = n;
        return OG_OK;
    }
    if (n != r)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (repeats) has %d entries for rank %d", n, r);
    if ((st = check_nonneg(c, rep, n, "input 1 (repeats)"))) return st;
    for (int d = 0; d < r; d++) {
        int64_t x = in[0].dims[d];
        out[0].dims[d] = rep[d] == 0 ? 0 : OG_DIM_UNKNOWN;
        if (rep[d] != 0 && x >= 0 && !og_mul_i64(x, rep[d], &out[0].dims[d]))
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 1 (repeats): %lld times axis %d of size %lld overflows int64",
                               (long long)rep[d], d, (long long)x);
    }
    return OG_OK;
}

/* ---- Transpose ---------------------------------------------------------------------- */

static og_status transpose_finish(const og_op_ctx *c, void *params)
{
    og_transpose_params *p = params;
    if (p->n_perm < 0) p->n_perm = 0; /* absent: reverse */
    bool seen[OG_MAX_RANK] = {false};
    for (int i = 0; i < p->n_perm; i++) {
        if (p->perm[i] < 0 || p->perm[i] >= p->n_perm || seen[p->perm[i]])
            return og_op_error(c, OG_ERR_MODEL, "attribute 'perm' is not a permutation of 0..%d",
                               p->n_perm - 1);
        seen[p->perm[i]] = true;
    }
    return OG_OK;
}

static og_status transpose_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_transpose_params *p = c->node->params;
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    if (p->n_perm) {
        if (r >= 0 && r != p->n_perm)
            return og_op_error(c, OG_ERR_SHAPE, "attribute 'perm' has %d entries, input rank %d",
                               p->n_perm, r);
        r = p->n_perm;
    }
    if (r < 0) return OG_OK;
    out[0].rank = r;
    if (in[0].rank < 0) return OG_OK;
    for (int d = 0; d < r; d++) out[0].dims[d] = in[0].dims[p->n_perm ? p->perm[d] : r - 1 - d];
    return OG_OK;
}

/* ---- Trilu -------------------------------------------------------------------------- */

static og_status trilu_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank >= 0 && in[0].rank < 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, needs at least 2", in[0].rank);
    if (n_in > 1 && c->node->in[1] >= 0) {
        if (in[1].dtype != OG_UNDEFINED && in[1].dtype != OG_INT64)
            return og_op_error(c, OG_ERR_TYPE, "input 1 (k) must be int64, got %s",
                               og_dtype_name(in[1].dtype));
        if (in[1].value && in[1].value->numel != 1)
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (k) has %lld elements, expected 1",
                               (long long)in[1].value->numel);
    }
    return OG_OK;
}

/* ---- Pad ---------------------------------------------------------------------------- */

static og_status pad_finish(const og_op_ctx *c, void *params)
{
    og_pad_params *p = params;
    const char *mode = og_attr_string(c->node, "mode", "constant");
    if (strcmp(mode, "constant") == 0)
        p->mode = OG_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0)
        p->mode = OG_PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0)
        p->mode = OG_PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0 && c->node->since_version >= 19)
        p->mode = OG_PAD_WRAP;
    else
        return og_op_error(c, OG_ERR_MODEL, "attribute 'mode' = '%s' is not a pad mode here", mode);
    if (c->node->since_version >= 11) return OG_OK;
    /* before 11, pads and value are attributes; not type-checked: value may be an int */
    int n;
    const int64_t *pads = og_attr_ints(c->node, "pads", &n);
    if (!pads) return og_op_error(c, OG_ERR_MODEL, "attribute 'pads' is required");
    if (n > 2 * OG_MAX_RANK || n % 2)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'pads' has %d entries", n);
    p->n_pads = n;
    memcpy(p->pads, pads, (size_t)n * sizeof *pads);
    p->value = og_attr_float(c->node, "value", 0.0f);
    return OG_OK;
}

og_status og_tensor_pad_resolve(const og_op_ctx *c, const og_vinfo *in, int n_in, int64_t *pb,
                                int64_t *pe, bool *known)
{
    const og_pad_params *p = c->node->params;
    int r = in[0].rank, np, na, ax[OG_MAX_RANK];
    int64_t pads[2 * OG_MAX_RANK], axes[2 * OG_MAX_RANK];
    og_status st;
    *known = true;
    if (c->node->since_version < 11) {
        np = p->n_pads;
        memcpy(pads, p->pads, sizeof pads);
    } else {
        if ((st = input_ints(c, in, 1, "input 1 (pads)", pads, 2 * OG_MAX_RANK, &np, known)))
            return st;
        if (!*known) return OG_OK;
    }
    if (c->node->since_version >= 18 && n_in > 3 && c->node->in[3] >= 0) {
        if ((st = input_ints(c, in, 3, "input 3 (axes)", axes, OG_MAX_RANK, &na, known))) return st;
        if (!*known) return OG_OK;
    } else {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np != 2 * na)
        return og_op_error(c, OG_ERR_SHAPE, "pads has %d entries, expected %d for %d axes", np,
                           2 * na, na);
    if ((st = norm_axes(c, axes, na, r, "input 3 (axes)", ax))) return st;
    for (int d = 0; d < r; d++) pb[d] = pe[d] = 0;
    for (int i = 0; i < na; i++) {
        pb[ax[i]] = pads[i];
        pe[ax[i]] = pads[i + na];
    }
    for (int d = 0; d < r; d++) {
        int64_t x = in[0].dims[d], sz;
        if (x < 0) continue;
        /* a negative pad crops at most the axis; the padded size must fit in int64 */
        if (pb[d] < -x || pe[d] < -x || !og_add_i64(x, pb[d], &sz) || !og_add_i64(sz, pe[d], &sz) ||
            sz < 0)
            return og_op_error(c, OG_ERR_SHAPE, "pads %lld, %lld on axis %d of size %lld",
                               (long long)pb[d], (long long)pe[d], d, (long long)x);
        if (p->mode != OG_PAD_CONSTANT && (pb[d] > 0 || pe[d] > 0) &&
            x + (pb[d] < 0 ? pb[d] : 0) + (pe[d] < 0 ? pe[d] : 0) <= 0)
            return og_op_error(c, OG_ERR_SHAPE, "cannot pad empty axis %d in this mode", d);
    }
    return OG_OK;
}

static og_status pad_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    if (c->node->since_version >= 11 && n_in < 2)
        return og_op_error(c, OG_ERR_MODEL, "input 1 (pads) is required");
    if (r < 0) return OG_OK;
    if (c->node->since_version >= 11 && n_in > 2 && c->node->in[2] >= 0) {
        og_status st = og_check_same_dtype(c, in, 0, 2);
        if (st) return st;
        if (in[2].value && in[2].value->numel != 1)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 2 (constant_value) has %lld elements, expected 1",
                               (long long)in[2].value->numel);
    }
    out[0].rank = r;
    int64_t pb[OG_MAX_RANK], pe[OG_MAX_RANK];
    bool known;
    og_status st = og_tensor_pad_resolve(c, in, n_in, pb, pe, &known);
    if (st || !known) return st;
    for (int d = 0; d < r; d++)
        out[0].dims[d] = in[0].dims[d] >= 0 ? in[0].dims[d] + pb[d] + pe[d] : OG_DIM_UNKNOWN;
    return OG_OK;
}

/* ---- DepthToSpace, SpaceToDepth ----------------------------------------------------- */

static og_status d2s_finish(const og_op_ctx *c, void *params)
{
    og_d2s_params *p = params;
    if (p->blocksize < 1 || p->blocksize > (1 << 20))
        return og_op_error(c, OG_ERR_MODEL, "attribute 'blocksize' is %lld, expected >= 1",
                           (long long)p->blocksize);
    const char *mode = og_attr_string(c->node, "mode", "DCR");
    if (strcmp(c->node->op_type, "DepthToSpace") == 0 && c->node->since_version >= 11 &&
        strcmp(mode, "DCR") != 0) {
        if (strcmp(mode, "CRD") != 0)
            return og_op_error(c, OG_ERR_MODEL, "attribute 'mode' is '%s', expected DCR or CRD",
                               mode);
        p->crd = true;
    }
    return OG_OK;
}

/* [N, C, H, W] -> [N, C/b², H·b, W·b] (DepthToSpace) or [N, C·b², H/b, W/b] */
static og_status d2s_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_d2s_params *p = c->node->params;
    bool d2s = strcmp(c->node->op_type, "DepthToSpace") == 0;
    int64_t b = p->blocksize, bb = b * b;
    if (in[0].dtype != OG_UNDEFINED && !og_dtype_size(in[0].dtype))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "input 0 has element type %s, not supported",
                           og_dtype_name(in[0].dtype));
    out[0].dtype = in[0].dtype;
    if (in[0].rank < 0) return OG_OK;
    if (in[0].rank != 4)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, expected 4 (N, C, H, W)",
                           in[0].rank);
    const int64_t *d = in[0].dims;
    int64_t *o = out[0].dims;
    out[0].rank = 4;
    o[0] = d[0];
    for (int i = 1; i < 4; i++) o[i] = OG_DIM_UNKNOWN;
    if (d2s) {
        if (og_dim_known(d[1]) && d[1] % bb)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 0 has %lld channels, not a multiple of blocksize² = %lld",
                               (long long)d[1], (long long)bb);
        if (og_dim_known(d[1])) o[1] = d[1] / bb;
        for (int i = 2; i < 4; i++)
            if (og_dim_known(d[i]) && !og_mul_i64(d[i], b, &o[i]))
                return og_op_error(c, OG_ERR_SHAPE, "output dim %d overflows", i);
    } else {
        for (int i = 2; i < 4; i++) {
            if (og_dim_known(d[i]) && d[i] % b)
                return og_op_error(c, OG_ERR_SHAPE,
                                   "input 0 dim %d is %lld, not a multiple of blocksize %lld", i,
                                   (long long)d[i], (long long)b);
            if (og_dim_known(d[i])) o[i] = d[i] / b;
        }
        if (og_dim_known(d[1]) && !og_mul_i64(d[1], bb, &o[1]))
            return og_op_error(c, OG_ERR_SHAPE, "output channels overflow");
    }
    return OG_OK;
}

/* ---- CenterCropPad ------------------------------------------------------------------ */

og_status og_tensor_ccp_resolve(const og_op_ctx *c, const og_ccp_params *p, int r,
                                const int64_t *in, const int64_t *shape, int n, int64_t *out,
                                int64_t *crop, int64_t *pad)
{
    int axes[OG_MAX_RANK];
    int na = p->n_axes < 0 ? r : p->n_axes;
    if (p->n_axes < 0) {
        for (int i = 0; i < r; i++) axes[i] = i;
    } else {
        og_status st = norm_axes(c, p->axes, p->n_axes, r, "attribute 'axes'", axes);
        if (st) return st;
    }
    if (n != na)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (shape) has %d entries, expected %d (%s)", n,
                           na, p->n_axes < 0 ? "the input's rank" : "one per axis");
    for (int d = 0; d < r; d++) {
        out[d] = in[d];
        crop[d] = pad[d] = 0;
    }
    for (int i = 0; i < na; i++) {
        int a = axes[i];
        if (shape[i] < 0)
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (shape) has negative entry %lld",
                               (long long)shape[i]);
        out[a] = shape[i];
        if (!og_dim_known(in[a])) continue;
        /* the odd cell of a crop or pad goes at the end */
        if (shape[i] < in[a])
            crop[a] = (in[a] - shape[i]) / 2;
        else
            pad[a] = (shape[i] - in[a]) / 2;
    }
    return OG_OK;
}

static og_status ccp_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_ccp_params *p = c->node->params;
    if (in[0].dtype != OG_UNDEFINED && !og_dtype_size(in[0].dtype))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "input 0 has element type %s, not supported",
                           og_dtype_name(in[0].dtype));
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    out[0].rank = r;
    memcpy(out[0].dims, in[0].dims, sizeof out[0].dims);
    int64_t shape[OG_MAX_RANK], crop[OG_MAX_RANK], pad[OG_MAX_RANK];
    int n;
    bool known;
    og_status st = input_ints(c, in, 1, "input 1 (shape)", shape, OG_MAX_RANK, &n, &known);
    if (st) return st;
    if (!known) { /* the axes not cropped keep their dims */
        int axes[OG_MAX_RANK];
        if (p->n_axes < 0) {
            for (int d = 0; d < r; d++) out[0].dims[d] = OG_DIM_UNKNOWN;
        } else if (!(st = norm_axes(c, p->axes, p->n_axes, r, "attribute 'axes'", axes))) {
            for (int i = 0; i < p->n_axes; i++) out[0].dims[axes[i]] = OG_DIM_UNKNOWN;
        }
        return st;
    }
    return og_tensor_ccp_resolve(c, p, r, in[0].dims, shape, n, out[0].dims, crop, pad);
}

/* ---- EyeLike ------------------------------------------------------------------------ */

static og_status eyelike_finish(const og_op_ctx *c, void *params)
{
    og_eyelike_params *p = params;
    int64_t dt = og_attr_int(c->node, "dtype", 0);
    if (p->k < -((int64_t)1 << 62) || p->k > ((int64_t)1 << 62)) /* far off any matrix */
        p->k = p->k < 0 ? -((int64_t)1 << 62) : ((int64_t)1 << 62);
    p->dtype = (og_dtype)dt;
    if (dt != 0 && (!og_dtype_is_known((og_dtype)dt) || dt == OG_STRING))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'dtype' = %lld (%s) is not supported",
                           (long long)dt, og_dtype_name((og_dtype)dt));
    return OG_OK;
}

static og_status eyelike_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_eyelike_params *p = c->node->params;
    if (in[0].dtype != OG_UNDEFINED && !og_dtype_size(in[0].dtype))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "input 0 has element type %s, not supported",
                           og_dtype_name(in[0].dtype));
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (p->dtype != OG_UNDEFINED) out[0].dtype = p->dtype;
    if (in[0].rank >= 0 && in[0].rank != 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, expected 2", in[0].rank);
    return OG_OK;
}

/* ---- the tables ---------------------------------------------------------------------- */

/* Attributes of the ops parsed by table (Constant and Slice parse their own). */
static const og_attr_table tensor_attrs[] = {
    {"Cast",
     sizeof(og_cast_params),
     cast_finish,
     {OG_AT_CHECK("to", OG_ATTR_INT, .required_from = 1)}},
    {"CastLike", sizeof(og_cast_params), NULL, {OG_AT_CHECK("saturate", OG_ATTR_INT)}},
    {"Concat",
     sizeof(og_axis_params),
     NULL,
     {OG_AT_I64("axis", og_axis_params, axis, 0, .required_from = 4)}},
    {"ConstantOfShape", sizeof(og_cos_params), cos_finish, {OG_AT_CHECK("value", OG_ATTR_TENSOR)}},
    {"Flatten", sizeof(og_axis_params), NULL, {OG_AT_I64("axis", og_axis_params, axis, 1)}},
    {"Reshape",
     sizeof(og_reshape_params),
     NULL,
     {OG_AT_BOOL("allowzero", og_reshape_params, allowzero, 0, .from = 14)}},
    {"Shape",
     sizeof(og_shape_params),
     NULL,
     {OG_AT_I64("start", og_shape_params, start, 0, .from = 15),
      OG_AT_I64("end", og_shape_params, end, INT64_MAX, .from = 15)}},
    {"Squeeze",
     sizeof(og_axes_params),
     NULL,
     {OG_AT_INTS("axes", og_axes_params, axes, n_axes, OG_MAX_RANK, .until = 13)}},
    {"Unsqueeze",
     sizeof(og_axes_params),
     NULL,
     {OG_AT_INTS("axes", og_axes_params, axes, n_axes, OG_MAX_RANK, .until = 13,
                 .required_from = 1)}},
    {"Split",
     sizeof(og_split_params),
     split_finish,
     {OG_AT_I64("axis", og_split_params, axis, 0),
      OG_AT_INTS("split", og_split_params, split, n_split, 0, .until = 13),
      OG_AT_I64("num_outputs", og_split_params, num_outputs, 0, .from = 18)}},
    {"Transpose",
     sizeof(og_transpose_params),
     transpose_finish,
     {OG_AT_INTS("perm", og_transpose_params, perm, n_perm, OG_MAX_RANK)}},
    {"Trilu", sizeof(og_trilu_params), NULL, {OG_AT_BOOL("upper", og_trilu_params, upper, 1)}},
    {"Pad", sizeof(og_pad_params), pad_finish, {OG_AT_CHECK("mode", OG_ATTR_STRING)}},
    {"DepthToSpace",
     sizeof(og_d2s_params),
     d2s_finish,
     {OG_AT_I64("blocksize", og_d2s_params, blocksize, 0, .required_from = 1),
      OG_AT_CHECK("mode", OG_ATTR_STRING)}},
    {"SpaceToDepth",
     sizeof(og_d2s_params),
     d2s_finish,
     {OG_AT_I64("blocksize", og_d2s_params, blocksize, 0, .required_from = 1)}},
    {"CenterCropPad",
     sizeof(og_ccp_params),
     NULL,
     {OG_AT_INTS("axes", og_ccp_params, axes, n_axes, OG_MAX_RANK)}},
    {"EyeLike",
     sizeof(og_eyelike_params),
     eyelike_finish,
     {OG_AT_I64("k", og_eyelike_params, k, 0), OG_AT_CHECK("dtype", OG_ATTR_INT)}},
    {0}};

static og_status tensor_parse(const og_op_ctx *c, void **params)
{
    return og_parse_attr_table(c, tensor_attrs, params);
}

/* Ops; a parse of tensor_parse has a row in tensor_attrs above. */
const og_op_def og_ops_tensor[] = {
    {"Cast", "", OG_SINCE(Cast), 1, 1, 1, 1, tensor_parse, NULL, cast_infer, 0},
    {"CastLike", "", OG_SINCE(CastLike), 2, 2, 1, 1, tensor_parse, NULL, castlike_infer, 0},
    {"Concat", "", OG_SINCE(Concat), 1, -1, 1, 1, tensor_parse, NULL, concat_infer, 0},
    {"Constant", "", OG_SINCE(Constant), 0, 0, 1, 1, constant_parse, constant_free, constant_infer,
     0},
    {"ConstantOfShape", "", OG_SINCE(ConstantOfShape), 1, 1, 1, 1, tensor_parse, NULL, cos_infer,
     0},
    {"Expand", "", OG_SINCE(Expand), 2, 2, 1, 1, NULL, NULL, expand_infer, 0},
    {"Flatten", "", OG_SINCE(Flatten), 1, 1, 1, 1, tensor_parse, NULL, flatten_infer,
     OG_OP_ALIAS_INPUT0},
    {"Identity", "", OG_SINCE(Identity), 1, 1, 1, 1, NULL, NULL, identity_infer,
     OG_OP_ALIAS_INPUT0 | OG_OP_ANY_KIND},
    {"Range", "", OG_SINCE(Range), 3, 3, 1, 1, NULL, NULL, range_infer, 0},
    {"Reshape", "", OG_SINCE(Reshape), 2, 2, 1, 1, tensor_parse, NULL, reshape_infer,
     OG_OP_ALIAS_INPUT0},
    {"Shape", "", OG_SINCE(Shape), 1, 1, 1, 1, tensor_parse, NULL, shape_infer, 0},
    {"Size", "", OG_SINCE(Size), 1, 1, 1, 1, NULL, NULL, size_infer, 0},
    {"Squeeze", "", OG_SINCE(Squeeze), 1, 2, 1, 1, tensor_parse, NULL, squeeze_infer,
     OG_OP_ALIAS_INPUT0},
    {"Unsqueeze", "", OG_SINCE(Unsqueeze), 1, 2, 1, 1, tensor_parse, NULL, unsqueeze_infer,
     OG_OP_ALIAS_INPUT0},
    {"Split", "", OG_SINCE(Split), 1, 2, 1, -1, tensor_parse, NULL, split_infer, 0},
    {"Slice", "", OG_SINCE(Slice), 1, 5, 1, 1, slice_parse, NULL, slice_infer, 0},
    {"Tile", "", OG_SINCE(Tile), 2, 2, 1, 1, NULL, NULL, tile_infer, 0},
    {"Transpose", "", OG_SINCE(Transpose), 1, 1, 1, 1, tensor_parse, NULL, transpose_infer, 0},
    {"Trilu", "", OG_SINCE(Trilu), 1, 2, 1, 1, tensor_parse, NULL, trilu_infer, 0},
    {"Pad", "", OG_SINCE(Pad), 1, 4, 1, 1, tensor_parse, NULL, pad_infer, 0},
    {"DepthToSpace", "", OG_SINCE(DepthToSpace), 1, 1, 1, 1, tensor_parse, NULL, d2s_infer, 0},
    {"SpaceToDepth", "", OG_SINCE(SpaceToDepth), 1, 1, 1, 1, tensor_parse, NULL, d2s_infer, 0},
    {"CenterCropPad", "", OG_SINCE(CenterCropPad), 2, 2, 1, 1, tensor_parse, NULL, ccp_infer, 0},
    {"EyeLike", "", OG_SINCE(EyeLike), 1, 1, 1, 1, tensor_parse, NULL, eyelike_infer, 0},
    {0}};
