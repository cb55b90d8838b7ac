/*
 * optim.h: parsed attributes of the ai.onnx.preview.training optimizers Momentum, Adagrad
 * and Adam, shared by src/ops/optim.c and src/kernels/cpu/optim.c.  Internal header.
 *
 * Inputs are R (learning rate, float scalar), T (update count, int64 scalar), then `groups`
 * runs of n tensors each: X1..Xn, G1..Gn, then the states (Momentum V1..Vn; Adagrad
 * H1..Hn; Adam V1..Vn, H1..Hn).  Outputs are the new X1..Xn followed by the new states, in
 * the same order.
 */
#ifndef OG_OPS_OPTIM_H
#define OG_OPS_OPTIM_H

#include "ops/op.h"

typedef enum og_optim_kind { OG_OPTIM_MOMENTUM, OG_OPTIM_ADAGRAD, OG_OPTIM_ADAM } og_optim_kind;

typedef struct og_optim_params {
    og_optim_kind kind;
    int n;        /* tensors optimized */
    int n_states; /* 1 (V or H) or 2 (V and H) */
    bool nesterov;
    /* attribute values (float in the model), unused ones 0 */
    double alpha, beta, epsilon, norm_coefficient, norm_coefficient_post, decay_factor;
} og_optim_params;

#endif /* OG_OPS_OPTIM_H */
