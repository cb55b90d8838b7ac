/* conv_s2.h: stride-2 float convolutions of short sums (the stems of image networks:
 * 3 input channels by 3x3 or 7x7) without a column matrix.  Internal header.
 *
 * Each input plane is split once into four sub-planes, the even and odd rows by the even
 * and odd columns of the zero-padded plane: S_ab[i][j] = X[2i + a][2j + b].  Tap (ky, kx)
 * of output (oy, ox) is then S_(ky%2)(kx%2)[oy + ky/2][ox + kx/2]: every tap a shifted
 * read of one sub-plane, which conv_pw.c's tile kernel takes in place (og_conv_pw_taps),
 * an output row at a time straight into Y, or (where rows fill 16-lane vectors poorly)
 * over "wide" positions oy * Wh + ox, Wh the sub-planes' width (one or a few unused
 * columns per output row, dropped when the result is copied into Y).  im2col would write
 * and read kh * kw values per output position instead (ResNet-18's 7x7 stem: 147).  Two
 * panels of output channels or more (ResNet's stem) go by gemm_panel.h's product instead,
 * the taps' rows read in place too (og_panel_gemm_off_f32), its result transposed back
 * into Y, or first pooled by the MaxPool that follows (k->max_pool): the 64 x 112 x 112
 * output of ResNet's stem never leaves the cache, only its pooled quarter. */
#ifndef OG_CONV_S2_H
#define OG_CONV_S2_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_s2 computes this Conv (geometry g of known shapes, element type t):
 * float, 2-D, stride 2, dilation 1, kernels of 9 taps or more (3x3 to 7x7 stems), C/group ·
 * kernel at most og_conv_pw_max_k(), on a CPU with AVX-512. */
bool og_conv_s2_applies(const og_conv_geom *g, og_dtype t);

/* Whether og_conv_s2 sums g by panels (gemm_panel.h): og_conv_s2_applies, one group and 64
 * output channels or more (two panels of 32).  Then it can also pool its output (k->max_pool,
 * below). */
bool og_conv_s2_panel_applies(const og_conv_geom *g, og_dtype t);

/* The output plane of MaxPool 3x3, strides 2, pads 1 (floor) over an OH x OW plane. */
static inline int64_t og_conv_s2_pooled(int64_t n) { return (n - 1) / 2 + 1; }

/* Y = Conv(X, W) + B, then k->act, for a geometry og_conv_s2_applies to: x [N, C, H, W],
 * w [M, C/group, KH, KW], b [M] or NULL, y [N, M, OH, OW]; with k->max_pool (where
 * og_conv_s2_panel_applies, and k->act none, Relu or a clamp: an activation that commutes
 * with the maximum) y [N, M, PH, PW] = MaxPool 3x3 / 2, pads 1 of that, og_conv_s2_pooled
 * of OH and OW, the same bits as the two nodes one after the other.  OG_ERR_NOMEM (with a
 * message) without scratch. */
og_status og_conv_s2(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                     const float *b, float *y);

#endif /* OG_CONV_S2_H */
