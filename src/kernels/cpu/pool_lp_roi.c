/* pool_lp_roi.c: CPU kernels of GlobalLpPool and MaxRoiPool (src/ops/pool_lp_roi.c), in
 * double whatever the float type. */
#include <math.h>

#include "kernels/cpu/kernel.h"

/* Must match src/ops/pool_lp_roi.c. */
typedef struct og_lproi_params {
    int64_t p;
    int64_t pooled[2];
    float scale;
} og_lproi_params;

/* y[n, c] = (sum over the spatial positions of |x|^p)^(1/p). */
static og_status k_global_lp(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_lproi_params *p = k->params;
    const og_tensor *x = in[0];
    int64_t nc = x->dims[0] * x->dims[1], sp = nc ? x->numel / nc : 0;
    double pw = (double)p->p;
    for (int64_t i = 0; i < nc; i++) {
        double acc = 0;
        for (int64_t j = 0; j < sp; j++) {
            double a = fabs(og_tensor_get_f64(x, i * sp + j));
            acc += p->p == 1 ? a : p->p == 2 ? a * a : pow(a, pw);
        }
        og_tensor_set_f64(out[0], i, p->p == 1 ? acc : p->p == 2 ? sqrt(acc) : pow(acc, 1.0 / pw));
    }
    return OG_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A region coordinate rounded to an input cell: NaN gives 0 and huge values stay far outside
 * the input (the cast of an out-of-range double is undefined in C). */
static int64_t cell(double v)
{
    v = round(v);
    return v != v ? 0 : v < -1e12 ? (int64_t)-1e12 : v > 1e12 ? (int64_t)1e12 : (int64_t)v;
}

/* Region r = (batch, x1, y1, x2, y2) scaled and rounded to input cells (both ends included);
 * bin (ph, pw) covers rows floor(ph * h / PH) .. ceil((ph + 1) * h / PH) of it, clipped to
 * the input, and takes their maximum (0 for an empty bin). */
static og_status k_max_roi(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_lproi_params *p = k->params;
    const og_tensor *x = in[0], *rois = in[1];
    og_tensor *y = out[0];
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
    int64_t PH = p->pooled[0], PW = p->pooled[1];
    for (int64_t r = 0; r < R; r++) {
        double b = og_tensor_get_f64(rois, r * 5);
        if (!(b >= 0 && b < (double)N) || b != floor(b))
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "roi %lld has batch index %g, outside [0, %lld)", (long long)r,
                                   b, (long long)N);
        int64_t n = (int64_t)b;
        int64_t x1 = cell(og_tensor_get_f64(rois, r * 5 + 1) * p->scale);
        int64_t y1 = cell(og_tensor_get_f64(rois, r * 5 + 2) * p->scale);
        int64_t x2 = cell(og_tensor_get_f64(rois, r * 5 + 3) * p->scale);
        int64_t y2 = cell(og_tensor_get_f64(rois, r * 5 + 4) * p->scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        double bh = (double)rh / (double)PH, bw = (double)rw / (double)PW;
        for (int64_t c = 0; c < C; c++)
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t h0 = clamp64((int64_t)floor((double)ph * bh) + y1, 0, H);
                    int64_t h1 = clamp64((int64_t)ceil((double)(ph + 1) * bh) + y1, 0, H);
                    int64_t w0 = clamp64((int64_t)floor((double)pw * bw) + x1, 0, W);
                    int64_t w1 = clamp64((int64_t)ceil((double)(pw + 1) * bw) + x1, 0, W);
                    double m = h1 <= h0 || w1 <= w0 ? 0.0 : -INFINITY;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) {
                            double v = og_tensor_get_f64(x, ((n * C + c) * H + h) * W + w);
                            if (v > m) m = v;
                        }
                    og_tensor_set_f64(y, ((r * C + c) * PH + ph) * PW + pw, m);
                }
    }
    return OG_OK;
}

static const og_dtype types_float[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

const og_kernel_def og_cpu_pool_lp_roi[] = {
    {.name = "GlobalLpPool", .domain = "", .fn = k_global_lp, .types = types_float},
    {.name = "MaxRoiPool", .domain = "", .fn = k_max_roi, .types = types_float},
    {.name = NULL},
};
