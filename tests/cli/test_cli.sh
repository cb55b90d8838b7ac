#!/usr/bin/env bash
# CLI contract: help, usage errors, info, run with file naming and manifest.json, errors.
set -u
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0; checks=0
check() { # check DESCRIPTION CONDITION...
  local what=$1; shift
  checks=$((checks + 1))
  if ! "$@"; then echo "FAIL: $what"; fails=$((fails + 1)); fi
}

"$cli" help >"$tmp/help" 2>&1; check "help exits 0" test $? = 0
check "help lists run" grep -q "run MODEL --input" "$tmp/help"
"$cli" --version >/dev/null; check "--version exits 0" test $? = 0
"$cli" frobnicate 2>"$tmp/err"; check "unknown command exits 2" test $? = 2
check "unknown command says so" grep -q "unknown command" "$tmp/err"
"$cli" run models/mlp.onnx 2>"$tmp/err"; check "run without -o exits 2" test $? = 2
# usage errors of every job command exit 2 (and, under ASan, leak nothing parse_job allocated)
for c in run grad check export bench; do
  "$cli" $c models/mlp.onnx models/mlp.onnx -o "$tmp/u" 2>"$tmp/err"
  check "$c with two model paths exits 2" test $? = 2
  check "$c with two model paths says so" grep -q "one model path only" "$tmp/err"
done
"$cli" bench models/mlp.onnx -n 0 2>"$tmp/err"; check "bench -n 0 exits 2" test $? = 2
"$cli" bench models/mlp.onnx --warmup -1 2>"$tmp/err"; check "bench --warmup -1 exits 2" test $? = 2
"$cli" run models/mlp.onnx --warmup 2 -o "$tmp/u" 2>"$tmp/err"
check "run --warmup exits 2 (bench only)" test $? = 2
"$cli" bench models/mlp.onnx --input x=models/mlp_x.npy -n 3 --warmup 0 >"$tmp/b"
check "bench --warmup 0 exits 0" test $? = 0
check "bench reports its warm-up and runs" grep -q '"iters": 3, "warmup": 0,' "$tmp/b"
"$cli" bench models/mlp.onnx --input x=models/mlp_x.npy -n 3 >"$tmp/b"
check "bench warms up once before fewer than 5 runs" grep -q '"warmup": 1,' "$tmp/b"

"$cli" info models/mlp.onnx >"$tmp/info"; check "info exits 0" test $? = 0
check "info shows the input with its symbolic dim" grep -q "x: float32 \[batch, 8\]" "$tmp/info"
check "info shows initializer sizes" grep -q "W1: float32 \[8, 16\] 512 bytes" "$tmp/info"
check "info shows the op histogram" grep -q "MatMul: 1" "$tmp/info"
check "info shows opsets" grep -q "ai.onnx=17" "$tmp/info"

"$cli" run models/mlp.onnx --input x=models/mlp_x.npy -o "$tmp/out" >/dev/null
check "run exits 0" test $? = 0
check "run writes the output" test -f "$tmp/out/probs.npy"
check "run writes manifest.json" grep -q '"probs": "probs.npy"' "$tmp/out/manifest.json"
python3 - "$tmp/out" <<'PY'
import sys, numpy as np, onnxruntime as ort
got = np.load(sys.argv[1] + "/probs.npy")
ref = ort.InferenceSession("models/mlp.onnx", providers=["CPUExecutionProvider"]).run(
    None, {"x": np.load("models/mlp_x.npy")})[0]
assert got.dtype == np.float32 and got.shape == ref.shape, (got.dtype, got.shape)
assert np.allclose(got, ref, rtol=1e-5, atol=1e-6), np.abs(got - ref).max()
PY
check "run output equals onnxruntime's" test $? = 0
"$cli" run models/mlp.onnx --input models/mlp_x.npy --threads 1 -o "$tmp/out2" >/dev/null
check "a single-input model takes --input FILE" test $? = 0

# odd output names: sanitized, kept unique, mapped in the manifest
python3 - "$tmp" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a/b:c", "a_b_c")]
g = helper.make_graph([helper.make_node("Identity", ["x"], ["a/b:c"]),
                       helper.make_node("Neg", ["x"], ["a_b_c"])], "g", [x], outs)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, sys.argv[1] + "/names.onnx")
