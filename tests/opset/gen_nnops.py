"""Per-opset cases of the ops of issue 12's "nn ops" part (CastLike, the normalizations,
LpPool, MaxUnpool, Col2Im, GridSample, AffineGrid, RoiAlign, the tensor and index ops,
Det, the quantization ops) and of float16 in Max, Min, Mod, Pow, MaxPool and AveragePool.  Called by gen_cases.py with
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


def gen_half_arith(g):
    """float16 in the arithmetic ops, the comparisons, Sum (every version; Equal from 11) and
    the everyday unary ops, computed through float32 copies; its own generator, so the shared one's draws stay"""
    rng = np.random.default_rng(12)
    a = rng.uniform(-3.0, 3.0, (2, 3, 4)).astype(F16)
    b = rng.uniform(0.5, 2.0, (3, 1)).astype(F16)
    b[0, 0] = a[0, 0, 0]  # an equal pair for the comparisons
    for op in ("Add", "Sub", "Mul", "Div", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
               "Equal", "Sum"):
        for v in g.vers(op):
            if op == "Equal" and g.act(op, v) < 11:
                continue
            ins = [("a", a), ("b", b)]
            if op == "Sum" and g.act(op, v) >= 8:
                ins.append(("c", rng.uniform(-1.0, 1.0, (4,)).astype(F16)))
            elif op == "Sum":
                ins = [("a", a), ("b", a[::-1].copy())]  # no broadcasting before Sum-8
            g.case(op, v, "f16", ins)
    x = rng.uniform(-4.0, 4.0, (3, 5)).astype(F16)
    pos = rng.uniform(0.05, 6.0, (3, 5)).astype(F16)
    for op in ("Sqrt", "Exp", "Log", "Relu", "Neg", "Abs", "Ceil", "Floor", "Reciprocal",
               "Sigmoid", "Tanh", "Sign"):
        for v in g.vers(op):
            g.case(op, v, "f16", [("x", pos if op in ("Sqrt", "Log") else x)])
    xr = rng.uniform(0.1, 3.0, (2, 3, 4)).astype(F16)
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"):
        for v in g.vers(op):
            axes_in = g.act(op, v) >= (13 if op == "ReduceSum" else 18)
            ins = [("x", xr)] + ([("axes", np.array([1], np.int64))] if axes_in else [])
            g.case(op, v, "f16", ins, {} if axes_in else {"axes": [1]})
    for v in g.vers("MatMul"):
        g.case("MatMul", v, "f16", [("a", rng.uniform(-1, 1, (2, 3, 8)).astype(F16)),
                                    ("b", rng.uniform(-1, 1, (8, 5)).astype(F16))])
    for v in g.vers("Gemm"):
        g.case("Gemm", v, "f16", [("a", rng.uniform(-1, 1, (8, 3)).astype(F16)),
                                  ("b", rng.uniform(-1, 1, (4, 8)).astype(F16)),
                                  ("c", rng.uniform(-1, 1, (3, 4)).astype(F16))],
               {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0})


def gen_half_pow_pool(g):
    """float16 in Pow (base and exponent, from Pow-7; a float32 exponent from Pow-12), and in
    MaxPool and AveragePool (every version); their own generator, so that the shared one's
    draws for the other cases stay as they were"""
    rng = np.random.default_rng(16)
    a = rng.uniform(0.3, 2.0, (2, 3)).astype(F16)
    b = rng.uniform(-2.0, 2.0, (3,))
    for v in g.vers("Pow"):
        g.case("Pow", v, "f16", [("a", a), ("b", b.astype(F16))])
        if g.act("Pow", v) >= 12:
            g.case("Pow", v, "f16_f32exp", [("a", a), ("b", b.astype(np.float32))])
    x = rng.uniform(-2.0, 2.0, (1, 2, 5, 5)).astype(F16)
    for op in ("MaxPool", "AveragePool"):
        for v in g.vers(op):
            g.case(op, v, "f16", [("x", x)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                              "pads": [1, 1, 1, 1]})


