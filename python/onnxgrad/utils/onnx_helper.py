"""ONNX model helpers (onnxcustom.utils.onnx_helper): renaming the weights, reading opsets,
replacing initializers by trained values.  They need the onnx package."""
from typing import Any, Dict

import numpy as np

__all__ = ["onnx_rename_weights", "get_onnx_opset", "proto_type_to_dtype", "dtype_to_var_type",
           "add_initializer", "replace_initializers_into_onnx", "load_model"]


def load_model(model: Any) -> Any:
    """An onnx.ModelProto from a ModelProto (returned as is), bytes or a path."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        return onnx.load_from_string(bytes(model))
    return onnx.load(model)


def onnx_rename_weights(onx: Any) -> Any:
    """Rename the initializers I0_<name>, I1_<name>, ... (zero-padded to the digits of their
    count: I00_ ... I09_ for ten) so
    that their names sort in the graph's order, which onnxruntime-training required of the
    weights to train (onnxgrad does not).  The model is changed in place and returned."""
    inits = [i.name for i in onx.graph.initializer]
    width = len(str(len(inits)))  # the digits of the count, as onnxcustom chose them
    new = {n: "I%0*d_%s" % (width, k, n) for k, n in enumerate(inits)}

    def rename(graph: Any) -> None:
        for i in graph.initializer:
            if i.name in new:
                i.name = new[i.name]
        for node in graph.node:
            for k, n in enumerate(node.input):
                if n in new:
                    node.input[k] = new[n]
        for v in list(graph.input) + list(graph.output) + list(graph.value_info):
            if v.name in new:
                v.name = new[v.name]

    rename(onx.graph)
    return onx


def get_onnx_opset(onx: Any, domain: str = "") -> int:
    """The version of opset `domain` the model imports ('' and 'ai.onnx' are the same)."""
    for op in onx.opset_import:
        if op.domain == domain or (domain in ("", "ai.onnx") and op.domain in ("", "ai.onnx")):
            return op.version
    raise ValueError("Unable to find opset for domain=%r." % domain)


def proto_type_to_dtype(proto_type: Any) -> Any:
    """numpy type of an ONNX element type (an int, or 'tensor(float)')."""
    table = {1: np.float32, 11: np.float64, 10: np.float16, 7: np.int64, 6: np.int32,
             "tensor(float)": np.float32, "tensor(double)": np.float64,
             "tensor(float16)": np.float16, "tensor(int64)": np.int64,
             "tensor(int32)": np.int32}
    if proto_type in table:
        return table[proto_type]
    raise ValueError("Unexpected value proto_type=%r (type=%r)." % (proto_type,
                                                                      type(proto_type)))


def dtype_to_var_type(dtype: Any) -> Any:
    """skl2onnx's tensor type of a numpy dtype (needs skl2onnx)."""
    from skl2onnx.common.data_types import (DoubleTensorType, FloatTensorType,
                                            Int32TensorType, Int64TensorType)
    table = {np.float32: FloatTensorType, np.float64: DoubleTensorType,
             np.int64: Int64TensorType, np.int32: Int32TensorType}
    for k, v in table.items():
        if dtype == k:
            return v
    raise ValueError("Unexpected value dtype=%r." % dtype)


def add_initializer(model: Any, name: str, value: np.ndarray) -> Any:
    """A copy of `model` with a new initializer `name` (an error if the name is taken)."""
    import onnx
    from onnx import numpy_helper

    if any(i.name == name for i in model.graph.initializer):
        raise ValueError("Name %r is already taken among %r." % (
            name, [i.name for i in model.graph.initializer]))
    new = onnx.ModelProto()
    new.CopyFrom(model)
    new.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return new


def replace_initializers_into_onnx(model: Any, results: Dict[str, Any]) -> Any:
    """A copy of `model` (a ModelProto, bytes or a path) whose initializers named in
    `results` hold those values (numpy arrays, OrtValueArray, OrtValues, torch tensors), in
    the initializer's own shape when theirs differs only by axes of size 1.  A name with no
    initializer is a RuntimeError listing them."""
    import onnx
    from onnx import numpy_helper

    from ..values import to_numpy

    model = load_model(model)
    new = onnx.ModelProto()
    new.CopyFrom(model)
    inits = {init.name: i for i, init in enumerate(new.graph.initializer)}
    for k, v in results.items():
        if k not in inits:
            raise RuntimeError("Unable to find initializer %r in %r." % (k, list(inits)))
        old = new.graph.initializer[inits[k]]
        a = np.asarray(to_numpy(v))
        shape = tuple(old.dims)
        if a.shape != shape and a.size == int(np.prod(shape, dtype=np.int64)):
            a = a.reshape(shape)
        t = numpy_helper.from_array(np.ascontiguousarray(a), k)
        old.CopyFrom(t)
    return new
