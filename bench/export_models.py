#!/usr/bin/env python3
"""Export the benchmark models from PyTorch with random weights (fixed seed):
MLP (784-512-512-10), LeNet-5 style CNN (1x28x28), ResNet-18, and torchvision's
MobileNet-v2, MobileNet-v3 (small) and EfficientNet-B0 (depthwise and squeeze-excite
blocks), eval mode, each at 1x3x224x224 and 8x3x64x64, with a batch of inputs as .npy.
Needs PyTorch and torchvision (Debian's python3-torch and python3-torchvision: run with
/usr/bin/python3).  Usage: export_models.py OUT_DIR, or export_models.py --train OUT_DIR for
the training benchmark's models (with their weights as NAME_state.pt)."""
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                 nn.Linear(512, 10))

    def forward(self, x):
        return self.net(x)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
                                        nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


# torchvision's mobile networks, by bench name: depthwise convolutions (groups == channels),
# ReLU6 (exported as Clip), HardSwish and SiLU, squeeze-excite blocks (MobileNet-v3 and
# EfficientNet), with random weights
CNNS = {"mobilenetv2": "mobilenet_v2", "mobilenetv3": "mobilenet_v3_small",
        "efficientnet": "efficientnet_b0"}


def cnn(name):
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, CNNS[name])(num_classes=1000)


# the image models at the two sizes the benchmarks run: (suffix, input shape)
SIZES = (("", (1, 3, 224, 224)), ("_64", (8, 3, 64, 64)))


def export(model, x, path, opset=13):
    model.eval()
    for m in model.modules():  # non-trivial batch-norm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(model, x, path + ".onnx", input_names=["x"], output_names=["y"],
                      opset_version=opset, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    np.save(path + "_x.npy", x.numpy())


TRAIN_MODELS = ("mlp", "lenet", "transformer", "resnet18", "mobilenetv2", "lstm")


class LSTMNet(nn.Module):
    """two stacked LSTM layers (input 128, hidden 256), batch first"""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(128, 256, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


def train_model(name):
    """A training-step benchmark model and its input, by name (only that one is built, so
    that a process's memory is that model's).  MobileNet-v2 at 8x3x64x64 has depthwise
    convolutions in the backward pass too."""
    torch.manual_seed(0)
    if name == "mlp":
        return MLP(), torch.randn(64, 784)
    if name == "lenet":
        return LeNet(), torch.randn(64, 1, 28, 28)
    if name == "transformer":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "tests", "grad"))
        from torch_check import TransformerBlock
        return TransformerBlock(d=256, heads=4), torch.randn(8, 64, 256)
    if name == "resnet18":
        return ResNet18(), torch.randn(8, 3, 64, 64)
    if name == "lstm":
        return LSTMNet(), torch.randn(32, 64, 128)
    return cnn(name), torch.randn(8, 3, 64, 64)


def export_train(out):
    """Each training model as NAME.onnx, its input NAME_x.npy and its weights NAME_state.pt
    (for the PyTorch of the bench environment, which builds the same module)."""
    os.makedirs(out, exist_ok=True)
    for name in TRAIN_MODELS:
        model, x = train_model(name)
        path = os.path.join(out, name)
        export(model, x, path, opset=14)
        torch.save(model.state_dict(), path + "_state.pt")
    print("exported", ", ".join(TRAIN_MODELS), "to", out)


def main(out):
    os.makedirs(out, exist_ok=True)
    export(MLP(), torch.randn(64, 784), os.path.join(out, "mlp"))
    export(LeNet(), torch.randn(64, 1, 28, 28), os.path.join(out, "lenet"))
    for suffix, shape in SIZES:
        torch.manual_seed(0)
        export(ResNet18(), torch.randn(*shape), os.path.join(out, "resnet18" + suffix))
        for name in CNNS:
            # opset 14: HardSwish is an op of its own there
            export(cnn(name), torch.randn(*shape), os.path.join(out, name + suffix), opset=14)
    print("exported mlp, lenet, resnet18,", ", ".join(CNNS), "to", out)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--train":
        export_train(sys.argv[2])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "bench/models")
