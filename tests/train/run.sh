#!/bin/sh
# Training acceptance through the CLI (CTest entries train_torch, train_digits, train_bn):
#   run.sh torch BUILD_DIR    100 steps of each optimizer equal PyTorch's (torch_match.py)
#   run.sh digits BUILD_DIR   an MLP on scikit-learn's digits reaches >= 95 % test accuracy
#   run.sh bn BUILD_DIR       BatchNormalization's running statistics after 4 steps equal
#                             PyTorch's (bn_torch.py)
set -eu
what=$1
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
og="$build/onnxgrad"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case "$what" in
torch)
    /usr/bin/python3 -W ignore "$here/torch_match.py" make "$tmp"
    python3 "$here/torch_match.py" options | while read -r name opts; do
        # shellcheck disable=SC2086
        "$og" train "$tmp/model.onnx" --data "$tmp/data.npz" --loss cross-entropy $opts \
            --epochs 10 --batch-size 16 --no-shuffle --threads 1 -q -o "$tmp/out_$name.onnx"
    done
    python3 "$here/torch_match.py" compare "$tmp"
    ;;
bn)
    /usr/bin/python3 -W ignore "$here/bn_torch.py" make "$tmp"
    "$og" train "$tmp/model.onnx" --data "$tmp/data.npz" --loss cross-entropy --optimizer sgd \
        --lr 0.1 --epochs 1 --batch-size 8 --no-shuffle --threads 1 -q -o "$tmp/out.onnx"
    python3 "$here/bn_torch.py" compare "$tmp"
    ;;
digits)
    python3 "$root/scripts/export_digits.py" "$tmp"
    "$og" train "$root/tests/data/train/digits_mlp.onnx" --data "$tmp/digits_train.npz" \
        --loss cross-entropy --optimizer adam --lr 0.003 --epochs 30 --batch-size 32 \
        --val-split 0.1 --seed 1 -o "$tmp/digits.onnx"
    python3 - "$tmp" <<'EOF'
import sys, numpy as np, onnxruntime as ort
d = sys.argv[1]
t = np.load(d + "/digits_test.npz")
s = ort.InferenceSession(d + "/digits.onnx", providers=["CPUExecutionProvider"])
acc = float((s.run(None, {"X": t["X"]})[0].argmax(1) == t["y"]).mean())
print("digits test accuracy %.4f on %d samples (aim >= 0.95)" % (acc, len(t["y"])))
sys.exit(0 if acc >= 0.95 else 1)
EOF
    test -s "$tmp/digits.csv" && head -c 5 "$tmp/digits.svg" | grep -q "<svg"
    ;;
*)
    echo "usage: run.sh torch|digits BUILD_DIR" >&2
    exit 2
    ;;
esac
