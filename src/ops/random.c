/* random.c: the random ops: RandomUniform, RandomNormal, RandomUniformLike,
 * RandomNormalLike (1), Bernoulli (15), Multinomial (7).
 *
 * Their kernels draw from the run's random key, as Dropout does (og_session_options.seed:
 * every run draws anew, the same seed repeats the same sequence), each node from its own
 * stream (its name and its seed attribute; a float seed counts by its value's bits).  The
 * draws are onnxgrad's own (xoshiro256**), not numpy's or onnxruntime's, as the spec allows
 * ("may not produce the same values in different implementations even if a seed is
 * specified"). */
#include <string.h>

#include "ops/random.h"

static const og_dtype types_float[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

static bool is_float3(og_dtype t) { return t == OG_FLOAT || t == OG_DOUBLE || t == OG_FLOAT16; }

static og_status random_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    const char *floats[] = {"low", "high", "mean", "scale", "seed"};
    og_status st = OG_OK;
    for (int i = 0; !st && i < 5; i++) st = og_attr_check_type(c, floats[i], OG_ATTR_FLOAT);
    if (!st) st = og_attr_check_type(c, "dtype", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "sample_size", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "shape", OG_ATTR_INTS);
    if (st) return st;
    og_random_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    const char *op = n->op_type;
    bool like = strstr(op, "Like") != NULL || strcmp(op, "Bernoulli") == 0;
    bool multinomial = strcmp(op, "Multinomial") == 0;
    const og_attr *dt = og_node_attr(n, "dtype");
    int64_t d = dt ? dt->i : like ? 0 : multinomial ? OG_INT32 : OG_FLOAT;
    p->dtype = (og_dtype)d;
    if (multinomial ? d != OG_INT32 && d != OG_INT64
                    : d != 0 && !(strcmp(op, "Bernoulli") == 0
                                      ? d > 0 && d <= OG_BFLOAT16 && og_dtype_is_known((og_dtype)d)
                                      : is_float3((og_dtype)d)))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'dtype' %lld is not a type %s makes",
                           (long long)d, op);
    p->low = og_attr_float(n, "low", 0.0f);
    p->high = og_attr_float(n, "high", 1.0f);
    p->mean = og_attr_float(n, "mean", 0.0f);
    p->scale = og_attr_float(n, "scale", 1.0f);
    if (!(p->low <= p->high))
        return og_op_error(c, OG_ERR_MODEL, "attribute 'low' (%g) is above 'high' (%g)", p->low,
                           p->high);
    const og_attr *seed = og_node_attr(n, "seed");
    if (seed) {
        double v = seed->f;
        p->has_seed = true;
        memcpy(&p->seed, &v, sizeof v);
    }
    p->sample_size = og_attr_int(n, "sample_size", 1);
    if (multinomial && p->sample_size < 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'sample_size' must be >= 1, got %lld",
                           (long long)p->sample_size);
    if (!like && !multinomial) {
        int cnt = 0;
        const int64_t *shape = og_attr_ints(n, "shape", &cnt);
        if (!shape) return og_op_error(c, OG_ERR_MODEL, "attribute 'shape' is required");
        if (cnt > OG_MAX_RANK)
            return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'shape' has %d dims, above %d",
                               cnt, OG_MAX_RANK);
        for (int i = 0; i < cnt; i++) {
            if (shape[i] < 0)
                return og_op_error(c, OG_ERR_MODEL, "attribute 'shape' has a negative dim (%lld)",
                                   (long long)shape[i]);
            p->shape[i] = shape[i];
        }
        p->n_shape = cnt;
    }
    return OG_OK;
}

static og_status random_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_random_params *p = c->node->params;
    og_vinfo_set(&out[0], p->dtype, p->n_shape, p->shape);
    return OG_OK;
}

/* The Like ops: the input's shape, any input type; the output a float type (the input's when
 * dtype is absent). */
static og_status like_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_random_params *p = c->node->params;
    og_dtype dt = p->dtype ? p->dtype : in[0].dtype;
    if (dt != OG_UNDEFINED && !is_float3(dt))
        return og_op_error(c, OG_ERR_TYPE, "the output would be %s: set dtype to a float type",
                           og_dtype_name(dt));
    og_vinfo_set(&out[0], dt, in[0].rank, in[0].dims);
    return OG_OK;
}

static og_status bernoulli_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    const og_random_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, types_float);
    if (st) return st;
    og_vinfo_set(&out[0], p->dtype ? p->dtype : in[0].dtype, in[0].rank, in[0].dims);
    return OG_OK;
}

static og_status multinomial_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    const og_random_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, types_float);
    if (st) return st;
    if (in[0].rank >= 0 && in[0].rank != 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 must be [batch, classes], got rank %d",
                           in[0].rank);
    og_vinfo_set(&out[0], p->dtype, 2,
                 (int64_t[]){in[0].rank == 2 ? in[0].dims[0] : OG_DIM_UNKNOWN, p->sample_size});
    return OG_OK;
}

#define RANDOM_OP(name, n_in, infer)                                                               \
    {                                                                                              \
#name, "", OG_SINCE(name), n_in, n_in, 1, 1, random_parse, NULL, infer, 0                  \
    }

const og_op_def og_ops_random[] = {
    RANDOM_OP(RandomUniform, 0, random_infer),
    RANDOM_OP(RandomNormal, 0, random_infer),
    RANDOM_OP(RandomUniformLike, 1, like_infer),
    RANDOM_OP(RandomNormalLike, 1, like_infer),
    RANDOM_OP(Bernoulli, 1, bernoulli_infer),
    RANDOM_OP(Multinomial, 1, multinomial_infer),
    {0},
};
