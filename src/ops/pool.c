/* pool.c: AveragePool, MaxPool, GlobalAveragePool, GlobalMaxPool, LpPool, MaxUnpool,
 * RoiAlign:
 * attributes and shape inference.  The output-size rules follow the ONNX spec (explicit pads with
 * optional ceil_mode, where a last window starting past the input and its begin pad is dropped;
 * auto_pad SAME_UPPER/SAME_LOWER/VALID). */
#include <math.h>
#include <string.h>

#include "ops/pool.h"

/* Kernel sizes, strides and dilations are bounded so that window arithmetic on int64
 * cannot overflow. */
#define POOL_ATTR_MAX ((int64_t)1 << 31)

bool og_pool_dim(const og_pool_params *p, int i, int64_t in, int64_t *out, int64_t *pad_begin)
{
    int64_t k = p->kernel[i], s = p->strides[i], d = p->dilations[i];
    int64_t ext = (k - 1) * d + 1; /* extent of the dilated window */
    int64_t o = 0, pb = 0;
    if (in < 0 || in > ((int64_t)1 << 60)) return false;
    switch (p->auto_pad) {
    case OG_PAD_SAME_UPPER:
    case OG_PAD_SAME_LOWER: {
        o = (in + s - 1) / s;
        int64_t total = (o - 1) * s + ext - in;
        if (total < 0) total = 0;
        pb = p->auto_pad == OG_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        break;
    }
    case OG_PAD_VALID: o = in >= ext ? (in - ext) / s + 1 : 0; break;
    case OG_PAD_NOTSET:
    default: {
        pb = p->pads[i];
        int64_t span = in + p->pads[i] + p->pads[p->nsp + i] - ext;
        if (span < 0) break;
        o = (p->ceil_mode ? (span + s - 1) / s : span / s) + 1;
        /* ceil_mode: a window must start inside the input or its begin pad */
        if (p->ceil_mode && (o - 1) * s >= in + pb) o--;
        break;
    }
    }
    *out = o;
    *pad_begin = pb;
    return o >= 1;
}

/* Read an INTS attribute of `count` entries (or absent: every entry `dflt`), each within
 * [lo, POOL_ATTR_MAX]. */
static og_status read_ints(const og_op_ctx *c, const char *name, int count, int64_t dflt,
                           int64_t lo, int64_t *dst)
{
    int n;
    const int64_t *v = og_attr_ints(c->node, name, &n);
    if (!v || n == 0) {
        for (int i = 0; i < count; i++) dst[i] = dflt;
        return OG_OK;
    }
    if (n != count)
        return og_op_error(c, OG_ERR_MODEL, "attribute '%s' has %d entries, expected %d", name, n,
                           count);
    for (int i = 0; i < n; i++) {
        if (v[i] < lo || v[i] > POOL_ATTR_MAX)
            return og_op_error(c, OG_ERR_MODEL,
                               "attribute '%s' entry %d is %lld, expected %lld..%lld", name, i,
                               (long long)v[i], (long long)lo, (long long)POOL_ATTR_MAX);
        dst[i] = v[i];
    }
    return OG_OK;
}

