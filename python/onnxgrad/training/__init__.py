"""onnxcustom.training on onnxgrad: the same modules, classes and names, so that code written
for onnxcustom runs once ``onnxcustom`` is replaced by ``onnxgrad`` in its imports.

Modules: ortgradient (OrtGradientForwardBackward), optimizers_partial
(OrtGradientForwardBackwardOptimizer), optimizers (OrtGradientOptimizer), sgd_learning_rate,
sgd_learning_loss, sgd_learning_penalty, data_loader (OrtDataLoader), grad_helper
(onnx_derivative, DerivativeOptions), excs, _base, _base_estimator / base_estimator,
_base_onnx_function / base_onnx_function, orttraining (add_loss_output).
"""
from .excs import ConvergenceError, ConvergenceWarning, EvaluationError, ProviderError

__all__ = ["ConvergenceError", "ConvergenceWarning", "EvaluationError", "ProviderError"]
