"""Trainer (the C trainer from Python): a linear regression and an MLP trained from Python
reach scikit-learn's quality (SGDRegressor, MLPClassifier) with the same settings on the
same data; losses, validation, sample weights, warm start, pickling, export, errors."""
import io
import pickle
import sys

import numpy as np
import pytest

import onnxgrad
from onnxgrad import (ConvergenceError, ElasticLearningPenalty, OrtGradientForwardBackward,
                      Trainer)

from conftest import linreg_model, mlp_model

pytestmark = pytest.mark.skipif(not onnxgrad.has_trainer(),
                                reason="the library has no training API")


def regression_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    coef = np.array([1.5, -2.0, 0.5, 0.0, 3.0])
    y = X @ coef + 0.7 + 0.1 * rng.standard_normal(n)
    return X[:400], y[:400], X[400:], y[400:]


def r2(y, p):
    return 1 - ((y - p) ** 2).sum() / ((y - y.mean()) ** 2).sum()


def test_linear_regression_like_sgdregressor():
    sklearn = pytest.importorskip("sklearn.linear_model")
    X, y, Xt, yt = regression_data()
    # scikit-learn's SGD: one sample per step, invscaling eta0 / t^0.25, no penalty
    sk = sklearn.SGDRegressor(max_iter=15, tol=None, eta0=0.01, learning_rate="invscaling",
                              power_t=0.25, penalty=None, random_state=0).fit(X, y)
    est = Trainer(
        linreg_model(), max_iter=15, batch_size=1,
        learning_rate={"lr": 0.01, "power_t": 0.25, "schedule": "invscaling"})
    est.fit(X, y)
    ours, theirs = r2(yt, est.predict(Xt)), r2(yt, sk.predict(Xt))
    assert theirs > 0.99
    assert ours > theirs - 0.002, (ours, theirs)
    coef, intercept = est.get_state()
    np.testing.assert_allclose(coef[:, 0], [1.5, -2.0, 0.5, 0.0, 3.0], atol=0.05)
    np.testing.assert_allclose(intercept, [0.7], atol=0.05)
    assert len(est.train_losses_) == 15 and est.n_iter_ == 15
    assert est.train_losses_[-1] < 0.1 * est.train_losses_[0]
    assert est.validation_losses_ is None
    assert est.predict(Xt).shape == (200,)


def test_mlp_like_mlpclassifier():
    datasets = pytest.importorskip("sklearn.datasets")
    neural = pytest.importorskip("sklearn.neural_network")
    digits = datasets.load_digits()
    X = (digits.data / 16.0).astype(np.float32)
    y = digits.target
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm]
    Xtr, ytr, Xte, yte = X[:1300], y[:1300], X[1300:], y[1300:]
    # the same settings: 64-32-10 ReLU, Adam lr 1e-3, batches of 32, 25 epochs, no L2
    sk = neural.MLPClassifier(hidden_layer_sizes=(32,), solver="adam", learning_rate_init=1e-3,
                              batch_size=32, max_iter=25, alpha=0.0, random_state=0,
                              tol=0, n_iter_no_change=1000)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk.fit(Xtr, ytr)
    est = Trainer(
        mlp_model((64, 32, 10)), max_iter=25, batch_size=32, training_optimizer_name="Adam",
        learning_rate=1e-3, learning_loss="cross_entropy")
    est.fit(Xtr, ytr, X_val=Xte, y_val=yte)
    ours = (est.predict(Xte) == yte).mean()
    theirs = sk.score(Xte, yte)
    assert theirs > 0.9
    assert ours > theirs - 0.03, (ours, theirs)
    assert len(est.validation_losses_) == 25 // 2  # validation_every=0.1 of 25 epochs: 2
    assert est.validation_losses_[-1] < est.validation_losses_[0]
    proba = est.predict_proba(Xte[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-6)
    assert list(est.classes_) == list(range(10))
    # the loss of the C trainer (no penalty) is the mean of the per-sample losses
    c_loss = est._evaluate(Xte, est._targets(yte, False), None)
    np.testing.assert_allclose(-est.score(Xte, yte), c_loss, rtol=1e-4)


def test_string_labels_and_log_loss():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 5)).astype(np.float32)
    labels = np.where(X[:, 0] - X[:, 1] > 0, "yes", "no")
    est = Trainer(linreg_model(), max_iter=20, batch_size=16,
                  learning_rate=0.5, learning_loss="log")
    est.fit(X, labels)
    assert list(est.classes_) == ["no", "yes"]
    assert (est.predict(X) == labels).mean() > 0.95
    p = est.predict_proba(X[:4])
    assert p.shape == (4, 2) and np.allclose(p.sum(axis=1), 1)


