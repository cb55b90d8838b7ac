/* index.c: gradients of the indexing ops.
 *
 *   Gather(x, i, axis):      dx = scatter-add of dy into zeros of x's shape along axis
 *       opset >= 16: ScatterElements(zeros, expand(i), dy, reduction=add)
 *       opset 9..15: dx = dy ·_axis OneHot(i, dim(axis)), a MatMul that sums repeats
 *       opset 7, 8:  the same with Equal(i, range(dim)) for OneHot (static dim)
 *   GatherElements(x, i):    dx = ScatterElements(zeros, i, dy, reduction=add) (>= 16),
 *       opset 11..15: sum over the indexed axis of OneHot(i) * dy, padded to x's shape
 *   GatherND(x, i):          dx = ScatterND(zeros, i, dy, reduction=add) (>= 16, batch_dims 0);
 *       otherwise a OneHot of the linear index of each tuple, through a batched MatMul
 *   ScatterElements(x, i, u): none: dx = ScatterElements(dy, i, 0), du = GatherElements(dy, i)
 *                             add:  dx = dy,                         du = GatherElements(dy, i)
 *   ScatterND:               the same with ScatterND / GatherND
 *   Scatter (opset 9, 10):   as ScatterElements none, du through OneHot (no GatherElements)
 *   TopK(x):                 dx = ScatterElements(zeros, indices, dvalues) (Scatter at 9, 10)
 *   OneHot(i, depth, v):     dv = [sum(dy where off), sum(dy where on)]
 *   Resize/Upsample(x):      every mode is separable and linear in x: with static input dims
 *       and constant roi/scales/sizes, each resized axis is a matrix M (out x in) built with
 *       the CPU kernel's taps, and dx = dy ·_axis M.
 * With repeated indices and reduction none, which write wins is unspecified: du gives every
 * duplicate dy at its index (as onnxruntime and PyTorch's scatter do).
 * Negative indices: the forward ops wrap them; the scatters used here do the same (OneHot
 * before opset 11 gets them wrapped explicitly). */
#include <math.h>
#include <string.h>

#include "grad/grad.h"
#include "ops/resize_params.h"

#define IN(i)    (n->in[i])
#define OUT(i)   (n->out[i])
#define WANTS(i) og_gb_wants(b, n, i)

/* ---- helpers ----------------------------------------------------------------------- */

static int rank_of(og_gb *b, const og_node *n, int v, const char *what)
{
    int r = og_gb_value(b, v)->rank;
    if (r < 0) og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the rank of %s", what);
    return r;
}

static int norm_axis(og_gb *b, const og_node *n, int64_t axis, int rank)
{
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
    return (int)axis;
}

/* zeros with the runtime shape of forward value v */
static int zeros_like(og_gb *b, int v)
{
    return og_gb_op2(b, "Expand", og_gb_scalar_like(b, 0.0, v), og_gb_op1(b, "Shape", v));
}

static int cast_to(og_gb *b, int x, og_dtype dt)
{
    int r = og_gb_op1(b, "Cast", x);
    og_gb_attr_int(b, og_gb_last(b), "to", dt);
    return r;
}

static int unsqueeze(og_gb *b, int x, const int64_t *axes, int k)
{
    if (og_gb_opset(b) >= 13) return og_gb_op2(b, "Unsqueeze", x, og_gb_const_i64(b, axes, k));
    int r = og_gb_op1(b, "Unsqueeze", x);
    og_gb_attr_ints(b, og_gb_last(b), "axes", axes, k);
    return r;
}

static int transpose(og_gb *b, int x, const int64_t *perm, int rank)
{
    int r = og_gb_op1(b, "Transpose", x);
    og_gb_attr_ints(b, og_gb_last(b), "perm", perm, rank);
    return r;
}

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
        idx = cast_to(b, idx, OG_INT64);
        idx_dt = OG_INT64;
    }
    if (og_gb_opset(b) < 11) {
        int neg = cast_to(b, og_gb_op2(b, "Less", idx, og_gb_scalar(b, 0.0, idx_dt)), idx_dt);
        idx = og_gb_op2(b, "Add", idx, og_gb_op2(b, "Mul", neg, cast_to(b, depth, idx_dt)));
    }
    int64_t v[2] = {0, 1};
    int vals = cast_to(b, og_gb_const_i64(b, v, 2), dt);
    int r = og_gb_op3(b, "OneHot", idx, depth, vals);
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    return r;
}

