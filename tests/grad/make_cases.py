#!/usr/bin/env python3
"""Write the gradient-check cases: every tests/grad/cases_*.py module has a function
cases() returning (name, model, {input name: numpy array}) triples; each becomes
OUT/<name>/model.onnx plus OUT/<name>/<input>.npy, and OUT/<name>/args lists the
--input arguments for `onnxgrad check`.  Models are float32; check runs on a float64 copy.
A case may carry a fourth element, {"fn": name, "kw": {...}}: the PyTorch function that
computes the same model (tests/grad/torch_ops.py), written to OUT/<name>/torch.json with
the float initializers saved as .npy beside it (Debian's python3 has torch but no onnx).
A case whose fourth element has "train": [names] differentiates those weights only
(`--weights` in args; integer zero points may be among them).
With "no_fd": REASON in it, the case is not checked by finite differences (run.sh says
why): straight-through gradients of quantization are not the derivative of the quantizer.

usage: make_cases.py OUT_DIR [PATTERN ...]   (only the cases whose name matches a
                                            shell pattern, when patterns are given)"""
import fnmatch
import glob
import importlib.util
import os
import sys

import json

import numpy as np
import onnx
from onnx import numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def main(out, patterns=()):
    os.makedirs(out, exist_ok=True)
    names = set()
    written = 0
    for path in sorted(glob.glob(os.path.join(here, "cases_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for case in mod.cases():
            name, model, inputs = case[:3]
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
            train = case[3].get("train") if len(case) > 3 else None
            if train:  # the weights to differentiate, integer zero points among them
                args.append("--weights " + ",".join(train))
            with open(os.path.join(d, "args"), "w") as f:
                f.write(" ".join(args) + "\n")
            if len(case) > 3:
                spec = dict(case[3], inputs={}, weights={})
                for i, k in enumerate(inputs):
                    spec["inputs"][k] = "in_%d.npy" % i
                for i, t in enumerate(model.graph.initializer):
                    a = numpy_helper.to_array(t)
                    if (a.dtype.kind == "f" and not train) or (train and t.name in train):
                        np.save(os.path.join(d, "w_%d.npy" % i), a)
                        spec["weights"][t.name] = "w_%d.npy" % i
                with open(os.path.join(d, "torch.json"), "w") as f:
                    json.dump(spec, f)
                if spec.get("no_fd"):
                    with open(os.path.join(d, "no_fd"), "w") as f:
                        f.write(spec["no_fd"] + "\n")
            written += 1
    print("wrote %d gradient cases to %s" % (written, out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
