"""onnxcustom.training.ortgradient: OrtGradientForwardBackward and the base of the classes it
creates, on onnxgrad's C library (see :mod:`onnxgrad.gradient`)."""
from ..gradient import (OnnxGraph, OnnxgradInferenceSession, OrtGradientForwardBackward,
                        OrtGradientForwardBackwardFunction)

__all__ = ["OrtGradientForwardBackward", "OrtGradientForwardBackwardFunction", "OnnxGraph",
           "OnnxgradInferenceSession"]
