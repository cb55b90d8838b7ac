/* pool.c: CPU kernels of AveragePool, MaxPool (with optional Indices), GlobalAveragePool
 * and GlobalMaxPool, for float32 and float64 (MaxPool also int8 and uint8): the loops of one type
 * are a pool_loops table, bound to the node when the session is created; LpPool, bound the same way
 * (its loops hold the average pool's of their type; float16 and bfloat16 through float32);
 * MaxUnpool (moves elements by size, any dtype) and RoiAlign (bound like LpPool).
 *
 * 1-D, 2-D and 3-D pools share one loop nest over (D, H, W), with leading spatial dims of
 * size 1 for lower ranks.  The range of kernel taps that fall inside the input is
 * precomputed per output position and dim, so the inner loops carry no bounds checks (the
 * interior of the image and the borders run the same code).  Work is split over output
 * rows (plane, od, oh).  MaxPool with row-major Indices (what its gradient recomputes) takes
 * the same interior path, choosing with masks instead of branches.  A float MaxPool 3x3
 * stride 2 has a vector path of its own on AVX-512 (mp3_pool), with row-major Indices or
 * none. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/pool.h"
#ifdef OG_CPU_X86
#include <immintrin.h>
#endif

typedef struct pool_geom {
    int64_t planes; /* N * C */
    int64_t in[3];  /* D, H, W */
    int64_t out[3]; /* OD, OH, OW */
    int64_t k[3], s[3], d[3], pb[3];
    int64_t in_plane;  /* D*H*W */
    int64_t out_plane; /* OD*OH*OW */
    int64_t kvol;      /* product of kernel sizes: the count_include_pad divisor */
    int64_t *lo[3];    /* per dim and output position: first kernel tap inside the input */
    int64_t *hi[3];    /* one past the last */
    int64_t ow0, ow1;  /* outputs along W whose whole window lies inside the input */
    bool include_pad;
    bool column_major;
    bool full2x2; /* 2x2 stride 2 over H, W, no pads, every window inside: rows_2x2 */
} pool_geom;

/* Fill g from the params and the input shape; ranges come from one scratch block that
 * the caller frees (*scratch). */
static og_status pool_setup(const og_kernel_ctx *k, const og_pool_params *p, const og_tensor *x,
                            const og_tensor *y, pool_geom *g, int64_t **scratch)
{
    int nsp = x->rank - 2;
    *scratch = NULL;
    if (nsp > 3)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED,
                               "pooling over %d spatial dims is not implemented (at most 3)", nsp);
    memset(g, 0, sizeof *g);
    g->planes = x->dims[0] * x->dims[1];
    g->include_pad = p->count_include_pad;
    g->column_major = p->column_major;
    for (int j = 0; j < 3; j++) {
        g->in[j] = g->out[j] = g->k[j] = g->s[j] = g->d[j] = 1;
        g->pb[j] = 0;
    }
    int off = 3 - nsp;
    for (int i = 0; i < nsp; i++) {
        int j = off + i;
        g->in[j] = x->dims[2 + i];
        g->out[j] = y->dims[2 + i];
        g->k[j] = p->kernel[i];
        g->s[j] = p->strides[i];
        g->d[j] = p->dilations[i];
        int64_t o;
        if (!og_pool_dim(p, i, g->in[j], &o, &g->pb[j]) || o != g->out[j])
            return og_kernel_error(k, OG_ERR_INTERNAL, "output dim %d is %lld, expected %lld",
                                   i + 2, (long long)g->out[j], (long long)o);
    }
    g->in_plane = g->in[0] * g->in[1] * g->in[2];
    g->out_plane = g->out[0] * g->out[1] * g->out[2];
    g->kvol = g->k[0] * g->k[1] * g->k[2];
    int64_t total = 2 * (g->out[0] + g->out[1] + g->out[2]);
    int64_t *buf = og_malloc(k->alloc, (size_t)total * sizeof *buf);
    if (!buf) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    *scratch = buf;
    for (int j = 0; j < 3; j++) {
        g->lo[j] = buf;
        g->hi[j] = buf + g->out[j];
        buf += 2 * g->out[j];
        for (int64_t o = 0; o < g->out[j]; o++) {
            int64_t start = o * g->s[j] - g->pb[j];
            int64_t lo = start >= 0 ? 0 : (-start + g->d[j] - 1) / g->d[j];
            int64_t last = g->in[j] - 1 - start; /* taps t with start + t*d <= in - 1 */
            int64_t hi = last < 0 ? 0 : last / g->d[j] + 1;
            if (hi > g->k[j]) hi = g->k[j];
            if (hi < lo) hi = lo;
            g->lo[j][o] = lo;
            g->hi[j][o] = hi;
        }
    }
    /* full windows along W form one interval, since window starts grow with ow */
    g->ow0 = g->ow1 = 0;
    for (int64_t o = 0; o < g->out[2]; o++) {
        if (g->lo[2][o] != 0 || g->hi[2][o] != g->k[2]) continue;
        if (g->ow1 == 0) g->ow0 = o;
        g->ow1 = o + 1;
    }
    g->full2x2 = g->k[0] == 1 && g->s[0] == 1 && g->pb[0] == 0 && g->out[0] == g->in[0] &&
                 g->k[1] == 2 && g->k[2] == 2 && g->s[1] == 2 && g->s[2] == 2 && g->d[1] == 1 &&
                 g->d[2] == 1 && g->pb[1] == 0 && g->pb[2] == 0 && 2 * g->out[1] <= g->in[1] &&
                 2 * g->out[2] <= g->in[2];
    return OG_OK;
}

/* One output row (plane, od, oh) of an average or max pool, per element type.  Max keeps
 * the first maximum (strictly greater replaces) and, when idx is set, its flattened index
 * over (N, C, spatial) in row- or column-major spatial order. */
/* The sum of a plane of n values for GlobalAveragePool, in double: eight lanes (lane j the
 * values at j mod 8) below 256 values; 32 lanes above, so that a vector unit keeps four
 * sums in flight (one chain of eight lanes was latency-bound: EfficientNet-B0's pools took
 * 0.36 ms against onnxruntime's 0.14); the tail, then the lanes in order.  The same
 * expression is compiled for the baseline and AVX-512 (no reassociation), so the same bits
 * on every CPU; the AVX-512 build takes every plane where it runs (the baseline's SSE2
 * loop took 1 cycle a value on the 14x14 and 7x7 planes of EfficientNet-B0's squeezes). */
#define GAP_SUM(T, p, n)                                                                           \
    do {                                                                                           \
        int64_t i = 0;                                                                             \
        double s = 0;                                                                              \
        if (n >= 256) {                                                                            \
            double s32[32] = {0};                                                                  \
            for (; i + 32 <= n; i += 32)                                                           \
                for (int j = 0; j < 32; j++) s32[j] += (double)p[i + j];                           \
            for (; i < n; i++) s += p[i];                                                          \
            for (int j = 0; j < 32; j++) s += s32[j];                                              \
            return s;                                                                              \
        }                                                                                          \
        double s8[8] = {0};                                                                        \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int j = 0; j < 8; j++) s8[j] += (double)p[i + j];                                 \
        for (; i < n; i++) s += p[i];                                                              \
        for (int j = 0; j < 8; j++) s += s8[j];                                                    \
        return s;                                                                                  \
    } while (0)

static double gap_sum_base_float(const float *restrict p, int64_t n) { GAP_SUM(float, p, n); }
static double gap_sum_double(const double *restrict p, int64_t n) { GAP_SUM(double, p, n); }
static double gap_sum_int8_t(const int8_t *restrict p, int64_t n) { GAP_SUM(int8_t, p, n); }
static double gap_sum_uint8_t(const uint8_t *restrict p, int64_t n) { GAP_SUM(uint8_t, p, n); }
#ifdef OG_CPU_X86
static OG_TARGET_AVX512 double gap_sum_avx512_float(const float *restrict p, int64_t n)
{
    GAP_SUM(float, p, n);
}
#endif
static double gap_sum_float(const float *restrict p, int64_t n)
{
#ifdef OG_CPU_X86
    if (og_cpu_isa() >= 2) return gap_sum_avx512_float(p, n);
#endif
    return gap_sum_base_float(p, n);
}
#undef GAP_SUM

