#!/usr/bin/env python3
"""The machine's single-thread SGEMM peak in GFLOP/s: the best of several 2048x2048x2048
float32 products (by CPU time, which other processes on the machine do not inflate), through the BLAS of the interpreter running this (numpy's OpenBLAS, or
PyTorch's MKL when torch imports).  Run with OMP_NUM_THREADS=1 / OPENBLAS_NUM_THREADS=1 /
MKL_NUM_THREADS=1 set (bench_inference.py does).  Prints the number."""
import time

import numpy as np


def best(mm, a, b, reps=5):
    mm(a, b)
    t = min(_timed(mm, a, b) for _ in range(reps))
    return 2.0 * a.shape[0] * a.shape[1] * b.shape[1] / t / 1e9


def _timed(mm, a, b):
    """CPU time of one product (one thread: on a shared machine, the time it computed)"""
    t0 = time.process_time()
    mm(a, b)
    return time.process_time() - t0


n = 2048
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
peak = best(np.matmul, a, b)
try:
    import torch
    torch.set_num_threads(1)
    peak = max(peak, best(torch.mm, torch.from_numpy(a), torch.from_numpy(b)))
except ImportError:
    pass
print("%.1f" % peak)
