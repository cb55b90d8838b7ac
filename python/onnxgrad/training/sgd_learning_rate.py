"""Learning rates (onnxcustom.training.sgd_learning_rate): the schedule of the learning rate
along the epochs, and the weight update it drives.

The schedules are scikit-learn's SGDRegressor ones as onnxcustom computed them, value for
value (``loop()`` and the sequence a fit uses): 'constant' (eta0), 'invscaling'
(eta0 / (t + 1)^power_t) and 'optimal' (eta0 * t0 / (t0 + t), t0 from Bottou's heuristic
as scikit-learn takes it: the sequence starts at eta0).
"""
from typing import Any, Iterator, Optional

import numpy as np

from ..values import device_to_string, get_device
from ._base_onnx_function import BaseLearningOnnx, as_array, as_value

__all__ = ["BaseLearningRate", "LearningRateSGD", "LearningRateSGDNesterov",
           "LearningRateSGDRegressor"]


class BaseLearningRate(BaseLearningOnnx):
    """The learning rate along the iterations: ``init_learning_rate()`` starts a sequence,
    ``update_learning_rate(t)`` moves to the next value, ``value`` is the current one, and
    ``update_weights`` applies a gradient to a weight."""

    def __init__(self) -> None:
        BaseLearningOnnx.__init__(self)

    def init_learning_rate(self) -> "BaseLearningRate":
        """Start the sequence (at the beginning of a training). Returns self."""
        raise NotImplementedError("This method must be overwritten.")

    def update_learning_rate(self, t: int) -> "BaseLearningRate":
        """Move to the value of iteration t. Returns self."""
        raise NotImplementedError("This method must be overwritten.")

    @property
    def value(self) -> float:
        """The current learning rate."""
        raise NotImplementedError("This method must be overwritten.")

    def __repr_extended__(self) -> str:
        v = self.__dict__.get("value_")
        return ", value=%r" % v if v is not None else ""

    @property
    def needs_grad(self) -> bool:
        """True when the update keeps a state per weight (a velocity)."""
        raise NotImplementedError("This method must be overwritten.")

    def update_weights(self, n_bind: int, device: Any, statei: Any, gradienti: Any,
                       batch_size: int, velocity: Any = None) -> Any:
        """Update weight `statei` in place with gradient `gradienti` (summed over a batch of
        `batch_size` observations).  Returns the new weight (and velocity)."""
        raise NotImplementedError("This method must be overwritten.")

    def loop(self, n: int = 1000) -> Iterator[float]:
        """The first `n` values: ``init_learning_rate()``, then ``update_learning_rate(i)``
        for i = 1 .. n - 1."""
        self.init_learning_rate()
        for i in range(n):
            yield self.value
            self.update_learning_rate(i + 1)

    @staticmethod
    def select(class_name: Any, **kwargs: Any) -> "BaseLearningRate":
        """A learning rate from an instance (returned as is), a float (LearningRateSGD with
        that eta0), a name ('SGD' or 'LearningRateSGD': LearningRateSGD; 'SGDNesterov',
        'Nesterov' or 'LearningRateSGDNesterov': LearningRateSGDNesterov) built with kwargs,
        or a dict of constructor parameters (with an optional 'class_name' among those
        names; LearningRateSGD by default).  Anything else is a ValueError listing the names
        accepted."""
        if isinstance(class_name, BaseLearningRate):
            return class_name
        if isinstance(class_name, (float, np.floating)) or (
                isinstance(class_name, (int, np.integer)) and not isinstance(class_name, bool)):
            return LearningRateSGD(float(class_name), **kwargs)
        if isinstance(class_name, dict):
            params = dict(class_name)
            name = params.pop("class_name", "SGD")
            params.update(kwargs)
            return BaseLearningRate.select(name, **params)
        return _select(class_name, _RATES, "learning rate", kwargs)


def _select(name: Any, table: Any, what: str, kwargs: Any) -> Any:
    if isinstance(name, str) or name is None:
        for cls, aliases in table().items():
            if name == cls.__name__ or name in aliases:
                return cls(**kwargs)
    names = []
    for cls, aliases in table().items():
        names.extend([cls.__name__] + [a for a in aliases if a not in names])
    raise ValueError("Unexpected class name %r. It should be one of %r (the %s)." % (
        name, names, what))


