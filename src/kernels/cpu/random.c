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

/* Values are drawn in float64, CHUNK at a time, and stored in the output's dtype. */
enum { CHUNK = 256 };

/* The stores of y's dtype: the binding (the Like ops, whose input has a dtype to bind on), or,
 * for RandomUniform and RandomNormal, which have no input, those of y's dtype, picked once
 * per call. */
static const og_elem_io *out_io(const og_kernel_ctx *k, const og_tensor *y, og_status *st)
{
    const og_elem_io *io = k->impl ? k->impl : og_elem_io_of(y->dtype);
    *st = io ? OG_OK
             : og_kernel_error(k, OG_ERR_UNSUPPORTED, "the output is %s, not a numeric type",
                               og_dtype_name(y->dtype));
    return io;
}

static og_status fill_uniform(const og_kernel_ctx *k, og_tensor *y)
{
    const og_random_params *p = k->params;
    og_rng local, *r;
    og_status st;
    const og_elem_io *io = out_io(k, y, &st);
    if (!st) st = generator(k, &local, &r);
    double v[CHUNK];
    for (int64_t i0 = 0; !st && i0 < y->numel; i0 += CHUNK) {
        int64_t m = y->numel - i0 < CHUNK ? y->numel - i0 : CHUNK;
        for (int64_t j = 0; j < m; j++) v[j] = p->low + (p->high - p->low) * og_rng_uniform(r);
        io->store(y->data, i0, 1, m, v);
    }
    return st;
}

