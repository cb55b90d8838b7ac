/* resize.c: Resize (opsets 10..19) and Upsample (7..9): attribute parsing, output sizes
 * and type/shape inference; GridSample (16, 20) and AffineGrid (20): attributes and shapes.
 * The coordinate math lives in src/kernels/cpu/resize.c. */
#include <math.h>
#include <string.h>

#include "ops/resize_params.h"

/* ---- parsing --------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int value;
    int since; /* first Resize version that accepts it */
} og_enum_name;

static const og_enum_name mode_names[] = {
    {"nearest", OG_RESIZE_NEAREST, 0}, {"linear", OG_RESIZE_LINEAR, 0},
    {"bilinear", OG_RESIZE_LINEAR, 0}, /* Upsample's old spelling */
    {"cubic", OG_RESIZE_CUBIC, 11},    {NULL, 0, 0},
};
static const og_enum_name coord_names[] = {
    {"half_pixel", OG_COORD_HALF_PIXEL, 0},
    {"half_pixel_symmetric", OG_COORD_HALF_PIXEL_SYMMETRIC, 19},
    {"pytorch_half_pixel", OG_COORD_PYTORCH_HALF_PIXEL, 0},
    {"align_corners", OG_COORD_ALIGN_CORNERS, 0},
    {"asymmetric", OG_COORD_ASYMMETRIC, 0},
    {"tf_half_pixel_for_nn", OG_COORD_TF_HALF_PIXEL_FOR_NN, 0},
    {"tf_crop_and_resize", OG_COORD_TF_CROP_AND_RESIZE, 0},
    {NULL, 0, 0},
};
static const og_enum_name nearest_names[] = {
    {"round_prefer_floor", OG_NEAREST_ROUND_PREFER_FLOOR, 0},
    {"round_prefer_ceil", OG_NEAREST_ROUND_PREFER_CEIL, 0},
    {"floor", OG_NEAREST_FLOOR, 0},
    {"ceil", OG_NEAREST_CEIL, 0},
    {NULL, 0, 0},
};
static const og_enum_name keep_names[] = {
    {"stretch", OG_KEEP_STRETCH, 0},
    {"not_larger", OG_KEEP_NOT_LARGER, 0},
    {"not_smaller", OG_KEEP_NOT_SMALLER, 0},
    {NULL, 0, 0},
};

static og_status parse_enum(const og_op_ctx *c, const char *attr, const char *dflt,
                            const og_enum_name *names, int *out)
{
    og_status st = og_attr_check_type(c, attr, OG_ATTR_STRING);
    if (st) return st;
    const char *s = og_attr_string(c->node, attr, dflt);
    for (const og_enum_name *e = names; e->name; e++)
        if (strcmp(e->name, s) == 0 && c->node->since_version >= e->since) {
            *out = e->value;
            return OG_OK;
        }
    return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute %s '%s' is not supported", attr, s);
}

