/* quant.c: gradients of the quantization ops (src/ops/quant.c) as quantization-aware
 * training does them, straight through the rounding, with PyTorch's fake-quantize gradients
 * (torch.fake_quantize_per_tensor_affine and per_channel; the scale's as
 * torch._fake_quantize_learnable_per_tensor_affine).
 *
 * The integer output q of a QuantizeLinear carries a float surrogate gradient to the
 * DequantizeLinear that reads it (the builder lets a gradient reach that integer value):
 *   DequantizeLinear y = (q − z)·s:  dq = dY·s (the surrogate), ds = Σ dY·(q − z)
 *   QuantizeLinear q = clamp(round(x/s) + z, qmin, qmax), with round's derivative taken as 1
 *     and m = [qmin <= round(x/s) + z <= qmax]:  dx = dq·m/s,  ds = −Σ dq·m·x/s²
 * Chained with s and z shared, the fake quantization fq(x) = (q − z)·s gets dfq/dx = m and
 * dfq/ds = round(x/s) − x/s inside the range, qmin − z or qmax − z outside: PyTorch's.  Sums
 * (Σ) run back to the scale's shape: every element (per tensor), all but the axis (per axis),
 * or each block (blocked).
 *
 * Zero points are integers in ONNX; one gets a gradient when it is differentiated (named
 * among the weights: src/api/grad.c), as a float tensor of the scale's type, z taken as the
 * real number it holds (PyTorch's learnable zero point, rounded in its forward):
 *   DequantizeLinear:  dz = −Σ dY·s
 *   QuantizeLinear:    dz = Σ dq·m  (q moves with z inside the range, round's derivative 1)
 * Chained, dfq/dz = s·m − s = −s outside the range and 0 inside: PyTorch's.
 * DynamicQuantizeLinear has no rule: it computes its own scale from x. */
#include "grad/rule_util.h"
#include "ops/quant.h"

/* Σ over each block of B along `axis` of g (rank r) with g's dims known at run time only:
 * the axis (length D) padded with (B − D mod B) mod B zeros at its end (Pad with a pads
 * input: blocked quantization exists from opset 21), viewed as [..., nb, B, ...] by a shape
 * made of Shape(g) around [−1, B], B summed, reshaped as the scale s. */
static int blocked_sum_dyn(og_gb *b, int g, int r, int axis, int64_t B, int s)
{
    int64_t ax0 = axis, ax1 = axis + 1, zero = 0, big = INT64_MAX, bm1 = B - 1;
    int64_t zpad[OG_MAX_RANK] = {0}, mid[2] = {-1, B};
    int sg = og_gb_op1(b, "Shape", g);
    int a0 = og_gb_const_i64(b, &ax0, 1), a1 = og_gb_const_i64(b, &ax1, 1);
    int dl = og_gb_op(b, "Slice", 3, (int[]){sg, a0, a1}); /* [D] */
    int cb = og_gb_const_i64(b, &B, 1);
    /* pad = nb·B − D with nb = (D + B − 1) / B (integer Div, D >= 0) */
    int q = og_rule_div(b, og_rule_add(b, dl, og_gb_const_i64(b, &bm1, 1)), cb);
    int pad = og_rule_sub(b, og_rule_mul(b, q, cb), dl);
    /* pads = [0 × r, 0 × axis, pad, 0 × (r − axis − 1)]; empty pieces are left out */
    int pieces[4], np = 0;
    pieces[np++] = og_gb_const_i64(b, zpad, r);
    if (axis > 0) pieces[np++] = og_gb_const_i64(b, zpad, axis);
    pieces[np++] = pad;
    if (r - axis - 1 > 0) pieces[np++] = og_gb_const_i64(b, zpad, r - axis - 1);
    int pads = og_gb_op(b, "Concat", np, pieces);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int gp = og_gb_op2(b, "Pad", g, pads);
    int sp = og_gb_op1(b, "Shape", gp);
    int parts[3], k = 0;
    if (axis > 0)
        parts[k++] = og_gb_op(b, "Slice", 3, (int[]){sp, og_gb_const_i64(b, &zero, 1), a0});
    parts[k++] = og_gb_const_i64(b, mid, 2);
    if (r - axis - 1 > 0)
        parts[k++] = og_gb_op(b, "Slice", 3, (int[]){sp, a1, og_gb_const_i64(b, &big, 1)});
    int shp = og_gb_op(b, "Concat", k, parts);
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    return og_gb_reshape_like(
        b, og_gb_reduce_sum(b, og_gb_op2(b, "Reshape", gp, shp), &ax1, 1, false), s);
}

