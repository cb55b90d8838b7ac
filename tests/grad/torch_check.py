#!/usr/bin/env python3
"""Gradients equal PyTorch's autograd: models built in PyTorch, exported to ONNX, then
`onnxgrad grad` with the same inputs, weights and output gradients must give every weight
and input gradient within 1e-4 relative (float32), for the loss-free models and for the
same models with a loss.  Needs PyTorch (Debian's python3-torch: run with /usr/bin/python3).
Ends with "N passed, N failed".

usage: torch_check.py BUILD_DIR [MODEL ...]"""
import json
import os
import subprocess
import sys
import tempfile

from typing import List

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


class LinReg(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 1)

    def forward(self, x):
        return self.lin(x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        h = torch.tanh(self.l2(h)) + torch.sigmoid(h)
        return torch.log_softmax(self.l3(h), dim=-1)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 4, 5, padding=2), nn.Conv2d(4, 8, 5)
        self.f1, self.f2 = nn.Linear(8 * 5 * 5, 32), nn.Linear(32, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.f2(torch.relu(self.f1(torch.flatten(x, 1))))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else None)

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2), (128, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(torch.mean(x, dim=(2, 3), keepdim=True), 1))


class TransformerBlock(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.reshape(b, t, self.h, self.dk).transpose(1, 2)
        k = k.reshape(b, t, self.h, self.dk).transpose(1, 2)
        v = v.reshape(b, t, self.h, self.dk).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-1, -2) / self.dk ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.ff2(nn.functional.gelu(self.ff1(self.ln2(x))))


class Recurrent(nn.Module):
    """a two-layer bidirectional nn.LSTM / nn.GRU / nn.RNN with learned initial states, its
    sequence output plus its last states (both layers' top), then a linear head"""

    def __init__(self, kind, batch_first, batch=3):
        super().__init__()
        cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
        extra = {"nonlinearity": "relu"} if kind == "rnn" else {}
        self.kind, self.batch_first = kind, batch_first
        self.rnn = cls(5, 4, num_layers=2, bidirectional=True, batch_first=batch_first, **extra)
        self.h0 = nn.Parameter(0.5 * torch.randn(4, batch, 4))
        if kind == "lstm":
            self.c0 = nn.Parameter(0.5 * torch.randn(4, batch, 4))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        if self.kind == "lstm":
            out, (h, c) = self.rnn(x, (self.h0, self.c0))
            last = torch.cat([h[-2], h[-1]], -1) + torch.cat([c[-2], c[-1]], -1)
        else:
            out, h = self.rnn(x, self.h0)
            last = torch.cat([h[-2], h[-1]], -1)
        return self.head(out + last.unsqueeze(1 if self.batch_first else 0))


class LoopRNN(nn.Module):
    """a scripted loop over the steps of x [T, N, 4] (exported as an ONNX Loop reading x's
    rows with Gather): h <- tanh(lin(x_t) + w * h)"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        h = torch.zeros(x.size(1), 4)
        for t in range(x.size(0)):
            h = torch.tanh(self.lin(x[t]) + self.w * h)
        return h


class ListLoop(nn.Module):
    """a scripted loop appending each step's state to a list, stacked at the end (exported
    as an ONNX Loop carrying a sequence: SequenceEmpty, SequenceInsert in the body,
    ConcatFromSequence after): h <- tanh(lin(x_t) + w * h)"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        h = torch.zeros(x.size(1), 4)
        outs = []
        for t in range(x.size(0)):
            h = torch.tanh(self.lin(x[t]) + self.w * h)
            outs.append(h * self.w)
        return torch.stack(outs, 0) + h


class CatLoop(nn.Module):
    """a scripted loop appending a variable-length piece per step, concatenated at the end
    (ConcatFromSequence without a new axis over the Loop's sequence): the first t + 1 rows of
    tanh(lin(x_t))"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        outs = []
        for t in range(x.size(0)):
            outs.append(torch.tanh(self.lin(x[t]))[: t + 1])
        return torch.cat(outs, 0)


class SeqPrev(nn.Module):
    """a scripted list recurrence reading the list's last item in the loop (a Loop whose
    body reads its carried sequence: SequenceAt(seq, -1)), divided by the list's length
    (SequenceLength), stacked at the end: h_t = tanh(lin(x_t) + w * outs[-1] / len(outs))"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        outs = [torch.tanh(self.lin(x[0]))]
        for t in range(1, x.size(0)):
            outs.append(torch.tanh(self.lin(x[t]) + self.w * outs[-1] / len(outs)))
        return torch.stack(outs, 0)


