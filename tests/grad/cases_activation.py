"""Gradient cases of the unary and elementwise rules (src/grad/unary.c, binary.c, and Cast and
Dropout in tensor.c and norm.c): unary math, parametric
activations at each attribute variant, Pow/PRelu/Where/Max/Min/Sum/Mean with broadcasting,
Clip with attribute and input bounds, Cast, Dropout in inference and training mode, and
the zero-gradient rounding ops, each at old and new opsets."""
from helpers import model, node, rand
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def away(x, kinks, gap=0.08):
    """move the elements of x closer than gap to a kink off it"""
    x = x.copy()
    for k in kinks:
        close = np.abs(x - k) < gap
        x[close] = np.float32(k + 2 * gap)
    return x


def unary(name, op, x, opset, **attrs):
    return (name, model([node(op, ["x"], ["y"], **attrs)], {"x": x}, ["y"], opset=opset),
            {"x": x})


def const_node(name, arr):
    return node("Constant", [], [name], value=helper.make_tensor(
        name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape, arr.flatten().tolist()))


def cases():
    out = []
    # plain unary math: (op, low, high, kinks, opsets)
    for op, low, high, kinks, opsets in (
            ("Abs", -1, 1, [0], (7, 13)), ("Reciprocal", 0.4, 1.5, [], (7, 13)),
            ("Erf", -1.5, 1.5, [], (9, 13)), ("Sin", -3, 3, [], (7, 17)),
            ("Cos", -3, 3, [], (7, 17)), ("Tan", -1.2, 1.2, [], (7, 17)),
            ("Atan", -2, 2, [], (7, 17)), ("Asin", -0.8, 0.8, [], (7, 17)),
            ("Acos", -0.8, 0.8, [], (7, 17)), ("Sinh", -2, 2, [], (9, 17)),
            ("Cosh", -2, 2, [], (9, 17)), ("Asinh", -2, 2, [], (9, 17)),
            ("Acosh", 1.2, 3, [], (9, 17)), ("Atanh", -0.8, 0.8, [], (9, 17)),
            ("Softplus", -3, 3, [], (7, 17)), ("Softsign", -3, 3, [], (7, 17)),
            ("HardSwish", -4.5, 4.5, [-3, 3], (14, 20)), ("Mish", -3, 3, [], (18, 20))):
        for opset in opsets:
            x = away(rand(3, 4, low=low, high=high), kinks)
            if op == "Reciprocal":
                x[0] = -x[0]
            out.append(unary("%s_v%d" % (op.lower(), opset), op, x, opset))
    # parametric activations: default and explicit attributes
    for op, variants, kinks_of, opsets in (
            ("Elu", ({}, {"alpha": 0.5}), lambda a: [0], (7, 17)),
            ("Selu", ({}, {"alpha": 1.2, "gamma": 0.9}), lambda a: [0], (7, 17)),
            ("LeakyRelu", ({}, {"alpha": 0.2}), lambda a: [0], (7, 17)),
            ("HardSigmoid", ({}, {"alpha": 0.3, "beta": 0.4}),
             lambda a: [(0 - a.get("beta", 0.5)) / a.get("alpha", 0.2),
                        (1 - a.get("beta", 0.5)) / a.get("alpha", 0.2)], (7, 17)),
            ("Celu", ({}, {"alpha": 0.7}), lambda a: [0], (12, 17)),
            ("ThresholdedRelu", ({}, {"alpha": 0.3}), lambda a: [a.get("alpha", 1.0)],
             (10, 17))):
        for i, attrs in enumerate(variants):
            for opset in opsets:
                x = away(rand(3, 4, low=-4, high=4), kinks_of(attrs))
                out.append(unary("%s_a%d_v%d" % (op.lower(), i, opset), op, x, opset, **attrs))
    for approx in ("none", "tanh"):
        x = rand(3, 4, low=-3, high=3)
        out.append(unary("gelu_%s_v20" % approx, "Gelu", x, 20, approximate=approx))
    # zero-gradient ops: y = Op(x) * x, so dx = Op(x) through the direct path only
    for op, opset in (("Sign", 9), ("Sign", 13), ("Floor", 7), ("Floor", 13), ("Ceil", 7),
                      ("Ceil", 13), ("Round", 11), ("Round", 13)):
        x = away(rand(3, 4, low=-2.5, high=2.5), [-2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2])
        out.append(("%s_v%d" % (op.lower(), opset),
                    model([node(op, ["x"], ["r"]), node("Mul", ["r", "x"], ["y"])], {"x": x},
                          ["y"], opset=opset), {"x": x}))
    # Pow: base and exponent, each broadcasting; an int exponent from opset 12
    for opset in (7, 13):
        for tag, sa, sb in (("same", (3, 4), (3, 4)), ("row", (3, 4), (4,)),
                            ("scalar", (3, 4), ()), ("both", (3, 1), (1, 4))):
            a, e = rand(*sa, low=0.4, high=1.6), rand(*sb, low=-2, high=2)
            out.append(("pow_%s_v%d" % (tag, opset),
                        model([node("Pow", ["a", "e"], ["y"])], {"a": a}, ["y"], {"e": e},
                              opset=opset), {"a": a}))
    a, e = rand(3, 4, low=0.4, high=1.6), rand(4, low=-2, high=2).astype(np.float64)
    out.append(("pow_double_exp_v13", model([node("Pow", ["a", "e"], ["y"])], {"a": a}, ["y"],
                                            {"e": e}, opset=13), {"a": a}))
    a = away(rand(3, 4, low=-1.5, high=1.5), [0], 0.2)
    for tag, e in (("i3", np.array(3, np.int64)), ("irow", np.array([2, 3, 1, 4], np.int64))):
        out.append(("pow_%s_v13" % tag, model([node("Pow", ["a", "e"], ["y"])], {"a": a}, ["y"],
                                                consts={"e": e}, opset=13), {"a": a}))
    # a float exponent from a Constant node (not a trained initializer): the rule folds it
    # into dy * e * a^(e - 1), dy * 2a for 2 (layer norm's square), dy for 1
    ap = rand(3, 4, low=0.4, high=1.6)
    for tag, e in (("f2", np.array(2.0, np.float32)), ("fhalf", np.array([0.5], np.float32)),
                   ("f1", np.array(1.0, np.float32)), ("fneg", np.array(-1.5, np.float32))):
        out.append(("pow_const_%s_v13" % tag,
                    model([node("Constant", [], ["e"], value=numpy_helper.from_array(e)),
                           node("Pow", ["a", "e"], ["y"])], {"a": ap}, ["y"], opset=13),
                    {"a": ap}))
    # PRelu: slope of X's shape, a row, one element, a middle axis (mask path before 9)
    for opset in (8, 16):
        for tag, ss in (("same", (2, 3, 4)), ("row", (4,)), ("one", (1,)), ("mid", (3, 1))):
            x = away(rand(2, 3, 4, low=-2, high=2), [0])
            s = rand(*ss, low=0.1, high=0.6)
            out.append(("prelu_%s_v%d" % (tag, opset),
                        model([node("PRelu", ["x", "s"], ["y"])], {"x": x}, ["y"], {"s": s},
                              opset=opset), {"x": x}))
    # Clip: attributes (opset 7-10), then optional inputs (trained scalars from 11)
    x = away(rand(3, 4, low=-2, high=2), [-0.5, 0.6])
    for tag, attrs in (("both", {"min": -0.5, "max": 0.6}), ("min", {"min": -0.5}),
                       ("max", {"max": 0.6}), ("none", {})):
        out.append(unary("clip_attr_%s_v10" % tag, "Clip", x, 10, **attrs))
    lo, hi = np.array(-0.5, np.float32), np.array(0.6, np.float32)
    for opset in (11, 13):
        for tag, ins, w in (("both", ["x", "lo", "hi"], {"lo": lo, "hi": hi}),
                            ("min", ["x", "lo"], {"lo": lo}), ("max", ["x", "", "hi"], {"hi": hi}),
                            ("none", ["x"], {})):
            out.append(("clip_%s_v%d" % (tag, opset),
                        model([node("Clip", ins, ["y"])], {"x": x}, ["y"], w, opset=opset),
                        {"x": x}))
    # Max / Min: two inputs, three broadcasting inputs, ties (split evenly), one input
    for op in ("Max", "Min"):
        for opset in (8, 13):
            a, w = rand(3, 4), rand(3, 4)
            out.append(("%s_two_v%d" % (op.lower(), opset),
                        model([node(op, ["a", "w"], ["y"])], {"a": a}, ["y"], {"w": w},
                              opset=opset), {"a": a}))
            a, w, v = rand(2, 3, 4), rand(3, 1), rand(4)
            out.append(("%s_bcast_v%d" % (op.lower(), opset),
                        model([node(op, ["a", "w", "v"], ["y"])], {"a": a}, ["y"],
                              {"w": w, "v": v}, opset=opset), {"a": a}))
            # two-way ties between independent values: FD gives 1/2 each, as the even split
            a = rand(3, 4)
            w = a.copy()
            w[:, ::2] = rand(3, 2)
            out.append(("%s_ties_v%d" % (op.lower(), opset),
                        model([node(op, ["a", "w"], ["y"])], {"a": a}, ["y"], {"w": w},
                              opset=opset), {"a": a}))
            # one input twice: its two halves of the tie add up to the whole gradient
            a, w = rand(3, 4), rand(3, 4)
            out.append(("%s_dup_v%d" % (op.lower(), opset),
                        model([node(op, ["a", "w", "a"], ["y"])], {"a": a}, ["y"], {"w": w},
                              opset=opset), {"a": a}))
        a = rand(3, 4)
        out.append(unary("%s_one_v13" % op.lower(), op, a, 13))
    # Sum / Mean: same shapes (opset 7, no broadcasting), broadcasting (13), one input
    for op in ("Sum", "Mean"):
        a, w, v = rand(3, 4), rand(3, 4), rand(3, 4)
        out.append(("%s_same_v7" % op.lower(),
                    model([node(op, ["a", "w", "v"], ["y"])], {"a": a}, ["y"], {"w": w, "v": v},
                          opset=7), {"a": a}))
        a, w, v = rand(2, 3, 4), rand(3, 1), rand(4)
        out.append(("%s_bcast_v13" % op.lower(),
                    model([node(op, ["a", "w", "v", "a"], ["y"])], {"a": a}, ["y"],
                          {"w": w, "v": v}, opset=13), {"a": a}))
        out.append(unary("%s_one_v13" % op.lower(), op, rand(3, 4), 13))
    # Where: X and Y, broadcasting against each other and the condition
    for opset in (9, 16):
        for tag, sc, sx, sy in (("same", (3, 4), (3, 4), (3, 4)),
                                ("bcast", (3, 1), (2, 3, 4), (4,)),
                                ("cond", (2, 3, 4), (3, 4), ())):
            c = rand(*sc) > 0
            xa, ya = rand(*sx), rand(*sy)
            out.append(("where_%s_v%d" % (tag, opset),
                        model([node("Where", ["c", "x", "w"], ["y"])], {"x": xa}, ["y"],
                              {"w": ya}, consts={"c": c}, opset=opset), {"x": xa}))
    # Cast: float to float (a double round trip), and through int64 (no gradient there)
    for opset in (9, 13):
        x = rand(3, 4)
        out.append(("cast_float_v%d" % opset,
                    model([node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
                           node("Sin", ["d"], ["s"]),
                           node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)],
                          {"x": x}, ["y"], opset=opset), {"x": x}))
        x = away(rand(3, 4, low=-3, high=3), [-2, -1, 0, 1, 2])
        out.append(("cast_int_v%d" % opset,
                    model([node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                           node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
                           node("Mul", ["f", "x"], ["y"])], {"x": x}, ["y"], opset=opset),
                    {"x": x}))
    # CastLike: float to double and back through the types of other values (the like input
    # is a graph value whose data is never read: no gradient), and through int64
    for opset in (15, 19, 21):
        x = rand(3, 4)
        out.append(("castlike_float_v%d" % opset,
                    model([const_node("ld", np.zeros((1,), np.float64)),
                           node("CastLike", ["x", "ld"], ["d"]), node("Sin", ["d"], ["s"]),
                           node("CastLike", ["s", "x"], ["y"])], {"x": x}, ["y"], opset=opset),
                    {"x": x}))
    x = away(rand(3, 4, low=-3, high=3), [-2, -1, 0, 1, 2])
    out.append(("castlike_int_v15",
                model([const_node("li", np.zeros((2,), np.int64)),
                       node("CastLike", ["x", "li"], ["i"]), node("CastLike", ["i", "x"], ["f"]),
                       node("Mul", ["f", "x"], ["y"])], {"x": x}, ["y"], opset=15), {"x": x}))
    # Dropout: inference forms (identity) and training mode with the mask output
    x = rand(4, 6)
    out.append(("dropout_v10", model([node("Dropout", ["x"], ["y", "m"], ratio=0.3)], {"x": x},
                                     ["y"], opset=10), {"x": x}))
    out.append(("dropout_nomask_v13", model([node("Dropout", ["x"], ["y"])], {"x": x}, ["y"],
                                            opset=13), {"x": x}))
    t, f = np.array(True), np.array(False)
    r = np.array(0.3, np.float32)
    out.append(("dropout_infer_v13",
                model([const_node("r", r), const_node("t", f),
                       node("Dropout", ["x", "r", "t"], ["y"])], {"x": x}, ["y"], opset=13),
                {"x": x}))
    for opset in (12, 13):
        out.append(("dropout_train_v%d" % opset,
                    model([const_node("r", r), const_node("t", t),
                           node("Dropout", ["x", "r", "t"], ["y", "m"], seed=5)], {"x": x}, ["y"],
                          opset=opset), {"x": x}))
    out.append(("dropout_train_defratio_v13",
                model([const_node("t", t), node("Dropout", ["x", "", "t"], ["y", "m"], seed=3)],
                      {"x": x}, ["y"], opset=13), {"x": x}))
    # training_mode and ratio known only at run time (computed by nodes)
    one = np.array(1.0, np.float32)
    out.append(("dropout_train_runtime_v13",
                model([const_node("o", one), const_node("z", np.array(0.0, np.float32)),
                       const_node("rr", r), node("Greater", ["o", "z"], ["t"]),
                       node("Mul", ["o", "rr"], ["r"]),
                       node("Dropout", ["x", "r", "t"], ["y", "m"], seed=9)], {"x": x}, ["y"],
                      opset=13), {"x": x}))
    # a kink within an eighth of check's step: Relu(x + b) with one x + b = 3.7e-7 above 0
    # while b's step is 6e-6 |b| = 3e-6 (as batch statistics put some ReLU input of a
    # network close to 0 for any weight's step): finite differences at that step cross
    # the kink (their change from step h to h/2 does not cover it); check measures such a
    # disagreement again at h/64, where Relu is linear
    x = np.array([0.7, -0.3, 0.25, -0.5 + 3.7e-7, 0.9, -0.8], np.float32).reshape(2, 3)
    out.append(("relu_kink_within_step", model(
        [node("Add", ["x", "b"], ["s"]), node("Relu", ["s"], ["y"])], {"x": x}, ["y"],
        {"b": np.array([0.5], np.float32)}, opset=14), {"x": x}))
    # Shrink (its own generator: the cases above keep their values): default and explicit
    # lambd and bias, away from the kinks at ±lambd
    srng = np.random.default_rng(9)
    for i, attrs in enumerate(({}, {"lambd": 0.4, "bias": 0.1}, {"lambd": 0.0, "bias": -0.3})):
        lam = attrs.get("lambd", 0.5)
        for opset in (9, 17):
            x = away(srng.uniform(-2, 2, (3, 4)).astype(np.float32), [-lam, lam])
            out.append(unary("shrink_a%d_v%d" % (i, opset), "Shrink", x, opset, **attrs))
    return out
