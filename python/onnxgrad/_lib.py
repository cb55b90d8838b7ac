"""ctypes bindings to libonnxgrad (include/onnxgrad.h) and the numpy <-> og_tensor bridge.

The shared library is looked up next to this file (``pip install`` copies it there); the
environment variable ``ONNXGRAD_LIBRARY`` may name another copy (a developer's build tree).
Everything here is private to the package: the public classes live in ``gradient.py`` and
``estimator.py``.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_double, c_int, c_int64,
                    c_size_t, c_uint64, c_void_p)
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["lib", "check", "OnnxgradError", "OnnxgradValueError", "OnnxgradRuntimeError"]

# ---------------------------------------------------------------------------------------
# status codes and exceptions
# ---------------------------------------------------------------------------------------

OG_OK = 0
OG_ERR_INVALID_ARG = 1
OG_ERR_NOMEM = 2
OG_ERR_IO = 3
OG_ERR_PARSE = 4
OG_ERR_MODEL = 5
OG_ERR_UNSUPPORTED = 6
OG_ERR_SHAPE = 7
OG_ERR_TYPE = 8
OG_ERR_RUNTIME = 9
OG_ERR_INTERNAL = 10
OG_ERR_LIMIT = 11
OG_ERR_BUSY = 12

#: status codes reported as ValueError (bad arguments); every other one is a RuntimeError
_VALUE_ERRORS = frozenset((OG_ERR_INVALID_ARG, OG_ERR_SHAPE, OG_ERR_TYPE))


class OnnxgradError(Exception):
    """Base of the errors raised when a C call fails.

    ``status`` is the C status code (an int, ``OG_ERR_*``), ``status_name`` its name
    (``"OG_ERR_SHAPE"``), and the message is the library's ``og_last_error()``."""

    status: int
    status_name: str


class OnnxgradValueError(OnnxgradError, ValueError):
    """A C call refused its arguments (OG_ERR_INVALID_ARG, OG_ERR_SHAPE, OG_ERR_TYPE)."""


class OnnxgradRuntimeError(OnnxgradError, RuntimeError):
    """Any other C failure (I/O, parse, unsupported op, runtime error, out of memory)."""


# ---------------------------------------------------------------------------------------
# loading the library
# ---------------------------------------------------------------------------------------


def _find_library() -> str:
    env = os.environ.get("ONNXGRAD_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libonnxgrad.so", "libonnxgrad.so.0", "libonnxgrad.dylib"):
        path = os.path.join(here, name)
        if os.path.exists(path):
            return path
    raise ImportError(
        "onnxgrad: the shared library libonnxgrad.so is not inside the package (%s); "
        "install the package with `pip install ./python` from the repository, which builds "
        "it, or set ONNXGRAD_LIBRARY to a built libonnxgrad.so" % here)


lib = ctypes.CDLL(_find_library())

# og_status is an enum: an int in the C ABI
_status = c_int
og_log_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
og_fit_callback = None  # set below, after og_fit_event


def _fn(name: str, restype: Any, *argtypes: Any) -> Any:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def _opt_fn(name: str, restype: Any, *argtypes: Any) -> Any:
    """A function that may be missing from an older library build: None then."""
    try:
        return _fn(name, restype, *argtypes)
    except AttributeError:
        return None


PP = POINTER(c_void_p)
CHARPP = POINTER(c_char_p)

og_status_name = _fn("og_status_name", c_char_p, c_int)
og_last_error = _fn("og_last_error", c_char_p)
og_dtype_name = _fn("og_dtype_name", c_char_p, c_int)

# tensors
og_tensor_create = _fn("og_tensor_create", _status, c_int, c_int, POINTER(c_int64), c_void_p, PP)
og_tensor_from_data = _fn("og_tensor_from_data", _status, c_int, c_int, POINTER(c_int64), c_void_p,
                          c_size_t, c_void_p, PP)
# the out parameter as c_void_p: it takes byref(array, offset), an element of a ctypes array
og_tensor_wrap = _fn("og_tensor_wrap", _status, c_int, c_int, POINTER(c_int64), c_void_p, c_size_t,
                     c_void_p, c_void_p)
