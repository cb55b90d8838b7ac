"""Cases of models importing default-domain opsets 1 to 6, which the loader rewrites into
opset 7 (src/onnx/upgrade.c).  Called by gen_cases.py with itself as `g`.  onnxruntime does
not run these opsets, so every case carries an oracle: numpy written from the old schema's
text (onnx.defs.get_schema(op, max_inclusive_version=6).doc), not from the upgrade:
- binary ops with broadcast=1 line B up with A's dims starting at `axis` (default: A's last
  dims), broadcast=0 wants equal shapes;
- PRelu's slope of C values is per channel (axis 1) for X of rank >= 3, as the PyTorch
  exports of opset 6 wrote it;
- BatchNormalization is_test=0 normalises with the batch's statistics (biased variance);
- Concat-1 without axis joins on axis 1; Reshape-1 takes `shape` as an attribute; Pad-1
  calls its pads `paddings`; Upsample-1 takes height_scale and width_scale; Cast-1 names
  its type; LpPool-1 and GlobalLpPool-1 take a float p."""

import numpy as np


def line_up(a, b, axis):
    """B of the old broadcast, reshaped to broadcast under numpy rules against A."""
    if axis is None:
        return b
    if axis < 0:
        axis += a.ndim
    return b.reshape(b.shape + (1,) * (a.ndim - axis - b.ndim))


NP_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
             "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor, "Equal": np.equal,
             "Greater": np.greater, "Less": np.less}


def binary_oracle(op, axis):
    def run(f):
        a, b = f["a"], f["b"]
        r = NP_BINARY[op](a, line_up(a, b, axis))
        return [np.asarray(r).astype(a.dtype) if r.dtype != bool else r]
    return run


def gen_binary(g):
    F32 = g.F32
    x3, x4 = g.rand((3, 4, 5)), g.rand((2, 3, 4, 5))
    for op, v in (("Add", 6), ("Sub", 6), ("Mul", 6), ("Div", 6), ("Add", 1), ("Mul", 1)):
        attrs_v1 = {"consumed_inputs": [0, 0]} if v == 1 else {}
        bb = (lambda s: g.away(s)) if op == "Div" else (lambda s: g.rand(s))
        for tag, a, b, axis in (("axis0", x3, bb((3,)), 0), ("axis1", x4, bb((3, 4)), 1),
                                ("axis_last", x3, bb((5,)), 2), ("suffix", x4, bb((4, 5)), None),
                                ("scalar", x3, bb(()), None)):
            attrs = dict(attrs_v1, broadcast=1)
            if axis is not None:
                attrs["axis"] = axis
            g.case(op, v, "old_bcast_" + tag, [("a", a), ("b", b)], attrs, oracle=binary_oracle(op, axis))
        g.case(op, v, "old_same", [("a", x3), ("b", bb((3, 4, 5)))], attrs_v1,
               oracle=binary_oracle(op, None))
    g.case("Pow", 1, "old_bcast_axis0", [("a", g.away((3, 4))), ("b", g.rand((3,)))],
           {"broadcast": 1, "axis": 0}, oracle=binary_oracle("Pow", 0))
    bx, by = g.RNG.integers(0, 2, (3, 4)).astype(bool), g.RNG.integers(0, 2, (3,)).astype(bool)
    for op in ("And", "Or", "Xor"):
        g.case(op, 1, "old_bcast_axis0", [("a", bx), ("b", by)], {"broadcast": 1, "axis": 0},
               oracle=binary_oracle(op, 0))
    ia, ib = g.RNG.integers(-3, 4, (2, 3, 4)).astype(g.I32), g.RNG.integers(-3, 4, (3,)).astype(g.I32)
    for op in ("Equal", "Greater", "Less"):
        g.case(op, 1, "old_bcast_axis1", [("a", ia), ("b", ib)], {"broadcast": 1, "axis": 1},
               oracle=binary_oracle(op, 1))


