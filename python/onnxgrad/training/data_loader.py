"""OrtDataLoader (onnxcustom.training.data_loader): batches of consecutive observations.

A batch is ``batch_size`` consecutive rows starting at a row drawn with
``numpy.random.randint(0, len - batch_size)`` (or in order with ``random_iter=False``), as
many batches as cover the dataset once: the same draws as onnxcustom's, so that a training
seeded with ``numpy.random.seed`` sees the same batches.  Batches are views of the data
(no copy): numpy arrays (``iter_numpy``) or OrtValueArray (``iter_ortvalue``).
"""
from typing import Any, Iterator, List, Tuple

import numpy as np

from ..values import OrtValueArray, device_to_string, get_device, to_numpy

__all__ = ["OrtDataLoader"]


class OrtDataLoader:
    """Draws batches of consecutive observations.

    :param X: features [N, ...]
    :param y: targets [N] or [N, k] (a 1-D array becomes [N, 1])
    :param sample_weight: weights [N] or None
    :param batch_size: observations per batch
    :param device: ``'cpu'`` (a :class:`~onnxgrad.values.Device` or its name)
    :param random_iter: random starts (True) or consecutive batches from the first row
    """

    def __init__(self, X: Any, y: Any, sample_weight: Any = None, batch_size: int = 20,
                 device: Any = "cpu", random_iter: bool = True) -> None:
        X = to_numpy(X)
        y = to_numpy(y)
        if len(X.shape) == 0 or len(y.shape) == 0:
            raise ValueError("X and y must have a first dimension (observations), got "
                             "X.shape=%r, y.shape=%r." % (X.shape, y.shape))
        if len(y.shape) == 1:
            y = y.reshape((-1, 1))
        if X.shape[0] != y.shape[0]:
            raise ValueError("Shape mismatch X.shape=%r, y.shape=%r." % (X.shape, y.shape))
        self.batch_size = batch_size
        self.device = get_device(device)
        self.random_iter = random_iter
        self.X_np = np.ascontiguousarray(X)
        self.y_np = np.ascontiguousarray(y).reshape((y.shape[0], -1))
        self.desc: List[Tuple[Any, Any]] = [(self.X_np.shape, self.X_np.dtype),
                                             (self.y_np.shape, self.y_np.dtype)]
        if sample_weight is None:
            self.w_np = None
        else:
            sample_weight = to_numpy(sample_weight)
            if len(sample_weight.shape) == 0 or X.shape[0] != sample_weight.shape[0]:
                raise ValueError("Shape mismatch X.shape=%r, sample_weight.shape=%r."
                                 % (X.shape, sample_weight.shape))
            self.w_np = np.ascontiguousarray(sample_weight).reshape((-1,))
            self.desc.append((self.w_np.shape, self.w_np.dtype))

    # OrtValue-like views of the whole data (onnxcustom kept OrtValues)
    @property
    def X_ort(self) -> OrtValueArray:
        return self.X_np.view(OrtValueArray)

    @property
    def y_ort(self) -> OrtValueArray:
        return self.y_np.view(OrtValueArray)

    @property
    def w_ort(self) -> Any:
        return None if self.w_np is None else self.w_np.view(OrtValueArray)

    def __getstate__(self) -> dict:
        state = {att: getattr(self, att) for att in
                 ("X_np", "y_np", "w_np", "desc", "batch_size", "random_iter")}
        state["device"] = device_to_string(self.device)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.device = get_device(self.device)

    def __repr__(self) -> str:
        return "%s(..., ..., batch_size=%r, device=%r)" % (
            self.__class__.__name__, self.batch_size, device_to_string(self.device))

    def __len__(self) -> int:
        """The number of observations."""
        return self.desc[0][0][0]

    def _next_iter(self, previous: int) -> int:
        if self.random_iter:
            b = len(self) - self.batch_size
            return np.random.randint(0, b)
        if previous == -1:
            return 0
        i = previous + self.batch_size
        if i + self.batch_size > len(self):
            i = len(self) - self.batch_size
        return i

    def _starts(self) -> Iterator[Any]:
        """None for one batch of everything, else the first row of every batch."""
        if len(self) - self.batch_size <= 0 or self.batch_size <= 0:
            yield None
            return
        n = 0
        i = -1
        while n < len(self):
            i = self._next_iter(i)
            n += self.batch_size
            yield i

    def _batches(self, cls: Any) -> Iterator[Tuple[Any, ...]]:
        data = [a for a in (self.X_np, self.y_np, self.w_np) if a is not None]
        for i in self._starts():
            if i is None:
                yield tuple(a.view(cls) for a in data)
            else:
                yield tuple(a[i:i + self.batch_size].view(cls) for a in data)

    def iter_numpy(self) -> Iterator[Tuple[np.ndarray, ...]]:
        """Batches as numpy arrays (views): (X, y) or (X, y, weight)."""
        if self.device.device_type() != self.device.cpu():
            raise RuntimeError("Only CPU device is allowed if numpy arrays are requested "
                               "not %r." % device_to_string(self.device))
        return self._batches(np.ndarray)

    def iter_ortvalue(self) -> Iterator[Tuple[OrtValueArray, ...]]:
        """Batches as OrtValueArray (views): (X, y) or (X, y, weight)."""
        return self._batches(OrtValueArray)

    def iter_bind(self, bind: Any, names: List[str]) -> Iterator[int]:
        """Batches bound to `bind` (anything with ``bind_input(name, device, dtype, shape,
        address)``, such as onnxruntime's SessionIOBinding): names are the feature, the
        label, (the weight,) and the learning rate inputs; yields the batch size."""
        if len(names) not in (3, 4):
            raise NotImplementedError(
                "The dataloader expects three (feature name, label name, learning rate) or "
                "(feature name, label name, sample_weight, learning rate), not %r." % names)
        data = [a for a in (self.X_np, self.y_np, self.w_np) if a is not None]
        for i in self._starts():
            parts = data if i is None else [a[i:i + self.batch_size] for a in data]
            for name, a in zip(names, parts):
                bind.bind_input(name, self.device, a.dtype, a.shape,
                                a.__array_interface__["data"][0])
            yield parts[0].shape[0]

    @property
    def data_np(self) -> Tuple[np.ndarray, ...]:
        """The datasets as numpy arrays."""
        if self.w_np is None:
            return self.X_np, self.y_np
        return self.X_np, self.y_np, self.w_np

    @property
    def data_ort(self) -> Tuple[OrtValueArray, ...]:
        """The datasets as OrtValueArray."""
        return tuple(a.view(OrtValueArray) for a in self.data_np)
