/* ml.c: CPU kernels of the ai.onnx.ml ops (what each computes: src/ops/ml_params.h).  The
 * tree ensembles are in ml_tree.c.  Scores are computed in float64 and stored in the
 * output's dtype; the post transforms follow onnxruntime's formulas (ml_post_row). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "kernels/cpu/ml.h"
#include "ops/ml_params.h"

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
    const og_ml_io *io = og_ml_io_bound(k, x->dtype, p->double_out);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    og_status st =
        p->strings ? og_tensor_from_strings(1, &c, (const char *const *)p->keys_s, k->alloc, &keys)
                   : og_tensor_from_data(OG_INT64, 1, &c, p->keys_i, (size_t)c * sizeof(int64_t),
                                         k->alloc, &keys);
    /* the values: one copy of X in the output's float type (the bound og_ml_io), each
     * map's scalars views into it */
    int64_t total = n * c;
    if (!st) st = og_tensor_alloc(vd, 1, &total, k->alloc, &vals);
    double b[256];
    for (int64_t i0 = 0; !st && i0 < total; i0 += 256) {
        int64_t m = total - i0 < 256 ? total - i0 : 256;
        io->load(x->data, i0, m, b);
        io->store(vals->data, i0, m, b);
    }
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

/* Imputer's loop for x and y of C type T: a float x compares as a double with the
 * replaced float (NaN matching NaN) and takes the imputed float, an integer x compares
 * with the replaced int64 and takes the imputed int64, both converted to T. */
#define IMP_LOOP(NAME, T, IS_FLOAT)                                                                \
    static void NAME(const void *xv, void *yv, int64_t n, int64_t f, const og_imputer_params *p)   \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        bool per_col = p->n_imp == f && f;                                                         \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t j = per_col ? i % f : 0;                                                       \
            if (IS_FLOAT) {                                                                        \
                double v = (double)x[i], r = p->rep_f;                                             \
                bool hit = isnan(r) ? isnan(v) : v == r;                                           \
                y[i] = hit ? (T)p->imp_f[j] : x[i];                                                \
            } else {                                                                               \
                int64_t v = (int64_t)x[i];                                                         \
                y[i] = (T)(v == p->rep_i ? p->imp_i[j] : v);                                       \
            }                                                                                      \
        }                                                                                          \
    }
IMP_LOOP(imp_f32, float, 1)
IMP_LOOP(imp_f64, double, 1)
IMP_LOOP(imp_i64, int64_t, 0)
IMP_LOOP(imp_i32, int32_t, 0)

typedef struct imp_loops {
    void (*fn)(const void *x, void *y, int64_t n, int64_t f, const og_imputer_params *p);
    bool floats; /* reads imputed and replaced floats (else int64s) */
} imp_loops;
static const imp_loops imp_t[4] = {
    {imp_f32, true}, {imp_f64, true}, {imp_i64, false}, {imp_i32, false}};

/* x's loop (y has x's dtype): float x for imputed floats, integer x for imputed int64s */
static const void *select_imputer(const og_node *n, og_dtype t)
{
    const imp_loops *l = t == OG_FLOAT    ? &imp_t[0]
                         : t == OG_DOUBLE ? &imp_t[1]
                         : t == OG_INT64  ? &imp_t[2]
                         : t == OG_INT32  ? &imp_t[3]
                                          : NULL;
    return l && l->floats != ((const og_imputer_params *)n->params)->ints ? l : NULL;
}

static og_status k_imputer(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_imputer_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const imp_loops *l = k->impl ? k->impl : select_imputer(k->node, x->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    if (p->ints == l->floats) /* inference checks it */
        return og_kernel_error(k, OG_ERR_TYPE, "input X is %s but the imputed values are %s",
                               og_dtype_name(x->dtype), p->ints ? "int64s" : "floats");
    int64_t f = x->rank == 1 ? x->dims[0] : x->dims[1];
    l->fn(x->data, y->data, x->numel, f, p);
    return OG_OK;
}

/* ---- OneHotEncoder ------------------------------------------------------------------ */

/* OneHotEncoder's loops: the int64 keys of n numbers of x from element off (an int64 as it
 * is, the others cast as onnxruntime does: through double, those out of int64's range or
 * NaN to INT64_MIN; NULL for strings), and a 1 written at element i of y (float32 or
 * float64). */
#define OH_KEYS(NAME, T)                                                                           \
    static void NAME(const void *xv, int64_t off, int64_t n, int64_t *key)                         \
    {                                                                                              \
        const T *x = (const T *)xv + off;                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            double v = (double)x[i];                                                               \
            key[i] = fabs(v) < 9.2e18 ? (int64_t)v : INT64_MIN;                                    \
        }                                                                                          \
    }
