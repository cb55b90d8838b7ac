/* ml.c: CPU kernels of the ai.onnx.ml ops (what each computes: src/ops/ml_params.h).  The
 * tree ensembles are in ml_tree.c.  Scores are computed in float64 and stored in the
 * output's dtype; the post transforms follow onnxruntime's formulas (ml_post_row). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "kernels/cpu/ml.h"
#include "ops/ml_params.h"

/* ---- element access --------------------------------------------------------------- */

static inline double get(const og_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case OG_FLOAT: return ((const float *)t->data)[i];
    case OG_DOUBLE: return ((const double *)t->data)[i];
    case OG_INT64: return (double)((const int64_t *)t->data)[i];
    case OG_INT32: return ((const int32_t *)t->data)[i];
    default: return og_tensor_get_f64(t, i);
    }
}

static inline void put(og_tensor *t, int64_t i, double v)
{
    if (t->dtype == OG_DOUBLE)
        ((double *)t->data)[i] = v;
    else
        ((float *)t->data)[i] = (float)v;
}

/* ---- the bound element loops (og_ml_io) ------------------------------------------- */

#define ML_LOAD(NAME, T)                                                                           \
    static void NAME(const void *x, int64_t off, int64_t n, double *d)                             \
    {                                                                                              \
        const T *v = (const T *)x + off;                                                           \
        for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];                                       \
    }
ML_LOAD(load_f32, float)
ML_LOAD(load_f64, double)
ML_LOAD(load_i64, int64_t)
ML_LOAD(load_i32, int32_t)

static void store_f32(void *y, int64_t off, int64_t n, const double *d)
{
    float *v = (float *)y + off;
    for (int64_t i = 0; i < n; i++) v[i] = (float)d[i];
}

static void store_f64(void *y, int64_t off, int64_t n, const double *d)
{
    memcpy((double *)y + off, d, (size_t)n * sizeof *d);
}

/* [x: float32, float64, int64, int32][output float32, float64] */
static const og_ml_io ml_ios[4][2] = {{{load_f32, store_f32}, {load_f32, store_f64}},
                                      {{load_f64, store_f32}, {load_f64, store_f64}},
                                      {{load_i64, store_f32}, {load_i64, store_f64}},
                                      {{load_i32, store_f32}, {load_i32, store_f64}}};

const og_ml_io *og_ml_io_of(og_dtype t, bool out_double)
{
    int i = t == OG_FLOAT ? 0 : t == OG_DOUBLE ? 1 : t == OG_INT64 ? 2 : t == OG_INT32 ? 3 : -1;
    return i < 0 ? NULL : &ml_ios[i][out_double];
}

/* ---- post transforms (onnxruntime's ml_common formulas) ------------------------------ */

static double logistic(double v)
{
    double e = 1.0 / (1.0 + exp(-fabs(v)));
    return v < 0 ? 1.0 - e : e;
}

/* onnxruntime's approximation of erfinv (Winitzki's, a = 0.147), and probit from it, in
 * float arithmetic as onnxruntime's: the formula cancels (v * v - v2), so float and double
 * evaluations differ in the fifth digit, and outputs are float. */
static double probit(double p)
{
    float x = 2.0f * (float)p - 1.0f, sgn = x < 0 ? -1.0f : 1.0f;
    x = (1.0f - x) * (1.0f + x);
    float l = logf(x);
    float v = 2.0f / (3.14159f * 0.147f) + 0.5f * l, v2 = 1.0f / 0.147f * l;
    return 1.41421356f * sgn * sqrtf(-v + sqrtf(v * v - v2));
}

