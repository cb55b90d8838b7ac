/* pool.c: gradients of the pooling ops (src/ops/pool.c).
 *
 *   GlobalAveragePool: dX = dY / (spatial size), broadcast;  GlobalMaxPool: dY split evenly
 *          between the positions equal to the max
 *   MaxPool: dY scattered (added) into zeros at the flat Indices of a MaxPool of X; before
 *          opset 9 (no Scatter) through a one-hot mask over window taps and a ConvTranspose
 *   AveragePool: dX = ConvTranspose(dY / count, ones kernel) per channel; count is the
 *          forward op's divisor, obtained as AveragePool(ones) / (valid positions)
 *   LpPool: y = (Σ_window |x|^p)^(1/p): dX = sign(x)·|x|^(p−1) · B(dY / y^(p−1)), B the
 *          same ones-kernel ConvTranspose (every window adds its share back; a window of
 *          zeros, y = 0, gives 0: its |x|^(p−1) is 0)
 *   MaxUnpool: dX = dY at the positions X was written to: Gather(dY flattened, I) (dY
 *          first cropped to the block the windows cover when output_shape is larger); a
 *          repeated index gives every writer the gradient, as PyTorch's max_unpool
 *   RoiAlign (no gradient for rois, as torchvision): each cell's samples interpolate X
 *          separably, so for region r, avg mode is Y[r, c] = Ay[r]·X[b_r, c]·Ax[r]ᵀ / count[r]
 *          with Ay [R, oh, H] and Ax [R, ow, W] the summed bilinear weights of the samples
 *          (OneHot of their taps times their weights, sample grids padded to the largest
 *          region's and masked): dX[n] = Σ_(r: b_r = n) Ay[r]ᵀ·dY[r]·Ax[r] / count[r], the sum
 *          over regions a MatMul with OneHot(batch_indices).  max mode (opset >= 16): dY goes
 *          to the weighted corner the forward chose (ArgMax over samples × corners, in the
 *          forward's order), ScatterElements with reduction add.
 */
#include <string.h>

#include "grad/rule_util.h"
#include "ops/pool.h"

#define SP (OG_MAX_RANK - 2)
/* The largest spatial size (input or output) a pooling gradient takes: its rules build
 * constants and loops along each axis. */
#define POOL_GRAD_MAX (1 << 24)
/* The most window phases the MaxPool gradient unrolls before opset 16. */
#define MAXPOOL_MAX_PHASES 4096

/* ---- helpers ------------------------------------------------------------------------- */

/* A MaxPool of x with n's attributes (row-major indices) and its Indices output, which is
 * returned. */
static int maxpool_indices(og_gb *b, const og_node *n, int x)
{
    int out[2];
    int node = og_gb_op_multi(b, "MaxPool", 1, &x, 2, out);
    og_gb_copy_attrs(b, node, n, "storage_order");
    return out[1];
}

/* ones of a static shape: Expand from opset 8, a cast int64 constant before */
static int ones_c(og_gb *b, const int64_t *shape, int rank, og_dtype dt)
{
    if (og_gb_opset(b) >= 8)
        return og_gb_op2(b, "Expand", og_gb_scalar(b, 1.0, dt), og_gb_const_i64(b, shape, rank));
    int64_t numel;
    if (!og_shape_numel(rank, shape, &numel) || numel > POOL_GRAD_MAX)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "pooling gradient: a constant of more than %d elements", POOL_GRAD_MAX);
    int64_t *v = og_malloc(og_gb_alloc(b), (size_t)numel * sizeof *v);
    if (!v) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < numel; i++) v[i] = 1;
    int c = og_gb_const_i64(b, v, (int)numel);
    og_free(og_gb_alloc(b), v);
    return og_rule_cast(b, og_rule_reshape_c(b, c, shape, rank), dt);
}

static bool spatial_known(const og_value *v, int rank)
{
    if (v->rank != rank) return false;
    for (int i = 2; i < rank; i++)
        if (!og_dim_known(v->dims[i])) return false;
    return true;
}

/* The rank of a global pool's input x, with its spatial axes (2 ..) in axes; -1 (an error)
 * below rank 3. */
static int global_axes(og_gb *b, const og_node *n, int x, int64_t *axes)
{
    int rank = og_gb_value(b, x)->rank;
    if (rank < 3) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    for (int i = 2; i < rank; i++) axes[i - 2] = i;
    return rank;
}

static og_status g_global_avgpool(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = n->in[0];
    int64_t axes[OG_MAX_RANK];
    int rank = global_axes(b, n, x, axes);
    if (rank < 0) return og_gb_status(b);
    int c =
        og_rule_reduced_count(b, x, axes, rank - 2, n->out[0], og_gb_value(b, n->out[0])->dtype);
    int e;
    if (og_gb_opset(b) >= 8) {
        e = og_gb_op2(b, "Expand", dy[0], og_gb_op1(b, "Shape", x));
    } else { /* no Expand: dy + zeros of x's shape (Cast(x < x): 0 for any x, NaN too) */
        og_dtype dt = og_gb_value(b, x)->dtype;
        e = og_gb_op2(b, "Add", dy[0], og_rule_cast(b, og_gb_op2(b, "Less", x, x), dt));
    }
    dx[0] = og_gb_op2(b, "Div", e, c);
    return og_gb_status(b);
}

static og_status g_global_maxpool(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = n->in[0];
    int64_t axes[OG_MAX_RANK];
    int rank = global_axes(b, n, x, axes);
    if (rank < 0) return og_gb_status(b);
    /* mask = (x >= max): Less takes floats from opset 7, Equal only from 11 */
    int mask = og_gb_op1(b, "Not", og_gb_op2(b, "Less", x, n->out[0]));
    mask = og_rule_cast(b, mask, og_gb_value(b, n->out[0])->dtype);
    int cnt = og_gb_reduce_sum(b, mask, axes, rank - 2, true);
    dx[0] = og_gb_op2(b, "Mul", mask, og_gb_op2(b, "Div", dy[0], cnt));
    return og_gb_status(b);
}

typedef struct pool_geom {
    int nsp;
    int64_t in[SP], out[SP], k[SP], s[SP], d[SP], pb[SP];
} pool_geom;

/* The geometry of a pooling node.  With `dynamic`, spatial sizes known only at run time
 * are allowed: in, out and pb are then OG_DIM_UNKNOWN (kernel, strides and dilations are
 * attributes, always known). */
static bool pool_geometry_any(og_gb *b, const og_node *n, pool_geom *g, bool dynamic)
{
    const og_pool_params *p = n->params;
    if (!p || !n->parsed || p->global || p->nsp < 1 || p->nsp > SP) {
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the node's attributes were not parsed");
        return false;
    }
    const og_value *X = og_gb_value(b, n->in[0]);
    int rank = p->nsp + 2;
    bool known = spatial_known(X, rank);
    if (!known && !dynamic) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                   "gradient needs the spatial sizes of the input to be known statically at "
                   "this opset or with these attributes");
        return false;
    }
    g->nsp = p->nsp;
    for (int i = 0; i < p->nsp; i++) {
        g->k[i] = p->kernel[i];
        g->s[i] = p->strides[i];
        g->d[i] = p->dilations[i];
        g->in[i] = g->out[i] = g->pb[i] = OG_DIM_UNKNOWN;
        if (!known) continue;
        g->in[i] = X->dims[2 + i];
        if (!og_pool_dim(p, i, g->in[i], &g->out[i], &g->pb[i])) {
            og_gb_fail(b, n, OG_ERR_MODEL, "empty pooling output");
            return false;
        }
        /* the rules build constants and loops along each axis: sizes a declared shape may
         * take (anything up to int64) are bounded first */
        if (g->in[i] > POOL_GRAD_MAX || g->out[i] > POOL_GRAD_MAX) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                       "gradient of a pooling whose spatial axis %d has input %lld and output "
                       "%lld, above %d",
                       i, (long long)g->in[i], (long long)g->out[i], POOL_GRAD_MAX);
            return false;
        }
    }
    return true;
}

/* A float constant of dtype dt and static shape from integer values (Cast of an int64
 * constant: valid at every opset). */
static int const_cast_c(og_gb *b, const int64_t *v, int64_t numel, const int64_t *shape, int rank,
                        og_dtype dt)
{
    return og_rule_cast(b, og_rule_reshape_c(b, og_gb_const_i64(b, v, (int)numel), shape, rank),
                        dt);
}

