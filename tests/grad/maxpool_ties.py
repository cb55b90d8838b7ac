#!/usr/bin/env python3
"""MaxPool's gradient on ties (plateaus, checkerboards: windows holding several maxima)
goes to the position onnxruntime's MaxPool reports in its Indices output (the first maximum
in the window's row-major order), for every form of the rule: the tap masks below opset 9
(opset 7 from each tap's value, opset 8 from the Indices), static and with every dim known
only at run time, and the scatter from opset 9.  Finite differences cannot check this (a
tie has no derivative).  Ends with "N passed, N failed".

usage: maxpool_ties.py ONNXGRAD"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import model, node  # noqa: E402


def ort_grad(x, r, attrs):
    """dX of sum(r * MaxPool(x)) from onnxruntime's Indices"""
    m = model([node("MaxPool", ["x"], ["y", "i"], **attrs)], {"x": x}, ["y", "i"], opset=12)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    idx = sess.run(None, {"x": x})[1]
    g = np.zeros(x.size, x.dtype)
    np.add.at(g, idx.ravel(), r.ravel())
    return g.reshape(x.shape)


def main(cli):
    x = np.zeros((1, 3, 6, 5), np.float32)
    x[0, 0] = 0.5
    x[0, 0, 2, 2] = 0.9
    x[0, 1, ::2, ::2] = 0.7
    x[0, 1, 1::2, 1::2] = 0.7
    x[0, 1, 5, 4] = -1.0
    # a negative plateau with ties in every window: the zeros that pad it at opset 7 exceed
    # every value and must never win
    x[0, 2] = -0.3
    x[0, 2, 0, 1] = x[0, 2, 3, 4] = -0.1
    variants = (("k3s2p1", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
                ("k2s1_pads", dict(kernel_shape=[2, 3], pads=[0, 1, 1, 0])),
                ("k2s2_valid", dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID")),
                ("k3s2_same_upper", dict(kernel_shape=[3, 3], strides=[2, 2],
                                         auto_pad="SAME_UPPER")),
                ("k2x3_same_lower", dict(kernel_shape=[2, 3], auto_pad="SAME_LOWER")),
                ("k4s3_same_lower", dict(kernel_shape=[4, 4], strides=[3, 2],
                                         auto_pad="SAME_LOWER")))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "x.npy"), x)
        for name, attrs in variants:
            shape = ort.InferenceSession(
                model([node("MaxPool", ["x"], ["y"], **attrs)], {"x": x}, ["y"],
                      opset=12).SerializeToString(),
                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0].shape
            r = np.random.RandomState(0).rand(*shape).astype(np.float32) + 0.5
            np.save(os.path.join(d, "r.npy"), r)
            ref = ort_grad(x, r, attrs)
            for opset in (7, 8, 11):
                for dyn in (False, True):
                    pre = [node("Shape", ["x"], ["sx"]), node("Reshape", ["x", "sx"], ["xr"])]
                    m = model((pre if dyn else []) +
                              [node("MaxPool", ["xr" if dyn else "x"], ["y"], **attrs)],
                              {"x": x}, ["y"], opset=opset)
                    del m.graph.output[:]
                    m.graph.output.append(
                        helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape)))
                    path = os.path.join(d, "m.onnx")
                    with open(path, "wb") as f:
                        f.write(m.SerializeToString())
                    out = os.path.join(d, "out")
                    p = subprocess.run([cli, "grad", path, "--input", "x=" + os.path.join(d, "x.npy"),
                                        "--grad-output", "y=" + os.path.join(d, "r.npy"), "-o", out],
                                       capture_output=True, text=True)
                    case = "%s_v%d%s" % (name, opset, "_dyn" if dyn else "")
                    if p.returncode:
                        failed += 1
                        print("FAIL %s: %s" % (case, p.stderr.strip()))
                        continue
                    diff = float(np.abs(np.load(os.path.join(out, "x_grad.npy")) - ref).max())
                    ok = diff <= 1e-6
                    passed += ok
                    failed += not ok
                    print("%s %s (largest difference from onnxruntime's Indices %.2g)"
                          % ("PASS" if ok else "FAIL", case, diff))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
