/* tensor.c: gradients of the tensor ops of src/ops/tensor.c, which move, copy, mask or
 * convert elements without arithmetic.
 *   Reshape, Flatten, Squeeze, Unsqueeze: dx = dy reshaped to x's shape
 *   Transpose: dx = Transpose(dy) with the inverse permutation
 *   Identity: dx = dy;  Cast between float types: dx = Cast(dy) to x's type
 *   Concat:  dx_i = dy[off_i : off_i + d_i] along the axis
 *   Split:   dx = Concat(dy_0, dy_1, ...) along the axis (zeros for outputs without one)
 *   Slice:   dx = dy scattered into zeros of x's shape (flip for negative steps, zeros
 *            interleaved for steps > 1, then Pad)
 *   Pad:     constant: dx = dy cropped back (d value = sum of dy over the padding);
 *            edge/reflect/wrap: the padded borders are folded back onto the interior
 *   Tile:    dx = ReduceSum(Reshape(dy, [r0, d0, r1, d1, ...]), repeat axes)
 *   SpaceToDepth: dx = DepthToSpace(dy) (DCR), its inverse permutation;  DepthToSpace DCR:
 *            dx = SpaceToDepth(dy); CRD: the same with the channels [b², C'] -> [C', b²]
 *   CenterCropPad: dx = CenterCropPad(dy) back to x's sizes (a crop becomes a zero pad at
 *            the same offset, a pad a crop);  EyeLike: its output does not depend on x
 *   Expand:  dx = dy summed back to x's shape
 *   Trilu:   dx = Trilu(dy) (the same mask)
 * Where Slice bounds, Pad pads or Tile repeats are only known at run time (or a sliced or
 * padded dim is dynamic), the op is applied to an index grid of x and dy is scattered back
 * through the resulting index map (ScatterElements; add-reduction for copies, opset 16). */
#include <stdlib.h>
#include <string.h>

#include "grad/rule_util.h"

/* ---- helpers ------------------------------------------------------------------------- */

static int const1(og_gb *b, int64_t v) { return og_gb_const_i64(b, &v, 1); }

/* The value of a constant integer input (1-D or scalar) in v; count, or -1 when it is not
 * a constant or too long. */
static int known_ints(og_gb *b, int v, int64_t *out, int max)
{
    if (v < 0) return -1;
    const og_tensor *t = og_gb_value(b, v)->known;
    if (!t || t->rank > 1 || t->numel > max) return -1;
    for (int64_t i = 0; i < t->numel; i++) out[i] = og_tensor_get_i64(t, i);
    return (int)t->numel;
}

static int slice_axis(og_gb *b, int x, int64_t start, int64_t end, int64_t axis)
{
    return og_rule_slice(b, x, &axis, &start, &end, NULL, 1);
}

/* 1-D [dim] of forward value v along axis: a constant when static, else from Shape. */
static int dim1(og_gb *b, int v, int axis)
{
    const og_value *val = og_gb_value(b, v);
    int64_t d = val->rank > axis ? val->dims[axis] : -1;
    if (d >= 0) return const1(b, d);
    return slice_axis(b, og_gb_op1(b, "Shape", v), axis, axis + 1, 0);
}

/* Zero-pad x (rank r) by pb before and pe after each axis (no node when all are 0). */
static int pad_zeros(og_gb *b, int x, int r, const int64_t *pb, const int64_t *pe)
{
    int64_t pads[2 * OG_MAX_RANK];
    bool any = false;
    for (int d = 0; d < r; d++) {
        pads[d] = pb[d];
        pads[d + r] = pe[d];
        any = any || pb[d] || pe[d];
    }
    if (!any) return x;
    if (og_gb_opset(b) >= 11) return og_gb_op2(b, "Pad", x, og_gb_const_i64(b, pads, 2 * r));
    int y = og_gb_op1(b, "Pad", x);
    og_gb_attr_ints(b, og_gb_last(b), "pads", pads, 2 * r);
    return y;
}

static int pad_axis(og_gb *b, int x, int r, int axis, int64_t before, int64_t after)
{
    int64_t pb[OG_MAX_RANK] = {0}, pe[OG_MAX_RANK] = {0};
    pb[axis] = before;
    pe[axis] = after;
    return pad_zeros(b, x, r, pb, pe);
}

