/* pool_lp_roi.c: two pools of the pool family outside pool.c's window engine: GlobalLpPool
 * (2: the Lp norm over all spatial positions of each channel) and MaxRoiPool (1: Fast R-CNN's
 * max pooling of regions of interest into a fixed grid). */
#include "ops/op.h"

static const og_dtype types_float[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_UNDEFINED};

/* GlobalLpPool's p, MaxRoiPool's pooled shape and spatial scale. */
typedef struct og_lproi_params {
    int64_t p;
    int64_t pooled[2];
    float scale;
} og_lproi_params;

static og_status lproi_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_status st = og_attr_check_type(c, "p", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "pooled_shape", OG_ATTR_INTS);
    if (!st) st = og_attr_check_type(c, "spatial_scale", OG_ATTR_FLOAT);
    if (st) return st;
    og_lproi_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    p->p = og_attr_int(n, "p", 2);
    p->scale = og_attr_float(n, "spatial_scale", 1.0f);
    if (n->op_type[0] == 'G' && p->p < 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'p' must be >= 1, got %lld",
                           (long long)p->p);
    if (n->op_type[0] == 'M') {
        int cnt = 0;
        const int64_t *ps = og_attr_ints(n, "pooled_shape", &cnt);
        if (!ps || cnt != 2 || ps[0] < 1 || ps[1] < 1)
            return og_op_error(c, OG_ERR_MODEL,
                               "attribute 'pooled_shape' must be two positive "
                               "sizes (height, width)");
        p->pooled[0] = ps[0];
        p->pooled[1] = ps[1];
    }
    return OG_OK;
}

static og_status global_lp_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_float);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    if (in[0].rank >= 0 && in[0].rank < 3)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 must be [N, C, spatial...], got rank %d",
                           in[0].rank);
    for (int d = 2; d < in[0].rank; d++) out[0].dims[d] = 1;
    return OG_OK;
}

static og_status max_roi_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    const og_lproi_params *p = c->node->params;
    og_status st = og_check_dtype(c, in, 0, types_float);
    if (!st) st = og_check_same_dtype(c, in, 0, 1);
    if (st) return st;
    if (in[0].rank >= 0 && in[0].rank != 4)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 must be [N, C, H, W], got rank %d",
                           in[0].rank);
    if (in[1].rank >= 0 && (in[1].rank != 2 || (in[1].dims[1] >= 0 && in[1].dims[1] != 5)))
        return og_op_error(c, OG_ERR_SHAPE, "input 1 (rois) must be [R, 5]");
    og_vinfo_set(&out[0], in[0].dtype, 4,
                 (int64_t[]){in[1].rank == 2 ? in[1].dims[0] : OG_DIM_UNKNOWN,
                             in[0].rank == 4 ? in[0].dims[1] : OG_DIM_UNKNOWN, p->pooled[0],
                             p->pooled[1]});
    return OG_OK;
}

const og_op_def og_ops_pool_lp_roi[] = {
    {"GlobalLpPool", "", OG_SINCE(GlobalLpPool), 1, 1, 1, 1, lproi_parse, NULL, global_lp_infer, 0},
    {"MaxRoiPool", "", OG_SINCE(MaxRoiPool), 2, 2, 1, 1, lproi_parse, NULL, max_roi_infer, 0},
    {0},
};
