/* conv_panel.c: float convolutions on small planes with the model's weights (see
 * conv_panel.h).
 *
 * W [M, K] (K = C · kernel taps) is packed once per session into panels of 32 output
 * channels (gemm_panel.h, in the node's og_kcache).  X is the product's B as it is for a
 * pointwise Conv, else its column matrix [K, OS] (im2col of each image, in scratch, before
 * the items, the images over the threads).  An item is one panel and one image (the images
 * of a panel one after the other): Ct [OS, 32] = (W_panel · X)ᵀ by og_panel_gemm_f32, whose
 * tiles of up to 12 positions by 32 channels fit planes of any size (7x7: 49 positions in 5
 * groups), then written back into Y's 32 channel rows through 16 x 16 transposes in
 * registers, the bias added on the way, and the activation applied to the rows while they
 * are in cache.  The BLAS would pack W again at every call: 9.4 MB for ResNet-18's 7x7
 * layers, whose product takes 49 columns.  A pointwise image of many more input channels
 * than output ones is summed on threads by shares of its input channels instead
 * (conv_pw_kshare.h): items (share, panel) into partial sums, then (panel, half) items
 * add them while they write Y. */
#include <string.h>

#include "kernels/cpu/conv_panel.h"
#include "kernels/cpu/conv_pw_kshare.h"
#include "kernels/cpu/gemm_panel.h"

/* Where the packed panels beat the other paths in the networks: one image, planes of at
 * most 64 positions (7x7).  Others (2-D; 3x3 stride-1 ones of 16 channels or more go by
 * Winograd before): ResNet-18's 256 -> 512 3x3 stride-2 layer 0.80 -> 0.58 ms alone, 0.85 ->
 * 0.83 in the network, where its weights come from memory.  Pointwise: sums of at most
 * 2048 inputs (MobileNet-v2 and EfficientNet-B0's 7x7 layers of 160 -> 960, 192 -> 1152
 * and 320 -> 1280 channels took 0.13, 0.22 and 0.32-0.36 ms by the tile kernel or BLAS,
 * 0.106, 0.17 and 0.29-0.31 this way; once gemm_panel.c prefetched the next block of the
 * panels, 960 -> 160 and 960 -> 320 took 0.078 and 0.155 ms instead of the BLAS's 0.100
 * and 0.20).  Pointwise ones on planes of at most 256 positions whose output channels fill
 * 90 % of their panels: MobileNet-v2's 14x14 layers of 64 to 576 channels went from 1.07-1.15x
 * onnxruntime's time to 0.95-1.0x; MobileNet-v3's 240 -> 40 (40 of 64 panel rows) went
 * from 0.026 to 0.031 ms, and the 28x28 planes were slower (32 -> 192: 0.073 against 0.056).
 * A last panel of 16 channels or fewer computes 16 (og_panel_gemm_m_f32), so that 80 and
 * 112 channels fill theirs: EfficientNet-B0's 14x14 projections of 240 and 480 to 80 and
 * of 480 and 672 to 112 took 0.095-0.304 ms by the GEMM and the residual's pass after it,
 * 0.077-0.284 this way (-0.10 ms in all, per-node minimums of 3 alternating runs).
 * Several images of small planes side by side (MobileNet-v2 at 8x64x64: 4.08 ms against
 * 4.53) are as fast or faster the old ways. */
#define CP_MAX_OS       64
#define CP_MIN_BATCH_OS 16
#define CP_MAX_PW_OS    256
#define CP_MAX_PW_C     2048
/* Several images: the weights of a group of panels an item takes (each image's column
 * matrix then read from L2 for every panel of the group, not from L3 once per panel):
 * ResNet-18 at 8x64x64, its 3x3 stride-2 layers of 64 -> 128 channels (4 panels of 74 KB:
 * one group) and 128 -> 256 (8 of 147 KB: groups of 2) */
#define CP_GROUP_BYTES (384 * 1024)
/* Column matrices built by gathers or permutations (cp_im2col): output planes and
 * kernels of at most this many positions and taps */
#define CP_COL_MAX_OS   64
#define CP_COL_MAX_TAPS 25
/* Multiply-adds below which a call stays on one thread (as conv_pw.c's, with workers) */
#define CP_PAR_MIN 2097152.0
/* Positions of a column part at least (og_conv_panel: one image of few panels) */
#define CP_MIN_PART 48

static bool is_pointwise(const og_conv_geom *g)
{
    for (int i = 0; i < g->nsp; i++)
        if (g->kernel[i] != 1 || g->stride[i] != 1 || g->pad_begin[i] != 0 || g->pad_end[i] != 0 ||
            g->out[i] != g->in[i])
            return false;
    return true;
}

/* Whether cp_im2col builds the column matrices of 2-D g by gathers or permutations (any
 * row stride), not by og_conv_im2col_f32. */