static og_status parse_resize(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    bool upsample = strcmp(n->op_type, "Upsample") == 0;
    int v = n->since_version, e = 0;
    og_status st;
    og_resize_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    if ((st = parse_enum(c, "mode", "nearest", mode_names, &e))) goto fail;
    p->mode = (og_resize_mode)e;
    p->cubic_a = -0.75;
    p->in_roi = p->in_sizes = -1;
    if (upsample || v < 11) {
        /* Upsample and Resize-10 map coordinates as x / scale */
        p->coord = OG_COORD_ASYMMETRIC;
        p->nearest = OG_NEAREST_SIMPLE;
        p->in_scales = upsample && v < 9 ? -1 : 1;
        if (p->mode == OG_RESIZE_CUBIC) {
            st = og_op_error(c, OG_ERR_UNSUPPORTED, "mode cubic needs Resize 11 or later");
            goto fail;
        }
        if (p->in_scales < 0) {
            int ns;
            const float *fs = og_attr_floats(n, "scales", &ns);
            if (!fs || ns < 1 || ns > OG_MAX_RANK) {
                st = og_op_error(c, OG_ERR_MODEL, "attribute scales is missing or has %d entries",
                                 ns);
                goto fail;
            }
            p->n_attr_scales = ns;
            for (int i = 0; i < ns; i++) p->attr_scales[i] = fs[i];
        }
        *params = p;
        return OG_OK;
    }
    p->in_roi = 1;
    p->in_scales = 2;
    p->in_sizes = 3;
    if ((st = parse_enum(c, "coordinate_transformation_mode", "half_pixel", coord_names, &e)))
        goto fail;
    p->coord = (og_resize_coord)e;
    if ((st = parse_enum(c, "nearest_mode", "round_prefer_floor", nearest_names, &e))) goto fail;
    p->nearest = (og_resize_nearest)e;
    p->cubic_a = og_attr_float(n, "cubic_coeff_a", -0.75f);
    p->extrapolation = og_attr_float(n, "extrapolation_value", 0.0f);
    p->exclude_outside = og_attr_int(n, "exclude_outside", 0) != 0;
    if (v >= 18) {
        /* antialias only changes linear and cubic */
        p->antialias = og_attr_int(n, "antialias", 0) != 0 && p->mode != OG_RESIZE_NEAREST;
        if ((st = parse_enum(c, "keep_aspect_ratio_policy", "stretch", keep_names, &e))) goto fail;
        p->keep = (og_resize_keep)e;
        int na;
        const int64_t *axes = og_attr_ints(n, "axes", &na);
        if (axes) {
            if (na < 1 || na > OG_MAX_RANK) {
                st = og_op_error(c, OG_ERR_MODEL, "attribute axes has %d entries", na);
                goto fail;
            }
            p->n_axes = na;
            memcpy(p->axes, axes, (size_t)na * sizeof *axes);
        }
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

/* ---- sizes ----------------------------------------------------------------------- */

og_status og_resize_plan(const og_op_ctx *c, const og_resize_params *p, int rank,
                         const int64_t *in_dims, const og_tensor *roi, const og_tensor *scales,
                         const og_tensor *sizes, og_resize_shape *out)
{
    int64_t *out_dims = out->out_dims;
    double *scale = out->scale;
    int axes[OG_MAX_RANK], na = p->n_axes ? p->n_axes : rank;
    bool seen[OG_MAX_RANK] = {false};
    og_status st;
    for (int i = 0; i < na; i++) {
        if (p->n_axes) {
            if ((st = og_norm_axis(c, p->axes[i], rank, "attribute axes entry", &axes[i])))
                return st;
            if (seen[axes[i]])
                return og_op_error(c, OG_ERR_MODEL, "attribute axes repeats axis %d", axes[i]);
            seen[axes[i]] = true;
        } else {
            axes[i] = i;
        }
    }
    for (int d = 0; d < rank; d++) {
        out_dims[d] = in_dims[d];
        scale[d] = 1.0;
        out->out_f[d] = (double)in_dims[d];
        out->roi_span[d] = 1.0;
        out->roi_off[d] = 0.0;
    }
    if (scales && scales->numel == 0) scales = NULL;
    if (sizes && sizes->numel == 0) sizes = NULL;
    if (p->n_attr_scales) {
        if (p->n_attr_scales != rank)
            return og_op_error(c, OG_ERR_SHAPE, "attribute scales has %d entries for rank %d",
                               p->n_attr_scales, rank);
        for (int d = 0; d < rank; d++) scale[d] = p->attr_scales[d];
        goto floor_sizes;
    } else if (sizes) {
        if (scales) return og_op_error(c, OG_ERR_MODEL, "inputs scales and sizes are both given");
        if (sizes->numel != na || (sizes->dtype != OG_INT64 && sizes->dtype != OG_INT32))
            return og_op_error(
                c, OG_ERR_SHAPE, "input %d (sizes) has %lld %s entries, expected %d int64",
                p->in_sizes, (long long)sizes->numel, og_dtype_name(sizes->dtype), na);
        double s_keep = p->keep == OG_KEEP_NOT_LARGER ? INFINITY : 0.0;
        for (int i = 0; i < na; i++) {
            int64_t sz = og_tensor_get_i64(sizes, i), in = in_dims[axes[i]];
            if (sz < 0 || sz > ((int64_t)1 << 40))
                return og_op_error(c, OG_ERR_SHAPE, "input %d (sizes) entry %d is %lld",
                                   p->in_sizes, i, (long long)sz);
            out_dims[axes[i]] = sz;
            scale[axes[i]] = in > 0 ? (double)sz / (double)in : 1.0;
            if (p->keep == OG_KEEP_NOT_LARGER && scale[axes[i]] < s_keep) s_keep = scale[axes[i]];
            if (p->keep == OG_KEEP_NOT_SMALLER && scale[axes[i]] > s_keep) s_keep = scale[axes[i]];
        }
        if (p->keep != OG_KEEP_STRETCH)
            for (int i = 0; i < na; i++) {
                scale[axes[i]] = s_keep;
                out_dims[axes[i]] = (int64_t)(s_keep * (double)in_dims[axes[i]] + 0.5);
            }
        for (int d = 0; d < rank; d++) out->out_f[d] = scale[d] * (double)in_dims[d];
        goto roi;
    } else if (scales) {
        if (scales->numel != na || !og_dtype_is_float(scales->dtype))
            return og_op_error(
                c, OG_ERR_SHAPE, "input %d (scales) has %lld %s entries, expected %d float",
                p->in_scales, (long long)scales->numel, og_dtype_name(scales->dtype), na);
        for (int i = 0; i < na; i++) scale[axes[i]] = og_tensor_get_f64(scales, i);
        goto floor_sizes;
    } else {
        return og_op_error(c, OG_ERR_MODEL, "one of the inputs scales and sizes must be given");
    }
floor_sizes:
    for (int d = 0; d < rank; d++) {
        double o = scale[d] * (double)in_dims[d];
        if (!(scale[d] > 0.0) || !(o < 1e12))
            return og_op_error(c, OG_ERR_SHAPE, "scale %g of axis %d is not valid", scale[d], d);
        out_dims[d] = (int64_t)floor(o);
        out->out_f[d] = scales && scales->dtype == OG_FLOAT ? (double)(float)o : o;
    }
roi:
    if (roi && roi->numel > 0 && p->coord == OG_COORD_TF_CROP_AND_RESIZE) {
        if (roi->numel != 2 * na || !og_dtype_is_float(roi->dtype))
            return og_op_error(c, OG_ERR_SHAPE,
                               "input %d (roi) has %lld %s entries, expected %d float", p->in_roi,
                               (long long)roi->numel, og_dtype_name(roi->dtype), 2 * na);
        bool f32 = roi->dtype == OG_FLOAT;
        for (int i = 0; i < na; i++) {
            int a = axes[i];
            double r0 = og_tensor_get_f64(roi, i), r1 = og_tensor_get_f64(roi, na + i);
            double off = r0 * (double)(in_dims[a] - 1);
            out->roi_span[a] = f32 ? (double)((float)r1 - (float)r0) : r1 - r0;
            out->roi_off[a] = f32 ? (double)(float)off : off;
        }
    }
    return OG_OK;
}

/* ---- inference ------------------------------------------------------------------- */

static const og_tensor *input_value(const og_vinfo *in, int n_in, int i, bool *missing)
{
    if (i < 0 || i >= n_in || in[i].dtype == OG_UNDEFINED) return NULL;
    if (!in[i].value) *missing = true;
    return in[i].value;
}

static og_status infer_resize(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_resize_params *p = c->node->params;
    og_dtype t = in[0].dtype;
    if (t != OG_UNDEFINED) {
        /* linear and cubic: float16 in every version, bfloat16 from Resize-13, the integers
         * and bool (computed in float64, cast back as the reference evaluator does) */
        bool ok = t == OG_FLOAT || t == OG_DOUBLE || t == OG_FLOAT16 ||
                  (t == OG_BFLOAT16 && c->node->since_version >= 13) || og_dtype_is_integer(t) ||
                  t == OG_BOOL || (p->mode == OG_RESIZE_NEAREST && og_dtype_size(t) > 0);
        if (!ok)
            return og_op_error(c, c->runtime ? OG_ERR_TYPE : OG_ERR_UNSUPPORTED,
                               "input 0 (X) has element type %s, not supported by this mode",
                               og_dtype_name(t));
    }
    out[0].dtype = t;
    out[0].rank = in[0].rank;
    if (in[0].rank < 0) return OG_OK;
    if (!og_vinfo_static(&in[0])) return OG_OK;
    bool missing = false;
    const og_tensor *roi = input_value(in, n_in, p->in_roi, &missing);
    const og_tensor *scales = input_value(in, n_in, p->in_scales, &missing);
    const og_tensor *sizes = input_value(in, n_in, p->in_sizes, &missing);
    if (missing) {
        if (c->runtime)
            return og_op_error(c, OG_ERR_INTERNAL, "an input of the node has no value at run time");
        return OG_OK;
    }
    og_resize_shape shape;
    og_status st = og_resize_plan(c, p, in[0].rank, in[0].dims, roi, scales, sizes, &shape);
    if (st) return st;
    memcpy(out[0].dims, shape.out_dims, (size_t)in[0].rank * sizeof *shape.out_dims);
    return OG_OK;
}

/* ---- GridSample, AffineGrid ------------------------------------------------------------ */

static const og_dtype grid_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};

static og_status parse_grid_modes(const og_op_ctx *c, og_grid_params *p);

static og_status parse_grid(const og_op_ctx *c, void **params)
{
    og_status st;
    if ((st = og_attr_check_type(c, "align_corners", OG_ATTR_INT)) ||
        (st = og_attr_check_type(c, "mode", OG_ATTR_STRING)) ||
        (st = og_attr_check_type(c, "padding_mode", OG_ATTR_STRING)))
        return st;
    og_grid_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->align_corners = og_attr_int(c->node, "align_corners", 0) != 0;
    if (strcmp(c->node->op_type, "GridSample") == 0 && (st = parse_grid_modes(c, p))) {
        og_free(c->alloc, p);
        return st;
    }
    *params = p;
    return OG_OK;
}

static og_status parse_grid_modes(const og_op_ctx *c, og_grid_params *p)
{
    /* GridSample-16 says bilinear and bicubic, 20 linear and cubic */
    bool v20 = c->node->since_version >= 20;
    const char *mode = og_attr_string(c->node, "mode", v20 ? "linear" : "bilinear");
    const char *pad = og_attr_string(c->node, "padding_mode", "zeros");
    if (strcmp(mode, "nearest") == 0)
        p->mode = OG_GRID_NEAREST;
    else if (strcmp(mode, v20 ? "linear" : "bilinear") == 0)
        p->mode = OG_GRID_LINEAR;
    else if (strcmp(mode, v20 ? "cubic" : "bicubic") == 0)
        p->mode = OG_GRID_CUBIC;
    else
        return og_op_error(c, OG_ERR_MODEL, "attribute 'mode' is '%s', expected %s", mode,
                           v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic");
    if (strcmp(pad, "zeros") == 0)
        p->padding = OG_GRID_ZEROS;
    else if (strcmp(pad, "border") == 0)
        p->padding = OG_GRID_BORDER;
    else if (strcmp(pad, "reflection") == 0)
        p->padding = OG_GRID_REFLECTION;
    else
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute 'padding_mode' is '%s', expected zeros, border or reflection",
                           pad);
    return OG_OK;
}

/* X [N, C, D1..Dr], grid [N, O1..Or, r] -> [N, C, O1..Or] (r = 2 before version 20) */
static og_status infer_grid_sample(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    og_status st;
    /* X: the float types, the integers and bool (the schema's T1 less string and complex) */
    static const og_dtype x_types[] = {OG_FLOAT,  OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_INT8,
                                       OG_INT16,  OG_INT32,  OG_INT64,   OG_UINT8,    OG_UINT16,
                                       OG_UINT32, OG_UINT64, OG_BOOL,    OG_UNDEFINED};
    if ((st = og_check_dtype(c, in, 0, x_types)) || (st = og_check_dtype(c, in, 1, grid_types)))
        return st;
    out[0].dtype = in[0].dtype;
    int rx = in[0].rank, rg = in[1].rank;
    if (rx >= 0 && rx < 3)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (X) has rank %d, expected >= 3", rx);
    if (rg >= 0 && rg < 3)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (grid) has rank %d, expected >= 3", rg);
    if (c->node->since_version < 20 && ((rx >= 0 && rx != 4) || (rg >= 0 && rg != 4)))
        return og_op_error(c, OG_ERR_SHAPE,
                           "GridSample-16 takes 4-D X and grid, got ranks %d and %d", rx, rg);
    if (rx >= 0 && rg >= 0 && rx != rg)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (grid) has rank %d, X has %d", rg, rx);
    int r = rx >= 0 ? rx : rg;
    if (r < 0) return OG_OK;
    out[0].rank = r;
    for (int d = 0; d < r; d++) out[0].dims[d] = OG_DIM_UNKNOWN;
    if (rx >= 0) {
        out[0].dims[0] = in[0].dims[0];
        out[0].dims[1] = in[0].dims[1];
    }
    if (rg >= 0) {
        int64_t last = in[1].dims[rg - 1];
        if (og_dim_known(last) && last != r - 2)
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (grid) ends in %lld, expected %d",
                               (long long)last, r - 2);
        if (og_dim_known(in[1].dims[0]) && og_dim_known(out[0].dims[0]) &&
            in[1].dims[0] != out[0].dims[0])
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (grid) has batch %lld, X %lld",
                               (long long)in[1].dims[0], (long long)out[0].dims[0]);
        if (!og_dim_known(out[0].dims[0])) out[0].dims[0] = in[1].dims[0];
        for (int d = 1; d < r - 1; d++) out[0].dims[d + 1] = in[1].dims[d];
    }
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

/* theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W] or [N, C, D, H, W] -> grid [N, (D,) H, W,
 * 2 or 3] */
static og_status infer_affine_grid(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    static const og_dtype i64[] = {OG_INT64, OG_UNDEFINED};
    og_status st;
    if ((st = og_check_dtype(c, in, 0, grid_types)) || (st = og_check_dtype(c, in, 1, i64)))
        return st;
    out[0].dtype = in[0].dtype;
    if (in[0].rank >= 0 && in[0].rank != 3)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (theta) has rank %d, expected 3", in[0].rank);
    int64_t n = in[1].rank == 1 ? in[1].dims[0] : -1;
    const og_tensor *sz = in[1].value;
    if (sz) n = sz->numel;
    if (n < 0) return OG_OK;
    if (n != 4 && n != 5)
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (size) has %lld entries, expected 4 or 5",
                           (long long)n);
    int sp = (int)n - 2;
    if (in[0].rank == 3) {
        const int64_t *td = in[0].dims;
        if ((og_dim_known(td[1]) && td[1] != sp) || (og_dim_known(td[2]) && td[2] != sp + 1))
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 0 (theta) is [N, %lld, %lld], expected "
                               "[N, %d, %d] for a size of %lld entries",
                               (long long)td[1], (long long)td[2], sp, sp + 1, (long long)n);
    }
    out[0].rank = sp + 2;
    for (int d = 0; d < out[0].rank; d++) out[0].dims[d] = OG_DIM_UNKNOWN;
    out[0].dims[0] = in[0].rank == 3 ? in[0].dims[0] : OG_DIM_UNKNOWN;
    out[0].dims[sp + 1] = sp;
    if (!sz) return OG_OK;
    for (int d = 0; d < (int)n; d++) {
        int64_t v = og_tensor_get_i64(sz, d);
        if (v < 0 || v > ((int64_t)1 << 40))
            return og_op_error(c, OG_ERR_SHAPE, "input 1 (size) entry %d is %lld", d, (long long)v);
        if (d == 0) {
            if (og_dim_known(out[0].dims[0]) && out[0].dims[0] != v)
                return og_op_error(c, OG_ERR_SHAPE, "input 1 (size) says N = %lld, theta has %lld",
                                   (long long)v, (long long)out[0].dims[0]);
            out[0].dims[0] = v;
        } else if (d >= 2) {
            out[0].dims[d - 1] = v;
        }
    }
    return OG_OK;
}

