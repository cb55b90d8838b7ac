/*
 * conv_dw.h: direct kernels for convolutions with few channels per group (depthwise Conv,
 * the ConvTranspose of its input gradient), beside conv.c's im2col + GEMM.  Internal.
 */
#ifndef OG_CONV_DW_H
#define OG_CONV_DW_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_direct computes this convolution (geometry g of known shapes, 1-D or 2-D,
 * group > 1 with at most a few channels per group, a kernel of at most 64 taps for Conv),
 * where it is faster than im2col + a GEMM per group: those GEMMs have one to four rows. */
bool og_conv_direct_applies(const og_conv_geom *g, bool transpose);

/* Conv (transpose false: W [M, C/group, kernel]) or ConvTranspose (W [C, M/group, kernel])
 * of x by w plus b (NULL: none) into y, then k->act; dtype float or double.  Errors:
 * OG_ERR_NOMEM for the scratch planes. */
og_status og_conv_direct(const og_kernel_ctx *k, const og_conv_geom *g, bool transpose, og_dtype t,
                         const void *x, const void *w, const void *b, void *y);

#endif /* OG_CONV_DW_H */
