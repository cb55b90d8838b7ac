/* resize.c: CPU kernels of Resize and Upsample, GridSample and AffineGrid.
 *
 * Per call, each axis gets its taps once: for every output coordinate, the source indices
 * (clamped to the input, which is the spec's edge padding) and weights, following the
 * coordinate transforms and coefficient formulas of the ONNX reference implementation.
 * Nearest then gathers in one n-D pass (any element size); linear and cubic run one
 * separable pass per resized axis, or one fused pass for the common 2-D bilinear case
 * (only the last two axes of e.g. NCHW resized).
 *
 * Integers and bool in modes linear and cubic compute as the ONNX reference evaluator does:
 * in float64 (the input widened exactly), the last axis first and each output a sum of the
 * taps in order, then cast back to the element type as numpy's astype does (truncation
 * toward zero; bool: v != 0).  onnxruntime, which runs linear on int8, uint8 and int32,
 * interpolates in float32 before it truncates (a result near a whole number can land on the
 * other side of it) and computes antialiased ones another way; onnxgrad follows the
 * reference. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/resize_params.h"

typedef struct {
    int n;            /* taps per output coordinate */
    int64_t *idx;     /* [out * n] source indices, clamped to [0, in) */
    double *w;        /* [out * n] weights */
    float *w_float;   /* the same in float32, for float32 data */
    uint8_t *outside; /* [out] 1: tf_crop_and_resize puts the extrapolation value there */
    bool identity;    /* output coordinate x reads exactly input x */
    bool any_outside;
} axis_taps;

/* The reference's antialiased cubic kernel, in its expanded form (x = |x|, its square and
 * cube; the same function as og_resize_cubic, the last bits of some values differ) */
static double cubic_antialias(double x, double a)
{
    x = fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1.0) return (a + 2) * x3 - (a + 3) * x2 + 1;
    if (x < 2.0) return a * x3 - 5 * a * x2 + 8 * a * x - 4 * a;
    return 0.0;
}

/* Fill t for one axis (arrays already allocated for out * t->n).  The weights are those of
 * the reference implementation to the last bit (the integer types truncate its float64
 * sums): without antialias, linear's 1 - ratio and ratio, cubic's four taps at 1 + ratio,
 * ratio, 1 - ratio and (1 - ratio) + 1; with antialias, the kernel at (j - ratio)·scale
 * normalized by its sum; exclude_outside then zeroes the taps outside and normalizes again. */
static void build_taps(const og_resize_params *p, const og_resize_shape *sh, int a, int64_t in,
                       int start, axis_taps *t)
{
    int64_t out = sh->out_dims[a];
    double scale = sh->scale[a];
    int n = t->n;
    /* antialias widens the kernel by 1/scale when downsampling */
    double s = p->antialias && scale < 1.0 ? scale : 1.0;
    t->identity = in == out;
    t->any_outside = false;
    for (int64_t x = 0; x < out; x++) {
        double xo = og_resize_source_coord(p, sh, a, x, in);
        int64_t *idx = t->idx + x * n;
        double *w = t->w + x * n;
        t->outside[x] = 0;
        if (p->coord == OG_COORD_TF_CROP_AND_RESIZE && !(xo >= 0.0 && xo <= (double)(in - 1))) {
            t->outside[x] = 1;
            t->any_outside = true;
            t->identity = false;
            for (int j = 0; j < n; j++) idx[j] = 0, w[j] = 0.0;
            continue;
        }
        if (!(xo > -1e15 && xo < 1e15)) xo = xo > 0 ? 1e15 : -1e15; /* NaN and huge: edges */
        if (xo != (double)x) t->identity = false;
        if (p->mode == OG_RESIZE_NEAREST) {
            idx[0] = og_resize_clamp(og_resize_nearest_index(p, xo, scale), in);
            w[0] = 1.0;
            continue;
        }
        /* the reference prefers the left neighbour: an integral xo has ratio 1 */
        double i0 = floor(xo), ratio = xo - i0;
        if (ratio == 0.0) i0 -= 1.0, ratio = 1.0;
        double sum = 0.0;
        for (int j = 0; j < n; j++) {
            int64_t pos = (int64_t)i0 + start + j;
            double rel = ((double)(start + j) - ratio) * s, wj;
            if (p->mode == OG_RESIZE_LINEAR)
                wj = !p->antialias ? (j == 0 ? 1.0 - ratio : ratio) : fmax(0.0, 1.0 - fabs(rel));
            else if (p->antialias)
                wj = cubic_antialias(rel, p->cubic_a);
            else /* start is -1: taps at 1 + ratio, ratio, 1 - ratio, (1 - ratio) + 1 */
                wj = og_resize_cubic(j == 3 ? (1.0 - ratio) + 1.0 : rel, p->cubic_a);
            idx[j] = og_resize_clamp(pos, in);
            w[j] = wj;
            sum += wj;
        }
        if (p->antialias && sum != 0.0)
            for (int j = 0; j < n; j++) w[j] /= sum;
        if (p->exclude_outside) {
            sum = 0.0;
            for (int j = 0; j < n; j++) {
                int64_t pos = (int64_t)i0 + start + j;
                if (pos < 0 || pos >= in) w[j] = 0.0;
                sum += w[j];
            }
            if (sum != 0.0)
                for (int j = 0; j < n; j++) w[j] /= sum;
        }
    }
    for (int64_t i = 0; i < out * n; i++) t->w_float[i] = (float)t->w[i];
}

/* ---- nearest: one n-D gather --------------------------------------------------------- */

