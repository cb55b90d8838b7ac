/* select.h: what the data-dependent selections (src/ops/select.c: Unique,
 * NonMaxSuppression) share with their kernels.  Their output sizes depend on the values, so
 * run-time inference computes the selection to size the outputs and the kernel computes it
 * again to fill them (the executor's contract: inference sizes, the kernel writes).
 * Internal header. */
#ifndef OG_OPS_SELECT_H
#define OG_OPS_SELECT_H

#include "ops/op.h"

typedef struct og_unique_params {
    bool has_axis;
    int64_t axis;
    bool sorted;
} og_unique_params;

/* Unique over the m items of x (its elements, or its slices along the axis): n_unique, and
 * per output position u the item first holding it (first[u]) and how many hold it
 * (count[u]); per item i its output position (inverse[i]).  Arrays allocated with c->alloc
 * (og_unique_free).  Items compare by value (integers exactly, floats with every NaN equal
 * and after every number, strings by bytes, slices lexicographically). */
typedef struct og_unique {
    int axis; /* -1: the flattened tensor */
    int64_t m, n_unique;
    int64_t *first, *count, *inverse;
} og_unique;
/* How Unique orders the elements of one dtype: cmp(x, i, j) is the three-way comparison of
 * elements i and j of x.  A kernel binds the order of its input's dtype once (select); run-time
 * inference picks it per call. */
typedef struct og_unique_order {
    int (*cmp)(const og_tensor *x, int64_t i, int64_t j);
} og_unique_order;
/* The order of dtype t (a generic one, reading elements through og_tensor_get_i64, for the
 * float8 and 4-bit types). */
const og_unique_order *og_unique_order_of(og_dtype t);
/* order NULL: x's dtype's, picked here. */
og_status og_unique_run(const og_op_ctx *c, const og_tensor *x, const og_unique_order *order,
                        og_unique *u);
void og_unique_free(const og_allocator *a, og_unique *u);

/* NonMaxSuppression: the selected (batch, class, box) triples, n of them, into a new array of
 * 3 n int64 (c->alloc), in the order the op outputs them. */
og_status og_nms_run(const og_op_ctx *c, const og_tensor *const *in, int n_in, int64_t **sel,
                     int64_t *n);

#endif /* OG_OPS_SELECT_H */
