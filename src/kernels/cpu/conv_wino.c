/* conv_wino.c: Winograd F(2x2, 3x3) float convolutions (see conv_wino.h).
 *
 * The output's tile rows go in chunks of one image, or chunks of whole images where an
 * image has few (items): for a chunk of nt tiles,
 *   1. every input channel's padded rows under the chunk are split into their even and
 *      odd columns (a patch column 2tj + k of tile tj is then element tj + k/2 of the even
 *      or the odd half: plain vector loads for 16 tiles), and V_ξ[c, t] = (B^T d B)_ξ;
 *   2. P_ξ = U_ξ · V_ξ, 16 GEMMs [M, C] x [C, nt];
 *   3. Y's 2x2 tiles = A^T P A + b, interleaved back into rows, then the activation.
 * U_ξ = (G g G^T)_ξ is computed before the items: once per session when W is the model's
 * (the node's og_kcache), else at every call.  Chunks go to threads, each with its own V,
 * P and split rows; their GEMMs run on one thread.  Fewer tiles than WINO_MIN_TILES in all
 * (small planes of one image or a few), or up to a few hundred on few channels, go by bands
 * of output channels instead (wino_band, below).  The same code computes a stride-1 3x3
 * ConvTranspose (its weights turned: flip) and, at the end of the file, the weight gradient
 * by the transposed transforms (og_conv_wino_wgrad). */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels/cpu/conv_wino.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_panel.h"
#include "kernels/cpu/split_row.h"

/* Tiles in all below which the chunks' BLAS products of few columns (each packing its U_ξ
 * again) cost more than they save: fewer go by bands of output channels (wino_band) with
 * U packed once.  ResNet-18's 14x14 layers at batch 1 (49 tiles by 256 channels): 0.52 ms
 * by bands, 1.15 by im2col + GEMM; its 7x7 ones (16 tiles by 512): 0.87 against 1.45; on
 * two threads 0.30 against 0.66 and 0.45 against 0.89.  (While each thread transformed the
 * whole input, more tiles lost by bands on two threads: 128 tiles of 128 channels 0.44 ms
 * against 0.31 by chunks; see WINO_BAND_MAX_CT.) */
#define WINO_MIN_TILES       64
#define WINO_MIN_IMAGE_TILES 16
#define WINO_MIN_CH          16
/* Tiles per image below which the bands (wino_band, for fewer than WINO_MIN_TILES tiles in
 * all) do not pay: ResNet-18's 2x2 layers of 512 channels at batch 8 (8 tiles, U 16 MB
 * against 9.4 MB of weights) took 0.70-0.91 ms against 0.85-0.89 by im2col + GEMM on one
 * thread, its 4x4 ones (32 tiles) 0.57 against 0.96 */
#define WINO_MIN_BAND_TILES 4
/* V and P of a chunk together: about this many bytes, so that they stay in cache from
 * the input transform through the GEMMs to the output transform */
#define WINO_CHUNK_BYTES ((int64_t)2 * 1024 * 1024)

/* More tiles go by bands too where the shared input transform (16 · C · tiles floats) and
 * each thread's products (16 · 32 · tiles) stay within about L2's size or two: once the
 * transform was no longer done by every thread (below), ResNet-18's 16x16 layers of 8
 * images (512 tiles of 64 channels) took 0.65-0.70 ms by bands against 0.75-0.78 by
 * chunks on one thread (0.35-0.38 against 0.38-0.44 on two), its 8x8 ones (128 of 128)
 * 0.64 against 0.75, and at 224x224 its 28x28 layers (196 of 128) 0.59 against 0.66 (0.34
 * against 0.43); the 56x56 ones (784 tiles of 64 channels) were slower, 0.83-0.94 against
 * 0.70. */
#define WINO_BAND_MAX_CT    40960 /* C · tiles */
#define WINO_BAND_MAX_TILES 512
/* Those figures were an AMD EPYC's, 1 MB of L2 per core, where a chunk's V and P
 * (WINO_CHUNK_BYTES) do not fit in L2.  On an Intel Xeon with 2 MB (model 207) the chunks
 * won: 16x16 layers of 8 images 0.68 ms against 0.84-0.87 on one thread, 0.37 against 0.56
 * on two; 28x28 of one 0.68 against 0.81 and 0.40-0.42 against 0.62-0.64; 8x8 of 8 images
 * 0.69 against 0.65-0.66 and 0.36-0.38 against 0.46-0.47 (minimums of 200 runs).  So those
 * more tiles go by bands only where L2 holds less than a chunk (or its size is unknown). */
#define WINO_BAND_L2_MAX WINO_CHUNK_BYTES

#ifdef OG_CPU_X86
/* Whether the tiles of this geometry (tiles per image) go by bands of output channels
 * (wino_band): few in all, or a transform that stays in cache; a plane's int32 offsets
 * for the scattered stores. */
static bool wino_band_fits(const og_conv_geom *g, int64_t tiles)
{
    const int64_t nt = g->n * tiles;
    const bool cached = nt <= WINO_BAND_MAX_TILES && g->c * nt <= WINO_BAND_MAX_CT &&
                        og_cpu_l2_bytes() < WINO_BAND_L2_MAX;
    return (nt < WINO_MIN_TILES || cached) && g->out[0] * g->out[1] * OG_PANEL_MR < INT32_MAX;
}
#endif

bool og_conv_wino_transposed(const og_conv_geom *g, og_conv_geom *conv)
{
    if (g->nsp != 2 || g->group != 1) return false;
    *conv = *g;
    for (int i = 0; i < 2; i++) {
        /* out = in − 1 + 3 − pb − pe (+ output padding) = in + pb' + pe' − 2 */
        const int64_t pb = 2 - g->pad_begin[i], pe = g->out[i] + 2 - g->in[i] - pb;
        if (g->kernel[i] != 3 || g->stride[i] != 1 || g->dil[i] != 1 || pb < 0 || pb > 2 ||
            pe < 0 || pe > 2)
            return false;
        conv->pad_begin[i] = pb;
        conv->pad_end[i] = pe;
    }
    return true;
}