og_tensor_free = _fn("og_tensor_free", None, c_void_p)
og_tensor_dtype = _fn("og_tensor_dtype", c_int, c_void_p)
og_tensor_rank = _fn("og_tensor_rank", c_int, c_void_p)
og_tensor_dims = _fn("og_tensor_dims", POINTER(c_int64), c_void_p)
og_tensor_nbytes = _fn("og_tensor_nbytes", c_size_t, c_void_p)
og_tensor_data = _fn("og_tensor_data", c_void_p, c_void_p)
og_tensor_cdata = _fn("og_tensor_cdata", c_void_p, c_void_p)
# 0 a tensor, 1 a sequence, 2 a map, 3 an optional
og_tensor_kind = _opt_fn("og_tensor_kind", c_int, c_void_p)
_KIND_NAMES = {1: "a sequence", 2: "a map", 3: "an optional"}
og_tensor_numel = _fn("og_tensor_numel", c_int64, c_void_p)
og_tensor_string = _opt_fn("og_tensor_string", c_char_p, c_void_p, c_int64)
og_sequence_length = _opt_fn("og_sequence_length", c_int64, c_void_p)
og_sequence_item = _opt_fn("og_sequence_item", c_void_p, c_void_p, c_int64)
og_map_size = _opt_fn("og_map_size", c_int64, c_void_p)
og_map_keys = _opt_fn("og_map_keys", c_void_p, c_void_p)
og_map_value = _opt_fn("og_map_value", c_void_p, c_void_p, c_int64)
og_optional_value = _opt_fn("og_optional_value", c_void_p, c_void_p)
OG_STRING = 8


def not_a_tensor(t: int) -> Optional[str]:
    """'a sequence', 'a map', 'an optional' when og_tensor t holds no tensor, else None."""
    if og_tensor_kind is None or not t:
        return None
    return _KIND_NAMES.get(og_tensor_kind(t))


class og_load_options(Structure):
    _fields_ = [("allocator", c_void_p), ("base_dir", c_char_p), ("max_depth", c_int),
                ("max_opsets", c_int), ("max_nodes", c_int64), ("max_values", c_int64),
                ("max_attributes", c_int64), ("max_string_bytes", c_int64),
                ("max_model_bytes", c_int64), ("max_external_bytes", c_int64)]


# models
og_model_load_file = _fn("og_model_load_file", _status, c_char_p, POINTER(og_load_options), PP)
og_model_load_buffer = _fn("og_model_load_buffer", _status, c_void_p, c_size_t,
                           POINTER(og_load_options), PP)
og_model_free = _fn("og_model_free", None, c_void_p)
og_model_save_buffer = _fn("og_model_save_buffer", _status, c_void_p, PP, POINTER(c_size_t))
og_model_buffer_free = _fn("og_model_buffer_free", None, c_void_p, c_void_p)
og_model_save_file = _fn("og_model_save_file", _status, c_void_p, c_char_p)
og_model_input_count = _fn("og_model_input_count", c_int, c_void_p)
og_model_output_count = _fn("og_model_output_count", c_int, c_void_p)
og_model_input_name = _fn("og_model_input_name", c_char_p, c_void_p, c_int)
og_model_output_name = _fn("og_model_output_name", c_char_p, c_void_p, c_int)
og_model_input_info = _fn("og_model_input_info", _status, c_void_p, c_int, POINTER(c_int),
                          POINTER(c_int), POINTER(c_int64), CHARPP)
og_model_output_info = _fn("og_model_output_info", _status, c_void_p, c_int, POINTER(c_int),
                           POINTER(c_int), POINTER(c_int64), CHARPP)
og_model_initializer_count = _fn("og_model_initializer_count", c_int, c_void_p)
og_model_initializer_name = _fn("og_model_initializer_name", c_char_p, c_void_p, c_int)
og_model_initializer = _fn("og_model_initializer", c_void_p, c_void_p, c_int)
og_model_opset_count = _fn("og_model_opset_count", c_int, c_void_p)
og_model_opset = _fn("og_model_opset", _status, c_void_p, c_int, CHARPP, POINTER(c_int64))


