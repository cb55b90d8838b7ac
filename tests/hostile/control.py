#!/usr/bin/env python3
"""Control flow a hostile or broken model asks for (subgraphs nested past OG_MAX_NESTING, bodies
that do not fit their node, names read from nowhere, conditions that are not one bool, scan
inputs of different lengths, scan outputs that change shape, lengths past the sequence,
SequenceMap over sequences of different lengths or over a tensor):
a clear non-zero exit naming the problem, never a crash or a hang, in bounded memory.
Each case runs `run` (a load-time fault fails there too).
Usage: control.py ONNXGRAD_CLI [--sanitized]"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h

from limits import run as run_limited

F, I64, B = TP.FLOAT, TP.INT64, TP.BOOL


def vi(name, t=F, shape=None):
    return h.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, opset=16):
    g = h.make_graph(nodes, "g", inputs, outputs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(num, payload):
    """a length-delimited protobuf field (strings, messages)"""
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _ifield(num, v):
    return _varint(num << 3) + _varint(v)


def nested_ifs(depth):
    """the bytes of a model whose If's then_branch holds an If ... depth levels down, written
    by hand: Python's protobuf refuses to build messages nested that deep"""
    def value_info(name):  # float tensor, no shape
        return _field(1, name) + _field(2, _field(1, _ifield(1, F)))

    def graph(nodes, name, out):
        return b"".join(_field(1, n) for n in nodes) + _field(2, name) + _field(12, value_info(out))

    def node(op, ins, outs, attrs=()):
        return (b"".join(_field(1, i) for i in ins) + b"".join(_field(2, o) for o in outs) +
                _field(4, op) + b"".join(attrs))

    def graph_attr(name, g):  # AttributeProto: name 1, g 6, type 20 (GRAPH = 5)
        return _field(5, _field(1, name) + _field(6, g) + _ifield(20, 5))

    inner = graph([node("Identity", ["x"], ["y%d" % depth])], "leaf", "y%d" % depth)
    for d in range(depth - 1, -1, -1):
        other = graph([node("Identity", ["x"], ["z%d" % d])], "else", "z%d" % d)
        n = node("If", ["c"], ["y%d" % d],
                 [graph_attr("then_branch", inner), graph_attr("else_branch", other)])
        inner = graph([n], "level%d" % d, "y%d" % d)
    # the main graph: inputs c (bool scalar) and x, output y0
    c_vi = _field(1, "c") + _field(2, _field(1, _ifield(1, B) + _field(2, b"")))
    main = inner + _field(11, c_vi) + _field(11, value_info("x"))
    return _ifield(1, 8) + _field(7, main) + _field(8, _field(1, "") + _ifield(2, 16))


def loop_body(nodes, outs, n_carried=1):
    ins = [vi("i", I64, []), vi("cond", B, [])] + [vi("s%d" % k) for k in range(n_carried)]
    return h.make_graph(nodes, "body", ins, outs)


