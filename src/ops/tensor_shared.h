/*
 * tensor_shared.h: parsed attributes and resolution helpers shared by the tensor family's
 * op definitions (src/ops/tensor.c) and its CPU kernels (src/kernels/cpu/tensor*.c).
 * Internal to the family.
 */
#ifndef OG_TENSOR_SHARED_H
#define OG_TENSOR_SHARED_H

#include "ops/op.h"

/* Concat, Flatten, Split: the axis attribute (Split adds its sizes). */
typedef struct og_axis_params {
    int64_t axis;
} og_axis_params;

typedef struct og_cast_params {
    og_dtype to;   /* Cast's attribute (CastLike: unused, input 1's dtype) */
    bool saturate; /* (19) to a float8 type: out-of-range values give the largest value */
} og_cast_params;

typedef struct og_constant_params {
    const og_tensor *t; /* the attribute's tensor, or `owned` */
    og_tensor *owned;   /* built from value_float(s)/value_int(s) */
} og_constant_params;

typedef struct og_cos_params {
    og_dtype dtype;
    unsigned char bytes[8]; /* the fill element */
} og_cos_params;

typedef struct og_reshape_params {
    bool allowzero;
} og_reshape_params;

typedef struct og_shape_params {
    int64_t start, end; /* end INT64_MAX when absent */
} og_shape_params;

/* Squeeze/Unsqueeze before 13 (attribute axes). */
typedef struct og_axes_params {
    int n_axes; /* -1 when the attribute is absent */
    int64_t axes[OG_MAX_RANK];
} og_axes_params;

typedef struct og_split_params {
    int64_t axis;
    int64_t num_outputs; /* 0 when absent */
    int n_split;         /* -1 when the split attribute is absent */
    int64_t split[];
} og_split_params;

/* Slice before 10 (attributes). */
typedef struct og_slice_params {
    int n;
    bool has_axes;
    int64_t starts[OG_MAX_RANK], ends[OG_MAX_RANK], axes[OG_MAX_RANK];
} og_slice_params;

typedef struct og_transpose_params {
    int n_perm; /* 0: reverse */
    int64_t perm[OG_MAX_RANK];
} og_transpose_params;

typedef struct og_trilu_params {
    bool upper;
} og_trilu_params;

typedef enum og_pad_fill { OG_PAD_CONSTANT, OG_PAD_REFLECT, OG_PAD_EDGE, OG_PAD_WRAP } og_pad_fill;

typedef struct og_pad_params {
    og_pad_fill mode;
    float value; /* before 11 */
    int n_pads;  /* before 11: the pads attribute */
    int64_t pads[2 * OG_MAX_RANK];
} og_pad_params;

/* DepthToSpace, SpaceToDepth */
typedef struct og_d2s_params {
    int64_t blocksize;
    bool crd; /* DepthToSpace mode CRD (column, row, depth); else DCR */
} og_d2s_params;

/* CenterCropPad */
typedef struct og_ccp_params {
    int n_axes; /* -1: every axis */
    int64_t axes[OG_MAX_RANK];
} og_ccp_params;

/* EyeLike */
typedef struct og_eyelike_params {
    int64_t k;
    og_dtype dtype; /* OG_UNDEFINED: the input's */
} og_eyelike_params;

/* CenterCropPad: per axis of an input of rank r with dims `in`, the output dim and where
 * the copied block starts in the input (crop) and in the output (pad), from the target
 * sizes `shape` (n of them) over `axes` (n_axes < 0: all).  Fails on bad axes or sizes. */
og_status og_tensor_ccp_resolve(const og_op_ctx *c, const og_ccp_params *p, int r,
                                const int64_t *in, const int64_t *shape, int n, int64_t *out,
                                int64_t *crop, int64_t *pad);

/* Shape's [start, end) for an input of rank r. */
static inline void og_shape_range(const og_shape_params *p, int r, int64_t *start, int64_t *end)
{
    int64_t s = p->start, e = p->end;
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : (s > r ? r : s);
    e = e < 0 ? 0 : (e > r ? r : e);
    *start = s;
    *end = e < s ? s : e;
}

/* Slice: per input axis, the first index and step (step 1, start 0 for axes not sliced),
 * and the output dims.  *known is false when starts/ends/axes/steps or a sliced dim are not
 * known yet (load time); out_dims then holds OG_DIM_UNKNOWN for unknown dims. */
og_status og_tensor_slice_resolve(const og_op_ctx *c, const og_vinfo *in, int n_in, int64_t *starts,
                                  int64_t *steps, int64_t *out_dims, bool *known);

/* Pad: pads before (pb) and after (pe) for every axis of the input; *known as above. */
og_status og_tensor_pad_resolve(const og_op_ctx *c, const og_vinfo *in, int n_in, int64_t *pb,
                                int64_t *pe, bool *known);

#endif /* OG_TENSOR_SHARED_H */