#define DEFINE_POOL_ROWS(T)                                                                        \
    static void avg_row_##T(const pool_geom *g, const T *restrict x, T *restrict y, int64_t od,    \
                            int64_t oh, int64_t ow_begin, int64_t ow_end)                          \
    {                                                                                              \
        const int64_t H = g->in[1], W = g->in[2];                                                  \
        const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1];                  \
        const int64_t d0 = g->lo[0][od], d1 = g->hi[0][od];                                        \
        const int64_t h0 = g->lo[1][oh], h1 = g->hi[1][oh];                                        \
        const int64_t dd = g->d[0], dh = g->d[1], dw = g->d[2];                                    \
        for (int64_t ow = ow_begin; ow < ow_end; ow++) {                                           \
            const int64_t sw = ow * g->s[2] - g->pb[2];                                            \
            const int64_t w0 = g->lo[2][ow], w1 = g->hi[2][ow];                                    \
            T sum = 0;                                                                             \
            for (int64_t a = d0; a < d1; a++)                                                      \
                for (int64_t b = h0; b < h1; b++) {                                                \
                    const T *row = x + ((sd + a * dd) * H + sh + b * dh) * W + sw;                 \
                    for (int64_t c = w0; c < w1; c++) sum += row[c * dw];                          \
                }                                                                                  \
            int64_t cnt = g->include_pad ? g->kvol : (d1 - d0) * (h1 - h0) * (w1 - w0);            \
            y[ow] = cnt > 0 ? sum / (T)cnt : (T)0;                                                 \
        }                                                                                          \
    }                                                                                              \
    static void max_row_##T(const pool_geom *g, const T *restrict x, T *restrict y,                \
                            int64_t *restrict idx, int64_t base, int64_t od, int64_t oh,           \
                            int64_t ow_begin, int64_t ow_end)                                      \
    {                                                                                              \
        const int64_t D = g->in[0], H = g->in[1], W = g->in[2];                                    \
        const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1];                  \
        const int64_t d0 = g->lo[0][od], d1 = g->hi[0][od];                                        \
        const int64_t h0 = g->lo[1][oh], h1 = g->hi[1][oh];                                        \
        const int64_t dd = g->d[0], dh = g->d[1], dw = g->d[2];                                    \
        for (int64_t ow = ow_begin; ow < ow_end; ow++) {                                           \
            const int64_t sw = ow * g->s[2] - g->pb[2];                                            \
            const int64_t w0 = g->lo[2][ow], w1 = g->hi[2][ow];                                    \
            T best = 0;                                                                            \
            int64_t at = -1; /* offset in the plane of best */                                     \
            for (int64_t a = d0; a < d1; a++)                                                      \
                for (int64_t b = h0; b < h1; b++) {                                                \
                    const int64_t r = ((sd + a * dd) * H + sh + b * dh) * W + sw;                  \
                    for (int64_t c = w0; c < w1; c++) {                                            \
                        T v = x[r + c * dw];                                                       \
                        if (at < 0 || v > best) {                                                  \
                            best = v;                                                              \
                            at = r + c * dw;                                                       \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            y[ow] = best;                                                                          \
            if (idx) {                                                                             \
                if (at < 0) {                                                                      \
                    idx[ow] = -1;                                                                  \
                } else if (g->column_major) {                                                      \
                    int64_t pw = at % W, ph = at / W % H, pd = at / (W * H);                       \
                    idx[ow] = base + pd + ph * D + pw * D * H;                                     \
                } else {                                                                           \
                    idx[ow] = base + at;                                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* Fold one kernel tap into n outputs: y[i] = (op)(y[i], src[i * step]); `first` stores.       \
     * Inlined with step 1 for the contiguous, vectorized case. */                                 \
    static inline void tap_##T(og_pool_kind kind, bool first, T *restrict y,                       \
                               const T *restrict src, int64_t step, int64_t n)                     \
    {                                                                                              \
        if (first)                                                                                 \
            for (int64_t i = 0; i < n; i++) y[i] = src[i * step];                                  \
        else if (kind == OG_POOL_AVG)                                                              \
            for (int64_t i = 0; i < n; i++) y[i] += src[i * step];                                 \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) y[i] = src[i * step] > y[i] ? src[i * step] : y[i];    \
    }                                                                                              \
    /* Kernel width kw in {2, 3} at stride 2 along W, dilation 1: the taps of one input row        \
     * folded into n outputs in a single pass (constant offsets, so the loop vectorizes as a       \
     * deinterleave).  Same fold order as tap_##T, so the results are identical. */                \
    static inline void row_s2_##T(og_pool_kind kind, bool first, int64_t kw, T *restrict y,        \
                                  const T *restrict r, int64_t n)                                  \
    {                                                                                              \
        if (kind == OG_POOL_AVG) {                                                                 \
            if (kw == 2) {                                                                         \
                if (first)                                                                         \
                    for (int64_t i = 0; i < n; i++) y[i] = r[2 * i] + r[2 * i + 1];                \
                else                                                                               \
                    for (int64_t i = 0; i < n; i++) y[i] = y[i] + r[2 * i] + r[2 * i + 1];         \
            } else if (first) {                                                                    \
                for (int64_t i = 0; i < n; i++) y[i] = r[2 * i] + r[2 * i + 1] + r[2 * i + 2];     \
            } else {                                                                               \
                for (int64_t i = 0; i < n; i++)                                                    \
                    y[i] = y[i] + r[2 * i] + r[2 * i + 1] + r[2 * i + 2];                          \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = first ? r[2 * i] : (r[2 * i] > y[i] ? r[2 * i] : y[i]);                          \
            v = r[2 * i + 1] > v ? r[2 * i + 1] : v;                                               \
            if (kw == 3) v = r[2 * i + 2] > v ? r[2 * i + 2] : v;                                  \
            y[i] = v;                                                                              \
        }                                                                                          \
    }                                                                                              \
    /* 2x2 stride 2 max/avg over two whole input rows (r0, r1): the LeNet/VGG pool. */             \
    static void rows_2x2_##T(og_pool_kind kind, T *restrict y, const T *restrict r0,               \
                             const T *restrict r1, int64_t n)                                      \
    {                                                                                              \
        if (kind == OG_POOL_AVG) {                                                                 \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = (r0[2 * i] + r0[2 * i + 1] + r1[2 * i] + r1[2 * i + 1]) * (T)0.25;          \
            return;                                                                                \
        }                                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = r0[2 * i];                                                                       \
            v = r0[2 * i + 1] > v ? r0[2 * i + 1] : v;                                             \
            v = r1[2 * i] > v ? r1[2 * i] : v;                                                     \
            v = r1[2 * i + 1] > v ? r1[2 * i + 1] : v;                                             \
            y[i] = v;                                                                              \
        }                                                                                          \
    }                                                                                              \
    /* 2x2 stride 2 max over two input rows (r0, r1) with the indices of the maxima, row-major:    \
     * the first of the taps (r0[2i], r0[2i+1], r1[2i], r1[2i+1]) that no later one exceeds,       \
     * as max_row; i0 is the flattened index of r0[0] and W the input row length.  The choices     \
     * are made with masks rather than branches, so that the loop vectorizes. */                   \
    static void rows_2x2_idx_##T(T *restrict y, int64_t *restrict idx, const T *restrict r0,       \
                                 const T *restrict r1, int64_t W, int64_t i0, int64_t n)           \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = r0[2 * i], u = r0[2 * i + 1];                                                    \
            int64_t m = -(int64_t)(u > v), off = 1 & m;                                            \
            v = u > v ? u : v;                                                                     \
            u = r1[2 * i];                                                                         \
            m = -(int64_t)(u > v);                                                                 \
            off = (off & ~m) | (W & m);                                                            \
            v = u > v ? u : v;                                                                     \
            u = r1[2 * i + 1];                                                                     \
            m = -(int64_t)(u > v);                                                                 \
            off = (off & ~m) | ((W + 1) & m);                                                      \
            v = u > v ? u : v;                                                                     \
            y[i] = v;                                                                              \
            idx[i] = i0 + 2 * i + off;                                                             \
        }                                                                                          \
    }                                                                                              \
    /* Outputs [ow0, ow1) of a max pool row with indices (row-major), whose windows lie inside     \
     * the input along W: the taps outermost in max_row's order, a tap replacing the maximum       \
     * only when strictly greater, so that the values and indices are max_row's. */                \
    static void interior_max_idx_##T(const pool_geom *g, const T *restrict x, T *restrict y,       \
                                     int64_t *restrict idx, int64_t base, int64_t od, int64_t oh)  \
    {                                                                                              \
        const int64_t H = g->in[1], W = g->in[2], ow0 = g->ow0, n = g->ow1 - g->ow0;               \
        const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1];                  \
        const int64_t d0 = g->lo[0][od], d1 = g->hi[0][od];                                        \
        const int64_t h0 = g->lo[1][oh], h1 = g->hi[1][oh];                                        \
        const int64_t sw = g->s[2], kw = g->k[2];                                                  \
        T *restrict yy = y + ow0;                                                                  \
        int64_t *restrict ii = idx + ow0;                                                          \
        if (kw == 2 && sw == 2 && g->d[2] == 1 && d1 - d0 == 1 && h1 - h0 == 2 && g->d[1] == 1) {  \
            const int64_t r = ((sd + d0 * g->d[0]) * H + sh + h0) * W + ow0 * 2 - g->pb[2];        \
            rows_2x2_idx_##T(yy, ii, x + r, x + r + W, W, base + r, n);                            \
            return;                                                                                \
        }                                                                                          \
        bool first = true;                                                                         \
        for (int64_t a = d0; a < d1; a++)                                                          \
            for (int64_t b = h0; b < h1; b++) {                                                    \
                const int64_t row = ((sd + a * g->d[0]) * H + sh + b * g->d[1]) * W;               \
                for (int64_t c = 0; c < kw; c++) {                                                 \
                    /* plane offset of this tap for output ow0 (inside: >= 0) */                   \
                    const int64_t off = row + ow0 * sw + c * g->d[2] - g->pb[2];                   \
                    const T *restrict src = x + off;                                               \
                    if (first) {                                                                   \
                        for (int64_t i = 0; i < n; i++) {                                          \
                            yy[i] = src[i * sw];                                                   \
                            ii[i] = base + off + i * sw;                                           \
                        }                                                                          \
                        first = false;                                                             \
                        continue;                                                                  \
                    }                                                                              \
                    for (int64_t i = 0; i < n; i++) { /* masks: see rows_2x2_idx */                \
                        const T v = src[i * sw], cur = yy[i];                                      \
                        const int64_t m = -(int64_t)(v > cur);                                     \
                        ii[i] = (ii[i] & ~m) | ((base + off + i * sw) & m);                        \
                        yy[i] = v > cur ? v : cur;                                                 \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        if (first) /* no tap inside the input along D or H */                                      \
            for (int64_t i = 0; i < n; i++) {                                                      \
                yy[i] = 0;                                                                         \
                ii[i] = -1;                                                                        \
            }                                                                                      \
    }                                                                                              \
    /* Outputs [ow0, ow1) of a row, whose windows lie inside the input along W: the taps run       \
     * outermost and the loop over outputs is innermost, contiguous when the stride is 1. */       \
    static void interior_row_##T(const pool_geom *g, og_pool_kind kind, const T *restrict x,       \
                                 T *restrict y, int64_t od, int64_t oh)                            \
    {                                                                                              \
        const int64_t H = g->in[1], W = g->in[2], ow0 = g->ow0, ow1 = g->ow1;                      \
        const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1];                  \
        const int64_t d0 = g->lo[0][od], d1 = g->hi[0][od];                                        \
        const int64_t h0 = g->lo[1][oh], h1 = g->hi[1][oh];                                        \
        const int64_t sw = g->s[2], kw = g->k[2];                                                  \
        const bool s2 = sw == 2 && g->d[2] == 1 && (kw == 2 || kw == 3);                           \
        bool first = true;                                                                         \
        if (s2 && kw == 2 && d1 - d0 == 1 && h1 - h0 == 2 && g->d[1] == 1 &&                       \
            (kind == OG_POOL_MAX || g->kvol == 4)) {                                               \
            /* a full 2x2 window in one pass (avg: all four taps inside, divisor 4) */             \
            const T *r0 = x + ((sd + d0 * g->d[0]) * H + sh + h0) * W + ow0 * 2 - g->pb[2];        \
            rows_2x2_##T(kind, y + ow0, r0, r0 + W, ow1 - ow0);                                    \
            return;                                                                                \
        }                                                                                          \
        for (int64_t a = d0; a < d1; a++)                                                          \
            for (int64_t b = h0; b < h1; b++) {                                                    \
                const T *restrict row = x + ((sd + a * g->d[0]) * H + sh + b * g->d[1]) * W;       \
                if (s2) {                                                                          \
                    row_s2_##T(kind, first, kw, y + ow0, row + ow0 * 2 - g->pb[2], ow1 - ow0);     \
                    first = false;                                                                 \
                    continue;                                                                      \
                }                                                                                  \
                for (int64_t c = 0; c < kw; c++) {                                                 \
                    const int64_t off = c * g->d[2] - g->pb[2]; /* >= -ow0 * sw */                 \
                    if (sw == 1)                                                                   \
                        tap_##T(kind, first, y + ow0, row + ow0 + off, 1, ow1 - ow0);              \
                    else                                                                           \
                        tap_##T(kind, first, y + ow0, row + ow0 * sw + off, sw, ow1 - ow0);        \
                    first = false;                                                                 \
                }                                                                                  \
            }                                                                                      \
        if (first) /* no tap inside the input along D or H */                                      \
            for (int64_t ow = ow0; ow < ow1; ow++) y[ow] = 0;                                      \
        else if (kind == OG_POOL_AVG) {                                                            \
            int64_t cnt = g->include_pad ? g->kvol : (d1 - d0) * (h1 - h0) * kw;                   \
            const T inv = (T)1 / (T)cnt;                                                           \
            for (int64_t ow = ow0; ow < ow1; ow++) y[ow] *= inv;                                   \
        }                                                                                          \
    }                                                                                              \
    static T global_plane_##T(og_pool_kind kind, const T *restrict p, int64_t n)                   \
    {                                                                                              \
        if (n <= 0) return (T)0;                                                                   \
        /* eight independent lanes so that the loops vectorize without reassociation flags */      \
        int64_t i = 0;                                                                             \
        if (kind == OG_POOL_AVG) return (T)(gap_sum_##T(p, n) / (double)n);                        \
        T m = p[0];                                                                                \
        if (n >= 8) {                                                                              \
            T m8[8];                                                                               \
            for (int j = 0; j < 8; j++) m8[j] = p[j];                                              \
            for (i = 8; i + 8 <= n; i += 8)                                                        \
                for (int j = 0; j < 8; j++) m8[j] = p[i + j] > m8[j] ? p[i + j] : m8[j];           \
            for (int j = 0; j < 8; j++) m = m8[j] > m ? m8[j] : m;                                 \
        }                                                                                          \
        for (; i < n; i++) m = p[i] > m ? p[i] : m;                                                \
        return m;                                                                                  \
    }                                                                                              \
    typedef struct global_job_##T {                                                                \
        og_pool_kind kind;                                                                         \
        int64_t n;                                                                                 \
        const T *x;                                                                                \
        T *y;                                                                                      \
    } global_job_##T;                                                                              \
    static void global_range_##T(void *ctx, int64_t p0, int64_t p1, int slot)                      \
    {                                                                                              \
        const global_job_##T *j = ctx;                                                             \
        (void)slot;                                                                                \
        for (int64_t pl = p0; pl < p1; pl++)                                                       \
            j->y[pl] = global_plane_##T(j->kind, j->x + pl * j->n, j->n);                          \
    }                                                                                              \
    static void global_##T(const og_kernel_ctx *k, og_pool_kind kind, int64_t planes, int64_t n,   \
                           const void *xv, void *yv)                                               \
    {                                                                                              \
        /* one pass over X: a stream */                                                            \
        global_job_##T j = {kind, n, xv, yv};                                                      \
        og_par_for(k, planes, (double)n, OG_PAR_MIN_STREAM, global_range_##T, &j);                 \
    }                                                                                              \
    /* Output row (pl, od, oh): the interior in one pass, then the border outputs. */              \
    static void pool_row_##T(const og_pool_params *p, const pool_geom *g, const T *xp, T *yr,      \
                             int64_t *ir, int64_t base, int64_t od, int64_t oh)                    \
    {                                                                                              \
        /* the interior path when there are interior outputs and no indices to report, or          \
         * row-major indices of a max pool */                                                      \
        int64_t i0 = 0, i1 = 0;                                                                    \
        if (g->ow1 > g->ow0 && (!ir || (p->kind == OG_POOL_MAX && !g->column_major))) {            \
            i0 = g->ow0;                                                                           \
            i1 = g->ow1;                                                                           \
            if (ir)                                                                                \
                interior_max_idx_##T(g, xp, yr, ir, base, od, oh);                                 \
            else                                                                                   \
                interior_row_##T(g, p->kind, xp, yr, od, oh);                                      \
        }                                                                                          \
        const int64_t j0 = i1 > i0 ? i1 : 0; /* border outputs: [0, i0) and [j0, OW) */            \
        if (i0 == 0 && j0 == g->out[2]) return;                                                    \
        if (p->kind == OG_POOL_AVG) {                                                              \
            avg_row_##T(g, xp, yr, od, oh, 0, i0);                                                 \
            avg_row_##T(g, xp, yr, od, oh, j0, g->out[2]);                                         \
        } else {                                                                                   \
            max_row_##T(g, xp, yr, ir, base, od, oh, 0, i0);                                       \
            max_row_##T(g, xp, yr, ir, base, od, oh, j0, g->out[2]);                               \
        }                                                                                          \
    }                                                                                              \
    /* Output rows [r0, r1) of all (plane, od, oh) rows, the position stepped, not divided. */     \
    static void pool_rows_##T(const og_pool_params *p, const pool_geom *g, const T *x, T *y,       \
                              int64_t *idx, int64_t r0, int64_t r1)                                \
    {                                                                                              \
        const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];                              \
        int64_t pl = r0 / (OD * OH), od = r0 / OH % OD, oh = r0 % OH;                              \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const T *xp = x + pl * g->in_plane;                                                    \
            T *yr = y + r * OW;                                                                    \
            if (g->full2x2 && !idx) {                                                              \
                const T *x0 = xp + (od * g->in[1] + 2 * oh) * g->in[2];                            \
                rows_2x2_##T(p->kind, yr, x0, x0 + g->in[2], OW);                                  \
            } else if (g->full2x2 && p->kind == OG_POOL_MAX && !g->column_major) {                 \
                const int64_t off = (od * g->in[1] + 2 * oh) * g->in[2]; /* of row 2 * oh */       \
                rows_2x2_idx_##T(yr, idx + r * OW, xp + off, xp + off + g->in[2], g->in[2],        \
                                 pl * g->in_plane + off, OW);                                      \
            } else {                                                                               \
                pool_row_##T(p, g, xp, yr, idx ? idx + (r * OW) : NULL, pl * g->in_plane, od, oh); \
            }                                                                                      \
            if (++oh == OH) {                                                                      \
                oh = 0;                                                                            \
                if (++od == OD) {                                                                  \
                    od = 0;                                                                        \
                    pl++;                                                                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    typedef struct pool_job_##T {                                                                  \
        const og_pool_params *p;                                                                   \
        const pool_geom *g;                                                                        \
        const T *x;                                                                                \
        T *y;                                                                                      \
        int64_t *idx;                                                                              \
    } pool_job_##T;                                                                                \
    static void pool_range_##T(void *ctx, int64_t r0, int64_t r1, int slot)                        \
    {                                                                                              \
        const pool_job_##T *j = ctx;                                                               \
        (void)slot;                                                                                \
        pool_rows_##T(j->p, j->g, j->x, j->y, j->idx, r0, r1);                                     \
    }                                                                                              \
    static void pool_##T(const og_kernel_ctx *k, const og_pool_params *p, const pool_geom *g,      \
                         const void *xv, void *yv, int64_t *idx)                                   \
    {                                                                                              \
        /* blocks of rows, a few per thread, so that a row costs no division */                    \
        pool_job_##T j = {p, g, xv, yv, idx};                                                      \
        og_par_for(k, g->planes * g->out[0] * g->out[1], (double)(g->out[2] * g->kvol),            \
                   OG_PAR_MIN_COMPUTE, pool_range_##T, &j);                                        \
    }

DEFINE_POOL_ROWS(float)
DEFINE_POOL_ROWS(double)
/* MaxPool-12+ also takes int8 and uint8 (select_pool binds these for MaxPool only: the
 * average paths instantiated with them are never reached).  Only taps inside the input
 * are compared, so a pad is never the maximum, for any type. */
DEFINE_POOL_ROWS(int8_t)
DEFINE_POOL_ROWS(uint8_t)

/* The typed loops of one element type: the binding's impl, chosen once per node when the
 * session is created (select_pool), so that a run does not branch on the dtype. */
typedef struct pool_loops {
    void (*global)(const og_kernel_ctx *k, og_pool_kind kind, int64_t planes, int64_t n,
                   const void *x, void *y);
    void (*pool)(const og_kernel_ctx *k, const og_pool_params *p, const pool_geom *g, const void *x,
                 void *y, int64_t *idx);
} pool_loops;

#ifdef OG_CPU_X86
/* GlobalAveragePool of float planes of at most 8 values (2x2 at the end of a network at
 * 64x64), 8 planes at a time: lane j sums plane j's values in order in double, as
 * GAP_SUM does for such planes (0 + p0 + p1 + ..., the same bits), where one plane at a
 * time cost more per plane than its few adds.  Planes of at most 4 values are permuted out
 * of two vectors, larger ones gathered.  MobileNet-v2 at 8x64x64: 10240 planes of 4 values
 * 0.038 -> 0.005 ms in the network (gathered: 0.029). */
static OG_TARGET_AVX512 void gap_small_f32(int64_t planes, int64_t n, const float *x, float *y)
{
    const __m256i at = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                          _mm256_set1_epi32((int)n)); /* plane j's first value */
    const __m512d dn = _mm512_set1_pd((double)n);
    int64_t pl = 0;
    for (; pl + 8 <= planes; pl += 8) {
        const float *p = x + pl * n;
        __m512d s = _mm512_setzero_pd();
        if (n <= 4) { /* the 8 planes' 8n values in two vectors, value i of each permuted out */
            const __mmask16 ma = (__mmask16)(8 * n >= 16 ? 0xFFFF : (1u << (8 * n)) - 1u);
            const __mmask16 mb = (__mmask16)(8 * n > 16 ? (1u << (8 * n - 16)) - 1u : 0u);
            const __m512 a = _mm512_maskz_loadu_ps(ma, p), b = _mm512_maskz_loadu_ps(mb, p + 16);
            for (int64_t i = 0; i < n; i++) {
                const __m512i ix =
                    _mm512_zextsi256_si512(_mm256_add_epi32(at, _mm256_set1_epi32((int)i)));
                s = _mm512_add_pd(
                    s, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_permutex2var_ps(a, ix, b))));
            }
        } else
            for (int64_t i = 0; i < n; i++)
                s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm256_i32gather_ps(p + i, at, 4)));
        _mm256_storeu_ps(y + pl, _mm512_cvtpd_ps(_mm512_div_pd(s, dn)));
    }
    for (; pl < planes; pl++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += x[pl * n + i];
        y[pl] = (float)(s / (double)n);
    }
}
#endif

