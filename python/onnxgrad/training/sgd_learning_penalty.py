"""Penalties (onnxcustom.training.sgd_learning_penalty) on the trained weights: added to the
loss a training reports (``penalty_loss``), and applied to every weight after each batch,
before the learning rate's update (``update_weights``), as onnxcustom did.
"""
from typing import Any, List

import numpy as np

from ..values import device_to_string, get_device
from ._base_onnx_function import BaseLearningOnnx, as_array, as_value

__all__ = ["BaseLearningPenalty", "NoLearningPenalty", "ElasticLearningPenalty"]


class BaseLearningPenalty(BaseLearningOnnx):
    """Base of the penalties: ``penalty_loss(device, loss, *weights)`` and
    ``update_weights(n_bind, device, weight)``."""

    def __init__(self) -> None:
        BaseLearningOnnx.__init__(self)

    @staticmethod
    def select(class_name: Any, **kwargs: Any) -> "BaseLearningPenalty":
        """A penalty from an instance (returned as is), a name (None or '':
        NoLearningPenalty; 'elastic' or 'l1l2': ElasticLearningPenalty; or a class name)
        built with kwargs, or a dict of constructor parameters ({'l1': ..., 'l2': ...},
        with an optional 'class_name'; ElasticLearningPenalty by default).  Anything else is
        a ValueError listing the names accepted."""
        if isinstance(class_name, BaseLearningPenalty):
            return class_name
        if isinstance(class_name, dict):
            params = dict(class_name)
            name = params.pop("class_name", "elastic")
            params.update(kwargs)
            return BaseLearningPenalty.select(name, **params)
        from .sgd_learning_rate import _select

        return _select(class_name, _PENALTIES, "penalty", kwargs)

    def build_onnx_function(self, opset: int, device: Any, n_tensors: int) -> None:
        self.build_args_ = (opset, device_to_string(device), n_tensors)
        self.device_ = get_device(device)

    def penalty_loss(self, device: Any, loss: Any, *weights: Any) -> Any:
        """The loss plus the penalty of the weights (written into `loss` too)."""
        raise NotImplementedError("penalty_loss must be overwritten.")

    def update_weights(self, n_bind: int, device: Any, statei: Any) -> Any:
        """Apply the penalty to weight `statei`, in place; returns it."""
        raise NotImplementedError("update_weights must be overwritten.")


class NoLearningPenalty(BaseLearningPenalty):
    """No penalty."""

    def __init__(self) -> None:
        BaseLearningPenalty.__init__(self)

    def penalty_loss(self, device: Any, loss: Any, *weights: Any) -> Any:
        return loss

    def update_weights(self, n_bind: int, device: Any, statei: Any) -> Any:
        return statei


class ElasticLearningPenalty(BaseLearningPenalty):
    """L1 and L2 penalties, as onnxcustom applied them:

    - the loss reported: ``loss + sum over weights of (l1 sum|W| + l2 sum W^2)``
    - each weight after each batch: ``W <- W (1 - 2 l2) - l1 sign(W)`` (not scaled by the
      learning rate)

    :param l1: weight of the L1 penalty
    :param l2: weight of the L2 penalty
    """

    def __init__(self, l1: float = 0.5, l2: float = 0.5) -> None:
        BaseLearningPenalty.__init__(self)
        self.l1 = l1
        self.l2 = l2

    _graph_names = {"penalty_onnx_": "penalty", "penalty_grad_onnx_": "penalty_grad"}

    def _check(self) -> None:
        if "build_args_" not in self.__dict__:
            raise RuntimeError("Attributes 'penalty_sess_bind_' or 'penalty_onnx_' is "
                               "missing. Method 'build_onnx_function' has not been called.")

    def penalty_loss(self, device: Any, *inputs: Any) -> Any:
        """``loss + sum_i (l1 sum|W_i| + l2 sum W_i^2)`` as a (1,) array, written into the
        loss array when it is a writable (1,) array of that dtype (onnxcustom wrote it
        there), and returned."""
        self._check()
        n = self.build_args_[2]
        if len(inputs) != n + 1:
            raise RuntimeError("Mismatched number of inputs: %d != %d." % (n + 1, len(inputs)))
        loss = as_array(inputs[0])
        dt = loss.dtype
        l1, l2 = np.array([self.l1], dt), np.array([self.l2], dt)
        terms: List[np.ndarray] = []
        for w in inputs[1:]:
            a = as_array(w).astype(dt, copy=False)
            terms.append(np.array([np.abs(a).sum(dtype=dt)], dt) * l1 +
                         np.array([(a * a).sum(dtype=dt)], dt) * l2)
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        res = (loss + total).reshape(-1)
        if loss.shape == res.shape and loss.flags.writeable:
            loss[...] = res
            return inputs[0]
        return as_value(res)

    def update_weights(self, n_bind: int, device: Any, statei: Any) -> Any:
        """``W <- W (1 - 2 l2) - sign(W) l1`` in place; returns statei."""
        self._check()
        w = as_array(statei)
        dt = w.dtype
        np.subtract(w * np.array([1 - 2 * self.l2], dt), np.sign(w) * np.array([self.l1], dt),
                    out=w)
        return statei


def _PENALTIES() -> dict:
    return {NoLearningPenalty: [None, ""], ElasticLearningPenalty: ["elastic", "l1l2"]}
