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

/* Output rows of depthwise planes from bands of their input rows, for kernels that compute
 * the input band by band (conv_pwdw.c).  og_conv_dw_rows_applies(g, t): g (the geometry
 * of the whole planes, one channel per group) goes the AVX-512 plane loops' way in
 * og_conv_direct.  og_conv_dw_rows_scratch(g, rows): the floats of scratch a call of at
 * most `rows` output rows needs.  og_conv_dw_rows: output rows [r0, r1) of channels [m0,
 * m1), channel q's at y + (q - m0) * ldy (OW values a row, row r0 first), from input rows
 * [i0, i1) at x + (q - m0) * ldx (W values a row), which must hold every row of the input
 * that those outputs read: the bias b[q] (b NULL: none), w's taps of channel q, then
 * k->act.  The values are og_conv_direct's bit for bit. */
bool og_conv_dw_rows_applies(const og_conv_geom *g, og_dtype t);
int64_t og_conv_dw_rows_scratch(const og_conv_geom *g, int64_t rows);
void og_conv_dw_rows(const og_kernel_ctx *k, const og_conv_geom *g, int64_t m0, int64_t m1,
                     const float *x, int64_t ldx, int64_t i0, int64_t i1, int64_t r0, int64_t r1,
                     const float *w, const float *b, float *y, int64_t ldy, float *scratch);
/* The output rows dwp_plane computes together (og_conv_dw_rows is fastest on bands of a
 * multiple of them): 4 for stride 1, 2 for stride 2. */
int64_t og_conv_dw_rows_step(const og_conv_geom *g);
/* The input rows [*lo, *hi) that output rows [r0, r1) of g read, within the plane (what
 * og_conv_dw_rows needs of them). */
void og_conv_dw_rows_inputs(const og_conv_geom *g, int64_t r0, int64_t r1, int64_t *lo,
                            int64_t *hi);

#endif /* OG_CONV_DW_H */
