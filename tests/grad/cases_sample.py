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
    return out + col2im_cases() + grid_cases() + roi_cases()


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


def grid_cases():
    out = []

    def add(name, opset, x, grid, attrs, torch=None, weights=None):
        nodes = [node("GridSample", ["x", "g"], ["y"], **attrs)]
        m = model(nodes, {"x": x, "g": grid}, ["y"], weights, opset=opset)
        out.append((name, m, {"x": x, "g": grid}) + ((torch,) if torch else ()))

    x = rand(2, 3, 4, 5)
    grid = rand(2, 3, 4, 2, low=-1.3, high=1.3)
    for opset in (16, 20):
        v20 = opset >= 20
        for mode in (("linear", "nearest", "cubic") if v20 else ("bilinear", "nearest", "bicubic")):
            tmode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
            for pad in ("zeros", "border", "reflection"):
                for ac in (0, 1):
                    add("gridsample_%s_%s_ac%d_v%d" % (mode, pad, ac, opset), opset, x, grid,
                        {"mode": mode, "padding_mode": pad, "align_corners": ac},
                        {"fn": "grid_sample", "kw": {"mode": tmode, "padding": pad, "ac": ac}})
    # 3-D (version 20): trilinear and nearest; a 1-D and a 4-D sample (no PyTorch peer)
    x3, g3 = rand(1, 2, 3, 4, 3), rand(1, 2, 3, 2, 3, low=-1.2, high=1.2)
    for mode, pad in (("linear", "zeros"), ("linear", "reflection"), ("nearest", "border"),
                      ("cubic", "border")):
        add("gridsample_3d_%s_%s" % (mode, pad), 20, x3, g3,
            {"mode": mode, "padding_mode": pad, "align_corners": 0},
            None if mode == "cubic" else {"fn": "grid_sample",
                                          "kw": {"mode": "bilinear" if mode == "linear" else mode,
                                                 "padding": pad, "ac": 0}})
    add("gridsample_1d_cubic_reflection", 20, rand(2, 2, 6), rand(2, 5, 1, low=-1.5, high=1.5),
        {"mode": "cubic", "padding_mode": "reflection", "align_corners": 1})
    # a unit axis with align_corners (reflection between equal borders)
    add("gridsample_unit_axis_reflection", 20, rand(1, 2, 1, 4), rand(1, 2, 3, 2),
        {"padding_mode": "reflection", "align_corners": 1})

    # AffineGrid, and AffineGrid into GridSample (a spatial transformer)
    for tag, theta, size in (("2d", rand(2, 2, 3), [2, 3, 4, 5]), ("3d", rand(1, 3, 4), [1, 2, 2, 3, 4])):
        for ac in (0, 1):
            m = model([node("AffineGrid", ["t", "s"], ["y"], align_corners=ac)], {"t": theta}, ["y"],
                      opset=20, consts={"s": np.array(size, np.int64)})
            out.append(("affinegrid_%s_ac%d" % (tag, ac), m, {"t": theta},
                        {"fn": "affine_grid", "kw": {"size": size, "ac": ac}}))
    theta, x = rand(2, 2, 3), rand(2, 3, 4, 5)
    m = model([node("AffineGrid", ["t", "s"], ["g"]), node("GridSample", ["x", "g"], ["y"])],
              {"x": x, "t": theta}, ["y"], opset=20, consts={"s": np.array([2, 3, 3, 4], np.int64)})
    out.append(("affinegrid_gridsample", m, {"x": x, "t": theta}))
    return out


def roi_cases():
    out = []
    x = rand(2, 3, 6, 7)
    rois = np.array([[0.5, 1.0, 4.2, 5.1], [1.3, 0.2, 6.5, 3.3], [-1.0, 2.0, 3.0, 7.5],
                     [2.0, 2.5, 2.4, 3.1]], np.float32)
    bi = np.array([0, 1, 1, 0], np.int64)
    for opset, tag, attrs in (
            (10, "avg_adaptive", {"output_height": 3, "output_width": 2}),
            (16, "avg_adaptive_half_pixel", {"output_height": 3, "output_width": 2}),
            (16, "avg_sr2_scale", {"output_height": 2, "output_width": 3, "sampling_ratio": 2,
                                   "spatial_scale": 0.5}),
            (16, "avg_output_half_pixel", {"output_height": 2, "output_width": 2,
                                           "coordinate_transformation_mode": "output_half_pixel"}),
            (16, "max_sr2", {"output_height": 2, "output_width": 2, "mode": "max",
                             "sampling_ratio": 2}),
            (16, "max_adaptive", {"output_height": 2, "output_width": 3, "mode": "max"})):
        r = rois * 2 if attrs.get("spatial_scale") else rois
        m = model([node("RoiAlign", ["x", "r", "b"], ["y"], **attrs)], {"x": x}, ["y"], opset=opset,
                  consts={"b": bi})
        # rois as a Constant node: not a weight (no gradient flows to them)
        m.graph.node.insert(0, helper.make_node("Constant", [], ["r"], value=helper.make_tensor(
            "r", TensorProto.FLOAT, r.shape, r.flatten().tolist())))
        torch = None
        if attrs.get("mode", "avg") == "avg":
            aligned = opset >= 16 and attrs.get("coordinate_transformation_mode") != "output_half_pixel"
            torch = {"fn": "roi_align", "kw": {"rois": r.tolist(), "bi": bi.tolist(),
                                               "out": [attrs["output_height"], attrs["output_width"]],
                                               "scale": attrs.get("spatial_scale", 1.0),
                                               "sr": attrs.get("sampling_ratio", 0),
                                               "aligned": aligned}}
        out.append(("roialign_" + tag, m, {"x": x}) + ((torch,) if torch else ()))
    return out
