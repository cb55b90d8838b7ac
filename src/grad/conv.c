/* conv.c: gradients of Conv and ConvTranspose (src/ops/conv.c).
 *
 *   Conv  Y[n,m,o] = Σ_{c,j} X[n,c,o·s+j·d−p] W[m,c,j] + B[m]
 *     dX = ConvTranspose(dY, W) with the same strides, dilations, begin pads and group, and
 *          end pad / output_padding chosen so that dX has X's spatial size
 *     dW[m,c,j] = Σ_{n,o} X[n,c,j·d+o·s−p] dY[n,m,o]: a Conv of X with batch and channels
 *          swapped (per group) by dY as the kernel, strides and dilations exchanged, the
 *          same begin pads, sliced to the kernel size and transposed back
 *     dB = Σ dY over N and the spatial axes
 *   ConvTranspose (the adjoint of Conv in X): dX = Conv(dY, W); dW = the Conv dW with the
 *          roles of X and dY exchanged; dB as for Conv
 *   Col2Im (fold, the adjoint of im2col): dX = im2col(dY): each channel of dY, as [N·C, 1,
 *          image...], through a Conv whose K = Πblock output channels are the one-hot
 *          kernels of the taps (the forward's strides, dilations and pads), to [N, C·K, L]
 */
#include "grad/rule_util.h"
#include "ops/conv_params.h"

#define SP (OG_MAX_RANK - 2)

/* x with axes 0 and 1 swapped */
static int swap01(og_gb *b, int x, int rank)
{
    int64_t perm[OG_MAX_RANK];
    for (int i = 0; i < rank; i++) perm[i] = i;
    perm[0] = 1;
    perm[1] = 0;
    return og_rule_transpose(b, x, perm, rank);
}

/* ---- Conv and ConvTranspose ---------------------------------------------------------- */

/* dB = Σ dY over N and the spatial axes */
static int bias_grad(og_gb *b, int dy, int rank)
{
    int64_t axes[OG_MAX_RANK];
    axes[0] = 0;
    for (int i = 2; i < rank; i++) axes[i - 1] = i;
    return og_gb_reduce_sum(b, dy, axes, rank - 1, false);
}

/* The geometry of a Conv/ConvTranspose node as far as static shapes tell.  Returns 1 when
 * every channel count, kernel and spatial size and pad is known (the static rules), 0 when
 * some are known only at run time, -1 after an error. */
static int conv_geometry(og_gb *b, const og_node *n, og_conv_geom *g)
{
    const og_conv_params *p = n->params;
    if (!p || !n->parsed) {
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the node's attributes were not parsed");
        return -1;
    }
    const og_value *X = og_gb_value(b, n->in[0]), *W = og_gb_value(b, n->in[1]);
    if (og_conv_geometry(n, p, false, X->rank, X->dims, W->rank, W->dims, -1, g)) {
        og_gb_fail(b, n, OG_ERR_MODEL, "%s", og_last_error());
        return -1;
    }
    if (g->nsp < 1) {
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the rank of X or W");
        return -1;
    }
    bool ok = og_dim_known(g->c) && og_dim_known(g->m);
    for (int i = 0; ok && i < g->nsp; i++)
        ok = og_dim_known(g->in[i]) && og_dim_known(g->out[i]) && og_dim_known(g->kernel[i]) &&
             g->pad_begin[i] != OG_DIM_UNKNOWN && g->pad_end[i] != OG_DIM_UNKNOWN;
    return ok ? 1 : 0;
}

/* dW of a convolution whose input is I ([N, cin, isp...]) and whose output gradient is G
 * ([N, cout, gsp...]), kernel k, strides s, dilations d, begin pads pb (>= 0):
 *   dW[m, c, j] = Σ_{n,o} I[n, gc+c, j·d + o·s − pb] G[n, m, o]     (gc: m's group)
 * computed as Conv(I' = [cin/g, g·N, isp...], G' = [cout, N, gsp...], group g, strides d,
 * dilations s), whose result [cin/g, cout, k'...] is sliced to k and transposed. */