/* off[d][y]: element offset of output coordinate y of axis d in the input, -1 outside. */
#define OG_NEAREST_T(T)                                                                            \
    static inline void nearest_row_##T(const T *restrict x, T *restrict y, int rank,               \
                                       const int64_t *odims, int64_t *const *off, T ev,            \
                                       bool any_outside, int64_t row)                              \
    {                                                                                              \
        int64_t last = odims[rank - 1], base = 0, rem = row;                                       \
        const int64_t *ol = off[rank - 1];                                                         \
        bool out = false;                                                                          \
        for (int d = rank - 2; d >= 0; d--) {                                                      \
            int64_t c = rem % odims[d];                                                            \
            rem /= odims[d];                                                                       \
            if (off[d][c] < 0)                                                                     \
                out = true;                                                                        \
            else                                                                                   \
                base += off[d][c];                                                                 \
        }                                                                                          \
        T *yr = y + row * last;                                                                    \
        const T *xb = x + base;                                                                    \
        if (out)                                                                                   \
            for (int64_t j = 0; j < last; j++) yr[j] = ev;                                         \
        else if (!any_outside)                                                                     \
            for (int64_t j = 0; j < last; j++) yr[j] = xb[ol[j]];                                  \
        else                                                                                       \
            for (int64_t j = 0; j < last; j++) yr[j] = ol[j] >= 0 ? xb[ol[j]] : ev;                \
    }                                                                                              \
    typedef struct nearest_job_##T {                                                               \
        const T *x;                                                                                \
        T *y;                                                                                      \
        int rank;                                                                                  \
        const int64_t *odims;                                                                      \
        int64_t *const *off;                                                                       \
        T ev;                                                                                      \
        bool any_outside;                                                                          \
    } nearest_job_##T;                                                                             \
    static void nearest_range_##T(void *ctx, int64_t r0, int64_t r1, int slot)                     \
    {                                                                                              \
        const nearest_job_##T *j = ctx;                                                            \
        (void)slot;                                                                                \
        for (int64_t row = r0; row < r1; row++)                                                    \
            nearest_row_##T(j->x, j->y, j->rank, j->odims, j->off, j->ev, j->any_outside, row);    \
    }                                                                                              \
    static void nearest_##T(const og_kernel_ctx *k, const T *x, T *y, int rank,                    \
                            const int64_t *odims, int64_t *const *off, T ev, bool any_outside)     \
    {                                                                                              \
        int64_t rows = 1;                                                                          \
        for (int d = 0; d < rank - 1; d++) rows *= odims[d];                                       \
        nearest_job_##T j = {x, y, rank, odims, off, ev, any_outside};                             \
        og_par_for(k, rows, (double)odims[rank - 1], OG_PAR_MIN_COMPUTE, nearest_range_##T, &j);   \
    }
OG_NEAREST_T(uint8_t)
OG_NEAREST_T(uint16_t)
OG_NEAREST_T(uint32_t)
OG_NEAREST_T(uint64_t)

/* ---- float64 to the integers and bool, as numpy's astype -------------------------------- */

/* In range, truncation toward zero.  Out of range (a cubic overshoot, an extrapolation value
 * the type cannot hold) C leaves the conversion undefined and numpy gives what x86-64's
 * truncating conversions give, which these reproduce without undefined behaviour: through
 * int32 for the 8-, 16- and 32-bit types (the low bits; int32's "indefinite" INT32_MIN
 * beyond its range or for NaN), through int64 for the 64-bit ones, and the unsigned types
 * at or above 2^(bits-1) through the same conversion of v - 2^(bits-1). */
static inline uint32_t np_cvt32(double v)
{
    double t = trunc(v);
    return t >= -2147483648.0 && t <= 2147483647.0 ? (uint32_t)(int32_t)t : 0x80000000u;
}
static inline uint64_t np_cvt64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (uint64_t)(int64_t)v
                                                                    : (uint64_t)1 << 63;
}
static inline uint32_t np_cvt_u32(double v)
{
    return v >= 2147483648.0 ? np_cvt32(v - 2147483648.0) ^ 0x80000000u : np_cvt32(v);
}
static inline uint64_t np_cvt_u64(double v)
{
    return v >= 9223372036854775808.0 ? np_cvt64(v - 9223372036854775808.0) ^ ((uint64_t)1 << 63)
                                      : np_cvt64(v);
}

/* load_<name>: n elements into float64; store_<name>: n float64 values cast back (signed
 * types are stored through the unsigned type of their width: the same bits) */
#define RESIZE_INT_IO(NAME, T, U, CVT)                                                             \
    static void load_##NAME(const void *x, double *d, int64_t n)                                   \
    {                                                                                              \
        const T *p = x;                                                                            \
        for (int64_t i = 0; i < n; i++) d[i] = (double)p[i];                                       \
    }                                                                                              \
    static void store_##NAME(const double *d, void *y, int64_t n)                                  \
    {                                                                                              \
        U *p = y;                                                                                  \
        for (int64_t i = 0; i < n; i++) p[i] = (U)CVT(d[i]);                                       \
    }
RESIZE_INT_IO(i8, int8_t, uint8_t, np_cvt32)
RESIZE_INT_IO(i16, int16_t, uint16_t, np_cvt32)
RESIZE_INT_IO(i32, int32_t, uint32_t, np_cvt32)
RESIZE_INT_IO(i64, int64_t, uint64_t, np_cvt64)
RESIZE_INT_IO(u8, uint8_t, uint8_t, np_cvt32)
RESIZE_INT_IO(u16, uint16_t, uint16_t, np_cvt32)
RESIZE_INT_IO(u32, uint32_t, uint32_t, np_cvt_u32)
RESIZE_INT_IO(u64, uint64_t, uint64_t, np_cvt_u64)
#define NP_BOOL(v) ((v) != 0) /* NaN is true, as numpy's */
RESIZE_INT_IO(b8, uint8_t, uint8_t, NP_BOOL)
#undef NP_BOOL
#undef RESIZE_INT_IO

typedef struct resize_int_io {
    og_dtype dtype;
    void (*load)(const void *x, double *d, int64_t n);
    void (*store)(const double *d, void *y, int64_t n);
} resize_int_io;
static const resize_int_io resize_int_ios[9] = {
    {OG_INT8, load_i8, store_i8},     {OG_INT16, load_i16, store_i16},
    {OG_INT32, load_i32, store_i32},  {OG_INT64, load_i64, store_i64},
    {OG_UINT8, load_u8, store_u8},    {OG_UINT16, load_u16, store_u16},
    {OG_UINT32, load_u32, store_u32}, {OG_UINT64, load_u64, store_u64},
    {OG_BOOL, load_b8, store_b8}};

static const resize_int_io *resize_int_io_of(og_dtype t)
{
    for (int i = 0; i < 9; i++)
        if (resize_int_ios[i].dtype == t) return &resize_int_ios[i];
    return NULL;
}

/* The extrapolation value in the element type of t (bytes in ev): rounded to a float type,
 * cast to an integer type as the reference's astype (0 for the other types). */
static void extrapolation_bytes(og_dtype t, double v, uint64_t *ev)
{
    const resize_int_io *io = resize_int_io_of(t);
    *ev = 0;
    if (io) {
        io->store(&v, ev, 1);
        return;
    }
    switch (t) {
    case OG_FLOAT: {
        float f = (float)v;
        memcpy(ev, &f, sizeof f);
        break;
    }
    case OG_DOUBLE: memcpy(ev, &v, sizeof v); break;
    default: break; /* other types: 0 */
    }
}

static void run_nearest(const og_kernel_ctx *k, const og_tensor *X, og_tensor *Y,
                        const axis_taps *taps, int64_t **off)
{
    int r = X->rank;
    int64_t st[OG_MAX_RANK];
    bool any = false;
    og_strides(r, X->dims, st);
    for (int d = 0; d < r; d++) {
        any = any || taps[d].any_outside;
        for (int64_t y = 0; y < Y->dims[d]; y++)
            off[d][y] = taps[d].outside[y] ? -1 : taps[d].idx[y] * st[d];
    }
    uint64_t ev;
    extrapolation_bytes(X->dtype, ((const og_resize_params *)k->params)->extrapolation, &ev);
    uint8_t e1;
    uint16_t e2;
    uint32_t e4;
    memcpy(&e1, &ev, 1);
    memcpy(&e2, &ev, 2);
    memcpy(&e4, &ev, 4);
    switch (og_dtype_size(X->dtype)) {
    case 1: nearest_uint8_t(k, X->data, Y->data, r, Y->dims, off, e1, any); break;
    case 2: nearest_uint16_t(k, X->data, Y->data, r, Y->dims, off, e2, any); break;
    case 4: nearest_uint32_t(k, X->data, Y->data, r, Y->dims, off, e4, any); break;
    default: nearest_uint64_t(k, X->data, Y->data, r, Y->dims, off, ev, any); break;
    }
}

/* ---- linear / cubic: separable passes -------------------------------------------------- */

