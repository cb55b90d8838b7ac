"""OrtGradientForwardBackward: attributes, forward/backward values, input forms, several
pending forwards, pickling, save_onnx_graph, errors."""
import gc
import logging
import os
import pickle

import numpy as np
import pytest

import onnxgrad
from onnxgrad import OrtGradientForwardBackward, OrtGradientForwardBackwardFunction

from conftest import linreg_model


def linreg_grads(x, coef, intercept, g):
    """Analytic forward and gradients of Y = X @ coef + intercept for output gradient g."""
    return x @ coef + intercept, g @ coef.T, x.T @ g, g.sum(axis=0)


def test_attributes(linreg):
    fw = OrtGradientForwardBackward(linreg, class_name="LinRegFunction")
    assert fw.weights_to_train == ["coef", "intercept"]
    assert fw.input_names == ["X"]
    assert fw.output_names == ["Y"]
    assert fw.grad_input_names == ["X", "coef", "intercept"]
    assert fw.providers == ["CPUExecutionProvider"]
    assert fw.device_index == 0
    assert fw.cls_type_.__name__ == "LinRegFunction"
    assert issubclass(fw.cls_type_, OrtGradientForwardBackwardFunction)
    inst = fw.new_instance()
    assert isinstance(inst, fw.cls_type_)
    assert inst.pending == 0
    assert fw.cls_type_._bw_fetches_names == ["X_grad", "coef_grad", "intercept_grad"]
    assert repr(fw) == "OrtGradientForwardBackward(...)"
    default = OrtGradientForwardBackward(linreg)
    assert default.class_name.startswith("OrtGradientForwardBackwardFunction_")


def test_forward_backward_values(linreg):
    fw = OrtGradientForwardBackward(linreg, threads=1)
    inst = fw.new_instance()
    coef, intercept = fw.get_initializer("coef"), fw.get_initializer("intercept")
    assert coef.shape == (5, 1) and intercept.shape == (1,)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    g = rng.standard_normal((7, 1)).astype(np.float32)
    y_eval, = inst.forward([x])
    y, = inst.forward([x], training=True)
    assert inst.pending == 1
    assert inst.saved_tensors[0] is x
    dx, dcoef, dintercept = inst.backward([g])
    assert inst.pending == 0
    want_y, want_dx, want_dcoef, want_dint = linreg_grads(x, coef, intercept, g)
    np.testing.assert_allclose(y_eval, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dcoef, want_dcoef, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dintercept, want_dint, rtol=1e-5, atol=1e-5)
    assert dx.dtype == np.float32 and dcoef.shape == (5, 1) and dintercept.shape == (1,)
    # default output gradient: ones
    inst.forward([x], training=True)
    _, dcoef1, dint1 = inst.backward()
    np.testing.assert_allclose(dcoef1, x.sum(axis=0)[:, None], rtol=1e-5)
    np.testing.assert_allclose(dint1, [7.0], rtol=1e-6)
    inst.forward([x], training=True)
    _, _, dint2 = inst.backward([None])
    np.testing.assert_allclose(dint2, [7.0], rtol=1e-6)


def test_float64_model():
    model = linreg_model(dtype=np.float64)
    fw = OrtGradientForwardBackward(model)
    inst = fw.new_instance()
    x = np.arange(10, dtype=np.float64).reshape(2, 5)
    y, = inst.forward(x, training=True)
    assert y.dtype == np.float64
    dx, dcoef, dint = inst.backward(np.full((2, 1), 2.0))
    np.testing.assert_allclose(dcoef[:, 0], 2 * x.sum(axis=0))
    np.testing.assert_allclose(dint, [4.0])