/* What og_conv_wino and og_conv_wino_wgrad share: float, 2-D, one group, 16 channels or more
 * each side, 3x3 of stride 1 and dilation 1, pads of at most 2, AVX-512 (x86 only). */
static bool wino_geometry(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    if (t != OG_FLOAT || g->nsp != 2 || g->group != 1 || g->c < WINO_MIN_CH || g->m < WINO_MIN_CH ||
        og_cpu_isa() < 2)
        return false;
    for (int i = 0; i < 2; i++)
        if (g->kernel[i] != 3 || g->stride[i] != 1 || g->dil[i] != 1 || g->out[i] < 2 ||
            g->pad_begin[i] < 0 || g->pad_begin[i] > 2 || g->pad_end[i] < 0 || g->pad_end[i] > 2)
            return false;
    return true;
#else
    (void)g;
    (void)t;
    return false;
#endif
}

bool og_conv_wino_applies(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    if (!wino_geometry(g, t)) return false;
    const int64_t tiles = ((g->out[0] + 1) / 2) * ((g->out[1] + 1) / 2); /* per image */
    if (wino_band_fits(g, tiles)) return tiles >= WINO_MIN_BAND_TILES;
    return tiles >= WINO_MIN_IMAGE_TILES && g->n * tiles >= WINO_MIN_TILES;
#else
    (void)g;
    (void)t;
    return false;
#endif
}

#ifdef OG_CPU_X86
#include <immintrin.h>

typedef struct wino_job {
    const og_kernel_ctx *k;
    const og_conv_geom *g;
    const float *x, *b, *u;
    float *y;
    int64_t th, tw;    /* tiles per column and per row */
    int64_t rows;      /* tile rows per chunk */
    int64_t chunks;    /* per image */
    int64_t imgs;      /* images per item (whole images: chunks is 1) */
    int64_t sw;        /* split row: even half, then odd half, sw values each */
    bool flip;         /* w is a ConvTranspose's (wino_taps) */
    og_row_plan split; /* its masks */
    size_t slot;       /* floats per thread */
} wino_job;

/* The 16 values (G g G^T)[ξ / 4][ξ % 4] of 16 kernels g side by side (lanes), from their
 * 9 taps t (row-major), with G the rows (1, 0, 0), (1/2, 1/2, 1/2), (1/2, −1/2, 1/2),
 * (0, 0, 1): the one sequence of operations both layouts below store, so the same bits. */
static OG_TARGET_AVX512 inline void wino_g(const __m512 t[9], __m512 u[16])
{
    const __m512 half = _mm512_set1_ps(0.5f);
    __m512 gg[4][3];
    for (int q = 0; q < 3; q++) {
        gg[0][q] = t[q];
        gg[1][q] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(t[q], t[3 + q]), t[6 + q]));
        gg[2][q] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(t[q], t[3 + q]), t[6 + q]));
        gg[3][q] = t[6 + q];
    }
    for (int i = 0; i < 4; i++) {
        const __m512 a0 = gg[i][0], a1 = gg[i][1], a2 = gg[i][2];
        u[4 * i + 0] = a0;
        u[4 * i + 1] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(a0, a1), a2));
        u[4 * i + 2] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(a0, a1), a2));
        u[4 * i + 3] = a2;
    }
}

/* The 9 taps t (row-major) of the kernels at g + idx (lanes, mask mk), or of those kernels
 * turned by 180 degrees (flip: tap q is their tap 8 − q), as a ConvTranspose of stride 1
 * is the Conv of its weights so turned, input and output channels swapped. */
static OG_TARGET_AVX512 inline void wino_taps(const float *g, __m512i idx, __mmask16 mk, bool flip,
                                              __m512 t[9])
{
    for (int q = 0; q < 9; q++)
        t[q] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, g + (flip ? 8 - q : q), 4);
}

/* U[ξ][m][c .. c + 15] = wino_g of kernels w[m][c ..] (mk: the channels below c_n), idx
 * their lanes' offsets: as wino_weights below. */
static OG_TARGET_AVX512 inline void wino_u16(int64_t m_n, int64_t c_n, const float *w, bool flip,
                                             __m512i idx, int64_t m, int64_t c, float *u)
{
    const int64_t left = c_n - c;
    const __mmask16 mk = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
    __m512 t[9], r[16];
    wino_taps(flip ? w + (c * m_n + m) * 9 : w + (m * c_n + c) * 9, idx, mk, flip, t);
    wino_g(t, r);
    float *o = u + m * c_n + c;
    for (int xi = 0; xi < 16; xi++) _mm512_mask_storeu_ps(o + xi * m_n * c_n, mk, r[xi]);
}

/* U[ξ][m][c] = wino_g of kernel w[m][c]: 16 channels c at a time, their taps gathered (9
 * apart), the 16 results stored along c.  flip: w is a ConvTranspose's [C, M, 3, 3], and
 * kernel (m, c) is its (c, m) turned by 180 degrees (wino_taps); then the loops go by c
 * first, so that each lane reads its channel's kernels in memory order (the other order
 * jumped 9·M floats a step). */
static OG_TARGET_AVX512 void wino_weights(int64_t m_n, int64_t c_n, const float *w, bool flip,
                                          float *u)
{
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(flip ? (int)(m_n * 9) : 9));
    if (flip)
        for (int64_t c = 0; c < c_n; c += 16)
            for (int64_t m = 0; m < m_n; m++) wino_u16(m_n, c_n, w, true, idx, m, c, u);
    else
        for (int64_t m = 0; m < m_n; m++)
            for (int64_t c = 0; c < c_n; c += 16) wino_u16(m_n, c_n, w, false, idx, m, c, u);
}

/* The packed U of block mb (16 channels m, lanes) and input channel c: as
 * wino_weights_packed below. */
