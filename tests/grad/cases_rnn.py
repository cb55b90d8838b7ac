"""Gradient cases of the recurrent rules (src/grad/rnn.c): RNN, GRU and LSTM in every
direction, with every activation the spec lists (alphas and betas given: onnxruntime's
defaults differ from the ops' for three of them), clip, sequence lengths (a zero one among
them), initial states, peepholes, input_forget, both GRU resets, layout 1, omitted outputs
and inputs, at opsets 7 (the Loop bodies of the saved functions with cast constants), 9
(no ThresholdedRelu yet) and 14.  X, W, R, B, initial_h, initial_c and P are all
differentiated; sequence_lens is an int32 initializer."""
import numpy as np
from onnx import TensorProto, helper

from helpers import RNG, model, node

T, N, I, H = 3, 3, 2, 2
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
NACT = {"RNN": 1, "GRU": 2, "LSTM": 3}
DEFAULT = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
ACTS = [("Relu", [], []), ("Tanh", [], []), ("Sigmoid", [], []), ("Affine", [0.7], [0.1]),
        ("LeakyRelu", [0.2], []), ("ThresholdedRelu", [0.3], []), ("ScaledTanh", [0.8], [1.3]),
        ("HardSigmoid", [0.3], [0.4]), ("Elu", [0.6], []), ("Softsign", [], []),
        ("Softplus", [], [])]


def u(*shape, scale=1.0):
    return (RNG.uniform(-1, 1, shape) * scale).astype(np.float32)


def rnn_case(name, op, opset=14, D=1, b=True, seq=None, h0=False, c0=False, p=False,
             layout=0, outputs=None, scale=1.0, **attrs):
    """one recurrent node: x is the graph input, the rest initializers; outputs: the node's
    output names ('' omits one), graph outputs being the present ones"""
    G = GATES[op]
    x = u(N, T, I) if layout else u(T, N, I)
    weights = {"w": u(D, G * H, I, scale=scale), "r": u(D, G * H, H, scale=scale)}
    consts = {}
    ins = ["x", "w", "r", "", "", "", "", ""]
    if b:
        weights["b"] = u(D, 2 * G * H, scale=scale)
        ins[3] = "b"
    if seq is not None:
        consts["seq"] = np.array(seq, np.int32)
        ins[4] = "seq"
    st = (N, D, H) if layout else (D, N, H)
    if h0:
        weights["h0"] = u(*st)
        ins[5] = "h0"
    if c0:
        weights["c0"] = u(*st)
        ins[6] = "c0"
    if p:
        weights["p"] = u(D, 3 * H)
        ins[7] = "p"
    while ins[-1] == "":
        ins.pop()
    nout = 3 if op == "LSTM" else 2
    outs = outputs if outputs is not None else ["y", "yh", "yc"][:nout]
    if D == 2:
        attrs.setdefault("direction", "bidirectional")
    if layout:
        attrs["layout"] = 1
    n = node(op, ins, outs, hidden_size=H, **attrs)
    m = model([n], {"x": x}, [o for o in outs if o], weights, opset=opset, consts=consts)
    # ONNX shape inference knows no layout 1: give the outputs their shapes
    shapes = {"y": [N, T, D, H] if layout else [T, D, N, H], "yh": list(st), "yc": list(st)}
    for o in m.graph.output:
        if not o.type.tensor_type.HasField("shape"):
            o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, shapes[o.name]))
    return (name, m, {"x": x})


def cases():
    out = []
    for op in ("RNN", "GRU", "LSTM"):
        lo = op.lower()
        lstm = op == "LSTM"
        out += [
            rnn_case(lo, op),
            rnn_case(lo + "_v7", op, opset=7, h0=True, c0=lstm),
            rnn_case(lo + "_reverse_seq", op, seq=[3, 0, 2], h0=True, c0=lstm, p=lstm,
                     direction="reverse"),
            rnn_case(lo + "_bidi_seq", op, D=2, seq=[2, 3, 1], h0=True, c0=lstm, p=lstm),
            rnn_case(lo + "_bidi_seq_v7", op, opset=7, D=2, seq=[1, 3, 0], h0=True, c0=lstm,
                     p=lstm),
            rnn_case(lo + "_no_bias", op, b=False, h0=True),
            rnn_case(lo + "_clip", op, D=2, h0=True, c0=lstm, p=lstm, clip=0.6, scale=1.5),
            rnn_case(lo + "_layout1", op, D=2, seq=[3, 1, 2], h0=True, c0=lstm, p=lstm, layout=1),
            rnn_case(lo + "_only_yh", op, h0=True, outputs=["", "yh"]),
            rnn_case(lo + "_only_y", op, D=2, seq=[3, 2, 2], outputs=["y"]),
        ]
        if lstm:
            out += [
                rnn_case("lstm_input_forget", op, D=2, h0=True, c0=True, p=True, input_forget=1),
                rnn_case("lstm_only_yc", op, seq=[2, 3, 0], c0=True, outputs=["", "", "yc"]),
                rnn_case("lstm_peephole_no_init", op, p=True),
            ]
        if op == "GRU":
            out += [
                rnn_case("gru_lbr", op, D=2, seq=[3, 2, 0], h0=True, linear_before_reset=1),
                rnn_case("gru_lbr_v7", op, opset=7, h0=True, linear_before_reset=1),
                rnn_case("gru_lbr_no_bias", op, b=False, linear_before_reset=1),
            ]
        # every activation, in a different position in each direction (the others at their
        # defaults); alphas and betas in the order the activations consume them
        nact = NACT[op]
        for k, (fn, al, be) in enumerate(ACTS):
            names, alpha, beta = [], [], []
            for d in range(2):
                for j in range(nact):
                    use = j == (k + d) % nact
                    names.append(fn if use else DEFAULT[op][j])
                    alpha += al if use else []
                    beta += be if use else []
            attrs = {"activations": names}
            if alpha:
                attrs["activation_alpha"] = alpha
            if beta:
                attrs["activation_beta"] = beta
            opset = 9 if fn == "ThresholdedRelu" and op != "LSTM" else 14
            out.append(rnn_case("%s_act_%s%s" % (lo, fn.lower(), "_v9" if opset == 9 else ""), op,
                                opset=opset, D=2, h0=True, c0=lstm, **attrs))
    return out
