#!/usr/bin/env python3
"""One PyTorch side of the training-step benchmark, in a process of its own (so that its
peak memory is its own): build model NAME as export_models.train_model() does, load the
weights the ONNX model was exported with (DIR/NAME_state.pt), and time ITERS steps of
forward + backward (output gradients = ones, gradients of the weights and the input) at
THREADS threads.  Prints JSON: median_ms, median_cpu_ms (the process's CPU time), peak_rss_kb (VmHWM), torch version.

usage: python torch_step.py NAME DIR THREADS ITERS"""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import train_model  # noqa: E402
from torch_threads import set_threads  # noqa: E402


def peak_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def main():
    name, folder, threads, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    set_threads(threads)
    model, _ = train_model(name)
    state = torch.load(os.path.join(folder, name + "_state.pt"))
    model.load_state_dict(state)
    model.eval()  # as exported: batch norm with its running statistics
    x = torch.from_numpy(np.load(os.path.join(folder, name + "_x.npy")))
    xr = x.clone().requires_grad_(True)
    times, cpu = [], []
    for i in range(iters + 3):
        t0, c0 = time.perf_counter(), time.process_time()
        y = model(xr)
        y.backward(torch.ones_like(y))
        dt = (time.perf_counter() - t0) * 1e3
        dc = (time.process_time() - c0) * 1e3
        model.zero_grad(set_to_none=True)
        xr.grad = None
        if i >= 3:
            times.append(dt)
            cpu.append(dc)
    print(json.dumps({"median_ms": statistics.median(times),
                      "median_cpu_ms": statistics.median(cpu), "peak_rss_kb": peak_rss_kb(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
