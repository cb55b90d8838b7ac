"""The ONNX graphs of the learning classes' computations (what onnxcustom ran in onnxruntime
and kept as ``*_onnx_`` attributes), built with onnx for ``save_onnx_graph`` and inspection.
Each computes what the class computes with numpy (test_compat_learning.py runs them in
onnxruntime).  Importing this module needs the onnx package."""
from typing import Any, List, Optional

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


class _G:
    """A small graph builder: constants as initializers, nodes with fresh names."""

    def __init__(self) -> None:
        self.nodes: List[Any] = []
        self.inits: List[Any] = []
        self.n = 0

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        name = "c%d" % len(self.inits)
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, out: Optional[str] = None, **attrs: Any) -> str:
        self.n += 1
        name = out or "r%d" % self.n
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], **attrs))
        return name

    def model(self, inputs: List[Any], outputs: List[Any], opset: int) -> Any:
        graph = helper.make_graph(self.nodes, "onnxgrad_function", inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def _opset(opset: int) -> int:
    return min(max(int(opset or 0), 13), onnx.defs.onnx_opset_version(), 21)


def _weighted(g: _G, x: str, weight_name: Optional[str]) -> str:
    if weight_name is None:
        return x
    col = g.op("Reshape", weight_name, g.const([-1, 1], np.int64))
    return g.op("Mul", x, col)


def _loss(obj: Any, opset: int, weight_name: Optional[str], score: bool) -> Any:
    g = _G()
    name = type(obj).__name__
    x1_type = TensorProto.INT64 if name == "NegLogLearningLoss" else F
    if name == "NegLogLearningLoss":
        one = g.const([1])
        p1 = g.op("Clip", g.op("Sigmoid", "X2"), g.const(obj.eps), g.const(1 - obj.eps))
        y1 = g.op("Cast", "X1", to=F)
        obs = g.op("Add", g.op("Mul", g.op("Sub", one, y1), g.op("Log", g.op("Sub", one, p1))),
                   g.op("Mul", y1, g.op("Log", p1)))
        per = g.op("Neg", obs)
        grad = g.op("Sub", p1, y1)
    else:
        diff = g.op("Sub", "X1", "X2")
        sign = g.op("Sign", g.op("Sub", "X2", "X1"))
        sq = g.op("Mul", diff, diff)
        if name == "SquareLearningLoss":
            per, grad = sq, g.op("Mul", diff, g.const([-1]))
        elif name == "AbsoluteLearningLoss":
            per, grad = g.op("Abs", diff), sign
        else:
            per = g.op("Add", g.op("Mul", g.op("Abs", diff), g.const([obj.l1_weight])),
                       g.op("Mul", sq, g.const([obj.l2_weight])))
            grad = g.op("Add", g.op("Mul", sign, g.const([obj.l1_weight])),
                        g.op("Mul", diff, g.const([obj.l2_weight * -2])))
    per = _weighted(g, per, weight_name)
    grad = _weighted(g, grad, weight_name)
    inputs = [helper.make_tensor_value_info("X1", x1_type, [None, None]),
              helper.make_tensor_value_info("X2", F, [None, None])]
    if weight_name is not None:
        inputs.append(helper.make_tensor_value_info(weight_name, F, [None]))
        g.inits.append(numpy_helper.from_array(np.array([1], np.float32), weight_name))
    if score:
        g.op("Identity", per, out="Y")
        return g.model(inputs, [helper.make_tensor_value_info("Y", F, [None, None])],
                       _opset(opset))
    total = g.op("ReduceSum", per)
    if name == "SquareLearningLoss":
        total = g.op("Mul", total, g.const([0.5]))
    g.op("Reshape", total, g.const([-1], np.int64), out="Y")
    g.op("Identity", grad, out="Z")
    return g.model(inputs, [helper.make_tensor_value_info("Y", F, [None]),
                            helper.make_tensor_value_info("Z", F, [None, None])], _opset(opset))


def loss_grad(obj: Any, opset: int, device: str, weight_name: Optional[str]) -> Any:
    """Y = the loss (shape [1]), Z = its gradient against X2."""
    return _loss(obj, opset, weight_name, False)


def loss_score(obj: Any, opset: int, device: str, weight_name: Optional[str]) -> Any:
    """Y = the loss of every observation."""
    return _loss(obj, opset, weight_name, True)


def _axpy(obj: Any, opset: int, velocity: bool, nesterov: bool) -> Any:
    g = _G()
    s1 = g.op("Mul", "X1", "alpha")
    inputs = [helper.make_tensor_value_info(n, F, None) for n in ("X1", "X2")]
    if not velocity:
        g.op("Add", s1, "X2", out="Y")
        inputs.append(helper.make_tensor_value_info("alpha", F, [1]))
        return g.model(inputs, [helper.make_tensor_value_info("Y", F, None)], _opset(opset))
    z = g.op("Add", s1, g.op("Mul", "G", "beta"), out="Z")
    if nesterov:
        g.op("Add", g.op("Add", s1, g.op("Mul", z, "beta")), "X2", out="Y")
    else:
        g.op("Add", z, "X2", out="Y")
    inputs += [helper.make_tensor_value_info("G", F, None),
               helper.make_tensor_value_info("alpha", F, [1]),
               helper.make_tensor_value_info("beta", F, [1])]
    return g.model(inputs, [helper.make_tensor_value_info("Y", F, None),
                            helper.make_tensor_value_info("Z", F, None)], _opset(opset))


def axpy(obj: Any, opset: int, *args: Any) -> Any:
    """Y = alpha X1 + X2 (X1 the gradient, X2 the weight, alpha = -value / batch_size)."""
    return _axpy(obj, opset, False, False)


def axpyw(obj: Any, opset: int, *args: Any) -> Any:
    """Z = alpha X1 + beta G (the velocity), Y = Z + X2."""
    return _axpy(obj, opset, True, False)


def axpyw2(obj: Any, opset: int, *args: Any) -> Any:
    """Z = alpha X1 + beta G, Y = alpha X1 + beta Z + X2 (Nesterov)."""
    return _axpy(obj, opset, True, True)


def penalty(obj: Any, opset: int, device: str, n_tensors: int) -> Any:
    """Y = loss + sum_i (l1 sum|W_i| + l2 sum W_i^2), shape [1]."""
    g = _G()
    terms = []
    for i in range(n_tensors):
        w = "W%d" % i
        terms.append(g.op("Add", g.op("Mul", g.op("ReduceSum", g.op("Abs", w)), g.const([obj.l1])),
                          g.op("Mul", g.op("ReduceSumSquare", w), g.const([obj.l2]))))
    total = terms[0]
    for t in terms[1:]:
        total = g.op("Add", total, t)
    g.op("Reshape", g.op("Add", "loss", total), g.const([-1], np.int64), out="Y")
    inputs = [helper.make_tensor_value_info("loss", F, None)] + [
        helper.make_tensor_value_info("W%d" % i, F, None) for i in range(n_tensors)]
    return g.model(inputs, [helper.make_tensor_value_info("Y", F, [None])], _opset(opset))


def penalty_grad(obj: Any, opset: int, *args: Any) -> Any:
    """Y = X (1 - 2 l2) - sign(X) l1."""
    g = _G()
    g.op("Sub", g.op("Mul", "X", g.const([1 - 2 * obj.l2])),
         g.op("Mul", g.op("Sign", "X"), g.const([obj.l1])), out="Y")
    return g.model([helper.make_tensor_value_info("X", F, None)],
                   [helper.make_tensor_value_info("Y", F, None)], _opset(opset))


def zero(opset: int) -> Any:
    """Y = X * 0 (the estimator's zero_onnx_: velocities start at zero)."""
    g = _G()
    g.op("Mul", "X", g.const([0]), out="Y")
    return g.model([helper.make_tensor_value_info("X", F, None)],
                   [helper.make_tensor_value_info("Y", F, None)], _opset(opset))
