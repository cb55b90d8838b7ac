/* ml.h: what the ai.onnx.ml kernels share (ml.c, ml_tree.c).  Internal header. */
#ifndef OG_KERNELS_CPU_ML_H
#define OG_KERNELS_CPU_ML_H

#include "kernels/cpu/kernel.h"
#include "ops/ml_params.h"

/* Apply a post transform to one row of n scores in place (n >= 2 for SOFTMAX*), with
 * onnxruntime's formulas: LOGISTIC 1 / (1 + e^-|s|) mirrored, SOFTMAX with the max
 * subtracted, SOFTMAX_ZERO leaving scores within 1e-7 of 0 out, PROBIT through the
 * erfinv approximation onnxruntime uses. */
void og_ml_post_row(double *s, int64_t n, og_post post);

/* The tree ensembles' kernel (ml_tree.c). */
/* The typed loops an ml kernel is bound to (select, from the input's dtype and the node's
 * float64 output flag): load converts n elements of x from element off into doubles (as
 * (double) does), store writes n doubles into y from element off in y's dtype (float32
 * rounds once).  The kernels compute in float64 between the two. */
typedef struct og_ml_io {
    void (*load)(const void *x, int64_t off, int64_t n, double *d);
    void (*store)(void *y, int64_t off, int64_t n, const double *d);
} og_ml_io;
/* For x of dtype t (float32, float64, int64, int32) and a float64 (else float32) output;
 * NULL for another dtype. */
const og_ml_io *og_ml_io_of(og_dtype t, bool out_double);
/* k->impl, or without a binding og_ml_io_of(t, out_double). */
static inline const og_ml_io *og_ml_io_bound(const og_kernel_ctx *k, og_dtype t, bool out_double)
{
    return k->impl ? (const og_ml_io *)k->impl : og_ml_io_of(t, out_double);
}

og_status og_ml_tree_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out);
/* The tree ensembles' select: og_ml_io_of for x's dtype and their output's. */
const void *og_ml_tree_select(const og_node *n, og_dtype t);

#endif