static int conv_dw(og_gb *b, int I, int G, int64_t cin, int64_t group, int nsp, const int64_t *isp,
                   const int64_t *gsp, const int64_t *k, const int64_t *s, const int64_t *d,
                   const int64_t *pb)
{
    int rank = nsp + 2;
    int64_t cg = cin / group;
    int it;
    if (group == 1) {
        it = swap01(b, I, rank);
    } else {
        int64_t shp[OG_MAX_RANK + 1], perm[OG_MAX_RANK + 1];
        shp[0] = 0; /* N, copied */
        shp[1] = group;
        shp[2] = cg;
        for (int i = 0; i <= rank; i++) perm[i] = i;
        perm[0] = 2;
        perm[2] = 0;
        for (int i = 0; i < nsp; i++) shp[3 + i] = isp[i];
        int t = og_rule_transpose(b, og_rule_reshape_c(b, I, shp, rank + 1), perm, rank + 1);
        shp[0] = cg;
        shp[1] = -1;
        for (int i = 0; i < nsp; i++) shp[2 + i] = isp[i];
        it = og_rule_reshape_c(b, t, shp, rank);
    }
    int gt = swap01(b, G, rank);
    int64_t pads[2 * SP], axes[SP], zeros[SP];
    bool slice = false;
    for (int i = 0; i < nsp; i++) {
        int64_t span = (gsp[i] - 1) * s[i] + 1; /* extent of the dilated dY kernel */
        int64_t pe = (k[i] - 1) * d[i] + span - isp[i] - pb[i];
        if (pe < 0) pe = 0;
        int64_t kk = (isp[i] + pb[i] + pe - span) / d[i] + 1;
        if (kk < k[i])
            return og_gb_fail(b, NULL, OG_ERR_INTERNAL, "bad weight-gradient geometry on axis %d",
                              i);
        slice = slice || kk > k[i];
        pads[i] = pb[i];
        pads[nsp + i] = pe;
        axes[i] = 2 + i;
        zeros[i] = 0;
    }
    int z = og_gb_op2(b, "Conv", it, gt);
    og_rule_conv_attrs(b, og_gb_last(b), nsp, d, s, pads, group);
    if (slice) z = og_rule_slice(b, z, axes, zeros, k, NULL, nsp);
    return swap01(b, z, rank);
}

/* ---- Conv with sizes known only at run time -------------------------------------- */

/* The kernel sizes as a 1-D int64 value: constant when known, else Shape(W)[2:]. */
static int kernel_vec(og_gb *b, const og_conv_geom *g, int w)
{
    bool known = true;
    for (int i = 0; i < g->nsp; i++) known = known && og_dim_known(g->kernel[i]);
    return known ? og_gb_const_i64(b, g->kernel, g->nsp) : og_rule_shape_tail(b, w, 2);
}

/* The begin and end pads of a Conv as 1-D int64 values over the spatial axes: constants for
 * explicit pads (and VALID), computed from the run-time sizes for SAME_UPPER/LOWER:
 *   total = max(0, (ceil(in / s) − 1)·s + (k − 1)·d + 1 − in),
 *   small = floor(total / 2), begin = small (UPPER) or total − small (LOWER). */
static void conv_pads_dyn(og_gb *b, const og_node *n, const og_conv_geom *g, int *pb, int *pe)
{
    const og_conv_params *p = n->params;
    int nsp = g->nsp;
    if (p->auto_pad != OG_CONV_SAME_UPPER && p->auto_pad != OG_CONV_SAME_LOWER) {
        int64_t v[2 * SP];
        for (int i = 0; i < 2 * nsp; i++)
            v[i] = p->n_pads && p->auto_pad != OG_CONV_VALID ? p->pads[i] : 0;
        *pb = og_gb_const_i64(b, v, nsp);
        *pe = og_gb_const_i64(b, v + nsp, nsp);
        return;
    }
    int64_t one[SP], two[SP];
    for (int i = 0; i < nsp; i++) one[i] = 1, two[i] = 2;
    int s = og_gb_const_i64(b, g->stride, nsp), d = og_gb_const_i64(b, g->dil, nsp);
    int c1 = og_gb_const_i64(b, one, nsp), c2 = og_gb_const_i64(b, two, nsp);
    int in = og_rule_shape_tail(b, n->in[0], 2);
    int k = kernel_vec(b, g, n->in[1]);
    int ek = og_rule_add(b, og_rule_mul(b, og_rule_sub(b, k, c1), d), c1);
    /* ceil(in / s) − 1 = floor((in − 1) / s) for in >= 1 */
    int outm1 = og_rule_div(b, og_rule_sub(b, in, c1), s);
    int total =
        og_rule_relu_i64(b, og_rule_sub(b, og_rule_add(b, og_rule_mul(b, outm1, s), ek), in));
    int small = og_rule_div(b, total, c2);
    *pb = p->auto_pad == OG_CONV_SAME_UPPER ? small : og_rule_sub(b, total, small);
    *pe = og_rule_sub(b, total, *pb);
}

