/* conv.c: CPU kernels of Conv (im2col + GEMM) and ConvTranspose (GEMM + col2im).
 *
 * Layout: a group's column matrix has K = C/group * prod(kernel) rows, ordered (channel,
 * k0, k1, ...) like W's trailing dims, and one column per output position, so that
 * Y_g[M/group, OS] = W_g[M/group, K] · col[K, OS] is a single row-major GEMM.
 * ConvTranspose runs that backwards: col = W_gᵀ · X_g, then col2im adds every column
 * entry into the output position it came from.
 *
 * A Conv whose kernel is wider than its output (the weight gradient, a Conv of X by dY
 * with the kernel's size as output) stores col transposed instead, [OS, K], copied a
 * kernel row at a time (conv_job.tcol); with few output positions (3x3: 9) the columns of
 * several images go side by side into one GEMM (conv_job.tbatch).  ConvTranspose of images
 * with few positions does several images in one GEMM (conv_job.nb). */
#include <string.h>

#include "kernels/cpu/conv_dw.h"
#include "kernels/cpu/conv_pw.h"
#include "kernels/cpu/conv_pw_kshare.h"
#include "kernels/cpu/conv_pwdw.h"
#include "kernels/cpu/conv_panel.h"
#include "kernels/cpu/conv_m16.h"
#include "kernels/cpu/conv_s2.h"
#include "kernels/cpu/conv_wino.h"
#include "kernels/cpu/conv_wgrad.h"
#include "kernels/cpu/gemm.h"
#include "ops/conv_params.h"

/* Per-dtype pieces; everything else works on bytes. */
/* col2im's bounds for one tap (kh, kw) of a 1-D/2-D ConvTranspose, the same for every
 * output channel and image of a call (c2i_plan): input rows [ia, ib) and n input columns
 * from lo land inside the output, input row ih's first at output offset ih · sh · OW + dst0 */
typedef struct c2i_tap {
    int64_t ia, ib, lo, n, dst0;
} c2i_tap;
/* kernels of at most this many taps get a plan (conv_job.c2i) */
#define C2I_MAX_TAPS 64

typedef struct conv_type {
    size_t es;
    /* C = op(A)·op(B) (+ C when acc) */
    void (*gemm)(const og_kernel_ctx *k, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                 const void *a, int64_t lda, const void *b, int64_t ldb, bool acc, void *c,
                 int64_t ldc);
    /* dst[i] = src[i * stride], i < n */
    void (*copy_strided)(void *restrict dst, const void *restrict src, int64_t n, int64_t stride);
    /* dst[i * stride] += src[i], i < n */
    void (*add_strided)(void *restrict dst, int64_t stride, const void *restrict src, int64_t n);
    /* dst[r * ld + i] = bias[r] (0 when bias is NULL), r < rows, i < len */
    void (*fill_rows)(void *restrict dst, const void *restrict bias, int64_t rows, int64_t len,
                      int64_t ld);
    /* dst[r * ld + i] += bias[r], r < rows, i < len */
    void (*add_rows)(void *restrict dst, const void *restrict bias, int64_t rows, int64_t len,
                     int64_t ld);
    /* one im2col row of a 1-D/2-D conv: see im2col_2d below */
    void (*im2col_2d)(const og_conv_geom *g, const void *xc, int64_t kh, int64_t kw, int64_t r0,
                      int64_t r1, void *dst);
    /* dst[m * ldd + i * w + j] = src[m * lds + i * ws + j] + bias[m] (0 when bias is NULL),
     * m < rows, i < n, j < w: a wide GEMM result into Y */
    void (*unwide)(void *restrict dst, int64_t ldd, const void *restrict src, int64_t lds,
                   int64_t ws, const void *restrict bias, int64_t rows, int64_t n, int64_t w);
    /* row o of a transposed column chunk: see tcol_row_f32 below */
    void (*tcol_row)(const og_conv_geom *g, const void *xg, int64_t is, int64_t o, int64_t q0,
                     int64_t q1, void *dst);
    /* col2im of one output channel of a 1-D/2-D ConvTranspose: see col2im_2d_f32 below */
    void (*col2im_2d)(const og_conv_geom *g, const c2i_tap *plan, const void *col, int64_t ld,
                      void *yc);
    /* dst[c * rows + r] = src[r * cols + c] */
    void (*transpose)(void *restrict dst, const void *restrict src, int64_t rows, int64_t cols);
    /* dst[r * ldd + i] = src[r * lds + i], r < rows, i < n: short rows as a few fixed-size
     * moves each (copy_run) */
    void (*copy_rows)(void *restrict dst, int64_t ldd, const void *restrict src, int64_t lds,
                      int64_t rows, int64_t n);
} conv_type;

/* ceil(a / b) for b > 0 and any a. */
static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

