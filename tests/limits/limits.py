#!/usr/bin/env python3
"""No fixed limits on user-sized quantities: models far beyond every old cap go through
the CLI (run, grad, check, export) and give correct values.
  - 400 outputs and 400 trained weights (the CLI refused more than 256)
  - Max of 100 inputs and Split into 100 outputs (the builder's dy/dx arrays of 64 and the
    rules' stack arrays of 64)
  - Concat of 2000 inputs: its rule emits ~10,000 values at once (the builder reserved room
    for 4096 per rule)
  - value and node names of 1000 characters (512-byte buffers truncated them)
  - a Loop carrying 200 values, a Scan with 100 scan inputs (control flow kept its axes,
    directions and index lists in arrays of 64), and If and Loop whose values have names of
    1000+ characters (the control-flow rules' name buffers of 512 to 700 bytes, the
    builder's 200-character name prefixes): run, grad against the formula, export run in
    onnxruntime
and every emitted gradient node names the forward node and op it differentiates.
Ends with "N passed, N failed".

usage: limits.py ONNXGRAD"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(3)
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("PASS " + name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def save(m, d, name):
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    p = os.path.join(d, name)
    onnx.save(m, p)
    return p


def run(cli, *args):
    r = subprocess.run([cli] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def outputs(d):
    man = json.load(open(os.path.join(d, "manifest.json")))
    return {k: np.load(os.path.join(d, v)) for k, v in man.items()}


def main(cli):
    with tempfile.TemporaryDirectory() as d:
        x = RNG.uniform(-1, 1, (3, 4)).astype(np.float32)
        np.save(os.path.join(d, "x.npy"), x)
        xin = ["--input", "x=" + os.path.join(d, "x.npy")]

        # 400 outputs y_k = tanh(x * w_k), 400 weights
        n = 400
        ws = [RNG.uniform(-1, 1, (4,)).astype(np.float32) for _ in range(n)]
        nodes, outs = [], []
        for k in range(n):
            nodes += [helper.make_node("Mul", ["x", "w%d" % k], ["m%d" % k]),
                      helper.make_node("Tanh", ["m%d" % k], ["y%d" % k])]
            outs.append(helper.make_tensor_value_info("y%d" % k, TensorProto.FLOAT, [3, 4]))
        g = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [3, 4])], outs,
            [numpy_helper.from_array(w, "w%d" % k) for k, w in enumerate(ws)])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "wide.onnx")
        rc, _, err = run(cli, "run", p, *xin, "-o", os.path.join(d, "r"))
        check("run writes 400 outputs", rc == 0 and len(outputs(os.path.join(d, "r"))) == n, err)
        rc, _, err = run(cli, "grad", p, *xin, "-o", os.path.join(d, "g"))
        ok = rc == 0
        if ok:
            o = outputs(os.path.join(d, "g"))
            ok = len(o) == 2 * n + 1  # outputs, x_grad, 400 weight grads
            want_x = sum((1 - np.tanh(x * w) ** 2) * w for w in ws)
            ok = ok and np.allclose(o["x_grad"], want_x, rtol=1e-4, atol=1e-5)
            ok = ok and np.allclose(o["w399_grad"], ((1 - np.tanh(x * ws[399]) ** 2) * x).sum(0),
                                    rtol=1e-4, atol=1e-5)
        check("grad of 400 outputs and 400 weights equals the formula", ok, err)
        rc, out, err = run(cli, "check", p, *xin, "--samples", "2")
        check("check over 401 tensors passes", rc == 0 and out.count("\n") >= n + 2, err)

        # Max of 100 inputs, Split into 100 outputs summed back
        k = 100
        xs = {"a%d" % i: RNG.uniform(-1, 1, (2, 3)).astype(np.float32) for i in range(k)}
        g = helper.make_graph(
            [helper.make_node("Max", list(xs), ["mx"]),
             helper.make_node("Concat", list(xs), ["cat"], axis=0),          # [200, 3]
             helper.make_node("Split", ["cat"], ["s%d" % i for i in range(k)], axis=0),
             helper.make_node("Sum", ["s%d" % i for i in range(k)], ["sm"]),
             helper.make_node("Mul", ["mx", "sm"], ["y"])],
            "many", [helper.make_tensor_value_info(n_, TensorProto.FLOAT, [2, 3]) for n_ in xs],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "many.onnx")
        args = []
        for name, v in xs.items():
            np.save(os.path.join(d, name + ".npy"), v)
            args += ["--input", "%s=%s" % (name, os.path.join(d, name + ".npy"))]
        rc, out, err = run(cli, "check", p, *args, "--samples", "6")
        check("Max of 100 inputs and Split into 100 outputs: check passes", rc == 0, err + out[-300:])

        # Concat of 2000 inputs: one rule emits ~10,000 values
        k = 2000
        ws = {"c%d" % i: RNG.uniform(-1, 1, (1, 4)).astype(np.float32) for i in range(k)}
        g = helper.make_graph(
            [helper.make_node("Concat", list(ws), ["cat"], axis=0),           # [2000, 4]
             helper.make_node("MatMul", ["cat", "v"], ["mv"]),                # [2000, 1]
             helper.make_node("Tanh", ["mv"], ["y"])],
            "cat", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [k, 1])],
            [numpy_helper.from_array(w, n_) for n_, w in ws.items()] +
            [numpy_helper.from_array(RNG.uniform(-1, 1, (4, 1)).astype(np.float32), "v")])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "cat.onnx")
        rc, _, err = run(cli, "grad", p, "-o", os.path.join(d, "gc"))
        ok = rc == 0
        if ok:
            o = outputs(os.path.join(d, "gc"))
            v = numpy_helper.to_array(g.initializer[-1])
            c7 = ws["c1777"]
            ok = np.allclose(o["c1777_grad"], (1 - np.tanh(c7 @ v) ** 2) @ v.T, rtol=1e-4,
                             atol=1e-6)
        check("Concat of 2000 inputs: the gradient of input 1777 equals the formula", ok, err)

        # 1000-character names: input, weight, output, node
        long = "n" * 990
        g = helper.make_graph(
            [helper.make_node("Mul", ["x", long + "_w"], [long + "_m"], name=long + "_mul"),
             helper.make_node("Tanh", [long + "_m"], [long + "_y"], name=long + "_tanh")],
            "names", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
            [helper.make_tensor_value_info(long + "_y", TensorProto.FLOAT, [3, 4])],
            [numpy_helper.from_array(RNG.uniform(-1, 1, (4,)).astype(np.float32), long + "_w")])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "names.onnx")
        rc, _, err = run(cli, "grad", p, *xin, "-o", os.path.join(d, "gn"))
        ok = rc == 0 and (long + "_w_grad") in outputs(os.path.join(d, "gn"))
        check("1000-character names: <weight>_grad keeps the whole name", ok, err)
        rc, _, err = run(cli, "export", p, *xin, "-o", os.path.join(d, "en"))
        ok = rc == 0
        if ok:
            tr = onnx.load(os.path.join(d, "en", "training.onnx"))
            ok = (long + "_y_grad") in [i.name for i in tr.graph.input]
            grad_nodes = [nd for nd in tr.graph.node if "/grad/" in nd.name]
            ok = ok and grad_nodes and all(nd.name.startswith(long) for nd in grad_nodes)
            # every emitted node says which forward node and op it differentiates
            ok = ok and all(nd.doc_string in ("gradient of node '%s_mul' (Mul)" % long,
                                              "gradient of node '%s_tanh' (Tanh)" % long)
                            for nd in grad_nodes)
        check("1000-character names: the seed and gradient nodes keep the whole names, and "
              "each gradient node names its forward node and op", ok, err)

        control_flow(cli, d, xin, x)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def vi(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def ort_grads(path, feeds):
    """the exported training graph run in onnxruntime: its outputs by name"""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = {i.name for i in sess.get_inputs()}
    return dict(zip(names, sess.run(None, {k: v for k, v in feeds.items() if k in want})))


def close(a, b):
    return a is not None and a.shape == b.shape and np.allclose(a, b, rtol=2e-4, atol=1e-5)


def control_flow(cli, d, xin, x):
    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
    x64 = x.astype(np.float64)

    # Loop carrying 200 values: v_k <- tanh(v_k + x) three times (x an outer value)
    n, T = 200, 3
    w = [RNG.uniform(-1, 1, (3, 4)).astype(np.float32) for _ in range(n)]
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["c2"])] +
        [nd for k in range(n) for nd in (helper.make_node("Add", ["s%d" % k, "x"], ["a%d" % k]),
                                         helper.make_node("Tanh", ["a%d" % k], ["t%d" % k]))],
        "body", [vi("it", I64, []), vi("cond", B, [])] + [vi("s%d" % k) for k in range(n)],
        [vi("c2", B, [])] + [vi("t%d" % k) for k in range(n)])
    g = helper.make_graph(
        [helper.make_node("Loop", ["m", ""] + ["w%d" % k for k in range(n)],
                          ["y%d" % k for k in range(n)], body=body)],
        "loop200", [vi("x", F, [3, 4])], [vi("y%d" % k, F, [3, 4]) for k in range(n)],
        [numpy_helper.from_array(np.array(T, np.int64), "m")] +
        [numpy_helper.from_array(v, "w%d" % k) for k, v in enumerate(w)])
    p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "loop200.onnx")
    # the formula (float64): the seeds are ones, so dL/dv_T = 1 for every k
    gx, gw, ys = np.zeros_like(x64), [], []
    for k in range(n):
        v, ds = w[k].astype(np.float64), []
        for _ in range(T):
            v = np.tanh(v + x64)
            ds.append(1 - v * v)
        ys.append(v)
        gv = np.ones_like(v)
        for t in reversed(range(T)):
            gv = gv * ds[t]
            gx += gv
        gw.append(gv)
    rc, _, err = run(cli, "grad", p, *xin, "-o", os.path.join(d, "gl"))
    ok = rc == 0
    if ok:
        o = outputs(os.path.join(d, "gl"))
        ok = close(o.get("y199"), ys[199]) and close(o.get("x_grad"), gx)
        ok = ok and all(close(o.get("w%d_grad" % k), gw[k]) for k in (0, 63, 64, 130, 199))
    check("Loop carrying 200 values: run and grad equal the formula", ok, err[-400:])
    rc, _, err = run(cli, "export", p, *xin, "-o", os.path.join(d, "el"))
    ok = rc == 0
    if ok:
        feeds = {"x": x}
        feeds.update({"y%d_grad" % k: np.ones((3, 4), np.float32) for k in range(n)})
        feeds.update({"w%d" % k: v for k, v in enumerate(w)})
        r = ort_grads(os.path.join(d, "el", "training.onnx"), feeds)
        ok = close(r.get("x_grad"), gx) and close(r.get("w170_grad"), gw[170])
    check("Loop carrying 200 values: the exported training graph gives them in onnxruntime",
          ok, err[-400:])

    # Scan with 100 scan inputs (every other one reversed): h <- tanh(h * a + sum_k xs_k[t])
    M, T = 100, 3
    xs = [RNG.uniform(-0.5, 0.5, (T, 4)).astype(np.float32) for _ in range(M)]
    dirs = [k % 2 for k in range(M)]
    body = helper.make_graph(
        [helper.make_node("Mul", ["h", "a"], ["ha"]),
         helper.make_node("Sum", ["ha"] + ["e%d" % k for k in range(M)], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h1"]),
         helper.make_node("Identity", ["h1"], ["o"])],
        "sbody", [vi("h")] + [vi("e%d" % k) for k in range(M)], [vi("h1"), vi("o")])
    g = helper.make_graph(
        [helper.make_node("Scan", ["h0"] + ["xs%d" % k for k in range(M)], ["hT", "ys"],
                          body=body, num_scan_inputs=M,
                          scan_input_directions=dirs)],
        "scan100", [vi("h0", F, [4])], [vi("hT", F, [4]), vi("ys", F, [T, 4])],
        [numpy_helper.from_array(RNG.uniform(-1, 1, (4,)).astype(np.float32), "a")] +
        [numpy_helper.from_array(v, "xs%d" % k) for k, v in enumerate(xs)])
    p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "scan100.onnx")
    a = numpy_helper.to_array(g.initializer[0]).astype(np.float64)
    h0 = RNG.uniform(-1, 1, (4,)).astype(np.float32)
    np.save(os.path.join(d, "h0.npy"), h0)
    # the formula: L = sum(hT) + sum(ys); slices of a reversed input read from the end
    sl = lambda k, t: xs[k][T - 1 - t if dirs[k] else t].astype(np.float64)
    hs = [h0.astype(np.float64)]
    for t in range(T):
        hs.append(np.tanh(hs[-1] * a + sum(sl(k, t) for k in range(M))))
    gh, ga = np.full(4, 2.0), np.zeros(4)  # hT's seed and ys[T-1]'s
    gxs = [np.zeros((T, 4)) for _ in range(M)]
    for t in reversed(range(T)):
        gp = gh * (1 - hs[t + 1] ** 2)
        ga += gp * hs[t]
        for k in range(M):
            gxs[k][T - 1 - t if dirs[k] else t] += gp
        gh = gp * a + 1  # the next step back: its ys seed (1) and the state's
    gh0 = gh - 1
    rc, _, err = run(cli, "grad", p, "--input", "h0=" + os.path.join(d, "h0.npy"),
                     "-o", os.path.join(d, "gs"))
    ok = rc == 0
    if ok:
        o = outputs(os.path.join(d, "gs"))
        ok = close(o.get("hT"), hs[-1]) and close(o.get("ys"), np.stack(hs[1:]))
        ok = ok and close(o.get("h0_grad"), gh0) and close(o.get("a_grad"), ga)
        ok = ok and all(close(o.get("xs%d_grad" % k), gxs[k]) for k in (0, 64, 65, 99))
    check("Scan with 100 scan inputs: run and grad equal the formula", ok, err[-400:])

    # names of 1000+ characters through If and Loop
    long = "q" * 1000
    then_g = helper.make_graph([helper.make_node("Mul", [long + "_x", long + "_w"],
                                                 [long + "_then"], name=long + "_tmul")],
                               long + "_tb", [], [vi(long + "_then")])
    else_g = helper.make_graph([helper.make_node("Sin", [long + "_x"], [long + "_else"],
                                                 name=long + "_esin")],
                               long + "_eb", [], [vi(long + "_else")])
    lbody = helper.make_graph(
        [helper.make_node("Identity", ["cond"], [long + "_c2"]),
         helper.make_node("Mul", [long + "_s", long + "_w"], [long + "_s1"], name=long + "_lmul"),
         helper.make_node("Tanh", [long + "_s1"], [long + "_s2"], name=long + "_ltanh")],
        long + "_lbody", [vi(long + "_it", I64, []), vi("cond", B, []), vi(long + "_s")],
        [vi(long + "_c2", B, []), vi(long + "_s2")])
    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], [long + "_x"]),
         helper.make_node("If", [long + "_c"], [long + "_if"], name=long + "_ifnode",
                          then_branch=then_g, else_branch=else_g),
         helper.make_node("Loop", [long + "_m", "", long + "_if"], [long + "_y"],
                          name=long + "_loopnode", body=lbody)],
        "names_cf", [vi("x", F, [3, 4])], [vi(long + "_y", F, [3, 4])],
        [numpy_helper.from_array(np.array(True), long + "_c"),
         numpy_helper.from_array(np.array(2, np.int64), long + "_m"),
         numpy_helper.from_array(RNG.uniform(-1, 1, (4,)).astype(np.float32), long + "_w")])
    p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d, "names_cf.onnx")
    wv = numpy_helper.to_array(g.initializer[2]).astype(np.float64)
    # y = tanh(w tanh(w (x w))); the formula by the chain rule, seeds ones
    s0 = x64 * wv
    s1 = np.tanh(s0 * wv)
    y = np.tanh(s1 * wv)
    g1 = (1 - y ** 2)
    g0 = g1 * wv * (1 - s1 ** 2)
    want_x = g0 * wv * wv
    want_w = (g1 * s1 + g0 * s0 + g0 * wv * x64).sum(0)
    rc, _, err = run(cli, "grad", p, *xin, "-o", os.path.join(d, "gq"))
    ok = rc == 0
    if ok:
        o = outputs(os.path.join(d, "gq"))
        ok = close(o.get(long + "_y"), y) and close(o.get("x_grad"), want_x)
        ok = ok and close(o.get(long + "_w_grad"), want_w)
    check("If and Loop with 1000-character names: grad equals the formula", ok, err[-400:])
    rc, _, err = run(cli, "export", p, *xin, "-o", os.path.join(d, "eq"))
    ok = rc == 0
    if ok:
        tp = os.path.join(d, "eq", "training.onnx")
        onnx.checker.check_model(onnx.load(tp), full_check=True)
        r = ort_grads(tp, {"x": x, long + "_y_grad": np.ones((3, 4), np.float32),
                           long + "_w": wv.astype(np.float32),
                           long + "_c": np.array(True), long + "_m": np.array(2, np.int64)})
        ok = close(r.get("x_grad"), want_x) and close(r.get(long + "_w_grad"), want_w)
    check("If and Loop with 1000-character names: the exported training graph passes the "
          "checker and gives them in onnxruntime", ok, err[-400:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