def prelu_oracle(f):
    x, s = f["x"], f["s"]
    if s.ndim == 1 and s.size > 1 and x.ndim >= 3:
        s = s.reshape((s.size,) + (1,) * (x.ndim - 2))
    return [np.where(x < 0, s * x, x).astype(x.dtype)]


def gen_prelu(g):
    for tag, xs, ss in (("per_channel_4d", (2, 3, 4, 5), (3,)), ("per_channel_3d", (2, 3, 4), (3,)),
                        ("shared", (2, 3, 4), (1,)), ("2d", (2, 3), (3,)), ("full", (2, 3, 4), (3, 4))):
        g.case("PRelu", 6, "old_" + tag, [("x", g.rand(xs)), ("s", g.rand(ss))], oracle=prelu_oracle)
    g.case("PRelu", 1, "old_per_channel", [("x", g.rand((2, 3, 4))), ("s", g.rand((3,)))],
           {"consumed_inputs": [0, 0]}, oracle=prelu_oracle)


def bn_oracle(training, eps=1e-5):
    def run(f):
        x, sc, b, mean, var = f["x"], f["scale"], f["b"], f["mean"], f["var"]
        if training:
            axes = (0,) + tuple(range(2, x.ndim))
            mean, var = x.mean(axis=axes), x.var(axis=axes)
        sh = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * sc.reshape(sh) + b.reshape(sh)
        return [y.astype(x.dtype)]
    return run


def gen_batchnorm(g):
    c = 3
    ins = [("x", g.rand((2, c, 4, 5))), ("scale", g.rand((c,))), ("b", g.rand((c,))), ("mean", g.rand((c,))),
           ("var", g.away((c,)))]
    g.case("BatchNormalization", 6, "old_is_test", ins, {"is_test": 1, "epsilon": 1e-5}, oracle=bn_oracle(False))
    g.case("BatchNormalization", 6, "old_training", ins, {"is_test": 0}, oracle=bn_oracle(True))
    g.case("BatchNormalization", 1, "old_is_test", ins, {"is_test": 1, "consumed_inputs": [0, 0, 0, 1, 1]},
           oracle=bn_oracle(False))


def gen_shapes(g):
    a, b = g.rand((2, 3)), g.rand((2, 4))
    g.case("Concat", 1, "old_default_axis", [("a", a), ("b", b)], oracle=lambda f: [np.concatenate([f["a"], f["b"]], 1)])
    x = g.rand((2, 3, 4))
    g.case("Reshape", 1, "old_shape_attr", [("x", x)], {"shape": [4, -1], "consumed_inputs": [0]},
           oracle=lambda f: [f["x"].reshape(4, -1)])
    g.case("Reshape", 4, "old_shape_attr_zero", [("x", x)], {"shape": [0, 12]},
           oracle=lambda f: [f["x"].reshape(2, 12)])
    p = g.rand((2, 3))
    g.case("Pad", 1, "old_paddings", [("x", p)], {"paddings": [0, 1, 1, 2], "value": 1.5},
           oracle=lambda f: [np.pad(f["x"], ((0, 1), (1, 2)), constant_values=1.5)])
    g.case("Pad", 1, "old_paddings_reflect", [("x", p)], {"paddings": [0, 1, 0, 1], "mode": "reflect"},
           oracle=lambda f: [np.pad(f["x"], ((0, 0), (1, 1)), mode="reflect")])
    s = g.rand((2, 6))
    g.case("Split", 1, "old_split_attr", [("x", s)], {"axis": 1, "split": [2, 4]}, n_out=2,
           oracle=lambda f: np.split(f["x"], [2], axis=1))
    u = g.rand((1, 2, 2, 3))
    g.case("Upsample", 1, "old_scales", [("x", u)], {"height_scale": 2.0, "width_scale": 3.0},
           oracle=lambda f: [np.repeat(np.repeat(f["x"], 2, axis=2), 3, axis=3)])
    g.case("Upsample", 1, "old_bilinear", [("x", u)], {"height_scale": 2.0, "width_scale": 3.0,
                                                         "mode": "bilinear"}, oracle=upsample7_linear)
    for to, dt in (("DOUBLE", np.float64), ("INT32", np.int32)):
        g.case("Cast", 1, "old_" + to.lower(), [("x", g.rand((3, 4), lo=-5, hi=5))], {"to": to},
               oracle=lambda f, dt=dt: [f["x"].astype(dt)])
    g.case("Softmax", 1, "old_coerced_2d", [("x", g.rand((2, 3, 4)))], {"axis": 1}, oracle=softmax_2d)
    g.case("Dropout", 6, "old_is_test", [("x", x)], {"is_test": 1, "ratio": 0.3},
           oracle=lambda f: [f["x"]])
    gm = [("a", g.rand((2, 3))), ("b", g.rand((4, 3))), ("c", g.rand((4,)))]
    g.case("Gemm", 6, "old_broadcast", gm, {"broadcast": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
           oracle=lambda f: [(0.5 * f["a"] @ f["b"].T + 2.0 * f["c"]).astype(np.float32)])


def upsample7_linear(f):
    """Upsample-1's bilinear is Upsample-7's linear (the mode renamed, the scales moved into
    one list): onnxruntime runs the opset-7 form."""
    import onnx.helper as oh
    import onnxruntime as ort
    from onnx import TensorProto as TP

    x = f["x"]
    n = oh.make_node("Upsample", ["x"], ["y"], mode="linear", scales=[1.0, 1.0, 2.0, 3.0])
    gr = oh.make_graph([n], "g", [oh.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                       [oh.make_tensor_value_info("y", TP.FLOAT, None)])
    m = oh.make_model(gr, opset_imports=[oh.make_opsetid("", 7)])
    m.ir_version = 3
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})


