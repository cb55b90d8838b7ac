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

/* An int32 x (which onnxruntime does not quantize) follows the reference evaluator's steps:
 * x / scale in float64, rounded half to even, cast to int32 (OG_CVT: the NaN and infinities
 * of a zero scale give INT32_MIN), the zero point added in int32 (wrapping), then saturated
 * (f32 unused: always float64). */
#define Q_LOOP_I32(NAME, TY)                                                                       \
    static void NAME(const og_quant_geom *g, const void *xv, void *yv, int64_t n, const double *s, \
                     const double *z, bool f32, double qmin, double qmax)                          \
    {                                                                                              \
        const int32_t *x = xv;                                                                     \
        TY *y = yv;                                                                                \
        (void)f32;                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t q = scale_index(g, i);                                                         \
            uint32_t xi = (uint32_t)OG_CVT(int32_t, nearbyint((double)x[i] / s[q]));               \
            double v = (double)(int32_t)(xi + (uint32_t)(int32_t)z[q]);                            \
            y[i] = (TY)(v < qmin ? qmin : v > qmax ? qmax : v);                                    \
        }                                                                                          \
    }
Q_LOOP_I32(q_i32_i8, int8_t)
Q_LOOP_I32(q_i32_u8, uint8_t)
Q_LOOP_I32(q_i32_i16, int16_t)
Q_LOOP_I32(q_i32_u16, uint16_t)

typedef void (*q_fn)(const og_quant_geom *, const void *, void *, int64_t, const double *,
                     const double *, bool, double, double);

/* QuantizeLinear's binding: the loop of (x, y), the arithmetic the scale's dtype asks for
 * (f32: float32, else float64), y's range, and whether x is a 16-bit float computed on a
 * float32 copy. */
typedef struct q_bind {
    q_fn fn;
    bool f32, widen;
    double qmin, qmax;
} q_bind;
/* y: int8, uint8, int16, uint16, and int4, uint4 (held one a byte, onnxgrad.h: the 8-bit
 * loops with the 4-bit ranges) */
