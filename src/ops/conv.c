/* conv.c: Conv, ConvTranspose and Col2Im: attributes, geometry (pads and output sizes),
 * inference. */
#include <string.h>

#include "ops/conv_params.h"

/* Bound on attribute values so that the geometry arithmetic cannot overflow int64. */
#define CONV_ATTR_MAX ((int64_t)1 << 31)

/* ---- parse ----------------------------------------------------------------------- */

/* Read an INTS attribute into dst (capacity cap); *n stays 0 when absent. */
static og_status read_ints(const og_op_ctx *c, const char *name, int64_t *dst, int cap, int *n,
                           int64_t min)
{
    og_status st = og_attr_check_type(c, name, OG_ATTR_INTS);
    if (st) return st;
    int cnt = 0;
    const int64_t *v = og_attr_ints(c->node, name, &cnt);
    *n = 0;
    if (!v) return OG_OK;
    if (cnt > cap)
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "attribute '%s' has %d entries, at most %d allowed", name, cnt, cap);
    for (int i = 0; i < cnt; i++) {
        if (v[i] < min || v[i] > CONV_ATTR_MAX)
            return og_op_error(c, OG_ERR_MODEL,
                               "attribute '%s' has value %lld at index %d (allowed %lld..%lld)",
                               name, (long long)v[i], i, (long long)min, (long long)CONV_ATTR_MAX);
        dst[i] = v[i];
    }
    *n = cnt;
    return OG_OK;
}

og_status og_conv_parse(const og_op_ctx *c, void **params, bool transpose)
{
    og_status st;
    og_conv_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->transpose = transpose;
    p->since = c->node->since_version;

    if ((st = og_attr_check_type(c, "group", OG_ATTR_INT))) goto fail;
    if ((st = og_attr_check_type(c, "auto_pad", OG_ATTR_STRING))) goto fail;
    p->group = og_attr_int(c->node, "group", 1);
    if (p->group < 1 || p->group > CONV_ATTR_MAX) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'group' is %lld, must be >= 1",
                         (long long)p->group);
        goto fail;
    }
    int auto_pad = 0;
    if ((st = og_attr_auto_pad(c, &auto_pad))) goto fail;
    p->auto_pad = auto_pad; /* the enum follows og_attr_auto_pad's numbering */

    if ((st = read_ints(c, "kernel_shape", p->kernel, OG_CONV_MAX_SP, &p->n_kernel, 1))) goto fail;
    if ((st = read_ints(c, "strides", p->strides, OG_CONV_MAX_SP, &p->n_strides, 1))) goto fail;
    if ((st = read_ints(c, "dilations", p->dilations, OG_CONV_MAX_SP, &p->n_dilations, 1)))
        goto fail;
    if ((st = read_ints(c, "pads", p->pads, 2 * OG_CONV_MAX_SP, &p->n_pads, 0))) goto fail;
    if (p->n_pads % 2) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'pads' has %d entries, expected an even count",
                         p->n_pads);
        goto fail;
    }
    if (transpose) {
        if ((st = read_ints(c, "output_padding", p->output_padding, OG_CONV_MAX_SP,
                            &p->n_output_padding, 0)))
            goto fail;
        if ((st = read_ints(c, "output_shape", p->output_shape, OG_CONV_MAX_SP + 2,
                            &p->n_output_shape, 0)))
            goto fail;
    }
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, p);
    return st;
}

static og_status conv_parse(const og_op_ctx *c, void **params)
{
    return og_conv_parse(c, params, false);
}

static og_status conv_transpose_parse(const og_op_ctx *c, void **params)
{
    return og_conv_parse(c, params, true);
}

/* ---- geometry -------------------------------------------------------------------- */

static int64_t floor_half(int64_t t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }

/* Split ConvTranspose's total padding (may be negative) between begin and end. */
static void split_transpose_pad(const og_conv_params *p, int64_t total, int64_t *b, int64_t *e)
{
    int64_t h = floor_half(total);
    bool upper = p->auto_pad == OG_CONV_SAME_UPPER;
    if (p->since >= 11) {
        /* opset 11: SAME_UPPER puts the odd unit at the end, everything else at the start */
        *b = upper ? h : total - h;
    } else {
        /* opset 1: the reverse, as that version's formula reads */
        *b = upper ? total - h : h;
    }
    *e = total - *b;
}

