/* gemm_panel.c: products of a packed A by few columns (see gemm_panel.h).
 *
 * A tile of Ct is P columns j of B (P <= 12) by one panel of 32 rows of A, its sums in
 * 2P AVX-512 registers: per step q, the panel's row q as two vectors, P broadcasts of
 * B[q][j], 2P multiply-adds.  The columns are cut into groups of equal size (49 columns:
 * 5 groups of 10 and 9, not 4 of 12 and one of 1).  K goes in blocks of PANEL_KC, so that
 * a panel's block (16 KB) stays in L1 while every column group passes over it and B's
 * block stays in L2 while every panel does; the sums of a tile are stored after each block
 * and loaded again for the next one (exactly: a store and a load do not round).  The tiles
 * of a block prefetch the panel's next block of A into L2, whose first pass otherwise waits
 * on memory where the weights are not in cache (ResNet-18 at 224 on one thread 16.9 -> 15.1
 * ms).  The block's rows are shared out among its column groups and spread over each
 * tile's steps (a row every kc / rows steps): issued all in the first tile, two lines a
 * step, they held the line-fill buffers the tile's own loads wait on.  Spread, ResNet-18's
 * 7x7 layers of 512 channels (weights 9.4 MB, from memory) took 1.89 ms against 2.07 and
 * the network 0.943 of its time on one thread, 0.957 on two; MobileNet-v2 0.983 and 0.992
 * (paired medians of 40-150 alternating runs in one process).
 *
 * A panel holding at most 16 of A's rows (og_panel_gemm_m_f32) goes by half tiles: up to 24
 * columns by its first 16 rows, one vector of the panel row and a broadcast per column
 * each step, the same sums in the same order. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/gemm_panel.h"

#define PANEL_NR 12  /* columns per tile at most */
#define PANEL_KC 128 /* steps of the sum per block */

void og_panel_pack_f32(int64_t m, int64_t k, const float *a, int64_t lda, float *p)
{
    const int64_t np = og_panel_count(m);
    for (int64_t pi = 0; pi < np; pi++)
        for (int r = 0; r < OG_PANEL_MR; r++) {
            const int64_t i = pi * OG_PANEL_MR + r;
            float *dst = p + pi * OG_PANEL_MR * k + r;
            for (int64_t q = 0; q < k; q++) dst[q * OG_PANEL_MR] = i < m ? a[i * lda + q] : 0.0f;
        }
}

/* The same sums one at a time, in the same order (fmaf: one rounding per step, as the
 * vector multiply-adds): for CPUs without AVX-512. */
static void panel_gemm_scalar(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p,
                              const float *b, int64_t ldb, const int64_t *off, float *ct,
                              int64_t ldc)
{
    for (int64_t pi = p0; pi < p1; pi++)
        for (int64_t j = 0; j < n; j++)
            for (int r = 0; r < OG_PANEL_MR; r++) {
                float s = 0.0f;
                for (int64_t q = 0; q < k; q++)
                    s = fmaf(p[(pi * k + q) * OG_PANEL_MR + r], b[(off ? off[q] : q * ldb) + j], s);
                ct[j * ldc + (pi - p0) * OG_PANEL_MR + r] = s;
            }
}

#ifdef OG_CPU_X86
#include <immintrin.h>

/* One tile: ct[j * ldc + r] (+)= Σ_{q < kc} a[q * 32 + r] · b[ROW + j], j < P, with ROW
 * q · ldb (panel_tile) or off[q] (panel_tile_off); `more` adds to what ct holds (a block
 * after the first); prefetch rows pf[r * 32 .. + 31], r < npf, into L2 (rows of the next
 * block), one at steps 0, pfs, 2 pfs, ... */