def gen_tensor_index(g):
    for v in g.vers("DepthToSpace"):
        x = g.rand((2, 8, 2, 3))
        g.case("DepthToSpace", v, "dcr", [("x", x)], {"blocksize": 2})
        g.case("DepthToSpace", v, "i64_b3", [("x", g.rand((1, 9, 2, 2), g.I64, -9, 9))],
               {"blocksize": 3})
        if g.act("DepthToSpace", v) >= 11:
            g.case("DepthToSpace", v, "crd", [("x", x)], {"blocksize": 2, "mode": "CRD"})
            g.case("DepthToSpace", v, "crd_f16", [("x", x.astype(F16))],
                   {"blocksize": 2, "mode": "CRD"})
    for v in g.vers("SpaceToDepth"):
        g.case("SpaceToDepth", v, "b2", [("x", g.rand((2, 3, 4, 6)))], {"blocksize": 2})
        g.case("SpaceToDepth", v, "b3_bool", [("x", g.rand((1, 2, 3, 6), g.BOOL))],
               {"blocksize": 3})
    for v in g.vers("CenterCropPad"):
        x = g.rand((3, 5, 4))
        g.case("CenterCropPad", v, "crop_pad", [("x", x), ("s", g.i64(2, 8, 4))])
        g.case("CenterCropPad", v, "axes", [("x", x), ("s", g.i64(3, 1))], {"axes": [-1, 1]})
        g.case("CenterCropPad", v, "i32_odd", [("x", g.rand((5, 2), g.I32, -9, 9)),
                                               ("s", g.i64(2, 5))])
    for v in g.vers("EyeLike"):
        g.case("EyeLike", v, "default", [("x", g.rand((3, 4)))])
        g.case("EyeLike", v, "k1_i64", [("x", g.rand((4, 3)))], {"k": 1, "dtype": TP.INT64})
        g.case("EyeLike", v, "kneg_f64", [("x", g.rand((4, 4), g.I32, 0, 3))],
               {"k": -2, "dtype": TP.DOUBLE})
        g.case("EyeLike", v, "bool", [("x", g.rand((2, 5), g.BOOL))], {"k": 3})
    for v in g.vers("ReverseSequence"):
        x = g.rand((4, 3, 2))
        g.case("ReverseSequence", v, "time0", [("x", x), ("l", g.i64(4, 1, 2))])
        g.case("ReverseSequence", v, "batch0", [("x", g.rand((3, 4), g.I64, -9, 9)),
                                                ("l", g.i64(0, 4, 3))],
               {"batch_axis": 0, "time_axis": 1})
    for v in g.vers("Compress"):
        x = g.rand((3, 4, 2))
        g.case("Compress", v, "axis1", [("x", x), ("c", np.array([1, 0, 1, 1], g.BOOL))],
               {"axis": 1})
        g.case("Compress", v, "flat_short", [("x", x), ("c", np.array([0, 1, 1, 0, 1], g.BOOL))])
        g.case("Compress", v, "axis0_none_i32", [("x", g.rand((2, 3), g.I32, -9, 9)),
                                                 ("c", np.array([0, 0], g.BOOL))], {"axis": 0})
        if g.act("Compress", v) >= 11:
            g.case("Compress", v, "neg_axis", [("x", x), ("c", np.array([0, 1], g.BOOL))],
                   {"axis": -1})
    for v in g.vers("Hardmax"):
        x = g.distinct((2, 3, 4))
        g.case("Hardmax", v, "default", [("x", x)])
        g.case("Hardmax", v, "axis0", [("x", x)], {"axis": 0})
        g.case("Hardmax", v, "ties_f64", [("x", np.array([[1, 3, 3], [2, 2, 0]], g.F64))],
               {"axis": -1 if g.act("Hardmax", v) >= 13 else 1})
        g.case("Hardmax", v, "f16", [("x", x.astype(F16))], {"axis": 1})


