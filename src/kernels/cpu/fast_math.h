/*
 * fast_math.h: vectorizable float approximations of exp, expm1, tanh, erf, log, log1p and
 * the sigmoid, for the CPU kernels' loops (unary.c's ops and fused activations, rnn.c's
 * gates).  Internal header.
 *
 * libm's expf/tanhf/erff are opaque calls that stop vectorization; these are plain
 * arithmetic (a few ulp) that the compiler turns into SIMD.  double keeps libm.
 */
#ifndef OG_FAST_MATH_H
#define OG_FAST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* exp(x) = 2^n * exp(r), |r| <= ln2/2, with a degree-6 polynomial for exp(r).  n comes
 * from the bits of x*log2(e) + 1.5*2^23 (no float-to-int conversion, so NaN is harmless);
 * 2^n is applied as two factors 2^n1 * 2^n2 (n1 = n/2), one multiplication at a time, so
 * that n may reach 128 (x up to ln(FLT_MAX) = 88.72 stays finite: exp(r)*2^64 is exact,
 * the second factor rounds once, to inf only past FLT_MAX) or -150 (exp(r)*2^-75 is exact
 * and normal, the second factor rounds once into the subnormals: gradual underflow).
 * NaN propagates through the polynomial.  The reduction and the polynomial are fused
 * multiply-adds (fmaf: one rounding each on every instruction set, as exp_nonpos below):
 * a 256 Ki-element Exp 0.153 -> 0.132 ms on an AMD EPYC (Zen 4), one thread.  Max error 1
 * ulp over the whole float range (test_unary's sweep against double exp: 0.99). */
/* The shared core of exp and expm1 on x in [-104, 89]: returns expm1(r) for the reduced
 * r and sets *s1, *s2 to 2^n1, 2^n2 (n1 + n2 = n). */
static inline float exp_core(float x, float *s1, float *s2)
{
    const float shifter = 12582912.0f;
    float t = x * 1.44269504088896341f + shifter;
    int32_t n = (int32_t)(f2u(t) - f2u(shifter));
    float fn = t - shifter;
    float r = fmaf(fn, -0.693359375f, x);
    r = fmaf(fn, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    int32_t n1 = n / 2, n2 = n - n1;
    *s1 = u2f((uint32_t)(n1 + 127) << 23);
    *s2 = u2f((uint32_t)(n2 + 127) << 23);
    return fmaf(p, r * r, r);
}

static inline float fast_expf(float x)
{
    x = x < -104.0f ? -104.0f : x;
    x = x > 89.0f ? 89.0f : x;
    float s1, s2, em1 = exp_core(x, &s1, &s2);
    return ((em1 + 1.0f) * s1) * s2;
}

/* exp(t) for t <= 0 (NaN propagates), the sigmoid's e = exp(-|t|): exp_core's reduction
 * and polynomial, with fused multiply-adds, and 2^n (n in [-150, 0]) applied as 2^(n + 64),
 * a normal factor whose exponent bits come straight from the rounding constant's sum (the
 * product is exact), then 2^-64, the one rounding, into the subnormals where the result
 * is one: the correctly rounded (em1 + 1) * 2^n, as exp_core's two factors give it, in
 * fewer instructions.  fmaf rounds once wherever it runs (one instruction in the AVX2 and
 * AVX-512 loops and on most other machines, libm's exact emulation on an x86 without FMA),
 * so every instruction set still gives the same bits (test_unary's sweep: Sigmoid within
 * 2 ulp). */
static inline float exp_nonpos(float t)
{
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    t = -104.0f > t ? -104.0f : t;     /* max(-104, t), NaN kept: one instruction */
    const float k = fmaf(t, 1.44269504088896341f, shifter);
    const float fn = k - shifter;
    /* k's bits minus the shifter's are n: biased by 64 + 127, the bits of 2^(n + 64) */
    const float s = u2f((f2u(k) - (f2u(shifter) - 191u)) << 23);
    float r = fmaf(fn, -0.693359375f, t);
    r = fmaf(fn, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    const float em1 = fmaf(p, r * r, r);
    return ((em1 + 1.0f) * s) * 5.42101086242752217e-20f; /* 2^-64 */
}

/* 1 / (1 + exp(-x)) with e = exp(-|x|) computed once: (x >= 0 ? 1 : e) / (1 + e). */
static inline float sigmoidf(float x)
{
    const float e = exp_nonpos(u2f(f2u(x) | 0x80000000u)); /* -|x| */
    return (x >= 0 ? 1.0f : e) / (1.0f + e);
}

static inline double sigmoid(double x)
{
    const double e = exp(-fabs(x));
    return (x >= 0 ? 1.0 : e) / (1.0 + e);
}

/* tanh as an odd rational function of degree 13/6 on [-9, 9] (beyond, tanh is +-1 in
 * float); the minimax coefficients are the ones Eigen uses. */
static inline float fast_tanhf(float x)
{
    x = x < -9.0f ? -9.0f : x;
    x = x > 9.0f ? 9.0f : x;
    float x2 = x * x;
    float p = -2.76076847742355e-16f;
    p = p * x2 + 2.00018790482477e-13f;
    p = p * x2 + -8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * x2 + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    return x * p / q;
}

/* erf as an odd rational function on [-4, 4] (beyond, erf is +-1 in float); relative
 * error below 5e-7. */
static inline float fast_erff(float x)
{
    x = x < -4.0f ? -4.0f : x;
    x = x > 4.0f ? 4.0f : x;
    float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 + -2.10102402082508e-06f;
    p = p * x2 + -5.69250639462346e-05f;
    p = p * x2 + -7.34990630326855e-04f;
    p = p * x2 + -2.95459980854025e-03f;
    p = p * x2 + -1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 + -2.13374055278905e-04f;
    q = q * x2 + -1.68282697438203e-03f;
    q = q * x2 + -7.37332916720468e-03f;
    q = q * x2 + -1.42647390514189e-02f;
    return x * p / q;
}

/* expm1(x): with x = n*ln2 + r, expm1(x) = 2^n * expm1(r) + (2^n - 1), where
 * expm1(r) = r + r^2 * p(r) keeps full relative precision near 0.  x is clamped to
 * [-104, 88] so that 2^n stays finite; beyond 88.72 the true result overflows. */
static inline float fast_expm1f(float x)
{
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 88.0f ? 88.0f : xc;
    float s1, s2, em1 = exp_core(xc, &s1, &s2);
    float s = s1 * s2; /* n <= 127: finite */
    float y = s * em1 + (s - 1.0f);
    return x > 88.7228394f ? HUGE_VALF : y;
}

/* log(x) = e*ln2 + log(m), m in [sqrt(1/2), sqrt(2)), log(m) by a degree-9 polynomial in
 * m - 1 (Cephes' logf).  Subnormals are scaled up first; x < 0, 0, inf and NaN are
 * selected at the end. */
static inline float fast_logf(float x)
{
    float xs = x < 1.17549435e-38f ? x * 8388608.0f : x;
    int32_t eadj = x < 1.17549435e-38f ? 23 : 0;
    uint32_t u = f2u(xs);
    int32_t e = (int32_t)((u >> 23) & 0xff) - 126 - eadj;
    float m = u2f((u & 0x007fffffu) | 0x3f000000u); /* in [0.5, 1) */
    int small = m < 0.707106781186547524f;
    e -= small;
    m = small ? m + m - 1.0f : m - 1.0f;
    float fe = (float)e;
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y += fe * -2.12194440e-4f;
    y += -0.5f * z;
    float r = m + y + fe * 0.693359375f;
    r = x == HUGE_VALF ? x : r;
    r = x == 0.0f ? -HUGE_VALF : r;
    r = x < 0.0f ? NAN : r;
    return x != x ? x : r;
}

/* log1p(v) for v >= 0 with full relative precision for small v: log(u) * v / (u - 1),
 * u = 1 + v rounded (Goldberg's trick); u == 1 means log1p(v) == v in float. */
static inline float fast_log1pf_pos(float v)
{
    float u = 1.0f + v;
    float d = u - 1.0f;
    float l = fast_logf(u);
    return d == 0.0f ? v : (u == HUGE_VALF ? l : l * (v / d));
}

#endif /* OG_FAST_MATH_H */