static bool cp_cols_fast(const og_conv_geom *g)
{
    return g->out[0] * g->out[1] <= CP_COL_MAX_OS &&
           g->kernel[0] * g->kernel[1] <= CP_COL_MAX_TAPS && g->in[0] * g->in[1] <= (1 << 20);
}

bool og_conv_panel_applies(const og_kernel_ctx *k, const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    if (t != OG_FLOAT || og_cpu_isa() < 2 || !(k->const_in & 2u) || g->nsp < 1 || g->group != 1 ||
        g->c < 1 || g->m < 1 || g->n < 1)
        return false;
    int64_t os = 1;
    for (int i = 0; i < g->nsp; i++) os *= g->out[i];
    /* several images: 2-D ones on planes of 16 to 64 positions, an image at a time with
     * the weights packed once (ResNet-18 at 8x64x64: its 3x3 stride-2 layers 0.55 -> 0.51
     * and 0.64 -> 0.58 ms on one thread, 0.32 -> 0.29 and 0.41 -> 0.36 on two, its 1x1
     * stride-2 ones 0.082 -> 0.066 and 0.105 -> 0.078; on 2x2 planes the tiles of 4
     * columns took twice as long; pointwise ones: below) */
    if (g->n > 1 && is_pointwise(g))
        /* pointwise ones on planes of fewer than 16 positions, side by side: MobileNet-v2
         * 8x64x64's 2x2 layers of 576 -> 160 and 160 -> 960 0.128 -> 0.086 and 0.131 ->
         * 0.101 ms on two threads, its 320 -> 1280 0.27 -> 0.21 (the BLAS's way copied the
         * images side by side too); the network 0.96 of its time, EfficientNet-B0's 0.98,
         * MobileNet-v3's 0.99.  Its 960 -> 160 ones, slower this way while the images went
         * side by side on one thread, took 0.83-0.89 of the BLAS's time on two threads and
         * 0.85-0.93 on one once they went by bands of channels (cp_pw_side_by_side):
         * EfficientNet-B0 and MobileNet-v3 8x64x64 0.98-0.99 of their time */
        return g->nsp == 2 && os < CP_MIN_BATCH_OS && g->n * os >= CP_MIN_BATCH_OS &&
               g->c <= CP_MAX_PW_C && cp_cols_fast(g);
    if (g->n > 1)
        return g->nsp == 2 &&
               ((os >= CP_MIN_BATCH_OS && os <= CP_MAX_OS) ||
                (os < CP_MIN_BATCH_OS && g->n * os >= CP_MIN_BATCH_OS && cp_cols_fast(g)));
    if (os <= CP_MAX_OS) return is_pointwise(g) ? g->c <= CP_MAX_PW_C : g->nsp == 2;
    /* 1x1 subsamplings (ResNet's shortcuts) on planes of at most 256 positions: ResNet-18's
     * 128 -> 256 one at 14x14 0.19 -> 0.15 ms on one thread, 0.18 -> 0.13 on two (the GEMM
     * packed its column matrix again for each part); at 28x28 0.12 -> 0.125 on two */
    if (os <= CP_MAX_PW_OS && g->nsp == 2 && g->kernel[0] == 1 && g->kernel[1] == 1 &&
        !is_pointwise(g) && g->c <= CP_MAX_PW_C)
        return true;
    /* larger planes: pointwise ones whose channels fill the panels (at least 90 %; a last
     * panel of 16 channels or fewer computes 16) */
    return os <= CP_MAX_PW_OS && is_pointwise(g) && g->c <= CP_MAX_PW_C &&
           g->m * 10 >= (g->m + 15) / 16 * 16 * 9;
#else
    (void)k, (void)g, (void)t;
    return false;
#endif
}

#ifdef OG_CPU_X86
#include <immintrin.h>

#include "kernels/cpu/tr16.h"
#include "kernels/cpu/vact.h"

typedef struct cp_job {
    const og_kernel_ctx *k;
    const og_conv_geom *g;
    const float *x, *up, *b; /* x: the product's B, X [K, OS] */
    float *y;
    const float *r; /* k->res's values, at y's offsets (NULL: none) */
    int64_t os, kdim, panels;
    int64_t n; /* images: items are (group of gp panels, image), group-major */
    int64_t gp;
    int64_t xs;      /* values from one image's product B to the next */
    int64_t ld;      /* the product B's row: os, or n · os with the images side by side */
    bool sb;         /* images side by side (planes of fewer than CP_MIN_BATCH_OS) */
    float *slots;    /* OS x 32 floats per thread */
    const float *in; /* 2-D: the input, in_img values an image, whose column matrices x holds */
    int64_t in_img;
    /* one image: its columns in cparts parts of cw (a multiple of 16; the last part takes
     * the rest), items part-major */
    int64_t cparts, cw;
    /* images side by side (sb): items (panel, part of the images), panel-major, sbparts
     * parts */
    int64_t sbparts;
    /* one pointwise image, its sum in kparts shares of the input channels
     * (conv_pw_kshare.h): share t of panel pi's sums at part + (t · panels + pi) · os · 32 */
    int64_t kparts;
    float *part;
} cp_job;

