/* norm.c: CPU kernels of BatchNormalization, InstanceNormalization, LayerNormalization and
 * Dropout, for float32 and float64, and of GroupNormalization, LpNormalization,
 * MeanVarianceNormalization and LRN, which also take float16 and bfloat16 (through float).
 * The loops of one element type form a norm_loops table
 * that the session binds to each node when it is created (the type of X).  The small
 * per-channel or per-row vectors whose type is free of X's are computed in double: the
 * inputs (BatchNormalization's scale, B, mean and var) read once per call, the outputs
 * (BatchNormalization's running statistics, LayerNormalization's Mean and InvStdDev, a
 * Dropout's mask) written by the typed stores (og_elem_io) of their dtype, which the
 * session binds with the loops from the outputs' static dtypes (norm_bound).
 *
 * Every normalization ends in a per-run affine map y = x * a + b over contiguous runs
 * (H*W for a channel, a LayerNormalization row), with a and b precomputed per run, so the
 * inner loops vectorize.  Statistics take one pass (sum and sum of squares in double). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/norm.h"

static bool is_float_type(const og_tensor *t)
{
    return t->dtype == OG_FLOAT || t->dtype == OG_DOUBLE;
}

/* splitmix64's finalizer: Dropout's counter-based generator (element i of a run with key
 * k draws mix64(k + i * golden)), deterministic and free of shared state. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static bool dropout_keep(uint64_t key, int64_t i, double ratio)
{
    uint64_t r = mix64(key + (uint64_t)i * 0x9E3779B97F4A7C15ull);
    return (double)(r >> 11) * 0x1.0p-53 >= ratio;
}

#define DEFINE_NORM(T)                                                                             \
    /* mean and (biased) variance of `count` runs of `len` elements, `stride` apart */             \
    static void stats_##T(const T *restrict x, int64_t count, int64_t stride, int64_t len,         \
                          double *mean, double *var)                                               \
    {                                                                                              \
        /* eight independent lanes so that the sums vectorize without reassociation flags */       \
        double s8[8] = {0}, q8[8] = {0}, s = 0, q = 0;                                             \
        for (int64_t r = 0; r < count; r++) {                                                      \
            const T *restrict p = x + r * stride;                                                  \
            int64_t i = 0;                                                                         \
            for (; i + 8 <= len; i += 8)                                                           \
                for (int j = 0; j < 8; j++) {                                                      \
                    double v = p[i + j];                                                           \
                    s8[j] += v;                                                                    \
                    q8[j] += v * v;                                                                \
                }                                                                                  \
            for (; i < len; i++) {                                                                 \
                double v = p[i];                                                                   \
                s += v;                                                                            \
                q += v * v;                                                                        \
            }                                                                                      \
        }                                                                                          \
        for (int j = 0; j < 8; j++) {                                                              \
            s += s8[j];                                                                            \
            q += q8[j];                                                                            \
        }                                                                                          \
        double n = (double)(count * len);                                                          \
        double m = n > 0 ? s / n : 0;                                                              \
        double v2 = n > 0 ? q / n - m * m : 0;                                                     \
        *mean = m;                                                                                 \
        *var = v2 > 0 ? v2 : 0;                                                                    \
    }                                                                                              \
    static void affine_run_##T(const T *restrict x, T *restrict y, int64_t n, T a, T b)            \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * a + b;                                       \
    }                                                                                              \
    static void affine_vec_##T(const T *restrict x, T *restrict y, int64_t n, const T *restrict a, \
                               const T *restrict b)                                                \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * a[i] + b[i];                                 \
    }                                                                                              \
    /* y[n, c, :] = x[n, c, :] * a[c] + b[c] over N x C runs of `inner` elements */                \
    /* channel_affine's items (og_par_for): row n of C (inner 1), or run r of `inner` */           \
    typedef struct affine_job_##T {                                                                \
        const T *x, *a, *b;                                                                        \
        T *y;                                                                                      \
        int64_t C, inner;                                                                          \
    } affine_job_##T;                                                                              \
    static void affine_range_##T(void *ctx, int64_t i0, int64_t i1, int slot)                      \
    {                                                                                              \
        const affine_job_##T *j = ctx;                                                             \
        const int64_t C = j->C, inner = j->inner;                                                  \
        (void)slot;                                                                                \
        for (int64_t r = i0; r < i1; r++)                                                          \
            if (inner == 1)                                                                        \
                affine_vec_##T(j->x + r * C, j->y + r * C, C, j->a, j->b);                         \
            else                                                                                   \
                affine_run_##T(j->x + r * inner, j->y + r * inner, inner, j->a[r % C],             \
                               j->b[r % C]);                                                       \
    }                                                                                              \
    static void channel_affine_##T(const og_kernel_ctx *k, const void *xv, void *yv, int64_t N,    \
                                   int64_t C, int64_t inner, const void *av, const void *bv)       \
    {                                                                                              \
        affine_job_##T j = {xv, av, bv, yv, C, inner};                                             \
        if (inner == 1)                                                                            \
            og_par_for(k, N, (double)C, OG_PAR_MIN_COMPUTE, affine_range_##T, &j);                 \
        else                                                                                       \
            og_par_for(k, N *C, (double)inner, OG_PAR_MIN_COMPUTE, affine_range_##T, &j);          \
    }                                                                                              \
    /* one LayerNormalization row: normalize, scale by w, shift by b (may be NULL) */              \
    static void layer_row_##T(const T *restrict x, T *restrict y, int64_t n, const T *restrict w,  \
                              const T *restrict b, double eps, double *mean, double *inv)          \
    {                                                                                              \
        double m, v;                                                                               \
        stats_##T(x, 1, n, n, &m, &v);                                                             \
        double s = 1.0 / sqrt(v + eps);                                                            \
        const T a = (T)s, c = (T)(-m * s);                                                         \
        if (b)                                                                                     \
            for (int64_t i = 0; i < n; i++) y[i] = (x[i] * a + c) * w[i] + b[i];                   \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) y[i] = (x[i] * a + c) * w[i];                          \
        *mean = m;                                                                                 \
        *inv = s;                                                                                  \
    }                                                                                              \
    typedef struct dropout_job_##T {                                                               \
        const T *x;                                                                                \
        T *y;                                                                                      \
        uint8_t *mask;                                                                             \
        double ratio;                                                                              \
        uint64_t key;                                                                              \
        T scale;                                                                                   \
    } dropout_job_##T;                                                                             \
    static void dropout_range_##T(void *ctx, int64_t i0, int64_t i1, int slot)                     \
    {                                                                                              \
        const dropout_job_##T *j = ctx;                                                            \
        (void)slot;                                                                                \
        for (int64_t i = i0; i < i1; i++) {                                                        \
            bool keep = dropout_keep(j->key, i, j->ratio);                                         \
            j->y[i] = keep ? j->x[i] * j->scale : (T)0;                                            \
            if (j->mask) j->mask[i] = keep;                                                        \
        }                                                                                          \
    }                                                                                              \
    static void dropout_##T(const og_kernel_ctx *k, const void *xv, void *yv, uint8_t *mask,       \
                            int64_t n, double ratio, uint64_t key)                                 \
    {                                                                                              \
        const T scale = ratio < 1 ? (T)(1.0 / (1.0 - ratio)) : (T)0;                               \
        dropout_job_##T j = {xv, yv, mask, ratio, key, scale};                                     \
        og_par_for(k, n, 8.0, OG_PAR_MIN_COMPUTE, dropout_range_##T, &j);                          \
    }

DEFINE_NORM(float)
DEFINE_NORM(double)

#define DEFINE_INSTANCE(T)                                                                         \
    static void instance_plane_##T(const T *x, T *y, int64_t inner, double s, double b,            \
                                   double eps)                                                     \
    {                                                                                              \
        double m, v;                                                                               \
        stats_##T(x, 1, inner, inner, &m, &v);                                                     \
        double a = s / sqrt(v + eps);                                                              \
        affine_run_##T(x, y, inner, (T)a, (T)(b - m * a));                                         \
    }                                                                                              \
    static void instance_##T(const og_kernel_ctx *k, const void *xv, void *yv, int64_t planes,     \
                             int64_t C, int64_t inner, const og_tensor *s, const og_tensor *b,     \
                             double eps)                                                           \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        OG_PARALLEL_FOR(k, planes, inner * 4, r, {                                                 \
            instance_plane_##T(x + r * inner, y + r * inner, inner, og_tensor_get_f64(s, r % C),   \
                               og_tensor_get_f64(b, r % C), eps);                                  \
        });                                                                                        \
    }

