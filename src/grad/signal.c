/* signal.c: gradients of DFT and STFT (src/ops/signal.c), which are linear: the gradient is
 * the adjoint transform, itself a DFT.  Complex values are (re, im) pairs, so for a real loss
 * the gradient of a pair is the pair of partial derivatives, and the adjoint of
 * y_k = sum_n x_n e^{-2 pi i k n / L} is
 *   dx_n = sum_k dy_k e^{+2 pi i k n / L} = L * IDFT(dy)_n,
 * and of the inverse transform y_k = (1/L) sum_n x_n e^{+2 pi i k n / L}:
 *   dx_n = (1/L) sum_k dy_k e^{-2 pi i k n / L} = DFT(dy)_n / L.
 * Around it: a onesided output's missing bins get zero gradients (dy padded to L bins), a
 * signal padded to L keeps its first n gradients, a truncated one gets zeros past L, and a
 * real input keeps the real parts.
 *
 * STFT: frame f of the signal, times the window w, is DFT'd:
 *   y[b, f] = DFT_L(z[b, f]),  z[b, f, j] = w[j] x[b, f step + j]  (j < n = min(W, L)),
 * so dz = L * IDFT(dy) per frame (bins padded as above), dx is the overlap-add of w[j] dz over
 * the frames (ScatterElements with add), and dw[j] = sum over b, f and the parts of
 * dz[b, f, j] x[b, f step + j].
 *
 * Lengths, axes and steps must be known when the graph is built (constant inputs, static
 * dims): they decide the shapes of the padding and the scatter indices. */
#include <string.h>

#include "grad/rule_util.h"

/* x with zeros appended along axis up to `to` (from `from`) of rank r. */
static int pad_end(og_gb *b, int x, int r, int axis, int64_t from, int64_t to)
{
    if (to <= from) return x;
    int64_t pads[2 * OG_MAX_RANK] = {0};
    pads[r + axis] = to - from;
    return og_gb_op2(b, "Pad", x, og_gb_const_i64(b, pads, 2 * r));
}

static int slice1(og_gb *b, int x, int64_t axis, int64_t start, int64_t end)
{
    return og_rule_slice(b, x, &axis, &start, &end, NULL, 1);
}

/* A constant integer input (scalar) of n, or `dflt` when omitted; false when not constant. */
static bool const_int(og_gb *b, const og_node *n, int i, int64_t dflt, int64_t *v)
{
    if (i >= n->n_in || n->in[i] < 0) {
        *v = dflt;
        return true;
    }
    const og_tensor *t = og_gb_value(b, n->in[i])->known;
    if (!t || t->numel != 1) return false;
    *v = og_tensor_get_i64(t, 0);
    return true;
}

/* DFT of x over axis, forward or inverse, in the graph's opset form (the axis an attribute
 * before 20, a scalar input after). */
static int emit_dft(og_gb *b, int x, int axis, bool inverse)
{
    int in[3] = {x, -1, og_gb_opset(b) >= 20 ? og_gb_scalar(b, axis, OG_INT64) : -1};
    int y = og_gb_op(b, "DFT", 3, in);
    if (og_gb_opset(b) < 20) og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    og_gb_attr_int(b, og_gb_last(b), "inverse", inverse);
    return y;
}

/* The adjoint of a length-L DFT (forward when !inverse) on dy, whose axis holds `bins` of
 * the L: pad the bins, transform back, scale. */
static int adjoint(og_gb *b, int dy, int r, int axis, int64_t L, int64_t bins, bool inverse,
                   int like)
{
    int t = pad_end(b, dy, r, axis, bins, L);
    t = emit_dft(b, t, axis, !inverse);
    return og_rule_mul(b, t, og_gb_scalar_like(b, inverse ? 1.0 / (double)L : (double)L, like));
}

static og_status g_dft(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0) || dy[0] < 0) return og_gb_status(b);
    const og_value *x = og_gb_value(b, IN(0)), *y = og_gb_value(b, OUT(0));
    int r = x->rank;
    if (r < 2 || y->rank != r) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "the gradient needs the input's rank");
        return og_gb_status(b);
    }
    int64_t axis, L;
    bool v20 = n->since_version >= 20;
    /* the axis: an attribute before 20, a constant input after */
    if (v20) {
        if (!const_int(b, n, 2, -2, &axis)) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "the gradient needs a constant axis");
            return og_gb_status(b);
        }
    } else {
        const og_attr *a = og_node_attr(n, "axis");
        axis = a ? a->i : 1;
    }
    if (axis < 0) axis += r;
    int64_t nx = x->dims[axis], c = x->dims[r - 1], bins = y->dims[axis];
    if (!const_int(b, n, 1, nx, &L) || nx < 0 || L < 0 || c < 0 || bins < 0) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                   "the gradient needs a constant dft_length and known "
                   "dims along the axis and the last one");
        return og_gb_status(b);
    }
    bool inverse = og_attr_int(n, "inverse", 0) != 0;
    int g = adjoint(b, dy[0], r, (int)axis, L, bins, inverse, IN(0));
    if (nx < L) g = slice1(b, g, axis, 0, nx);
    g = pad_end(b, g, r, (int)axis, L, nx);
    if (c == 1) g = slice1(b, g, r - 1, 0, 1);
    dx[0] = g;
    return og_gb_status(b);
}

