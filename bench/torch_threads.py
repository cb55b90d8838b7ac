"""The thread count of PyTorch, all of it.

torch.set_num_threads sets PyTorch's own pool only.  Debian's python3-torch does its
matrix products in OpenBLAS (pthread build), whose pool keeps every core unless told
otherwise, so a "1 thread" PyTorch run would still multiply matrices on all cores.  Both
are set here, so that PyTorch and onnxgrad compare at the same thread count."""
import ctypes
import ctypes.util

import torch

_openblas = []


def set_threads(n):
    torch.set_num_threads(n)
    if not _openblas:
        lib = None
        for name in ("libopenblas.so.0", ctypes.util.find_library("openblas")):
            try:
                lib = ctypes.CDLL(name) if name else None
            except OSError:
                lib = None
            if lib is not None and hasattr(lib, "openblas_set_num_threads"):
                break
            lib = None
        _openblas.append(lib)
    if _openblas[0] is not None:
        _openblas[0].openblas_set_num_threads(ctypes.c_int(n))
