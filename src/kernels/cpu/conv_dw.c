/* conv_dw.c: direct convolutions for groups of few channels (see conv_dw.h).
 *
 * Depthwise convolutions (MobileNet, EfficientNet: one input channel per group) through
 * im2col + GEMM make one GEMM of a single row per group, all overhead.  Here each output
 * plane is computed directly:
 *
 *   Conv: the group's input planes are copied once into zero-padded planes (xp, wp values
 *   wide, `rows` rows: exactly what the output reads), so that no tap needs a bounds test.
 *   An output row then is y[i] = b + Σ_c Σ_t w[c,t] · xp_c[i·sw + off_t], off_t = kh·dh·wp +
 *   kw·dw, with the taps of 3x3 and 5x5 kernels unrolled so that the sum stays in
 *   registers; with stride 1 every output row is taken wp wide, which makes the whole
 *   plane one row of (OH−1)·wp + OW values (the wp − OW extra values per row are dropped).
 *
 *   ConvTranspose: y = b, then every input row scattered through each tap:
 *   y[ih·sh + kh·dh − ph][iw·sw + kw·dw − pw] += w[kh,kw] · x[ih][iw] over the in-range
 *   (ih, iw), computed once per tap.
 *
 * The loops (conv_dw_tmpl.h) are compiled for AVX-512, AVX2 + FMA and the build's
 * baseline; the first the CPU has is used.  Planes go to threads, each with its own
 * padded planes. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <math.h>
#include <string.h>

#include "kernels/cpu/conv_dw.h"
#ifdef OG_CPU_X86
#include <immintrin.h>

#include "kernels/cpu/tr16.h"
#include "kernels/cpu/vact.h"
#endif

#define DW_MAX_TAPS 64 /* Conv kernels up to 8x8 */
#define DW_MAX_CG   4  /* input channels per group */
#define DW_MAX_TR   4  /* ConvTranspose: input and output channels per group */
#define DW_DOT_OS   64 /* Conv by dot products: output planes of at most this many values */
/* Depthwise Conv of planes of at most DW_BLK_OS outputs: DW_L channels at once
 * (blk_conv), channels-last in the scratch */
#define DW_L              16
#define DW_BLK_OS         256
#define DW_BLK_P          4  /* blk_conv: output positions summed side by side */
#define DW_BLK_ROW_SLACK  32 /* blk_row: input vectors read past the scratch's rows */
#define DW_IN_PLACE_MIN_W 16 /* dw_in_place: planes at least this wide (stride 2: wider) */
/* Depthwise ConvTranspose with output planes of at most DW_BLK_TR_OS values and taps of at
 * most DW_MAX_TAPS: DW_L channels at once (blk_tr) */
#define DW_BLK_TR_OS 1024
/* The dot-product Conv with one output channel per group: DW_L groups at once (blk_dot)
 * while a block's padded inputs and kernels, channels-last, are at most this many values
 * per lane */
#define DW_BLK_DOT_MAX 65536
/* Multiply-adds below which a call stays on one thread: a parallel region costs more than
 * such a call's work when the other thread is not at hand at once (a shared machine). */
#define DW_PAR_MIN_WORK 1048576.0

typedef struct dw_geom {
    int64_t cg, mg;       /* channels per group: input, output */
    int64_t h, w, oh, ow; /* input and output plane sizes (1-D: h = oh = 1) */
    int64_t kh, kw, sh, sw, dh, dw, ph, pw;
    int64_t rows, wp;         /* Conv: padded planes, rows x wp */
    int64_t plane;            /* values from one input plane to the next (padded or not) */
    int64_t off[DW_MAX_TAPS]; /* Conv: tap t = (kh, kw) at kh*dh*wp + kw*dw */
    bool dot;                 /* Conv with a kernel larger than its output: dot_plane */
} dw_geom;

static int64_t dw_ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t dw_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* blk_conv (AVX-512, float): output positions summed at once by blk_row in rows of ow:
 * the row (4, 7, 14) or 8 at a time; 0 where it does not apply (the position loops: rows
 * under 4 values, kernels other than 3x3 and 5x5, stride above 2, dilation). */
static int dw_blk_row_r(const dw_geom *d)
{
    if (d->kh != d->kw || (d->kw != 3 && d->kw != 5) || d->sh != d->sw || d->sw > 2 || d->dh != 1 ||
        d->dw != 1 || d->ow < 4)
        return 0;
    return d->ow == 4 || d->ow == 7 || d->ow == 14 ? (int)d->ow : 8;
}