import numpy as np
np.save(sys.argv[1] + "/x.npy", np.array([1.0, -2.0], np.float32))
np.save(sys.argv[1] + "/x_f64.npy", np.array([1.0, -2.0], np.float64))
np.save(sys.argv[1] + "/c64.npy", np.array([1, 2], np.complex64))
PY
"$cli" run "$tmp/names.onnx" --input x="$tmp/x.npy" -o "$tmp/out3" >/dev/null
check "run with odd names exits 0" test $? = 0
check "odd name sanitized" test -f "$tmp/out3/a_b_c.npy"
check "colliding name made unique" test -f "$tmp/out3/a_b_c_1.npy"
check "manifest maps the original name" grep -q '"a/b:c": "a_b_c.npy"' "$tmp/out3/manifest.json"

# errors: one line on stderr, non-zero exit
"$cli" run models/mlp.onnx --input x=/nonexistent.npy -o "$tmp/o4" 2>"$tmp/err"
check "missing input file exits 1" test $? = 1
check "missing input file: one line" test "$(wc -l <"$tmp/err")" = 1
"$cli" run "$tmp/names.onnx" --input x="$tmp/x_f64.npy" -o "$tmp/o5" 2>"$tmp/err"
check "wrong dtype exits 1" test $? = 1
check "wrong dtype names the input" grep -q "'x'" "$tmp/err"
"$cli" run "$tmp/names.onnx" --input x="$tmp/c64.npy" -o "$tmp/o6" 2>"$tmp/err"
check "complex64 .npy refused" test $? = 1
check "complex64 .npy refusal says why" grep -q "not supported" "$tmp/err"
"$cli" run tests/data/bad/cycle.onnx -o "$tmp/o7" 2>"$tmp/err"
check "bad model exits 1" test $? = 1
check "bad model message names the cycle" grep -q "cycle" "$tmp/err"
"$cli" run models/mlp.onnx --input y=models/mlp_x.npy -o "$tmp/o8" 2>"$tmp/err"
check "unknown input name exits 1" test $? = 1

# gradients: grad writes <name>_grad files; check passes on the MLP and fails when the
# tolerance is impossible (so it can fail)
"$cli" grad models/mlp.onnx --input x=models/mlp_x.npy -o "$tmp/g" >/dev/null
check "grad exits 0" test $? = 0
check "grad writes the weight gradients" test -f "$tmp/g/W1_grad.npy"
check "grad writes the input gradient" grep -q '"x_grad": "x_grad.npy"' "$tmp/g/manifest.json"
"$cli" grad models/mlp.onnx --input x=models/mlp_x.npy --weights W2 -o "$tmp/g2" >/dev/null
check "grad --weights limits the weights" test ! -f "$tmp/g2/W1_grad.npy" -a -f "$tmp/g2/W2_grad.npy"
"$cli" grad models/mlp.onnx --input x=models/mlp_x.npy --weights nope -o "$tmp/g3" 2>"$tmp/err"
check "grad with an unknown weight exits 1" test $? = 1
check "unknown weight error lists candidates" grep -q "'W1'" "$tmp/err"
"$cli" check models/mlp.onnx --input x=models/mlp_x.npy >"$tmp/chk"
check "check passes on the MLP" test $? = 0
check "check reports every weight" grep -q "^b2 " "$tmp/chk"
# Relu at exactly 0: the rule's 0 (PyTorch's) is not the finite difference's 1/2, which no
# step changes: a difference beyond the noise, so check must fail and say so
"$cli" check tests/data/relu_kink.onnx --input x=tests/data/relu_kink_x.npy >"$tmp/chk" 2>"$tmp/err"
check "check fails on a gradient that finite differences contradict" test $? = 1
check "check marks the failing tensor" grep -q "^x .*FAIL" "$tmp/chk"
check "check prints the magnitudes compared" grep -q "max |grad|.*fd noise" "$tmp/chk"

