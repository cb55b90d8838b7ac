#!/usr/bin/env python3
"""Training-step benchmark: one forward + backward (output gradients = ones, gradients of
every weight and of the input) in onnxgrad and in PyTorch eager, same models, same weights,
same inputs, same thread count, in the same run.  PyTorch is the current release from PyPI
in the bench environment (bench/.venv, made by scripts/setup.sh --bench); --debian adds
Debian's python3-torch as a second column.  Each side runs in a process of its own,
interleaved over --rounds rounds; each figure is the median of the rounds' medians, and
the peak resident memory (VmHWM) of each side's process is printed beside the times.
Ratio: onnxgrad / PyTorch (lower is better), by wall time and by CPU time (each process's:
on a machine that other processes share, the time each side computed).  A second table
gives each step's products (3 x the forward's Conv, Gemm and MatMul) in GFLOP/s beside the
machine's SGEMM peak, and the floor: the products alone at that peak, as a ratio to
PyTorch's step (no kernel goes below it).

usage: python bench/bench_train.py [--build build] [--iters N] [--rounds R] [--debian] [MODEL ...]"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import benchenv  # bench/: drops OPENBLAS_CORETYPE (see there)

HERE = os.path.dirname(os.path.abspath(__file__))
VENV_PY = os.path.join(HERE, ".venv", "bin", "python")
MODELS = ("mlp", "lenet", "transformer", "resnet18", "mobilenetv2", "lstm")


def env_for(spin):
    env = dict(os.environ)
    if not spin:
        env["OMP_WAIT_POLICY"] = "passive"
    return env


def onnxgrad_step(cli, path, threads, iters, spin):
    res = subprocess.run([cli, "bench", path + ".onnx", "--input", "x=" + path + "_x.npy",
                          "--train", "--threads", str(threads), "-n", str(iters)],
                         capture_output=True, text=True, env=env_for(spin))
    if res.returncode:
        raise RuntimeError(res.stderr.strip())
    return json.loads(res.stdout)


def torch_step(python, name, folder, threads, iters, spin=False):
    res = subprocess.run([python, "-W", "ignore", os.path.join(HERE, "torch_step.py"), name,
                          folder, str(threads), str(iters)], capture_output=True, text=True,
                         env=env_for(spin))
    if res.returncode:
        raise RuntimeError(res.stderr.strip().splitlines()[-1])
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench/models/train")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("only", nargs="*", metavar="MODEL",
                    help="only these (%s); as --models" % ", ".join(MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--debian", action="store_true", help="also Debian's PyTorch (/usr/bin/python3)")
    ap.add_argument("--spin", action="store_true",
                    help="let waiting OpenMP threads spin (the default of both); by default "
                         "both sides run with OMP_WAIT_POLICY=passive, which a machine shared "
                         "with other busy processes needs")
    args = ap.parse_args()
    if benchenv.NOTE:
        print(benchenv.NOTE)
    cli = os.path.join(args.build, "onnxgrad")
    if not os.path.exists(VENV_PY):
        sys.exit("bench_train: no bench environment; run scripts/setup.sh --bench")
    names = args.only or args.models.split(",")
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error("unknown model %s (the models: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    if not all(os.path.exists(os.path.join(args.out, m + "_state.pt")) for m in names):
        subprocess.run(["/usr/bin/python3", "-W", "ignore", os.path.join(HERE, "export_models.py"),
                        "--train", args.out], check=True)
    peers = [("pypi", VENV_PY)] + ([("debian", "/usr/bin/python3")] if args.debian else [])
    version = torch_step(VENV_PY, "mlp", args.out, 1, 1)["torch"]
    print("PyTorch %s (PyPI)%s; medians of %d interleaved rounds; OpenMP threads %s" %
          (version, ", and Debian's" if args.debian else "", args.rounds,
           "spin" if args.spin else "block (OMP_WAIT_POLICY=passive)"))
    head = "%-12s %7s %11s %11s %6s %9s %9s %9s %8s %8s" % (
        "model", "threads", "onnxgrad ms", "torch ms", "ratio", "og cpu", "torch cpu",
        "cpu ratio", "og MB", "torch MB")
    if args.debian:
        head += " %12s %6s" % ("debian ms", "ratio")
    print(head)
    rows = []  # (model, threads, onnxgrad ms, PyTorch ms)
    for name in names:
        path = os.path.join(args.out, name)
        for threads in [int(t) for t in args.threads.split(",")]:
            iters = max(5, args.iters // (4 if name in ("resnet18", "mobilenetv2", "lstm") else 1))
            og, pt = [], {p: [] for p, _ in peers}
            try:
                for _ in range(args.rounds):
                    og.append(onnxgrad_step(cli, path, threads, iters, args.spin))
                    for p, py in peers:
                        pt[p].append(torch_step(py, name, args.out, threads, iters, args.spin))
            except RuntimeError as e:
                print("%-12s %7d  failed: %s" % (name, threads, e))
                continue
            og_ms = statistics.median(r["median_ms"] for r in og)
            pt_ms = {p: statistics.median(r["median_ms"] for r in pt[p]) for p in pt}
            og_cpu = statistics.median(r["median_cpu_ms"] for r in og)
            pt_cpu = statistics.median(r["median_cpu_ms"] for r in pt["pypi"])
            line = "%-12s %7d %11.2f %11.2f %6.2f %9.2f %9.2f %9.2f %8.1f %8.1f" % (
                name, threads, og_ms, pt_ms["pypi"], og_ms / pt_ms["pypi"], og_cpu, pt_cpu,
                og_cpu / pt_cpu, max(r["peak_rss_kb"] for r in og) / 1024,
                max(r["peak_rss_kb"] for r in pt["pypi"]) / 1024)
            if args.debian:
                line += " %12.2f %6.2f" % (pt_ms["debian"], og_ms / pt_ms["debian"])
            print(line)
            sys.stdout.flush()
            rows.append((name, threads, og_ms, pt_ms["pypi"]))
    products(args, rows)


def products(args, rows):
    """The products' share of each step: their GFLOP/s in onnxgrad's step, and the time the
    step's products alone would take at the machine's SGEMM peak (the floor no kernel goes
    below), as a ratio to PyTorch's step.  The step's products are 3 x the forward's (Conv,
    Gemm, MatMul): the forward, the input gradients (the model input's included) and the
    weight gradients.  FLOPs and peak come from bench/flops.py, run by the python3 of PATH
    (the one scripts/setup.sh gives onnx and onnxruntime, which bench/.venv lacks; as the
    Makefile runs bench_inference.py)."""
    here = os.path.dirname(os.path.abspath(__file__))
    flop = {}
    for name in sorted({r[0] for r in rows}):
        path = os.path.join(args.out, name)
        res = subprocess.run(["python3", os.path.join(here, "flops.py"), path + ".onnx",
                              path + "_x.npy"], capture_output=True, text=True)
        if res.returncode == 0 and float(res.stdout) > 0:
            flop[name] = 3.0 * float(res.stdout)
    res = subprocess.run(["python3", os.path.join(here, "flops.py"), "--peak", args.build],
                         capture_output=True, text=True)
    if res.returncode != 0 or not flop:
        print("products: not measured (bench/flops.py: %s)" % res.stderr.strip()[-200:])
        return
    peak, where = float(res.stdout.split()[0]), res.stdout.split()[1]
    print("products of a step (3 x the forward's Conv, Gemm and MatMul); SGEMM peak %.1f GFLOP/s "
          "per core (%s's 2048^3 product, CPU time); the floor is the products alone at the "
          "peak, on as many cores as threads" % (peak, where))
    print("%-12s %7s %10s %9s %7s %9s %12s" % ("model", "threads", "GFLOP", "og GF/s", "% peak",
                                               "floor ms", "floor/torch"))
    for name, threads, og_ms, pt_ms in rows:
        if name not in flop:
            continue
        f = flop[name]
        gf = f / (og_ms / 1e3) / 1e9
        floor = f / (peak * threads * 1e9) * 1e3
        print("%-12s %7d %10.3f %9.1f %7.0f %9.2f %12.2f" % (name, threads, f / 1e9, gf,
                                                              100 * gf / (peak * threads), floor,
                                                              floor / pt_ms))


if __name__ == "__main__":
    main()
