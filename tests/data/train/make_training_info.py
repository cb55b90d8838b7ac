"""A model carrying its own training step in a TrainingInfoProto, written with onnx.helper
the way the ONNX spec describes it (tests/unit/test_training_info.c trains it).

python3 tests/data/train/make_training_info.py  ->  linreg_momentum_ti.onnx beside this file,
and two broken variants: linreg_ti_bad_key.onnx (an update_binding whose key is a computed
value, not an initializer) and linreg_ti_bad_output.onnx (one bound to a missing output).

Main graph: Y = X W + B.  Algorithm graph: loss = mean((Y - label)^2); Gradient of loss with
respect to W and B; Momentum (standard, alpha 0.9, beta 1) with R, T and the velocities as
algorithm initializers; T + 1.  Initialization graph: W = [[0.1], [0.2], [0.3]], T = 0.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINING = "ai.onnx.preview.training"


def build(bindings):
    inits = [numpy_helper.from_array(np.zeros((3, 1), np.float32), "W"),
             numpy_helper.from_array(np.zeros((1,), np.float32), "B")]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["Y"])],
        "linreg",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1])],
        inits)

    algo_inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "R"),
        numpy_helper.from_array(np.array(7, np.int64), "T"),  # the initialization resets it
        numpy_helper.from_array(np.zeros((3, 1), np.float32), "VW"),
        numpy_helper.from_array(np.zeros((1,), np.float32), "VB"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
    ]
    algorithm = helper.make_graph(
        [helper.make_node("Sub", ["Y", "label"], ["err"]),
         helper.make_node("Mul", ["err", "err"], ["sq"]),
         helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
         helper.make_node("Gradient", ["W", "B"], ["dW", "dB"], domain=TRAINING, xs=["W", "B"],
                          y="loss"),
         helper.make_node("Momentum", ["R", "T", "W", "B", "dW", "dB", "VW", "VB"],
                          ["W_new", "B_new", "VW_new", "VB_new"], domain=TRAINING, alpha=0.9,
                          beta=1.0, norm_coefficient=0.0, mode="standard"),
         helper.make_node("Add", ["T", "one"], ["T_new"])],
        "algorithm",
        [helper.make_tensor_value_info("label", TensorProto.FLOAT, ["N", 1])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("W_new", TensorProto.FLOAT, [3, 1]),
         helper.make_tensor_value_info("B_new", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("VW_new", TensorProto.FLOAT, [3, 1]),
         helper.make_tensor_value_info("VB_new", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("T_new", TensorProto.INT64, [])],
        algo_inits)

    initialization = helper.make_graph(
        [helper.make_node("Constant", [], ["W0"],
                          value=numpy_helper.from_array(np.array([[0.1], [0.2], [0.3]], np.float32))),
         helper.make_node("Constant", [], ["T0"], value=numpy_helper.from_array(np.array(0, np.int64)))],
        "initialization", [],
        [helper.make_tensor_value_info("W0", TensorProto.FLOAT, [3, 1]),
         helper.make_tensor_value_info("T0", TensorProto.INT64, [])])

    ti = helper.make_training_info(algorithm, bindings, initialization, [("W", "W0"), ("T", "T0")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(TRAINING, 1)],
                              producer_name="onnxgrad-tests")
    model.training_info.append(ti)
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)  # training_info is not checked by it
    return model


def main():
    good = [("W", "W_new"), ("B", "B_new"), ("VW", "VW_new"), ("VB", "VB_new"), ("T", "T_new")]
    onnx.save(build(good), os.path.join(HERE, "linreg_momentum_ti.onnx"))
    bad_key = [("XW", "W_new")] + good[1:]
    onnx.save(build(bad_key), os.path.join(HERE, "linreg_ti_bad_key.onnx"))
    bad_output = [("W", "W_missing")] + good[1:]
    onnx.save(build(bad_output), os.path.join(HERE, "linreg_ti_bad_output.onnx"))


if __name__ == "__main__":
    main()
