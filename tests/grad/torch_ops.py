#!/usr/bin/env python3
"""Gradients of single ops equal PyTorch's autograd: every gradient case with a torch.json
(written by make_cases.py from the cases' fourth element) names the PyTorch function that
computes its model; its inputs and weights get autograd's gradients for a random output
gradient, and `onnxgrad grad` with the same output gradient must agree within 1e-4
relative (float32; a case's "rtol" for 16-bit floats).  Needs PyTorch (Debian's python3-torch: run with /usr/bin/python3) and
torchvision for roi_align.  Ends with "N passed, N failed".

usage: torch_ops.py BUILD_DIR [PATTERN ...]   (cases matching a shell pattern; needs the
                                              cases made by tests/grad/run.sh)"""
import fnmatch
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F


def group_norm(t, kw):
    s, b = t["s"], t["b"]
    if kw.get("per_group"):  # opset 18: one scale and bias per group
        cg = t["x"].shape[1] // kw["groups"]
        s, b = s.repeat_interleave(cg), b.repeat_interleave(cg)
    return F.group_norm(t["x"], kw["groups"], s, b, kw.get("eps", 1e-5))


def lrn(t, kw):
    x = t["x"] * t["w"] if "w" in t else t["x"]  # a weight in front: x·w
    return F.local_response_norm(x, kw["size"], kw.get("alpha", 1e-4), kw.get("beta", 0.75),
                                 kw.get("k", 1.0))


def max_unpool2d(t, kw):
    # ONNX's indices run over the whole [N, C, H, W] block; PyTorch's over each plane
    ind = torch.tensor(kw["indices"], dtype=torch.int64)
    n, c = ind.shape[:2]
    plane = kw["cover"][0] * kw["cover"][1]
    ind = ind - (torch.arange(n * c) * plane).reshape(n, c, 1, 1)
    return F.max_unpool2d(t["x"], ind, kw["kernel"], kw["stride"], output_size=kw["cover"])


