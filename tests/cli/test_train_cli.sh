#!/usr/bin/env bash
# `onnxgrad train`: usage, CSV/.npy data, history and plot, bad input with clear messages,
# a diverging run stopped with its step and its checkpoint kept, bit-exact resume.
set -u
cli=$1
model=tests/data/train/linreg.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0; checks=0
check() { # check DESCRIPTION CONDITION...
  local what=$1; shift
  checks=$((checks + 1))
  if ! "$@"; then echo "FAIL: $what"; fails=$((fails + 1)); fi
}

python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.uniform(-2, 2, (200, 3))
y = x @ [1.5, -2.0, 0.5] + 0.75 + rng.uniform(-0.1, 0.1, 200)
w = rng.uniform(0.5, 2, 200)
with open(d + "/lin.csv", "w") as f:
    f.write("a,b,c,w,y\n")
    for r, t, s in zip(x, y, w):
        f.write("%.17g,%.17g,%.17g,%.17g,%.17g\n" % (r[0], r[1], r[2], s, t))
np.save(d + "/lin.npy", np.c_[x, y].astype(np.float32))
A = np.c_[x, np.ones(200)]
np.save(d + "/ls.npy", np.linalg.lstsq(A, y, rcond=None)[0])
open(d + "/bad.csv", "w").write("a,b,c,y\n1,2,3,4\n1,abc,3,4\n")
open(d + "/empty.csv", "w").write("a,b,c,y\n")
open(d + "/two.csv", "w").write("a,b,y\n1,2,3\n4,5,6\n")
PY

"$cli" train --help >"$tmp/help"; check "train --help exits 0" test $? = 0
check "train --help lists the optimizers" grep -q "nesterov | adam | adamw | adagrad" "$tmp/help"
"$cli" help | grep -q "train MODEL --data FILE"; check "help lists train" test $? = 0
"$cli" train $model --data "$tmp/lin.csv" -o "$tmp/x.onnx" 2>"$tmp/err"
check "train without --loss exits 2" test $? = 2
check "the usage error names the losses" grep -q "cross-entropy" "$tmp/err"
"$cli" train $model --data "$tmp/lin.csv" --loss mse --optimizer rmsprop -o "$tmp/x.onnx" 2>"$tmp/err"
check "unknown optimizer exits 2" test $? = 2
check "unknown optimizer is listed" grep -q "unknown optimizer 'rmsprop'" "$tmp/err"

# CSV with header, chosen columns, sample weights, momentum: converges to least squares
"$cli" train $model --data "$tmp/lin.csv" --target y --features a,b,c --loss mse \
  --optimizer nesterov --lr 0.05 --epochs 40 --batch-size 20 --val-split 0.2 --seed 3 \
  -o "$tmp/trained.onnx" >"$tmp/out"
check "train on a CSV exits 0" test $? = 0
check "per-epoch lines with the validation loss" grep -q "epoch 40/40  train loss .*  val loss" "$tmp/out"
check "the history OUT.csv has a header and 40 rows" test "$(wc -l <"$tmp/trained.csv")" = 41
check "the history header" grep -q "^epoch,train_loss,val_loss,val_accuracy,seconds$" "$tmp/trained.csv"
check "the plot OUT.svg" grep -q "<polyline" "$tmp/trained.svg"
check "the plot has both curves" test "$(grep -c "<polyline" "$tmp/trained.svg")" = 2
python3 - "$tmp" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
d = sys.argv[1]
m = onnx.load(d + "/trained.onnx")
assert [i.name for i in m.graph.input] == ["X"] and [o.name for o in m.graph.output] == ["Y"]
w = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
got = np.r_[w["W"].ravel(), w["B"].ravel()]
ls = np.load(d + "/ls.npy")
print("CSV training: coefficients", got, "least squares", ls)
assert np.abs(got - ls).max() < 2e-2, np.abs(got - ls).max()
PY
check "trained coefficients near least squares" test $? = 0

# .npy: columns by index, default target = last column
"$cli" train $model --data "$tmp/lin.npy" --loss huber --optimizer adam --lr 0.05 --epochs 2 \
  -q -o "$tmp/npy.onnx"
check "train on a .npy exits 0" test $? = 0
check "the .npy run wrote its model" test -s "$tmp/npy.onnx"

# sample weights from a column
"$cli" train $model --data "$tmp/lin.csv" --target y --weight-column w --loss mae --epochs 2 \
  -q -o "$tmp/w.onnx"
check "train with a weight column exits 0" test $? = 0

# bad input
"$cli" train $model --data "$tmp/lin.csv" --target nope --loss mse -o "$tmp/x.onnx" 2>"$tmp/err"
check "missing column exits 1" test $? = 1
check "missing column lists the columns" grep -q "'nope'" "$tmp/err"
"$cli" train $model --data "$tmp/bad.csv" --loss mse -o "$tmp/x.onnx" 2>"$tmp/err"
check "non-numeric cell exits 1" test $? = 1
check "non-numeric cell names line 3" grep -q "line 3" "$tmp/err"
"$cli" train $model --data "$tmp/empty.csv" --loss mse -o "$tmp/x.onnx" 2>"$tmp/err"
check "empty dataset exits 1" test $? = 1
check "empty dataset says so" grep -qi "empty\|no sample\|no row" "$tmp/err"
"$cli" train $model --data "$tmp/two.csv" --loss mse -o "$tmp/x.onnx" 2>"$tmp/err"
check "shape mismatch exits 1" test $? = 1
check "shape mismatch names the input" grep -q "'X'" "$tmp/err"
"$cli" train $model --data "$tmp/lin.csv" --target y --loss cross-entropy -o "$tmp/x.onnx" 2>"$tmp/err"
check "float labels for cross-entropy exit 1" test $? = 1

