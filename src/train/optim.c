/*
 * optim.c: optimizer options, learning-rate schedules and the fused per-weight updates.
 *
 * The updates follow PyTorch's definitions (torch.optim.SGD, Adam, AdamW, Adagrad) so that
 * a run can be compared with one: with gradient g (after clipping) and weight w,
 *   SGD      g += wd w;  v = mu v + g (v starts at g);  w -= lr (nesterov ? g + mu v : v)
 *   Adam     g += wd w;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *            w -= lr/(1-b1^k) m / (sqrt(v)/sqrt(1-b2^k) + eps)          (k = t + 1)
 *   AdamW    w *= 1 - lr wd, then Adam without the wd term
 *   Adagrad  g += wd w;  h += g^2;  w -= lr/(1 + t lr_decay) g / (sqrt(h) + eps)
 * Arithmetic is in the weight's dtype, as PyTorch does it.
 */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "train/optim.h"

void og_optimizer_options_init(og_optimizer_options *o, og_optimizer_kind kind)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->lr = kind == OG_OPTIMIZER_ADAM || kind == OG_OPTIMIZER_ADAMW ? 1e-3 : 1e-2;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = kind == OG_OPTIMIZER_ADAGRAD ? 1e-10 : 1e-8;
    o->weight_decay = kind == OG_OPTIMIZER_ADAMW ? 1e-2 : 0.0;
    o->schedule = OG_LR_CONSTANT;
    o->alpha = 1e-4;
    o->power_t = 0.25;
    o->gamma = 0.1;
    o->step_size = 1;
}

og_status og_optim_check(const og_optimizer_options *o)
{
    if (!o) return og_error(OG_ERR_INVALID_ARG, "optimizer options are NULL");
    if ((unsigned)o->kind > OG_OPTIMIZER_ADAGRAD)
        return og_error(OG_ERR_INVALID_ARG, "unknown optimizer kind %d", (int)o->kind);
#define CHECK(cond, ...)                                                                           \
    if (!(cond)) return og_error(OG_ERR_INVALID_ARG, __VA_ARGS__)
    CHECK(o->lr >= 0 && isfinite(o->lr), "optimizer: lr %g must be >= 0", o->lr);
    CHECK(o->momentum >= 0 && o->momentum < 1 + 1e-12, "optimizer: momentum %g is outside [0, 1]",
          o->momentum);
    CHECK(!o->nesterov || o->momentum > 0, "optimizer: Nesterov needs a momentum > 0");
    CHECK(o->beta1 >= 0 && o->beta1 < 1, "optimizer: beta1 %g is outside [0, 1)", o->beta1);
    CHECK(o->beta2 >= 0 && o->beta2 < 1, "optimizer: beta2 %g is outside [0, 1)", o->beta2);
    CHECK(o->eps >= 0 && isfinite(o->eps), "optimizer: eps %g must be >= 0", o->eps);
    CHECK(o->weight_decay >= 0 && isfinite(o->weight_decay),
          "optimizer: weight_decay %g must be >= 0", o->weight_decay);
    CHECK(o->lr_decay >= 0, "optimizer: lr_decay %g must be >= 0", o->lr_decay);
    CHECK(o->initial_accumulator >= 0, "optimizer: initial_accumulator %g must be >= 0",
          o->initial_accumulator);
    CHECK(o->clip_norm >= 0, "optimizer: clip_norm %g must be >= 0", o->clip_norm);
    CHECK((unsigned)o->schedule <= OG_LR_STEP, "optimizer: unknown schedule %d", (int)o->schedule);
    CHECK(o->schedule != OG_LR_OPTIMAL || o->alpha > 0,
          "optimizer: the optimal schedule needs alpha > 0 (got %g)", o->alpha);
    CHECK(o->schedule != OG_LR_INVSCALING || o->power_t >= 0, "optimizer: power_t %g must be >= 0",
          o->power_t);
    CHECK(o->warmup_steps >= 0 && o->total_steps >= 0,
          "optimizer: warmup_steps and total_steps must be >= 0");
    CHECK(o->min_lr >= 0, "optimizer: min_lr %g must be >= 0", o->min_lr);
    CHECK(o->schedule != OG_LR_STEP || (o->step_size > 0 && o->gamma >= 0),
          "optimizer: the step schedule needs step_size > 0 and gamma >= 0");
#undef CHECK
    return OG_OK;
}