/* x (rank r) ·_axis M: contract axis `axis` of x with the first axis of matrix m */
static int matmul_axis(og_gb *b, int x, int m, int r, int axis)
{
    int64_t perm[OG_MAX_RANK], inv[OG_MAX_RANK];
    if (axis == r - 1) return og_gb_op2(b, "MatMul", x, m);
    int k = 0;
    for (int d = 0; d < r; d++)
        if (d != axis) perm[k++] = d;
    perm[r - 1] = axis;
    for (int d = 0; d < r; d++) inv[perm[d]] = d;
    int t = og_gb_op2(b, "MatMul", transpose(b, x, perm, r), m);
    return transpose(b, t, inv, r);
}

/* ScatterElements(data, idx, upd) along axis, with reduction (NULL: none) */
static int scatter_elements(og_gb *b, int data, int idx, int upd, int axis, const char *red)
{
    int in[3] = {data, idx, upd};
    if (data < 0 || idx < 0 || upd < 0) return -1;
    int r = og_gb_op(b, og_gb_opset(b) >= 11 ? "ScatterElements" : "Scatter", 3, in);
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    if (red) og_gb_attr_string(b, og_gb_last(b), "reduction", red);
    return r;
}

/* ---- Gather ------------------------------------------------------------------------ */

static og_status g_gather(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    int data = IN(0), ind = IN(1);
    int r = rank_of(b, n, data, "the data");
    if (r < 0) return og_gb_status(b);
    int axis = norm_axis(b, n, og_attr_int(n, "axis", 0), r);
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
        dx[0] = scatter_elements(b, zeros_like(b, data), idx, dyr, axis, "add");
    } else if (og_gb_opset(b) >= 9) {
        int flat = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, &m1, 1));
        int oh = one_hot(b, flat, it, dim_of(b, data, axis), dt, -1); /* [N, dim] */
        dx[0] = matmul_axis(b, dyr, oh, r, axis);
    } else {
        /* no OneHot: compare with a constant range (and the range less dim, for negative
         * indices), which needs the dim static */
        int64_t dim = og_gb_value(b, data)->dims[axis], one = 1;
        if (dim < 0 || dim > (1 << 24))
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Gather gradient below opset 9 needs the gathered dim static");
        int64_t *ar = og_malloc(og_gb_alloc(b), (size_t)(2 * dim + 1) * sizeof *ar);
        if (!ar) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        for (int64_t k = 0; k < dim; k++) ar[k] = k, ar[dim + k] = k - dim;
        int lo = og_gb_const_i64(b, ar, (int)dim), hi = og_gb_const_i64(b, ar + dim, (int)dim);
        og_free(og_gb_alloc(b), ar);
        int flat = og_gb_op2(b, "Reshape", ind, og_gb_const_i64(b, &m1, 1));
        if (it != OG_INT64) flat = cast_to(b, flat, OG_INT64);
        int u = unsqueeze(b, flat, &one, 1); /* [N, 1] */
        int eq = og_gb_op2(b, "Or", og_gb_op2(b, "Equal", u, lo), og_gb_op2(b, "Equal", u, hi));
        dx[0] = matmul_axis(b, dyr, cast_to(b, eq, dt), r, axis);
    }
    return og_gb_status(b);
}

/* ---- GatherElements ---------------------------------------------------------------- */

