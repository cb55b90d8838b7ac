/* qlinear.c: CPU kernels of MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv
 * (src/ops/qlinear.c).
 *
 * Both operands are first widened to int32 with their zero points subtracted (broadcast as
 * the spec places them: a's per row, b's per column, w's per output channel), so that padding
 * is a plain 0 and the products run on one type.  Products accumulate in int64 and wrap to
 * int32 (the spec lets 32-bit accumulation overflow).  Requantization: acc * (s_a s_b / s_y),
 * the multiplier computed in the scales' own type as the reference evaluator does (float32,
 * or for QLinearMatMul-21's float16 and bfloat16 scales each step rounded to that type), the
 * product in float32 (as onnxruntime), rounded half to even, plus the output's zero point,
 * saturated. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/conv_params.h"

static bool is_q8(og_dtype t) { return t == OG_INT8 || t == OG_UINT8; }

/* One element of a (scalar) zero point, read once per call. */
static int32_t elem_q8(const og_tensor *t, int64_t i)
{
    return t->dtype == OG_INT8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

/* x - zp over x's elements into w, zp's offset for x's multi-index `idx` being
 * sum idx[d] * zs[d] (zp NULL: 0). */
typedef void (*q8_widen_fn)(const og_tensor *x, const og_tensor *zp, const int64_t *zs, int32_t *w);
static void widen_i8(const og_tensor *x, const og_tensor *zp, const int64_t *zs, int32_t *w);
static void widen_u8(const og_tensor *x, const og_tensor *zp, const int64_t *zs, int32_t *w);

/* A parameter (zero point or scale) broadcast over x's shape, where a 1-D parameter that is
 * not a single value runs along `axis1d` of x (a's rows: rank - 2; w's output channels: 0;
 * b's columns: rank - 1, numpy's own placement).  strides[d]: the parameter's stride for x's
 * dim d (0 where it repeats).  False when it does not fit. */
static bool param_strides(const og_tensor *p, const og_tensor *x, int axis1d, int64_t *strides)
{
    for (int d = 0; d < x->rank; d++) strides[d] = 0;
    if (!p || p->numel == 1) return p == NULL || p->numel == 1;
    if (p->rank == 1) {
        if (axis1d < 0 || axis1d >= x->rank || x->dims[axis1d] != p->dims[0]) return false;
        strides[axis1d] = 1;
        return true;
    }
    if (p->rank > x->rank) return false;
    int64_t st[OG_MAX_RANK];
    og_strides(p->rank, p->dims, st);
    for (int d = 0; d < p->rank; d++) {
        int xd = x->rank - p->rank + d;
        if (p->dims[d] != 1 && p->dims[d] != x->dims[xd]) return false;
        strides[xd] = p->dims[d] == 1 ? 0 : st[d];
    }
    return true;
}

/* x - zp into a new int32 array of x's elements, with fn: the bound loop of x's dtype (NULL
 * without one: x's own, picked here). */
static og_status widen(const og_kernel_ctx *k, const og_tensor *x, const og_tensor *zp, int axis1d,
                       const char *what, q8_widen_fn fn, int32_t **out)
{
    int64_t zs[OG_MAX_RANK];
    *out = NULL;
    if (!is_q8(x->dtype))
        return og_kernel_error(k, OG_ERR_TYPE, "%s is %s, not int8 or uint8", what,
                               og_dtype_name(x->dtype));
    if (zp && zp->dtype != x->dtype)
        return og_kernel_error(k, OG_ERR_TYPE, "the zero point of %s is %s, %s is %s", what,
                               og_dtype_name(zp->dtype), what, og_dtype_name(x->dtype));
    if (!param_strides(zp, x, axis1d, zs)) {
        char a[128], b[128];
        return og_kernel_error(k, OG_ERR_SHAPE,
                               "the zero point of %s has shape %s, which does not "
                               "fit %s",
                               what, og_shape_str(zp->rank, zp->dims, a, sizeof a),
                               og_shape_str(x->rank, x->dims, b, sizeof b));
    }
    if (!fn) fn = x->dtype == OG_INT8 ? widen_i8 : widen_u8;
    int32_t *w = og_malloc(k->alloc, (size_t)(x->numel + 1) * sizeof *w);
    if (!w) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory widening %s", what);
    if (x->numel) fn(x, zp, zs, w);
    *out = w;
    return OG_OK;
}

/* A scale broadcast like a zero point, as float values per element of x's shape. */
static og_status scale_of(const og_kernel_ctx *k, const og_tensor *s, const og_tensor *x,
                          int axis1d, const char *what, double **out)
{
    int64_t ss[OG_MAX_RANK];
    *out = NULL;
    const og_elem_io *sio = og_elem_io_of(s->dtype);
    if (!og_dtype_is_float(s->dtype) || !sio)
        return og_kernel_error(k, OG_ERR_TYPE, "the scale of %s is %s", what,
                               og_dtype_name(s->dtype));
    if (!param_strides(s, x, axis1d, ss))
        return og_kernel_error(k, OG_ERR_SHAPE, "the scale of %s does not fit its shape", what);
    /* the scale's own values read once (sv), then broadcast over x's elements (v) */
    double *v = og_malloc(k->alloc, (size_t)(x->numel + s->numel + 1) * sizeof *v);
    if (!v) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    double *sv = v + x->numel;
    sio->load(s->data, 0, 1, s->numel, sv);
    if (x->numel) {
        og_index_iter it;
        og_index_init(&it, x->rank, x->dims);
        int64_t i = 0;
        do {
            int64_t so = 0;
            for (int d = 0; d < x->rank; d++) so += it.idx[d] * ss[d];
            v[i++] = sv[so];
        } while (og_index_next(&it));
    }
    *out = v;
    return OG_OK;
}

static int32_t wrap32(int64_t acc) { return (int32_t)(uint32_t)(uint64_t)acc; }

/* A float32 value rounded to the scales' type: float32 itself, float16, bfloat16 (chosen
 * once per call from the scale's dtype). */
typedef float (*scale_round_fn)(float v);
static float round_f32(float v) { return v; }
static float round_f16(float v) { return og_half_to_float(og_float_to_half(v)); }
static float round_bf16(float v) { return og_bfloat16_to_float(og_float_to_bfloat16(v)); }
static scale_round_fn scale_round_of(og_dtype t)
{
    return t == OG_FLOAT16 ? round_f16 : t == OG_BFLOAT16 ? round_bf16 : round_f32;
}

/* acc * (s_a s_w / s_y), the multiplier first, each of its two steps rounded to the scales'
 * type (rnd: numpy's float16 arithmetic in the reference evaluator, where a multiplier
 * computed in float32 instead gave 46 for 47), then the product in float32 as onnxruntime
 * requantizes: in double, a product a hair from a .5 tie can round the other way (158
 * against 157). */
static double requant(int32_t acc, double sa, double sw, double sy, scale_round_fn rnd)
{
    float m = rnd(rnd((float)sa * (float)sw) / (float)sy);
    return (double)((float)acc * m);
}

/* ---- the typed loops ------------------------------------------------------------------ */

typedef void (*mm_emit)(void *ctx, int64_t yi, int64_t arow, int64_t bcol, int64_t acc);

typedef struct qmm_ctx {
    og_tensor *y;
    const double *sa, *sb; /* per element of A and B */
    double sy;
    int32_t yzp;
    scale_round_fn rnd; /* the scales' type */
} qmm_ctx;

/* QLinearConv's output: y[i] = requant(acc[i] + bias[m]) with m the output channel of i
 * (P outputs per channel, M channels), w_scale one value or one per channel. */
typedef struct qconv_out {
    og_tensor *y;
    const int64_t *acc;
    const int32_t *bias; /* NULL: none */
    const double *ws;    /* w_scale's values */
    int64_t n_ws;
    double sx, sy;
    int32_t zp;
    int64_t P, M;
} qconv_out;

/* Per int8 / uint8 type: the widening of an operand (with its zero point, of the same type)
 * and the output's stores, rounded half to even (the default rounding mode, nearbyint), plus
 * the zero point, saturated; a NaN scale gives the zero point (a cast of NaN is undefined). */
#define OG_Q8_LOOPS(name, T, LO, HI)                                                               \
    static void widen_##name(const og_tensor *x, const og_tensor *zp, const int64_t *zs,           \
                             int32_t *w)                                                           \
    {                                                                                              \
        const T *xd = x->data, *zd = zp ? zp->data : NULL;                                         \
        og_index_iter it;                                                                          \
        og_index_init(&it, x->rank, x->dims);                                                      \
        int64_t i = 0;                                                                             \
        do {                                                                                       \
            int64_t zo = 0;                                                                        \
            for (int d = 0; d < x->rank; d++) zo += it.idx[d] * zs[d];                             \
            w[i] = (int32_t)xd[i] - (zd ? (int32_t)zd[zo] : 0);                                    \
            i++;                                                                                   \
        } while (og_index_next(&it));                                                              \
    }                                                                                              \
    static inline void put_##name(T *y, int64_t i, double v, int32_t zp)                           \
    {                                                                                              \
        double r = nearbyint(v) + zp;                                                              \
        if (r != r) r = zp;                                                                        \
        r = r < (LO) ? (LO) : r > (HI) ? (HI) : r;                                                 \
        y[i] = (T)r;                                                                               \
    }                                                                                              \
    static void emit_##name(void *vctx, int64_t yi, int64_t arow, int64_t bcol, int64_t acc)       \
    {                                                                                              \
        qmm_ctx *c = vctx;                                                                         \
        put_##name(c->y->data, yi, requant(wrap32(acc), c->sa[arow], c->sb[bcol], c->sy, c->rnd),  \
                   c->yzp);                                                                        \
    }                                                                                              \
    static void conv_out_##name(const qconv_out *o)                                                \
    {                                                                                              \
        T *y = o->y->data;                                                                         \
        for (int64_t i = 0; i < o->y->numel; i++) {                                                \
            int64_t m = (i / o->P) % o->M;                                                         \
            int64_t a = o->acc[i] + (o->bias ? o->bias[m] : 0);                                    \
            double sw = o->ws[o->n_ws == 1 ? 0 : m];                                               \
            put_##name(y, i, requant(wrap32(a), o->sx, sw, o->sy, round_f32), o->zp);              \
        }                                                                                          \
    }