typedef struct dw_fns_f32 {
    void (*conv_plane)(const dw_geom *d, const float *xp, const float *wj, float bias, float *y,
                       float *yw);
    void (*pad_plane)(const dw_geom *d, const float *x, float *xp);
    void (*tr_plane)(const dw_geom *d, const float *x, const float *wj, int64_t wstride, float *y);
    void (*dot_plane)(const dw_geom *d, const float *xp, const float *wj, float bias, float *y);
    void (*blk_conv)(const dw_geom *d, const float *xc, int64_t nl, const float *w, const float *b,
                     int64_t c0, float *y_img, float *xb, float *yb, float *wk, bool pack,
                     const og_act *act, og_dtype dt);
    void (*blk_tr)(const dw_geom *d, const float *xc, int64_t nl, const float *w, const float *b,
                   int64_t c0, float *y_img, float *xb, float *yb, const og_act *act, og_dtype dt);
    void (*blk_dot)(const dw_geom *d, const float *x, int64_t g0, int64_t nl, const float *w,
                    const float *b, float *y, float *xb, float *wb, float *yb, const og_act *act,
                    og_dtype dt);
} dw_fns_f32;

typedef struct dw_fns_f64 {
    void (*conv_plane)(const dw_geom *d, const double *xp, const double *wj, double bias, double *y,
                       double *yw);
    void (*pad_plane)(const dw_geom *d, const double *x, double *xp);
    void (*tr_plane)(const dw_geom *d, const double *x, const double *wj, int64_t wstride,
                     double *y);
    void (*dot_plane)(const dw_geom *d, const double *xp, const double *wj, double bias, double *y);
    void (*blk_conv)(const dw_geom *d, const double *xc, int64_t nl, const double *w,
                     const double *b, int64_t c0, double *y_img, double *xb, double *yb, double *wk,
                     bool pack, const og_act *act, og_dtype dt);
    void (*blk_tr)(const dw_geom *d, const double *xc, int64_t nl, const double *w, const double *b,
                   int64_t c0, double *y_img, double *xb, double *yb, const og_act *act,
                   og_dtype dt);
    void (*blk_dot)(const dw_geom *d, const double *x, int64_t g0, int64_t nl, const double *w,
                    const double *b, double *y, double *xb, double *wb, double *yb,
                    const og_act *act, og_dtype dt);
} dw_fns_f64;

/* X(0) ... X(8), X(0) ... X(24): the taps of 3x3 and 5x5 kernels written out */
#define DW_REP9(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)
#define DW_REP25(X)                                                                                \
    DW_REP9(X)                                                                                     \
    X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24)

/* ---- the loops, per type and instruction set ---- */
#define OG_DW_CAT_(a, b, c) a##_##b##_##c
#define OG_DW_CAT(a, b, c)  OG_DW_CAT_(a, b, c)

#define T             float
#define DWFNS         dw_fns_f32
#define MADD(a, b, c) ((a) * (b) + (c))
#define ATTR
#define FN(x) OG_DW_CAT(x, f32, base)
#include "kernels/cpu/conv_dw_tmpl.h"
#undef FN
#undef T
#undef DWFNS
#define T     double
#define DWFNS dw_fns_f64
#define FN(x) OG_DW_CAT(x, f64, base)
#include "kernels/cpu/conv_dw_tmpl.h"
#undef FN
#undef T
#undef DWFNS
#undef MADD
#undef ATTR

#ifdef OG_CPU_X86
#define OG_DW_X86         1
#define MADD_F32(a, b, c) fmaf(a, b, c)
#define MADD_F64(a, b, c) fma(a, b, c)
#define ATTR_AVX512       OG_TARGET_AVX512
#define ATTR_AVX2         OG_TARGET_AVX2

/* blk_conv's copies between planes and channels-last (DW_L == 16), for the float AVX-512
 * loops (DW_TR16): tr16.h's transpose */
_Static_assert(DW_L == 16, "og_tr16_f32 moves blocks of 16 channels");

#define T     float
#define DWFNS dw_fns_f32
#define MADD  MADD_F32
#define ATTR  ATTR_AVX2
#define FN(x) OG_DW_CAT(x, f32, avx2)
#include "kernels/cpu/conv_dw_tmpl.h"
#undef FN
#undef ATTR
#define ATTR    ATTR_AVX512
#define FN(x)   OG_DW_CAT(x, f32, avx512)
#define DW_TR16 og_tr16_f32
#include "kernels/cpu/conv_dw_tmpl.h"
#undef DW_TR16
#undef FN
#undef ATTR
#undef MADD
#undef T
#undef DWFNS