static og_status parse_pool(const og_op_ctx *c, og_pool_kind kind, bool global, void **params)
{
    const og_node *n = c->node;
    int v = n->since_version;
    og_status st = OG_OK;
    static const char *const int_attrs[] = {"ceil_mode", "count_include_pad", "storage_order", "p"};
    static const char *const ints_attrs[] = {"kernel_shape", "strides", "pads", "dilations"};
    for (size_t i = 0; i < sizeof int_attrs / sizeof *int_attrs; i++)
        if ((st = og_attr_check_type(c, int_attrs[i], OG_ATTR_INT))) return st;
    for (size_t i = 0; i < sizeof ints_attrs / sizeof *ints_attrs; i++)
        if ((st = og_attr_check_type(c, ints_attrs[i], OG_ATTR_INTS))) return st;
    if ((st = og_attr_check_type(c, "auto_pad", OG_ATTR_STRING))) return st;

    og_pool_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->kind = kind;
    p->global = global;
    if (global) goto done;

    int nk;
    og_attr_ints(n, "kernel_shape", &nk);
    if (nk < 1) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'kernel_shape' is required");
        goto fail;
    }
    if (nk > OG_MAX_RANK - 2) {
        st =
            og_op_error(c, OG_ERR_UNSUPPORTED,
                        "attribute 'kernel_shape' has %d entries, at most %d", nk, OG_MAX_RANK - 2);
        goto fail;
    }
    p->nsp = nk;
    if ((st = read_ints(c, "kernel_shape", nk, 1, 1, p->kernel))) goto fail;
    if ((st = read_ints(c, "strides", nk, 1, 1, p->strides))) goto fail;
    if ((st = read_ints(c, "pads", 2 * nk, 0, 0, p->pads))) goto fail;
    bool has_dil = (kind == OG_POOL_MAX && v >= 10) || (kind == OG_POOL_AVG && v >= 19) ||
                   (kind == OG_POOL_LP && v >= 18);
    if (has_dil) {
        if ((st = read_ints(c, "dilations", nk, 1, 1, p->dilations))) goto fail;
    } else {
        for (int i = 0; i < nk; i++) p->dilations[i] = 1;
    }

    int auto_pad = 0;
    if (kind != OG_POOL_UNPOOL && (st = og_attr_auto_pad(c, &auto_pad))) goto fail;
    p->auto_pad = auto_pad; /* the enum follows og_attr_auto_pad's numbering */
    if (v >= 10 && (kind == OG_POOL_AVG || kind == OG_POOL_MAX || v >= 18))
        p->ceil_mode = og_attr_int(n, "ceil_mode", 0) != 0;
    if (kind == OG_POOL_LP) {
        p->p = og_attr_int(n, "p", 2);
        if (p->p < 1 || p->p > 1024) {
            st = og_op_error(c, OG_ERR_MODEL, "attribute 'p' is %lld, expected 1..1024",
                             (long long)p->p);
            goto fail;
        }
    }
    if (kind == OG_POOL_AVG && v >= 7)
        p->count_include_pad = og_attr_int(n, "count_include_pad", 0) != 0;
    if (kind == OG_POOL_MAX && v >= 8) {
        int64_t so = og_attr_int(n, "storage_order", 0);
        if (so != 0 && so != 1) {
            st = og_op_error(c, OG_ERR_MODEL, "attribute 'storage_order' is %lld, expected 0 or 1",
                             (long long)so);
            goto fail;
        }
        p->column_major = so == 1;
    }
done:
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

static og_status parse_avgpool(const og_op_ctx *c, void **params)
{
    return parse_pool(c, OG_POOL_AVG, false, params);
}
static og_status parse_maxpool(const og_op_ctx *c, void **params)
{
    return parse_pool(c, OG_POOL_MAX, false, params);
}
static og_status parse_lppool(const og_op_ctx *c, void **params)
{
    return parse_pool(c, OG_POOL_LP, false, params);
}
static og_status parse_unpool(const og_op_ctx *c, void **params)
{
    return parse_pool(c, OG_POOL_UNPOOL, false, params);
}
static og_status parse_global_avgpool(const og_op_ctx *c, void **params)
{
    return parse_pool(c, OG_POOL_AVG, true, params);
}
static og_status parse_global_maxpool(const og_op_ctx *c, void **params)
{
    return parse_pool(c, OG_POOL_MAX, true, params);
}

static og_status infer_pool(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    static const og_dtype half_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};
    static const og_dtype max12_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16,
                                           OG_INT8,  OG_UINT8,  OG_UNDEFINED};
    const og_pool_params *p = c->node->params;
    /* every pool takes float16, float and double; MaxPool-12 added int8 and uint8
     * (GlobalMaxPool has float types only) */
    const og_dtype *types = p->kind == OG_POOL_MAX && !p->global && c->node->since_version >= 12
                                ? max12_types
                                : half_types;
    og_status st = og_check_dtype(c, in, 0, types);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    int rank = in[0].rank;
    if (rank < 0) {
        if (!p->global) out[0].rank = p->nsp + 2;
    } else if (p->global) {
        if (rank < 2)
            return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) has rank %d, expected at least 2",
                               rank);
        out[0].rank = rank;
        out[0].dims[0] = in[0].dims[0];
        out[0].dims[1] = in[0].dims[1];
        for (int d = 2; d < rank; d++) out[0].dims[d] = 1;
    } else {
        if (rank != p->nsp + 2)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 0 (X) has rank %d, but 'kernel_shape' has %d entries "
                               "(expected rank %d)",
                               rank, p->nsp, p->nsp + 2);
        out[0].rank = rank;
        out[0].dims[0] = in[0].dims[0];
        out[0].dims[1] = in[0].dims[1];
        for (int i = 0; i < p->nsp; i++) {
            int64_t x = in[0].dims[i + 2], o, pb;
            if (!og_dim_known(x)) continue; /* stays unknown */
            if (x > ((int64_t)1 << 60))     /* og_pool_dim's bound: window arithmetic in int64 */
                return og_op_error(c, OG_ERR_SHAPE,
                                   "spatial dim %d of input 0 (X) is %lld, above 2^60", i,
                                   (long long)x);
            if (!og_pool_dim(p, i, x, &o, &pb))
                return og_op_error(c, OG_ERR_SHAPE,
                                   "spatial dim %d of input 0 (X) is %lld: with kernel %lld, "
                                   "stride %lld, dilation %lld and pads %lld+%lld the output "
                                   "would be empty",
                                   i, (long long)x, (long long)p->kernel[i],
                                   (long long)p->strides[i], (long long)p->dilations[i],
                                   (long long)p->pads[i], (long long)p->pads[p->nsp + i]);
            out[0].dims[i + 2] = o;
        }
    }
    if (n_out > 1) {
        og_vinfo_copy_shape(&out[1], &out[0]);
        out[1].dtype = OG_INT64;
    }
    (void)n_in;
    return OG_OK;
}

