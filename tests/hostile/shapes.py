#!/usr/bin/env python3
"""Shape arithmetic a hostile model asks for (pads, repeats and ranges near the int64
limits): a clear non-zero exit with the message, never a wrapped size, a wrong result, a
crash or a hang, in bounded memory.  Each case runs `info` (static inference, the values
known as initializers) and `run` (the same values as inputs, known only at run time).
Usage: shapes.py ONNXGRAD_CLI [--sanitized]"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from limits import run as run_limited

I64_MAX, I64_MIN = 2**63 - 1, -2**63


def make(path, op, x_type, x_shape, params, attrs=None, as_inputs=False):
    """y = op(x, *params); params are (name, int64 array), initializers or graph inputs."""
    inputs = [helper.make_tensor_value_info("x", x_type, x_shape)] if x_shape is not None else []
    names = (["x"] if x_shape is not None else []) + [n for n, _ in params]
    inits = []
    for n, v in params:
        if as_inputs:
            inputs.append(helper.make_tensor_value_info(n, TensorProto.INT64, list(v.shape)))
        else:
            inits.append(numpy_helper.from_array(v, n))
    node = helper.make_node(op, names, ["y"], name="hostile", **(attrs or {}))
    g = helper.make_graph([node], "g", inputs,
                          [helper.make_tensor_value_info("y", x_type, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)



def main():
    cli = sys.argv[1]
    results = []
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    cases = [
        ("pad_huge", "Pad", f32, [4], [("pads", np.array([I64_MAX, I64_MAX], np.int64))],
         "pads 9223372036854775807, 9223372036854775807 on axis 0 of size 4"),
        ("pad_crop_past_axis", "Pad", f32, [4], [("pads", np.array([-10, 20], np.int64))],
         "pads -10, 20 on axis 0 of size 4"),
        ("pad_min", "Pad", f32, [4], [("pads", np.array([I64_MIN, 0], np.int64))],
         "on axis 0 of size 4"),
        ("tile_huge", "Tile", f32, [4], [("repeats", np.array([2**62], np.int64))],
         "overflows int64"),
        ("range_full_int64", "Range", i64, None,
         [("start", np.array(I64_MIN, np.int64)), ("limit", np.array(I64_MAX, np.int64)),
          ("delta", np.array(1, np.int64))], "is too long"),
        # ranges that fit: exact counts and values, though i * delta passes int64
        ("range_min_delta", "Range", i64, None,
         [("start", np.array(I64_MAX, np.int64)), ("limit", np.array(I64_MIN, np.int64)),
          ("delta", np.array(I64_MIN, np.int64))], [I64_MAX, -1]),
        ("range_wide_step", "Range", i64, None,
         [("start", np.array(I64_MIN, np.int64)), ("limit", np.array(I64_MAX, np.int64)),
          ("delta", np.array(2**62 + 1, np.int64))],
         [I64_MIN + i * (2**62 + 1) for i in range(4)]),
    ]
    with tempfile.TemporaryDirectory() as top:
        for name, op, xt, xs, params, msg in cases:
            for when in ("info", "run"):
                d = os.path.join(top, f"{name}_{when}")
                os.mkdir(d)
                path = os.path.join(d, "m.onnx")
                make(path, op, xt, xs, params, as_inputs=(when == "run"))
                cmd = [cli, "info", path]
                if when == "run":
                    cmd = [cli, "run", path, "-o", os.path.join(d, "out")]
                    if xs is not None:
                        np.save(os.path.join(d, "x.npy"), np.ones(xs, np.float32))
                        cmd += ["--input", "x=" + os.path.join(d, "x.npy")]
                    for n, v in params:
                        np.save(os.path.join(d, n + ".npy"), v)
                        cmd += ["--input", f"{n}={os.path.join(d, n + '.npy')}"]
                rc, out = run_limited(cmd)
                if isinstance(msg, list):  # a result that fits: exactly these values
                    ok = rc == 0
                    if ok and when == "run":
                        y = np.load(os.path.join(d, "out", "y.npy"))
                        ok = y.dtype == np.int64 and y.tolist() == msg
                else:
                    ok = rc == 1 and msg in out
                results.append(ok)
                last = out.strip().splitlines()[-1][:140] if out.strip() else ""
                print("ok  " if ok else "FAIL", f"{name} {when}: rc {rc} | {last}")
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