/* The spatial axes 2, 3, ... (the first nsp of them) */
static const int64_t spatial_axes[SP] = {2, 3, 4, 5, 6, 7};

/* dX of a Conv whose sizes are known at run time only: the unpadded ConvTranspose of dY
 * with output_padding s − 1, whose size s·(out − 1) + s − 1 + ek >= pb + in (the forward's
 * out = floor((in + pb + pe − ek) / s) + 1), cut to the input's positions [pb, pb + in):
 *   dX = Slice(ConvTranspose(dY, W, pads 0, output_padding s − 1), pb, pb + in, spatial) */
static int conv_dx_dyn(og_gb *b, const og_node *n, const og_conv_geom *g, int dy, int pb)
{
    int nsp = g->nsp;
    int64_t zeros[2 * SP], opad[SP];
    bool any_op = false;
    for (int i = 0; i < 2 * nsp; i++) zeros[i] = 0;
    for (int i = 0; i < nsp; i++) {
        opad[i] = g->stride[i] - 1;
        any_op = any_op || opad[i] > 0;
    }
    int full = og_gb_op2(b, "ConvTranspose", dy, n->in[1]);
    int node = og_gb_last(b);
    og_rule_conv_attrs(b, node, nsp, g->stride, g->dil, zeros, g->group);
    if (any_op) og_gb_attr_ints(b, node, "output_padding", opad, nsp);
    int end = og_rule_add(b, pb, og_rule_shape_tail(b, n->in[0], 2));
    return og_rule_slice_rt(b, full, pb, end, spatial_axes, nsp);
}

/* dW of a convolution of I by a kernel of W's sizes giving G (sizes known at run time
 * only), as conv_dw below: with the convolution's pads, the Conv of the swapped I by the
 * swapped G has kernel-axis size
 *   floor((in + pb + pe − span) / d) + 1 >= k,  span = (out − 1)·s + 1 <= in + pb + pe − ek + 1,
 * so it is cut to k.  pads: the static pads, or NULL for pads known only at run time (pb,
 * pe: SAME), which pad I explicitly first (Pad with a pads input: opset 11, checked by the
 * caller). */
static int dw_dyn(og_gb *b, const og_conv_geom *g, int x, int dy, const int64_t *spads, int pb,
                  int pe, int w)
{
    int nsp = g->nsp, rank = nsp + 2;
    int64_t pads[2 * SP];
    for (int i = 0; i < 2 * nsp; i++) pads[i] = spads ? spads[i] : 0;
    if (!spads) x = og_rule_pad_spatial_rt(b, x, pb, pe, nsp, og_gb_value(b, w)->dtype);
    int it;
    if (g->group == 1) {
        it = swap01(b, x, rank);
    } else {
        /* [N, C, sp...] -> [N, C, S] -> [N, g, C/g, S] -> [C/g, g, N, S] -> [C/g, g·N, sp...]
         * with shapes computed from the run-time ones */
        int64_t flat[3] = {0, 0, -1}, perm[4] = {2, 1, 0, 3}, i0 = 0, i2 = 2, m1 = -1;
        int64_t gm[2] = {g->group, -1};
        int x3 = og_rule_reshape_c(b, x, flat, 3);
        int sx = og_gb_op1(b, "Shape", x3);
        int p4[3] = {og_gb_op2(b, "Gather", sx, og_gb_const_i64(b, &i0, 1)),
                     og_gb_const_i64(b, gm, 2),
                     og_gb_op2(b, "Gather", sx, og_gb_const_i64(b, &i2, 1))};
        int s4 = og_gb_op(b, "Concat", 3, p4);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        int t = og_rule_transpose(b, og_gb_op2(b, "Reshape", x3, s4), perm, 4);
        int p3[3] = {og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", t), og_gb_const_i64(b, &i0, 1)),
                     og_gb_const_i64(b, &m1, 1), og_rule_shape_tail(b, x, 2)};
        int s3 = og_gb_op(b, "Concat", 3, p3);
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        it = og_gb_op2(b, "Reshape", t, s3);
    }
    int gt = swap01(b, dy, rank);
    int z = og_gb_op2(b, "Conv", it, gt);
    og_rule_conv_attrs(b, og_gb_last(b), nsp, g->dil, g->stride, pads, g->group);
    int64_t zeros[SP];
    for (int i = 0; i < nsp; i++) zeros[i] = 0;
    return swap01(b,
                  og_rule_slice_rt(b, z, og_gb_const_i64(b, zeros, nsp), kernel_vec(b, g, w),
                                   spatial_axes, nsp),
                  rank);
}