DEFINE_INSTANCE(float)
DEFINE_INSTANCE(double)

/* The loops of one element type, over untyped pointers: what select_norm binds. */
typedef struct norm_loops {
    /* per channel c: mean and variance of x[:, c, :] ([N, C, inner]) into bm[c], bv[c] */
    void (*batch_stats)(const og_kernel_ctx *k, const void *x, int64_t N, int64_t C, int64_t inner,
                        double *bm, double *bv);
    /* y[n, c, :] = x[n, c, :] * a[c] + b[c] ([N, C, inner]), a and b given as doubles and
     * converted into ta, tb (C elements of the type each) first */
    void (*channel_affine)(const og_kernel_ctx *k, const void *x, void *y, int64_t N, int64_t C,
                           int64_t inner, const double *a, const double *b, void *ta, void *tb);
    void (*instance)(const og_kernel_ctx *k, const void *x, void *y, int64_t planes, int64_t C,
                     int64_t inner, const og_tensor *s, const og_tensor *b, double eps);
    /* LayerNormalization over `rows` rows of `cols`, with each row's mean and 1/stddev */
    void (*layer_rows)(const og_kernel_ctx *k, const void *x, void *y, int64_t rows, int64_t cols,
                       const void *w, const void *b, double eps, double *mean, double *inv);
    void (*dropout)(const og_kernel_ctx *k, const void *x, void *y, uint8_t *mask, int64_t n,
                    double ratio, uint64_t key);
} norm_loops;

