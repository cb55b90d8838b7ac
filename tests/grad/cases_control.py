"""Gradient cases of the control-flow rules (src/grad/control.c): If (each branch taken; a
branch that does not read a weight; outputs taken from outside), Loop (loop-carried values,
scan outputs, outer weights, a fixed trip count and an early exit, zero iterations; a
carried sequence the body appends to, stacked or concatenated after; a carried sequence the
body reads (its last item, a front insert, its length, an erase: recomputed per iteration)
and a Loop's output sequence read item by item after it), Scan (states, scan
inputs and outputs along other axes and in reverse), Scan-8 (opset 8: a batch axis,
sequence_lens with shorter and empty rows, directions, two scan inputs one reversed), and
nesting (an If inside a Loop, a Loop inside a Scan, reading weights two levels out); and a
sequence of the enclosing graph that an If, Loop or Scan reads item by item (one and two
levels down), or an optional of a tensor it reads (present or empty)."""
import numpy as np
from onnx import TensorProto, helper

from helpers import RNG, model, node, rand

F = TensorProto.FLOAT


def vi(name, dt=F, shape=None):
    return helper.make_tensor_value_info(name, dt, shape)


def graph(nodes, name, ins, outs):
    return helper.make_graph(nodes, name, ins, outs)


def one(name, n, inputs, outputs, weights, consts=None, opset=16, shapes=None):
    """a one-node model; shapes: output shapes where ONNX shape inference gives none"""
    m = model([n], inputs, outputs, weights, opset=opset, consts=consts)
    return (name, typed(m, shapes), inputs)


def typed(m, shapes=None):
    """m with a type on every output: shapes where ONNX shape inference gives none"""
    for o in m.graph.output:
        t = o.type.tensor_type
        if not t.HasField("shape") or not t.elem_type:
            o.CopyFrom(vi(o.name, F, (shapes or {}).get(o.name)))
            if o.name not in (shapes or {}):
                o.type.tensor_type.shape.dim.add()  # rank unknown to inference: a dim_param
                o.type.tensor_type.shape.dim[0].dim_param = "d_" + o.name
    return m


def loop_body():
    # body(i, cond, s, t) -> (cond, tanh(s·w + x·i) , t + s, scan: s·v)
    return graph([node("Cast", ["i"], ["fi"], to=F),
                  node("Mul", ["x", "fi"], ["xi"]),
                  node("Mul", ["s", "w"], ["sw"]),
                  node("Add", ["sw", "xi"], ["pre"]),
                  node("Tanh", ["pre"], ["s2"]),
                  node("Add", ["t", "s"], ["t2"]),
                  node("Mul", ["s", "v"], ["sc"]),
                  node("Identity", ["cond"], ["c2"])],
                 "body", [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
                          vi("s"), vi("t")],
                 [vi("c2", TensorProto.BOOL, []), vi("s2"), vi("t2"), vi("sc")])


# the Scan-8 and carried-sequence cases draw from their own generator: the shared one's
# draws (and the data of every later case file) stay as they were
_RNG8 = np.random.default_rng(8)


def lrand(*shape, low=-1.0, high=1.0):
    return _RNG8.uniform(low, high, shape).astype(np.float32)


