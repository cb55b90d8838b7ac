"""BaseEstimator (onnxcustom.training._base_estimator): the parameters, repr, pickling and
trained-model export the estimators share."""
import inspect
from typing import Any, Dict, List, Optional

from ..values import Device, device_to_string, get_device
from ._base import BaseOnnxClass
from ._base_onnx_function import BaseLearningOnnx
from .sgd_learning_rate import BaseLearningRate

__all__ = ["BaseEstimator"]


class BaseEstimator(BaseOnnxClass):
    """Base class of the estimators.

    :param model_onnx: the ONNX model to train (an ``onnx.ModelProto``, its bytes or a path)
    :param learning_rate: a learning rate (see :mod:`onnxgrad.training.sgd_learning_rate`)
        or what :meth:`BaseLearningRate.select` accepts
    :param device: ``'cpu'`` (a GPU is refused until onnxgrad has a CUDA backend), a
        :class:`~onnxgrad.values.Device`, an onnxruntime OrtDevice or a torch.device;
        ``self.device`` is a Device, ``get_params()['device']`` its name
    """

    #: worker threads of the C instances (1 suits the small models these estimators train)
    threads = 1

    def __init__(self, model_onnx: Any, learning_rate: Any, device: Any) -> None:
        self.model_onnx = model_onnx
        self.learning_rate = BaseLearningRate.select(learning_rate)
        self.device = get_device(device)

    def _progress_loop(self) -> Any:
        """The fit's iterations, range(max_iter), with a tqdm progress bar when verbose > 0
        and tqdm is installed."""
        loop: Any = range(self.max_iter)  # type: ignore[attr-defined]
        if self.verbose > 0:  # type: ignore[attr-defined]
            try:
                from tqdm import tqdm

                loop = tqdm(loop)
            except ImportError:
                pass
        return loop

    def get_params(self, deep: bool = False) -> Dict[str, Any]:
        """The constructor's parameters (scikit-learn's protocol: ``sklearn.base.clone``
        and ``GridSearchCV`` work); the device by name."""
        ps = {p for p, _ in self._get_param_names()}
        res = {att: getattr(self, att) for att in ps if hasattr(self, att)}
        if "device" in res and not isinstance(res["device"], str):
            res["device"] = device_to_string(res["device"])
        return res

    def set_params(self, **params: Any) -> "BaseEstimator":
        """Set parameters (the learning rate, loss and penalty given by name are selected as
        the constructor does); the computation is prepared again."""
        names = {p for p, _ in self._get_param_names()}
        for k, v in params.items():
            if k not in names:
                raise ValueError("Invalid parameter %r for estimator %s. Valid parameters "
                                 "are: %r." % (k, self.__class__.__name__, sorted(names)))
            if k == "device":
                v = get_device(v)
            elif k == "learning_rate":
                v = BaseLearningRate.select(v)
            elif k in ("learning_loss", "learning_penalty"):
                v = self._select_param(k, v)
            setattr(self, k, v)
        self.build_onnx_function()
        return self

    def _select_param(self, name: str, value: Any) -> Any:
        return value

    def build_onnx_function(self) -> None:
        """Prepare the learning rate, loss and penalty (subclasses)."""

    def __repr__(self) -> str:
        ps = []
        for k, v in self._get_param_names():
            if k not in self.__dict__:
                continue
            ov = getattr(self, k)
            if isinstance(ov, BaseLearningOnnx):
                ps.append("%s=%r" % (k, ov))
            elif isinstance(ov, Device):
                ps.append("%s=%r" % (k, device_to_string(ov)))
            else:
                ro = repr(ov)
                if len(ro) > 50 or "\n" in ro:
                    ro = ro[:10].replace("\n", " ") + "..."
                    ps.append("%s=%r" % (k, ro))
                else:
                    ps.append("%s=%s" % (k, ro))
        return "%s(%s)" % (self.__class__.__name__, ", ".join(ps))

    def __getstate__(self) -> Dict[str, Any]:
        # not a live communicator (onnxgrad.parallel.data_parallel): pass it again after loading
        atts = [k for k in self.__dict__ if not k.endswith("_") and
                k not in ("_og_comm", "_og_bucket_bytes")]
        if hasattr(self, "trained_coef_"):
            atts.append("trained_coef_")
        state = {att: getattr(self, att) for att in atts}
        state["device"] = device_to_string(state["device"])
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.device = get_device(self.device)

    def get_trained_onnx(self, model: Any = None) -> Any:
        """The trained ONNX graph (subclasses)."""
        raise NotImplementedError("The method needs to be overloaded.")

    def _get_trained_onnx(self, state: Dict[str, Any], model: Any = None) -> Any:
        """`model` (default: the model trained) with the initializers named in `state`
        replaced by its values (an onnx.ModelProto; needs the onnx package)."""
        from ..utils.onnx_helper import replace_initializers_into_onnx

        return replace_initializers_into_onnx(self.model_onnx if model is None else model,
                                              state)

    def _check_device(self) -> List[str]:
        """The providers for the device (a GPU fails in C with a clear message)."""
        return ["CPUExecutionProvider" if self.device.device_type() == Device.cpu()
                else "cuda:%d" % self.device.device_id()]
