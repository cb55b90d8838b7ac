/* conv_pw_kshare.c: pointwise float convolutions of one image by shares of the input
 * channels (see conv_pw_kshare.h).
 *
 * The Convs that come here are those the packed panels (conv_panel.c, which cuts its sums
 * the same way) and the register tiles (conv_pw.c: at most 160 input channels, which
 * measured no faster in shares) leave to the GEMM.  Two threads, per-node medians of 300
 * alternating runs in one process: MobileNet-v2's 28x28 192 -> 32 layers 0.079 -> 0.068 and
 * 0.069 -> 0.057 ms; EfficientNet-B0's 14x14 480 -> 80 and 480 / 672 -> 112 layers 0.059 ->
 * 0.041, 0.096 -> 0.068 and 0.14 -> 0.12, its 28x28 240 -> 40 0.082 -> 0.073. */
#include "kernels/cpu/conv_pw_kshare.h"
#include "kernels/cpu/gemm.h"

/* Output rows per item of the second pass: about four items a thread. */
#define KS_ITEMS_PER_THREAD 4

bool og_conv_kshare_worth(const og_kernel_ctx *k, const og_conv_geom *g)
{
    if (k->threads < 2 || g->n != 1 || g->c < 2 * g->m || g->c < 32 * (int64_t)k->threads)
        return false;
    double madds = (double)g->m * (double)g->c / (double)g->group, os = 1.0;
    for (int i = 0; i < g->nsp; i++) {
        madds *= (double)g->out[i] * (double)g->kernel[i];
        os *= (double)g->out[i];
    }
    const double part_bytes = (double)(k->threads - 1) * (double)g->m * os * sizeof(float);
    return madds >= OG_KSHARE_MIN_MADDS && part_bytes <= OG_KSHARE_MAX_PART_BYTES;
}

bool og_conv_pw_kshare_applies(const og_kernel_ctx *k, const og_conv_geom *g, og_dtype t)
{
    if (t != OG_FLOAT || g->group != 1 || g->nsp < 1 || !og_conv_kshare_worth(k, g)) return false;
    for (int i = 0; i < g->nsp; i++)
        if (g->kernel[i] != 1 || g->stride[i] != 1 || g->pad_begin[i] != 0 || g->pad_end[i] != 0 ||
            g->out[i] != g->in[i])
            return false;
    return true;
}

typedef struct kshare_job {
    const og_kernel_ctx *k;
    const og_conv_geom *g;
    const float *x, *w, *b;
    float *y;
    float *part; /* shares 1 .. parts - 1: [m, os] each (share 0's is y) */
    int64_t os, parts, rows;
} kshare_job;

/* Shares [t0, t1): each one's product on the calling thread. */
static void share_range(void *ctx, int64_t t0, int64_t t1, int slot)
{
    const kshare_job *j = ctx;
    const og_conv_geom *g = j->g;
    og_kernel_ctx one = *j->k;
    one.threads = 1;
    (void)slot;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t k0 = og_conv_kshare_start(g->c, j->parts, t);
        const int64_t k1 = og_conv_kshare_start(g->c, j->parts, t + 1);
        float *c = t ? j->part + (size_t)((t - 1) * g->m * j->os) : j->y;
        og_gemm_f32(&one, false, false, g->m, j->os, k1 - k0, 1.0f, j->w + k0, g->c,
                    j->x + k0 * j->os, j->os, 0.0f, c, j->os);
    }
}

/* Items [i0, i1) of rows: y += the partials + the bias (+ k->res), then the activation. */
static void sum_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const kshare_job *j = ctx;
    const int64_t os = j->os, m = j->g->m;
    (void)slot;
    const int64_t r0 = i0 * j->rows, r1 = i1 * j->rows < m ? i1 * j->rows : m;
    for (int64_t r = r0; r < r1; r++) {
        float *restrict y = j->y + r * os;
        for (int64_t t = 1; t < j->parts; t++) {
            const float *restrict p = j->part + (size_t)(((t - 1) * m + r) * os);
            for (int64_t q = 0; q < os; q++) y[q] += p[q];
        }
        if (j->b) {
            const float bv = j->b[r];
            for (int64_t q = 0; q < os; q++) y[q] += bv;
        }
        if (j->k->res) { /* the residual Add run inside (exec/fuse.h) */
            const float *restrict res = (const float *)j->k->res->data + r * os;
            for (int64_t q = 0; q < os; q++) y[q] += res[q];
        }
    }
    if (r1 > r0) og_cpu_act(&j->k->act, OG_FLOAT, j->y + r0 * os, (r1 - r0) * os);
}

og_status og_conv_pw_kshare(const og_kernel_ctx *k, const og_conv_geom *g, const float *x,
                            const float *w, const float *b, float *y)
{
    int64_t os = 1;
    for (int i = 0; i < g->nsp; i++) os *= g->out[i];
    const int64_t parts = k->threads;
    size_t bytes = 0;
    if (!og_mul_size((size_t)((parts - 1) * g->m), (size_t)os * sizeof(float), &bytes))
        return og_kernel_error(k, OG_ERR_NOMEM, "scratch size overflows");
    float *part = og_scratch_get(k, bytes);
    if (!part)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %zu bytes of scratch", bytes);
    const int64_t per = KS_ITEMS_PER_THREAD * parts, rows = (g->m + per - 1) / per;
    kshare_job j = {k, g, x, w, b, y, part, os, parts, rows};
    og_par_range(k, (int)parts, parts, 1, share_range, &j);
    og_par_range(k, (int)parts, (g->m + rows - 1) / rows, 1, sum_range, &j);
    og_scratch_put(k, part);
    return OG_OK;
}
