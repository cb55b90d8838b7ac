"""Gradient cases of the stats rules: ReduceSumSquare/L1/L2/LogSum/LogSumExp/Max/Min/Prod
with axes as attribute (opsets 8..13) and as input (18), keepdims 0/1, reduce-all and
noop_with_empty_axes; ReduceProd with zeros; ReduceMax/Min with two-way ties (central
differences give the even split there); NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss for every reduction, with and without weight (trained) and
ignore_index (present among the labels), on [N, C] and [N, C, d1, d2] at opsets 12, 13, 18."""
from helpers import model, node, rand
import numpy as np

REDUCE = ("ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
          "ReduceMax", "ReduceMin", "ReduceProd")


def red_input(op, shape):
    if op == "ReduceLogSum":
        return rand(*shape, low=0.2, high=1.5)
    if op in ("ReduceL1", "ReduceProd"):
        x = rand(*shape, low=0.3, high=1.3)
        sign = np.where(rand(*shape) < 0, -1, 1).astype(np.float32)
        return x * sign
    return rand(*shape)


def red_case(op, x, opset, axes=None, keep=None, noop=None):
    """axes None: no axes at all (reduce-all, or noop)"""
    attrs = {}
    if keep is not None:
        attrs["keepdims"] = keep
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    consts = None
    ins = ["x"]
    if axes is not None:
        if opset >= 18:
            ins.append("ax")
            consts = {"ax": np.array(axes, np.int64)}
        else:
            attrs["axes"] = axes
    return model([node(op, ins, ["y"], **attrs)], {"x": x}, ["y"], opset=opset, consts=consts)


def reduce_cases():
    out = []
    for op in REDUCE:
        x = red_input(op, (2, 3, 4))
        tag = op[6:].lower()
        for opset in (13, 18):
            for keep in (0, 1):
                out.append(("%s_ax02_keep%d_v%d" % (tag, keep, opset),
                            red_case(op, x, opset, [0, 2], keep), {"x": x}))
            out.append(("%s_axneg1_v%d" % (tag, opset), red_case(op, x, opset, [-1], 0),
                        {"x": x}))
            out.append(("%s_all_v%d" % (tag, opset), red_case(op, x, opset, None, 0), {"x": x}))
        out.append(("%s_ax1_v11" % tag, red_case(op, x, 11, [1], 1), {"x": x}))
        # noop_with_empty_axes: an empty axes input, and no axes input at all
        out.append(("%s_noop_empty_v18" % tag, red_case(op, x, 18, [], 0, noop=1), {"x": x}))
        out.append(("%s_noop_none_v18" % tag, red_case(op, x, 18, None, 1, noop=1), {"x": x}))
        out.append(("%s_emptyaxes_all_v18" % tag, red_case(op, x, 18, [], 1, noop=0), {"x": x}))
    # forms before Equal on floats (11) and Sign (9)
    for op in ("ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1"):
        x = red_input(op, (3, 4))
        out.append(("%s_ax1_v8" % op[6:].lower(), red_case(op, x, 8, [1], 0), {"x": x}))
    # ReduceProd with one zero in a slice, two zeros in another, none in the third
    x = red_input("ReduceProd", (3, 4))
    x[0, 1] = 0
    x[1, 0] = x[1, 3] = 0
    for opset in (8, 13, 18):
        out.append(("prod_zeros_v%d" % opset, red_case("ReduceProd", x, opset, [1], 0),
                    {"x": x}))
        out.append(("prod_zeros_all_v%d" % opset, red_case("ReduceProd", x, opset, None, 1),
                    {"x": x}))
    # ReduceL2 over an all-zero slice, ReduceL1 at zeros: 0 there (central differences agree)
    x = rand(3, 4)
    x[1, :] = 0
    x[0, 2] = 0
    for opset in (8, 18):
        for op in ("ReduceL2", "ReduceL1"):
            out.append(("%s_zeros_v%d" % (op[6:].lower(), opset), red_case(op, x, opset, [1], 0),
                        {"x": x}))
    # ReduceMax/Min with two-way ties (and a tie across slices that is no max)
    for op in ("ReduceMax", "ReduceMin"):
        x = rand(3, 4, low=-0.9, high=0.9)
        x[0, 1] = x[0, 3] = 1.5 if op == "ReduceMax" else -1.5
        x[2, 0] = x[2, 2] = 1.2 if op == "ReduceMax" else -1.2
        x[1, 0] = x[1, 2] = 0.1
        for opset in (8, 13, 18):
            out.append(("reduce%s_ties_v%d" % (op[6:].lower(), opset), red_case(op, x, opset, [1], 1),
                        {"x": x}))
    return out


