/* signal.h: what the signal ops' meaning (src/ops/signal.c) shares with their kernels and
 * gradient rules.  Internal header. */
#ifndef OG_OPS_SIGNAL_H
#define OG_OPS_SIGNAL_H

#include "ops/op.h"

/* Attributes of DFT (axis before opset 20, inverse, onesided), STFT (onesided), the windows
 * (periodic, output_datatype) and MelWeightMatrix (output_datatype). */
typedef struct og_signal_params {
    int64_t axis;
    bool inverse, onesided, periodic;
    og_dtype out_dtype;
} og_signal_params;

/* What a DFT node computes on input x: the axis (normalized), the transform length L and the
 * output length along the axis (L, or L / 2 + 1 when onesided), from the inputs at run time
 * (dft_length: in[1], axis: in[2] from opset 20).  Errors name the bad input. */
typedef struct og_dft_dims {
    int axis;
    int64_t length, out_length;
} og_dft_dims;
og_status og_dft_dims_of(const og_op_ctx *c, const og_tensor *x, const og_tensor *dft_length,
                         const og_tensor *axis, og_dft_dims *out);

/* STFT's frames on signal [batch, len, c]: the step, the frame (and DFT) length, the window
 * length, how many frames, and the bins per frame (frame / 2 + 1 when onesided). */
typedef struct og_stft_dims {
    int64_t step, frame, window, frames, bins;
} og_stft_dims;
og_status og_stft_dims_of(const og_op_ctx *c, const og_tensor *signal, const og_tensor *step,
                          const og_tensor *window, const og_tensor *frame_length,
                          og_stft_dims *out);

#endif /* OG_OPS_SIGNAL_H */
