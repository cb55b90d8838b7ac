/* quant.c: CPU kernels of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
 *
 * Each element finds its scale (and zero point) through the layout of src/ops/quant.h: x is
 * walked as [outer, D, inner] around the axis.  Arithmetic follows the spec's reference: in
 * float32 for float32 (and 16-bit) scales, in float64 for float64 ones, x / scale rounded to
 * nearest even, then the zero point added and the result saturated to the type's range. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/quant.h"

static og_op_ctx op_ctx_of(const og_kernel_ctx *k)
{
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    return c;
}

/* Element i of a float or integer tensor as double (16-bit floats decoded). */
static inline double get(const og_tensor *t, int64_t i) { return og_tensor_get_f64(t, i); }

static void put_float(og_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case OG_FLOAT: ((float *)t->data)[i] = (float)v; break;
    case OG_DOUBLE: ((double *)t->data)[i] = v; break;
    case OG_FLOAT16: ((uint16_t *)t->data)[i] = og_float_to_half((float)v); break;
    case OG_BFLOAT16: ((uint16_t *)t->data)[i] = og_float_to_bfloat16((float)v); break;
    default: break;
    }
}

/* The scale element of x's element i. */
static inline int64_t scale_index(const og_quant_geom *g, int64_t i)
{
    switch (g->layout) {
    case OG_QUANT_AXIS: return (i / g->inner) % g->D;
    case OG_QUANT_BLOCKED: {
        int64_t in = i % g->inner, d = (i / g->inner) % g->D, o = i / (g->inner * g->D);
        return (o * g->nb + d / g->block) * g->inner + in;
    }
    default: return 0;
    }
}

static og_status setup(const og_kernel_ctx *k, const og_tensor *x, const og_tensor *s,
                       const og_tensor *z, og_quant_geom *g)
{
    og_op_ctx c = op_ctx_of(k);
    og_status st = og_quant_geometry(&c, k->params, x->rank, x->dims, s->rank, s->dims, g);
    if (st) return st;
    if (z && z->numel != s->numel)
        return og_kernel_error(k, OG_ERR_SHAPE, "the zero point has %lld elements, the scale %lld",
                               (long long)z->numel, (long long)s->numel);
    return OG_OK;
}

/* The scale and zero point as doubles (zp NULL: zeros): small (a scalar, an axis, or x over a
 * block), read once so that the element loops stay typed. */
static og_status params_f64(const og_kernel_ctx *k, const og_tensor *s, const og_tensor *z,
                            double **out)
{
    double *v = og_malloc(k->alloc, (size_t)(2 * (s->numel ? s->numel : 1)) * sizeof *v);
    if (!v) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < s->numel; i++) {
        v[i] = get(s, i);
        v[s->numel + i] = z ? get(z, i) : 0;
    }
    *out = v;
    return OG_OK;
}

/* QuantizeLinear's loop for x of C type TX into y of C type TY: float32 arithmetic (the
 * reference's, for float and 16-bit scales) or float64 (double scales) */
#define Q_LOOP(NAME, TX, TY)                                                                       \
    static void NAME(const og_quant_geom *g, const void *xv, void *yv, int64_t n, const double *s, \
                     const double *z, bool f32, double qmin, double qmax)                          \
    {                                                                                              \
        const TX *x = xv;                                                                          \
        TY *y = yv;                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t q = scale_index(g, i);                                                         \
            double v = f32 ? (double)nearbyintf((float)x[i] / (float)s[q])                         \
                           : nearbyint((double)x[i] / s[q]);                                       \
            v += z[q];                                                                             \
            y[i] = (TY)(v != v ? 0 : v < qmin ? qmin : v > qmax ? qmax : v);                       \
        }                                                                                          \
    }