void og_ml_post_row(double *s, int64_t n, og_post post)
{
    switch (post) {
    case OG_POST_PROBIT:
        for (int64_t i = 0; i < n; i++) s[i] = probit(s[i]);
        break;
    case OG_POST_LOGISTIC:
        for (int64_t i = 0; i < n; i++) s[i] = logistic(s[i]);
        break;
    case OG_POST_SOFTMAX: {
        double m = -INFINITY, sum = 0;
        for (int64_t i = 0; i < n; i++) m = s[i] > m ? s[i] : m;
        for (int64_t i = 0; i < n; i++) sum += (s[i] = exp(s[i] - m));
        for (int64_t i = 0; i < n; i++) s[i] /= sum;
        break;
    }
    case OG_POST_SOFTMAX_ZERO: {
        /* scores within 1e-7 of 0 count as absent: near 0 after, and outside the sum */
        double m = -INFINITY, sum = 0;
        for (int64_t i = 0; i < n; i++) m = s[i] > m ? s[i] : m;
        double e_m = exp(-m);
        for (int64_t i = 0; i < n; i++) {
            if (s[i] > 1e-7 || s[i] < -1e-7)
                sum += (s[i] = exp(s[i] - m));
            else
                s[i] *= e_m;
        }
        for (int64_t i = 0; i < n; i++) s[i] /= sum;
        break;
    }
    case OG_POST_NONE: break;
    }
}

/* ---- LinearRegressor, LinearClassifier ---------------------------------------------- */

static og_status k_linear(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_linear_params *p = k->params;
    const og_tensor *x = in[0];
    int64_t n = x->rank == 1 ? 1 : x->dims[0], f = x->dims[x->rank - 1];
    int64_t t = p->targets > 0 ? p->targets : p->n_coef / (f ? f : 1);
    og_tensor *z = p->classifier ? (n_out > 1 ? out[1] : NULL) : out[0];
    const og_ml_io *io = og_ml_io_bound(k, x->dtype, p->double_out);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    /* the scores (2t), then one row of x in float64 (f) */
    double *s = og_malloc(k->alloc, ((size_t)(t > 0 ? t : 1) * 2 + (size_t)f) * sizeof *s);
    if (!s) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    double *xr = s + (t > 0 ? t : 1) * 2;
    int64_t zc = z ? z->dims[1] : 0;
    for (int64_t r = 0; r < n; r++) {
        io->load(x->data, r * f, f, xr);
        for (int64_t j = 0; j < t; j++) {
            double acc = p->intercepts ? p->intercepts[j] : 0.0;
            const float *w = p->coef + j * f;
            for (int64_t q = 0; q < f; q++) acc += xr[q] * w[q];
            s[j] = acc;
        }
        if (p->classifier) { /* the label from the raw scores */
            int64_t best = 0;
            bool pos = false;
            if (t == 1) { /* two labels (checked by the op) */
                pos = s[0] > 0;
                best = pos ? 1 : 0;
            } else {
                for (int64_t j = 1; j < t; j++)
                    if (s[j] > s[best]) best = j;
            }
            og_tensor *y = out[0];
            if (p->string_labels) {
                const char *l = p->labels_s[best];
                og_status st = og_tensor_set_str(y, r, l, strlen(l));
                if (st) {
                    og_free(k->alloc, s);
                    return st;
                }
            } else {
                ((int64_t *)y->data)[r] = p->labels_i[best];
            }
        }
        if (!z) continue;
        if (t > 1) {
            og_ml_post_row(s, t, p->post);
        } else if (p->post == OG_POST_PROBIT) {
            s[0] = probit(s[0]);
        } else if (zc == 2) { /* a binary classifier's two columns: [1 - p, p], p the score,
                                 through the logistic for LOGISTIC (only), as onnxruntime */
            s[1] = p->post == OG_POST_LOGISTIC ? logistic(s[0]) : s[0];
            s[0] = 1.0 - s[1];
        }
        io->store(z->data, r * zc, zc, s);
    }
    og_free(k->alloc, s);
    return OG_OK;
}

/* ---- ArrayFeatureExtractor ---------------------------------------------------------- */

