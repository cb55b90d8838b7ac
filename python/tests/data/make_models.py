"""Writes the scikit-learn models (converted by skl2onnx) that the compatibility tests train
on both sides, onnxcustom's (make_onnxcustom_refs.py) and onnxgrad's (test_compat_*.py):

- linreg.onnx: LinearRegression (skl2onnx with black_op LinearRegressor: MatMul + Add)
- logreg.onnx: SGDClassifier(loss='log_loss'), a binary logistic regression, cut to its raw
  score 'score' [N, 1]; logreg_full.onnx: the whole converted classifier (Sigmoid, ArgMax,
  ArrayFeatureExtractor, ZipMap: ai.onnx.ml ops), into which get_trained_onnx(model=...)
  puts the trained weights
- mlp.onnx: MLPRegressor (4-3-5-1, relu)
- mlpc.onnx: MLPClassifier (4-5-1, binary) cut to its logit 'add_result1';
  mlpc_full.onnx: the whole converted classifier

Initializers are renamed I0_..., I1_... so that their names are sorted in the graph's order,
which onnxruntime-training (the original) demands of the weights to train.

    python python/tests/data/make_models.py     (needs scikit-learn and skl2onnx)
"""
import os
import warnings

import numpy as np
import onnx
from onnx import helper, shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
warnings.filterwarnings("ignore")


def rename_weights(model):
    """Initializers renamed I<k>_<name> (sorted in graph order), everywhere they are used."""
    names = [i.name for i in model.graph.initializer]
    new = {n: "I%d_%s" % (k, n) for k, n in enumerate(names)}
    for i in model.graph.initializer:
        i.name = new[i.name]
    for node in model.graph.node:
        for k, n in enumerate(node.input):
            if n in new:
                node.input[k] = new[n]
    return model


def cut(model, output):
    """The part of `model` that computes `output` (nodes, initializers, inputs it needs)."""
    need = {output}
    nodes = []
    for node in reversed(model.graph.node):
        if any(o in need for o in node.output):
            nodes.append(node)
            need.update(i for i in node.input if i)
    nodes.reverse()
    inits = [i for i in model.graph.initializer if i.name in need]
    inputs = [i for i in model.graph.input if i.name in need]
    graph = helper.make_graph(nodes, model.graph.name, inputs, [], inits)
    part = helper.make_model(graph, opset_imports=list(model.opset_import))
    inferred = shape_inference.infer_shapes(part)
    infos = {v.name: v for v in inferred.graph.value_info}
    graph.output.append(infos[output])
    res = helper.make_model(graph, opset_imports=[o for o in model.opset_import
                                                  if o.domain in ("", "ai.onnx")])
    res.ir_version = model.ir_version
    onnx.checker.check_model(res)
    return res


def main():
    from sklearn.linear_model import LinearRegression, SGDClassifier
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from skl2onnx import to_onnx

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4)).astype(np.float32)
    y = (X @ np.array([1.0, -1.0, 0.5, 2.0]) + 0.3).astype(np.float32)
    yb = (y > 0.3).astype(np.int64)
    models = {}
    reg = LinearRegression().fit(X, y)
    models["linreg"] = to_onnx(reg, X, target_opset=15, black_op={"LinearRegressor"})
    sgd = SGDClassifier(loss="log_loss", random_state=0).fit(X, yb)
    full = rename_weights(to_onnx(sgd, X, target_opset=15, black_op={"LinearRegressor"}))
    models["logreg_full"] = full
    models["logreg"] = cut(full, "score")
    mlp = MLPRegressor(hidden_layer_sizes=(3, 5), max_iter=30, random_state=0).fit(X, y)
    models["mlp"] = rename_weights(to_onnx(mlp, X, target_opset=15))
    mlpc = MLPClassifier(hidden_layer_sizes=(5,), max_iter=30, random_state=0).fit(X, yb)
    fullc = rename_weights(to_onnx(mlpc, X, target_opset=15))
    models["mlpc_full"] = fullc
    models["mlpc"] = cut(fullc, "add_result1")
    for name, m in models.items():
        path = os.path.join(HERE, name + ".onnx")
        onnx.save(m, path)
        print(name, [n.op_type for n in m.graph.node],
              [(i.name, list(i.dims)) for i in m.graph.initializer])


if __name__ == "__main__":
    main()