#define T     double
#define DWFNS dw_fns_f64
#define MADD  MADD_F64
#define ATTR  ATTR_AVX2
#define FN(x) OG_DW_CAT(x, f64, avx2)
#include "kernels/cpu/conv_dw_tmpl.h"
#undef FN
#undef ATTR
#define ATTR  ATTR_AVX512
#define FN(x) OG_DW_CAT(x, f64, avx512)
#include "kernels/cpu/conv_dw_tmpl.h"
#undef FN
#undef ATTR
#undef MADD
#undef T
#undef DWFNS
#endif

#include "kernels/cpu/conv_dw_plane.h"
#include "kernels/cpu/conv_dw_reg.h"
#include "kernels/cpu/conv_dw_s2.h"

/* The widest instruction set this CPU has: 2 AVX-512, 1 AVX2 + FMA, 0 the baseline. */
static int dw_isa(void) { return og_cpu_isa(); }

static const dw_fns_f32 *dw_f32(void)
{
#ifdef OG_DW_X86
    switch (dw_isa()) {
    case 2: return &fns_f32_avx512;
    case 1: return &fns_f32_avx2;
    default: break;
    }
#endif
    return &fns_f32_base;
}

static const dw_fns_f64 *dw_f64(void)
{
#ifdef OG_DW_X86
    switch (dw_isa()) {
    case 2: return &fns_f64_avx512;
    case 1: return &fns_f64_avx2;
    default: break;
    }
#endif
    return &fns_f64_base;
}

bool og_conv_direct_applies(const og_conv_geom *g, bool transpose)
{
    if (g->nsp < 1 || g->nsp > 2 || g->group < 2) return false;
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    if (transpose) return cg <= DW_MAX_TR && mg <= DW_MAX_TR;
    int64_t taps = 1, os = 1;
    for (int i = 0; i < g->nsp; i++) {
        taps *= g->kernel[i];
        os *= g->out[i];
    }
    if (cg <= DW_MAX_CG && taps <= DW_MAX_TAPS) return true;
    /* the weight gradient of a depthwise Conv (groups of N input channels, the batch, by
     * one or a few dY planes as kernels): dot products, not GEMMs of one row */
    return mg <= DW_MAX_TR && os <= DW_DOT_OS && taps > os;
}

/* The 2-D view of g (a 1-D convolution is one row). */
static void dw_geometry(const og_conv_geom *g, bool transpose, dw_geom *d)
{
    const int L = g->nsp - 1; /* the width's axis */
    memset(d, 0, sizeof *d);
    d->cg = g->c / g->group;
    d->mg = g->m / g->group;
    d->h = L ? g->in[0] : 1;
    d->oh = L ? g->out[0] : 1;
    d->kh = L ? g->kernel[0] : 1;
    d->sh = L ? g->stride[0] : 1;
    d->dh = L ? g->dil[0] : 1;
    d->ph = L ? g->pad_begin[0] : 0;
    d->w = g->in[L];
    d->ow = g->out[L];
    d->kw = g->kernel[L];
    d->sw = g->stride[L];
    d->dw = g->dil[L];
    d->pw = g->pad_begin[L];
    d->plane = d->h * d->w;
    if (transpose) return;
    d->rows = (d->oh - 1) * d->sh + (d->kh - 1) * d->dh + 1;
    d->wp = (d->ow - 1) * d->sw + (d->kw - 1) * d->dw + 1;
    d->dot = d->cg > DW_MAX_CG || d->kh * d->kw > DW_MAX_TAPS;
    if (d->dot) return;
    for (int64_t kh = 0; kh < d->kh; kh++)
        for (int64_t kw = 0; kw < d->kw; kw++)
            d->off[kh * d->kw + kw] = kh * d->dh * d->wp + kw * d->dw;
}

/* Threads for `items` items of `work` multiply-adds each. */
static int dw_threads(const og_kernel_ctx *k, int64_t items, double work)
{
    int t =
        k->threads > 1 && (double)items * work > og_par_min(k, DW_PAR_MIN_WORK) ? k->threads : 1;
    return t > items ? (int)(items > 0 ? items : 1) : t;
}

/* Scratch of `threads` slots of `slot` elements of es bytes each (one per thread): NULL
 * after the kernel's error message (OG_ERR_NOMEM). */
static char *dw_slots(const og_kernel_ctx *k, size_t slot, size_t es, int threads)
{
    size_t bytes;
    if (!og_mul_size(slot ? slot : 1, es * (size_t)threads, &bytes)) {
        og_kernel_error(k, OG_ERR_NOMEM, "scratch size overflows");
        return NULL;
    }
    char *p = og_scratch_get(k, bytes);
    if (!p) og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of scratch", bytes);
    return p;
}