/* x reversed along axis, whose length is len. */
static int flip(og_gb *b, int x, int64_t axis, int64_t len)
{
    if (og_gb_opset(b) >= 10) {
        int in[5] = {x, const1(b, -1), const1(b, INT64_MIN), const1(b, axis), const1(b, -1)};
        return og_gb_op(b, "Slice", 5, in);
    }
    int64_t *idx = malloc((size_t)(len > 0 ? len : 1) * sizeof *idx);
    if (!idx) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < len; i++) idx[i] = len - 1 - i;
    int c = og_gb_const_i64(b, idx, (int)len);
    free(idx);
    int y = og_gb_op2(b, "Gather", x, c);
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    return y;
}

static int norm_axis(int64_t a, int rank)
{
    if (a < 0) a += rank;
    return a < 0 || a >= rank ? -1 : (int)a;
}

/* The index grid of forward value x: int64, x's shape, holding 0 .. size(x)-1 in order
 * (og_rule_iota: any opset).  *numel gets Size(x). */
static int index_grid(og_gb *b, int x, int *numel)
{
    *numel = og_gb_op1(b, "Size", x);
    return og_gb_op2(b, "Reshape", og_rule_iota(b, *numel), og_gb_op1(b, "Shape", x));
}

/* The adjoint of an index map: map (shaped like dy) holds, for each element of dy, the
 * flat index in x it was copied from, or size(x) for an element taken from nowhere
 * (padding; spare = true).  dx.flat[m] = sum of dy.flat[j] over j with map.flat[j] = m.
 * dup: an x element may be copied several times (ScatterElements add, opset >= 16). */
static int scatter_back(og_gb *b, const og_node *n, int x, int numel, int map, int dy, bool spare,
                        bool dup)
{
    if (dup && og_gb_opset(b) < 16)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "%s gradient with runtime parameters needs opset >= 16", n->op_type);
    int flat = const1(b, -1);
    int size = spare ? og_gb_op2(b, "Add", numel, og_gb_scalar(b, 1, OG_INT64)) : numel;
    int zeros =
        og_gb_op2(b, "Expand", og_gb_scalar_like(b, 0.0, x), og_gb_op2(b, "Reshape", size, flat));
    int s = og_rule_scatter_elements(b, zeros, og_gb_op2(b, "Reshape", map, flat),
                                     og_gb_op2(b, "Reshape", dy, flat), 0, dup ? "add" : NULL);
    int64_t axis0 = 0;
    if (spare)
        s = og_rule_slice_rt(b, s, const1(b, 0), og_gb_op2(b, "Reshape", numel, flat), &axis0, 1);
    return og_gb_op2(b, "Reshape", s, og_gb_op1(b, "Shape", x));
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze, Transpose --------------------------------- */

/* the gradient takes the input's shape back */
static og_status g_reshape_back(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (og_gb_wants(b, n, 0)) dx[0] = og_gb_reshape_like(b, dy[0], n->in[0]);
    return og_gb_status(b);
}

/* dx = Transpose(dy) with the inverse permutation */
static og_status g_transpose(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int rank = og_gb_value(b, n->in[0])->rank;
    if (rank < 0)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Transpose gradient needs the input's rank");
    int count = 0;
    const int64_t *perm = og_attr_ints(n, "perm", &count);
    int64_t inv[OG_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int64_t p = perm && count == rank ? perm[i] : rank - 1 - i;
        if (p < 0) p += rank;
        if (p < 0 || p >= rank) return og_gb_fail(b, n, OG_ERR_MODEL, "bad perm");
        inv[p] = i;
    }
    dx[0] = og_rule_transpose(b, dy[0], inv, rank);
    return og_gb_status(b);
}

/* ---- Identity, Cast ------------------------------------------------------------------ */

/* identity: dx = dy */
static og_status g_identity(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = dy[0];
    return og_gb_status(b);
}

/* cast between float types: dx = cast(dy, x's type); to or from other types: none.
 * CastLike is the same Cast (its input 1 only names the type: no gradient). */
static og_status g_cast(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    og_dtype in = og_gb_value(b, IN(0))->dtype, out = og_gb_value(b, OUT(0))->dtype;
    if (!og_dtype_is_float(in) || !og_dtype_is_float(out)) return og_gb_status(b);
    dx[0] = in == out ? dy[0] : og_rule_cast(b, dy[0], in);
    return og_gb_status(b);
}

/* ---- Concat / Split ------------------------------------------------------------------ */

/* dx_i = dy[off_i : off_i + d_i] along the axis; offsets are constants while the dims
 * before are static, runtime sums of Shape entries after (og_rule_slice_rt). */