OH_KEYS(oh_keys_f32, float)
OH_KEYS(oh_keys_f64, double)
OH_KEYS(oh_keys_i32, int32_t)

static void oh_keys_i64(const void *xv, int64_t off, int64_t n, int64_t *key)
{
    memcpy(key, (const int64_t *)xv + off, (size_t)n * sizeof *key);
}

static void oh_one_f32(void *y, int64_t i) { ((float *)y)[i] = 1.0f; }
static void oh_one_f64(void *y, int64_t i) { ((double *)y)[i] = 1.0; }

typedef struct oh_loops {
    void (*keys)(const void *x, int64_t off, int64_t n, int64_t *key); /* NULL: strings */
    void (*one)(void *y, int64_t i);
} oh_loops;
/* [x: string, float32, float64, int64, int32][output float32, float64] */
static const oh_loops oh_t[5][2] = {{{NULL, oh_one_f32}, {NULL, oh_one_f64}},
                                    {{oh_keys_f32, oh_one_f32}, {oh_keys_f32, oh_one_f64}},
                                    {{oh_keys_f64, oh_one_f32}, {oh_keys_f64, oh_one_f64}},
                                    {{oh_keys_i64, oh_one_f32}, {oh_keys_i64, oh_one_f64}},
                                    {{oh_keys_i32, oh_one_f32}, {oh_keys_i32, oh_one_f64}}};

/* x's loops (strings for string categories, numbers for int64 ones) and the output's
 * (float64 when the node declares it) */
static const void *select_onehot(const og_node *n, og_dtype t)
{
    if ((t == OG_STRING) != ((const og_onehot_params *)n->params)->strings) return NULL;
    int i = t == OG_STRING   ? 0
            : t == OG_FLOAT  ? 1
            : t == OG_DOUBLE ? 2
            : t == OG_INT64  ? 3
            : t == OG_INT32  ? 4
                             : -1;
    return i < 0 ? NULL : &oh_t[i][((const og_onehot_params *)n->params)->double_out];
}

static og_status k_onehot(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_onehot_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const oh_loops *l = k->impl ? k->impl : select_onehot(k->node, x->dtype);
    if (!l || (p->strings != (l->keys == NULL)))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    int64_t nc = p->n_cats;
    memset(y->data, 0, (size_t)y->numel * og_dtype_size(y->dtype));
    int64_t key[256]; /* a block of x's keys */
    for (int64_t i0 = 0; i0 < x->numel; i0 += 256) {
        int64_t m = x->numel - i0 < 256 ? x->numel - i0 : 256;
        if (l->keys) l->keys(x->data, i0, m, key);
        for (int64_t e = 0; e < m; e++) {
            int64_t i = i0 + e, hit = -1;
            if (!l->keys) {
                const char *s = og_tensor_str(x, i);
                for (int64_t c = 0; c < nc && hit < 0; c++)
                    if (strcmp(s, p->cats_s[c]) == 0) hit = c;
            } else {
                for (int64_t c = 0; c < nc && hit < 0; c++)
                    if (p->cats_i[c] == key[e]) hit = c;
            }
            if (hit >= 0)
                l->one(y->data, i * nc + hit);
            else if (!p->zeros)
                return og_kernel_error(k, OG_ERR_RUNTIME,
                                       "element %lld of X is no category, and 'zeros' is 0",
                                       (long long)i);
        }
    }
    return OG_OK;
}

/* ---- LabelEncoder, CategoryMapper ---------------------------------------------------- */

/* The loops of a lookup, bound to the keys' dtype (x's) and the values' (y's): hash gives
 * element i of a tensor of the keys' dtype its slot hash, equal compares key i with
 * element j of x (strings by content, floats as numbers, every NaN equal when nan_equal,
 * integers by value), copy writes value i of src at element j of y. */
typedef struct lookup_loops {
    uint64_t (*hash)(const og_tensor *t, int64_t i);
    bool (*equal)(const og_tensor *keys, int64_t i, const og_tensor *x, int64_t j, bool nan_equal);
    og_status (*copy)(og_tensor *y, int64_t j, const og_tensor *src, int64_t i);
} lookup_loops;

static uint64_t mix(uint64_t b) { return (b ^ (b >> 29)) * 1099511628211ull; }

static uint64_t hash_str(const og_tensor *t, int64_t i)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = og_tensor_str(t, i); *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool equal_str(const og_tensor *keys, int64_t i, const og_tensor *x, int64_t j, bool nan_eq)
{
    (void)nan_eq;
    return strcmp(og_tensor_str(keys, i), og_tensor_str(x, j)) == 0;
}

