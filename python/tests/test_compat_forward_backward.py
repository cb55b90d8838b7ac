"""OrtGradientForwardBackward as onnxcustom's users call it: the dynamic class's attributes
and the gradients against onnxcustom 0.4.293's own (data/onnxcustom_refs.json), inputs as
numpy arrays, onnxruntime OrtValues and OrtValueVectors, torch tensors and DLPack objects,
results usable with ``.numpy()`` and as numpy arrays, size-1 axes, ``_sess``/``_sess_eval``,
logging on onnxcustom's logger, and no copy of a large weight."""
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import onnxgrad
from conftest import TORCH_PYTHON, data_model, ref_array
from onnxgrad.training.ortgradient import (OrtGradientForwardBackward,
                                           OrtGradientForwardBackwardFunction)
from onnxgrad.values import OrtValueArray


def weights_of(fw):
    return [fw.get_initializer(w) for w in fw.weights_to_train]


@pytest.mark.parametrize("name", ["linreg", "mlp"])
def test_attributes_and_gradients_as_onnxcustom(refs, name):
    ref = refs["forward_backward"][name]
    fw = OrtGradientForwardBackward(data_model(name))
    cls = fw.cls_type_
    for att, want in ref["attributes"].items():
        assert list(getattr(cls, att)) == want, att
    assert fw.weights_to_train == ref["weights_to_train"]
    assert fw.input_names == ref["input_names"] and fw.output_names == ref["output_names"]
    assert fw.providers == ref["providers"] and repr(fw) == ref["repr"]
    inst = fw.new_instance()
    x, seed = ref_array(ref["x"]), ref_array(ref["seed"])
    y = inst.forward([x] + weights_of(fw), training=True)
    grads = inst.backward([seed])
    np.testing.assert_allclose(y[0], ref_array(ref["y"]), rtol=1e-5, atol=1e-6)
    assert len(grads) == len(ref["grads"])
    for got, want in zip(grads, ref["grads"]):
        np.testing.assert_allclose(got.numpy(), ref_array(want), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inst.forward([x] + weights_of(fw))[0], ref_array(ref["y_eval"]),
                               rtol=1e-5, atol=1e-6)


def test_every_documented_attribute():
    fw = OrtGradientForwardBackward(data_model("linreg"), debug=True)
    cls = fw.cls_type_
    for att in ("_run_options", "_sess", "_sess_eval", "_training_agent", "_cache", "_logger",
                "_input_names", "_debug", "_grad_input_names", "_output_names",
                "_weights_to_train", "_bw_fetches_names", "_fw_outputs_device_info",
                "_bw_outputs_device_info", "_fw_no_grad_output_device_info", "_graph_info",
                "_trained_onnx", "_optimized_pre_grad_model", "_graph_builder", "_devices",
                "_onx_inp", "_onx_out"):
        assert hasattr(cls, att), att
    assert cls._debug is True and cls._logger is None
    assert len(cls._onx_inp) == len(cls._onx_out)
    assert cls._graph_info.initializer_names_to_train == ["coef", "intercept"]
    assert cls._graph_info.user_output_names == ["variable"]
    assert len(cls._bw_outputs_device_info) == 3 and str(cls._devices[0]) == "cpu"
    onnx = pytest.importorskip("onnx")
    # the graphs: ModelProto attributes, and the builder's bytes
    assert [i.name for i in cls._trained_onnx.graph.input] == ["X", "coef", "intercept",
                                                              "variable_grad"]
    assert [o.name for o in cls._optimized_pre_grad_model.graph.output] == ["variable"]
    assert onnx.load_from_string(cls._graph_builder.get_model()).graph.output[1].name == \
        "X_grad"
    assert cls._graph_builder.get_inference_optimized_model() == \
        cls._optimized_pre_grad_model.SerializeToString()
    assert issubclass(cls, OrtGradientForwardBackwardFunction)
    assert cls.__doc__.startswith("Inherits from OrtGradientForwardBackwardFunction")


def test_sessions_run(refs):
    fw = OrtGradientForwardBackward(data_model("linreg"))
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    coef, intercept = weights_of(fw)
    sess_eval = fw.cls_type_._sess_eval
    assert [i.name for i in sess_eval.get_inputs()] == ["X", "coef", "intercept"]
    got = sess_eval.run(None, {"X": x, "coef": coef, "intercept": intercept})
    np.testing.assert_allclose(got[0], x @ coef + intercept, rtol=1e-5, atol=1e-6)
    seed = np.ones((6, 1), np.float32)
    out = fw.cls_type_._sess.run(None, {"X": x, "coef": coef, "intercept": intercept,
                                        "variable_grad": seed})
    assert [o.name for o in fw.cls_type_._sess.get_outputs()] == [
        "variable", "X_grad", "coef_grad", "intercept_grad"]
    np.testing.assert_allclose(out[2], x.T @ seed, rtol=1e-5)
    assert fw.cls_type_._sess.get_providers() == ["CPUExecutionProvider"]


