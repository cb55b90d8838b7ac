/* conv_pw_kshare.h: pointwise float convolutions of one image, the sum cut into shares of
 * the input channels, one a thread.  Internal header.
 *
 * In a network the layer before a pointwise Conv (a depthwise Conv, an element-wise op)
 * splits its channels between the threads: thread t wrote the t-th share of X's channels,
 * and they are in its core's cache.  A pointwise Conv split by output positions or
 * channels reads every channel, half of them (on two threads) from the other core, whose
 * modified lines come over several times slower than a core's own (20 GB/s against 70-100
 * here, reading 50 KB to 1 MB).  Where X is larger than Y (K >= 2 M: MobileNet's and
 * EfficientNet's projections), each thread sums its share of the channels into a partial
 * Y, and a second pass adds the partials, split by output channels: what crosses between
 * the cores is a share of the partials, not of X.  The result depends on the thread count
 * (the shares' sums are added at the end), not on which thread runs which share. */
#ifndef OG_CONV_PW_KSHARE_H
#define OG_CONV_PW_KSHARE_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* The first input channel of share t of `parts` over c channels (c for t >= parts): a
 * multiple of 16 (whole vectors and cache lines of the packed weights). */
static inline int64_t og_conv_kshare_start(int64_t c, int64_t parts, int64_t t)
{
    return t >= parts ? c : c * t / parts / 16 * 16;
}

/* Multiply-adds of a Conv below which its sum is not cut into shares (about 10 us on one
 * thread here) */
#define OG_KSHARE_MIN_MADDS 1048576.0
/* Bytes of partial sums (threads − 1 outputs' worth) above which it is not either: the
 * shares pay where their data stays in the cores' caches (MobileNet-v2's and
 * EfficientNet-B0's layers: 25-200 KB), and a large plane on many threads would take
 * several times its output in scratch */
#define OG_KSHARE_MAX_PART_BYTES 2097152.0

/* Whether the input channels of a Conv of geometry g (pointwise: the callers check) are
 * worth cutting into shares for call k: k->threads > 1, one image, at least twice as many
 * input channels as output ones and 32 a thread, OG_KSHARE_MIN_MADDS multiply-adds, and
 * at most OG_KSHARE_MAX_PART_BYTES of partial sums.
 * The session's workers or OpenMP's, and whatever the callers' own thresholds make of
 * k->threads: the shares depend on k->threads and g alone, and so do the sums' bits. */
bool og_conv_kshare_worth(const og_kernel_ctx *k, const og_conv_geom *g);

/* Whether og_conv_pw_kshare computes this Conv for call k: float, one group, pointwise
 * (kernel 1, strides 1, no pads), and og_conv_kshare_worth. */
bool og_conv_pw_kshare_applies(const og_kernel_ctx *k, const og_conv_geom *g, og_dtype t);

/* Y = W · X + B (+ k->res), then k->act, for a Conv og_conv_pw_kshare_applies to: share
 * t's product (og_gemm_f32 on one thread) into Y (t = 0) or a partial in scratch, then Y's
 * rows plus the partials', the bias and the residual, the activation on them.
 * OG_ERR_NOMEM (with a message) without scratch. */
og_status og_conv_pw_kshare(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                            const float *w, const float *b, float *y);

#endif /* OG_CONV_PW_KSHARE_H */
