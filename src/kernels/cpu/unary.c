/* unary.c: CPU kernels of the element-wise ops of one input.
 *
 * Each op is one expression of `x` written once; the macros below instantiate it for
 * float (with expf, erff, ...) and double (exp, erf, ...), and the integer ops for the
 * integer types their schemas list (Erf and Shrink of integers in float64, cast back by
 * truncation as the ONNX reference evaluator does).  The loops are plain, restrict-qualified and
 * branch-free where it matters so that the compiler vectorizes them; big tensors are split into
 * chunks run in parallel. */
#if defined(__GNUC__) && !defined(__clang__)
/* Nothing here reads the FP exception flags; without this promise GCC refuses to
 * if-convert arithmetic (x < 0 ? a*x : x) and the loops stay scalar. */
#pragma GCC optimize("no-trapping-math")
#endif
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/cpu/ew_chain.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/kernel.h"
#include "kernels/cpu/vact.h"
#include "ops/unary_params.h"

/* What a chunk function sees: attributes as numbers, and Clip's bounds. */
typedef struct uargs {
    double alpha, beta, gamma;
    double lo, hi;        /* Clip bounds for float types */
    int64_t lo_i, hi_i;   /* Clip bounds for integer types (exact for int64) */
    int det_neg, det_pos; /* IsInf */
} uargs;

typedef void (*uchunk)(const void *x, void *y, int64_t n, const uargs *p);

typedef struct ufns {
    uchunk f32, f64, i32, i64, b8;
    uchunk i8, u8, i16, u16, u32, u64; /* the narrow and unsigned integer types (Abs, Sign) */
    double cost;                       /* rough work per element, to decide on threads */
    uchunk f32_avx2, f32_avx512;       /* the float loop for these ISAs where it exists */
} ufns;

#define OG_CAT_(a, b)    a##b
#define OG_CAT(a, b)     OG_CAT_(a, b)
#define OG_CAT3(a, b, c) OG_CAT(OG_CAT(a, b), c)

/* ---- the expressions ----------------------------------------------------------------
 * In scope: x (the element, type UT), A/B/G (alpha/beta/gamma as UT), LO/HI (Clip),
 * M(fn): the math function of UT's precision (expf for float, exp for double);
 * FEXP/FTANH/FERF/FLOG/FLOG1P/FEXPM1: vectorizable approximations for float, libm for
 * double (FLOG1P only for arguments >= 0). */

#define E_SIGN (x > 0 ? (UT)1 : x < 0 ? (UT)-1 : x)
#define E_RELU (x < 0 ? (UT)0 : x)
/* NaN passes through; a crossed range (min > max) gives max everywhere (lo is set to hi). */
#define E_CLIP (x < LO ? LO : x > HI ? HI : x)

/* Sigmoid from e = exp(-|x|), never overflowing: 1/(1+e) for x >= 0, e/(1+e) for x < 0,
 * one division of a selected numerator (sigmoidf below: written as one expression, the
 * vectorized loops computed both quotients, and the divisions were most of the time). */
#define E_SIGMOID M(sigmoid)(x)
/* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|). */
#define E_SOFTPLUS ((x > 0 ? x : (UT)0) + FLOG1P(FEXP(-M(fabs)(x))))
#define CLAMP01(v) ((v) < (UT)0 ? (UT)0 : (v) > (UT)1 ? (UT)1 : (v))

/* name, expression: float and double.  The plain ones (libm calls, or cheap enough to be
 * memory-bound) are compiled for the baseline only: */
#define FLOAT_EXPRS_PLAIN(X)                                                                       \
    X(abs, M(fabs)(x))                                                                             \
    X(neg, -x)                                                                                     \
    X(sign, E_SIGN)                                                                                \
    X(relu, E_RELU)                                                                                \
    X(clip, E_CLIP)                                                                                \
    X(ceil, M(ceil)(x))                                                                            \
    X(floor, M(floor)(x))                                                                          \
    X(round, M(fabs)(x) < RMAGIC ? M(copysign)((M(fabs)(x) + RMAGIC) - RMAGIC, x) : x)             \
    X(reciprocal, (UT)1 / x)                                                                       \
    X(softsign, x / ((UT)1 + M(fabs)(x)))                                                          \
    X(sin, M(sin)(x))                                                                              \
    X(cos, M(cos)(x))                                                                              \
    X(tan, M(tan)(x))                                                                              \
    X(asin, M(asin)(x))                                                                            \
    X(acos, M(acos)(x))                                                                            \
    X(atan, M(atan)(x))                                                                            \
    X(sinh, M(sinh)(x))                                                                            \
    X(cosh, M(cosh)(x))                                                                            \
    X(asinh, M(asinh)(x))                                                                          \
    X(acosh, M(acosh)(x))                                                                          \
    X(atanh, M(atanh)(x))                                                                          \
    X(hardswish, CLAMP01(x / (UT)6 + (UT)0.5) * x)                                                 \
    X(hardsigmoid, CLAMP01(B + x * A))                                                             \
    X(leakyrelu, x < 0 ? A * x : x)                                                                \
    X(thresholdedrelu, x > A ? x : (UT)0)                                                          \
    X(shrink, (x < -A) ? x + B : (x > A) ? x - B : (UT)0)                                          \
    X(gelu, (UT)0.5 * x * M(erfc)(x * (UT)-0.70710678118654752440))

/* the ones built on the float approximations above, compiled also for AVX2 and AVX-512
 * (the same IEEE operations per element, so the same values, 8 or 16 at a time): */