/* Σ of g (x's shape, x of rank r) back to the shape of scale s */
static int sum_to_scale(og_gb *b, const og_node *n, int g, int x, int s)
{
    const og_quant_params *p = n->params;
    const og_value *X = og_gb_value(b, x), *S = og_gb_value(b, s);
    int r = X->rank;
    if (r < 0 || S->rank < 0) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs ranks");
    int64_t sn = 1, axes[OG_MAX_RANK];
    for (int d = 0; d < S->rank; d++) sn = og_dim_known(S->dims[d]) ? sn * S->dims[d] : -1;
    int axis = r > 0 ? og_rule_axis(b, n, p->axis, r) : 0;
    if (axis < 0) return -1;
    if (p->block_size == 0 && sn == 1) { /* per tensor */
        for (int d = 0; d < r; d++) axes[d] = d;
        return og_gb_reshape_like(b, r ? og_gb_reduce_sum(b, g, axes, r, false) : g, s);
    }
    if (p->block_size == 0) { /* per axis */
        int k = 0;
        for (int d = 0; d < r; d++)
            if (d != axis) axes[k++] = d;
        return og_gb_reshape_like(b, k ? og_gb_reduce_sum(b, g, axes, k, false) : g, s);
    }
    /* blocked: pad the axis to nb·B, view it as [nb, B], sum the B */
    bool known = true;
    for (int d = 0; d < r; d++) known = known && og_dim_known(X->dims[d]);
    if (!known) return blocked_sum_dyn(b, g, r, axis, p->block_size, s);
    int64_t D = X->dims[axis], B = p->block_size, nb = (D + B - 1) / B, pads[2 * OG_MAX_RANK] = {0};
    int gp = g;
    if (nb * B != D) {
        pads[r + axis] = nb * B - D;
        gp = og_gb_op2(b, "Pad", g, og_gb_const_i64(b, pads, 2 * r));
    }
    int64_t shp[OG_MAX_RANK + 1], ax = axis + 1;
    for (int d = 0, k = 0; d < r; d++) {
        if (d == axis) {
            shp[k++] = nb;
            shp[k++] = B;
        } else {
            shp[k++] = og_dim_known(X->dims[d]) ? X->dims[d] : 0;
        }
    }
    return og_gb_reshape_like(
        b, og_gb_reduce_sum(b, og_rule_reshape_c(b, gp, shp, r + 1), &ax, 1, false), s);
}

/* A DequantizeLinear of `in` (k inputs) with n's scale layout (axis, block_size): it
 * spreads a scale or zero point over x's shape by the same rules as n. */
static int dq_like(og_gb *b, const og_node *n, const int *in, int k)
{
    const og_quant_params *p = n->params;
    int r = og_gb_op(b, "DequantizeLinear", k, in);
    if (og_gb_opset(b) >= 13) og_gb_attr_int(b, og_gb_last(b), "axis", p->axis);
    if (p->block_size) og_gb_attr_int(b, og_gb_last(b), "block_size", p->block_size);
    return r;
}

/* The scale s spread to x's shape, in float type dt: DequantizeLinear(ones, s) */
static int spread_scale(og_gb *b, const og_node *n, int s, og_dtype dt)
{
    int ones = og_rule_cast(
        b, og_gb_op2(b, "Expand", og_gb_scalar(b, 1.0, OG_INT32), og_gb_op1(b, "Shape", n->in[0])),
        OG_INT8);
    int in[2] = {ones, s};
    int r = dq_like(b, n, in, 2);
    return og_gb_value(b, s)->dtype == dt ? r : og_rule_cast(b, r, dt);
}

