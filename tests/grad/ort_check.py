#!/usr/bin/env python3
"""The saved training graphs run unchanged in onnxruntime and give onnxgrad's outputs and
gradients: for every gradient case (build/grad_cases, made by run.sh), `onnxgrad export`
writes the graphs, onnx.checker (full_check) accepts both, onnxruntime runs the training
graph with random output gradients, and `onnxgrad grad` with the same seeds must agree
(rtol 1e-4, atol 1e-5, float32); a training graph with model-local functions (the recurrent
ops') is also loaded back and run by `onnxgrad run`, which must agree too.  Ends with "N
passed, N failed".

usage: ort_check.py BUILD_DIR [PATTERN ...]   (only the cases matching a shell pattern)"""
import fnmatch
import os
import subprocess
import sys
import tempfile
import json

import numpy as np
import onnx
import onnxruntime as ort

ort.set_default_logger_severity(3)

# Cases where onnxruntime's FORWARD semantics differ from onnxgrad's (which follow the ONNX
# spec and its reference implementation); their gradients are checked by finite differences.
KNOWN = {
    "avgpool_ceil_cip_v11": "onnxruntime divides a ceil_mode window that runs past the "
                            "padding by the cells inside the padded input; ONNX's reference "
                            "divides by the kernel volume",
    "bn_train_v9_stats_out": "BatchNormalization-9 saved_var: onnxruntime returns another "
                             "statistic than the batch variance",
    "bn_dyn_v7_per_activation_train": "onnxruntime's BatchNormalization computes batch "
                                      "statistics for spatial BN only (checked by finite "
                                      "differences)",
    "convt2d_output_shape_beyond": "onnxruntime refuses an output_shape larger than the full "
                                   "ConvTranspose result, which the spec allows",
    "convt2d_output_shape_beyond_v7": "as convt2d_output_shape_beyond",
    "convt2d_output_shape_v7": "ConvTranspose-7 splits odd padding as ConvTranspose-1 "
                               "specifies; onnxruntime uses the opset-11 split at every opset",
}
# onnxruntime's LRN computes 4-D inputs and odd sizes only (the spec has any rank >= 2 and
# any size)
for _c in ("lrn_size4_attrs_v13", "lrn_size1_5d_v13", "lrn_3d"):
    KNOWN[_c] = "onnxruntime's LRN takes 4-D inputs and odd sizes only"
for _c in ("avgpool_dyn_ceil_cip_k3s2_v11", "avgpool_dyn_ceil_cip_k3s2_v13"):
    KNOWN[_c] = KNOWN["avgpool_ceil_cip_v11"]
KNOWN["scan8_lens0"] = ("onnxruntime's Scan-8 refuses a sequence_lens entry of 0, which the "
                        "spec allows (a row that keeps its initial state)")
for _c in ("loop_seq_read_final_omitted_v13", "loop_seq_read_final_omitted_v16"):
    KNOWN[_c] = ("onnxruntime crashes (a segmentation fault) running a Loop whose loop-carried "
                 "output is omitted (an empty name), which the spec allows; the training graph "
                 "names every output of the Loops it adds")
KNOWN["convtranspose_dyn_oshape_beyond"] = "as convt2d_output_shape_beyond"
KNOWN["convtranspose_dyn_oshape_beyond_v9"] = "as convt2d_output_shape_beyond"
for _c in ("convtranspose_dyn_oshape_odd_v9", "convtranspose_dyn_oshape_group2_v9"):
    KNOWN[_c] = "as convt2d_output_shape_v7 (ConvTranspose-1's split of odd padding)"
KNOWN["maxunpool_dyn_output_shape_larger"] = "as maxunpool_output_shape"
KNOWN["maxunpool_dyn_output_shape_larger_v9"] = "as maxunpool_output_shape"
for _c in ("resize_dyn_either_scales_v11", "resize_dyn_either_scales_v13",
           "resize_dyn_either_sizes_v11", "resize_dyn_either_sizes_v13"):
    KNOWN[_c] = ("onnxruntime refuses to load a Resize given both scales and sizes inputs whose "
                 "lengths its shape inference cannot see (which one is empty is known at run "
                 "time only)")