#define FLOAT_EXPRS_FAST(X)                                                                        \
    X(exp, FEXP(x))                                                                                \
    X(log, FLOG(x))                                                                                \
    X(erf, FERF(x))                                                                                \
    X(sigmoid, E_SIGMOID)                                                                          \
    X(tanh, FTANH(x))                                                                              \
    X(softplus, E_SOFTPLUS)                                                                        \
    X(mish, FTANH(E_SOFTPLUS) * x)                                                                 \
    X(elu, x >= 0 ? x : A * FEXPM1(x))                                                             \
    X(selu, x > 0 ? G * x : G * A * FEXPM1(x))                                                     \
    X(celu, x > 0 ? x : A * FEXPM1(x / A))                                                         \
    X(gelu_tanh,                                                                                   \
      (UT)0.5 * x * ((UT)1 + FTANH((UT)0.79788456080286535588 * (x + (UT)0.044715 * x * x * x))))

#define FLOAT_EXPRS(X) FLOAT_EXPRS_PLAIN(X) FLOAT_EXPRS_FAST(X)

/* Integers: two's complement negation through unsigned arithmetic, so that INT_MIN
 * wraps (as numpy and onnxruntime do) instead of being undefined. */
#define INT_EXPRS(X)                                                                               \
    X(abs, x < 0 ? (UT)(0 - (uint64_t)x) : x)                                                      \
    X(neg, (UT)(0 - (uint64_t)x))                                                                  \
    X(sign, E_SIGN)                                                                                \
    X(relu, E_RELU)                                                                                \
    X(clip, E_CLIP)
/* Abs, Neg, Sign and Relu of the narrow signed types (int8, int16), Abs and Sign of the
 * unsigned types */
#define SMALL_INT_EXPRS(X)                                                                         \
    X(abs, x < 0 ? (UT)(0 - (uint64_t)x) : x)                                                      \
    X(neg, (UT)(0 - (uint64_t)x))                                                                  \
    X(sign, E_SIGN)                                                                                \
    X(relu, E_RELU)
#define UNSIGNED_EXPRS(X)                                                                          \
    X(abs, x)                                                                                      \
    X(sign, (UT)(x != 0))
/* The float-valued ops on every integer type, as the ONNX reference evaluator computes them:
 * in float64, the result cast back to the integer type by truncation (numpy's astype).  Erf
 * is within [-1, 1], so its cast is exact; Shrink's is numpy's (OG_CVT). */
#define INT_FLOAT_EXPRS(X)                                                                         \
    X(erf, (UT)erf((double)x))                                                                     \
    X(shrink, OG_CVT(UT, (double)x<-p->alpha ? (double)x + p->beta : (double)x> p->alpha           \
                             ? (double)x - p->beta                                                 \
                             : 0.0))

/* One chunk function per (op, type): uk_<op>_<sfx>. */
#define DEFINE_CHUNK(name, expr)                                                                   \
    static void OG_CAT3(uk_, name, SFX)(const void *xv, void *yv, int64_t n, const uargs *p)       \
    {                                                                                              \
        const UT *restrict xs = xv;                                                                \
        UT *restrict ys = yv;                                                                      \
        const UT A = (UT)p->alpha, B = (UT)p->beta, G = (UT)p->gamma;                              \
        const UT LO = (UT)P_LO, HI = (UT)P_HI;                                                     \
        (void)A, (void)B, (void)G, (void)LO, (void)HI;                                             \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const UT x = xs[i];                                                                    \
            ys[i] = (expr);                                                                        \
        }                                                                                          \
    }

/* In-place loops of the activations a kernel applies to its output (og_act, fused by an
 * inference session): the same expressions as the ops' own kernels, so the same bits. */
#define ACT_EXPRS(X)                                                                               \
    X(relu, E_RELU)                                                                                \
    X(clip, E_CLIP)                                                                                \
    X(hardswish, CLAMP01(x / (UT)6 + (UT)0.5) * x)                                                 \
    X(hardsigmoid, CLAMP01(B + x * A))                                                             \
    X(sigmoid, E_SIGMOID)                                                                          \
    X(silu, x *(E_SIGMOID))
#define DEFINE_ACT(name, expr)                                                                     \
    static void OG_CAT3(act_, name, SFX)(UT *restrict ys, int64_t n, const og_act *p)              \
    {                                                                                              \
        const UT A = (UT)p->alpha, B = (UT)p->beta, LO = (UT)p->lo, HI = (UT)p->hi;                \
        (void)A, (void)B, (void)LO, (void)HI;                                                      \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const UT x = ys[i];                                                                    \
            ys[i] = (expr);                                                                        \
        }                                                                                          \
    }

/* float */
#define UT        float
#define RMAGIC    8388608.0f /* 2^23: adding it rounds to an integer (ties to even) */
#define SFX       _f32
#define M(fn)     fn##f
#define FEXP(v)   fast_expf(v)
#define FTANH(v)  fast_tanhf(v)
#define FERF(v)   fast_erff(v)
#define FLOG(v)   fast_logf(v)
#define FLOG1P(v) fast_log1pf_pos(v)
#define FEXPM1(v) fast_expm1f(v)
#define P_LO      p->lo
#define P_HI      p->hi
FLOAT_EXPRS(DEFINE_CHUNK)
ACT_EXPRS(DEFINE_ACT)
#ifdef OG_CPU_X86
/* the same loops for AVX2 and AVX-512 (og_cpu_act runs them after a convolution, pick()
 * binds the op kernels to them): the same IEEE operations per element (the build does not
 * contract a*b+c into FMAs), so the same values as the baseline, 8 or 16 at a time */
