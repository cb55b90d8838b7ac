/* elementwise.c: gradients of the elementwise ops.  y is the node's output, x its input,
 * dy the gradient reaching y; broadcast inputs get their gradient summed back to their
 * own shape (og_gb_sum_to). */
#include "grad/rule_util.h"

/* d(a + b) = dy, dy;  d(a - b) = dy, -dy */
static og_status add_sub(og_gb *b, const og_node *n, const int *dy, int *dx, bool sub)
{
    if (WANTS(0)) dx[0] = og_gb_sum_to(b, dy[0], OUT(0), IN(0));
    if (WANTS(1)) {
        int g = og_gb_sum_to(b, dy[0], OUT(0), IN(1));
        dx[1] = sub ? og_gb_op1(b, "Neg", g) : g;
    }
    return og_gb_status(b);
}

static og_status g_add(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return add_sub(b, n, dy, dx, false);
}

static og_status g_sub(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return add_sub(b, n, dy, dx, true);
}

/* d(a * b) = dy * b, dy * a */
static og_status g_mul(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (WANTS(0)) dx[0] = og_gb_sum_to(b, og_gb_op2(b, "Mul", dy[0], IN(1)), OUT(0), IN(0));
    if (WANTS(1)) dx[1] = og_gb_sum_to(b, og_gb_op2(b, "Mul", dy[0], IN(0)), OUT(0), IN(1));
    return og_gb_status(b);
}

/* d(a / b) = dy / b, -dy * y / b */
static og_status g_div(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (WANTS(0)) dx[0] = og_gb_sum_to(b, og_gb_op2(b, "Div", dy[0], IN(1)), OUT(0), IN(0));
    if (WANTS(1)) {
        int t = og_gb_op2(b, "Div", og_gb_op2(b, "Mul", dy[0], OUT(0)), IN(1));
        dx[1] = og_gb_sum_to(b, og_gb_op1(b, "Neg", t), OUT(0), IN(1));
    }
    return og_gb_status(b);
}

static og_status g_neg(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = og_gb_op1(b, "Neg", dy[0]);
    return og_gb_status(b);
}

static og_status g_identity(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    dx[0] = dy[0];
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

const og_grad_rule og_grad_elementwise[] = {{"Add", "", g_add},
                                            {"Sub", "", g_sub},
                                            {"Mul", "", g_mul},
                                            {"Div", "", g_div},
                                            {"Neg", "", g_neg},
                                            {"Identity", "", g_identity},
                                            {"Relu", "", g_relu},
                                            {"Sigmoid", "", g_sigmoid},
                                            {"Tanh", "", g_tanh},
                                            {"Exp", "", g_exp},
                                            {"Log", "", g_log},
                                            {"Sqrt", "", g_sqrt},
                                            {0}};