class og_grad_options(Structure):
    _fields_ = [("weights", CHARPP), ("n_weights", c_int),
                ("inputs", CHARPP), ("n_inputs", c_int),
                ("outputs", CHARPP), ("n_outputs", c_int),
                ("threads", c_int), ("allocator", c_void_p), ("log", og_log_fn),
                ("device", c_int), ("device_index", c_int), ("log_user", c_void_p),
                ("debug", c_int), ("seed", c_uint64),
                ("max_memory", c_int64)]


OG_DEVICE_CPU = 0
OG_DEVICE_CUDA = 1

# gradients
og_grad_create = _fn("og_grad_create", _status, c_void_p, POINTER(og_grad_options), PP)
og_grad_free = _fn("og_grad_free", None, c_void_p)
og_grad_output_count = _fn("og_grad_output_count", c_int, c_void_p)
og_grad_output_name = _fn("og_grad_output_name", c_char_p, c_void_p, c_int)
og_grad_input_count = _fn("og_grad_input_count", c_int, c_void_p)
og_grad_input_name = _fn("og_grad_input_name", c_char_p, c_void_p, c_int)
og_grad_weight_count = _fn("og_grad_weight_count", c_int, c_void_p)
og_grad_weight_name = _fn("og_grad_weight_name", c_char_p, c_void_p, c_int)
og_grad_get_weight = _fn("og_grad_get_weight", _status, c_void_p, c_char_p, PP)
og_grad_set_weight = _fn("og_grad_set_weight", _status, c_void_p, c_char_p, c_void_p)
og_grad_training_model = _fn("og_grad_training_model", c_void_p, c_void_p)
og_grad_eval_model = _fn("og_grad_eval_model", c_void_p, c_void_p)
og_grad_save_buffer = _fn("og_grad_save_buffer", _status, c_void_p, PP, POINTER(c_size_t))
og_grad_buffer_free = _fn("og_grad_buffer_free", None, c_void_p, c_void_p)
og_grad_load_buffer = _fn("og_grad_load_buffer", _status, c_void_p, c_size_t,
                          POINTER(og_grad_options), PP)
og_grad_new_instance = _fn("og_grad_new_instance", _status, c_void_p, PP)
og_instance_free = _fn("og_instance_free", None, c_void_p)
og_instance_forward = _fn("og_instance_forward", _status, c_void_p, CHARPP, PP, c_int, c_int, PP)
og_instance_backward = _fn("og_instance_backward", _status, c_void_p, PP, PP)
og_instance_pending = _fn("og_instance_pending", c_int, c_void_p)
og_instance_saved_bytes = _fn("og_instance_saved_bytes", c_size_t, c_void_p)
# bound calls (one C call per forward or backward; tensors bound once per slot)
og_instance_slot_count = _fn("og_instance_slot_count", c_int, c_void_p)
og_instance_slot_name = _fn("og_instance_slot_name", c_char_p, c_void_p, c_int)
og_instance_bind = _fn("og_instance_bind", _status, c_void_p, c_int, c_int, c_void_p)
og_instance_forward_bound = _fn("og_instance_forward_bound", _status, c_void_p, c_int, PP,
                                c_void_p, c_void_p, c_size_t)
og_instance_backward_bound = _fn("og_instance_backward_bound", _status, c_void_p, PP, c_void_p,
                                 c_void_p, c_size_t)
#: results up to this size may be copied into a caller's block (OG_BLOCK_RESULT_MAX)
BLOCK_RESULT_MAX = 16384
og_tensor_info = _fn("og_tensor_info", None, PP, c_int, c_void_p)
#: int64 entries per tensor in og_tensor_info: data address, dtype, rank, OG_MAX_RANK dims
INFO_SIZE = 11


class og_session_options(Structure):
    _fields_ = [("threads", c_int), ("allocator", c_void_p), ("log", og_log_fn),
                ("log_user", c_void_p), ("debug", c_int), ("seed", c_uint64),
                ("max_memory", c_int64)]