#undef SFX
#define SFX                           _f32_avx2
#define DEFINE_ACT_AVX2(name, expr)   OG_TARGET_AVX2 DEFINE_ACT(name, expr)
#define DEFINE_CHUNK_AVX2(name, expr) OG_TARGET_AVX2 DEFINE_CHUNK(name, expr)
ACT_EXPRS(DEFINE_ACT_AVX2)
FLOAT_EXPRS_FAST(DEFINE_CHUNK_AVX2)
#undef SFX
#define SFX _f32_avx512
/* (Sigmoid's, SiLU's and HardSwish's are vact.h's loop instead: act_vact) */
#define DEFINE_ACT_AVX512(name, expr)                                                              \
    __attribute__((unused)) OG_TARGET_AVX512 DEFINE_ACT(name, expr)
/* (Exp's is vact.h's og_v_exp instead: uk_exp_v_f32_avx512) */
#define DEFINE_CHUNK_AVX512(name, expr)                                                            \
    __attribute__((unused)) OG_TARGET_AVX512 DEFINE_CHUNK(name, expr)
ACT_EXPRS(DEFINE_ACT_AVX512)
FLOAT_EXPRS_FAST(DEFINE_CHUNK_AVX512)
#undef SFX
#define SFX _f32
#endif
#undef UT
#undef SFX
#undef M
#undef FEXP
#undef FTANH
#undef FERF
#undef FLOG
#undef FLOG1P
#undef FEXPM1
#undef RMAGIC

/* double */
#define UT        double
#define RMAGIC    4503599627370496.0 /* 2^52 */
#define SFX       _f64
#define M(fn)     fn
#define FEXP(v)   exp(v)
#define FTANH(v)  tanh(v)
#define FERF(v)   erf(v)
#define FLOG(v)   log(v)
#define FLOG1P(v) log1p(v)
#define FEXPM1(v) expm1(v)
FLOAT_EXPRS(DEFINE_CHUNK)
ACT_EXPRS(DEFINE_ACT)
#undef UT
#undef SFX
#undef M
#undef FEXP
#undef FTANH
#undef FERF
#undef FLOG
#undef FLOG1P
#undef FEXPM1
#undef RMAGIC
#undef P_LO
#undef P_HI

/* int32, int64 */
#define P_LO p->lo_i
#define P_HI p->hi_i
#define UT   int32_t
#define SFX  _i32
INT_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  int64_t
#define SFX _i64
INT_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  int8_t
#define SFX _i8
SMALL_INT_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  int16_t
#define SFX _i16
SMALL_INT_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  uint8_t
#define SFX _u8
UNSIGNED_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  uint16_t
#define SFX _u16
UNSIGNED_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  uint32_t
#define SFX _u32
UNSIGNED_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#define UT  uint64_t
#define SFX _u64
UNSIGNED_EXPRS(DEFINE_CHUNK)
INT_FLOAT_EXPRS(DEFINE_CHUNK)
#undef UT
#undef SFX
#undef P_LO
#undef P_HI

/* Sqrt: with errno semantics on (the build's default, which no pragma lifts) GCC keeps a
 * libm call per element, so the SIMD square root is spelled out where SSE2 exists. */
#define DEFINE_SQRT(T, sfx, W, VT, LOAD, SQRT, STORE)                                              \
    static void uk_sqrt##sfx(const void *xv, void *yv, int64_t n, const uargs *p)                  \
    {                                                                                              \
        const T *restrict xs = xv;                                                                 \
        T *restrict ys = yv;                                                                       \
        int64_t i = 0;                                                                             \
        (void)p;                                                                                   \
        for (; i + W <= n; i += W) {                                                               \
            VT v = LOAD(xs + i);                                                                   \
            STORE(ys + i, SQRT(v));                                                                \
        }                                                                                          \
        for (; i < n; i++) ys[i] = sqrt##sfx##_1(xs[i]);                                           \
    }
static inline float sqrt_f32_1(float x) { return sqrtf(x); }
static inline double sqrt_f64_1(double x) { return sqrt(x); }
#if defined(__SSE2__)
DEFINE_SQRT(float, _f32, 4, __m128, _mm_loadu_ps, _mm_sqrt_ps, _mm_storeu_ps)
DEFINE_SQRT(double, _f64, 2, __m128d, _mm_loadu_pd, _mm_sqrt_pd, _mm_storeu_pd)
#else
#define SCALAR_LOAD(ptr)     (*(ptr))
#define SCALAR_STORE(ptr, v) (*(ptr) = (v))
DEFINE_SQRT(float, _f32, 1, float, SCALAR_LOAD, sqrtf, SCALAR_STORE)
DEFINE_SQRT(double, _f64, 1, double, SCALAR_LOAD, sqrt, SCALAR_STORE)
#endif

/* Predicates (float in, bool out) and Not. */
#define DEFINE_PRED(T, sfx, inf)                                                                   \
    static void uk_isnan##sfx(const void *xv, void *yv, int64_t n, const uargs *p)                 \
    {                                                                                              \
        const T *restrict xs = xv;                                                                 \
        uint8_t *restrict ys = yv;                                                                 \
        (void)p;                                                                                   \
        for (int64_t i = 0; i < n; i++) ys[i] = xs[i] != xs[i];                                    \
    }                                                                                              \
    static void uk_isinf##sfx(const void *xv, void *yv, int64_t n, const uargs *p)                 \
    {                                                                                              \
        const T *restrict xs = xv;                                                                 \
        uint8_t *restrict ys = yv;                                                                 \
        const int use_pos = p->det_pos, use_neg = p->det_neg;                                      \
        for (int64_t i = 0; i < n; i++)                                                            \
            ys[i] = (uint8_t)((use_pos & (xs[i] == (T)(inf))) | (use_neg & (xs[i] == -(T)(inf)))); \
    }
DEFINE_PRED(float, _f32, HUGE_VALF)
DEFINE_PRED(double, _f64, HUGE_VAL)