#define CONV_TYPED(T, S, GEMM)                                                                     \
    static void gemm_##S(const og_kernel_ctx *k, bool ta, bool tb, int64_t m, int64_t n,           \
                         int64_t kk, const void *a, int64_t lda, const void *b, int64_t ldb,       \
                         bool acc, void *c, int64_t ldc)                                           \
    {                                                                                              \
        if (kk == 0) { /* empty sum: BLAS need not handle it */                                    \
            if (!acc)                                                                              \
                for (int64_t i = 0; i < m; i++)                                                    \
                    memset((T *)c + i * ldc, 0, (size_t)n * sizeof(T));                            \
            return;                                                                                \
        }                                                                                          \
        GEMM(k, ta, tb, m, n, kk, 1, a, lda, b, ldb, acc ? 1 : 0, c, ldc);                         \
    }                                                                                              \
    static void copy_strided_##S(void *restrict dst, const void *restrict src, int64_t n,          \
                                 int64_t stride)                                                   \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict s = src;                                                                 \
        if (stride == 2) /* constant stride: vectorizes as a deinterleave */                       \
            for (int64_t i = 0; i < n; i++) d[i] = s[2 * i];                                       \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) d[i] = s[i * stride];                                  \
    }                                                                                              \
    static void add_strided_##S(void *restrict dst, int64_t stride, const void *restrict src,      \
                                int64_t n)                                                         \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict s = src;                                                                 \
        if (stride == 1) /* the common case, kept separate so that it vectorizes */                \
            for (int64_t i = 0; i < n; i++) d[i] += s[i];                                          \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) d[i * stride] += s[i];                                 \
    }                                                                                              \
    static void fill_rows_##S(void *restrict dst, const void *restrict bias, int64_t rows,         \
                              int64_t len, int64_t ld)                                             \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict b = bias;                                                                \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            T v = b ? b[r] : (T)0;                                                                 \
            for (int64_t i = 0; i < len; i++) d[r * ld + i] = v;                                   \
        }                                                                                          \
    }                                                                                              \
    static void add_rows_##S(void *restrict dst, const void *restrict bias, int64_t rows,          \
                             int64_t len, int64_t ld)                                              \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict b = bias;                                                                \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const T v = b[r];                                                                      \
            for (int64_t i = 0; i < len; i++) d[r * ld + i] += v;                                  \
        }                                                                                          \
    }                                                                                              \
    /* im2col row of tap (kh, kw) over output rows [r0, r1) of a 2-D conv (a 1-D conv has          \
     * out[0] == in[0] == 1): plain loops with the in-bounds range [lo, hi) of output              \
     * columns computed once, so that short rows cost no calls and the copy vectorizes. */         \
    static void im2col_2d_##S(const og_conv_geom *g, const void *xc, int64_t kh, int64_t kw,       \
                              int64_t r0, int64_t r1, void *dst)                                   \
    {                                                                                              \
        const T *restrict x = xc;                                                                  \
        T *restrict d = dst;                                                                       \
        const int L = g->nsp - 1;                                                                  \
        const int64_t ow = g->out[L], iw = g->in[L], s = g->stride[L];                             \
        const int64_t ih_n = L ? g->in[0] : 1, sh = L ? g->stride[0] : 1;                          \
        const int64_t h_off = L ? kh * g->dil[0] - g->pad_begin[0] : 0;                            \
        const int64_t off = kw * g->dil[L] - g->pad_begin[L]; /* input col = o * s + off */        \
        const int64_t lo = clamp64(ceil_div(-off, s), 0, ow);                                      \
        const int64_t hi = clamp64(ceil_div(iw - off, s), lo, ow);                                 \
        /* output rows [oa, ob) read input rows inside the input; the others are zero */           \
        const int64_t oa = clamp64(ceil_div(-h_off, sh), r0, r1);                                  \
        const int64_t ob = hi > lo ? clamp64(ceil_div(ih_n - h_off, sh), oa, r1) : oa;             \
        memset(d, 0, (size_t)((oa - r0) * ow) * sizeof(T));                                        \
        memset(d + (ob - r0) * ow, 0, (size_t)((r1 - ob) * ow) * sizeof(T));                       \
        d += (oa - r0) * ow;                                                                       \
        const int64_t n = hi - lo;                                                                 \
        if (s == 1 && sh == 1 && ow == iw && ob > oa) {                                            \
            /* rows as wide as the input: the tap is one shifted copy of the whole block, from     \
             * the first valid column of the first row to the last of the last; then the           \
             * columns outside [lo, hi) of each row, wrapped over from the next, are zeroed */     \
            const int64_t first = lo, last = (ob - oa - 1) * ow + hi;                              \
            memcpy(d + first, x + (oa + h_off) * iw + off + first,                                 \
                   (size_t)(last - first) * sizeof(T));                                            \
        } else {                                                                                   \
            for (int64_t oh = oa; oh < ob; oh++) {                                                 \
                const T *restrict src = x + (oh * sh + h_off) * iw + lo * s + off; /* column lo */ \
                T *restrict dm = d + (oh - oa) * ow + lo;                                          \
                if (s == 1 && n >= 32) /* long rows: the library copy is wider than SSE2 */        \
                    memcpy(dm, src, (size_t)n * sizeof(T));                                        \
                else if (s == 1)                                                                   \
                    for (int64_t i = 0; i < n; i++) dm[i] = src[i];                                \
                else if (s == 2)                                                                   \
                    for (int64_t i = 0; i < n; i++) dm[i] = src[2 * i];                            \
                else                                                                               \
                    for (int64_t i = 0; i < n; i++) dm[i] = src[i * s];                            \
            }                                                                                      \
        }                                                                                          \
        /* the padding columns, a few per row: by column, so that they are plain stores and not    \
         * a library call per row */                                                               \
        for (int64_t i = 0; i < lo; i++)                                                           \
            for (int64_t r = 0; r < ob - oa; r++) d[r * ow + i] = 0;                               \
        for (int64_t i = hi; i < ow; i++)                                                          \
            for (int64_t r = 0; r < ob - oa; r++) d[r * ow + i] = 0;                               \
    }                                                                                              \
    static inline void copy_run_##S(T *restrict d, const T *restrict s, int64_t n);                \
    static void unwide_##S(void *restrict dst, int64_t ldd, const void *restrict src, int64_t lds, \
                           int64_t ws, const void *restrict bias, int64_t rows, int64_t n,         \
                           int64_t w)                                                              \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict s = src, *restrict b = bias;                                             \
        for (int64_t m = 0; m < rows; m++) {                                                       \
            if (!b) { /* copied as they are: + 0 would turn -0 into +0 */                          \
                for (int64_t i = 0; i < n; i++)                                                    \
                    copy_run_##S(d + m * ldd + i * w, s + m * lds + i * ws, w);                    \
                continue;                                                                          \
            }                                                                                      \
            const T v = b[m];                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < w; j++)                                                    \
                    d[m * ldd + i * w + j] = s[m * lds + i * ws + j] + v;                          \
        }                                                                                          \
    }                                                                                              \
    /* d[i] = s[i], i < n, and d[i] = 0: short runs as a few fixed-size copies (inlined as         \
     * vector moves, overlapping at the end) rather than a library call each, which is what        \
     * the compiler makes of a plain loop. */                                                      \
    static inline void copy_run_##S(T *restrict d, const T *restrict s, int64_t n)                 \
    {                                                                                              \
        if (n >= 64) {                                                                             \
            memcpy(d, s, (size_t)n * sizeof(T));                                                   \
        } else if (n >= 8) {                                                                       \
            for (int64_t i = 0; i + 8 <= n; i += 8) memcpy(d + i, s + i, 8 * sizeof(T));           \
            memcpy(d + n - 8, s + n - 8, 8 * sizeof(T));                                           \
        } else if (n >= 4) {                                                                       \
            memcpy(d, s, 4 * sizeof(T));                                                           \
            memcpy(d + n - 4, s + n - 4, 4 * sizeof(T));                                           \
        } else if (n >= 2) {                                                                       \
            memcpy(d, s, 2 * sizeof(T));                                                           \
            memcpy(d + n - 2, s + n - 2, 2 * sizeof(T));                                           \
        } else if (n == 1) {                                                                       \
            d[0] = s[0];                                                                           \
        }                                                                                          \
    }                                                                                              \
    static inline void zero_run_##S(T *restrict d, int64_t n)                                      \
    {                                                                                              \
        if (n >= 64) {                                                                             \
            memset(d, 0, (size_t)n * sizeof(T));                                                   \
        } else if (n >= 8) {                                                                       \
            for (int64_t i = 0; i + 8 <= n; i += 8) memset(d + i, 0, 8 * sizeof(T));               \
            memset(d + n - 8, 0, 8 * sizeof(T));                                                   \
        } else if (n >= 4) {                                                                       \
            memset(d, 0, 4 * sizeof(T));                                                           \
            memset(d + n - 4, 0, 4 * sizeof(T));                                                   \
        } else if (n >= 2) {                                                                       \
            memset(d, 0, 2 * sizeof(T));                                                           \
            memset(d + n - 2, 0, 2 * sizeof(T));                                                   \
        } else if (n == 1) {                                                                       \
            d[0] = 0;                                                                              \
        }                                                                                          \
    }                                                                                              \
    /* One kernel row of a transposed column: taps [lo, hi) from sp (dl apart), 0 around. */       \
    static inline void krow_##S(T *restrict d, const T *restrict sp, int64_t lo, int64_t hi,       \
                                int64_t kw, int64_t dl)                                            \
    {                                                                                              \
        const int64_t n = hi - lo;                                                                 \
        zero_run_##S(d, lo);                                                                       \
        if (dl == 1)                                                                               \
            copy_run_##S(d + lo, sp, n);                                                           \
        else if (dl == 2)                                                                          \
            for (int64_t i = 0; i < n; i++) d[lo + i] = sp[2 * i];                                 \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) d[lo + i] = sp[i * dl];                                \
        zero_run_##S(d + hi, kw - hi);                                                             \
    }                                                                                              \
    /* Row o (an output position) of a transposed column chunk: the kw-wide kernel rows            \
     * q in [q0, q1), q = (channel, outer kernel offsets), each the input under the kernel         \
     * row at o (0 in the padding), kw values apart.  The in-bounds taps [lo, hi) of the           \
     * innermost dim are the same for every q; in 1-D and 2-D so is the range [ka, kb) of          \
     * kernel rows inside the input, so that a channel is zeros, copies, zeros. */                 \
    static void tcol_row_##S(const og_conv_geom *g, const void *xg, int64_t is, int64_t o,         \
                             int64_t q0, int64_t q1, void *dst)                                    \
    {                                                                                              \
        const T *restrict x = xg;                                                                  \
        T *restrict d = dst;                                                                       \
        const int L = g->nsp - 1;                                                                  \
        int64_t oi[OG_CONV_MAX_SP], kidx[OG_CONV_MAX_SP], istride[OG_CONV_MAX_SP];                 \
        int64_t rest = o, kouter = 1;                                                              \
        for (int j = L; j >= 0; j--) {                                                             \
            oi[j] = rest % g->out[j];                                                              \
            rest /= g->out[j];                                                                     \
        }                                                                                          \
        istride[L] = 1;                                                                            \
        for (int j = L - 1; j >= 0; j--) {                                                         \
            istride[j] = istride[j + 1] * g->in[j + 1];                                            \
            kouter *= g->kernel[j];                                                                \
        }                                                                                          \
        const int64_t kw = g->kernel[L], iw = g->in[L], dl = g->dil[L];                            \
        const int64_t base = oi[L] * g->stride[L] - g->pad_begin[L]; /* input col of tap 0 */      \
        const int64_t lo = clamp64(ceil_div(-base, dl), 0, kw);                                    \
        const int64_t hi = clamp64(ceil_div(iw - base, dl), lo, kw);                               \
        const int64_t first = base + lo * dl; /* input col of tap lo */                            \
        int64_t c = q0 / kouter, r = q0 % kouter;                                                  \
        if (L <= 1) {                                                                              \
            const int64_t kh_n = kouter, dh = L ? g->dil[0] : 1;                                   \
            const int64_t h0 = L ? oi[0] * g->stride[0] - g->pad_begin[0] : 0;                     \
            const int64_t ih_n = L ? g->in[0] : 1, step = dh * iw;                                 \
            const int64_t ka = clamp64(ceil_div(-h0, dh), 0, kh_n);                                \
            const int64_t kb = hi > lo ? clamp64(ceil_div(ih_n - h0, dh), ka, kh_n) : ka;          \
            for (int64_t q = q0; q < q1; c++) { /* channel c, kernel rows [r, kend) */             \
                const int64_t kend = r + (q1 - q) < kh_n ? r + (q1 - q) : kh_n;                    \
                const int64_t a = clamp64(ka, r, kend), b = clamp64(kb, a, kend);                  \
                zero_run_##S(d, (a - r) * kw);                                                     \
                d += (a - r) * kw;                                                                 \
                const T *sp = b > a ? x + c * is + (h0 + a * dh) * iw + first : x;                 \
                for (int64_t kh = a; kh < b; kh++, d += kw, sp += step)                            \
                    krow_##S(d, sp, lo, hi, kw, dl);                                               \
                zero_run_##S(d, (kend - b) * kw);                                                  \
                d += (kend - b) * kw;                                                              \
                q += kend - r;                                                                     \
                r = 0;                                                                             \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int j = L - 1; j >= 0; j--) {                                                         \
            kidx[j] = r % g->kernel[j];                                                            \
            r /= g->kernel[j];                                                                     \
        }                                                                                          \
        for (int64_t q = q0; q < q1; q++, d += kw) {                                               \
            bool inside = hi > lo;                                                                 \
            int64_t src = c * is + first;                                                          \
            for (int j = 0; j < L; j++) {                                                          \
                int64_t ii = oi[j] * g->stride[j] + kidx[j] * g->dil[j] - g->pad_begin[j];         \
                inside = inside && ii >= 0 && ii < g->in[j];                                       \
                src += ii * istride[j];                                                            \
            }                                                                                      \
            if (inside)                                                                            \
                krow_##S(d, x + src, lo, hi, kw, dl);                                              \
            else                                                                                   \
                zero_run_##S(d, kw);                                                               \
            int j = L - 1; /* next outer kernel offset, then channel */                            \
            while (j >= 0 && ++kidx[j] == g->kernel[j]) kidx[j--] = 0;                             \
            if (j < 0) c++;                                                                        \
        }                                                                                          \
    }                                                                                              \
    /* col2im of one output channel of a 1-D/2-D ConvTranspose (a 1-D one has out[0] ==            \
     * in[0] == 1): its ks col rows, one value per input position, added into the output           \
     * positions they hit.  Per tap, the input rows and columns that land inside the output        \
     * are computed once, so the adds are plain loops over whole row ranges. */                    \
    static void col2im_2d_##S(const og_conv_geom *g, const c2i_tap *plan, const void *colc,        \
                              int64_t ld, void *yc)                                                \
    {                                                                                              \
        const T *restrict c = colc;                                                                \
        T *restrict y = yc;                                                                        \
        const int L = g->nsp - 1;                                                                  \
        const int64_t iw = g->in[L], ow = g->out[L], s = g->stride[L];                             \
        const int64_t ih_n = L ? g->in[0] : 1, oh_n = L ? g->out[0] : 1,                           \
                      sh = L ? g->stride[0] : 1;                                                   \
        const int64_t kh_n = L ? g->kernel[0] : 1, kw_n = g->kernel[L];                            \
        if (plan) { /* the bounds computed once for the call (the divisions were the cost of       \
                     * small planes: 4 values a row on 2x2) */                                     \
            for (int64_t t = 0; t < kh_n * kw_n; t++, c += ld) {                                   \
                const c2i_tap *p = plan + t;                                                       \
                for (int64_t ih = p->ia; ih < p->ib; ih++) {                                       \
                    const T *restrict src = c + ih * iw + p->lo;                                   \
                    T *restrict dst = y + ih * sh * ow + p->dst0;                                  \
                    if (s == 1)                                                                    \
                        for (int64_t i = 0; i < p->n; i++) dst[i] += src[i];                       \
                    else if (s == 2)                                                               \
                        for (int64_t i = 0; i < p->n; i++) dst[2 * i] += src[i];                   \
                    else                                                                           \
                        for (int64_t i = 0; i < p->n; i++) dst[i * s] += src[i];                   \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int64_t kh = 0; kh < kh_n; kh++) {                                                    \
            const int64_t h_off =                                                                  \
                L ? kh * g->dil[0] - g->pad_begin[0] : 0; /* oh = ih*sh + h_off */                 \
            const int64_t ia = clamp64(ceil_div(-h_off, sh), 0, ih_n);                             \
            const int64_t ib = clamp64(ceil_div(oh_n - h_off, sh), ia, ih_n);                      \
            for (int64_t kw = 0; kw < kw_n; kw++, c += ld) {                                       \
                const int64_t off = kw * g->dil[L] - g->pad_begin[L]; /* ow = i * s + off */       \
                const int64_t lo = clamp64(ceil_div(-off, s), 0, iw);                              \
                const int64_t hi = clamp64(ceil_div(ow - off, s), lo, iw), n = hi - lo;            \
                if (n == 0) continue;                                                              \
                for (int64_t ih = ia; ih < ib; ih++) {                                             \
                    const T *restrict src = c + ih * iw + lo;                                      \
                    T *restrict dst = y + (ih * sh + h_off) * ow + lo * s + off;                   \
                    if (s == 1)                                                                    \
                        for (int64_t i = 0; i < n; i++) dst[i] += src[i];                          \
                    else if (s == 2)                                                               \
                        for (int64_t i = 0; i < n; i++) dst[2 * i] += src[i];                      \
                    else                                                                           \
                        for (int64_t i = 0; i < n; i++) dst[i * s] += src[i];                      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* dst[c * rows + r] = src[r * cols + c]: a column chunk to [kc, OS], in blocks of             \
     * columns so that the rows being read stay in cache. */                                       \
    static void transpose_##S(void *restrict dst, const void *restrict src, int64_t rows,          \
                              int64_t cols)                                                        \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict s = src;                                                                 \
        for (int64_t c0 = 0; c0 < cols; c0 += 64) {                                                \
            const int64_t c1 = c0 + 64 < cols ? c0 + 64 : cols;                                    \
            for (int64_t c = c0; c < c1; c++)                                                      \
                for (int64_t r = 0; r < rows; r++) d[c * rows + r] = s[r * cols + c];              \
        }                                                                                          \
    }                                                                                              \
    static void copy_rows_##S(void *restrict dst, int64_t ldd, const void *restrict src,           \
                              int64_t lds, int64_t rows, int64_t n)                                \
    {                                                                                              \
        T *restrict d = dst;                                                                       \
        const T *restrict s = src;                                                                 \
        for (int64_t r = 0; r < rows; r++) copy_run_##S(d + r * ldd, s + r * lds, n);              \
    }                                                                                              \
    static const conv_type conv_type_##S = {sizeof(T),       gemm_##S,      copy_strided_##S,      \
                                            add_strided_##S, fill_rows_##S, add_rows_##S,          \
                                            im2col_2d_##S,   unwide_##S,    tcol_row_##S,          \
                                            col2im_2d_##S,   transpose_##S, copy_rows_##S};

CONV_TYPED(float, f32, og_gemm_f32)
CONV_TYPED(double, f64, og_gemm_f64)

void og_conv_im2col_f32(const og_conv_geom *g, const float *x, float *col)
{
    int64_t os = 1, ks = 1, is = 1;
    for (int i = 0; i < g->nsp; i++) {
        os *= g->out[i];
        ks *= g->kernel[i];
        is *= g->in[i];
    }
    const int64_t kw_n = g->kernel[g->nsp - 1];
    for (int64_t c = 0; c < g->c; c++)
        for (int64_t t = 0; t < ks; t++)
            im2col_2d_f32(g, x + c * is, t / kw_n, t % kw_n, 0, os / g->out[g->nsp - 1],
                          col + (c * ks + t) * os);
}

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl) */
OG_FLOAT_IMPLS(conv_impls, &conv_type_f32, &conv_type_f64);

/* The binding's impl: the dtype's pieces, chosen once when the session is created. */
static const void *select_conv(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(conv_impls, t);
}

/* Bytes of column matrix per im2col chunk: a chunk stays in L2 from im2col to GEMM. */
#ifndef CONV_CHUNK_BYTES
#define CONV_CHUNK_BYTES ((int64_t)1024 * 1024)
#endif

#ifndef CONV_CHUNK_MIN_COLS
#define CONV_CHUNK_MIN_COLS 1024
#endif
/* Wide Conv (see conv_job) for output widths up to this, when the extra GEMM work per
 * column row and output row, (M / group) * (wp - ow), is at most CONV_WIDE_MAX_EXTRA. */
#ifndef CONV_WIDE_MAX_OW
#define CONV_WIDE_MAX_OW 32
#endif
#ifndef CONV_WIDE_MAX_EXTRA
#define CONV_WIDE_MAX_EXTRA 128
#endif
/* Transposed columns (conv_job.tcol): the GEMM of a K chunk does at most this many
 * multiply-adds where a kernel row allows.  Their GEMMs are skinny (few output channels and
 * positions, K long), and OpenBLAS runs products up to about 100^3 through kernels that do
 * not pack the operands, 2-4 times faster for these shapes than its packed path. */
#ifndef CONV_TCOL_MNK
#define CONV_TCOL_MNK ((int64_t)1000000)
#endif
/* ... but only while the product's M * N (output channels per GEMM call times output
 * positions) is at most this; OpenBLAS does larger ones with a transposed operand in its
 * packed path, 1.5-3x slower than the plain product of the chunk transposed to [kc, OS]. */
#ifndef CONV_TCOL_TN_MN
#define CONV_TCOL_TN_MN 1200
#endif
/* ConvTranspose with at most half this many input positions per image puts images side by
 * side in one GEMM about this wide (col = Wᵀ·X): with few columns per image, packing Wᵀ
 * again for every image would cost more than the product. */
#ifndef CONV_TR_BATCH_COLS
#define CONV_TR_BATCH_COLS 256
#endif
/* Least work (multiply-adds) for which transposed columns split K over the threads. */
#ifndef CONV_TCOL_SPLIT_MIN
#define CONV_TCOL_SPLIT_MIN ((int64_t)1 << 18)
#endif
/* Batched Conv (conv_job.batched) for outputs of at most CONV_BATCH_MAX_OS positions, in
 * GEMMs about CONV_BATCH_COLS wide. */
#ifndef CONV_BATCH_MAX_OS
#define CONV_BATCH_MAX_OS 256
#endif
#ifndef CONV_BATCH_COLS
#define CONV_BATCH_COLS 1024
#endif
/* Batched Conv: multiply-adds below which a call stays on one thread (a parallel region
 * costs more than that when the other thread is not at hand at once). */
#ifndef CONV_PAR_MIN_WORK
#define CONV_PAR_MIN_WORK 1048576.0
#endif
/* Transposed columns of several images in one GEMM (conv_job.tbatch) for outputs of at most
 * this many positions: the weight gradient's Conv has one "image" per input channel and
 * the kernel's positions as its output (9 for 3x3), so one GEMM per image would be
 * [mg, K] x [K, 9]. */
#ifndef CONV_TBATCH_MAX_OS
#define CONV_TBATCH_MAX_OS 64
#endif
/* ... with at least this many output channels per group: below, one image at a time
 * through OpenBLAS's unpacked small-matrix path measured faster (LeNet's second layer:
 * 16 channels, 5x5 outputs, 2.85 against 2.95 ms per training step). */
#ifndef CONV_TBATCH_MIN_M
#define CONV_TBATCH_MIN_M 32
#endif
/* Multiply-adds below which a Conv or ConvTranspose runs on one thread: waking a blocked
 * thread (OMP_WAIT_POLICY=passive) costs about 44 us per parallel region here, more than
 * the second core gives a call of a few million multiply-adds (MobileNet-v3 small at
 * 224x224 on two threads: 3.2 ms with every layer threaded, 2.5 with this at 2^20, 1.7 at
 * 2^22; 1.9 at 2^23, and ResNet-18 slower). */
#ifndef CONV_PAR_MIN_MADDS
#define CONV_PAR_MIN_MADDS 4194304.0
#endif
/* The same with the session's workers (og_kernel_ctx.workers), whose caller does not wait
 * for a worker still asleep: only the wake-up call is lost when a call is small */
#ifndef CONV_PAR_MIN_MADDS_WORKERS
#define CONV_PAR_MIN_MADDS_WORKERS 1048576.0
#endif
/* Narrowest chunk worth a thread of its own when there are fewer images than threads. */
#define CONV_PAR_MIN_COLS 256

/* The multiply-adds of a Conv (or of the ConvTranspose of the same geometry). */
static double conv_madds(const og_conv_geom *g)
{
    double m = (double)g->n * (double)g->m * (double)(g->c / (g->group > 0 ? g->group : 1));
    for (int i = 0; i < g->nsp; i++) m *= (double)g->kernel[i] * (double)g->out[i];
    return m;
}

/* Everything one call needs, computed once. */
typedef struct conv_job {
    const conv_type *t;
    og_conv_geom g;
    int64_t cg, mg; /* channels per group: input, output */
    int64_t ks;     /* kernel positions, prod(kernel) */
    int64_t is, os; /* input and output positions, prod(in), prod(out) */
    int64_t kdim;   /* Conv: cg * ks (GEMM inner size); ConvTranspose: mg * ks (col rows) */
    bool pointwise; /* no im2col/col2im needed */
    /* "Wide" Conv (2-D, stride 1): columns run over the padded input width wp rather than
     * the output width, so that a column row is one contiguous copy of the (padded) input
     * instead of one short copy per output row; the GEMM then also computes wp - ow
     * unused columns per row, dropped when its result is copied into Y. */
    bool wide, padded;
    /* Wide and float with short sums (kdim <= og_conv_pw_max_k()): no column matrix, the
     * pointwise kernel reads each column row in place (og_conv_pw_taps), bias and
     * activation included */
    bool taps;
    int64_t wp;        /* padded input width (columns per output row) */
    size_t tmp_bytes;  /* per slot, after the column buffer: the wide GEMM result */
    size_t pad_bytes;  /* per slot, after that: the padded input rows of one chunk */
    size_t slot_bytes; /* col_bytes + tmp_bytes + pad_bytes */
    const char *x, *w, *b;
    char *y;
    char *col; /* nslots column buffers of col_bytes each */
    size_t col_bytes;
    int64_t chunk_rows; /* Conv: outer output rows per chunk */
    int64_t n_chunks;   /* chunks per (image, group); 1 for ConvTranspose */
    int64_t nb;         /* ConvTranspose: images per GEMM (units are (block of nb, group)) */
    int64_t msplit;     /* Conv: the GEMM split over this many threads by output channel */
    int64_t trsplit;    /* ConvTranspose: items (unit, band of output channels), this many
                         * bands a unit: col's rows and col2im of a band's channels */
    /* Transposed columns (Conv whose kernel is wider than its output, as in the weight
     * gradient, a Conv of X by dY): the column matrix is stored [OS, K], one row per output
     * position, a kernel row (kw values of one input row) at a time, so that the copies
     * are kernel-wide rather than output-wide; Y_g = W_g · colᵀ.  K is done in chunks of
     * kc (whole kernel rows) accumulated into Y. */
    bool tcol;
    int64_t kc;
    bool tcol_nn; /* each chunk transposed to [kc, OS] for the GEMM: see CONV_TCOL_TN_MN */
    /* With fewer (image, group) units than threads, K is split into ksplit parts, one per
     * thread (items (part, unit)), each summed into its own [mg, OS] block of part; Y is
     * their sum.  A thread then fills and multiplies its own chunks. */
    int64_t ksplit;
    char *part;
    /* Batched Conv (small outputs, several images): items are (block of bimg images,
     * group); the images' column matrices (or, pointwise, their inputs) side by side make
     * one GEMM [mg, bimg * os], so that W_g is packed once per block rather than per
     * image, and its result goes to Y with the bias and the activation. */
    bool batched;
    int64_t bimg;
    /* Transposed columns of bimg images side by side (tcol with small outputs): rows
     * (image, output position) of a [bimg * OS, kc] chunk, one GEMM [mg, bimg * OS] per
     * chunk of K accumulated into the slot's result, then copied to Y with the bias. */
    bool tbatch;
    /* Short sums on float (K <= og_conv_pw_max_k(): first layers, 3 to 16 input channels):
     * each chunk of col goes through the pointwise kernel (conv_pw.h), bias and activation
     * included, not through a GEMM */
    bool pwcols;
    og_dtype dt;
    /* ConvTranspose of 1-D/2-D kernels of at most C2I_MAX_TAPS taps: col2im's bounds per
     * tap (c2i_plan) */
    const c2i_tap *c2i; /* NULL: none (the plan lies in conv_run's frame, outside the job,
                         * which every Conv call clears) */
    /* the activation applied to Y (k->act): by conv_item to each chunk while it is in
     * cache (act_in_items), else over Y at the end */
    const og_act *act;
    bool act_in_items;
} conv_job;

/* The activation on rows [0, rows) of n values, ld apart, at y. */
static void act_rows(const conv_job *job, char *y, int64_t rows, int64_t n, int64_t ld)
{
    if (n == ld) { /* one block */
        og_cpu_act(job->act, job->dt, y, rows * n);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        og_cpu_act(job->act, job->dt, y + (size_t)(r * ld) * job->t->es, n);
}

/* Whether the kernel covers the whole input exactly once: output 1 everywhere, kernel ==
 * input, no pads, dilation 1. */
static bool covers_input(const og_conv_geom *g)
{
    for (int i = 0; i < g->nsp; i++)
        if (g->out[i] != 1 || g->kernel[i] != g->in[i] || g->pad_begin[i] != 0 ||
            g->pad_end[i] != 0 || (g->dil[i] != 1 && g->kernel[i] > 1))
            return false;
    return true;
}

/* Split kernel row index r (of ks) into per-dim kernel offsets. */
static void kernel_index(const og_conv_geom *g, int64_t r, int64_t *kidx)
{
    for (int j = g->nsp - 1; j >= 0; j--) {
        kidx[j] = r % g->kernel[j];
        r /= g->kernel[j];
    }
}

/* One row of im2col: for the input channel at xc and kernel offset kidx, the input value
 * under that kernel tap at every output position (0 in the padding).  The innermost
 * spatial dim is done as a range [lo, hi) of in-bounds output positions, a memcpy when
 * the stride is 1, so that no element needs a bounds check. */
static void im2col_row(const conv_job *job, const char *xc, const int64_t *kidx, int64_t r0,
                       int64_t r1, char *dst)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int L = g->nsp - 1;
    const int64_t ow = g->out[L], iw = g->in[L], s = g->stride[L];
    const int64_t off = kidx[L] * g->dil[L] - g->pad_begin[L]; /* input = o * s + off */
    const int64_t lo = clamp64(ceil_div(-off, s), 0, ow);
    const int64_t hi = clamp64(ceil_div(iw - off, s), lo, ow);
    int64_t o[OG_CONV_MAX_SP] = {0}, istride[OG_CONV_MAX_SP];
    istride[L] = 1;
    for (int j = L - 1; j >= 0; j--) istride[j] = istride[j + 1] * g->in[j + 1];
    int64_t rr = r0;
    for (int j = L - 1; j >= 0; j--) { /* outer output position of row r0 */
        o[j] = rr % g->out[j];
        rr /= g->out[j];
    }

    for (int64_t r = r0; r < r1; r++, dst += (size_t)ow * es) {
        bool inside = hi > lo;
        int64_t src = 0;
        for (int j = 0; j < L && inside; j++) {
            int64_t ii = o[j] * g->stride[j] + kidx[j] * g->dil[j] - g->pad_begin[j];
            if (ii < 0 || ii >= g->in[j]) inside = false;
            src += ii * istride[j];
        }
        if (!inside) {
            memset(dst, 0, (size_t)ow * es);
        } else {
            const char *srow = xc + (size_t)(src + lo * s + off) * es;
            memset(dst, 0, (size_t)lo * es);
            if (s == 1)
                memcpy(dst + (size_t)lo * es, srow, (size_t)(hi - lo) * es);
            else
                job->t->copy_strided(dst + (size_t)lo * es, srow, hi - lo, s);
            memset(dst + (size_t)hi * es, 0, (size_t)(ow - hi) * es);
        }
        for (int j = L - 1; j >= 0; j--) { /* next outer output position */
            if (++o[j] < g->out[j]) break;
            o[j] = 0;
        }
    }
}

/* Row `row` (of cg * ks) of the column matrix of the group whose input starts at xg,
 * for outer output rows [r0, r1) (the columns of one chunk). */
static void im2col_one(const conv_job *job, const char *xg, int64_t row, int64_t r0, int64_t r1,
                       char *col, int64_t ld)
{
    int64_t kidx[OG_CONV_MAX_SP];
    kernel_index(&job->g, row % job->ks, kidx);
    const char *xc = xg + (size_t)((row / job->ks) * job->is) * job->t->es;
    char *dst = col + (size_t)(row * ld) * job->t->es;
    if (job->g.nsp <= 2)
        job->t->im2col_2d(&job->g, xc, job->g.nsp == 2 ? kidx[0] : 0, kidx[job->g.nsp - 1], r0, r1,
                          dst);
    else
        im2col_row(job, xc, kidx, r0, r1, dst);
}

/* The reverse of im2col_row: add one col row (one value per input position, for output
 * channel base yc and kernel offset kidx) into the output positions it touches. */
static void col2im_row(const conv_job *job, const char *src, const int64_t *kidx, char *yc)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int L = g->nsp - 1;
    const int64_t iw = g->in[L], ow = g->out[L], s = g->stride[L];
    const int64_t off = kidx[L] * g->dil[L] - g->pad_begin[L]; /* output = i * s + off */
    const int64_t lo = clamp64(ceil_div(-off, s), 0, iw);
    const int64_t hi = clamp64(ceil_div(ow - off, s), lo, iw);
    int64_t i[OG_CONV_MAX_SP] = {0}, ostride[OG_CONV_MAX_SP];
    int64_t n_outer = 1;
    ostride[L] = 1;
    for (int j = L - 1; j >= 0; j--) ostride[j] = ostride[j + 1] * g->out[j + 1];
    for (int j = 0; j < L; j++) n_outer *= g->in[j];

    for (int64_t r = 0; r < n_outer; r++, src += (size_t)iw * es) {
        bool inside = hi > lo;
        int64_t dst = 0;
        for (int j = 0; j < L && inside; j++) {
            int64_t oo = i[j] * g->stride[j] + kidx[j] * g->dil[j] - g->pad_begin[j];
            if (oo < 0 || oo >= g->out[j]) inside = false;
            dst += oo * ostride[j];
        }
        if (inside)
            job->t->add_strided(yc + (size_t)(dst + lo * s + off) * es, s, src + (size_t)lo * es,
                                hi - lo);
        for (int j = L - 1; j >= 0; j--) {
            if (++i[j] < g->in[j]) break;
            i[j] = 0;
        }
    }
}

/* col2im_2d's bounds per tap of 1-D/2-D g, computed as col2im_2d computes them without a
 * plan; false (no plan) for more dims or more than C2I_MAX_TAPS taps. */
static bool c2i_plan(const og_conv_geom *g, c2i_tap *plan)
{
    if (g->nsp > 2) return false;
    const int L = g->nsp - 1;
    const int64_t iw = g->in[L], ow = g->out[L], s = g->stride[L];
    const int64_t ih_n = L ? g->in[0] : 1, oh_n = L ? g->out[0] : 1, sh = L ? g->stride[0] : 1;
    const int64_t kh_n = L ? g->kernel[0] : 1, kw_n = g->kernel[L];
    if (kh_n * kw_n > C2I_MAX_TAPS) return false;
    for (int64_t kh = 0; kh < kh_n; kh++) {
        const int64_t h_off = L ? kh * g->dil[0] - g->pad_begin[0] : 0; /* oh = ih*sh + h_off */
        const int64_t ia = clamp64(ceil_div(-h_off, sh), 0, ih_n);
        const int64_t ib = clamp64(ceil_div(oh_n - h_off, sh), ia, ih_n);
        for (int64_t kw = 0; kw < kw_n; kw++) {
            const int64_t off = kw * g->dil[L] - g->pad_begin[L]; /* ow = i * s + off */
            const int64_t lo = clamp64(ceil_div(-off, s), 0, iw);
            const int64_t hi = clamp64(ceil_div(ow - off, s), lo, iw);
            c2i_tap *p = plan + kh * kw_n + kw;
            p->ia = ia;
            p->ib = hi > lo ? ib : ia; /* no columns: no rows */
            p->lo = lo;
            p->n = hi - lo;
            p->dst0 = h_off * ow + lo * s + off;
        }
    }
    return true;
}

/* Output channel m (of the group) of ConvTranspose: all its kernel rows of col (ld values
 * apart, the image's is values at col) into yg. */
static void col2im_channel(const conv_job *job, const char *col, int64_t ld, int64_t m, char *yg)
{
    const size_t es = job->t->es;
    char *yc = yg + (size_t)(m * job->os) * es;
    if (job->g.nsp <= 2) {
        job->t->col2im_2d(&job->g, job->c2i, col + (size_t)(m * job->ks * ld) * es, ld, yc);
        return;
    }
    for (int64_t r = 0; r < job->ks; r++) {
        int64_t kidx[OG_CONV_MAX_SP];
        kernel_index(&job->g, r, kidx);
        col2im_row(job, col + (size_t)((m * job->ks + r) * ld) * es, kidx, yc);
    }
}

/* Rows [m0, m1) of part p of `parts` of mg output channels: multiples of 16 (the BLAS
 * kernels' row block) where that still balances. */
static int64_t part_begin(int64_t mg, int64_t p, int64_t parts)
{
    int64_t m = p * mg / parts;
    return mg >= 16 * parts && p < parts ? m / 16 * 16 : m;
}

/* C[mg, ncols] (+ C when acc) = W[mg, kk] · op(B), B [kk, ncols] or with tb [ncols, kk]. */
typedef struct gemm_args {
    const char *w;
    int64_t lda;
    const char *b;
    int64_t ldb, ncols, kk;
    bool tb, acc;
    char *c;
    int64_t ldc;
} gemm_args;

static void gemm_part(const og_kernel_ctx *k, const conv_job *job, const gemm_args *a, int64_t p,
                      int64_t parts)
{
    const size_t es = job->t->es;
    int64_t m0 = part_begin(job->mg, p, parts), m1 = part_begin(job->mg, p + 1, parts);
    if (m1 > m0)
        job->t->gemm(k, false, a->tb, m1 - m0, a->ncols, a->kk, a->w + (size_t)(m0 * a->lda) * es,
                     a->lda, a->b, a->ldb, a->acc, a->c + (size_t)(m0 * a->ldc) * es, a->ldc);
}

/* Y_g[mg, ncols] (+)= W_g · B.  With msplit, each thread takes a band of output channels:
 * when the columns are few (deep layers of one image) the weights dominate, and BLAS's
 * own threading would have every thread pack all of them. */
typedef struct gemm_bands {
    const og_kernel_ctx *inner;
    const conv_job *job;
    const gemm_args *a;
    int64_t parts;
} gemm_bands;

static void gemm_band_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const gemm_bands *r = ctx;
    (void)slot;
    for (int64_t p = i0; p < i1; p++) gemm_part(r->inner, r->job, r->a, p, r->parts);
}

