/* pool_lp_roi.c: CPU kernels of GlobalLpPool and MaxRoiPool (src/ops/pool_lp_roi.c), in
 * double whatever the float type.  Their float32 and float64 loops are bound when the session
 * is created (og_float_impl: float16 through float32's loops on widened copies, which reads
 * and rounds the values as a float16 read into double and written back would). */
#include <math.h>

#include "kernels/cpu/kernel.h"

/* Must match src/ops/pool_lp_roi.c. */
typedef struct og_lproi_params {
    int64_t p;
    int64_t pooled[2];
    float scale;
} og_lproi_params;

/* y[n, c] = (sum over the spatial positions of |x|^p)^(1/p), for nc planes of sp values. */
#define DEF_GLOBAL_LP(T)                                                                           \
    static void global_lp_##T(const void *xv, void *yv, int64_t nc, int64_t sp, int64_t p)         \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        double pw = (double)p;                                                                     \
        for (int64_t i = 0; i < nc; i++) {                                                         \
            double acc = 0;                                                                        \
            for (int64_t j = 0; j < sp; j++) {                                                     \
                double a = fabs((double)x[i * sp + j]);                                            \
                acc += p == 1 ? a : p == 2 ? a * a : pow(a, pw);                                   \
            }                                                                                      \
            y[i] = (T)(p == 1 ? acc : p == 2 ? sqrt(acc) : pow(acc, 1.0 / pw));                    \
        }                                                                                          \
    }
DEF_GLOBAL_LP(float)
DEF_GLOBAL_LP(double)

typedef void (*global_lp_fn)(const void *x, void *y, int64_t nc, int64_t sp, int64_t p);
static const global_lp_fn global_lp_loops[2] = {global_lp_float, global_lp_double};
OG_FLOAT_IMPLS(global_lp_impls, &global_lp_loops[0], &global_lp_loops[1]);

static const void *select_global_lp(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(global_lp_impls, t);
}

static og_status k_global_lp(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_lproi_params *p = k->params;
    const og_tensor *x = in[0];
    const og_float_impl *im = og_float_bound(k, global_lp_impls, x->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, k_global_lp, in, n_in, out, n_out);
    int64_t nc = x->dims[0] * x->dims[1], sp = nc ? x->numel / nc : 0;
    (*(const global_lp_fn *)im->loops)(x->data, out[0]->data, nc, sp, p->p);
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

/* One region's bins over the C channels of image n: bin (ph, pw) covers rows
 * floor(ph * bh) .. ceil((ph + 1) * bh) from y1 (columns alike from x1), clipped to the
 * input, and takes their maximum (0 for an empty bin). */
typedef struct max_roi_geom {
    int64_t n, C, H, W, PH, PW, x1, y1, r;
    double bh, bw;
} max_roi_geom;

/* MaxRoiPool's loops for x, rois and y of C type T: the 5 numbers of region r in double, and
 * a region's bins. */
#define DEF_MAX_ROI(T)                                                                             \
    static void roi5_##T(const void *rois, int64_t r, double *v)                                   \
    {                                                                                              \
        for (int j = 0; j < 5; j++) v[j] = (double)((const T *)rois)[r * 5 + j];                   \
    }                                                                                              \
    static void max_roi_##T(const void *xv, void *yv, const max_roi_geom *g)                       \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t c = 0; c < g->C; c++)                                                         \
            for (int64_t ph = 0; ph < g->PH; ph++)                                                 \
                for (int64_t pw = 0; pw < g->PW; pw++) {                                           \
                    int64_t h0 = clamp64((int64_t)floor((double)ph * g->bh) + g->y1, 0, g->H);     \
                    int64_t h1 =                                                                   \
                        clamp64((int64_t)ceil((double)(ph + 1) * g->bh) + g->y1, 0, g->H);         \
                    int64_t w0 = clamp64((int64_t)floor((double)pw * g->bw) + g->x1, 0, g->W);     \
                    int64_t w1 =                                                                   \
                        clamp64((int64_t)ceil((double)(pw + 1) * g->bw) + g->x1, 0, g->W);         \
                    double m = h1 <= h0 || w1 <= w0 ? 0.0 : -INFINITY;                             \
                    for (int64_t h = h0; h < h1; h++)                                              \
                        for (int64_t w = w0; w < w1; w++) {                                        \
                            double v = (double)x[((g->n * g->C + c) * g->H + h) * g->W + w];       \
                            if (v > m) m = v;                                                      \
                        }                                                                          \
                    y[((g->r * g->C + c) * g->PH + ph) * g->PW + pw] = (T)m;                       \
                }                                                                                  \
    }
DEF_MAX_ROI(float)
DEF_MAX_ROI(double)

typedef struct max_roi_loops {
    void (*box)(const void *rois, int64_t r, double *v);
    void (*bins)(const void *x, void *y, const max_roi_geom *g);
} max_roi_loops;
static const max_roi_loops max_roi_t[2] = {{roi5_float, max_roi_float},
                                           {roi5_double, max_roi_double}};
OG_FLOAT_IMPLS(max_roi_impls, &max_roi_t[0], &max_roi_t[1]);

static const void *select_max_roi(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(max_roi_impls, t);
}

/* Region r = (batch, x1, y1, x2, y2) scaled and rounded to input cells (both ends included),
 * then max_roi_geom's bins. */
static og_status k_max_roi(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_lproi_params *p = k->params;
    const og_tensor *x = in[0], *rois = in[1];
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, max_roi_impls, x->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, k_max_roi, in, n_in, out, n_out);
    if (og_dtype_size(rois->dtype) != og_dtype_size(x->dtype)) /* inference: the same dtype */
        return og_kernel_error(k, OG_ERR_TYPE, "input 1 (rois) is %s, input 0 (X) %s",
                               og_dtype_name(rois->dtype), og_dtype_name(x->dtype));
    const max_roi_loops *l = im->loops;
    int64_t N = x->dims[0], R = rois->dims[0];
    max_roi_geom g = {
        .C = x->dims[1], .H = x->dims[2], .W = x->dims[3], .PH = p->pooled[0], .PW = p->pooled[1]};
    for (int64_t r = 0; r < R; r++) {
        double v[5];
        l->box(rois->data, r, v);
        double b = v[0];
        if (!(b >= 0 && b < (double)N) || b != floor(b))
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "roi %lld has batch index %g, outside [0, %lld)", (long long)r,
                                   b, (long long)N);
        g.n = (int64_t)b;
        g.r = r;
        g.x1 = cell(v[1] * p->scale);
        g.y1 = cell(v[2] * p->scale);
        int64_t x2 = cell(v[3] * p->scale), y2 = cell(v[4] * p->scale);
        int64_t rh = y2 - g.y1 + 1 > 1 ? y2 - g.y1 + 1 : 1,
                rw = x2 - g.x1 + 1 > 1 ? x2 - g.x1 + 1 : 1;
        g.bh = (double)rh / (double)g.PH;
        g.bw = (double)rw / (double)g.PW;
        l->bins(x->data, y->data, &g);
    }
    return OG_OK;
}

static const og_dtype types_float[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

/* float32, float64 and float16 (the spec's), bound by select */
const og_kernel_def og_cpu_pool_lp_roi[] = {
    {.name = "GlobalLpPool",
     .domain = "",
     .fn = k_global_lp,
     .types = types_float,
     .select = select_global_lp},
    {.name = "MaxRoiPool",
     .domain = "",
     .fn = k_max_roi,
     .types = types_float,
     .select = select_max_roi},
    {.name = NULL},
};
