/* loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: attributes and shape
 * inference.  Input (scores) is [N, C, d1, ..., dk], target (labels) [N, d1, ..., dk], the
 * optional weight [C]. */
#include <string.h>

#include "ops/loss.h"

static og_status parse_loss(const og_op_ctx *c, void **params)
{
    og_status st;
    if ((st = og_attr_check_type(c, "reduction", OG_ATTR_STRING))) return st;
    if ((st = og_attr_check_type(c, "ignore_index", OG_ATTR_INT))) return st;
    og_loss_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    const char *r = og_attr_string(c->node, "reduction", "mean");
    if (strcmp(r, "none") == 0) {
        p->reduction = OG_REDUCE_NONE;
    } else if (strcmp(r, "sum") == 0) {
        p->reduction = OG_REDUCE_SUM;
    } else if (strcmp(r, "mean") == 0) {
        p->reduction = OG_REDUCE_MEAN;
    } else {
        og_free(c->alloc, p);
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute 'reduction' is '%s', expected none, sum or mean", r);
    }
    p->has_ignore = og_node_attr(c->node, "ignore_index") != NULL;
    p->ignore_index = og_attr_int(c->node, "ignore_index", 0);
    *params = p;
    return OG_OK;
}

static og_status infer_loss(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_loss_params *p = c->node->params;
    static const og_dtype index_types[] = {OG_INT32, OG_INT64, OG_UNDEFINED};
    /* float16 in every version; bfloat16 from SoftmaxCrossEntropyLoss-13 (none for
     * NegativeLogLikelihoodLoss up to opset 21) */
    og_dtype types[23];
    bool sce = strcmp(c->node->op_type, "SoftmaxCrossEntropyLoss") == 0;
    og_types_with_half(c, og_types_float, 1, sce ? 13 : 0, types);
    og_status st;
    if ((st = og_check_dtype(c, in, 0, types))) return st;
    if ((st = og_check_dtype(c, in, 1, index_types))) return st;
    if (n_in > 2) {
        if ((st = og_check_dtype(c, in, 2, types))) return st;
        if ((st = og_check_same_dtype(c, in, 0, 2))) return st;
    }
    const og_vinfo *x = &in[0], *t = &in[1];
    if (x->rank >= 0 && x->rank < 2)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 0 has rank %d, expected at least 2 ([N, C, ...])", x->rank);
    if (x->rank >= 2 && t->rank >= 0) {
        char a[128], b[128];
        bool ok = t->rank == x->rank - 1;
        for (int d = 0; ok && d < t->rank; d++) {
            int64_t xd = x->dims[d == 0 ? 0 : d + 1], td = t->dims[d];
            if (og_dim_known(xd) && og_dim_known(td) && xd != td) ok = false;
        }
        if (!ok)
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 1 (target) has shape %s, expected input 0's shape %s "
                               "without the class dim 1",
                               og_shape_str(t->rank, t->dims, a, sizeof a),
                               og_shape_str(x->rank, x->dims, b, sizeof b));
    }
    if (n_in > 2 && in[2].rank >= 0) {
        const og_vinfo *w = &in[2];
        int64_t C = x->rank >= 2 ? x->dims[1] : OG_DIM_UNKNOWN;
        if (w->rank != 1 || (og_dim_known(C) && og_dim_known(w->dims[0]) && w->dims[0] != C))
            return og_op_error(c, OG_ERR_SHAPE, "input 2 (weight) must have shape [C] = [%lld]",
                               (long long)C);
    }
    out[0].dtype = x->dtype;
    if (p->reduction != OG_REDUCE_NONE) {
        out[0].rank = 0;
    } else if (x->rank >= 2) {
        out[0].rank = x->rank - 1;
        out[0].dims[0] = x->dims[0];
        for (int d = 2; d < x->rank; d++) out[0].dims[d - 1] = x->dims[d];
        /* the target may know dims the input does not */
        for (int d = 0; t->rank == out[0].rank && d < t->rank; d++)
            if (!og_dim_known(out[0].dims[d])) out[0].dims[d] = t->dims[d];
    } else if (t->rank >= 0) {
        og_vinfo_copy_shape(&out[0], t);
        out[0].dtype = x->dtype;
    }
    if (n_out > 1) og_vinfo_copy_shape(&out[1], x);
    return OG_OK;
}

const og_op_def og_ops_loss[] = {{"NegativeLogLikelihoodLoss", "",
                                  OG_SINCE(NegativeLogLikelihoodLoss), 2, 3, 1, 1, parse_loss, NULL,
                                  infer_loss, 0},
                                 {"SoftmaxCrossEntropyLoss", "", OG_SINCE(SoftmaxCrossEntropyLoss),
                                  2, 3, 1, 2, parse_loss, NULL, infer_loss, 0},
                                 {0}};
