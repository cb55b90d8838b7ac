"""The environment every benchmark's processes run in.

OpenBLAS reads OPENBLAS_CORETYPE to choose its kernels instead of detecting the CPU.  A
machine may set it for every program (this project's shared machines set
OPENBLAS_CORETYPE=Haswell: AVX2 kernels on an AVX-512 CPU, about 1.4x slower products than
the kernels OpenBLAS picks itself), which a user's machine does not: the benchmarks remove it
from their own environment, and so from every process they start, and say so.
OG_BENCH_KEEP_BLAS_ENV=1 keeps it.  The peers do not read it (onnxruntime's MLAS, PyTorch's
MKL and oneDNN choose their own kernels).  Import this module before numpy (which may load
the same OpenBLAS, which reads the variable when it loads) and print NOTE.
"""
import os


def blas_env():
    """Remove OPENBLAS_CORETYPE from os.environ (unless OG_BENCH_KEEP_BLAS_ENV=1); return
    the line to print about it, or None when it was not set."""
    core = os.environ.get("OPENBLAS_CORETYPE")
    if core is None:
        return None
    if os.environ.get("OG_BENCH_KEEP_BLAS_ENV") == "1":
        return ("OPENBLAS_CORETYPE=%s kept (OG_BENCH_KEEP_BLAS_ENV=1): OpenBLAS runs the kernels "
                "it names, not the ones it would pick for this CPU" % core)
    del os.environ["OPENBLAS_CORETYPE"]
    return ("OPENBLAS_CORETYPE=%s removed from the environment: OpenBLAS picks its kernels for "
            "this CPU, as on a machine that does not set it (OG_BENCH_KEEP_BLAS_ENV=1 keeps it)"
            % core)


NOTE = blas_env()
