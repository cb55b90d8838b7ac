/* pool_lp_roi.c: the gradient of GlobalLpPool (src/ops/pool_lp_roi.c).
 *   y = (sum_s |x_s|^p)^(1/p)  =>  dx = dy * sign(x) |x|^(p-1) / y^(p-1)
 *                                     = dy * x |x|^(p-2) / y^(p-1)   (p >= 2),
 * and dx = dy * sign(x) for p = 1, with sign(x) = [x > 0] - [x < 0].  A channel whose y is 0
 * (all inputs 0) gets 0, a subgradient: with m = [y > 0], the division is by
 * y^(p-1) + (1 - m) and the result is multiplied by m, which needs neither Where nor Sign (the
 * rule works from opset 7).  MaxRoiPool has no rule: a gradient through it fails naming the
 * op. */
#include "grad/rule_util.h"

static int as_float(og_gb *b, int cond, int like)
{
    return og_rule_cast(b, cond, og_gb_value(b, like)->dtype);
}

static og_status g_global_lp(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (!WANTS(0) || dy[0] < 0) return og_gb_status(b);
    int64_t p = og_attr_int(n, "p", 2);
    int x = IN(0), zero = og_gb_scalar_like(b, 0.0, x);
    if (p == 1) {
        int sign = og_rule_sub(b, as_float(b, og_gb_op2(b, "Greater", x, zero), x),
                               as_float(b, og_gb_op2(b, "Less", x, zero), x));
        dx[0] = og_rule_mul(b, dy[0], sign);
        return og_gb_status(b);
    }
    int y = og_gb_forward_output(b, n, 0);
    int t = p == 2 ? x
                   : og_rule_mul(b, x,
                                 og_gb_op2(b, "Pow", og_gb_op1(b, "Abs", x),
                                           og_gb_scalar_like(b, (double)(p - 2), x)));
    int s = p == 2 ? y : og_gb_op2(b, "Pow", y, og_gb_scalar_like(b, (double)(p - 1), x));
    int m = as_float(b, og_gb_op2(b, "Greater", y, zero), x);
    int safe = og_rule_add(b, s, og_rule_sub(b, og_gb_scalar_like(b, 1.0, x), m));
    dx[0] = og_rule_mul(b, og_rule_mul(b, dy[0], og_rule_div(b, t, safe)), m);
    return og_gb_status(b);
}

const og_grad_rule og_grad_pool_lp_roi[] = {{"GlobalLpPool", "", g_global_lp}, {0}};
