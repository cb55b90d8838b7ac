"""OrtGradientForwardBackwardOptimizer and OrtGradientOptimizer as onnxcustom's users run them:
the trajectories (losses per epoch, weights) of onnxcustom 0.4.293 itself on the same models,
data and numpy seed (data/onnxcustom_refs.json), reprs and parameters, divergence,
warm_start, pickling mid-training, sklearn's clone and GridSearchCV, logging, save_onnx_graph,
and scikit-learn models converted by skl2onnx trained with every loss, penalty and learning
rate, their trained weights put back into the whole converted model."""
import io
import logging
import os
import pickle
import warnings

import numpy as np
import pytest

from conftest import data_model, ref_array
from onnxgrad import _lib as L
from onnxgrad.training import ConvergenceError, ConvergenceWarning
from onnxgrad.training.optimizers import OrtGradientOptimizer
from onnxgrad.training.optimizers_partial import OrtGradientForwardBackwardOptimizer
from onnxgrad.training.sgd_learning_loss import (AbsoluteLearningLoss, ElasticLearningLoss,
                                                 NegLogLearningLoss, SquareLearningLoss)
from onnxgrad.training.sgd_learning_penalty import ElasticLearningPenalty, NoLearningPenalty
from onnxgrad.training.sgd_learning_rate import LearningRateSGD, LearningRateSGDNesterov
from onnxgrad.values import Device, OrtValueArray

# the cases of make_onnxcustom_refs.fit_refs, by name
CASES = {
    "default": ("linreg", {}, False, "reg"),
    "weights_ws": ("linreg", {"warm_start": True, "learning_rate": LearningRateSGD(0.02)},
                   True, "reg"),
    "absolute": ("linreg", {"learning_loss": AbsoluteLearningLoss(),
                            "learning_rate": LearningRateSGD(0.005)}, False, "reg"),
    "elastic": ("linreg", {"learning_loss": ElasticLearningLoss(0.3, 0.7),
                           "learning_rate": LearningRateSGD(0.01, learning_rate="constant")},
                True, "reg"),
    "penalty": ("linreg", {"learning_penalty": ElasticLearningPenalty(0.001, 0.0005),
                           "learning_rate": LearningRateSGD(0.02)}, False, "reg"),
    "optimal": ("linreg", {"learning_rate": LearningRateSGD(0.01, learning_rate="optimal"),
                           "warm_start": True}, False, "reg"),
    "nesterov": ("linreg", {"learning_rate": LearningRateSGDNesterov(0.005)}, False, "reg"),
    "momentum": ("linreg", {"learning_rate": LearningRateSGDNesterov(
        0.005, nesterov=False, momentum=0.7), "warm_start": True}, True, "reg"),
    "neglog": ("logreg", {"learning_loss": NegLogLearningLoss(),
                          "learning_rate": LearningRateSGD(0.05), "warm_start": True},
               False, "cls"),
    "neglog_w": ("logreg", {"learning_loss": NegLogLearningLoss(eps=1e-3),
                            "learning_rate": LearningRateSGDNesterov(0.02)}, True, "cls"),
    "mlp": ("mlp", {"learning_rate": LearningRateSGD(0.002), "warm_start": True}, False, "reg"),
    "mlp_nesterov": ("mlp", {"learning_rate": LearningRateSGDNesterov(0.001)}, True, "reg"),
    "mlpc": ("mlpc", {"learning_loss": NegLogLearningLoss(),
                      "learning_rate": LearningRateSGD(0.05), "warm_start": True},
             False, "cls"),
}


def data(refs):
    d = refs["datasets"]
    return ref_array(d["X"]), ref_array(d["y"]), ref_array(d["w"]), ref_array(d["yb"])


