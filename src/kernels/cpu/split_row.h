/* split_row.h: one zero-padded input row, split into its even and odd columns, for the
 * AVX-512 float loops of Winograd tiles (conv_wino.c) and stride-2 convolutions
 * (conv_s2.c): column 2j + k of the padded row is then element j + k/2 of the even or the
 * odd half, a plain vector load; and the zero-padded rows of stride-1 depthwise planes
 * (conv_dw_plane.h).  Internal header (static functions). */
#ifndef OG_SPLIT_ROW_H
#define OG_SPLIT_ROW_H

#include "kernels/cpu/kernel.h"

#ifdef OG_CPU_X86
#include <immintrin.h>

/* Bit l (l < 16) set where position c0 + l of a padded row (pad values before it) holds
 * an input value, c0 + l - pad in [0, w): the mask of a 16-lane load of that row that
 * reads only the input row's own values (AVX-512 masked loads do not touch masked-off
 * memory). */
static inline __mmask16 split_lanes_in(int64_t c0, int64_t pad, int64_t w)
{
    int64_t lo = pad - c0, hi = w + pad - c0;
    lo = lo < 0 ? 0 : lo;
    hi = hi > 16 ? 16 : hi;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* Padded columns [0, wp) of an input row of w values with pad zeros before it (row: its
 * first value; NULL: a row of pads) into dst: the even ones at dst[0, (wp + 1) / 2), the
 * odd ones at dst[half, half + wp / 2).  Loads are masked to the row's own values. */
static OG_TARGET_AVX512 void og_split_row_f32(const float *row, int64_t pad, int64_t w, int64_t wp,
                                              int64_t half, float *dst)
{
    if (!row) {
        memset(dst, 0, (size_t)((wp + 1) / 2) * sizeof(float));
        memset(dst + half, 0, (size_t)(wp / 2) * sizeof(float));
        return;
    }
    const float *src = row - pad; /* padded column c is src[c] where in range */
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t c = 0; c < wp; c += 32) {
        __m512 a, b;
        if (c >= pad && c + 32 <= pad + w) {
            a = _mm512_loadu_ps(src + c);
            b = _mm512_loadu_ps(src + c + 16);
        } else {
            a = _mm512_maskz_loadu_ps(split_lanes_in(c, pad, w), src + c);
            b = _mm512_maskz_loadu_ps(split_lanes_in(c + 16, pad, w), src + c + 16);
        }
        const __m512 e = _mm512_permutex2var_ps(a, ev, b), o = _mm512_permutex2var_ps(a, od, b);
        if (c + 32 <= wp) {
            _mm512_storeu_ps(dst + c / 2, e);
            _mm512_storeu_ps(dst + half + c / 2, o);
        } else {
            const int64_t ne = (wp - c + 1) / 2, no = (wp - c) / 2; /* evens and odds left */
            _mm512_mask_storeu_ps(dst + c / 2, (__mmask16)((1u << ne) - 1u), e);
            _mm512_mask_storeu_ps(dst + half + c / 2, (__mmask16)((1u << no) - 1u), o);
        }
    }
}

/* The masks of the rows of one geometry, computed once for all of a plane's rows (the
 * per-row work is then loads, permutes and stores only): step i covers padded columns
 * [S*i, S*i + S), S = 32 for split rows (og_split_row_planned), 16 for plain padded rows
 * (og_pad_row_planned).  n = 0 where a row has more than OG_ROW_PLAN_MAX steps. */
#define OG_ROW_PLAN_MAX 32
typedef struct og_row_plan {
    int64_t pad, w, wp, half, n;
    __mmask16 la[OG_ROW_PLAN_MAX], lb[OG_ROW_PLAN_MAX]; /* load masks: lanes in the input */
    __mmask16 sa[OG_ROW_PLAN_MAX], sb[OG_ROW_PLAN_MAX]; /* store masks: lanes in the row */
} og_row_plan;

/* 16 floats at src, the lanes of m only: a whole load where m has them all (the hardware
 * prefetcher follows whole loads; a cold plane read by masked ones measured slower) */
