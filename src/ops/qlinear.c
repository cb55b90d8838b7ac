/* qlinear.c: integer matrix products and convolutions: MatMulInteger, ConvInteger (10),
 * QLinearMatMul (10, 21), QLinearConv (10).
 *
 * Inputs are int8 or uint8 with zero points; the products accumulate (x - x_zero_point)
 * (w - w_zero_point) in int32 (wrapping, as the spec allows).  The QLinear ops requantize:
 * y = saturate(round_half_even(acc * x_scale * w_scale / y_scale) + y_zero_point), scales
 * float32 (QLinearMatMul 21: float16 and bfloat16 too); float8 inputs (21) are not among
 * onnxgrad's types.  Shapes are MatMul's and Conv's (og_matmul_shape, og_conv_geometry). */
#include "ops/conv_params.h"
#include "ops/linalg_params.h"

static const og_dtype types_q8[] = {OG_INT8, OG_UINT8, OG_UNDEFINED};
static const og_dtype types_scale10[] = {OG_FLOAT, OG_UNDEFINED};
static const og_dtype types_scale21[] = {OG_FLOAT, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};
static const og_dtype types_i32[] = {OG_INT32, OG_UNDEFINED};

/* Input i: a zero point of input `of` (same dtype), when present. */
static og_status check_zero_point(const og_op_ctx *c, const og_vinfo *in, int n_in, int i, int of)
{
    if (i >= n_in || c->node->in[i] < 0) return OG_OK;
    og_status st = og_check_dtype(c, in, i, types_q8);
    return st ? st : og_check_same_dtype(c, in, of, i);
}

static og_status matmul_integer_infer(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                      og_vinfo *out, int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_q8);
    if (!st) st = og_check_dtype(c, in, 1, types_q8);
    if (!st) st = check_zero_point(c, in, n_in, 2, 0);
    if (!st) st = check_zero_point(c, in, n_in, 3, 1);
    if (st) return st;
    out[0].dtype = OG_INT32;
    return og_matmul_shape(c, &in[0], &in[1], out);
}

/* QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point. */
static og_status qlinear_matmul_infer(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                      og_vinfo *out, int n_out)
{
    const og_dtype *scales = c->node->since_version >= 21 ? types_scale21 : types_scale10;
    og_status st = og_check_dtype(c, in, 0, types_q8);
    if (!st) st = og_check_dtype(c, in, 3, types_q8);
    if (!st) st = og_check_dtype(c, in, 7, types_q8);
    if (!st) st = check_zero_point(c, in, n_in, 2, 0);
    if (!st) st = check_zero_point(c, in, n_in, 5, 3);
    for (int i = 1; !st && i < 7; i += 3) st = og_check_dtype(c, in, i, scales);
    if (!st) st = og_check_same_dtype(c, in, 1, 4);
    if (!st) st = og_check_same_dtype(c, in, 1, 6);
    if (st) return st;
    out[0].dtype = in[7].dtype;
    return og_matmul_shape(c, &in[0], &in[3], out);
}

/* The output of a Conv-like node with x = in[xi], w = in[wi], bias length b_len (-1: none or
 * unknown). */
static og_status conv_shape(const og_op_ctx *c, const og_vinfo *in, int xi, int wi, int64_t b_len,
                            og_dtype dt, og_vinfo *out)
{
    og_conv_geom g;
    og_status st = og_conv_geometry(c->node, c->node->params, c->runtime, in[xi].rank, in[xi].dims,
                                    in[wi].rank, in[wi].dims, b_len, &g);
    if (st) return st;
    out[0].dtype = dt;
    if (g.nsp < 0) return OG_OK;
    out[0].rank = g.nsp + 2;
    out[0].dims[0] = g.n;
    out[0].dims[1] = g.m;
    for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.out[i];
    return OG_OK;
}

/* A per-tensor or per-output-channel parameter (w's zero point or scale): rank <= 1. */
static og_status check_per_channel(const og_op_ctx *c, const og_vinfo *in, int n_in, int i)
{
    if (i >= n_in || c->node->in[i] < 0 || in[i].rank <= 1) return OG_OK;
    return og_op_error(c, OG_ERR_SHAPE,
                       "input %d must be a scalar or 1-D (per output channel), "
                       "got rank %d",
                       i, in[i].rank);
}

static og_status conv_integer_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                    int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_q8);
    if (!st) st = og_check_dtype(c, in, 1, types_q8);
    if (!st) st = check_zero_point(c, in, n_in, 2, 0);
    if (!st) st = check_zero_point(c, in, n_in, 3, 1);
    if (!st) st = check_per_channel(c, in, n_in, 3);
    if (!st && n_in > 2 && c->node->in[2] >= 0 && in[2].rank > 1)
        st = og_op_error(c, OG_ERR_SHAPE, "input 2 (x_zero_point) must be a scalar");
    return st ? st : conv_shape(c, in, 0, 1, -1, OG_INT32, out);
}

/* QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B. */
static og_status qlinear_conv_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                    int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_q8);
    if (!st) st = og_check_dtype(c, in, 3, types_q8);
    if (!st) st = og_check_dtype(c, in, 7, types_q8);
    if (!st) st = check_zero_point(c, in, n_in, 2, 0);
    if (!st) st = check_zero_point(c, in, n_in, 5, 3);
    for (int i = 1; !st && i < 7; i += 3) st = og_check_dtype(c, in, i, types_scale10);
    if (!st) st = check_per_channel(c, in, n_in, 4);
    if (!st) st = check_per_channel(c, in, n_in, 5);
    int64_t b_len = -1;
    if (!st && n_in > 8 && c->node->in[8] >= 0) {
        st = og_check_dtype(c, in, 8, types_i32);
        if (!st && in[8].rank >= 0 && in[8].rank != 1)
            st = og_op_error(c, OG_ERR_SHAPE, "input 8 (B) has rank %d, expected 1", in[8].rank);
        if (in[8].rank == 1 && in[8].dims[0] >= 0) b_len = in[8].dims[0];
    }
    return st ? st : conv_shape(c, in, 0, 3, b_len, in[7].dtype, out);
}

static og_status conv_like_parse(const og_op_ctx *c, void **params)
{
    return og_conv_parse(c, params, false);
}

const og_op_def og_ops_qlinear[] = {
    {"MatMulInteger", "", OG_SINCE(MatMulInteger), 2, 4, 1, 1, NULL, NULL, matmul_integer_infer, 0},
    {"QLinearMatMul", "", OG_SINCE(QLinearMatMul), 8, 8, 1, 1, NULL, NULL, qlinear_matmul_infer, 0},
    {"ConvInteger", "", OG_SINCE(ConvInteger), 2, 4, 1, 1, conv_like_parse, NULL,
     conv_integer_infer, 0},
    {"QLinearConv", "", OG_SINCE(QLinearConv), 8, 9, 1, 1, conv_like_parse, NULL,
     qlinear_conv_infer, 0},
    {0},
};
