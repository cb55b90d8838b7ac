/*
 * fuse.h: activations fused into the node that produces their input, expansions run
 * inside the depthwise Conv after them and a stem's MaxPool inside the Conv before it, for
 * inference sessions, and weight gradients'
 * Convs run on X and dY as they are, for every session on the CPU (fuse.c).  Internal
 * header of exec/.
 *
 * A node whose kernel applies an activation to its output (og_kernel_def.act: Conv,
 * ConvTranspose, Add: a residual Add and its Relu, Gemm: an MLP's layers) and whose output 0
 * is read by one activation only (Relu, Clip with constant bounds, HardSwish, HardSigmoid,
 * Sigmoid, or Sigmoid and a Mul making SiLU x * Sigmoid(x)), and by nothing else, is run
 * with that activation (og_kernel_ctx.act) and writes the activation's output directly; the
 * activation nodes do not run.  The
 * graph is not changed: a saved model is the model loaded, and a run that asks for a value
 * the plan leaves out runs the nodes one by one.
 */
#ifndef OG_EXEC_FUSE_H
#define OG_EXEC_FUSE_H

#include "ir/ir.h"
#include "kernels/cpu/kernel.h"

typedef struct og_fusion {
    og_act act; /* for a producer: the activation its kernel applies (else OG_FUSE_NONE) */
    int out;    /* for a producer: the value its output 0 is written to; -1 otherwise */
    bool skip;  /* an activation node fused into its producer, or a node of a weight
                 * gradient's pattern (below) */
    /* A weight gradient's Conv (og_fusion_plan_wgrad): computes out = dW from these two
     * values (X and dY of the forward Conv) instead of its own inputs; -1 otherwise. */
    int wg_x, wg_dy;
    /* A depthwise Conv that runs the pointwise Conv producing its input inside it
     * (og_fusion_plan_pwdw): that Conv's node, which is skipped; -1 otherwise. */
    int pre;
    /* A stride-2 Conv that runs the MaxPool reading its output inside it
     * (og_fusion_plan_pool): that MaxPool's node, which is skipped, and whose output is the
     * Conv's `out`; -1 otherwise. */
    int post;
    /* A Conv that adds the other input of the Add reading its output (og_fusion_plan_res):
     * that value, -1 otherwise. */
    int res;
    /* A MatMul that reads input j through a Transpose (og_fusion_plan_transpose): that
     * Transpose's node, which is skipped, or -1. */
    int tr[2];
} og_fusion;

/* The plan for graph g with its nodes bound (kernels[i] for node i): fills
 * nodes[0..g->n_nodes-1] and internal[0..g->n_values-1] (true for the values the plan
 * never computes: a producer's own output 0, a fused Sigmoid's output); returns the number
 * of nodes fused away. */
int og_fusion_plan(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                   bool *internal);

/* The weight-gradient plan, for every session on the CPU (nodes as og_fusion_plan left
 * them, or cleared: call og_fusion_plan first, or og_fusion_clear).  The gradient builder
 * writes a Conv's dW (src/grad/conv.c: conv_dw, group 1) as
 *   dW = Transpose(Conv(Transpose(X), Transpose(dY)) [-> Slice from 0 on the spatial axes])
 * with perm (1, 0, 2, ...) each time: the inner Conv has the batch as channels and the
 * input channels as images.  That Conv runs og_conv_wgrad (kernels/cpu/conv.c) on X and dY
 * as they are and writes dW; the Slice and the outer Transpose do not run, nor the inner
 * Transposes when the Conv is their only reader.  Needs dW's shape static, of 4096
 * elements at least (smaller ones go faster the unfused way), and float or double values.  Returns
 * the number of nodes skipped. */
int og_fusion_plan_wgrad(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                         bool *internal);
/* The expansion plan, for inference sessions on the CPU, after og_fusion_plan: a depthwise
 * Conv D (one channel per group) whose input is read by D alone and comes from a pointwise
 * Conv P (1x1, stride 1, no pads, group 1, with or without a fused activation) runs P
 * inside it (og_kernel_ctx.pre: kernels/cpu/conv_pwdw.h), where the shapes, static but
 * for the batch, are ones conv_pwdw.c computes; P does not run and its output is internal.
 * Returns the number of nodes skipped. */
int og_fusion_plan_pwdw(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                        bool *internal);
/* The pooling plan, for inference sessions on the CPU, after og_fusion_plan_pwdw: a
 * MaxPool M (kernel 3x3, strides 2, pads 1 on each side, dilations 1, floor, no Indices
 * output) whose input is read by M alone and comes from a Conv C (with no fused activation,
 * Relu or a clamp: those keep the largest value the largest) that conv_s2.c sums by panels
 * (og_conv_s2_panel_applies: ResNet's stem), shapes static but for the batch, runs inside C
 * (og_kernel_ctx.max_pool): M does not run, C writes M's output and its own is internal.
 * Returns the number of nodes skipped. */
int og_fusion_plan_pool(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                        bool *internal);
/* The residual plan, for inference sessions on the CPU, after og_fusion_plan_pool: a float
 * pointwise Conv C (1x1, strides 1, no pads, one group, a 2-D input static but for the
 * batch) with no fused activation, no fused expansion or pooling, whose output v is read by
 * one Add A alone (v not a graph output) whose other input r has v's shape (each dim known
 * and equal, or the same symbol: a run where they differ fails with OG_ERR_SHAPE; no
 * broadcast), and is written before C runs, adds r in its own stores
 * (og_kernel_ctx.res) and applies A's fused activation after it: A does not run, C writes
 * A's output (or that of A's activation), v is internal.  MobileNet's and EfficientNet's
 * projections: MobileNet-v2 224 0.98-0.99 of its time on one and two threads.  ResNet-18's
 * 3x3 Convs before an Add (Winograd, where the kernel adds the residual in a pass after the
 * product, as the Add did) measured no faster, and are left alone.  Returns the number of
 * Adds skipped. */
int og_fusion_plan_res(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                       bool *internal);
/* The transposed-operand plan, for CPU sessions (not debug ones), after the plans above:
 * a float or double Transpose T whose output is read by MatMuls alone (as input 0, 1 or
 * both), none of them fused otherwise, and is not a graph output, does not run: each of
 * those MatMuls reads T's input X with T's perm (og_kernel_ctx.perm) instead.  Needs X's
 * rank static (T's perm or its reverse), at least 2, and X's last axis among the last two
 * of T's output, so that the product reads the matrices in place (as stored or
 * transposed, the leading dimension a stride of X).  PyTorch's attention writes
 * k.transpose(-2, -1), and the gradient builder a swap of the last two axes for each
 * batched MatMul's gradients.  reads: scratch of g->n_values ints.  Returns the number of
 * Transposes skipped. */
int og_fusion_plan_transpose(const og_graph *g, const og_kernel_binding *kernels, og_fusion *nodes,
                             bool *internal, int *reads);
/* No fusion: every node as it is, no value internal. */
void og_fusion_clear(const og_graph *g, og_fusion *nodes, bool *internal);

#endif /* OG_EXEC_FUSE_H */
