/* vact.h: fused activations on 16 floats in AVX-512 registers (Sigmoid, SiLU = x ·
 * Sigmoid(x), HardSwish), for loops that apply them before a store (conv_pw.c's tiles,
 * conv_dw_plane.h's rows) or in place (og_cpu_act).  Internal header.
 *
 * HardSwish is unary.c's expression, clamp01(x / 6 + 0.5) · x, operation for operation.
 * Each step is unary.c's scalar one (exp_nonpos, sigmoidf) on 16 lanes: the same IEEE
 * operations in the same order, with the same constants, but the final scaling of exp by
 * 2^n.  The scalar code multiplies (em1 + 1) by 2^(n + 64) (exact) and then by 2^-64 (the
 * one rounding); here one vscalefps gives (em1 + 1) · 2^n rounded once, subnormals
 * included: the same value, in one instruction instead of four.  test_unary compares the
 * two over 2^20 floats spread over every binade. */
#ifndef OG_VACT_H
#define OG_VACT_H

#include <stdint.h>

#include "kernels/cpu/kernel.h"

#ifdef OG_CPU_X86
#include <immintrin.h>

/* exp(x) from n = fn (x's multiple of ln 2, an integer in a float): the two-step
 * reduction, the polynomial of exp_core and exp_nonpos (fused multiply-adds), and (em1 + 1)
 * · 2^n by one vscalefps, rounded once. */
static inline OG_TARGET_AVX512 __m512 og_v_exp_from(__m512 x, __m512 fn)
{
    __m512 r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-0.693359375f), x);
    r = _mm512_fmadd_ps(fn, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 em1 = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    return _mm512_scalef_ps(_mm512_add_ps(em1, _mm512_set1_ps(1.0f)), fn);
}

/* exp(t) for t <= 0 (NaN propagates): unary.c's exp_nonpos (its n from a fused
 * multiply-add). */
static inline OG_TARGET_AVX512 __m512 og_v_exp_nonpos(__m512 t)
{
    const __m512 shifter = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    t = _mm512_max_ps(_mm512_set1_ps(-104.0f), t);      /* -104 > t ? -104 : t, NaN kept */
    const __m512 k = _mm512_fmadd_ps(t, _mm512_set1_ps(1.44269504088896341f), shifter);
    return og_v_exp_from(t, _mm512_sub_ps(k, shifter));
}

/* exp(x) for any x: fast_math.h's fast_expf on 16 lanes, the same bits (its clamps to
 * [-104, 89], its n from a product and a sum), with its two factors 2^(n/2) and
 * 2^(n - n/2) as one vscalefps: they round once, the second time, to the same value. */
static inline OG_TARGET_AVX512 __m512 og_v_exp(__m512 x)
{
    const __m512 shifter = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);      /* x < -104 ? -104 : x, NaN kept */
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);        /* x > 89 ? 89 : x, NaN kept */
    const __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), shifter);
    return og_v_exp_from(x, _mm512_sub_ps(t, shifter));
}

/* 1 / (1 + exp(-x)): (x >= 0 ? 1 : e) / (1 + e), e = exp(-|x|) (unary.c's sigmoidf). */
static inline OG_TARGET_AVX512 __m512 og_v_sigmoid(__m512 x)
{
    const __m512 neg = /* -|x| */
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
    const __m512 e = og_v_exp_nonpos(neg);
    const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    const __m512 num = _mm512_mask_blend_ps(pos, e, _mm512_set1_ps(1.0f));
    return _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static inline OG_TARGET_AVX512 __m512 og_v_silu(__m512 x)
{
    return _mm512_mul_ps(x, og_v_sigmoid(x));
}

/* x < lo ? lo : x > hi ? hi : x (unary.c's E_CLIP: NaN passes) for lo <= hi (the fused
 * Clip's bounds are, as the Clip kernel's: activation_of in fuse.c) or a NaN bound (which
 * then clamps nothing), as hi < t ? hi : t of t = lo > x ? lo : x: vmaxps and vminps
 * return their second operand where either is NaN, and the first only where it compares
 * greater (less), so -0 and +0 come out as E_CLIP's.  Two instructions where two compares
 * and two blends were: MobileNet-v2's expansion fused with its depthwise layer (ReLU6 on
 * both) 0.581 -> 0.566 ms. */
static inline OG_TARGET_AVX512 __m512 og_v_clamp(__m512 x, __m512 lo, __m512 hi)
{
    return _mm512_min_ps(hi, _mm512_max_ps(lo, x));
}

/* clamp01(x / 6 + 0.5) · x (NaN passes the clamp) */
static inline OG_TARGET_AVX512 __m512 og_v_hardswish(__m512 x)
{
    const __m512 t = _mm512_add_ps(_mm512_div_ps(x, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(og_v_clamp(t, _mm512_setzero_ps(), _mm512_set1_ps(1.0f)), x);
}

/* Which activation og_v_act applies for a: OG_VACT_NONE when a is none of these. */
enum { OG_VACT_NONE, OG_VACT_SIGMOID, OG_VACT_SILU, OG_VACT_HARDSWISH };
static inline int og_vact_of(const og_act *a)
{
    switch (a->kind) {
    case OG_FUSE_SIGMOID: return OG_VACT_SIGMOID;
    case OG_FUSE_SILU: return OG_VACT_SILU;
    case OG_FUSE_HARDSWISH: return OG_VACT_HARDSWISH;
    default: return OG_VACT_NONE;
    }
}

static inline OG_TARGET_AVX512 __m512 og_v_act(int vact, __m512 x)
{
    switch (vact) {
    case OG_VACT_SIGMOID: return og_v_sigmoid(x);
    case OG_VACT_SILU: return og_v_silu(x);
    case OG_VACT_HARDSWISH: return og_v_hardswish(x);
    default: return x;
    }
}

/* A kernel's fused activation before its store: the clamp to [lo, hi] (Relu, Clip:
 * og_act_clamp_f32), else og_v_act(vact). */
static inline OG_TARGET_AVX512 __m512 og_v_out(__m512 x, bool clamp, __m512 lo, __m512 hi, int vact)
{
    return clamp ? og_v_clamp(x, lo, hi) : og_v_act(vact, x);
}

#endif /* OG_CPU_X86 */
#endif /* OG_VACT_H */