static OG_TARGET_AVX512 inline void wino_up16(int64_t m_n, int64_t c_n, const float *w, bool flip,
                                              __m512i idx, int64_t mb, int64_t c, float *up,
                                              size_t ustride)
{
    const int64_t m0 = mb * 16, left = m_n - m0, ml = left > 0 ? m0 : 0;
    const __mmask16 mk = (__mmask16)(left >= 16 ? 0xFFFF : left > 0 ? (1u << left) - 1u : 0u);
    __m512 t[9], r[16];
    wino_taps(flip ? w + (c * m_n + ml) * 9 : w + (ml * c_n + c) * 9, idx, mk, flip, t);
    wino_g(t, r);
    float *oc = up + (mb / 2) * OG_PANEL_MR * c_n + (mb % 2) * 16 + c * OG_PANEL_MR;
    for (int xi = 0; xi < 16; xi++) _mm512_storeu_ps(oc + xi * ustride, r[xi]);
}

/* wino_weights and og_panel_pack_f32 of its 16 matrices in one pass, for the blocks of 16
 * output channels [mb0, mb1): 16 channels m at a time (lanes), their taps gathered for one
 * input channel c, so that each of the 16 results is 16 contiguous floats of its packed
 * panel (up + ξ · ustride, rows at or past m_n zero).  wino_g as in wino_weights, so the
 * same bits.  flip as there: by c first, each c's blocks one run of memory (by blocks
 * first, ResNet-18 8x64x64's 4x4 layers' input gradients took 2.05 ms, their forward
 * 1.65). */
_Static_assert(OG_PANEL_MR == 32, "two blocks of 16 channels a panel");
static OG_TARGET_AVX512 void wino_weights_packed(int64_t m_n, int64_t c_n, const float *w,
                                                 bool flip, float *up, size_t ustride, int64_t mb0,
                                                 int64_t mb1)
{
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(flip ? 9 : (int)(c_n * 9)));
    if (flip)
        for (int64_t c = 0; c < c_n; c++)
            for (int64_t mb = mb0; mb < mb1; mb++)
                wino_up16(m_n, c_n, w, true, idx, mb, c, up, ustride);
    else
        for (int64_t mb = mb0; mb < mb1; mb++)
            for (int64_t c = 0; c < c_n; c++)
                wino_up16(m_n, c_n, w, false, idx, mb, c, up, ustride);
}

typedef struct wino_pack_job {
    int64_t m_n, c_n;
    const float *w;
    bool flip;
    float *up;
    size_t ustride;
} wino_pack_job;

static void wino_pack_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wino_pack_job *p = ctx;
    (void)slot;
    wino_weights_packed(p->m_n, p->c_n, p->w, p->flip, p->up, p->ustride, i0, i1);
}

/* Padded row pr of input plane xc split: dst[i] = padded column 2i, dst[sw + i] = column
 * 2i + 1, i < tw + 1 (zeros outside the input). */
static void wino_split(const wino_job *j, const float *xc, int64_t pr, float *dst)
{
    const og_conv_geom *g = j->g;
    const int64_t ih = pr - g->pad_begin[0];
    const float *row = ih >= 0 && ih < g->in[0] ? xc + ih * g->in[1] : NULL;
    og_split_row_planned(&j->split, row, dst);
}

/* V[ξ][c][t] for input channel c of tile rows [ti0, ti1) (t from 0), from its split rows
 * sp (row r of the chunk at sp + r * 2 * sw). */
static OG_TARGET_AVX512 void wino_input(const wino_job *j, const float *sp, int64_t ti0,
                                        int64_t ti1, int64_t c, int64_t cn, int64_t nt, float *v)
{
    const int64_t tw = j->tw, sw = j->sw, vs = cn * nt; /* from one ξ to the next */
    float *vc = v + c * nt;
    for (int64_t ti = ti0; ti < ti1; ti++) {
        const float *r0 = sp + (2 * (ti - ti0)) * 2 * sw;
        for (int64_t tj = 0; tj < tw; tj += 16) {
            const int64_t left = tw - tj;
            const __mmask16 m = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
            __m512 d[4][4];
            for (int r = 0; r < 4; r++) {
                const float *e = r0 + r * 2 * sw + tj, *o = e + sw;
                d[r][0] = _mm512_maskz_loadu_ps(m, e);
                d[r][1] = _mm512_maskz_loadu_ps(m, o);
                d[r][2] = _mm512_maskz_loadu_ps(m, e + 1);
                d[r][3] = _mm512_maskz_loadu_ps(m, o + 1);
            }
            __m512 t[4][4];
            for (int k = 0; k < 4; k++) { /* B^T d */
                t[0][k] = _mm512_sub_ps(d[0][k], d[2][k]);
                t[1][k] = _mm512_add_ps(d[1][k], d[2][k]);
                t[2][k] = _mm512_sub_ps(d[2][k], d[1][k]);
                t[3][k] = _mm512_sub_ps(d[1][k], d[3][k]);
            }
            float *o = vc + (ti - ti0) * tw + tj;
            for (int i = 0; i < 4; i++) { /* (B^T d) B */
                _mm512_mask_storeu_ps(o + (4 * i + 0) * vs, m, _mm512_sub_ps(t[i][0], t[i][2]));
                _mm512_mask_storeu_ps(o + (4 * i + 1) * vs, m, _mm512_add_ps(t[i][1], t[i][2]));
                _mm512_mask_storeu_ps(o + (4 * i + 2) * vs, m, _mm512_sub_ps(t[i][2], t[i][1]));
                _mm512_mask_storeu_ps(o + (4 * i + 3) * vs, m, _mm512_sub_ps(t[i][1], t[i][3]));
            }
        }
    }
}

/* One tile's outputs y[row][column] = (A^T P A) + bias of 16 tiles or channels (the lanes
 * of mk) from P_ξ at q + ξ · ps, A^T the rows (1, 1, 1, 0), (0, 1, −1, −1). */