# divergence: the step is named, the last finished epoch's checkpoint stays loadable
"$cli" train $model --data "$tmp/lin.csv" --target y --features a,b,c --loss mse --lr 3 \
  --epochs 50 --batch-size 20 --checkpoint "$tmp/div.ckpt" -q -o "$tmp/div.onnx" 2>"$tmp/err"
check "a diverging run exits 1" test $? = 1
check "a diverging run names the step" grep -q "step [0-9]*: the loss is" "$tmp/err"
check "a diverging run keeps its checkpoint" test -s "$tmp/div.ckpt"
check "and says so" grep -q "last finished epoch" "$tmp/err"
check "no model is written" test ! -e "$tmp/div.onnx"

# resume: 3 epochs, then 3 more from the checkpoint == 6 epochs uninterrupted, bit for bit
common=(--data "$tmp/lin.csv" --target y --features a,b,c --loss mse --optimizer adam --lr 0.02
        --batch-size 16 --seed 7 --threads 1 -q)
"$cli" train $model "${common[@]}" --epochs 6 -o "$tmp/full.onnx"
check "uninterrupted run exits 0" test $? = 0
"$cli" train $model "${common[@]}" --epochs 3 --checkpoint "$tmp/r.ckpt" -o "$tmp/half.onnx"
check "the interrupted run differs" bash -c "! cmp -s '$tmp/full.onnx' '$tmp/half.onnx'"
"$cli" train $model "${common[@]}" --epochs 6 --checkpoint "$tmp/r.ckpt" --resume -o "$tmp/resumed.onnx"
check "resumed run exits 0" test $? = 0
check "resumed weights equal the uninterrupted run's bit for bit" cmp -s "$tmp/full.onnx" "$tmp/resumed.onnx"
check "the resumed history starts at epoch 4" grep -q "^4," "$tmp/resumed.csv"
check "and not earlier" test "$(grep -c '^[123],' "$tmp/resumed.csv")" = 0

# ONNX's TrainingInfoProto: export the training step, then train from it (algorithm mode);
# SGD with momentum continues exactly as the trainer would have
common=(--data "$tmp/lin.csv" --target y --features a,b,c --batch-size 20 --no-shuffle --threads 1 -q)
"$cli" train $model "${common[@]}" --loss mse --optimizer momentum --lr 0.05 --epochs 2 \
  --export-training "$tmp/step.onnx" -o "$tmp/two.onnx"
check "--export-training exits 0" test $? = 0
"$cli" info "$tmp/step.onnx" >"$tmp/info"
check "info tells of the training info" grep -q "training info: 1 TrainingInfoProto" "$tmp/info"
"$cli" train "$tmp/step.onnx" "${common[@]}" --epochs 2 -o "$tmp/algo.onnx"
check "training from a TrainingInfoProto exits 0" test $? = 0
"$cli" train $model "${common[@]}" --loss mse --optimizer momentum --lr 0.05 --epochs 4 -o "$tmp/four.onnx"
python3 - "$tmp" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
d = sys.argv[1]
w = lambda f: {t.name: numpy_helper.to_array(t) for t in onnx.load(d + f).graph.initializer}
a, b = w("/algo.onnx"), w("/four.onnx")
for k in ("W", "B"):
    assert np.array_equal(a[k], b[k]), (k, a[k], b[k])
PY
check "2 epochs + 2 from the exported step equal 4 epochs, bit for bit" test $? = 0

# --loss nll on probabilities (models/mlp.onnx ends in Softmax) warns; on log-probabilities
# (the same model ending in LogSoftmax) it does not.  A .npz whose features array has an
# unusual name: --features defaults to the one array left besides the targets.
python3 - "$tmp" <<'PY'
import sys, numpy as np, onnx
d = sys.argv[1]
m = onnx.load("models/mlp.onnx")
for n in m.graph.node:
    if n.op_type == "Softmax":
        n.op_type = "LogSoftmax"
onnx.save(m, d + "/mlp_log.onnx")
rng = np.random.default_rng(2)
x = rng.standard_normal((40, 8)).astype(np.float32)
np.savez(d + "/cls.npz", inputs=x, y=rng.integers(0, 3, 40))
PY
"$cli" train models/mlp.onnx --data "$tmp/cls.npz" --loss nll --epochs 1 -o "$tmp/n1.onnx" \
    2>"$tmp/err" >/dev/null
check "nll on an output that is not log-probabilities trains (exit 0)" test $? = 0
check "nll on probabilities warns" grep -q "warning: --loss nll takes log-probabilities.*sums to 1" "$tmp/err"
check "--features defaults to the one array left in the .npz" test -s "$tmp/n1.onnx"
"$cli" train "$tmp/mlp_log.onnx" --data "$tmp/cls.npz" --loss nll --epochs 1 -o "$tmp/n2.onnx" \
    2>"$tmp/err" >/dev/null
check "nll on log-probabilities trains (exit 0)" test $? = 0
check "nll on log-probabilities does not warn" test ! -s "$tmp/err"

echo "$checks checks, $fails failed"
test $fails = 0