static void conv_gemm(const og_kernel_ctx *k, const conv_job *job, const gemm_args *a)
{
    const double work = (double)job->mg * (double)a->kk * (double)a->ncols;
    if (job->msplit > 1 && k->threads > 1 && work > 262144.0) {
        og_kernel_ctx inner = *k;
        inner.threads = 1;
        /* a band a thread: smaller ones would each pack B again (EfficientNet's 2x2
         * projections at batch 8 measured slower in 8 bands than on one thread) */
        const int64_t parts = job->msplit;
        gemm_bands r = {&inner, job, a, parts};
        og_par_range(k, (int)job->msplit, parts, 1, gemm_band_range, &r);
    } else {
        gemm_part(k, job, a, 0, 1);
    }
}

/* Padded input rows [r0, r0 + nr) of the cg channels at xg, each wp wide, into pad. */
static void pad_rows(const conv_job *job, const char *xg, int64_t r0, int64_t nr, char *pad)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int64_t ih_n = g->in[0], iw = g->in[1], wp = job->wp, pl = g->pad_begin[1];
    const int64_t lo = clamp64(pl, 0, wp), hi = clamp64(pl + iw, lo, wp); /* in-bounds columns */
    for (int64_t c = 0; c < job->cg; c++)
        for (int64_t i = 0; i < nr; i++) {
            char *d = pad + (size_t)((c * nr + i) * wp) * es;
            int64_t ih = r0 + i - g->pad_begin[0];
            if (ih < 0 || ih >= ih_n || hi == lo) {
                memset(d, 0, (size_t)wp * es);
                continue;
            }
            memset(d, 0, (size_t)lo * es);
            memcpy(d + (size_t)lo * es, xg + (size_t)((c * ih_n + ih) * iw + lo - pl) * es,
                   (size_t)(hi - lo) * es);
            memset(d + (size_t)hi * es, 0, (size_t)(wp - hi) * es);
        }
}