double og_optimizer_lr(const og_optimizer_options *o, int64_t t)
{
    if (!o) return 0;
    double lr = o->lr, td = (double)(t < 0 ? 0 : t);
    switch (o->schedule) {
    case OG_LR_OPTIMAL: {
        /* scikit-learn's heuristic for t0 (squared loss: eta0 = typical weight) */
        double typw = sqrt(1.0 / sqrt(o->alpha));
        double t0 = 1.0 / (typw * o->alpha);
        return 1.0 / (o->alpha * (t0 + td));
    }
    case OG_LR_INVSCALING: return lr / pow(td + 1.0, o->power_t);
    case OG_LR_LINEAR:
    case OG_LR_COSINE: {
        double warm = (double)o->warmup_steps, total = (double)o->total_steps;
        if (td < warm) return lr * (td + 1.0) / warm;
        if (total <= warm) return lr;
        double p = (td - warm) / (total - warm);
        if (p > 1) p = 1;
        double f =
            o->schedule == OG_LR_LINEAR ? 1.0 - p : 0.5 * (1.0 + cos(3.14159265358979323846 * p));
        return o->min_lr + (lr - o->min_lr) * f;
    }
    case OG_LR_STEP: return lr * pow(o->gamma, floor(td / (double)o->step_size));
    default: return lr;
    }
}

int og_optim_slot_count(const og_optimizer_options *o)
{
    switch (o->kind) {
    case OG_OPTIMIZER_SGD: return o->momentum > 0 ? 1 : 0;
    case OG_OPTIMIZER_ADAM:
    case OG_OPTIMIZER_ADAMW: return 2;
    case OG_OPTIMIZER_ADAGRAD: return 1;
    default: return 0;
    }
}

const char *og_optim_slot_name(const og_optimizer_options *o, int i)
{
    switch (o->kind) {
    case OG_OPTIMIZER_SGD: return "momentum";
    case OG_OPTIMIZER_ADAGRAD: return "h";
    default: return i == 0 ? "m" : "v";
    }
}

double og_optim_slot_init(const og_optimizer_options *o, int i)
{
    return o->kind == OG_OPTIMIZER_ADAGRAD ? o->initial_accumulator : 0.0;
}

/* The update loops.  Each is a plain loop over restrict pointers with no test inside, so
 * the compiler vectorizes it (optim.c is compiled with -fno-math-errno, which lets sqrt
 * become a vector instruction, and -ffp-contract=off, which keeps a * b + c two roundings);
 * it is compiled twice, for the build's baseline and for AVX2, and og_cpu_isa picks one.
 * Both compute every element with the same operations in the same order, so a weight gets
 * the same bits whichever runs (ranks of a run on different machines stay identical). */
typedef enum mode {
    M_SGD,       /* no momentum */
    M_MOM_FIRST, /* momentum, step 0: v = d */
    M_MOM,       /* momentum */
    M_NESTEROV_FIRST,
    M_NESTEROV,
    M_ADAM, /* and AdamW (wd 0, decay 1 - lr wd) */
    M_ADAGRAD
} mode;

/* One step's constants, in the weight's dtype. */
#define DEFINE_PARAMS(T)                                                                           \
    typedef struct params_##T {                                                                    \
        mode m;                                                                                    \
        T lr, gs, wd, mu, step, bc2s, decay, b1, b2, eps;                                          \
    } params_##T;
DEFINE_PARAMS(float)
DEFINE_PARAMS(double)

