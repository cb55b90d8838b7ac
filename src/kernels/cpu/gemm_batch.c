/* gemm_batch.c: one small float product of a batch (see gemm.h: og_gemm_batch_f32).
 *
 * Attention's heads multiply matrices of 64 to 256 rows and columns, tens of them a call;
 * oneDNN's sgemm packs both operands of each first, and where B comes transposed (Q·Kᵀ,
 * and the gradients' dS·K-like products read that way) its packing was slow: 32 products
 * of 64 x 64 x 64 took 0.229 ms that way against 0.175 untransposed.  Here C [m, n] =
 * op(A) · op(B), C overwritten, in tiles of 8 rows by 32 columns whose sums stay in 16
 * AVX-512 registers:
 *
 *   per k: two vectors of op(B)'s row k, 8 broadcasts of op(A)[i][k], 16 multiply-adds.
 *
 * op(A) is read in place whether transposed or not (a broadcast reads any address).  op(B)
 * must have its columns one float apart: B [k, n] is read in place; Bᵀ (B stored [n, k])
 * is moved first, 16 x 16 blocks through register transposes (tr16.h), into a panel on
 * the stack, 32 columns at a time.  Each output sums its k products in order, from 0.
 *
 * Which products take it (og_gemm_batch_applies), one thread, medians of 300 runs of a
 * batched MatMul on the AMD EPYC (Zen 4): B transposed, 32 x 64 x 64 x 64 0.229 -> 0.177
 * ms, 16 x 128 x 64 x 64 0.196 -> 0.171, 32 x 64 x 64 x 128 0.445 -> 0.349, 32 x 64 x 32 x
 * 64 0.116 -> 0.091; the transformer block's training step, its six batched products
 * 1.460 -> 1.275 ms.  Not: 128 x 128 x 64 (1.04 against the BLAS's 0.99: its blocking
 * wins from there), rows or columns that leave tails (100 x 77 x 50: 0.136 against 0.125),
 * B not transposed (64 x 64 x 64 5 % faster, 64 x 32 x 64 8 % slower) and A transposed
 * (64 x 128 x 64 7 % slower; the transformer's two such products 3 %). */
#include "kernels/cpu/gemm.h"

#ifdef OG_CPU_X86
#include <immintrin.h>

#include "kernels/cpu/tr16.h"

#define GB_MR 8  /* rows of a tile */
#define GB_NB 32 /* columns of a tile: two vectors */

bool og_gemm_batch_applies(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk)
{
    return og_cpu_isa() >= 2 && !trans_a && trans_b && m >= GB_MR && m % GB_MR == 0 && n >= 16 &&
           n % 16 == 0 && kk >= 16 && kk <= OG_GEMM_BATCH_MAX_K &&
           (double)m * (double)n * (double)kk <= OG_GEMM_BATCH_MAX_WORK;
}

/* Rows [i0, i0 + mr) (mr <= GB_MR; rows past it repeat the last, computed and not stored)
 * by a block of up to 32 columns: nv vectors, the lanes m0 of the first and m1 of the
 * second kept; op(A)'s row r at a + r * sai, its values sak apart; op(B)'s row q at
 * bp + q * ldb. */
