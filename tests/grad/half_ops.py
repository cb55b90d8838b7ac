#!/usr/bin/env python3
"""Gradient graphs of the ops that compute float16 and bfloat16 (issue 12's widened list),
one node each and a few small chains, built and run by onnxgrad in the 16-bit type and
compared:

  * with the same graph in float32 at the same inputs (rounded to the 16-bit type, as the
    output gradients), run by onnxgrad: the largest difference over each output and gradient,
    relative to that tensor's largest float32 magnitude, must stay within eps · factor, eps
    the type's machine epsilon (2^-10 float16, 2^-7 bfloat16).  The factor (per case below)
    bounds a few roundings to the 16-bit type, each at most u = eps / 2 relative: the 16-bit
    graph rounds every forward and backward value once (its ops compute in float32), so an
    element of an elementwise op's gradient carries up to four of them (the forward value
    read, the derivative, the product; the seed and inputs are exact): factor 2; an op
    whose gradient sums terms (softmax, the losses, CumSum, Conv, Einsum, Resize) adds the
    rounding of the sum and of terms up to twice the sum's size on these inputs: 4; the
    normalizations (statistics, then three terms per element) and the chains of several
    ops: 6.  Measured (float32 and onnxruntime alike): at most 1.04, 2.15 and 1.84 eps.
  * with onnxruntime on the saved 16-bit training graph (`onnxgrad export`; onnx.checker with
    full_check must accept it), same inputs and seeds, where onnxruntime has the 16-bit CPU
    kernels (a case it cannot load or run is listed as not run, with onnxruntime's reason;
    onnxgrad is checked against float32 there all the same): the same bound, since both
    runtimes round the same values once each.

Every model takes float32 inputs and weights, casts them to the type, runs the op(s) and
casts the outputs back to float32 (numpy has no bfloat16), so the three types share one
harness; the casts of the inputs are exact (the values are rounded first).  Each 16-bit
type is tried where every op's schema at the model's opset lists it (onnx.defs): Celu
(float only) is left out, and the ops that list bfloat16 only from opset 22 run float16.

usage: half_ops.py ONNXGRAD_CLI [PATTERN ...]    Ends with "N passed, N failed"."""
import fnmatch
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper

try:
    import onnxruntime as ort
    ort.set_default_logger_severity(4)
except ImportError:  # the float32 comparison still runs
    ort = None

RNG = np.random.default_rng(12)
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
TYPES = {"float32": TP.FLOAT, "float16": TP.FLOAT16, "bfloat16": TP.BFLOAT16}
OPSET = 20


def round_to(a, tname):
    """float32 array a rounded to the 16-bit type (round to nearest even), as float32"""
    a = np.asarray(a, np.float32)
    if tname == "float16":
        return a.astype(np.float16).astype(np.float32)
    if tname == "bfloat16":
        u = a.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        return u.astype(np.uint32).view(np.float32)
    return a


