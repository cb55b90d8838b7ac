"""Fixtures of the onnxgrad Python tests: small models built with onnx's helper, the
repository's models, the CLI of the build under test (ONNXGRAD_CLI, else build/onnxgrad)
and PyTorch reference gradients (computed by /usr/bin/python3, see torch_ref.py)."""
import os
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TORCH_PYTHON = os.environ.get("ONNXGRAD_TORCH_PYTHON", "/usr/bin/python3")
TORCH_MODELS = ["linreg", "linreg_loss", "mlp", "mlp_loss", "lenet_loss", "transformer"]


def linreg_model(n_features=5, opset=17, dtype=np.float32):
    """Y = X @ coef + intercept, coef [n, 1], intercept [1]; symbolic batch."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    rng = np.random.default_rng(3)
    coef = rng.standard_normal((n_features, 1)).astype(dtype)
    intercept = np.array([0.5], dtype=dtype)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "coef"], ["xc"], name="mm"),
         helper.make_node("Add", ["xc", "intercept"], ["Y"], name="add")],
        "linreg",
        [helper.make_tensor_value_info("X", elem, ["batch", n_features])],
        [helper.make_tensor_value_info("Y", elem, ["batch", 1])],
        [numpy_helper.from_array(coef, "coef"), numpy_helper.from_array(intercept, "intercept")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def two_output_model():
    """Y1 = relu(X @ W), Y2 = sum(X * X, axis 1) * s: two outputs, int64 input ignored."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    s = np.array([2.0], dtype=np.float32)
    axes = np.array([1], dtype=np.int64)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["xw"]),
         helper.make_node("Relu", ["xw"], ["Y1"]),
         helper.make_node("Mul", ["X", "X"], ["xx"]),
         helper.make_node("ReduceSum", ["xx", "axes"], ["r"], keepdims=0),
         helper.make_node("Mul", ["r", "s"], ["Y2"])],
        "two",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("Y1", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("Y2", TensorProto.FLOAT, ["batch"])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(s, "s"),
         numpy_helper.from_array(axes, "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def linreg():
    return linreg_model()


@pytest.fixture
def two_outputs():
    return two_output_model()


@pytest.fixture
def mlp_path():
    return os.path.join(ROOT, "models", "mlp.onnx")


@pytest.fixture
def mlp_x():
    return np.load(os.path.join(ROOT, "models", "mlp_x.npy"))


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("ONNXGRAD_CLI") or os.path.join(ROOT, "build", "onnxgrad")
    if not os.path.exists(path):
        pytest.skip("the onnxgrad CLI is not built (%s)" % path)
    return path


@pytest.fixture(scope="session")
def torch_refs(tmp_path_factory):
    """Folder with one sub-folder of PyTorch references per model of TORCH_MODELS."""
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True)
    if probe.returncode:
        pytest.skip("PyTorch is not importable by %s" % TORCH_PYTHON)
    out = tmp_path_factory.mktemp("torch_refs")
    res = subprocess.run([TORCH_PYTHON, "-W", "ignore", os.path.join(HERE, "torch_ref.py"),
                          str(out)] + TORCH_MODELS, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError("torch_ref.py failed:\n" + res.stderr[-3000:])
    return str(out)


def mlp_model(sizes=(64, 32, 10), seed=0):
    """An MLP (MatMul, Add, Relu; logits out) with Glorot-uniform weights, as scikit-learn's
    MLPClassifier initializes them."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits, h = [], [], "x"
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        bound = np.sqrt(6.0 / (a + b))
        inits += [numpy_helper.from_array(rng.uniform(-bound, bound, (a, b)).astype(np.float32),
                                          "W%d" % i),
                  numpy_helper.from_array(rng.uniform(-bound, bound, b).astype(np.float32),
                                          "b%d" % i)]
        last = i == len(sizes) - 2
        nodes += [helper.make_node("MatMul", [h, "W%d" % i], ["m%d" % i]),
                  helper.make_node("Add", ["m%d" % i, "b%d" % i],
                                   ["logits" if last else "a%d" % i])]
        h = "logits" if last else "a%d" % i
        if not last:
            nodes.append(helper.make_node("Relu", [h], ["r%d" % i]))
            h = "r%d" % i
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", sizes[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", sizes[-1]])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# ---- onnxcustom's own values (data/onnxcustom_refs.json, see make_onnxcustom_refs.py) ----

DATA = os.path.join(HERE, "data")


@pytest.fixture(scope="session")
def refs():
    """The values onnxcustom 0.4.293 computed (onnxruntime-training 1.15.1), written by
    make_onnxcustom_refs.py."""
    import json

    with open(os.path.join(DATA, "onnxcustom_refs.json")) as f:
        return json.load(f)


def ref_array(d):
    """A numpy array from a reference entry {'shape', 'dtype', 'data'}."""
    return np.array(d["data"], dtype=d["dtype"]).reshape(d["shape"])


def data_model(name):
    """One of the scikit-learn models of data/ (written by data/make_models.py), as bytes."""
    with open(os.path.join(DATA, name + ".onnx"), "rb") as f:
        return f.read()
