#!/usr/bin/env python3
"""scikit-learn models as skl2onnx converts them (default options), through every command:

  info    exits 0 and shows the outputs' types (ZipMap's seq(map(...)))
  run     equals onnxruntime: probabilities and values to 1e-6 relative, labels exactly
  grad    the gradients through the tensor outputs (a ZipMap output stands for the
          probabilities it packs) equal an independent numpy computation for the linear
          models and MLPs, and finite differences for all (`check`)
  check   passes
  export  the training graph runs in onnxruntime with the same gradients
  train   converges on a small dataset (loss falls, accuracy or R^2 rises); the trained model
          keeps its ops and runs in onnxruntime

Tree ensembles are for inference (their gradient is zero almost everywhere): info and run.
Usage: sklearn_e2e.py ONNXGRAD_CLI [-k SUBSTRING]"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from skl2onnx import to_onnx
from sklearn.base import clone
from sklearn.datasets import load_iris, make_regression
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (Binarizer, LabelEncoder, Normalizer, OneHotEncoder,
                                   StandardScaler)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

warnings.filterwarnings("ignore")
ort.set_default_logger_severity(3)
CLI = sys.argv[1]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
rng = np.random.RandomState(0)
FAILS = []


def fail(name, what):
    FAILS.append(f"{name}: {what}")
    print(f"FAIL {name}: {what}")


def cli(*args):
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True)


def ort_run(path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return [o.name for o in s.get_outputs()], s.run(None, feeds)


def read_outputs(d):
    m = json.load(open(os.path.join(d, "manifest.json")))
    out = {}
    for k, f in m.items():
        out[k] = (json.load(open(os.path.join(d, f))) if f.endswith(".json")
                  else np.load(os.path.join(d, f)))
    return out


def same(got, ref):
    """None when onnxgrad's output (as `run` writes it) equals onnxruntime's, else why: labels
    exactly, values to 1e-6 relative with an absolute floor of 1e-7 (a float32 probability
    near 1 is resolved to 6e-8; both runtimes are within ~3e-7 relative of the float64
    result, rounding their float32 MatMul and exp differently)."""
    if isinstance(ref, list):  # ZipMap
        if len(got) != len(ref):
            return f"{len(got)} maps, expected {len(ref)}"
        for g, r in zip(got, ref):
            if sorted(map(str, r)) != sorted(g):
                return f"keys {sorted(g)}, expected {sorted(map(str, r))}"
            for k, v in r.items():
                if abs(g[str(k)] - v) > 1e-6 * abs(v) + 1e-7:
                    return f"map value {k}: {g[str(k)]}, expected {v}"
        return None
    ref = np.asarray(ref)
    if ref.dtype.kind in "OU":
        return None if (got.astype(str) == ref.astype(str)).all() else f"labels {got[:5]} != {ref[:5]}"
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"{got.dtype} {got.shape}, expected {ref.dtype} {ref.shape}"
    if ref.dtype.kind == "f":
        ok = np.allclose(got, ref, rtol=1e-6, atol=1e-7 * max(1.0, float(np.abs(ref).max())))
        return None if ok else f"largest difference {np.abs(got - ref).max():.3g}"
    return None if (got == ref).all() else f"{got[:5]} != {ref[:5]}"


# ---- independent gradients (numpy) -----------------------------------------------------------
def softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def grads_linreg(est, x, r):
    """y = x W^T + b, seed r [N, 1]"""
    w = np.atleast_2d(est.coef_)
    return {"X_grad": r @ w, "LinearRegressor_coefficients_grad": r.T @ x,
            "LinearRegressor_intercepts_grad": r.sum(axis=0)}


def grads_logreg(est, x, r):
    """multinomial: p = softmax(x W^T + b), then skl2onnx's L1 Normalizer (p already sums to
    1, but its Jacobian is not the identity): y = p / sum(p); seed r on y"""
    w, b = est.coef_, est.intercept_
    p = softmax(x @ w.T + b)
    y = p / p.sum(axis=1, keepdims=True)
    dp = (r - (r * y).sum(axis=1, keepdims=True)) / p.sum(axis=1, keepdims=True)
    ds = p * (dp - (dp * p).sum(axis=1, keepdims=True))
    return {"X_grad": ds @ w, "LinearClassifier_coefficients_grad": ds.T @ x,
            "LinearClassifier_intercepts_grad": ds.sum(axis=0)}


def grads_mlp(est, x, r, classifier):
    """relu hidden layers; a softmax output for the classifier"""
    acts, zs = [x], []
    for i, (w, b) in enumerate(zip(est.coefs_, est.intercepts_)):
        z = acts[-1] @ w + b
        zs.append(z)
        acts.append(np.maximum(z, 0) if i < len(est.coefs_) - 1 else z)
    out = acts[-1]
    if classifier:
        p = softmax(out)
        d = p * (r - (r * p).sum(axis=1, keepdims=True))
    else:
        d = r
    res = {}
    for i in range(len(est.coefs_) - 1, -1, -1):
        sfx = "" if i == 0 else str(i)
        res["coefficient%s_grad" % sfx] = acts[i].T @ d
        res["intercepts%s_grad" % sfx] = d.sum(axis=0, keepdims=True)
        d = d @ est.coefs_[i].T
        if i > 0:
            d = d * (zs[i - 1] > 0)
    return res


# ---- the models ----------------------------------------------------------------------------------
Xi, yi = load_iris(return_X_y=True)
Xi = Xi.astype(np.float32)
Xr, yr = make_regression(n_samples=120, n_features=4, noise=0.5, random_state=0)
Xr = Xr.astype(np.float32)
yr = (yr / 50).astype(np.float32)
cat = rng.randint(0, 4, (150, 3)).astype(np.int64)
ycat = (cat[:, 0] + cat[:, 1] > 3).astype(np.int64)
Xnan = Xi.copy()
Xnan[::7, 2] = np.nan
labels_s = np.array(["setosa", "versicolor", "virginica"])[yi]
models = []  # (name, estimator fit, X sample, options, grad reference, train spec)


def add(name, est, x, options=None, ref=None, train=None):
    models.append((name, est, x, options, ref, train))


add("linreg", LinearRegression().fit(Xr, yr), Xr[:8], ref=grads_linreg,
    train=("mse", Xr, yr.reshape(-1, 1), "r2"))
add("logreg", LogisticRegression(max_iter=300).fit(Xi, yi), Xi[::19], ref=grads_logreg,
    train=("proba", Xi, yi, "acc"))
add("logreg_nozipmap", LogisticRegression(max_iter=300).fit(Xi, yi), Xi[::19],
    {LogisticRegression: {"zipmap": False}}, ref=grads_logreg, train=("proba", Xi, yi, "acc"))
add("mlpreg", MLPRegressor(hidden_layer_sizes=(8,), max_iter=300, random_state=0).fit(Xr, yr), Xr[:8],
    ref=lambda e, x, r: grads_mlp(e, x, r, False), train=("mse", Xr, yr.reshape(-1, 1), "r2"))
add("mlpclf", MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0).fit(Xi, yi), Xi[::19],
    ref=lambda e, x, r: grads_mlp(e, x, r, True), train=("proba", Xi, yi, "acc"))
add("scaler_logreg", make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)).fit(Xi, yi),
    Xi[::19], train=("proba", Xi, yi, "acc"))
add("normalizer_linreg", make_pipeline(Normalizer(), LinearRegression()).fit(Xr, yr), Xr[:8],
    train=("mse", Xr, yr.reshape(-1, 1), "r2"))
# iris values have one decimal: a threshold between them keeps finite differences off the step
add("binarizer_logreg", make_pipeline(Binarizer(threshold=3.05), LogisticRegression()).fit(Xi, yi),
    Xi[::19], train=("proba", Xi, yi, "acc"))
add("imputer_linreg", make_pipeline(SimpleImputer(), LinearRegression()).fit(Xnan, yi.astype(np.float32)),
    Xnan[::19], train=("mse", Xnan, yi.astype(np.float32).reshape(-1, 1), "r2"))
add("onehot_logreg", make_pipeline(OneHotEncoder(), LogisticRegression()).fit(cat, ycat), cat[:8],
    train=("proba", cat, ycat, "acc"))
add("logreg_strings", LogisticRegression(max_iter=300).fit(Xi, labels_s), Xi[::19])
add("mlpclf_strings", MLPClassifier(hidden_layer_sizes=(6,), max_iter=200, random_state=0).fit(Xi, labels_s), Xi[::19])
add("labelencoder", LabelEncoder().fit(labels_s), labels_s[::19])
add("tree_clf", DecisionTreeClassifier(max_depth=3).fit(Xi, yi), Xi[::9])
add("tree_reg", DecisionTreeRegressor(max_depth=4).fit(Xr, yr), Xr[:10])
add("forest_clf", RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(Xi, yi),
    Xi[::9])
add("boosting_clf", GradientBoostingClassifier(n_estimators=5, max_depth=2).fit(Xi, yi), Xi[::9])


def train_check(name, est, x0, options, spec, d):
    """Train from a poor start, the same estimator fit to shuffled targets (its preprocessing
    fit on the true features: only the linear and MLP weights train), on the dataset: the
    loss must fall and the metric come within 0.03 of scikit-learn's own fit."""
    loss, x, y, metric = spec
    start = clone(est).fit(x, np.random.RandomState(3).permutation(y.ravel()))
    path = os.path.join(d, "start.onnx")
    onnx.save(to_onnx(start, x0[:1], options=options), path)
    data = os.path.join(d, "train.npz")
    np.savez(data, X=x, y=y)
    out = os.path.join(d, "trained.onnx")
    r = cli("train", path, "--data", data, "--loss", loss, "--optimizer", "adam", "--lr", "0.05",
            "--schedule", "cosine",
            "--epochs", "40", "--batch-size", "16", "--threads", "1", "-q", "-o", out)
    if r.returncode != 0:
        return fail(name, "train: " + r.stderr.strip())
    hist = np.genfromtxt(os.path.join(d, "trained.csv"), delimiter=",", names=True)
    first, last = hist["train_loss"][0], hist["train_loss"][-1]
    if not last < first:
        return fail(name, f"train: the loss went from {first} to {last}")
    trained = onnx.load(out)
    if sorted(n.op_type for n in trained.graph.node) != sorted(
            n.op_type for n in onnx.load(path).graph.node):
        return fail(name, "train: the trained model has other ops than the model")
    def score(path):
        pred = ort_run(path, {"X": x})[1][0]
        if metric == "acc":
            return float((np.asarray(pred).ravel() == y).mean())
        return 1 - float(((pred.ravel() - y.ravel()) ** 2).sum() / ((y - y.mean()) ** 2).sum())

    # as good as scikit-learn's own fit on the whole dataset (the model of the other checks)
    before, after, best = score(path), score(out), score(os.path.join(d, "model.onnx"))
    if not after >= best - 0.03:
        return fail(name, f"train: {metric} {before:.3f} -> {after:.3f}; scikit-learn's fit "
                    f"reaches {best:.3f}")
    print(f"  train: loss {first:.4g} -> {last:.4g} in 40 epochs (Adam, cosine schedule), {metric} {before:.3f} -> "
          f"{after:.3f} (scikit-learn's fit: {best:.3f}; onnxruntime on the trained model)")


