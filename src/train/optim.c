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

/* LOOP(n, threads, body): body for i in [0, n), split over threads only for large n (a
 * parallel region, even a serial one, costs more than a small weight's whole update). */
#define PAR_MIN 32768
// clang-format off
#define LOOP(n, threads, body)                                                                     \
    do {                                                                                           \
        if ((n) >= PAR_MIN && (threads) > 1) {                                                     \
            _Pragma("omp parallel for schedule(static) num_threads(threads)")                      \
            for (int64_t i = 0; i < (n); i++) body                                                 \
        } else {                                                                                   \
            for (int64_t i = 0; i < (n); i++) body                                                 \
        }                                                                                          \
    } while (0)
#define PAR_SUM(threads)                                                                           \
    _Pragma("omp parallel for schedule(static) num_threads(threads) reduction(+ : s)")
// clang-format on

/* One loop per optimizer and dtype, each fused: a weight is read and written once. */
#define DEFINE_UPDATES(T, SQRT)                                                                    \
    static void sgd_##T(T *restrict w, const T *restrict g, T *restrict v, int64_t n, T lr, T gs,  \
                        T wd, T mu, int nesterov, int first, int threads)                          \
    {                                                                                              \
        if (!v) {                                                                                  \
            LOOP(n, threads, { w[i] -= lr * (g[i] * gs + wd * w[i]); });                           \
            return;                                                                                \
        }                                                                                          \
        LOOP(n, threads, {                                                                         \
            T d = g[i] * gs + wd * w[i];                                                           \
            T b = first ? d : mu * v[i] + d;                                                       \
            v[i] = b;                                                                              \
            w[i] -= lr * (nesterov ? d + mu * b : b);                                              \
        });                                                                                        \
    }                                                                                              \
    static void adam_##T(T *restrict w, const T *restrict g, T *restrict m, T *restrict v,         \
                         int64_t n, T step, T bc2s, T gs, T wd, T decay, T b1, T b2, T eps,        \
                         int threads)                                                              \
    {                                                                                              \
        LOOP(n, threads, {                                                                         \
            T x = w[i] * decay;                                                                    \
            T d = g[i] * gs + wd * x;                                                              \
            T mi = m[i] + (1 - b1) * (d - m[i]); /* PyTorch's lerp */                              \
            T vi = b2 * v[i] + (1 - b2) * d * d;                                                   \
            m[i] = mi;                                                                             \
            v[i] = vi;                                                                             \
            w[i] = x - step * (mi / (SQRT(vi) / bc2s + eps));                                      \
        });                                                                                        \
    }                                                                                              \
    static void adagrad_##T(T *restrict w, const T *restrict g, T *restrict h, int64_t n, T lr,    \
                            T gs, T wd, T eps, int threads)                                        \
    {                                                                                              \
        LOOP(n, threads, {                                                                         \
            T d = g[i] * gs + wd * w[i];                                                           \
            T hi = h[i] + d * d;                                                                   \
            h[i] = hi;                                                                             \
            w[i] -= lr * d / (SQRT(hi) + eps);                                                     \
        });                                                                                        \
    }                                                                                              \
    static double sumsq_##T(const T *restrict x, int64_t n, int threads)                           \
    {                                                                                              \
        double s = 0;                                                                              \
        if (n >= PAR_MIN && threads > 1) {                                                         \
            PAR_SUM(threads)                                                                       \
            for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];                      \
        }                                                                                          \
        return s;                                                                                  \
    }                                                                                              \
    static void update_##T(const og_optimizer_options *o, int64_t t, double lr, double gscale,     \
                           T *w, const T *g, void *const *slots, int64_t n, int threads)           \
    {                                                                                              \
        T gs = (T)gscale, wd = (T)o->weight_decay;                                                 \
        switch (o->kind) {                                                                         \
        case OG_OPTIMIZER_SGD:                                                                     \
            sgd_##T(w, g, o->momentum > 0 ? (T *)slots[0] : NULL, n, (T)lr, gs, wd,                \
                    (T)o->momentum, o->nesterov, t == 0, threads);                                 \
            break;                                                                                 \
        case OG_OPTIMIZER_ADAM:                                                                    \
        case OG_OPTIMIZER_ADAMW: {                                                                 \
            double k = (double)t + 1.0;                                                            \
            double bc1 = 1.0 - pow(o->beta1, k), bc2 = 1.0 - pow(o->beta2, k);                     \
            bool decoupled = o->kind == OG_OPTIMIZER_ADAMW;                                        \
            adam_##T(w, g, (T *)slots[0], (T *)slots[1], n, (T)(lr / bc1), (T)sqrt(bc2), gs,       \
                     decoupled ? (T)0 : wd, decoupled ? (T)(1.0 - lr * o->weight_decay) : (T)1,    \
                     (T)o->beta1, (T)o->beta2, (T)o->eps, threads);                                \
            break;                                                                                 \
        }                                                                                          \
        case OG_OPTIMIZER_ADAGRAD:                                                                 \
            adagrad_##T(w, g, (T *)slots[0], n, (T)(lr / (1.0 + (double)t * o->lr_decay)), gs, wd, \
                        (T)o->eps, threads);                                                       \
            break;                                                                                 \
        }                                                                                          \
    }

DEFINE_UPDATES(float, sqrtf)
DEFINE_UPDATES(double, sqrt)

void og_optim_update(const og_optimizer_options *o, int64_t t, double lr, double gscale,
                     og_dtype dtype, void *w, const void *g, void *const *slots, int64_t n,
                     int threads)
{
    if (threads < 1) threads = 1;
    if (dtype == OG_FLOAT)
        update_float(o, t, lr, gscale, w, g, slots, n, threads);
    else if (dtype == OG_DOUBLE)
        update_double(o, t, lr, gscale, w, g, slots, n, threads);
}

double og_optim_sumsq(og_dtype dtype, const void *x, int64_t n, int threads)
{
    if (threads < 1) threads = 1;
    if (dtype == OG_FLOAT) return sumsq_float(x, n, threads);
    if (dtype == OG_DOUBLE) return sumsq_double(x, n, threads);
    return 0;
}