/* Resize one axis: src [outer, in_n, inner] -> dst [outer, out_n, inner]. */
#define OG_PASS_T(T, W)                                                                            \
    /* one outer row when the axis is the last one (inner == 1) */                                 \
    static inline void pass_row_##T(const T *restrict s, T *restrict d, int64_t out_n,             \
                                    const axis_taps *t, T ev)                                      \
    {                                                                                              \
        const int n = t->n;                                                                        \
        const int64_t *ix = t->idx;                                                                \
        const T *w = t->W;                                                                         \
        /* constant tap counts let the compiler unroll the common cases */                         \
        if (n == 4)                                                                                \
            for (int64_t x = 0; x < out_n; x++)                                                    \
                d[x] = w[4 * x] * s[ix[4 * x]] + w[4 * x + 1] * s[ix[4 * x + 1]] +                 \
                       w[4 * x + 2] * s[ix[4 * x + 2]] + w[4 * x + 3] * s[ix[4 * x + 3]];          \
        else if (n == 2)                                                                           \
            for (int64_t x = 0; x < out_n; x++)                                                    \
                d[x] = w[2 * x] * s[ix[2 * x]] + w[2 * x + 1] * s[ix[2 * x + 1]];                  \
        else                                                                                       \
            for (int64_t x = 0; x < out_n; x++) {                                                  \
                T acc = 0;                                                                         \
                for (int j = 0; j < n; j++) acc += w[x * n + j] * s[ix[x * n + j]];                \
                d[x] = acc;                                                                        \
            }                                                                                      \
        if (t->any_outside)                                                                        \
            for (int64_t x = 0; x < out_n; x++)                                                    \
                if (t->outside[x]) d[x] = ev;                                                      \
    }                                                                                              \
    /* one output line of `inner` contiguous elements: a weighted sum of input lines */            \
    static inline void pass_line_##T(const T *restrict src, T *restrict d, int64_t o, int64_t x,   \
                                     int64_t in_n, int64_t inner, const axis_taps *t, T ev)        \
    {                                                                                              \
        const int n = t->n;                                                                        \
        if (t->outside[x]) {                                                                       \
            for (int64_t i = 0; i < inner; i++) d[i] = ev;                                         \
            return;                                                                                \
        }                                                                                          \
        const int64_t *ix = t->idx + x * n;                                                        \
        const T *w = t->W + x * n;                                                                 \
        const T *s0 = src + (o * in_n + ix[0]) * inner;                                            \
        T w0 = (T)w[0];                                                                            \
        for (int64_t i = 0; i < inner; i++) d[i] = w0 * s0[i];                                     \
        for (int j = 1; j < n; j++) {                                                              \
            const T *sj = src + (o * in_n + ix[j]) * inner;                                        \
            T wj = (T)w[j];                                                                        \
            if (wj != 0)                                                                           \
                for (int64_t i = 0; i < inner; i++) d[i] += wj * sj[i];                            \
        }                                                                                          \
    }                                                                                              \
    /* pass's items (og_par_for): row o (inner 1), or line ox = (o, x) */                          \
    typedef struct pass_job_##T {                                                                  \
        const T *src;                                                                              \
        T *dst;                                                                                    \
        int64_t in_n, out_n, inner;                                                                \
        const axis_taps *t;                                                                        \
        T ev;                                                                                      \
    } pass_job_##T;                                                                                \
    static void pass_range_##T(void *ctx, int64_t i0, int64_t i1, int slot)                        \
    {                                                                                              \
        const pass_job_##T *j = ctx;                                                               \
        const int64_t in_n = j->in_n, out_n = j->out_n, inner = j->inner;                          \
        (void)slot;                                                                                \
        for (int64_t i = i0; i < i1; i++)                                                          \
            if (inner == 1)                                                                        \
                pass_row_##T(j->src + i * in_n, j->dst + i * out_n, out_n, j->t, j->ev);           \
            else                                                                                   \
                pass_line_##T(j->src, j->dst + i * inner, i / out_n, i % out_n, in_n, inner, j->t, \
                              j->ev);                                                              \
    }                                                                                              \
    static void pass_##T(const og_kernel_ctx *k, const T *src, T *dst, int64_t outer,              \
                         int64_t in_n, int64_t out_n, int64_t inner, const axis_taps *t, T ev)     \
    {                                                                                              \
        pass_job_##T j = {src, dst, in_n, out_n, inner, t, ev};                                    \
        if (inner == 1)                                                                            \
            og_par_for(k, outer, (double)(out_n * t->n), OG_PAR_MIN_COMPUTE, pass_range_##T, &j);  \
        else                                                                                       \
            og_par_for(k, outer *out_n, (double)(inner * t->n), OG_PAR_MIN_COMPUTE,                \
                       pass_range_##T, &j);                                                        \
    }

/* Bilinear over the last two axes: planes of [ih, iw] -> [oh, ow].  Work is split into
 * units (a plane, or a block of its output rows when planes are few); each chunk of units
 * keeps the two input rows it last interpolated horizontally, so that each input row is
 * interpolated about once and every output row is one vectorizable blend of two. */
typedef struct {
    int64_t planes, ih, iw, oh, ow;
    int64_t row_blocks; /* units per plane */
    int64_t units, chunks;
    const axis_taps *ty, *tx;
} bilinear_geom;

#define OG_BILINEAR_T(T, W)                                                                        \
    static inline void hrow_##T(const T *restrict row, T *restrict h, const axis_taps *tx,         \
                                int64_t ow)                                                        \
    {                                                                                              \
        const int64_t *ix = tx->idx;                                                               \
        const T *wx = tx->W;                                                                       \
        for (int64_t j = 0; j < ow; j++)                                                           \
            h[j] = wx[2 * j] * row[ix[2 * j]] + wx[2 * j + 1] * row[ix[2 * j + 1]];                \
    }                                                                                              \
    static void bilinear_units_##T(const T *x, T *y, const bilinear_geom *g, int64_t u0,           \
                                   int64_t u1, T *h, T ev)                                         \
    {                                                                                              \
        const axis_taps *ty = g->ty, *tx = g->tx;                                                  \
        int64_t ow = g->ow, key[2] = {-1, -1}, plane = -1;                                         \
        T *buf[2] = {h, h + ow};                                                                   \
        for (int64_t u = u0; u < u1; u++) {                                                        \
            int64_t pl = u / g->row_blocks, rb = u % g->row_blocks;                                \
            if (pl != plane) key[0] = key[1] = -1, plane = pl;                                     \
            const T *xp = x + pl * g->ih * g->iw;                                                  \
            int64_t y0 = rb * g->oh / g->row_blocks, y1 = (rb + 1) * g->oh / g->row_blocks;        \
            for (int64_t yy = y0; yy < y1; yy++) {                                                 \
                T *restrict yr = y + (pl * g->oh + yy) * ow;                                       \
                if (ty->outside[yy]) {                                                             \
                    for (int64_t j = 0; j < ow; j++) yr[j] = ev;                                   \
                    continue;                                                                      \
                }                                                                                  \
                int64_t a = ty->idx[2 * yy], b = ty->idx[2 * yy + 1];                              \
                int sa = key[0] == a ? 0 : key[1] == a ? 1 : -1;                                   \
                if (sa < 0) {                                                                      \
                    sa = key[0] == b ? 1 : 0; /* keep b if it is there */                          \
                    hrow_##T(xp + a * g->iw, buf[sa], tx, ow);                                     \
                    key[sa] = a;                                                                   \
                }                                                                                  \
                int sb = key[0] == b ? 0 : key[1] == b ? 1 : -1;                                   \
                if (sb < 0) {                                                                      \
                    sb = 1 - sa;                                                                   \
                    hrow_##T(xp + b * g->iw, buf[sb], tx, ow);                                     \
                    key[sb] = b;                                                                   \
                }                                                                                  \
                const T *restrict ha = buf[sa], *restrict hb = buf[sb];                            \
                T w0 = ty->W[2 * yy], w1 = ty->W[2 * yy + 1];                                      \
                for (int64_t j = 0; j < ow; j++) yr[j] = w0 * ha[j] + w1 * hb[j];                  \
                if (tx->any_outside)                                                               \
                    for (int64_t j = 0; j < ow; j++)                                               \
                        if (tx->outside[j]) yr[j] = ev;                                            \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    typedef struct bilinear_job_##T {                                                              \
        const T *x;                                                                                \
        T *y;                                                                                      \
        const bilinear_geom *g;                                                                    \
        T *scratch, ev;                                                                            \
    } bilinear_job_##T;                                                                            \
    /* chunk c of g->chunks: units [c * units / chunks, (c + 1) * units / chunks), with            \
     * scratch row pair c */                                                                       \
    static void bilinear_range_##T(void *ctx, int64_t c0, int64_t c1, int slot)                    \
    {                                                                                              \
        const bilinear_job_##T *j = ctx;                                                           \
        const int64_t nc = j->g->chunks, nu = j->g->units;                                         \
        (void)slot;                                                                                \
        for (int64_t c = c0; c < c1; c++)                                                          \
            bilinear_units_##T(j->x, j->y, j->g, c *nu / nc, (c + 1) * nu / nc,                    \
                               j->scratch + c * 2 * j->g->ow, j->ev);                              \
    }                                                                                              \
    static void bilinear_##T(const og_kernel_ctx *k, const T *x, T *y, const bilinear_geom *g,     \
                             T *scratch, T ev)                                                     \
    {                                                                                              \
        bilinear_job_##T j = {x, y, g, scratch, ev};                                               \
        og_par_for(k, g->chunks, (double)g->planes * g->oh * g->ow * 4.0 / (double)g->chunks,      \
                   OG_PAR_MIN_COMPUTE, bilinear_range_##T, &j);                                    \
    }

OG_PASS_T(float, w_float)
OG_PASS_T(double, w)
OG_BILINEAR_T(float, w_float)
OG_BILINEAR_T(double, w)

/* The loops of linear and cubic resizing for one element type, bound at session creation
 * (select_resize); nearest moves elements by size and binds nothing of a type (es 0).  An
 * integer or bool binding runs the float64 loops on a float64 copy (io: its load and cast
 * back; NULL for the float types). */
typedef struct resize_loops {
    size_t es;
    void (*pass)(const og_kernel_ctx *k, const void *src, void *dst, int64_t outer, int64_t in_n,
                 int64_t out_n, int64_t inner, const axis_taps *t, double ev);
    void (*bilinear)(const og_kernel_ctx *k, const void *x, void *y, const bilinear_geom *g,
                     void *scratch, double ev);
    const resize_int_io *io;
} resize_loops;
#define RESIZE_LOOPS(T, SFX)                                                                       \
    static void pass_##SFX(const og_kernel_ctx *k, const void *src, void *dst, int64_t outer,      \
                           int64_t in_n, int64_t out_n, int64_t inner, const axis_taps *t,         \
                           double ev)                                                              \
    {                                                                                              \
        pass_##T(k, src, dst, outer, in_n, out_n, inner, t, (T)ev);                                \
    }                                                                                              \
    static void bilinear_##SFX(const og_kernel_ctx *k, const void *x, void *y,                     \
                               const bilinear_geom *g, void *scratch, double ev)                   \
    {                                                                                              \
        bilinear_##T(k, x, y, g, scratch, (T)ev);                                                  \
    }
