"""Writes python/tests/data/onnxcustom_refs.json: values computed by onnxcustom itself, which
test_compat_*.py assert onnxgrad reproduces.  Not a test: it needs the original environment,
which current onnxruntime cannot give (onnxruntime-training is gone after 1.19.2):

    pyenv install 3.10 && python3.10 -m venv /tmp/ocenv
    /tmp/ocenv/bin/pip install "numpy<2" onnxruntime-training==1.15.1 onnx==1.14.1 \\
        "scikit-learn<1.4" skl2onnx==1.15.0 scipy fire mlprodict onnxcustom==0.4.293
    /tmp/ocenv/bin/python python/tests/make_onnxcustom_refs.py

onnxcustom 0.4.293 calls two functions of onnxruntime-training that 1.15.1 renamed
(OrtModuleGraphBuilder.get_model / get_inference_optimized_model are get_gradient_model /
get_forward_model there, and TrainingAgent takes a local rank): the adapter below renames
them, nothing else.  Models are read from python/tests/data/*.onnx (written by
python/tests/data/make_models.py) so that both sides train the same graphs; datasets come
from numpy's Generator (same stream in numpy 1 and 2); the original's own randomness
(numpy.random.randn for the starting weights, numpy.random.randint for the batches) is
seeded with numpy.random.seed before each fit, as the tests do on onnxgrad's side.
"""
import json
import os
import sys
import warnings

import numpy
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
warnings.filterwarnings("ignore")


def adapt_onnxruntime_training_1_15():
    import onnxcustom.training.ortgradient as og
    from onnxruntime.capi import _pybind_state as C

    if hasattr(C.OrtModuleGraphBuilder, "get_model"):
        return

    class Builder:
        def __init__(self):
            self.b = C.OrtModuleGraphBuilder()

        def initialize(self, *a):
            return self.b.initialize(*a)

        def build(self, *a):
            return self.b.build(*a)

        def get_model(self):
            return self.b.get_gradient_model()

        def get_inference_optimized_model(self):
            return self.b.get_forward_model()

        def get_graph_info(self):
            return self.b.get_graph_info()

    og.OrtModuleGraphBuilder = Builder
    og.TrainingAgent = lambda *a: C.TrainingAgent(*a, 0)


def tolist(a):
    if hasattr(a, "numpy"):
        a = a.numpy()
    a = numpy.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "data": a.ravel().tolist()}


def arr(d):
    return numpy.array(d["data"], dtype=d["dtype"]).reshape(d["shape"])


def datasets():
    """The datasets both sides use (also written in the JSON)."""
    rng = numpy.random.default_rng(12)
    X = rng.standard_normal((60, 4)).astype(numpy.float32)
    coef = numpy.array([1.5, -2.0, 0.5, 1.0], numpy.float32)
    y = (X @ coef + 0.7 + 0.05 * rng.standard_normal(60)).astype(numpy.float32)
    w = (rng.random(60) + 0.5).astype(numpy.float32)
    yb = (X @ coef + 0.3 * rng.standard_normal(60) > 0).astype(numpy.int64)
    return X, y, w, yb


def lr_refs():
    from onnxcustom.training.sgd_learning_rate import (LearningRateSGD,
                                                       LearningRateSGDNesterov)
    cases = [{}, {"eta0": 0.1}, {"eta0": 1.0, "power_t": 0.5},
             {"learning_rate": "constant", "eta0": 0.05},
             {"learning_rate": "optimal"}, {"learning_rate": "optimal", "eta0": 0.1},
             {"learning_rate": "optimal", "eta0": 0.5, "alpha": 0.01},
             {"learning_rate": "optimal", "alpha": 1.0},
             {"learning_rate": "invscaling", "eta0": 0.02, "power_t": 1.0}]
    res = []
    for kw in cases:
        for cls in (LearningRateSGD, LearningRateSGDNesterov):
            lr = cls(**kw)
            r0 = repr(lr)
            loop = [float(v) for v in lr.loop(60)]
            r1 = repr(lr)
            lr.init_learning_rate()
            fit = [float(lr.value)]
            for it in range(59):
                fit.append(float(lr.update_learning_rate(it).value))
            res.append({"class": cls.__name__, "kwargs": kw, "loop": loop, "fit": fit,
                        "repr": r0, "repr_after": r1})
    errors = {}
    for kw in ({"learning_rate": "EXC"}, {"learning_rate": "Constant"}):
        try:
            LearningRateSGD(**kw)
        except ValueError as e:
            errors[kw["learning_rate"]] = str(e)
    return res, errors