# values that are not tensors, and strings: info shows their types, run writes strings as '<U'
"$cli" info tests/data/values/kinds.onnx >"$tmp/kinds" 2>&1
check "info on sequences, maps and optionals exits 0" test $? = 0
check "info shows a sequence type" grep -q "S: seq(float32)" "$tmp/kinds"
check "info shows a map type" grep -q "M_out: map(int64, float32 \[\])" "$tmp/kinds"
check "info shows an optional type" grep -q "O: optional(seq(int64 \[k\]))" "$tmp/kinds"
python3 - "$tmp" <<'PY'
import sys, numpy as np
np.save(sys.argv[1] + "/idx.npy", np.array([2, 0], np.int64))
np.save(sys.argv[1] + "/s.npy", np.array(["p", "qq", "h\u00e9llo \U0001F600"]))
np.save(sys.argv[1] + "/obj.npy", np.array(["p", None], dtype=object), allow_pickle=True)
PY
"$cli" run tests/data/values/strings.onnx --input idx="$tmp/idx.npy" --input s="$tmp/s.npy" \
    -o "$tmp/str" >/dev/null
check "run on string tensors exits 0" test $? = 0
python3 - "$tmp/str" <<'PY'
import sys, json, numpy as np, onnxruntime as ort
d = sys.argv[1]
feeds = {"idx": np.array([2, 0], np.int64), "s": np.array(["p", "qq", "h\u00e9llo \U0001F600"])}
sess = ort.InferenceSession("tests/data/values/strings.onnx", providers=["CPUExecutionProvider"])
names = [o.name for o in sess.get_outputs()]
manifest = json.load(open(d + "/manifest.json"))
for name, ref in zip(names, sess.run(None, feeds)):
    got = np.load(d + "/" + manifest[name])
    assert got.dtype.kind == "U" and got.shape == ref.shape, (name, got.dtype, got.shape)
    assert (got == ref.astype(str)).all(), (name, got, ref)
PY
check "string outputs equal onnxruntime's" test $? = 0
"$cli" run tests/data/values/strings.onnx --input idx="$tmp/idx.npy" --input s="$tmp/obj.npy" \
    -o "$tmp/str2" 2>"$tmp/err"
check "an object .npy exits 1" test $? = 1
check "an object .npy is refused with the way out" grep -q "dtype=str" "$tmp/err"

