/*
 * conv_params.h: the parsed attributes of Conv, ConvTranspose and Col2Im and their geometry
 * (pads, output sizes), shared by src/ops/conv.c and src/kernels/cpu/conv.c.  Internal.
 */
#ifndef OG_CONV_PARAMS_H
#define OG_CONV_PARAMS_H

#include "ops/op.h"

#define OG_CONV_MAX_SP (OG_MAX_RANK - 2)

typedef enum og_conv_autopad {
    OG_CONV_NOTSET = 0,
    OG_CONV_SAME_UPPER,
    OG_CONV_SAME_LOWER,
    OG_CONV_VALID
} og_conv_autopad;

typedef struct og_conv_params {
    bool transpose;
    int since;
    int64_t group;
    og_conv_autopad auto_pad;
    /* attribute lengths, 0 when absent */
    int n_kernel, n_strides, n_dilations, n_pads, n_output_padding, n_output_shape;
    int64_t kernel[OG_CONV_MAX_SP];
    int64_t strides[OG_CONV_MAX_SP];
    int64_t dilations[OG_CONV_MAX_SP];
    int64_t pads[2 * OG_CONV_MAX_SP];
    int64_t output_padding[OG_CONV_MAX_SP];
    int64_t output_shape[OG_CONV_MAX_SP + 2];
} og_conv_params;

/* Parse the attributes of a Conv-like node (group, auto_pad, kernel_shape, strides,
 * dilations, pads; with output_padding and output_shape for a transposed one) into a new
 * og_conv_params (c->alloc).  ConvInteger and QLinearConv share it (src/ops/qlinear.c). */
og_status og_conv_parse(const og_op_ctx *c, void **params, bool transpose);

/* Everything a kernel needs, for known shapes.  Unknown entries (static inference) are
 * OG_DIM_UNKNOWN.  For ConvTranspose, pad_begin/pad_end may be negative (an output_shape
 * larger than the full result). */
typedef struct og_conv_geom {
    int nsp;       /* spatial dims */
    int64_t n;     /* batch */
    int64_t c;     /* input channels */
    int64_t m;     /* output channels */
    int64_t group; /* groups */
    int64_t in[OG_CONV_MAX_SP], kernel[OG_CONV_MAX_SP], stride[OG_CONV_MAX_SP];
    int64_t dil[OG_CONV_MAX_SP], pad_begin[OG_CONV_MAX_SP], pad_end[OG_CONV_MAX_SP];
    int64_t out[OG_CONV_MAX_SP];
} og_conv_geom;

/* Geometry of a Conv/ConvTranspose node from the shapes of X, W and B (b_len < 0: no bias
 * or unknown).  x_rank/w_rank -1: unknown.  runtime: every dim must be known, and every
 * inconsistency fails with a message naming the node; otherwise unknown dims give
 * unknown results and only definite errors fail.  *nsp_out < 0 when the rank is unknown. */
og_status og_conv_geometry(const og_node *node, const og_conv_params *p, bool runtime, int x_rank,
                           const int64_t *x_dims, int w_rank, const int64_t *w_dims, int64_t b_len,
                           og_conv_geom *g);

/* Col2Im over nsp spatial dims, image_shape `image` and block_shape `block` (their values)
 * and pads, strides and dilations of p (absent: 0, 1, 1), for an input [N, C·Πblock, L]
 * (x_dims; unknown entries allowed): the channel count *C (OG_DIM_UNKNOWN when not known)
 * and the block positions per dim, blocks[i] = (image + pads − (block − 1)·dil − 1)/stride
 * + 1, whose product L must be.  Errors name the node. */
og_status og_col2im_geometry(const og_node *node, const og_conv_params *p, int nsp,
                             const int64_t *image, const int64_t *block, const int64_t *x_dims,
                             int64_t *C, int64_t *blocks);

#endif /* OG_CONV_PARAMS_H */
