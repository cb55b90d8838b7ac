/*
 * ew_chain.h: a chain of float element-wise steps run block by block (ew_chain.c), for the
 * element-wise loops an executor fuses (src/exec/fuse_ew.h).  Internal header.
 *
 * The steps are the nodes of a chain in order: each reads the chain's operands (tensors
 * read from outside it) and earlier steps' results, on blocks of at most OG_EW_BLOCK
 * elements that stay in the L1 cache; a step whose result is read outside the chain also
 * writes it to its own full-size output.  A pass of several nodes over a large tensor then
 * reads and writes memory once instead of once per node.
 *
 * Every step computes what the node's own kernel computes, bit for bit: Add, Sub, Mul and
 * Div are single IEEE operations (no contraction), Sum adds its inputs from left to right
 * as binary.c does, Pow of a single exponent 2, 3 or 0.5 takes binary.c's expressions for
 * them, and a unary step calls the float loop its node was bound to (og_cpu_unary_f32).
 */
#ifndef OG_EW_CHAIN_H
#define OG_EW_CHAIN_H

#include "kernels/cpu/kernel.h"

#define OG_EW_MAX_STEPS 16 /* steps of one chain */
#define OG_EW_MAX_OPS   16 /* operands of one chain */
#define OG_EW_MAX_ARGS  4  /* arguments of one step (Sum's inputs) */
#define OG_EW_BLOCK     256

typedef enum og_ew_op {
    OG_EW_ADD, /* and Sum: its arguments added from left to right */
    OG_EW_SUB,
    OG_EW_MUL,
    OG_EW_DIV,
    OG_EW_UNARY,  /* the bound float loop `unary` */
    OG_EW_SQUARE, /* Pow with an exponent of 2: x * x, as binary.c's fast path */
    OG_EW_CUBE,   /* of 3: x * x * x */
    OG_EW_SQRT,   /* of 0.5: sqrtf(x) */
    OG_EW_POW     /* a plan's Pow, one of the three above at each run (fuse_ew.c), never run */
} og_ew_op;

/* How an operand spreads over the chain's shape: all of it (the same shape), one value,
 * one row of the last axis repeated (a vector of that axis's length, as a bias), or one
 * value per row (the shape with a last axis of 1, as a mean over that axis). */
typedef enum og_ew_spread { OG_EW_FULL, OG_EW_SCALAR, OG_EW_ROW, OG_EW_COL } og_ew_spread;

typedef struct og_ew_operand {
    const float *data; /* NULL (and OG_EW_FULL) for an operand no step reads */
    og_ew_spread spread;
} og_ew_operand;

typedef struct og_ew_step {
    og_ew_op op;
    const void *unary; /* OG_EW_UNARY: the node's binding (og_kernel_binding.impl) */
    int n_args;        /* 1 for a unary step (and Pow's three), 2 for a binary one, up to
                        * OG_EW_MAX_ARGS for Sum */
    /* per argument: an earlier step's index (>= 0), or -1 - k for operand k */
    int arg[OG_EW_MAX_ARGS];
    float *out; /* the step's full-size output, NULL when only later steps read it */
} og_ew_step;

/* Run steps[0..n_steps-1] over numel elements; `row` is the last axis's length (it must
 * divide numel when an operand is OG_EW_ROW or OG_EW_COL).  Every step's result has numel elements:
 * each has at least one full argument (an OG_EW_FULL operand or a step), which the caller checks.
 * Threads (k->workers or OpenMP) split the blocks when the pass is large.  Errors:
 * OG_ERR_NOMEM for the blocks of scratch (og_scratch_get). */
og_status og_cpu_ew_chain(const og_kernel_ctx *k, const og_ew_step *steps, int n_steps,
                          const og_ew_operand *ops, int n_ops, int64_t numel, int64_t row);

/* The float loop of a unary node's binding (og_kernel_binding.impl of Exp, Erf, Tanh,
 * Sigmoid, Sqrt, Log, Neg, Abs, Relu or Reciprocal bound for float) on x[0..n-1] into
 * y[0..n-1]: that node's kernel's values (unary.c). */
void og_cpu_unary_f32(const void *impl, const float *x, float *y, int64_t n);

#endif /* OG_EW_CHAIN_H */
