/* index.c: gradients of the indexing ops of src/ops/index.c.
 *
 *   Gather(x, i, axis):      dx = scatter-add of dy into zeros of x's shape along axis
 *       opset >= 16: ScatterElements(zeros, expand(i), dy, reduction=add)
 *       opset 9..15: dx = dy ·_axis OneHot(i, dim(axis)), a MatMul that sums repeats
 *       opset 1..8:  the same with Equal(i, iota(dim)) for OneHot (a Loop's iota)
 *   GatherElements(x, i):    dx = ScatterElements(zeros, i, dy, reduction=add) (>= 16),
 *       opset 11..15: sum over the indexed axis of OneHot(i) * dy, padded to x's shape
 *   GatherND(x, i):          dx = ScatterND(zeros, i, dy, reduction=add) (>= 16, batch_dims 0);
 *       otherwise a OneHot of the linear index of each tuple, through a batched MatMul
 *   ScatterElements(x, i, u): none: dx = ScatterElements(dy, i, 0), du = GatherElements(dy, i)
 *                             add:  dx = dy,                         du = GatherElements(dy, i)
 *   ScatterND:               the same with ScatterND / GatherND
 *   Scatter (opset 9, 10):   as ScatterElements none, du through OneHot (no GatherElements)
 *   OneHot(i, depth, v):     dv = [sum(dy where off), sum(dy where on)]
 *   Compress(x, c):          dx = dy put back at the selected positions, zeros elsewhere:
 *       opset >= 11: ScatterND(zeros, NonZero(c)ᵀ, dy) with the axis moved first (or on
 *       the flattened x); opset 9, 10: dy ·_axis OneHot(NonZero(c), dim(axis))
 *   ReverseSequence(x, l):   dx = ReverseSequence(dy, l) (a permutation that is its own
 *       inverse)
 * With repeated indices and reduction none, which write wins is unspecified: du gives every
 * duplicate dy at its index (as onnxruntime and PyTorch's scatter do).
 * Negative indices: the forward ops wrap them; the scatters used here do the same (OneHot
 * before opset 11 gets them wrapped explicitly). */
#include <string.h>

#include "grad/rule_util.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* The shape of forward value v (rank r) with dim `axis` replaced by `val`, as a 1-D int64
 * value: a constant when v's dims are static, else gathered from Shape(v). */
