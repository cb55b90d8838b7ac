"""Gradient cases of DFT and STFT (the adjoint transforms): real and complex inputs, onesided
outputs, inverse transforms, dft_length padding and truncating, axes 1, 2 and negative, the
axis as an attribute (17) and an input (20), lengths that are powers of two (the FFT) and not;
STFT with and without a window (its gradient too), frame_length, overlapping frames and a
complex signal.  onesided is written out for STFT: onnx 1.16's shape inference takes 0 for
an absent onesided where the schema's default is 1 (onnxgrad follows the schema), and
onnxruntime loading a saved graph runs that inference."""
from helpers import model, node, rand
import numpy as np


def i64(v):
    return np.array(v, np.int64)


def cases():
    out = []
    x_real = rand(2, 6, 3, 1)
    x_cplx = rand(2, 5, 3, 2)
    variants = [
        # tag, x, attrs, dft_length, axis (opset 20 input)
        ("real_axis1", x_real, {}, None, 1),
        ("real_onesided", x_real, {"onesided": 1}, None, 1),
        ("real_inverse", x_real, {"inverse": 1}, None, 1),
        ("real_pad8", x_real, {}, 8, 1),
        ("real_trunc4_onesided", x_real, {"onesided": 1}, 4, 1),
        ("cplx_axis2", x_cplx, {}, None, 2),
        ("cplx_inverse_pad7", x_cplx, {"inverse": 1}, 7, 1),
        ("cplx_trunc3_axism2", x_cplx, {}, 3, -2),
    ]
    for tag, x, attrs, length, axis in variants:
        for opset in (17, 20):
            ins = ["x", "L" if length else ""]
            consts = {"L": i64(length)} if length else {}
            a = dict(attrs)
            if opset >= 20:
                ins.append("axis")
                consts["axis"] = i64(axis)
            else:
                a["axis"] = axis
            while ins and ins[-1] == "":
                ins.pop()
            out.append(("dft_v%d_%s" % (opset, tag),
                        model([node("DFT", ins, ["y"], **a)], {"x": x}, ["y"], consts=consts,
                              opset=opset), {"x": x}))
    # STFT: signal [B, len, c], step, window, frame_length
    sig = rand(2, 16, 1)
    sig_c = rand(1, 12, 2)
    win8 = (0.5 + rand(8, low=0.0, high=0.5)).astype(np.float32)
    stft = [
        ("win8_step4", sig, {"step": i64(4)}, {"w": win8}, None, {"onesided": 1}),
        ("win8_step3_full", sig, {"step": i64(3)}, {"w": win8}, None, {"onesided": 0}),
        ("nowin_frame6", sig, {"step": i64(5), "F": i64(6)}, {}, None, {"onesided": 1}),
        ("win8_frame8", sig, {"step": i64(2), "F": i64(8)}, {"w": win8}, None, {"onesided": 1}),
        ("cplx_win4", sig_c, {"step": i64(3)}, {"w": win8[:4].copy()}, None, {"onesided": 0}),
    ]
    for tag, x, consts, win, _, attrs in stft:
        ins = ["x", "step", "w" if win else "", "F" if "F" in consts else ""]
        while ins[-1] == "":
            ins.pop()
        feeds = {"x": x, **win}
        out.append(("stft_v17_" + tag,
                    model([node("STFT", ins, ["y"], **attrs)], feeds, ["y"], consts=consts,
                          opset=17), feeds))
    return out + cases_pool()


def cases_pool():
    """GlobalLpPool (p 1, 2, 3; a channel of zeros gets the zero subgradient)."""
    out = []
    x = rand(2, 3, 4, 5)
    x[1, 2] = 0.0
    for p in (1, 2, 3):
        for opset in (7, 13, 18):
            out.append(("globallppool_v%d_p%d" % (opset, p),
                        model([node("GlobalLpPool", ["x"], ["y"], p=p)], {"x": x}, ["y"],
                              opset=opset), {"x": x}))
    return out