def loss_cases():
    out = []
    shapes = {"2d": ((5, 4), (5,)), "4d": ((2, 3, 2, 2), (2, 2, 2))}
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        tag = "nll" if op.startswith("Neg") else "sce"
        for sname, (xs, ts) in shapes.items():
            C = xs[1]
            for red in ("none", "sum", "mean"):
                for weighted in (0, 1):
                    for ign in (0, 1):
                        x = rand(*xs, low=-2.0, high=1.0)
                        t = np.arange(int(np.prod(ts)), dtype=np.int64).reshape(ts) % C
                        attrs = {"reduction": red}
                        ig = 2 if sname == "2d" else -1
                        if ign:
                            attrs["ignore_index"] = ig
                            t.flat[1] = ig
                            if sname == "4d":
                                t.flat[-1] = ig
                        ins = ["x", "t"]
                        weights = {}
                        if weighted:
                            ins.append("w")
                            weights["w"] = rand(C, low=0.3, high=1.5)
                        opset = 12 if (weighted + ign) % 2 else 13
                        out.append(("%s_%s_%s_w%d_ig%d_v%d" % (tag, sname, red, weighted, ign,
                                                              opset),
                                    model([node(op, ins, ["loss"], **attrs)], {"x": x}, ["loss"],
                                          weights, opset=opset, consts={"t": t}), {"x": x}))
    # SoftmaxCrossEntropyLoss with its log_prob output receiving a gradient too; opset 18
    # (ReduceLogSumExp takes axes as an input there); int32 labels; rank 3
    for red, xs, ts, opset, lt in (("mean", (3, 4), (3,), 13, np.int64),
                                   ("none", (2, 3, 2, 2), (2, 2, 2), 12, np.int64),
                                   ("sum", (2, 4, 3), (2, 3), 18, np.int32),
                                   ("mean", (2, 3, 2, 2), (2, 2, 2), 18, np.int64)):
        for lp in (0, 1):
            x = rand(*xs, low=-2.0, high=1.0)
            C = xs[1]
            t = (np.arange(int(np.prod(ts))).reshape(ts) * 7 % C).astype(lt)
            t.flat[0] = 1
            outs = ["loss", "lp"] if lp else ["loss"]
            out.append(("sce_%s_r%d_%s_lp%d_v%d" % (red, len(xs), np.dtype(lt).name, lp, opset),
                        model([node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], outs,
                                    reduction=red, ignore_index=1)],
                              {"x": x}, outs, {"w": rand(C, low=0.3, high=1.5)}, opset=opset,
                              consts={"t": t}), {"x": x}))
    # ignore_index at the ends of the labels' type or past it (found by fuzzing: the rule
    # made the index a double, and INT64_MAX converted back is undefined): matches no label
    for ig, lt in ((2**63 - 1, np.int64), (-2**63, np.int64), (2**31, np.int32)):
        x = rand(3, 4, low=-2.0, high=1.0)
        t = np.array([0, 3, 1], lt)
        out.append(("sce_ignore_%s_%s" % ("m" if ig < 0 else "p", np.dtype(lt).name),
                    model([node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["loss"],
                                ignore_index=ig)], {"x": x}, ["loss"],
                          {"w": rand(4, low=0.3, high=1.5)}, opset=13, consts={"t": t}),
                    {"x": x}))
    # the log_prob output alone, and a NegativeLogLikelihoodLoss fed by LogSoftmax
    x = rand(3, 4)
    t = np.array([0, 3, 1], np.int64)
    out.append(("sce_logprob_only",
                model([node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss", "lp"]),
                       node("Identity", ["lp"], ["z"])], {"x": x}, ["z"], opset=13,
                      consts={"t": t}), {"x": x}))
    out.append(("nll_after_logsoftmax_v18",
                model([node("LogSoftmax", ["x"], ["p"], axis=1),
                       node("NegativeLogLikelihoodLoss", ["p", "t", "w"], ["loss"])], {"x": x},
                      ["loss"], {"w": rand(4, low=0.3, high=1.5)}, opset=18, consts={"t": t}),
                {"x": x}))
    # unknown dims (the class count comes from Shape at run time)
    for op, red in (("NegativeLogLikelihoodLoss", "mean"), ("SoftmaxCrossEntropyLoss", "sum")):
        x = rand(2, 3, 4)
        t = np.array([[0, 2, 1, 1], [2, 1, 0, 1]], np.int64)
        m = model([node(op, ["x", "t", "w"], ["loss"], reduction=red, ignore_index=1)],
                  {"x": x}, ["loss"], {"w": rand(3, low=0.3, high=1.5)}, opset=13,
                  consts={"t": t})
        dynamic(m)
        out.append(("%s_dynamic" % ("nll" if op.startswith("Neg") else "sce"), m, {"x": x}))
    x = rand(2, 3, 4)
    m = red_case("ReduceMax", x, 18, [1], 0)
    dynamic(m)
    out.append(("max_dynamic_v18", m, {"x": x}))
    return out


def dynamic(m):
    """every dim of the graph inputs unknown, and no inferred shapes"""
    del m.graph.value_info[:]
    for v in m.graph.input:
        for i, d in enumerate(v.type.tensor_type.shape.dim):
            d.dim_param = "d%d" % i


def cases():
    return reduce_cases() + loss_cases()