#define Q_YS(X, F32, W)                                                                            \
    {                                                                                              \
        {q_##X##_i8, F32, W, -128, 127}, {q_##X##_u8, F32, W, 0, 255},                             \
            {q_##X##_i16, F32, W, -32768, 32767}, {q_##X##_u16, F32, W, 0, 65535},                 \
            {q_##X##_i8, F32, W, -8, 7},                                                           \
        {                                                                                          \
            q_##X##_u8, F32, W, 0, 15                                                              \
        }                                                                                          \
    }
/* [x: float32, float64, int32, 16-bit float][scale: not float64, float64][y].  An int32 x
 * divides in float64 whatever the scale's type (an int32 scale, or numpy's promotion of
 * int32 / float32), as the reference evaluator does (Q_LOOP_I32). */
static const q_bind q_binds[4][2][6] = {{Q_YS(f32, true, false), Q_YS(f32, false, false)},
                                        {Q_YS(f64, true, false), Q_YS(f64, false, false)},
                                        {Q_YS(i32, false, false), Q_YS(i32, false, false)},
                                        {Q_YS(f32, true, true), Q_YS(f32, false, true)}};

/* To an 8-bit float: y = float8(x / scale + zero_point), rounded once to the nearest code
 * (ties to even; saturate as Cast's), x / scale in float32 for float and 16-bit scales as the
 * reference, in float64 for double ones and for an int32 x.  The spec's zero point of a float8 type
 * is 0 in practice; it is added all the same (not when 0: -0 stays -0, as the reference). */
static void q_float8(const og_quant_geom *g, const og_tensor *x, og_tensor *y, const double *s,
                     const double *z, bool f32, bool saturate)
{
    uint8_t *d = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = scale_index(g, i);
        double v = f32 ? (double)((float)get(x, i) / (float)s[q]) : get(x, i) / s[q];
        d[i] = og_double_to_float8(z[q] != 0 ? v + z[q] : v, y->dtype, saturate);
    }
}
/* The binding of a float8 y: q_float8, element by element (x of any float type or int32). */
static const q_bind q_float8_bind = {NULL, false, false, 0, 0};

/* The binding for x, scale and y of these dtypes, NULL for none. */
static const q_bind *q_bind_of(og_dtype x, og_dtype s, og_dtype y)
{
    int i = x == OG_FLOAT ? 0 : x == OG_DOUBLE ? 1 : x == OG_INT32 ? 2 : og_is_half(x) ? 3 : -1;
    int j = y == OG_INT8     ? 0
            : y == OG_UINT8  ? 1
            : y == OG_INT16  ? 2
            : y == OG_UINT16 ? 3
            : y == OG_INT4   ? 4
            : y == OG_UINT4  ? 5
                             : -1;
    /* the scale has x's type (T1): a float type, or int32 with an int32 x */
    bool sf = s == OG_FLOAT || s == OG_DOUBLE || og_is_half(s) || (s == OG_INT32 && x == OG_INT32);
    if (i >= 0 && sf && og_dtype_is_float8(y)) return &q_float8_bind;
    return i < 0 || j < 0 || !sf ? NULL : &q_binds[i][s == OG_DOUBLE][j];
}

/* Two type variables: the loop depends on x's dtype, the scale's (the arithmetic) and y's,
 * which is the zero point's (or output_dtype, or uint8).  A dtype not known before the run
 * leaves the choice to the kernel. */
static const void *select_quantize(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    const og_quant_params *p = n->params;
    bool has_zp = n->n_in > 2 && n->in[2] >= 0;
    og_dtype y = has_zp ? t[2] : p->output_dtype != OG_UNDEFINED ? p->output_dtype : OG_UINT8;
    if (n->n_in < 2 || t[1] == OG_UNDEFINED || y == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    return q_bind_of(t[0], t[1], y);
}

/* y = saturate(round(x / scale) + zero_point) */
static og_status quantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                 og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *s = in[1], *z = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0], *xf = NULL;
    og_quant_geom g;
    double *sz = NULL;
    /* k->impl: bound at session creation; without a binding, picked here */
    const q_bind *b = k->impl ? k->impl : q_bind_of(x->dtype, s->dtype, y->dtype);
    if (!b)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "quantizing %s to %s is not supported",
                               og_dtype_name(x->dtype), og_dtype_name(y->dtype));
    const void *xd = x->data;
    og_status st;
    if (b == &q_float8_bind) {
        const og_quant_params *p = k->params;
        st = setup(k, x, s, z, &g);
        if (!st) st = params_f64(k, s, z, &sz);
        if (!st)
            q_float8(&g, x, y, sz, sz + s->numel, s->dtype != OG_DOUBLE && x->dtype != OG_INT32,
                     p->saturate);
        og_free(k->alloc, sz);
        return st;
    }
    if (b->widen) { /* a 16-bit float x: its values are floats */
        if ((st = og_tensor_alloc(OG_FLOAT, x->rank, x->dims, k->alloc, &xf))) return st;
        for (int64_t i = 0; i < x->numel; i++) ((float *)xf->data)[i] = (float)get(x, i);
        xd = xf->data;
    }
    st = setup(k, x, s, z, &g);
    if (!st) st = params_f64(k, s, z, &sz);
    if (!st) b->fn(&g, xd, y->data, x->numel, sz, sz + s->numel, b->f32, b->qmin, b->qmax);
    og_free(k->alloc, sz);
    og_tensor_free(xf);
    (void)n_out;
    return st;
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

/* From an 8-bit float of dtype DT: its code decoded exactly, then as the integer loops */
#define DQ_F8_LOOP(NAME, DT, TY)                                                                   \
    static void NAME(const og_quant_geom *g, const void *xv, void *yv, int64_t n, const double *s, \
                     const double *z)                                                              \
    {                                                                                              \
        const uint8_t *x = xv;                                                                     \
        TY *y = yv;                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t q = scale_index(g, i);                                                         \
            y[i] = (TY)(((TY)og_float8_to_double(x[i], DT) - (TY)z[q]) * (TY)s[q]);                \
        }                                                                                          \
    }