#ifdef OG_CPU_X86
/* The mean of plane p (n values) from its eight lanes of double sums: GAP_SUM's end (the
 * tail in order from 0, then the lanes in order). */
static OG_TARGET_AVX512 double gap_finish(const float *p, int64_t n, __m512d acc)
{
    double lanes[8], s = 0;
    _mm512_storeu_pd(lanes, acc);
    for (int64_t i = n / 8 * 8; i < n; i++) s += p[i];
    for (int j = 0; j < 8; j++) s += lanes[j];
    return s / (double)n;
}

/* GlobalAveragePool of float planes of 9 to 255 values (the squeezes of EfficientNet-B0 and
 * MobileNet-v3: 7x7 to 28x28), planes [p0, p1), four at a time: each plane's eight lanes
 * of double sums in GAP_SUM's order (the same bits), the four planes' chains of adds side
 * by side, where one plane's chain waited on every add's latency.  On an AMD EPYC (Zen 4),
 * one thread, runs alternating in one process: EfficientNet-B0's squeezes 0.25 -> 0.17 ms
 * in all, at 8x64x64 0.32 -> 0.17 (two threads 0.136 -> 0.079), MobileNet-v3's 0.054 ->
 * 0.033. */
static OG_TARGET_AVX512 void gap_mid_f32(const float *x, int64_t n, int64_t p0, int64_t p1,
                                         float *y)
{
    const int64_t n8 = n / 8 * 8;
    int64_t pl = p0;
    for (; pl + 4 <= p1; pl += 4) {
        const float *p = x + pl * n;
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t i = 0; i < n8; i += 8) {
            a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(p + i)));
            a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(p + n + i)));
            a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(p + 2 * n + i)));
            a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(p + 3 * n + i)));
        }
        y[pl] = (float)gap_finish(p, n, a0);
        y[pl + 1] = (float)gap_finish(p + n, n, a1);
        y[pl + 2] = (float)gap_finish(p + 2 * n, n, a2);
        y[pl + 3] = (float)gap_finish(p + 3 * n, n, a3);
    }
    for (; pl < p1; pl++) {
        const float *p = x + pl * n;
        __m512d a = _mm512_setzero_pd();
        for (int64_t i = 0; i < n8; i += 8)
            a = _mm512_add_pd(a, _mm512_cvtps_pd(_mm256_loadu_ps(p + i)));
        y[pl] = (float)gap_finish(p, n, a);
    }
}