og_status og_conv_geometry(const og_node *node, const og_conv_params *p, bool runtime, int x_rank,
                           const int64_t *x_dims, int w_rank, const int64_t *w_dims, int64_t b_len,
                           og_conv_geom *g)
{
    og_op_ctx c = {node, NULL, NULL, runtime};
    const char *op = p->transpose ? "ConvTranspose" : "Conv";
    int nsp = -1;
    g->nsp = -1;
    g->n = g->c = g->m = OG_DIM_UNKNOWN;
    g->group = p->group;

    if (x_rank >= 0 && x_rank < 3)
        return og_op_error(&c, OG_ERR_SHAPE,
                           "input 0 (X) has rank %d, expected at least 3 (N, C, spatial dims)",
                           x_rank);
    if (w_rank >= 0 && w_rank < 3)
        return og_op_error(&c, OG_ERR_SHAPE, "input 1 (W) has rank %d, expected at least 3",
                           w_rank);
    if (x_rank >= 0 && w_rank >= 0 && x_rank != w_rank)
        return og_op_error(&c, OG_ERR_SHAPE, "input 1 (W) has rank %d, but input 0 (X) has rank %d",
                           w_rank, x_rank);
    if (x_rank >= 0)
        nsp = x_rank - 2;
    else if (w_rank >= 0)
        nsp = w_rank - 2;
    else if (p->n_kernel)
        nsp = p->n_kernel;
    else if (p->n_strides)
        nsp = p->n_strides;
    else if (p->n_dilations)
        nsp = p->n_dilations;
    else if (p->n_pads)
        nsp = p->n_pads / 2;
    if (nsp < 0) {
        if (runtime) return og_op_error(&c, OG_ERR_INTERNAL, "shapes unknown at run time");
        return OG_OK;
    }
    if (nsp > OG_CONV_MAX_SP)
        return og_op_error(&c, OG_ERR_UNSUPPORTED, "%d spatial dims, at most %d supported", nsp,
                           OG_CONV_MAX_SP);
    /* channel and spatial dims (declared ones may be anything) within the attributes' bound,
     * so that the products and sums below stay far from int64's limits */
    for (int r = 1; r < 2 + nsp; r++) {
        int64_t xd = x_rank >= 0 ? x_dims[r] : OG_DIM_UNKNOWN;
        int64_t wd = w_rank >= 0 ? w_dims[r] : OG_DIM_UNKNOWN;
        if ((og_dim_known(xd) && xd > CONV_ATTR_MAX) || (og_dim_known(wd) && wd > CONV_ATTR_MAX))
            return og_op_error(&c, OG_ERR_SHAPE,
                               "dim %d of input 0 (X) or 1 (W) is %lld, above %lld", r,
                               (long long)(og_dim_known(xd) && xd > CONV_ATTR_MAX ? xd : wd),
                               (long long)CONV_ATTR_MAX);
    }
    if (w_rank >= 0 && og_dim_known(w_dims[0]) && w_dims[0] > CONV_ATTR_MAX)
        return og_op_error(&c, OG_ERR_SHAPE, "dim 0 of input 1 (W) is %lld, above %lld",
                           (long long)w_dims[0], (long long)CONV_ATTR_MAX);

    /* attribute lengths against the spatial rank */
    struct {
        const char *name;
        int n, want;
    } lens[] = {{"kernel_shape", p->n_kernel, nsp},
                {"strides", p->n_strides, nsp},
                {"dilations", p->n_dilations, nsp},
                {"pads", p->n_pads, 2 * nsp},
                {"output_padding", p->n_output_padding, nsp}};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        if (lens[i].n && lens[i].n != lens[i].want)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "attribute '%s' has %d entries, expected %d for %d spatial dims",
                               lens[i].name, lens[i].n, lens[i].want, nsp);
    const int64_t *oshape = NULL;
    if (p->n_output_shape) {
        if (p->n_output_shape == nsp)
            oshape = p->output_shape;
        else if (p->n_output_shape == nsp + 2) /* some exporters write N and C too */
            oshape = p->output_shape + 2;
        else
            return og_op_error(&c, OG_ERR_SHAPE,
                               "attribute 'output_shape' has %d entries, expected %d",
                               p->n_output_shape, nsp);
    }
    g->nsp = nsp;

    /* channels */
    int64_t cx = x_rank >= 0 ? x_dims[1] : OG_DIM_UNKNOWN;
    int64_t w0 = w_rank >= 0 ? w_dims[0] : OG_DIM_UNKNOWN;
    int64_t w1 = w_rank >= 0 ? w_dims[1] : OG_DIM_UNKNOWN;
    g->n = x_rank >= 0 ? x_dims[0] : OG_DIM_UNKNOWN;
    g->c = cx;
    if (og_dim_known(cx) && cx % p->group)
        return og_op_error(&c, OG_ERR_SHAPE,
                           "input 0 (X) has %lld channels, not divisible by group=%lld",
                           (long long)cx, (long long)p->group);
    if (!p->transpose) {
        if (og_dim_known(w0) && w0 % p->group)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "input 1 (W) has %lld output channels (dim 0), not divisible by "
                               "group=%lld",
                               (long long)w0, (long long)p->group);
        if (og_dim_known(cx) && og_dim_known(w1) && w1 * p->group != cx)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "input 1 (W) has %lld input channels per group (dim 1), but X has "
                               "%lld channels and group=%lld, which needs %lld",
                               (long long)w1, (long long)cx, (long long)p->group,
                               (long long)(cx / p->group));
        g->m = w0;
    } else {
        if (og_dim_known(cx) && og_dim_known(w0) && w0 != cx)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "input 1 (W) has dim 0 = %lld, but X has %lld channels (they must "
                               "be equal for %s)",
                               (long long)w0, (long long)cx, op);
        g->m = og_dim_known(w1) ? w1 * p->group : OG_DIM_UNKNOWN;
    }
    if (b_len >= 0 && og_dim_known(g->m) && b_len != g->m)
        return og_op_error(&c, OG_ERR_SHAPE, "input 2 (B) has %lld elements, expected %lld (M)",
                           (long long)b_len, (long long)g->m);

    /* spatial dims */
    for (int i = 0; i < nsp; i++) {
        int64_t in = x_rank >= 0 ? x_dims[2 + i] : OG_DIM_UNKNOWN;
        int64_t k = w_rank >= 0 ? w_dims[2 + i] : OG_DIM_UNKNOWN;
        if (p->n_kernel) {
            if (og_dim_known(k) && k != p->kernel[i])
                return og_op_error(&c, OG_ERR_SHAPE,
                                   "attribute 'kernel_shape' has %lld at index %d, but input 1 "
                                   "(W) has %lld there",
                                   (long long)p->kernel[i], i, (long long)k);
            k = p->kernel[i];
        }
        int64_t s = p->n_strides ? p->strides[i] : 1;
        int64_t d = p->n_dilations ? p->dilations[i] : 1;
        int64_t pb = p->n_pads ? p->pads[i] : 0, pe = p->n_pads ? p->pads[nsp + i] : 0;
        if (p->auto_pad == OG_CONV_VALID) pb = pe = 0;
        g->in[i] = in;
        g->kernel[i] = k;
        g->stride[i] = s;
        g->dil[i] = d;
        g->pad_begin[i] = g->pad_end[i] = OG_DIM_UNKNOWN;
        g->out[i] = OG_DIM_UNKNOWN;
        bool known = og_dim_known(in) && og_dim_known(k);
        if (runtime && !known)
            return og_op_error(&c, OG_ERR_INTERNAL, "shapes unknown at run time");
        if (og_dim_known(k) && k == 0)
            return og_op_error(&c, OG_ERR_SHAPE, "input 1 (W) has a kernel dim of 0 (axis %d)",
                               2 + i);
        int64_t ek = og_dim_known(k) ? (k - 1) * d + 1 : OG_DIM_UNKNOWN;
        bool same = p->auto_pad == OG_CONV_SAME_UPPER || p->auto_pad == OG_CONV_SAME_LOWER;
        if (!p->transpose) {
            if (same) {
                if (og_dim_known(in)) g->out[i] = (in + s - 1) / s;
                if (known) {
                    int64_t total = (g->out[i] - 1) * s + ek - in;
                    if (total < 0) total = 0;
                    int64_t small = total / 2;
                    pb = p->auto_pad == OG_CONV_SAME_UPPER ? small : total - small;
                    pe = total - pb;
                }
            } else if (known) {
                int64_t padded = in + pb + pe;
                if (padded < ek)
                    return og_op_error(&c, OG_ERR_SHAPE,
                                       "kernel (dilated size %lld) is larger than the padded "
                                       "input (%lld = %lld + pads %lld, %lld) along spatial axis "
                                       "%d",
                                       (long long)ek, (long long)padded, (long long)in,
                                       (long long)pb, (long long)pe, i);
                g->out[i] = (padded - ek) / s + 1;
            }
        } else {
            int64_t op_i = p->n_output_padding ? p->output_padding[i] : 0;
            if (oshape || same) {
                if (oshape)
                    g->out[i] = oshape[i];
                else if (og_dim_known(in))
                    g->out[i] = in * s;
                if (known) {
                    int64_t total = s * (in - 1) + op_i + ek - g->out[i];
                    split_transpose_pad(p, total, &pb, &pe);
                }
            } else if (known) {
                int64_t out = s * (in - 1) + op_i + ek - pb - pe;
                if (out < 0)
                    return og_op_error(&c, OG_ERR_SHAPE,
                                       "output size along spatial axis %d would be %lld (input "
                                       "%lld, stride %lld, kernel %lld, pads %lld, %lld)",
                                       i, (long long)out, (long long)in, (long long)s,
                                       (long long)ek, (long long)pb, (long long)pe);
                g->out[i] = out;
            }
        }
        if (known) {
            g->pad_begin[i] = pb;
            g->pad_end[i] = pe;
        }
    }
    return OG_OK;
}