typedef void (*update_fn)(void *w, const void *g, void *s0, void *s1, int64_t n, const void *p);
typedef double (*sumsq_fn)(const void *x, int64_t n);

/* The kernels of dtype T compiled with attribute ATTR, named <name>_T_SFX.  The SGD
 * variants keep PyTorch's order: d = g gs + wd w; v = mu v + d; w -= lr (d + mu v) or lr v.
 * sumsq keeps eight partial sums (element i goes to sum i % 8, then they are added in a
 * fixed tree): the same result on every ISA and thread count. */
#define DEFINE_KERNELS(T, SQRT, SFX, ATTR)                                                         \
    ATTR static void update_##T##_##SFX(void *wv, const void *gv, void *s0v, void *s1v, int64_t n, \
                                        const void *pv)                                            \
    {                                                                                              \
        T *restrict w = wv, *restrict s0 = s0v, *restrict s1 = s1v;                                \
        const T *restrict g = gv;                                                                  \
        const params_##T *p = pv;                                                                  \
        const T lr = p->lr, gs = p->gs, wd = p->wd, mu = p->mu;                                    \
        switch (p->m) {                                                                            \
        case M_SGD:                                                                                \
            for (int64_t i = 0; i < n; i++) w[i] -= lr * (g[i] * gs + wd * w[i]);                  \
            break;                                                                                 \
        case M_MOM_FIRST:                                                                          \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T d = g[i] * gs + wd * w[i];                                                       \
                s0[i] = d;                                                                         \
                w[i] -= lr * d;                                                                    \
            }                                                                                      \
            break;                                                                                 \
        case M_MOM:                                                                                \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T d = g[i] * gs + wd * w[i];                                                       \
                T b = mu * s0[i] + d;                                                              \
                s0[i] = b;                                                                         \
                w[i] -= lr * b;                                                                    \
            }                                                                                      \
            break;                                                                                 \
        case M_NESTEROV_FIRST:                                                                     \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T d = g[i] * gs + wd * w[i];                                                       \
                s0[i] = d;                                                                         \
                w[i] -= lr * (d + mu * d);                                                         \
            }                                                                                      \
            break;                                                                                 \
        case M_NESTEROV:                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T d = g[i] * gs + wd * w[i];                                                       \
                T b = mu * s0[i] + d;                                                              \
                s0[i] = b;                                                                         \
                w[i] -= lr * (d + mu * b);                                                         \
            }                                                                                      \
            break;                                                                                 \
        case M_ADAM: {                                                                             \
            const T step = p->step, bc2s = p->bc2s, decay = p->decay, b1 = p->b1, b2 = p->b2;      \
            const T eps = p->eps, c1 = 1 - b1, c2 = 1 - b2;                                        \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T x = w[i] * decay;                                                                \
                T d = g[i] * gs + wd * x;                                                          \
                T mi = s0[i] + c1 * (d - s0[i]); /* PyTorch's lerp */                              \
                T vi = b2 * s1[i] + c2 * d * d;                                                    \
                s0[i] = mi;                                                                        \
                s1[i] = vi;                                                                        \
                w[i] = x - step * (mi / (SQRT(vi) / bc2s + eps));                                  \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        case M_ADAGRAD: {                                                                          \
            const T eps = p->eps;                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T d = g[i] * gs + wd * w[i];                                                       \
                T hi = s0[i] + d * d;                                                              \
                s0[i] = hi;                                                                        \
                w[i] -= lr * d / (SQRT(hi) + eps);                                                 \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        }                                                                                          \
    }                                                                                              \
    ATTR static double sumsq_##T##_##SFX(const void *xv, int64_t n)                                \
    {                                                                                              \
        const T *restrict x = xv;                                                                  \
        double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                    \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int k = 0; k < 8; k++) s[k] += (double)x[i + k] * (double)x[i + k];               \
        for (int k = 0; i < n; i++, k++) s[k] += (double)x[i] * (double)x[i];                      \
        return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));                  \
    }

