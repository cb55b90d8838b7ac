/* reduce.c: gradients of the reductions, (log-)softmax, CumSum and TopK (src/ops/reduce.c).
 *   ReduceSum:  dx = dy broadcast back over the reduced axes
 *   ReduceMean: the same, divided by the number of elements reduced
 *   Softmax:    dx = y * (dy - sum(dy * y))          (sums over the normalized axes)
 *   LogSoftmax: dx = dy - exp(y) * sum(dy)
 *   CumSum:     dx = CumSum(dy) in the other direction (exclusive kept)
 *   TopK(x):    dx = ScatterElements(zeros, indices, dvalues) (Scatter at opset 9, 10)
 *   Hardmax:    zero (piecewise constant)
 *
 * The other reductions: with yk and dyk the output and its gradient with the reduced axes
 * kept (size 1), dx of x's shape through broadcasting is
 *   ReduceSumSquare: dx = 2 x dyk
 *   ReduceL1:        dx = sign(x) dyk
 *   ReduceL2:        dx = x / yk dyk                 (0 where yk == 0: x is 0 there too)
 *   ReduceLogSum:    dx = dyk / exp(yk)              (1 / sum)
 *   ReduceLogSumExp: dx = exp(x - yk) dyk            (the softmax over the axes)
 *   ReduceMax/Min:   dx = [x == yk] / count(x == yk) dyk   (ties share evenly, as amax)
 *   ReduceProd:      dx = (product of the others) dyk, computed without dividing by a zero:
 *                    with z the count of zeros and P the product of the nonzero elements,
 *                    others = P / x if z == 0; P at the zero if z == 1; 0 otherwise.
 * Axes are an attribute before opset 18 and input 1 (a constant) from 18; empty axes with
 * noop_with_empty_axes (18+) reduce nothing: each output reduces its one element. */
#include "grad/rule_util.h"

/* The reduced axes of a Reduce* node, normalized, in *axes (count returned; -1 on error).
 * Reduce-all (no axes) gives every axis; empty axes with noop_with_empty_axes give none. */
int og_gb_reduce_axes(og_gb *b, const og_node *n, int rank, int64_t *axes)
{
    int count = 0;
    const int64_t *attr = og_attr_ints(n, "axes", &count);
    const int64_t *vals = attr;
    if (!attr && n->n_in > 1 && n->in[1] >= 0) {
        const og_tensor *t = og_gb_value(b, n->in[1])->known;
        if (!t)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the axes to be a constant");
        if (t->rank > 1 || t->numel > OG_MAX_RANK)
            return og_gb_fail(b, n, OG_ERR_MODEL, "bad axes");
        count = (int)t->numel;
        for (int i = 0; i < count; i++) axes[i] = og_tensor_get_i64(t, i);
        vals = axes;
    }
    if (count > OG_MAX_RANK || count > rank) return og_gb_fail(b, n, OG_ERR_MODEL, "bad axes");
    if (count == 0) {
        if (og_attr_int(n, "noop_with_empty_axes", 0)) return 0;
        for (int i = 0; i < rank; i++) axes[i] = i;
        return rank;
    }
    int64_t tmp[OG_MAX_RANK];
    for (int i = 0; i < count; i++) {
        int64_t a = vals[i] < 0 ? vals[i] + rank : vals[i];
        if (a < 0 || a >= rank) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
        for (int j = 0; j < i; j++)
            if (tmp[j] == a) return og_gb_fail(b, n, OG_ERR_MODEL, "repeated axis");
        tmp[i] = a;
    }
    /* sorted, for Unsqueeze */
    for (int i = 1; i < count; i++)
        for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
            int64_t s = tmp[j];
            tmp[j] = tmp[j - 1];
            tmp[j - 1] = s;
        }
    for (int i = 0; i < count; i++) axes[i] = tmp[i];
    return count;
}