def cases():
    out = []
    x = rand(2, 3)
    # If: then reads w and x, else x only; outputs y and z
    for opset in (11, 16):
        then_g = graph([node("Mul", ["x", "w"], ["t1"]), node("Sin", ["t1"], ["t2"]),
                        node("Add", ["x", "w"], ["t3"])], "then", [], [vi("t2"), vi("t3")])
        else_g = graph([node("Mul", ["x", "x"], ["e1"]), node("Identity", ["x"], ["e2"])],
                       "else", [], [vi("e1"), vi("e2")])
        for c in (True, False):
            n = node("If", ["c"], ["y", "z"], then_branch=then_g, else_branch=else_g)
            out.append(one("if_%s_v%d" % ("then" if c else "else", opset), n,
                           {"x": x}, ["y", "z"], {"w": rand(3)},
                           consts={"c": np.array(c)}, opset=opset))
    # Loop with a trip count, loop-carried s and t, a scan output, outer x, w, v
    for opset, trip in ((11, 3), (16, 4), (16, 0)):
        n = node("Loop", ["m", "", "s0", "t0"], ["s", "t", "scan"], body=loop_body())
        out.append(one("loop_trip%d_v%d" % (trip, opset), n, {"x": x},
                       ["s", "t", "scan"],
                       {"s0": rand(2, 3), "t0": rand(2, 3), "w": rand(3), "v": rand(3)},
                       consts={"m": np.array(trip, np.int64)}, opset=opset,
                       shapes={"s": [2, 3], "t": [2, 3], "scan": [trip, 2, 3]}))
    # Loop that stops on its condition: while sum(s) < lim, s ← s + x·w
    body = graph([node("Mul", ["x", "w"], ["xw"]), node("Add", ["s", "xw"], ["s2"]),
                  node("ReduceSum", ["s2"], ["tot"], keepdims=0),
                  node("Less", ["tot", "lim"], ["c2"])],
                 "body", [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
                          vi("s")], [vi("c2", TensorProto.BOOL, []), vi("s2")])
    n = node("Loop", ["m", "c", "s0"], ["s"], body=body)
    out.append(one("loop_early_exit", n, {"x": rand(2, 3, low=0.2, high=0.6)}, ["s"],
                   {"s0": rand(2, 3, low=0, high=0.1), "w": rand(3, low=0.5, high=1.0)},
                   consts={"m": np.array(20, np.int64), "c": np.array(True),
                           "lim": np.array(4.1, np.float32)}, shapes={"s": [2, 3]}))
    # Scan: running state and an output per step, along axis 0 and along other axes, reversed
    body = graph([node("Mul", ["acc", "k"], ["ak"]), node("Add", ["ak", "xt"], ["acc2"]),
                  node("Sigmoid", ["acc2"], ["y"])], "body", [vi("acc"), vi("xt")],
                 [vi("acc2"), vi("y")])
    n = node("Scan", ["a0", "xs"], ["a", "ys"], body=body, num_scan_inputs=1)
    out.append(one("scan", n, {"xs": rand(4, 2, 3)}, ["a", "ys"],
                   {"a0": rand(2, 3), "k": rand(3)}, opset=16,
                   shapes={"a": [2, 3], "ys": [4, 2, 3]}))
    n = node("Scan", ["a0", "xs"], ["a", "ys"], body=body, num_scan_inputs=1,
             scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[-1],
             scan_output_directions=[1])
    out.append(one("scan_axes_dirs", n, {"xs": rand(2, 4, 3)}, ["a", "ys"],
                   {"a0": rand(2, 3), "k": rand(3)}, opset=11,
                   shapes={"a": [2, 3], "ys": [2, 3, 4]}))
    # Scan-8 (opset 8): batch axis 0, steps along axis 1, optional sequence_lens; the body
    # sees one row's state [3] and slice [3]; rows past their length keep their state and
    # give zeros
    body8 = graph([node("Mul", ["acc", "k"], ["ak"]), node("Add", ["ak", "xt"], ["acc2"]),
                   node("Sigmoid", ["acc2"], ["y"])], "body", [vi("acc", F, [3]),
                   vi("xt", F, [3])], [vi("acc2", F, [3]), vi("y", F, [3])])
    for tag, lens, dirs in (("", None, None), ("_lens", [4, 2, 3], None),
                            ("_rev", None, [1]), ("_rev_lens", [1, 4, 3], [1]),
                            ("_lens0", [3, 0, 4], None)):
        attrs = {"directions": dirs} if dirs else {}
        n = node("Scan", ["L" if lens else "", "a0", "xs"], ["a", "ys"], body=body8,
                 num_scan_inputs=1, **attrs)
        consts = {"L": np.array(lens, np.int64)} if lens else None
        out.append(one("scan8" + tag, n, {"xs": lrand(3, 4, 3)}, ["a", "ys"],
                       {"a0": lrand(3, 3), "k": lrand(3)}, consts=consts, opset=8,
                       shapes={"a": [3, 3], "ys": [3, 4, 3]}))
    # Scan-8 with two scan inputs, one read in reverse, two states and a state that only
    # the scan outputs read
    body8 = graph([node("Mul", ["h", "w"], ["hw"]), node("Add", ["hw", "u"], ["p"]),
                   node("Tanh", ["p"], ["h2"]), node("Mul", ["c", "v"], ["cv"]),
                   node("Add", ["cv", "h2"], ["c2"]), node("Mul", ["h2", "c"], ["y"])],
                  "body", [vi("h", F, [2]), vi("c", F, [2]), vi("u", F, [2]),
                           vi("v", F, [2])],
                  [vi("h2", F, [2]), vi("c2", F, [2]), vi("y", F, [2])])
    n = node("Scan", ["L", "h0", "c0", "xs", "xs2"], ["h", "c", "ys"], body=body8,
             num_scan_inputs=2, directions=[0, 1])
    out.append(one("scan8_two_inputs", n, {"xs": lrand(2, 5, 2), "xs2": lrand(2, 5, 2)},
                   ["h", "c", "ys"], {"h0": lrand(2, 2), "c0": lrand(2, 2), "w": lrand(2)},
                   consts={"L": np.array([5, 3], np.int64)}, opset=8,
                   shapes={"h": [2, 2], "c": [2, 2], "ys": [2, 5, 2]}))
    # Loop carrying a sequence (opset 13+: a scripted loop appending to a list): each
    # iteration appends s·v to it; the sequence stacked after the loop
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    for opset, trip in ((13, 3), (16, 4), (16, 1)):
        body = graph([node("Cast", ["i"], ["fi"], to=F), node("Mul", ["x", "fi"], ["xi"]),
                      node("Mul", ["s", "w"], ["sw"]), node("Add", ["sw", "xi"], ["pre"]),
                      node("Tanh", ["pre"], ["s2"]), node("Mul", ["s2", "v"], ["item"]),
                      node("SequenceInsert", ["seq", "item"], ["seq2"]),
                      node("Identity", ["cond"], ["c2"])],
                     "body", [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
                              vi("s"), helper.make_value_info("seq", seq_t)],
                     [vi("c2", TensorProto.BOOL, []), vi("s2"),
                      helper.make_value_info("seq2", seq_t)])
        nodes = [node("SequenceEmpty", [], ["seq0"], dtype=F),
                 node("Loop", ["m", "", "s0", "seq0"], ["s", "seq"], body=body),
                 node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=1)]
        m = model(nodes, {"x": x}, ["s", "y"], {"s0": lrand(2, 3), "w": lrand(3), "v": lrand(3)},
                  opset=opset, consts={"m": np.array(trip, np.int64)})
        out.append(("loop_seq_append_trip%d_v%d" % (trip, opset),
                    typed(m, {"s": [2, 3], "y": [trip, 2, 3]}), {"x": x}))
        # the items concatenated along axis 1 (no new axis): their lengths counted by a Loop
        nodes[-1] = node("ConcatFromSequence", ["seq"], ["y"], axis=1)
        m = model(nodes, {"x": x}, ["s", "y"], {"s0": lrand(2, 3), "w": lrand(3), "v": lrand(3)},
                  opset=opset, consts={"m": np.array(trip, np.int64)})
        out.append(("loop_seq_concat_trip%d_v%d" % (trip, opset),
                    typed(m, {"s": [2, 3], "y": [2, 3 * trip]}), {"x": x}))
    # nested: an If inside a Loop, reading w from the top graph
    inner_then = graph([node("Mul", ["s", "w"], ["it"])], "then", [], [vi("it")])
    inner_else = graph([node("Sin", ["s"], ["ie0"]), node("Add", ["ie0", "w"], ["ie"])],
                       "else", [], [vi("ie")])
    body = graph([node("Cast", ["i"], ["fi"], to=F), node("Less", ["fi", "half"], ["small"]),
                  node("If", ["small"], ["s2"], then_branch=inner_then, else_branch=inner_else),
                  node("Identity", ["cond"], ["c2"])],
                 "body", [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
                          vi("s")], [vi("c2", TensorProto.BOOL, []), vi("s2")])
    n = node("Loop", ["m", "", "s0"], ["s"], body=body)
    out.append(one("loop_nested_if", n, {"s0": rand(2, 3)}, ["s"],
                   {"w": rand(3, low=0.5, high=1.5)},
                   consts={"m": np.array(4, np.int64), "half": np.array(1.5, np.float32)},
                   shapes={"s": [2, 3]}))
    # nested: a Loop inside a Scan, reading k from the top graph
    lbody = graph([node("Mul", ["v", "k"], ["v1"]), node("Tanh", ["v1"], ["v2"]),
                   node("Identity", ["cond"], ["c2"])],
                  "lbody", [vi("j", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
                            vi("v")], [vi("c2", TensorProto.BOOL, []), vi("v2")])
    body = graph([node("Add", ["acc", "xt"], ["acc2"]),
                  node("Loop", ["two", "", "acc2"], ["y"], body=lbody)],
                 "body", [vi("acc"), vi("xt")], [vi("acc2"), vi("y", F, [2, 3])])
    n = node("Scan", ["a0", "xs"], ["a", "ys"], body=body, num_scan_inputs=1)
    out.append(one("scan_nested_loop", n, {"xs": rand(3, 2, 3)}, ["a", "ys"],
                   {"a0": rand(2, 3), "k": rand(3)}, consts={"two": np.array(2, np.int64)},
                   shapes={"a": [2, 3], "ys": [3, 2, 3]}))
    return out


# the cases of sequences a Loop's body reads, or read after the Loop, draw from their own
# generator too
_RNGS = np.random.default_rng(12)


def srand(*shape, low=-1.0, high=1.0):
    return _RNGS.uniform(low, high, shape).astype(np.float32)


def reads(g):
    """the names the nodes of graph g and of its subgraphs read"""
    names = set()
    for nd in g.node:
        names.update(nd.input)
        for a in nd.attribute:
            if a.HasField("g"):
                names |= reads(a.g)
    return names


def seq_read_cases():
    """A Loop's carried sequence that its body reads (the gradient recomputes the sequence at
    each iteration): the last item (a list recurrence h_t = tanh(h_{t-1}·w + x·t)), items
    inserted at the front and the first read, the length read, a window kept by an erase;
    and a Loop's output sequence read by SequenceAt after the Loop (zeros like its items
    made at run time)."""
    out = []
    I = TensorProto.INT64
    # items of a static shape (the broadcasting gradients of the ops reading them need ranks)
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2, 3]))
    x = srand(2, 3)

    def body(nodes, extra_in=()):
        return graph(nodes + [node("Identity", ["cond"], ["c2"])], "body",
                     [vi("i", I, []), vi("cond", TensorProto.BOOL, []),
                      helper.make_value_info("seq", seq_t)] + list(extra_in),
                     [vi("c2", TensorProto.BOOL, []), helper.make_value_info("seq2", seq_t)])

    step = [node("Cast", ["i"], ["fi"], to=F), node("Mul", ["x", "fi"], ["xi"])]
    bodies = {
        # the last item read: h_t = tanh(h_{t-1}·w + x·i), appended
        "last": body(step + [node("SequenceAt", ["seq", "m1"], ["h"]),
                             node("Mul", ["h", "w"], ["hw"]), node("Add", ["hw", "xi"], ["p"]),
                             node("Tanh", ["p"], ["h2"]),
                             node("SequenceInsert", ["seq", "h2"], ["seq2"])]),
        # inserted at the front, the first item read
        "front": body(step + [node("SequenceAt", ["seq", "z0"], ["h"]),
                              node("Mul", ["h", "w"], ["hw"]), node("Add", ["hw", "xi"], ["p"]),
                              node("Sin", ["p"], ["h2"]),
                              node("SequenceInsert", ["seq", "h2", "z0"], ["seq2"])]),
        # the length read (no gradient through it) and the last item: h·w·len + x·i
        "length": body(step + [node("SequenceLength", ["seq"], ["n"]),
                               node("Cast", ["n"], ["fn"], to=F),
                               node("SequenceAt", ["seq", "m1"], ["h"]),
                               node("Mul", ["h", "w"], ["hw"]), node("Mul", ["hw", "fn"], ["hn"]),
                               node("Add", ["hn", "xi"], ["p"]), node("Tanh", ["p"], ["h2"]),
                               node("SequenceInsert", ["seq", "h2"], ["seq2"])]),
        # a window of two items: the new one from both, the first erased
        "erase": body(step + [node("SequenceAt", ["seq", "z0"], ["a"]),
                              node("SequenceAt", ["seq", "m1"], ["h"]),
                              node("Mul", ["h", "w"], ["hw"]), node("Add", ["hw", "a"], ["q"]),
                              node("Add", ["q", "xi"], ["p"]), node("Tanh", ["p"], ["h2"]),
                              node("SequenceInsert", ["seq", "h2"], ["seq1"]),
                              node("SequenceErase", ["seq1", "z0"], ["seq2"])]),
    }
    # the length read inside an If of the body (a subgraph reading the carried sequence: the
    # recomputing copy renames its values and their outer references), the last item outside
    then_g = graph([node("SequenceLength", ["seq"], ["nt"]), node("Cast", ["nt"], ["ft"], to=F)],
                   "then", [], [vi("ft", F, [])])
    else_g = graph([node("SequenceLength", ["seq"], ["ne"]), node("Cast", ["ne"], ["fe"], to=F),
                    node("Mul", ["fe", "half"], ["fh"])], "else", [], [vi("fh", F, [])])
    bodies["if"] = body(step + [node("Less", ["fi", "half"], ["small"]),
                                node("If", ["small"], ["q"], then_branch=then_g,
                                     else_branch=else_g),
                                node("SequenceAt", ["seq", "m1"], ["h"]),
                                node("Mul", ["h", "w"], ["hw"]), node("Mul", ["hw", "q"], ["hq"]),
                                node("Add", ["hq", "xi"], ["p"]), node("Tanh", ["p"], ["h2"]),
                                node("SequenceInsert", ["seq", "h2"], ["seq2"])])
    consts = {"m1": np.array(-1, np.int64), "z0": np.array(0, np.int64),
              "half": np.array(1.5, np.float32)}
    for kind, b in bodies.items():
        for opset, trip in ((13, 3), (16, 4), (16, 0)):
            init = ["h0", "h1"] if kind == "erase" else ["h0"]
            nodes = [node("SequenceConstruct", init, ["seq0"]),
                     node("Loop", ["m", "", "seq0"], ["seq"], body=b),
                     node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=1)]
            weights = {"w": srand(3)}
            for h in init:
                weights[h] = srand(2, 3)
            used = {k: v for k, v in consts.items() if k in reads(b)}
            m = model(nodes, {"x": x}, ["y"], weights, opset=opset,
                      consts=dict(used, m=np.array(trip, np.int64)))
            count = len(init) + (0 if kind == "erase" else trip)
            out.append(("loop_seq_read_%s_trip%d_v%d" % (kind, trip, opset),
                        typed(m, {"y": [count, 2, 3]}), {"x": x}))
    # a Loop's output sequence read after it by SequenceAt (its 2nd and last items), and
    # both read and stacked (a whole gradient and item gradients)
    b = graph([node("Cast", ["i"], ["fi"], to=F), node("Mul", ["x", "fi"], ["xi"]),
               node("Mul", ["s", "w"], ["sw"]), node("Add", ["sw", "xi"], ["pre"]),
               node("Tanh", ["pre"], ["s2"]), node("SequenceInsert", ["seq", "s2"], ["seq2"]),
               node("Identity", ["cond"], ["c2"])],
              "body", [vi("i", I, []), vi("cond", TensorProto.BOOL, []), vi("s"),
                       helper.make_value_info("seq", seq_t)],
              [vi("c2", TensorProto.BOOL, []), vi("s2"), helper.make_value_info("seq2", seq_t)])
    for opset in (13, 16):
        for stacked in (False, True):
            nodes = [node("SequenceEmpty", [], ["seq0"], dtype=F),
                     node("Loop", ["m", "", "s0", "seq0"], ["s", "seq"], body=b),
                     node("SequenceAt", ["seq", "one"], ["a"]),
                     node("SequenceAt", ["seq", "m1"], ["c"]),
                     node("Mul", ["a", "c"], ["y"])]
            outs, shapes = ["y"], {"y": [2, 3]}
            if stacked:
                nodes.append(node("ConcatFromSequence", ["seq"], ["z"], axis=0, new_axis=1))
                outs, shapes = ["y", "z"], {"y": [2, 3], "z": [4, 2, 3]}
            m = model(nodes, {"x": x}, outs, {"s0": srand(2, 3), "w": srand(3)}, opset=opset,
                      consts={"m": np.array(4, np.int64), "one": np.array(1, np.int64),
                              "m1": np.array(-1, np.int64)})
            out.append(("loop_seq_out_at%s_v%d" % ("_stacked" if stacked else "", opset),
                        typed(m, shapes), {"x": x}))
    return out