/* The column paths' parallel loops (og_par_for), one item each: a block of a wide Conv's
 * column rows, a transposed column row, a column row of im2col (of one image or of `cnt`
 * images side by side), an output channel of col2im.  Each loop names the fields it uses. */
typedef struct conv_loop {
    const conv_job *job;
    const char *x; /* the input (base, xg, x of image 0) */
    char *col, *y;
    int64_t r0, r1; /* output rows (im2col), kernel rows (transposed columns) */
    int64_t n;      /* columns of a row, or of each image's part */
    int64_t cstride, avail, rows, nb, cnt, ld;
} conv_loop;

static void wide_rows(const conv_job *job, const char *base, int64_t cstride, int64_t avail,
                      int64_t r0, int64_t r1, int64_t ncw, char *col);

/* item b of nb: column rows [b * rows / nb, (b + 1) * rows / nb) of a wide Conv */
static void wide_loop(void *ctx, int64_t b0, int64_t b1, int slot)
{
    const conv_loop *l = ctx;
    (void)slot;
    for (int64_t b = b0; b < b1; b++)
        wide_rows(l->job, l->x, l->cstride, l->avail, b * l->rows / l->nb,
                  (b + 1) * l->rows / l->nb, l->n, l->col);
}

/* item o: transposed column row o (kernel rows [r0, r1), n = kc values) of image xg */
static void tcol_loop(void *ctx, int64_t o0, int64_t o1, int slot)
{
    const conv_loop *l = ctx;
    const conv_job *job = l->job;
    (void)slot;
    for (int64_t o = o0; o < o1; o++)
        job->t->tcol_row(&job->g, l->x, job->is, o, l->r0, l->r1,
                         l->col + (size_t)(o * l->n) * job->t->es);
}

/* item r: transposed column row r % os of image r / os of a batch from x (group offset
 * included), n = kc values */
static void tbatch_loop(void *ctx, int64_t r0, int64_t r1, int slot)
{
    const conv_loop *l = ctx;
    const conv_job *job = l->job;
    const size_t es = job->t->es;
    (void)slot;
    for (int64_t r = r0; r < r1; r++)
        job->t->tcol_row(&job->g, l->x + (size_t)(r / job->os * job->g.c * job->is) * es, job->is,
                         r % job->os, l->r0, l->r1, l->col + (size_t)(r * l->n) * es);
}

static void im2col_one(const conv_job *job, const char *xg, int64_t row, int64_t r0, int64_t r1,
                       char *col, int64_t ncols);
static void col2im_channel(const conv_job *job, const char *col, int64_t ld, int64_t m, char *yg);

/* item r: column row r of `cnt` images from x (image b's part n columns from b * n, the
 * images ld input values apart), output rows [r0, r1) */
static void im2col_loop(void *ctx, int64_t q0, int64_t q1, int slot)
{
    const conv_loop *l = ctx;
    const size_t es = l->job->t->es;
    (void)slot;
    for (int64_t r = q0; r < q1; r++)
        for (int64_t b = 0; b < l->cnt; b++)
            im2col_one(l->job, l->x + (size_t)(b * l->ld) * es, r, l->r0, l->r1,
                       l->col + (size_t)(b * l->n) * es, l->n * l->cnt);
}

/* item m: output channel m of col2im (col rows ld apart) into y */
static void col2im_loop(void *ctx, int64_t m0, int64_t m1, int slot)
{
    const conv_loop *l = ctx;
    (void)slot;
    for (int64_t m = m0; m < m1; m++) col2im_channel(l->job, l->col, l->ld, m, l->y);
}

/* Column rows [r0, r1), row r = (channel, kh, kw), of a wide Conv: ncw values of the
 * (padded) input rows at base (cstride per channel, avail values available from base)
 * from the tap's offset on.  The tap is stepped rather than divided out per row. */
static void wide_rows(const conv_job *job, const char *base, int64_t cstride, int64_t avail,
                      int64_t r0, int64_t r1, int64_t ncw, char *col)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int64_t kh_n = g->kernel[0], kw_n = g->kernel[1];
    int64_t c = r0 / job->ks, kh = r0 % job->ks / kw_n, kw = r0 % kw_n;
    for (int64_t r = r0; r < r1; r++) {
        int64_t start = kh * g->dil[0] * job->wp + kw * g->dil[1];
        int64_t n = avail - start < ncw ? avail - start : ncw; /* (never short; for safety) */
        char *d = col + (size_t)(r * ncw) * es;
        memcpy(d, base + (size_t)(c * cstride + start) * es, (size_t)n * es);
        memset(d + (size_t)n * es, 0, (size_t)(ncw - n) * es); /* only unused columns */
        if (++kw == kw_n) {
            kw = 0;
            if (++kh == kh_n) {
                kh = 0;
                c++;
            }
        }
    }
}

