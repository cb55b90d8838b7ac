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
og_status og_ml_tree_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out);

#endif
