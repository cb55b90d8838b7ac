"""OrtGradientForwardBackward on onnxgrad: the API of onnxcustom's class of that name, whose
gradient graph came from onnxruntime-training, now computed by the C library.

    from onnxgrad import OrtGradientForwardBackward

    fw = OrtGradientForwardBackward(onx)          # every float initializer is trained
    inst = fw.new_instance()
    y, = inst.forward([x], training=True)
    dx, dcoef, dintercept = inst.backward([np.ones_like(y)])

Differences with the seed, all relaxations: weights need not be sorted nor follow the
initializer order; forward takes numpy arrays (a list bound to the model inputs, optionally
followed by the trained weights as the seed passed them, or a dict by name), and forward and
backward return lists of numpy arrays.
"""
from __future__ import annotations

import ctypes
import logging
import os
import warnings
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _lib as L

__all__ = ["OrtGradientForwardBackward", "OrtGradientForwardBackwardFunction", "OnnxGraph"]

ArrayLike = Any
Inputs = Union[Sequence[ArrayLike], Mapping[str, ArrayLike], np.ndarray]
GradOutputs = Optional[Union[Sequence[Optional[ArrayLike]], np.ndarray]]

_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING}


def _make_log_callback(logger: logging.Logger) -> Any:
    """A C log callback (og_log_fn) that forwards to a Python logger."""

    def log(user: Any, level: int, message: bytes) -> None:
        try:
            logger.log(_LOG_LEVELS.get(level, logging.INFO), "[onnxgrad] %s",
                       message.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001  (an exception must not cross into C)
            pass

    return L.og_log_fn(log)


def _parse_providers(providers: Any, device_index: int) -> tuple:
    """(device, device_index, provider list) from the seed's providers argument: None, 'cpu',
    'cuda', 'cuda:N', 'gpu', a torch.device, or onnxruntime provider names."""
    if hasattr(providers, "type"):  # torch.device
        if providers.type != "cpu":
            device_index = providers.index or 0
        providers = providers.type
    if isinstance(providers, str):
        providers = [providers]
    if providers is None or len(providers) == 0:
        providers = ["cpu"]
    kinds = set()
    for p in providers:
        if not isinstance(p, str):
            raise ValueError("Unexpected providers %r." % (providers,))
        low = p.lower()
        if low in ("cpu", "cpuexecutionprovider"):
            kinds.add(L.OG_DEVICE_CPU)
        elif low in ("cuda", "gpu", "cudaexecutionprovider"):
            kinds.add(L.OG_DEVICE_CUDA)
        elif low.startswith("cuda:") and low[5:].isdigit():
            kinds.add(L.OG_DEVICE_CUDA)
            device_index = int(low[5:])
        else:
            raise ValueError("Unexpected providers %r (cpu, cuda, cuda:N, gpu, "
                             "CPUExecutionProvider or CUDAExecutionProvider)." % (providers,))
    device = L.OG_DEVICE_CUDA if L.OG_DEVICE_CUDA in kinds else L.OG_DEVICE_CPU
    names = ["CUDAExecutionProvider" if device == L.OG_DEVICE_CUDA else "CPUExecutionProvider"]
    return device, device_index, names


class _GradHandle:
    """Owns one og_grad, the og_model it was built from (NULL when the og_grad owns it), the
    log callback, and the og_instance of every live instance.  Its finalizer frees them in
    dependency order (instances, gradient object, model): the garbage collector finalizes
    the objects of a dead reference cycle (a class, its instances, this handle) in no fixed
    order, so each C object cannot simply be freed by its own Python owner."""

    __slots__ = ("ptr", "model_ptr", "log_cb", "instances", "__weakref__")

    def __init__(self, ptr: int, model_ptr: Optional[int], log_cb: Any) -> None:
        self.ptr = ptr
        self.model_ptr = model_ptr
        self.log_cb = log_cb
        self.instances: set = set()

    def free_instance(self, inst: int) -> None:
        if inst in self.instances:
            self.instances.discard(inst)
            L.og_instance_free(inst)

    def __del__(self) -> None:
        for inst in list(getattr(self, "instances", ())):
            self.free_instance(inst)
        p = getattr(self, "ptr", None)
        if p:
            self.ptr = None
            L.og_grad_free(p)
        m = getattr(self, "model_ptr", None)
        if m:
            self.model_ptr = None
            L.og_model_free(m)


class OnnxGraph:
    """One of the gradient object's graphs (the training graph or the eval graph), standing
    where the seed kept an onnx.ModelProto: ``SerializeToString()`` gives its ONNX bytes,
    ``to_onnx()`` the onnx.ModelProto (needs the onnx package), ``save(path)`` writes it."""

    def __init__(self, handle: _GradHandle, which: str) -> None:
        self._handle = handle
        self.which = which

    def _model(self) -> int:
        f = L.og_grad_training_model if self.which == "training" else L.og_grad_eval_model
        return f(self._handle.ptr)

    def SerializeToString(self) -> bytes:  # noqa: N802 (the protobuf name)
        """The graph as ONNX bytes."""
        return L.model_bytes(self._model())

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the graph to an .onnx file."""
        L.check(L.og_model_save_file(self._model(), os.fspath(path).encode()))

    def to_onnx(self) -> Any:
        """The graph as an onnx.ModelProto."""
        import onnx  # optional dependency

        return onnx.load_from_string(self.SerializeToString())

    @property
    def input_names(self) -> List[str]:
        return [n for n, _ in L.model_inputs(self._model())]

    @property
    def output_names(self) -> List[str]:
        return L.model_outputs(self._model())

    def __repr__(self) -> str:
        return "OnnxGraph(%s)" % self.which


class OrtGradientForwardBackward:
    """Builds the gradient graph of an ONNX model and a class whose instances run it.

    :param onnx_model: the model: an ``onnx.ModelProto``, its bytes, or a path to an .onnx
        file (external data is then read next to it)
    :param weights_to_train: names of the initializers to train, in any order; None: every
        float (float16, float32, float64) initializer
    :param input_names: the graph inputs whose gradients backward returns; None: every
        float input (the attribute then lists every graph input, as the seed did); ``[]``:
        no input gradient, only the weights'
    :param output_names: the outputs to differentiate; None: every graph output
    :param class_name: name of the class created dynamically (``cls_type_``)
    :param providers: ``None``/``'cpu'``/``'CPUExecutionProvider'`` for the CPU,
        ``'cuda'``, ``'cuda:N'``, ``'gpu'``, ``'CUDAExecutionProvider'`` or a torch.device
        for a GPU (refused with RuntimeError until onnxgrad's CUDA backend exists)
    :param device_index: which GPU for CUDA (0 for ``cuda:0``)
    :param enable_logging: send the library's messages (weights with a zero gradient, ...)
        and each forward/backward step to the ``logging`` logger ``"onnxgrad"``
    :param debug: check every node's outputs for NaN/Inf while running (slower), and the
        inputs' shapes and types in Python before each call
    :param threads: worker threads for each instance (0: one per core, 1: no threading)

    Errors from the library are raised as ``ValueError`` (bad names, shapes, types) or
    ``RuntimeError`` (unsupported op, I/O, ...) carrying its message.

    Attributes: ``weights_to_train``, ``input_names``, ``output_names``, ``class_name``,
    ``providers``, ``device_index``, ``enable_logging``, ``debug``, ``onnx_model`` (as
    given), ``cls_type_`` (the class of :meth:`new_instance`), ``grad_input_names`` (the
    inputs whose gradients backward returns, then ``weights_to_train``).

    Pickling keeps the configuration and the current weight values: the restored object
    works without the original model file.
    """

    def __init__(self, onnx_model: Any, weights_to_train: Optional[Sequence[str]] = None,
                 input_names: Optional[Sequence[str]] = None,
                 output_names: Optional[Sequence[str]] = None, class_name: Optional[str] = None,
                 providers: Any = None, device_index: int = 0, enable_logging: bool = False,
                 debug: bool = False, threads: int = 0) -> None:
        self.onnx_model = onnx_model
        self.class_name = (class_name if class_name is not None else
                           "OrtGradientForwardBackwardFunction_%d" % id(self))
        self.device_index = device_index
        self.enable_logging = enable_logging
        self.debug = debug
        self.threads = int(threads)
        self.providers = providers
        if weights_to_train is not None:
            weights_to_train = list(weights_to_train)
            if len(set(weights_to_train)) != len(weights_to_train):
                raise ValueError("One weight is not unique in %r." % weights_to_train)
        self.weights_to_train = weights_to_train
        self.input_names = None if input_names is None else list(input_names)
        self.output_names = None if output_names is None else list(output_names)

        device, device_index, self.providers = _parse_providers(providers, device_index)
        self.device_index = device_index
        self._device = device
        model = L.Model.load(onnx_model)
        logger, cb = self._logger_and_callback()
        opts = self._options(cb)
        keep = []
        if weights_to_train is not None:
            keep.append(L.names_array(weights_to_train))
            opts.weights, opts.n_weights = keep[-1], len(weights_to_train)
        if input_names is not None:
            keep.append(L.names_array(self.input_names))
            opts.inputs, opts.n_inputs = keep[-1], len(self.input_names)
        if output_names is not None:
            keep.append(L.names_array(self.output_names))
            opts.outputs, opts.n_outputs = keep[-1], len(self.output_names)
        g = c_void_p()
        L.check(L.og_grad_create(model.ptr, byref(opts), byref(g)))
        self._handle = _GradHandle(g.value, model.release(), cb)
        self._init_next(logger)

    # -- construction helpers ------------------------------------------------------------

    def _logger_and_callback(self) -> tuple:
        if not self.enable_logging:
            return None, None
        logger = logging.getLogger("onnxgrad")
        return logger, _make_log_callback(logger)

    def _options(self, cb: Any) -> L.og_grad_options:
        opts = L.og_grad_options()
        opts.threads = self.threads
        opts.debug = 1 if self.debug else 0
        opts.device = self._device
        opts.device_index = self.device_index
        if cb is not None:
            opts.log = cb
        return opts

    def _init_next(self, logger: Optional[logging.Logger]) -> None:
        """Read the configuration back from the C object and create the class."""
        p = self._handle.ptr
        self._logger = logger
        weights = [L.decode(L.og_grad_weight_name(p, i)) for i in range(L.og_grad_weight_count(p))]
        grad_inputs = [L.decode(L.og_grad_input_name(p, i))
                       for i in range(L.og_grad_input_count(p))]
        outputs = [L.decode(L.og_grad_output_name(p, i)) for i in range(L.og_grad_output_count(p))]
        eval_ptr = L.og_grad_eval_model(p)
        model_inputs = L.model_inputs(eval_ptr)
        self.weights_to_train = weights
        if self.input_names is None:
            self.input_names = [n for n, _ in model_inputs]
        self.output_names = outputs
        self.grad_input_names = grad_inputs + weights
        dtypes = {n: dt for n, dt in model_inputs}
        meta = []
        for w in weights:
            t = c_void_p()
            L.check(L.og_grad_get_weight(p, w.encode(), byref(t)))
            value = L.copy_array(t.value)
            dtypes[w] = value.dtype
            meta.append((value.shape, value.dtype.str, value.nbytes) if value.dtype != np.uint16
                        else None)
        bind = [n for n, _ in model_inputs] + weights
        if logger is not None:
            logger.info("[OrtGradientForwardBackward] weights_to_train=%r", weights)
            logger.info("[OrtGradientForwardBackward] input_names=%r", self.input_names)
            logger.info("[OrtGradientForwardBackward] output_names=%r", outputs)
            logger.info("[OrtGradientForwardBackward] gradients of %r", self.grad_input_names)
        attributes = {
            "__doc__": "Inherits from OrtGradientForwardBackwardFunction.",
            "__module__": OrtGradientForwardBackwardFunction.__module__,
            "_handle": self._handle,
            "_logger": logger,
            "_debug": bool(self.debug),
            "_input_names": [n for n, _ in model_inputs],
            "_grad_input_names": bind,
            "_input_dtypes": dtypes,
            "_output_names": outputs,
            "_bw_fetches_names": [n + "_grad" for n in grad_inputs + weights],
            "_weights_to_train": weights,
            "_trained_onnx": OnnxGraph(self._handle, "training"),
            "_optimized_pre_grad_model": OnnxGraph(self._handle, "eval"),
            "_bind_names": {},
            # gradients of weights: (shape, typestr, nbytes) known in advance
            "_grad_meta": [None] * len(grad_inputs) + meta,
        }
        self.cls_type_ = type(self.class_name, (OrtGradientForwardBackwardFunction,), attributes)

    # -- the seed's API -------------------------------------------------------------------

    def new_instance(self) -> "OrtGradientForwardBackwardFunction":
        """An instance of ``cls_type_``: it implements ``forward`` and ``backward``."""
        return self.cls_type_()

    def get_initializer(self, name: str, exc: bool = True) -> Optional[np.ndarray]:
        """An initializer as a numpy array (a copy): a trained weight's current value, else the
        model's constant.

        :param name: initializer name
        :param exc: raise RuntimeError when there is none of that name (else return None)
        """
        p = self._handle.ptr
        if name in self.weights_to_train:
            t = c_void_p()
            L.check(L.og_grad_get_weight(p, name.encode(), byref(t)))
            return L.copy_array(t.value)
        eval_ptr = L.og_grad_eval_model(p)
        value = L.model_initializer(eval_ptr, name)
        if value is None and exc:
            raise RuntimeError("Unable to find name %r in %r." % (
                name, L.model_initializer_names(eval_ptr)))
        return value

    def set_initializer(self, name: str, value: ArrayLike) -> None:
        """Replace the value of trained weight ``name`` (same dtype and shape); instances use
        it from their next call."""
        t, _kept = L.wrap(value, self.cls_type_._input_dtypes.get(name))
        try:
            L.check(L.og_grad_set_weight(self._handle.ptr, name.encode(), t))
        finally:
            L.og_tensor_free(t)

    def save_onnx_graph(self, folder: Any, prefix: Optional[str] = None,
                        suffix: Optional[str] = None) -> Dict[str, Any]:
        """Same as ``cls_type_.save_onnx_graph``."""
        return self.cls_type_.save_onnx_graph(folder, prefix=prefix, suffix=suffix)

    # -- pickling -------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The configured gradient object as bytes (og_grad_save_buffer): an ONNX model with
        the current weights and, in its metadata, what is differentiated."""
        p = self._handle.ptr
        data = c_void_p()
        size = c_size_t()
        L.check(L.og_grad_save_buffer(p, byref(data), byref(size)))
        try:
            return ctypes.string_at(data.value, size.value)
        finally:
            L.og_grad_buffer_free(p, data)

    def __getstate__(self) -> Dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items()
                 if not k.endswith("_") and k not in ("_handle", "_logger")}
        state["_grad_bytes"] = self.to_bytes()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        data = state.pop("_grad_bytes")
        self.__dict__.update(state)
        logger, cb = self._logger_and_callback()
        opts = self._options(cb)
        g = c_void_p()
        L.check(L.og_grad_load_buffer(data, len(data), byref(opts), byref(g)))
        self._handle = _GradHandle(g.value, None, cb)
        self._init_next(logger)

    def __repr__(self) -> str:
        return "%s(...)" % self.__class__.__name__


class OrtGradientForwardBackwardFunction:
    """Ancestor of the classes :class:`OrtGradientForwardBackward` creates; an instance runs
    forward (inference, or training keeping what backward needs) and backward.

    Several training forwards may be pending: each backward pops the newest.  One instance
    is used by one thread at a time; distinct instances may run in parallel threads.

    Attributes: ``saved_tensors`` (the inputs of the last training forward).
    """

    _handle: _GradHandle
    _logger: Optional[logging.Logger]
    _debug: bool
    _input_names: List[str]
    _grad_input_names: List[str]
    _input_dtypes: Dict[str, Optional[np.dtype]]
    _output_names: List[str]
    _bw_fetches_names: List[str]
    _weights_to_train: List[str]
    _trained_onnx: OnnxGraph
    _optimized_pre_grad_model: OnnxGraph
    _bind_names: Dict[Any, Any]
    _grad_meta: List[Any]

    def __init__(self) -> None:
        cls = self.__class__
        if not hasattr(cls, "_handle"):
            raise TypeError("OrtGradientForwardBackwardFunction is created through "
                            "OrtGradientForwardBackward(...).new_instance()")
        inst = c_void_p()
        L.check(L.og_grad_new_instance(cls._handle.ptr, byref(inst)))
        self._inst = inst.value
        self._handle_ref = cls._handle  # frees the og_instance if this object cannot
        cls._handle.instances.add(inst.value)
        self._n_out = n_out = len(cls._output_names)
        self._n_grads = n_grads = len(cls._bw_fetches_names)
        # ctypes arrays reused by every call (an instance serves one thread at a time)
        self._tin = (c_void_p * (len(cls._grad_input_names) + 1))()
        self._tout = (c_void_p * (n_out + 1))()
        self._tseeds = (c_void_p * (n_out + 1))()
        self._tgrads = (c_void_p * (n_grads + 1))()
        self.saved_tensors_: Optional[List[Any]] = None

    def __del__(self) -> None:
        p = getattr(self, "_inst", None)
        if p:
            self._inst = None
            self._handle_ref.free_instance(p)

    # -- the seed's helpers ---------------------------------------------------------------

    @classmethod
    def save_onnx_graph(cls, folder: Any, prefix: Optional[str] = None,
                        suffix: Optional[str] = None) -> Dict[str, Any]:
        """Save the training graph (``_trained_onnx``) and the eval graph
        (``_optimized_pre_grad_model``).

        :param folder: an existing folder: each graph goes to
            ``<folder>/<prefix><class name><suffix>.<attribute>.onnx``; anything that is not
            a string or path: nothing is written and the bytes are returned
        :return: ``{attribute: file name}`` or ``{attribute: bytes}``
        """
        prefix = prefix or ""
        suffix = suffix or ""
        if isinstance(folder, os.PathLike):
            folder = os.fspath(folder)
        if isinstance(folder, str) and not os.path.exists(folder):
            raise FileNotFoundError("Folder %r does not exist." % folder)
        saved: Dict[str, Any] = {}
        for k in ("_trained_onnx", "_optimized_pre_grad_model"):
            graph: OnnxGraph = getattr(cls, k)
            if isinstance(folder, str):
                filename = os.path.join(folder, "%s%s%s.%s.onnx" % (
                    prefix, cls.__name__, suffix, k))
                if os.path.exists(filename):
                    warnings.warn("Filename %r already exists." % filename)
                graph.save(filename)
                saved[k] = filename
            else:
                saved[k] = graph.SerializeToString()
        return saved

    def save_for_backward(self, inputs: Sequence[Any]) -> None:
        """Keep the inputs of a forward (a shallow copy of the list)."""
        self.saved_tensors_ = list(inputs)

    @property
    def saved_tensors(self) -> List[Any]:
        """The inputs of the last training forward."""
        if self.saved_tensors_ is None:
            raise RuntimeError("No tensors was saved with save_for_backward.")
        return self.saved_tensors_

    @property
    def pending(self) -> int:
        """Training forwards waiting for their backward."""
        return L.og_instance_pending(self._inst)

    @property
    def saved_bytes(self) -> int:
        """Bytes held by the pending forwards' saved states."""
        return L.og_instance_saved_bytes(self._inst)

    # -- forward and backward -------------------------------------------------------------

    def _bind(self, inputs: Inputs) -> tuple:
        """(names array, sequence of values) for inputs given as a list, a dict or one array."""
        cls = self.__class__
        t = type(inputs)
        if t is np.ndarray:
            inputs = (inputs,)
        elif isinstance(inputs, Mapping):
            names = list(inputs.keys())
            missing = [n for n in cls._input_names if n not in inputs]
            if missing:
                raise ValueError("input %s is missing (the model's inputs: %s)" % (
                    ", ".join("'%s'" % n for n in missing), ", ".join(cls._input_names)))
            unknown = [n for n in names if n not in cls._input_dtypes]
            if unknown:
                raise ValueError("the model has no input or trained weight named %s (inputs: "
                                 "%s; trained weights: %s)" % (
                                     ", ".join("'%s'" % n for n in unknown),
                                     ", ".join(cls._input_names),
                                     ", ".join(cls._weights_to_train)))
            key = tuple(names)
            arr = cls._bind_names.get(key)
            if arr is None:
                arr = L.names_array(names)
                if len(cls._bind_names) < 64:
                    cls._bind_names[key] = arr
            return arr, names, list(inputs.values())
        elif t is not list and t is not tuple:
            inputs = list(inputs)
        n = len(inputs)
        arr = cls._bind_names.get(n)
        if arr is None:
            if n > len(cls._grad_input_names):
                raise ValueError(
                    "forward got %d inputs; the model takes %d (%s) followed by at most %d "
                    "trained weights (%s)" % (
                        n, len(cls._input_names), ", ".join(cls._input_names),
                        len(cls._weights_to_train), ", ".join(cls._weights_to_train)))
            if n < len(cls._input_names):
                raise ValueError("forward got %d inputs; input %s is missing (the model's "
                                 "inputs: %s)" % (n, ", ".join(
                                     "'%s'" % m for m in cls._input_names[n:]),
                                                  ", ".join(cls._input_names)))
            arr = cls._bind_names[n] = L.names_array(cls._grad_input_names[:n])
        return arr, cls._grad_input_names, inputs

    def _debug_check(self, names: Sequence[str], values: Sequence[Any]) -> None:
        dtypes = self.__class__._input_dtypes
        for n, v in zip(names, values):
            want = dtypes.get(n)
            dt = getattr(v, "dtype", None)
            if want is not None and dt is not None and dt != want:
                raise ValueError("input %r must be %s, got %s" % (n, want, dt))
            if dt is not None and dt.kind == "f" and not np.all(np.isfinite(v)):
                raise ValueError("input %r holds NaN or infinite values" % n)

    def forward(self, inputs: Inputs, training: bool = False) -> List[np.ndarray]:
        """Run the model.

        :param inputs: a list bound in order to the model inputs, optionally followed by
            the trained weights (to use other values than the current ones for this call,
            as the seed passed them); or a dict ``{name: array}``; or one array for a
            single-input model.  C-contiguous arrays of the declared dtype are read in
            place, without a copy; other array-likes are converted.
        :param training: False: inference (eval graph, nothing kept); True: the forward
            half of the training graph, keeping what :meth:`backward` needs
        :return: the outputs (``output_names`` order), as numpy arrays over the library's
            buffers (no copy), freed with the arrays
        """
        cls = self.__class__
        t = type(inputs)
        names_arr = cls._bind_names.get(len(inputs)) if t is list or t is tuple else None
        if names_arr is not None:  # the common case: a list of arrays seen before
            names, values = cls._grad_input_names, inputs
        else:
            names_arr, names, values = self._bind(inputs)
        n = len(values)
        if cls._debug:
            self._debug_check(names, values)
        if cls._logger is not None:
            cls._logger.debug("[%s.forward] %d inputs, training=%r", cls.__name__, n, training)
        dtypes = cls._input_dtypes
        tensors = self._tin
        wrap_to = L.wrap_to
        keep = [None] * n
        try:
            for i in range(n):
                v = values[i]
                if v is None:
                    raise ValueError("input %r is None" % names[i])
                keep[i] = wrap_to(v, dtypes.get(names[i]), tensors, i)
            st = L.og_instance_forward(self._inst, names_arr, tensors, n, 1 if training else 0,
                                       self._tout)
        finally:
            free = L.og_tensor_free
            for i in range(n):
                if tensors[i]:
                    free(tensors[i])
                    tensors[i] = None
        if st:
            raise L.error(st)
        if training:
            self.saved_tensors_ = list(values)
        outs = self._tout
        take = L.take_array
        return [take(outs[j]) for j in range(self._n_out)]

    def backward(self, grad_outputs: GradOutputs = None) -> List[np.ndarray]:
        """Gradients for the newest pending training forward (which it consumes).

        :param grad_outputs: the gradient of each output (same dtype and shape as the
            output); None, or a None entry, means ones
        :return: the gradients of ``grad_input_names``: the inputs needing a gradient,
            then the trained weights
        """
        cls = self.__class__
        n_out = self._n_out
        if cls._logger is not None:
            cls._logger.debug("[%s.backward] pending=%d", cls.__name__, self.pending)
        grads = self._tgrads
        if grad_outputs is None:
            st = L.og_instance_backward(self._inst, None, grads)
        else:
            t = type(grad_outputs)
            if t is np.ndarray:
                grad_outputs = (grad_outputs,)
            elif t is not list and t is not tuple:
                grad_outputs = list(grad_outputs)
            if len(grad_outputs) != n_out:
                raise ValueError("backward needs %d output gradients (%s), got %d" % (
                    n_out, ", ".join(cls._output_names), len(grad_outputs)))
            seeds = self._tseeds
            wrap_to = L.wrap_to
            keep = [None] * n_out
            try:
                for j in range(n_out):
                    g = grad_outputs[j]
                    if g is not None:
                        keep[j] = wrap_to(g, None, seeds, j)
                st = L.og_instance_backward(self._inst, seeds, grads)
            finally:
                free = L.og_tensor_free
                for j in range(n_out):
                    if seeds[j]:
                        free(seeds[j])
                        seeds[j] = None
        if st:
            raise L.error(st)
        res = []
        take, take_as = L.take_array, L.take_array_as
        for k, meta in enumerate(cls._grad_meta):
            res.append(take(grads[k]) if meta is None else take_as(grads[k], *meta))
        return res

    def __repr__(self) -> str:
        return "%s(pending=%d)" % (self.__class__.__name__, self.pending)
