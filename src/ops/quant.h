/*
 * quant.h: parsed attributes of the quantization ops (QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear) and the scale layout they share, used by src/ops/quant.c,
 * src/kernels/cpu/quant.c and src/grad/quant.c.  Internal header.
 */
#ifndef OG_OPS_QUANT_H
#define OG_OPS_QUANT_H

#include "ops/op.h"

typedef struct og_quant_params {
    int64_t axis;          /* per-axis and blocked quantization (13+; default 1) */
    int64_t block_size;    /* blocked quantization (21; 0: none) */
    og_dtype output_dtype; /* QuantizeLinear 21 (OG_UNDEFINED: from the zero point, or uint8) */
    bool saturate;         /* QuantizeLinear 19 to float8: out-of-range to the largest value */
} og_quant_params;

/* How the scale (and zero point) of shape (s_rank, s_dims) map onto x of shape (rank,
 * dims): per tensor (one element), per axis (1-D of the axis's length) or blocked (x's shape
 * with ⌈D/B⌉ along the axis).  For x seen as [outer, D, inner] around the axis, element
 * (o, d, i) uses scale element (o·nb + d/B)·inner + i (blocked), d (per axis) or 0. */
typedef enum og_quant_layout { OG_QUANT_TENSOR, OG_QUANT_AXIS, OG_QUANT_BLOCKED } og_quant_layout;

typedef struct og_quant_geom {
    og_quant_layout layout;
    int axis;
    int64_t outer, D, inner, block, nb;
} og_quant_geom;

/* The layout of a scale for x (every dim known), failing with a message naming the node
 * when the scale fits none the node's version allows. */
og_status og_quant_geometry(const og_op_ctx *c, const og_quant_params *p, int rank,
                            const int64_t *dims, int s_rank, const int64_t *s_dims,
                            og_quant_geom *g);

/* The representable range of an integer quantized type (int8, uint8, int16, uint16, int4,
 * uint4). */
bool og_quant_range(og_dtype t, double *qmin, double *qmax);
/* A quantized type: an integer one (og_quant_range) or an 8-bit float. */
bool og_quant_type(og_dtype t);

#endif /* OG_OPS_QUANT_H */