def test_losses_and_score():
    X, y, Xt, yt = regression_data()
    for loss, fn in [("square_error", lambda e: e * e), ("absolute_error", np.abs),
                     ({"kind": "huber", "delta": 0.5},
                      lambda e: np.where(np.abs(e) <= 0.5, 0.5 * e * e, 0.5 * (np.abs(e) - 0.25))),
                     ({"kind": "elastic", "l1_ratio": 0.3},
                      lambda e: 0.3 * np.abs(e) + 0.7 * e * e)]:
        est = Trainer(linreg_model(), max_iter=2, batch_size=8,
              learning_rate=0.01, learning_loss=loss)
        est.fit(X, y)
        per = est.losses(Xt, yt)
        e = est.predict(Xt).astype(np.float64) - yt
        np.testing.assert_allclose(per, fn(e), rtol=1e-4, atol=1e-6)
        c_loss = est._evaluate(Xt, est._targets(yt, False), None)
        np.testing.assert_allclose(per.mean(), c_loss, rtol=1e-4)
        assert est.score(Xt, yt) == pytest.approx(-per.mean())
        w = np.linspace(0, 1, len(yt))
        assert est.score(Xt, yt, sample_weight=w) == pytest.approx(-(per * w).sum() / w.sum())


def test_sample_weights_ignore_corrupted_samples():
    X, y, Xt, yt = regression_data()
    y_bad = y.copy()
    w = np.ones(len(y), np.float32)
    y_bad[::2] += 50.0  # corrupted, weight 0
    w[::2] = 0.0
    # batches of 50: none made only of zero weights (its weighted mean would be 0 / 0)
    est = Trainer(linreg_model(), max_iter=40, batch_size=50,
                  learning_rate=0.05)
    est.fit(X, y_bad, sample_weight=w)
    assert r2(yt, est.predict(Xt)) > 0.99
    plain = Trainer(linreg_model(), max_iter=40, batch_size=50,
            learning_rate=0.05).fit(X, y_bad)
    assert r2(yt, plain.predict(Xt)) < 0.9


def test_penalty_shrinks_weights():
    X, y, _, _ = regression_data()
    plain = Trainer(linreg_model(), max_iter=10, batch_size=8,
            learning_rate=0.02).fit(X, y)
    pen = Trainer(linreg_model(), max_iter=10, batch_size=8,
                  learning_rate=0.02,
                  learning_penalty=ElasticLearningPenalty(0.0, 1.0)
                  ).fit(X, y)
    assert np.abs(pen.get_state()[0]).sum() < 0.8 * np.abs(plain.get_state()[0]).sum()
    # the penalty is part of the training loss, not of losses()
    assert pen.train_losses_[-1] > -pen.score(X, y)


def test_warm_start_continues():
    X, y, _, _ = regression_data()
    est = Trainer(linreg_model(), max_iter=3, batch_size=16,
                  learning_rate=0.01, warm_start=True)
    est.fit(X, y)
    first = est.train_losses_
    est.fit(X, y)
    assert est.train_losses_[0] < first[0] and est.train_losses_[0] <= first[-1] * 1.05
    cold = Trainer(linreg_model(), max_iter=3, batch_size=16,
           learning_rate=0.01)
    cold.fit(X, y)
    a = cold.train_losses_
    cold.fit(X, y)
    np.testing.assert_allclose(cold.train_losses_, a)  # a cold start repeats itself exactly