KNOWN["maxunpool_output_shape"] = ("onnxruntime writes MaxUnpool's indices straight into a "
                                   "larger output_shape; the ONNX reference (and the backend "
                                   "test data) put the covered block at its start")
for _c in ("gridsample_1d_cubic_reflection", "gridsample_3d_cubic_border"):
    KNOWN[_c] = "onnxruntime's GridSample samples 2-D inputs, and 3-D ones but not cubic"
# Einsum with an explicit output that drops the inputs' ellipsis (its axes are summed):
# onnxruntime (and numpy, ONNX's reference) refuse the equation.
for _c in ("einsum_ell_summed", "einsum_ell_summed_v12", "einsum_ell_summed_two",
           "einsum_ell_summed_mid"):
    KNOWN[_c] = "onnxruntime refuses an Einsum output without the inputs' ellipsis"

for _c in ("pow_bf16_v13", "pow_bf16_bf16exp_v15"):
    KNOWN[_c] = ("onnxruntime has no CPU Pow for bfloat16 (checked against PyTorch instead, "
                 "tests/grad/torch_ops.py)")

# Gradients whose terms cancel with the seeds' signs made positive too, so that the |seeds|
# run below underestimates them: the magnitude of their terms, worked out by hand.
# fq_tensor_int8_v10: the scale's gradient is sum(dY * q) - sum(dY * x / s) over the
# unsaturated cells, two sums of about 500 each (x up to 3, s = 0.02) that cancel to 0.4;
# float32 sums of 12 such terms round at ~6e-5 in either runtime.
TERMS = {"fq_tensor_int8_v10": 500.0}


def eval_outputs(cli, tmp, args, feeds):
    """The eval graph's outputs (for the seeds' shapes): onnxruntime's, or onnxgrad's where
    onnxruntime cannot run a forward op (layout 1 of the recurrent ops): the training graph,
    whose ops are onnxgrad's functions of standard ops there, is what this test checks."""
    path = os.path.join(tmp, "eval.onnx")
    so = ort.SessionOptions()
    so.log_severity_level = 4  # a refusal is expected and handled
    try:
        ev = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        return dict(zip([o.name for o in ev.get_outputs()], ev.run(None, feeds)))
    except Exception:  # noqa: BLE001 - fall back to onnxgrad's forward
        out = os.path.join(tmp, "eval_out")
        subprocess.run([cli, "run", path] + args + ["-o", out], check=True, capture_output=True,
                       text=True)
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        return {k: np.load(os.path.join(out, f)) for k, f in manifest.items()}


def reload_check(cli, tmp, args, go_args, ref):
    seeds = []
    for a in go_args:
        if a != "--grad-output":
            seeds += ["--input", "%s_grad=%s" % tuple(a.split("=", 1))]
    out = os.path.join(tmp, "reload")
    subprocess.run([cli, "run", os.path.join(tmp, "training.onnx")] + args + seeds + ["-o", out],
                   check=True, capture_output=True, text=True)
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    if set(manifest) != set(ref):
        raise AssertionError("the reloaded training graph has outputs %s, not %s" %
                             (sorted(manifest), sorted(ref)))
    for k, f in manifest.items():
        ours = np.load(os.path.join(out, f))
        if not np.allclose(ours, ref[k], rtol=1e-4, atol=1e-5):
            raise AssertionError("reloaded training graph: %s differs: max abs %g" %
                                 (k, np.abs(ours - ref[k]).max()))