/* The column matrix of one image of a 2-D Conv whose output plane has at most
 * CP_COL_MAX_OS positions and whose input plane at most 2^20 values: each row (a channel's
 * tap) in vectors of 16 positions gathered from the channel's plane, the lanes in the
 * padding masked to zero, where the generic im2col copied each tap's output rows apart (a
 * few values each: 35 % of ResNet-18's 128 -> 256 3x3 stride-2 layer at 8x64x64, 4x4
 * outputs).  idx / msk: per tap and vector of positions, the input offsets and the lanes
 * inside the input. */
static OG_TARGET_AVX512 void cp_im2col_gather(const og_conv_geom *g, const int32_t *idx,
                                              const uint16_t *msk, int64_t taps, const float *x,
                                              float *col, int64_t ld)
{
    const int64_t os = g->out[0] * g->out[1], nv = (os + 15) / 16, plane = g->in[0] * g->in[1];
    const __mmask16 tail = (__mmask16)(os % 16 ? (1u << (os % 16)) - 1u : 0xFFFF);
    for (int64_t c = 0; c < g->c; c++) {
        const float *xc = x + c * plane;
        for (int64_t t = 0; t < taps; t++) {
            float *row = col + (c * taps + t) * ld;
            for (int64_t v = 0; v < nv; v++) {
                const __m512i ix = _mm512_loadu_si512(idx + (t * nv + v) * 16);
                const __m512 val = _mm512_mask_i32gather_ps(_mm512_setzero_ps(),
                                                            (__mmask16)msk[t * nv + v], ix, xc, 4);
                _mm512_mask_storeu_ps(row + 16 * v, v + 1 < nv ? 0xFFFF : tail, val);
            }
        }
    }
}

/* The same for stride 2 where an output row has 1, 2, 4, 8 or 16 positions and the input
 * rows under 16 outputs hold at most 32 values ((16 / OW) · W <= 32): per kernel row ky,
 * the input rows 2·oy + ky − pad of every output row oy are copied one after the other
 * into r (zeros for those outside the input), so that each vector of 16 outputs takes its
 * tap kx's values from two vectors of r by one permutation (lanes in the padding masked
 * to zero): ResNet-18's 64 -> 128 layer at 8x64x64 (16x16 to 8x8) had 21 % of its time
 * in the gathers above.  ix / mk: per kx, the lanes' offsets in the two vectors and the
 * lanes inside the input. */
static OG_TARGET_AVX512 void cp_im2col_s2(const og_conv_geom *g, const int32_t *ix,
                                          const uint16_t *mk, const float *x, float *col,
                                          int64_t ld, float *r)
{
    const int64_t oh = g->out[0], ow = g->out[1], os = oh * ow, nv = (os + 15) / 16;
    const int64_t h = g->in[0], w = g->in[1], kh = g->kernel[0], kw = g->kernel[1];
    const int64_t taps = kh * kw, rows_v = 16 / ow; /* output rows a vector */
    const __mmask16 tail = (__mmask16)(os % 16 ? (1u << (os % 16)) - 1u : 0xFFFF);
    const __mmask16 w0 = (__mmask16)(w >= 16 ? 0xFFFF : (1u << w) - 1u);
    const __mmask16 w1 = (__mmask16)(w > 16 ? (1u << (w - 16)) - 1u : 0u);
    for (int64_t c = 0; c < g->c; c++) {
        const float *xc = x + c * h * w;
        for (int64_t ky = 0; ky < kh; ky++) {
            for (int64_t oy = 0; oy < oh; oy++) {
                const int64_t iy = 2 * oy + ky - g->pad_begin[0];
                const bool in = iy >= 0 && iy < h;
                float *dst = r + oy * w;
                _mm512_mask_storeu_ps(
                    dst, w0, in ? _mm512_maskz_loadu_ps(w0, xc + iy * w) : _mm512_setzero_ps());
                if (w1)
                    _mm512_mask_storeu_ps(dst + 16, w1,
                                          in ? _mm512_maskz_loadu_ps(w1, xc + iy * w + 16)
                                             : _mm512_setzero_ps());
            }
            for (int64_t kx = 0; kx < kw; kx++) {
                const __m512i idx = _mm512_loadu_si512(ix + kx * 16);
                float *row = col + (c * taps + ky * kw + kx) * ld;
                for (int64_t v = 0; v < nv; v++) {
                    const float *src = r + v * rows_v * w;
                    const __m512 val = _mm512_maskz_permutex2var_ps(
                        (__mmask16)mk[kx], _mm512_loadu_ps(src), idx, _mm512_loadu_ps(src + 16));
                    _mm512_mask_storeu_ps(row + 16 * v, v + 1 < nv ? 0xFFFF : tail, val);
                }
            }
        }
    }
}