def test_input_forms_and_weight_override(linreg):
    fw = OrtGradientForwardBackward(linreg)
    inst = fw.new_instance()
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    coef2 = np.ones((5, 1), np.float32)
    int2 = np.array([-1.0], np.float32)
    base, = inst.forward([x])
    np.testing.assert_array_equal(inst.forward(x)[0], base)
    np.testing.assert_array_equal(inst.forward({"X": x})[0], base)
    # lists and non-contiguous arrays are converted
    np.testing.assert_allclose(inst.forward([x.tolist()])[0], base, rtol=1e-6)
    xf = np.asfortranarray(x)
    np.testing.assert_array_equal(inst.forward([xf])[0], base)
    # the seed's form: inputs followed by the weights, for this call only
    y, = inst.forward([x, coef2, int2], training=True)
    np.testing.assert_allclose(y, x.sum(axis=1, keepdims=True) - 1, rtol=1e-5)
    dx, dcoef, dint = inst.backward([np.ones((3, 1), np.float32)])
    np.testing.assert_allclose(dx, np.ones((3, 5)), rtol=1e-6)  # g @ coef2.T
    y, = inst.forward({"X": x, "intercept": int2})
    np.testing.assert_allclose(y, base - 1.5, rtol=1e-5, atol=1e-6)
    # the object's weights are unchanged
    np.testing.assert_array_equal(inst.forward([x])[0], base)
    # set_initializer changes them for every instance
    fw.set_initializer("coef", coef2)
    other = fw.new_instance()
    np.testing.assert_allclose(other.forward([x])[0], x.sum(axis=1, keepdims=True) + 0.5,
                               rtol=1e-5)
    np.testing.assert_array_equal(fw.get_initializer("coef"), coef2)