/* The taps of a MaxPool window, in row-major kernel order: tap t has kernel index kk[i]. */
static void tap_index(const pool_geom *g, int64_t t, int64_t *kk)
{
    for (int i = g->nsp - 1; i >= 0; i--) {
        kk[i] = t % g->k[i];
        t /= g->k[i];
    }
}

/* m ([P, K, out...], 1 where tap t is at the maximum) keeping only the first such tap, as
 * the kernel's Indices: a 1x1 Conv counts the earlier taps at the maximum.  eye: K·K
 * scratch entries. */
static int first_tap(og_gb *b, int m, const pool_geom *g, int64_t K, int64_t *eye, og_dtype dt)
{
    if (K == 1) return m;
    int64_t ks[OG_MAX_RANK];
    for (int64_t r = 0; r < K; r++)
        for (int64_t c = 0; c < K; c++) eye[r * K + c] = c < r;
    ks[0] = ks[1] = K;
    for (int i = 0; i < g->nsp; i++) ks[2 + i] = 1;
    int earlier = og_gb_op2(b, "Conv", m, const_cast_c(b, eye, K * K, ks, g->nsp + 2, dt));
    int none = og_rule_cast(b, og_gb_op2(b, "Less", earlier, og_gb_scalar(b, 0.5, dt)), dt);
    return og_gb_op2(b, "Mul", m, none);
}

/* The ConvTranspose kernel taking each tap's gradient back to the position it read:
 * E[t, 0, tap t] = 1 ([K, 1, k...]).  eye: K·K scratch entries. */
static int tap_kernel(og_gb *b, const pool_geom *g, int64_t K, int64_t *eye, og_dtype dt)
{
    int64_t ks[OG_MAX_RANK];
    for (int64_t r = 0; r < K; r++)
        for (int64_t c = 0; c < K; c++) eye[r * K + c] = r == c;
    ks[0] = K;
    ks[1] = 1;
    for (int i = 0; i < g->nsp; i++) ks[2 + i] = g->k[i];
    return const_cast_c(b, eye, K * K, ks, g->nsp + 2, dt);
}

/* The values each tap of the windows reads, [P, K, out...], from planes xp ([P, 1, in...])
 * padded by the forward's explicit pads (so that every tap's positions exist): per tap a
 * Slice from kk·d, to kk·d + s·(out − 1) + 1 with the sizes known (from_end false), or else
 * to −(k − 1 − kk)·d (length in + pb + pe − ek + 1, whatever in is), and, when strided, a
 * MaxPool of kernel 1 taking every s-th element: floor((in + pb + pe − ek) / s) + 1 = out
 * of them.  -1 after an error. */
static int tap_values(og_gb *b, const pool_geom *g, int xp, int64_t K, bool from_end)
{
    int nsp = g->nsp;
    int64_t axes[SP], ones[SP], kk[SP];
    bool strided = false;
    for (int i = 0; i < nsp; i++) {
        axes[i] = 2 + i;
        ones[i] = 1;
        strided = strided || g->s[i] != 1;
    }
    int *parts = og_malloc(og_gb_alloc(b), (size_t)K * sizeof *parts);
    if (!parts) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int64_t t = 0; t < K; t++) {
        int64_t st[SP], en[SP];
        tap_index(g, t, kk);
        for (int i = 0; i < nsp; i++) {
            st[i] = kk[i] * g->d[i];
            en[i] = !from_end              ? st[i] + g->s[i] * (g->out[i] - 1) + 1
                    : kk[i] == g->k[i] - 1 ? INT64_MAX
                                           : -(g->k[i] - 1 - kk[i]) * g->d[i];
        }
        int v = og_rule_slice(b, xp, axes, st, en, NULL, nsp);
        if (strided) { /* every s-th element: a MaxPool of kernel 1 */
            v = og_gb_op1(b, "MaxPool", v);
            og_gb_attr_ints(b, og_gb_last(b), "kernel_shape", ones, nsp);
            og_gb_attr_ints(b, og_gb_last(b), "strides", g->s, nsp);
        }
        parts[t] = v;
    }
    int vals = K > 1 ? og_gb_op(b, "Concat", (int)K, parts) : parts[0];
    if (K > 1) og_gb_attr_int(b, og_gb_last(b), "axis", 1);
    og_free(og_gb_alloc(b), parts);
    return og_gb_status(b) ? -1 : vals;
}

/* MaxPool before opset 9 (no Scatter): per window tap.  With planes P = N·C and K taps,
 *   S[p, t, o] = 1 where tap t of window o holds the maximum (the first one, as the
 *                kernel's Indices), else 0;
 *   dX = ConvTranspose(dY · S, E) with E[t, 0, tap t] = 1 (a one-hot kernel per tap),
 *        the pool's strides, dilations and pads: each tap's gradient goes back to the
 *        input position it read (positions in the padding are cropped).
 * Opset 8: S from the Indices output: Equal(index in the plane − window origin, tap offset)
 * (int64).  Opset 7 (no Indices): V[p, t, o] = the value tap t reads (Pad, then a Slice and
 * a stride-s MaxPool of kernel 1 per tap: exact for any value); M = (V >= Y) on taps inside
 * the input, S = M where no earlier tap is in M (a 1x1 Conv counting earlier taps).  Any
 * strides, pads (auto_pad included) and overlapping windows; this form takes static spatial
 * dims (N and C may be symbolic), maxpool_taps_dyn the others.  Limits: S takes K times dY's memory
 * and the ConvTranspose K² multiply-adds per dY element, so windows of more than 1024 taps are
 * refused. */
