"""Per-opset cases of the recurrent ops (RNN, GRU, LSTM) and of control flow (If, Loop,
Scan) of issue 12.  Called by gen_cases.py with itself as `g` (its case, vers, act, rand,
... helpers)."""

import numpy as np
import onnx.helper as oh
from onnx import TensorProto as TP


def rnn_twin(g, op, opset, attrs, inputs, outs):
    """An oracle for the recurrent forms onnxruntime lacks (float64, float16, layout 1):
    onnxruntime on the float32, layout-0 twin of the node, its outputs turned back."""
    layout = attrs.get("layout", 0)
    names = [i[0] if i else "" for i in inputs]

    def run(feeds):
        import onnxruntime as ort
        a2 = {k: v for k, v in attrs.items() if k != "layout"}
        f2, vis = {}, []
        for n in names:
            if not n:
                continue
            x = feeds[n]
            if x.dtype in (g.F64, np.float16):
                x = x.astype(g.F32)
            if layout and n == "x":
                x = x.transpose(1, 0, 2)
            if layout and n in ("h0", "c0"):
                x = x.transpose(1, 0, 2)
            f2[n] = np.ascontiguousarray(x)
            vis.append(oh.make_tensor_value_info(n, g.NP2TP[x.dtype], list(x.shape)))
        node = oh.make_node(op, names, outs, **a2)
        m = g.make_model(opset, node, vis, [oh.make_tensor_value_info(o, TP.FLOAT, None) for o in outs if o], [])
        res = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, f2)
        dt = feeds["x"].dtype
        out = []
        for o, r in zip([o for o in outs if o], res):
            if layout:
                r = r.transpose(2, 0, 1, 3) if o == "y" else r.transpose(1, 0, 2)
            out.append(np.ascontiguousarray(r).astype(dt))
        return out
    return run