#define PANEL_TILE(NAME, ROW, P)                                                                   \
    static OG_TARGET_AVX512 void NAME##P(int64_t kc, const float *restrict a,                      \
                                         const float *restrict b, int64_t ldb,                     \
                                         const int64_t *restrict off, float *restrict ct,          \
                                         int64_t ldc, bool more, const float *pf, int64_t npf)     \
    {                                                                                              \
        (void)ldb, (void)off;                                                                      \
        __m512 s0[P], s1[P];                                                                       \
        _Pragma("GCC unroll 12") for (int j = 0; j < P; j++)                                       \
        {                                                                                          \
            s0[j] = more ? _mm512_loadu_ps(ct + j * ldc) : _mm512_setzero_ps();                    \
            s1[j] = more ? _mm512_loadu_ps(ct + j * ldc + 16) : _mm512_setzero_ps();               \
        }                                                                                          \
        /* the npf rows to prefetch, one every pfs steps */                                        \
        const int64_t pfs = npf > 0 && kc / npf > 1 ? kc / npf : 1;                                \
        int64_t pfq = 0, pfr = 0;                                                                  \
        for (int64_t q = 0; q < kc; q++) {                                                         \
            const __m512 a0 = _mm512_loadu_ps(a + q * OG_PANEL_MR);                                \
            const __m512 a1 = _mm512_loadu_ps(a + q * OG_PANEL_MR + 16);                           \
            const float *bq = b + (ROW);                                                           \
            if (q == pfq && pfr < npf) {                                                           \
                _mm_prefetch((const char *)(pf + pfr * OG_PANEL_MR), _MM_HINT_T1);                 \
                _mm_prefetch((const char *)(pf + pfr * OG_PANEL_MR + 16), _MM_HINT_T1);            \
                pfr++;                                                                             \
                pfq += pfs;                                                                        \
            }                                                                                      \
            _Pragma("GCC unroll 12") for (int j = 0; j < P; j++)                                   \
            {                                                                                      \
                const __m512 bv = _mm512_set1_ps(bq[j]);                                           \
                s0[j] = _mm512_fmadd_ps(a0, bv, s0[j]);                                            \
                s1[j] = _mm512_fmadd_ps(a1, bv, s1[j]);                                            \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 12") for (int j = 0; j < P; j++)                                       \
        {                                                                                          \
            _mm512_storeu_ps(ct + j * ldc, s0[j]);                                                 \
            _mm512_storeu_ps(ct + j * ldc + 16, s1[j]);                                            \
        }                                                                                          \
    }
#define PANEL_TILES(NAME, ROW)                                                                     \
    PANEL_TILE(NAME, ROW, 1)                                                                       \
    PANEL_TILE(NAME, ROW, 2)                                                                       \
    PANEL_TILE(NAME, ROW, 3)                                                                       \
    PANEL_TILE(NAME, ROW, 4)                                                                       \
    PANEL_TILE(NAME, ROW, 5)                                                                       \
    PANEL_TILE(NAME, ROW, 6)                                                                       \
    PANEL_TILE(NAME, ROW, 7)                                                                       \
    PANEL_TILE(NAME, ROW, 8)                                                                       \
    PANEL_TILE(NAME, ROW, 9)                                                                       \
    PANEL_TILE(NAME, ROW, 10)                                                                      \
    PANEL_TILE(NAME, ROW, 11)                                                                      \
    PANEL_TILE(NAME, ROW, 12)                                                                      \
    static const panel_tile_fn NAME##s[PANEL_NR + 1] = {                                           \
        NULL,    NAME##1, NAME##2, NAME##3,  NAME##4,  NAME##5, NAME##6,                           \
        NAME##7, NAME##8, NAME##9, NAME##10, NAME##11, NAME##12};

typedef void (*panel_tile_fn)(int64_t, const float *, const float *, int64_t, const int64_t *,
                              float *, int64_t, bool, const float *, int64_t);
PANEL_TILES(panel_tile, q *ldb)
PANEL_TILES(panel_tile_off, off[q])
#undef PANEL_TILES
#undef PANEL_TILE

/* A tile of a panel's first 16 rows only (a last panel of at most 16 of A's rows): the
 * same sums for r < 16, ct[j * ldc + 16 ..] left as they were.  24 columns at most: per
 * step one vector of the panel row and up to 24 broadcasts, as many multiply-adds. */
#define PANEL_HALF_NR 24
#define PANEL_HALF(P)                                                                              \
    static OG_TARGET_AVX512 void panel_half##P(                                                    \
        int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,                 \
        float *restrict ct, int64_t ldc, bool more, const float *pf, int64_t npf)                  \
    {                                                                                              \
        __m512 s0[P];                                                                              \
        _Pragma("GCC unroll 24") for (int j = 0; j < P; j++) s0[j] =                               \
            more ? _mm512_loadu_ps(ct + j * ldc) : _mm512_setzero_ps();                            \
        const int64_t pfs = npf > 0 && kc / npf > 1 ? kc / npf : 1;                                \
        int64_t pfq = 0, pfr = 0;                                                                  \
        for (int64_t q = 0; q < kc; q++) {                                                         \
            const __m512 a0 = _mm512_loadu_ps(a + q * OG_PANEL_MR);                                \
            const float *bq = b + q * ldb;                                                         \
            if (q == pfq && pfr < npf) {                                                           \
                _mm_prefetch((const char *)(pf + pfr * OG_PANEL_MR), _MM_HINT_T1);                 \
                pfr++;                                                                             \
                pfq += pfs;                                                                        \
            }                                                                                      \
            _Pragma("GCC unroll 24") for (int j = 0; j < P; j++) s0[j] =                           \
                _mm512_fmadd_ps(a0, _mm512_set1_ps(bq[j]), s0[j]);                                 \
        }                                                                                          \
        _Pragma("GCC unroll 24") for (int j = 0; j < P; j++)                                       \
            _mm512_storeu_ps(ct + j * ldc, s0[j]);                                                 \
    }
PANEL_HALF(4)
PANEL_HALF(8)
PANEL_HALF(12)
PANEL_HALF(16)
PANEL_HALF(20)
PANEL_HALF(24)
#undef PANEL_HALF

/* Columns [0, n) of a half panel: tiles of 24 columns, then one of a multiple of 4, then
 * the last 1-3 columns one at a time; each tile prefetches its share of the npf rows. */
static OG_TARGET_AVX512 void panel_half(int64_t kc, const float *a, const float *b, int64_t ldb,
                                        int64_t n, float *ct, int64_t ldc, bool more,
                                        const float *pf, int64_t npf)
{
    typedef void (*half_fn)(int64_t, const float *, const float *, int64_t, float *, int64_t, bool,
                            const float *, int64_t);
    static const half_fn fns[7] = {NULL,         panel_half4,  panel_half8, panel_half12,
                                   panel_half16, panel_half20, panel_half24};
    const int64_t groups = (n + PANEL_HALF_NR - 1) / PANEL_HALF_NR;
    const int64_t share = npf > 0 ? (npf + groups - 1) / groups : 0;
    int64_t j0 = 0, r0 = 0;
    for (; j0 + 4 <= n; r0 += share) {
        const int64_t w = n - j0 >= PANEL_HALF_NR ? PANEL_HALF_NR : (n - j0) / 4 * 4;
        const int64_t nr = r0 < npf ? (npf - r0 < share ? npf - r0 : share) : 0;
        fns[w / 4](kc, a, b + j0, ldb, ct + j0 * ldc, ldc, more, nr ? pf + r0 * OG_PANEL_MR : NULL,
                   nr);
        j0 += w;
    }
    for (; j0 < n; j0++) { /* the last 1-3 columns */
        __m512 s = more ? _mm512_loadu_ps(ct + j0 * ldc) : _mm512_setzero_ps();
        for (int64_t q = 0; q < kc; q++)
            s = _mm512_fmadd_ps(_mm512_loadu_ps(a + q * OG_PANEL_MR),
                                _mm512_set1_ps(b[q * ldb + j0]), s);
        _mm512_storeu_ps(ct + j0 * ldc, s);
    }
}

/* og_panel_gemm_f32 and og_panel_gemm_off_f32: B's row q at b + q * ldb, or b + off[q]
 * where off is not NULL; m (>= 0, without off) A's rows, a panel of at most 16 of them
 * computed by half tiles */
static void panel_gemm(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p, const float *b,
                       int64_t ldb, const int64_t *off, float *ct, int64_t ldc, const float *next,
                       int64_t m)
{
    if (n <= 0 || p1 <= p0) return;
    if (og_cpu_isa() < 2) {
        panel_gemm_scalar(p0, p1, n, k, p, b, ldb, off, ct, ldc);
        return;
    }
    const int64_t groups = (n + PANEL_NR - 1) / PANEL_NR, per = (n + groups - 1) / groups;
    if (k <= 0) { /* empty sums */
        for (int64_t j = 0; j < n; j++)
            memset(ct + j * ldc, 0, (size_t)((p1 - p0) * OG_PANEL_MR) * sizeof(float));
        return;
    }
    const panel_tile_fn *tiles = off ? panel_tile_offs : panel_tiles;
    for (int64_t kb = 0; kb < k; kb += PANEL_KC) {
        const int64_t kc = k - kb < PANEL_KC ? k - kb : PANEL_KC;
        /* the next block of the stream: this panel's next, else the next panel's first */
        const int64_t nkc = kb + kc < k ? (k - kb - kc < PANEL_KC ? k - kb - kc : PANEL_KC)
                                        : (k < PANEL_KC ? k : PANEL_KC);
        for (int64_t pi = p0; pi < p1; pi++) {
            const float *a = p + (pi * k + kb) * OG_PANEL_MR;
            const float *pf = kb + kc < k || pi + 1 < p1 ? a + kc * OG_PANEL_MR : next;
            const int64_t npf = pf ? (nkc < kc ? nkc : kc) : 0;
            if (!off && m >= 0 && m - pi * OG_PANEL_MR <= 16) {
                panel_half(kc, a, b + kb * ldb, ldb, n, ct + (pi - p0) * OG_PANEL_MR, ldc, kb > 0,
                           pf, npf);
                continue;
            }
            /* each column group prefetches its share of those rows */
            const int64_t share = (npf + groups - 1) / groups;
            for (int64_t j0 = 0, r0 = 0; j0 < n; j0 += per, r0 += share) {
                const int64_t pj = n - j0 < per ? n - j0 : per;
                const int64_t nr = r0 < npf ? (npf - r0 < share ? npf - r0 : share) : 0;
                tiles[pj](kc, a, b + (off ? 0 : kb * ldb) + j0, ldb, off ? off + kb : NULL,
                          ct + j0 * ldc + (pi - p0) * OG_PANEL_MR, ldc, kb > 0,
                          nr ? pf + r0 * OG_PANEL_MR : NULL, nr);
            }
        }
    }
}
#else
static void panel_gemm(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p, const float *b,
                       int64_t ldb, const int64_t *off, float *ct, int64_t ldc, const float *next,
                       int64_t m)
{
    (void)next, (void)m;
    panel_gemm_scalar(p0, p1, n, k, p, b, ldb, off, ct, ldc);
}
#endif

void og_panel_gemm_f32(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p, const float *b,
                       int64_t ldb, float *ct, int64_t ldc, const float *next)
{
    panel_gemm(p0, p1, n, k, p, b, ldb, NULL, ct, ldc, next, -1);
}

void og_panel_gemm_m_f32(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p,
                         const float *b, int64_t ldb, float *ct, int64_t ldc, const float *next,
                         int64_t m)
{
    panel_gemm(p0, p1, n, k, p, b, ldb, NULL, ct, ldc, next, m);
}

void og_panel_gemm_off_f32(int64_t p0, int64_t p1, int64_t n, int64_t k, const float *p,
                           const float *b, const int64_t *off, float *ct, int64_t ldc,
                           const float *next)
{
    panel_gemm(p0, p1, n, k, p, b, 0, off, ct, ldc, next, -1);
}