/* dW of a Conv whose sizes are known at run time only (dw_dyn with the Conv's pads). */
static int conv_dw_dyn(og_gb *b, const og_node *n, const og_conv_geom *g, int dy, int pb, int pe)
{
    const og_conv_params *p = n->params;
    int64_t pads[2 * SP];
    for (int i = 0; i < 2 * g->nsp; i++)
        pads[i] = p->n_pads && p->auto_pad == OG_CONV_NOTSET ? p->pads[i] : 0;
    bool same = p->auto_pad == OG_CONV_SAME_UPPER || p->auto_pad == OG_CONV_SAME_LOWER;
    return dw_dyn(b, g, n->in[0], dy, same ? NULL : pads, pb, pe, n->in[1]);
}

/* The gradients of a ConvTranspose whose sizes are known at run time only, without
 * output_shape (explicit pads, VALID or SAME): Y[o] = Σ X[i]·W[k] where o = i·s + k·d − pb, so
 * with pe' = max(pe, 0):
 *   dX = Conv(dY, W) with the strides, dilations, group and pads [pb, pe'], cut to X's
 *        sizes (its size floor((out + pb + pe' − ek) / s) + 1 >= in, the forward's
 *        out = s·(in − 1) + op + ek − pb − pe);
 *   dW = dw_dyn of the convolution of dY by W's sizes giving X (the same pads). */
static void convt_dyn(og_gb *b, const og_node *n, const og_conv_geom *g, int dy, int *dx)
{
    const og_conv_params *p = n->params;
    int nsp = g->nsp;
    int64_t pads[2 * SP], zeros[SP];
    bool same = p->auto_pad == OG_CONV_SAME_UPPER || p->auto_pad == OG_CONV_SAME_LOWER;
    for (int i = 0; i < nsp; i++) {
        bool ex = p->n_pads && p->auto_pad == OG_CONV_NOTSET;
        int64_t pb = ex ? p->pads[i] : 0, pe = ex ? p->pads[nsp + i] : 0;
        if (same) {
            /* out = s·in: the total padding s·(in − 1) + op + ek − s·in = op + ek − s does not
             * depend on in; split as og_conv_geometry does (opset 11: SAME_UPPER's odd unit
             * at the end; before, the reverse) */
            if (!og_dim_known(g->kernel[i])) {
                og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                           "ConvTranspose gradient with auto_pad SAME needs the kernel size");
                return;
            }
            int64_t total = (p->n_output_padding ? p->output_padding[i] : 0) +
                            (g->kernel[i] - 1) * g->dil[i] + 1 - g->stride[i];
            int64_t h = total >= 0 ? total / 2 : -((-total + 1) / 2);
            bool upper = p->auto_pad == OG_CONV_SAME_UPPER;
            pb = p->since >= 11 ? (upper ? h : total - h) : (upper ? total - h : h);
            pe = total - pb;
            if (pb < 0) {
                og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                           "ConvTranspose gradient with a negative SAME begin pad and sizes "
                           "known only at run time");
                return;
            }
        }
        pads[i] = pb;
        pads[nsp + i] = pe > 0 ? pe : 0;
        zeros[i] = 0;
    }
    if (og_gb_wants(b, n, 0)) {
        int r = og_gb_op2(b, "Conv", dy, n->in[1]);
        og_rule_conv_attrs(b, og_gb_last(b), nsp, g->stride, g->dil, pads, g->group);
        dx[0] = og_rule_slice_rt(b, r, og_gb_const_i64(b, zeros, nsp),
                                 og_rule_shape_tail(b, n->in[0], 2), spatial_axes, nsp);
    }
    if (og_gb_wants(b, n, 1)) dx[1] = dw_dyn(b, g, dy, n->in[0], pads, -1, -1, n->in[1]);
}

