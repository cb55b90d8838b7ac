/* conv_pwdw.c: a pointwise Conv and the depthwise Conv of its output in one pass (see
 * conv_pwdw.h).
 *
 * An item is (image, part): a range of output rows, cut into bands.  For each band and each
 * block of PWDW_MB expanded channels, og_conv_pw_cols computes the expansion of the input
 * rows the band reads (the same tiles as og_conv_pw, so the same sums) into the thread's
 * scratch, and og_conv_dw_rows computes the band of those channels from them (conv_dw.c's
 * plane loops).  The rows two bands share (kernel reach − stride of them) are not
 * computed again: each block keeps them aside (`halo`) for the next band.  A band is as
 * tall as keeps a block's expanded rows within PWDW_BAND_BYTES, so that they are still in
 * L2 when the depthwise loops read them, and the band's input rows stay there while the
 * blocks pass over them.  Parts only split an image between threads; the rows at their
 * edges are computed by both. */
#include <string.h>

#include "kernels/cpu/conv_pwdw.h"
#include "kernels/cpu/conv_dw.h"
#include "kernels/cpu/conv_pw.h"

#define PWDW_MB         16          /* expanded channels per block */
#define PWDW_BAND_BYTES (96 * 1024) /* a block's expanded rows, at most about */
/* multiply-adds below which a call stays on one thread (conv_pw.c's bounds) */
#define PWDW_PAR_MIN         8388608.0
#define PWDW_PAR_MIN_WORKERS 2097152.0

bool og_conv_pwdw_applies(const og_conv_geom *pw, const og_conv_geom *dw, og_dtype t)
{
    if (t != OG_FLOAT || pw->nsp != 2 || dw->nsp != 2 || pw->group != 1 ||
        !og_conv_pw_applies(pw, t) || !og_conv_dw_rows_applies(dw, t))
        return false;
    if (dw->n != pw->n || dw->c != pw->m || dw->in[0] != pw->out[0] || dw->in[1] != pw->out[1])
        return false;
    return (double)pw->m * (double)pw->out[0] * (double)pw->out[1] * sizeof(float) >=
           OG_CONV_PWDW_MIN_BYTES;
}

typedef struct pwdw_job {
    og_kernel_ctx k1; /* the expansion's: its activation */
    const og_kernel_ctx *k;
    const og_conv_geom *pw, *dw;
    const float *x, *w1, *b1, *w2, *b2;
    float *y;
    int64_t rows, part_rows, parts; /* output rows per band and per part, parts per image */
    int64_t blocks, band_in;        /* channel blocks; input rows of a band, at most */
    int64_t keep;                   /* rows a block keeps for the next band, at most */
    int64_t dws;                    /* floats of og_conv_dw_rows's scratch */
    float *scratch;
    int64_t slot; /* floats per thread */
} pwdw_job;

/* Items [i0, i1): (image, part). */
static void pwdw_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const pwdw_job *j = ctx;
    const og_conv_geom *pw = j->pw, *dw = j->dw;
    const int64_t c = pw->c, m = pw->m, h = dw->in[0], w = dw->in[1];
    const int64_t oh = dw->out[0], ow = dw->out[1], os = oh * ow;
    const int64_t ldb = j->band_in * w, ldk = j->keep * w;
    float *buf = j->scratch + slot * j->slot, *dws = buf + PWDW_MB * ldb;
    float *halo = dws + j->dws; /* blocks x PWDW_MB x keep rows */
    for (int64_t it = i0; it < i1; it++) {
        const int64_t n = it / j->parts, p0 = it % j->parts * j->part_rows;
        const int64_t p1 = p0 + j->part_rows < oh ? p0 + j->part_rows : oh;
        const float *xn = j->x + n * c * h * w;
        float *yn = j->y + n * m * os;
        int64_t kept_lo = 0, kept = 0; /* the rows each block kept: [kept_lo, kept_lo + kept) */
        for (int64_t r0 = p0; r0 < p1; r0 += j->rows) {
            const int64_t r1 = r0 + j->rows < p1 ? r0 + j->rows : p1;
            int64_t lo, hi, next_lo = 0, next_hi = 0;
            og_conv_dw_rows_inputs(dw, r0, r1, &lo, &hi);
            /* rows of this band computed by the one before: kept */
            const int64_t reuse = kept > 0 && kept_lo == lo && kept <= hi - lo ? kept : 0;
            /* rows the next band of the part will read again */
            int64_t keep = 0;
            if (r1 < p1) {
                og_conv_dw_rows_inputs(dw, r1, r1 + j->rows < p1 ? r1 + j->rows : p1, &next_lo,
                                       &next_hi);
                keep = next_lo >= lo && hi - next_lo <= j->keep ? hi - next_lo : 0;
            }
            for (int64_t m0 = 0; m0 < m; m0 += PWDW_MB) {
                const int64_t mb = m - m0 < PWDW_MB ? m - m0 : PWDW_MB;
                float *hb = halo + m0 * ldk;
                for (int64_t q = 0; reuse && q < mb; q++)
                    memcpy(buf + q * ldb, hb + q * ldk, (size_t)(reuse * w) * sizeof(float));
                og_conv_pw_cols(&j->k1, mb, c, (hi - lo - reuse) * w, xn + (lo + reuse) * w, h * w,
                                j->w1 + m0 * c, j->b1 ? j->b1 + m0 : NULL, buf + reuse * w, ldb);
                og_conv_dw_rows(j->k, dw, m0, m0 + mb, buf, ldb, lo, hi, r0, r1, j->w2, j->b2,
                                yn + m0 * os + r0 * ow, os, dws);
                for (int64_t q = 0; keep && q < mb; q++)
                    memcpy(hb + q * ldk, buf + q * ldb + (next_lo - lo) * w,
                           (size_t)(keep * w) * sizeof(float));
            }
            kept_lo = next_lo;
            kept = keep;
        }
    }
}