def softmax_2d(f):
    x = f["x"].reshape(2, 12).astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    return [(e / e.sum(1, keepdims=True)).reshape(2, 3, 4).astype(np.float32)]


def gen_pools(g):
    x = g.rand((1, 2, 4, 4))
    g.case("GlobalLpPool", 1, "old_float_p", [("x", x)], {"p": 3.0},
           oracle=lambda f: [(np.abs(f["x"]) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3)])
    g.case("LpPool", 1, "old_float_p", [("x", x)], {"p": 2.0, "kernel_shape": [2, 2], "strides": [2, 2]},
           oracle=lambda f: [np.sqrt((f["x"].reshape(1, 2, 2, 2, 2, 2) ** 2).sum(axis=(3, 5)))
                             .astype(np.float32)])


def gen_consumed(g):
    """Version 1 of the unary and variadic ops: only `consumed_inputs`, an in-place hint."""
    x = g.rand((3, 4))
    for op, fn in (("Relu", lambda v: np.maximum(v, 0)), ("Neg", np.negative), ("Abs", np.abs),
                   ("Sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("Tanh", np.tanh)):
        g.case(op, 1, "old_consumed", [("x", x)], {"consumed_inputs": [0]},
               oracle=lambda f, fn=fn: [fn(f["x"]).astype(np.float32)])
    y = g.rand((3, 4))
    for op, fn in (("Sum", np.add), ("Max", np.maximum), ("Min", np.minimum)):
        g.case(op, 1, "old_consumed", [("a", x), ("b", y)], {"consumed_inputs": [0, 0]},
               oracle=lambda f, fn=fn: [fn(f["a"], f["b"])])
    g.case("Elu", 1, "old_consumed", [("x", x)], {"alpha": 0.5, "consumed_inputs": [0]},
           oracle=lambda f: [np.where(f["x"] < 0, 0.5 * (np.exp(f["x"]) - 1), f["x"]).astype(np.float32)])


def generate(g):
    gen_binary(g)
    gen_prelu(g)
    gen_batchnorm(g)
    gen_shapes(g)
    gen_pools(g)
    gen_consumed(g)