def cases():
    out = []
    x = np.ones(2, np.float32)
    out.append(("nested_too_deep", nested_ifs(101), {"c": np.array(True), "x": x},
                "beyond the limit of 100"))
    out.append(("nested_deep_ok", nested_ifs(100), {"c": np.array(True), "x": x}, None))
    then_g = h.make_graph([h.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t")])
    m = model([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=then_g)],
              [vi("c", B, [2]), vi("x", F, [2])], [vi("y")])
    out.append(("if_cond_two_values", m, {"c": np.array([True, False]), "x": x},
                "cond must be one bool"))
    body = loop_body([h.make_node("Identity", ["cond"], ["c2"]),
                      h.make_node("Identity", ["s0"], ["s1"])], [vi("c2", B, []), vi("s1")])
    m = model([h.make_node("Loop", ["m", "", "x"], ["y"], body=body)],
              [vi("m", F, []), vi("x", F, [2])], [vi("y")])
    out.append(("loop_float_trip_count", m, {"m": np.array(3, np.float32), "x": x},
                "(M) is float32, expected int64"))
    body = loop_body([h.make_node("Identity", ["cond"], ["c2"]),
                      h.make_node("Identity", ["s0"], ["o1"])], [vi("c2", B, []), vi("o1")],
                     n_carried=2)
    m = model([h.make_node("Loop", ["m", "", "x"], ["y"], body=body)],
              [vi("m", I64, []), vi("x", F, [2])], [vi("y")])
    out.append(("loop_body_misfit", m, {"m": np.array(3, np.int64), "x": x},
                "the body has 4 inputs"))
    body = loop_body([h.make_node("Identity", ["cond"], ["c2"]),
                      h.make_node("Add", ["s0", "nowhere"], ["s1"])], [vi("c2", B, []), vi("s1")])
    m = model([h.make_node("Loop", ["m", "", "x"], ["y"], body=body)],
              [vi("m", I64, []), vi("x", F, [2])], [vi("y")])
    out.append(("loop_reads_nowhere", m, {"m": np.array(3, np.int64), "x": x},
                "reads 'nowhere', which is no graph input"))
    # a scan output whose shape grows: the stacking refuses it
    body = loop_body([h.make_node("Identity", ["cond"], ["c2"]),
                      h.make_node("Concat", ["s0", "s0"], ["s1"], axis=0),
                      h.make_node("Identity", ["s0"], ["sc"])],
                     [vi("c2", B, []), vi("s1"), vi("sc")])
    m = model([h.make_node("Loop", ["m", "", "x"], ["y", "scan"], body=body)],
              [vi("m", I64, []), vi("x", F, [None])], [vi("y"), vi("scan")])
    out.append(("loop_scan_output_grows", m, {"m": np.array(3, np.int64), "x": x},
                "a scan output changes type or shape"))
    sbody = h.make_graph([h.make_node("Add", ["a", "p"], ["a1"]),
                          h.make_node("Add", ["a1", "q"], ["a2"])], "body",
                         [vi("a"), vi("p"), vi("q")], [vi("a2")])
    m = model([h.make_node("Scan", ["a0", "xs", "ys"], ["a"], body=sbody, num_scan_inputs=2)],
              [vi("a0", F, [2]), vi("xs", F, [None, 2]), vi("ys", F, [None, 2])], [vi("a")])
    out.append(("scan_lengths_differ", m,
                {"a0": x, "xs": np.ones((4, 2), np.float32), "ys": np.ones((3, 2), np.float32)},
                "scan input 1 has 3 steps, input 0 has 4"))
    m = model([h.make_node("Scan", ["a0", "xs", "ys"], ["a"], body=sbody, num_scan_inputs=0)],
              [vi("a0", F, [2]), vi("xs", F, [4, 2]), vi("ys", F, [4, 2])], [vi("a")])
    out.append(("scan_no_scan_input", m,
                {"a0": x, "xs": np.ones((4, 2), np.float32), "ys": np.ones((4, 2), np.float32)},
                "num_scan_inputs is 0"))
    # Scan-8: a row's length past the sequence
    body8 = h.make_graph([h.make_node("Add", ["a", "p"], ["a1"])], "body", [vi("a"), vi("p")],
                         [vi("a1")])
    m = model([h.make_node("Scan", ["lens", "a0", "xs"], ["a"], body=body8, num_scan_inputs=1)],
              [vi("lens", I64, [1]), vi("a0", F, [1, 2]), vi("xs", F, [1, 3, 2])], [vi("a")],
              opset=8)
    m.ir_version = 3
    out.append(("scan8_length_past_sequence", m,
                {"lens": np.array([5], np.int64), "a0": np.ones((1, 2), np.float32),
                 "xs": np.ones((1, 3, 2), np.float32)}, "sequence_lens[0] is 5, outside 0..3"))
    # LSTM: a length past the sequence
    lstm = h.make_node("LSTM", ["x", "w", "r", "", "lens"], ["y"], hidden_size=1)
    m = model([lstm], [vi("x", F, [2, 1, 1]), vi("w", F, [1, 4, 1]), vi("r", F, [1, 4, 1]),
                       vi("lens", TP.INT32, [1])], [vi("y")], opset=14)
    out.append(("lstm_length_past_sequence", m,
                {"x": np.ones((2, 1, 1), np.float32), "w": np.ones((1, 4, 1), np.float32),
                 "r": np.ones((1, 4, 1), np.float32), "lens": np.array([7], np.int32)},
                "sequence_lens[0] is 7, outside 0..2"))
    # SequenceMap: the sequences are made in the model (the CLI feeds tensors only)
    add = h.make_graph([h.make_node("Add", ["a", "b"], ["c"])], "body", [vi("a"), vi("b")],
                       [vi("c")])
    m = model([h.make_node("SplitToSequence", ["x4"], ["s"], keepdims=0),
               h.make_node("SplitToSequence", ["x3"], ["t"], keepdims=0),
               h.make_node("SequenceMap", ["s", "t"], ["u"], body=add),
               h.make_node("ConcatFromSequence", ["u"], ["y"], axis=0)],
              [vi("x4", F, [4, 2]), vi("x3", F, [3, 2])], [vi("y")], opset=17)
    out.append(("seqmap_lengths_differ", m,
                {"x4": np.ones((4, 2), np.float32), "x3": np.ones((3, 2), np.float32)},
                "input 1 is a sequence of 3 items, input 0 of 4"))
    m = model([h.make_node("SequenceMap", ["x", "x"], ["u"], body=add),
               h.make_node("ConcatFromSequence", ["u"], ["y"], axis=0)],
              [vi("x", F, [2])], [vi("y")], opset=17)
    out.append(("seqmap_over_a_tensor", m, {"x": x}, "input 0 must be a sequence, got a tensor"))
    m = model([h.make_node("SplitToSequence", ["x"], ["s"], keepdims=0),
               h.make_node("SequenceMap", ["s"], ["u"], body=add),
               h.make_node("ConcatFromSequence", ["u"], ["y"], axis=0)],
              [vi("x", F, [2])], [vi("y")], opset=17)
    out.append(("seqmap_body_misfit", m, {"x": x}, "the body has 2 inputs and 1 outputs"))
    # memory: a Loop's scan output grows past the session's budget (1e6 iterations of 4 KB
    # each) and a Loop body whose every iteration's value is kept; both counted against
    # --max-memory, which subgraph sessions share with their parent
    body = loop_body([h.make_node("Identity", ["cond"], ["c2"]),
                      h.make_node("Identity", ["s0"], ["s1"]),
                      h.make_node("Identity", ["s0"], ["row"])],
                     [vi("c2", B, []), vi("s1"), vi("row")])
    m = model([h.make_node("Loop", ["m", "", "x"], ["y", "rows"], body=body)],
              [vi("m", I64, []), vi("x", F, [1024])], [vi("y"), vi("rows")])
    out.append(("loop_scan_output_past_budget", m,
                {"m": np.array(1000000, np.int64), "x": np.ones(1024, np.float32)},
                "memory budget", ["--max-memory", "64M"]))
    inner = h.make_graph([h.make_node("Tile", ["x", "reps"], ["t"])], "then", [], [vi("t")])
    m = model([h.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)],
              [vi("c", B, []), vi("x", F, [2]), vi("reps", I64, [1])], [vi("y")])
    out.append(("if_branch_past_budget", m,
                {"c": np.array(True), "x": x, "reps": np.array([1 << 26], np.int64)},
                "memory budget", ["--max-memory", "64M"]))
    return out


