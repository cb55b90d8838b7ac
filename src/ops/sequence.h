/* sequence.h: what the sequence and optional ops' meaning shares with their kernels and
 * gradient rules.  Internal header. */
#ifndef OG_OPS_SEQUENCE_H
#define OG_OPS_SEQUENCE_H

#include "ops/op.h"

/* Attributes of SplitToSequence (axis, keepdims), ConcatFromSequence (axis, new_axis) and
 * SequenceEmpty (dtype). */
typedef struct og_seq_params {
    int64_t axis;
    bool keepdims;
    bool new_axis;
    og_dtype dtype;
} og_seq_params;

/* SplitToSequence's parts of x along `axis` (normalized): their count into *n and, when sizes
 * is not NULL, their lengths into a new array (og_malloc'd with c->alloc).  split may be NULL
 * (parts of 1), a scalar (parts of that length, the last one shorter) or a 1-D tensor of
 * lengths summing to the axis' size.  Errors: OG_ERR_SHAPE naming the bad split. */
og_status og_seq_split_sizes(const og_op_ctx *c, const og_tensor *x, int axis,
                             const og_tensor *split, int64_t *n, int64_t **sizes);

/* A position input (SequenceAt, SequenceInsert, SequenceErase: a scalar int32 or int64) in
 * [-len, len - 1] (insert: [-len, len]), normalized to [0, len] into *pos; `input` names the
 * input in messages.  Errors: OG_ERR_SHAPE (not a scalar), OG_ERR_TYPE, OG_ERR_RUNTIME (out of
 * range). */
og_status og_seq_position(const og_op_ctx *c, const og_tensor *p, int64_t len, bool insert,
                          int64_t *pos);

#endif /* OG_OPS_SEQUENCE_H */
