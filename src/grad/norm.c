/* norm.c: gradients of the normalizations and of Dropout (src/ops/norm.c).
 *
 *   Normalizations, with x̂ = (x − μ)·σ⁻¹ and means over the normalized axes:
 *     with batch statistics: dX = σ⁻¹·(g − mean(g) − x̂·mean(g·x̂)), g = dY·scale
 *     with given statistics (BatchNormalization inference): dX = dY·scale·σ⁻¹,
 *          dmean = −Σ dY·scale·σ⁻¹, dvar = −½ Σ dY·(x−mean)·scale·σ⁻³
 *     dscale = Σ dY·x̂, dB = Σ dY (summed back to their shapes)
 *   Statistics outputs (BatchNormalization running/saved mean and var, LayerNormalization
 *   Mean and InvStdDev) are differentiated too: dμ/dx = 1/n, dvar/dx = 2(x−μ)/n.
 *   LayerNormalization reads μ and σ⁻¹ from its forward node's Mean and InvStdDev outputs;
 *   Batch and InstanceNormalization compute the batch statistics again.
 *   Dropout: dx = dy (inference), mask·dy / (1 − ratio) in training mode
 *   GroupNormalization: X viewed as [N, G, −1], batch statistics per row: dX as above with
 *     g = dY·scale; dscale = Σ dY·x̂, dbias = Σ dY over N and the spatial axes (and over the
 *     channels of a group at opset 18, whose scale is per group)
 *   MeanVarianceNormalization: y = (x − μ)/d, d = σ + 1e-9 (the spec's epsilon is outside
 *     the square root): dX = (dY − mean(dY))/d − (x − μ)·mean(dY·(x − μ))/(d²·σ)
 *   LpNormalization: y = x/n, n = ‖x‖ₚ: dX = (dY − t·Σ(dY·y))/n, t = y (p 2), sign(x) (p 1)
 *   LRN: s = bias + α/size·W(x²), y = x·s^−β with W the sum over the channel window
 *     [c − lo, c + hi]: dX = dY·s^−β − 2αβ/size·x·Wᵀ(dY·y/s), where Wᵀ sums over
 *     [c − hi, c + lo]; both windows are a Conv of ones over the channel axis
 */
#include "grad/rule_util.h"
#include "ops/norm.h"

/* x cast to dt when its (forward) type `from` differs */
static int cast_if(og_gb *b, int x, og_dtype from, og_dtype to)
{
    return x < 0 || from == to || from == OG_UNDEFINED ? x : og_rule_cast(b, x, to);
}

/* ---- normalization ------------------------------------------------------------------- */

/* Mean, centered x, 1/σ and x̂ of x over `axes` (keepdims), and the count. */
typedef struct norm_stats {
    int mu, xc, istd, xhat, cnt;
} norm_stats;

static norm_stats batch_stats(og_gb *b, int x, const int64_t *axes, int k, double eps, og_dtype dt)
{
    norm_stats s;
    int sum = og_gb_reduce_sum(b, x, axes, k, true);
    s.cnt = og_rule_reduced_count(b, x, axes, k, sum, dt);
    s.mu = og_gb_op2(b, "Div", sum, s.cnt);
    s.xc = og_gb_op2(b, "Sub", x, s.mu);
    int var = og_gb_op2(b, "Div",
                        og_gb_reduce_sum(b, og_gb_op2(b, "Mul", s.xc, s.xc), axes, k, true), s.cnt);
    s.istd = og_gb_op1(b, "Reciprocal",
                       og_gb_op1(b, "Sqrt", og_gb_op2(b, "Add", var, og_gb_scalar(b, eps, dt))));
    s.xhat = og_gb_op2(b, "Mul", s.xc, s.istd);
    return s;
}

