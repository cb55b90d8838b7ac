/* signal.c: the signal-processing ops of ai.onnx: DFT (17, 20), STFT (17), HannWindow,
 * HammingWindow, BlackmanWindow and MelWeightMatrix (17).
 *
 * Complex values are a trailing dim of 2 (real, imaginary); a real signal has a trailing dim
 * of 1.  DFT's axis is an attribute at opset 17 (default 1) and an input from 20 (default
 * -2); its length, the dft_length input, pads the signal with zeros or truncates it. */
#include <string.h>

#include "ops/signal.h"

static const og_dtype types_float[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};
static const og_dtype types_index[] = {OG_INT32, OG_INT64, OG_UNDEFINED};

static og_status signal_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    const char *ints[] = {"axis", "inverse", "onesided", "periodic", "output_datatype"};
    for (int i = 0; i < 5; i++) {
        og_status st = og_attr_check_type(c, ints[i], OG_ATTR_INT);
        if (st) return st;
    }
    og_signal_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    p->axis = og_attr_int(n, "axis", 1);
    p->inverse = og_attr_int(n, "inverse", 0) != 0;
    /* STFT's onesided defaults to 1, DFT's to 0 */
    p->onesided = og_attr_int(n, "onesided", strcmp(n->op_type, "STFT") == 0) != 0;
    p->periodic = og_attr_int(n, "periodic", 1) != 0;
    int64_t dt = og_attr_int(n, "output_datatype", OG_FLOAT);
    p->out_dtype = (og_dtype)dt;
    if (dt < 1 || dt > OG_BFLOAT16 || dt == OG_STRING || !og_dtype_is_known((og_dtype)dt))
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "attribute 'output_datatype' %lld is not a numeric type onnxgrad has",
                           (long long)dt);
    return OG_OK;
}

/* A scalar integer input's value, or -1 (with *known false) when only its type is known. */
static og_status scalar_int(const og_op_ctx *c, const og_vinfo *in, int i, const char *what,
                            int64_t *v, bool *known)
{
    *known = false;
    og_status st = og_check_dtype(c, in, i, types_index);
    if (st) return st;
    if (in[i].rank > 1 || (in[i].rank == 1 && in[i].dims[0] >= 0 && in[i].dims[0] != 1))
        return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) must be a scalar", i, what);
    if (!in[i].value) return OG_OK;
    *v = og_tensor_get_i64(in[i].value, 0);
    *known = true;
    return OG_OK;
}

/* ---- DFT ----------------------------------------------------------------------------- */

og_status og_dft_dims_of(const og_op_ctx *c, const og_tensor *x, const og_tensor *dft_length,
                         const og_tensor *axis, og_dft_dims *out)
{
    const og_signal_params *p = c->node->params;
    int r = x->rank;
    int64_t a = c->node->since_version >= 20 ? (axis ? og_tensor_get_i64(axis, 0) : -2) : p->axis;
    if (a < 0) a += r;
    if (a < 0 || a > r - 2)
        return og_op_error(c, OG_ERR_SHAPE,
                           "axis %lld is outside [-%d, -2] and [0, %d] for an input of rank %d",
                           (long long)(a < 0 ? a - r : a), r, r - 2, r);
    out->axis = (int)a;
    out->length = dft_length ? og_tensor_get_i64(dft_length, 0) : x->dims[a];
    if (out->length < 1)
        return og_op_error(c, OG_ERR_SHAPE, "dft_length must be positive, got %lld",
                           (long long)out->length);
    out->out_length = p->onesided ? out->length / 2 + 1 : out->length;
    return OG_OK;
}

