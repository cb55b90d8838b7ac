#!/usr/bin/python3
"""Reference gradients from PyTorch for the Python package's tests.  Runs under Debian's
/usr/bin/python3 (python3-torch), which has no onnx package: the tests call it through
subprocess.  For each model name (those of tests/grad/torch_check.py: linreg, mlp, lenet,
transformer, ..., with or without "_loss") it writes into OUT_DIR/NAME/:
  model.onnx     the model exported by torch.onnx (inputs "x" [and "target"], output "y")
  x.npy, target.npy (with a loss), seed.npy (the output gradient: ones with a loss)
  ref.json       {"x": "x_grad.npy", "<parameter name>": "<file>.npy", ...}
The gradients come from torch.autograd with that seed.

usage: /usr/bin/python3 torch_ref.py OUT_DIR NAME [NAME ...]"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "grad"))
from torch_check import WithLoss, build  # noqa: E402


def export(name, out):
    os.makedirs(out, exist_ok=True)
    model, x, target, kind = build(name)
    with_loss = name.endswith("_loss")
    train = name.startswith("resnet18")
    net = WithLoss(model, kind) if with_loss else model
    net.train(train)
    args = (x, target) if with_loss else (x,)
    names = ["x", "target"] if with_loss else ["x"]
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(net, args, os.path.join(out, "model.onnx"), input_names=names,
                      output_names=["y"], opset_version=15, training=mode,
                      do_constant_folding=False)
    xr = x.clone().requires_grad_(True)
    y = net(xr, target) if with_loss else net(xr)
    seed = (torch.ones_like(y) if with_loss else
            torch.randn(y.shape, generator=torch.Generator().manual_seed(5)))
    params = dict(net.named_parameters())
    grads = torch.autograd.grad(y, [xr] + list(params.values()), seed)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "seed.npy"), seed.detach().numpy().reshape(y.shape))
    np.save(os.path.join(out, "y.npy"), y.detach().numpy())
    if with_loss:
        np.save(os.path.join(out, "target.npy"), target.numpy())
    ref = {"x": "x_grad.npy"}
    np.save(os.path.join(out, "x_grad.npy"), grads[0].numpy())
    for i, ((k, _), g) in enumerate(zip(params.items(), grads[1:])):
        fname = "p%d_grad.npy" % i
        np.save(os.path.join(out, fname), g.numpy())
        ref[k] = fname
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump(ref, f)


def main(argv):
    torch.manual_seed(0)
    out_dir = argv[1]
    for name in argv[2:]:
        export(name, os.path.join(out_dir, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
