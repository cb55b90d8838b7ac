#!/usr/bin/env python3
"""Export one model of the acceptance suite with PyTorch and compute its reference
gradients with autograd (run with /usr/bin/python3: Debian's torch, torchvision, and
transformers from pip).  Random weights from a config: nothing is downloaded.

usage: export.py NAME OUT_DIR
NAME is <model>[_dyn|_static][_fold|_nofold][_o<opset>][_train] (opset 15 by default; the
sweep uses _o13 and _o17); _train exports in training mode
(BatchNormalization on batch statistics, as PyTorch trains; Dropout's p set to 0 since its
masks cannot match), where PyTorch keeps every parameter's name; OUT_DIR receives
  model.onnx, in_<input>.npy, seed.npy (the output gradient), y.npy (PyTorch's output),
  params.npz (every float parameter by PyTorch name), grads.npz ("input:<name>" and
  "param:<name>" gradients of sum(y * seed))."""
import os
import sys

import numpy as np
import torch

CNNS = {"resnet18": 32, "mobilenet_v2": 32, "mobilenet_v3_small": 32, "mobilenet_v3_large": 32,
        "shufflenet_v2_x0_5": 32,
        "efficientnet_b0": 32, "regnet_y_400mf": 32, "regnet_x_400mf": 32}
TEXT = ("bert", "distilbert", "gpt2")


def build(model, train=False):
    g = torch.Generator().manual_seed(1)
    if model in CNNS:
        import torchvision
        m = getattr(torchvision.models, model)(num_classes=10)
        # training mode normalizes by batch statistics: at 32x32 the last stages hold 1x1
        # maps, whose two-sample variances make the function ill-conditioned in float32
        s, n = (64, 4) if train else (CNNS[model], 2)
        return m, {"x": torch.randn(n, 3, s, s, generator=g)}, {"x": {0: "N", 2: "H", 3: "W"}}
    if model == "vit":
        from torchvision.models.vision_transformer import VisionTransformer
        m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
        return m, {"x": torch.randn(2, 3, 32, 32, generator=g)}, {"x": {0: "N"}}
    import transformers
    if model == "bert":
        cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=128, vocab_size=100,
                                      max_position_embeddings=32)
        m = transformers.BertModel(cfg)
    elif model == "distilbert":
        cfg = transformers.DistilBertConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                                            vocab_size=100, max_position_embeddings=32)
        m = transformers.DistilBertModel(cfg)
    elif model == "gpt2":
        cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=100, n_positions=32,
                                      use_cache=False)
        m = transformers.GPT2Model(cfg)
    else:
        raise SystemExit("unknown model " + model)
    m.config.return_dict = False
    ids = torch.randint(0, 100, (2, 7), generator=g)
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    return m, {"input_ids": ids, "attention_mask": mask}, dyn


class First(torch.nn.Module):
    """the first output of a model returning a tuple (transformers)"""

    def __init__(self, m, names):
        super().__init__()
        self.m, self.names = m, names

    def forward(self, *args):
        y = self.m(*args) if self.names is None else self.m(**dict(zip(self.names, args)))
        return y[0] if isinstance(y, (tuple, list)) else y