static og_status g_dequantize(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    int q = n->in[0], s = n->in[1], z = n->n_in > 2 ? n->in[2] : -1;
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int sp = WANTS(0) || WANTS(2) ? spread_scale(b, n, s, dt) : -1;
    if (WANTS(0)) dx[0] = og_gb_op2(b, "Mul", dy[0], sp);
    if (WANTS(2)) {
        int dz = sum_to_scale(b, n, og_gb_op1(b, "Neg", og_gb_op2(b, "Mul", dy[0], sp)), q, s);
        og_dtype st = og_gb_value(b, s)->dtype;
        dx[2] = st == dt ? dz : og_rule_cast(b, dz, st);
    }
    if (WANTS(1)) {
        /* q − z as floats: DequantizeLinear(q, 1, z) */
        int in[3] = {q, og_gb_op2(b, "Expand", og_gb_scalar(b, 1.0, dt), og_gb_op1(b, "Shape", s)),
                     z};
        int qz = dq_like(b, n, in, z >= 0 ? 3 : 2);
        dx[1] = sum_to_scale(b, n, og_gb_op2(b, "Mul", dy[0], qz), q, s);
    }
    return og_gb_status(b);
}

static og_status g_quantize(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_quant_params *p = n->params;
    int x = n->in[0], s = n->in[1], z = n->n_in > 2 ? n->in[2] : -1;
    og_dtype xt = og_gb_value(b, x)->dtype, qt = og_gb_value(b, n->out[0])->dtype;
    double qmin, qmax;
    if (!p || !n->parsed) return og_gb_fail(b, n, OG_ERR_INTERNAL, "attributes not parsed");
    if (!og_dtype_is_float(xt) || !og_quant_range(qt, &qmin, &qmax)) return og_gb_status(b);
    og_dtype st = og_gb_value(b, s)->dtype;
    int sx = spread_scale(b, n, s, xt); /* scale in x's shape and type */
    /* round(x/s); no Round before opset 11: ⌊x/s + ½⌋, which differs only at the ties */
    int v = og_gb_op2(b, "Div", x, sx);
    v = og_gb_opset(b) >= 11
            ? og_gb_op1(b, "Round", v)
            : og_gb_op1(b, "Floor", og_gb_op2(b, "Add", v, og_gb_scalar(b, 0.5, xt)));
    if (z >= 0) {
        /* + z, as x's float type: DequantizeLinear(z spread over x, 1) */
        int zin[3] = {
            og_rule_cast(
                b, og_gb_op2(b, "Expand", og_gb_scalar(b, 0.0, OG_INT32), og_gb_op1(b, "Shape", x)),
                qt),
            og_gb_op2(b, "Expand", og_gb_scalar(b, -1.0, st), og_gb_op1(b, "Shape", s)), z};
        int zf = dq_like(b, n, zin, 3); /* (0 − z)·(−1) = z */
        v = og_gb_op2(b, "Add", v, st == xt ? zf : og_rule_cast(b, zf, xt));
    }
    int m = og_rule_cast(
        b,
        og_gb_op2(b, "And", og_gb_op1(b, "Not", og_gb_op2(b, "Less", v, og_gb_scalar(b, qmin, xt))),
                  og_gb_op1(b, "Not", og_gb_op2(b, "Greater", v, og_gb_scalar(b, qmax, xt)))),
        xt);
    int gm = og_gb_op2(b, "Mul", dy[0], m);
    if (WANTS(0)) dx[0] = og_gb_op2(b, "Div", gm, sx);
    if (WANTS(1)) {
        int t = og_gb_op2(b, "Div", og_gb_op2(b, "Mul", gm, x), og_gb_op2(b, "Mul", sx, sx));
        int ds = sum_to_scale(b, n, og_gb_op1(b, "Neg", t), x, s);
        dx[1] = st == xt ? ds : og_rule_cast(b, ds, st);
    }
    if (WANTS(2)) {
        int dz = sum_to_scale(b, n, gm, x, s);
        dx[2] = st == xt ? dz : og_rule_cast(b, dz, st);
    }
    return og_gb_status(b);
}

const og_grad_rule og_grad_quant[] = {
    {"QuantizeLinear", "", g_quantize}, {"DequantizeLinear", "", g_dequantize}, {0}};