/* The gradients of a ConvTranspose with output_shape whose sizes are known at run time
 * only: the pads follow from X's run-time sizes (as og_conv_geometry),
 *   total = s·(in − 1) + op + ek − out, ek = (k − 1)·d + 1, h = floor(total / 2),
 *   pb = h or total − h (SAME_UPPER from opset 11, and the reverse before), pe = total − pb;
 * a negative pb (output_shape beyond the full result) shifts the output, whose first −pb
 * positions hold only the bias: dY is cut there (crop = max(−pb, 0)).  Then with
 * pb' = max(pb, 0), pe' = max(pe, 0):
 *   dX = Conv(Pad(dY[crop:], pb', pe'), W) with the strides, dilations and group, cut to
 *        X's sizes;
 *   dW = dw_dyn of that convolution (dY[crop:] padded by pb', pe' giving X). */
static void convt_oshape_dyn(og_gb *b, const og_node *n, const og_conv_geom *g, int dy, int *dx)
{
    const og_conv_params *p = n->params;
    int nsp = g->nsp;
    const int64_t *oshape = p->n_output_shape == nsp + 2 ? p->output_shape + 2 : p->output_shape;
    int64_t cst[SP], dil[SP], zeros[2 * SP], half = (int64_t)1 << 40;
    for (int i = 0; i < nsp; i++) {
        /* total = s·in + k·d + (op − s + 1 − d − out) */
        cst[i] = (p->n_output_padding ? p->output_padding[i] : 0) - g->stride[i] + 1 - g->dil[i] -
                 oshape[i];
        dil[i] = g->dil[i];
        zeros[i] = zeros[nsp + i] = 0;
    }
    int x = n->in[0], w = n->in[1];
    int total = og_rule_add(
        b,
        og_rule_add(b,
                    og_rule_mul(b, og_rule_shape_tail(b, x, 2), og_gb_const_i64(b, g->stride, nsp)),
                    og_rule_mul(b, kernel_vec(b, g, w), og_gb_const_i64(b, dil, nsp))),
        og_gb_const_i64(b, cst, nsp));
    /* floor(total / 2) whatever the integer Div's rounding: (total + 2^41) / 2 − 2^40 */
    int64_t two = 2, off2 = 2 * half;
    int h = og_rule_sub(b,
                        og_rule_div(b, og_rule_add(b, total, og_gb_const_i64(b, &off2, 1)),
                                    og_gb_const_i64(b, &two, 1)),
                        og_gb_const_i64(b, &half, 1));
    bool upper = p->auto_pad == OG_CONV_SAME_UPPER;
    bool pb_is_h = p->since >= 11 ? upper : !upper;
    int pb = pb_is_h ? h : og_rule_sub(b, total, h);
    int pe = og_rule_sub(b, total, pb);
    int64_t zero1 = 0;
    int crop = og_rule_relu_i64(b, og_rule_sub(b, og_gb_const_i64(b, &zero1, 1), pb));
    int pbp = og_rule_add(b, pb, crop), pep = og_rule_relu_i64(b, pe);
    int dyc = og_rule_slice_rt(b, dy, crop, og_rule_shape_tail(b, dy, 2), spatial_axes, nsp);
    if (og_gb_wants(b, n, 0)) {
        int r = og_gb_op2(
            b, "Conv", og_rule_pad_spatial_rt(b, dyc, pbp, pep, nsp, og_gb_value(b, w)->dtype), w);
        og_rule_conv_attrs(b, og_gb_last(b), nsp, g->stride, g->dil, zeros, g->group);
        dx[0] = og_rule_slice_rt(b, r, og_gb_const_i64(b, zeros, nsp), og_rule_shape_tail(b, x, 2),
                                 spatial_axes, nsp);
    }
    if (og_gb_wants(b, n, 1)) dx[1] = dw_dyn(b, g, dyc, x, NULL, pbp, pep, w);
}

static og_status g_conv(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    og_conv_geom g;
    int known = conv_geometry(b, n, &g);
    if (known < 0) return og_gb_status(b);
    int nsp = g.nsp, rank = nsp + 2;
    if (!known) {
        int pb = -1, pe = -1;
        conv_pads_dyn(b, n, &g, &pb, &pe);
        if (og_gb_wants(b, n, 0)) dx[0] = conv_dx_dyn(b, n, &g, dy[0], pb);
        if (og_gb_wants(b, n, 1)) dx[1] = conv_dw_dyn(b, n, &g, dy[0], pb, pe);
        if (og_gb_wants(b, n, 2)) dx[2] = bias_grad(b, dy[0], rank);
        return og_gb_status(b);
    }
    if (og_gb_wants(b, n, 0))
        dx[0] = og_rule_conv_back(b, dy[0], n->in[1], nsp, g.in, g.out, g.kernel, g.stride, g.dil,
                                  g.pad_begin, g.group);
    if (og_gb_wants(b, n, 1))
        dx[1] = conv_dw(b, n->in[0], dy[0], g.c, g.group, nsp, g.in, g.out, g.kernel, g.stride,
                        g.dil, g.pad_begin);
    if (og_gb_wants(b, n, 2)) dx[2] = bias_grad(b, dy[0], rank);
    return og_gb_status(b);
}