/* The column matrices of images [i0, i1) (2-D). */
/* One image's column matrix by og_conv_im2col_f32 in CP_COL_BANDS bands of its input
 * channels, items [i0, i1) of them (a channel's rows of the matrix are its own). */
#define CP_COL_BANDS 8
static void cp_im2col_bands(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    (void)slot;
    og_conv_geom gb = *j->g;
    const int64_t os = gb.out[0] * gb.out[1], taps = gb.kernel[0] * gb.kernel[1];
    const int64_t plane = gb.in[0] * gb.in[1];
    for (int64_t i = i0; i < i1; i++) {
        const int64_t c0 = j->g->c * i / CP_COL_BANDS, c1 = j->g->c * (i + 1) / CP_COL_BANDS;
        if (c1 <= c0) continue;
        gb.c = c1 - c0;
        og_conv_im2col_f32(&gb, j->in + c0 * plane, (float *)j->x + c0 * taps * os);
    }
}

/* Images side by side of a pointwise Conv (planes of fewer than CP_MIN_BATCH_OS values):
 * items [i0, i1) of CP_COL_BANDS bands of input channels, each channel's row of every image
 * (os values, one masked move) into the product's B, rows of n · os.  The im2col gathers,
 * on one thread, took 40 us of MobileNet-v2 8x64x64's 960-channel 2x2 layers. */
static OG_TARGET_AVX512 void cp_pw_side_by_side(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    const og_conv_geom *g = j->g;
    (void)slot;
    const int64_t os = g->out[0] * g->out[1];
    const __mmask16 m = (__mmask16)((1u << os) - 1u);
    for (int64_t i = i0; i < i1; i++)
        for (int64_t c = g->c * i / CP_COL_BANDS, c1 = g->c * (i + 1) / CP_COL_BANDS; c < c1; c++)
            for (int64_t n = 0; n < g->n; n++)
                _mm512_mask_storeu_ps((float *)j->x + c * j->ld + n * os, m,
                                      _mm512_maskz_loadu_ps(m, j->in + n * j->in_img + c * os));
}

static void cp_im2col(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    const og_conv_geom *g = j->g;
    (void)slot;
    const int64_t os = g->out[0] * g->out[1], nv = (os + 15) / 16,
                  taps = g->kernel[0] * g->kernel[1];
    if (!cp_cols_fast(g)) {
        for (int64_t i = i0; i < i1; i++)
            og_conv_im2col_f32(g, j->in + i * j->in_img, (float *)j->x + i * j->xs);
        return;
    }
    const int64_t ow = g->out[1], w = g->in[1];
    if (g->stride[0] == 2 && g->stride[1] == 2 && g->dil[0] == 1 && g->dil[1] == 1 &&
        g->kernel[1] <= 16 && ow <= 16 && 16 % ow == 0 && 16 / ow * w <= 32) {
        int32_t ix[16 * 16];
        uint16_t mk[16] = {0};
        for (int64_t kx = 0; kx < g->kernel[1]; kx++)
            for (int l = 0; l < 16; l++) {
                const int64_t ox = l % ow, iw = 2 * ox + kx - g->pad_begin[1];
                const bool in = iw >= 0 && iw < w;
                ix[kx * 16 + l] = in ? (int32_t)(l / ow * w + iw) : 0;
                if (in) mk[kx] |= (uint16_t)(1u << l);
            }
        /* the rows of one kernel row, and the vectors past them that the last vector's
         * permutations read (zeros: lanes that are not stored) */
        float r[CP_COL_MAX_OS * 2 + 32];
        memset(r, 0, sizeof r);
        for (int64_t i = i0; i < i1; i++)
            cp_im2col_s2(g, ix, mk, j->in + i * j->in_img, (float *)j->x + i * j->xs, j->ld, r);
        return;
    }
    int32_t idx[CP_COL_MAX_TAPS * CP_COL_MAX_OS];
    uint16_t msk[CP_COL_MAX_TAPS * CP_COL_MAX_OS / 16];
    memset(msk, 0, sizeof msk);
    for (int64_t t = 0; t < taps; t++)
        for (int64_t p = 0; p < nv * 16; p++) {
            const int64_t oy = p / g->out[1], ox = p % g->out[1];
            const int64_t iy = oy * g->stride[0] + t / g->kernel[1] * g->dil[0] - g->pad_begin[0];
            const int64_t ix = ox * g->stride[1] + t % g->kernel[1] * g->dil[1] - g->pad_begin[1];
            const bool in = p < os && iy >= 0 && iy < g->in[0] && ix >= 0 && ix < g->in[1];
            idx[t * nv * 16 + p] = in ? (int32_t)(iy * g->in[1] + ix) : 0;
            if (in) msk[t * nv + p / 16] |= (uint16_t)(1u << (p % 16));
        }
    for (int64_t i = i0; i < i1; i++)
        cp_im2col_gather(g, idx, msk, taps, j->in + i * j->in_img, (float *)j->x + i * j->xs,
                         j->ld);
}

