/* conv_pw.c: pointwise float convolutions (see conv_pw.h).
 *
 * Per image and group, Y_g[mg, OS] = W_g[mg, cg] · X_g[cg, OS] + b, X_g and Y_g read and
 * written in place (NCHW: a channel is a row of OS values).  The output is cut into tiles
 * of PW_MR channels by up to PW_NR positions whose sums stay in 24 AVX-512 registers:
 *
 *   acc[r][j] = b[r];  for k < cg:  acc[r][j] += W[r, k] · X[k, j]   (r < 8, j < 48)
 *
 * per k three vector loads of an input row, eight broadcasts of weights (W's rows read in
 * place: each row a stream along k), 24 multiply-adds; then the tile is stored once with
 * the activation (Relu and Clip as a clamp in registers; the others by og_cpu_act on a
 * few tile columns of Y at a time, while they are in cache).  The input rows of a tile column (cg x
 * 48 values, cg <= PW_MAX_CG) stay in L1 while every output channel passes over them, and the next
 * column's are prefetched into L2 meanwhile (one stream per input row). Nothing is packed: packing
 * W per call (mg · cg copies) measured as costly as the product on 7x7 planes.  Longer sums of
 * one image into many output channels (more than PW_MAX_CG inputs and PW_LONG_MAX_M outputs;
 * several images' small planes, and few output channels, take up to PW_MAX_CG_IMAGES inputs), and
 * planes that fill 16-lane vectors poorly (7x7: 49 of 64 lanes), stay with the GEMM, which measured
 * faster there (og_conv_pw_applies).
 *
 * The sums run in the order b + w0·x0 + w1·x1 + ... (each step fused), with or without an
 * activation, so that a fused activation gives the bits of the unfused one. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/conv_pw.h"
#include "kernels/cpu/vact.h"

#ifdef OG_CPU_X86
#include <immintrin.h>

#define PW_MR        8     /* output channels per tile */
#define PW_NR        48    /* output positions per tile: 3 vectors of 16 */
#define PW_ACT_BYTES 65536 /* pw_taps: Y covered by a call of a (non-clamp) activation */
/* input channels per group at most (og_conv_pw_applies): a tile column's inputs, at most
 * PW_MAX_CG x PW_NR values (30 KB), stay in L1 */
#define PW_MAX_CG OG_CONV_PW_MAX_K
/* The same for several images (og_conv_pw_applies), whose planes are small (the late
 * layers of a batch of 64x64 images: 8x8 and 4x4), where the GEMM's way copies the images
 * side by side first and a product of 16-96 output channels runs far below its peak:
 * MobileNet-v2 8x64x64's 192 -> 32 layers on 8x8 took 0.124 ms on two threads by it, 0.047
 * here, its 384 -> 64 and 576 -> 96 ones on 4x4 0.090 -> 0.043 and 0.107 -> 0.083 (per-node
 * medians of 200 alternating runs in one process); the network 0.92 of its time, 0.97 on
 * one thread; EfficientNet-B0 8x64x64 0.99 and 0.975.  The tile's inputs then come from
 * L2, which the kernel prefetches a column ahead. */
#define PW_MAX_CG_IMAGES 1024
/* One image's longer sums (up to PW_MAX_CG_IMAGES inputs) into at most this many output
 * channels per group, whose tiles read a column's inputs from L2 a few times only: on an
 * AMD EPYC (Zen 4, 1 MB L2), MobileNet-v2 224's 192 -> 32 layers at 28x28 took 0.090 and
 * 0.103 ms here against oneDNN's 0.094 and 0.108, and the one whose residual Add runs
 * inside 0.117 against 0.286 (the sgemm, then the Add's pass; per-node medians of 600
 * runs); EfficientNet-B0's 240 -> 40 one with its residual 0.174 against 0.56; on two
 * threads 0.061 against 0.271.  ResNet-50's 256 -> 64 and 256 -> 128 layers at 56x56 took
 * 4 % longer this way, and stay with the GEMM. */