_ALIVE = []


def ortvalue(a):
    """An OrtValue over a copy of a (kept alive here: an OrtValue made from a numpy array
    only borrows its memory)."""
    from onnxruntime.capi._pybind_state import OrtValue as C_OrtValue
    from onnxcustom.utils.onnxruntime_helper import get_ort_device

    a = numpy.array(a, copy=True)
    _ALIVE.append(a)
    return C_OrtValue.ortvalue_from_numpy(a, get_ort_device("cpu"))


def loss_refs():
    from onnxcustom.training.sgd_learning_loss import (
        AbsoluteLearningLoss, ElasticLearningLoss, NegLogLearningLoss, SquareLearningLoss)
    from onnxcustom.utils.onnxruntime_helper import get_ort_device

    dev = get_ort_device("cpu")
    rng = numpy.random.default_rng(3)
    expected = rng.standard_normal((7, 1)).astype(numpy.float32)
    predicted = (expected + rng.standard_normal((7, 1))).astype(numpy.float32)
    predicted[2, 0] = expected[2, 0]  # a zero residual (sign 0)
    weight = (rng.random(7) + 0.5).astype(numpy.float32)
    labels = (rng.random((7, 1)) > 0.5).astype(numpy.int64)
    scores = (3 * rng.standard_normal((7, 1))).astype(numpy.float32)
    scores[0, 0] = 40.0  # clipped probability
    res = {"expected": tolist(expected), "predicted": tolist(predicted),
           "weight": tolist(weight), "labels": tolist(labels), "scores": tolist(scores),
           "cases": []}
    losses = [SquareLearningLoss(), AbsoluteLearningLoss(), ElasticLearningLoss(),
              ElasticLearningLoss(l1_weight=0.1, l2_weight=0.9), NegLogLearningLoss(),
              NegLogLearningLoss(eps=0.01)]
    for loss in losses:
        for wname in (None, "weight"):
            loss.build_onnx_function(15, dev, wname)
            neg = isinstance(loss, NegLogLearningLoss)
            e, p = (labels, scores) if neg else (expected, predicted)
            w = ortvalue(weight) if wname else None
            lv, gv = loss.loss_gradient(dev, ortvalue(e), ortvalue(p), weight=w)
            sc = loss.loss_scores(dev, ortvalue(e), ortvalue(p), w)
            res["cases"].append({"class": loss.__class__.__name__, "repr": repr(loss),
                                 "params": {k: getattr(loss, k) for k in
                                            ("l1_weight", "l2_weight", "eps",
                                             "probability_function") if hasattr(loss, k)},
                                 "weighted": wname is not None, "loss": tolist(lv),
                                 "grad": tolist(gv), "scores": tolist(sc)})
    return res


def penalty_refs():
    from onnxcustom.training.sgd_learning_penalty import (ElasticLearningPenalty,
                                                          NoLearningPenalty)
    from onnxcustom.utils.onnxruntime_helper import get_ort_device

    dev = get_ort_device("cpu")
    rng = numpy.random.default_rng(4)
    w1 = rng.standard_normal((4, 1)).astype(numpy.float32)
    w2 = rng.standard_normal((1,)).astype(numpy.float32)
    w2[0] = 0.0
    loss = numpy.array([2.5], numpy.float32)
    res = {"w1": tolist(w1), "w2": tolist(w2), "loss": tolist(loss), "cases": []}
    for pen in (ElasticLearningPenalty(), ElasticLearningPenalty(l1=0.01, l2=0.001),
                ElasticLearningPenalty(l1=0.0, l2=0.1), NoLearningPenalty()):
        pen.build_onnx_function(15, dev, 2)
        total = pen.penalty_loss(dev, ortvalue(loss), ortvalue(w1), ortvalue(w2))
        o1, o2 = ortvalue(w1), ortvalue(w2)
        n1 = pen.update_weights(0, dev, o1)
        n2 = pen.update_weights(1, dev, o2)
        res["cases"].append({"class": pen.__class__.__name__, "repr": repr(pen),
                             "params": {k: getattr(pen, k) for k in ("l1", "l2")
                                        if hasattr(pen, k)},
                             "penalty_loss": tolist(total), "w1": tolist(n1),
                             "w2": tolist(n2)})
    return res


