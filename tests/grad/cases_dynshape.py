"""Gradient cases of broadcasting undone onto operands whose dims are static, symbolic
(named dims of graph inputs) or known only at run time (cut by a Slice whose end is
computed, reshaped by a computed shape), in every combination with the other operand:
the gradient of Add/Mul must be summed back to each operand's shape, whatever the
static inference could tell.  The BERT case is "runtime_vs_symbolic": a [1, S, H]
position embedding cut from a [1, 16, H] buffer by S = Shape(x)[1], added to [B, S, H]."""
from helpers import model, node, rand
import numpy as np
from onnx import TensorProto, helper

I64 = np.int64


def _sym_inputs(m, shapes):
    """give the graph inputs named in shapes the (possibly symbolic) dims listed there"""
    for i in m.graph.input:
        if i.name in shapes:
            dims = i.type.tensor_type.shape.dim
            for d, s in zip(dims, shapes[i.name]):
                if isinstance(s, str):
                    d.ClearField("dim_value")
                    d.dim_param = s
    return m


def _declare(m, name, shape):
    """graph output `name` declared float [shape] (static inference may not know it)"""
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    return m


def cases():
    out = []
    x, w = rand(2, 5, 4), rand(1, 16, 4)
    # Runtime seq cut: w[:, :S] with S from Shape(x), added to x: [1, ?, 4] onto [B, S, 4]
    # (static B, S; symbolic B, S), as operand 0 and operand 1, through Add and Mul.
    for sym in (False, True):
        for op in ("Add", "Mul"):
            for swap in (False, True):
                ins = ["x", "p"] if not swap else ["p", "x"]
                m = model([node("Shape", ["x"], ["sx"]),
                           node("Gather", ["sx", "one"], ["s"]),
                           node("Unsqueeze", ["s", "zero1"], ["end"]),
                           node("Slice", ["w", "zero1", "end", "one1"], ["p"]),
                           node(op, ins, ["t"]), node("Tanh", ["t"], ["y"])],
                          {"x": x}, ["y"], {"w": w},
                          consts={"one": np.array(1, I64), "zero1": np.array([0], I64),
                                  "one1": np.array([1], I64)}, opset=13)
                if sym:
                    _sym_inputs(m, {"x": ["B", "S", 4]})
                    _declare(m, "y", ["B", "S", 4])
                out.append(("bcast_runtime_vs_%s_%s%s" % ("symbolic" if sym else "static",
                                                           op.lower(), "_swap" if swap else ""),
                            m, {"x": x}))
    # Both sides unknown at run time: reshaped by computed shapes, so every dim is an
    # anonymous unknown: [?, ?] (really [1, 3]) onto [?, ?] (really [2, 3]).  Two unknown
    # dims must not be taken as equal.
    xa, wa = rand(2, 3), rand(3)
    m = model([node("Shape", ["x"], ["sx"]),
               node("Slice", ["sx", "one1", "two1"], ["s1"]),          # [3]
               node("Concat", ["one1", "s1"], ["sw"], axis=0),          # [1, 3]
               node("Reshape", ["w", "sw"], ["ww"]),                    # [?, ?]
               node("Reshape", ["x", "sx"], ["xx"]),                    # [?, ?]
               node("Mul", ["xx", "ww"], ["t"]), node("Sin", ["t"], ["y"])],
              {"x": xa}, ["y"], {"w": wa},
              consts={"one1": np.array([1], I64), "two1": np.array([2], I64)}, opset=13)
    out.append(("bcast_unknown_vs_unknown", _declare(m, "y", [2, 3]), {"x": xa}))
    # Symbolic against symbolic: inputs [B, S] and [P, S] where P is 1 at run time (a
    # different symbol: decided at run time) and [B, S] with the same symbols (no sum).
    xb, pb = rand(3, 4), rand(1, 4)
    m = model([node("Mul", ["x", "p"], ["t"]), node("Sigmoid", ["t"], ["y"])],
              {"x": xb, "p": pb}, ["y"], opset=13)
    _sym_inputs(m, {"x": ["B", "S"], "p": ["P", "S"]})
    out.append(("bcast_symbolic_vs_other_symbol", _declare(m, "y", ["B", "S"]),
                {"x": xb, "p": pb}))
    xs, ps = rand(3, 4), rand(3, 4)
    m = model([node("Mul", ["x", "p"], ["t"]), node("Sigmoid", ["t"], ["y"])],
              {"x": xs, "p": ps}, ["y"], opset=13)
    _sym_inputs(m, {"x": ["B", "S"], "p": ["B", "S"]})
    out.append(("bcast_symbolic_same_symbol", _declare(m, "y", ["B", "S"]),
                {"x": xs, "p": ps}))
    # Symbolic leading axes and a static 1: [B, S, 4] + [1, 1, 4] weight, and + [4].
    xc, wc, vc = rand(2, 3, 4), rand(1, 1, 4), rand(4)
    m = model([node("Add", ["x", "w"], ["t"]), node("Mul", ["t", "v"], ["u"]),
               node("Tanh", ["u"], ["y"])],
              {"x": xc}, ["y"], {"w": wc, "v": vc}, opset=13)
    _sym_inputs(m, {"x": ["B", "S", 4]})
    out.append(("bcast_symbolic_vs_static", _declare(m, "y", ["B", "S", 4]), {"x": xc}))
    # A symbolic operand that is broadcast at run time against a static one:
    # x [B, 1] (B = 1 at run time... and 3) times w [3, 4] -> [3, 4]
    for rows in (1, 3):
        xd, wd = rand(rows, 1), rand(3, 4)
        m = model([node("Mul", ["x", "w"], ["t"]), node("Tanh", ["t"], ["y"])],
                  {"x": xd}, ["y"], {"w": wd}, opset=13)
        _sym_inputs(m, {"x": ["B", 1]})
        out.append(("bcast_symbolic_runtime_%d" % rows, _declare(m, "y", [3, 4]), {"x": xd}))
    # The same dynamic cut at opset 11 and 12 (ReduceSum takes its axes as an attribute
    # there: the axes cannot come from a run-time computation)
    for opset in (11, 12):
        m = model([node("Shape", ["x"], ["sx"]),
                   node("Gather", ["sx", "one"], ["s"]),
                   node("Unsqueeze", ["s"], ["end"], axes=[0]),
                   node("Slice", ["w", "zero1", "end", "one1"], ["p"]),
                   node("Reshape", ["p", "shp"], ["pp"]),     # [?, ?, ?]: every dim unknown
                   node("Add", ["x", "pp"], ["t"]), node("Tanh", ["t"], ["y"])],
                  {"x": x}, ["y"], {"w": w},
                  consts={"one": np.array(1, I64), "zero1": np.array([0], I64),
                          "one1": np.array([1], I64), "shp": np.array([1, -1, 4], I64)},
                  opset=opset)
        out.append(("bcast_runtime_v%d" % opset, _declare(m, "y", [2, 5, 4]), {"x": x}))
    # Opset 9 (skl2onnx's linear models import it): no Slice with computed bounds, so the
    # axes decided at run time take their first entries by a Gather.  p = w reshaped by its
    # own run-time shape: [?, ?, ?], really [1, 5, 4] and [2, 1, 4], against x [2, 5, 4].
    for wshape in ((1, 5, 4), (2, 1, 4)):
        wv = rand(*wshape)
        m = model([node("Shape", ["w"], ["sw"]), node("Reshape", ["w", "sw"], ["p"]),
                   node("Add", ["x", "p"], ["t"]), node("Tanh", ["t"], ["y"])],
                  {"x": x}, ["y"], {"w": wv}, opset=9)
        out.append(("bcast_runtime_v9_%s" % "x".join(map(str, wshape)),
                    _declare(m, "y", [2, 5, 4]), {"x": x}))
    # Peers: [?, 4] (every dim unknown statically) + [4] and [?, 4]·[4, 3] at opset 9: axis 0
    # of the output can only be the first operand's, so nothing is left to run time.
    xe, we, be = rand(3, 4), rand(4, 3), rand(4)
    m = model([node("Shape", ["x"], ["sx"]), node("Reshape", ["x", "sx"], ["xr"]),
               node("Add", ["xr", "b"], ["t"]), node("MatMul", ["t", "w"], ["u"]),
               node("Sigmoid", ["u"], ["y"])],
              {"x": xe}, ["y"], {"w": we, "b": be}, opset=9)
    out.append(("bcast_peer_v9", _declare(m, "y", [3, 3]), {"x": xe}))
    return out