def main(name, out):
    parts = name.split("_")
    train = parts[-1] == "train"
    if train:
        parts = parts[:-1]
    opset = 15
    if len(parts) > 1 and parts[-1][:1] == "o" and parts[-1][1:].isdigit():
        opset = int(parts.pop()[1:])
    fold = parts[-1] != "nofold"
    if parts[-1] in ("fold", "nofold"):
        parts = parts[:-1]
    dyn = parts[-1] != "static"
    if parts[-1] in ("dyn", "static"):
        parts = parts[:-1]
    model = "_".join(parts)
    torch.manual_seed(0)
    m, inputs, dyn_axes = build(model, train)
    # no two parameters equal (norms start at ones and zeros): the exporter would share
    # identical initializers, and their gradients would be summed
    with torch.no_grad():
        g = torch.Generator().manual_seed(2)
        for p in m.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
        for mod in m.modules():  # running statistics away from 0 and 1 too
            if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
                mod.running_mean.uniform_(-0.2, 0.2, generator=g)
                mod.running_var.uniform_(0.5, 1.5, generator=g)
    names = list(inputs)
    net = First(m, names if model in TEXT else None).train(train)
    if train:
        for mod in net.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = 0.0
            # stochastic depth (EfficientNet) draws its masks with ConstantOfShape and
            # bernoulli, which the exporter cannot write in training mode; p = 0 makes it
            # the identity, as Dropout's, while BatchNormalization stays on batch statistics
            if type(mod).__name__ == "StochasticDepth":
                mod.p = 0.0
    args = tuple(inputs[k] for k in names)
    os.makedirs(out, exist_ok=True)
    axes = dict(dyn_axes, y={0: "N"}) if dyn else None
    saved = {k: v.clone() for k, v in net.named_buffers()}
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(net, args, os.path.join(out, "model.onnx"), input_names=names,
                      output_names=["y"], dynamic_axes=axes, opset_version=opset,
                      do_constant_folding=fold, training=mode)
    if train:  # the export ran the model: running statistics moved; start again from them
        with torch.no_grad():
            for k, v in saved.items():
                v_now = dict(net.named_buffers())[k]
                v_now.copy_(v)
    leaves = {k: v.clone().requires_grad_(v.dtype.is_floating_point) for k, v in inputs.items()}
    y = net(*(leaves[k] for k in names))
    seed = torch.randn(y.shape, generator=torch.Generator().manual_seed(5))
    params = dict(net.named_parameters())
    wrt = [leaves[k] for k in names if leaves[k].requires_grad] + list(params.values())
    grads = torch.autograd.grad(y, wrt, seed, allow_unused=True)
    ref = {}
    i = 0
    for k in names:
        if leaves[k].requires_grad:
            ref["input:" + k] = grads[i].numpy()
            i += 1
    for (k, _), gr in zip(params.items(), grads[i:]):
        if gr is not None:
            ref["param:" + k] = gr.numpy()
    for k, v in inputs.items():
        np.save(os.path.join(out, "in_%s.npy" % k), v.numpy())
    np.save(os.path.join(out, "seed.npy"), seed.numpy())
    np.save(os.path.join(out, "y.npy"), y.detach().numpy())
    np.savez(os.path.join(out, "params.npz"),
             **{k: p.detach().numpy() for k, p in params.items()})
    np.savez(os.path.join(out, "grads.npz"), **ref)
    if train:
        for k, v in saved.items():  # the float32 run above moved the running statistics
            dict(net.named_buffers())[k].copy_(v)
        float64_reference(net, names, inputs, axes, opset, fold, seed, out)


def float64_reference(net, names, inputs, axes, opset, fold, seed, out):
    """the same model, weights and input in float64 (model64.onnx, in64_<input>.npy,
    seed64.npy, grads64.npz): in training mode a ReLU input within float32 rounding of 0
    flips its sign between two float32 implementations (or against float64), and batch
    statistics spread that kink to every earlier gradient (regnet_y_400mf: PyTorch's own
    float32 gradient of x is 1.4e-2 of its largest value away from the float64 one); in
    float64 the gradients must agree (run.py: within 1e-6)"""
    import copy
    net = copy.deepcopy(net).double()
    saved = {k: v.clone() for k, v in net.named_buffers()}
    args = tuple(inputs[k].double() if inputs[k].is_floating_point() else inputs[k]
                 for k in names)
    torch.onnx.export(net, args, os.path.join(out, "model64.onnx"), input_names=names,
                      output_names=["y"], dynamic_axes=axes, opset_version=opset,
                      do_constant_folding=fold, training=torch.onnx.TrainingMode.TRAINING)
    with torch.no_grad():
        for k, v in saved.items():
            dict(net.named_buffers())[k].copy_(v)
    leaves = [a.clone().requires_grad_(a.dtype.is_floating_point) for a in args]
    y = net(*leaves)
    seed = seed.double()
    params = dict(net.named_parameters())
    wrt = [a for a in leaves if a.requires_grad] + list(params.values())
    grads = torch.autograd.grad(y, wrt, seed, allow_unused=True)
    ref = {}
    i = 0
    for k, a in zip(names, leaves):
        np.save(os.path.join(out, "in64_%s.npy" % k), a.detach().numpy())
        if a.requires_grad:
            ref["input:" + k] = grads[i].numpy()
            i += 1
    for (k, _), gr in zip(params.items(), grads[i:]):
        if gr is not None:
            ref["param:" + k] = gr.numpy()
    np.save(os.path.join(out, "seed64.npy"), seed.numpy())
    np.savez(os.path.join(out, "grads64.npz"), **ref)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