/* og_conv_cols_images's items: bands of input channels, each band's rows of every image
 * (a thread writes only its band's rows: images side by side share cache lines). */
typedef struct cols_job {
    const og_conv_geom *g;
    const float *x;
    float *col;
    int64_t in_img, cnt;
} cols_job;

static void cols_band_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cols_job *cj = ctx;
    (void)slot;
    const int64_t os = cj->g->out[0] * cj->g->out[1], taps = cj->g->kernel[0] * cj->g->kernel[1];
    const int64_t plane = cj->g->in[0] * cj->g->in[1];
    for (int64_t i = i0; i < i1; i++) {
        const int64_t c0 = cj->g->c * i / CP_COL_BANDS, c1 = cj->g->c * (i + 1) / CP_COL_BANDS;
        if (c1 <= c0) continue;
        og_conv_geom gb = *cj->g;
        gb.c = c1 - c0;
        cp_job j = {.g = &gb,
                    .in = cj->x + c0 * plane,
                    .in_img = cj->in_img,
                    .x = cj->col + c0 * taps * cj->cnt * os,
                    .xs = os,
                    .ld = cj->cnt * os};
        cp_im2col(&j, 0, cj->cnt, 0);
    }
}

OG_TARGET_AVX512 void og_conv_panel_store(const float *ct, int64_t parts, int64_t pstride,
                                          int64_t os, int64_t ldy, int64_t mr, const float *b,
                                          const float *res, float *y, bool clamp, float lo,
                                          float hi, int vact)
{
    const __m512 lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
    for (int64_t r0 = 0; r0 < mr; r0 += 16)
        for (int64_t j0 = 0; j0 < os; j0 += 16) {
            const int64_t nj = os - j0 < 16 ? os - j0 : 16, nr = mr - r0 < 16 ? mr - r0 : 16;
            const __mmask16 mj = (__mmask16)(nj >= 16 ? 0xFFFF : (1u << nj) - 1u);
            __m512 v[16];
            for (int i = 0; i < 16; i++) {
                const float *e = ct + (j0 + i) * OG_PANEL_MR + r0;
                v[i] = i < nj ? _mm512_loadu_ps(e) : _mm512_setzero_ps();
                for (int64_t t = 1; t < parts && i < nj; t++)
                    v[i] = _mm512_add_ps(v[i], _mm512_loadu_ps(e + t * pstride));
            }
            og_tr16_f32(v); /* v[r] = channel r0 + r at positions j0 .. j0 + 15 */
            for (int r = 0; r < nr; r++) {
                const __m512 bv = _mm512_set1_ps(b ? b[r0 + r] : 0.0f);
                __m512 a = b ? _mm512_add_ps(v[r], bv) : v[r];
                if (res) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(mj, res + (r0 + r) * ldy + j0));
                _mm512_mask_storeu_ps(y + (r0 + r) * ldy + j0, mj,
                                      og_v_out(a, clamp, lov, hiv, vact));
            }
        }
}

/* The residual's values where y's are yb (NULL: none). */
static const float *cp_res(const cp_job *j, const float *yb)
{
    return j->r ? j->r + (yb - j->y) : NULL;
}

/* Items: (group of gp panels of 32 output channels, image), the images of a group one
 * after the other (its weights read once from memory, and kept in L2 from one image to
 * the next), each image's panels of the group one after the other (its column matrix
 * kept in L2 from one panel to the next). */
