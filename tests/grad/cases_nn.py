"""Gradient cases of the nn rules: Conv and ConvTranspose (1-D/2-D/3-D, strides, pads,
dilations, groups, auto_pad, output_padding/output_shape), global and windowed pooling
(each scatter form of MaxPool by opset, AveragePool divisors), Batch/Instance/Layer
normalization (inference and training statistics, statistics outputs), and a small
ResNet-style block with a dynamic batch."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from helpers import RNG, model, node, rand


def distinct(*shape):
    """values in (-1, 1) at least ~1/size apart: no ties for max pooling"""
    n = int(np.prod(shape))
    v = (RNG.permutation(n) + 0.5) / n * 2 - 1
    return v.reshape(shape).astype(np.float32)


def one(name, op, x, weights, opset, outputs=("y",), shapes=None, graph_outputs=None, **attrs):
    """a one-node model: input x, weights as initializers (trained); shapes: output shapes
    for where ONNX shape inference gives none"""
    ins = ["x"] + list(weights)
    m = model([node(op, ins, list(outputs), **attrs)], {"x": x},
              list(graph_outputs or outputs), dict(weights), opset=opset)
    for o in m.graph.output:
        if shapes and o.name in shapes and not o.type.tensor_type.HasField("shape"):
            o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, shapes[o.name]))
    return (name, m, {"x": x})


def conv_cases():
    out = []
    # (name, opset, x shape, w shape, bias, attrs)
    specs = [
        ("conv1d", 13, (2, 3, 7), (4, 3, 3), True, {}),
        ("conv1d_s2_p12_d2", 11, (2, 2, 9), (3, 2, 3), True,
         dict(strides=[2], pads=[1, 2], dilations=[2])),
        ("conv1d_group2", 13, (2, 4, 8), (6, 2, 3), True, dict(group=2, strides=[2], pads=[1, 0])),
        ("conv2d_v7", 7, (1, 2, 5, 5), (3, 2, 3, 3), False, {}),
        ("conv2d_s2_p1", 13, (2, 3, 7, 7), (4, 3, 3, 3), True, dict(strides=[2, 2], pads=[1] * 4)),
        ("conv2d_s2_p1_rem", 13, (2, 3, 6, 6), (4, 3, 3, 3), True,
         dict(strides=[2, 2], pads=[1] * 4)),
        ("conv2d_s21_d12_asym", 11, (1, 2, 6, 7), (2, 2, 2, 3), True,
         dict(strides=[2, 1], dilations=[1, 2], pads=[0, 1, 1, 0])),
        ("conv2d_s3_bigpad", 13, (1, 2, 5, 5), (2, 2, 2, 2), False,
         dict(strides=[3, 3], pads=[2, 0, 3, 2])),
        ("conv2d_1x1_s2", 13, (2, 3, 5, 5), (4, 3, 1, 1), False, dict(strides=[2, 2])),
        ("conv2d_group2", 13, (2, 4, 5, 5), (6, 2, 3, 3), True,
         dict(group=2, strides=[2, 2], pads=[1] * 4)),
        ("conv2d_group2_d2", 11, (1, 4, 6, 6), (4, 2, 2, 2), False,
         dict(group=2, dilations=[2, 2], pads=[1, 0, 0, 1])),
        ("conv2d_depthwise", 13, (2, 3, 5, 5), (3, 1, 3, 3), True, dict(group=3, pads=[1] * 4)),
        ("conv2d_same_upper_s2", 13, (1, 2, 6, 5), (2, 2, 3, 3), True,
         dict(auto_pad="SAME_UPPER", strides=[2, 2])),
        ("conv2d_same_lower", 11, (1, 2, 5, 6), (2, 2, 2, 3), False, dict(auto_pad="SAME_LOWER")),
        ("conv2d_valid_s2", 13, (1, 2, 6, 6), (2, 2, 3, 3), False,
         dict(auto_pad="VALID", strides=[2, 2])),
        # many kernel taps; strided at opset 9 (Slice without steps)
        ("conv3d_k75", 13, (1, 2, 6, 6, 4), (2, 2, 5, 5, 3), False,
         dict(strides=[1, 2, 1], pads=[1, 0, 1, 0, 2, 1])),
        ("conv2d_s2_p1_v9", 9, (2, 2, 6, 5), (3, 2, 3, 3), False,
         dict(strides=[2, 2], pads=[1] * 4)),
        ("conv3d", 13, (1, 2, 4, 5, 3), (2, 2, 2, 3, 2), True,
         dict(strides=[1, 2, 1], pads=[1, 1, 0, 0, 1, 1])),
    ]
    for name, opset, xs, ws, bias, attrs in specs:
        x, w = rand(*xs), rand(*ws)
        weights = {"w": w}
        if bias:
            weights["b"] = rand(ws[0])
        out.append(one(name, "Conv", x, weights, opset, **attrs))
    # ConvTranspose: (name, opset, x shape, w shape [C, M/group, k...], bias, attrs)
    specs = [
        ("convt1d", 13, (2, 3, 4), (3, 2, 3), True, {}),
        ("convt1d_group2", 13, (1, 4, 3), (4, 1, 2), True, dict(group=2, strides=[2])),
        ("convt2d_s2_p1_op1", 13, (1, 2, 3, 3), (2, 3, 3, 3), True,
         dict(strides=[2, 2], pads=[1] * 4, output_padding=[1, 1])),
        ("convt2d_d21", 11, (2, 2, 3, 4), (2, 2, 2, 3), False,
         dict(dilations=[2, 1], pads=[1, 0, 0, 1])),
        ("convt2d_group2", 13, (1, 4, 3, 3), (4, 1, 3, 3), True, dict(group=2, strides=[2, 1])),
        ("convt2d_output_shape", 11, (1, 2, 3, 3), (2, 2, 3, 3), False,
         dict(strides=[2, 2], output_shape=[6, 6])),
        ("convt2d_output_shape_v7", 7, (1, 2, 3, 3), (2, 2, 3, 3), False,
         dict(strides=[2, 2], output_shape=[6, 6])),
        ("convt2d_output_shape_beyond", 11, (1, 2, 3, 3), (2, 2, 3, 3), True,
         dict(strides=[2, 2], output_shape=[9, 8])),
        ("convt2d_output_shape_beyond_v7", 7, (1, 2, 3, 3), (2, 2, 3, 3), False,
         dict(strides=[2, 2], output_shape=[10, 8])),
        ("convt2d_same_upper", 13, (1, 2, 3, 3), (2, 2, 3, 3), True,
         dict(strides=[2, 2], auto_pad="SAME_UPPER")),
        ("convt2d_op_big", 13, (1, 2, 3, 3), (2, 2, 2, 2), False,
         dict(strides=[3, 3], output_padding=[2, 1])),
        ("convt3d", 13, (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), False, dict(strides=[2, 1, 1])),
    ]
    for name, opset, xs, ws, bias, attrs in specs:
        x, w = rand(*xs), rand(*ws)
        weights = {"w": w}
        if bias:
            weights["b"] = rand(ws[1] * attrs.get("group", 1))
        out.append(one(name, "ConvTranspose", x, weights, opset, **attrs))
    return out


def pool_cases():
    out = []
    for opset, xs in ((7, (2, 3, 4, 5)), (13, (2, 3, 6))):
        x = rand(*xs)
        out.append(one("gap_v%d_%dd" % (opset, len(xs) - 2), "GlobalAveragePool", x, {}, opset))
        xd = distinct(*xs)
        out.append(one("gmp_v%d_%dd" % (opset, len(xs) - 2), "GlobalMaxPool", xd, {}, opset))
    # MaxPool: (name, opset, x shape, attrs)
    specs = [
        ("maxpool_k2s2_v9", 9, (2, 2, 4, 6), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("maxpool_k2s2_v11", 11, (2, 2, 4, 6), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("maxpool_k3s2p1_v10", 10, (2, 2, 7, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)),
        ("maxpool_k3s2p1_v13", 13, (2, 2, 7, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)),
        ("maxpool_k3s2p1_v17", 17, (2, 2, 7, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)),
        ("maxpool_k3s1_v13", 13, (1, 2, 5, 5), dict(kernel_shape=[3, 3])),
        ("maxpool_d2_v11", 11, (1, 2, 7, 7),
         dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 0, 1])),
        ("maxpool_ceil_v12", 12, (1, 2, 6, 7),
         dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)),
        ("maxpool_same_upper_v13", 13, (1, 2, 5, 5),
         dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
        ("maxpool_1d_v13", 13, (2, 3, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
        ("maxpool_1d_v18", 18, (2, 3, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
        ("maxpool_3d_v13", 13, (1, 1, 4, 4, 4), dict(kernel_shape=[2, 2, 2], strides=[1, 2, 2])),
    ]
    for name, opset, xs, attrs in specs:
        out.append(one(name, "MaxPool", distinct(*xs), {}, opset, **attrs))
    # the forward node's own Indices (row-major, and column-major which is not reused)
    for order in (0, 1):
        x = distinct(1, 2, 5, 6)
        out.append(one("maxpool_indices_order%d" % order, "MaxPool", x, {}, 13, ("y", "i"),
                       graph_outputs=["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, storage_order=order))
    # MaxPool before opset 9 (no Scatter): window taps, from the Indices output at opset 8
    # and from the values at opset 7; overlapping windows, pads, remainders, 1-D and 3-D
    specs = [
        ("maxpool_k2s2_v7", 7, (2, 2, 4, 6), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("maxpool_k2s2_v8", 8, (2, 2, 4, 6), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("maxpool_k2s2_rem_v7", 7, (1, 2, 5, 7), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("maxpool_k3s2p1_v7", 7, (2, 2, 7, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)),
        ("maxpool_k3s2p1_v8", 8, (2, 2, 7, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)),
        ("maxpool_k3s1_v7", 7, (1, 2, 5, 5), dict(kernel_shape=[3, 3])),
        ("maxpool_k3s1_v8", 8, (1, 2, 5, 5), dict(kernel_shape=[3, 3])),
        ("maxpool_k32s21_asym_v7", 7, (1, 2, 6, 7),
         dict(kernel_shape=[3, 2], strides=[2, 1], pads=[2, 0, 1, 1])),
        ("maxpool_k32s21_asym_v8", 8, (1, 2, 6, 7),
         dict(kernel_shape=[3, 2], strides=[2, 1], pads=[2, 0, 1, 1])),
        ("maxpool_same_upper_v7", 7, (1, 2, 5, 5),
         dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
        ("maxpool_same_lower_v8", 8, (1, 2, 5, 6),
         dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
        ("maxpool_1d_v7", 7, (2, 3, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
        ("maxpool_1d_v8", 8, (2, 3, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
        ("maxpool_3d_v7", 7, (1, 1, 4, 4, 4), dict(kernel_shape=[2, 2, 2], strides=[1, 2, 2])),
        ("maxpool_3d_v8", 8, (1, 1, 4, 5, 4),
         dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2], pads=[0, 1, 0, 1, 1, 0])),
    ]
    for name, opset, xs, attrs in specs:
        out.append(one(name, "MaxPool", distinct(*xs), {}, opset, **attrs))
    for order in (0, 1):
        x = distinct(1, 2, 5, 6)
        out.append(one("maxpool_indices_order%d_v8" % order, "MaxPool", x, {}, 8, ("y", "i"),
                       graph_outputs=["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4,
                       storage_order=order))
    # a symbolic batch at opset 7 and 8 (planes reshaped with -1)
    for opset in (7, 8):
        x = distinct(2, 2, 6, 5)
        name, m, inputs = one("maxpool_dynbatch_v%d" % opset, "MaxPool", x, {}, opset,
                              kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
        del m.graph.value_info[:]
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
        m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "n"
        out.append((name, m, inputs))
    # AveragePool
    specs = [
        ("avgpool_k2s2_v8", 8, (2, 2, 4, 6), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("avgpool_k3s2p1_v7", 7, (1, 2, 5, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 1])),
        ("avgpool_k3s2p1_cip_v7", 7, (1, 2, 5, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, count_include_pad=1)),
        ("avgpool_k3s1p1_v11", 11, (1, 2, 5, 5), dict(kernel_shape=[3, 3], pads=[1] * 4)),
        ("avgpool_k3s1p1_cip_v11", 11, (1, 2, 5, 5),
         dict(kernel_shape=[3, 3], pads=[1] * 4, count_include_pad=1)),
        ("avgpool_k3s2p1_v13", 13, (2, 2, 7, 6),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 1])),
        ("avgpool_ceil_v10", 10, (1, 2, 6, 7),
         dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)),
        ("avgpool_ceil_cip_v11", 11, (1, 2, 6, 7),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, ceil_mode=1, count_include_pad=1)),
        ("avgpool_same_lower_v13", 13, (1, 2, 5, 6),
         dict(kernel_shape=[2, 3], auto_pad="SAME_LOWER", strides=[2, 2])),
        ("avgpool_1d_tail_v13", 13, (2, 3, 8), dict(kernel_shape=[3], strides=[3])),
        ("avgpool_d2_v19", 19, (1, 2, 7, 7),
         dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 0, 0])),
        ("avgpool_3d_v13", 13, (1, 1, 4, 4, 3), dict(kernel_shape=[2, 2, 2], pads=[1] * 6)),
    ]
    for name, opset, xs, attrs in specs:
        out.append(one(name, "AveragePool", rand(*xs), {}, opset, **attrs))
    return out


def norm_cases():
    out = []

    def bn_w(c, shape=None):
        shape = shape or (c,)
        return {"scale": rand(*shape, low=0.5, high=1.5), "b": rand(*shape),
                "mean": rand(*shape), "var": rand(*shape, low=0.5, high=1.5)}

    # inference: every parameter, mean and var included, is differentiated
    for opset, xs in ((9, (2, 3, 4, 4)), (15, (3, 2, 5)), (14, (4, 3))):
        out.append(one("bn_infer_v%d_%dd" % (opset, len(xs)), "BatchNormalization",
                       rand(*xs, low=-2, high=2), bn_w(xs[1]), opset, epsilon=1e-3))
    out.append(one("bn_infer_v7_per_activation", "BatchNormalization", rand(3, 2, 3),
                   bn_w(2, (2, 3)), 7, spatial=0))
    # training: batch statistics
    for xs in ((3, 2, 4, 3), (4, 3)):
        out.append(one("bn_train_v15_%dd" % len(xs), "BatchNormalization", rand(*xs, high=2),
                       bn_w(xs[1]), 15, ("y", "rm", "rv"), {"y": xs}, ["y"],
                       training_mode=1))
    out.append(one("bn_train_v15_running_out", "BatchNormalization", rand(3, 2, 4, high=2),
                   bn_w(2), 15, ("y", "rm", "rv"), {"y": (3, 2, 4), "rm": (2,), "rv": (2,)},
                   training_mode=1, momentum=0.7))
    out.append(one("bn_train_v9_stats_out", "BatchNormalization", rand(3, 2, 4, high=2),
                   bn_w(2), 9, ("y", "rm", "rv", "sm", "sv"),
                   {"y": (3, 2, 4), "rm": (2,), "rv": (2,), "sm": (2,), "sv": (2,)}, momentum=0.8))
    # InstanceNormalization
    for opset, xs in ((11, (2, 3, 4, 3)), (17, (2, 2, 6))):
        out.append(one("instnorm_v%d_%dd" % (opset, len(xs)), "InstanceNormalization",
                       rand(*xs, high=2), {"scale": rand(xs[1], low=0.5, high=1.5),
                                           "b": rand(xs[1])}, opset, epsilon=1e-3))
    # LayerNormalization
    x = rand(3, 4, 5, high=2)
    out.append(one("layernorm_last", "LayerNormalization", x,
                   {"scale": rand(5, low=0.5), "b": rand(5)}, 17))
    out.append(one("layernorm_axis1", "LayerNormalization", x,
                   {"scale": rand(4, 5, low=0.5), "b": rand(4, 5)}, 17, axis=1, epsilon=1e-3))
    out.append(one("layernorm_bcast_scale", "LayerNormalization", x,
                   {"scale": rand(5, low=0.5), "b": rand(1, 5)}, 17, axis=-2))
    # Mean and InvStdDev as graph outputs too once the float64 copy (src/api/convert.c)
    # widens stash_type (checked by hand with that change); until then they are computed
    # but not selected
    c = one("layernorm_no_bias_stats", "LayerNormalization", x, {"scale": rand(5, low=0.5)}, 17,
            ("y", "mean", "istd"), graph_outputs=["y"], axis=-1)
    c[1].graph.ClearField("value_info")  # float32 statistics: not declared, not widened
    out.append(c)
    return out


def layernorm_stats_cases():
    """LayerNormalization whose Mean and InvStdDev feed other nodes (the rule reads them; with
    stash_type given, the float64 copy widens it, so finite differences see float64
    statistics), and with only some of them present (the rule adds the others to the
    training graph's node)"""
    rng = np.random.default_rng(17)  # its own generator: the cases after keep their data

    def r(*shape, low=-1.0, high=1.0):
        return rng.uniform(low, high, shape).astype(np.float32)

    out = []
    x = r(3, 4, 5, high=2)
    w = {"scale": r(5, low=0.5), "b": r(5)}
    nodes = [node("LayerNormalization", ["x", "scale", "b"], ["y", "mean", "istd"], stash_type=1),
             node("Mul", ["y", "istd"], ["t"]), node("Add", ["t", "mean"], ["z"])]
    out.append(("layernorm_stats_consumed", model(nodes, {"x": x}, ["z"], w), {"x": x}))
    w = {"scale": r(4, 5, low=0.5)}
    nodes = [node("LayerNormalization", ["x", "scale"], ["y", "mean"], axis=1, stash_type=1),
             node("Sub", ["y", "mean"], ["z"])]
    out.append(("layernorm_axis1_mean_only", model(nodes, {"x": x}, ["z"], w), {"x": x}))
    w = {"scale": r(5, low=0.5), "b": r(1, 5)}
    nodes = [node("LayerNormalization", ["x", "scale", "b"], ["y", "", "istd"], epsilon=1e-3,
                  stash_type=1),
             node("Mul", ["y", "istd"], ["z"])]
    out.append(("layernorm_istd_only", model(nodes, {"x": x}, ["z"], w), {"x": x}))
    return out


def resnet_block():
    """Conv-BN-Relu-MaxPool-Conv(+skip)-GAP-Gemm at opset 13 with a symbolic batch"""
    x = rand(2, 3, 9, 9)
    w = {"w1": rand(4, 3, 3, 3) * 0.5, "s1": rand(4, low=0.5, high=1.5), "b1": rand(4),
         "m1": rand(4), "v1": rand(4, low=0.5, high=1.5), "w2": rand(4, 4, 3, 3) * 0.5,
         "w3": rand(4, 4, 1, 1), "fc": rand(3, 4), "fcb": rand(3)}
    nodes = [
        node("Conv", ["x", "w1"], ["c1"], strides=[2, 2], pads=[1] * 4),
        node("BatchNormalization", ["c1", "s1", "b1", "m1", "v1"], ["n1"]),
        node("Relu", ["n1"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[1, 1], pads=[1] * 4),
        node("Conv", ["p1", "w2"], ["c2"], pads=[1] * 4),
        node("Conv", ["p1", "w3"], ["c3"]),
        node("Add", ["c2", "c3"], ["a"]),
        node("GlobalAveragePool", ["a"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 9, 9])
    yo = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    g = helper.make_graph(nodes, "g", [xi], [yo],
                          [numpy_helper.from_array(v, k) for k, v in w.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return ("resnet_block_dynamic_batch", onnx.shape_inference.infer_shapes(m), {"x": x})


def cases():
    return conv_cases() + pool_cases() + norm_cases() + layernorm_stats_cases() + [resnet_block()]
