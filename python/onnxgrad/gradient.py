"""OrtGradientForwardBackward on onnxgrad: the API of onnxcustom's class of that name, whose
gradient graph came from onnxruntime-training, now computed by the C library.

    from onnxgrad import OrtGradientForwardBackward

    fw = OrtGradientForwardBackward(onx)          # every float initializer is trained
    inst = fw.new_instance()
    y, = inst.forward([x], training=True)
    dx, dcoef, dintercept = inst.backward([np.ones_like(y)])

Differences with the seed, all relaxations: weights need not be sorted nor follow the
initializer order; forward takes numpy arrays, onnxruntime OrtValues (one by one or as an
OrtValueVector), PyTorch tensors or any DLPack object (a list bound to the model inputs,
optionally followed by the trained weights as the seed passed them, or a dict by name);
forward and backward return lists of :class:`~onnxgrad.values.OrtValueArray`, numpy arrays
that also answer OrtValue's methods (``.numpy()``, ``.shape()``, ...).

Each instance binds the arrays it is given to its C instance once (og_instance_bind) and
calls one C function per forward or backward: passing the same arrays again (the weights, a
training loop's seed) costs an identity check per array, and nothing is copied in or out.
"""
from __future__ import annotations

import ctypes
import logging
import os
import warnings
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib as L
from ._logging import compat_logger
from .values import (Device, OrtValueArray, array_from_tensor, get_device, to_numpy)

__all__ = ["OrtGradientForwardBackward", "OrtGradientForwardBackwardFunction", "OnnxGraph",
           "OnnxgradInferenceSession"]

ArrayLike = Any
Inputs = Union[Sequence[ArrayLike], Mapping[str, ArrayLike], np.ndarray]
GradOutputs = Optional[Union[Sequence[Optional[ArrayLike]], np.ndarray]]

_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING}
_ndarray = np.ndarray
_nd_shape = np.ndarray.shape.__get__
_OrtValueArray = OrtValueArray
_PTR = ctypes.sizeof(c_void_p)
_addressof = ctypes.addressof
_c_char_from_buffer = ctypes.c_char.from_buffer
_np_empty = np.empty
_u8 = np.dtype(np.uint8)
_DTYPES = dict(L._OG2NP)
_BLOCK_MAX = L.BLOCK_RESULT_MAX
_all, _map, _list = all, map, list
_getrefcount = __import__("sys").getrefcount
#: (block, address, end address, ctypes address, ctypes size) of no block
_NO_BLOCK = (None, 0, 0, None, c_size_t(0))


def _new_block(size: int) -> tuple:
    """A block of `size` bytes for the small results of a call (see og_instance_*_bound)."""
    if not size:
        return _NO_BLOCK
    block = _np_empty(size, _u8)
    base = _addressof(_c_char_from_buffer(block))
    return (block, base, base + size, c_void_p(base), c_size_t(size))
_is = __import__("operator").is_
_c_void_p = c_void_p
_c_size_t = c_size_t
_TRUE, _FALSE = ctypes.c_int(1), ctypes.c_int(0)
# the two calls of every forward and backward, without argtypes: the arguments are given as
# ctypes objects already (argtypes conversions cost about a microsecond a call)
_forward_bound_raw = L.lib["og_instance_forward_bound"]  # [] makes a new function object
_forward_bound_raw.restype = ctypes.c_int
_backward_bound_raw = L.lib["og_instance_backward_bound"]
_backward_bound_raw.restype = ctypes.c_int


