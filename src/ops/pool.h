/*
 * pool.h: parsed attributes of the pooling ops (AveragePool, MaxPool, GlobalAveragePool,
 * GlobalMaxPool, LpPool, MaxUnpool, RoiAlign), shared by src/ops/pool.c and src/kernels/cpu/pool.c.
 * Internal header.
 */
#ifndef OG_OPS_POOL_H
#define OG_OPS_POOL_H

#include "ops/op.h"

typedef enum og_pool_kind {
    OG_POOL_AVG = 0,
    OG_POOL_MAX = 1,
    OG_POOL_LP = 2,    /* LpPool: (Σ |x|^p)^(1/p) over the window, pads count as zeros */
    OG_POOL_UNPOOL = 3 /* MaxUnpool: kernel_shape, strides, pads only */
} og_pool_kind;

typedef enum og_pad_mode {
    OG_PAD_NOTSET = 0,
    OG_PAD_SAME_UPPER = 1,
    OG_PAD_SAME_LOWER = 2,
    OG_PAD_VALID = 3
} og_pad_mode;

typedef struct og_pool_params {
    og_pool_kind kind;
    bool global;
    int nsp; /* spatial dims (kernel_shape entries); 0 for global pools */
    og_pad_mode auto_pad;
    bool ceil_mode;
    bool count_include_pad;
    bool column_major; /* MaxPool storage_order = 1 */
    int64_t p;         /* LpPool's norm order */
    int64_t kernel[OG_MAX_RANK];
    int64_t strides[OG_MAX_RANK];
    int64_t dilations[OG_MAX_RANK];
    int64_t pads[2 * OG_MAX_RANK]; /* begins, then ends (explicit pads only) */
} og_pool_params;

/* Output size and begin pad of spatial dim i for an input of size `in` (known).  Returns
 * false when the output would be empty or the sizes overflow. */
bool og_pool_dim(const og_pool_params *p, int i, int64_t in, int64_t *out, int64_t *pad_begin);

/* RoiAlign */
typedef struct og_roi_params {
    int64_t out_h, out_w, sampling_ratio;
    double spatial_scale;
    bool max_mode;   /* mode "max" (else "avg") */
    bool half_pixel; /* coordinate_transformation_mode half_pixel (16's default; 10 has none) */
} og_roi_params;

/* MaxUnpool: the spatial size its windows cover, (in − 1)·stride − pads + kernel, of spatial
 * dim i (the output's when output_shape is not given); false on overflow or below 1. */
bool og_unpool_dim(const og_pool_params *p, int i, int64_t in, int64_t *out);

#endif /* OG_OPS_POOL_H */
