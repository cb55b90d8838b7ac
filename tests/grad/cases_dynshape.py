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
    # Opsets 7 and 8 the same way, the sum broadcast back by an Add (no Expand at 7), the
    # choice by arithmetic (no Where) and the first entries by an iota Loop (no NonZero).
    for wshape in ((1, 5, 4), (2, 1, 4)):
        wv = rand(*wshape)
        for opset in (7, 8, 9):
            m = model([node("Shape", ["w"], ["sw"]), node("Reshape", ["w", "sw"], ["p"]),
                       node("Add", ["x", "p"], ["t"]), node("Tanh", ["t"], ["y"])],
                      {"x": x}, ["y"], {"w": wv}, opset=opset)
            out.append(("bcast_runtime_v%d_%s" % (opset, "x".join(map(str, wshape))),
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


# The SAME cases at opset 7 draw from their own generator: the cases after them (here and in
# the files loaded later) keep the values they had.
_LRNG = np.random.default_rng(10)


def _lrand(*shape):
    return _LRNG.uniform(-1.0, 1.0, shape).astype(np.float32)


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
        # below opset 10: the cuts by Gathers of a run-time iota (SAME's dW needs Pad-11)
        for opset in (7, 9):  # SAME's dW: zeros concatenated by Gathers (no Pad-11)
            m = model(_dyn_spatial(x.shape) + [node("Conv", ["xr", "w", "b"], ["c"], **attrs),
                                               node("Tanh", ["c"], ["y"])],
                      {"x": x}, ["y"], {"w": w, "b": bias}, opset=opset)
            out.append(("conv_dyn_%s_v%d" % (name, opset), _declare(m, "y", shp), {"x": x}))
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
    # below opset 9 (window-tap masks): opset 8 reads the Indices, opset 7 compares each tap's
    # value with the max (neither version has dilations or ceil_mode)
    for name, attrs, x in (
            ("k3s2p1", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), rand(2, 3, 5, 4)),
            ("k2s2", dict(kernel_shape=[2, 2], strides=[2, 2]), rand(2, 3, 5, 4)),
            ("k3x2_s1_pads_overlap", dict(kernel_shape=[3, 2], pads=[0, 1, 2, 0]), rand(1, 2, 4, 5)),
            ("k3s2_s1", dict(kernel_shape=[3, 3], strides=[2, 1], pads=[1, 0, 0, 1]), rand(1, 2, 6, 5)),
            ("k2s3_valid", dict(kernel_shape=[2, 2], strides=[3, 2], auto_pad="VALID"), rand(2, 2, 7, 6)),
            ("same_upper_s2", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"), rand(1, 2, 5, 6)),
            ("same_lower_s2", dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER"), rand(1, 2, 5, 6)),
            # auto_pad SAME at opset 7 pads by run-time amounts (zeros concatenated, masked):
            # odd and even sizes, pads of 0 on one axis, total pads odd (UPPER and LOWER put
            # the extra cell on different sides), overlapping windows, 1-D and 3-D
            ("same_upper_k3s1_odd", dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER"), _lrand(2, 3, 5, 7)),
            ("same_lower_k2s1_odd", dict(kernel_shape=[2, 2], auto_pad="SAME_LOWER"), _lrand(1, 3, 5, 3)),
            ("same_upper_k2s1", dict(kernel_shape=[2, 4], auto_pad="SAME_UPPER"), _lrand(1, 2, 4, 7)),
            ("same_lower_k4x3_s3x2", dict(kernel_shape=[4, 3], strides=[3, 2], auto_pad="SAME_LOWER"), _lrand(2, 2, 7, 9)),
            ("same_upper_k3_s3_nopad", dict(kernel_shape=[3, 3], strides=[3, 3], auto_pad="SAME_UPPER"), _lrand(1, 2, 6, 9)),
            ("same_upper_k5_s2_small", dict(kernel_shape=[5, 5], strides=[2, 2], auto_pad="SAME_UPPER"), _lrand(1, 1, 3, 2)),
            ("same_lower_k5_s1_small", dict(kernel_shape=[5, 4], auto_pad="SAME_LOWER"), _lrand(1, 2, 2, 3)),
            ("same_upper_1d_k4s2", dict(kernel_shape=[4], strides=[2], auto_pad="SAME_UPPER"), _lrand(2, 3, 9)),
            ("same_lower_1d_k3s2", dict(kernel_shape=[3], strides=[2], auto_pad="SAME_LOWER"), _lrand(2, 2, 8)),
            ("same_lower_3d_k2", dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2], auto_pad="SAME_LOWER"), _lrand(1, 2, 3, 5, 3)),
            # all-negative input: the zeros of the padding are larger than every value and
            # must still take no gradient
            ("same_upper_negative", dict(kernel_shape=[3, 3], strides=[2, 1], auto_pad="SAME_UPPER"), -1.0 - np.abs(_lrand(1, 2, 5, 4))),
            ("same_lower_negative", dict(kernel_shape=[2, 3], strides=[1, 2], auto_pad="SAME_LOWER"), -1.0 - np.abs(_lrand(1, 2, 4, 5))),
            ("1d_k3s2p1", dict(kernel_shape=[3], strides=[2], pads=[1, 1]), rand(2, 3, 7)),
            ("3d_k2", dict(kernel_shape=[2, 2, 2], strides=[1, 2, 1], pads=[0, 1, 0, 1, 0, 0]), rand(1, 2, 3, 4, 3))):
        for opset in (7, 8):
            m = model(_dyn_spatial(x.shape) + [node("MaxPool", ["xr"], ["y"], **attrs)],
                      {"x": x}, ["y"], opset=opset)
            ref = model([node("MaxPool", ["x"], ["y"], **attrs)], {"x": x}, ["y"], opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("maxpool_dyn_%s_v%d" % (name, opset), _declare(m, "y", shp), {"x": x}))
    return out


def static_free_cases():
    """AveragePool, LpPool, ConvTranspose, per-activation BatchNormalization,
    GroupNormalization, CRD DepthToSpace, Resize, GatherND's OneHot form and the Scatter
    updates gradient with every dim known only at run time (they refused: the divisor, pads and window sums came from static sizes)."""
    out = []
    pools = [
        ("k3s2p1_excl", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("k3s2p1_incl", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 2],
                             count_include_pad=1)),
        ("k2s2", dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("k3s1_overlap", dict(kernel_shape=[3, 2], strides=[1, 1], pads=[0, 1, 1, 0])),
        ("same_upper_s2", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
        ("same_lower_s2_incl", dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER",
                                    count_include_pad=1)),
        ("valid_s3", dict(kernel_shape=[2, 2], strides=[3, 2], auto_pad="VALID")),
        ("ceil_k3s2", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1)),
        # ceil_mode with count_include_pad: the last windows run past the end padding (7 + 1
        # + 0 along H, 6 + 0 + 1 along W, k 3, s 2), divided by the kernel volume all the
        # same (ONNX's reference; onnxruntime divides by the cells in the padded input)
        ("ceil_cip_k3s2", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 0, 1],
                               ceil_mode=1, count_include_pad=1)),
    ]
    x = rand(2, 3, 7, 6)
    for name, attrs in pools:
        # 7 and 9: the cuts by Gathers of a run-time iota, ones without Expand at 7
        for opset in (11, 13) if "ceil" in name else (7, 9, 11, 13):
            m = model(_dyn_spatial(x.shape) + [node("AveragePool", ["xr"], ["p"], **attrs),
                                                 node("Tanh", ["p"], ["y"])],
                      {"x": x}, ["y"], opset=opset)
            ref = model([node("AveragePool", ["x"], ["y"], **attrs)], {"x": x}, ["y"],
                        opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("avgpool_dyn_%s_v%d" % (name, opset), _declare(m, "y", shp), {"x": x}))
    for name, attrs in (("p2_k3s2p1", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
                        ("p1_k2s1", dict(kernel_shape=[2, 2], p=1)),
                        ("p3_same_upper", dict(kernel_shape=[3, 2], strides=[2, 1], p=3,
                                               auto_pad="SAME_UPPER"))):
        for opset in (7, 9, 13):
            m = model(_dyn_spatial(x.shape) + [node("LpPool", ["xr"], ["y"], **attrs)],
                      {"x": x}, ["y"], opset=opset)
            ref = model([node("LpPool", ["x"], ["y"], **attrs)], {"x": x}, ["y"], opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("lppool_dyn_%s%s" % (name, "" if opset == 13 else "_v%d" % opset),
                        _declare(m, "y", shp), {"x": x}))
    # ConvTranspose (explicit pads, VALID, SAME) with X's channel count and sizes hidden
    xc = rand(2, 4, 5, 4)
    for name, attrs, group in (
            ("plain", dict(kernel_shape=[3, 3]), 1),
            ("s2p1op1", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 2],
                             output_padding=[1, 1]), 1),
            ("dil2_s3", dict(kernel_shape=[2, 3], strides=[3, 1], dilations=[2, 2],
                             pads=[0, 1, 1, 0]), 1),
            ("group2_s2", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], group=2), 2),
            ("valid_s2", dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID"), 1),
            ("same_upper_s2", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"), 1),
            ("same_lower_k4s2", dict(kernel_shape=[4, 3], strides=[2, 1], auto_pad="SAME_LOWER"),
             1),
            # output_shape: the pads computed from X's run-time sizes (full result 11 x 9
            # for k3 s2): odd totals split to the start, SAME_UPPER's to the end, a group,
            # and beyond the full result (a negative begin pad: dY cut)
            ("oshape_odd", dict(kernel_shape=[3, 3], strides=[2, 2], output_shape=[10, 8]), 1),
            ("oshape_same_upper", dict(kernel_shape=[3, 3], strides=[2, 2], output_shape=[10, 8],
                                       auto_pad="SAME_UPPER"), 1),
            ("oshape_group2", dict(kernel_shape=[3, 2], strides=[2, 1], dilations=[1, 2],
                                      output_shape=[9, 5], group=2), 2),
            ("oshape_beyond", dict(kernel_shape=[3, 3], strides=[2, 2], output_shape=[14, 9]),
             1)):
        w, bias = rand(4, 6 // group if group == 2 else 3, *attrs["kernel_shape"]), None
        cout = w.shape[1] * group
        bias = rand(cout)
        m = model(_dyn_spatial(xc.shape) + [node("ConvTranspose", ["xr", "w", "b"], ["c"], **attrs),
                                              node("Tanh", ["c"], ["y"])],
                  {"x": xc}, ["y"], {"w": w, "b": bias}, opset=13)
        ref = model([node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], {"x": xc}, ["y"],
                    {"w": w, "b": bias}, opset=13)
        shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
        out.append(("convtranspose_dyn_" + name, _declare(m, "y", shp), {"x": xc}))
        if name in ("plain", "s2p1op1", "group2_s2", "valid_s2", "oshape_odd",
                    "oshape_group2", "oshape_beyond"):  # below opset 10 too
            m = model(_dyn_spatial(xc.shape) +
                      [node("ConvTranspose", ["xr", "w", "b"], ["c"], **attrs),
                       node("Tanh", ["c"], ["y"])],
                      {"x": xc}, ["y"], {"w": w, "b": bias}, opset=9)
            out.append(("convtranspose_dyn_%s_v9" % name, _declare(m, "y", shp), {"x": xc}))
    # per-activation BatchNormalization (opset 7, spatial 0) with X's dims hidden: given
    # statistics and batch statistics
    xb = rand(3, 2, 3, low=-2, high=2)
    bw = {"scale": rand(2, 3, low=0.5, high=1.5), "b": rand(2, 3), "mean": rand(2, 3),
          "var": rand(2, 3, low=0.5, high=1.5)}
    for name, outs in (("infer", ["p"]), ("train", ["p", "rm", "rv", "sm", "sv"])):
        m = model(_dyn_spatial(xb.shape) +
                  [node("BatchNormalization", ["xr", "scale", "b", "mean", "var"], outs,
                        spatial=0, epsilon=1e-3),
                   node("Tanh", ["p"], ["y"])], {"x": xb}, ["y"], bw, opset=7)
        out.append(("bn_dyn_v7_per_activation_" + name, _declare(m, "y", [3, 2, 3]), {"x": xb}))
    # GatherND below opset 16 and with batch_dims, data's dims hidden (repeated and
    # negative indices)
    xn = rand(3, 4, 2)
    for tag, ind, bd in (("full", np.array([[0, 1, 1], [2, -1, 0], [0, 1, 1]], I64), 0),
                         ("rows", np.array([[1], [-1], [1]], I64), 0),
                         ("b1_k1", np.array([[1], [-1], [1]], I64), 1),
                         ("b1_k2", np.array([[[1, 0], [-1, 1]], [[0, 0], [3, 1]],
                                             [[2, 1], [2, 1]]], I64), 1),
                         ("b2_k1", np.array([[[1], [0], [-1], [1]]] * 3, I64), 2)):
        for opset in (13, 17):
            if bd == 0 and opset >= 16:
                continue  # the ScatterND form, shape-free already
            m = model(_dyn_spatial(xn.shape) + [node("GatherND", ["xr", "i"], ["g"], batch_dims=bd),
                                                  node("Tanh", ["g"], ["y"])],
                      {"x": xn}, ["y"], consts={"i": ind}, opset=opset)
            ref = model([node("GatherND", ["x", "i"], ["y"], batch_dims=bd)], {"x": xn}, ["y"],
                        consts={"i": ind}, opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("gathernd_dyn_v%d_%s" % (opset, tag), _declare(m, "y", shp), {"x": xn}))
    # GroupNormalization (per group at 18, per channel at 21) and CRD DepthToSpace with the
    # channel count hidden
    xg = rand(2, 6, 3, 2)
    for opset in (18, 21):
        n_ = 6 if opset >= 21 else 3
        m = model(_dyn_spatial(xg.shape) +
                  [node("GroupNormalization", ["xr", "s", "b"], ["p"], num_groups=3),
                   node("Tanh", ["p"], ["y"])],
                  {"x": xg}, ["y"], {"s": rand(n_, low=0.5, high=1.5), "b": rand(n_)}, opset=opset)
        out.append(("groupnorm_dyn_v%d" % opset, _declare(m, "y", list(xg.shape)), {"x": xg}))
    xd = rand(2, 8, 2, 3)
    for mode in ("CRD", "DCR"):
        m = model(_dyn_spatial(xd.shape) + [node("DepthToSpace", ["xr"], ["p"], blocksize=2,
                                                 mode=mode),
                                            node("Tanh", ["p"], ["y"])], {"x": xd}, ["y"], opset=13)
        out.append(("depthtospace_dyn_%s" % mode.lower(), _declare(m, "y", [2, 2, 4, 6]),
                    {"x": xd}))
    # Resize with X's dims hidden: the interpolation matrices built at run time (scales
    # and sizes, up and down, nearest, linear and cubic, several coordinate modes)
    xz = rand(2, 3, 4, 5)
    f32 = np.float32
    for name, kw, sc, sz, opset in (
            ("nearest_up2", dict(mode="nearest"), [1, 1, 2, 2], None, 13),
            ("linear_half_pixel_up", dict(mode="linear"), [1, 1, 1.5, 2], None, 13),
            ("linear_align_corners_sizes", dict(mode="linear",
                                                coordinate_transformation_mode="align_corners"),
             None, [2, 3, 7, 3], 11),
            ("cubic_down_sizes", dict(mode="cubic"), None, [2, 3, 3, 4], 13),
            ("nearest_ceil_asym_axes", dict(mode="nearest", nearest_mode="ceil", axes=[3, 2],
                                            coordinate_transformation_mode="asymmetric"),
             [1.7, 0.6], None, 18)):
        ins = ["xr", "", "sc"] if sc else ["xr", "", "", "sz"]
        consts = {"sc": np.array(sc, f32)} if sc else {"sz": np.array(sz, I64)}
        if opset < 13:  # roi and scales are required inputs at 11
            ins = ["xr", "roi", "sc", "sz"] if not sc else ["xr", "roi", "sc"]
            consts.update(roi=np.zeros(0, f32), **({} if sc else {"sc": np.zeros(0, f32)}))
        m = model(_dyn_spatial(xz.shape) + [node("Resize", ins, ["p"], **kw),
                                              node("Tanh", ["p"], ["y"])],
                  {"x": xz}, ["y"], consts=consts, opset=opset)
        ref = model([node("Resize", ["x"] + ins[1:], ["y"], **kw)], {"x": xz}, ["y"],
                    consts=consts, opset=opset)
        shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
        out.append(("resize_dyn_%s_v%d" % (name, opset), _declare(m, "y", shp), {"x": xz}))
    # MaxUnpool with output_shape and X's dims hidden: the covered block [N, C, (in − 1)·s
    # + k − pb − pe] computed at run time; output_shape equal to it (onnxruntime agrees)
    # and larger (the block at the start, as ONNX's reference)
    xu = rand(2, 3, 2, 3)
    hh, ww = np.meshgrid(np.arange(2), np.arange(3), indexing="ij")
    pick = np.random.default_rng(7).integers(0, 2, size=(6, 2, 3, 2))
    plane = (2 * hh + pick[..., 0]) * 6 + 2 * ww + pick[..., 1]
    ind = (np.arange(6)[:, None, None] * 24 + plane).reshape(2, 3, 2, 3).astype(I64)
    for tag, shp in (("equal", [2, 3, 4, 6]), ("larger", [2, 3, 5, 7])):
        for opset in (9, 11):  # 9: the covered block gathered by a run-time iota (no Slice)
            m = model(_dyn_spatial(xu.shape) +
                      [node("MaxUnpool", ["xr", "i", "s"], ["p"], kernel_shape=[2, 2],
                            strides=[2, 2]), node("Tanh", ["p"], ["y"])],
                      {"x": xu}, ["y"], consts={"i": ind, "s": np.array(shp, I64)}, opset=opset)
            out.append(("maxunpool_dyn_output_shape_%s%s" % (tag, "_v9" if opset == 9 else ""),
                        _declare(m, "y", shp), {"x": xu}))
    # 1-D with pads: covered (3 − 1)·2 + 2 − 1 − 1 = 4, output_shape the same
    xv = rand(1, 2, 3)
    m = model(_dyn_spatial(xv.shape) +
              [node("MaxUnpool", ["xr", "i", "s"], ["p"], kernel_shape=[2], strides=[2],
                    pads=[1, 1]), node("Tanh", ["p"], ["y"])],
              {"x": xv}, ["y"], consts={"i": np.array([[[0, 2, 3], [4, 6, 7]]], I64),
                                        "s": np.array([1, 2, 4], I64)}, opset=11)
    out.append(("maxunpool_dyn_output_shape_1d_pads", _declare(m, "y", [1, 2, 4]), {"x": xv}))
    # Det with the matrix size hidden: the cofactors' minors gathered by indices built
    # with Range at run time (batched 3x3, 2x2, 1x1: 0x0 minors of determinant 1)
    for tag, shape in (("3x3_batch", (2, 3, 3)), ("2x2", (2, 2)), ("1x1", (3, 1, 1))):
        xd = rand(*shape)
        m = model(_dyn_spatial(xd.shape) + [node("Det", ["xr"], ["p"]), node("Sin", ["p"], ["y"])],
                  {"x": xd}, ["y"], opset=13)
        out.append(("det_dyn_" + tag, _declare(m, "y", list(shape[:-2])), {"x": xd}))
    # AffineGrid with theta's dims hidden (the spatial count from the grid's rank), and
    # with the size computed too (from the length of Shape(x))
    for tag, th, size in (("2d", rand(2, 2, 3), [2, 3, 4, 5]), ("3d", rand(1, 3, 4), [1, 2, 2, 3, 4])):
        m = model([node("Shape", ["t"], ["st"]), node("Reshape", ["t", "st"], ["tr"]),
                   node("AffineGrid", ["tr", "s"], ["p"]), node("Sin", ["p"], ["y"])],
                  {"t": th}, ["y"], consts={"s": np.array(size, I64)}, opset=20)
        out.append(("affinegrid_dyn_theta_" + tag,
                    _declare(m, "y", size[:1] + size[2:] + [len(size) - 2]), {"t": th}))
    th, xa = rand(2, 2, 3), rand(2, 3, 4, 5)
    m = model([node("Shape", ["t"], ["st"]), node("Reshape", ["t", "st"], ["tr"]),
               node("Shape", ["x"], ["sx"]), node("Reshape", ["x", "sx"], ["xr"]),
               node("Shape", ["xr"], ["s"]),
               node("AffineGrid", ["tr", "s"], ["g"], align_corners=1),
               node("GridSample", ["x", "g"], ["y"])],
              {"t": th, "x": xa}, ["y"], opset=20)
    out.append(("affinegrid_dyn_size", _declare(m, "y", [2, 3, 4, 5]), {"t": th, "x": xa}))
    # Blocked DequantizeLinear of integer weights whose dims are hidden: the scale's
    # gradient summed per block with the axis padded to whole blocks at run time (last
    # axis with a partial block, first axis, middle axis of a rank-3 weight)
    rq = np.random.default_rng(11)
    for tag, wshape, axis, bs, sshape in (("last_partial", (4, 5), 1, 2, (4, 3)),
                                          ("first", (5, 4), 0, 3, (2, 4)),
                                          ("middle_rank3", (2, 5, 3), 1, 2, (2, 3, 3))):
        wq = rq.integers(-100, 100, wshape).astype(np.int8)
        zq = rq.integers(-3, 3, sshape).astype(np.int8)
        xq = rand(*wshape)
        m = model([node("Shape", ["w"], ["sw"]), node("Reshape", ["w", "sw"], ["wr"]),
                   node("DequantizeLinear", ["wr", "s", "z"], ["d"], axis=axis, block_size=bs),
                   node("Mul", ["x", "d"], ["y"])],
                  {"x": xq}, ["y"], {"s": rand(*sshape, low=0.01, high=0.05)},
                  consts={"w": wq, "z": zq}, opset=21)
        out.append(("dq_blocked_dyn_" + tag, _declare(m, "y", list(wshape)), {"x": xq}))
    # Col2Im whose image_shape and block_shape are computed at run time (from Shape of
    # hidden tensors of those sizes): the identity kernel built by EyeLike
    for tag, image, block, attrs in (("3x3", [5, 5], [3, 3], {}),
                                     ("dil_pads_strides", [5, 6], [2, 2],
                                      {"dilations": [2, 1], "pads": [1, 0, 1, 2],
                                       "strides": [1, 2]})):
        nb = 1
        for i in range(2):
            ek = (block[i] - 1) * attrs.get("dilations", [1, 1])[i] + 1
            pp = attrs.get("pads", [0] * 4)
            nb *= (image[i] + pp[i] + pp[2 + i] - ek) // attrs.get("strides", [1, 1])[i] + 1
        xi = rand(2, 2 * block[0] * block[1], nb)
        m = model([node("Shape", ["ia"], ["ims"]), node("Shape", ["ba"], ["bls"]),
                   node("Col2Im", ["x", "ims", "bls"], ["p"], **attrs),
                   node("Tanh", ["p"], ["y"])],
                  {"x": xi}, ["y"], consts={"ia": np.zeros(image, np.float32),
                                            "ba": np.zeros(block, np.float32)}, opset=18)
        out.append(("col2im_dyn_" + tag, _declare(m, "y", [2, 2] + image), {"x": xi}))
    # GridSample with X's dims hidden: the axis sizes, the unnormalisation, the border and
    # reflection bounds and the flat index strides computed at run time (2-D and 3-D, the
    # three modes and paddings, a unit axis with align_corners reflected)
    for tag, xs_, gs_, attrs, opset in (
            ("linear_zeros", (2, 3, 4, 5), (2, 3, 4, 2), {}, 16),
            ("nearest_border_ac", (2, 3, 4, 5), (2, 3, 4, 2),
             {"mode": "nearest", "padding_mode": "border", "align_corners": 1}, 16),
            ("cubic_reflection", (1, 2, 4, 5), (1, 3, 2, 2),
             {"mode": "cubic", "padding_mode": "reflection"}, 20),
            ("linear_reflection_3d", (1, 2, 3, 4, 2), (1, 2, 3, 2, 3),
             {"padding_mode": "reflection"}, 20),
            ("unit_axis_reflection_ac", (1, 2, 1, 4), (1, 2, 3, 2),
             {"padding_mode": "reflection", "align_corners": 1}, 20)):
        xg, gg = rand(*xs_), rand(*gs_, low=-1.3, high=1.3)
        m = model(_dyn_spatial(xg.shape) + [node("GridSample", ["xr", "g"], ["p"], **attrs),
                                            node("Tanh", ["p"], ["y"])],
                  {"x": xg, "g": gg}, ["y"], opset=opset)
        out.append(("gridsample_dyn_" + tag,
                    _declare(m, "y", list(xs_[:2]) + list(gs_[1:-1])), {"x": xg, "g": gg}))
    # RoiAlign with X's height and width hidden: the taps' bounds, OneHot depths and the
    # max mode's flat positions from Shape(X) (average and max, adaptive and fixed grids)
    xr_ = rand(2, 3, 6, 7)
    rois = np.array([[0.5, 1.0, 4.2, 5.1], [1.3, 0.2, 6.5, 3.3], [-1.0, 2.0, 3.0, 7.5]],
                    np.float32)
    for opset, tag, attrs in (
            (10, "avg_adaptive", {"output_height": 3, "output_width": 2}),
            (16, "avg_sr2_half_pixel", {"output_height": 2, "output_width": 3,
                                        "sampling_ratio": 2}),
            (16, "max_adaptive", {"output_height": 2, "output_width": 3, "mode": "max"})):
        m = model(_dyn_spatial(xr_.shape) + [node("RoiAlign", ["xr", "r", "b"], ["p"], **attrs),
                                             node("Tanh", ["p"], ["y"])],
                  {"x": xr_}, ["y"], opset=opset, consts={"b": np.array([0, 1, 1], I64)})
        m.graph.node.insert(0, helper.make_node("Constant", [], ["r"], value=helper.make_tensor(
            "r", TensorProto.FLOAT, rois.shape, rois.flatten().tolist())))
        out.append(("roialign_dyn_" + tag,
                    _declare(m, "y", [3, 3, attrs["output_height"], attrs["output_width"]]),
                    {"x": xr_}))
    # Slice-1 (attributes only, opsets 7 and 9) with the sliced dims hidden: the zeros
    # around dY cut from X itself (positive, negative and past-the-end bounds, two axes)
    xs1 = rand(4, 5, 6)
    for tag, kw in (("pos_two_axes", dict(starts=[1, 2], ends=[3, 5], axes=[0, 2])),
                    ("neg_mixed", dict(starts=[1, -4], ends=[-1, 1000], axes=[1, 2])),
                    ("default_axes", dict(starts=[-3], ends=[4])),
                    ("empty_same_sign", dict(starts=[-2, 0], ends=[-4, 3], axes=[2, 0]))):
        for opset in (7, 9):
            m = model(_dyn_spatial(xs1.shape) + [node("Slice", ["xr"], ["p"], **kw),
                                                 node("Tanh", ["p"], ["y"])],
                      {"x": xs1}, ["y"], opset=opset)
            ref = model([node("Slice", ["x"], ["y"], **kw)], {"x": xs1}, ["y"], opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("slice1_dyn_%s_v%d" % (tag, opset), _declare(m, "y", shp), {"x": xs1}))
    # Slice-1 with bounds of mixed signs, dims hidden: empty at run time (start -1, end 1
    # on 4; start 3, end -3 on 5; a start past the end with a negative end) next to a
    # non-empty slice concatenated along the same axis (so that dX's shape shows), and not
    # empty (the pieces before and after are X[:s] and X[e:] there)
    for tag, kw, other, axis in (
            ("empty_neg_pos", dict(starts=[-1], ends=[1], axes=[0]),
             dict(starts=[1], ends=[3], axes=[0]), 0),
            ("empty_pos_neg_two_axes", dict(starts=[1, 3], ends=[3, -3], axes=[0, 1]),
             dict(starts=[0], ends=[2], axes=[0]), 1),
            ("empty_past_end_neg", dict(starts=[9], ends=[-2], axes=[2]),
             dict(starts=[1], ends=[-1], axes=[2]), 2),
            ("mixed_not_empty", dict(starts=[-3, 1], ends=[3, -1], axes=[1, 2]), None, 1)):
        for opset in (7, 9):
            nodes = [node("Slice", ["xr"], ["p"], **kw)]
            if other:
                nodes += [node("Slice", ["xr"], ["q"], **other),
                          node("Concat", ["p", "q"], ["c"], axis=axis)]
            else:
                nodes += [node("Identity", ["p"], ["c"])]
            m = model(_dyn_spatial(xs1.shape) + nodes + [node("Tanh", ["c"], ["y"])],
                      {"x": xs1}, ["y"], opset=opset)
            ref = model([node("Slice", ["x"], ["y"], **(other or kw))], {"x": xs1}, ["y"],
                        opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("slice1_dyn_mixed_%s_v%d" % (tag, opset), _declare(m, "y", shp),
                        {"x": xs1}))
    # Scatter-9 whose indices' dims are hidden (reshaped by their own Shape): the updates'
    # gradient gathered from dY at flat offsets built from NonZero over the indices' shape
    for tag, dshape, ind, axis in (
            ("axis0", (3, 4), np.array([[1, 0, 2], [2, 1, 0]], I64), 0),
            ("axis1_3d", (2, 3, 4), np.array([[[2, 0, 1], [0, 1, 2]], [[1, 2, 0], [2, 0, 1]]],
                                             I64), 1)):
        xs9, u9 = rand(*dshape), rand(*ind.shape)
        m = model([node("Shape", ["i"], ["si"]), node("Reshape", ["i", "si"], ["ir"]),
                   node("Scatter", ["x", "ir", "u"], ["s"], axis=axis),
                   node("Tanh", ["s"], ["y"])],
                  {"x": xs9}, ["y"], {"u": u9}, consts={"i": ind}, opset=9)
        out.append(("scatter_dyn_v9_" + tag, _declare(m, "y", list(dshape)), {"x": xs9}))
    # Upsample-9 and Resize-10 with X's dims hidden: the probe's identity of the run-time
    # size from EyeLike(ConstantOfShape([D, D])) (no Range before 11)
    xu9 = rand(2, 3, 4, 5)
    for tag, op, mode, sc, opset in (("upsample_v9_nearest", "Upsample", "nearest",
                                      [1, 1, 2, 1.5], 9),
                                     ("upsample_v9_linear", "Upsample", "linear", [1, 1, 1.5, 2], 9),
                                     ("resize_v10_linear_down", "Resize", "linear",
                                      [1, 1, 0.5, 0.8], 10)):
        m = model(_dyn_spatial(xu9.shape) + [node(op, ["xr", "sc"], ["p"], mode=mode),
                                             node("Tanh", ["p"], ["y"])],
                  {"x": xu9}, ["y"], consts={"sc": np.array(sc, np.float32)}, opset=opset)
        shp = [int(np.floor(d * f)) for d, f in zip(xu9.shape, sc)]
        out.append((tag.replace("_v", "_dyn_v", 1), _declare(m, "y", shp), {"x": xu9}))
    # Scatter (opset 10) whose indices' off-axis dim is cut at run time from x's shape:
    # indices [2, 4] -> [2, Shape(x)[1] - 1] = [2, 3] onto data [3, 4] (axis 0), and
    # indices [3, 3] -> [Shape(x)[0] - 1, 3] = [2, 3] along axis 1
    xs = rand(3, 4)
    for axis, ind, cut in ((0, np.array([[1, 0, 2, 0], [2, 1, 0, 1]], I64), 1),
                           (1, np.array([[3, 0, 1], [1, 2, 0], [0, 3, 2]], I64), 0)):
        u = rand(2, 3)
        m = model([node("Shape", ["x"], ["sx"]),
                   node("Slice", ["sx", "c0", "c1"], ["d"]) if cut == 0 else
                   node("Slice", ["sx", "c1", "c2"], ["d"]),
                   node("Sub", ["d", "one1"], ["end"]),
                   node("Slice", ["i", "zero1", "end", "ax"], ["ir"]),
                   node("Scatter", ["x", "ir", "u"], ["s"], axis=axis),
                   node("Tanh", ["s"], ["y"])],
                  {"x": xs}, ["y"], {"u": u},
                  consts={"i": ind, "c0": np.array([0], I64), "c1": np.array([1], I64),
                          "c2": np.array([2], I64), "one1": np.array([1], I64),
                          "zero1": np.array([0], I64), "ax": np.array([cut], I64)}, opset=10)
        out.append(("scatter_dyn_v10_axis%d" % axis, _declare(m, "y", [3, 4]), {"x": xs}))
    # Gather below opset 9 with data's dims hidden: the one-hot of the indices compared
    # with a run-time iota of the gathered dim (a Loop: no Range, OneHot or NonZero there);
    # repeated and negative indices, int32 indices, axis 0 and 1
    xg1 = rand(4, 3, 2)
    for tag, ind, axis in (("axis0_rep_neg", np.array([[1, -1], [1, 0], [3, -4]], I64), 0),
                           ("axis1_i32", np.array([2, -3, 2], np.int32), 1),
                           ("axis1_scalar", np.array(-2, I64), 1)):
        for opset in (7, 8):
            m = model(_dyn_spatial(xg1.shape) + [node("Gather", ["xr", "i"], ["g"], axis=axis),
                                                 node("Tanh", ["g"], ["y"])],
                      {"x": xg1}, ["y"], consts={"i": ind}, opset=opset)
            ref = model([node("Gather", ["x", "i"], ["y"], axis=axis)], {"x": xg1}, ["y"],
                        consts={"i": ind}, opset=opset)
            shp = [d.dim_value for d in ref.graph.output[0].type.tensor_type.shape.dim]
            out.append(("gather_dyn_v%d_%s" % (opset, tag), _declare(m, "y", shp), {"x": xg1}))
    # Upsample-7 (scales an attribute, opsets 7 and 8), Upsample-9 and Resize-10 with
    # X's dims hidden, nearest and linear, integer and non-integer scales: the probe's
    # identity of the run-time size from a run-time iota at every opset
    xu7 = rand(2, 3, 4, 5)
    for op, opset in (("Upsample", 7), ("Upsample", 8), ("Upsample", 9), ("Resize", 10)):
        for mode in ("nearest", "linear"):
            for kind, sc in (("int", [1.0, 1.0, 2.0, 3.0]), ("frac", [1.0, 1.0, 1.5, 2.5])):
                if (op, opset, mode, kind) in (("Upsample", 9, "nearest", "frac"),
                                               ("Upsample", 9, "linear", "frac")):
                    continue  # in the list above
                ins, kw = (["xr"], dict(mode=mode, scales=sc)) if opset < 9 else \
                    (["xr", "sc"], dict(mode=mode))
                m = model(_dyn_spatial(xu7.shape) + [node(op, ins, ["p"], **kw),
                                                     node("Tanh", ["p"], ["y"])],
                          {"x": xu7}, ["y"], opset=opset)
                if opset >= 9:  # a Constant node: the scales are no weight to check
                    m.graph.node.insert(0, helper.make_node(
                        "Constant", [], ["sc"],
                        value=helper.make_tensor("sc", TensorProto.FLOAT, [4], sc)))
                shp = [int(np.floor(d * f)) for d, f in zip(xu7.shape, sc)]
                out.append(("%s_dyn_v%d_%s_%s" % (op.lower(), opset, mode, kind),
                            _declare(m, "y", shp), {"x": xu7}))
    # Resize given both scales and sizes, neither's length known statically (reshaped by a
    # computed [-1]): the one that is empty is told at run time, so the probe masks both
    # to their run-time length (scales used, then sizes used; opsets 11 and 13)
    for tag, scb, szb in (("scales", np.array([1, 1, 1.5, 2], np.float32), np.zeros(0, I64)),
                          ("sizes", np.zeros(0, np.float32), np.array([2, 3, 7, 3], I64))):
        for opset in (11, 13):
            nodes = _dyn_spatial(xu7.shape) + [
                node("Shape", ["xr"], ["sxr"]), node("Slice", ["sxr", "zero1", "one1"], ["s0"]),
                node("Sub", ["s0", "s0"], ["z0"]), node("Sub", ["z0", "one1"], ["m1"]),
                node("Reshape", ["scb", "m1"], ["sc"]), node("Reshape", ["szb", "m1"], ["sz"]),
                node("Resize", ["xr", "roi", "sc", "sz"], ["p"], mode="linear"),
                node("Tanh", ["p"], ["y"])]
            m = model(nodes, {"x": xu7}, ["y"], opset=opset,
                      consts={"scb": scb, "szb": szb, "roi": np.zeros(0, np.float32),
                              "zero1": np.array([0], I64), "one1": np.array([1], I64)})
            shp = [2, 3, 6, 10] if tag == "scales" else [2, 3, 7, 3]
            out.append(("resize_dyn_either_%s_v%d" % (tag, opset), _declare(m, "y", shp),
                        {"x": xu7}))
    # Tile with repeats computed at run time (below opset 16: dY reshaped to the interleaved
    # [r_i, d_i] shape and summed, no ScatterElements add) and Slice-10 with ends computed
    # at run time at opset 10 (the index grid from the iota of NonZero, Scatter back)
    xt = rand(2, 3, 2)
    for opset in (7, 13):
        m = model(_dyn_spatial(xt.shape) + [
            node("Sub", ["sx", "sx"], ["z"]), node("Add", ["z", "r0"], ["rep"]),
            node("Tile", ["xr", "rep"], ["p"]), node("Tanh", ["p"], ["y"])],
            {"x": xt}, ["y"], consts={"r0": np.array([2, 1, 3], I64)}, opset=opset)
        out.append(("tile_dyn_runtime_repeats_v%d" % opset, _declare(m, "y", [4, 3, 6]),
                    {"x": xt}))
    xs10 = rand(3, 5, 4)
    m = model(_dyn_spatial(xs10.shape) + [
        node("Slice", ["sx", "one1", "two1"], ["d1"]), node("Sub", ["d1", "two1"], ["e1"]),
        node("Concat", ["e1", "m1"], ["ends"], axis=0),
        node("Slice", ["xr", "starts", "ends", "axes"], ["p"]), node("Tanh", ["p"], ["y"])],
        {"x": xs10}, ["y"], opset=10,
        consts={"one1": np.array([1], I64), "two1": np.array([2], I64),
                "m1": np.array([-1], I64), "starts": np.array([1, 0], I64),
                "axes": np.array([1, 2], I64)})
    out.append(("slice10_dyn_runtime_ends_v10", _declare(m, "y", [3, 2, 3]), {"x": xs10}))
    # ReduceLogSum at opset 7 (dY broadcast by an Add onto zeros of X's shape, no Expand)
    xl = rand(2, 3, 4, low=0.5, high=2.0)
    for tag, kw, shp in (("ax1", dict(axes=[1], keepdims=0), [2, 4]),
                         ("all", dict(keepdims=1), [1, 1, 1])):
        m = model(_dyn_spatial(xl.shape) + [node("ReduceLogSum", ["xr"], ["y"], **kw)],
                  {"x": xl}, ["y"], opset=7)
        out.append(("reducelogsum_dyn_v7_" + tag, _declare(m, "y", shp), {"x": xl}))
    # GlobalAveragePool at opset 7 with X's dims hidden: dY broadcast onto X's run-time
    # shape by an Add (no Expand before 8)
    xa7 = rand(2, 3, 4, 5)
    m = model(_dyn_spatial(xa7.shape) + [node("GlobalAveragePool", ["xr"], ["p"]),
                                         node("Tanh", ["p"], ["y"])], {"x": xa7}, ["y"], opset=7)
    out.append(("globalavgpool_dyn_v7", _declare(m, "y", [2, 3, 1, 1]), {"x": xa7}))
    return out


_base_cases = cases


def sequence_cases():
    """Sequences receiving whole gradients from several consumers, with items of different
    shapes or of shapes known only at run time (they were added only for items of one
    static shape): summed item by item over the length the graph fixes, stacked when the
    items have one shape at run time, and item by item in a Loop over a length known at
    run time only."""
    out = []
    c = {"p0": np.array(0, I64), "pm1": np.array(-1, I64), "s12": np.array([1, 2], I64)}

    def used(nodes):  # the constants the nodes read (no unused initializers)
        return {k: v for k, v in c.items() if any(k in nd.input for nd in nodes)}

    def declare(m, outs):
        del m.graph.output[:]
        for name, shape in outs:
            m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return m

    x, w = rand(2, 3), rand(1, 3)
    for opset in (11, 13):
        # items [2, 3] and [1, 3]: concatenated (a whole gradient) and erased (another)
        m = model(nodes := [node("SequenceConstruct", ["x", "w"], ["S"]),
                   node("ConcatFromSequence", ["S"], ["c"], axis=0),
                   node("SequenceErase", ["S", "p0"], ["S1"]),
                   node("SequenceAt", ["S1", "p0"], ["a"]),
                   node("Mul", ["c", "c"], ["y"]), node("Sin", ["a"], ["z"])],
                  {"x": x, "w": w}, ["y", "z"], consts=used(nodes), opset=opset)
        out.append(("seq_whole_differing_v%d" % opset, declare(m, [("y", [3, 3]), ("z", [1, 3])]),
                    {"x": x, "w": w}))
    # items of one shape known only at run time: concatenated along axis 1 and stacked
    x = rand(2, 3, 2)
    m = model(nodes := _dyn_spatial(x.shape) + [node("Sin", ["xr"], ["t"]),
                                       node("SequenceConstruct", ["xr", "t"], ["S"]),
                                       node("ConcatFromSequence", ["S"], ["c"], axis=1),
                                       node("ConcatFromSequence", ["S"], ["d"], axis=0, new_axis=1),
                                       node("Mul", ["c", "c"], ["y"]), node("Cos", ["d"], ["z"])],
              {"x": x}, ["y", "z"], consts=used(nodes), opset=13)
    out.append(("seq_whole_runtime_stack", declare(m, [("y", [2, 6, 2]), ("z", [2, 2, 3, 2])]),
                {"x": x}))
    # split by [1, 2] of a run-time-shaped tensor: items [1, 3, 2] and [2, 3, 2], concatenated
    # and erased, the rest read; and inserted into (a third whole gradient)
    m = model(nodes := _dyn_spatial(x.shape) + [node("Sin", ["xr"], ["t"]),
                                       node("SplitToSequence", ["xr", "s12"], ["S"], axis=1),
                                       node("ConcatFromSequence", ["S"], ["c"], axis=1),
                                       node("SequenceErase", ["S", "pm1"], ["S1"]),
                                       node("SequenceAt", ["S1", "p0"], ["a"]),
                                       node("SequenceInsert", ["S", "t", "p0"], ["S2"]),
                                       node("SequenceAt", ["S2", "pm1"], ["b"]),
                                       node("Mul", ["c", "c"], ["y"]), node("Sin", ["a"], ["z"]),
                                       node("Tanh", ["b"], ["u"])],
              {"x": x}, ["y", "z", "u"], consts=used(nodes), opset=13)
    out.append(("seq_whole_runtime_split",
                declare(m, [("y", [2, 3, 2]), ("z", [2, 1, 2]), ("u", [2, 2, 2])]), {"x": x}))
    # split along an axis of run-time size, no split (parts of one shape, [2, 1, 2]):
    # concatenated and stacked (two whole gradients, added stacked)
    for opset in (11, 13):
        m = model(nodes := _dyn_spatial(x.shape) + [
            node("SplitToSequence", ["xr"], ["S"], axis=1),
            node("ConcatFromSequence", ["S"], ["c"], axis=1),
            node("ConcatFromSequence", ["S"], ["d"], axis=0, new_axis=1),
            node("Mul", ["c", "c"], ["y"]), node("Cos", ["d"], ["z"])],
            {"x": x}, ["y", "z"], consts=used(nodes), opset=opset)
        out.append(("seq_whole_runtime_parts_v%d" % opset,
                    declare(m, [("y", [2, 3, 2]), ("z", [3, 2, 1, 2])]), {"x": x}))
    # split into chunks of 2 along an axis of run-time size 5 (items [2, 2, 2] twice and
    # [2, 1, 2]; the length known at run time only): concatenated, erased and concatenated
    # again (two whole gradients, added item by item in a Loop), the last read
    x5 = rand(2, 5, 2)
    c["two"] = np.array(2, I64)
    for opset in (13, 16):
        m = model(nodes := _dyn_spatial(x5.shape) + [
            node("SplitToSequence", ["xr", "two"], ["S"], axis=1),
            node("ConcatFromSequence", ["S"], ["c"], axis=1),
            node("SequenceErase", ["S", "p0"], ["S1"]),
            node("ConcatFromSequence", ["S1"], ["d"], axis=1),
            node("SequenceAt", ["S", "pm1"], ["a"]),
            node("Mul", ["c", "c"], ["y"]), node("Sin", ["d"], ["z"]),
            node("Tanh", ["a"], ["u"])],
            {"x": x5}, ["y", "z", "u"], consts=used(nodes), opset=opset)
        out.append(("seq_whole_runtime_chunks_v%d" % opset,
                    declare(m, [("y", [2, 5, 2]), ("z", [2, 3, 2]), ("u", [2, 1, 2])]),
                    {"x": x5}))
    return out


def cases():  # noqa: F811
    return _base_cases() + conv_cases() + static_free_cases() + sequence_cases()