#define Q_LOOPS(X, TX)                                                                             \
    Q_LOOP(q_##X##_i8, TX, int8_t)                                                                 \
    Q_LOOP(q_##X##_u8, TX, uint8_t)                                                                \
    Q_LOOP(q_##X##_i16, TX, int16_t)                                                               \
    Q_LOOP(q_##X##_u16, TX, uint16_t)
Q_LOOPS(f32, float)
Q_LOOPS(f64, double)
Q_LOOPS(i32, int32_t)

typedef void (*q_fn)(const og_quant_geom *, const void *, void *, int64_t, const double *,
                     const double *, bool, double, double);

static q_fn q_pick(og_dtype x, og_dtype y)
{
    static const q_fn t[3][4] = {{q_f32_i8, q_f32_u8, q_f32_i16, q_f32_u16},
                                 {q_f64_i8, q_f64_u8, q_f64_i16, q_f64_u16},
                                 {q_i32_i8, q_i32_u8, q_i32_i16, q_i32_u16}};
    int i = x == OG_FLOAT ? 0 : x == OG_DOUBLE ? 1 : x == OG_INT32 ? 2 : -1;
    /* int4 and uint4 are held one a byte (onnxgrad.h): the 8-bit loops with their ranges */
    int j = y == OG_INT8 || y == OG_INT4     ? 0
            : y == OG_UINT8 || y == OG_UINT4 ? 1
            : y == OG_INT16                  ? 2
            : y == OG_UINT16                 ? 3
                                             : -1;
    return i < 0 || j < 0 ? NULL : t[i][j];
}

/* To an 8-bit float: y = float8(x / scale + zero_point), rounded once to the nearest code
 * (ties to even; saturate as Cast's), x / scale in float32 for float and 16-bit scales as the
 * reference, in float64 for double ones.  The spec's zero point of a float8 type is 0 in
 * practice; it is added all the same. */
static void q_float8(const og_quant_geom *g, const og_tensor *x, og_tensor *y, const double *s,
                     const double *z, bool f32, bool saturate)
{
    uint8_t *d = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = scale_index(g, i);
        double v = f32 ? (double)((float)get(x, i) / (float)s[q]) : get(x, i) / s[q];
        d[i] = og_double_to_float8(z[q] != 0 ? v + z[q] : v, y->dtype, saturate); /* -0 stays */
    }
}

/* y = saturate(round(x / scale) + zero_point) */
static og_status quantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                 og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *s = in[1], *z = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    og_quant_geom g;
    double qmin, qmax, *sz = NULL;
    if (og_is_half(x->dtype)) { /* a float16 x: its values are floats */
        og_tensor *xf = NULL;
        og_status st = og_tensor_alloc(OG_FLOAT, x->rank, x->dims, k->alloc, &xf);
        if (st) return st;
        for (int64_t i = 0; i < x->numel; i++) ((float *)xf->data)[i] = (float)get(x, i);
        const og_tensor *ins[3] = {xf, s, z};
        st = quantize_kernel(k, ins, n_in, out, n_out);
        og_tensor_free(xf);
        return st;
    }
    const og_quant_params *p = k->params;
    if (og_dtype_is_float8(y->dtype) && (og_dtype_is_float(x->dtype) || x->dtype == OG_INT32)) {
        og_status st = setup(k, x, s, z, &g);
        if (!st) st = params_f64(k, s, z, &sz);
        if (st) return st;
        q_float8(&g, x, y, sz, sz + s->numel, s->dtype != OG_DOUBLE, p->saturate);
        og_free(k->alloc, sz);
        return OG_OK;
    }
    q_fn fn = q_pick(x->dtype, y->dtype);
    if (!fn || !og_quant_range(y->dtype, &qmin, &qmax))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "quantizing %s to %s is not supported",
                               og_dtype_name(x->dtype), og_dtype_name(y->dtype));
    og_status st = setup(k, x, s, z, &g);
    if (!st) st = params_f64(k, s, z, &sz);
    if (st) return st;
    fn(&g, x->data, y->data, x->numel, sz, sz + s->numel, s->dtype != OG_DOUBLE, qmin, qmax);
    og_free(k->alloc, sz);
    return OG_OK;
}

/* DequantizeLinear's loop for x of C type TX into y of C type TY (float32 or float64) */
#define DQ_LOOP(NAME, TX, TY)                                                                      \
    static void NAME(const og_quant_geom *g, const void *xv, void *yv, int64_t n, const double *s, \
                     const double *z)                                                              \
    {                                                                                              \
        const TX *x = xv;                                                                          \
        TY *y = yv;                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t q = scale_index(g, i);                                                         \
            y[i] = (TY)(((TY)x[i] - (TY)z[q]) * (TY)s[q]);                                         \
        }                                                                                          \
    }