static og_status k_afe(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *y = in[1];
    og_tensor *z = out[0];
    int64_t f = x->dims[x->rank - 1], rows = f ? x->numel / f : 0, m = y->numel;
    const int64_t *idx = y->data;
    size_t es = og_dtype_storage_size(x->dtype);
    const char *src = x->data;
    char *dst = z->data;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < m; j++)
            memcpy(dst + (r * m + j) * (int64_t)es, src + (r * f + idx[j]) * (int64_t)es, es);
    return x->dtype == OG_STRING ? og_tensor_own_strings(z) : OG_OK;
}

/* ---- ZipMap ------------------------------------------------------------------------- */

static og_status k_zipmap(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_zipmap_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *seq = out[0], *keys = NULL, *vals = NULL;
    int64_t c = p->n_keys, n = x->rank == 1 ? 1 : x->dims[0];
    og_dtype vd = p->double_out ? OG_DOUBLE : OG_FLOAT;
    og_status st =
        p->strings ? og_tensor_from_strings(1, &c, (const char *const *)p->keys_s, k->alloc, &keys)
                   : og_tensor_from_data(OG_INT64, 1, &c, p->keys_i, (size_t)c * sizeof(int64_t),
                                         k->alloc, &keys);
    /* the values: one copy of X, each map's scalars views into it */
    int64_t total = n * c;
    if (!st) st = og_tensor_alloc(vd, 1, &total, k->alloc, &vals);
    for (int64_t i = 0; !st && i < total; i++) put(vals, i, get(x, i));
    size_t es = og_dtype_size(vd);
    for (int64_t r = 0; !st && r < n; r++) {
        og_tensor *map = NULL;
        st = og_value_new(OG_KIND_MAP, k->alloc, &map);
        if (!st) st = og_value_share(keys, k->alloc, &map->keys);
        for (int64_t j = 0; !st && j < c; j++) {
            og_tensor *v = NULL;
            st = og_tensor_view_at(vals->buf, (size_t)(r * c + j) * es, vd, 0, NULL, k->alloc, &v);
            if (!st) st = og_value_append(map, v);
        }
        if (st)
            og_tensor_free(map);
        else
            st = og_value_append(seq, map);
    }
    og_tensor_free(keys);
    og_tensor_free(vals);
    return st;
}

/* ---- Normalizer, Scaler, Binarizer, Imputer ---------------------------------------- */

static og_status k_normalizer(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const og_normalizer_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    int64_t f = x->dims[x->rank - 1], rows = f ? x->numel / f : 0;
    const og_ml_io *io = og_ml_io_bound(k, x->dtype, p->double_out);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    double *xr = og_malloc(k->alloc, (size_t)(f ? f : 1) * sizeof *xr); /* a row in float64 */
    if (!xr) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
        const int64_t o = r * f;
        double d = 0;
        io->load(x->data, o, f, xr);
        if (p->norm == OG_NORM_MAX) {
            d = -INFINITY;
            for (int64_t j = 0; j < f; j++) d = fmax(d, xr[j]);
        } else {
            for (int64_t j = 0; j < f; j++) {
                double v = xr[j];
                d += p->norm == OG_NORM_L1 ? fabs(v) : v * v;
            }
            if (p->norm == OG_NORM_L2) d = sqrt(d);
        }
        if (d != 0)
            for (int64_t j = 0; j < f; j++) xr[j] /= d;
        io->store(y->data, o, f, xr);
    }
    og_free(k->alloc, xr);
    return OG_OK;
}

static og_status k_scaler(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_scaler_params *p = k->params;
    const og_tensor *x = in[0];
    int64_t f = x->rank == 1 ? x->dims[0] : x->dims[1];
    const og_ml_io *io = og_ml_io_bound(k, x->dtype, p->double_out);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    double b[256]; /* a block of x in float64, scaled in place */
    for (int64_t i0 = 0; i0 < x->numel; i0 += 256) {
        int64_t m = x->numel - i0 < 256 ? x->numel - i0 : 256;
        io->load(x->data, i0, m, b);
        for (int64_t e = 0; e < m; e++) {
            int64_t i = i0 + e, j = p->n == 1 || f == 0 ? 0 : i % f;
            b[e] = (b[e] - p->offset[j]) * p->scale[j];
        }
        io->store(out[0]->data, i0, m, b);
    }
    return OG_OK;
}