#define NORM_LOOPS(T)                                                                              \
    /* batch_stats' and layer_rows' items (og_par_for): channel c, or row r */                     \
    typedef struct stats_job_##T {                                                                 \
        const T *x, *w, *b;                                                                        \
        T *y;                                                                                      \
        int64_t N, C, inner;                                                                       \
        double eps, *m, *v;                                                                        \
    } stats_job_##T;                                                                               \
    static void stats_range_##T(void *ctx, int64_t c0, int64_t c1, int slot)                       \
    {                                                                                              \
        const stats_job_##T *j = ctx;                                                              \
        (void)slot;                                                                                \
        for (int64_t c = c0; c < c1; c++)                                                          \
            stats_##T(j->x + c * j->inner, j->N, j->C * j->inner, j->inner, &j->m[c], &j->v[c]);   \
    }                                                                                              \
    static void layer_range_##T(void *ctx, int64_t r0, int64_t r1, int slot)                       \
    {                                                                                              \
        const stats_job_##T *j = ctx;                                                              \
        const int64_t cols = j->inner;                                                             \
        (void)slot;                                                                                \
        for (int64_t r = r0; r < r1; r++)                                                          \
            layer_row_##T(j->x + r * cols, j->y + r * cols, cols, j->w, j->b, j->eps, &j->m[r],    \
                          &j->v[r]);                                                               \
    }                                                                                              \
    static void batch_stats_##T(const og_kernel_ctx *k, const void *xv, int64_t N, int64_t C,      \
                                int64_t inner, double *bm, double *bv)                             \
    {                                                                                              \
        stats_job_##T j = {.x = xv, .N = N, .C = C, .inner = inner, .m = bm, .v = bv};             \
        og_par_for(k, C, (double)(N * inner), OG_PAR_MIN_COMPUTE, stats_range_##T, &j);            \
    }                                                                                              \
    static void channel_affine_f64_##T(const og_kernel_ctx *k, const void *x, void *y, int64_t N,  \
                                       int64_t C, int64_t inner, const double *a, const double *b, \
                                       void *tav, void *tbv)                                       \
    {                                                                                              \
        T *ta = tav, *tb = tbv;                                                                    \
        for (int64_t c = 0; c < C; c++) {                                                          \
            ta[c] = (T)a[c];                                                                       \
            tb[c] = (T)b[c];                                                                       \
        }                                                                                          \
        channel_affine_##T(k, x, y, N, C, inner, ta, tb);                                          \
    }                                                                                              \
    static void layer_rows_##T(const og_kernel_ctx *k, const void *xv, void *yv, int64_t rows,     \
                               int64_t cols, const void *w, const void *b, double eps,             \
                               double *mean, double *inv)                                          \
    {                                                                                              \
        stats_job_##T j = {                                                                        \
            .x = xv, .w = w, .b = b, .y = yv, .inner = cols, .eps = eps, .m = mean, .v = inv};     \
        og_par_for(k, rows, (double)(cols * 4), OG_PAR_MIN_COMPUTE, layer_range_##T, &j);          \
    }                                                                                              \
    static const norm_loops norm_loops_##T = {batch_stats_##T, channel_affine_f64_##T,             \
                                              instance_##T, layer_rows_##T, dropout_##T};
NORM_LOOPS(float)
NORM_LOOPS(double)

/* float32, float64, and the 16-bit floats through float32's binding (og_float_impl):
 * InstanceNormalization's binding */
OG_FLOAT_IMPLS(norm_impls, &norm_loops_float, &norm_loops_double);

/* X's loops for this call of kernel self: of k->impl, or without a binding of the table's
 * entry for X's dtype.  NULL when the call ends here, with *st: a 16-bit X computed by self
 * on float32 copies (og_kernel_via_f32_bound), or an X without loops (the error). */
static const norm_loops *norm_bind(const og_kernel_ctx *k, og_kernel_fn self,
                                   const og_tensor *const *in, int n_in, og_tensor *const *out,
                                   int n_out, og_status *st)
{
    const og_float_impl *im = og_float_bound(k, norm_impls, in[0]->dtype);
    *st = OG_OK;
    if (!im)
        *st = og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                              og_dtype_name(in[0]->dtype));
    else if (!im->loops)
        *st = og_kernel_via_f32_bound(k, im, self, in, n_in, out, n_out);
    return im ? im->loops : NULL;
}

/* What BatchNormalization, LayerNormalization and Dropout bind (select_norm_io): X's loops
 * as an og_float_impl (its first member, so that og_kernel_via_f32_bound passes the float32
 * row's binding to the call on float32 copies) and the stores of their statistics outputs
 * (BatchNormalization's outputs 1 to 4, LayerNormalization's Mean and InvStdDev: float32 or
 * float64; Dropout's mask: bool, or X's dtype before version 10), one dtype for all of them;
 * NULL stats when none is computed. */
typedef struct norm_bound {
    og_float_impl im;
    const og_elem_io *stats;
} norm_bound;
/* [X float32, float64, 16-bit][stats none, float32, float64, bool]; a 16-bit X computes on
 * float32 copies, where 16-bit statistics are float32 too */
static const norm_bound norm_bounds[3][4] = {{{{&norm_loops_float, NULL}, NULL},
                                              {{&norm_loops_float, NULL}, &og_elem_ios[0]},
                                              {{&norm_loops_float, NULL}, &og_elem_ios[1]},
                                              {{&norm_loops_float, NULL}, &og_elem_ios[12]}},
                                             {{{&norm_loops_double, NULL}, NULL},
                                              {{&norm_loops_double, NULL}, &og_elem_ios[0]},
                                              {{&norm_loops_double, NULL}, &og_elem_ios[1]},
                                              {{&norm_loops_double, NULL}, &og_elem_ios[12]}},
                                             {{{NULL, &norm_bounds[0][0].im}, NULL},
                                              {{NULL, &norm_bounds[0][1].im}, NULL},
                                              {{NULL, &norm_bounds[0][2].im}, NULL},
                                              {{NULL, &norm_bounds[0][3].im}, NULL}}};