/* σ⁻¹·(g − mean(g) − x̂·mean(g·x̂)) over `axes` */
static int norm_backward(og_gb *b, const norm_stats *s, int gr, const int64_t *axes, int k)
{
    int mg = og_gb_op2(b, "Div", og_gb_reduce_sum(b, gr, axes, k, true), s->cnt);
    int mgx = og_gb_op2(
        b, "Div", og_gb_reduce_sum(b, og_gb_op2(b, "Mul", gr, s->xhat), axes, k, true), s->cnt);
    int t = og_gb_op2(b, "Sub", og_gb_op2(b, "Sub", gr, mg), og_gb_op2(b, "Mul", s->xhat, mgx));
    return og_gb_op2(b, "Mul", s->istd, t);
}

/* dX contributions of gradients gm (of μ) and gv (of the biased variance), either -1;
 * the result has X's shape */
static int stats_backward(og_gb *b, int x, const norm_stats *s, int gm, int gv, og_dtype dt)
{
    int r = -1;
    if (gm >= 0) {
        r = og_gb_op2(b, "Div", gm, s->cnt);
        if (og_gb_opset(b) >= 8)
            r = og_gb_op2(b, "Expand", r, og_gb_op1(b, "Shape", x));
        else
            r = og_gb_op2(b, "Add", r, og_gb_op2(b, "Mul", s->xc, og_gb_scalar(b, 0.0, dt)));
    }
    if (gv >= 0) {
        int two = og_gb_scalar(b, 2.0, dt);
        int t =
            og_gb_op2(b, "Div", og_gb_op2(b, "Mul", og_gb_op2(b, "Mul", gv, two), s->xc), s->cnt);
        r = r < 0 ? t : og_gb_op2(b, "Add", r, t);
    }
    return r;
}

static const og_norm_params *norm_params(og_gb *b, const og_node *n)
{
    const og_norm_params *p = n->params;
    if (!p || !n->parsed)
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the node's attributes were not parsed");
    return p;
}

/* A BatchNormalization parameter (or statistic, or its gradient) v broadcast against X:
 * reshaped to pshape, or, per activation with X's dims known only at run time, given a
 * leading 1 (its shape is X's non-batch dims: [C, D1, ...] -> [1, C, D1, ...]). */
static int bn_bcast(og_gb *b, int v, const int64_t *pshape, int rank, bool unsq)
{
    int64_t zero = 0;
    return unsq ? og_rule_unsqueeze(b, v, &zero, 1) : og_rule_reshape_c(b, v, pshape, rank);
}