def test_results_work_as_ortvalues_and_as_numpy():
    fw = OrtGradientForwardBackward(data_model("linreg"))
    inst = fw.new_instance()
    x = np.ones((3, 4), np.float32)
    y, = inst.forward([x], training=True)
    assert isinstance(y, OrtValueArray) and isinstance(y, np.ndarray)
    assert y.shape == (3, 1) and y.shape() == [3, 1]  # a tuple, and OrtValue's method
    assert type(y.numpy()) is np.ndarray and y.numpy().shape == (3, 1)
    assert y.element_type() == 1 and y.data_type() == "tensor(float)"
    assert y.device_name() == "Cpu" and y.has_value() and y.is_tensor()
    assert y.data_ptr() == y.__array_interface__["data"][0]
    assert float((y * 2).sum()) == pytest.approx(2 * float(y.sum()))
    grads = inst.backward([np.ones((3, 1), np.float32)])
    assert len(grads) == 3 and [g.shape() for g in grads] == [[3, 4], [4, 1], [1]]
    np.testing.assert_allclose(np.asarray(grads[1]), x.T @ np.ones((3, 1)), rtol=1e-6)


def test_onnxruntime_inputs(refs):
    """Lists of OrtValues, OrtValueVector and onnxruntime.OrtValue, as the seed's tests fed
    them (onnxruntime is not a dependency: skipped without it)."""
    pytest.importorskip("onnxruntime")
    from onnxruntime import OrtValue
    from onnxruntime.capi._pybind_state import OrtDevice, OrtMemType
    from onnxruntime.capi._pybind_state import OrtValue as C_OrtValue
    from onnxruntime.capi._pybind_state import OrtValueVector

    ref = refs["forward_backward"]["mlp"]
    fw = OrtGradientForwardBackward(data_model("mlp"))
    inst = fw.new_instance()
    x, seed = ref_array(ref["x"]), ref_array(ref["seed"])
    arrays = [x] + weights_of(fw)
    dev = OrtDevice(OrtDevice.cpu(), OrtMemType.DEFAULT, 0)
    want = [ref_array(g) for g in ref["grads"]]
    as_list = [C_OrtValue.ortvalue_from_numpy(a, dev) for a in arrays]
    vect = OrtValueVector()
    for v in as_list:
        vect.push_back(v)
    seeds = OrtValueVector()
    seeds.push_back(C_OrtValue.ortvalue_from_numpy(seed, dev))
    wrapped = [OrtValue.ortvalue_from_numpy(a) for a in arrays]
    for inputs, grad_outputs in ((as_list, [C_OrtValue.ortvalue_from_numpy(seed, dev)]),
                                 (vect, seeds), (wrapped, [OrtValue.ortvalue_from_numpy(seed)])):
        got = inst.forward(inputs, training=True)
        np.testing.assert_allclose(got[0].numpy(), ref_array(ref["y"]), rtol=1e-5, atol=1e-6)
        grads = inst.backward(grad_outputs)
        for g, w in zip(grads, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)
        got = inst.forward(inputs)
        np.testing.assert_allclose(got[0].numpy(), ref_array(ref["y_eval"]), rtol=1e-5,
                                   atol=1e-6)