static int shape_with(og_gb *b, int v, int r, int axis, int64_t val)
{
    const og_value *x = og_gb_value(b, v);
    int64_t dims[OG_MAX_RANK];
    bool known = true;
    for (int d = 0; d < r; d++) {
        dims[d] = d == axis ? val : x->dims[d];
        if (dims[d] < 0 && d != axis) known = false;
    }
    if (known) return og_gb_const_i64(b, dims, r);
    int s = og_gb_op1(b, "Shape", v), parts[3], np = 0;
    int64_t idx[OG_MAX_RANK];
    if (axis > 0) {
        for (int d = 0; d < axis; d++) idx[d] = d;
        parts[np++] = og_gb_op2(b, "Gather", s, og_gb_const_i64(b, idx, axis));
    }
    parts[np++] = og_gb_const_i64(b, &val, 1);
    if (axis + 1 < r) {
        for (int d = axis + 1; d < r; d++) idx[d - axis - 1] = d;
        parts[np++] = og_gb_op2(b, "Gather", s, og_gb_const_i64(b, idx, r - axis - 1));
    }
    if (np == 1) return parts[0];
    int c = og_gb_op(b, "Concat", np, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    return c;
}

/* dim `axis` of forward value v as a 1-element int64 value */
static int dim_of(og_gb *b, int v, int axis)
{
    int64_t d = og_gb_value(b, v)->dims[axis];
    if (d >= 0) return og_gb_const_i64(b, &d, 1);
    int64_t a = axis;
    return og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", v), og_gb_const_i64(b, &a, 1));
}

/* OneHot(idx, depth) with off 0 and on 1 in dtype dt along `axis`; before opset 11 OneHot
 * does not wrap negative indices, so they are wrapped here (idx + depth where idx < 0). */
static int one_hot(og_gb *b, int idx, og_dtype idx_dt, int depth, og_dtype dt, int64_t axis)
{
    if (idx_dt != OG_INT64) { /* onnxruntime's OneHot has few type combinations: int64 */
        idx = og_rule_cast(b, idx, OG_INT64);
        idx_dt = OG_INT64;
    }
    if (og_gb_opset(b) < 11) {
        int neg = og_rule_cast(b, og_gb_op2(b, "Less", idx, og_gb_scalar(b, 0.0, idx_dt)), idx_dt);
        idx = og_gb_op2(b, "Add", idx, og_gb_op2(b, "Mul", neg, og_rule_cast(b, depth, idx_dt)));
    }
    return og_rule_one_hot(b, idx, depth, dt, axis);
}

/* ---- Gather -------------------------------------------------------------------------- */

static og_status g_gather(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    int data = IN(0), ind = IN(1);
    int r = og_rule_rank_of(b, n, data, "the data");
    if (r < 0) return og_gb_status(b);
    int axis = og_rule_axis(b, n, og_attr_int(n, "axis", 0), r);
    if (axis < 0) return og_gb_status(b);
    og_dtype dt = og_gb_value(b, data)->dtype, it = og_gb_value(b, ind)->dtype;
    /* dy as data's shape with all the indices flattened at axis */
    int dyr = og_gb_op2(b, "Reshape", dy[0], shape_with(b, data, r, axis, -1));
    int64_t m1 = -1;
    if (og_gb_opset(b) >= 16) {
        int64_t shp[OG_MAX_RANK];
        for (int d = 0; d < r; d++) shp[d] = d == axis ? -1 : 1;
        int idx = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, shp, r));
        idx = og_gb_op2(b, "Expand", idx, og_gb_op1(b, "Shape", dyr));
        dx[0] = og_rule_scatter_elements(b, og_rule_zeros_like(b, data), idx, dyr, axis, "add");
    } else if (og_gb_opset(b) >= 9) {
        int flat = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, &m1, 1));
        int oh = one_hot(b, flat, it, dim_of(b, data, axis), dt, -1); /* [N, dim] */
        dx[0] = og_rule_matmul_axis(b, dyr, oh, r, axis);
    } else {
        /* no OneHot: compare with range(dim) (and range(dim) less dim, for negative
         * indices), a run-time iota */
        int dim = og_rule_dim(b, data, axis);
        int64_t one = 1;
        int lo = og_rule_iota_dim(b, data, axis), hi = og_rule_sub(b, lo, dim);
        int flat = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, &m1, 1));
        if (it != OG_INT64) flat = og_rule_cast(b, flat, OG_INT64);
        int u = og_rule_unsqueeze(b, flat, &one, 1); /* [N, 1] */
        int eq = og_gb_op2(b, "Or", og_gb_op2(b, "Equal", u, lo), og_gb_op2(b, "Equal", u, hi));
        dx[0] = og_rule_matmul_axis(b, dyr, og_rule_cast(b, eq, dt), r, axis);
    }
    return og_gb_status(b);
}

/* ---- GatherElements ------------------------------------------------------------------ */

