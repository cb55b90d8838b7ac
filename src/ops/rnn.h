/*
 * rnn.h: the recurrent ops RNN, GRU and LSTM, their training forms and their backward ops,
 * shared by src/ops/rnn.c (meaning), src/kernels/cpu/rnn.c (kernels) and src/grad/rnn.c
 * (gradient rule).  Internal header.
 *
 * The training forms live in onnxgrad's domain (OG_RNN_DOMAIN): RNNTrain, GRUTrain and
 * LSTMTrain take the inputs and attributes of the standard op and compute the same outputs,
 * plus one more, the per-step state the backward reads ("saved", below).  RNNGrad, GRUGrad
 * and LSTMGrad take the forward's inputs, then saved, then the gradients of the forward's
 * outputs, and give the gradient of each forward input at the input's own position.
 *
 *   RNNTrain/GRUTrain(X, W, R, B, sequence_lens, initial_h) -> Y, Y_h, saved
 *   LSTMTrain(X, W, R, B, sequence_lens, initial_h, initial_c, P) -> Y, Y_h, Y_c, saved
 *   RNNGrad/GRUGrad(X, W, R, B, sequence_lens, initial_h, saved, dY, dY_h)
 *       -> dX, dW, dR, dB, (nothing), dinitial_h
 *   LSTMGrad(X, W, R, B, sequence_lens, initial_h, initial_c, P, saved, dY, dY_h, dY_c)
 *       -> dX, dW, dR, dB, (nothing), dinitial_h, dinitial_c, dP
 *
 * saved has shape [D, T, N, K] (D directions, T steps, N batch rows, whatever the layout),
 * where row (d, t, n) holds, for the step that direction d computes at time t:
 *   RNN   K = 2H: the pre-activation a (before clip), then the state h after the step
 *   GRU   K = 5H: pre-activations of z, r, h~ (before clip), then the reset-gated product
 *                 Ht-1·Rhᵀ + Rbh (linear_before_reset; zeros otherwise), then h
 *   LSTM  K = 6H: pre-activations of i, o, f, c (W's order, peepholes added, before clip),
 *                 then the cell state C, then h
 * A step past a row's sequence length carries the state unchanged: its h (and C) are the
 * state carried through it (the initial state for a reverse direction, the last state for a
 * forward one), so the state before any step is the neighbouring row's or the initial one.
 */
#ifndef OG_OPS_RNN_H
#define OG_OPS_RNN_H

#include "ops/op.h"

/* onnxgrad's own op domain (its opset version 1). */
#define OG_RNN_DOMAIN "com.onnxgrad"

typedef enum og_rnn_kind { OG_RNN_SIMPLE = 0, OG_RNN_GRU = 1, OG_RNN_LSTM = 2 } og_rnn_kind;

/* What a node of the family computes. */
typedef enum og_rnn_role {
    OG_RNN_FORWARD = 0, /* RNN, GRU, LSTM */
    OG_RNN_TRAIN = 1,   /* ...Train: the outputs and saved */
    OG_RNN_BACKWARD = 2 /* ...Grad */
} og_rnn_role;

/* The activation functions the spec lists (their names compare case-insensitively). */
typedef enum og_rnn_act_kind {
    OG_ACT_RELU = 0,
    OG_ACT_TANH,
    OG_ACT_SIGMOID,
    OG_ACT_AFFINE,           /* alpha·x + beta */
    OG_ACT_LEAKY_RELU,       /* x >= 0 ? x : alpha·x */
    OG_ACT_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
    OG_ACT_SCALED_TANH,      /* alpha·tanh(beta·x) */
    OG_ACT_HARD_SIGMOID,     /* clamp(alpha·x + beta, 0, 1) */
    OG_ACT_ELU,              /* x >= 0 ? x : alpha·(eˣ − 1) */
    OG_ACT_SOFTSIGN,         /* x / (1 + |x|) */
    OG_ACT_SOFTPLUS,         /* log(1 + eˣ) */
    OG_ACT_COUNT
} og_rnn_act_kind;

typedef struct og_rnn_act {
    og_rnn_act_kind kind;
    float alpha, beta;
} og_rnn_act;

/* The element types of X and the other float inputs: float32, float64, float16. */
extern const og_dtype og_rnn_types[];

/* The ONNX name of an activation ("LeakyRelu"). */
const char *og_rnn_act_name(og_rnn_act_kind k);

typedef struct og_rnn_params {
    og_rnn_kind kind;
    og_rnn_role role;
    int gates;           /* 1, 3, 4 */
    int n_act;           /* activations per direction: 1, 2, 3 (f; f, g; f, g, h) */
    int direction;       /* 0 forward, 1 reverse, 2 bidirectional */
    int num_dir;         /* 1 or 2 */
    int64_t hidden_size; /* -1: from R's shape */
    bool has_clip;
    float clip;
    bool input_forget;        /* LSTM: f = 1 − i */
    bool linear_before_reset; /* GRU */
    int layout;               /* 0: [T, N, ...]; 1: [N, T, ...] (since 14) */
    og_rnn_act act[2][3];     /* per direction */
} og_rnn_params;

/* Per-step width K of saved (see above) for hidden size h. */
int64_t og_rnn_saved_width(const og_rnn_params *p, int64_t h);

/* Input positions. */
enum {
    OG_RNN_IN_X = 0,
    OG_RNN_IN_W = 1,
    OG_RNN_IN_R = 2,
    OG_RNN_IN_B = 3,
    OG_RNN_IN_SEQ = 4,
    OG_RNN_IN_H0 = 5,
    OG_RNN_IN_C0 = 6, /* LSTM */
    OG_RNN_IN_P = 7   /* LSTM */
};

/* How many inputs and outputs the standard op has: 6 and 2 (RNN, GRU), 8 and 3 (LSTM).
 * saved is output n_out of a ...Train op and input n_in of a ...Grad op, whose output
 * gradients follow it. */
static inline int og_rnn_n_in(og_rnn_kind k) { return k == OG_RNN_LSTM ? 8 : 6; }
static inline int og_rnn_n_out(og_rnn_kind k) { return k == OG_RNN_LSTM ? 3 : 2; }

#endif /* OG_OPS_RNN_H */