def make(name, refs, onnx_model=None, **extra):
    model, kw, use_w, kind = CASES[name]
    kw = dict(kw, **extra)
    if use_w:
        kw["weight_name"] = "weight"
    # the learning objects are shared by the CASES table: give each estimator its own
    kw = {k: (pickle.loads(pickle.dumps(v)) if hasattr(v, "build_onnx_function") else v)
          for k, v in kw.items()}
    X, y, w, yb = data(refs)
    target = y.reshape((-1, 1)) if kind == "reg" else yb.reshape((-1, 1))
    est = OrtGradientForwardBackwardOptimizer(onnx_model or data_model(model), max_iter=6,
                                              batch_size=8, validation_every=2, **kw)
    return est, X, target, (w if use_w else None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_trajectory_as_onnxcustom(refs, name):
    """Same model, data, settings and numpy seed: the same losses per epoch, validation
    losses and weights as onnxcustom (float32 rounding apart), the same reprs."""
    onnx = pytest.importorskip("onnx")
    ref = [f for f in refs["fits"] if f["name"] == name][0]
    est, X, target, w = make(name, refs, onnx.load_from_string(data_model(CASES[name][0])))
    assert repr(est) == ref["repr"]
    np.random.seed(7)
    est.fit(X, target, w, X_val=X[:20].copy(), y_val=target[:20].copy())
    assert repr(est) == ref["repr_after"]
    assert {k: repr(v) for k, v in est.get_params().items()} == ref["get_params"]
    assert est.weights_to_train == ref["weights_to_train"]
    losses = np.array(est.train_losses_, dtype=np.float64)
    val = np.array(est.validation_losses_, dtype=np.float64)
    if name in ("absolute", "elastic"):
        # onnxcustom's L1 gradient had the wrong sign (sgd_learning_loss's doc): its
        # validation loss grew with the absolute loss; here it decreases
        assert val[-1] < val[0] and losses[-1] < losses[0]
        if name == "absolute":
            assert ref["validation_losses"][-1] > ref["validation_losses"][0]
        return
    np.testing.assert_allclose(losses, ref["train_losses"], rtol=1e-4)
    np.testing.assert_allclose(val, ref["validation_losses"], rtol=1e-4)
    for got, want in zip(est.get_state(), ref["state"]):
        assert isinstance(got, OrtValueArray)
        np.testing.assert_allclose(got.numpy(), ref_array(want), rtol=1e-4, atol=1e-6)


@pytest.mark.filterwarnings("ignore:overflow")
def test_divergence_raises_and_keeps_the_losses(refs):
    ref = refs["diverged"]
    X, y, _, _ = data(refs)
    est = OrtGradientForwardBackwardOptimizer(data_model("linreg"), max_iter=10, batch_size=8,
                                              learning_rate=LearningRateSGD(5.0),
                                              warm_start=True)
    np.random.seed(8)
    with pytest.raises(ConvergenceError) as e:
        est.fit(X, y.reshape((-1, 1)))
    # onnxcustom's message and losses: the epochs finished before the loss became infinite
    np.testing.assert_allclose(est.train_losses_, ref["train_losses"], rtol=1e-3)
    assert str(e.value).split("(past")[0] == ref["message"].split("(past")[0]
    assert isinstance(e.value, RuntimeError)
    # exc=False: a warning, and the training goes on
    est = OrtGradientForwardBackwardOptimizer(data_model("linreg"), max_iter=5, batch_size=8,
                                              learning_rate=LearningRateSGD(5.0),
                                              warm_start=True, exc=False)
    with pytest.warns(ConvergenceWarning):
        with np.errstate(all="ignore"):
            est.fit(X, y.reshape((-1, 1)))
    assert len(est.train_losses_) == 5 and np.isnan(est.train_losses_[-1])


def test_warm_start(refs):
    X, y, _, _ = data(refs)
    y = y.reshape((-1, 1))
    kw = dict(max_iter=3, batch_size=8, learning_rate=LearningRateSGD(0.02))
    # False: every fit starts from numpy.random.randn weights (onnxcustom's start)
    est = OrtGradientForwardBackwardOptimizer(data_model("linreg"), **kw)
    np.random.seed(3)
    start = [np.random.randn(4, 1).astype(np.float32), np.random.randn(1).astype(np.float32)]
    np.random.seed(3)
    est.fit(X, y, X_val=X, y_val=y)
    first = list(est.train_losses_)
    np.random.seed(3)
    est.fit(X, y)
    assert est.train_losses_ == first  # the same start, the same batches
    cold = OrtGradientForwardBackwardOptimizer(data_model("linreg"), **dict(kw, max_iter=1))
    np.random.seed(3)
    cold.fit(X, y)
    manual = OrtGradientForwardBackwardOptimizer(data_model("linreg"), warm_start=True,
                                                 **dict(kw, max_iter=1))
    manual.set_state([None] + start, check_trained=False)
    np.random.seed(3)
    np.random.randn(5)  # the draws of the start
    manual.fit(X, y)
    np.testing.assert_allclose(manual.train_losses_, cold.train_losses_, rtol=1e-6)
    # True: the first fit starts from the model's initializers, the next from the last fit
    warm = OrtGradientForwardBackwardOptimizer(data_model("linreg"), warm_start=True, **kw)
    warm.fit(X, y)
    a = [np.array(v) for v in warm.get_state()]
    warm.fit(X, y)
    assert warm.train_losses_[0] < 2 * a[0].size  # continued from trained weights
    b = OrtGradientForwardBackwardOptimizer(data_model("linreg"), warm_start=True,
                                            **dict(kw, max_iter=0))
    b.fit(X, y)  # no epoch: the initializers themselves
    np.testing.assert_allclose(b.get_state()[0].numpy().ravel(), [1.0, -1.0, 0.5, 2.0],
                               atol=1e-5)


def test_pickled_mid_training_and_resumed(refs):
    X, y, _, _ = data(refs)
    y = y.reshape((-1, 1))
    kw = dict(max_iter=3, batch_size=8, warm_start=True,
              learning_rate=LearningRateSGDNesterov(0.002),
              learning_penalty=ElasticLearningPenalty(1e-4, 1e-4))

    def run(pickled):
        est = OrtGradientForwardBackwardOptimizer(data_model("mlp"), **kw)
        np.random.seed(11)
        est.fit(X, y)
        if pickled:
            est = pickle.loads(pickle.dumps(est))
            assert not hasattr(est, "train_losses_")  # as onnxcustom: '_' attributes go
        est.fit(X, y, X_val=X, y_val=y)
        return est

    a, b = run(False), run(True)
    np.testing.assert_array_equal(np.array(a.train_losses_), np.array(b.train_losses_))
    for u, v in zip(a.get_state(), b.get_state()):
        np.testing.assert_array_equal(u, v)
    # an unpickled fitted estimator scores without fitting again
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_allclose(c.losses(X, y), a.losses(X, y), rtol=1e-6)


def test_parameters_clone_and_grid_search(refs):
    base = pytest.importorskip("sklearn.base")
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y, _, yb = data(refs)
    weights = ["coef", "intercept"]
    est = OrtGradientForwardBackwardOptimizer(data_model("linreg"), weights, max_iter=4,
                                              learning_rate=LearningRateSGD(1e-3),
                                              learning_loss=SquareLearningLoss())
    assert est.weights_to_train is weights  # kept as given: clone checks it
    assert est.get_params()["device"] == "cpu" and isinstance(est.device, Device)
    c = base.clone(est)
    assert c.weights_to_train == weights and c is not est
    assert repr(c.learning_rate) == repr(est.learning_rate)
    values = [LearningRateSGD(v) for v in (1e-5, 1e-3, 1e-2)]
    grid = model_selection.GridSearchCV(est, param_grid={"learning_rate": values}, cv=3,
                                        error_score="raise")
    grid.fit(X, y.reshape((-1, 1)))
    assert isinstance(grid.best_params_["learning_rate"], LearningRateSGD)
    means = grid.cv_results_["mean_test_score"]
    assert np.isfinite(means).all() and means.max() > means.min()
    cls = OrtGradientForwardBackwardOptimizer(data_model("logreg"), max_iter=4,
                                              learning_rate=LearningRateSGD(1e-3),
                                              learning_loss=NegLogLearningLoss())
    grid = model_selection.GridSearchCV(cls, param_grid={"learning_rate": values[1:],
                                                         "max_iter": [2, 6]},
                                        cv=3, error_score="raise")
    grid.fit(X, yb.reshape((-1, 1)))
    assert grid.best_params_["max_iter"] == 6 and np.isfinite(grid.best_score_)
    # strings, dicts and objects: held as onnxcustom held them
    e2 = OrtGradientForwardBackwardOptimizer(
        data_model("linreg"), learning_rate={"eta0": 0.1, "learning_rate": "constant"},
        learning_loss={"class_name": "elastic", "l1_weight": 0.2}, learning_penalty="l1l2")
    assert repr(e2.learning_rate) == ("LearningRateSGD(eta0=0.1, alpha=0.0001, power_t=0.25, "
                                      "learning_rate='constant')")
    assert repr(e2.learning_loss) == "ElasticLearningLoss(l1_weight=0.2, l2_weight=0.5)"
    assert repr(e2.learning_penalty) == "ElasticLearningPenalty(l1=0.5, l2=0.5)"
    with pytest.raises(ValueError, match="SquareLearningLoss.*square_error"):
        OrtGradientForwardBackwardOptimizer(data_model("linreg"), learning_loss="hinge")
    with pytest.raises(ValueError, match="Nesterov"):
        OrtGradientForwardBackwardOptimizer(data_model("linreg"), learning_rate="Adam")
    est.set_params(learning_rate="Nesterov", learning_loss="absolute", device="cpu")
    assert type(est.learning_rate).__name__ == "LearningRateSGDNesterov"
    assert type(est.learning_loss).__name__ == "AbsoluteLearningLoss"


def test_losses_and_score(refs):
    X, y, w, _ = data(refs)
    y = y.reshape((-1, 1))
    est = OrtGradientForwardBackwardOptimizer(data_model("linreg"), max_iter=2, batch_size=7,
                                              learning_loss=ElasticLearningLoss(0.2, 0.8),
                                              weight_name="weight")
    with pytest.raises(AttributeError, match="fit"):
        est.get_state()
    np.random.seed(0)
    est.fit(X, y, w)
    coef, intercept = [v.numpy() for v in est.get_state()]
    e = y - (X @ coef + intercept)
    per = 0.2 * np.abs(e) + 0.8 * e * e
    np.testing.assert_allclose(est.losses(X, y), per.ravel(), rtol=1e-5)  # every row, in order
    np.testing.assert_allclose(est.losses(X, y, w), (per.ravel() * w), rtol=1e-5)
    assert est.score(X, y) == pytest.approx(-per.sum() / len(X), rel=1e-5)
    assert est.scores is OrtGradientForwardBackwardOptimizer.losses or callable(est.scores)


def test_logging_and_attributes(refs, caplog):
    X, y, _, _ = data(refs)
    est = OrtGradientForwardBackwardOptimizer(data_model("linreg"), max_iter=2,
                                              enable_logging=True)
    with caplog.at_level(logging.DEBUG, logger="onnxcustom"):
        est.fit(X, y)
    text = caplog.text
    for msg in ("[OrtGradientForwardBackwardOptimizer.fit] input_names=['X', 'coef', "
                "'intercept']", "[OrtGradientForwardBackwardOptimizer._iteration] "
                "iteration begin", "[OrtGradientForwardBackwardOptimizer._iteration] batch 0",
                "[OrtGradientForwardBackwardOptimizer.fit] lr value=",
                "[OrtGradientForwardBackwardOptimizer.fit] end loss="):
        assert msg in text, msg
    assert {r.name for r in caplog.records} == {"onnxcustom"}
    assert est.input_names_ == ["X", "coef", "intercept"]
    assert est.output_names_ == ["X_grad", "coef_grad", "intercept_grad"]
    assert hasattr(est.train_function_, "forward") and est.train_session_.weights_to_train
    assert str(est.device) == "cpu"
    with pytest.raises(NotImplementedError):
        OrtGradientForwardBackwardOptimizer(data_model("linreg"),
                                            training_optimizer_name="Adam").fit(X, y)
    with pytest.raises(RuntimeError, match="CUDA|cuda"):
        OrtGradientForwardBackwardOptimizer(data_model("linreg"), device="cuda").fit(X, y)


def test_save_onnx_graph(refs, tmp_path):
    onnx = pytest.importorskip("onnx")
    X, y, _, _ = data(refs)
    est = OrtGradientForwardBackwardOptimizer(onnx.load_from_string(data_model("linreg")),
                                              max_iter=1,
                                              learning_rate=LearningRateSGDNesterov(),
                                              learning_penalty="elastic")
    est.fit(X, y)
    saved = est.save_onnx_graph(bytes)
    # onnxcustom's keys (plus train_session_, whose class had no save_onnx_graph there)
    assert set(saved) == {"model_onnx", "learning_rate", "learning_loss", "learning_penalty",
                          "zero_onnx_", "train_function_", "train_session_"}
    assert set(saved["learning_loss"]) == {"loss_grad_onnx_", "loss_score_onnx_"}
    assert set(saved["learning_penalty"]) == {"penalty_onnx_", "penalty_grad_onnx_"}
    assert set(saved["learning_rate"]) == {"axpyw_onnx_"}
    assert set(saved["train_function_"]) == {"_trained_onnx", "_optimized_pre_grad_model"}
    files = est.save_onnx_graph(str(tmp_path))
    names = sorted(os.listdir(tmp_path))
    assert "GradFBOptimizer.model_onnx.onnx" in names  # names shortened as onnxcustom did
    assert files["learning_loss"]["loss_grad_onnx_"].endswith(
        "SquareLLoss.learning_loss.loss_grad_onnx_.onnx")
    ort = pytest.importorskip("onnxruntime")
    for name in names:  # every file is a model onnxruntime loads
        ort.InferenceSession(str(tmp_path / name), providers=["CPUExecutionProvider"])


# ---- scikit-learn models converted by skl2onnx, end to end ----------------------------------


def _skl_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)).astype(np.float32)
    y = (X @ np.array([1.0, -1.0, 0.5, 2.0]) + 0.3).astype(np.float32)
    return X, y, (y > 0.3).astype(np.int64)


