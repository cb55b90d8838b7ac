#!/usr/bin/python3
"""Training-step benchmark: one forward + backward (output gradients = ones, gradients of
every weight and of the input) in onnxgrad and in PyTorch eager, same models, same inputs,
same thread count, in the same run.  Prints median milliseconds, the ratio onnxgrad /
PyTorch (lower is better) and both peak RSS.  Runs under Debian's python3-torch.

usage: /usr/bin/python3 bench/bench_train.py [--build build] [--iters N] [MODEL ...]"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import MLP, LeNet, ResNet18, export  # noqa: E402
from torch_threads import set_threads  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "grad"))
from torch_check import TransformerBlock  # noqa: E402


class LSTMNet(torch.nn.Module):
    """two stacked LSTM layers (input 128, hidden 256), batch first"""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(128, 256, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


def models(only=None):
    torch.manual_seed(0)
    all_models = [("mlp", MLP, (64, 784)), ("lenet", LeNet, (64, 1, 28, 28)),
                  ("transformer", lambda: TransformerBlock(d=256, heads=4), (8, 64, 256)),
                  ("resnet18", ResNet18, (8, 3, 64, 64)), ("lstm", LSTMNet, (32, 64, 128))]
    return [(name, make(), torch.randn(*shape)) for name, make, shape in all_models
            if not only or name in only]


def torch_step_ms(model, x, threads, iters):
    set_threads(threads)
    model.eval()
    xr = x.clone().requires_grad_(True)
    times = []
    for i in range(iters + 3):
        t0 = time.perf_counter()
        y = model(xr)
        y.backward(torch.ones_like(y))
        dt = (time.perf_counter() - t0) * 1e3
        model.zero_grad(set_to_none=True)
        xr.grad = None
        if i >= 3:
            times.append(dt)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", default="bench/models/train")
    ap.add_argument("models", nargs="*", help="only these (mlp, lenet, transformer, resnet18, "
                    "lstm)")
    args = ap.parse_args()
    cli = os.path.join(args.build, "onnxgrad")
    os.makedirs(args.out, exist_ok=True)
    print("%-12s %7s %12s %12s %7s %14s" % ("model", "threads", "onnxgrad ms", "pytorch ms",
                                            "ratio", "onnxgrad RSS MB"))
    for name, model, x in models(args.models):
        path = os.path.join(args.out, name)
        model.eval()
        export(model, x, path)
        for threads in (1, 2):
            iters = max(5, args.iters // (4 if name == "resnet18" else 1))
            res = subprocess.run([cli, "bench", path + ".onnx", "--input", "x=" + path + "_x.npy",
                                  "--train", "--threads", str(threads), "-n", str(iters)],
                                 capture_output=True, text=True)
            if res.returncode:
                print("%-12s %7d  onnxgrad failed: %s" % (name, threads, res.stderr.strip()))
                continue
            og = json.loads(res.stdout)
            pt = torch_step_ms(model, x, threads, iters)
            print("%-12s %7d %12.3f %12.3f %7.2f %14.1f" % (name, threads, og["median_ms"], pt,
                                                           og["median_ms"] / pt,
                                                           og["peak_rss_kb"] / 1024))
            sys.stdout.flush()
    print("pytorch process peak RSS: %.1f MB" %
          (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


if __name__ == "__main__":
    main()