static void uk_not_b8(const void *xv, void *yv, int64_t n, const uargs *p)
{
    const uint8_t *restrict xs = xv;
    uint8_t *restrict ys = yv;
    (void)p;
    for (int64_t i = 0; i < n; i++) ys[i] = xs[i] == 0;
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* Work per element: cheap ops are memory-bound and need many elements to pay for threads. */
#define COST_CHEAP 0.25
#define COST_MATH  8.0

#define FNS_FLOAT(name, c_)                                                                        \
    static const ufns fns_##name = {.f32 = uk_##name##_f32, .f64 = uk_##name##_f64, .cost = c_};
#ifdef OG_CPU_X86
#define FNS_FAST(name, c_)                                                                         \
    static const ufns fns_##name = {.f32 = uk_##name##_f32,                                        \
                                    .f64 = uk_##name##_f64,                                        \
                                    .cost = c_,                                                    \
                                    .f32_avx2 = uk_##name##_f32_avx2,                              \
                                    .f32_avx512 = uk_##name##_f32_avx512};
#else
#define FNS_FAST FNS_FLOAT
#endif
#define FNS_NUMERIC(name, c_)                                                                      \
    static const ufns fns_##name = {.f32 = uk_##name##_f32,                                        \
                                    .f64 = uk_##name##_f64,                                        \
                                    .i32 = uk_##name##_i32,                                        \
                                    .i64 = uk_##name##_i64,                                        \
                                    .cost = c_};

/* Abs and Sign: every integer type */
#define FNS_ALL_INT(name, c_)                                                                      \
    static const ufns fns_##name = {.f32 = uk_##name##_f32,                                        \
                                    .f64 = uk_##name##_f64,                                        \
                                    .i32 = uk_##name##_i32,                                        \
                                    .i64 = uk_##name##_i64,                                        \
                                    .i8 = uk_##name##_i8,                                          \
                                    .u8 = uk_##name##_u8,                                          \
                                    .i16 = uk_##name##_i16,                                        \
                                    .u16 = uk_##name##_u16,                                        \
                                    .u32 = uk_##name##_u32,                                        \
                                    .u64 = uk_##name##_u64,                                        \
                                    .cost = c_};

/* Neg and Relu: the signed types */
#define FNS_SIGNED(name, c_)                                                                       \
    static const ufns fns_##name = {.f32 = uk_##name##_f32,                                        \
                                    .f64 = uk_##name##_f64,                                        \
                                    .i32 = uk_##name##_i32,                                        \
                                    .i64 = uk_##name##_i64,                                        \
                                    .i8 = uk_##name##_i8,                                          \
                                    .i16 = uk_##name##_i16,                                        \
                                    .cost = c_};

FNS_ALL_INT(abs, COST_CHEAP)
FNS_SIGNED(neg, COST_CHEAP)
FNS_ALL_INT(sign, COST_CHEAP)
FNS_SIGNED(relu, COST_CHEAP)
FNS_NUMERIC(clip, COST_CHEAP)
FNS_FLOAT(ceil, COST_CHEAP)
FNS_FLOAT(floor, COST_CHEAP)
FNS_FLOAT(round, COST_CHEAP)
FNS_FLOAT(reciprocal, 1.0)
FNS_FLOAT(sqrt, 1.0)
FNS_FLOAT(softsign, 1.0)
FNS_FLOAT(hardswish, COST_CHEAP)
FNS_FLOAT(hardsigmoid, COST_CHEAP)
FNS_FLOAT(leakyrelu, COST_CHEAP)
FNS_FLOAT(thresholdedrelu, COST_CHEAP)
FNS_ALL_INT(shrink, COST_CHEAP)
#ifdef OG_CPU_X86
/* Exp's AVX-512 loop: vact.h's og_v_exp, fast_expf's bits 16 at a time (one vscalefps for
 * its two scale factors): a 256 Ki-element Exp 0.132 -> 0.076 ms on an AMD EPYC (Zen 4) */
