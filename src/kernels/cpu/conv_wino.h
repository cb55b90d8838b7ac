/* conv_wino.h: 3x3 stride-1 float convolutions by Winograd's F(2x2, 3x3), beside conv.c's
 * im2col + GEMM.  Internal header.
 *
 * Each 2x2 block of output positions (a tile) of one output channel is A^T [Σ_c (G g_c
 * G^T) ⊙ (B^T d_c B)] A, d_c the 4x4 input patch of channel c under the tile, g_c the 3x3
 * kernel: per tile and channel pair 16 multiplications where the direct sum takes 36.
 * The 16 element-wise products summed over c are 16 matrix products, U_ξ[M, C] · V_ξ[C,
 * tiles], which run through the GEMM; the transforms B^T d B (of the input, 32 additions
 * per patch) and A^T · A (of the products, 24 per tile) are vectorized over 16 tiles of a
 * tile row.  G g G^T (of the weights) is computed once per session where W is the model's
 * initializer (kept in the node's og_kcache), else at each call.  F(2x2, 3x3)'s transforms
 * have coefficients 0, ±1 and ±1/2, so its rounding error stays within a few times the
 * direct sum's. */
#ifndef OG_CONV_WINO_H
#define OG_CONV_WINO_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_wino computes this Conv: float, 2-D, kernel 3x3, strides and dilations
 * 1, pads of at most 2, one group, at least 16 input and output channels, a CPU with
 * AVX-512, and tiles: at least 16 per image (an 8x8 output) and 64 in all, or fewer than
 * 64 in all and at least 4 per image (a 4x4 output). */
bool og_conv_wino_applies(const og_conv_geom *g, og_dtype t);

/* The Conv that a ConvTranspose of geometry g computes, into *conv, where that Conv has a
 * 3x3 kernel of stride 1: a ConvTranspose of 2-D, 3x3, stride 1, dilation 1, one group and
 * pads of at most 2 is the Conv of dY by its weights turned by 180 degrees, input and
 * output channels swapped, with pads 2 − pads (a 3x3 Conv's input gradient: ResNet's).
 * False for other geometries. */
bool og_conv_wino_transposed(const og_conv_geom *g, og_conv_geom *conv);

/* Y = Conv(X, W) + B, then k->act, for a geometry og_conv_wino_applies to: x [N, C, H, W],
 * w [M, C, 3, 3], b (NULL: none) [M], y [N, M, OH, OW].  flip: w is a ConvTranspose's
 * [C, M, 3, 3] and g the Conv og_conv_wino_transposed made of its geometry, so that Y is
 * that ConvTranspose's output.  Takes scratch; OG_ERR_NOMEM (with a message) without it. */
og_status og_conv_wino(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                       const float *w, bool flip, const float *b, float *y);

/* Whether og_conv_wino_wgrad computes the weight gradient of the Conv of geometry g (the
 * forward's): float, 2-D, 3x3, stride and dilation 1, pads of at most 2, one group, at
 * least 16 input and output channels, 16 tiles per image (an 8x8 output) or more, 16·M·C
 * at most 1 Mi floats, AVX-512. */
bool og_conv_wino_wgrad_applies(const og_conv_geom *g, og_dtype t);

/* dW [M, C, 3, 3] = Σ over images and outputs of dY · X (the Conv's weight gradient,
 * conv_wgrad.h) by the transpose of F(2x2, 3x3): per tile, V = B^T d B as the forward
 * computes it and Q = A dY A^T (dY's 2x2 tile); S_ξ[M, C] = Σ_tiles Q_ξ · V_ξ, 16 GEMMs
 * over blocks of images; dW = G^T S G.  2.25x fewer multiplications than the column
 * matrix's GEMM.  x [N, C, H, W], dy [N, M, OH, OW]; takes scratch, OG_ERR_NOMEM without
 * it. */
og_status og_conv_wino_wgrad(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                             const float *dy, float *dw);

#endif /* OG_CONV_WINO_H */