static og_status g_conv_transpose(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    og_conv_geom g;
    int known = conv_geometry(b, n, &g);
    if (known < 0) return og_gb_status(b);
    int nsp = g.nsp, rank = nsp + 2;
    if (!known) {
        const og_conv_params *p = n->params;
        if (p->n_output_shape)
            convt_oshape_dyn(b, n, &g, dy[0], dx);
        else
            convt_dyn(b, n, &g, dy[0], dx);
        if (og_gb_wants(b, n, 2)) dx[2] = bias_grad(b, dy[0], rank);
        return og_gb_status(b);
    }
    /* a negative begin pad (output_shape beyond the full result) shifts the output: its
     * first −pb positions hold only the bias, so dY is cropped there */
    int dyc = dy[0];
    int64_t crop[SP], ends[SP], axes[SP], zeros[SP];
    bool any_crop = false;
    for (int i = 0; i < nsp; i++) {
        crop[i] = g.pad_begin[i] < 0 ? -g.pad_begin[i] : 0;
        any_crop = any_crop || crop[i] > 0;
        g.pad_begin[i] += crop[i];
        g.out[i] -= crop[i];
        ends[i] = INT64_MAX;
        axes[i] = 2 + i;
        zeros[i] = 0;
        if (g.out[i] < 1)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "output_shape leaves no computed output");
    }
    if (any_crop) dyc = og_rule_slice(b, dyc, axes, crop, ends, NULL, nsp);
    if (og_gb_wants(b, n, 0)) {
        /* Conv(dY) over the padded output: floor((out + pb + pe − ek)/s) + 1 >= in */
        int64_t pads[2 * SP];
        bool slice = false;
        for (int i = 0; i < nsp; i++) {
            int64_t ek = (g.kernel[i] - 1) * g.dil[i] + 1;
            int64_t pe = g.pad_end[i] > 0 ? g.pad_end[i] : 0;
            int64_t size = (g.out[i] + g.pad_begin[i] + pe - ek) / g.stride[i] + 1;
            if (g.out[i] + g.pad_begin[i] + pe < ek || size < g.in[i])
                return og_gb_fail(b, n, OG_ERR_INTERNAL, "bad input-gradient geometry");
            slice = slice || size > g.in[i];
            pads[i] = g.pad_begin[i];
            pads[nsp + i] = pe;
        }
        int r = og_gb_op2(b, "Conv", dyc, n->in[1]);
        og_rule_conv_attrs(b, og_gb_last(b), nsp, g.stride, g.dil, pads, g.group);
        if (slice) r = og_rule_slice(b, r, axes, zeros, g.in, NULL, nsp);
        dx[0] = r;
    }
    if (og_gb_wants(b, n, 1))
        dx[1] = conv_dw(b, dyc, n->in[0], g.m, g.group, nsp, g.out, g.in, g.kernel, g.stride, g.dil,
                        g.pad_begin);
    if (og_gb_wants(b, n, 2)) dx[2] = bias_grad(b, dy[0], rank);
    return og_gb_status(b);
}

/* ---- Col2Im ---------------------------------------------------------------------------- */

/* Col2Im's gradient with image_shape or block_shape known only at run time: the same
 * im2col as a Conv of dY ([N·C, 1, image...], shaped from Shape(dY)) by the identity of the
 * K = Π block taps as a kernel [K, 1, block...] (EyeLike of a computed [K, K]), back to X's
 * shape.  The spatial count is the grad's rank − 2, or the length of image_shape. */
