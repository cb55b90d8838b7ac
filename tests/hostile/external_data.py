#!/usr/bin/env python3
"""External data that a hostile model points at: every case must end in a clear non-zero
exit with its message, quickly and in bounded memory, never a hang or a crash.
Usage: external_data.py ONNXGRAD_CLI [--sanitized]"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

from limits import run as run_limited


def model(dir_, entries, dims=(4,), name="model.onnx"):
    """x[dims] + w[dims], w's data external with the given key/value entries."""
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(dir_, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path



RUNS = []


def run(cli, path, want_rc, want_msg, failures):
    RUNS.append(path)
    rc, out = run_limited([cli, "info", path], timeout=20)
    if out == "hung":
        failures.append(f"{path}: hung (no answer in 20 s)")
        return
    ok = rc == want_rc and want_msg in out
    last = out.strip().splitlines()[-1][:150] if out.strip() else ""
    print(("ok  " if ok else "FAIL"), os.path.basename(os.path.dirname(path)), "rc", rc, "|", last)
    if not ok:
        failures.append(f"{path}: rc {rc}, wanted {want_rc} with '{want_msg}'")


def main():
    cli = sys.argv[1]
    failures = []
    data = np.arange(4, dtype=np.float32).tobytes()
    with tempfile.TemporaryDirectory() as top:
        def case(name):
            d = os.path.join(top, name)
            os.mkdir(d)
            return d

        d = case("valid")
        open(os.path.join(d, "w.bin"), "wb").write(b"\0" * 8 + data)
        run(cli, model(d, [("location", "w.bin"), ("offset", "8"), ("length", "16")]), 0, "w",
            failures)

        d = case("fifo")
        os.mkfifo(os.path.join(d, "w.bin"))
        run(cli, model(d, [("location", "w.bin")]), 1, "is not a regular file", failures)

        d = case("directory")
        os.mkdir(os.path.join(d, "w.bin"))
        run(cli, model(d, [("location", "w.bin")]), 1, "is not a regular file", failures)

        for label, value in (("offset_junk", "12abc"), ("offset_negative", "-4"),
                             ("offset_empty", ""), ("offset_huge", "99999999999999999999")):
            d = case(label)
            open(os.path.join(d, "w.bin"), "wb").write(b"\0" * 64)
            run(cli, model(d, [("location", "w.bin"), ("offset", value)]), 1,
                "is not a non-negative decimal number", failures)

        d = case("length_junk")
        open(os.path.join(d, "w.bin"), "wb").write(data)
        run(cli, model(d, [("location", "w.bin"), ("length", "16 ")]), 1,
            "is not a non-negative decimal number", failures)

        d = case("short_file")
        open(os.path.join(d, "w.bin"), "wb").write(data[:12])
        run(cli, model(d, [("location", "w.bin")]), 1, "has 12 bytes, fewer than offset 0 + 16",
            failures)

        d = case("offset_past_end")
        open(os.path.join(d, "w.bin"), "wb").write(data)
        run(cli, model(d, [("location", "w.bin"), ("offset", "4096")]), 1, "fewer than offset 4096",
            failures)

        # 1 GiB declared, a 16-byte file: refused before allocating (under a 1 GiB limit)
        d = case("declared_huge")
        open(os.path.join(d, "w.bin"), "wb").write(data)
        run(cli, model(d, [("location", "w.bin")], dims=(1 << 28,)), 1,
            "has 16 bytes, fewer than offset 0 + 1073741824", failures)

        # beyond the 16 GiB limit on any one tensor
        d = case("beyond_limit")
        open(os.path.join(d, "w.bin"), "wb").write(data)
        run(cli, model(d, [("location", "w.bin")], dims=(1 << 33,)), 1, "more than the limit",
            failures)

        d = case("missing_file")
        run(cli, model(d, [("location", "nothing.bin")]), 1, "cannot open external data",
            failures)

    for f in failures:
        print("FAIL:", f)
    print(f"{len(RUNS) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
