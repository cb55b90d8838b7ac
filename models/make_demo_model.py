#!/usr/bin/env python3
"""Write models/mlp.onnx (a small 2-layer MLP classifier, a few KB) and models/mlp_x.npy
(a batch of 4 inputs) for `make demo`.  Deterministic: fixed seed."""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
W1 = (rng.standard_normal((8, 16)) * 0.5).astype(np.float32)
b1 = (rng.standard_normal(16) * 0.1).astype(np.float32)
W2 = (rng.standard_normal((16, 3)) * 0.5).astype(np.float32)
b2 = (rng.standard_normal(3) * 0.1).astype(np.float32)

nodes = [
    helper.make_node("MatMul", ["x", "W1"], ["h0"], name="fc1"),
    helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
    helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
    helper.make_node("Gemm", ["h2", "W2", "b2"], ["logits"], name="fc2"),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
]
graph = helper.make_graph(
    nodes, "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])],
    [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(b1, "b1"),
     numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(b2, "b2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="onnxgrad-demo")
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(here, "mlp.onnx"))
x = rng.standard_normal((4, 8)).astype(np.float32)
np.save(os.path.join(here, "mlp_x.npy"), x)
print("wrote models/mlp.onnx and models/mlp_x.npy")