static og_status g_gather_elements(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    int data = IN(0), ind = IN(1);
    int r = rank_of(b, n, data, "the data");
    if (r < 0) return og_gb_status(b);
    int axis = norm_axis(b, n, og_attr_int(n, "axis", 0), r);
    if (axis < 0) return og_gb_status(b);
    if (og_gb_opset(b) >= 16) {
        dx[0] = scatter_elements(b, zeros_like(b, data), ind, dy[0], axis, "add");
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
    int p = og_gb_op2(b, "Mul", oh, unsqueeze(b, dy[0], &last, 1));
    int s = og_gb_reduce_sum(b, p, &ax, 1, false); /* indices' shape less axis, then dim */
    int64_t perm[OG_MAX_RANK];
    for (int d = 0, k = 0; d < r; d++) perm[d] = d == axis ? r - 1 : k++;
    int t = r > 1 ? transpose(b, s, perm, r) : s;
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

/* ---- GatherND ---------------------------------------------------------------------- */

/* Without ScatterND's reduction (opset < 16) or with batch_dims: with B, P, R the sizes of
 * data's batch, indexed and trailing dims, L the linear index of each index tuple in the P
 * block ([B, M]), dx = Reshape(OneHot(L, P)ᵀ · Reshape(dy, [B, M, R])).  Needs data's dims
 * and the tuple length k static. */
static og_status gather_nd_onehot(og_gb *b, const og_node *n, int dy, int *dx, int bd)
{
    int data = IN(0), ind = IN(1);
    const og_value *xv = og_gb_value(b, data), *iv = og_gb_value(b, ind);
    int r = xv->rank, q = iv->rank;
    og_dtype dt = xv->dtype, it = iv->dtype;
    int64_t dims[OG_MAX_RANK], k = q > 0 ? iv->dims[q - 1] : -1;
    bool known = r >= 0;
    for (int d = 0; known && d < r; d++) known = (dims[d] = xv->dims[d]) >= 0;
    if (!known || k < 0 || bd + k > r || bd >= q)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "GatherND gradient below opset 16 or with batch_dims needs data's "
                          "shape and the index length static");
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
    if (it != OG_INT64) idx = cast_to(b, idx, OG_INT64);
    int kdc = og_gb_const_i64(b, kd, (int)k);
    int neg = og_gb_op2(b, "Less", idx, og_gb_scalar(b, 0.0, OG_INT64));
    idx = og_gb_op3(b, "Where", neg, og_gb_op2(b, "Add", idx, kdc), idx);
    int lin = og_gb_op2(b, "Mul", idx, og_gb_const_i64(b, strides, (int)k));
    lin = og_gb_reduce_sum(b, lin, &two, 1, false);                        /* [B, M] */
    int oh = one_hot(b, lin, OG_INT64, og_gb_const_i64(b, &P, 1), dt, -1); /* [B, M, P] */
    int dyr = og_gb_op2(b, "Reshape", dy, og_gb_const_i64(b, dshape, 3));
    int g = og_gb_op2(b, "MatMul", transpose(b, oh, perm, 3), dyr); /* [B, P, R] */
    dx[0] = og_gb_op2(b, "Reshape", g, og_gb_const_i64(b, dims, r));
    return og_gb_status(b);
}

static og_status g_gather_nd(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    int64_t bd = og_attr_int(n, "batch_dims", 0);
    if (bd < 0 || bd >= OG_MAX_RANK) return og_gb_fail(b, n, OG_ERR_MODEL, "bad batch_dims");
    if (bd > 0 || og_gb_opset(b) < 16) return gather_nd_onehot(b, n, dy[0], dx, (int)bd);
    int nd = og_gb_op(b, "ScatterND", 3, (int[]){zeros_like(b, IN(0)), IN(1), dy[0]});
    og_gb_attr_string(b, og_gb_last(b), "reduction", "add");
    dx[0] = nd;
    return og_gb_status(b);
}

/* ---- ScatterElements / ScatterND --------------------------------------------------- */

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
        int r = rank_of(b, n, IN(0), "the data");
        if (r < 0) return og_gb_status(b);
        axis = norm_axis(b, n, og_attr_int(n, "axis", 0), r);
        if (axis < 0) return og_gb_status(b);
    }
    if (WANTS(0)) {
        if (add) {
            dx[0] = dy[0];
        } else if (nd) {
            dx[0] = og_gb_op3(b, "ScatterND", dy[0], IN(1), zeros_like(b, IN(2)));
        } else {
            dx[0] = scatter_elements(b, dy[0], IN(1), zeros_like(b, IN(2)), axis, NULL);
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
static og_status g_scatter(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (og_gb_opset(b) >= 11) return scatter_common(b, n, dy, dx, false);
    int data = IN(0), ind = IN(1);
    int r = rank_of(b, n, data, "the data");
    if (r < 0) return og_gb_status(b);
    int axis = norm_axis(b, n, og_attr_int(n, "axis", 0), r);
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
    if (WANTS(0)) dx[0] = scatter_elements(b, dy[0], ind, zeros_like(b, IN(2)), axis, NULL);
    if (!WANTS(2)) return og_gb_status(b);
    if (unknown)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "Scatter updates gradient needs the indices' shape static");
    int src = dy[0];
    if (ns > 0) {
        if (og_gb_opset(b) >= 10) {
            int in[4] = {src, og_gb_const_i64(b, starts, ns), og_gb_const_i64(b, ends, ns),
                         og_gb_const_i64(b, axes, ns)};
            src = og_gb_op(b, "Slice", 4, in);
        } else {
            src = og_gb_op1(b, "Slice", src);
            og_gb_attr_ints(b, og_gb_last(b), "starts", starts, ns);
            og_gb_attr_ints(b, og_gb_last(b), "ends", ends, ns);
            og_gb_attr_ints(b, og_gb_last(b), "axes", axes, ns);
        }
    }
    int64_t perm[OG_MAX_RANK], ax = axis, last = r;
    for (int d = 0, k = 0; d < r; d++)
        if (d != axis) perm[k++] = d;
    perm[r - 1] = axis;
    int t = r > 1 ? transpose(b, src, perm, r) : src;
    t = unsqueeze(b, t, &ax, 1); /* indices' off-axis dims, 1 at axis, dim last */
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

/* ---- TopK -------------------------------------------------------------------------- */

static og_status g_topk(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0) || dy[0] < 0) return og_gb_status(b);
    if (og_gb_opset(b) < 9)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "TopK gradient needs opset >= 9 (Scatter)");
    int r = rank_of(b, n, IN(0), "the input");
    if (r < 0) return og_gb_status(b);
    int axis = norm_axis(b, n, og_attr_int(n, "axis", -1), r);
    if (axis < 0) return og_gb_status(b);
    dx[0] = scatter_elements(b, zeros_like(b, IN(0)), OUT(1), dy[0], axis, NULL);
    return og_gb_status(b);
}

