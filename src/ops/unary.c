/* unary.c: element-wise ops of one input (Abs, Exp, Relu, Clip, ...): attributes, types
 * and shapes.  The output has the input's shape, and its dtype (bool for IsNaN/IsInf). */
#include <float.h>
#include <string.h>

#include "ops/op.h"
#include "ops/unary_params.h"

/* ---- attributes ------------------------------------------------------------------ */

/* Float attributes of the ops that have them, mapped onto alpha/beta/gamma. */
typedef struct attr_spec {
    const char *op;
    const char *name[3]; /* alpha, beta, gamma slots; NULL: unused */
    float dflt[3];
} attr_spec;

static const attr_spec attr_specs[] = {
    {"Elu", {"alpha", NULL, NULL}, {1.0f, 0, 0}},
    {"HardSigmoid", {"alpha", "beta", NULL}, {0.2f, 0.5f, 0}},
    {"LeakyRelu", {"alpha", NULL, NULL}, {0.01f, 0, 0}},
    {"Selu", {"alpha", NULL, "gamma"}, {1.67326319217681884765625f, 0, 1.05070102214813232421875f}},
    {"Celu", {"alpha", NULL, NULL}, {1.0f, 0, 0}},
    {"ThresholdedRelu", {"alpha", NULL, NULL}, {1.0f, 0, 0}},
    {"Shrink", {"lambd", "bias", NULL}, {0.5f, 0.0f, 0}},
    {NULL, {NULL, NULL, NULL}, {0, 0, 0}},
};

static og_status new_params(const og_op_ctx *c, og_unary_params **out)
{
    og_unary_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->clip_min = -FLT_MAX;
    p->clip_max = FLT_MAX;
    p->detect_negative = 1;
    p->detect_positive = 1;
    *out = p;
    return OG_OK;
}