RESIZE_LOOPS(float, f32)
RESIZE_LOOPS(double, f64)
static const resize_loops resize_linear_loops[2] = {{4, pass_f32, bilinear_f32, NULL},
                                                    {8, pass_f64, bilinear_f64, NULL}};
static const resize_loops resize_nearest_loops = {0, NULL, NULL, NULL};
/* the integers and bool (in the order of resize_int_ios) */
#define RESIZE_INT_LOOPS(i)                                                                        \
    {                                                                                              \
        8, pass_f64, bilinear_f64, &resize_int_ios[i]                                              \
    }
static const resize_loops resize_int_loops[9] = {
    RESIZE_INT_LOOPS(0), RESIZE_INT_LOOPS(1), RESIZE_INT_LOOPS(2),
    RESIZE_INT_LOOPS(3), RESIZE_INT_LOOPS(4), RESIZE_INT_LOOPS(5),
    RESIZE_INT_LOOPS(6), RESIZE_INT_LOOPS(7), RESIZE_INT_LOOPS(8)};
#undef RESIZE_INT_LOOPS

/* The binding of linear and cubic modes for float16 and bfloat16: the float32 loops run on
 * widened copies, the output rounded once (og_kernel_via_f32).  A marker. */
static const resize_loops resize_via_f32 = {0, NULL, NULL, NULL};

/* Mode nearest: any dtype (bytes moved by size); linear and cubic: float32 and float64, the
 * 16-bit floats through float32, the integers and bool through float64. */
static const void *select_resize(const og_node *n, og_dtype t)
{
    const og_resize_params *p = n->params;
    if (p->mode == OG_RESIZE_NEAREST) return &resize_nearest_loops;
    const resize_int_io *io = resize_int_io_of(t);
    if (io) return &resize_int_loops[io - resize_int_ios];
    return t == OG_FLOAT    ? &resize_linear_loops[0]
           : t == OG_DOUBLE ? &resize_linear_loops[1]
           : og_is_half(t)  ? &resize_via_f32
                            : NULL;
}

/* Estimated cost of resizing the axes in `order`: each pass costs its output size times
 * its taps, three times more on the last axis, whose taps are gathers, not vector lines. */
static double order_cost(const og_tensor *X, const og_tensor *Y, const axis_taps *taps,
                         const int *order, int na)
{
    int64_t cur[OG_MAX_RANK];
    double cost = 0.0;
    memcpy(cur, X->dims, (size_t)X->rank * sizeof *cur);
    for (int i = 0; i < na; i++) {
        int a = order[i];
        cur[a] = Y->dims[a];
        double n = 1.0;
        for (int d = 0; d < X->rank; d++) n *= (double)cur[d];
        cost += n * taps[a].n * (a == X->rank - 1 ? 3.0 : 1.0);
    }
    return cost;
}

/* The cheapest order of the passes (all permutations up to 5 axes, else as given). */
static void best_order(const og_tensor *X, const og_tensor *Y, const axis_taps *taps, int *order,
                       int na)
{
    if (na < 2 || na > 5) return;
    int perm[OG_MAX_RANK], c[OG_MAX_RANK] = {0};
    memcpy(perm, order, (size_t)na * sizeof *perm);
    double best = order_cost(X, Y, taps, order, na);
    /* Heap's algorithm */
    for (int i = 1; i < na;) {
        if (c[i] < i) {
            int j = i % 2 ? c[i] : 0, t = perm[j];
            perm[j] = perm[i], perm[i] = t;
            double cost = order_cost(X, Y, taps, perm, na);
            if (cost < best) best = cost, memcpy(order, perm, (size_t)na * sizeof *perm);
            c[i]++;
            i = 1;
        } else {
            c[i++] = 0;
        }
    }
}

/* ref_order: the reference evaluator's order (the last axis first), for the integer types,
 * whose truncation makes the last bits of the sums matter; else the cheapest order. */
