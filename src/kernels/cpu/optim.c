/* optim.c: CPU kernels of the ai.onnx.preview.training optimizers Momentum, Adagrad and
 * Adam, for float32 and float64 tensors (R float or double, T int64).
 *
 * Scalar coefficients (the adjusted learning rate, beta at T == 0, Adam's bias correction)
 * are computed once in double; the per-element update runs in the tensors' type.  Each
 * tensor is cut into blocks of BLOCK elements: one pass reads X, G and the states of a block
 * and writes the new states, a SIMD square root pass (Adagrad, Adam) and a last pass write
 * the new X while the block is still in L1.  Blocks are split among threads for large
 * tensors.  An omitted output is written to stack scratch instead.  Outputs never alias
 * inputs (the executor allocates them fresh).  The session binds the loop of X1's type to
 * the node when it is created; a further X of another type (the spec gives every X one
 * type, inference here does not insist) picks its own. */
#include <math.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/cpu/kernel.h"
#include "ops/optim.h"

enum { BLOCK = 256 };

typedef struct coeffs {
    double r;    /* learning rate after T's adjustment */
    double nc;   /* norm_coefficient */
    double a, b; /* Momentum: alpha, adjusted beta; Adam: alpha, beta */
    double eps;
    double post; /* Adam: 1 - norm_coefficient_post */
} coeffs;

/* Square roots of a block.  With errno semantics on (the build's default) GCC keeps a libm
 * call per element, so the SIMD square root is spelled out where SSE2 exists. */
static void sqrt_float(const float *restrict x, float *restrict y, int64_t n)
{
    int64_t i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
#endif
    for (; i < n; i++) y[i] = sqrtf(x[i]);
}
static void sqrt_double(const double *restrict x, double *restrict y, int64_t n)
{
    int64_t i = 0;
#if defined(__SSE2__)
    for (; i + 2 <= n; i += 2) _mm_storeu_pd(y + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
#endif
    for (; i < n; i++) y[i] = sqrt(x[i]);
}

#define DEFINE_OPTIM(T)                                                                            \
    static void momentum_##T(const coeffs *c, bool nesterov, int64_t m, const T *restrict x,       \
                             const T *restrict g, const T *restrict v, T *restrict xo,             \
                             T *restrict vo)                                                       \
    {                                                                                              \
        const T nc = (T)c->nc, a = (T)c->a, b = (T)c->b, r = (T)c->r;                              \
        if (nesterov) {                                                                            \
            for (int64_t j = 0; j < m; j++) {                                                      \
                T gr = nc * x[j] + g[j];                                                           \
                T vn = a * v[j] + b * gr;                                                          \
                vo[j] = vn;                                                                        \
                xo[j] = x[j] - r * (gr + a * vn);                                                  \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t j = 0; j < m; j++) {                                                      \
                T vn = a * v[j] + b * (nc * x[j] + g[j]);                                          \
                vo[j] = vn;                                                                        \
                xo[j] = x[j] - r * vn;                                                             \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void adagrad_##T(const coeffs *c, int64_t m, const T *restrict x, const T *restrict g,  \
                            const T *restrict h, T *restrict xo, T *restrict ho, T *restrict sq)   \
    {                                                                                              \
        const T nc = (T)c->nc, r = (T)c->r, eps = (T)c->eps;                                       \
        for (int64_t j = 0; j < m; j++) {                                                          \
            T gr = nc * x[j] + g[j];                                                               \
            ho[j] = h[j] + gr * gr;                                                                \
        }                                                                                          \
        sqrt_##T(ho, sq, m);                                                                       \
        for (int64_t j = 0; j < m; j++) {                                                          \
            T gr = nc * x[j] + g[j];                                                               \
            xo[j] = x[j] - r * gr / (sq[j] + eps);                                                 \
        }                                                                                          \
    }                                                                                              \
    static void adam_##T(const coeffs *c, int64_t m, const T *restrict x, const T *restrict g,     \
                         const T *restrict v, const T *restrict h, T *restrict xo, T *restrict vo, \
                         T *restrict ho, T *restrict sq)                                           \
    {                                                                                              \
        const T nc = (T)c->nc, a = (T)c->a, a1 = (T)(1 - c->a), b = (T)c->b, b1 = (T)(1 - c->b);   \
        const T r = (T)c->r, eps = (T)c->eps, post = (T)c->post;                                   \
        for (int64_t j = 0; j < m; j++) {                                                          \
            T gr = nc * x[j] + g[j];                                                               \
            vo[j] = a * v[j] + a1 * gr;                                                            \
            ho[j] = b * h[j] + b1 * (gr * gr);                                                     \
        }                                                                                          \
        sqrt_##T(ho, sq, m);                                                                       \
        for (int64_t j = 0; j < m; j++) xo[j] = post * (x[j] - r * (vo[j] / (sq[j] + eps)));       \
    }                                                                                              \
    /* Elements [lo, hi) of one tensor; s2/o2 only for Adam; NULL outputs go to scratch. */        \
    static void block_##T(const og_optim_params *p, const coeffs *c, int64_t lo, int64_t hi,       \
                          const T *x, const T *g, const T *s1, const T *s2, T *xo, T *o1, T *o2)   \
    {                                                                                              \
        T bx[BLOCK], b1[BLOCK], b2[BLOCK], sq[BLOCK];                                              \
        int64_t m = hi - lo;                                                                       \
        T *px = xo ? xo + lo : bx, *p1 = o1 ? o1 + lo : b1, *p2 = o2 ? o2 + lo : b2;               \
        switch (p->kind) {                                                                         \
        case OG_OPTIM_MOMENTUM:                                                                    \
            momentum_##T(c, p->nesterov, m, x + lo, g + lo, s1 + lo, px, p1);                      \
            break;                                                                                 \
        case OG_OPTIM_ADAGRAD: adagrad_##T(c, m, x + lo, g + lo, s1 + lo, px, p1, sq); break;      \
        case OG_OPTIM_ADAM: adam_##T(c, m, x + lo, g + lo, s1 + lo, s2 + lo, px, p1, p2, sq);      \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    static void tensor_##T(const og_kernel_ctx *k, const og_optim_params *p, const coeffs *c,      \
                           int64_t total, const void *x, const void *g, const void *s1,            \
                           const void *s2, void *xo, void *o1, void *o2)                           \
    {                                                                                              \
        int64_t nb = (total + BLOCK - 1) / BLOCK;                                                  \
        OG_PARALLEL_FOR(k, nb, 2 * BLOCK, blk, {                                                   \
            block_##T(p, c, blk *BLOCK, blk + 1 < nb ? (blk + 1) * BLOCK : total, x, g, s1, s2,    \
                      xo, o1, o2);                                                                 \
        });                                                                                        \
    }

