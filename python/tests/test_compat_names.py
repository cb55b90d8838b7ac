"""Every public name of onnxcustom's training package (and of the utils modules training code
imports) is importable from the same module path with 'onnxcustom' replaced by 'onnxgrad',
and the classes offer the members onnxcustom's had (the lists come from onnxcustom 0.4.293
itself: data/onnxcustom_refs.json, 'names')."""
import importlib

import pytest

import onnxgrad


def test_modules_and_names(refs):
    for mod, names in refs["names"].items():
        if mod.startswith("members."):
            continue
        m = importlib.import_module("onnxgrad." + mod)
        missing = [n for n in names if not hasattr(m, n)]
        assert not missing, (mod, missing)


def test_members(refs):
    from onnxgrad.training.data_loader import OrtDataLoader
    from onnxgrad.training.optimizers import OrtGradientOptimizer
    from onnxgrad.training.optimizers_partial import OrtGradientForwardBackwardOptimizer
    from onnxgrad.training.ortgradient import (OrtGradientForwardBackward,
                                               OrtGradientForwardBackwardFunction)
    from onnxgrad.training.sgd_learning_loss import BaseLearningLoss
    from onnxgrad.training.sgd_learning_penalty import BaseLearningPenalty
    from onnxgrad.training.sgd_learning_rate import BaseLearningRate

    classes = {c.__name__: c for c in (
        OrtGradientForwardBackwardOptimizer, OrtGradientForwardBackward,
        OrtGradientForwardBackwardFunction, BaseLearningLoss, BaseLearningPenalty,
        BaseLearningRate, OrtDataLoader, OrtGradientOptimizer)}
    for key, members in refs["names"].items():
        if not key.startswith("members."):
            continue
        cls = classes[key.split(".", 1)[1]]
        missing = [m for m in members if not hasattr(cls, m)]
        assert not missing, (cls.__name__, missing)


def test_top_level_names():
    for name in ("OrtGradientForwardBackward", "OrtGradientForwardBackwardOptimizer",
                 "OrtGradientOptimizer", "BaseEstimator", "BaseLearningRate", "LearningRateSGD",
                 "LearningRateSGDNesterov", "BaseLearningLoss", "SquareLearningLoss",
                 "AbsoluteLearningLoss", "ElasticLearningLoss", "NegLogLearningLoss",
                 "BaseLearningPenalty", "NoLearningPenalty", "ElasticLearningPenalty",
                 "ConvergenceError", "ConvergenceWarning", "EvaluationError", "ProviderError",
                 "onnx_derivative", "DerivativeOptions", "OrtDataLoader", "Trainer"):
        assert hasattr(onnxgrad, name), name
    from onnxgrad.training.base_estimator import BaseEstimator
    from onnxgrad.training.base_onnx_function import BaseLearningOnnx
    from onnxgrad.training.orttraining import add_loss_output
    from onnxgrad.training.sgd_learning_rate import LearningRateSGDRegressor

    assert BaseEstimator is onnxgrad.BaseEstimator and callable(add_loss_output)
    assert LearningRateSGDRegressor is onnxgrad.LearningRateSGD  # onnxcustom's first name
    assert issubclass(onnxgrad.LearningRateSGD, BaseLearningOnnx)
    assert issubclass(onnxgrad.ConvergenceError, RuntimeError)
    assert issubclass(onnxgrad.ConvergenceWarning, UserWarning)


def test_rename_weights():
    onnx = pytest.importorskip("onnx")
    from conftest import data_model
    from onnxgrad.utils.onnx_helper import get_onnx_opset, onnx_rename_weights

    m = onnx_rename_weights(onnx.load_from_string(data_model("linreg")))
    assert [i.name for i in m.graph.initializer] == ["I0_coef", "I1_intercept",
                                                     "I2_shape_tensor"]
    assert [n.input[1] for n in m.graph.node] == ["I0_coef", "I1_intercept", "I2_shape_tensor"]
    assert get_onnx_opset(m) == 13


def test_data_loader_scalars():
    """Found by the atheris target: a 0-d y (or X) raised IndexError from inside the loader;
    it is a ValueError naming the shapes."""
    import numpy as np
    import pytest
    from onnxgrad.training.data_loader import OrtDataLoader

    for X, y in ((np.ones((4, 2), np.float32), np.float32(1)),
                 (np.float32(1), np.ones(4, np.float32))):
        with pytest.raises(ValueError, match="first dimension"):
            OrtDataLoader(np.asarray(X), np.asarray(y))
    with pytest.raises(ValueError, match="sample_weight"):
        OrtDataLoader(np.ones((4, 2), np.float32), np.ones(4, np.float32),
                      np.asarray(np.float32(1)))
