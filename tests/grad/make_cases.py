#!/usr/bin/env python3
"""Write the gradient-check cases: every tests/grad/cases_*.py module has a function
cases() returning (name, model, {input name: numpy array}) triples; each becomes
OUT/<name>/model.onnx plus OUT/<name>/<input>.npy, and OUT/<name>/args lists the
--input arguments for `onnxgrad check`.  Models are float32; check runs on a float64 copy.

usage: make_cases.py OUT_DIR [PATTERN ...]   (only the cases whose name matches a
                                            shell pattern, when patterns are given)"""
import fnmatch
import glob
import importlib.util
import os
import sys

import numpy as np
import onnx

here = os.path.dirname(os.path.abspath(__file__))


def main(out, patterns=()):
    os.makedirs(out, exist_ok=True)
    names = set()
    written = 0
    for path in sorted(glob.glob(os.path.join(here, "cases_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name, model, inputs in mod.cases():
            assert name not in names, "duplicate case " + name
            names.add(name)
            if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
                continue
            onnx.checker.check_model(model, full_check=True)
            d = os.path.join(out, name)
            os.makedirs(d, exist_ok=True)
            onnx.save(model, os.path.join(d, "model.onnx"))
            args = []
            for k, v in inputs.items():
                fn = "in_%d.npy" % len(args)
                np.save(os.path.join(d, fn), np.ascontiguousarray(v))
                args.append("--input %s=%s" % (k, os.path.join(d, fn)))
            with open(os.path.join(d, "args"), "w") as f:
                f.write(" ".join(args) + "\n")
            written += 1
    print("wrote %d gradient cases to %s" % (written, out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