static void cp_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    const og_conv_geom *g = j->g;
    float lo = 0.0f, hi = 0.0f;
    const bool clamp = og_act_clamp_f32(&j->k->act, &lo, &hi);
    const int vact = clamp ? 0 : og_vact_of(&j->k->act);
    if (j->sb) { /* items: (panel, part of the images), each by its images' columns */
        float *ct = j->slots + (size_t)slot * (size_t)(j->ld * OG_PANEL_MR);
        for (int64_t it = i0; it < i1; it++) {
            const int64_t pi = it / j->sbparts, part = it % j->sbparts, m0 = pi * OG_PANEL_MR;
            const int64_t a = part * j->n / j->sbparts, e = (part + 1) * j->n / j->sbparts;
            const int64_t mr = g->m - m0 < OG_PANEL_MR ? g->m - m0 : OG_PANEL_MR;
            const int64_t np = (it + 1) / j->sbparts; /* the next item's panel */
            og_panel_gemm_m_f32(pi, pi + 1, (e - a) * j->os, j->kdim, j->up, j->x + a * j->os,
                                j->ld, ct, OG_PANEL_MR,
                                it + 1 < i1 && np != pi ? j->up + np * j->kdim * OG_PANEL_MR : NULL,
                                g->m);
            for (int64_t i = a; i < e; i++) {
                float *yb = j->y + (i * g->m + m0) * j->os;
                og_conv_panel_store(ct + (i - a) * j->os * OG_PANEL_MR, 1, 0, j->os, j->os, mr,
                                    j->b ? j->b + m0 : NULL, cp_res(j, yb), yb, clamp, lo, hi,
                                    vact);
                if (!clamp && !vact) og_cpu_act(&j->k->act, OG_FLOAT, yb, mr * j->os);
            }
        }
        return;
    }
    float *ct = j->slots + (size_t)slot * (size_t)(j->os * OG_PANEL_MR);
    if (j->cparts > 1) { /* items (column part, panel), one image */
        for (int64_t it = i0; it < i1; it++) {
            const int64_t pi = it % j->panels, part = it / j->panels, m0 = pi * OG_PANEL_MR;
            const int64_t c0 = part * j->cw, nc = part + 1 < j->cparts ? j->cw : j->os - c0;
            const int64_t mr = g->m - m0 < OG_PANEL_MR ? g->m - m0 : OG_PANEL_MR;
            const int64_t np = it + 1 < i1 ? (it + 1) % j->panels : j->panels;
            og_panel_gemm_m_f32(pi, pi + 1, nc, j->kdim, j->up, j->x + c0, j->os, ct, OG_PANEL_MR,
                                np < j->panels ? j->up + np * j->kdim * OG_PANEL_MR : NULL, g->m);
            float *yb = j->y + m0 * j->os + c0;
            og_conv_panel_store(ct, 1, 0, nc, j->os, mr, j->b ? j->b + m0 : NULL, cp_res(j, yb), yb,
                                clamp, lo, hi, vact);
            for (int64_t r = 0; r < mr && !clamp && !vact; r++)
                og_cpu_act(&j->k->act, OG_FLOAT, yb + r * j->os, nc);
        }
        return;
    }
    for (int64_t it = i0; it < i1; it++)
        for (int64_t pi = it / j->n * j->gp, pe = pi + j->gp; pi < pe && pi < j->panels; pi++) {
            const int64_t i = it % j->n, m0 = pi * OG_PANEL_MR;
            const int64_t mr = g->m - m0 < OG_PANEL_MR ? g->m - m0 : OG_PANEL_MR;
            /* the next panel to be read: this item's next, or the next group's first */
            const int64_t np = pi + 1 < pe                    ? pi + 1
                               : it + 1 < i1 && i + 1 == j->n ? pi + 1
                                                              : j->panels;
            og_panel_gemm_m_f32(pi, pi + 1, j->os, j->kdim, j->up, j->x + i * j->xs, j->os, ct,
                                OG_PANEL_MR,
                                np < j->panels ? j->up + np * j->kdim * OG_PANEL_MR : NULL, g->m);
            float *yb = j->y + (i * g->m + m0) * j->os;
            og_conv_panel_store(ct, 1, 0, j->os, j->os, mr, j->b ? j->b + m0 : NULL, cp_res(j, yb),
                                yb, clamp, lo, hi, vact);
            if (!clamp && !vact) og_cpu_act(&j->k->act, OG_FLOAT, yb, mr * j->os);
        }
}

/* Items (share t, panel pi), share-major: the share's sums of the panel (its input
 * channels' rows of the packed panel, a multiple of 16 into it) into part. */
static void cp_kshare_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    (void)slot;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t t = it / j->panels, pi = it % j->panels;
        const int64_t k0 = og_conv_kshare_start(j->kdim, j->kparts, t);
        const int64_t k1 = og_conv_kshare_start(j->kdim, j->kparts, t + 1);
        const float *next = it + 1 < i1 && pi + 1 < j->panels
                                ? j->up + ((pi + 1) * j->kdim + k0) * OG_PANEL_MR
                                : NULL;
        og_panel_gemm_m_f32(0, 1, j->os, k1 - k0, j->up + (pi * j->kdim + k0) * OG_PANEL_MR,
                            j->x + k0 * j->os, j->os, j->part + it * j->os * OG_PANEL_MR,
                            OG_PANEL_MR, next, j->g->m - pi * OG_PANEL_MR);
    }
}

/* Items (panel, half of its 32 rows): the shares' sums added, with the bias, written back
 * into Y's rows, activated. */
static void cp_ksum_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    const og_conv_geom *g = j->g;
    (void)slot;
    float lo = 0.0f, hi = 0.0f;
    const bool clamp = og_act_clamp_f32(&j->k->act, &lo, &hi);
    const int vact = clamp ? 0 : og_vact_of(&j->k->act);
    for (int64_t it = i0; it < i1; it++) {
        const int64_t pi = it / 2, h = it % 2 * 16, m0 = pi * OG_PANEL_MR + h;
        if (m0 >= g->m) continue;
        const int64_t mr = g->m - m0 < 16 ? g->m - m0 : 16;
        float *yb = j->y + m0 * j->os;
        og_conv_panel_store(j->part + pi * j->os * OG_PANEL_MR + h, j->kparts,
                            j->panels * j->os * OG_PANEL_MR, j->os, j->os, mr,
                            j->b ? j->b + m0 : NULL, cp_res(j, yb), yb, clamp, lo, hi, vact);
        if (!clamp && !vact) og_cpu_act(&j->k->act, OG_FLOAT, yb, mr * j->os);
    }
}