# the cases of sequences of the enclosing graph a subgraph reads draw from their own
# generator too
_RNGO = np.random.default_rng(1212)


def orand(*shape, low=-1.0, high=1.0):
    return _RNGO.uniform(low, high, shape).astype(np.float32)


def outer_seq_cases():
    """A sequence of the enclosing graph that a subgraph reads item by item (its gradient a
    sequence: the items' gradients, zeros for the items not read): an If (each branch taken,
    one branch reading no item, the sequence also stacked outside the If), a Loop (the item
    at the iteration number, and at a fixed position), a Scan, and two levels (a Loop inside
    an If, an If inside a Loop), and a Loop inserting into it (whole gradients; empty or
    not).  The sequences come from SequenceConstruct, SplitToSequence, SequenceInsert and a
    Loop's output (zeros like it made at run time)."""
    out = []
    I, B = TensorProto.INT64, TensorProto.BOOL
    x = orand(2, 3)
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2, 3]))
    # the sequence: [x·w, sin(u), u·x] (SequenceConstruct), or the rows of W (SplitToSequence)
    make = {"construct": [node("Mul", ["x", "w"], ["a0"]), node("Sin", ["u"], ["a1"]),
                          node("Mul", ["u", "x"], ["a2"]),
                          node("SequenceConstruct", ["a0", "a1", "a2"], ["S"])],
            "split": [node("Mul", ["W", "w"], ["Ww"]),
                      node("SplitToSequence", ["Ww"], ["S"], axis=0, keepdims=0)]}
    weights = {"construct": lambda: {"w": orand(3), "u": orand(2, 3)},
               "split": lambda: {"w": orand(3), "W": orand(3, 2, 3)}}
    consts = {"one": np.array(1, np.int64), "m1": np.array(-1, np.int64),
              "z0": np.array(0, np.int64), "three": np.array(3, np.int64)}

    def add(name, nodes, outs, shapes, opset, src="construct"):
        n_all = make[src] + nodes
        used = set()
        for nd in n_all:
            used |= set(nd.input)
            for a in nd.attribute:
                if a.HasField("g"):
                    used |= reads(a.g)
        m = model(n_all, {"x": x}, outs, weights[src](), opset=opset,
                  consts={k: v for k, v in consts.items() if k in used})
        out.append(("outer_seq_%s_%s_v%d" % (name, src, opset), typed(m, shapes), {"x": x}))

    # If: then reads items 1 and -1, else item 0 (or no item)
    then_g = graph([node("SequenceAt", ["S", "one"], ["t1"]),
                    node("SequenceAt", ["S", "m1"], ["t2"]),
                    node("Mul", ["t1", "t2"], ["t3"]), node("Tanh", ["t3"], ["ty"])],
                   "then", [], [vi("ty", F, [2, 3])])
    else_g = graph([node("SequenceAt", ["S", "z0"], ["e1"]), node("Sin", ["e1"], ["ey"])],
                   "else", [], [vi("ey", F, [2, 3])])
    else_none = graph([node("Cos", ["x"], ["ey"])], "else", [], [vi("ey", F, [2, 3])])
    for opset in (13, 16):
        for c in (True, False):
            for tag, eg in (("", else_g), ("_else_none", else_none)):
                nodes = [node("If", ["c"], ["y"], then_branch=then_g, else_branch=eg)]
                consts["c"] = np.array(c)
                add("if_%s%s" % ("then" if c else "else", tag), nodes, ["y"],
                    {"y": [2, 3]}, opset)
    # the If's gradient added to a whole one: the sequence also stacked outside
    consts["c"] = np.array(True)
    nodes = [node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             node("ConcatFromSequence", ["S"], ["z"], axis=0, new_axis=1)]
    add("if_stacked", nodes, ["y", "z"], {"y": [2, 3], "z": [3, 2, 3]}, 16)
    add("if_stacked", nodes, ["y", "z"], {"y": [2, 3], "z": [3, 2, 3]}, 16, "split")

    def body(nodes, state=("s",)):
        return graph(nodes + [node("Identity", ["cond"], ["c2"])], "body",
                     [vi("i", I, []), vi("cond", B, [])] + [vi(k, F, [2, 3]) for k in state],
                     [vi("c2", B, [])] + [vi(k + "2", F, [2, 3]) for k in state])

    # Loop: s ← tanh(s·S[i] + x), the item at the iteration number; and s ← sin(s + S[1])·S[i]
    at_i = body([node("SequenceAt", ["S", "i"], ["h"]), node("Mul", ["s", "h"], ["sh"]),
                 node("Add", ["sh", "x"], ["p"]), node("Tanh", ["p"], ["s2"])])
    fixed = body([node("SequenceAt", ["S", "one"], ["h"]), node("Add", ["s", "h"], ["p"]),
                  node("Sin", ["p"], ["q"]), node("SequenceAt", ["S", "i"], ["g"]),
                  node("Mul", ["q", "g"], ["s2"])])
    for tag, b in (("at_i", at_i), ("fixed", fixed)):
        for opset, trip in ((13, 3), (16, 2)):
            consts["m"] = np.array(trip, np.int64)
            nodes = [node("Loop", ["m", "", "x"], ["y"], body=b)]
            add("loop_%s_trip%d" % (tag, trip), nodes, ["y"], {"y": [2, 3]}, opset)
            add("loop_%s_trip%d" % (tag, trip), nodes, ["y"], {"y": [2, 3]}, opset, "split")
    # Scan over the rows of xs: acc ← tanh(acc·S[1] + xt)·S[0], one output per step
    sbody = graph([node("SequenceAt", ["S", "one"], ["h"]), node("Mul", ["acc", "h"], ["ah"]),
                   node("Add", ["ah", "xt"], ["p"]), node("Tanh", ["p"], ["q"]),
                   node("SequenceAt", ["S", "z0"], ["g"]), node("Mul", ["q", "g"], ["acc2"]),
                   node("Sin", ["acc2"], ["yt"])],
                  "body", [vi("acc", F, [2, 3]), vi("xt", F, [2, 3])],
                  [vi("acc2", F, [2, 3]), vi("yt", F, [2, 3])])
    xs = orand(4, 2, 3)
    for src in ("construct", "split"):
        for opset in (13, 16):
            n_all = make[src] + [node("Scan", ["x", "xs"], ["a", "ys"], body=sbody,
                                      num_scan_inputs=1)]
            m = model(n_all, {"x": x, "xs": xs}, ["a", "ys"], weights[src](), opset=opset,
                      consts={"one": consts["one"], "z0": consts["z0"]})
            out.append(("outer_seq_scan_%s_v%d" % (src, opset),
                        typed(m, {"a": [2, 3], "ys": [4, 2, 3]}), {"x": x, "xs": xs}))
    # two levels: an If whose then branch runs the Loop reading S[i], else reads S[-1]
    consts["m"] = np.array(3, np.int64)
    loop_then = graph([node("Loop", ["m", "", "x"], ["ly"], body=at_i)], "then", [],
                      [vi("ly", F, [2, 3])])
    seq_else = graph([node("SequenceAt", ["S", "m1"], ["e1"]), node("Mul", ["e1", "x"], ["ey"])],
                     "else", [], [vi("ey", F, [2, 3])])
    for c in (True, False):
        consts["c"] = np.array(c)
        nodes = [node("If", ["c"], ["y"], then_branch=loop_then, else_branch=seq_else)]
        add("if_loop_%s" % ("then" if c else "else"), nodes, ["y"], {"y": [2, 3]}, 16)
    # two levels: a Loop whose body's If reads S[i] (then) or S[0] (else), on i < 1.5
    inner_then = graph([node("SequenceAt", ["S", "i"], ["h"]), node("Mul", ["s", "h"], ["it"])],
                       "then", [], [vi("it", F, [2, 3])])
    inner_else = graph([node("SequenceAt", ["S", "z0"], ["h0"]), node("Add", ["s", "h0"], ["q"]),
                        node("Tanh", ["q"], ["ie"])], "else", [], [vi("ie", F, [2, 3])])
    b = body([node("Cast", ["i"], ["fi"], to=F), node("Less", ["fi", "half"], ["small"]),
              node("If", ["small"], ["s2"], then_branch=inner_then, else_branch=inner_else)])
    consts["half"] = np.array(1.5, np.float32)
    nodes = [node("Loop", ["m", "", "x"], ["y"], body=b)]
    add("loop_if", nodes, ["y"], {"y": [2, 3]}, 16)
    add("loop_if", nodes, ["y"], {"y": [2, 3]}, 13, "split")
    # the sequence a Loop's output (zeros like it, and the sums, made by Loops at run time),
    # read by a second Loop at the iteration number
    mk = body([node("Mul", ["s", "w"], ["sw"]), node("Sin", ["sw"], ["s2"]),
               node("SequenceInsert", ["seq", "s2"], ["seq2"])])
    mk.input.append(helper.make_value_info("seq", seq_t))
    mk.output.append(helper.make_value_info("seq2", seq_t))
    nodes = [node("SequenceEmpty", [], ["S0"], dtype=F),
             node("Loop", ["three", "", "x", "S0"], ["s3", "S"], body=mk),
             node("Loop", ["three", "", "x"], ["y"], body=at_i)]
    m = model(nodes, {"x": x}, ["y"], {"w": orand(3)}, opset=16,
              consts={"three": consts["three"]})
    out.append(("outer_seq_loop_at_i_from_loop_v16", typed(m, {"y": [2, 3]}), {"x": x}))
    # a Loop inserting into the outer sequence (its gradient a whole sequence per iteration,
    # summed over them), the sequence empty or of one item: s ← tanh(SequenceInsert(S, s·w)[0]
    # + s)
    ins = body([node("Mul", ["s", "w"], ["sw"]), node("SequenceInsert", ["S", "sw"], ["T"]),
                node("SequenceAt", ["T", "z0"], ["c0"]), node("Reshape", ["c0", "shp"], ["c"]),
                node("Add", ["c", "s"], ["r"]), node("Tanh", ["r"], ["s2"])])
    for tag, items in (("empty", []), ("one", ["xu"])):
        nodes = [node("Mul", ["x", "u"], ["xu"]), node("SequenceEmpty", [], ["S0"], dtype=F)]
        for k, v in enumerate(items):
            nodes.append(node("SequenceInsert", ["S%d" % k, v], ["S%d" % (k + 1)]))
        nodes += [node("Identity", ["S%d" % len(items)], ["S"]),
                  node("Loop", ["three", "", "x"], ["y"], body=ins)]
        m = model(nodes, {"x": x}, ["y"], {"w": orand(3), "u": orand(3)}, opset=16,
                  consts={"three": consts["three"], "z0": consts["z0"],
                          "shp": np.array([2, 3], np.int64)})
        out.append(("outer_seq_loop_insert_%s_v16" % tag, typed(m, {"y": [2, 3]}), {"x": x}))
    return out


