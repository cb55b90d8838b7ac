"""Gradient cases of models importing opsets 1 and 6, which the loader rewrites into opset 7
(src/onnx/upgrade.c): broadcasting at `axis` (B gets an Unsqueeze), a per-channel PRelu
slope, BatchNormalization with is_test=1 and is_test=0 (batch statistics), Gemm's
`broadcast`, Reshape-1's shape attribute, Concat-1's default axis and `consumed_inputs`.
The gradients are those of the old semantics (finite differences run on the upgraded graph,
whose forward values tests/opset/gen_oldopset.py checks against the old schemas); the saved
training graph imports opset 7, which onnxruntime runs (tests/grad/ort_check.py)."""
from onnx import TensorProto, helper

from helpers import model, node, rand


def cases():
    out = []
    x = rand(2, 3, 4)
    out.append(("old6_add_axis", model(
        [node("Add", ["x", "b"], ["s"], broadcast=1, axis=1),
         node("Mul", ["s", "w"], ["m"], broadcast=1),
         node("Tanh", ["m"], ["y"])],
        {"x": x}, ["y"], {"b": rand(3), "w": rand(4)}, opset=6), {"x": x}))
    x = rand(2, 3, 4)
    out.append(("old6_div_pow_axis0", model(
        [node("Div", ["x", "d"], ["q"], broadcast=1, axis=0),
         node("Pow", ["p", "q"], ["y"], broadcast=1)],
        {"x": x}, ["y"], {"d": rand(2, low=0.5, high=1.5), "p": rand(1, low=0.5, high=1.5).reshape(())},
        opset=6), {"x": x}))
    x = rand(2, 3, 4, 5)
    out.append(("old6_prelu_channel", model([node("PRelu", ["x", "s"], ["y"])], {"x": x}, ["y"],
                                            {"s": rand(3)}, opset=6), {"x": x}))
    x = rand(2, 3, 4)
    consts = {"mean": rand(3), "var": rand(3, low=0.5, high=1.5)}
    out.append(("old6_bn_is_test", model(
        [node("BatchNormalization", ["x", "sc", "b", "mean", "var"], ["y"], is_test=1)],
        {"x": x}, ["y"], {"sc": rand(3), "b": rand(3)}, opset=6, consts=consts), {"x": x}))
    x = rand(4, 3, 5)
    out.append(("old6_bn_training", model(
        [node("BatchNormalization", ["x", "sc", "b", "mean", "var"], ["y"], is_test=0)],
        {"x": x}, ["y"], {"sc": rand(3), "b": rand(3)}, opset=6, consts=consts), {"x": x}))
    x = rand(2, 3)
    out.append(("old6_gemm_broadcast", model(
        [node("Gemm", ["x", "w", "c"], ["y"], broadcast=1, transB=1, alpha=0.5, beta=2.0)],
        {"x": x}, ["y"], {"w": rand(4, 3), "c": rand(4)}, opset=6), {"x": x}))
    x = rand(2, 3, 2)
    m = model([node("Reshape", ["x"], ["r"], shape=[2, 6], consumed_inputs=[0]),
               node("Concat", ["r", "w"], ["c"]),
               node("Sigmoid", ["c"], ["y"], consumed_inputs=[0])],
              {"x": x}, ["y"], {"w": rand(2, 3)}, opset=1)
    # ONNX infers no shape through Reshape-1: declare y (2, 9)
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 9]))
    out.append(("old1_reshape_concat", m, {"x": x}))
    return out
