/* conv_m16.h: float convolutions of 9 to 16 output channels without pads, an output row
 * of 4 to 24 positions at a time, the channels in the lanes of one vector.  Internal
 * header.
 *
 * LeNet's second layer (6 -> 16 channels, 5x5, 14x14 -> 10x10) is a product of 150-value
 * sums into 16 channels by 100 positions per image: im2col writes 150 rows of 100 values
 * an image, and the pointwise tiles over "wide" columns (conv.c: job.taps) compute 14
 * columns an output row for its 10.  Here a row's sums are 16-lane vectors, one per output
 * position: per tap, Wᵀ's row of 16 channels and a broadcast of each position's input
 * value, as many multiply-adds, every lane a channel; the row then goes back to NCHW
 * through one or two 16 x 16 transposes, the bias and activation on the way. */
#ifndef OG_CONV_M16_H
#define OG_CONV_M16_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_m16 computes this Conv (geometry g of known shapes, element type t):
 * float, 2-D, one group, 9 to 16 output channels, no pads, output rows of 4 to 24
 * positions, at most 1024 values a sum (C · KH · KW), a CPU with AVX-512. */
bool og_conv_m16_applies(const og_conv_geom *g, og_dtype t);

/* Y = Conv(X, W) + B, then k->act, for a geometry og_conv_m16_applies to: x [N, C, H, W],
 * w [M, C, KH, KW], b [M] or NULL, y [N, M, OH, OW].  Each output is b + Σ w · x over
 * (c, ky, kx) in that order, fused multiply-adds.  OG_ERR_NOMEM (with a message) without
 * scratch. */
og_status og_conv_m16(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                      const float *b, float *y);

#endif /* OG_CONV_M16_H */