static og_status g_gather_elements(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    int data = IN(0), ind = IN(1);
    int r = og_rule_rank_of(b, n, data, "the data");
    if (r < 0) return og_gb_status(b);
    int axis = og_rule_axis(b, n, og_attr_int(n, "axis", 0), r);
    if (axis < 0) return og_gb_status(b);
    if (og_gb_opset(b) >= 16) {
        dx[0] = og_rule_scatter_elements(b, og_rule_zeros_like(b, data), ind, dy[0], axis, "add");
        return og_gb_status(b);
    }
    /* indices may be smaller than data off the axis (then padded at the end below) */
    const og_value *xv = og_gb_value(b, data), *iv = og_gb_value(b, ind);
    bool same = iv->rank == r;
    for (int d = 0; same && d < r; d++)
        same = d == axis || (xv->dims[d] >= 0 && xv->dims[d] == iv->dims[d]);
    /* sum over the indexed axis of OneHot(i)[..., k] * dy, k moved to the axis */
    og_dtype dt = og_gb_value(b, data)->dtype, it = og_gb_value(b, ind)->dtype;
    int64_t last = r, ax = axis;
    int oh = one_hot(b, ind, it, dim_of(b, data, axis), dt, -1);
    int p = og_gb_op2(b, "Mul", oh, og_rule_unsqueeze(b, dy[0], &last, 1));
    int s = og_gb_reduce_sum(b, p, &ax, 1, false); /* indices' shape less axis, then dim */
    int64_t perm[OG_MAX_RANK];
    for (int d = 0, k = 0; d < r; d++) perm[d] = d == axis ? r - 1 : k++;
    int t = r > 1 ? og_rule_transpose(b, s, perm, r) : s;
    if (!same) {
        int64_t z[OG_MAX_RANK] = {0};
        int parts[2] = {og_gb_const_i64(b, z, r),
                        og_gb_op2(b, "Sub", og_gb_op1(b, "Shape", data), og_gb_op1(b, "Shape", t))};
        int pads = og_gb_op(b, "Concat", 2, parts);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        t = og_gb_op2(b, "Pad", t, pads);
    }
    dx[0] = t;
    return og_gb_status(b);
}

/* ---- GatherND ------------------------------------------------------------------------ */

/* The product of entries [from, to) of the 1-D int64 value sh, as a [1] value (Mul of
 * Gathers: int64 ReduceProd is not in every runtime). */
static int prod_entries(og_gb *b, int sh, int64_t from, int64_t to)
{
    int64_t one = 1;
    int p = -1;
    for (int64_t j = from; j < to; j++) {
        int e = og_gb_op2(b, "Gather", sh, og_gb_const_i64(b, &j, 1));
        p = p < 0 ? e : og_gb_op2(b, "Mul", p, e);
    }
    return p < 0 ? og_gb_const_i64(b, &one, 1) : p;
}