typedef struct gap_mid_job {
    const float *x;
    float *y;
    int64_t n;
} gap_mid_job;

static void gap_mid_range(void *ctx, int64_t p0, int64_t p1, int slot)
{
    const gap_mid_job *j = ctx;
    (void)slot;
    gap_mid_f32(j->x, j->n, p0, p1, j->y);
}
#endif

static void global_f32(const og_kernel_ctx *k, og_pool_kind kind, int64_t planes, int64_t n,
                       const void *x, void *y)
{
#ifdef OG_CPU_X86
    if (kind == OG_POOL_AVG && n >= 1 && n <= 8 && planes >= 8 && og_cpu_isa() >= 2) {
        gap_small_f32(planes, n, x, y);
        return;
    }
    if (kind == OG_POOL_AVG && n > 8 && n < 256 && og_cpu_isa() >= 2) {
        gap_mid_job j = {x, y, n};
        og_par_for(k, planes, (double)n, OG_PAR_MIN_STREAM, gap_mid_range, &j);
        return;
    }
#endif
    global_float(k, kind, planes, n, x, y);
}

static const pool_loops pool_loops_float = {global_f32, pool_float};
static const pool_loops pool_loops_double = {global_double, pool_double};
static const pool_loops pool_loops_int8 = {global_int8_t, pool_int8_t};
static const pool_loops pool_loops_uint8 = {global_uint8_t, pool_uint8_t};
/* float16: no loops of its own, computed on float32 copies (og_kernel_via_f32): a maximum is
 * exact that way, an average rounded once */