def update_refs():
    from onnxcustom.training.sgd_learning_rate import (LearningRateSGD,
                                                       LearningRateSGDNesterov)
    from onnxcustom.utils.onnxruntime_helper import get_ort_device

    dev = get_ort_device("cpu")
    rng = numpy.random.default_rng(5)
    w = rng.standard_normal((3, 2)).astype(numpy.float32)
    g = rng.standard_normal((3, 2)).astype(numpy.float32)
    v = rng.standard_normal((3, 2)).astype(numpy.float32)
    res = {"w": tolist(w), "g": tolist(g), "v": tolist(v), "cases": []}
    for lr in (LearningRateSGD(0.1, learning_rate="constant"),
               LearningRateSGDNesterov(0.1, learning_rate="constant", momentum=0.8),
               LearningRateSGDNesterov(0.1, learning_rate="constant", momentum=0.8,
                                       nesterov=False)):
        lr.build_onnx_function(15, dev, 1)
        lr.init_learning_rate()
        ow, og_, ov = ortvalue(w), ortvalue(g), ortvalue(v)
        out = lr.update_weights(0, dev, ow, og_, 4, None if not lr.needs_grad else ov)
        if lr.needs_grad:
            nw, nv = out
            case = {"w": tolist(nw), "v": tolist(nv)}
        else:
            case = {"w": tolist(out)}
        case.update({"repr": repr(lr), "nesterov": getattr(lr, "nesterov", None),
                     "needs_grad": lr.needs_grad})
        res["cases"].append(case)
    return res


def select_refs():
    from onnxcustom.training.sgd_learning_loss import BaseLearningLoss
    from onnxcustom.training.sgd_learning_penalty import BaseLearningPenalty
    from onnxcustom.training.sgd_learning_rate import BaseLearningRate

    res = {}
    for base, names in ((BaseLearningRate, ["SGD", "SGDNesterov", "Nesterov", 0.5]),
                        (BaseLearningLoss, ["square_error", "square", "absolute_error",
                                            "absolute", "elastic_error", "elastic", "log",
                                            "neglog", "logloss"]),
                        (BaseLearningPenalty, [None, "", "elastic", "l1l2"])):
        sel = {}
        for n in names:
            sel[repr(n)] = repr(base.select(n))
        try:
            base.select("XXX")
        except ValueError as e:
            sel["error"] = str(e)
        res[base.__name__] = sel
    return res


def forward_backward_refs():
    """Attributes and gradients of OrtGradientForwardBackward on the stored models."""
    from onnxcustom.training.ortgradient import OrtGradientForwardBackward
    from onnx.numpy_helper import to_array

    res = {}
    rng = numpy.random.default_rng(6)
    for name in ("linreg", "mlp"):
        onx = onnx.load(os.path.join(DATA, name + ".onnx"))
        fw = OrtGradientForwardBackward(onx)
        cls = fw.cls_type_
        x = rng.standard_normal((5, 4)).astype(numpy.float32)
        ws = [to_array(i) for i in onx.graph.initializer if i.name in fw.weights_to_train]
        inst = fw.new_instance()
        y = inst.forward([x] + ws, training=True)
        seed = rng.standard_normal((5, 1)).astype(numpy.float32)
        grads = inst.backward([seed])
        yi = inst.forward([x] + ws)
        res[name] = {
            "attributes": {k: list(getattr(cls, k)) for k in (
                "_onx_inp", "_onx_out", "_weights_to_train", "_grad_input_names",
                "_input_names", "_bw_fetches_names", "_output_names")},
            "weights_to_train": list(fw.weights_to_train),
            "input_names": list(fw.input_names), "output_names": list(fw.output_names),
            "providers": list(fw.providers), "repr": repr(fw),
            "x": tolist(x), "seed": tolist(seed), "y": tolist(y[0]),
            "y_eval": tolist(yi[0]), "grads": [tolist(g) for g in grads]}
    return res