/* 1-D int64 Concat of n parts */
static int concat_i64(og_gb *b, int n, const int *parts)
{
    int c = og_gb_op(b, "Concat", n, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    return c;
}

/* gather_nd_onehot with data's dims known at run time only: B, P, R, the tuple's dims and
 * strides from Shape(data) (k static). */
static og_status gather_nd_onehot_dyn(og_gb *b, const og_node *n, int dy, int *dx, int bd, int k)
{
    int data = IN(0), ind = IN(1);
    const og_value *xv = og_gb_value(b, data), *iv = og_gb_value(b, ind);
    int r = xv->rank;
    og_dtype dt = xv->dtype, it = iv->dtype;
    int64_t m1 = -1, kk = k, two = 2, perm[3] = {0, 2, 1};
    int sh = og_gb_op1(b, "Shape", data);
    int *kd = og_malloc(og_gb_alloc(b), 2 * (size_t)(k + 1) * sizeof *kd);
    if (!kd) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    int *st = kd + k + 1;
    for (int j = 0; j < k; j++) {
        kd[j] = prod_entries(b, sh, bd + j, bd + j + 1);
        st[j] = prod_entries(b, sh, bd + j + 1, bd + k); /* the tuple's strides in the block */
    }
    int kdc = concat_i64(b, k, kd), strides = concat_i64(b, k, st);
    og_free(og_gb_alloc(b), kd);
    int B = prod_entries(b, sh, 0, bd), P = prod_entries(b, sh, bd, bd + k);
    int R = prod_entries(b, sh, bd + k, r), mc = og_gb_const_i64(b, &m1, 1);
    int s3[3] = {B, mc, og_gb_const_i64(b, &kk, 1)}, dsh[3] = {B, mc, R};
    int idx = og_gb_op2(b, "Reshape", ind, concat_i64(b, 3, s3));
    if (it != OG_INT64) idx = og_rule_cast(b, idx, OG_INT64);
    int neg = og_gb_op2(b, "Less", idx, og_gb_scalar(b, 0.0, OG_INT64));
    idx = og_gb_op3(b, "Where", neg, og_gb_op2(b, "Add", idx, kdc), idx);
    int lin = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", idx, strides), &two, 1, false); /* [B, M] */
    int oh = one_hot(b, lin, OG_INT64, P, dt, -1); /* [B, M, P] */
    int dyr = og_gb_op2(b, "Reshape", dy, concat_i64(b, 3, dsh));
    int g = og_gb_op2(b, "MatMul", og_rule_transpose(b, oh, perm, 3), dyr); /* [B, P, R] */
    dx[0] = og_gb_op2(b, "Reshape", g, sh);
    return og_gb_status(b);
}

/* Without ScatterND's reduction (opset < 16) or with batch_dims: with B, P, R the sizes of
 * data's batch, indexed and trailing dims, L the linear index of each index tuple in the P
 * block ([B, M]), dx = Reshape(OneHot(L, P)ᵀ · Reshape(dy, [B, M, R])).  Needs data's rank
 * and the tuple length k static (k from the output's rank when the indices' last dim is
 * not: rank(Y) = q − 1 + r − bd − k); data's dims may be known at run time only. */
static og_status gather_nd_onehot(og_gb *b, const og_node *n, int dy, int *dx, int bd)
{
    int data = IN(0), ind = IN(1);
    const og_value *xv = og_gb_value(b, data), *iv = og_gb_value(b, ind);
    int r = xv->rank, q = iv->rank, ry = og_gb_value(b, n->out[0])->rank;
    og_dtype dt = xv->dtype, it = iv->dtype;
    int64_t dims[OG_MAX_RANK], k = q > 0 ? iv->dims[q - 1] : -1;
    if (k < 0 && q > 0 && r >= 0 && ry >= 0) k = q - 1 + r - bd - ry;
    bool known = r >= 0;
    for (int d = 0; known && d < r; d++) known = (dims[d] = xv->dims[d]) >= 0;
    if (r < 0 || k < 1 || bd + k > r || bd >= q)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "GatherND gradient below opset 16 or with batch_dims needs data's "
                          "rank and the index length static");
    if (!known) return gather_nd_onehot_dyn(b, n, dy, dx, bd, (int)k);
    int64_t B = 1, P = 1, R = 1, strides[OG_MAX_RANK], kd[OG_MAX_RANK];
    for (int d = 0; d < bd; d++) B *= dims[d];
    for (int d = bd + (int)k; d < r; d++) R *= dims[d];
    for (int j = (int)k - 1; j >= 0; j--) {
        kd[j] = dims[bd + j];
        strides[j] = P;
        P *= kd[j];
    }
    int64_t s3[3] = {B, -1, k}, dshape[3] = {B, -1, R}, two = 2, perm[3] = {0, 2, 1};
    int idx = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, s3, 3));
    if (it != OG_INT64) idx = og_rule_cast(b, idx, OG_INT64);
    int kdc = og_gb_const_i64(b, kd, (int)k);
    int neg = og_gb_op2(b, "Less", idx, og_gb_scalar(b, 0.0, OG_INT64));
    idx = og_gb_op3(b, "Where", neg, og_gb_op2(b, "Add", idx, kdc), idx);
    int lin = og_gb_op2(b, "Mul", idx, og_gb_const_i64(b, strides, (int)k));
    lin = og_gb_reduce_sum(b, lin, &two, 1, false);                        /* [B, M] */
    int oh = one_hot(b, lin, OG_INT64, og_gb_const_i64(b, &P, 1), dt, -1); /* [B, M, P] */
    int dyr = og_gb_op2(b, "Reshape", dy, og_gb_const_i64(b, dshape, 3));
    int g = og_gb_op2(b, "MatMul", og_rule_transpose(b, oh, perm, 3), dyr); /* [B, P, R] */
    dx[0] = og_gb_op2(b, "Reshape", g, og_gb_const_i64(b, dims, r));
    return og_gb_status(b);
}

static og_status g_gather_nd(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    int64_t bd = og_attr_int(n, "batch_dims", 0);
    if (bd < 0 || bd >= OG_MAX_RANK) return og_gb_fail(b, n, OG_ERR_MODEL, "bad batch_dims");
    if (bd > 0 || og_gb_opset(b) < 16) return gather_nd_onehot(b, n, dy[0], dx, (int)bd);
    int nd = og_gb_op(b, "ScatterND", 3, (int[]){og_rule_zeros_like(b, IN(0)), IN(1), dy[0]});
    og_gb_attr_string(b, og_gb_last(b), "reduction", "add");
    dx[0] = nd;
    return og_gb_status(b);
}

