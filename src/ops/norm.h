/*
 * norm.h: parsed attributes of the normalization ops (BatchNormalization,
 * InstanceNormalization, LayerNormalization, GroupNormalization, LpNormalization,
 * MeanVarianceNormalization, LRN) and Dropout, shared by src/ops/norm.c and
 * src/kernels/cpu/norm.c.  Internal header.
 */
#ifndef OG_OPS_NORM_H
#define OG_OPS_NORM_H

#include "ops/op.h"

typedef struct og_norm_params {
    double epsilon;
    double momentum;          /* BatchNormalization */
    bool training;            /* BatchNormalization: normalize with batch statistics */
    bool per_channel;         /* BatchNormalization: spatial = 1 (opset < 9 may say 0) */
    int64_t axis;             /* LayerNormalization, not yet normalized */
    og_dtype stash;           /* LayerNormalization: element type of Mean and InvStdDev */
    double ratio;             /* Dropout before opset 12 */
    uint64_t seed;            /* Dropout from opset 12 */
    int64_t groups;           /* GroupNormalization num_groups */
    int64_t p;                /* LpNormalization: 1 or 2 */
    double alpha, beta, bias; /* LRN */
    int64_t size;             /* LRN: channels in a window */
    int n_axes;               /* MeanVarianceNormalization */
    int64_t axes[OG_MAX_RANK];
} og_norm_params;

#endif /* OG_OPS_NORM_H */