def fit_refs():
    """Trajectories of OrtGradientForwardBackwardOptimizer: losses per epoch and weights."""
    from onnxcustom.training.excs import ConvergenceError
    from onnxcustom.training.optimizers_partial import OrtGradientForwardBackwardOptimizer
    from onnxcustom.training.sgd_learning_loss import (
        AbsoluteLearningLoss, ElasticLearningLoss, NegLogLearningLoss, SquareLearningLoss)
    from onnxcustom.training.sgd_learning_penalty import ElasticLearningPenalty
    from onnxcustom.training.sgd_learning_rate import (LearningRateSGD,
                                                       LearningRateSGDNesterov)

    X, y, w, yb = datasets()
    cases = [
        ("linreg", "default", {}, False, "reg"),
        ("linreg", "weights_ws", {"warm_start": True, "learning_rate": LearningRateSGD(0.02)},
         True, "reg"),
        ("linreg", "absolute", {"learning_loss": AbsoluteLearningLoss(),
                                "learning_rate": LearningRateSGD(0.005)}, False, "reg"),
        ("linreg", "elastic", {"learning_loss": ElasticLearningLoss(0.3, 0.7),
                               "learning_rate": LearningRateSGD(0.01, learning_rate="constant")},
         True, "reg"),
        ("linreg", "penalty", {"learning_penalty": ElasticLearningPenalty(0.001, 0.0005),
                               "learning_rate": LearningRateSGD(0.02)}, False, "reg"),
        ("linreg", "optimal", {"learning_rate": LearningRateSGD(0.01, learning_rate="optimal"),
                               "warm_start": True}, False, "reg"),
        ("linreg", "nesterov", {"learning_rate": LearningRateSGDNesterov(0.005)}, False, "reg"),
        ("linreg", "momentum", {"learning_rate": LearningRateSGDNesterov(
            0.005, nesterov=False, momentum=0.7), "warm_start": True}, True, "reg"),
        ("logreg", "neglog", {"learning_loss": NegLogLearningLoss(),
                              "learning_rate": LearningRateSGD(0.05), "warm_start": True},
         False, "cls"),
        ("logreg", "neglog_w", {"learning_loss": NegLogLearningLoss(eps=1e-3),
                                "learning_rate": LearningRateSGDNesterov(0.02)}, True, "cls"),
        ("mlp", "mlp", {"learning_rate": LearningRateSGD(0.002), "warm_start": True},
         False, "reg"),
        ("mlp", "mlp_nesterov", {"learning_rate": LearningRateSGDNesterov(0.001)}, True, "reg"),
        ("mlpc", "mlpc", {"learning_loss": NegLogLearningLoss(),
                          "learning_rate": LearningRateSGD(0.05), "warm_start": True},
         False, "cls"),
    ]
    res = []
    for model, name, kw, use_w, kind in cases:
        onx = onnx.load(os.path.join(DATA, model + ".onnx"))
        numpy.random.seed(7)
        if use_w:
            kw = dict(kw, weight_name="weight")
        est = OrtGradientForwardBackwardOptimizer(onx, max_iter=6, batch_size=8,
                                                  validation_every=2, **kw)
        r0 = repr(est)
        target = y.reshape((-1, 1)) if kind == "reg" else yb.reshape((-1, 1))
        # validation data are copies: onnxcustom's binding cache, keyed by data address
        # only, would keep a training batch that starts at row 0 bound in their place
        est.fit(X, target, w if use_w else None, X_val=X[:20].copy(),
                y_val=target[:20].copy())
        state = [tolist(v) for v in est.get_state()]
        numpy.random.seed(9)
        scores = est.losses(X[:16].copy(), target[:16].copy())
        res.append({"model": model, "name": name, "repr": r0, "repr_after": repr(est),
                    "weights": use_w, "kind": kind,
                    "train_losses": [float(v) for v in est.train_losses_],
                    "validation_losses": [float(v) for v in est.validation_losses_],
                    "state": state, "weights_to_train": list(est.weights_to_train),
                    "get_params": {k: repr(v) for k, v in est.get_params().items()},
                    "score_sum": float(numpy.asarray(scores).sum())})
    # divergence: the loss becomes infinite, ConvergenceError, train_losses_ kept
    onx = onnx.load(os.path.join(DATA, "linreg.onnx"))
    numpy.random.seed(8)
    est = OrtGradientForwardBackwardOptimizer(onx, max_iter=10, batch_size=8,
                                              learning_rate=LearningRateSGD(5.0),
                                              warm_start=True)
    try:
        est.fit(X, y.reshape((-1, 1)))
        diverged = None
    except ConvergenceError as e:
        diverged = {"message": str(e), "train_losses": [float(v) for v in est.train_losses_]}
    return res, diverged


