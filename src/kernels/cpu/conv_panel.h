/* conv_panel.h: float convolutions of one image on small planes whose weights are the
 * model's, by a product of our own with the weights packed once per session
 * (gemm_panel.h).  Internal header. */
#ifndef OG_CONV_PANEL_H
#define OG_CONV_PANEL_H

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

/* Whether og_conv_panel computes this Conv for call k: float, one group, W the model's (bit
 * 1 of k->const_in), a CPU with AVX-512; for one image, 2-D on an output plane of at most 64
 * positions (7x7, 8x8), or pointwise with at most 2048 input channels on a plane of at most
 * 64 positions, or of at most 256 (14x14, 16x16) where the output channels fill at least
 * 90 % of the panels of 32, or a 1x1 subsampling (stride 2) of at most 256 positions and 2048
 * input channels; for several images, 2-D on planes of 16 to 64 positions (not
 * pointwise), or of fewer side by side (pointwise ones: of fewer than 4 input channels per
 * output one). */
bool og_conv_panel_applies(const og_kernel_ctx *k, const og_conv_geom *g, og_dtype t);

/* Y = Conv(X, W) + B (+ k->res), then k->act, for a Conv og_conv_panel_applies to
 * (conv_panel.c): W
 * packed once per session into the node's og_kcache (into scratch when there is none), the
 * product through gemm_panel.h on X (pointwise) or its column matrix, written back
 * transposed; on threads, a pointwise image that og_conv_kshare_worth approves of summed
 * by shares of its input channels (conv_pw_kshare.h: the result then depends on the
 * thread count).  Takes scratch; OG_ERR_NOMEM (with a message) without it. */
og_status og_conv_panel(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                        const float *w, const float *b, float *y);

#ifdef OG_CPU_X86
/* Ct back into NCHW: y[r · ldy + j] = act(Σ_t ct[t · pstride + j · 32 + r] + b[r] + res[r ·
 * ldy + j]) for t < parts, r < mr (<= 32), j < os (b NULL: no bias, res NULL: no residual),
 * act a clamp to [lo, hi] (clamp) or vact.h's vact (0: none), through 16 x 16 transposes in
 * registers.  AVX-512 only. */
void og_conv_panel_store(const float *ct, int64_t parts, int64_t pstride, int64_t os, int64_t ldy,
                         int64_t mr, const float *b, const float *res, float *y, bool clamp,
                         float lo, float hi, int vact);
#endif

/* The column matrix of one image of a 1-D or 2-D float Conv of one group (conv.c's im2col
 * rows): col[(c · KH + i) · KW + j][position] = the input under tap (i, j) at that output
 * position, 0 in the padding. */
void og_conv_im2col_f32(const og_conv_geom *g, const float *x, float *col);

/* Whether og_conv_cols_images builds g's column matrices: float, 2-D, one group, AVX-512,
 * output planes of at most 64 positions and kernels of at most 25 taps (the gathers and
 * permutations og_conv_panel builds its own with). */
bool og_conv_cols_fast(const og_conv_geom *g, og_dtype t);

/* The column matrices of images [0, cnt) of x (in_img values apart), side by side:
 * col[(c · taps + t) · cnt · OS + b · OS + p] = the input of image b under tap t at output
 * position p, 0 in the padding; by bands of input channels on k's threads.  For a geometry
 * og_conv_cols_fast approves of (a Conv's weight gradient on small planes: conv.c), where
 * the generic im2col made a call per row and image (4 values each on 2x2 planes). */
void og_conv_cols_images(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                         int64_t in_img, int64_t cnt, float *col);

/* dst[c · ldd + r] = src[r · lds + c] for r < rows, c < cols (float; by 16 x 16 blocks in
 * registers on AVX-512). */
void og_transpose_f32(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows,
                      int64_t cols);

#endif /* OG_CONV_PANEL_H */