#define PW_LONG_MAX_M 48
/* multiply-adds below which a call stays on one thread: this kernel runs about 87 G of them
 * a second here, so a call of 2^23 takes about 100 us on one thread, and waking a blocked
 * second one costs about 44 (MobileNet-v2's 1x1 convolutions of 4.8 M multiply-adds took
 * 55 us on one thread, 85-92 on two) */
#define PW_PAR_MIN 8388608.0
/* The same with the session's workers (og_kernel_ctx.workers), whose caller does not wait
 * for a worker still asleep */
#define PW_PAR_MIN_WORKERS 2097152.0

/* A tile's parameters besides its operands. */
typedef struct pw_epi {
    bool clamp;    /* clamp the sums to [lo, hi] before the store */
    bool prefetch; /* prefetch the next tile column's inputs (the first tile of a column) */
    float lo, hi;
    const float *bias; /* the tile's first channel's, NULL: none */
    const float *res;  /* added before the activation, at c's offsets (NULL: none) */
    int vact;          /* 1 Sigmoid, 2 SiLU before the store (vact.h), 0 none */
    /* 0: a tile's vectors are 16 positions apart (one plane).  Else each vector is one
     * image's whole plane (at most 16 positions, `tail` lanes of every vector): input
     * vectors vx floats apart, output ones vc apart (pw_images). */
    int64_t vx, vc;
} pw_epi;

/* Tile of mr (<= PW_MR) output channels and NV vectors of positions, the last one's
 * lanes given by tail: c[r * ldc + j] for r < mr over kc inputs; W's rows wr[r * ldw]
 * (rows past mr repeat the last one: computed, not stored), input row q at bx + off[q].
 * E_CLIP of unary.c: x < lo ? lo : x > hi ? hi : x (NaN passes). */
#define PW_TILE(NV)                                                                                \
    static OG_TARGET_AVX512 void pw_tile##NV(                                                      \
        int64_t kc, const float *restrict wr, int64_t ldw, const float *restrict bx,               \
        const int64_t *restrict off, __mmask16 tail, float *restrict c, int64_t ldc, int mr,       \
        const pw_epi *e)                                                                           \
    {                                                                                              \
        const int64_t vx = e->vx ? e->vx : 16, vc = e->vc ? e->vc : 16;                            \
        __m512 acc[PW_MR][NV];                                                                     \
        const float *w[PW_MR];                                                                     \
        _Pragma("GCC unroll 8") for (int r = 0; r < PW_MR; r++) w[r] =                             \
            wr + (r < mr ? r : mr - 1) * ldw;                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < PW_MR; r++)                                    \
        {                                                                                          \
            const __m512 b0 =                                                                      \
                e->bias && r < mr ? _mm512_set1_ps(e->bias[r]) : _mm512_setzero_ps();              \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) acc[r][v] = b0;                   \
        }                                                                                          \
        for (int64_t k = 0; k < kc; k++) {                                                         \
            __m512 xv[NV];                                                                         \
            const float *xr = bx + off[k];                                                         \
            if (e->prefetch) /* the next tile column's inputs, into L2 */                          \
                _Pragma("GCC unroll 3") for (int v = 0; v < 3; v++)                                \
                    _mm_prefetch((const char *)(xr + PW_NR + 16 * v), _MM_HINT_T1);                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) xv[v] =                           \
                (v == NV - 1 || e->vx) && tail != 0xFFFF                                           \
                    ? _mm512_maskz_loadu_ps(tail, xr + vx * v)                                     \
                    : _mm512_loadu_ps(xr + vx * v);                                                \
            _Pragma("GCC unroll 8") for (int r = 0; r < PW_MR; r++)                                \
            {                                                                                      \
                const __m512 wv = _mm512_set1_ps(w[r][k]);                                         \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) acc[r][v] =                   \
                    _mm512_fmadd_ps(wv, xv[v], acc[r][v]);                                         \
            }                                                                                      \
        }                                                                                          \
        const __m512 lo = _mm512_set1_ps(e->lo), hi = _mm512_set1_ps(e->hi);                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < PW_MR; r++)                                    \
        {                                                                                          \
            if (r >= mr) break;                                                                    \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                                   \
            {                                                                                      \
                const __mmask16 mk = v == NV - 1 || e->vx ? tail : (__mmask16)0xFFFF;              \
                const __m512 s =                                                                   \
                    e->res ? _mm512_add_ps(acc[r][v],                                              \
                                           _mm512_maskz_loadu_ps(mk, e->res + r * ldc + vc * v))   \
                           : acc[r][v];                                                            \
                const __m512 a = og_v_out(s, e->clamp, lo, hi, e->vact);                           \
                if (mk == 0xFFFF)                                                                  \
                    _mm512_storeu_ps(c + r * ldc + vc * v, a);                                     \
                else                                                                               \
                    _mm512_mask_storeu_ps(c + r * ldc + vc * v, mk, a);                            \
            }                                                                                      \
        }                                                                                          \
    }