/* Binarizer's loop for x (and y) of C type T: the flat index of the first NaN, or -1. */
#define BIN_LOOP(NAME, T)                                                                          \
    static int64_t NAME(const void *xv, void *yv, int64_t n, double threshold)                     \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            double v = (double)x[i];                                                               \
            if (isnan(v)) return i;                                                                \
            y[i] = (T)(v > threshold);                                                             \
        }                                                                                          \
        return -1;                                                                                 \
    }
BIN_LOOP(bin_f32, float)
BIN_LOOP(bin_f64, double)
BIN_LOOP(bin_i64, int64_t)
BIN_LOOP(bin_i32, int32_t)

typedef struct bin_loops {
    int64_t (*fn)(const void *x, void *y, int64_t n, double threshold);
} bin_loops;
static const bin_loops bin_t[4] = {{bin_f32}, {bin_f64}, {bin_i64}, {bin_i32}};

static const void *select_binarizer(const og_node *n, og_dtype t)
{
    (void)n;
    return t == OG_FLOAT    ? &bin_t[0]
           : t == OG_DOUBLE ? &bin_t[1]
           : t == OG_INT64  ? &bin_t[2]
           : t == OG_INT32  ? &bin_t[3]
                            : NULL;
}

static og_status k_binarizer(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_binarizer_params *p = k->params;
    const og_tensor *x = in[0];
    const bin_loops *l = k->impl ? k->impl : select_binarizer(k->node, x->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    int64_t i = l->fn(x->data, out[0]->data, x->numel, (double)p->threshold);
    if (i >= 0)
        return og_kernel_error(k, OG_ERR_RUNTIME, "input X holds NaN at flat index %lld",
                               (long long)i);
    return OG_OK;
}

static og_status k_imputer(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_imputer_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    int64_t f = x->rank == 1 ? x->dims[0] : x->dims[1];
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t j = p->n_imp == f && f ? i % f : 0;
        if (p->ints) {
            int64_t v = x->dtype == OG_INT64 ? ((const int64_t *)x->data)[i]
                                             : ((const int32_t *)x->data)[i];
            if (v == p->rep_i) v = p->imp_i[j];
            if (y->dtype == OG_INT64)
                ((int64_t *)y->data)[i] = v;
            else
                ((int32_t *)y->data)[i] = (int32_t)v;
        } else {
            double v = get(x, i), r = p->rep_f;
            bool hit = isnan(r) ? isnan(v) : v == r;
            put(y, i, hit ? p->imp_f[j] : v);
        }
    }
    return OG_OK;
}

/* ---- OneHotEncoder ------------------------------------------------------------------ */

static og_status k_onehot(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_onehot_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    int64_t nc = p->n_cats;
    memset(y->data, 0, (size_t)y->numel * og_dtype_size(y->dtype));
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t hit = -1;
        if (p->strings) {
            const char *s = og_tensor_str(x, i);
            for (int64_t c = 0; c < nc && hit < 0; c++)
                if (strcmp(s, p->cats_s[c]) == 0) hit = c;
        } else {
            /* numbers are cast to int64 first, as onnxruntime does */
            double v = get(x, i);
            int64_t iv = x->dtype == OG_INT64 ? ((const int64_t *)x->data)[i]
                         : fabs(v) < 9.2e18   ? (int64_t)v
                                              : INT64_MIN;
            for (int64_t c = 0; c < nc && hit < 0; c++)
                if (p->cats_i[c] == iv) hit = c;
        }
        if (hit >= 0)
            put(y, i * nc + hit, 1.0);
        else if (!p->zeros)
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "element %lld of X is no category, and 'zeros' is 0",
                                   (long long)i);
    }
    return OG_OK;
}