static og_status run_separable(const og_kernel_ctx *k, const og_tensor *X, og_tensor *Y,
                               const axis_taps *taps, const resize_loops *l, bool ref_order)
{
    int r = X->rank;
    const og_resize_params *p = k->params;
    size_t es = l->es;
    int order[OG_MAX_RANK], na = 0;
    for (int i = 0; i < r; i++) {
        int d = ref_order ? r - 1 - i : i;
        if (!taps[d].identity) order[na++] = d;
    }
    if (na == 0) {
        memcpy(Y->data, X->data, (size_t)X->numel * es);
        return OG_OK;
    }
    bool lead_identity = true;
    for (int d = 0; d < r - 2; d++) lead_identity = lead_identity && taps[d].identity;
    if (p->mode == OG_RESIZE_LINEAR && r >= 2 && lead_identity && taps[r - 1].n == 2 &&
        taps[r - 2].n == 2) {
        bilinear_geom g = {0};
        g.planes = X->numel / (X->dims[r - 1] * X->dims[r - 2]);
        g.ih = X->dims[r - 2], g.iw = X->dims[r - 1], g.oh = Y->dims[r - 2], g.ow = Y->dims[r - 1];
        /* enough units to keep the threads busy when there are few planes */
        g.row_blocks = g.planes >= 16 ? 1 : (16 + g.planes - 1) / g.planes;
        if (g.row_blocks > g.oh) g.row_blocks = g.oh;
        g.units = g.planes * g.row_blocks;
        g.chunks = g.units < 64 ? g.units : 64;
        g.ty = &taps[r - 2], g.tx = &taps[r - 1];
        void *scratch = og_malloc(k->alloc, (size_t)(g.chunks * 2 * g.ow) * es);
        if (!scratch) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        l->bilinear(k, X->data, Y->data, &g, scratch, p->extrapolation);
        og_free(k->alloc, scratch);
        return OG_OK;
    }
    if (!ref_order) best_order(X, Y, taps, order, na);
    int64_t cur[OG_MAX_RANK], biggest = 0;
    memcpy(cur, X->dims, (size_t)r * sizeof *cur);
    for (int i = 0; i < na - 1; i++) {
        cur[order[i]] = Y->dims[order[i]];
        int64_t n = 1;
        for (int d = 0; d < r; d++) n *= cur[d];
        if (n > biggest) biggest = n;
    }
    void *buf[2] = {NULL, NULL};
    if (na > 1) {
        buf[0] = og_malloc(k->alloc, (size_t)biggest * es);
        buf[1] = na > 2 ? og_malloc(k->alloc, (size_t)biggest * es) : NULL;
        if (!buf[0] || (na > 2 && !buf[1])) {
            og_free(k->alloc, buf[0]);
            og_free(k->alloc, buf[1]);
            return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        }
    }
    memcpy(cur, X->dims, (size_t)r * sizeof *cur);
    const void *src = X->data;
    for (int i = 0; i < na; i++) {
        int a = order[i];
        void *dst = i == na - 1 ? Y->data : buf[i % 2];
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < a; d++) outer *= cur[d];
        for (int d = a + 1; d < r; d++) inner *= cur[d];
        l->pass(k, src, dst, outer, cur[a], Y->dims[a], inner, &taps[a], p->extrapolation);
        cur[a] = Y->dims[a];
        src = dst;
    }
    og_free(k->alloc, buf[0]);
    og_free(k->alloc, buf[1]);
    return OG_OK;
}

/* An integer or bool X: the float64 loops on a float64 copy, in the reference's order, the
 * result cast back (l->io). */
static og_status run_via_f64(const og_kernel_ctx *k, const og_tensor *X, og_tensor *Y,
                             const axis_taps *taps, const resize_loops *l)
{
    og_tensor *xd = NULL, *yd = NULL;
    og_status st = og_tensor_alloc(OG_DOUBLE, X->rank, X->dims, k->alloc, &xd);
    if (!st) st = og_tensor_alloc(OG_DOUBLE, Y->rank, Y->dims, k->alloc, &yd);
    if (st) {
        st = og_kernel_error(k, st, "out of memory");
    } else {
        l->io->load(X->data, xd->data, X->numel);
        st = run_separable(k, xd, yd, taps, l, true);
        if (!st) l->io->store(yd->data, Y->data, Y->numel);
    }
    og_tensor_free(xd);
    og_tensor_free(yd);
    return st;
}

/* ---- entry ----------------------------------------------------------------------------- */

static const og_tensor *opt_input(const og_tensor *const *in, int n_in, int i)
{
    return i >= 0 && i < n_in ? in[i] : NULL;
}

static og_status k_resize(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_resize_params *p = k->params;
    const og_tensor *X = in[0];
    og_tensor *Y = out[0];
    if ((k->impl ? k->impl : select_resize(k->node, X->dtype)) == &resize_via_f32)
        return og_kernel_via_f32_unbound(k, k_resize, in, n_in, out, n_out);
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    int r = X->rank;
    og_resize_shape sh;
    og_status st =
        og_resize_plan(&c, p, r, X->dims, opt_input(in, n_in, p->in_roi),
                       opt_input(in, n_in, p->in_scales), opt_input(in, n_in, p->in_sizes), &sh);
    if (st) return st;
    if (Y->rank != r) return og_kernel_error(k, OG_ERR_INTERNAL, "output rank mismatch");
    for (int d = 0; d < r; d++)
        if (sh.out_dims[d] != Y->dims[d])
            return og_kernel_error(k, OG_ERR_INTERNAL, "output dim %d mismatch", d);
    if (Y->numel == 0) return OG_OK;
    size_t es = og_dtype_size(X->dtype);
    if (r == 0) {
        memcpy(Y->data, X->data, es);
        return OG_OK;
    }
    if (X->numel == 0)
        return og_kernel_error(k, OG_ERR_SHAPE, "input 0 (X) is empty but the output is not");
    /* k->impl: bound at session creation; without a binding, picked here */
    const resize_loops *l = k->impl ? k->impl : select_resize(k->node, X->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input 0 (X) type %s needs mode nearest",
                               og_dtype_name(X->dtype));

    /* one block for every axis's taps (and nearest's offsets) */
    axis_taps taps[OG_MAX_RANK];
    int starts[OG_MAX_RANK];
    size_t bytes = 0;
    for (int d = 0; d < r; d++) {
        taps[d].n = og_resize_tap_count(p, sh.scale[d], &starts[d]);
        bytes += (size_t)Y->dims[d] * ((size_t)taps[d].n * 24 + 16) + 8;
    }
    char *mem = og_malloc(k->alloc, bytes), *m = mem;
    if (!mem) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    int64_t *off[OG_MAX_RANK];
    for (int d = 0; d < r; d++) {
        size_t o = (size_t)Y->dims[d], n = (size_t)taps[d].n;
        taps[d].idx = (int64_t *)m;
        m += o * n * 8;
        taps[d].w = (double *)m;
        m += o * n * 8;
        taps[d].w_float = (float *)m;
        m += (o * n * 4 + 7) / 8 * 8; /* keep the next int64 arrays aligned */
        off[d] = (int64_t *)m;
        m += o * 8;
        taps[d].outside = (uint8_t *)m;
        m += o * 8;
        build_taps(p, &sh, d, X->dims[d], starts[d], &taps[d]);
    }
    if (p->mode == OG_RESIZE_NEAREST)
        run_nearest(k, X, Y, taps, off);
    else if (!l->io)
        st = run_separable(k, X, Y, taps, l, false);
    else
        st = run_via_f64(k, X, Y, taps, l);
    og_free(k->alloc, mem);
    return st;
}

/* ---- GridSample ------------------------------------------------------------------------ */

