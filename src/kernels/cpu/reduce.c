/* reduce.c: CPU kernels of the reduce family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax,
 * CumSum and TopK.
 *
 * Every reduction is planned as (outer O, reduced R, inner I) blocks over the input after
 * dropping size-1 dims and merging neighbouring dims that are all reduced or all kept.
 * I == 1: each output reduces one contiguous run of R elements into LANES independent
 * accumulators (so the compiler vectorizes without reassociating).  I > 1: each output row
 * of I elements accumulates R input rows, a contiguous inner loop.  Reduced-kept-reduced
 * blocks (axes 0, 2, 3 of NCHW) combine row results per kept index; other reduced axes
 * that are not adjacent are first permuted to the end into scratch memory.  Few outputs
 * over long rows or many rows split the reduced extent among the threads.
 * Softmax, LogSoftmax, CumSum, ArgMax/ArgMin and TopK use the (O, R, I) split around their
 * axis. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/reduce_params.h"

/* Columns per task of a strided (I > 1) reduction: accumulators live on the stack. */
#define CH 256
/* Independent partial accumulators of a contiguous reduction. */
#define LANES 32
/* Rows shorter than this are not split across threads. */
#define SPLIT_MIN 65536

/* The float loops (softmax, log-sum-exp, row and column reductions) get x86-64-v4
 * (AVX-512) and v3 (AVX2, FMA) clones chosen at load time through glibc's ifunc: the build
 * targets baseline x86-64 (SSE2), a quarter of the width onnxruntime's kernels use.
 * fp-contract lets those clones fuse multiply-adds (the exp polynomial). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#pragma GCC optimize("fp-contract=fast")
#define OG_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OG_SIMD_CLONES
#endif
#define OG_NO_CLONES
/* Row helpers are forced inline so that the clones above get them at their width too. */
#if defined(__GNUC__)
#define OG_ROW_INLINE __attribute__((always_inline)) inline
#else
#define OG_ROW_INLINE inline
#endif

/* A non-NULL pointer for empty inputs: no element is read through it. */
static const double og_no_data[1];

typedef void (*red_fn)(const og_kernel_ctx *k, const void *x, void *y, int64_t O, int64_t R,
                       int64_t I);

typedef void (*rkr_fn)(const og_kernel_ctx *k, const void *x, void *y, int64_t R1, int64_t K,
                       int64_t R2);

/* The loops of one reduction for one dtype: f, and rkr for the [R1, K, R2] path (NULL
 * where partial results do not combine: log-sum-exp). */
typedef struct red_loops {
    red_fn f;
    rkr_fn rkr;
} red_loops;

/* The number of dtype_slot() values: float32, float64, int32, int64, bool, then the narrow
 * and unsigned integer types. */
#define N_SLOTS 11

/* One reduction's loops per supported dtype, indexed by dtype_slot() (f NULL: unsupported). */
typedef struct red_impl {
    red_loops t[N_SLOTS];
} red_impl;

/* exp for float32 written without calls or branches so that loops over it vectorize
 * (Cephes' polynomial, ~2 ulp).  Inputs below -87 give exp(-87) ~ 1.6e-38 instead of a
 * denormal or 0, which no softmax or log-sum-exp can tell apart. */
static inline float og_vexpf(float x)
{
    /* clamp x to [-87, 88] with integer masks: GCC turns float ternaries here into
     * branches, which stop the vectorizer */
    const float lo = -87.0f, hi = 88.0f;
    int32_t xi, lo_i, hi_i, m;
    memcpy(&xi, &x, sizeof xi);
    memcpy(&lo_i, &lo, sizeof lo_i);
    memcpy(&hi_i, &hi, sizeof hi_i);
    m = -(int32_t)(x < lo);
    xi = (xi & ~m) | (lo_i & m);
    m = -(int32_t)(x > hi);
    xi = (xi & ~m) | (hi_i & m);
    memcpy(&x, &xi, sizeof x);
    /* n = round(x / ln 2) through the 1.5 * 2^23 trick: the low bits of t hold n */
    float t = x * 1.44269504088896341f + 12582912.0f;
    uint32_t ti, yi;
    memcpy(&ti, &t, sizeof ti);
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f - n * -2.12194440e-4f;
    float q = 1.9875691500e-4f;
    q = q * r + 1.3981999507e-3f;
    q = q * r + 8.3334519073e-3f;
    q = q * r + 4.1665795894e-2f;
    q = q * r + 1.6666665459e-1f;
    q = q * r + 5.0000001201e-1f;
    float y = q * r * r + r + 1.0f;
    memcpy(&yi, &y, sizeof yi);
    yi += ti << 23; /* times 2^n: (ti - 0x4B400000) << 23 == ti << 23 modulo 2^32 */
    memcpy(&y, &yi, sizeof y);
    return y;
}

static int nthreads(const og_kernel_ctx *k) { return k->threads > 1 ? k->threads : 1; }

/* ---- the (O, R, I) walk -------------------------------------------------------------- */

/* One call of a reduction-shaped kernel: x viewed as [O, R, I], y its result; lg: the
 * kernel's switch (LogSoftmax rather than Softmax). */
typedef struct ori {
    const void *x;
    void *y;
    int64_t O, R, I;
    bool lg;
} ori;

/* Rows [o0, o1) of an I == 1 call; columns block c (CH wide) of output o of an I > 1 call. */
typedef void (*ori_rows_fn)(const ori *w, int64_t o0, int64_t o1);
typedef void (*ori_cols_fn)(const ori *w, int64_t o, int64_t c);

/* ori_walk's tasks for og_par_for: column blocks (I > 1), blocks of rb rows (I == 1) */
typedef struct ori_par {
    const ori *w;
    ori_rows_fn rows;
    ori_cols_fn cols;
    int64_t nc, rb; /* column blocks of an output; rows of a block */
} ori_par;

static void ori_cols_range(void *ctx, int64_t t0, int64_t t1, int slot)
{
    const ori_par *p = ctx;
    (void)slot;
    for (int64_t t = t0; t < t1; t++) p->cols(p->w, t / p->nc, t % p->nc);
}

static void ori_rows_range(void *ctx, int64_t t0, int64_t t1, int slot)
{
    const ori_par *p = ctx;
    const int64_t O = p->w->O, rb = p->rb;
    (void)slot;
    for (int64_t t = t0; t < t1; t++) p->rows(p->w, t * rb, O - t * rb < rb ? O : t * rb + rb);
}

/* The walk every reduction, softmax and arg-reduction shares.  I > 1: each task takes CH
 * columns of one output, contiguous inner loops over the R rows.  I == 1: each task takes a
 * block of whole rows (about 4096 elements, and at least 4 blocks a thread where there are
 * rows enough), so the call through the pointer is per block; the typed loops stay inside
 * rows and cols.  cost: work per element relative to a sum, for the threading threshold. */
static void ori_walk(const og_kernel_ctx *k, const ori *w, ori_rows_fn rows, ori_cols_fn cols,
                     int64_t cost)
{
    int64_t O = w->O, R = w->R;
    ori_par par = {.w = w, .rows = rows, .cols = cols};
    if (w->I > 1) {
        par.nc = (w->I + CH - 1) / CH;
        og_par_for(k, O * par.nc, (double)(R * CH * cost), OG_PAR_MIN_STREAM, ori_cols_range, &par);
        return;
    }
    int64_t rb = R >= 4096 ? 1 : 4096 / (R + 1), per = O / (4 * nthreads(k));
    if (nthreads(k) > 1 && rb > per) rb = per > 1 ? per : 1;
    par.rb = rb;
    og_par_for(k, (O + rb - 1) / rb, (double)(rb * (R * cost + 16)), OG_PAR_MIN_STREAM,
               ori_rows_range, &par);
}

/* Columns [*i0, *i0 + n) of block c of I columns; returns n. */
static inline int64_t col_block(int64_t I, int64_t c, int64_t *i0)
{
    *i0 = c * CH;
    return I - *i0 < CH ? I - *i0 : CH;
}

/* NAME##_acc: accumulate n contiguous elements (without POST).
 * NAME##_cols: one output o, columns [c*CH, c*CH+CH) of a strided reduction.
 * NAME: the (O, R, I) driver. */
/* NAME##_lanes folds n elements into n accumulators: a loop of runtime length that GCC
 * vectorizes (also for max/min, which it would not as an unrolled block). */
#define DEF_ACC(NAME, T, A, INIT, PRE, COMB)                                                       \
    static OG_ROW_INLINE void NAME##_lanes(A *restrict acc, const T *restrict x, int64_t n)        \
    {                                                                                              \
        for (int64_t j = 0; j < n; j++) {                                                          \
            A v = PRE((A)x[j]);                                                                    \
            acc[j] = COMB(acc[j], v);                                                              \
        }                                                                                          \
    }                                                                                              \
    static OG_ROW_INLINE void NAME##_lanes2(A *restrict acc, const A *restrict b, int64_t n)       \
    {                                                                                              \
        for (int64_t j = 0; j < n; j++) acc[j] = COMB(acc[j], b[j]);                               \
    }                                                                                              \
    static OG_ROW_INLINE A NAME##_acc(const T *restrict x, int64_t n)                              \
    {                                                                                              \
        A acc[LANES];                                                                              \
        for (int j = 0; j < LANES; j++) acc[j] = (INIT);                                           \
        int64_t r = 0;                                                                             \
        for (; r + LANES <= n; r += LANES) NAME##_lanes(acc, x + r, LANES);                        \
        /* halving tree: log-depth instead of a chain of LANES dependent operations */             \
        for (int w = LANES / 2; w > 0; w /= 2) NAME##_lanes2(acc, acc + w, w);                     \
        A a = acc[0];                                                                              \
        for (; r < n; r++) {                                                                       \
            A v = PRE((A)x[r]);                                                                    \
            a = COMB(a, v);                                                                        \
        }                                                                                          \
        return a;                                                                                  \
    }
