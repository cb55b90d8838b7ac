#!/usr/bin/env python3
"""Compare two builds of onnxgrad (or one build under two environments) on one model:
`onnxgrad bench` of build A and of build B in turn, ROUNDS times, the order swapped every
round, and the ratio B / A of each pair's medians.  Prints both sides' median of medians
and the median of the paired ratios (below 1: B faster), with every ratio.

Why the order alternates: on this project's shared hosts, two processes run back to back
in a fixed order measured the second one 2-20 % slower in every pair whatever the build,
and the host drifts through slow and fast phases of a few seconds; each pair shares a
phase, and the swapped order cancels the position.

usage: ab_builds.py BUILD_A BUILD_B MODEL X.npy [--input-name x] [--threads T]
       [--rounds R] [--iters N] [--train] [--env-a K=V ...] [--env-b K=V ...]"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(build, env_kv, args):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    env["LD_LIBRARY_PATH"] = build + (":" + env["LD_LIBRARY_PATH"] if "LD_LIBRARY_PATH" in env
                                      else "")
    for kv in env_kv:
        k, _, v = kv.partition("=")
        env[k] = v
    cmd = [os.path.join(build, "onnxgrad"), "bench", args.model, "--input",
           "%s=%s" % (args.input_name, args.x), "--threads", str(args.threads), "-n",
           str(args.iters)] + (["--train"] if args.train else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("%s: %s" % (" ".join(cmd[:2]), r.stderr.strip()))
    return json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build_a")
    p.add_argument("build_b")
    p.add_argument("model")
    p.add_argument("x")
    p.add_argument("--input-name", default="x")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--train", action="store_true")
    p.add_argument("--env-a", nargs="*", default=[])
    p.add_argument("--env-b", nargs="*", default=[])
    args = p.parse_args()
    for build in (args.build_a, args.build_b):
        if not os.access(os.path.join(build, "onnxgrad"), os.X_OK):
            sys.exit("%s: no onnxgrad executable there (a build folder)" % build)
    for f in (args.model, args.x):
        if not os.path.isfile(f):
            sys.exit("%s: no such file" % f)
    a, b, q = [], [], []
    for r in range(args.rounds):
        if r % 2 == 0:
            ta = run(args.build_a, args.env_a, args)
            tb = run(args.build_b, args.env_b, args)
        else:
            tb = run(args.build_b, args.env_b, args)
            ta = run(args.build_a, args.env_a, args)
        a.append(ta)
        b.append(tb)
        q.append(tb / ta)
    print("A %.3f ms, B %.3f ms (medians of %d runs of %d); B / A paired: median %.3f" %
          (statistics.median(a), statistics.median(b), args.rounds, args.iters,
           statistics.median(q)))
    print("ratios: " + " ".join("%.3f" % v for v in q))


if __name__ == "__main__":
    main()
