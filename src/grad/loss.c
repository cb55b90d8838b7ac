/* loss.c: gradients of the classification losses of src/ops/loss.c.
 *
 * Losses, with i running over the label positions [N, d1, ...], t_i the label, m_i = 0 where
 * t_i == ignore_index (else 1), w_i = weight[t_i] m_i (m_i without a weight) and the
 * forward loss l_i = -X[i, t_i] w_i, reduced by none / sum / mean (sum divided by sum_i w_i):
 *   NegativeLogLikelihoodLoss: dX[i, c] = -[c == t_i] w_i g_i, with g = dy (none, sum) or
 *                              dy / sum_i w_i (mean)
 *                              dweight[c] = sum_i [t_i == c] m_i (-X[i, t_i] - L) g_i, with L
 *                              the mean loss for mean, 0 otherwise
 *   SoftmaxCrossEntropyLoss:   the same on P = log_softmax(scores, axis 1), plus the gradient
 *                              of the log_prob output: dP; dscores = dP - softmax sum_c dP
 * Labels are not differentiable. */
#include <string.h>

#include "grad/rule_util.h"

static og_status loss_common(og_gb *b, const og_node *n, const int *dy, int *dx, bool sce)
{
    int X = n->in[0], T = n->in[1], W = n->n_in > 2 ? n->in[2] : -1;
    const og_value *xv = og_gb_value(b, X);
    int rank = xv->rank;
    if (rank < 2) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    if (og_gb_opset(b) < 12)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs opset >= 12");
    og_dtype dt = xv->dtype, tt = og_gb_value(b, T)->dtype;
    const char *red_s = og_attr_string(n, "reduction", "mean");
    bool none = strcmp(red_s, "none") == 0, mean = strcmp(red_s, "mean") == 0;
    if (!none && !mean && strcmp(red_s, "sum") != 0)
        return og_gb_fail(b, n, OG_ERR_MODEL, "bad reduction '%s'", red_s);
    /* an ignore_index outside the labels' type matches no label (int32 labels widen to
     * int64 in the kernel's comparison): no mask then */
    int64_t ignore = og_attr_int(n, "ignore_index", 0);
    bool has_ignore = og_node_attr(n, "ignore_index") != NULL &&
                      (tt != OG_INT32 || (ignore >= INT32_MIN && ignore <= INT32_MAX));
    const int64_t ax1[1] = {1};
    int64_t lab_axes[OG_MAX_RANK], other_axes[OG_MAX_RANK]; /* of the labels; of X but 1 */
    for (int d = 0; d < rank - 1; d++) lab_axes[d] = d;
    other_axes[0] = 0;
    for (int d = 2; d < rank; d++) other_axes[d - 1] = d;

    /* P: the log-probabilities (X for NegativeLogLikelihoodLoss) */
    int P = X;
    if (sce) {
        if (n->n_out > 1 && n->out[1] >= 0)
            P = n->out[1];
        else
            P = og_gb_op2(b, "Sub", X, og_rule_reduce(b, "ReduceLogSumExp", X, ax1, 1, true));
    }
    /* mask of counted labels, labels made safe to index with, per-label weights w */
    int m = -1, Ts = T;
    if (has_ignore) {
        int ig = og_gb_op2(b, "Equal", T, og_gb_scalar_i64(b, ignore, tt));
        m = og_rule_cast(b, og_gb_op1(b, "Not", ig), dt);
        Ts = og_gb_op3(b, "Where", ig, og_gb_scalar_i64(b, 0, tt), T);
    }
    int w = m; /* -1: all ones */
    if (W >= 0) {
        w = og_gb_op2(b, "Gather", W, Ts);
        if (m >= 0) w = og_gb_op2(b, "Mul", w, m);
    }
    /* one-hot labels along axis 1, made from int64 throughout (the combination runtimes
     * implement), then cast */
    int64_t C = xv->dims[1];
    int depth = C >= 0
                    ? og_gb_const_i64(b, &C, 1)
                    : og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", X), og_gb_const_i64(b, ax1, 1));
    const int64_t onoff[2] = {0, 1};
    int lab64 = tt == OG_INT64 ? Ts : og_rule_cast(b, Ts, OG_INT64);
    int oh = og_gb_op3(b, "OneHot", lab64, depth, og_gb_const_i64(b, onoff, 2));
    og_gb_attr_int(b, og_gb_last(b), "axis", 1);
    oh = og_rule_cast(b, oh, dt);

    /* g: the gradient reaching each l_i (a scalar for sum and mean) */
    int g = -1;
    if (dy[0] >= 0) {
        g = dy[0];
        if (mean) {
            int ws = w >= 0 ? og_gb_reduce_sum(b, w, lab_axes, rank - 1, false)
                            : og_rule_cast(b, og_gb_op1(b, "Size", T), dt);
            g = og_gb_op2(b, "Div", g, ws);
        }
    }
    int dP = -1;
    if (g >= 0) {
        int gw = w >= 0 ? og_gb_op2(b, "Mul", g, w) : g;
        if (none || w >= 0) gw = og_rule_unsqueeze(b, gw, ax1, 1);
        dP = og_gb_op1(b, "Neg", og_gb_op2(b, "Mul", oh, gw));
    }
    if (sce && n->n_out > 1 && dy[1] >= 0) dP = dP >= 0 ? og_gb_op2(b, "Add", dP, dy[1]) : dy[1];
    if (dP >= 0 && og_gb_wants(b, n, 0)) {
        if (sce) {
            int s = og_gb_reduce_sum(b, dP, ax1, 1, true);
            dx[0] = og_gb_op2(b, "Sub", dP, og_gb_op2(b, "Mul", og_gb_op1(b, "Exp", P), s));
        } else {
            dx[0] = dP;
        }
    }
    if (W >= 0 && g >= 0 && og_gb_wants(b, n, 2)) {
        /* v_i = m_i (-P[i, t_i] - L) g_i, summed into the labels' classes */
        int pt = og_gb_op2(b, "GatherElements", P, og_rule_unsqueeze(b, Ts, ax1, 1));
        og_gb_attr_int(b, og_gb_last(b), "axis", 1);
        int v = og_gb_op1(b, "Neg", pt);
        if (mean) v = og_gb_op2(b, "Sub", v, n->out[0]);
        int u = m >= 0 ? og_gb_op2(b, "Mul", g, m) : g;
        if (none || m >= 0) u = og_rule_unsqueeze(b, u, ax1, 1);
        v = og_gb_op2(b, "Mul", v, u);
        dx[2] = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", oh, v), other_axes, rank - 1, false);
    }
    return og_gb_status(b);
}

static og_status g_nll(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return loss_common(b, n, dy, dx, false);
}

static og_status g_sce(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    return loss_common(b, n, dy, dx, true);
}

const og_grad_rule og_grad_loss[] = {
    {"NegativeLogLikelihoodLoss", "", g_nll}, {"SoftmaxCrossEntropyLoss", "", g_sce}, {0}};
