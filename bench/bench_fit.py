#!/usr/bin/python3
"""Training throughput: `onnxgrad train` against the same loop in PyTorch eager (shuffled
mini-batches, softmax cross-entropy, Adam), same model, data, batch size and thread count,
in the same run.  Prints samples per second of both and the ratio onnxgrad / PyTorch
(higher is better), after a warm-up epoch.  Runs under Debian's python3-torch; the digits
data come from scripts/export_digits.py (run with the pyenv python3, which has
scikit-learn).

usage: /usr/bin/python3 bench/bench_fit.py [--build build] [--epochs N] [--repeat R]"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import benchenv  # bench/: drops OPENBLAS_CORETYPE before numpy loads OpenBLAS

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export_models import LeNet  # noqa: E402
from torch_threads import set_threads  # noqa: E402


class DigitsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def torch_throughput(model, x, y, batch, epochs, threads):
    set_threads(threads)
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    n = len(y)
    t1 = None
    for epoch in range(epochs):
        if epoch == 1:
            t1 = time.perf_counter()
        perm = torch.randperm(n)
        for b in range(0, n, batch):
            idx = perm[b:b + batch]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    return n * (epochs - 1) / (time.perf_counter() - t1)


def og_throughput(build, model_path, data_path, batch, epochs, threads, tmp):
    out = os.path.join(tmp, "trained.onnx")
    subprocess.run([os.path.join(build, "onnxgrad"), "train", model_path, "--data", data_path,
                    "--loss", "cross-entropy", "--optimizer", "adam", "--lr", "0.001",
                    "--epochs", str(epochs), "--batch-size", str(batch), "--threads",
                    str(threads), "-q", "-o", out], check=True)
    rows = list(csv.DictReader(open(os.path.join(tmp, "trained.csv"))))
    n = len(np.load(data_path)["y"])
    secs = [float(r["seconds"]) for r in rows]
    return n * (epochs - 1) / (secs[-1] - secs[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if benchenv.NOTE:
        print(benchenv.NOTE)
    build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["python3", os.path.join(HERE, "..", "scripts", "export_digits.py"), tmp],
                       check=True, stdout=subprocess.DEVNULL)
        digits = np.load(os.path.join(tmp, "digits_train.npz"))
        rng = np.random.default_rng(0)
        lx = rng.standard_normal((2048, 1, 28, 28)).astype(np.float32)
        ly = rng.integers(0, 10, 2048).astype(np.int64)
        np.savez(os.path.join(tmp, "lenet.npz"), X=lx, y=ly)
        cases = [("mlp_digits", DigitsMLP, digits["X"], digits["y"], 32,
                  os.path.join(tmp, "digits_train.npz")),
                 ("lenet_random", LeNet, lx, ly, 64, os.path.join(tmp, "lenet.npz"))]
        for name, cls, x, y, batch, data in cases:
            torch.manual_seed(0)
            model = cls()
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, torch.from_numpy(x[:2]), path, input_names=["X"],
                              output_names=["logits"], dynamic_axes={"X": {0: "N"}},
                              opset_version=13)
            for threads in (1, 2):
                og, pt = [], []
                for _ in range(args.repeat):
                    og.append(og_throughput(build, path, data, batch, args.epochs, threads, tmp))
                    m = cls()
                    pt.append(torch_throughput(m, x, y, batch, args.epochs, threads))
                o, p = statistics.median(og), statistics.median(pt)
                print(json.dumps({"model": name, "threads": threads, "batch": batch,
                                  "onnxgrad_samples_s": round(o), "torch_samples_s": round(p),
                                  "ratio": round(o / p, 3)}))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