def _dyn_spatial(x_shape):
    """nodes making 'xr' = x reshaped by its own run-time shape: the same values with every
    dim unknown to static inference"""
    return [node("Shape", ["x"], ["sx"]), node("Reshape", ["x", "sx"], ["xr"])]


def conv_cases():
    """Conv and MaxPool gradients where channel counts and spatial sizes are known only at
    run time (the shufflenet case: a channel shuffle's computed Reshape before a Conv)."""
    out = []
    variants = [
        ("plain", dict(kernel_shape=[3, 3]), 4, 1),
        ("pads_stride2", dict(kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[2, 2]), 4, 1),
        ("dil2", dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1]), 4, 1),
        ("same_upper_s2", dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]), 4, 1),
        ("same_lower_s3", dict(kernel_shape=[2, 2], auto_pad="SAME_LOWER", strides=[3, 3]), 4, 1),
        ("valid_s2", dict(kernel_shape=[3, 3], auto_pad="VALID", strides=[2, 2]), 4, 1),
        ("group2", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2), 4, 2),
        ("depthwise_s2", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=4), 4, 4),
    ]
    for name, attrs, cin, group in variants:
        x = rand(2, cin, 7, 6)
        w, bias = rand(6 if group != 4 else 4, cin // group, *attrs["kernel_shape"]), rand(6 if group != 4 else 4)
        m = model(_dyn_spatial(x.shape) + [node("Conv", ["xr", "w", "b"], ["c"], **attrs),
                                             node("Tanh", ["c"], ["y"])],
                  {"x": x}, ["y"], {"w": w, "b": bias}, opset=13)
        ref = model([node("Conv", ["x", "w", "b"], ["y"], **attrs)], {"x": x}, ["y"],
                    {"w": w, "b": bias}, opset=13)
        shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
        out.append(("conv_dyn_" + name, _declare(m, "y", shp), {"x": x}))
    for name, attrs in (("k3s2p1", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
                        ("k2s2", dict(kernel_shape=[2, 2], strides=[2, 2])),
                        ("k3s1_tiny", dict(kernel_shape=[3, 3], strides=[1, 1]))):
        x = rand(2, 3, 5, 4) if "tiny" not in name else rand(1, 2, 3, 3)
        for opset in (11, 13, 16):
            m = model(_dyn_spatial(x.shape) + [node("MaxPool", ["xr"], ["y"], **attrs)],
                      {"x": x}, ["y"], opset=opset)
            ref = model([node("MaxPool", ["x"], ["y"], **attrs)], {"x": x}, ["y"], opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("maxpool_dyn_%s_v%d" % (name, opset), _declare(m, "y", shp), {"x": x}))
    return out


_base_cases = cases


def cases():  # noqa: F811
    return _base_cases() + conv_cases()