/* ---- infer ----------------------------------------------------------------------- */

static og_status conv_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    og_status st;
    const og_conv_params *p = c->node->params;
    bool has_b = n_in > 2 && c->node->in[2] >= 0;
    og_dtype types[23]; /* float16 in every version, no bfloat16 up to opset 21 */
    og_types_with_half(c, og_types_float, 1, 0, types);
    if ((st = og_check_dtype(c, in, 0, types))) return st;
    if ((st = og_check_dtype(c, in, 1, types))) return st;
    if ((st = og_check_same_dtype(c, in, 0, 1))) return st;
    int64_t b_len = -1;
    if (has_b) {
        if ((st = og_check_dtype(c, in, 2, types))) return st;
        if ((st = og_check_same_dtype(c, in, 0, 2))) return st;
        if (in[2].rank >= 0 && in[2].rank != 1)
            return og_op_error(c, OG_ERR_SHAPE, "input 2 (B) has rank %d, expected 1", in[2].rank);
        if (in[2].rank == 1 && og_dim_known(in[2].dims[0])) b_len = in[2].dims[0];
    }
    og_conv_geom g;
    st = og_conv_geometry(c->node, p, c->runtime, in[0].rank, in[0].dims, in[1].rank, in[1].dims,
                          b_len, &g);
    if (st) return st;
    (void)n_out;
    out[0].dtype = in[0].dtype != OG_UNDEFINED ? in[0].dtype : in[1].dtype;
    if (g.nsp < 0) return OG_OK;
    out[0].rank = g.nsp + 2;
    out[0].dims[0] = g.n;
    out[0].dims[1] = g.m;
    for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.out[i];
    return OG_OK;
}