og_session_create = _fn("og_session_create", _status, c_void_p, POINTER(og_session_options), PP)
og_session_free = _fn("og_session_free", None, c_void_p)
og_session_run_named = _fn("og_session_run_named", _status, c_void_p, CHARPP, PP, c_int, CHARPP,
                           c_int, PP)

# ---------------------------------------------------------------------------------------
# training API (losses, optimizers, datasets, trainer); its structs mirror onnxgrad.h
# ---------------------------------------------------------------------------------------


class og_loss_options(Structure):
    _fields_ = [("kind", c_int), ("reduction", c_int), ("output", c_char_p),
                ("target_name", c_char_p), ("loss_name", c_char_p),
                ("sample_weight_name", c_char_p), ("l1_ratio", c_double), ("delta", c_double),
                ("l1", c_double), ("l2", c_double), ("penalty_weights", CHARPP),
                ("n_penalty_weights", c_int)]


class og_optimizer_options(Structure):
    _fields_ = [("kind", c_int), ("lr", c_double), ("momentum", c_double), ("nesterov", c_int),
                ("beta1", c_double), ("beta2", c_double), ("eps", c_double),
                ("weight_decay", c_double), ("lr_decay", c_double),
                ("initial_accumulator", c_double), ("clip_norm", c_double), ("schedule", c_int),
                ("alpha", c_double), ("power_t", c_double), ("warmup_steps", c_int64),
                ("total_steps", c_int64), ("min_lr", c_double), ("step_size", c_int64),
                ("gamma", c_double)]


class og_trainer_options(Structure):
    _fields_ = [("weights", CHARPP), ("n_weights", c_int), ("loss", c_char_p), ("threads", c_int),
                ("allocator", c_void_p), ("log", og_log_fn), ("log_user", c_void_p),
                ("seed", c_uint64), ("max_memory", c_int64)]


class og_fit_event(Structure):
    _fields_ = [("epoch", c_int), ("step", c_int64), ("batch", c_int64), ("batches", c_int64),
                ("loss", c_double), ("train_loss", c_double), ("val_loss", c_double),
                ("samples_per_s", c_double), ("seconds_left", c_double), ("epoch_end", c_int)]


og_fit_callback = CFUNCTYPE(c_int, c_void_p, POINTER(og_fit_event))


class og_fit_options(Structure):
    _fields_ = [("epochs", c_int), ("batch_size", c_int64), ("no_shuffle", c_int),
                ("validation", c_void_p), ("feature_input", c_char_p), ("target_input", c_char_p),
                ("weight_input", c_char_p), ("checkpoint", c_char_p), ("resume", c_int),
                ("callback", og_fit_callback), ("user", c_void_p)]


og_loss_options_init = _opt_fn("og_loss_options_init", None, POINTER(og_loss_options), c_int)
og_model_add_loss = _opt_fn("og_model_add_loss", _status, c_void_p, POINTER(og_loss_options), PP)
og_optimizer_options_init = _opt_fn("og_optimizer_options_init", None,
                                    POINTER(og_optimizer_options), c_int)
og_optimizer_lr = _opt_fn("og_optimizer_lr", c_double, POINTER(og_optimizer_options), c_int64)
og_dataset_from_tensors = _opt_fn("og_dataset_from_tensors", _status, c_void_p, c_void_p, c_void_p,
                                  c_void_p, PP)
og_dataset_free = _opt_fn("og_dataset_free", None, c_void_p)
og_dataset_size = _opt_fn("og_dataset_size", c_int64, c_void_p)
og_trainer_create = _opt_fn("og_trainer_create", _status, c_void_p, POINTER(og_optimizer_options),
                            POINTER(og_trainer_options), PP)
og_trainer_free = _opt_fn("og_trainer_free", None, c_void_p)
og_trainer_step = _opt_fn("og_trainer_step", _status, c_void_p, CHARPP, PP, c_int,
                          POINTER(c_double))
og_trainer_evaluate = _opt_fn("og_trainer_evaluate", _status, c_void_p, CHARPP, PP, c_int,
                              POINTER(c_double))