/* ---- OneHot ------------------------------------------------------------------------ */

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

/* ---- Resize ------------------------------------------------------------------------ */

/* M[x * in + i] += weight of input i in output x, for axis a (w, pos: scratch of the tap
 * count); true when M is the identity */
static bool resize_matrix(const og_resize_params *p, const og_resize_shape *sh, int a, int64_t in,
                          double *M, double *w, int64_t *pos)
{
    int64_t out = sh->out_dims[a];
    double scale = sh->scale[a];
    double s = p->antialias && scale < 1.0 ? scale : 1.0;
    bool normalize = p->antialias || p->exclude_outside;
    int start, nt = og_resize_tap_count(p, scale, &start);
    memset(M, 0, (size_t)(out * in) * sizeof *M);
    for (int64_t x = 0; x < out; x++) {
        double xo = og_resize_source_coord(p, sh, a, x, in), *row = M + x * in;
        if (p->coord == OG_COORD_TF_CROP_AND_RESIZE && !(xo >= 0.0 && xo <= (double)(in - 1)))
            continue; /* the extrapolation value: no gradient */
        if (!(xo > -1e15 && xo < 1e15)) xo = xo > 0 ? 1e15 : -1e15;
        if (p->mode == OG_RESIZE_NEAREST) {
            row[og_resize_clamp(og_resize_nearest_index(p, xo, scale), in)] += 1.0;
            continue;
        }
        double i0 = floor(xo), ratio = xo - i0, sum = 0.0;
        if (ratio == 0.0) i0 -= 1.0, ratio = 1.0;
        for (int j = 0; j < nt; j++) {
            pos[j] = (int64_t)i0 + start + j;
            double rel = ((double)(start + j) - ratio) * s;
            w[j] = p->mode == OG_RESIZE_LINEAR ? fmax(0.0, 1.0 - fabs(rel))
                                               : og_resize_cubic(rel, p->cubic_a);
            if (p->exclude_outside && (pos[j] < 0 || pos[j] >= in)) w[j] = 0.0;
            sum += w[j];
        }
        for (int j = 0; j < nt; j++)
            row[og_resize_clamp(pos[j], in)] += normalize && sum != 0.0 ? w[j] / sum : w[j];
    }
    if (out != in) return false;
    for (int64_t x = 0; x < out; x++)
        for (int64_t i = 0; i < in; i++)
            if (M[x * in + i] != (x == i ? 1.0 : 0.0)) return false;
    return true;
}

