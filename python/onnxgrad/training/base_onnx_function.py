"""onnxcustom.training.base_onnx_function (the name of _base_onnx_function in onnxcustom 0.3
and 0.4.274)."""
from ._base_onnx_function import BaseLearningOnnx

__all__ = ["BaseLearningOnnx"]