og_trainer_step_count = _opt_fn("og_trainer_step_count", c_int64, c_void_p)
og_trainer_lr = _opt_fn("og_trainer_lr", c_double, c_void_p)
og_trainer_weight_count = _opt_fn("og_trainer_weight_count", c_int, c_void_p)
og_trainer_weight_name = _opt_fn("og_trainer_weight_name", c_char_p, c_void_p, c_int)
og_trainer_get_weight = _opt_fn("og_trainer_get_weight", _status, c_void_p, c_char_p, PP)
og_trainer_set_weight = _opt_fn("og_trainer_set_weight", _status, c_void_p, c_char_p, c_void_p)
og_trainer_export = _opt_fn("og_trainer_export", _status, c_void_p, c_void_p, PP)
og_trainer_fit = _opt_fn("og_trainer_fit", _status, c_void_p, c_void_p, POINTER(og_fit_options))


def has_trainer() -> bool:
    """True when the loaded library implements the training API that the estimator needs
    (losses, optimizers, trainer steps and export)."""
    return all(f is not None for f in (og_model_add_loss, og_loss_options_init,
                                       og_optimizer_options_init, og_trainer_create,
                                       og_trainer_step, og_trainer_evaluate, og_trainer_export,
                                       og_trainer_get_weight, og_trainer_set_weight,
                                       og_trainer_fit, og_dataset_from_tensors))


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------


def error(status: int, context: str = "") -> OnnxgradError:
    """The exception for a failed C call: ValueError or RuntimeError with og_last_error()."""
    msg = (og_last_error() or b"").decode("utf-8", "replace")
    name = (og_status_name(status) or b"?").decode()
    if not msg:
        msg = name
    if context:
        msg = "%s: %s" % (context, msg)
    cls = OnnxgradValueError if status in _VALUE_ERRORS else OnnxgradRuntimeError
    exc = cls(msg)
    exc.status = status
    exc.status_name = name
    return exc


def check(status: int, context: str = "") -> None:
    """Raise the matching exception when status is not OG_OK."""
    if status:
        raise error(status, context)


# ---------------------------------------------------------------------------------------
# dtypes and tensors
# ---------------------------------------------------------------------------------------

_OG2NP: Dict[int, np.dtype] = {
    1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8),
    4: np.dtype(np.uint16), 5: np.dtype(np.int16), 6: np.dtype(np.int32),
    7: np.dtype(np.int64), 9: np.dtype(np.bool_), 10: np.dtype(np.float16),
    11: np.dtype(np.float64), 12: np.dtype(np.uint32), 13: np.dtype(np.uint64),
    16: np.dtype(np.uint16),  # bfloat16: raw bits, numpy has no such type
}
_NP2OG: Dict[np.dtype, int] = {v: k for k, v in _OG2NP.items() if k != 16}
_TYPESTR: Dict[int, str] = {k: v.str for k, v in _OG2NP.items()}


def np_dtype(og_dtype: int) -> Optional[np.dtype]:
    """numpy dtype of an og_dtype code (None for undefined and strings)."""
    return _OG2NP.get(og_dtype)


def dtype_name(og_dtype: int) -> str:
    return og_dtype_name(og_dtype).decode()


class _Owner:
    """Owns one og_tensor and lends its buffer to numpy through __array_interface__: the
    array keeps this object as its base, so the tensor is freed with the last view."""

    __slots__ = ("__array_interface__", "_t")

    def __del__(self) -> None:
        t = self._t
        if t:
            self._t = None
            og_tensor_free(t)


def to_python(t: int) -> Any:
    """A copy of the value t (not owned) as onnxruntime gives it: a numpy array for a
    tensor (strings: an object array of str), a list for a sequence, a dict for a map (a
    rank-0 value as a Python scalar, as ZipMap's probabilities come from onnxruntime), None
    or the value for an optional."""
    kind = og_tensor_kind(t) if og_tensor_kind is not None else 0
    if kind == 1:
        return [to_python(og_sequence_item(t, i)) for i in range(og_sequence_length(t))]
    if kind == 2:
        keys = to_python(og_map_keys(t)).tolist()
        values = [to_python(og_map_value(t, i)) for i in range(og_map_size(t))]
        return {k: (v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v)
                for k, v in zip(keys, values)}
    if kind == 3:
        v = og_optional_value(t)
        return to_python(v) if v else None
    if og_tensor_dtype(t) == OG_STRING:
        shape = tuple(og_tensor_dims(t)[:og_tensor_rank(t)])
        items = [og_tensor_string(t, i).decode("utf-8") for i in range(og_tensor_numel(t))]
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape(shape)
    return copy_array(t)