static og_status g_stft(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] < 0) return og_gb_status(b);
    bool want_x = WANTS(0), want_w = n->n_in > 2 && IN(2) >= 0 && WANTS(2);
    if (!want_x && !want_w) return og_gb_status(b);
    const og_value *x = og_gb_value(b, IN(0)), *y = og_gb_value(b, OUT(0));
    int64_t step, W = -1, L, len = x->rank == 3 ? x->dims[1] : -1,
                  c = x->rank == 3 ? x->dims[2] : -1;
    if (n->n_in > 2 && IN(2) >= 0) {
        const og_value *w = og_gb_value(b, IN(2));
        W = w->rank == 1 ? w->dims[0] : -1;
        if (W < 0) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "the gradient needs the window's length");
            return og_gb_status(b);
        }
    }
    if (!const_int(b, n, 1, 0, &step) || !const_int(b, n, 3, W >= 0 ? W : len, &L) || len < 0 ||
        c < 0 || y->rank != 4 || y->dims[1] < 0 || y->dims[2] < 0) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                   "the gradient needs constant frame_step and "
                   "frame_length, and the signal's length");
        return og_gb_status(b);
    }
    if (W < 0) W = L;
    int64_t frames = y->dims[1], bins = y->dims[2], m = W < L ? W : L;
    /* dz [B, F, m, 2]: the adjoint of each frame's DFT (axis 2), cut to the window's samples */
    int dz = adjoint(b, dy[0], 4, 2, L, bins, false, IN(0));
    if (m < L) dz = slice1(b, dz, 2, 0, m);
    if (c == 1) dz = slice1(b, dz, 3, 0, 1);
    /* the frames' sample indices f step + j: [F, m] */
    int64_t cnt = frames * m;
    int64_t *idx = og_malloc(og_gb_alloc(b), (size_t)(cnt + 1) * sizeof *idx);
    if (!idx) {
        og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        return og_gb_status(b);
    }
    for (int64_t f = 0; f < frames; f++)
        for (int64_t j = 0; j < m; j++) idx[f * m + j] = f * step + j;
    int wcol = -1; /* the window as [m, 1], broadcasting over [B, F, m, c] */
    if (n->n_in > 2 && IN(2) >= 0) {
        int64_t shape[2] = {m, 1};
        wcol = og_rule_reshape_c(b, m < W ? slice1(b, IN(2), 0, 0, m) : IN(2), shape, 2);
    }
    if (want_x) {
        int upd = wcol >= 0 ? og_rule_mul(b, dz, wcol) : dz;
        int64_t flat[3] = {0, cnt, c}, ishape[3] = {1, cnt, 1};
        upd = og_rule_reshape_c(b, upd, flat, 3); /* [B, F m, c] */
        int ind = og_gb_op2(b, "Expand",
                            og_rule_reshape_c(b, og_gb_const_i64(b, idx, (int)cnt), ishape, 3),
                            og_gb_op1(b, "Shape", upd));
        dx[0] = og_rule_scatter_elements(b, og_rule_zeros_like(b, IN(0)), ind, upd, 1, "add");
    }
    if (want_w) {
        /* x's frames [B, F, m, c] (Gather along 1 with the [F, m] indices) */
        int64_t fm[2] = {frames, m};
        int gi = og_rule_reshape_c(b, og_gb_const_i64(b, idx, (int)cnt), fm, 2);
        int xf = og_gb_op2(b, "Gather", IN(0), gi);
        og_gb_attr_int(b, og_gb_last(b), "axis", 1);
        int64_t axes[3] = {0, 1, 3};
        int dw = og_gb_reduce_sum(b, og_rule_mul(b, dz, xf), axes, 3, false); /* [m] */
        dx[2] = pad_end(b, dw, 1, 0, m, W);
    }
    og_free(og_gb_alloc(b), idx);
    return og_gb_status(b);
}

const og_grad_rule og_grad_signal[] = {{"DFT", "", g_dft}, {"STFT", "", g_stft}, {0}};