/* Wide Conv of output rows [r0, r1) of one (image, group): see conv_job.wide. */
static void conv_wide(const og_kernel_ctx *k, const conv_job *job, const char *xg, const char *wg,
                      const char *bias, int64_t r0, int64_t r1, char *yg, char *col)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    /* the unused columns after the last output row are left out */
    const int64_t wp = job->wp, ncw = (r1 - r0 - 1) * wp + g->out[1];
    char *tmp = col + job->col_bytes;
    const char *base = xg + (size_t)(r0 * wp) * es;          /* unpadded: wp == iw */
    int64_t cstride = job->is, avail = (g->in[0] - r0) * wp; /* per channel, from base */
    if (job->padded) {
        int64_t nr = r1 - r0 + (g->kernel[0] - 1) * g->dil[0];
        char *pad = tmp + job->tmp_bytes;
        pad_rows(job, xg, r0, nr, pad);
        base = pad;
        cstride = avail = nr * wp;
    }
    const int64_t ow = g->out[1];
    if (job->taps) {
        int64_t off[OG_CONV_PW_MAX_K];
        const int64_t kw_n = g->kernel[1];
        for (int64_t r = 0; r < job->kdim; r++) {
            const int64_t c = r / job->ks, kh = r % job->ks / kw_n, kw = r % kw_n;
            off[r] = c * cstride + kh * g->dil[0] * wp + kw * g->dil[1];
        }
        if (og_conv_pw_taps(k, job->mg, job->kdim, ncw, (const float *)base, off, (const float *)wg,
                            (const float *)bias, (float *)tmp, ncw)) {
            job->t->unwide(yg + (size_t)(r0 * ow) * es, job->os, tmp, ncw, wp, NULL, job->mg,
                           r1 - r0, ow);
            return; /* the activation applied in the kernel's tiles */
        }
    }
    const int64_t rows = job->kdim, nb = k->threads > 1 ? 2 * k->threads : 1;
    conv_loop wl = {.job = job,
                    .x = base,
                    .col = col,
                    .n = ncw,
                    .cstride = cstride,
                    .avail = avail,
                    .rows = rows,
                    .nb = nb};
    og_par_for(k, nb, (double)rows / (double)nb * (double)ncw, OG_PAR_MIN_COMPUTE, wide_loop, &wl);
    gemm_args ga = {wg, job->kdim, col, ncw, ncw, job->kdim, false, false, tmp, ncw};
    conv_gemm(k, job, &ga);
    job->t->unwide(yg + (size_t)(r0 * ow) * es, job->os, tmp, ncw, wp, bias, job->mg, r1 - r0, ow);
    if (job->act_in_items)
        act_rows(job, yg + (size_t)(r0 * ow) * es, job->mg, (r1 - r0) * ow, job->os);
}

/* Transposed-column Conv (see conv_job.tcol) of one (image, group), kernel rows [qa, qb)
 * (of kdim / kw): Y_g (+)= W_g[:, rows] · col[rows]ᵀ into yg, the bias first when given,
 * else the first chunk overwrites. */
static void conv_tcol(const og_kernel_ctx *k, const conv_job *job, const char *xg, const char *wg,
                      const char *bias, char *yg, char *col, int64_t qa, int64_t qb)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int64_t kw = g->kernel[g->nsp - 1], qc = job->kc / kw;
    const int64_t os = job->os;
    if (bias) job->t->fill_rows(yg, bias, job->mg, os, os);
    for (int64_t q0 = qa; q0 < qb; q0 += qc) {
        const int64_t q1 = q0 + qc < qb ? q0 + qc : qb, kc = (q1 - q0) * kw;
        conv_loop tl = {.job = job, .x = xg, .col = col, .r0 = q0, .r1 = q1, .n = kc};
        og_par_for(k, os, (double)kc, OG_PAR_MIN_COMPUTE, tcol_loop, &tl);
        gemm_args ga = {wg + (size_t)(q0 * kw) * es, job->kdim, col, kc, os, kc, true,
                        bias != NULL || q0 > qa,     yg,        os};
        if (job->tcol_nn) {
            char *coln = col + job->col_bytes;
            job->t->transpose(coln, col, os, kc);
            ga.b = coln;
            ga.ldb = os;
            ga.tb = false;
        }
        conv_gemm(k, job, &ga);
    }
}

/* Batched Conv (see conv_job.batched) of unit u = (block of images, group). */
static void conv_batched(const og_kernel_ctx *k, const conv_job *job, int64_t u, char *col)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int64_t gi = u % g->group, n0 = u / g->group * job->bimg, os = job->os;
    const int64_t nb = g->n - n0 < job->bimg ? g->n - n0 : job->bimg, ncol = nb * os;
    const int64_t n_rows = os / g->out[g->nsp - 1];
    char *tmp = col + job->col_bytes;
    for (int64_t b = 0; b < nb; b++) {
        const char *xg = job->x + (size_t)(((n0 + b) * g->c + gi * job->cg) * job->is) * es;
        char *cb = col + (size_t)(b * os) * es;
        if (job->pointwise) /* X_g's rows, each os long, side by side (2x2 planes: 16 bytes a
                             * row, where a library call each took 30 us of MobileNet-v2
                             * 8x64x64's 960-channel layers) */
            job->t->copy_rows(cb, ncol, xg, os, job->cg, os);
        else
            for (int64_t r = 0; r < job->kdim; r++) im2col_one(job, xg, r, 0, n_rows, cb, ncol);
    }
    const char *bias = job->b ? job->b + (size_t)(gi * job->mg) * es : NULL;
    const char *wg = job->w + (size_t)(gi * job->mg * job->kdim) * es;
    og_kernel_ctx plain = *k;
    plain.act.kind = OG_FUSE_NONE; /* applied below, per image */
    /* short sums: the pointwise kernel, the bias in its sums; else the GEMM, the bias after */
    const bool pw =
        job->pwcols && og_conv_pw_cols(&plain, job->mg, job->kdim, ncol, (const float *)col, ncol,
                                       (const float *)wg, (const float *)bias, (float *)tmp, ncol);
    if (!pw) {
        gemm_args ga = {wg, job->kdim, col, ncol, ncol, job->kdim, false, false, tmp, ncol};
        conv_gemm(k, job, &ga);
    }
    for (int64_t b = 0; b < nb; b++) {
        char *yb = job->y + (size_t)(((n0 + b) * g->m + gi * job->mg) * os) * es;
        job->t->unwide(yb, os, tmp + (size_t)(b * os) * es, ncol, os, pw ? NULL : bias, job->mg, 1,
                       os);
        if (job->act_in_items) og_cpu_act(job->act, job->dt, yb, job->mg * os);
    }
}

/* Batched transposed-column Conv (see conv_job.tbatch) of unit u = (block of images,
 * group). */
static void conv_tbatch(const og_kernel_ctx *k, const conv_job *job, int64_t u, char *col)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int64_t gi = u % g->group, n0 = u / g->group * job->bimg, os = job->os;
    const int64_t nb = g->n - n0 < job->bimg ? g->n - n0 : job->bimg, ncol = nb * os;
    const int64_t kw = g->kernel[g->nsp - 1], rows = job->kdim / kw, qc = job->kc / kw;
    const char *wg = job->w + (size_t)(gi * job->mg * job->kdim) * es;
    char *tmp = col + job->col_bytes;
    for (int64_t q0 = 0; q0 < rows; q0 += qc) {
        const int64_t q1 = q0 + qc < rows ? q0 + qc : rows, kc = (q1 - q0) * kw;
        conv_loop tl = {.job = job,
                        .x = job->x + (size_t)((n0 * g->c + gi * job->cg) * job->is) * es,
                        .col = col,
                        .r0 = q0,
                        .r1 = q1,
                        .n = kc};
        og_par_for(k, ncol, (double)kc, OG_PAR_MIN_COMPUTE, tbatch_loop, &tl);
        gemm_args ga = {
            wg + (size_t)(q0 * kw) * es, job->kdim, col, kc, ncol, kc, true, q0 > 0, tmp, ncol};
        conv_gemm(k, job, &ga);
    }
    const char *bias = job->b ? job->b + (size_t)(gi * job->mg) * es : NULL;
    for (int64_t b = 0; b < nb; b++) {
        char *yb = job->y + (size_t)(((n0 + b) * g->m + gi * job->mg) * os) * es;
        job->t->unwide(yb, os, tmp + (size_t)(b * os) * es, ncol, os, bias, job->mg, 1, os);
    }
}

/* Conv of item it = (image, group, chunk of output rows). */
static void conv_item(const og_kernel_ctx *k, const conv_job *job, int64_t it, char *col)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    if (job->batched) {
        conv_batched(k, job, it, col);
        return;
    }
    if (job->tbatch) {
        conv_tbatch(k, job, it, col);
        return;
    }
    if (job->tcol && job->ksplit > 1) { /* it = (part, unit): into its block of part */
        const int64_t units = g->n * g->group, u = it % units, p = it / units;
        const int64_t rows = job->kdim / g->kernel[g->nsp - 1], gi = u % g->group;
        const char *xg = job->x + (size_t)(((u / g->group) * g->c + gi * job->cg) * job->is) * es;
        conv_tcol(k, job, xg, job->w + (size_t)(gi * job->mg * job->kdim) * es, NULL,
                  job->part + (size_t)(it * job->mg * job->os) * es, col, p * rows / job->ksplit,
                  (p + 1) * rows / job->ksplit);
        return;
    }
    int64_t u = it / job->n_chunks, j = it % job->n_chunks;
    int64_t n = u / g->group, gi = u % g->group;
    const int64_t ow = g->out[g->nsp - 1], n_rows = job->os / ow;
    const int64_t r0 = j * job->chunk_rows;
    const int64_t r1 = r0 + job->chunk_rows < n_rows ? r0 + job->chunk_rows : n_rows;
    const int64_t c0 = r0 * ow, ncols = (r1 - r0) * ow;
    const char *xg = job->x + (size_t)((n * g->c + gi * job->cg) * job->is) * es;
    const char *wg = job->w + (size_t)(gi * job->mg * job->kdim) * es;
    if (job->tcol) {
        conv_tcol(k, job, xg, wg, job->b ? job->b + (size_t)(gi * job->mg) * es : NULL,
                  job->y + (size_t)((n * g->m + gi * job->mg) * job->os) * es, col, 0,
                  job->kdim / g->kernel[g->nsp - 1]);
        return;
    }
    if (job->wide) {
        conv_wide(k, job, xg, wg, job->b ? job->b + (size_t)(gi * job->mg) * es : NULL, r0, r1,
                  job->y + (size_t)((n * g->m + gi * job->mg) * job->os) * es, col);
        return;
    }
    char *yg = job->y + (size_t)((n * g->m + gi * job->mg) * job->os + c0) * es;
    const char *bias = job->b ? job->b + (size_t)(gi * job->mg) * es : NULL;
    const char *bmat = xg + (size_t)c0 * es; /* pointwise: X_g is the [cg, OS] matrix */
    int64_t ldb = job->os;
    if (!job->pointwise) {
        /* a chunk of col is sized to stay in cache from im2col to the product */
        int64_t rows = job->kdim;
        conv_loop il = {.job = job, .x = xg, .col = col, .r0 = r0, .r1 = r1, .n = ncols, .cnt = 1};
        og_par_for(k, rows, (double)ncols, OG_PAR_MIN_COMPUTE, im2col_loop, &il);
        bmat = col;
        ldb = ncols;
    }
    /* short sums: the pointwise kernel, bias and activation in its stores */
    if (job->pwcols &&
        og_conv_pw_cols(k, job->mg, job->kdim, ncols, (const float *)bmat, ldb, (const float *)wg,
                        (const float *)bias, (float *)yg, job->os))
        return;
    /* the bias before the GEMM, which accumulates onto it; pointwise, after it instead,
     * added to the chunk while it is in cache: a pass less over Y than filling it first */
    const bool bias_after = bias && job->pointwise;
    if (bias && !bias_after) job->t->fill_rows(yg, bias, job->mg, ncols, job->os);
    gemm_args ga = {wg,    job->kdim,           bmat, ldb,    ncols, job->kdim,
                    false, bias && !bias_after, yg,   job->os};
    conv_gemm(k, job, &ga);
    if (bias_after) job->t->add_rows(yg, bias, job->mg, ncols, job->os);
    if (job->act_in_items) act_rows(job, yg, job->mg, ncols, job->os);
}

/* ConvTranspose of unit u = (image, group), output channels [m0, m1) of the group (band p
 * of job->trsplit). */
static void conv_transpose_unit(const og_kernel_ctx *k, const conv_job *job, int64_t u, int64_t p,
                                char *col)
{
    const og_conv_geom *g = &job->g;
    const size_t es = job->t->es;
    const int64_t m0 = part_begin(job->mg, p, job->trsplit),
                  m1 = part_begin(job->mg, p + 1, job->trsplit);
    const int64_t gi = u % g->group, n0 = u / g->group * job->nb;
    const int64_t nb = g->n - n0 < job->nb ? g->n - n0 : job->nb, is = job->is;
    const char *xg = job->x + (size_t)((n0 * g->c + gi * job->cg) * is) * es;
    const char *wg = job->w + (size_t)(gi * job->cg * job->kdim) * es;
    const char *bias = job->b ? job->b + (size_t)(gi * job->mg) * es : NULL;
    char *yg = job->y + (size_t)((n0 * g->m + gi * job->mg) * job->os) * es;
    if (job->pointwise) {
        /* col2im is the identity: accumulate Wᵀ·X straight into Y */
        job->t->fill_rows(yg, bias, job->mg, job->os, job->os);
        job->t->gemm(k, true, false, job->mg, is, job->cg, wg, job->mg, xg, is, true, yg, job->os);
        return;
    }
    /* col[kdim, nb * is] = W_gᵀ · X_g of nb images side by side (copied so, when several) */
    const char *xb = xg;
    if (nb > 1) {
        char *xcat = col + job->col_bytes;
        for (int64_t c = 0; c < job->cg; c++)
            for (int64_t b = 0; b < nb; b++)
                memcpy(xcat + (size_t)((c * nb + b) * is) * es,
                       xg + (size_t)((b * g->c + c) * is) * es, (size_t)is * es);
        xb = xcat;
    }
    /* the band's rows of col: its channels' kernel rows (col holds them from its start) */
    const int64_t r0 = m0 * job->ks, nr = (m1 - m0) * job->ks;
    if (nr <= 0) return;
    job->t->gemm(k, true, false, nr, nb * is, job->cg, wg + (size_t)r0 * es, job->kdim, xb, nb * is,
                 false, col, nb * is);
    for (int64_t b = 0; b < nb; b++) {
        char *yb = yg + (size_t)((b * g->m + m0) * job->os) * es;
        job->t->fill_rows(yb, bias ? bias + (size_t)m0 * es : NULL, m1 - m0, job->os, job->os);
        /* output channels write disjoint parts of Y, so they can go in parallel */
        const char *cb = col + (size_t)(b * is) * es;
        conv_loop cl = {.job = job, .col = (char *)cb, .y = yb, .ld = nb * is};
        og_par_for(k, m1 - m0, (double)(job->ks * is), OG_PAR_MIN_COMPUTE, col2im_loop, &cl);
    }
}