static og_status dft_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_signal_params *p = c->node->params;
    bool v20 = c->node->since_version >= 20;
    if (!v20 && n_in > 2)
        return og_op_error(c, OG_ERR_MODEL,
                           "the axis input exists from opset 20 (an attribute "
                           "before)");
    og_status st = og_check_dtype(c, in, 0, types_float);
    int64_t len = -1, axis = v20 ? -2 : p->axis;
    bool len_known = false, axis_known = true;
    bool has_len = n_in > 1 && c->node->in[1] >= 0,
         has_axis = v20 && n_in > 2 && c->node->in[2] >= 0;
    if (!st && has_len) st = scalar_int(c, in, 1, "dft_length", &len, &len_known);
    if (!st && has_axis) {
        st = og_check_dtype(c, in, 2, (const og_dtype[]){OG_INT64, OG_UNDEFINED});
        if (!st) st = scalar_int(c, in, 2, "axis", &axis, &axis_known);
    }
    if (st) return st;
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    if (r < 2)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 0 must have rank >= 2 (signal dims, then 1 or "
                           "2 for real or complex), got rank %d",
                           r);
    if (in[0].dims[r - 1] >= 0 && in[0].dims[r - 1] != 1 && in[0].dims[r - 1] != 2)
        return og_op_error(c, OG_ERR_SHAPE,
                           "the last dim of input 0 must be 1 (real) or 2 "
                           "(complex), got %lld",
                           (long long)in[0].dims[r - 1]);
    if (p->onesided && in[0].dims[r - 1] == 2)
        return og_op_error(c, OG_ERR_MODEL,
                           "onesided needs a real input (last dim 1): a complex "
                           "signal's spectrum has no conjugate symmetry");
    og_vinfo_set(&out[0], in[0].dtype, r, in[0].dims);
    out[0].dims[r - 1] = 2;
    if (!axis_known) {
        for (int d = 0; d < r - 1; d++) out[0].dims[d] = OG_DIM_UNKNOWN;
        return OG_OK;
    }
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r - 2)
        return og_op_error(c, OG_ERR_SHAPE, "axis is outside [-%d, -2] and [0, %d]", r, r - 2);
    if (c->runtime) {
        og_dft_dims dd;
        if ((st = og_dft_dims_of(c, in[0].value, has_len ? in[1].value : NULL,
                                 has_axis ? in[2].value : NULL, &dd)))
            return st;
        out[0].dims[dd.axis] = dd.out_length;
        return OG_OK;
    }
    if (has_len && !len_known) {
        out[0].dims[axis] = OG_DIM_UNKNOWN;
        return OG_OK;
    }
    if (!has_len) len = in[0].dims[axis];
    if (len < 0) {
        if (p->onesided) out[0].dims[axis] = OG_DIM_UNKNOWN;
        return OG_OK;
    }
    if (len < 1)
        return og_op_error(c, OG_ERR_SHAPE, "dft_length must be positive, got %lld",
                           (long long)len);
    out[0].dims[axis] = p->onesided ? len / 2 + 1 : len;
    return OG_OK;
}

/* ---- STFT ---------------------------------------------------------------------------- */

og_status og_stft_dims_of(const og_op_ctx *c, const og_tensor *signal, const og_tensor *step,
                          const og_tensor *window, const og_tensor *frame_length, og_stft_dims *out)
{
    const og_signal_params *p = c->node->params;
    int64_t len = signal->dims[1];
    out->step = og_tensor_get_i64(step, 0);
    if (window && window->rank != 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 2 (window) must be 1-D, got rank %d",
                           window->rank);
    out->window = window ? window->dims[0] : -1;
    out->frame = frame_length ? og_tensor_get_i64(frame_length, 0) : window ? out->window : len;
    if (out->window < 0) out->window = out->frame;
    if (out->step < 1)
        return og_op_error(c, OG_ERR_SHAPE, "frame_step must be positive, got %lld",
                           (long long)out->step);
    if (out->frame < 1 || out->frame > len || out->window < 1)
        return og_op_error(c, OG_ERR_SHAPE,
                           "the frame length %lld must be in [1, %lld], the signal's length, and "
                           "the window not empty",
                           (long long)out->frame, (long long)len);
    /* frames start every step while a whole frame fits; each takes `window` samples (zeros
     * past the end), weighted, into a DFT of the frame's length */
    out->frames = 1 + (len - out->frame) / out->step;
    out->bins = p->onesided ? out->frame / 2 + 1 : out->frame;
    return OG_OK;
}

