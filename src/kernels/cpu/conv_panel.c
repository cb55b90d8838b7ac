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
 * layers, whose product takes 49 columns. */
#include <string.h>

#include "kernels/cpu/conv_panel.h"
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
 * Several images of small planes side by side (MobileNet-v2 at 8x64x64: 4.08 ms against
 * 4.53) are as fast or faster the old ways. */
#define CP_MAX_OS       64
#define CP_MIN_BATCH_OS 16
#define CP_MAX_PW_OS    256
#define CP_MAX_PW_C     2048
/* Multiply-adds below which a call stays on one thread (as conv_pw.c's, with workers) */
#define CP_PAR_MIN 2097152.0

static bool is_pointwise(const og_conv_geom *g)
{
    for (int i = 0; i < g->nsp; i++)
        if (g->kernel[i] != 1 || g->stride[i] != 1 || g->pad_begin[i] != 0 || g->pad_end[i] != 0 ||
            g->out[i] != g->in[i])
            return false;
    return true;
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
     * columns took twice as long, and pointwise ones side by side were no faster) */
    if (g->n > 1)
        return os >= CP_MIN_BATCH_OS && os <= CP_MAX_OS && g->nsp == 2 && !is_pointwise(g);
    if (os <= CP_MAX_OS) return is_pointwise(g) ? g->c <= CP_MAX_PW_C : g->nsp == 2;
    /* larger planes: pointwise ones whose channels fill the panels (at least 90 %) */
    return os <= CP_MAX_PW_OS && is_pointwise(g) && g->c <= CP_MAX_PW_C &&
           g->m * 10 >= og_panel_count(g->m) * OG_PANEL_MR * 9;
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
    int64_t os, kdim, panels;
    int64_t n;       /* images: items are (panel, image), panel-major */
    int64_t xs;      /* values from one image's product B to the next */
    float *slots;    /* OS x 32 floats per thread */
    const float *in; /* 2-D: the input, in_img values an image, whose column matrices x holds */
    int64_t in_img;
} cp_job;

/* The column matrices of images [i0, i1) (2-D). */
static void cp_im2col(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    (void)slot;
    for (int64_t i = i0; i < i1; i++)
        og_conv_im2col_f32(j->g, j->in + i * j->in_img, (float *)j->x + i * j->xs);
}

/* y[(m0 + r) * os + j] = act(ct[j * 32 + r] + b[m0 + r]) for r < mr (<= 32), j < os, act
 * a clamp to [lo, hi] (clamp) or vact.h's vact, else none */
static OG_TARGET_AVX512 void cp_store(const float *ct, int64_t os, int64_t mr, const float *b,
                                      float *y, bool clamp, float lo, float hi, int vact)
{
    const __m512 lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
    for (int64_t r0 = 0; r0 < mr; r0 += 16)
        for (int64_t j0 = 0; j0 < os; j0 += 16) {
            const int64_t nj = os - j0 < 16 ? os - j0 : 16, nr = mr - r0 < 16 ? mr - r0 : 16;
            const __mmask16 mj = (__mmask16)(nj >= 16 ? 0xFFFF : (1u << nj) - 1u);
            __m512 v[16];
            for (int i = 0; i < 16; i++)
                v[i] = i < nj ? _mm512_loadu_ps(ct + (j0 + i) * OG_PANEL_MR + r0)
                              : _mm512_setzero_ps();
            og_tr16_f32(v); /* v[r] = channel r0 + r at positions j0 .. j0 + 15 */
            for (int r = 0; r < nr; r++) {
                const __m512 bv = _mm512_set1_ps(b ? b[r0 + r] : 0.0f);
                const __m512 a = b ? _mm512_add_ps(v[r], bv) : v[r];
                _mm512_mask_storeu_ps(y + (r0 + r) * os + j0, mj,
                                      og_v_out(a, clamp, lov, hiv, vact));
            }
        }
}

/* Items: (panel of 32 output channels, image), the images of a panel one after the other
 * (its weights read once from memory). */
static void cp_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const cp_job *j = ctx;
    const og_conv_geom *g = j->g;
    float *ct = j->slots + (size_t)slot * (size_t)(j->os * OG_PANEL_MR);
    for (int64_t it = i0; it < i1; it++) {
        const int64_t pi = it / j->n, i = it % j->n, m0 = pi * OG_PANEL_MR;
        const int64_t mr = g->m - m0 < OG_PANEL_MR ? g->m - m0 : OG_PANEL_MR;
        const bool next = it + 1 < i1 && i + 1 == j->n; /* the next item, another panel */
        og_panel_gemm_f32(pi, pi + 1, j->os, j->kdim, j->up, j->x + i * j->xs, j->os, ct,
                          OG_PANEL_MR, next ? j->up + (pi + 1) * j->kdim * OG_PANEL_MR : NULL);
        float *yb = j->y + (i * g->m + m0) * j->os;
        float lo = 0.0f, hi = 0.0f;
        const bool clamp = og_act_clamp_f32(&j->k->act, &lo, &hi);
        const int vact = clamp ? 0 : og_vact_of(&j->k->act);
        cp_store(ct, j->os, mr, j->b ? j->b + m0 : NULL, yb, clamp, lo, hi, vact);
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
    const bool pw = is_pointwise(g);
    const int64_t panels = og_panel_count(g->m), kdim = g->c * taps, items = panels * g->n;
    const double madds = (double)g->m * (double)kdim * (double)os * (double)g->n;
    int threads = k->threads > 1 && madds >= CP_PAR_MIN ? k->threads : 1;
    threads = items < threads ? (int)items : threads;
    const size_t ufloats = og_panel_floats(g->m, kdim);
    /* the node's cache under a key of its own, apart from Winograd's (w and w + 1: other
     * layouts, possibly of the same size), whatever paths a node takes from run to run */
    bool fresh = true;
    float *up = og_kcache_get(k, (const char *)w + 2, ufloats * sizeof(float), &fresh);
    const size_t upk = up ? 0 : ufloats, slot = (size_t)(os * OG_PANEL_MR);
    const size_t colf = pw ? 0 : (size_t)(kdim * os * g->n);
    const size_t bytes = (upk + colf + slot * (size_t)threads) * sizeof(float);
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
    cp_job j = {
        k,          g, pw ? x : col, up, b, y, os, kdim, panels, g->n, pw ? in_img : kdim * os,
        col + colf, x, in_img};
    if (!pw) og_par_range(k, g->n < threads ? (int)g->n : threads, g->n, 1, cp_im2col, &j);
    og_par_range(k, threads, items, 1, cp_range, &j);
    og_scratch_put(k, scratch);
    return OG_OK;
#else
    (void)g, (void)x, (void)w, (void)b, (void)y;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no panel convolution kernel on this CPU");
#endif
}