class LearningRateSGD(BaseLearningRate):
    """The learning rate of scikit-learn's SGDRegressor, as onnxcustom implemented it.

    :param eta0: initial learning rate
    :param alpha: the regularization constant 'optimal' uses
    :param power_t: exponent of 'invscaling'
    :param learning_rate: 'constant' (eta0), 'invscaling' (eta0 / (t + 1)^power_t) or
        'optimal' (eta0 * t0 / (t0 + t), with t0 = 1 / (eta * alpha) and eta Bottou's
        typw / max(1, 2 (1 + typw)), typw = sqrt(1 / sqrt(alpha)))

    The weight update is ``w += -value / batch_size * g`` (the losses are sums over the
    batch).  Attributes set by ``init_learning_rate``: ``eta0_``, ``optimal_init_`` and
    ``optimal_fact_`` ('optimal'), ``value_``.
    """

    def __init__(self, eta0: float = 0.01, alpha: float = 0.0001, power_t: float = 0.25,
                 learning_rate: str = "invscaling") -> None:
        BaseLearningRate.__init__(self)
        if learning_rate not in ("invscaling", "optimal", "constant"):
            raise ValueError("Unxepected value for learning_rate=%r." % learning_rate)
        self.eta0 = eta0
        self.alpha = alpha
        self.power_t = power_t
        self.learning_rate = learning_rate.lower()
        self.value_: Optional[float] = None

    @property
    def value(self) -> float:
        v = self.__dict__.get("value_")
        if v is None:
            raise RuntimeError("Method init_learning_rate was never called.")
        return v

    @property
    def needs_grad(self) -> bool:
        return False

    def init_learning_rate(self) -> "LearningRateSGD":
        self.eta0_ = self.eta0
        if self.learning_rate == "optimal":
            # Bottou's heuristic for t0, then a factor making the first value eta0
            typw = float(np.sqrt(1.0 / np.sqrt(self.alpha)))
            eta0 = typw / max(1.0, (1 + typw) * 2)
            self.optimal_init_ = 1.0 / (eta0 * self.alpha)
            eta = 1.0 / (self.alpha * self.optimal_init_)
            self.optimal_fact_ = self.eta0 / eta
        self.value_ = self.eta0_
        return self

    def update_learning_rate(self, t: int) -> "LearningRateSGD":
        eta = self.value
        if self.learning_rate == "optimal":
            eta = self.optimal_fact_ / (self.alpha * (self.optimal_init_ + t))
        elif self.learning_rate == "invscaling":
            eta = self.eta0_ / float(np.power(t + 1, self.power_t))
        self.value_ = eta
        return self

    def build_onnx_function(self, opset: int, device: Any, n_tensors: int) -> None:
        self.build_args_ = (opset, device_to_string(device), n_tensors)
        self.device_ = get_device(device)

    _graph_names = {"axpy_onnx_": "axpy"}

    def update_weights(self, n_bind: int, device: Any, statei: Any, gradienti: Any,
                       batch_size: int, velocity: Any = None) -> Any:
        """``statei <- gradienti * (-value / batch_size) + statei`` in statei's dtype (the
        coefficient rounded to it first), in place.  Returns statei."""
        if velocity is not None:
            raise RuntimeError("Velocity must be None for this way of updating weights.")
        if "build_args_" not in self.__dict__:
            raise RuntimeError("Method 'build_onnx_function' has not been called.")
        w = as_array(statei)
        g = as_array(gradienti)
        alpha = np.array(-self.value / batch_size, dtype=w.dtype)
        np.add(g.reshape(w.shape) * alpha, w, out=w)
        return statei


class LearningRateSGDNesterov(LearningRateSGD):
    """LearningRateSGD with momentum, Nesterov's or not (onnxcustom's update):

    - velocity: ``v <- -value / batch_size * g + momentum * v``
    - Nesterov: ``w <- w + momentum * v + (-value / batch_size * g)`` (with the new v)
    - otherwise: ``w <- w + v``

    :param momentum: momentum (>= 0)
    :param nesterov: Nesterov's update or plain momentum
    """

    def __init__(self, eta0: float = 0.01, alpha: float = 0.0001, power_t: float = 0.25,
                 learning_rate: str = "invscaling", momentum: float = 0.9,
                 nesterov: bool = True) -> None:
        LearningRateSGD.__init__(self, eta0=eta0, alpha=alpha, power_t=power_t,
                                 learning_rate=learning_rate)
        self.momentum = momentum
        self.nesterov = nesterov

    @property
    def needs_grad(self) -> bool:
        return True

    def init_learning_rate(self) -> "LearningRateSGDNesterov":
        LearningRateSGD.init_learning_rate(self)
        return self

    def update_learning_rate(self, t: int) -> "LearningRateSGDNesterov":
        LearningRateSGD.update_learning_rate(self, t)
        return self

    @property
    def _graph_names(self) -> dict:  # type: ignore[override]
        return {"axpyw_onnx_": "axpyw2" if self.nesterov else "axpyw"}

    def update_weights(self, n_bind: int, device: Any, statei: Any, gradienti: Any,
                       batch_size: int, velocity: Any = None) -> Any:
        """Update weight `statei` and velocity `velocity` in place (see the class).
        Returns [statei, velocity]."""
        if "build_args_" not in self.__dict__:
            raise RuntimeError("Method 'build_onnx_function' has not been called.")
        if velocity is None:
            raise RuntimeError("Velocity must not be None for this way of updating weights.")
        w = as_array(statei)
        g = as_array(gradienti).reshape(w.shape)
        v = as_array(velocity)
        alpha = np.array(-self.value / batch_size, dtype=w.dtype)
        beta = np.array(self.momentum, dtype=w.dtype)
        s1 = g * alpha
        np.add(s1, v * beta, out=v)
        if self.nesterov:
            np.add(s1 + v * beta, w, out=w)
        else:
            np.add(v, w, out=w)
        return [statei, velocity]


#: the name onnxcustom's first versions gave LearningRateSGD
LearningRateSGDRegressor = LearningRateSGD


def _RATES() -> dict:
    return {LearningRateSGD: ["SGD"],
            LearningRateSGDNesterov: ["SGDNesterov", "Nesterov"]}