static og_status g_concat(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int rank = og_gb_value(b, n->out[0])->rank;
    if (rank < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Concat gradient needs the rank");
    int axis = norm_axis(og_attr_int(n, "axis", 0), rank);
    if (axis < 0) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
    int64_t off = 0;
    int off_rt = -1; /* runtime offset once a dim is not static */
    for (int i = 0; i < n->n_in; i++) {
        int x = n->in[i];
        if (x < 0) continue;
        const og_value *xv = og_gb_value(b, x);
        int64_t d = xv->rank == rank ? xv->dims[axis] : -1;
        if (off_rt < 0 && d >= 0) {
            if (og_gb_wants(b, n, i)) dx[i] = slice_axis(b, dy[0], off, off + d, axis);
            off += d;
            continue;
        }
        if (off_rt < 0) off_rt = const1(b, off);
        int end = og_gb_op2(b, "Add", off_rt, dim1(b, x, axis));
        int64_t ax = axis;
        if (og_gb_wants(b, n, i)) dx[i] = og_rule_slice_rt(b, dy[0], off_rt, end, &ax, 1);
        off_rt = end;
    }
    return og_gb_status(b);
}

/* dx = Concat(dy_j) along the axis; zeros of y_j's shape where y_j has no gradient. */
static og_status g_split(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!og_gb_wants(b, n, 0)) return og_gb_status(b);
    int rank = og_gb_value(b, n->in[0])->rank;
    if (rank < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Split gradient needs the rank");
    int axis = norm_axis(og_attr_int(n, "axis", 0), rank);
    if (axis < 0) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
    int *parts = og_malloc(og_gb_alloc(b), (size_t)n->n_out * sizeof *parts); /* any count */
    if (!parts) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    for (int j = 0; j < n->n_out && !og_gb_status(b); j++) {
        if (n->out[j] < 0) og_gb_fail(b, n, OG_ERR_MODEL, "Split output %d is omitted", j);
        parts[j] = dy[j] >= 0 ? dy[j] : og_rule_zeros_like(b, n->out[j]);
    }
    if (!og_gb_status(b)) {
        dx[0] = og_gb_op(b, "Concat", n->n_out, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    }
    og_free(og_gb_alloc(b), parts);
    return og_gb_status(b);
}

/* ---- Slice --------------------------------------------------------------------------- */

/* Are the Slice inputs constants and the sliced dims static (opset >= 10 form)? */
static bool slice_static_ok(og_gb *b, const og_node *n, int r, const og_value *xv)
{
    int64_t v[OG_MAX_RANK], ax[OG_MAX_RANK];
    int k = known_ints(b, n->in[1], v, OG_MAX_RANK);
    if (k < 0 || known_ints(b, n->in[2], v, OG_MAX_RANK) != k) return false;
    if (n->n_in > 4 && n->in[4] >= 0 && known_ints(b, n->in[4], v, OG_MAX_RANK) != k) return false;
    if (n->n_in > 3 && n->in[3] >= 0) {
        if (known_ints(b, n->in[3], ax, OG_MAX_RANK) != k) return false;
    } else {
        for (int i = 0; i < k; i++) ax[i] = i;
    }
    for (int i = 0; i < k; i++) {
        int a = norm_axis(ax[i], r);
        if (a >= 0 && xv->dims[a] < 0) return false;
    }
    return true;
}

/* Put k-1 zeros after each of the c entries of x along axis (x of rank r) and keep the
 * first (c-1)k+1: the layout of a step-k slice. */
static int interleave(og_gb *b, int x, int r, int axis, int64_t c, int64_t k)
{
    int64_t ax1 = axis + 1;
    int u = og_rule_unsqueeze(b, x, &ax1, 1);
    u = pad_axis(b, u, r + 1, axis + 1, 0, k - 1);
    int parts[3], np = 0;
    int sh = og_gb_op1(b, "Shape", x);
    if (axis > 0) parts[np++] = slice_axis(b, sh, 0, axis, 0);
    parts[np++] = const1(b, c * k);
    if (axis + 1 < r) parts[np++] = slice_axis(b, sh, axis + 1, INT64_MAX, 0);
    int shape = parts[0];
    if (np > 1) {
        shape = og_gb_op(b, "Concat", np, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    }
    int y = og_gb_op2(b, "Reshape", u, shape);
    return slice_axis(b, y, 0, (c - 1) * k + 1, axis);
}

/* Zeros shaped as t, whatever t holds (NaN and infinities too): Cast(t < t) */
static int zeros_as(og_gb *b, int t, og_dtype dt)
{
    return og_rule_cast(b, og_gb_op2(b, "Less", t, t), dt);
}

/* Slice-1's dx with sliced dims known only at run time (no Slice with computed bounds, no
 * Pad with computed pads, no ConstantOfShape before opset 9-10): axis by axis from the last,
 * g = Concat(0·P, g, 0·Q) along the axis, P and Q the positions of X_j before and after the
 * slice, X_j being X sliced on the axes before it (so X_j's shape is g's with this axis
 * restored).  Slice itself clamps s and e, so P = X_j[:s] and Q = X_j[e:] for bounds of one
 * sign (those with e <= s are empty whatever the size: zeros).  With mixed signs the slice
 * may turn out empty (clamped e' < s'), where those two would overlap: for s < 0 <= e, P =
 * X_j[:s][:e] (min(s', e') positions), for e < 0 <= s, Q = X_j[s:][e:] (min(−e, D − s')),
 * which are P and Q when the slice is not empty and add up to D when it is. */
static int slice1_back_dyn(og_gb *b, int x, int dy, int r, int k, const int64_t *st,
                           const int64_t *en, const int64_t *ax)
{
    og_dtype dt = og_gb_value(b, x)->dtype;
    for (int i = 0; i < k; i++) /* bounds of one sign with e <= s: always empty */
        if ((st[i] >= 0) == (en[i] >= 0) && en[i] <= st[i]) return zeros_as(b, x, dt);
    int xs[OG_MAX_RANK + 1];
    xs[0] = x;
    for (int i = 0; i < k; i++) xs[i + 1] = slice_axis(b, xs[i], st[i], en[i], norm_axis(ax[i], r));
    int g = dy;
    for (int i = k - 1; i >= 0; i--) {
        int64_t a = norm_axis(ax[i], r);
        int pre = slice_axis(b, xs[i], 0, st[i], a), post;
        if (st[i] < 0 && en[i] >= 0) pre = slice_axis(b, pre, 0, en[i], a);
        if (st[i] >= 0 && en[i] < 0)
            post = slice_axis(b, slice_axis(b, xs[i], st[i], INT64_MAX, a), en[i], INT64_MAX, a);
        else
            post = slice_axis(b, xs[i], en[i], INT64_MAX, a);
        int parts[3] = {zeros_as(b, pre, dt), g, zeros_as(b, post, dt)};
        g = og_gb_op(b, "Concat", 3, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", a);
    }
    return g;
}

/* dx: dy put back where the slice took it from.  For each sliced axis of static size D
 * with clamped start s, step k and count c, the taken indices run from lo = min(s,
 * s+(c-1)k) with stride |k|; dy is flipped for k < 0, spread for |k| > 1, and padded by
 * lo before and D - lo - ((c-1)|k|+1) after. */
static og_status g_slice(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!og_gb_wants(b, n, 0)) return og_gb_status(b);
    int x = n->in[0];
    const og_value xcopy = *og_gb_value(b, x), *xv = &xcopy; /* values may move */
    int r = xv->rank;
    if (r < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Slice gradient needs the rank");
    int64_t st[OG_MAX_RANK], en[OG_MAX_RANK], ax[OG_MAX_RANK], sp[OG_MAX_RANK];
    int k;
    if (n->since_version >= 10 && !slice_static_ok(b, n, r, xv)) {
        /* runtime bounds or dims: slice the index grid the same way and scatter back */
        int numel, in[5];
        for (int i = 0; i < 5; i++) in[i] = i < n->n_in ? n->in[i] : -1;
        in[0] = index_grid(b, x, &numel);
        int map = og_gb_op(b, "Slice", 5, in);
        dx[0] = scatter_back(b, n, x, numel, map, dy[0], false, false);
        return og_gb_status(b);
    }
    if (n->since_version < 10) {
        int ks = 0, ke = 0, ka = 0;
        const int64_t *s = og_attr_ints(n, "starts", &ks), *e = og_attr_ints(n, "ends", &ke);
        const int64_t *a = og_attr_ints(n, "axes", &ka);
        if (!s || !e || ks != ke || ks > r || (a && ka != ks))
            return og_gb_fail(b, n, OG_ERR_MODEL, "bad starts/ends/axes");
        k = ks;
        for (int i = 0; i < k; i++) {
            st[i] = s[i];
            en[i] = e[i];
            ax[i] = a ? a[i] : i;
            sp[i] = 1;
        }
    } else {
        k = known_ints(b, n->in[1], st, OG_MAX_RANK);
        int ke = known_ints(b, n->in[2], en, OG_MAX_RANK);
        if (k < 0 || ke != k)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Slice gradient needs constant starts and ends");
        if (n->n_in > 3 && n->in[3] >= 0) {
            if (known_ints(b, n->in[3], ax, OG_MAX_RANK) != k)
                return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Slice gradient needs constant axes");
        } else {
            for (int i = 0; i < k; i++) ax[i] = i;
        }
        if (n->n_in > 4 && n->in[4] >= 0) {
            if (known_ints(b, n->in[4], sp, OG_MAX_RANK) != k)
                return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Slice gradient needs constant steps");
        } else {
            for (int i = 0; i < k; i++) sp[i] = 1;
        }
    }
    if (n->since_version < 10) {
        bool dyn = false;
        for (int i = 0; i < k; i++) {
            int a = norm_axis(ax[i], r);
            if (a < 0) return og_gb_fail(b, n, OG_ERR_MODEL, "bad axes");
            dyn = dyn || !og_dim_known(xv->dims[a]);
        }
        if (dyn) {
            dx[0] = slice1_back_dyn(b, x, dy[0], r, k, st, en, ax);
            return og_gb_status(b);
        }
    }
    int64_t pb[OG_MAX_RANK] = {0}, pe[OG_MAX_RANK] = {0};
    int t = dy[0];
    for (int i = 0; i < k; i++) {
        int a = norm_axis(ax[i], r);
        if (a < 0 || sp[i] == 0) return og_gb_fail(b, n, OG_ERR_MODEL, "bad axes or steps");
        int64_t D = xv->dims[a], s = st[i], e = en[i], step = sp[i], c;
        if (D < 0)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Slice gradient needs the sliced dim %d to be static", a);
        if (s < 0) s += D;
        if (e < 0) e += D; /* no overflow: D >= 0 */
        if (step > 0) {
            s = s < 0 ? 0 : s > D ? D : s;
            e = e < 0 ? 0 : e > D ? D : e;
            c = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = s < 0 ? 0 : s > D - 1 ? D - 1 : s;
            e = e < -1 ? -1 : e > D - 1 ? D - 1 : e;
            c = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        if (c == 0) {
            dx[0] = og_rule_zeros_like(b, x);
            return og_gb_status(b);
        }
        int64_t lo = step > 0 ? s : s + (c - 1) * step, as = step > 0 ? step : -step;
        if (step < 0 && c > 1) t = flip(b, t, a, c);
        if (as > 1 && c > 1) t = interleave(b, t, r, a, c, as);
        int64_t len = (c - 1) * as + 1;
        pb[a] = lo;
        pe[a] = D - lo - len;
    }
    dx[0] = pad_zeros(b, t, r, pb, pe);
    return og_gb_status(b);
}

/* ---- Pad ----------------------------------------------------------------------------- */

/* Fold the borders of t (rank r) along axis back onto the interior of size D (edge,
 * reflect or wrap padding of bb before and ee after). */
static int fold_axis(og_gb *b, const og_node *n, int t, int r, int a, int64_t D, int64_t bb,
                     int64_t ee, const char *mode)
{
    bool edge = !strcmp(mode, "edge"), reflect = !strcmp(mode, "reflect");
    if ((reflect && (bb > D - 1 || ee > D - 1)) || (!reflect && !edge && (bb > D || ee > D)))
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "%s Pad gradient: pads %lld, %lld too large for axis %d of size %lld",
                          mode, (long long)bb, (long long)ee, a, (long long)D);
    int64_t axis = a;
    int c = slice_axis(b, t, bb, bb + D, a);
    if (bb > 0) {
        int l = slice_axis(b, t, 0, bb, a);
        if (edge)
            l = pad_axis(b, og_gb_reduce_sum(b, l, &axis, 1, true), r, a, 0, D - 1);
        else if (reflect) /* out[i] = x[bb - i] */
            l = pad_axis(b, flip(b, l, a, bb), r, a, 1, D - 1 - bb);
        else /* wrap: out[i] = x[D - bb + i] */
            l = pad_axis(b, l, r, a, D - bb, 0);
        c = og_gb_op2(b, "Add", c, l);
    }
    if (ee > 0) {
        int rt = slice_axis(b, t, bb + D, bb + D + ee, a);
        if (edge)
            rt = pad_axis(b, og_gb_reduce_sum(b, rt, &axis, 1, true), r, a, D - 1, 0);
        else if (reflect) /* out[bb + D + j] = x[D - 2 - j] */
            rt = pad_axis(b, flip(b, rt, a, ee), r, a, D - 1 - ee, 1);
        else /* wrap: out[bb + D + j] = x[j] */
            rt = pad_axis(b, rt, r, a, 0, D - ee);
        c = og_gb_op2(b, "Add", c, rt);
    }
    return c;
}

/* d constant_value = sum(dy) - sum(dy over the kept interior, inner) */
static int pad_value_grad(og_gb *b, const og_node *n, int dy, int inner, int r)
{
    int64_t all[OG_MAX_RANK];
    for (int d = 0; d < r; d++) all[d] = d;
    int g = og_gb_op2(b, "Sub", og_gb_reduce_sum(b, dy, all, r, false),
                      og_gb_reduce_sum(b, inner, all, r, false));
    return og_gb_reshape_like(b, g, n->in[2]);
}

/* Runtime pads (or a fold the static path cannot do): pad the index grid the same way,
 * with size(x) marking the constant padding, and scatter dy back. */
static og_status pad_runtime(og_gb *b, const og_node *n, const int *dy, int *dx, int r,
                             bool constant)
{
    if (n->since_version < 11 || og_gb_opset(b) < (constant ? 11 : 16))
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "Pad gradient with these pads needs opset >= %d", constant ? 11 : 16);
    int numel, in[4];
    for (int i = 0; i < 4; i++) in[i] = i < n->n_in ? n->in[i] : -1;
    in[0] = index_grid(b, n->in[0], &numel);
    in[2] = constant ? numel : -1;
    int map = og_gb_op(b, "Pad", in[3] >= 0 ? 4 : 3, in);
    og_gb_attr_string(b, og_gb_last(b), "mode", og_attr_string(n, "mode", "constant"));
    int g = scatter_back(b, n, n->in[0], numel, map, dy[0], constant, !constant);
    if (og_gb_wants(b, n, 0)) dx[0] = g;
    if (constant && og_gb_wants(b, n, 2)) dx[2] = pad_value_grad(b, n, dy[0], g, r);
    return og_gb_status(b);
}

static og_status g_pad(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = n->in[0];
    const og_value xcopy = *og_gb_value(b, x), *xv = &xcopy; /* values may move */
    int r = xv->rank;
    if (r < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Pad gradient needs the rank");
    const char *mode = og_attr_string(n, "mode", "constant");
    bool constant = !strcmp(mode, "constant");
    if (!constant && strcmp(mode, "edge") && strcmp(mode, "reflect") && strcmp(mode, "wrap"))
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Pad gradient: unknown mode '%s'", mode);
    int64_t pads[2 * OG_MAX_RANK], axes[OG_MAX_RANK];
    int np, na = r;
    if (n->since_version < 11) {
        const int64_t *p = og_attr_ints(n, "pads", &np);
        if (!p || np > 2 * OG_MAX_RANK) return og_gb_fail(b, n, OG_ERR_MODEL, "bad pads");
        memcpy(pads, p, (size_t)np * sizeof *p);
    } else {
        np = known_ints(b, n->in[1], pads, 2 * OG_MAX_RANK);
        if (np < 0) return pad_runtime(b, n, dy, dx, r, constant);
    }
    if (n->since_version >= 18 && n->n_in > 3 && n->in[3] >= 0) {
        na = known_ints(b, n->in[3], axes, OG_MAX_RANK);
        if (na < 0) return pad_runtime(b, n, dy, dx, r, constant);
    } else {
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np != 2 * na) return og_gb_fail(b, n, OG_ERR_MODEL, "pads do not match the axes");
    int64_t pb[OG_MAX_RANK] = {0}, pe[OG_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int a = norm_axis(axes[i], r);
        if (a < 0) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
        pb[a] = pads[i];
        pe[a] = pads[i + na];
    }
    if (constant) {
        /* crop the positive pads, zero-pad back the negative ones (crops) */
        int64_t s[OG_MAX_RANK], e[OG_MAX_RANK], ax[OG_MAX_RANK], nb[OG_MAX_RANK], ne[OG_MAX_RANK];
        int k = 0;
        for (int d = 0; d < r; d++) {
            nb[d] = pb[d] < 0 ? -pb[d] : 0;
            ne[d] = pe[d] < 0 ? -pe[d] : 0;
            if (pb[d] <= 0 && pe[d] <= 0) continue;
            s[k] = pb[d] > 0 ? pb[d] : 0;
            e[k] = pe[d] > 0 ? -pe[d] : INT64_MAX;
            ax[k++] = d;
        }
        int inner = k ? og_rule_slice(b, dy[0], ax, s, e, NULL, k) : dy[0];
        if (og_gb_wants(b, n, 0)) dx[0] = pad_zeros(b, inner, r, nb, ne);
        if (n->since_version >= 11 && og_gb_wants(b, n, 2))
            dx[2] = pad_value_grad(b, n, dy[0], inner, r);
        return og_gb_status(b);
    }
    if (!og_gb_wants(b, n, 0)) return og_gb_status(b);
    bool reflect = !strcmp(mode, "reflect"), edge = !strcmp(mode, "edge");
    for (int d = 0; d < r; d++) {
        int64_t D = xv->dims[d], lim = reflect ? D - 1 : D;
        if (!pb[d] && !pe[d]) continue;
        if (pb[d] < 0 || pe[d] < 0 || D < 0 || (!edge && (pb[d] > lim || pe[d] > lim)))
            return pad_runtime(b, n, dy, dx, r, false);
    }
    int t = dy[0];
    for (int d = 0; d < r; d++)
        if (pb[d] || pe[d]) t = fold_axis(b, n, t, r, d, xv->dims[d], pb[d], pe[d], mode);
    dx[0] = t;
    return og_gb_status(b);
}

/* ---- Tile, Expand, Trilu ------------------------------------------------------------- */

/* Runtime repeats (or too many axes to split).  Up to rank OG_MAX_RANK / 2: dy reshaped to
 * [r_0, d_0, r_1, d_1, ...] (the shape interleaved from the repeats and Shape(x) at run
 * time) and summed over the repeat axes, at any opset; above, tile the index grid and
 * scatter-add dy (opset 16). */
static og_status tile_runtime(og_gb *b, const og_node *n, const int *dy, int *dx, int r)
{
    if (2 * r <= OG_MAX_RANK) {
        int parts[OG_MAX_RANK];
        int64_t axes[OG_MAX_RANK / 2];
        for (int d = 0; d < r; d++) {
            parts[2 * d] = slice_axis(b, n->in[1], d, d + 1, 0);
            parts[2 * d + 1] = dim1(b, n->in[0], d);
            axes[d] = 2 * d;
        }
        int sh = og_gb_op(b, "Concat", 2 * r, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        dx[0] = og_gb_reduce_sum(b, og_gb_op2(b, "Reshape", dy[0], sh), axes, r, false);
        return og_gb_status(b);
    }
    int numel, map = og_gb_op2(b, "Tile", index_grid(b, n->in[0], &numel), n->in[1]);
    dx[0] = scatter_back(b, n, n->in[0], numel, map, dy[0], false, true);
    return og_gb_status(b);
}

/* dy has dims r_i * d_i; reshaped to [r_i, d_i] per axis (d_i alone where r_i = 1) the
 * repeats are separate axes, summed away. */
static og_status g_tile(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!og_gb_wants(b, n, 0)) return og_gb_status(b);
    int x = n->in[0];
    const og_value xcopy = *og_gb_value(b, x), *xv = &xcopy; /* values may move */
    int r = xv->rank;
    int64_t rep[OG_MAX_RANK];
    if (r < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Tile gradient needs the rank");
    if (n->since_version < 6 || n->n_in < 2)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Tile gradient needs opset >= 6");
    if (known_ints(b, n->in[1], rep, OG_MAX_RANK) != r) return tile_runtime(b, n, dy, dx, r);
    int64_t shape[OG_MAX_RANK], sum_axes[OG_MAX_RANK];
    int parts[OG_MAX_RANK], k = 0, ns = 0;
    bool stat = true;
    for (int d = 0; d < r; d++) {
        if (rep[d] != 1) {
            if (k == OG_MAX_RANK) return tile_runtime(b, n, dy, dx, r);
            sum_axes[ns++] = k;
            shape[k++] = rep[d];
        }
        if (k == OG_MAX_RANK) return tile_runtime(b, n, dy, dx, r);
        shape[k++] = xv->dims[d];
        stat = stat && xv->dims[d] >= 0;
    }
    if (ns == 0) {
        dx[0] = dy[0];
        return og_gb_status(b);
    }
    int sh;
    if (stat) {
        sh = og_gb_const_i64(b, shape, k);
    } else {
        int j = 0;
        for (int d = 0; d < r; d++) {
            if (rep[d] != 1) parts[j++] = const1(b, rep[d]);
            parts[j++] = dim1(b, x, d);
        }
        sh = og_gb_op(b, "Concat", k, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    }
    dx[0] = og_gb_reduce_sum(b, og_gb_op2(b, "Reshape", dy[0], sh), sum_axes, ns, false);
    return og_gb_status(b);
}

static og_status g_expand(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (og_gb_wants(b, n, 0)) dx[0] = og_gb_sum_to(b, dy[0], n->out[0], n->in[0]);
    return og_gb_status(b);
}

static og_status g_trilu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!og_gb_wants(b, n, 0)) return og_gb_status(b);
    int in[2] = {dy[0], n->n_in > 1 ? n->in[1] : -1};
    dx[0] = og_gb_op(b, "Trilu", 2, in);
    og_gb_attr_int(b, og_gb_last(b), "upper", og_attr_int(n, "upper", 1));
    return og_gb_status(b);
}

/* ---- DepthToSpace, SpaceToDepth, CenterCropPad, EyeLike ---------------------------------- */

static og_status g_space_to_depth(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int r = og_gb_op1(b, "DepthToSpace", dy[0]);
    og_gb_attr_int(b, og_gb_last(b), "blocksize", og_attr_int(n, "blocksize", 1));
    dx[0] = r;
    return og_gb_status(b);
}

static og_status g_depth_to_space(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int64_t bs = og_attr_int(n, "blocksize", 1);
    int r = og_gb_op1(b, "SpaceToDepth", dy[0]);
    og_gb_attr_int(b, og_gb_last(b), "blocksize", bs);
    if (n->since_version >= 11 && strcmp(og_attr_string(n, "mode", "DCR"), "CRD") == 0) {
        /* SpaceToDepth gives channel (i·b + j)·C' + c'; CRD reads c'·b² + i·b + j */
        const og_value *x = og_gb_value(b, IN(0));
        if (x->rank != 4)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "CRD DepthToSpace takes 4-D inputs");
        if (og_dim_known(x->dims[1])) {
            int64_t shp[4] = {0, bs * bs, x->dims[1] / (bs * bs), -1}, perm[4] = {0, 2, 1, 3};
            r = og_rule_transpose(b, og_rule_reshape_c(b, r, shp, 4), perm, 4);
        } else { /* the channel count at run time: [N, b², C', H', W'] with H', W' from r */
            int64_t head[3] = {0, bs * bs, -1}, perm[5] = {0, 2, 1, 3, 4};
            int parts[2] = {og_gb_const_i64(b, head, 3),
                            slice_axis(b, og_gb_op1(b, "Shape", r), 2, 4, 0)};
            int shp = og_gb_op(b, "Concat", 2, parts);
            og_gb_attr_int(b, og_gb_last(b), "axis", 0);
            r = og_rule_transpose(b, og_gb_op2(b, "Reshape", r, shp), perm, 5);
        }
        r = og_gb_reshape_like(b, r, IN(0));
    }
    dx[0] = r;
    return og_gb_status(b);
}

static og_status g_center_crop_pad(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int rank = og_rule_rank_of(b, n, IN(0), "input 0");
    if (rank < 0) return og_gb_status(b);
    int shape = og_gb_op1(b, "Shape", IN(0));
    int na = 0;
    const int64_t *axes = og_attr_ints(n, "axes", &na);
    if (axes) { /* the sizes of x at the cropped or padded axes */
        int64_t ax[OG_MAX_RANK];
        for (int i = 0; i < na && i < OG_MAX_RANK; i++)
            if ((ax[i] = og_rule_axis(b, n, axes[i], rank)) < 0) return og_gb_status(b);
        shape = og_gb_op2(b, "Gather", shape, og_gb_const_i64(b, ax, na));
    }
    dx[0] = og_gb_op2(b, "CenterCropPad", dy[0], shape);
    if (axes) og_gb_attr_ints(b, og_gb_last(b), "axes", axes, na);
    return og_gb_status(b);
}

/* EyeLike's output depends on x's shape only: no gradient */
static og_status g_no_grad(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    (void)n;
    (void)dy;
    (void)dx;
    return og_gb_status(b);
}

const og_grad_rule og_grad_tensor[] = {{"Reshape", "", g_reshape_back},
                                       {"Flatten", "", g_reshape_back},
                                       {"Squeeze", "", g_reshape_back},
                                       {"Unsqueeze", "", g_reshape_back},
                                       {"Transpose", "", g_transpose},
                                       {"Identity", "", g_identity},
                                       {"Cast", "", g_cast},
                                       {"CastLike", "", g_cast},
                                       {"Concat", "", g_concat},
                                       {"Split", "", g_split},
                                       {"Slice", "", g_slice},
                                       {"Pad", "", g_pad},
                                       {"Tile", "", g_tile},
                                       {"Expand", "", g_expand},
                                       {"Trilu", "", g_trilu},
                                       {"DepthToSpace", "", g_depth_to_space},
                                       {"SpaceToDepth", "", g_space_to_depth},
                                       {"CenterCropPad", "", g_center_crop_pad},
                                       {"EyeLike", "", g_no_grad},
                                       {0}};
