#!/usr/bin/env python3
"""Time og_grad_create alone: the model is loaded once, then og_grad_create (clone of the
forward graph, reverse pass, pruning, resolution, the training session's plan, the eval
graph and the forward/backward split) and og_grad_free are called through ctypes; the
figure is the median of the og_grad_create calls (og_grad_free and loading are not timed).
No tensor is bound and nothing runs, so it isolates building a gradient object better
than `onnxgrad grad`, whose time includes reading the inputs and running the graph.

Models: ResNet-18 (bench/export_models.py, exported with Debian's /usr/bin/python3 if
bench/models/resnet18.onnx is missing) and chains of N Relu nodes (x [1, 16] -> y),
generated with the onnx package into bench/models/relu_chain_N.onnx.  Every float input
gets a gradient and every float initializer is trained (the chains have none; the exported
ResNet-18 has 49 nodes, BatchNorm folded into the convolutions, and 42 initializers).

usage: python3 bench/bench_grad_create.py [--build build] [--runs 5]
                                          [--chains 10000,100000,1000000] [--no-resnet]
                                          [--timeout S]
Each model is timed in a child process; one that takes longer than --timeout seconds in
all (default 300) is reported as "> TIMEOUT" (the code before the name index was
quadratic in the chain length).  Generating the 1M chain the first time takes a minute or
two; `make bench` leaves it out."""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = os.path.join(HERE, "models")


def relu_chain(n):
    """bench/models/relu_chain_N.onnx, written once."""
    path = os.path.join(MODELS, "relu_chain_%d.onnx" % n)
    if os.path.exists(path):
        return path
    import onnx
    from onnx import TensorProto, helper

    names = ["x"] + ["r%d" % i for i in range(1, n)] + ["y"]
    nodes = [helper.make_node("Relu", [names[i]], [names[i + 1]], name="relu%d" % i)
             for i in range(n)]
    graph = helper.make_graph(nodes, "relu_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(MODELS, exist_ok=True)
    onnx.save(model, path)
    return path


def resnet18():
    path = os.path.join(MODELS, "resnet18.onnx")
    if not os.path.exists(path):
        subprocess.run(["/usr/bin/python3", "-W", "ignore", os.path.join(HERE, "export_models.py"),
                        MODELS], check=True, stdout=subprocess.DEVNULL)
    return path


def load_library(build):
    lib = ctypes.CDLL(os.path.join(os.path.abspath(build), "libonnxgrad.so"))
    pp = ctypes.POINTER(ctypes.c_void_p)
    lib.og_model_load_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p, pp]
    lib.og_model_load_file.restype = ctypes.c_int
    lib.og_model_free.argtypes = [ctypes.c_void_p]
    lib.og_grad_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, pp]
    lib.og_grad_create.restype = ctypes.c_int
    lib.og_grad_free.argtypes = [ctypes.c_void_p]
    lib.og_last_error.restype = ctypes.c_char_p
    return lib


def time_grad_create(lib, path, runs):
    """Median seconds of og_grad_create over `runs` calls."""
    model = ctypes.c_void_p()
    if lib.og_model_load_file(path.encode(), None, ctypes.byref(model)):
        raise RuntimeError("loading %s: %s" % (path, lib.og_last_error().decode()))
    times = []
    try:
        for _ in range(runs):
            grad = ctypes.c_void_p()
            t0 = time.perf_counter()
            st = lib.og_grad_create(model, None, ctypes.byref(grad))
            times.append(time.perf_counter() - t0)
            if st:
                raise RuntimeError("og_grad_create on %s: %s" %
                                   (path, lib.og_last_error().decode()))
            lib.og_grad_free(grad)
    finally:
        lib.og_model_free(model)
    return statistics.median(times)


def child_ms(args, path):
    """Median milliseconds measured in a child process, None past the timeout."""
    cmd = [sys.executable, os.path.abspath(__file__), "--build", args.build, "--runs",
           str(args.runs), "--one", path]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                             check=True)
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as e:
        raise RuntimeError(e.stderr.strip()) from None
    return float(res.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chains", default="10000,100000,1000000")
    ap.add_argument("--no-resnet", action="store_true")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # the child: time one model
    args = ap.parse_args()
    if args.one:
        print("%.3f" % (time_grad_create(load_library(args.build), args.one, args.runs) * 1e3))
        return
    cases = [] if args.no_resnet else [("resnet18", resnet18())]
    cases += [("relu chain %d" % int(n), relu_chain(int(n)))
              for n in args.chains.split(",") if n]
    print("og_grad_create, median of %d calls (%s)" % (args.runs, args.build))
    print("%-20s %12s" % ("model", "ms"))
    for name, path in cases:
        ms = child_ms(args, path)
        print("%-20s %12s" % (name, "> %gs" % args.timeout if ms is None else "%.1f" % ms))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
