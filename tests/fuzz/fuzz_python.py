#!/usr/bin/env python3
"""atheris target: the Python binding's entry points (python/onnxgrad) on fuzzed input.

The first byte picks an entry point, the rest feeds it:
  0  OrtGradientForwardBackward(model bytes), then an instance's training forward and
     backward on small inputs made from the data (every float input and weight);
  1  the same object restored from fuzzed pickled state (__setstate__: og_grad_load_buffer);
  2  forward/backward of models/mlp.onnx on fuzzed arrays: any dtype, rank, shape, byte
     order and memory layout numpy can make from the bytes;
  3  OrtGradientForwardBackwardOptimizer.fit on fuzzed X, y for models/mlp.onnx.
A library error must arrive as onnxgrad's ValueError or RuntimeError (or a ValueError /
TypeError from numpy converting the data); anything else escaping, or a crash, is a finding.
The C library is the one ONNXGRAD_LIBRARY names (a release build).

    python3 tests/fuzz/fuzz_python.py [libFuzzer flags] CORPUS_DIR
"""
import os
import sys

import atheris

with atheris.instrument_imports():
    import numpy as np
    import onnxgrad
    from onnxgrad import OrtGradientForwardBackward, OrtGradientForwardBackwardOptimizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = open(os.path.join(ROOT, "models", "mlp.onnx"), "rb").read()
EXPECTED = (onnxgrad.OnnxgradError, ValueError, TypeError)
DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.bool_, np.uint8,
          ">f4", np.complex64]


def array(fdp):
    dt = np.dtype(DTYPES[fdp.ConsumeIntInRange(0, len(DTYPES) - 1)])
    rank = fdp.ConsumeIntInRange(0, 4)
    shape = [fdp.ConsumeIntInRange(0, 5) for _ in range(rank)]
    n = int(np.prod(shape)) if shape else 1
    raw = fdp.ConsumeBytes(n * dt.itemsize)
    raw += bytes(n * dt.itemsize - len(raw))
    a = np.frombuffer(raw, dtype=dt).reshape(shape)
    if fdp.ConsumeBool() and rank >= 2:
        a = a.T  # not C-contiguous
    if fdp.ConsumeBool() and rank >= 1 and shape[0] > 1:
        a = a[::2]  # strided
    return a


def forward_backward(fw, fdp):
    inst = fw.new_instance()
    inputs = [array(fdp) for _ in fw.input_names]
    outs = inst.forward(inputs, training=fdp.ConsumeBool())
    if inst.pending:
        grads = [array(fdp) if fdp.ConsumeBool() else None for _ in outs]
        inst.backward(grads if fdp.ConsumeBool() else None)


def one(data):
    fdp = atheris.FuzzedDataProvider(data)
    which = fdp.ConsumeIntInRange(0, 3)
    if which == 0:
        fw = OrtGradientForwardBackward(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 65536)),
                                        threads=1)
        forward_backward(fw, fdp)
    elif which == 1:
        fw = OrtGradientForwardBackward(MLP, threads=1)
        state = fw.__getstate__()
        key = next(k for k, v in state.items() if isinstance(v, bytes))
        state[key] = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 65536))
        fw2 = OrtGradientForwardBackward.__new__(OrtGradientForwardBackward)
        fw2.__setstate__(state)
        forward_backward(fw2, fdp)
    elif which == 2:
        forward_backward(OrtGradientForwardBackward(MLP, threads=1), fdp)
    else:
        est = OrtGradientForwardBackwardOptimizer(
            MLP, max_iter=fdp.ConsumeIntInRange(1, 2),
            batch_size=fdp.ConsumeIntInRange(1, 8),
            learning_loss=["square_error", "cross_entropy"][fdp.ConsumeIntInRange(0, 1)])
        est.fit(array(fdp), array(fdp))


def TestOneInput(data):
    try:
        one(data)
    except EXPECTED:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