/* ---- MaxUnpool --------------------------------------------------------------------------- */

bool og_unpool_dim(const og_pool_params *p, int i, int64_t in, int64_t *out)
{
    int64_t o;
    if (in < 1 || !og_mul_i64(in - 1, p->strides[i], &o) ||
        !og_add_i64(o, p->kernel[i] - p->pads[i] - p->pads[p->nsp + i], &o) ||
        o > ((int64_t)1 << 50))
        return false;
    *out = o;
    return o >= 1;
}

/* X [N, C, spatial] and its Indices (into the tensor the windows cover, flattened); the
 * output has the covered size, or output_shape, which may only be larger (the covered
 * block is placed at its start) */
static og_status infer_unpool(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    static const og_dtype types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};
    static const og_dtype i64[] = {OG_INT64, OG_UNDEFINED};
    const og_pool_params *p = c->node->params;
    og_status st;
    if ((st = og_check_dtype(c, in, 0, types)) || (st = og_check_dtype(c, in, 1, i64)) ||
        (n_in > 2 && (st = og_check_dtype(c, in, 2, i64))))
        return st;
    out[0].dtype = in[0].dtype;
    int rank = p->nsp + 2;
    if (in[0].rank >= 0 && in[0].rank != rank)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) has rank %d, expected %d", in[0].rank,
                           rank);
    for (int d = 0; d < in[1].rank && in[0].rank >= 0; d++)
        if (in[1].rank != rank || (og_dim_known(in[0].dims[d]) && og_dim_known(in[1].dims[d]) &&
                                   in[0].dims[d] != in[1].dims[d]))
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (I) does not have the shape of input 0");
    out[0].rank = rank;
    int64_t cover[OG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        cover[d] = out[0].dims[d] = in[0].rank >= 0 ? in[0].dims[d] : OG_DIM_UNKNOWN;
        if (d >= 2 && og_dim_known(in[0].dims[d])) {
            if (!og_unpool_dim(p, d - 2, in[0].dims[d], &cover[d]))
                return og_op_error(c, OG_ERR_SHAPE,
                                   "spatial dim %d: the windows over %lld inputs cover nothing", d,
                                   (long long)in[0].dims[d]);
            out[0].dims[d] = cover[d];
        } else if (d >= 2) {
            out[0].dims[d] = OG_DIM_UNKNOWN;
        }
    }
    if (n_in < 3 || in[2].dtype == OG_UNDEFINED) return OG_OK;
    const og_tensor *os = in[2].value;
    if (!os) {
        for (int d = 2; d < rank; d++) out[0].dims[d] = OG_DIM_UNKNOWN;
        return c->runtime ? og_op_error(c, OG_ERR_INTERNAL, "output_shape has no value") : OG_OK;
    }
    if (os->numel != rank)
        return og_op_error(c, OG_ERR_SHAPE, "input 2 (output_shape) has %lld entries, expected %d",
                           (long long)os->numel, rank);
    for (int d = 0; d < rank; d++) {
        int64_t v = og_tensor_get_i64(os, d);
        if (v < 0 || (og_dim_known(cover[d]) && v < cover[d]) || v > ((int64_t)1 << 40))
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 2 (output_shape) entry %d is %lld, below the %lld the "
                               "windows cover",
                               d, (long long)v, (long long)cover[d]);
        out[0].dims[d] = v;
    }
    return OG_OK;
}

/* ---- RoiAlign ---------------------------------------------------------------------------- */

