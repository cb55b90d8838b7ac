/* rnn.c: gradients of RNN, GRU and LSTM (src/ops/rnn.c): backpropagation through time.
 *
 * The forward node becomes its training form (RNNTrain, GRUTrain, LSTMTrain of onnxgrad's
 * domain), which also outputs `saved`, the per-step pre-activations and states (rnn.h); one
 * backward node (RNNGrad, GRUGrad, LSTMGrad) reads the forward's inputs, saved and the
 * output gradients and gives the gradients of X, W, R, B, initial_h, initial_c and P.  Its
 * kernel walks the steps in the reverse of the forward's order (src/kernels/cpu/rnn.c):
 *   per step, with a = the pre-activations, s = the state:  da = ds·act'(a) (chained through
 *   the gates), ds_{t-1} = da·R (+ the direct paths: GRU's z·ds, LSTM's f·dC and peepholes)
 *   then over all steps:  dX = dA·W,  dW = dAᵀ·X,  dR = dAᵀ·S_{t-1},  dWb = Σ dA,
 *   dRb = Σ dA (GRU with linear_before_reset: Σ of the reset-gated product's gradient),
 *   dP = Σ dA_gate·C (C_{t-1} for i and f, C_t for o).
 * The saved training graph defines both ops as model-local functions of standard ops
 * (rnn_function.c), so that other runtimes can run it. */
#include <stdio.h>
#include <string.h>

#include "grad/rnn_function.h"
#include "grad/rule_util.h"

static og_status g_rnn(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_rnn_params *p = n->params;
    if (!p || !n->parsed) {
        og_gb_fail(b, n, OG_ERR_INTERNAL, "the node's attributes were not parsed");
        return og_gb_status(b);
    }
    int nin = og_rnn_n_in(p->kind), nout = og_rnn_n_out(p->kind);
    const char *base = p->kind == OG_RNN_LSTM ? "LSTM" : p->kind == OG_RNN_GRU ? "GRU" : "RNN";
    char train[16], grad[16];
    snprintf(train, sizeof train, "%sTrain", base);
    snprintf(grad, sizeof grad, "%sGrad", base);
    int in[12], outs[8];
    bool want[8];
    for (int i = 0; i < nin; i++) {
        in[i] = i < n->n_in ? n->in[i] : -1;
        want[i] = i != OG_RNN_IN_SEQ && WANTS(i);
    }
    for (int j = 0; j < nout; j++) in[nin + 1 + j] = j < n->n_out ? dy[j] : -1;
    og_gb_import(b, OG_RNN_DOMAIN, 1);
    og_rnn_fn_key key;
    if (!og_rnn_fn_key_init(&key, b, n, p, dy, want)) return og_gb_status(b);
    in[nin] = og_gb_forward_output(b, n, nout); /* saved */
    int node = og_gb_op_ext(b, OG_RNN_DOMAIN, grad, nin + 1 + nout, in, nin, want, outs);
    og_gb_copy_attrs(b, node, n, NULL);
    og_rnn_functions(b, &key, node);
    for (int i = 0; i < nin; i++)
        if (want[i]) dx[i] = outs[i];
    og_gb_forward_retype(b, n, OG_RNN_DOMAIN, train, key.overload); /* last: n->params goes */
    return og_gb_status(b);
}

const og_grad_rule og_grad_rnn[] = {
    {"RNN", "", g_rnn}, {"GRU", "", g_rnn}, {"LSTM", "", g_rnn}, {0}};
