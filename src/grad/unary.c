/* unary.c: gradients of the unary elementwise ops of src/ops/unary.c: the core ones (Neg,
 * Relu, Sigmoid, Tanh, Exp, Log, Sqrt), unary math (Abs, Reciprocal, Erf, trigonometric and
 * hyperbolic functions), parametric activations (Elu, Selu, LeakyRelu, HardSigmoid,
 * Softplus, Softsign, Celu, ThresholdedRelu, Shrink, HardSwish, Mish, Gelu), Clip, and the
 * piecewise-constant Sign/Floor/Ceil/Round.
 *
 * x is the node's first input, y its output, dy the gradient reaching y.  Clip's bounds
 * broadcast and get their gradient summed back to their own shape (og_gb_sum_to). */
#include <math.h>
#include <string.h>

#include "grad/rule_util.h"

#define PI      3.14159265358979323846
#define SQRT1_2 0.70710678118654752440

/* dx = dy * d for a unary op */
static og_status chain(og_gb *b, const og_node *n, const int *dy, int *dx, int d)
{
    dx[0] = og_rule_mul(b, dy[0], d);
    return og_gb_status(b);
}

/* neg: dx = -dy */
static og_status g_neg(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = og_gb_op1(b, "Neg", dy[0]);
    return og_gb_status(b);
}

/* relu: dy where y > 0 */
static og_status g_relu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int pos = og_gb_op2(b, "Greater", OUT(0), og_gb_scalar_like(b, 0, OUT(0)));
    dx[0] = og_rule_where0(b, pos, dy[0], OUT(0));
    return og_gb_status(b);
}

/* sigmoid: dy * y * (1 - y) */
static og_status g_sigmoid(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int one_minus = og_gb_op2(b, "Sub", og_gb_scalar_like(b, 1, OUT(0)), OUT(0));
    dx[0] = og_gb_op2(b, "Mul", dy[0], og_gb_op2(b, "Mul", OUT(0), one_minus));
    return og_gb_status(b);
}

/* tanh: dy * (1 - y^2) */
static og_status g_tanh(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int y2 = og_gb_op2(b, "Mul", OUT(0), OUT(0));
    int d = og_gb_op2(b, "Sub", og_gb_scalar_like(b, 1, OUT(0)), y2);
    dx[0] = og_gb_op2(b, "Mul", dy[0], d);
    return og_gb_status(b);
}

/* exp: dy * y */
static og_status g_exp(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = og_gb_op2(b, "Mul", dy[0], OUT(0));
    return og_gb_status(b);
}

/* log: dy / x */
static og_status g_log(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = og_gb_op2(b, "Div", dy[0], IN(0));
    return og_gb_status(b);
}

/* sqrt: dy / (2 y) */
static og_status g_sqrt(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int two_y = og_gb_op2(b, "Mul", og_gb_scalar_like(b, 2, OUT(0)), OUT(0));
    dx[0] = og_gb_op2(b, "Div", dy[0], two_y);
    return og_gb_status(b);
}

/* ---- unary math ---------------------------------------------------------------------- */

/* abs: dy * sign(x) (0 at 0) */
static og_status g_abs(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0), s;
    if (og_gb_opset(b) >= 9) {
        s = og_gb_op1(b, "Sign", x);
    } else {
        og_dtype dt = og_gb_value(b, x)->dtype;
        s = og_rule_sub(b,
                        og_rule_cast(b, og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, 0, x)), dt),
                        og_rule_cast(b, og_gb_op2(b, "Less", x, og_gb_scalar_like(b, 0, x)), dt));
    }
    return chain(b, n, dy, dx, s);
}

/* reciprocal: -dy * y^2 */
static og_status g_reciprocal(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = og_gb_op1(b, "Neg", og_rule_mul(b, dy[0], og_rule_mul(b, OUT(0), OUT(0))));
    return og_gb_status(b);
}

/* erf: dy * 2/sqrt(pi) * exp(-x^2), as dy * exp(log(2/sqrt(pi)) - x^2): the constant
 * inside the exponent, a pass less over x's size */
