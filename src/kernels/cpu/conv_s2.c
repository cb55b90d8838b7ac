/* conv_s2.c: stride-2 float convolutions of short sums by split planes (see conv_s2.h).
 *
 * Two passes, each split over the threads: the four sub-planes of every (image, input
 * channel), then chunks of output rows of every (image, group), each a tile-kernel call
 * over its wide positions and a copy of its rows into Y, or (direct) a call per output
 * row into Y.  The sums are the tile kernel's
 * (b + w0·x0 + ... in column-row order), so a fused activation gives the bits of the
 * unfused one. */
#include <string.h>

#include "kernels/cpu/conv_panel.h"
#include "kernels/cpu/conv_pw.h"
#include "kernels/cpu/conv_s2.h"
#include "kernels/cpu/gemm_panel.h"
#include "kernels/cpu/split_row.h"
#include "kernels/cpu/vact.h"

/* the wide result of one chunk of output rows, per thread */
#define S2_CHUNK_BYTES ((int64_t)256 * 1024)

bool og_conv_s2_applies(const og_conv_geom *g, og_dtype t)
{
#ifdef OG_CPU_X86
    if (t != OG_FLOAT || og_cpu_isa() < 2 || g->nsp != 2 || g->group < 1 || g->c % g->group ||
        g->m % g->group || g->n < 1)
        return false;
    for (int i = 0; i < 2; i++)
        if (g->stride[i] != 2 || g->dil[i] != 1 || g->out[i] < 1 || g->kernel[i] < 1) return false;
    /* kernels of 9 taps or more: 3x3 stems by im2col were slower once the rows went
     * straight into Y (in the networks on one / two threads: MobileNet-v2's 0.341 / 0.262
     * ms against 0.321 / 0.184 split, EfficientNet-B0's 0.386 / 0.245 against 0.313 / 0.206,
     * MobileNet-v3's 0.227 / 0.106 against 0.126 / 0.099) */
    const int64_t taps = g->kernel[0] * g->kernel[1], kdim = g->c / g->group * taps;
    return taps >= 9 && kdim <= og_conv_pw_max_k();
#else
    (void)g, (void)t;
    return false;
#endif
}

bool og_conv_s2_panel_applies(const og_conv_geom *g, og_dtype t)
{
    /* ResNet-18's 7x7 stem of 64 channels at 224x224 on one thread: 3.02 -> 2.79 ms (the
     * tile kernel's 8 channels by 48 positions against 32 by 12 here; per-node medians of
     * 60 alternating runs); one panel (MobileNet-v2's 3x3 stem of 32 channels) took 1.12x
     * as long, and ResNet-18's at 8x64x64 1.14x unpooled (rows of 32 positions) */
    return og_conv_s2_applies(g, t) && g->group == 1 && g->m >= 2 * OG_PANEL_MR;
}

#ifdef OG_CPU_X86
typedef struct s2_job {
    const og_kernel_ctx *inner; /* the tile kernel's: one thread, the activation */
    const og_conv_geom *g;
    const float *x, *w, *b;
    float *y;
    int64_t cg, mg, kdim;
    int64_t hh, wh, sub;   /* sub-plane rows, columns, values (hh * wh) */
    int64_t rows, chunks;  /* output rows per chunk, chunks per (image, group) */
    int64_t planes, bands; /* s2_split's items: bands of sub-plane rows x (image, channel) */
    og_row_plan plan;      /* a padded row split into sub-planes (a, 0) and (a, 1) */
    float *split;          /* [N][C][4][hh][wh]: sub-plane (a, b) at (2a + b) * sub */
    float *tmp;            /* per thread: mg x (rows * wh), unless direct */
    bool direct;           /* each output row's ow positions computed into Y (s2_rows) */
    const float *up;       /* by panels: W packed (gemm_panel.h), else NULL */
    bool pool;             /* by panels: Y pooled (k->max_pool), chunks of `rows` pooled rows */
    int64_t ph, pw;        /* pool: the pooled plane */
    float *cp;        /* pool: per thread, a chunk's pooled values of a panel, [rows · pw, 32] */
    float *carry;     /* pool: per thread, the last product row of its previous chunk, per panel */
    int64_t *carried; /* pool: per thread, the item whose row carry holds (-1: none) */
    int64_t cp_floats, carry_floats;
    int64_t tmp_floats;
    int64_t off[OG_CONV_PW_MAX_K]; /* column row q = (c, ky, kx) of a group: its sub-plane read */
} s2_job;

