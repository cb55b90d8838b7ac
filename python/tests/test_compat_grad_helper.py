"""onnx_derivative and DerivativeOptions (onnxgrad.training.grad_helper): the gradient graph
of a model as an ONNX model, for every option onnxcustom had, run in onnxruntime and equal to
onnxgrad's own forward and backward."""
import os

import numpy as np
import pytest

from conftest import data_model
from onnxgrad.training.grad_helper import DerivativeOptions, onnx_derivative
from onnxgrad.training.ortgradient import OrtGradientForwardBackward

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def add_one():
    """Y = X + 1 (onnxcustom's test model): a weight, one input, one output."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "one"], ["Y"])], "add",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 10])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 10])],
        [numpy_helper.from_array(np.array([1], np.float32), "one")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    return m


def run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, {k: v for k, v in feeds.items()
                                           if k in {i.name for i in model.graph.input}})))


def test_options():
    assert {k: int(v) for k, v in DerivativeOptions.__members__.items()} == {
        "Zero": 0, "KeepYieldOp": 1, "KeepOutputs": 2, "FillGrad": 4, "Loss": 5}
    with pytest.raises(TypeError):
        onnx_derivative(add_one(), weights=[], options=1)
    with pytest.raises(ValueError, match="FillGrad"):
        onnx_derivative(add_one(), weights=[], options=DerivativeOptions.FillGrad)
    with pytest.raises(ValueError, match="YieldOd"):
        onnx_derivative(add_one(), options=DerivativeOptions.KeepYieldOp |
                        DerivativeOptions.KeepOutputs)


@pytest.mark.parametrize("name", ["linreg", "mlp"])
def test_gradient_graphs_run_and_agree(name):
    model = onnx.load_from_string(data_model(name))
    fw = OrtGradientForwardBackward(model)
    inst = fw.new_instance()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 4)).astype(np.float32)
    seed = rng.standard_normal((7, 1)).astype(np.float32)
    y = inst.forward([x], training=True)[0]
    grads = dict(zip(fw.cls_type_._bw_fetches_names, inst.backward([seed])))
    weights = {w: fw.get_initializer(w) for w in fw.weights_to_train}
    feeds = dict(weights, X=x, variable_grad=seed)

    zero = onnx_derivative(model)
    assert "variable" not in [o.name for o in zero.graph.output]
    assert "variable_grad" in [i.name for i in zero.graph.input]
    got = run(zero, feeds)
    assert set(got) == set(grads)
    for k, v in got.items():
        np.testing.assert_allclose(v, grads[k], rtol=1e-5, atol=1e-6)
    keep = run(onnx_derivative(model, options=DerivativeOptions.KeepOutputs), feeds)
    np.testing.assert_allclose(keep["variable"], y, rtol=1e-5, atol=1e-6)
    fill = onnx_derivative(model, options=DerivativeOptions.KeepOutputs |
                           DerivativeOptions.FillGrad)
    assert "variable_grad" not in [i.name for i in fill.graph.input]
    got = run(fill, feeds)
    inst.forward([x], training=True)
    ones = dict(zip(fw.cls_type_._bw_fetches_names, inst.backward()))
    for k, v in ones.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6)
    # every node of these graphs is a standard op: any runtime runs them
    assert {n.domain for n in zero.graph.node} <= {"", "ai.onnx"}
    # no weights, one input
    nw = onnx_derivative(model, weights=[])
    assert [o.name for o in nw.graph.output] == ["X_grad"]
    np.testing.assert_allclose(run(nw, feeds)["X_grad"], grads["X_grad"], rtol=1e-5,
                               atol=1e-6)


def test_keep_yield_op():
    new = onnx_derivative(add_one(), options=DerivativeOptions.KeepYieldOp)
    types = {n.op_type for n in new.graph.node}
    assert "YieldOp" in types
    yield_op = [n for n in new.graph.node if n.op_type == "YieldOp"][0]
    assert yield_op.domain == "com.microsoft" and list(yield_op.input) == ["Y"]
    assert list(yield_op.output) == ["Y_grad"]
    assert "Y_grad" not in [i.name for i in new.graph.input]


def test_add_one_as_onnxcustom_tested_it():
    m = add_one()
    x = np.random.default_rng(1).standard_normal((6, 10)).astype(np.float32)
    g = run(onnx_derivative(m), {"X": x, "one": np.array([1], np.float32),
                                 "Y_grad": np.full((6, 10), 2, np.float32)})
    np.testing.assert_allclose(g["X_grad"], np.full((6, 10), 2))
    np.testing.assert_allclose(g["one_grad"], [120.0])
    g = run(onnx_derivative(m, weights=[], options=DerivativeOptions.KeepOutputs |
                            DerivativeOptions.FillGrad), {"X": x})
    np.testing.assert_allclose(g["Y"], x + 1, rtol=1e-6)
    np.testing.assert_allclose(g["X_grad"], np.ones((6, 10)))


def test_loss_option(tmp_path):
    from onnxgrad.utils.orttraining_helper import add_loss_output

    model = onnx.load_from_string(data_model("linreg"))
    loss_model = add_loss_output(model)
    path = str(tmp_path / "grad.onnx")
    for bad in ({}, {"label": "label"}, {"label": "label", "loss": "loss", "weights": []}):
        with pytest.raises(ValueError):
            onnx_derivative(loss_model, options=DerivativeOptions.Loss,
                            path_name=bad.pop("path_name", path if "loss" in bad else None),
                            **bad)
    new = onnx_derivative(loss_model, options=DerivativeOptions.Loss, label="label",
                          loss="loss", path_name=path)
    assert os.path.exists(path)
    assert [i.name for i in new.graph.input] == ["X", "label"]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    label = rng.standard_normal((5, 1)).astype(np.float32)
    got = run(new, {"X": x, "label": label})
    coef = onnx.numpy_helper.to_array(model.graph.initializer[0])
    e = x @ coef + 0.3 - label
    np.testing.assert_allclose(got["loss"], (e * e).sum(), rtol=1e-4)
    np.testing.assert_allclose(got["X_grad"], 2 * e @ coef.T, rtol=1e-4, atol=1e-5)
    # weights are named among the inputs to get their gradients
    new = onnx_derivative(loss_model, options=DerivativeOptions.Loss, label="label",
                          loss="loss", path_name=path, inputs=["coef"])
    got = run(new, {"X": x, "label": label})
    np.testing.assert_allclose(got["coef_grad"], 2 * x.T @ e, rtol=1e-4, atol=1e-5)
