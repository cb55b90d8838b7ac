"""Small models for the training tests (tests/unit/test_train.c, tests/train/).

python3 tests/data/train/make_models.py  ->  linreg.onnx, mlp3.onnx, digits_mlp.onnx,
mlp3_bn_dropout.onnx, mlp3_sqrt.onnx beside this file (or name the ones to make).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(graph, name, opset=17):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="onnxgrad-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(HERE, name))


def linreg():
    # Y = X W + B, X [N, 3], starting from zeros
    w = numpy_helper.from_array(np.zeros((3, 1), np.float32), "W")
    b = numpy_helper.from_array(np.zeros((1,), np.float32), "B")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["Y"])],
        "linreg",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1])],
        [w, b])
    save(g, "linreg.onnx")


def mlp3():
    # logits = Relu(X W1 + B1) W2 + B2, X [N, 4], 3 classes
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array((rng.standard_normal((4, 8)) * 0.5).astype(np.float32), "W1"),
        numpy_helper.from_array(np.zeros(8, np.float32), "B1"),
        numpy_helper.from_array((rng.standard_normal((8, 3)) * 0.5).astype(np.float32), "W2"),
        numpy_helper.from_array(np.zeros(3, np.float32), "B2"),
    ]
    g = helper.make_graph(
        [helper.make_node("Gemm", ["X", "W1", "B1"], ["H"]),
         helper.make_node("Relu", ["H"], ["R"]),
         helper.make_node("Gemm", ["R", "W2", "B2"], ["logits"])],
        "mlp3",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])],
        inits)
    save(g, "mlp3.onnx")


def digits_mlp():
    # 64 pixels -> 64 ReLU -> 10 class logits, He initialization
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array((rng.standard_normal((64, 64)) * np.sqrt(2 / 64)).astype(np.float32), "W1"),
        numpy_helper.from_array(np.zeros(64, np.float32), "B1"),
        numpy_helper.from_array((rng.standard_normal((64, 10)) * np.sqrt(2 / 64)).astype(np.float32), "W2"),
        numpy_helper.from_array(np.zeros(10, np.float32), "B2"),
    ]
    g = helper.make_graph(
        [helper.make_node("Gemm", ["X", "W1", "B1"], ["H"]),
         helper.make_node("Relu", ["H"], ["R"]),
         helper.make_node("Gemm", ["R", "W2", "B2"], ["logits"])],
        "digits_mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        inits)
    save(g, "digits_mlp.onnx")


def mlp3_bn_dropout():
    # mlp3 with BatchNormalization (training mode: running statistics) after the first Gemm
    # and Dropout (ratio 0.3, training mode) after the Relu, for tests/unit/test_parallel.c
    rng = np.random.default_rng(0)
    f = np.float32
    inits = [
        numpy_helper.from_array((rng.standard_normal((4, 8)) * 0.5).astype(f), "W1"),
        numpy_helper.from_array(np.zeros(8, f), "B1"),
        numpy_helper.from_array((rng.standard_normal((8, 3)) * 0.5).astype(f), "W2"),
        numpy_helper.from_array(np.zeros(3, f), "B2"),
        numpy_helper.from_array(np.ones(8, f), "bn_scale"),
        numpy_helper.from_array(np.zeros(8, f), "bn_bias"),
        numpy_helper.from_array(np.zeros(8, f), "bn_mean"),
        numpy_helper.from_array(np.ones(8, f), "bn_var"),
        numpy_helper.from_array(np.array(0.3, f), "ratio"),
        numpy_helper.from_array(np.array(True), "train"),
    ]
    g = helper.make_graph(
        [helper.make_node("Gemm", ["X", "W1", "B1"], ["H"]),
         helper.make_node("BatchNormalization", ["H", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                          ["HN", "bn_mean_out", "bn_var_out"], training_mode=1, momentum=0.9),
         helper.make_node("Relu", ["HN"], ["R"]),
         helper.make_node("Dropout", ["R", "ratio", "train"], ["D"]),
         helper.make_node("Gemm", ["D", "W2", "B2"], ["logits"])],
        "mlp3_bn_dropout",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])],
        inits)
    save(g, "mlp3_bn_dropout.onnx")


def mlp3_sqrt():
    # mlp3 on Sqrt(X * X * S), S a weight of ones: a sample whose features are all 0 has a
    # finite loss and a NaN gradient of S (0 * Inf), for tests/unit/test_parallel.c
    rng = np.random.default_rng(0)
    f = np.float32
    inits = [
        numpy_helper.from_array(np.ones(4, f), "S"),
        numpy_helper.from_array((rng.standard_normal((4, 8)) * 0.5).astype(f), "W1"),
        numpy_helper.from_array(np.zeros(8, f), "B1"),
        numpy_helper.from_array((rng.standard_normal((8, 3)) * 0.5).astype(f), "W2"),
        numpy_helper.from_array(np.zeros(3, f), "B2"),
    ]
    g = helper.make_graph(
        [helper.make_node("Mul", ["X", "X"], ["XX"]),
         helper.make_node("Mul", ["XX", "S"], ["XS"]),
         helper.make_node("Sqrt", ["XS"], ["Q"]),
         helper.make_node("Gemm", ["Q", "W1", "B1"], ["H"]),
         helper.make_node("Relu", ["H"], ["R"]),
         helper.make_node("Gemm", ["R", "W2", "B2"], ["logits"])],
        "mlp3_sqrt",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])],
        inits)
    save(g, "mlp3_sqrt.onnx")


if __name__ == "__main__":
    import sys
    makers = {f.__name__: f for f in (linreg, mlp3, digits_mlp, mlp3_bn_dropout, mlp3_sqrt)}
    for name in sys.argv[1:] or makers:
        makers[name]()
