"""The small MLP (4-16-3, Gemm + Relu + Gemm, opset 15, fixed random weights) that the
scripts of tests/mpi train on several ranks."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def mlp():
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.normal(scale=0.5, size=s).astype(np.float32), n)
             for n, s in (("W1", (4, 16)), ("B1", (16,)), ("W2", (16, 3)), ("B2", (3,)))]
    nodes = [helper.make_node("Gemm", ["X", "W1", "B1"], ["H"]),
             helper.make_node("Relu", ["H"], ["R"]),
             helper.make_node("Gemm", ["R", "W2", "B2"], ["Y"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                       ["N", 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
