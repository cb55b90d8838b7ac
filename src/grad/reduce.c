/* reduce.c: gradients of reductions and of (log-)softmax.
 *   ReduceSum:  dx = dy broadcast back over the reduced axes
 *   ReduceMean: the same, divided by the number of elements reduced
 *   Softmax:    dx = y * (dy - sum(dy * y))          (sums over the normalized axes)
 *   LogSoftmax: dx = dy - exp(y) * sum(dy) */
#include <string.h>

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

const og_grad_rule og_grad_reduce[] = {{"ReduceSum", "", g_reduce_sum},
                                       {"ReduceMean", "", g_reduce_mean},
                                       {"Softmax", "", g_softmax},
                                       {"LogSoftmax", "", g_log_softmax},
                                       {0}};