static inline OG_TARGET_AVX512 void wino_tile_out(const float *q, int64_t ps, __mmask16 mk,
                                                  __m512 bv, __m512 y[2][2])
{
    __m512 s[4], r[4];
    for (int k = 0; k < 4; k++) { /* A^T P */
        const __m512 p0 = _mm512_maskz_loadu_ps(mk, q + (0 + k) * ps);
        const __m512 p1 = _mm512_maskz_loadu_ps(mk, q + (4 + k) * ps);
        const __m512 p2 = _mm512_maskz_loadu_ps(mk, q + (8 + k) * ps);
        const __m512 p3 = _mm512_maskz_loadu_ps(mk, q + (12 + k) * ps);
        s[k] = _mm512_add_ps(_mm512_add_ps(p0, p1), p2);
        r[k] = _mm512_sub_ps(_mm512_sub_ps(p1, p2), p3);
    }
    /* (A^T P) A */
    y[0][0] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), s[2]), bv);
    y[0][1] = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s[1], s[2]), s[3]), bv);
    y[1][0] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(r[0], r[1]), r[2]), bv);
    y[1][1] = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(r[1], r[2]), r[3]), bv);
}

/* Output channel m of tile rows [ti0, ti1) into yc (its plane): A^T P A + bias (wino_tile_out),
 * each tile row's even and odd columns interleaved back. */
static OG_TARGET_AVX512 void wino_output(const wino_job *j, const float *p, int64_t m, int64_t mn,
                                         int64_t nt, int64_t ti0, int64_t ti1, float bias,
                                         float *yc)
{
    const int64_t tw = j->tw, oh = j->g->out[0], ow = j->g->out[1], ps = mn * nt;
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512 bv = _mm512_set1_ps(bias);
    const float *pm = p + m * nt;
    for (int64_t ti = ti0; ti < ti1; ti++)
        for (int64_t tj = 0; tj < tw; tj += 16) {
            const int64_t left = tw - tj;
            const __mmask16 m16 = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
            const float *q = pm + (ti - ti0) * tw + tj;
            __m512 y[2][2]; /* [row][even, odd column] */
            wino_tile_out(q, ps, m16, bv, y);
            const int64_t c0 = 2 * tj, cols = ow - c0; /* output columns c0 .. c0 + 31 */
            const __mmask16 ma = (__mmask16)(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
            const __mmask16 mb = (__mmask16)(cols >= 32  ? 0xFFFF
                                             : cols > 16 ? (1u << (cols - 16)) - 1u
                                                         : 0);
            for (int a = 0; a < 2; a++) {
                const int64_t row = 2 * ti + a;
                if (row >= oh) break;
                float *dst = yc + row * ow + c0;
                _mm512_mask_storeu_ps(dst, ma, _mm512_permutex2var_ps(y[a][0], lo, y[a][1]));
                _mm512_mask_storeu_ps(dst + 16, mb, _mm512_permutex2var_ps(y[a][0], hi, y[a][1]));
            }
        }
}

/* Item it = (image, chunk of tile rows), with the thread's scratch slot. */
static void wino_item(const wino_job *j, const og_kernel_ctx *k1, int64_t it, float *slot)
{
    const og_conv_geom *g = j->g;
    const int64_t n0 = it / j->chunks * j->imgs, ch = it % j->chunks;
    const int64_t n1 = n0 + j->imgs < g->n ? n0 + j->imgs : g->n;
    const int64_t ti0 = ch * j->rows, ti1 = ti0 + j->rows < j->th ? ti0 + j->rows : j->th;
    const int64_t per = (ti1 - ti0) * j->tw; /* tiles per image */
    const int64_t nt = (n1 - n0) * per, cn = g->c, mn = g->m;
    const int64_t prs = 2 * (ti1 - ti0) + 2; /* padded rows under the chunk */
    float *v = slot, *p = v + 16 * cn * nt, *sp = p + 16 * mn * nt;
    const int64_t plane = g->in[0] * g->in[1], oplane = g->out[0] * g->out[1];
    for (int64_t n = n0; n < n1; n++) /* image n's tiles from column (n - n0) * per on */
        for (int64_t c = 0; c < cn; c++) {
            const float *xc = j->x + (n * cn + c) * plane;
            for (int64_t r = 0; r < prs; r++) wino_split(j, xc, 2 * ti0 + r, sp + r * 2 * j->sw);
            wino_input(j, sp, ti0, ti1, c, cn, nt, v + (n - n0) * per);
        }
    for (int xi = 0; xi < 16; xi++)
        og_gemm_f32(k1, false, false, mn, nt, cn, 1.0f, j->u + xi * mn * cn, cn, v + xi * cn * nt,
                    nt, 0.0f, p + xi * mn * nt, nt);
    const int64_t r0 = 2 * ti0, r1 = 2 * ti1 < g->out[0] ? 2 * ti1 : g->out[0];
    for (int64_t n = n0; n < n1; n++)
        for (int64_t m = 0; m < mn; m++) {
            float *yc = j->y + (n * mn + m) * oplane;
            wino_output(j, p + (n - n0) * per, m, mn, nt, ti0, ti1, j->b ? j->b[m] : 0.0f, yc);
            og_cpu_act(&j->k->act, OG_FLOAT, yc + r0 * g->out[1], (r1 - r0) * g->out[1]);
        }
}
/* Items [i0, i1) on thread slot `slot`'s scratch (og_par_range). */
typedef struct wino_run {
    const wino_job *j;
    const og_kernel_ctx *inner; /* the items' own GEMMs' */
    float *slots;               /* j->slot floats per thread */
} wino_run;

static void wino_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wino_run *r = ctx;
    for (int64_t it = i0; it < i1; it++)
        wino_item(r->j, r->inner, it, r->slots + (size_t)slot * r->j->slot);
}

/* Few tiles (n · tiles < WINO_MIN_TILES: ResNet-18's 14x14 and 7x7 layers of one image),
 * or a few hundred whose transform stays in cache (wino_band_fits), split by output
 * channels instead: the items are the panels of 32 output channels of U
 * (packed for og_panel_gemm_f32: 16 products of one panel by all the tiles, then the
 * output transform of its channels).  The input's transform V is one for all threads, in
 * parts (an image's block of WINO_BAND_VCH channels) that the threads claim from a counter
 * at their first item: a thread then waits only for the parts others claimed and have
 * not finished, which running threads are computing, never for a thread still asleep.
 * (Each thread had transformed the whole input into its own V: at two threads the
 * transform, 41 % of ResNet-18's 4x4 layers of 8 images on one thread, was done twice.)
 * Each thread reads only its panels of U, where the tile chunks above had every thread
 * read all of U (4 MB for 256 channels, 16 MB for 512) and the BLAS pack it again at every
 * call. */
