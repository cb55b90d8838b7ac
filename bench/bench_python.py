#!/usr/bin/env python3
"""Per-call cost of forward + backward from Python: onnxgrad's OrtGradientForwardBackward
(instance.forward(training=True) then instance.backward, numpy in and out) against PyTorch
eager (y = model(x); y.backward(seed), gradients of the input and every weight) on the same
models, weights, inputs and thread count, in the same run.  Each figure is the median of
N calls, best of R rounds that alternate onnxgrad and PyTorch (on a shared machine other
processes only ever slow a round down).

Models: a linear regression (10 features -> 1; batch 1 and 64: nearly all overhead),
models/mlp.onnx (8-16-3 with softmax, batch 1 and 64), and an MLP 784-512-512-10 (batch 64:
mostly compute).  PyTorch lives in Debian's /usr/bin/python3, which lacks onnx: the torch
half of this script runs there in a subprocess (`--torch-half SPEC.npz`) that answers timing
requests on stdin.

usage: python3 bench/bench_python.py [--threads 1] [--iters N] [--rounds R]
                                     [--torch-python /usr/bin/python3]
The onnxgrad package must be importable (pip install ./python), or ONNXGRAD_LIBRARY set and
python/ on PYTHONPATH."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------------------------------
# model specs: a list of layers (W [in, out], b [out], activation after), shared by halves
# ---------------------------------------------------------------------------------------


def specs():
    rng = np.random.default_rng(0)

    def dense(n_in, n_out, scale=None):
        s = scale if scale is not None else 1.0 / np.sqrt(n_in)
        return ((rng.standard_normal((n_in, n_out)) * s).astype(np.float32),
                (rng.standard_normal(n_out) * 0.1).astype(np.float32))

    linreg = [dense(10, 1) + ("none",)]
    small = None
    mlp_path = os.path.join(ROOT, "models", "mlp.onnx")
    big = [dense(784, 512) + ("relu",), dense(512, 512) + ("relu",), dense(512, 10) + ("none",)]
    return [("linreg", linreg, 1, 10), ("linreg", linreg, 64, 10), ("mlp.onnx", small, 1, 8),
            ("mlp.onnx", small, 64, 8), ("mlp-784-512-512-10", big, 64, 784)], mlp_path


# ---------------------------------------------------------------------------------------
# the PyTorch half (runs under /usr/bin/python3)
# ---------------------------------------------------------------------------------------


def torch_half(spec_path):
    """Serve timings: read "K N" lines on stdin (case K, N timed calls), answer the median
    microseconds of one forward+backward, one line each."""
    import torch  # noqa: F401

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_threads import set_threads

    data = np.load(spec_path)
    set_threads(int(data["threads"]))
    cases = []
    for k in range(int(data["n_cases"])):
        layers = []
        for i in range(int(data["c%d_layers" % k])):
            w = torch.tensor(data["c%d_W%d" % (k, i)], requires_grad=True)
            b = torch.tensor(data["c%d_b%d" % (k, i)], requires_grad=True)
            layers.append((w, b, str(data["c%d_act%d" % (k, i)])))
        x = torch.tensor(data["c%d_x" % k], requires_grad=True)
        cases.append((layers, x, torch.tensor(data["c%d_seed" % k])))

    def median_us(k, n):
        layers, x, seed = cases[k]
        params = [p for w, b, _ in layers for p in (w, b)]
        times = []
        for i in range(n + 20):
            t0 = time.perf_counter()
            h = x
            for w, b, act in layers:
                h = h @ w + b
                if act == "relu":
                    h = torch.relu(h)
                elif act == "softmax":
                    h = torch.softmax(h, dim=-1)
            h.backward(seed)
            dt = time.perf_counter() - t0
            x.grad = None
            for p in params:
                p.grad = None
            if i >= 20:
                times.append(dt)
        return statistics.median(times) * 1e6

    print("ready", flush=True)
    for line in sys.stdin:
        k, n = map(int, line.split())
        print("%.3f" % median_us(k, n), flush=True)


# ---------------------------------------------------------------------------------------
# the onnxgrad half
# ---------------------------------------------------------------------------------------


def onnx_model(layers):
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, h = [], [], "x"
    for i, (w, b, act) in enumerate(layers):
        inits += [numpy_helper.from_array(w, "W%d" % i), numpy_helper.from_array(b, "b%d" % i)]
        nodes += [helper.make_node("MatMul", [h, "W%d" % i], ["m%d" % i]),
                  helper.make_node("Add", ["m%d" % i, "b%d" % i], ["a%d" % i])]
        h = "a%d" % i
        if act == "relu":
            nodes.append(helper.make_node("Relu", [h], ["r%d" % i]))
            h = "r%d" % i
    nodes[-1].output[0] = "y"  # the last node writes the graph output
    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", layers[0][0].shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", layers[-1][0].shape[1]])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def onnxgrad_us(fw, x, seed, iters):
    inst = fw.new_instance()
    times = []
    seeds = [seed]
    inputs = [x]
    forward, backward = inst.forward, inst.backward
    perf = time.perf_counter
    for i in range(iters + 20):
        t0 = perf()
        forward(inputs, True)
        backward(seeds)
        dt = perf() - t0
        if i >= 20:
            times.append(dt)
    return statistics.median(times) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--torch-half", metavar="SPEC", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_half:
        torch_half(args.torch_half)
        return 0

    import onnxgrad

    cases, mlp_path = specs()
    rng = np.random.default_rng(1)
    spec = {"threads": args.threads, "n_cases": len(cases)}
    runs = []
    for k, (name, layers, batch, n_in) in enumerate(cases):
        if layers is None:  # models/mlp.onnx: read its weights for the torch half
            fw = onnxgrad.OrtGradientForwardBackward(mlp_path, threads=args.threads)
            layers = [(fw.get_initializer("W1"), fw.get_initializer("b1"), "relu"),
                      (fw.get_initializer("W2"), fw.get_initializer("b2"), "softmax")]
        else:
            fw = onnxgrad.OrtGradientForwardBackward(onnx_model(layers), threads=args.threads)
        x = rng.standard_normal((batch, n_in)).astype(np.float32)
        seed = rng.standard_normal((batch, layers[-1][0].shape[1])).astype(np.float32)
        n = args.iters if k < 4 else max(20, args.iters // 50)
        runs.append((fw, x, seed, n))
        spec["c%d_layers" % k] = len(layers)
        for i, (w, b, act) in enumerate(layers):
            spec["c%d_W%d" % (k, i)], spec["c%d_b%d" % (k, i)] = w, b
            spec["c%d_act%d" % (k, i)] = act
        spec["c%d_x" % k], spec["c%d_seed" % k] = x, seed

    with tempfile.TemporaryDirectory() as tmp:
        sp = os.path.join(tmp, "spec.npz")
        np.savez(sp, **{k: np.asarray(v) for k, v in spec.items()})
        proc = subprocess.Popen([args.torch_python, "-W", "ignore", os.path.abspath(__file__),
                                 "--torch-half", sp], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        if proc.stdout.readline().strip() != "ready":
            print("the PyTorch half did not start (%s)" % args.torch_python)
            proc = None
        # rounds alternating onnxgrad and PyTorch on each case; the best round's median of
        # each counts (other processes on the machine only ever slow a round down)
        ours = [float("inf")] * len(cases)
        theirs = [float("inf") if proc else float("nan")] * len(cases)
        for _ in range(args.rounds):
            for k, (fw, x, seed, n) in enumerate(runs):
                ours[k] = min(ours[k], onnxgrad_us(fw, x, seed, n))
                if proc:
                    proc.stdin.write("%d %d\n" % (k, n))
                    proc.stdin.flush()
                    theirs[k] = min(theirs[k], float(proc.stdout.readline()))
        if proc:
            proc.stdin.close()
            proc.wait()
    print("forward+backward per call, median microseconds, %d thread(s) "
          "(ratio onnxgrad / PyTorch eager, lower is better)" % args.threads)
    print("%-20s %6s %12s %12s %7s" % ("model", "batch", "onnxgrad us", "pytorch us", "ratio"))
    for k, (name, _, batch, _) in enumerate(cases):
        print("%-20s %6d %12.1f %12.1f %7.2f" % (name, batch, ours[k], theirs[k],
                                                 ours[k] / theirs[k]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
