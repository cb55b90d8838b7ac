"""Gradient cases of the layout and selection rules of issue 12: DepthToSpace (DCR, CRD) and
SpaceToDepth at every version, CenterCropPad (crop, pad, both, axes), Compress (with and
without axis, a short condition, the OneHot form of opsets 9 and 10 and the ScatterND form
after), ReverseSequence (both axis layouts), and Hardmax and EyeLike, whose outputs carry no
gradient to their input."""
import numpy as np
from onnx import TensorProto, helper

from helpers import model, node, rand


def cases():
    out = []

    def add(name, nodes, inputs, outputs, weights=None, opset=17, consts=None, rank=None):
        m = model(nodes, inputs, outputs, weights, opset, consts)
        for o in m.graph.output:  # where ONNX infers no type (Compress-9): float, rank given
            if not o.type.tensor_type.elem_type:
                o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, [None] * rank))
        out.append((name, m, inputs))

    x = rand(2, 8, 2, 3)
    for opset in (7, 11, 13):
        add("depthtospace_dcr_v%d" % opset, [node("DepthToSpace", ["x"], ["y"], blocksize=2)],
            {"x": x}, ["y"], opset=opset)
    for opset in (11, 13):
        add("depthtospace_crd_v%d" % opset,
            [node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], {"x": x}, ["y"],
            opset=opset)
    # a weight through a 3x3 block, CRD
    add("depthtospace_crd_b3_weight",
        [node("Mul", ["x", "w"], ["m"]), node("DepthToSpace", ["m"], ["y"], blocksize=3,
                                              mode="CRD")],
        {"x": rand(1, 18, 2, 2)}, ["y"], {"w": rand(1, 18, 1, 1)}, opset=13)
    for opset in (7, 13):
        add("spacetodepth_v%d" % opset, [node("SpaceToDepth", ["x"], ["y"], blocksize=2)],
            {"x": rand(2, 3, 4, 6)}, ["y"], opset=opset)

    x = rand(3, 5, 4)
    for tag, shape, axes in (("crop_pad", [2, 8, 4], None), ("axes", [3, 1], [-1, 1]),
                             ("odd", [4, 2, 7], None)):
        attrs = {"axes": axes} if axes else {}
        add("centercroppad_" + tag,
            [node("CenterCropPad", ["x", "s"], ["y"], **attrs)], {"x": x}, ["y"], opset=18,
            consts={"s": np.array(shape, np.int64)})

    x = rand(3, 4, 2)
    for opset in (9, 11, 13):
        add("compress_axis1_v%d" % opset,
            [node("Compress", ["x", "c"], ["y"], axis=1)], {"x": x}, ["y"], opset=opset,
            consts={"c": np.array([1, 0, 1, 1], bool)}, rank=3)
        add("compress_flat_short_v%d" % opset,
            [node("Compress", ["x", "c"], ["y"])], {"x": x}, ["y"], opset=opset,
            consts={"c": np.array([0, 1, 1, 0, 1, 0, 0, 1], bool)}, rank=1)
    add("compress_axis0", [node("Compress", ["x", "c"], ["y"], axis=0)], {"x": x}, ["y"],
        opset=13, consts={"c": np.array([1, 0, 1], bool)})
    add("compress_neg_axis_weight",
        [node("Compress", ["w", "c"], ["s"], axis=-1), node("Mul", ["x", "s"], ["y"])],
        {"x": rand(3, 4, 1)}, ["y"], {"w": rand(3, 4, 2)}, opset=13,
        consts={"c": np.array([0, 1], bool)})

    add("reversesequence_time0",
        [node("ReverseSequence", ["x", "l"], ["y"])], {"x": rand(4, 3, 2)}, ["y"], opset=10,
        consts={"l": np.array([4, 1, 2], np.int64)})
    add("reversesequence_batch0",
        [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1)],
        {"x": rand(3, 4)}, ["y"], opset=13, consts={"l": np.array([0, 4, 3], np.int64)})

    # Hardmax and EyeLike pass no gradient: y = x·w + Hardmax(x) + EyeLike(x)
    x = rand(3, 4)
    for opset in (11, 13):
        add("hardmax_eyelike_v%d" % opset,
            [node("Mul", ["x", "w"], ["m"]), node("Hardmax", ["x"], ["h"], axis=1),
             node("EyeLike", ["x"], ["e"], k=1), node("Sum", ["m", "h", "e"], ["y"])],
            {"x": x}, ["y"], {"w": rand(3, 4)}, opset=opset)
    return out
