#!/usr/bin/env python3
"""Training-step benchmark: one forward + backward (output gradients = ones, gradients of
every weight and of the input) in onnxgrad and in PyTorch eager, same models, same weights,
same inputs, same thread count, in the same run.  PyTorch is the current release from PyPI
in the bench environment (bench/.venv, made by scripts/setup.sh --bench); --debian adds
Debian's python3-torch as a second column.  Each side runs in a process of its own,
interleaved over --rounds rounds; each figure is the median of the rounds' medians, and
the peak resident memory (VmHWM) of each side's process is printed beside the times.
Ratio: onnxgrad / PyTorch (lower is better), by wall time and by CPU time (each process's:
on a machine that other processes share, the time each side computed).

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


if __name__ == "__main__":
    main()
