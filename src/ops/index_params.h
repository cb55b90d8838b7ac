/* index_params.h: parsed attributes of the index family (Gather, GatherElements, GatherND,
 * OneHot, Scatter, ScatterElements, ScatterND, Compress, ReverseSequence), shared by
 * src/ops/index.c and src/kernels/cpu/index.c.  Internal header. */
#ifndef OG_INDEX_PARAMS_H
#define OG_INDEX_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum og_scatter_reduction {
    OG_SCATTER_NONE = 0,
    OG_SCATTER_ADD = 1,
    OG_SCATTER_MUL = 2,
    OG_SCATTER_MAX = 3,
    OG_SCATTER_MIN = 4
} og_scatter_reduction;

typedef struct og_index_params {
    int64_t axis;       /* as given (may be negative); normalized against the rank at use */
    int64_t batch_dims; /* GatherND */
    og_scatter_reduction reduction;
    bool has_axis;                 /* Compress: the axis attribute is there (else: flattened) */
    int64_t batch_axis, time_axis; /* ReverseSequence */
} og_index_params;

#endif /* OG_INDEX_PARAMS_H */
