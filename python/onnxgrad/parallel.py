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

Two estimators are supported:

- :class:`onnxgrad.Trainer` (the C trainer): its steps become collective in C, gradients
  reduced in buckets while the backward pass runs.
- :class:`onnxgrad.OrtGradientForwardBackwardOptimizer` (onnxcustom's step-by-step SGD, which
  updates its weights in Python): every rank draws the same batch starts (numpy's global
  generator, rank 0's state broadcast at the start of ``fit``, as are the initial weights
  and velocities) for batches of ranks x ``batch_size`` rows, and runs forward, loss and
  backward on its own contiguous part of each; the gradients and the loss are summed across
  ranks in one ``og_comm_allreduce`` per step (every gradient packed in one buffer per
  dtype, with the loss and a count of failing ranks), then every rank applies the same
  penalty and learning-rate update, divided by the global batch size.  The weights then
  follow one process training with ``batch_size`` = ranks x ``batch_size`` and the same
  numpy seed, up to the order of summation; the recorded train and validation losses are
  the global ones.  At the end of every epoch a hash of the weights and velocities is
  compared with rank 0's, and a difference raises on every rank naming the rank.
  ``bucket_mb`` does not apply (its backward is one call: nothing to overlap).

- :class:`onnxgrad.OrtGradientOptimizer` (onnxcustom's SGD on a model with a loss output):
  the same, with its plain SGD update ``w -= lr / (ranks x batch_size) * g``; its loss
  output must sum over the rows (add_loss_output's 'log' score averages: not
  data-parallel).

Other estimators raise TypeError.

Lower level, for code that updates weights itself: :meth:`MPICommunicator.allreduce`,
:meth:`MPICommunicator.broadcast` and :meth:`MPICommunicator.agree` (C:
``og_comm_allreduce``, ``og_comm_broadcast``, ``og_comm_agree``).
"""
from __future__ import annotations

import atexit
import ctypes
import os
import hashlib
from ctypes import (POINTER, Structure, byref, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_void_p)
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import _lib as L

__all__ = ["MPICommunicator", "mpi_communicator", "data_parallel", "launched",
           "DataParallelLoop"]


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

    # -- collectives (every rank calls them, in the same order, with the same sizes) ------

    def allreduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        """Reduce a C-contiguous float32, float64 or int64 numpy array in place across the
        ranks (op 'sum', 'min' or 'max'); every rank gets the same bits.  Returns it."""
        return _comm_allreduce(self.ptr, array, op)

    def broadcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        """Copy rank `root`'s C-contiguous array into `array` on every rank, in place."""
        return _comm_broadcast(self.ptr, array, root)

    def agree(self, exc: Optional[BaseException] = None) -> None:
        """Every rank passes what it raised (or None); when any rank passed an exception,
        every rank raises RuntimeError ``"rank R: <Type>: <message>"`` for the lowest such
        rank R (from `exc` on the ranks that had one)."""
        _comm_agree(self.ptr, exc)

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
    """Make ``estimator.fit`` (an :class:`onnxgrad.Trainer`, an
    :class:`onnxgrad.OrtGradientForwardBackwardOptimizer` or an
    :class:`onnxgrad.OrtGradientOptimizer`) data-parallel over
    ``communicator`` (default: ``mpi_communicator()``); the Trainer's gradients are reduced
    in buckets of about ``bucket_mb`` MiB (default 4) as the backward pass produces them.
    Returns the estimator.  Raises TypeError for another estimator."""
    from .estimator import Trainer
    from .training.optimizers import OrtGradientOptimizer
    from .training.optimizers_partial import OrtGradientForwardBackwardOptimizer
    if not isinstance(estimator, (Trainer, OrtGradientForwardBackwardOptimizer,
                                  OrtGradientOptimizer)):
        raise TypeError(
            "data_parallel takes an onnxgrad.Trainer, an OrtGradientForwardBackwardOptimizer "
            "or an OrtGradientOptimizer, not %s: this estimator's loop does not reduce its "
            "gradients across ranks" % type(estimator).__name__)
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


# ---- collectives through the C API (og_comm_allreduce, og_comm_broadcast, og_comm_agree) ----

_allreduce = L._opt_fn("og_comm_allreduce", c_int, c_void_p, c_void_p, c_int64, c_int, c_int)
_broadcast = L._opt_fn("og_comm_broadcast", c_int, c_void_p, c_void_p, c_size_t, c_int)
_agree = L._opt_fn("og_comm_agree", c_int, c_void_p, c_int)
_set_error = L._opt_fn("og_set_error", c_int, c_int, c_char_p)
_DTYPES = {np.dtype(np.float32): 1, np.dtype(np.float64): 11, np.dtype(np.int64): 7}
_OPS = {"sum": 0, "min": 1, "max": 2}


def _need(fn: Any, name: str) -> Any:
    if fn is None:
        raise RuntimeError("this libonnxgrad has no %s" % name)
    return fn


def _contiguous(array: Any, what: str) -> np.ndarray:
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous or \
            not array.flags.writeable:
        raise TypeError("%s takes a writeable C-contiguous numpy array, not %r" %
                        (what, type(array)))
    return array


def _comm_allreduce(ptr: int, array: np.ndarray, op: str = "sum") -> np.ndarray:
    a = _contiguous(array, "allreduce")
    if a.dtype not in _DTYPES:
        raise TypeError("allreduce: dtype %s (float32, float64 or int64 only)" % a.dtype)
    if op not in _OPS:
        raise ValueError("allreduce: op %r (sum, min or max)" % (op,))
    L.check(_need(_allreduce, "og_comm_allreduce")(ptr, a.ctypes.data, a.size, _DTYPES[a.dtype],
                                                   _OPS[op]))
    return array


def _comm_broadcast(ptr: int, array: np.ndarray, root: int = 0) -> np.ndarray:
    a = _contiguous(array, "broadcast")
    L.check(_need(_broadcast, "og_comm_broadcast")(ptr, a.ctypes.data, a.nbytes, int(root)))
    return array


def _comm_agree(ptr: int, exc: Optional[BaseException]) -> None:
    status = 0
    if exc is not None:
        msg = "%s: %s" % (type(exc).__name__, exc)
        status = _need(_set_error, "og_set_error")(L.OG_ERR_RUNTIME,
                                                   msg.encode("utf-8", "replace"))
    st = _need(_agree, "og_comm_agree")(ptr, status)
    if st:
        raise L.error(st) from exc


class DataParallelLoop:
    """What a Python training loop (OrtGradientForwardBackwardOptimizer's,
    OrtGradientOptimizer's) needs to run
    data-parallel over a communicator for one fit: the rank's part of each global batch,
    one packed reduction per step, rank 0's state for everyone, the epoch-end hash check.
    Every method is collective unless it says otherwise."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.rank, self.size = comm.rank, comm.size
        self._plan: Optional[Tuple[Any, ...]] = None

    def part(self, batch: Sequence[Any]) -> Tuple[Any, ...]:
        """This rank's contiguous part of a global batch (arrays of the same first
        dimension k): rows k r / N .. k (r + 1) / N, so that N x batch_size rows give every
        rank batch_size.  Not collective."""
        k = batch[0].shape[0]
        lo, hi = k * self.rank // self.size, k * (self.rank + 1) // self.size
        return tuple(a[lo:hi] for a in batch)

    def agree(self, exc: Optional[BaseException]) -> None:
        self.comm.agree(exc)

    def check_same_rows(self, *arrays: Any) -> None:
        """Every rank must pass arrays of the same numbers of rows (None: none): ValueError
        on every rank otherwise."""
        rows = [-1 if a is None else int(np.shape(a)[0]) for a in arrays]
        lo = np.array(rows, dtype=np.int64)
        hi = lo.copy()
        self.comm.allreduce(lo, "min")
        self.comm.allreduce(hi, "max")
        if (lo != hi).any():
            raise ValueError(
                "data-parallel fit: the ranks passed different data (rows of X, y, "
                "sample_weight, X_val from %r to %r; -1: none); every rank passes the same "
                "dataset" % (lo.tolist(), hi.tolist()))

    def same_as_root(self, arrays: Sequence[Any]) -> None:
        """Overwrite every array (numpy, in place; None skipped) with rank 0's."""
        for a in arrays:
            if a is not None:
                self.comm.broadcast(_contiguous(np.asarray(a), "same_as_root"), 0)

    def random_state_of_root(self) -> None:
        """numpy's global generator takes rank 0's state (the MT19937 key and position)."""
        name, key, pos, has_gauss, gauss = np.random.get_state()
        key = np.ascontiguousarray(key, dtype=np.int64)
        rest = np.array([pos, has_gauss], dtype=np.int64)
        g = np.array([gauss], dtype=np.float64)
        for a in (key, rest, g):
            self.comm.broadcast(a, 0)
        np.random.set_state((name, key.astype(np.uint32), int(rest[0]), int(rest[1]),
                             float(g[0])))

    def sum_step(self, local: Any, weights: Sequence[Any]) -> Tuple[np.ndarray, List[Any]]:
        """Run ``local()`` (this rank's forward and backward: it returns (loss, gradients)
        with one gradient per weight, or None when the rank has no rows in this batch), then
        sum the losses and gradients across ranks in one reduction per dtype.  Returns
        (the global loss as a (1,) array, the global gradients shaped as the weights: views
        valid until the next call).  When ``local`` raised on any rank, every rank raises
        (see agree)."""
        groups, control = self._buffers(weights)
        dts = self._plan[1]
        cbuf, cat = control
        exc = None
        try:
            res = local()
            for buf, _ in groups.values():
                buf[:] = 0
            if res is not None:
                loss, grads = res
                if len(grads) != len(weights):
                    raise RuntimeError("%d gradients for %d weights" % (len(grads), len(weights)))
                for i, g in enumerate(grads):
                    buf, where = groups[dts[i]]
                    lo, hi = where[i]
                    buf[lo:hi] = np.asarray(g).reshape(-1)
                cbuf[cat] = np.asarray(loss).reshape(-1)[0]
        except Exception as e:  # pylint: disable=broad-except
            exc = e
            for buf, _ in groups.values():
                buf[:] = 0
        cbuf[cat + 1] = 1 if exc is not None else 0
        for dt in sorted(groups, key=str):
            self.comm.allreduce(groups[dt][0], "sum")
        if cbuf[cat + 1] != 0:
            self.agree(exc)
            raise RuntimeError("a rank failed, and og_comm_agree said none did")
        out = []
        for i, w in enumerate(weights):
            buf, where = groups[dts[i]]
            lo, hi = where[i]
            out.append(buf[lo:hi].reshape(np.shape(w)))
        return np.array([cbuf[cat]], dtype=cbuf.dtype), out

    def sum_values(self, values: Sequence[float], exc: Optional[BaseException]) -> np.ndarray:
        """Sum a few float64 values across ranks, with the agreement on failures (exc:
        what this rank raised computing them, or None)."""
        buf = np.zeros(len(values) + 1, dtype=np.float64)
        if exc is None:
            buf[:-1] = values
        buf[-1] = 0 if exc is None else 1
        self.comm.allreduce(buf, "sum")
        if buf[-1] != 0:
            self.agree(exc)
        return buf[:-1]

    def check_hash(self, arrays: Sequence[Any], when: str) -> None:
        """Compare a hash of the arrays (weights, velocities) with rank 0's; a difference
        raises RuntimeError on every rank naming the rank."""
        h = hashlib.blake2b(digest_size=8)
        for a in arrays:
            if a is not None:
                h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
        mine = np.frombuffer(h.digest(), dtype=np.int64).copy()
        root = mine.copy()
        self.comm.broadcast(root, 0)
        exc = None
        if root[0] != mine[0]:
            exc = RuntimeError(
                "%s, its weights and velocities hash to %016x, rank 0's to %016x: the ranks "
                "diverged (ranks given different data or options, or a reduction that differs "
                "between ranks)" % (when, int(mine[0]) & (2**64 - 1),
                                    int(root[0]) & (2**64 - 1)))
        self.agree(exc)

    def _buffers(self, weights: Sequence[Any]) -> Tuple[dict, Tuple[np.ndarray, int]]:
        """One buffer per dtype for the gradients (laid out as the weights), plus two
        control slots (the loss, the failing ranks) at the end of the float64 buffer, else
        the float32 one; made once per fit.  Not collective."""
        key = tuple((np.dtype(np.asarray(w).dtype), np.shape(w)) for w in weights)
        if self._plan is not None and self._plan[0] == key:
            return self._plan[2], self._plan[3]
        sizes: dict = {}
        where: List[Tuple[int, int]] = []
        dts = []
        for dt, shape in key:
            if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
                raise TypeError("data-parallel training reduces float32 and float64 gradients, "
                                "not %s" % dt)
            n = int(np.prod(shape, dtype=np.int64))
            lo = sizes.get(dt, 0)
            where.append((lo, lo + n))
            sizes[dt] = lo + n
            dts.append(dt)
        cdt = np.dtype(np.float64) if np.dtype(np.float64) in sizes else np.dtype(np.float32)
        cat = sizes.get(cdt, 0)
        sizes[cdt] = cat + 2
        groups = {dt: (np.zeros(n, dtype=dt), where) for dt, n in sizes.items()}
        control = (groups[cdt][0], cat)
        self._plan = (key, dts, groups, control)
        return groups, control