static og_status col2im_dyn(og_gb *b, const og_node *n, int dy, int *dx)
{
    const og_conv_params *p = n->params;
    const og_value *Y = og_gb_value(b, n->out[0]), *I = og_gb_value(b, n->in[1]);
    int nsp = Y->rank >= 3                               ? Y->rank - 2
              : I->rank == 1 && og_dim_known(I->dims[0]) ? (int)I->dims[0]
                                                         : -1;
    if (nsp < 1 || nsp > SP)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient needs the number of spatial axes (the output's rank or the "
                          "length of image_shape)");
    int64_t s[SP], d[SP], pads[2 * SP], head[2] = {-1, 1}, one = 1;
    for (int i = 0; i < nsp; i++) {
        s[i] = p->n_strides ? p->strides[i] : 1;
        d[i] = p->n_dilations ? p->dilations[i] : 1;
        pads[i] = p->n_pads ? p->pads[i] : 0;
        pads[nsp + i] = p->n_pads ? p->pads[nsp + i] : 0;
    }
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int h = og_gb_const_i64(b, head, 2);
    int gs = og_gb_op(b, "Concat", 2, (int[]){h, og_rule_shape_tail(b, dy, 2)});
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int g = og_gb_op2(b, "Reshape", dy, gs);
    int bl = n->in[2];
    int k = og_gb_op1(b, "ReduceProd", bl); /* [1] */
    og_gb_attr_int(b, og_gb_last(b), "keepdims", 1);
    int kk = og_gb_op(b, "Concat", 2, (int[]){k, k});
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int eye = og_gb_op1(b, "EyeLike", og_gb_op1(b, "ConstantOfShape", kk));
    og_gb_attr_int(b, og_gb_last(b), "dtype", (int64_t)dt);
    int ks = og_gb_op(b, "Concat", 3, (int[]){k, og_gb_const_i64(b, &one, 1), bl});
    og_gb_attr_int(b, og_gb_last(b), "axis", 0);
    int cols = og_gb_op2(b, "Conv", g, og_gb_op2(b, "Reshape", eye, ks));
    og_rule_conv_attrs(b, og_gb_last(b), nsp, s, d, pads, 1);
    dx[0] = og_gb_reshape_like(b, cols, n->in[0]);
    return og_gb_status(b);
}

static og_status g_col2im(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_conv_params *p = n->params;
    const og_tensor *im = og_gb_value(b, n->in[1])->known, *bl = og_gb_value(b, n->in[2])->known;
    if (!p || !n->parsed) return og_gb_fail(b, n, OG_ERR_INTERNAL, "attributes not parsed");
    if (!im || !bl || im->numel != bl->numel || im->numel < 1 || im->numel > SP)
        return col2im_dyn(b, n, dy[0], dx);
    int nsp = (int)im->numel, rank = nsp + 2;
    int64_t K = 1, shp[OG_MAX_RANK], ks[OG_MAX_RANK], s[SP], d[SP], pads[2 * SP];
    shp[0] = -1;
    shp[1] = 1;
    ks[1] = 1;
    for (int i = 0; i < nsp; i++) {
        shp[2 + i] = og_tensor_get_i64(im, i);
        ks[2 + i] = og_tensor_get_i64(bl, i);
        if (ks[2 + i] < 1 || ks[2 + i] > 4096 || (K *= ks[2 + i]) > 4096)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "gradient of a block of more than 4096 taps");
        s[i] = p->n_strides ? p->strides[i] : 1;
        d[i] = p->n_dilations ? p->dilations[i] : 1;
        pads[i] = p->n_pads ? p->pads[i] : 0;
        pads[nsp + i] = p->n_pads ? p->pads[nsp + i] : 0;
    }
    ks[0] = K;
    int64_t *eye = og_calloc(og_gb_alloc(b), (size_t)(K * K), sizeof *eye);
    if (!eye) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    for (int64_t t = 0; t < K; t++) eye[t * K + t] = 1;
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int ker =
        og_rule_cast(b, og_rule_reshape_c(b, og_gb_const_i64(b, eye, (int)(K * K)), ks, rank), dt);
    og_free(og_gb_alloc(b), eye);
    int cols = og_gb_op2(b, "Conv", og_rule_reshape_c(b, dy[0], shp, rank), ker);
    og_rule_conv_attrs(b, og_gb_last(b), nsp, s, d, pads, 1);
    dx[0] = og_gb_reshape_like(b, cols, n->in[0]);
    return og_gb_status(b);
}

const og_grad_rule og_grad_conv[] = {
    {"Conv", "", g_conv}, {"ConvTranspose", "", g_conv_transpose}, {"Col2Im", "", g_col2im}, {0}};
