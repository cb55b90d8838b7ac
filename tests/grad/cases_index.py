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
    out += resize_param_cases(f32)
    x1 = rand(2, 5)  # 2-D (onnxruntime, which cross-checks, has no 1-D linear Resize)
    out.append(("resize_2d_linear", resize_model("Resize", ["x", "", "s"], dict(mode="linear"),
                                                 x1, {"s": f32(1.5, 2.5)}, 13), {"x": x1}))
    return out


def resize_param_cases(f32):
    """Resize with roi/scales/sizes computed in the graph: from Shape subgraphs of static
    shapes (folded when the gradient is built), and from int64 graph inputs (known only at
    run time: the matrices come from the node applied to a probe)"""
    out = []

    def const(name, v):
        return node("Constant", [], [name], value=numpy_helper.from_array(v, name))

    def shape_nc(x="x"):  # Shape(x)[0:2]
        return [node("Shape", [x], ["sh"]), const("k0", i64(0)), const("k2", i64(2)),
                node("Slice", ["sh", "k0", "k2"], ["nc"])]

    def dyn_batch(m):
        del m.graph.value_info[:]
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
        for k, d in enumerate(m.graph.output[0].type.tensor_type.shape.dim):
            d.dim_param = "o%d" % k
        return m

    xr, xa = rand(1, 2, 3, 4), rand(1, 1, 6, 8)
    # sizes = Concat(Shape(x)[0:2], [6, 7])
    nodes = shape_nc() + [const("hw", i64(6, 7)), node("Concat", ["nc", "hw"], ["z"], axis=0),
                          node("Resize", ["x", "", "", "z"], ["y"], mode="linear")]
    out.append(("resize_sizes_shape_v13", model(nodes, {"x": xr}, ["y"], opset=13), {"x": xr}))
    # scales = Cast(Concat(Shape(x)[0:2], [6, 8])) / Cast(Shape(x)): [1, 1, 2, 2]
    nodes = shape_nc() + [
        const("hw", i64(6, 8)), node("Concat", ["nc", "hw"], ["z"], axis=0),
        node("Cast", ["z"], ["zf"], to=1), node("Cast", ["sh"], ["shf"], to=1),
        node("Div", ["zf", "shf"], ["s"]), const("r", np.zeros(0, np.float32)),
        node("Resize", ["x", "r", "s"], ["y"], mode="cubic")]
    out.append(("resize_scales_shape_v11", model(nodes, {"x": xr}, ["y"], opset=11), {"x": xr}))
    # a symbolic batch: sizes = Concat(Shape(x)[0:2], [5, 7]); the batch axis keeps its size
    xb = rand(2, 2, 3, 4)
    nodes = shape_nc() + [const("hw", i64(5, 7)), node("Concat", ["nc", "hw"], ["z"], axis=0),
                          node("Resize", ["x", "", "", "z"], ["y"], mode="nearest")]
    out.append(("resize_sizes_shape_dynbatch_v13",
                dyn_batch(model(nodes, {"x": xb}, ["y"], opset=13)), {"x": xb}))
    # Upsample-9: scales = Cast(Shape(x) * [1, 1, 2, 3]) / Cast(Shape(x))
    nodes = [node("Shape", ["x"], ["sh"]), const("m", i64(1, 1, 2, 3)),
             node("Mul", ["sh", "m"], ["z"]), node("Cast", ["z"], ["zf"], to=1),
             node("Cast", ["sh"], ["shf"], to=1), node("Div", ["zf", "shf"], ["s"]),
             node("Upsample", ["x", "s"], ["y"], mode="linear")]
    out.append(("upsample_scales_shape_v9", model(nodes, {"x": xr}, ["y"], opset=9), {"x": xr}))
    # keep_aspect_ratio_policy on folded sizes: axes [2, 3], sizes = Shape(x)[2:4] * [2, 3]
    nodes = [node("Shape", ["x"], ["sh"]), const("k2", i64(2)), const("k4", i64(4)),
             node("Slice", ["sh", "k2", "k4"], ["hw"]), const("m", i64(2, 3)),
             node("Mul", ["hw", "m"], ["z"]),
             node("Resize", ["x", "", "", "z"], ["y"], mode="linear", axes=[2, 3],
                  keep_aspect_ratio_policy="not_larger")]
    out.append(("resize_sizes_shape_keep_v18", model(nodes, {"x": xr}, ["y"], opset=18),
                {"x": xr}))

    # ---- known only at run time: int64 graph inputs, scaled to floats in the graph
    def runtime(tag, opset, x, ints, pre, resize_ins, attrs, op="Resize", dyn=False):
        nodes = pre + [node(op, resize_ins, ["y"], **attrs)]
        m = model(nodes, {"x": x, **ints}, ["y"], opset=opset)
        out.append(("resize_rt_" + tag, dyn_batch(m) if dyn else m, {"x": x, **ints}))

    half = [const("two", f32(2)), node("Cast", ["si"], ["sf"], to=1),
            node("Div", ["sf", "two"], ["s"])]
    si = i64(2, 2, 3, 5)  # scales [1, 1, 1.5, 2.5]
    runtime("scales_linear_v13", 13, xr, {"si": si}, half, ["x", "", "s"], dict(mode="linear"))
    runtime("scales_nearest_v10", 10, xr, {"si": i64(2, 2, 4, 3)}, half, ["x", "s"],
            dict(mode="nearest"))
    runtime("scales_linear_v9", 9, xr, {"si": i64(2, 2, 3, 4)}, half, ["x", "s"],
            dict(mode="linear"), op="Upsample")
    # scales = Concat([1, 1], runtime): the batch (symbolic) and channel axes are skipped
    runtime("scales_cubic_dynbatch_v13", 13, xb, {"si": i64(3, 5)},
            half + [const("one", f32(1, 1)), node("Concat", ["one", "s"], ["s2"], axis=0)],
            ["x", "", "s2"], dict(mode="cubic", exclude_outside=1), dyn=True)
    # tf_half_pixel_for_nn: at scale 1, rounding up shifts by one (the spec and onnxgrad;
    # onnxruntime leaves the axis alone: batch and channels of 1 here, where both agree)
    runtime("scales_tfnn_ceil_v13", 13, rand(1, 1, 4, 5), {"si": i64(2, 2, 3, 1)}, half,
            ["x", "", "s"], dict(mode="nearest", nearest_mode="ceil",
                                 coordinate_transformation_mode="tf_half_pixel_for_nn"))
    runtime("scales_tfnn_prefer_floor_v13", 13, rand(1, 1, 4, 5), {"si": i64(2, 2, 3, 1)},
            half, ["x", "", "s"], dict(mode="nearest",
                                       coordinate_transformation_mode="tf_half_pixel_for_nn"))
    # runtime sizes and roi, tf_crop_and_resize with an extrapolation value
    empty = [const("e", np.zeros(0, np.float32))]
    roi = [const("ten", f32(10)), node("Cast", ["ri"], ["rf"], to=1),
           node("Div", ["rf", "ten"], ["r"])]
    runtime("sizes_roi_crop_v11", 11, xr, {"zi": i64(1, 2, 5, 6),
                                           "ri": i64(0, 0, 2, -1, 10, 10, 9, 12)},
            empty + roi, ["x", "r", "e", "zi"],
            dict(mode="linear", extrapolation_value=0.5,
                 coordinate_transformation_mode="tf_crop_and_resize"))
    runtime("sizes_cubic_align_v11", 11, xr, {"zi": i64(1, 2, 5, 7)}, empty,
            ["x", "e", "e", "zi"], dict(mode="cubic",
                                        coordinate_transformation_mode="align_corners"))
    # axes [2, 3] with runtime sizes; antialiased downsampling
    runtime("sizes_axes_antialias_v18", 18, xa, {"zi": i64(4, 5)}, [], ["x", "", "", "zi"],
            dict(mode="linear", antialias=1, axes=[2, 3]))
    # rank 3
    runtime("scales_rank3_v13", 13, rand(2, 3, 4), {"si": i64(2, 3, 5)}, half,
            ["x", "", "s"], dict(mode="nearest", nearest_mode="floor"))
    return out