static og_status parse_float_attrs(const og_op_ctx *c, void **params)
{
    const attr_spec *s = attr_specs;
    while (s->op && strcmp(s->op, c->node->op_type) != 0) s++;
    og_unary_params *p = NULL;
    og_status st = new_params(c, &p);
    if (st) return st;
    float *slot[3] = {&p->alpha, &p->beta, &p->gamma};
    for (int i = 0; i < 3 && s->op; i++) {
        if (!s->name[i]) continue;
        st = og_attr_check_type(c, s->name[i], OG_ATTR_FLOAT);
        if (st) goto fail;
        *slot[i] = og_attr_float(c->node, s->name[i], s->dflt[i]);
    }
    if (strcmp(c->node->op_type, "Celu") == 0 && p->alpha == 0.0f) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'alpha' must not be 0");
        goto fail;
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

static og_status parse_clip(const og_op_ctx *c, void **params)
{
    og_unary_params *p = NULL;
    og_status st = new_params(c, &p);
    if (st) return st;
    if (c->node->since_version < 11) { /* the bounds became inputs in opset 11 */
        if ((st = og_attr_check_type(c, "min", OG_ATTR_FLOAT)) ||
            (st = og_attr_check_type(c, "max", OG_ATTR_FLOAT)))
            goto fail;
        p->clip_min = og_attr_float(c->node, "min", -FLT_MAX);
        p->clip_max = og_attr_float(c->node, "max", FLT_MAX);
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

static og_status parse_isinf(const og_op_ctx *c, void **params)
{
    og_unary_params *p = NULL;
    og_status st = new_params(c, &p);
    if (st) return st;
    if ((st = og_attr_check_type(c, "detect_negative", OG_ATTR_INT)) ||
        (st = og_attr_check_type(c, "detect_positive", OG_ATTR_INT)))
        goto fail;
    p->detect_negative = og_attr_int(c->node, "detect_negative", 1) != 0;
    p->detect_positive = og_attr_int(c->node, "detect_positive", 1) != 0;
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

static og_status parse_gelu(const og_op_ctx *c, void **params)
{
    og_unary_params *p = NULL;
    og_status st = new_params(c, &p);
    if (st) return st;
    if ((st = og_attr_check_type(c, "approximate", OG_ATTR_STRING))) goto fail;
    const char *a = og_attr_string(c->node, "approximate", "none");
    if (strcmp(a, "none") == 0) {
        p->gelu_tanh = 0;
    } else if (strcmp(a, "tanh") == 0) {
        p->gelu_tanh = 1;
    } else {
        st = og_op_error(c, OG_ERR_MODEL,
                         "attribute 'approximate' is '%s', expected 'none' or 'tanh'", a);
        goto fail;
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

/* ---- inference ------------------------------------------------------------------- */

static const og_dtype types_bool[] = {OG_BOOL, OG_UNDEFINED};

static og_status infer_same(const og_op_ctx *c, const og_vinfo *in, og_vinfo *out,
                            const og_dtype *allowed)
{
    og_status st = og_check_dtype(c, in, 0, allowed);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    return OG_OK;
}

static og_status infer_float(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    return infer_same(c, in, out, og_types_float);
}

/* `allowed` plus float16 (every version) and bfloat16 from since-version bf16_from (0: in
 * no version up to opset 21), as the schemas of the ops using it list them; the kernels
 * compute both through float32 copies. */
static og_status infer_same_half(const og_op_ctx *c, const og_vinfo *in, og_vinfo *out,
                                 const og_dtype *allowed, int bf16_from)
{
    og_dtype types[23];
    return infer_same(c, in, out, og_types_with_half(c, allowed, 1, bf16_from, types));
}

/* Sqrt, Exp, Log, Reciprocal, Ceil, Floor, Sigmoid, Tanh: float16 always, bfloat16 from 13 */
static og_status infer_float_half(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                  int n_out)
{
    return infer_same_half(c, in, out, og_types_float, 13);
}

/* Round, Softplus, Softsign, the trigonometric and hyperbolic ops, HardSwish, Mish, Elu,
 * Selu, HardSigmoid, ThresholdedRelu: float16 always, bfloat16 in no version up to opset 21 */
static og_status infer_float_f16(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    return infer_same_half(c, in, out, og_types_float, 0);
}

/* LeakyRelu: float16 always, bfloat16 from 16 */
static og_status infer_leakyrelu(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    return infer_same_half(c, in, out, og_types_float, 16);
}

/* Gelu (opset 20): float16 and bfloat16 */
static og_status infer_gelu(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    return infer_same_half(c, in, out, og_types_float, 20);
}

/* The signed types of Neg's and Relu-14's schemas: */
static const og_dtype types_signed[] = {OG_FLOAT, OG_DOUBLE, OG_INT32,    OG_INT64,
                                        OG_INT8,  OG_INT16,  OG_UNDEFINED};

/* Neg: every signed type; float16 always, bfloat16 from 13. */
static og_status infer_signed(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    return infer_same_half(c, in, out, types_signed, 13);
}

/* Erf, Shrink: every integer type besides the floats (computed in float64 and cast back);
 * float16 always, bfloat16 from 13 (Erf) or in no version (Shrink). */
static og_status infer_float_int(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    return infer_same_half(c, in, out, og_types_all_int,
                           strcmp(c->node->op_type, "Erf") == 0 ? 13 : 0);
}

/* Abs, Sign: every integer type (the unsigned ones too); float16 always, bfloat16 from 13. */
static og_status infer_all_int(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    return infer_same_half(c, in, out, og_types_all_int, 13);
}

/* Relu takes the signed integers from opset 14 on; float16 always, bfloat16 from 13. */
static og_status infer_relu(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    return infer_same_half(c, in, out, c->node->since_version >= 14 ? types_signed : og_types_float,
                           13);
}

static og_status infer_not(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    return infer_same(c, in, out, types_bool);
}

/* IsNaN, IsInf: float in, bool out. */
static og_status infer_isx(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    /* float16 from IsNaN-9, bfloat16 from IsNaN-13; both from IsInf-20 */
    static const og_dtype f16[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};
    static const og_dtype f16_bf16[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};
    int v = c->node->since_version;
    const og_dtype *allowed = og_types_float;
    if (strcmp(c->node->op_type, "IsNaN") == 0)
        allowed = v >= 13 ? f16_bf16 : f16;
    else if (v >= 20)
        allowed = f16_bf16;
    og_status st = infer_same(c, in, out, allowed);
    if (st) return st;
    out[0].dtype = OG_BOOL;
    return OG_OK;
}

static og_status infer_clip(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_node *n = c->node;
    static const char *const names[3] = {"input", "min", "max"};
    /* Clip-12 allows every numeric type: the narrow integers too (the kernel's own loop) */
    static const og_dtype numeric12[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                         OG_INT8,   OG_INT16,  OG_UINT8,    OG_UINT16,
                                         OG_UINT32, OG_UINT64, OG_UNDEFINED};
    /* float16 in every version, bfloat16 from 13 */
    og_status st =
        infer_same_half(c, in, out, n->since_version >= 12 ? numeric12 : og_types_float, 13);
    if (st) return st;
    for (int i = 1; i < n_in && i < 3; i++) {
        if (n->in[i] < 0) continue; /* omitted: no bound */
        if (n->since_version < 11)
            return og_op_error(c, OG_ERR_MODEL,
                               "input %d (%s) is given, but before opset 11 the bounds are "
                               "attributes",
                               i, names[i]);
        st = og_check_same_dtype(c, in, 0, i);
        if (st) return st;
        if (!og_vinfo_static(&in[i])) continue;
        if (og_vinfo_numel(&in[i]) != 1) {
            char buf[128];
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) must be a scalar, got shape %s", i,
                               names[i], og_shape_str(in[i].rank, in[i].dims, buf, sizeof buf));
        }
    }
    return OG_OK;
}

/* ---- the table ------------------------------------------------------------------- */

#define FLOAT_OP(name)                                                                             \
    {                                                                                              \
#name, "", OG_SINCE(name), 1, 1, 1, 1, NULL, NULL, infer_float_f16, 0                      \
    }
#define FLOAT_OP_ATTRS(name)                                                                       \
    {                                                                                              \
#name, "", OG_SINCE(name), 1, 1, 1, 1, parse_float_attrs, NULL, infer_float_f16, 0         \
    }

const og_op_def og_ops_unary[] = {
    {"Abs", "", OG_SINCE(Abs), 1, 1, 1, 1, NULL, NULL, infer_all_int, 0},
    {"Neg", "", OG_SINCE(Neg), 1, 1, 1, 1, NULL, NULL, infer_signed, 0},
    {"Sign", "", OG_SINCE(Sign), 1, 1, 1, 1, NULL, NULL, infer_all_int, 0},
    {"Relu", "", OG_SINCE(Relu), 1, 1, 1, 1, NULL, NULL, infer_relu, 0},
    {"Clip", "", OG_SINCE(Clip), 1, 3, 1, 1, parse_clip, NULL, infer_clip, 0},
    {"Not", "", OG_SINCE(Not), 1, 1, 1, 1, NULL, NULL, infer_not, 0},
    {"IsNaN", "", OG_SINCE(IsNaN), 1, 1, 1, 1, NULL, NULL, infer_isx, 0},
    {"IsInf", "", OG_SINCE(IsInf), 1, 1, 1, 1, parse_isinf, NULL, infer_isx, 0},
    {"Gelu", "", OG_SINCE(Gelu), 1, 1, 1, 1, parse_gelu, NULL, infer_gelu, 0},
    {"Ceil", "", OG_SINCE(Ceil), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    {"Floor", "", OG_SINCE(Floor), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    FLOAT_OP(Round),
    {"Reciprocal", "", OG_SINCE(Reciprocal), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    {"Sqrt", "", OG_SINCE(Sqrt), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    {"Exp", "", OG_SINCE(Exp), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    {"Log", "", OG_SINCE(Log), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    {"Erf", "", OG_SINCE(Erf), 1, 1, 1, 1, NULL, NULL, infer_float_int, 0},
    {"Sigmoid", "", OG_SINCE(Sigmoid), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    {"Tanh", "", OG_SINCE(Tanh), 1, 1, 1, 1, NULL, NULL, infer_float_half, 0},
    FLOAT_OP(Softplus),
    FLOAT_OP(Softsign),
    FLOAT_OP(Sin),
    FLOAT_OP(Cos),
    FLOAT_OP(Tan),
    FLOAT_OP(Asin),
    FLOAT_OP(Acos),
    FLOAT_OP(Atan),
    FLOAT_OP(Sinh),
    FLOAT_OP(Cosh),
    FLOAT_OP(Asinh),
    FLOAT_OP(Acosh),
    FLOAT_OP(Atanh),
    FLOAT_OP(HardSwish),
    FLOAT_OP(Mish),
    FLOAT_OP_ATTRS(Elu),
    FLOAT_OP_ATTRS(HardSigmoid),
    {"LeakyRelu", "", OG_SINCE(LeakyRelu), 1, 1, 1, 1, parse_float_attrs, NULL, infer_leakyrelu, 0},
    FLOAT_OP_ATTRS(Selu),
    /* Celu-12 is float32 only in the spec; double too here, not the 16-bit types */
    {"Celu", "", OG_SINCE(Celu), 1, 1, 1, 1, parse_float_attrs, NULL, infer_float, 0},
    FLOAT_OP_ATTRS(ThresholdedRelu),
    {"Shrink", "", OG_SINCE(Shrink), 1, 1, 1, 1, parse_float_attrs, NULL, infer_float_int, 0},
    {0},
};