static const void *select_norm_io(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    int x = t[0] == OG_FLOAT ? 0 : t[0] == OG_DOUBLE ? 1 : og_is_half(t[0]) ? 2 : -1;
    if (x < 0) return NULL;
    og_dtype stats = OG_UNDEFINED;
    for (int j = 1; j < n->n_out; j++) {
        if (n->out[j] < 0) continue;
        if (out[j] == OG_UNDEFINED || (stats != OG_UNDEFINED && out[j] != stats))
            return OG_KERNEL_AT_RUN; /* each output's store picked per call */
        stats = out[j];
    }
    if (x == 2 && og_is_half(stats)) stats = OG_FLOAT; /* widened with X */
    int s = stats == OG_UNDEFINED ? 0
            : stats == OG_FLOAT   ? 1
            : stats == OG_DOUBLE  ? 2
            : stats == OG_BOOL    ? 3
                                  : -1;
    return s < 0 ? OG_KERNEL_AT_RUN : &norm_bounds[x][s];
}

/* The store of statistics output o: the bound one, or without a binding (a direct call,
 * a run with other dtypes) that of o's dtype (float32, float64 or bool); NULL for another. */
static const og_elem_io *stats_io(const og_kernel_ctx *k, const og_tensor *o)
{
    if (k->impl) return ((const norm_bound *)k->impl)->stats;
    return is_float_type(o) || o->dtype == OG_BOOL ? og_elem_io_of(o->dtype) : NULL;
}

/* The stores of outputs first..last-1 that exist (NULL for the others) into io[]; false,
 * with an error, when one has none. */
static bool stats_ios(const og_kernel_ctx *k, og_tensor *const *out, int n_out, int first, int last,
                      const og_elem_io **io)
{
    for (int j = first; j < last; j++) {
        io[j - first] = j < n_out && out[j] ? stats_io(k, out[j]) : NULL;
        if (j < n_out && out[j] && !io[j - first]) {
            og_kernel_error(k, OG_ERR_UNSUPPORTED, "output %d has element type %s", j,
                            og_dtype_name(out[j]->dtype));
            return false;
        }
    }
    return true;
}

/* X's loops for this call of kernel self (BatchNormalization, LayerNormalization,
 * Dropout): the bound ones (a norm_bound), or without a binding those of X's dtype.  NULL
 * when the call ends here, with *st: a 16-bit X computed by self on float32 copies (with
 * the float32 row's binding, or unbound), or an X without loops (the error). */
static const norm_loops *norm_io_bind(const og_kernel_ctx *k, og_kernel_fn self,
                                      const og_tensor *const *in, int n_in, og_tensor *const *out,
                                      int n_out, og_status *st)
{
    const norm_bound *b = k->impl;
    og_dtype t = in[0]->dtype;
    const norm_loops *L = b                ? b->im.loops
                          : t == OG_FLOAT  ? &norm_loops_float
                          : t == OG_DOUBLE ? &norm_loops_double
                                           : NULL;
    *st = OG_OK;
    if (b && !L)
        *st = og_kernel_via_f32_bound(k, &b->im, self, in, n_in, out, n_out);
    else if (!L && og_is_half(t))
        *st = og_kernel_via_f32_unbound(k, self, in, n_in, out, n_out);
    else if (!L)
        *st = og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                              og_dtype_name(t));
    return L;
}

/* ---- BatchNormalization ---------------------------------------------------------- */

static og_status batchnorm_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    og_status st;
    const norm_loops *L = norm_io_bind(k, batchnorm_kernel, in, n_in, out, n_out, &st);
    if (!L) return st;
    for (int i = 1; i < 5; i++)
        if (!is_float_type(in[i]))
            return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input %d has element type %s", i,
                                   og_dtype_name(in[i]->dtype));
    const og_elem_io *io[4];
    if (!stats_ios(k, out, n_out, 1, 5, io)) return OG_ERR_UNSUPPORTED;
    const int64_t N = x->dims[0];
    const int64_t C = in[1]->numel; /* channels, or C*D1*... per activation */
    const int64_t inner = N * C > 0 ? x->numel / (N * C) : 0;
    size_t esz = og_dtype_size(x->dtype);
    /* scratch: scale, B, mean, var, a, b as double; a, b as T */
    double *buf = og_malloc(k->alloc, (size_t)(C ? C : 1) * (6 * sizeof(double) + 2 * esz));
    if (!buf) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    double *s = buf, *bias = buf + C, *mean = buf + 2 * C, *var = buf + 3 * C;
    double *bm = buf + 4 * C, *bv = buf + 5 * C;
    void *ta = buf + 6 * C, *tb = (char *)ta + (size_t)C * esz;
    for (int64_t c = 0; c < C; c++) {
        s[c] = og_tensor_get_f64(in[1], c);
        bias[c] = og_tensor_get_f64(in[2], c);
        mean[c] = og_tensor_get_f64(in[3], c);
        var[c] = og_tensor_get_f64(in[4], c);
    }
    if (p->training) {
        L->batch_stats(k, x->data, N, C, inner, bm, bv);
    } else {
        memcpy(bm, mean, (size_t)C * sizeof *bm);
        memcpy(bv, var, (size_t)C * sizeof *bv);
    }
    /* running statistics (training), or the inputs passed through; then the batch's */
    double mom = p->training ? p->momentum : 1.0;
    for (int64_t c = 0; c < C; c++) {
        mean[c] = mean[c] * mom + bm[c] * (1 - mom);
        var[c] = var[c] * mom + bv[c] * (1 - mom);
    }
    const double *stats[4] = {mean, var, bm, bv};
    for (int j = 1; j < n_out && j < 5; j++)
        if (io[j - 1]) io[j - 1]->store(out[j]->data, 0, 1, C, stats[j - 1]);
    /* per-channel affine: a = scale / sqrt(var + eps), b = B - mean * a */
    for (int64_t c = 0; c < C; c++) {
        double a = s[c] / sqrt(bv[c] + p->epsilon);
        s[c] = a;
        bias[c] = bias[c] - bm[c] * a;
    }
    L->channel_affine(k, x->data, y->data, N, C, inner, s, bias, ta, tb);
    og_free(k->alloc, buf);
    (void)n_in;
    return OG_OK;
}