/* The coordinate math of PyTorch's grid_sampler, which the spec points to (and onnxruntime
 * follows): a normalized g in [−1, 1] maps to x = (g + 1)/2·(L − 1) (align_corners) or
 * ((g + 1)·L − 1)/2; for nearest and linear, outside the borders [0, L − 1]
 * (align_corners) or [−0.5, L − 0.5], border padding clamps x into [0, L − 1] and
 * reflection padding reflects it (nearest rounds, half to even, first).  The taps then
 * read the input through the padding: zeros outside, clamped, or reflected.  Cubic pads
 * only its taps (the ONNX reference also moves the cubic coordinate itself, unlike PyTorch
 * and onnxruntime). */
static double grid_reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0) return lo;
    double d = fabs(x - lo), n = floor(d / rng), r = d - n * rng;
    return fmod(n, 2) == 0 ? lo + r : hi - r;
}

/* Tap index i of an axis of length L through the padding mode; -1 where zeros pad. */
static int64_t grid_tap(const og_grid_params *p, int64_t i, int64_t L, double lo, double hi)
{
    if (i >= 0 && i < L) return i;
    switch (p->padding) {
    case OG_GRID_BORDER: return i < 0 ? 0 : L - 1;
    case OG_GRID_REFLECTION: {
        int64_t r = (int64_t)grid_reflect((double)i, lo, hi);
        return r < 0 ? 0 : (r >= L ? L - 1 : r);
    }
    default: return -1;
    }
}

/* Keys' cubic convolution weights (a = −0.75) of the 4 taps x0 − 1 .. x0 + 2, t = x − x0 */
static void cubic_w(double t, double *w)
{
    const double A = -0.75;
    double u = t + 1, v = 1 - t, z = 2 - t;
    w[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
    w[3] = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
}

#define GS_MAXT 4 /* taps per axis */

/* The taps of one axis for normalized coordinate g: count, indices (-1: zero) and weights */
static int grid_axis_taps(const og_grid_params *p, double g, int64_t L, int64_t *idx, double *w)
{
    double lo = p->align_corners ? 0 : -0.5, hi = p->align_corners ? (double)L - 1 : L - 0.5;
    double x = p->align_corners ? (g + 1) / 2 * (double)(L - 1) : ((g + 1) * (double)L - 1) / 2;
    if (p->mode == OG_GRID_NEAREST) x = nearbyint(x); /* the default rounding: half to even */
    if ((x < lo || x > hi) && p->mode != OG_GRID_CUBIC) {
        if (p->padding == OG_GRID_BORDER) x = x < 0 ? 0 : (x > L - 1 ? (double)L - 1 : x);
        if (p->padding == OG_GRID_REFLECTION) x = grid_reflect(x, lo, hi);
    }
    if (!(x > -1e15 && x < 1e15)) { /* NaN or far away: zeros (and no cast out of range) */
        idx[0] = -1;
        w[0] = 0;
        if (x == x && p->padding != OG_GRID_ZEROS) { /* clamped or reflected: an edge */
            idx[0] = x < 0 ? 0 : L - 1;
            w[0] = 1;
        }
        return 1;
    }
    if (p->mode == OG_GRID_NEAREST) {
        idx[0] = grid_tap(p, (int64_t)x, L, lo, hi); /* truncation, as the reference's cast */
        w[0] = 1;
        return 1;
    }
    double x0 = floor(x), t = x - x0;
    if (p->mode == OG_GRID_LINEAR) {
        idx[0] = grid_tap(p, (int64_t)x0, L, lo, hi);
        idx[1] = grid_tap(p, (int64_t)x0 + 1, L, lo, hi);
        w[0] = 1 - t;
        w[1] = t;
        return 2;
    }
    cubic_w(t, w);
    for (int k = 0; k < 4; k++) idx[k] = grid_tap(p, (int64_t)x0 - 1 + k, L, lo, hi);
    return 4;
}

#define DEF_GRID_SAMPLE(T, G)                                                                      \
    static void grid_sample_##T##_##G(const og_grid_params *p, const og_tensor *xt,                \
                                      const og_tensor *gt, og_tensor *yt, int64_t n, int64_t o)    \
    {                                                                                              \
        const T *x = xt->data;                                                                     \
        const G *grid = gt->data;                                                                  \
        T *y = yt->data;                                                                           \
        int r = xt->rank - 2;                                                                      \
        int64_t C = xt->dims[1], P = 1, O = yt->numel / (xt->dims[0] * C);                         \
        int64_t idx[OG_MAX_RANK][GS_MAXT], st[OG_MAX_RANK];                                        \
        double w[OG_MAX_RANK][GS_MAXT];                                                            \
        int cnt[OG_MAX_RANK];                                                                      \
        for (int d = r - 1; d >= 0; d--) {                                                         \
            st[d] = P;                                                                             \
            P *= xt->dims[2 + d];                                                                  \
        }                                                                                          \
        /* grid[n, o, :] holds the coordinates in reverse axis order */                            \
        for (int d = 0; d < r; d++)                                                                \
            cnt[d] = grid_axis_taps(p, (double)grid[(n * O + o) * r + (r - 1 - d)],                \
                                    xt->dims[2 + d], idx[d], w[d]);                                \
        for (int64_t c = 0; c < C; c++) y[(n * C + c) * O + o] = 0;                                \
        int k[OG_MAX_RANK] = {0};                                                                  \
        for (;;) {                                                                                 \
            double wt = 1;                                                                         \
            int64_t off = 0;                                                                       \
            bool in = true;                                                                        \
            for (int d = 0; d < r; d++) {                                                          \
                wt *= w[d][k[d]];                                                                  \
                if (idx[d][k[d]] < 0) in = false;                                                  \
                off += idx[d][k[d]] * st[d];                                                       \
            }                                                                                      \
            if (in && wt != 0)                                                                     \
                for (int64_t c = 0; c < C; c++)                                                    \
                    y[(n * C + c) * O + o] += (T)(wt * x[(n * C + c) * P + off]);                  \
            int d = r - 1;                                                                         \
            while (d >= 0 && ++k[d] == cnt[d]) k[d--] = 0;                                         \
            if (d < 0) break;                                                                      \
        }                                                                                          \
    }
DEF_GRID_SAMPLE(float, float)
DEF_GRID_SAMPLE(float, double)
DEF_GRID_SAMPLE(double, float)
DEF_GRID_SAMPLE(double, double)

/* ---- GridSample of the integers and bool: the reference evaluator's arithmetic ----------
 *
 * Neither the spec nor PyTorch defines an integer GridSample, and onnxruntime does not run
 * one; the ONNX reference evaluator does, and these loops compute what it computes.  It
 * holds the unnormalized coordinates in float32 (computed in the grid's type, then
 * rounded), clamps or reflects them when outside the borders in every mode (cubic too),
 * and holds each axis's interpolation weights, computed in float32, in an array of X's
 * type: truncated toward zero for the integers (bool: w != 0).  A linear or cubic weight
 * is below 1 except at a whole coordinate (or one within float32's rounding of it), so an
 * integer output is the pixel at the nearest whole coordinate when every axis's coordinate
 * is one, else 0; a bool output is the or of the taps with a nonzero weight.  Sums wrap in
 * the element type (numpy's integer dot products). */

/* The reference's reflection (_gs_reflect), in float64: from the nearer border, by whole
 * lengths */
