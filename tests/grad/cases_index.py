"""Gradient cases of the indexing rules: Gather, GatherElements, GatherND, ScatterElements,
ScatterND, TopK, OneHot, Resize/Upsample; repeated and negative indices, several axes, and
the opsets where the emitted forms differ (scatter-add from 16, OneHot/MatMul before; OneHot
with explicit wrapping before 11; Scatter for TopK before 11)."""
from helpers import model, node, rand
import numpy as np
from onnx import numpy_helper


def resize_model(op, ins, attrs, x, consts, opset):
    """float constants (roi, scales) as Constant nodes: initializers would be checked as
    trained weights, and they have no gradient"""
    pre = [node("Constant", [], [k], value=numpy_helper.from_array(v, k))
           for k, v in consts.items() if v.dtype == np.float32]
    ints = {k: v for k, v in consts.items() if v.dtype != np.float32}
    return model(pre + [node(op, ins, ["y"], **attrs)], {"x": x}, ["y"], consts=ints,
                 opset=opset)


def i64(*rows):
    return np.array(rows, np.int64)


def cases():
    out = []
    # ---- Gather: axis 0/1/-1, 2-D and scalar indices, repeats and negatives
    x2, x3 = rand(4, 5), rand(2, 4, 3)
    idx = i64([1, -1], [3, 1])  # 1 repeats, -1 wraps to the last
    for opset in (7, 9, 11, 13, 17):
        for axis, x, ind in ((0, x2, idx), (1, x2, idx), (-1, x2, i64(0, 0, -2)),
                             (1, x3, idx), (2, x3, np.array(-1, np.int64))):
            ind = ind if opset >= 11 else np.where(ind < 0, ind + x.shape[axis], ind)
            tag = "gather_v%d_r%d_axis%d_q%d" % (opset, x.ndim, axis, ind.ndim)
            out.append((tag.replace("-", "m"),
                        model([node("Gather", ["x", "i"], ["y"], axis=axis)], {"x": x}, ["y"],
                              consts={"i": ind}, opset=opset), {"x": x}))
    # int32 indices
    out.append(("gather_i32_v13", model([node("Gather", ["x", "i"], ["y"], axis=1)], {"x": x2},
                                        ["y"], consts={"i": idx.astype(np.int32)}, opset=13),
                {"x": x2}))
    # ---- GatherElements: same shape and smaller indices, axis 0/1/-1
    ge = {"same0": (0, i64([0, 1, -1, 1], [2, 2, 0, -3], [1, 1, 1, 0])),
          "same1": (1, i64([0, 3, -1, 3], [2, 2, 0, -4], [1, 1, 1, 0])),
          "small0": (0, i64([2, -1], [0, 0])),
          "smallm1": (-1, i64([3, 3, -4], [0, 1, 1]))}
    xe = rand(3, 4)
    for opset in (11, 13, 17):
        for tag, (axis, ind) in ge.items():
            out.append(("gatherelements_v%d_%s" % (opset, tag),
                        model([node("GatherElements", ["x", "i"], ["y"], axis=axis)], {"x": xe},
                              ["y"], consts={"i": ind}, opset=opset), {"x": xe}))
    # ---- GatherND (batch_dims 0; scatter-add needs opset 16)
    xn = rand(3, 4, 2)
    for tag, ind in (("full", i64([0, 1, 1], [2, -1, 0], [0, 1, 1])),
                     ("rows", i64([1], [-1], [1])),
                     ("pairs", i64([[0, 1], [2, -1]], [[0, 1], [1, 0]]))):
        for opset in (11, 13, 16, 18):
            out.append(("gathernd_v%d_%s" % (opset, tag),
                        model([node("GatherND", ["x", "i"], ["y"])], {"x": xn}, ["y"],
                              consts={"i": ind}, opset=opset), {"x": xn}))
    # GatherND with batch_dims (the OneHot form at every opset)
    xb = rand(2, 3, 4)
    for bd, ind in ((1, i64([[1], [-1], [1]], [[0], [2], [2]])),
                    (1, i64([[1, 3], [1, 3]], [[2, -1], [0, 0]])),
                    (2, i64([[1], [1], [-1]], [[0], [3], [0]]))):
        for opset in (13, 17):
            out.append(("gathernd_v%d_b%d_k%d" % (opset, bd, ind.shape[-1]),
                        model([node("GatherND", ["x", "i"], ["y"], batch_dims=bd)], {"x": xb},
                              ["y"], consts={"i": ind}, opset=opset), {"x": xb}))
    # ---- ScatterElements: none (unique indices) and add (repeats), axes 0 and -1
    xs = rand(3, 4)
    for opset in (11, 13, 16, 18):
        for axis, ind in ((0, i64([1, 0, 2], [2, -1, 0])), (-1, i64([3, 0], [-1, 1]))):
            u = rand(*ind.shape)
            out.append(("scatterelements_v%d_none_axis%s" % (opset, str(axis).replace("-", "m")),
                        model([node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis)],
                              {"x": xs}, ["y"], {"u": u}, consts={"i": ind}, opset=opset),
                        {"x": xs}))
    for opset in (16, 18):
        for axis, ind in ((0, i64([1, 1, 2], [1, -2, 0])), (1, i64([3, 3], [-1, 1], [0, 0]))):
            u = rand(*ind.shape)
            out.append(("scatterelements_v%d_add_axis%d" % (opset, axis),
                        model([node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis,
                                    reduction="add")], {"x": xs}, ["y"], {"u": u},
                              consts={"i": ind}, opset=opset), {"x": xs}))
    # Scatter (opset 9, 10): same-shape and smaller indices
    for opset in (9, 10):
        for axis, ind in ((0, i64([1, 0, 2, 0], [2, 1, 0, 1])), (1, i64([3, 0], [1, 2])),
                          (0, i64([2, 1], [0, 2]))):
            u = rand(*ind.shape)
            out.append(("scatter_v%d_axis%d_%dx%d" % ((opset, axis) + ind.shape),
                        model([node("Scatter", ["x", "i", "u"], ["y"], axis=axis)], {"x": xs},
                              ["y"], {"u": u}, consts={"i": ind}, opset=opset), {"x": xs}))
    # ---- ScatterND
    for opset in (11, 13, 16):
        for tag, ind, ushape in (("elems", i64([0, 1], [2, -1], [1, 0]), (3,)),
                                 ("rows", i64([2], [0]), (2, 4))):
            u = rand(*ushape)
            out.append(("scatternd_v%d_none_%s" % (opset, tag),
                        model([node("ScatterND", ["x", "i", "u"], ["y"])], {"x": xs}, ["y"],
                              {"u": u}, consts={"i": ind}, opset=opset), {"x": xs}))
    for tag, ind, ushape in (("elems", i64([0, 1], [0, 1], [2, -1]), (3,)),
                             ("rows", i64([2], [-1], [0]), (3, 4))):
        u = rand(*ushape)
        out.append(("scatternd_v16_add_%s" % tag,
                    model([node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
                          {"x": xs}, ["y"], {"u": u}, consts={"i": ind}, opset=16), {"x": xs}))
    # ---- TopK: values only; Scatter at 9/10, ScatterElements from 11
    xt = rand(3, 5)
    out.append(("topk_v9_axism1", model([node("TopK", ["x"], ["v", "ix"], k=2)], {"x": xt}, ["v"],
                                        opset=9), {"x": xt}))
    out.append(("topk_v10_axis0", model([node("TopK", ["x", "k"], ["v", "ix"], axis=0)],
                                        {"x": xt}, ["v"], consts={"k": i64(2)}, opset=10),
                {"x": xt}))
    for opset in (11, 13):
        for axis, largest in ((1, 1), (0, 0), (-1, 0)):
            out.append(("topk_v%d_axis%s_largest%d" % (opset, str(axis).replace("-", "m"),
                                                        largest),
                        model([node("TopK", ["x", "k"], ["v", "ix"], axis=axis, largest=largest)],
                              {"x": xt}, ["v"], consts={"k": i64(2)}, opset=opset),
                        {"x": xt}))
    # ---- OneHot: the gradient of values, with a non-uniform dy (times x)
    for opset, ind, axis in ((9, i64([0, 2], [3, 1]), -1), (11, i64([0, -1], [3, 1]), -1),
                             (11, i64([2, -4, 1]), 0), (13, i64([[1, 1], [0, -2]]), 1)):
        shape = list(ind.shape)
        a = axis if axis >= 0 else len(shape)
        shape.insert(a, 4)
        xo = rand(*shape)
        out.append(("onehot_v%d_axis%s_r%d" % (opset, str(axis).replace("-", "m"), ind.ndim),
                    model([node("OneHot", ["i", "d", "v"], ["h"], axis=axis),
                           node("Mul", ["h", "x"], ["y"])], {"x": xo}, ["y"],
                          {"v": np.array([0.3, 1.7], np.float32)},
                          consts={"i": ind, "d": i64(4)}, opset=opset), {"x": xo}))
    # ---- Resize / Upsample: nearest, linear, cubic; scales and sizes; several transforms
    xr = rand(1, 2, 3, 4)
    f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
    rs = [
        ("nearest_asym_floor", dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                    nearest_mode="floor"), f32(1, 1, 2, 2), None, 13),
        ("nearest_halfpixel", dict(mode="nearest"), f32(1, 1, 2, 3), None, 13),
        ("nearest_down", dict(mode="nearest", nearest_mode="ceil"), f32(1, 1, 0.7, 0.5), None,
         13),
        ("linear_halfpixel", dict(mode="linear"), f32(1, 1, 2, 2), None, 13),
        ("linear_aligncorners_sizes", dict(mode="linear",
                                           coordinate_transformation_mode="align_corners"),
         None, i64(1, 2, 5, 7), 13),
        ("linear_pytorch_frac", dict(mode="linear",
                                     coordinate_transformation_mode="pytorch_half_pixel"),
         f32(1, 1, 1.5, 0.75), None, 13),
        ("cubic_halfpixel", dict(mode="cubic"), f32(1, 1, 2, 1.5), None, 13),
        ("cubic_exclude", dict(mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5),
         f32(1, 1, 1.7, 2), None, 13),
        ("linear_v11_asym", dict(mode="linear", coordinate_transformation_mode="asymmetric"),
         f32(1, 1, 2, 2), None, 11),
        ("linear_antialias_v18", dict(mode="linear", antialias=1), f32(1, 1, 0.5, 0.6), None,
         18),
        ("cubic_antialias_v19", dict(mode="cubic", antialias=1,
                                     coordinate_transformation_mode="half_pixel_symmetric"),
         f32(1, 1, 0.7, 0.5), None, 19),
    ]
    for tag, attrs, scales, sizes, opset in rs:
        consts = {"r": np.zeros(0, np.float32)}
        ins = ["x", "r" if opset < 13 else ""]
        if scales is not None:
            consts["s"] = scales
            ins.append("s")
        else:
            ins += ["", "z"]
            consts["z"] = sizes
        if opset < 13:
            if "s" not in ins:
                ins[2] = "s"
                consts["s"] = np.zeros(0, np.float32)
        xin = rand(1, 1, 6, 8) if "antialias" in attrs else xr
        out.append(("resize_" + tag, resize_model("Resize", ins, attrs, xin, consts, opset),
                    {"x": xin}))
    roi = f32(0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2)
    out.append(("resize_tf_crop_v11",
                resize_model("Resize", ["x", "r", "s"],
                             dict(mode="linear", extrapolation_value=0.5,
                                  coordinate_transformation_mode="tf_crop_and_resize"),
                             xr, {"r": roi, "s": f32(1, 1, 2, 2)}, 11), {"x": xr}))
    out.append(("resize_tf_crop_nearest_v13",
                resize_model("Resize", ["x", "r", "", "z"],
                             dict(mode="nearest", extrapolation_value=0.5,
                                  coordinate_transformation_mode="tf_crop_and_resize"),
                             xr, {"r": roi, "z": i64(1, 2, 5, 6)}, 13), {"x": xr}))
    for tag, op, mode, sc, opset in (("resize_v10_nearest", "Resize", "nearest", (1, 1, 2, 1.5), 10),
                                     ("resize_v10_linear", "Resize", "linear", (1, 1, 2, 2), 10),
                                     ("upsample_v9_linear", "Upsample", "linear", (1, 1, 2, 3), 9),
                                     ("upsample_v9_nearest", "Upsample", "nearest", (1, 1, 3, 2),
                                      9)):
        out.append((tag, resize_model(op, ["x", "s"], dict(mode=mode), xr, {"s": f32(*sc)},
                                      opset), {"x": xr}))
    x1 = rand(2, 5)  # 2-D (onnxruntime, which cross-checks, has no 1-D linear Resize)
    out.append(("resize_2d_linear", resize_model("Resize", ["x", "", "s"], dict(mode="linear"),
                                                 x1, {"s": f32(1.5, 2.5)}, 13), {"x": x1}))
    return out