class SeqFront(nn.Module):
    """a scripted loop inserting at the list's front and reading its first item (SequenceInsert
    at position 0, SequenceAt(seq, 0) in the body)"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        outs = [torch.zeros(x.size(1), 4)]
        for t in range(x.size(0)):
            outs.insert(0, torch.sin(self.lin(x[t]) + self.w * outs[0]))
        return torch.stack(outs, 0)


class SeqAt(nn.Module):
    """a scripted loop appending to a list, items of it read after the loop (SequenceAt of the
    Loop's output sequence): outs[1] * outs[-1] + outs[0]"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        outs: List[torch.Tensor] = []
        h = torch.zeros(x.size(1), 4)
        for t in range(x.size(0)):
            h = torch.tanh(self.lin(x[t]) + self.w * h)
            outs.append(h * self.w)
        return outs[1] * outs[-1] + outs[0]


class SeqOuter(nn.Module):
    """a list made by a scripted loop, then read by a second loop (a Loop whose body reads
    a sequence of the enclosing graph: SequenceAt(items, t)) and after it:
    h_t = tanh(items[t] + w * h_{t-1}), h * items[0]"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        items: List[torch.Tensor] = []
        for t in range(x.size(0)):
            items.append(torch.tanh(self.lin(x[t])))
        h = torch.zeros(x.size(1), 4)
        for t in range(len(items)):
            h = torch.tanh(items[t] + self.w * h)
        return h * items[0]


class SeqOuterIf(nn.Module):
    """a list made by a scripted loop, read in the branches of a scripted if on the sign of
    x's sum (an If whose branches read a sequence of the enclosing graph)"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = nn.Parameter(0.5 * torch.randn(4))

    def forward(self, x):
        items: List[torch.Tensor] = []
        for t in range(x.size(0)):
            items.append(torch.tanh(self.lin(x[t])))
        if x.sum() > 0:
            y = items[1] * self.w + items[-1]
        else:
            y = torch.sin(items[0])
        return y


class Branch(nn.Module):
    """a scripted branch on the sign of x's sum (exported as an ONNX If)"""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 3)

    def forward(self, x):
        if x.sum() > 0:
            y = torch.sigmoid(self.a(x))
        else:
            y = self.b(x) * 2.0
        return y


class WithLoss(nn.Module):
    """model + loss: cross-entropy on class labels, or squared error for regression"""

    def __init__(self, model, kind):
        super().__init__()
        self.model, self.kind = model, kind

    def forward(self, x, target):
        y = self.model(x)
        if self.kind == "mse":
            return ((y - target) ** 2).mean()
        return nn.functional.cross_entropy(y.reshape(-1, y.shape[-1]), target.reshape(-1))


def build(name):
    g = torch.Generator().manual_seed(1)
    if name.startswith("linreg"):
        m, x, kind = LinReg(), torch.randn(16, 5, generator=g), "mse"
        target = torch.randn(16, 1, generator=g)
    elif name.startswith("mlp"):
        m, x, kind = MLP(), torch.randn(8, 8, generator=g), "ce"
        target = torch.randint(0, 4, (8,), generator=g)
    elif name.startswith("lenet"):
        m, x, kind = LeNet(), torch.randn(4, 1, 28, 28, generator=g), "ce"
        target = torch.randint(0, 10, (4,), generator=g)
    elif name.startswith("resnet18"):
        m, x, kind = ResNet18(), torch.randn(2, 3, 64, 64, generator=g), "ce"
        target = torch.randint(0, 10, (2,), generator=g)
    elif name.split("_")[0] in ("lstm", "gru", "rnn"):
        kind, bf = name.split("_")[0], "_bf" in name
        m, kind_loss = Recurrent(kind, bf), "mse"
        shape = (3, 6, 5) if bf else (6, 3, 5)
        x = torch.randn(*shape, generator=g)
        target = torch.randn(*shape[:2], 3, generator=g)
        return _perturb(m, g), x, target, kind_loss
    elif name.startswith("loopcat"):
        m, x, kind = torch.jit.script(CatLoop()), torch.randn(3, 4, 4, generator=g), "mse"
        target = torch.randn(6, 4, generator=g)
    elif name.startswith("looplist"):
        m, x, kind = torch.jit.script(ListLoop()), torch.randn(5, 3, 4, generator=g), "mse"
        target = torch.randn(5, 3, 4, generator=g)
    elif name.split("_")[0] in ("seqprev", "seqfront", "seqat"):
        cls = {"seqprev": SeqPrev, "seqfront": SeqFront, "seqat": SeqAt}[name.split("_")[0]]
        m, x, kind = torch.jit.script(cls()), torch.randn(5, 3, 4, generator=g), "mse"
        target = torch.randn(3, 4, generator=g) if cls is SeqAt else None
        if target is None:
            target = torch.randn(5 + (cls is SeqFront), 3, 4, generator=g)
    elif name.startswith("seqouterif"):
        shift = 1.0 if "_pos" in name else -1.0  # which branch runs
        m, kind = torch.jit.script(SeqOuterIf()), "mse"
        x = torch.randn(5, 3, 4, generator=g) + shift
        target = torch.randn(3, 4, generator=g)
    elif name.startswith("seqouter"):
        m, x, kind = torch.jit.script(SeqOuter()), torch.randn(5, 3, 4, generator=g), "mse"
        target = torch.randn(3, 4, generator=g)
    elif name.startswith("loop"):
        m, x, kind = torch.jit.script(LoopRNN()), torch.randn(5, 3, 4, generator=g), "mse"
        target = torch.randn(3, 4, generator=g)
    elif name.startswith("if"):
        shift = 1.0 if "_pos" in name else -1.0  # which branch runs
        m, x, kind = torch.jit.script(Branch()), torch.randn(2, 4, generator=g) + shift, "mse"
        target = torch.randn(2, 3, generator=g)
    elif name.startswith("transformer"):
        m, x, kind = TransformerBlock(), torch.randn(2, 5, 16, generator=g), "mse"
        target = torch.randn(2, 5, 16, generator=g)
    else:
        raise ValueError(name)
    return _perturb(m, g), x, target, kind