#endif

og_status og_conv_panel(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                        const float *w, const float *b, float *y)
{
#ifdef OG_CPU_X86
    int64_t os = 1, taps = 1;
    for (int i = 0; i < g->nsp; i++) {
        os *= g->out[i];
        taps *= g->kernel[i];
    }
    /* pw: X is the product's B as it is (one image; images side by side have theirs) */
    const bool sb = g->n > 1 && os < CP_MIN_BATCH_OS, pw = is_pointwise(g) && !sb;
    const int64_t panels = og_panel_count(g->m), kdim = g->c * taps;
    /* several images: as many panels an item as CP_GROUP_BYTES of weights hold */
    int64_t gp = g->n > 1 ? CP_GROUP_BYTES / (kdim * OG_PANEL_MR * (int64_t)sizeof(float)) : 1;
    gp = gp < 1 ? 1 : gp > panels ? panels : gp;
    const double madds = (double)g->m * (double)kdim * (double)os * (double)g->n;
    int threads = k->threads > 1 && madds >= og_par_min(k, CP_PAR_MIN) ? k->threads : 1;
    /* One image of fewer panels than 4 a thread: its columns in parts as well (of 48
     * positions or more, starting on whole vectors of 16 for the store; none on planes of
     * fewer than 96, whose second part would repeat the panels' pass for a few columns:
     * 7x7 layers of 5 panels measured 6-10 % slower), items part-major, so that a
     * worker waking late finds parts left and reads only their columns.  MobileNet-v2's
     * 14x14 384 -> 64 layers on two threads with the workers: 0.104-0.110 ms with a panel
     * an item, 0.089-0.092 in parts (per-node medians of 4 alternating runs); on one
     * thread 0.065, but keeping them there made the workers' next wakes slower (the
     * network 4 % slower in all). */
    /* One pointwise image of at least twice as many input channels as output ones, on
     * threads: the sum in shares of the input channels, one a thread, then a pass that
     * adds them (conv_pw_kshare.h: each thread reads the channels its core wrote).
     * MobileNet-v2 on two threads, per-node medians of 300 alternating runs in one
     * process: its 14x14 384 -> 64 layers 0.079 -> 0.056 ms, 576 -> 96 0.178 -> 0.121, its
     * 7x7 960 -> 160 0.106 -> 0.086; the network 0.95 of its time. */
    const int64_t kparts = pw && og_conv_kshare_worth(k, g) ? k->threads : 1;
    int64_t cparts = 1, cw = os;
    if (kparts == 1 && !sb && g->n == 1 && threads > 1 && panels < 4 * threads &&
        os >= 2 * CP_MIN_PART) {
        const int64_t want = (4 * threads + panels - 1) / panels;
        cparts = want < os / CP_MIN_PART ? want : os / CP_MIN_PART;
        cw = os / cparts / 16 * 16; /* the last part takes the rest */
    }
    /* Images side by side on threads with fewer panels than 4 a thread: the images in two
     * parts as well, so that two threads share 5 panels evenly (MobileNet-v2 8x64x64's 960
     * -> 160 layers of 2x2 planes on two threads: 0.092 ms with a panel an item, 1T 0.103) */
    const int64_t sbparts = sb && threads > 1 && panels < 4 * threads && g->n >= 2 ? 2 : 1;
    const int64_t items = kparts > 1 ? kparts * panels
                          : sb       ? panels * sbparts
                                     : (panels + gp - 1) / gp * g->n * cparts;
    threads = items < threads ? (int)items : threads;
    const size_t ufloats = og_panel_floats(g->m, kdim);
    /* the node's cache under a key of its own, apart from Winograd's (w and w + 1: other
     * layouts, possibly of the same size), whatever paths a node takes from run to run */
    bool fresh = true;
    float *up = og_kcache_get(k, (const char *)w + 2, ufloats * sizeof(float), &fresh);
    const size_t upk = up ? 0 : ufloats, slot = (size_t)((sb ? g->n : 1) * os * OG_PANEL_MR);
    const size_t colf = pw ? 0 : (size_t)(kdim * os * g->n);
    const size_t partf = kparts > 1 ? (size_t)(kparts * panels) * (size_t)(os * OG_PANEL_MR) : 0;
    const size_t slots = kparts > 1 ? 0 : slot * (size_t)threads; /* the shares need none */
    const size_t bytes = (upk + colf + partf + slots) * sizeof(float);
    float *scratch = og_scratch_get(k, bytes);
    if (!scratch) {
        if (up && fresh) og_kcache_drop(k);
        return og_kernel_error(k, OG_ERR_NOMEM,
                               "out of memory for %zu bytes of convolution scratch", bytes);
    }
    if (!up) up = scratch;
    if (fresh) og_panel_pack_f32(g->m, kdim, w, kdim, up);
    float *col = scratch + upk;
    int64_t in_img = g->c; /* values of an input image */
    for (int i = 0; i < g->nsp; i++) in_img *= g->in[i];
    cp_job j = {.k = k,
                .g = g,
                .x = pw ? x : col,
                .up = up,
                .b = b,
                .y = y,
                .r = k->res ? (const float *)k->res->data : NULL,
                .os = os,
                .kdim = kdim,
                .panels = panels,
                .n = g->n,
                .gp = gp,
                .xs = pw   ? in_img
                      : sb ? os
                           : kdim * os,
                .ld = sb ? g->n * os : os,
                .sb = sb,
                .slots = col + colf,
                .in = x,
                .in_img = in_img,
                .cparts = cparts,
                .sbparts = sbparts,
                .cw = cw,
                .kparts = kparts,
                .part = col + colf + slots};
    if (kparts > 1) {
        og_par_range(k, (int)kparts, items, 1, cp_kshare_range, &j);
        og_par_range(k, threads, 2 * panels, 1, cp_ksum_range, &j);
        og_scratch_put(k, scratch);
        return OG_OK;
    }
    /* side by side, one thread: the images' columns share cache lines */
    if (!pw && g->n == 1 && !cp_cols_fast(g)) /* one image: by bands of channels */
        og_par_range(k, threads, CP_COL_BANDS, 1, cp_im2col_bands, &j);
    else if (sb && is_pointwise(g)) /* rows apart: by bands of channels */
        og_par_range(k, threads, CP_COL_BANDS, 1, cp_pw_side_by_side, &j);
    else if (!pw)
        og_par_range(k, sb ? 1 : g->n < threads ? (int)g->n : threads, g->n, 1, cp_im2col, &j);
    og_par_range(k, threads, items, 1, cp_range, &j);
    og_scratch_put(k, scratch);
    return OG_OK;
#else
    (void)g, (void)x, (void)w, (void)b, (void)y;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no panel convolution kernel on this CPU");
#endif
}

