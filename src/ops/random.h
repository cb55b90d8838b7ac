/* random.h: what the random ops' meaning (src/ops/random.c) shares with their kernels.
 * Internal header. */
#ifndef OG_OPS_RANDOM_H
#define OG_OPS_RANDOM_H

#include "ops/op.h"

typedef struct og_random_params {
    og_dtype dtype; /* OG_UNDEFINED: the input's (the Like ops, Bernoulli) */
    double low, high, mean, scale;
    bool has_seed;
    uint64_t seed;       /* the seed attribute's bits (a float, as a double) */
    int64_t sample_size; /* Multinomial */
    int n_shape;         /* RandomUniform, RandomNormal */
    int64_t shape[OG_MAX_RANK];
} og_random_params;

#endif /* OG_OPS_RANDOM_H */