static og_status copy_str(og_tensor *y, int64_t j, const og_tensor *src, int64_t i)
{
    const char *s = og_tensor_str(src, i);
    return og_tensor_set_str(y, j, s, strlen(s));
}

/* floats hash and compare as doubles: NaN one key, -0 and 0 one key */
#define LOOKUP_FLOAT(S, T)                                                                         \
    static uint64_t hash_##S(const og_tensor *t, int64_t i)                                        \
    {                                                                                              \
        double v = (double)((const T *)t->data)[i];                                                \
        if (isnan(v)) return 7;                                                                    \
        if (v == 0) v = 0;                                                                         \
        uint64_t b;                                                                                \
        memcpy(&b, &v, sizeof b);                                                                  \
        return mix(b);                                                                             \
    }                                                                                              \
    static bool equal_##S(const og_tensor *keys, int64_t i, const og_tensor *x, int64_t j,         \
                          bool nan_eq)                                                             \
    {                                                                                              \
        double a = (double)((const T *)keys->data)[i], b = (double)((const T *)x->data)[j];        \
        return a == b || (nan_eq && isnan(a) && isnan(b));                                         \
    }
LOOKUP_FLOAT(f32, float)
LOOKUP_FLOAT(f64, double)

#define LOOKUP_INT(S, T)                                                                           \
    static uint64_t hash_##S(const og_tensor *t, int64_t i)                                        \
    {                                                                                              \
        return mix((uint64_t)(int64_t)((const T *)t->data)[i]);                                    \
    }                                                                                              \
    static bool equal_##S(const og_tensor *keys, int64_t i, const og_tensor *x, int64_t j,         \
                          bool nan_eq)                                                             \
    {                                                                                              \
        (void)nan_eq;                                                                              \
        return ((const T *)keys->data)[i] == ((const T *)x->data)[j];                              \
    }
LOOKUP_INT(i64, int64_t)
LOOKUP_INT(i32, int32_t)
LOOKUP_INT(i16, int16_t)

/* values move by size (a float's bits as they are) */
#define LOOKUP_COPY(BYTES, U)                                                                      \
    static og_status copy_##BYTES(og_tensor *y, int64_t j, const og_tensor *src, int64_t i)        \
    {                                                                                              \
        ((U *)y->data)[j] = ((const U *)src->data)[i];                                             \
        return OG_OK;                                                                              \
    }
LOOKUP_COPY(8, uint64_t)
LOOKUP_COPY(4, uint32_t)
LOOKUP_COPY(2, uint16_t)

/* The dtypes of LabelEncoder's and CategoryMapper's keys and values (ops/ml.c). */
static const og_dtype lookup_dtypes[6] = {OG_STRING, OG_FLOAT, OG_DOUBLE,
                                          OG_INT64,  OG_INT32, OG_INT16};
#define LOOKUP_ROW(H, E)                                                                           \
    {                                                                                              \
        {H, E, copy_str}, {H, E, copy_4}, {H, E, copy_8}, {H, E, copy_8}, {H, E, copy_4},          \
        {                                                                                          \
            H, E, copy_2                                                                           \
        }                                                                                          \
    }
/* [keys' dtype][values' dtype], in lookup_dtypes' order */
static const lookup_loops lookup_t[6][6] = {
    LOOKUP_ROW(hash_str, equal_str), LOOKUP_ROW(hash_f32, equal_f32),
    LOOKUP_ROW(hash_f64, equal_f64), LOOKUP_ROW(hash_i64, equal_i64),
    LOOKUP_ROW(hash_i32, equal_i32), LOOKUP_ROW(hash_i16, equal_i16)};

static int lookup_index(og_dtype t)
{
    for (int i = 0; i < 6; i++)
        if (lookup_dtypes[i] == t) return i;
    return -1;
}

/* The direction x of dtype t looks up: the reverse one (LabelEncoder 1, CategoryMapper)
 * when t is the reverse keys' dtype and not the keys'. */
static bool lookup_reverse(const og_lookup_params *p, og_dtype t)
{
    return p->rkeys && t == p->rkeys->dtype && t != p->keys->dtype;
}

/* the loops of the direction x's dtype t picks; NULL when t is not its keys' dtype */
static const void *select_lookup(const og_node *n, og_dtype t)
{
    const og_lookup_params *p = n->params;
    bool rev = lookup_reverse(p, t);
    const og_tensor *keys = rev ? p->rkeys : p->keys, *vals = rev ? p->rvalues : p->values;
    int ki = lookup_index(keys->dtype), vi = lookup_index(vals->dtype);
    return t != keys->dtype || ki < 0 || vi < 0 ? NULL : &lookup_t[ki][vi];
}