/* ---- Col2Im --------------------------------------------------------------------------- */

static og_status col2im_parse(const og_op_ctx *c, void **params)
{
    og_conv_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    og_status st = read_ints(c, "strides", p->strides, OG_CONV_MAX_SP, &p->n_strides, 1);
    if (!st) st = read_ints(c, "dilations", p->dilations, OG_CONV_MAX_SP, &p->n_dilations, 1);
    if (!st) st = read_ints(c, "pads", p->pads, 2 * OG_CONV_MAX_SP, &p->n_pads, 0);
    if (st) {
        og_free(c->alloc, p);
        return st;
    }
    p->group = 1;
    *params = p;
    return OG_OK;
}

og_status og_col2im_geometry(const og_node *node, const og_conv_params *p, int nsp,
                             const int64_t *image, const int64_t *block, const int64_t *x_dims,
                             int64_t *C, int64_t *blocks)
{
    og_op_ctx c = {node, NULL, NULL, false};
    if ((p->n_strides && p->n_strides != nsp) || (p->n_dilations && p->n_dilations != nsp) ||
        (p->n_pads && p->n_pads != 2 * nsp))
        return og_op_error(&c, OG_ERR_MODEL,
                           "attributes strides, dilations and pads must have %d, %d and %d "
                           "entries (the image's dims)",
                           nsp, nsp, 2 * nsp);
    int64_t kvol = 1, L = 1;
    for (int i = 0; i < nsp; i++) {
        int64_t s = p->n_strides ? p->strides[i] : 1, d = p->n_dilations ? p->dilations[i] : 1;
        int64_t pb = p->n_pads ? p->pads[i] : 0, pe = p->n_pads ? p->pads[nsp + i] : 0;
        if (image[i] < 1 || block[i] < 1 || image[i] > CONV_ATTR_MAX || block[i] > CONV_ATTR_MAX)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "image_shape %lld and block_shape %lld of dim %d must be >= 1",
                               (long long)image[i], (long long)block[i], i);
        int64_t span = image[i] + pb + pe - (block[i] - 1) * d - 1;
        if (span < 0)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "dim %d: a block of %lld (dilation %lld) does not fit in %lld + "
                               "pads %lld, %lld",
                               i, (long long)block[i], (long long)d, (long long)image[i],
                               (long long)pb, (long long)pe);
        blocks[i] = span / s + 1;
        if (!og_mul_i64(kvol, block[i], &kvol) || !og_mul_i64(L, blocks[i], &L))
            return og_op_error(&c, OG_ERR_SHAPE, "the block or image sizes overflow");
    }
    *C = OG_DIM_UNKNOWN;
    if (og_dim_known(x_dims[1])) {
        if (x_dims[1] % kvol)
            return og_op_error(&c, OG_ERR_SHAPE,
                               "input 0 dim 1 is %lld, not a multiple of the block volume %lld",
                               (long long)x_dims[1], (long long)kvol);
        *C = x_dims[1] / kvol;
    }
    if (og_dim_known(x_dims[2]) && x_dims[2] != L)
        return og_op_error(&c, OG_ERR_SHAPE,
                           "input 0 dim 2 is %lld, but the image holds %lld block positions",
                           (long long)x_dims[2], (long long)L);
    return OG_OK;
}

