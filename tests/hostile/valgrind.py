#!/usr/bin/env python3
"""Every CLI command under valgrind (memcheck), on success and on errors: no invalid read or
write, no use of uninitialised memory, no memory definitely or indirectly lost (OpenMP's and
OpenBLAS's thread pools keep blocks "still reachable" or "possibly lost" at exit by design;
those are not counted).  Slow (about a minute per command): not part of make test; run it
before a release or after touching the CLI, and quote its last line.
Usage: valgrind.py ONNXGRAD_CLI [--only SUBSTRING]"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402  (the hostile cases, reused for the error paths)


def commands(d):
    mlp = os.path.join(ROOT, "models", "mlp.onnx")
    x = os.path.join(ROOT, "models", "mlp_x.npy")
    lin = os.path.join(ROOT, "tests", "data", "train", "linreg.onnx")
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(32, 3)).astype(np.float32)
    np.savez(os.path.join(d, "lin.npz"), X=xs, y=xs[:, :1].copy())
    out = lambda name: os.path.join(d, name)  # noqa: E731
    ok = [
        ("help", ["help"]),
        ("version", ["version"]),
        ("train --help", ["train", "--help"]),
        ("info", ["info", mlp]),
        ("run", ["run", mlp, "--input", "x=" + x, "--threads", "1", "-o", out("run")]),
        ("grad", ["grad", mlp, "--input", "x=" + x, "--threads", "1", "-o", out("grad")]),
        ("export", ["export", mlp, "-o", out("export")]),
        ("check", ["check", mlp, "--input", "x=" + x]),
        ("bench", ["bench", mlp, "--input", "x=" + x, "--threads", "1", "-n", "2"]),
        ("bench --train", ["bench", mlp, "--input", "x=" + x, "--train", "--threads", "1",
                           "-n", "2"]),
        ("train", ["train", lin, "--data", out("lin.npz"), "--loss", "mse", "--optimizer",
                   "adam", "--epochs", "2", "--threads", "1", "--val-split", "0.25",
                   "--checkpoint", out("c.ckpt"), "--export-training", out("step.onnx"),
                   "-q", "-o", out("t.onnx")]),
        ("train --resume", ["train", lin, "--data", out("lin.npz"), "--loss", "mse",
                            "--optimizer", "adam", "--epochs", "3", "--threads", "1",
                            "--checkpoint", out("c.ckpt"), "--resume", "-q",
                            "-o", out("t.onnx")]),
        ("train (TrainingInfoProto)", ["train", out("step.onnx"), "--data", out("lin.npz"),
                                       "--epochs", "1", "--threads", "1", "-q",
                                       "-o", out("t2.onnx")]),
    ]
    errors = [
        ("no command", []),
        ("unknown command", ["frobnicate"]),
        ("run: missing input", ["run", mlp, "-o", out("e")]),
        ("run: bad option", ["run", mlp, "--bogus"]),
        ("grad: unknown weight", ["grad", mlp, "--input", "x=" + x, "--weights", "nope",
                                  "-o", out("e")]),
        ("train: bad loss", ["train", lin, "--data", out("lin.npz"), "--loss", "zz",
                             "-o", out("e.onnx")]),
        ("train: missing data", ["train", lin, "--data", out("none.csv"), "--loss", "mse",
                                 "-o", out("e.onnx")]),
    ]
    return ok, errors


def main():
    cli = os.path.abspath(sys.argv[1])
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if not shutil.which("valgrind"):
        print("valgrind is not installed (apt-get install valgrind)")
        return 77
    vg = ["valgrind", "--error-exitcode=99", "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
          "--track-origins=no", "-q"]
    results, failed = [], 0
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as d:
        ok, errors = commands(d)
        cases = [(n, a, True) for n, a in ok] + [(n, a, False) for n, a in errors]
        # the error paths of the hostile corpus, one case per kind of stage
        for name in ("nested_if_3000", "external_symlink_out", "raw_data_short", "pad_int64_max",
                     "constant_of_shape_1_6e9", "gather_index_out_of_range", "npz_crc_mismatch",
                     "checkpoint_garbage", "npy_shape_2_40_tiny_file", "model_is_a_fifo"):
            make = next(f for n, _, f in corpus.CASES if n == name)
            cd = os.path.join(d, name)
            os.mkdir(cd)
            args, _ = make(cd)
            cases.append(("corpus " + name, args, False))
        for name, args, want_ok in cases:
            if only and only not in name:
                continue
            p = subprocess.run(vg + [cli] + args, capture_output=True, text=True, env=env,
                               timeout=900)
            errs = re.findall(r"==\d+== (Invalid \w+|Conditional jump|Use of uninitialised|"
                              r"\d+ bytes in \d+ blocks are (?:definitely|indirectly) lost)",
                              p.stderr)
            clean = p.returncode != 99 and not errs and (p.returncode == 0) == want_ok
            failed += not clean
            results.append(name)
            print("ok  " if clean else "FAIL", f"{name}: rc {p.returncode}",
                  ("| " + "; ".join(sorted(set(errs)))[:200]) if errs else "")
            if not clean and p.returncode == 99:
                print("\n".join(p.stderr.splitlines()[:40]))
    print(f"valgrind: {len(results)} commands, {len(results) - failed} clean, {failed} with "
          "errors or leaks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