/* What a call computes, for dw_range: its kind of items and their operands. */
typedef enum dw_kind {
    DW_DOT_BLK, /* Conv, kernel larger than the output: (image, block of DW_L groups) */
    DW_TR_BLK,  /* ConvTranspose, small planes: (image, block of DW_L channels) */
    DW_TR,      /* ConvTranspose: (image, output channel) */
    DW_BLK,     /* Conv, small planes: (block of DW_L channels, image) */
    DW_PLANE,   /* Conv, AVX-512 float planes (conv_dw_plane.h): (image, channel) */
    DW_REG,     /* Conv, AVX-512 float 3x3 / 5x5 small planes (conv_dw_reg.h): (channels, images) */
    DW_S2,      /* Conv, AVX-512 float 3x3 / 5x5 stride 2, narrow planes (conv_dw_s2.h): (image,
                 * channel) */
    DW_CONV     /* Conv: (image, group) */
} dw_kind;

typedef struct dw_job {
    const og_kernel_ctx *k;
    const og_conv_geom *g;
    dw_geom d, dp; /* dp: the geometry of the padded planes (DW_CONV) */
    og_dtype t;
    const dw_fns_f32 *f32;
    const dw_fns_f64 *f64;
    const void *x, *w, *b;
    void *y;
    dw_kind kind;
    int64_t os, nt, blocks;
    int64_t xe, we, ye; /* the parts of a slot (blocked kinds) */
    bool pad;           /* DW_CONV: planes padded into the slot */
    int64_t pad_elems;
    char *scratch; /* one slot per thread */
    size_t slot, es;
#ifdef OG_DW_X86
    dwr_plan reg; /* DW_REG: an item is reg.g channels of every image */
    dws2_plan s2; /* DW_S2 */
#endif
} dw_job;

/* Item `it` of a DW_CONV job: pad its cg input planes into the slot (unless the input needs
 * no padding: then read in place), then its mg output planes. */
#define DW_CONV_ITEM(T, fns)                                                                       \
    do {                                                                                           \
        const int64_t n = it / g->group, gi = it % g->group;                                       \
        const T *xg = (const T *)j->x + (n * g->c + gi * d->cg) * d->plane;                        \
        const T *xp = xg;                                                                          \
        if (j->pad) {                                                                              \
            T *xpw = (T *)sl;                                                                      \
            for (int64_t c = 0; c < d->cg; c++)                                                    \
                fns->pad_plane(d, xg + c * d->plane, xpw + c * j->dp.plane);                       \
            xp = xpw;                                                                              \
        }                                                                                          \
        for (int64_t q = 0; q < d->mg; q++) {                                                      \
            const int64_t m = gi * d->mg + q;                                                      \
            T *yp = (T *)j->y + (n * g->m + m) * os;                                               \
            const T bias = j->b ? ((const T *)j->b)[m] : 0;                                        \
            if (d->dot)                                                                            \
                fns->dot_plane(&j->dp, xp, (const T *)j->w + m * d->cg * nt, bias, yp);            \
            else                                                                                   \
                fns->conv_plane(&j->dp, xp, (const T *)j->w + m * d->cg * nt, bias, yp,            \
                                (T *)sl + j->pad_elems);                                           \
            og_cpu_act(&k->act, j->t, yp, os);                                                     \
        }                                                                                          \
    } while (0)

/* Item `it` of a DW_TR job. */
#define DW_TR_ITEM(T, fns)                                                                         \
    do {                                                                                           \
        const int64_t n = it / g->m, m = it % g->m, gi = m / d->mg, q = m % d->mg;                 \
        T *yp = (T *)j->y + it * os;                                                               \
        const T bias = j->b ? ((const T *)j->b)[m] : 0;                                            \
        for (int64_t i = 0; i < os; i++) yp[i] = bias;                                             \
        fns->tr_plane(d, (const T *)j->x + (n * g->c + gi * d->cg) * d->plane,                     \
                      (const T *)j->w + (gi * d->cg * d->mg + q) * nt, d->mg * nt, yp);            \
        og_cpu_act(&k->act, j->t, yp, os);                                                         \
    } while (0)

