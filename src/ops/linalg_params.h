/*
 * linalg_params.h: the parsed attributes of Gemm and Einsum, shared by their op definitions
 * (src/ops/linalg.c) and CPU kernels (src/kernels/cpu/linalg*.c).  Internal header.
 *
 * Einsum: every subscript gets a fixed label id: 'a'..'z' are 0..25, 'A'..'Z' are 26..51, and the
 * axes an ellipsis stands for are 52.. (right-aligned across operands, numpy style, so
 * ellipses of different lengths broadcast).
 */
#ifndef OG_LINALG_PARAMS_H
#define OG_LINALG_PARAMS_H

#include "ops/op.h"

/* MatMul's output shape (numpy's matmul: batch dims broadcast, a 1-D operand promoted and its
 * dim dropped) from a and b into out's rank and dims (dtype untouched); MatMulInteger and
 * QLinearMatMul share it (src/ops/qlinear.c).  Unknown ranks leave out unknown. */
og_status og_matmul_shape(const og_op_ctx *c, const og_vinfo *a, const og_vinfo *b, og_vinfo *out);

typedef struct og_gemm_params {
    float alpha, beta;
    int trans_a, trans_b;
    bool c_broadcast; /* C may broadcast to [M,N] (always from opset 7) */
} og_gemm_params;

#define OG_EIN_ELL0   52
#define OG_EIN_LABELS (OG_EIN_ELL0 + OG_MAX_RANK)

/* One term of the equation: its letters, and where the ellipsis sits among them. */
typedef struct og_einsum_term {
    int n;                 /* letters */
    int ell;               /* the ellipsis comes before sub[ell]; -1 if there is none */
    char sub[OG_MAX_RANK]; /* the letters, in order */
} og_einsum_term;

typedef struct og_einsum_params {
    int n_in;           /* operands (terms on the left-hand side) */
    og_einsum_term out; /* explicit, or derived (implicit mode) at parse time */
    og_einsum_term in[];
} og_einsum_params;

/* Label ids of the axes of a tensor of rank `rank` written with term t, when ellipses stand
 * for ell_rank axes in all (output: rank = t->n + ell_rank if t has an ellipsis).  False if
 * the rank does not fit the term. */
bool og_einsum_axes(const og_einsum_term *t, int rank, int ell_rank, int *lab);

#endif /* OG_LINALG_PARAMS_H */
