/* gemm_small.c: float products with few rows (see gemm.h: og_gemm_small_f32).
 *
 * A classifier on a small batch, C[m, n] = A[m, k] · op(B), 1 <= m <= 8, reads B (the weights,
 * megabytes) once per call whatever the GEMM does; a BLAS also copies (packs) all of B
 * first, a second pass over the largest operand, which measured as long as the product.
 * Here B is read in place, once, with every row of A at a time:
 *
 *   B [k, n] (no transpose): a tile of C is the m rows by 32 columns; per k, two vectors
 *   of B's row k and m broadcasts of A[i][k], 2m multiply-adds.
 *   B [n, k] (transposed): a tile of C is the m rows by 2 columns j, j+1; per 16 values of
 *   k, B's two rows and A's m rows as vectors, 2m multiply-adds into 16-lane sums, added
 *   across the lanes at the end (dot products).
 *
 * Then C = alpha · sum (+ beta · C when beta is not 0: C is not read otherwise, so NaN in
 * its memory does not leak).  Columns go to threads in blocks. */
#include "kernels/cpu/gemm.h"

#ifdef OG_CPU_X86
#include <immintrin.h>

#define GS_MAX_M 8
#define GS_NB    32 /* B [k, n]: columns per tile */
/* Multiply-adds below which a call stays on one thread; with the session's workers (the
 * caller never waits for one asleep) from fewer: ResNet-18's 8 x 512 by 1000 x 512
 * classifier (4.1 M) 0.136 -> 0.085 ms on two threads */
#define GS_PAR_MIN         4194304.0
#define GS_PAR_MIN_WORKERS 1048576.0
/* B's values from which the kernel takes a product: from GS_B_MIN, where reading B a
 * second time matters; with sums of GS_LONG_K values or more from GS_B_MIN_LONG_K, where a
 * BLAS call's packing and setup outweighed the product.  MobileNet-v3 8x64x64's
 * squeeze-excite 1x1 Convs (8 images by 144 x 576 and 576 x 144, ...) took 0.37 ms in all
 * through OpenBLAS, 0.23 here, the network 0.94 of its time on one thread (AMD EPYC, Zen 4,
 * runs alternating in one process); EfficientNet-B0's, sums of 20 to 48 values, went 1.6x
 * slower this way (16 lanes of dot products mostly empty) and stay with the BLAS. */
#define GS_B_MIN        262144.0
#define GS_B_MIN_LONG_K 8192.0
#define GS_LONG_K       64
/* A constant B is packed (og_gemm_small_packs) for products of GS_PACK_MIN_M rows of A or
 * more (one row: gs_nt1_rows reads B's rows as they are, once) by GS_PACK_MIN_B values or more:
 * packed once, a small B beats a BLAS call too.  MobileNet-v3 8x64x64's squeeze-excite 1x1
 * Convs (8 images by 576 x 144, 144 x 576, ...) 1.57 -> 1.48 ms for the network on one
 * thread, EfficientNet-B0 8x64x64's (sums of 20 to 1152 values) 9.19 -> 8.80. */
#define GS_PACK_MIN_M 2
#define GS_PACK_MIN_B 4096.0

typedef struct gs_job {
    int64_t m, n, kk, lda, ldb, ldc;
    const float *a, *b;
    float *c, alpha, beta;
    int64_t per; /* columns per item */
} gs_job;

static inline void gs_store(const gs_job *j, int64_t i, int64_t col, float s)
{
    float *c = j->c + i * j->ldc + col;
    *c = j->beta != 0 ? j->alpha * s + j->beta * *c : j->alpha * s;
}

/* A's rows, mr of them: rows past m repeat the last one (computed, not stored). */
static void gs_rows(const gs_job *j, int mr, const float **ar)
{
    for (int i = 0; i < mr; i++) ar[i] = j->a + (i < j->m ? i : j->m - 1) * j->lda;
}

/* gs_tile<MR>: columns [c, c + w) of C (w <= GS_NB, masked past w) for m <= MR, B's row k
 * at bk + k·ldb: per k two vectors of B and m broadcasts of A[i][k], 2m multiply-adds.
 * gs_nn<MR>: B [k, n], columns [c0, c1) of C, GS_NB at a time.  gs_pk<MR>: B packed
 * (og_gemm_small_pack_f32), panels [c0, c1): one stream through B, the same sums.
 * gs_nt<MR> (MR > 1; one row: gs_nt1_rows): B [n, k], columns [c0, c1) two at a time. */