bool og_conv_cols_fast(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    return t == OG_FLOAT && g->nsp == 2 && g->group == 1 && og_cpu_isa() >= 2 && cp_cols_fast(g);
#else
    (void)g;
    (void)t;
    return false;
#endif
}

void og_conv_cols_images(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                         int64_t in_img, int64_t cnt, float *col)
{
#ifdef OG_CPU_X86
    cols_job cj = {g, x, col, in_img, cnt};
    const double per_band =
        (double)(g->c * g->kernel[0] * g->kernel[1] * g->out[0] * g->out[1] * cnt) / CP_COL_BANDS;
    og_par_for(k, CP_COL_BANDS, per_band, OG_PAR_MIN_COMPUTE, cols_band_range, &cj);
#else
    (void)k, (void)g, (void)x, (void)in_img, (void)cnt, (void)col;
#endif
}

#ifdef OG_CPU_X86
/* dst[c · ldd + r] = src[r · lds + c], r < rows, c < cols: 16 x 16 blocks through
 * og_tr16_f32, the edges masked. */
static OG_TARGET_AVX512 void transpose_avx512(float *dst, int64_t ldd, const float *src,
                                              int64_t lds, int64_t rows, int64_t cols)
{
    for (int64_t r0 = 0; r0 < rows; r0 += 16)
        for (int64_t c0 = 0; c0 < cols; c0 += 16) {
            const int64_t nr = rows - r0 < 16 ? rows - r0 : 16,
                          nc = cols - c0 < 16 ? cols - c0 : 16;
            const __mmask16 mc = (__mmask16)(nc >= 16 ? 0xFFFF : (1u << nc) - 1u);
            const __mmask16 mr = (__mmask16)(nr >= 16 ? 0xFFFF : (1u << nr) - 1u);
            __m512 v[16];
            for (int i = 0; i < 16; i++)
                v[i] = i < nr ? _mm512_maskz_loadu_ps(mc, src + (r0 + i) * lds + c0)
                              : _mm512_setzero_ps();
            og_tr16_f32(v);
            for (int j = 0; j < nc; j++) _mm512_mask_storeu_ps(dst + (c0 + j) * ldd + r0, mr, v[j]);
        }
}
#endif

void og_transpose_f32(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows,
                      int64_t cols)
{
#ifdef OG_CPU_X86
    if (og_cpu_isa() >= 2) {
        transpose_avx512(dst, ldd, src, lds, rows, cols);
        return;
    }
#endif
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}
