/* rnn.c: CPU kernels of RNN, GRU and LSTM (forward, training forward with the state the
 * backward reads, and backward through time), float32 and float64 (see src/ops/rnn.h).
 *
 * Forward, per direction: one product X·Wᵀ for the inputs of all steps, then per step one
 * product Ht-1·Rᵀ for every batch row and the gates row by row.  A row past its sequence
 * length carries its state and writes zeros to Y; Y_h (and Y_c) of a row without steps
 * are zeros, as onnxruntime gives them.
 * Backward, per direction, steps in the reverse of the order the forward took them: the
 * gradients of the pre-activations row by row, the state gradient passed back through one
 * product with R per step; then dX, dW, dR in three products over all steps and dB, dP as
 * sums.  float16 runs the float32 loops on converted copies. */
#include <string.h>
#include <math.h>

#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel.h"
#include "ops/rnn.h"

/* The sizes of a run, and where things are. */
typedef struct rnn_geom {
    int64_t T, N, I, H, D, G, K;
    int layout;
    const int32_t *lens; /* NULL: every row has T steps */
} rnn_geom;

/* row of X (and of X·Wᵀ) for step t of batch row n */
static inline int64_t xrow(const rnn_geom *g, int64_t t, int64_t n)
{
    return g->layout ? n * g->T + t : t * g->N + n;
}

/* offset of Y's H elements for (t, d, n) */
static inline int64_t yoff(const rnn_geom *g, int64_t t, int64_t d, int64_t n)
{
    return (g->layout ? (n * g->T + t) * g->D + d : (t * g->D + d) * g->N + n) * g->H;
}

/* offset of a state's H elements (initial_h, Y_h, ...) for (d, n) */
static inline int64_t soff(const rnn_geom *g, int64_t d, int64_t n)
{
    return (g->layout ? n * g->D + d : d * g->N + n) * g->H;
}

/* offset of saved's row (d, t, n) */
static inline int64_t svoff(const rnn_geom *g, int64_t d, int64_t t, int64_t n)
{
    return ((d * g->T + t) * g->N + n) * g->K;
}

static inline bool active(const rnn_geom *g, int64_t t, int64_t n)
{
    return !g->lens || t < g->lens[n];
}

/* float's gates take fast_math.h's tanh, exp and expm1 (a few ulp, in SIMD: libm's calls
 * were half of an LSTM's training step), double libm's */
static inline float tanh_rf(float x) { return fast_tanhf(x); }
static inline float exp_rf(float x) { return fast_expf(x); }
static inline float expm1_rf(float x) { return fast_expm1f(x); }
static inline float fabs_rf(float x) { return fabsf(x); }
static inline float log1p_rf(float x) { return log1pf(x); }
#ifdef OG_CPU_X86
/* The Sigmoid and Tanh gates of act_apply_f32, compiled for AVX2 and AVX-512: the same
 * expressions (no contraction), so the same bits as the baseline loop */
#define GATE_LOOPS(SFX, TARGET)                                                                    \
    TARGET static void gate_sigmoid##SFX(const float *x, float *y, int64_t n)                      \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            float e = exp_rf(-fabs_rf(x[i]));                                                      \
            y[i] = x[i] >= 0 ? 1 / (1 + e) : e / (1 + e);                                          \
        }                                                                                          \
    }                                                                                              \
    TARGET static void gate_tanh##SFX(const float *x, float *y, int64_t n)                         \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) y[i] = tanh_rf(x[i]);                                      \
    }
GATE_LOOPS(_avx2, OG_TARGET_AVX2)
GATE_LOOPS(_avx512, OG_TARGET_AVX512)

static bool act_wide_f32(const og_rnn_act *a, const float *x, float *y, int64_t n)
{
    const int isa = og_cpu_isa();
    if (isa < 1 || (a->kind != OG_ACT_SIGMOID && a->kind != OG_ACT_TANH)) return false;
    if (a->kind == OG_ACT_SIGMOID)
        isa >= 2 ? gate_sigmoid_avx512(x, y, n) : gate_sigmoid_avx2(x, y, n);
    else
        isa >= 2 ? gate_tanh_avx512(x, y, n) : gate_tanh_avx2(x, y, n);
    return true;
}
#define ACT_WIDE act_wide_f32
#endif
#define RT    float
#define FN(x) x##_f32
#define GEMM  og_gemm_f32
#define M(fn) fn##_rf
#include "kernels/cpu/rnn_typed.inc"
#undef ACT_WIDE
#undef RT
#undef FN
#undef GEMM
#undef M
#define RT    double
#define FN(x) x##_f64
#define GEMM  og_gemm_f64
#define M(fn) fn
#include "kernels/cpu/rnn_typed.inc"
#undef RT
#undef FN
#undef GEMM
#undef M

