#!/usr/bin/env python3
"""Inference benchmark: onnxgrad against onnxruntime, in the same run, on the same models
and inputs, at 1 and 2 threads.  Prints the median milliseconds of each and the ratio
onnxgrad / onnxruntime (lower is better; aim <= 1.5).

usage: bench_inference.py [--build build] [--iters N] [--models DIR]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

MODELS = ("mlp", "lenet", "resnet18")


def time_ort(path, x, threads, iters):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    for _ in range(3):
        sess.run(None, feed)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        out = sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), out[0]


def run_onnxgrad(cli, path, xfile, threads, iters):
    res = subprocess.run([cli, "bench", path, "--input", "x=" + xfile, "--threads", str(threads),
                          "-n", str(iters)], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip())
    return json.loads(res.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--models", default="bench/models")
    args = ap.parse_args()
    cli = os.path.join(args.build, "onnxgrad")
    if not all(os.path.exists(os.path.join(args.models, m + ".onnx")) for m in MODELS):
        subprocess.run(["/usr/bin/python3", "bench/export_models.py", args.models], check=True)
    print("%-10s %7s %14s %14s %8s" % ("model", "threads", "onnxgrad ms", "onnxruntime ms",
                                       "ratio"))
    for m in MODELS:
        path = os.path.join(args.models, m + ".onnx")
        xfile = os.path.join(args.models, m + "_x.npy")
        x = np.load(xfile)
        for threads in (1, 2):
            iters = max(5, args.iters // (10 if m == "resnet18" else 1))
            try:
                og = run_onnxgrad(cli, path, xfile, threads, iters)
            except RuntimeError as e:
                print("%-10s %7d  onnxgrad failed: %s" % (m, threads, e))
                continue
            ort_ms, _ = time_ort(path, x, threads, iters)
            print("%-10s %7d %14.3f %14.3f %8.2f" % (m, threads, og["median_ms"], ort_ms,
                                                     og["median_ms"] / ort_ms))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
