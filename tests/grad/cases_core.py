"""Gradient cases of the core rules: arithmetic with broadcasting, activations, MatMul and
Gemm in every transpose form, shape ops, reductions and (log-)softmax at old and new
opsets."""
from helpers import model, node, rand
import numpy as np
from onnx import TensorProto, helper


def cases():
    out = []
    # binary ops: same shape, row broadcast, column broadcast, scalar, both broadcast
    shapes = {"same": ((3, 4), (3, 4)), "row": ((3, 4), (4,)), "col": ((2, 3, 4), (3, 1)),
              "scalar": ((3, 4), ()), "both": ((3, 1), (1, 4))}
    for op in ("Add", "Sub", "Mul", "Div"):
        for tag, (sa, sb) in shapes.items():
            a = rand(*sa)
            b = rand(*sb, low=0.5, high=1.5) if op == "Div" else rand(*sb)
            out.append(("%s_%s" % (op.lower(), tag),
                        model([node(op, ["a", "b"], ["y"])], {"a": a}, ["y"], {"b": b}), {"a": a}))
    for op, low in (("Relu", -1), ("Sigmoid", -3), ("Tanh", -2), ("Exp", -1), ("Log", 0.2),
                    ("Sqrt", 0.2), ("Neg", -1), ("Identity", -1)):
        x = rand(3, 5, low=low, high=2.0)
        if op == "Relu":
            x[np.abs(x) < 0.05] = 0.3  # away from the kink
        out.append((op.lower(), model([node(op, ["x"], ["y"])], {"x": x}, ["y"]), {"x": x}))
    # MatMul: 2-D, batched, broadcast batch, weight shared across a batch
    for tag, sa, sb in (("2d", (3, 4), (4, 5)), ("batched", (2, 3, 4), (2, 4, 5)),
                        ("bcast", (2, 1, 3, 4), (3, 4, 5)), ("shared", (2, 3, 4), (4, 5)),
                       ("shared4d", (2, 2, 3, 4), (4, 5))):
        a, b = rand(*sa), rand(*sb)
        out.append(("matmul_" + tag,
                    model([node("MatMul", ["a", "b"], ["y"])], {"a": a}, ["y"], {"b": b}),
                    {"a": a}))
    for ta in (0, 1):
        for tb in (0, 1):
            for opset in (9, 13):
                a = rand(4, 3) if ta else rand(3, 4)
                b = rand(5, 4) if tb else rand(4, 5)
                c = rand(5)
                out.append(("gemm_ta%d_tb%d_v%d" % (ta, tb, opset),
                            model([node("Gemm", ["a", "b", "c"], ["y"], transA=ta, transB=tb,
                                        alpha=0.7, beta=1.3)], {"a": a}, ["y"],
                                  {"b": b, "c": c}, opset=opset), {"a": a}))
    x = rand(2, 3, 4)
    out.append(("reshape", model([node("Reshape", ["x", "s"], ["y"])], {"x": x}, ["y"],
                                 consts={"s": np.array([4, -1], np.int64)}), {"x": x}))
    out.append(("flatten", model([node("Flatten", ["x"], ["y"], axis=2)], {"x": x}, ["y"]),
                {"x": x}))
    out.append(("transpose", model([node("Transpose", ["x"], ["y"], perm=[2, 0, 1])], {"x": x},
                                   ["y"]), {"x": x}))
    out.append(("transpose_default", model([node("Transpose", ["x"], ["y"])], {"x": x}, ["y"]),
                {"x": x}))
    out.append(("unsqueeze_squeeze",
                model([node("Unsqueeze", ["x", "ax"], ["u"]), node("Squeeze", ["u", "ax"], ["y"])],
                      {"x": x}, ["y"], consts={"ax": np.array([1], np.int64)}), {"x": x}))
    for op in ("ReduceSum", "ReduceMean"):
        for keep in (0, 1):
            out.append(("%s_keep%d_v13" % (op.lower(), keep),
                        model([node(op, ["x", "ax"], ["y"], keepdims=keep) if op == "ReduceSum"
                               else node(op, ["x"], ["y"], axes=[0, 2], keepdims=keep)],
                              {"x": x}, ["y"], consts={"ax": np.array([0, -1], np.int64)}
                              if op == "ReduceSum" else None, opset=13), {"x": x}))
            out.append(("%s_keep%d_v11" % (op.lower(), keep),
                        model([node(op, ["x"], ["y"], axes=[1], keepdims=keep)], {"x": x}, ["y"],
                              opset=11), {"x": x}))
        out.append(("%s_all" % op.lower(), model([node(op, ["x"], ["y"], keepdims=0)], {"x": x},
                                                 ["y"], opset=11), {"x": x}))
    for op in ("Softmax", "LogSoftmax"):
        for opset, axis in ((13, -1), (13, 1), (11, 1), (11, 0)):
            out.append(("%s_v%d_axis%d" % (op.lower(), opset, axis),
                        model([node(op, ["x"], ["y"], axis=axis)], {"x": x}, ["y"], opset=opset),
                        {"x": x}))
    # broadcasting onto values whose dims are only known at run time (reshaped by a
    # computed shape): the axes to sum are found at run time
    xd, bd, cd = rand(2, 3), rand(2), rand(6)
    dyn = model([node("Shape", ["x"], ["sx"]),
                       node("Slice", ["sx", "z", "o"], ["s0"]),
                       node("Concat", ["s0", "o"], ["s"], axis=0),
                       node("Reshape", ["b", "s"], ["bb"]),      # [2, 1], dims unknown
                       node("Reshape", ["c", "sx"], ["cc"]),     # [2, 3], dims unknown
                       node("Add", ["x", "bb"], ["t"]), node("Mul", ["t", "cc"], ["y"])],
                      {"x": xd}, ["y"], {"b": bd, "c": cd},
                      consts={"z": np.array([0], np.int64), "o": np.array([1], np.int64)},
                      opset=13)
    del dyn.graph.output[:]  # shape inference cannot tell y's shape: declare it
    dyn.graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]))
    out.append(("sum_to_dynamic", dyn, {"x": xd}))
    # a small MLP with two outputs sharing a hidden layer: gradients are summed
    xi, w1, b1, w2 = rand(4, 6), rand(6, 5), rand(5), rand(5, 3)
    out.append(("mlp_two_outputs",
                model([node("MatMul", ["x", "w1"], ["h0"]), node("Add", ["h0", "b1"], ["h1"]),
                       node("Tanh", ["h1"], ["h"]), node("MatMul", ["h", "w2"], ["y1"]),
                       node("ReduceSum", ["h"], ["y2"], keepdims=0)],
                      {"x": xi}, ["y1", "y2"], {"w1": w1, "b1": b1, "w2": w2}, opset=11),
                {"x": xi}))
    return out
