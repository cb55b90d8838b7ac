/* quant.c: QuantizeLinear (10, 13, 19, 21), DequantizeLinear (10, 13, 19, 21) and
 * DynamicQuantizeLinear (11): attributes, the scale layouts (per tensor, per axis from 13,
 * blocked from 21) and type and shape inference.  Quantized types: int8, uint8, the 8-bit
 * floats from 19, and int16, uint16, int4, uint4 from 21 (int32 as DequantizeLinear's
 * input). */
#include <string.h>

#include "ops/quant.h"

bool og_quant_range(og_dtype t, double *qmin, double *qmax)
{
    switch (t) {
    case OG_INT8: *qmin = -128, *qmax = 127; return true;
    case OG_UINT8: *qmin = 0, *qmax = 255; return true;
    case OG_INT16: *qmin = -32768, *qmax = 32767; return true;
    case OG_UINT16: *qmin = 0, *qmax = 65535; return true;
    case OG_INT4: *qmin = -8, *qmax = 7; return true;
    case OG_UINT4: *qmin = 0, *qmax = 15; return true;
    default: return false;
    }
}

bool og_quant_type(og_dtype t)
{
    double lo, hi;
    return og_quant_range(t, &lo, &hi) || og_dtype_is_float8(t);
}

static og_status parse_quant(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_status st;
    static const char *const ints[] = {"axis", "block_size", "output_dtype", "saturate"};
    for (int i = 0; i < 4; i++)
        if ((st = og_attr_check_type(c, ints[i], OG_ATTR_INT))) return st;
    og_quant_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->axis = n->since_version >= 13 ? og_attr_int(n, "axis", 1) : 1;
    p->block_size = n->since_version >= 21 ? og_attr_int(n, "block_size", 0) : 0;
    int64_t od = n->since_version >= 21 ? og_attr_int(n, "output_dtype", 0) : 0;
    p->saturate = n->since_version >= 19 ? og_attr_int(n, "saturate", 1) != 0 : true;
    st = OG_OK;
    if (p->block_size < 0)
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'block_size' is %lld, expected >= 0",
                         (long long)p->block_size);
    else if (od != 0 && !og_quant_type((og_dtype)od))
        st = og_op_error(c, OG_ERR_UNSUPPORTED,
                         "attribute 'output_dtype' = %lld: quantizing to %s is not supported "
                         "(int8, uint8, int16, uint16, int4, uint4 and the float8 types are)",
                         (long long)od, og_dtype_name((og_dtype)od));
    if (st) {
        og_free(c->alloc, p);
        return st;
    }
    p->output_dtype = (og_dtype)od;
    *params = p;
    return OG_OK;
}

og_status og_quant_geometry(const og_op_ctx *c, const og_quant_params *p, int rank,
                            const int64_t *dims, int s_rank, const int64_t *s_dims,
                            og_quant_geom *g)
{
    int64_t sn = 1;
    for (int d = 0; d < s_rank; d++) sn *= s_dims[d];
    memset(g, 0, sizeof *g);
    g->outer = g->D = g->inner = g->nb = g->block = 1;
    if (p->block_size == 0 && (s_rank == 0 || (s_rank == 1 && sn == 1))) {
        g->layout = OG_QUANT_TENSOR;
        return OG_OK;
    }
    int axis;
    og_status st = og_norm_axis(c, p->axis, rank, "attribute 'axis'", &axis);
    if (st) return st;
    g->axis = axis;
    for (int d = 0; d < rank; d++) {
        if (d < axis) g->outer *= dims[d];
        if (d > axis) g->inner *= dims[d];
    }
    g->D = dims[axis];
    if (p->block_size == 0) {
        if (c->node->since_version < 13 || s_rank != 1 || s_dims[0] != g->D)
            return og_op_error(c, OG_ERR_SHAPE, "the scale has %lld elements: expected one%s",
                               (long long)sn,
                               c->node->since_version < 13 ? " (per-tensor only before opset 13)"
                                                           : ", or one per entry of the axis");
        g->layout = OG_QUANT_AXIS;
        return OG_OK;
    }
    g->layout = OG_QUANT_BLOCKED;
    g->block = p->block_size;
    g->nb = (g->D + g->block - 1) / g->block;
    bool ok = s_rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = s_dims[d] == (d == axis ? g->nb : dims[d]);
    if (!ok)
        return og_op_error(c, OG_ERR_SHAPE,
                           "blocked quantization (block_size %lld along axis %d) needs a scale "
                           "of x's shape with %lld along the axis",
                           (long long)g->block, axis, (long long)g->nb);
    return OG_OK;
}