/* Items [i0, i1) of job ctx, with thread slot `slot`'s scratch. */
static void dw_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const dw_job *j = ctx;
    const og_kernel_ctx *k = j->k;
    const og_conv_geom *g = j->g;
    const dw_geom *d = &j->d;
    const int64_t os = j->os, nt = j->nt, blocks = j->blocks, xe = j->xe, we = j->we, ye = j->ye;
    const dw_fns_f32 *f32 = j->f32;
    const dw_fns_f64 *f64 = j->f64;
    char *sl = j->scratch ? j->scratch + (size_t)slot * j->slot * j->es : NULL;
    int64_t packed = -1; /* DW_BLK: the block whose kernels the slot holds */
    for (int64_t it = i0; it < i1; it++) {
        switch (j->kind) {
        case DW_DOT_BLK: {
            const int64_t n = it / blocks, g0 = it % blocks * DW_L;
            const int64_t nl = g->group - g0 < DW_L ? g->group - g0 : DW_L;
            if (f32) {
                float *xb = (float *)sl;
                f32->blk_dot(d, (const float *)j->x + n * g->c * d->plane, g0, nl, j->w, j->b,
                             (float *)j->y + n * g->m * os, xb, xb + xe, xb + xe + we, &k->act,
                             j->t);
            } else {
                double *xb = (double *)sl;
                f64->blk_dot(d, (const double *)j->x + n * g->c * d->plane, g0, nl, j->w, j->b,
                             (double *)j->y + n * g->m * os, xb, xb + xe, xb + xe + we, &k->act,
                             j->t);
            }
            break;
        }
        case DW_TR_BLK: {
            const int64_t n = it / blocks, c0 = it % blocks * DW_L;
            const int64_t nl = g->c - c0 < DW_L ? g->c - c0 : DW_L;
            if (f32) {
                float *xb = (float *)sl;
                f32->blk_tr(d, (const float *)j->x + (n * g->c + c0) * d->plane, nl, j->w, j->b, c0,
                            (float *)j->y + n * g->m * os, xb, xb + d->plane * DW_L, &k->act, j->t);
            } else {
                double *xb = (double *)sl;
                f64->blk_tr(d, (const double *)j->x + (n * g->c + c0) * d->plane, nl, j->w, j->b,
                            c0, (double *)j->y + n * g->m * os, xb, xb + d->plane * DW_L, &k->act,
                            j->t);
            }
            break;
        }
        case DW_TR:
            if (f32)
                DW_TR_ITEM(float, f32);
            else
                DW_TR_ITEM(double, f64);
            break;
        case DW_BLK: {
            const int64_t n = it % g->n, blk = it / g->n, c0 = blk * DW_L;
            const int64_t nl = g->c - c0 < DW_L ? g->c - c0 : DW_L;
            const bool pack = blk != packed;
            packed = blk;
            if (f32) {
                float *xb = (float *)sl;
                f32->blk_conv(d, (const float *)j->x + (n * g->c + c0) * d->plane, nl, j->w, j->b,
                              c0, (float *)j->y + n * g->m * os, xb, xb + xe, xb + xe + ye, pack,
                              &k->act, j->t);
            } else {
                double *xb = (double *)sl;
                f64->blk_conv(d, (const double *)j->x + (n * g->c + c0) * d->plane, nl, j->w, j->b,
                              c0, (double *)j->y + n * g->m * os, xb, xb + xe, xb + xe + ye, pack,
                              &k->act, j->t);
            }
            break;
        }
        case DW_PLANE:
#ifdef OG_DW_X86
            for (int64_t q = 0; q < d->mg; q++) {
                const int64_t m = (it % g->group) * d->mg + q, n = it / g->group;
                float *yp = (float *)j->y + (n * g->m + m) * os;
                dwp_out o = dwp_out_of(&k->act, j->b ? ((const float *)j->b)[m] : 0.0f);
                dwp_post_act(&o, os);
                dwp_plane(d, (const float *)j->x + it * d->plane, (const float *)j->w + m * nt, &o,
                          yp, (float *)sl);
                if (!o.clamp && !o.vact) og_cpu_act(&k->act, j->t, yp, os);
            }
#endif
            break;
        case DW_REG:
#ifdef OG_DW_X86
        {
            const int64_t c = it * j->reg.g, gc = g->c - c < j->reg.g ? g->c - c : j->reg.g;
            const dwp_out o = dwp_out_of(&k->act, 0.0f); /* the bias: dwr_group's own */
            dwr_group(d, &j->reg, j->x, g->c * os, j->w, j->b, c, gc, g->n, j->y, g->m * os, &o);
            for (int64_t n = 0; !o.clamp && !o.vact && n < g->n; n++)
                og_cpu_act(&k->act, j->t, (float *)j->y + (n * g->m + c) * os, gc * os);
        }
#endif
        break;
        case DW_S2:
#ifdef OG_DW_X86
        {
            const int64_t n = it / g->group, c = it % g->group;
            float *yp = (float *)j->y + (n * g->m + c) * os;
            const dwp_out o = dwp_out_of(&k->act, j->b ? ((const float *)j->b)[c] : 0.0f);
            const float *xp = (const float *)j->x + (n * g->c + c) * d->plane,
                        *wp = (const float *)j->w + c * nt;
            if (d->kh == 3)
                dws2_plane_k3(d, &j->s2, xp, wp, &o, yp);
            else
                dws2_plane_k5(d, &j->s2, xp, wp, &o, yp);
            if (!o.clamp && !o.vact) og_cpu_act(&k->act, j->t, yp, os);
        }
#endif
        break;
        case DW_CONV:
            if (f32)
                DW_CONV_ITEM(float, f32);
            else
                DW_CONV_ITEM(double, f64);
            break;
        }
    }
}

