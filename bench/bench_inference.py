#!/usr/bin/env python3
"""Inference benchmark: onnxgrad against onnxruntime, in the same run, on the same models
and inputs, at 1 and 2 threads.  The two alternate over --rounds rounds; each figure is
the median of the rounds' medians.  By default both run in this script's process: onnxgrad
through its Python package (python/, over the build's libonnxgrad.so), onnxruntime through
its own, each session created once and kept for every round; --method process runs
onnxgrad's rounds as `onnxgrad bench` processes instead, each a fresh process whose
first runs are colder than a kept session's.  Prints milliseconds and the ratio onnxgrad /
onnxruntime (lower is better), by wall time and by CPU time (the process's: on a machine
that other processes share, the time each side computed), and for ResNet-18 the forward
pass's GFLOP/s beside the machine's single-thread SGEMM peak, measured in the same run: the
best of a 2048^3 float32 product in numpy's BLAS and the venv's PyTorch (bench/sgemm_peak.py),
in onnxgrad and in onnxruntime.

usage: bench_inference.py [--build build] [--iters N] [--rounds R] [--models DIR]
                         [--method inproc|process] [--spin]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import benchenv  # bench/: drops OPENBLAS_CORETYPE before numpy loads OpenBLAS

import numpy as np
import onnx
import onnxruntime as ort

from flops import flops  # bench/

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("mlp", "lenet", "resnet18", "resnet18_64", "mobilenetv2", "mobilenetv2_64",
          "mobilenetv3", "mobilenetv3_64", "efficientnet", "efficientnet_64")


def ort_session(path, threads, spin):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def time_calls(run, iters, warmup):
    """median wall and CPU (process) milliseconds of run(), after `warmup` calls"""
    for _ in range(warmup):
        run()
    times, cpu = [], []
    for _ in range(iters):
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(times), statistics.median(cpu)


def time_ort(sess, x, iters, warmup):
    feed = {sess.get_inputs()[0].name: x}
    return time_calls(lambda: sess.run(None, feed), iters, warmup)


def og_session(build, path, threads):
    """An onnxgrad session on the model at `path` in this process, through the package in
    python/ over `build`/libonnxgrad.so (imported on first use)."""
    if "onnxgrad" not in sys.modules:
        os.environ.setdefault("ONNXGRAD_LIBRARY", os.path.join(os.path.abspath(build),
                                                               "libonnxgrad.so"))
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
    from onnxgrad import _lib as og
    sess = og.Session(og.Model.load(path), threads=threads)
    return sess, list(sess.inputs)[0], og.model_outputs(sess.model_ptr)


def time_og(og, x, iters, warmup):
    """time_ort for an og_session() triple: the same feed, every output returned as a
    numpy array"""
    sess, name, outputs = og
    feed = {name: x}
    return time_calls(lambda: sess.run(feed, outputs), iters, warmup)


def run_onnxgrad(cli, path, xfile, threads, iters, warmup, spin):
    env = dict(os.environ)
    if not spin:
        env["OMP_WAIT_POLICY"] = "passive"
    res = subprocess.run([cli, "bench", path, "--input", "x=" + xfile, "--threads", str(threads),
                          "-n", str(iters), "--warmup", str(warmup)], capture_output=True,
                         text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip())
    d = json.loads(res.stdout)
    return d["median_ms"], d["median_cpu_ms"]


def matmul_peak(cli, n=2048):
    """GFLOP/s (CPU time) of one n x n x n float32 MatMul on one thread, in onnxgrad (its
    own product: oneDNN's sgemm where built with it) and in onnxruntime (MLAS): the best
    single-thread products on this machine, which numpy's BLAS may not reach (Debian's
    OpenBLAS runs its AVX2 kernels on an AVX-512 CPU)."""
    import tempfile
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    b = rng.standard_normal((n, n), dtype=np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "b"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
        [numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    flop = 2.0 * n * n * n
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        path, xfile = os.path.join(tmp, "mm.onnx"), os.path.join(tmp, "a.npy")
        onnx.save(m, path)
        a = rng.standard_normal((n, n), dtype=np.float32)
        np.save(xfile, a)
        try:
            _, cpu = run_onnxgrad(cli, path, xfile, 1, 5, 3, False)
            found["onnxgrad"] = flop / (cpu / 1e3) / 1e9
        except RuntimeError:
            pass
        sess = ort_session(path, 1, False)
        _, cpu = time_ort(sess, a, 5, 3)
        found["onnxruntime"] = flop / (cpu / 1e3) / 1e9
    return found


def sgemm_peak(cli):
    """The best single-thread SGEMM GFLOP/s found on this machine (CPU time), and where:
    bench/sgemm_peak.py (numpy's BLAS, the venv's PyTorch) and matmul_peak."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    venv = os.path.join(HERE, ".venv", "bin", "python")
    found = {}
    for py in ([venv] if os.path.exists(venv) else []) + [sys.executable]:
        res = subprocess.run([py, os.path.join(HERE, "sgemm_peak.py")], capture_output=True,
                             text=True, env=env)
        if res.returncode == 0:
            found[py] = float(res.stdout.strip())
    found.update(matmul_peak(cli))
    best = max(found, key=found.get) if found else None
    return (found[best], best) if best else (0.0, "none")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10,
                    help="untimed runs before each side's timed ones (both sides alike: "
                         "with --method process, onnxgrad starts a process per round, whose "
                         "first runs are slower)")
    ap.add_argument("--method", choices=("inproc", "process"), default="inproc",
                    help="inproc (the default): onnxgrad in this process through its Python "
                         "package, one session kept for all rounds as onnxruntime's is; "
                         "process: an `onnxgrad bench` process per round")
    ap.add_argument("--settle", type=float, default=0.05,
                    help="seconds of pause before each side's round, so that the other "
                         "side's waiting threads have gone to sleep (onnxruntime's spin after "
                         "a run; onnxgrad's workers poll for 0.5 ms): in one process, "
                         "MobileNet-v3's onnxgrad rounds on two threads took 1.09-1.17 ms "
                         "right after onnxruntime's and 1.02-1.05 after a 50 ms pause, as "
                         "alone (default 0.05)")
    ap.add_argument("--models", default="bench/models")
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--spin", action="store_true",
                    help="let waiting threads spin (OpenMP's and onnxruntime's default); by "
                         "default both sides block, which a machine shared with other busy "
                         "processes needs")
    args = ap.parse_args()
    if benchenv.NOTE:
        print(benchenv.NOTE)
    if not args.spin:
        # libgomp reads it when it loads: before the package loads libonnxgrad.so
        os.environ["OMP_WAIT_POLICY"] = "passive"
    cli = os.path.join(args.build, "onnxgrad")
    need = cli if args.method == "process" else os.path.join(args.build, "libonnxgrad.so")
    if not os.path.exists(need):
        sys.exit("bench_inference.py: %s does not exist: build onnxgrad first (cmake -S . -B %s "
                 "-DCMAKE_BUILD_TYPE=Release && cmake --build %s), or name the build folder "
                 "with --build" % (need, args.build, args.build))
    names = args.only.split(",")
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error("unknown model %s for --only (the models: %s)" %
                 (", ".join(unknown), ", ".join(MODELS)))
    if not all(os.path.exists(os.path.join(args.models, m + ".onnx")) for m in names):
        subprocess.run(["/usr/bin/python3", "-W", "ignore", os.path.join(HERE, "export_models.py"),
                        args.models], check=True)
    print("onnxruntime %s; medians of %d interleaved rounds, %d warm-up runs a side after a "
          "%g s pause; waiting threads %s; onnxgrad %s" %
          (ort.__version__, args.rounds, args.warmup, args.settle, "spin" if args.spin else
           "block (OMP_WAIT_POLICY=passive, allow_spinning=0)",
           "in this process (Python package), one session for all rounds"
           if args.method == "inproc" else "as an `onnxgrad bench` process per round"))
    print("%-16s %7s %12s %15s %7s %13s %9s %9s" % ("model", "threads", "onnxgrad ms",
                                                    "onnxruntime ms", "ratio", "onnxgrad cpu",
                                                    "ort cpu", "cpu ratio"))
    resnet_ms = {}
    for m in names:
        path = os.path.join(args.models, m + ".onnx")
        xfile = os.path.join(args.models, m + "_x.npy")
        x = np.load(xfile)
        big = m in ("resnet18", "mobilenetv2", "efficientnet", "resnet18_64")
        iters = max(5, args.iters // (5 if big else 1))
        for threads in [int(t) for t in args.threads.split(",")]:
            sess = ort_session(path, threads, args.spin)
            og, rt = [], []
            try:
                ogs = og_session(args.build, path, threads) if args.method == "inproc" else None
                for _ in range(args.rounds):
                    time.sleep(args.settle)
                    if ogs:
                        og.append(time_og(ogs, x, iters, args.warmup))
                    else:
                        og.append(run_onnxgrad(cli, path, xfile, threads, iters, args.warmup,
                                               args.spin))
                    time.sleep(args.settle)
                    rt.append(time_ort(sess, x, iters, args.warmup))
                ogs = None
            except (RuntimeError, ValueError) as e:  # the package's errors are one or the other
                print("%-16s %7d  onnxgrad failed: %s" % (m, threads, e))
                continue
            og_ms, rt_ms = (statistics.median(r[0] for r in og),
                            statistics.median(r[0] for r in rt))
            og_cpu, rt_cpu = (statistics.median(r[1] for r in og),
                              statistics.median(r[1] for r in rt))
            if m == "resnet18":
                resnet_ms[threads] = (og_ms, og_cpu)
            print("%-16s %7d %12.3f %15.3f %7.2f %13.3f %9.3f %9.2f" %
                  (m, threads, og_ms, rt_ms, og_ms / rt_ms, og_cpu, rt_cpu, og_cpu / rt_cpu))
            sys.stdout.flush()
    if resnet_ms:
        f = flops(os.path.join(args.models, "resnet18.onnx"),
                  np.load(os.path.join(args.models, "resnet18_x.npy")).shape)
        peak, where = sgemm_peak(cli)
        for threads, (ms, cpu) in sorted(resnet_ms.items()):
            gf, gfc = f / (ms / 1e3) / 1e9, f / (cpu / 1e3) / 1e9
            print("resnet18 forward, %d thread%s: %.1f GFLOP/s by wall time, %.1f by CPU time "
                  "(%.2f GFLOP); SGEMM peak %.1f GFLOP/s per core (CPU time, %s's 2048^3 "
                  "product): %.0f %% / %.0f %%" %
                  (threads, "s" if threads > 1 else "", gf, gfc, f / 1e9, peak,
                   os.path.basename(where),
                   100 * gf / (peak * threads) if peak else 0,
                   100 * gfc / (peak * threads) if peak else 0))


if __name__ == "__main__":
    main()
