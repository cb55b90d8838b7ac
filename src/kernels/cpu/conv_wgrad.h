/* conv_wgrad.h: a Conv's weight gradient computed from X and dY as they are (conv.c).
 * Internal header.
 *
 * The gradient builder writes dW as Transpose(Conv(Transpose(X), Transpose(dY))) (see
 * src/exec/fuse.h): a Conv with the batch as channels, whose strides are the forward
 * Conv's dilations and whose dilations are its strides.  The executor runs that pattern as
 * one call here: per block of images, the forward Conv's column matrix of X [C·k, nb·OS]
 * and dW[M, C·k] (+)= dY[M, nb·OS] · colᵀ, one GEMM shaped like the forward one, with no
 * transposed copies of X, dY or dW. */
#ifndef OG_CONV_WGRAD_H
#define OG_CONV_WGRAD_H

#include "kernels/cpu/kernel.h"

/* dW [M, C, k...] = Σ_n Σ_o dY[n, m, o] · X[n, c, o·s + j·d − pb] (j over the kernel's
 * positions, o over dY's), float or double, group 1.  k->node is the gradient's inner Conv:
 * its dilations are the forward strides s, its strides the forward dilations d, its begin
 * pads pb; the kernel's sizes are dW's.  X [N, C, in...], dY [N, M, out...].  Errors:
 * OG_ERR_SHAPE (X, dY and dW do not fit, naming the node), OG_ERR_UNSUPPORTED (another
 * element type or negative pads), OG_ERR_NOMEM (scratch). */
og_status og_exec_wgrad(const og_kernel_ctx *k, const og_tensor *x, const og_tensor *dy,
                        og_tensor *dw);

#endif /* OG_CONV_WGRAD_H */
