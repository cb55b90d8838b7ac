"""Gradient cases in 16-bit floats (Pow with a float16 or bfloat16 base, its exponent float16
or bfloat16 too; MaxPool and AveragePool on float16; a float16 MLP of MatMul, Add and Relu): the rules are those of the float32
cases (checked there by finite differences in float64); here the training graph runs in the
16-bit type, compared with PyTorch's float64 autograd at the same (16-bit) input values
within the type's rounding ("rtol"), and in onnxruntime.  bfloat16 has no numpy type: those
models take float32 and Cast to bfloat16 and back around the op."""
import numpy as np
from onnx import TensorProto as TP

from helpers import RNG, model, node

HALF = "a 16-bit float model: compared with PyTorch's float64 autograd instead of finite " \
       "differences (the float64 copy keeps 16-bit values)"


def distinct(shape, scale=64.0):
    """distinct values k/scale, exact in float16 (and bfloat16 for |k| < 256)"""
    n = int(np.prod(shape))
    k = RNG.permutation(np.arange(-n, n))[:n]
    return (k / scale).reshape(shape)


def cases():
    out = []
    f16 = np.float16
    b = RNG.uniform(0.5, 2.0, (3, 4)).astype(f16)
    e = RNG.uniform(-2.0, 2.0, (3, 4)).astype(f16)
    kw = {"fn": "pow", "no_fd": HALF, "rtol": 1e-2, "seed_dtype": "float16"}
    for opset in (7, 13):  # float16 base and exponent from Pow-7; T1 apart from T from 12
        m = model([node("Pow", ["b", "e"], ["y"])], {"b": b, "e": e}, ["y"], opset=opset)
        out.append(("pow_f16_v%d" % opset, m, {"b": b, "e": e}, kw))
    # a float16 base with a float32 exponent (a weight) and with a scalar int64 exponent
    ew = RNG.uniform(-2.0, 2.0, (4,)).astype(np.float32)
    m = model([node("Pow", ["b", "e"], ["y"])], {"b": b}, ["y"], {"e": ew}, opset=13)
    out.append(("pow_f16_f32exp_v13", m, {"b": b}, kw))
    m = model([node("Pow", ["b", "e"], ["y"])], {"b": b}, ["y"], opset=13,
              consts={"e": np.array(3, np.int64)})
    out.append(("pow_f16_i64exp_v13", m, {"b": b}, dict(kw, kw={"e": 3})))
    # bfloat16: Pow-13 takes a bfloat16 base, Pow-15 a bfloat16 exponent too
    b32, e32 = b.astype(np.float32), e.astype(np.float32)
    for opset, exp_bf16 in ((13, False), (15, True)):
        nodes = [node("Cast", ["b"], ["bh"], to=TP.BFLOAT16),
                 node("Cast", ["e"], ["eh"], to=TP.BFLOAT16 if exp_bf16 else TP.FLOAT),
                 node("Pow", ["bh", "eh"], ["yh"]), node("Cast", ["yh"], ["y"], to=TP.FLOAT)]
        m = model(nodes, {"b": b32, "e": e32}, ["y"], opset=opset)
        out.append(("pow_bf16%s_v%d" % ("_bf16exp" if exp_bf16 else "", opset), m,
                    {"b": b32, "e": e32},
                    {"fn": "pow", "kw": {"bf16": ["b", "e"] if exp_bf16 else ["b"]},
                     "no_fd": HALF, "rtol": 5e-2}))
    # MaxPool (without and with its indices, at opsets 10 and 12; before 9 it is refused) and AveragePool on float16
    x = distinct((2, 2, 5, 5)).astype(f16)
    for opset, idx in ((10, False), (12, True)):
        m = model([node("MaxPool", ["x"], ["y", "i"] if idx else ["y"], kernel_shape=[3, 3],
                        strides=[2, 2], pads=[1, 1, 1, 1])], {"x": x}, ["y"], opset=opset)
        out.append(("maxpool_f16_v%d" % opset, m, {"x": x},
                    {"fn": "max_pool2d", "kw": {"kernel": 3, "stride": 2, "pad": 1},
                     "no_fd": HALF, "rtol": 1e-2, "seed_dtype": "float16"}))
    m = model([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 1])], {"x": x},
              ["y"], opset=11)
    out.append(("avgpool_f16_v11", m, {"x": x},
                {"fn": "avg_pool2d", "kw": {"kernel": 2, "stride": 1}, "no_fd": HALF,
                 "rtol": 1e-2, "seed_dtype": "float16"}))
    # a small float16 MLP (MatMul, Add, Relu; ReduceMean at opset 18 with axes an input):
    # the ops compute through float32 copies, so every step rounds once to float16
    xm = distinct((4, 3), 16.0).astype(f16)
    w1, b1 = distinct((3, 5), 32.0).astype(f16), distinct((5,), 32.0).astype(f16)
    w2 = distinct((5, 2), 32.0).astype(f16)
    mlp = [node("MatMul", ["x", "w1"], ["h"]), node("Add", ["h", "b1"], ["hb"]),
           node("Relu", ["hb"], ["r"]), node("MatMul", ["r", "w2"], ["y"])]
    kwm = {"fn": "mlp", "no_fd": HALF, "rtol": 5e-3, "seed_dtype": "float16"}
    for opset in (13, 14):
        m = model(mlp, {"x": xm}, ["y"], {"w1": w1, "b1": b1, "w2": w2}, opset=opset)
        out.append(("mlp_f16_v%d" % opset, m, {"x": xm}, kwm))
    return out
