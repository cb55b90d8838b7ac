/*
 * fuse_ew.h: chains of float element-wise nodes run as one loop (fuse_ew.c), for every
 * session on the CPU.  Internal header of exec/.
 *
 * A chain is a run of nodes Add, Sub, Mul, Div, Pow (opset 7 on: numpy broadcasting; Pow
 * of a single exponent 2, 3 or 0.5 at run time), Sum (2 to 4 inputs), Neg, Abs, Relu,
 * Reciprocal, Sqrt, Exp, Log, Erf, Sigmoid and Tanh on float
 * tensors, each reading an earlier member's output, that can all run where the first one
 * runs: every value they read from outside the chain is computed before it.  The chain runs
 * there, block by block (kernels/cpu/ew_chain.h): a member's output that only other members
 * read is never written to memory, the others are.  An exported erf-GELU and the gradient
 * the builder writes for it are such chains: 8 nodes and 14 passes over the tensor become
 * one pass that reads one tensor and writes the three the backward pass reads.
 *
 * Whether a chain runs fused is decided at each run from its operands' shapes: each must
 * be the chain's shape (that of its largest operand), a single value, or a vector along
 * its last axis, and every member must read one operand of the chain's shape or a member.
 * Otherwise (other broadcasting) its nodes run one by one, as they would unfused.  A run
 * that needs only some members (og_session_run_named) runs those.  The values are those
 * of the nodes run one by one, bit for bit; a run that asks for a member's output gets
 * it.  The graph is not changed.
 */
#ifndef OG_EXEC_FUSE_EW_H
#define OG_EXEC_FUSE_EW_H

#include "exec/fuse.h"
#include "kernels/cpu/ew_chain.h"

typedef struct og_ew_group {
    int n;                            /* members */
    int node[OG_EW_MAX_STEPS];        /* member nodes, ascending: the chain runs at node[0] */
    og_ew_step step[OG_EW_MAX_STEPS]; /* per member (outputs set at each run) */
    bool outside[OG_EW_MAX_STEPS];    /* per member: a node outside the chain reads its output */
    int n_ops;
    int op_value[OG_EW_MAX_OPS]; /* the values the chain reads from outside, by operand */
} og_ew_group;

typedef struct og_ew_plan {
    int n_groups, n_members;
    og_ew_group *groups;
    int *group_of;        /* per node: its chain, -1 when none */
    bool *done;           /* per chain: it ran fused in this run, and its members do not run */
    int64_t n_fused_runs; /* chains run fused since the session began (for tests) */
} og_ew_plan;

/* The chains of graph g with its nodes bound (kernels[i]), leaving out the nodes and values
 * the other plans use (fusion and internal as og_fusion_plan and the others left them).
 * Errors: OG_ERR_NOMEM. */
og_status og_ew_plan_make(const og_graph *g, const og_kernel_binding *kernels,
                          const og_fusion *fusion, const bool *internal, const og_allocator *a,
                          og_ew_plan *out);
void og_ew_plan_free(og_ew_plan *p, const og_allocator *a);

#endif /* OG_EXEC_FUSE_EW_H */
