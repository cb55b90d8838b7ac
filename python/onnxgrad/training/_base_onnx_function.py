"""BaseLearningOnnx: the base of the learning rates, losses and penalties (onnxcustom's
training._base_onnx_function).

onnxcustom computed each of these with a small ONNX graph run by onnxruntime on OrtValues.
Here they compute with numpy, in the weights' dtype and in the order of the operations of
those graphs (so float32 results round the same way), on arrays updated in place as the
graphs' outputs were bound to their inputs.  The graphs themselves are still available, for
``save_onnx_graph`` and inspection, built on demand with the onnx package (attributes
``*_onnx_``, as onnxcustom named them); each one computes what the numpy code computes
(checked by the tests in onnxruntime).
"""
import inspect
from typing import Any, Dict

import numpy as np

from ..values import OrtValueArray, to_numpy
from ._base import BaseOnnxClass
from .excs import ProviderError  # noqa: F401  (onnxcustom's module had it)

__all__ = ["BaseLearningOnnx"]


def as_array(v: Any) -> np.ndarray:
    """A numpy array over v's memory (OrtValueArray, OrtValue, torch tensor, DLPack...)."""
    if type(v) is np.ndarray:
        return v
    if isinstance(v, np.ndarray):
        return v.view(np.ndarray)
    return to_numpy(v)


def as_value(a: np.ndarray) -> OrtValueArray:
    """What the learning classes return: OrtValueArray (numpy, and ``.numpy()``)."""
    return a.view(OrtValueArray)


class BaseLearningOnnx(BaseOnnxClass):
    """Base class of :class:`BaseLearningRate`, :class:`BaseLearningLoss` and
    :class:`BaseLearningPenalty`: ``build_onnx_function`` prepares the computation for an
    opset, a device and a number of weights; ``repr`` shows every parameter."""

    #: names of the graphs _make_graphs builds ({attribute: builder name})
    _graph_names: Dict[str, str] = {}

    def __init__(self) -> None:
        self.cache_in_: Dict[Any, Any] = {}
        self.cache_out_: Dict[Any, Any] = {}

    def __getstate__(self) -> Dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if not k.endswith("_")}
        if "build_args_" in self.__dict__:
            state["build_args_"] = self.build_args_
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        args = state.pop("build_args_", None)
        self.__dict__.update(state)
        self.cache_in_ = {}
        self.cache_out_ = {}
        if args is not None:
            self.build_onnx_function(*args)

    def __repr_extended__(self) -> str:
        return ""

    def __repr__(self) -> str:
        ps = []
        for k, _ in self._get_param_names():
            if k not in self.__dict__:
                continue
            ps.append("%s=%r" % (k, getattr(self, k)))
        return "%s(%s)%s" % (self.__class__.__name__, ", ".join(ps), self.__repr_extended__())

    def build_onnx_function(self, opset: int, device: Any, *args: Any) -> None:
        """Prepare the computation (onnxcustom built its onnxruntime sessions here).

        :param opset: the opset of the model (used by the ONNX graphs built on demand)
        :param device: the device (onnxgrad computes on the CPU)
        :param args: the number of weights, or the name of the sample weight input
        """
        raise NotImplementedError("This method must be overwritten.")

    def _onnx_graphs(self) -> Dict[str, Any]:
        """The ONNX graphs of this computation (needs onnx; {} before build_onnx_function)."""
        if "build_args_" not in self.__dict__ or not self._graph_names:
            return {}
        try:
            from . import _onnx_functions as F
        except ImportError:  # onnx is not installed
            return {}
        cache = self.__dict__.get("graphs_")
        if cache is None or cache.get("args") != (self.build_args_, repr(self)):
            cache = self.__dict__["graphs_"] = {"args": (self.build_args_, repr(self))}
        res = {}
        for att, builder in self._graph_names.items():
            if att not in cache:
                cache[att] = getattr(F, builder)(self, *self.build_args_)
            if cache[att] is not None:
                res[att] = cache[att]
        return res

    def __getattr__(self, name: str) -> Any:
        # the ONNX graphs onnxcustom kept as attributes (loss_grad_onnx_, axpy_onnx_, ...)
        if name.endswith("_onnx_") and name in self._graph_names:
            graphs = self._onnx_graphs()
            if name in graphs:
                return graphs[name]
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    @classmethod
    def _signature(cls) -> inspect.Signature:
        return inspect.signature(cls.__init__)

    def clear_binding_inputs(self, name: str, bind: Any, cache: bool = False) -> None:
        """Kept for onnxcustom's API: onnxgrad binds nothing here."""