#define GS_KERNELS(MR)                                                                             \
    static inline OG_TARGET_AVX512 void gs_tile##MR(const gs_job *j, const float *const *ar,       \
                                                    const float *bk, int64_t ldb, int64_t c,       \
                                                    int64_t w)                                     \
    {                                                                                              \
        const __mmask16 m0 = (__mmask16)(w >= 16 ? 0xFFFF : (1u << w) - 1u);                       \
        const __mmask16 m1 = (__mmask16)(w >= 32 ? 0xFFFF : w > 16 ? (1u << (w - 16)) - 1u : 0);   \
        const bool full = w == GS_NB;                                                              \
        __m512 acc[MR][2];                                                                         \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] =               \
            _mm512_setzero_ps();                                                                   \
        for (int64_t k = 0; k < j->kk; k++, bk += ldb) {                                           \
            /* whole loads where the tile is whole (masked ones measured 11 % slower) */           \
            const __m512 b0 = full ? _mm512_loadu_ps(bk) : _mm512_maskz_loadu_ps(m0, bk);          \
            const __m512 b1 =                                                                      \
                full ? _mm512_loadu_ps(bk + 16) : _mm512_maskz_loadu_ps(m1, bk + 16);              \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                   \
            {                                                                                      \
                const __m512 av = _mm512_set1_ps(ar[i][k]);                                        \
                acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);                                    \
                acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);                                    \
            }                                                                                      \
        }                                                                                          \
        const __m512 al = _mm512_set1_ps(j->alpha), be = _mm512_set1_ps(j->beta);                  \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                       \
        {                                                                                          \
            if (i >= j->m) break;                                                                  \
            float *ci = j->c + i * j->ldc + c;                                                     \
            __m512 r0 = _mm512_mul_ps(al, acc[i][0]), r1 = _mm512_mul_ps(al, acc[i][1]);           \
            if (j->beta != 0) {                                                                    \
                r0 = _mm512_fmadd_ps(be, _mm512_maskz_loadu_ps(m0, ci), r0);                       \
                r1 = _mm512_fmadd_ps(be, _mm512_maskz_loadu_ps(m1, ci + 16), r1);                  \
            }                                                                                      \
            _mm512_mask_storeu_ps(ci, m0, r0);                                                     \
            _mm512_mask_storeu_ps(ci + 16, m1, r1);                                                \
        }                                                                                          \
    }                                                                                              \
    static OG_TARGET_AVX512 void gs_nn##MR(const gs_job *j, int64_t c0, int64_t c1)                \
    {                                                                                              \
        const float *ar[MR];                                                                       \
        gs_rows(j, MR, ar);                                                                        \
        for (int64_t c = c0; c < c1; c += GS_NB)                                                   \
            gs_tile##MR(j, ar, j->b + c, j->ldb, c, c1 - c < GS_NB ? c1 - c : GS_NB);              \
    }                                                                                              \
    static OG_TARGET_AVX512 void gs_pk##MR(const gs_job *j, int64_t p0, int64_t p1)                \
    {                                                                                              \
        const float *ar[MR];                                                                       \
        gs_rows(j, MR, ar);                                                                        \
        for (int64_t p = p0; p < p1; p++) {                                                        \
            const int64_t c = p * GS_NB;                                                           \
            gs_tile##MR(j, ar, j->b + c * j->kk, GS_NB, c, j->n - c < GS_NB ? j->n - c : GS_NB);   \
        }                                                                                          \
    }

