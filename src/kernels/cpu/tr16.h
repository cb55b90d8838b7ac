/* tr16.h: a 16 x 16 float transpose in AVX-512 registers, for kernels that move blocks
 * between planes (NCHW) and channels-last: depthwise convolutions of small planes
 * (conv_dw.c) and the pointwise products written back from their transposed result
 * (conv_panel.c).  Internal header; include it after <immintrin.h>, on x86 only. */
#ifndef OG_TR16_H
#define OG_TR16_H

#include "kernels/cpu/kernel.h"

/* r[i][j] becomes r[j][i] (16 vectors of 16 floats) */
static inline OG_TARGET_AVX512 void og_tr16_f32(__m512 *r)
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) { /* pairs of rows interleaved by element */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* then by pairs of elements */
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), e = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
    }
    for (int i = 0; i < 4; i++) { /* then by 128-bit lanes, twice */
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

#endif /* OG_TR16_H */
