"""onnxgrad: gradients and training of ONNX models, from the C library of the same name.

``OrtGradientForwardBackward`` offers the API of onnxcustom's class of that name (which
needed onnxruntime-training) on top of onnxgrad; ``OrtGradientForwardBackwardOptimizer``
trains a model scikit-learn style with onnxgrad's C trainer.  Errors from the library are
raised as ``ValueError`` (bad arguments, shapes, types) or ``RuntimeError`` (anything else),
both subclasses of :class:`OnnxgradError` carrying the C status.
"""
from ._lib import OnnxgradError, OnnxgradRuntimeError, OnnxgradValueError, has_trainer
from .gradient import OnnxGraph, OrtGradientForwardBackward, OrtGradientForwardBackwardFunction
from .estimator import (ConvergenceError, ElasticLearningPenalty, LearningRateSGD,
                        LearningRateSGDNesterov, OrtGradientForwardBackwardOptimizer)

__version__ = "0.1.0"

__all__ = ["OrtGradientForwardBackward", "OrtGradientForwardBackwardFunction", "OnnxGraph",
           "OrtGradientForwardBackwardOptimizer", "LearningRateSGD", "LearningRateSGDNesterov",
           "ElasticLearningPenalty", "ConvergenceError",
           "OnnxgradError", "OnnxgradValueError", "OnnxgradRuntimeError", "has_trainer",
           "library_path", "__version__"]


def library_path() -> str:
    """Path of the libonnxgrad shared library this package uses."""
    from . import _lib

    return _lib.lib._name
