/*
 * reduce_params.h: the parsed attributes of the reduce family (Reduce*, ArgMax/ArgMin,
 * Softmax/LogSoftmax, CumSum, TopK), shared by src/ops/reduce.c (parse, infer) and
 * src/kernels/cpu/reduce.c (kernels).  Internal header of the family.
 */
#ifndef OG_REDUCE_PARAMS_H
#define OG_REDUCE_PARAMS_H

#include "ops/op.h"

typedef struct og_reduce_params {
    /* Reduce*: axes from the attribute (n_axes entries) unless axes_input */
    bool axes_input;           /* opset where axes is the optional input 1 */
    bool keepdims;             /* Reduce*, ArgMax, ArgMin */
    bool noop_with_empty_axes; /* Reduce* */
    int n_axes;
    int64_t axes[OG_MAX_RANK];
    /* ArgMax/ArgMin, Softmax/LogSoftmax, TopK: the (unnormalized) axis attribute */
    int64_t axis;
    bool select_last_index;  /* ArgMax/ArgMin */
    bool legacy_softmax;     /* Softmax/LogSoftmax before 13: 2-D coercion at axis */
    bool exclusive, reverse; /* CumSum */
    bool k_input;            /* TopK from 10: k is input 1 */
    int64_t k;               /* TopK before 10 */
    bool largest, sorted;    /* TopK */
} og_reduce_params;

/* Reduced-axes mask of a Reduce* node for an input of rank `rank`: axes from the attribute
 * or from `axes` (input 1, NULL when omitted).  *noop is set when the op is an identity
 * (empty axes with noop_with_empty_axes).  Errors (OG_ERR_MODEL for a bad attribute,
 * OG_ERR_RUNTIME/OG_ERR_SHAPE for a bad input) carry a message without the node label. */
og_status og_reduce_axes_mask(const og_reduce_params *p, int rank, const og_tensor *axes,
                              bool *mask, bool *noop);

#endif /* OG_REDUCE_PARAMS_H */