#define WINO_BAND_VCH 32
typedef struct wino_band {
    const wino_job *j;
    const float *up; /* U packed: 16 ξ of og_panel_floats(M, C) each */
    int64_t nt;      /* tiles in all */
    size_t slot;     /* floats per thread: Pt, then split rows */
    float *slots;
    float *v;                /* V_ξ[c][n · per + t], shared */
    int64_t vparts;          /* parts of V: images x channel blocks */
    _Atomic int64_t *vclaim; /* the next part to claim */
    _Atomic int64_t *vdone;  /* parts finished */
    int *ready;              /* per thread (16 ints apart): V is complete for it */
} wino_band;

/* Output channels [m0, m1) (at most 32) from Pt (Pt_ξ[t][m - m0] at pt + ξ · nt · 32 + t
 * · 32 + m - m0): A^T P A + b (wino_tile_out), 16 channels at a time, each tile's four
 * outputs scattered to their channels' planes; then the activation. */
static OG_TARGET_AVX512 void wino_band_output(const wino_band *bj, const float *pt, int64_t m0,
                                              int64_t m1)
{
    const wino_job *j = bj->j;
    const og_conv_geom *g = j->g;
    const int64_t tw = j->tw, th = j->th, oh = g->out[0], ow = g->out[1], oplane = oh * ow;
    const int64_t per = th * tw, ps = bj->nt * OG_PANEL_MR; /* from one ξ to the next */
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32((int)oplane));
    for (int64_t m = m0; m < m1; m += 16) {
        const int64_t left = m1 - m;
        const __mmask16 mk = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
        const __m512 bv = j->b ? _mm512_maskz_loadu_ps(mk, j->b + m) : _mm512_setzero_ps();
        for (int64_t n = 0; n < g->n; n++) {
            float *yn = j->y + (n * g->m + m) * oplane;
            for (int64_t ti = 0; ti < th; ti++)
                for (int64_t tj = 0; tj < tw; tj++) {
                    const float *q = pt + (n * per + ti * tw + tj) * OG_PANEL_MR + (m - m0);
                    __m512 yv[2][2]; /* [row][column] of the tile */
                    wino_tile_out(q, ps, mk, bv, yv);
                    for (int a = 0; a < 2 && 2 * ti + a < oh; a++)
                        for (int c = 0; c < 2 && 2 * tj + c < ow; c++)
                            _mm512_mask_i32scatter_ps(yn + (2 * ti + a) * ow + 2 * tj + c, mk, idx,
                                                      yv[a][c], 4);
                }
        }
    }
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = m0; m < m1; m++)
            og_cpu_act(&j->k->act, OG_FLOAT, j->y + (n * g->m + m) * oplane, oplane);
}

static void wino_band_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wino_band *bj = ctx;
    const wino_job *j = bj->j;
    const og_conv_geom *g = j->g;
    const int64_t cn = g->c, nt = bj->nt, per = j->th * j->tw;
    const float *v = bj->v;
    float *pt = bj->slots + (size_t)slot * bj->slot, *sp = pt + 16 * nt * OG_PANEL_MR;
    if (!bj->ready[16 * slot]) { /* V of every image's tiles: V_ξ[c][n · per + t] */
        const int64_t plane = g->in[0] * g->in[1], prs = 2 * j->th + 2;
        const int64_t blocks = (cn + WINO_BAND_VCH - 1) / WINO_BAND_VCH;
        int64_t part;
        while ((part = atomic_fetch_add_explicit(bj->vclaim, 1, memory_order_relaxed)) <
               bj->vparts) {
            const int64_t n = part / blocks, c0 = part % blocks * WINO_BAND_VCH;
            const int64_t c1 = c0 + WINO_BAND_VCH < cn ? c0 + WINO_BAND_VCH : cn;
            for (int64_t c = c0; c < c1; c++) {
                const float *xc = j->x + (n * cn + c) * plane;
                for (int64_t r = 0; r < prs; r++) wino_split(j, xc, r, sp + r * 2 * j->sw);
                wino_input(j, sp, 0, j->th, c, cn, nt, bj->v + n * per);
            }
            atomic_fetch_add_explicit(bj->vdone, 1, memory_order_release);
        }
        /* the parts still in progress are on running threads */
        for (int spins = 0; atomic_load_explicit(bj->vdone, memory_order_acquire) < bj->vparts;
             spins++)
            if (spins >= 64) sched_yield();
        bj->ready[16 * slot] = 1;
    }
    const size_t ustride = og_panel_floats(g->m, cn);
    for (int64_t pi = i0; pi < i1; pi++) {
        for (int xi = 0; xi < 16; xi++)
            og_panel_gemm_f32(pi, pi + 1, nt, cn, bj->up + xi * ustride, v + xi * cn * nt, nt,
                              pt + xi * nt * OG_PANEL_MR, OG_PANEL_MR,
                              xi < 15 ? bj->up + (xi + 1) * ustride + pi * cn * OG_PANEL_MR : NULL);
        const int64_t m0 = pi * OG_PANEL_MR, m1 = m0 + OG_PANEL_MR < g->m ? m0 + OG_PANEL_MR : g->m;
        wino_band_output(bj, pt, m0, m1);
    }
}