/* Items it in [i0, i1) = (band of sub-plane rows, (image, channel)), band-major: that
 * band of the plane's four sub-planes (a thread's share of the bands then holds the rows
 * its share of s2_rows's chunks reads). */
static void s2_split(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const s2_job *j = ctx;
    const og_conv_geom *g = j->g;
    const int64_t h = g->in[0], w = g->in[1];
    (void)slot;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t band = it / j->planes, pl = it % j->planes;
        const int64_t a0 = j->hh * band / j->bands, a1 = j->hh * (band + 1) / j->bands;
        const float *src = j->x + pl * h * w;
        float *dst = j->split + pl * 4 * j->sub;
        for (int64_t pr = 2 * a0; pr < 2 * a1; pr++) {
            const int64_t ih = pr - g->pad_begin[0];
            const float *row = ih >= 0 && ih < h ? src + ih * w : NULL;
            og_split_row_planned(&j->plan, row, dst + (pr & 1) * 2 * j->sub + (pr >> 1) * j->wh);
        }
    }
}

/* cp[(pr − p0) · pw + pc][r] = the maximum of the products at rows 2pr − 1 .. 2pr + 1 (of
 * [0, oh)) and columns 2pc − 1 .. 2pc + 1 (of [0, ow)) for pooled rows [p0, p1), r < 32:
 * ct holds product row a (the first the window of p0 reads) onward, wh positions a row. */
static OG_TARGET_AVX512 void s2_pool(const float *ct, int64_t a, int64_t oh, int64_t ow, int64_t wh,
                                     int64_t p0, int64_t p1, int64_t pw, float *cp)
{
    for (int64_t pr = p0; pr < p1; pr++) {
        const int64_t ra = 2 * pr - 1 < 0 ? 0 : 2 * pr - 1, rb = 2 * pr + 2 < oh ? 2 * pr + 2 : oh;
        for (int64_t pc = 0; pc < pw; pc++) {
            const int64_t ca = 2 * pc - 1 < 0 ? 0 : 2 * pc - 1;
            const int64_t cb = 2 * pc + 2 < ow ? 2 * pc + 2 : ow;
            const float *e = ct + ((ra - a) * wh + ca) * OG_PANEL_MR;
            __m512 v0 = _mm512_loadu_ps(e), v1 = _mm512_loadu_ps(e + 16);
            for (int64_t r = ra; r < rb; r++)
                for (int64_t c = ca; c < cb; c++) {
                    const float *f = ct + ((r - a) * wh + c) * OG_PANEL_MR;
                    v0 = _mm512_max_ps(v0, _mm512_loadu_ps(f));
                    v1 = _mm512_max_ps(v1, _mm512_loadu_ps(f + 16));
                }
            float *o = cp + ((pr - p0) * pw + pc) * OG_PANEL_MR;
            _mm512_storeu_ps(o, v0);
            _mm512_storeu_ps(o + 16, v1);
        }
    }
}

/* Item it of a job by panels: a chunk of output rows (of pooled rows with j->pool) of
 * image it / chunks, every panel of it; on thread `slot`. */