static og_status g_erf(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    int c = og_gb_scalar_like(b, log(2.0 / sqrt(PI)), x);
    return chain(b, n, dy, dx, og_gb_op1(b, "Exp", og_rule_sub(b, c, og_rule_mul(b, x, x))));
}

/* sin: dy * cos(x) */
static og_status g_sin(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return chain(b, n, dy, dx, og_gb_op1(b, "Cos", IN(0)));
}

/* cos: -dy * sin(x) */
static og_status g_cos(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return chain(b, n, dy, dx, og_gb_op1(b, "Neg", og_gb_op1(b, "Sin", IN(0))));
}

/* tan: dy * (1 + y^2) */
static og_status g_tan(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int y = OUT(0);
    return chain(b, n, dy, dx, og_rule_add(b, og_gb_scalar_like(b, 1, y), og_rule_mul(b, y, y)));
}

/* atan: dy / (1 + x^2) */
static og_status g_atan(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    dx[0] = og_rule_div(b, dy[0], og_rule_add(b, og_gb_scalar_like(b, 1, x), og_rule_mul(b, x, x)));
    return og_gb_status(b);
}

/* asin: dy / sqrt(1 - x^2);  acos: -dy / sqrt(1 - x^2) */
static og_status asin_acos(og_gb *b, const og_node *n, const int *dy, int *dx, bool neg)
{
    int x = IN(0);
    int r = og_gb_op1(b, "Sqrt", og_rule_sub(b, og_gb_scalar_like(b, 1, x), og_rule_mul(b, x, x)));
    int g = neg ? og_gb_op1(b, "Neg", dy[0]) : dy[0];
    dx[0] = og_rule_div(b, g, r);
    return og_gb_status(b);
}

static og_status g_asin(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return asin_acos(b, n, dy, dx, false);
}

static og_status g_acos(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return asin_acos(b, n, dy, dx, true);
}

/* sinh: dy * cosh(x) */
static og_status g_sinh(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return chain(b, n, dy, dx, og_gb_op1(b, "Cosh", IN(0)));
}

/* cosh: dy * sinh(x) */
static og_status g_cosh(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return chain(b, n, dy, dx, og_gb_op1(b, "Sinh", IN(0)));
}

/* asinh: dy / sqrt(x^2 + 1);  acosh: dy / sqrt(x^2 - 1) */
static og_status asinh_acosh(og_gb *b, const og_node *n, const int *dy, int *dx, double c)
{
    int x = IN(0);
    dx[0] = og_rule_div(
        b, dy[0],
        og_gb_op1(b, "Sqrt", og_rule_add(b, og_rule_mul(b, x, x), og_gb_scalar_like(b, c, x))));
    return og_gb_status(b);
}

static og_status g_asinh(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return asinh_acosh(b, n, dy, dx, 1);
}

static og_status g_acosh(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return asinh_acosh(b, n, dy, dx, -1);
}

/* atanh: dy / (1 - x^2) */
static og_status g_atanh(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    dx[0] = og_rule_div(b, dy[0], og_rule_sub(b, og_gb_scalar_like(b, 1, x), og_rule_mul(b, x, x)));
    return og_gb_status(b);
}

/* Sign, Floor, Ceil, Round: piecewise constant, zero gradient.  No contribution: the
 * builder fills zeros for trained weights and inputs, and an intermediate value without
 * contributions has none to pass on. */
static og_status g_zero(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    (void)n;
    (void)dy;
    (void)dx;
    return og_gb_status(b);
}

/* ---- parametric activations ---------------------------------------------------------- */

/* elu: x > 0 ? dy : dy * (y + alpha) */
static og_status g_elu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0), y = OUT(0);
    double alpha = og_attr_float(n, "alpha", 1.0f);
    int pos = og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, 0, x));
    int neg = og_rule_mul(b, dy[0], og_rule_add(b, y, og_gb_scalar_like(b, alpha, y)));
    dx[0] = og_rule_select(b, pos, dy[0], neg, y);
    return og_gb_status(b);
}