static og_status g_batchnorm(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = n->in[0];
    const og_value *X = og_gb_value(b, x);
    int rank = X->rank;
    if (rank < 2) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    /* statistics axes and the shape parameters take to broadcast against X */
    int64_t axes[OG_MAX_RANK], pshape[OG_MAX_RANK];
    int k = 0;
    bool unsq = false; /* per activation, X's dims known at run time only */
    axes[k++] = 0;
    pshape[0] = 1;
    if (p->per_channel) {
        pshape[1] = -1;
        for (int i = 2; i < rank; i++) {
            axes[k++] = i;
            pshape[i] = 1;
        }
    } else {
        for (int i = 1; i < rank; i++) {
            unsq = unsq || !og_dim_known(X->dims[i]);
            pshape[i] = X->dims[i];
        }
    }
    int scale = bn_bcast(b, n->in[1], pshape, rank, unsq);
    int dY = dy[0];
    /* gradients reaching the statistics outputs, in X's dtype and broadcastable shape */
    int ds[5] = {-1, -1, -1, -1, -1};
    for (int j = 1; j < n->n_out && j < 5; j++)
        if (dy[j] >= 0 && n->out[j] >= 0)
            ds[j] = bn_bcast(b, cast_if(b, dy[j], og_gb_value(b, n->out[j])->dtype, dt), pshape,
                             rank, unsq);
    int dmean = -1, dvar = -1; /* gradients of the input mean and var, broadcastable */
    if (!p->training) {
        /* given statistics; the statistics outputs pass input_mean and input_var through */
        int mean = bn_bcast(b, n->in[3], pshape, rank, unsq),
            var = bn_bcast(b, n->in[4], pshape, rank, unsq);
        int istd = og_gb_op1(
            b, "Reciprocal",
            og_gb_op1(b, "Sqrt", og_gb_op2(b, "Add", var, og_gb_scalar(b, p->epsilon, dt))));
        int a = og_gb_op2(b, "Mul", scale, istd);
        if (dY >= 0) {
            int xc = og_gb_op2(b, "Sub", x, mean);
            if (og_gb_wants(b, n, 0)) dx[0] = og_gb_op2(b, "Mul", dY, a);
            int sdy = og_gb_reduce_sum(b, dY, axes, k, true);
            int sdyx = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dY, xc), axes, k, true);
            if (og_gb_wants(b, n, 1))
                dx[1] = og_gb_reshape_like(b, og_gb_op2(b, "Mul", sdyx, istd), n->in[1]);
            if (og_gb_wants(b, n, 2)) dx[2] = og_gb_reshape_like(b, sdy, n->in[2]);
            if (og_gb_wants(b, n, 3)) dmean = og_gb_op1(b, "Neg", og_gb_op2(b, "Mul", sdy, a));
            if (og_gb_wants(b, n, 4)) {
                int i3 = og_gb_op2(b, "Mul", istd, og_gb_op2(b, "Mul", istd, istd));
                int t = og_gb_op2(b, "Mul", og_gb_op2(b, "Mul", sdyx, scale), i3);
                dvar = og_gb_op2(b, "Mul", t, og_gb_scalar(b, -0.5, dt));
            }
        }
        if (ds[1] >= 0) dmean = og_rule_accumulate(b, dmean, ds[1]);
        if (ds[3] >= 0) dmean = og_rule_accumulate(b, dmean, ds[3]);
        if (ds[2] >= 0) dvar = og_rule_accumulate(b, dvar, ds[2]);
        if (ds[4] >= 0) dvar = og_rule_accumulate(b, dvar, ds[4]);
    } else {
        /* batch statistics; running = input·momentum + batch·(1 − momentum) */
        norm_stats s = batch_stats(b, x, axes, k, p->epsilon, dt);
        int gm = -1, gv = -1;
        int mom = og_gb_scalar(b, p->momentum, dt), rest = og_gb_scalar(b, 1.0 - p->momentum, dt);
        if (ds[1] >= 0) {
            gm = og_gb_op2(b, "Mul", ds[1], rest);
            dmean = og_gb_op2(b, "Mul", ds[1], mom);
        }
        if (ds[2] >= 0) {
            gv = og_gb_op2(b, "Mul", ds[2], rest);
            dvar = og_gb_op2(b, "Mul", ds[2], mom);
        }
        if (ds[3] >= 0) gm = og_rule_accumulate(b, gm, ds[3]);
        if (ds[4] >= 0) gv = og_rule_accumulate(b, gv, ds[4]);
        int d0 = -1;
        if (dY >= 0) {
            if (og_gb_wants(b, n, 0))
                d0 = norm_backward(b, &s, og_gb_op2(b, "Mul", dY, scale), axes, k);
            if (og_gb_wants(b, n, 1))
                dx[1] = og_gb_reshape_like(
                    b, og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dY, s.xhat), axes, k, true),
                    n->in[1]);
            if (og_gb_wants(b, n, 2))
                dx[2] = og_gb_reshape_like(b, og_gb_reduce_sum(b, dY, axes, k, true), n->in[2]);
        }
        if (og_gb_wants(b, n, 0)) {
            int st = stats_backward(b, x, &s, gm, gv, dt);
            if (st >= 0) d0 = og_rule_accumulate(b, d0, st);
            dx[0] = d0;
        }
    }
    if (dmean >= 0 && og_gb_wants(b, n, 3))
        dx[3] =
            cast_if(b, og_gb_reshape_like(b, dmean, n->in[3]), dt, og_gb_value(b, n->in[3])->dtype);
    if (dvar >= 0 && og_gb_wants(b, n, 4))
        dx[4] =
            cast_if(b, og_gb_reshape_like(b, dvar, n->in[4]), dt, og_gb_value(b, n->in[4])->dtype);
    return og_gb_status(b);
}

