"""Gradient cases of quantization-aware training (src/grad/quant.c): fake quantization
DequantizeLinear(QuantizeLinear(x)) per tensor (int8, uint8, int16), per axis and blocked,
with the scale a trained weight, against PyTorch's learnable fake-quantize gradients (its
straight-through rules are not the derivative of the quantizer: no finite differences for
those); and DequantizeLinear of integer weights with a trained scale (exact, so checked by
finite differences too), per tensor, per axis and blocked with a partial last block.  The
'_zp' copies train the integer zero point too (its gradient a float tensor), against
PyTorch's learnable zero point (fake quantization) or autograd of (w - z)·s (DequantizeLinear)."""
import numpy as np

from helpers import RNG, model, node, rand

STE = "straight-through quantization gradients: compared with PyTorch's fake_quantize instead"


def cases():
    out = []

    def fq(name, opset, x, s, z, qt, qmin, qmax, attrs, torch_kw, zp_too=True):
        """the case, and with zp_too a copy '<name>_zp' whose zero point is trained too"""
        nodes = [node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
                 node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)]
        m = model(nodes, {"x": x}, ["y"], {"s": s}, opset=opset, consts={"z": z.astype(qt)})
        kw = dict(torch_kw, zp=z.astype(np.float64).tolist(), qmin=qmin, qmax=qmax)
        out.append((name, m, {"x": x}, {"fn": "fake_quant", "kw": kw, "no_fd": STE}))
        if zp_too:
            out.append((name + "_zp", m, {"x": x},
                        {"fn": "fake_quant", "kw": kw, "no_fd": STE, "train": ["s", "z"]}))

    # values spread past the range, so that both saturation ends are hit
    x = rand(3, 4, low=-3, high=3)
    fq("fq_tensor_int8_v10", 10, x, np.array(0.02, np.float32), np.array(3), np.int8, -128, 127, {},
       {"axis": None})
    fq("fq_tensor_uint8_v13", 13, x, np.array(0.015, np.float32), np.array(128), np.uint8, 0, 255, {},
       {"axis": None})
    fq("fq_tensor_int16_v21", 21, rand(2, 5, low=-1, high=1), np.array(2e-5, np.float32),
       np.array(-40), np.int16, -32768, 32767, {}, {"axis": None})
    xc = rand(2, 3, 4, low=-2, high=2)
    fq("fq_axis1_int8_v13", 13, xc, np.array([0.01, 0.02, 0.015], np.float32),
       np.array([0, -5, 7]), np.int8, -128, 127, {"axis": 1}, {"axis": 1})
    fq("fq_axis_last_uint8_v19", 19, xc, rand(4, low=0.008, high=0.02),
       RNG.integers(100, 150, 4), np.uint8, 0, 255, {"axis": -1}, {"axis": 2})
    xb = rand(3, 6, low=-1, high=1)
    fq("fq_blocked_int8_v21", 21, xb, rand(3, 3, low=0.004, high=0.01), RNG.integers(-4, 5, (3, 3)),
       np.int8, -128, 127, {"axis": 1, "block_size": 2}, {"axis": 1, "block": 2})

    # DequantizeLinear of integer weights, the scale trained: y = x · DQ(W)
    w = RNG.integers(-100, 100, (4, 5)).astype(np.int8)
    for opset, tag, s, z, attrs in (
            (10, "tensor", np.array(0.03, np.float32), np.array(2, np.int8), {}),
            (13, "axis1", rand(5, low=0.01, high=0.05), RNG.integers(-3, 3, 5).astype(np.int8),
             {"axis": 1}),
            (21, "blocked_partial", rand(2, 5, low=0.01, high=0.05),
             RNG.integers(-3, 3, (2, 5)).astype(np.int8), {"axis": 0, "block_size": 3})):
        xin = rand(2, 4)
        m = model([node("DequantizeLinear", ["w", "s", "z"], ["d"], **attrs),
                   node("MatMul", ["x", "d"], ["y"])], {"x": xin}, ["y"], {"s": s}, opset=opset,
                  consts={"w": w, "z": z})
        out.append(("dq_weight_" + tag, m, {"x": xin}))
        # the zero point trained too (an integer: no finite differences; dz = -sum(dY·s))
        out.append(("dq_weight_" + tag + "_zp", m, {"x": xin},
                    {"fn": "dq_matmul", "kw": {"axis": attrs.get("axis", 1), "w": w.tolist(),
                                               "block": attrs.get("block_size", 0)},
                     "no_fd": "an integer zero point: compared with PyTorch's autograd "
                              "instead of finite differences", "train": ["s", "z"]}))
    return out