class _DLPackOnly:
    """An object that only exports DLPack (as jax, cupy on the host, ... do)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_inputs():
    fw = OrtGradientForwardBackward(data_model("linreg"))
    inst = fw.new_instance()
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    base = inst.forward([x])[0].numpy()
    np.testing.assert_array_equal(inst.forward([_DLPackOnly(x)])[0], base)
    inst.forward([_DLPackOnly(x)], training=True)
    g = inst.backward([_DLPackOnly(np.ones((2, 1), np.float32))])
    np.testing.assert_allclose(g[1], x.T @ np.ones((2, 1)), rtol=1e-6)


def test_torch_inputs(tmp_path):
    """torch tensors (requiring grad or not) in and .numpy() out, under the Python that has
    PyTorch (Debian's /usr/bin/python3)."""
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, numpy"], capture_output=True)
    if probe.returncode:
        pytest.skip("PyTorch is not importable by %s" % TORCH_PYTHON)
    model = tmp_path / "mlp.onnx"
    model.write_bytes(data_model("mlp"))
    script = """
import numpy as np, torch
from onnxgrad import OrtGradientForwardBackward
fw = OrtGradientForwardBackward(%r)
inst = fw.new_instance()
torch.manual_seed(0)
x = torch.randn(5, 4, requires_grad=True)
ws = [torch.tensor(fw.get_initializer(w), requires_grad=True) for w in fw.weights_to_train]
y, = inst.forward([x] + ws, training=True)
seed = torch.randn(5, 1)
grads = inst.backward([seed])
# the same with torch's autograd on a torch copy of the model (4-3-5-1 relu)
h = x.float()
for i in range(3):
    h = h @ ws[2 * i] + ws[2 * i + 1]
    if i < 2:
        h = torch.relu(h)
h.reshape(-1, 1).backward(seed)
ref = [x.grad] + [w.grad for w in ws]
assert np.allclose(y.numpy(), h.detach().numpy(), rtol=1e-5, atol=1e-6)
for g, r in zip(grads, ref):
    assert np.allclose(g.numpy(), r.numpy(), rtol=1e-5, atol=1e-6), (g, r)
print("ok", len(grads))
""" % str(model)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(onnxgrad.__file__)),
               ONNXGRAD_LIBRARY=onnxgrad.library_path())
    res = subprocess.run([TORCH_PYTHON, "-c", script], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "ok 7"


def test_size_one_axes():
    """A (3,) intercept for a (1, 3) initializer, a (1, N) gradient for an (N, 1) output:
    accepted as the seed accepted them; anything else is a clear ValueError."""
    fw = OrtGradientForwardBackward(data_model("mlp"))
    inst = fw.new_instance()
    ws = weights_of(fw)
    assert ws[1].shape == (1, 3)
    x = np.random.default_rng(1).standard_normal((25, 4)).astype(np.float32)
    y = inst.forward([x] + ws, training=True)[0]
    seed = np.random.default_rng(2).standard_normal((25, 1)).astype(np.float32)
    want = inst.backward([seed])
    flat = [w.reshape(-1) if w.shape[0] == 1 else w for w in ws]
    assert flat[1].shape == (3,)
    y2 = inst.forward([x] + flat, training=True)[0]
    np.testing.assert_array_equal(y2, y)
    got = inst.backward([seed.reshape(1, 25)])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    inst.forward([x] + ws, training=True)
    with pytest.raises(ValueError, match="variable"):
        inst.backward([np.ones((5, 5), np.float32)])
    inst.backward()
    with pytest.raises(ValueError, match="I1_intercepts"):
        inst.forward([x, ws[0], np.ones((4,), np.float32)] + ws[2:])
    fw.set_initializer("I1_intercepts", np.zeros(3, np.float32))
    np.testing.assert_array_equal(fw.get_initializer("I1_intercepts"), np.zeros((1, 3)))


def test_logging_on_onnxcustoms_logger(caplog):
    with caplog.at_level(logging.DEBUG, logger="onnxcustom"):
        fw = OrtGradientForwardBackward(data_model("linreg"), enable_logging=True)
        inst = fw.new_instance()
        inst.forward([np.ones((2, 4), np.float32)], training=True)
        inst.backward()
    names = {r.name for r in caplog.records}
    assert names == {"onnxcustom"}
    text = caplog.text
    assert "[OrtGradientForwardBackward] weights_to_train=['coef', 'intercept']" in text
    assert "[OrtGradientForwardBackward] create training onnx" in text
    assert "forward] (1I) begin with gradient" in text and "backward] (1I) begin" in text
    # the records also reach handlers of the "onnxgrad" logger, once
    seen = []

    class H(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    h = H()
    lg = logging.getLogger("onnxgrad")
    lg.addHandler(h)
    old = lg.level
    lg.setLevel(logging.INFO)
    try:
        OrtGradientForwardBackward(data_model("linreg"), enable_logging=True)
    finally:
        lg.removeHandler(h)
        lg.setLevel(old)
    assert "[OrtGradientForwardBackward] create training onnx" in seen
    assert len(seen) == len(set(seen)) or seen.count(seen[0]) == 1


def test_no_copy_of_a_large_weight():
    """A 100 MB weight passed at every call, as the seed passed weights: forward reads it in
    place and the training state keeps a view of it, so the peak memory of a training
    forward and backward grows by its gradient (100 MB), not by a copy more."""
    pytest.importorskip("onnx")
    n = 5000  # 5000 x 5000 float32: 100 MB
    # W is an input here (the model has no such initializer): a weight-sized input that the
    # backward half reads (dX = dY W^T), given at every call
    script = """
import resource, numpy as np
from onnx import TensorProto, helper
from onnxgrad import OrtGradientForwardBackward
n = %d
graph = helper.make_graph(
    [helper.make_node("MatMul", ["X", "W"], ["Y"])], "big",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n]),
     helper.make_tensor_value_info("W", TensorProto.FLOAT, [n, n])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, n])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
fw = OrtGradientForwardBackward(model, threads=1)
inst = fw.new_instance()
x = np.ones((1, n), np.float32)
w = np.full((n, n), 0.5, np.float32)
seed = np.ones((1, n), np.float32)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(3):
    y = inst.forward([x, w], training=True)
    assert inst.saved_bytes >= 4 * n * n  # the state views W (counted, not copied)
    dx, dw = inst.backward([seed])
    assert dw.shape == (n, n) and float(dw[0, 0]) == 1.0
    del dx, dw, y
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)
""" % n
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ))
    assert res.returncode == 0, res.stderr[-3000:]
    grown_mb = int(res.stdout.strip())
    # W's gradient (100 MB) may be new memory; a copy of W or of the gradient would add 100
    assert grown_mb < 150, grown_mb
