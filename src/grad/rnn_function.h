/*
 * rnn_function.h: the model-local functions that define RNNTrain/GRUTrain/LSTMTrain and
 * RNNGrad/GRUGrad/LSTMGrad (onnxgrad's domain, src/ops/rnn.h) with standard ops, so that a
 * saved training graph runs in other runtimes.  Internal to src/grad/rnn.c.
 *
 * A function's body depends on the node's attributes, element type, which inputs it has and
 * which gradients it gives, so each combination is one overload of the op's function (IR
 * 10's NodeProto.overload), named by og_rnn_fn_key's text.  Each direction is a Loop over the
 * steps (Loop exists at every opset onnxgrad loads, Scan only from 9) whose body reads the
 * step's slice of the precomputed input product with Gather; sequence lengths become a 0/1
 * mask per row that carries the state through the steps past a row's length.
 */
#ifndef OG_GRAD_RNN_FUNCTION_H
#define OG_GRAD_RNN_FUNCTION_H

#include "grad/grad.h"
#include "ops/rnn.h"

/* What a pair of functions depends on, captured from the forward node before its rule
 * changes it. */
typedef struct og_rnn_fn_key {
    og_rnn_params p;
    og_dtype dtype;
    unsigned has_in;    /* bit i: the forward node has input i */
    unsigned want;      /* bit i: the gradient of input i is wanted */
    unsigned has_dy;    /* bit j: output j has a gradient */
    char overload[256]; /* the text naming the combination */
} og_rnn_fn_key;

/* Capture n's combination (dy: the rule's output gradients; want[i]: input i's gradient is
 * wanted).  Records an error in b (and returns false) when X's type is not known. */
bool og_rnn_fn_key_init(og_rnn_fn_key *k, og_gb *b, const og_node *n, const og_rnn_params *p,
                        const int *dy, const bool *want);

/* Add the Train and Grad functions of key k to the training graph (once per overload) and
 * give the overload to the backward node grad_node (the forward node gets it from
 * og_gb_forward_retype's caller through k->overload). */
void og_rnn_functions(og_gb *b, const og_rnn_fn_key *k, int grad_node);

#endif /* OG_GRAD_RNN_FUNCTION_H */