def _perturb(m, g):
    # no two parameters equal (LayerNorm/BatchNorm start at ones and zeros): the exporter
    # would share identical initializers, and their gradients would be summed
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return m


def check(cli, name, tmp):
    model, x, target, kind = build(name)
    with_loss = name.endswith("_loss")
    train = name.startswith("resnet18")  # batch statistics in BatchNormalization
    net = WithLoss(model, kind) if with_loss else model
    if with_loss and isinstance(model, torch.jit.ScriptModule):
        net = torch.jit.script(net)  # traced, it would lose the scripted control flow
    net.train(train)
    args = (x, target) if with_loss else (x,)
    names = ["x", "target"] if with_loss else ["x"]
    path = os.path.join(tmp, "model.onnx")
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(net, args, path, input_names=names, output_names=["y"], opset_version=15,
                      training=mode, do_constant_folding=False)
    # reference gradients: autograd with a random output gradient (the loss: 1)
    xr = x.clone().requires_grad_(True)
    y = net(xr, target) if with_loss else net(xr)
    seed = torch.ones_like(y) if with_loss else torch.randn(y.shape, generator=torch.Generator().manual_seed(5))
    params = dict(net.named_parameters())
    # allow_unused: the weights of the branch an If does not take get no gradient (zeros)
    grads = torch.autograd.grad(y, [xr] + list(params.values()), seed, allow_unused=True)
    ref = {"x": grads[0].numpy()}
    for (k, p), gr in zip(params.items(), grads[1:]):
        ref[k] = gr.numpy() if gr is not None else np.zeros(p.shape, np.float32)
    np.save(os.path.join(tmp, "x.npy"), x.numpy())
    cmd = [cli, "grad", path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--threads", "1",
           "-o", os.path.join(tmp, "out")]
    if with_loss:
        np.save(os.path.join(tmp, "t.npy"), target.numpy())
        cmd += ["--input", "target=" + os.path.join(tmp, "t.npy")]
    else:
        np.save(os.path.join(tmp, "seed.npy"), seed.numpy())
        cmd += ["--grad-output", "y=" + os.path.join(tmp, "seed.npy")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(res.stderr.strip())
    manifest = json.load(open(os.path.join(tmp, "out", "manifest.json")))
    worst, compared = 0.0, 0
    for k, want in ref.items():
        key = k + "_grad"
        if key not in manifest:
            # the exporter renames parameters it folds; match by shape+values is unsafe: skip
            continue
        ours = np.load(os.path.join(tmp, "out", manifest[key]))
        err = np.abs(ours - want).max() / max(np.abs(want).max(), 1e-6)
        worst = max(worst, float(err))
        compared += 1
        if err > 1e-4:
            raise AssertionError("%s: relative error %.3g" % (k, err))
    if compared < len(ref) // 2:
        raise AssertionError("only %d of %d gradients found by name" % (compared, len(ref)))
    return worst, compared


def main(build_dir, models):
    cli = os.path.join(build_dir, "onnxgrad")
    passed = failed = 0
    for name in models:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                worst, n = check(cli, name, tmp)
                passed += 1
                print("PASS %s: %d gradients, largest relative error %.2g" % (name, n, worst))
            except Exception as e:  # noqa: BLE001
                failed += 1
                print("FAIL %s: %s" % (name, str(e).splitlines()[-1] if str(e) else repr(e)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


ALL = ["linreg", "linreg_loss", "mlp", "mlp_loss", "lenet", "lenet_loss", "transformer",
       "transformer_loss", "resnet18", "resnet18_loss", "lstm", "lstm_bf_loss", "gru", "gru_bf",
       "gru_loss", "rnn", "rnn_bf_loss", "loop", "loop_loss", "looplist", "looplist_loss",
       "loopcat", "loopcat_loss", "seqprev", "seqprev_loss", "seqfront", "seqfront_loss",
       "seqat", "seqat_loss", "seqouter", "seqouter_loss", "seqouterif_pos", "seqouterif_neg",
       "seqouterif_pos_loss", "seqouterif_neg_loss", "if_pos", "if_neg", "if_pos_loss",
       "if_neg_loss"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:] or ALL))