/* ---- LabelEncoder, CategoryMapper ---------------------------------------------------- */

/* Whether key i of `keys` equals element j of x (same dtype): strings by content, floats
 * as numbers (every NaN equal when nan_equal), integers by value. */
static bool key_equal(const og_tensor *keys, int64_t i, const og_tensor *x, int64_t j,
                      bool nan_equal)
{
    switch (x->dtype) {
    case OG_STRING: return strcmp(og_tensor_str(keys, i), og_tensor_str(x, j)) == 0;
    case OG_FLOAT:
    case OG_DOUBLE: {
        double a = get(keys, i), b = get(x, j);
        return a == b || (nan_equal && isnan(a) && isnan(b));
    }
    default: return og_tensor_get_i64(keys, i) == og_tensor_get_i64(x, j);
    }
}

/* y[j] = src[i] (same dtype). */
static og_status copy_elem(og_tensor *y, int64_t j, const og_tensor *src, int64_t i)
{
    if (y->dtype == OG_STRING) {
        const char *s = og_tensor_str(src, i);
        return og_tensor_set_str(y, j, s, strlen(s));
    }
    size_t es = og_dtype_size(y->dtype);
    memcpy((char *)y->data + (size_t)j * es, (const char *)src->data + (size_t)i * es, es);
    return OG_OK;
}

/* A hash of element i of a string or number tensor, for the lookup table. */
static uint64_t elem_hash(const og_tensor *t, int64_t i)
{
    uint64_t h = 1469598103934665603ull;
    if (t->dtype == OG_STRING) {
        for (const char *s = og_tensor_str(t, i); *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h;
    }
    if (t->dtype == OG_FLOAT || t->dtype == OG_DOUBLE) {
        double v = get(t, i);
        if (isnan(v)) return 7;
        if (v == 0) v = 0; /* -0 and 0 are one key */
        uint64_t b;
        memcpy(&b, &v, sizeof b);
        return (b ^ (b >> 29)) * 1099511628211ull;
    }
    uint64_t b = (uint64_t)og_tensor_get_i64(t, i);
    return (b ^ (b >> 29)) * 1099511628211ull;
}

static og_status k_lookup(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_lookup_params *p = k->params;
    const og_tensor *x = in[0], *keys = p->keys, *vals = p->values, *def = p->def;
    if (p->rkeys && x->dtype == p->rkeys->dtype && x->dtype != p->keys->dtype) {
        keys = p->rkeys;
        vals = p->rvalues;
        def = p->rdef;
    }
    og_tensor *y = out[0];
    /* an open-addressing table of key indices (+1), twice the keys */
    int64_t nk = keys->numel;
    size_t cap = 16;
    while (cap < (size_t)nk * 2) cap *= 2;
    int64_t *slots = og_calloc(k->alloc, cap, sizeof *slots);
    if (!slots) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < nk; i++) {
        size_t s = elem_hash(keys, i) & (cap - 1);
        while (slots[s] && !key_equal(keys, slots[s] - 1, keys, i, true)) s = (s + 1) & (cap - 1);
        if (!slots[s] || !p->first_wins) slots[s] = i + 1;
    }
    og_status st = OG_OK;
    for (int64_t j = 0; !st && j < x->numel; j++) {
        size_t s = elem_hash(x, j) & (cap - 1);
        while (slots[s] && !key_equal(keys, slots[s] - 1, x, j, p->nan_equal))
            s = (s + 1) & (cap - 1);
        st = slots[s] ? copy_elem(y, j, vals, slots[s] - 1) : copy_elem(y, j, def, 0);
    }
    og_free(k->alloc, slots);
    return st;
}

/* ---- FeatureVectorizer -------------------------------------------------------------- */