def take_array(t: int) -> Any:
    """A numpy array over og_tensor t, zero-copy; t is freed when the array is collected.
    Takes ownership of t (freed right away on failure).  A value that numpy cannot view (a
    string tensor, a sequence, a map, an optional) comes back copied by to_python."""
    code = og_tensor_dtype(t)
    if code == OG_STRING or not_a_tensor(t):
        try:
            return to_python(t)
        finally:
            og_tensor_free(t)
    owner = _Owner()
    owner._t = t
    typestr = _TYPESTR.get(code)
    if typestr is None:
        raise OnnxgradRuntimeError("onnxgrad returned a tensor of dtype %s, which numpy cannot hold"
                                   % dtype_name(code))
    shape = tuple(og_tensor_dims(t)[:og_tensor_rank(t)])
    ptr = og_tensor_data(t)
    if not ptr:  # an empty tensor: numpy wants a valid pointer
        return np.empty(shape, _OG2NP[code])
    owner.__array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                 "data": (ptr, False)}
    return np.asarray(owner)


def take_arrays(ts: Any, n: int) -> List[Any]:
    """take_array of ts[0..n-1] (a ctypes array of og_tensor pointers, all owned): the
    tensors' addresses, dtypes and shapes come from one og_tensor_info call."""
    info = (c_int64 * (INFO_SIZE * n + 1))()
    og_tensor_info(ts, n, info)
    res = []
    for j in range(n):
        b = j * INFO_SIZE
        typestr = _TYPESTR.get(info[b + 1]) if info[b] else None
        if typestr is None:  # a string, an empty tensor, a sequence, a map, an optional
            res.append(take_array(ts[j]))
            continue
        owner = _Owner()
        owner._t = ts[j]
        owner.__array_interface__ = {"shape": tuple(info[b + 3:b + 3 + info[b + 2]]),
                                     "typestr": typestr, "version": 3, "data": (info[b], False)}
        res.append(np.asarray(owner))
    return res


def take_array_as(t: int, shape: Tuple[int, ...], typestr: str, nbytes: int) -> np.ndarray:
    """take_array for a tensor whose dtype and shape are known in advance (a weight's
    gradient): two C calls instead of four; the size is still checked."""
    if og_tensor_nbytes(t) != nbytes or not nbytes:
        return take_array(t)
    owner = _Owner()
    owner._t = t
    owner.__array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                 "data": (og_tensor_data(t), False)}
    return np.asarray(owner)


def copy_array(t: int) -> np.ndarray:
    """A numpy copy of a tensor this code does not own (an initializer, a trained weight)."""
    code = og_tensor_dtype(t)
    dt = _OG2NP.get(code)
    if dt is None:
        raise OnnxgradRuntimeError("tensor of dtype %s cannot become a numpy array"
                                   % dtype_name(code))
    rank = og_tensor_rank(t)
    dims = og_tensor_dims(t)
    out = np.empty(tuple(dims[i] for i in range(rank)), dt)
    n = og_tensor_nbytes(t)
    if n:
        ctypes.memmove(out.ctypes.data, og_tensor_cdata(t), n)
    return out


_DIMS = [c_int64 * r for r in range(9)]


def contiguous(a: Any, dtype: Optional[np.dtype] = None) -> np.ndarray:
    """a as a C-contiguous, native-order ndarray (no copy when it already is one).  Objects
    that are not arrays are converted to `dtype` (the declared type) when it is known."""
    if not isinstance(a, np.ndarray):
        a = np.asarray(a, dtype=dtype)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a


_PTR = ctypes.sizeof(c_void_p)
# ctypes dims arrays by shape (read-only to C): building one costs more than the lookup
_dims_cache: Dict[Tuple[int, ...], Any] = {}
_addressof = ctypes.addressof
_c_char_from_buffer = ctypes.c_char.from_buffer


