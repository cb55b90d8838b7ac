/* gemm_panel.h: float products whose first operand is packed once and kept, for few
 * columns.  Internal header.
 *
 * Ct = (A · B)ᵀ for A [M, K] (weights, constant from call to call) and B [K, N] with N
 * small (the tiles or positions of one small image: 16 to a few dozen).  A is packed once
 * (og_panel_pack_f32, into the node's og_kcache) as panels of OG_PANEL_MR rows, each panel
 * [K][OG_PANEL_MR] contiguous: a step of the sum reads one panel row as two vectors and
 * broadcasts the B values of up to 12 columns, 24 multiply-adds per 14 loads.  The result
 * comes out transposed, Ct [N, M] (a column of the product per row of Ct), which the
 * callers turn back into NCHW while they apply the bias and activation.  A BLAS packs A
 * again at every call, and with N this small its packing costs as much as the product.
 *
 * Each element of Ct is Σ_q A[m][q] · B[q][n] summed in the order q = 0, 1, ..., K - 1
 * (fused multiply-adds), whatever panels a call covers: the same bits on any split of the
 * panels over threads, and on CPUs without AVX-512 (one sum at a time there: the callers
 * take this path only with AVX-512). */
#ifndef OG_GEMM_PANEL_H
#define OG_GEMM_PANEL_H

#include "kernels/cpu/kernel.h"

#define OG_PANEL_MR 32 /* rows of A per panel */

/* Panels of A with m rows: (m + 31) / 32. */
static inline int64_t og_panel_count(int64_t m) { return (m + OG_PANEL_MR - 1) / OG_PANEL_MR; }

/* Floats that A [m, k] takes packed: og_panel_count(m) · 32 · k (rows past m are zeros). */
static inline size_t og_panel_floats(int64_t m, int64_t k)
{
    return (size_t)og_panel_count(m) * OG_PANEL_MR * (size_t)k;
}

/* p = A [m, k] (row i at a + i * lda) packed: p[(pi · k + q) · 32 + r] = A[32 pi + r][q],
 * zero for rows at or past m. */
void og_panel_pack_f32(int64_t m, int64_t k, const float *a, int64_t lda, float *p);

/* ct[j · ldc + 32 (pi − p0) + r] = Σ_q A[32 pi + r][q] · b[q · ldb + j] for panels pi of
 * [p0, p1) of the packed A `p` (k columns), r < 32, j < n: every row of a panel, those
 * past A's rows (zeros) included, so ldc >= 32 · (p1 − p0).  `next`, unless NULL: a panel
 * of k columns that the caller reads next (packed likewise), whose first rows are
 * prefetched into L2 during the last block; only a prefetch, never read. */
void og_panel_gemm_f32(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p, const float *b,
                       int64_t ldb, float *ct, int64_t ldc, const float *next);

/* The same for A of m rows: a panel holding 16 of them or fewer (the last one of 80, 112
 * or 48 rows) computes its first 16 rows only, ct's other 16 of it left as they were
 * (the callers read a panel's rows in blocks of 16, up to A's last), at the same speed per
 * multiply-add: no work on the zero rows. */
void og_panel_gemm_m_f32(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p,
                         const float *b, int64_t ldb, float *ct, int64_t ldc, const float *next,
                         int64_t m);

/* The same with B's row q at b + off[q] (q < k) instead of b + q · ldb: B read where it
 * lies, rows anywhere (conv_s2.c: a kernel tap's row of the split input planes). */
void og_panel_gemm_off_f32(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p,
                           const float *b, const int64_t *off, float *ct, int64_t ldc,
                           const float *next);

#endif /* OG_GEMM_PANEL_H */
