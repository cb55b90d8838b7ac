/* loss.c: CPU kernels of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, for
 * float32 and float64 scores and int32 or int64 targets.
 *
 * The input is viewed as [N, C, D] (D the product of the trailing dims) and the target as
 * [N, D].  Element i of the target contributes -x[n, t, d] * w[t] (0 with weight 0 when
 * t == ignore_index); "mean" divides the sum by the sum of those weights.  Sums run in
 * double.  The loops of one (scores, target) dtype pair form a loss_loops table that the
 * session binds to the node when it is created. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/loss.h"

typedef struct loss_dims {
    int64_t N, C, D;
} loss_dims;

/* Sum of weighted losses and of weights; per-element losses into `none` when set.  Returns
 * the target index of the first label out of range, or -1. */
#define DEFINE_NLL(T, TI)                                                                          \
    static int64_t nll_##T##_##TI(const loss_dims *g, const void *xv, const void *tgt,             \
                                  const void *wv, const og_loss_params *p, void *nonev,            \
                                  double *sum, double *wsum)                                       \
    {                                                                                              \
        const T *restrict x = xv, *restrict w = wv;                                                \
        T *restrict none = nonev;                                                                  \
        const TI *restrict tg = tgt;                                                               \
        double s = 0, ws = 0;                                                                      \
        for (int64_t i = 0; i < g->N * g->D; i++) {                                                \
            int64_t t = tg[i];                                                                     \
            if (p->has_ignore && t == p->ignore_index) {                                           \
                if (none) none[i] = 0;                                                             \
                continue;                                                                          \
            }                                                                                      \
            if (t < 0 || t >= g->C) return i;                                                      \
            int64_t n = i / g->D, d = i % g->D;                                                    \
            double wt = w ? (double)w[t] : 1.0;                                                    \
            double l = -(double)x[(n * g->C + t) * g->D + d] * wt;                                 \
            if (none) none[i] = (T)l;                                                              \
            s += l;                                                                                \
            ws += wt;                                                                              \
        }                                                                                          \
        *sum = s;                                                                                  \
        *wsum = ws;                                                                                \
        return -1;                                                                                 \
    }

#define DEFINE_LOSS(T)                                                                             \
    DEFINE_NLL(T, int32_t)                                                                         \
    DEFINE_NLL(T, int64_t)                                                                         \
    /* log_softmax over the class dim of one sample x[C, D]; m holds D doubles of scratch */       \
    static void log_softmax_##T(const T *restrict x, T *restrict lp, int64_t C, int64_t D,         \
                                double *restrict m, double *restrict s)                            \
    {                                                                                              \
        for (int64_t d = 0; d < D; d++) {                                                          \
            m[d] = -INFINITY;                                                                      \
            s[d] = 0;                                                                              \
        }                                                                                          \
        for (int64_t c = 0; c < C; c++)                                                            \
            for (int64_t d = 0; d < D; d++) m[d] = x[c * D + d] > m[d] ? x[c * D + d] : m[d];      \
        for (int64_t c = 0; c < C; c++)                                                            \
            for (int64_t d = 0; d < D; d++) s[d] += exp(x[c * D + d] - m[d]);                      \
        for (int64_t d = 0; d < D; d++) m[d] += log(s[d]);                                         \
        for (int64_t c = 0; c < C; c++)                                                            \
            for (int64_t d = 0; d < D; d++) lp[c * D + d] = (T)(x[c * D + d] - m[d]);              \
    }                                                                                              \
    static void log_softmax_all_##T(const og_kernel_ctx *k, const loss_dims *g, const void *xv,    \
                                    void *lpv, double *scratch)                                    \
    {                                                                                              \
        const T *x = xv;                                                                           \
        T *lp = lpv;                                                                               \
        const int64_t CD = g->C * g->D;                                                            \
        OG_PARALLEL_FOR(k, g->N, CD * 8, n, {                                                      \
            log_softmax_##T(x + n * CD, lp + n * CD, g->C, g->D, scratch + 2 * n * g->D,           \
                            scratch + (2 * n + 1) * g->D);                                         \
        });                                                                                        \
    }

DEFINE_LOSS(float)
DEFINE_LOSS(double)

/* The loops of one (scores, target) dtype pair: what select_loss binds. */
typedef struct loss_loops {
    /* per-element losses, their sums and the weights' (returns the first target index out
     * of range, or -1) */
    int64_t (*nll)(const loss_dims *g, const void *x, const void *tgt, const void *w,
                   const og_loss_params *p, void *none, double *sum, double *wsum);
    void (*log_softmax)(const og_kernel_ctx *k, const loss_dims *g, const void *x, void *lp,
                        double *scratch);
    void (*store)(void *dst, double v); /* the reduced loss */
} loss_loops;

static void store_float(void *dst, double v) { *(float *)dst = (float)v; }
static void store_double(void *dst, double v) { *(double *)dst = v; }