def gen_norm(g):
    for v in g.vers("GroupNormalization"):
        per = g.act("GroupNormalization", v) >= 21
        x = g.rand((2, 6, 3, 2))
        n = 6 if per else 3
        g.case("GroupNormalization", v, "g3", [("x", x), ("s", g.rand((n,))), ("b", g.rand((n,)))],
               {"num_groups": 3})
        n = 6 if per else 2
        g.case("GroupNormalization", v, "g2_eps_3d", [("x", g.rand((2, 6, 5))),
                                                      ("s", g.rand((n,))), ("b", g.rand((n,)))],
               {"num_groups": 2, "epsilon": 0.01})
        n = 6 if per else 1
        g.case("GroupNormalization", v, "g1_f64", [("x", x.astype(g.F64)),
                                                   ("s", g.rand((n,), g.F64)),
                                                   ("b", g.rand((n,), g.F64))], {"num_groups": 1})
    for v in g.vers("LpNormalization"):
        x = g.away((3, 4, 2))
        g.case("LpNormalization", v, "default", [("x", x)])
        g.case("LpNormalization", v, "p1_axis1", [("x", x)], {"p": 1, "axis": 1})
        g.case("LpNormalization", v, "axis0_f64", [("x", x.astype(g.F64))], {"axis": 0})
    for v in g.vers("MeanVarianceNormalization"):
        x = g.rand((2, 3, 4, 2))
        g.case("MeanVarianceNormalization", v, "default", [("x", x)])
        g.case("MeanVarianceNormalization", v, "axes_1_3", [("x", x)], {"axes": [1, -1]})
        # (double would run here, but neither onnxruntime nor the reference evaluator runs
        # the spec's function, whose constants are float, on double)
        g.case("MeanVarianceNormalization", v, "3d", [("x", g.rand((4, 3, 5)))], {"axes": [0, 2]})
    for v in g.vers("LRN"):
        x = g.rand((2, 5, 3, 2))
        g.case("LRN", v, "size3", [("x", x)], {"size": 3})
        # onnxruntime refuses an even size and double; the reference evaluator, which then
        # answers, walks N instead of C (right when they are equal) and needs rank 4
        g.case("LRN", v, "size4_attrs", [("x", g.rand((5, 5, 2, 1)))],
               {"size": 4, "alpha": 0.02, "beta": 0.5, "bias": 2.0})
        g.case("LRN", v, "f64", [("x", g.rand((3, 3, 2, 2), g.F64))], {"size": 2, "alpha": 0.1})


