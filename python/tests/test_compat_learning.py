"""onnxcustom's learning rates, losses and penalties (onnxgrad.training.sgd_learning_*):
their values, gradients, updates, reprs and names, against what onnxcustom 0.4.293 itself
computed (data/onnxcustom_refs.json, written by make_onnxcustom_refs.py on
onnxruntime-training 1.15.1); the ONNX graphs they save compute the same in onnxruntime."""
import pickle

import numpy as np
import pytest

from conftest import ref_array
from onnxgrad.training.sgd_learning_loss import (AbsoluteLearningLoss, BaseLearningLoss,
                                                 ElasticLearningLoss, NegLogLearningLoss,
                                                 SquareLearningLoss)
from onnxgrad.training.sgd_learning_penalty import (BaseLearningPenalty,
                                                    ElasticLearningPenalty, NoLearningPenalty)
from onnxgrad.training.sgd_learning_rate import (BaseLearningRate, LearningRateSGD,
                                                 LearningRateSGDNesterov)
from onnxgrad.values import OrtValueArray

CLASSES = {c.__name__: c for c in (LearningRateSGD, LearningRateSGDNesterov, SquareLearningLoss,
                                   AbsoluteLearningLoss, ElasticLearningLoss,
                                   NegLogLearningLoss, ElasticLearningPenalty,
                                   NoLearningPenalty)}


def test_learning_rate_sequences(refs):
    # every schedule and parameter set of make_onnxcustom_refs.lr_refs: loop() and the
    # sequence a fit goes through (update_learning_rate(epoch) after each epoch)
    assert len(refs["learning_rates"]) == 18
    for case in refs["learning_rates"]:
        lr = CLASSES[case["class"]](**case["kwargs"])
        assert repr(lr) == case["repr"]
        np.testing.assert_allclose(list(lr.loop(60)), case["loop"], rtol=1e-15)
        assert repr(lr) == case["repr_after"]
        lr.init_learning_rate()
        fit = [lr.value] + [lr.update_learning_rate(it).value for it in range(59)]
        np.testing.assert_allclose(fit, case["fit"], rtol=1e-15)
    # 'optimal' starts at eta0 (it used to start at 10 and ignore eta0)
    assert list(LearningRateSGD(0.1, learning_rate="optimal").loop(1)) == [0.1]


def test_learning_rate_checks(refs):
    for name, message in refs["learning_rate_errors"].items():
        with pytest.raises(ValueError) as e:
            LearningRateSGD(learning_rate=name)
        assert str(e.value) == message
    with pytest.raises(RuntimeError, match="init_learning_rate"):
        LearningRateSGD().value
    assert not LearningRateSGD().needs_grad and LearningRateSGDNesterov().needs_grad


def test_select(refs):
    for base, table in ((BaseLearningRate, refs["select"]["BaseLearningRate"]),
                        (BaseLearningLoss, refs["select"]["BaseLearningLoss"]),
                        (BaseLearningPenalty, refs["select"]["BaseLearningPenalty"])):
        for key, rep in table.items():
            if key == "error":
                continue
            assert repr(base.select(eval(key))) == rep, key  # the names onnxcustom took
        with pytest.raises(ValueError) as e:
            base.select("XXX")
        # onnxcustom's message listed the class names; the aliases are listed too
        assert str(e.value).startswith(table["error"].split("[")[0])
        for cls_name in table["error"].split("[")[1].split("]")[0].replace("'", "").split(", "):
            assert cls_name in str(e.value)
            assert type(base.select(cls_name)).__name__ == cls_name  # class names too
    lr = LearningRateSGD()
    assert BaseLearningRate.select(lr) is lr
    assert repr(BaseLearningRate.select({"eta0": 0.5, "learning_rate": "constant"})) == \
        "LearningRateSGD(eta0=0.5, alpha=0.0001, power_t=0.25, learning_rate='constant')"
    assert BaseLearningRate.select({"class_name": "Nesterov", "momentum": 0.5}).momentum == 0.5
    assert BaseLearningLoss.select({"class_name": "elastic", "l1_weight": 0.2}).l1_weight == 0.2
    assert BaseLearningPenalty.select({"l1": 0.1, "l2": 0.2}).l2 == 0.2
    assert BaseLearningRate.select(2).eta0 == 2.0