static const pool_loops pool_loops_half = {NULL, NULL};

/* The loops of dtype t for pool p: float and double for every pool, int8 and uint8 for a
 * windowed MaxPool only (AveragePool and the global pools have no integer types). */
static const pool_loops *pool_loops_of(const og_pool_params *p, og_dtype t)
{
    bool ints = p && p->kind == OG_POOL_MAX && !p->global;
    switch (t) {
    case OG_FLOAT: return &pool_loops_float;
    case OG_DOUBLE: return &pool_loops_double;
    case OG_FLOAT16: return &pool_loops_half;
    case OG_INT8: return ints ? &pool_loops_int8 : NULL;
    case OG_UINT8: return ints ? &pool_loops_uint8 : NULL;
    default: return NULL;
    }
}

static const void *select_pool(const og_node *n, og_dtype t) { return pool_loops_of(n->params, t); }

/* MaxPool 3x3 stride 2 on float planes (ResNet's after its stem), AVX-512: 16 outputs of a
 * row at a time, each tap a permutation of two vectors of an input row.  A tap outside the
 * input is read as the nearest one inside (its index clamped to the plane: with pads of at
 * most 1 and every window starting inside or in the pad, that is a tap of the same window,
 * the next one on the left or top, an earlier one on the right or bottom), which gives the
 * fold of the rows loop (strictly greater replaces, from the first tap inside) bit for
 * bit: folding a value of the window again changes nothing, NaN and signed zeros
 * included. */
#define MP3_MAX_BLOCKS 64 /* blocks of 16 outputs per row (1024 outputs) */

#ifdef OG_CPU_X86
typedef struct mp3_block {
    int64_t base;       /* first input column the block loads */
    int64_t fix;        /* lane 15's third tap (base + 32), -1: none */
    __mmask16 mlo, mhi; /* the loads' lanes inside the row */
    __mmask16 st;       /* the outputs of the block */
    int32_t idx[3][16]; /* tap c of lane i: its column - base, in [0, 32) */
    int32_t col[3][16]; /* tap c of lane i: its column (clamped), for the Indices */
} mp3_block;

static bool mp3_applies(const og_pool_params *p, const pool_geom *g, bool indices)
{
    if (p->kind != OG_POOL_MAX || og_cpu_isa() < 2 || g->in[0] != 1 || g->k[0] != 1 ||
        (indices && (g->column_major || g->in_plane > INT32_MAX)))
        return false;
    for (int j = 1; j < 3; j++)
        if (g->k[j] != 3 || g->s[j] != 2 || g->d[j] != 1 || g->pb[j] > 1 ||
            2 * (g->out[j] - 1) - g->pb[j] > g->in[j] - 1)
            return false;
    return g->out[2] <= 16 * MP3_MAX_BLOCKS;
}

static int64_t mp3_clamp(int64_t v, int64_t n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }

static void mp3_plan(const pool_geom *g, mp3_block *b, int64_t nb)
{
    const int64_t W = g->in[2], OW = g->out[2], pb = g->pb[2];
    for (int64_t bi = 0; bi < nb; bi++) {
        const int64_t o0 = 16 * bi, n = OW - o0 < 16 ? OW - o0 : 16;
        const int64_t base = 2 * o0 - pb > 0 ? 2 * o0 - pb : 0;
        const int64_t left = W - base;
        b[bi].base = base;
        b[bi].fix = -1;
        b[bi].mlo = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
        b[bi].mhi = (__mmask16)(left >= 32 ? 0xFFFF : left > 16 ? (1u << (left - 16)) - 1u : 0);
        b[bi].st = (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1u);
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < 16; i++) {
                const int64_t t = i < n ? mp3_clamp(2 * (o0 + i) - pb + c, W) - base : 0;
                if (t >= 32) b[bi].fix = t + base; /* lane 15, c = 2 */
                b[bi].idx[c][i] = (int32_t)(t >= 32 ? 0 : t);
                b[bi].col[c][i] = (int32_t)(t + base);
            }
    }
}

/* Output rows [r0, r1) of all (plane, oh) rows. */
static OG_TARGET_AVX512 void mp3_rows(const pool_geom *g, const mp3_block *b, int64_t nb,
                                      const float *x, float *y, int64_t r0, int64_t r1)
{
    const int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2], pb = g->pb[1];
    const bool pf = og_prefetch_planes(g->in_plane * (int64_t)sizeof(float),
                                       (double)g->planes * (double)g->in_plane * 4.0);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t pl = r / OH, oh = r % OH;
        if (pf && oh == 0 && pl + 1 < g->planes) /* the next plane, at this one's first row */
            og_prefetch_l1(x + (pl + 1) * g->in_plane, g->in_plane * (int64_t)sizeof(float));
        const float *rows[3];
        for (int a = 0; a < 3; a++)
            rows[a] = x + pl * g->in_plane + mp3_clamp(2 * oh - pb + a, H) * W;
        float *yr = y + r * OW;
        for (int64_t bi = 0; bi < nb; bi++) {
            const mp3_block *bk = &b[bi];
            const __m512i i0 = _mm512_loadu_si512(bk->idx[0]), i1 = _mm512_loadu_si512(bk->idx[1]);
            const __m512i i2 = _mm512_loadu_si512(bk->idx[2]);
            __m512 acc = _mm512_setzero_ps();
            for (int a = 0; a < 3; a++) {
                const float *row = rows[a] + bk->base;
                const __m512 lo = _mm512_maskz_loadu_ps(bk->mlo, row);
                const __m512 hi = _mm512_maskz_loadu_ps(bk->mhi, row + 16);
                const __m512 t0 = _mm512_permutex2var_ps(lo, i0, hi);
                const __m512 t1 = _mm512_permutex2var_ps(lo, i1, hi);
                __m512 t2 = _mm512_permutex2var_ps(lo, i2, hi);
                if (bk->fix >= 0)
                    t2 = _mm512_mask_blend_ps((__mmask16)0x8000, t2,
                                              _mm512_set1_ps(rows[a][bk->fix]));
                /* max_ps(v, acc): v > acc ? v : acc, the rows loop's step */
                acc = a == 0 ? t0 : _mm512_max_ps(t0, acc);
                acc = _mm512_max_ps(t1, acc);
                acc = _mm512_max_ps(t2, acc);
            }
            _mm512_mask_storeu_ps(yr + 16 * bi, bk->st, acc);
        }
    }
}

/* mp3_rows with the Indices (row-major, flattened over X): each tap's value replaces the
 * maximum where strictly greater (the compare max_ps makes), its position with it; a
 * clamped tap's position is that of the tap it repeats, so the first maximum in the rows
 * loop's order keeps its index (MaxPool's gradient recomputes these: ResNet-18 8x64x64's
 * took 1.39 ms in the rows loop). */
static OG_TARGET_AVX512 void mp3_rows_idx(const pool_geom *g, const mp3_block *b, int64_t nb,
                                          const float *x, float *y, int64_t *ind, int64_t r0,
                                          int64_t r1)
{
    const int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2], pb = g->pb[1];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t pl = r / OH, oh = r % OH;
        const float *rows[3];
        int32_t roff[3];
        for (int a = 0; a < 3; a++) {
            const int64_t ra = mp3_clamp(2 * oh - pb + a, H);
            rows[a] = x + pl * g->in_plane + ra * W;
            roff[a] = (int32_t)(ra * W);
        }
        float *yr = y + r * OW;
        int64_t *ir = ind + r * OW;
        const __m512i plane = _mm512_set1_epi64(pl * g->in_plane);
        for (int64_t bi = 0; bi < nb; bi++) {
            const mp3_block *bk = &b[bi];
            __m512i ix[3], col[3];
            for (int c = 0; c < 3; c++) {
                ix[c] = _mm512_loadu_si512(bk->idx[c]);
                col[c] = _mm512_loadu_si512(bk->col[c]);
            }
            __m512 acc = _mm512_setzero_ps();
            __m512i at = _mm512_setzero_si512();
            for (int a = 0; a < 3; a++) {
                const float *row = rows[a] + bk->base;
                const __m512 lo = _mm512_maskz_loadu_ps(bk->mlo, row);
                const __m512 hi = _mm512_maskz_loadu_ps(bk->mhi, row + 16);
                const __m512i ro = _mm512_set1_epi32(roff[a]);
                for (int c = 0; c < 3; c++) {
                    __m512 t = _mm512_permutex2var_ps(lo, ix[c], hi);
                    if (c == 2 && bk->fix >= 0)
                        t = _mm512_mask_blend_ps((__mmask16)0x8000, t,
                                                 _mm512_set1_ps(rows[a][bk->fix]));
                    const __m512i pos = _mm512_add_epi32(ro, col[c]);
                    if (a == 0 && c == 0) {
                        acc = t;
                        at = pos;
                        continue;
                    }
                    const __mmask16 gt = _mm512_cmp_ps_mask(t, acc, _CMP_GT_OQ);
                    acc = _mm512_mask_blend_ps(gt, acc, t);
                    at = _mm512_mask_blend_epi32(gt, at, pos);
                }
            }
            _mm512_mask_storeu_ps(yr + 16 * bi, bk->st, acc);
            const __m512i a0 =
                _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(at)), plane);
            const __m512i a1 =
                _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(at, 1)), plane);
            _mm512_mask_storeu_epi64(ir + 16 * bi, (__mmask8)(bk->st & 0xFF), a0);
            _mm512_mask_storeu_epi64(ir + 16 * bi + 8, (__mmask8)(bk->st >> 8), a1);
        }
    }
}

typedef struct mp3_job {
    const pool_geom *g;
    const mp3_block *b;
    int64_t nb;
    const float *x;
    float *y;
    int64_t *ind; /* NULL: no Indices */
} mp3_job;

static void mp3_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const mp3_job *j = ctx;
    (void)slot;
    if (j->ind)
        mp3_rows_idx(j->g, j->b, j->nb, j->x, j->y, j->ind, i0, i1);
    else
        mp3_rows(j->g, j->b, j->nb, j->x, j->y, i0, i1);
}
#endif