const og_op_def og_ops_resize[] = {
    {"Resize", "", OG_SINCE(Resize), 1, 4, 1, 1, parse_resize, NULL, infer_resize, 0},
    {"Upsample", "", OG_SINCE(Upsample), 1, 2, 1, 1, parse_resize, NULL, infer_resize, 0},
    {"GridSample", "", OG_SINCE(GridSample), 2, 2, 1, 1, parse_grid, NULL, infer_grid_sample, 0},
    {"AffineGrid", "", OG_SINCE(AffineGrid), 2, 2, 1, 1, parse_grid, NULL, infer_affine_grid, 0},
    {0},
};

/* ---- interpolation, shared by the CPU kernel and the gradient rule ---------------- */

/* The spec's coordinate transforms, in the reference implementation's order of operations;
 * it divides by the real-valued output size out_f, not the rounded one, in align_corners and
 * tf_crop_and_resize. */
double og_resize_source_coord(const og_resize_params *p, const og_resize_shape *sh, int a,
                              int64_t x, int64_t in)
{
    double xf = (double)x, out_f = sh->out_f[a], scale = sh->scale[a];
    int64_t out = sh->out_dims[a];
    switch (p->coord) {
    case OG_COORD_ALIGN_CORNERS: return out_f == 1.0 ? 0.0 : xf * (double)(in - 1) / (out_f - 1.0);
    case OG_COORD_ASYMMETRIC: return xf / scale;
    case OG_COORD_TF_HALF_PIXEL_FOR_NN: return (xf + 0.5) / scale;
    case OG_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (xf + 0.5) / scale - 0.5 : 0.0;
    case OG_COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / out_f, center = (double)in / 2.0;
        return center * (1.0 - adjustment) + (xf + 0.5) / scale - 0.5;
    }
    case OG_COORD_TF_CROP_AND_RESIZE: {
        double span = sh->roi_span[a];
        double xo = out_f == 1.0 ? span * (double)(in - 1) / 2.0
                                 : xf * span * (double)(in - 1) / (out_f - 1.0);
        return xo + sh->roi_off[a];
    }
    case OG_COORD_HALF_PIXEL:
    default: return (xf + 0.5) / scale - 0.5;
    }
}