OG_Q8_LOOPS(i8, int8_t, -128, 127)
OG_Q8_LOOPS(u8, uint8_t, 0, 255)
#undef OG_Q8_LOOPS

/* A node's binding: the widening of its first operand (A, a, x) and of its second (B, b, w),
 * and for the QLinear ops the stores of y's type (int8 or uint8); chosen by select_q8 from the
 * static dtypes, or per call without a binding. */
typedef struct q8_loops {
    q8_widen_fn widen_a, widen_b;
    mm_emit emit;                         /* QLinearMatMul */
    void (*conv_out)(const qconv_out *o); /* QLinearConv */
} q8_loops;

#define OG_Q8_Y(wa, wb)                                                                            \
    {                                                                                              \
        {widen_##wa, widen_##wb, emit_i8, conv_out_i8},                                            \
            {widen_##wa, widen_##wb, emit_u8, conv_out_u8},                                        \
        {                                                                                          \
            widen_##wa, widen_##wb, NULL, NULL                                                     \
        }                                                                                          \
    }
/* [first operand: int8, uint8][second][y: int8, uint8, int32] */
static const q8_loops q8_table[2][2][3] = {{OG_Q8_Y(i8, i8), OG_Q8_Y(i8, u8)},
                                           {OG_Q8_Y(u8, i8), OG_Q8_Y(u8, u8)}};
#undef OG_Q8_Y

static int q8_index(og_dtype t) { return t == OG_INT8 ? 0 : t == OG_UINT8 ? 1 : -1; }

/* The loops for operands of dtypes a and b and an output of dtype y (int32: an integer op),
 * NULL when there are none. */
static const q8_loops *q8_loops_of(og_dtype a, og_dtype b, og_dtype y)
{
    int ia = q8_index(a), ib = q8_index(b), iy = y == OG_INT32 ? 2 : q8_index(y);
    return ia < 0 || ib < 0 || iy < 0 ? NULL : &q8_table[ia][ib][iy];
}

/* The inputs that carry each node's types: the operands, their zero points (which must have
 * the operand's type) and y's zero point (the QLinear ops' output type). */
typedef struct q8_inputs {
    int a, a_zp, b, b_zp, y_zp; /* -1: none */
} q8_inputs;

static q8_inputs q8_inputs_of(const og_node *n)
{
    if (strcmp(n->op_type, "QLinearMatMul") == 0 || strcmp(n->op_type, "QLinearConv") == 0)
        return (q8_inputs){0, 2, 3, 5, 7};
    return (q8_inputs){0, 2, 1, 3, -1}; /* MatMulInteger, ConvInteger */
}

static const void *select_q8(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    q8_inputs q = q8_inputs_of(n);
    og_dtype ta = t[q.a], tb = t[q.b], ty = q.y_zp >= 0 ? t[q.y_zp] : OG_INT32;
    if (ta != OG_UNDEFINED && q8_index(ta) < 0) return NULL;
    if (tb != OG_UNDEFINED && q8_index(tb) < 0) return NULL;
    /* a zero point of another type than its operand is an error at run time (it says which) */
    if (ta == OG_UNDEFINED || tb == OG_UNDEFINED || ty == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    if (q.a_zp < n->n_in && t[q.a_zp] != OG_UNDEFINED && t[q.a_zp] != ta) return OG_KERNEL_AT_RUN;
    if (q.b_zp < n->n_in && t[q.b_zp] != OG_UNDEFINED && t[q.b_zp] != tb) return OG_KERNEL_AT_RUN;
    return q8_loops_of(ta, tb, ty);
}

/* k->impl, or without a binding the loops of these dtypes (NULL: none; widen says why). */
static const q8_loops *q8_bound(const og_kernel_ctx *k, og_dtype a, og_dtype b, og_dtype y)
{
    return k->impl ? (const q8_loops *)k->impl : q8_loops_of(a, b, y);
}
static q8_widen_fn widen_a_of(const q8_loops *l) { return l ? l->widen_a : NULL; }
static q8_widen_fn widen_b_of(const q8_loops *l) { return l ? l->widen_b : NULL; }

/* ---- matrix products ----------------------------------------------------------------- */

/* Batched products of A [..., M, K] and B [..., K, N] (1-D operands promoted), batch dims
 * broadcast to y's; acc(b, m, n) handed to emit with the A and B element offsets of row m and
 * column n (for per-row / per-column scales). */
typedef struct mm_view {
    int64_t M, K, N, batches;
    int rank; /* y's batch rank */
    int64_t bdims[OG_MAX_RANK], sa[OG_MAX_RANK], sb[OG_MAX_RANK];
} mm_view;

static void mm_view_of(const og_tensor *a, const og_tensor *b, const og_tensor *y, mm_view *v)
{
    v->M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    v->K = a->dims[a->rank - 1];
    v->N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    int ar = a->rank > 2 ? a->rank - 2 : 0, br = b->rank > 2 ? b->rank - 2 : 0;
    v->rank = ar > br ? ar : br;
    v->batches = 1;
    int64_t ast[OG_MAX_RANK], bst[OG_MAX_RANK];
    for (int d = 0; d < v->rank; d++) {
        int da = d - (v->rank - ar), db = d - (v->rank - br);
        int64_t ea = da >= 0 ? a->dims[da] : 1, eb = db >= 0 ? b->dims[db] : 1;
        v->bdims[d] = ea > eb ? ea : eb;
        v->batches *= v->bdims[d];
        ast[d] = ea == 1 ? 0 : 1;
        bst[d] = eb == 1 ? 0 : 1;
    }
    /* strides in matrices */
    int64_t sa = 1, sb = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        int da = d - (v->rank - ar), db = d - (v->rank - br);
        v->sa[d] = ast[d] ? sa : 0;
        v->sb[d] = bst[d] ? sb : 0;
        if (da >= 0) sa *= a->dims[da];
        if (db >= 0) sb *= b->dims[db];
    }
    (void)y;
}

static void mm_run(const mm_view *v, const int32_t *A, const int32_t *B, mm_emit emit, void *ctx)
{
    og_index_iter it;
    int64_t yi = 0;
    og_index_init(&it, v->rank, v->bdims);
    for (int64_t t = 0; t < v->batches; t++) {
        int64_t ma = 0, mb = 0;
        for (int d = 0; d < v->rank; d++) {
            ma += it.idx[d] * v->sa[d];
            mb += it.idx[d] * v->sb[d];
        }
        const int32_t *a = A + ma * v->M * v->K, *b = B + mb * v->K * v->N;
        for (int64_t m = 0; m < v->M; m++)
            for (int64_t n = 0; n < v->N; n++) {
                int64_t acc = 0;
                for (int64_t q = 0; q < v->K; q++)
                    acc += (int64_t)a[m * v->K + q] * b[q * v->N + n];
                emit(ctx, yi++, (a - A) + m * v->K, (b - B) + n, acc);
            }
        og_index_next(&it);
    }
}

static void emit_i32(void *ctx, int64_t yi, int64_t arow, int64_t bcol, int64_t acc)
{
    (void)arow;
    (void)bcol;
    ((int32_t *)ctx)[yi] = wrap32(acc);
}

static og_status k_matmul_integer(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_tensor *a = in[0], *b = in[1];
    const q8_loops *l = q8_bound(k, a->dtype, b->dtype, OG_INT32);
    int32_t *A = NULL, *B = NULL;
    og_status st = widen(k, a, n_in > 2 ? in[2] : NULL, a->rank - 2, "A", widen_a_of(l), &A);
    if (!st) st = widen(k, b, n_in > 3 ? in[3] : NULL, b->rank - 1, "B", widen_b_of(l), &B);
    if (!st && out[0]->numel) {
        mm_view v;
        mm_view_of(a, b, out[0], &v);
        mm_run(&v, A, B, emit_i32, out[0]->data);
    }
    og_free(k->alloc, A);
    og_free(k->alloc, B);
    return st;
}

static og_status k_qlinear_matmul(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out)
{
    const og_tensor *a = in[0], *b = in[3], *yzp = in[7];
    const q8_loops *l = q8_bound(k, a->dtype, b->dtype, yzp->dtype);
    int32_t *A = NULL, *B = NULL;
    double *SA = NULL, *SB = NULL;
    og_status st = widen(k, a, in[2], a->rank - 2, "a", widen_a_of(l), &A);
    if (!st) st = widen(k, b, in[5], b->rank - 1, "b", widen_b_of(l), &B);
    if (!st) st = scale_of(k, in[1], a, a->rank - 2, "a", &SA);
    if (!st) st = scale_of(k, in[4], b, b->rank - 1, "b", &SB);
    if (!st && (in[6]->numel != 1 || yzp->numel != 1 || !is_q8(yzp->dtype) || !l))
        st = og_kernel_error(k, OG_ERR_SHAPE, "y_scale and y_zero_point must hold one value each");
    if (!st && out[0]->numel) {
        qmm_ctx c = {out[0],
                     SA,
                     SB,
                     og_tensor_get_f64(in[6], 0),
                     elem_q8(yzp, 0),
                     scale_round_of(in[1]->dtype)};
        mm_view v;
        mm_view_of(a, b, out[0], &v);
        mm_run(&v, A, B, l->emit, &c);
    }
    og_free(k->alloc, A);
    og_free(k->alloc, B);
    og_free(k->alloc, SA);
    og_free(k->alloc, SB);
    return st;
}

/* ---- convolutions -------------------------------------------------------------------- */

/* acc[n, m, p] = sum over the group's channels c and kernel positions q of
 * X[n, c, p * stride - pad + q * dilation] (0 outside) * W[m, c, q], into acc (int64). */
static og_status conv_acc(const og_kernel_ctx *k, const og_conv_geom *g, const int32_t *X,
                          const int32_t *W, int64_t *acc)
{
    int nsp = g->nsp;
    int64_t cg = g->c / g->group, mg = g->m / g->group, P = 1, Q = 1, I = 1;
    for (int i = 0; i < nsp; i++) {
        P *= g->out[i];
        Q *= g->kernel[i];
        I *= g->in[i];
    }
    int64_t K = cg * Q;
    int32_t *cols = og_malloc(k->alloc, (size_t)(K * P + 1) * sizeof *cols);
    if (!cols)
        return og_kernel_error(k, OG_ERR_NOMEM, "out of memory for %lld x %lld columns",
                               (long long)K, (long long)P);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gr = 0; gr < g->group; gr++) {
            /* im2col: row (c, q), column p */
            for (int64_t r = 0; r < K; r++) {
                int64_t c = r / Q, q = r % Q, qi[OG_CONV_MAX_SP];
                for (int i = nsp - 1; i >= 0; i--) {
                    qi[i] = q % g->kernel[i];
                    q /= g->kernel[i];
                }
                const int32_t *x = X + (n * g->c + gr * cg + c) * I;
                for (int64_t p = 0; p < P; p++) {
                    int64_t pp = p, off = 0;
                    bool inside = true;
                    for (int i = nsp - 1; i >= 0; i--) {
                        int64_t o = pp % g->out[i];
                        pp /= g->out[i];
                        int64_t at = o * g->stride[i] - g->pad_begin[i] + qi[i] * g->dil[i];
                        if (at < 0 || at >= g->in[i]) inside = false;
                        int64_t span = 1;
                        for (int j = i + 1; j < nsp; j++) span *= g->in[j];
                        off += at * span;
                    }
                    cols[r * P + p] = inside ? x[off] : 0;
                }
            }
            for (int64_t mm = 0; mm < mg; mm++) {
                int64_t m = gr * mg + mm;
                const int32_t *w = W + m * K;
                int64_t *a = acc + (n * g->m + m) * P;
                for (int64_t p = 0; p < P; p++) a[p] = 0;
                for (int64_t r = 0; r < K; r++) {
                    int64_t wv = w[r];
                    if (!wv) continue;
                    const int32_t *cr = cols + r * P;
                    for (int64_t p = 0; p < P; p++) a[p] += wv * cr[p];
                }
            }
        }
    og_free(k->alloc, cols);
    return OG_OK;
}

/* The geometry of node k on x and w (shapes checked by inference). */
static og_status geometry(const og_kernel_ctx *k, const og_tensor *x, const og_tensor *w,
                          og_conv_geom *g)
{
    return og_conv_geometry(k->node, k->params, true, x->rank, x->dims, w->rank, w->dims, -1, g);
}

static og_status conv_integer_common(const og_kernel_ctx *k, const q8_loops *l, const og_tensor *x,
                                     const og_tensor *xzp, const og_tensor *w, const og_tensor *wzp,
                                     og_conv_geom *g, int64_t **acc)
{
    int32_t *X = NULL, *W = NULL;
    *acc = NULL;
    og_status st = geometry(k, x, w, g);
    if (!st && xzp && xzp->numel != 1)
        st = og_kernel_error(k, OG_ERR_SHAPE, "the zero point of x must hold one value");
    if (!st) st = widen(k, x, xzp, -1, "x", widen_a_of(l), &X);
    if (!st) st = widen(k, w, wzp, 0, "w", widen_b_of(l), &W);
    int64_t P = 1;
    for (int i = 0; !st && i < g->nsp; i++) P *= g->out[i];
    if (!st && !(*acc = og_malloc(k->alloc, (size_t)(g->n * g->m * P + 1) * sizeof **acc)))
        st = og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    if (!st) st = conv_acc(k, g, X, W, *acc);
    og_free(k->alloc, X);
    og_free(k->alloc, W);
    if (st) {
        og_free(k->alloc, *acc);
        *acc = NULL;
    }
    return st;
}

static og_status k_conv_integer(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                og_tensor *const *out, int n_out)
{
    og_conv_geom g;
    int64_t *acc = NULL;
    const q8_loops *l = q8_bound(k, in[0]->dtype, in[1]->dtype, OG_INT32);
    og_status st = conv_integer_common(k, l, in[0], n_in > 2 ? in[2] : NULL, in[1],
                                       n_in > 3 ? in[3] : NULL, &g, &acc);
    if (st) return st;
    int32_t *y = out[0]->data;
    for (int64_t i = 0; i < out[0]->numel; i++) y[i] = wrap32(acc[i]);
    og_free(k->alloc, acc);
    return OG_OK;
}

static og_status k_qlinear_conv(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                og_tensor *const *out, int n_out)
{
    const og_tensor *ws = in[4], *bias = n_in > 8 ? in[8] : NULL, *yzp = in[7];
    og_tensor *y = out[0];
    og_conv_geom g;
    int64_t *acc = NULL;
    const q8_loops *l = q8_bound(k, in[0]->dtype, in[3]->dtype, yzp->dtype);
    og_status st = conv_integer_common(k, l, in[0], in[2], in[3], in[5], &g, &acc);
    if (st) return st;
    if (in[1]->numel != 1 || in[6]->numel != 1 || yzp->numel != 1 || !is_q8(yzp->dtype) ||
        (ws->numel != 1 && ws->numel != g.m) || (bias && bias->numel != g.m) ||
        (bias && bias->dtype != OG_INT32)) {
        og_free(k->alloc, acc);
        return og_kernel_error(k, OG_ERR_SHAPE,
                               "x_scale, y_scale and y_zero_point must hold one "
                               "value, w_scale one or M, B M int32 values");
    }
    /* w_scale's values, read once */
    const og_elem_io *wio = og_elem_io_of(ws->dtype);
    double *wsv = wio ? og_malloc(k->alloc, (size_t)(ws->numel + 1) * sizeof *wsv) : NULL;
    if (!wsv) {
        og_free(k->alloc, acc);
        return wio ? og_kernel_error(k, OG_ERR_NOMEM, "out of memory")
                   : og_kernel_error(k, OG_ERR_TYPE, "w_scale is %s", og_dtype_name(ws->dtype));
    }
    wio->load(ws->data, 0, 1, ws->numel, wsv);
    qconv_out o = {y,
                   acc,
                   bias ? (const int32_t *)bias->data : NULL,
                   wsv,
                   ws->numel,
                   og_tensor_get_f64(in[1], 0),
                   og_tensor_get_f64(in[6], 0),
                   elem_q8(yzp, 0),
                   y->numel / (g.n * g.m > 0 ? g.n * g.m : 1),
                   g.m};
    if (y->numel) l->conv_out(&o);
    og_free(k->alloc, wsv);
    og_free(k->alloc, acc);
    return OG_OK;
}

/* The loops depend on two or three inputs' dtypes (the operands' and y's zero point's):
 * select_q8 binds them from every input's static dtype. */
const og_kernel_def og_cpu_qlinear[] = {
    {.name = "MatMulInteger", .domain = "", .fn = k_matmul_integer, .select_types = select_q8},
    {.name = "QLinearMatMul", .domain = "", .fn = k_qlinear_matmul, .select_types = select_q8},
    {.name = "ConvInteger", .domain = "", .fn = k_conv_integer, .select_types = select_q8},
    {.name = "QLinearConv", .domain = "", .fn = k_qlinear_conv, .select_types = select_q8},
    {.name = NULL},
};
