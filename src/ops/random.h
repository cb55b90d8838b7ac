/* random.h: what the random ops' meaning (src/ops/random.c) shares with their kernels and
 * the executor, which seeds a generator per seeded node.  Internal header. */
#ifndef OG_OPS_RANDOM_H
#define OG_OPS_RANDOM_H

#include "ops/op.h"

typedef struct og_random_params {
    og_dtype dtype; /* OG_UNDEFINED: the input's (the Like ops, Bernoulli) */
    double low, high, mean, scale;
    bool has_seed;
    uint64_t seed;
    int64_t sample_size; /* Multinomial */
    int n_shape;         /* RandomUniform, RandomNormal */
    int64_t shape[OG_MAX_RANK];
} og_random_params;

/* Whether random node n (resolved) has a seed attribute, and the generator seed it stands for
 * (the attribute is a float: its value's bits as a double). */
bool og_random_node_seed(const og_node *n, uint64_t *seed);

#endif /* OG_OPS_RANDOM_H */