/* selu: x > 0 ? gamma * dy : dy * (y + gamma * alpha) */
static og_status g_selu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0), y = OUT(0);
    double alpha = og_attr_float(n, "alpha", 1.67326319217681884765625f);
    double gamma = og_attr_float(n, "gamma", 1.05070102214813232421875f);
    int pos = og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, 0, x));
    int d = og_rule_select(b, pos, og_gb_scalar_like(b, gamma, y),
                           og_rule_add(b, y, og_gb_scalar_like(b, gamma * alpha, y)), y);
    return chain(b, n, dy, dx, d);
}

/* leaky relu: x > 0 ? dy : alpha * dy */
static og_status g_leaky_relu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    double alpha = og_attr_float(n, "alpha", 0.01f);
    int pos = og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, 0, x));
    return chain(
        b, n, dy, dx,
        og_rule_select(b, pos, og_gb_scalar_like(b, 1, x), og_gb_scalar_like(b, alpha, x), x));
}

/* hard sigmoid: dy * alpha where 0 < alpha x + beta < 1, else 0 */
static og_status g_hard_sigmoid(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    double alpha = og_attr_float(n, "alpha", 0.2f), beta = og_attr_float(n, "beta", 0.5f);
    int t = og_rule_add(b, og_rule_mul(b, x, og_gb_scalar_like(b, alpha, x)),
                        og_gb_scalar_like(b, beta, x));
    int in = og_gb_op2(b, "And", og_gb_op2(b, "Greater", t, og_gb_scalar_like(b, 0, x)),
                       og_gb_op2(b, "Less", t, og_gb_scalar_like(b, 1, x)));
    dx[0] = og_rule_where0(b, in, og_rule_mul(b, dy[0], og_gb_scalar_like(b, alpha, x)), x);
    return og_gb_status(b);
}

/* softplus: dy * sigmoid(x) */
static og_status g_softplus(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return chain(b, n, dy, dx, og_gb_op1(b, "Sigmoid", IN(0)));
}

/* softsign: dy / (1 + |x|)^2 */
static og_status g_softsign(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    int d = og_rule_add(b, og_gb_scalar_like(b, 1, x), og_gb_op1(b, "Abs", x));
    dx[0] = og_rule_div(b, dy[0], og_rule_mul(b, d, d));
    return og_gb_status(b);
}

/* celu: x > 0 ? dy : dy * exp(x / alpha) */
static og_status g_celu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    double alpha = og_attr_float(n, "alpha", 1.0f);
    int pos = og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, 0, x));
    int e = og_gb_op1(b, "Exp", og_rule_div(b, x, og_gb_scalar_like(b, alpha, x)));
    dx[0] = og_rule_select(b, pos, dy[0], og_rule_mul(b, dy[0], e), x);
    return og_gb_status(b);
}

/* thresholded relu: dy where x > alpha */
static og_status g_thresholded_relu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    double alpha = og_attr_float(n, "alpha", 1.0f);
    dx[0] = og_rule_where0(b, og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, alpha, x)), dy[0], x);
    return og_gb_status(b);
}

/* shrink, y = x < −lambd ? x + bias : x > lambd ? x − bias : 0: dy where |x| > lambd (the
 * comparisons in float32 for the 16-bit floats, as the kernel's with the float attribute) */
static og_status g_shrink(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    og_dtype xt = og_gb_value(b, IN(0))->dtype, ct = og_rule_is_half(xt) ? OG_FLOAT : xt;
    double l = og_attr_float(n, "lambd", 0.5f);
    int x = og_rule_widen_as(b, IN(0), IN(0));
    int out = og_gb_op2(b, "Or", og_gb_op2(b, "Less", x, og_gb_scalar(b, -l, ct)),
                        og_gb_op2(b, "Greater", x, og_gb_scalar(b, l, ct)));
    dx[0] = og_rule_where0(b, out, dy[0], IN(0));
    return og_gb_status(b);
}

