#!/usr/bin/env bash
# make demo: run onnxgrad on the small MLP shipped in models/ and show what it did, then
# train an MLP on scikit-learn's digits from the command line.
set -euo pipefail
build=${1:-build}
cli="$build/onnxgrad"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== onnxgrad info models/mlp.onnx"
"$cli" info models/mlp.onnx
echo
echo "== onnxgrad run models/mlp.onnx --input x=models/mlp_x.npy -o $out"
"$cli" run models/mlp.onnx --input x=models/mlp_x.npy -o "$out"
echo
echo "== manifest.json"
cat "$out/manifest.json"
echo
echo "== onnxgrad grad models/mlp.onnx --input x=models/mlp_x.npy -o $out/grad"
"$cli" grad models/mlp.onnx --input x=models/mlp_x.npy -o "$out/grad"
echo
echo "== onnxgrad check models/mlp.onnx --input x=models/mlp_x.npy (finite differences, float64)"
"$cli" check models/mlp.onnx --input x=models/mlp_x.npy
echo "== probabilities (rows sum to 1), checked against onnxruntime"
python3 - "$out" <<'PY'
import json, sys, os
import numpy as np
out = sys.argv[1]
manifest = json.load(open(os.path.join(out, "manifest.json")))
probs = np.load(os.path.join(out, manifest["probs"]))
np.set_printoptions(precision=4, suppress=True)
print(probs)
try:
    import onnxruntime as ort
    ref = ort.InferenceSession("models/mlp.onnx", providers=["CPUExecutionProvider"]).run(
        None, {"x": np.load("models/mlp_x.npy")})[0]
    print("largest difference from onnxruntime: %.3g" % np.abs(probs - ref).max())
except ImportError:
    pass
PY
echo
echo "== onnxgrad train: an MLP (tests/data/train/digits_mlp.onnx) on scikit-learn's digits"
python3 scripts/export_digits.py "$out/digits" >/dev/null
"$cli" train tests/data/train/digits_mlp.onnx --data "$out/digits/digits_train.npz" \
  --loss cross-entropy --optimizer adam --lr 0.003 --epochs 15 --val-split 0.1 --seed 1 \
  -o "$out/digits.onnx"
python3 - "$out" <<'PY'
import sys, numpy as np, onnxruntime as ort
out = sys.argv[1]
t = np.load(out + "/digits/digits_test.npz")
logits = ort.InferenceSession(out + "/digits.onnx", providers=["CPUExecutionProvider"]).run(
    None, {"X": t["X"]})[0]
print("test accuracy of the trained model (onnxruntime): %.4f" % (logits.argmax(1) == t["y"]).mean())
PY