/* Items [t*I/slots, (t+1)*I/slots) with column buffer t. */
/* Items [i0, i1) on thread slot `slot`'s column buffer (og_par_range). */
typedef struct conv_run_items {
    const og_kernel_ctx *k; /* the items' own (BLAS's threads) */
    const conv_job *job;
    bool transpose;
} conv_run_items;

static void run_items(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const conv_run_items *r = ctx;
    const conv_job *job = r->job;
    char *col = job->col ? job->col + (size_t)slot * job->slot_bytes : NULL;
    for (int64_t it = i0; it < i1; it++) {
        if (r->transpose)
            conv_transpose_unit(r->k, job, it / job->trsplit, it % job->trsplit, col);
        else
            conv_item(r->k, job, it, col);
    }
}

/* ---- the residual Add run inside a Conv (og_kernel_ctx.res) ------------------------------ */

#define CONV_RES_CHUNK 16384 /* values per item of conv_then_res's pass */

typedef struct res_job {
    const og_kernel_ctx *k;
    float *y;
    const float *r;
    int64_t n;
} res_job;

static void res_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const res_job *j = ctx;
    (void)slot;
    const int64_t a = i0 * CONV_RES_CHUNK,
                  e = i1 * CONV_RES_CHUNK < j->n ? i1 * CONV_RES_CHUNK : j->n;
    float *restrict y = j->y;
    const float *restrict r = j->r;
    for (int64_t i = a; i < e; i++) y[i] += r[i];
    og_cpu_act(&j->k->act, OG_FLOAT, y + a, e - a);
}

/* Whether the path conv_run takes for this call adds k->res in its own stores: the packed
 * panels, the pointwise tiles (not with images side by side) and the sums by shares of the
 * input channels (kshare: conv_run's decision); the others leave it to conv_then_res.  The
 * same tests in the same order as conv_run's. */
static bool conv_res_in_stores(const og_kernel_ctx *k, const og_conv_geom *g, const og_tensor *x,
                               const og_tensor *w, bool transpose, bool kshare)
{
    if (transpose || x->dtype != OG_FLOAT || x->numel == 0 || w->numel == 0 || k->max_pool ||
        (g->group == 1 && covers_input(g)) || og_conv_direct_applies(g, false) ||
        og_conv_wino_applies(g, x->dtype))
        return false;
    if (og_conv_panel_applies(k, g, x->dtype)) return true;
    if (og_conv_pw_applies(g, x->dtype)) return !og_conv_pw_images(g);
    return kshare;
}

/* The Conv without k->res and k->act, then y = act(y + res) in chunks on the threads, as
 * the Add and its activation would: the same values. */
static og_status conv_then_res(const og_kernel_ctx *k, og_kernel_fn self,
                               const og_tensor *const *in, int n_in, og_tensor *const *out,
                               int n_out, bool transpose);