def _cut(model, output):
    """The part of a converted model that computes `output` (the raw score to train)."""
    from onnx import helper, shape_inference

    need, nodes = {output}, []
    for node in reversed(model.graph.node):
        if any(o in need for o in node.output):
            nodes.append(node)
            need.update(node.input)
    nodes.reverse()
    graph = helper.make_graph(nodes, "cut", [i for i in model.graph.input if i.name in need],
                              [], [i for i in model.graph.initializer if i.name in need])
    part = helper.make_model(graph, opset_imports=[o for o in model.opset_import
                                                   if o.domain in ("", "ai.onnx")])
    part.ir_version = model.ir_version
    infos = {v.name: v for v in shape_inference.infer_shapes(part).graph.value_info}
    part.graph.output.append(infos[output])
    return part


@pytest.mark.parametrize("kind", ["LinearRegression", "SGDClassifier", "MLPRegressor",
                                  "MLPClassifier"])
def test_sklearn_models_end_to_end(kind):
    """Each model converted by skl2onnx is trained with every loss that suits it, each
    penalty and each learning rate, its losses fall, and its trained weights go back into the
    whole converted model, which onnxruntime runs to the same scores."""
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    from skl2onnx import to_onnx
    from sklearn.linear_model import LinearRegression, SGDClassifier
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    X, y, yb = _skl_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "LinearRegression":
            full = to_onnx(LinearRegression().fit(X, y), X, target_opset=15,
                           black_op={"LinearRegressor"})
            train, target, score = full, y, "variable"
        elif kind == "SGDClassifier":
            full = to_onnx(SGDClassifier(loss="log_loss", random_state=0).fit(X, yb), X,
                           target_opset=15, black_op={"LinearRegressor"})
            train, target, score = _cut(full, "score"), yb, "score"
        elif kind == "MLPRegressor":
            full = to_onnx(MLPRegressor(hidden_layer_sizes=(5,), max_iter=20,
                                        random_state=0).fit(X, y), X,
                           target_opset=15)
            train, target, score = full, y, "variable"
        else:
            full = to_onnx(MLPClassifier(hidden_layer_sizes=(5,), max_iter=20,
                                         random_state=0).fit(X, yb), X,
                           target_opset=15)
            train, target, score = _cut(full, "add_result1"), yb, "add_result1"
    classifier = target.dtype == np.int64
    losses = [NegLogLearningLoss()] if classifier else [
        SquareLearningLoss(), AbsoluteLearningLoss(), ElasticLearningLoss(0.3, 0.7)]
    rates = [LearningRateSGD(0.01), LearningRateSGD(0.01, learning_rate="constant"),
             LearningRateSGD(0.01, learning_rate="optimal"), LearningRateSGDNesterov(0.005),
             LearningRateSGDNesterov(0.005, nesterov=False)]
    penalties = [NoLearningPenalty(), ElasticLearningPenalty(1e-5, 1e-5)]
    runs = [(l, r, p) for l in losses for r in rates for p in penalties]
    last = None
    for loss, rate, pen in runs:  # every loss with every learning rate and penalty
        est = OrtGradientForwardBackwardOptimizer(
            train, max_iter=8, batch_size=16,
            learning_loss=pickle.loads(pickle.dumps(loss)),
            learning_rate=pickle.loads(pickle.dumps(rate)),
            learning_penalty=pickle.loads(pickle.dumps(pen)))
        np.random.seed(1)
        est.fit(X, target.reshape((-1, 1)), X_val=X[:50], y_val=target[:50].reshape((-1, 1)))
        assert np.isfinite(est.train_losses_).all(), (loss, rate, pen)
        assert est.validation_losses_[-1] <= est.validation_losses_[0] * 1.05, (loss, rate, pen)
        last = est
    # the trained weights in the whole converted model
    trained = last.get_trained_onnx(model=full)
    names = {i.name for i in trained.graph.initializer}
    for w, v in zip(last.weights_to_train, last.get_state()):
        assert w in names
    sess = ort.InferenceSession(trained.SerializeToString(), providers=["CPUExecutionProvider"])
    # the instance's weights are the model's; the trained ones are the estimator's state
    state = [np.asarray(v) for v in last.get_state()]
    scores = last.train_function_.forward([X[:10]] + state)[0].numpy()
    if classifier:
        proba = sess.run(None, {"X": X[:10]})[1]  # ZipMap's list of {class: probability}
        p1 = [row[1] for row in proba]
        np.testing.assert_allclose(p1, 1 / (1 + np.exp(-scores[:, 0])), rtol=1e-4, atol=1e-6)
    else:
        np.testing.assert_allclose(sess.run(None, {"X": X[:10]})[0].ravel(), scores.ravel(),
                                   rtol=1e-4, atol=1e-5)
    # the whole model (ai.onnx.ml ops, ZipMap's sequence of maps) runs in onnxgrad too, with
    # onnxruntime's outputs
    session = L.Session(L.Model.load(trained.SerializeToString()), threads=1)
    names = L.model_outputs(session.model_ptr)
    got = session.run({"X": X[:10]}, names)
    want = sess.run(names, {"X": X[:10]})
    for name, g, w in zip(names, got, want):
        if isinstance(w, list):  # ZipMap: one {class: probability} per row
            assert len(g) == len(w) == 10, name
            for rg, rw in zip(g, w):
                assert sorted(rg) == sorted(rw), name
                np.testing.assert_allclose([rg[k] for k in sorted(rw)],
                                           [rw[k] for k in sorted(rw)], rtol=1e-5, atol=1e-7)
        elif w.dtype.kind in "iuO":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_stored_classifiers_export(refs):
    """logreg_full / mlpc_full (data/, converted by skl2onnx 1.15 as onnxcustom's users did):
    the cut model is trained, get_trained_onnx(model=whole) runs in onnxruntime."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    X, _, _, yb = data(refs)
    for part, whole in (("logreg", "logreg_full"), ("mlpc", "mlpc_full")):
        est = OrtGradientForwardBackwardOptimizer(data_model(part), max_iter=4,
                                                  learning_loss="log", warm_start=True,
                                                  learning_rate=LearningRateSGD(0.05))
        est.fit(X, yb)
        trained = est.get_trained_onnx(model=onnx.load_from_string(data_model(whole)))
        sess = ort.InferenceSession(trained.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        label, proba = sess.run(None, {"X": X[:8]})
        state = [np.asarray(v) for v in est.get_state()]
        s = est.train_function_.forward([X[:8]] + state)[0].numpy()[:, 0]
        p1 = [row[1] for row in proba]
        np.testing.assert_allclose(p1, 1 / (1 + np.exp(-s)), rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(label, (s > 0).astype(np.int64))


# ---- OrtGradientOptimizer: a model with its loss ---------------------------------------------


def test_ort_gradient_optimizer(refs):
    onnx = pytest.importorskip("onnx")
    from onnxgrad.utils.orttraining_helper import add_loss_output

    X, y, w, _ = data(refs)
    onx = onnx.load_from_string(data_model("linreg"))
    loss_model = add_loss_output(onx)
    assert [i.name for i in loss_model.graph.input] == ["X", "label"]
    assert [o.name for o in loss_model.graph.output] == ["loss", "variable"]
    est = OrtGradientOptimizer(loss_model, ["intercept", "coef"], max_iter=5, batch_size=8,
                               learning_rate=1e-2)
    assert "learning_rate=LearningRateSGD(eta0=0.01" in repr(est)
    with pytest.raises(AttributeError):
        est.get_state()
    np.random.seed(4)  # the start: randn per weight, in weights_to_train's order
    start = {"intercept": np.random.randn(1).astype(np.float32),
             "coef": np.random.randn(4, 1).astype(np.float32)}
    np.random.seed(4)
    est.fit(X, y.reshape((-1, 1)), X_val=X[:10], y_val=y[:10].reshape((-1, 1)))
    assert len(est.train_losses_) == 5 and est.train_losses_[-1] < est.train_losses_[0]
    assert len(est.validation_losses_) == 5
    # the same algorithm in numpy: w -= lr / batch * d(sum of squares)/dw, lr per epoch
    coef, intercept = start["coef"].copy(), start["intercept"].copy()
    np.random.seed(4)
    np.random.randn(5)  # the start's draws
    lr = LearningRateSGD(1e-2).init_learning_rate()
    value = lr.value
    for it in range(5):
        for _ in range(0, 60, 8):
            i = np.random.randint(0, 52)
            xb, yb = X[i:i + 8], y[i:i + 8].reshape((-1, 1))
            e = xb @ coef + intercept - yb
            coef -= value / 8 * (2 * xb.T @ e).astype(np.float32)
            intercept -= value / 8 * (2 * e.sum(axis=0)).astype(np.float32)
        value = lr.update_learning_rate(it).value
    state = est.get_state()
    np.testing.assert_allclose(state["coef"], coef, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(state["intercept"], intercept, rtol=1e-4, atol=1e-5)
    pred = est.get_trained_onnx(model=onx)
    assert [o.name for o in pred.graph.output] == ["variable"]
    with pytest.raises(NotImplementedError):
        OrtGradientOptimizer(loss_model, ["coef"], learning_rate="Nesterov")
    # with sample weights
    wl = add_loss_output(onx, weight_name="weight", score_name="elastic", l1_weight=0.1,
                         l2_weight=0.9, penalty={"coef": {"l1": 0.5, "l2": 0.5}})
    est = OrtGradientOptimizer(wl, ["coef", "intercept"], max_iter=3, warm_start=True)
    est.fit(X, y.reshape((-1, 1)), w)
    assert np.isfinite(est.train_losses_).all()
    with pytest.raises(RuntimeError, match="Number of inputs"):
        est.fit(X, y.reshape((-1, 1)))


def test_add_loss_output_values():
    """Every score add_loss_output builds, run in onnxruntime, against numpy."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnxgrad.utils.orttraining_helper import add_loss_output

    onx = onnx.load_from_string(data_model("linreg"))
    rng = np.random.default_rng(5)
    X = rng.standard_normal((9, 4)).astype(np.float32)
    label = rng.standard_normal((9, 1)).astype(np.float32)
    weight = (rng.random(9) + 0.5).astype(np.float32)
    coef = np.array([[1.0], [-1.0], [0.5], [2.0]])
    e = (X @ coef + 0.3 - label)
    cases = [("squared_error", {}, e * e), ("l1", {}, np.abs(e)),
             ("elastic", {"l1_weight": 0.2, "l2_weight": 0.7}, 0.2 * np.abs(e) + 0.7 * e * e)]
    for score, kw, per in cases:
        for wname in (None, "weight"):
            m = add_loss_output(onx, score_name=score, weight_name=wname, **kw)
            sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            feeds = {"X": X, "label": label}
            want = per.sum()
            if wname:
                feeds["weight"] = weight
                want = (per.ravel() * weight).sum()
            got = sess.run(["loss"], feeds)[0]
            assert got.shape == (1, 1)
            np.testing.assert_allclose(got[0, 0], want, rtol=1e-4)
    m = add_loss_output(onx, penalty={"coef": {"l1": 0.1, "l2": 0.2}, "intercept": 0.3})
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    pen = 0.1 * np.abs(coef).sum() + 0.2 * (coef ** 2).sum() + 0.3 * 0.3 ** 2
    np.testing.assert_allclose(sess.run(["loss"], {"X": X, "label": label})[0][0, 0],
                               (e * e).sum() + pen, rtol=1e-4)
