/* pool.c: CPU kernels of AveragePool, MaxPool (with optional Indices), GlobalAveragePool
 * and GlobalMaxPool, for float32 and float64: the loops of one type are a pool_loops table,
 * bound to the node when the session is created.
 *
 * 1-D, 2-D and 3-D pools share one loop nest over (D, H, W), with leading spatial dims of
 * size 1 for lower ranks.  The range of kernel taps that fall inside the input is
 * precomputed per output position and dim, so the inner loops carry no bounds checks (the
 * interior of the image and the borders run the same code).  Work is split over output
 * rows (plane, od, oh).  MaxPool with row-major Indices (what its gradient recomputes) takes
 * the same interior path, choosing with masks instead of branches. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/pool.h"

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
        if (kind == OG_POOL_AVG) {                                                                 \
            double s8[8] = {0}, s = 0;                                                             \
            for (; i + 8 <= n; i += 8)                                                             \
                for (int j = 0; j < 8; j++) s8[j] += p[i + j];                                     \
            for (; i < n; i++) s += p[i];                                                          \
            for (int j = 0; j < 8; j++) s += s8[j];                                                \
            return (T)(s / (double)n);                                                             \
        }                                                                                          \
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
    static void global_##T(const og_kernel_ctx *k, og_pool_kind kind, int64_t planes, int64_t n,   \
                           const void *xv, void *yv)                                               \
    {                                                                                              \
        const T *restrict x = xv;                                                                  \
        T *restrict y = yv;                                                                        \
        OG_PARALLEL_FOR(k, planes, n, pl, { y[pl] = global_plane_##T(kind, x + pl * n, n); });     \
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
    static void pool_##T(const og_kernel_ctx *k, const og_pool_params *p, const pool_geom *g,      \
                         const void *xv, void *yv, int64_t *idx)                                   \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        /* blocks of rows, a few per thread, so that a row costs no division */                    \
        const int64_t rows = g->planes * g->out[0] * g->out[1];                                    \
        const int64_t nb = k->threads > 1 ? (rows < 8 * k->threads ? rows : 8 * k->threads) : 1;   \
        OG_PARALLEL_FOR(k, nb, (double)(rows / nb) * (double)(g->out[2] * g->kvol), b, {           \
            pool_rows_##T(p, g, x, y, idx, (b * rows) / nb, ((b + 1) * rows) / nb);                \
        });                                                                                        \
    }

DEFINE_POOL_ROWS(float)
DEFINE_POOL_ROWS(double)

/* The typed loops of one element type: the binding's impl, chosen once per node when the
 * session is created (select_pool), so that a run does not branch on the dtype. */
typedef struct pool_loops {
    void (*global)(const og_kernel_ctx *k, og_pool_kind kind, int64_t planes, int64_t n,
                   const void *x, void *y);
    void (*pool)(const og_kernel_ctx *k, const og_pool_params *p, const pool_geom *g, const void *x,
                 void *y, int64_t *idx);
} pool_loops;

static const pool_loops pool_loops_float = {global_float, pool_float};
static const pool_loops pool_loops_double = {global_double, pool_double};

static const pool_loops *pool_loops_of(og_dtype t)
{
    return t == OG_FLOAT ? &pool_loops_float : t == OG_DOUBLE ? &pool_loops_double : NULL;
}

static const void *select_pool(const og_node *n, og_dtype t)
{
    (void)n;
    return pool_loops_of(t);
}

static og_status pool_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_pool_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0], *ind = n_out > 1 ? out[1] : NULL;
    /* k->impl: the loops bound at session creation; without a binding, pick them here */
    const pool_loops *loops = k->impl ? k->impl : pool_loops_of(x->dtype);
    if (!loops)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
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
    loops->pool(k, p, &g, x->data, y->data, ind ? ind->data : NULL);
done:
    og_free(k->alloc, scratch);
    (void)n_in;
    return st;
}

/* float32 and float64 (no int8/uint8 MaxPool): select_pool binds the loops of X's dtype. */
const og_kernel_def og_cpu_pool[] = {
    {.name = "AveragePool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "MaxPool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "GlobalAveragePool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = "GlobalMaxPool", .domain = "", .fn = pool_kernel, .select = select_pool},
    {.name = NULL}};