/* dy of a reduction, given back the reduced axes (keepdims) and expanded to x's shape */
static int expand_back(og_gb *b, const og_node *n, int dy, const int64_t *axes, int n_axes)
{
    int x = n->in[0];
    /* put the reduced axes back as size 1 */
    if (!og_attr_int(n, "keepdims", 1)) dy = og_rule_unsqueeze(b, dy, axes, n_axes);
    return og_gb_op2(b, "Expand", dy, og_gb_op1(b, "Shape", x));
}

static og_status reduce_common(og_gb *b, const og_node *n, const int *dy, int *dx, bool mean)
{
    int x = n->in[0];
    int rank = og_gb_value(b, x)->rank;
    if (rank < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    int64_t axes[OG_MAX_RANK];
    int k = og_gb_reduce_axes(b, n, rank, axes);
    if (k < 0) return og_gb_status(b);
    int g = expand_back(b, n, dy[0], axes, k);
    if (mean) {
        /* divide by the count of reduced elements: size(x) / size(y) */
        const og_value *xv = og_gb_value(b, x);
        int64_t count = 1;
        bool known = true;
        for (int i = 0; i < k; i++) {
            if (xv->dims[axes[i]] < 0)
                known = false;
            else
                count *= xv->dims[axes[i]];
        }
        og_dtype dt = og_gb_value(b, n->out[0])->dtype;
        int c;
        if (known) {
            c = og_gb_scalar(b, (double)count, dt);
        } else {
            int sx = og_gb_op1(b, "Size", x), sy = og_gb_op1(b, "Size", n->out[0]);
            c = og_gb_op2(b, "Div", sx, sy);
            c = og_rule_cast(b, c, dt);
        }
        g = og_gb_op2(b, "Div", g, c);
    }
    dx[0] = g;
    return og_gb_status(b);
}

static og_status g_reduce_sum(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return reduce_common(b, n, dy, dx, false);
}

static og_status g_reduce_mean(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return reduce_common(b, n, dy, dx, true);
}

/* The axes softmax normalizes over: `axis` from opset 13, every axis from `axis` on
 * before (the input is coerced to 2-D there). */
static int softmax_axes(og_gb *b, const og_node *n, int64_t *axes)
{
    int rank = og_gb_value(b, n->in[0])->rank;
    if (rank < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    bool v13 = n->since_version >= 13;
    int64_t axis = og_attr_int(n, "axis", v13 ? -1 : 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= (rank ? rank : 1))
        return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
    if (v13) {
        axes[0] = axis;
        return 1;
    }
    int k = 0;
    for (int64_t a = axis; a < rank; a++) axes[k++] = a;
    return k;
}

static og_status g_softmax(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int64_t axes[OG_MAX_RANK];
    int k = softmax_axes(b, n, axes);
    if (k < 0) return og_gb_status(b);
    int y = n->out[0];
    int s = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dy[0], y), axes, k, true);
    dx[0] = og_gb_op2(b, "Mul", y, og_gb_op2(b, "Sub", dy[0], s));
    return og_gb_status(b);
}

static og_status g_log_softmax(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int64_t axes[OG_MAX_RANK];
    int k = softmax_axes(b, n, axes);
    if (k < 0) return og_gb_status(b);
    int s = og_gb_reduce_sum(b, dy[0], axes, k, true);
    int p = og_gb_op1(b, "Exp", n->out[0]);
    dx[0] = og_gb_op2(b, "Sub", dy[0], og_gb_op2(b, "Mul", p, s));
    return og_gb_status(b);
}

/* ---- ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum(Exp), ReduceMax/Min, ReduceProd */

/* [a == c] as 0/1 of dtype dt, for floats: Equal from opset 11, not (a < c or a > c) before */
static int eq_mask(og_gb *b, int a, int c, og_dtype dt)
{
    int e;
    if (og_gb_opset(b) >= 11)
        e = og_gb_op2(b, "Equal", a, c);
    else
        e = og_gb_op1(
            b, "Not",
            og_gb_op2(b, "Or", og_gb_op2(b, "Less", a, c), og_gb_op2(b, "Greater", a, c)));
    return og_rule_cast(b, e, dt);
}