#define DQ_LOOPS(X, TX)                                                                            \
    DQ_LOOP(dq_##X##_f32, TX, float)                                                               \
    DQ_LOOP(dq_##X##_f64, TX, double)
DQ_LOOPS(i8, int8_t)
DQ_LOOPS(u8, uint8_t)
DQ_LOOPS(i16, int16_t)
DQ_LOOPS(u16, uint16_t)
DQ_LOOPS(i32, int32_t)

typedef void (*dq_fn)(const og_quant_geom *, const void *, void *, int64_t, const double *,
                      const double *);

static dq_fn dq_pick(og_dtype x, og_dtype y)
{
    static const dq_fn t[5][2] = {{dq_i8_f32, dq_i8_f64},
                                  {dq_u8_f32, dq_u8_f64},
                                  {dq_i16_f32, dq_i16_f64},
                                  {dq_u16_f32, dq_u16_f64},
                                  {dq_i32_f32, dq_i32_f64}};
    int i = x == OG_INT8 || x == OG_INT4     ? 0
            : x == OG_UINT8 || x == OG_UINT4 ? 1
            : x == OG_INT16                  ? 2
            : x == OG_UINT16                 ? 3
            : x == OG_INT32                  ? 4
                                             : -1;
    int j = y == OG_FLOAT ? 0 : y == OG_DOUBLE ? 1 : -1;
    return i < 0 || j < 0 ? NULL : t[i][j];
}

/* From an 8-bit float: y = (x − zero_point)·scale, x and the zero point decoded exactly,
 * the arithmetic in y's type (float or double). */
static void dq_float8(const og_quant_geom *g, const og_tensor *x, og_tensor *y, const double *s,
                      const double *z)
{
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = scale_index(g, i);
        if (y->dtype == OG_DOUBLE)
            ((double *)y->data)[i] = (get(x, i) - z[q]) * s[q];
        else
            ((float *)y->data)[i] = ((float)get(x, i) - (float)z[q]) * (float)s[q];
    }
}

/* y = (x − zero_point)·scale */
static og_status dequantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                   og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *s = in[1], *z = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    if (og_is_half(y->dtype)) return og_kernel_via_f32(k, dequantize_kernel, in, n_in, out, n_out);
    dq_fn fn = dq_pick(x->dtype, y->dtype);
    bool f8 = og_dtype_is_float8(x->dtype) && (y->dtype == OG_FLOAT || y->dtype == OG_DOUBLE);
    if (!fn && !f8)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "dequantizing %s to %s is not supported",
                               og_dtype_name(x->dtype), og_dtype_name(y->dtype));
    og_quant_geom g;
    double *sz = NULL;
    og_status st = setup(k, x, s, z, &g);
    if (!st) st = params_f64(k, s, z, &sz);
    if (st) return st;
    if (f8)
        dq_float8(&g, x, y, sz, sz + s->numel);
    else
        fn(&g, x->data, y->data, x->numel, sz, sz + s->numel);
    og_free(k->alloc, sz);
    (void)n_out;
    return OG_OK;
}

/* uint8 with the scale and zero point that map [min(0, min x), max(0, max x)] onto [0, 255]:
 * scale = (max − min)/255 (1 when both are 0, as onnxruntime; the reference evaluator's
 * parenthesis gives 1/255), zero point = saturate(round(−min/scale)), y = saturate(round(x /
 * scale) + zero point) */
static og_status dynamic_quantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in,
                                         int n_in, og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = get(x, i);
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    float scale = hi == lo ? 1.0f : ((float)hi - (float)lo) / 255.0f;
    float izp = 0.0f - (float)lo / scale;
    float zp = nearbyintf(izp < 0 ? 0 : izp > 255 ? 255 : izp);
    for (int64_t i = 0; i < x->numel; i++) {
        float v = nearbyintf((float)get(x, i) / scale) + zp;
        ((uint8_t *)out[0]->data)[i] = (uint8_t)(v != v ? 0 : v < 0 ? 0 : v > 255 ? 255 : v);
    }
    if (n_out > 1 && out[1]) put_float(out[1], 0, scale);
    if (n_out > 2 && out[2]) ((uint8_t *)out[2]->data)[0] = (uint8_t)zp;
    (void)n_in;
    (void)k;
    return OG_OK;
}

const og_kernel_def og_cpu_quant[] = {
    {.name = "QuantizeLinear", .domain = "", .fn = quantize_kernel},
    {.name = "DequantizeLinear", .domain = "", .fn = dequantize_kernel},
    {.name = "DynamicQuantizeLinear", .domain = "", .fn = dynamic_quantize_kernel},
    {.name = NULL}};