DEFINE_KERNELS(float, sqrtf, base, )
DEFINE_KERNELS(double, sqrt, base, )
#ifdef OG_CPU_X86
DEFINE_KERNELS(float, sqrtf, avx2, OG_TARGET_AVX2)
DEFINE_KERNELS(double, sqrt, avx2, OG_TARGET_AVX2)
#endif

static bool use_avx2(void)
{
#ifdef OG_CPU_X86
    return og_cpu_isa() >= 1;
#else
    return false;
#endif
}

static update_fn update_kernel(og_dtype dtype)
{
#ifdef OG_CPU_X86
    if (use_avx2()) return dtype == OG_FLOAT ? update_float_avx2 : update_double_avx2;
#endif
    return dtype == OG_FLOAT ? update_float_base : update_double_base;
}

static sumsq_fn sumsq_kernel(og_dtype dtype)
{
#ifdef OG_CPU_X86
    if (use_avx2()) return dtype == OG_FLOAT ? sumsq_float_avx2 : sumsq_double_avx2;
#endif
    return dtype == OG_FLOAT ? sumsq_float_base : sumsq_double_base;
}

/* Below this many elements a weight is updated by one thread: a parallel region costs more
 * than a small weight's whole update.  Above it, `threads` contiguous chunks (multiples of
 * 64 elements, so that no two threads write one cache line). */
#define PAR_MIN    32768
#define MAX_CHUNKS 256

static int chunks_of(int64_t n, int threads)
{
    if (n < PAR_MIN || threads <= 1) return 1;
    return threads < MAX_CHUNKS ? threads : MAX_CHUNKS;
}

static int64_t chunk_start(int64_t n, int chunks, int c)
{
    if (c >= chunks) return n;
    int64_t per = (n / chunks + 63) / 64 * 64;
    int64_t lo = per * c;
    return lo < n ? lo : n;
}