/* hard swish, y = x * clamp(x/6 + 1/2, 0, 1):
 *   dx = x < -3 ? 0 : x > 3 ? dy : dy * (x/3 + 1/2)   (PyTorch's choice at the kinks) */
static og_status g_hard_swish(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    int mid = og_rule_add(b, og_rule_mul(b, x, og_gb_scalar_like(b, 1.0 / 3.0, x)),
                          og_gb_scalar_like(b, 0.5, x));
    int hi = og_gb_op2(b, "Greater", x, og_gb_scalar_like(b, 3, x));
    int lo = og_gb_op2(b, "Less", x, og_gb_scalar_like(b, -3, x));
    int d = og_rule_select(b, lo, og_gb_scalar_like(b, 0, x),
                           og_rule_select(b, hi, og_gb_scalar_like(b, 1, x), mid, x), x);
    return chain(b, n, dy, dx, d);
}

/* mish, y = x tanh(sp), sp = softplus(x):
 *   dx = dy * (tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)) */
static og_status g_mish(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    int t = og_gb_op1(b, "Tanh", og_gb_op1(b, "Softplus", x));
    int sech2 = og_rule_sub(b, og_gb_scalar_like(b, 1, x), og_rule_mul(b, t, t));
    int d = og_rule_add(b, t, og_rule_mul(b, og_rule_mul(b, x, og_gb_op1(b, "Sigmoid", x)), sech2));
    return chain(b, n, dy, dx, d);
}

/* gelu, approximate none: y = x Phi(x):  dx = dy * (Phi(x) + x phi(x)),
 *   Phi(x) = (1 + erf(x / sqrt 2)) / 2,  phi(x) = exp(-x^2 / 2) / sqrt(2 pi);
 * approximate tanh: y = x (1 + t) / 2, t = tanh(c (x + 0.044715 x^3)), c = sqrt(2 / pi):
 *   dx = dy * ((1 + t) / 2 + x (1 - t^2) c (1 + 3 * 0.044715 x^2) / 2) */
static og_status g_gelu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0), d;
    const char *approx = og_attr_string(n, "approximate", "none");
    int x2 = og_rule_mul(b, x, x);
    if (strcmp(approx, "tanh") == 0) {
        double c = sqrt(2.0 / PI), a = 0.044715;
        int u = og_rule_mul(
            b, og_gb_scalar_like(b, c, x),
            og_rule_add(b, x, og_rule_mul(b, og_gb_scalar_like(b, a, x), og_rule_mul(b, x2, x))));
        int t = og_gb_op1(b, "Tanh", u);
        int half1t = og_rule_mul(b, og_gb_scalar_like(b, 0.5, x),
                                 og_rule_add(b, og_gb_scalar_like(b, 1, x), t));
        int du = og_rule_mul(b, og_gb_scalar_like(b, c, x),
                             og_rule_add(b, og_gb_scalar_like(b, 1, x),
                                         og_rule_mul(b, og_gb_scalar_like(b, 3 * a, x), x2)));
        int sech2 = og_rule_sub(b, og_gb_scalar_like(b, 1, x), og_rule_mul(b, t, t));
        d = og_rule_add(b, half1t,
                        og_rule_mul(b, og_rule_mul(b, og_gb_scalar_like(b, 0.5, x), x),
                                    og_rule_mul(b, sech2, du)));
    } else if (strcmp(approx, "none") == 0) {
        int erf = og_gb_op1(b, "Erf", og_rule_mul(b, x, og_gb_scalar_like(b, SQRT1_2, x)));
        int cdf = og_rule_mul(b, og_gb_scalar_like(b, 0.5, x),
                              og_rule_add(b, og_gb_scalar_like(b, 1, x), erf));
        int pdf =
            og_rule_mul(b, og_gb_scalar_like(b, 1.0 / sqrt(2 * PI), x),
                        og_gb_op1(b, "Exp", og_rule_mul(b, x2, og_gb_scalar_like(b, -0.5, x))));
        d = og_rule_add(b, cdf, og_rule_mul(b, x, pdf));
    } else {
        return og_gb_fail(b, n, OG_ERR_MODEL, "unknown approximate '%s'", approx);
    }
    return chain(b, n, dy, dx, d);
}