static inline __attribute__((always_inline)) OG_TARGET_AVX512 void
gb_tile(int64_t kk, const float *a, int64_t sai, int64_t sak, int mr, const float *bp, int64_t ldb,
        const int nv, __mmask16 m0, __mmask16 m1, float *c, int64_t ldc)
{
    __m512 acc[GB_MR][2];
    const float *ar[GB_MR];
    _Pragma("GCC unroll 8") for (int r = 0; r < GB_MR; r++)
    {
        ar[r] = a + (r < mr ? r : mr - 1) * sai;
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    }
    for (int64_t q = 0; q < kk; q++) {
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, bp + q * ldb);
        const __m512 b1 = nv > 1 ? _mm512_maskz_loadu_ps(m1, bp + q * ldb + 16) : b0;
        _Pragma("GCC unroll 8") for (int r = 0; r < GB_MR; r++)
        {
            const __m512 av = _mm512_set1_ps(ar[r][q * sak]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            if (nv > 1) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < GB_MR; r++)
    {
        if (r >= mr) break;
        _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
        if (nv > 1) _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
    }
}

/* Columns [j0, j0 + w) (w <= 32) of op(B) = Bᵀ, B [n, k] with rows ldb apart, into
 * panel [k, 32]: 16 x 16 blocks by register transposes, rows and columns past the
 * matrix read as zeros. */
static OG_TARGET_AVX512 void gb_pack_t(int64_t kk, const float *b, int64_t ldb, int64_t j0,
                                       int64_t w, float *panel)
{
    for (int64_t jb = 0; jb < w; jb += 16) {
        const int64_t rows = w - jb < 16 ? w - jb : 16;
        for (int64_t q0 = 0; q0 < kk; q0 += 16) {
            const int64_t cols = kk - q0 < 16 ? kk - q0 : 16;
            const __mmask16 cm = (__mmask16)(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = i < rows ? _mm512_maskz_loadu_ps(cm, b + (j0 + jb + i) * ldb + q0)
                                : _mm512_setzero_ps();
            og_tr16_f32(r);
            for (int i = 0; i < cols; i++) _mm512_storeu_ps(panel + (q0 + i) * GB_NB + jb, r[i]);
        }
    }
}

static OG_TARGET_AVX512 void gb_tile2(int64_t kk, const float *a, int64_t sai, int64_t sak, int mr,
                                      const float *bp, int64_t ldb, __mmask16 m0, __mmask16 m1,
                                      float *c, int64_t ldc)
{
    gb_tile(kk, a, sai, sak, mr, bp, ldb, 2, m0, m1, c, ldc);
}

static OG_TARGET_AVX512 void gb_tile1(int64_t kk, const float *a, int64_t sai, int64_t sak, int mr,
                                      const float *bp, int64_t ldb, __mmask16 m0, float *c,
                                      int64_t ldc)
{
    gb_tile(kk, a, sai, sak, mr, bp, ldb, 1, m0, 0, c, ldc);
}

OG_TARGET_AVX512 bool og_gemm_batch_f32(bool trans_a, bool trans_b, int64_t m, int64_t n,
                                        int64_t kk, const float *a, int64_t lda, const float *b,
                                        int64_t ldb, float *c, int64_t ldc)
{
    if (og_cpu_isa() < 2 || (trans_b && kk > OG_GEMM_BATCH_MAX_K)) return false;
    /* op(A)[i][q] at a + i * sai + q * sak */
    const int64_t sai = trans_a ? 1 : lda, sak = trans_a ? lda : 1;
    float panel[OG_GEMM_BATCH_MAX_K * GB_NB] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < n; j0 += GB_NB) {
        const int64_t w = n - j0 < GB_NB ? n - j0 : GB_NB;
        const int nv = w > 16 ? 2 : 1;
        const __mmask16 m0 = (__mmask16)(w >= 16 ? 0xFFFF : (1u << w) - 1u);
        const __mmask16 m1 = (__mmask16)(w >= 32 ? 0xFFFF : w > 16 ? (1u << (w - 16)) - 1u : 0u);
        const float *bp = b + j0;
        int64_t lb = ldb;
        if (trans_b) {
            gb_pack_t(kk, b, ldb, j0, w, panel);
            bp = panel;
            lb = GB_NB;
        }
        for (int64_t i0 = 0; i0 < m; i0 += GB_MR) {
            const int mr = m - i0 < GB_MR ? (int)(m - i0) : GB_MR;
            if (nv > 1)
                gb_tile2(kk, a + i0 * sai, sai, sak, mr, bp, lb, m0, m1, c + i0 * ldc + j0, ldc);
            else
                gb_tile1(kk, a + i0 * sai, sai, sak, mr, bp, lb, m0, c + i0 * ldc + j0, ldc);
        }
    }
    return true;
}

#else

bool og_gemm_batch_applies(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)kk;
    return false;
}

bool og_gemm_batch_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t kk, const float *a,
                       int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)kk, (void)a, (void)lda, (void)b,
        (void)ldb, (void)c, (void)ldc;
    return false;
}

#endif