/* ---- float16 --------------------------------------------------------------------------- */

/* fn on float32 copies of the float16 inputs, its float32 outputs rounded back; fn gets the
 * float32 binding f32 as k->impl. */
static og_status via_float(const og_kernel_ctx *k, const og_float_impl *f32, og_kernel_fn fn,
                           const og_tensor *const *in, int n_in, og_tensor *const *out, int n_out)
{
    og_kernel_ctx kk = *k;
    kk.impl = f32;
    og_tensor *fin[16] = {0}, *fout[16] = {0};
    bool own[16] = {0};
    og_status st = OG_OK;
    if (n_in > 16 || n_out > 16) return og_kernel_error(k, OG_ERR_INTERNAL, "too many operands");
    for (int i = 0; i < n_in; i++) {
        fin[i] = (og_tensor *)in[i];
        if (!in[i] || in[i]->dtype != OG_FLOAT16) continue;
        if (og_tensor_create(OG_FLOAT, in[i]->rank, in[i]->dims, k->alloc, &fin[i])) goto nomem;
        own[i] = true;
        const uint16_t *h = in[i]->data;
        float *f = fin[i]->data;
        for (int64_t e = 0; e < in[i]->numel; e++) f[e] = og_half_to_float(h[e]);
    }
    for (int j = 0; j < n_out; j++)
        if (out[j] && og_tensor_create(OG_FLOAT, out[j]->rank, out[j]->dims, k->alloc, &fout[j]))
            goto nomem;
    st = fn(&kk, (const og_tensor *const *)fin, n_in, fout, n_out);
    for (int j = 0; !st && j < n_out; j++) {
        if (!out[j]) continue;
        const float *f = fout[j]->data;
        uint16_t *h = out[j]->data;
        for (int64_t e = 0; e < out[j]->numel; e++) h[e] = og_float_to_half(f[e]);
    }
    goto done;
nomem:
    st = og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
done:
    for (int i = 0; i < n_in; i++)
        if (own[i]) og_tensor_free(fin[i]);
    for (int j = 0; j < n_out; j++) og_tensor_free(fout[j]);
    return st;
}

/* ---- shared checks ------------------------------------------------------------------- */

static const og_tensor *opt(const og_tensor *const *in, int n_in, int i)
{
    return i < n_in ? in[i] : NULL;
}

/* The geometry of a run from X, R and sequence_lens (whose values are checked). */
static og_status geometry(const og_kernel_ctx *k, const og_rnn_params *p,
                          const og_tensor *const *in, int n_in, rnn_geom *g)
{
    const og_tensor *X = in[0], *R = in[2], *seq = opt(in, n_in, OG_RNN_IN_SEQ);
    g->layout = p->layout;
    g->T = X->dims[p->layout ? 1 : 0];
    g->N = X->dims[p->layout ? 0 : 1];
    g->I = X->dims[2];
    g->H = R->dims[2];
    g->D = p->num_dir;
    g->G = p->gates;
    g->K = og_rnn_saved_width(p, g->H);
    g->lens = NULL;
    if (seq) {
        if (seq->dtype != OG_INT32)
            return og_kernel_error(k, OG_ERR_TYPE, "sequence_lens is %s, expected int32",
                                   og_dtype_name(seq->dtype));
        g->lens = seq->data;
        for (int64_t n = 0; n < g->N; n++)
            if (g->lens[n] < 0 || g->lens[n] > g->T)
                return og_kernel_error(k, OG_ERR_RUNTIME,
                                       "sequence_lens[%lld] is %d, outside 0..%lld (the "
                                       "sequence length)",
                                       (long long)n, (int)g->lens[n], (long long)g->T);
    }
    return OG_OK;
}

/* n elements of es bytes of the session's scratch (kept from call to call: a fresh block
 * per call was an LSTM step's page faults), zeroed; NULL when out of memory. */
static void *zeroed_scratch(const og_kernel_ctx *k, size_t n, size_t es)
{
    void *p = n > SIZE_MAX / es ? NULL : og_scratch_get(k, n * es);
    if (p) memset(p, 0, n * es);
    return p;
}

/* Size in elements of the forward's scratch. */
static size_t fwd_scratch(const rnn_geom *g)
{
    size_t GH = (size_t)(g->G * g->H), N = (size_t)g->N, H = (size_t)g->H;
    return (size_t)g->T * N * GH + N * GH + 2 * N * H + GH + N * H + 3 * N * GH + 1;
}

