#!/usr/bin/env python3
"""Training matches PyTorch: same initial weights, data order and hyperparameters, 100
steps of SGD with momentum (and Nesterov), Adam, AdamW and Adagrad; every trained weight of
`onnxgrad train` equals PyTorch's within 1e-4 relative (float32).

Two interpreters take part (Debian's python3-torch lacks onnx, the pyenv python lacks
torch), so this runs in three steps (tests/train/run.sh drives them):
  /usr/bin/python3 torch_match.py make DIR     model.onnx, data.npz, torch_<opt>.npz
  onnxgrad train ... -o DIR/out_<opt>.onnx     (run.sh)
  python3 torch_match.py compare DIR           reads the ONNX initializers, compares
"""
import os
import sys

import numpy as np

# name, onnxgrad train options, PyTorch optimizer factory (a string, evaluated with torch)
OPTIMIZERS = [
    ("momentum", "--optimizer momentum --lr 0.05 --momentum 0.9",
     "torch.optim.SGD(p, lr=0.05, momentum=0.9)"),
    ("nesterov", "--optimizer nesterov --lr 0.05 --momentum 0.9 --weight-decay 0.001",
     "torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.001)"),
    ("adam", "--optimizer adam --lr 0.01", "torch.optim.Adam(p, lr=0.01)"),
    ("adamw", "--optimizer adamw --lr 0.01 --weight-decay 0.05",
     "torch.optim.AdamW(p, lr=0.01, weight_decay=0.05)"),
    ("adagrad", "--optimizer adagrad --lr 0.05", "torch.optim.Adagrad(p, lr=0.05)"),
    ("sgd_clip", "--optimizer sgd --lr 0.2 --clip-norm 0.5", "torch.optim.SGD(p, lr=0.2)"),
]
N, BATCH, EPOCHS = 160, 16, 10  # 100 steps


def make(out):
    import torch
    from torch import nn

    torch.manual_seed(0)
    # Smooth activations: with a ReLU, a unit whose pre-activation sits within rounding of
    # zero on one sample gets a zero gradient in one framework and a tiny one in the other,
    # and Adam's normalization turns that into a whole lr-sized step (measured: 3.5e-2 after
    # 100 steps on this MLP with a ReLU, all from one unit; 1e-6 up to then).
    model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 16), nn.Sigmoid(),
                          nn.Linear(16, 3))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 10)).astype(np.float32)
    y = rng.integers(0, 3, N).astype(np.int64)
    np.savez(os.path.join(out, "data.npz"), X=x, y=y)
    torch.onnx.export(model, torch.from_numpy(x[:2]), os.path.join(out, "model.onnx"),
                      input_names=["X"], output_names=["logits"],
                      dynamic_axes={"X": {0: "N"}, "logits": {0: "N"}}, opset_version=13,
                      do_constant_folding=False)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    for name, _, factory in OPTIMIZERS:
        model.load_state_dict(start)
        p = model.parameters()
        opt = eval(factory)
        loss_fn = nn.CrossEntropyLoss()
        for _ in range(EPOCHS):
            for b in range(0, N, BATCH):
                opt.zero_grad()
                loss = loss_fn(model(torch.from_numpy(x[b:b + BATCH])),
                               torch.from_numpy(y[b:b + BATCH]))
                loss.backward()
                if name == "sgd_clip":
                    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
        np.savez(os.path.join(out, "torch_%s.npz" % name),
                 **{k: v.detach().numpy() for k, v in model.state_dict().items()})


def compare(out):
    import onnx
    from onnx import numpy_helper

    failed = 0
    for name, _, _ in OPTIMIZERS:
        ref = np.load(os.path.join(out, "torch_%s.npz" % name))
        m = onnx.load(os.path.join(out, "out_%s.onnx" % name))
        inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        worst, where = 0.0, ""
        for k in ref.files:
            if k not in inits:
                print("FAIL %s: PyTorch's %s is not an initializer of the trained model" % (name, k))
                failed += 1
                continue
            a, b = inits[k].astype(np.float64), ref[k].astype(np.float64)
            if a.shape != b.shape and a.size == b.size:
                a = a.reshape(b.shape)
            err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-12)
            if err > worst:
                worst, where = err, k
        ok = worst <= 1e-4
        failed += not ok
        print("%s %s: largest relative difference %.2e (%s) after %d steps"
              % ("PASS" if ok else "FAIL", name, worst, where, EPOCHS * N // BATCH))
    print("%d passed, %d failed" % (len(OPTIMIZERS) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "options":
        for name, opts, _ in OPTIMIZERS:
            print("%s %s" % (name, opts))
        sys.exit(0)
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "compare"):
        sys.exit("usage: torch_match.py make|compare DIR  |  torch_match.py options")
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2]))