#define DQ_F8_LOOPS(X, DT)                                                                         \
    DQ_F8_LOOP(dq_##X##_f32, DT, float)                                                            \
    DQ_F8_LOOP(dq_##X##_f64, DT, double)
DQ_F8_LOOPS(e4m3fn, OG_FLOAT8E4M3FN)
DQ_F8_LOOPS(e4m3fnuz, OG_FLOAT8E4M3FNUZ)
DQ_F8_LOOPS(e5m2, OG_FLOAT8E5M2)
DQ_F8_LOOPS(e5m2fnuz, OG_FLOAT8E5M2FNUZ)

typedef void (*dq_fn)(const og_quant_geom *, const void *, void *, int64_t, const double *,
                      const double *);
typedef struct dq_loops {
    dq_fn fn;
} dq_loops;

/* Per x dtype (int8, uint8, int16, uint16, int32), y's loops: float32, float64, and the
 * 16-bit floats through float32's (og_float_impl). */
#define DQ_IMPLS(X)                                                                                \
    static const dq_loops dq_##X##_loops[2] = {{dq_##X##_f32}, {dq_##X##_f64}};                    \
    OG_FLOAT_IMPLS(dq_##X##_impls, &dq_##X##_loops[0], &dq_##X##_loops[1]);
DQ_IMPLS(i8)
DQ_IMPLS(u8)
DQ_IMPLS(i16)
DQ_IMPLS(u16)
DQ_IMPLS(i32)
DQ_IMPLS(e4m3fn)
DQ_IMPLS(e4m3fnuz)
DQ_IMPLS(e5m2)
DQ_IMPLS(e5m2fnuz)

/* The binding for x and y (the scale's dtype) of these dtypes, NULL for none. */
static const og_float_impl *dq_impl_of(og_dtype x, og_dtype y)
{
    /* int4 and uint4 are held one a byte: the 8-bit loops */
    const og_float_impl *t = x == OG_INT8 || x == OG_INT4     ? dq_i8_impls
                             : x == OG_UINT8 || x == OG_UINT4 ? dq_u8_impls
                             : x == OG_INT16                  ? dq_i16_impls
                             : x == OG_UINT16                 ? dq_u16_impls
                             : x == OG_INT32                  ? dq_i32_impls
                             : x == OG_FLOAT8E4M3FN           ? dq_e4m3fn_impls
                             : x == OG_FLOAT8E4M3FNUZ         ? dq_e4m3fnuz_impls
                             : x == OG_FLOAT8E5M2             ? dq_e5m2_impls
                             : x == OG_FLOAT8E5M2FNUZ         ? dq_e5m2fnuz_impls
                                                              : NULL;
    return t ? og_float_impl_of(t, y) : NULL;
}

/* Two type variables: x's dtype and the scale's (y's). */
static const void *select_dequantize(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    if (n->n_in < 2 || t[1] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    return dq_impl_of(t[0], t[1]);
}

/* y = (x − zero_point)·scale */
static og_status dequantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                   og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *s = in[1], *z = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    const og_float_impl *im = k->impl ? k->impl : dq_impl_of(x->dtype, y->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "dequantizing %s to %s is not supported",
                               og_dtype_name(x->dtype), og_dtype_name(y->dtype));
    if (!im->loops) return og_kernel_via_f32_bound(k, im, dequantize_kernel, in, n_in, out, n_out);
    og_quant_geom g;
    double *sz = NULL;
    og_status st = setup(k, x, s, z, &g);
    if (!st) st = params_f64(k, s, z, &sz);
    if (st) return st;
    ((const dq_loops *)im->loops)->fn(&g, x->data, y->data, x->numel, sz, sz + s->numel);
    og_free(k->alloc, sz);
    return OG_OK;
}

/* DynamicQuantizeLinear's loops for x of C type T (float32 or float64; y_scale is of x's
 * type): min and max in float64, then float32 arithmetic as the spec's reference. */
#define DYNQ_LOOP(NAME, T)                                                                         \
    static void NAME(const void *xv, int64_t n, uint8_t *y, void *yscale, uint8_t *yzp)            \
    {                                                                                              \
        const T *x = xv;                                                                           \
        double lo = 0, hi = 0;                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                          \
            double v = (double)x[i];                                                               \
            if (v < lo) lo = v;                                                                    \
            if (v > hi) hi = v;                                                                    \
        }                                                                                          \
        float scale = hi == lo ? 1.0f : ((float)hi - (float)lo) / 255.0f;                          \
        float izp = 0.0f - (float)lo / scale;                                                      \
        /* an infinite input makes the scale infinite and -min/scale NaN: zero point 0 (a NaN      \
         * cast to uint8 is undefined) */                                                          \
        float zp = izp != izp ? 0.0f : nearbyintf(izp < 0 ? 0 : izp > 255 ? 255 : izp);            \
        for (int64_t i = 0; i < n; i++) {                                                          \
            float v = nearbyintf((float)(double)x[i] / scale) + zp;                                \
            y[i] = (uint8_t)(v != v ? 0 : v < 0 ? 0 : v > 255 ? 255 : v);                          \
        }                                                                                          \
        if (yscale) *(T *)yscale = (T)scale;                                                       \
        if (yzp) *yzp = (uint8_t)zp;                                                               \
    }
DYNQ_LOOP(dynq_f32, float)
DYNQ_LOOP(dynq_f64, double)

typedef struct dynq_loops {
    void (*fn)(const void *x, int64_t n, uint8_t *y, void *yscale, uint8_t *yzp);
} dynq_loops;
static const dynq_loops dynq_t[2] = {{dynq_f32}, {dynq_f64}};

static const void *select_dynamic_quantize(const og_node *n, og_dtype t)
{
    (void)n;
    return t == OG_FLOAT ? &dynq_t[0] : t == OG_DOUBLE ? &dynq_t[1] : NULL;
}

/* uint8 with the scale and zero point that map [min(0, min x), max(0, max x)] onto [0, 255]:
 * scale = (max − min)/255 (1 when both are 0, as onnxruntime; the reference evaluator's
 * parenthesis gives 1/255), zero point = saturate(round(−min/scale)), y = saturate(round(x /
 * scale) + zero point) */
static og_status dynamic_quantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in,
                                         int n_in, og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    const dynq_loops *l = k->impl ? k->impl : select_dynamic_quantize(k->node, x->dtype);
    if (!l)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "quantizing %s dynamically is not supported",
                               og_dtype_name(x->dtype));
    l->fn(x->data, x->numel, out[0]->data, n_out > 1 && out[1] ? out[1]->data : NULL,
          n_out > 2 && out[2] ? out[2]->data : NULL);
    (void)n_in;
    return OG_OK;
}

/* QuantizeLinear and DequantizeLinear have two type variables (x and the scale, plus the
 * zero point for QuantizeLinear's y): select_types binds their loops from every input's
 * static dtype.  DynamicQuantizeLinear has one (x: float32 or float64). */
const og_kernel_def og_cpu_quant[] = {{.name = "QuantizeLinear",
                                       .domain = "",
                                       .fn = quantize_kernel,
                                       .select_types = select_quantize},
                                      {.name = "DequantizeLinear",
                                       .domain = "",
                                       .fn = dequantize_kernel,
                                       .select_types = select_dequantize},
                                      {.name = "DynamicQuantizeLinear",
                                       .domain = "",
                                       .fn = dynamic_quantize_kernel,
                                       .select = select_dynamic_quantize},
                                      {.name = NULL}};