#define FWD_DIRS(TT, SFX)                                                                          \
    do {                                                                                           \
        TT *ws = zeroed_scratch(k, fwd_scratch(&g), sizeof(TT));                                   \
        if (!ws) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");                         \
        rnn_fwd_##SFX s = {.p = p, .g = &g};                                                       \
        size_t GH = (size_t)(g.G * g.H), N = (size_t)g.N, H = (size_t)g.H;                         \
        s.xw = ws;                                                                                 \
        s.rec = s.xw + (size_t)g.T * N * GH;                                                       \
        s.h = s.rec + N * GH;                                                                      \
        s.c = p->kind == OG_RNN_LSTM ? s.h + N * H : NULL;                                         \
        s.bias = s.h + 2 * N * H;                                                                  \
        s.rh = s.bias + GH;                                                                        \
        s.row = s.rh + N * H;                                                                      \
        s.X = X->data;                                                                             \
        s.W = in[1]->data;                                                                         \
        s.R = in[2]->data;                                                                         \
        s.B = B ? B->data : NULL;                                                                  \
        s.h0 = h0 ? h0->data : NULL;                                                               \
        s.c0 = c0 ? c0->data : NULL;                                                               \
        s.P = P ? P->data : NULL;                                                                  \
        s.Y = Y ? Y->data : NULL;                                                                  \
        s.Yh = Yh ? Yh->data : NULL;                                                               \
        s.Yc = Yc ? Yc->data : NULL;                                                               \
        s.saved = saved ? saved->data : NULL;                                                      \
        for (int d = 0; d < p->num_dir; d++) {                                                     \
            s.d = d;                                                                               \
            s.rev = p->direction == 1 || d == 1;                                                   \
            s.act = p->act[d];                                                                     \
            fwd_dir_##SFX(k, &s);                                                                  \
        }                                                                                          \
        og_scratch_put(k, ws);                                                                     \
    } while (0)

/* The tensors of a run, named as the forward's and backward's loops read them. */
typedef struct rnn_io {
    const og_tensor *X, *B, *h0, *c0, *P, *saved, *dY, *dYh, *dYc;
    og_tensor *Y, *Yh, *Yc, *osaved, *dX, *dW, *dR, *dB, *dh0, *dc0, *dP;
} rnn_io;

/* A dtype's loops (the binding's og_float_impl.loops): forward and backward, all directions */
typedef og_status (*rnn_dirs_fn)(const og_kernel_ctx *k, const og_rnn_params *p, rnn_geom g,
                                 const og_tensor *const *in, const rnn_io *io);
typedef struct rnn_loops {
    rnn_dirs_fn fwd, bwd;
} rnn_loops;
static const og_float_impl *rnn_impl_of(og_dtype t);

#define DEF_FWD(TT, SFX)                                                                           \
    static og_status fwd_all_##SFX(const og_kernel_ctx *k, const og_rnn_params *p, rnn_geom g,     \
                                   const og_tensor *const *in, const rnn_io *io)                   \
    {                                                                                              \
        const og_tensor *X = io->X, *B = io->B, *h0 = io->h0, *c0 = io->c0, *P = io->P;            \
        og_tensor *Y = io->Y, *Yh = io->Yh, *Yc = io->Yc, *saved = io->osaved;                     \
        FWD_DIRS(TT, SFX);                                                                         \
        return OG_OK;                                                                              \
    }
DEF_FWD(float, f32)
DEF_FWD(double, f64)

/* RNN, GRU, LSTM and their ...Train forms. */
static og_status rnn_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_rnn_params *p = k->params;
    /* k->impl: bound at session creation; without a binding, picked here */
    const og_float_impl *im = k->impl ? k->impl : rnn_impl_of(in[0]->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(in[0]->dtype));
    if (!im->loops) return via_float(k, im->f32, rnn_kernel, in, n_in, out, n_out);
    rnn_geom g;
    og_status st = geometry(k, p, in, n_in, &g);
    if (st) return st;
    int nout = og_rnn_n_out(p->kind);
    rnn_io io = {.X = in[0], .B = opt(in, n_in, OG_RNN_IN_B), .h0 = opt(in, n_in, OG_RNN_IN_H0)};
    io.c0 = p->kind == OG_RNN_LSTM ? opt(in, n_in, OG_RNN_IN_C0) : NULL;
    io.P = p->kind == OG_RNN_LSTM ? opt(in, n_in, OG_RNN_IN_P) : NULL;
    io.Y = n_out > 0 ? out[0] : NULL;
    io.Yh = n_out > 1 ? out[1] : NULL;
    io.Yc = p->kind == OG_RNN_LSTM && n_out > 2 ? out[2] : NULL;
    io.osaved = p->role == OG_RNN_TRAIN && n_out > nout ? out[nout] : NULL;
    for (int i = 1; i < n_in && i < og_rnn_n_in(p->kind); i++)
        if (in[i] && i != OG_RNN_IN_SEQ && in[i]->dtype != io.X->dtype)
            return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, but X is %s", i,
                                   og_dtype_name(in[i]->dtype), og_dtype_name(io.X->dtype));
    return ((const rnn_loops *)im->loops)->fwd(k, p, g, in, &io);
}