static og_status g_instancenorm(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = n->in[0];
    int rank = og_gb_value(b, x)->rank;
    if (rank < 3) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int64_t axes[OG_MAX_RANK], all[OG_MAX_RANK], pshape[OG_MAX_RANK];
    int k = rank - 2;
    pshape[0] = 1;
    pshape[1] = -1;
    all[0] = 0;
    for (int i = 2; i < rank; i++) {
        axes[i - 2] = i;
        all[i - 1] = i;
        pshape[i] = 1;
    }
    norm_stats s = batch_stats(b, x, axes, k, p->epsilon, dt);
    if (og_gb_wants(b, n, 0)) {
        int scale = og_rule_reshape_c(b, n->in[1], pshape, rank);
        dx[0] = norm_backward(b, &s, og_gb_op2(b, "Mul", dy[0], scale), axes, k);
    }
    if (og_gb_wants(b, n, 1))
        dx[1] = og_gb_reshape_like(
            b, og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dy[0], s.xhat), all, rank - 1, false),
            n->in[1]);
    if (og_gb_wants(b, n, 2))
        dx[2] = og_gb_reshape_like(b, og_gb_reduce_sum(b, dy[0], all, rank - 1, false), n->in[2]);
    return og_gb_status(b);
}

/* LayerNormalization's statistics, as its forward computed them: μ and σ⁻¹ are its Mean and
 * InvStdDev outputs (of dtype `stash`; outputs the node omits are added to the training
 * graph's copy of it), cast to X's dtype dt; then x − μ, x̂ = (x − μ)·σ⁻¹ and the count. */
static norm_stats forward_stats(og_gb *b, const og_node *n, const int64_t *axes, int k,
                                og_dtype stash, og_dtype dt)
{
    norm_stats s;
    int x = n->in[0];
    int mean = og_gb_forward_output(b, n, 1), inv = og_gb_forward_output(b, n, 2);
    s.mu = cast_if(b, mean, stash, dt);
    s.istd = cast_if(b, inv, stash, dt);
    s.cnt = og_rule_reduced_count(b, x, axes, k, mean, dt);
    s.xc = og_gb_op2(b, "Sub", x, s.mu);
    s.xhat = og_gb_op2(b, "Mul", s.xc, s.istd);
    return s;
}

/* Over the normalized axes (axis ..), with the forward's μ and σ⁻¹ (forward_stats):
 *   dX = σ⁻¹·(g − mean(g) − x̂·mean(g·x̂)), g = dY·scale, plus the contributions of the Mean
 *        and InvStdDev outputs (dσ⁻¹/dvar = −σ⁻³/2);  dscale = Σ dY·x̂, dB = Σ dY (summed back
 *        to their shapes) */
static og_status g_layernorm(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = n->in[0];
    int rank = og_gb_value(b, x)->rank;
    if (rank < 1) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    int64_t axis = p->axis < 0 ? p->axis + rank : p->axis;
    if (axis < 0 || axis >= rank) return og_gb_fail(b, n, OG_ERR_MODEL, "axis out of range");
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int64_t axes[OG_MAX_RANK];
    int k = 0;
    for (int64_t i = axis; i < rank; i++) axes[k++] = i;
    int dY = dy[0], y = n->out[0];
    /* the gradients reaching Mean and InvStdDev, taken before forward_stats gives n the
     * outputs it omits */
    int dmean = n->n_out > 1 && n->out[1] >= 0 ? dy[1] : -1;
    int dinv = n->n_out > 2 && n->out[2] >= 0 ? dy[2] : -1;
    if (!og_gb_wants(b, n, 0) && !(dY >= 0 && og_gb_wants(b, n, 1))) {
        if (dY >= 0 && og_gb_wants(b, n, 2)) dx[2] = og_gb_sum_to(b, dY, y, n->in[2]);
        return og_gb_status(b);
    }
    norm_stats s = forward_stats(b, n, axes, k, p->stash, dt);
    if (og_gb_wants(b, n, 0)) {
        int d0 = -1;
        if (dY >= 0) d0 = norm_backward(b, &s, og_gb_op2(b, "Mul", dY, n->in[1]), axes, k);
        int gm = cast_if(b, dmean, p->stash, dt), gv = -1;
        if (dinv >= 0) {
            int gi = cast_if(b, dinv, p->stash, dt);
            int i3 = og_gb_op2(b, "Mul", s.istd, og_gb_op2(b, "Mul", s.istd, s.istd));
            gv = og_gb_op2(b, "Mul", og_gb_op2(b, "Mul", gi, i3), og_gb_scalar(b, -0.5, dt));
        }
        int st = stats_backward(b, x, &s, gm, gv, dt);
        if (st >= 0) d0 = og_rule_accumulate(b, d0, st);
        dx[0] = d0;
    }
    if (dY >= 0 && og_gb_wants(b, n, 1))
        dx[1] = og_gb_sum_to(b, og_gb_op2(b, "Mul", dY, s.xhat), y, n->in[1]);
    if (dY >= 0 && og_gb_wants(b, n, 2)) dx[2] = og_gb_sum_to(b, dY, y, n->in[2]);
    return og_gb_status(b);
}