# grad on a model with a sequence among its outputs and no --grad-output: the default seeds
# are ones for the tensor outputs; the sequence (not differentiated) gets none
python3 - "$tmp" <<'PY'
import sys, numpy as np
from onnx import TensorProto as TP, helper as h, numpy_helper
F = TP.FLOAT
seq = h.make_sequence_type_proto(h.make_tensor_type_proto(F, [2]))
g = h.make_graph([h.make_node("Mul", ["x", "w"], ["xw"]),
                  h.make_node("SequenceConstruct", ["x", "xw"], ["s"]),
                  h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
                  h.make_node("SequenceInsert", ["s", "xw"], ["s2"]),
                  h.make_node("SequenceAt", ["s2", "one"], ["z"])], "g",
                 [h.make_tensor_value_info("x", F, [2])],
                 [h.make_tensor_value_info("y", F, [4]), h.make_value_info("s2", seq),
                  h.make_tensor_value_info("z", F, [2])],
                 [numpy_helper.from_array(np.array([0.5, -2.0], np.float32), "w"),
                  numpy_helper.from_array(np.array(1, np.int64), "one")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
open(sys.argv[1] + "/seq.onnx", "wb").write(m.SerializeToString())
np.save(sys.argv[1] + "/xs.npy", np.array([3.0, 4.0], np.float32))
PY
"$cli" grad "$tmp/seq.onnx" --input x="$tmp/xs.npy" -o "$tmp/sg" 2>"$tmp/err"
check "grad with a sequence output exits 0" test $? = 0
python3 - "$tmp/sg" <<'PY'
import sys, numpy as np
d = sys.argv[1]
# y = [x, x w], z = x w (s2[1]), seeds of ones: dx = 1 + 2 w, dw = 2 x
assert np.allclose(np.load(d + "/x_grad.npy"), [2.0, -3.0]), np.load(d + "/x_grad.npy")
assert np.allclose(np.load(d + "/w_grad.npy"), [6.0, 8.0]), np.load(d + "/w_grad.npy")
assert len(np.load(d + "/s2_2.npy")) == 2
PY
check "grad with a sequence output: gradients of the tensor outputs' ones" test $? = 0

# a Loop whose body inserts at the front of a carried sequence: the gradient needs each
# iteration's sequence (its length), which the backward body recomputes
python3 - "$tmp" <<'PY'
import sys, numpy as np
from onnx import TensorProto as TP, helper as h, numpy_helper
F = TP.FLOAT
seq = h.make_sequence_type_proto(h.make_tensor_type_proto(F, None))
body = h.make_graph([h.make_node("Mul", ["s", "w"], ["s2"]),
                     h.make_node("SequenceInsert", ["seq", "s2", "zero"], ["seq2"]),
                     h.make_node("Identity", ["cond"], ["c2"])], "body",
                    [h.make_tensor_value_info("i", TP.INT64, []),
                     h.make_tensor_value_info("cond", TP.BOOL, []),
                     h.make_tensor_value_info("s", F, [2]), h.make_value_info("seq", seq)],
                    [h.make_tensor_value_info("c2", TP.BOOL, []),
                     h.make_tensor_value_info("s2", F, [2]), h.make_value_info("seq2", seq)])
g = h.make_graph([h.make_node("SequenceEmpty", [], ["seq0"], dtype=F),
                  h.make_node("Loop", ["m", "", "x", "seq0"], ["s", "sq"], name="front",
                              body=body),
                  h.make_node("ConcatFromSequence", ["sq"], ["y"], axis=0, new_axis=1)], "g",
                 [h.make_tensor_value_info("x", F, [2])],
                 [h.make_tensor_value_info("y", F, [3, 2])],
                 [numpy_helper.from_array(np.array([0.5, -2.0], np.float32), "w"),
                  numpy_helper.from_array(np.array(3, np.int64), "m"),
                  numpy_helper.from_array(np.array(0, np.int64), "zero")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
m.ir_version = 8
open(sys.argv[1] + "/front.onnx", "wb").write(m.SerializeToString())
PY
"$cli" grad "$tmp/front.onnx" --input x="$tmp/xs.npy" -o "$tmp/fg" 2>"$tmp/err"
check "grad through a Loop reading its carried sequence exits 0" test $? = 0
python3 - "$tmp/fg" <<'PY'
import sys, numpy as np
d = sys.argv[1]
# y = [x w^3, x w^2, x w] (front inserts), seeds of ones: dx = w + w^2 + w^3,
# dw = x (1 + 2 w + 3 w^2)
assert np.allclose(np.load(d + "/x_grad.npy"), [0.875, -6.0]), np.load(d + "/x_grad.npy")
assert np.allclose(np.load(d + "/w_grad.npy"), [8.25, 36.0]), np.load(d + "/w_grad.npy")
PY
check "grad through a Loop reading its carried sequence: its values" test $? = 0

# an If whose branch reads a sequence of the enclosing graph: the gradient flows into the
# sequence's items (then: y = s[1] = x w; else: y = -x)
python3 - "$tmp" <<'PY'
import sys, numpy as np
from onnx import TensorProto as TP, helper as h, numpy_helper
F = TP.FLOAT
then_g = h.make_graph([h.make_node("SequenceAt", ["s", "one"], ["t"])], "then", [],
                      [h.make_tensor_value_info("t", F, [2])])
else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [],
                      [h.make_tensor_value_info("e", F, [2])])
for c in (True, False):
    g = h.make_graph([h.make_node("Mul", ["x", "w"], ["xw"]),
                      h.make_node("SequenceConstruct", ["x", "xw"], ["s"]),
                      h.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g,
                                  else_branch=else_g)], "g",
                     [h.make_tensor_value_info("x", F, [2])],
                     [h.make_tensor_value_info("y", F, [2])],
                     [numpy_helper.from_array(np.array([0.5, -2.0], np.float32), "w"),
                      numpy_helper.from_array(np.array(1, np.int64), "one"),
                      numpy_helper.from_array(np.array(c), "c")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
    m.ir_version = 8
    open(sys.argv[1] + "/ifseq_%d.onnx" % c, "wb").write(m.SerializeToString())
PY
for c in 1 0; do
  "$cli" grad "$tmp/ifseq_$c.onnx" --input x="$tmp/xs.npy" -o "$tmp/ig$c" 2>"$tmp/err"
  check "grad into a sequence an If's branch reads from outside exits 0 (c=$c)" test $? = 0
done
python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
x = np.load(d + "/xs.npy")
# seeds of ones; then: dx = w, dw = x; else: dx = -1, dw = 0
for c, dx, dw in ((1, [0.5, -2.0], x), (0, [-1.0, -1.0], [0.0, 0.0])):
    gx, gw = np.load(d + "/ig%d/x_grad.npy" % c), np.load(d + "/ig%d/w_grad.npy" % c)
    assert np.allclose(gx, dx) and np.allclose(gw, dw), (c, gx, gw)
PY
check "grad into a sequence an If's branch reads from outside: its values" test $? = 0

# an optional of a tensor that a branch reads from the enclosing graph: its gradient flows
# (y = o's element = x w: dx = w, dw = x); an optional of a sequence so read is refused
# naming the node, op and value (its gradient would be left out), and so is an optional
# both branches read at opset 15 (its gradient would need an Identity of an optional)
python3 - "$tmp" <<'PY'
import sys, numpy as np
from onnx import TensorProto as TP, helper as h, numpy_helper
F = TP.FLOAT
opt_t = [h.make_node("Optional", ["xw"], ["o"])]
for tag, read, make in (("t", [h.make_node("OptionalGetElement", ["o"], ["t"])], opt_t),
                        ("s", [h.make_node("OptionalGetElement", ["o"], ["ts"]),
                               h.make_node("SequenceAt", ["ts", "one"], ["t"])],
                         [h.make_node("SequenceConstruct", ["x", "xw"], ["s"]),
                          h.make_node("Optional", ["s"], ["o"])]),
                        ("t15", [h.make_node("OptionalGetElement", ["o"], ["t"])], opt_t)):
    then_g = h.make_graph(read, "then", [], [h.make_tensor_value_info("t", F, [2])])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [],
                          [h.make_tensor_value_info("e", F, [2])])
    if tag == "t15":
        else_g = h.make_graph([h.make_node("OptionalGetElement", ["o"], ["eo"]),
                               h.make_node("Neg", ["eo"], ["e"])], "else", [],
                              [h.make_tensor_value_info("e", F, [2])])
    g = h.make_graph([h.make_node("Mul", ["x", "w"], ["xw"])] + make +
                     [h.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g,
                                  else_branch=else_g)], "g",
                     [h.make_tensor_value_info("x", F, [2])],
                     [h.make_tensor_value_info("y", F, [2])],
                     [numpy_helper.from_array(np.array([0.5, -2.0], np.float32), "w"),
                      numpy_helper.from_array(np.array(1, np.int64), "one"),
                      numpy_helper.from_array(np.array(True), "c")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15 if tag == "t15" else 16)])
    m.ir_version = 8
    open(sys.argv[1] + "/ifopt_%s.onnx" % tag, "wb").write(m.SerializeToString())
PY
"$cli" grad "$tmp/ifopt_t.onnx" --input x="$tmp/xs.npy" -o "$tmp/io" 2>"$tmp/err"
check "grad into an optional an If's branch reads from outside exits 0" test $? = 0
python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
gx, gw = np.load(d + "/io/x_grad.npy"), np.load(d + "/io/w_grad.npy")
assert np.allclose(gx, [0.5, -2.0]) and np.allclose(gw, np.load(d + "/xs.npy")), (gx, gw)
PY
check "grad into an optional an If's branch reads from outside: its values" test $? = 0
"$cli" grad "$tmp/ifopt_s.onnx" --input x="$tmp/xs.npy" -o "$tmp/ios" 2>"$tmp/err"
check "grad into an optional of a sequence an If's branch reads from outside fails" test $? = 1
check "... naming the node, op and optional" \
  grep -q "node 'branch' (If.*a gradient into optional 'o'.*this optional holds sequence values" "$tmp/err"
"$cli" grad "$tmp/ifopt_t15.onnx" --input x="$tmp/xs.npy" -o "$tmp/io15" 2>"$tmp/err"
check "grad into an optional both branches read at opset 15 fails" test $? = 1
check "... naming the node, op, optional and opset" \
  grep -q "node 'branch' (If.*a gradient into optional 'o'.*needs opset 16.*opset 15" "$tmp/err"

echo "$((checks - fails)) passed, $fails failed"
test $fails = 0
