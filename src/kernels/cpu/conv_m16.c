/* conv_m16.c: float convolutions of 9 to 16 output channels (see conv_m16.h).
 *
 * Wᵀ is packed per call into rows of 16 lanes (wt[q · 16 + r] = W[r][q], zero past M; 150
 * taps of LeNet: 9.6 KB, in L1 for the call), with each tap's offset in an input image,
 * off[q] = c · H · W + ky · dh · W + kx · dw.  An item is one output row (image n, row oy):
 *
 *   acc[j] = b;  for q < K:  acc[j] += wt[q] · x[off[q] + oy · sh · W + j · sw]   (j < OW)
 *
 * OW sums in registers (a kernel per width, 4 to 24), then 16 x 16 transposes put lane r of
 * acc[j] at channel r's row, position j. */
#include <string.h>

#include "kernels/cpu/conv_m16.h"

#define M16_MIN_M 9
/* rows of fewer outputs leave the multiply-adds' latency exposed: few sums in flight */
#define M16_MIN_OW 4
#define M16_MAX_OW 24
#define M16_MAX_K  1024
/* multiply-adds (lanes) below which a call stays on one thread */
#define M16_PAR_MIN 1048576.0

bool og_conv_m16_applies(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    if (t != OG_FLOAT || og_cpu_isa() < 2 || g->nsp != 2 || g->group != 1 || g->m < M16_MIN_M ||
        g->m > 16 || g->out[1] < M16_MIN_OW || g->out[1] > M16_MAX_OW || g->out[0] < 1 || g->c < 1)
        return false;
    for (int i = 0; i < 2; i++)
        if (g->pad_begin[i] != 0 || g->pad_end[i] != 0) return false;
    return g->c * g->kernel[0] * g->kernel[1] <= M16_MAX_K;
#else
    (void)g, (void)t;
    return false;
#endif
}

#ifdef OG_CPU_X86
#include <immintrin.h>

#include "kernels/cpu/tr16.h"
#include "kernels/cpu/vact.h"

typedef struct m16_job {
    const og_kernel_ctx *k;
    const og_conv_geom *g;
    const float *x, *wt, *b;
    const int64_t *off;
    float *y;
    int64_t kdim, plane, oplane; /* taps; input values an image channel; outputs a row of Y */
    bool clamp;
    float lo, hi;
    int vact;
} m16_job;

/* Output row `row` (n · OH + oy) of the job, OW = P positions. */
#define M16_ROW(P)                                                                                 \
    static OG_TARGET_AVX512 void m16_row##P(const m16_job *j, int64_t row)                         \
    {                                                                                              \
        const og_conv_geom *g = j->g;                                                              \
        const int64_t n = row / g->out[0], oy = row % g->out[0], sw = g->stride[1];                \
        const float *xr = j->x + n * g->c * j->plane + oy * g->stride[0] * g->in[1];               \
        __m512 acc[P];                                                                             \
        _Pragma("GCC unroll 24") for (int p = 0; p < P; p++) acc[p] = _mm512_loadu_ps(j->b);       \
        for (int64_t q = 0; q < j->kdim; q++) {                                                    \
            const __m512 wv = _mm512_loadu_ps(j->wt + q * 16);                                     \
            const float *xq = xr + j->off[q];                                                      \
            _Pragma("GCC unroll 24") for (int p = 0; p < P; p++) acc[p] =                          \
                _mm512_fmadd_ps(wv, _mm512_set1_ps(xq[p * sw]), acc[p]);                           \
        }                                                                                          \
        const __m512 lo = _mm512_set1_ps(j->lo), hi = _mm512_set1_ps(j->hi);                       \
        float *yr = j->y + n * g->m * j->oplane * g->out[0] + oy * j->oplane;                      \
        for (int p0 = 0; p0 < P; p0 += 16) {                                                       \
            __m512 v[16];                                                                          \
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) v[i] =                           \
                p0 + i < P ? acc[p0 + i < P ? p0 + i : 0] : _mm512_setzero_ps();                   \
            og_tr16_f32(v); /* v[r]: channel r at positions p0 .. p0 + 15 */                       \
            const int np = P - p0 < 16 ? P - p0 : 16;                                              \
            const __mmask16 mk = (__mmask16)(np >= 16 ? 0xFFFF : (1u << np) - 1u);                 \
            for (int64_t r = 0; r < g->m; r++)                                                     \
                _mm512_mask_storeu_ps(yr + r * g->out[0] * j->oplane + p0, mk,                     \
                                      og_v_out(v[r], j->clamp, lo, hi, j->vact));                  \
        }                                                                                          \
        if (!j->clamp && !j->vact && j->k->act.kind != OG_FUSE_NONE)                               \
            for (int64_t r = 0; r < g->m; r++)                                                     \
                og_cpu_act(&j->k->act, OG_FLOAT, yr + r * g->out[0] * j->oplane, P);               \
    }