/* What every reduction rule starts from. */
typedef struct red {
    int x, yk, dyk, k;
    og_dtype dt;
    int64_t axes[OG_MAX_RANK];
} red;

/* Fill r: the reduced axes, and y and dy with them kept.  Returns false on error. */
static bool red_setup(og_gb *b, const og_node *n, const int *dy, red *r)
{
    r->x = n->in[0];
    const og_value *xv = og_gb_value(b, r->x);
    if (xv->rank < 0) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
        return false;
    }
    r->dt = xv->dtype;
    r->k = og_gb_reduce_axes(b, n, xv->rank, r->axes);
    if (r->k < 0) return false;
    bool keep = og_attr_int(n, "keepdims", 1) != 0;
    int kk = keep ? 0 : r->k;
    r->yk = og_rule_unsqueeze(b, n->out[0], r->axes, kk);
    r->dyk = og_rule_unsqueeze(b, dy[0], r->axes, kk);
    return og_gb_status(b) == OG_OK;
}

/* dx = 2 x dyk */
static og_status g_reduce_sum_square(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int two = og_gb_scalar_like(b, 2, r.x);
    dx[0] = og_gb_op2(b, "Mul", og_gb_op2(b, "Mul", r.x, two), r.dyk);
    return og_gb_status(b);
}

/* dx = sign(x) dyk: Sign from opset 9, [x > 0] - [x < 0] before */
static og_status g_reduce_l1(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int s;
    if (og_gb_opset(b) >= 9) {
        s = og_gb_op1(b, "Sign", r.x);
    } else {
        int zero = og_gb_scalar_like(b, 0, r.x);
        s = og_gb_op2(b, "Sub", og_rule_cast(b, og_gb_op2(b, "Greater", r.x, zero), r.dt),
                      og_rule_cast(b, og_gb_op2(b, "Less", r.x, zero), r.dt));
    }
    dx[0] = og_gb_op2(b, "Mul", s, r.dyk);
    return og_gb_status(b);
}

/* dx = x / yk dyk; yk == 0 means x == 0 over the slice, and the denominator becomes 1
 * there ([yk == 0] = not (yk > 0), as yk >= 0) */
static og_status g_reduce_l2(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int zero = og_gb_scalar_like(b, 0, r.x);
    int is0 = og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Greater", r.yk, zero)), r.dt);
    int den = og_gb_op2(b, "Add", r.yk, is0);
    dx[0] = og_gb_op2(b, "Mul", og_gb_op2(b, "Div", r.x, den), r.dyk);
    return og_gb_status(b);
}

/* y = log(sum x): dx = dyk / exp(yk), expanded to x's shape (Expand from opset 8, before
 * an Add onto zeros of x's shape, Cast(x < x)) */
static og_status g_reduce_log_sum(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int g = og_gb_op2(b, "Div", r.dyk, og_gb_op1(b, "Exp", r.yk));
    if (og_gb_opset(b) >= 8)
        dx[0] = og_gb_op2(b, "Expand", g, og_gb_op1(b, "Shape", r.x));
    else
        dx[0] = og_gb_op2(b, "Add", g, og_rule_cast(b, og_gb_op2(b, "Less", r.x, r.x), r.dt));
    return og_gb_status(b);
}

/* dx = exp(x - yk) dyk */
static og_status g_reduce_log_sum_exp(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int p = og_gb_op1(b, "Exp", og_gb_op2(b, "Sub", r.x, r.yk));
    dx[0] = og_gb_op2(b, "Mul", p, r.dyk);
    return og_gb_status(b);
}

/* dx = mask dyk / sum(mask), mask = [x == yk] */
static og_status g_reduce_max_min(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int mask = eq_mask(b, r.x, r.yk, r.dt);
    int count = og_rule_reduce(b, "ReduceSum", mask, r.axes, r.k, true);
    dx[0] = og_gb_op2(b, "Mul", og_gb_op2(b, "Div", mask, count), r.dyk);
    return og_gb_status(b);
}