/* self: the kernel (Conv's or ConvTranspose's), which a 16-bit X runs on float32 copies. */
static og_status conv_run(const og_kernel_ctx *k, og_kernel_fn self, const og_tensor *const *in,
                          int n_in, og_tensor *const *out, int n_out, bool transpose)
{
    const og_conv_params *p = k->params;
    const og_tensor *x = in[0], *w = in[1], *b = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, conv_impls, x->dtype);
    if (im && !im->loops) return og_kernel_via_f32_bound(k, im, self, in, n_in, out, n_out);
    conv_job job;
    memset(&job, 0, sizeof job);
    job.t = im ? im->loops : NULL;
    if (!job.t || w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element types %s/%s%s%s are not supported",
                               og_dtype_name(x->dtype), og_dtype_name(w->dtype), b ? "/" : "",
                               b ? og_dtype_name(b->dtype) : "");
    og_status st = og_conv_geometry(k->node, p, true, x->rank, x->dims, w->rank, w->dims,
                                    b ? b->numel : -1, &job.g);
    if (st) return st;
    const og_conv_geom *g = &job.g;
    if (g->nsp < 1 || y->rank != g->nsp + 2 || y->dtype != x->dtype)
        return og_kernel_error(k, OG_ERR_INTERNAL, "output has an unexpected shape");
    if (y->numel == 0) return OG_OK;
    if (k->res) { /* the residual Add run inside (exec/fuse.h) */
        bool same = k->res->dtype == OG_FLOAT && y->dtype == OG_FLOAT && k->res->rank == y->rank;
        for (int d = 0; same && d < y->rank; d++) same = k->res->dims[d] == y->dims[d];
        if (!same)
            return og_kernel_error(k, OG_ERR_INTERNAL,
                                   "the residual added inside has another shape or type than the "
                                   "output");
    }
    const og_kernel_ctx *korig = k;
    /* a small convolution stays on one thread: BLAS's (OpenMP's threads) below
     * CONV_PAR_MIN_MADDS, the direct, Winograd and pointwise kernels' (the session's workers
     * where it has them) below CONV_PAR_MIN_MADDS_WORKERS */
    og_kernel_ctx one = *k;
    one.threads = 1;
    const double madds = conv_madds(g);
    /* a pointwise Conv summed by shares of its input channels (conv_pw_kshare.h) runs on
     * the threads asked for, whatever the thresholds below make of them: the bits then
     * depend on k->threads alone */
    const bool kshare = !transpose && og_conv_pw_kshare_applies(k, g, x->dtype);
    const og_kernel_ctx *kreq = k;
    const og_kernel_ctx *kown =
        k->threads > 1 && madds < (k->workers ? og_par_min(k, CONV_PAR_MIN_MADDS_WORKERS)
                                              : CONV_PAR_MIN_MADDS)
            ? &one
            : k;
    if (k->threads > 1 && madds < CONV_PAR_MIN_MADDS) k = &one;
    if (k->res && !conv_res_in_stores(k, g, x, w, transpose, kshare))
        return conv_then_res(korig, self, in, n_in, out, n_out, transpose);
    if (!transpose && g->group == 1 && x->numel > 0 && w->numel > 0 && covers_input(g)) {
        /* the kernel covers the whole input once (the weight gradient of a 1x1 Conv: X by
         * dY): Y[n, m] = Σ_k X[n, k] W[m, k] over k = (channel, position), one GEMM
         * [N, K] x [K, M] instead of one matrix-vector product per image */
        const conv_type *ct = job.t;
        const int64_t kk = w->numel / g->m;
        if (b)
            for (int64_t n = 0; n < g->n; n++)
                ct->fill_rows((char *)y->data + (size_t)(n * g->m) * ct->es, b->data, g->m, 1, 1);
        /* the model's W and 2 to 8 images (a squeeze-excite's 1x1 Convs at a small batch):
         * W packed once per session (gemm.h: og_gemm_small_packs) */
        bool fresh;
        float *wp =
            x->dtype == OG_FLOAT && (k->const_in & 2u) && og_gemm_small_packs(g->n, g->m, kk)
                ? og_kcache_get(k, (const char *)w->data + 1,
                                (size_t)og_gemm_small_pack_floats(g->m, kk) * sizeof(float), &fresh)
                : NULL;
        if (wp) {
            if (fresh) og_gemm_small_pack_f32(true, g->m, kk, w->data, kk, wp);
            og_gemm_small_packed_f32(k, g->n, g->m, kk, 1.0f, x->data, kk, wp, b ? 1.0f : 0.0f,
                                     y->data, g->m);
        } else {
            ct->gemm(k, false, true, g->n, g->m, kk, x->data, kk, w->data, kk, b != NULL, y->data,
                     g->m);
        }
        og_cpu_act(&k->act, x->dtype, y->data, y->numel);
        return OG_OK;
    }
    if (k->max_pool) { /* the MaxPool after it (exec/fuse.h), which only conv_s2.c runs */
        bool pooled = !transpose && og_conv_s2_panel_applies(g, x->dtype) && y->dims[0] == g->n &&
                      y->dims[1] == g->m && y->dims[2] == og_conv_s2_pooled(g->out[0]) &&
                      y->dims[3] == og_conv_s2_pooled(g->out[1]);
        if (!pooled)
            return og_kernel_error(k, OG_ERR_INTERNAL,
                                   "a MaxPool fused into a Conv that the stride-2 kernel does not "
                                   "compute, or into an output of another shape");
        if (x->numel == 0 || w->numel == 0) return OG_OK;
        return og_conv_s2(kown, g, x->data, w->data, b ? b->data : NULL, y->data);
    }
    if (x->numel > 0 && w->numel > 0 && og_conv_direct_applies(g, transpose))
        return og_conv_direct(kown, g, transpose, x->dtype, x->data, w->data, b ? b->data : NULL,
                              y->data);
    /* 3x3 stride-1 float Conv of enough channels and tiles: Winograd (conv_wino.c) */
    if (!transpose && x->numel > 0 && w->numel > 0 && og_conv_wino_applies(g, x->dtype))
        return og_conv_wino(kown, g, x->data, w->data, false, b ? b->data : NULL, y->data);
    /* and the ConvTranspose of such a Conv's geometry (a 3x3 Conv's input gradient), by the
     * same kernel on its weights turned, where the GEMM and col2im took 1.7 ms of ResNet-18
     * 8x64x64's 16x16 layers (1.05 ms forward) */
    og_conv_geom tg;
    if (transpose && x->numel > 0 && w->numel > 0 && og_conv_wino_transposed(g, &tg) &&
        og_conv_wino_applies(&tg, x->dtype))
        return og_conv_wino(kown, &tg, x->data, w->data, true, b ? b->data : NULL, y->data);
    /* float Conv of one image on a small plane with the model's W: W packed once per
     * session, products by panels of 32 channels (conv_panel.c) */
    if (!transpose && x->numel > 0 && w->numel > 0 && og_conv_panel_applies(k, g, x->dtype))
        return og_conv_panel(kshare ? kreq : kown, g, x->data, w->data, b ? b->data : NULL,
                             y->data);
    /* pointwise float Conv: one pass over Y, bias and activation included (conv_pw.c) */
    if (!transpose && x->numel > 0 && w->numel > 0 && og_conv_pw_applies(g, x->dtype))
        return og_conv_pw(kown, g, x->data, w->data, b ? b->data : NULL, y->data);
    /* pointwise float Conv of one image and many input channels, on threads: the sum by
     * shares of the input channels, each thread the share it likely wrote (conv_pw_kshare.c) */
    if (kshare && x->numel > 0 && w->numel > 0)
        return og_conv_pw_kshare(kreq, g, x->data, w->data, b ? b->data : NULL, y->data);
    /* stride-2 float Conv of short sums (stems): split planes, no column matrix (conv_s2.c) */
    if (!transpose && x->numel > 0 && w->numel > 0 && og_conv_s2_applies(g, x->dtype))
        return og_conv_s2(kown, g, x->data, w->data, b ? b->data : NULL, y->data);
    /* float Conv of 9 to 16 output channels without pads on rows of 4 to 24 positions
     * (LeNet's second layer): a vector of channels per position, no column matrix
     * (conv_m16.c) */
    if (!transpose && x->numel > 0 && w->numel > 0 && og_conv_m16_applies(g, x->dtype))
        return og_conv_m16(kown, g, x->data, w->data, b ? b->data : NULL, y->data);

    job.dt = x->dtype;
    job.act = &k->act;
    job.cg = g->c / g->group;
    job.mg = g->m / g->group;
    job.ks = job.is = job.os = 1;
    bool identity = true; /* kernel 1, stride 1, no pads: im2col/col2im would only copy */
    for (int i = 0; i < g->nsp; i++) {
        job.ks *= g->kernel[i];
        job.is *= g->in[i];
        job.os *= g->out[i];
        if (g->kernel[i] != 1 || g->stride[i] != 1 || g->pad_begin[i] != 0 || g->pad_end[i] != 0 ||
            g->out[i] != g->in[i])
            identity = false;
    }
    job.pointwise = identity;
    /* kernel rows are longer than output rows: per copy, the transposed columns move more */
    const int L = g->nsp - 1;
    job.tcol = !transpose && !identity && g->kernel[L] > g->out[L];
    if (!transpose && !identity && !job.tcol && g->nsp == 2 && g->stride[0] == 1 &&
        g->stride[1] == 1) {
        /* wide only where the saved per-row copies outweigh the extra GEMM columns */
        job.wp = g->out[1] + (g->kernel[1] - 1) * g->dil[1];
        job.wide = g->out[1] <= CONV_WIDE_MAX_OW &&
                   (g->m / g->group) * (job.wp - g->out[1]) <= CONV_WIDE_MAX_EXTRA;
        for (int i = 0; i < 2; i++)
            if (g->pad_begin[i] != 0 || g->pad_end[i] != 0) job.padded = true;
        /* short float sums: the wide columns read in place, at most half again as many
         * columns as outputs (LeNet's 5x5 Convs: their im2col was 38 % of the network) */
        const int64_t kdim = job.cg * job.ks;
        job.taps = x->dtype == OG_FLOAT && og_cpu_isa() >= 2 && kdim <= og_conv_pw_max_k() &&
                   2 * (job.wp - g->out[1]) <= g->out[1];
        if (job.taps) job.wide = true;
    }
    job.kdim = (transpose ? job.mg : job.cg) * job.ks;
    c2i_tap plan[C2I_MAX_TAPS];
    if (transpose && c2i_plan(g, plan)) job.c2i = plan;
    job.x = x->data;
    job.w = w->data;
    job.b = b ? b->data : NULL;
    job.y = y->data;

    if (x->numel == 0 || w->numel == 0) {
        /* nothing to sum: the output is the bias */
        for (int64_t n = 0; n < g->n; n++)
            job.t->fill_rows((char *)job.y + (size_t)(n * g->m * job.os) * job.t->es, job.b, g->m,
                             job.os, job.os);
        og_cpu_act(job.act, job.dt, job.y, y->numel);
        return OG_OK;
    }
    job.act_in_items = k->act.kind != OG_FUSE_NONE && !transpose && !job.tcol;

    /* Work split.  Conv's items are (image, group, chunk of output rows); a chunk's column
     * matrix is about CONV_CHUNK_BYTES, so that it stays in cache from im2col to the GEMM.
     * Items go to separate threads (one parallel region, each thread its own column
     * buffer, BLAS single-threaded inside) when there are enough of them or they are
     * small; otherwise they run one by one and BLAS and im2col use the threads. */
    int64_t units = g->n * g->group, n_rows = job.os / g->out[g->nsp - 1];
    int64_t ow = job.wide ? job.wp : g->out[g->nsp - 1]; /* columns per output row */
    int64_t threads = k->threads > 1 ? k->threads : 1;
    job.nb = 1;
    job.trsplit = 1;
    if (transpose && !job.pointwise && job.is <= CONV_TR_BATCH_COLS / 2) {
        /* few input positions: images side by side in one GEMM of about CONV_TR_BATCH_COLS
         * columns, so that Wᵀ is packed once for them all; as many blocks as threads, or,
         * when the weights outweigh the columns, every image in one block and the threads
         * take bands of the output channels, each reading its band's share of Wᵀ (ResNet-18
         * 8x64x64's input gradients through its 2x2 layers, 9.4 MB of weights for 32
         * columns: two threads by images each read all of them, and ran no faster than
         * one) */
        const bool wide_w = threads > 1 && job.mg >= 2 * threads && job.mg >= 4 * g->n * job.is;
        int64_t nb = CONV_TR_BATCH_COLS / job.is,
                per = wide_w ? g->n : (g->n + threads - 1) / threads;
        nb = nb < per ? nb : per;
        job.nb = nb < 1 ? 1 : nb;
        units = (g->n + job.nb - 1) / job.nb * g->group;
        if (wide_w && units < threads) job.trsplit = threads;
    }
    job.chunk_rows = n_rows;
    /* Weights larger than every image's columns: the images of a batch in as few blocks as
     * the columns allow, and the threads split the output channels (msplit), so that each
     * reads its share of the weights, not all of them (ResNet-18's 2x2 layers at batch 8,
     * 9.4 MB of weights for 32 columns: 1.05 ms on one thread, 1.32 on two by images) */
    const bool wsplit = threads > 1 && job.mg >= 2 * threads && job.mg >= 4 * g->n * job.os;
    if (!transpose && !job.tcol && !job.taps && g->n > 1 && job.os <= CONV_BATCH_MAX_OS) {
        /* small outputs of several images: blocks of bimg images in one GEMM of about
         * CONV_BATCH_COLS columns whose column matrix stays within 2 CONV_CHUNK_BYTES, as
         * many blocks as threads at least */
        int64_t per = wsplit ? g->n : (g->n + threads - 1) / threads;
        int64_t nb = CONV_BATCH_COLS / job.os;
        int64_t fit = 2 * CONV_CHUNK_BYTES / (job.kdim * job.os * (int64_t)job.t->es);
        nb = nb < fit ? nb : fit;
        nb = nb < per ? nb : per;
        if (nb > 1) {
            job.batched = true;
            job.wide = false;
            job.bimg = nb;
            units = (g->n + nb - 1) / nb * g->group;
            job.msplit = units < threads && job.mg >= 2 * threads ? threads : 1;
        }
    }
    if (job.tcol && g->n > 1 && job.os <= CONV_TBATCH_MAX_OS && job.mg >= CONV_TBATCH_MIN_M) {
        /* images side by side, about CONV_BATCH_COLS GEMM columns, as many blocks as
         * threads at least; K in chunks of whole kernel rows of at most CONV_CHUNK_BYTES */
        int64_t per = wsplit ? g->n : (g->n + threads - 1) / threads;
        int64_t nb = CONV_BATCH_COLS / job.os;
        nb = nb < per ? nb : per;
        if (nb > 1) {
            job.tbatch = true;
            job.bimg = nb;
            units = (g->n + nb - 1) / nb * g->group;
            int64_t kw = g->kernel[L], rows = job.kdim / kw;
            int64_t qc = CONV_CHUNK_BYTES / (nb * job.os * kw * (int64_t)job.t->es);
            qc = qc < 1 ? 1 : qc > rows ? rows : qc;
            job.kc = qc * kw;
            job.msplit = units < threads && job.mg >= 2 * threads ? threads : 1;
        }
    }
    if (job.batched || job.tbatch) {
        /* planned above */
    } else if (job.tcol) {
        /* one item per (image, group), K in chunks of at most CONV_CHUNK_BYTES of col and
         * CONV_TCOL_MNK multiply-adds */
        int64_t kw = g->kernel[L], rows = job.kdim / kw;
        double per_row = (double)job.os * (double)kw; /* col values per kernel row */
        double qc = (double)CONV_CHUNK_BYTES / (per_row * (double)job.t->es);
        double qm = (double)CONV_TCOL_MNK / (per_row * (double)job.mg);
        qc = qm < qc ? qm : qc;
        qc = qc < 1 ? 1 : qc > (double)rows ? (double)rows : qc;
        job.kc = (int64_t)qc * kw;
        job.msplit = 1;
        job.ksplit = 1;
        if (units < threads && (double)job.mg * (double)job.kdim * (double)job.os * (double)units >=
                                   (double)CONV_TCOL_SPLIT_MIN)
            job.ksplit = rows < threads ? rows : threads;
        job.tcol_nn = job.mg * job.os > CONV_TCOL_TN_MN;
    } else if (!transpose) {
        if (!job.pointwise) {
            int64_t per_row = job.kdim * ow * (int64_t)job.t->es;
            int64_t cr = CONV_CHUNK_BYTES / per_row;
            if (cr * ow < CONV_CHUNK_MIN_COLS) cr = CONV_CHUNK_MIN_COLS / ow + 1; /* GEMM width */
            if (cr < job.chunk_rows) job.chunk_rows = cr;
        } else {
            /* pointwise: a chunk of Y stays in cache from the GEMM through the bias to the
             * activation (MobileNet's expansions write megabytes) */
            int64_t cr = CONV_CHUNK_BYTES / (job.mg * ow * (int64_t)job.t->es);
            if (cr * ow < CONV_CHUNK_MIN_COLS) cr = CONV_CHUNK_MIN_COLS / ow + 1; /* GEMM width */
            if (cr < job.chunk_rows) job.chunk_rows = cr;
        }
        job.msplit = 1;
        if (units < threads && job.os <= 2 * job.mg && job.mg >= 2 * threads) {
            job.msplit = threads; /* few columns, many channels: split the channels */
        } else if (units < threads) {
            /* more chunks, a multiple of the threads each image needs, for balance */
            int64_t want = (threads + units - 1) / units;
            int64_t chunks = (n_rows + job.chunk_rows - 1) / job.chunk_rows;
            chunks = (chunks + want - 1) / want * want;
            int64_t cr = (n_rows + chunks - 1) / chunks, min_cr = CONV_PAR_MIN_COLS / ow + 1;
            job.chunk_rows = cr > min_cr ? cr : min_cr < n_rows ? min_cr : n_rows;
        }
        if (job.chunk_rows < 1) job.chunk_rows = 1;
    }
    /* after the plan: batched blocks turn wide rows off */
    job.pwcols = !transpose && !job.tcol && !job.wide && !job.pointwise && job.dt == OG_FLOAT &&
                 job.kdim <= og_conv_pw_max_k() && og_cpu_isa() >= 2;
    job.n_chunks = (n_rows + job.chunk_rows - 1) / job.chunk_rows;
    int64_t items = units * job.n_chunks;
    double item_work = (double)job.mg * (double)job.cg * (double)job.ks *
                       (double)(transpose ? job.is * job.nb : job.chunk_rows * ow);
    if (job.trsplit > 1) {
        items = units * job.trsplit;
        item_work /= (double)job.trsplit;
    }
    if (job.batched || job.tbatch) item_work *= (double)job.bimg;
    if (job.tcol && job.ksplit > 1) {
        items = units * job.ksplit;
        item_work /= (double)job.ksplit;
    }
    int64_t slots = 1;
    if (threads > 1 && items > 1 && (items >= threads || item_work < (double)(1 << 22)) &&
        (!(job.batched || job.tbatch) || item_work * (double)items >= CONV_PAR_MIN_WORK))
        slots = items < threads ? items : threads;

    if (job.batched || job.tbatch) {
        /* the block's column matrix (or inputs side by side; tbatch: a chunk of K of it),
         * then the GEMM's result; no overflow: bounded by the sizes of X (times the kernel)
         * and Y */
        job.col_bytes = (size_t)((job.tbatch ? job.kc : job.kdim) * job.bimg * job.os) * job.t->es;
        job.tmp_bytes = (size_t)(job.mg * job.bimg * job.os) * job.t->es;
        job.slot_bytes = job.col_bytes + job.tmp_bytes;
        job.col = og_scratch_get(k, job.slot_bytes * (size_t)slots);
        if (!job.col)
            return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for a %zu-byte column buffer",
                                   job.slot_bytes * (size_t)slots);
    } else if (!job.pointwise) {
        size_t elems;
        int64_t ncols = transpose ? job.is * job.nb : job.chunk_rows * ow;
        if (!og_mul_size((size_t)(job.tcol ? job.kc : job.kdim), (size_t)ncols, &elems) ||
            !og_mul_size(elems, job.t->es, &job.col_bytes))
            return og_kernel_error(k, OG_ERR_NOMEM, "column buffer size overflows");
        if (job.tcol_nn) job.tmp_bytes = job.col_bytes; /* the chunk transposed */
        if (job.nb > 1)                                 /* X of the block's images side by side */
            job.tmp_bytes = (size_t)(job.cg * job.nb * job.is) * job.t->es;
        if (job.wide) { /* no overflow: bounded by the sizes of Y and of the padded X */
            job.tmp_bytes = (size_t)(job.mg * ncols) * job.t->es;
            if (job.padded)
                job.pad_bytes =
                    (size_t)(job.cg * (job.chunk_rows + (g->kernel[0] - 1) * g->dil[0]) * job.wp) *
                    job.t->es;
        }
        job.slot_bytes = job.col_bytes + job.tmp_bytes + job.pad_bytes;
        if (job.slot_bytes < job.col_bytes || !og_mul_size(job.slot_bytes, (size_t)slots, &elems))
            return og_kernel_error(k, OG_ERR_NOMEM, "column buffer size overflows");
        size_t part_bytes = 0; /* ksplit (< threads) blocks per unit (< threads) of [mg, OS] */
        if (job.tcol && job.ksplit > 1) part_bytes = (size_t)(items * job.mg * job.os) * job.t->es;
        elems += part_bytes;
        job.col = og_scratch_get(k, elems);
        if (!job.col)
            return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for a %zu-byte column buffer",
                                   elems);
        if (part_bytes) job.part = job.col + (elems - part_bytes);
    }

    og_kernel_ctx inner = *k;
    inner.threads = 1;
    conv_run_items r = {slots > 1 ? &inner : k, &job, transpose};
    og_par_range(k, (int)slots, items, 1, run_items, &r);
    if (job.tcol && job.ksplit > 1) /* Y = bias + the parts' sum, per unit */
        for (int64_t u = 0; u < units; u++) {
            int64_t gi = u % g->group, blk = job.mg * job.os;
            char *yg = job.y + (size_t)(((u / g->group) * g->m + gi * job.mg) * job.os) * job.t->es;
            job.t->fill_rows(yg, job.b ? job.b + (size_t)(gi * job.mg) * job.t->es : NULL, job.mg,
                             job.os, job.os);
            for (int64_t q = 0; q < job.ksplit; q++)
                job.t->add_strided(yg, 1, job.part + (size_t)((q * units + u) * blk) * job.t->es,
                                   blk);
        }
    if (job.col) og_scratch_put(k, job.col);
    if (k->act.kind != OG_FUSE_NONE && !job.act_in_items)
        og_cpu_act(job.act, job.dt, job.y, y->numel);
    return OG_OK;
}