/* ---- InstanceNormalization ------------------------------------------------------- */

static og_status instancenorm_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                     og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    og_status st;
    const norm_loops *L = norm_bind(k, instancenorm_kernel, in, n_in, out, n_out, &st);
    if (!L) return st;
    int64_t C = x->dims[1], planes = x->dims[0] * C;
    if (planes == 0) return OG_OK;
    int64_t inner = x->numel / planes;
    L->instance(k, x->data, out[0]->data, planes, C, inner, in[1], in[2], p->epsilon);
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

/* ---- LayerNormalization ---------------------------------------------------------- */

/* Scale or B as `cols` contiguous elements: the input itself when it already has that many,
 * else expanded (numpy broadcasting into the normalized shape) into dst. */
static const void *layer_param(const og_tensor *w, int nr, const int64_t *ndims, int64_t cols,
                               void *dst)
{
    if (w->numel == cols || cols == 0) return w->data;
    int wr = w->rank, skip = 0;
    while (wr - skip > nr) skip++; /* leading 1s, checked by infer */
    int64_t strides[OG_MAX_RANK];
    og_broadcast_strides(wr - skip, w->dims + skip, nr, ndims, strides);
    og_index_iter it;
    og_index_init(&it, nr, ndims);
    size_t esz = og_dtype_size(w->dtype);
    int64_t j = 0;
    do {
        int64_t src = 0;
        for (int d = 0; d < nr; d++) src += it.idx[d] * strides[d];
        memcpy((char *)dst + (size_t)j * esz, (const char *)w->data + (size_t)src * esz, esz);
        j++;
    } while (og_index_next(&it) && j < cols);
    return dst;
}

static og_status layernorm_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0], *w = in[1], *b = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    og_tensor *om = n_out > 1 ? out[1] : NULL, *oi = n_out > 2 ? out[2] : NULL;
    og_status st;
    const norm_loops *L = norm_io_bind(k, layernorm_kernel, in, n_in, out, n_out, &st);
    if (!L) return st;
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    const og_elem_io *io[2];
    if (!stats_ios(k, out, n_out, 1, 3, io)) return OG_ERR_UNSUPPORTED;
    int axis = (int)(p->axis < 0 ? p->axis + x->rank : p->axis);
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < axis)
            rows *= x->dims[d];
        else
            cols *= x->dims[d];
    }
    size_t esz = og_dtype_size(x->dtype);
    /* scratch: per-row mean and 1/stddev (doubles first, for alignment), then Scale and B
     * expanded to a row; rows of 0 columns still get their Mean and InvStdDev */
    double *mean =
        og_malloc(k->alloc, 2 * (size_t)rows * sizeof(double) + 2 * (size_t)cols * esz + 1);
    if (!mean) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    double *inv = mean + rows;
    char *wbuf = (char *)(inv + rows);
    int nr = x->rank - axis;
    const void *wp = layer_param(w, nr, x->dims + axis, cols, wbuf);
    const void *bp = b ? layer_param(b, nr, x->dims + axis, cols, wbuf + (size_t)cols * esz) : NULL;
    L->layer_rows(k, x->data, y->data, rows, cols, wp, bp, p->epsilon, mean, inv);
    if (io[0]) io[0]->store(om->data, 0, 1, rows, mean);
    if (io[1]) io[1]->store(oi->data, 0, 1, rows, inv);
    og_free(k->alloc, mean);
    return OG_OK;
}

/* ---- Dropout --------------------------------------------------------------------- */