/* ---- Dropout ------------------------------------------------------------------------- */

/* dropout: inference (and every form before opset 12, which onnxgrad runs as inference):
 * dx = dy.  Training (opset 12+, training_mode true): dx = mask ? dy / (1 - ratio) : 0,
 * with the node's mask output (added when the model omits it); a training_mode known only
 * at run time selects between the two. */
static og_status g_dropout(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int x = IN(0);
    int ratio = n->n_in > 1 ? IN(1) : -1, train = n->n_in > 2 ? IN(2) : -1;
    if (n->since_version < 12 || train < 0) {
        dx[0] = dy[0];
        return og_gb_status(b);
    }
    const og_tensor *tk = og_gb_value(b, train)->known;
    if (tk && tk->numel == 1 && og_tensor_get_i64(tk, 0) == 0) {
        dx[0] = dy[0];
        return og_gb_status(b);
    }
    /* the mask the forward run drew (the node gains the output when it has none; the
     * training forward then keeps it for the backward half) */
    int mask = og_gb_forward_output(b, n, 1);
    if (mask < 0) return og_gb_status(b);
    int scale;
    const og_tensor *rk = ratio >= 0 ? og_gb_value(b, ratio)->known : NULL;
    if (ratio < 0 || (rk && rk->numel == 1)) {
        double r = ratio < 0 ? 0.5 : og_tensor_get_f64(rk, 0);
        scale = og_gb_scalar_like(b, r < 1 ? 1.0 / (1.0 - r) : 0.0, x);
    } else {
        og_dtype dt = og_gb_value(b, x)->dtype;
        int rf = og_gb_value(b, ratio)->dtype == dt ? ratio : og_rule_cast(b, ratio, dt);
        scale = og_rule_div(b, og_gb_scalar_like(b, 1, x),
                            og_rule_sub(b, og_gb_scalar_like(b, 1, x), rf));
    }
    int g = og_gb_op3(b, "Where", mask, og_rule_mul(b, dy[0], scale), og_gb_scalar_like(b, 0, x));
    dx[0] = tk ? g : og_gb_op3(b, "Where", train, g, dy[0]);
    return og_gb_status(b);
}

/* ---- GroupNormalization, MeanVarianceNormalization, LpNormalization, LRN ------------------ */