static og_status conv_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out);

static og_status conv_then_res(const og_kernel_ctx *k, og_kernel_fn self,
                               const og_tensor *const *in, int n_in, og_tensor *const *out,
                               int n_out, bool transpose)
{
    og_kernel_ctx k2 = *k;
    k2.res = NULL;
    k2.act.kind = OG_FUSE_NONE;
    og_status st = conv_run(&k2, self, in, n_in, out, n_out, transpose);
    if (st) return st;
    res_job j = {k, out[0]->data, k->res->data, out[0]->numel};
    const int64_t items = (j.n + CONV_RES_CHUNK - 1) / CONV_RES_CHUNK;
    og_par_range(k, items > 1 ? k->threads : 1, items, 1, res_range, &j);
    return OG_OK;
}

/* A Conv with the pointwise Conv k->pre in front (exec/fuse.h): x = in[0] is pre's input.
 * Both in one pass where conv_pwdw.c applies, else pre's output into a tensor of the
 * kernel's own and this Conv on it. */
static og_status conv_after_pw(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_pre_conv *pre = k->pre;
    const og_tensor *x = in[0], *w = in[1], *b = n_in > 2 ? in[2] : NULL;
    og_conv_geom g1, g2;
    og_status st = og_conv_geometry(pre->node, pre->node->params, true, x->rank, x->dims,
                                    pre->w->rank, pre->w->dims, pre->b ? pre->b->numel : -1, &g1);
    if (st) return st;
    int64_t mid[OG_MAX_RANK];
    mid[0] = g1.n;
    mid[1] = g1.m;
    for (int i = 0; i < g1.nsp; i++) mid[2 + i] = g1.out[i];
    st = og_conv_geometry(k->node, k->params, true, g1.nsp + 2, mid, w->rank, w->dims,
                          b ? b->numel : -1, &g2);
    if (st) return st;
    og_tensor *y = out[0];
    bool same = y->rank == g2.nsp + 2 && y->dims[0] == g2.n && y->dims[1] == g2.m;
    for (int i = 0; same && i < g2.nsp; i++) same = y->dims[2 + i] == g2.out[i];
    if (!same) return og_kernel_error(k, OG_ERR_INTERNAL, "output has an unexpected shape");
    const og_dtype t = x->dtype;
    if (og_conv_pwdw_applies(&g1, &g2, t) && pre->w->dtype == t &&
        (!pre->b || pre->b->dtype == t) && w->dtype == t && (!b || b->dtype == t) && y->dtype == t)
        return og_conv_pwdw(k, &g1, &pre->act, x->data, pre->w->data, pre->b ? pre->b->data : NULL,
                            &g2, w->data, b ? b->data : NULL, y->data);
    og_tensor *t1 = NULL;
    st = og_tensor_alloc(t, g1.nsp + 2, mid, k->alloc, &t1);
    if (st)
        return og_kernel_error(k, st, "out of memory for the output of '%s' (fused into it)",
                               pre->node->name ? pre->node->name : "");
    og_kernel_ctx k1 = *k;
    k1.node = pre->node;
    k1.params = pre->node->params;
    k1.act = pre->act;
    k1.cache = NULL;
    k1.const_in = 0;
    k1.pre = NULL;
    const og_tensor *in1[3] = {x, pre->w, pre->b};
    st = conv_run(&k1, conv_kernel, in1, pre->b ? 3 : 2, &t1, 1, false);
    if (!st) {
        og_kernel_ctx k2 = *k;
        k2.pre = NULL;
        const og_tensor *in2[3] = {t1, w, b};
        st = conv_run(&k2, conv_kernel, in2, n_in, out, n_out, false);
    }
    og_tensor_free(t1);
    return st;
}

static og_status conv_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    if (k->pre) return conv_after_pw(k, in, n_in, out, n_out);
    return conv_run(k, conv_kernel, in, n_in, out, n_out, false);
}

static og_status conv_transpose_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                       og_tensor *const *out, int n_out)
{
    return conv_run(k, conv_transpose_kernel, in, n_in, out, n_out, true);
}

/* float32, float64 (conv_impls; float16 through float32 copies); W and B must have X's
 * dtype, which the kernel checks. */
const og_kernel_def og_cpu_conv[] = {
    {.name = "Conv", .domain = "", .fn = conv_kernel, .select = select_conv, .act = 1},
    {.name = "ConvTranspose",
     .domain = "",
     .fn = conv_transpose_kernel,
     .select = select_conv,
     .act = 1},
    {.name = NULL}};

/* ---- the weight gradient from X and dY (conv_wgrad.h) ----------------------------------- */

/* Weight gradients by dWᵀ = col · dYᵀ (og_exec_wgrad): sums of at most this many
 * (channel, tap) rows, blocks of at least this many columns */
#define CONV_WGRAD_NN_MAX_KDIM 256
#define CONV_WGRAD_NN_MIN_COLS 2048

/* Images per GEMM: as many as this much column matrix holds. */
#ifndef CONV_WGRAD_COL_BYTES
#define CONV_WGRAD_COL_BYTES ((int64_t)4 << 20)
#endif

og_status og_exec_wgrad(const og_kernel_ctx *k, const og_tensor *x, const og_tensor *dy,
                        og_tensor *dw)
{
    const og_conv_params *p = k->params;
    const int rank = dw->rank, nsp = rank - 2;
    const conv_type *t = x->dtype == OG_FLOAT    ? &conv_type_f32
                         : x->dtype == OG_DOUBLE ? &conv_type_f64
                                                 : NULL;
    if (!t || dy->dtype != x->dtype || dw->dtype != x->dtype)
        return og_kernel_error(
            k, OG_ERR_UNSUPPORTED, "weight gradient: element types %s/%s/%s are not supported",
            og_dtype_name(x->dtype), og_dtype_name(dy->dtype), og_dtype_name(dw->dtype));
    if (nsp < 1 || nsp > OG_CONV_MAX_SP || x->rank != rank || dy->rank != rank ||
        x->dims[0] != dy->dims[0] || x->dims[1] != dw->dims[1] || dy->dims[1] != dw->dims[0])
        return og_kernel_error(
            k, OG_ERR_SHAPE,
            "weight gradient: X of rank %d ([%lld, %lld, ...]) and dY of rank "
            "%d ([%lld, %lld, ...]) do not give dW of rank %d ([%lld, %lld, ...])",
            x->rank, (long long)x->dims[0], (long long)x->dims[1], dy->rank, (long long)dy->dims[0],
            (long long)dy->dims[1], rank, (long long)dw->dims[0], (long long)dw->dims[1]);
    conv_job job;
    memset(&job, 0, sizeof job);
    og_conv_geom *g = &job.g;
    g->nsp = nsp;
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->m = dy->dims[1];
    g->group = 1;
    job.t = t;
    job.ks = job.is = job.os = 1;
    for (int i = 0; i < nsp; i++) {
        g->in[i] = x->dims[2 + i];
        g->kernel[i] = dw->dims[2 + i];
        g->out[i] = dy->dims[2 + i];
        g->stride[i] = p->n_dilations ? p->dilations[i] : 1;
        g->dil[i] = p->n_strides ? p->strides[i] : 1;
        g->pad_begin[i] = p->n_pads ? p->pads[i] : 0;
        g->pad_end[i] = p->n_pads ? p->pads[nsp + i] : 0;
        if (g->stride[i] < 1 || g->dil[i] < 1 || g->pad_begin[i] < 0)
            return og_kernel_error(k, OG_ERR_UNSUPPORTED,
                                   "weight gradient: stride %lld, dilation %lld, begin pad %lld "
                                   "on axis %d",
                                   (long long)g->stride[i], (long long)g->dil[i],
                                   (long long)g->pad_begin[i], 2 + i);
        job.ks *= g->kernel[i];
        job.is *= g->in[i];
        job.os *= g->out[i];
    }
    job.cg = g->c;
    job.mg = g->m;
    job.kdim = g->c * job.ks;
    const size_t es = t->es;
    const int64_t os = job.os, kdim = job.kdim, m = g->m, n_rows = os / g->out[nsp - 1];
    if (dw->numel == 0) return OG_OK;
    if (g->n == 0 || os == 0) {
        memset(dw->data, 0, (size_t)dw->numel * es);
        return OG_OK;
    }
    /* 3x3 stride-1 float Convs: by Winograd (conv_wino.c) */
    if (og_conv_wino_wgrad_applies(g, x->dtype))
        return og_conv_wino_wgrad(k, g, x->data, dy->data, dw->data);
    /* as many images per block as CONV_WGRAD_COL_BYTES of columns hold: the GEMM's depth,
     * and fewer calls (LeNet's first layer: 25 rows of 784 columns per image) */
    int64_t nb = CONV_WGRAD_COL_BYTES / (kdim * os * (int64_t)es);
    nb = nb < 1 ? 1 : nb > g->n ? g->n : nb;
    /* Short sums over many columns (a stem's: 3 channels by 7x7 taps over 8 images of 32x32
     * outputs): dWᵀ [C·k, M] (+)= col · dYᵀ, dY's block transposed to [nb·OS, M] first and
     * dWᵀ into dW at the end, where oneDNN's sgemm ran dY · colᵀ, both operands along the
     * long sum, at half the rate (64 x 147 x 8192: 2.69 ms against 1.48).  Elsewhere that
     * way measured slower in the networks (ResNet-18's 4x4 layers 1.63 -> 2.59 ms). */
    const bool nn =
        x->dtype == OG_FLOAT && kdim <= CONV_WGRAD_NN_MAX_KDIM && nb * os >= CONV_WGRAD_NN_MIN_COLS;
    /* the block's column matrix, then dY's rows of the block side by side (several images)
     * or transposed (nn), then dWᵀ (nn) */
    const size_t col_elems = (size_t)(kdim * nb * os);
    const size_t dyb_elems = nb > 1 || nn ? (size_t)(m * nb * os) : 0;
    const size_t dwt_elems = nn ? (size_t)(kdim * m) : 0;
    const size_t bytes = (col_elems + dyb_elems + dwt_elems) * es;
    char *col = og_scratch_get(k, bytes);
    if (!col)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for a %zu-byte column buffer",
                               bytes);
    char *dyb = col + col_elems * es, *dwt = dyb + dyb_elems * es;
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
        const int64_t cnt = g->n - n0 < nb ? g->n - n0 : nb, ncol = cnt * os;
        conv_loop il = {.job = &job,
                        .x = (const char *)x->data + (size_t)(n0 * g->c * job.is) * es,
                        .col = col,
                        .r0 = 0,
                        .r1 = n_rows,
                        .n = os,
                        .cnt = cnt,
                        .ld = g->c * job.is};
        if (og_conv_cols_fast(g, x->dtype)) /* small planes: by gathers, not a call a row */
            og_conv_cols_images(k, g, (const float *)il.x, il.ld, cnt, (float *)col);
        else
            og_par_for(k, kdim, (double)ncol, OG_PAR_MIN_COMPUTE, im2col_loop, &il);
        if (nn) { /* image b's dY [M, OS] into rows b·OS.. of dYᵀ [ncol, M] */
            for (int64_t b = 0; b < cnt; b++)
                og_transpose_f32((float *)dyb + b * os * m, m,
                                 (const float *)dy->data + (n0 + b) * m * os, os, m, os);
            t->gemm(k, false, false, kdim, m, ncol, col, ncol, dyb, m, n0 > 0, dwt, m);
            continue;
        }
        const char *a = (const char *)dy->data + (size_t)(n0 * m * os) * es;
        int64_t lda = os;
        if (cnt > 1) { /* dY[n0 + b, :, :] side by side: [M, cnt * OS] */
            for (int64_t mm = 0; mm < m; mm++)
                for (int64_t b = 0; b < cnt; b++)
                    memcpy(dyb + (size_t)(mm * ncol + b * os) * es,
                           (const char *)dy->data + (size_t)(((n0 + b) * m + mm) * os) * es,
                           (size_t)os * es);
            a = dyb;
            lda = ncol;
        }
        t->gemm(k, false, true, m, kdim, ncol, a, lda, col, ncol, n0 > 0, dw->data, kdim);
    }
    if (nn) og_transpose_f32(dw->data, kdim, (const float *)dwt, m, kdim, m); /* dW [M, C·k] */
    og_scratch_put(k, col);
    return OG_OK;
}
