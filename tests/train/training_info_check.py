"""Check the models with a TrainingInfoProto that tests/unit/test_training_info.c wrote.

    python3 tests/train/training_info_check.py DIR      (DIR: the test's OG_TRAINING_INFO_DIR)

For every exported model DIR/NAME.onnx:
  - onnx.checker.check_model(full_check=True) passes (it checks the main graph only);
  - the main graph and the algorithm graph combined as the ONNX spec defines it pass the same
    check, and the update bindings go from initializers to outputs of that graph;
  - where the test saved a batch (NAME.X.npy, NAME.label.npy) and the values one step in
    onnxgrad's algorithm mode gave (NAME.after.KEY.npy), onnx's reference evaluator runs the
    combined graph on the batch and gives the same new values.
The hand-built tests/data/train/linreg_momentum_ti.onnx passes the same checks, and
DIR/roundtrip_momentum_ti.onnx (loaded and saved by onnxgrad) must carry its TrainingInfoProto
unchanged.
Exits 77 (skipped) when onnx is not installed.
"""
import glob
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGINAL = os.path.join(HERE, "..", "data", "train", "linreg_momentum_ti.onnx")


def combined(model, ti):
    g, a = model.graph, ti.algorithm
    graph = helper.make_graph(
        list(g.node) + list(a.node), g.name + "+algorithm",
        list(g.input) + list(a.input), list(g.output) + list(a.output),
        list(g.initializer) + list(a.initializer), value_info=list(g.value_info) + list(a.value_info))
    m = helper.make_model(graph, opset_imports=list(model.opset_import))
    m.ir_version = model.ir_version
    return m


def scalar_one_hot_depth(model):
    """OneHot's depth may be a scalar or a one-element 1-D tensor (onnxgrad's gradient of
    SoftmaxCrossEntropyLoss writes the latter); onnx 1.16's reference OneHot only takes the
    former under numpy 2: give it a scalar copy."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    depths = {n.input[1] for n in m.graph.node if n.op_type == "OneHot"}
    for t in m.graph.initializer:
        if t.name in depths and list(t.dims) == [1]:
            del t.dims[:]
    return m


def check(path, failures):
    name = os.path.basename(path)[:-5]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    if len(model.training_info) != 1:
        failures.append(f"{name}: {len(model.training_info)} TrainingInfoProtos, expected 1")
        return
    domains = {o.domain: o.version for o in model.opset_import}
    ti = model.training_info[0]
    uses_training = any(n.domain == "ai.onnx.preview.training" for n in ti.algorithm.node)
    if uses_training and domains.get("ai.onnx.preview.training") != 1:
        failures.append(f"{name}: ai.onnx.preview.training 1 is not imported")
    cm = combined(model, ti)
    onnx.checker.check_model(cm, full_check=True)
    inits = {t.name for t in cm.graph.initializer}
    outputs = {o.name for o in cm.graph.output}
    keys = [b.key for b in ti.update_binding]
    if len(set(keys)) != len(keys):
        failures.append(f"{name}: repeated update_binding keys")
    for b in ti.update_binding:
        if b.key not in inits:
            failures.append(f"{name}: update_binding key {b.key} is no initializer")
        if b.value not in outputs:
            failures.append(f"{name}: update_binding value {b.value} is no output")
    x_path = os.path.join(os.path.dirname(path), name + ".X.npy")
    if not os.path.exists(x_path):
        return
    feeds = {"X": np.load(x_path), "label": np.load(x_path.replace(".X.npy", ".label.npy"))}
    ref = ReferenceEvaluator(scalar_one_hot_depth(cm))
    values = [b.value for b in ti.update_binding]
    got = dict(zip(values, ref.run(values, feeds)))
    worst = 0.0
    for b in ti.update_binding:
        want = np.load(os.path.join(os.path.dirname(path), f"{name}.after.{b.key}.npy"))
        mine = np.asarray(got[b.value]).astype(want.dtype).reshape(want.shape)
        scale = max(float(np.max(np.abs(want))), 1e-12)
        diff = float(np.max(np.abs(mine.astype(np.float64) - want.astype(np.float64)))) / scale
        worst = max(worst, diff)
        if diff > 1e-5:
            failures.append(f"{name}: {b.key}: reference evaluator differs by {diff:.2e} (relative)")
    print(f"{name}: checker passes (model and combined graph), {len(values)} bindings, "
          f"reference evaluator step agrees to {worst:.1e}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    folder = sys.argv[1]
    failures = []
    paths = sorted(p for p in glob.glob(os.path.join(folder, "*.onnx"))
                   if not p.endswith("roundtrip_momentum_ti.onnx"))
    if not paths:
        print(f"no exported models in {folder}: run test_training_info first")
        return 1
    for p in paths + [ORIGINAL]:  # the hand-built model too: Gradient and Momentum ops
        try:
            check(p, failures)
        except Exception as e:  # the checker's own errors
            failures.append(f"{os.path.basename(p)}: {type(e).__name__}: {e}")
    rt = os.path.join(folder, "roundtrip_momentum_ti.onnx")
    if not os.path.exists(rt):
        failures.append("roundtrip_momentum_ti.onnx is missing")
    else:
        a, b = onnx.load(ORIGINAL), onnx.load(rt)
        if list(a.training_info) != list(b.training_info):
            failures.append("load -> save changed the TrainingInfoProto")
        else:
            print("roundtrip_momentum_ti: TrainingInfoProto unchanged by load -> save")
    for f in failures:
        print("FAIL", f)
    print(f"{len(paths) + 2 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
