"""Losses (onnxcustom.training.sgd_learning_loss): each gives the loss of a batch (a sum over
its observations) and its gradient against the model's output, which backward then takes
as the output's gradient; ``loss_scores`` gives the loss of every observation.

X1 below is the expected value, X2 the prediction, w the optional sample weights (one per
observation, applied as ``w.reshape(-1, 1)``); every value is computed in the prediction's
dtype, operation by operation as onnxcustom's ONNX graphs did.

One difference: onnxcustom's AbsoluteLearningLoss returned ``sign(X1 - X2)`` as the gradient,
and ElasticLearningLoss ``l1 * sign(X1 - X2)`` for its L1 part: the opposite of the gradient
against the prediction X2, so that training with them moved the weights up the L1 loss
(measured with onnxcustom 0.4.293: the validation loss of a linear regression grows from
2.18 to 2.29 in six epochs).  Here both give the gradient, ``sign(X2 - X1)`` (the square
parts and every loss value are unchanged).
"""
from typing import Any, Optional, Tuple

import numpy as np

from ..values import OrtValueArray, device_to_string, get_device
from ._base_onnx_function import BaseLearningOnnx, as_array, as_value

__all__ = ["BaseLearningLoss", "SquareLearningLoss", "AbsoluteLearningLoss",
           "ElasticLearningLoss", "NegLogLearningLoss"]