/* Planes 16 to 32 wide (stride 1) or more than 16 (stride 2), read in place by dwp_plane
 * (DW_PLANE) rather than through the channels-last blocks, whose transposes to and from
 * channels-last cost most there.  Stride 2: 768 planes of 32x32 (MobileNet-v2 at
 * 8x64x64) 0.19 -> 0.09 ms alone, 192 of 28x28 0.053 -> 0.021; narrower ones went faster
 * by the blocks (1152 of 16x16: 0.055 against 0.060; 1536 of 8x8: 0.019 against 0.056),
 * whose 16 channels at a time share each plane's fixed costs.  Stride 1: 1152 planes of
 * 16x16 in MobileNet-v2 at 8x64x64 0.22 -> 0.15 ms; 8x8 ones 0.05 -> 0.09 and 14x14 ones
 * no faster. */
static bool dw_in_place(const dw_geom *d, og_dtype t)
{
#ifdef OG_DW_X86
    return t == OG_FLOAT && d->w >= DW_IN_PLACE_MIN_W + (d->sh == 2) &&
           (d->sh == 2 || d->w <= DWP_NP_MAX_W) && dwp_applies(d);
#else
    (void)d, (void)t;
    return false;
#endif
}

og_status og_conv_direct(const og_kernel_ctx *k, const og_conv_geom *g, bool transpose, og_dtype t,
                         const void *x, const void *w, const void *b, void *y)
{
    dw_job j = {.k = k, .g = g, .t = t, .x = x, .w = w, .b = b, .y = y};
    dw_geom *d = &j.d;
    dw_geometry(g, transpose, d);
    j.es = t == OG_FLOAT ? sizeof(float) : sizeof(double);
    const int64_t os = d->oh * d->ow, nt = d->kh * d->kw;
    j.os = os;
    j.nt = nt;
    j.f32 = t == OG_FLOAT ? dw_f32() : NULL;
    j.f64 = t == OG_DOUBLE ? dw_f64() : NULL;
    if (!j.f32 && !j.f64)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(t));
    int64_t items;
    double work; /* multiply-adds per item */
    const bool blk = !transpose && d->cg == 1 && !d->dot && os <= DW_BLK_OS && !dw_in_place(d, t);
    /* 5x5 kernels with output rows of 7 or more: the blocks' rows (blk_row) before the
     * register, stride-2 and plane loops.  AMD EPYC (Zen 4), one thread, alone: 7x7
     * planes 576 0.037 -> 0.031 ms, 1152 0.096 -> 0.077; 14x14 240 0.043 -> 0.039, 672
     * 0.156 -> 0.141; batches of 8, 240 of 8x8 0.099 either way; stride 2, 672 of 14x14
     * 0.073 -> 0.061, 288 0.028 -> 0.023, 8 x 96 of 16x16 0.071 -> 0.060, 96 of 28x28
     * 0.0265 -> 0.023 (from the plane loops).  3x3, rows under 7 and larger planes: the
     * other loops (576 of 14x14: 0.039 against 0.055 here; 88 of 28x28 0.024 against
     * 0.035 in blocks of 784 positions) */
    const bool blk_rows = !transpose && d->cg == 1 && !d->dot && os <= DW_BLK_OS && j.f32 &&
                          og_cpu_isa() >= 2 && d->kh == 5 && d->ow >= 7 && dw_blk_row_r(d) > 0;
    if (!transpose && d->dot && d->mg == 1 && d->cg * (d->rows * d->wp + nt) <= DW_BLK_DOT_MAX) {
        /* channels-last blocks */
        j.kind = DW_DOT_BLK;
        j.blocks = (g->group + DW_L - 1) / DW_L;
        items = g->n * j.blocks;
        j.xe = d->cg * d->rows * d->wp * DW_L;
        j.we = d->cg * nt * DW_L;
        j.slot = (size_t)(j.xe + j.we + os * DW_L);
        work = (double)(os * d->cg * nt * DW_L);
    } else if (transpose && d->cg == 1 && d->mg == 1 && os <= DW_BLK_TR_OS && nt <= DW_MAX_TAPS) {
        /* channels-last blocks */
        j.kind = DW_TR_BLK;
        j.blocks = (g->c + DW_L - 1) / DW_L;
        items = g->n * j.blocks;
        j.slot = (size_t)((d->plane + os) * DW_L);
        work = (double)(d->plane * nt * DW_L);
    } else if (transpose) {
        j.kind = DW_TR;
        items = g->n * g->m;
        work = (double)(d->cg * d->plane * nt);
    }
