"""onnxgrad: gradients and training of ONNX models, from the C library of the same name.

onnxcustom's training API, from onnxgrad (replace ``onnxcustom`` by ``onnxgrad`` in the
imports; the modules keep their names under ``onnxgrad.training`` and ``onnxgrad.utils``):
``OrtGradientForwardBackward`` (forward and backward of an ONNX model),
``OrtGradientForwardBackwardOptimizer`` (SGD step by step as onnxcustom trained),
``OrtGradientOptimizer`` (SGD of a model with a loss output), the learning rates, losses and
penalties, ``onnx_derivative``.  ``Trainer`` trains with onnxgrad's C trainer (Adam, AdamW,
Adagrad, every loss of the C library).  Errors from the library are raised as ``ValueError``
(bad arguments, shapes, types) or ``RuntimeError`` (anything else), both subclasses of
:class:`OnnxgradError` carrying the C status.
"""
from ._lib import OnnxgradError, OnnxgradRuntimeError, OnnxgradValueError, has_trainer
from .values import Device, OrtValueArray
from .gradient import OnnxGraph, OrtGradientForwardBackward, OrtGradientForwardBackwardFunction
from .training.excs import (ConvergenceError, ConvergenceWarning, EvaluationError,
                            ProviderError)
from .training.sgd_learning_rate import (BaseLearningRate, LearningRateSGD,
                                         LearningRateSGDNesterov)
from .training.sgd_learning_loss import (AbsoluteLearningLoss, BaseLearningLoss,
                                         ElasticLearningLoss, NegLogLearningLoss,
                                         SquareLearningLoss)
from .training.sgd_learning_penalty import (BaseLearningPenalty, ElasticLearningPenalty,
                                            NoLearningPenalty)
from .training._base_estimator import BaseEstimator
from .training.data_loader import OrtDataLoader
from .training.optimizers_partial import OrtGradientForwardBackwardOptimizer
from .training.optimizers import OrtGradientOptimizer
from .training.grad_helper import DerivativeOptions, onnx_derivative
from .estimator import Trainer

__version__ = "0.1.0"

__all__ = ["OrtGradientForwardBackward", "OrtGradientForwardBackwardFunction", "OnnxGraph",
           "OrtGradientForwardBackwardOptimizer", "OrtGradientOptimizer", "BaseEstimator",
           "BaseLearningRate", "LearningRateSGD", "LearningRateSGDNesterov",
           "BaseLearningLoss", "SquareLearningLoss", "AbsoluteLearningLoss",
           "ElasticLearningLoss", "NegLogLearningLoss", "BaseLearningPenalty",
           "NoLearningPenalty", "ElasticLearningPenalty", "OrtDataLoader",
           "ConvergenceError", "ConvergenceWarning", "EvaluationError", "ProviderError",
           "DerivativeOptions", "onnx_derivative", "Trainer", "OrtValueArray", "Device",
           "OnnxgradError", "OnnxgradValueError", "OnnxgradRuntimeError", "has_trainer",
           "library_path", "__version__"]


def library_path() -> str:
    """Path of the libonnxgrad shared library this package uses."""
    from . import _lib

    return _lib.lib._name