static og_status stft_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_signal_params *p = c->node->params;
    int64_t step = 0, frame = -1;
    bool step_known, frame_known = false;
    bool has_window = n_in > 2 && c->node->in[2] >= 0, has_frame = n_in > 3 && c->node->in[3] >= 0;
    og_status st = og_check_dtype(c, in, 0, types_float);
    if (!st) st = scalar_int(c, in, 1, "frame_step", &step, &step_known);
    if (!st && has_window) st = og_check_same_dtype(c, in, 0, 2);
    if (!st && has_frame) st = scalar_int(c, in, 3, "frame_length", &frame, &frame_known);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    if (in[0].rank >= 0 && in[0].rank != 3)
        return og_op_error(c, OG_ERR_SHAPE,
                           "input 0 (signal) must be [batch, length, 1 or 2], "
                           "got rank %d",
                           in[0].rank);
    if (in[0].rank == 3 && in[0].dims[2] >= 0 && in[0].dims[2] != 1 && in[0].dims[2] != 2)
        return og_op_error(c, OG_ERR_SHAPE,
                           "the last dim of input 0 must be 1 (real) or 2 "
                           "(complex), got %lld",
                           (long long)in[0].dims[2]);
    if (p->onesided && in[0].rank == 3 && in[0].dims[2] == 2)
        return og_op_error(c, OG_ERR_MODEL,
                           "onesided (the default) needs a real signal (last dim "
                           "1): set onesided to 0 for a complex one");
    int64_t dims[4] = {in[0].rank == 3 ? in[0].dims[0] : OG_DIM_UNKNOWN, OG_DIM_UNKNOWN,
                       OG_DIM_UNKNOWN, 2};
    if (c->runtime) {
        og_stft_dims sd;
        if ((st = og_stft_dims_of(c, in[0].value, in[1].value, has_window ? in[2].value : NULL,
                                  has_frame ? in[3].value : NULL, &sd)))
            return st;
        dims[1] = sd.frames;
        dims[2] = sd.bins;
    } else {
        int64_t len = in[0].rank == 3 ? in[0].dims[1] : -1;
        int64_t win = has_window && in[2].rank == 1 ? in[2].dims[0] : -1;
        if (!has_frame) frame = has_window ? win : len, frame_known = frame >= 0;
        if (frame_known && frame >= 0) dims[2] = p->onesided ? frame / 2 + 1 : frame;
        if (step_known && step > 0 && frame_known && frame > 0 && len >= frame)
            dims[1] = 1 + (len - frame) / step;
    }
    og_vinfo_set(&out[0], in[0].dtype, 4, dims);
    return OG_OK;
}

/* ---- windows, MelWeightMatrix ---------------------------------------------------------- */

static og_status window_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_signal_params *p = c->node->params;
    int64_t size = OG_DIM_UNKNOWN;
    bool known;
    og_status st = scalar_int(c, in, 0, "size", &size, &known);
    if (st) return st;
    if (known && size < 0)
        return og_op_error(c, OG_ERR_SHAPE, "size must be >= 0, got %lld", (long long)size);
    og_vinfo_set(&out[0], p->out_dtype, 1, (int64_t[]){known ? size : OG_DIM_UNKNOWN});
    return OG_OK;
}

static og_status mel_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    const og_signal_params *p = c->node->params;
    int64_t bins = 0, len = 0, rate = 0;
    bool kb, kl, kr;
    og_status st = scalar_int(c, in, 0, "num_mel_bins", &bins, &kb);
    if (!st) st = scalar_int(c, in, 1, "dft_length", &len, &kl);
    if (!st) st = scalar_int(c, in, 2, "sample_rate", &rate, &kr);
    for (int i = 3; !st && i < 5; i++) {
        st = og_check_dtype(c, in, i, types_float);
        if (!st && in[i].rank > 1)
            st = og_op_error(c, OG_ERR_SHAPE, "input %d must be a scalar", i);
    }
    if (st) return st;
    if ((kb && bins < 1) || (kl && len < 1) || (kr && rate < 1))
        return og_op_error(c, OG_ERR_SHAPE,
                           "num_mel_bins, dft_length and sample_rate must be "
                           "positive, got %lld, %lld, %lld",
                           (long long)bins, (long long)len, (long long)rate);
    og_vinfo_set(&out[0], p->out_dtype, 2,
                 (int64_t[]){kl ? len / 2 + 1 : OG_DIM_UNKNOWN, kb ? bins : OG_DIM_UNKNOWN});
    return OG_OK;
}

#define SIG_OP(name, lo, hi, infer)                                                                \
    {                                                                                              \
#name, "", OG_SINCE(name), lo, hi, 1, 1, signal_parse, NULL, infer, 0                      \
    }

const og_op_def og_ops_signal[] = {
    SIG_OP(DFT, 1, 3, dft_infer),
    SIG_OP(STFT, 2, 4, stft_infer),
    SIG_OP(HannWindow, 1, 1, window_infer),
    SIG_OP(HammingWindow, 1, 1, window_infer),
    SIG_OP(BlackmanWindow, 1, 1, window_infer),
    SIG_OP(MelWeightMatrix, 5, 5, mel_infer),
    {0},
};