og_status og_conv_pwdw(const og_kernel_ctx *k, const og_conv_geom *pw, const og_act *pw_act,
                       const float *x, const float *w1, const float *b1, const og_conv_geom *dw,
                       const float *w2, const float *b2, float *y)
{
    pwdw_job j = {
        .k = k, .pw = pw, .dw = dw, .x = x, .w1 = w1, .b1 = b1, .w2 = w2, .b2 = b2, .y = y};
    j.k1 = *k;
    j.k1.act = *pw_act;
    j.k1.pre = NULL;
    const int64_t w = dw->in[1], oh = dw->out[0], s = dw->stride[0];
    const int64_t reach = (dw->kernel[0] - 1) * dw->dil[0] + 1, step = og_conv_dw_rows_step(dw);
    if (pw->n == 0 || oh == 0 || dw->out[1] == 0) return OG_OK;
    /* bands: the tallest multiple of `step` rows whose block of expanded rows fits
     * PWDW_BAND_BYTES (one step at least) */
    int64_t rows = ((int64_t)(PWDW_BAND_BYTES / sizeof(float)) / (PWDW_MB * w) - reach) / s + 1;
    rows = rows / step * step;
    rows = rows < step ? step : rows;
    j.rows = rows < oh ? rows : oh;
    j.band_in = (j.rows - 1) * s + reach;
    j.keep = reach > s ? reach - s : 0;
    j.blocks = (pw->m + PWDW_MB - 1) / PWDW_MB;
    const double work = (double)pw->n * (double)pw->m *
                        ((double)pw->c * (double)pw->out[0] * (double)pw->out[1] +
                         (double)oh * (double)dw->out[1] * (double)(dw->kernel[0] * dw->kernel[1]));
    int threads =
        k->threads > 1 && work >= (k->workers ? og_par_min(k, PWDW_PAR_MIN_WORKERS) : PWDW_PAR_MIN)
            ? k->threads
            : 1;
    /* parts: with fewer images than twice the threads, each image in up to that many
     * parts of equal rows (a multiple of `step`; a part's last band may be shorter than
     * the others).  In whole bands, MobileNet-v2's 112x112 -> 56x56 layer made parts of
     * 18, 18, 18 and 2 rows, 36 rows for one thread and 20 for the other: on two threads
     * 0.407 ms in those parts, 0.348 in parts of 14 (one thread: 0.64); EfficientNet-B0's
     * 112x112 -> 56x56 layer 0.72 -> 0.61 (per-node medians of 200-300 alternating runs). */
    const int64_t want = threads > 1 && pw->n < 2 * threads ? (2 * threads + pw->n - 1) / pw->n : 1;
    int64_t part_rows = (oh + want - 1) / want;
    part_rows = (part_rows + step - 1) / step * step;
    j.part_rows = part_rows < oh ? part_rows : oh;
    j.parts = (oh + j.part_rows - 1) / j.part_rows;
    const int64_t items = pw->n * j.parts;
    if (threads > items) threads = (int)items;
    j.dws = og_conv_dw_rows_scratch(dw, j.rows);
    j.slot = PWDW_MB * j.band_in * w + j.dws + j.blocks * PWDW_MB * j.keep * w;
    j.slot = (j.slot + 15) / 16 * 16; /* each thread's part on its own lines */
    const size_t bytes = (size_t)j.slot * (size_t)threads * sizeof(float);
    j.scratch = og_scratch_get(k, bytes);
    if (!j.scratch)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of scratch", bytes);
    og_par_range(k, threads, items, 1, pwdw_range, &j);
    og_scratch_put(k, j.scratch);
    return OG_OK;
}