/* ---- ScatterElements / ScatterND ----------------------------------------------------- */

/* "none" or "add"; anything else is not differentiable here */
static int scatter_reduction(og_gb *b, const og_node *n)
{
    const char *red = og_attr_string(n, "reduction", "none");
    if (strcmp(red, "none") == 0) return 0;
    if (strcmp(red, "add") == 0) return 1;
    return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "no gradient for scatter reduction '%s'", red);
}

static og_status scatter_common(og_gb *b, const og_node *n, const int *dy, int *dx, bool nd)
{
    int add = scatter_reduction(b, n);
    if (add < 0) return og_gb_status(b);
    int axis = 0;
    if (!nd) {
        int r = og_rule_rank_of(b, n, IN(0), "the data");
        if (r < 0) return og_gb_status(b);
        axis = og_rule_axis(b, n, og_attr_int(n, "axis", 0), r);
        if (axis < 0) return og_gb_status(b);
    }
    if (WANTS(0)) {
        if (add) {
            dx[0] = dy[0];
        } else if (nd) {
            dx[0] = og_gb_op3(b, "ScatterND", dy[0], IN(1), og_rule_zeros_like(b, IN(2)));
        } else {
            dx[0] =
                og_rule_scatter_elements(b, dy[0], IN(1), og_rule_zeros_like(b, IN(2)), axis, NULL);
        }
    }
    if (WANTS(2)) {
        dx[2] = og_gb_op2(b, nd ? "GatherND" : "GatherElements", dy[0], IN(1));
        if (!nd) og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    }
    return og_gb_status(b);
}

/* Scatter (opset 9, 10: ScatterElements without reduction, and no GatherElements yet):
 * dx = Scatter(dy, i, 0); du = GatherElements(dy, i) written as the sum over the last axis
 * of OneHot(i) * dy (axis moved last, sliced to the indices' shape off the axis). */
/* Scatter-9's updates gradient du = dY at the scattered positions (GatherElements, which
 * comes at 11) when the indices' shape is known only at run time (no Slice with computed
 * ends at 9): every position of the indices from NonZero over Equal(i, i) ([r, M],
 * row-major), the axis row replaced by the indices (negative ones wrapped), the
 * flat offsets Σ_d c_d·stride_d into dY by strides taken from Shape(dY), and a Gather of
 * the flattened dY, reshaped as the indices. */
static int scatter9_updates_dyn(og_gb *b, int dy, int ind, og_dtype it, int r, int axis)
{
    int64_t m1 = -1, zero = 0, a = axis;
    int si = og_gb_op1(b, "Shape", ind), sy = og_gb_op1(b, "Shape", dy);
    int ones = og_gb_op2(b, "Equal", ind, ind); /* true everywhere, the indices' shape */
    int coords = og_gb_op1(b, "NonZero", ones); /* [r, M] */
    int flat_i = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, &m1, 1));
    if (it != OG_INT64) flat_i = og_rule_cast(b, flat_i, OG_INT64);
    int dim = og_gb_op2(b, "Gather", sy, og_gb_const_i64(b, &a, 1));
    int neg = og_rule_cast(b, og_gb_op2(b, "Less", flat_i, og_gb_const_i64(b, &zero, 1)), OG_INT64);
    flat_i = og_gb_op2(b, "Add", flat_i, og_gb_op2(b, "Mul", neg, dim));
    int off = -1, stride = -1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t dd = d;
        int c;
        if (d == axis) {
            c = flat_i;
        } else {
            c = og_gb_op2(b, "Gather", coords, og_gb_const_i64(b, &dd, 1));
            c = og_gb_op2(b, "Reshape", c, og_gb_const_i64(b, &m1, 1));
        }
        int term = stride < 0 ? c : og_gb_op2(b, "Mul", c, stride);
        off = off < 0 ? term : og_gb_op2(b, "Add", off, term);
        int len = og_gb_op2(b, "Gather", sy, og_gb_const_i64(b, &dd, 1));
        stride = stride < 0 ? len : og_gb_op2(b, "Mul", stride, len);
    }
    int g = og_gb_op2(b, "Gather", og_gb_op2(b, "Reshape", dy, og_gb_const_i64(b, &m1, 1)), off);
    return og_gb_op2(b, "Reshape", g, si);
}

