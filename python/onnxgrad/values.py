"""What forward and backward take and return.

Results are :class:`OrtValueArray`: numpy arrays over the library's buffers (no copy) that also
answer the methods of onnxruntime's ``OrtValue`` which onnxcustom's users called on what its
``forward`` and ``backward`` returned (``numpy()``, ``shape()``, ``data_ptr()``, ...), so that
code written for onnxcustom and numpy code both keep working.

Inputs may be numpy arrays, :class:`OrtValueArray`, onnxruntime ``OrtValue`` (the Python
class or the C one), PyTorch tensors (on the CPU), any object exporting DLPack on the CPU,
or anything numpy can turn into an array.  None of these is read through a copy when its
memory is C-contiguous and of a type onnxgrad knows.

:class:`Device` stands where onnxcustom held an onnxruntime ``OrtDevice``.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

import numpy as np

from . import _lib as L

__all__ = ["OrtValueArray", "Device", "get_device", "device_to_string", "to_numpy"]

_ONNX_TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
                    7: "int64", 9: "bool", 10: "float16", 11: "double", 12: "uint32",
                    13: "uint64", 16: "bfloat16"}

_nd_shape = np.ndarray.shape.__get__
_nd_set_shape = np.ndarray.shape.__set__


class _Shape(tuple):
    """A shape tuple that may also be called, as onnxruntime's ``OrtValue.shape()`` was:
    ``a.shape`` is a tuple, ``a.shape()`` the list of dims."""

    __slots__ = ()

    def __call__(self) -> list:
        return list(self)


class OrtValueArray(np.ndarray):
    """A numpy array that also offers onnxruntime ``OrtValue``'s methods.

    forward and backward return these: they are numpy arrays (over onnxgrad's buffers, no
    copy) for numpy code, and code written for onnxcustom, which received OrtValues, keeps
    calling ``.numpy()``, ``.shape()``, ``.data_ptr()``, ``.element_type()``,
    ``.data_type()``, ``.device_name()`` on them.  ``shape`` is a tuple that may also be
    called."""

    def _get_shape(self) -> _Shape:
        return _Shape(_nd_shape(self))

    def _set_shape(self, value: Any) -> None:
        _nd_set_shape(self, value)

    shape = property(_get_shape, _set_shape, doc="the dims: a tuple, callable for a list")

    def numpy(self) -> np.ndarray:
        """The data as a plain numpy array (a view, no copy)."""
        return self.view(np.ndarray)

    def data_ptr(self) -> int:
        """Address of the first element."""
        return self.__array_interface__["data"][0]

    def device_name(self) -> str:
        """``'Cpu'``: onnxgrad computes on the CPU."""
        return "Cpu"

    def element_type(self) -> int:
        """The ONNX element type (``TensorProto.FLOAT`` is 1)."""
        code = L._NP2OG.get(self.dtype)
        if code is None:
            raise TypeError("dtype %s has no ONNX element type" % self.dtype)
        return code

    proto_type = element_type

    def data_type(self) -> str:
        """``'tensor(float)'``, ``'tensor(int64)'``, ... as onnxruntime names it."""
        return "tensor(%s)" % _ONNX_TYPE_NAMES[self.element_type()]

    def has_value(self) -> bool:
        return True

    def is_tensor(self) -> bool:
        return True

    def is_tensor_sequence(self) -> bool:
        return False

    def is_sparse_tensor(self) -> bool:
        return False

    def tensor_size_in_bytes(self) -> int:
        return int(self.nbytes)

    def update_inplace(self, value: Any) -> None:
        """Copy `value` (same shape) into this array."""
        np.copyto(self.view(np.ndarray), np.asarray(value))

    def to_dlpack(self) -> Any:
        return self.__dlpack__()

    @property
    def _ortvalue(self) -> "OrtValueArray":
        # onnxruntime's Python OrtValue wraps a C one under this name
        return self


# ---------------------------------------------------------------------------------------
# results: numpy arrays over og_tensor buffers, freed with the last array reading them
# ---------------------------------------------------------------------------------------


class _TensorMemory(ctypes.c_char * (1 << 40)):
    """The memory of one og_tensor, exposed through the buffer protocol (the ctypes array
    type is sized for the largest tensor; only the tensor's bytes are ever read).  It is
    the base of the numpy arrays over the tensor, and frees the tensor with the last one:
    creating a numpy array this way costs half as much as through __array_interface__."""

    def __del__(self) -> None:
        t = self.__dict__.pop("t", None)
        if t:
            L.og_tensor_free(t)


_from_address = _TensorMemory.from_address
_DTYPES = {k: v for k, v in L._OG2NP.items()}


def array_from_tensor(t: int, ptr: int, code: int, shape: Tuple[int, ...],
                      cls: type = OrtValueArray) -> np.ndarray:
    """A `cls` array over og_tensor t (data at ptr, og dtype code, shape), taking ownership
    of t: it is freed when the last array over its memory is collected (right away when it
    has no elements or a dtype numpy cannot hold)."""
    dt = _DTYPES.get(code)
    kind = L.not_a_tensor(t) if not ptr else None
    if dt is None or kind:
        L.og_tensor_free(t)
        raise L.OnnxgradRuntimeError(
            "onnxgrad returned %s, which numpy cannot hold" % (
                kind or "a tensor of dtype %s" % L.dtype_name(code)))
    if not ptr:
        L.og_tensor_free(t)
        return np.empty(shape, dt).view(cls)
    mem = _from_address(ptr)
    mem.t = t
    return cls(shape, dt, mem)


# ---------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------


def _is_torch(v: Any) -> bool:
    mod = type(v).__module__
    return mod.startswith("torch") and hasattr(v, "detach") and hasattr(v, "is_contiguous")


def _is_ortvalue(v: Any) -> bool:
    return (hasattr(v, "data_ptr") and hasattr(v, "element_type") and hasattr(v, "device_name")
            and callable(getattr(v, "shape", None)))


def to_numpy(v: Any, dtype: Optional[np.dtype] = None) -> np.ndarray:
    """`v` as a numpy array reading the same memory when it can: numpy arrays as they are,
    PyTorch tensors through ``.numpy()`` (detached, on the CPU), onnxruntime OrtValues and
    DLPack objects through DLPack, array-likes through numpy (converted to `dtype`, the
    declared type, when they are not arrays already).  Values on another device than the CPU
    are refused with a ValueError naming it."""
    if isinstance(v, np.ndarray):
        return v
    if _is_torch(v):
        dev = getattr(getattr(v, "device", None), "type", "cpu")
        if dev != "cpu":
            raise ValueError("onnxgrad computes on the CPU; got a torch tensor on %r" % (dev,))
        return v.detach().contiguous().numpy()
    if _is_ortvalue(v):
        if v.device_name().lower() != "cpu":
            raise ValueError("onnxgrad computes on the CPU; got an OrtValue on %r"
                             % v.device_name())
        return _ortvalue_as_numpy(v)
    if hasattr(v, "__dlpack__"):
        try:
            return np.from_dlpack(v)
        except (TypeError, RuntimeError, BufferError, ValueError) as e:
            raise ValueError("onnxgrad reads DLPack tensors on the CPU only: %s (%s)"
                             % (e, type(v).__name__)) from e
    return np.asarray(v, dtype=dtype)


class _OrtMemory(ctypes.c_char * (1 << 40)):
    """The memory of an onnxruntime OrtValue (kept alive as attribute `v`)."""


def _ortvalue_as_numpy(v: Any) -> np.ndarray:
    """A numpy array over an OrtValue's memory (no copy), which keeps the OrtValue alive."""
    code = v.element_type()
    dt = _DTYPES.get(code)
    if dt is None or code == 16:
        return np.asarray(v.numpy())
    shape = tuple(v.shape())
    ptr = v.data_ptr()
    if not ptr or 0 in shape:
        return np.empty(shape, dt)
    mem = _OrtMemory.from_address(ptr)
    mem.v = v
    return np.ndarray(shape, dt, mem)


# ---------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------


class Device:
    """A device (``'cpu'``, ``'cuda:N'``), where onnxcustom kept an onnxruntime
    ``OrtDevice``: ``device_type()`` (``Device.cpu()`` or ``Device.cuda()``),
    ``device_id()``, ``str(d)`` (``'cpu'``, ``'cuda:1'``).  onnxgrad computes on the CPU:
    training on another device fails with a clear error."""

    _CPU = 0
    _CUDA = 1

    def __init__(self, device_type: int = 0, memory: int = 0, device_id: int = 0) -> None:
        self._type = int(device_type)
        self._memory = int(memory)
        self._id = int(device_id)

    @staticmethod
    def cpu() -> int:
        return Device._CPU

    @staticmethod
    def cuda() -> int:
        return Device._CUDA

    @staticmethod
    def default_memory() -> int:
        return 0

    def device_type(self) -> int:
        return self._type

    def device_id(self) -> int:
        return self._id

    def device_mem_type(self) -> int:
        return self._memory

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Device) and other._type == self._type
                and other._id == self._id)

    def __hash__(self) -> int:
        return hash((self._type, self._id))

    def __str__(self) -> str:
        return device_to_string(self)

    def __repr__(self) -> str:
        return "Device(%r)" % device_to_string(self)

    def __reduce__(self) -> Any:
        return (get_device, (device_to_string(self),))