static OG_TARGET_AVX512 void uk_exp_v_f32_avx512(const void *xv, void *yv, int64_t n,
                                                 const uargs *p)
{
    const float *xs = xv;
    float *ys = yv;
    (void)p;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(ys + i, og_v_exp(_mm512_loadu_ps(xs + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(ys + i, m, og_v_exp(_mm512_maskz_loadu_ps(m, xs + i)));
    }
}
static const ufns fns_exp = {.f32 = uk_exp_f32,
                             .f64 = uk_exp_f64,
                             .cost = COST_MATH,
                             .f32_avx2 = uk_exp_f32_avx2,
                             .f32_avx512 = uk_exp_v_f32_avx512};
#else
FNS_FAST(exp, COST_MATH)
#endif
FNS_FAST(log, COST_MATH)
#ifdef OG_CPU_X86
static const ufns fns_erf = {.f32 = uk_erf_f32,
                             .f64 = uk_erf_f64,
                             .i32 = uk_erf_i32,
                             .i64 = uk_erf_i64,
                             .i8 = uk_erf_i8,
                             .u8 = uk_erf_u8,
                             .i16 = uk_erf_i16,
                             .u16 = uk_erf_u16,
                             .u32 = uk_erf_u32,
                             .u64 = uk_erf_u64,
                             .cost = COST_MATH,
                             .f32_avx2 = uk_erf_f32_avx2,
                             .f32_avx512 = uk_erf_f32_avx512};
#else
FNS_ALL_INT(erf, COST_MATH)
#endif
FNS_FAST(sigmoid, COST_MATH)
FNS_FAST(tanh, COST_MATH)
FNS_FAST(softplus, COST_MATH)
FNS_FLOAT(sin, COST_MATH)
FNS_FLOAT(cos, COST_MATH)
FNS_FLOAT(tan, COST_MATH)
FNS_FLOAT(asin, COST_MATH)
FNS_FLOAT(acos, COST_MATH)
FNS_FLOAT(atan, COST_MATH)
FNS_FLOAT(sinh, COST_MATH)
FNS_FLOAT(cosh, COST_MATH)
FNS_FLOAT(asinh, COST_MATH)
FNS_FLOAT(acosh, COST_MATH)
FNS_FLOAT(atanh, COST_MATH)
FNS_FAST(mish, COST_MATH)
FNS_FAST(elu, COST_MATH)
FNS_FAST(selu, COST_MATH)
FNS_FAST(celu, COST_MATH)
FNS_FLOAT(gelu, COST_MATH)
FNS_FAST(gelu_tanh, COST_MATH)
FNS_FLOAT(isnan, COST_CHEAP)
FNS_FLOAT(isinf, COST_CHEAP)
static const ufns fns_not = {.b8 = uk_not_b8, .cost = COST_CHEAP};

/* Elements per chunk: large enough to amortize the call, small enough to spread. */
#define UCHUNK 8192

/* The typed loop of f for dtype t (the address of f's member, so that it travels as the
 * binding's impl), NULL if f has none. */
static const uchunk *pick(const ufns *f, og_dtype t)
{
    const uchunk *fn = NULL;
    switch (t) {
    case OG_FLOAT: {
        int isa = og_cpu_isa();
        fn = isa >= 2 && f->f32_avx512 ? &f->f32_avx512
             : isa >= 1 && f->f32_avx2 ? &f->f32_avx2
                                       : &f->f32;
        break;
    }
    case OG_DOUBLE: fn = &f->f64; break;
    case OG_INT32: fn = &f->i32; break;
    case OG_INT64: fn = &f->i64; break;
    case OG_BOOL: fn = &f->b8; break;
    case OG_INT8: fn = &f->i8; break;
    case OG_UINT8: fn = &f->u8; break;
    case OG_INT16: fn = &f->i16; break;
    case OG_UINT16: fn = &f->u16; break;
    case OG_UINT32: fn = &f->u32; break;
    case OG_UINT64: fn = &f->u64; break;
    default: break;
    }
    return fn && *fn ? fn : NULL;
}

/* run_unary's chunks of UCHUNK elements for og_par_for */
typedef struct unary_job {
    uchunk fn;
    const char *x;
    char *y;
    size_t xs, ys;
    int64_t n;
    const uargs *a;
} unary_job;

static void unary_range(void *ctx, int64_t c0, int64_t c1, int slot)
{
    const unary_job *j = ctx;
    (void)slot;
    const int64_t s = c0 * UCHUNK, e = c1 * UCHUNK < j->n ? c1 * UCHUNK : j->n;
    j->fn(j->x + (size_t)s * j->xs, j->y + (size_t)s * j->ys, e - s, j->a);
}

/* k->impl is the loop chosen when the session bound the node (select_* below); a kernel
 * called without a binding, or whose input dtype was unknown then, picks it here. */
static og_status run_unary(const og_kernel_ctx *k, const og_tensor *x, og_tensor *y, const ufns *f,
                           const uargs *a)
{
    const uchunk *bound = k->impl ? k->impl : pick(f, x->dtype);
    if (!bound)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED,
                               "input 0 has element type %s, which has no "
                               "CPU kernel for this op",
                               og_dtype_name(x->dtype));
    uchunk fn = *bound;
    if (y->numel != x->numel)
        return og_kernel_error(k, OG_ERR_INTERNAL, "output has %lld elements, input %lld",
                               (long long)y->numel, (long long)x->numel);
    int64_t n = x->numel;
    if (n == 0) return OG_OK;
    const char *xp = x->data;
    char *yp = y->data;
    size_t xs = og_dtype_size(x->dtype), ys = og_dtype_size(y->dtype);
    unary_job j = {fn, xp, yp, xs, ys, n, a};
    og_par_for(k, (n + UCHUNK - 1) / UCHUNK, (double)UCHUNK * f->cost, OG_PAR_MIN_STREAM,
               unary_range, &j);
    return OG_OK;
}

static void args_from_params(const og_kernel_ctx *k, uargs *a)
{
    const og_unary_params *p = k->params;
    memset(a, 0, sizeof *a);
    a->lo = -HUGE_VAL;
    a->hi = HUGE_VAL;
    a->lo_i = INT64_MIN;
    a->hi_i = INT64_MAX;
    a->det_neg = a->det_pos = 1;
    if (!p) return;
    a->alpha = p->alpha;
    a->beta = p->beta;
    a->gamma = p->gamma;
    a->det_neg = p->detect_negative;
    a->det_pos = p->detect_positive;
}

/* The binding of a float16 or bfloat16 input of an op with a float32 loop: the kernel runs
 * that loop on a widened copy and rounds the output back once (og_kernel_via_f32).  A marker,
 * never called. */
static const uchunk unary_via_f32 = NULL;

static const void *pick_or_half(const ufns *f, og_dtype t)
{
    return og_is_half(t) && f->f32 ? &unary_via_f32 : (const void *)pick(f, t);
}

/* True when this call computes through float32: bound to unary_via_f32, or unbound with a
 * 16-bit input (which f has no loop of). */
static bool runs_via_f32(const og_kernel_ctx *k, const ufns *f, og_dtype t)
{
    if (k->impl) return k->impl == (const void *)&unary_via_f32;
    return og_is_half(t) && f->f32;
}

#define KERNEL(name)                                                                               \
    static const void *select_##name(const og_node *n, og_dtype t)                                 \
    {                                                                                              \
        (void)n;                                                                                   \
        return pick_or_half(&fns_##name, t);                                                       \
    }                                                                                              \
    static og_status k_##name(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,        \
                              og_tensor *const *out, int n_out)                                    \
    {                                                                                              \
        if (runs_via_f32(k, &fns_##name, in[0]->dtype))                                            \
            return og_kernel_via_f32_unbound(k, k_##name, in, n_in, out, n_out);                   \
        uargs a;                                                                                   \
        args_from_params(k, &a);                                                                   \
        return run_unary(k, in[0], out[0], &fns_##name, &a);                                       \
    }

KERNEL(abs)
KERNEL(neg)
KERNEL(sign)
KERNEL(relu)
KERNEL(ceil)
KERNEL(floor)
KERNEL(round)
KERNEL(reciprocal)
KERNEL(sqrt)
KERNEL(softsign)
KERNEL(hardswish)
KERNEL(hardsigmoid)
KERNEL(leakyrelu)
KERNEL(thresholdedrelu)
KERNEL(shrink)
KERNEL(exp)
KERNEL(log)
KERNEL(erf)
KERNEL(sigmoid)
KERNEL(tanh)
KERNEL(softplus)
KERNEL(sin)
KERNEL(cos)
KERNEL(tan)
KERNEL(asin)
KERNEL(acos)
KERNEL(atan)
KERNEL(sinh)
KERNEL(cosh)
KERNEL(asinh)
KERNEL(acosh)
KERNEL(atanh)
KERNEL(mish)
KERNEL(elu)
KERNEL(selu)
KERNEL(celu)
/* IsNaN and IsInf on float16 and bfloat16 read the bit patterns, converting nothing: the
 * exponent field all ones (0x7c00 for float16, 0x7f80 for bfloat16) is an infinity when the
 * mantissa is zero, a NaN otherwise. */
static bool half_type(og_dtype t) { return t == OG_FLOAT16 || t == OG_BFLOAT16; }

static const uchunk half_loop = NULL; /* a binding for the 2-byte types: the kernels run them */

static og_status half_classify(const og_kernel_ctx *k, const og_tensor *x, og_tensor *y, bool nan)
{
    if (y->numel != x->numel || y->dtype != OG_BOOL)
        return og_kernel_error(k, OG_ERR_INTERNAL, "output has %lld elements, input %lld",
                               (long long)y->numel, (long long)x->numel);
    uargs a;
    args_from_params(k, &a);
    const uint16_t expo = x->dtype == OG_FLOAT16 ? 0x7c00 : 0x7f80;
    const uint16_t *xs = x->data;
    uint8_t *ys = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        uint16_t m = xs[i] & 0x7fff;
        int neg = xs[i] >> 15;
        ys[i] = (uint8_t)(nan ? m > expo : m == expo && (neg ? a.det_neg : a.det_pos));
    }
    return OG_OK;
}

#define KERNEL_HALF(name, nan)                                                                     \
    static const void *select_##name(const og_node *n, og_dtype t)                                 \
    {                                                                                              \
        (void)n;                                                                                   \
        return half_type(t) ? &half_loop : pick(&fns_##name, t);                                   \
    }                                                                                              \
    static og_status k_##name(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,        \
                              og_tensor *const *out, int n_out)                                    \
    {                                                                                              \
        if (half_type(in[0]->dtype)) return half_classify(k, in[0], out[0], nan);                  \
        uargs a;                                                                                   \
        args_from_params(k, &a);                                                                   \
        return run_unary(k, in[0], out[0], &fns_##name, &a);                                       \
    }

KERNEL_HALF(isnan, true)
KERNEL_HALF(isinf, false)
KERNEL(not )

static const void *select_gelu(const og_node *n, og_dtype t)
{
    const og_unary_params *p = n->params;
    return pick_or_half(p && p->gelu_tanh ? &fns_gelu_tanh : &fns_gelu, t);
}

static og_status k_gelu(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                        og_tensor *const *out, int n_out)
{
    const og_unary_params *p = k->params;
    if (runs_via_f32(k, &fns_gelu, in[0]->dtype))
        return og_kernel_via_f32_unbound(k, k_gelu, in, n_in, out, n_out);
    uargs a;
    args_from_params(k, &a);
    return run_unary(k, in[0], out[0], p && p->gelu_tanh ? &fns_gelu_tanh : &fns_gelu, &a);
}

/* Clip on the integer types of 1, 2 bytes and the unsigned ones of 4, 8 (opset 12+): one
 * plain loop each, the bounds read in the input's own type (a uint64 bound past INT64_MAX
 * stays exact); no threads, the op is memory-bound. */
#define CLIP_NARROW(X)                                                                             \
    X(OG_INT8, int8_t, INT8_MIN, INT8_MAX)                                                         \
    X(OG_INT16, int16_t, INT16_MIN, INT16_MAX)                                                     \
    X(OG_UINT8, uint8_t, 0, UINT8_MAX)                                                             \
    X(OG_UINT16, uint16_t, 0, UINT16_MAX)                                                          \
    X(OG_UINT32, uint32_t, 0, UINT32_MAX)                                                          \
    X(OG_UINT64, uint64_t, 0, UINT64_MAX)

static bool clip_narrow(og_dtype t)
{
#define CLIP_IS(D, T, LO, HI)                                                                      \
    if (t == D) return true;
    CLIP_NARROW(CLIP_IS)
#undef CLIP_IS
    return false;
}

/* min > max: every element becomes max, as for the other types */
static void clip_narrow_run(const og_tensor *x, const og_tensor *lo_t, const og_tensor *hi_t,
                            og_tensor *y)
{
#define CLIP_RUN(D, T, LO, HI)                                                                     \
    if (x->dtype == D) {                                                                           \
        T lo = lo_t ? *(const T *)lo_t->data : (T)(LO), hi = hi_t ? *(const T *)hi_t->data : HI;   \
        if (lo > hi) lo = hi;                                                                      \
        const T *xs = x->data;                                                                     \
        T *ys = y->data;                                                                           \
        for (int64_t i = 0; i < x->numel; i++) ys[i] = xs[i] < lo ? lo : xs[i] > hi ? hi : xs[i];  \
        return;                                                                                    \
    }
    CLIP_NARROW(CLIP_RUN)
#undef CLIP_RUN
}

/* The binding of the narrow and unsigned integer types (Clip-12+), which k_clip runs
 * itself. */
static const uchunk clip_narrow_binding = NULL;

static const void *select_clip(const og_node *n, og_dtype t)
{
    if (clip_narrow(t) && n->since_version >= 12) return &clip_narrow_binding;
    return pick_or_half(&fns_clip, t);
}

/* Clip: bounds from the attributes (before opset 11) or from inputs 1 and 2. */
static og_status k_clip(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                        og_tensor *const *out, int n_out)
{
    const og_unary_params *p = k->params;
    const og_tensor *x = in[0];
    if (runs_via_f32(k, &fns_clip, x->dtype))
        return og_kernel_via_f32_unbound(k, k_clip, in, n_in, out, n_out);
    /* integer or float bounds: the bound loop's (a member of fns_clip), else x's dtype */
    const uchunk *bound = k->impl ? k->impl : pick(&fns_clip, x->dtype);
    bool i32 = bound == &fns_clip.i32, i64 = bound == &fns_clip.i64, is_int = i32 || i64;
    uargs a;
    args_from_params(k, &a);
    if (is_int) {
        a.lo_i = i32 ? INT32_MIN : INT64_MIN;
        a.hi_i = i32 ? INT32_MAX : INT64_MAX;
    }
    if (k->node->since_version < 11) {
        if (p) {
            a.lo = p->clip_min;
            a.hi = p->clip_max;
        }
    } else {
        static const char *const names[3] = {"input", "min", "max"};
        for (int i = 1; i < 3 && i < n_in; i++) {
            const og_tensor *b = in[i];
            if (!b) continue;
            if (b->numel != 1)
                return og_kernel_error(k, OG_ERR_SHAPE,
                                       "input %d (%s) has %lld elements, expected "
                                       "a scalar",
                                       i, names[i], (long long)b->numel);
            if (b->dtype != x->dtype)
                return og_kernel_error(k, OG_ERR_TYPE, "input %d (%s) is %s, input 0 is %s", i,
                                       names[i], og_dtype_name(b->dtype), og_dtype_name(x->dtype));
            if (is_int) {
                int64_t v = i32 ? *(const int32_t *)b->data : *(const int64_t *)b->data;
                *(i == 1 ? &a.lo_i : &a.hi_i) = v;
            } else {
                double v = og_tensor_get_f64(b, 0);
                *(i == 1 ? &a.lo : &a.hi) = v;
            }
        }
    }
    bool narrow = k->impl ? k->impl == &clip_narrow_binding
                          : clip_narrow(x->dtype) && k->node->since_version >= 12;
    if (narrow) {
        if (out[0]->numel != x->numel || out[0]->dtype != x->dtype)
            return og_kernel_error(k, OG_ERR_INTERNAL, "output has %lld elements, input %lld",
                                   (long long)out[0]->numel, (long long)x->numel);
        clip_narrow_run(x, n_in > 1 ? in[1] : NULL, n_in > 2 ? in[2] : NULL, out[0]);
        return OG_OK;
    }
    /* min > max: every element becomes max (the spec's rule) */
    if (a.lo > a.hi) a.lo = a.hi;
    if (a.lo_i > a.hi_i) a.lo_i = a.hi_i;
    return run_unary(k, x, out[0], &fns_clip, &a);
}

#ifdef OG_CPU_X86
/* Sigmoid, SiLU or HardSwish (vact: og_vact_of) in place on AVX-512: vact.h, 16 at a
 * time, the values of act_sigmoid, act_silu, act_hardswish. */
static OG_TARGET_AVX512 void act_vact(float *y, int64_t n, int vact)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, og_v_act(vact, _mm512_loadu_ps(y + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, og_v_act(vact, _mm512_maskz_loadu_ps(m, y + i)));
    }
}
#endif

void og_cpu_act(const og_act *a, og_dtype t, void *y, int64_t n)
{
    if (t != OG_FLOAT && t != OG_DOUBLE) return;
    bool f = t == OG_FLOAT;
#ifdef OG_CPU_X86
    if (f && og_cpu_isa() >= 2) {
        switch (a->kind) {
        case OG_FUSE_NONE: break;
        case OG_FUSE_RELU: act_relu_f32_avx512(y, n, a); break;
        case OG_FUSE_CLIP: act_clip_f32_avx512(y, n, a); break;
        case OG_FUSE_HARDSIGMOID: act_hardsigmoid_f32_avx512(y, n, a); break;
        case OG_FUSE_SIGMOID:
        case OG_FUSE_SILU:
        case OG_FUSE_HARDSWISH: act_vact(y, n, og_vact_of(a)); break;
        }
        return;
    }
    if (f && og_cpu_isa() >= 1) {
        switch (a->kind) {
        case OG_FUSE_NONE: break;
        case OG_FUSE_RELU: act_relu_f32_avx2(y, n, a); break;
        case OG_FUSE_CLIP: act_clip_f32_avx2(y, n, a); break;
        case OG_FUSE_HARDSWISH: act_hardswish_f32_avx2(y, n, a); break;
        case OG_FUSE_HARDSIGMOID: act_hardsigmoid_f32_avx2(y, n, a); break;
        case OG_FUSE_SIGMOID: act_sigmoid_f32_avx2(y, n, a); break;
        case OG_FUSE_SILU: act_silu_f32_avx2(y, n, a); break;
        }
        return;
    }
#endif
    switch (a->kind) {
    case OG_FUSE_NONE: break;
    case OG_FUSE_RELU: f ? act_relu_f32(y, n, a) : act_relu_f64(y, n, a); break;
    case OG_FUSE_CLIP: f ? act_clip_f32(y, n, a) : act_clip_f64(y, n, a); break;
    case OG_FUSE_HARDSWISH: f ? act_hardswish_f32(y, n, a) : act_hardswish_f64(y, n, a); break;
    case OG_FUSE_HARDSIGMOID:
        f ? act_hardsigmoid_f32(y, n, a) : act_hardsigmoid_f64(y, n, a);
        break;
    case OG_FUSE_SIGMOID: f ? act_sigmoid_f32(y, n, a) : act_sigmoid_f64(y, n, a); break;
    case OG_FUSE_SILU: f ? act_silu_f32(y, n, a) : act_silu_f64(y, n, a); break;
    }
}

void og_cpu_unary_f32(const void *impl, const float *x, float *y, int64_t n)
{
    /* the arguments args_from_params gives a node without attributes: the ops a chain
     * takes (fuse_ew.c) read none */
    static const uargs none = {.lo = -HUGE_VAL,
                               .hi = HUGE_VAL,
                               .lo_i = INT64_MIN,
                               .hi_i = INT64_MAX,
                               .det_neg = 1,
                               .det_pos = 1};
    (*(const uchunk *)impl)(x, y, n, &none);
}

const og_kernel_def og_cpu_unary[] = {
    {.name = "Abs", .domain = "", .fn = k_abs, .select = select_abs},
    {.name = "Neg", .domain = "", .fn = k_neg, .select = select_neg},
    {.name = "Sign", .domain = "", .fn = k_sign, .select = select_sign},
    {.name = "Relu", .domain = "", .fn = k_relu, .select = select_relu},
    {.name = "Clip", .domain = "", .fn = k_clip, .select = select_clip},
    {.name = "Not", .domain = "", .fn = k_not, .select = select_not},
    {.name = "IsNaN", .domain = "", .fn = k_isnan, .select = select_isnan},
    {.name = "IsInf", .domain = "", .fn = k_isinf, .select = select_isinf},
    {.name = "Gelu", .domain = "", .fn = k_gelu, .select = select_gelu},
    {.name = "Ceil", .domain = "", .fn = k_ceil, .select = select_ceil},
    {.name = "Floor", .domain = "", .fn = k_floor, .select = select_floor},
    {.name = "Round", .domain = "", .fn = k_round, .select = select_round},
    {.name = "Reciprocal", .domain = "", .fn = k_reciprocal, .select = select_reciprocal},
    {.name = "Sqrt", .domain = "", .fn = k_sqrt, .select = select_sqrt},
    {.name = "Exp", .domain = "", .fn = k_exp, .select = select_exp},
    {.name = "Log", .domain = "", .fn = k_log, .select = select_log},
    {.name = "Erf", .domain = "", .fn = k_erf, .select = select_erf},
    {.name = "Sigmoid", .domain = "", .fn = k_sigmoid, .select = select_sigmoid},
    {.name = "Tanh", .domain = "", .fn = k_tanh, .select = select_tanh},
    {.name = "Softplus", .domain = "", .fn = k_softplus, .select = select_softplus},
    {.name = "Softsign", .domain = "", .fn = k_softsign, .select = select_softsign},
    {.name = "Sin", .domain = "", .fn = k_sin, .select = select_sin},
    {.name = "Cos", .domain = "", .fn = k_cos, .select = select_cos},
    {.name = "Tan", .domain = "", .fn = k_tan, .select = select_tan},
    {.name = "Asin", .domain = "", .fn = k_asin, .select = select_asin},
    {.name = "Acos", .domain = "", .fn = k_acos, .select = select_acos},
    {.name = "Atan", .domain = "", .fn = k_atan, .select = select_atan},
    {.name = "Sinh", .domain = "", .fn = k_sinh, .select = select_sinh},
    {.name = "Cosh", .domain = "", .fn = k_cosh, .select = select_cosh},
    {.name = "Asinh", .domain = "", .fn = k_asinh, .select = select_asinh},
    {.name = "Acosh", .domain = "", .fn = k_acosh, .select = select_acosh},
    {.name = "Atanh", .domain = "", .fn = k_atanh, .select = select_atanh},
    {.name = "HardSwish", .domain = "", .fn = k_hardswish, .select = select_hardswish},
    {.name = "Mish", .domain = "", .fn = k_mish, .select = select_mish},
    {.name = "Elu", .domain = "", .fn = k_elu, .select = select_elu},
    {.name = "HardSigmoid", .domain = "", .fn = k_hardsigmoid, .select = select_hardsigmoid},
    {.name = "LeakyRelu", .domain = "", .fn = k_leakyrelu, .select = select_leakyrelu},
    {.name = "Selu", .domain = "", .fn = k_selu, .select = select_selu},
    {.name = "Celu", .domain = "", .fn = k_celu, .select = select_celu},
    {.name = "ThresholdedRelu",
     .domain = "",
     .fn = k_thresholdedrelu,
     .select = select_thresholdedrelu},
    {.name = "Shrink", .domain = "", .fn = k_shrink, .select = select_shrink},
    {.name = NULL},
};
