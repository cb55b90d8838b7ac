"""Data-parallel training under mpirun, through libonnxgrad_mpi (include/onnxgrad_mpi.h).

Run the same script on every rank::

    mpirun -np 4 python train.py

with, in ``train.py``::

    from onnxgrad import Trainer
    from onnxgrad.parallel import data_parallel

    est = data_parallel(Trainer(onx, batch_size=32, ...))
    est.fit(X, y)            # every rank passes the same X, y; batches of 4 x 32 in all

``fit`` is then collective: every rank trains on its part of each global batch (the ranks
times ``batch_size`` samples), the gradients are summed across ranks (C API:
``og_trainer_set_comm``), the losses it records are the global ones, and every rank ends
with the same weights.  A failure on one rank raises on every rank, naming that rank.  Only
``fit`` communicates: ``predict``, ``score`` and the rest stay local.  Writing files is the
script's business: ``if comm.rank == 0: ...``.

The library ``libonnxgrad_mpi.so`` is looked up next to ``libonnxgrad.so`` (the package's,
or ``ONNXGRAD_LIBRARY``'s folder), or where ``ONNXGRAD_MPI_LIBRARY`` says.

Only :class:`onnxgrad.Trainer` (the C trainer) is supported: onnxcustom's
``OrtGradientForwardBackwardOptimizer`` updates its weights in Python, out of the trainer's
reach, and ``data_parallel`` refuses it.
"""
from __future__ import annotations

import atexit
import ctypes
import os
from ctypes import POINTER, Structure, byref, c_double, c_int, c_size_t, c_void_p
from typing import Any, Optional

from . import _lib as L

__all__ = ["MPICommunicator", "mpi_communicator", "data_parallel", "launched"]


class _og_mpi_options(Structure):
    _fields_ = [("timeout_s", c_double), ("use_fortran_comm", c_int), ("fortran_comm", c_int)]


class _og_comm_head(Structure):
    """The first fields of og_comm: user, rank, size (function pointers, read only)."""
    _fields_ = [("user", c_void_p), ("rank", ctypes.CFUNCTYPE(c_int, c_void_p)),
                ("size", ctypes.CFUNCTYPE(c_int, c_void_p))]


_mpi = None


def _mpi_lib() -> Any:
    global _mpi
    if _mpi is not None:
        return _mpi
    path = os.environ.get("ONNXGRAD_MPI_LIBRARY")
    if not path:
        here = os.path.dirname(os.path.abspath(L.lib._name))
        path = os.path.join(here, "libonnxgrad_mpi.so")
    if not os.path.exists(path):
        raise RuntimeError(
            "onnxgrad: %s does not exist: this onnxgrad was built without MPI (install "
            "libopenmpi-dev, rebuild), or set ONNXGRAD_MPI_LIBRARY" % path)
    # global: Open MPI's plug-ins resolve libmpi's symbols through the global scope
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    lib.og_mpi_launched.restype = c_int
    lib.og_mpi_launched.argtypes = []
    lib.og_mpi_comm_create.restype = c_int
    lib.og_mpi_comm_create.argtypes = [POINTER(_og_mpi_options), POINTER(c_void_p)]
    lib.og_mpi_comm_free.restype = None
    lib.og_mpi_comm_free.argtypes = [c_void_p]
    lib.og_mpi_finalize.restype = c_int
    lib.og_mpi_finalize.argtypes = []
    _mpi = lib
    return lib


def launched() -> bool:
    """True when mpirun (or another MPI launcher) started this process."""
    return bool(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE") or
                os.environ.get("PMIX_RANK"))


class MPICommunicator:
    """An og_comm over MPI (MPI_COMM_WORLD, or the mpi4py communicator given).

    ``timeout``: seconds a reduction may wait for the other ranks before this rank gives up
    and aborts the job (default 300).  MPI is initialized when nobody has, and finalized at
    exit by this module."""

    def __init__(self, timeout: Optional[float] = None, comm: Any = None) -> None:
        lib = _mpi_lib()
        opts = _og_mpi_options()
        opts.timeout_s = float(timeout or 0)
        if comm is not None:  # an mpi4py communicator
            opts.use_fortran_comm, opts.fortran_comm = 1, int(comm.py2f())
        ptr = c_void_p()
        L.check(lib.og_mpi_comm_create(byref(opts), byref(ptr)))
        self.ptr = ptr.value
        head = _og_comm_head.from_address(self.ptr)
        self.rank = int(head.rank(head.user))
        self.size = int(head.size(head.user))
        _live.append(self)

    def close(self) -> None:
        if getattr(self, "ptr", None):
            _mpi_lib().og_mpi_comm_free(self.ptr)
            self.ptr = None

    def __repr__(self) -> str:
        return "MPICommunicator(rank=%d, size=%d)" % (self.rank, self.size)


_live: list = []
_world: Optional[MPICommunicator] = None


@atexit.register
def _finalize() -> None:
    if _mpi is None:
        return
    for c in _live:
        c.close()
    _mpi.og_mpi_finalize()


def mpi_communicator(timeout: Optional[float] = None) -> MPICommunicator:
    """The communicator over MPI_COMM_WORLD, made once per process."""
    global _world
    if _world is None:
        _world = MPICommunicator(timeout)
    return _world


def data_parallel(estimator: Any, communicator: Optional[MPICommunicator] = None,
                  bucket_mb: Optional[float] = None) -> Any:
    """Make ``estimator.fit`` (an :class:`onnxgrad.Trainer`) data-parallel over
    ``communicator`` (default: ``mpi_communicator()``); gradients are reduced in buckets
    of about ``bucket_mb`` MiB (default 4) as the backward pass produces them.  Returns the
    estimator.  Raises TypeError for another estimator."""
    from .estimator import Trainer
    if not isinstance(estimator, Trainer):
        raise TypeError(
            "data_parallel takes an onnxgrad.Trainer, not %s: it makes the C trainer's steps "
            "collective, and this estimator updates its weights elsewhere" %
            type(estimator).__name__)
    estimator._og_comm = communicator or mpi_communicator()
    estimator._og_bucket_bytes = int(bucket_mb * 1048576) if bucket_mb else 0
    return estimator


_set_comm = L._opt_fn("og_trainer_set_comm", c_int, c_void_p, c_void_p, c_size_t)


def attach(estimator: Any, trainer_ptr: int) -> None:
    """Called by the estimator once it made its trainer: data-parallel when asked."""
    comm = getattr(estimator, "_og_comm", None)
    if comm is None:
        return
    if _set_comm is None:
        raise RuntimeError("this libonnxgrad has no og_trainer_set_comm")
    L.check(_set_comm(trainer_ptr, comm.ptr, estimator._og_bucket_bytes))