static og_status g_groupnorm(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = IN(0);
    const og_value *X = og_gb_value(b, x);
    int rank = X->rank;
    /* any channel count: the scale and bias reshape to [-1, 1, ...] or [1, G, 1] */
    if (rank < 2) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the input's rank");
    og_dtype dt = og_gb_value(b, OUT(0))->dtype;
    int64_t G = p->groups, ax2 = 2;
    int64_t gshape[3] = {0, G, -1}, pshape[OG_MAX_RANK], all[OG_MAX_RANK];
    bool per_channel = n->since_version >= 21;
    int xg = og_rule_reshape_c(b, x, gshape, 3);
    norm_stats st = batch_stats(b, xg, &ax2, 1, p->epsilon, dt);
    int dyg = og_rule_reshape_c(b, dy[0], gshape, 3);
    /* scale against [N, C, ...] (per channel) or [N, G, -1] (per group) */
    int k = 0;
    pshape[0] = -1;
    for (int i = 1; i < rank - 1; i++) pshape[i] = 1;
    all[k++] = 0;
    for (int i = 2; i < rank; i++) all[k++] = i;
    int64_t g3[3] = {1, G, 1}, a02[2] = {0, 2};
    if (WANTS(0)) {
        int g;
        if (per_channel)
            g = og_rule_reshape_c(
                b, og_gb_op2(b, "Mul", dy[0], og_rule_reshape_c(b, IN(1), pshape, rank - 1)),
                gshape, 3);
        else
            g = og_gb_op2(b, "Mul", dyg, og_rule_reshape_c(b, IN(1), g3, 3));
        dx[0] = og_gb_reshape_like(b, norm_backward(b, &st, g, &ax2, 1), x);
    }
    if (per_channel) {
        if (WANTS(1))
            dx[1] = og_gb_reshape_like(
                b,
                og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dy[0], og_gb_reshape_like(b, st.xhat, x)),
                                 all, k, false),
                IN(1));
        if (WANTS(2))
            dx[2] = og_gb_reshape_like(b, og_gb_reduce_sum(b, dy[0], all, k, false), IN(2));
    } else {
        if (WANTS(1))
            dx[1] = og_gb_reshape_like(
                b, og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dyg, st.xhat), a02, 2, false), IN(1));
        if (WANTS(2)) dx[2] = og_gb_reshape_like(b, og_gb_reduce_sum(b, dyg, a02, 2, false), IN(2));
    }
    return og_gb_status(b);
}

static og_status g_mvn(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = IN(0), rank = og_rule_rank_of(b, n, x, "input 0");
    if (rank < 0) return og_gb_status(b);
    og_dtype dt = og_gb_value(b, OUT(0))->dtype;
    int64_t axes[OG_MAX_RANK];
    for (int i = 0; i < p->n_axes; i++)
        if ((axes[i] = og_rule_axis(b, n, p->axes[i], rank)) < 0) return og_gb_status(b);
    int k = p->n_axes;
    int sum = og_gb_reduce_sum(b, x, axes, k, true);
    int cnt = og_rule_reduced_count(b, x, axes, k, sum, dt);
    int xc = og_gb_op2(b, "Sub", x, og_gb_op2(b, "Div", sum, cnt));
    int var =
        og_gb_op2(b, "Div", og_gb_reduce_sum(b, og_gb_op2(b, "Mul", xc, xc), axes, k, true), cnt);
    int sd = og_gb_op1(b, "Sqrt", var);
    int d = og_gb_op2(b, "Add", sd, og_gb_scalar(b, 1e-9, dt));
    /* σ is 0 only where x − μ is 0 too: the second term is 0 there, whatever σ stands for */
    int sdp = og_gb_op2(b, "Max", sd, og_gb_scalar(b, og_rule_tiny(dt), dt));
    int g = dy[0];
    int mg = og_gb_op2(b, "Div", og_gb_reduce_sum(b, g, axes, k, true), cnt);
    int mgx =
        og_gb_op2(b, "Div", og_gb_reduce_sum(b, og_gb_op2(b, "Mul", g, xc), axes, k, true), cnt);
    int t1 = og_gb_op2(b, "Div", og_gb_op2(b, "Sub", g, mg), d);
    int t2 = og_gb_op2(b, "Div", og_gb_op2(b, "Mul", xc, mgx),
                       og_gb_op2(b, "Mul", og_gb_op2(b, "Mul", d, d), sdp));
    dx[0] = og_gb_op2(b, "Sub", t1, t2);
    return og_gb_status(b);
}