static og_status maxpool_taps(og_gb *b, const og_node *n, const pool_geom *g, const int *dy,
                              int *dx)
{
    const og_pool_params *p = n->params;
    int x = n->in[0], nsp = g->nsp, rank = nsp + 2;
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int64_t K = 1, sp_in = 1, str[SP], shp[OG_MAX_RANK];
    for (int i = nsp - 1; i >= 0; i--) { /* saturated: past int64 is too large anyway */
        str[i] = sp_in;
        if (!og_mul_i64(sp_in, g->in[i], &sp_in)) sp_in = INT64_MAX;
        if (!og_mul_i64(K, g->k[i], &K)) K = INT64_MAX;
    }
    if (K > 1024 || sp_in > ((int64_t)1 << 40))
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "MaxPool gradient before opset 9: a window of %lld taps is too large",
                          (long long)K);
    int64_t *buf = og_malloc(og_gb_alloc(b), (size_t)(K * K + K) * sizeof *buf);
    if (!buf) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    int64_t *eye = buf, *offs = buf + K * K, kk[SP];
    /* [-1, 1, out...]: dY and Y per plane */
    shp[0] = -1;
    shp[1] = 1;
    for (int i = 0; i < nsp; i++) shp[2 + i] = g->out[i];
    int gp = og_rule_reshape_c(b, dy[0], shp, rank);
    /* valid taps, per axis: [1, K, 1.., out_i, ..1], only axes where some tap is outside */
    int valid = -1;
    for (int i = 0; i < nsp && !og_gb_status(b); i++) {
        int64_t *v = og_malloc(og_gb_alloc(b), (size_t)(K * g->out[i]) * sizeof *v);
        if (!v) {
            og_free(og_gb_alloc(b), buf);
            return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        }
        bool partial = false;
        for (int64_t t = 0; t < K; t++) {
            tap_index(g, t, kk);
            for (int64_t o = 0; o < g->out[i]; o++) {
                int64_t at = o * g->s[i] - g->pb[i] + kk[i] * g->d[i];
                v[t * g->out[i] + o] = at >= 0 && at < g->in[i];
                partial = partial || !v[t * g->out[i] + o];
            }
        }
        if (partial) {
            int64_t vs[OG_MAX_RANK];
            for (int a = 0; a < rank; a++) vs[a] = 1;
            vs[1] = K;
            vs[2 + i] = g->out[i];
            int c = const_cast_c(b, v, K * g->out[i], vs, rank, dt);
            valid = valid < 0 ? c : og_gb_op2(b, "Mul", valid, c);
        }
        og_free(og_gb_alloc(b), v);
    }
    int sel;
    if (og_gb_opset(b) >= 8) {
        /* the index in the plane minus the window origin, against each tap's offset */
        int idx = (n->n_out > 1 && n->out[1] >= 0 && !p->column_major) ? n->out[1]
                                                                       : maxpool_indices(b, n, x);
        int hw = og_gb_scalar(b, (double)sp_in, OG_INT64);
        int local = og_gb_op2(b, "Sub", idx, og_gb_op2(b, "Mul", og_gb_op2(b, "Div", idx, hw), hw));
        local = og_rule_reshape_c(b, local, shp, rank);
        for (int i = 0; i < nsp; i++) {
            int64_t *o = og_malloc(og_gb_alloc(b), (size_t)g->out[i] * sizeof *o), os[OG_MAX_RANK];
            if (!o) {
                og_free(og_gb_alloc(b), buf);
                return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
            }
            for (int64_t j = 0; j < g->out[i]; j++) o[j] = (j * g->s[i] - g->pb[i]) * str[i];
            for (int a = 0; a < rank; a++) os[a] = 1;
            os[2 + i] = g->out[i];
            local =
                og_gb_op2(b, "Sub", local,
                          og_rule_reshape_c(b, og_gb_const_i64(b, o, (int)g->out[i]), os, rank));
            og_free(og_gb_alloc(b), o);
        }
        for (int64_t t = 0; t < K; t++) {
            tap_index(g, t, kk);
            offs[t] = 0;
            for (int i = 0; i < nsp; i++) offs[t] += kk[i] * g->d[i] * str[i];
        }
        int64_t ts[OG_MAX_RANK];
        for (int a = 0; a < rank; a++) ts[a] = 1;
        ts[1] = K;
        int taps = og_rule_reshape_c(b, og_gb_const_i64(b, offs, (int)K), ts, rank);
        sel = og_rule_cast(b, og_gb_op2(b, "Equal", local, taps), dt);
        if (valid >= 0) sel = og_gb_op2(b, "Mul", sel, valid);
    } else {
        /* V: the value each tap reads, from X padded so that every tap's slice exists */
        int64_t pads[2 * OG_MAX_RANK] = {0};
        bool any_pad = false;
        for (int i = 0; i < nsp; i++) {
            int64_t ek = (g->k[i] - 1) * g->d[i] + 1;
            int64_t pe = g->s[i] * (g->out[i] - 1) + ek - g->in[i] - g->pb[i];
            pads[2 + i] = g->pb[i];
            pads[rank + 2 + i] = pe > 0 ? pe : 0;
            any_pad = any_pad || g->pb[i] || pe > 0;
        }
        shp[1] = 1;
        for (int i = 0; i < nsp; i++) shp[2 + i] = g->in[i];
        int xp = og_rule_reshape_c(b, x, shp, rank);
        if (any_pad) {
            xp = og_gb_op1(b, "Pad", xp);
            og_gb_attr_ints(b, og_gb_last(b), "pads", pads, 2 * rank);
        }
        int vals = tap_values(b, g, xp, K, false);
        if (vals < 0) {
            og_free(og_gb_alloc(b), buf);
            return og_gb_status(b);
        }
        shp[1] = 1;
        for (int i = 0; i < nsp; i++) shp[2 + i] = g->out[i];
        int yp = og_rule_reshape_c(b, n->out[0], shp, rank);
        int m = og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Less", vals, yp)), dt);
        if (valid >= 0) m = og_gb_op2(b, "Mul", m, valid);
        sel = first_tap(b, m, g, K, eye, dt);
    }
    int ker = tap_kernel(b, g, K, eye, dt);
    og_free(og_gb_alloc(b), buf);
    int ct = og_rule_conv_back(b, og_gb_op2(b, "Mul", gp, sel), ker, nsp, g->in, g->out, g->k, g->s,
                               g->d, g->pb, 1);
    dx[0] = og_gb_op2(b, "Reshape", ct, og_gb_op1(b, "Shape", x));
    return og_gb_status(b);
}

static og_status maxpool_taps_dyn(og_gb *b, const og_node *n, const pool_geom *g, int64_t K,
                                  const int *dy, int *dx);

static og_status g_maxpool(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    pool_geom g;
    int64_t opset = og_gb_opset(b);
    /* from opset 9 the scatter needs no spatial size: only the phases' period, from the
     * kernel, strides and dilations (capped by the output size when it is known) */
    if (!pool_geometry_any(b, n, &g, true)) return og_gb_status(b);
    const og_pool_params *p = n->params;
    int x = n->in[0], nsp = g.nsp;
    if (opset < 9 && og_rule_is_half(og_gb_value(b, x)->dtype))
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient of a float16 MaxPool needs opset >= 9 (Scatter): before it, "
                          "its window masks would need float16 comparisons and convolutions");
    if (opset < 9 && og_dim_known(g.in[0])) return maxpool_taps(b, n, &g, dy, dx);
    if (opset < 9) {
        int64_t K = 1;
        for (int i = 0; i < nsp; i++)
            if (!og_mul_i64(K, g.k[i], &K)) K = INT64_MAX;
        if (K > 1024)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "MaxPool gradient before opset 9: a window of %lld taps is too large",
                              (long long)K);
        return maxpool_taps_dyn(b, n, &g, K, dy, dx);
    }
    /* phases: outputs whose indices differ by a multiple of R along each axis have disjoint
     * windows, so each phase scatters without collisions */
    int64_t R[SP], phases = 1;
    for (int i = 0; i < nsp; i++) {
        int64_t ek = (g.k[i] - 1) * g.d[i] + 1;
        R[i] = (ek + g.s[i] - 1) / g.s[i];
        if (og_dim_known(g.out[i]) && R[i] > g.out[i]) R[i] = g.out[i];
        if (!og_mul_i64(phases, R[i], &phases)) phases = INT64_MAX;
    }
    if (opset < 16 && phases > 1 && opset < 10)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient of MaxPool with overlapping windows needs opset >= 10");
    /* before opset 16 each phase is a few nodes: a window a model may make as large as its
     * input would build millions */
    if (opset < 16 && phases > MAXPOOL_MAX_PHASES)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient of MaxPool with windows that overlap %lld ways needs opset "
                          ">= 16 (ScatterElements with reduction): before it, %d is the limit",
                          (long long)phases, MAXPOOL_MAX_PHASES);
    int idx =
        (n->n_out > 1 && n->out[1] >= 0 && !p->column_major) ? n->out[1] : maxpool_indices(b, n, x);
    /* float16: the scatter (and its sums of overlapping windows) in float32, rounded once */
    og_dtype xt = og_gb_value(b, x)->dtype, dt = og_rule_is_half(xt) ? OG_FLOAT : xt;
    int dy0 = og_rule_widen_as(b, dy[0], n->out[0]);
    int64_t m1 = -1;
    int flat = og_gb_const_i64(b, &m1, 1);
    int shape = og_gb_op1(b, "Shape", x);
    int zeros = og_gb_op2(b, "Expand", og_gb_scalar(b, 0.0, dt), shape);
    zeros = og_gb_op2(b, "Reshape", zeros, flat);
    int acc;
    if (opset >= 16) {
        acc = og_gb_op3(b, "ScatterElements", zeros, og_gb_op2(b, "Reshape", idx, flat),
                        og_gb_op2(b, "Reshape", dy0, flat));
        og_gb_attr_string(b, og_gb_last(b), "reduction", "add");
    } else {
        acc = -1;
        for (int64_t ph = 0; ph < phases; ph++) {
            int64_t starts[SP], ends[SP], axes[SP], rem = ph;
            for (int i = nsp - 1; i >= 0; i--) {
                starts[i] = rem % R[i];
                rem /= R[i];
                ends[i] = INT64_MAX;
                axes[i] = 2 + i;
            }
            int iv = idx, gv = dy0;
            if (phases > 1) {
                iv = og_rule_slice(b, iv, axes, starts, ends, R, nsp);
                gv = og_rule_slice(b, gv, axes, starts, ends, R, nsp);
            }
            iv = og_gb_op2(b, "Reshape", iv, flat);
            gv = og_gb_op2(b, "Reshape", gv, flat);
            if (opset >= 11) { /* acc[iv] = acc[iv] + gv (iv has no duplicates) */
                if (acc >= 0) gv = og_gb_op2(b, "Add", og_gb_op2(b, "GatherElements", acc, iv), gv);
                acc = og_gb_op3(b, "ScatterElements", acc >= 0 ? acc : zeros, iv, gv);
            } else {
                acc = og_rule_accumulate(b, acc, og_gb_op3(b, "Scatter", zeros, iv, gv));
            }
        }
    }
    dx[0] = og_gb_op2(b, "Reshape", acc, shape);
    if (dt != xt) dx[0] = og_rule_cast(b, dx[0], xt);
    return og_gb_status(b);
}

