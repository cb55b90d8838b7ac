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
 * float, pointwise, a CPU with AVX-512, at most OG_CONV_PW_MAX_K input channels per group
 * for one image (1024 for several), planes that fill 75 % of their vectors; anything else
 * goes the im2col + GEMM way. */
bool og_conv_pw_applies(const og_conv_geom *g, og_dtype t);

/* Whether og_conv_pw computes geometry g (one og_conv_pw_applies to) with several images
 * side by side in its tiles (planes of at most 16 values), where it takes no k->res. */
bool og_conv_pw_images(const og_conv_geom *g);

/* Y = W · X + B (+ k->res) per image and group, then k->act, for a geometry
 * og_conv_pw_applies to (k->res only where og_conv_pw_images does not).  w is [M, C/group],
 * b (NULL: none) [M], x [N, C, spatial], y [N, M, spatial].  Takes scratch for the packed
 * weights; OG_ERR_NOMEM (with a message) without it. */
og_status og_conv_pw(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                     const float *b, float *y);

/* The same kernel on a column matrix (im2col's, conv.c): y[m * ldy + j] = b[m] + Σ_q
 * w[m * kc + q] · x[q * ldx + j] for m < mg, j < ncols, q < kc, then k->act, on the
 * calling thread.  Returns false, having done nothing, unless the CPU has AVX-512 and
 * 0 < kc <= og_conv_pw_max_k() (short sums, where the kernel beats a GEMM). */
bool og_conv_pw_cols(const og_kernel_ctx *k, int64_t mg, int64_t kc, int64_t ncols, const float *x,
                     int64_t ldx, const float *w, const float *b, float *y, int64_t ldy);
/* Input rows og_conv_pw_cols and og_conv_pw_taps take at most on any CPU (the bound of a
 * caller's offsets array; og_conv_pw_max_k() is this CPU's, 0 without the kernel). */
#define OG_CONV_PW_MAX_K 160

/* The same with input row q at x + off[q] (rows read in place: the shifted rows of a
 * stride-1 Conv on its input's width, conv.c's wide columns, without copying them). */
bool og_conv_pw_taps(const og_kernel_ctx *k, int64_t mg, int64_t kc, int64_t ncols, const float *x,
                     const int64_t *off, const float *w, const float *b, float *y, int64_t ldy);
int64_t og_conv_pw_max_k(void);

#endif /* OG_CONV_PW_H */