def wrap_to(a: Any, dtype: Optional[np.dtype], arr: Any, i: int) -> np.ndarray:
    """Wrap array a (no copy when it is a C-contiguous, native-order ndarray of a type
    onnxgrad knows; else converted first, to `dtype` for non-arrays) into arr[i], a ctypes
    array of og_tensor pointers.  Returns the ndarray the tensor reads, which must stay alive
    until the tensor is freed; arr[i] is NULL when this raises."""
    if type(a) is np.ndarray:
        code = _NP2OG.get(a.dtype)
        if code is not None:
            try:  # the fastest way to the data pointer; fails unless writable and C-contiguous
                ptr = _addressof(_c_char_from_buffer(a))
            except (TypeError, ValueError, BufferError):
                ptr = a.ctypes.data if a.flags.c_contiguous else None  # read-only, or empty
            if ptr is not None:
                rank = a.ndim
                if rank > 8:
                    raise ValueError("onnxgrad handles tensors of rank 8 at most, got shape %s"
                                     % (a.shape,))
                shape = a.shape
                dims = _dims_cache.get(shape)
                if dims is None:
                    dims = _DIMS[rank](*shape)
                    if len(_dims_cache) < 256:
                        _dims_cache[shape] = dims
                st = og_tensor_wrap(code, rank, dims, ptr, a.nbytes, None, byref(arr, i * _PTR))
                if st:
                    raise error(st)
                return a
    a = contiguous(a, dtype)
    code = _NP2OG.get(a.dtype)
    if code is None:
        raise TypeError("onnxgrad cannot take numpy arrays of dtype %s" % a.dtype)
    rank = a.ndim
    if rank > 8:
        raise ValueError("onnxgrad handles tensors of rank 8 at most, got shape %s" % (a.shape,))
    check(og_tensor_wrap(code, rank, _DIMS[rank](*a.shape), a.ctypes.data, a.nbytes, None,
                         byref(arr, i * _PTR)))
    return a


def wrap(a: Any, dtype: Optional[np.dtype] = None) -> Tuple[int, np.ndarray]:
    """(new og_tensor, the array it wraps): see wrap_to; the caller frees the tensor."""
    arr = (c_void_p * 1)()
    kept = wrap_to(a, dtype, arr, 0)
    return arr[0], kept


def names_array(names: Sequence[str]) -> Any:
    """A NULL-terminated char* array of UTF-8 names (keep it alive while C may read it)."""
    arr = (c_char_p * (len(names) + 1))()
    for i, n in enumerate(names):
        arr[i] = n.encode("utf-8")
    return arr


def decode(s: Optional[bytes]) -> Optional[str]:
    return None if s is None else s.decode("utf-8")


# ---------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------


