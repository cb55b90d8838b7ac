/* binary.c: gradients of the binary and variadic elementwise ops of src/ops/binary.c.
 * y is the node's output, dy the gradient reaching it; inputs that broadcast get their
 * gradient summed back to their own shape (og_gb_sum_to_input).
 *   Add, Sub: d(a + b) = dy, dy;  d(a − b) = dy, −dy
 *   Mul, Div: d(a·b) = dy·b, dy·a;  d(a / b) = dy / b, dy·y / (−b)
 *   Pow:      da = dy·b·a^(b−1), db = dy·y·log(a) (with PyTorch's zeros at the edges); a
 *             constant exponent e folds into dy·e·a^(e−1) (dy·2a for e = 2)
 *   PRelu:    dx = dy where x >= 0, dy·slope where x < 0;  dslope = Σ dy·x where x < 0
 *   Sum, Mean: every input gets dy (over N for Mean);  Max, Min: the inputs attaining y share
 *             dy evenly;  Where: dy goes to the chosen branch, none to the condition */
#include <math.h>

#include "grad/rule_util.h"

/* ---- Add, Sub, Mul, Div -------------------------------------------------------------- */

/* d(a + b) = dy, dy;  d(a - b) = dy, -dy */
static og_status add_sub(og_gb *b, const og_node *n, const int *dy, int *dx, bool sub)
{
    if (WANTS(0)) dx[0] = og_gb_sum_to_input(b, dy[0], n, 0, 0);
    if (WANTS(1)) {
        int g = og_gb_sum_to_input(b, dy[0], n, 1, 0);
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
    if (WANTS(0)) dx[0] = og_gb_sum_to_input(b, og_gb_op2(b, "Mul", dy[0], IN(1)), n, 0, 0);
    if (WANTS(1)) dx[1] = og_gb_sum_to_input(b, og_gb_op2(b, "Mul", dy[0], IN(0)), n, 1, 0);
    return og_gb_status(b);
}

/* d(a / b) = dy / b, dy * y / (-b) (the sign on b, which is at most y's size: layer norm
 * divides by a per-row scale) */
static og_status g_div(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (WANTS(0)) dx[0] = og_gb_sum_to_input(b, og_gb_op2(b, "Div", dy[0], IN(1)), n, 0, 0);
    if (WANTS(1)) {
        int t = og_gb_op2(b, "Div", og_gb_op2(b, "Mul", dy[0], OUT(0)), og_gb_op1(b, "Neg", IN(1)));
        dx[1] = og_gb_sum_to_input(b, t, n, 1, 0);
    }
    return og_gb_status(b);
}

/* ---- Pow, PRelu ---------------------------------------------------------------------- */

/* pow, y = a^b:
 *   da = sum_to(dy * b * a^(b - 1))   (0 where b == 0, as PyTorch)
 *   db = sum_to(dy * y * log(a))      (0 where a == 0 and b >= 0, as PyTorch)
 * The masks need Equal on floats (opset 11); before, the plain formulas.  A float16 or
 * bfloat16 base or exponent: all of it in float32, each gradient rounded back once. */
/* The value of v when it is a one-element constant fixed at build time (not a graph input,
 * which a caller may override). */
static bool known_scalar(og_gb *b, int v, double *out)
{
    const og_value *val = og_gb_value(b, v);
    if (!val->known || val->is_graph_input || val->known->numel != 1) return false;
    *out = og_tensor_get_f64(val->known, 0);
    return true;
}

/* pow by a constant exponent e != 0 of a float base (layer norm's variance squares by 2),
 * only da wanted: da = sum_to(dy * e * a^(e - 1)), dy * 2a for e = 2 and dy for e = 1, in
 * one to three nodes instead of the general rule's seven.  False when it does not apply. */
static bool pow_const(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    og_dtype at = og_gb_value(b, IN(0))->dtype;
    double e;
    if (WANTS(1) || !known_scalar(b, IN(1), &e) || e == 0 || !isfinite(e) ||
        (at != OG_FLOAT && at != OG_DOUBLE))
        return false;
    int g = dy[0];
    if (e == 2)
        g = og_rule_mul(b, g, og_rule_add(b, IN(0), IN(0)));
    else if (e != 1)
        g = og_rule_mul(b, g,
                        og_rule_mul(b, og_gb_op2(b, "Pow", IN(0), og_gb_scalar(b, e - 1, at)),
                                    og_gb_scalar(b, e, at)));
    dx[0] = og_gb_sum_to_input(b, g, n, 0, 0);
    return true;
}

static og_status g_pow(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (pow_const(b, n, dy, dx)) return og_gb_status(b);
    og_dtype at = og_gb_value(b, IN(0))->dtype, et = og_gb_value(b, IN(1))->dtype;
    bool half = og_rule_is_half(at) || og_rule_is_half(et);
    int a = og_rule_widen(b, IN(0)), e = og_rule_widen(b, IN(1)), y = og_rule_widen(b, OUT(0));
    int dy0 = og_rule_widen_as(b, dy[0], OUT(0));
    /* the widened values' types (emitted values have none to read yet) */
    og_dtype dt = og_rule_is_half(at) ? OG_FLOAT : at, ew = og_rule_is_half(et) ? OG_FLOAT : et;
    bool masks = og_gb_opset(b) >= 11;
    int ef = ew == dt ? e : og_rule_cast(b, e, dt);
    if (WANTS(0)) {
        int g = og_rule_mul(b, og_rule_mul(b, dy0, ef),
                            og_gb_op2(b, "Pow", a, og_rule_sub(b, ef, og_gb_scalar(b, 1, dt))));
        if (masks)
            g = og_gb_op3(b, "Where", og_gb_op2(b, "Equal", ef, og_gb_scalar(b, 0, dt)),
                          og_gb_scalar(b, 0, dt), g);
        dx[0] = og_gb_sum_to_input(b, g, n, 0, 0);
        if (half && dt != at) dx[0] = og_rule_cast(b, dx[0], at);
    }
    if (WANTS(1)) {
        int g = og_rule_mul(b, og_rule_mul(b, dy0, y), og_gb_op1(b, "Log", a));
        if (masks) {
            int z = og_gb_op2(b, "And", og_gb_op2(b, "Equal", a, og_gb_scalar(b, 0, dt)),
                              og_gb_op1(b, "Not", og_gb_op2(b, "Less", e, og_gb_scalar(b, 0, ew))));
            g = og_gb_op3(b, "Where", z, og_gb_scalar(b, 0, dt), g);
        }
        if (half) { /* summed in float32, then rounded to the exponent's type */
            dx[1] = og_gb_sum_to_input(b, g, n, 1, 0);
            if (et != dt) dx[1] = og_rule_cast(b, dx[1], et);
        } else { /* a float exponent of another type (13+) */
            if (et != dt) g = og_rule_cast(b, g, et);
            dx[1] = og_gb_sum_to_input(b, g, n, 1, 0);
        }
    }
    return og_gb_status(b);
}

/* prelu, y = x < 0 ? slope x : x:
 *   dx = x < 0 ? dy * slope : dy;  dslope = sum_to(x < 0 ? dy * x : 0) */
static og_status g_prelu(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0), s = IN(1);
    int negx = og_gb_op2(b, "Less", x, og_gb_scalar_like(b, 0, x));
    if (WANTS(0)) dx[0] = og_rule_select(b, negx, og_rule_mul(b, dy[0], s), dy[0], x);
    if (WANTS(1))
        dx[1] =
            og_gb_sum_to_input(b, og_rule_where0(b, negx, og_rule_mul(b, dy[0], x), x), n, 1, 0);
    return og_gb_status(b);
}