int64_t og_resize_clamp(int64_t i, int64_t in) { return i < 0 ? 0 : i >= in ? in - 1 : i; }

double og_resize_cubic(double x, double a)
{
    x = fabs(x);
    if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    return 0.0;
}

int64_t og_resize_nearest_index(const og_resize_params *p, double xo, double scale)
{
    double fl = floor(xo);
    if (p->nearest == OG_NEAREST_SIMPLE) return (int64_t)(scale < 1.0 ? ceil(xo) : fl);
    if (xo == fl) return (int64_t)fl;
    double ratio = xo - fl;
    switch (p->nearest) {
    case OG_NEAREST_ROUND_PREFER_CEIL: return (int64_t)(ratio < 0.5 ? fl : fl + 1.0);
    case OG_NEAREST_FLOOR: return (int64_t)fl;
    case OG_NEAREST_CEIL: return (int64_t)fl + 1;
    case OG_NEAREST_ROUND_PREFER_FLOOR:
    default: return (int64_t)(ratio <= 0.5 ? fl : fl + 1.0);
    }
}

/* Taps per output coordinate and the offset of the first relative to floor(x). */
int og_resize_tap_count(const og_resize_params *p, double scale, int *start)
{
    double s = p->antialias && scale < 1.0 ? scale : 1.0;
    switch (p->mode) {
    case OG_RESIZE_NEAREST: *start = 0; return 1;
    case OG_RESIZE_LINEAR: *start = (int)floor(-1.0 / s) + 1; return 2 - 2 * *start;
    case OG_RESIZE_CUBIC:
    default: *start = (int)floor(-2.0 / s) + 1; return 2 - 2 * *start;
    }
}
