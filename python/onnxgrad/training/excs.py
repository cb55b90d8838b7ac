"""The exceptions of onnxcustom.training.excs, under the same names."""

__all__ = ["ConvergenceError", "ConvergenceWarning", "EvaluationError", "ProviderError"]


class ConvergenceError(RuntimeError):
    """A training failed to converge: its loss (or a gradient) became NaN or infinite.  The
    estimator's ``train_losses_`` keeps the losses of the epochs finished before."""


class ConvergenceWarning(UserWarning):
    """A training failed to converge and the estimator was asked not to raise (``exc=False``)."""


class EvaluationError(RuntimeError):
    """An evaluation failed (a NaN or infinite loss on the validation data)."""


class ProviderError(RuntimeError):
    """An input is not on the expected device (onnxgrad computes on the CPU)."""
