#!/usr/bin/env python3
"""No fixed limits on user-sized quantities: models far beyond every old cap go through
the CLI (run, grad, check, export) and give correct values.
  - 400 outputs and 400 trained weights (the CLI refused more than 256)
  - Max of 100 inputs and Split into 100 outputs (the builder's dy/dx arrays of 64 and the
    rules' stack arrays of 64)
  - Concat of 2000 inputs: its rule emits ~10,000 values at once (the builder reserved room
    for 4096 per rule)
  - value and node names of 1000 characters (512-byte buffers truncated them)
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
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