def gen_rnn(g):
    """RNN, GRU and LSTM: directions, every activation (alphas and betas given: onnxruntime's
    defaults for Affine, ScaledTanh and ThresholdedRelu differ from the ONNX ops'), clip,
    sequence lengths (a zero one among them), initial states, peepholes, input_forget,
    linear_before_reset, layout 1, omitted outputs, float64.  hidden_size is always given:
    onnxruntime needs it."""
    T_, N_, I_, H_ = 4, 3, 2, 3
    acts = [("Relu", [], []), ("Tanh", [], []), ("Sigmoid", [], []), ("Affine", [0.7], [0.1]),
            ("LeakyRelu", [0.2], []), ("ThresholdedRelu", [0.3], []), ("ScaledTanh", [0.8], [1.3]),
            ("HardSigmoid", [0.3], [0.4]), ("Elu", [0.6], []), ("Softsign", [], []),
            ("Softplus", [], [])]
    for op, G, nact in (("RNN", 1, 1), ("GRU", 3, 2), ("LSTM", 4, 3)):
        lstm = op == "LSTM"
        nout = 3 if lstm else 2
        outs = ["y", "yh", "yc"][:nout]

        def ins(D=1, dt=g.F32, b=True, seq=None, h0=False, p=False, layout=0):
            w = [("x", g.rand((N_, T_, I_) if layout else (T_, N_, I_), dt, -1, 1)),
                 ("w", g.rand((D, G * H_, I_), dt, -1, 1)), ("r", g.rand((D, G * H_, H_), dt, -1, 1)),
                 ("b", g.rand((D, 2 * G * H_), dt, -1, 1)) if b or seq is not None or h0 or p else None,
                 ("seq", np.array(seq, g.I32)) if seq is not None else None]
            st = (N_, D, H_) if layout else (D, N_, H_)
            w.append(("h0", g.rand(st, dt, -1, 1)) if h0 else None)
            if lstm:
                w.append(("c0", g.rand(st, dt, -1, 1)) if h0 else None)
                w.append(("p", g.rand((D, 3 * H_), dt, -1, 1)) if p else None)
            while w[-1] is None:
                w.pop()
            return w

        for v in g.vers(op):
            a = g.act(op, v)
            g.case(op, v, "defaults", ins(b=False), {"hidden_size": H_}, out_names=outs)
            g.case(op, v, "reverse_seq", ins(seq=[4, 2, 1], h0=True), {"direction": "reverse", "hidden_size": H_}, out_names=outs)
            g.case(op, v, "forward_seq0", ins(seq=[2, 0, 4], h0=True, p=lstm), {"hidden_size": H_}, out_names=outs)
            g.case(op, v, "bidi", ins(D=2, seq=[3, 4, 1], h0=True, p=lstm),
                 {"direction": "bidirectional", "hidden_size": H_}, out_names=outs)
            g.case(op, v, "clip", ins(h0=True, p=lstm), {"clip": 0.4, "hidden_size": H_}, out_names=outs)
            g.case(op, v, "only_h", ins(), {"hidden_size": H_}, out_names=["", "yh"])
            # onnxruntime has neither float64 nor layout 1: its float32, layout-0 twin
            i64 = ins(dt=g.F64, D=2, seq=[4, 1, 3], h0=True, p=lstm)
            at = {"hidden_size": H_, "direction": "bidirectional"}
            g.case(op, v, "f64", i64, at, out_names=outs, oracle=rnn_twin(g, op, v, at, i64, outs))
            i16 = ins(dt=np.float16, seq=[3, 4, 2], h0=True, p=lstm)
            at = {"hidden_size": H_}
            g.case(op, v, "f16", i16, at, out_names=outs, oracle=rnn_twin(g, op, v, at, i16, outs))
            if a >= 14:
                il = ins(D=2, seq=[4, 2, 3], h0=True, p=lstm, layout=1)
                at = {"layout": 1, "hidden_size": H_, "direction": "bidirectional"}
                g.case(op, v, "layout1", il, at, out_names=outs, oracle=rnn_twin(g, op, v, at, il, outs))
            if lstm:
                g.case(op, v, "input_forget", ins(h0=True, p=True), {"input_forget": 1, "hidden_size": H_}, out_names=outs)
            if op == "GRU":
                g.case(op, v, "lbr", ins(D=2, seq=[4, 1, 3], h0=True),
                     {"linear_before_reset": 1, "direction": "bidirectional", "hidden_size": H_}, out_names=outs)
            # every activation, in a different position in each direction (the others at
            # their defaults); alphas and betas in the order the activations consume them
            dflt = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                    "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[op]
            for k, (fn, al, be) in enumerate(acts):
                names, alpha, beta = [], [], []
                for d in range(2):
                    for j in range(nact):
                        use = j == (k + d) % nact
                        names.append(fn if use else dflt[j])
                        alpha += al if use else []
                        beta += be if use else []
                attrs = {"direction": "bidirectional", "activations": names, "hidden_size": H_}
                if alpha:
                    attrs["activation_alpha"] = alpha
                if beta:
                    attrs["activation_beta"] = beta
                g.case(op, v, "act_" + fn.lower(), ins(D=2, h0=True), attrs, out_names=outs)


