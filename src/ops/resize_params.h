/* resize_params.h: parsed attributes of Resize and Upsample, and the output-size and
 * scale computation that both infer (src/ops/resize.c) and the kernel
 * (src/kernels/cpu/resize.c) need.  Internal header. */
#ifndef OG_RESIZE_PARAMS_H
#define OG_RESIZE_PARAMS_H

#include "ops/op.h"

typedef enum { OG_RESIZE_NEAREST, OG_RESIZE_LINEAR, OG_RESIZE_CUBIC } og_resize_mode;

typedef enum {
    OG_COORD_HALF_PIXEL,
    OG_COORD_HALF_PIXEL_SYMMETRIC,
    OG_COORD_PYTORCH_HALF_PIXEL,
    OG_COORD_ALIGN_CORNERS,
    OG_COORD_ASYMMETRIC,
    OG_COORD_TF_HALF_PIXEL_FOR_NN,
    OG_COORD_TF_CROP_AND_RESIZE
} og_resize_coord;

typedef enum {
    OG_NEAREST_ROUND_PREFER_FLOOR,
    OG_NEAREST_ROUND_PREFER_CEIL,
    OG_NEAREST_FLOOR,
    OG_NEAREST_CEIL,
    OG_NEAREST_SIMPLE /* Upsample and Resize-10: floor when upsampling, ceil when downsampling */
} og_resize_nearest;

typedef enum { OG_KEEP_STRETCH, OG_KEEP_NOT_LARGER, OG_KEEP_NOT_SMALLER } og_resize_keep;

typedef struct og_resize_params {
    og_resize_mode mode;
    og_resize_coord coord;
    og_resize_nearest nearest;
    og_resize_keep keep;
    double cubic_a;
    double extrapolation;
    bool exclude_outside;
    bool antialias;
    int n_axes; /* 0: all axes */
    int64_t axes[OG_MAX_RANK];
    int n_attr_scales; /* Upsample-7's scales attribute */
    double attr_scales[OG_MAX_RANK];
    /* input positions (-1: the version has none) */
    int in_roi, in_scales, in_sizes;
} og_resize_params;

/* Output dims and per-axis scale (output/input, as the spec's coordinate transforms use it)
 * and roi (start/end per axis, 0/1 where none) of a Resize/Upsample node at run time.
 * scales/sizes/roi: the input tensors (NULL when omitted).  Fails with a message naming
 * the input on bad values. */
og_status og_resize_plan(const og_op_ctx *c, const og_resize_params *p, int rank,
                         const int64_t *in_dims, const og_tensor *roi, const og_tensor *scales,
                         const og_tensor *sizes, int64_t *out_dims, double *scale,
                         double *roi_start, double *roi_end);

#endif /* OG_RESIZE_PARAMS_H */