static og_status k_featvec(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_featvec_params *p = k->params;
    og_tensor *y = out[0];
    int64_t n = y->dims[0], off = 0;
    memset(y->data, 0, (size_t)y->numel * og_dtype_size(y->dtype));
    for (int i = 0; i < n_in; i++) {
        const og_tensor *x = in[i];
        int64_t cols = x->rank == 1 ? x->dims[0] : x->numel / (x->dims[0] ? x->dims[0] : 1);
        int64_t take = cols < p->dims[i] ? cols : p->dims[i]; /* extra columns are dropped */
        for (int64_t r = 0; r < n; r++)
            for (int64_t j = 0; j < take; j++) put(y, r * p->total + off + j, get(x, r * cols + j));
        off += p->dims[i];
    }
    return OG_OK;
}

/* The ops that compute in float64 between a bound load and store (og_ml_io): x's dtype
 * and the node's float64 output flag. */
static const void *select_linear(const og_node *n, og_dtype t)
{
    return og_ml_io_of(t, ((const og_linear_params *)n->params)->double_out);
}
static const void *select_normalizer(const og_node *n, og_dtype t)
{
    return og_ml_io_of(t, ((const og_normalizer_params *)n->params)->double_out);
}
static const void *select_scaler(const og_node *n, og_dtype t)
{
    return og_ml_io_of(t, ((const og_scaler_params *)n->params)->double_out);
}

static const og_dtype numeric[] = {OG_FLOAT, OG_DOUBLE, OG_INT64, OG_INT32, OG_UNDEFINED};
static const og_dtype float_only[] = {OG_FLOAT, OG_DOUBLE, OG_UNDEFINED};

const og_kernel_def og_cpu_ml[] = {
    {.name = "LinearRegressor",
     .domain = "ai.onnx.ml",
     .fn = k_linear,
     .types = numeric,
     .select = select_linear},
    {.name = "LinearClassifier",
     .domain = "ai.onnx.ml",
     .fn = k_linear,
     .types = numeric,
     .select = select_linear},
    {.name = "ArrayFeatureExtractor", .domain = "ai.onnx.ml", .fn = k_afe, .strings = 1},
    {.name = "ZipMap", .domain = "ai.onnx.ml", .fn = k_zipmap, .types = float_only},
    {.name = "Normalizer",
     .domain = "ai.onnx.ml",
     .fn = k_normalizer,
     .types = numeric,
     .select = select_normalizer},
    {.name = "Scaler",
     .domain = "ai.onnx.ml",
     .fn = k_scaler,
     .types = numeric,
     .select = select_scaler},
    {.name = "Binarizer",
     .domain = "ai.onnx.ml",
     .fn = k_binarizer,
     .types = numeric,
     .select = select_binarizer},
    {.name = "Imputer", .domain = "ai.onnx.ml", .fn = k_imputer, .types = numeric},
    {.name = "OneHotEncoder", .domain = "ai.onnx.ml", .fn = k_onehot, .strings = 1},
    {.name = "LabelEncoder", .domain = "ai.onnx.ml", .fn = k_lookup, .strings = 1},
    {.name = "CategoryMapper", .domain = "ai.onnx.ml", .fn = k_lookup, .strings = 1},
    {.name = "FeatureVectorizer", .domain = "ai.onnx.ml", .fn = k_featvec, .types = numeric},
    {.name = "TreeEnsembleRegressor",
     .domain = "ai.onnx.ml",
     .fn = og_ml_tree_kernel,
     .types = numeric,
     .select = og_ml_tree_select},
    {.name = "TreeEnsembleClassifier",
     .domain = "ai.onnx.ml",
     .fn = og_ml_tree_kernel,
     .types = numeric,
     .select = og_ml_tree_select},
    {.name = "TreeEnsemble",
     .domain = "ai.onnx.ml",
     .fn = og_ml_tree_kernel,
     .types = float_only,
     .select = og_ml_tree_select},
    {.name = NULL}};