def test_several_forwards_before_backwards(mlp_path, mlp_x):
    fw = OrtGradientForwardBackward(mlp_path, threads=1)
    inst = fw.new_instance()
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (4, 2, 6)]
    gs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (4, 2, 6)]
    # reference: one forward and its backward at a time, on a fresh instance
    ref = []
    for x, g in zip(xs, gs):
        i2 = fw.new_instance()
        i2.forward([x], training=True)
        ref.append(i2.backward([g]))
    outs = [inst.forward([x], training=True) for x in xs]
    assert inst.pending == 3
    assert inst.saved_bytes > 0
    # an inference call in between changes nothing
    inst.forward([mlp_x])
    for k in (2, 1, 0):  # backward pops the newest forward first
        got = inst.backward([gs[k]])
        assert len(got) == 5
        for a, b in zip(got, ref[k]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert inst.pending == 0
    assert inst.saved_bytes == 0
    assert outs[0][0].shape == (4, 3)


def test_outputs_outlive_everything(linreg):
    fw = OrtGradientForwardBackward(linreg)
    inst = fw.new_instance()
    x = np.ones((2, 5), np.float32)
    y, = inst.forward([x], training=True)
    grads = inst.backward()
    expect_y, expect_dc = y.copy(), grads[1].copy()
    assert isinstance(y.base, object) and y.base is not None  # a view of the C tensor
    y += 1  # outputs are writable
    del inst, fw
    gc.collect()
    np.testing.assert_array_equal(y - 1, expect_y)
    np.testing.assert_array_equal(grads[1], expect_dc)


def test_input_names_and_output_names(two_outputs):
    fw = OrtGradientForwardBackward(two_outputs, input_names=[], output_names=["Y2"])
    assert fw.output_names == ["Y2"]
    assert fw.input_names == []
    assert fw.weights_to_train == ["W", "s"]
    inst = fw.new_instance()
    x = np.array([[1, 2, 3, 4], [0, 1, 0, 1]], np.float32)
    y2, = inst.forward([x], training=True)
    np.testing.assert_allclose(y2, [60.0, 4.0])
    dw, ds = inst.backward([np.array([1.0, 1.0], np.float32)])
    np.testing.assert_array_equal(dw, np.zeros((4, 3)))  # W does not reach Y2
    np.testing.assert_allclose(ds, [32.0])
    fw = OrtGradientForwardBackward(two_outputs, weights_to_train=["s"])
    assert fw.grad_input_names == ["X", "s"]
    inst = fw.new_instance()
    y1, y2 = inst.forward([x], training=True)
    dx, ds = inst.backward([np.zeros_like(y1), np.ones_like(y2)])
    np.testing.assert_allclose(dx, 4 * x)
    np.testing.assert_allclose(ds, [32.0])


def test_model_as_bytes_proto_and_path(linreg, tmp_path):
    path = tmp_path / "linreg.onnx"
    path.write_bytes(linreg.SerializeToString())
    x = np.ones((1, 5), np.float32)
    results = []
    for m in (linreg, linreg.SerializeToString(), str(path), path):
        inst = OrtGradientForwardBackward(m).new_instance()
        inst.forward([x], training=True)
        results.append(inst.backward())
    for r in results[1:]:
        for a, b in zip(r, results[0]):
            np.testing.assert_array_equal(a, b)


def test_pickle_round_trip(linreg, tmp_path):
    path = tmp_path / "linreg.onnx"
    path.write_bytes(linreg.SerializeToString())
    fw = OrtGradientForwardBackward(str(path), class_name="Saved", threads=1)
    new_coef = np.arange(5, dtype=np.float32).reshape(5, 1)
    fw.set_initializer("coef", new_coef)
    data = pickle.dumps(fw)
    os.remove(path)  # the restored object needs no model file
    fw2 = pickle.loads(data)
    assert fw2.weights_to_train == fw.weights_to_train
    assert fw2.input_names == fw.input_names and fw2.output_names == fw.output_names
    assert fw2.class_name == "Saved" and fw2.cls_type_.__name__ == "Saved"
    assert fw2.threads == 1
    np.testing.assert_array_equal(fw2.get_initializer("coef"), new_coef)
    x = np.random.default_rng(5).standard_normal((4, 5)).astype(np.float32)
    g = np.random.default_rng(6).standard_normal((4, 1)).astype(np.float32)
    a, b = fw.new_instance(), fw2.new_instance()
    ya, = a.forward([x], training=True)
    yb, = b.forward([x], training=True)
    np.testing.assert_array_equal(ya, yb)
    for u, v in zip(a.backward([g]), b.backward([g])):
        np.testing.assert_array_equal(u, v)
    # a pickled copy of the copy still works, and the original is untouched by the copy
    fw3 = pickle.loads(pickle.dumps(fw2))
    fw2.set_initializer("intercept", np.array([9.0], np.float32))
    np.testing.assert_array_equal(fw3.get_initializer("intercept"), [0.5])
    np.testing.assert_array_equal(fw.get_initializer("intercept"), [0.5])


def test_pickle_keeps_input_and_output_selection(two_outputs):
    fw = OrtGradientForwardBackward(two_outputs, input_names=[], output_names=["Y1"])
    fw2 = pickle.loads(pickle.dumps(fw))
    assert fw2.output_names == ["Y1"] and fw2.grad_input_names == ["W", "s"]
    x = np.ones((2, 4), np.float32)
    i = fw2.new_instance()
    i.forward([x], training=True)
    assert len(i.backward()) == 2


def test_save_onnx_graph(linreg, tmp_path):
    onnx = pytest.importorskip("onnx")
    fw = OrtGradientForwardBackward(linreg, class_name="LR")
    inst = fw.new_instance()
    files = inst.save_onnx_graph(str(tmp_path), prefix="p_", suffix="_s")
    assert set(files) == {"_trained_onnx", "_optimized_pre_grad_model"}
    assert files["_trained_onnx"] == os.path.join(str(tmp_path), "p_LR_s._trained_onnx.onnx")
    assert files["_optimized_pre_grad_model"] == os.path.join(
        str(tmp_path), "p_LR_s._optimized_pre_grad_model.onnx")
    train = onnx.load(files["_trained_onnx"])
    ev = onnx.load(files["_optimized_pre_grad_model"])
    onnx.checker.check_model(ev)
    # DESIGN section 4: inputs, weights, seeds -> outputs, input grads, weight grads
    assert [i.name for i in train.graph.input] == ["X", "coef", "intercept", "Y_grad"]
    assert [o.name for o in train.graph.output] == ["Y", "X_grad", "coef_grad",
                                                    "intercept_grad"]
    assert [i.name for i in ev.graph.input] == ["X", "coef", "intercept"]
    data = fw.save_onnx_graph(None)
    assert data["_trained_onnx"] == train.SerializeToString() or \
        onnx.load_from_string(data["_trained_onnx"]).graph == train.graph
    assert isinstance(data["_optimized_pre_grad_model"], bytes)
    assert fw.cls_type_._trained_onnx.to_onnx().graph.output[0].name == "Y"
    with pytest.raises(FileNotFoundError):
        fw.save_onnx_graph(str(tmp_path / "missing"))


def test_saved_training_graph_runs_in_onnxruntime(linreg, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    fw = OrtGradientForwardBackward(linreg)
    data = fw.save_onnx_graph(None)
    sess = ort.InferenceSession(data["_trained_onnx"], providers=["CPUExecutionProvider"])
    x = np.random.default_rng(8).standard_normal((3, 5)).astype(np.float32)
    g = np.random.default_rng(9).standard_normal((3, 1)).astype(np.float32)
    feeds = {"X": x, "coef": fw.get_initializer("coef"),
             "intercept": fw.get_initializer("intercept"), "Y_grad": g}
    ref = sess.run(None, feeds)
    inst = fw.new_instance()
    ours = inst.forward([x], training=True) + inst.backward([g])
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_get_initializer(two_outputs):
    fw = OrtGradientForwardBackward(two_outputs, weights_to_train=["W"])
    np.testing.assert_array_equal(fw.get_initializer("s"), [2.0])  # not trained
    np.testing.assert_array_equal(fw.get_initializer("axes"), [1])
    assert fw.get_initializer("W").shape == (4, 3)
    with pytest.raises(RuntimeError, match="nope"):
        fw.get_initializer("nope")
    assert fw.get_initializer("nope", exc=False) is None


def test_logging(linreg, caplog):
    with caplog.at_level(logging.DEBUG, logger="onnxgrad"):
        fw = OrtGradientForwardBackward(linreg, enable_logging=True)
        inst = fw.new_instance()
        inst.forward([np.ones((1, 5), np.float32)], training=True)
        inst.backward()
    text = caplog.text
    assert "weights_to_train=['coef', 'intercept']" in text
    assert "forward" in text and "backward" in text
    fw2 = pickle.loads(pickle.dumps(fw))  # the logger is rebuilt, not pickled
    assert fw2.cls_type_._logger is not None


def test_debug_mode(linreg):
    fw = OrtGradientForwardBackward(linreg, debug=True)
    inst = fw.new_instance()
    with pytest.raises(ValueError, match="NaN"):
        inst.forward([np.full((1, 5), np.nan, np.float32)])
    y, = inst.forward([np.ones((1, 5), np.float32)])
    assert y.shape == (1, 1)


# ---- errors ------------------------------------------------------------------------------


def test_errors_bad_arguments(linreg):
    with pytest.raises(ValueError, match="nope"):
        OrtGradientForwardBackward(linreg, weights_to_train=["coef", "nope"])
    with pytest.raises(ValueError, match="unique"):
        OrtGradientForwardBackward(linreg, weights_to_train=["coef", "coef"])
    with pytest.raises(ValueError, match="Z"):
        OrtGradientForwardBackward(linreg, output_names=["Z"])
    with pytest.raises(ValueError, match="Unexpected providers"):
        OrtGradientForwardBackward(linreg, providers="tpu")
    with pytest.raises(RuntimeError, match="cuda:1"):
        OrtGradientForwardBackward(linreg, providers="cuda:1")
    with pytest.raises(RuntimeError):
        OrtGradientForwardBackward(b"not an onnx model")
    with pytest.raises(FileNotFoundError):
        OrtGradientForwardBackward("/nonexistent/model.onnx")
    with pytest.raises(TypeError):
        OrtGradientForwardBackward(12)


def test_errors_bad_inputs(linreg):
    inst = OrtGradientForwardBackward(linreg).new_instance()
    x = np.ones((2, 5), np.float32)
    cases = [
        ([x.astype(np.float64)], "float32"),  # wrong dtype: OG_ERR_TYPE
        ([np.ones((2, 4), np.float32)], "X"),  # wrong dim: OG_ERR_SHAPE
        ([np.ones((10,), np.float32)], "rank"),  # wrong rank
        ({"X": x, "Q": x}, "Q"),  # unknown name: OG_ERR_INVALID_ARG
        ({}, "missing"),  # missing input
        ([x, x, x, x], "at most"),  # too many positional inputs
        ([x, np.ones((4, 1), np.float32)], "coef"),  # a weight of the wrong shape
    ]
    for inputs, msg in cases:
        for training in (False, True):
            with pytest.raises(ValueError, match=msg) as info:
                inst.forward(inputs, training=training)
            assert inst.pending == 0
    err = info.value
    assert isinstance(err, onnxgrad.OnnxgradValueError) and err.status_name == "OG_ERR_SHAPE"
    with pytest.raises(TypeError):
        inst.forward([np.array(["a"] * 5).reshape(1, 5)])
    with pytest.raises(ValueError, match="pending"):
        inst.backward()
    inst.forward([x], training=True)
    with pytest.raises(ValueError, match="output 'Y'"):
        inst.backward([np.ones((3, 1), np.float32)])  # shape of another batch
    with pytest.raises(ValueError, match="float32"):
        inst.backward([np.ones((2, 1), np.float64)])
    with pytest.raises(ValueError, match="1 output gradients"):
        inst.backward([None, None])
    assert inst.pending == 1  # a failed backward keeps the state
    assert len(inst.backward()) == 3
    with pytest.raises(ValueError):
        OrtGradientForwardBackward(linreg).set_initializer("coef", np.ones((2, 2), np.float32))


def test_function_class_needs_a_gradient_object():
    with pytest.raises(TypeError):
        OrtGradientForwardBackwardFunction()
    with pytest.raises(RuntimeError, match="saved"):
        OrtGradientForwardBackward(linreg_model()).new_instance().saved_tensors


def test_results_stay_valid_across_calls(linreg):
    """Small results share one block per call, reused by a later call only once no result
    of it is alive: kept results never change; arrays changed in place, reshaped or replaced
    between calls are seen."""
    fw = OrtGradientForwardBackward(linreg, threads=1)
    inst = fw.new_instance()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    coef, intercept = fw.get_initializer("coef"), fw.get_initializer("intercept")
    kept = []
    for i in range(6):
        y, = inst.forward([x, coef, intercept], training=True)
        g = inst.backward([np.full((4, 1), float(i), np.float32)])
        kept.append((y, g, y.copy(), [a.copy() for a in g]))
        x += 1  # in place: the next call reads the new values
    for y, g, y0, g0 in kept:
        np.testing.assert_array_equal(y, y0)
        for a, b in zip(g, g0):
            np.testing.assert_array_equal(a, b)
    # the last calls differ: x moved, the seed too
    assert not np.array_equal(kept[0][0], kept[-1][0])
    np.testing.assert_allclose(kept[-1][1][2], [20.0])  # 4 rows x seed 5
    # a reshaped input (same object) and other shapes go through the general path
    x2 = np.ones((2, 5), np.float32)
    y2, = inst.forward([x2, coef, intercept])
    x2.shape = (5, 2)
    with pytest.raises(ValueError, match="X"):
        inst.forward([x2, coef, intercept])
    x2.shape = (2, 5)
    np.testing.assert_array_equal(inst.forward([x2, coef, intercept])[0], y2)
    big = np.ones((3000, 5), np.float32)  # an output larger than the block: handed over
    yb, = inst.forward([big])
    assert yb.shape == (3000, 1) and isinstance(yb, onnxgrad.OrtValueArray)
    np.testing.assert_allclose(inst.forward([x2])[0], y2, rtol=1e-6)