#define GS_NT_KERNEL(MR)                                                                           \
    static OG_TARGET_AVX512 void gs_nt##MR(const gs_job *j, int64_t c0, int64_t c1)                \
    {                                                                                              \
        const int64_t kk = j->kk, kv = kk / 16 * 16;                                               \
        const __mmask16 tail = (__mmask16)((1u << (kk - kv)) - 1u);                                \
        const float *ar[MR];                                                                       \
        gs_rows(j, MR, ar);                                                                        \
        for (int64_t c = c0; c < c1; c += 2) {                                                     \
            const bool two = c + 1 < c1;                                                           \
            const float *b0 = j->b + c * j->ldb, *b1 = two ? b0 + j->ldb : b0;                     \
            /* the next pair's rows, a pair ahead (B is read once: from memory) */                 \
            const float *pf = c + 3 < c1 ? b0 + 2 * j->ldb : b0;                                   \
            __m512 acc[MR][2];                                                                     \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] =           \
                _mm512_setzero_ps();                                                               \
            int64_t k = 0;                                                                         \
            for (; k < kv; k += 16) {                                                              \
                _mm_prefetch((const char *)(pf + k), _MM_HINT_T0);                                 \
                _mm_prefetch((const char *)(pf + j->ldb + k), _MM_HINT_T0);                        \
                const __m512 v0 = _mm512_loadu_ps(b0 + k), v1 = _mm512_loadu_ps(b1 + k);           \
                _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                               \
                {                                                                                  \
                    const __m512 av = _mm512_loadu_ps(ar[i] + k);                                  \
                    acc[i][0] = _mm512_fmadd_ps(av, v0, acc[i][0]);                                \
                    acc[i][1] = _mm512_fmadd_ps(av, v1, acc[i][1]);                                \
                }                                                                                  \
            }                                                                                      \
            if (tail) {                                                                            \
                const __m512 v0 = _mm512_maskz_loadu_ps(tail, b0 + k);                             \
                const __m512 v1 = _mm512_maskz_loadu_ps(tail, b1 + k);                             \
                _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                               \
                {                                                                                  \
                    const __m512 av = _mm512_maskz_loadu_ps(tail, ar[i] + k);                      \
                    acc[i][0] = _mm512_fmadd_ps(av, v0, acc[i][0]);                                \
                    acc[i][1] = _mm512_fmadd_ps(av, v1, acc[i][1]);                                \
                }                                                                                  \
            }                                                                                      \
            for (int64_t i = 0; i < j->m; i++) {                                                   \
                gs_store(j, i, c, _mm512_reduce_add_ps(acc[i][0]));                                \
                if (two) gs_store(j, i, c + 1, _mm512_reduce_add_ps(acc[i][1]));                   \
            }                                                                                      \
        }                                                                                          \
    }
GS_KERNELS(1)
GS_KERNELS(4)
GS_KERNELS(8)
GS_NT_KERNEL(4)
GS_NT_KERNEL(8)
#undef GS_KERNELS
#undef GS_NT_KERNEL

/* gs_nt1_rows: one row of A by B [n, k] (a classifier on one image), columns [c0, c1) of
 * C GS_NT1_R at a time, GS_NT1_R streams through B's rows.  From GS_NT1_PF_MIN values of
 * B the next GS_NT1_R rows are prefetched into L2 at the same offsets meanwhile: in a
 * network, the rest of a run passes through L2 between two calls, so B comes from L3 or
 * memory, and a stream's hardware prefetch starts anew at each 4 KiB page (a row of 1024
 * values is one page).  Each column's sum is as gs_nt<MR>'s: one 16-lane sum along k,
 * added across the lanes at the end.  AMD EPYC (Zen 4), one thread, against two rows a
 * step with the next pair prefetched into L1 (before), medians of 61 calls: B out of the
 * caches, 1000 x 1024 0.26-0.30 -> 0.13-0.22 ms, 1024 x 576 0.21-0.25 -> 0.12-0.16, 1000
 * x 1280 0.34-0.40 -> 0.24-0.32, 576 x 144 0.039-0.040 -> 0.028; B in L3, 1000 x 1024
 * 0.048-0.052 -> 0.063-0.073 (the prefetches' cost); in L2, 144 x 576 0.0030 ->
 * 0.0036.  In MobileNet-v3 224 (one image) the classifier's two products took 0.52-0.62
 * ms -> 0.32-0.37, its squeeze-excite 1x1 Convs 0.16-0.23 -> 0.13-0.15 (sums of the
 * per-node means, alternating runs), the network 0.87-0.91 of its time. */