/* input [N, C·Πblock, L], image_shape and block_shape 1-D int64 -> [N, C, image...] */
static og_status col2im_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    /* the schema's T less string and complex */
    static const og_dtype types[] = {OG_FLOAT,  OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_INT8,
                                     OG_INT16,  OG_INT32,  OG_INT64,   OG_UINT8,    OG_UINT16,
                                     OG_UINT32, OG_UINT64, OG_BOOL,    OG_UNDEFINED};
    static const og_dtype i64[] = {OG_INT64, OG_UNDEFINED};
    og_status st;
    if ((st = og_check_dtype(c, in, 0, types)) || (st = og_check_dtype(c, in, 1, i64)) ||
        (st = og_check_dtype(c, in, 2, i64)))
        return st;
    out[0].dtype = in[0].dtype;
    if (in[0].rank >= 0 && in[0].rank != 3)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, expected 3 (N, C·Πblock, L)",
                           in[0].rank);
    const og_tensor *im = in[1].value, *bl = in[2].value;
    int64_t nsp = in[1].rank == 1 ? in[1].dims[0] : (im ? im->numel : -1);
    if (nsp < 0) return OG_OK;
    if (nsp < 1 || nsp > OG_CONV_MAX_SP)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 1 (image_shape) has %lld entries, expected 1..%d", (long long)nsp,
                           OG_CONV_MAX_SP);
    out[0].rank = (int)nsp + 2;
    for (int d = 0; d < out[0].rank; d++) out[0].dims[d] = OG_DIM_UNKNOWN;
    if (in[0].rank == 3) out[0].dims[0] = in[0].dims[0];
    if (!im || !bl) return OG_OK;
    if (bl->numel != nsp || im->numel != nsp)
        return og_op_error(c, OG_ERR_SHAPE,
                           "inputs 1 (image_shape) and 2 (block_shape) have %lld "
                           "and %lld entries, expected the same",
                           (long long)im->numel, (long long)bl->numel);
    int64_t image[OG_CONV_MAX_SP], block[OG_CONV_MAX_SP], blocks[OG_CONV_MAX_SP], C;
    int64_t xd[3] = {OG_DIM_UNKNOWN, OG_DIM_UNKNOWN, OG_DIM_UNKNOWN};
    if (in[0].rank == 3) memcpy(xd, in[0].dims, sizeof xd);
    for (int i = 0; i < nsp; i++) {
        image[i] = og_tensor_get_i64(im, i);
        block[i] = og_tensor_get_i64(bl, i);
        out[0].dims[2 + i] = image[i];
    }
    if ((st = og_col2im_geometry(c->node, c->node->params, (int)nsp, image, block, xd, &C, blocks)))
        return st;
    out[0].dims[1] = C;
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

const og_op_def og_ops_conv[] = {
    {"Conv", "", OG_SINCE(Conv), 2, 3, 1, 1, conv_parse, NULL, conv_infer, 0},
    {"ConvTranspose", "", OG_SINCE(ConvTranspose), 2, 3, 1, 1, conv_transpose_parse, NULL,
     conv_infer, 0},
    {"Col2Im", "", OG_SINCE(Col2Im), 3, 3, 1, 1, col2im_parse, NULL, col2im_infer, 0},
    {0}};