#ifdef OG_DW_X86
    else if (!transpose && j.f32 && !blk_rows && dwr_applies(d)) {
        /* 3x3 and 5x5 stride-1 planes of at most 16 columns, in registers, before the
         * blocks and the plane loops (16x16 planes too).  Alone, one thread: 384 planes of
         * 14x14 0.028 -> 0.017 ms, 960 of 7x7 0.028 -> 0.018; batches of 8: 192 planes of
         * 8x8 0.034 -> 0.019, 384 of 4x4 0.023 -> 0.013, 960 of 2x2 0.043 -> 0.025, 144 of
         * 16x16 0.081 -> 0.052.  5x5: 480 planes of 14x14 0.082 -> 0.046, 1152 of 7x7
         * 0.059 -> 0.039. */
        j.kind = DW_REG;
        dwr_plan_make(d, &j.reg);
        items = (g->c + j.reg.g - 1) / j.reg.g;
        j.slot = 0;
        work = (double)(g->n * j.reg.g * os * nt);
    } else if (!transpose && j.f32 && !blk_rows && dws2_applies(d)) {
        /* stride 2 from rows of 9 to 16 values, two output rows a vector, before the
         * blocks.  AMD EPYC (Zen 4), one thread, runs alternating in one process: alone,
         * 1152 planes of 16x16 0.063 -> 0.048 ms, 576 of 14x14 0.030 -> 0.025; in the
         * networks MobileNet-v2 8x64x64's 16x16 layer 0.116 -> 0.061, its 224 run's 14x14
         * one 0.037 -> 0.030, MobileNet-v3 8x64x64's 0.036 -> 0.026; 5x5 on 14x14:
         * EfficientNet-B0's 672 planes 0.107 -> 0.098, MobileNet-v3's 288 0.027 -> 0.030 */
        j.kind = DW_S2;
        dws2_plan_make(d, &j.s2);
        items = g->n * g->group;
        j.slot = 0;
        work = (double)(os * nt);
    }
#endif
    else if (blk || blk_rows) {
        /* small planes, channels-last; a thread packs a block's kernels once for its images
         * (items are block-major) */
        j.kind = DW_BLK;
        j.blocks = (g->c + DW_L - 1) / DW_L;
        items = g->n * j.blocks;
        j.xe = d->rows * d->wp * DW_L;
        j.ye = (os + DW_BLK_ROW_SLACK) * DW_L; /* blk_row: stores past the last row */
        /* + the reads of blk_row past the last row: (R - 1)·S columns at most */
        j.slot = (size_t)(j.xe + j.ye + d->mg * (nt + 1) * DW_L + DW_BLK_ROW_SLACK * DW_L);
        work = (double)(d->mg * os * nt * DW_L);
    }
#ifdef OG_DW_X86
    else if (j.f32 && dwp_applies(d)) {
        /* Nothing prefetched: the next plane into L1 while this one is summed
         * (og_prefetch_planes, for inputs larger than L2) made the loops slower on an AMD
         * EPYC (Zen 4, 1 MB L2): MobileNet-v2 224's 56x56 layers 0.253 -> 0.229 ms (stride
         * 1) and 0.099 -> 0.078 (stride 2) without it, its 8x64x64 run's 32x32 stride-2
         * layer 0.150 -> 0.127, EfficientNet-B0's 5x5 ones 0.211 -> 0.192 (per-node medians
         * of 150-400 runs alternating in one process) */
        j.kind = DW_PLANE;
        items = g->n * g->group;
        j.slot = (size_t)dwp_scratch(d);
        work = (double)(d->mg * os * nt);
    }