static void s2_panel_item(const s2_job *j, int64_t it, int slot)
{
    const og_conv_geom *g = j->g;
    const int64_t oh = g->out[0], ow = g->out[1], wh = j->wh, n = it / j->chunks;
    const int64_t c = it % j->chunks, row = wh * OG_PANEL_MR; /* floats of a product row */
    float *ct = j->tmp + (size_t)slot * (size_t)j->tmp_floats;
    float lo = 0.0f, hi = 0.0f;
    const bool clamp = og_act_clamp_f32(&j->inner->act, &lo, &hi);
    const int vact = clamp ? 0 : og_vact_of(&j->inner->act);
    /* product rows [a, e) in ct from row 0, those from s on computed (a's carried over) */
    int64_t a, e, s, p0 = 0, p1 = 0;
    if (j->pool) {
        p0 = c * j->rows;
        p1 = p0 + j->rows < j->ph ? p0 + j->rows : j->ph;
        a = 2 * p0 - 1 < 0 ? 0 : 2 * p0 - 1;
        e = 2 * p1 < oh ? 2 * p1 : oh;
        s = a == 2 * p0 - 1 && j->carried[slot] == it - 1 ? a + 1 : a;
    } else {
        a = s = c * j->rows;
        e = a + j->rows < oh ? a + j->rows : oh;
    }
    const float *base = j->split + (n * g->c * 4 * j->sub + s * wh);
    for (int64_t pi = 0, m0 = 0; m0 < g->m; pi++, m0 += OG_PANEL_MR) {
        const int64_t mr = g->m - m0 < OG_PANEL_MR ? g->m - m0 : OG_PANEL_MR;
        const float *bm = j->b ? j->b + m0 : NULL;
        float *carry =
            j->pool ? j->carry + (size_t)slot * (size_t)j->carry_floats + pi * row : NULL;
        if (s > a) memcpy(ct, carry, (size_t)(ow * OG_PANEL_MR) * sizeof(float));
        if (e > s)
            og_panel_gemm_off_f32(pi, pi + 1, (e - s - 1) * wh + ow, j->kdim, j->up, base, j->off,
                                  ct + (s - a) * row, OG_PANEL_MR, NULL);
        if (!j->pool) {
            for (int64_t r = a; r < e; r++) {
                float *yr = j->y + ((n * g->m + m0) * oh + r) * ow;
                og_conv_panel_store(ct + (r - a) * row, 1, 0, ow, oh * ow, mr, bm, NULL, yr, clamp,
                                    lo, hi, vact);
                for (int64_t q = 0; q < mr && !clamp && !vact; q++)
                    og_cpu_act(&j->inner->act, OG_FLOAT, yr + q * oh * ow, ow);
            }
            continue;
        }
        float *cp = j->cp + (size_t)slot * (size_t)j->cp_floats;
        s2_pool(ct, a, oh, ow, wh, p0, p1, j->pw, cp);
        if (e == 2 * p1) /* the next chunk's first row */
            memcpy(carry, ct + (e - 1 - a) * row, (size_t)(ow * OG_PANEL_MR) * sizeof(float));
        og_conv_panel_store(cp, 1, 0, (p1 - p0) * j->pw, j->ph * j->pw, mr, bm, NULL,
                            j->y + ((n * g->m + m0) * j->ph + p0) * j->pw, clamp, lo, hi, 0);
    }
    if (j->pool) j->carried[slot] = e == 2 * p1 ? it : -1;
}

