"""Shared helpers for the gradient-check case files (tests/grad/cases_*.py)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def rand(*shape, low=-1.0, high=1.0):
    """float32 values in [low, high), away from 0 when low > 0"""
    return RNG.uniform(low, high, shape).astype(np.float32)


def model(nodes, inputs, outputs, weights=None, opset=17, consts=None):
    """inputs: {name: array} (graph inputs); weights: {name: array} float initializers
    (trained); consts: {name: array} other initializers (e.g. int64 axes)."""
    weights = weights or {}
    consts = consts or {}
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in {**weights, **consts}.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    # graph outputs need a type for the checker: take the inferred one
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    for o in m.graph.output:
        if not o.type.tensor_type.elem_type and o.name in vi:
            o.CopyFrom(vi[o.name])
    return m


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)