/* og_conv_wino for few tiles (wino_band_fits), j's tile geometry set. */
static og_status wino_band_run(const og_kernel_ctx *k, wino_job *j, const float *w)
{
    const og_conv_geom *g = j->g;
    const int64_t cn = g->c, mn = g->m, nt = g->n * j->th * j->tw, panels = og_panel_count(mn);
    const int threads = k->threads > 1 ? k->threads : 1;
    const int slots = panels < threads ? (int)panels : threads;
    wino_band bj = {.j = j, .nt = nt};
    bj.slot = (size_t)(16 * nt * OG_PANEL_MR + (2 * j->th + 2) * 2 * j->sw);
    bj.vparts = g->n * ((cn + WINO_BAND_VCH - 1) / WINO_BAND_VCH);
    const size_t vfloats = (size_t)(16 * cn * nt);
    const size_t ufloats = 16 * og_panel_floats(mn, cn);
    /* U packed: in the node's cache when W is the model's, under another key than the
     * tile chunks' U (another layout, maybe the same size) */
    bool fresh = true;
    const void *key = (const char *)w + 1;
    float *up = k->const_in & 2u ? og_kcache_get(k, key, ufloats * sizeof(float), &fresh) : NULL;
    /* scratch: [U packed, when not cached] [V] [slots] [the two counters, 64 bytes apart]
     * [ready] */
    const size_t upk = up ? 0 : ufloats;
    const size_t fl = upk + vfloats + bj.slot * (size_t)slots;
    const size_t bytes =
        (fl + 15) / 16 * 16 * sizeof(float) + 128 + (size_t)slots * 16 * sizeof(int);
    float *scratch = og_scratch_get(k, bytes);
    if (!scratch) {
        if (up && fresh) og_kcache_drop(k);
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of Winograd scratch",
                               bytes);
    }
    if (!up) up = scratch;
    if (fresh) {
        /* transformed and packed on the threads: once per session for the model's W, at
         * every call for one that changes (a training step's: ResNet-18 8x64x64's 256 ->
         * 256 layers of 4x4 planes spent 32 % of their time there on one thread) */
        wino_pack_job pj = {mn, cn, w, j->flip, up, ufloats / 16};
        og_par_for(k, 2 * panels, (double)(16 * 9 * cn), OG_PAR_MIN_COMPUTE, wino_pack_range, &pj);
    }
    bj.up = up;
    bj.v = scratch + upk;
    bj.slots = bj.v + vfloats;
    char *tail = (char *)(scratch + (fl + 15) / 16 * 16);
    bj.vclaim = (_Atomic int64_t *)(void *)tail;
    bj.vdone = (_Atomic int64_t *)(void *)(tail + 64);
    atomic_init(bj.vclaim, 0);
    atomic_init(bj.vdone, 0);
    bj.ready = (int *)(void *)(tail + 128);
    memset(bj.ready, 0, (size_t)slots * 16 * sizeof(int));
    og_par_range(k, slots, panels, 1, wino_band_range, &bj);
    og_scratch_put(k, scratch);
    return OG_OK;
}
#endif /* OG_CPU_X86 */

og_status og_conv_wino(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                       const float *w, bool flip, const float *b, float *y)
{
#ifdef OG_CPU_X86
    wino_job j;
    memset(&j, 0, sizeof j);
    j.flip = flip;
    j.k = k;
    j.g = g;
    j.x = x;
    j.b = b;
    j.y = y;
    j.th = (g->out[0] + 1) / 2;
    j.tw = (g->out[1] + 1) / 2;
    j.sw = (j.tw + 1 + 15) / 16 * 16;
    og_split_plan_init(&j.split, g->pad_begin[1], g->in[1], 2 * (j.tw + 1), j.sw);
    if (wino_band_fits(g, j.th * j.tw)) return wino_band_run(k, &j, w);
    const int64_t per_tile = 16 * (g->c + g->m) * (int64_t)sizeof(float);
    int64_t rows = WINO_CHUNK_BYTES / (per_tile * j.tw);
    rows = rows < 1 ? 1 : rows > j.th ? j.th : rows;
    const int threads = k->threads > 1 ? k->threads : 1;
    j.chunks = (j.th + rows - 1) / rows;
    if (threads > 1 && g->n < threads * j.chunks && j.chunks < j.th) {
        /* fewer images than threads' worth of chunks: chunks of equal size, their count a
         * multiple of the threads (ResNet-18's 28 tile rows on 2 threads: 4 chunks of 7,
         * not 9, 9, 9 and 1) */
        int64_t nch = (j.chunks + threads - 1) / threads * threads;
        nch = nch < j.th ? nch : j.th;
        rows = (j.th + nch - 1) / nch;
        j.chunks = (j.th + rows - 1) / rows;
    }
    j.rows = rows;
    j.imgs = 1;
    if (j.chunks == 1) { /* whole images: as many as the chunk's bytes take, a block each
                          * thread at least */
        int64_t imgs = WINO_CHUNK_BYTES / (per_tile * j.th * j.tw);
        const int64_t per_thread = (g->n + threads - 1) / threads;
        imgs = imgs < 1 ? 1 : imgs > per_thread ? per_thread : imgs;
        j.imgs = imgs;
    }
    const int64_t nt = j.imgs * rows * j.tw;
    j.slot = (size_t)(16 * (g->c + g->m) * nt + (2 * rows + 2) * 2 * j.sw);
    const int64_t items = (g->n + j.imgs - 1) / j.imgs * j.chunks;
    const int slots = items < threads ? (int)items : threads;
    /* U: in the node's cache when W is the model's (transformed at the first run), else
     * in scratch at every call */
    size_t ubytes = (size_t)(16 * g->m * g->c) * sizeof(float);
    bool fresh = true;
    float *u = k->const_in & 2u ? og_kcache_get(k, w, ubytes, &fresh) : NULL;
    if (u) ubytes = 0;
    const size_t bytes = ubytes + j.slot * sizeof(float) * (size_t)slots;
    char *scratch = og_scratch_get(k, bytes);
    if (!scratch) {
        if (u && fresh) og_kcache_drop(k);
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of Winograd scratch",
                               bytes);
    }
    if (!u) u = (float *)scratch;
    if (fresh) wino_weights(g->m, g->c, w, flip, u);
    j.u = u;
    og_kernel_ctx one = *k;
    one.threads = 1;
    /* several threads: each item's GEMMs on its own one; else they may use the threads */
    wino_run r = {&j, slots > 1 ? &one : k, (float *)(scratch + ubytes)};
    og_par_range(k, slots, items, 1, wino_range, &r);
    og_scratch_put(k, scratch);
    return OG_OK;