/* Size in elements of the backward's scratch (per direction, reused). */
static size_t bwd_scratch(const rnn_geom *g, bool two)
{
    size_t GH = (size_t)(g->G * g->H), N = (size_t)g->N, H = (size_t)g->H;
    size_t rows = (size_t)g->T * N;
    return rows * GH * (two ? 2 : 1) + 2 * rows * H + 3 * N * H + 3 * N * GH + 1;
}

#define BWD_DIRS(TT, SFX)                                                                          \
    do {                                                                                           \
        bool two = p->kind == OG_RNN_GRU && p->linear_before_reset;                                \
        TT *ws = zeroed_scratch(k, bwd_scratch(&g, two), sizeof(TT));                              \
        if (!ws) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");                         \
        rnn_bwd_##SFX s = {.p = p, .g = &g};                                                       \
        size_t GH = (size_t)(g.G * g.H), N = (size_t)g.N, H = (size_t)g.H;                         \
        size_t rows = (size_t)g.T * N;                                                             \
        s.din = ws;                                                                                \
        s.drec = two ? s.din + rows * GH : s.din;                                                  \
        s.hprev = s.din + rows * GH * (two ? 2 : 1);                                               \
        s.rh = p->kind == OG_RNN_GRU && !p->linear_before_reset ? s.hprev + rows * H : NULL;       \
        s.dh = s.hprev + 2 * rows * H;                                                             \
        s.dc = p->kind == OG_RNN_LSTM ? s.dh + N * H : NULL;                                       \
        s.tmp = s.dh + 2 * N * H;                                                                  \
        s.row = s.tmp + N * H;                                                                     \
        s.X = X->data;                                                                             \
        s.W = in[1]->data;                                                                         \
        s.R = in[2]->data;                                                                         \
        s.B = B ? B->data : NULL;                                                                  \
        s.h0 = h0 ? h0->data : NULL;                                                               \
        s.c0 = c0 ? c0->data : NULL;                                                               \
        s.P = P ? P->data : NULL;                                                                  \
        s.saved = saved->data;                                                                     \
        s.dY = dY ? dY->data : NULL;                                                               \
        for (int d = 0; d < p->num_dir; d++) {                                                     \
            s.d = d;                                                                               \
            s.rev = p->direction == 1 || d == 1;                                                   \
            s.act = p->act[d];                                                                     \
            bwd_dir_##SFX(k, &s, dYh ? dYh->data : NULL, dYc ? dYc->data : NULL,                   \
                          dX ? dX->data : NULL, dW ? dW->data : NULL, dR ? dR->data : NULL,        \
                          dB ? dB->data : NULL, dh0 ? dh0->data : NULL, dc0 ? dc0->data : NULL,    \
                          dP ? dP->data : NULL, d > 0);                                            \
        }                                                                                          \
        og_scratch_put(k, ws);                                                                     \
    } while (0)

#define DEF_BWD(TT, SFX)                                                                           \
    static og_status bwd_all_##SFX(const og_kernel_ctx *k, const og_rnn_params *p, rnn_geom g,     \
                                   const og_tensor *const *in, const rnn_io *io)                   \
    {                                                                                              \
        const og_tensor *X = io->X, *B = io->B, *h0 = io->h0, *c0 = io->c0, *P = io->P;            \
        const og_tensor *saved = io->saved, *dY = io->dY, *dYh = io->dYh, *dYc = io->dYc;          \
        og_tensor *dX = io->dX, *dW = io->dW, *dR = io->dR, *dB = io->dB, *dh0 = io->dh0;          \
        og_tensor *dc0 = io->dc0, *dP = io->dP;                                                    \
        BWD_DIRS(TT, SFX);                                                                         \
        return OG_OK;                                                                              \
    }
DEF_BWD(float, f32)
DEF_BWD(double, f64)