static og_status dropout_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0], *mask = n_out > 1 ? out[1] : NULL;
    og_status st;
    const norm_loops *L = norm_io_bind(k, dropout_kernel, in, n_in, out, n_out, &st);
    if (!L) return st;
    const og_elem_io *mio;
    if (!stats_ios(k, out, n_out, 1, 2, &mio)) return OG_ERR_UNSUPPORTED;
    double ratio = p->ratio;
    bool training = false;
    if (k->node->since_version >= 12) {
        ratio = n_in > 1 && in[1] ? og_tensor_get_f64(in[1], 0) : 0.5;
        training = n_in > 2 && in[2] && og_tensor_get_i64(in[2], 0) != 0;
    }
    if (!(ratio >= 0 && ratio <= 1))
        return og_kernel_error(k, OG_ERR_RUNTIME, "ratio is %g, expected 0..1", ratio);
    if (x->numel == 0) return OG_OK;
    if (!training || ratio == 0) {
        /* inference: identity, nothing dropped */
        if (y->data != x->data) memcpy(y->data, x->data, og_tensor_nbytes(x));
        /* the mask: all ones, of its bound dtype (bool, or X's before version 10) */
        static const double ones[64] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        for (int64_t i = 0; mio && i < mask->numel; i += 64)
            mio->store(mask->data, i, 1, mask->numel - i < 64 ? mask->numel - i : 64, ones);
        return OG_OK;
    }
    uint8_t *m = mask ? mask->data : NULL;
    /* the run's key (new at every run of the session), the node's own stream (its name),
     * and its seed attribute */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = k->node->name ? k->node->name : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    uint64_t key = mix64(mix64(p->seed ^ 0x5DEECE66Dull) ^ mix64(h) ^ k->rng);
    L->dropout(k, x->data, y->data, m, x->numel, ratio, key);
    return OG_OK;
}

/* ---- GroupNormalization --------------------------------------------------------------- */

/* X [N, C, S...]: group g of instance n is one contiguous run of C/G·S elements; its
 * statistics, then per channel y = x·a + b with a = scale·σ⁻¹, b = bias − μ·a (scale and
 * bias per group at opset 18, per channel from 21; both of X's dtype). */
#define DEF_GROUPNORM(T)                                                                           \
    static void groupnorm_one_##T(const T *x, const T *scale, const T *bias, T *y, double eps,     \
                                  int64_t ng, int64_t G, int64_t Cg, int64_t S, bool per_channel)  \
    {                                                                                              \
        int64_t g = ng % G;                                                                        \
        double m, v;                                                                               \
        stats_##T(x + ng * Cg * S, 1, 0, Cg * S, &m, &v);                                          \
        double is = 1.0 / sqrt(v + eps);                                                           \
        for (int64_t j = 0; j < Cg; j++) {                                                         \
            int64_t q = per_channel ? g * Cg + j : g, off = (ng * Cg + j) * S;                     \
            double a = (double)scale[q] * is;                                                      \
            double c0 = (double)bias[q] - m * a;                                                   \
            affine_run_##T(x + off, y + off, S, (T)a, (T)c0);                                      \
        }                                                                                          \
    }                                                                                              \
    static void groupnorm_##T(const og_kernel_ctx *k, const void *x, const void *scale,            \
                              const void *bias, void *y, double eps, int64_t N, int64_t G,         \
                              int64_t Cg, int64_t S, bool per_channel)                             \
    {                                                                                              \
        OG_PARALLEL_FOR(k, N *G, Cg *S * 2, ng, {                                                  \
            groupnorm_one_##T(x, scale, bias, y, eps, ng, G, Cg, S, per_channel);                  \
        });                                                                                        \
    }
DEF_GROUPNORM(float)
DEF_GROUPNORM(double)

typedef void (*groupnorm_fn)(const og_kernel_ctx *k, const void *x, const void *scale,
                             const void *bias, void *y, double eps, int64_t N, int64_t G,
                             int64_t Cg, int64_t S, bool per_channel);
static const groupnorm_fn groupnorm_loops[2] = {groupnorm_float, groupnorm_double};
OG_FLOAT_IMPLS(groupnorm_impls, &groupnorm_loops[0], &groupnorm_loops[1]);

/* The newer normalizations take float16 and bfloat16 through float32 (og_float_impl). */
static og_status unsupported_x(const og_kernel_ctx *k, const og_tensor *x)
{
    return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input 0 has element type %s",
                           og_dtype_name(x->dtype));
}

static og_status groupnorm_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const og_float_impl *im = og_float_bound(k, groupnorm_impls, x->dtype);
    if (!im) return unsupported_x(k, x);
    if (!im->loops) return og_kernel_via_f32_bound(k, im, groupnorm_kernel, in, n_in, out, n_out);
    int64_t N = x->dims[0], C = x->dims[1], G = p->groups;
    int64_t S = N * C > 0 ? x->numel / (N * C) : 0, Cg = C / G;
    bool per_channel = k->node->since_version >= 21;
    int64_t want = per_channel ? C : G;
    for (int i = 1; i < 3; i++) {
        if (in[i]->numel != want)
            return og_kernel_error(k, OG_ERR_SHAPE, "input %d has %lld elements, expected %lld", i,
                                   (long long)in[i]->numel, (long long)want);
        if (in[i]->dtype != x->dtype)
            return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, input 0 %s", i,
                                   og_dtype_name(in[i]->dtype), og_dtype_name(x->dtype));
    }
    if (C % G)
        return og_kernel_error(k, OG_ERR_SHAPE, "%lld channels are not a multiple of %lld groups",
                               (long long)C, (long long)G);
    if (x->numel == 0) return OG_OK;
    (*(const groupnorm_fn *)im->loops)(k, x->data, in[1]->data, in[2]->data, y->data, p->epsilon, N,
                                       G, Cg, S, per_channel);
    return OG_OK;
}

