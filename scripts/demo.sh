#!/usr/bin/env bash
# make demo: run onnxgrad on the small MLP shipped in models/ and show what it did.
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