def test_losses(refs):
    r = refs["losses"]
    e, p, w = ref_array(r["expected"]), ref_array(r["predicted"]), ref_array(r["weight"])
    labels, scores = ref_array(r["labels"]), ref_array(r["scores"])
    assert len(r["cases"]) == 12
    for case in r["cases"]:
        loss = CLASSES[case["class"]](**case["params"])
        assert repr(loss) == case["repr"]
        loss.build_onnx_function(15, "cpu", "weight" if case["weighted"] else None)
        x1, x2 = (labels, scores) if case["class"] == "NegLogLearningLoss" else (e, p)
        ww = w if case["weighted"] else None
        lv, gv = loss.loss_gradient("cpu", x1, x2, weight=ww)
        assert isinstance(lv, OrtValueArray) and lv.shape() == [1]
        np.testing.assert_allclose(lv.numpy(), ref_array(case["loss"]), rtol=2e-6)
        want = ref_array(case["grad"])
        if case["class"] == "AbsoluteLearningLoss":
            # onnxcustom's gradient of |X1 - X2| against X2 had the wrong sign
            want = -want
        elif case["class"] == "ElasticLearningLoss":
            l1 = case["params"]["l1_weight"] * np.sign(x1 - x2)
            if case["weighted"]:
                l1 = l1 * w.reshape((-1, 1))
            want = want - 2 * l1  # its L1 part, likewise
        np.testing.assert_allclose(gv.numpy(), want, rtol=2e-6, atol=1e-7)
        sc = loss.loss_scores("cpu", x1, x2, ww)
        np.testing.assert_allclose(sc.numpy(), ref_array(case["scores"]), rtol=2e-6,
                                   atol=1e-7)
        assert sc.dtype == np.float32


def test_loss_gradients_are_gradients():
    # central differences of the loss against the prediction, in float64
    rng = np.random.default_rng(1)
    e = rng.standard_normal((6, 1))
    p = e + rng.standard_normal((6, 1))
    labels = (rng.random((6, 1)) > 0.5).astype(np.int64)
    w = rng.random(6) + 0.5
    for loss in (SquareLearningLoss(), AbsoluteLearningLoss(), ElasticLearningLoss(0.3, 0.7),
                 NegLogLearningLoss(eps=1e-9)):
        loss.build_onnx_function(15, "cpu", "weight")
        x1 = labels if isinstance(loss, NegLogLearningLoss) else e
        _, g = loss.loss_gradient("cpu", x1, p, weight=w)
        h = 1e-6
        for i in range(6):
            dp = np.zeros_like(p)
            dp[i, 0] = h
            fd = (loss.loss_gradient("cpu", x1, p + dp, w)[0][0] -
                  loss.loss_gradient("cpu", x1, p - dp, w)[0][0]) / (2 * h)
            assert abs(fd - g[i, 0]) < 1e-5, (type(loss).__name__, i, fd, g[i, 0])


def test_penalties(refs):
    r = refs["penalties"]
    w1, w2, loss = ref_array(r["w1"]), ref_array(r["w2"]), ref_array(r["loss"])
    for case in r["cases"]:
        pen = CLASSES[case["class"]](**case["params"])
        assert repr(pen) == case["repr"]
        pen.build_onnx_function(15, "cpu", 2)
        total = pen.penalty_loss("cpu", loss.copy(), w1, w2)
        np.testing.assert_allclose(np.asarray(total), ref_array(case["penalty_loss"]), rtol=1e-6)
        a, b = w1.copy(), w2.copy()
        assert pen.update_weights(0, "cpu", a) is a  # in place, as onnxcustom bound it
        pen.update_weights(1, "cpu", b)
        np.testing.assert_allclose(a, ref_array(case["w1"]), rtol=1e-6)
        np.testing.assert_allclose(b, ref_array(case["w2"]), rtol=1e-6)