#define GS_NT1_R      8
#define GS_NT1_PF_MIN 16384.0
static inline OG_TARGET_AVX512 void gs_nt1_block(const gs_job *j, const float *b0, const float *pf,
                                                 int64_t c)
{
    const int64_t kk = j->kk, kv = kk / 16 * 16, ldb = j->ldb;
    const __mmask16 tail = (__mmask16)((1u << (kk - kv)) - 1u);
    const float *a = j->a;
    __m512 acc[GS_NT1_R];
    _Pragma("GCC unroll 8") for (int r = 0; r < GS_NT1_R; r++) acc[r] = _mm512_setzero_ps();
    int64_t k = 0;
    if (pf)
        for (; k < kv; k += 16) {
            const __m512 av = _mm512_loadu_ps(a + k);
            _Pragma("GCC unroll 8") for (int r = 0; r < GS_NT1_R; r++)
            {
                _mm_prefetch((const char *)(pf + r * ldb + k), _MM_HINT_T1);
                acc[r] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b0 + r * ldb + k), acc[r]);
            }
        }
    else
        for (; k < kv; k += 16) {
            const __m512 av = _mm512_loadu_ps(a + k);
            _Pragma("GCC unroll 8") for (int r = 0; r < GS_NT1_R; r++) acc[r] =
                _mm512_fmadd_ps(av, _mm512_loadu_ps(b0 + r * ldb + k), acc[r]);
        }
    if (tail) {
        const __m512 av = _mm512_maskz_loadu_ps(tail, a + k);
        _Pragma("GCC unroll 8") for (int r = 0; r < GS_NT1_R; r++) acc[r] =
            _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(tail, b0 + r * ldb + k), acc[r]);
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < GS_NT1_R; r++)
        gs_store(j, 0, c + r, _mm512_reduce_add_ps(acc[r]));
}

static OG_TARGET_AVX512 void gs_nt1_rows(const gs_job *j, int64_t c0, int64_t c1)
{
    const int64_t kk = j->kk, kv = kk / 16 * 16, ldb = j->ldb;
    const __mmask16 tail = (__mmask16)((1u << (kk - kv)) - 1u);
    const bool big = (double)j->n * (double)kk >= GS_NT1_PF_MIN;
    int64_t c = c0;
    for (; c + GS_NT1_R <= c1; c += GS_NT1_R) {
        const float *b0 = j->b + c * ldb;
        gs_nt1_block(j, b0, big && c + 2 * GS_NT1_R <= j->n ? b0 + GS_NT1_R * ldb : NULL, c);
    }
    for (; c < c1; c++) { /* the last few columns, one at a time */
        const float *b0 = j->b + c * ldb;
        __m512 acc = _mm512_setzero_ps();
        int64_t k = 0;
        for (; k < kv; k += 16)
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(j->a + k), _mm512_loadu_ps(b0 + k), acc);
        if (tail)
            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, j->a + k),
                                  _mm512_maskz_loadu_ps(tail, b0 + k), acc);
        gs_store(j, 0, c, _mm512_reduce_add_ps(acc));
    }
}

/* Item it: columns [it · per, (it + 1) · per) of C. */
static void gs_item(const gs_job *j, bool trans_b, int64_t it)
{
    const int64_t c0 = it * j->per, c1 = c0 + j->per < j->n ? c0 + j->per : j->n;
    if (j->m == 1)
        (trans_b ? gs_nt1_rows : gs_nn1)(j, c0, c1);
    else if (j->m <= 4)
        (trans_b ? gs_nt4 : gs_nn4)(j, c0, c1);
    else
        (trans_b ? gs_nt8 : gs_nn8)(j, c0, c1);
}
typedef struct gs_run {
    const gs_job *j;
    bool trans_b, packed;
} gs_run;

static void gs_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const gs_run *r = ctx;
    (void)slot;
    if (r->packed) { /* items: panels [i0, i1) */
        (r->j->m == 1 ? gs_pk1 : r->j->m <= 4 ? gs_pk4 : gs_pk8)(r->j, i0, i1);
        return;
    }
    for (int64_t it = i0; it < i1; it++) gs_item(r->j, r->trans_b, it);
}