/* Number of window taps inside the input, for each output position along one axis; false
 * if every window is full. */
static int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static bool valid_taps(const pool_geom *g, int i, int64_t *taps)
{
    bool partial = false;
    int64_t k = g->k[i], d = g->d[i];
    for (int64_t o = 0; o < g->out[i]; o++) {
        /* taps j in [0, k) whose input index o·s + j·d − pb lies in [0, in): an interval
         * of j, counted in closed form (a loop over the window took out·k steps: a kernel
         * of 2^24 along a padded axis never finished) */
        int64_t base = o * g->s[i] - g->pb[i];
        int64_t lo = -floor_div(base, d), hi = floor_div(g->in[i] - 1 - base, d);
        if (lo < 0) lo = 0;
        if (hi > k - 1) hi = k - 1;
        int64_t c = hi >= lo ? hi - lo + 1 : 0;
        partial = partial || c != k;
        taps[o] = c ? c : 1; /* a window all in padding takes no gradient anyway */
    }
    return partial;
}

/* ---- AveragePool and LpPool with spatial sizes known only at run time ----------------- */

/* The begin pads of a pooling node over the spatial axes (1-D int64), and its end pads in
 * *pe when pe is not NULL: constants for explicit pads and VALID, computed from X's run-time
 * sizes for SAME_UPPER/LOWER (as og_pool_dim):  total = max(0, (ceil(in / s) − 1)·s + ek −
 * in), begin = floor(total / 2) (UPPER) or total − floor(total / 2) (LOWER), end = total −
 * begin, ek = (k − 1)·d + 1. */
static int pool_pb_dyn(og_gb *b, const og_node *n, int nsp, int *pe)
{
    const og_pool_params *p = n->params;
    int64_t v[SP], ve[SP], one[SP], two[SP], ek[SP];
    for (int i = 0; i < nsp; i++) {
        v[i] = p->auto_pad == OG_PAD_NOTSET ? p->pads[i] : 0;
        ve[i] = p->auto_pad == OG_PAD_NOTSET ? p->pads[nsp + i] : 0;
        one[i] = 1, two[i] = 2;
        ek[i] = (p->kernel[i] - 1) * p->dilations[i] + 1;
    }
    if (p->auto_pad != OG_PAD_SAME_UPPER && p->auto_pad != OG_PAD_SAME_LOWER) {
        if (pe) *pe = og_gb_const_i64(b, ve, nsp);
        return og_gb_const_i64(b, v, nsp);
    }
    int in = og_rule_shape_tail(b, n->in[0], 2), c1 = og_gb_const_i64(b, one, nsp);
    int st = og_gb_const_i64(b, p->strides, nsp);
    /* ceil(in / s) − 1 = floor((in − 1) / s) for in >= 1 */
    int outm1 = og_rule_div(b, og_rule_sub(b, in, c1), st);
    int total =
        og_rule_sub(b, og_rule_add(b, og_rule_mul(b, outm1, st), og_gb_const_i64(b, ek, nsp)), in);
    total = og_rule_relu_i64(b, total);
    int small = og_rule_div(b, total, og_gb_const_i64(b, two, nsp));
    int pb = p->auto_pad == OG_PAD_SAME_UPPER ? small : og_rule_sub(b, total, small);
    if (pe) *pe = og_rule_sub(b, total, pb);
    return pb;
}

/* The unpadded ConvTranspose of grad ([P, ch, out...]) by kernel ker ([ch, 1, k...]) with
 * the pool's strides and dilations and output_padding s − 1, whose size
 * s·(out − 1) + s − 1 + ek >= pb + in (out − 1 >= floor((in + pb + pe − ek) / s) in every
 * mode), cut to the input's positions [pb, pb + in), back to X's shape: each window tap's
 * gradient summed onto the input position it read, sizes known at run time only. */
