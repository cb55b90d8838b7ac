#!/usr/bin/env python3
"""Seed corpora and the dictionary of the libFuzzer targets (tests/fuzz/fuzz_*.c).

    make_corpus.py RAW_DIR [--cli ONNXGRAD]   raw seeds per target under RAW_DIR/<target>/
    make_corpus.py --dict                     rewrite tests/fuzz/onnx.dict

Raw seeds: every model of the ONNX backend test data (node, pytorch-converted,
pytorch-operator, simple; the pinned onnx package) and of this repository (tests/data,
models/), behind the 8-byte seed the run and grad targets take; .npy files of every dtype,
byte order and format version; checkpoints of the fuzz_ckpt trainer written by `onnxgrad
train` (with --cli); the dataset fixtures.  tests/fuzz/minimize.sh merges them with
libFuzzer into the small corpora kept in tests/fuzz/corpus/<target>/."""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def models():
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    paths = []
    for kind in ("node", "pytorch-converted", "pytorch-operator", "simple"):
        paths += sorted(glob.glob(os.path.join(data, kind, "*", "model.onnx")))
    for pattern in ("tests/data/*.onnx", "tests/data/train/*.onnx", "tests/data/bad/*.onnx",
                    "tests/data/external/*.onnx", "models/*.onnx", "tests/data/fuzz/load/*"):
        paths += sorted(glob.glob(os.path.join(ROOT, pattern)))
    for p in paths:
        b = open(p, "rb").read()
        if len(b) <= 32768:
            yield os.path.basename(os.path.dirname(p)) + "_" + os.path.basename(p), b


def npy_seeds(out):
    rng = np.random.default_rng(0)
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 4), np.float64),
              np.array(3.5, np.float16), np.array([True, False]), rng.integers(-5, 5, (2, 2, 2)),
              np.arange(4, dtype=np.int32), np.arange(3, dtype=">f8"), np.arange(4, dtype=">i4")]
    for i, a in enumerate(arrays):
        for version in ((1, 0), (2, 0), (3, 0)):
            path = os.path.join(out, f"a{i}_v{version[0]}.npy")
            with open(path, "wb") as f:
                np.lib.format.write_array(f, a, version=version)
    np.save(os.path.join(out, "fortran.npy"), np.asfortranarray(np.ones((2, 3))))
    for p in glob.glob(os.path.join(ROOT, "tests/data/train/*.npy")) + \
            glob.glob(os.path.join(ROOT, "models/*.npy")):
        open(os.path.join(out, os.path.basename(p)), "wb").write(open(p, "rb").read())


def python_seeds(out):
    """fuzz_python.py: byte 0 picks the entry point (0 model bytes, 1 pickled state, 2 arrays
    for mlp.onnx, 3 fit); small models of this repository as model bytes."""
    rng = np.random.default_rng(2)
    for p in glob.glob(os.path.join(ROOT, "models/*.onnx")) + \
            glob.glob(os.path.join(ROOT, "tests/data/train/*.onnx")):
        b = open(p, "rb").read()
        if len(b) < 65536:
            n = len(b)
            open(os.path.join(out, "0_" + os.path.basename(p)), "wb").write(
                bytes([0]) + n.to_bytes(4, "little") + b + rng.bytes(256))
    for k in (1, 2, 3):
        for i in range(4):
            open(os.path.join(out, f"{k}_{i}"), "wb").write(bytes([k]) + rng.bytes(512))


def ckpt_seeds(out, cli):
    """Checkpoints of linreg.onnx + mse + adam, the trainer fuzz_ckpt loads into."""
    with tempfile.TemporaryDirectory() as d:
        x = np.random.default_rng(1).normal(size=(16, 3)).astype(np.float32)
        y = x @ np.array([1.0, -2.0, 0.5], np.float32)
        np.savez(os.path.join(d, "d.npz"), X=x, y=y.reshape(-1, 1))
        for epochs, opt in ((1, "adam"), (3, "adam")):
            ck = os.path.join(d, f"c{epochs}.ckpt")
            subprocess.run([cli, "train", os.path.join(ROOT, "tests/data/train/linreg.onnx"),
                            "--data", os.path.join(d, "d.npz"), "--loss", "mse",
                            "--optimizer", opt, "--epochs", str(epochs), "--checkpoint", ck,
                            "--quiet", "-o", os.path.join(d, "m.onnx")], check=True)
            open(os.path.join(out, f"linreg_adam_{epochs}.ckpt"), "wb").write(open(ck, "rb").read())


def write_dict():
    """Op types, attribute names and domains of every ONNX schema, and the strings the loader
    looks for (external data keys, metadata keys), as libFuzzer dictionary entries."""
    words = set()
    for s in onnx.defs.get_all_schemas_with_history():
        words.add(s.name)
        words.add(s.domain)
        words.update(s.attributes.keys())
    words.update(["location", "offset", "length", "checksum", "onnxgrad.loss",
                  "onnxgrad.loss_inputs", "onnxgrad.weights", "onnxgrad.inputs",
                  "onnxgrad.outputs", "onnxgrad.training_step", "com.onnxgrad",
                  "ai.onnx.preview.training", "NUMPY", "descr", "fortran_order", "shape",
                  "OGCKPT01"])
    words.discard("")
    with open(os.path.join(HERE, "onnx.dict"), "w") as f:
        f.write("# libFuzzer dictionary: ONNX op types, attribute names, domains and the keys\n"
                "# onnxgrad reads (tests/fuzz/make_corpus.py --dict writes it)\n")
        for w in sorted(words):
            f.write('"%s"\n' % w.replace("\\", "\\\\").replace('"', '\\"'))


def main():
    if sys.argv[1:] == ["--dict"]:
        write_dict()
        return 0
    out = sys.argv[1]
    cli = sys.argv[sys.argv.index("--cli") + 1] if "--cli" in sys.argv else None
    for t in ("models", "npy", "ckpt", "data", "python"):
        os.makedirs(os.path.join(out, t), exist_ok=True)
    n = 0
    for name, b in models():
        n += 1
        open(os.path.join(out, "models", name), "wb").write(b)
    npy_seeds(os.path.join(out, "npy"))
    python_seeds(os.path.join(out, "python"))
    if cli:
        ckpt_seeds(os.path.join(out, "ckpt"), cli)
    subprocess.run(["bash", os.path.join(HERE, "data_seeds.sh"), os.path.join(out, "data")],
                   check=True)
    print(f"{n} models, seeds in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