def U(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def distinct(*shape, scale=32.0):
    """distinct values k / scale (exact in both 16-bit types for |k| < 256): no ties"""
    n = int(np.prod(shape))
    k = RNG.permutation(np.arange(-n, n))[:n]
    return (k / scale).reshape(shape).astype(np.float32)


def N(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


class Case:
    """nodes over T-typed values: float inputs `inputs` and weights `weights` (trained) come
    cast to T under their own names; `fconst` are float constants (not trained) cast to T,
    `iconst` other constants (Constant nodes); `outs` are cast back to float32."""

    def __init__(self, name, nodes, inputs, outs, weights=None, fconst=None, iconst=None,
                 factor=2, opset=OPSET):
        self.name, self.nodes, self.inputs, self.outs = name, nodes, inputs, outs
        self.weights, self.fconst = weights or {}, fconst or {}
        self.iconst, self.factor, self.opset = iconst or {}, factor, opset

    def listed(self, tname):
        """whether every op's schema at the opset lists the type for its float values (the
        constraint that takes float32)"""
        for n in self.nodes:
            s = onnx.defs.get_schema(n.op_type, self.opset, "")
            tys = [set(c.allowed_type_strs) for c in s.type_constraints]
            if not any("tensor(float)" in t and "tensor(%s)" % tname in t for t in tys):
                return False
        return True

    def model(self, tname, values):
        t = TYPES[tname]
        casts = []
        ren = {}
        for k in list(self.inputs) + list(self.weights) + list(self.fconst):
            ren[k] = k + "__t"
            casts.append(N("Cast", [k + "__f" if k in self.fconst else k], [ren[k]], to=t))
        consts = [N("Constant", [], [k + "__f"],
                    value=numpy_helper.from_array(values[k], k + "__f")) for k in self.fconst]
        consts += [N("Constant", [], [k], value=numpy_helper.from_array(v, k))
                   for k, v in self.iconst.items()]
        body = []
        for n in self.nodes:
            m = onnx.NodeProto()
            m.CopyFrom(n)
            m.input[:] = [ren.get(i, i) for i in n.input]
            m.output[:] = [o + "__t" if o in self.outs else o for o in n.output]
            body.append(m)
        back = [N("Cast", [o + "__t"], [o], to=TP.FLOAT) for o in self.outs]
        g = helper.make_graph(
            consts + casts + body + back, self.name,
            [helper.make_tensor_value_info(k, TP.FLOAT, values[k].shape) for k in self.inputs],
            [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in self.outs],
            [numpy_helper.from_array(values[k], k) for k in self.weights])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 9
        return m


def cases():
    out = []
    # elementwise: trig and hyperbolic, each on its domain
    dom = {"Asin": (-0.9, 0.9), "Acos": (-0.9, 0.9), "Atanh": (-0.9, 0.9),
           "Acosh": (1.2, 3.0), "Tan": (-1.2, 1.2)}
    for op in ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh",
               "Acosh", "Atanh"):
        lo, hi = dom.get(op, (-2.0, 2.0))
        out.append(Case(op.lower(), [N(op, ["x"], ["y"])], {"x": U(3, 5, lo=lo, hi=hi)}, ["y"]))
    # activations (inputs distinct, none at a kink)
    acts = [("Relu", {}), ("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.7}),
            ("Selu", {}), ("Sigmoid", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
            ("HardSwish", {}), ("Softplus", {}), ("Softsign", {}),
            ("ThresholdedRelu", {"alpha": 0.3}), ("Celu", {"alpha": 1.5}), ("Mish", {}),
            ("Shrink", {"lambd": 0.4, "bias": 0.1}), ("Erf", {}), ("Round", {})]
    for op, at in acts:
        x = distinct(4, 6, scale=8.0) + np.float32(1.0 / 64)
        out.append(Case(op.lower(), [N(op, ["x"], ["y"], **at)], {"x": x}, ["y"]))
    for appr in ("none", "tanh"):
        out.append(Case("gelu_" + appr, [N("Gelu", ["x"], ["y"], approximate=appr)],
                        {"x": U(4, 6, lo=-3, hi=3)}, ["y"]))
    out.append(Case("prelu", [N("PRelu", ["x", "s"], ["y"])],
                    {"x": distinct(2, 3, 4) + np.float32(1.0 / 64)}, ["y"],
                    weights={"s": U(3, 1, lo=0.05, hi=0.5)}))
    out.append(Case("clip", [N("Clip", ["x", "lo", "hi"], ["y"])],
                    {"x": distinct(4, 6, scale=16.0) + np.float32(1.0 / 64)}, ["y"],
                    fconst={"lo": np.array(-0.5, np.float32), "hi": np.array(0.75, np.float32)}))
    out.append(Case("mean", [N("Mean", ["a", "b", "c"], ["y"])],
                    {"a": U(3, 4), "b": U(4), "c": U(3, 1)}, ["y"]))
    # softmax family
    for op in ("Softmax", "LogSoftmax"):
        for axis in (-1, 0):
            out.append(Case("%s_axis%d" % (op.lower(), axis), [N(op, ["x"], ["y"], axis=axis)],
                            {"x": U(3, 4, 5, lo=-3, hi=3)}, ["y"], factor=4))
    # normalizations
    out.append(Case("batchnorm_eval", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                    {"x": U(2, 3, 4, 4)}, ["y"], weights={"s": U(3, lo=0.5, hi=1.5), "b": U(3)},
                    fconst={"m": U(3, lo=-0.2, hi=0.2), "v": U(3, lo=0.5, hi=1.5)}, factor=4))
    out.append(Case("batchnorm_train", [N("BatchNormalization", ["x", "s", "b", "m", "v"],
                                          ["y", "rm", "rv"], training_mode=1)],
                    {"x": U(4, 3, 3, 3)}, ["y"], weights={"s": U(3, lo=0.5, hi=1.5), "b": U(3)},
                    fconst={"m": U(3, lo=-0.2, hi=0.2), "v": U(3, lo=0.5, hi=1.5)}, factor=6))
    out.append(Case("instancenorm", [N("InstanceNormalization", ["x", "s", "b"], ["y"])],
                    {"x": U(2, 3, 5, 4)}, ["y"], weights={"s": U(3, lo=0.5, hi=1.5), "b": U(3)},
                    factor=6))
    for axis in (-1, 1):
        out.append(Case("layernorm_axis%d" % axis,
                        [N("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis)],
                        {"x": U(3, 4, 6)}, ["y"],
                        weights={"s": U(*((6,) if axis == -1 else (4, 6)), lo=0.5, hi=1.5),
                                 "b": U(*((6,) if axis == -1 else (4, 6)))}, factor=6))
    # Dropout: inference (identity) and training with ratio 0 (the mask path, all kept)
    out.append(Case("dropout_eval", [N("Dropout", ["x"], ["y"])], {"x": U(3, 4)}, ["y"]))
    out.append(Case("dropout_train_r0", [N("Dropout", ["x", "r", "t"], ["y", "mask"], seed=3)],
                    {"x": U(3, 4)}, ["y"],
                    iconst={"r": np.array(0.0, np.float32), "t": np.array(True)}))
    # CumSum (axis an int64 input), TopK
    for ex, rev in ((0, 0), (1, 0), (0, 1), (1, 1)):
        out.append(Case("cumsum_ex%d_rev%d" % (ex, rev),
                        [N("CumSum", ["x", "ax"], ["y"], exclusive=ex, reverse=rev)],
                        {"x": U(3, 7)}, ["y"], iconst={"ax": np.array(1, np.int64)}, factor=4))
    for largest in (1, 0):
        out.append(Case("topk_largest%d" % largest,
                        [N("TopK", ["x", "k"], ["y", "i"], axis=1, largest=largest)],
                        {"x": distinct(3, 8)}, ["y"], iconst={"k": np.array([3], np.int64)}))
    # Conv, ConvTranspose
    out.append(Case("conv", [N("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 1], strides=[2, 1])],
                    {"x": U(2, 3, 6, 5)}, ["y"], weights={"w": U(4, 3, 3, 2), "b": U(4)}, factor=4))
    out.append(Case("conv_group2_dil", [N("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 1],
                                          pads=[1, 1, 1, 1])],
                    {"x": U(1, 4, 6, 5)}, ["y"], weights={"w": U(4, 2, 2, 3)}, factor=4))
    out.append(Case("convtranspose", [N("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
                                        pads=[1, 0, 0, 1], output_padding=[1, 0])],
                    {"x": U(2, 3, 4, 3)}, ["y"], weights={"w": U(3, 2, 3, 3), "b": U(2)},
                    factor=4))
    # Einsum
    out.append(Case("einsum_matmul", [N("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")],
                    {"a": U(2, 3, 4), "b": U(2, 4, 5)}, ["y"], factor=4))
    out.append(Case("einsum_outer_sum", [N("Einsum", ["a", "b"], ["y"], equation="ij,kj->ik")],
                    {"a": U(3, 4)}, ["y"], weights={"b": U(2, 4)}, factor=4))
    # Resize linear / cubic (scales and sizes constants; the scales give whole output
    # sizes: onnxruntime's align_corners maps by in · scale, the spec by the output size)
    for mode, ctm in (("linear", "half_pixel"), ("linear", "align_corners"),
                      ("cubic", "half_pixel"), ("cubic", "asymmetric")):
        out.append(Case("resize_%s_%s" % (mode, ctm),
                        [N("Resize", ["x", "", "sc"], ["y"], mode=mode,
                           coordinate_transformation_mode=ctm)],
                        {"x": U(1, 2, 4, 4)}, ["y"],
                        iconst={"sc": np.array([1, 1, 2.0, 1.5], np.float32)}, factor=4))
    out.append(Case("resize_linear_down_sizes",
                    [N("Resize", ["x", "", "", "sz"], ["y"], mode="linear")],
                    {"x": U(1, 2, 7, 6)}, ["y"],
                    iconst={"sz": np.array([1, 2, 3, 4], np.int64)}, factor=4))
    # X's shape known only at run time: the matrices come from the node itself (a probe
    # Resize of a OneHot identity)
    for mode in ("linear", "cubic"):
        out.append(Case("resize_%s_runtime_shape" % mode,
                        [N("Shape", ["x"], ["sx"]), N("Reshape", ["x", "sx"], ["xr"]),
                         N("Resize", ["xr", "", "sc"], ["y"], mode=mode)],
                        {"x": U(1, 2, 4, 4)}, ["y"],
                        iconst={"sc": np.array([1, 1, 2.0, 1.5], np.float32)}, factor=4))
    # Gather before opset 16 (no ScatterElements reduction): dy times a OneHot of the indices
    out.append(Case("gather_onehot_v13", [N("Gather", ["x", "i"], ["y"], axis=1)],
                    {"x": U(3, 5)}, ["y"], iconst={"i": np.array([[4, 0], [2, 4]], np.int64)},
                    factor=4, opset=13))
    # the losses
    lab = np.array([1, 0, 3, 2, 4, 1], np.int64)
    for red in ("mean", "sum", "none"):
        out.append(Case("sce_" + red, [N("SoftmaxCrossEntropyLoss", ["x", "l"], ["y"],
                                         reduction=red)],
                        {"x": U(6, 5, lo=-2, hi=2)}, ["y"], iconst={"l": lab}, factor=4))
    out.append(Case("sce_weighted_ignore", [N("SoftmaxCrossEntropyLoss", ["x", "l", "cw"],
                                              ["y", "lp"], ignore_index=2)],
                    {"x": U(6, 5, lo=-2, hi=2)}, ["y", "lp"],
                    fconst={"cw": U(5, lo=0.5, hi=1.5)}, iconst={"l": lab}, factor=4))
    for red in ("mean", "none"):
        out.append(Case("nll_" + red, [N("NegativeLogLikelihoodLoss", ["x", "l", "cw"], ["y"],
                                         reduction=red)],
                        {"x": U(6, 5, lo=-2, hi=0)}, ["y"],
                        fconst={"cw": U(5, lo=0.5, hi=1.5)}, iconst={"l": lab}, factor=4))
    # small chains
    out.append(Case("chain_conv_bn_relu_gap",
                    [N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                     N("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
                     N("Relu", ["n"], ["r"]), N("GlobalAveragePool", ["r"], ["y"])],
                    {"x": U(2, 3, 5, 5)}, ["y"],
                    weights={"w": U(4, 3, 3, 3), "s": U(4, lo=0.5, hi=1.5), "b": U(4)},
                    fconst={"m": U(4, lo=-0.2, hi=0.2), "v": U(4, lo=0.5, hi=1.5)}, factor=6))
    out.append(Case("chain_layernorm_gelu_softmax",
                    [N("LayerNormalization", ["x", "s", "b"], ["n"], axis=-1),
                     N("Gelu", ["n"], ["g"]), N("MatMul", ["g", "w"], ["h"]),
                     N("Softmax", ["h"], ["y"], axis=-1)],
                    {"x": U(2, 3, 6)}, ["y"],
                    weights={"s": U(6, lo=0.5, hi=1.5), "b": U(6), "w": U(6, 4)}, factor=6))
    out.append(Case("chain_gemm_logsoftmax_nll",
                    [N("Gemm", ["x", "w", "b"], ["h"], transB=1), N("Tanh", ["h"], ["t"]),
                     N("LogSoftmax", ["t"], ["p"], axis=1),
                     N("NegativeLogLikelihoodLoss", ["p", "l"], ["y"])],
                    {"x": U(6, 4)}, ["y"], weights={"w": U(5, 4), "b": U(5)},
                    iconst={"l": lab}, factor=6))
    out.append(Case("chain_einsum_erf_cumsum_topk",
                    [N("Einsum", ["a", "w"], ["e"], equation="ij,jk->ik"), N("Erf", ["e"], ["f"]),
                     N("CumSum", ["f", "ax"], ["c"]), N("TopK", ["c", "k"], ["y", "i"], axis=1)],
                    {"a": distinct(3, 4, scale=16.0)}, ["y"], weights={"w": distinct(4, 6)},
                    iconst={"ax": np.array(1, np.int64), "k": np.array([2], np.int64)},
                    factor=6))
    return out


def run_grad(cli, path, feeds, seeds, tmp, tag):
    """onnxgrad grad: {name: array} of the outputs and gradients"""
    args = []
    for k, v in list(feeds.items()) + [(s + "@seed", v) for s, v in seeds.items()]:
        fn = os.path.join(tmp, "%s_%s.npy" % (tag, k.replace("@", "_")))
        np.save(fn, np.array(v, order="C"))  # ascontiguousarray makes rank 0 rank 1
        args += ["--grad-output", "%s=%s" % (k[:-5], fn)] if k.endswith("@seed") else \
            ["--input", "%s=%s" % (k, fn)]
    od = os.path.join(tmp, "out_" + tag)
    subprocess.run([cli, "grad", path] + args + ["--threads", "1", "-o", od], check=True,
                   capture_output=True, text=True)
    man = json.load(open(os.path.join(od, "manifest.json")))
    return {k: np.load(os.path.join(od, f)) for k, f in man.items()}


def rel(a, ref):
    """largest |a − ref| relative to ref's largest magnitude (absolute where ref is 0)"""
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    if a.shape != ref.shape:
        raise AssertionError("shape %s, float32 has %s" % (a.shape, ref.shape))
    if not ref.size:
        return 0.0
    if not np.isfinite(a).all():
        raise AssertionError("non-finite values")
    return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1.0 if not ref.any() else 0.0))


def check_one(cli, case, tname, tmp):
    """(largest relative error against float32, same against onnxruntime or a reason why
    it did not run); raises on a failure"""
    vals = {}
    for d in (case.inputs, case.weights, case.fconst):
        for k, v in d.items():
            vals[k] = round_to(v, tname)
    m16 = case.model(tname, vals)
    m32 = case.model("float32", vals)
    p16, p32 = os.path.join(tmp, "m16.onnx"), os.path.join(tmp, "m32.onnx")
    onnx.save(m16, p16)
    onnx.save(m32, p32)
    feeds = {k: vals[k] for k in case.inputs}
    # the outputs' shapes: a float32 run with ones as seeds
    first = run_grad(cli, p32, feeds, {}, tmp, "shape")
    seeds = {o: round_to(RNG.standard_normal(first[o].shape).astype(np.float32), tname)
             for o in case.outs}
    g32 = run_grad(cli, p32, feeds, seeds, tmp, "f32")
    g16 = run_grad(cli, p16, feeds, seeds, tmp, tname)
    tol = EPS[tname] * case.factor
    if set(g16) != set(g32):
        raise AssertionError("outputs %s, float32 gives %s" % (sorted(g16), sorted(g32)))
    grads = [k for k in g32 if k.endswith("_grad")]
    if len(grads) != len(case.inputs) + len(case.weights):
        raise AssertionError("gradients %s" % grads)
    worst = 0.0
    for k in g32:
        e = rel(g16[k], g32[k])
        if not e <= tol:
            raise AssertionError("%s: relative error %.3g against float32 > %.3g" % (k, e, tol))
        worst = max(worst, e)
    # onnxruntime on the saved training graph
    if ort is None:
        return worst, "onnxruntime not installed"
    ed = os.path.join(tmp, "export_" + tname)
    subprocess.run([cli, "export", p16, "-o", ed], check=True, capture_output=True, text=True)
    # the saved graph is valid ONNX whether or not onnxruntime has its kernels (a 16-bit type
    # an emitted op's schema does not list fails here)
    onnx.checker.check_model(onnx.load(os.path.join(ed, "training.onnx")), full_check=True)
    try:
        sess = ort.InferenceSession(os.path.join(ed, "training.onnx"),
                                    providers=["CPUExecutionProvider"])
        of = dict(feeds)
        for o, s in seeds.items():
            of[o + "_grad"] = s
        names = [i.name for i in sess.get_inputs()]
        got = dict(zip([o.name for o in sess.get_outputs()],
                       sess.run(None, {k: v for k, v in of.items() if k in names})))
    except Exception as e:  # noqa: BLE001 - onnxruntime lacks a 16-bit kernel
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return worst, "not run: " + msg[:150]
    ow = 0.0
    for k, v in got.items():
        if k not in g16:
            continue
        e = rel(g16[k], v)
        if not e <= tol:
            raise AssertionError("%s: relative difference %.3g from onnxruntime > %.3g"
                                 % (k, e, tol))
        ow = max(ow, e)
    return worst, ow


def main(cli, patterns=()):
    passed = failed = 0
    ort_run = ort_not = 0
    for case in cases():
        types = [t for t in ("float16", "bfloat16") if case.listed(t)]
        for tname in types:
            name = "%s_%s" % (case.name, "f16" if tname == "float16" else "bf16")
            if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
                continue
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    e32, eo = check_one(cli, case, tname, tmp)
                except Exception as e:  # noqa: BLE001 - report and count any failure
                    failed += 1
                    msg = getattr(e, "stderr", "") or str(e)
                    print("FAIL %s: %s" % (name, msg.strip().splitlines()[-1] if msg else e))
                    continue
            passed += 1
            if isinstance(eo, float):
                ort_run += 1
                ortmsg = "onnxruntime %.2g" % eo
            else:
                ort_not += 1
                ortmsg = "onnxruntime %s" % eo
            print("PASS %s (float32 %.2g, bound %.2g; %s)"
                  % (name, e32, EPS[tname] * case.factor, ortmsg))
    print("%d passed, %d failed (onnxruntime compared on %d, not run on %d)"
          % (passed, failed, ort_run, ort_not))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
