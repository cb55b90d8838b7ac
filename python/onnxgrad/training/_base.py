"""BaseOnnxClass: what the estimators and the learning classes share (parameter names, saving
the ONNX graphs they hold), as onnxcustom.training._base has it."""
import inspect
import os
import warnings
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["BaseOnnxClass"]

# file names are shortened as onnxcustom shortened them
_SHORT = (("Learning", "L"), ("OrtGradient", "Grad"), ("ForwardBackward", "FB"))


class BaseOnnxClass:
    """Base of the classes holding ONNX graphs: the constructor's parameters, and
    :meth:`save_onnx_graph`."""

    @classmethod
    def _get_param_names(cls) -> List[Tuple[str, Any]]:
        """(name, default) of every parameter of the constructor."""
        init = getattr(cls.__init__, "deprecated_original", cls.__init__)
        sig = inspect.signature(init)
        return [(p.name, p.default) for p in sig.parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def _onnx_graphs(self) -> Dict[str, Any]:
        """The ONNX graphs this object describes its computation with, built on demand
        ({attribute: onnx.ModelProto}); the learning classes override it."""
        return {}

    def save_onnx_graph(self, folder: Any, prefix: Optional[str] = None,
                        suffix: Optional[str] = None) -> Dict[str, Any]:
        """Save every ONNX graph this object holds, and those of the objects it holds.

        :param folder: an existing folder, or anything else (``bytes``) to get the graphs as
            bytes instead of files
        :param prefix: prefix of the file names
        :param suffix: suffix of the file names
        :return: ``{attribute: file name, bytes, or such a dictionary}``; file names are
            ``<prefix><class name><suffix>.<attribute>.onnx`` with 'Learning', 'OrtGradient'
            and 'ForwardBackward' shortened to 'L', 'Grad' and 'FB'

        A warning says when a file already exists (it is overwritten).
        """
        prefix = prefix or ""
        suffix = suffix or ""
        if isinstance(folder, os.PathLike):
            folder = os.fspath(folder)
        if isinstance(folder, str) and not os.path.exists(folder):
            raise FileNotFoundError("Folder %r does not exist." % folder)
        saved: Dict[str, Any] = {}
        items = list(self.__dict__.items()) + list(self._onnx_graphs().items())
        for k, v in items:
            if hasattr(v, "SerializeToString") and not isinstance(v, type):
                if isinstance(folder, str):
                    name = "%s%s%s.%s.onnx" % (prefix, self.__class__.__name__, suffix, k)
                    for a, b in _SHORT:
                        name = name.replace(a, b)
                    filename = os.path.join(folder, name)
                    if os.path.exists(filename):
                        warnings.warn("Filename %r already exists." % filename)
                    with open(filename, "wb") as f:
                        f.write(v.SerializeToString())
                    saved[k] = filename
                else:
                    saved[k] = v.SerializeToString()
            elif hasattr(v, "save_onnx_graph") and not isinstance(v, type):
                saved[k] = v.save_onnx_graph(folder, prefix=prefix, suffix="%s.%s" % (suffix, k))
        return saved