def fold(t, kw):
    # PyTorch pads symmetrically: fold into the padded image, then crop the pads off
    (h, w), p = kw["image"], kw["pads"]
    y = F.fold(t["x"], [h + p[0] + p[2], w + p[1] + p[3]], kw["block"], kw["dilation"], 0,
               kw["stride"])
    return y[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


def roi_align(t, kw):
    import torchvision
    boxes = torch.cat([torch.tensor(kw["bi"], dtype=torch.float64)[:, None],
                       torch.tensor(kw["rois"], dtype=torch.float64)], 1)
    return torchvision.ops.roi_align(t["x"], boxes, kw["out"], kw["scale"], kw["sr"] or -1,
                                     kw["aligned"])


def fake_quant(t, kw):
    """PyTorch's learnable fake quantization (gradients for x and the scale), per tensor or
    per channel; blocked quantization as per channel over the blocks"""
    x, s = t["x"].float(), t["s"].float()  # PyTorch fake-quantizes float32 only
    # a trained zero point is a weight "z" (its learnable zero point), else a constant
    zp = t["z"].float() if "z" in t else torch.tensor(kw["zp"], dtype=torch.float32)
    if kw["axis"] is None:
        return torch._fake_quantize_learnable_per_tensor_affine(x, s.reshape(1), zp.reshape(1),
                                                                kw["qmin"], kw["qmax"], 1.0)
    if kw.get("block"):  # x [M, D] in blocks of B along axis 1: channels are (m, block)
        m, d, b = x.shape[0], x.shape[1], kw["block"]
        y = torch._fake_quantize_learnable_per_channel_affine(
            x.reshape(m * d // b, b), s.reshape(-1), zp.reshape(-1), 0, kw["qmin"], kw["qmax"], 1.0)
        return y.reshape(m, d)
    return torch._fake_quantize_learnable_per_channel_affine(x, s, zp, kw["axis"], kw["qmin"],
                                                             kw["qmax"], 1.0)


def dq_matmul(t, kw):
    """x · DequantizeLinear(w, s, z), the zero point z differentiated as a real number:
    per tensor, per axis, or blocked along the axis (a partial last block allowed)"""
    w, s, z = torch.tensor(kw["w"], dtype=torch.float64), t["s"], t["z"]
    if kw["block"]:
        b, ax = kw["block"], kw["axis"]
        s = s.repeat_interleave(b, dim=ax).narrow(ax, 0, w.shape[ax])
        z = z.repeat_interleave(b, dim=ax).narrow(ax, 0, w.shape[ax])
    elif s.dim() == 1 and kw["axis"] == 0:
        s, z = s[:, None], z[:, None]
    return t["x"] @ ((w - z) * s)


def pow_(t, kw):
    """b ** e; kw "bf16" names the inputs the model rounds to bfloat16 first (a Cast, whose
    gradient passes straight through), kw "e" a constant exponent"""
    r = {k: t[k].to(torch.bfloat16).double() if k in kw.get("bf16", ()) else t[k] for k in t}
    return r["b"] ** (r["e"] if "e" in r else kw["e"])


FUNCS = {
    "pow": pow_,
    "mlp": lambda t, kw: F.relu(t["x"] @ t["w1"] + t["b1"]) @ t["w2"],
    "max_pool2d": lambda t, kw: F.max_pool2d(t["x"], kw["kernel"], kw["stride"], kw["pad"]),
    "avg_pool2d": lambda t, kw: F.avg_pool2d(t["x"], kw["kernel"], kw["stride"]),
    "dq_matmul": dq_matmul,
    "fake_quant": fake_quant,
    "roi_align": roi_align,
    "grid_sample": lambda t, kw: F.grid_sample(t["x"], t["g"], kw["mode"], kw["padding"],
                                               bool(kw["ac"])),
    "affine_grid": lambda t, kw: F.affine_grid(t["t"], kw["size"], bool(kw["ac"])),
    "det": lambda t, kw: torch.linalg.det(t["x"]),
    "fold": fold,
    "lp_pool2d": lambda t, kw: F.lp_pool2d(t["x"], kw["p"], kw["kernel"], kw["stride"]),
    "max_unpool2d": max_unpool2d,
    "group_norm": group_norm,
    "lrn": lrn,
    "normalize": lambda t, kw: F.normalize(t["x"], p=kw["p"], dim=kw["dim"]),
}


def check(cli, d):
    spec = json.load(open(os.path.join(d, "torch.json")))
    arrays = {k: np.load(os.path.join(d, f)) for k, f in spec["inputs"].items()}
    arrays.update({k: np.load(os.path.join(d, f)) for k, f in spec["weights"].items()})
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in arrays.items()}
    y = FUNCS[spec["fn"]](t, spec.get("kw", {}))
    seed = torch.randn(y.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    # the seed in the model output's type (a float16 model takes a float16 seed), the same
    # rounded values given to autograd
    sdt = np.dtype(spec.get("seed_dtype", "float32"))
    seed = torch.tensor(seed.numpy().astype(sdt).astype(np.float64))
    names = list(t)
    grads = torch.autograd.grad(y, [t[k] for k in names], seed, allow_unused=True)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "seed.npy"), seed.numpy().astype(sdt))
        args = open(os.path.join(d, "args")).read().split()
        out = spec.get("output", "y")
        res = subprocess.run([cli, "grad", os.path.join(d, "model.onnx")] + args +
                             ["--grad-output", "%s=%s" % (out, os.path.join(tmp, "seed.npy")),
                              "--threads", "1", "-o", os.path.join(tmp, "out")],
                             capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError(res.stderr.strip())
        manifest = json.load(open(os.path.join(tmp, "out", "manifest.json")))
        worst = 0.0
        for k, g in zip(names, grads):
            want = np.zeros(arrays[k].shape) if g is None else g.numpy()
            ours = np.load(os.path.join(tmp, "out", manifest[k + "_grad"]))
            err = np.abs(ours - want).max() / max(np.abs(want).max(), 1e-3)
            worst = max(worst, float(err))
            if err > spec.get("rtol", 1e-4):
                raise AssertionError("%s: relative error %.3g" % (k, err))
    return worst, len(names)


def main(build, patterns=()):
    cli = os.path.join(build, "onnxgrad")
    cases = os.path.join(build, "grad_cases")
    passed = failed = 0
    for name in sorted(os.listdir(cases)):
        d = os.path.join(cases, name)
        if not os.path.isfile(os.path.join(d, "torch.json")):
            continue
        if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        try:
            worst, n = check(cli, d)
            passed += 1
            print("PASS %s: %d gradients, largest relative error %.2g" % (name, n, worst))
        except Exception as e:  # noqa: BLE001 - report and count any failure
            failed += 1
            print("FAIL %s: %s" % (name, str(e).splitlines()[-1] if str(e) else repr(e)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