static og_status fill_normal(const og_kernel_ctx *k, og_tensor *y)
{
    const og_random_params *p = k->params;
    og_rng local, *r;
    og_status st;
    const og_elem_io *io = out_io(k, y, &st);
    if (!st) st = generator(k, &local, &r);
    double v[CHUNK]; /* CHUNK even: a pair never straddles two chunks */
    for (int64_t i0 = 0; !st && i0 < y->numel; i0 += CHUNK) {
        int64_t m = y->numel - i0 < CHUNK ? y->numel - i0 : CHUNK;
        for (int64_t j = 0; j < m; j += 2) {
            double u1 = 1.0 - og_rng_uniform(r), u2 = og_rng_uniform(r); /* u1 in (0, 1] */
            double rad = sqrt(-2.0 * log(u1)), a = 2.0 * OG_PI * u2;
            v[j] = p->mean + p->scale * rad * cos(a);
            if (j + 1 < m) v[j + 1] = p->mean + p->scale * rad * sin(a);
        }
        io->store(y->data, i0, 1, m, v);
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

/* Bernoulli's binding: the loads of its probabilities' dtype and the stores of its
 * output's (the dtype attribute, or the input's). */
typedef struct bern_io {
    const og_elem_io *x, *y;
} bern_io;

#define OG_BERN_ROW(i)                                                                             \
    {                                                                                              \
        {&og_elem_ios[i], &og_elem_ios[0]}, {&og_elem_ios[i], &og_elem_ios[1]},                    \
            {&og_elem_ios[i], &og_elem_ios[2]}, {&og_elem_ios[i], &og_elem_ios[3]},                \
            {&og_elem_ios[i], &og_elem_ios[4]}, {&og_elem_ios[i], &og_elem_ios[5]},                \
            {&og_elem_ios[i], &og_elem_ios[6]}, {&og_elem_ios[i], &og_elem_ios[7]},                \
            {&og_elem_ios[i], &og_elem_ios[8]}, {&og_elem_ios[i], &og_elem_ios[9]},                \
            {&og_elem_ios[i], &og_elem_ios[10]}, {&og_elem_ios[i], &og_elem_ios[11]},              \
        {                                                                                          \
            &og_elem_ios[i], &og_elem_ios[12]                                                      \
        }                                                                                          \
    }
/* [x: float32, float64, float16][y: every og_elem_ios entry] */
static const bern_io bern_ios[3][OG_ELEM_IO_N] = {OG_BERN_ROW(0), OG_BERN_ROW(1), OG_BERN_ROW(2)};
#undef OG_BERN_ROW

static const bern_io *bern_io_of(og_dtype x, og_dtype y)
{
    int i = x == OG_FLOAT ? 0 : x == OG_DOUBLE ? 1 : x == OG_FLOAT16 ? 2 : -1;
    const og_elem_io *out = og_elem_io_of(y);
    return i < 0 || !out ? NULL : &bern_ios[i][out - og_elem_ios];
}

static const void *select_bernoulli(const og_node *n, og_dtype t)
{
    const og_random_params *p = n->params;
    return bern_io_of(t, p->dtype ? p->dtype : t);
}

/* Bernoulli: 1 where a uniform draw falls below p (p outside [0, 1] is an error). */
static og_status k_bernoulli(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    const bern_io *io = k->impl ? k->impl : bern_io_of(x->dtype, out[0]->dtype);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "no Bernoulli loop from %s to %s",
                               og_dtype_name(x->dtype), og_dtype_name(out[0]->dtype));
    og_rng local, *r;
    og_status st = generator(k, &local, &r);
    double v[CHUNK];
    for (int64_t i0 = 0; !st && i0 < x->numel; i0 += CHUNK) {
        int64_t m = x->numel - i0 < CHUNK ? x->numel - i0 : CHUNK;
        io->x->load(x->data, i0, 1, m, v);
        for (int64_t j = 0; j < m; j++) {
            double pr = v[j];
            if (!(pr >= 0 && pr <= 1)) {
                io->y->store(out[0]->data, i0, 1, j, v); /* the draws before it, as they were */
                return og_kernel_error(k, OG_ERR_RUNTIME,
                                       "probability %g at index %lld is outside [0, 1]", pr,
                                       (long long)(i0 + j));
            }
            v[j] = og_rng_uniform(r) < pr ? 1.0 : 0.0;
        }
        io->y->store(out[0]->data, i0, 1, m, v);
    }
    return st;
}

/* Multinomial's binding: the loads of its float input, the stores of int32 or int64. */
typedef struct multi_io {
    const og_elem_io *x, *y;
} multi_io;
/* [x: float32, float64, float16][y: int32, int64] (og_elem_ios' order) */
static const multi_io multi_ios[3][2] = {
    {{&og_elem_ios[0], &og_elem_ios[6]}, {&og_elem_ios[0], &og_elem_ios[7]}},
    {{&og_elem_ios[1], &og_elem_ios[6]}, {&og_elem_ios[1], &og_elem_ios[7]}},
    {{&og_elem_ios[2], &og_elem_ios[6]}, {&og_elem_ios[2], &og_elem_ios[7]}}};

static const multi_io *multi_io_of(og_dtype x, og_dtype y)
{
    int i = x == OG_FLOAT ? 0 : x == OG_DOUBLE ? 1 : x == OG_FLOAT16 ? 2 : -1;
    int j = y == OG_INT32 ? 0 : y == OG_INT64 ? 1 : -1;
    return i < 0 || j < 0 ? NULL : &multi_ios[i][j];
}

static const void *select_multinomial(const og_node *n, og_dtype t)
{
    return multi_io_of(t, ((const og_random_params *)n->params)->dtype);
}

/* The Like ops: the stores of their dtype attribute's float type, or of the input's. */
static const void *select_like(const og_node *n, og_dtype t)
{
    const og_random_params *p = n->params;
    og_dtype d = p->dtype ? p->dtype : t;
    return d == OG_FLOAT || d == OG_DOUBLE || d == OG_FLOAT16 ? og_elem_io_of(d) : NULL;
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
    const multi_io *io = k->impl ? k->impl : multi_io_of(x->dtype, y->dtype);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "no Multinomial loop from %s to %s",
                               og_dtype_name(x->dtype), og_dtype_name(y->dtype));
    /* cum: the row's running sums (C), then its values (C), then the drawn classes (S) */
    size_t cells;
    if (!og_mul_size((size_t)C, 2, &cells) || cells + (size_t)S + 1 < cells ||
        !og_mul_size(cells + (size_t)S + 1, sizeof(double), &cells))
        return og_kernel_error(k, OG_ERR_SHAPE, "%lld classes are too many", (long long)C);
    double *cum = og_malloc(k->alloc, cells);
    if (!cum) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    double *row = cum + C, *drawn = row + C;
    for (int64_t b = 0; b < B; b++) {
        double mx = -INFINITY, sum = 0;
        io->x->load(x->data, b * C, 1, C, row);
        for (int64_t j = 0; j < C; j++) {
            double v = row[j];
            if (v > mx) mx = v;
        }
        for (int64_t j = 0; j < C; j++) {
            double v = row[j];
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
            drawn[s] = (double)lo;
        }
        io->y->store(y->data, b * S, 1, S, drawn);
    }
    og_free(k->alloc, cum);
    return OG_OK;
}

static const og_dtype float_in[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

const og_kernel_def og_cpu_random[] = {
    {.name = "RandomUniform", .domain = "", .fn = k_uniform},
    {.name = "RandomNormal", .domain = "", .fn = k_normal},
    {.name = "RandomUniformLike",
     .domain = "",
     .fn = k_uniform,
     .select = select_like,
     .strings = 1},
    {.name = "RandomNormalLike", .domain = "", .fn = k_normal, .select = select_like, .strings = 1},
    {.name = "Bernoulli",
     .domain = "",
     .fn = k_bernoulli,
     .types = float_in,
     .select = select_bernoulli},
    {.name = "Multinomial",
     .domain = "",
     .fn = k_multinomial,
     .types = float_in,
     .select = select_multinomial},
    {.name = NULL},
};