/* RNNGrad, GRUGrad, LSTMGrad. */
static og_status rnn_grad_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                 og_tensor *const *out, int n_out)
{
    const og_rnn_params *p = k->params;
    const og_float_impl *im = k->impl ? k->impl : rnn_impl_of(in[0]->dtype);
    if (!im)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "element type %s is not supported",
                               og_dtype_name(in[0]->dtype));
    if (!im->loops) return via_float(k, im->f32, rnn_grad_kernel, in, n_in, out, n_out);
    rnn_geom g;
    og_status st = geometry(k, p, in, n_in, &g);
    if (st) return st;
    int nin = og_rnn_n_in(p->kind);
    bool lstm = p->kind == OG_RNN_LSTM;
    rnn_io io = {.X = in[0], .B = opt(in, n_in, OG_RNN_IN_B), .h0 = opt(in, n_in, OG_RNN_IN_H0)};
    io.c0 = lstm ? opt(in, n_in, OG_RNN_IN_C0) : NULL;
    io.P = lstm ? opt(in, n_in, OG_RNN_IN_P) : NULL;
    io.saved = opt(in, n_in, nin);
    io.dY = opt(in, n_in, nin + 1);
    io.dYh = opt(in, n_in, nin + 2);
    io.dYc = lstm ? opt(in, n_in, nin + 3) : NULL;
    if (!io.saved) return og_kernel_error(k, OG_ERR_MODEL, "input %d (saved) is missing", nin);
    for (int i = 1; i < n_in; i++)
        if (in[i] && i != OG_RNN_IN_SEQ && in[i]->dtype != io.X->dtype)
            return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, but X is %s", i,
                                   og_dtype_name(in[i]->dtype), og_dtype_name(io.X->dtype));
    io.dX = n_out > 0 ? out[0] : NULL;
    io.dW = n_out > 1 ? out[1] : NULL;
    io.dR = n_out > 2 ? out[2] : NULL;
    io.dB = n_out > 3 ? out[3] : NULL;
    io.dh0 = n_out > 5 ? out[5] : NULL;
    io.dc0 = lstm && n_out > 6 ? out[6] : NULL;
    io.dP = lstm && n_out > 7 ? out[7] : NULL;
    if (io.dX) memset(io.dX->data, 0, og_tensor_nbytes(io.dX)); /* accumulated over directions */
    return ((const rnn_loops *)im->loops)->bwd(k, p, g, in, &io);
}

/* The typed loops of a dtype: the forward's and the backward's over all directions. */
static const rnn_loops rnn_loops_t[2] = {{fwd_all_f32, bwd_all_f32}, {fwd_all_f64, bwd_all_f64}};
OG_FLOAT_IMPLS(rnn_impls, &rnn_loops_t[0], &rnn_loops_t[1]);

/* float32, float64, and float16 through float32's binding (no bfloat16: og_rnn_types) */
static const og_float_impl *rnn_impl_of(og_dtype t)
{
    return t == OG_BFLOAT16 ? NULL : og_float_impl_of(rnn_impls, t);
}

static const void *select_rnn(const og_node *n, og_dtype t)
{
    (void)n;
    return rnn_impl_of(t);
}

/* The type constraint reads X: float32 and float64, and float16 through float32 copies
 * (sequence_lens is checked as int32); select_rnn binds the loops of X's dtype. */
const og_kernel_def og_cpu_rnn[] = {
    {.name = "RNN", .domain = "", .fn = rnn_kernel, .types = og_rnn_types, .select = select_rnn},
    {.name = "GRU", .domain = "", .fn = rnn_kernel, .types = og_rnn_types, .select = select_rnn},
    {.name = "LSTM", .domain = "", .fn = rnn_kernel, .types = og_rnn_types, .select = select_rnn},
    {.name = "RNNTrain",
     .domain = OG_RNN_DOMAIN,
     .fn = rnn_kernel,
     .types = og_rnn_types,
     .select = select_rnn},
    {.name = "GRUTrain",
     .domain = OG_RNN_DOMAIN,
     .fn = rnn_kernel,
     .types = og_rnn_types,
     .select = select_rnn},
    {.name = "LSTMTrain",
     .domain = OG_RNN_DOMAIN,
     .fn = rnn_kernel,
     .types = og_rnn_types,
     .select = select_rnn},
    {.name = "RNNGrad",
     .domain = OG_RNN_DOMAIN,
     .fn = rnn_grad_kernel,
     .types = og_rnn_types,
     .select = select_rnn},
    {.name = "GRUGrad",
     .domain = OG_RNN_DOMAIN,
     .fn = rnn_grad_kernel,
     .types = og_rnn_types,
     .select = select_rnn},
    {.name = "LSTMGrad",
     .domain = OG_RNN_DOMAIN,
     .fn = rnn_grad_kernel,
     .types = og_rnn_types,
     .select = select_rnn},
    {.name = NULL}};