def main(build, patterns=()):
    cli = os.path.join(build, "onnxgrad")
    cases = os.path.join(build, "grad_cases")
    passed = failed = 0
    for name in sorted(os.listdir(cases)):
        d = os.path.join(cases, name)
        if not os.path.isdir(d):
            continue
        if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        if name in KNOWN:
            print("SKIP %s: %s" % (name, KNOWN[name]))
            continue
        args = open(os.path.join(d, "args")).read().split()
        src = onnx.load(os.path.join(d, "model.onnx"))
        if any(n.op_type == "Dropout" and len(n.input) > 2 for n in src.graph.node):
            print("SKIP %s: a training-mode Dropout draws its mask from each runtime's own "
                  "generator" % name)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                # the weights the case differentiates (--weights A,B), else the default
                wargs = args[args.index("--weights"):][:2] if "--weights" in args else []
                subprocess.run([cli, "export", os.path.join(d, "model.onnx"), "-o", tmp] +
                               wargs, check=True, capture_output=True, text=True)
                tm = onnx.load(os.path.join(tmp, "training.onnx"))
                onnx.checker.check_model(tm, full_check=True)
                onnx.checker.check_model(onnx.load(os.path.join(tmp, "eval.onnx")),
                                         full_check=True)
                sess = ort.InferenceSession(os.path.join(tmp, "training.onnx"),
                                            providers=["CPUExecutionProvider"])
                feeds = {}
                for a in args:
                    if a.startswith("--") or a in wargs:
                        continue
                    k, f = a.split("=", 1)
                    feeds[k] = np.load(f)
                rng = np.random.default_rng(3)
                seeds = []
                for i in sess.get_inputs():
                    if i.name.endswith("_grad") and i.name not in feeds:
                        seeds.append(i.name)
                ev_out = eval_outputs(cli, tmp, args, feeds)
                go_args = []
                for s in seeds:
                    out_name = s[: -len("_grad")]
                    ev = ev_out[out_name]  # the seed in the output's type (float16 too)
                    g = rng.standard_normal(ev.shape).astype(
                        ev.dtype if ev.dtype.kind == "f" else np.float32)
                    feeds[s] = g
                    fn = os.path.join(tmp, "seed_%s.npy" % out_name)
                    np.save(fn, g)
                    go_args += ["--grad-output", "%s=%s" % (out_name, fn)]
                half = any(i.type == "tensor(float16)" for i in sess.get_inputs())
                ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
                # The magnitude of the terms each gradient sums: the same graph with |seeds|.
                # A gradient that cancels (a quantization scale's, sum(q * dW) ~ 1e-2 from
                # terms ~1e2) differs between two float32 runtimes by the rounding of its
                # terms, not of its value: that difference is measured against this scale.
                abs_feeds = dict(feeds)
                for sd in seeds:
                    abs_feeds[sd] = np.asarray(np.abs(feeds[sd]))
                scale = dict(zip([o.name for o in sess.get_outputs()],
                                 sess.run(None, abs_feeds)))
                res = subprocess.run([cli, "grad", os.path.join(d, "model.onnx")] + args +
                                     go_args + ["-o", os.path.join(tmp, "out")],
                                     check=True, capture_output=True, text=True)
                manifest = json.load(open(os.path.join(tmp, "out", "manifest.json")))
                worst = 0.0
                for k, f in manifest.items():
                    ours = np.load(os.path.join(tmp, "out", f))
                    want = ref[k]
                    if want.dtype.kind in "OU":  # string labels
                        if not (ours.astype(str) == want.astype(str)).all():
                            raise AssertionError("%s differs" % k)
                        continue
                    if not np.allclose(ours, want, rtol=1e-4, atol=1e-5):
                        # float32 rounding of the summed terms: 1e-5 of their magnitude
                        terms = np.abs(scale[k]).max() if k in scale and scale[k].size else 0
                        terms = max(terms, TERMS.get(name, 0.0))
                        diff = np.abs(ours.astype(np.float64) - want).max()
                        # a float16 model: its forward values (which the gradients read)
                        # differ by float16's rounding (2^-11) wherever the runtimes' float32
                        # results round to different sides
                        if not (diff <= (2e-3 if half else 1e-5) * terms):
                            raise AssertionError("%s differs: max abs %g (terms' magnitude %g)"
                                                 % (k, diff, terms))
                    if want.size:
                        worst = max(worst, float(np.abs(ours - want).max()))
                if tm.functions:
                    # onnxgrad loads the saved graph back (its local functions kept, the ops
                    # they define run by onnxgrad's kernels) and computes the same
                    reload_check(cli, tmp, args, go_args, ref)
                passed += 1
                print("PASS %s (largest difference %.2g)" % (name, worst))
            except Exception as e:  # noqa: BLE001 - report and count any failure
                failed += 1
                msg = getattr(e, "stderr", "") or str(e)
                print("FAIL %s: %s" % (name, msg.strip().splitlines()[-1] if msg else e))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
