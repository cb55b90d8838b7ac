"""Gradient cases of the normalizations of issue 12: GroupNormalization (scale and bias per
group at opset 18, per channel at 21; one group, as many groups as channels, 3-D and 5-D
inputs), MeanVarianceNormalization (default and given axes, opsets 9 and 13),
LpNormalization (p 1 and 2, each axis) and LRN (odd and even sizes, alpha, beta, bias,
rank 3 to 5)."""
import numpy as np
from onnx import TensorProto, helper

from helpers import model, node, rand


def cases():
    out = []

    def add(name, nodes, inputs, outputs, weights=None, opset=17, consts=None, torch=None):
        m = model(nodes, inputs, outputs, weights, opset, consts)
        x = next(iter(inputs.values()))
        for o in m.graph.output:  # ONNX infers no GroupNormalization type: x's
            if not o.type.tensor_type.HasField("shape"):
                o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, x.shape))
        out.append((name, m, inputs) + ((torch,) if torch else ()))

    for opset in (18, 21):
        per = opset >= 21
        for tag, shape, groups, attrs in (("g3", (2, 6, 3, 2), 3, {}),
                                          ("g1_eps", (2, 4, 5), 1, {"epsilon": 0.1}),
                                          ("g_eq_c", (1, 4, 2, 2, 2), 4, {}),
                                          ("g2", (3, 6, 4), 2, {})):
            n = shape[1] if per else groups
            add("groupnorm_%s_v%d" % (tag, opset),
                [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, **attrs)],
                {"x": rand(*shape)}, ["y"], {"s": rand(n, low=0.5, high=1.5), "b": rand(n)},
                opset=opset, torch={"fn": "group_norm", "kw": {"groups": groups, "per_group": not per,
                                                               "eps": attrs.get("epsilon", 1e-5)}})
    # (onnx's checker expands MeanVarianceNormalization-13's function, which needs opset 18
    # and the axes attribute given)
    add("mvn_default_v9", [node("MeanVarianceNormalization", ["x"], ["y"])],
        {"x": rand(2, 3, 4, 2)}, ["y"], opset=9)
    add("mvn_0_2_3_v18", [node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 2, 3])],
        {"x": rand(2, 3, 4, 2)}, ["y"], opset=18)
    for opset in (9, 18):
        add("mvn_axes_v%d" % opset, [node("MeanVarianceNormalization", ["x"], ["y"], axes=[1, -1])],
            {"x": rand(2, 3, 4)}, ["y"], opset=opset)
    x = (rand(3, 4, 2, low=0.2, high=1.5) * np.sign(rand(3, 4, 2))).astype(np.float32)
    for p in (1, 2):
        for axis in (-1, 1, 0):
            add("lpnorm_p%d_axis%d" % (p, axis), [node("LpNormalization", ["x"], ["y"], p=p, axis=axis)],
                {"x": x}, ["y"], opset=13, torch={"fn": "normalize", "kw": {"p": p, "dim": axis}})
    lrn_torch = {"size3": {"size": 3}, "size5_big_alpha": {"size": 5, "alpha": 3.0, "beta": 0.9}}
    for opset, tag, shape, attrs in ((7, "size3", (2, 5, 3, 2), {"size": 3}),
                                     (13, "size4_attrs", (2, 6, 3, 1), {"size": 4, "alpha": 0.5,
                                                                     "beta": 0.6, "bias": 1.5}),
                                     (13, "size1_5d", (1, 3, 2, 2, 2), {"size": 1, "alpha": 2.0}),
                                     (13, "size5_big_alpha", (2, 4, 2, 3), {"size": 5, "alpha": 3.0,
                                                                            "beta": 0.9})):
        add("lrn_%s_v%d" % (tag, opset), [node("LRN", ["x"], ["y"], **attrs)], {"x": rand(*shape)},
            ["y"], opset=opset, torch={"fn": "lrn", "kw": lrn_torch[tag]} if tag in lrn_torch else None)
    # a weight through LRN
    add("lrn_weight", [node("Mul", ["x", "w"], ["m"]), node("LRN", ["m"], ["y"], size=3)],
        {"x": rand(2, 4, 3, 2)}, ["y"], {"w": rand(1, 4, 1, 1)}, opset=13,
        torch={"fn": "lrn", "kw": {"size": 3}})
    add("lrn_3d", [node("LRN", ["x"], ["y"], size=3, bias=0.5)], {"x": rand(2, 5, 3)}, ["y"],
        opset=13)
    return out