PW_TILE(1)
PW_TILE(2)
PW_TILE(3)
#undef PW_TILE

typedef struct pw_job {
    const og_kernel_ctx *k;
    const og_conv_geom *g;
    const float *x, *w, *b;
    float *y;
    const float *r; /* k->res's values (NULL: none) */
    int64_t cg, mg, os;
    int64_t cparts, mparts; /* items per (image, group): column chunks x channel bands */
    int64_t tiles;          /* tile columns (PW_NR positions) per plane */
} pw_job;

/* y[m * ldy + j] = b[m] + Σ_q w[m * kc + q] · x[off[q] + j] (+ r[m * ldy + j] where r is
 * not NULL), m < mg, j < ncols, then k->act: tile columns of PW_NR positions, each tile of
 * PW_MR channels. */
static void pw_taps(const og_kernel_ctx *k, int64_t mg, int64_t kc, int64_t ncols, const float *x,
                    const int64_t *off, const float *w, const float *b, float *y, int64_t ldy,
                    const float *r)
{
    pw_epi e = {false, false, 0.0f, 0.0f, NULL, NULL, og_vact_of(&k->act), 0, 0};
    e.clamp = og_act_clamp_f32(&k->act, &e.lo, &e.hi);
    const bool act = !e.clamp && !e.vact && k->act.kind != OG_FUSE_NONE;
    /* the other activations over a few tile columns at a time, still in cache (about 64
     * KiB of Y: one call per 48 values cost a sixth of a SiLU's time in its setup) */
    int64_t span = PW_ACT_BYTES / (int64_t)sizeof(float) / (mg > 0 ? mg : 1) / PW_NR;
    span = (span < 1 ? 1 : span > 8 ? 8 : span) * PW_NR;
    int64_t act0 = 0; /* the first column the activation has not reached */
    for (int64_t nb = 0; nb < ncols; nb += PW_NR) {
        const int64_t nc = ncols - nb < PW_NR ? ncols - nb : PW_NR, nv = (nc + 15) / 16;
        const __mmask16 tail = (__mmask16)((1u << (nc - 16 * (nv - 1))) - 1u);
        for (int64_t mb = 0; mb < mg; mb += PW_MR) {
            const int mr = (int)(mg - mb < PW_MR ? mg - mb : PW_MR);
            e.prefetch = mb == 0 && nb + PW_NR < ncols;
            e.bias = b ? b + mb : NULL;
            e.res = r ? r + mb * ldy + nb : NULL;
            const float *wb = w + mb * kc, *bx = x + nb;
            float *cb = y + mb * ldy + nb;
            if (nv == 3)
                pw_tile3(kc, wb, kc, bx, off, tail, cb, ldy, mr, &e);
            else if (nv == 2)
                pw_tile2(kc, wb, kc, bx, off, tail, cb, ldy, mr, &e);
            else
                pw_tile1(kc, wb, kc, bx, off, tail, cb, ldy, mr, &e);
        }
        const int64_t done = nb + nc;
        if (act && (done - act0 >= span || done == ncols)) {
            for (int64_t m = 0; m < mg; m++)
                og_cpu_act(&k->act, OG_FLOAT, y + m * ldy + act0, done - act0);
            act0 = done;
        }
    }
}