class Model:
    """An og_model handle, freed with the object."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    @staticmethod
    def load(model: Any) -> "Model":
        """Load an onnx.ModelProto (anything with SerializeToString), bytes-like, or a path."""
        out = c_void_p()
        if hasattr(model, "SerializeToString"):
            model = model.SerializeToString()
        if isinstance(model, (bytes, bytearray, memoryview)):
            buf = bytes(model)
            check(og_model_load_buffer(buf, len(buf), None, byref(out)))
        elif isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if not os.path.exists(path):
                raise FileNotFoundError("model file %r does not exist" % path)
            check(og_model_load_file(path.encode(), None, byref(out)))
        else:
            raise TypeError("onnx_model must be an onnx.ModelProto, bytes or a path, got %s"
                            % type(model).__name__)
        return Model(out.value)

    def release(self) -> int:
        """Hand the og_model over to another owner (which frees it): this object lets go."""
        p, self.ptr = self.ptr, None
        return p

    def __del__(self) -> None:
        p = getattr(self, "ptr", None)
        if p:
            self.ptr = None
            og_model_free(p)


def model_bytes(model_ptr: int) -> bytes:
    """Serialize a model (owned elsewhere) to ONNX bytes."""
    data = c_void_p()
    size = c_size_t()
    check(og_model_save_buffer(model_ptr, byref(data), byref(size)))
    try:
        return ctypes.string_at(data.value, size.value)
    finally:
        og_model_buffer_free(model_ptr, data)


def model_inputs(model_ptr: int) -> List[Tuple[str, Optional[np.dtype]]]:
    """(name, numpy dtype or None) of every graph input that is not an initializer."""
    res = []
    dt, rank = c_int(), c_int()
    dims = (c_int64 * 8)()
    for i in range(og_model_input_count(model_ptr)):
        name = decode(og_model_input_name(model_ptr, i))
        check(og_model_input_info(model_ptr, i, byref(dt), byref(rank), dims, None))
        res.append((name, np_dtype(dt.value)))
    return res


def model_outputs(model_ptr: int) -> List[str]:
    return [decode(og_model_output_name(model_ptr, i))
            for i in range(og_model_output_count(model_ptr))]


def model_initializer(model_ptr: int, name: str) -> Optional[np.ndarray]:
    """A copy of initializer `name` of a model, None when it has none of that name."""
    for i in range(og_model_initializer_count(model_ptr)):
        if decode(og_model_initializer_name(model_ptr, i)) == name:
            return copy_array(og_model_initializer(model_ptr, i))
    return None


def model_initializer_names(model_ptr: int) -> List[str]:
    return [decode(og_model_initializer_name(model_ptr, i))
            for i in range(og_model_initializer_count(model_ptr))]


def model_io_info(model_ptr: int, i: int, output: bool = False) -> Tuple[Optional[np.dtype], int,
                                                                         List[int]]:
    """(numpy dtype, rank, dims with -1 for unknown) of graph input or output i."""
    dt, rank = c_int(), c_int()
    dims = (c_int64 * 8)()
    f = og_model_output_info if output else og_model_input_info
    check(f(model_ptr, i, byref(dt), byref(rank), dims, None))
    return np_dtype(dt.value), rank.value, list(dims[:max(rank.value, 0)])


class Session:
    """An og_session that owns its model (taken from `model`): run({name: array}, outputs).
    One finalizer frees both, session first: Python's garbage collector finalizes the
    objects of a dead reference cycle in no fixed order, so a separate model object could
    go first."""

    def __init__(self, model: Model, threads: int = 0) -> None:
        self.ptr = None
        self._names: Dict[Tuple[Tuple[str, ...], Tuple[str, ...]], Any] = {}
        opts = og_session_options()
        opts.threads = threads
        out = c_void_p()
        check(og_session_create(model.ptr, byref(opts), byref(out)))
        self.ptr = out.value
        self.model_ptr = model.release()
        self.inputs = dict(model_inputs(self.model_ptr))

    def run(self, feeds: Dict[str, Any], outputs: Sequence[str]) -> List[np.ndarray]:
        names = tuple(feeds)
        outputs = tuple(outputs)
        # the C name arrays of a (feeds, outputs) pair, made once: a run's own Python work
        # was as long as a small model's run (a Relu: 9.5 us a call against 0.8 in C)
        key = (names, outputs)
        c_names = self._names.get(key)
        if c_names is None:
            c_names = (names_array(names), names_array(outputs),
                       c_void_p * (len(names) + 1), c_void_p * (len(outputs) + 1))
            if len(self._names) < 64:
                self._names[key] = c_names
        tensors = c_names[2]()
        outs = c_names[3]()
        keep = []
        try:
            for i, n in enumerate(names):
                keep.append(wrap_to(feeds[n], self.inputs.get(n), tensors, i))
            st = og_session_run_named(self.ptr, c_names[0], tensors, len(names), c_names[1],
                                      len(outputs), outs)
        finally:
            for i in range(len(names)):
                if tensors[i]:
                    og_tensor_free(tensors[i])
        check(st)
        return take_arrays(outs, len(outputs))

    def __del__(self) -> None:
        p = getattr(self, "ptr", None)
        if p:
            self.ptr = None
            og_session_free(p)
        m = getattr(self, "model_ptr", None)
        if m:
            self.model_ptr = None
            og_model_free(m)