def gen_pool(g):
    for v in g.vers("LpPool"):
        a = g.act("LpPool", v)
        x = g.rand((2, 3, 5, 6))
        g.case("LpPool", v, "k2_p2", [("x", x)], {"kernel_shape": [2, 2]})
        g.case("LpPool", v, "k3_s2_pads_p1", [("x", x)],
               {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 2], "p": 1})
        g.case("LpPool", v, "1d_p3", [("x", g.rand((2, 2, 7)))], {"kernel_shape": [3], "p": 3})
        g.case("LpPool", v, "same_upper_f64", [("x", x.astype(g.F64))],
               {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"})
        if a >= 18:
            g.case("LpPool", v, "dil_ceil", [("x", g.rand((1, 2, 7, 7)))],
                   {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [2, 2], "ceil_mode": 1})
    for v in g.vers("MaxUnpool"):
        x = g.rand((2, 3, 2, 3))
        # the indices of a 2x2 stride-2 MaxPool over [2, 3, 4, 6]: one per window, row-major
        base = np.arange(2 * 3)[:, None, None] * 24
        hh, ww = np.meshgrid(np.arange(2), np.arange(3), indexing="ij")
        pick = g.RNG.integers(0, 2, size=(6, 2, 3, 2))
        ind = (base + (2 * hh + pick[..., 0]) * 6 + 2 * ww + pick[..., 1]).reshape(2, 3, 2, 3)
        g.case("MaxUnpool", v, "k2s2", [("x", x), ("i", ind.astype(g.I64))],
               {"kernel_shape": [2, 2], "strides": [2, 2]})
        # a larger output_shape: the covered block at the start (the reference evaluator;
        # onnxruntime puts the indices straight into the larger output)
        g.case("MaxUnpool", v, "output_shape", [("x", x), ("i", ind.astype(g.I64)),
                                                ("s", g.i64(2, 3, 5, 7))],
               {"kernel_shape": [2, 2], "strides": [2, 2]}, ref_only=True)
        x1 = g.rand((1, 2, 3))
        g.case("MaxUnpool", v, "1d_pads_f64", [("x", x1.astype(g.F64)),
                                               ("i", np.array([[[0, 2, 3], [4, 6, 7]]], g.I64))],
               {"kernel_shape": [2], "strides": [2], "pads": [1, 1]})


def gen_col2im(g):
    for v in g.vers("Col2Im"):
        g.case("Col2Im", v, "3x3", [("x", g.rand((2, 18, 9))), ("im", g.i64(5, 5)),
                                    ("bl", g.i64(3, 3))])
        g.case("Col2Im", v, "strides_dil_pads", [("x", g.rand((1, 8, 4))), ("im", g.i64(4, 5)),
                                                 ("bl", g.i64(2, 2))],
               {"strides": [2, 2], "dilations": [1, 2], "pads": [1, 0, 0, 1]})
        g.case("Col2Im", v, "1d_f64", [("x", g.rand((1, 3, 3), g.F64)), ("im", g.i64(7)),
                                       ("bl", g.i64(3))], {"strides": [2]})


def gen_det(g):
    for v in g.vers("Det"):
        g.case("Det", v, "2d", [("x", g.rand((3, 3)))])
        g.case("Det", v, "batch", [("x", g.rand((2, 2, 4, 4)))])
        g.case("Det", v, "f64_singular", [("x", np.array([[1, 2], [2, 4]], g.F64))])


def gen_grid(g):
    for v in g.vers("GridSample"):
        v20 = g.act("GridSample", v) >= 20
        x = g.rand((2, 3, 4, 5))
        grid = g.rand((2, 3, 4, 2), lo=-1.3, hi=1.3)
        modes = ("linear", "nearest", "cubic") if v20 else ("bilinear", "nearest", "bicubic")
        for mode in modes:
            for pad in ("zeros", "border", "reflection"):
                for ac in (0, 1):
                    if mode == modes[2] and pad == "zeros" and ac:
                        continue
                    g.case("GridSample", v, "%s_%s_ac%d" % (mode, pad, ac), [("x", x), ("g", grid)],
                           {"mode": mode, "padding_mode": pad, "align_corners": ac})
        g.case("GridSample", v, "default_f64", [("x", x.astype(g.F64)), ("g", grid.astype(g.F64))])
        if v20:
            x3 = g.rand((1, 2, 3, 4, 3))
            g3 = g.rand((1, 2, 3, 2, 3), lo=-1.2, hi=1.2)
            for mode in ("linear", "nearest"):
                g.case("GridSample", v, "3d_" + mode, [("x", x3), ("g", g3)],
                       {"mode": mode, "padding_mode": "border"})
    for v in g.vers("AffineGrid"):
        th2 = g.rand((2, 2, 3))
        th3 = g.rand((1, 3, 4))
        for ac in (0, 1):
            g.case("AffineGrid", v, "2d_ac%d" % ac, [("t", th2), ("s", g.i64(2, 3, 4, 5))],
                   {"align_corners": ac})
            g.case("AffineGrid", v, "3d_ac%d" % ac, [("t", th3), ("s", g.i64(1, 1, 2, 3, 4))],
                   {"align_corners": ac})
        # (a unit dim with align_corners has three answers: PyTorch's 0, which onnxgrad
        # takes, onnxruntime's 1 and the reference's -1; without align_corners all say 0)
        g.case("AffineGrid", v, "f64_unit", [("t", th2.astype(g.F64)), ("s", g.i64(2, 1, 1, 3))])
        g.case("AffineGrid", v, "f64_ac1", [("t", th2.astype(g.F64)), ("s", g.i64(2, 1, 2, 3))],
               {"align_corners": 1})


def gen_roi_align(g):
    x = g.rand((2, 3, 6, 7))
    rois = np.array([[0.5, 1.0, 4.2, 5.1], [1.3, 0.2, 6.5, 3.3], [-1.0, 2.0, 3.0, 7.5]], g.F32)
    bi = g.i64(0, 1, 1)
    for v in g.vers("RoiAlign"):
        a = g.act("RoiAlign", v)
        g.case("RoiAlign", v, "avg_adaptive", [("x", x), ("r", rois), ("b", bi)],
               {"output_height": 3, "output_width": 2})
        g.case("RoiAlign", v, "avg_sr2_scale", [("x", x), ("r", rois * 2), ("b", bi)],
               {"output_height": 2, "output_width": 3, "sampling_ratio": 2, "spatial_scale": 0.5})
        g.case("RoiAlign", v, "max", [("x", x), ("r", rois), ("b", bi)],
               {"output_height": 2, "output_width": 2, "mode": "max", "sampling_ratio": 2})
        g.case("RoiAlign", v, "f64", [("x", x.astype(g.F64)), ("r", rois.astype(g.F64)), ("b", bi)],
               {"output_height": 2, "output_width": 2})
        if a >= 16:
            g.case("RoiAlign", v, "output_half_pixel", [("x", x), ("r", rois), ("b", bi)],
                   {"output_height": 3, "output_width": 3,
                    "coordinate_transformation_mode": "output_half_pixel"})


def gen_quant(g):
    x = g.rand((2, 3, 4), lo=-3, hi=3)
    for v in g.vers("QuantizeLinear"):
        a = g.act("QuantizeLinear", v)
        g.case("QuantizeLinear", v, "uint8_default", [("x", x), ("s", np.array(0.02, g.F32))])
        g.case("QuantizeLinear", v, "int8", [("x", x), ("s", np.array(0.015, g.F32)),
                                             ("z", np.array(-3, np.int8))])
        g.case("QuantizeLinear", v, "i32_uint8", [("x", g.rand((2, 5), g.I32, -300, 300)),
                                                  ("s", np.array(2.0, g.F32)),
                                                  ("z", np.array(10, np.uint8))])
        if a >= 13:
            g.case("QuantizeLinear", v, "axis1", [("x", x), ("s", np.array([0.01, 0.02, 0.03], g.F32)),
                                                  ("z", np.array([0, 5, 250], np.uint8))], {"axis": 1})
        if a >= 19:
            g.case("QuantizeLinear", v, "f16", [("x", x.astype(F16)), ("s", np.array(0.02, F16)),
                                                ("z", np.array(4, np.int8))])
        if a >= 21:
            g.case("QuantizeLinear", v, "blocked", [("x", x), ("s", g.rand((2, 3, 2), lo=0.01, hi=0.03)),
                                                    ("z", g.rand((2, 3, 2), g.I32, -5, 5).astype(np.int8))],
                   {"axis": -1, "block_size": 2})
            g.case("QuantizeLinear", v, "int16", [("x", x), ("s", np.array(1e-4, g.F32)),
                                                  ("z", np.array(7, np.int16))])
            g.case("QuantizeLinear", v, "output_dtype_uint16", [("x", x), ("s", np.array(1e-4, g.F32))],
                   {"output_dtype": TP.UINT16})
    for v in g.vers("DequantizeLinear"):
        a = g.act("DequantizeLinear", v)
        q = g.rand((2, 3, 4), g.I32, -100, 100).astype(np.int8)
        g.case("DequantizeLinear", v, "int8", [("q", q), ("s", np.array(0.02, g.F32)),
                                               ("z", np.array(-3, np.int8))])
        g.case("DequantizeLinear", v, "uint8_nozp", [("q", (q.astype(np.int32) + 128).astype(np.uint8)),
                                                     ("s", np.array(0.5, g.F32))])
        g.case("DequantizeLinear", v, "int32", [("q", g.rand((5,), g.I32, -1000, 1000)),
                                                ("s", np.array(0.125, g.F32))])
        if a >= 13:
            g.case("DequantizeLinear", v, "axis1", [("q", q), ("s", np.array([0.01, 0.02, 0.03], g.F32)),
                                                    ("z", np.array([0, 5, -7], np.int8))], {"axis": 1})
        if a >= 19:
            g.case("DequantizeLinear", v, "f16_scale", [("q", q), ("s", np.array(0.02, F16))])
        if a >= 21:
            g.case("DequantizeLinear", v, "blocked", [("q", q), ("s", g.rand((1, 3, 4), lo=0.01, hi=0.03)),
                                                      ("z", g.rand((1, 3, 4), g.I32, -5, 5).astype(np.int8))],
                   {"axis": 0, "block_size": 2})
            g.case("DequantizeLinear", v, "uint16", [("q", g.rand((3, 2), g.I32, 0, 60000).astype(np.uint16)),
                                                     ("s", np.array(1e-3, g.F32)),
                                                     ("z", np.array(30000, np.uint16))])
    for v in g.vers("DynamicQuantizeLinear"):
        g.case("DynamicQuantizeLinear", v, "mixed", [("x", x)], n_out=3)
        g.case("DynamicQuantizeLinear", v, "positive", [("x", g.rand((4, 2), lo=0.5, hi=3))], n_out=3)
        g.case("DynamicQuantizeLinear", v, "zeros", [("x", np.zeros((3,), g.F32))], n_out=3)


def generate(g):
    gen_castlike(g)
    gen_half_binary(g)
    gen_half_arith(g)
    gen_half_pow_pool(g)
    gen_tensor_index(g)
    gen_norm(g)
    gen_pool(g)
    gen_col2im(g)
    gen_det(g)
    gen_grid(g)
    gen_roi_align(g)
    gen_quant(g)
