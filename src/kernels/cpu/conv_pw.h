/* conv_pw.h: pointwise (1x1) float convolutions on NCHW by a register-blocked kernel that
 * writes each output once, bias and activation included.  Internal header.
 *
 * A pointwise Conv (kernel 1 everywhere, strides 1, no pads) is, per image and group, the
 * product Y_g[mg, OS] = W_g[mg, cg] · X_g[cg, OS] plus the bias.  Through BLAS it costs,
 * besides the product, a pass to clear Y (beta 0), one to add the bias and one for the
 * activation; MobileNet's expansions (16-24 input channels) are bound by those passes. */
#ifndef OG_CONV_PW_H
#define OG_CONV_PW_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_pw computes this Conv (geometry g of known shapes, element type t):
 * float, pointwise, a CPU with AVX-512; anything else goes the im2col + GEMM way. */
bool og_conv_pw_applies(const og_conv_geom *g, og_dtype t);

/* Y = W · X + B per image and group, then k->act, for a geometry og_conv_pw_applies to.
 * w is [M, C/group], b (NULL: none) [M], x [N, C, spatial], y [N, M, spatial].  Takes
 * scratch for the packed weights; OG_ERR_NOMEM (with a message) without it. */
og_status og_conv_pw(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                     const float *b, float *y);

#endif /* OG_CONV_PW_H */