/* Chunks it = ((image, group), chunk of output rows), it in [i0, i1). */
static void s2_rows(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const s2_job *j = ctx;
    const og_conv_geom *g = j->g;
    const int64_t oh = g->out[0], ow = g->out[1], wh = j->wh;
    float *tmp = j->tmp + (size_t)slot * (size_t)j->tmp_floats;
    if (j->up) { /* by panels */
        for (int64_t it = i0; it < i1; it++) s2_panel_item(j, it, slot);
        return;
    }
    for (int64_t it = i0; it < i1; it++) {
        const int64_t u = it / j->chunks, r0 = it % j->chunks * j->rows;
        const int64_t r1 = r0 + j->rows < oh ? r0 + j->rows : oh;
        const int64_t n = u / g->group, gi = u % g->group;
        const int64_t ncw = (r1 - r0 - 1) * wh + ow; /* none after the last row's outputs */
        const float *base = j->split + ((n * g->c + gi * j->cg) * 4 * j->sub + r0 * wh);
        const float *wg = j->w + gi * j->mg * j->kdim, *bg = j->b ? j->b + gi * j->mg : NULL;
        float *yg = j->y + ((n * g->m + gi * j->mg) * oh + r0) * ow;
        if (j->direct) { /* row by row, straight into Y */
            for (int64_t r = 0; r < r1 - r0; r++)
                og_conv_pw_taps(j->inner, j->mg, j->kdim, ow, base + r * wh, j->off, wg, bg,
                                yg + r * ow, oh * ow);
            continue;
        }
        og_conv_pw_taps(j->inner, j->mg, j->kdim, ncw, base, j->off, wg, bg, tmp, ncw);
        for (int64_t m = 0; m < j->mg; m++)
            for (int64_t r = 0; r < r1 - r0; r++)
                memcpy(yg + (m * oh + r) * ow, tmp + m * ncw + r * wh, (size_t)ow * sizeof(float));
    }
}
#endif

