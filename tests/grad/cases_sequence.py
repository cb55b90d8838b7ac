"""Gradient cases through sequences and optionals: SplitToSequence into items read by
SequenceAt (positive, negative and repeated positions, items no output reads), back through
ConcatFromSequence (stacked or not, from SplitToSequence's partition or SequenceConstruct's
inputs), SequenceInsert and SequenceErase (positions given or not, negative), a sequence with
two whole gradients of one static item shape, Optional and OptionalGetElement (and its
opset-18 pass-through of a tensor)."""
from helpers import model, node, rand
import numpy as np


def i64(v):
    return np.array(v, np.int64)


def cases():
    out = []
    x = rand(3, 5, 2)
    w = rand(5, 2)
    c = {"s2": i64([2, 3]), "p0": i64(0), "pm1": i64(-1), "p1": i64(1), "pm2": i64(-2)}

    def m(nodes, outs=("y",), feeds=None, opset=17, consts=c):
        feeds = feeds or {"x": x}
        return model(nodes, feeds, list(outs), consts=consts, opset=opset), feeds

    def add(name, nodes, outs=("y",), feeds=None, opset=17):
        mod, f = m(nodes, outs, feeds, opset)
        out.append(("seq_" + name, mod, f))

    # items read by SequenceAt: split on axis 1 into 2 and 3, the last twice, the first once
    add("split_at", [node("SplitToSequence", ["x", "s2"], ["S"], axis=1),
                     node("SequenceAt", ["S", "pm1"], ["a"]),
                     node("SequenceAt", ["S", "p0"], ["b0"]),
                     node("SequenceAt", ["S", "p1"], ["a2"]),
                     node("Mul", ["a", "a2"], ["y"]),
                     node("ReduceSum", ["b0"], ["z"], keepdims=0)], outs=("y", "z"))
    # parts of 1 without the axis, one item unread; opset 11
    add("split_nokeep_v11", [node("SplitToSequence", ["x"], ["S"], axis=0, keepdims=0),
                             node("SequenceAt", ["S", "p1"], ["y"])], opset=11)
    # back through ConcatFromSequence: SplitToSequence's partition, then stacked
    add("split_concat", [node("SplitToSequence", ["x", "s2"], ["S"], axis=-2),
                         node("ConcatFromSequence", ["S"], ["c"], axis=1),
                         node("Mul", ["c", "c"], ["y"])])
    add("split_stack", [node("SplitToSequence", ["x"], ["S"], axis=2, keepdims=0),
                        node("ConcatFromSequence", ["S"], ["c"], axis=0, new_axis=1),
                        node("Mul", ["c", "c"], ["y"])])
    # SequenceConstruct of two inputs, concatenated (their lengths from Shape), one item read
    feeds = {"x": x, "w": w}
    add("construct_concat", [node("Unsqueeze", ["w", "p0"], ["w3"]),
                             node("SequenceConstruct", ["x", "w3"], ["S"]),
                             node("ConcatFromSequence", ["S"], ["c"], axis=0),
                             node("SequenceAt", ["S", "p0"], ["a"]),
                             node("Mul", ["c", "c"], ["y"]),
                             node("Sin", ["a"], ["z"])], outs=("y", "z"), feeds=feeds)
    # insert (at -1, and at the end by default) and erase (at -2, and the last by default)
    add("insert_erase", [node("SplitToSequence", ["x"], ["S"], axis=0),
                         node("SequenceAt", ["S", "p0"], ["a"]),
                         node("Sin", ["a"], ["t"]),
                         node("Cos", ["a"], ["u"]),
                         node("SequenceInsert", ["S", "t", "pm1"], ["S1"]),
                         node("SequenceInsert", ["S1", "u"], ["S2"]),
                         node("SequenceErase", ["S2", "pm2"], ["S3"]),
                         node("SequenceErase", ["S3"], ["S4"]),
                         node("ConcatFromSequence", ["S4"], ["y"], axis=0, new_axis=1)])
    # two whole gradients of items of one static shape
    add("two_whole", [node("SplitToSequence", ["x"], ["S"], axis=0, keepdims=0),
                      node("ConcatFromSequence", ["S"], ["c"], axis=0, new_axis=1),
                      node("ConcatFromSequence", ["S"], ["d"], axis=1, new_axis=1),
                      node("Mul", ["c", "c"], ["y"]),
                      node("Sin", ["d"], ["z"])], outs=("y", "z"))
    # optionals: of a tensor, read twice; of a sequence; opset 18's pass-through
    add("optional", [node("Optional", ["x"], ["o"]),
                     node("OptionalGetElement", ["o"], ["a"]),
                     node("OptionalGetElement", ["o"], ["b"]),
                     node("Mul", ["a", "b"], ["y"])], opset=15)
    add("optional_seq", [node("SplitToSequence", ["x"], ["S"], axis=1),
                         node("Optional", ["S"], ["o"]),
                         node("OptionalGetElement", ["o"], ["S1"]),
                         node("SequenceAt", ["S1", "p1"], ["a"]),
                         node("Cos", ["a"], ["y"])], opset=16)
    add("get_element_v18", [node("OptionalGetElement", ["x"], ["a"]),
                            node("Cos", ["a"], ["y"])], opset=18)
    return out