static double grid_reflect_ref(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (!(rng > 0)) return lo;
    if (x < lo) {
        double dx = lo - x, n = trunc(dx / rng), r = dx - n * rng;
        return fmod(n, 2) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi, n = trunc(dx / rng), r = dx - n * rng;
        return fmod(n, 2) == 0 ? hi - r : lo + r;
    }
    return x;
}

/* Tap index i through the padding (the reference's _pixel_at_array); -1 where zeros pad */
static int64_t grid_tap_ref(const og_grid_params *p, int64_t i, int64_t L, double lo, double hi)
{
    if (p->padding == OG_GRID_ZEROS) return i >= 0 && i < L ? i : -1;
    if (p->padding == OG_GRID_BORDER) return i < 0 ? 0 : i > L - 1 ? L - 1 : i;
    double v = grid_reflect_ref((double)i, lo, hi);
    int64_t j = v > -1e15 && v < 1e15 ? (int64_t)v : 0;
    return j < 0 ? 0 : j >= L ? L - 1 : j; /* in range for finite i; kept in for any */
}

/* The reference's Keys cubic weights (a = -0.75) in float32 arithmetic, t = |x - x0| */
static void cubic_w_f32(float t, float *w)
{
    const float A = -0.75f;
    float u = t + 1, v = 1 - t, z = 2 - t;
    w[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
    w[3] = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
}

/* The taps of one axis for the float32 coordinate x: count, indices (-1: zero) and the
 * weights as X's type holds them (c) */
static int grid_axis_taps_ref(const og_grid_params *p, float x, int64_t L, bool is_bool,
                              int64_t *idx, int64_t *c)
{
    double lo = p->align_corners ? 0 : -0.5, hi = p->align_corners ? (double)L - 1 : L - 0.5;
    if (p->mode == OG_GRID_NEAREST) x = rintf(x); /* half to even, as numpy's rint */
    if (x < lo || x > hi) {
        if (p->padding == OG_GRID_BORDER) x = x < 0 ? 0.0f : (x > L - 1 ? (float)(L - 1) : x);
        if (p->padding == OG_GRID_REFLECTION) x = (float)grid_reflect_ref(x, lo, hi);
    }
    if (!(x > -1e15f && x < 1e15f)) { /* NaN or far away (the reference fails or pads) */
        idx[0] = -1;
        c[0] = 0;
        return 1;
    }
    if (p->mode == OG_GRID_NEAREST) {
        idx[0] = grid_tap_ref(p, (int64_t)x, L, lo, hi); /* astype(int32): truncation */
        c[0] = 1;
        return 1;
    }
    float x0 = floorf(x), t = fabsf(x - x0), w[GS_MAXT];
    int n = p->mode == OG_GRID_LINEAR ? 2 : 4, first = p->mode == OG_GRID_LINEAR ? 0 : -1;
    if (n == 2)
        w[0] = 1 - t, w[1] = t;
    else
        cubic_w_f32(t, w);
    for (int k = 0; k < n; k++) {
        idx[k] = grid_tap_ref(p, (int64_t)x0 + first + k, L, lo, hi);
        c[k] = is_bool ? w[k] != 0 : (int64_t)w[k]; /* |w| < 2: the cast truncates */
    }
    return n;
}

/* U: the unsigned type of X's width (a signed type's wrapped sums have the same bits) or
 * uint8_t for bool; G: the grid's; ACC(acc, weight, pixel): acc plus weight times pixel */
#define DEF_GRID_SAMPLE_REF(U, NAME, G, IS_BOOL, ACC)                                              \
    static void grid_sample_##NAME##_##G(const og_grid_params *p, const og_tensor *xt,             \
                                         const og_tensor *gt, og_tensor *yt, int64_t n, int64_t o) \
    {                                                                                              \
        const U *x = xt->data;                                                                     \
        const G *grid = gt->data;                                                                  \
        U *y = yt->data;                                                                           \
        int r = xt->rank - 2;                                                                      \
        int64_t C = xt->dims[1], P = 1, O = yt->numel / (xt->dims[0] * C);                         \
        int64_t idx[OG_MAX_RANK][GS_MAXT], st[OG_MAX_RANK], c[OG_MAX_RANK][GS_MAXT];               \
        int cnt[OG_MAX_RANK];                                                                      \
        for (int d = r - 1; d >= 0; d--) {                                                         \
            st[d] = P;                                                                             \
            P *= xt->dims[2 + d];                                                                  \
        }                                                                                          \
        for (int d = 0; d < r; d++) {                                                              \
            G g = grid[(n * O + o) * r + (r - 1 - d)], L = (G)xt->dims[2 + d];                     \
            float xf =                                                                             \
                (float)(p->align_corners ? (g + 1) / (G)2 * (L - 1) : ((g + 1) * L - 1) / (G)2);   \
            cnt[d] = grid_axis_taps_ref(p, xf, xt->dims[2 + d], IS_BOOL, idx[d], c[d]);            \
        }                                                                                          \
        for (int64_t ch = 0; ch < C; ch++) y[(n * C + ch) * O + o] = 0;                            \
        int k[OG_MAX_RANK] = {0};                                                                  \
        for (;;) {                                                                                 \
            int64_t wt = 1, off = 0;                                                               \
            bool in = true;                                                                        \
            for (int d = 0; d < r; d++) {                                                          \
                wt *= c[d][k[d]];                                                                  \
                if (idx[d][k[d]] < 0) in = false;                                                  \
                off += idx[d][k[d]] * st[d];                                                       \
            }                                                                                      \
            if (in && wt != 0)                                                                     \
                for (int64_t ch = 0; ch < C; ch++) {                                               \
                    U *yv = &y[(n * C + ch) * O + o];                                              \
                    *yv = (U)ACC(*yv, wt, x[(n * C + ch) * P + off]);                              \
                }                                                                                  \
            int d = r - 1;                                                                         \
            while (d >= 0 && ++k[d] == cnt[d]) k[d--] = 0;                                         \
            if (d < 0) break;                                                                      \
        }                                                                                          \
    }
#define GS_ACC_INT(a, w, v)  ((uint64_t)(a) + (uint64_t)(w) * (uint64_t)(v))
#define GS_ACC_BOOL(a, w, v) ((a) | ((v) != 0))
DEF_GRID_SAMPLE_REF(uint8_t, u8, float, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint8_t, u8, double, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint16_t, u16, float, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint16_t, u16, double, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint32_t, u32, float, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint32_t, u32, double, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint64_t, u64, float, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint64_t, u64, double, false, GS_ACC_INT)
DEF_GRID_SAMPLE_REF(uint8_t, b8, float, true, GS_ACC_BOOL)
DEF_GRID_SAMPLE_REF(uint8_t, b8, double, true, GS_ACC_BOOL)

typedef struct grid_sample_loops {
    void (*fn)(const og_grid_params *p, const og_tensor *xt, const og_tensor *gt, og_tensor *yt,
               int64_t n, int64_t o);
} grid_sample_loops;
static const grid_sample_loops gs_loops[2][2] = {
    {{grid_sample_float_float}, {grid_sample_float_double}},
    {{grid_sample_double_float}, {grid_sample_double_double}}};

/* Two type variables, X's and the grid's: [X][grid], each float32, float64, float16 or
 * bfloat16.  A pair with a 16-bit float runs on float32 copies of those (og_float_impl's
 * f32: the pair with float32 in their place). */
#define GS_ROW(X, XW)                                                                              \
    {                                                                                              \
        {&gs_loops[X][0], NULL}, {&gs_loops[X][1], NULL}, {NULL, &gs_impls[XW][0]},                \
        {                                                                                          \
            NULL, &gs_impls[XW][0]                                                                 \
        }                                                                                          \
    }