/* ---- Clip ---------------------------------------------------------------------------- */

/* clip, y = min(max(x, lo), hi):
 *   above = x > hi or lo > hi (y is hi there), below = x < lo and not above;
 *   dx = dy where neither;  dlo = sum(dy where below);  dhi = sum(dy where above).
 * Opset 6-10: lo and hi are attributes (no gradient); from 11 optional inputs. */
static og_status g_clip(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0), y = OUT(0), lo, hi;
    if (n->since_version < 11) {
        lo = og_node_attr(n, "min") ? og_gb_scalar_like(b, og_attr_float(n, "min", 0), x) : -1;
        hi = og_node_attr(n, "max") ? og_gb_scalar_like(b, og_attr_float(n, "max", 0), x) : -1;
    } else {
        lo = n->n_in > 1 ? IN(1) : -1;
        hi = n->n_in > 2 ? IN(2) : -1;
    }
    int above = hi >= 0 ? og_gb_op2(b, "Greater", x, hi) : -1;
    if (hi >= 0 && lo >= 0) above = og_gb_op2(b, "Or", above, og_gb_op2(b, "Greater", lo, hi));
    int below = lo >= 0 ? og_gb_op2(b, "Less", x, lo) : -1;
    if (below >= 0 && above >= 0) below = og_gb_op2(b, "And", below, og_gb_op1(b, "Not", above));
    if (WANTS(0)) {
        int out = above >= 0 && below >= 0 ? og_gb_op2(b, "Or", above, below)
                  : above >= 0             ? above
                                           : below;
        dx[0] = out >= 0 ? og_rule_where0(b, og_gb_op1(b, "Not", out), dy[0], y) : dy[0];
    }
    if (n->since_version >= 11 && WANTS(1) && below >= 0)
        dx[1] = og_gb_sum_to(b, og_rule_where0(b, below, dy[0], y), y, lo);
    if (n->since_version >= 11 && WANTS(2) && above >= 0)
        dx[2] = og_gb_sum_to(b, og_rule_where0(b, above, dy[0], y), y, hi);
    return og_gb_status(b);
}

const og_grad_rule og_grad_unary[] = {{"Neg", "", g_neg},
                                      {"Relu", "", g_relu},
                                      {"Sigmoid", "", g_sigmoid},
                                      {"Tanh", "", g_tanh},
                                      {"Exp", "", g_exp},
                                      {"Log", "", g_log},
                                      {"Sqrt", "", g_sqrt},
                                      {"Abs", "", g_abs},
                                      {"Reciprocal", "", g_reciprocal},
                                      {"Erf", "", g_erf},
                                      {"Sin", "", g_sin},
                                      {"Cos", "", g_cos},
                                      {"Tan", "", g_tan},
                                      {"Atan", "", g_atan},
                                      {"Asin", "", g_asin},
                                      {"Acos", "", g_acos},
                                      {"Sinh", "", g_sinh},
                                      {"Cosh", "", g_cosh},
                                      {"Asinh", "", g_asinh},
                                      {"Acosh", "", g_acosh},
                                      {"Atanh", "", g_atanh},
                                      {"Elu", "", g_elu},
                                      {"Selu", "", g_selu},
                                      {"LeakyRelu", "", g_leaky_relu},
                                      {"HardSigmoid", "", g_hard_sigmoid},
                                      {"Softplus", "", g_softplus},
                                      {"Softsign", "", g_softsign},
                                      {"Celu", "", g_celu},
                                      {"ThresholdedRelu", "", g_thresholded_relu},
                                      {"Shrink", "", g_shrink},
                                      {"HardSwish", "", g_hard_swish},
                                      {"Mish", "", g_mish},
                                      {"Gelu", "", g_gelu},
                                      {"Clip", "", g_clip},
                                      {"Sign", "", g_zero},
                                      {"Floor", "", g_zero},
                                      {"Ceil", "", g_zero},
                                      {"Round", "", g_zero},
                                      {0}};