def test_pickle_and_export(tmp_path):
    X, y, Xt, _ = regression_data()
    est = Trainer(linreg_model(), max_iter=3, batch_size=8,
                  learning_rate=0.02)
    est.fit(X, y)
    pred = est.predict(Xt)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.predict(Xt), pred)
    assert est2.train_losses_ == est.train_losses_
    for a, b in zip(est2.get_state(), est.get_state()):
        np.testing.assert_array_equal(a, b)
    # the trained model: the original graph with the trained weights, no loss
    onx = est.get_trained_onnx()
    assert [i.name for i in onx.graph.input] == ["X"]
    assert [o.name for o in onx.graph.output] == ["Y"]
    fw = OrtGradientForwardBackward(onx)
    np.testing.assert_allclose(fw.get_initializer("coef"), est.get_state()[0])
    np.testing.assert_allclose(fw.new_instance().forward([Xt])[0][:, 0], pred, rtol=1e-6)
    assert isinstance(est.get_trained_onnx(as_bytes=True), bytes)
    # warm start from the unpickled estimator
    est2.set_params(warm_start=True, max_iter=1)
    est2.fit(X, y)
    assert est2.train_losses_[0] < est.train_losses_[0]


def test_sklearn_protocol():
    base = pytest.importorskip("sklearn.base")
    est = Trainer(linreg_model(), max_iter=7, learning_rate=0.1)
    params = est.get_params()
    assert params["max_iter"] == 7 and params["learning_rate"] == 0.1
    c = base.clone(est)
    assert c.max_iter == 7 and c is not est
    assert "max_iter=7" in repr(est)
    with pytest.raises(ValueError):
        est.set_params(nope=1)


def test_progress_bar(monkeypatch):
    X, y, Xt, yt = regression_data()
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    est = Trainer(linreg_model(), max_iter=4, batch_size=32,
                  learning_rate=0.01, verbose=1, warm_start=True)
    est.fit(X, y, X_val=Xt, y_val=yt)
    text = buf.getvalue()
    assert "[########################] 4/4 loss=" in text and "val=" in text
    assert text.count("\r") == 4
    buf.truncate(0)
    est.fit(X, y)  # a warm start counts its own epochs
    assert "[######..................] 1/4 loss=" in buf.getvalue()
    assert "4/4 loss=" in buf.getvalue() and "5/4" not in buf.getvalue()


def test_optimizers_and_schedules():
    X, y, Xt, yt = regression_data()
    for name, lr in [("SGD", "SGDNesterov"), ("SGD", {"lr": 0.01, "momentum": 0.9}),
                     ("Adam", 0.05), ("AdamW", {"lr": 0.05, "weight_decay": 0.0}),
                     ("Adagrad", 0.5), ("SGD", {"lr": 0.05, "schedule": "cosine",
            "total_steps": 500})]:
        est = Trainer(linreg_model(), max_iter=10, batch_size=8,
              training_optimizer_name=name,
              learning_rate=lr)
        est.fit(X, y)
        assert r2(yt, est.predict(Xt)) > 0.98, (name, lr)


def test_errors():
    X, y, _, _ = regression_data()
    model = linreg_model()
    with pytest.raises(ValueError, match="learning_loss"):
        Trainer(model, learning_loss="hinge").fit(X, y)
    with pytest.raises(ValueError, match="training_optimizer_name"):
        Trainer(model, training_optimizer_name="LBFGS").fit(X, y)
    with pytest.raises(ValueError, match="optimizer option"):
        Trainer(model, learning_rate={"lr": 1, "x": 2}).fit(X, y)
    with pytest.raises(ValueError, match="lr"):  # refused by the C options check
        Trainer(model, learning_rate=-1.0).fit(X, y)
    with pytest.raises(RuntimeError, match="CPU"):
        Trainer(model, device="cuda").fit(X, y)
    with pytest.raises(ValueError, match="samples"):
        Trainer(model).fit(X, y[:10])
    with pytest.raises(ValueError, match="nope"):
        Trainer(model, weights_to_train=["nope"]).fit(X, y)
    with pytest.raises(ConvergenceError):
        Trainer(model, max_iter=50, batch_size=8,
                                            learning_rate=1e3).fit(X, y * 1e3)
    with pytest.raises(AttributeError, match="fit"):
        Trainer(model).predict(X)
    est = Trainer(mlp_model((5, 4, 3)), max_iter=1,
                  learning_loss="cross_entropy")
    est.fit(X, np.arange(len(X)) % 3)
    with pytest.raises(ValueError, match="labels"):
        est.losses(X[:2], [0, 7])