/* Scale and zero point: same shape (and known dims: their layout against x's) */
static og_status check_scale(const og_op_ctx *c, const og_vinfo *in, int n_in)
{
    const og_quant_params *p = c->node->params;
    if (n_in > 2 && in[2].rank >= 0 && in[1].rank >= 0) {
        bool same = in[1].rank == in[2].rank;
        for (int d = 0; same && d < in[1].rank; d++)
            same = !og_dim_known(in[1].dims[d]) || !og_dim_known(in[2].dims[d]) ||
                   in[1].dims[d] == in[2].dims[d];
        /* one element each, [] against [1], is one per-tensor layout (onnx's own cases) */
        bool one = in[1].rank <= 1 && in[2].rank <= 1 && (in[1].rank == 0 || in[1].dims[0] == 1) &&
                   (in[2].rank == 0 || in[2].dims[0] == 1);
        if (!same && !one)
            return og_op_error(c, OG_ERR_SHAPE, "the zero point's shape differs from the scale's");
    }
    if (!og_vinfo_static(&in[0]) || !og_vinfo_static(&in[1])) return OG_OK;
    og_quant_geom g;
    return og_quant_geometry(c, p, in[0].rank, in[0].dims, in[1].rank, in[1].dims, &g);
}

static const og_dtype q_in_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_INT32, 0};
static const og_dtype scale_types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, 0};

static og_status zp_type(const og_op_ctx *c, og_dtype t, int i)
{
    if (t == OG_UNDEFINED || og_quant_type(t)) return OG_OK;
    return og_op_error(c, OG_ERR_UNSUPPORTED,
                       "input %d has element type %s: int8, uint8, int16, uint16, int4, uint4 "
                       "and the float8 types are the quantized types onnxgrad has",
                       i, og_dtype_name(t));
}

/* y = saturate(round(x / scale) + zero_point), of the zero point's type (or output_dtype,
 * or uint8) */
static og_status infer_quantize(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    const og_quant_params *p = c->node->params;
    og_status st;
    /* the scale has x's type (T1): int32 too when x is int32 (QuantizeLinear-19, 21) */
    static const og_dtype scale_types_i32[] = {OG_FLOAT,    OG_DOUBLE, OG_FLOAT16,
                                               OG_BFLOAT16, OG_INT32,  0};
    if ((st = og_check_dtype(c, in, 0, q_in_types)) ||
        (st = og_check_dtype(c, in, 1,
                             in[0].dtype == OG_INT32 && c->node->since_version >= 19
                                 ? scale_types_i32
                                 : scale_types)))
        return st;
    og_dtype zt = n_in > 2 ? in[2].dtype : OG_UNDEFINED;
    if ((st = zp_type(c, zt, 2))) return st;
    if (zt != OG_UNDEFINED && p->output_dtype != OG_UNDEFINED && zt != p->output_dtype)
        return og_op_error(c, OG_ERR_TYPE, "the zero point is %s but output_dtype says %s",
                           og_dtype_name(zt), og_dtype_name(p->output_dtype));
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = zt != OG_UNDEFINED                ? zt
                   : p->output_dtype != OG_UNDEFINED ? p->output_dtype
                   : n_in > 2 && c->node->in[2] >= 0 ? OG_UNDEFINED
                                                     : OG_UINT8;
    (void)n_out;
    return check_scale(c, in, n_in);
}

/* y = (x − zero_point)·scale, of the scale's type */
static og_status infer_dequantize(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                  int n_out)
{
    og_status st;
    if ((st = og_check_dtype(c, in, 1, scale_types))) return st;
    if (in[0].dtype != OG_INT32 && (st = zp_type(c, in[0].dtype, 0))) return st;
    if (n_in > 2 && in[2].dtype != OG_UNDEFINED && in[0].dtype != OG_UNDEFINED &&
        in[2].dtype != in[0].dtype)
        return og_op_error(c, OG_ERR_TYPE, "input 2 (zero point) is %s, input 0 %s",
                           og_dtype_name(in[2].dtype), og_dtype_name(in[0].dtype));
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = in[1].dtype;
    (void)n_out;
    return check_scale(c, in, n_in);
}

/* y (uint8, x's shape), y_scale (float scalar), y_zero_point (uint8 scalar) */
static og_status infer_dynamic_quantize(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                        og_vinfo *out, int n_out)
{
    static const og_dtype types[] = {OG_FLOAT, OG_DOUBLE, 0};
    og_status st = og_check_dtype(c, in, 0, types);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = OG_UINT8;
    for (int j = 1; j < n_out && j < 3; j++) {
        out[j].rank = 0;
        out[j].dtype = j == 1 ? in[0].dtype : OG_UINT8;
    }
    (void)n_in;
    return OG_OK;
}

const og_op_def og_ops_quant[] = {{"QuantizeLinear", "", OG_SINCE(QuantizeLinear), 2, 3, 1, 1,
                                   parse_quant, NULL, infer_quantize, 0},
                                  {"DequantizeLinear", "", OG_SINCE(DequantizeLinear), 2, 3, 1, 1,
                                   parse_quant, NULL, infer_dequantize, 0},
                                  {"DynamicQuantizeLinear", "", OG_SINCE(DynamicQuantizeLinear), 1,
                                   1, 3, 3, NULL, NULL, infer_dynamic_quantize, 0},
                                  {0}};