/* dx = others dyk, others = P ([z == 0] / x1 + [x == 0] [z == 1]) with zm = [x == 0],
 * x1 = x + zm (zeros replaced by 1), P = prod(x1), z = sum(zm) */
static og_status g_reduce_prod(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    red r;
    if (!red_setup(b, n, dy, &r)) return og_gb_status(b);
    int zero = og_gb_scalar_like(b, 0, r.x), one = og_gb_scalar_like(b, 1, r.x);
    int zm = eq_mask(b, r.x, zero, r.dt);
    int x1 = og_gb_op2(b, "Add", r.x, zm);
    int p = og_rule_reduce(b, "ReduceProd", x1, r.axes, r.k, true);
    int z = og_rule_reduce(b, "ReduceSum", zm, r.axes, r.k, true);
    int none = og_gb_op2(b, "Div", eq_mask(b, z, zero, r.dt), x1);
    int single = og_gb_op2(b, "Mul", zm, eq_mask(b, z, one, r.dt));
    int others = og_gb_op2(b, "Mul", p, og_gb_op2(b, "Add", none, single));
    dx[0] = og_gb_op2(b, "Mul", others, r.dyk);
    return og_gb_status(b);
}

/* ---- CumSum -------------------------------------------------------------------------- */

/* y_j = sum_{i <= j} x_i (i < j exclusive) => dx_i = sum_{j >= i} dy_j (j > i exclusive) */
static og_status g_cumsum(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!og_gb_wants(b, n, 0)) return og_gb_status(b);
    dx[0] = og_gb_op2(b, "CumSum", dy[0], n->in[1]);
    int node = og_gb_last(b);
    og_gb_attr_int(b, node, "exclusive", og_attr_int(n, "exclusive", 0));
    og_gb_attr_int(b, node, "reverse", !og_attr_int(n, "reverse", 0));
    return og_gb_status(b);
}

/* ---- TopK ---------------------------------------------------------------------------- */

static og_status g_topk(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0) || dy[0] < 0) return og_gb_status(b);
    if (og_gb_opset(b) < 9)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "TopK gradient needs opset >= 9 (Scatter)");
    int r = og_rule_rank_of(b, n, IN(0), "the input");
    if (r < 0) return og_gb_status(b);
    int axis = og_rule_axis(b, n, og_attr_int(n, "axis", -1), r);
    if (axis < 0) return og_gb_status(b);
    dx[0] = og_rule_scatter_elements(b, og_rule_zeros_like(b, IN(0)), OUT(1), dy[0], axis, NULL);
    return og_gb_status(b);
}

/* Hardmax: piecewise constant in x (the one-hot of the maximum), zero gradient: no
 * contribution */
static og_status g_hardmax(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    (void)n;
    (void)dy;
    (void)dx;
    return og_gb_status(b);
}

const og_grad_rule og_grad_reduce[] = {{"ReduceSum", "", g_reduce_sum},
                                       {"ReduceMean", "", g_reduce_mean},
                                       {"ReduceSumSquare", "", g_reduce_sum_square},
                                       {"ReduceL1", "", g_reduce_l1},
                                       {"ReduceL2", "", g_reduce_l2},
                                       {"ReduceLogSum", "", g_reduce_log_sum},
                                       {"ReduceLogSumExp", "", g_reduce_log_sum_exp},
                                       {"ReduceMax", "", g_reduce_max_min},
                                       {"ReduceMin", "", g_reduce_max_min},
                                       {"ReduceProd", "", g_reduce_prod},
                                       {"Softmax", "", g_softmax},
                                       {"LogSoftmax", "", g_log_softmax},
                                       {"CumSum", "", g_cumsum},
                                       {"TopK", "", g_topk},
                                       {"Hardmax", "", g_hardmax},
                                       {0}};
