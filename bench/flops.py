#!/usr/bin/env python3
"""Floating-point work of a model's products, and the machine's SGEMM peak.

  python3 bench/flops.py MODEL.onnx X.npy     the forward's FLOPs for input X's shape
  python3 bench/flops.py --peak BUILD         the single-thread SGEMM peak in GFLOP/s (CPU
                                              time), and where it was measured

Needs onnx (and onnxruntime for --peak), which scripts/setup.sh installs for python3 and
bench/.venv lacks: bench_train.py runs this with the python3 of PATH."""
import os
import sys

import numpy as np
import onnx
from onnx import shape_inference


def flops(path, xshape):
    """2 x the multiply-adds of the model's Conv, Gemm and MatMul nodes for input shape
    xshape."""
    m = onnx.load(path)
    for d, n in zip(m.graph.input[0].type.tensor_type.shape.dim, xshape):
        d.dim_value = n
    m = shape_inference.infer_shapes(m, data_prop=True)  # Reshape targets computed from Shape
    shapes = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    macs = 0
    for n in m.graph.node:
        if n.op_type == "Conv":
            w, y = shapes[n.input[1]], shapes[n.output[0]]
            macs += int(np.prod(y)) * int(np.prod(w[1:]))
        elif n.op_type in ("Gemm", "MatMul"):
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            transa = any(at.name == "transA" and at.i for at in n.attribute)
            macs += int(np.prod(y)) * (a[-2] if transa else a[-1])
    return 2.0 * macs


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--peak":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_inference
        peak, where = bench_inference.sgemm_peak(os.path.join(sys.argv[2], "onnxgrad"))
        print("%.3f %s" % (peak, os.path.basename(where)))
    elif len(sys.argv) == 3:
        print("%.0f" % flops(sys.argv[1], np.load(sys.argv[2]).shape))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