/* matrix M (out x in) as a constant of dtype dt: int64 fixed point (2^-40), cast, scaled */
static int matrix_const(og_gb *b, const double *M, int64_t out, int64_t in, og_dtype dt)
{
    size_t count = (size_t)(out * in);
    int64_t *q = og_malloc(og_gb_alloc(b), count * sizeof *q);
    if (!q) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    const double one = 1099511627776.0; /* 2^40 */
    for (size_t i = 0; i < count; i++) q[i] = (int64_t)llround(M[i] * one);
    int c = og_gb_const_i64(b, q, (int)count);
    og_free(og_gb_alloc(b), q);
    int64_t shp[2] = {out, in};
    c = og_gb_op2(b, "Reshape", c, og_gb_const_i64(b, shp, 2));
    return og_gb_op2(b, "Mul", cast_to(b, c, dt), og_gb_scalar(b, 1.0 / one, dt));
}

static const og_tensor *const_input(og_gb *b, const og_node *n, int i, bool *bad)
{
    if (i < 0 || i >= n->n_in || IN(i) < 0) return NULL;
    const og_tensor *t = og_gb_value(b, IN(i))->known;
    if (!t) *bad = true;
    return t;
}

static og_status g_resize(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0)) return og_gb_status(b);
    const og_resize_params *p = n->params;
    if (!n->parsed || !p)
        return og_gb_fail(b, n, OG_ERR_INTERNAL, "Resize attributes are not parsed");
    /* copies: og_gb_value's pointers move as values are added */
    const og_value *xv0 = og_gb_value(b, IN(0));
    int r = xv0->rank;
    og_dtype dt = xv0->dtype;
    int64_t xdims[OG_MAX_RANK];
    bool bad = r < 1;
    for (int d = 0; d < r; d++) bad = bad || (xdims[d] = xv0->dims[d]) < 0;
    if (bad)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "Resize gradient needs the input's shape to be static");
    bad = false;
    const og_tensor *roi =
        p->coord == OG_COORD_TF_CROP_AND_RESIZE ? const_input(b, n, p->in_roi, &bad) : NULL;
    const og_tensor *scales = const_input(b, n, p->in_scales, &bad);
    const og_tensor *sizes = const_input(b, n, p->in_sizes, &bad);
    if (bad)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "Resize gradient needs constant roi, scales and sizes");
    og_op_ctx c = {n, og_gb_alloc(b), NULL, true};
    og_resize_shape sh;
    og_status st = og_resize_plan(&c, p, r, xdims, roi, scales, sizes, &sh);
    if (st) return og_gb_fail(b, n, st, "%s", og_last_error());
    int g = dy[0];
    for (int d = r - 1; d >= 0; d--) {
        int64_t in = xdims[d], out = sh.out_dims[d];
        if (out * in > ((int64_t)1 << 24) || out * in >= INT32_MAX)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Resize gradient: axis %d is too large (%lld x %lld)", d,
                              (long long)out, (long long)in);
        if (out == 0 || in == 0) continue;
        int start, nt = og_resize_tap_count(p, sh.scale[d], &start);
        size_t bytes = (size_t)(out * in) * sizeof(double) + (size_t)nt * 16;
        double *M = og_malloc(og_gb_alloc(b), bytes);
        if (!M) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        double *w = M + out * in;
        bool ident = resize_matrix(p, &sh, d, in, M, w, (int64_t *)(w + nt));
        int m = ident ? -1 : matrix_const(b, M, out, in, dt);
        og_free(og_gb_alloc(b), M);
        if (!ident) g = matmul_axis(b, g, m, r, d);
    }
    dx[0] = g;
    return og_gb_status(b);
}

const og_grad_rule og_grad_index[] = {{"Gather", "", g_gather},
                                      {"GatherElements", "", g_gather_elements},
                                      {"GatherND", "", g_gather_nd},
                                      {"ScatterElements", "", g_scatter_elements},
                                      {"Scatter", "", g_scatter},
                                      {"ScatterND", "", g_scatter_nd},
                                      {"TopK", "", g_topk},
                                      {"OneHot", "", g_onehot},
                                      {"Resize", "", g_resize},
                                      {"Upsample", "", g_resize},
                                      {0}};