def outer_opt_cases():
    """An optional of a tensor of the enclosing graph that a subgraph reads (its gradient an
    optional of the element's, empty where it is): an If (each branch taken, the else branch
    not reading it), a Loop and a Scan reading its element, and a Loop whose body reads it
    under OptionalHasElement (the optional empty, or not: an If's output, so that an empty
    one wants a gradient too), and that Loop and an If both reading it (their gradients
    summed where it has an element)."""
    out = []
    I, B = TensorProto.INT64, TensorProto.BOOL
    x = orand(2, 3)
    opt = [node("Mul", ["x", "w"], ["xw"]), node("Optional", ["xw"], ["O"])]
    # empty, and wanting a gradient: the else branch of an If whose then branch has x·w
    opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2, 3]))
    then_o = graph([node("Optional", ["xw"], ["to"])], "then", [],
                   [helper.make_value_info("to", opt_t)])
    else_o = graph([node("Optional", [], ["eo"], type=helper.make_tensor_type_proto(F, [2, 3]))],
                   "else", [], [helper.make_value_info("eo", opt_t)])
    empty = [node("Mul", ["x", "w"], ["xw"]),
             node("If", ["c"], ["O"], then_branch=then_o, else_branch=else_o)]

    def add(name, nodes, outs, shapes, opset, feeds=None, make=opt, consts=None):
        m = model(make + nodes, feeds or {"x": x}, outs, {"w": orand(3)}, opset=opset,
                  consts=consts)
        out.append(("outer_opt_%s_v%d" % (name, opset), typed(m, shapes), feeds or {"x": x}))

    then_g = graph([node("OptionalGetElement", ["O"], ["t1"]), node("Tanh", ["t1"], ["ty"])],
                   "then", [], [vi("ty", F, [2, 3])])
    else_g = graph([node("Cos", ["x"], ["ey"])], "else", [], [vi("ey", F, [2, 3])])
    for opset in (16, 18):
        for c in (True, False):
            add("if_%s" % ("then" if c else "else"),
                [node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], ["y"],
                {"y": [2, 3]}, opset, consts={"c": np.array(c)})

    def body(nodes):
        return graph(nodes + [node("Identity", ["cond"], ["c2"])], "body",
                     [vi("i", I, []), vi("cond", B, []), vi("s", F, [2, 3])],
                     [vi("c2", B, []), vi("s2", F, [2, 3])])

    trip = {"m": np.array(3, np.int64)}
    b = body([node("OptionalGetElement", ["O"], ["h"]), node("Mul", ["s", "h"], ["sh"]),
              node("Add", ["sh", "x"], ["p"]), node("Tanh", ["p"], ["s2"])])
    add("loop", [node("Loop", ["m", "", "x"], ["y"], body=b)], ["y"], {"y": [2, 3]}, 16,
        consts=trip)
    # read under OptionalHasElement: s·O's element when it has one, else sin(s)
    has_t = graph([node("OptionalGetElement", ["O"], ["h"]), node("Mul", ["s", "h"], ["ht"])],
                  "then", [], [vi("ht", F, [2, 3])])
    has_e = graph([node("Sin", ["s"], ["he"])], "else", [], [vi("he", F, [2, 3])])
    b = body([node("OptionalHasElement", ["O"], ["has"]),
              node("If", ["has"], ["q"], then_branch=has_t, else_branch=has_e),
              node("Add", ["q", "x"], ["p"]), node("Tanh", ["p"], ["s2"])])
    for tag, make in (("", opt), ("_empty", empty)):
        add("loop_has%s" % tag, [node("Loop", ["m", "", "x"], ["y"], body=b)], ["y"],
            {"y": [2, 3]}, 16, make=make, consts=dict(trip, c=np.array(False)))
    # two readers (their gradients summed where O has an element): the Loop, and an If on
    # OptionalHasElement taking tanh(O's element) or cos(x); O from the If, present or empty
    two_t = graph([node("OptionalGetElement", ["O"], ["g"]), node("Tanh", ["g"], ["tt"])],
                  "then", [], [vi("tt", F, [2, 3])])
    two_e = graph([node("Cos", ["x"], ["te"])], "else", [], [vi("te", F, [2, 3])])
    for tag, c in (("present", True), ("empty", False)):
        add("two_readers_%s" % tag,
            [node("Loop", ["m", "", "x"], ["y1"], body=b),
             node("OptionalHasElement", ["O"], ["hasO"]),
             node("If", ["hasO"], ["y2"], then_branch=two_t, else_branch=two_e),
             node("Add", ["y1", "y2"], ["y"])], ["y"], {"y": [2, 3]}, 16, make=empty,
            consts=dict(trip, c=np.array(c)))
    # Scan over the rows of xs: acc ← tanh(acc·O + xt)
    sbody = graph([node("OptionalGetElement", ["O"], ["h"]), node("Mul", ["acc", "h"], ["ah"]),
                   node("Add", ["ah", "xt"], ["p"]), node("Tanh", ["p"], ["acc2"]),
                   node("Sin", ["acc2"], ["yt"])],
                  "body", [vi("acc", F, [2, 3]), vi("xt", F, [2, 3])],
                  [vi("acc2", F, [2, 3]), vi("yt", F, [2, 3])])
    add("scan", [node("Scan", ["x", "xs"], ["a", "ys"], body=sbody, num_scan_inputs=1)],
        ["a", "ys"], {"a": [2, 3], "ys": [4, 2, 3]}, 16, feeds={"x": x, "xs": orand(4, 2, 3)})
    return out


