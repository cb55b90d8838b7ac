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

static void put_int(og_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case OG_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case OG_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case OG_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case OG_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    default: break;
    }
}

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

/* y = saturate(round(x / scale) + zero_point) */
static og_status quantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                 og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *s = in[1], *z = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    og_quant_geom g;
    double qmin, qmax;
    if (!og_quant_range(y->dtype, &qmin, &qmax))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "quantizing to %s is not supported",
                               og_dtype_name(y->dtype));
    og_status st = setup(k, x, s, z, &g);
    if (st) return st;
    bool f32 = s->dtype != OG_DOUBLE;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = scale_index(&g, i);
        double v = f32 ? (double)nearbyintf((float)get(x, i) / (float)get(s, q))
                       : nearbyint(get(x, i) / get(s, q));
        if (z) v += get(z, q);
        v = v != v ? 0 : v < qmin ? qmin : v > qmax ? qmax : v;
        put_int(y, i, v);
    }
    (void)n_out;
    return OG_OK;
}

/* y = (x − zero_point)·scale */
static og_status dequantize_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                   og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0], *s = in[1], *z = n_in > 2 ? in[2] : NULL;
    og_tensor *y = out[0];
    og_quant_geom g;
    og_status st = setup(k, x, s, z, &g);
    if (st) return st;
    bool f32 = s->dtype != OG_DOUBLE;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = scale_index(&g, i);
        double d = get(x, i) - (z ? get(z, q) : 0);
        put_float(y, i, f32 ? (double)((float)d * (float)get(s, q)) : d * get(s, q));
    }
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
        ((uint8_t *)out[0]->data)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
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