M16_ROW(4)
M16_ROW(5)
M16_ROW(6)
M16_ROW(7)
M16_ROW(8)
M16_ROW(9)
M16_ROW(10)
M16_ROW(11)
M16_ROW(12)
M16_ROW(13)
M16_ROW(14)
M16_ROW(15)
M16_ROW(16)
M16_ROW(17)
M16_ROW(18)
M16_ROW(19)
M16_ROW(20)
M16_ROW(21)
M16_ROW(22)
M16_ROW(23)
M16_ROW(24)
#undef M16_ROW

typedef void (*m16_row_fn)(const m16_job *, int64_t);
static const m16_row_fn m16_rows[M16_MAX_OW + 1] = {
    NULL,      NULL,      NULL,      NULL,      m16_row4,  m16_row5,  m16_row6,
    m16_row7,  m16_row8,  m16_row9,  m16_row10, m16_row11, m16_row12, m16_row13,
    m16_row14, m16_row15, m16_row16, m16_row17, m16_row18, m16_row19, m16_row20,
    m16_row21, m16_row22, m16_row23, m16_row24};

static void m16_range(void *ctx, int64_t r0, int64_t r1, int slot)
{
    const m16_job *j = ctx;
    const m16_row_fn f = m16_rows[j->g->out[1]];
    (void)slot;
    for (int64_t r = r0; r < r1; r++) f(j, r);
}
#endif

og_status og_conv_m16(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                      const float *b, float *y)
{
#ifdef OG_CPU_X86
    const int64_t kh = g->kernel[0], kw = g->kernel[1], kdim = g->c * kh * kw;
    const int64_t rows = g->n * g->out[0];
    if (rows == 0) return OG_OK;
    /* Wᵀ [K][16], the bias as 16 lanes, the taps' offsets */
    const size_t bytes = (size_t)(kdim + 1) * 16 * sizeof(float) + (size_t)kdim * sizeof(int64_t);
    char *scratch = og_scratch_get(k, bytes);
    if (!scratch)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of scratch", bytes);
    float *wt = (float *)scratch, *bv = wt + kdim * 16;
    int64_t *off = (int64_t *)(bv + 16);
    memset(wt, 0, (size_t)(kdim + 1) * 16 * sizeof(float));
    for (int64_t r = 0; r < g->m; r++) {
        for (int64_t q = 0; q < kdim; q++) wt[q * 16 + r] = w[r * kdim + q];
        bv[r] = b ? b[r] : 0.0f;
    }
    const int64_t plane = g->in[0] * g->in[1];
    for (int64_t c = 0, q = 0; c < g->c; c++)
        for (int64_t ky = 0; ky < kh; ky++)
            for (int64_t kx = 0; kx < kw; kx++, q++)
                off[q] = c * plane + ky * g->dil[0] * g->in[1] + kx * g->dil[1];
    m16_job j = {.k = k,
                 .g = g,
                 .x = x,
                 .wt = wt,
                 .b = bv,
                 .off = off,
                 .y = y,
                 .kdim = kdim,
                 .plane = plane,
                 .oplane = g->out[1]};
    j.clamp = og_act_clamp_f32(&k->act, &j.lo, &j.hi);
    j.vact = j.clamp ? 0 : og_vact_of(&k->act);
    og_par_for(k, rows, (double)(kdim * 16 * g->out[1]), M16_PAR_MIN, m16_range, &j);
    og_scratch_put(k, scratch);
    return OG_OK;
#else
    (void)x, (void)w, (void)b, (void)y;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no few-channel Conv kernel for %lld-d Conv",
                           (long long)g->nsp);
#endif
}
