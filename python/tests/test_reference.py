"""Gradients from the Python API equal the CLI's (`onnxgrad grad`, same library, other code
path: og_grad_run) and PyTorch's autograd (models exported from PyTorch)."""
import json
import os
import subprocess

import numpy as np
import pytest

from onnxgrad import OrtGradientForwardBackward

from conftest import TORCH_MODELS, linreg_model, two_output_model


def cli_grad(cli, model_path, inputs, seeds, tmp):
    """{name: array} of outputs and gradients written by `onnxgrad grad`."""
    cmd = [cli, "grad", model_path, "--threads", "1", "-o", os.path.join(tmp, "out")]
    for name, a in inputs.items():
        p = os.path.join(tmp, "in_%s.npy" % name)
        np.save(p, a)
        cmd += ["--input", "%s=%s" % (name, p)]
    for name, a in seeds.items():
        p = os.path.join(tmp, "seed_%s.npy" % name)
        np.save(p, a)
        cmd += ["--grad-output", "%s=%s" % (name, p)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    with open(os.path.join(tmp, "out", "manifest.json")) as f:
        manifest = json.load(f)
    return {k: np.load(os.path.join(tmp, "out", v)) for k, v in manifest.items()}


def python_grad(model, inputs, seeds, **kw):
    fw = OrtGradientForwardBackward(model, threads=1, **kw)
    inst = fw.new_instance()
    outs = inst.forward(inputs, training=True)
    grads = inst.backward([seeds.get(n) for n in fw.output_names])
    res = dict(zip(fw.output_names, outs))
    res.update({n + "_grad": g for n, g in zip(fw.grad_input_names, grads)})
    return res


def models(root, tmp):
    rng = np.random.default_rng(11)
    lin = os.path.join(tmp, "linreg.onnx")
    with open(lin, "wb") as f:
        f.write(linreg_model().SerializeToString())
    two = os.path.join(tmp, "two.onnx")
    with open(two, "wb") as f:
        f.write(two_output_model().SerializeToString())
    x5 = rng.standard_normal((64, 5)).astype(np.float32)
    x8 = rng.standard_normal((16, 8)).astype(np.float32)
    x4 = rng.standard_normal((6, 4)).astype(np.float32)
    return [
        ("linreg", lin, {"X": x5}, {"Y": rng.standard_normal((64, 1)).astype(np.float32)}),
        ("linreg_ones", lin, {"X": x5[:1]}, {}),
        ("mlp", os.path.join(root, "models", "mlp.onnx"), {"x": x8},
         {"probs": rng.standard_normal((16, 3)).astype(np.float32)}),
        ("two_outputs", two, {"X": x4}, {"Y1": rng.standard_normal((6, 3)).astype(np.float32),
                                         "Y2": rng.standard_normal((6,)).astype(np.float32)}),
    ]


@pytest.mark.parametrize("case", ["linreg", "linreg_ones", "mlp", "two_outputs"])
def test_equal_to_cli(case, cli, tmp_path):
    from conftest import ROOT

    name, path, inputs, seeds = {m[0]: m for m in models(ROOT, str(tmp_path))}[case]
    ref = cli_grad(cli, path, inputs, seeds, str(tmp_path))
    ours = python_grad(path, inputs, seeds)
    assert set(ours) == set(ref), (sorted(ours), sorted(ref))
    for k, want in ref.items():
        assert ours[k].dtype == want.dtype and ours[k].shape == want.shape, k
        np.testing.assert_allclose(ours[k], want, rtol=1e-6, atol=1e-7, err_msg=k)


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_equal_to_pytorch(name, torch_refs):
    folder = os.path.join(torch_refs, name)
    with open(os.path.join(folder, "ref.json")) as f:
        ref = json.load(f)
    x = np.load(os.path.join(folder, "x.npy"))
    inputs = {"x": x}
    if os.path.exists(os.path.join(folder, "target.npy")):
        inputs["target"] = np.load(os.path.join(folder, "target.npy"))
    seed = np.load(os.path.join(folder, "seed.npy"))
    fw = OrtGradientForwardBackward(os.path.join(folder, "model.onnx"), threads=1)
    inst = fw.new_instance()
    y, = inst.forward(inputs, training=True)
    np.testing.assert_allclose(y, np.load(os.path.join(folder, "y.npy")).reshape(y.shape),
                               rtol=1e-4, atol=1e-5)
    grads = dict(zip(fw.grad_input_names, inst.backward([seed.reshape(y.shape).astype(y.dtype)])))
    compared = 0
    for k, fname in ref.items():
        if k not in grads:  # a parameter the exporter renamed or folded
            continue
        want = np.load(os.path.join(folder, fname))
        got = grads[k]
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-6)
        assert err < 1e-4, "%s: relative error %.3g" % (k, err)
        compared += 1
    print("%s: %d of %d gradients compared" % (name, compared, len(ref)))
    assert compared >= max(2, len(ref) // 2), "only %d of %d gradients found by name" % (
        compared, len(ref))