/* pw_taps with input row q at x + q * ldx (kc <= PW_MAX_CG) */
static void pw_cols(const og_kernel_ctx *k, int64_t mg, int64_t kc, int64_t ncols, const float *x,
                    int64_t ldx, const float *w, const float *b, float *y, int64_t ldy,
                    const float *r)
{
    int64_t off[PW_MAX_CG_IMAGES];
    for (int64_t q = 0; q < kc; q++) off[q] = q * ldx;
    pw_taps(k, mg, kc, ncols, x, off, w, b, y, ldy, r);
}

/* Output channels [m0, m1) (m0 a multiple of PW_MR) by positions [c0, c1) of (image n,
 * group gi). */
static void pw_block(const pw_job *j, int64_t n, int64_t gi, int64_t m0, int64_t m1, int64_t c0,
                     int64_t c1)
{
    const og_conv_geom *g = j->g;
    const int64_t cg = j->cg, os = j->os;
    const float *xg = j->x + (n * g->c + gi * cg) * os;
    const int64_t yo = (n * g->m + gi * j->mg + m0) * os + c0;
    const float *wg = j->w + gi * j->mg * cg, *bg = j->b ? j->b + gi * j->mg : NULL;
    pw_cols(j->k, m1 - m0, cg, c1 - c0, xg + c0, os, wg + m0 * cg, bg ? bg + m0 : NULL, j->y + yo,
            os, j->r ? j->r + yo : NULL);
}

/* Item it = (image, group, channel band, column chunk). */
static void pw_item(const pw_job *j, int64_t it)
{
    const int64_t per = j->cparts * j->mparts, u = it / per, p = it % per;
    const int64_t mp = p / j->cparts, cp = p % j->cparts;
    const int64_t blocks = (j->mg + PW_MR - 1) / PW_MR;
    int64_t m0 = mp * blocks / j->mparts * PW_MR, m1 = (mp + 1) * blocks / j->mparts * PW_MR;
    m1 = m1 < j->mg ? m1 : j->mg;
    /* chunk cp: tile columns [cp * tiles / cparts, (cp + 1) * tiles / cparts), so that
     * chunks differ by one tile at most */
    const int64_t c0 = cp * j->tiles / j->cparts * PW_NR;
    int64_t c1 = (cp + 1) * j->tiles / j->cparts * PW_NR;
    c1 = c1 < j->os ? c1 : j->os;
    if (m1 > m0 && c1 > c0) pw_block(j, u / j->g->group, u % j->g->group, m0, m1, c0, c1);
}

static void pw_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    (void)slot;
    for (int64_t it = i0; it < i1; it++) pw_item(ctx, it);
}

/* Images [3 it, 3 it + 3) of a group-1 Conv on planes of at most 16 positions: a tile's
 * vectors are the images' planes (tiles of one vector, a plane's, load an input row per 8
 * broadcasts of weights: as many loads as multiply-adds). */
static void pw_images(const pw_job *j, int64_t it)
{
    const og_conv_geom *g = j->g;
    const int64_t os = j->os, c = g->c, m = g->m, n0 = it / j->mparts * 3;
    const int64_t nv = g->n - n0 < 3 ? g->n - n0 : 3;
    /* the item's band of channel tiles (j->mparts bands per group of images) */
    const int64_t tiles = (m + PW_MR - 1) / PW_MR, mp = it % j->mparts;
    const int64_t m0 = mp * tiles / j->mparts * PW_MR;
    int64_t m1 = (mp + 1) * tiles / j->mparts * PW_MR;
    m1 = m1 < m ? m1 : m;
    pw_epi e = {false, false, 0.0f, 0.0f, NULL, NULL, og_vact_of(&j->k->act), c * os, m * os};
    e.clamp = og_act_clamp_f32(&j->k->act, &e.lo, &e.hi);
    int64_t off[PW_MAX_CG_IMAGES];
    for (int64_t q = 0; q < c; q++) off[q] = q * os;
    const __mmask16 tail = (__mmask16)((1u << os) - 1u);
    const float *bx = j->x + n0 * c * os;
    float *yb = j->y + n0 * m * os;
    for (int64_t mb = m0; mb < m1; mb += PW_MR) {
        const int mr = (int)(m1 - mb < PW_MR ? m1 - mb : PW_MR);
        e.bias = j->b ? j->b + mb : NULL;
        if (nv == 3)
            pw_tile3(c, j->w + mb * c, c, bx, off, tail, yb + mb * os, os, mr, &e);
        else if (nv == 2)
            pw_tile2(c, j->w + mb * c, c, bx, off, tail, yb + mb * os, os, mr, &e);
        else
            pw_tile1(c, j->w + mb * c, c, bx, off, tail, yb + mb * os, os, mr, &e);
    }
    if (!e.clamp && !e.vact && j->k->act.kind != OG_FUSE_NONE && m1 > m0)
        for (int64_t v = 0; v < nv; v++)
            og_cpu_act(&j->k->act, OG_FLOAT, yb + v * m * os + m0 * os, (m1 - m0) * os);
}