def get_device(device: Any) -> Device:
    """A :class:`Device` from ``'cpu'``, ``'cuda'``, ``'cuda:N'``, ``'gpu'``, ``'gpu:N'``, a
    Device, an onnxruntime OrtDevice or a torch.device (onnxcustom's get_ort_device)."""
    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        d = device.lower()
        if d == "cpu":
            return Device(Device.cpu(), 0, 0)
        if d in ("gpu", "cuda", "cuda:0", "gpu:0"):
            return Device(Device.cuda(), 0, 0)
        for p in ("cuda:", "gpu:"):
            if d.startswith(p) and d[len(p):].isdigit():
                return Device(Device.cuda(), 0, int(d[len(p):]))
        raise ValueError("Unable to interpret string %r as a device ('cpu', 'cuda', 'cuda:N', "
                         "'gpu', 'gpu:N')." % device)
    if hasattr(device, "device_type") and hasattr(device, "device_id"):  # OrtDevice
        ty = device.device_type()
        kind = Device.cuda() if ty in (1, "cuda") else Device.cpu() if ty in (0, "cpu") else None
        if kind is None:
            raise ValueError("Unsupported device type %r." % (ty,))
        return Device(kind, 0, device.device_id())
    if hasattr(device, "type") and hasattr(device, "index"):  # torch.device
        return get_device(device.type if device.index is None
                          else "%s:%d" % (device.type, device.index))
    raise TypeError("Unable to interpret type %r, (%r) as a device." % (type(device), device))


def device_to_string(device: Any) -> str:
    """``'cpu'``, ``'cuda'``, ``'cuda:N'``: the opposite of :func:`get_device`."""
    device = get_device(device)
    name = "cpu" if device.device_type() == Device.cpu() else "cuda"
    return name if device.device_id() == 0 else "%s:%d" % (name, device.device_id())