def deep_commands(cli, d):
    """At the nesting limit every command that walks subgraphs recursively (load, run,
    grad, check, export, and loading what export wrote) succeeds, under the sanitizers'
    stack too."""
    path = os.path.join(d, "m.onnx")
    with open(path, "wb") as f:
        f.write(nested_ifs(100))
    ins = []
    for k, v in (("c", np.array(True)), ("x", np.ones(2, np.float32))):
        np.save(os.path.join(d, k + ".npy"), v)
        ins += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
    ok = True
    for cmd in (["grad", path] + ins + ["-o", os.path.join(d, "g")],
                ["check", path] + ins,
                ["export", path, "-o", os.path.join(d, "e")],
                ["info", os.path.join(d, "e", "training.onnx")]):
        rc, out = run_limited([cli] + cmd)
        good = rc == 0
        if good and cmd[0] == "grad":
            good = np.array_equal(np.load(os.path.join(d, "g", "x_grad.npy")),
                                  np.ones(2, np.float32))
        print("ok  " if good else "FAIL", f"depth 100 {cmd[0]}: rc {rc}")
        ok = ok and good
    return ok


def budget_shared(cli, d):
    """Subgraph sessions count against their parent's budget, and their idle blocks are freed
    once the node ran: a Loop whose body takes 40 MB per iteration, then a 40 MB Tile after
    it, run under --max-memory 64M (80 MB if the body's idle blocks stayed counted)."""
    n = 5_000_000
    body = loop_body([h.make_node("Identity", ["cond"], ["c2"]),
                      h.make_node("Tile", ["s0", "reps"], ["t"]),
                      h.make_node("ReduceSum", ["t"], ["r"]),
                      h.make_node("Sub", ["r", "r"], ["z"]),
                      h.make_node("Add", ["s0", "z"], ["s1"])], [vi("c2", B, []), vi("s1")])
    m = model([h.make_node("Loop", ["m", "", "x"], ["y"], body=body),
               h.make_node("Tile", ["y", "reps"], ["t2"]),
               h.make_node("ReduceSum", ["t2"], ["y0"], keepdims=0)],
              [vi("m", I64, []), vi("x", F, [2]), vi("reps", I64, [1])], [vi("y0")])
    path = os.path.join(d, "m.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    cmd = [cli, "run", path, "--max-memory", "64M", "-o", os.path.join(d, "out")]
    for k, v in (("m", np.array(3, np.int64)), ("x", np.ones(2, np.float32)),
                 ("reps", np.array([n], np.int64))):
        np.save(os.path.join(d, k + ".npy"), v)
        cmd += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
    rc, out = run_limited(cmd)
    ok = rc == 0 and float(np.load(os.path.join(d, "out", "y0.npy"))) == 2.0 * n
    print("ok  " if ok else "FAIL", f"loop_then_tile_within_budget: rc {rc}",
          out.strip().splitlines()[-1][:160] if out.strip() else "")
    return ok


def main():
    cli = sys.argv[1]
    results = []
    with tempfile.TemporaryDirectory() as top:
        for name, m, feeds, msg, *extra in cases():
            d = os.path.join(top, name)
            os.mkdir(d)
            path = os.path.join(d, "m.onnx")
            with open(path, "wb") as f:
                f.write(m if isinstance(m, bytes) else m.SerializeToString())
            cmd = [cli, "run", path, "-o", os.path.join(d, "out")] + (extra[0] if extra else [])
            for k, v in feeds.items():
                np.save(os.path.join(d, k + ".npy"), v)
                cmd += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
            rc, out = run_limited(cmd)
            if msg is None:  # runs: within the limit, every level's If runs its branch
                ok = rc == 0 and np.array_equal(np.load(os.path.join(d, "out", "y0.npy")),
                                                feeds["x"])
            else:
                ok = rc == 1 and msg in out
            results.append(ok)
            last = out.strip().splitlines()[-1][:160] if out.strip() else ""
            print("ok  " if ok else "FAIL", f"{name}: rc {rc} | {last}")
        d = os.path.join(top, "deep_commands")
        os.mkdir(d)
        results.append(deep_commands(cli, d))
        d = os.path.join(top, "budget_shared")
        os.mkdir(d)
        results.append(budget_shared(cli, d))
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