static og_status g_lpnorm(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = IN(0), y = OUT(0), rank = og_rule_rank_of(b, n, x, "input 0");
    if (rank < 0) return og_gb_status(b);
    int64_t axis = og_rule_axis(b, n, p->axis, rank);
    if (axis < 0) return og_gb_status(b);
    int nrm = og_rule_reduce(b, p->p == 1 ? "ReduceL1" : "ReduceL2", x, &axis, 1, true);
    int dot = og_gb_reduce_sum(b, og_gb_op2(b, "Mul", dy[0], y), &axis, 1, true);
    int t = p->p == 1 ? og_gb_op1(b, "Sign", x) : y;
    dx[0] = og_gb_op2(b, "Div", og_gb_op2(b, "Sub", dy[0], og_gb_op2(b, "Mul", t, dot)), nrm);
    return og_gb_status(b);
}

/* Σ of v over the channel window [c − lo, c + hi] (v like X: [N, C, ...]): v viewed as
 * [N, 1, C, ...] through a Conv with a ones kernel [1, 1, lo + hi + 1, 1, ...] */
static int channel_window(og_gb *b, int v, int rank, int64_t lo, int64_t hi, og_dtype dt)
{
    int64_t one = 1, ks[OG_MAX_RANK + 1], pads[2 * OG_MAX_RANK], strides[OG_MAX_RANK],
            dil[OG_MAX_RANK];
    int nsp = rank - 1, size = (int)(lo + hi + 1);
    ks[0] = ks[1] = 1;
    for (int i = 0; i < nsp; i++) {
        ks[2 + i] = i == 0 ? size : 1;
        pads[i] = i == 0 ? lo : 0;
        pads[nsp + i] = i == 0 ? hi : 0;
        strides[i] = dil[i] = 1;
    }
    int64_t *ones = og_malloc(og_gb_alloc(b), (size_t)size * sizeof *ones);
    if (!ones) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < size; i++) ones[i] = 1;
    int ker =
        og_rule_cast(b, og_rule_reshape_c(b, og_gb_const_i64(b, ones, size), ks, rank + 1), dt);
    og_free(og_gb_alloc(b), ones);
    int u = og_rule_unsqueeze(b, v, &one, 1);
    int c = og_gb_op2(b, "Conv", u, ker);
    og_rule_conv_attrs(b, og_gb_last(b), nsp, strides, dil, pads, 1);
    return og_gb_reshape_like(b, c, v);
}

static og_status g_lrn(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_norm_params *p = norm_params(b, n);
    if (!p) return og_gb_status(b);
    int x = IN(0), y = OUT(0), rank = og_rule_rank_of(b, n, x, "input 0");
    if (rank < 0) return og_gb_status(b);
    og_dtype dt = og_gb_value(b, y)->dtype;
    int64_t lo = (p->size - 1) / 2, hi = p->size / 2;
    double a = p->alpha / (double)p->size;
    /* the window sums run on x as given: the reshape in channel_window needs a forward value */
    int sq = channel_window(b, og_gb_op2(b, "Mul", x, x), rank, lo, hi, dt);
    int s = og_gb_op2(b, "Add", og_gb_op2(b, "Mul", sq, og_gb_scalar(b, a, dt)),
                      og_gb_scalar(b, p->bias, dt));
    int pw = og_gb_op2(b, "Pow", s, og_gb_scalar(b, -p->beta, dt));
    int t = og_gb_op2(b, "Div", og_gb_op2(b, "Mul", dy[0], y), s);
    int wt = channel_window(b, t, rank, hi, lo, dt);
    int back =
        og_gb_op2(b, "Mul", og_gb_op2(b, "Mul", x, wt), og_gb_scalar(b, 2 * a * p->beta, dt));
    dx[0] = og_gb_op2(b, "Sub", og_gb_op2(b, "Mul", dy[0], pw), back);
    return og_gb_status(b);
}

const og_grad_rule og_grad_norm[] = {{"BatchNormalization", "", g_batchnorm},
                                     {"InstanceNormalization", "", g_instancenorm},
                                     {"LayerNormalization", "", g_layernorm},
                                     {"Dropout", "", g_dropout},
                                     {"GroupNormalization", "", g_groupnorm},
                                     {"MeanVarianceNormalization", "", g_mvn},
                                     {"LpNormalization", "", g_lpnorm},
                                     {"LRN", "", g_lrn},
                                     {0}};