#else
    (void)g, (void)x, (void)w, (void)flip, (void)b, (void)y;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no Winograd kernel on this CPU");
#endif
}

/* ---- the weight gradient (og_conv_wino_wgrad) ------------------------------------------ */

/* Weight gradients by Winograd: at most this many floats of S (16 · M · C, one copy) */
#define WINO_WGRAD_MAX_S ((int64_t)1 << 20)

bool og_conv_wino_wgrad_applies(const og_conv_geom *g, og_dtype t)
{
    if (!wino_geometry(g, t) || 16 * g->m * g->c > WINO_WGRAD_MAX_S) return false;
    for (int i = 0; i < 2; i++) /* dY's size is the forward's output's */
        if (g->out[i] != g->in[i] + g->pad_begin[i] + g->pad_end[i] - 2) return false;
    return ((g->out[0] + 1) / 2) * ((g->out[1] + 1) / 2) >= WINO_MIN_IMAGE_TILES;
}

#ifdef OG_CPU_X86
typedef struct wgrad_job {
    wino_job j;         /* the forward's tile geometry; j.x is X */
    const float *dy;    /* [N, M, OH, OW] */
    float *v, *q, *s;   /* V [16][C][nt], Q [16][M][nt], S [16][M][C] */
    float *split;       /* per thread: the split rows of an image */
    int64_t n0, nb, nt; /* the block's first image, images, tiles */
    size_t split_slot;
    float *dw;
} wgrad_job;

/* Item (image n0 + it / C, channel it % C) of the block: its V (wino_input's). */
static void wgrad_v_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wgrad_job *w = ctx;
    const wino_job *j = &w->j;
    const og_conv_geom *g = j->g;
    const int64_t cn = g->c, per = j->th * j->tw, plane = g->in[0] * g->in[1];
    const int64_t prs = 2 * j->th + 2;
    float *sp = w->split + (size_t)slot * w->split_slot;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t b = it / cn, c = it % cn;
        const float *xc = j->x + ((w->n0 + b) * cn + c) * plane;
        for (int64_t r = 0; r < prs; r++) wino_split(j, xc, r, sp + r * 2 * j->sw);
        wino_input(j, sp, 0, j->th, c, cn, w->nt, w->v + b * per);
    }
}

/* Item (image n0 + it / M, output channel it % M): Q_ξ = (A dY A^T)_ξ of each tile, A^T the
 * rows (1, 1, 1, 0), (0, 1, −1, −1) of the forward's output transform (wino_tile_out), the
 * tile's outputs past the plane's edge zeros.  16 tiles of a tile row at a time: the two
 * output rows loaded 32 columns at a time, their even and odd columns permuted apart. */
static OG_TARGET_AVX512 void wgrad_q_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wgrad_job *w = ctx;
    const wino_job *j = &w->j;
    const og_conv_geom *g = j->g;
    (void)slot;
    const int64_t mn = g->m, tw = j->tw, per = j->th * tw, oh = g->out[0], ow = g->out[1];
    const int64_t qs = mn * w->nt; /* from one ξ to the next */
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t it = i0; it < i1; it++) {
        const int64_t b = it / mn, m = it % mn;
        const float *yc = w->dy + ((w->n0 + b) * mn + m) * oh * ow;
        float *qm = w->q + m * w->nt + b * per;
        for (int64_t ti = 0; ti < j->th; ti++)
            for (int64_t tj = 0; tj < tw; tj += 16) {
                const int64_t left = tw - tj, cols = ow - 2 * tj;
                const __mmask16 mt = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
                const __mmask16 ma = (__mmask16)(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
                const __mmask16 mb = (__mmask16)(cols >= 32  ? 0xFFFF
                                                 : cols > 16 ? (1u << (cols - 16)) - 1u
                                                             : 0u);
                __m512 d[2][2]; /* [row][even, odd column] */
                for (int r = 0; r < 2; r++) {
                    const int64_t row = 2 * ti + r;
                    if (row >= oh) {
                        d[r][0] = d[r][1] = _mm512_setzero_ps();
                        continue;
                    }
                    const float *src = yc + row * ow + 2 * tj;
                    const __m512 lo = _mm512_maskz_loadu_ps(ma, src);
                    const __m512 hi = _mm512_maskz_loadu_ps(mb, src + 16);
                    d[r][0] = _mm512_permutex2var_ps(lo, ev, hi);
                    d[r][1] = _mm512_permutex2var_ps(lo, od, hi);
                }
                __m512 x[4][2]; /* A d */
                for (int k = 0; k < 2; k++) {
                    x[0][k] = d[0][k];
                    x[1][k] = _mm512_add_ps(d[0][k], d[1][k]);
                    x[2][k] = _mm512_sub_ps(d[0][k], d[1][k]);
                    x[3][k] = _mm512_sub_ps(_mm512_setzero_ps(), d[1][k]);
                }
                float *o = qm + ti * tw + tj;
                for (int a = 0; a < 4; a++) { /* (A d) A^T */
                    _mm512_mask_storeu_ps(o + (4 * a + 0) * qs, mt, x[a][0]);
                    _mm512_mask_storeu_ps(o + (4 * a + 1) * qs, mt,
                                          _mm512_add_ps(x[a][0], x[a][1]));
                    _mm512_mask_storeu_ps(o + (4 * a + 2) * qs, mt,
                                          _mm512_sub_ps(x[a][0], x[a][1]));
                    _mm512_mask_storeu_ps(o + (4 * a + 3) * qs, mt,
                                          _mm512_sub_ps(_mm512_setzero_ps(), x[a][1]));
                }
            }
    }
}

/* Products ξ in [i0, i1): S_ξ (+)= Q_ξ · V_ξ^T over the block's tiles, each on one thread */
typedef struct wgrad_gemm {
    const wgrad_job *w;
    const og_kernel_ctx *inner;
    float beta;
} wgrad_gemm;