/* [scores float32, float64][target int32, int64] */
static const loss_loops loss_tables[2][2] = {
    {{nll_float_int32_t, log_softmax_all_float, store_float},
     {nll_float_int64_t, log_softmax_all_float, store_float}},
    {{nll_double_int32_t, log_softmax_all_double, store_double},
     {nll_double_int64_t, log_softmax_all_double, store_double}}};

/* The loops of scores dtype t and target dtype ti, NULL if the CPU has none. */
static const loss_loops *loss_loops_of(og_dtype t, og_dtype ti)
{
    int a = t == OG_FLOAT ? 0 : t == OG_DOUBLE ? 1 : -1;
    int b = ti == OG_INT32 ? 0 : ti == OG_INT64 ? 1 : -1;
    return a < 0 || b < 0 ? NULL : &loss_tables[a][b];
}

/* The binding of float16 and bfloat16 scores: the float32 loops run on widened copies of
 * the 16-bit inputs, the outputs rounded once (og_kernel_via_f32).  A marker. */
static const loss_loops loss_via_f32 = {NULL, NULL, NULL};

/* Two type variables: the scores' (input 0, the constraint; the weights share it) and the
 * target's (input 1), both read by the loops.  A target or weights dtype not known before
 * the run leaves the choice to the kernel. */
static const void *select_loss(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    if (n->n_in < 2 || t[1] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    if (n->n_in > 2 && n->in[2] >= 0) {
        if (t[2] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
        if (t[2] != t[0]) return NULL;
    }
    if (og_is_half(t[0])) return loss_loops_of(OG_FLOAT, t[1]) ? &loss_via_f32 : NULL;
    return loss_loops_of(t[0], t[1]);
}

static og_status loss_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const og_loss_params *p = k->params;
    const og_tensor *x = in[0], *t = in[1], *w = n_in > 2 ? in[2] : NULL;
    og_tensor *loss = out[0];
    og_tensor *lp_out = n_out > 1 ? out[1] : NULL;
    bool sce = strcmp(k->node->op_type, "SoftmaxCrossEntropyLoss") == 0;
    og_dtype dt = x->dtype;
    if (k->impl ? k->impl == (const void *)&loss_via_f32 : og_is_half(dt))
        return og_kernel_via_f32_unbound(k, loss_kernel, in, n_in, out, n_out);
    /* k->impl: the loops of the (scores, target) pair bound at session creation, which also
     * checked the weights' dtype; without a binding, pick them here */
    const loss_loops *L = k->impl ? k->impl : loss_loops_of(dt, t->dtype);
    if (!L || (!k->impl && w && w->dtype != dt))
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element types %s/%s are not supported",
                               og_dtype_name(dt), og_dtype_name(t->dtype));
    loss_dims g = {x->dims[0], x->dims[1], 1};
    for (int d = 2; d < x->rank; d++) g.D *= x->dims[d];
    size_t esz = og_dtype_size(dt);
    void *scores = x->data;
    void *tmp = NULL;
    double *sm = NULL;
    og_status st = OG_OK;
    if (sce && x->numel > 0) {
        /* log-probabilities, into the log_prob output when the node asks for it */
        if (!lp_out) {
            tmp = og_malloc(k->alloc, (size_t)x->numel * esz);
            if (!tmp) goto nomem;
        }
        sm = og_malloc(k->alloc, (size_t)(2 * g.N * g.D) * sizeof *sm);
        if (!sm) goto nomem;
        scores = lp_out ? lp_out->data : tmp;
        L->log_softmax(k, &g, x->data, scores, sm);
    }
    double sum = 0, wsum = 0;
    int64_t bad = -1;
    void *none = p->reduction == OG_REDUCE_NONE ? loss->data : NULL;
    if (g.N * g.D > 0) bad = L->nll(&g, scores, t->data, w ? w->data : NULL, p, none, &sum, &wsum);
    if (bad >= 0) {
        st = og_kernel_error(k, OG_ERR_RUNTIME,
                             "input 1 (target) has value %lld at index %lld, out of range for "
                             "%lld classes",
                             (long long)og_tensor_get_i64(t, bad), (long long)bad, (long long)g.C);
        goto done;
    }
    if (p->reduction != OG_REDUCE_NONE) {
        /* mean over no counted element is 0/0: NaN, as numpy and PyTorch give */
        L->store(loss->data, p->reduction == OG_REDUCE_SUM ? sum : sum / wsum);
    }
    goto done;
nomem:
    st = og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
done:
    og_free(k->alloc, tmp);
    og_free(k->alloc, sm);
    return st;
}

/* Scores (input 0) float32 or float64 and target (input 1) int32 or int64: select_loss binds
 * the loops of the pair (the weights must have the scores' dtype). */
const og_kernel_def og_cpu_loss[] = {{.name = "NegativeLogLikelihoodLoss",
                                      .domain = "",
                                      .fn = loss_kernel,
                                      .select_types = select_loss},
                                     {.name = "SoftmaxCrossEntropyLoss",
                                      .domain = "",
                                      .fn = loss_kernel,
                                      .select_types = select_loss},
                                     {.name = NULL}};