static og_status g_scatter(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (og_gb_opset(b) >= 11) return scatter_common(b, n, dy, dx, false);
    int data = IN(0), ind = IN(1);
    int r = og_rule_rank_of(b, n, data, "the data");
    if (r < 0) return og_gb_status(b);
    int axis = og_rule_axis(b, n, og_attr_int(n, "axis", 0), r);
    if (axis < 0) return og_gb_status(b);
    const og_value *xv = og_gb_value(b, data), *iv = og_gb_value(b, ind);
    og_dtype dt = xv->dtype, it = iv->dtype;
    int64_t starts[OG_MAX_RANK], ends[OG_MAX_RANK], axes[OG_MAX_RANK];
    int ns = 0;
    bool unknown = iv->rank != r;
    for (int d = 0; !unknown && d < r; d++) {
        if (d == axis || (xv->dims[d] >= 0 && xv->dims[d] == iv->dims[d])) continue;
        if (iv->dims[d] < 0) unknown = true;
        starts[ns] = 0, ends[ns] = iv->dims[d], axes[ns++] = d;
    }
    if (WANTS(0))
        dx[0] = og_rule_scatter_elements(b, dy[0], ind, og_rule_zeros_like(b, IN(2)), axis, NULL);
    if (!WANTS(2)) return og_gb_status(b);
    int src = dy[0];
    if (unknown && og_gb_opset(b) < 10) {
        dx[2] = scatter9_updates_dyn(b, dy[0], ind, it, r, axis);
        return og_gb_status(b);
    }
    if (unknown && r > 1) {
        /* dY cut to the indices' off-axis dims, taken at run time: Slice(dY, 0,
         * Shape(indices)[off-axis], off-axis) */
        ns = 0;
        for (int d = 0; d < r; d++)
            if (d != axis) starts[ns] = 0, axes[ns++] = d;
        int in[4] = {
            src, og_gb_const_i64(b, starts, ns),
            og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", ind), og_gb_const_i64(b, axes, ns)),
            og_gb_const_i64(b, axes, ns)};
        src = og_gb_op(b, "Slice", 4, in);
    } else if (ns > 0) {
        src = og_rule_slice(b, src, axes, starts, ends, NULL, ns);
    }
    int64_t perm[OG_MAX_RANK], ax = axis, last = r;
    for (int d = 0, k = 0; d < r; d++)
        if (d != axis) perm[k++] = d;
    perm[r - 1] = axis;
    int t = r > 1 ? og_rule_transpose(b, src, perm, r) : src;
    t = og_rule_unsqueeze(b, t, &ax, 1); /* indices' off-axis dims, 1 at axis, dim last */
    int oh = one_hot(b, ind, it, dim_of(b, data, axis), dt, -1);
    dx[2] = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", oh, t), &last, 1, false);
    return og_gb_status(b);
}

static og_status g_scatter_elements(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return scatter_common(b, n, dy, dx, false);
}

static og_status g_scatter_nd(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return scatter_common(b, n, dy, dx, true);
}

/* ---- OneHot -------------------------------------------------------------------------- */

static og_status g_onehot(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(2)) return og_gb_status(b);
    int64_t m1 = -1, z = 0;
    og_dtype it = og_gb_value(b, IN(0))->dtype, dt = og_gb_value(b, IN(2))->dtype;
    int mask = one_hot(b, IN(0), it, IN(1), dt, og_attr_int(n, "axis", -1));
    int flat = og_gb_const_i64(b, &m1, 1);
    int on = og_gb_reduce_sum(b, og_gb_op2(b, "Reshape", og_gb_op2(b, "Mul", dy[0], mask), flat),
                              &z, 1, true);
    int all = og_gb_reduce_sum(b, og_gb_op2(b, "Reshape", dy[0], flat), &z, 1, true);
    int parts[2] = {og_gb_op2(b, "Sub", all, on), on};
    if (parts[0] < 0 || parts[1] < 0) return og_gb_status(b);
    dx[2] = og_gb_op(b, "Concat", 2, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    return og_gb_status(b);
}