def _make_log_callback(logger: logging.Logger) -> Any:
    """A C log callback (og_log_fn) that forwards to a Python logger."""

    def log(user: Any, level: int, message: bytes) -> None:
        try:
            logger.log(_LOG_LEVELS.get(level, logging.INFO), "[onnxgrad] %s",
                       message.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001  (an exception must not cross into C)
            pass

    return L.og_log_fn(log)


def _parse_providers(providers: Any, device_index: int, n_inputs: int = 1) -> tuple:
    """(device, device_index, provider list) from the seed's providers argument: None, 'cpu',
    'cuda', 'cuda:N', 'gpu', a torch.device, a Device, or onnxruntime provider names.  The
    list holds one provider name per input, as the seed's did."""
    if isinstance(providers, Device):
        device_index = providers.device_id()
        providers = "cpu" if providers.device_type() == Device.cpu() else "cuda"
    elif hasattr(providers, "type") and hasattr(providers, "index"):  # torch.device
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
        elif (low.startswith("cuda:") and low[5:].isdigit()) or (
                low.startswith("gpu:") and low[4:].isdigit()):
            kinds.add(L.OG_DEVICE_CUDA)
            device_index = int(low.split(":")[1])
        else:
            raise ValueError("Unexpected providers %r (cpu, cuda, cuda:N, gpu, "
                             "CPUExecutionProvider or CUDAExecutionProvider)." % (providers,))
    device = L.OG_DEVICE_CUDA if L.OG_DEVICE_CUDA in kinds else L.OG_DEVICE_CPU
    name = "CUDAExecutionProvider" if device == L.OG_DEVICE_CUDA else "CPUExecutionProvider"
    return device, device_index, [name] * max(1, n_inputs)


def _threads_from(sess_options: Any, threads: int) -> int:
    """The thread count: `threads`, else an onnxruntime SessionOptions' intra_op_num_threads."""
    if threads:
        return int(threads)
    n = getattr(sess_options, "intra_op_num_threads", 0) if sess_options is not None else 0
    try:
        return max(0, int(n))
    except (TypeError, ValueError):
        return 0


class _GradHandle:
    """Owns one og_grad, the og_model it was built from (NULL when the og_grad owns it), the
    log callback, and the og_instance and og_session of every live instance and session.
    Its finalizer frees them in dependency order (instances and sessions, gradient object,
    model): the garbage collector finalizes the objects of a dead reference cycle (a class,
    its instances, this handle) in no fixed order, so each C object cannot simply be freed
    by its own Python owner."""

    __slots__ = ("ptr", "model_ptr", "log_cb", "instances", "sessions", "__weakref__")

    def __init__(self, ptr: int, model_ptr: Optional[int], log_cb: Any) -> None:
        self.ptr = ptr
        self.model_ptr = model_ptr
        self.log_cb = log_cb
        self.instances: set = set()
        self.sessions: set = set()

    def free_instance(self, inst: int) -> None:
        if inst in self.instances:
            self.instances.discard(inst)
            L.og_instance_free(inst)

    def free_session(self, sess: int) -> None:
        if sess in self.sessions:
            self.sessions.discard(sess)
            L.og_session_free(sess)

    def __del__(self) -> None:
        for inst in list(getattr(self, "instances", ())):
            self.free_instance(inst)
        for sess in list(getattr(self, "sessions", ())):
            self.free_session(sess)
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
    ``to_onnx()`` the onnx.ModelProto (needs the onnx package), ``save(path)`` writes it, and
    any other attribute (``graph``, ``opset_import``, ...) is the ModelProto's."""

    def __init__(self, handle: _GradHandle, which: str) -> None:
        self._handle = handle
        self.which = which
        self._proto = None

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
        """The graph as an onnx.ModelProto (a new one at every call)."""
        import onnx  # optional dependency

        return onnx.load_from_string(self.SerializeToString())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_handle", "which", "_proto"):
            raise AttributeError(name)
        if self._proto is None:
            self._proto = self.to_onnx()
        return getattr(self._proto, name)

    @property
    def input_names(self) -> List[str]:
        return [n for n, _ in L.model_inputs(self._model())]

    @property
    def output_names(self) -> List[str]:
        return L.model_outputs(self._model())

    def __repr__(self) -> str:
        return "OnnxGraph(%s)" % self.which


class _NodeArg:
    """An input or output of :class:`OnnxgradInferenceSession` (onnxruntime's NodeArg)."""

    def __init__(self, name: str, dtype: Optional[np.dtype], shape: List[Any]) -> None:
        self.name = name
        self.shape = shape
        code = L._NP2OG.get(dtype) if dtype is not None else None
        from .values import _ONNX_TYPE_NAMES

        self.type = "tensor(%s)" % _ONNX_TYPE_NAMES.get(code, "undefined")

    def __repr__(self) -> str:
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


class OnnxgradInferenceSession:
    """Runs one of the gradient object's graphs, as the seed's ``_sess`` and ``_sess_eval``
    (onnxruntime InferenceSessions) did: ``run(output_names, input_feed)`` (output_names None:
    every output), ``get_inputs()``, ``get_outputs()``, ``get_providers()``.  The C session
    is created at the first run."""

    def __init__(self, handle: _GradHandle, which: str, threads: int,
                 extra_inputs: Sequence[Tuple[str, Any, Any]] = (),
                 model_inputs: Sequence[str] = ()) -> None:
        self._handle = handle
        self._model_inputs = set(model_inputs)
        self._which = which
        self._threads = threads
        self._extra = list(extra_inputs)  # (name, dtype, shape) of the inputs with defaults
        self._ptr = None
        self._session = None

    def _model(self) -> int:
        f = L.og_grad_training_model if self._which == "training" else L.og_grad_eval_model
        return f(self._handle.ptr)

    def _open(self) -> Any:
        if self._session is None:
            opts = L.og_session_options()
            opts.threads = self._threads
            out = c_void_p()
            L.check(L.og_session_create(self._model(), byref(opts), byref(out)))
            self._handle.sessions.add(out.value)
            self._ptr = out.value
            self._session = True
        return self._ptr

    def get_inputs(self) -> List[_NodeArg]:
        m = self._model()
        res = []
        for i in range(L.og_model_input_count(m)):
            dt, _, dims = L.model_io_info(m, i)
            res.append(_NodeArg(L.decode(L.og_model_input_name(m, i)), dt,
                                [d if d >= 0 else None for d in dims]))
        # the trained weights are inputs too (with their current values as defaults), after
        # the model inputs (and before the seeds, in the training graph)
        names = {a.name for a in res}
        extra = [_NodeArg(n, dt, list(shape)) for n, dt, shape in self._extra if n not in names]
        first = [a for a in res if a.name in self._model_inputs]
        return first + extra + [a for a in res if a.name not in self._model_inputs]

    def get_outputs(self) -> List[_NodeArg]:
        m = self._model()
        res = []
        for i in range(L.og_model_output_count(m)):
            dt, _, dims = L.model_io_info(m, i, output=True)
            res.append(_NodeArg(L.decode(L.og_model_output_name(m, i)), dt,
                                [d if d >= 0 else None for d in dims]))
        return res

    def get_providers(self) -> List[str]:
        return ["CPUExecutionProvider"]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[OrtValueArray]:
        """The outputs `output_names` (None: all) for the inputs of `input_feed`."""
        ptr = self._open()
        outs = list(output_names) if output_names else L.model_outputs(self._model())
        names = list(input_feed)
        tensors = (c_void_p * (len(names) + 1))()
        res = (c_void_p * (len(outs) + 1))()
        keep = []
        try:
            for i, n in enumerate(names):
                keep.append(L.wrap_to(to_numpy(input_feed[n]), None, tensors, i))
            st = L.og_session_run_named(ptr, L.names_array(names), tensors, len(names),
                                        L.names_array(outs), len(outs), res)
        finally:
            for i in range(len(names)):
                if tensors[i]:
                    L.og_tensor_free(tensors[i])
        L.check(st)
        info = (ctypes.c_int64 * (L.INFO_SIZE * len(outs) + 1))()
        L.og_tensor_info(res, len(outs), info)
        return [_take(res[j], info, j) for j in range(len(outs))]

    def __del__(self) -> None:
        p = getattr(self, "_ptr", None)
        if p:
            self._ptr = None
            self._handle.free_session(p)


def _take(t: int, info: Any, j: int) -> OrtValueArray:
    """The OrtValueArray over result j of a call whose og_tensor_info is `info`."""
    b = j * 11
    rank = info[b + 2]
    return array_from_tensor(t, info[b], info[b + 1], tuple(info[b + 3:b + 3 + rank]))


class _RunOptions:
    """Stands where the seed kept an onnxruntime RunOptions: onnxgrad has none to set."""

    def __init__(self) -> None:
        self.training_mode = True
        self.log_severity_level = 2
        self.logid = ""

    def __repr__(self) -> str:
        return "RunOptions(training_mode=True)"


class _GraphInfo:
    """What onnxruntime's graph builder reported about the gradient graph (GraphInfo)."""

    def __init__(self, inputs: List[str], grad_inputs: List[str], weights: List[str],
                 outputs: List[str], seeds: List[str]) -> None:
        self.user_input_names = list(inputs)
        self.user_input_grad_names = {n: n + "_grad" for n in grad_inputs}
        self.initializer_names = list(weights)
        self.initializer_names_to_train = list(weights)
        self.initializer_grad_names_to_train = [w + "_grad" for w in weights]
        self.user_output_names = list(outputs)
        self.module_output_gradient_name = list(seeds)
        self.output_grad_indices_non_differentiable = []
        self.output_grad_indices_require_full_shape = list(range(len(outputs)))

    def __repr__(self) -> str:
        return "GraphInfo(%s)" % ", ".join("%s=%r" % kv for kv in sorted(self.__dict__.items()))


class _GraphBuilder:
    """Stands where the seed kept onnxruntime's OrtModuleGraphBuilder: the gradient graph
    is built already (by og_grad_create); ``get_model()`` gives the training graph's bytes,
    ``get_inference_optimized_model()`` the eval graph's, ``get_graph_info()`` the names."""

    def __init__(self, handle: _GradHandle, info: _GraphInfo) -> None:
        self._handle = handle
        self._info = info

    def get_model(self) -> bytes:
        return L.model_bytes(L.og_grad_training_model(self._handle.ptr))

    get_gradient_model = get_model

    def get_inference_optimized_model(self) -> bytes:
        return L.model_bytes(L.og_grad_eval_model(self._handle.ptr))

    get_forward_model = get_inference_optimized_model

    def get_graph_info(self) -> _GraphInfo:
        return self._info

    def __repr__(self) -> str:
        return "GraphBuilder(onnxgrad)"


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
    :param sess_options: kept; an onnxruntime SessionOptions' ``intra_op_num_threads`` sets
        the thread count when `threads` is 0
    :param providers: ``None``/``'cpu'``/``'CPUExecutionProvider'`` for the CPU,
        ``'cuda'``, ``'cuda:N'``, ``'gpu'``, ``'CUDAExecutionProvider'``, a torch.device or
        a :class:`~onnxgrad.values.Device` for a GPU (refused with RuntimeError until
        onnxgrad's CUDA backend exists)
    :param provider_options: kept (onnxgrad has no provider options)
    :param run_options: kept as ``cls_type_._run_options``
    :param graph_builder_config: kept (onnxgrad's builder has no configuration)
    :param device_index: which GPU for CUDA (0 for ``cuda:0``)
    :param enable_logging: log what the seed logged (logger ``"onnxcustom"``, whose records
        also reach the handlers of ``"onnxgrad"``), the library's messages (weights with a
        zero gradient, ...) and each forward/backward step
    :param debug: check every node's outputs for NaN/Inf while running (slower), and the
        inputs' types and values in Python before each call
    :param threads: worker threads for each instance (0: one per core, 1: no threading)

    Errors from the library are raised as ``ValueError`` (bad names, shapes, types) or
    ``RuntimeError`` (unsupported op, I/O, ...) carrying its message.

    Attributes: ``weights_to_train``, ``input_names``, ``output_names``, ``class_name``,
    ``providers`` (one provider name per input), ``device_index``, ``enable_logging``,
    ``debug``, ``onnx_model`` (as given), ``sess_options``, ``provider_options``,
    ``run_options``, ``graph_builder_config``, ``cls_type_`` (the class of
    :meth:`new_instance`), ``grad_input_names`` (the inputs whose gradients backward returns,
    then ``weights_to_train``).  ``cls_type_`` carries the seed's attributes: ``_sess`` and
    ``_sess_eval`` (objects with ``run``, over the training and eval graphs),
    ``_trained_onnx`` and ``_optimized_pre_grad_model`` (the two graphs), ``_input_names``,
    ``_grad_input_names`` (model inputs then weights: what forward binds), ``_output_names``,
    ``_bw_fetches_names`` (what backward returns), ``_weights_to_train`` (sorted, as the
    seed's), ``_onx_inp`` and ``_onx_out`` (the gradient graph's inputs without the seeds and
    its gradient outputs), ``_debug``, ``_logger``, ``_run_options``, ``_graph_builder``,
    ``_graph_info``, ``_training_agent`` (this object's C handle), ``_cache``,
    ``_fw_outputs_device_info``, ``_bw_outputs_device_info``,
    ``_fw_no_grad_output_device_info``, ``_devices``.

    Pickling keeps the configuration and the current weight values: the restored object
    works without the original model file.
    """

    def __init__(self, onnx_model: Any, weights_to_train: Optional[Sequence[str]] = None,
                 input_names: Optional[Sequence[str]] = None,
                 output_names: Optional[Sequence[str]] = None, class_name: Optional[str] = None,
                 sess_options: Any = None, providers: Any = None, provider_options: Any = None,
                 run_options: Any = None, graph_builder_config: Any = None,
                 device_index: int = 0, enable_logging: bool = False, debug: bool = False,
                 threads: int = 0) -> None:
        self.onnx_model = onnx_model
        self.class_name = (class_name if class_name is not None else
                           "OrtGradientForwardBackwardFunction_%d" % id(self))
        self.device_index = device_index
        self.enable_logging = enable_logging
        self.debug = debug
        self.sess_options = sess_options
        self.provider_options = provider_options
        self.run_options = run_options
        self.graph_builder_config = graph_builder_config
        self.threads = _threads_from(sess_options, threads)
        self.providers = providers
        if weights_to_train is not None:
            weights_to_train = list(weights_to_train)
            if len(set(weights_to_train)) != len(weights_to_train):
                raise ValueError("One weight is not unique in %r." % weights_to_train)
        self.weights_to_train = weights_to_train
        self.input_names = None if input_names is None else list(input_names)
        self.output_names = None if output_names is None else list(output_names)

        device, device_index, _ = _parse_providers(providers, device_index)
        self.device_index = device_index
        self._device = device
        logger, cb = self._logger_and_callback()
        model = L.Model.load(onnx_model)
        if logger is not None:
            logger.info("[OrtGradientForwardBackward] create training onnx")
            logger.info("[OrtGradientForwardBackward] input_names=%r", self.input_names)
            logger.info("[OrtGradientForwardBackward] output_names=%r", self.output_names)
            logger.info("[OrtGradientForwardBackward] weights_to_train=%r",
                        self.weights_to_train)
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
        logger = compat_logger()
        return logger, _make_log_callback(logging.getLogger("onnxgrad"))

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
        _, _, self.providers = _parse_providers(self.providers, self.device_index,
                                                len(self.input_names))
        dtypes = {n: dt for n, dt in model_inputs}
        wshapes = []
        meta = []
        for w in weights:
            t = c_void_p()
            L.check(L.og_grad_get_weight(p, w.encode(), byref(t)))
            value = L.copy_array(t.value)
            dtypes[w] = value.dtype
            wshapes.append(tuple(value.shape))
            code = L.og_tensor_dtype(t.value)
            meta.append((tuple(value.shape), code, L._OG2NP[code], value.nbytes)
                        if value.size and code in L._OG2NP else None)
        in_names = [n for n, _ in model_inputs]
        bind = in_names + weights
        winfo = [(w, dtypes[w], shape) for w, shape in zip(weights, wshapes)]
        bw_fetches = [n + "_grad" for n in grad_inputs + weights]
        seeds = [o + "_grad" for o in outputs]
        info = _GraphInfo(in_names, grad_inputs, weights, outputs, seeds)
        device = Device(Device.cuda() if self._device == L.OG_DEVICE_CUDA else Device.cpu(), 0,
                        self.device_index)
        if logger is not None:
            logger.info("[OrtGradientForwardBackward] OrtModuleGraphBuilder.initialize")
            logger.info("[OrtGradientForwardBackward] OrtModuleGraphBuilder.build")
            logger.info("[OrtGradientForwardBackward] OrtModuleGraphBuilder.get_model")
            logger.info("[OrtGradientForwardBackward] graph_info=%r", info)
            logger.info("[OrtGradientForwardBackward] create TrainSession")
            logger.info("[OrtGradientForwardBackward] providers=%r", self.providers)
            logger.info("[OrtGradientForwardBackward] create InferenceSession")
            logger.info("[OrtGradientForwardBackward] create training agent")
            logger.info("[OrtGradientForwardBackward] instantiate dynamic class %r",
                        self.class_name)
            logger.info("[OrtGradientForwardBackward] weights_to_train=%r", weights)
            logger.info("[OrtGradientForwardBackward] grad_input_names=%r", bind)
            logger.info("[OrtGradientForwardBackward] bw_fetches_names=%r", bw_fetches)
            logger.info("[OrtGradientForwardBackward] device_index=%r", self.device_index)
        attributes = {
            "__doc__": "Inherits from OrtGradientForwardBackwardFunction.",
            "__module__": OrtGradientForwardBackwardFunction.__module__,
            "_handle": self._handle,
            "_logger": logger,
            "_debug": bool(self.debug),
            "_run_options": self.run_options if self.run_options is not None else _RunOptions(),
            "_sess": OnnxgradInferenceSession(self._handle, "training", self.threads, winfo,
                                              in_names),
            "_sess_eval": OnnxgradInferenceSession(self._handle, "eval", self.threads, winfo,
                                                   in_names),
            "_training_agent": self._handle,
            "_cache": {},
            "_input_names": list(self.input_names),
            "_model_inputs": in_names,
            "_grad_input_names": bind,
            "_input_dtypes": dtypes,
            "_output_names": outputs,
            "_bw_fetches_names": bw_fetches,
            "_weights_to_train": sorted(weights),
            "_weight_names": weights,
            "_weight_shapes": wshapes,
            "_trained_onnx": OnnxGraph(self._handle, "training"),
            "_optimized_pre_grad_model": OnnxGraph(self._handle, "eval"),
            "_graph_info": info,
            "_graph_builder": _GraphBuilder(self._handle, info),
            "_onx_inp": list(bind),
            "_onx_out": list(bw_fetches),
            "_fw_outputs_device_info": [device for _ in self.providers],
            "_bw_outputs_device_info": [device for _ in bw_fetches],
            "_fw_no_grad_output_device_info": [device for _ in outputs],
            "_devices": [device for _ in bind],
            # gradients of weights: (shape, og dtype) known in advance
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
        """Replace the value of trained weight ``name`` (same dtype and shape, or a shape that
        differs only by axes of size 1); instances use it from their next call."""
        a = to_numpy(value, self.cls_type_._input_dtypes.get(name))
        if name in self.weights_to_train:
            want = self.cls_type_._weight_shapes[self.weights_to_train.index(name)]
            if a.shape != want and _same_but_ones(a.shape, want):
                a = np.ascontiguousarray(a).reshape(want)
        t, _kept = L.wrap(a)
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
        for k in ("sess_options", "run_options", "graph_builder_config", "provider_options"):
            state[k] = None  # onnxruntime objects do not pickle
        state["_grad_bytes"] = self.to_bytes()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        data = state.pop("_grad_bytes")
        for k in ("sess_options", "run_options", "graph_builder_config", "provider_options"):
            state.setdefault(k, None)
        self.__dict__.update(state)
        logger, cb = self._logger_and_callback()
        opts = self._options(cb)
        g = c_void_p()
        L.check(L.og_grad_load_buffer(data, len(data), byref(opts), byref(g)))
        self._handle = _GradHandle(g.value, None, cb)
        self._init_next(logger)

    def __repr__(self) -> str:
        return "%s(...)" % self.__class__.__name__


def _same_but_ones(a: Tuple[int, ...], b: Tuple[int, ...]) -> bool:
    """Whether shapes a and b differ only by axes of size 1 ((3,) and (1, 3))."""
    return tuple(d for d in a if d != 1) == tuple(d for d in b if d != 1)


def _is_vector(v: Any) -> bool:
    """An onnxruntime OrtValueVector (or a sequence of the same kind)."""
    return hasattr(v, "push_back") and hasattr(v, "__len__")


class OrtGradientForwardBackwardFunction:
    """Ancestor of the classes :class:`OrtGradientForwardBackward` creates; an instance runs
    forward (inference, or training keeping what backward needs) and backward.

    Several training forwards may be pending: each backward pops the newest.  One instance
    is used by one thread at a time; distinct instances may run in parallel threads.  The
    arrays given to a training forward must not change until its backward has run (they are
    read in place, not copied).

    Attributes: ``saved_tensors`` (the inputs of the last training forward), ``states_``
    (one entry per pending forward), ``pending``, ``saved_bytes``.
    """

    _handle: _GradHandle
    _logger: Optional[logging.Logger]
    _debug: bool
    _input_names: List[str]
    _model_inputs: List[str]
    _grad_input_names: List[str]
    _input_dtypes: Dict[str, Optional[np.dtype]]
    _output_names: List[str]
    _bw_fetches_names: List[str]
    _weights_to_train: List[str]
    _weight_names: List[str]
    _weight_shapes: List[Tuple[int, ...]]
    _trained_onnx: OnnxGraph
    _optimized_pre_grad_model: OnnxGraph
    _grad_meta: List[Any]

    def __init__(self) -> None:
        cls = self.__class__
        if not hasattr(cls, "_handle"):
            raise TypeError("OrtGradientForwardBackwardFunction is created through "
                            "OrtGradientForwardBackward(...).new_instance()")
        inst = c_void_p()
        L.check(L.og_grad_new_instance(cls._handle.ptr, byref(inst)))
        self._inst = inst.value
        self._cinst = c_void_p(inst.value)
        self._handle_ref = cls._handle  # frees the og_instance if this object cannot
        cls._handle.instances.add(inst.value)
        self._n_out = n_out = len(cls._output_names)
        self._n_grads = n_grads = len(cls._bw_fetches_names)
        self._n_slots = n_slots = len(cls._grad_input_names)
        self._n_in = len(cls._model_inputs)
        # ctypes arrays reused by every call (an instance serves one thread at a time)
        self._tout = (c_void_p * (n_out + 1))()
        self._tgrads = (c_void_p * (n_grads + 1))()
        self._info_out = (ctypes.c_int64 * (L.INFO_SIZE * n_out + 1))()
        self._info_grads = (ctypes.c_int64 * (L.INFO_SIZE * n_grads + 1))()
        self._tmp = (c_void_p * 1)()
        # what is bound to each forward slot and seed slot: the object given, its shape
        # (arrays), and the array whose memory the C tensor reads
        self._objs: List[Any] = [None] * n_slots
        self._shapes: List[Any] = [None] * n_slots
        self._keep: List[Any] = [None] * n_slots
        self._sobjs: List[Any] = [None] * n_out
        self._sshapes: List[Any] = [None] * n_out
        self._skeep: List[Any] = [None] * n_out
        self._n_bound = n_slots  # slots past the inputs given last time are unbound
        self._keep_t: Optional[Tuple[Any, ...]] = None  # tuple(self._keep), until a rebind
        # bytes of the small results of the last forward and backward: the size of the block
        # they are copied into at the next call
        self._fsize = 0
        self._bsize = 0
        self._fblk = self._bblk = _NO_BLOCK
        # per pending training forward: the arrays its state reads, its outputs' shapes
        self._pending: List[Tuple[Tuple[Any, ...], List[Tuple[int, ...]]]] = []
        self.saved_tensors_: Optional[List[Any]] = None
        self._install_fast_paths()

    def _install_fast_paths(self) -> None:
        """The constants of the common call, in one tuple the methods unpack into locals:
        the same arrays as the last call (identity and shape), results small enough for the
        block.  Anything else goes the general way."""
        cls = self.__class__
        if cls._logger is not None or cls._debug:
            self._fc = None
            return
        metas = [(k, m[0], m[2], m[1]) for k, m in enumerate(cls._grad_meta) if m is not None]
        dyn = [k for k, m in enumerate(cls._grad_meta) if m is None]
        self._fc = (self._objs, self._shapes, self._sobjs, self._sshapes, self._tout,
                    self._info_out, self._tgrads, self._info_grads, self._cinst, self._pending,
                    self._n_out, self._n_grads, metas, dyn, not dyn)

    def forward(self, inputs: Inputs, training: bool = False,
                forward_outputs_cache: Any = None) -> List[OrtValueArray]:
        """Run the model.

        :param inputs: a list bound in order to the model inputs, optionally followed by the
            trained weights (to use other values than the current ones, as the seed passed
            them); or a dict ``{name: array}``; or one array for a single-input model; or an
            onnxruntime OrtValueVector.  Values: numpy arrays, OrtValues, torch tensors,
            DLPack objects; C-contiguous ones of the declared dtype are read in place.  A
            weight whose shape differs from the initializer's only by axes of size 1 (a (3,)
            intercept for a (1, 3) initializer) is read with the initializer's shape.
        :param training: False: inference (eval graph, nothing kept); True: the forward
            half of the training graph, keeping what :meth:`backward` needs
        :param forward_outputs_cache: ignored (the seed's onnxruntime output cache)
        :return: the outputs (``output_names`` order), as OrtValueArray (numpy arrays) over
            the library's buffers (no copy), freed with the arrays
        """
        fc = self._fc
        t = type(inputs)
        if fc is None or (t is not list and t is not tuple):
            return self._forward_general(inputs, training)
        objs, shapes, _, _, outs, info, _, _, cinst, pending, n_out = fc[:11]
        if len(inputs) != self._n_bound or not _all(_map(_is, inputs, objs)):
            return self._forward_general(inputs, training)
        try:
            if _list(_map(_nd_shape, inputs)) != shapes[:len(inputs)]:
                return self._forward_general(inputs, training)
        except TypeError:  # a None (a weight not given), an object that is no array
            return self._forward_general(inputs, training)
        blk = self._fblk
        if blk[0] is None or _getrefcount(blk[0]) > 2:
            blk = self._fblk = _new_block(self._fsize)
        block, base, end, cbase, csize = blk
        st = _forward_bound_raw(cinst, _TRUE if training else _FALSE, outs, info, cbase, csize)
        if st:
            raise L.error(st)
        res = []
        shapes_out = []
        handed = False
        for j in range(n_out):
            b = j * 11
            rank = info[b + 2]
            shape = tuple(info[b + 3:b + 3 + rank])
            shapes_out.append(shape)
            ptr = info[b]
            if base <= ptr < end:
                res.append(_OrtValueArray(shape, _DTYPES[info[b + 1]], block, ptr - base))
            else:  # handed over: a large output, or the block must grow
                res.append(array_from_tensor(outs[j], ptr, info[b + 1], shape))
                handed = True
        if handed:
            self._resize_block(0, res)
        if training:
            keep = self._keep_t
            if keep is None:
                keep = self._keep_t = tuple(self._keep)
            pending.append((keep, shapes_out))
            self.saved_tensors_ = list(inputs)
        return res

    def backward(self, grad_outputs: GradOutputs = None,
                 backward_outputs_cache: Any = None) -> List[OrtValueArray]:
        """Gradients for the newest pending training forward (which it consumes).

        :param grad_outputs: the gradient of each output: same dtype and shape as the output,
            or a shape that differs only by axes of size 1 (a (1, 25) gradient for a (25, 1)
            output); None, or a None entry, means ones.  Any form forward takes.
        :param backward_outputs_cache: ignored (the seed's onnxruntime output cache)
        :return: the gradients of ``grad_input_names``: the inputs needing a gradient,
            then the trained weights (OrtValueArray, over the library's buffers)
        """
        fc = self._fc
        t = type(grad_outputs)
        if fc is None or (t is not list and t is not tuple):
            return self._backward_general(grad_outputs)
        (_, _, sobjs, sshapes, _, _, grads, info, cinst, pending, n_out, n_grads, metas, dyn,
         all_meta) = fc
        if len(grad_outputs) != n_out or not pending or \
                not _all(_map(_is, grad_outputs, sobjs)):
            return self._backward_general(grad_outputs)
        try:
            if _list(_map(_nd_shape, grad_outputs)) != sshapes:
                return self._backward_general(grad_outputs)
        except TypeError:
            return self._backward_general(grad_outputs)
        blk = self._bblk
        if blk[0] is None or _getrefcount(blk[0]) > 2:
            blk = self._bblk = _new_block(self._bsize)
        block, base, end, cbase, csize = blk
        st = _backward_bound_raw(cinst, grads, info, cbase, csize)
        if st:
            raise L.error(st)
        pending.pop()
        ptrs = info[0:n_grads * 11:11]
        if all_meta and base and _all(base <= p < end for p in ptrs):
            return [_OrtValueArray(sh, dt, block, ptrs[k] - base) for k, sh, dt, _ in metas]
        res: List[Any] = [None] * n_grads
        for k, sh, dt, code in metas:
            p = ptrs[k]
            res[k] = (_OrtValueArray(sh, dt, block, p - base) if base <= p < end else
                      array_from_tensor(grads[k], p, code, sh))
        for k in dyn:
            b = k * 11
            rank = info[b + 2]
            sh = tuple(info[b + 3:b + 3 + rank])
            p = ptrs[k]
            res[k] = (_OrtValueArray(sh, _DTYPES[info[b + 1]], block, p - base)
                      if base <= p < end else array_from_tensor(grads[k], p, info[b + 1], sh))
        self._resize_block(1, res)
        return res

    def _resize_block(self, backward: int, res: List[Any]) -> None:
        """The block size the small results of `res` need, for the next call."""
        need = 0
        for a in res:
            nb = a.nbytes
            if nb <= _BLOCK_MAX:
                need += (nb + 63) & ~63
        if backward:
            if need != self._bsize:
                self._bsize, self._bblk = need, _NO_BLOCK
        elif need != self._fsize:
            self._fsize, self._fblk = need, _NO_BLOCK

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
            a string or path (``bytes``, None): nothing is written and the bytes are returned
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

    @staticmethod
    def device_name(device: Any) -> str:
        """``'Cpu'`` or ``'Gpu'`` for a device (a Device, an OrtDevice, a string)."""
        return "Cpu" if get_device(device).device_type() == Device.cpu() else "Gpu"

    @staticmethod
    def input_to_ort(tensors: Any, devices: Any = None, debug: bool = False) -> List[np.ndarray]:
        """The tensors as numpy arrays over their memory (the seed made an OrtValueVector)."""
        return [to_numpy(t) for t in tensors]

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
    def states_(self) -> List[Any]:
        """One entry per pending training forward (the seed kept its execution states)."""
        return list(self._pending)

    @property
    def pending(self) -> int:
        """Training forwards waiting for their backward."""
        return L.og_instance_pending(self._inst)

    @property
    def saved_bytes(self) -> int:
        """Bytes held by the pending forwards' saved states (views of the inputs excluded)."""
        return L.og_instance_saved_bytes(self._inst)

    # -- binding --------------------------------------------------------------------------

    def _as_list(self, inputs: Any) -> List[Any]:
        """Inputs given as a dict, one array, an OrtValueVector or any iterable: a list by
        forward slot (None for a weight not given)."""
        cls = self.__class__
        if isinstance(inputs, Mapping):
            missing = [n for n in cls._model_inputs if n not in inputs]
            if missing:
                raise ValueError("input %s is missing (the model's inputs: %s)" % (
                    ", ".join("'%s'" % n for n in missing), ", ".join(cls._model_inputs)))
            unknown = [n for n in inputs if n not in cls._input_dtypes]
            if unknown:
                raise ValueError("the model has no input or trained weight named %s (inputs: "
                                 "%s; trained weights: %s)" % (
                                     ", ".join("'%s'" % n for n in unknown),
                                     ", ".join(cls._model_inputs),
                                     ", ".join(cls._weight_names)))
            return [inputs.get(n) for n in cls._grad_input_names]
        if isinstance(inputs, np.ndarray) or not hasattr(inputs, "__len__") and \
                not hasattr(inputs, "__iter__"):
            return [inputs]
        if _is_vector(inputs):
            return [inputs[i] for i in range(len(inputs))]
        if hasattr(inputs, "__dlpack__") and not isinstance(inputs, (list, tuple)):
            return [inputs]
        return list(inputs)

    def _bind(self, backward: int, i: int, v: Any, shape: Optional[Tuple[int, ...]]) -> None:
        """Bind v to forward slot i (backward 0) or seed slot i (backward 1); `shape`: the
        shape to give it when v's differs only by axes of size 1."""
        cls = self.__class__
        names = cls._output_names if backward else cls._grad_input_names
        name = names[i]
        if v is None:
            if not backward and i < self._n_in:
                raise ValueError("input %r is None" % name)
            L.check(L.og_instance_bind(self._inst, backward, i, None))
            self._record(backward, i, None, None, None)
            return
        dt = None if backward else cls._input_dtypes.get(name)
        a = v if type(v) is _ndarray else to_numpy(v, dt)
        code = L._NP2OG.get(a.dtype)
        if code is None:
            raise TypeError("onnxgrad cannot take numpy arrays of dtype %s (%s %r)"
                            % (a.dtype, "gradient of output" if backward else "input", name))
        if not a.flags.c_contiguous or not a.dtype.isnative:
            a = L.contiguous(a)
        dims = _nd_shape(a)
        if shape is not None and dims != shape and _same_but_ones(dims, shape):
            dims = shape
        rank = len(dims)
        if rank > 8:
            raise ValueError("onnxgrad handles tensors of rank 8 at most, got shape %s" % (dims,))
        if a.size:
            try:  # the fastest way to the data pointer; fails unless writable
                ptr = _addressof(_c_char_from_buffer(a))
            except (TypeError, ValueError, BufferError):
                ptr = a.__array_interface__["data"][0]
        else:
            ptr = None
        tmp = self._tmp
        L.check(L.og_tensor_wrap(code, rank, L._DIMS[rank](*dims), ptr, a.nbytes, None, tmp))
        L.check(L.og_instance_bind(self._inst, backward, i, tmp[0]), name)
        tmp[0] = None
        self._record(backward, i, v, _nd_shape(v) if isinstance(v, _ndarray) else None, a)

    def _record(self, backward: int, i: int, v: Any, shape: Any, a: Any) -> None:
        # arrays are recognized by identity and shape; other objects (OrtValues, torch
        # tensors: their storage may change) are bound again at every call
        objs, shapes, keep = ((self._sobjs, self._sshapes, self._skeep) if backward else
                              (self._objs, self._shapes, self._keep))
        objs[i] = v if (shape is not None or v is None) else _Rebind
        shapes[i] = shape
        keep[i] = a
        if not backward:
            self._keep_t = None

    def _debug_check(self, values: Sequence[Any]) -> None:
        cls = self.__class__
        for n, v in zip(cls._grad_input_names, values):
            if v is None:
                continue
            v = to_numpy(v)
            want = cls._input_dtypes.get(n)
            if want is not None and v.dtype != want:
                raise ValueError("input %r must be %s, got %s" % (n, want, v.dtype))
            if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
                raise ValueError("input %r holds NaN or infinite values" % n)

    # -- forward and backward -------------------------------------------------------------

    def _forward_general(self, inputs: Inputs, training: bool = False) -> List[OrtValueArray]:
        """forward, for every call (binds what changed, logs, checks in debug mode)."""
        cls = self.__class__
        values = inputs if type(inputs) is list or type(inputs) is tuple else self._as_list(
            inputs)
        n = len(values)
        if n != self._n_bound:
            self._resize(n)
        logger = cls._logger
        if logger is not None:
            logger.debug("[%s.forward] (%dI) begin%s", cls.__name__, n,
                         " with gradient" if training else "")
        if cls._debug:
            self._debug_check(values)
        objs = self._objs
        # the same arrays as last time (the common case: the weights, a training loop's
        # state): an identity check and a shape check per array, no C call
        same = False
        if _all(_map(_is, values, objs)):
            try:
                same = _list(_map(_nd_shape, values)) == self._shapes[:n]
            except TypeError:  # a None (a weight not given) or an object that is no array
                same = False
        if not same:
            shapes = self._shapes
            n_in = self._n_in
            for i in range(n):
                v = values[i]
                if v is objs[i] and (v is None or _nd_shape(v) == shapes[i]):
                    continue
                self._bind(0, i, v, None if i < n_in else cls._weight_shapes[i - n_in])
        # the small outputs are copied into one block, a numpy array the results are views
        # of: the last call's block again when no result of it is alive any more
        blk = self._fblk
        if blk[0] is None or _getrefcount(blk[0]) > 2:
            blk = self._fblk = _new_block(self._fsize)
        block, base, end, cbase, csize = blk
        outs = self._tout
        info = self._info_out
        st = _forward_bound_raw(self._cinst, _TRUE if training else _FALSE, outs, info,
                                cbase, csize)
        if st:
            raise L.error(st)
        res = []
        shapes_out = []
        need = 0
        for j in range(self._n_out):
            b = j * 11
            rank = info[b + 2]
            shape = tuple(info[b + 3:b + 3 + rank])
            shapes_out.append(shape)
            ptr = info[b]
            a = (_OrtValueArray(shape, _DTYPES[info[b + 1]], block, ptr - base)
                 if base <= ptr < end else array_from_tensor(outs[j], ptr, info[b + 1], shape))
            nb = a.nbytes
            if nb <= _BLOCK_MAX:
                need += (nb + 63) & ~63
            res.append(a)
        if need != self._fsize:
            self._fsize = need
            self._fblk = _NO_BLOCK
        if training:
            keep = self._keep_t
            if keep is None:
                keep = self._keep_t = tuple(self._keep)
            self._pending.append((keep, shapes_out))
            self.saved_tensors_ = list(values)
        if logger is not None:
            logger.debug("[%s.forward] (%dI) end", cls.__name__, n)
        return res

    def _resize(self, n: int) -> None:
        """Check the number of inputs; unbind the weight slots past them (current values)."""
        cls = self.__class__
        if n > self._n_slots:
            raise ValueError(
                "forward got %d inputs; the model takes %d (%s) followed by at most %d "
                "trained weights (%s)" % (
                    n, self._n_in, ", ".join(cls._model_inputs),
                    len(cls._weight_names), ", ".join(cls._weight_names)))
        if n < self._n_in:
            raise ValueError("forward got %d inputs; input %s is missing (the model's "
                             "inputs: %s)" % (n, ", ".join(
                                 "'%s'" % m for m in cls._model_inputs[n:]),
                                              ", ".join(cls._model_inputs)))
        for i in range(n, self._n_slots):
            if self._keep[i] is not None or self._objs[i] is not None:
                self._bind(0, i, None, None)
        self._n_bound = n

    def _backward_general(self, grad_outputs: GradOutputs = None) -> List[OrtValueArray]:
        """backward, for every call (binds what changed, logs)."""
        cls = self.__class__
        n_out = self._n_out
        logger = cls._logger
        if logger is not None:
            logger.debug("[%s.backward] (%dI) begin", cls.__name__, n_out)
        pending = self._pending
        out_shapes = pending[-1][1] if pending else None
        sobjs, sshapes = self._sobjs, self._sshapes
        if grad_outputs is None:
            for j in range(n_out):
                if sobjs[j] is not None or self._skeep[j] is not None:
                    self._bind(1, j, None, None)
        else:
            t = type(grad_outputs)
            if t is not list and t is not tuple:
                if isinstance(grad_outputs, np.ndarray) or hasattr(grad_outputs, "__dlpack__") \
                        and not _is_vector(grad_outputs):
                    grad_outputs = (grad_outputs,)
                elif _is_vector(grad_outputs):
                    grad_outputs = [grad_outputs[i] for i in range(len(grad_outputs))]
                else:
                    grad_outputs = list(grad_outputs)
            if len(grad_outputs) != n_out:
                raise ValueError("backward needs %d output gradients (%s), got %d" % (
                    n_out, ", ".join(cls._output_names), len(grad_outputs)))
            same = False
            if _all(_map(_is, grad_outputs, sobjs)):
                try:
                    same = _list(_map(_nd_shape, grad_outputs)) == sshapes
                except TypeError:
                    same = False
            if not same:
                for j in range(n_out):
                    v = grad_outputs[j]
                    if v is sobjs[j] and (v is None or _nd_shape(v) == sshapes[j]):
                        continue
                    self._bind(1, j, v, out_shapes[j] if out_shapes else None)
        grads = self._tgrads
        info = self._info_grads
        blk = self._bblk  # the small gradients: as forward's outputs
        if blk[0] is None or _getrefcount(blk[0]) > 2:
            blk = self._bblk = _new_block(self._bsize)
        block, base, end, cbase, csize = blk
        st = _backward_bound_raw(self._cinst, grads, info, cbase, csize)
        if st:
            raise L.error(st)
        if pending:
            pending.pop()
        res = []
        need = 0
        for k, meta in enumerate(cls._grad_meta):
            b = k * 11
            ptr = info[b]
            if meta is None:
                rank = info[b + 2]
                shape = tuple(info[b + 3:b + 3 + rank])
                code = info[b + 1]
                if base <= ptr < end:
                    a = _OrtValueArray(shape, _DTYPES[code], block, ptr - base)
                else:
                    a = array_from_tensor(grads[k], ptr, code, shape)
                nb = a.nbytes
            else:
                shape, code, dt, nb = meta
                if base <= ptr < end:
                    a = _OrtValueArray(shape, dt, block, ptr - base)
                else:
                    a = array_from_tensor(grads[k], ptr, code, shape)
            if nb <= _BLOCK_MAX:
                need += (nb + 63) & ~63
            res.append(a)
        if need != self._bsize:
            self._bsize = need
            self._bblk = _NO_BLOCK
        if logger is not None:
            logger.debug("[%s.backward] (%dI) end, got %r gradients", cls.__name__, n_out,
                         len(res))
        return res

    def __repr__(self) -> str:
        return "%s(pending=%d)" % (self.__class__.__name__, self.pending)


class _RebindMarker:
    """Stands in the bound-object list for objects that are bound again at every call."""


_Rebind = _RebindMarker()