static void wgrad_gemm_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wgrad_gemm *p = ctx;
    const wgrad_job *w = p->w;
    const int64_t mn = w->j.g->m, cn = w->j.g->c, nt = w->nt;
    (void)slot;
    for (int64_t xi = i0; xi < i1; xi++)
        og_gemm_f32(p->inner, false, true, mn, cn, nt, 1.0f, w->q + xi * mn * nt, nt,
                    w->v + xi * cn * nt, nt, p->beta, w->s + xi * mn * cn, cn);
}

/* Rows m in [i0, i1) of dW: dW[m][c] = G^T S[m][c] G, S[m][c] the 4x4 of S_ξ[m][c], G the
 * rows (1, 0, 0), (1/2, 1/2, 1/2), (1/2, −1/2, 1/2), (0, 0, 1) of the forward's weight
 * transform (wino_g); 16 channels c at a time, each of the 9 taps scattered to its place. */
static OG_TARGET_AVX512 void wgrad_out_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const wgrad_job *w = ctx;
    const int64_t mn = w->j.g->m, cn = w->j.g->c, ss = mn * cn;
    (void)slot;
    const __m512 half = _mm512_set1_ps(0.5f);
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(9));
    for (int64_t m = i0; m < i1; m++)
        for (int64_t c = 0; c < cn; c += 16) {
            const int64_t left = cn - c;
            const __mmask16 mk = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
            const float *sp = w->s + m * cn + c;
            __m512 s[16], t[3][4];
            for (int xi = 0; xi < 16; xi++) s[xi] = _mm512_maskz_loadu_ps(mk, sp + xi * ss);
            for (int b = 0; b < 4; b++) { /* G^T S: over the rows i of S */
                const __m512 s0 = s[b], s1 = s[4 + b], s2 = s[8 + b], s3 = s[12 + b];
                t[0][b] = _mm512_add_ps(s0, _mm512_mul_ps(half, _mm512_add_ps(s1, s2)));
                t[1][b] = _mm512_mul_ps(half, _mm512_sub_ps(s1, s2));
                t[2][b] = _mm512_add_ps(_mm512_mul_ps(half, _mm512_add_ps(s1, s2)), s3);
            }
            float *o = w->dw + (m * cn + c) * 9;
            for (int p = 0; p < 3; p++) { /* (G^T S) G: over the columns */
                const __m512 a0 = t[p][0], a1 = t[p][1], a2 = t[p][2], a3 = t[p][3];
                const __m512 r0 = _mm512_add_ps(a0, _mm512_mul_ps(half, _mm512_add_ps(a1, a2)));
                const __m512 r1 = _mm512_mul_ps(half, _mm512_sub_ps(a1, a2));
                const __m512 r2 = _mm512_add_ps(_mm512_mul_ps(half, _mm512_add_ps(a1, a2)), a3);
                _mm512_mask_i32scatter_ps(o + 3 * p + 0, mk, idx, r0, 4);
                _mm512_mask_i32scatter_ps(o + 3 * p + 1, mk, idx, r1, 4);
                _mm512_mask_i32scatter_ps(o + 3 * p + 2, mk, idx, r2, 4);
            }
        }
}
#endif /* OG_CPU_X86 */

og_status og_conv_wino_wgrad(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                             const float *dy, float *dw)
{
#ifdef OG_CPU_X86
    wgrad_job w;
    memset(&w, 0, sizeof w);
    wino_job *j = &w.j;
    j->k = k;
    j->g = g;
    j->x = x;
    j->th = (g->out[0] + 1) / 2;
    j->tw = (g->out[1] + 1) / 2;
    j->sw = (j->tw + 1 + 15) / 16 * 16;
    og_split_plan_init(&j->split, g->pad_begin[1], g->in[1], 2 * (j->tw + 1), j->sw);
    w.dy = dy;
    w.dw = dw;
    const int64_t cn = g->c, mn = g->m, per = j->th * j->tw;
    /* images per block: V and Q within about WINO_CHUNK_BYTES */
    int64_t nb = WINO_CHUNK_BYTES / (16 * (cn + mn) * per * (int64_t)sizeof(float));
    nb = nb < 1 ? 1 : nb > g->n ? g->n : nb;
    const int threads = k->threads > 1 ? k->threads : 1;
    w.split_slot = (size_t)((2 * j->th + 2) * 2 * j->sw);
    const size_t vq = (size_t)(16 * (cn + mn) * nb * per), sf = (size_t)(16 * mn * cn);
    const size_t bytes = (vq + sf + w.split_slot * (size_t)threads) * sizeof(float);
    float *scratch = og_scratch_get(k, bytes);
    if (!scratch)
        return og_kernel_error(k, OG_ERR_NOMEM,
                               "out of memory for %zu bytes of Winograd weight-gradient scratch",
                               bytes);
    w.s = scratch;
    w.split = scratch + sf;
    og_kernel_ctx one = *k;
    one.threads = 1;
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
        w.n0 = n0;
        w.nb = g->n - n0 < nb ? g->n - n0 : nb;
        w.nt = w.nb * per;
        w.v = w.split + w.split_slot * (size_t)threads;
        w.q = w.v + 16 * cn * w.nt;
        og_par_for(k, w.nb * cn, (double)(16 * per), OG_PAR_MIN_COMPUTE, wgrad_v_range, &w);
        og_par_for(k, w.nb * mn, (double)(16 * per), OG_PAR_MIN_COMPUTE, wgrad_q_range, &w);
        wgrad_gemm p = {&w, &one, n0 > 0 ? 1.0f : 0.0f};
        og_par_range(k, threads, 16, 1, wgrad_gemm_range, &p);
    }
    og_par_for(k, mn, (double)(cn * 64), OG_PAR_MIN_COMPUTE, wgrad_out_range, &w);
    og_scratch_put(k, scratch);
    return OG_OK;
#else
    (void)g, (void)x, (void)dy, (void)dw;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no Winograd kernel on this CPU");
#endif
}