static og_status parse_roi_align(const og_op_ctx *c, void **params)
{
    static const char *const ints[] = {"output_height", "output_width", "sampling_ratio"};
    og_status st;
    for (int i = 0; i < 3; i++)
        if ((st = og_attr_check_type(c, ints[i], OG_ATTR_INT))) return st;
    if ((st = og_attr_check_type(c, "spatial_scale", OG_ATTR_FLOAT)) ||
        (st = og_attr_check_type(c, "mode", OG_ATTR_STRING)) ||
        (st = og_attr_check_type(c, "coordinate_transformation_mode", OG_ATTR_STRING)))
        return st;
    const og_node *n = c->node;
    const char *mode = og_attr_string(n, "mode", "avg");
    const char *ctm = og_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    int64_t oh = og_attr_int(n, "output_height", 1), ow = og_attr_int(n, "output_width", 1);
    int64_t sr = og_attr_int(n, "sampling_ratio", 0);
    double scale = og_attr_float(n, "spatial_scale", 1.0f);
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'mode' is '%s', expected avg or max", mode);
    if (n->since_version >= 16 && strcmp(ctm, "half_pixel") != 0 &&
        strcmp(ctm, "output_half_pixel") != 0)
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute 'coordinate_transformation_mode' is '%s', expected "
                           "half_pixel or output_half_pixel",
                           ctm);
    if (oh < 1 || ow < 1 || oh > POOL_ATTR_MAX || ow > POOL_ATTR_MAX || sr < 0 ||
        sr > POOL_ATTR_MAX || !(scale > 0) || isinf(scale))
        return og_op_error(c, OG_ERR_MODEL,
                           "attributes output_height %lld, output_width %lld must be >= 1, "
                           "sampling_ratio %lld >= 0 and spatial_scale %g > 0",
                           (long long)oh, (long long)ow, (long long)sr, scale);
    og_roi_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->out_h = oh;
    p->out_w = ow;
    p->sampling_ratio = sr;
    p->spatial_scale = scale;
    p->max_mode = strcmp(mode, "max") == 0;
    p->half_pixel = n->since_version >= 16 && strcmp(ctm, "half_pixel") == 0;
    *params = p;
    return OG_OK;
}

/* X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] -> [R, C, oh, ow] */
static og_status infer_roi_align(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    static const og_dtype types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};
    static const og_dtype i64[] = {OG_INT64, OG_UNDEFINED};
    const og_roi_params *p = c->node->params;
    og_status st;
    if ((st = og_check_dtype(c, in, 0, types)) || (st = og_check_same_dtype(c, in, 0, 1)) ||
        (st = og_check_dtype(c, in, 2, i64)))
        return st;
    if (in[0].rank >= 0 && in[0].rank != 4)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) has rank %d, expected 4", in[0].rank);
    if (in[1].rank >= 0 && (in[1].rank != 2 || (og_dim_known(in[1].dims[1]) && in[1].dims[1] != 4)))
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (rois) must be [num_rois, 4]");
    if (in[2].rank >= 0 && in[2].rank != 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 2 (batch_indices) has rank %d, expected 1",
                           in[2].rank);
    int64_t R = in[2].rank == 1 ? in[2].dims[0] : OG_DIM_UNKNOWN;
    if (in[1].rank == 2 && og_dim_known(in[1].dims[0])) {
        if (og_dim_known(R) && R != in[1].dims[0])
            return og_op_error(c, OG_ERR_SHAPE,
                               "inputs 1 (rois) and 2 (batch_indices) count "
                               "%lld and %lld regions",
                               (long long)in[1].dims[0], (long long)R);
        R = in[1].dims[0];
    }
    out[0].dtype = in[0].dtype;
    out[0].rank = 4;
    out[0].dims[0] = R;
    out[0].dims[1] = in[0].rank == 4 ? in[0].dims[1] : OG_DIM_UNKNOWN;
    out[0].dims[2] = p->out_h;
    out[0].dims[3] = p->out_w;
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

const og_op_def og_ops_pool[] = {
    {"AveragePool", "", OG_SINCE(AveragePool), 1, 1, 1, 1, parse_avgpool, NULL, infer_pool, 0},
    {"MaxPool", "", OG_SINCE(MaxPool), 1, 1, 1, 2, parse_maxpool, NULL, infer_pool, 0},
    {"GlobalAveragePool", "", OG_SINCE(GlobalAveragePool), 1, 1, 1, 1, parse_global_avgpool, NULL,
     infer_pool, 0},
    {"GlobalMaxPool", "", OG_SINCE(GlobalMaxPool), 1, 1, 1, 1, parse_global_maxpool, NULL,
     infer_pool, 0},
    {"LpPool", "", OG_SINCE(LpPool), 1, 1, 1, 1, parse_lppool, NULL, infer_pool, 0},
    {"MaxUnpool", "", OG_SINCE(MaxUnpool), 2, 3, 1, 1, parse_unpool, NULL, infer_unpool, 0},
    {"RoiAlign", "", OG_SINCE(RoiAlign), 3, 3, 1, 1, parse_roi_align, NULL, infer_roi_align, 0},
    {0}};