/* ---- Sum, Mean, Max, Min, Where ------------------------------------------------------ */

/* sum: dx_i = sum_to(dy);  mean: dx_i = sum_to(dy) / N */
static og_status sum_mean(og_gb *b, const og_node *n, const int *dy, int *dx, bool mean)
{
    int g = mean ? og_rule_mul(b, dy[0], og_gb_scalar_like(b, 1.0 / n->n_in, OUT(0))) : dy[0];
    for (int i = 0; i < n->n_in; i++)
        if (WANTS(i)) dx[i] = og_gb_sum_to_input(b, g, n, i, 0);
    return og_gb_status(b);
}

static og_status g_sum(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return sum_mean(b, n, dy, dx, false);
}

static og_status g_mean(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return sum_mean(b, n, dy, dx, true);
}

/* max / min: m_i = (x_i attains y), count = sum_j m_j;  dx_i = sum_to(dy * m_i / count)
 * (ties split evenly).  x_i attains the max iff not x_i < y (Equal on floats needs 11). */
static og_status max_min(og_gb *b, const og_node *n, const int *dy, int *dx, bool is_max)
{
    int y = OUT(0);
    og_dtype dt = og_gb_value(b, y)->dtype;
    if (n->n_in == 1) {
        dx[0] = dy[0];
        return og_gb_status(b);
    }
    int *m = og_malloc(og_gb_alloc(b), (size_t)n->n_in * sizeof *m); /* any number of inputs */
    if (!m) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n->n_in; i++)
        m[i] = og_rule_cast(
            b, og_gb_op1(b, "Not", og_gb_op2(b, is_max ? "Less" : "Greater", IN(i), y)), dt);
    int g = og_gb_status(b) ? -1 : og_rule_div(b, dy[0], og_gb_op(b, "Sum", n->n_in, m));
    for (int i = 0; i < n->n_in && g >= 0; i++)
        if (WANTS(i)) dx[i] = og_gb_sum_to_input(b, og_rule_mul(b, g, m[i]), n, i, 0);
    og_free(og_gb_alloc(b), m);
    return og_gb_status(b);
}

static og_status g_max(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return max_min(b, n, dy, dx, true);
}

static og_status g_min(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return max_min(b, n, dy, dx, false);
}

/* where(c, x, y): dx = sum_to(c ? dy : 0), dy_ = sum_to(c ? 0 : dy); c gets none */
static og_status g_where(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int c = IN(0), y = OUT(0);
    if (WANTS(1))
        dx[1] = og_gb_sum_to_input(b, og_gb_op3(b, "Where", c, dy[0], og_gb_scalar_like(b, 0, y)),
                                   n, 1, 0);
    if (WANTS(2))
        dx[2] = og_gb_sum_to_input(b, og_gb_op3(b, "Where", c, og_gb_scalar_like(b, 0, y), dy[0]),
                                   n, 2, 0);
    return og_gb_status(b);
}

const og_grad_rule og_grad_binary[] = {
    {"Add", "", g_add}, {"Sub", "", g_sub},     {"Mul", "", g_mul},     {"Div", "", g_div},
    {"Pow", "", g_pow}, {"PRelu", "", g_prelu}, {"Max", "", g_max},     {"Min", "", g_min},
    {"Sum", "", g_sum}, {"Mean", "", g_mean},   {"Where", "", g_where}, {0}};
