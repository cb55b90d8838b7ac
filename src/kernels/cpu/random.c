/* random.c: CPU kernels of the random ops (src/ops/random.c).  A node draws from a
 * generator (xoshiro256**) seeded, at each call, with the key of its stream: the run's random
 * key (og_kernel_ctx.rng: new at every run of the session, repeated by the same session seed),
 * the node's name and its seed attribute, mixed as Dropout's (src/kernels/cpu/norm.c).
 * Uniforms have 53 random bits; normals come in pairs from Box-Muller. */
#include <math.h>

#include "kernels/cpu/kernel.h"
#include "ops/random.h"

#define OG_PI 3.14159265358979323846

static uint64_t mix64(uint64_t x) { return og_splitmix64(&x); }

/* The node's generator for this run. */
static og_status generator(const og_kernel_ctx *k, og_rng *r, og_rng **out)
{
    const og_random_params *p = k->params;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the node's name: its own stream */
    for (const char *c = k->node->name ? k->node->name : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    og_rng_seed(r, mix64(mix64(p->has_seed ? p->seed : 0) ^ mix64(h) ^ k->rng));
    *out = r;
    return OG_OK;
}

static og_status fill_uniform(const og_kernel_ctx *k, og_tensor *y)
{
    const og_random_params *p = k->params;
    og_rng local, *r;
    og_status st = generator(k, &local, &r);
    for (int64_t i = 0; !st && i < y->numel; i++)
        og_tensor_set_f64(y, i, p->low + (p->high - p->low) * og_rng_uniform(r));
    return st;
}

static og_status fill_normal(const og_kernel_ctx *k, og_tensor *y)
{
    const og_random_params *p = k->params;
    og_rng local, *r;
    og_status st = generator(k, &local, &r);
    for (int64_t i = 0; !st && i < y->numel; i += 2) {
        double u1 = 1.0 - og_rng_uniform(r), u2 = og_rng_uniform(r); /* u1 in (0, 1] */
        double rad = sqrt(-2.0 * log(u1)), a = 2.0 * OG_PI * u2;
        og_tensor_set_f64(y, i, p->mean + p->scale * rad * cos(a));
        if (i + 1 < y->numel) og_tensor_set_f64(y, i + 1, p->mean + p->scale * rad * sin(a));
    }
    return st;
}

static og_status k_uniform(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    return fill_uniform(k, out[0]);
}

static og_status k_normal(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    return fill_normal(k, out[0]);
}

/* Bernoulli: 1 where a uniform draw falls below p (p outside [0, 1] is an error). */
static og_status k_bernoulli(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    og_rng local, *r;
    og_status st = generator(k, &local, &r);
    for (int64_t i = 0; !st && i < x->numel; i++) {
        double pr = og_tensor_get_f64(x, i);
        if (!(pr >= 0 && pr <= 1))
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "probability %g at index %lld is outside [0, 1]", pr,
                                   (long long)i);
        og_tensor_set_f64(out[0], i, og_rng_uniform(r) < pr ? 1.0 : 0.0);
    }
    return st;
}

/* Multinomial: per row, sample_size class indices drawn with probabilities softmax(x): a
 * uniform draw times the row's total of exp(x - max), found in the running sums. */
static og_status k_multinomial(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    int64_t B = x->dims[0], C = x->dims[1], S = y->dims[1];
    og_rng local, *r;
    og_status st = generator(k, &local, &r);
    if (st) return st;
    if (C == 0 && B > 0 && S > 0)
        return og_kernel_error(k, OG_ERR_SHAPE, "cannot sample from zero classes");
    double *cum = og_malloc(k->alloc, (size_t)(C + 1) * sizeof *cum);
    if (!cum) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < B; b++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < C; j++) {
            double v = og_tensor_get_f64(x, b * C + j);
            if (v > mx) mx = v;
        }
        for (int64_t j = 0; j < C; j++) {
            double v = og_tensor_get_f64(x, b * C + j);
            sum += mx == -INFINITY || v != v ? 0.0 : exp(v - mx);
            cum[j] = sum;
        }
        if (!(sum > 0) || !isfinite(sum)) {
            og_free(k->alloc, cum);
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "row %lld has no class to draw (its "
                                   "log-probabilities are all -inf or NaN)",
                                   (long long)b);
        }
        for (int64_t s = 0; s < S; s++) {
            double u = og_rng_uniform(r) * sum;
            int64_t lo = 0, hi = C - 1; /* the first class whose running sum exceeds u */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cum[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            og_tensor_set_f64(y, b * S + s, (double)lo);
        }
    }
    og_free(k->alloc, cum);
    return OG_OK;
}

static const og_dtype float_in[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

const og_kernel_def og_cpu_random[] = {
    {.name = "RandomUniform", .domain = "", .fn = k_uniform},
    {.name = "RandomNormal", .domain = "", .fn = k_normal},
    {.name = "RandomUniformLike", .domain = "", .fn = k_uniform, .strings = 1},
    {.name = "RandomNormalLike", .domain = "", .fn = k_normal, .strings = 1},
    {.name = "Bernoulli", .domain = "", .fn = k_bernoulli, .types = float_in},
    {.name = "Multinomial", .domain = "", .fn = k_multinomial, .types = float_in},
    {.name = NULL},
};