def review_cases():
    """Gaps a review found around outer-scope sequences and optionals (issue 12): an If
    that outputs a sequence or an optional (its branches seeded with one), read by a Loop
    or after the If; a Loop's carried sequence the body reads whose final value has no
    gradient; an optional read by two consumers; an empty outer sequence a Loop and a Scan
    read; and a Scan-8 reading an outer sequence."""
    out = []
    I, B = TensorProto.INT64, TensorProto.BOOL
    x = orand(2, 3)
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2, 3]))
    opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2, 3]))
    one_, z0 = np.array(1, np.int64), np.array(0, np.int64)
    # an If whose branches give a sequence: then [x·w, x], else [x, x]; a Loop reads item i
    then_s = graph([node("SequenceConstruct", ["xw", "x"], ["ts"])], "then", [],
                   [helper.make_value_info("ts", seq_t)])
    else_s = graph([node("SequenceConstruct", ["x", "x"], ["es"])], "else", [],
                   [helper.make_value_info("es", seq_t)])
    at_i = graph([node("SequenceAt", ["S", "i"], ["h"]), node("Mul", ["s", "h"], ["sh"]),
                  node("Add", ["sh", "x"], ["p"]), node("Tanh", ["p"], ["s2"]),
                  node("Identity", ["cond"], ["c2"])], "body",
                 [vi("i", I, []), vi("cond", B, []), vi("s", F, [2, 3])],
                 [vi("c2", B, []), vi("s2", F, [2, 3])])
    for c in (True, False):
        nodes = [node("Mul", ["x", "w"], ["xw"]),
                 node("If", ["c"], ["S"], then_branch=then_s, else_branch=else_s),
                 node("Loop", ["m", "", "x"], ["y"], body=at_i)]
        m = model(nodes, {"x": x}, ["y"], {"w": orand(3)}, opset=16,
                  consts={"c": np.array(c), "m": np.array(2, np.int64)})
        out.append(("if_seq_out_loop_%s_v16" % ("then" if c else "else"),
                    typed(m, {"y": [2, 3]}), {"x": x}))
    # read after the If (opset 13: no Identity of a sequence): y = S[0]·sin(S[1])
    for opset in (13, 16):
        nodes = [node("Mul", ["x", "w"], ["xw"]),
                 node("If", ["c"], ["S"], then_branch=then_s, else_branch=else_s),
                 node("SequenceAt", ["S", "z0"], ["a"]), node("SequenceAt", ["S", "one"], ["b"]),
                 node("Sin", ["b"], ["sb"]), node("Mul", ["a", "sb"], ["y"])]
        m = model(nodes, {"x": x}, ["y"], {"w": orand(3)}, opset=opset,
                  consts={"c": np.array(True), "one": one_, "z0": z0})
        out.append(("if_seq_out_at_v%d" % opset, typed(m, {"y": [2, 3]}), {"x": x}))
    # an If whose branches give an optional: then Optional(x·w), else Optional(x)
    then_o = graph([node("Optional", ["xw"], ["to"])], "then", [],
                   [helper.make_value_info("to", opt_t)])
    else_o = graph([node("Optional", ["x"], ["eo"])], "else", [],
                   [helper.make_value_info("eo", opt_t)])
    nodes = [node("Mul", ["x", "w"], ["xw"]),
             node("If", ["c"], ["O"], then_branch=then_o, else_branch=else_o),
             node("OptionalGetElement", ["O"], ["e"]), node("Tanh", ["e"], ["y"])]
    m = model(nodes, {"x": x}, ["y"], {"w": orand(3)}, opset=16, consts={"c": np.array(True)})
    out.append(("if_opt_out_v16", typed(m, {"y": [2, 3]}), {"x": x}))
    # a Loop carrying s and a list L the body reads: h2 = tanh(x·w + L[-1]·fi + L[0]),
    # s2 = s + h2, L2 = L + [h2];
    # only s used after the Loop (L's final value omitted, or an unused output): the
    # gradient into h0 (L's first item) flows through L alone
    lb = graph([node("Cast", ["i"], ["fi"], to=F), node("SequenceAt", ["L", "m1"], ["h"]),
                node("Mul", ["h", "fi"], ["hf"]), node("Mul", ["x", "w"], ["xw"]),
                node("SequenceAt", ["L", "z0"], ["g"]), node("Add", ["xw", "hf"], ["q"]),
                node("Add", ["q", "g"], ["p"]), node("Tanh", ["p"], ["h2"]),
                node("Add", ["s", "h2"], ["s2"]),
                node("SequenceInsert", ["L", "h2"], ["L2"]), node("Identity", ["cond"], ["c2"])],
               "body", [vi("i", I, []), vi("cond", B, []), vi("s", F, [2, 3]),
                        helper.make_value_info("L", seq_t)],
               [vi("c2", B, []), vi("s2", F, [2, 3]), helper.make_value_info("L2", seq_t)])
    for opset in (13, 16):
        for tag, lout in (("omitted", ""), ("unused", "Lf")):
            nodes = [node("SequenceConstruct", ["h0"], ["L0"]),
                     node("Loop", ["m", "", "x", "L0"], ["y", lout], body=lb)]
            m = model(nodes, {"x": x}, ["y"], {"w": orand(3), "h0": orand(2, 3)}, opset=opset,
                      consts={"m": np.array(3, np.int64), "m1": np.array(-1, np.int64),
                              "z0": z0})
            out.append(("loop_seq_read_final_%s_v%d" % (tag, opset), typed(m, {"y": [2, 3]}),
                        {"x": x}))
    # the rows of W·w (N of them, 0 too: an empty sequence, its accumulated gradient summed
    # item by item) read by a Loop and a Scan under SequenceLength(S) > 0: s·S[0], else sin(s)
    has_t = graph([node("SequenceAt", ["S", "z0"], ["g"]), node("Mul", ["s", "g"], ["st"])],
                  "then", [], [vi("st", F, [2, 3])])
    has_e = graph([node("Sin", ["s"], ["se"])], "else", [], [vi("se", F, [2, 3])])
    guarded = [node("SequenceLength", ["S"], ["n"]), node("Greater", ["n", "z0"], ["any"]),
               node("If", ["any"], ["q"], then_branch=has_t, else_branch=has_e),
               node("Add", ["q", "x"], ["p"]), node("Tanh", ["p"], ["s2"])]
    lb = graph(guarded + [node("Identity", ["cond"], ["c2"])], "body",
               [vi("i", I, []), vi("cond", B, []), vi("s", F, [2, 3])],
               [vi("c2", B, []), vi("s2", F, [2, 3])])
    sb = graph(guarded[:4] + [node("Add", ["p", "xt"], ["r"]), node("Tanh", ["r"], ["s2"])],
               "body", [vi("s", F, [2, 3]), vi("xt", F, [2, 3])], [vi("s2", F, [2, 3])])
    xs = orand(3, 2, 3)
    for rows in (0, 2):
        split = [node("Mul", ["W", "w"], ["Ww"]),
                 node("SplitToSequence", ["Ww"], ["S"], axis=0, keepdims=0)]
        weights = {"w": orand(3), "W": orand(rows, 2, 3)}
        m = model(split + [node("Loop", ["m", "", "x"], ["y"], body=lb)], {"x": x}, ["y"],
                  weights, opset=16, consts={"m": np.array(3, np.int64), "z0": z0})
        out.append(("outer_seq_loop_guarded_rows%d_v16" % rows, typed(m, {"y": [2, 3]}),
                    {"x": x}))
        m = model(split + [node("Scan", ["x", "xs"], ["y"], body=sb, num_scan_inputs=1)],
                  {"x": x, "xs": xs}, ["y"], weights, opset=16, consts={"z0": z0})
        out.append(("outer_seq_scan_guarded_rows%d_v16" % rows, typed(m, {"y": [2, 3]}),
                    {"x": x, "xs": xs}))
    return out


_control_cases = cases


def cases():  # noqa: F811
    return (_control_cases() + seq_read_cases() + outer_seq_cases() + outer_opt_cases() +
            review_cases())