class BaseLearningLoss(BaseLearningOnnx):
    """Base of the losses: ``loss_gradient`` (the loss of a batch and its gradient against
    the prediction) and ``loss_scores`` (the loss of every observation)."""

    def __init__(self) -> None:
        BaseLearningOnnx.__init__(self)

    def build_onnx_function(self, opset: int, device: Any, weight_name: Optional[str]) -> None:
        """Prepare the loss for a model of `opset` on `device`; `weight_name` names the
        sample weights (None: none)."""
        self.build_args_ = (opset, device_to_string(device), weight_name)
        self.device_ = get_device(device)

    def build_onnx_score_function(self, opset: int, device: Any,
                                  weight_name: Optional[str]) -> None:
        """Kept for onnxcustom's API: loss_scores is ready once build_onnx_function ran."""
        if "build_args_" not in self.__dict__:
            raise RuntimeError("Missing attribute 'loss_grad_onnx_'. Method "
                               "'build_onnx_function' should be called first.")

    _graph_names = {"loss_grad_onnx_": "loss_grad", "loss_score_onnx_": "loss_score"}

    def _check(self) -> None:
        if "build_args_" not in self.__dict__:
            raise RuntimeError("Attributes 'loss_grad_sess_bind_' or 'loss_grad_sess_' is "
                               "missing. Method 'build_onnx_function' has not been called.")

    def _compute(self, expected: np.ndarray, predicted: np.ndarray,
                 weight: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(per-observation scores before the reduction, their multiplier in the loss,
        gradient) for the subclasses."""
        raise NotImplementedError("This method must be overwritten.")

    def loss_gradient(self, device: Any, expected: Any, predicted: Any,
                      weight: Any = None) -> Tuple[OrtValueArray, OrtValueArray]:
        """The loss of a batch (shape (1,)) and its gradient against `predicted` (shape of
        the broadcast of expected and predicted).

        :param device: the device (onnxgrad computes on the CPU)
        :param expected: expected values (labels for NegLogLearningLoss)
        :param predicted: the model's output
        :param weight: sample weights, one per observation, or None
        """
        self._check()
        e, p = as_array(expected), as_array(predicted)
        w = None if weight is None else as_array(weight)
        loss, grad = self._loss_grad(e, p, w)
        return as_value(loss), as_value(grad)

    def loss_scores(self, device: Any, expected: Any, predicted: Any,
                    weight: Any = None) -> OrtValueArray:
        """The loss of every observation (times its weight), before the reduction."""
        self._check()
        e, p = as_array(expected), as_array(predicted)
        w = None if weight is None else as_array(weight)
        return as_value(self._scores(e, p, w))

    @staticmethod
    def select(class_name: Any, **kwargs: Any) -> "BaseLearningLoss":
        """A loss from an instance (returned as is), a name ('square_error', 'square',
        'absolute_error', 'absolute', 'elastic_error', 'elastic', 'log', 'neglog',
        'logloss', or a class name) built with kwargs, or a dict of constructor parameters
        (with an optional 'class_name'; SquareLearningLoss by default).  Anything else is a
        ValueError listing the names accepted."""
        if isinstance(class_name, BaseLearningLoss):
            return class_name
        if isinstance(class_name, dict):
            params = dict(class_name)
            name = params.pop("class_name", "square_error")
            params.update(kwargs)
            return BaseLearningLoss.select(name, **params)
        from .sgd_learning_rate import _select

        return _select(class_name, _LOSSES, "loss", kwargs)

    # the subclasses implement these two
    def _loss_grad(self, e: np.ndarray, p: np.ndarray,
                   w: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _scores(self, e: np.ndarray, p: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
        raise NotImplementedError


def _col(w: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return w.astype(dtype, copy=False).reshape((-1, 1))


def _reduced(x: np.ndarray) -> np.ndarray:
    """ReduceSum over every axis, as a (1,) array of x's dtype (the graphs' Reshape [-1])."""
    return np.array([x.sum(dtype=x.dtype)], dtype=x.dtype)


class SquareLearningLoss(BaseLearningLoss):
    """Square loss: ``0.5 * sum((X1 - X2)^2 w)``, gradient ``-(X1 - X2) w`` (``X2 - X1``
    unweighted); scores ``(X1 - X2)^2 w``."""

    def __init__(self) -> None:
        BaseLearningLoss.__init__(self)

    def _loss_grad(self, e: np.ndarray, p: np.ndarray,
                   w: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        dt = p.dtype
        diff = (e - p).astype(dt, copy=False)
        half, minus = np.array([0.5], dt), np.array([-1], dt)
        if w is None:
            loss = _reduced(diff * diff) * half
            grad = diff * minus
        else:
            ww = _col(w, dt)
            loss = _reduced(diff * diff * ww) * half
            grad = diff * minus * ww
        return loss, grad

    def _scores(self, e: np.ndarray, p: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
        diff = (e - p).astype(p.dtype, copy=False)
        return diff * diff if w is None else diff * diff * _col(w, p.dtype)


class AbsoluteLearningLoss(BaseLearningLoss):
    """Absolute loss: ``sum(|X1 - X2| w)``, gradient ``sign(X2 - X1) w``; scores
    ``|X1 - X2| w``.  (onnxcustom returned the opposite sign: see the module's doc.)"""

    def __init__(self) -> None:
        BaseLearningLoss.__init__(self)

    def _loss_grad(self, e: np.ndarray, p: np.ndarray,
                   w: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        dt = p.dtype
        diff = (e - p).astype(dt, copy=False)
        if w is None:
            return _reduced(np.abs(diff)), np.sign(-diff)
        ww = _col(w, dt)
        return _reduced(np.abs(diff) * ww), np.sign(-diff) * ww

    def _scores(self, e: np.ndarray, p: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
        a = np.abs((e - p).astype(p.dtype, copy=False))
        return a if w is None else a * _col(w, p.dtype)


class ElasticLearningLoss(BaseLearningLoss):
    """Elastic loss: ``sum((|X1 - X2| l1_weight + (X1 - X2)^2 l2_weight) w)``, gradient
    ``(sign(X2 - X1) l1_weight + (X1 - X2) (-2 l2_weight)) w``; scores the sum's terms.
    (onnxcustom's L1 part of the gradient had the opposite sign: see the module's doc.)

    :param l1_weight: weight of the absolute part
    :param l2_weight: weight of the square part
    """

    def __init__(self, l1_weight: float = 0.5, l2_weight: float = 0.5) -> None:
        BaseLearningLoss.__init__(self)
        self.l1_weight = l1_weight
        self.l2_weight = l2_weight

    def _terms(self, e: np.ndarray, p: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        dt = p.dtype
        diff = (e - p).astype(dt, copy=False)
        l1, l2 = np.array([self.l1_weight], dt), np.array([self.l2_weight], dt)
        score = np.abs(diff) * l1 + diff * diff * l2
        grad = np.sign(-diff) * l1 + diff * np.array([self.l2_weight * -2], dt)
        return score, grad

    def _loss_grad(self, e: np.ndarray, p: np.ndarray,
                   w: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        score, grad = self._terms(e, p)
        if w is None:
            return _reduced(score), grad
        ww = _col(w, p.dtype)
        return _reduced(score * ww), grad * ww

    def _scores(self, e: np.ndarray, p: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
        score, _ = self._terms(e, p)
        return score if w is None else score * _col(w, p.dtype)


class NegLogLearningLoss(BaseLearningLoss):
    """Negative log-likelihood of a binary classifier given its raw score X2 (N, 1) and the
    labels X1 in {0, 1}: ``p = clip(sigmoid(X2), eps, 1 - eps)``, loss
    ``-sum(((1 - X1) log(1 - p) + X1 log(p)) w)``, gradient against the score ``(p - X1) w``.

    :param eps: probabilities are clipped to [eps, 1 - eps] (no log(0))
    :param probability_function: 'sigmoid' (the only one onnxcustom had)
    """

    def __init__(self, eps: float = 1e-5, probability_function: str = "sigmoid") -> None:
        BaseLearningLoss.__init__(self)
        self.eps = eps
        self.probability_function = probability_function

    def build_onnx_function(self, opset: int, device: Any, weight_name: Optional[str]) -> None:
        if self.probability_function != "sigmoid":
            raise ValueError("Unable to find function 'grad_%s_neg_log_loss_error': "
                             "probability_function must be 'sigmoid', not %r."
                             % (self.probability_function, self.probability_function))
        BaseLearningLoss.build_onnx_function(self, opset, device, weight_name)

    def _terms(self, e: np.ndarray, p: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        dt = p.dtype if p.dtype.kind == "f" else np.dtype(np.float32)
        one = np.array([1], dt)
        s = p.astype(dt, copy=False)
        p1 = np.clip(one / (one + np.exp(-s)), np.array([self.eps], dt),
                     np.array([1 - self.eps], dt))
        p0 = one - p1
        y1 = e.astype(dt)
        y0 = one - y1
        with np.errstate(divide="ignore"):
            obs = y0 * np.log(p0) + y1 * np.log(p1)
        return -obs, p1 - y1, dt

    def _loss_grad(self, e: np.ndarray, p: np.ndarray,
                   w: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        neg, grad, dt = self._terms(e, p)
        if w is None:
            return _reduced(neg), grad
        ww = _col(w, dt)
        return _reduced(neg * ww), grad * ww

    def _scores(self, e: np.ndarray, p: np.ndarray, w: Optional[np.ndarray]) -> np.ndarray:
        neg, _, dt = self._terms(e, p)
        return neg if w is None else neg * _col(w, dt)


def _LOSSES() -> dict:
    return {SquareLearningLoss: ["square_error", "square"],
            AbsoluteLearningLoss: ["absolute_error", "absolute"],
            ElasticLearningLoss: ["elastic_error", "elastic"],
            NegLogLearningLoss: ["log", "neglog", "logloss"]}
