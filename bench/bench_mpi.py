#!/usr/bin/env python3
"""Data-parallel throughput: `mpirun -np 2 onnxgrad train` (2 ranks x 1 thread) against
`onnxgrad train` (1 process x 1 thread), on a GEMM-bound MLP (784-512-512-10, batch 64 per
rank) and on ResNet-18 (3x64x64, 10 classes, batch 8 per rank), both from
bench/export_models.py's PyTorch classes with random weights, on synthetic data with Adam.

The ranks keep their per-rank batch, so 2 ranks take global batches twice as large and the
same number of steps per epoch each (weak scaling, the usual data-parallel measure).
Two measures:

  - wall clock: samples/s from rank 0's history, over the epochs after the first (as
    bench_fit.py), and their ratio; only meaningful on an idle machine;
  - CPU time: the CPU seconds the run's processes spent per sample, from two runs of
    different lengths (their difference leaves out start-up), and 2 x (1 rank's) / (2
    ranks' summed): the ratio an idle 2-core machine gives when ranks do not wait for each
    other.  It holds up when other programs load the machine.

The ceiling: two independent 1-rank runs started at once (no communication and no waiting,
but the cores, caches and memory bandwidth shared as 2 ranks share them), their samples/s
summed against one run alone; 2 ranks cannot beat it.

The 2-rank runs are made with gradient buckets of --bucket-mb (reductions overlap the
backward pass) and with one bucket started after it (no overlap); `onnxgrad train` reports
the communication time per step and the part the backward pass did not hide (wall clock).
Medians of --repeat runs; the load average before and after is printed.

Usage: /usr/bin/python3 bench/bench_mpi.py [--build build] [--repeat 3] [--models DIR]
"""
import argparse
import csv
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

import benchenv  # bench/: drops OPENBLAS_CORETYPE before numpy loads OpenBLAS

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def export(models):
    """mlp.onnx and resnet18_64.onnx (3x64x64 input, 10 classes) in `models`."""
    os.makedirs(models, exist_ok=True)
    mlp, res = os.path.join(models, "mlp.onnx"), os.path.join(models, "resnet18_64.onnx")
    if os.path.exists(mlp) and os.path.exists(res):
        return mlp, res
    import torch  # Debian's python3-torch: run this script with /usr/bin/python3
    sys.path.insert(0, HERE)
    import export_models as em
    torch.manual_seed(0)
    em.export(em.MLP(), torch.randn(64, 784), mlp[:-5])
    em.export(em.ResNet18(classes=10), torch.randn(8, 3, 64, 64), res[:-5])
    return mlp, res


def env():
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
             OMP_WAIT_POLICY="passive")
    return e


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cli(build, model, data, batch, epochs, tmp, bucket_mb):
    return [os.path.join(build, "onnxgrad"), "train", model, "--data", data, "--loss",
            "cross-entropy", "--optimizer", "adam", "--lr", "0.001", "--epochs", str(epochs),
            "--batch-size", str(batch), "--threads", "1", "--bucket-mb", str(bucket_mb),
            "-o", os.path.join(tmp, "trained.onnx")]


def run(build, ranks, model, data, batch, epochs, tmp, bucket_mb, together=1):
    """One run of `ranks` ranks; together > 1 (ranks 1): that many independent processes
    started at once (the ceiling the machine allows: no communication, no waiting, but the
    cores, caches and memory bandwidth shared as 2 ranks share them), their samples/s summed."""
    if together > 1:
        dirs = [os.path.join(tmp, "p%d" % i) for i in range(together)]
        cpu0 = children_cpu()
        procs = []
        for d in dirs:
            os.makedirs(d, exist_ok=True)
            procs.append(subprocess.Popen(_cli(build, model, data, batch, epochs, d, bucket_mb),
                                          stdout=subprocess.DEVNULL, env=env()))
        for p in procs:
            if p.wait() != 0:
                raise RuntimeError("an independent run failed")
        cpu = children_cpu() - cpu0
        n = len(np.load(data)["y"])
        sps = 0.0
        for d in dirs:
            secs = [float(row["seconds"])
                    for row in csv.DictReader(open(os.path.join(d, "trained.csv")))]
            sps += n * (epochs - 1) / (secs[-1] - secs[0])
        return {"sps": sps, "cpu": cpu, "samples": together * n * epochs, "comm": 0.0,
                "exposed": 0.0, "step": 0.0, "buckets": 0}
    out = os.path.join(tmp, "trained.onnx")
    cli = _cli(build, model, data, batch, epochs, tmp, bucket_mb)
    cmd = (["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + cli
           if ranks > 1 else cli)
    cpu0 = children_cpu()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env(), check=True)
    cpu = children_cpu() - cpu0
    rows = list(csv.DictReader(open(os.path.join(tmp, "trained.csv"))))
    n = len(np.load(data)["y"])
    secs = [float(row["seconds"]) for row in rows]
    comm = re.search(r"communication ([0-9.]+) ms per step, ([0-9.]+) ms of it not hidden by "
                     r"the backward pass \(step ([0-9.]+) ms\)", r.stdout)
    buckets = re.search(r"; (\d+) gradient bucket", r.stdout)
    return {"sps": n * (epochs - 1) / (secs[-1] - secs[0]), "cpu": cpu, "samples": n * epochs,
            "comm": float(comm.group(1)) if comm else 0.0,
            "exposed": float(comm.group(2)) if comm else 0.0,
            "step": float(comm.group(3)) if comm else 0.0,
            "buckets": int(buckets.group(1)) if buckets else 0}


