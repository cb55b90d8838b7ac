"""onnxcustom.training.base_estimator (the name of _base_estimator in onnxcustom 0.3 and
0.4.274)."""
from ._base_estimator import BaseEstimator

__all__ = ["BaseEstimator"]
