/* resize_params.h: parsed attributes of Resize and Upsample, and the output-size and
 * scale computation that both infer (src/ops/resize.c) and the kernel
 * (src/kernels/cpu/resize.c) need; the attributes of GridSample and AffineGrid.  Internal
 * header. */
#ifndef OG_RESIZE_PARAMS_H
#define OG_RESIZE_PARAMS_H

#include "ops/op.h"

typedef enum { OG_RESIZE_NEAREST, OG_RESIZE_LINEAR, OG_RESIZE_CUBIC } og_resize_mode;

typedef enum {
    OG_COORD_HALF_PIXEL,
    OG_COORD_HALF_PIXEL_SYMMETRIC,
    OG_COORD_PYTORCH_HALF_PIXEL,
    OG_COORD_ALIGN_CORNERS,
    OG_COORD_ASYMMETRIC,
    OG_COORD_TF_HALF_PIXEL_FOR_NN,
    OG_COORD_TF_CROP_AND_RESIZE
} og_resize_coord;

typedef enum {
    OG_NEAREST_ROUND_PREFER_FLOOR,
    OG_NEAREST_ROUND_PREFER_CEIL,
    OG_NEAREST_FLOOR,
    OG_NEAREST_CEIL,
    OG_NEAREST_SIMPLE /* Upsample and Resize-10: floor when upsampling, ceil when downsampling */
} og_resize_nearest;

typedef enum { OG_KEEP_STRETCH, OG_KEEP_NOT_LARGER, OG_KEEP_NOT_SMALLER } og_resize_keep;

typedef struct og_resize_params {
    og_resize_mode mode;
    og_resize_coord coord;
    og_resize_nearest nearest;
    og_resize_keep keep;
    double cubic_a;
    double extrapolation;
    bool exclude_outside;
    bool antialias;
    int n_axes; /* 0: all axes */
    int64_t axes[OG_MAX_RANK];
    int n_attr_scales; /* Upsample-7's scales attribute */
    double attr_scales[OG_MAX_RANK];
    /* input positions (-1: the version has none) */
    int in_roi, in_scales, in_sizes;
} og_resize_params;

/* GridSample (mode, padding_mode, align_corners) and AffineGrid (align_corners). */
typedef enum { OG_GRID_LINEAR, OG_GRID_NEAREST, OG_GRID_CUBIC } og_grid_mode;
typedef enum { OG_GRID_ZEROS, OG_GRID_BORDER, OG_GRID_REFLECTION } og_grid_padding;
typedef struct og_grid_params {
    og_grid_mode mode;
    og_grid_padding padding;
    bool align_corners;
} og_grid_params;

/* What a Resize/Upsample node computes at run time, per axis. */
typedef struct og_resize_shape {
    int64_t out_dims[OG_MAX_RANK];
    double scale[OG_MAX_RANK]; /* output/input, as the coordinate transforms use it */
    /* scale * input as a real number, rounded like the reference implementation (float32
     * for float32 scales); align_corners and tf_crop_and_resize divide by it minus 1 */
    double out_f[OG_MAX_RANK];
    double roi_span[OG_MAX_RANK]; /* tf_crop_and_resize: roi end - start (1 where none) */
    double roi_off[OG_MAX_RANK];  /* roi start * (input - 1) */
} og_resize_shape;

/* The output shape of a Resize/Upsample node from the input dims and the roi, scales and
 * sizes tensors (NULL when omitted).  Fails with a message naming the input on bad values.
 * Float32 roi and scales are combined in float32 where the reference implementation does,
 * so that coordinates on exact ties (a crop edge, a .5) fall the same way. */
og_status og_resize_plan(const og_op_ctx *c, const og_resize_params *p, int rank,
                         const int64_t *in_dims, const og_tensor *roi, const og_tensor *scales,
                         const og_tensor *sizes, og_resize_shape *out);

/* Interpolation pieces shared by the CPU kernel (src/kernels/cpu/resize.c) and the
 * gradient rule (src/grad/resize.c), so that both use the same weights. */
/* Input coordinate of output coordinate x along axis a (the spec's transforms). */
double og_resize_source_coord(const og_resize_params *p, const og_resize_shape *sh, int a,
                              int64_t x, int64_t in);
int64_t og_resize_clamp(int64_t i, int64_t in);
/* Keys' cubic convolution kernel with coefficient a. */
double og_resize_cubic(double x, double a);
/* The input index nearest mode picks for input coordinate xo. */
int64_t og_resize_nearest_index(const og_resize_params *p, double xo, double scale);
/* Taps per output coordinate, and in *start the first one's offset from floor(x). */
int og_resize_tap_count(const og_resize_params *p, double scale, int *start);

#endif /* OG_RESIZE_PARAMS_H */