DEFINE_OPTIM(float)
DEFINE_OPTIM(double)

/* One tensor's update, over untyped pointers: what select_optim binds. */
typedef void (*optim_tensor_fn)(const og_kernel_ctx *k, const og_optim_params *p, const coeffs *c,
                                int64_t total, const void *x, const void *g, const void *s1,
                                const void *s2, void *xo, void *o1, void *o2);
static const optim_tensor_fn optim_float = tensor_float, optim_double = tensor_double;

static const optim_tensor_fn *optim_loop_of(og_dtype t)
{
    return t == OG_FLOAT ? &optim_float : t == OG_DOUBLE ? &optim_double : NULL;
}

static const void *select_optim(const og_node *n, og_dtype t)
{
    (void)n;
    return optim_loop_of(t);
}

static og_status optim_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                              og_tensor *const *out, int n_out)
{
    const og_optim_params *p = k->params;
    int n = p->n, groups = 2 + p->n_states;
    if (n_in != 2 + groups * n || n_out != (1 + p->n_states) * n)
        return og_kernel_error(k, OG_ERR_INTERNAL, "input/output counts changed after parsing");
    if (in[0]->numel != 1 || in[1]->numel != 1)
        return og_kernel_error(k, OG_ERR_SHAPE, "inputs R and T must be scalars");
    double R = og_tensor_get_f64(in[0], 0);
    int64_t T = og_tensor_get_i64(in[1], 0);
    coeffs c = {R, p->norm_coefficient, p->alpha, p->beta, p->epsilon, 1.0};
    switch (p->kind) {
    case OG_OPTIM_MOMENTUM:
        if (T <= 0) c.b = 1.0; /* the gradient's coefficient is 1 at the first update */
        break;
    case OG_OPTIM_ADAGRAD: c.r = R / (1.0 + (double)T * p->decay_factor); break;
    case OG_OPTIM_ADAM:
        if (T > 0) /* bias correction; none at T == 0 */
            c.r = R * sqrt(1.0 - pow(p->beta, (double)T)) / (1.0 - pow(p->alpha, (double)T));
        c.post = 1.0 - p->norm_coefficient_post;
        break;
    }
    /* k->impl: X1's loop bound at session creation; without a binding, pick it here */
    const optim_tensor_fn *bound = k->impl ? k->impl : optim_loop_of(in[2]->dtype);
    for (int i = 0; i < n; i++) {
        const og_tensor *x = in[2 + i], *g = in[2 + n + i], *s1 = in[2 + 2 * n + i];
        const og_tensor *s2 = p->n_states > 1 ? in[2 + 3 * n + i] : NULL;
        og_tensor *xo = out[i], *o1 = out[n + i], *o2 = p->n_states > 1 ? out[2 * n + i] : NULL;
        const og_tensor *const group[] = {g, s1, s2, xo, o1, o2};
        for (int j = 0; j < 6; j++)
            if (group[j] && (group[j]->dtype != x->dtype || group[j]->numel != x->numel))
                return og_kernel_error(k, OG_ERR_INTERNAL,
                                       "tensor %d: the shapes or types of X, G, states and "
                                       "outputs differ after inference",
                                       i + 1);
        const void *d2 = s2 ? s2->data : NULL;
        void *dx = xo ? xo->data : NULL, *d1 = o1 ? o1->data : NULL, *do2 = o2 ? o2->data : NULL;
        const optim_tensor_fn *fn = x->dtype == in[2]->dtype ? bound : optim_loop_of(x->dtype);
        if (!fn)
            return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                                   og_dtype_name(x->dtype));
        (*fn)(k, p, &c, x->numel, x->data, g->data, s1->data, d2, dx, d1, do2);
    }
    return OG_OK;
}

/* The type input is the first tensor to update, X1 (input 2, after R and T): float32 or
 * float64, whose loop select_optim binds.  The kernel checks each further X the same way,
 * and that each X's gradient and states have its dtype. */
const og_kernel_def og_cpu_optim[] = {{.name = "Momentum",
                                       .domain = "ai.onnx.preview.training",
                                       .fn = optim_kernel,
                                       .select = select_optim,
                                       .type_input = 2},
                                      {.name = "Adagrad",
                                       .domain = "ai.onnx.preview.training",
                                       .fn = optim_kernel,
                                       .select = select_optim,
                                       .type_input = 2},
                                      {.name = "Adam",
                                       .domain = "ai.onnx.preview.training",
                                       .fn = optim_kernel,
                                       .select = select_optim,
                                       .type_input = 2},
                                      {.name = NULL}};