def main():
    n_ok = 0
    for name, est, x, options, ref, train in models:
        if ONLY and ONLY not in name:
            continue
        before = len(FAILS)
        with tempfile.TemporaryDirectory() as d:
            onx = to_onnx(est, x[:1], options=options)
            path = os.path.join(d, "model.onnx")
            onnx.save(onx, path)
            xin = os.path.join(d, "x.npy")
            np.save(xin, x)
            iname = onx.graph.input[0].name
            # info
            r = cli("info", path)
            if r.returncode != 0:
                fail(name, "info: " + r.stderr.strip())
                continue
            if any(o.type.HasField("sequence_type") for o in onx.graph.output) and "seq(map(" not in r.stdout:
                fail(name, "info does not show the sequence of maps")
            # run
            r = cli("run", path, "--input", f"{iname}={xin}", "--threads", "1", "-o", os.path.join(d, "run"))
            if r.returncode != 0:
                fail(name, "run: " + r.stderr.strip())
                continue
            got = read_outputs(os.path.join(d, "run"))
            names, refs = ort_run(path, {iname: x})
            for k, v in zip(names, refs):
                why = same(got[k], v)
                if why:
                    fail(name, f"run, output {k}: {why}")
            if x.dtype.kind in "U" or name.startswith(("tree", "forest", "boosting")):
                n_ok += len(FAILS) == before
                print(("ok   " if len(FAILS) == before else "FAIL ") + name + " (info, run)")
                continue
            # grad with random seeds, against numpy where derived by hand
            rr = np.random.RandomState(1)
            gout = None
            for o in onx.graph.output:
                src = o.name
                for n in onx.graph.node:
                    if o.name in n.output and n.op_type == "ZipMap":
                        src = n.input[0]
                vals = got[o.name]
                shape = (len(vals), len(vals[0])) if isinstance(vals, list) else vals.shape
                if isinstance(vals, list) or vals.dtype.kind == "f":
                    gout = (src, rr.standard_normal(shape).astype(np.float32))
            seed = os.path.join(d, "seed.npy")
            np.save(seed, gout[1])
            r = cli("grad", path, "--input", f"{iname}={xin}", "--grad-output", f"{gout[0]}={seed}",
                    "--threads", "1", "-o", os.path.join(d, "grad"))
            if r.returncode != 0:
                fail(name, "grad: " + r.stderr.strip())
                continue
            grads = read_outputs(os.path.join(d, "grad"))
            if ref is not None:
                est_ = est
                want = ref(est_, x.astype(np.float64), gout[1].astype(np.float64))
                for k, v in want.items():
                    g = grads.get(k)
                    if g is None:
                        fail(name, f"grad: no {k} (got {sorted(grads)})")
                    elif not np.allclose(g, np.reshape(v, g.shape), rtol=1e-4,
                                         atol=1e-5 * max(1.0, float(np.abs(v).max()))):
                        fail(name, f"grad: {k} differs from numpy by {np.abs(g - np.reshape(v, g.shape)).max():.3g}")
            # check
            r = cli("check", path, "--input", f"{iname}={xin}", "--threads", "1")
            if r.returncode != 0:
                fail(name, "check: " + (r.stderr.strip() or r.stdout.strip()))
            # export: the training graph in onnxruntime, same gradients
            r = cli("export", path, "-o", os.path.join(d, "exp"))
            if r.returncode != 0:
                fail(name, "export: " + r.stderr.strip())
            else:
                tpath = os.path.join(d, "exp", "training.onnx")
                onnx.checker.check_model(onnx.load(tpath), full_check=True)
                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                sess = ort.InferenceSession(tpath, so, providers=["CPUExecutionProvider"])
                feeds = {iname: x, gout[0] + "_grad": gout[1]}
                res = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
                for k, v in grads.items():
                    if k.endswith("_grad") and not np.allclose(v, res[k], rtol=1e-4, atol=1e-5):
                        fail(name, f"export: onnxruntime's {k} differs by {np.abs(v - res[k]).max():.3g}")
            if train:
                train_check(name, est, x, options, train, d)
        n_ok += len(FAILS) == before
        print(("ok   " if len(FAILS) == before else "FAIL ") + name +
              " (info, run, grad%s, check, export%s)" % (", numpy" if ref else "", ", train" if train else ""))
    print(f"{n_ok} models passed, {len(FAILS)} failures")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
