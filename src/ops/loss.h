/*
 * loss.h: parsed attributes of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
 * shared by src/ops/loss.c and src/kernels/cpu/loss.c.  Internal header.
 */
#ifndef OG_OPS_LOSS_H
#define OG_OPS_LOSS_H

#include "ops/op.h"

typedef enum og_loss_reduction {
    OG_REDUCE_NONE = 0,
    OG_REDUCE_SUM = 1,
    OG_REDUCE_MEAN = 2
} og_loss_reduction;

typedef struct og_loss_params {
    og_loss_reduction reduction;
    bool has_ignore;
    int64_t ignore_index;
} og_loss_params;

#endif /* OG_OPS_LOSS_H */