static void pw_images_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    (void)slot;
    for (int64_t it = i0; it < i1; it++) pw_images(ctx, it);
}
#endif /* OG_CPU_X86 */

bool og_conv_pw_applies(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    if (t != OG_FLOAT || og_cpu_isa() < 2 || g->nsp < 1 || g->group < 1 || g->c < g->group ||
        g->m < g->group || g->c % g->group != 0 || g->m % g->group != 0)
        return false;
    for (int i = 0; i < g->nsp; i++)
        if (g->kernel[i] != 1 || g->stride[i] != 1 || g->pad_begin[i] != 0 || g->pad_end[i] != 0 ||
            g->out[i] != g->in[i])
            return false;
    /* where the passes over Y that the kernel saves outweigh the GEMM's better multiply-add
     * rate: short sums (MobileNet's 1x1 convolutions of 192-960 inputs measured 4-5 %
     * slower than oneDNN's sgemm, those of 16-144 inputs 1.5-1.9x faster), longer ones
     * into few output channels (below), and planes that fill the 16-lane vectors of their
     * tiles at least 75 % (7x7 is 49 of 64 lanes: MobileNet-v2's 160 -> 960 expansions at
     * 7x7 took 0.13 ms here, 0.15-0.17 by the GEMM; 3x3 and 2x2 planes, 56 % and 25 %, go to
     * the GEMM, several images side by side) */
    const int64_t cg = g->c / g->group, mg = g->m / g->group;
    if (cg > (g->n > 1 || mg <= PW_LONG_MAX_M ? PW_MAX_CG_IMAGES : PW_MAX_CG)) return false;
    int64_t os = 1;
    for (int i = 0; i < g->nsp; i++) os *= g->out[i];
    return os * 4 >= (os + 15) / 16 * 16 * 3;
#else
    (void)g;
    (void)t;
    return false;
#endif
}

bool og_conv_pw_images(const og_conv_geom *g)
{
    int64_t os = 1;
    for (int i = 0; i < g->nsp; i++) os *= g->out[i];
    return os <= 16 && g->n > 1 && g->group == 1;
}

bool og_conv_pw_taps(const og_kernel_ctx *k, int64_t mg, int64_t kc, int64_t ncols, const float *x,
                     const int64_t *off, const float *w, const float *b, float *y, int64_t ldy)
{
#ifdef OG_CPU_X86
    if (og_cpu_isa() < 2 || kc < 1 || kc > PW_MAX_CG) return false;
    pw_taps(k, mg, kc, ncols, x, off, w, b, y, ldy, NULL);
    return true;
#else
    (void)k, (void)mg, (void)kc, (void)ncols, (void)x, (void)off, (void)w, (void)b, (void)y;
    (void)ldy;
    return false;
#endif
}

int64_t og_conv_pw_max_k(void)
{
#ifdef OG_CPU_X86
    return PW_MAX_CG;
#else
    return 0;
#endif
}