/* ---- LpNormalization ------------------------------------------------------------------ */

/* y = x / ‖x‖ₚ along the axis (p 1 or 2); x seen as [O, R, I] */
#define DEF_LPNORM(T)                                                                              \
    static void lpnorm_##T(const void *xv, void *yv, int64_t O, int64_t R, int64_t I, int64_t p)   \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t o = 0; o < O; o++)                                                            \
            for (int64_t i = 0; i < I; i++) {                                                      \
                const T *xr = x + o * R * I + i;                                                   \
                double s = 0;                                                                      \
                for (int64_t r = 0; r < R; r++)                                                    \
                    s += p == 1 ? fabs((double)xr[r * I]) : (double)xr[r * I] * xr[r * I];         \
                double nrm = p == 1 ? s : sqrt(s);                                                 \
                for (int64_t r = 0; r < R; r++) y[o * R * I + i + r * I] = (T)(xr[r * I] / nrm);   \
            }                                                                                      \
    }
DEF_LPNORM(float)
DEF_LPNORM(double)

typedef void (*lpnorm_fn)(const void *x, void *y, int64_t O, int64_t R, int64_t I, int64_t p);
static const lpnorm_fn lpnorm_loops[2] = {lpnorm_float, lpnorm_double};
OG_FLOAT_IMPLS(lpnorm_impls, &lpnorm_loops[0], &lpnorm_loops[1]);

static og_status lpnorm_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    const og_float_impl *im = og_float_bound(k, lpnorm_impls, x->dtype);
    if (!im) return unsupported_x(k, x);
    if (!im->loops) return og_kernel_via_f32_bound(k, im, lpnorm_kernel, in, n_in, out, n_out);
    int axis = (int)(p->axis < 0 ? p->axis + x->rank : p->axis);
    int64_t O = 1, R = x->dims[axis], I = 1;
    for (int d = 0; d < axis; d++) O *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) I *= x->dims[d];
    (*(const lpnorm_fn *)im->loops)(x->data, out[0]->data, O, R, I, p->p);
    return OG_OK;
}

/* ---- MeanVarianceNormalization -------------------------------------------------------- */

/* y = (x − μ) / (σ + 1e-9) with μ and the biased σ² over the axes (the spec's function adds
 * the epsilon to the standard deviation).  Each element's statistics slot is its index with
 * the reduced axes dropped, walked with an odometer. */
#define MVN_EPS 1e-9
#define DEF_MVN(T)                                                                                 \
    static void mvn_##T(const void *xv, void *yv, int r, const int64_t *dims, const int64_t *ks,   \
                        int64_t n, double *mean, double *den, int64_t K, double cnt)               \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int pass = 0; pass < 3; pass++) {                                                     \
            int64_t idx[OG_MAX_RANK] = {0}, ko = 0;                                                \
            for (int64_t i = 0; i < n; i++) {                                                      \
                double v = x[i];                                                                   \
                if (pass == 0)                                                                     \
                    mean[ko] += v;                                                                 \
                else if (pass == 1)                                                                \
                    den[ko] += (v - mean[ko]) * (v - mean[ko]);                                    \
                else                                                                               \
                    y[i] = (T)((v - mean[ko]) / den[ko]);                                          \
                for (int d = r - 1; d >= 0; d--) {                                                 \
                    ko += ks[d];                                                                   \
                    if (++idx[d] < dims[d]) break;                                                 \
                    ko -= ks[d] * dims[d];                                                         \
                    idx[d] = 0;                                                                    \
                }                                                                                  \
            }                                                                                      \
            for (int64_t q = 0; q < K && pass < 2; q++) {                                          \
                if (pass == 0)                                                                     \
                    mean[q] /= cnt;                                                                \
                else                                                                               \
                    den[q] = sqrt(den[q] / cnt) + MVN_EPS;                                         \
            }                                                                                      \
        }                                                                                          \
    }
DEF_MVN(float)
DEF_MVN(double)

typedef void (*mvn_fn)(const void *x, void *y, int r, const int64_t *dims, const int64_t *ks,
                       int64_t n, double *mean, double *den, int64_t K, double cnt);
static const mvn_fn mvn_loops[2] = {mvn_float, mvn_double};
OG_FLOAT_IMPLS(mvn_impls, &mvn_loops[0], &mvn_loops[1]);

static og_status mvn_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    const og_float_impl *im = og_float_bound(k, mvn_impls, x->dtype);
    if (!im) return unsupported_x(k, x);
    if (!im->loops) return og_kernel_via_f32_bound(k, im, mvn_kernel, in, n_in, out, n_out);
    int r = x->rank;
    bool red[OG_MAX_RANK] = {false};
    for (int i = 0; i < p->n_axes; i++) red[p->axes[i] < 0 ? p->axes[i] + r : p->axes[i]] = true;
    /* strides of the statistics slots: 0 along reduced axes */
    int64_t ks[OG_MAX_RANK], K = 1;
    double cnt = 1;
    for (int d = r - 1; d >= 0; d--) {
        ks[d] = red[d] ? 0 : K;
        if (red[d])
            cnt *= (double)x->dims[d];
        else
            K *= x->dims[d];
    }
    if (x->numel == 0) return OG_OK;
    double *buf = og_calloc(k->alloc, (size_t)(2 * K), sizeof *buf);
    if (!buf) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    (*(const mvn_fn *)im->loops)(x->data, out[0]->data, r, x->dims, ks, x->numel, buf, buf + K, K,
                                 cnt);
    og_free(k->alloc, buf);
    return OG_OK;
}