/* ---- Compress, ReverseSequence ---------------------------------------------------- */

static og_status g_compress(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int r = og_rule_rank_of(b, n, IN(0), "input 0");
    if (r < 0) return og_gb_status(b);
    bool has_axis = og_node_attr(n, "axis") != NULL;
    int axis = has_axis ? og_rule_axis(b, n, og_attr_int(n, "axis", 0), r) : 0;
    if (axis < 0) return og_gb_status(b);
    og_dtype dt = og_gb_value(b, OUT(0))->dtype;
    int idx = og_gb_op1(b, "NonZero", IN(1)); /* [1, k] */
    int64_t m1 = -1;
    if (og_gb_opset(b) < 11) {
        /* dy ·_axis OneHot(positions, dim): the selection matrix, transposed */
        int depth = has_axis ? dim_of(b, IN(0), axis) : og_gb_op1(b, "Size", IN(0));
        int pos = og_gb_op2(b, "Reshape", idx, og_gb_const_i64(b, &m1, 1));
        int oh = one_hot(b, pos, OG_INT64, depth, dt, -1); /* [k, dim] */
        if (!has_axis) {
            int row = og_gb_op2(b, "MatMul", og_rule_unsqueeze(b, dy[0], (int64_t[]){0}, 1), oh);
            dx[0] = og_gb_op2(b, "Reshape", row, og_gb_op1(b, "Shape", IN(0)));
        } else {
            dx[0] = og_rule_matmul_axis(b, dy[0], oh, r, axis);
        }
        return og_gb_status(b);
    }
    int pos = og_rule_transpose(b, idx, (int64_t[]){1, 0}, 2); /* [k, 1] */
    int zero = og_gb_scalar(b, 0.0, dt);
    if (!has_axis) {
        int zeros = og_gb_op2(b, "Expand", zero, og_gb_op1(b, "Shape", IN(0)));
        zeros = og_gb_op2(b, "Reshape", zeros, og_gb_const_i64(b, &m1, 1));
        int flat = og_gb_op3(b, "ScatterND", zeros, pos, dy[0]);
        dx[0] = og_gb_op2(b, "Reshape", flat, og_gb_op1(b, "Shape", IN(0)));
        return og_gb_status(b);
    }
    /* the axis first: zeros of x's dims in that order, scatter, then back */
    int64_t perm[OG_MAX_RANK], inv[OG_MAX_RANK];
    perm[0] = axis;
    for (int d = 0, k = 1; d < r; d++)
        if (d != axis) perm[k++] = d;
    for (int d = 0; d < r; d++) inv[perm[d]] = d;
    int shp = og_gb_op1(b, "Shape", IN(0)), upd = dy[0];
    if (axis != 0) {
        shp = og_gb_op2(b, "Gather", shp, og_gb_const_i64(b, perm, r));
        upd = og_rule_transpose(b, upd, perm, r);
    }
    int s = og_gb_op3(b, "ScatterND", og_gb_op2(b, "Expand", zero, shp), pos, upd);
    dx[0] = axis != 0 ? og_rule_transpose(b, s, inv, r) : s;
    return og_gb_status(b);
}

static og_status g_reverse_sequence(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    dx[0] = og_gb_op2(b, "ReverseSequence", dy[0], IN(1));
    og_gb_copy_attrs(b, og_gb_last(b), n, NULL);
    return og_gb_status(b);
}

const og_grad_rule og_grad_index[] = {{"Gather", "", g_gather},
                                      {"GatherElements", "", g_gather_elements},
                                      {"GatherND", "", g_gather_nd},
                                      {"ScatterElements", "", g_scatter_elements},
                                      {"Scatter", "", g_scatter},
                                      {"ScatterND", "", g_scatter_nd},
                                      {"OneHot", "", g_onehot},
                                      {"Compress", "", g_compress},
                                      {"ReverseSequence", "", g_reverse_sequence},
                                      {0}};