bool og_conv_pw_cols(const og_kernel_ctx *k, int64_t mg, int64_t kc, int64_t ncols, const float *x,
                     int64_t ldx, const float *w, const float *b, float *y, int64_t ldy)
{
#ifdef OG_CPU_X86
    if (og_cpu_isa() < 2 || kc < 1 || kc > PW_MAX_CG) return false;
    pw_cols(k, mg, kc, ncols, x, ldx, w, b, y, ldy, NULL);
    return true;
#else
    (void)k, (void)mg, (void)kc, (void)ncols, (void)x, (void)ldx, (void)w, (void)b, (void)y;
    (void)ldy;
    return false;
#endif
}

og_status og_conv_pw(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                     const float *b, float *y)
{
#ifdef OG_CPU_X86
    pw_job j;
    memset(&j, 0, sizeof j);
    j.k = k;
    j.g = g;
    j.x = x;
    j.y = y;
    j.cg = g->c / g->group;
    j.mg = g->m / g->group;
    j.os = 1;
    for (int i = 0; i < g->nsp; i++) j.os *= g->out[i];
    if (g->n == 0 || j.os == 0) return OG_OK;

    j.w = w;
    j.b = b;
    j.r = k->res ? (const float *)k->res->data : NULL;

    const double par_min = k->workers ? og_par_min(k, PW_PAR_MIN_WORKERS) : PW_PAR_MIN;
    const double work =
        (double)g->n * (double)g->group * (double)j.mg * (double)j.cg * (double)j.os;
    if (og_conv_pw_images(g)) { /* images side by side, 3 a tile */
        if (j.r)
            return og_kernel_error(k, OG_ERR_INTERNAL,
                                   "no residual in the pointwise kernel's images side by side");
        /* with threads, the channel tiles in bands too: 4 items a thread at least (8
         * images make 3 groups, 2 and 1 for two threads) */
        const int threads = work < par_min ? 1 : k->threads;
        const int64_t groups = (g->n + 2) / 3, tiles = (g->m + PW_MR - 1) / PW_MR;
        j.mparts = threads > 1 ? (4 * threads + groups - 1) / groups : 1;
        j.mparts = j.mparts < tiles ? j.mparts : tiles;
        og_par_range(k, threads, groups * j.mparts, 1, pw_images_range, &j);
        return OG_OK;
    }
    /* work split: (image, group) units; with fewer than 4 per thread, each one's channels
     * in bands where there are 4 tiles of them a thread (thread t then writes the t-th
     * share of Y's channels, as the depthwise and element-wise layers around it split
     * theirs: a core writing lines the other one wrote last takes several times as long),
     * else its columns in chunks (whole tiles), and with a single tile column, its
     * channels in bands.  Two threads, per-node medians of 300 alternating runs in one
     * process: MobileNet-v2's 56x56 and 28x28 expansions of 24 and 32 to 144 and 192
     * channels took 0.85-0.89 of their time by columns, the depthwise layers after them
     * 0.66-0.87 of theirs; the projections (16 to 32 outputs, 2-4 tiles) were 1.3-2x slower
     * by bands. */
    const int64_t units = g->n * g->group, threads = k->threads > 1 ? k->threads : 1;
    const int64_t tiles = (j.os + PW_NR - 1) / PW_NR, blocks = (j.mg + PW_MR - 1) / PW_MR;
    j.cparts = j.mparts = 1;
    if (threads > 1 && work >= par_min && units < 4 * threads && blocks >= 4 * threads) {
        const int64_t want = (4 * threads + units - 1) / units;
        j.mparts = want < blocks ? want : blocks;
    } else if (threads > 1 && work >= par_min && units < 4 * threads) {
        int64_t want = (4 * threads + units - 1) / units;
        j.cparts = want < tiles ? want : tiles;
        if (j.cparts < want) {
            int64_t mw = (want + j.cparts - 1) / j.cparts;
            j.mparts = mw < blocks ? mw : blocks;
        }
    }
    j.tiles = tiles;
    const int64_t items = units * j.cparts * j.mparts;
    og_par_range(k, work < par_min ? 1 : (int)threads, items, 1, pw_range, &j);
    return OG_OK;
#else
    (void)x;
    (void)w;
    (void)b;
    (void)y;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no pointwise kernel for %lld-d Conv on this CPU",
                           (long long)g->nsp);
#endif
}