/* Threads for a product of `work` multiply-adds. */
static int gs_threads(const og_kernel_ctx *k, double work)
{
    return k && k->threads > 1 &&
                   work >= (k->workers ? og_par_min(k, GS_PAR_MIN_WORKERS) : GS_PAR_MIN)
               ? k->threads
               : 1;
}
#endif /* OG_CPU_X86 */

bool og_gemm_small_f32(const og_kernel_ctx *k, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t kk, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, float *c, int64_t ldc)
{
#ifdef OG_CPU_X86
    /* where B is large enough (GS_B_MIN), and A's rows are few */
    if (trans_a || m < 1 || m > GS_MAX_M || kk < 16 || n < 16 ||
        (double)n * (double)kk < (kk >= GS_LONG_K ? GS_B_MIN_LONG_K : GS_B_MIN) || og_cpu_isa() < 2)
        return false;
    gs_job j = {m, n, kk, lda, ldb, ldc, a, b, c, alpha, beta, 0};
    const int64_t unit = !trans_b ? GS_NB : m == 1 ? GS_NT1_R : 2;
    const int threads = gs_threads(k, (double)m * (double)n * (double)kk);
    const int64_t units = (n + unit - 1) / unit, items = threads > 1 ? 4 * (int64_t)threads : 1;
    j.per = (units + items - 1) / items * unit;
    const int64_t nitems = (n + j.per - 1) / j.per;
    gs_run r = {&j, trans_b, false};
    if (k)
        og_par_range(k, threads, nitems, 1, gs_range, &r);
    else
        gs_range(&r, 0, nitems, 0);
    return true;
#else
    (void)k, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)kk, (void)alpha, (void)a;
    (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
    return false;
#endif
}

bool og_gemm_small_packs(int64_t m, int64_t n, int64_t kk)
{
#ifdef OG_CPU_X86
    return m >= GS_PACK_MIN_M && m <= GS_MAX_M && n >= 16 &&
           (double)n * (double)kk >= GS_PACK_MIN_B && og_cpu_isa() >= 2;
#else
    (void)m, (void)n, (void)kk;
    return false;
#endif
}

int64_t og_gemm_small_pack_floats(int64_t n, int64_t kk)
{
    return (n + GS_NB - 1) / GS_NB * GS_NB * kk;
}

void og_gemm_small_pack_f32(bool trans_b, int64_t n, int64_t kk, const float *b, int64_t ldb,
                            float *bp)
{
    for (int64_t c = 0; c < n; c += GS_NB) {
        const int64_t w = n - c < GS_NB ? n - c : GS_NB;
        float *pp = bp + c * kk;
        if (trans_b) /* B [n, k]: a block of 32 rows transposed, 32 values of k at a time */
            for (int64_t k0 = 0; k0 < kk; k0 += 32) {
                const int64_t k1 = k0 + 32 < kk ? k0 + 32 : kk;
                for (int64_t jj = 0; jj < GS_NB; jj++)
                    for (int64_t q = k0; q < k1; q++)
                        pp[q * GS_NB + jj] = jj < w ? b[(c + jj) * ldb + q] : 0.0f;
            }
        else
            for (int64_t q = 0; q < kk; q++)
                for (int64_t jj = 0; jj < GS_NB; jj++)
                    pp[q * GS_NB + jj] = jj < w ? b[q * ldb + c + jj] : 0.0f;
    }
}

void og_gemm_small_packed_f32(const og_kernel_ctx *k, int64_t m, int64_t n, int64_t kk, float alpha,
                              const float *a, int64_t lda, const float *bp, float beta, float *c,
                              int64_t ldc)
{
#ifdef OG_CPU_X86
    gs_job j = {m, n, kk, lda, GS_NB, ldc, a, bp, c, alpha, beta, 0};
    const int threads = gs_threads(k, (double)m * (double)n * (double)kk);
    const int64_t panels = (n + GS_NB - 1) / GS_NB;
    gs_run r = {&j, false, true};
    if (k)
        og_par_range(k, threads, panels, 1, gs_range, &r);
    else
        gs_range(&r, 0, panels, 0);
#else
    (void)k, (void)m, (void)n, (void)kk, (void)alpha, (void)a, (void)lda, (void)bp, (void)beta;
    (void)c, (void)ldc;
#endif
}