#define GS_HALF_ROW                                                                                \
    {                                                                                              \
        {NULL, &gs_impls[0][0]}, {NULL, &gs_impls[0][1]}, {NULL, &gs_impls[0][0]},                 \
        {                                                                                          \
            NULL, &gs_impls[0][0]                                                                  \
        }                                                                                          \
    }
static const og_float_impl gs_impls[4][4] = {GS_ROW(0, 0), GS_ROW(1, 1), GS_HALF_ROW, GS_HALF_ROW};

/* X an integer (by width) or bool: [X][grid], a 16-bit float grid through a float32 copy */
static const grid_sample_loops gs_int_loops[5][2] = {
    {{grid_sample_u8_float}, {grid_sample_u8_double}},
    {{grid_sample_u16_float}, {grid_sample_u16_double}},
    {{grid_sample_u32_float}, {grid_sample_u32_double}},
    {{grid_sample_u64_float}, {grid_sample_u64_double}},
    {{grid_sample_b8_float}, {grid_sample_b8_double}}};
#define GS_INT_ROW(X)                                                                              \
    {                                                                                              \
        {&gs_int_loops[X][0], NULL}, {&gs_int_loops[X][1], NULL}, {NULL, &gs_int_impls[X][0]},     \
        {                                                                                          \
            NULL, &gs_int_impls[X][0]                                                              \
        }                                                                                          \
    }
static const og_float_impl gs_int_impls[5][4] = {GS_INT_ROW(0), GS_INT_ROW(1), GS_INT_ROW(2),
                                                 GS_INT_ROW(3), GS_INT_ROW(4)};

static int gs_index(og_dtype t)
{
    return t == OG_FLOAT ? 0 : t == OG_DOUBLE ? 1 : t == OG_FLOAT16 ? 2 : t == OG_BFLOAT16 ? 3 : -1;
}

/* X's row of gs_int_impls: by width, bool last; -1 for a float or another type */
static int gs_int_index(og_dtype t)
{
    if (t == OG_BOOL) return 4;
    if (!og_dtype_is_integer(t)) return -1;
    size_t es = og_dtype_size(t);
    return es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
}

/* The binding for X and grid of these dtypes, NULL for none. */
static const og_float_impl *gs_impl_of(og_dtype x, og_dtype g)
{
    int i = gs_index(x), j = gs_index(g), ii = gs_int_index(x);
    if (j < 0) return NULL;
    return i >= 0 ? &gs_impls[i][j] : ii >= 0 ? &gs_int_impls[ii][j] : NULL;
}

static const void *select_grid_sample(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    if (n->n_in < 2 || t[1] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    return gs_impl_of(t[0], t[1]);
}

static og_status k_grid_sample(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_grid_params *p = k->params;
    const og_tensor *x = in[0], *g = in[1];
    og_tensor *y = out[0];
    const og_float_impl *im = k->impl ? k->impl : gs_impl_of(x->dtype, g->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element types %s and %s are not supported",
                               og_dtype_name(x->dtype), og_dtype_name(g->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, k_grid_sample, in, n_in, out, n_out);
    const grid_sample_loops *l = im->loops;
    if (y->numel == 0) return OG_OK;
    for (int d = 2; d < x->rank; d++)
        if (x->dims[d] == 0)
            return og_kernel_error(k, OG_ERR_SHAPE, "input 0 (X) has an empty spatial dim %d", d);
    int64_t N = x->dims[0], O = y->numel / (N * x->dims[1]);
    OG_PARALLEL_FOR(k, N * O, x->dims[1] * 8, no, { l->fn(p, x, g, y, no / O, no % O); });
    return OG_OK;
}

/* ---- AffineGrid ------------------------------------------------------------------------ */

/* grid[n, pos, i] = Σ_j θ[n, i, j]·b_j(pos) + θ[n, i, r]: b_j the normalized coordinate of
 * pos along spatial axis r − 1 − j (x along the last axis first), −1 + 2k/(L − 1) with
 * align_corners (0 when L is 1, as PyTorch: onnxruntime says 1, the ONNX reference −1),
 * −1 + (2k + 1)/L without. */
#define DEF_AFFINE_GRID(T)                                                                         \
    static void affine_grid_##T(const void *thv, void *yv, int r, int64_t N, int64_t P,            \
                                const int64_t *L, bool align_corners)                              \
    {                                                                                              \
        const T *th = thv;                                                                         \
        T *y = yv;                                                                                 \
        for (int64_t n = 0; n < N; n++)                                                            \
            for (int64_t q = 0; q < P; q++) {                                                      \
                double b[OG_MAX_RANK];                                                             \
                int64_t rem = q;                                                                   \
                for (int d = r - 1; d >= 0; d--) { /* b[j]: axis r − 1 − j */                  \
                    int64_t kk = rem % L[d];                                                       \
                    rem /= L[d];                                                                   \
                    double v = align_corners                                                       \
                                   ? (L[d] > 1 ? -1 + 2.0 * (double)kk / (double)(L[d] - 1) : 0)   \
                                   : -1 + (2.0 * (double)kk + 1) / (double)L[d];                   \
                    b[r - 1 - d] = v;                                                              \
                }                                                                                  \
                for (int i = 0; i < r; i++) {                                                      \
                    double v = (double)th[(n * r + i) * (r + 1) + r];                              \
                    for (int j = 0; j < r; j++) v += (double)th[(n * r + i) * (r + 1) + j] * b[j]; \
                    y[(n * P + q) * r + i] = (T)v;                                                 \
                }                                                                                  \
            }                                                                                      \
    }
DEF_AFFINE_GRID(float)
DEF_AFFINE_GRID(double)

typedef void (*affine_grid_fn)(const void *th, void *y, int r, int64_t N, int64_t P,
                               const int64_t *L, bool align_corners);
static const affine_grid_fn affine_grid_loops[2] = {affine_grid_float, affine_grid_double};
OG_FLOAT_IMPLS(affine_grid_impls, &affine_grid_loops[0], &affine_grid_loops[1]);

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl) */
static const void *select_affine_grid(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(affine_grid_impls, t);
}

static og_status k_affine_grid(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_grid_params *p = k->params;
    const og_tensor *th = in[0];
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, affine_grid_impls, th->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(th->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, k_affine_grid, in, n_in, out, n_out);
    int r = y->rank - 2;
    int64_t N = y->dims[0], P = N ? y->numel / (N * r) : 0, L[OG_MAX_RANK];
    if (th->dims[0] != N)
        return og_kernel_error(k, OG_ERR_SHAPE, "input 0 (theta) has %lld matrices, size says %lld",
                               (long long)th->dims[0], (long long)N);
    for (int d = 0; d < r; d++) L[d] = y->dims[1 + d];
    (*(const affine_grid_fn *)im->loops)(th->data, y->data, r, N, P, L, p->align_corners);
    return OG_OK;
}

const og_kernel_def og_cpu_resize[] = {
    /* select_resize: mode nearest moves bytes of any dtype; linear and cubic bind their
     * float32 or float64 loops */
    {.name = "Resize", .domain = "", .fn = k_resize, .select = select_resize},
    {.name = "Upsample", .domain = "", .fn = k_resize, .select = select_resize},
    {.name = "GridSample", .domain = "", .fn = k_grid_sample, .select_types = select_grid_sample},
    {.name = "AffineGrid", .domain = "", .fn = k_affine_grid, .select = select_affine_grid},
    {.name = NULL},
};