def test_weight_updates(refs):
    r = refs["updates"]
    w, g, v = ref_array(r["w"]), ref_array(r["g"]), ref_array(r["v"])
    for case in r["cases"]:
        lr = (LearningRateSGD(0.1, learning_rate="constant") if case["nesterov"] is None else
              LearningRateSGDNesterov(0.1, learning_rate="constant", momentum=0.8,
                                      nesterov=case["nesterov"]))
        lr.build_onnx_function(15, "cpu", 1)
        lr.init_learning_rate()
        assert repr(lr) == case["repr"]
        ww, vv = w.copy(), v.copy()
        out = lr.update_weights(0, "cpu", ww, g, 4, vv if lr.needs_grad else None)
        np.testing.assert_allclose(ww, ref_array(case["w"]), rtol=1e-6)
        if lr.needs_grad:
            assert out[0] is ww and out[1] is vv
            np.testing.assert_allclose(vv, ref_array(case["v"]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="build_onnx_function"):
        LearningRateSGD().update_weights(0, "cpu", w, g, 1)


def test_pickle_keeps_the_prepared_computation():
    loss = ElasticLearningLoss(0.2, 0.8)
    loss.build_onnx_function(15, "cpu", None)
    loss2 = pickle.loads(pickle.dumps(loss))
    e, p = np.ones((3, 1), np.float32), np.zeros((3, 1), np.float32)
    np.testing.assert_array_equal(loss2.loss_gradient("cpu", e, p)[1],
                                  loss.loss_gradient("cpu", e, p)[1])
    lr = LearningRateSGDNesterov()
    r0 = repr(lr)
    list(lr.loop(3))
    lr2 = pickle.loads(pickle.dumps(lr))
    assert repr(lr2) == r0  # the current value is not kept, as onnxcustom did not keep it
    assert list(lr2.loop(3)) == list(lr.loop(3))


def test_saved_graphs_compute_the_same():
    """The ONNX graphs save_onnx_graph writes (built with onnx) compute, in onnxruntime, what
    the numpy code computes."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    rng = np.random.default_rng(2)
    e = rng.standard_normal((5, 1)).astype(np.float32)
    p = rng.standard_normal((5, 1)).astype(np.float32)
    labels = (rng.random((5, 1)) > 0.5).astype(np.int64)
    w = (rng.random(5) + 0.5).astype(np.float32)

    def run(onx, feeds):
        sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
        names = {i.name for i in onx.graph.input}  # the weight input has a default
        return sess.run(None, {k: v for k, v in feeds.items() if k in names})

    for loss in (SquareLearningLoss(), AbsoluteLearningLoss(), ElasticLearningLoss(0.3, 0.6),
                 NegLogLearningLoss()):
        for wname in (None, "weight"):
            loss.build_onnx_function(15, "cpu", wname)
            x1 = labels if isinstance(loss, NegLogLearningLoss) else e
            feeds = {"X1": x1, "X2": p, "weight": w}
            ww = w if wname else None
            lv, gv = loss.loss_gradient("cpu", x1, p, ww)
            got = run(loss.loss_grad_onnx_, feeds)
            np.testing.assert_allclose(got[0], lv, rtol=1e-5)
            np.testing.assert_allclose(got[1], gv, rtol=1e-5, atol=1e-7)
            sc = run(loss.loss_score_onnx_, feeds)[0]
            np.testing.assert_allclose(sc, loss.loss_scores("cpu", x1, p, ww), rtol=1e-5)
    pen = ElasticLearningPenalty(0.1, 0.2)
    pen.build_onnx_function(15, "cpu", 2)
    a, b = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(2).astype(
        np.float32)
    loss = np.array([1.5], np.float32)
    got = run(pen.penalty_onnx_, {"loss": loss, "W0": a, "W1": b})[0]
    np.testing.assert_allclose(got, pen.penalty_loss("cpu", loss.copy(), a, b), rtol=1e-6)
    got = run(pen.penalty_grad_onnx_, {"X": a})[0]
    aa = a.copy()
    pen.update_weights(0, "cpu", aa)
    np.testing.assert_allclose(got, aa, rtol=1e-6)
    for lr in (LearningRateSGD(0.3), LearningRateSGDNesterov(0.3),
               LearningRateSGDNesterov(0.3, nesterov=False)):
        lr.build_onnx_function(15, "cpu", 1)
        lr.init_learning_rate()
        g, v = rng.standard_normal((3, 2)).astype(np.float32), a * 0.5
        ww, vv = a.copy(), v.copy()
        lr.update_weights(0, "cpu", ww, g, 4, vv if lr.needs_grad else None)
        alpha = np.array([-lr.value / 4], np.float32)
        if lr.needs_grad:
            got = run(lr.axpyw_onnx_, {"X1": g, "X2": a, "G": v, "alpha": alpha,
                                       "beta": np.array([lr.momentum], np.float32)})
            np.testing.assert_allclose(got[0], ww, rtol=1e-6)
            np.testing.assert_allclose(got[1], vv, rtol=1e-6)
        else:
            got = run(lr.axpy_onnx_, {"X1": g, "X2": a, "alpha": alpha})
            np.testing.assert_allclose(got[0], ww, rtol=1e-6)


def test_save_onnx_graph(tmp_path):
    pytest.importorskip("onnx")
    loss = SquareLearningLoss()
    assert loss.save_onnx_graph(bytes) == {}  # nothing built yet
    loss.build_onnx_function(15, "cpu", None)
    files = loss.save_onnx_graph(str(tmp_path))
    assert sorted(files) == ["loss_grad_onnx_", "loss_score_onnx_"]
    assert files["loss_grad_onnx_"].endswith("SquareLLoss.loss_grad_onnx_.onnx")
    lr = LearningRateSGDNesterov()
    lr.build_onnx_function(15, "cpu", 2)
    assert list(lr.save_onnx_graph(bytes)) == ["axpyw_onnx_"]