static og_status k_lookup(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    const og_lookup_params *p = k->params;
    const og_tensor *x = in[0], *keys = p->keys, *vals = p->values, *def = p->def;
    if (lookup_reverse(p, x->dtype)) {
        keys = p->rkeys;
        vals = p->rvalues;
        def = p->rdef;
    }
    const lookup_loops *l = k->impl ? k->impl : select_lookup(k->node, x->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(x->dtype));
    og_tensor *y = out[0];
    /* an open-addressing table of key indices (+1), twice the keys */
    int64_t nk = keys->numel;
    size_t cap = 16;
    while (cap < (size_t)nk * 2) cap *= 2;
    int64_t *slots = og_calloc(k->alloc, cap, sizeof *slots);
    if (!slots) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < nk; i++) {
        size_t s = l->hash(keys, i) & (cap - 1);
        while (slots[s] && !l->equal(keys, slots[s] - 1, keys, i, true)) s = (s + 1) & (cap - 1);
        if (!slots[s] || !p->first_wins) slots[s] = i + 1;
    }
    og_status st = OG_OK;
    for (int64_t j = 0; !st && j < x->numel; j++) {
        size_t s = l->hash(x, j) & (cap - 1);
        while (slots[s] && !l->equal(keys, slots[s] - 1, x, j, p->nan_equal))
            s = (s + 1) & (cap - 1);
        st = slots[s] ? l->copy(y, j, vals, slots[s] - 1) : l->copy(y, j, def, 0);
    }
    og_free(k->alloc, slots);
    return st;
}

/* ---- FeatureVectorizer -------------------------------------------------------------- */

/* The inputs' rows through og_ml_io loads into float64 and the output's store: input 0's
 * loads are bound (its dtype and the float64 output flag), the other inputs' are picked
 * once per input and call (they may each have another dtype), never per element. */
static og_status k_featvec(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_featvec_params *p = k->params;
    og_tensor *y = out[0];
    int64_t n = y->dims[0], off = 0, most = 1;
    for (int i = 0; i < n_in; i++) most = p->dims[i] > most ? p->dims[i] : most;
    double *row = og_malloc(k->alloc, (size_t)most * sizeof *row);
    if (!row) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    memset(y->data, 0, (size_t)y->numel * og_dtype_size(y->dtype));
    og_status st = OG_OK;
    for (int i = 0; i < n_in && !st; i++) {
        const og_tensor *x = in[i];
        const og_ml_io *io = i == 0 ? og_ml_io_bound(k, x->dtype, p->double_out)
                                    : og_ml_io_of(x->dtype, p->double_out);
        if (!io) {
            st =
                og_kernel_error(k, OG_ERR_UNSUPPORTED, "input %d: element type %s is not supported",
                                i, og_dtype_name(x->dtype));
            break;
        }
        int64_t cols = x->rank == 1 ? x->dims[0] : x->numel / (x->dims[0] ? x->dims[0] : 1);
        int64_t take = cols < p->dims[i] ? cols : p->dims[i]; /* extra columns are dropped */
        for (int64_t r = 0; r < n && take > 0; r++) {
            io->load(x->data, r * cols, take, row);
            io->store(y->data, r * p->total + off, take, row);
        }
        off += p->dims[i];
    }
    og_free(k->alloc, row);
    return st;
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
static const void *select_zipmap(const og_node *n, og_dtype t)
{
    return t == OG_FLOAT || t == OG_DOUBLE
               ? og_ml_io_of(t, ((const og_zipmap_params *)n->params)->double_out)
               : NULL;
}
static const void *select_featvec(const og_node *n, og_dtype t)
{
    return og_ml_io_of(t, ((const og_featvec_params *)n->params)->double_out);
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
    {.name = "ZipMap",
     .domain = "ai.onnx.ml",
     .fn = k_zipmap,
     .types = float_only,
     .select = select_zipmap},
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
    {.name = "Imputer",
     .domain = "ai.onnx.ml",
     .fn = k_imputer,
     .types = numeric,
     .select = select_imputer},
    {.name = "OneHotEncoder",
     .domain = "ai.onnx.ml",
     .fn = k_onehot,
     .select = select_onehot,
     .strings = 1},
    {.name = "LabelEncoder",
     .domain = "ai.onnx.ml",
     .fn = k_lookup,
     .select = select_lookup,
     .strings = 1},
    {.name = "CategoryMapper",
     .domain = "ai.onnx.ml",
     .fn = k_lookup,
     .select = select_lookup,
     .strings = 1},
    {.name = "FeatureVectorizer",
     .domain = "ai.onnx.ml",
     .fn = k_featvec,
     .types = numeric,
     .select = select_featvec},
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