def measure(build, ranks, model, data, batch, epochs, tmp, bucket_mb, together=1):
    """A short and a long run: wall-clock samples/s of the long one, and CPU seconds per
    sample from their difference."""
    short = run(build, ranks, model, data, batch, 2, tmp, bucket_mb, together)
    long = run(build, ranks, model, data, batch, epochs, tmp, bucket_mb, together)
    long["cpu_per_sample"] = (long["cpu"] - short["cpu"]) / (long["samples"] - short["samples"])
    return long


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bucket-mb", type=float, default=1.0)
    ap.add_argument("--cases", default="mlp,resnet18")
    args = ap.parse_args()
    if benchenv.NOTE:
        print(benchenv.NOTE)
    if not shutil.which("mpirun") or not os.path.exists(
            os.path.join(args.build, "libonnxgrad_mpi.so")):
        print("bench_mpi: skipped, mpirun or libonnxgrad_mpi missing (scripts/setup.sh "
              "installs Open MPI)")
        return 0
    mlp, res = export(args.models)
    tmp = tempfile.mkdtemp(prefix="og_bench_mpi_")
    rng = np.random.default_rng(0)
    cases = {
        # model, per-rank batch, samples, epochs of the long run, sample shape
        "mlp": (mlp, 64, 64 * 2 * 40, 6, (784,)),
        "resnet18": (res, 8, 8 * 2 * 12, 4, (3, 64, 64)),  # 24 steps per epoch on 1 rank
    }
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    print("| model | samples/s 1 rank / 2 ranks (wall) | ratio (wall) | CPU ms per sample 1 rank "
          "/ 2 ranks | ratio (CPU) | buckets | comm ms/step | not hidden ms/step | step ms "
          "| one bucket: ratio (CPU), not hidden ms/step | ceiling: 2 independent processes "
          "ratio (wall), ratio (CPU) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    try:
        for name in args.cases.split(","):
            model, batch, n, epochs, shape = cases[name]
            data = os.path.join(tmp, name + ".npz")
            np.savez(data, X=rng.normal(size=(n,) + shape).astype(np.float32),
                     y=rng.integers(0, 10, size=n).astype(np.int64))
            one, two, mono, indep = [], [], [], []
            for _ in range(args.repeat):
                one.append(measure(args.build, 1, model, data, batch, epochs, tmp,
                                   args.bucket_mb))
                two.append(measure(args.build, 2, model, data, batch, epochs, tmp,
                                   args.bucket_mb))
                mono.append(measure(args.build, 2, model, data, batch, epochs, tmp, 1e5))
                indep.append(measure(args.build, 1, model, data, batch, epochs, tmp,
                                     args.bucket_mb, together=2))

            def med(runs, key):
                return statistics.median(r[key] for r in runs)
            c1, c2, c3, c4 = (med(r, "cpu_per_sample") for r in (one, two, mono, indep))
            print("| %s | %.0f / %.0f | %.2fx | %.3f / %.3f | %.2fx | %d | %.2f | %.2f | %.1f "
                  "| %.2fx, %.2f | %.2fx, %.2fx |" % (
                      name, med(one, "sps"), med(two, "sps"), med(two, "sps") / med(one, "sps"),
                      1e3 * c1, 1e3 * c2, 2 * c1 / c2, two[0]["buckets"], med(two, "comm"),
                      med(two, "exposed"), med(two, "step"), 2 * c1 / c3, med(mono, "exposed"),
                      med(indep, "sps") / med(one, "sps"), 2 * c1 / c4),
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