/* ---- LRN ------------------------------------------------------------------------------ */

/* y = x · (bias + α/size · Σ x²)^−β, the sum over channels c − ⌊(size−1)/2⌋ .. c +
 * ⌈(size−1)/2⌉ inside [0, C); X seen as [N, C, S], one row of S sums per (n, c). */
#define DEF_LRN(T)                                                                                 \
    static void lrn_one_##T(const T *x, T *y, int64_t C, int64_t S, const og_norm_params *p,       \
                            double *row)                                                           \
    {                                                                                              \
        int64_t lo = (p->size - 1) / 2, hi = p->size / 2;                                          \
        for (int64_t c = 0; c < C; c++) {                                                          \
            for (int64_t s = 0; s < S; s++) row[s] = 0;                                            \
            for (int64_t q = c - lo < 0 ? 0 : c - lo; q <= c + hi && q < C; q++)                   \
                for (int64_t s = 0; s < S; s++) row[s] += (double)x[q * S + s] * x[q * S + s];     \
            double a = p->alpha / (double)p->size;                                                 \
            for (int64_t s = 0; s < S; s++)                                                        \
                y[c * S + s] = (T)(x[c * S + s] * pow(p->bias + a * row[s], -p->beta));            \
        }                                                                                          \
    }                                                                                              \
    static void lrn_##T(const og_kernel_ctx *k, const void *xv, void *yv, int64_t N, int64_t C,    \
                        int64_t S, const og_norm_params *p, double *rows)                          \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        OG_PARALLEL_FOR(k, N, C *S * p->size, n,                                                   \
                        { lrn_one_##T(x + n * C * S, y + n * C * S, C, S, p, rows + n * S); });    \
    }
DEF_LRN(float)
DEF_LRN(double)

typedef void (*lrn_fn)(const og_kernel_ctx *k, const void *x, void *y, int64_t N, int64_t C,
                       int64_t S, const og_norm_params *p, double *rows);
static const lrn_fn lrn_loops[2] = {lrn_float, lrn_double};
OG_FLOAT_IMPLS(lrn_impls, &lrn_loops[0], &lrn_loops[1]);

static og_status lrn_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_norm_params *p = k->params;
    const og_tensor *x = in[0];
    const og_float_impl *im = og_float_bound(k, lrn_impls, x->dtype);
    if (!im) return unsupported_x(k, x);
    if (!im->loops) return og_kernel_via_f32_bound(k, im, lrn_kernel, in, n_in, out, n_out);
    int64_t N = x->dims[0], C = x->dims[1];
    if (x->numel == 0) return OG_OK;
    int64_t S = x->numel / (N * C);
    double *rows = og_malloc(k->alloc, (size_t)(N * S) * sizeof *rows);
    if (!rows) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    (*(const lrn_fn *)im->loops)(k, x->data, out[0]->data, N, C, S, p, rows);
    og_free(k->alloc, rows);
    return OG_OK;
}

/* The newer normalizations' binding: float32, float64, and the 16-bit floats through
 * float32 (OG_FLOAT_IMPLS tables). */
static const void *select_groupnorm(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(groupnorm_impls, t);
}
static const void *select_lpnorm(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(lpnorm_impls, t);
}
static const void *select_mvn(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(mvn_impls, t);
}
static const void *select_lrn(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(lrn_impls, t);
}

static const void *select_norm(const og_node *n, og_dtype t)
{
    (void)n;
    return og_float_impl_of(norm_impls, t);
}

/* Every kernel here computes float32 and float64, on X's dtype, whose loops select_norm
 * binds (float16 and bfloat16 through float32 copies; BatchNormalization, LayerNormalization
 * and Dropout through select_norm_io, with the stores of the statistics outputs' dtype).
 * BatchNormalization's scale, B, mean and var (each float32 or float64) and
 * LayerNormalization's Scale and B (X's dtype) are checked by the kernels. */
const og_kernel_def og_cpu_norm[] = {
    {.name = "BatchNormalization",
     .domain = "",
     .fn = batchnorm_kernel,
     .select_types = select_norm_io},
    {.name = "InstanceNormalization",
     .domain = "",
     .fn = instancenorm_kernel,
     .select = select_norm},
    {.name = "LayerNormalization",
     .domain = "",
     .fn = layernorm_kernel,
     .select_types = select_norm_io},
    {.name = "Dropout", .domain = "", .fn = dropout_kernel, .select_types = select_norm_io},
    {.name = "GroupNormalization",
     .domain = "",
     .fn = groupnorm_kernel,
     .select = select_groupnorm},
    {.name = "LpNormalization", .domain = "", .fn = lpnorm_kernel, .select = select_lpnorm},
    {.name = "MeanVarianceNormalization", .domain = "", .fn = mvn_kernel, .select = select_mvn},
    {.name = "LRN", .domain = "", .fn = lrn_kernel, .select = select_lrn},
    {.name = NULL}};