#define FILL_PARAMS(T, p)                                                                          \
    do {                                                                                           \
        (p).gs = (T)gscale;                                                                        \
        (p).wd = (T)o->weight_decay;                                                               \
        (p).mu = (T)o->momentum;                                                                   \
        (p).lr = (T)lr;                                                                            \
        (p).decay = 1;                                                                             \
        switch (o->kind) {                                                                         \
        case OG_OPTIMIZER_SGD:                                                                     \
            if (!(o->momentum > 0))                                                                \
                (p).m = M_SGD;                                                                     \
            else if (o->nesterov)                                                                  \
                (p).m = t == 0 ? M_NESTEROV_FIRST : M_NESTEROV;                                    \
            else                                                                                   \
                (p).m = t == 0 ? M_MOM_FIRST : M_MOM;                                              \
            break;                                                                                 \
        case OG_OPTIMIZER_ADAM:                                                                    \
        case OG_OPTIMIZER_ADAMW: {                                                                 \
            double k = (double)t + 1.0;                                                            \
            double bc1 = 1.0 - pow(o->beta1, k), bc2 = 1.0 - pow(o->beta2, k);                     \
            (p).m = M_ADAM;                                                                        \
            (p).step = (T)(lr / bc1);                                                              \
            (p).bc2s = (T)sqrt(bc2);                                                               \
            if (o->kind == OG_OPTIMIZER_ADAMW) {                                                   \
                (p).wd = 0;                                                                        \
                (p).decay = (T)(1.0 - lr * o->weight_decay);                                       \
            }                                                                                      \
            (p).b1 = (T)o->beta1;                                                                  \
            (p).b2 = (T)o->beta2;                                                                  \
            (p).eps = (T)o->eps;                                                                   \
            break;                                                                                 \
        }                                                                                          \
        case OG_OPTIMIZER_ADAGRAD:                                                                 \
            (p).m = M_ADAGRAD;                                                                     \
            (p).lr = (T)(lr / (1.0 + (double)t * o->lr_decay));                                    \
            (p).eps = (T)o->eps;                                                                   \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

/* One call's chunks: update (fn set) or partial sums of squares (sq set, into part) */
typedef struct optim_job {
    update_fn fn;
    sumsq_fn sq;
    const void *p;
    char *w, *s0, *s1;
    const char *g;
    size_t es;
    int64_t n;
    int chunks;
    double *part;
} optim_job;

static void optim_chunk(void *ctx, int64_t c0, int64_t c1, int slot)
{
    const optim_job *j = ctx;
    (void)slot;
    for (int64_t c = c0; c < c1; c++) {
        int64_t lo = chunk_start(j->n, j->chunks, (int)c),
                hi = chunk_start(j->n, j->chunks, (int)c + 1);
        size_t off = (size_t)lo * j->es;
        if (j->sq)
            j->part[c] = hi > lo ? j->sq(j->g + off, hi - lo) : 0.0;
        else if (hi > lo)
            j->fn(j->w + off, j->g + off, j->s0 ? j->s0 + off : NULL, j->s1 ? j->s1 + off : NULL,
                  hi - lo, j->p);
    }
}

/* The job's chunks on the workers when given, else on OpenMP's threads. */
static void optim_run(og_workers *workers, optim_job *j)
{
    if (workers) {
        og_workers_run(workers, j->chunks, j->chunks, 1, optim_chunk, j);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(j->chunks)
    for (int c = 0; c < j->chunks; c++) optim_chunk(j, c, c + 1, 0);
}

void og_optim_update(const og_optimizer_options *o, int64_t t, double lr, double gscale,
                     og_dtype dtype, void *w, const void *g, void *const *slots, int64_t n,
                     int threads, og_workers *workers)
{
    if (dtype != OG_FLOAT && dtype != OG_DOUBLE) return;
    params_float pf;
    params_double pd;
    memset(&pf, 0, sizeof pf);
    memset(&pd, 0, sizeof pd);
    const void *p;
    if (dtype == OG_FLOAT) {
        FILL_PARAMS(float, pf);
        p = &pf;
    } else {
        FILL_PARAMS(double, pd);
        p = &pd;
    }
    const update_fn fn = update_kernel(dtype);
    char *s0 = slots ? slots[0] : NULL, *s1 = slots ? slots[1] : NULL;
    const int chunks = chunks_of(n, threads);
    if (chunks == 1) {
        fn(w, g, s0, s1, n, p);
        return;
    }
    optim_job j = {.fn = fn,
                   .p = p,
                   .w = w,
                   .s0 = s0,
                   .s1 = s1,
                   .g = g,
                   .es = og_dtype_size(dtype),
                   .n = n,
                   .chunks = chunks};
    optim_run(workers, &j);
}

double og_optim_sumsq(og_dtype dtype, const void *x, int64_t n, int threads, og_workers *workers)
{
    if (dtype != OG_FLOAT && dtype != OG_DOUBLE) return 0;
    const sumsq_fn fn = sumsq_kernel(dtype);
    const int chunks = chunks_of(n, threads);
    if (chunks == 1) return fn(x, n);
    /* per-chunk sums added in chunk order: the result does not depend on thread timing */
    double part[MAX_CHUNKS];
    optim_job j = {
        .sq = fn, .g = x, .es = og_dtype_size(dtype), .n = n, .chunks = chunks, .part = part};
    optim_run(workers, &j);
    double s = 0;
    for (int c = 0; c < chunks; c++) s += part[c];
    return s;
}

bool og_optim_finite(og_dtype dtype, const void *x, int64_t n)
{
    /* NaN and Inf have every exponent bit set; integer tests OR-ed together vectorize */
    const unsigned char *b = x;
    if (dtype == OG_FLOAT) {
        uint32_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, b + 4 * i, sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        return !bad;
    }
    if (dtype == OG_DOUBLE) {
        uint64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            uint64_t u;
            memcpy(&u, b + 8 * i, sizeof u);
            bad |= (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
        }
        return !bad;
    }
    return true;
}