#define DEF_REDUCE(NAME, T, A, INIT, PRE, COMB, POST, CL)                                          \
    DEF_ACC(NAME, T, A, INIT, PRE, COMB)                                                           \
    CL static void NAME##_rows(const ori *w, int64_t o0, int64_t o1)                               \
    {                                                                                              \
        const T *restrict x = w->x;                                                                \
        T *restrict y = w->y;                                                                      \
        int64_t R = w->R;                                                                          \
        for (int64_t o = o0; o < o1; o++) y[o] = (T)POST(NAME##_acc(x + o * R, R), R);             \
    }                                                                                              \
    static A NAME##_part(const T *x, int64_t R, int64_t P, int64_t t)                              \
    {                                                                                              \
        int64_t o = t / P, p = t % P;                                                              \
        int64_t lo = R * p / P, hi = R * (p + 1) / P;                                              \
        return NAME##_acc(x + o * R + lo, hi - lo);                                                \
    }                                                                                              \
    /* acc[0..n) = reduction of rows [r0, r1) of x (rows of I elements, from column i0) */         \
    CL static void NAME##_colacc(const T *restrict x, A *restrict acc, int64_t I, int64_t r0,      \
                                 int64_t r1, int64_t i0, int64_t n)                                \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) acc[i] = (INIT);                                           \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const T *restrict row = x + r * I + i0;                                                \
            for (int64_t i = 0; i < n; i++) {                                                      \
                A v = PRE((A)row[i]);                                                              \
                acc[i] = COMB(acc[i], v);                                                          \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_cols(const ori *w, int64_t o, int64_t c)                                    \
    {                                                                                              \
        A acc[CH];                                                                                 \
        int64_t R = w->R, I = w->I, i0, n = col_block(I, c, &i0);                                  \
        NAME##_colacc((const T *)w->x + o * R * I, acc, I, 0, R, i0, n);                           \
        T *restrict yo = (T *)w->y + o * I + i0;                                                   \
        for (int64_t i = 0; i < n; i++) yo[i] = (T)POST(acc[i], R);                                \
    }                                                                                              \
    /* colsplit's tasks: band t % P of output t / P's rows into part + t * I */                    \
    typedef struct NAME##_band {                                                                   \
        const T *x;                                                                                \
        A *part;                                                                                   \
        int64_t R, I, P;                                                                           \
    } NAME##_band;                                                                                 \
    static void NAME##_band_range(void *ctx, int64_t t0, int64_t t1, int slot)                     \
    {                                                                                              \
        const NAME##_band *b = ctx;                                                                \
        const int64_t R = b->R, I = b->I, P = b->P;                                                \
        (void)slot;                                                                                \
        for (int64_t t = t0; t < t1; t++)                                                          \
            NAME##_colacc(b->x + t / P * R * I, b->part + t * I, I, R * (t % P) / P,               \
                          R * (t % P + 1) / P, 0, I);                                              \
    }                                                                                              \
    /* NAME's tasks for few long rows: part t of row t / P, of P parts */                          \
    typedef struct NAME##_split {                                                                  \
        const T *x;                                                                                \
        A *part;                                                                                   \
        int64_t R, P;                                                                              \
    } NAME##_split;                                                                                \
    static void NAME##_split_range(void *ctx, int64_t t0, int64_t t1, int slot)                    \
    {                                                                                              \
        const NAME##_split *q = ctx;                                                               \
        (void)slot;                                                                                \
        for (int64_t t = t0; t < t1; t++) q->part[t] = NAME##_part(q->x, q->R, q->P, t);           \
    }                                                                                              \
    /* few outputs over many rows (e.g. a bias gradient, axis 0 of [N, C]): each of P tasks        \
     * reduces a band of rows into part, then the bands combine */                                 \
    static bool NAME##_colsplit(const og_kernel_ctx *k, const T *x, T *y, int64_t O, int64_t R,    \
                                int64_t I)                                                         \
    {                                                                                              \
        int64_t P = nthreads(k);                                                                   \
        A *part = og_malloc(k->alloc, (size_t)(O * P * I) * sizeof *part);                         \
        if (!part) return false; /* the serial path needs no memory */                             \
        NAME##_band b = {x, part, R, I, P};                                                        \
        og_par_for(k, O *P, (double)(R / P * I), OG_PAR_MIN_COMPUTE, NAME##_band_range, &b);       \
        for (int64_t o = 0; o < O; o++) {                                                          \
            A *a = part + o * P * I;                                                               \
            for (int64_t p = 1; p < P; p++) NAME##_lanes2(a, a + p * I, I);                        \
            for (int64_t i = 0; i < I; i++) y[o * I + i] = (T)POST(a[i], R);                       \
        }                                                                                          \
        og_free(k->alloc, part);                                                                   \
        return true;                                                                               \
    }                                                                                              \
    static void NAME(const og_kernel_ctx *k, const void *xv, void *yv, int64_t O, int64_t R,       \
                     int64_t I)                                                                    \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        int64_t nc = (I + CH - 1) / CH, P = 1;                                                     \
        if (I > 1 && O * nc < nthreads(k) && R >= 4 * nthreads(k) && R * I >= SPLIT_MIN &&         \
            NAME##_colsplit(k, x, y, O, R, I))                                                     \
            return;                                                                                \
        /* few long rows (a full reduction): split each row among the threads */                   \
        if (I == 1 && O < nthreads(k) && R >= SPLIT_MIN)                                           \
            P = 256 / O < nthreads(k) ? 256 / O : nthreads(k);                                     \
        if (P > 1) {                                                                               \
            A part[256];                                                                           \
            NAME##_split q = {x, part, R, P};                                                      \
            og_par_for(k, O *P, (double)(R / P), OG_PAR_MIN_COMPUTE, NAME##_split_range, &q);      \
            for (int64_t o = 0; o < O; o++) {                                                      \
                A a = part[o * P];                                                                 \
                for (int64_t p = 1; p < P; p++) a = COMB(a, part[o * P + p]);                      \
                y[o] = (T)POST(a, R);                                                              \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        ori w = {x, y, O, R, I, false};                                                            \
        ori_walk(k, &w, NAME##_rows, NAME##_cols, 1);                                              \
    }                                                                                              \
    CL static A NAME##_rkr_one(const T *x, int64_t R1, int64_t K, int64_t R2, int64_t kk)          \
    {                                                                                              \
        A a = NAME##_acc(x + kk * R2, R2);                                                         \
        for (int64_t r = 1; r < R1; r++) {                                                         \
            A b = NAME##_acc(x + (r * K + kk) * R2, R2);                                           \
            a = COMB(a, b);                                                                        \
        }                                                                                          \
        return a;                                                                                  \
    }                                                                                              \
    /* reduced-kept-reduced blocks [R1, K, R2] (e.g. axes 0, 2, 3 of NCHW): no permuting */        \
    typedef struct NAME##_rkr_job {                                                                \
        const T *x;                                                                                \
        T *y;                                                                                      \
        int64_t R1, K, R2;                                                                         \
    } NAME##_rkr_job;                                                                              \
    static void NAME##_rkr_range(void *ctx, int64_t k0, int64_t k1, int slot)                      \
    {                                                                                              \
        const NAME##_rkr_job *j = ctx;                                                             \
        const int64_t n = j->R1 * j->R2;                                                           \
        (void)slot, (void)n; /* POST may not use n */                                              \
        for (int64_t kk = k0; kk < k1; kk++)                                                       \
            j->y[kk] = (T)POST(NAME##_rkr_one(j->x, j->R1, j->K, j->R2, kk), n);                   \
    }                                                                                              \
    static void NAME##_rkr(const og_kernel_ctx *k, const void *xv, void *yv, int64_t R1,           \
                           int64_t K, int64_t R2)                                                  \
    {                                                                                              \
        NAME##_rkr_job j = {xv, yv, R1, K, R2};                                                    \
        og_par_for(k, K, (double)(R1 * R2 + 16), OG_PAR_MIN_COMPUTE, NAME##_rkr_range, &j);        \
    }

#define PRE_ID(v)      (v)
#define PRE_ABS(v)     ((v) < 0 ? -(v) : (v))
#define PRE_SQ(v)      ((v) * (v))
#define COMB_ADD(a, b) ((a) + (b))
#define COMB_MUL(a, b) ((a) * (b))
#define COMB_MAX(a, b) ((b) > (a) ? (b) : (a))
#define COMB_MIN(a, b) ((b) < (a) ? (b) : (a))
/* integer accumulations wrap like onnxruntime's instead of overflowing (undefined in C):
 * the arithmetic runs in uint64_t, the conversion back is modular on every target we
 * build for */
#define WRAP(x)          ((int64_t)(uint64_t)(x))
#define PRE_ABS_W(v)     ((v) < 0 ? WRAP(0 - (uint64_t)(v)) : (v))
#define PRE_SQ_W(v)      WRAP((uint64_t)(v) * (uint64_t)(v))
#define COMB_ADD_W(a, b) WRAP((uint64_t)(a) + (uint64_t)(b))
#define COMB_MUL_W(a, b) WRAP((uint64_t)(a) * (uint64_t)(b))
#define POST_ID(a, n)    (a)
/* the mean of an empty set is 0, as onnxruntime gives (and no integer division by 0) */
#define POST_MEAN(a, n)  ((n) ? (a) / (n) : 0)
#define POST_SQRTF(a, n) sqrtf(a)
#define POST_SQRT(a, n)  sqrt(a)
#define POST_LOGF(a, n)  logf(a)
#define POST_LOG(a, n)   log(a)

/* Sums of int32 accumulate in int64 (no signed overflow); float32 sums stay float32 (as
 * onnxruntime does), spread over LANES partial sums. */
#define DEF_SUMLIKE(OP, PRE, IPRE, UPRE, POST)                                                     \
    DEF_REDUCE(OP##_f32, float, float, 0.0f, PRE, COMB_ADD, POST, OG_SIMD_CLONES)                  \
    DEF_REDUCE(OP##_f64, double, double, 0.0, PRE, COMB_ADD, POST, OG_SIMD_CLONES)                 \
    DEF_REDUCE(OP##_i32, int32_t, int64_t, 0, IPRE, COMB_ADD_W, POST, OG_NO_CLONES)                \
    DEF_REDUCE(OP##_i64, int64_t, int64_t, 0, IPRE, COMB_ADD_W, POST, OG_NO_CLONES)                \
    DEF_REDUCE(OP##_u32, uint32_t, uint64_t, 0, UPRE, COMB_ADD, POST, OG_NO_CLONES)                \
    DEF_REDUCE(OP##_u64, uint64_t, uint64_t, 0, UPRE, COMB_ADD, POST, OG_NO_CLONES)

/* unsigned accumulations wrap by C's rules: PRE_ID for L1, plain products */
DEF_SUMLIKE(sum, PRE_ID, PRE_ID, PRE_ID, POST_ID)
DEF_SUMLIKE(mean, PRE_ID, PRE_ID, PRE_ID, POST_MEAN)
DEF_SUMLIKE(l1, PRE_ABS, PRE_ABS_W, PRE_ID, POST_ID)
DEF_SUMLIKE(sumsq, PRE_SQ, PRE_SQ_W, PRE_SQ, POST_ID)
DEF_REDUCE(l2_f32, float, float, 0.0f, PRE_SQ, COMB_ADD, POST_SQRTF, OG_SIMD_CLONES)
DEF_REDUCE(l2_f64, double, double, 0.0, PRE_SQ, COMB_ADD, POST_SQRT, OG_SIMD_CLONES)
DEF_REDUCE(logsum_f32, float, float, 0.0f, PRE_ID, COMB_ADD, POST_LOGF, OG_SIMD_CLONES)
DEF_REDUCE(logsum_f64, double, double, 0.0, PRE_ID, COMB_ADD, POST_LOG, OG_SIMD_CLONES)
DEF_REDUCE(prod_f32, float, float, 1.0f, PRE_ID, COMB_MUL, POST_ID, OG_SIMD_CLONES)
DEF_REDUCE(prod_f64, double, double, 1.0, PRE_ID, COMB_MUL, POST_ID, OG_SIMD_CLONES)
DEF_REDUCE(prod_i32, int32_t, int64_t, 1, PRE_ID, COMB_MUL_W, POST_ID, OG_NO_CLONES)
DEF_REDUCE(prod_i64, int64_t, int64_t, 1, PRE_ID, COMB_MUL_W, POST_ID, OG_NO_CLONES)
DEF_REDUCE(prod_u32, uint32_t, uint64_t, 1, PRE_ID, COMB_MUL, POST_ID, OG_NO_CLONES)
DEF_REDUCE(prod_u64, uint64_t, uint64_t, 1, PRE_ID, COMB_MUL, POST_ID, OG_NO_CLONES)
DEF_REDUCE(max_f32, float, float, -INFINITY, PRE_ID, COMB_MAX, POST_ID, OG_SIMD_CLONES)
DEF_REDUCE(max_f64, double, double, -INFINITY, PRE_ID, COMB_MAX, POST_ID, OG_SIMD_CLONES)
DEF_REDUCE(max_i32, int32_t, int32_t, INT32_MIN, PRE_ID, COMB_MAX, POST_ID, OG_NO_CLONES)
DEF_REDUCE(max_i64, int64_t, int64_t, INT64_MIN, PRE_ID, COMB_MAX, POST_ID, OG_NO_CLONES)
DEF_REDUCE(max_b8, uint8_t, uint8_t, 0, PRE_ID, COMB_MAX, POST_ID, OG_NO_CLONES)
DEF_REDUCE(min_f32, float, float, INFINITY, PRE_ID, COMB_MIN, POST_ID, OG_SIMD_CLONES)
DEF_REDUCE(min_f64, double, double, INFINITY, PRE_ID, COMB_MIN, POST_ID, OG_SIMD_CLONES)
DEF_REDUCE(min_i32, int32_t, int32_t, INT32_MAX, PRE_ID, COMB_MIN, POST_ID, OG_NO_CLONES)
DEF_REDUCE(min_i64, int64_t, int64_t, INT64_MAX, PRE_ID, COMB_MIN, POST_ID, OG_NO_CLONES)
DEF_REDUCE(min_b8, uint8_t, uint8_t, 1, PRE_ID, COMB_MIN, POST_ID, OG_NO_CLONES)
/* max and min of the narrow and unsigned integer types (ReduceMax/ReduceMin, ArgMax/ArgMin) */
#define DEF_MAXMIN(SUF, T, LO, HI)                                                                 \
    DEF_REDUCE(max_##SUF, T, T, LO, PRE_ID, COMB_MAX, POST_ID, OG_NO_CLONES)                       \
    DEF_REDUCE(min_##SUF, T, T, HI, PRE_ID, COMB_MIN, POST_ID, OG_NO_CLONES)
DEF_MAXMIN(i8, int8_t, INT8_MIN, INT8_MAX)
DEF_MAXMIN(u8, uint8_t, 0, UINT8_MAX)
DEF_MAXMIN(i16, int16_t, INT16_MIN, INT16_MAX)
DEF_MAXMIN(u16, uint16_t, 0, UINT16_MAX)
DEF_MAXMIN(u32, uint32_t, 0, UINT32_MAX)
DEF_MAXMIN(u64, uint64_t, 0, UINT64_MAX)

/* LogSumExp = m + log(sum(exp(x - m))) with m the max: no overflow for large inputs. */
#define DEF_LSE(NAME, T, MAXACC, EXP, LOG)                                                         \
    static OG_ROW_INLINE void NAME##_lanes(T *restrict acc, const T *restrict x, T m, int64_t n)   \
    {                                                                                              \
        for (int64_t j = 0; j < n; j++) acc[j] += EXP(x[j] - m);                                   \
    }                                                                                              \
    static OG_ROW_INLINE T NAME##_row(const T *restrict x, int64_t n)                              \
    {                                                                                              \
        T m = MAXACC(x, n);                                                                        \
        if (!isfinite(m)) return n ? m : -INFINITY; /* empty set: log(0) */                        \
        T acc[LANES] = {0};                                                                        \
        int64_t r = 0;                                                                             \
        for (; r + LANES <= n; r += LANES) NAME##_lanes(acc, x + r, m, LANES);                     \
        for (int w = LANES / 2; w > 0; w /= 2)                                                     \
            for (int j = 0; j < w; j++) acc[j] += acc[j + w];                                      \
        T s = acc[0];                                                                              \
        for (; r < n; r++) s += EXP(x[r] - m);                                                     \
        return m + LOG(s);                                                                         \
    }                                                                                              \
    OG_SIMD_CLONES static void NAME##_rows(const ori *w, int64_t o0, int64_t o1)                   \
    {                                                                                              \
        const T *restrict x = w->x;                                                                \
        T *restrict y = w->y;                                                                      \
        for (int64_t o = o0; o < o1; o++) y[o] = NAME##_row(x + o * w->R, w->R);                   \
    }                                                                                              \
    OG_SIMD_CLONES static void NAME##_cols(const ori *w, int64_t o, int64_t c)                     \
    {                                                                                              \
        T mx[CH], s[CH];                                                                           \
        int64_t R = w->R, I = w->I, i0, n = col_block(I, c, &i0);                                  \
        const T *restrict xo = (const T *)w->x + o * R * I + i0;                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            mx[i] = -INFINITY;                                                                     \
            s[i] = 0;                                                                              \
        }                                                                                          \
        for (int64_t r = 0; r < R; r++)                                                            \
            for (int64_t i = 0; i < n; i++) mx[i] = COMB_MAX(mx[i], xo[r * I + i]);                \
        for (int64_t i = 0; i < n; i++)                                                            \
            if (!isfinite(mx[i])) mx[i] = 0; /* all -inf, or +inf: let exp/log propagate */        \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *restrict row = xo + r * I;                                                    \
            for (int64_t i = 0; i < n; i++) s[i] += EXP(row[i] - mx[i]);                           \
        }                                                                                          \
        T *restrict yo = (T *)w->y + o * I + i0;                                                   \
        for (int64_t i = 0; i < n; i++) yo[i] = mx[i] + LOG(s[i]);                                 \
    }                                                                                              \
    static void NAME(const og_kernel_ctx *k, const void *x, void *y, int64_t O, int64_t R,         \
                     int64_t I)                                                                    \
    {                                                                                              \
        ori w = {x, y, O, R, I, false};                                                            \
        ori_walk(k, &w, NAME##_rows, NAME##_cols, 8);                                              \
    }

DEF_LSE(lse_f32, float, max_f32_acc, og_vexpf, logf)
DEF_LSE(lse_f64, double, max_f64_acc, exp, log)

/* ReduceL2, ReduceLogSum and ReduceLogSumExp of int32, int64, uint32, uint64: float-valued
 * results cast back to the type as the references compute them (OG_CVT: truncation, and
 * x86-64's values where C leaves the cast undefined).  Plain serial loops over (O, R, I).
 *  L2 (the ONNX reference evaluator): each square wrapped in T (numpy's square), summed in
 *   64 bits (numpy's sum), then the square root cast back.
 *  LogSum (onnxruntime's; the reference evaluator fails on integers): the sum wrapped in T,
 *   then its log cast back (the log of 0 is -inf, which casts to INT_MIN).
 *  LogSumExp (onnxruntime's): signed types accumulate in T, each term exp(x - max) added and
 *   the sum cast back at once, so that only the maxima count (exp(0) = 1, smaller terms
 *   truncate away): max + (T)log(count); unsigned types compute max + log(sum of
 *   exp(x - max)) in float64 and cast the result. */
/* NAME: the (O, R, I) driver over NAME##_one, which reduces the R elements of one output
 * (I apart). */
#define IRED_DRIVER(NAME, T)                                                                       \
    static void NAME(const og_kernel_ctx *k, const void *xv, void *yv, int64_t O, int64_t R,       \
                     int64_t I)                                                                    \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        (void)k;                                                                                   \
        for (int64_t o = 0; o < O; o++)                                                            \
            for (int64_t i = 0; i < I; i++) y[o * I + i] = NAME##_one(x + o * R * I + i, R, I);    \
    }
/* U: T's unsigned type; A: the 64-bit accumulator of T's signedness */
#define DEF_IRED(SFX, T, U, A)                                                                     \
    static T l2_##SFX##_one(const T *xs, int64_t R, int64_t I)                                     \
    {                                                                                              \
        A acc = 0;                                                                                 \
        for (int64_t r = 0; r < R; r++) {                                                          \
            U v = (U)xs[r * I];                                                                    \
            acc = (A)((uint64_t)acc + (uint64_t)(A)(T)(U)(v * v));                                 \
        }                                                                                          \
        return OG_CVT(T, sqrt((double)acc));                                                       \
    }                                                                                              \
    IRED_DRIVER(l2_##SFX, T)                                                                       \
    static T logsum_##SFX##_one(const T *xs, int64_t R, int64_t I)                                 \
    {                                                                                              \
        U acc = 0;                                                                                 \
        for (int64_t r = 0; r < R; r++) acc += (U)xs[r * I];                                       \
        return OG_CVT(T, log((double)(T)acc));                                                     \
    }                                                                                              \
    IRED_DRIVER(logsum_##SFX, T)
#define DEF_ILSE_SIGNED(SFX, T, U)                                                                 \
    static T lse_##SFX##_one(const T *xs, int64_t R, int64_t I)                                    \
    {                                                                                              \
        if (R == 0) return OG_CVT(T, -INFINITY);                                                   \
        T mx = xs[0], acc = 0;                                                                     \
        for (int64_t r = 1; r < R; r++) mx = xs[r * I] > mx ? xs[r * I] : mx;                      \
        for (int64_t r = 0; r < R; r++)                                                            \
            acc = OG_CVT(T, (double)acc + exp((double)(T)((U)xs[r * I] - (U)mx)));                 \
        return (T)((U)OG_CVT(T, log((double)acc)) + (U)mx);                                        \
    }                                                                                              \
    IRED_DRIVER(lse_##SFX, T)
#define DEF_ILSE_UNSIGNED(SFX, T)                                                                  \
    static T lse_##SFX##_one(const T *xs, int64_t R, int64_t I)                                    \
    {                                                                                              \
        if (R == 0) return OG_CVT(T, -INFINITY);                                                   \
        T mx = xs[0];                                                                              \
        double s = 0;                                                                              \
        for (int64_t r = 1; r < R; r++) mx = xs[r * I] > mx ? xs[r * I] : mx;                      \
        for (int64_t r = 0; r < R; r++) s += exp((double)xs[r * I] - (double)mx);                  \
        return OG_CVT(T, (double)mx + log(s));                                                     \
    }                                                                                              \
    IRED_DRIVER(lse_##SFX, T)
DEF_IRED(i32, int32_t, uint32_t, int64_t)
DEF_IRED(i64, int64_t, uint64_t, int64_t)
DEF_IRED(u32, uint32_t, uint32_t, uint64_t)
DEF_IRED(u64, uint64_t, uint64_t, uint64_t)
DEF_ILSE_SIGNED(i32, int32_t, uint32_t)
DEF_ILSE_SIGNED(i64, int64_t, uint64_t)
DEF_ILSE_UNSIGNED(u32, uint32_t)
DEF_ILSE_UNSIGNED(u64, uint64_t)

/* The variants DEF_SUMLIKE / DEF_REDUCE made of OP, by the dtypes they cover. */
#define LOOPS(OP, S)                                                                               \
    {                                                                                              \
        OP##_##S, OP##_##S##_rkr                                                                   \
    }
#define IMPL_FLOAT(OP)                                                                             \
    {                                                                                              \
        {                                                                                          \
            LOOPS(OP, f32), LOOPS(OP, f64)                                                         \
        }                                                                                          \
    }
/* numeric and uint32, uint64 (slots 9 and 10) */
#define IMPL_NUMERIC(OP)                                                                           \
    {                                                                                              \
        {                                                                                          \
            LOOPS(OP, f32), LOOPS(OP, f64), LOOPS(OP, i32),                                        \
                LOOPS(OP, i64), [9] = LOOPS(OP, u32), [10] = LOOPS(OP, u64)                        \
        }                                                                                          \
    }
#define IMPL_ALL(OP)                                                                               \
    {                                                                                              \
        {                                                                                          \
            LOOPS(OP, f32), LOOPS(OP, f64), LOOPS(OP, i32), LOOPS(OP, i64), LOOPS(OP, b8),         \
                LOOPS(OP, i8), LOOPS(OP, u8), LOOPS(OP, i16), LOOPS(OP, u16), LOOPS(OP, u32),      \
                LOOPS(OP, u64)                                                                     \
        }                                                                                          \
    }

static const red_impl impl_sum = IMPL_NUMERIC(sum);
static const red_impl impl_mean = IMPL_NUMERIC(mean);
static const red_impl impl_l1 = IMPL_NUMERIC(l1);
static const red_impl impl_sumsq = IMPL_NUMERIC(sumsq);
/* float32, float64 with the [R1, K, R2] path; the integer types (slots 2, 3, 9, 10) without */
#define IMPL_FLOAT_INT(OP)                                                                         \
    {                                                                                              \
        {                                                                                          \
            LOOPS(OP, f32), LOOPS(OP, f64), {OP##_i32, NULL},                                      \
                {OP##_i64, NULL}, [9] = {OP##_u32, NULL}, [10] = {                                 \
                    OP##_u64,                                                                      \
                    NULL                                                                           \
                }                                                                                  \
        }                                                                                          \
    }
static const red_impl impl_l2 = IMPL_FLOAT_INT(l2);
static const red_impl impl_logsum = IMPL_FLOAT_INT(logsum);
static const red_impl impl_lse = {{{lse_f32, NULL},
                                   {lse_f64, NULL},
                                   {lse_i32, NULL},
                                   {lse_i64, NULL},
                                   [9] = {lse_u32, NULL},
                                   [10] = {lse_u64, NULL}}};
static const red_impl impl_prod = IMPL_NUMERIC(prod);
static const red_impl impl_max = IMPL_ALL(max);
static const red_impl impl_min = IMPL_ALL(min);

/* ---- planning ------------------------------------------------------------------------ */

/* Drop size-1 dims and merge runs of dims with the same mask: blocks bs[0..*nb) with
 * reduced flags br[].  Returns the number of reduced blocks. */
static int collapse(int rank, const int64_t *dims, const bool *mask, int64_t *bs, bool *br, int *nb)
{
    int n = 0, nr = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        if (n > 0 && br[n - 1] == mask[d]) {
            bs[n - 1] *= dims[d];
        } else {
            bs[n] = dims[d];
            br[n] = mask[d];
            nr += mask[d];
            n++;
        }
    }
    *nb = n;
    return nr;
}

/* Copy x (blocks bs) into dst with the kept blocks first and the reduced blocks last. */
#define DEF_PERMUTE(NAME, T)                                                                       \
    static void NAME(const T *restrict x, T *restrict dst, int m, const int64_t *pd,               \
                     const int64_t *ps)                                                            \
    {                                                                                              \
        og_index_iter it;                                                                          \
        og_index_init(&it, m - 1, pd);                                                             \
        int64_t inner = pd[m - 1], is = ps[m - 1];                                                 \
        do {                                                                                       \
            int64_t off = 0;                                                                       \
            for (int d = 0; d < m - 1; d++) off += it.idx[d] * ps[d];                              \
            for (int64_t j = 0; j < inner; j++) dst[j] = x[off + j * is];                          \
            dst += inner;                                                                          \
        } while (og_index_next(&it));                                                              \
    }
DEF_PERMUTE(permute_1, uint8_t)
DEF_PERMUTE(permute_2, uint16_t)
DEF_PERMUTE(permute_4, uint32_t)
DEF_PERMUTE(permute_8, uint64_t)

static og_status unsupported(const og_kernel_ctx *k, og_dtype t)
{
    return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                           og_dtype_name(t));
}

/* Index of a dtype in the per-dtype tables: float32, float64, int32, int64, bool, int8,
 * uint8, int16, uint16, uint32, uint64; -1. */
static int dtype_slot(og_dtype t)
{
    switch (t) {
    case OG_FLOAT: return 0;
    case OG_DOUBLE: return 1;
    case OG_INT32: return 2;
    case OG_INT64: return 3;
    case OG_BOOL: return 4;
    case OG_INT8: return 5;
    case OG_UINT8: return 6;
    case OG_INT16: return 7;
    case OG_UINT16: return 8;
    case OG_UINT32: return 9;
    case OG_UINT64: return 10;
    default: return -1;
    }
}

/* The loops of impl for dtype t (their address travels as the binding's impl), NULL if
 * none. */
static const red_loops *red_pick(const red_impl *impl, og_dtype t)
{
    int s = dtype_slot(t);
    return s >= 0 && impl->t[s].f ? &impl->t[s] : NULL;
}

/* The binding of a float16 or bfloat16 input of the Reduce* ops, ArgMax, ArgMin, CumSum
 * and TopK: the float32 loops run on a widened copy and the float outputs are rounded once
 * (og_kernel_via_f32).  A marker. */
static const char reduce_via_f32 = 'h';

/* A select's binding: the marker for a 16-bit float t, else `loops`. */
static const void *half_or(const void *loops, og_dtype t)
{
    return og_is_half(t) ? (const void *)&reduce_via_f32 : loops;
}

/* True when this call runs through float32 copies (bound to the marker, or unbound with a
 * 16-bit input x). */
static bool runs_via_f32(const og_kernel_ctx *k, const og_tensor *x)
{
    return k->impl == (const void *)&reduce_via_f32 || (!k->impl && og_is_half(x->dtype));
}

static og_status reduce_run(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, const red_impl *impl)
{
    const og_reduce_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    /* k->impl: the loops bound at session creation; without a binding, pick them here */
    const red_loops *loops = k->impl ? k->impl : red_pick(impl, x->dtype);
    if (!loops) return unsupported(k, x->dtype);
    red_fn fn = loops->f;
    bool mask[OG_MAX_RANK], noop;
    og_status st = og_reduce_axes_mask(p, x->rank, n_in > 1 ? in[1] : NULL, mask, &noop);
    if (st) {
        char label[256];
        return og_error_prefix(st, "%s", og_node_label(k->node, label, sizeof label));
    }
    if (y->numel == 0) return OG_OK;
    /* noop (empty axes with noop_with_empty_axes): every output "reduces" its one element,
     * so L1 gives |x| and SumSquare x*x, as onnxruntime does; the mask is all false */
    (void)noop;
    if (x->numel == 0) { /* a reduced dim is 0: every output reduces the empty set */
        fn(k, og_no_data, y->data, y->numel, 0, 1);
        return OG_OK;
    }
    int64_t bs[OG_MAX_RANK];
    bool br[OG_MAX_RANK];
    int nb;
    int nr = collapse(x->rank, x->dims, mask, bs, br, &nb);
    if (nr <= 1) {
        int64_t O = 1, R = 1, I = 1;
        int b = 0;
        if (nr == 0) {
            I = x->numel; /* an elementwise PRE/POST (e.g. L1 over a size-1 axis) */
        } else {
            for (; !br[b]; b++) O *= bs[b];
            R = bs[b++];
            for (; b < nb; b++) I *= bs[b];
        }
        fn(k, x->data, y->data, O, R, I);
        return OG_OK;
    }
    if (nb == 3 && br[0] && loops->rkr) {
        loops->rkr(k, x->data, y->data, bs[0], bs[1], bs[2]);
        return OG_OK;
    }
    /* reduced blocks apart: move them to the end, then reduce contiguous rows */
    int64_t ss[OG_MAX_RANK], pd[OG_MAX_RANK], ps[OG_MAX_RANK], O = 1, R = 1;
    og_strides(nb, bs, ss);
    int m = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < nb; b++)
            if (br[b] == (pass == 1)) {
                pd[m] = bs[b];
                ps[m++] = ss[b];
                if (pass)
                    R *= bs[b];
                else
                    O *= bs[b];
            }
    size_t es = og_dtype_size(x->dtype);
    void *tmp = og_malloc(k->alloc, (size_t)x->numel * es);
    if (!tmp) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory (%zu bytes)", x->numel * es);
    if (es == 1)
        permute_1(x->data, tmp, m, pd, ps);
    else if (es == 2)
        permute_2(x->data, tmp, m, pd, ps);
    else if (es == 4)
        permute_4(x->data, tmp, m, pd, ps);
    else
        permute_8(x->data, tmp, m, pd, ps);
    fn(k, tmp, y->data, O, R, 1);
    og_free(k->alloc, tmp);
    return OG_OK;
}

#define DEF_REDUCE_KERNEL(OP, IMPL)                                                                \
    static const void *select_##OP(const og_node *n, og_dtype t)                                   \
    {                                                                                              \
        (void)n;                                                                                   \
        return half_or(red_pick(&IMPL, t), t);                                                     \
    }                                                                                              \
    static og_status k_##OP(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,          \
                            og_tensor *const *out, int n_out)                                      \
    {                                                                                              \
        if (runs_via_f32(k, in[0]))                                                                \
            return og_kernel_via_f32_unbound(k, k_##OP, in, n_in, out, n_out);                     \
        return reduce_run(k, in, n_in, out, &IMPL);                                                \
    }
DEF_REDUCE_KERNEL(ReduceSum, impl_sum)
DEF_REDUCE_KERNEL(ReduceMean, impl_mean)
DEF_REDUCE_KERNEL(ReduceMax, impl_max)
DEF_REDUCE_KERNEL(ReduceMin, impl_min)
DEF_REDUCE_KERNEL(ReduceProd, impl_prod)
DEF_REDUCE_KERNEL(ReduceL1, impl_l1)
DEF_REDUCE_KERNEL(ReduceL2, impl_l2)
DEF_REDUCE_KERNEL(ReduceLogSum, impl_logsum)
DEF_REDUCE_KERNEL(ReduceLogSumExp, impl_lse)
DEF_REDUCE_KERNEL(ReduceSumSquare, impl_sumsq)

/* ---- ArgMax, ArgMin ------------------------------------------------------------------ */

/* Rows: the extreme through the vectorized max/min (EXT), then its first or last position.
 * Columns: BETTER(v, best), strict for the first index of the extreme, non-strict for the
 * last. */
#define DEF_ARG(NAME, T, BETTER, EXT, LAST)                                                        \
    static int64_t NAME##_row(const T *restrict x, int64_t n)                                      \
    {                                                                                              \
        T m = EXT(x, n);                                                                           \
        if (LAST) {                                                                                \
            for (int64_t r = n - 1; r >= 0; r--)                                                   \
                if (x[r] == m) return r;                                                           \
        } else {                                                                                   \
            for (int64_t r = 0; r < n; r++)                                                        \
                if (x[r] == m) return r;                                                           \
        }                                                                                          \
        return 0; /* only NaN */                                                                   \
    }                                                                                              \
    static void NAME##_rows(const ori *w, int64_t o0, int64_t o1)                                  \
    {                                                                                              \
        const T *restrict x = w->x;                                                                \
        int64_t *restrict y = w->y;                                                                \
        for (int64_t o = o0; o < o1; o++) y[o] = NAME##_row(x + o * w->R, w->R);                   \
    }                                                                                              \
    static void NAME##_cols(const ori *w, int64_t o, int64_t c)                                    \
    {                                                                                              \
        T best[CH];                                                                                \
        int64_t R = w->R, I = w->I, i0, n = col_block(I, c, &i0);                                  \
        const T *restrict xo = (const T *)w->x + o * R * I + i0;                                   \
        int64_t *restrict yo = (int64_t *)w->y + o * I + i0;                                       \
        for (int64_t i = 0; i < n; i++) {                                                          \
            best[i] = xo[i];                                                                       \
            yo[i] = 0;                                                                             \
        }                                                                                          \
        for (int64_t r = 1; r < R; r++) {                                                          \
            const T *restrict row = xo + r * I;                                                    \
            for (int64_t i = 0; i < n; i++) {                                                      \
                bool b = BETTER(row[i], best[i]);                                                  \
                best[i] = b ? row[i] : best[i];                                                    \
                yo[i] = b ? r : yo[i];                                                             \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const og_kernel_ctx *k, const void *x, int64_t *y, int64_t O, int64_t R,      \
                     int64_t I)                                                                    \
    {                                                                                              \
        ori w = {x, y, O, R, I, false};                                                            \
        ori_walk(k, &w, NAME##_rows, NAME##_cols, 1);                                              \
    }

#define ARG_GT(a, b) ((a) > (b))
#define ARG_GE(a, b) ((a) >= (b))
#define ARG_LT(a, b) ((a) < (b))
#define ARG_LE(a, b) ((a) <= (b))
#define DEF_ARGS(SUF, T)                                                                           \
    DEF_ARG(argmax_first_##SUF, T, ARG_GT, max_##SUF##_acc, 0)                                     \
    DEF_ARG(argmax_last_##SUF, T, ARG_GE, max_##SUF##_acc, 1)                                      \
    DEF_ARG(argmin_first_##SUF, T, ARG_LT, min_##SUF##_acc, 0)                                     \
    DEF_ARG(argmin_last_##SUF, T, ARG_LE, min_##SUF##_acc, 1)
DEF_ARGS(f32, float)
DEF_ARGS(f64, double)
DEF_ARGS(i32, int32_t)
DEF_ARGS(i64, int64_t)
DEF_ARGS(i8, int8_t)
DEF_ARGS(u8, uint8_t)
DEF_ARGS(i16, int16_t)
DEF_ARGS(u16, uint16_t)
DEF_ARGS(u32, uint32_t)
DEF_ARGS(u64, uint64_t)

typedef void (*arg_fn)(const og_kernel_ctx *k, const void *x, int64_t *y, int64_t O, int64_t R,
                       int64_t I);

#define ARG_ROW(S)                                                                                 \
    {                                                                                              \
        {argmax_first_##S, argmax_last_##S}, { argmin_first_##S, argmin_last_##S }                 \
    }
/* [dtype_slot()][max/min][first/last]; the bool slot is empty */
static const arg_fn arg_table[N_SLOTS][2][2] = {
    ARG_ROW(f32), ARG_ROW(f64), ARG_ROW(i32), ARG_ROW(i64), {{NULL, NULL}, {NULL, NULL}},
    ARG_ROW(i8),  ARG_ROW(u8),  ARG_ROW(i16), ARG_ROW(u16), ARG_ROW(u32),
    ARG_ROW(u64),
};

/* Outer, axis and inner extents of a shape around `axis`. */
static void split_axis(int rank, const int64_t *dims, int axis, int64_t *O, int64_t *R, int64_t *I)
{
    *O = *R = *I = 1;
    for (int d = 0; d < rank; d++) {
        if (d < axis)
            *O *= dims[d];
        else if (d == axis)
            *R = dims[d];
        else
            *I *= dims[d];
    }
}

/* O, R, I around the axis attribute of ArgMax/ArgMin, Softmax and TopK (a scalar has axis 0
 * or -1 where scalar_ok, else no axis at all). */
static og_status split_attr_axis(const og_kernel_ctx *k, const og_tensor *x, bool scalar_ok,
                                 int *axis, int64_t *O, int64_t *R, int64_t *I)
{
    const og_reduce_params *p = k->params;
    int64_t a = p->axis < 0 ? p->axis + x->rank : p->axis;
    *O = *R = *I = 1;
    if ((x->rank > 0 || !scalar_ok) && (a < 0 || a >= x->rank))
        return og_kernel_error(k, OG_ERR_MODEL, "attribute 'axis' %lld is out of range for rank %d",
                               (long long)p->axis, x->rank);
    *axis = (int)a;
    split_axis(x->rank, x->dims, *axis, O, R, I);
    return OG_OK;
}

/* The ArgMax (is_min 0) or ArgMin loop for dtype t and p's select_last_index, NULL if
 * none. */
static const arg_fn *arg_pick(const og_reduce_params *p, int is_min, og_dtype t)
{
    int s = dtype_slot(t);
    return s >= 0 && arg_table[s][0][0] ? &arg_table[s][is_min][p && p->select_last_index] : NULL;
}

static const void *select_argmax(const og_node *n, og_dtype t)
{
    return half_or(arg_pick(n->params, 0, t), t);
}
static const void *select_argmin(const og_node *n, og_dtype t)
{
    return half_or(arg_pick(n->params, 1, t), t);
}

static og_status arg_run(const og_kernel_ctx *k, const og_tensor *x, og_tensor *y, int is_min)
{
    const arg_fn *fn = k->impl ? k->impl : arg_pick(k->params, is_min, x->dtype);
    if (!fn) return unsupported(k, x->dtype);
    int axis;
    int64_t O, R, I;
    og_status st = split_attr_axis(k, x, true, &axis, &O, &R, &I);
    if (st || y->numel == 0) return st;
    if (R == 0) return og_kernel_error(k, OG_ERR_SHAPE, "axis %d of input 0 is empty", axis);
    (*fn)(k, x->data, y->data, O, R, I);
    return OG_OK;
}

static og_status k_ArgMax(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    if (runs_via_f32(k, in[0])) return og_kernel_via_f32_unbound(k, k_ArgMax, in, n_in, out, n_out);
    return arg_run(k, in[0], out[0], 0);
}

static og_status k_ArgMin(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    if (runs_via_f32(k, in[0])) return og_kernel_via_f32_unbound(k, k_ArgMin, in, n_in, out, n_out);
    return arg_run(k, in[0], out[0], 1);
}

/* ---- Softmax, LogSoftmax ------------------------------------------------------------- */

/* Stable: exp(x - max).  Rows (I == 1) make three vectorized passes over the row. */
#define DEF_SOFTMAX(NAME, T, AT, MAXACC, SUMACC, EXP, LOG)                                         \
    static OG_ROW_INLINE void NAME##_row(const T *restrict x, T *restrict y, int64_t n, bool lg)   \
    {                                                                                              \
        T m = MAXACC(x, n);                                                                        \
        for (int64_t j = 0; j < n; j++) y[j] = EXP(x[j] - m);                                      \
        AT s = SUMACC(y, n);                                                                       \
        if (lg) {                                                                                  \
            T ls = (T)LOG(s);                                                                      \
            for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) - ls;                                \
        } else {                                                                                   \
            T inv = (T)(1 / s);                                                                    \
            for (int64_t j = 0; j < n; j++) y[j] *= inv;                                           \
        }                                                                                          \
    }                                                                                              \
    OG_SIMD_CLONES static void NAME##_rows(const ori *w, int64_t o0, int64_t o1)                   \
    {                                                                                              \
        const T *restrict x = w->x;                                                                \
        T *restrict y = w->y;                                                                      \
        for (int64_t o = o0; o < o1; o++) NAME##_row(x + o * w->R, y + o * w->R, w->R, w->lg);     \
    }                                                                                              \
    OG_SIMD_CLONES static void NAME##_cols(const ori *w, int64_t o, int64_t c)                     \
    {                                                                                              \
        T mx[CH], ls[CH];                                                                          \
        AT s[CH];                                                                                  \
        int64_t R = w->R, I = w->I, i0, n = col_block(I, c, &i0);                                  \
        bool lg = w->lg;                                                                           \
        const T *restrict xo = (const T *)w->x + o * R * I + i0;                                   \
        T *restrict yo = (T *)w->y + o * R * I + i0;                                               \
        for (int64_t i = 0; i < n; i++) {                                                          \
            mx[i] = -INFINITY;                                                                     \
            s[i] = 0;                                                                              \
        }                                                                                          \
        for (int64_t r = 0; r < R; r++)                                                            \
            for (int64_t i = 0; i < n; i++) mx[i] = COMB_MAX(mx[i], xo[r * I + i]);                \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *restrict xr = xo + r * I;                                                     \
            T *restrict yr = yo + r * I;                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T e = EXP(xr[i] - mx[i]);                                                          \
                s[i] += e;                                                                         \
                yr[i] = e;                                                                         \
            }                                                                                      \
        }                                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            ls[i] = lg ? (T)LOG(s[i]) : (T)(1 / s[i]);                                             \
        }                                                                                          \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *restrict xr = xo + r * I;                                                     \
            T *restrict yr = yo + r * I;                                                           \
            if (lg)                                                                                \
                for (int64_t i = 0; i < n; i++) yr[i] = (xr[i] - mx[i]) - ls[i];                   \
            else                                                                                   \
                for (int64_t i = 0; i < n; i++) yr[i] *= ls[i];                                    \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const og_kernel_ctx *k, const void *x, void *y, int64_t O, int64_t R,         \
                     int64_t I, bool lg)                                                           \
    {                                                                                              \
        ori w = {x, y, O, R, I, lg};                                                               \
        ori_walk(k, &w, NAME##_rows, NAME##_cols, 8);                                              \
    }

/* float32 sums of exp accumulate in double: log(sum) near 0 needs the bits */
DEF_ACC(sumd_f32, float, double, 0.0, PRE_ID, COMB_ADD)
DEF_SOFTMAX(softmax_f32, float, double, max_f32_acc, sumd_f32_acc, og_vexpf, log)
DEF_SOFTMAX(softmax_f64, double, double, max_f64_acc, sum_f64_acc, exp, log)

typedef void (*softmax_fn)(const og_kernel_ctx *k, const void *x, void *y, int64_t O, int64_t R,
                           int64_t I, bool lg);
static const softmax_fn softmax_loops[2] = {softmax_f32, softmax_f64};
OG_FLOAT_IMPLS(softmax_impls, &softmax_loops[0], &softmax_loops[1]);

/* Softmax's and LogSoftmax's binding for dtype t: float32, float64, and the 16-bit floats
 * through float32's (og_float_impl); NULL if none. */
static const void *select_softmax(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(softmax_impls, t);
}

static og_status softmax_run(const og_kernel_ctx *k, og_kernel_fn self, const og_tensor *const *in,
                             int n_in, og_tensor *const *out, int n_out, bool lg)
{
    const og_reduce_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    /* k->impl: the binding of session creation; without one, the table's entry for x */
    const og_float_impl *im = og_float_bound(k, softmax_impls, x->dtype);
    if (!im) return unsupported(k, x->dtype);
    if (!im->loops) return og_kernel_via_f32_bound(k, im, self, in, n_in, out, n_out);
    const softmax_fn *fn = im->loops;
    int axis;
    int64_t O, R, I;
    og_status st = split_attr_axis(k, x, true, &axis, &O, &R, &I);
    if (st || x->numel == 0) return st;
    if (p->legacy_softmax) { /* 2-D coercion: normalize over everything from axis on */
        R *= I;
        I = 1;
    }
    (*fn)(k, x->data, y->data, O, R, I, lg);
    return OG_OK;
}

static og_status k_Softmax(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    return softmax_run(k, k_Softmax, in, n_in, out, n_out, false);
}

static og_status k_LogSoftmax(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    return softmax_run(k, k_LogSoftmax, in, n_in, out, n_out, true);
}

/* ---- Hardmax -------------------------------------------------------------------------- */

/* y = 1 at the first maximum along the axis (NaN counts as the maximum, as ArgMax), 0
 * elsewhere; x seen as [O, R, I] (before opset 13: [O, R·I] over one axis). */
#define DEF_HARDMAX(NAME, T)                                                                       \
    static void NAME(const void *xv, void *yv, int64_t O, int64_t R, int64_t I)                    \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t o = 0; o < O; o++)                                                            \
            for (int64_t i = 0; i < I; i++) {                                                      \
                const T *xr = x + o * R * I + i;                                                   \
                T *yr = y + o * R * I + i;                                                         \
                int64_t best = 0;                                                                  \
                for (int64_t r = 1; r < R && xr[best * I] == xr[best * I]; r++)                    \
                    if (xr[r * I] > xr[best * I] || xr[r * I] != xr[r * I]) best = r;              \
                for (int64_t r = 0; r < R; r++) yr[r * I] = (T)(r == best);                        \
            }                                                                                      \
    }
DEF_HARDMAX(hardmax_f32, float)
DEF_HARDMAX(hardmax_f64, double)

typedef void (*hardmax_fn)(const void *x, void *y, int64_t O, int64_t R, int64_t I);
static const hardmax_fn hardmax_loops[2] = {hardmax_f32, hardmax_f64};
OG_FLOAT_IMPLS(hardmax_impls, &hardmax_loops[0], &hardmax_loops[1]);

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl) */
static const void *select_hardmax(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(hardmax_impls, t);
}

static og_status k_Hardmax(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_reduce_params *p = k->params;
    const og_tensor *x = in[0];
    const og_float_impl *im = og_float_bound(k, hardmax_impls, x->dtype);
    if (!im) return unsupported(k, x->dtype);
    if (!im->loops) return og_kernel_via_f32_bound(k, im, k_Hardmax, in, n_in, out, n_out);
    int axis;
    int64_t O, R, I;
    og_status st = split_attr_axis(k, x, true, &axis, &O, &R, &I);
    if (st || x->numel == 0) return st;
    if (p->legacy_softmax) {
        R *= I;
        I = 1;
    }
    (*(const hardmax_fn *)im->loops)(x->data, out[0]->data, O, R, I);
    return OG_OK;
}

/* ---- CumSum -------------------------------------------------------------------------- */

/* Columns per CumSum task: each output row adds the previous output row (contiguous). */
#define CUM_CH 1024

#define DEF_CUMSUM(NAME, T, ADD)                                                                   \
    static void NAME##_block(const T *x, T *y, int64_t R, int64_t I, int64_t o, int64_t c,         \
                             bool excl, bool rev)                                                  \
    {                                                                                              \
        int64_t i0 = c * CUM_CH, n = I - i0 < CUM_CH ? I - i0 : CUM_CH;                            \
        int64_t base = o * R * I + i0;                                                             \
        for (int64_t s = 0; s < R; s++) {                                                          \
            int64_t r = rev ? R - 1 - s : s, pr = rev ? r + 1 : r - 1;                             \
            T *restrict yr = y + base + r * I;                                                     \
            const T *restrict xr = x + base + r * I;                                               \
            if (s == 0) {                                                                          \
                for (int64_t i = 0; i < n; i++) yr[i] = excl ? 0 : xr[i];                          \
                continue;                                                                          \
            }                                                                                      \
            const T *restrict yp = y + base + pr * I;                                              \
            const T *restrict src = excl ? x + base + pr * I : xr;                                 \
            for (int64_t i = 0; i < n; i++) yr[i] = (T)ADD(yp[i], src[i]);                         \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const og_kernel_ctx *k, const void *xv, void *yv, int64_t O, int64_t R,       \
                     int64_t I, bool excl, bool rev)                                               \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        int64_t nc = (I + CUM_CH - 1) / CUM_CH;                                                    \
        OG_PARALLEL_FOR(k, O *nc, R *(I < CUM_CH ? I : CUM_CH), t,                                 \
                        { NAME##_block(x, y, R, I, t / nc, t % nc, excl, rev); });                 \
    }
DEF_CUMSUM(cumsum_f32, float, COMB_ADD)
DEF_CUMSUM(cumsum_f64, double, COMB_ADD)
DEF_CUMSUM(cumsum_i32, int32_t, COMB_ADD_W)
DEF_CUMSUM(cumsum_i64, int64_t, COMB_ADD_W)
DEF_CUMSUM(cumsum_u32, uint32_t, COMB_ADD)
DEF_CUMSUM(cumsum_u64, uint64_t, COMB_ADD)

typedef void (*cum_fn)(const og_kernel_ctx *k, const void *x, void *y, int64_t O, int64_t R,
                       int64_t I, bool excl, bool rev);
/* by dtype_slot(): the types of CumSum's schema */
static const cum_fn cum_table[N_SLOTS] = {cumsum_f32, cumsum_f64,       cumsum_i32,
                                          cumsum_i64, [9] = cumsum_u32, [10] = cumsum_u64};

static const void *select_cumsum(const og_node *n, og_dtype t)
{
    (void)n;
    int s = dtype_slot(t);
    return half_or(s >= 0 && cum_table[s] ? &cum_table[s] : NULL, t);
}

static og_status k_CumSum(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_reduce_params *p = k->params;
    const og_tensor *x = in[0], *a = in[1];
    if (runs_via_f32(k, x)) return og_kernel_via_f32_unbound(k, k_CumSum, in, n_in, out, n_out);
    const cum_fn *fn = k->impl ? k->impl : select_cumsum(k->node, x->dtype);
    if (!fn) return unsupported(k, x->dtype);
    if (a->numel != 1 || (a->dtype != OG_INT32 && a->dtype != OG_INT64))
        return og_kernel_error(k, OG_ERR_SHAPE, "input 1 (axis) must be one int32/int64 value");
    int64_t axis = og_tensor_get_i64(a, 0);
    int rank = x->rank;
    if (axis < -(int64_t)rank || axis >= (rank ? rank : 1))
        return og_kernel_error(k, OG_ERR_RUNTIME,
                               "input 1 (axis) has value %lld, out of range "
                               "for rank %d",
                               (long long)axis, rank);
    if (axis < 0) axis += rank;
    if (x->numel == 0) return OG_OK;
    int64_t O, R, I;
    split_axis(rank, x->dims, (int)axis, &O, &R, &I);
    (*fn)(k, x->data, out[0]->data, O, R, I, p->exclusive, p->reverse);
    return OG_OK;
}

/* ---- TopK ---------------------------------------------------------------------------- */

/* Per line a heap of the K best entries seen, its root the worst of them: O(R log K).
 * Ties go to the lower index, which is then "better". */
#define DEF_TOPK(NAME, T)                                                                          \
    typedef struct NAME##_ent {                                                                    \
        T v;                                                                                       \
        int64_t i;                                                                                 \
    } NAME##_ent;                                                                                  \
    static inline bool NAME##_better(const NAME##_ent *a, const NAME##_ent *b, bool lg)            \
    {                                                                                              \
        bool an = a->v != a->v, bn = b->v != b->v; /* NaN ranks above all, as in onnxruntime */    \
        if (an || bn) return an && bn ? a->i < b->i : lg ? an : bn;                                \
        if (a->v != b->v) return lg ? a->v > b->v : a->v < b->v;                                   \
        return a->i < b->i;                                                                        \
    }                                                                                              \
    static void NAME##_down(NAME##_ent *h, int64_t n, bool lg)                                     \
    {                                                                                              \
        int64_t j = 0;                                                                             \
        for (;;) {                                                                                 \
            int64_t w = j, c1 = 2 * j + 1, c2 = 2 * j + 2;                                         \
            if (c1 < n && NAME##_better(&h[w], &h[c1], lg)) w = c1;                                \
            if (c2 < n && NAME##_better(&h[w], &h[c2], lg)) w = c2;                                \
            if (w == j) return;                                                                    \
            NAME##_ent tmp = h[j];                                                                 \
            h[j] = h[w];                                                                           \
            h[w] = tmp;                                                                            \
            j = w;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_line(const T *x, T *vy, int64_t *iy, int64_t R, int64_t I, int64_t K,       \
                            NAME##_ent *h, bool lg)                                                \
    {                                                                                              \
        int64_t n = 0;                                                                             \
        for (int64_t r = 0; r < R; r++) {                                                          \
            NAME##_ent e = {x[r * I], r};                                                          \
            if (n < K) {                                                                           \
                int64_t j = n++;                                                                   \
                h[j] = e;                                                                          \
                while (j > 0 && NAME##_better(&h[(j - 1) / 2], &h[j], lg)) {                       \
                    NAME##_ent tmp = h[j];                                                         \
                    h[j] = h[(j - 1) / 2];                                                         \
                    h[(j - 1) / 2] = tmp;                                                          \
                    j = (j - 1) / 2;                                                               \
                }                                                                                  \
            } else if (K > 0 && NAME##_better(&e, &h[0], lg)) {                                    \
                h[0] = e;                                                                          \
                NAME##_down(h, n, lg);                                                             \
            }                                                                                      \
        }                                                                                          \
        for (int64_t t = n - 1; t >= 0; t--) { /* pop the worst into the last free slot */         \
            vy[t * I] = h[0].v;                                                                    \
            iy[t * I] = h[0].i;                                                                    \
            h[0] = h[t];                                                                           \
            NAME##_down(h, t, lg);                                                                 \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_task(const T *x, T *vy, int64_t *iy, int64_t R, int64_t I, int64_t K,       \
                            int64_t lines, int64_t nt, int64_t t, NAME##_ent *h, bool lg)          \
    {                                                                                              \
        for (int64_t l = lines * t / nt; l < lines * (t + 1) / nt; l++) {                          \
            int64_t o = l / I, i = l % I;                                                          \
            NAME##_line(x + o * R * I + i, vy + o * K * I + i, iy + o * K * I + i, R, I, K,        \
                        h + t * K, lg);                                                            \
        }                                                                                          \
    }                                                                                              \
    static og_status NAME(const og_kernel_ctx *k, const void *xv, void *vv, int64_t *iy,           \
                          int64_t O, int64_t R, int64_t I, int64_t K, bool lg)                     \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *vy = vv;                                                                                \
        int64_t lines = O * I, nt = lines < nthreads(k) ? lines : nthreads(k);                     \
        NAME##_ent *h = og_malloc(k->alloc, (size_t)(nt * K) * sizeof *h);                         \
        if (!h) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");                          \
        OG_PARALLEL_FOR(k, nt, lines / nt * R * 4, t,                                              \
                        { NAME##_task(x, vy, iy, R, I, K, lines, nt, t, h, lg); });                \
        og_free(k->alloc, h);                                                                      \
        return OG_OK;                                                                              \
    }
DEF_TOPK(topk_f32, float)
DEF_TOPK(topk_f64, double)
DEF_TOPK(topk_i32, int32_t)
DEF_TOPK(topk_i64, int64_t)
DEF_TOPK(topk_i8, int8_t)
DEF_TOPK(topk_u8, uint8_t)
DEF_TOPK(topk_i16, int16_t)
DEF_TOPK(topk_u16, uint16_t)
DEF_TOPK(topk_u32, uint32_t)
DEF_TOPK(topk_u64, uint64_t)

typedef og_status (*topk_fn)(const og_kernel_ctx *k, const void *x, void *v, int64_t *iy, int64_t O,
                             int64_t R, int64_t I, int64_t K, bool lg);
/* by dtype_slot(): every numeric type (TopK-11's schema) */
static const topk_fn topk_table[N_SLOTS] = {topk_f32, topk_f64, topk_i32, topk_i64,
                                            NULL,     topk_i8,  topk_u8,  topk_i16,
                                            topk_u16, topk_u32, topk_u64};

static const void *select_topk(const og_node *n, og_dtype t)
{
    (void)n;
    int s = dtype_slot(t);
    return half_or(s >= 0 && topk_table[s] ? &topk_table[s] : NULL, t);
}

static og_status k_TopK(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                        og_tensor *const *out, int n_out)
{
    const og_reduce_params *p = k->params;
    const og_tensor *x = in[0];
    if (runs_via_f32(k, x)) return og_kernel_via_f32_unbound(k, k_TopK, in, n_in, out, n_out);
    const topk_fn *fn = k->impl ? k->impl : select_topk(k->node, x->dtype);
    if (!fn) return unsupported(k, x->dtype);
    int64_t K = p->k;
    if (p->k_input) {
        if (n_in < 2 || !in[1] || in[1]->numel != 1)
            return og_kernel_error(k, OG_ERR_SHAPE, "input 1 (K) must hold a single value");
        K = og_tensor_get_i64(in[1], 0);
    }
    int axis = 0; /* set by split_attr_axis; 0 only quiets GCC's maybe-uninitialized */
    int64_t O, R, I;
    og_status st = split_attr_axis(k, x, false, &axis, &O, &R, &I);
    if (st) return st;
    if (K < 0 || K > R)
        return og_kernel_error(k, OG_ERR_RUNTIME, "K is %lld, out of range for dim %lld of axis %d",
                               (long long)K, (long long)R, axis);
    if (K == 0 || O * I == 0) return OG_OK;
    /* the indices output may be omitted: compute them into scratch then */
    int64_t *iy = n_out > 1 && out[1] ? out[1]->data : NULL, *tmp = NULL;
    if (!iy) {
        tmp = og_malloc(k->alloc, (size_t)(O * K * I) * sizeof *tmp);
        if (!tmp) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        iy = tmp;
    }
    st = (*fn)(k, x->data, out[0]->data, iy, O, R, I, K, p->largest);
    og_free(k->alloc, tmp);
    return st;
}

/* Every entry binds its typed loops (select); the Reduce* lists are those of red_impl above
 * (IMPL_FLOAT, IMPL_NUMERIC, IMPL_ALL: max and min also bool), Softmax and LogSoftmax
 * float32 and float64, CumSum float32, float64, int32, int64, uint32, uint64, TopK every
 * numeric type, the others float32, float64, int32, int64.  CumSum's axis (input 1,
 * int32 or int64) and TopK's K are checked by the kernels. */
const og_kernel_def og_cpu_reduce[] = {
    {.name = "ReduceSum", .domain = "", .fn = k_ReduceSum, .select = select_ReduceSum},
    {.name = "ReduceMean", .domain = "", .fn = k_ReduceMean, .select = select_ReduceMean},
    {.name = "ReduceMax", .domain = "", .fn = k_ReduceMax, .select = select_ReduceMax},
    {.name = "ReduceMin", .domain = "", .fn = k_ReduceMin, .select = select_ReduceMin},
    {.name = "ReduceProd", .domain = "", .fn = k_ReduceProd, .select = select_ReduceProd},
    {.name = "ReduceL1", .domain = "", .fn = k_ReduceL1, .select = select_ReduceL1},
    {.name = "ReduceL2", .domain = "", .fn = k_ReduceL2, .select = select_ReduceL2},
    {.name = "ReduceLogSum", .domain = "", .fn = k_ReduceLogSum, .select = select_ReduceLogSum},
    {.name = "ReduceLogSumExp",
     .domain = "",
     .fn = k_ReduceLogSumExp,
     .select = select_ReduceLogSumExp},
    {.name = "ReduceSumSquare",
     .domain = "",
     .fn = k_ReduceSumSquare,
     .select = select_ReduceSumSquare},
    {.name = "ArgMax", .domain = "", .fn = k_ArgMax, .select = select_argmax},
    {.name = "ArgMin", .domain = "", .fn = k_ArgMin, .select = select_argmin},
    {.name = "Softmax", .domain = "", .fn = k_Softmax, .select = select_softmax},
    {.name = "LogSoftmax", .domain = "", .fn = k_LogSoftmax, .select = select_softmax},
    {.name = "Hardmax", .domain = "", .fn = k_Hardmax, .select = select_hardmax},
    {.name = "CumSum", .domain = "", .fn = k_CumSum, .select = select_cumsum},
    {.name = "TopK", .domain = "", .fn = k_TopK, .select = select_topk},
    {.name = NULL}};