static inline OG_TARGET_AVX512 __m512 row_plan_load(__mmask16 m, const float *src)
{
    return m == 0xFFFF ? _mm512_loadu_ps(src) : _mm512_maskz_loadu_ps(m, src);
}

static inline __mmask16 row_plan_first(int64_t k)
{
    return (__mmask16)(k >= 16 ? 0xFFFFu : k <= 0 ? 0u : (1u << k) - 1u);
}

/* The plan of split rows (og_split_row_f32's arguments) */
static inline void og_split_plan_init(og_row_plan *p, int64_t pad, int64_t w, int64_t wp,
                                      int64_t half)
{
    const int64_t n = (wp + 31) / 32;
    *p = (og_row_plan){.pad = pad, .w = w, .wp = wp, .half = half, .n = n};
    if (n > OG_ROW_PLAN_MAX / 2) {
        p->n = 0;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t c = 32 * i;
        p->la[i] = split_lanes_in(c, pad, w);
        p->lb[i] = split_lanes_in(c + 16, pad, w);
        p->sa[i] = row_plan_first((wp - c + 1) / 2); /* evens left */
        p->sb[i] = row_plan_first((wp - c) / 2);     /* odds left */
    }
}

/* og_split_row_f32(row, ...) of plan p's geometry */
static inline OG_TARGET_AVX512 void og_split_row_planned(const og_row_plan *p, const float *row,
                                                         float *dst)
{
    if (!p->n || !row) {
        og_split_row_f32(row, p->pad, p->w, p->wp, p->half, dst);
        return;
    }
    const float *src = row - p->pad;
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    float *odd = dst + p->half;
    const int64_t last = p->n - 1;
    for (int64_t i = 0; i < last; i++) { /* whole stores: masked ones are slower (Zen 4) */
        const __m512 a = row_plan_load(p->la[i], src + 32 * i);
        const __m512 b = row_plan_load(p->lb[i], src + 32 * i + 16);
        _mm512_storeu_ps(dst + 16 * i, _mm512_permutex2var_ps(a, ev, b));
        _mm512_storeu_ps(odd + 16 * i, _mm512_permutex2var_ps(a, od, b));
    }
    const __m512 a = row_plan_load(p->la[last], src + 32 * last);
    const __m512 b = row_plan_load(p->lb[last], src + 32 * last + 16);
    _mm512_mask_storeu_ps(dst + 16 * last, p->sa[last], _mm512_permutex2var_ps(a, ev, b));
    _mm512_mask_storeu_ps(odd + 16 * last, p->sb[last], _mm512_permutex2var_ps(a, od, b));
}

/* The plan of plain padded rows: columns [0, wp) of a row of w values with pad zeros
 * before it (and zeros after it) */
static inline void og_pad_plan_init(og_row_plan *p, int64_t pad, int64_t w, int64_t wp)
{
    const int64_t n = (wp + 15) / 16;
    *p = (og_row_plan){.pad = pad, .w = w, .wp = wp, .n = n <= OG_ROW_PLAN_MAX ? n : 0};
    for (int64_t i = 0; i < p->n; i++) {
        p->la[i] = split_lanes_in(16 * i, pad, w);
        p->sa[i] = row_plan_first(wp - 16 * i);
    }
}

/* Padded row (row: its first value; NULL: a row of pads) into dst[0, wp) by plan p; false
 * (nothing written) where the plan has no steps. */
static inline OG_TARGET_AVX512 bool og_pad_row_planned(const og_row_plan *p, const float *row,
                                                       float *dst)
{
    if (!p->n) return false;
    if (!row) {
        for (int64_t i = 0; i < p->n; i++)
            _mm512_mask_storeu_ps(dst + 16 * i, p->sa[i], _mm512_setzero_ps());
        return true;
    }
    const float *src = row - p->pad;
    const int64_t last = p->n - 1;
    for (int64_t i = 0; i < last; i++)
        _mm512_storeu_ps(dst + 16 * i, row_plan_load(p->la[i], src + 16 * i));
    _mm512_mask_storeu_ps(dst + 16 * last, p->sa[last],
                          row_plan_load(p->la[last], src + 16 * last));
    return true;
}
#endif /* OG_CPU_X86 */

#endif /* OG_SPLIT_ROW_H */
