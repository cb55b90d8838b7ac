/* conv_pwdw.h: a pointwise Conv and the depthwise Conv that reads its output, run as one
 * (MobileNet's and EfficientNet's expansions).  Internal header.
 *
 * Unfused, the expansion writes its whole output (MobileNet-v2's first one: 96 x 112 x
 * 112 floats, 4.8 MB) and the depthwise Conv reads it back, both from memory whenever
 * the rest of the network has moved it out of the caches.  Here the expansion is computed
 * a band of rows and a block of channels at a time into the thread's scratch, and the
 * depthwise Conv reads it there at once: the expanded tensor is never stored.  The values
 * are those of the two kernels run one after the other (conv_pw.c, conv_dw.c) bit for
 * bit; the rows a band shares with the next are computed twice. */
#ifndef OG_CONV_PWDW_H
#define OG_CONV_PWDW_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_pwdw computes pw (geometry of the pointwise Conv, group 1) followed by
 * dw (the depthwise Conv of its output) for element type t: float, both kernels'
 * AVX-512 loops, and an expanded tensor of at least OG_CONV_PWDW_MIN_BYTES per image.
 * Smaller ones stay in the caches between the two kernels run apart, which measured as
 * fast or faster: MobileNet-v2 224x224 took 4.94 ms with this bound, 5.13 with 256 KiB
 * (its 144 x 56 x 56 and 192 x 28 x 28 expansions fused too), 5.32 with none fused
 * (medians of 10 runs, one thread). */
bool og_conv_pwdw_applies(const og_conv_geom *pw, const og_conv_geom *dw, og_dtype t);
#define OG_CONV_PWDW_MIN_BYTES 2097152

/* y = dw(pw_act(w1 · x + b1)) with w2, b2 (b1, b2 NULL: none), then k->act: x [N, C, H,
 * W], w1 [M, C], w2 [M, 1, KH, KW], y [N, M, OH, OW].  Errors: OG_ERR_NOMEM (message
 * given) for the scratch. */
og_status og_conv_pwdw(const og_kernel_ctx *k, const og_conv_geom *pw, const og_act *pw_act,
                       const float *x, const float *w1, const float *b1, const og_conv_geom *dw,
                       const float *w2, const float *b2, float *y);

#endif /* OG_CONV_PWDW_H */
