#!/usr/bin/env python3
"""BatchNormalization's running statistics in training: a CNN exported by PyTorch in
training mode (BatchNormalization with training_mode=1, two momentums), trained 4 SGD steps by
`onnxgrad train` and by PyTorch on the same batches: the running means and variances
(PyTorch's update: momentum, unbiased batch variance) and the weights agree.  (The biases of
the convolutions before a BatchNormalization get a zero gradient and stay put, in both.)  The
convolutions take the CPU paths that derive something from their weights (the 16 -> 16 one
Winograd's transformed weights, the first one packed panels, batch 8 on 8x8): every step must
see the weights the step before wrote.
  bn_torch.py make DIR      (/usr/bin/python3: torch) the model, the data, PyTorch's result
  bn_torch.py compare DIR   (python3: onnx) onnxgrad's trained model against PyTorch's"""
import sys

import numpy as np


def make(d):
    import torch
    from torch import nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                      nn.Conv2d(16, 6, 3, stride=2), nn.BatchNorm2d(6, momentum=0.3), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3))
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.5, 0.5)
    m.train()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 3, 8, 8, generator=g)
    y = torch.randint(0, 3, (32,), generator=g)
    torch.onnx.export(m, x[:8], d + "/model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=15,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    np.savez(d + "/data.npz", X=x.numpy(), y=y.numpy())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for k in range(4):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x[8 * k:8 * k + 8]), y[8 * k:8 * k + 8])
        loss.backward()
        opt.step()
    np.savez(d + "/torch.npz", **{k: v.detach().numpy() for k, v in m.state_dict().items()
                                  if v.dtype.is_floating_point})


def compare(d):
    import onnx
    from onnx import numpy_helper
    want = dict(np.load(d + "/torch.npz"))
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(d + "/out.onnx").graph.initializer}
    start = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(d + "/model.onnx").graph.initializer}
    bad = 0
    for k, v in want.items():
        if k not in got:
            print("FAIL %s: not in the trained model" % k)
            bad += 1
            continue
        err = float(np.abs(got[k] - v).max()) / max(float(np.abs(v).max()), 1e-6)
        moved = float(np.abs(v - start[k]).max())
        stat = k.endswith(("running_mean", "running_var"))
        ok = err < 2e-5 and (moved > 1e-4 or not stat)  # equal; statistics really updated
        print("%s %s: relative difference %.2g (moved %.2g)" % ("PASS" if ok else "FAIL", k,
                                                                  err, moved))
        bad += not ok
    print("%d passed, %d failed" % (len(want) - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2]))