/* MaxPool 3x3 stride 2 of float X by mp3_rows when it applies; false (nothing done) else. */
static bool mp3_pool(const og_kernel_ctx *k, const og_pool_params *p, const pool_geom *g,
                     const void *x, void *y, void *indices)
{
#ifdef OG_CPU_X86
    if (!mp3_applies(p, g, indices != NULL)) return false;
    mp3_block b[MP3_MAX_BLOCKS];
    const int64_t nb = (g->out[2] + 15) / 16, rows = g->planes * g->out[1];
    mp3_plan(g, b, nb);
    /* a stream over X: a second thread where the session's workers take it (the caller
     * does not wait for one asleep), else from OG_PAR_MIN_STREAM input values (ResNet-18's
     * pool at 1x64x112x112 took 0.28 ms on two threads through an OpenMP region with
     * blocking waits, 0.12 on one) */
    const double in = (double)g->planes * (double)g->in_plane;
    const int threads =
        k->threads > 1 && (k->workers ? in >= 262144.0 : in >= OG_PAR_MIN_STREAM) ? k->threads : 1;
    mp3_job j = {g, b, nb, x, y, indices};
    /* chunks of an eighth of a thread's share (8 rows at least): each chunk is claimed
     * from one counter both cores write, and ResNet-18 at 8x64x64 (8192 rows of 16) took
     * 0.17 ms in chunks of 8 rows on two threads, 0.07 in chunks of 256 */
    const int64_t grain = rows / (8 * threads) > 8 ? rows / (8 * threads) : 8;
    og_par_range(k, threads, rows, grain, mp3_range, &j);
    return true;
#else
    (void)k, (void)p, (void)g, (void)x, (void)y, (void)indices;
    return false;
#endif
}

static og_status pool_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_pool_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0], *ind = n_out > 1 ? out[1] : NULL;
    /* k->impl: the loops bound at session creation; without a binding, pick them here */
    const pool_loops *loops = k->impl ? k->impl : pool_loops_of(p, x->dtype);
    if (!loops)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (loops == &pool_loops_half) {
        og_kernel_ctx call = *k;
        call.impl = &pool_loops_float;
        return og_kernel_via_f32(&call, pool_kernel, in, n_in, out, n_out);
    }
    if (y->numel == 0) return OG_OK;
    if (p->global) {
        int64_t planes = x->rank >= 2 ? x->dims[0] * x->dims[1] : 1;
        int64_t n = planes ? x->numel / planes : 0;
        loops->global(k, p->kind, planes, n, x->data, y->data);
        return OG_OK;
    }
    pool_geom g;
    int64_t *scratch = NULL;
    og_status st = pool_setup(k, p, x, y, &g, &scratch);
    if (st) goto done;
    if (loops != &pool_loops_float || !mp3_pool(k, p, &g, x->data, y->data, ind ? ind->data : NULL))
        loops->pool(k, p, &g, x->data, y->data, ind ? ind->data : NULL);
done:
    og_free(k->alloc, scratch);
    (void)n_in;
    return st;
}

/* LpPool: y = (Σ_window |x|^p)^(1/p), the padding counting as zeros: an average pool of
 * |x|^p that divides by the kernel volume, times that volume, to the power 1/p.  The loops
 * of one type: t = |x|^p, the average pool's loops, y = (y·volume)^(1/p). */
typedef struct lppool_loops {
    void (*powers)(const void *x, void *t, int64_t n, int64_t p);
    const pool_loops *pool;
    void (*roots)(void *y, int64_t n, double kvol, int64_t p);
} lppool_loops;

static void lp_powers_float(const void *xv, void *tv, int64_t n, int64_t p)
{
    const float *xs = xv;
    float *ts = tv;
    double pp = (double)p;
    for (int64_t i = 0; i < n; i++)
        ts[i] = p == 1 ? fabsf(xs[i]) : p == 2 ? xs[i] * xs[i] : powf(fabsf(xs[i]), (float)pp);
}
static void lp_powers_double(const void *xv, void *tv, int64_t n, int64_t p)
{
    const double *xs = xv;
    double *ts = tv;
    double pp = (double)p;
    for (int64_t i = 0; i < n; i++)
        ts[i] = p == 1 ? fabs(xs[i]) : p == 2 ? xs[i] * xs[i] : pow(fabs(xs[i]), pp);
}
static void lp_roots_float(void *yv, int64_t n, double kvol, int64_t p)
{
    float *ys = yv;
    double pp = (double)p;
    for (int64_t i = 0; i < n; i++) {
        double v = ys[i] * kvol;
        ys[i] = (float)(p == 1 ? v : p == 2 ? sqrt(v) : pow(v, 1.0 / pp));
    }
}
static void lp_roots_double(void *yv, int64_t n, double kvol, int64_t p)
{
    double *ys = yv;
    double pp = (double)p;
    for (int64_t i = 0; i < n; i++) {
        double v = ys[i] * kvol;
        ys[i] = p == 1 ? v : p == 2 ? sqrt(v) : pow(v, 1.0 / pp);
    }
}

static const lppool_loops lppool_loops_t[2] = {
    {lp_powers_float, &pool_loops_float, lp_roots_float},
    {lp_powers_double, &pool_loops_double, lp_roots_double}};
OG_FLOAT_IMPLS(lppool_impls, &lppool_loops_t[0], &lppool_loops_t[1]);

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl) */
static const void *select_lppool(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(lppool_impls, t);
}

static og_status lppool_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_pool_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0], *t = NULL;
    const og_float_impl *im = og_float_bound(k, lppool_impls, x->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, lppool_kernel, in, n_in, out, n_out);
    const lppool_loops *loops = im->loops;
    if (y->numel == 0) return OG_OK;
    og_status st = og_tensor_alloc(x->dtype, x->rank, x->dims, k->alloc, &t);
    if (st) return st;
    loops->powers(x->data, t->data, x->numel, p->p);
    og_pool_params avg = *p;
    avg.kind = OG_POOL_AVG;
    avg.count_include_pad = true;
    og_kernel_ctx kk = *k;
    kk.params = &avg;
    kk.impl = loops->pool; /* the average pool's loops of this type */
    const og_tensor *tin[1] = {t};
    st = pool_kernel(&kk, tin, 1, out, 1);
    og_tensor_free(t);
    if (st) return st;
    double kvol = 1;
    for (int i = 0; i < p->nsp; i++) kvol *= (double)p->kernel[i];
    loops->roots(y->data, y->numel, kvol, p->p);
    return OG_OK;
}

/* MaxUnpool: zeros, then X[k] at position I[k] of the block the windows cover ([N, C,
 * covered spatial], row-major), which sits at the start of an output_shape that may be
 * larger.  A repeated index keeps the last value written. */
static og_status unpool_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_pool_params *p = k->params;
    const og_tensor *x = in[0], *ind = in[1];
    og_tensor *y = out[0];
    size_t es = og_dtype_size(x->dtype);
    int r = x->rank;
    int64_t cover[OG_MAX_RANK], total = 1;
    cover[0] = x->dims[0];
    cover[1] = x->dims[1];
    for (int d = 2; d < r; d++)
        if (!og_unpool_dim(p, d - 2, x->dims[d], &cover[d]))
            return og_kernel_error(k, OG_ERR_SHAPE, "spatial dim %d covers nothing", d);
    for (int d = 0; d < r; d++) total *= cover[d];
    if (y->numel) memset(y->data, 0, (size_t)y->numel * es);
    const int64_t *iv = ind->data;
    int64_t ys[OG_MAX_RANK];
    og_strides(r, y->dims, ys);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = iv[i], off = 0;
        if (q < 0 || q >= total)
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "input 1 (I) element %lld is %lld, outside the %lld positions "
                                   "the windows cover",
                                   (long long)i, (long long)q, (long long)total);
        for (int d = r - 1; d >= 0; d--) { /* covered position -> output offset */
            off += (q % cover[d]) * ys[d];
            q /= cover[d];
        }
        memcpy((char *)y->data + off * (int64_t)es, (const char *)x->data + i * (int64_t)es, es);
    }
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

/* RoiAlign: per region r and output cell (ph, pw), a grid of gh × gw samples (sampling_ratio,
 * or ⌈roi size / output size⌉) at y = y1 + ph·bh + (iy + ½)·bh/gh (x alike), y1 = roi·scale −
 * ½ (half_pixel; output_half_pixel: no offset, and the roi at least 1 × 1), each read by
 * bilinear interpolation of X[batch_indices[r], c] (a sample past −1 or the size reads 0;
 * below 0 clamps to 0; at or past the last row or column clamps to it).  avg: the mean of
 * the samples; max: the largest of every sample's four weighted corners (onnxruntime's and
 * the ONNX reference's rule). */
