/* conv_deform.c: DeformConv (19), a convolution whose taps sample the input at learned
 * offsets (bilinear, N-D), weighted by an optional mask.  Its attributes are Conv's
 * (og_conv_parse; no auto_pad) plus offset_group, read where used; its output shape is
 * Conv's, which the offset's spatial dims must match. */
#include "ops/conv_params.h"

static og_status deform_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "offset_group", OG_ATTR_INT);
    if (st) return st;
    if (og_attr_int(c->node, "offset_group", 1) < 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'offset_group' must be >= 1, got %lld",
                           (long long)og_attr_int(c->node, "offset_group", 1));
    return og_conv_parse(c, params, false);
}

static og_status deform_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    static const og_dtype types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};
    og_status st = og_check_dtype(c, in, 0, types);
    for (int i = 1; !st && i < n_in; i++)
        if (c->node->in[i] >= 0) st = og_check_same_dtype(c, in, 0, i);
    if (st) return st;
    bool has_b = n_in > 3 && c->node->in[3] >= 0, has_mask = n_in > 4 && c->node->in[4] >= 0;
    int64_t b_len = has_b && in[3].rank == 1 ? in[3].dims[0] : -1;
    if (has_b && in[3].rank >= 0 && in[3].rank != 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 3 (B) has rank %d, expected 1", in[3].rank);
    og_conv_geom g;
    st = og_conv_geometry(c->node, c->node->params, c->runtime, in[0].rank, in[0].dims, in[1].rank,
                          in[1].dims, b_len, &g);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    if (g.nsp < 0) return OG_OK;
    int64_t og = og_attr_int(c->node, "offset_group", 1), q = 1;
    for (int i = 0; i < g.nsp; i++) q = q >= 0 && g.kernel[i] >= 0 ? q * g.kernel[i] : -1;
    if (og_dim_known(g.c) && g.c % og)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 0 has %lld channels, not divisible by "
                           "offset_group=%lld",
                           (long long)g.c, (long long)og);
    /* offset [N, og * Q * nsp, out...], mask [N, og * Q, out...] */
    struct {
        int i;
        int64_t ch;
        const char *name;
    } aux[2] = {{2, q >= 0 ? og * q * g.nsp : -1, "offset"}, {4, q >= 0 ? og * q : -1, "mask"}};
    for (int a = 0; a < 2; a++) {
        const og_vinfo *v = &in[aux[a].i];
        if ((a == 1 && !has_mask) || v->rank < 0) continue;
        bool ok = v->rank == g.nsp + 2 &&
                  !(og_dim_known(v->dims[0]) && og_dim_known(g.n) && v->dims[0] != g.n) &&
                  !(og_dim_known(v->dims[1]) && aux[a].ch >= 0 && v->dims[1] != aux[a].ch);
        for (int i = 0; ok && i < g.nsp; i++)
            ok = !(og_dim_known(v->dims[2 + i]) && og_dim_known(g.out[i]) &&
                   v->dims[2 + i] != g.out[i]);
        if (!ok) {
            char s[128];
            return og_op_error(c, OG_ERR_SHAPE,
                               "input %d (%s) has shape %s, expected [N, %lld, output dims]",
                               aux[a].i, aux[a].name, og_shape_str(v->rank, v->dims, s, sizeof s),
                               (long long)aux[a].ch);
        }
    }
    out[0].rank = g.nsp + 2;
    out[0].dims[0] = g.n;
    out[0].dims[1] = g.m;
    for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.out[i];
    return OG_OK;
}

const og_op_def og_ops_conv_deform[] = {
    {"DeformConv", "", OG_SINCE(DeformConv), 3, 5, 1, 1, deform_parse, NULL, deform_infer, 0},
    {0},
};