og_status og_conv_s2(const og_kernel_ctx *k, const og_conv_geom *g, const float *x, const float *w,
                     const float *b, float *y)
{
#ifdef OG_CPU_X86
    s2_job j;
    memset(&j, 0, sizeof j);
    og_kernel_ctx one = *k;
    one.threads = 1;
    j.inner = &one;
    j.g = g;
    j.x = x, j.w = w, j.b = b, j.y = y;
    j.cg = g->c / g->group;
    j.mg = g->m / g->group;
    const int64_t kh = g->kernel[0], kw = g->kernel[1];
    j.kdim = j.cg * kh * kw;
    /* the padded rows and columns the outputs read, in pairs */
    j.hh = g->out[0] - 1 + (kh + 1) / 2;
    j.wh = g->out[1] - 1 + (kw + 1) / 2;
    j.sub = j.hh * j.wh;
    og_split_plan_init(&j.plan, g->pad_begin[1], g->in[1], 2 * j.wh, j.sub);
    for (int64_t q = 0; q < j.kdim; q++) {
        const int64_t c = q / (kh * kw), ky = q % (kh * kw) / kw, kx = q % kw;
        j.off[q] = c * 4 * j.sub + ((ky & 1) * 2 + (kx & 1)) * j.sub + (ky >> 1) * j.wh + (kx >> 1);
    }
    const bool panel = og_conv_s2_panel_applies(g, OG_FLOAT);
    j.pool = k->max_pool;
    float lo, hi;
    if (j.pool && (!panel || (k->act.kind != OG_FUSE_NONE && !og_act_clamp_f32(&k->act, &lo, &hi))))
        return og_kernel_error(k, OG_ERR_INTERNAL,
                               "a MaxPool fused into a stride-2 Conv of %lld output channels "
                               "(or after an activation other than a clamp)",
                               (long long)g->m);
    /* chunks of `rows` output rows, or pooled rows of twice as many output rows */
    const int64_t span = j.pool ? (j.ph = og_conv_s2_pooled(g->out[0])) : g->out[0];
    j.pw = j.pool ? og_conv_s2_pooled(g->out[1]) : 0;
    const int64_t per_row = j.mg * j.wh * (int64_t)sizeof(float) * (j.pool ? 2 : 1);
    j.rows = S2_CHUNK_BYTES / per_row;
    j.rows = j.rows < 1 ? 1 : j.rows > span ? span : j.rows;
    const int threads = k->threads > 1 ? k->threads : 1;
    j.chunks = (span + j.rows - 1) / j.rows;
    const int64_t units = g->n * g->group;
    if (threads > 1 && units * j.chunks < 4 * threads) {
        /* four chunks a thread at least (of equal rows): a thread that starts late, or
         * the last chunk, leaves less idle time */
        const int64_t want = (4 * threads + units - 1) / units;
        j.rows = (span + want - 1) / want;
        j.chunks = (span + j.rows - 1) / j.rows;
    }
    /* Output rows straight into Y where their vectors of 16 are at least 90 % as full as
     * the wide rows (ow of wh positions): no copy from tmp.  ResNet-18's 7x7 stem (32 of
     * 35, 112 of 115) 1.24 -> 1.14 ms at 224 on one thread. */
    j.direct = !panel && (double)((g->out[1] + 15) / 16 * 16) * 0.9 <= (double)j.wh;
    /* by panels: a product of (rows + 1 with a pool) wide rows of 32 channels, the pooled
     * values, the carried row of every panel */
    const int64_t panels = og_panel_count(g->m);
    j.tmp_floats = panel      ? (j.pool ? 2 * j.rows + 1 : j.rows) * j.wh * OG_PANEL_MR
                   : j.direct ? 0
                              : j.mg * j.rows * j.wh;
    j.tmp_floats = (j.tmp_floats + 15) / 16 * 16; /* whole lines (and the int64s below aligned) */
    j.cp_floats = j.pool ? j.rows * j.pw * OG_PANEL_MR : 0;
    j.carry_floats = j.pool ? panels * j.wh * OG_PANEL_MR : 0;
    const int64_t planes = g->n * g->c, items = g->n * g->group * j.chunks;
    const size_t split_floats = (size_t)(planes * 4 * j.sub);
    /* W packed: the node's cache where W is the model's, else scratch */
    const size_t ufloats = panel ? og_panel_floats(g->m, j.kdim) : 0;
    bool fresh = true;
    float *up = panel && (k->const_in & 2u)
                    ? og_kcache_get(k, (const char *)w + 2, ufloats * sizeof(float), &fresh)
                    : NULL;
    const size_t per_thread = (size_t)(j.tmp_floats + j.cp_floats + j.carry_floats) + 2;
    const size_t bytes =
        (split_floats + (size_t)threads * per_thread + (up ? 0 : ufloats)) * sizeof(float);
    char *scratch = og_scratch_get(k, bytes);
    if (!scratch) {
        if (up && fresh) og_kcache_drop(k);
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of scratch", bytes);
    }
    j.split = (float *)scratch;
    j.tmp = j.split + split_floats;
    j.cp = j.tmp + (size_t)threads * (size_t)j.tmp_floats;
    j.carry = j.cp + (size_t)threads * (size_t)j.cp_floats;
    /* int64 per thread (2 floats each, 8-byte aligned: the floats before are an even count) */
    j.carried = (int64_t *)(void *)(j.carry + (size_t)threads * (size_t)j.carry_floats);
    for (int t = 0; t < threads; t++) j.carried[t] = -1;
    if (panel) {
        if (!up) up = (float *)(void *)(j.carried + threads);
        if (fresh) og_panel_pack_f32(g->m, j.kdim, w, j.kdim, up);
        j.up = up;
    }
    /* the split in bands of rows too, so that a few planes (a stem's 3) spread evenly */
    j.planes = planes;
    j.bands = threads > 1 ? 2 * (int64_t)threads : 1;
    j.bands = j.bands < j.hh ? j.bands : j.hh;
    og_par_range(k, threads, planes * j.bands, 1, s2_split, &j);
    og_par_range(k, threads, items, 1, s2_rows, &j);
    og_scratch_put(k, scratch);
    return OG_OK;
#else
    (void)g, (void)x, (void)w, (void)b, (void)y;
    return og_kernel_error(k, OG_ERR_INTERNAL, "no stride-2 split kernel on this CPU");
#endif
}