def gen_control(g):
    """If, Loop and Scan: outer values read from the enclosing graph (two levels deep in the
    nested cases), loop-carried values, scan outputs, early exit, scan axes and directions."""
    def vi(name, dt=TP.FLOAT, shape=None):
        return oh.make_tensor_value_info(name, dt, shape)

    def graph(nodes, name, ins, outs):
        return oh.make_graph(nodes, name, ins, outs)

    x = g.rand((2, 3))
    for v in g.vers("If"):
        then_g = graph([oh.make_node("Add", ["x", "w"], ["t"])], "then", [], [vi("t")])
        else_g = graph([oh.make_node("Mul", ["x", "x"], ["e"])], "else", [], [vi("e")])
        for c in (True, False):
            g.case("If", v, "outer_%s" % ("then" if c else "else"),
                 [("c", np.array(c)), ("x", x), ("w", g.rand((3,)))],
                 {"then_branch": then_g, "else_branch": else_g}, node_inputs=1)
    for v in g.vers("Loop"):
        # body(i, cond, s) -> (cond, s + x·i, scan: s·w); x and w from outside
        body = graph([oh.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
                      oh.make_node("Mul", ["x", "fi"], ["xi"]),
                      oh.make_node("Add", ["s", "xi"], ["s2"]),
                      oh.make_node("Mul", ["s", "w"], ["sc"]),
                      oh.make_node("Identity", ["cond"], ["c2"])],
                     "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("s")],
                     [vi("c2", TP.BOOL, []), vi("s2"), vi("sc")])
        g.case("Loop", v, "trip_outer", [("m", np.array(4, g.I64)), None, ("s0", g.rand((2, 3))),
                                       ("x", x), ("w", g.rand((3,)))],
             {"body": body}, n_out=2, node_inputs=3)
        # stop when the running sum passes a limit: the condition comes from the body
        body2 = graph([oh.make_node("Add", ["s", "x"], ["s2"]),
                       oh.make_node("ReduceSum", ["s2"], ["tot"], keepdims=0),
                       oh.make_node("Less", ["tot", "lim"], ["c2"])],
                      "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("s")],
                      [vi("c2", TP.BOOL, []), vi("s2")])
        g.case("Loop", v, "early_exit", [("m", np.array(50, g.I64)), ("c", np.array(True)),
                                       ("s0", np.zeros((2, 3), g.F32)),
                                       ("x", g.rand((2, 3), lo=0.1, hi=0.5)),
                                       ("lim", np.array(4.0, g.F32))], {"body": body2},
             node_inputs=3)
        # a Loop whose body holds an If reading the top graph's w (two levels out)
        inner_then = graph([oh.make_node("Mul", ["s", "w"], ["t"])], "then", [], [vi("t")])
        inner_else = graph([oh.make_node("Sub", ["s", "w"], ["e"])], "else", [], [vi("e")])
        body3 = graph([oh.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
                       oh.make_node("Less", ["fi", "half"], ["small"]),
                       oh.make_node("If", ["small"], ["s2"], then_branch=inner_then,
                                    else_branch=inner_else),
                       oh.make_node("Identity", ["cond"], ["c2"])],
                      "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("s")],
                      [vi("c2", TP.BOOL, []), vi("s2")])
        g.case("Loop", v, "nested_if", [("m", np.array(5, g.I64)), None, ("s0", g.rand((2, 3))),
                                      ("w", g.rand((3,), lo=0.5, hi=1.5)),
                                      ("half", np.array(2.5, g.F32))], {"body": body3},
             node_inputs=3)
    for v in g.vers("Scan"):
        if g.act("Scan", v) < 9:
            continue  # Scan-8 runs in the backend case test_scan_sum
        # running sum over the steps, each step's sum scaled by an outer value
        body = graph([oh.make_node("Add", ["acc", "xt"], ["acc2"]),
                      oh.make_node("Mul", ["acc2", "k"], ["y"])],
                     "body", [vi("acc"), vi("xt")], [vi("acc2"), vi("y")])
        xs = g.rand((4, 2, 3))
        g.case("Scan", v, "sum", [("a0", g.rand((2, 3))), ("xs", xs), ("k", g.rand((3,)))],
             {"body": body, "num_scan_inputs": 1}, n_out=2, node_inputs=2)
        g.case("Scan", v, "axes_dirs", [("a0", g.rand((4, 3))), ("xs", xs), ("k", g.rand((3,)))],
             {"body": body, "num_scan_inputs": 1, "scan_input_axes": [1],
              "scan_input_directions": [1], "scan_output_axes": [-1],
              "scan_output_directions": [1]}, n_out=2, node_inputs=2)
        # a Scan whose body holds a Loop reading the top graph's k (two levels out)
        lbody = graph([oh.make_node("Mul", ["v", "k"], ["v2"]),
                       oh.make_node("Identity", ["cond"], ["c2"])],
                      "lbody", [vi("j", TP.INT64, []), vi("cond", TP.BOOL, []), vi("v")],
                      [vi("c2", TP.BOOL, []), vi("v2")])
        body2 = graph([oh.make_node("Add", ["acc", "xt"], ["acc2"]),
                       oh.make_node("Loop", ["two", "", "acc2"], ["y"], body=lbody)],
                      "body", [vi("acc"), vi("xt")], [vi("acc2"), vi("y", TP.FLOAT, [2, 3])])
        g.case("Scan", v, "nested_loop", [("a0", g.rand((2, 3))), ("xs", xs), ("k", g.rand((3,))),
                                        ("two", np.array(2, g.I64))],
             {"body": body2, "num_scan_inputs": 1}, n_out=2, node_inputs=2)


def generate(g):
    gen_rnn(g)
    gen_control(g)