typedef struct roi_tap {
    int64_t pos[4];
    double w[4];
} roi_tap;

static void roi_sample(double y, double x, int64_t H, int64_t W, roi_tap *t)
{
    if (!(y >= -1.0 && y <= (double)H && x >= -1.0 && x <= (double)W)) { /* NaN too */
        memset(t, 0, sizeof *t);
        return;
    }
    y = y < 0 ? 0 : y;
    x = x < 0 ? 0 : x;
    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
    if (yl >= H - 1) {
        yh = yl = H - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= W - 1) {
        xh = xl = W - 1;
        x = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
    t->pos[0] = yl * W + xl;
    t->pos[1] = yl * W + xh;
    t->pos[2] = yh * W + xl;
    t->pos[3] = yh * W + xh;
    t->w[0] = hy * hx;
    t->w[1] = hy * lx;
    t->w[2] = ly * hx;
    t->w[3] = ly * lx;
}

/* Region r's outputs for every channel: per cell, the taps' bilinear values averaged or
 * their maximum (x and y of one type; taps and weights in double). */
#define DEF_ROI_CELLS(T)                                                                           \
    static void roi_cells_##T(const void *xv, void *yv, const roi_tap *taps, int64_t xbase,        \
                              int64_t ybase, int64_t C, int64_t HW, int64_t Q, int64_t G,          \
                              int64_t cnt, bool max_mode)                                          \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t c = 0; c < C; c++) {                                                          \
            int64_t base = xbase + c * HW;                                                         \
            for (int64_t q = 0; q < Q; q++) {                                                      \
                double acc = 0;                                                                    \
                bool first = true;                                                                 \
                for (int64_t t = 0; t < G; t++) {                                                  \
                    const roi_tap *tp = &taps[q * G + t];                                          \
                    double v[4];                                                                   \
                    for (int j = 0; j < 4; j++) v[j] = tp->w[j] * (double)x[base + tp->pos[j]];    \
                    if (!max_mode) {                                                               \
                        acc += v[0] + v[1] + v[2] + v[3];                                          \
                        continue;                                                                  \
                    }                                                                              \
                    for (int j = 0; j < 4; j++)                                                    \
                        if (first || v[j] > acc) {                                                 \
                            acc = v[j];                                                            \
                            first = false;                                                         \
                        }                                                                          \
                }                                                                                  \
                if (!max_mode) acc /= (double)cnt;                                                 \
                y[ybase + c * Q + q] = (T)acc;                                                     \
            }                                                                                      \
        }                                                                                          \
    }
DEF_ROI_CELLS(float)
DEF_ROI_CELLS(double)

/* Region r's four coordinates (rois has X's dtype) in double. */
#define DEF_ROI_BOX(T)                                                                             \
    static void roi_box_##T(const void *rois, int64_t r, double *box)                              \
    {                                                                                              \
        const T *v = (const T *)rois + r * 4;                                                      \
        for (int j = 0; j < 4; j++) box[j] = (double)v[j];                                         \
    }
DEF_ROI_BOX(float)
DEF_ROI_BOX(double)

/* RoiAlign's typed loops: the regions' coordinates and the cells */
typedef struct roi_loops {
    void (*box)(const void *rois, int64_t r, double *box);
    void (*cells)(const void *x, void *y, const roi_tap *taps, int64_t xbase, int64_t ybase,
                  int64_t C, int64_t HW, int64_t Q, int64_t G, int64_t cnt, bool max_mode);
} roi_loops;
static const roi_loops roi_loops_t[2] = {{roi_box_float, roi_cells_float},
                                         {roi_box_double, roi_cells_double}};
OG_FLOAT_IMPLS(roi_impls, &roi_loops_t[0], &roi_loops_t[1]);

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl) */
static const void *select_roi_align(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(roi_impls, t);
}

static og_status roi_align_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_roi_params *p = k->params;
    const og_tensor *x = in[0], *rois = in[1], *bi = in[2];
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, roi_impls, x->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, roi_align_kernel, in, n_in, out, n_out);
    const roi_loops *l = im->loops;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = y->dims[0];
    int64_t oh = p->out_h, ow = p->out_w;
    if (og_dtype_size(rois->dtype) != og_dtype_size(x->dtype)) /* inference: the same dtype */
        return og_kernel_error(k, OG_ERR_TYPE, "input 1 (rois) is %s, input 0 (X) %s",
                               og_dtype_name(rois->dtype), og_dtype_name(x->dtype));
    if (rois->dims[0] != R || bi->numel != R)
        return og_kernel_error(k, OG_ERR_SHAPE, "rois and batch_indices disagree on the count");
    const int64_t *bv = bi->data;
    for (int64_t r = 0; r < R; r++)
        if (bv[r] < 0 || bv[r] >= N)
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "input 2 (batch_indices) entry %lld is %lld, outside [0, %lld)",
                                   (long long)r, (long long)bv[r], (long long)N);
    if (y->numel == 0) return OG_OK;
    if (H < 1 || W < 1) return og_kernel_error(k, OG_ERR_SHAPE, "X has an empty image");
    og_status st = OG_OK;
    double off = p->half_pixel ? 0.5 : 0.0, s = p->spatial_scale;
    for (int64_t r = 0; r < R && !st; r++) {
        double box[4];
        l->box(rois->data, r, box);
        double x1 = box[0] * s - off, y1 = box[1] * s - off;
        double x2 = box[2] * s - off, y2 = box[3] * s - off;
        double rw = x2 - x1, rh = y2 - y1;
        if (!p->half_pixel) {
            rw = rw > 1 ? rw : 1;
            rh = rh > 1 ? rh : 1;
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        double ghd = p->sampling_ratio > 0 ? (double)p->sampling_ratio : ceil(rh / (double)oh);
        double gwd = p->sampling_ratio > 0 ? (double)p->sampling_ratio : ceil(rw / (double)ow);
        if (!(ghd >= 0 && gwd >= 0 && ghd * gwd * (double)(oh * ow) < 1e8)) {
            st = og_kernel_error(k, OG_ERR_RUNTIME, "region %lld asks for %g x %g samples per cell",
                                 (long long)r, ghd, gwd);
            break;
        }
        int64_t gh = (int64_t)ghd, gw = (int64_t)gwd, cnt = gh * gw > 1 ? gh * gw : 1;
        roi_tap *taps = og_malloc(k->alloc, (size_t)(oh * ow * cnt) * sizeof *taps);
        if (!taps) {
            st = og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
            break;
        }
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++)
                for (int64_t iy = 0; iy < gh; iy++)
                    for (int64_t ix = 0; ix < gw; ix++)
                        roi_sample(y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh,
                                   x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw, H,
                                   W, &taps[((ph * ow + pw) * gh + iy) * gw + ix]);
        l->cells(x->data, y->data, taps, bv[r] * C * H * W, r * C * oh * ow, C, H * W, oh * ow,
                 gh * gw, cnt, p->max_mode);
        og_free(k->alloc, taps);
    }
    return st;
}

/* float32 and float64, float16 through float32, and int8/uint8 for MaxPool: select_pool binds
 * the loops of X's dtype. */
const og_kernel_def og_cpu_pool[] = {
    {.name = "AveragePool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "MaxPool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "GlobalAveragePool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "GlobalMaxPool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "LpPool", .domain = "", .fn = lppool_kernel, .select = select_lppool},
    {.name = "MaxUnpool", .domain = "", .fn = unpool_kernel},
    {.name = "RoiAlign", .domain = "", .fn = roi_align_kernel, .select = select_roi_align},
    {.name = NULL}};
