#!/usr/bin/env python3
"""Per-call cost of forward + backward from Python: onnxgrad's OrtGradientForwardBackward
(instance.forward(training=True) then instance.backward, numpy in and out, the weights passed
at every call as onnxcustom's users passed them) against PyTorch eager (y = model(x);
y.backward(seed), gradients of the input and every weight) and, when an environment with it
is given, against onnxcustom's OrtGradientForwardBackward on onnxruntime-training: the same
models, weights, inputs and thread count, in the same run.  Each figure is the median of N
calls, best of R rounds that alternate the peers (on a shared machine other processes only
ever slow a round down).

Models: a linear regression (10 features -> 1; batch 1 and 64: nearly all overhead), an MLP
10-3-5-1 (relu, batch 1: the other overhead case of issue 11), models/mlp.onnx (8-16-3 with
softmax, batch 1 and 64), and an MLP 784-512-512-10 (batch 64: mostly compute).  PyTorch
lives in Debian's /usr/bin/python3, which lacks onnx: the torch half of this script runs
there in a subprocess (`--torch-half SPEC.npz`) that answers timing requests on stdin; the
onnxcustom half (`--onnxcustom-half DIR`) likewise runs under --onnxcustom-python (default
$ONNXCUSTOM_PYTHON; skipped when unset), a Python with onnxcustom 0.4.293 and
onnxruntime-training 1.15.1 (see python/tests/make_onnxcustom_refs.py for how to make one).
The models' weights are named I0_..., I1_... so that onnxruntime-training, which wants the
weights sorted and in the graph's order, accepts them.

usage: python3 bench/bench_python.py [--threads 1] [--iters N] [--rounds R]
                                     [--torch-python /usr/bin/python3]
                                     [--onnxcustom-python /tmp/ocenv/bin/python]
The onnxgrad package must be importable (pip install ./python), or ONNXGRAD_LIBRARY set and
python/ on PYTHONPATH."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import benchenv  # bench/: drops OPENBLAS_CORETYPE before numpy loads OpenBLAS

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
    mlp1 = [dense(10, 3) + ("relu",), dense(3, 5) + ("relu",), dense(5, 1) + ("none",)]
    small = None
    mlp_path = os.path.join(ROOT, "models", "mlp.onnx")
    big = [dense(784, 512) + ("relu",), dense(512, 512) + ("relu",), dense(512, 10) + ("none",)]
    return [("linreg", linreg, 1, 10), ("linreg", linreg, 64, 10), ("mlp-10-3-5-1", mlp1, 1, 10),
            ("mlp.onnx", small, 1, 8), ("mlp.onnx", small, 64, 8),
            ("mlp-784-512-512-10", big, 64, 784)], mlp_path


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
        wn, bn = "I%d_W%d" % (2 * i, i), "I%d_b%d" % (2 * i + 1, i)  # sorted, in graph order
        inits += [numpy_helper.from_array(w, wn), numpy_helper.from_array(b, bn)]
        nodes += [helper.make_node("MatMul", [h, wn], ["m%d" % i]),
                  helper.make_node("Add", ["m%d" % i, bn], ["a%d" % i])]
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


def onnxcustom_half(folder):
    """Serve timings of onnxcustom's OrtGradientForwardBackward (onnxruntime-training),
    as torch_half does: "K N" on stdin, the median microseconds on stdout."""
    import onnx
    from onnx.numpy_helper import to_array
    from onnxruntime import SessionOptions
    from onnxruntime.capi import _pybind_state as C

    import onnxcustom.training.ortgradient as og

    if not hasattr(C.OrtModuleGraphBuilder, "get_model"):
        # onnxruntime-training 1.15.1 names two builder methods differently and gives
        # TrainingAgent a local rank: the adapter python/tests/make_onnxcustom_refs.py uses
        class Builder:
            def __init__(self):
                self.b = C.OrtModuleGraphBuilder()

            def __getattr__(self, name):
                return getattr(self.b, {"get_model": "get_gradient_model",
                                        "get_inference_optimized_model": "get_forward_model"
                                        }.get(name, name))

        og.OrtModuleGraphBuilder = Builder
        og.TrainingAgent = lambda *a: C.TrainingAgent(*a, 0)
    data = np.load(os.path.join(folder, "spec.npz"))
    cases = []
    for k in range(int(data["n_cases"])):
        path = os.path.join(folder, "c%d.onnx" % k)
        if not os.path.exists(path):
            cases.append(None)
            continue
        model = onnx.load(path)
        so = SessionOptions()
        so.intra_op_num_threads = int(data["threads"])
        fw = og.OrtGradientForwardBackward(model, sess_options=so)
        weights = [to_array(i) for i in model.graph.initializer]
        cases.append((fw.new_instance(), [data["c%d_x" % k]] + weights, [data["c%d_seed" % k]]))

    print("ready", flush=True)
    for line in sys.stdin:
        k, n = map(int, line.split())
        if cases[k] is None:
            print("nan", flush=True)
            continue
        inst, inputs, seeds = cases[k]
        times = []
        for i in range(n + 20):
            t0 = time.perf_counter()
            inst.forward(inputs, training=True)
            inst.backward(seeds)
            dt = time.perf_counter() - t0
            if i >= 20:
                times.append(dt)
        print("%.3f" % (statistics.median(times) * 1e6), flush=True)


def onnxgrad_us(fw, x, seed, iters):
    inst = fw.new_instance()
    times = []
    seeds = [seed]
    inputs = [x] + [fw.get_initializer(w) for w in fw.weights_to_train]
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
    ap.add_argument("--onnxcustom-python", default=os.environ.get("ONNXCUSTOM_PYTHON"))
    ap.add_argument("--torch-half", metavar="SPEC", help=argparse.SUPPRESS)
    ap.add_argument("--onnxcustom-half", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if benchenv.NOTE:
        print(benchenv.NOTE)
    if args.torch_half:
        torch_half(args.torch_half)
        return 0
    if args.onnxcustom_half:
        onnxcustom_half(args.onnxcustom_half)
        return 0

    import onnxgrad

    cases, mlp_path = specs()
    rng = np.random.default_rng(1)
    spec = {"threads": args.threads, "n_cases": len(cases)}
    runs = []
    models = {}
    for k, (name, layers, batch, n_in) in enumerate(cases):
        if layers is None:  # models/mlp.onnx: read its weights for the torch half
            fw = onnxgrad.OrtGradientForwardBackward(mlp_path, threads=args.threads)
            layers = [(fw.get_initializer("W1"), fw.get_initializer("b1"), "relu"),
                      (fw.get_initializer("W2"), fw.get_initializer("b2"), "softmax")]
        else:
            models[k] = onnx_model(layers)
            fw = onnxgrad.OrtGradientForwardBackward(models[k], threads=args.threads)
        x = rng.standard_normal((batch, n_in)).astype(np.float32)
        seed = rng.standard_normal((batch, layers[-1][0].shape[1])).astype(np.float32)
        n = args.iters if k < 5 else max(20, args.iters // 50)
        runs.append((fw, x, seed, n))
        spec["c%d_layers" % k] = len(layers)
        for i, (w, b, act) in enumerate(layers):
            spec["c%d_W%d" % (k, i)], spec["c%d_b%d" % (k, i)] = w, b
            spec["c%d_act%d" % (k, i)] = act
        spec["c%d_x" % k], spec["c%d_seed" % k] = x, seed

    def start(python, flag, target):
        if not python:
            return None
        try:
            proc = subprocess.Popen([python, "-W", "ignore", os.path.abspath(__file__), flag,
                                     target], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True)
        except OSError:
            proc = None
        if proc is None or proc.stdout.readline().strip() != "ready":
            print("the %s half did not start (%s)" % (flag[2:-5], python))
            return None
        return proc

    def ask(proc, k, n):
        proc.stdin.write("%d %d\n" % (k, n))
        proc.stdin.flush()
        return float(proc.stdout.readline())

    with tempfile.TemporaryDirectory() as tmp:
        sp = os.path.join(tmp, "spec.npz")
        np.savez(sp, **{k: np.asarray(v) for k, v in spec.items()})
        for k, m in models.items():
            with open(os.path.join(tmp, "c%d.onnx" % k), "wb") as f:
                f.write(m.SerializeToString())
        for k, (name, layers, _, _) in enumerate(cases):
            if layers is None:  # models/mlp.onnx, its weights renamed for onnxruntime-training
                import onnx
                from onnxgrad.utils.onnx_helper import onnx_rename_weights

                renamed = onnx_rename_weights(onnx.load(mlp_path))
                onnx.save(renamed, os.path.join(tmp, "c%d.onnx" % k))
        peers = [start(args.torch_python, "--torch-half", sp),
                 start(args.onnxcustom_python, "--onnxcustom-half", tmp)]
        # rounds alternating onnxgrad and its peers on each case; the best round's median of
        # each counts (other processes on the machine only ever slow a round down)
        ours = [float("inf")] * len(cases)
        theirs = [[float("inf") if p else float("nan")] * len(cases) for p in peers]
        for _ in range(args.rounds):
            for k, (fw, x, seed, n) in enumerate(runs):
                ours[k] = min(ours[k], onnxgrad_us(fw, x, seed, n))
                for p, t in zip(peers, theirs):
                    if p:
                        v = ask(p, k, n)
                        t[k] = min(t[k], v) if v == v else v  # nan: no such case
        for p in peers:
            if p:
                p.stdin.close()
                p.wait()
    print("forward+backward per call, median microseconds, %d thread(s); ratios "
          "onnxgrad / peer, lower is better" % args.threads)
    print("%-20s %6s %12s %12s %7s %14s %7s" % ("model", "batch", "onnxgrad us", "pytorch us",
                                                "ratio", "onnxcustom us", "ratio"))
    for k, (name, _, batch, _) in enumerate(cases):
        t, c = theirs[0][k], theirs[1][k]
        print("%-20s %6d %12.1f %12.1f %7.2f %14.1f %7.2f" % (
            name, batch, ours[k], t, ours[k] / t, c, ours[k] / c))
    if not peers[1]:
        print("onnxcustom: not measured (--onnxcustom-python); measured here earlier with "
              "onnxruntime-training 1.15.1: 22-25 us (linreg, batch 1), 42-54 us (MLP "
              "10-3-5-1, batch 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
