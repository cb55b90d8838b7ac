#!/usr/bin/env python3
"""Every CLI command under valgrind (memcheck), on success and on errors: no invalid read or
write, no use of uninitialised memory, no memory definitely or indirectly lost (OpenMP's and
OpenBLAS's thread pools keep blocks "still reachable" or "possibly lost" at exit by design;
those are not counted).  Slow (about a minute per command): not part of make test; run it
before a release or after touching the CLI, and quote its last line.
Usage: valgrind.py ONNXGRAD_CLI [--only SUBSTRING]"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402  (the hostile cases, reused for the error paths)


def commands(d):
    mlp = os.path.join(ROOT, "models", "mlp.onnx")
    x = os.path.join(ROOT, "models", "mlp_x.npy")
    lin = os.path.join(ROOT, "tests", "data", "train", "linreg.onnx")
    logreg = os.path.join(ROOT, "python", "tests", "data", "logreg_full.onnx")
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(32, 3)).astype(np.float32)
    np.savez(os.path.join(d, "lin.npz"), X=xs, y=xs[:, :1].copy())
    out = lambda name: os.path.join(d, name)  # noqa: E731
    ok = [
        ("help", ["help"]),
        ("version", ["version"]),
        ("train --help", ["train", "--help"]),
        ("info", ["info", mlp]),
        ("run", ["run", mlp, "--input", "x=" + x, "--threads", "1", "-o", out("run")]),
        ("grad", ["grad", mlp, "--input", "x=" + x, "--threads", "1", "-o", out("grad")]),
        ("export", ["export", mlp, "-o", out("export")]),
        ("check", ["check", mlp, "--input", "x=" + x]),
        ("bench", ["bench", mlp, "--input", "x=" + x, "--threads", "1", "-n", "2"]),
        ("bench --train", ["bench", mlp, "--input", "x=" + x, "--train", "--threads", "1",
                           "-n", "2"]),
        ("train", ["train", lin, "--data", out("lin.npz"), "--loss", "mse", "--optimizer",
                   "adam", "--epochs", "2", "--threads", "1", "--val-split", "0.25",
                   "--checkpoint", out("c.ckpt"), "--export-training", out("step.onnx"),
                   "-q", "-o", out("t.onnx")]),
        ("train --resume", ["train", lin, "--data", out("lin.npz"), "--loss", "mse",
                            "--optimizer", "adam", "--epochs", "3", "--threads", "1",
                            "--checkpoint", out("c.ckpt"), "--resume", "-q",
                            "-o", out("t.onnx")]),
        ("train (TrainingInfoProto)", ["train", out("step.onnx"), "--data", out("lin.npz"),
                                       "--epochs", "1", "--threads", "1", "-q",
                                       "-o", out("t2.onnx")]),
    ]
    # control flow (subgraph sessions, the Loop and If gradients): a Loop of 3 iterations
    # over s * w with a scan output, inside an If
    from onnx import TensorProto as TP, helper as h, numpy_helper
    F = TP.FLOAT
    body = h.make_graph([h.make_node("Identity", ["cond"], ["c2"]),
                         h.make_node("Mul", ["s0", "w"], ["s1"]),
                         h.make_node("Identity", ["s1"], ["row"])], "body",
                        [h.make_tensor_value_info("i", TP.INT64, []),
                         h.make_tensor_value_info("cond", TP.BOOL, []),
                         h.make_tensor_value_info("s0", F, [2])],
                        [h.make_tensor_value_info("c2", TP.BOOL, []),
                         h.make_tensor_value_info("s1", F, [2]),
                         h.make_tensor_value_info("row", F, [2])])
    then_g = h.make_graph([h.make_node("Loop", ["m", "", "x"], ["y", "rows"], body=body)],
                          "then", [], [h.make_tensor_value_info("y", F, [2]),
                                       h.make_tensor_value_info("rows", F, [3, 2])])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["y2"]),
                           h.make_node("Expand", ["x", "shape"], ["r2"])], "else", [],
                          [h.make_tensor_value_info("y2", F, [2]),
                           h.make_tensor_value_info("r2", F, [3, 2])])
    g = h.make_graph([h.make_node("If", ["c"], ["y", "rows"], then_branch=then_g,
                                  else_branch=else_g)], "g",
                     [h.make_tensor_value_info("c", TP.BOOL, []),
                      h.make_tensor_value_info("x", F, [2])],
                     [h.make_tensor_value_info("y", F, [2]),
                      h.make_tensor_value_info("rows", F, [3, 2])],
                     [numpy_helper.from_array(np.array([0.5, 2.0], np.float32), "w"),
                      numpy_helper.from_array(np.array(3, np.int64), "m"),
                      numpy_helper.from_array(np.array([3, 2], np.int64), "shape")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
    m.ir_version = 8
    ctl = out("control.onnx")
    with open(ctl, "wb") as f:
        f.write(m.SerializeToString())
    np.save(out("c.npy"), np.array(True))
    np.save(out("x.npy"), np.ones(2, np.float32))
    cin = ["--input", "c=" + out("c.npy"), "--input", "x=" + out("x.npy"), "--threads", "1"]
    ok += [
        ("run (If, Loop)", ["run", ctl] + cin + ["-o", out("crun")]),
        ("grad (If, Loop)", ["grad", ctl] + cin + ["--weights", "w", "-o", out("cgrad")]),
        ("export (If, Loop)", ["export", ctl, "--weights", "w", "-o", out("cexport")]),
    ]
    ok += more_models(d, out, cin)
    errors = [
        ("no command", []),
        ("run (If, Loop): past --max-memory", ["run", ctl] + cin + ["--max-memory", "2K",
                                                                   "-o", out("cerr")]),
        ("unknown command", ["frobnicate"]),
        ("run: missing input", ["run", mlp, "-o", out("e")]),
        ("run: bad option", ["run", mlp, "--bogus"]),
        ("grad: unknown weight", ["grad", mlp, "--input", "x=" + x, "--weights", "nope",
                                  "-o", out("e")]),
        ("train: bad loss", ["train", lin, "--data", out("lin.npz"), "--loss", "zz",
                             "-o", out("e.onnx")]),
        ("train: missing data", ["train", lin, "--data", out("none.csv"), "--loss", "mse",
                                 "-o", out("e.onnx")]),
        # the kernels main gained since the first valgrind run, on their error paths
        ("run (LSTM, GRU, RNN): input of the wrong shape",
         ["run", out("recurrent.onnx"), "--input", "x=" + out("x_bad.npy"), "--threads", "1",
          "-o", out("e")]),
        ("run (Scan): past --max-memory", ["run", out("scan.onnx"), "--input",
                                            "xs=" + out("xs.npy"), "--max-memory", "1K",
                                            "--threads", "1", "-o", out("e")]),
        ("grad (sequences): unknown weight", ["grad", out("seq.onnx"), "--input",
                                              "x=" + out("x.npy"), "--weights", "nope",
                                              "-o", out("e")]),
        ("run (quant): int64 input for a float one",
         ["run", out("quant.onnx"), "--input", "x=" + out("x_int.npy"), "--threads", "1",
          "-o", out("e")]),
        ("train (ZipMap): unknown --model-output",
         ["train", logreg, "--data", out("cls.npz"), "--loss", "proba", "--model-output",
          "nope", "--threads", "1", "-q", "-o", out("e.onnx")]),
    ]
    return ok, errors


def more_models(d, out, cin):
    """Commands on what main gained after the first valgrind run: Scan, the recurrent ops,
    sequences, quantization, a scikit-learn classifier with ZipMap (ai.onnx.ml), and a
    training run of it (a plain process: the CLI is linked with libonnxgrad_mpi when MPI
    was found, but without an MPI launcher it never initialises MPI)."""
    from onnx import TensorProto as TP, helper as h, numpy_helper
    F = TP.FLOAT
    rng = np.random.default_rng(1)

    def save(name, nodes, inputs, outputs, inits, opset, extra=()):
        g = h.make_graph(nodes, name, inputs, outputs,
                         [numpy_helper.from_array(v, k) for k, v in inits.items()])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)] + list(extra))
        m.ir_version = 8
        with open(out(name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        return out(name + ".onnx")

    f32 = lambda *s: rng.normal(size=s).astype(np.float32)  # noqa: E731
    # Scan: a running sum of xs[i] * w (w read from the enclosing graph), every state a row
    body = h.make_graph([h.make_node("Mul", ["xi", "w"], ["p"]),
                         h.make_node("Add", ["s0", "p"], ["s1"]),
                         h.make_node("Identity", ["s1"], ["row"])], "body",
                        [h.make_tensor_value_info("s0", F, [2]),
                         h.make_tensor_value_info("xi", F, [2])],
                        [h.make_tensor_value_info("s1", F, [2]),
                         h.make_tensor_value_info("row", F, [2])])
    scan = save("scan", [h.make_node("Scan", ["s", "xs"], ["last", "rows"], body=body,
                                     num_scan_inputs=1)],
                [h.make_tensor_value_info("xs", F, [4, 2])],
                [h.make_tensor_value_info("last", F, [2]),
                 h.make_tensor_value_info("rows", F, [4, 2])],
                {"w": f32(2), "s": np.zeros(2, np.float32)}, 16)
    np.save(out("xs.npy"), f32(4, 2))
    # LSTM, GRU and RNN side by side over one sequence x [T 3, batch 1, 2], hidden size 2
    rec = save("recurrent",
               [h.make_node("LSTM", ["x", "Wl", "Rl", "Bl"], ["yl", "hl"], hidden_size=2),
                h.make_node("GRU", ["x", "Wg", "Rg"], ["yg"], hidden_size=2,
                            linear_before_reset=1),
                h.make_node("RNN", ["x", "Wr", "Rr"], ["yr"], hidden_size=2,
                            direction="bidirectional")],
               [h.make_tensor_value_info("x", F, [3, 1, 2])],
               [h.make_tensor_value_info("yl", F, None), h.make_tensor_value_info("hl", F, None),
                h.make_tensor_value_info("yg", F, None), h.make_tensor_value_info("yr", F, None)],
               {"Wl": f32(1, 8, 2), "Rl": f32(1, 8, 2), "Bl": f32(1, 16), "Wg": f32(1, 6, 2),
                "Rg": f32(1, 6, 2), "Wr": f32(2, 2, 2), "Rr": f32(2, 2, 2)}, 14)
    np.save(out("xseq.npy"), f32(3, 1, 2))
    np.save(out("x_bad.npy"), f32(3, 1, 5))
    # sequences: [x, x * w] built, one inserted, concatenated back; the sequence is an output
    seq = save("seq",
               [h.make_node("Mul", ["x", "w"], ["xw"]),
                h.make_node("SequenceConstruct", ["x", "xw"], ["s"]),
                h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
                h.make_node("SequenceInsert", ["s", "xw"], ["s2"]),
                h.make_node("SequenceAt", ["s2", "one"], ["z"])],
               [h.make_tensor_value_info("x", F, [2])],
               [h.make_tensor_value_info("y", F, [4]), h.make_tensor_value_info("z", F, [2]),
                h.make_value_info("s2", h.make_sequence_type_proto(
                    h.make_tensor_type_proto(F, [2])))],
               {"w": f32(2), "one": np.array(1, np.int64)}, 17)
    # quantization: x fake-quantized with a trained scale, times DequantizeLinear(int8 W)
    # with a trained scale per column (quantization-aware training); the inference model
    # also quantizes the product with DynamicQuantizeLinear (no gradient: not in grad's)
    def quant_model(name, dynamic):
        nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                 h.make_node("DequantizeLinear", ["q", "s", "z"], ["xq"]),
                 h.make_node("DequantizeLinear", ["W", "sw"], ["Wd"], axis=1),
                 h.make_node("MatMul", ["xq", "Wd"], ["y"])]
        outs = [h.make_tensor_value_info("y", F, [2, 4])]
        if dynamic:
            nodes.append(h.make_node("DynamicQuantizeLinear", ["y"], ["yq", "ys", "yz"]))
            outs += [h.make_tensor_value_info("yq", TP.UINT8, [2, 4]),
                     h.make_tensor_value_info("ys", F, []),
                     h.make_tensor_value_info("yz", TP.UINT8, [])]
        return save(name, nodes, [h.make_tensor_value_info("x", F, [2, 3])], outs,
                    {"s": np.array(0.02, np.float32), "z": np.array(3, np.int8),
                     "W": np.random.default_rng(2).integers(-100, 100, (3, 4)).astype(np.int8),
                     "sw": np.linspace(0.01, 0.02, 4).astype(np.float32)}, 13)
    quant = quant_model("quant", True)
    qat = quant_model("qat", False)
    np.save(out("xq.npy"), f32(2, 3))
    np.save(out("x_int.npy"), np.ones((2, 3), np.int64))
    # scikit-learn's LogisticRegression through skl2onnx: Sigmoid, ArgMax, ZipMap, ...
    logreg = os.path.join(ROOT, "python", "tests", "data", "logreg_full.onnx")
    X = rng.normal(size=(40, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    np.save(out("xc.npy"), X[:5])
    np.savez(out("cls.npz"), X=X, y=y)
    xin = ["--input", "x=" + out("x.npy"), "--threads", "1"]
    return [
        ("run (Scan)", ["run", scan, "--input", "xs=" + out("xs.npy"), "--threads", "1",
                        "-o", out("srun")]),
        ("grad (Scan)", ["grad", scan, "--input", "xs=" + out("xs.npy"), "--threads", "1",
                         "-o", out("sgrad")]),
        ("run (LSTM, GRU, RNN)", ["run", rec, "--input", "x=" + out("xseq.npy"), "--threads",
                                  "1", "-o", out("rrun")]),
        ("grad (LSTM, GRU, RNN)", ["grad", rec, "--input", "x=" + out("xseq.npy"),
                                   "--threads", "1", "-o", out("rgrad")]),
        ("run (sequences)", ["run", seq] + xin + ["-o", out("qrun")]),
        ("grad (sequences)", ["grad", seq] + xin + ["--weights", "w", "-o", out("qgrad")]),
        ("run (quant)", ["run", quant, "--input", "x=" + out("xq.npy"), "--threads", "1",
                         "-o", out("urun")]),
        ("grad (quant)", ["grad", qat, "--input", "x=" + out("xq.npy"), "--threads", "1",
                          "--weights", "s,sw", "-o", out("ugrad")]),
        ("run (ZipMap)", ["run", logreg, "--input", "X=" + out("xc.npy"), "--threads", "1",
                          "-o", out("zrun")]),
        ("grad (ZipMap)", ["grad", logreg, "--input", "X=" + out("xc.npy"), "--threads", "1",
                           "-o", out("zgrad")]),
        ("train (ZipMap, proba, sgd, no MPI launcher)",
         ["train", logreg, "--data", out("cls.npz"), "--loss", "proba", "--optimizer",
          "momentum", "--schedule", "invscaling", "--epochs", "2", "--batch-size", "8",
          "--threads", "1", "-q", "-o", out("z.onnx")]),
    ]


def main():
    cli = os.path.abspath(sys.argv[1])
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if not shutil.which("valgrind"):
        print("valgrind is not installed (apt-get install valgrind)")
        return 77
    vg = ["valgrind", "--error-exitcode=99", "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
          "--track-origins=no", "-q"]
    results, failed = [], 0
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as d:
        ok, errors = commands(d)
        cases = [(n, a, True) for n, a in ok] + [(n, a, False) for n, a in errors]
        # the error paths of the hostile corpus, one case per kind of stage
        for name in ("nested_if_3000", "external_symlink_out", "raw_data_short", "pad_int64_max",
                     "constant_of_shape_1_6e9", "gather_index_out_of_range", "npz_crc_mismatch",
                     "checkpoint_garbage", "npy_shape_2_40_tiny_file", "model_is_a_fifo"):
            make = next(f for n, _, f in corpus.CASES if n == name)
            cd = os.path.join(d, name)
            os.mkdir(cd)
            args, _ = make(cd)
            cases.append(("corpus " + name, args, False))
        for name, args, want_ok in cases:
            if only and only not in name:
                continue
            p = subprocess.run(vg + [cli] + args, capture_output=True, text=True, env=env,
                               timeout=900)
            errs = re.findall(r"==\d+== (Invalid \w+|Conditional jump|Use of uninitialised|"
                              r"\d+ bytes in \d+ blocks are (?:definitely|indirectly) lost)",
                              p.stderr)
            clean = p.returncode != 99 and not errs and (p.returncode == 0) == want_ok
            failed += not clean
            results.append(name)
            print("ok  " if clean else "FAIL", f"{name}: rc {p.returncode}",
                  ("| " + "; ".join(sorted(set(errs)))[:200]) if errs else "")
            if not clean and p.returncode == 99:
                print("\n".join(p.stderr.splitlines()[:40]))
    print(f"valgrind: {len(results)} commands, {len(results) - failed} clean, {failed} with "
          "errors or leaks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
