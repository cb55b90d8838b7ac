"""Gradient cases of the pooling and sampling rules of issue 12: LpPool (p 1, 2, 3, pads,
strides, dilations, ceil_mode, auto_pad, 1-D to 3-D), MaxUnpool (with and without
output_shape, 1-D and 2-D), Col2Im, GridSample (every mode, padding mode and
align_corners, 2-D and 3-D), AffineGrid and RoiAlign.  Cases with a fourth element are
also compared with PyTorch's autograd (tests/grad/torch_ops.py)."""
import numpy as np
from onnx import TensorProto, helper

from helpers import RNG, model, node, rand


def cases():
    out = []

    def add(name, nodes, inputs, outputs, weights=None, opset=17, consts=None, torch=None,
            shape=None):
        m = model(nodes, inputs, outputs, weights, opset, consts)
        for o in m.graph.output:  # where ONNX infers no type: float, the given shape
            if not o.type.tensor_type.HasField("shape"):
                o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, shape))
        out.append((name, m, inputs) + ((torch,) if torch else ()))

    # LpPool
    x = rand(2, 3, 5, 6)
    for opset, tag, attrs in (
            (11, "k2_p2", {"kernel_shape": [2, 2], "strides": [2, 2]}),
            (11, "k3_s2_pads_p1", {"kernel_shape": [3, 3], "strides": [2, 2],
                                   "pads": [1, 0, 1, 2], "p": 1}),
            (7, "k2_p3", {"kernel_shape": [2, 2], "p": 3}),
            (11, "same_lower", {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
            (18, "dil_ceil", {"kernel_shape": [2, 2], "dilations": [2, 1], "strides": [2, 2],
                              "ceil_mode": 1})):
        torch = None
        if attrs.get("p", 2) == 2 and "pads" not in attrs and "auto_pad" not in attrs and \
                "dilations" not in attrs:
            torch = {"fn": "lp_pool2d", "kw": {"p": 2, "kernel": attrs["kernel_shape"],
                                               "stride": attrs["strides"]}}
        add("lppool_%s_v%d" % (tag, opset), [node("LpPool", ["x"], ["y"], **attrs)], {"x": x},
            ["y"], opset=opset, torch=torch)
    add("lppool_1d_p2", [node("LpPool", ["x"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 1])],
        {"x": rand(2, 2, 7)}, ["y"], opset=18)
    add("lppool_3d", [node("LpPool", ["x"], ["y"], kernel_shape=[2, 2, 2])],
        {"x": rand(1, 2, 3, 3, 3)}, ["y"], opset=18)
    # a window of zeros (y = 0): its gradient is 0, not NaN
    xz = rand(1, 1, 4, 4)
    xz[0, 0, :2, :2] = 0
    add("lppool_zero_window", [node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        {"x": xz}, ["y"], opset=18)

    # MaxUnpool: the indices of a 2x2 stride-2 MaxPool over [2, 3, 4, 6]
    x = rand(2, 3, 2, 3)
    hh, ww = np.meshgrid(np.arange(2), np.arange(3), indexing="ij")
    pick = RNG.integers(0, 2, size=(6, 2, 3, 2))
    plane = (2 * hh + pick[..., 0]) * 6 + 2 * ww + pick[..., 1]
    ind = (np.arange(6)[:, None, None] * 24 + plane).reshape(2, 3, 2, 3).astype(np.int64)
    for opset in (9, 11):
        add("maxunpool_k2s2_v%d" % opset,
            [node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
            {"x": x}, ["y"], opset=opset, consts={"i": ind}, shape=[2, 3, 4, 6],
            torch={"fn": "max_unpool2d", "kw": {"kernel": [2, 2], "stride": [2, 2],
                                                 "cover": [4, 6], "indices": ind.tolist()}})
    add("maxunpool_output_shape",
        [node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        {"x": x}, ["y"], opset=11, consts={"i": ind, "s": np.array([2, 3, 5, 7], np.int64)},
        shape=[2, 3, 5, 7])
    add("maxunpool_1d_pads_weight",
        [node("MaxUnpool", ["w", "i"], ["u"], kernel_shape=[2], strides=[2], pads=[1, 1]),
         node("Mul", ["u", "x"], ["y"])],
        {"x": rand(1, 2, 4)}, ["y"], {"w": rand(1, 2, 3)}, opset=11,
        consts={"i": np.array([[[0, 2, 3], [4, 6, 7]]], np.int64)})
    return out + col2im_cases()


def col2im_cases():
    out = []

    def add(name, inputs, image, block, attrs, torch=True):
        nodes = [node("Col2Im", ["x", "im", "bl"], ["y"], **attrs)]
        m = model(nodes, inputs, ["y"], opset=18,
                  consts={"im": np.array(image, np.int64), "bl": np.array(block, np.int64)})
        spec = {"fn": "fold", "kw": {"image": image, "block": block,
                                     "stride": attrs.get("strides", [1] * len(image)),
                                     "dilation": attrs.get("dilations", [1] * len(image)),
                                     "pads": attrs.get("pads", [0] * 2 * len(image))}}
        out.append((name, m, inputs) + ((spec,) if torch else ()))

    def blocks(image, block, s, d, p):
        n = 1
        for i in range(len(image)):
            n *= (image[i] + p[i] + p[len(image) + i] - (block[i] - 1) * d[i] - 1) // s[i] + 1
        return n

    for tag, image, block, attrs in (("3x3", [5, 5], [3, 3], {}),
                                     ("strides", [5, 6], [2, 3], {"strides": [2, 3]}),
                                     ("dil_pads", [4, 5], [2, 2], {"dilations": [2, 1],
                                                                   "pads": [1, 0, 1, 2]}),
                                     ("1d", [7], [3], {"strides": [2]}),
                                     ("3d", [3, 3, 4], [2, 1, 2], {"pads": [0, 1, 1, 0, 0, 1]})):
        kvol = int(np.prod(block))
        L = blocks(image, block, attrs.get("strides", [1] * len(image)),
                   attrs.get("dilations", [1] * len(image)), attrs.get("pads", [0] * 2 * len(image)))
        # torch's fold is 2-D only
        add("col2im_" + tag, {"x": rand(2, 2 * kvol, L)}, image, block, attrs, len(image) == 2)
    return out