static int conv_back_dyn(og_gb *b, const og_node *n, const pool_geom *g, int grad, int64_t ch,
                         int ker)
{
    int nsp = g->nsp, x = n->in[0];
    int64_t head[2] = {-1, ch}, zeros[2 * SP], opad[SP], axes[SP];
    bool any_op = false;
    for (int i = 0; i < nsp; i++) {
        zeros[i] = zeros[nsp + i] = 0;
        opad[i] = g->s[i] - 1;
        any_op = any_op || opad[i] > 0;
        axes[i] = 2 + i;
    }
    int parts[2] = {og_gb_const_i64(b, head, 2), og_rule_shape_tail(b, grad, 2)};
    int s2 = og_gb_op(b, "Concat", 2, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int full = og_gb_op2(b, "ConvTranspose", og_gb_op2(b, "Reshape", grad, s2), ker);
    int node = og_gb_last(b);
    og_rule_conv_attrs(b, node, nsp, g->s, g->d, zeros, 1);
    if (any_op) og_gb_attr_ints(b, node, "output_padding", opad, nsp);
    int pb = pool_pb_dyn(b, n, nsp, NULL);
    int cut =
        og_rule_slice_rt(b, full, pb, og_rule_add(b, pb, og_rule_shape_tail(b, x, 2)), axes, nsp);
    return og_gb_op2(b, "Reshape", cut, og_gb_op1(b, "Shape", x));
}

/* Σ over the windows covering each input position of grad ([N, C, out...]) when sizes are
 * known at run time only: per channel ([N·C, 1, out...]) conv_back_dyn with a ones kernel. */
static int window_back_dyn(og_gb *b, const og_node *n, const pool_geom *g, int grad, og_dtype dt)
{
    int64_t shp[OG_MAX_RANK];
    shp[0] = shp[1] = 1;
    for (int i = 0; i < g->nsp; i++) shp[2 + i] = g->k[i];
    return conv_back_dyn(b, n, g, grad, 1, ones_c(b, shp, g->nsp + 2, dt));
}

/* v ([N, C, rest...]) as [N·C, 1, rest...] */
static int planes_dyn(og_gb *b, int v)
{
    int64_t head[2] = {-1, 1};
    int parts[2] = {og_gb_const_i64(b, head, 2), og_rule_shape_tail(b, v, 2)};
    int s = og_gb_op(b, "Concat", 2, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    return og_gb_op2(b, "Reshape", v, s);
}

/* maxpool_taps with spatial sizes known only at run time.  Opset 8: the coordinates of the
 * Indices along each axis (integer Div by the run-time strides of the flat index), minus
 * the window origin o·s − pb (o a run-time iota, pb from pool_pb_dyn), against each tap's
 * kk·d: a tap matches only where it reads the maximum's position, so taps in the padding
 * never do.  Opset 7 (no Indices): the values each tap reads from X padded by the forward's
 * pads (tap_values), M = (V >= Y) times the same taps of padded ones (0 in the padding: a
 * padded cell never wins, whatever its value), the first tap kept.  Explicit pads pad with
 * Pad-2; auto_pad SAME's pads, known only at run time (pool_pb_dyn), with
 * og_rule_pad_spatial_rt (Pad-2 takes its pads as an attribute). */
static og_status maxpool_taps_dyn(og_gb *b, const og_node *n, const pool_geom *g, int64_t K,
                                  const int *dy, int *dx)
{
    const og_pool_params *p = n->params;
    int x = n->in[0], y = n->out[0], nsp = g->nsp, rank = nsp + 2, sel = -1;
    og_dtype dt = og_gb_value(b, y)->dtype;
    int64_t kk[SP], ts[OG_MAX_RANK];
    int64_t *buf = og_malloc(og_gb_alloc(b), (size_t)(K * K + K) * sizeof *buf);
    if (!buf) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    int64_t *eye = buf, *offs = buf + K * K;
    for (int a = 0; a < rank; a++) ts[a] = 1;
    ts[1] = K;
    if (og_gb_opset(b) >= 8) {
        int idx = (n->n_out > 1 && n->out[1] >= 0 && !p->column_major) ? n->out[1]
                                                                       : maxpool_indices(b, n, x);
        idx = planes_dyn(b, idx);
        int pb = pool_pb_dyn(b, n, nsp, NULL), stride = -1;
        for (int i = nsp - 1; i >= 0; i--) {
            int in_i = og_rule_dim(b, x, 2 + i);
            int q = stride < 0 ? idx : og_rule_div(b, idx, stride);
            int coord = og_rule_sub(b, q, og_rule_mul(b, og_rule_div(b, q, in_i), in_i));
            int64_t at = i, os[OG_MAX_RANK];
            for (int a = 0; a < rank; a++) os[a] = 1;
            os[2 + i] = -1;
            int origin = og_rule_sub(b,
                                     og_rule_mul(b, og_rule_iota_dim(b, y, 2 + i),
                                                 og_gb_scalar_i64(b, g->s[i], OG_INT64)),
                                     og_gb_op2(b, "Gather", pb, og_gb_const_i64(b, &at, 1)));
            int rel = og_rule_sub(b, coord, og_rule_reshape_c(b, origin, os, rank));
            for (int64_t t = 0; t < K; t++) {
                tap_index(g, t, kk);
                offs[t] = kk[i] * g->d[i];
            }
            int eq = og_gb_op2(b, "Equal", rel,
                               og_rule_reshape_c(b, og_gb_const_i64(b, offs, (int)K), ts, rank));
            sel = sel < 0 ? eq : og_gb_op2(b, "And", sel, eq);
            stride = stride < 0 ? in_i : og_rule_mul(b, stride, in_i);
        }
        sel = og_rule_cast(b, sel, dt);
    } else {
        bool same = p->auto_pad == OG_PAD_SAME_UPPER || p->auto_pad == OG_PAD_SAME_LOWER;
        int64_t pads[2 * OG_MAX_RANK] = {0};
        bool any_pad = same;
        for (int i = 0; i < nsp && p->auto_pad == OG_PAD_NOTSET; i++) {
            pads[2 + i] = p->pads[i];
            pads[rank + 2 + i] = p->pads[nsp + i];
            any_pad = any_pad || p->pads[i] || p->pads[nsp + i];
        }
        int xp = planes_dyn(b, x);
        /* ones of X's shape for any value of X (x·0 + 1 is NaN at infinities) */
        int ones = og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Less", xp, xp)), dt);
        if (same) { /* run-time pads: zeros concatenated (the mask drops them) */
            int pe = -1, pb = pool_pb_dyn(b, n, nsp, &pe);
            xp = og_rule_pad_spatial_rt(b, xp, pb, pe, nsp, og_gb_value(b, x)->dtype);
            ones = og_rule_pad_spatial_rt(b, ones, pb, pe, nsp, dt);
        } else if (any_pad) {
            xp = og_gb_op1(b, "Pad", xp);
            og_gb_attr_ints(b, og_gb_last(b), "pads", pads, 2 * rank);
            ones = og_gb_op1(b, "Pad", ones);
            og_gb_attr_ints(b, og_gb_last(b), "pads", pads, 2 * rank);
        }
        int vals = tap_values(b, g, xp, K, true);
        int m =
            og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Less", vals, planes_dyn(b, y))), dt);
        if (any_pad) m = og_gb_op2(b, "Mul", m, tap_values(b, g, ones, K, true));
        sel = first_tap(b, m, g, K, eye, dt);
    }
    int ker = tap_kernel(b, g, K, eye, dt);
    og_free(og_gb_alloc(b), buf);
    dx[0] = conv_back_dyn(b, n, g, og_gb_op2(b, "Mul", planes_dyn(b, dy[0]), sel), K, ker);
    return og_gb_status(b);
}

/* AveragePool's dY divided by each window's divisor, sizes known at run time only:
 *   count_include_pad = 0: the taps inside X, Conv(ones[1, 1, in...], ones kernel) with the
 *     pool's strides, dilations and pads (ceil_mode: s − 1 more end pad, cut to dY's size);
 *   count_include_pad = 1: kvol, for every window (the kernel's and ONNX's reference rule;
 *     a ceil_mode window running past the end padding is divided by kvol too, where
 *     onnxruntime divides by its cells inside the padded input).
 * false (with the builder's status) on failure. */
static bool avg_scaled_dyn(og_gb *b, const og_node *n, const pool_geom *g, int dy, og_dtype dt,
                           int *scaled)
{
    const og_pool_params *p = n->params;
    int nsp = g->nsp, rank = nsp + 2;
    int64_t kvol = 1;
    for (int i = 0; i < nsp; i++) kvol *= g->k[i];
    bool ceil = p->ceil_mode && p->auto_pad == OG_PAD_NOTSET;
    if (p->count_include_pad) {
        *scaled = og_gb_op2(b, "Div", dy, og_gb_scalar(b, (double)kvol, dt));
        return true;
    }
    int64_t head[2] = {1, 1}, shp[OG_MAX_RANK], pads[2 * SP], zeros[SP], axes[SP];
    shp[0] = shp[1] = 1;
    for (int i = 0; i < nsp; i++) {
        shp[2 + i] = g->k[i];
        pads[i] = p->auto_pad == OG_PAD_NOTSET ? p->pads[i] : 0;
        pads[nsp + i] =
            p->auto_pad == OG_PAD_NOTSET ? p->pads[nsp + i] + (ceil ? g->s[i] - 1 : 0) : 0;
        zeros[i] = 0;
        axes[i] = 2 + i;
    }
    int ones;
    if (og_gb_opset(b) >= 8) {
        int parts[2] = {og_gb_const_i64(b, head, 2), og_rule_shape_tail(b, n->in[0], 2)};
        int s1 = og_gb_op(b, "Concat", 2, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        ones = og_gb_op2(b, "Expand", og_gb_scalar(b, 1.0, dt), s1);
    } else { /* no Expand: Cast(!(t < t)) of t = X[:1, :1], 1 for any value */
        int64_t ax2[2] = {0, 1}, st2[2] = {0, 0}, en2[2] = {1, 1};
        int t = og_rule_slice(b, n->in[0], ax2, st2, en2, NULL, 2);
        ones = og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Less", t, t)), dt);
    }
    int valid = og_gb_op2(b, "Conv", ones, ones_c(b, shp, rank, dt));
    int node = og_gb_last(b);
    og_gb_attr_ints(b, node, "strides", g->s, nsp);
    og_gb_attr_ints(b, node, "dilations", g->d, nsp);
    if (p->auto_pad == OG_PAD_NOTSET)
        og_gb_attr_ints(b, node, "pads", pads, 2 * nsp);
    else /* the same windows as the pool's (og_pool_dim follows Conv's rule) */
        og_gb_attr_string(b, node, "auto_pad",
                          p->auto_pad == OG_PAD_VALID        ? "VALID"
                          : p->auto_pad == OG_PAD_SAME_UPPER ? "SAME_UPPER"
                                                             : "SAME_LOWER");
    if (ceil)
        valid = og_rule_slice_rt(b, valid, og_gb_const_i64(b, zeros, nsp),
                                 og_rule_shape_tail(b, dy, 2), axes, nsp);
    /* a window all in padding reads no input: its gradient goes nowhere (divisor 1);
     * max(v, 1) = v + Relu(1 − v) before opset 8 (Max does not broadcast there) */
    int one = og_gb_scalar(b, 1.0, dt);
    valid = og_gb_opset(b) >= 8
                ? og_gb_op2(b, "Max", valid, one)
                : og_rule_add(b, valid, og_gb_op1(b, "Relu", og_rule_sub(b, one, valid)));
    *scaled = og_gb_op2(b, "Div", dy, valid);
    return true;
}

static og_status g_avgpool(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    pool_geom g;
    /* sizes known at run time only: computed divisors and pads */
    if (!pool_geometry_any(b, n, &g, true)) return og_gb_status(b);
    /* float16: computed in float32, rounded once */
    og_dtype xt = og_gb_value(b, n->out[0])->dtype, dt = og_rule_is_half(xt) ? OG_FLOAT : xt;
    int dy0 = og_rule_widen_as(b, dy[0], n->out[0]);
    if (!og_dim_known(g.in[0])) {
        int scaled = -1;
        if (avg_scaled_dyn(b, n, &g, dy0, dt, &scaled))
            dx[0] = window_back_dyn(b, n, &g, scaled, dt);
        if (dt != xt && dx[0] >= 0) dx[0] = og_rule_cast(b, dx[0], xt);
        return og_gb_status(b);
    }
    int x = n->in[0], nsp = g.nsp, rank = nsp + 2;
    double kvol = 1; /* a divisor: no overflow to fear in double */
    bool partial = false;
    for (int i = 0; i < nsp; i++) kvol *= (double)g.k[i];
    int scaled;
    /* the divisor per output: AveragePool(ones) = taps / divisor */
    int valid = -1;
    for (int i = 0; i < nsp; i++) {
        int64_t *taps = og_malloc(og_gb_alloc(b), (size_t)g.out[i] * sizeof *taps);
        if (!taps) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        if (valid_taps(&g, i, taps)) {
            partial = true;
            int64_t shp[OG_MAX_RANK];
            for (int a = 0; a < rank; a++) shp[a] = 1;
            shp[2 + i] = g.out[i];
            int t = og_rule_cast(
                b, og_rule_reshape_c(b, og_gb_const_i64(b, taps, (int)g.out[i]), shp, rank), dt);
            valid = valid < 0 ? t : og_gb_op2(b, "Mul", valid, t);
        }
        og_free(og_gb_alloc(b), taps);
    }
    if (!partial) {
        scaled = og_gb_op2(b, "Div", dy0, og_gb_scalar(b, kvol, dt));
    } else {
        int64_t shp[OG_MAX_RANK];
        shp[0] = shp[1] = 1;
        for (int i = 0; i < nsp; i++) shp[2 + i] = g.in[i];
        int ones = ones_c(b, shp, rank, dt);
        int ap = og_gb_op1(b, "AveragePool", ones);
        og_gb_copy_attrs(b, og_gb_last(b), n, NULL);
        scaled = og_gb_op2(b, "Mul", dy0, og_gb_op2(b, "Div", ap, valid));
    }
    /* per channel: [N·C, 1, out...] through a ones kernel */
    int64_t shp[OG_MAX_RANK];
    shp[0] = -1;
    shp[1] = 1;
    for (int i = 0; i < nsp; i++) shp[2 + i] = g.out[i];
    int g2 = og_rule_reshape_c(b, scaled, shp, rank);
    shp[0] = 1;
    for (int i = 0; i < nsp; i++) shp[2 + i] = g.k[i];
    int ker = ones_c(b, shp, rank, dt);
    int ct = og_rule_conv_back(b, g2, ker, nsp, g.in, g.out, g.k, g.s, g.d, g.pb, 1);
    dx[0] = og_gb_op2(b, "Reshape", ct, og_gb_op1(b, "Shape", x));
    if (dt != xt) dx[0] = og_rule_cast(b, dx[0], xt);
    return og_gb_status(b);
}

/* Σ over the windows covering each input position of g ([N, C, out...]): a ConvTranspose
 * with a ones kernel per channel, back to X's shape */
static int window_back(og_gb *b, const pool_geom *g, int grad, int x, og_dtype dt)
{
    int rank = g->nsp + 2;
    int64_t shp[OG_MAX_RANK];
    shp[0] = -1;
    shp[1] = 1;
    for (int i = 0; i < g->nsp; i++) shp[2 + i] = g->out[i];
    int g2 = og_rule_reshape_c(b, grad, shp, rank);
    shp[0] = 1;
    for (int i = 0; i < g->nsp; i++) shp[2 + i] = g->k[i];
    int ker = ones_c(b, shp, rank, dt);
    int ct = og_rule_conv_back(b, g2, ker, g->nsp, g->in, g->out, g->k, g->s, g->d, g->pb, 1);
    return og_gb_op2(b, "Reshape", ct, og_gb_op1(b, "Shape", x));
}

static og_status g_lppool(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    pool_geom g;
    if (!pool_geometry_any(b, n, &g, true)) return og_gb_status(b);
    const og_pool_params *p = n->params;
    int x = n->in[0], y = n->out[0];
    og_dtype dt = og_gb_value(b, y)->dtype;
    /* dy/dx = sign(x)·|x|^(p−1) / y^(p−1): x/|x| for p 1 (0 at 0), x·|x|^(p−2) above (no
     * Sign before opset 9); the 1e-30 added to the divisors keeps 0/0 at 0 (Add: Max does
     * not broadcast before opset 8) */
    int gr = dy[0], ax = og_gb_op1(b, "Abs", x), sx;
    if (p->p == 1) {
        sx = og_gb_op2(b, "Div", x, og_gb_op2(b, "Add", ax, og_gb_scalar(b, og_rule_tiny(dt), dt)));
    } else {
        int ypow = p->p == 2 ? y : og_gb_op2(b, "Pow", y, og_gb_scalar(b, (double)(p->p - 1), dt));
        gr = og_gb_op2(b, "Div", gr,
                       og_gb_op2(b, "Add", ypow, og_gb_scalar(b, og_rule_tiny(dt), dt)));
        sx = p->p == 2
                 ? x
                 : og_gb_op2(b, "Mul", x,
                             og_gb_op2(b, "Pow", ax, og_gb_scalar(b, (double)(p->p - 2), dt)));
    }
    dx[0] = og_gb_op2(b, "Mul", sx,
                      og_dim_known(g.in[0]) ? window_back(b, &g, gr, x, dt)
                                            : window_back_dyn(b, n, &g, gr, dt));
    return og_gb_status(b);
}

/* X's dims all known, so the covered block has static bounds */
static bool unpool_dims_known(const og_node *n, const og_value *X)
{
    const og_pool_params *p = n->params;
    int64_t e;
    if (X->rank != p->nsp + 2) return false;
    for (int d = 0; d < X->rank; d++)
        if (!og_dim_known(X->dims[d]) || (d >= 2 && !og_unpool_dim(p, d - 2, X->dims[d], &e)))
            return false;
    return true;
}

/* dY cut to the block at the start of the output that MaxUnpool's windows cover, its size
 * from X's run-time shape: [N, C, (in − 1)·s + k − pb − pe] (og_unpool_dim).  Slice takes
 * it from opset 10; before, a Gather of the first (in − 1)·s + k − pb − pe positions of
 * each spatial axis (a run-time iota). */
static int unpool_block_dyn(og_gb *b, const og_node *n, int x, int gr)
{
    const og_pool_params *p = n->params;
    int rank = p->nsp + 2;
    int64_t nsp = p->nsp, zero[OG_MAX_RANK], axes[OG_MAX_RANK], add[SP], two = 2;
    for (int d = 0; d < rank; d++) zero[d] = 0, axes[d] = d;
    /* (in − 1)·s + k − pb − pe = in·s + (k − pb − pe − s) */
    for (int i = 0; i < nsp; i++)
        add[i] = p->kernel[i] - p->pads[i] - p->pads[nsp + i] - p->strides[i];
    if (og_gb_opset(b) < 10) {
        for (int i = 0; i < nsp; i++) {
            int in = og_rule_dim(b, x, 2 + i);
            int len =
                og_rule_add(b, og_rule_mul(b, in, og_gb_scalar_i64(b, p->strides[i], OG_INT64)),
                            og_gb_scalar_i64(b, add[i], OG_INT64));
            gr = og_gb_op2(b, "Gather", gr, og_rule_iota(b, len));
            og_gb_attr_int(b, og_gb_last(b), "axis", 2 + i);
        }
        return gr;
    }
    int sx = og_gb_op1(b, "Shape", x);
    int hin[3] = {sx, og_gb_const_i64(b, zero, 1), og_gb_const_i64(b, &two, 1)};
    int head = og_gb_op(b, "Slice", 3, hin);
    int sp = og_rule_add(
        b, og_rule_mul(b, og_rule_shape_tail(b, x, 2), og_gb_const_i64(b, p->strides, nsp)),
        og_gb_const_i64(b, add, nsp));
    int parts[2] = {head, sp};
    int ends = og_gb_op(b, "Concat", 2, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int sin[4] = {gr, og_gb_const_i64(b, zero, rank), ends, og_gb_const_i64(b, axes, rank)};
    return og_gb_op(b, "Slice", 4, sin);
}

static og_status g_maxunpool(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_pool_params *p = n->params;
    if (!p || !n->parsed) return og_gb_fail(b, n, OG_ERR_INTERNAL, "attributes not parsed");
    int x = n->in[0], gr = dy[0], rank = p->nsp + 2;
    int64_t m1 = -1;
    if (n->n_in > 2 && n->in[2] >= 0 && !unpool_dims_known(n, og_gb_value(b, x))) {
        gr = unpool_block_dyn(b, n, x, gr);
    } else if (n->n_in > 2 && n->in[2] >= 0) { /* the covered block, static */
        const og_value *X = og_gb_value(b, x);
        int64_t axes[OG_MAX_RANK], starts[OG_MAX_RANK], ends[OG_MAX_RANK];
        for (int d = 0; d < rank; d++) {
            axes[d] = d;
            starts[d] = 0;
            if (X->rank != rank || !og_dim_known(X->dims[d]) ||
                (d >= 2 && !og_unpool_dim(p, d - 2, X->dims[d], &ends[d])))
                return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                                  "gradient with output_shape needs X's dims statically");
            if (d < 2) ends[d] = X->dims[d];
        }
        gr = og_rule_slice(b, gr, axes, starts, ends, NULL, rank);
    }
    int flat = og_gb_const_i64(b, &m1, 1);
    int gath = og_gb_op2(b, "Gather", og_gb_op2(b, "Reshape", gr, flat),
                         og_gb_op2(b, "Reshape", n->in[1], flat));
    dx[0] = og_gb_op2(b, "Reshape", gath, og_gb_op1(b, "Shape", x));
    return og_gb_status(b);
}

/* ---- RoiAlign ---------------------------------------------------------------------------- */

/* Column k of rois [R, 4], as [R] */
static int roi_col(og_gb *b, int rois, int k)
{
    int c = og_gb_op2(b, "Gather", rois, og_gb_scalar(b, (double)k, OG_INT64));
    og_gb_attr_int(b, og_gb_last(b), "axis", 1);
    return c;
}

/* The samples of one axis: their two taps' int64 indices and weights ([R, O, G]): start,
 * bin and grid count [R], O output cells, G (scalar int64 or constant) samples at most, L
 * the input size */
typedef struct roi_axis {
    int idx[2], w[2];
} roi_axis;

/* An image axis's length L: static, or from Shape(X) at run time; as a float scalar, L − 1
 * too, and as an int64 scalar and [1] (OneHot's depth) */
typedef struct roi_len {
    int lf, lm1, li, l1;
} roi_len;

static roi_len roi_length(og_gb *b, int x, int axis, int64_t L, og_dtype dt)
{
    roi_len r;
    if (og_dim_known(L)) {
        r.lf = og_gb_scalar(b, (double)L, dt);
        r.lm1 = og_gb_scalar(b, (double)(L - 1), dt);
        r.li = og_gb_scalar(b, (double)L, OG_INT64);
        r.l1 = og_gb_const_i64(b, &L, 1);
    } else {
        int64_t a = axis;
        r.l1 = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", x), og_gb_const_i64(b, &a, 1));
        r.li = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", x),
                         og_gb_scalar(b, (double)axis, OG_INT64));
        r.lf = og_rule_cast(b, r.li, dt);
        r.lm1 = og_gb_op2(b, "Sub", r.lf, og_gb_scalar(b, 1.0, dt));
    }
    return r;
}

static roi_axis roi_axis_taps(og_gb *b, int start, int bin, int grid, int gmax_f, int64_t O,
                              const roi_len *L, og_dtype dt)
{
    roi_axis a;
    int64_t r3[3] = {-1, 1, 1}, o3[3] = {1, -1, 1}, g3[3] = {1, 1, -1};
    int64_t *cells = og_malloc(og_gb_alloc(b), (size_t)O * sizeof *cells);
    if (!cells) {
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        memset(&a, 0xff, sizeof a);
        return a;
    }
    for (int64_t i = 0; i < O; i++) cells[i] = i;
    int ph = og_rule_cast(b, og_rule_reshape_c(b, og_gb_const_i64(b, cells, (int)O), o3, 3), dt);
    og_free(og_gb_alloc(b), cells);
    int st = og_rule_reshape_c(b, start, r3, 3), bn = og_rule_reshape_c(b, bin, r3, 3);
    int gr = og_rule_reshape_c(b, grid, r3, 3);
    int it = og_rule_reshape_c(b, gmax_f, g3, 3); /* sample numbers 0 .. G − 1 */
    /* y = start + cell·bin + (i + ½)·bin / grid */
    int y = og_gb_op2(
        b, "Add", og_gb_op2(b, "Add", st, og_gb_op2(b, "Mul", ph, bn)),
        og_gb_op2(b, "Div",
                  og_gb_op2(b, "Mul", og_gb_op2(b, "Add", it, og_gb_scalar(b, 0.5, dt)), bn), gr));
    int in_grid = og_rule_cast(b, og_gb_op2(b, "Less", it, gr), dt);
    int out = og_gb_op2(b, "Or", og_gb_op2(b, "Less", y, og_gb_scalar(b, -1.0, dt)),
                        og_gb_op2(b, "Greater", y, L->lf));
    int valid = og_gb_op2(b, "Mul", og_rule_cast(b, og_gb_op1(b, "Not", out), dt), in_grid);
    int yc = og_gb_op2(b, "Max", y, og_gb_scalar(b, 0.0, dt));
    int lo = og_gb_op1(b, "Floor", yc), last = L->lm1;
    int top = og_gb_op1(b, "Not", og_gb_op2(b, "Less", lo, last));
    int lo2 = og_gb_op3(b, "Where", top, last, lo);
    int hi = og_gb_op3(b, "Where", top, last, og_gb_op2(b, "Add", lo, og_gb_scalar(b, 1.0, dt)));
    int l = og_gb_op3(b, "Where", top, og_gb_scalar(b, 0.0, dt), og_gb_op2(b, "Sub", yc, lo));
    a.idx[0] = og_rule_cast(b, lo2, OG_INT64);
    a.idx[1] = og_rule_cast(b, hi, OG_INT64);
    a.w[0] = og_gb_op2(b, "Mul", og_gb_op2(b, "Sub", og_gb_scalar(b, 1.0, dt), l), valid);
    a.w[1] = og_gb_op2(b, "Mul", l, valid);
    return a;
}

/* Σ over samples and taps of OneHot(idx, L)·w: [R, O, L] */
static int roi_matrix(og_gb *b, const roi_axis *a, const roi_len *L, og_dtype dt)
{
    int64_t two = 2;
    int depth = L->l1;
    int m = -1;
    for (int k = 0; k < 2; k++) {
        int oh = og_rule_one_hot(b, a->idx[k], depth, dt, -1);
        int t = og_gb_op2(b, "Mul", oh, og_rule_unsqueeze(b, a->w[k], (int64_t[]){3}, 1));
        m = og_rule_accumulate(b, m, og_gb_reduce_sum(b, t, &two, 1, false));
    }
    return m;
}

static og_status g_roi_align(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_roi_params *p = n->params;
    int x = IN(0), rois = IN(1), bi = IN(2);
    const og_value *X = og_gb_value(b, x);
    if (!p || !n->parsed) return og_gb_fail(b, n, OG_ERR_INTERNAL, "attributes not parsed");
    if (!WANTS(0)) return og_gb_status(b); /* rois: no gradient */
    if (X->rank != 4) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs X's rank (4)");
    if (p->max_mode && og_gb_opset(b) < 16)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient of RoiAlign in max mode needs opset >= 16 (ScatterElements "
                          "with reduction add)");
    int64_t oh = p->out_h, ow = p->out_w;
    og_dtype dt = og_gb_value(b, OUT(0))->dtype;
    roi_len H = roi_length(b, x, 2, X->dims[2], dt), W = roi_length(b, x, 3, X->dims[3], dt);
    double off = p->half_pixel ? 0.5 : 0.0;
    int sc = og_gb_scalar(b, p->spatial_scale, dt), of = og_gb_scalar(b, off, dt);
    int c[4];
    for (int k = 0; k < 4; k++)
        c[k] = og_gb_op2(b, "Sub", og_gb_op2(b, "Mul", roi_col(b, rois, k), sc), of);
    int rw = og_gb_op2(b, "Sub", c[2], c[0]), rh = og_gb_op2(b, "Sub", c[3], c[1]);
    if (!p->half_pixel) {
        rw = og_gb_op2(b, "Max", rw, og_gb_scalar(b, 1.0, dt));
        rh = og_gb_op2(b, "Max", rh, og_gb_scalar(b, 1.0, dt));
    }
    int bh = og_gb_op2(b, "Div", rh, og_gb_scalar(b, (double)oh, dt));
    int bw = og_gb_op2(b, "Div", rw, og_gb_scalar(b, (double)ow, dt));
    int gh, gw, gh_max, gw_max;
    if (p->sampling_ratio > 0) {
        int64_t *seq = og_malloc(og_gb_alloc(b), (size_t)p->sampling_ratio * sizeof *seq);
        if (!seq) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < p->sampling_ratio; i++) seq[i] = i;
        gh = gw = og_gb_op2(b, "Add", og_gb_op2(b, "Mul", bh, og_gb_scalar(b, 0.0, dt)),
                            og_gb_scalar(b, (double)p->sampling_ratio, dt)); /* [R] */
        gh_max = gw_max = og_rule_cast(b, og_gb_const_i64(b, seq, (int)p->sampling_ratio), dt);
        og_free(og_gb_alloc(b), seq);
    } else {
        gh = og_gb_op1(b, "Ceil", bh);
        gw = og_gb_op1(b, "Ceil", bw);
        /* 0 .. the largest grid − 1 */
        int mh = og_gb_op1(b, "ReduceMax", gh);
        og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
        int mw = og_gb_op1(b, "ReduceMax", gw);
        og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
        mh = og_rule_cast(b, mh, OG_INT64);
        mw = og_rule_cast(b, mw, OG_INT64);
        gh_max = og_rule_cast(b, og_rule_iota(b, mh), dt);
        gw_max = og_rule_cast(b, og_rule_iota(b, mw), dt);
    }
    roi_axis ay = roi_axis_taps(b, c[1], bh, gh, gh_max, oh, &H, dt);
    roi_axis ax = roi_axis_taps(b, c[0], bw, gw, gw_max, ow, &W, dt);
    int64_t r4[4] = {-1, 1, 1, 1}, one1 = 1;
    int u; /* [R, C, H·W]: each region's gradient over its image */
    if (!p->max_mode) {
        int cnt = og_gb_op2(b, "Max", og_gb_op2(b, "Mul", gh, gw), og_gb_scalar(b, 1.0, dt));
        int g = og_gb_op2(b, "Div", dy[0], og_rule_reshape_c(b, cnt, r4, 4));
        int aty = og_rule_unsqueeze(
            b, og_rule_transpose(b, roi_matrix(b, &ay, &H, dt), (int64_t[]){0, 2, 1}, 3), &one1,
            1);                                                               /* [R, 1, H, oh] */
        int axm = og_rule_unsqueeze(b, roi_matrix(b, &ax, &W, dt), &one1, 1); /* [R, 1, ow, W] */
        u = og_gb_op2(b, "MatMul", og_gb_op2(b, "MatMul", aty, g), axm);
        u = og_rule_reshape_c(b, u, (int64_t[]){0, 0, -1}, 3);
    } else {
        /* every (sample, corner) of every cell, in the forward's order: [R, oh, ow, gh, gw, 4] */
        int pos[4], wts[4], k = 0;
        int64_t perm[5] = {0, 1, 3, 2, 4}, a34[2] = {3, 4}, a12[2] = {1, 2}, a5 = 5;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++, k++) {
                int yi = og_rule_unsqueeze(b, ay.idx[i], a34, 2); /* [R, oh, gh, 1, 1] */
                int xi = og_rule_unsqueeze(b, ax.idx[j], a12, 2); /* [R, 1, 1, ow, gw] */
                int pq = og_gb_op2(b, "Add", og_gb_op2(b, "Mul", yi, W.li), xi);
                int wq = og_gb_op2(b, "Mul", og_rule_unsqueeze(b, ay.w[i], a34, 2),
                                   og_rule_unsqueeze(b, ax.w[j], a12, 2));
                pos[k] = og_rule_unsqueeze(b, og_rule_transpose(b, pq, perm, 5), &a5, 1);
                wts[k] = og_rule_unsqueeze(b, og_rule_transpose(b, wq, perm, 5), &a5, 1);
            }
        int pa = og_gb_op(b, "Concat", 4, pos);
        og_gb_attr_int(b, og_gb_last(b), "axis", 5);
        int wa = og_gb_op(b, "Concat", 4, wts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 5);
        /* samples past a region's grid take no part in the max: the lowest value there */
        int64_t rg[2] = {-1, 1}, gr[2] = {1, -1}, g6y[6] = {0, 1, 1, -1, 1, 1},
                g6x[6] = {0, 1, 1, 1, -1, 1};
        int gy = og_gb_op2(b, "Less", og_rule_reshape_c(b, gh_max, gr, 2),
                           og_rule_reshape_c(b, gh, rg, 2));
        int gx = og_gb_op2(b, "Less", og_rule_reshape_c(b, gw_max, gr, 2),
                           og_rule_reshape_c(b, gw, rg, 2));
        int ok =
            og_gb_op2(b, "And", og_rule_reshape_c(b, gy, g6y, 6), og_rule_reshape_c(b, gx, g6x, 6));
        double lowest = dt == OG_FLOAT16 ? -65504.0 : dt == OG_FLOAT ? -3.4e38 : -1.7e308;
        int pen = og_gb_op2(b, "Add", og_gb_op2(b, "Mul", wa, og_gb_scalar(b, 0.0, dt)),
                            og_gb_op2(b, "Mul", og_rule_cast(b, og_gb_op1(b, "Not", ok), dt),
                                      og_gb_scalar(b, lowest, dt)));
        int64_t f4[4] = {0, 1, oh * ow, -1}, f3[3] = {0, 0, -1}, c2[2] = {0, 1},
                f4c[4] = {0, 0, oh * ow, -1};
        pa = og_rule_reshape_c(b, pa, f4, 4); /* [R, 1, oh·ow, K] */
        wa = og_rule_reshape_c(b, wa, f4, 4);
        pen = og_rule_reshape_c(b, pen, f4, 4);
        /* X of each region's image at every position: [R, C, oh·ow, K] */
        int flatx = og_rule_reshape_c(b, og_gb_op2(b, "Gather", x, bi), f3, 3); /* [R, C, HW] */
        int rc1 = og_gb_op(
            b, "Concat", 2,
            (int[]){og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", flatx), og_gb_const_i64(b, c2, 2)),
                    og_gb_const_i64(b, &one1, 1)});
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        int pex = og_gb_op2(b, "Expand", og_rule_reshape_c(b, pa, (int64_t[]){0, 1, -1}, 3), rc1);
        int vals = og_gb_op2(b, "GatherElements", flatx, pex);
        og_gb_attr_int(b, og_gb_last(b), "axis", 2);
        vals =
            og_gb_op2(b, "Add", og_gb_op2(b, "Mul", og_rule_reshape_c(b, vals, f4c, 4), wa), pen);
        int am = og_gb_op1(b, "ArgMax", vals);
        og_gb_attr_int(b, og_gb_last(b), "axis", 3);
        int vs = og_gb_op1(b, "Shape", vals);
        int psel = og_gb_op2(b, "GatherElements", og_gb_op2(b, "Expand", pa, vs), am);
        og_gb_attr_int(b, og_gb_last(b), "axis", 3);
        int wsel = og_gb_op2(b, "GatherElements", og_gb_op2(b, "Expand", wa, vs), am);
        og_gb_attr_int(b, og_gb_last(b), "axis", 3);
        int upd =
            og_gb_op2(b, "Mul", og_rule_reshape_c(b, dy[0], (int64_t[]){0, 0, -1, 1}, 4), wsel);
        int zeros = og_gb_op2(b, "Expand", og_gb_scalar(b, 0.0, dt), og_gb_op1(b, "Shape", flatx));
        u = og_gb_op3(b, "ScatterElements", zeros, og_rule_reshape_c(b, psel, f3, 3),
                      og_rule_reshape_c(b, upd, f3, 3));
        og_gb_attr_int(b, og_gb_last(b), "axis", 2);
        og_gb_attr_string(b, og_gb_last(b), "reduction", "add");
    }
    /* dX[n] = Σ over the regions of image n: OneHot(batch_indices, N)ᵀ · u */
    int64_t zero = 0;
    int depth = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", x), og_gb_const_i64(b, &zero, 1));
    int sel = og_rule_one_hot(b, bi, depth, dt, -1);
    int flat = og_gb_op2(b, "MatMul", og_rule_transpose(b, sel, (int64_t[]){1, 0}, 2),
                         og_rule_reshape_c(b, u, (int64_t[]){0, -1}, 2));
    dx[0] = og_gb_op2(b, "Reshape", flat, og_gb_op1(b, "Shape", x));
    return og_gb_status(b);
}

const og_grad_rule og_grad_pool[] = {{"GlobalAveragePool", "", g_global_avgpool},
                                     {"GlobalMaxPool", "", g_global_maxpool},
                                     {"MaxPool", "", g_maxpool},
                                     {"AveragePool", "", g_avgpool},
                                     {"LpPool", "", g_lppool},
                                     {"MaxUnpool", "", g_maxunpool},
                                     {"RoiAlign", "", g_roi_align},
                                     {0}};