def name_refs():
    """The public names each module of onnxcustom.training defines (and those of
    onnxcustom.utils that training code imports)."""
    import importlib
    import inspect

    res = {}
    for mod in ("excs", "_base", "_base_estimator", "_base_onnx_function", "data_loader",
                "optimizers", "optimizers_partial", "ortgradient", "sgd_learning_loss",
                "sgd_learning_penalty", "sgd_learning_rate"):
        m = importlib.import_module("onnxcustom.training." + mod)
        res["training." + mod] = sorted(
            n for n, v in vars(m).items() if not n.startswith("_") and
            (inspect.isclass(v) or inspect.isfunction(v)) and
            getattr(v, "__module__", "").startswith("onnxcustom.training"))
    m = importlib.import_module("onnxcustom.training")
    res["training"] = sorted(n for n in vars(m) if not n.startswith("_") and n[0].isupper())
    for mod, names in (("utils.orttraining_helper", ["add_loss_output", "get_train_initializer",
                                                     "penalty_loss_onnx"]),
                       ("utils.onnx_helper", ["onnx_rename_weights", "get_onnx_opset",
                                              "proto_type_to_dtype", "dtype_to_var_type",
                                              "add_initializer",
                                              "replace_initializers_into_onnx"]),
                       ("utils.onnxruntime_helper", ["provider_to_device",
                                                     "get_ort_device_type", "get_ort_device",
                                                     "ort_device_to_string",
                                                     "numpy_to_ort_value",
                                                     "device_to_providers"])):
        m = importlib.import_module("onnxcustom." + mod)
        res[mod] = [n for n in names if hasattr(m, n)]
    # members of the classes a user's code touches
    from onnxcustom.training.optimizers_partial import OrtGradientForwardBackwardOptimizer
    from onnxcustom.training.ortgradient import (OrtGradientForwardBackward,
                                                 OrtGradientForwardBackwardFunction)
    from onnxcustom.training.sgd_learning_loss import BaseLearningLoss
    from onnxcustom.training.sgd_learning_penalty import BaseLearningPenalty
    from onnxcustom.training.sgd_learning_rate import BaseLearningRate
    from onnxcustom.training.data_loader import OrtDataLoader
    from onnxcustom.training.optimizers import OrtGradientOptimizer
    for cls in (OrtGradientForwardBackwardOptimizer, OrtGradientForwardBackward,
                OrtGradientForwardBackwardFunction, BaseLearningLoss, BaseLearningPenalty,
                BaseLearningRate, OrtDataLoader, OrtGradientOptimizer):
        res["members." + cls.__name__] = sorted(
            n for n in dir(cls) if not n.startswith("__") and not (
                n.startswith("_") and n not in ("_get_param_names",)))
    return res


def main():
    import onnxcustom
    import onnxruntime

    adapt_onnxruntime_training_1_15()
    X, y, w, yb = datasets()
    lrs, lr_errors = lr_refs()
    fits, diverged = fit_refs()
    refs = {
        "source": "onnxcustom %s, onnxruntime-training %s, numpy %s, python %s" % (
            onnxcustom.__version__, onnxruntime.__version__, numpy.__version__,
            sys.version.split()[0]),
        "datasets": {"X": tolist(X), "y": tolist(y), "w": tolist(w), "yb": tolist(yb)},
        "learning_rates": lrs, "learning_rate_errors": lr_errors,
        "losses": loss_refs(), "penalties": penalty_refs(), "updates": update_refs(),
        "select": select_refs(), "forward_backward": forward_backward_refs(),
        "fits": fits, "diverged": diverged, "names": name_refs(),
    }
    with open(os.path.join(DATA, "onnxcustom_refs.json"), "w") as f:
        json.dump(refs, f, indent=0, sort_keys=True)
    print("wrote", os.path.join(DATA, "onnxcustom_refs.json"))


if __name__ == "__main__":
    main()