#endif
    else {
        /* padded planes unless the input is read as it is (no pads, every column used) */
        j.kind = DW_CONV;
        j.dp = *d;
        j.pad = d->ph != 0 || d->pw != 0 || d->wp != d->w || d->rows > d->h;
        if (j.pad) j.dp.plane = d->rows * d->wp;
        j.pad_elems = j.pad ? d->cg * j.dp.plane : 0;
        const int64_t wide = d->sh == 1 && d->sw == 1 && !d->dot ? (d->oh - 1) * d->wp + d->ow : 0;
        j.slot = (size_t)(j.pad_elems + wide);
        items = g->n * g->group;
        work = (double)(d->mg * d->cg * os * nt);
    }
    const int threads = dw_threads(k, items, work);
    if (j.kind != DW_TR) {
        j.scratch = dw_slots(k, j.slot, j.es, threads);
        if (!j.scratch) return OG_ERR_NOMEM; /* message given */
    }
    /* chunks of about an eighth of a thread's share: a thread that starts late finds some */
    og_par_range(k, threads, items, (items + 8 * threads - 1) / (8 * threads), dw_range, &j);
    if (j.scratch) og_scratch_put(k, j.scratch);
    return OG_OK;
}

/* ---- output rows from a band of input rows (conv_pwdw.c) ---- */

bool og_conv_dw_rows_applies(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_DW_X86
    if (t != OG_FLOAT || g->nsp != 2 || g->group < 2 || g->c != g->group || g->m != g->group)
        return false;
    dw_geom d;
    dw_geometry(g, false, &d);
    /* og_conv_direct's DW_PLANE kind: neither a dot product nor a small plane */
    return !d.dot && d.oh * d.ow > DW_BLK_OS && dwp_applies(&d);
#else
    (void)g;
    (void)t;
    return false;
#endif
}

/* The geometry of output rows [r0, r1) over input rows [i0, i1) of geometry g: a plane of
 * i1 - i0 rows whose padding above puts row i0 where it is read. */
static void dw_rows_geometry(const og_conv_geom *g, int64_t i0, int64_t i1, int64_t r0, int64_t r1,
                             dw_geom *d)
{
    dw_geometry(g, false, d);
    d->h = i1 - i0;
    d->oh = r1 - r0;
    d->ph += i0 - r0 * d->sh;
    d->rows = (d->oh - 1) * d->sh + (d->kh - 1) * d->dh + 1;
    d->plane = d->h * d->w;
}

int64_t og_conv_dw_rows_scratch(const og_conv_geom *g, int64_t rows)
{
#ifdef OG_DW_X86
    dw_geom d;
    dw_rows_geometry(g, 0, g->in[0], 0, rows, &d);
    /* of the band's rows; a shorter band (a part's last) may copy its rows padded where a
     * band of `rows` reads them in place (dwp_np: a copy of more than DWP_PAD_MAX_BYTES),
     * and then needs up to that */
    const int64_t s = dwp_scratch(&d), most = DWP_PAD_MAX_BYTES / (int64_t)sizeof(float);
    return d.sh == 1 && s < most ? most : s;
#else
    (void)g;
    (void)rows;
    return 0;
#endif
}

void og_conv_dw_rows(const og_kernel_ctx *k, const og_conv_geom *g, int64_t m0, int64_t m1,
                     const float *x, int64_t ldx, int64_t i0, int64_t i1, int64_t r0, int64_t r1,
                     const float *w, const float *b, float *y, int64_t ldy, float *scratch)
{
#ifdef OG_DW_X86
    dw_geom d;
    dw_rows_geometry(g, i0, i1, r0, r1, &d);
    const int64_t nt = d.kh * d.kw, n_out = d.oh * d.ow;
    dwp_out o = dwp_out_of(&k->act, 0.0f);
    dwp_post_act(&o, g->out[0] * g->out[1]);
    for (int64_t q = m0; q < m1; q++) {
        float *yq = y + (q - m0) * ldy;
        o.bias = b ? b[q] : 0.0f;
        dwp_plane(&d, x + (q - m0) * ldx, w + q * nt, &o, yq, scratch);
        if (!o.clamp && !o.vact) og_cpu_act(&k->act, OG_FLOAT, yq, n_out);
    }
#else
    (void)k, (void)g, (void)m0, (void)m1, (void)x, (void)ldx, (void)i0, (void)i1, (void)r0;
    (void)r1, (void)w, (void)b, (void)y, (void)ldy, (void)scratch;
#endif
}

void og_conv_dw_rows_inputs(const og_conv_geom *dw, int64_t r0, int64_t r1, int64_t *lo,
                            int64_t *hi)
{
    const int64_t h = dw->in[0], reach = (dw->kernel[0] - 1) * dw->dil[0] + 1;
    int64_t a = r0 * dw->stride[0] - dw->pad_begin[0];
    int64_t b = (r1 - 1) * dw->stride[0] + reach - dw->pad_begin[0];
    a = a < 0 ? 0 : a > h ? h : a;
    b = b < a ? a : b > h ? h : b;
    *lo = a;
    *hi = b;
}

int64_t og_conv_dw_rows_step(const og_conv_geom *g) { return g->stride[0] == 1 ? 4 : 2; }
