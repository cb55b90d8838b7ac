"""Per-opset cases of the ops of issue 12's "nn ops" part (CastLike, the normalizations,
LpPool, MaxUnpool, Col2Im, GridSample, AffineGrid, RoiAlign, the tensor and index ops,
Det, the quantization ops) and of float16 in Max, Min and Mod.  Called by gen_cases.py with
itself as `g` (its case, vers, act, rand, ... helpers)."""

import numpy as np
from onnx import TensorProto as TP

F16 = np.float16


def gen_castlike(g):
    vals = np.array([[-2.7, -0.4, 0.0, 1.6], [3.2, 100.9, -7.5, 0.2]], np.float32)
    for v in g.vers("CastLike"):
        for src, dst in [(g.F32, g.F64), (g.F32, g.I64), (g.F32, g.BOOL), (g.I32, g.F32),
                         (g.F64, g.F32), (g.F32, F16), (F16, g.F32), (g.BOOL, g.I64)]:
            x = g.rand((2, 4), src, -50, 50) if src in (g.I32, g.I64, g.BOOL) else vals.astype(src)
            name = "%s_to_%s" % (np.dtype(src).name, np.dtype(dst).name)
            g.case("CastLike", v, name, [("x", x), ("like", np.zeros((1,), dst))])


def gen_half_binary(g):
    for op in ("Max", "Min"):
        for v in g.vers(op):
            if g.act(op, v) >= 8:  # float16 and broadcasting together from 8
                g.case(op, v, "f16", [("a", g.rand((2, 3, 4)).astype(F16)),
                                      ("b", g.rand((4,)).astype(F16)),
                                      ("c", g.rand((3, 1)).astype(F16))])
    for v in g.vers("Mod"):
        a = np.array([[-7.3, 5.2, 9.7, -4.4], [13.1, -13.1, 8.6, 0.3]], F16)
        g.case("Mod", v, "f16_fmod", [("a", a), ("b", np.array([3.0, -3.0, 4.0, 5.0], F16))],
               {"fmod": 1})


def generate(g):
    gen_castlike(g)
    gen_half_binary(g)
